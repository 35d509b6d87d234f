/* cuda_state.h: internal to backends/: the CUDA backend's state, shared by
 * the eager streams executor (cuda.c) and graph mode (cuda_graph.c).
 *
 * Ownership: this struct is the one owner of every CUDA handle it holds;
 * a NULL handle means "not created", so cuda.c's close can release a state
 * that failed anywhere in open or setup with no other bookkeeping. */
#ifndef DAGRUN_BACKENDS_CUDA_STATE_H
#define DAGRUN_BACKENDS_CUDA_STATE_H

#include "backends/backend.h"
#include "backends/cuda_api.h"
#include "kernels/blas.h"

G_BEGIN_DECLS

/* A pointer argument into a stream-ordered buffer: its value is
 * bases[buffer] + offset, known only once the buffer's alloc node ran. */
typedef struct {
  DrKValue *slot;
  DrId buffer;
  guint64 offset; /* bytes */
} DrKPatch;

/* A built-in kernel node's launch, bound at setup (DrKernelCall), with its
 * stream's cuBLAS context and its scratch filled in, and the range of
 * DrBackend.patches it needs before each launch. */
typedef struct {
  DrKernelCall call;
  guint32 patch_first, patch_count;
} DrBoundKernel;

/* Iterations the CUDA backend keeps in flight at most. */
#define DR_CUDA_MAX_IN_FLIGHT 2u

struct DrBackend {
  const DrPlan *plan; /* borrowed */
  const DrGraph *graph;
  DrRunOptions opts;
  guint32 n_nodes, n_buffers, n_streams;

  cudaStream_t origin;    /* fork/join point; never the legacy stream */
  cudaStream_t *streams;  /* [n_streams] */
  cudaEvent_t *node_done; /* [n_nodes]: for needs_event nodes, no timing */
  /* The timing in effect: opts.node_timing, except that stamps become
   * events when the CUDA table has no stamp_launch (an older shim). */
  DrTimingMode timing;
  /* Iterations in flight (see dr__cuda_backend's launch/finish): the host
   * issues iteration i+1 while the device runs iteration i, so the launch
   * latency of an eager iteration hides behind the one before it. Each of
   * the `depth` slots (iteration % depth) has its own timing events and
   * stamp copy, read when the iteration is finished. depth is 1 in graph
   * mode (see cuda_open). */
  guint32 depth;
  guint32 slot;         /* the slot of the iteration being issued */
  guint32 in_flight;    /* launched and not yet finished */
  cudaEvent_t *t_start; /* [depth * n_nodes]: timing events, when timing == EVENTS */
  cudaEvent_t *t_end;   /* [depth * n_nodes] */
  /* timing == STAMPS: %globaltimer stamps, [n_nodes + 1]: slot v is node
   * v's end, slot n_nodes the iteration's start; device memory, and its
   * pinned copies [depth * (n_nodes + 1)], one per slot, filled once per
   * timed iteration after the join (in origin's order, before the next
   * iteration's fork, so one device array serves every slot). */
  unsigned long long *stamps, *stamps_host;
  /* Graph mode stamps off the critical path (stamp_aside): node v's stamp
   * runs on its plan stream's side stream after v (stamp_ready[v]), so the
   * next node on v's stream does not wait for it; every side stream joins
   * origin at the end (stamp_join). Eager mode stamps inline. */
  gboolean stamp_aside;
  cudaStream_t *stamp_streams; /* [n_streams] */
  cudaEvent_t *stamp_ready;    /* [n_nodes], no timing */
  cudaEvent_t *stamp_join;     /* [n_streams], no timing */
  cudaEvent_t fork;            /* no timing: origin -> every stream */
  cudaEvent_t *join;           /* [n_streams], no timing: every stream -> origin */
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
  cudaEvent_t iter_start[DR_CUDA_MAX_IN_FLIGHT]; /* timing, on origin, per slot */
  cudaEvent_t iter_end[DR_CUDA_MAX_IN_FLIGHT];
  cudaEvent_t iter_done[DR_CUDA_MAX_IN_FLIGHT]; /* no timing: after the stamps' copy */

  void **bases;         /* [n_buffers]: device or pinned host memory */
  gboolean *pinned;     /* [n_buffers]: bases[i] is cudaMallocHost memory */
  gboolean *async_live; /* [n_buffers]: bases[i] came from cudaMallocAsync */
  DrHostCall *hcalls;   /* [n_nodes]: cudaLaunchHostFunc's user data */
  void **scratch;       /* [n_nodes]: cudaMalloc'd kernel scratch, or NULL */
  /* Built-in kernel nodes bound once (bind_kernels in cuda.c) so that
   * issuing one is a launch and nothing else: `kcalls` [n_kcalls] holds
   * their launches, complete but for the pointers into stream-ordered
   * (alloc'd) buffers, which `patches` [n_patches] refresh from `bases`
   * just before each launch; node_kcall [n_nodes] indexes kcalls, or is
   * DR_NONE (not a built-in kernel). Rebound at every capture, so that
   * dr__cuda_graph_update sees scalars changed since setup. */
  DrBoundKernel *kcalls;
  guint32 n_kcalls;
  guint32 *node_kcall;
  DrKPatch *patches;
  guint32 n_patches;
  /* Nothing this backend enqueued is still in flight: the last iteration,
   * read-back or device drain finished without an error. close drains the
   * device only when this is FALSE (after a failure). */
  gboolean idle;
  DrKBlas **blas; /* [n_streams]: cuBLAS context of streams running gemm */
  void **blas_ws; /* [n_streams]: blas[s]'s workspace (cudaMalloc through DR_CUDA) */
  guint32 n_kernels;
  cudaLibrary_t *user_lib; /* [n_kernels]: loaded user kernels (user_kernels.c) */
  cudaKernel_t *user_fn;   /* [n_kernels]: their entry points */

  /* Graph mode: the captured iteration and its executable. */
  gboolean graph_mode;
  cudaGraph_t cuda_graph;
  cudaGraphExec_t cuda_graph_exec;
  /* [n_nodes] while capturing, then for the executable's graph: node v's
   * one kernel node in cuda_graph when v is a built-in kernel whose launch
   * made exactly that node, else NULL. NULL altogether when the table has
   * no capture queries, or after a whole-graph update (the executable's
   * nodes are then no longer cuda_graph's). See dr__cuda_graph_update. */
  cudaGraphNode_t *graph_node;
  /* The node whose work broke the last capture (DR_NONE: none did). */
  DrId uncapturable;
};

/* Issues one whole iteration from `b->origin`: records the fork, lets every
 * plan stream wait on it, issues every step in plan order with its waits,
 * joins every stream back into origin. With `capturing`, timing events are
 * recorded as external event nodes so they survive capture. */
gboolean dr__cuda_issue_iteration(DrBackend *b, gboolean capturing, GError **error);

/* User kernels (user_kernels.c): load every one a node uses (NVRTC for
 * `source:`), release them (NULL-safe), launch node `id` on `st`. */
gboolean dr__user_kernels_load(DrBackend *b, GError **error);
void dr__user_kernels_release(DrBackend *b);
gboolean dr__user_kernel_launch(DrBackend *b, DrId id, cudaStream_t st, DrCudaSite site, GError **error);

/* Graph mode (cuda_graph.c): capture one iteration and instantiate it. */
gboolean dr__cuda_graph_capture(DrBackend *b, GError **error);
/* Launches the instantiated graph on origin (no wait). */
gboolean dr__cuda_graph_launch(DrBackend *b, GError **error);
/* Makes the executable run the graph's current arguments (a library user
 * changed scalar arguments of nodes since setup): re-captures one
 * iteration, then tries cudaGraphExecUpdate (about 3x cheaper than
 * instantiating, GPU-NOTES.md) and falls back to a fresh instantiation
 * when the table has no update entry or the runtime refuses the update
 * (a changed topology, memory nodes). Sets *how to "updated" or
 * "re-instantiated". The backend must be in graph mode, set up and idle
 * (no iteration in flight). On failure (DR_ERROR_RUNTIME: the capture or
 * the instantiation failed) the previous executable and graph are kept. */
gboolean dr__cuda_graph_update(DrBackend *b, const char **how, GError **error);
/* The same when only the scalar arguments of `nodes` [n] changed: each is
 * re-launched alone into a one-node capture and its parameters set on the
 * executable in place (cudaGraphExecKernelNodeSetParams; *how
 * "updated-nodes"), with no re-capture of the iteration; a node that
 * cannot (not mapped to one kernel node, a pointer into a stream-ordered
 * buffer, a refused set) sends the whole change down
 * dr__cuda_graph_update. */
gboolean dr__cuda_graph_update_nodes(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                     GError **error);
/* While capturing, before node v's kernel launch on `st`: what the next
 * node captured on `st` will depend on (a copy, *n of them, for the
 * caller to free; NULL and *n = G_MAXSIZE when it cannot be asked). */
cudaGraphNode_t *dr__capture_before(cudaStream_t st, gsize *n);
/* While capturing, after node v's work on `st` (`ok`: it was issued
 * without an error), with one query of the stream's capture state:
 *  - when the work broke the capture (it made a call capture does not
 *    allow: a synchronous copy, an allocation, a synchronization; a
 *    library kernel's launcher might), v is to blame: b->uncapturable = v
 *    and the error names it and says why (any error of the work itself
 *    follows in parentheses); FALSE;
 *  - else FALSE when !ok;
 *  - else, given what the stream depended on before a built-in's launch
 *    (`before`, n_before; G_MAXSIZE: not asked), maps v in b->graph_node
 *    to the one kernel node the launch added, if it added exactly one;
 *    TRUE. */
gboolean dr__capture_after(DrBackend *b, DrId v, cudaStream_t st, gboolean ok, const cudaGraphNode_t *before,
                           gsize n_before, GError **error);
/* Binds every built-in kernel node's launch (cuda.c). */
gboolean dr__cuda_bind_kernels(DrBackend *b, GError **error);
/* Destroys the executable and the captured graph (NULL-safe fields). */
void dr__cuda_graph_release(DrBackend *b);

G_END_DECLS

#endif
