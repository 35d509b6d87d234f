/* nvrtc_cache_bench.c: what the NVRTC cubin cache (backends/nvrtc_cache.h)
 * saves when a `source:` kernel is loaded: a cold load (empty cache
 * directory: NVRTC compiles, the entry is written) against a warm one (the
 * entry is read and checked). CPU-only; it does not load the cubin onto a
 * GPU, which costs the same either way.
 *
 * Kernels: a ~100-line built-in one (tiled matmul, block reduction, row
 * softmax) and every .cu path given on the command line (for example
 * graphs/gpu/kernels/axpb.cu). NVRTC is opened by an untimed compile first,
 * so "cold" is the compile alone, not the one-off dlopen of libnvrtc; the
 * ratio is thereby a lower bound for a process's first load. Prints the
 * median of REPS runs of each, in ms. Usage:
 *   bazel run -c opt //bench:nvrtc_cache_bench -- [ARCH] [FILE.cu ...]
 * ARCH defaults to sm_90. Exit status 1 when NVRTC is missing. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/nvrtc_cache.h"

enum { REPS = 5 };

static const char kBuiltin[] =
    "// bench kernel: the kind of code a user kernel file holds.\n"
    "#define TILE 16\n"
    "template <typename T> __device__ T warp_sum(T v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "  return v;\n"
    "}\n"
    "template <typename T> __device__ T warp_max(T v) {\n"
    "  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));\n"
    "  return v;\n"
    "}\n"
    "template <typename T> __device__ T block_sum(T v) {\n"
    "  __shared__ T part[32];\n"
    "  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
    "  v = warp_sum(v);\n"
    "  if (lane == 0) part[warp] = v;\n"
    "  __syncthreads();\n"
    "  v = threadIdx.x < (blockDim.x + 31) / 32 ? part[lane] : T(0);\n"
    "  if (warp == 0) v = warp_sum(v);\n"
    "  return v;\n"
    "}\n"
    "template <typename T>\n"
    "__device__ void matmul_tile(const T *a, const T *b, T *c, int m, int n, int k) {\n"
    "  __shared__ T as[TILE][TILE + 1];\n"
    "  __shared__ T bs[TILE][TILE + 1];\n"
    "  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;\n"
    "  T acc = T(0);\n"
    "  for (int t = 0; t < (k + TILE - 1) / TILE; t++) {\n"
    "    int ak = t * TILE + threadIdx.x, bk = t * TILE + threadIdx.y;\n"
    "    as[threadIdx.y][threadIdx.x] = row < m && ak < k ? a[(long long)row * k + ak] : T(0);\n"
    "    bs[threadIdx.y][threadIdx.x] = bk < k && col < n ? b[(long long)bk * n + col] : T(0);\n"
    "    __syncthreads();\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TILE; i++) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (row < m && col < n) c[(long long)row * n + col] = acc;\n"
    "}\n"
    "extern \"C\" __global__ void matmul_f32(const float *a, const float *b, float *c, int m, int n, int k) "
    "{\n"
    "  matmul_tile<float>(a, b, c, m, n, k);\n"
    "}\n"
    "extern \"C\" __global__ void matmul_f64(const double *a, const double *b, double *c, int m, int n, int "
    "k) {\n"
    "  matmul_tile<double>(a, b, c, m, n, k);\n"
    "}\n"
    "extern \"C\" __global__ void sum_f32(const float *x, float *out, long long n) {\n"
    "  float v = 0.0f;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    v += x[i];\n"
    "  v = block_sum(v);\n"
    "  if (threadIdx.x == 0) atomicAdd(out, v);\n"
    "}\n"
    "extern \"C\" __global__ void sum_f64(const double *x, double *out, long long n) {\n"
    "  double v = 0.0;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    v += x[i];\n"
    "  v = block_sum(v);\n"
    "  if (threadIdx.x == 0) atomicAdd(out, v);\n"
    "}\n"
    "// One warp per row: y = softmax(x) over `cols`.\n"
    "extern \"C\" __global__ void softmax_rows_f32(const float *x, float *y, int rows, int cols) {\n"
    "  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;\n"
    "  if (warp >= rows) return;\n"
    "  const float *in = x + (long long)warp * cols;\n"
    "  float *out = y + (long long)warp * cols;\n"
    "  float m = -__int_as_float(0x7f800000);\n"
    "  for (int c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);\n"
    "  m = __shfl_sync(0xffffffffu, warp_max(m), 0);\n"
    "  float s = 0.0f;\n"
    "  for (int c = lane; c < cols; c += 32) s += __expf(in[c] - m);\n"
    "  s = __shfl_sync(0xffffffffu, warp_sum(s), 0);\n"
    "  float inv = 1.0f / s;\n"
    "  for (int c = lane; c < cols; c += 32) out[c] = __expf(in[c] - m) * inv;\n"
    "}\n"
    "extern \"C\" __global__ void layernorm_f32(const float *x, float *y, const float *g, const float *b,\n"
    "                                           int rows, int cols, float eps) {\n"
    "  int row = blockIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  const float *in = x + (long long)row * cols;\n"
    "  float s = 0.0f, s2 = 0.0f;\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x) {\n"
    "    float v = in[c];\n"
    "    s += v;\n"
    "    s2 += v * v;\n"
    "  }\n"
    "  __shared__ float mean, rstd;\n"
    "  s = block_sum(s);\n"
    "  __syncthreads();\n"
    "  s2 = block_sum(s2);\n"
    "  if (threadIdx.x == 0) {\n"
    "    mean = s / cols;\n"
    "    rstd = rsqrtf(s2 / cols - mean * mean + eps);\n"
    "  }\n"
    "  __syncthreads();\n"
    "  for (int c = threadIdx.x; c < cols; c += blockDim.x)\n"
    "    y[(long long)row * cols + c] = (in[c] - mean) * rstd * g[c] + b[c];\n"
    "}\n";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Empties the flat cache directory `dir`. */
static void empty_dir(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  const char *e;
  while ((e = g_dir_read_name(d)) != NULL) {
    g_autofree char *p = g_build_filename(dir, e, NULL);
    (void)g_remove(p);
  }
  g_dir_close(d);
}

/* One timed load; returns ms, or -1 (message printed) on failure. */
static double timed_load(const char *name, const char *src, gsize len, const char *arch, gboolean want_hit,
                         gsize *cubin_len) {
  char *cubin = NULL;
  gboolean hit = FALSE;
  g_autoptr(GError) error = NULL;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = dr__nvrtc_compile_cached(name, src, len, arch, NULL, &cubin, cubin_len, &hit, &error);
  gint64 t1 = g_get_monotonic_time();
  g_free(cubin);
  if (!ok) {
    fprintf(stderr, "nvrtc_cache_bench: %s\n", error->message);
    return -1;
  }
  if (hit != want_hit) {
    fprintf(stderr, "nvrtc_cache_bench: %s: expected a %s\n", name, want_hit ? "hit" : "miss");
    return -1;
  }
  return (double)(t1 - t0) / 1000.0;
}

/* Benches one kernel and prints its table row. Returns FALSE on failure. */
static gboolean bench_one(const char *name, const char *src, gsize len, const char *arch, const char *dir) {
  double cold[REPS], warm[REPS];
  gsize cubin_len = 0;
  for (int r = 0; r < REPS; r++) {
    empty_dir(dir);
    if ((cold[r] = timed_load(name, src, len, arch, FALSE, &cubin_len)) < 0) return FALSE;
  }
  for (int r = 0; r < REPS; r++)
    if ((warm[r] = timed_load(name, src, len, arch, TRUE, &cubin_len)) < 0) return FALSE;
  double c = median(cold, REPS), w = median(warm, REPS);
  printf("%-28s %6zu %8zu %10.3f %10.3f %9.1fx\n", name, (size_t)len, (size_t)cubin_len, c, w, c / w);
  return TRUE;
}

int main(int argc, char **argv) {
  const char *arch = argc > 1 && g_str_has_prefix(argv[1], "sm_") ? argv[1] : "sm_90";
  int first_file = argc > 1 && g_str_has_prefix(argv[1], "sm_") ? 2 : 1;
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("nvrtc-bench-XXXXXX", &error);
  if (dir == NULL) {
    fprintf(stderr, "nvrtc_cache_bench: %s\n", error->message);
    return 1;
  }
  g_setenv("DAGRUN_CACHE_DIR", dir, TRUE);

  /* Untimed: opens NVRTC, so no timed row pays for the dlopen. */
  char *cubin = NULL;
  gsize cubin_len = 0;
  gint64 t0 = g_get_monotonic_time();
  if (!dr__nvrtc_compile_cached("warmup.cu", kBuiltin, strlen(kBuiltin), arch, NULL, &cubin, &cubin_len, NULL,
                                &error)) {
    fprintf(stderr, "nvrtc_cache_bench: %s\n", error->message);
    return 1;
  }
  double first_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
  g_free(cubin);

  printf("NVRTC cubin cache, arch %s, median of %d, ms (first compile incl. dlopen: %.1f ms)\n", arch, REPS,
         first_ms);
  printf("%-28s %6s %8s %10s %10s %10s\n", "kernel", "src B", "cubin B", "cold ms", "warm ms", "cold/warm");
  gboolean ok = bench_one("builtin (~100 lines)", kBuiltin, strlen(kBuiltin), arch, dir);
  for (int i = first_file; ok && i < argc; i++) {
    g_autofree char *src = NULL;
    gsize len = 0;
    if (!g_file_get_contents(argv[i], &src, &len, &error)) {
      fprintf(stderr, "nvrtc_cache_bench: %s\n", error->message);
      ok = FALSE;
      break;
    }
    ok = bench_one(argv[i], src, len, arch, dir);
  }
  empty_dir(dir);
  (void)g_rmdir(dir);
  return ok ? 0 : 1;
}
