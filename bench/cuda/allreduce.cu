/* allreduce.cu: one 64 MiB f32 ncclAllReduce (sum) per iteration on one
 * stream of one GPU, one rank (ncclCommInitAll over device 0), the
 * hand-written baseline for bench/pipelines/allreduce.yaml (an allreduce
 * node; target dagrun <= 1.02x). NCCL is opened with dlopen as dagrun
 * does: DAGRUN_NCCL_LIB, else libnccl.so.2 (put the nvidia-nccl-cu13
 * wheel's nvidia/nccl/lib on LD_LIBRARY_PATH, or set the variable).
 * Variants:
 *   streams   eager ncclAllReduce on one stream          compare: streams
 *   graph     the same call captured once, replayed      compare: graph */
#include <dlfcn.h>

#include "common.h"

typedef void *Comm;
typedef int (*InitAll)(Comm *, int, const int *);
typedef int (*AllReduce)(const void *, void *, size_t, int, int, Comm, cudaStream_t);
typedef int (*Destroy)(Comm);

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  const char *env = getenv("DAGRUN_NCCL_LIB");
  void *lib = dlopen(env && env[0] ? env : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "allreduce: cannot open NCCL: %s\n", dlerror());
    return 69;
  }
  InitAll init_all = (InitAll)dlsym(lib, "ncclCommInitAll");
  AllReduce all_reduce = (AllReduce)dlsym(lib, "ncclAllReduce");
  Destroy destroy = (Destroy)dlsym(lib, "ncclCommDestroy");
  if (!init_all || !all_reduce || !destroy) return 69;
  const size_t n = 16u << 20; /* 16Mi f32 = 64 MiB */
  CHECK(cudaSetDevice(0));
  float *src, *dst;
  CHECK(cudaMalloc(&src, n * 4));
  CHECK(cudaMalloc(&dst, n * 4));
  CHECK(cudaMemset(src, 0, n * 4));
  Comm comm;
  int dev = 0;
  if (init_all(&comm, 1, &dev) != 0) return 70;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto body = [&](cudaStream_t st) {
    if (all_reduce(src, dst, n, 7 /* ncclFloat32 */, 0 /* ncclSum */, comm, st) != 0) exit(70);
  };
  print_result("allreduce", "streams", "streams", 1, 1, o.iterations,
               stats_of(time_events(s, o.warmup, o.iterations, body)));
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  body(s);
  CHECK(cudaStreamEndCapture(s, &g));
  double inst_us;
  cudaGraphExec_t exec = instantiate_timed(g, &inst_us);
  print_result("allreduce", "graph", "graph", 1, 0, o.iterations,
               stats_of(time_graph(exec, o.warmup, o.iterations)),
               fmt(", \"instantiate_us\": %.1f", inst_us));
  destroy(comm);
  return 0;
}
