/* order.c: the issue order, a topological order of the DAG that interleaves
 * streams, and the unconstrained schedule it comes from. Not the stream
 * assignment (chains.c, cap.c).
 *
 * Requires: ctx->dur (cost.c) and the edge index. Provides: ctx->order
 * (the issue order), ctx->pos (its inverse) and the critical path.
 *
 * Algorithm: Kahn's algorithm with a binary heap keyed by (earliest start,
 * higher priority first, program order): a node enters the heap when its last predecessor is
 * issued, with est = max over predecessors of (est + duration). Keys leave
 * the heap in nondecreasing start time, so the order follows the estimated
 * timeline across all streams instead of draining one stream at a time
 * (GPU-NOTES: interleaved submission cuts false serialization when streams
 * share hardware queues). Stream order is this order restricted to each
 * stream. A node never issued means a cycle: an error naming one of them.
 * Complexity: O(V log V + E) time; 8 bytes per node kept (order, pos) and
 * 29 more while it runs (in-degrees, starts, priorities and the heap of
 * 16-byte keys). Iterative. */
#include <string.h>

#include "scheduler/plan_internal.h"

/* A heap entry is one 128-bit key that orders as (est, higher priority,
 * node) does: est's bits made to sort as unsigned integers (sign bit
 * flipped, or every bit for a negative), then 255 - priority, then the
 * node id. One unsigned compare instead of three branches per step. */
typedef unsigned __int128 HeapItem;

static inline HeapItem item_key(double est, DrId node, guint8 priority) {
  guint64 bits;
  memcpy(&bits, &est, sizeof bits);
  bits = (bits >> 63) ? ~bits : bits | (G_GUINT64_CONSTANT(1) << 63);
  return (HeapItem)bits << 64 | (guint64)(255u - priority) << 32 | node;
}

static inline DrId item_node(HeapItem it) { return (DrId)(guint32)it; }

static void heap_push(HeapItem *h, guint32 *len, HeapItem it) {
  guint32 i = (*len)++;
  while (i > 0) {
    guint32 parent = (i - 1) / 2;
    if (!(it < h[parent])) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = it;
}

static HeapItem heap_pop(HeapItem *h, guint32 *len) {
  HeapItem top = h[0], last = h[--(*len)];
  guint32 i = 0;
  for (;;) {
    guint32 child = 2 * i + 1;
    if (child >= *len) break;
    child += child + 1 < *len && h[child + 1] < h[child];
    if (!(h[child] < last)) break;
    h[i] = h[child];
    i = child;
  }
  if (*len > 0) h[i] = last;
  return top;
}

gboolean dr__plan_order(DrPlanCtx *ctx, double *critical_path_us, GError **error) {
  guint32 n = ctx->n;
  guint32 *indeg = g_new(guint32, MAX(n, 1));
  HeapItem *heap = g_new(HeapItem, MAX(n, 1));
  guint32 len = 0, issued = 0;
  double critical = 0;
  double *est = g_new0(double, MAX(n, 1));
  /* The priorities, read once in node order (reading them from the nodes
   * as they become ready missed the cache on almost every node): cost.c
   * has usually read them already. */
  guint8 *prio = ctx->node_prio;
  ctx->node_prio = NULL;
  if (prio == NULL) {
    prio = g_new(guint8, MAX(n, 1));
    for (DrId v = 0; v < n; v++) prio[v] = (guint8)dr_graph_node(ctx->graph, v)->priority;
  }
  ctx->order = g_new(guint32, MAX(n, 1));
  ctx->pos = g_new(guint32, MAX(n, 1));
  for (DrId v = 0; v < n; v++) {
    indeg[v] = DR__PRED_END(ctx, v) - DR__PRED_BEGIN(ctx, v);
    if (indeg[v] == 0) heap_push(heap, &len, item_key(0.0, v, prio[v]));
  }
  while (len > 0) {
    HeapItem it = heap_pop(heap, &len);
    DrId u = item_node(it);
    double finish = est[u] + ctx->dur[u];
    critical = MAX(critical, finish);
    ctx->pos[u] = issued;
    ctx->order[issued++] = u;
    for (guint32 i = ctx->succ_off[u]; i < ctx->succ_off[u + 1]; i++) {
      DrId v = ctx->edges[ctx->succ_edge[i]].to;
      est[v] = MAX(est[v], finish);
      if (--indeg[v] == 0) heap_push(heap, &len, item_key(est[v], v, prio[v]));
    }
  }
  gboolean ok = TRUE;
  if (issued < n) {
    DrId stuck = 0;
    while (indeg[stuck] == 0) stuck++;
    const DrNode *node = dr_graph_node(ctx->graph, stuck);
    ok = dr_set_error_at(error, DR_ERROR_INVALID, node->loc,
                         "node '%s' is on a dependency cycle; cannot plan", node->id);
  }
  g_free(prio);
  g_free(est);
  g_free(heap);
  g_free(indeg);
  *critical_path_us = critical;
  return ok;
}
