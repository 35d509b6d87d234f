/* streams.h: internal to backends/cuda/: the CUDA backend's devices,
 * streams and the events of the plan's topology (streams.c).
 *
 * This part owns every device, the origin stream (the iteration's fork and
 * join point), one CUDA stream per plan stream, the fork and join events
 * and each node's completion event (the source of its cross-stream waits).
 * `devices` holds one entry per device the run drives (run.devices, or the
 * run's device alone), each with its priority range and (past the first)
 * a setup stream of its own, `stream_device` says which one each plan
 * stream runs on, and `peer` what a copy between two of them takes (peer
 * access, or staging through pinned host memory). Every handle belongs to
 * one device: streams and events are made with their device selected
 * (cudaSetDevice), and with several devices every per-device call is
 * preceded by the cudaSetDevice of its stream's device
 * (dr__cuda_streams_use); device 0 of the run is selected between such
 * calls. With one device no cudaSetDevice is made after the first, so the
 * one-device calls are those of a backend that knows of one device only.
 * It owns no buffer, no timing event and no launch. */
#ifndef DAGRUN_BACKENDS_CUDA_STREAMS_H
#define DAGRUN_BACKENDS_CUDA_STREAMS_H

#include "backends/cuda_api.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* One device of the run. */
typedef struct {
  int ordinal;                   /* the CUDA device number */
  int prio_least, prio_greatest; /* its stream priority range */
  /* Past the first device: a stream of this device for setup work
   * (buffer init, the release of buffers after a failure) and the
   * iteration's timing reference (timing.c); the first device's is origin. */
  cudaStream_t setup;
} DrCudaDevice;

/* What a copy from device a to device b takes (DrCudaStreams.peer). */
typedef enum {
  DR_CUDA_PEER_NONE = 0, /* no peer copy between them */
  DR_CUDA_PEER_ACCESS,   /* cudaMemcpyPeerAsync with peer access enabled (or a to itself) */
  DR_CUDA_PEER_STAGED,   /* no peer access: two copies through pinned host memory */
} DrCudaPeer;

typedef struct {
  const DrPlan *plan; /* borrowed */
  guint32 n_streams, n_nodes;
  DrCudaDevice *devices; /* [n_devices] */
  guint32 n_devices;
  guint32 *stream_device; /* [n_streams]: index into devices */
  cudaStream_t origin;    /* fork/join point on devices[0]; never the legacy stream */
  /* Streams mode with one plan stream on devices[0]: origin is that
   * stream (no fork, no join), made and destroyed as stream[0]. */
  gboolean origin_is_stream0;
  cudaStream_t *stream;   /* [n_streams] */
  cudaEvent_t fork;       /* no timing: origin -> every stream */
  cudaEvent_t *join;      /* [n_streams], no timing: every stream -> origin */
  cudaEvent_t *node_done; /* [n_nodes]: for needs_event nodes, no timing */
  /* [n_streams]: the stream waits on the fork / joins origin. Eagerly, a
   * stream whose first node waits on another stream's node already starts
   * after the fork, and one whose last node another stream waits on is
   * already joined through that stream: neither needs its own (fewer host
   * calls per iteration). A capture keeps them all (every stream forked in
   * is joined back explicitly). */
  gboolean *needs_fork, *needs_join;
  /* [n_nodes]: the node before it on its stream in plan order, or DR_NONE
   * (stamps' ready times, early launches). */
  DrId *prev_on_stream;
  /* [n_devices * n_devices]: peer[a * n_devices + b] for a peer copy
   * node running on device index a that touches device index b (a == b: a
   * copy from a device to itself), decided at open (dr__cuda_streams_open);
   * NONE for pairs no copy uses. */
  DrCudaPeer *peer;
} DrCudaStreams;

/* Checks what this backend can run of `plan`: with one device, every node
 * on device `device` (DR_ERROR_RUNTIME naming the node otherwise); with
 * several (run.devices), no per-rank collective (a communicator over the
 * ranks of a job times the devices of each is not built in
 * backends/cuda/nccl.c; collectives over the devices of the process are)
 * and no storage shared across devices (memory.reuse),
 * DR_ERROR_UNAVAILABLE otherwise. No CUDA call. */
gboolean dr__cuda_streams_check(const DrPlan *plan, int device, GError **error);

/* Opens the streams of `plan` on device `device` (with run.devices: on
 * each of them, `device` being the first): works out the topology
 * (prev_on_stream, needs_fork, needs_join; `keep_fork_join`: every stream
 * forks and joins, as a capture needs), selects each device and reads its
 * priority range (and makes its setup stream), creates origin on the
 * first, one stream per plan stream on its device (its priority mapped
 * onto that device's range) with its join event, the fork event and the
 * completion event of every node another stream waits on (on that node's
 * device); then, for each pair of devices a peer copy uses, asks
 * cudaDeviceCanAccessPeer and enables peer access once
 * (cudaDeviceEnablePeerAccess from the copy's device; already enabled by an
 * earlier run of the process is fine), or marks the pair staged. Fails as
 * DR_CUDA does; `s` is then half-built and dr__cuda_streams_close releases
 * it. */
gboolean dr__cuda_streams_open(DrCudaStreams *s, const DrPlan *plan, int device, gboolean keep_fork_join,
                               GError **error);

/* Releases every stream and event of `s` (NULL handles: not created). */
void dr__cuda_streams_close(DrCudaStreams *s);

/* With several devices: selects device index `d` (cudaSetDevice). With
 * one: nothing (it stays selected from open on). Fails as DR_CUDA does. */
gboolean dr__cuda_streams_use_device(const DrCudaStreams *s, guint32 d, GError **error);

/* dr__cuda_streams_use_device of plan stream `stream`'s device. */
static inline gboolean dr__cuda_streams_use(const DrCudaStreams *s, guint32 stream, GError **error) {
  return G_LIKELY(s->n_devices <= 1) || dr__cuda_streams_use_device(s, s->stream_device[stream], error);
}

/* The setup stream of device index `d`: origin for the first. */
static inline cudaStream_t dr__cuda_streams_setup_of(const DrCudaStreams *s, guint32 d) {
  return d == 0 ? s->origin : s->devices[d].setup;
}

/* The device index of CUDA ordinal `ordinal` among s->devices (0 when it
 * is not one: a host buffer's -1). */
guint32 dr__cuda_streams_device_index(const DrCudaStreams *s, int ordinal);

/* Waits on the host for every device (cudaDeviceSynchronize on each, the
 * first selected again after); FALSE with the first failure as DR_CUDA
 * says (`what`: the site), after trying every device. */
gboolean dr__cuda_streams_sync(const DrCudaStreams *s, const char *what, GError **error);

/* The CUDA priority of plan stream `stream` on its device. */
int dr__cuda_streams_priority(const DrCudaStreams *s, guint32 stream);

/* The iteration's fork: records the fork event on origin and lets every
 * stream that needs it wait on it. */
gboolean dr__cuda_streams_fork(const DrCudaStreams *s, GError **error);

/* The site of node v's calls: its id and plan stream. */
static inline DrCudaSite dr__cuda_node_site(const DrPlan *plan, DrId v) {
  return DR_SITE_NODE(dr_graph_node(plan->graph, v)->id, plan->node_stream[v]);
}

/* dr__cuda_streams_wait for a step with waits. */
gboolean dr__cuda_streams_wait_events(const DrCudaStreams *s, const DrCudaApi *api, const DrPlanStep *step,
                                      GError **error);

/* Before step `step`: its stream waits on the completion event of each
 * node of another stream the plan makes it wait for. Inline: most steps
 * of a wide plan wait on nothing. */
static inline gboolean dr__cuda_streams_wait(const DrCudaStreams *s, const DrCudaApi *api,
                                             const DrPlanStep *step, GError **error) {
  return G_LIKELY(step->wait_count == 0) || dr__cuda_streams_wait_events(s, api, step, error);
}

/* After node `v`'s work on `st`: records v's completion event when a
 * later node of another stream waits on it; the source of the DAG edges
 * v -> w for every such w (needs_event[v]). */
static inline gboolean dr__cuda_streams_done(const DrCudaStreams *s, const DrCudaApi *api, DrId v,
                                             cudaStream_t st, GError **error) {
  cudaError_t rc_;
  return !s->plan->needs_event[v] ||
         DR_CUDA_HOT(api, dr__cuda_node_site(s->plan, v), cudaEventRecord, s->node_done[v], st);
}

/* The iteration's join of plan stream `stream`, when it needs its own:
 * records its join event and lets origin wait on it. */
gboolean dr__cuda_streams_join(const DrCudaStreams *s, guint32 stream, GError **error);

G_END_DECLS

#endif
