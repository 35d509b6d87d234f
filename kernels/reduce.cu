/* reduce.cu: the CUDA launchers of the reductions: reduce_sum_f32,
 * reduce_sum_f64 and checksum_u8.
 *
 * reduce_sum is deterministic: no floating-point atomics. Pass 1 runs G
 * blocks (the launch's grid trimmed to the work, at most
 * DR_REDUCE_MAX_BLOCKS); each thread adds its grid-stride share in double
 * (f32 through float4 when x is 16-byte aligned), each block combines its
 * threads with a fixed shared-memory tree, and writes one partial to the
 * node's scratch. Pass 2, one block of 256 threads, adds the G partials the
 * same way and rounds once. So the bits depend only on n, the launch shape
 * and x's alignment, never on timing. Cost: one read of x, two launches.
 * Without scratch from the backend (DrKLaunch.scratch NULL) the partials
 * are borrowed with cudaMallocAsync/cudaFreeAsync on the node's stream.
 *
 * checksum_u8 adds 64-bit integer hashes of (offset, byte) pairs; integer
 * addition is associative, so it uses one atomicAdd per warp and is exact
 * on any launch shape. y is zeroed first with cudaMemsetAsync (a memset node
 * under stream capture). */
#include "kernels/launch.cuh"

namespace {

constexpr unsigned kPass2Threads = 256;

/* Adds the blockDim.x values of `sh` into sh[0] in a fixed order (any
 * blockDim: the first step folds the part above the largest power of two).
 * All threads of the block must call it. */
__device__ double block_tree(double *sh, double v) {
  unsigned t = threadIdx.x, n = blockDim.x;
  sh[t] = v;
  __syncthreads();
  unsigned half = 1;
  while (half * 2 < n) half *= 2;
  for (; half > 0; half >>= 1) {
    if (t < half && t + half < n) sh[t] += sh[t + half];
    __syncthreads();
  }
  return sh[0];
}

template <class T>
__device__ __forceinline__ void reduce_pass1(const T *x, uint64_t n, bool vec, double *partials,
                                             drk::Guard guard) {
  drk::wait_prior_grid();
  if (guard.stops()) return;
  extern __shared__ double sh[];
  uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t done = 0;
  double s = 0.0;
  if constexpr (sizeof(T) == 4) {
    if (vec) {
      uint64_t n4 = n / 4;
      for (uint64_t v = tid; v < n4; v += stride) {
        float4 a = ((const float4 *)x)[v];
        s += (double)a.x;
        s += (double)a.y;
        s += (double)a.z;
        s += (double)a.w;
      }
      done = n4 * 4;
    }
  }
  for (uint64_t i = done + tid; i < n; i += stride) s += (double)x[i];
  double total = block_tree(sh, s);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <class T>
__device__ __forceinline__ void reduce_pass2(const double *partials, unsigned n, T *y,
                                             unsigned long long *stamp, drk::Guard guard) {
  __shared__ double sh[kPass2Threads];
  drk::wait_prior_grid(); /* launched normally: a no-op */
  if (guard.stops()) return;
  double s = 0.0;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) s += partials[i];
  double total = block_tree(sh, s);
  if (threadIdx.x == 0) y[0] = (T)total;
  drk::stamp_block_end(stamp); /* pass 2 ends the node */
  guard.ran();
}

/* A reduction's two kernels (DRK_REDUCE_KERNELS below). */
template <class T>
struct ReduceKernels {
  void (*pass1)(const T *, uint64_t, bool, double *, drk::Guard);
  void (*pass2)(const double *, unsigned, T *, unsigned long long *, drk::Guard);
};

template <class T>
int reduce_launch(const DrKLaunch *l, ReduceKernels<T> k) {
  DRK_CHECK(dr__kcheck_reduce, l);
  const T *x = (const T *)l->args[0].ptr;
  T *y = (T *)l->args[1].ptr;
  uint64_t n = l->counts[0];
  bool vec = sizeof(T) == 4 && drk::aligned16(x);
  uint64_t threads = vec ? n / 4 : n;
  unsigned bt = drk::block_threads(l);
  unsigned g = drk::grid_blocks(l, drk::ceil_div(threads > 0 ? threads : 1, bt));
  if (g > DR_REDUCE_MAX_BLOCKS) g = DR_REDUCE_MAX_BLOCKS;
  cudaStream_t st = drk::stream_of(l);
  double *partials = (double *)l->scratch;
  if (partials == nullptr) {
    /* No scratch from the backend: borrow it stream-ordered (capturable as
     * graph memory nodes; costs an allocation per launch). */
    cudaError_t ce = cudaMallocAsync((void **)&partials, DR_REDUCE_SCRATCH_BYTES, st);
    if (ce != cudaSuccess) {
      cudaGetLastError();
      return (int)ce;
    }
  }
  /* Early launch only when nothing of ours (a borrowed scratch) comes
   * between the previous kernel and pass 1. */
  int rc = drk::launch(l->pdl != 0 && l->scratch != nullptr, k.pass1, g, bt, bt * sizeof(double) + l->shared,
                       st, x, n, vec, partials, drk::guard_of(l));
  if (rc == 0) {
    k.pass2<<<1, kPass2Threads, 0, st>>>(partials, g, y, drk::stamp_of(l), drk::guard_of(l));
    rc = drk::launched();
  }
  if (l->scratch == nullptr) {
    cudaError_t ce = cudaFreeAsync(partials, st);
    if (rc == 0 && ce != cudaSuccess) {
      cudaGetLastError();
      rc = (int)ce;
    }
  }
  return rc;
}

__device__ uint64_t mix(uint64_t v) {
  uint64_t m;
  DR_CHECKSUM_MIX(v, m);
  return m;
}

__device__ __forceinline__ void checksum_body(const uint8_t *x, uint64_t n, bool vec, unsigned long long *y,
                                              unsigned long long *stamp) {
  drk::wait_prior_grid(); /* launched normally (after a memset): a no-op */
  uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t h = 0, done = 0;
  if (vec) {
    uint64_t n16 = n / 16;
    for (uint64_t v = tid; v < n16; v += stride) {
      uint4 w = ((const uint4 *)x)[v];
      uint32_t words[4] = {w.x, w.y, w.z, w.w};
      for (int j = 0; j < 16; j++) {
        uint64_t byte = (words[j / 4] >> (8 * (j % 4))) & 0xffu;
        h += mix(((16 * v + j) << 8) | byte);
      }
    }
    done = n16 * 16;
  }
  for (uint64_t i = done + tid; i < n; i += stride) h += mix((i << 8) | x[i]);
  for (int off = 16; off > 0; off >>= 1) h += __shfl_xor_sync(0xffffffffu, h, off);
  if ((threadIdx.x & 31u) == 0 && h != 0) atomicAdd(y, (unsigned long long)h);
  drk::stamp_block_end(stamp);
}

}  // namespace

/* One __global__ per built-in (and pass), named after it with C linkage so
 * that profilers show e.g. `dr_reduce_sum_f32_pass1`; the code is the
 * bodies above, inlined. */
#define DRK_REDUCE_KERNELS(name, T)                                                           \
  extern "C" __global__ void name##_pass1(const T *x, uint64_t n, bool vec, double *partials, \
                                          drk::Guard guard) {                                 \
    reduce_pass1<T>(x, n, vec, partials, guard);                                              \
  }                                                                                           \
  extern "C" __global__ void name##_pass2(const double *partials, unsigned n, T *y,           \
                                          unsigned long long *stamp, drk::Guard guard) {      \
    reduce_pass2<T>(partials, n, y, stamp, guard);                                            \
  }

DRK_REDUCE_KERNELS(dr_reduce_sum_f32, float)
DRK_REDUCE_KERNELS(dr_reduce_sum_f64, double)

extern "C" __global__ void dr_checksum_u8(const uint8_t *x, uint64_t n, bool vec, unsigned long long *y,
                                          unsigned long long *stamp) {
  checksum_body(x, n, vec, y, stamp);
}

extern "C" int dr__k_reduce_sum_f32_launch(const DrKLaunch *l) {
  return reduce_launch<float>(l, {dr_reduce_sum_f32_pass1, dr_reduce_sum_f32_pass2});
}

extern "C" int dr__k_reduce_sum_f64_launch(const DrKLaunch *l) {
  return reduce_launch<double>(l, {dr_reduce_sum_f64_pass1, dr_reduce_sum_f64_pass2});
}

extern "C" int dr__k_checksum_u8_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_reduce, l);
  const uint8_t *x = (const uint8_t *)l->args[0].ptr;
  unsigned long long *y = (unsigned long long *)l->args[1].ptr;
  uint64_t n = l->counts[0];
  cudaStream_t st = drk::stream_of(l);
  int rc = (int)cudaMemsetAsync(y, 0, sizeof *y, st);
  if (rc != 0) {
    cudaGetLastError();
    return rc;
  }
  if (n == 0) return 0;
  bool vec = drk::aligned16(x);
  uint64_t threads = vec ? (n / 16 > 0 ? n / 16 : 1) : n;
  /* The warp shuffle needs whole warps. */
  unsigned bt = (drk::block_threads(l) + 31u) / 32u * 32u;
  unsigned g = drk::grid_blocks(l, drk::ceil_div(threads, bt));
  dr_checksum_u8<<<g, bt, l->shared, st>>>(x, n, vec, y, drk::stamp_of(l));
  return drk::launched();
}
