/* fanout.cu: a root node fanning out to W independent chains of D spin
 * kernels (W = 8 and 32), the hand-written baseline for
 * bench/pipelines/fanout8.yaml and fanout32.yaml. Every node spins
 * SPIN_NS; the ideal makespan is (1 + D) * SPIN_NS. See run_dag_variants
 * in common.h for the four variants; the point is the round-robin capture
 * onto 4 streams, whose stream order serializes chains (GPU-NOTES.md: 2.0x
 * at width 8, 7.6x at width 32). */
#include "common.h"

static const int DEPTH = 16;
static const long long SPIN_NS = 10000;

int main(int argc, char **argv) {
  Opts o = parse_opts(argc, argv, 20, 3);
  const int widths[] = {8, 32};
  for (int w : widths) {
    Dag d;
    int root = d.add_spin(SPIN_NS);
    std::vector<int> last(w, root);
    /* Level by level, as the pipeline's foreach lists them. */
    for (int k = 0; k < DEPTH; k++)
      for (int b = 0; b < w; b++) {
        int v = d.add_spin(SPIN_NS);
        d.edge(last[b], v);
        last[b] = v;
      }
    char name[32], extra[96];
    snprintf(name, sizeof name, "fanout%d", w);
    snprintf(extra, sizeof extra, ", \"width\": %d, \"depth\": %d, \"ideal_us\": %.1f", w, DEPTH,
             (1 + DEPTH) * SPIN_NS / 1000.0);
    run_dag_variants(name, d, o, extra);
  }
  return 0;
}
