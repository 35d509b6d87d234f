/* streams.c: the CUDA backend's devices, streams and topology events: the
 * plan's streams become CUDA streams (non-blocking, with priorities), its
 * waits become events, and every iteration forks from and joins back into
 * one origin stream.
 *
 * Topology first, with no CUDA call: each node's predecessor on its stream,
 * and which streams need their own fork wait and join (see needs_fork in
 * streams.h). Then the handles, in this order: the device, origin, each
 * plan stream with its join event, the fork event, the completion events.
 * Every event record and stream wait here implements a DAG edge, or the
 * iteration's start (fork) or end (join) happening before or after every
 * node. This file does not allocate buffers, time or launch anything. */
#include <string.h>

#include "backends/cuda/streams.h"

gboolean dr__cuda_available(char **why) {
  int count = 0;
  cudaError_t rc = dr_cuda_api()->cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)dr_cuda_api()->cudaGetLastError();
    *why = g_strdup_printf("cudaGetDeviceCount: %s", dr_cuda_api()->cudaGetErrorName(rc));
    return FALSE;
  }
  if (count < 1) {
    *why = g_strdup("cudaGetDeviceCount: 0 devices");
    return FALSE;
  }
  return TRUE;
}

static int map_priority(DrPriority p, int least, int greatest) {
  switch (p) {
    case DR_PRIORITY_HIGH:
      return greatest;
    case DR_PRIORITY_LOW:
      return least;
    default:
      return (least + greatest) / 2;
  }
}

int dr__cuda_streams_priority(const DrCudaStreams *s, guint32 stream) {
  const DrCudaDevice *d = &s->devices[s->stream_device[stream]];
  return map_priority(g_array_index(s->plan->streams, DrStream, stream).priority, d->prio_least,
                      d->prio_greatest);
}

gboolean dr__cuda_streams_check(const DrPlan *plan, int device, GError **error) {
  const DrGraph *g = plan->graph;
  if (g->run.n_devices > 1) {
    g_set_error(
        error, DR_ERROR, DR_ERROR_UNAVAILABLE,
        "run.devices lists %u devices; the CUDA backend drives one device per process so far (streams, "
        "peer copies and NCCL over several devices of one process are not built: docs/multi-gpu.md); "
        "--backend=host runs the pipeline",
        g->run.n_devices);
    return FALSE;
  }
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->device >= 0 && n->device != device) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                  "node '%s': device %d differs from the run's device %d; multi-device pipelines are not "
                  "supported by this backend",
                  n->id, n->device, device);
      return FALSE;
    }
  }
  return TRUE;
}

/* Plan order: each node's predecessor on its stream; a stream's first step
 * decides its fork, its last its join (needs_event: a later node on
 * another stream waits on it). `keep_fork_join` keeps every fork and
 * join. */
static void plan_topology(DrCudaStreams *s, gboolean keep_fork_join) {
  const DrPlan *plan = s->plan;
  g_autofree DrId *last = g_new(DrId, MAX(s->n_streams, 1));
  for (guint32 k = 0; k < s->n_streams; k++) last[k] = DR_NONE;
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    if (last[step->stream] == DR_NONE) s->needs_fork[step->stream] = keep_fork_join || step->wait_count == 0;
    s->prev_on_stream[step->node] = last[step->stream];
    last[step->stream] = step->node;
  }
  for (guint32 k = 0; k < s->n_streams; k++) {
    if (last[k] == DR_NONE) s->needs_fork[k] = TRUE;
    s->needs_join[k] = keep_fork_join || last[k] == DR_NONE || !plan->needs_event[last[k]];
  }
}

/* Selects device `d` and reads its priority range. */
static gboolean open_device(DrCudaDevice *d, GError **error) {
  /* CUDA_DEVICE_MAX_CONNECTIONS (the hardware queues) is the process's
   * policy, set before its first CUDA call: the CLI does (cli.c), library
   * users may (run.h). Library code must not setenv: not thread-safe. */
  g_autofree char *dev = g_strdup_printf("device %d", d->ordinal);
  DrCudaSite site = DR_SITE_SETUP(dev);
  return DR_CUDA(site, cudaSetDevice, d->ordinal) &&
         DR_CUDA(site, cudaDeviceGetStreamPriorityRange, &d->prio_least, &d->prio_greatest);
}

gboolean dr__cuda_streams_open(DrCudaStreams *s, const DrPlan *plan, int device, gboolean keep_fork_join,
                               GError **error) {
  const DrGraph *g = plan->graph;
  s->plan = plan;
  s->n_streams = dr_plan_n_streams(plan);
  s->n_nodes = dr_graph_n_nodes(g);
  s->n_devices = 1;
  s->devices = g_new0(DrCudaDevice, 1);
  s->devices[0].ordinal = device;
  s->stream_device = g_new0(guint32, MAX(s->n_streams, 1));
  s->stream = g_new0(cudaStream_t, MAX(s->n_streams, 1));
  s->join = g_new0(cudaEvent_t, MAX(s->n_streams, 1));
  s->node_done = g_new0(cudaEvent_t, MAX(s->n_nodes, 1));
  s->needs_fork = g_new(gboolean, MAX(s->n_streams, 1));
  s->needs_join = g_new(gboolean, MAX(s->n_streams, 1));
  s->prev_on_stream = g_new(DrId, MAX(s->n_nodes, 1));
  plan_topology(s, keep_fork_join);

  const DrCudaDevice *d = &s->devices[0];
  g_autofree char *dev = g_strdup_printf("device %d", device);
  DrCudaSite site = DR_SITE_SETUP(dev);
  if (!open_device(&s->devices[0], error) ||
      !DR_CUDA(site, cudaStreamCreateWithPriority, &s->origin, cudaStreamNonBlocking,
               map_priority(DR_PRIORITY_NORMAL, d->prio_least, d->prio_greatest)))
    return FALSE;
  for (guint32 k = 0; k < s->n_streams; k++) {
    DrCudaSite ss = {NULL, k, NULL};
    if (!DR_CUDA(ss, cudaStreamCreateWithPriority, &s->stream[k], cudaStreamNonBlocking,
                 dr__cuda_streams_priority(s, k)) ||
        !DR_CUDA(ss, cudaEventCreateWithFlags, &s->join[k], cudaEventDisableTiming))
      return FALSE;
  }
  if (!DR_CUDA(site, cudaEventCreateWithFlags, &s->fork, cudaEventDisableTiming)) return FALSE;
  for (DrId i = 0; i < s->n_nodes; i++)
    if (plan->needs_event[i] && !DR_CUDA(dr__cuda_node_site(plan, i), cudaEventCreateWithFlags,
                                         &s->node_done[i], cudaEventDisableTiming))
      return FALSE;
  return TRUE;
}

static void destroy_events(cudaEvent_t *events, guint32 n) {
  if (events == NULL) return;
  for (guint32 i = 0; i < n; i++)
    if (events[i]) (void)dr_cuda_api()->cudaEventDestroy(events[i]);
  g_free(events);
}

void dr__cuda_streams_close(DrCudaStreams *s) {
  const DrCudaApi *api = dr_cuda_api();
  destroy_events(s->node_done, s->n_nodes);
  destroy_events(s->join, s->n_streams);
  if (s->fork) (void)api->cudaEventDestroy(s->fork);
  if (s->stream)
    for (guint32 k = 0; k < s->n_streams; k++)
      if (s->stream[k]) (void)api->cudaStreamDestroy(s->stream[k]);
  if (s->origin) (void)api->cudaStreamDestroy(s->origin);
  g_free(s->stream);
  g_free(s->needs_fork);
  g_free(s->needs_join);
  g_free(s->prev_on_stream);
  g_free(s->stream_device);
  g_free(s->devices);
  memset(s, 0, sizeof *s);
}

gboolean dr__cuda_streams_fork(const DrCudaStreams *s, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration fork");
  /* Fork: the iteration's start happens before every stream's first node
   * (directly, or through the node it waits on: needs_fork). */
  if (!DR_CUDA(site, cudaEventRecord, s->fork, s->origin)) return FALSE;
  for (guint32 k = 0; k < s->n_streams; k++)
    if (s->needs_fork[k] && !DR_CUDA(site, cudaStreamWaitEvent, s->stream[k], s->fork, 0)) return FALSE;
  return TRUE;
}

gboolean dr__cuda_streams_wait_events(const DrCudaStreams *s, const DrCudaApi *api, const DrPlanStep *step,
                                      GError **error) {
  cudaError_t rc_;
  cudaStream_t st = s->stream[step->stream];
  for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
    DrId u = dr_plan_wait(s->plan, w);
    /* DAG edge u -> v across streams: v's stream waits for u's completion
     * event. */
    if (!DR_CUDA_HOT(api, dr__cuda_node_site(s->plan, step->node), cudaStreamWaitEvent, st, s->node_done[u],
                     0))
      return FALSE;
  }
  return TRUE;
}

gboolean dr__cuda_streams_join(const DrCudaStreams *s, guint32 stream, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration join");
  /* Join: every stream's last node happens before the iteration's end
   * (directly, or through a stream that waits on it: needs_join). */
  return !s->needs_join[stream] || (DR_CUDA(site, cudaEventRecord, s->join[stream], s->stream[stream]) &&
                                    DR_CUDA(site, cudaStreamWaitEvent, s->origin, s->join[stream], 0));
}
