/* loopctl.cu: the device-side controls of graph mode's CUDA
 * conditional nodes (cuda/condgraph.c): the condition kernel, which turns
 * a loop's condition buffer (i32, element 0, non-zero is true) into the
 * value of a conditional handle (cudaGraphSetConditional) and counts the
 * loop's trips, and the counter kernel of a counted WHILE (run.device_loop,
 * a trip count from a parameter), which also stamps each trip's end. They
 * live here, not in kernels/, because they are no built-in a pipeline can
 * name: they take a handle, which only a graph being built has. Reached
 * only through DrCudaApi's cond_launch, count_launch and trip_launch
 * entries (cuda_api.c), so fake runtimes can stand in for them. Each runs
 * one thread, so no two calls of cudaGraphSetConditional race. */
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__global__ void cond_kernel(cudaGraphConditionalHandle handle, const int32_t *cond, unsigned long long *trips,
                            int count_always) {
  unsigned int v = cond == nullptr ? 1u : (cond[0] != 0 ? 1u : 0u);
  if (trips != nullptr && (count_always || v)) trips[0] += 1;
  cudaGraphSetConditional(handle, v);
}

__global__ void count_kernel(cudaGraphConditionalHandle handle, unsigned long long *counter,
                             const unsigned long long *limit_at, unsigned long long *stamps) {
  unsigned long long i = counter[0] + 1, limit = limit_at[0];
  counter[0] = i;
  if (stamps != nullptr && i <= limit) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    stamps[i] = t;
  }
  cudaGraphSetConditional(handle, i < limit ? 1u : 0u);
}

/* See DrCudaApi.trip_launch (cuda_api.h) for the words. */
__global__ void trip_kernel(unsigned long long *stamps, unsigned long long *ctl, const int32_t *guard,
                            unsigned flags, long long trip, unsigned long long skip, unsigned keep) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  if ((flags & 1u) && ctl[1] != 0) {
    stamps[2 * (ctl[1] - 1) + 1] = t;
    ctl[0] += 1;
    ctl[2] += 1;
    ctl[1] = 0;
  }
  if ((flags & 2u) && (guard == nullptr || guard[0] != 0)) {
    unsigned long long s = ctl[0] + skip;
    unsigned long long pos = s < keep ? s : keep + (s - keep) % keep;
    ctl[0] = s;
    stamps[2 * pos] = t;
    ctl[4 + pos] = s + 1;
    ctl[4 + 2 * keep + pos] = trip >= 0 ? (unsigned long long)trip : ctl[2];
    ctl[1] = pos + 1;
  }
}

}  // namespace

/* See DrCudaApi.cond_launch (cuda_api.h). */
extern "C" int dr__cond_launch(cudaGraphConditionalHandle handle, const int32_t *cond, uint64_t *trips,
                               int count_always, cudaStream_t stream) {
  cond_kernel<<<1, 1, 0, stream>>>(handle, cond, (unsigned long long *)trips, count_always);
  return (int)cudaGetLastError();
}

/* See DrCudaApi.count_launch (cuda_api.h). */
extern "C" int dr__count_launch(cudaGraphConditionalHandle handle, uint64_t *counter, const uint64_t *limit,
                                uint64_t *stamps, cudaStream_t stream) {
  count_kernel<<<1, 1, 0, stream>>>(handle, (unsigned long long *)counter, (const unsigned long long *)limit,
                                    (unsigned long long *)stamps);
  return (int)cudaGetLastError();
}

/* See DrCudaApi.trip_launch (cuda_api.h). */
extern "C" int dr__trip_launch(uint64_t *stamps, uint64_t *ctl, const int32_t *guard, unsigned flags,
                               int64_t trip, uint64_t skip, uint32_t keep, cudaStream_t stream) {
  trip_kernel<<<1, 1, 0, stream>>>((unsigned long long *)stamps, (unsigned long long *)ctl, guard, flags,
                                   (long long)trip, (unsigned long long)skip, keep);
  return (int)cudaGetLastError();
}
