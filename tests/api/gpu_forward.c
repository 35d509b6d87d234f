/* gpu_forward.c: device code for api_gpu_test.c's user kernel without
 * nvcc in the test: its launch forwards to the built-in scale_f32's
 * launcher, with the same parameter order (x, alpha, y). Separate from
 * the test because kernels/registry.h and the public header both define
 * the kernel ABI types (tests/api/abi.h checks they agree). */
#include <cuda_runtime_api.h>

#include "kernels/registry.h"

int dr_test_scale_launch(const void *launch) {
  const DrKernelDef *def = dr_kernel_find("scale_f32");
  return def ? def->launch(launch) : 98; /* cudaErrorInvalidDeviceFunction */
}

/* The same, after synchronizing its stream first: a launcher that capture
 * cannot take, since synchronizing a capturing stream invalidates the
 * capture. Its error is ignored, as careless launchers do. */
int dr_test_sync_scale_launch(const void *launch) {
  const DrKLaunch *l = launch;
  (void)cudaStreamSynchronize((cudaStream_t)l->stream);
  (void)cudaGetLastError();
  return dr_test_scale_launch(launch);
}
