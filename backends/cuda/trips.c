/* trips.c: trip spans of the CUDA backend's host-driven loops (trips.h).
 *
 * Each top-level loop's issue starts with a stamp (its base); each trip the
 * bound keeps is a stamp before its body and one after, on the loop's
 * stream, so the body's work lies between them. A trip's place: its
 * position among the loop's trips of the iteration, seq; seq < K keeps
 * position seq, a later one position K + (seq - K) mod K (a ring of the
 * latest K), except where the loop's total is known in advance (a
 * top-level repeat: `count` trips), whose trips between the first and the
 * last K are not stamped at all. The host notes seq and trip per position
 * as it issues, so the read needs nothing from the device but the stamps;
 * a trip's time is its loop node's start plus its stamps' distance from
 * the base, which puts every trip inside the node whatever the timing
 * mode (the node's start is when it became ready, before the base).
 * Costs two stamp launches per stamped trip (BENCHMARKS.md §4 measured
 * 4.2 µs per node when node stamps were launches) and one copy of the
 * words per timed iteration, after iter_end (timing.c). This file does
 * not decide what a trip runs (loops.c). */
#include "backends/cuda/trips.h"

#include <string.h>

#include "backends/cuda/launch.h"

#define K DR_TRIP_SPANS_KEEP

/* Every loop under `g`'s loop node `top` (index top_index), `depth` deep. */
static void collect(DrCudaTrips *tr, const DrGraph *g, DrId top, guint32 top_index, guint32 depth) {
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    DrId t = depth == 0 ? l->node : top;
    guint32 ti = depth == 0 ? i : top_index;
    DrCudaTripLoop tl = {l, t, ti, depth};
    g_array_append_val(tr->loops, tl);
    g_hash_table_insert(tr->index, (gpointer)l, GUINT_TO_POINTER(tr->loops->len));
    collect(tr, l->body, t, ti, depth + 1);
    if (l->else_body) collect(tr, l->else_body, t, ti, depth + 1);
  }
}

gboolean dr__cuda_trips_setup(DrCudaTrips *tr, DrCudaTiming *t, const DrPlan *plan, guint32 n_devices,
                              cudaStream_t origin, GError **error) {
  const DrGraph *g = plan->graph;
  if (t->mode == DR_TIMING_OFF || dr_graph_n_loops(g) == 0 || n_devices > 1 ||
      dr_cuda_api()->stamp_launch == NULL)
    return TRUE;
  tr->loops = g_array_new(FALSE, FALSE, sizeof(DrCudaTripLoop));
  tr->index = g_hash_table_new(NULL, NULL);
  collect(tr, g, DR_NONE, 0, 0);
  tr->n_top = dr_graph_n_loops(g);
  tr->depth = t->depth;
  tr->slots = g_new0(DrCudaTripSlot, (gsize)tr->depth * tr->loops->len);
  tr->words = (gsize)tr->loops->len * 4 * K + tr->n_top;
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

void dr__cuda_trips_begin(DrCudaTrips *tr, guint32 k, gboolean stamp) {
  tr->stamping = tr->on && stamp;
  if (!tr->stamping) return;
  tr->slot = k;
  /* An earlier iteration's notes must not pass for this one's. */
  for (guint j = 0; j < tr->loops->len; j++) {
    DrCudaTripSlot *ts = &tr->slots[(gsize)k * tr->loops->len + j];
    ts->seen = 0;
    memset(ts->seq, 0xff, sizeof ts->seq);
  }
}

static gboolean stamp(unsigned long long *word, cudaStream_t st, const DrLoop *loop, GError **error) {
  return dr__cuda_check((cudaError_t)dr_cuda_api()->stamp_launch(word, st), "trip stamp kernel launch",
                        DR_SITE_NODE(loop->id, -1), error);
}

gboolean dr__cuda_trips_loop(DrCudaTrips *tr, const DrLoop *loop, cudaStream_t st, GError **error) {
  if (!tr->stamping) return TRUE;
  guint j = GPOINTER_TO_UINT(g_hash_table_lookup(tr->index, loop)) - 1;
  const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
  return stamp(&tr->dev[(gsize)tr->loops->len * 4 * K + tl->top_index], st, loop, error);
}

gboolean dr__cuda_trips_trip_begin(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, cudaStream_t st,
                                   gint32 *pos, GError **error) {
  *pos = -1;
  if (!tr->stamping) return TRUE;
  guint j = GPOINTER_TO_UINT(g_hash_table_lookup(tr->index, loop)) - 1;
  const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
  DrCudaTripSlot *ts = &tr->slots[(gsize)tr->slot * tr->loops->len + j];
  guint64 s = ts->seen++;
  gboolean known = tl->depth == 0 && loop->kind == DR_LOOP_REPEAT;
  if (s >= K && known && loop->count >= K && s < loop->count - K) return TRUE;
  *pos = (gint32)(s < K ? s : K + (s - K) % K);
  ts->seq[*pos] = s;
  ts->trip[*pos] = trip;
  return stamp(&tr->dev[(gsize)j * 4 * K + 2 * (gsize)*pos], st, loop, error);
}

gboolean dr__cuda_trips_trip_end(DrCudaTrips *tr, const DrLoop *loop, gint32 pos, cudaStream_t st,
                                 GError **error) {
  if (pos < 0) return TRUE;
  guint j = GPOINTER_TO_UINT(g_hash_table_lookup(tr->index, loop)) - 1;
  return stamp(&tr->dev[(gsize)j * 4 * K + 2 * (gsize)pos + 1], st, loop, error);
}

void dr__cuda_trips_read(const DrCudaTrips *tr, guint32 k, DrIterTiming *timing) {
  if (!tr->on || timing == NULL || timing->trips == NULL) return;
  const unsigned long long *w = tr->host + (gsize)k * tr->words;
  const unsigned long long *base = w + (gsize)tr->loops->len * 4 * K;
  for (guint j = 0; j < tr->loops->len; j++) {
    const DrCudaTripLoop *tl = &g_array_index(tr->loops, DrCudaTripLoop, j);
    const DrCudaTripSlot *ts = &tr->slots[(gsize)k * tr->loops->len + j];
    double at = timing->start_us[tl->top];
    unsigned long long b = base[tl->top_index];
    /* The trips in seq order: the first K, then the ring's latest; each
     * seq without a stamp pair is counted (skip). */
    guint64 next = 0, ring = MAX(K, ts->seen > K ? ts->seen - K : 0);
    for (guint64 s = 0; s < ts->seen; s = s + 1 == K ? ring : s + 1) {
      guint32 pos = (guint32)(s < K ? s : K + (s - K) % K);
      if (ts->seq[pos] != s) continue;
      if (s > next) dr_trip_log_skip(timing->trips, tl->loop->id, tl->top, tl->depth, s - next);
      const unsigned long long *pair = w + (gsize)j * 4 * K + 2 * (gsize)pos;
      dr_trip_log_add(timing->trips, tl->loop->id, tl->top, tl->depth, ts->trip[pos],
                      at + (double)(gint64)(pair[0] - b) / 1000.0,
                      at + (double)(gint64)(pair[1] - b) / 1000.0);
      next = s + 1;
    }
    if (ts->seen > next) dr_trip_log_skip(timing->trips, tl->loop->id, tl->top, tl->depth, ts->seen - next);
  }
}

void dr__cuda_trips_close(DrCudaTrips *tr) {
  const DrCudaApi *api = dr_cuda_api();
  if (tr->dev != NULL) (void)api->cudaFree(tr->dev);
  if (tr->host != NULL) (void)api->cudaFreeHost(tr->host);
  g_clear_pointer(&tr->index, g_hash_table_unref);
  if (tr->loops != NULL) g_array_unref(tr->loops);
  g_free(tr->slots);
  memset(tr, 0, sizeof *tr);
}
