/* cuda_api.c: the real CUDA runtime's entry in DrCudaApi, the swappable
 * table pointer, and the one error check every CUDA call goes through. */
#include "backends/cuda_api.h"

/* stamp.cu */
extern int dr__stamp_launch(unsigned long long *slot, cudaStream_t stream);
/* loopctl.cu */
extern int dr__cond_launch(cudaGraphConditionalHandle handle, const gint32 *cond, guint64 *trips,
                           gboolean count_always, cudaStream_t stream);
extern int dr__count_launch(cudaGraphConditionalHandle handle, guint64 *counter, const guint64 *limit,
                            guint64 *stamps, cudaStream_t stream);

static int real_kernel_launch(const DrKernelDef *def, const DrKLaunch *l) { return def->launch(l); }

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
