/* issue_cost.c: a driver for measuring the CUDA backend's per-node host
 * cost in eager streams mode on the CPU, under
 * `valgrind --tool=callgrind`: a chain of N scale_f32 kernel nodes (one
 * stream, timing off) runs through dr_run on a fake CUDA table whose
 * entries only return cudaSuccess, so nearly every instruction counted
 * inside dr__cuda_issue_iteration is dagrun's own (subtract the fake_*
 * functions' self cost to be exact). Not a test: it checks nothing beyond
 * the run succeeding. Usage: issue_cost [NODES [ITERATIONS]]. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "tests/backends/testgraph.h"

static int n_streams;
static cudaError_t fake_ok(void) { return cudaSuccess; }
static cudaError_t fake_count(int *n) {
  *n = 1;
  return cudaSuccess;
}
static cudaError_t fake_range(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
static cudaError_t fake_stream(cudaStream_t *s, unsigned f, int p) {
  *s = (cudaStream_t)GSIZE_TO_POINTER(0x1000 + ++n_streams);
  return cudaSuccess;
}
static cudaError_t fake_event(cudaEvent_t *e, unsigned f) {
  *e = (cudaEvent_t)GSIZE_TO_POINTER(0x100000 + ++n_streams);
  return cudaSuccess;
}
static cudaError_t fake_malloc(void **p, size_t n) {
  *p = g_malloc0(n);
  return cudaSuccess;
}
static cudaError_t fake_free(void *p) {
  g_free(p);
  return cudaSuccess;
}
static cudaError_t fake_memcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
  return cudaSuccess;
}
static cudaError_t fake_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = 0.001f;
  return cudaSuccess;
}
static int fake_kernel(const DrKernelDef *def, const DrKLaunch *l) { return 0; }

#define DR_X(name, params, args) \
  static cudaError_t fake_##name params { return cudaSuccess; }
DR_CUDA_API_LIST(DR_X)
#undef DR_X

int main(int argc, char **argv) {
  guint n = argc > 1 ? (guint)atoi(argv[1]) : 2000;
  guint iterations = argc > 2 ? (guint)atoi(argv[2]) : 5;
  DrCudaApi api = {
#define DR_X(name, params, args) .name = fake_##name,
      DR_CUDA_API_LIST(DR_X)
#undef DR_X
  };
  api.cudaGetDeviceCount = fake_count;
  api.cudaDeviceGetStreamPriorityRange = fake_range;
  api.cudaStreamCreateWithPriority = fake_stream;
  api.cudaEventCreateWithFlags = fake_event;
  api.cudaMalloc = fake_malloc;
  api.cudaFree = fake_free;
  api.cudaMallocHost = fake_malloc;
  api.cudaFreeHost = fake_free;
  api.cudaMemcpyAsync = fake_memcpy;
  api.cudaEventElapsedTime = fake_elapsed;
  api.cudaDeviceSynchronize = fake_ok;
  api.cudaGetLastError = fake_ok;
  api.cudaGetErrorName = dr_cuda_api_default()->cudaGetErrorName;
  api.cudaGetErrorString = dr_cuda_api_default()->cudaGetErrorString;
  api.kernel_launch = fake_kernel;
  dr_cuda_api_set(&api);

  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "a", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "b", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  for (guint i = 0; i < n; i++) {
    g_autofree char *id = g_strdup_printf("k%u", i);
    DrId k = tg_kernel_node(g, id, "scale_f32");
    tg_arg_buf(g, k, "x", i % 2 ? "b" : "a", 0, 0);
    tg_arg_f(g, k, "alpha", 1.0);
    tg_arg_buf(g, k, "y", i % 2 ? "a" : "b", 0, 0);
  }
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = DR_BACKEND_CUDA;
  o.mode = DR_MODE_STREAMS;
  o.node_timing = DR_TIMING_OFF;
  o.iterations = iterations;
  o.warmup = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  if (r == NULL) {
    fprintf(stderr, "issue_cost: %s\n", error->message);
    return 1;
  }
  printf("%u nodes, %u iterations, %u plan streams\n", n, iterations, dr_plan_n_streams(plan));
  return 0;
}
