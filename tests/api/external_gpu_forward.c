/* external_gpu_forward.c: the "caller's own kernels" of
 * external_gpu_test.c, without nvcc in the test: each launches a built-in's
 * launcher (kernels/registry.h) directly on the caller's stream, the way a
 * framework's kernel would run there. Separate from the test because
 * kernels/registry.h and the public header both define the kernel ABI
 * types (tests/api/abi.h checks they agree). */
#include <cuda_runtime_api.h>
#include <string.h>

#include "kernels/registry.h"

/* Launches built-in `name` with `args` (its parameters in order; `counts`
 * alike) on `stream` at its default shape; a cudaError_t as int. */
static int launch(const char *name, const DrKValue *args, const uint64_t *counts, void *stream) {
  const DrKernelDef *def = dr_kernel_find(name);
  if (def == NULL) return 98; /* cudaErrorInvalidDeviceFunction */
  DrKLaunch l;
  memset(&l, 0, sizeof l);
  l.args = args;
  l.counts = counts;
  l.stream = stream;
  dr_kernel_default_shape(def, counts, args, l.grid, l.block);
  return def->launch(&l);
}

/* y = a * x, n floats (scale_f32: x, alpha, y). */
int dr_test_ext_scale(float *y, const float *x, double a, uint64_t n, void *stream) {
  DrKValue args[3] = {{.ptr = (void *)x}, {.f = a}, {.ptr = y}};
  uint64_t counts[3] = {n, 0, n};
  return launch("scale_f32", args, counts, stream);
}

/* Busy-waits `ns` nanoseconds on the device (spin: ns). */
int dr_test_ext_spin(int64_t ns, void *stream) {
  DrKValue args[1] = {{.i = ns}};
  uint64_t counts[1] = {0};
  return launch("spin", args, counts, stream);
}
