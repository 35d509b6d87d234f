/* mode.c: resolving `mode: auto` (mode.h). Reads the graph only: no CUDA,
 * no plan. The rule (decisions.md, Streams and modes): a graph pays for its
 * capture and instantiation once and then replays at ~0.5-0.7 us per node
 * against ~4 us per eager launch (GPU-NOTES.md), so it wins as soon as the
 * pipeline iterates; a single iteration would pay the capture for one
 * replay, so streams. */
#include "ir/mode.h"

#include "ir/loops.h"

static char *body_uncapturable(const DrGraph *g, const char *where) {
  /* while: and if: are CUDA conditional nodes in graph mode
   * (backends/cuda/condgraph.c): only what their bodies hold matters. */
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    char *why = body_uncapturable(l->body, " in a loop body");
    if (why == NULL && l->else_body != NULL) why = body_uncapturable(l->else_body, " in a loop body");
    if (why) return why;
  }
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++) {
    const DrNode *n = dr_graph_node(g, v);
    if (n->op == DR_OP_KERNEL && dr_graph_kernel(g, n->kernel)->api_def != NULL)
      return g_strdup_printf(
          "node '%s' runs kernel '%s' registered through the C library%s (its launcher "
          "may not be capturable)",
          n->id, dr_graph_kernel(g, n->kernel)->name, where);
    if (dr_graph_copy_pageable(g, v) != DR_NONE)
      return g_strdup_printf("node '%s' copies pageable host memory%s (graph mode does not capture it)",
                             n->id, where);
  }
  return NULL;
}

char *dr_mode_uncapturable(const DrGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  return body_uncapturable(g, "");
}

DrMode dr_mode_resolve(const DrGraph *g, DrMode asked, guint32 iterations, const char *forced_by,
                       char **reason) {
  g_return_val_if_fail(g != NULL && reason != NULL, DR_MODE_STREAMS);
  if (asked != DR_MODE_AUTO) {
    *reason = g_strdup_printf("set by %s", forced_by ? forced_by : "the caller");
    return asked;
  }
  if (g->run.device_loop) {
    /* The whole run as one WHILE launch exists only as a graph. */
    *reason = g_strdup("auto: run.device_loop is set (one WHILE launch: graph mode)");
    return DR_MODE_GRAPH;
  }
  if (iterations <= 1) {
    *reason = g_strdup_printf("auto: %u iteration, nothing to replay", iterations);
    return DR_MODE_STREAMS;
  }
  char *why = dr_mode_uncapturable(g);
  if (why) {
    *reason = g_strdup_printf("auto: %s", why);
    g_free(why);
    return DR_MODE_STREAMS;
  }
  *reason = g_strdup_printf("auto: %u iterations and every node capturable", iterations);
  return DR_MODE_GRAPH;
}
