/* custom_kernel.c: registers the program's own kernel with the dagrun C
 * library (a host twin, and a CUDA launch function that here only says
 * there is no CUDA code: this file is plain C) and runs it on the host
 * backend. Build it against an installed dagrun:
 *
 *   cc -o custom_kernel examples/custom_kernel.c $(pkg-config --cflags --libs dagrun)
 *   ./custom_kernel OUT.bin
 *
 * The pipeline computes y = x * x + b over an iota input in two halves
 * (two independent nodes, so two streams), saves y to OUT.bin and checks
 * it. A real program would launch a __global__ function from `launch`
 * (compiled by nvcc) on the stream in l->stream. */
#include <dagrun/dagrun.h>
#include <stdio.h>
#include <string.h>

#define N 1024

/* y[i] = x[i] * x[i] + b */
static int square_add_host(const DrKLaunch *l, char *err) {
  const float *x = l->args[0].ptr;
  float *y = l->args[1].ptr;
  float b = (float)l->args[2].f;
  if (l->counts[0] != l->counts[1]) {
    snprintf(err, DR_KERR_SIZE, "x and y differ in length");
    return -1;
  }
  for (uint64_t i = 0; i < l->counts[0]; i++) y[i] = x[i] * x[i] + b;
  return 0;
}

static int square_add_launch(const DrKLaunch *l) {
  (void)l;
  return 100; /* cudaErrorNoDevice: this example carries no device code */
}

static int square_add_check(const uint64_t *counts, const DrKValue *args, char *err) {
  (void)args;
  if (counts[0] == counts[1]) return 0;
  snprintf(err, DR_KERR_SIZE, "x and y differ in length");
  return -1;
}

static const DrKParam square_add_params[] = {
    {.name = "x", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_READ, .doc = "input"},
    {.name = "y", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_WRITE, .doc = "output"},
    {.name = "b", .type = DR_ELEM_F32, .optional = 1, .def = 0.5, .doc = "added"},
};

static const DrKernelDef square_add = {
    .name = "square_add_f32",
    .summary = "y = x * x + b",
    .params = square_add_params,
    .n_params = 3,
    .grid_over = 0,
    .block = 256,
    .launch = square_add_launch,
    .host = square_add_host,
    .check = square_add_check,
};

static int calls;

static void count_call(void *data) { ++*(int *)data; }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: custom_kernel OUT.bin\n");
    return 64;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("custom-kernel");
  DrNamedArg lo[] = {DR_NAMED_SLICE("x", "x", 0, N / 2), DR_NAMED_SLICE("y", "y", 0, N / 2)};
  DrNamedArg hi[] = {DR_NAMED_SLICE("x", "x", N / 2, N), DR_NAMED_SLICE("y", "y", N / 2, N),
                     DR_NAMED_FLOAT("b", 2.0)};
  gboolean ok = dr_pipeline_register_kernel(p, &square_add, &error) &&
                dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) &&
                dr_pipeline_buffer_init_iota(p, "x", &error) &&
                dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) &&
                dr_pipeline_add_buffer(p, "y_host", DR_ELEM_F32, N, DR_WHERE_HOST, &error) &&
                dr_pipeline_buffer_save(p, "y_host", argv[1], &error) &&
                dr_pipeline_add_kernel_node(p, "lo", "square_add_f32", lo, 2, &error) &&
                dr_pipeline_add_kernel_node(p, "hi", "square_add_f32", hi, 3, &error) &&
                dr_pipeline_add_copy(p, "down", DR_WHOLE("y"), DR_WHOLE("y_host"), &error) &&
                dr_pipeline_add_callback(p, "done", count_call, &calls, &error) &&
                dr_pipeline_node_after(p, "done", "down", &error);
  g_autoptr(DrStreamPlan) plan = ok ? dr_pipeline_plan(p, NULL, &error) : NULL;
  if (plan == NULL) {
    fprintf(stderr, "custom_kernel: %s\n", error->message);
    return dr_error_exit_code(error);
  }
  printf("plan: %u streams, width %u; lo on stream %d, hi on stream %d\n", dr_stream_plan_n_streams(plan),
         dr_stream_plan_width(plan), dr_stream_plan_node_stream(plan, "lo"),
         dr_stream_plan_node_stream(plan, "hi"));
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 3;
  rs.warmup = 1;
  g_autoptr(DrRunReport) report = dr_stream_plan_run(plan, &rs, &error);
  if (report == NULL) {
    fprintf(stderr, "custom_kernel: %s\n", error->message);
    return dr_error_exit_code(error);
  }
  g_autofree char *bytes = NULL;
  gsize len = 0;
  if (!g_file_get_contents(argv[1], &bytes, &len, &error) || len != N * sizeof(float)) {
    fprintf(stderr, "custom_kernel: cannot read back %s\n", argv[1]);
    return 66;
  }
  const float *y = (const float *)bytes;
  for (int i = 0; i < N; i++) {
    float want = (float)i * (float)i + (i < N / 2 ? 0.5f : 2.0f);
    if (y[i] != want) {
      fprintf(stderr, "custom_kernel: y[%d] = %g, want %g\n", i, y[i], want);
      return 1;
    }
  }
  printf("y[3] = %g, y[%d] = %g; callback ran %d times\n", y[3], N - 1, y[N - 1], calls);
  printf("custom kernel OK on the %s backend\n", dr_run_report_backend(report));
  return calls == 4 ? 0 : 1;
}
