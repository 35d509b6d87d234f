/* embed.c: dagrun embedded in a program that owns its memory: the
 * pipeline's input and output buffers are the program's own arrays
 * (dr_runner_bind_buffer: dagrun neither allocates nor frees them), new
 * input goes in between runs (dr_runner_write_buffer), iterations are
 * queued on the program's stream (dr_runner_run_on_stream), and the
 * library's messages go to the program's log handler (g_log domain
 * "dagrun"). Build it against an installed dagrun:
 *
 *   cc -o embed examples/embed.c $(pkg-config --cflags --libs dagrun)
 *   ./embed
 *
 * It runs on the host backend, where a buffer is plain host memory and the
 * only "stream" is NULL (the iteration is done when the call returns). On
 * a GPU the same calls take device memory (cudaMalloc) for `where:
 * device` buffers and the program's cudaStream_t: the iteration then
 * starts after the work already queued on that stream and the work queued
 * after it waits for it, through two events, with no host
 * synchronization; in graph mode a bind updates the executable graph's
 * nodes in place.
 *
 * Prints one line per step: the step, y[1] and y[N-1], how the change was
 * applied. Exit status: 0 on success, else dr_error_exit_code of the
 * error. */
#include <dagrun/dagrun.h>
#include <stdio.h>

#define N 1024

static int fail(GError *error) {
  fprintf(stderr, "embed: %s\n", error->message);
  int rc = dr_error_exit_code(error);
  g_error_free(error);
  return rc;
}

/* The program's own log, for what the library has to say. */
static void on_log(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {
  (void)level, (void)data;
  fprintf(stderr, "embed: [%s] %s\n", domain, message);
}

int main(void) {
  GError *error = NULL;
  g_log_set_handler("dagrun", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, on_log, NULL);
  /* The program's memory: the input and the output. */
  static float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)i;

  /* out = 0.5 * in, then out += in: 1.5 * in. */
  g_autoptr(DrPipeline) p = dr_pipeline_new("embed");
  DrNamedArg scale[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 0.5), DR_NAMED_WHOLE("y", "y")};
  DrNamedArg axpy[] = {DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("y", "y")};
  if (!dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) ||
      !dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) ||
      !dr_pipeline_add_kernel_node(p, "half", "scale_f32", scale, 3, &error) ||
      !dr_pipeline_add_kernel_node(p, "add", "axpy_f32", axpy, 3, &error))
    return fail(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  if (plan == NULL) return fail(error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  if (r == NULL) return fail(error);

  /* dagrun computes from and into the program's arrays. */
  if (!dr_runner_bind_buffer(r, "x", in, sizeof in, &error) ||
      !dr_runner_bind_buffer(r, "y", out, sizeof out, &error))
    return fail(error);
  g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
  if (first == NULL) return fail(error);
  printf("bound:   y[1] = %.1f, y[%d] = %.1f, change applied: %s\n", out[1], N - 1, out[N - 1],
         dr_runner_last_update(r));

  /* New input for the last element only, then one iteration queued on
   * the program's stream (NULL on the host). */
  const float last = 2.0f;
  if (!dr_runner_write_buffer(r, "x", (N - 1) * sizeof(float), &last, sizeof last, &error) ||
      !dr_runner_run_on_stream(r, NULL, &error))
    return fail(error);
  printf("written: y[1] = %.1f, y[%d] = %.1f, change applied: %s\n", out[1], N - 1, out[N - 1],
         dr_runner_last_update(r));
  return 0;
}
