/* cap.c: the stream cap, and the chain merges it forces; then the plan's
 * streams and steps. Not the chain cover (chains.c) nor the waits
 * (events.c).
 *
 * Requires: ctx->chain (chains.c), ctx->order, dur (order.c, cost.c).
 * Provides: plan->cap, cap_binds, streams (numbered by first issue, each
 * with its priority class), steps in issue order (no waits yet),
 * node_stream, node_step, planned_path_us.
 *
 * The cap: DrPlanOptions.max_streams, else the pipeline's run.max_streams,
 * else none in graph mode (capture needs no queue cap), else 8 (the
 * device's hardware queues by default; more eager streams than queues
 * serialize falsely); none when DrPlanOptions.uncapped; never more than
 * STREAM_LIMIT (4096). The environment (CUDA_DEVICE_MAX_CONNECTIONS) is
 * the library's business (lib/settings.c), which passes the cap it chose:
 * this file reads nothing but its arguments.
 * Stream classes (plan_internal.h: a device and a priority, or the
 * device's communication stream) never share a stream. The cap applies per
 * device, to its compute classes, and is raised to the number of them
 * present when it is smaller; a communication stream is counted beside it.
 *
 * Algorithm when the chains outnumber the cap: the cap is shared among
 * classes (one stream each, then one at a time to the class with the most
 * chains per stream). Small graphs (pairs * merges * (V + E) within
 * MERGE_EXACT_WORK): streams of a class are merged greedily two at a time,
 * each time the pair whose merge gives the shortest planned path,
 * evaluated exactly. Large graphs: within a class each chain, taken by
 * estimated start (longest work first among equal starts, as in LPT), is
 * interleaved onto the stream that frees up earliest (list scheduling of
 * chain intervals [start, finish] of the unconstrained schedule): chains
 * whose intervals do not overlap merge for free, and an overlap delays the
 * critical path by about the shorter chain's work.
 * Merged chains run in issue order on their stream. planned_path_us is then
 * the longest path over DAG edges plus the added stream-order edges.
 * Complexity: O(V + E + C log C + C log K) for C chains and cap K, or for
 * the exact greedy O(C^3 (V + E)) bounded by MERGE_EXACT_WORK. */
#include <stdlib.h>

#include "scheduler/plan_internal.h"

#define DEFAULT_CAP 8u
/* No plan uses more streams than this, whatever is asked: the vector
 * clocks of events.c take streams^2 words. */
#define STREAM_LIMIT 4096u
/* Budget of the exact greedy merge: pair evaluations times (V + E). */
#define MERGE_EXACT_WORK 4e7

/* The cap (STREAM_LIMIT: none); sets *uncapped when nobody asked for one. */
static guint32 resolve_cap(const DrGraph *g, guint32 max_streams, gboolean no_cap, gboolean *uncapped) {
  *uncapped = FALSE;
  if (!no_cap && max_streams > 0) return MIN(max_streams, STREAM_LIMIT);
  if (!no_cap && g->run.max_streams_set && g->run.max_streams > 0)
    return MIN(g->run.max_streams, STREAM_LIMIT);
  /* Captured into a CUDA graph, streams are only a way to express edges:
   * the hardware queues they would share eagerly do not exist there, and
   * any merge would turn stream order into false graph edges (GPU-NOTES:
   * round-robin capture onto 4 streams ran 2-7.6x slower). So graph mode
   * is uncapped unless the user asks for a cap. */
  if (no_cap || g->run.mode == DR_MODE_GRAPH) {
    *uncapped = TRUE;
    return STREAM_LIMIT;
  }
  return DEFAULT_CAP;
}

typedef struct {
  double start, finish, work;
  guint32 first_pos; /* issue position of the chain's first node */
  guint32 id;
} ChainSpan;

static int span_cmp(const void *pa, const void *pb) {
  const ChainSpan *a = pa, *b = pb;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->work != b->work) return a->work > b->work ? -1 : 1;
  return a->first_pos < b->first_pos ? -1 : a->first_pos > b->first_pos;
}

/* Interleaves the chains of one class onto `k` streams numbered from
 * `first_stream` (list scheduling on chain intervals). */
typedef struct {
  double free_at;
  guint32 stream;
} StreamSlot;

static inline gboolean slot_less(const StreamSlot *a, const StreamSlot *b) {
  return a->free_at != b->free_at ? a->free_at < b->free_at : a->stream < b->stream;
}

/* Restores the heap order from slot i down. */
static void slot_sift_down(StreamSlot *h, guint32 len, guint32 i) {
  StreamSlot it = h[i];
  for (;;) {
    guint32 child = 2 * i + 1;
    if (child >= len) break;
    if (child + 1 < len && slot_less(&h[child + 1], &h[child])) child++;
    if (!slot_less(&h[child], &it)) break;
    h[i] = h[child];
    i = child;
  }
  h[i] = it;
}

static void merge_class(DrPlanCtx *ctx, ChainSpan *spans, guint32 n_spans, guint32 k, guint32 first_stream) {
  qsort(spans, n_spans, sizeof *spans, span_cmp);
  /* A min-heap of streams by the time they free up (all free at first,
   * already in heap order). */
  StreamSlot *heap = g_new(StreamSlot, k);
  for (guint32 s = 0; s < k; s++) heap[s] = (StreamSlot){-1.0, s};
  for (guint32 i = 0; i < n_spans; i++) {
    StreamSlot *best = &heap[0];
    ctx->chain_stream[spans[i].id] = first_stream + best->stream;
    double begin = MAX(best->free_at, spans[i].start);
    best->free_at = MAX(begin + spans[i].work, spans[i].finish);
    slot_sift_down(heap, k, 0);
  }
  g_free(heap);
}

/* The planned path (µs) when chain c runs on stream group[c]: longest path
 * over DAG edges plus stream order, in issue order. `finish` has n
 * entries, `last` one per group id. */
static double planned_path(const DrPlanCtx *ctx, const guint32 *group, double *finish, guint32 *last,
                           guint32 n_groups) {
  double path = 0;
  for (guint32 s = 0; s < n_groups; s++) last[s] = G_MAXUINT32;
  for (guint32 i = 0; i < ctx->n; i++) {
    DrId v = ctx->order[i];
    guint32 s = group[ctx->chain[v]];
    double start = last[s] == G_MAXUINT32 ? 0.0 : finish[last[s]];
    for (guint32 e = DR__PRED_BEGIN(ctx, v); e < DR__PRED_END(ctx, v); e++)
      start = MAX(start, finish[ctx->edges[e].from]);
    finish[v] = start + ctx->dur[v];
    path = MAX(path, finish[v]);
    last[s] = v;
  }
  return path;
}

/* Greedy exact merging for graphs small enough: while a class has more
 * streams than its quota, merge the two of its streams whose merge gives
 * the shortest planned path, evaluated exactly. Fills chain_stream with
 * group ids (chain ids of the group's first chain). FALSE, doing nothing,
 * when that would cost more than MERGE_EXACT_WORK. */
static gboolean merge_exact(DrPlanCtx *ctx, const guint32 *quota) {
  guint32 total = ctx->n_chains, nc = ctx->n_classes;
  double work = 0;
  for (guint p = 0; p < nc; p++) {
    double k = ctx->class_chains[p];
    work += k * k / 2 * (k - MIN(quota[p], ctx->class_chains[p]));
  }
  if (work * (ctx->n + ctx->m + 1) > MERGE_EXACT_WORK) return FALSE;
  guint32 *group = ctx->chain_stream, *trial = g_new(guint32, total), *last = g_new(guint32, total);
  double *finish = g_new(double, MAX(ctx->n, 1));
  guint32 *left = g_new(guint32, nc), *first = g_new(guint32, nc), next_first = 0;
  for (guint32 c = 0; c < total; c++) group[c] = c;
  for (gint64 p = (gint64)nc - 1; p >= 0; p--) {
    first[p] = next_first;
    next_first += ctx->class_chains[p];
    left[p] = ctx->class_chains[p];
  }
  for (;;) {
    double best = G_MAXDOUBLE;
    guint32 best_a = 0, best_b = 0;
    gint64 best_p = -1;
    for (gint64 p = (gint64)nc - 1; p >= 0; p--) {
      if (left[p] <= quota[p]) continue;
      guint32 lo = first[p], hi = first[p] + ctx->class_chains[p];
      for (guint32 a = lo; a < hi; a++) {
        if (group[a] != a) continue;
        for (guint32 b = a + 1; b < hi; b++) {
          if (group[b] != b) continue;
          for (guint32 c = 0; c < total; c++) trial[c] = group[c] == b ? a : group[c];
          double path = planned_path(ctx, trial, finish, last, total);
          if (path < best) best = path, best_a = a, best_b = b, best_p = p;
        }
      }
    }
    if (best_p < 0) break;
    for (guint32 c = 0; c < total; c++)
      if (group[c] == best_b) group[c] = best_a;
    left[best_p]--;
  }
  g_free(left);
  g_free(first);
  g_free(finish);
  g_free(last);
  g_free(trial);
  return TRUE;
}

/* Shares device slot `slot`'s cap among its compute classes (one stream
 * each, then one at a time to the class with the most chains per stream);
 * its communication class keeps its one stream, beside the cap. */
static void share_cap(const DrPlanCtx *ctx, guint32 slot, guint32 cap, guint32 *quota) {
  guint32 lo = slot * DR__CLASS_KINDS, hi = lo + DR__CLASS_KINDS;
  guint32 left = cap;
  for (guint32 p = lo; p < hi; p++) {
    if (ctx->class_chains[p] == 0) continue;
    quota[p] = 1;
    if (p % DR__CLASS_KINDS != DR__CLASS_COMM) left--;
  }
  while (left > 0) {
    gint64 best = -1;
    for (guint32 p = lo; p < hi; p++) {
      if (p % DR__CLASS_KINDS == DR__CLASS_COMM || quota[p] == 0 || quota[p] >= ctx->class_chains[p])
        continue;
      if (best < 0 || (double)ctx->class_chains[p] / quota[p] > (double)ctx->class_chains[best] / quota[best])
        best = p;
    }
    if (best < 0) break;
    quota[best]++;
    left--;
  }
}

/* Issue order visits nodes all over memory: fetches the edge range of
 * the node 16 places after i, and then its edges and chain 8 after. */
static inline void prefetch_ahead(const DrPlanCtx *ctx, guint32 i) {
  if (i + 16 < ctx->n) __builtin_prefetch(&ctx->pred_off[ctx->order[i + 16]]);
  if (i + 8 < ctx->n) {
    DrId w = ctx->order[i + 8];
    if (ctx->edges != NULL) __builtin_prefetch(&ctx->edges[DR__PRED_BEGIN(ctx, w)]); /* NULL: no edges */
    __builtin_prefetch(&ctx->chain[w]);
  }
}

void dr__plan_cap(DrPlanCtx *ctx, DrPlan *plan, const DrPlanOptions *opts) {
  const DrGraph *g = ctx->graph;
  guint32 n = ctx->n, total = ctx->n_chains, nc = ctx->n_classes, n_slots = nc / DR__CLASS_KINDS;
  /* The cap is per device (each GPU has its own queues), over its compute
   * classes: raised to the number of them present, as classes never share
   * a stream. */
  guint32 cap = resolve_cap(g, opts->max_streams, opts->uncapped, &plan->uncapped);
  for (guint32 d = 0; d < n_slots; d++) {
    guint32 classes = 0;
    for (guint32 p = d * DR__CLASS_KINDS; p < (d + 1) * DR__CLASS_KINDS; p++)
      classes += ctx->class_chains[p] > 0 && p % DR__CLASS_KINDS != DR__CLASS_COMM;
    cap = MAX(cap, classes);
  }
  gboolean binds = FALSE;
  for (guint32 d = 0; d < n_slots; d++) {
    guint32 chains = 0;
    for (guint32 p = d * DR__CLASS_KINDS; p < (d + 1) * DR__CLASS_KINDS; p++)
      if (p % DR__CLASS_KINDS != DR__CLASS_COMM) chains += ctx->class_chains[p];
    binds = binds || chains > cap;
  }
  plan->cap = cap;
  plan->cap_note = opts->cap_note;
  plan->cap_binds = binds;

  /* Chain spans in the unconstrained schedule (for the list scheduling). */
  ChainSpan *spans = g_new0(ChainSpan, MAX(total, 1));
  gboolean *seen = g_new0(gboolean, MAX(total, 1));
  /* Each node's earliest finish (start + duration, unlimited streams):
   * a predecessor is one load, not two. */
  double *eft = g_new(double, MAX(n, 1));
  for (guint32 i = 0; i < n; i++) {
    DrId v = ctx->order[i];
    prefetch_ahead(ctx, i);
    double est = 0;
    for (guint32 e = DR__PRED_BEGIN(ctx, v); e < DR__PRED_END(ctx, v); e++)
      est = MAX(est, eft[ctx->edges[e].from]);
    eft[v] = est + ctx->dur[v];
    guint32 c = ctx->chain[v];
    if (!seen[c]) {
      seen[c] = TRUE;
      spans[c] = (ChainSpan){est, 0, 0, i, c};
    }
    spans[c].finish = eft[v];
    spans[c].work += ctx->dur[v];
  }
  g_free(eft);

  ctx->chain_stream = g_new(guint32, MAX(total, 1));
  guint32 *quota = g_new0(guint32, MAX(nc, 1));
  if (!plan->cap_binds) {
    for (guint32 c = 0; c < total; c++) ctx->chain_stream[c] = c;
    for (guint p = 0; p < nc; p++) quota[p] = ctx->class_chains[p];
  } else {
    for (guint32 d = 0; d < n_slots; d++) share_cap(ctx, d, cap, quota);
    if (!merge_exact(ctx, quota)) {
      /* Chains of a class are numbered contiguously (chains.c), high first. */
      guint32 first_chain = 0, first_stream = 0;
      for (gint64 p = (gint64)nc - 1; p >= 0; p--) {
        guint32 k = ctx->class_chains[p];
        if (k == 0) continue;
        merge_class(ctx, spans + first_chain, k, quota[p], first_stream);
        first_chain += k;
        first_stream += quota[p];
      }
    }
  }

  /* Number streams by first issue (chain_stream holds ids below `total`);
   * fill steps and the planned path. */
  guint32 *renum = g_new(guint32, MAX(total, 1));
  guint32 *last = g_new(guint32, MAX(total, 1));
  double *finish = g_new(double, MAX(n, 1));
  for (guint32 s = 0; s < total; s++) renum[s] = G_MAXUINT32;
  g_array_set_size(plan->streams, 0);
  g_array_set_size(plan->steps, 0);
  double planned = 0;
  for (guint32 i = 0; i < n; i++) {
    DrId v = ctx->order[i];
    prefetch_ahead(ctx, i);
    guint32 raw = ctx->chain_stream[ctx->chain[v]];
    if (renum[raw] == G_MAXUINT32) {
      renum[raw] = plan->streams->len;
      DrStream st = dr__plan_class_stream(g, ctx->node_class[v]);
      g_array_append_val(plan->streams, st);
      last[renum[raw]] = G_MAXUINT32;
    }
    guint32 s = renum[raw];
    g_array_index(plan->streams, DrStream, s).n_nodes++;
    DrPlanStep step = {v, s, 0, 0};
    g_array_append_val(plan->steps, step);
    plan->node_stream[v] = s;
    plan->node_step[v] = i;

    double start = last[s] == G_MAXUINT32 ? 0.0 : finish[last[s]];
    for (guint32 e = DR__PRED_BEGIN(ctx, v); e < DR__PRED_END(ctx, v); e++)
      start = MAX(start, finish[ctx->edges[e].from]);
    finish[v] = start + ctx->dur[v];
    planned = MAX(planned, finish[v]);
    last[s] = v;
  }
  ctx->n_streams = plan->streams->len;
  plan->planned_path_us = planned;
  g_free(finish);
  g_free(last);
  g_free(renum);
  g_free(quota);
  g_free(seen);
  g_free(spans);
}
