/* gpu_forward.c: device code for api_gpu_test.c's user kernel without
 * nvcc in the test: its launch forwards to the built-in scale_f32's
 * launcher, with the same parameter order (x, alpha, y). Separate from
 * the test because kernels/registry.h and the public header both define
 * the kernel ABI types (tests/api/abi.h checks they agree). */
#include "kernels/registry.h"

int dr_test_scale_launch(const void *launch) {
  const DrKernelDef *def = dr_kernel_find("scale_f32");
  return def ? def->launch(launch) : 98; /* cudaErrorInvalidDeviceFunction */
}
