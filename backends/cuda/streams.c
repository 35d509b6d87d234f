/* streams.c: the CUDA backend's devices, streams and topology events: the
 * plan's streams become CUDA streams (non-blocking, with priorities), its
 * waits become events, and every iteration forks from and joins back into
 * one origin stream.
 *
 * Topology first, with no CUDA call: each node's predecessor on its stream,
 * and which streams need their own fork wait and join (see needs_fork in
 * streams.h). Then the handles, in this order: each device (and past the
 * first its setup stream), origin, each plan stream with its join event,
 * the fork event, the completion events, each made with its device
 * selected; then peer access for the pairs of devices peer copies use.
 * Every event record and stream wait here implements a DAG edge, or the
 * iteration's start (fork) or end (join) happening before or after every
 * node. Across devices the same holds: an event is recorded on its own
 * device's stream, and cudaStreamWaitEvent takes another device's event,
 * so a cross-device edge is one record on the producer's device and one
 * wait on the consumer's, each after the cudaSetDevice of its stream. This
 * file does not allocate buffers, time or launch anything. */
#include <string.h>

#include "backends/cuda/streams.h"
#include "backends/run.h"

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

/* Several devices: what the backend does not run yet. A collective over
 * the devices runs (nccl.c: one communicator per device from one
 * ncclCommInitAll); a per-rank one (one buffer: this rank's part of a
 * collective across an MPI job) on a rank that drives several devices
 * would need a communicator of ranks x devices. */
static gboolean check_devices(const DrPlan *plan, GError **error) {
  const DrGraph *g = plan->graph;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (!DR_OP_IS_COLLECTIVE(n->op) || !n->per_rank) continue;
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE,
                "node '%s': a %s across the ranks of the job, on a rank that drives the %u devices of "
                "run.devices, needs a communicator of ranks x devices, which the CUDA backend does not "
                "make (backends/cuda/nccl.c: the devices of one process, or one device per rank); give "
                "each rank one device, or --backend=host runs the pipeline",
                n->id, dr_op_name(n->op), g->run.n_devices);
    return FALSE;
  }
  /* An assertion: the planner never puts a buffer in another device's
   * storage (scheduler/reuse.c groups per device; tests/planner:reuse). */
  for (DrId b = 0; plan->storage && b < dr_graph_n_buffers(g); b++)
    if (plan->storage[b] != b &&
        dr_graph_buffer_device(g, b) != dr_graph_buffer_device(g, plan->storage[b])) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                  "internal error: buffer '%s' shares the storage of buffer '%s' on another device; "
                  "memory.reuse: auto groups storage per device (scheduler/reuse.c)",
                  dr_graph_buffer(g, b)->name, dr_graph_buffer(g, plan->storage[b])->name);
      return FALSE;
    }
  return TRUE;
}

gboolean dr__cuda_streams_check(const DrPlan *plan, int device, GError **error) {
  const DrGraph *g = plan->graph;
  if (g->run.n_devices > 1) return check_devices(plan, error);
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

gboolean dr__cuda_streams_use_device(const DrCudaStreams *s, guint32 d, GError **error) {
  if (s->n_devices <= 1) return TRUE;
  cudaError_t rc_;
  return DR_CUDA_HOT(dr_cuda_api(), DR_SITE_SETUP("selecting the stream's device"), cudaSetDevice,
                     s->devices[d].ordinal);
}

guint32 dr__cuda_streams_device_index(const DrCudaStreams *s, int ordinal) {
  for (guint32 d = 0; d < s->n_devices; d++)
    if (s->devices[d].ordinal == ordinal) return d;
  return 0;
}

gboolean dr__cuda_streams_sync(const DrCudaStreams *s, const char *what, GError **error) {
  if (s->n_devices <= 1) return DR_CUDA(DR_SITE_SETUP(what), cudaDeviceSynchronize);
  gboolean ok = TRUE;
  for (guint32 d = 0; d < s->n_devices; d++) {
    g_autofree char *where = g_strdup_printf("%s (device %d)", what, s->devices[d].ordinal);
    DrCudaSite site = DR_SITE_SETUP(where);
    /* After a failure the other devices are still drained (close). */
    GError **e = ok ? error : NULL;
    ok = dr__cuda_check(dr_cuda_api()->cudaSetDevice(s->devices[d].ordinal), "cudaSetDevice", site, e) &&
         dr__cuda_check(dr_cuda_api()->cudaDeviceSynchronize(), "cudaDeviceSynchronize", site, e) && ok;
  }
  return dr__cuda_check(dr_cuda_api()->cudaSetDevice(s->devices[0].ordinal), "cudaSetDevice",
                        DR_SITE_SETUP(what), ok ? error : NULL) &&
         ok;
}

void dr_run_probe_peers(DrPlan *plan, DrBackendKind backend) {
  const DrGraph *g = plan->graph;
  const DrCudaApi *api = dr_cuda_api();
  guint32 n;
  const gint32 *devs = dr_graph_devices(g, &n);
  if (backend == DR_BACKEND_HOST || n < 2 || plan->peer_path != NULL) return;
  g_autofree guint8 *path = g_new0(guint8, n * n);
  gboolean any = FALSE;
  int count = 0;
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++) {
    gint32 sd, dd;
    if (!dr_graph_copy_is_peer(g, v, &sd, &dd) || sd == dd) continue;
    if (!any && (api->cudaGetDeviceCount(&count) != cudaSuccess || count < 1)) {
      (void)api->cudaGetLastError();
      return; /* no GPU: the host backend will run it */
    }
    any = TRUE;
    gint32 a = dr_graph_node_device(g, v), b = a == sd ? dd : sd;
    gint32 ra = dr_graph_device_rank(g, a), rb = dr_graph_device_rank(g, b);
    if (ra < 0 || rb < 0 || path[ra * n + rb] != 0) continue;
    int can = 0;
    if (devs[ra] >= count || devs[rb] >= count ||
        api->cudaDeviceCanAccessPeer(&can, devs[ra], devs[rb]) != cudaSuccess) {
      (void)api->cudaGetLastError();
      return;
    }
    path[ra * n + rb] = can ? DR_PEER_ACCESS : DR_PEER_STAGED;
  }
  if (any) plan->peer_path = g_steal_pointer(&path);
}

/* The devices of `plan`'s run: `device` alone, or run.devices. */
static void plan_devices(DrCudaStreams *s, const DrPlan *plan, int device) {
  const DrGraph *g = plan->graph;
  guint32 n = 1;
  const gint32 *devs = g->run.n_devices > 1 ? dr_graph_devices(g, &n) : NULL;
  s->n_devices = n;
  s->devices = g_new0(DrCudaDevice, n);
  for (guint32 d = 0; d < n; d++) s->devices[d].ordinal = devs ? devs[d] : device;
  s->stream_device = g_new0(guint32, MAX(s->n_streams, 1));
  for (guint32 k = 0; devs && k < s->n_streams; k++)
    s->stream_device[k] = dr__cuda_streams_device_index(s, g_array_index(plan->streams, DrStream, k).device);
}

/* Peer access for every pair of devices a peer copy touches: the copy
 * runs on its node's device (a), which reads or writes the other's memory
 * (b). Asked once per ordered pair; enabled once per pair when the driver
 * allows it (cudaErrorPeerAccessAlreadyEnabled: an earlier run of this
 * process did), else staged. A copy from a device to itself needs no
 * access. */
static gboolean open_peers(DrCudaStreams *s, GError **error) {
  const DrPlan *plan = s->plan;
  const DrCudaApi *api = dr_cuda_api();
  guint32 n = s->n_devices;
  s->peer = g_new0(DrCudaPeer, n * n);
  for (DrId v = 0; v < s->n_nodes; v++) {
    gint32 sd, dd;
    if (!dr_graph_copy_is_peer(plan->graph, v, &sd, &dd)) continue;
    guint32 a = s->stream_device[plan->node_stream[v]];
    int other = s->devices[a].ordinal == sd ? dd : sd;
    guint32 b = dr__cuda_streams_device_index(s, other);
    DrCudaPeer *p = &s->peer[a * n + b];
    if (*p != DR_CUDA_PEER_NONE) continue;
    if (a == b) {
      *p = DR_CUDA_PEER_ACCESS;
      continue;
    }
    g_autofree char *what =
        g_strdup_printf("peer access from device %d to device %d", s->devices[a].ordinal, other);
    DrCudaSite site = DR_SITE_SETUP(what);
    int can = 0;
    if (!DR_CUDA(site, cudaDeviceCanAccessPeer, &can, s->devices[a].ordinal, other)) return FALSE;
    *p = can ? DR_CUDA_PEER_ACCESS : DR_CUDA_PEER_STAGED;
    if (!can) continue;
    if (!DR_CUDA(site, cudaSetDevice, s->devices[a].ordinal)) return FALSE;
    cudaError_t rc = api->cudaDeviceEnablePeerAccess(other, 0);
    if (rc == cudaErrorPeerAccessAlreadyEnabled)
      (void)api->cudaGetLastError(); /* once per process and pair: fine */
    else if (!dr__cuda_check(rc, "cudaDeviceEnablePeerAccess", site, error))
      return FALSE;
  }
  return dr__cuda_streams_use_device(s, 0, error);
}

gboolean dr__cuda_streams_open(DrCudaStreams *s, const DrPlan *plan, int device, gboolean keep_fork_join,
                               GError **error) {
  const DrGraph *g = plan->graph;
  s->plan = plan;
  s->n_streams = dr_plan_n_streams(plan);
  s->n_nodes = dr_graph_n_nodes(g);
  plan_devices(s, plan, device);
  s->stream = g_new0(cudaStream_t, MAX(s->n_streams, 1));
  s->join = g_new0(cudaEvent_t, MAX(s->n_streams, 1));
  s->node_done = g_new0(cudaEvent_t, MAX(s->n_nodes, 1));
  s->needs_fork = g_new(gboolean, MAX(s->n_streams, 1));
  s->needs_join = g_new(gboolean, MAX(s->n_streams, 1));
  s->prev_on_stream = g_new(DrId, MAX(s->n_nodes, 1));
  plan_topology(s, keep_fork_join);

  /* Every device but the first, with its setup stream; the first last, so
   * that it stays selected. */
  for (guint32 k = s->n_devices; k-- > 1;) {
    DrCudaDevice *dk = &s->devices[k];
    g_autofree char *what = g_strdup_printf("device %d", dk->ordinal);
    if (!open_device(dk, error) ||
        !DR_CUDA(DR_SITE_SETUP(what), cudaStreamCreateWithPriority, &dk->setup, cudaStreamNonBlocking,
                 map_priority(DR_PRIORITY_NORMAL, dk->prio_least, dk->prio_greatest)))
      return FALSE;
  }
  const DrCudaDevice *d = &s->devices[0];
  g_autofree char *dev = g_strdup_printf("device %d", s->devices[0].ordinal);
  DrCudaSite site = DR_SITE_SETUP(dev);
  /* One plan stream on the first device, eagerly: it is origin too, so an
   * iteration needs no fork and no join (two event hops, about 8 us on
   * the H200 for a one-node allreduce on its communication stream:
   * BENCHMARKS.md §15); consecutive iterations are ordered by the stream. */
  s->origin_is_stream0 = !keep_fork_join && s->n_streams == 1 && s->stream_device[0] == 0;
  if (!open_device(&s->devices[0], error) ||
      (!s->origin_is_stream0 &&
       !DR_CUDA(site, cudaStreamCreateWithPriority, &s->origin, cudaStreamNonBlocking,
                map_priority(DR_PRIORITY_NORMAL, d->prio_least, d->prio_greatest))))
    return FALSE;
  for (guint32 k = 0; k < s->n_streams; k++) {
    DrCudaSite ss = {NULL, k, NULL};
    if (!dr__cuda_streams_use(s, k, error) ||
        !DR_CUDA(ss, cudaStreamCreateWithPriority, &s->stream[k], cudaStreamNonBlocking,
                 dr__cuda_streams_priority(s, k)) ||
        !DR_CUDA(ss, cudaEventCreateWithFlags, &s->join[k], cudaEventDisableTiming))
      return FALSE;
  }
  if (s->origin_is_stream0) {
    s->origin = s->stream[0];
    s->needs_fork[0] = s->needs_join[0] = FALSE;
  }
  if (!dr__cuda_streams_use_device(s, 0, error) ||
      !DR_CUDA(site, cudaEventCreateWithFlags, &s->fork, cudaEventDisableTiming))
    return FALSE;
  for (DrId i = 0; i < s->n_nodes; i++)
    if (plan->needs_event[i] && (!dr__cuda_streams_use(s, plan->node_stream[i], error) ||
                                 !DR_CUDA(dr__cuda_node_site(plan, i), cudaEventCreateWithFlags,
                                          &s->node_done[i], cudaEventDisableTiming)))
      return FALSE;
  return s->n_devices <= 1 || open_peers(s, error);
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
  if (s->origin && !s->origin_is_stream0) (void)api->cudaStreamDestroy(s->origin);
  for (guint32 d = 1; s->devices && d < s->n_devices; d++)
    if (s->devices[d].setup) (void)api->cudaStreamDestroy(s->devices[d].setup);
  g_free(s->peer);
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
  if (s->origin_is_stream0) return TRUE; /* the stream orders it */
  /* Fork: the iteration's start happens before every stream's first node
   * (directly, or through the node it waits on: needs_fork). */
  if (!DR_CUDA(site, cudaEventRecord, s->fork, s->origin)) return FALSE;
  for (guint32 k = 0; k < s->n_streams; k++)
    if (s->needs_fork[k] &&
        (!dr__cuda_streams_use(s, k, error) || !DR_CUDA(site, cudaStreamWaitEvent, s->stream[k], s->fork, 0)))
      return FALSE;
  return dr__cuda_streams_use_device(s, 0, error);
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
  return !s->needs_join[stream] || (dr__cuda_streams_use(s, stream, error) &&
                                    DR_CUDA(site, cudaEventRecord, s->join[stream], s->stream[stream]) &&
                                    dr__cuda_streams_use_device(s, 0, error) &&
                                    DR_CUDA(site, cudaStreamWaitEvent, s->origin, s->join[stream], 0));
}
