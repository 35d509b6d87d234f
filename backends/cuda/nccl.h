/* nccl.h: internal to backends/cuda/: the CUDA backend's NCCL part
 * (nccl.c): the communicators of a run whose pipeline has collectives, the
 * groups of collectives issued together, the issue of one collective node
 * on its (communication) stream, and the watch over NCCL's asynchronous
 * errors while the run waits.
 *
 * The communicators: in a single process, one ncclCommInitAll over the
 * run's devices (run.devices, or the run's device alone): one
 * communicator per device, rank r on run.devices[r]; in an MPI job of
 * several ranks whose pipeline has per-rank collectives,
 * ncclCommInitRank(nranks, id, rank) on every rank with the ncclUniqueId
 * rank 0 made and MPI broadcast (dr__mpi_share_nccl_id), and an abort
 * hook (dr__mpi_register_abort) that aborts it before the job ends. With
 * several devices a collective is one NCCL call per device inside one
 * ncclGroupStart/End, participant r's on a stream of device r: the plan
 * stream's own for the participant of its device, and for every other
 * device a communication stream of that device this part owns, joined
 * to the plan stream by an event each way. It owns the communicators,
 * those streams and events and the group table, nothing else; NCCL itself
 * is opened through nccl_api.h, the plan streams are streams.c's. */
#ifndef DAGRUN_BACKENDS_CUDA_NCCL_H
#define DAGRUN_BACKENDS_CUDA_NCCL_H

#include "backends/cuda/streams.h"
#include "backends/nccl_api.h"
#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

typedef struct {
  const DrNcclApi *api; /* NULL: the pipeline has no collective */
  /* One process's communicators (ncclCommInitAll), [n_comms]: comms[r]
   * drives device index r of the streams part (run.devices[r]); NULL
   * entries: none, or aborted. */
  DrNcclComm *comms;
  guint32 n_comms;
  DrNcclComm rank_comm; /* the MPI job's (ncclCommInitRank); NULL: none */
  gboolean failed;      /* a call failed: the communicators were aborted, close destroys none */
  gboolean ranks;       /* per-rank collectives use rank_comm */
  gint32 nranks, rank;  /* rank_comm's shape: 1 and 0 in a single process */
  gboolean hooked;      /* the abort hook is registered */
  /* group_len[i]: for the plan step i that starts a group, the number of
   * consecutive steps issued inside one ncclGroupStart/End (>= 2); 0 for
   * every other step. NULL without collectives. */
  guint32 *group_len;
  guint32 n_groups; /* groups of >= 2 collectives in the plan */
  /* Several devices (n_comms > 1): the streams part (borrowed) and, per
   * device index d, a communication stream of device d (at its highest
   * priority) for participant d when the collective's plan stream is on
   * another device, the event recorded on a plan stream of device d
   * before the participants start (`fan`), and the one recorded on
   * side[d] after its participant (`back`). NULL handles: not made. */
  const DrCudaStreams *streams;
  cudaStream_t *side;
  cudaEvent_t *fan, *back;
  /* Inside dr__cuda_nccl_group_start/end: open groups, and the plan
   * stream (and its device index) of the group's collectives over
   * several devices once one was issued (lead < 0: none yet). */
  guint32 depth;
  gint32 lead;
  cudaStream_t lead_stream;
} DrCudaNccl;

/* When `plan`'s graph has collectives: opens NCCL (DR_ERROR_UNAVAILABLE,
 * saying where it looked, when it cannot), makes the communicators (over
 * the devices of `streams`, already open; across ranks this is
 * collective: every rank calls it in the same run), with several devices
 * each device's communication stream and events, and finds the groups;
 * device index 0 is selected after. Nothing otherwise. Fails as DR_NCCL,
 * DR_CUDA or dr__mpi_share_nccl_id do; `n` is then half-built and
 * dr__cuda_nccl_close releases it. */
gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrPlan *plan, const DrCudaStreams *streams, GError **error);
/* Releases the communicators (ncclCommDestroy; after a failed call they
 * were aborted already, so nothing waits on a peer that will never
 * come), the streams and events; removes the abort hook. NULL-safe
 * fields: tolerates a half-built `n`. */
void dr__cuda_nccl_close(DrCudaNccl *n);

/* Waits on the host for event `done` (an iteration's end) while
 * watching the communicators: ncclCommGetAsyncError on each, then
 * cudaEventQuery (when the table has it), again until the event has
 * happened, yielding and then sleeping in between. An asynchronous
 * error (a peer that died, a network failure) aborts every communicator
 * (ncclCommAbort: NCCL's kernels stop instead of waiting forever) and is
 * DR_ERROR_RUNTIME naming the device, rank and NCCL's error; a failed
 * query is DR_ERROR_RUNTIME naming the call. Without communicators: TRUE
 * at once. The caller's blocking wait for the same event follows. */
gboolean dr__cuda_nccl_wait(DrCudaNccl *n, cudaEvent_t done, GError **error);

/* The number of plan steps, from step `step` on, that are issued inside
 * one group (>= 2), or 0 when step `step` does not start one. Steps in a
 * group are consecutive, on one communication stream, collectives with no
 * buffer hazard between any two (docs/multi-gpu.md, "Groups"). */
static inline guint32 dr__cuda_nccl_group_len(const DrCudaNccl *n, guint32 step) {
  return n->group_len != NULL ? n->group_len[step] : 0;
}
/* ncclGroupStart (`node`: the group's first node, for the message). */
gboolean dr__cuda_nccl_group_start(DrCudaNccl *n, const char *node, GError **error);
/* ncclGroupEnd, always called once a group started, even when `ok` is
 * FALSE (a call inside failed: its error stays the one reported); then,
 * when the group held collectives over several devices, every other
 * device's participants joined back to the group's plan stream. TRUE
 * when ok and all of it succeeded. */
gboolean dr__cuda_nccl_group_end(DrCudaNccl *n, const char *node, gboolean ok, GError **error);

/* Enqueues collective node `v` on `st` (its plan stream's, whose device
 * is selected), its buffers at `bases` (device pointers). Over several
 * devices: the other devices' communication streams wait for `st`, the
 * per-device calls go in one group (the caller's, inside
 * dr__cuda_nccl_group_start/end, or one of its own), and `st` waits for
 * them after the group; the plan stream's device is selected after.
 * DR_ERROR_RUNTIME naming the node and call on failure (the
 * communicators are then aborted). */
gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *graph, DrId v, void *const *bases, cudaStream_t st,
                             GError **error);

G_END_DECLS

#endif
