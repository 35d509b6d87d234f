/* kernels_gpu_test.c: every built-in kernel's CUDA launcher against its host
 * twin (kernels/host.c) on random data, with a stated tolerance per kernel,
 * on several sizes (1, non-multiples of the block, a million), with the
 * default launch shape and an odd one (3 blocks of 96), on aligned and
 * misaligned slices (which take the scalar path). Also: reductions give the
 * same bits twice and under CUDA graph capture, spin lasts what it says
 * (events, within 5%) and spins on separate streams overlap, cuBLAS binds
 * and is capture-safe, guarded launches do nothing when their guard word
 * is 0. Prints a table of the worst errors and the slowest
 * default-shape launch per kernel (event time).
 *
 * Needs a GPU: tagged "gpu" in BUILD; without a usable device every case
 * is skipped (the reason is printed). */
#include <cuda_runtime_api.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "kernels/blas.h"
#include "kernels/halfconv.h"
#include "kernels/impl.h"
#include "kernels/registry.h"
#include "tests/kernels/elem_size.h"

static gboolean have_gpu;
static char no_gpu_reason[256];
static cudaStream_t stream;
static DrKBlas *blas;
static GString *table;

#define SKIP_WITHOUT_GPU()        \
  do {                            \
    if (!have_gpu) {              \
      g_test_skip(no_gpu_reason); \
      return;                     \
    }                             \
  } while (0)

#define CUDA_OK(call)                                                                                   \
  do {                                                                                                  \
    cudaError_t e_ = (call);                                                                            \
    if (e_ != cudaSuccess) g_error("%s: %s (%s)", #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
  } while (0)

/* ---- cases: sizes and scalars per kernel ------------------------------- */

typedef struct {
  const char *name;
  double rel, abs;  /* |dev - host| <= rel*|host| + abs; both 0: same bits */
  double abs_per_k; /* gemm: abs grows with k */
  const char *why;  /* the tolerance's reason, for the table */
} Tolerance;

static const Tolerance tolerances[] = {
    {"add_bf16", 0, 0, 0, "f32 math, one RNE rounding: same bits"},
    {"add_f16", 0, 0, 0, "f32 math, one RNE rounding: same bits"},
    {"add_f32", 0, 0, 0, "same op: same bits"},
    {"axpy_f32", 0, 0, 0, "fmaf both sides: same bits"},
    {"checksum_u8", 0, 0, 0, "integer: same bits"},
    {"fill_f32", 0, 0, 0, "same bits"},
    {"gelu_f32", 1e-5, 1e-6, 0, "tanhf differs by ulps"},
    {"gemm_bf16", 1.0 / 64, 0, 1e-4, "bf16 output: 1-2 ulp (2^-7)"},
    {"gemm_f32", 0, 0, 1e-6, "f32 vs double accumulation, no TF32"},
    {"iota_f32", 0, 0, 0, "same bits"},
    {"layernorm_rows_f32", 1e-5, 1e-5, 0, "double stats, same f32 formula"},
    {"mul_f32", 0, 0, 0, "same op: same bits"},
    {"reduce_sum_f32", 1e-5, 0, 0, "double tree vs pairwise, one rounding"},
    {"reduce_sum_f64", 1e-9, 1e-12, 0, "tree vs pairwise order in double"},
    {"relu_f32", 0, 0, 0, "same bits"},
    {"scale_bf16", 0, 0, 0, "f32 math, one RNE rounding: same bits"},
    {"scale_f16", 0, 0, 0, "f32 math, one RNE rounding: same bits"},
    {"scale_f32", 0, 0, 0, "same op: same bits"},
    {"set_while_gt_f32", 0, 0, 0, "a comparison: same bits"},
    {"softmax_rows_f32", 1e-5, 1e-12, 0, "expf differs by ulps"},
    {"spin", 0, 0, 0, "timed separately"},
};

static const Tolerance *tolerance_of(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(tolerances); i++)
    if (strcmp(tolerances[i].name, name) == 0) return &tolerances[i];
  return NULL;
}

/* Row length of the rows kernels' cases (test_kernel varies it). */
static uint64_t case_cols = 37;

/* Sets counts and scalar args of `def` for size n: every buffer n elements,
 * except the one-element results, rows of case_cols columns, and gemm's
 * shapes. */
static void make_case(const DrKernelDef *def, uint64_t n, uint64_t *counts, DrKValue *args) {
  for (int i = 0; i < def->n_params; i++) {
    const DrKParam *p = &def->params[i];
    counts[i] = p->is_pointer ? n : 0;
    if (p->is_pointer) continue;
    if (p->optional && p->type != DR_ELEM_I64)
      args[i].f = p->def;
    else if (p->type == DR_ELEM_F32 || p->type == DR_ELEM_F64)
      args[i].f = strcmp(p->name, "value") == 0 ? -3.5 : 1.7;
    else
      args[i].i = 0;
  }
  const char *nm = def->name;
  if (g_str_has_prefix(nm, "reduce_sum") || strcmp(nm, "checksum_u8") == 0) {
    counts[1] = 1;
  } else if (strcmp(nm, "iota_f32") == 0) {
    args[1].f = 0.5, args[2].f = 0.25;
  } else if (strcmp(nm, "softmax_rows_f32") == 0) {
    uint64_t rows = n / case_cols ? n / case_cols : 1;
    counts[0] = counts[1] = rows * case_cols;
    args[2].i = (int64_t)case_cols;
  } else if (strcmp(nm, "layernorm_rows_f32") == 0) {
    uint64_t rows = n / case_cols ? n / case_cols : 1;
    counts[0] = counts[3] = rows * case_cols;
    counts[1] = counts[2] = case_cols;
    args[4].i = (int64_t)case_cols;
  } else if (g_str_has_prefix(nm, "gemm_")) {
    /* n picks one of a few shapes, from 1x1x1 to 257x129x300. */
    static const int64_t shapes[][3] = {{1, 1, 1}, {17, 33, 9}, {128, 96, 200}, {257, 129, 300}};
    const int64_t *s = shapes[n % G_N_ELEMENTS(shapes)];
    args[3].i = s[0], args[4].i = s[1], args[5].i = s[2];
    counts[0] = (uint64_t)(s[0] * s[2]);
    counts[1] = (uint64_t)(s[2] * s[1]);
    counts[2] = (uint64_t)(s[0] * s[1]);
    args[6].f = 0.75;
    args[7].f = (n / G_N_ELEMENTS(shapes)) % 2 ? -0.5 : 0.0;
  }
}

static void fill_random(GRand *r, DrElemType t, void *p, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    double v = g_rand_double_range(r, -2, 2);
    switch (t) {
      case DR_ELEM_F32:
        ((float *)p)[i] = (float)v;
        break;
      case DR_ELEM_F64:
        ((double *)p)[i] = v;
        break;
      case DR_ELEM_BF16:
        ((uint16_t *)p)[i] = dr__f32_to_bf16((float)v);
        break;
      case DR_ELEM_F16:
        ((uint16_t *)p)[i] = dr__f32_to_f16((float)v);
        break;
      case DR_ELEM_U8:
        ((uint8_t *)p)[i] = (uint8_t)g_rand_int(r);
        break;
      case DR_ELEM_I32:
        ((int32_t *)p)[i] = (int32_t)g_rand_int(r);
        break;
      case DR_ELEM_I64:
        ((int64_t *)p)[i] = (int64_t)g_rand_int(r) << 20;
        break;
      default:
        g_assert_not_reached();
    }
  }
}

static double as_double(DrElemType t, const void *p, uint64_t i) {
  switch (t) {
    case DR_ELEM_F32:
      return ((const float *)p)[i];
    case DR_ELEM_F64:
      return ((const double *)p)[i];
    case DR_ELEM_BF16:
      return dr__bf16_to_f32(((const uint16_t *)p)[i]);
    case DR_ELEM_F16:
      return dr__f16_to_f32(((const uint16_t *)p)[i]);
    default:
      g_assert_not_reached();
  }
}

/* ---- one run: device vs twin ------------------------------------------- */

typedef struct {
  unsigned grid, block; /* 0: the registry's default shape */
  unsigned offset;      /* elements added to every buffer's address */
  gboolean scratch;     /* pass scratch (else the launcher borrows it) */
} Variant;

/* Runs `def` on size n in the given variant on device and host; returns
 * the worst error relative to the tolerance (<= 1 passes) and stores the
 * device time in *us. */
static double run_case(const DrKernelDef *def, uint64_t n, const Variant *v, GRand *r, double *us,
                       double *worst_abs) {
  const Tolerance *tol = tolerance_of(def->name);
  int np = def->n_params;
  uint64_t counts[16] = {0};
  DrKValue hargs[16], dargs[16];
  void *dbase[16] = {0}, *hin[16] = {0}, *hout[16] = {0}, *dout[16] = {0};
  memset(hargs, 0, sizeof hargs);
  make_case(def, n, counts, hargs);
  memcpy(dargs, hargs, sizeof dargs);
  for (int i = 0; i < np; i++) {
    const DrKParam *p = &def->params[i];
    if (!p->is_pointer) continue;
    size_t es = elem_size(p->type), bytes = counts[i] * es;
    hin[i] = g_malloc(bytes + 1);
    fill_random(r, p->type, hin[i], counts[i]);
    hout[i] = g_memdup2(hin[i], bytes + 1);
    dout[i] = g_malloc(bytes + 1);
    CUDA_OK(cudaMalloc(&dbase[i], bytes + (v->offset + 1) * es + 16));
    char *dp = (char *)dbase[i] + v->offset * es;
    CUDA_OK(cudaMemcpy(dp, hin[i], bytes, cudaMemcpyHostToDevice));
    hargs[i].ptr = hout[i];
    dargs[i].ptr = dp;
  }
  char err[DR_KERR_SIZE] = "";
  DrKLaunch hl = {.args = hargs, .counts = counts};
  if (def->host(&hl, err) != 0) g_error("%s host twin: %s", def->name, err);

  DrKLaunch dl = {.args = dargs, .counts = counts, .stream = stream};
  dr_kernel_default_shape(def, counts, dargs, dl.grid, dl.block);
  if (v->grid) dl.grid[0] = v->grid, dl.block[0] = v->block;
  if (def->flags & DR_KFLAG_BLAS) dl.blas = blas;
  void *scratch = NULL;
  if (def->scratch_bytes && v->scratch) {
    CUDA_OK(cudaMalloc(&scratch, def->scratch_bytes));
    dl.scratch = scratch;
  }
  /* Self-stamping built-ins (DR_KFLAG_STAMPS) raise the stamp to their
   * end: written on every case, with the outputs below still exact. */
  unsigned long long *dstamp = NULL;
  if (def->flags & DR_KFLAG_STAMPS) {
    CUDA_OK(cudaMalloc((void **)&dstamp, sizeof *dstamp));
    CUDA_OK(cudaMemset(dstamp, 0, sizeof *dstamp));
    dl.stamp = dstamp;
  }
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  CUDA_OK(cudaEventRecord(e0, stream));
  int rc = def->launch(&dl);
  if (rc != 0)
    g_error("%s launch: %s%s%s", def->name, cudaGetErrorName((cudaError_t)rc), dl.blas ? ": " : "",
            dl.blas ? dr_kblas_last_error(blas) : "");
  CUDA_OK(cudaEventRecord(e1, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
  *us = ms * 1000.0;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (dstamp) {
    unsigned long long stamp = 0;
    CUDA_OK(cudaMemcpy(&stamp, dstamp, sizeof stamp, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(dstamp));
    if (stamp == 0) g_error("%s (n %" G_GUINT64_FORMAT "): no end stamp written", def->name, (guint64)n);
  }

  double worst = 0;
  *worst_abs = 0;
  for (int i = 0; i < np; i++) {
    const DrKParam *p = &def->params[i];
    if (!p->is_pointer) continue;
    size_t es = elem_size(p->type), bytes = counts[i] * es;
    CUDA_OK(cudaMemcpy(dout[i], (char *)dbase[i] + v->offset * es, bytes, cudaMemcpyDeviceToHost));
    if (p->access == DR_ACCESS_READ) {
      /* Inputs are left alone. */
      g_assert_true(memcmp(dout[i], hin[i], bytes) == 0);
      continue;
    }
    gboolean exact = tol->rel == 0 && tol->abs == 0 && tol->abs_per_k == 0;
    if (exact || p->type == DR_ELEM_U8 || p->type == DR_ELEM_I64 || p->type == DR_ELEM_I32) {
      if (memcmp(dout[i], hout[i], bytes) != 0) {
        for (uint64_t j = 0; j < counts[i]; j++)
          if (memcmp((char *)dout[i] + j * es, (char *)hout[i] + j * es, es))
            g_error("%s n=%" G_GUINT64_FORMAT " %s[%" G_GUINT64_FORMAT
                    "]: device and host bits differ (%.9g vs %.9g)",
                    def->name, n, p->name, j,
                    p->type == DR_ELEM_U8 || p->type == DR_ELEM_I64 ? 0.0 : as_double(p->type, dout[i], j),
                    p->type == DR_ELEM_U8 || p->type == DR_ELEM_I64 ? 0.0 : as_double(p->type, hout[i], j));
      }
      continue;
    }
    double abs = tol->abs;
    if (tol->abs_per_k) abs += tol->abs_per_k * (double)dargs[5].i; /* gemm: k, inputs in [-2,2] x4 */
    if (tol->abs_per_k) abs *= 4;
    for (uint64_t j = 0; j < counts[i]; j++) {
      double d = as_double(p->type, dout[i], j);
      double h = as_double(p->type, hout[i], j);
      double e = fabs(d - h), lim = tol->rel * fabs(h) + abs;
      if (!(e <= lim))
        g_error("%s n=%" G_GUINT64_FORMAT " %s[%" G_GUINT64_FORMAT
                "]: device %.9g, host %.9g (tolerance %.3g)",
                def->name, n, p->name, j, d, h, lim);
      if (lim > 0 && e / lim > worst) worst = e / lim;
      if (e > *worst_abs) *worst_abs = e;
    }
  }
  for (int i = 0; i < np; i++) {
    g_free(hin[i]), g_free(hout[i]), g_free(dout[i]);
    if (dbase[i]) CUDA_OK(cudaFree(dbase[i]));
  }
  if (scratch) CUDA_OK(cudaFree(scratch));
  return worst;
}

static void test_kernel(gconstpointer data) {
  SKIP_WITHOUT_GPU();
  const DrKernelDef *def = data;
  GRand *r = g_rand_new_with_seed(g_str_hash(def->name));
  static const uint64_t sizes[] = {1, 3, 255, 257, 4099, 1000003};
  static const Variant variants[] = {{0, 0, 0, TRUE}, {3, 96, 0, TRUE}, {0, 0, 1, FALSE}, {2, 100, 3, TRUE}};
  gboolean gemm = (def->flags & DR_KFLAG_BLAS) != 0;
  guint n_sizes = gemm ? 8 : G_N_ELEMENTS(sizes);
  double worst = 0, worst_abs = 0, us_max = 0, us, wa;
  /* Warm-up: the first launch loads the module; not in the timings. */
  run_case(def, 1, &variants[0], r, &us, &wa);
  /* Rows kernels: every row grouping (4, 8, 16, 32 lanes, a block, a
   * block of 1024) on a few sizes. */
  static const uint64_t cols_list[] = {1, 3, 13, 17, 37, 65, 1024, 1500, 9000};
  gboolean rows = strstr(def->name, "_rows_") != NULL;
  guint n_cols = rows ? G_N_ELEMENTS(cols_list) : 1;
  for (guint ci = 0; ci < n_cols; ci++)
    for (guint s = 0; s < n_sizes; s++)
      for (guint vi = 0; vi < G_N_ELEMENTS(variants); vi++) {
        uint64_t n = gemm ? s : sizes[s];
        if (rows && s != 0 && s != 4 && s != 5) continue; /* sizes 1, 4099, 1000003 for each row length */
        if (rows) case_cols = cols_list[ci];
        double w = run_case(def, n, &variants[vi], r, &us, &wa);
        worst = MAX(worst, w);
        worst_abs = MAX(worst_abs, wa);
        if (vi == 0) us_max = MAX(us_max, us);
      }
  case_cols = 37;
  const Tolerance *tol = tolerance_of(def->name);
  g_string_append_printf(table, "%-20s %10.3g %12.3g %10.1f  %s\n", def->name, worst_abs, worst, us_max,
                         tol->why);
  g_rand_free(r);
}

/* ---- properties beyond the twins --------------------------------------- */

/* reduce_sum: same bits on every run, eager and replayed from a captured
 * graph, with and without scratch. */
static void test_reduce_deterministic(void) {
  SKIP_WITHOUT_GPU();
  const uint64_t n = 5000011;
  float *hx = g_new(float, n);
  GRand *r = g_rand_new_with_seed(3);
  for (uint64_t i = 0; i < n; i++) hx[i] = (float)g_rand_double_range(r, -1, 1);
  float *x, *y;
  void *scratch;
  CUDA_OK(cudaMalloc((void **)&x, n * sizeof(float)));
  CUDA_OK(cudaMalloc((void **)&y, 4 * sizeof(float)));
  CUDA_OK(cudaMalloc(&scratch, DR_REDUCE_SCRATCH_BYTES));
  CUDA_OK(cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice));
  const DrKernelDef *def = dr_kernel_find("reduce_sum_f32");
  uint64_t counts[2] = {n, 1};
  float got[8];
  for (int k = 0; k < 8; k++) {
    DrKValue args[2] = {{.ptr = x}, {.ptr = y + (k % 4)}};
    DrKLaunch l = {.args = args, .counts = counts, .stream = stream, .scratch = k % 2 ? scratch : NULL};
    dr_kernel_default_shape(def, counts, args, l.grid, l.block);
    if (k < 4) {
      g_assert_cmpint(def->launch(&l), ==, 0);
    } else {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      g_assert_cmpint(def->launch(&l), ==, 0);
      CUDA_OK(cudaStreamEndCapture(stream, &graph));
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaMemcpy(&got[k], y + (k % 4), sizeof(float), cudaMemcpyDeviceToHost));
  }
  for (int k = 1; k < 8; k++) g_assert_cmphex(dr__f32_bits(got[k]), ==, dr__f32_bits(got[0]));
  CUDA_OK(cudaFree(x));
  CUDA_OK(cudaFree(y));
  CUDA_OK(cudaFree(scratch));
  g_free(hx);
  g_rand_free(r);
}

/* gemm through cuBLAS inside a stream capture, replayed: same bits as the
 * eager call (the handle has its stream and workspace). */
static void test_gemm_capture(void) {
  SKIP_WITHOUT_GPU();
  const int64_t m = 64, n = 48, k = 80;
  const DrKernelDef *def = dr_kernel_find("gemm_f32");
  float *ha = g_new(float, m *k), *hb = g_new(float, k *n);
  float *c1 = g_new(float, m *n), *c2 = g_new(float, m *n);
  GRand *r = g_rand_new_with_seed(5);
  for (int64_t i = 0; i < m * k; i++) ha[i] = (float)g_rand_double(r);
  for (int64_t i = 0; i < k * n; i++) hb[i] = (float)g_rand_double(r);
  float *a, *b, *c;
  CUDA_OK(cudaMalloc((void **)&a, m * k * 4));
  CUDA_OK(cudaMalloc((void **)&b, k * n * 4));
  CUDA_OK(cudaMalloc((void **)&c, m * n * 4));
  CUDA_OK(cudaMemcpy(a, ha, m * k * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(b, hb, k * n * 4, cudaMemcpyHostToDevice));
  DrKValue args[8] = {{.ptr = a}, {.ptr = b}, {.ptr = c}, {.i = m},
                      {.i = n},   {.i = k},   {.f = 1.0}, {.f = 0.0}};
  uint64_t counts[8] = {m * k, k * n, m * n};
  DrKLaunch l = {.args = args, .counts = counts, .stream = stream, .blas = blas};
  g_assert_cmpint(def->launch(&l), ==, 0);
  CUDA_OK(cudaMemcpyAsync(c1, c, m * n * 4, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaMemsetAsync(c, 0, m * n * 4, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  g_assert_cmpint(def->launch(&l), ==, 0);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaMemcpyAsync(c2, c, m * n * 4, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  g_assert_true(memcmp(c1, c2, m * n * 4) == 0);
  /* Refusals: no DrKBlas, or bad sizes. */
  l.blas = NULL;
  g_assert_cmpint(def->launch(&l), ==, cudaErrorInvalidValue);
  l.blas = blas;
  counts[2] = 5;
  g_assert_cmpint(def->launch(&l), ==, cudaErrorInvalidValue);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFree(c));
  g_free(ha), g_free(hb), g_free(c1), g_free(c2);
  g_rand_free(r);
}

/* Counts kept in device memory (DR_KFLAG_DEVICE_COUNTS, DrKLaunch
 * counts_dev): every element-wise built-in, launched in the shape for
 * 4099 elements (and at offset 1: no 16-byte loads) with smaller counts in
 * a device word, writes exactly the twin's result for those counts and
 * leaves every element past them as it was. */
static void test_device_counts(void) {
  SKIP_WITHOUT_GPU();
  GRand *r = g_rand_new_with_seed(29);
  const uint64_t big = 4099, smalls[] = {1, 5, 537, 4096, 4099};
  uint64_t *dcounts = NULL;
  CUDA_OK(cudaMalloc((void **)&dcounts, 16 * sizeof *dcounts));
  for (int k = 0; k < dr_kernel_registry_len; k++) {
    const DrKernelDef *def = &dr_kernel_registry[k];
    if (!(def->flags & DR_KFLAG_DEVICE_COUNTS)) continue;
    const Tolerance *tol = tolerance_of(def->name);
    for (guint si = 0; si < G_N_ELEMENTS(smalls); si++)
      for (unsigned offset = 0; offset < 2; offset++) {
        uint64_t counts[16] = {0}, small[16] = {0};
        DrKValue hargs[16], dargs[16];
        memset(hargs, 0, sizeof hargs);
        make_case(def, big, counts, hargs);
        memcpy(dargs, hargs, sizeof dargs);
        void *dbase[16] = {0}, *hin[16] = {0}, *hout[16] = {0}, *back[16] = {0};
        for (int i = 0; i < def->n_params; i++) {
          const DrKParam *p = &def->params[i];
          if (!p->is_pointer) continue;
          small[i] = smalls[si];
          size_t es = elem_size(p->type), bytes = counts[i] * es;
          hin[i] = g_malloc(bytes);
          fill_random(r, p->type, hin[i], counts[i]);
          hout[i] = g_memdup2(hin[i], bytes);
          back[i] = g_malloc(bytes);
          CUDA_OK(cudaMalloc(&dbase[i], bytes + es));
          CUDA_OK(cudaMemcpy((char *)dbase[i] + offset * es, hin[i], bytes, cudaMemcpyHostToDevice));
          hargs[i].ptr = hout[i];
          dargs[i].ptr = (char *)dbase[i] + offset * es;
        }
        char err[DR_KERR_SIZE] = "";
        DrKLaunch hl = {.args = hargs, .counts = small};
        if (def->host(&hl, err) != 0) g_error("%s host twin: %s", def->name, err);
        CUDA_OK(cudaMemcpy(dcounts, small, sizeof small, cudaMemcpyHostToDevice));
        DrKLaunch dl = {.args = dargs, .counts = counts, .stream = stream, .counts_dev = dcounts};
        dr_kernel_default_shape(def, counts, dargs, dl.grid, dl.block);
        int rc = def->launch(&dl);
        if (rc != 0) g_error("%s launch: %s", def->name, cudaGetErrorName((cudaError_t)rc));
        CUDA_OK(cudaStreamSynchronize(stream));
        for (int i = 0; i < def->n_params; i++) {
          const DrKParam *p = &def->params[i];
          if (!p->is_pointer) continue;
          size_t es = elem_size(p->type);
          CUDA_OK(
              cudaMemcpy(back[i], (char *)dbase[i] + offset * es, counts[i] * es, cudaMemcpyDeviceToHost));
          for (uint64_t j = 0; j < counts[i]; j++) {
            const void *want = (const char *)(j < small[i] ? hout[i] : hin[i]) + j * es;
            if (memcmp((const char *)back[i] + j * es, want, es) == 0) continue;
            double d = as_double(p->type, back[i], j), h = as_double(p->type, want, 0);
            if (j < small[i] && fabs(d - h) <= tol->rel * fabs(h) + tol->abs) continue;
            g_error("%s: counts %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " from device memory, offset %u: "
                    "%s[%" G_GUINT64_FORMAT "] is %.9g, want %.9g",
                    def->name, small[i], counts[i], offset, p->name, j, d, h);
          }
        }
        for (int i = 0; i < def->n_params; i++) {
          if (dbase[i]) CUDA_OK(cudaFree(dbase[i]));
          g_free(hin[i]), g_free(hout[i]), g_free(back[i]);
        }
      }
  }
  CUDA_OK(cudaFree(dcounts));
  g_rand_free(r);
}

/* Guards (DR_KFLAG_GUARD, DrKLaunch.guard): every guardable built-in,
 * given a guard word of 0, leaves every buffer as it was, raises no stamp
 * and counts no run; given 1, it runs (the stamp is raised) and counts
 * exactly one run in guard_runs. */
static void test_guard(void) {
  SKIP_WITHOUT_GPU();
  GRand *r = g_rand_new_with_seed(17);
  int32_t *dguard = NULL;
  unsigned long long *druns = NULL, *dstamp = NULL;
  CUDA_OK(cudaMalloc((void **)&dguard, sizeof *dguard));
  CUDA_OK(cudaMalloc((void **)&druns, sizeof *druns));
  CUDA_OK(cudaMalloc((void **)&dstamp, sizeof *dstamp));
  for (int k = 0; k < dr_kernel_registry_len; k++) {
    const DrKernelDef *def = &dr_kernel_registry[k];
    if (!(def->flags & DR_KFLAG_GUARD)) continue;
    uint64_t counts[16] = {0};
    DrKValue args[16];
    memset(args, 0, sizeof args);
    make_case(def, 1000, counts, args);
    if (strcmp(def->name, "spin") == 0) args[0].i = 1000;
    void *dptr[16] = {0}, *hin[16] = {0}, *back[16] = {0};
    for (int i = 0; i < def->n_params; i++) {
      const DrKParam *p = &def->params[i];
      if (!p->is_pointer) continue;
      size_t bytes = counts[i] * elem_size(p->type);
      hin[i] = g_malloc(bytes + 1);
      back[i] = g_malloc(bytes + 1);
      fill_random(r, p->type, hin[i], counts[i]);
      CUDA_OK(cudaMalloc(&dptr[i], bytes + 16));
      CUDA_OK(cudaMemcpy(dptr[i], hin[i], bytes, cudaMemcpyHostToDevice));
      args[i].ptr = dptr[i];
    }
    void *scratch = NULL;
    if (def->scratch_bytes) CUDA_OK(cudaMalloc(&scratch, def->scratch_bytes));
    for (int32_t on = 0; on < 2; on++) {
      CUDA_OK(cudaMemcpy(dguard, &on, sizeof on, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(druns, 0, sizeof *druns));
      CUDA_OK(cudaMemset(dstamp, 0, sizeof *dstamp));
      DrKLaunch l = {.args = args,
                     .counts = counts,
                     .stream = stream,
                     .scratch = scratch,
                     .stamp = dstamp,
                     .guard = dguard,
                     .guard_runs = druns};
      dr_kernel_default_shape(def, counts, args, l.grid, l.block);
      int rc = def->launch(&l);
      if (rc != 0) g_error("%s guarded launch: %s", def->name, cudaGetErrorName((cudaError_t)rc));
      CUDA_OK(cudaStreamSynchronize(stream));
      unsigned long long runs = 9, stamp = 9;
      CUDA_OK(cudaMemcpy(&runs, druns, sizeof runs, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(&stamp, dstamp, sizeof stamp, cudaMemcpyDeviceToHost));
      if (runs != (unsigned long long)on || (stamp != 0) != (on != 0))
        g_error("%s with guard %d: runs %llu, stamp %llu", def->name, on, runs, stamp);
      if (on) continue;
      for (int i = 0; i < def->n_params; i++) {
        const DrKParam *p = &def->params[i];
        if (!p->is_pointer) continue;
        size_t bytes = counts[i] * elem_size(p->type);
        CUDA_OK(cudaMemcpy(back[i], dptr[i], bytes, cudaMemcpyDeviceToHost));
        if (memcmp(back[i], hin[i], bytes) != 0) g_error("%s with guard 0 wrote %s", def->name, p->name);
      }
    }
    for (int i = 0; i < def->n_params; i++) {
      if (dptr[i]) CUDA_OK(cudaFree(dptr[i]));
      g_free(hin[i]);
      g_free(back[i]);
    }
    if (scratch) CUDA_OK(cudaFree(scratch));
  }
  CUDA_OK(cudaFree(dguard));
  CUDA_OK(cudaFree(druns));
  CUDA_OK(cudaFree(dstamp));
  g_rand_free(r);
}

/* spin lasts its ns (events around it, within 5%), and spins on separate
 * streams overlap. */
static void test_spin(void) {
  SKIP_WITHOUT_GPU();
  const DrKernelDef *def = dr_kernel_find("spin");
  static const int64_t durations_ns[] = {1000000, 5000000, 20000000};
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  uint64_t counts[1] = {0};
  for (guint i = 0; i < G_N_ELEMENTS(durations_ns); i++) {
    DrKValue warm[1] = {{.i = 0}};
    DrKLaunch wl = {.args = warm, .counts = counts, .stream = stream, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    /* The first launch loads the module (lazy loading) between e0 and the
     * kernel; keep that out of the measurement. */
    g_assert_cmpint(def->launch(&wl), ==, 0);
    DrKValue args[1] = {{.i = durations_ns[i]}};
    DrKLaunch l = {.args = args, .counts = counts, .stream = stream};
    dr_kernel_default_shape(def, counts, args, l.grid, l.block);
    CUDA_OK(cudaEventRecord(e0, stream));
    g_assert_cmpint(def->launch(&l), ==, 0);
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    double want = durations_ns[i] / 1e6;
    g_string_append_printf(table, "spin %-15.3g ms: measured %.4f ms (%+.2f%%)\n", want, ms,
                           100.0 * (ms - want) / want);
    g_assert_cmpfloat(ms, >=, want * 0.999);
    g_assert_cmpfloat(ms, <=, want * 1.05);
  }
  /* 8 spins of 2 ms on 8 streams: overlapped, well under 8 x 2 ms. */
  cudaStream_t st[8];
  for (int i = 0; i < 8; i++) CUDA_OK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
  CUDA_OK(cudaDeviceSynchronize());
  gint64 t0 = g_get_monotonic_time();
  DrKValue args[1] = {{.i = 2000000}};
  for (int i = 0; i < 8; i++) {
    DrKLaunch l = {.args = args, .counts = counts, .stream = st[i], .grid = {1, 1, 1}, .block = {1, 1, 1}};
    g_assert_cmpint(def->launch(&l), ==, 0);
  }
  CUDA_OK(cudaDeviceSynchronize());
  double ms = (g_get_monotonic_time() - t0) / 1000.0;
  g_string_append_printf(table, "spin 8 x 2 ms on 8 streams: %.3f ms wall\n", ms);
  g_assert_cmpfloat(ms, <, 6.0);
  for (int i = 0; i < 8; i++) cudaStreamDestroy(st[i]);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  args[0].i = -1;
  DrKLaunch bad = {.args = args, .counts = counts, .stream = stream, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  g_assert_cmpint(def->launch(&bad), ==, cudaErrorInvalidValue);
}

/* Steady-state speed, for the record (no assertion beyond success): each
 * kernel on 16Mi elements (gemm: 4096^3) with its default shape, one
 * warm-up then 20 launches between two events on a zeroed input. Bytes
 * count each buffer once per access direction (readwrite twice). */
static void bench_kernel(const DrKernelDef *def, int64_t cols) {
  const uint64_t n = UINT64_C(16) << 20;
  uint64_t counts[16] = {0};
  DrKValue args[16];
  void *bufs[16] = {0};
  memset(args, 0, sizeof args);
  make_case(def, n, counts, args);
  const char *label = "16Mi";
  g_autofree char *cols_label = NULL;
  if (cols) { /* rows kernels: 16Mi elements in rows of `cols` */
    int cols_at = def->n_params == 3 ? 2 : 4;
    args[cols_at].i = cols;
    for (int i = 0; i < def->n_params; i++)
      if (def->params[i].is_pointer)
        counts[i] = (i == 1 || i == 2) && cols_at == 4 ? (uint64_t)cols : n / (uint64_t)cols * (uint64_t)cols;
    label = cols_label = g_strdup_printf("cols=%" G_GINT64_FORMAT, cols);
  }
  gboolean gemm = (def->flags & DR_KFLAG_BLAS) != 0;
  if (gemm) {
    args[3].i = args[4].i = args[5].i = 4096;
    counts[0] = counts[1] = counts[2] = UINT64_C(4096) * 4096;
    args[7].f = 0.0;
  }
  double bytes = 0;
  for (int i = 0; i < def->n_params; i++) {
    const DrKParam *p = &def->params[i];
    if (!p->is_pointer) continue;
    size_t b = counts[i] * elem_size(p->type);
    CUDA_OK(cudaMalloc(&bufs[i], b));
    CUDA_OK(cudaMemset(bufs[i], 0, b));
    args[i].ptr = bufs[i];
    bytes += (double)b * (p->access == DR_ACCESS_READ_WRITE ? 2 : 1);
  }
  DrKLaunch l = {.args = args, .counts = counts, .stream = stream, .blas = gemm ? blas : NULL};
  void *scratch = NULL;
  if (def->scratch_bytes) {
    CUDA_OK(cudaMalloc(&scratch, def->scratch_bytes));
    l.scratch = scratch;
  }
  dr_kernel_default_shape(def, counts, args, l.grid, l.block);
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  g_assert_cmpint(def->launch(&l), ==, 0);
  CUDA_OK(cudaEventRecord(e0, stream));
  for (int k = 0; k < 20; k++) g_assert_cmpint(def->launch(&l), ==, 0);
  CUDA_OK(cudaEventRecord(e1, stream));
  CUDA_OK(cudaEventSynchronize(e1));
  float ms;
  CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
  double us = ms * 1000.0 / 20;
  if (gemm)
    g_string_append_printf(table, "%-20s 4096^3     %10.1f us %8.1f TFLOP/s\n", def->name, us,
                           2.0 * 4096 * 4096 * 4096 / us / 1e6);
  else
    g_string_append_printf(table, "%-20s %-10s %10.1f us %8.1f GB/s\n", def->name, label, us,
                           bytes / us / 1e3);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (int i = 0; i < def->n_params; i++)
    if (bufs[i]) CUDA_OK(cudaFree(bufs[i]));
  if (scratch) CUDA_OK(cudaFree(scratch));
}

static void test_throughput(void) {
  SKIP_WITHOUT_GPU();
  g_string_append_printf(table, "\nsteady state, default shape:\n");
  static const int64_t cols[] = {37, 1024, 4096, 65536};
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *def = &dr_kernel_registry[i];
    if (strcmp(def->name, "spin") == 0) continue;
    if (strstr(def->name, "_rows_") == NULL)
      bench_kernel(def, 0);
    else
      for (guint c = 0; c < G_N_ELEMENTS(cols); c++) bench_kernel(def, cols[c]);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    g_snprintf(no_gpu_reason, sizeof no_gpu_reason, "no CUDA device: %s",
               e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
    cudaGetLastError();
  } else {
    have_gpu = TRUE;
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    char err[DR_KERR_SIZE];
    blas = dr_kblas_new(0, err);
    if (blas == NULL) g_error("dr_kblas_new: %s", err);
    if (dr_kblas_bind(blas, stream, err) != 0) g_error("dr_kblas_bind: %s", err);
  }
  table = g_string_new(NULL);
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *def = &dr_kernel_registry[i];
    g_assert_nonnull(tolerance_of(def->name)); /* every kernel has a case */
    if (strcmp(def->name, "spin") == 0) continue;
    g_autofree char *path = g_strdup_printf("/kernels/gpu/twin/%s", def->name);
    g_test_add_data_func(path, def, test_kernel);
  }
  g_test_add_func("/kernels/gpu/reduce-deterministic", test_reduce_deterministic);
  g_test_add_func("/kernels/gpu/gemm-capture", test_gemm_capture);
  g_test_add_func("/kernels/gpu/spin", test_spin);
  g_test_add_func("/kernels/gpu/guard", test_guard);
  g_test_add_func("/kernels/gpu/device-counts", test_device_counts);
  g_test_add_func("/kernels/gpu/throughput", test_throughput);
  int rc = g_test_run();
  if (have_gpu)
    g_print("\n%-20s %10s %12s %10s  %s\n%s", "kernel", "max |err|", "err/tol", "max us",
            "tolerance (max us: first uses included)", table->str);
  dr_kblas_free(blas);
  if (stream) cudaStreamDestroy(stream);
  g_string_free(table, TRUE);
  return rc;
}
