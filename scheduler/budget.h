/* budget.h: the memory budget, a scheduler pass that trades concurrency
 * for memory: under a limit on device bytes (memory.limit,
 * --memory-limit=), ordering edges are added until the certified
 * worst-case peak (scheduler/memory.c) fits. Also the trade-off curve
 * (--memory-curve): what width and estimated critical path each of a few
 * limits allows. Pure: no environment, no files. */
#ifndef DAGRUN_SCHEDULER_BUDGET_H
#define DAGRUN_SCHEDULER_BUDGET_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* The ordering edges that make the certified bound of `graph` (its edges
 * sorted by (to, from), a DAG) fit in `limit` bytes, computed without
 * changing the graph: appended to `added` (DrEdge, AFTER, buffer
 * DR_NONE), in the order chosen, each from an earlier node to a later one
 * in file order (node id). `out` gets the bound, width and estimated
 * critical path (cost model) before and after (widths only when
 * `widths`, else 0; a width costs a chain cover). Returns FALSE, adding
 * nothing, when `limit` is below the serial peak (out->serial_peak_bytes
 * says it; no edges can help: file order is the most serial execution);
 * else TRUE, the bound after within the limit. Greedy: each step takes,
 * over the pairs of lifetimes in the current certificate whose free comes
 * before the other's alloc in file order (one exists while the bound
 * exceeds the serial peak), the edge free -> alloc that grows the
 * critical path least, then the one separating the most bytes (the
 * smaller lifetime's), then the earliest in file order; then the bound is
 * recomputed. */
gboolean dr__budget_edges(const DrGraph *graph, guint64 limit, gboolean widths, GArray *added,
                          DrMemoryBudget *out);

/* The pass (passes.c's table, after cycles): with graph->run.memory_limit
 * set, adds the edges of dr__budget_edges to graph->edges (sorted again)
 * and graph->memory_edges and fills graph->budget. A limit below the
 * serial peak is an error at memory_limit_loc with a note per lifetime
 * live at the serial peak (the certificate: in file order those buffers
 * are live together); returns FALSE then. Nothing without a limit. */
gboolean dr__budget_run(DrGraph *graph, DrDiags *diags);

/* One point of the trade-off curve. */
typedef struct {
  guint64 limit;
  guint32 width, edges_added;
  double path_us;
} DrMemoryCurvePoint;

/* The trade-off between memory and concurrency of `graph` (sorted edges,
 * a DAG; the edges a limit added, graph->memory_edges, are left out, so
 * it is the pipeline's own): `points` (DrMemoryCurvePoint) gets up to
 * `n_points` limits spread evenly from the serial peak to the
 * unconstrained bound (both included; one point when they are equal),
 * each with the width and estimated critical path that dr__budget_edges
 * allows under it. */
void dr__budget_curve(const DrGraph *graph, guint n_points, GArray *points);

G_END_DECLS

#endif
