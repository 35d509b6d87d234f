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
 * only itself, and so do the clocks of its nodes). A node's clock is its
 * stream's row as it was then, except the node's own entry (its place,
 * known apart): so the nodes a stream issues between two of its waits
 * share one copy of the row (reference counted), and a stream's own entry
 * in a copy is raised to the node's place when it is joined. When no
 * stream holds more than 32767 nodes the clocks are 16-bit (half the
 * memory traffic of the joins, twice the lanes per vector).
 * Complexity: O(V + E log deg + W * S) time for W waits and S streams;
 * S words per stream that waits and per live frontier copy, 12 bytes per
 * node. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/plan_internal.h"

#define NO_SLOT G_MAXUINT32
/* The largest place in a stream that 16-bit clocks hold. */
#define NARROW_MAX 32767u

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
 * W * S term. A vector at a time through GCC/Clang vector extensions
 * (the two rows never overlap, which the compiler cannot know). */
typedef guint32 Lanes32 __attribute__((vector_size(16)));
typedef gint16 Lanes16 __attribute__((vector_size(16)));
static void join_clock32(guint32 *restrict mine, const guint32 *restrict theirs, guint32 width) {
  guint32 x = 0;
  for (; x + 4 <= width; x += 4) {
    Lanes32 a, b;
    memcpy(&a, mine + x, sizeof a);
    memcpy(&b, theirs + x, sizeof b);
    Lanes32 gt = (Lanes32)(b > a);
    a = (a & ~gt) | (b & gt);
    memcpy(mine + x, &a, sizeof a);
  }
  for (; x < width; x++) mine[x] = MAX(mine[x], theirs[x]);
}
static void join_clock16(gint16 *restrict mine, const gint16 *restrict theirs, guint32 width) {
  guint32 x = 0;
  for (; x + 8 <= width; x += 8) {
    Lanes16 a, b;
    memcpy(&a, mine + x, sizeof a);
    memcpy(&b, theirs + x, sizeof b);
    Lanes16 gt = (Lanes16)(b > a);
    a = (a & ~gt) | (b & gt);
    memcpy(mine + x, &a, sizeof a);
  }
  for (; x < width; x++) mine[x] = MAX(mine[x], theirs[x]);
}

/* Entry i of a clock row of 16-bit (narrow) or 32-bit entries. */
static inline guint32 clock_get(const void *row, guint32 i, gboolean narrow) {
  return narrow ? (guint32)((const gint16 *)row)[i] : ((const guint32 *)row)[i];
}
static inline void clock_set(void *row, guint32 i, guint32 value, gboolean narrow) {
  if (narrow)
    ((gint16 *)row)[i] = (gint16)value;
  else
    ((guint32 *)row)[i] = value;
}

/* The copies of stream rows that nodes still to be waited on hold. */
typedef struct {
  gsize row_bytes;
  guint8 *slab; /* row_bytes per slot */
  guint32 n_slots, cap_slots;
  guint32 *refs; /* [cap_slots] nodes (and a stream's current copy) holding each slot */
  GArray *free_slots;
} Clocks;

static guint32 slot_copy(Clocks *c, const void *row) {
  guint32 slot;
  if (c->free_slots->len > 0) {
    slot = g_array_index(c->free_slots, guint32, c->free_slots->len - 1);
    g_array_set_size(c->free_slots, c->free_slots->len - 1);
  } else {
    if (c->n_slots == c->cap_slots) {
      c->cap_slots = MAX(16, 2 * c->cap_slots);
      c->slab = g_realloc(c->slab, c->cap_slots * c->row_bytes);
      c->refs = g_renew(guint32, c->refs, c->cap_slots);
    }
    slot = c->n_slots++;
  }
  memcpy(c->slab + slot * c->row_bytes, row, c->row_bytes);
  c->refs[slot] = 1;
  return slot;
}

static inline void slot_unref(Clocks *c, guint32 slot) {
  if (--c->refs[slot] == 0) g_array_append_val(c->free_slots, slot);
}

/* Per node: its place in its stream (1-based), its successors on other
 * streams not yet issued, and the slot of its clock (NO_SLOT while its
 * stream had waited on nothing). */
typedef struct {
  guint32 spos, pending, slot;
} NodeClock;

/* FALSE, half done, when `narrow` and a stream turns out to hold more
 * than NARROW_MAX nodes (streams' n_nodes said otherwise). */
static inline __attribute__((always_inline)) gboolean plan_events(const DrPlanCtx *ctx, DrPlan *plan,
                                                                  gboolean narrow) {
  guint32 n = ctx->n, S = MAX(plan->streams->len, 1);
  gsize esize = narrow ? sizeof(gint16) : sizeof(guint32);
  void **rows = g_new0(void *, S); /* clock of each stream, NULL until it waits */
  guint32 *count = g_new0(guint32, S);
  guint32 *cur = g_new(guint32, S); /* the slot copying each row as it is now, or NO_SLOT */
  for (guint32 s = 0; s < S; s++) cur[s] = NO_SLOT;
  NodeClock *nc = g_new0(NodeClock, MAX(n, 1));
  Clocks clocks = {.row_bytes = S * esize, .free_slots = g_array_new(FALSE, FALSE, sizeof(guint32))};
  GArray *preds = g_array_new(FALSE, FALSE, sizeof(Pred));

  for (guint32 e = 0; e < ctx->m; e++)
    if (plan->node_stream[ctx->edges[e].from] != plan->node_stream[ctx->edges[e].to])
      nc[ctx->edges[e].from].pending++;
  memset(plan->needs_event, 0, (gsize)MAX(n, 1) * sizeof(gboolean));
  g_array_set_size(plan->waits, 0);

  guint32 i = 0;
  for (; i < n; i++) {
    DrPlanStep *step = dr_plan_step(plan, i);
    DrId v = step->node;
    guint32 s = step->stream;
    /* Issue order visits nodes, their edges and records all over memory:
     * fetch a later step's ahead (its offsets 16 steps ahead, then its
     * edges and record 8 steps ahead, when those offsets have arrived). */
    if (i + 16 < n) __builtin_prefetch(&ctx->pred_off[dr_plan_step(plan, i + 16)->node]);
    if (i + 8 < n) {
      DrId w = dr_plan_step(plan, i + 8)->node;
      if (ctx->edges != NULL) __builtin_prefetch(&ctx->edges[DR__PRED_BEGIN(ctx, w)]); /* NULL: no edges */
      __builtin_prefetch(&nc[w]);
    }
    void *mine = rows[s];
    guint32 place = ++count[s];
    if (narrow && place > NARROW_MAX) break;
    nc[v].spos = place;
    nc[v].slot = NO_SLOT;
    if (mine != NULL) clock_set(mine, s, place, narrow);

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
      guint32 t = plan->node_stream[u], su = nc[u].spos;
      if (mine != NULL && clock_get(mine, t, narrow) >= su) continue;
      g_array_append_val(plan->waits, u);
      plan->needs_event[u] = TRUE;
      if (mine == NULL) {
        mine = rows[s] = g_malloc0(clocks.row_bytes);
        clock_set(mine, s, place, narrow);
      }
      /* The row changes: its current copy no longer matches it. */
      if (cur[s] != NO_SLOT) {
        slot_unref(&clocks, cur[s]);
        cur[s] = NO_SLOT;
      }
      if (nc[u].slot != NO_SLOT) {
        const void *theirs = clocks.slab + nc[u].slot * clocks.row_bytes;
        if (narrow)
          join_clock16(mine, theirs, S);
        else
          join_clock32(mine, theirs, S);
      }
      /* u's own entry: its place (its copy may be older, or, when its
       * stream had waited on nothing, the only entry it knows). */
      if (clock_get(mine, t, narrow) < su) clock_set(mine, t, su, narrow);
    }
    step->wait_count = plan->waits->len - step->wait_first;
    for (guint32 k = 0; k < preds->len; k++) {
      NodeClock *pu = &nc[g_array_index(preds, Pred, k).node];
      if (--pu->pending == 0 && pu->slot != NO_SLOT) {
        slot_unref(&clocks, pu->slot);
        pu->slot = NO_SLOT;
      }
    }
    if (nc[v].pending > 0 && mine != NULL) {
      if (cur[s] == NO_SLOT) {
        cur[s] = slot_copy(&clocks, mine);
        clocks.refs[cur[s]]++; /* the stream's own reference */
      } else {
        clocks.refs[cur[s]]++;
      }
      nc[v].slot = cur[s];
    }
  }

  gboolean done = i == n;
  g_array_unref(preds);
  g_free(clocks.slab);
  g_free(clocks.refs);
  g_array_unref(clocks.free_slots);
  g_free(nc);
  g_free(cur);
  g_free(count);
  for (guint32 t = 0; t < S; t++) g_free(rows[t]);
  g_free(rows);
  return done;
}

void dr__plan_events(const DrPlanCtx *ctx, DrPlan *plan) {
  guint32 longest = 0;
  for (guint32 s = 0; s < plan->streams->len; s++)
    longest = MAX(longest, g_array_index(plan->streams, DrStream, s).n_nodes);
  if (longest > NARROW_MAX || !plan_events(ctx, plan, TRUE)) plan_events(ctx, plan, FALSE);
}
