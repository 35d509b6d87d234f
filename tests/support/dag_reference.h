/* dag_reference.h: slow exact references over small DAGs (at most 64
 * nodes, one machine word per node), against which the planner's property
 * tests check its fast answers. Test-only; no product code uses them, and
 * they use nothing of the planner's. */
#ifndef DAGRUN_TESTS_SUPPORT_DAG_REFERENCE_H
#define DAGRUN_TESTS_SUPPORT_DAG_REFERENCE_H

#include <glib.h>

#include "ir/graph.h"

/* The transitive closure of g's edges: reach[u] bit v is set when v is
 * reachable from u by one or more edges. g has at most 64 nodes (asserted).
 * The caller g_frees the array (g->nodes->len words, at least one). */
guint64 *dr_test_closure(const DrGraph *g);

/* Whether nodes a and b are ordered either way under the closure `reach`. */
gboolean dr_test_comparable(const guint64 *reach, DrId a, DrId b);

/* The width (largest antichain) of the nodes in `mask` (bit v: node v; of
 * the first n nodes) under the closure `reach`: |mask| minus a maximum
 * matching of the comparability bipartite graph. */
guint32 dr_test_width(const guint64 *reach, guint32 n, guint64 mask);

#endif
