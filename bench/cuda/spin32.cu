/* spin32.cu: 32 independent 100 µs single-block spin kernels, the
 * hand-written baseline for bench/pipelines/spin32.yaml. Variants:
 *   streams32       one stream per kernel (more streams than the device's
 *                   8 hardware queues by default)
 *   streams8        8 streams, kernel i on stream i % 8, issued in index
 *                   order (interleaved)                  compare: streams
 *   graph           an explicit CUDA graph of 32 parallel nodes
 *                                                        compare: graph
 * Ideal makespan is 100 µs; each line reports makespan and ideal. */
#include "common.h"

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  const int N = 32;
  const long long NS = 100000;
  Dag d;
  for (int i = 0; i < N; i++) d.add_spin(NS);
  std::string extra = ", \"ideal_us\": 100.0";

  StreamPlan p32 = plan_serial(d);
  p32.n_streams = N;
  for (int i = 0; i < N; i++) p32.stream[i] = i;
  print_result("spin32", "streams32", nullptr, N, N, o.iterations,
               stats_of(time_eager(d, p32, o.warmup, o.iterations)), extra);

  StreamPlan p8 = plan_serial(d);
  p8.n_streams = 8;
  for (int i = 0; i < N; i++) p8.stream[i] = i % 8;
  print_result("spin32", "streams8", "streams", N, 8, o.iterations,
               stats_of(time_eager(d, p8, o.warmup, o.iterations)), extra);

  double inst_us;
  cudaGraphExec_t exec = build_explicit_graph(d, &inst_us);
  print_result("spin32", "graph", "graph", N, 0, o.iterations,
               stats_of(time_graph(exec, o.warmup, o.iterations)),
               extra + fmt(", \"instantiate_us\": %.1f", inst_us));
  return 0;
}
