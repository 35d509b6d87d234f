/* cuda_api.c: the real CUDA runtime's entry in DrCudaApi, the swappable
 * table pointer, and the one error check every CUDA call goes through. */
#include "backends/cuda_api.h"

#include <cuda.h>
#include <string.h>

/* stamp.cu */
extern int dr__stamp_launch(unsigned long long *slot, cudaStream_t stream);
extern int dr__spare_launch(cudaStream_t stream);
extern int dr__words_launch(unsigned long long *const *dst, const unsigned long long *value, unsigned n,
                            cudaStream_t stream);
/* loopctl.cu */
extern int dr__cond_launch(cudaGraphConditionalHandle handle, const gint32 *cond, guint64 *trips,
                           gboolean count_always, cudaStream_t stream);
extern int dr__count_launch(cudaGraphConditionalHandle handle, guint64 *counter, const guint64 *limit,
                            guint64 *stamps, cudaStream_t stream);
extern int dr__trip_launch(guint64 *stamps, guint64 *ctl, const gint32 *guard, unsigned flags, gint64 trip,
                           guint64 skip, guint32 keep, cudaStream_t stream);

static int real_kernel_launch(const DrKernelDef *def, const DrKLaunch *l) { return def->launch(l); }

/* DrCudaApi.kernel_node_copy: the driver's calls, found once through the
 * runtime (CUDA 12's ABI of them: CUDA_KERNEL_NODE_PARAMS v2, which names
 * the function by CUfunction or CUkernel, any module's). */
typedef CUresult (*KernelNodeGet)(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *params);
typedef CUresult (*ExecKernelNodeSet)(CUgraphExec exec, CUgraphNode node,
                                      const CUDA_KERNEL_NODE_PARAMS *params);

static gpointer find_driver_calls(gpointer unused) {
  (void)unused;
  static gpointer calls[2];
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &calls[0], 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess ||
      cudaGetDriverEntryPointByVersion("cuGraphExecKernelNodeSetParams", &calls[1], 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  return calls;
}

static cudaError_t real_kernel_node_copy(cudaGraphExec_t exec, cudaGraphNode_t node, cudaGraphNode_t from) {
  static GOnce once = G_ONCE_INIT;
  gpointer *calls = g_once(&once, find_driver_calls, NULL);
  if (calls == NULL) return cudaErrorNotSupported;
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  if (((KernelNodeGet)calls[0])((CUgraphNode)from, &p) != CUDA_SUCCESS) return cudaErrorInvalidValue;
  return ((ExecKernelNodeSet)calls[1])((CUgraphExec)exec, (CUgraphNode)node, &p) == CUDA_SUCCESS
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

static cudaError_t real_kernel_node_params(const DrKernelDef *def, const DrKLaunch *l,
                                           struct cudaKernelNodeParams *p, DrKDescribed *store) {
  if (dr__k_describe(def, l, store) != 0) return cudaErrorNotSupported;
  memset(p, 0, sizeof *p);
  p->func = store->func;
  p->gridDim = (dim3){store->grid[0], store->grid[1], store->grid[2]};
  p->blockDim = (dim3){store->block[0], store->block[1], store->block[2]};
  p->sharedMemBytes = store->shared;
  p->kernelParams = store->params;
  return cudaSuccess;
}

/* cudaDeviceSynchronize and cudaGetLastError take no arguments; the table
 * keeps them like the rest. */
static const DrCudaApi real_api = {
#define DR_X(name, params, args) .name = name,
    DR_CUDA_API_LIST(DR_X)
#undef DR_X
        .cudaGetErrorName = cudaGetErrorName,
    .cudaGetErrorString = cudaGetErrorString,
    .kernel_launch = real_kernel_launch,
    .stamp_launch = dr__stamp_launch,
    .cudaEventQuery = cudaEventQuery,
    .cudaGraphExecUpdate = cudaGraphExecUpdate,
    .cudaStreamGetCaptureInfo = cudaStreamGetCaptureInfo,
    .cudaGraphGetNodes = cudaGraphGetNodes,
    .cudaGraphNodeGetDependencies = cudaGraphNodeGetDependencies,
    .cudaGraphNodeGetType = cudaGraphNodeGetType,
    .cudaGraphKernelNodeGetParams = cudaGraphKernelNodeGetParams,
    .kernel_node_copy = real_kernel_node_copy,
    .user_node_copy = real_kernel_node_copy,
    .spare_launch = dr__spare_launch,
    .words_launch = dr__words_launch,
    .cudaGraphNodeSetEnabled = cudaGraphNodeSetEnabled,
    .kernel_node_params = real_kernel_node_params,
    .cudaGraphKernelNodeSetParams = cudaGraphKernelNodeSetParams,
    .cudaGraphExecKernelNodeSetParams = cudaGraphExecKernelNodeSetParams,
    .cudaGraphDebugDotPrint = cudaGraphDebugDotPrint,
    .cudaPointerGetAttributes = cudaPointerGetAttributes,
    .cudaGraphExecMemcpyNodeSetParams1D = cudaGraphExecMemcpyNodeSetParams1D,
    .cudaGraphMemsetNodeGetParams = cudaGraphMemsetNodeGetParams,
    .cudaGraphExecMemsetNodeSetParams = cudaGraphExecMemsetNodeSetParams,
    .cudaMemPoolGetAttribute = cudaMemPoolGetAttribute,
    .cudaDeviceGetGraphMemAttribute = cudaDeviceGetGraphMemAttribute,
    .cudaDeviceSetGraphMemAttribute = cudaDeviceSetGraphMemAttribute,
    .cudaGraphConditionalHandleCreate = cudaGraphConditionalHandleCreate,
    .cudaGraphAddNode = cudaGraphAddNode,
    .cudaStreamBeginCaptureToGraph = cudaStreamBeginCaptureToGraph,
    .cudaStreamUpdateCaptureDependencies = cudaStreamUpdateCaptureDependencies,
    .cond_launch = dr__cond_launch,
    .count_launch = dr__count_launch,
    .trip_launch = dr__trip_launch,
    .cudaMemcpyBatchAsync = cudaMemcpyBatchAsync,
};

static const DrCudaApi *current = &real_api;

const DrCudaApi *dr_cuda_api(void) { return current; }
const DrCudaApi *dr_cuda_api_default(void) { return &real_api; }

const DrCudaApi *dr_cuda_api_set(const DrCudaApi *api) {
  const DrCudaApi *prev = current;
  current = api ? api : &real_api;
  return prev;
}

gboolean dr__cuda_check(cudaError_t rc, const char *call, DrCudaSite site, GError **error) {
  if (rc == cudaSuccess) return TRUE;
  /* Clear the (non-sticky) error so the cleanup that follows can run. */
  (void)current->cudaGetLastError();
  /* No device, no driver, or no such device ordinal: the backend is
   * unavailable (exit 69), not a failure while running. */
  int code = rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver || rc == cudaErrorInvalidDevice
                 ? DR_ERROR_UNAVAILABLE
                 : DR_ERROR_RUNTIME;
  g_autoptr(GString) where = g_string_new(NULL);
  if (site.node)
    g_string_append_printf(where, "node '%s'", site.node);
  else
    g_string_append(where, "setup");
  if (site.stream >= 0) g_string_append_printf(where, " (stream %" G_GINT64_FORMAT ")", site.stream);
  if (site.what) g_string_append_printf(where, ", %s", site.what);
  g_set_error(error, DR_ERROR, code, "%s: %s failed: %s (%s)", where->str, call,
              current->cudaGetErrorName(rc), current->cudaGetErrorString(rc));
  return FALSE;
}
