/* dag_reference.c: slow exact references over small DAGs for the tests
 * (dag_reference.h): the closure by fixed point over the edges, the width
 * by Kuhn's matching on the closure (Dilworth: width = |mask| minus a
 * maximum matching): O(n E) and O(n^3) for n <= 64 nodes, and
 * meant to be obviously right rather than fast. */
#include "tests/support/dag_reference.h"

guint64 *dr_test_closure(const DrGraph *g) {
  guint32 n = g->nodes->len;
  g_assert_cmpuint(n, <=, 64);
  guint64 *reach = g_new0(guint64, MAX(n, 1));
  gboolean changed = TRUE;
  while (changed) {
    changed = FALSE;
    for (guint32 e = 0; e < g->edges->len; e++) {
      const DrEdge *ed = dr_graph_edge(g, e);
      guint64 next = reach[ed->from] | reach[ed->to] | (G_GUINT64_CONSTANT(1) << ed->to);
      if (next != reach[ed->from]) reach[ed->from] = next, changed = TRUE;
    }
  }
  return reach;
}

gboolean dr_test_comparable(const guint64 *reach, DrId a, DrId b) {
  return ((reach[a] >> b) & 1) || ((reach[b] >> a) & 1);
}

guint32 dr_test_width(const guint64 *reach, guint32 n, guint64 mask) {
  gint32 match_right[64];
  guint32 matched = 0, size = 0;
  for (guint32 v = 0; v < 64; v++) match_right[v] = -1;
  for (guint32 u = 0; u < n; u++) {
    if (!((mask >> u) & 1)) continue;
    size++;
    /* Iterative augmenting-path search from u. */
    gint32 parent_left[64], via_right[64];
    guint64 seen = 0;
    guint32 queue[64], head = 0, tail = 0;
    gint32 found = -1;
    queue[tail++] = u;
    parent_left[u] = -1;
    while (head < tail && found < 0) {
      guint32 x = queue[head++];
      for (guint32 v = 0; v < n && found < 0; v++) {
        if (!((mask >> v) & 1) || !((reach[x] >> v) & 1) || ((seen >> v) & 1)) continue;
        seen |= G_GUINT64_CONSTANT(1) << v;
        via_right[v] = (gint32)x;
        if (match_right[v] < 0) {
          found = (gint32)v;
        } else {
          guint32 y = (guint32)match_right[v];
          parent_left[y] = (gint32)v;
          queue[tail++] = y;
        }
      }
    }
    if (found < 0) continue;
    matched++;
    /* Flip the path back to u. */
    gint32 v = found;
    while (v >= 0) {
      guint32 x = (guint32)via_right[v];
      gint32 prev_v = parent_left[x];
      match_right[v] = (gint32)x;
      v = prev_v;
    }
  }
  return size - matched;
}
