/* events.c: the cross-stream waits, as few as the stream assignment and
 * issue order allow. Not the stream assignment (chains.c, cap.c).
 *
 * Requires: plan->steps in issue order with streams (cap.c). Provides: the
 * waits of every step and plan->needs_event.
 *
 * Algorithm: vector clocks over streams. clock[s][t] counts the nodes of
 * stream t known complete when stream s reaches its current node; a node's
 * clock is the join of its stream predecessor's and those of the nodes it
 * waits on. Walking the steps in issue order, a node v on stream s looks at
 * its predecessors on other streams in descending step order and waits on u
 * (stream t, k-th node of t) only when clock[s][t] < k, then joins u's
 * clock. No wait is redundant: a wait on u is added only when nothing
 * before it covers u, and every wait considered later is on an earlier
 * step, whose clock cannot include u. Clocks of nodes are kept only while
 * some successor on another stream is still to be issued (a slab with a
 * free list), so memory follows the DAG's frontier, not its size; a
 * stream's clock is only made when it first waits (until then it knows
 * only itself, and so do the clocks of its nodes).
 * Complexity: O(V + E log deg + W * S) time for W waits and S streams;
 * S words per stream that waits and per live frontier node that waited,
 * 12 bytes per node. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/plan_internal.h"

#define NO_SLOT G_MAXUINT32

typedef struct {
  guint32 step;
  DrId node;
} Pred;

static int pred_by_step_desc(const void *pa, const void *pb) {
  const Pred *a = pa, *b = pb;
  return a->step < b->step ? 1 : a->step > b->step ? -1 : 0;
}

/* Sorts a node's predecessors by descending step: insertion sort for the
 * few most nodes have (qsort's calls cost more than the sort itself). */
static void sort_preds(Pred *p, guint32 len) {
  if (len > 16) {
    qsort(p, len, sizeof(Pred), pred_by_step_desc);
    return;
  }
  for (guint32 i = 1; i < len; i++) {
    Pred x = p[i];
    guint32 j = i;
    for (; j > 0 && p[j - 1].step < x.step; j--) p[j] = p[j - 1];
    p[j] = x;
  }
}

/* mine[x] = max(mine[x], theirs[x]) for x < width: the clock join, the
 * W * S term. Four lanes at a time through GCC/Clang vector extensions
 * (the two rows never overlap, which the compiler cannot know). */
typedef guint32 Lanes __attribute__((vector_size(16)));
static void join_clock(guint32 *restrict mine, const guint32 *restrict theirs, guint32 width) {
  guint32 x = 0;
  for (; x + 4 <= width; x += 4) {
    Lanes a, b;
    memcpy(&a, mine + x, sizeof a);
    memcpy(&b, theirs + x, sizeof b);
    Lanes gt = (Lanes)(b > a);
    a = (a & ~gt) | (b & gt);
    memcpy(mine + x, &a, sizeof a);
  }
  for (; x < width; x++) mine[x] = MAX(mine[x], theirs[x]);
}

typedef struct {
  guint32 width; /* clock entries per slot: the stream count */
  GArray *slab;  /* guint32, width per slot */
  GArray *free_slots;
} Clocks;

static guint32 slot_alloc(Clocks *c, const guint32 *clock) {
  guint32 slot;
  if (c->free_slots->len > 0) {
    slot = g_array_index(c->free_slots, guint32, c->free_slots->len - 1);
    g_array_set_size(c->free_slots, c->free_slots->len - 1);
  } else {
    slot = c->slab->len / c->width;
    g_array_set_size(c->slab, c->slab->len + c->width);
  }
  memcpy(&g_array_index(c->slab, guint32, (gsize)slot * c->width), clock, c->width * sizeof(guint32));
  return slot;
}

void dr__plan_events(const DrPlanCtx *ctx, DrPlan *plan) {
  guint32 n = ctx->n, S = MAX(plan->streams->len, 1);
  guint32 **rows = g_new0(guint32 *, S); /* clock of each stream, NULL until it waits */
  guint32 *count = g_new0(guint32, S);
  guint32 *spos = g_new(guint32, MAX(n, 1));     /* 1-based place in its stream */
  guint32 *pending = g_new0(guint32, MAX(n, 1)); /* successors on other streams not issued */
  guint32 *slot = g_new(guint32, MAX(n, 1));
  Clocks clocks = {S, g_array_new(FALSE, FALSE, sizeof(guint32)), g_array_new(FALSE, FALSE, sizeof(guint32))};
  GArray *preds = g_array_new(FALSE, FALSE, sizeof(Pred));

  for (guint32 e = 0; e < ctx->m; e++)
    if (plan->node_stream[ctx->edges[e].from] != plan->node_stream[ctx->edges[e].to])
      pending[ctx->edges[e].from]++;
  memset(plan->needs_event, 0, (gsize)MAX(n, 1) * sizeof(gboolean));
  g_array_set_size(plan->waits, 0);

  for (guint32 i = 0; i < n; i++) {
    DrPlanStep *step = dr_plan_step(plan, i);
    DrId v = step->node;
    guint32 s = step->stream;
    guint32 *mine = rows[s];
    spos[v] = ++count[s];
    if (mine != NULL) mine[s] = spos[v];
    slot[v] = NO_SLOT;

    g_array_set_size(preds, 0);
    for (guint32 e = DR__PRED_BEGIN(ctx, v); e < DR__PRED_END(ctx, v); e++) {
      DrId u = ctx->edges[e].from;
      if (plan->node_stream[u] != s) {
        Pred p = {plan->node_step[u], u};
        g_array_append_val(preds, p);
      }
    }
    if (preds->len > 1) sort_preds((Pred *)preds->data, preds->len);
    step->wait_first = plan->waits->len;
    for (guint32 k = 0; k < preds->len; k++) {
      DrId u = g_array_index(preds, Pred, k).node;
      guint32 t = plan->node_stream[u];
      if (mine != NULL && mine[t] >= spos[u]) continue;
      g_array_append_val(plan->waits, u);
      plan->needs_event[u] = TRUE;
      if (mine == NULL) {
        mine = rows[s] = g_new0(guint32, S);
        mine[s] = spos[v];
      }
      if (slot[u] == NO_SLOT) {
        /* u's stream had waited on nothing: its clock knew only itself. */
        mine[t] = MAX(mine[t], spos[u]);
        continue;
      }
      const guint32 *theirs = &g_array_index(clocks.slab, guint32, (gsize)slot[u] * S);
      join_clock(mine, theirs, S);
    }
    step->wait_count = plan->waits->len - step->wait_first;
    for (guint32 k = 0; k < preds->len; k++) {
      DrId u = g_array_index(preds, Pred, k).node;
      if (--pending[u] == 0 && slot[u] != NO_SLOT) {
        g_array_append_val(clocks.free_slots, slot[u]);
        slot[u] = NO_SLOT;
      }
    }
    if (pending[v] > 0 && mine != NULL) slot[v] = slot_alloc(&clocks, mine);
  }

  g_array_unref(preds);
  g_array_unref(clocks.slab);
  g_array_unref(clocks.free_slots);
  g_free(slot);
  g_free(pending);
  g_free(spos);
  g_free(count);
  for (guint32 t = 0; t < S; t++) g_free(rows[t]);
  g_free(rows);
}
