/* graph_update_bench.c: what a scalar-argument change costs a graph-mode
 * session (the library's DrRunner), on a GPU: chains of N scale_f32
 * kernels, one argument changed, then the executable graph updated in
 * place three ways: the changed node alone (a one-node capture of it and
 * cudaGraphExecKernelNodeSetParams, the session told which node changed),
 * the whole graph (cudaGraphExecUpdate after a re-capture, the session not
 * told), and the same re-capture followed by a fresh instantiation (the
 * update entry removed from the CUDA table), side by side in one process.
 * Also the one-time setup (capture + instantiate) and one replayed
 * iteration. Median of REPS of each, in ms.
 *
 *   graph_update_bench [REPS]      (prints a Markdown table) */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/graph.h"
#include "lib/load.h"
#include "scheduler/planner.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, guint n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now_ms(void) { return g_get_monotonic_time() / 1000.0; }

/* A chain of n scale_f32 nodes over two buffers (a -> b -> a ...). */
static DrGraph *chain(guint n) {
  GString *y = g_string_new(
      "dagrun: 1\nname: update-bench\nrun: {mode: graph}\nbuffers:\n"
      "  a: {type: f32, count: 4096, init: iota}\n  b: {type: f32, count: 4096}\nnodes:\n");
  for (guint i = 0; i < n; i++)
    g_string_append_printf(y, "  s%u: {op: kernel, kernel: scale_f32, args: {x: %s, alpha: 1.0, y: %s}}\n", i,
                           i % 2 ? "b" : "a", i % 2 ? "a" : "b");
  g_autoptr(DrDiags) d = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string("update-bench.yaml", y->str, y->len, d, &error);
  if (g == NULL) g_error("%s", error->message);
  g_string_free(y, TRUE);
  return g;
}

int main(int argc, char **argv) {
  guint reps = argc > 1 ? (guint)atoi(argv[1]) : 7;
  static const guint sizes[] = {100, 500, 2000};
  printf(
      "| nodes | setup (capture + instantiate) ms | one iteration ms | one node set ms | whole update ms | "
      "re-instantiate ms | re-instantiate / whole update |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "|\n");
  for (guint k = 0; k < G_N_ELEMENTS(sizes); k++) {
    g_autoptr(DrGraph) g = chain(sizes[k]);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    if (plan == NULL) g_error("%s", error->message);
    DrRunOptions o;
    dr_run_options_init(&o, g);
    o.backend = DR_BACKEND_CUDA;
    o.mode = DR_MODE_GRAPH;
    o.iterations = 1;
    o.warmup = 0;
    o.node_timing = DR_TIMING_OFF;
    g_autofree double *setup = g_new(double, reps), *iter = g_new(double, reps), *upd = g_new(double, reps),
                      *inst = g_new(double, reps), *one_node = g_new(double, reps);
    DrId mid_id = sizes[k] / 2;
    DrArg *alpha = NULL;
    const DrNode *mid = dr_graph_node(g, sizes[k] / 2);
    for (guint32 a = mid->arg_first; a < mid->arg_first + mid->arg_count; a++)
      if (dr_graph_arg(g, a)->kind == DR_ARG_FLOAT) alpha = dr_graph_arg(g, a);
    for (guint r = 0; r < reps; r++) {
      double t0 = now_ms();
      g_autoptr(DrSession) s = dr_session_open(plan, &o, &error);
      if (s == NULL) g_error("%s", error->message);
      setup[r] = now_ms() - t0;
      g_autoptr(DrReport) warm = dr_session_run(s, &error); /* loads modules */
      t0 = now_ms();
      g_autoptr(DrReport) one = dr_session_run(s, &error);
      iter[r] = now_ms() - t0;
      const char *how = NULL;
      /* Only the middle node changed, and the session is told so. */
      alpha->v.f = 1.0 + (r + 1) * 2e-3;
      t0 = now_ms();
      if (!dr_session_args_changed(s, &mid_id, 1, &how, &error)) g_error("%s", error->message);
      one_node[r] = now_ms() - t0;
      if (strcmp(how, "updated-nodes") != 0) g_error("expected a per-node update, got %s", how);
      alpha->v.f = 1.0 + (r + 1) * 1e-3;
      t0 = now_ms();
      if (!dr_session_args_changed(s, NULL, 0, &how, &error)) g_error("%s", error->message);
      upd[r] = now_ms() - t0;
      if (strcmp(how, "updated") != 0) g_error("expected an in-place update, got %s", how);
      /* The same change applied with no update entry: re-instantiated. */
      DrCudaApi api = *dr_cuda_api();
      api.cudaGraphExecUpdate = NULL;
      const DrCudaApi *prev = dr_cuda_api_set(&api);
      alpha->v.f = 1.0 - (r + 1) * 1e-3;
      t0 = now_ms();
      if (!dr_session_args_changed(s, NULL, 0, &how, &error)) g_error("%s", error->message);
      inst[r] = now_ms() - t0;
      dr_cuda_api_set(prev);
      if (strcmp(how, "re-instantiated") != 0) g_error("expected a re-instantiation, got %s", how);
      g_autoptr(DrReport) after = dr_session_run(s, &error);
      if (after == NULL) g_error("%s", error->message);
    }
    double u = median(upd, reps), i = median(inst, reps);
    printf("| %u | %.2f | %.3f | %.3f | %.2f | %.2f | %.2fx |\n", sizes[k], median(setup, reps),
           median(iter, reps), median(one_node, reps), u, i, i / u);
  }
  return 0;
}
