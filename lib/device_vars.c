/* device_vars.c: the values of the read-only expression variables
 * `device.NAME` (docs/format.md, "device variables"), which the library
 * installs as the parser's resolver (parser/expr.h) before every load. It
 * decides where the values come from; it does not parse.
 *
 * At load dagrun does not know yet which backend will run the pipeline, so
 * the process says it beforehand (dr_device_vars_select: the command line
 * passes its --backend and --device), as it does for its MPI rank. With
 * the host backend, or with no usable CUDA device, each variable has the
 * fixed value of parser/expr.h's list (an H200's figures, so a file
 * expands on the host backend as on the machine it was written for),
 * which is also what loads outside the library see; otherwise the
 * CUDA device's value, read with cudaDeviceGetAttribute through DrCudaApi
 * on first use (the runtime's device queries make no context, so the
 * stream cap's CUDA_DEVICE_MAX_CONNECTIONS rule is unaffected) and kept
 * for the process. A pipeline that names no device.* asks CUDA nothing. */
#include "backends/cuda_api.h"
#include "lib/api_internal.h"
#include "parser/expr.h"

/* parser/expr.h's list names each attribute by its number: check them. */
#define DR_X(n, a, v) G_STATIC_ASSERT(a == (int)DR_CUDA_ATTR_##n);
#define DR_CUDA_ATTR_sm_count cudaDevAttrMultiProcessorCount
#define DR_CUDA_ATTR_clock_khz cudaDevAttrClockRate
#define DR_CUDA_ATTR_cc_major cudaDevAttrComputeCapabilityMajor
#define DR_CUDA_ATTR_cc_minor cudaDevAttrComputeCapabilityMinor
#define DR_CUDA_ATTR_warp_size cudaDevAttrWarpSize
#define DR_CUDA_ATTR_max_threads_per_block cudaDevAttrMaxThreadsPerBlock
#define DR_CUDA_ATTR_max_threads_per_sm cudaDevAttrMaxThreadsPerMultiProcessor
#define DR_CUDA_ATTR_smem_per_block_optin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define DR_CUDA_ATTR_smem_per_sm cudaDevAttrMaxSharedMemoryPerMultiprocessor
#define DR_CUDA_ATTR_l2_bytes cudaDevAttrL2CacheSize
DR_DEVICE_VAR_LIST(DR_X)
#undef DR_X

static const struct {
  const char *name;
  int attr;
  gint64 host;
} vars[] = {
#define DR_X(n, a, v) {#n, a, v},
    DR_DEVICE_VAR_LIST(DR_X)
#undef DR_X
};

/* Under `lock`: the selection and the values read for it. */
static GMutex lock;
static DrBackendKind backend = DR_BACKEND_AUTO;
static int ordinal;
static gboolean decided, use_cuda;
static gboolean have[DR_N_DEVICE_VARS];
static gint64 value[DR_N_DEVICE_VARS];

void dr_device_vars_select(DrBackendKind kind, int device) {
  g_return_if_fail(kind < DR_N_BACKENDS && device >= 0);
  g_mutex_lock(&lock);
  if (kind != backend || device != ordinal) {
    backend = kind;
    ordinal = device;
    decided = FALSE;
    memset(have, 0, sizeof have);
  }
  g_mutex_unlock(&lock);
}

/* The parser's resolver (DrDeviceVarFn). */
static gboolean resolve(DrDeviceVar i, gint64 *out, char **msg) {
  g_mutex_lock(&lock);
  if (!decided) {
    g_autofree char *why = NULL;
    use_cuda = backend != DR_BACKEND_HOST && dr__cuda_available(&why);
    decided = TRUE;
  }
  gboolean ok = TRUE;
  if (!use_cuda) {
    *out = vars[i].host;
  } else if (have[i]) {
    *out = value[i];
  } else {
    int v = 0;
    cudaError_t rc = dr_cuda_api()->cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)vars[i].attr, ordinal);
    if (rc == cudaSuccess) {
      have[i] = TRUE;
      *out = value[i] = v;
    } else {
      (void)dr_cuda_api()->cudaGetLastError();
      *msg = g_strdup_printf("device.%s: cudaDeviceGetAttribute on device %d: %s", vars[i].name, ordinal,
                             dr_cuda_api()->cudaGetErrorName(rc));
      ok = FALSE;
    }
  }
  g_mutex_unlock(&lock);
  return ok;
}

void dr__device_vars_install(void) { dr__expr_set_device_vars(resolve); }
