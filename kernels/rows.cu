/* rows.cu: the CUDA launchers of the row-wise built-ins, softmax_rows_f32
 * and layernorm_rows_f32. One warp per row, rows taken grid-stride by the
 * warps of the launch; each lane walks the row with stride 32, and lanes
 * combine with an xor butterfly (every lane ends with the same bits, since
 * a+b == b+a exactly). Sums are kept in double and rounded once, and the
 * final per-element formula is the host twin's, so device and host agree to
 * a few ulp (expf) or exactly (layernorm's affine step, given equal mean and
 * rstd). A warp per row suits rows of tens to thousands of columns; very
 * long rows run at one warp's bandwidth. */
#include <math.h>

#include "kernels/launch.cuh"

namespace {

__device__ double warp_sum(double v) {
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = o > v ? o : v;
  }
  return v;
}

__global__ void softmax_rows(const float *x, float *y, uint64_t rows,
                             uint64_t cols) {
  unsigned lane = threadIdx.x & 31u;
  uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32;
  for (uint64_t r = warp; r < rows; r += nwarps) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (uint64_t c = lane; c < cols; c += 32)
      m = xr[c] > m ? xr[c] : m;
    m = warp_max(m);
    double s = 0.0;
    for (uint64_t c = lane; c < cols; c += 32)
      s += (double)expf(xr[c] - m);
    float sf = (float)warp_sum(s);
    for (uint64_t c = lane; c < cols; c += 32)
      yr[c] = expf(xr[c] - m) / sf;
  }
}

__global__ void layernorm_rows(const float *x, const float *gamma,
                               const float *beta, float *y, uint64_t rows,
                               uint64_t cols, float eps) {
  unsigned lane = threadIdx.x & 31u;
  uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32;
  for (uint64_t r = warp; r < rows; r += nwarps) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double mean = 0.0, var = 0.0;
    for (uint64_t c = lane; c < cols; c += 32)
      mean += (double)xr[c];
    mean = warp_sum(mean) / (double)cols;
    for (uint64_t c = lane; c < cols; c += 32) {
      double d = (double)xr[c] - mean;
      var += d * d;
    }
    var = warp_sum(var) / (double)cols;
    float meanf = (float)mean;
    float rstd = (float)(1.0 / sqrt(var + (double)eps));
    for (uint64_t c = lane; c < cols; c += 32)
      yr[c] = ((xr[c] - meanf) * rstd) * gamma[c] + beta[c];
  }
}

/* Whole warps per block (the butterflies need all 32 lanes), and only as
 * many blocks as there are rows for their warps. */
void rows_shape(const DrKLaunch *l, uint64_t rows, unsigned *g,
                unsigned *bt) {
  *bt = (drk::block_threads(l) + 31u) / 32u * 32u;
  *g = drk::grid_blocks(l, drk::ceil_div(rows, *bt / 32u));
}

}  // namespace

extern "C" int dr__k_softmax_rows_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_softmax, l);
  uint64_t cols = (uint64_t)l->args[2].i, rows = l->counts[0] / cols;
  if (rows == 0)
    return 0;
  unsigned g, bt;
  rows_shape(l, rows, &g, &bt);
  softmax_rows<<<g, bt, l->shared, drk::stream_of(l)>>>(
      (const float *)l->args[0].ptr, (float *)l->args[1].ptr, rows, cols);
  return drk::launched();
}

extern "C" int dr__k_layernorm_rows_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_layernorm, l);
  uint64_t cols = (uint64_t)l->args[4].i, rows = l->counts[0] / cols;
  if (rows == 0)
    return 0;
  unsigned g, bt;
  rows_shape(l, rows, &g, &bt);
  layernorm_rows<<<g, bt, l->shared, drk::stream_of(l)>>>(
      (const float *)l->args[0].ptr, (const float *)l->args[1].ptr,
      (const float *)l->args[2].ptr, (float *)l->args[3].ptr, rows, cols,
      (float)l->args[5].f);
  return drk::launched();
}
