/* nccl.h: internal to backends/cuda/: the CUDA backend's NCCL part
 * (nccl.c): the communicator of a run whose pipeline has collectives, and
 * the issue of one collective node on its (communication) stream.
 *
 * One process drives one device on this backend today, so the
 * communicator is ncclCommInitAll over that one device (one rank); the
 * multi-device single-process path (a communicator over run.devices, one
 * launch per device inside ncclGroupStart/End) is described in
 * docs/multi-gpu.md and not built. It owns the communicator and nothing
 * else; NCCL itself is opened through nccl_api.h. */
#ifndef DAGRUN_BACKENDS_CUDA_NCCL_H
#define DAGRUN_BACKENDS_CUDA_NCCL_H

#include "backends/nccl_api.h"
#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct {
  const DrNcclApi *api; /* NULL: the pipeline has no collective */
  DrNcclComm comm;      /* NULL: not made (yet) */
  gboolean failed;      /* a call failed: close aborts instead of destroying */
} DrCudaNccl;

/* When `graph` has collectives: opens NCCL (DR_ERROR_UNAVAILABLE, saying
 * where it looked, when it cannot) and makes a one-rank communicator on
 * `device` (cudaSetDevice(device) must be in effect). Nothing otherwise.
 * Fails as DR_NCCL does; `n` is then half-built and dr__cuda_nccl_close
 * releases it. */
gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrGraph *graph, int device, GError **error);
/* Releases the communicator: ncclCommDestroy, or ncclCommAbort after a
 * failed call (so nothing waits on a peer that will never come). */
void dr__cuda_nccl_close(DrCudaNccl *n);
/* Enqueues collective node `v` on `st`, its buffers at `bases` (device
 * pointers). DR_ERROR_RUNTIME naming the node and call on failure. */
gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *graph, DrId v, void *const *bases, cudaStream_t st,
                             GError **error);

G_END_DECLS

#endif
