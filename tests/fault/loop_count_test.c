/* loop_count_test.c: a loop count from a run-time parameter (`repeat:
 * "{n}"`, issue #19) on the CUDA backend, through the fake runtime's
 * graph-node model (fake_cuda.h) and the public API.
 *
 * Graph mode builds the counted loop as one WHILE node ended by the
 * counter kernel (never the body unrolled); a new value is one 8-byte
 * copy of the loop's limit word before the next launch: no capture, no
 * update and no instantiation of the executable; the replay runs the new
 * number of trips, the report counts them, and the bytes equal the host
 * backend's with the count fixed. A constant repeat stays unrolled.
 * Streams mode runs the host-driven loop with the run's value. A fault at
 * every call of a changed run releases everything. */
#include <glib.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "include/dagrun/dagrun.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/fault/fake_runner.h"

/* y += x (x all 1) n times, then a scale into z: y's bytes count the
 * trips of every run so far. */
static const char *yaml =
    "dagrun: 1\n"
    "params: {n: {type: int, default: 3, min: 1, max: 100}}\n"
    "buffers:\n"
    "  x: {type: f32, count: 16}\n"
    "  y: {type: f32, count: 16, init: zeros}\n"
    "  z: {type: f32, count: 16, init: zeros}\n"
    "nodes:\n"
    "  one: {op: kernel, kernel: fill_f32, args: {y: x, value: 1.0}}\n"
    "  l:\n"
    "    op: loop\n"
    "    repeat: \"{n}\"\n"
    "    nodes:\n"
    "      acc: {op: kernel, kernel: axpy_f32, args: {alpha: 1.0, x: x, y: y}}\n"
    "  out: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 2.0, y: z}}\n";

static DrRunner *runner(DrStreamPlan *plan, const DrPipeline *p, DrMode mode, guint iterations) {
  g_autoptr(GError) error = NULL;
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_CUDA;
  rs.mode = mode;
  rs.iterations = iterations;
  rs.warmup = 0;
  rs.node_timing = DR_TIMING_OFF; /* no stamp nodes in the shape */
  DrRunner *r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  return r;
}

static void assert_trips(DrRunReport *rr, guint64 n) {
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(rr, json);
  g_autofree char *want =
      g_strdup_printf("\"trips_min\": %" G_GUINT64_FORMAT ", \"trips_max\": %" G_GUINT64_FORMAT, n, n);
  if (strstr(json->str, want) == NULL) g_printerr("%s\n", json->str);
  g_assert_nonnull(strstr(json->str, want));
}

static void read_y(DrRunner *r, float *y) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_runner_read_buffer(r, "y", y, 16 * sizeof(float), &error));
  g_assert_no_error(error);
}

/* One runner in `mode`, n changed between runs of `iters` iterations
 * each: y after each run is the trips so far; in graph mode nothing is
 * captured, updated or instantiated again, and the only call before the
 * launch is the limit's copy. */
static void check_runner(DrMode mode) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("count.yaml", yaml, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    const guint iters = 2;
    g_autoptr(DrRunner) r = runner(plan, p, mode, iters);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    assert_trips(first, 3);
    if (mode == DR_MODE_GRAPH)
      /* One WHILE, its body the axpy then the counter kernel; the limit
       * is no node of the graph. */
      g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==, "fill_f32 memset while{axpy_f32 count} scale_f32");
    double total = 3.0 * iters;
    guint copies_changed = 0; /* cudaMemcpyAsync calls of a run after a change */
    const gint64 ns[] = {7, 1, 100, 1, 42};
    for (guint i = 0; i < G_N_ELEMENTS(ns); i++) {
      g_assert_true(dr_runner_set_param(r, "n", ns[i], &error));
      g_assert_no_error(error);
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      assert_trips(rr, (guint64)ns[i]);
      total += (double)ns[i] * iters;
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 0);
      copies_changed = dr_fake_count_calls(from, "cudaMemcpyAsync");
      if (mode == DR_MODE_GRAPH) {
        g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphLaunch"), ==, iters);
      } else {
        g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
      }
      float y[16];
      read_y(r, y);
      for (int e = 0; e < 16; e++) g_assert_cmpfloat(y[e], ==, (float)total);
    }
    /* The same value again: the limit's copy is not made. */
    g_assert_true(dr_runner_set_param(r, "n", 42, &error));
    guint from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
    if (mode == DR_MODE_GRAPH)
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaMemcpyAsync") + 1, ==, copies_changed);
  }
  dr_fake_runner_finish();
}

static void test_graph_runner(void) { check_runner(DR_MODE_GRAPH); }
static void test_streams_runner(void) { check_runner(DR_MODE_STREAMS); }

/* The bytes of one run at n (graph mode, the fake's replay) equal the host
 * backend's with the count written in; a constant repeat stays unrolled. */
static void test_against_fixed(void) {
  const gint64 ns[] = {1, 5, 64};
  for (guint i = 0; i < G_N_ELEMENTS(ns); i++) {
    float got[16], want[16];
    g_autoptr(GError) error = NULL;
    dr_fake_runner_start();
    {
      g_autoptr(DrPipeline) p = dr_pipeline_load_string("count.yaml", yaml, -1, &error);
      g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, ns[i]);
      g_assert_true(dr_pipeline_set_param(p, "n", v, &error));
      g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
      g_assert_no_error(error);
      g_autoptr(DrRunner) r = runner(plan, p, DR_MODE_GRAPH, 1);
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      assert_trips(rr, (guint64)ns[i]);
      read_y(r, got);
    }
    dr_fake_runner_finish();
    g_autofree char *fixed_count = g_strdup_printf("repeat: %" G_GINT64_FORMAT "\n", ns[i]);
    g_autofree char *fixed = g_strdup(yaml);
    char *at = strstr(fixed, "repeat: \"{n}\"\n");
    g_assert_nonnull(at);
    g_autofree char *text =
        g_strdup_printf("%.*s%s%s", (int)(at - fixed), fixed, fixed_count, at + strlen("repeat: \"{n}\"\n"));
    dr_fake_runner_start();
    {
      g_autoptr(DrPipeline) f = dr_pipeline_load_string("fixed.yaml", text, -1, &error);
      g_assert_no_error(error);
      g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(f, NULL, &error);
      g_autoptr(DrRunner) r = runner(plan, f, DR_MODE_GRAPH, 1);
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      if (ns[i] == 5)
        g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==,
                        "fill_f32 axpy_f32 axpy_f32 axpy_f32 axpy_f32 axpy_f32 scale_f32");
      read_y(r, want);
    }
    dr_fake_runner_finish();
    g_assert_cmpmem(got, sizeof got, want, sizeof want);
    /* And the host backend's. */
    {
      g_autoptr(DrPipeline) f = dr_pipeline_load_string("fixed.yaml", text, -1, &error);
      g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(f, NULL, &error);
      DrRunSettings rs;
      dr_run_settings_init(&rs, f);
      rs.backend = DR_BACKEND_HOST;
      rs.iterations = 1;
      rs.warmup = 0;
      g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
      g_assert_no_error(error);
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      read_y(r, want);
      g_assert_cmpmem(got, sizeof got, want, sizeof want);
    }
  }
}

/* A fault at every call of a run after a change: it fails with the
 * runtime's error or succeeds; freeing the runner releases everything. */
static void test_faults(void) {
  guint64 total = 0;
  for (guint64 fail_at = 0;; fail_at++) {
    dr_fake_runner_start();
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("count.yaml", yaml, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    DrRunner *r = runner(plan, p, DR_MODE_GRAPH, 1);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_true(dr_runner_set_param(r, "n", 9, &error));
    guint64 before = dr_fake_points();
    if (fail_at > 0) dr_fake_arm(before + fail_at, DR_FAULT_LAUNCH);
    DrRunReport *rr = dr_runner_run(r, &error);
    if (fail_at == 0) {
      g_assert_no_error(error);
      total = dr_fake_points() - before;
    } else if (rr == NULL) {
      g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    }
    dr_run_report_free(rr);
    g_clear_error(&error);
    dr_fake_runner_free_faulted(r);
    if (fail_at >= total) break;
  }
  g_assert_cmpuint(total, >, 2);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api());
  g_test_add_func("/fault/loop-count/graph-runner", test_graph_runner);
  g_test_add_func("/fault/loop-count/streams-runner", test_streams_runner);
  g_test_add_func("/fault/loop-count/against-fixed", test_against_fixed);
  g_test_add_func("/fault/loop-count/faults", test_faults);
  return g_test_run();
}
