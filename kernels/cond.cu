/* cond.cu: the CUDA launcher of `set_while_gt_f32`, the built-in that sets a
 * loop's or conditional's condition from device data (docs/format.md,
 * "Loops and conditionals"): cond[0] = (x[0] > tol), 1 or 0, one thread.
 * It writes the condition buffer only; turning that buffer into a CUDA
 * conditional handle's value (cudaGraphSetConditional) is graph mode's
 * business, not this kernel's. */
#include "kernels/launch.cuh"

/* C linkage, named after the built-in, so that profilers show it. */
extern "C" __global__ void dr_set_while_gt_f32(const float *x, float tol, int32_t *cond,
                                               unsigned long long *stamp, drk::Guard guard) {
  drk::wait_prior_grid();
  if (guard.stops()) return;
  if (threadIdx.x == 0 && blockIdx.x == 0) cond[0] = x[0] > tol ? 1 : 0;
  drk::stamp_block_end(stamp);
  guard.ran();
}

extern "C" int dr__k_set_while_gt_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_cond, l);
  return drk::launch(l->pdl != 0, dr_set_while_gt_f32, 1, 1, l->shared, drk::stream_of(l),
                     (const float *)l->args[0].ptr, (float)l->args[1].f, (int32_t *)l->args[2].ptr,
                     drk::stamp_of(l), drk::guard_of(l));
}
