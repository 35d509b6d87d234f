/* spin8x8.cu: 8 independent chains of 8 spin kernels of 50 us, the
 * hand-written baseline for bench/pipelines/spin8x8.yaml, the issue's eager
 * target case (kernels of 50 us or more at width <= 8: within 10% of the
 * ideal makespan, 8 x 50 = 400 us). See run_dag_variants in common.h for
 * the variants. */
#include "common.h"

static const int WIDTH = 8, DEPTH = 8;
static const long long SPIN_NS = 50000;

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  Dag d;
  std::vector<int> last(WIDTH, -1);
  /* Level by level, as the pipeline's foreach lists them. */
  for (int k = 0; k < DEPTH; k++)
    for (int c = 0; c < WIDTH; c++) {
      int v = d.add_spin(SPIN_NS);
      if (last[c] >= 0) d.edge(last[c], v);
      last[c] = v;
    }
  char extra[96];
  snprintf(extra, sizeof extra, ", \"width\": %d, \"depth\": %d, \"ideal_us\": %.1f", WIDTH, DEPTH,
           DEPTH * SPIN_NS / 1000.0);
  run_dag_variants("spin8x8", d, o, extra);
  return 0;
}
