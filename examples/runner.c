/* runner.c: one pipeline set up once and run several times with the
 * dagrun C library, a scalar argument changed between runs. On a GPU in
 * graph mode the change updates the executable CUDA graph in place (the
 * changed node's parameters only); on the host backend the launch is
 * bound again. Build it against an installed dagrun:
 *
 *   cc -o runner examples/runner.c $(pkg-config --cflags --libs dagrun)
 *   ./runner [host|cuda]
 *
 * Prints one line per run: alpha, y[1] and how the change was applied.
 * Exit status: 0 on success, else dr_error_exit_code of the error. */
#include <dagrun/dagrun.h>
#include <stdio.h>
#include <string.h>

#define N 1024

static int fail(GError *error) {
  fprintf(stderr, "runner: %s\n", error->message);
  int rc = dr_error_exit_code(error);
  g_error_free(error);
  return rc;
}

int main(int argc, char **argv) {
  GError *error = NULL;
  DrPipeline *p = dr_pipeline_new("runner");
  DrNamedArg args[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("y", "y")};
  if (!dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) ||
      !dr_pipeline_buffer_init_iota(p, "x", &error) ||
      !dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) ||
      !dr_pipeline_add_kernel_node(p, "scale", "scale_f32", args, 3, &error))
    return fail(error);
  DrStreamPlan *plan = dr_pipeline_plan(p, NULL, &error);
  if (plan == NULL) return fail(error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = argc > 1 && strcmp(argv[1], "cuda") == 0 ? DR_BACKEND_CUDA : DR_BACKEND_HOST;
  rs.mode = DR_MODE_GRAPH; /* the host backend has one mode and ignores it */
  rs.iterations = 3;
  rs.warmup = 1;
  DrRunner *r = dr_runner_new(plan, &rs, &error);
  if (r == NULL) return fail(error);
  static float y[N];
  for (int k = 0; k < 3; k++) {
    double alpha = 1.0 + k;
    if (k > 0 && !dr_runner_set_float(r, "scale", "alpha", alpha, &error)) return fail(error);
    DrRunReport *rep = dr_runner_run(r, &error);
    if (rep == NULL || !dr_runner_read_buffer(r, "y", y, sizeof y, &error)) return fail(error);
    printf("run %d on %s: alpha %.1f, y[1] = %.1f, change applied: %s\n", k + 1, dr_runner_backend(r), alpha,
           y[1], dr_runner_last_update(r));
    dr_run_report_free(rep);
  }
  dr_runner_free(r);
  dr_stream_plan_free(plan);
  dr_pipeline_free(p);
  return 0;
}
