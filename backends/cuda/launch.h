/* launch.h: internal to backends/cuda/: the CUDA backend's launches and
 * their binding (launch.c, user_kernels.c).
 *
 * This part owns what launching a kernel or host node needs: each built-in
 * kernel node's launch bound once (DrKernelCall, with its stream, cuBLAS
 * context, scratch, stamp slot and programmatic-dependent-launch choice),
 * the patches that re-point its arguments into stream-ordered buffers, the
 * host calls, per-node scratch, per-stream cuBLAS contexts, and the loaded
 * user kernels. It owns no stream (streams.h) and no buffer (memory.h); it
 * does not decide when a node runs (issue.c). */
#ifndef DAGRUN_BACKENDS_CUDA_LAUNCH_H
#define DAGRUN_BACKENDS_CUDA_LAUNCH_H

#include "backends/backend.h"
#include "backends/cuda/devwords.h"
#include "backends/cuda/memory.h"
#include "kernels/blas.h"

G_BEGIN_DECLS

/* A pointer argument into a stream-ordered buffer: its value is
 * bases[buffer] + offset, known only once the buffer's alloc node ran. */
typedef struct {
  DrKValue *slot;
  DrId buffer;
  guint64 offset; /* bytes */
} DrKPatch;

/* A built-in kernel node's launch, bound (DrKernelCall), with its stream's
 * cuBLAS context and its scratch filled in, and the range of
 * DrCudaLaunch.patches it needs before each launch. */
typedef struct {
  DrKernelCall call;
  guint32 patch_first, patch_count;
} DrBoundKernel;

typedef struct {
  const DrPlan *plan; /* borrowed */
  const DrGraph *graph;
  guint32 n_nodes, n_streams;
  DrHostCall *hcalls; /* [n_nodes]: cudaLaunchHostFunc's user data */
  void **scratch;     /* [n_nodes]: cudaMalloc'd kernel scratch, or NULL */
  DrKBlas **blas;     /* [n_streams]: cuBLAS context of streams running gemm */
  void **blas_ws;     /* [n_streams]: blas[s]'s workspace (cudaMalloc through DR_CUDA) */
  /* Built-in kernel nodes bound once (dr__cuda_launch_bind) so that
   * issuing one is a launch and nothing else: `kcalls` [n_kcalls] holds
   * their launches, complete but for the pointers into stream-ordered
   * (alloc'd) buffers, which `patches` [n_patches] refresh from the bases
   * just before each launch; node_kcall [n_nodes] indexes kcalls, or is
   * DR_NONE (not a built-in kernel). */
  DrBoundKernel *kcalls;
  guint32 n_kcalls;
  guint32 *node_kcall;
  DrKPatch *patches;
  guint32 n_patches;
  guint32 n_kernels;
  cudaLibrary_t *user_lib; /* [n_kernels]: loaded user kernels (user_kernels.c) */
  cudaKernel_t *user_fn;   /* [n_kernels]: their entry points */
  guint32 *host_fns;       /* [n_host_fns]: nodes calling a host function with declared arguments */
  guint32 n_host_fns;
  /* Borrowed, or NULL: graph mode's parameters in device memory. Each
   * node that reads its counts there is bound at its largest counts with
   * counts_dev at its words (dr__cuda_devwords_widen). */
  const DrCudaDevWords *words;
} DrCudaLaunch;

/* How a binding launches the built-ins (the mode's and timing's choice). */
typedef struct {
  /* Self-stamping built-ins write their end stamp into stamps[node]
   * (DrKLaunch.stamp); NULL: none does. */
  unsigned long long *stamps;
  /* Built-ins may launch early (programmatic dependent launch) where the
   * stream allows it (see dr__cuda_launch_bind). */
  gboolean early;
} DrCudaBindHow;

/* The built-in behind kernel node `id`, or NULL (user kernels, which fail
 * later, at binding, with the message dr__kernel_call_bind gives). */
const DrKernelDef *dr__cuda_kernel_def(const DrGraph *g, DrId id);

/* Node `id` is a kernel whose launch writes its own end stamp
 * (DR_KFLAG_STAMPS): eager stamps timing needs no stamp launch after it. */
gboolean dr__cuda_self_stamping(const DrGraph *g, DrId id);

/* Whether built-in node v's scalar arguments as the graph holds them now
 * are those its launch was bound with (its counts and pointers aside):
 * then a change of it changed only its slices. FALSE for a node that is
 * no bound built-in or does not bind. */
gboolean dr__cuda_launch_scalars_same(const DrCudaLaunch *l, const DrCudaMemory *m, DrId v);

/* Prepares `l` for `plan`; no CUDA call. */
void dr__cuda_launch_open(DrCudaLaunch *l, const DrPlan *plan);

/* Before the timed region and before any capture: binds each host node to
 * `m`'s pointers (writing to `host_output`), makes each built-in's scratch
 * and its stream's cuBLAS context (on `s`'s streams; also the stream of
 * each loop node whose body holds a gemm, as the body's trips are issued
 * there), and loads every user kernel a node or a body node uses for
 * `s`'s device. Fails as DR_CUDA does, with cuBLAS's message, or as user
 * kernel loading does (user_kernels.c). */
gboolean dr__cuda_launch_setup(DrCudaLaunch *l, const DrCudaStreams *s, const DrCudaMemory *m,
                               FILE *host_output, GError **error);

/* Binds every built-in kernel node's launch (dr__kernel_call_bind against
 * `m`'s bases, whose whole-run pointers are fixed from setup on) with its
 * stream, cuBLAS context and scratch, as `how` says, and records each
 * pointer argument into a stream-ordered buffer as a patch. Programmatic
 * dependent launch (`how->early`, unless DAGRUN_PDL=0) goes to each
 * built-in whose stream's previous operation in the iteration is another
 * built-in's kernel with nothing in between: the node waits on no other
 * stream, the previous node records no completion event and is not a
 * cuBLAS call. Replaces an earlier binding. Fails like dr__kernel_call_bind
 * (DR_ERROR_RUNTIME naming the node). */
gboolean dr__cuda_launch_bind(DrCudaLaunch *l, const DrCudaStreams *s, const DrCudaMemory *m,
                              const DrCudaBindHow *how, GError **error);

/* Binds the built-ins among `nodes` [n] again with the graph's arguments
 * as they are now (a change of scalars or slices, not of buffers' bases),
 * each keeping its stream, cuBLAS context, scratch, stamp, early launch
 * and guard: O(n), where dr__cuda_launch_bind is O(nodes). Every one is
 * checked in a scratch call first, so a failure (dr__kernel_call_bind's)
 * changes nothing. Nodes that are no bound built-in are skipped. */
gboolean dr__cuda_launch_rebind(DrCudaLaunch *l, const DrCudaMemory *m, const DrId *nodes, guint32 n,
                                GError **error);

/* Checks that every bound built-in binds again with the graph's arguments
 * as they are now, in a scratch call (so that a failure keeps the binding
 * whole). */
gboolean dr__cuda_launch_probe(const DrCudaLaunch *l, const DrCudaMemory *m, GError **error);

/* Reports the failed launch of bound kernel `k` (not the hot path). */
gboolean dr__cuda_launch_failed(const DrBoundKernel *k, int rc, DrCudaSite site, GError **error);

/* Enqueues bound built-in `k` on its stream: the hot path of eager issue,
 * a pointer refresh per stream-ordered argument and the launch, nothing
 * allocated or formatted. */
static inline gboolean dr__cuda_launch_kernel(const DrCudaLaunch *l, const DrCudaApi *api, void *const *bases,
                                              DrBoundKernel *k, DrCudaSite site, GError **error) {
  for (guint32 j = k->patch_first; j < k->patch_first + k->patch_count; j++) {
    const DrKPatch *pt = &l->patches[j];
    pt->slot->ptr = (char *)bases[pt->buffer] + pt->offset;
  }
  int rc = api->kernel_launch(k->call.def, &k->call.launch);
  return G_LIKELY(rc == 0) || dr__cuda_launch_failed(k, rc, site, error);
}

/* Binds every host node again to `m`'s pointers as they are now (a
 * buffer was bound to external memory), writing where it wrote before.
 * The host calls keep their addresses, so host nodes already enqueued or
 * captured read the new pointers when they run. No CUDA call. */
void dr__cuda_launch_rebind_hosts(DrCudaLaunch *l, const DrCudaMemory *m);

/* Enqueues host node `id`'s function on `st` (cudaLaunchHostFunc). */
gboolean dr__cuda_launch_host(DrCudaLaunch *l, DrId id, cudaStream_t st, DrCudaSite site, GError **error);

/* kernels/blas.h's calls through the table's blas_* entries where it has
 * them (a fake runtime's), else kernels/blas.c's own. */
DrKBlas *dr__cuda_blas_new(void *ws, guint64 bytes, char *err);
int dr__cuda_blas_bind(DrKBlas *blas, cudaStream_t stream, char *err);
void dr__cuda_blas_free(DrKBlas *blas);
const char *dr__cuda_blas_last_error(const DrKBlas *blas);

/* Makes *blas, a cuBLAS context over the workspace *ws (cudaMalloc'd
 * here when NULL, DR_KBLAS_DEFAULT_WORKSPACE bytes), bound to `stream`,
 * unless *blas is already made; the caller owns both (dr_kblas_free, then
 * cudaFree). Before any capture, on the current device. Fails as DR_CUDA
 * does, or with cuBLAS's message naming `site`'s node. */
gboolean dr__cuda_blas_make(DrKBlas **blas, void **ws, cudaStream_t stream, DrCudaSite site, GError **error);

/* Releases cuBLAS contexts, their workspaces, scratch and user kernels. */
void dr__cuda_launch_close(DrCudaLaunch *l);

/* ---- user kernels (user_kernels.c) ------------------------------------ */

/* Loads every user kernel a node uses, loop bodies' nodes included
 * (NVRTC for `source:`, through the cache), into l->user_lib/user_fn, for
 * device `device`'s compute capability. */
gboolean dr__user_kernels_load(DrCudaLaunch *l, int device, GError **error);
/* Unloads them (NULL-safe fields). */
void dr__user_kernels_release(DrCudaLaunch *l);
/* Launches user kernel node `id` of `g` (the plan's graph, or one of its
 * loop bodies: the kernel ids are the same) on `st` with its arguments
 * bound now against `bases` (cudaLaunchKernel); in a capture, one kernel
 * node. Fails as DR_CUDA does, at `site`, naming the kernel. */
gboolean dr__user_kernel_launch(const DrCudaLaunch *l, const DrGraph *g, void *const *bases, DrId id,
                                cudaStream_t st, DrCudaSite site, GError **error);

/* FALSE with DR_ERROR_RUNTIME naming the node and its message when a
 * host function with declared arguments failed (returned nonzero on
 * CUDA's callback thread, which cannot stop the stream): checked after
 * each iteration has completed. O(such nodes). */
gboolean dr__cuda_launch_host_failed(const DrCudaLaunch *l, GError **error);

G_END_DECLS

#endif
