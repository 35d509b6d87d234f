/* kernels_test.c: CPU tests of the built-in kernel library (kernels/): the
 * registry's shape (sorted, unique, well-formed parameters), lookup, default
 * launch shapes, the --kernels listing, the argument checks, the bf16/f16
 * conversions, and every host twin against an independent straightforward
 * reference in double on random inputs of several sizes (1, block
 * multiples and non-multiples). The CUDA launchers are tested against these
 * twins by kernels_gpu_test.c. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/halfconv.h"
#include "kernels/impl.h"
#include "kernels/registry.h"
#include "tests/kernels/elem_size.h"

static const uint64_t sizes[] = {1, 2, 3, 4, 5, 31, 255, 256, 257, 1000, 4099};

/* ---- helpers ------------------------------------------------------------ */

/* Runs the twin of `name` on args/counts, asserting it accepts them. */
static void run_host(const char *name, DrKValue *args, uint64_t *counts) {
  const DrKernelDef *def = dr_kernel_find(name);
  g_assert_nonnull(def);
  DrKLaunch l = {.args = args, .counts = counts};
  char err[DR_KERR_SIZE] = "";
  int rc = def->host(&l, err);
  if (rc != 0) g_error("%s refused its arguments: %s", name, err);
}

/* Runs the twin of `name` expecting a refusal whose message contains
 * `needle`. */
static void refuse_host(const char *name, DrKValue *args, uint64_t *counts, const char *needle) {
  const DrKernelDef *def = dr_kernel_find(name);
  DrKLaunch l = {.args = args, .counts = counts};
  char err[DR_KERR_SIZE] = "";
  g_assert_cmpint(def->host(&l, err), ==, -1);
  g_assert_nonnull(strstr(err, needle));
}

static float *rand_f32(GRand *r, uint64_t n, double lo, double hi) {
  float *v = g_new(float, n ? n : 1);
  for (uint64_t i = 0; i < n; i++) v[i] = (float)g_rand_double_range(r, lo, hi);
  return v;
}

/* |got - want| <= rel*|want| + abs, reported with the index. */
static void assert_close(const char *what, uint64_t i, double got, double want, double rel, double abs) {
  double tol = rel * fabs(want) + abs;
  if (!(fabs(got - want) <= tol))
    g_error("%s[%" G_GUINT64_FORMAT "]: got %.9g, want %.9g (tolerance %.3g)", what, i, got, want, tol);
}

/* ---- the registry ------------------------------------------------------- */

static void test_registry_sorted_unique(void) {
  g_assert_cmpint(dr_kernel_registry_len, >=, 20);
  for (int i = 1; i < dr_kernel_registry_len; i++)
    if (strcmp(dr_kernel_registry[i - 1].name, dr_kernel_registry[i].name) >= 0)
      g_error("registry not strictly sorted at %s, %s", dr_kernel_registry[i - 1].name,
              dr_kernel_registry[i].name);
}

/* The X-macro list of impl.h and the table agree, in the same order. */
static void test_registry_matches_list(void) {
  static const char *const names[] = {
#define DR_X(n) #n,
      DR_KERNEL_LIST(DR_X)
#undef DR_X
  };
  g_assert_cmpint(G_N_ELEMENTS(names), ==, dr_kernel_registry_len);
  for (int i = 0; i < dr_kernel_registry_len; i++) g_assert_cmpstr(names[i], ==, dr_kernel_registry[i].name);
}

static gboolean is_scalar_type(DrElemType t) {
  return t == DR_ELEM_I32 || t == DR_ELEM_I64 || t == DR_ELEM_F32 || t == DR_ELEM_F64;
}

static void test_registry_params_well_formed(void) {
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *k = &dr_kernel_registry[i];
    g_test_message("%s", k->name);
    g_assert_nonnull(k->summary);
    g_assert_cmpstr(k->summary, !=, "");
    g_assert_nonnull(k->launch);
    g_assert_nonnull(k->host);
    g_assert_cmpint(k->n_params, >=, 1);
    g_assert_cmpuint(k->block, >=, 1);
    g_assert_cmpuint(k->block, <=, 1024);
    g_assert_cmpint(k->grid_over, >=, -1);
    g_assert_cmpint(k->grid_over, <, k->n_params);
    if (k->flags & DR_KFLAG_BLAS) g_assert_cmpint(k->grid_over, ==, -1);
    g_assert_cmpuint(k->flags & ~(DR_KFLAG_BLAS | DR_KFLAG_STAMPS | DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS),
                     ==, 0);
    /* Counts from device memory: the element-wise ones (elementwise.cu),
     * whose output element i depends on element i alone. */
    static const char *const elementwise[] = {"add_bf16", "add_f16",    "add_f32",   "axpy_f32",
                                              "fill_f32", "gelu_f32",   "iota_f32",  "mul_f32",
                                              "relu_f32", "scale_bf16", "scale_f16", "scale_f32"};
    gboolean is_elementwise = FALSE;
    for (guint e = 0; e < G_N_ELEMENTS(elementwise); e++)
      is_elementwise = is_elementwise || strcmp(elementwise[e], k->name) == 0;
    g_assert_cmpint(!!(k->flags & DR_KFLAG_DEVICE_COUNTS), ==, is_elementwise);
    /* Every built-in stamps its own end except those cuBLAS runs. */
    g_assert_cmpint(!!(k->flags & DR_KFLAG_STAMPS), ==, !(k->flags & DR_KFLAG_BLAS));
    /* Every built-in can be guarded (a while body's unrolled copies) but
     * the cuBLAS ones and checksum_u8 (its launcher's memset). */
    g_assert_cmpint(!!(k->flags & DR_KFLAG_GUARD), ==,
                    !(k->flags & DR_KFLAG_BLAS) && strcmp(k->name, "checksum_u8") != 0);
    gboolean any_pointer = FALSE;
    for (int j = 0; j < k->n_params; j++) {
      const DrKParam *p = &k->params[j];
      g_assert_nonnull(p->name);
      g_assert_true(g_regex_match_simple("^[a-z][a-z0-9_]*$", p->name, 0, 0));
      g_assert_nonnull(p->doc);
      g_assert_cmpstr(p->doc, !=, "");
      g_assert_cmpint(p->type, >=, 0);
      g_assert_cmpint(p->type, <, DR_ELEM_N_TYPES);
      for (int m = 0; m < j; m++) g_assert_cmpstr(k->params[m].name, !=, p->name);
      if (p->is_pointer) {
        any_pointer = TRUE;
        g_assert_cmpint(p->access, >=, 0);
        g_assert_cmpint(p->access, <, DR_ACCESS_N_MODES);
        g_assert_false(p->optional);
      } else {
        g_assert_true(is_scalar_type(p->type));
        g_assert_cmpint(p->access, ==, DR_ACCESS_READ);
        /* A required parameter never follows an optional one. */
        if (j > 0 && k->params[j - 1].optional && !k->params[j - 1].is_pointer) g_assert_true(p->optional);
      }
    }
    /* The name carries the element type of its buffers. */
    if (any_pointer && strcmp(k->name, "spin") != 0)
      g_assert_true(g_regex_match_simple("_(f32|f64|bf16|f16|u8)$", k->name, 0, 0));
    if (k->grid_over >= 0)
      g_assert_true(k->params[k->grid_over].is_pointer || k->params[k->grid_over].type == DR_ELEM_I64 ||
                    k->params[k->grid_over].type == DR_ELEM_I32);
  }
}

static void test_registry_find(void) {
  for (int i = 0; i < dr_kernel_registry_len; i++)
    g_assert_true(dr_kernel_find(dr_kernel_registry[i].name) == &dr_kernel_registry[i]);
  g_assert_null(dr_kernel_find("scale"));
  g_assert_null(dr_kernel_find("scale_f33"));
  g_assert_null(dr_kernel_find(""));
  g_assert_null(dr_kernel_find(NULL));
  /* The spec's example: scale_f32 with x (read), alpha (scalar), y (write). */
  const DrKernelDef *s = dr_kernel_find("scale_f32");
  g_assert_cmpint(s->n_params, ==, 3);
  g_assert_cmpint(dr_kernel_param_index(s, "x"), ==, 0);
  g_assert_cmpint(dr_kernel_param_index(s, "alpha"), ==, 1);
  g_assert_cmpint(dr_kernel_param_index(s, "y"), ==, 2);
  g_assert_cmpint(dr_kernel_param_index(s, "z"), ==, -1);
  g_assert_cmpint(s->params[0].access, ==, DR_ACCESS_READ);
  g_assert_false(s->params[1].is_pointer);
  g_assert_cmpint(s->params[1].type, ==, DR_ELEM_F32);
  g_assert_cmpint(s->params[2].access, ==, DR_ACCESS_WRITE);
  const DrKernelDef *a = dr_kernel_find("axpy_f32");
  g_assert_cmpint(a->params[dr_kernel_param_index(a, "y")].access, ==, DR_ACCESS_READ_WRITE);
  const DrKernelDef *ln = dr_kernel_find("layernorm_rows_f32");
  const DrKParam *eps = &ln->params[dr_kernel_param_index(ln, "eps")];
  g_assert_true(eps->optional);
  g_assert_cmpfloat(eps->def, ==, 1e-5);
  g_assert_true(dr_kernel_find("gemm_f32")->flags & DR_KFLAG_BLAS);
  g_assert_cmpuint(dr_kernel_find("reduce_sum_f32")->scratch_bytes, >=,
                   DR_REDUCE_MAX_BLOCKS * sizeof(double));
}

static void test_registry_default_shape(void) {
  unsigned grid[3], block[3];
  uint64_t counts[3] = {1000, 0, 1000};
  DrKValue args[3] = {{0}};
  dr_kernel_default_shape(dr_kernel_find("scale_f32"), counts, args, grid, block);
  g_assert_cmpuint(grid[0], ==, 4);
  g_assert_cmpuint(block[0], ==, 256);
  g_assert_cmpuint(grid[1] * grid[2] * block[1] * block[2], ==, 1);
  counts[0] = counts[2] = 0;
  dr_kernel_default_shape(dr_kernel_find("scale_f32"), counts, args, grid, block);
  g_assert_cmpuint(grid[0], ==, 1);
  counts[0] = counts[2] = UINT64_C(1) << 50;
  dr_kernel_default_shape(dr_kernel_find("scale_f32"), counts, args, grid, block);
  g_assert_cmpuint(grid[0], ==, 0x7fffffffu);
  args[0].i = 1000000;
  dr_kernel_default_shape(dr_kernel_find("spin"), counts, args, grid, block);
  g_assert_cmpuint(grid[0], ==, 1);
  g_assert_cmpuint(block[0], ==, 1);
}

static void test_registry_list(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  dr_kernels_list(f);
  fclose(f);
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    g_autofree char *head = g_strdup_printf("%s\n", dr_kernel_registry[i].name);
    g_assert_nonnull(strstr(text, head));
  }
  g_assert_nonnull(strstr(text, "scale_f32\n  y = alpha * x\n"));
  g_assert_nonnull(strstr(text, "    x: f32* read"));
  g_assert_nonnull(strstr(text, "    alpha: f32  #"));
  g_assert_nonnull(strstr(text, "    y: f32* readwrite"));
  g_assert_nonnull(strstr(text, "    eps: f32 = 1e-05"));
  g_assert_nonnull(strstr(text, "launch: 1 block of 1"));
  g_assert_nonnull(strstr(text, "launch: cuBLAS"));
  /* Every kernel with a check states its rules, listed after its
   * parameters; the others have none. */
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *k = &dr_kernel_registry[i];
    const char *rules = dr_kernel_rules(k);
    g_assert_true((k->check != NULL) == (rules != NULL));
    if (rules == NULL) continue;
    g_autofree char *line = g_strdup_printf("  rules: %s\n", rules);
    /* Within this kernel's entry: after its name, before the next one's. */
    g_autofree char *name = g_strdup_printf("%s\n  ", k->name);
    const char *head = strstr(text, name);
    g_assert_nonnull(head);
    const char *at = strstr(head, line);
    g_assert_nonnull(at);
    if (i + 1 < dr_kernel_registry_len) {
      g_autofree char *next = g_strdup_printf("\n%s\n  ", dr_kernel_registry[i + 1].name);
      g_assert_true(at < strstr(text, next));
    }
  }
  g_assert_nonnull(strstr(text, "gemm_f32\n"));
  g_assert_cmpstr(dr_kernel_rules(dr_kernel_find("gemm_f32")), ==,
                  "1 <= m, n, k <= 2147483647; a has m*k elements, b k*n, c m*n");
  g_assert_cmpstr(dr_kernel_rules(dr_kernel_find("softmax_rows_f32")), ==,
                  "cols >= 1; the length of x is a multiple of cols; y has the length of x");
  g_assert_null(dr_kernel_rules(dr_kernel_find("fill_f32")));
  DrKernelDef copy = *dr_kernel_find("scale_f32");
  g_assert_null(dr_kernel_rules(&copy));
  free(text);
}

/* ---- argument checks ---------------------------------------------------- */

static void test_checks(void) {
  char err[DR_KERR_SIZE];
  DrKValue a[8] = {{0}};
  uint64_t c[8] = {0};
  const DrKernelDef *scale = dr_kernel_find("scale_f32");
  c[0] = 10, c[2] = 10;
  g_assert_cmpint(scale->check(c, a, err), ==, 0);
  c[2] = 9;
  g_assert_cmpint(scale->check(c, a, err), ==, -1);
  g_assert_cmpstr(err, ==, "x and y must have the same length (10 and 9 elements)");

  const DrKernelDef *add = dr_kernel_find("add_f32");
  c[0] = 5, c[1] = 6, c[2] = 5;
  g_assert_cmpint(add->check(c, a, err), ==, -1);
  g_assert_nonnull(strstr(err, "a and b"));
  c[1] = 5, c[2] = 4;
  g_assert_cmpint(add->check(c, a, err), ==, -1);
  g_assert_nonnull(strstr(err, "a and y"));

  const DrKernelDef *red = dr_kernel_find("reduce_sum_f32");
  c[0] = 100, c[1] = 2;
  g_assert_cmpint(red->check(c, a, err), ==, -1);
  g_assert_cmpstr(err, ==, "y must have exactly 1 element (it has 2)");
  c[0] = 0, c[1] = 1;
  g_assert_cmpint(red->check(c, a, err), ==, 0);

  const DrKernelDef *sm = dr_kernel_find("softmax_rows_f32");
  c[0] = 12, c[1] = 12, a[2].i = 5;
  g_assert_cmpint(sm->check(c, a, err), ==, -1);
  g_assert_nonnull(strstr(err, "multiple of cols (5)"));
  a[2].i = 0;
  g_assert_cmpint(sm->check(c, a, err), ==, -1);
  g_assert_nonnull(strstr(err, "cols must be positive"));
  a[2].i = 4;
  g_assert_cmpint(sm->check(c, a, err), ==, 0);

  const DrKernelDef *ln = dr_kernel_find("layernorm_rows_f32");
  memset(a, 0, sizeof a);
  c[0] = 12, c[1] = 4, c[2] = 3, c[3] = 12, a[4].i = 4, a[5].f = 1e-5;
  g_assert_cmpint(ln->check(c, a, err), ==, -1);
  g_assert_cmpstr(err, ==, "beta must have cols (4) elements (it has 3)");
  c[2] = 4;
  g_assert_cmpint(ln->check(c, a, err), ==, 0);
  a[5].f = -1.0;
  g_assert_cmpint(ln->check(c, a, err), ==, -1);

  const DrKernelDef *gemm = dr_kernel_find("gemm_f32");
  memset(a, 0, sizeof a);
  a[3].i = 2, a[4].i = 3, a[5].i = 4;
  c[0] = 8, c[1] = 12, c[2] = 6;
  g_assert_cmpint(gemm->check(c, a, err), ==, 0);
  c[1] = 11;
  g_assert_cmpint(gemm->check(c, a, err), ==, -1);
  g_assert_cmpstr(err, ==, "b must have k*n = 12 elements (it has 11)");
  a[5].i = 0;
  g_assert_cmpint(gemm->check(c, a, err), ==, -1);
  g_assert_nonnull(strstr(err, "k must be in 1.."));
  a[5].i = INT64_C(1) << 31;
  g_assert_cmpint(gemm->check(c, a, err), ==, -1);

  const DrKernelDef *spin = dr_kernel_find("spin");
  a[0].i = -1;
  g_assert_cmpint(spin->check(c, a, err), ==, -1);
  a[0].i = 1000;
  g_assert_cmpint(spin->check(c, a, err), ==, 0);

  /* The twins refuse what the checks refuse. */
  float x[4] = {0}, y[4] = {0};
  DrKValue args[3] = {{.ptr = x}, {.f = 2.0}, {.ptr = y}};
  uint64_t counts[3] = {4, 0, 3};
  refuse_host("scale_f32", args, counts, "same length");
}

/* ---- bf16 / f16 conversions -------------------------------------------- */

/* Every non-NaN 16-bit pattern survives the round trip through f32. */
static void test_half_roundtrip(void) {
  for (uint32_t h = 0; h < 0x10000u; h++) {
    float b = dr__bf16_to_f32((uint16_t)h);
    if (!isnan(b)) g_assert_cmphex(dr__f32_to_bf16(b), ==, h);
    float f = dr__f16_to_f32((uint16_t)h);
    if (!isnan(f)) g_assert_cmphex(dr__f32_to_f16(f), ==, h);
  }
  g_assert_cmpfloat(dr__f16_to_f32(0x3c00), ==, 1.0f);
  g_assert_cmpfloat(dr__f16_to_f32(0x0001), ==, ldexpf(1.0f, -24));
  g_assert_cmpfloat(dr__f16_to_f32(0x7bff), ==, 65504.0f);
  g_assert_cmpfloat(dr__bf16_to_f32(0x3f80), ==, 1.0f);
  g_assert_true(isnan(dr__bf16_to_f32(dr__f32_to_bf16(NAN))));
  g_assert_true(isnan(dr__f16_to_f32(dr__f32_to_f16(NAN))));
  g_assert_cmphex(dr__f32_to_f16(65520.0f), ==, 0x7c00); /* rounds to inf */
  g_assert_cmphex(dr__f32_to_f16(65519.0f), ==, 0x7bff);
  g_assert_cmphex(dr__f32_to_f16(-INFINITY), ==, 0xfc00);
}

/* `to(f)` is a nearest 16-bit value to f, and on a tie the even one. */
static void check_nearest(float f, uint16_t got, float (*from)(uint16_t)) {
  double v = from(got), d = fabs(v - (double)f);
  for (int s = -1; s <= 1; s += 2) {
    uint16_t nb = (uint16_t)(got + s);
    double w = from(nb);
    if (isnan(w) || isinf(w) || ((nb ^ got) & 0x8000u)) continue;
    double dn = fabs(w - (double)f);
    if (dn < d || (dn == d && (got & 1u)))
      g_error("%.9g rounded to %#x (%.9g), but %#x (%.9g) is nearer or even", f, got, v, nb, w);
  }
}

static void test_half_rounding(void) {
  GRand *r = g_rand_new_with_seed(7);
  for (int i = 0; i < 200000; i++) {
    float f = (float)g_rand_double_range(r, -70000.0, 70000.0);
    if (i % 3 == 0) f = ldexpf(f, -g_rand_int_range(r, 10, 40)); /* down to subnormals */
    if (i % 7 == 0) /* exact ties: a 16-bit value and a half step */
      f = dr__bits_f32((dr__f32_bits(f) & 0xffff0000u) | 0x8000u);
    check_nearest(f, dr__f32_to_bf16(f), dr__bf16_to_f32);
    if (fabsf(f) < 65504.0f) check_nearest(f, dr__f32_to_f16(f), dr__f16_to_f32);
  }
  g_rand_free(r);
}

/* ---- host twins against independent references ------------------------ */

static void test_host_fill_iota(void) {
  for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
    uint64_t n = sizes[s];
    float *y = g_new(float, n);
    DrKValue a[3] = {{.ptr = y}, {.f = -3.5}, {.f = 0.25}};
    uint64_t c[3] = {n, 0, 0};
    run_host("fill_f32", a, c);
    for (uint64_t i = 0; i < n; i++) g_assert_cmpfloat(y[i], ==, -3.5f);
    run_host("iota_f32", a, c);
    for (uint64_t i = 0; i < n; i++) g_assert_cmpfloat(y[i], ==, -3.5 + 0.25 * (double)i); /* exact here */
    g_free(y);
  }
}

/* Element-wise f32 kernels: the twin against a double formula. */
typedef double (*RefFn)(double a, double b, double s);
static double ref_scale(double x, double b, double s) { return s * x; }
static double ref_axpy(double x, double y, double s) { return s * x + y; }
static double ref_add(double a, double b, double s) { return a + b; }
static double ref_mul(double a, double b, double s) { return a * b; }
static double ref_relu(double x, double b, double s) { return x > 0 ? x : 0; }
static double ref_gelu(double x, double b, double s) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / G_PI) * (x + 0.044715 * x * x * x)));
}

static void check_elementwise(const char *name, RefFn ref, double rel, double abs) {
  GRand *r = g_rand_new_with_seed(11);
  const DrKernelDef *def = dr_kernel_find(name);
  for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
    uint64_t n = sizes[s];
    float *u = rand_f32(r, n, -4, 4), *v = rand_f32(r, n, -4, 4);
    float *y = g_new(float, n);
    float *v0 = g_memdup2(v, n * sizeof(float));
    double alpha = 1.7;
    DrKValue args[3];
    uint64_t counts[3] = {n, n, n};
    /* Parameter order per registry.c: (x, alpha, y), (alpha, x, y),
     * (a, b, y) or (x, y). */
    float *out = y;
    if (strcmp(name, "scale_f32") == 0) {
      args[0].ptr = u, args[1].f = alpha, args[2].ptr = y;
    } else if (strcmp(name, "axpy_f32") == 0) {
      args[0].f = alpha, args[1].ptr = u, args[2].ptr = v, out = v;
    } else if (def->n_params == 3) {
      args[0].ptr = u, args[1].ptr = v, args[2].ptr = y;
    } else {
      args[0].ptr = u, args[1].ptr = y;
    }
    run_host(name, args, counts);
    for (uint64_t i = 0; i < n; i++)
      assert_close(name, i, out[i], ref(u[i], v0[i], (double)(float)alpha), rel, abs);
    g_free(u), g_free(v), g_free(v0), g_free(y);
  }
  g_rand_free(r);
}

/* Correctly rounded ops: within half an ulp of f32 (2^-24 relative). */
static void test_host_scale(void) { check_elementwise("scale_f32", ref_scale, 6e-8, 0); }
static void test_host_add(void) { check_elementwise("add_f32", ref_add, 6e-8, 0); }
static void test_host_mul(void) { check_elementwise("mul_f32", ref_mul, 6e-8, 0); }
static void test_host_relu(void) { check_elementwise("relu_f32", ref_relu, 0, 0); }
/* fmaf rounds once: half an ulp of the exact result. */
static void test_host_axpy(void) { check_elementwise("axpy_f32", ref_axpy, 6e-8, 0); }
/* f32 tanhf and the rounding of x^3: a few ulp, and near gelu's zero an
 * absolute floor. */
static void test_host_gelu(void) { check_elementwise("gelu_f32", ref_gelu, 1e-6, 1e-7); }

static void test_host_relu_nan(void) {
  float x[3] = {NAN, -0.0f, INFINITY}, y[3];
  DrKValue a[2] = {{.ptr = x}, {.ptr = y}};
  uint64_t c[2] = {3, 3};
  run_host("relu_f32", a, c);
  g_assert_cmpfloat(y[0], ==, 0.0f);
  g_assert_cmpfloat(y[1], ==, 0.0f);
  g_assert_true(isinf(y[2]));
}

/* bf16/f16: one rounding of the exact double result to the 16-bit format:
 * within half its ulp (2^-8 bf16, 2^-11 f16 relative), f16 subnormals
 * aside (kept away by the input range). */
static void check_half(const char *name, int bf16, int binary) {
  GRand *r = g_rand_new_with_seed(13);
  float (*from)(uint16_t) = bf16 ? dr__bf16_to_f32 : dr__f16_to_f32;
  uint16_t (*to)(float) = bf16 ? dr__f32_to_bf16 : dr__f32_to_f16;
  double rel = bf16 ? 1.0 / 256 : 1.0 / 2048;
  for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
    uint64_t n = sizes[s];
    uint16_t *a = g_new(uint16_t, n), *b = g_new(uint16_t, n), *y = g_new(uint16_t, n);
    for (uint64_t i = 0; i < n; i++) {
      a[i] = to((float)g_rand_double_range(r, 0.5, 8));
      b[i] = to((float)g_rand_double_range(r, -4, -0.25));
    }
    DrKValue args[3];
    uint64_t counts[3] = {n, n, n};
    args[0].ptr = a, args[2].ptr = y;
    if (binary)
      args[1].ptr = b;
    else
      args[1].f = -1.3;
    run_host(name, args, counts);
    for (uint64_t i = 0; i < n; i++) {
      double want =
          binary ? (double)from(a[i]) + (double)from(b[i]) : (double)(float)-1.3 * (double)from(a[i]);
      assert_close(name, i, from(y[i]), want, rel * 1.0001, 0);
    }
    g_free(a), g_free(b), g_free(y);
  }
  g_rand_free(r);
}

static void test_host_half(void) {
  check_half("scale_bf16", 1, 0);
  check_half("scale_f16", 0, 0);
  check_half("add_bf16", 1, 1);
  check_half("add_f16", 0, 1);
}

/* Reductions: against a Kahan sum in double; f32 results within 1e-6 of
 * sum|x| (the final rounding is 6e-8 of |sum|). Run twice: same bits. */
static void test_host_reduce(void) {
  GRand *r = g_rand_new_with_seed(17);
  static const uint64_t big[] = {1, 7, 256, 1000, 65537, 1000003};
  for (guint s = 0; s < G_N_ELEMENTS(big); s++) {
    uint64_t n = big[s];
    float *x = rand_f32(r, n, -1, 1);
    double *xd = g_new(double, n);
    double sum = 0, comp = 0, sabs = 0;
    for (uint64_t i = 0; i < n; i++) {
      xd[i] = g_rand_double_range(r, -1, 1);
      double yk = (double)x[i] - comp, t = sum + yk;
      comp = (t - sum) - yk;
      sum = t;
      sabs += fabs(x[i]);
    }
    float y1 = 0, y2 = 0;
    DrKValue a[2] = {{.ptr = x}, {.ptr = &y1}};
    uint64_t c[2] = {n, 1};
    run_host("reduce_sum_f32", a, c);
    a[1].ptr = &y2;
    run_host("reduce_sum_f32", a, c);
    g_assert_cmphex(dr__f32_bits(y1), ==, dr__f32_bits(y2));
    assert_close("reduce_sum_f32", n, y1, sum, 0, 1e-6 * sabs + 1e-30);

    double d1 = 0, d2 = 0, dsum = 0, dabs = 0;
    comp = 0;
    for (uint64_t i = 0; i < n; i++) {
      double yk = xd[i] - comp, t = dsum + yk;
      comp = (t - dsum) - yk;
      dsum = t;
      dabs += fabs(xd[i]);
    }
    a[0].ptr = xd, a[1].ptr = &d1;
    run_host("reduce_sum_f64", a, c);
    a[1].ptr = &d2;
    run_host("reduce_sum_f64", a, c);
    g_assert_true(memcmp(&d1, &d2, sizeof d1) == 0);
    assert_close("reduce_sum_f64", n, d1, dsum, 0, 1e-14 * dabs);
    g_free(x), g_free(xd);
  }
  /* Empty input sums to 0. */
  float y = 1;
  DrKValue a[2] = {{.ptr = NULL}, {.ptr = &y}};
  uint64_t c[2] = {0, 1};
  run_host("reduce_sum_f32", a, c);
  g_assert_cmpfloat(y, ==, 0.0f);
  g_rand_free(r);
}

/* checksum_u8 against SplitMix64 written out here, and its sensitivity. */
static uint64_t ref_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int64_t checksum(const uint8_t *x, uint64_t n) {
  int64_t y = 0;
  DrKValue a[2] = {{.ptr = (void *)x}, {.ptr = &y}};
  uint64_t c[2] = {n, 1};
  run_host("checksum_u8", a, c);
  return y;
}

static void test_host_checksum(void) {
  GRand *r = g_rand_new_with_seed(19);
  for (guint s = 0; s < G_N_ELEMENTS(sizes); s++) {
    uint64_t n = sizes[s];
    uint8_t *x = g_new(uint8_t, n);
    uint64_t want = 0;
    for (uint64_t i = 0; i < n; i++) {
      x[i] = (uint8_t)g_rand_int(r);
      want += ref_mix(i * 256 + x[i]);
    }
    int64_t got = checksum(x, n);
    g_assert_cmphex((uint64_t)got, ==, want);
    x[n / 2] ^= 1;
    g_assert_cmphex((uint64_t)checksum(x, n), !=, want);
    if (n >= 2 && x[0] != x[1]) {
      x[n / 2] ^= 1;
      uint8_t t = x[0];
      x[0] = x[1], x[1] = t;
      g_assert_cmphex((uint64_t)checksum(x, n), !=, want);
    }
    g_free(x);
  }
  g_assert_cmpint(checksum(NULL, 0), ==, 0);
  g_rand_free(r);
}

static void test_host_softmax(void) {
  GRand *r = g_rand_new_with_seed(23);
  static const uint64_t cols_list[] = {1, 5, 32, 33, 257};
  for (guint s = 0; s < G_N_ELEMENTS(cols_list); s++) {
    uint64_t cols = cols_list[s], rows = 7, n = rows * cols;
    float *x = rand_f32(r, n, -30, 30), *y = g_new(float, n);
    DrKValue a[3] = {{.ptr = x}, {.ptr = y}, {.i = (int64_t)cols}};
    uint64_t c[3] = {n, n, 0};
    run_host("softmax_rows_f32", a, c);
    for (uint64_t row = 0; row < rows; row++) {
      const float *xr = x + row * cols;
      double m = -INFINITY, sum = 0, ysum = 0;
      for (uint64_t j = 0; j < cols; j++) m = fmax(m, xr[j]);
      for (uint64_t j = 0; j < cols; j++) sum += exp((double)xr[j] - m);
      for (uint64_t j = 0; j < cols; j++) {
        double want = exp((double)xr[j] - m) / sum;
        /* x - max rounds in f32: exp's argument is off by up to half an
         * ulp of |x - max| (<= 60 here), 2e-6 relative; expf adds 2 ulp. */
        assert_close("softmax", row * cols + j, y[row * cols + j], want, 1e-5, 1e-30);
        ysum += y[row * cols + j];
      }
      assert_close("softmax row sum", row, ysum, 1.0, 0, 1e-5);
    }
    g_free(x), g_free(y);
  }
  /* Large inputs do not overflow: the max is subtracted first. */
  float x[2] = {1000, 1000}, y[2];
  DrKValue a[3] = {{.ptr = x}, {.ptr = y}, {.i = 2}};
  uint64_t c[3] = {2, 2, 0};
  run_host("softmax_rows_f32", a, c);
  g_assert_cmpfloat(y[0], ==, 0.5f);
  g_rand_free(r);
}

static void test_host_layernorm(void) {
  GRand *r = g_rand_new_with_seed(29);
  static const uint64_t cols_list[] = {2, 5, 32, 33, 1000};
  for (guint s = 0; s < G_N_ELEMENTS(cols_list); s++) {
    uint64_t cols = cols_list[s], rows = 5, n = rows * cols;
    float *x = rand_f32(r, n, -3, 7), *y = g_new(float, n);
    float *g = rand_f32(r, cols, 0.5, 2), *b = rand_f32(r, cols, -1, 1);
    float *one = g_new(float, cols), *zero = g_new0(float, cols);
    for (uint64_t j = 0; j < cols; j++) one[j] = 1.0f;
    /* gamma 1, beta 0, eps 0: each row has mean 0 and variance 1. */
    DrKValue a[6] = {{.ptr = x}, {.ptr = one}, {.ptr = zero}, {.ptr = y}, {.i = (int64_t)cols}, {.f = 0.0}};
    uint64_t c[6] = {n, cols, cols, n, 0, 0};
    run_host("layernorm_rows_f32", a, c);
    for (uint64_t row = 0; row < rows; row++) {
      double mean = 0, var = 0;
      for (uint64_t j = 0; j < cols; j++) mean += y[row * cols + j];
      mean /= (double)cols;
      for (uint64_t j = 0; j < cols; j++) var += (y[row * cols + j] - mean) * (y[row * cols + j] - mean);
      var /= (double)cols;
      assert_close("layernorm mean", row, mean, 0, 0, 1e-5);
      assert_close("layernorm var", row, var, 1, 1e-5, 0);
    }
    /* Random gamma and beta, the default eps, against a double formula. */
    a[1].ptr = g, a[2].ptr = b, a[5].f = 1e-5;
    run_host("layernorm_rows_f32", a, c);
    for (uint64_t row = 0; row < rows; row++) {
      const float *xr = x + row * cols;
      double mean = 0, var = 0;
      for (uint64_t j = 0; j < cols; j++) mean += xr[j];
      mean /= (double)cols;
      for (uint64_t j = 0; j < cols; j++) var += (xr[j] - mean) * (xr[j] - mean);
      var /= (double)cols;
      for (uint64_t j = 0; j < cols; j++) {
        double want = (xr[j] - mean) / sqrt(var + (double)1e-5f) * g[j] + b[j];
        assert_close("layernorm", row * cols + j, y[row * cols + j], want, 1e-5, 1e-5);
      }
    }
    g_free(x), g_free(y), g_free(g), g_free(b), g_free(one), g_free(zero);
  }
  g_rand_free(r);
}

/* gemm twins against the textbook triple loop, with and without beta; with
 * beta 0, NaN in c must not propagate. Tolerance normwise: 1e-6 of
 * k*max|a|*max|b| (f32), half a bf16 ulp of the result plus that (bf16). */
static void check_gemm(int bf16, int64_t m, int64_t n, int64_t k, double alpha, double beta, GRand *r) {
  const char *name = bf16 ? "gemm_bf16" : "gemm_f32";
  uint64_t na = (uint64_t)(m * k), nb = (uint64_t)(k * n), nc = (uint64_t)(m * n);
  float *a = rand_f32(r, na, -1, 1), *b = rand_f32(r, nb, -1, 1), *c = rand_f32(r, nc, -1, 1);
  if (beta == 0)
    for (uint64_t i = 0; i < nc; i++) c[i] = NAN;
  void *pa = a, *pb = b, *pc = c;
  uint16_t *ha = NULL, *hb = NULL, *hc = NULL;
  if (bf16) {
    ha = g_new(uint16_t, na), hb = g_new(uint16_t, nb), hc = g_new(uint16_t, nc);
    for (uint64_t i = 0; i < na; i++) ha[i] = dr__f32_to_bf16(a[i]), a[i] = dr__bf16_to_f32(ha[i]);
    for (uint64_t i = 0; i < nb; i++) hb[i] = dr__f32_to_bf16(b[i]), b[i] = dr__bf16_to_f32(hb[i]);
    for (uint64_t i = 0; i < nc; i++) hc[i] = dr__f32_to_bf16(c[i]), c[i] = dr__bf16_to_f32(hc[i]);
    pa = ha, pb = hb, pc = hc;
  }
  float *c0 = g_memdup2(c, nc * sizeof(float));
  DrKValue args[8] = {{.ptr = pa}, {.ptr = pb}, {.ptr = pc},  {.i = m},
                      {.i = n},    {.i = k},    {.f = alpha}, {.f = beta}};
  uint64_t counts[8] = {na, nb, nc};
  run_host(name, args, counts);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += (double)a[i * k + p] * (double)b[p * n + j];
      double want = (double)(float)alpha * s;
      if (beta != 0) want += (double)(float)beta * c0[i * n + j];
      double got = bf16 ? dr__bf16_to_f32(hc[i * n + j]) : c[i * n + j];
      assert_close(name, (uint64_t)(i * n + j), got, want, bf16 ? 1.0 / 256 : 0, 1e-6 * (double)k);
    }
  g_free(a), g_free(b), g_free(c), g_free(c0), g_free(ha), g_free(hb), g_free(hc);
}

static void test_host_gemm(void) {
  GRand *r = g_rand_new_with_seed(31);
  static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 80}, {1, 100, 3}};
  for (guint s = 0; s < G_N_ELEMENTS(shapes); s++)
    for (int bf16 = 0; bf16 <= 1; bf16++) {
      check_gemm(bf16, shapes[s][0], shapes[s][1], shapes[s][2], 1.0, 0.0, r);
      check_gemm(bf16, shapes[s][0], shapes[s][1], shapes[s][2], -0.5, 0.75, r);
    }
  g_rand_free(r);
}

static void test_host_spin(void) {
  DrKValue a[1] = {{.i = 3000000}};
  uint64_t c[1] = {0};
  gint64 t0 = g_get_monotonic_time();
  run_host("spin", a, c);
  gint64 dt = g_get_monotonic_time() - t0;
  g_assert_cmpint(dt, >=, 3000);
  g_assert_cmpint(dt, <, 3000 + 200000); /* generous: a loaded CI machine */
  a[0].i = -5;
  refuse_host("spin", a, c, "ns must be in");
}

/* DR_KFLAG_DEVICE_COUNTS: each element-wise twin given counts_dev works on
 * the counts found there, not on `counts` (the largest), and gives the
 * bytes it gives with those counts written in; nothing past them is
 * touched. (The fake runtime's graph replays run the twins so.) */
static void test_host_device_counts(void) {
  GRand *r = g_rand_new_with_seed(23);
  for (int k = 0; k < dr_kernel_registry_len; k++) {
    const DrKernelDef *def = &dr_kernel_registry[k];
    if (!(def->flags & DR_KFLAG_DEVICE_COUNTS)) continue;
    const uint64_t big = 1000, small = 537;
    uint64_t counts[16] = {0}, small_counts[16] = {0}, dev[16] = {0};
    DrKValue args[2][16];
    memset(args, 0, sizeof args);
    guint8 *mem[2][16] = {{0}};
    for (int i = 0; i < def->n_params; i++) {
      const DrKParam *p = &def->params[i];
      if (!p->is_pointer) {
        args[0][i].f = args[1][i].f = 0.75; /* every scalar of these is a float */
        continue;
      }
      counts[i] = big;
      small_counts[i] = dev[i] = small;
      size_t bytes = big * elem_size(p->type);
      mem[0][i] = g_malloc(bytes);
      for (size_t b = 0; b < bytes; b++) mem[0][i][b] = (guint8)g_rand_int_range(r, 0, 256);
      /* 16-bit floats: keep exponents tame (no NaN payloads to compare). */
      if (elem_size(p->type) == 2)
        for (size_t b = 1; b < bytes; b += 2) mem[0][i][b] &= 0x3f;
      mem[1][i] = g_memdup2(mem[0][i], bytes);
      args[0][i].ptr = mem[0][i];
      args[1][i].ptr = mem[1][i];
    }
    DrKLaunch by_dev = {.args = args[0], .counts = counts, .counts_dev = dev};
    DrKLaunch by_host = {.args = args[1], .counts = small_counts};
    char err[DR_KERR_SIZE] = "";
    if (def->host(&by_dev, err) != 0) g_error("%s with counts_dev: %s", def->name, err);
    if (def->host(&by_host, err) != 0) g_error("%s: %s", def->name, err);
    for (int i = 0; i < def->n_params; i++)
      if (def->params[i].is_pointer &&
          memcmp(mem[0][i], mem[1][i], big * elem_size(def->params[i].type)) != 0)
        g_error("%s: parameter %s differs with counts from counts_dev", def->name, def->params[i].name);
    for (int i = 0; i < def->n_params; i++) g_free(mem[0][i]), g_free(mem[1][i]);
  }
  g_rand_free(r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/kernels/registry/sorted-unique", test_registry_sorted_unique);
  g_test_add_func("/kernels/registry/matches-list", test_registry_matches_list);
  g_test_add_func("/kernels/registry/params-well-formed", test_registry_params_well_formed);
  g_test_add_func("/kernels/registry/find", test_registry_find);
  g_test_add_func("/kernels/registry/default-shape", test_registry_default_shape);
  g_test_add_func("/kernels/registry/list", test_registry_list);
  g_test_add_func("/kernels/checks", test_checks);
  g_test_add_func("/kernels/half/roundtrip", test_half_roundtrip);
  g_test_add_func("/kernels/half/rounding", test_half_rounding);
  g_test_add_func("/kernels/host/fill-iota", test_host_fill_iota);
  g_test_add_func("/kernels/host/scale", test_host_scale);
  g_test_add_func("/kernels/host/axpy", test_host_axpy);
  g_test_add_func("/kernels/host/add", test_host_add);
  g_test_add_func("/kernels/host/mul", test_host_mul);
  g_test_add_func("/kernels/host/relu", test_host_relu);
  g_test_add_func("/kernels/host/relu-nan", test_host_relu_nan);
  g_test_add_func("/kernels/host/gelu", test_host_gelu);
  g_test_add_func("/kernels/host/half", test_host_half);
  g_test_add_func("/kernels/host/reduce", test_host_reduce);
  g_test_add_func("/kernels/host/checksum", test_host_checksum);
  g_test_add_func("/kernels/host/softmax", test_host_softmax);
  g_test_add_func("/kernels/host/layernorm", test_host_layernorm);
  g_test_add_func("/kernels/host/gemm", test_host_gemm);
  g_test_add_func("/kernels/host/spin", test_host_spin);
  g_test_add_func("/kernels/host/device-counts", test_host_device_counts);
  return g_test_run();
}
