/* common.h: the shared part of dagrun's hand-written GPU baselines
 * (the .cu files beside it): error checking, the kernels the baselines launch (the
 * same work as dagrun's built-ins spin, scale_f32 and axpy_f32), a tiny DAG
 * description with its three ways to become GPU work (eager streams, stream
 * capture of a stream plan, an explicitly built CUDA graph), timing with
 * events (median after warmup) and one-line JSON output.
 *
 * It is not dagrun: no YAML, no GLib, no planner. Each baseline is one
 * standalone nvcc program, so it builds and runs on a machine with no Bazel:
 *   nvcc -O3 -std=c++17 -arch=sm_90 -o chain2000 chain2000.cu
 *
 * JSON line printed per measured variant (bench/gpu_bench.sh reads them):
 *   {"case": C, "variant": V, "compare": "streams"|"graph"|null,
 *    "nodes": N, "streams": S, "iterations": I, "makespan_us": median,
 *    "min_us": ..., "max_us": ..., plus case-specific fields}
 * `compare` marks the variant that dagrun's --mode=streams or --mode=graph
 * run of the same pipeline is compared against. */
#ifndef DAGRUN_BENCH_CUDA_COMMON_H
#define DAGRUN_BENCH_CUDA_COMMON_H

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CHECK(call)                                                                                         \
  do {                                                                                                      \
    cudaError_t check_err_ = (call);                                                                        \
    if (check_err_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(check_err_)); \
      exit(70);                                                                                             \
    }                                                                                                       \
  } while (0)

#define CHECK_LAUNCH() CHECK(cudaGetLastError())

/* ---- kernels: the same work as dagrun's built-ins ---- */

/* Busy-waits `ns` nanoseconds on %globaltimer, like dagrun's `spin`
 * (launched as 1 block of 1 thread). */
__global__ void spin_kernel(long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while ((long long)(now - start) < ns);
}

/* y = alpha * x, like dagrun's scale_f32 (blocks of 256 over n). */
__global__ void scale_kernel(const float *x, float alpha, float *y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}

/* y = alpha * x + y (one fma), like dagrun's axpy_f32. */
__global__ void axpy_kernel(float alpha, const float *x, float *y, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = fmaf(alpha, x[i], y[i]);
}

__global__ void empty_kernel() {}

/* ---- small helpers ---- */

/* splitmix64, bit-exact with SplitMix64 in bench/gen_pipeline.py. */
static inline uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static inline double host_now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Stats {
  double median, min, max;
};

static inline Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  Stats s;
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

/* Command line: --iterations=N --warmup=N (defaults given by the program). */
struct Opts {
  int iterations;
  int warmup;
};

static inline Opts parse_opts(int argc, char **argv, int iterations, int warmup) {
  Opts o{iterations, warmup};
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--iterations=", 13) == 0)
      o.iterations = atoi(argv[i] + 13);
    else if (strncmp(argv[i], "--warmup=", 9) == 0)
      o.warmup = atoi(argv[i] + 9);
    else {
      fprintf(stderr, "usage: %s [--iterations=N] [--warmup=N]\n", argv[0]);
      exit(64);
    }
  }
  if (o.iterations < 1) o.iterations = 1;
  if (o.warmup < 0) o.warmup = 0;
  return o;
}

/* Prints one result line. `extra` is either empty or starts with ", ". */
static inline void print_result(const char *case_name, const char *variant, const char *compare, size_t nodes,
                                int streams, int iterations, Stats s, const std::string &extra = "") {
  char cmp[32];
  if (compare)
    snprintf(cmp, sizeof cmp, "\"%s\"", compare);
  else
    snprintf(cmp, sizeof cmp, "null");
  printf(
      "{\"case\": \"%s\", \"variant\": \"%s\", \"compare\": %s, \"nodes\": %zu, "
      "\"streams\": %d, \"iterations\": %d, \"makespan_us\": %.3f, \"min_us\": %.3f, "
      "\"max_us\": %.3f%s}\n",
      case_name, variant, cmp, nodes, streams, iterations, s.median, s.min, s.max, extra.c_str());
  fflush(stdout);
}

/* ---- a DAG of kernel nodes ---- */

enum NodeKind { NODE_SPIN, NODE_SCALE, NODE_EMPTY };

struct Node {
  NodeKind kind;
  long long ns;   /* spin */
  const float *x; /* scale */
  float *y;
  float alpha;
  long long n;
  std::vector<int> preds; /* indices of earlier nodes (the DAG's edges) */
};

struct Dag {
  std::vector<Node> nodes; /* in a topological order */

  int add_spin(long long ns) {
    Node n{};
    n.kind = NODE_SPIN;
    n.ns = ns;
    nodes.push_back(n);
    return (int)nodes.size() - 1;
  }
  int add_scale(const float *x, float alpha, float *y, long long count) {
    Node n{};
    n.kind = NODE_SCALE;
    n.x = x;
    n.alpha = alpha;
    n.y = y;
    n.n = count;
    nodes.push_back(n);
    return (int)nodes.size() - 1;
  }
  int add_empty() {
    Node n{};
    n.kind = NODE_EMPTY;
    nodes.push_back(n);
    return (int)nodes.size() - 1;
  }
  void edge(int from, int to) {
    std::vector<int> &p = nodes[to].preds;
    if (std::find(p.begin(), p.end(), from) == p.end()) p.push_back(from);
  }
  size_t n_edges() const {
    size_t e = 0;
    for (const Node &n : nodes) e += n.preds.size();
    return e;
  }
};

static inline unsigned blocks_for(long long n, unsigned block) {
  long long b = (n + block - 1) / block;
  return (unsigned)(b < 1 ? 1 : b);
}

static inline void launch_node(const Node &n, cudaStream_t s) {
  switch (n.kind) {
    case NODE_SPIN:
      spin_kernel<<<1, 1, 0, s>>>(n.ns);
      break;
    case NODE_SCALE:
      scale_kernel<<<blocks_for(n.n, 256), 256, 0, s>>>(n.x, n.alpha, n.y, n.n);
      break;
    case NODE_EMPTY:
      empty_kernel<<<1, 1, 0, s>>>();
      break;
  }
  CHECK_LAUNCH();
}

/* Longest-path level of each node (sources are level 0). */
static inline std::vector<int> dag_levels(const Dag &d) {
  std::vector<int> lvl(d.nodes.size(), 0);
  for (size_t i = 0; i < d.nodes.size(); i++)
    for (int p : d.nodes[i].preds) lvl[i] = std::max(lvl[i], lvl[p] + 1);
  return lvl;
}

/* Issue order that interleaves streams: by level, then by index. */
static inline std::vector<int> level_order(const Dag &d) {
  std::vector<int> lvl = dag_levels(d), order(d.nodes.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lvl[a] < lvl[b]; });
  return order;
}

/* A stream plan: stream of each node, number of streams, issue order. */
struct StreamPlan {
  std::vector<int> stream;
  int n_streams;
  std::vector<int> order;
};

/* Taskflow's capture strategy: node i of level L goes to stream
 * (its index within level L) % k. Stream order then adds edges the DAG
 * does not have. */
static inline StreamPlan plan_round_robin(const Dag &d, int k) {
  StreamPlan p;
  p.order = level_order(d);
  p.stream.assign(d.nodes.size(), 0);
  std::vector<int> lvl = dag_levels(d);
  std::vector<int> seen(d.nodes.size() + 1, 0);
  for (int v : p.order) p.stream[v] = seen[lvl[v]]++ % k;
  p.n_streams = k;
  return p;
}

/* A chain cover that follows the DAG's own edges: a node continues the
 * stream of one of its predecessors whose stream's last node is that
 * predecessor, else opens a new stream. Stream order then adds no edge the
 * DAG does not imply (each consecutive pair on a stream is a DAG edge). On
 * the fan-out and layered cases this uses as many streams as the DAG is
 * wide (one per chain), so it is the width-optimal capture. */
static inline StreamPlan plan_chain_cover(const Dag &d) {
  StreamPlan p;
  p.order = level_order(d);
  p.stream.assign(d.nodes.size(), -1);
  std::vector<int> tail; /* last node of each stream */
  for (int v : p.order) {
    int chosen = -1;
    for (int u : d.nodes[v].preds) {
      int s = p.stream[u];
      if (tail[s] == u) {
        chosen = s;
        break;
      }
    }
    if (chosen < 0) {
      chosen = (int)tail.size();
      tail.push_back(v);
    }
    tail[chosen] = v;
    p.stream[v] = chosen;
  }
  p.n_streams = (int)tail.size();
  return p;
}

/* Everything in one stream, in index order. */
static inline StreamPlan plan_serial(const Dag &d) {
  StreamPlan p;
  p.n_streams = 1;
  p.stream.assign(d.nodes.size(), 0);
  p.order.resize(d.nodes.size());
  for (size_t i = 0; i < d.nodes.size(); i++) p.order[i] = (int)i;
  return p;
}

/* Streams and per-node events for running a plan eagerly or capturing it. */
/* Instantiates `g` and destroys it; *instantiate_us (if not NULL) gets
 * the host time cudaGraphInstantiate took. */
static inline cudaGraphExec_t instantiate_timed(cudaGraph_t g, double *instantiate_us) {
  cudaGraphExec_t exec;
  double t0 = host_now_us();
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  if (instantiate_us) *instantiate_us = host_now_us() - t0;
  CHECK(cudaGraphDestroy(g));
  return exec;
}

struct Runner {
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> node_event; /* one per node that a wait names */
  std::vector<cudaEvent_t> join;       /* one per stream */
  cudaEvent_t fork;

  Runner(const Dag &d, const StreamPlan &p) {
    streams.resize(p.n_streams);
    for (auto &s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    node_event.assign(d.nodes.size(), nullptr);
    for (size_t v = 0; v < d.nodes.size(); v++)
      for (int u : d.nodes[v].preds)
        if (p.stream[u] != p.stream[v] && node_event[u] == nullptr)
          CHECK(cudaEventCreateWithFlags(&node_event[u], cudaEventDisableTiming));
    join.resize(p.n_streams);
    for (auto &e : join) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  }
  ~Runner() {
    for (auto s : streams) cudaStreamDestroy(s);
    for (auto e : node_event)
      if (e) cudaEventDestroy(e);
    for (auto e : join) cudaEventDestroy(e);
    cudaEventDestroy(fork);
  }

  /* Issues the DAG per the plan; streams[0] is the origin: every stream
   * waits for the origin first and the origin waits for every stream last,
   * so this works eagerly and inside a capture of streams[0]. */
  void issue(const Dag &d, const StreamPlan &p) {
    cudaStream_t origin = streams[0];
    CHECK(cudaEventRecord(fork, origin));
    for (int s = 1; s < p.n_streams; s++) CHECK(cudaStreamWaitEvent(streams[s], fork, 0));
    for (int v : p.order) {
      cudaStream_t s = streams[p.stream[v]];
      for (int u : d.nodes[v].preds)
        if (p.stream[u] != p.stream[v]) CHECK(cudaStreamWaitEvent(s, node_event[u], 0));
      launch_node(d.nodes[v], s);
      if (node_event[v]) CHECK(cudaEventRecord(node_event[v], s));
    }
    for (int s = 1; s < p.n_streams; s++) {
      CHECK(cudaEventRecord(join[s], streams[s]));
      CHECK(cudaStreamWaitEvent(origin, join[s], 0));
    }
  }

  cudaGraphExec_t capture(const Dag &d, const StreamPlan &p, double *instantiate_us) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal));
    issue(d, p);
    CHECK(cudaStreamEndCapture(streams[0], &g));
    return instantiate_timed(g, instantiate_us);
  }
};

/* Builds a CUDA graph node by node from the DAG's edges (no streams). */
static inline cudaGraphExec_t build_explicit_graph(const Dag &d, double *instantiate_us) {
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  std::vector<cudaGraphNode_t> gn(d.nodes.size());
  for (size_t v = 0; v < d.nodes.size(); v++) {
    const Node &n = d.nodes[v];
    std::vector<cudaGraphNode_t> deps;
    for (int u : n.preds) deps.push_back(gn[u]);
    cudaKernelNodeParams kp{};
    void *args[4];
    long long ns = n.ns, count = n.n;
    const float *x = n.x;
    float *y = n.y;
    float alpha = n.alpha;
    switch (n.kind) {
      case NODE_SPIN:
        kp.func = (void *)spin_kernel;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(1);
        args[0] = &ns;
        break;
      case NODE_SCALE:
        kp.func = (void *)scale_kernel;
        kp.gridDim = dim3(blocks_for(count, 256));
        kp.blockDim = dim3(256);
        args[0] = &x;
        args[1] = &alpha;
        args[2] = &y;
        args[3] = &count;
        break;
      case NODE_EMPTY:
        kp.func = (void *)empty_kernel;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(1);
        break;
    }
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&gn[v], g, deps.empty() ? nullptr : deps.data(), deps.size(), &kp));
  }
  return instantiate_timed(g, instantiate_us);
}

/* Times `body(stream)` between two events on `stream`: warmup untimed runs,
 * then `iterations` timed ones. Returns per-iteration µs. The host time of
 * issuing body (µs, median) goes to *host_us when given. */
template <typename F>
static inline std::vector<double> time_events(cudaStream_t stream, int warmup, int iterations, F body,
                                              double *host_us = nullptr) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; i++) body(stream);
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaDeviceSynchronize());
  std::vector<double> t, h;
  for (int i = 0; i < iterations; i++) {
    CHECK(cudaEventRecord(a, stream));
    double h0 = host_now_us();
    body(stream);
    h.push_back(host_now_us() - h0);
    CHECK(cudaEventRecord(b, stream));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0);
  }
  CHECK(cudaGetLastError());
  if (host_us) *host_us = stats_of(h).median;
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t;
}

/* Times the DAG eagerly on the plan's streams. */
static inline std::vector<double> time_eager(const Dag &d, const StreamPlan &p, int warmup, int iterations,
                                             double *host_us = nullptr) {
  Runner r(d, p);
  return time_events(
      r.streams[0], warmup, iterations, [&](cudaStream_t) { r.issue(d, p); }, host_us);
}

/* Like time_events, but with no host wait between iterations: every
 * warmup and timed iteration is issued back to back, each timed one
 * between its own pair of events, and the host waits once at the end. The
 * host's issuing of iteration i+1 then overlaps the device's running of
 * iteration i, as dagrun's CUDA backend does (it keeps two in flight); the
 * events still time each iteration alone, since `body` starts on `stream`
 * after the previous iteration joined it. */
template <typename F>
static inline std::vector<double> time_events_queued(cudaStream_t stream, int warmup, int iterations,
                                                     F body) {
  std::vector<cudaEvent_t> a(iterations), b(iterations);
  for (int i = 0; i < iterations; i++) {
    CHECK(cudaEventCreate(&a[i]));
    CHECK(cudaEventCreate(&b[i]));
  }
  for (int i = 0; i < warmup; i++) body(stream);
  for (int i = 0; i < iterations; i++) {
    CHECK(cudaEventRecord(a[i], stream));
    body(stream);
    CHECK(cudaEventRecord(b[i], stream));
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaGetLastError());
  std::vector<double> t;
  for (int i = 0; i < iterations; i++) {
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a[i], b[i]));
    t.push_back(ms * 1000.0);
    cudaEventDestroy(a[i]);
    cudaEventDestroy(b[i]);
  }
  return t;
}

/* Times replays of a graph on a fresh stream; destroys the graph after. */
static inline std::vector<double> time_graph(cudaGraphExec_t exec, int warmup, int iterations,
                                             double *host_us = nullptr) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaGraphUpload(exec, s));
  std::vector<double> t = time_events(
      s, warmup, iterations, [&](cudaStream_t st) { CHECK(cudaGraphLaunch(exec, st)); }, host_us);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaStreamDestroy(s));
  return t;
}

static inline std::string fmt(const char *f, double v) {
  char b[96];
  snprintf(b, sizeof b, f, v);
  return b;
}

/* The five ways fanout.cu, layered400.cu and spin8x8.cu run their DAG,
 * one result line each:
 *   explicit_graph       built node by node from the DAG's edges
 *                                                      compare: graph
 *   roundrobin4_capture  Taskflow's capture onto 4 streams (false edges)
 *   chaincover_capture   captured from plan_chain_cover (no false edges:
 *                        the width-optimal capture on these DAGs)
 *   streams8_eager       eager, level-interleaved round robin onto 8
 *                        streams (the device's queue count), the host
 *                        waiting for each iteration
 *   streams8_eager_queued  the same with no wait between iterations
 *                        (time_events_queued)           compare: streams
 */
/* `reset` (may be empty) runs before each variant, `check` (may be empty)
 * after its timed runs; check's verdict goes into the line as "verified"
 * and a false one makes the function return false. */
static inline bool run_dag_variants(const char *case_name, const Dag &d, const Opts &o,
                                    const std::string &extra, const std::function<void()> &reset = nullptr,
                                    const std::function<bool()> &check = nullptr) {
  size_t n = d.nodes.size();
  std::string base = extra + ", \"edges\": " + std::to_string(d.n_edges());
  std::string ex;
  bool all_ok = true;
  double inst_us;
  auto verdict = [&]() {
    if (!check) return std::string();
    bool ok = check();
    all_ok = all_ok && ok;
    return std::string(", \"verified\": ") + (ok ? "true" : "false");
  };
  std::vector<double> t;

  if (reset) reset();
  cudaGraphExec_t exec = build_explicit_graph(d, &inst_us);
  t = time_graph(exec, o.warmup, o.iterations);
  ex = base + verdict();
  print_result(case_name, "explicit_graph", "graph", n, 0, o.iterations, stats_of(t),
               ex + fmt(", \"instantiate_us\": %.1f", inst_us));

  /* A stream plan captured into a graph, timed as variant `name`. */
  auto captured = [&](const char *name, const StreamPlan &plan) {
    if (reset) reset();
    {
      Runner r(d, plan);
      exec = r.capture(d, plan, &inst_us);
    }
    t = time_graph(exec, o.warmup, o.iterations);
    ex = base + verdict();
    print_result(case_name, name, nullptr, n, plan.n_streams, o.iterations, stats_of(t),
                 ex + fmt(", \"instantiate_us\": %.1f", inst_us));
  };
  captured("roundrobin4_capture", plan_round_robin(d, 4));
  captured("chaincover_capture", plan_chain_cover(d));

  if (reset) reset();
  StreamPlan rr8 = plan_round_robin(d, 8);
  double host_us;
  t = time_eager(d, rr8, o.warmup, o.iterations, &host_us);
  ex = base + verdict();
  print_result(case_name, "streams8_eager", nullptr, n, 8, o.iterations, stats_of(t),
               ex + fmt(", \"host_us\": %.1f", host_us));

  if (reset) reset();
  {
    Runner r(d, rr8);
    t = time_events_queued(r.streams[0], o.warmup, o.iterations, [&](cudaStream_t) { r.issue(d, rr8); });
  }
  ex = base + verdict();
  print_result(case_name, "streams8_eager_queued", "streams", n, 8, o.iterations, stats_of(t), ex);
  return all_ok;
}

#endif
