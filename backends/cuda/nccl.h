/* nccl.h: internal to backends/cuda/: the CUDA backend's NCCL part
 * (nccl.c): the communicator of a run whose pipeline has collectives, the
 * groups of collectives issued together, and the issue of one collective
 * node on its (communication) stream.
 *
 * The communicator: in a single process, ncclCommInitAll over the run's
 * one device (one rank; the multi-device single-process communicator over
 * run.devices is the multi-device work's, docs/multi-gpu.md); in an MPI
 * job of several ranks whose pipeline has per-rank collectives,
 * ncclCommInitRank(nranks, id, rank) on every rank with the ncclUniqueId
 * rank 0 made and MPI broadcast (dr__mpi_share_nccl_id), and an abort
 * hook (dr__mpi_register_abort) that aborts it before the job ends. It
 * owns the communicator and the group table and nothing else; NCCL itself
 * is opened through nccl_api.h. */
#ifndef DAGRUN_BACKENDS_CUDA_NCCL_H
#define DAGRUN_BACKENDS_CUDA_NCCL_H

#include "backends/nccl_api.h"
#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

typedef struct {
  const DrNcclApi *api; /* NULL: the pipeline has no collective */
  DrNcclComm comm;      /* one process's communicator (ncclCommInitAll); NULL: none */
  DrNcclComm rank_comm; /* the MPI job's (ncclCommInitRank); NULL: none */
  gboolean failed;      /* a call failed: close aborts instead of destroying */
  gboolean ranks;       /* per-rank collectives use rank_comm */
  gint32 nranks, rank;  /* rank_comm's shape: 1 and 0 in a single process */
  gboolean hooked;      /* the abort hook is registered */
  /* group_len[i]: for the plan step i that starts a group, the number of
   * consecutive steps issued inside one ncclGroupStart/End (>= 2); 0 for
   * every other step. NULL without collectives. */
  guint32 *group_len;
  guint32 n_groups; /* groups of >= 2 collectives in the plan */
} DrCudaNccl;

/* When `plan`'s graph has collectives: opens NCCL (DR_ERROR_UNAVAILABLE,
 * saying where it looked, when it cannot), makes the communicator
 * (cudaSetDevice(device) must be in effect; across ranks this is
 * collective: every rank calls it in the same run) and finds the groups.
 * Nothing otherwise. Fails as DR_NCCL or dr__mpi_share_nccl_id do; `n`
 * is then half-built and dr__cuda_nccl_close releases it. */
gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrPlan *plan, int device, GError **error);
/* Releases the communicator: ncclCommDestroy, or ncclCommAbort after a
 * failed call (so nothing waits on a peer that will never come); removes
 * the abort hook. NULL-safe fields: tolerates a half-built `n`. */
void dr__cuda_nccl_close(DrCudaNccl *n);

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
 * FALSE (a call inside failed: its error stays the one reported). TRUE
 * when ok and the end succeeded. */
gboolean dr__cuda_nccl_group_end(DrCudaNccl *n, const char *node, gboolean ok, GError **error);

/* Enqueues collective node `v` on `st`, its buffers at `bases` (device
 * pointers). DR_ERROR_RUNTIME naming the node and call on failure. */
gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *graph, DrId v, void *const *bases, cudaStream_t st,
                             GError **error);

G_END_DECLS

#endif
