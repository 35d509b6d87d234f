/* reuse.c: buffer reuse (memory.reuse: auto): whole-run scratch buffers
 * (`scratch: true`) share storage when every execution the DAG allows
 * orders their uses, so sharing adds no edge. Not the memory figures
 * (memory.c), which this pass corrects afterwards, nor the allocation
 * itself (each backend allocates a group once and aliases its members).
 *
 * Requires: the planner's edge index and issue order (DrPlanCtx).
 * Provides: plan->storage, storage_bytes, reuse_saved_bytes, n_shared.
 *
 * A scratch buffer's uses are the nodes that access it. Buffer B may
 * follow buffer A in one storage when every use of A reaches every use of
 * B in the DAG (so no execution has them live at once, and no node uses
 * both), and both live on one device. Greedy, in program order of first use: each buffer goes into the
 * first group whose last member it may follow (transitively then it may
 * follow every member), else it starts a group. A group allocates its
 * largest member; each buffer keeps its own name and size everywhere (the
 * backends only point it into the group's storage).
 *
 * Cost: for each scratch buffer and each group tried, one forward search
 * from the last member's uses (O(V + E)), so O(S * G * (V + E)) for S
 * scratch buffers in G groups; nothing without scratch buffers or reuse. */
#include <string.h>

#include "scheduler/plan_internal.h"

typedef struct {
  DrId buffer;
  guint32 first_use; /* program order of its first use */
} Scratch;

static int scratch_cmp(const void *a, const void *b) {
  const Scratch *x = a, *y = b;
  if (x->first_use != y->first_use) return x->first_use < y->first_use ? -1 : 1;
  return x->buffer < y->buffer ? -1 : x->buffer > y->buffer;
}

/* The nodes that use each buffer: uses[off[b] .. off[b + 1]). */
static guint32 *buffer_uses(const DrGraph *g, guint32 **off_out) {
  guint32 n_buf = g->buffers->len, n = g->nodes->len;
  guint32 *off = g_new0(guint32, n_buf + 1);
  for (DrId v = 0; v < n; v++) {
    const DrNode *node = dr_graph_node(g, v);
    for (guint32 a = node->access_first; a < node->access_first + node->access_count; a++)
      off[dr_graph_access(g, a)->buffer + 1]++;
  }
  for (guint32 b = 0; b < n_buf; b++) off[b + 1] += off[b];
  guint32 *fill = g_memdup2(off, sizeof(guint32) * (n_buf + 1));
  guint32 *uses = g_new(guint32, MAX(off[n_buf], 1));
  for (DrId v = 0; v < n; v++) {
    const DrNode *node = dr_graph_node(g, v);
    for (guint32 a = node->access_first; a < node->access_first + node->access_count; a++) {
      DrId b = dr_graph_access(g, a)->buffer;
      if (fill[b] == off[b] || uses[fill[b] - 1] != v) uses[fill[b]++] = v; /* once per node */
    }
  }
  /* A node with two accesses of one buffer counted twice: close the gaps. */
  guint32 w = 0;
  guint32 *dense = g_new0(guint32, n_buf + 1);
  for (guint32 b = 0; b < n_buf; b++) {
    dense[b] = w;
    for (guint32 i = off[b]; i < fill[b]; i++) uses[w++] = uses[i];
  }
  dense[n_buf] = w;
  g_free(fill);
  g_free(off);
  *off_out = dense;
  return uses;
}

/* Whether every node of `from` [n_from] reaches every node of `to`
 * [n_to] (strictly: a node in both fails). One search per source, marks
 * in `seen` stamped with *mark. */
static gboolean all_reach(const DrPlanCtx *c, const guint32 *from, guint32 n_from, const guint32 *to,
                          guint32 n_to, guint32 *seen, guint32 *mark, GArray *stack) {
  for (guint32 i = 0; i < n_from; i++) {
    guint32 m = ++*mark;
    guint32 left = n_to;
    g_array_set_size(stack, 0);
    for (guint32 k = c->succ_off[from[i]]; k < c->succ_off[from[i] + 1]; k++) {
      DrId v = c->edges[c->succ_edge[k]].to;
      if (seen[v] != m) seen[v] = m, g_array_append_val(stack, v);
    }
    /* Mark the targets found; stop once all are. */
    while (stack->len > 0 && left > 0) {
      DrId u = g_array_index(stack, DrId, stack->len - 1);
      g_array_set_size(stack, stack->len - 1);
      for (guint32 j = 0; j < n_to; j++) left -= to[j] == u;
      for (guint32 k = c->succ_off[u]; k < c->succ_off[u + 1]; k++) {
        DrId v = c->edges[c->succ_edge[k]].to;
        if (seen[v] != m) seen[v] = m, g_array_append_val(stack, v);
      }
    }
    if (left > 0) return FALSE;
  }
  return TRUE;
}

void dr__plan_reuse(const DrPlanCtx *ctx, DrPlan *plan) {
  const DrGraph *g = ctx->graph;
  if (!g->run.reuse) return;
  guint32 n_buf = g->buffers->len;
  g_autoptr(GArray) cands = g_array_new(FALSE, FALSE, sizeof(Scratch));
  guint32 *off = NULL;
  g_autofree guint32 *uses = buffer_uses(g, &off);
  for (DrId b = 0; b < n_buf; b++) {
    const DrBuffer *buf = dr_graph_buffer(g, b);
    if (!buf->scratch || buf->alloc_node != DR_NONE || buf->where != DR_WHERE_DEVICE || off[b] == off[b + 1])
      continue;
    Scratch s = {b, uses[off[b]]};
    g_array_append_val(cands, s);
  }
  if (cands->len < 2) {
    g_free(off);
    return;
  }
  g_array_sort(cands, scratch_cmp);
  plan->storage = g_new(DrId, MAX(n_buf, 1));
  plan->storage_bytes = g_new0(guint64, MAX(n_buf, 1));
  for (DrId b = 0; b < n_buf; b++) {
    plan->storage[b] = b;
    plan->storage_bytes[b] = dr_buffer_bytes(dr_graph_buffer(g, b));
  }
  g_autoptr(GArray) leader = g_array_new(FALSE, FALSE, sizeof(DrId)); /* per group: its first buffer */
  g_autoptr(GArray) last = g_array_new(FALSE, FALSE, sizeof(DrId));   /* per group: its last */
  g_autofree guint32 *seen = g_new0(guint32, MAX(ctx->n, 1));
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(DrId));
  guint32 mark = 0;
  for (guint i = 0; i < cands->len; i++) {
    DrId b = g_array_index(cands, Scratch, i).buffer;
    guint group = G_MAXUINT;
    for (guint k = 0; k < leader->len && group == G_MAXUINT; k++) {
      DrId t = g_array_index(last, DrId, k);
      /* One group's storage is one allocation on one device. */
      if (dr_graph_buffer_device(g, t) != dr_graph_buffer_device(g, b)) continue;
      if (all_reach(ctx, uses + off[t], off[t + 1] - off[t], uses + off[b], off[b + 1] - off[b], seen, &mark,
                    stack))
        group = k;
    }
    if (group == G_MAXUINT) {
      g_array_append_val(leader, b);
      g_array_append_val(last, b);
      continue;
    }
    DrId l = g_array_index(leader, DrId, group);
    g_array_index(last, DrId, group) = b;
    plan->storage[b] = l;
    plan->storage_bytes[l] = MAX(plan->storage_bytes[l], dr_buffer_bytes(dr_graph_buffer(g, b)));
    plan->n_shared++;
  }
  /* What it saves, counted as the pool rounds allocations. */
  guint64 before = 0, after = 0;
  for (guint i = 0; i < cands->len; i++) {
    DrId b = g_array_index(cands, Scratch, i).buffer;
    before += dr_pool_bytes(dr_buffer_bytes(dr_graph_buffer(g, b)));
    if (plan->storage[b] == b) after += dr_pool_bytes(plan->storage_bytes[b]);
  }
  plan->reuse_saved_bytes = before - after;
  plan->whole_run_bytes -= plan->reuse_saved_bytes;
  plan->peak_serial_bytes -= plan->reuse_saved_bytes;
  plan->peak_bound_bytes -= plan->reuse_saved_bytes;
  if (plan->n_shared == 0) {
    g_clear_pointer(&plan->storage, g_free);
    g_clear_pointer(&plan->storage_bytes, g_free);
  }
  g_free(off);
}
