/* spin.cu: the CUDA launcher of `spin`, a kernel that does nothing for a
 * given time: each thread busy-waits `ns` nanoseconds on %globaltimer (the
 * GPU's nanosecond clock, updated every few tens of ns on Hopper). It exists
 * to make overlap and scheduling visible in tests and benchmarks: by
 * default one block of one thread, so hundreds can run side by side; a
 * bigger launch shape occupies more of the GPU for the same time. */
#include "kernels/launch.cuh"

/* C linkage, named after the built-in, so that profilers show `dr_spin`. */
extern "C" __global__ void dr_spin(uint64_t ns, unsigned long long *stamp, drk::Guard guard) {
  drk::wait_prior_grid();
  if (guard.stops()) return;
  uint64_t start = drk::globaltimer_ns();
  while (drk::globaltimer_ns() - start < ns) {
  }
  drk::stamp_block_end(stamp);
  guard.ran();
}

extern "C" int dr__k_spin_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_spin, l);
  unsigned bt = drk::block_threads(l);
  unsigned g = drk::grid_blocks(l, 0x7fffffffu);
  return drk::launch(l->pdl != 0, dr_spin, g, bt, l->shared, drk::stream_of(l), (uint64_t)l->args[0].i,
                     drk::stamp_of(l), drk::guard_of(l));
}
