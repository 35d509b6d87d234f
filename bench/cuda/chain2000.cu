/* chain2000.cu: a chain of 2000 small kernels on one stream, the
 * hand-written baseline for bench/pipelines/chain2000.yaml (2000 scale_f32
 * nodes ping-ponging over two 256-element slices). Variants:
 *   eager        launched in a loop on one stream (host-bound: µs per node
 *                is the launch cost)                     compare: streams
 *   graph        the same chain captured once, replayed  compare: graph
 *   empty_eager, empty_graph   the same with empty kernels, the floor.
 * Not a test of scale's numbers beyond the final check. */
#include "common.h"

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  const int N = 2000;
  const long long S = 256;
  float *buf;
  CHECK(cudaMalloc(&buf, 2 * S * sizeof(float)));
  std::vector<float> h(2 * S, 1.0f);
  CHECK(cudaMemcpy(buf, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));

  Dag d, e;
  for (int i = 0; i < N; i++) {
    float *x = buf + (i % 2) * S, *y = buf + ((i + 1) % 2) * S;
    d.add_scale(x, 1.0f, y, S);
    e.add_empty();
    if (i > 0) {
      d.edge(i - 1, i);
      e.edge(i - 1, i);
    }
  }
  StreamPlan p = plan_serial(d);
  char extra[160];

  struct Case {
    const char *name;
    const Dag *dag;
    const char *eager_cmp;
    const char *graph_cmp;
  } cases[] = {{"eager", &d, "streams", nullptr}, {"empty_eager", &e, nullptr, nullptr}};
  for (const Case &c : cases) {
    double host_us;
    Stats s = stats_of(time_eager(*c.dag, p, o.warmup, o.iterations, &host_us));
    snprintf(extra, sizeof extra, ", \"per_node_us\": %.3f, \"host_us_per_node\": %.3f", s.median / N,
             host_us / N);
    print_result("chain2000", c.name, c.eager_cmp, N, 1, o.iterations, s, extra);
  }
  const char *gnames[] = {"graph", "empty_graph"};
  const Dag *gdags[] = {&d, &e};
  for (int k = 0; k < 2; k++) {
    double inst_us, host_us;
    Runner r(*gdags[k], p);
    cudaGraphExec_t exec = r.capture(*gdags[k], p, &inst_us);
    Stats s = stats_of(time_graph(exec, o.warmup, o.iterations, &host_us));
    snprintf(extra, sizeof extra,
             ", \"per_node_us\": %.3f, \"instantiate_us\": %.1f, \"launch_host_us\": %.2f", s.median / N,
             inst_us, host_us);
    print_result("chain2000", gnames[k], k == 0 ? "graph" : nullptr, N, 1, o.iterations, s, extra);
  }

  /* alpha = 1 everywhere, so the data must still be all ones. */
  CHECK(cudaMemcpy(h.data(), buf, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (float v : h)
    if (v != 1.0f) {
      fprintf(stderr, "chain2000: wrong result %g\n", v);
      return 1;
    }
  CHECK(cudaFree(buf));
  return 0;
}
