/* loop_count_test.c: a loop count from a run-time parameter (`repeat:
 * "{n}"`, issue #19) on the host backend, through the public API.
 *
 * The property: random pipelines with a top-level counted loop (its body
 * random kernels, copies and memsets whose result depends on the number of
 * trips, nodes before and after it), planned once, give for every value
 * the same bytes as the same pipeline written with the count fixed in the
 * file, both from a fresh runner and from one runner whose value changes
 * between runs, and the concurrent run agrees with the serial one
 * (--verify) under random delays. Then the load-time proof of the count's
 * range (1..2^31-1, naming the value that breaks it), the trips in the
 * report, the plan's and the dump's spelling, and what stays an error: a
 * count from a float parameter, a counted loop inside a body, a
 * parameter in a body. */
#include <glib.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

#define NBUF 3
static const char *const bufs[NBUF] = {"A", "B", "C"};
#define ELEMS 64

/* One random pipeline; COUNT is the repeat: value ("\"{n}\"" or a number),
 * with_params declares n in 1..nmax. */
static char *pipeline_text(guint32 seed, const char *count, gint64 nmax, gboolean with_params) {
  GRand *r = g_rand_new_with_seed(seed);
  GString *y = g_string_new("dagrun: 1\n");
  if (with_params)
    g_string_append_printf(y, "params:\n  n: {type: int, default: 1, min: 1, max: %" G_GINT64_FORMAT "}\n",
                           nmax);
  g_string_append(y, "buffers:\n");
  for (int i = 0; i < NBUF; i++)
    g_string_append_printf(y, "  %s: {type: f32, count: %d, init: {random: %d}}\n", bufs[i], ELEMS, i + 1);
  g_string_append(y, "nodes:\n");
  g_string_append(
      y, "  pre: {op: kernel, kernel: scale_f32, args: {x: \"A[0:32]\", alpha: 0.5, y: \"B[0:32]\"}}\n");
  g_string_append_printf(y, "  l:\n    op: loop\n    repeat: %s\n    nodes:\n", count);
  guint n_body = (guint)g_rand_int_range(r, 1, 6);
  for (guint v = 0; v < n_body; v++) {
    gint s = g_rand_int_range(r, 0, 4) * 8, t = g_rand_int_range(r, 0, 4) * 8;
    gint a = g_rand_int_range(r, 0, NBUF), b = (a + g_rand_int_range(r, 1, NBUF)) % NBUF;
    switch (g_rand_int_range(r, 0, 4)) {
      case 0: /* y += alpha x: depends on every trip */
        g_string_append_printf(
            y,
            "      b%u: {op: kernel, kernel: axpy_f32, args: {alpha: 0.75, x: \"%s[%d:%d]\", "
            "y: \"%s[%d:%d]\"}}\n",
            v, bufs[a], s, s + 16, bufs[b], t, t + 16);
        break;
      case 1:
        g_string_append_printf(y,
                               "      b%u: {op: kernel, kernel: add_f32, args: {a: \"%s[%d:%d]\", b: "
                               "\"%s[%d:%d]\", y: \"%s[%d:%d]\"}}\n",
                               v, bufs[a], s, s + 16, bufs[b], t, t + 16, bufs[b], t, t + 16);
        break;
      case 2:
        g_string_append_printf(y, "      b%u: {op: copy, src: \"%s[%d:%d]\", dst: \"%s[%d:%d]\"}\n", v,
                               bufs[a], s, s + 8, bufs[b], t, t + 8);
        break;
      default:
        g_string_append_printf(
            y,
            "      b%u: {op: kernel, kernel: scale_f32, args: {x: \"%s[%d:%d]\", alpha: -1.5, "
            "y: \"%s[%d:%d]\"}}\n",
            v, bufs[a], s, s + 16, bufs[b], t, t + 16);
        break;
    }
  }
  g_string_append(
      y, "  post: {op: kernel, kernel: add_f32, args: {a: \"A[0:32]\", b: \"B[0:32]\", y: \"C[32:64]\"}}\n");
  g_rand_free(r);
  return g_string_free(y, FALSE);
}

static DrRunSettings host_settings(const DrPipeline *p) {
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  return rs;
}

static void read_all(DrRunner *r, float out[NBUF][ELEMS]) {
  g_autoptr(GError) error = NULL;
  for (int i = 0; i < NBUF; i++) {
    g_assert_true(dr_runner_read_buffer(r, bufs[i], out[i], ELEMS * sizeof(float), &error));
    g_assert_no_error(error);
  }
}

/* The bytes of the pipeline written with the count fixed at `n`, from a
 * fresh runner. */
static void fixed_run(guint32 seed, gint64 n, gint64 nmax, float out[NBUF][ELEMS]) {
  g_autoptr(GError) error = NULL;
  g_autofree char *count = g_strdup_printf("%" G_GINT64_FORMAT, n);
  g_autofree char *text = pipeline_text(seed, count, nmax, FALSE);
  g_autoptr(DrPipeline) f = dr_pipeline_load_string("fixed.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(f, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(f);
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  read_all(r, out);
}

/* The trips loop 'l' made per iteration, from the JSON report. */
static void assert_trips(DrRunReport *rr, gint64 n) {
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(rr, json);
  g_autofree char *want =
      g_strdup_printf("\"trips_min\": %" G_GINT64_FORMAT ", \"trips_max\": %" G_GINT64_FORMAT, n, n);
  if (strstr(json->str, want) == NULL) g_printerr("%s\n", json->str);
  g_assert_nonnull(strstr(json->str, want));
}

static void test_fixed_equals_counted(void) {
  guint cases = g_test_thorough() ? 200 : 30;
  for (guint c = 0; c < cases; c++) {
    guint32 seed = 7000 + c;
    gint64 nmax = g_test_rand_int_range(2, 24);
    g_autofree char *ptext = pipeline_text(seed, "\"{n}\"", nmax, TRUE);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("counted.yaml", ptext, -1, &error);
    if (error) g_printerr("%s\n%s\n", ptext, error->message);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    gint64 vals[4] = {1, nmax, g_test_rand_int_range(1, (gint32)nmax + 1),
                      g_test_rand_int_range(1, (gint32)nmax + 1)};
    for (guint k = 0; k < G_N_ELEMENTS(vals); k++) {
      g_autofree char *nv = g_strdup_printf("%" G_GINT64_FORMAT, vals[k]);
      g_assert_true(dr_pipeline_set_param(p, "n", nv, &error));
      g_assert_no_error(error);
      /* A fresh runner at this value against the fixed file. */
      float got[NBUF][ELEMS], want[NBUF][ELEMS];
      {
        DrRunSettings rs = host_settings(p);
        g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
        g_assert_no_error(error);
        g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
        g_assert_no_error(error);
        assert_trips(rr, vals[k]);
        read_all(r, got);
      }
      fixed_run(seed, vals[k], nmax, want);
      g_assert_cmpmem(got, sizeof got, want, sizeof want);
      /* The concurrent plan against the serial one at this value, under
       * random delays. */
      DrRunSettings rs = host_settings(p);
      rs.verify = TRUE;
      rs.delay_seed = seed * 5 + k + 1;
      g_autoptr(DrRunReport) rr = dr_stream_plan_run(plan, &rs, &error);
      g_assert_no_error(error);
      g_assert_true(dr_run_report_check_verified(rr, &error));
      g_assert_no_error(error);
    }
  }
}

/* One runner, the count changed between runs: each run's trips are the
 * value's, and a run of one trip after runs of many computes from what
 * the earlier runs left (the runner's buffers persist), exactly as the
 * fixed pipeline run the same number of times with those counts would:
 * checked by summing the trips against a fixed pipeline of that total
 * when the body is one axpy (linear in the trips). */
static void test_runner_changes(void) {
  const char *text =
      "dagrun: 1\n"
      "params: {n: {default: 3, min: 1, max: 1000}}\n"
      "buffers: {x: {type: f32, count: 8}, y: {type: f32, count: 8, init: zeros}}\n"
      "nodes:\n"
      "  one: {op: kernel, kernel: fill_f32, args: {value: 1, y: x}}\n"
      "  l:\n"
      "    op: loop\n"
      "    repeat: \"{n}\"\n"
      "    nodes:\n"
      "      acc: {op: kernel, kernel: axpy_f32, args: {alpha: 1, x: \"x[0:8]\", y: \"y[0:8]\"}}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("acc.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p);
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  const gint64 ns[] = {3, 1, 1000, 17, 1, 250};
  double total = 0;
  for (guint i = 0; i < G_N_ELEMENTS(ns); i++) {
    if (i > 0) g_assert_true(dr_runner_set_param(r, "n", ns[i], &error));
    g_assert_no_error(error);
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    assert_trips(rr, ns[i]);
    total += (double)ns[i];
    float y[8];
    g_assert_true(dr_runner_read_buffer(r, "y", y, sizeof y, &error));
    for (int e = 0; e < 8; e++) g_assert_cmpfloat(y[e], ==, (float)total);
  }
  /* Out of range: refused, the value stays. */
  g_assert_false(dr_runner_set_param(r, "n", 0, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
}

/* The plan and the dump say the loop is counted; the YAML a pipeline
 * writes keeps the expression and loads to a counted loop again. */
static void test_spelling(void) {
  const char *text =
      "dagrun: 1\n"
      "params: {n: {default: 3, min: 1, max: 10}}\n"
      "buffers: {x: {type: f32, count: 8, init: iota}, y: {type: f32, count: 8, init: zeros}}\n"
      "nodes:\n"
      "  l{i}:\n"
      "    foreach: {i: 1..2}\n"
      "    op: loop\n"
      "    repeat: \"{n*i}\"\n"
      "    nodes:\n"
      "      acc: {op: kernel, kernel: axpy_f32, args: {alpha: 1, x: \"x[0:8]\", y: \"y[0:8]\"}}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("spell.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) ptext = g_string_new(NULL);
  dr_stream_plan_write_text(plan, ptext);
  g_assert_nonnull(strstr(ptext->str, "loop repeat 6 (counted: from a parameter, per run)"));
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
  if (strstr(yaml->str, "repeat: \"{n*i}\"") == NULL) g_printerr("%s\n", yaml->str);
  g_assert_nonnull(strstr(yaml->str, "repeat: \"{n*i}\""));
  g_autoptr(DrPipeline) again = dr_pipeline_load_string("again.yaml", yaml->str, -1, &error);
  if (error) g_printerr("%s\n", yaml->str);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan2 = dr_pipeline_plan(again, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) ptext2 = g_string_new(NULL);
  dr_stream_plan_write_text(plan2, ptext2);
  g_assert_nonnull(strstr(ptext2->str, "loop repeat 6 (counted"));
}

/* Loads `text`, expecting an error whose message holds `want`. */
static void expect_error(const char *text, const char *want) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("bad.yaml", text, -1, &error);
  g_assert_null(p);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  if (strstr(error->message, want) == NULL) g_printerr("got: %s\nwant: %s\n", error->message, want);
  g_assert_nonnull(strstr(error->message, want));
}

static void test_errors(void) {
  /* The proof over the range names the value that breaks it. */
  expect_error(
      "dagrun: 1\n"
      "params: {n: {default: 2, min: 1, max: 9}}\n"
      "buffers: {x: {type: f32, count: 8}}\n"
      "nodes:\n"
      "  l: {op: loop, repeat: \"{n-1}\", nodes: {m: {op: memset, dst: x, value: 1}}}\n",
      "bad.yaml:5:25: error: node 'l': with n=1: repeat count 0 is out of range [1, 2147483647]");
  expect_error(
      "dagrun: 1\n"
      "params: {n: {default: 2, min: 1, max: 4000000000}}\n"
      "buffers: {x: {type: f32, count: 8}}\n"
      "nodes:\n"
      "  l: {op: loop, repeat: \"{n}\", nodes: {m: {op: memset, dst: x, value: 1}}}\n",
      "with n=4000000000: repeat count 4000000000 is out of range");
  /* Without a range there is nothing to prove it over. */
  expect_error(
      "dagrun: 1\n"
      "params: {n: {default: 2}}\n"
      "buffers: {x: {type: f32, count: 8}}\n"
      "nodes:\n"
      "  l: {op: loop, repeat: \"{n}\", nodes: {m: {op: memset, dst: x, value: 1}}}\n",
      "needs both 'min:' and 'max:'");
  expect_error(
      "dagrun: 1\n"
      "params: {t: {type: float, default: 2, min: 1, max: 4}}\n"
      "buffers: {x: {type: f32, count: 8}}\n"
      "nodes:\n"
      "  l: {op: loop, repeat: \"{t}\", nodes: {m: {op: memset, dst: x, value: 1}}}\n",
      "bad.yaml:5:25: error:");
  expect_error(
      "dagrun: 1\n"
      "params: {n: {default: 2, min: 1, max: 4}}\n"
      "buffers: {x: {type: f32, count: 8}}\n"
      "nodes:\n"
      "  l:\n"
      "    op: loop\n"
      "    repeat: 2\n"
      "    nodes:\n"
      "      k: {op: loop, repeat: \"{n}\", nodes: {m: {op: memset, dst: x, value: 1}}}\n",
      "bad.yaml:9:29: error: node 'l/k', key 'repeat': a count from a parameter is supported for "
      "top-level loops only");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/params/loop-count/fixed-equals-counted", test_fixed_equals_counted);
  g_test_add_func("/params/loop-count/runner-changes", test_runner_changes);
  g_test_add_func("/params/loop-count/spelling", test_spelling);
  g_test_add_func("/params/loop-count/errors", test_errors);
  return g_test_run();
}
