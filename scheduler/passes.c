/* passes.c: the dependency pipeline, one call per pass (passes.h). Each pass
 * owns its file; this one only orders them and stops after the first pass
 * that reported errors, so later passes may assume the earlier ones'
 * guarantees (hazards assume well-formed lifetimes, cycles assume every edge
 * is in place). */
#include "scheduler/passes.h"

gboolean dr_passes_run(DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  if (!dr__lifetimes_check(graph, diags)) return FALSE;
  dr__hazards_run(graph);
  if (!dr__afters_run(graph, diags)) return FALSE;
  if (!dr__cycles_check(graph, diags)) return FALSE;
  dr_graph_sort_edges(graph);
  DR_GRAPH_CHECK(graph);
  return TRUE;
}
