/* afters.c: the afters pass, explicit `after:` entries to AFTER edges.
 *
 * Requires: graph->afters resolved to node ids by the parser (prefix `*`
 * entries already expanded). Provides: one DR_EDGE_AFTER edge (buffer
 * DR_NONE) from the listed node to the node holding the `after:` key for
 * every entry, or an error at the entry when a node lists itself. Edges may
 * go backward in program order; the cycle pass rejects the ones that close a
 * loop, and dr_graph_sort_edges folds duplicates of hazard edges. O(afters). */
#include "scheduler/passes.h"

gboolean dr__afters_run(DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  guint n_errors = dr_diags_n_errors(diags);
  for (guint i = 0; i < graph->afters->len; i++) {
    const DrAfter *a = &g_array_index(graph->afters, DrAfter, i);
    if (a->from == a->to) {
      dr_diags_error(diags, a->loc, "node '%s': lists itself in after:", dr_graph_node(graph, a->to)->id);
      continue;
    }
    dr_graph_add_edge(graph, a->from, a->to, DR_EDGE_AFTER, DR_NONE);
  }
  return dr_diags_n_errors(diags) == n_errors;
}
