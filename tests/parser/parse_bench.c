/* parse_bench.c: times the stages of loading one pipeline file (parse
 * from the file in chunks, dependency passes) and prints the peak RSS, to see where
 * `dagrun --check` spends its time. Not a test; run by hand:
 *   bazel run -c opt //tests/parser:parse_bench -- FILE.yaml */
#include <glib.h>
#include <stdio.h>
#include <sys/resource.h>

#include "lib/load.h"
#include "parser/parser.h"
#include "scheduler/passes.h"

static double now(void) { return (double)g_get_monotonic_time() / 1e6; }

static long peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: parse_bench FILE.yaml\n");
    return 64;
  }
  double t0 = now();
  FILE *fp = fopen(argv[1], "rb");
  if (fp == NULL) return 66;
  double t1 = now();
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g = dr_graph_new();
  dr__graph_register_builtins(g);
  gboolean ok = dr_parse_pipeline_file(g, argv[1], fp, diags);
  fclose(fp);
  double t2 = now();
  long rss_parse = peak_rss_kb();
  gboolean ok2 = ok && dr_passes_run(g, diags);
  double t3 = now();
  guint n = dr_graph_n_nodes(g);
  printf("open %.3f s, parse %.3f s, passes %.3f s; %u nodes, %u edges, ok=%d/%d\n", t1 - t0, t2 - t1,
         t3 - t2, n, g->edges->len, ok, ok2);
  printf("peak RSS after parse %ld KB (%.0f B/node), at end %ld KB (%.0f B/node)\n", rss_parse,
         n ? rss_parse * 1024.0 / n : 0.0, peak_rss_kb(), n ? peak_rss_kb() * 1024.0 / n : 0.0);
  return ok2 ? 0 : 65;
}
