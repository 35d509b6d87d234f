/* loops.h: loops and conditionals (ir/loops.h) on the CUDA backend, as
 * host-driven loops (loops.c). */
#ifndef DAGRUN_BACKENDS_CUDA_LOOPS_H
#define DAGRUN_BACKENDS_CUDA_LOOPS_H

#include "backends/cuda/memory.h"

G_BEGIN_DECLS

typedef struct {
  gint32 *cond_host; /* cudaMallocHost'd: a condition read back; NULL: none needed */
  guint64 *trips;    /* [top-level loops]: the trips of each at its last issue */
  /* const DrNode * -> DrKernelCall *: each body kernel's launch, bound
   * again at every issue, in place (a node never runs beside itself), and
   * kept until close, as a capture may refer to it. */
  GHashTable *calls;
} DrCudaLoops;

/* At open, before any CUDA call: what this build cannot run. Graph mode
 * captures `repeat:` loops unrolled (no condition between the copies) and
 * refuses `while:` and `if:` (no conditional graph nodes yet), and
 * run.device_loop; every mode refuses gemm, user kernels and kernels
 * registered through the C library inside a body (they need per-node
 * resources the launch part binds to top-level nodes only). FALSE with
 * DR_ERROR_UNAVAILABLE naming the node (the key). */
gboolean dr__cuda_loops_check(const DrPlan *plan, DrMode mode, GError **error);

/* Setup: the pinned word a condition is read back into and the trip
 * counts, when the graph has loops. */
gboolean dr__cuda_loops_setup(DrCudaLoops *l, const DrGraph *g, GError **error);

/* Enqueues loop node `v` of `g` on `st`: each trip is the body's nodes in
 * file order on `st` (one stream: file order implies every dependency of
 * the body); a while reads its condition back after each trip (a copy to
 * the pinned word and a stream synchronisation), an if before choosing a
 * body. Built-ins are bound against `m`'s bases as they are now (so
 * stream-ordered buffers' current pointers). Fails as DR_CUDA does,
 * naming the body node. Records the loop's trips (a top-level loop of
 * the plan's graph: `g` is it). */
gboolean dr__cuda_loop_issue(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                             DrId v, cudaStream_t st, GError **error);

/* Releases the pinned word (NULL-safe fields). */
void dr__cuda_loops_close(DrCudaLoops *l);

G_END_DECLS

#endif
