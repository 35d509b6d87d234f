/* issue.h: internal to backends/cuda/: one iteration's issue, shared by
 * both modes, and streams mode's operations (issue.c). */
#ifndef DAGRUN_BACKENDS_CUDA_ISSUE_H
#define DAGRUN_BACKENDS_CUDA_ISSUE_H

#include "backends/backend.h"
#include "backends/cuda_api.h"

G_BEGIN_DECLS

/* What a capture asks of the issue walk (graph.c; NULL: an eager issue).
 * With it, timing events are recorded as external event nodes so that
 * they survive capture. */
typedef struct {
  /* Before node v's built-in kernel launch, copy or memset on `st`: what the next node
   * captured on `st` will depend on (a copy, *n of them, for the walk to
   * free; NULL and *n = G_MAXSIZE when it is not asked). */
  cudaGraphNode_t *(*before)(DrBackend *b, cudaStream_t st, gsize *n);
  /* After node v's work on `st` (`ok`: it was issued without an error),
   * given `before` (n_before of them; G_MAXSIZE: not asked): FALSE with
   * `error` set when the work broke the capture or !ok. */
  gboolean (*after)(DrBackend *b, DrId v, cudaStream_t st, gboolean ok, const cudaGraphNode_t *before,
                    gsize n_before, GError **error);
} DrCudaCapture;

/* Issues one whole iteration from origin: the start stamp, the fork (every
 * stream that needs it waits on origin), every step in plan order (its
 * waits, timing events, the work, its stamp, its completion event), the
 * join of every stream (and of the stamps' side streams) back into origin.
 * The work goes to the part that owns it: memory.c (copy, memset, alloc,
 * free), launch.c (kernels, host functions). `capture`: the walk is being
 * captured (graph.c). */
gboolean dr__cuda_issue_iteration(DrBackend *b, const DrCudaCapture *capture, GError **error);

/* Binds every built-in kernel launch (dr__cuda_launch_bind) the way the
 * mode in effect and the timing ask: self-stamping built-ins write their
 * own stamp and may launch early (PDL) only where the mode allows
 * (streams), stamps only with stamps timing, PDL not with events. */
gboolean dr__cuda_bind(DrBackend *b, GError **error);

G_END_DECLS

#endif
