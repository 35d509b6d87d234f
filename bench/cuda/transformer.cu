/* transformer.cu: the hand-written baseline for
 * bench/pipelines/transformer.yaml (graphs/transformer_block.yaml): one
 * pre-norm transformer block over 512 tokens of width 1024, four attention
 * heads. It launches the very same kernels as dagrun (dagrun's kernel
 * library, kernels/: cuBLAS for the gemms, the row and element-wise
 * built-ins), so the comparison is about scheduling only: streams, events
 * and graphs written by hand. Built with the library's sources:
 *
 *   nvcc -O3 -std=c++17 -arch=sm_90 --fmad=false -I. -o transformer \
 *     bench/cuda/transformer.cu kernels/{blas_abi,elementwise,reduce,rows,spin}.cu \
 *     kernels/{blas,checks,gemm,host,registry}.c -ldl
 *
 * Variants (one JSON line each, see common.h):
 *   serial_eager   every node on one stream, the host waiting each iteration
 *   heads4_eager   the four heads on four streams joined by events (what
 *                  dagrun's planner finds), no wait between iterations
 *                                                        compare: streams
 *   heads4_graph   heads4 captured once and replayed     compare: graph
 */
#include "common.h"

extern "C" {
#include "kernels/blas.h"
#include "kernels/registry.h"
}

namespace {

constexpr int64_t T = 512, D = 1024, H = 4, DH = 64, F = 1024;

struct Bufs {
  float *x, *gamma, *beta, *h, *wq, *wv, *q, *p, *v, *wo, *attn, *w1, *m1, *m2, *w2, *out;
};

float *dev_random(size_t n, unsigned seed) {
  std::vector<float> hst(n);
  srand(seed);
  for (auto &f : hst) f = (float)rand() / RAND_MAX * 2.0f - 1.0f;
  float *d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, hst.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

float *dev_zeros(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemset(d, 0, n * sizeof(float)));
  return d;
}

/* One built-in kernel launch: `def` with pointer/scalar arguments and the
 * element count of each pointer argument, on `stream` (`blas` for gemm). */
struct Call {
  const DrKernelDef *def;
  DrKValue args[8];
  uint64_t counts[8];
};

void launch(const Call &c, cudaStream_t stream, DrKBlas *blas) {
  DrKLaunch l = {};
  l.args = c.args;
  l.counts = c.counts;
  l.stream = stream;
  l.blas = (c.def->flags & DR_KFLAG_BLAS) ? blas : nullptr;
  dr_kernel_default_shape(c.def, c.counts, c.args, l.grid, l.block);
  int rc = c.def->launch(&l);
  if (rc != 0) {
    fprintf(stderr, "%s launch failed: %s\n", c.def->name, cudaGetErrorString((cudaError_t)rc));
    exit(70);
  }
}

Call gemm(float *a, float *b, float *c, int64_t m, int64_t n, int64_t k) {
  Call g = {dr_kernel_find("gemm_f32")};
  g.args[0].ptr = a, g.counts[0] = m * k;
  g.args[1].ptr = b, g.counts[1] = k * n;
  g.args[2].ptr = c, g.counts[2] = m * n;
  g.args[3].i = m, g.args[4].i = n, g.args[5].i = k;
  g.args[6].f = 1.0, g.args[7].f = 0.0;
  return g;
}

Call rows(const char *name, float *x, float *y, int64_t n, int64_t cols, float *gamma = nullptr,
          float *beta = nullptr) {
  Call c = {dr_kernel_find(name)};
  if (gamma) { /* layernorm: x, gamma, beta, y, cols, eps */
    c.args[0].ptr = x, c.counts[0] = n;
    c.args[1].ptr = gamma, c.counts[1] = cols;
    c.args[2].ptr = beta, c.counts[2] = cols;
    c.args[3].ptr = y, c.counts[3] = n;
    c.args[4].i = cols, c.args[5].f = 1e-5;
  } else { /* softmax: x, y, cols */
    c.args[0].ptr = x, c.counts[0] = n;
    c.args[1].ptr = y, c.counts[1] = n;
    c.args[2].i = cols;
  }
  return c;
}

Call binary(const char *name, float *a, float *b, float *y, int64_t n) {
  Call c = {dr_kernel_find(name)};
  c.args[0].ptr = a, c.counts[0] = n;
  c.args[1].ptr = b, c.counts[1] = n;
  c.args[2].ptr = y, c.counts[2] = n;
  return c;
}

Call unary(const char *name, float *x, float *y, int64_t n) {
  Call c = {dr_kernel_find(name)};
  c.args[0].ptr = x, c.counts[0] = n;
  c.args[1].ptr = y, c.counts[1] = n;
  return c;
}

/* The block's nodes: ln; per head q, softmax, v, mix; then proj, resid1,
 * mlp1, act, mlp2, resid2. */
struct Block {
  Call ln, q[H], sm[H], v[H], mix[H], proj, resid1, mlp1, act, mlp2, resid2;
};

Block make_block(const Bufs &b) {
  Block k;
  k.ln = rows("layernorm_rows_f32", b.x, b.h, T * D, D, b.gamma, b.beta);
  for (int i = 0; i < H; i++) {
    k.q[i] = gemm(b.h, b.wq + i * D * DH, b.q + i * T * DH, T, DH, D);
    k.sm[i] = rows("softmax_rows_f32", b.q + i * T * DH, b.p + i * T * DH, T * DH, DH);
    k.v[i] = gemm(b.h, b.wv + i * D * DH, b.v + i * T * DH, T, DH, D);
    k.mix[i] = binary("mul_f32", b.p + i * T * DH, b.v + i * T * DH, b.q + i * T * DH, T * DH);
  }
  k.proj = gemm(b.q, b.wo, b.attn, T, D, H * DH);
  k.resid1 = binary("add_f32", b.x, b.attn, b.h, T * D);
  k.mlp1 = gemm(b.h, b.w1, b.m1, T, F, D);
  k.act = unary("gelu_f32", b.m1, b.m2, T * F);
  k.mlp2 = gemm(b.m2, b.w2, b.m1, T, D, F);
  k.resid2 = binary("add_f32", b.h, b.m1, b.out, T * D);
  return k;
}

struct Streams {
  cudaStream_t s[H];
  DrKBlas *blas[H];
  cudaEvent_t fork, lnd, join[H];
};

/* Everything on s[0], in the pipeline's order. */
void issue_serial(const Block &k, Streams &st) {
  cudaStream_t s = st.s[0];
  launch(k.ln, s, st.blas[0]);
  for (int i = 0; i < H; i++) {
    launch(k.q[i], s, st.blas[0]);
    launch(k.sm[i], s, st.blas[0]);
    launch(k.v[i], s, st.blas[0]);
    launch(k.mix[i], s, st.blas[0]);
  }
  for (const Call *c : {&k.proj, &k.resid1, &k.mlp1, &k.act, &k.mlp2, &k.resid2}) launch(*c, s, st.blas[0]);
}

/* The heads on four streams: s[0] runs ln, forks to s[1..3] after it, each
 * stream runs one head (q, softmax, v, mix), s[0] joins them and runs the
 * rest. s[0] is the origin (it also waits for nothing else). */
void issue_heads4(const Block &k, Streams &st) {
  CHECK(cudaEventRecord(st.fork, st.s[0]));
  for (int i = 1; i < H; i++) CHECK(cudaStreamWaitEvent(st.s[i], st.fork, 0));
  launch(k.ln, st.s[0], st.blas[0]);
  CHECK(cudaEventRecord(st.lnd, st.s[0]));
  for (int i = 1; i < H; i++) CHECK(cudaStreamWaitEvent(st.s[i], st.lnd, 0));
  for (int i = 0; i < H; i++) {
    launch(k.q[i], st.s[i], st.blas[i]);
    launch(k.sm[i], st.s[i], st.blas[i]);
    launch(k.v[i], st.s[i], st.blas[i]);
    launch(k.mix[i], st.s[i], st.blas[i]);
  }
  for (int i = 1; i < H; i++) {
    CHECK(cudaEventRecord(st.join[i], st.s[i]));
    CHECK(cudaStreamWaitEvent(st.s[0], st.join[i], 0));
  }
  for (const Call *c : {&k.proj, &k.resid1, &k.mlp1, &k.act, &k.mlp2, &k.resid2})
    launch(*c, st.s[0], st.blas[0]);
}

}  // namespace

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 10, 2);
  Bufs b;
  b.x = dev_random(T * D, 1), b.gamma = dev_random(D, 2), b.beta = dev_zeros(D), b.h = dev_zeros(T * D);
  b.wq = dev_random(D * DH * H, 3), b.wv = dev_random(D * DH * H, 4);
  b.q = dev_zeros(T * DH * H), b.p = dev_zeros(T * DH * H), b.v = dev_zeros(T * DH * H);
  b.wo = dev_random(H * DH * D, 5), b.attn = dev_zeros(T * D), b.w1 = dev_random(D * F, 6);
  b.m1 = dev_zeros(T * F), b.m2 = dev_zeros(T * F), b.w2 = dev_random(F * D, 7), b.out = dev_zeros(T * D);
  Block k = make_block(b);
  Streams st;
  for (int i = 0; i < H; i++) {
    CHECK(cudaStreamCreateWithFlags(&st.s[i], cudaStreamNonBlocking));
    char err[256] = "";
    st.blas[i] = dr_kblas_new(0, err);
    if (st.blas[i] == nullptr || dr_kblas_bind(st.blas[i], st.s[i], err) != 0) {
      fprintf(stderr, "cuBLAS: %s\n", err);
      return 70;
    }
    CHECK(cudaEventCreateWithFlags(&st.join[i], cudaEventDisableTiming));
  }
  CHECK(cudaEventCreateWithFlags(&st.fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&st.lnd, cudaEventDisableTiming));
  const size_t n = 1 + 4 * H + 6;
  std::string extra = ", \"heads\": 4";

  std::vector<double> t =
      time_events(st.s[0], o.warmup, o.iterations, [&](cudaStream_t) { issue_serial(k, st); });
  print_result("transformer", "serial_eager", nullptr, n, 1, o.iterations, stats_of(t), extra);

  t = time_events_queued(st.s[0], o.warmup, o.iterations, [&](cudaStream_t) { issue_heads4(k, st); });
  print_result("transformer", "heads4_eager", "streams", n, H, o.iterations, stats_of(t), extra);

  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(st.s[0], cudaStreamCaptureModeThreadLocal));
  issue_heads4(k, st);
  CHECK(cudaStreamEndCapture(st.s[0], &g));
  cudaGraphExec_t exec;
  double t0 = host_now_us();
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  double inst = host_now_us() - t0;
  CHECK(cudaGraphDestroy(g));
  t = time_graph(exec, o.warmup, o.iterations);
  print_result("transformer", "heads4_graph", "graph", n, H, o.iterations, stats_of(t),
               extra + fmt(", \"instantiate_us\": %.1f", inst));
  for (int i = 0; i < H; i++) dr_kblas_free(st.blas[i]);
  return 0;
}
