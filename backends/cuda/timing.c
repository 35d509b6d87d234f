/* timing.c: the CUDA backend's timing: the makespan of each iteration
 * (two events on origin around it, one pair per slot) and per-node times
 * (run.h, DR_TIMING_LIST).
 *
 * With stamps a stamp kernel writes the iteration's start on origin before
 * the fork and each node's end on its stream right after it, and the
 * stamp array is copied back once after iter_end; a node's start is when
 * it became ready. Eagerly, built-ins that stamp themselves need no stamp
 * launch (launch.c binds their slot). In graph mode each stamp hangs off
 * its node on a side branch (a side stream per plan stream while
 * capturing) instead of sitting between the node and its successor, so
 * stamping adds no kernel to the graph's critical path;
 * DAGRUN_STAMPS_INLINE=1 keeps them inline, to measure the two placements
 * against each other. With events, two timing events around each node are
 * read against iter_start. This file does not decide when a node runs
 * (issue.c). */
#include <math.h>
#include <string.h>

#include "backends/cuda/launch.h"
#include "backends/cuda/timing.h"

/* --timing=auto: stamps when the mode says so (graph mode: a stamp node
 * costs ~0.1 µs there). Eagerly, a self-stamping built-in costs no extra
 * call while events cost ~1.7 µs of host time per node and a stamp launch
 * ~4 µs per other node (BENCHMARKS.md §4): stamps unless more than 2 nodes
 * in 5 need a stamp launch. */
static DrTimingMode auto_timing(const DrGraph *g, gboolean stamps_by_default) {
  if (stamps_by_default) return DR_TIMING_STAMPS;
  guint32 n = dr_graph_n_nodes(g), launches = 0;
  for (DrId i = 0; i < n; i++) launches += !dr__cuda_self_stamping(g, i);
  return (guint64)launches * 5 <= (guint64)n * 2 ? DR_TIMING_STAMPS : DR_TIMING_EVENTS;
}

/* Decides the timing in effect and sizes its arrays (no CUDA call). */
static void choose(DrCudaTiming *t, DrTimingMode asked, const DrCudaTimingAsk *ask) {
  t->mode = asked == DR_TIMING_AUTO ? auto_timing(t->plan->graph, ask->stamps_by_default) : asked;
  if (t->mode == DR_TIMING_STAMPS && dr_cuda_api()->stamp_launch == NULL) t->mode = DR_TIMING_EVENTS;
  /* Several devices: each has its own %globaltimer and stamp array would
   * live on one of them; events belong to a device and read per device. */
  if (t->mode == DR_TIMING_STAMPS && t->streams->n_devices > 1) t->mode = DR_TIMING_EVENTS;
  t->depth = ask->depth;
  if (t->mode == DR_TIMING_EVENTS) {
    t->t_start = g_new0(cudaEvent_t, MAX(t->depth * t->n_nodes, 1));
    t->t_end = g_new0(cudaEvent_t, MAX(t->depth * t->n_nodes, 1));
  }
  if (t->mode == DR_TIMING_STAMPS) {
    const char *inline_env = g_getenv("DAGRUN_STAMPS_INLINE");
    t->stamp_aside = ask->stamps_aside && !(inline_env && strcmp(inline_env, "1") == 0);
  }
  if (!t->stamp_aside) return;
  t->stamp_streams = g_new0(cudaStream_t, MAX(t->n_streams, 1));
  t->stamp_join = g_new0(cudaEvent_t, MAX(t->n_streams, 1));
  t->stamp_ready = g_new0(cudaEvent_t, MAX(t->n_nodes, 1));
  /* A side stream that stamps nothing is never pulled into a capture: it
   * has nothing to join. */
  t->side_used = g_new0(gboolean, MAX(t->n_streams, 1));
  for (guint32 i = 0; i < t->plan->steps->len; i++) t->side_used[dr_plan_step(t->plan, i)->stream] = TRUE;
}

/* Each slot's iteration events (blamed on the device), and the per-node
 * timing events. */
static gboolean open_events(DrCudaTiming *t, int device, GError **error) {
  g_autofree char *dev = g_strdup_printf("device %d", device);
  DrCudaSite site = DR_SITE_SETUP(dev);
  for (guint32 k = 0; k < t->depth; k++)
    if (!DR_CUDA(site, cudaEventCreateWithFlags, &t->iter_start[k], cudaEventDefault) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &t->iter_end[k], cudaEventDefault) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &t->iter_done[k], cudaEventDisableTiming))
      return FALSE;
  const DrCudaStreams *s = t->streams;
  for (guint32 d = 1; t->mode == DR_TIMING_EVENTS && d < s->n_devices; d++) {
    g_autofree char *what = g_strdup_printf("device %d", s->devices[d].ordinal);
    if (!dr__cuda_streams_use_device(s, d, error)) return FALSE;
    for (guint32 k = 0; k < t->depth; k++)
      if (!DR_CUDA(DR_SITE_SETUP(what), cudaEventCreateWithFlags, &t->dev_start[k][d], cudaEventDefault))
        return FALSE;
  }
  for (DrId i = 0; t->mode == DR_TIMING_EVENTS && i < t->n_nodes; i++) {
    DrCudaSite ns = dr__cuda_node_site(t->plan, i);
    if (!dr__cuda_streams_use(s, t->plan->node_stream[i], error)) return FALSE;
    for (guint32 k = 0; k < t->depth; k++) {
      gsize e = (gsize)k * t->n_nodes + i;
      if (!DR_CUDA(ns, cudaEventCreateWithFlags, &t->t_start[e], cudaEventDefault) ||
          !DR_CUDA(ns, cudaEventCreateWithFlags, &t->t_end[e], cudaEventDefault))
        return FALSE;
    }
  }
  return dr__cuda_streams_use_device(s, 0, error);
}

/* The stamp array, zeroed on origin, and its pinned copies. */
static gboolean open_stamps(DrCudaTiming *t, cudaStream_t origin, GError **error) {
  gsize bytes = sizeof(unsigned long long) * (t->n_nodes + 1);
  DrCudaSite ts = DR_SITE_SETUP("timing stamps");
  /* Zeroed: self-stamping kernels raise their slot (atomicMax), which reads
   * it first (compute-sanitizer's initcheck flagged the reads). */
  return DR_CUDA(ts, cudaMalloc, (void **)&t->stamps, bytes) &&
         DR_CUDA(ts, cudaMemsetAsync, t->stamps, 0, bytes, origin) &&
         DR_CUDA(ts, cudaStreamSynchronize, origin) &&
         DR_CUDA(ts, cudaMallocHost, (void **)&t->stamps_host, bytes * t->depth);
}

/* The side streams (each with its plan stream's priority), their join
 * events and every node's stamp-ready event. */
static gboolean open_aside(DrCudaTiming *t, const DrCudaStreams *s, GError **error) {
  for (guint32 k = 0; k < t->n_streams; k++) {
    g_autofree char *what = g_strdup_printf("the timing stamps' side stream of stream %u", k);
    DrCudaSite ss = DR_SITE_SETUP(what);
    if (!DR_CUDA(ss, cudaStreamCreateWithPriority, &t->stamp_streams[k], cudaStreamNonBlocking,
                 dr__cuda_streams_priority(s, k)) ||
        !DR_CUDA(ss, cudaEventCreateWithFlags, &t->stamp_join[k], cudaEventDisableTiming))
      return FALSE;
  }
  for (DrId i = 0; i < t->n_nodes; i++)
    if (!DR_CUDA(dr__cuda_node_site(t->plan, i), cudaEventCreateWithFlags, &t->stamp_ready[i],
                 cudaEventDisableTiming))
      return FALSE;
  return TRUE;
}

gboolean dr__cuda_timing_open(DrCudaTiming *t, const DrPlan *plan, const DrCudaStreams *s, DrTimingMode asked,
                              const DrCudaTimingAsk *ask, GError **error) {
  t->plan = plan;
  t->streams = s;
  t->n_nodes = dr_graph_n_nodes(plan->graph);
  t->n_streams = dr_plan_n_streams(plan);
  choose(t, asked, ask);
  return open_events(t, s->devices[0].ordinal, error) &&
         (t->mode != DR_TIMING_STAMPS || open_stamps(t, s->origin, error)) &&
         (!t->stamp_aside || open_aside(t, s, error));
}

void dr__cuda_timing_inline(DrCudaTiming *t) { t->stamp_aside = FALSE; }

static void destroy_events(cudaEvent_t *events, guint32 n) {
  if (events == NULL) return;
  for (guint32 i = 0; i < n; i++)
    if (events[i]) (void)dr_cuda_api()->cudaEventDestroy(events[i]);
  g_free(events);
}

void dr__cuda_timing_close(DrCudaTiming *t) {
  const DrCudaApi *api = dr_cuda_api();
  destroy_events(t->t_start, t->depth * t->n_nodes);
  destroy_events(t->t_end, t->depth * t->n_nodes);
  if (t->stamps) (void)api->cudaFree(t->stamps);
  if (t->stamps_host) (void)api->cudaFreeHost(t->stamps_host);
  destroy_events(t->stamp_ready, t->n_nodes);
  destroy_events(t->stamp_join, t->n_streams);
  if (t->stamp_streams)
    for (guint32 k = 0; k < t->n_streams; k++)
      if (t->stamp_streams[k]) (void)api->cudaStreamDestroy(t->stamp_streams[k]);
  g_free(t->stamp_streams);
  g_free(t->side_used);
  for (guint32 k = 0; k < DR_CUDA_MAX_IN_FLIGHT; k++) {
    if (t->iter_start[k]) (void)api->cudaEventDestroy(t->iter_start[k]);
    if (t->iter_end[k]) (void)api->cudaEventDestroy(t->iter_end[k]);
    if (t->iter_done[k]) (void)api->cudaEventDestroy(t->iter_done[k]);
    for (guint32 d = 1; d < DR_MAX_DEVICES; d++)
      if (t->dev_start[k][d]) (void)api->cudaEventDestroy(t->dev_start[k][d]);
  }
  memset(t, 0, sizeof *t);
}

gboolean dr__cuda_timing_begin(const DrCudaTiming *t, guint32 k, cudaStream_t origin, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration");
  if (!DR_CUDA(site, cudaEventRecord, t->iter_start[k], origin)) return FALSE;
  const DrCudaStreams *s = t->streams;
  if (t->mode != DR_TIMING_EVENTS || s->n_devices <= 1) return TRUE;
  /* Timing edge: the iteration's start -> each other device's start, the
   * reference its nodes' events are read against. Nothing waits on it:
   * the device's streams start after the fork, itself after iter_start. */
  for (guint32 d = 1; d < s->n_devices; d++)
    if (!dr__cuda_streams_use_device(s, d, error) ||
        !DR_CUDA(site, cudaStreamWaitEvent, s->devices[d].setup, t->iter_start[k], 0) ||
        !DR_CUDA(site, cudaEventRecord, t->dev_start[k][d], s->devices[d].setup))
      return FALSE;
  return dr__cuda_streams_use_device(s, 0, error);
}

gboolean dr__cuda_timing_end(const DrCudaTiming *t, guint32 k, cudaStream_t origin, gboolean timed,
                             GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration");
  if (!DR_CUDA(site, cudaEventRecord, t->iter_end[k], origin)) return FALSE;
  /* One copy of every stamp per timed iteration, after iter_end: outside
   * the measured makespan and after the join (every stamp written). */
  if (timed && t->mode == DR_TIMING_STAMPS &&
      !DR_CUDA(site, cudaMemcpyAsync, t->stamps_host + (gsize)k * (t->n_nodes + 1), t->stamps,
               sizeof(unsigned long long) * (t->n_nodes + 1), cudaMemcpyDeviceToHost, origin))
    return FALSE;
  if (timed && t->extra_bytes && *t->extra_on &&
      !DR_CUDA(site, cudaMemcpyAsync, (char *)t->extra_host + (gsize)k * t->extra_bytes, t->extra_dev,
               t->extra_bytes, cudaMemcpyDeviceToHost, origin))
    return FALSE;
  return DR_CUDA(site, cudaEventRecord, t->iter_done[k], origin);
}

gboolean dr__cuda_timing_wait(const DrCudaTiming *t, guint32 k, GError **error) {
  return DR_CUDA(DR_SITE_SETUP("iteration"), cudaEventSynchronize, t->iter_done[k]);
}

/* Nanoseconds from stamp `t0` to `t`, in µs. */
static double stamp_us(unsigned long long t, unsigned long long t0) {
  return (double)(gint64)(t - t0) / 1000.0;
}

/* Turns slot `k`'s copied-back stamps into node times. */
static void read_stamps(const DrCudaTiming *t, guint32 k, const DrId *prev_on_stream, DrIterTiming *out) {
  /* Stamps aside (graph mode) may run a launch latency after a successor
   * started; an end is clamped so that it never precedes its start. */
  const DrPlan *p = t->plan;
  const unsigned long long *st = t->stamps_host + (gsize)k * (t->n_nodes + 1);
  unsigned long long t0 = st[t->n_nodes];
  for (guint32 i = 0; i < p->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(p, i);
    DrId v = step->node;
    unsigned long long ready = t0;
    if (prev_on_stream[v] != DR_NONE) ready = MAX(ready, st[prev_on_stream[v]]);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++)
      ready = MAX(ready, st[dr_plan_wait(p, w)]);
    out->start_us[v] = stamp_us(ready, t0);
    out->end_us[v] = stamp_us(MAX(st[v], ready), t0);
  }
}

/* Reads slot `k`'s two timing events per node against its iter_start. */
static gboolean read_events(const DrCudaTiming *t, guint32 k, DrIterTiming *out, GError **error) {
  for (DrId i = 0; i < t->n_nodes; i++) {
    float s = 0, e = 0;
    gsize ev = (gsize)k * t->n_nodes + i;
    DrCudaSite ns = dr__cuda_node_site(t->plan, i);
    /* Several devices: against the node's device's start (its start waits
     * on iter_start, so device clocks are taken to agree at the fork). */
    guint32 d = t->streams->stream_device[t->plan->node_stream[i]];
    cudaEvent_t ref = d == 0 ? t->iter_start[k] : t->dev_start[k][d];
    if (!DR_CUDA(ns, cudaEventElapsedTime, &s, ref, t->t_start[ev]) ||
        !DR_CUDA(ns, cudaEventElapsedTime, &e, ref, t->t_end[ev]))
      return FALSE;
    out->start_us[i] = s * 1000.0;
    out->end_us[i] = e * 1000.0;
  }
  return TRUE;
}

gboolean dr__cuda_timing_read(const DrCudaTiming *t, guint32 k, const DrId *prev_on_stream, DrIterTiming *out,
                              GError **error) {
  float ms = 0;
  DrCudaSite site = DR_SITE_SETUP("iteration timing");
  if (!DR_CUDA(site, cudaEventElapsedTime, &ms, t->iter_start[k], t->iter_end[k])) return FALSE;
  out->makespan_us = ms * 1000.0;
  if (t->mode == DR_TIMING_STAMPS) read_stamps(t, k, prev_on_stream, out);
  return t->mode != DR_TIMING_EVENTS || read_events(t, k, out, error);
}

/* Enqueues the stamp kernel writing %globaltimer into `slot` on `st`. */
static gboolean stamp(unsigned long long *slot, cudaStream_t st, DrCudaSite site, GError **error) {
  return dr__cuda_check((cudaError_t)dr_cuda_api()->stamp_launch(slot, st), "stamp kernel launch", site,
                        error);
}

gboolean dr__cuda_timing_start_stamp(const DrCudaTiming *t, cudaStream_t origin, GError **error) {
  return t->mode != DR_TIMING_STAMPS ||
         stamp(&t->stamps[t->n_nodes], origin, DR_SITE_SETUP("iteration fork"), error);
}

gboolean dr__cuda_timing_event(cudaEvent_t ev, cudaStream_t st, gboolean capturing, DrCudaSite site,
                               GError **error) {
  if (capturing) return DR_CUDA(site, cudaEventRecordWithFlags, ev, st, cudaEventRecordExternal);
  return DR_CUDA(site, cudaEventRecord, ev, st);
}

/* Node v's stamp on its side stream. */
static gboolean stamp_aside(const DrCudaTiming *t, DrId v, guint32 stream, cudaStream_t st, GError **error) {
  /* DAG-free timing edge v -> v's stamp: the side stream of v's plan
   * stream waits for v and stamps; nothing but the join waits for the
   * stamp, so v's successors do not. */
  cudaStream_t side = t->stamp_streams[stream];
  /* Calls on the side stream blame neither the node nor a plan stream: the
   * side stream is neither. */
  g_autofree char *what = g_strdup_printf("timing stamp of '%s' (side stream of stream %u)",
                                          dr_graph_node(t->plan->graph, v)->id, stream);
  DrCudaSite sides = DR_SITE_SETUP(what);
  return DR_CUDA(dr__cuda_node_site(t->plan, v), cudaEventRecord, t->stamp_ready[v], st) &&
         DR_CUDA(sides, cudaStreamWaitEvent, side, t->stamp_ready[v], 0) &&
         stamp(&t->stamps[v], side, sides, error);
}

gboolean dr__cuda_timing_stamp_node(const DrCudaTiming *t, DrId v, guint32 stream, cudaStream_t st,
                                    GError **error) {
  if (t->stamp_aside) return stamp_aside(t, v, stream, st, error);
  /* Inline (eager mode), for nodes that do not stamp themselves: v's end
   * stamp goes before its completion event, so whoever waits on v also
   * runs after the stamp. */
  return stamp(&t->stamps[v], st, dr__cuda_node_site(t->plan, v), error);
}

gboolean dr__cuda_timing_join(const DrCudaTiming *t, guint32 stream, cudaStream_t origin, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration join");
  /* Join of the stamps: every stamp happens before the iteration's end
   * (and before the stamps are copied back). */
  return !t->stamp_aside || !t->side_used[stream] ||
         (DR_CUDA(site, cudaEventRecord, t->stamp_join[stream], t->stamp_streams[stream]) &&
          DR_CUDA(site, cudaStreamWaitEvent, origin, t->stamp_join[stream], 0));
}
