/* external_gpu_test.c: external memory and the caller's stream on the
 * real device (tags gpu): buffers bound to cudaMalloc'd memory, new input
 * bytes written between runs in streams and graph mode (graph mode by
 * updating the executable's nodes, "updated-nodes"), and runs ordered on
 * the caller's stream (an explicit one, the legacy and the per-thread
 * default stream) between a caller's kernel before (a 2 ms spin, then a
 * kernel writing dagrun's input) and one after (reading dagrun's output):
 * with no host synchronization in between, the results are right only if
 * the events order all three. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

/* external_gpu_forward.c */
int dr_test_ext_scale(float *y, const float *x, double a, uint64_t n, void *stream);
int dr_test_ext_spin(int64_t ns, void *stream);

#define M (1 << 20)

#define CUDA_OK(call) g_assert_cmpint((call), ==, cudaSuccess)

/* y = 2x ("s"), c = y ("cp", a device copy), m = 0x5A bytes ("ms"), all
 * four buffers bound to the caller's memory: in graph mode a kernel, a
 * memcpy and a memset node to update. */
static DrPipeline *pipeline(void) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = dr_pipeline_new("external-gpu");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "c", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "m", DR_ELEM_U8, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_copy(p, "cp", DR_WHOLE("y"), DR_WHOLE("c"), &error));
  g_assert_true(dr_pipeline_add_memset(p, "ms", DR_WHOLE("m"), 0x5A, &error));
  g_assert_no_error(error);
  return p;
}

static void check_all(const float *dev, float want) {
  g_autofree float *h = g_new(float, M);
  CUDA_OK(cudaMemcpy(h, dev, M * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < M; i += 997) g_assert_cmpfloat(h[i], ==, want);
  g_assert_cmpfloat(h[M - 1], ==, want);
}

static void test_external(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = pipeline();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_CUDA;
  rs.mode = mode;
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  float *x = NULL, *y = NULL, *src = NULL, *w = NULL, *c = NULL;
  guint8 *m = NULL;
  CUDA_OK(cudaMalloc((void **)&c, M * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&m, M));
  CUDA_OK(cudaMemset(m, 0, M));
  CUDA_OK(cudaMalloc((void **)&x, M * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&y, M * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&src, M * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&w, M * sizeof(float)));
  g_autofree float *ones = g_new(float, M);
  for (int i = 0; i < M; i++) ones[i] = 1.0f;
  CUDA_OK(cudaMemcpy(src, ones, M * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(x, ones, M * sizeof(float), cudaMemcpyHostToDevice));

  /* Bind, run, read through the caller's pointer. */
  g_assert_true(dr_runner_bind_buffer(r, "x", x, M * sizeof(float), &error));
  g_assert_true(dr_runner_bind_buffer(r, "y", y, M * sizeof(float), &error));
  g_assert_true(dr_runner_bind_buffer(r, "c", c, M * sizeof(float), &error));
  g_assert_true(dr_runner_bind_buffer(r, "m", m, M, &error));
  g_assert_no_error(error);
  g_autoptr(DrRunReport) r1 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, mode == DR_MODE_GRAPH ? "updated-nodes" : "rebound");
  check_all(y, 2.0f);
  check_all(c, 2.0f);
  g_autofree guint8 *mb = g_new(guint8, M);
  CUDA_OK(cudaMemcpy(mb, m, M, cudaMemcpyDeviceToHost));
  g_assert_cmpuint(mb[0], ==, 0x5A);
  g_assert_cmpuint(mb[M - 1], ==, 0x5A);

  /* New input bytes between runs. */
  for (int i = 0; i < M; i++) ones[i] = 4.0f;
  g_assert_true(dr_runner_write_buffer(r, "x", 0, ones, M * sizeof(float), &error));
  g_assert_no_error(error);
  g_autoptr(DrRunReport) r2 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  check_all(y, 8.0f);
  check_all(c, 8.0f);

  /* The caller's stream: spin 2 ms, x = k * src, [dagrun: y = 2x], w = 3y;
   * one synchronization at the very end. */
  cudaStream_t mine = NULL;
  CUDA_OK(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
  /* Load the caller's kernels first (lazy module loading would count
   * against the queueing time below). */
  CUDA_OK(dr_test_ext_spin(1000, mine));
  CUDA_OK(dr_test_ext_scale(w, src, 1.0, M, mine));
  CUDA_OK(cudaStreamSynchronize(mine));
  cudaStream_t streams[] = {mine, NULL, cudaStreamPerThread};
  const char *names[] = {"explicit", "legacy", "per-thread"};
  for (guint k = 0; k < G_N_ELEMENTS(streams); k++) {
    cudaStream_t s = streams[k];
    float scale = 10.0f + (float)k;
    gint64 t0 = g_get_monotonic_time();
    CUDA_OK(dr_test_ext_spin(2000000, s));
    CUDA_OK(dr_test_ext_scale(x, src, scale, M, s));
    g_assert_true(dr_runner_run_on_stream(r, s, &error));
    g_assert_no_error(error);
    CUDA_OK(dr_test_ext_scale(w, y, 3.0, M, s));
    gint64 queued = g_get_monotonic_time() - t0;
    CUDA_OK(cudaStreamSynchronize(s));
    gint64 done = g_get_monotonic_time() - t0;
    g_test_message("%s %s stream: queued in %" G_GINT64_FORMAT " us, done in %" G_GINT64_FORMAT " us",
                   dr_run_report_mode(r2), names[k], queued, done);
    /* Nothing waited on the host for the 2 ms spin. */
    g_assert_cmpint(queued, <, 1500);
    check_all(w, 3.0f * 2.0f * scale);
  }
  /* A write after run_on_stream goes on that stream, and read_buffer too. */
  CUDA_OK(dr_test_ext_spin(2000000, mine));
  for (int i = 0; i < M; i++) ones[i] = 7.0f;
  g_assert_true(dr_runner_run_on_stream(r, mine, &error));
  g_assert_true(dr_runner_write_buffer(r, "x", 0, ones, M * sizeof(float), &error));
  g_assert_true(dr_runner_run_on_stream(r, mine, &error));
  g_assert_no_error(error);
  g_autofree float *back = g_new(float, M);
  g_assert_true(dr_runner_read_buffer(r, "y", back, M * sizeof(float), &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(back[0], ==, 14.0f);
  g_assert_cmpfloat(back[M - 1], ==, 14.0f);
  dr_runner_free(g_steal_pointer(&r));
  CUDA_OK(cudaStreamDestroy(mine));
  /* dagrun never freed the caller's memory. */
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(y));
  CUDA_OK(cudaFree(src));
  CUDA_OK(cudaFree(w));
  CUDA_OK(cudaFree(c));
  CUDA_OK(cudaFree(m));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/api/gpu/external/streams", GINT_TO_POINTER(DR_MODE_STREAMS), test_external);
  g_test_add_data_func("/api/gpu/external/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_external);
  return g_test_run();
}
