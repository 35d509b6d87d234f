/* trips.c: trip spans of the CUDA backend's loops (trips.h).
 *
 * Each top-level loop's issue starts with a stamp (its base); each trip the
 * bound keeps is a stamp before its body and one after, so the body's work
 * lies between them. A trip's place: its position among the loop's trips
 * of the iteration, seq; seq < K keeps position seq, a later one position
 * K + (seq - K) mod K (a ring of the latest K), except where the loop's
 * total is known in advance (a repeat: `count` trips), whose trips between
 * the first and the last K are not stamped at all. A trip's time is its
 * loop node's start plus its stamps' distance from the base, which puts
 * every trip inside the node whatever the timing mode (the node's start is
 * when it became ready, before the base).
 *
 * Streams mode (host-driven loops): the stamps are stamp kernels on the
 * loop's stream, and the host notes seq and trip per position as it
 * issues, so the read needs nothing from the device but the stamps; a
 * top-level repeat skips its middle trips. Costs two stamp launches per
 * stamped trip (BENCHMARKS.md §4 measured 4.2 µs per node when node stamps
 * were launches).
 *
 * Graph mode (the ring): the host issues an iteration once, at capture, so
 * the graph carries the stamps and the notes itself: the trip stamp kernel
 * (DrCudaApi.trip_launch, loopctl.cu) opens and closes trips over each
 * loop's device words (a trip counter, the open trip, the current run's
 * trips, seq and trip per position), which a memset node empties before
 * each top-level loop, with the base stamp. condgraph.c puts an open
 * before each copy of a body that is a trip (a guarded copy's open reads
 * the condition, so a copy that does not run opens nothing) and a close
 * after it, one kernel where a close and the next open meet (a repeat's
 * unrolled copies, a while's kernel-guarded ones); a repeat at any depth
 * skips its middle trips of each run (the open after them counts them).
 * Costs one or two tiny kernel nodes per trip on the body's path (to be
 * measured: bench/guard_bench.sh's "+trip stamps" rows) and, for each
 * top-level loop, a memset and a stamp per launch. The same words hold a
 * stamp per body node, which each built-in of a conditional body raises
 * to its end (condgraph.c): the last trip's, read as that trip's body
 * node spans (each from when the body's plan made it ready).
 *
 * Either way one copy of the words per timed iteration, after iter_end
 * (timing.c). This file does not decide what a trip runs (loops.c,
 * condgraph.c). */
#include "backends/cuda/trips.h"

#include <string.h>

#include "backends/cuda/launch.h"
#include "backends/cuda/loops.h"

#define K DR_TRIP_SPANS_KEEP

/* The position of a loop's trip `s` (its seq in the iteration) among its
 * 2K stamp pairs: s itself for the first K, then a ring of the latest K. */
static guint32 slot_of(guint64 s) { return (guint32)(s < K ? s : K + (s - K) % K); }

/* The index in the words of loop j's stamp pair at position `pos` (its
 * start; the end follows). */
static gsize pair_index(guint j, guint32 pos) { return (gsize)j * 4 * K + 2 * (gsize)pos; }

/* Whether the last trip that `ts` saw has its stamp pair, at *pos. */
static gboolean last_slot(const DrCudaTripSlot *ts, guint32 *pos) {
  if (ts->seen == 0) return FALSE;
  *pos = slot_of(ts->seen - 1);
  return ts->seq[*pos] == ts->seen - 1;
}
/* The ring's words per loop: ctl[4], seq[2K], trip[2K] (cuda_api.h). */
#define RING_WORDS (4 + 4 * (gsize)K)

/* Every loop of plan `p`'s graph and under it, under its loop node `top`
 * (index top_index), `depth` deep, with its body's plan. */
static void collect(DrCudaTrips *tr, const DrPlan *p, DrId top, guint32 top_index, guint32 depth) {
  const DrGraph *g = p->graph;
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    DrId t = depth == 0 ? l->node : top;
    guint32 ti = depth == 0 ? i : top_index;
    const DrPlan *body = g_ptr_array_index(p->bodies, 2 * i),
                 *other = g_ptr_array_index(p->bodies, 2 * i + 1);
    DrCudaTripLoop tl = {l, t, ti, depth, body, 0, 0, 1, DR_NONE};
    if (l->kind == DR_LOOP_WHILE) {
      /* condgraph.c's choice, for where its copies put the writer */
      DrCudaWhileChoice ch;
      dr__cuda_while_choice(l, body, &ch);
      tl.unroll = ch.unroll;
      tl.writer = ch.writer;
    }
    g_array_append_val(tr->loops, tl);
    g_hash_table_insert(tr->index, (gpointer)l, GUINT_TO_POINTER(tr->loops->len));
    g_hash_table_insert(tr->bodies, (gpointer)l->body, GUINT_TO_POINTER(tr->loops->len));
    collect(tr, body, t, ti, depth + 1);
    if (other) collect(tr, other, t, ti, depth + 1);
  }
}

/* Graph mode stamps trips inside its conditional bodies only when asked
 * (DAGRUN_TRIP_STAMPS=1): a stamp kernel per trip costs the device about
 * 1.5 µs a trip on the H200, 1.47x a 3.3 µs kernel-guarded trip
 * (BENCHMARKS.md §16), too much for a default. Without it a loop's trips
 * are counted (the device's counter), not spanned. */
static gboolean graph_trip_stamps(void) {
  const char *v = g_getenv("DAGRUN_TRIP_STAMPS");
  return v != NULL && strcmp(v, "1") == 0;
}

gboolean dr__cuda_trips_setup(DrCudaTrips *tr, DrCudaTiming *t, const DrPlan *plan, guint32 n_devices,
                              gboolean graph_mode, cudaStream_t origin, GError **error) {
  const DrGraph *g = plan->graph;
  if (t->mode == DR_TIMING_OFF || dr_graph_n_loops(g) == 0 || n_devices > 1 ||
      dr_cuda_api()->stamp_launch == NULL)
    return TRUE;
  tr->loops = g_array_new(FALSE, FALSE, sizeof(DrCudaTripLoop));
  tr->index = g_hash_table_new(NULL, NULL);
  tr->bodies = g_hash_table_new(NULL, NULL);
  collect(tr, plan, DR_NONE, 0, 0);
  tr->n_top = dr_graph_n_loops(g);
  tr->depth = t->depth;
  tr->slots = g_new0(DrCudaTripSlot, (gsize)tr->depth * tr->loops->len);
  tr->ring_slot = g_new0(gboolean, tr->depth);
  tr->words = (gsize)tr->loops->len * 4 * K + tr->n_top;
  if (graph_mode && dr_cuda_api()->trip_launch != NULL && graph_trip_stamps()) {
    /* Per loop its ring's words and its body nodes' stamps, in the loops'
     * order (a top-level loop's and its nested loops' words in a row). */
    tr->ring_at = tr->words;
    for (guint j = 0; j < tr->loops->len; j++) {
      DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
      tl->ring = tr->words;
      tl->node_at = tl->ring + RING_WORDS;
      tr->words = tl->node_at + dr_graph_n_nodes(tl->loop->body);
    }
  }
  gsize bytes = tr->words * sizeof(unsigned long long);
  DrCudaSite site = DR_SITE_SETUP("the loops' trip stamps");
  /* Zeroed, so that the copy never reads words no trip wrote. */
  if (!DR_CUDA(site, cudaMalloc, (void **)&tr->dev, bytes) ||
      !DR_CUDA(site, cudaMemsetAsync, tr->dev, 0, bytes, origin) ||
      !DR_CUDA(site, cudaStreamSynchronize, origin) ||
      !DR_CUDA(site, cudaMallocHost, (void **)&tr->host, bytes * tr->depth))
    return FALSE;
  tr->on = TRUE;
  t->extra_dev = tr->dev;
  t->extra_host = tr->host;
  t->extra_bytes = bytes;
  t->extra_on = &tr->stamping;
  return TRUE;
}

void dr__cuda_trips_begin(DrCudaTrips *tr, guint32 k, gboolean stamp, gboolean ring) {
  tr->stamping = tr->on && stamp;
  if (!tr->stamping) return;
  tr->slot = k;
  tr->ring_slot[k] = ring;
  if (ring) return;
  /* An earlier iteration's notes must not pass for this one's. */
  for (guint j = 0; j < tr->loops->len; j++) {
    DrCudaTripSlot *ts = &tr->slots[(gsize)k * tr->loops->len + j];
    ts->seen = 0;
    memset(ts->seq, 0xff, sizeof ts->seq);
  }
}

/* The first word of loop j's ring (DrCudaApi.trip_launch's ctl). */
static gsize ring_of(const DrCudaTrips *tr, guint j) {
  return g_array_index(tr->loops, DrCudaTripLoop, j).ring;
}

/* The entry of `loop` in tr->loops. */
static guint loop_index(const DrCudaTrips *tr, const DrLoop *loop) {
  return GPOINTER_TO_UINT(g_hash_table_lookup(tr->index, loop)) - 1;
}

gboolean dr__cuda_trips_ring_on(const DrCudaTrips *tr) { return tr != NULL && tr->on && tr->ring_at > 0; }

gboolean dr__cuda_trips_ring_stamp(const DrCudaTrips *tr, const DrLoop *loop, unsigned flags,
                                   const gint32 *guard, gint64 trip, guint64 skip, cudaStream_t st,
                                   GError **error) {
  if (!dr__cuda_trips_ring_on(tr)) return TRUE;
  guint j = loop_index(tr, loop);
  int rc = dr_cuda_api()->trip_launch((guint64 *)&tr->dev[(gsize)j * 4 * K],
                                      (guint64 *)&tr->dev[ring_of(tr, j)], guard, flags, trip, skip, K, st);
  return dr__cuda_check((cudaError_t)rc, "trip stamp kernel launch", DR_SITE_NODE(loop->id, -1), error);
}

gboolean dr__cuda_trips_ring_run(const DrCudaTrips *tr, const DrLoop *loop, cudaStream_t st, GError **error) {
  if (!dr__cuda_trips_ring_on(tr)) return TRUE;
  DrCudaSite site = DR_SITE_NODE(loop->id, -1);
  return DR_CUDA(site, cudaMemsetAsync, &tr->dev[ring_of(tr, loop_index(tr, loop)) + 2], 0, sizeof(guint64),
                 st);
}

/* Whether trip `t` of a run of repeat `loop` is stamped in graph mode. */
static gboolean repeat_stamped(const DrLoop *loop, guint64 t) {
  return loop->count <= 2 * K || t < K || t >= loop->count - K;
}

unsigned dr__cuda_trips_repeat_flags(const DrLoop *loop, guint64 trip, gboolean after, guint64 *skip) {
  *skip = 0;
  if (!repeat_stamped(loop, trip)) return 0;
  if (after) return trip + 1 == loop->count || !repeat_stamped(loop, trip + 1) ? DR_TRIP_CLOSE : 0;
  if (loop->count > 2 * K && trip == loop->count - K) *skip = loop->count - 2 * K;
  return DR_TRIP_OPEN | (trip > 0 && repeat_stamped(loop, trip - 1) ? DR_TRIP_CLOSE : 0);
}

unsigned long long *dr__cuda_trips_node_stamp(const DrCudaTrips *tr, const DrGraph *body, DrId v) {
  if (!dr__cuda_trips_ring_on(tr)) return NULL;
  guint j = GPOINTER_TO_UINT(g_hash_table_lookup(tr->bodies, body));
  if (j == 0) return NULL; /* an else body: no trip */
  return &tr->dev[g_array_index(tr->loops, DrCudaTripLoop, j - 1).node_at + v];
}

static gboolean stamp(unsigned long long *word, cudaStream_t st, const DrLoop *loop, GError **error) {
  return dr__cuda_check((cudaError_t)dr_cuda_api()->stamp_launch(word, st), "trip stamp kernel launch",
                        DR_SITE_NODE(loop->id, -1), error);
}

gboolean dr__cuda_trips_loop(DrCudaTrips *tr, const DrLoop *loop, gboolean ring, cudaStream_t st,
                             GError **error) {
  if (ring ? !dr__cuda_trips_ring_on(tr) : !tr->stamping) return TRUE;
  guint j = loop_index(tr, loop);
  const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
  if (ring) {
    /* This loop's words and its nested loops' (collect keeps them next to
     * it), emptied at each run of the graph. */
    guint n = 1;
    while (j + n < tr->loops->len && g_array_index(tr->loops, DrCudaTripLoop, j + n).depth > 0) n++;
    gsize end = j + n < tr->loops->len ? ring_of(tr, j + n) : tr->words;
    DrCudaSite site = DR_SITE_NODE(loop->id, -1);
    if (!DR_CUDA(site, cudaMemsetAsync, &tr->dev[tl->ring], 0, (end - tl->ring) * sizeof(guint64), st))
      return FALSE;
  }
  return stamp(&tr->dev[(gsize)tr->loops->len * 4 * K + tl->top_index], st, loop, error);
}

gboolean dr__cuda_trips_trip_begin(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, gboolean ring,
                                   cudaStream_t st, gint32 *pos, GError **error) {
  *pos = -1;
  if (ring) {
    /* A repeat's (only repeats are captured unrolled by the host). */
    guint64 skip = 0;
    unsigned flags = dr__cuda_trips_repeat_flags(loop, trip, FALSE, &skip);
    if (!dr__cuda_trips_ring_on(tr) || flags == 0) return TRUE;
    *pos = 0;
    return dr__cuda_trips_ring_stamp(tr, loop, flags, NULL, (gint64)trip, skip, st, error);
  }
  if (!tr->stamping) return TRUE;
  guint j = loop_index(tr, loop);
  const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
  DrCudaTripSlot *ts = &tr->slots[(gsize)tr->slot * tr->loops->len + j];
  guint64 s = ts->seen++;
  gboolean known = tl->depth == 0 && loop->kind == DR_LOOP_REPEAT;
  if (s >= K && known && loop->count >= K && s < loop->count - K) return TRUE;
  *pos = (gint32)slot_of(s);
  ts->seq[*pos] = s;
  ts->trip[*pos] = trip;
  return stamp(&tr->dev[pair_index(j, (guint32)*pos)], st, loop, error);
}

gboolean dr__cuda_trips_trip_end(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, gint32 pos, gboolean ring,
                                 cudaStream_t st, GError **error) {
  if (pos < 0) return TRUE;
  guint64 skip = 0;
  if (ring && dr__cuda_trips_repeat_flags(loop, trip, TRUE, &skip) == 0) return TRUE;
  if (ring) return dr__cuda_trips_ring_stamp(tr, loop, DR_TRIP_CLOSE, NULL, -1, 0, st, error);
  return stamp(&tr->dev[pair_index(loop_index(tr, loop), (guint32)pos) + 1], st, loop, error);
}

/* The ring's notes of loop j in the words `w` of a graph launch, as the
 * host keeps them for streams mode. */
static void ring_notes(const DrCudaTrips *tr, const unsigned long long *w, guint j, DrCudaTripSlot *ts) {
  const unsigned long long *ctl = w + ring_of(tr, j);
  ts->seen = ctl[0];
  for (guint p = 0; p < 2 * K; p++) {
    ts->seq[p] = ctl[4 + p] ? ctl[4 + p] - 1 : G_MAXUINT64;
    ts->trip[p] = ctl[4 + 2 * K + p];
  }
}

/* The end of loop j's last trip in the words `w` of a graph launch (0:
 * none). */
static unsigned long long last_close(const DrCudaTrips *tr, const unsigned long long *w, guint j) {
  DrCudaTripSlot ts;
  ring_notes(tr, w, j, &ts);
  guint32 pos = 0;
  return last_slot(&ts, &pos) ? w[pair_index(j, pos) + 1] : 0;
}

/* The body nodes of `tl`'s last trip, which opened at `open`, from their
 * stamps in `w` (a built-in raises its word to its end in each copy that
 * runs, so the word holds the last trip's; 0: it has none): each timed
 * node from when it became ready in the body's plan (the trip's start,
 * the end of its stream predecessor and of the nodes it waits on) to its
 * stamp, placed as trips are. A nested loop's end is its last trip's (when
 * in this trip); any other node without a stamp (memset, copy, user
 * kernel, gemm) has no span and neither has a node that waits for it
 * (its start is not known). In a kernel-guarded while's copies 2..U the
 * node that sets the condition starts after every other node. */
static void body_spans(const DrCudaTrips *tr, const DrCudaTripLoop *tl, const unsigned long long *w,
                       unsigned long long open, guint64 trip, double at, unsigned long long b,
                       DrTripLog *log) {
  const DrPlan *bp = tl->plan;
  const DrGraph *g = bp->graph;
  guint32 n = dr_graph_n_nodes(g), n_streams = MAX(bp->streams->len, 1);
  g_autofree unsigned long long *end = g_new0(unsigned long long, MAX(n, 1)); /* 0: not known */
  g_autofree unsigned long long *last = g_new(unsigned long long, n_streams);
  for (guint32 k = 0; k < n_streams; k++) last[k] = open;
  /* A kernel-guarded while's copies 2..U (trip % U > 0 of its run) build
   * the node that sets the condition after every other node. */
  DrId deferred = tl->writer != DR_NONE && trip % tl->unroll != 0 ? tl->writer : DR_NONE;
  for (guint32 i = 0; i < bp->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(bp, i);
    DrId v = step->node;
    const DrNode *node = dr_graph_node(g, v);
    unsigned long long ready = last[step->stream];
    for (guint32 x = 0; x < step->wait_count && ready; x++) {
      unsigned long long e = end[dr_plan_wait(bp, step->wait_first + x)];
      ready = e ? MAX(ready, e) : 0;
    }
    unsigned long long stamp = w[tl->node_at + v];
    if (v == deferred) {
      /* its place in the plan a noop (condgraph.c's build_body) */
      end[v] = ready;
      last[step->stream] = ready;
      continue;
    }
    if (node->loop) {
      guint j = GPOINTER_TO_UINT(g_hash_table_lookup(tr->index, dr_graph_node_loop(g, v))) - 1;
      unsigned long long close = last_close(tr, w, j);
      stamp = close >= open ? close : 0;
    } else if (node->op == DR_OP_NOOP) {
      stamp = ready; /* no work: ends when ready */
    }
    end[v] = ready && stamp >= ready ? stamp : 0;
    last[step->stream] = end[v];
    if (end[v] == 0 || node->loop || node->op == DR_OP_NOOP) continue;
    dr_trip_log_body(log, tl->loop->id, tl->top, node->id, trip, at + (double)(gint64)(ready - b) / 1000.0,
                     at + (double)(gint64)(stamp - b) / 1000.0);
  }
  if (deferred == DR_NONE) return;
  /* after every other node of the copy */
  unsigned long long ready = open, stamp = w[tl->node_at + deferred];
  for (DrId v = 0; v < n && ready; v++)
    if (v != deferred) ready = end[v] ? MAX(ready, end[v]) : 0;
  if (ready && stamp >= ready)
    dr_trip_log_body(log, tl->loop->id, tl->top, dr_graph_node(g, deferred)->id, trip,
                     at + (double)(gint64)(ready - b) / 1000.0, at + (double)(gint64)(stamp - b) / 1000.0);
}

void dr__cuda_trips_read(const DrCudaTrips *tr, guint32 k, DrIterTiming *timing) {
  if (!tr->on || timing == NULL || timing->trips == NULL) return;
  gboolean ring = tr->ring_slot[k];
  if (ring && tr->ring_at == 0) return;
  const unsigned long long *w = tr->host + (gsize)k * tr->words;
  const unsigned long long *base = w + (gsize)tr->loops->len * 4 * K;
  for (guint j = 0; j < tr->loops->len; j++) {
    const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
    DrCudaTripSlot notes;
    const DrCudaTripSlot *ts = &tr->slots[(gsize)k * tr->loops->len + j];
    if (ring) ring_notes(tr, w, j, &notes), ts = &notes;
    double at = timing->start_us[tl->top];
    unsigned long long b = base[tl->top_index];
    /* The trips in seq order: the first K, then the ring's latest; each
     * seq without a stamp pair is counted (skip). */
    guint64 next = 0, ring_from = MAX(K, ts->seen > K ? ts->seen - K : 0);
    for (guint64 s = 0; s < ts->seen; s = s + 1 == K ? ring_from : s + 1) {
      guint32 pos = slot_of(s);
      if (ts->seq[pos] != s) continue;
      if (s > next) dr_trip_log_skip(timing->trips, tl->loop->id, tl->top, tl->depth, s - next);
      const unsigned long long *pair = w + pair_index(j, pos);
      dr_trip_log_add(timing->trips, tl->loop->id, tl->top, tl->depth, ts->trip[pos],
                      at + (double)(gint64)(pair[0] - b) / 1000.0,
                      at + (double)(gint64)(pair[1] - b) / 1000.0);
      next = s + 1;
    }
    if (ts->seen > next) dr_trip_log_skip(timing->trips, tl->loop->id, tl->top, tl->depth, ts->seen - next);
    guint32 pos = 0;
    if (ring && last_slot(ts, &pos))
      body_spans(tr, tl, w, w[pair_index(j, pos)], ts->trip[pos], at, b, timing->trips);
  }
}

void dr__cuda_trips_close(DrCudaTrips *tr) {
  const DrCudaApi *api = dr_cuda_api();
  if (tr->dev != NULL) (void)api->cudaFree(tr->dev);
  if (tr->host != NULL) (void)api->cudaFreeHost(tr->host);
  g_clear_pointer(&tr->index, g_hash_table_unref);
  g_clear_pointer(&tr->bodies, g_hash_table_unref);
  if (tr->loops != NULL) g_array_unref(tr->loops);
  g_free(tr->slots);
  g_free(tr->ring_slot);
  memset(tr, 0, sizeof *tr);
}
