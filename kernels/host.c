/* host.c: the reference twins of the built-in kernels: plain C on the CPU,
 * the same math as the CUDA versions, used by the host backend and to check
 * the device results. Each twin checks its arguments first.
 *
 * Agreement with the CUDA versions, as tests/kernels/kernels_gpu_test.c
 * checks it (the .cu files are compiled with --fmad=false, so neither side
 * contracts a*b+c unless it says fmaf):
 *  - fill, iota, scale, add, mul, relu, axpy (fmaf on both sides), the
 *    bf16/f16 variants (f32 math, one rounding) and checksum: same bits.
 *  - gelu, softmax: tanhf/expf of the C library and of CUDA differ by a few
 *    ulp: |diff| <= 1e-5 |host| + 1e-6 (gelu), + 1e-12 (softmax).
 *  - layernorm: mean and variance in double on both sides, in different
 *    orders, then the same f32 formula: <= 1e-5 |host| + 1e-5 (measured:
 *    same bits).
 *  - reduce_sum: pairwise sum in double here, a tree in double there, then
 *    one rounding: <= 1e-5 relative (f32; measured: same bits), 1e-9
 *    relative + 1e-12 (f64).
 *  - gemm: double accumulation here; cuBLAS accumulates in f32 (no TF32):
 *    |diff| <= 1e-6 * k * max|a| * max|b| (f32); bf16 outputs within
 *    1/64 relative + 1e-4 * k * max|a| * max|b| (one or two bf16 ulp).
 *  - spin: busy-waits on CLOCK_MONOTONIC. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/halfconv.h"
#include "kernels/impl.h"

#define ARGF(l, i) ((float)(l)->args[i].f)
#define ARGP(l, i, T) ((T *)(l)->args[i].ptr)

/* Runs check (if any) and turns a refusal into the twin's return value. */
#define CHECK(fn, l, err)                                    \
  do {                                                       \
    if ((fn)((l)->counts, (l)->args, (err)) != 0) return -1; \
  } while (0)

int dr__k_fill_f32_host(const DrKLaunch *l, char *err) {
  float *y = ARGP(l, 0, float);
  float v = ARGF(l, 1);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = v;
  return 0;
}

int dr__k_iota_f32_host(const DrKLaunch *l, char *err) {
  float *y = ARGP(l, 0, float);
  float start = ARGF(l, 1), step = ARGF(l, 2);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = start + step * (float)i;
  return 0;
}

int dr__k_scale_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_scale, l, err);
  const float *x = ARGP(l, 0, const float);
  float alpha = ARGF(l, 1);
  float *y = ARGP(l, 2, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = alpha * x[i];
  return 0;
}

int dr__k_scale_bf16_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_scale, l, err);
  const uint16_t *x = ARGP(l, 0, const uint16_t);
  float alpha = ARGF(l, 1);
  uint16_t *y = ARGP(l, 2, uint16_t);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = dr__f32_to_bf16(alpha * dr__bf16_to_f32(x[i]));
  return 0;
}

int dr__k_scale_f16_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_scale, l, err);
  const uint16_t *x = ARGP(l, 0, const uint16_t);
  float alpha = ARGF(l, 1);
  uint16_t *y = ARGP(l, 2, uint16_t);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = dr__f32_to_f16(alpha * dr__f16_to_f32(x[i]));
  return 0;
}

int dr__k_axpy_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_axpy, l, err);
  float alpha = ARGF(l, 0);
  const float *x = ARGP(l, 1, const float);
  float *y = ARGP(l, 2, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 1); i++) y[i] = fmaf(alpha, x[i], y[i]);
  return 0;
}

int dr__k_add_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_binary, l, err);
  const float *a = ARGP(l, 0, const float), *b = ARGP(l, 1, const float);
  float *y = ARGP(l, 2, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = a[i] + b[i];
  return 0;
}

int dr__k_mul_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_binary, l, err);
  const float *a = ARGP(l, 0, const float), *b = ARGP(l, 1, const float);
  float *y = ARGP(l, 2, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = a[i] * b[i];
  return 0;
}

int dr__k_add_bf16_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_binary, l, err);
  const uint16_t *a = ARGP(l, 0, const uint16_t);
  const uint16_t *b = ARGP(l, 1, const uint16_t);
  uint16_t *y = ARGP(l, 2, uint16_t);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++)
    y[i] = dr__f32_to_bf16(dr__bf16_to_f32(a[i]) + dr__bf16_to_f32(b[i]));
  return 0;
}

int dr__k_add_f16_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_binary, l, err);
  const uint16_t *a = ARGP(l, 0, const uint16_t);
  const uint16_t *b = ARGP(l, 1, const uint16_t);
  uint16_t *y = ARGP(l, 2, uint16_t);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++)
    y[i] = dr__f32_to_f16(dr__f16_to_f32(a[i]) + dr__f16_to_f32(b[i]));
  return 0;
}

int dr__k_relu_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_unary, l, err);
  const float *x = ARGP(l, 0, const float);
  float *y = ARGP(l, 1, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return 0;
}

/* The constants and operation order are those of gelu in elementwise.cu. */
int dr__k_gelu_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_unary, l, err);
  const float *x = ARGP(l, 0, const float);
  float *y = ARGP(l, 1, float);
  for (uint64_t i = 0; i < DR_K_COUNT(l, 0); i++) {
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * (v * v * v));
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
  }
  return 0;
}

/* Pairwise summation in double: error O(log n) ulp, deterministic. */
static double pairwise_f32(const float *x, uint64_t n) {
  if (n <= 64) {
    double s = 0.0;
    for (uint64_t i = 0; i < n; i++) s += (double)x[i];
    return s;
  }
  uint64_t h = n / 2;
  return pairwise_f32(x, h) + pairwise_f32(x + h, n - h);
}

static double pairwise_f64(const double *x, uint64_t n) {
  if (n <= 64) {
    double s = 0.0;
    for (uint64_t i = 0; i < n; i++) s += x[i];
    return s;
  }
  uint64_t h = n / 2;
  return pairwise_f64(x, h) + pairwise_f64(x + h, n - h);
}

int dr__k_reduce_sum_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_reduce, l, err);
  ARGP(l, 1, float)[0] = (float)pairwise_f32(ARGP(l, 0, const float), l->counts[0]);
  return 0;
}

int dr__k_reduce_sum_f64_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_reduce, l, err);
  ARGP(l, 1, double)[0] = pairwise_f64(ARGP(l, 0, const double), l->counts[0]);
  return 0;
}

int dr__k_checksum_u8_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_reduce, l, err);
  const uint8_t *x = ARGP(l, 0, const uint8_t);
  uint64_t h = 0;
  for (uint64_t i = 0; i < l->counts[0]; i++) {
    uint64_t m;
    DR_CHECKSUM_MIX((i << 8) | x[i], m);
    h += m;
  }
  memcpy(ARGP(l, 1, int64_t), &h, sizeof h);
  return 0;
}

/* Same formula as softmax_rows in rows.cu: max in f32, the sum of the f32
 * exponentials in double rounded once, then one f32 division. */
int dr__k_softmax_rows_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_softmax, l, err);
  const float *x = ARGP(l, 0, const float);
  float *y = ARGP(l, 1, float);
  uint64_t cols = (uint64_t)l->args[2].i, rows = l->counts[0] / cols;
  for (uint64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = -INFINITY;
    for (uint64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    double s = 0.0;
    for (uint64_t c = 0; c < cols; c++) s += (double)expf(xr[c] - m);
    float sf = (float)s;
    for (uint64_t c = 0; c < cols; c++) yr[c] = expf(xr[c] - m) / sf;
  }
  return 0;
}

/* Same formula as layernorm_rows in rows.cu: two-pass mean and variance in
 * double, rounded once to f32, then ((x - mean) * rstd) * gamma + beta. */
int dr__k_layernorm_rows_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_layernorm, l, err);
  const float *x = ARGP(l, 0, const float);
  const float *g = ARGP(l, 1, const float), *b = ARGP(l, 2, const float);
  float *y = ARGP(l, 3, float);
  uint64_t cols = (uint64_t)l->args[4].i, rows = l->counts[0] / cols;
  double eps = (double)ARGF(l, 5);
  for (uint64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double mean = 0.0, var = 0.0;
    for (uint64_t c = 0; c < cols; c++) mean += (double)xr[c];
    mean /= (double)cols;
    for (uint64_t c = 0; c < cols; c++) {
      double d = (double)xr[c] - mean;
      var += d * d;
    }
    var /= (double)cols;
    float meanf = (float)mean, rstd = (float)(1.0 / sqrt(var + eps));
    for (uint64_t c = 0; c < cols; c++) yr[c] = ((xr[c] - meanf) * rstd) * g[c] + b[c];
  }
  return 0;
}

/* c = alpha*a*b + beta*c, row-major, accumulated in double; c is not read
 * when beta == 0 (as in BLAS: NaN in c does not propagate). `load` and
 * `store` convert the element type. */
static int gemm_host(const DrKLaunch *l, char *err, float (*load)(const void *, uint64_t),
                     void (*store)(void *, uint64_t, float)) {
  CHECK(dr__kcheck_gemm, l, err);
  const void *a = l->args[0].ptr, *b = l->args[1].ptr;
  void *c = l->args[2].ptr;
  uint64_t m = (uint64_t)l->args[3].i, n = (uint64_t)l->args[4].i, k = (uint64_t)l->args[5].i;
  double alpha = (double)ARGF(l, 6), beta = (double)ARGF(l, 7);
  double *acc = malloc(n * sizeof *acc);
  if (acc == NULL) {
    snprintf(err, DR_KERR_SIZE, "out of host memory (%llu doubles)", (unsigned long long)n);
    return -1;
  }
  for (uint64_t i = 0; i < m; i++) {
    for (uint64_t j = 0; j < n; j++) acc[j] = 0.0;
    for (uint64_t p = 0; p < k; p++) {
      double av = (double)load(a, i * k + p);
      for (uint64_t j = 0; j < n; j++) acc[j] += av * (double)load(b, p * n + j);
    }
    for (uint64_t j = 0; j < n; j++) {
      double v = alpha * acc[j];
      if (beta != 0.0) v += beta * (double)load(c, i * n + j);
      store(c, i * n + j, (float)v);
    }
  }
  free(acc);
  return 0;
}

static float load_f32(const void *p, uint64_t i) { return ((const float *)p)[i]; }
static void store_f32(void *p, uint64_t i, float v) { ((float *)p)[i] = v; }
static float load_bf16(const void *p, uint64_t i) { return dr__bf16_to_f32(((const uint16_t *)p)[i]); }
static void store_bf16(void *p, uint64_t i, float v) { ((uint16_t *)p)[i] = dr__f32_to_bf16(v); }

int dr__k_gemm_f32_host(const DrKLaunch *l, char *err) { return gemm_host(l, err, load_f32, store_f32); }

int dr__k_gemm_bf16_host(const DrKLaunch *l, char *err) { return gemm_host(l, err, load_bf16, store_bf16); }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Busy-waits rather than sleeps: like the device version it keeps its
 * executor (here the calling thread) occupied for the whole time. */
int dr__k_spin_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_spin, l, err);
  int64_t end = now_ns() + l->args[0].i;
  while (now_ns() < end) {
  }
  return 0;
}

int dr__k_set_while_gt_f32_host(const DrKLaunch *l, char *err) {
  CHECK(dr__kcheck_cond, l, err);
  const float *x = ARGP(l, 0, const float);
  int32_t *cond = ARGP(l, 2, int32_t);
  cond[0] = x[0] > ARGF(l, 1) ? 1 : 0;
  return 0;
}
