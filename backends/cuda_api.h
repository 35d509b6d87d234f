/* cuda_api.h: the one table through which the CUDA backends call the CUDA
 * runtime, and the one macro that turns a failed call into a GError.
 *
 * Every runtime call of the CUDA backend (backends/cuda/) goes through
 * DrCudaApi, so a fault-injection shim can swap the table (dr_cuda_api_set)
 * and fail the Nth call to prove every failure path releases everything.
 * Built-in kernel launches go through the table's `kernel_launch` entry
 * for the same reason. This file does not own any CUDA handle: the parts
 * of backends/cuda/ do (cuda/cuda.h). */
#ifndef DAGRUN_BACKENDS_CUDA_API_H
#define DAGRUN_BACKENDS_CUDA_API_H

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <glib.h>

#include "ir/graph.h"
#include "kernels/blas.h"
#include "kernels/registry.h"

G_BEGIN_DECLS

/* DrCudaApi.trip_launch's flags: close the open trip, open the next. */
#define DR_TRIP_CLOSE 1u
#define DR_TRIP_OPEN 2u

/* X(name, (parameter list), (argument names)): the runtime functions dagrun
 * calls, all of which return cudaError_t. The argument names let a shim
 * forward a call generically. */
/* clang-format off */
#define DR_CUDA_API_LIST(X)                                                                                                                      \
  X(cudaGetDeviceCount, (int *count), (count))                                                                                                   \
  X(cudaSetDevice, (int device), (device))                                                                                                       \
  X(cudaDeviceGetStreamPriorityRange, (int *least, int *greatest), (least, greatest))                                                            \
  X(cudaStreamCreateWithPriority, (cudaStream_t * stream, unsigned int flags, int priority), (stream, flags, priority))                          \
  X(cudaStreamDestroy, (cudaStream_t stream), (stream))                                                                                          \
  X(cudaStreamSynchronize, (cudaStream_t stream), (stream))                                                                                      \
  X(cudaEventCreateWithFlags, (cudaEvent_t * event, unsigned int flags), (event, flags))                                                         \
  X(cudaEventDestroy, (cudaEvent_t event), (event))                                                                                              \
  X(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream))                                                                  \
  X(cudaEventRecordWithFlags, (cudaEvent_t event, cudaStream_t stream, unsigned int flags), (event, stream, flags))                              \
  X(cudaEventSynchronize, (cudaEvent_t event), (event))                                                                                          \
  X(cudaEventElapsedTime, (float *ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end))                                                     \
  X(cudaStreamWaitEvent, (cudaStream_t stream, cudaEvent_t event, unsigned int flags), (stream, event, flags))                                   \
  X(cudaMalloc, (void **ptr, size_t size), (ptr, size))                                                                                          \
  X(cudaFree, (void *ptr), (ptr))                                                                                                                \
  X(cudaMallocHost, (void **ptr, size_t size), (ptr, size))                                                                                      \
  X(cudaFreeHost, (void *ptr), (ptr))                                                                                                            \
  X(cudaMallocAsync, (void **ptr, size_t size, cudaStream_t stream), (ptr, size, stream))                                                        \
  X(cudaFreeAsync, (void *ptr, cudaStream_t stream), (ptr, stream))                                                                              \
  X(cudaDeviceGetDefaultMemPool, (cudaMemPool_t * pool, int device), (pool, device))                                                             \
  X(cudaMemPoolSetAttribute, (cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value), (pool, attr, value))                                  \
  X(cudaMemcpyAsync, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream), (dst, src, count, kind, stream)) \
  X(cudaMemcpyPeerAsync, (void *dst, int dst_device, const void *src, int src_device, size_t count, cudaStream_t stream), (dst, dst_device, src, src_device, count, stream)) \
  X(cudaDeviceCanAccessPeer, (int *can, int device, int peer), (can, device, peer))                                                           \
  X(cudaDeviceEnablePeerAccess, (int peer, unsigned int flags), (peer, flags))                                                                  \
  X(cudaMemsetAsync, (void *ptr, int value, size_t count, cudaStream_t stream), (ptr, value, count, stream))                                     \
  X(cudaLaunchHostFunc, (cudaStream_t stream, cudaHostFn_t fn, void *data), (stream, fn, data))                                                  \
  X(cudaStreamBeginCapture, (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))                                              \
  X(cudaStreamEndCapture, (cudaStream_t stream, cudaGraph_t * graph), (stream, graph))                                                           \
  X(cudaGraphInstantiate, (cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags), (exec, graph, flags))                           \
  X(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream))                                                                \
  X(cudaGraphExecDestroy, (cudaGraphExec_t exec), (exec))                                                                                        \
  X(cudaGraphDestroy, (cudaGraph_t graph), (graph))                                                                                              \
  X(cudaDeviceGetAttribute, (int *value, enum cudaDeviceAttr attr, int device), (value, attr, device))                                            \
  X(cudaLibraryLoadData, (cudaLibrary_t * lib, const void *code, enum cudaJitOption *jit_opts, void **jit_vals, unsigned int n_jit, enum cudaLibraryOption *lib_opts, void **lib_vals, unsigned int n_lib), (lib, code, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib)) \
  X(cudaLibraryGetKernel, (cudaKernel_t * kernel, cudaLibrary_t lib, const char *name), (kernel, lib, name))                                     \
  X(cudaLibraryUnload, (cudaLibrary_t lib), (lib))                                                                                               \
  X(cudaLaunchKernel, (const void *func, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream), (func, grid, block, args, shared, stream)) \
  X(cudaDeviceSynchronize, (void), ())                                                                                                           \
  X(cudaProfilerStart, (void), ())                                                                                                               \
  X(cudaProfilerStop, (void), ())                                                                                                                \
  X(cudaGetLastError, (void), ())
/* clang-format on */

typedef struct {
#define DR_X(name, params, args) cudaError_t(*name) params;
  DR_CUDA_API_LIST(DR_X)
#undef DR_X
  const char *(*cudaGetErrorName)(cudaError_t error);
  const char *(*cudaGetErrorString)(cudaError_t error);
  /* Enqueues a built-in kernel: def->launch(l), a cudaError_t as int. */
  int (*kernel_launch)(const DrKernelDef *def, const DrKLaunch *l);
  /* Enqueues the stamp kernel (stamp.cu): one thread writes %globaltimer
   * (ns) into *slot, device memory, on `stream`; a cudaError_t as int.
   * Outside the X-list so that tables written before it existed still
   * compile: a table that leaves it NULL gets event timing where stamps
   * were asked (cuda/timing.c). */
  int (*stamp_launch)(unsigned long long *slot, cudaStream_t stream);
  /* cudaEventQuery, optional: while a run's NCCL communicators live, the
   * wait for an iteration polls it between NCCL's asynchronous error
   * checks (cuda/nccl.c, dr__cuda_nccl_wait) instead of blocking in
   * cudaEventSynchronize; NULL: one error check, then the blocking wait. */
  cudaError_t (*cudaEventQuery)(cudaEvent_t event);
  /* cudaGraphExecUpdate, outside the X-list for the same reason: NULL
   * makes dr__cuda_graph_update (cuda/graph.c) re-instantiate instead. */
  cudaError_t (*cudaGraphExecUpdate)(cudaGraphExec_t exec, cudaGraph_t graph,
                                     cudaGraphExecUpdateResultInfo *info);
  /* Graph mode's per-node argument updates (cuda/graph.c), optional too:
   * with any of them NULL, a changed argument takes the whole-graph path
   * (re-capture and cudaGraphExecUpdate). */
  cudaError_t (*cudaStreamGetCaptureInfo)(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                          unsigned long long *id, cudaGraph_t *graph,
                                          const cudaGraphNode_t **deps, const cudaGraphEdgeData **edge_data,
                                          size_t *n_deps);
  cudaError_t (*cudaGraphGetNodes)(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *n_nodes);
  cudaError_t (*cudaGraphNodeGetDependencies)(cudaGraphNode_t node, cudaGraphNode_t *deps,
                                              cudaGraphEdgeData *edge_data, size_t *n_deps);
  cudaError_t (*cudaGraphNodeGetType)(cudaGraphNode_t node, enum cudaGraphNodeType *type);
  cudaError_t (*cudaGraphKernelNodeGetParams)(cudaGraphNode_t node, struct cudaKernelNodeParams *params);
  cudaError_t (*cudaGraphKernelNodeSetParams)(cudaGraphNode_t node,
                                              const struct cudaKernelNodeParams *params);
  cudaError_t (*cudaGraphExecKernelNodeSetParams)(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                  const struct cudaKernelNodeParams *params);
  /* Sets kernel node `node` of `exec` to the launch of kernel node `from`
   * (of another graph) through the driver (cuGraphKernelNodeGetParams,
   * cuGraphExecKernelNodeSetParams), which takes kernels this runtime did
   * not register: cuBLAS's, whose nodes cudaGraphKernelNodeGetParams
   * refuses (cudaErrorInvalidDeviceFunction, seen on the H200). Optional:
   * NULL, such a node takes the whole-graph path. */
  cudaError_t (*kernel_node_copy)(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNode_t from);
  /* The same copy for a user kernel's node (a kernel of a library that
   * user_kernels.c loaded, launched by cudaLaunchKernel): graph mode sets
   * a user kernel whose arguments changed from a one-node capture of its
   * launch (cuda/graph.c). Optional: NULL, such a node cannot be set in
   * place and its change captures the iteration again. */
  cudaError_t (*user_node_copy)(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNode_t from);
  /* Spare slots (cuda/graph.c): a varying library call is captured with
   * a kernel node of no work after it (spare_launch: stamp.cu's spare
   * kernel on `stream`, a cudaError_t as int), kept disabled
   * (cudaGraphNodeSetEnabled) until a new shape's launch makes one more
   * node than the one before (cuBLAS's split-K reduction), which is then
   * set into it. Optional: with either NULL no spare is captured, and
   * such a launch captures the iteration again. */
  int (*spare_launch)(cudaStream_t stream);
  cudaError_t (*cudaGraphNodeSetEnabled)(cudaGraphExec_t exec, cudaGraphNode_t node, unsigned int enabled);
  /* Run-time parameters kept in device memory (cuda/devwords.c, and
   * parameter buffers): writes *dst[i] = value[i] (8-byte words of device
   * memory) for i < n in stream order on `stream` (stamp.cu's word store:
   * the values travel as kernel arguments, so the arrays may change when
   * it returns). A cudaError_t as int. Optional: NULL, graph mode keeps no
   * count in device memory and sets each changed node instead, and
   * parameter buffers are written by copies. */
  int (*words_launch)(unsigned long long *const *dst, const unsigned long long *value, unsigned n,
                      cudaStream_t stream);
  /* Fills *params (its arguments in *store) with the one kernel launch
   * built-in `def` would make for `l`, making no CUDA call
   * (dr__k_describe), so that graph mode sets a node without capturing
   * its launch. cudaErrorNotSupported: this built-in's launcher cannot
   * be described (several launches, cuBLAS). Optional: NULL, every node
   * set goes through a one-node capture. */
  cudaError_t (*kernel_node_params)(const DrKernelDef *def, const DrKLaunch *l,
                                    struct cudaKernelNodeParams *params, DrKDescribed *store);
  /* External memory (dr_runner_bind_buffer), optional too: without
   * cudaPointerGetAttributes a bound pointer is not checked; without the
   * memcpy/memset entries a bound buffer's copy or memset node takes the
   * whole-graph path. */
  cudaError_t (*cudaPointerGetAttributes)(struct cudaPointerAttributes *attr, const void *ptr);
  cudaError_t (*cudaGraphExecMemcpyNodeSetParams1D)(cudaGraphExec_t exec, cudaGraphNode_t node, void *dst,
                                                    const void *src, size_t count, enum cudaMemcpyKind kind);
  cudaError_t (*cudaGraphMemsetNodeGetParams)(cudaGraphNode_t node, struct cudaMemsetParams *params);
  cudaError_t (*cudaGraphExecMemsetNodeSetParams)(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                  const struct cudaMemsetParams *params);
  /* --dot-cuda-graph (cuda_graph.c), optional: NULL makes that option fail
   * with a clear error instead of writing nothing. */
  cudaError_t (*cudaGraphDebugDotPrint)(cudaGraph_t graph, const char *path, unsigned int flags);
  /* The measured high-water mark of stream-ordered memory (cuda/memory.c),
   * optional: with cudaMemPoolGetAttribute NULL the streams mode's report
   * says "not measured", with either graph-memory entry NULL graph mode's.
   * The pool's mark is reset through cudaMemPoolSetAttribute (X-list). */
  cudaError_t (*cudaMemPoolGetAttribute)(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
  cudaError_t (*cudaDeviceGetGraphMemAttribute)(int device, enum cudaGraphMemAttributeType attr, void *value);
  cudaError_t (*cudaDeviceSetGraphMemAttribute)(int device, enum cudaGraphMemAttributeType attr, void *value);
  /* CUDA conditional graph nodes (graph mode's while: and if:,
   * cuda/condgraph.c), optional: with any of the four NULL graph mode
   * refuses while: and if: at open (exit 69), as it did before they were
   * built. cudaStreamGetCaptureInfo (above) is needed too. */
  cudaError_t (*cudaGraphConditionalHandleCreate)(cudaGraphConditionalHandle *handle, cudaGraph_t graph,
                                                  unsigned int default_value, unsigned int flags);
  cudaError_t (*cudaGraphAddNode)(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                  const cudaGraphEdgeData *edge_data, size_t n_deps,
                                  struct cudaGraphNodeParams *params);
  cudaError_t (*cudaStreamBeginCaptureToGraph)(cudaStream_t stream, cudaGraph_t graph,
                                               const cudaGraphNode_t *deps,
                                               const cudaGraphEdgeData *edge_data, size_t n_deps,
                                               enum cudaStreamCaptureMode mode);
  cudaError_t (*cudaStreamUpdateCaptureDependencies)(cudaStream_t stream, cudaGraphNode_t *deps,
                                                     const cudaGraphEdgeData *edge_data, size_t n_deps,
                                                     unsigned int flags);
  /* Enqueues the condition kernel (loopctl.cu) on `stream`, one thread:
   * v = cond ? (cond[0] != 0) : 1; then *trips += 1 when `trips` (device
   * memory) is non-NULL and (count_always or v); then
   * cudaGraphSetConditional(handle, v). Only inside a graph whose
   * conditional node owns `handle`. A cudaError_t as int. */
  int (*cond_launch)(cudaGraphConditionalHandle handle, const gint32 *cond, guint64 *trips,
                     gboolean count_always, cudaStream_t stream);
  /* Enqueues the counter kernel (loopctl.cu) on `stream`, one thread:
   * i = ++counter[0]; stamps[i] = %globaltimer (ns) when `stamps` is
   * non-NULL and i <= limit[0] (stamps[0] is the caller's: the start);
   * then cudaGraphSetConditional(handle, i < limit[0]): a WHILE node
   * whose body ends with it makes limit[0] trips (counter reset to 0
   * before the node). The limit is device memory, read at every trip, so
   * that it can change without a new graph (run.device_loop's iteration
   * count, a parameter's). A cudaError_t as int. */
  int (*count_launch)(cudaGraphConditionalHandle handle, guint64 *counter, const guint64 *limit,
                      guint64 *stamps, cudaStream_t stream);
  /* Enqueues the trip stamp kernel (loopctl.cu) on `stream`, one thread,
   * for graph mode's trip spans (cuda/trips.c), over one loop's device
   * words: `stamps` [2 * 2 * keep] (a start and an end per position) and
   * `ctl` [4 + 2 * 2 * keep]: ctl[0] the trips closed (seen), ctl[1] the
   * open trip's position + 1 (0: none), ctl[2] the trips of the loop's
   * current run, then seq[2 * keep] (a position's trip sequence number +
   * 1; 0: none) and trip[2 * keep]. With `flags` & DR_TRIP_CLOSE and a
   * trip open: its end stamp, seen and the run's trips + 1, none open.
   * Then with & DR_TRIP_OPEN and `guard` NULL or *guard non-zero: seen +=
   * `skip`, the trip s = seen opens at position s < keep ? s : keep + (s
   * - keep) % keep with its start stamp, seq s + 1 and trip `trip` (< 0:
   * the run's trips). %globaltimer (ns), one read for both. Only in a
   * graph (a stream capture); a cudaError_t as int. NULL: graph mode's
   * trips have no spans. */
  int (*trip_launch)(guint64 *stamps, guint64 *ctl, const gint32 *guard, unsigned flags, gint64 trip,
                     guint64 skip, guint32 keep, cudaStream_t stream);
  /* Streams mode's copy batches (cuda/batch.c), optional: NULL makes
   * every copy one cudaMemcpyAsync, as before batches. CUDA 13's
   * signature (12.8's had a failIdx before the stream). */
  cudaError_t (*cudaMemcpyBatchAsync)(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                      size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs,
                                      size_t n_attrs, cudaStream_t stream);
  /* The cuBLAS contexts of the gemm built-ins (kernels/blas.h), optional:
   * NULL makes the backend call kernels/blas.c itself (the real cuBLAS). A
   * table that fakes the runtime gives its own, so that gemm nodes run
   * without cuBLAS (tests/fault/fake_cuda.h). */
  DrKBlas *(*blas_new)(void *workspace, uint64_t workspace_bytes, char *err);
  int (*blas_bind)(DrKBlas *blas, void *stream, char *err);
  void (*blas_free)(DrKBlas *blas);
  const char *(*blas_last_error)(const DrKBlas *blas);
} DrCudaApi;

/* The table in use (the real runtime unless a shim was set). */
const DrCudaApi *dr_cuda_api(void);
/* The real runtime's table. */
const DrCudaApi *dr_cuda_api_default(void);
/* Makes `api` (NULL: the default) the table in use; returns the previous
 * one. Not thread-safe: call it between runs. `api` must outlive its use. */
const DrCudaApi *dr_cuda_api_set(const DrCudaApi *api);

/* Where a CUDA call was made, for the error message. */
typedef struct {
  const char *node; /* node id, or NULL for setup work */
  gint64 stream;    /* plan stream, or -1 */
  const char *what; /* extra context ("buffer 'x'"), or NULL */
} DrCudaSite;

/* Turns `rc` from `call` into a GError (DR_ERROR_RUNTIME, or
 * DR_ERROR_UNAVAILABLE for cudaErrorNoDevice, InsufficientDriver and
 * InvalidDevice) that names
 * the site, the call and the CUDA error, and clears the runtime's error
 * state with cudaGetLastError. Returns TRUE when rc is cudaSuccess. */
gboolean dr__cuda_check(cudaError_t rc, const char *call, DrCudaSite site, GError **error);

/* THE macro: calls the runtime function `fn` through the table with the
 * remaining arguments and checks it at site `site` (a DrCudaSite);
 * evaluates to TRUE on success, FALSE with *error set. Expects a
 * `GError **error` in scope. */
#define DR_CUDA(site, fn, ...) dr__cuda_check(dr_cuda_api()->fn(__VA_ARGS__), #fn, (site), error)

/* DR_CUDA for the per-node calls of an iteration's issue: the table
 * fetched once (`api`), the site (an expression) built only when the call
 * failed. Expects `cudaError_t rc_` and `GError **error` in scope. */
#define DR_CUDA_HOT(api, site_expr, fn, ...) \
  (G_LIKELY((rc_ = (api)->fn(__VA_ARGS__)) == cudaSuccess) || dr__cuda_check(rc_, #fn, (site_expr), error))

#define DR_SITE_SETUP(what) ((DrCudaSite){NULL, -1, (what)})
#define DR_SITE_NODE(id, stream) ((DrCudaSite){(id), (gint64)(stream), NULL})

G_END_DECLS

#endif
