/* rows.cu: the CUDA launchers of the row-wise built-ins, softmax_rows_f32
 * and layernorm_rows_f32. A row belongs to a group of threads sized to it:
 * 4, 8, 16 or 32 lanes of a warp for rows up to 1024 columns (4 lanes up to
 * 16 columns, 8 up to 32, 16 up to 64; several rows per warp), the whole
 * block for longer rows (1024 threads from 8192 columns up, else the
 * launch's block). Each thread walks the row with the group's stride; a
 * group combines its threads in a fixed order (an xor
 * butterfly within a warp, where every lane ends with the same bits since
 * a+b == b+a exactly, then the warps' results in index order through shared
 * memory), so the bits depend only on the launch shape. Sums are kept in
 * double and rounded once, and the per-element formula is the host twin's:
 * device and host agree to a few ulp (expf) or exactly (layernorm, given
 * equal mean and rstd). */
#include <math.h>

#include "kernels/launch.cuh"

namespace {

/* W lanes of a warp per row (W divides 32). All 32 lanes call the
 * reductions together, live or not. */
template <int W>
struct SubWarp {
  unsigned rank;
  __device__ SubWarp() : rank(threadIdx.x % W) {}
  __host__ __device__ static constexpr unsigned size() { return W; }
  __device__ double sum(double v) const {
    for (int off = W / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off, W);
    return v;
  }
  __device__ float max(float v) const {
    for (int off = W / 2; off > 0; off >>= 1) {
      float o = __shfl_xor_sync(0xffffffffu, v, off, W);
      v = o > v ? o : v;
    }
    return v;
  }
};

/* The whole block per row (blockDim.x a multiple of 32, at most 1024). */
struct Block {
  unsigned rank;
  double *sh; /* 32 doubles of shared memory */
  __device__ explicit Block(double *s) : rank(threadIdx.x), sh(s) {}
  __device__ unsigned size() const { return blockDim.x; }
  __device__ double sum(double v) const {
    v = SubWarp<32>().sum(v);
    __syncthreads(); /* sh's previous use is over */
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    double t = 0.0;
    for (unsigned w = 0; w < blockDim.x / 32; w++) t += sh[w];
    return t;
  }
  __device__ float max(float v) const {
    v = SubWarp<32>().max(v);
    __syncthreads();
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    float m = -INFINITY;
    for (unsigned w = 0; w < blockDim.x / 32; w++) m = (float)sh[w] > m ? (float)sh[w] : m;
    return m;
  }
};

/* One row's softmax by group g; len is cols, or 0 for a lane with no row
 * (it still takes part in the reductions). */
template <class G>
__device__ void softmax_row(const G &g, const float *xr, float *yr, uint64_t len) {
  float m = -INFINITY;
  for (uint64_t c = g.rank; c < len; c += g.size()) m = xr[c] > m ? xr[c] : m;
  m = g.max(m);
  double s = 0.0;
  for (uint64_t c = g.rank; c < len; c += g.size()) s += (double)expf(xr[c] - m);
  float sf = (float)g.sum(s);
  for (uint64_t c = g.rank; c < len; c += g.size()) yr[c] = expf(xr[c] - m) / sf;
}

template <class G>
__device__ void layernorm_row(const G &g, const float *xr, const float *gamma, const float *beta, float *yr,
                              uint64_t len, uint64_t cols, float eps) {
  double mean = 0.0, var = 0.0;
  for (uint64_t c = g.rank; c < len; c += g.size()) mean += (double)xr[c];
  mean = g.sum(mean) / (double)cols;
  for (uint64_t c = g.rank; c < len; c += g.size()) {
    double d = (double)xr[c] - mean;
    var += d * d;
  }
  var = g.sum(var) / (double)cols;
  float meanf = (float)mean;
  float rstd = (float)(1.0 / sqrt(var + (double)eps));
  for (uint64_t c = g.rank; c < len; c += g.size()) yr[c] = ((xr[c] - meanf) * rstd) * gamma[c] + beta[c];
}

struct RowArgs {
  const float *x, *gamma, *beta;
  float *y;
  uint64_t rows, cols;
  float eps;
  bool layernorm;
  drk::Guard guard;
};

template <class G>
__device__ void do_row(const RowArgs &a, uint64_t r, uint64_t len, const G &g) {
  const float *xr = a.x + r * a.cols;
  float *yr = a.y + r * a.cols;
  if (a.layernorm)
    layernorm_row(g, xr, a.gamma, a.beta, yr, len, a.cols, a.eps);
  else
    softmax_row(g, xr, yr, len);
}

/* W lanes per row; the loop bound is uniform over each warp, so every lane
 * reaches every shuffle. */
template <int W>
__device__ __forceinline__ void rows_subwarp(RowArgs a, unsigned long long *stamp) {
  drk::wait_prior_grid();
  if (a.guard.stops()) return;
  constexpr unsigned per_warp = 32 / W;
  uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32;
  unsigned sub = (threadIdx.x % 32) / W;
  SubWarp<W> g;
  for (uint64_t r0 = warp * per_warp; r0 < a.rows; r0 += nwarps * per_warp) {
    uint64_t r = r0 + sub;
    bool live = r < a.rows;
    do_row(a, live ? r : 0, live ? a.cols : 0, g);
  }
  drk::stamp_block_end(stamp);
  a.guard.ran();
}

__device__ __forceinline__ void rows_block(RowArgs a, unsigned long long *stamp) {
  __shared__ double sh[32];
  drk::wait_prior_grid();
  if (a.guard.stops()) return;
  Block g(sh);
  for (uint64_t r = blockIdx.x; r < a.rows; r += gridDim.x) do_row(a, r, a.cols, g);
  drk::stamp_block_end(stamp);
  a.guard.ran();
}

/* A row-wise built-in's kernels: by lanes per row (4, 8, 16, 32), and the
 * whole-block one (DRK_ROWS_KERNELS below). */
typedef void (*RowKernel)(RowArgs, unsigned long long *);
struct RowKernels {
  RowKernel w4, w8, w16, w32, block;
};

int rows_launch(const DrKLaunch *l, const RowArgs &a, const RowKernels &k) {
  if (a.rows == 0) return 0;
  cudaStream_t st = drk::stream_of(l);
  /* Whole warps: the reductions need all 32 lanes. */
  unsigned bt = (drk::block_threads(l) + 31u) / 32u * 32u;
  if (bt > 1024) bt = 1024;
  if (a.cols > 1024) {
    if (a.cols >= 8192) bt = 1024;
    unsigned g = drk::grid_blocks(l, a.rows);
    return drk::launch(l->pdl != 0, k.block, g, bt, l->shared, st, a, drk::stamp_of(l));
  }
  /* About 4 or more elements per lane before a row gets a whole warp:
   * short rows are bound by the reductions' latency, not by bandwidth. */
  unsigned w = a.cols <= 16 ? 4 : a.cols <= 32 ? 8 : a.cols <= 64 ? 16 : 32;
  uint64_t warps = drk::ceil_div(a.rows, 32 / w);
  unsigned g = drk::grid_blocks(l, drk::ceil_div(warps, bt / 32));
  switch (w) {
    case 4:
      return drk::launch(l->pdl != 0, k.w4, g, bt, l->shared, st, a, drk::stamp_of(l));
    case 8:
      return drk::launch(l->pdl != 0, k.w8, g, bt, l->shared, st, a, drk::stamp_of(l));
    case 16:
      return drk::launch(l->pdl != 0, k.w16, g, bt, l->shared, st, a, drk::stamp_of(l));
    default:
      return drk::launch(l->pdl != 0, k.w32, g, bt, l->shared, st, a, drk::stamp_of(l));
  }
}

}  // namespace

/* One __global__ per built-in and variant, named after the built-in with
 * C linkage so that profilers show e.g. `dr_softmax_rows_f32_w8` (8 lanes
 * a row) or `dr_layernorm_rows_f32_block`; the code is the bodies above,
 * inlined (both built-ins keep the shared runtime `layernorm` switch). */
#define DRK_ROWS_KERNELS(name)                                                                              \
  extern "C" __global__ void name##_w4(RowArgs a, unsigned long long *stamp) { rows_subwarp<4>(a, stamp); } \
  extern "C" __global__ void name##_w8(RowArgs a, unsigned long long *stamp) { rows_subwarp<8>(a, stamp); } \
  extern "C" __global__ void name##_w16(RowArgs a, unsigned long long *stamp) {                             \
    rows_subwarp<16>(a, stamp);                                                                             \
  }                                                                                                         \
  extern "C" __global__ void name##_w32(RowArgs a, unsigned long long *stamp) {                             \
    rows_subwarp<32>(a, stamp);                                                                             \
  }                                                                                                         \
  extern "C" __global__ void name##_block(RowArgs a, unsigned long long *stamp) { rows_block(a, stamp); }

DRK_ROWS_KERNELS(dr_softmax_rows_f32)
DRK_ROWS_KERNELS(dr_layernorm_rows_f32)

extern "C" int dr__k_softmax_rows_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_softmax, l);
  RowArgs a = {};
  a.x = (const float *)l->args[0].ptr;
  a.y = (float *)l->args[1].ptr;
  a.cols = (uint64_t)l->args[2].i;
  a.rows = l->counts[0] / a.cols;
  a.guard = drk::guard_of(l);
  return rows_launch(l, a,
                     {dr_softmax_rows_f32_w4, dr_softmax_rows_f32_w8, dr_softmax_rows_f32_w16,
                      dr_softmax_rows_f32_w32, dr_softmax_rows_f32_block});
}

extern "C" int dr__k_layernorm_rows_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_layernorm, l);
  RowArgs a = {};
  a.x = (const float *)l->args[0].ptr;
  a.gamma = (const float *)l->args[1].ptr;
  a.beta = (const float *)l->args[2].ptr;
  a.y = (float *)l->args[3].ptr;
  a.cols = (uint64_t)l->args[4].i;
  a.rows = l->counts[0] / a.cols;
  a.eps = (float)l->args[5].f;
  a.layernorm = true;
  a.guard = drk::guard_of(l);
  return rows_launch(l, a,
                     {dr_layernorm_rows_f32_w4, dr_layernorm_rows_f32_w8, dr_layernorm_rows_f32_w16,
                      dr_layernorm_rows_f32_w32, dr_layernorm_rows_f32_block});
}
