/* stamp.cu: the stamp kernel of --timing=stamps: one thread that writes
 * the GPU's nanosecond clock (%globaltimer) into one slot of a device
 * array. The CUDA backend enqueues it on a node's stream right after the
 * node, so the slot receives the time the node's work completed (see
 * DR_TIMING_LIST in run.h). It is an ordinary kernel launch, so stream
 * capture turns it into a kernel node. Reached only through DrCudaApi's
 * stamp_launch entry (cuda_api.c), so fake runtimes can stand in for it.
 * The spare kernel beside it (spare_launch) does nothing at all. */
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void stamp_kernel(unsigned long long *slot) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *slot = t;
}

/* Does nothing: graph mode's spare slot after a library call (graph.c,
 * "spare slots"), a kernel node that a later launch of more nodes is set
 * into and that is disabled while it is not needed. */
__global__ void spare_kernel(void) {}

}  // namespace

/* Enqueues the stamp kernel (1 block of 1 thread) writing `slot` on
 * `stream`. Returns the launch's cudaError_t as an int. */
extern "C" int dr__stamp_launch(unsigned long long *slot, cudaStream_t stream) {
  stamp_kernel<<<1, 1, 0, stream>>>(slot);
  return (int)cudaGetLastError();
}

/* Enqueues the spare kernel (1 block of 1 thread, no work) on `stream`.
 * Returns the launch's cudaError_t as an int. */
extern "C" int dr__spare_launch(cudaStream_t stream) {
  spare_kernel<<<1, 1, 0, stream>>>();
  return (int)cudaGetLastError();
}
