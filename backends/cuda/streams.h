/* streams.h: internal to backends/cuda/: the CUDA backend's devices,
 * streams and the events of the plan's topology (streams.c).
 *
 * This part owns every device, the origin stream (the iteration's fork and
 * join point), one CUDA stream per plan stream, the fork and join events
 * and each node's completion event (the source of its cross-stream waits).
 * It is where a second device adds its state: `devices` holds one entry per
 * device the run uses and `stream_device` says which one each plan stream
 * runs on (one device today: the run's). It owns no buffer, no timing
 * event and no launch. */
#ifndef DAGRUN_BACKENDS_CUDA_STREAMS_H
#define DAGRUN_BACKENDS_CUDA_STREAMS_H

#include "backends/cuda_api.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* One device of the run. */
typedef struct {
  int ordinal;                   /* the CUDA device number */
  int prio_least, prio_greatest; /* its stream priority range */
} DrCudaDevice;

typedef struct {
  const DrPlan *plan; /* borrowed */
  guint32 n_streams, n_nodes;
  DrCudaDevice *devices; /* [n_devices] */
  guint32 n_devices;
  guint32 *stream_device; /* [n_streams]: index into devices */
  cudaStream_t origin;    /* fork/join point on devices[0]; never the legacy stream */
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
} DrCudaStreams;

/* Checks that every node of `plan` runs on device `device` (this backend
 * drives one device); DR_ERROR_RUNTIME naming the node otherwise. No CUDA
 * call. */
gboolean dr__cuda_streams_check(const DrPlan *plan, int device, GError **error);

/* Opens the streams of `plan` on device `device`: works out the topology
 * (prev_on_stream, needs_fork, needs_join; `keep_fork_join`: every stream
 * forks and joins, as a capture needs), selects the device, creates origin,
 * one stream per plan stream (its priority mapped onto the device's range)
 * with its join event, the fork event and the completion event of every
 * node another stream waits on. Fails as DR_CUDA does; `s` is then
 * half-built and dr__cuda_streams_close releases it. */
gboolean dr__cuda_streams_open(DrCudaStreams *s, const DrPlan *plan, int device, gboolean keep_fork_join,
                               GError **error);

/* Releases every stream and event of `s` (NULL handles: not created). */
void dr__cuda_streams_close(DrCudaStreams *s);

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
