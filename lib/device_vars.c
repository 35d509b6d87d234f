/* device_vars.c: the values of the read-only expression variables
 * `device.NAME` (docs/format.md, "device variables"), which the library
 * installs as the parser's resolver (parser/expr.h) before every load. It
 * decides where the values come from; it does not parse.
 *
 * At load dagrun does not know yet which backend will run the pipeline, so
 * the process says it beforehand (dr_device_vars_select: the command line
 * passes its --backend and --device), as it does for its MPI rank. With
 * the host backend, or with no usable CUDA device, each variable has the
 * fixed value of the table below (an H200's figures, so a file expands on
 * the host backend as on the machine it was written for); otherwise the
 * CUDA device's value, read with cudaDeviceGetAttribute through DrCudaApi
 * on first use (the runtime's device queries make no context, so the
 * stream cap's CUDA_DEVICE_MAX_CONNECTIONS rule is unaffected) and kept
 * for the process. A pipeline that names no device.* asks CUDA nothing. */
#include "backends/cuda_api.h"
#include "lib/api_internal.h"
#include "parser/expr.h"

/* X(name, cudaDeviceAttr, host backend's value) */
#define DR_DEVICE_VAR_LIST(X)                                              \
  X(sm_count, cudaDevAttrMultiProcessorCount, 132)                         \
  X(clock_khz, cudaDevAttrClockRate, 1980000)                              \
  X(cc_major, cudaDevAttrComputeCapabilityMajor, 9)                        \
  X(cc_minor, cudaDevAttrComputeCapabilityMinor, 0)                        \
  X(warp_size, cudaDevAttrWarpSize, 32)                                    \
  X(max_threads_per_block, cudaDevAttrMaxThreadsPerBlock, 1024)            \
  X(max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 2048)      \
  X(smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 232448) \
  X(smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 233472)      \
  X(l2_bytes, cudaDevAttrL2CacheSize, 52428800)

enum {
#define X(n, a, v) VAR_##n,
  DR_DEVICE_VAR_LIST(X)
#undef X
      N_VARS
};

static const struct {
  const char *name;
  enum cudaDeviceAttr attr;
  gint64 host;
} vars[] = {
#define X(n, a, v) {#n, a, v},
    DR_DEVICE_VAR_LIST(X)
#undef X
};

/* Under `lock`: the selection and the values read for it. */
static GMutex lock;
static DrBackendKind backend = DR_BACKEND_AUTO;
static int ordinal;
static gboolean decided, use_cuda;
static gboolean have[N_VARS];
static gint64 value[N_VARS];

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
static gboolean resolve(const char *name, gsize len, gint64 *out, char **msg) {
  int i = -1;
  for (int k = 0; k < N_VARS; k++)
    if (strlen(vars[k].name) == len && strncmp(vars[k].name, name, len) == 0) i = k;
  if (i < 0) {
    GString *known = g_string_new(NULL);
    for (int k = 0; k < N_VARS; k++)
      g_string_append_printf(known, "%sdevice.%s", k ? ", " : "", vars[k].name);
    *msg = g_strdup_printf("unknown device variable 'device.%.*s' (the device variables: %s)", (int)len, name,
                           known->str);
    g_string_free(known, TRUE);
    return FALSE;
  }
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
    cudaError_t rc = dr_cuda_api()->cudaDeviceGetAttribute(&v, vars[i].attr, ordinal);
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
