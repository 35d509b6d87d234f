/* chunked.cu: 256 MiB of f32 uploaded from pinned host memory, y += a*x on
 * the device, y downloaded to pinned host memory: the hand-written baseline
 * for bench/pipelines/chunked.yaml (16 chunks) and chunked1.yaml (1 chunk).
 * Variants:
 *   chunks16_streams  16 chunks, chunk c on stream c: copy -> axpy -> copy
 *                                                      compare: streams
 *   chunks16_graph    the same captured once, replayed compare: graph
 *   chunks1_streams   one chunk on one stream (no overlap), reported as
 *                     case chunked1                    compare: streams
 * Each variant's result is checked once (fresh y, one run) against the host
 * computation fmaf(a, x, y0), exactly, before the timed runs. The floor is
 * about 5.2 ms on an H200 (two 256 MiB copies at ~55 GB/s, overlapped). */
#include "common.h"

static const long long N = 64ll << 20; /* 256 MiB of f32 */
static const float ALPHA = 0.5f;

struct Bufs {
  float *x_host, *y_host, *y0_host;
  float *x, *y;
};

static void issue(const Bufs &b, int chunks, std::vector<cudaStream_t> &st, cudaEvent_t fork,
                  std::vector<cudaEvent_t> &join) {
  long long per = N / chunks;
  CHECK(cudaEventRecord(fork, st[0]));
  for (int c = 1; c < chunks; c++) CHECK(cudaStreamWaitEvent(st[c], fork, 0));
  for (int c = 0; c < chunks; c++) {
    long long off = c * per;
    CHECK(cudaMemcpyAsync(b.x + off, b.x_host + off, per * sizeof(float), cudaMemcpyHostToDevice, st[c]));
    axpy_kernel<<<blocks_for(per, 256), 256, 0, st[c]>>>(ALPHA, b.x + off, b.y + off, per);
    CHECK_LAUNCH();
    CHECK(cudaMemcpyAsync(b.y_host + off, b.y + off, per * sizeof(float), cudaMemcpyDeviceToHost, st[c]));
  }
  for (int c = 1; c < chunks; c++) {
    CHECK(cudaEventRecord(join[c], st[c]));
    CHECK(cudaStreamWaitEvent(st[0], join[c], 0));
  }
}

static bool verify(const Bufs &b, const char *what) {
  for (long long i = 0; i < N; i++) {
    float want = fmaf(ALPHA, b.x_host[i], b.y0_host[i]);
    if (b.y_host[i] != want) {
      fprintf(stderr, "chunked %s: y[%lld] = %.9g, want %.9g\n", what, i, b.y_host[i], want);
      return false;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  Bufs b;
  size_t bytes = N * sizeof(float);
  CHECK(cudaMallocHost(&b.x_host, bytes));
  CHECK(cudaMallocHost(&b.y_host, bytes));
  CHECK(cudaMallocHost(&b.y0_host, bytes));
  CHECK(cudaMalloc(&b.x, bytes));
  CHECK(cudaMalloc(&b.y, bytes));
  uint64_t seed = 42;
  for (long long i = 0; i < N; i++) {
    b.x_host[i] = (float)(splitmix64(&seed) >> 40) / (float)(1 << 24);
    b.y0_host[i] = (float)(splitmix64(&seed) >> 40) / (float)(1 << 24);
  }
  int failures = 0;
  const int chunk_counts[] = {16, 1};
  for (int chunks : chunk_counts) {
    std::vector<cudaStream_t> st(chunks);
    for (auto &s : st) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> join(chunks);
    for (auto &e : join) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    cudaEvent_t fork;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    char name[64];
    snprintf(name, sizeof name, "chunks%d_streams", chunks);

    /* Check one fresh run, then time. */
    CHECK(cudaMemcpy(b.y, b.y0_host, bytes, cudaMemcpyHostToDevice));
    memset(b.y_host, 0xff, bytes);
    issue(b, chunks, st, fork, join);
    CHECK(cudaStreamSynchronize(st[0]));
    bool ok = verify(b, name);
    failures += !ok;
    std::string extra = std::string(", \"verified\": ") + (ok ? "true" : "false") +
                        ", \"bytes\": " + std::to_string(2 * bytes);
    Stats s = stats_of(
        time_events(st[0], o.warmup, o.iterations, [&](cudaStream_t) { issue(b, chunks, st, fork, join); }));
    print_result(chunks == 16 ? "chunked" : "chunked1", name, "streams", 3 * chunks, chunks, o.iterations, s,
                 extra + fmt(", \"gbps\": %.1f", 2.0 * bytes / s.median / 1e3));

    if (chunks == 16) {
      cudaGraph_t g;
      cudaGraphExec_t exec;
      CHECK(cudaStreamBeginCapture(st[0], cudaStreamCaptureModeThreadLocal));
      issue(b, chunks, st, fork, join);
      CHECK(cudaStreamEndCapture(st[0], &g));
      CHECK(cudaGraphInstantiate(&exec, g, 0));
      CHECK(cudaGraphDestroy(g));
      CHECK(cudaMemcpy(b.y, b.y0_host, bytes, cudaMemcpyHostToDevice));
      memset(b.y_host, 0xff, bytes);
      CHECK(cudaGraphLaunch(exec, st[0]));
      CHECK(cudaStreamSynchronize(st[0]));
      ok = verify(b, "chunks16_graph");
      failures += !ok;
      extra = std::string(", \"verified\": ") + (ok ? "true" : "false") +
              ", \"bytes\": " + std::to_string(2 * bytes);
      s = stats_of(time_graph(exec, o.warmup, o.iterations));
      print_result("chunked", "chunks16_graph", "graph", 3 * chunks, chunks, o.iterations, s,
                   extra + fmt(", \"gbps\": %.1f", 2.0 * bytes / s.median / 1e3));
    }
    for (auto s2 : st) CHECK(cudaStreamDestroy(s2));
    for (auto e : join) CHECK(cudaEventDestroy(e));
    CHECK(cudaEventDestroy(fork));
  }
  CHECK(cudaFreeHost(b.x_host));
  CHECK(cudaFreeHost(b.y_host));
  CHECK(cudaFreeHost(b.y0_host));
  CHECK(cudaFree(b.x));
  CHECK(cudaFree(b.y));
  return failures ? 1 : 0;
}
