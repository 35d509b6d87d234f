/* params_test.c: run-time parameters on the host backend, through the
 * public API.
 *
 * The property: for random pipelines over a parameter n (and a float
 * alpha), planned once, every value run gives the same bytes as the same
 * pipeline written with that value fixed in the file, and the concurrent
 * run agrees with the serial one (--verify) under random delays, which
 * shows that hazards computed on each slice's widest extent order every
 * value. Then the errors: values out of range, unknown names, values that
 * break a kernel's rule, and the load-time proof naming the first value
 * that breaks a slice. */
#include <glib.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

/* One random pipeline: `pfx` the params block (or ""), N the text that
 * stands for n (the name, or a number), A for alpha, nmax its max. */
static char *pipeline_text(guint32 seed, const char *N, const char *A, gint64 nmax, gboolean with_params) {
  GRand *r = g_rand_new_with_seed(seed);
  GString *y = g_string_new("dagrun: 1\n");
  if (with_params)
    g_string_append_printf(y,
                           "params:\n  n: {type: int, default: 1, min: 1, max: %" G_GINT64_FORMAT
                           "}\n  alpha: {type: float, default: 1, min: -4, max: 4}\n",
                           nmax);
  /* Sized at n's max in both versions: 8n + 16 elements. */
  const char *count = with_params ? "\"{n*8+16}\"" : NULL;
  g_autofree char *fixed = g_strdup_printf("%" G_GINT64_FORMAT, nmax * 8 + 16);
  g_string_append(y, "buffers:\n");
  const char *names[] = {"A", "B", "C"};
  for (int i = 0; i < 3; i++)
    g_string_append_printf(y, "  %s: {type: f32, count: %s, init: {random: %d}}\n", names[i],
                           count ? count : fixed, i + 1);
  g_string_append_printf(y, "  M: {type: u8, count: %s, init: zeros}\n", count ? count : fixed);
  g_string_append(y, "nodes:\n");
  guint n_nodes = (guint)g_rand_int_range(r, 3, 12);
  for (guint v = 0; v < n_nodes; v++) {
    /* A slice [s1*n + s0, +l1*n + l0): inside 8n + 16 for every n. */
    gint s1 = g_rand_int_range(r, 0, 3), s0 = g_rand_int_range(r, 0, 5);
    gint l1 = g_rand_int_range(r, 1, 3), l0 = g_rand_int_range(r, 1, 5);
    gint t1 = g_rand_int_range(r, 0, 3), t0 = g_rand_int_range(r, 0, 5);
    g_autofree char *src = g_strdup_printf("%d*%s+%d:%d*%s+%d", s1, N, s0, s1 + l1, N, s0 + l0);
    g_autofree char *dst = g_strdup_printf("%d*%s+%d:%d*%s+%d", t1, N, t0, t1 + l1, N, t0 + l0);
    const char *a = names[g_rand_int_range(r, 0, 3)], *b = names[g_rand_int_range(r, 0, 3)];
    switch (g_rand_int_range(r, 0, 5)) {
      case 0:
        g_string_append_printf(
            y, "  v%u: {op: kernel, kernel: scale_f32, args: {x: \"%s[%s]\", alpha: %s, y: \"%s[%s]\"}}\n", v,
            a, src, A, b == a ? (a == names[0] ? names[1] : names[0]) : b, dst);
        break;
      case 1:
        g_string_append_printf(y, "  v%u: {op: memset, dst: \"M[%s]\", value: \"{(%s * %u) %% 256}\"}\n", v,
                               dst, N, v + 1);
        break;
      case 2:
        g_string_append_printf(y, "  v%u: {op: copy, src: \"%s[%s]\", dst: \"%s[%s]\"}\n", v, a, src,
                               b == a ? (a == names[2] ? names[1] : names[2]) : b, dst);
        break;
      case 3:
        g_string_append_printf(
            y, "  v%u: {op: kernel, kernel: axpy_f32, args: {alpha: %s, x: \"%s[%s]\", y: \"%s[%s]\"}}\n", v,
            A, a, src, b == a ? (a == names[0] ? names[2] : names[0]) : b, dst);
        break;
      default:
        g_string_append_printf(
            y, "  v%u: {op: kernel, kernel: add_f32, args: {a: \"%s[%s]\", b: \"%s[%s]\", y: \"C[%s]\"}}\n",
            v, a, src, b, src, dst);
        break;
    }
  }
  g_rand_free(r);
  return g_string_free(y, FALSE);
}

#define NBUF 4
static const char *const bufs[NBUF] = {"A", "B", "C", "M"};

/* Runs `plan` once on the host (a fresh runner) and reads every buffer. */
static void run_read(DrStreamPlan *plan, const DrPipeline *p, gsize elems, guint8 **out) {
  g_autoptr(GError) error = NULL;
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  for (int i = 0; i < NBUF; i++) {
    gsize bytes = elems * (i == 3 ? 1 : 4);
    out[i] = g_malloc(bytes);
    g_assert_true(dr_runner_read_buffer(r, bufs[i], out[i], bytes, &error));
    g_assert_no_error(error);
  }
}

static const double alphas[] = {0.5, -1.25, 2, 0, 3.5};

static void test_fixed_equals_param(void) {
  guint cases = g_test_thorough() ? 400 : 60;
  for (guint c = 0; c < cases; c++) {
    guint32 seed = 1000 + c;
    gint64 nmax = g_test_rand_int_range(2, 40);
    g_autofree char *ptext = pipeline_text(seed, "n", "\"{alpha}\"", nmax, TRUE);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("param.yaml", ptext, -1, &error);
    if (error) g_printerr("%s\n%s\n", ptext, error->message);
    g_assert_no_error(error);
    /* One plan for every value. */
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    gint64 vals[4] = {1, nmax, g_test_rand_int_range(1, (gint32)nmax + 1),
                      g_test_rand_int_range(1, (gint32)nmax + 1)};
    for (guint k = 0; k < G_N_ELEMENTS(vals); k++) {
      double alpha = alphas[(c + k) % G_N_ELEMENTS(alphas)];
      g_autofree char *nv = g_strdup_printf("%" G_GINT64_FORMAT, vals[k]);
      char av[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_dtostr(av, sizeof av, alpha);
      g_assert_true(dr_pipeline_set_param(p, "n", nv, &error));
      g_assert_true(dr_pipeline_set_param(p, "alpha", av, &error));
      g_assert_no_error(error);
      g_autofree char *ftext = pipeline_text(seed, nv, av, nmax, FALSE);
      g_autoptr(DrPipeline) f = dr_pipeline_load_string("fixed.yaml", ftext, -1, &error);
      g_assert_no_error(error);
      g_autoptr(DrStreamPlan) fplan = dr_pipeline_plan(f, NULL, &error);
      g_assert_no_error(error);
      guint8 *got[NBUF], *want[NBUF];
      gsize elems = (gsize)(nmax * 8 + 16);
      run_read(plan, p, elems, got);
      run_read(fplan, f, elems, want);
      for (int i = 0; i < NBUF; i++) {
        g_assert_cmpmem(got[i], elems * (i == 3 ? 1 : 4), want[i], elems * (i == 3 ? 1 : 4));
        g_free(got[i]);
        g_free(want[i]);
      }
      /* The concurrent plan agrees with the serial one at this value,
       * under random delays before each node. */
      DrRunSettings rs;
      dr_run_settings_init(&rs, p);
      rs.backend = DR_BACKEND_HOST;
      rs.iterations = 1;
      rs.warmup = 0;
      rs.verify = TRUE;
      rs.delay_seed = seed * 7 + k + 1;
      g_autoptr(DrRunReport) rr = dr_stream_plan_run(plan, &rs, &error);
      g_assert_no_error(error);
      g_assert_true(dr_run_report_check_verified(rr, &error));
    }
  }
}

/* Two nodes whose slices overlap only for large n: ordered at every n. */
static void test_widest_extent(void) {
  const char *text =
      "dagrun: 1\n"
      "params: {n: {default: 2, min: 1, max: 16}}\n"
      "buffers: {x: {type: f32, count: 32}, y: {type: f32, count: 32}}\n"
      "nodes:\n"
      "  w: {op: memset, dst: \"x[0:n]\", value: 1}\n"
      "  r: {op: copy, src: \"x[8:16]\", dst: \"y[8:16]\"}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("wide.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_validate(p, &error));
  g_assert_cmpuint(dr_pipeline_n_edges(p), ==, 1); /* w -> r, although x[0:2] and x[8:16] are disjoint */
  /* Fixed at 2 they are independent. */
  g_autoptr(DrPipeline) f = dr_pipeline_load_string(
      "fixed.yaml",
      "dagrun: 1\nbuffers: {x: {type: f32, count: 32}, y: {type: f32, count: 32}}\nnodes:\n"
      "  w: {op: memset, dst: \"x[0:2]\", value: 1}\n  r: {op: copy, src: \"x[8:16]\", dst: \"y[8:16]\"}\n",
      -1, &error);
  g_assert_true(dr_pipeline_validate(f, &error));
  g_assert_cmpuint(dr_pipeline_n_edges(f), ==, 0);
}

static void test_errors(void) {
  const char *text =
      "dagrun: 1\n"
      "params:\n"
      "  rows: {default: 4, min: 1, max: 16}\n"
      "  cols: {default: 4, min: 1, max: 16}\n"
      "buffers: {x: {type: f32, count: 256}, y: {type: f32, count: 256}}\n"
      "nodes:\n"
      "  s: {op: kernel, kernel: softmax_rows_f32, args: {x: \"x[0:rows*cols]\", y: \"y[0:rows*cols]\", "
      "cols: "
      "\"{cols + rows % 2}\"}}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("err.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_pipeline_n_params(p), ==, 2);
  g_assert_cmpstr(dr_pipeline_param_name(p, 1), ==, "cols");
  g_assert_null(dr_pipeline_param_name(p, 2));
  /* Out of range, unknown, not a number: DR_ERROR_USAGE (exit 64), and
   * the value stays. */
  g_assert_false(dr_pipeline_set_param(p, "rows", "17", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_cmpint(dr_error_exit_code(error), ==, 64);
  g_assert_cmpstr(error->message, ==, "parameter 'rows' must be in 1..16, not 17");
  g_clear_error(&error);
  g_assert_false(dr_pipeline_set_param(p, "row", "2", &error));
  g_assert_cmpstr(error->message, ==, "unknown parameter 'row' (did you mean 'rows'?)");
  g_clear_error(&error);
  g_assert_false(dr_pipeline_set_param(p, "rows", "1.5", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_autofree char *v = dr_pipeline_param_value(p, 0);
  g_assert_cmpstr(v, ==, "4");
  /* Size suffixes read as in the file. */
  g_assert_true(dr_pipeline_set_param(p, "rows", "0x10", &error));
  g_autofree char *v2 = dr_pipeline_param_value(p, 0);
  g_assert_cmpstr(v2, ==, "16");
  g_assert_no_error(error);
  /* A value that breaks the kernel's rule (an odd rows makes cols one more
   * than the rows' width): refused, naming the values. */
  g_assert_false(dr_pipeline_set_param(p, "rows", "3", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "with rows=3 cols=4: "));
  g_clear_error(&error);
  g_autofree char *v3 = dr_pipeline_param_value(p, 0);
  g_assert_cmpstr(v3, ==, "16");
}

/* The load-time proof reports the first value that breaks a slice. */
static void test_prove(void) {
  const char *text =
      "dagrun: 1\n"
      "params: {n: {default: 2, min: 1, max: 100}}\n"
      "buffers: {x: {type: f32, count: 64}, y: {type: f32, count: 64}}\n"
      "nodes:\n"
      "  c: {op: copy, src: \"x[0:n]\", dst: \"y[64-n:64]\"}\n"
      "  d: {op: copy, src: \"x[n:2*n]\", dst: \"y[0:n]\"}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("prove.yaml", text, -1, &error);
  g_assert_null(p);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(
      error->message,
      "prove.yaml:5:22: error: node 'c': with n=65: slice 'x[0:n]' ends past buffer 'x' (64 elements)"));
  g_assert_nonnull(strstr(error->message, "prove.yaml:6:22: error: node 'd': with n=33: slice 'x[n:2*n]'"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/params/fixed-equals-param", test_fixed_equals_param);
  g_test_add_func("/params/widest-extent", test_widest_extent);
  g_test_add_func("/params/errors", test_errors);
  g_test_add_func("/params/prove", test_prove);
  return g_test_run();
}
