/* launch.cuh: what every CUDA launcher of the built-ins shares: turning a
 * DrKLaunch into a one-dimensional launch, trimming a grid larger than the
 * work, refusing arguments that fail the kernel's check, and returning the
 * launch's cudaError_t as int. CUDA C++, included by the .cu files only.
 *
 * The built-ins are one-dimensional: a shape [x,y,z] launches x*y*z blocks
 * of x*y*z threads along x (so a user's 2-D shape never runs the same
 * elements twice). */
#ifndef DAGRUN_KERNELS_LAUNCH_CUH
#define DAGRUN_KERNELS_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "kernels/impl.h"

namespace drk {

/* Threads per block of the launch (x*y*z), at least 1. */
static inline unsigned block_threads(const DrKLaunch *l) {
  uint64_t t = (uint64_t)l->block[0] * (l->block[1] ? l->block[1] : 1) * (l->block[2] ? l->block[2] : 1);
  if (t == 0) t = 1;
  return t > 0xffffffffu ? 0xffffffffu : (unsigned)t; /* CUDA refuses > 1024 */
}

/* Blocks of the launch (x*y*z), trimmed to the `needed` blocks that have
 * work, at least 1 and at most 2^31-1. */
static inline unsigned grid_blocks(const DrKLaunch *l, uint64_t needed) {
  uint64_t g =
      (uint64_t)(l->grid[0] ? l->grid[0] : 1) * (l->grid[1] ? l->grid[1] : 1) * (l->grid[2] ? l->grid[2] : 1);
  if (needed < g) g = needed;
  if (g < 1) g = 1;
  return g > 0x7fffffffu ? 0x7fffffffu : (unsigned)g;
}

static inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static inline cudaStream_t stream_of(const DrKLaunch *l) { return (cudaStream_t)l->stream; }

/* The error of the launch just made (and clears CUDA's last error). */
static inline int launched(void) { return (int)cudaGetLastError(); }

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* The first statement of every built-in kernel: when launched with
 * programmatic dependent launch (DrKLaunch.pdl) the grid may start before
 * the previous kernel on its stream has finished; this waits until that
 * grid has completed and its memory operations are visible. A no-op for a
 * normal launch. griddepcontrol exists from sm_90 on; for older
 * architectures it compiles to nothing, and launch() never asks for PDL on
 * their devices, so every grid there starts after its predecessor. */
__device__ __forceinline__ void wait_prior_grid(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Whether the current device honours programmatic dependent launch: compute
 * capability 9.0 (Hopper) and newer. Below that wait_prior_grid compiles to
 * nothing, so launch() must not let a grid start early there; it launches
 * normally instead, which has the same meaning (the stream serializes). The
 * answer is cached per device (relaxed atomics: launchers run on several
 * host threads); a failed query counts as "no". */
static inline bool pdl_supported(void) {
  static signed char cache[64]; /* 0 unknown, 1 yes, -1 no */
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  signed char c = dev >= 0 && dev < 64 ? __atomic_load_n(&cache[dev], __ATOMIC_RELAXED) : 0;
  if (c == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      cudaGetLastError();
      major = 0;
    }
    c = major >= 9 ? 1 : -1;
    if (dev >= 0 && dev < 64) __atomic_store_n(&cache[dev], c, __ATOMIC_RELAXED);
  }
  return c > 0;
}

/* While set (dr__k_describe, describe.cu, on this thread), launch()
 * records its launch here instead of making it. */
struct Describing {
  DrKDescribed *out;
  int launches;
  size_t used;
  template <typename T>
  bool put(const T &v) {
    size_t a = alignof(T);
    used = (used + a - 1) / a * a;
    if (used + sizeof(T) > sizeof out->store || out->n_params >= 32) return false;
    memcpy(out->store + used, &v, sizeof(T));
    out->params[out->n_params++] = out->store + used;
    used += sizeof(T);
    return true;
  }
  template <typename... T>
  int take(void *func, dim3 grid, dim3 block, size_t shared, T... vals) {
    if (++launches > 1) return (int)cudaErrorNotSupported;
    out->func = func;
    out->grid[0] = grid.x, out->grid[1] = grid.y, out->grid[2] = grid.z;
    out->block[0] = block.x, out->block[1] = block.y, out->block[2] = block.z;
    out->shared = (unsigned)shared;
    out->n_params = 0;
    used = 0;
    bool ok = true;
    ((ok = ok && put(vals)), ...);
    return ok ? 0 : (int)cudaErrorNotSupported;
  }
};
inline thread_local Describing *describing = nullptr;

/* Launches `kernel` like <<<grid, block, shared, stream>>>(args...), with
 * programmatic stream serialization when `pdl` and the device supports it
 * (pdl_supported; the kernel must begin with wait_prior_grid). Returns the
 * launch's error as int. */
template <typename... Params, typename... Args>
static inline int launch(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                         cudaStream_t stream, Args... args) {
  if (describing != nullptr) return describing->take((void *)kernel, grid, block, shared, ((Params)args)...);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = shared;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  if (pdl && pdl_supported()) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  cudaError_t rc = cudaLaunchKernelEx(&cfg, kernel, ((Params)args)...);
  if (rc != cudaSuccess) cudaGetLastError(); /* clear it, like launched() */
  return (int)rc;
}

/* The launch's timing stamp (DrKLaunch.stamp), typed. */
static inline unsigned long long *stamp_of(const DrKLaunch *l) { return (unsigned long long *)l->stamp; }

/* The GPU's nanosecond clock. */
__device__ __forceinline__ unsigned long long globaltimer_ns(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* The last statement of every built-in kernel: once the whole block is
 * done, its first thread raises *stamp to now, so that after the grid
 * *stamp holds the time its last block finished (DR_KFLAG_STAMPS). One
 * atomic per block; `stamp` is uniform, so the barrier is reached by all
 * threads or none. Kernels calling this must not return early. */
__device__ __forceinline__ void stamp_block_end(unsigned long long *stamp) {
  if (stamp == nullptr) return;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) atomicMax(stamp, globaltimer_ns());
}

/* A launch's guard (DrKLaunch.guard, guard_runs; DR_KFLAG_GUARD), passed
 * to its kernels by value. A guarded copy of a while body (graph mode's
 * unroll, backends/cuda/condgraph.c) is given the loop's condition: each
 * of its kernels tests it right after wait_prior_grid and, when it is 0,
 * returns before any work and before its stamp (every thread alike: the
 * word is uniform and no kernel of the copy writes it, so no barrier is
 * left half-reached). The node that set the condition counts the copy's
 * run in `runs` (its last kernel, one thread). */
struct Guard {
  const int32_t *at;
  unsigned long long *runs;
  /* Whether the launch must do nothing (the loop has stopped). */
  __device__ __forceinline__ bool stops() const {
    return at != nullptr && *(const volatile int32_t *)at == 0;
  }
  /* Counts the run, once per grid; call in the launch's last kernel. */
  __device__ __forceinline__ void ran() const {
    if (runs != nullptr && blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
      atomicAdd(runs, 1ull);
  }
};

static inline Guard guard_of(const DrKLaunch *l) {
  return Guard{(const int32_t *)l->guard, (unsigned long long *)l->guard_runs};
}

}  // namespace drk

/* Returns cudaErrorInvalidValue from the launcher when `fn` refuses the
 * arguments (validation should have caught it before). */
#define DRK_CHECK(fn, l)                                                            \
  do {                                                                              \
    char err_[DR_KERR_SIZE];                                                        \
    if ((fn)((l)->counts, (l)->args, err_) != 0) return (int)cudaErrorInvalidValue; \
  } while (0)

#endif
