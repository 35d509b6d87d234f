/* condgraph_test.c: graph mode's CUDA conditional nodes (issue #17,
 * backends/cuda/condgraph.c) on the fake CUDA table with its graph-node
 * model: the graph built (a WHILE or IF node of the right kind and size,
 * the body built into its body graph with the body plan's edges, nested
 * loops nested, the condition and counter kernels where they belong), the
 * bytes a replay of it leaves against the host backend's (twins running),
 * the trips read back, and a fault at every call of the build releasing
 * everything. */
#include <glib/gstdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/loops.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

/* The pipeline of case `body` with `out` (s copied back) saved to `path`. */
static char *pipeline(const char *path, const char *body) {
  return g_strdup_printf(
      "dagrun: 1\nbuffers:\n  x: {type: f32, count: 64, init: iota}\n  s: {type: f32, count: 64}\n"
      "  one: {type: f32, count: 1}\n  go: {type: i32, count: 1}\n  no: {type: i32, count: 1}\n"
      "  out: {type: f32, count: 64, where: host, save: '%s'}\n"
      "nodes:\n  init: {op: kernel, kernel: fill_f32, args: {y: one, value: 1.0}}\n"
      "  first: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
      "%s  down: {op: copy, src: s, dst: out}\n",
      path, body);
}

/* Runs `plan` once (1 warmup, 2 timed) and returns `path`'s bytes; the
 * report's trips of loop 0 in *trips. */
static char *run_bytes(const DrPlan *plan, const DrGraph *g, DrBackendKind backend, DrMode mode,
                       const char *path, gsize *len, guint64 *trips) {
  /* no stamp nodes in the shapes */
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_OFF, 1, 2);
  opts.backend = backend;
  g_autoptr(DrReport) r = NULL;
  char *data = dr_fake_run_saved(plan, &opts, TRUE, path, len, &r);
  *trips = r->loops && r->loops->len ? g_array_index(r->loops, DrLoopReport, 0).trips_max : 0;
  return data;
}

typedef struct {
  const char *name;
  const char *body;  /* the nodes between `first` and `down` */
  const char *shape; /* dr_fake_graph_shape(FALSE) of graph mode's graph */
  guint64 trips;     /* loop 0's trips per iteration */
} Case;

#define WHILE_BODY                                                                                  \
  "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n" \
  "      count: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"      \
  "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"

static const Case cases[] = {
    /* 5 -> 2.5 -> ... -> 0.0098: 9 trips; an if/else after it (go is 0). */
    {"while-if",
     "  l:\n    op: loop\n    while: go\n    nodes:\n" WHILE_BODY
     "  pick:\n    op: if\n    if: go\n    nodes:\n"
     "      yes: {op: memset, dst: \"s[4:8]\", value: 1}\n    else:\n"
     "      nay: {op: memset, dst: \"s[4:8]\", value: 2}\n",
     "fill_f32 fill_f32 memset while{scale_f32 add_f32 set_while_gt_f32 cond} memset cond if{memset | "
     "memset} "
     "memcpy",
     9},
    /* A condition false at entry: a do-while still makes its first trip
     * (the body then finds it false), as on the host backend. */
    {"false-at-entry",
     "  zero: {op: memset, dst: no, value: 0}\n"
     "  l:\n    op: loop\n    while: no\n    nodes:\n"
     "      inc: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"
     "      stop: {op: kernel, kernel: set_while_gt_f32, args: {x: \"s[8:9]\", tol: 1.0, cond: no}}\n",
     "fill_f32 fill_f32 memset memset while{add_f32 set_while_gt_f32 cond} memcpy", 1},
    /* A while nested in a while (each inner run starts with its first
     * trip: cond1), and a repeat inside the inner body, unrolled. */
    {"nested",
     "  l:\n    op: loop\n    while: go\n    nodes:\n"
     "      reset: {op: kernel, kernel: fill_f32, args: {y: \"x[1:2]\", value: 4.0}}\n"
     "      inner:\n        op: loop\n        while: no\n        nodes:\n"
     "          q: {op: kernel, kernel: scale_f32, args: {x: \"x[1:2]\", alpha: 0.5, y: \"x[1:2]\"}}\n"
     "          twice:\n            op: loop\n            repeat: 2\n            nodes:\n"
     "              t: {op: kernel, kernel: add_f32, args: {a: \"s[2:3]\", b: one, y: \"s[2:3]\"}}\n"
     "          c2: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[1:2]\", tol: 1.5, cond: no}}\n"
     "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
     "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n",
     /* half is independent of inner: the body plan issues it first */
     "fill_f32 fill_f32 memset while{fill_f32 scale_f32 cond1 while{scale_f32 add_f32 add_f32 "
     "set_while_gt_f32 "
     "cond} set_while_gt_f32 cond} memcpy",
     9},
    /* A repeat with a while inside: a counted WHILE at the top level. */
    {"repeat-while",
     "  l:\n    op: loop\n    repeat: 3\n    nodes:\n"
     "      again: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
     "      w:\n        op: loop\n        while: go\n        nodes:\n"
     "          half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
     "          count: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"
     "          check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n",
     "fill_f32 fill_f32 memset while{fill_f32 cond1 while{scale_f32 add_f32 set_while_gt_f32 cond} count} "
     "memcpy",
     3},
    /* A reduction in the body (Jacobi's norm): its scratch is the
     * backend's, made once, so the body holds no memory nodes (a borrowed
     * cudaMallocAsync would be an alloc node, which CUDA refuses there).
     * x persists across runs: after the warmup, first sets x[0] = 5 and
     * the sum halves from 5.49 to below 1 in 3 trips. */
    {"reduce",
     "  l:\n    op: loop\n    while: go\n    nodes:\n"
     "      half: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 0.5, y: x}}\n"
     "      norm: {op: kernel, kernel: reduce_sum_f32, args: {x: x, y: \"s[0:1]\"}}\n"
     "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"s[0:1]\", tol: 1.0, cond: go}}\n",
     "fill_f32 fill_f32 memset while{scale_f32 reduce_sum_f32 set_while_gt_f32 cond} memcpy", 3},
};

/* Graph mode's graph, and its bytes equal the host backend's. */
static void test_case(gconstpointer data) {
  const Case *c = data;
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph.bin", NULL);
  g_autofree char *yaml = pipeline(path, c->body);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("cond.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  gsize want_len = 0, got_len = 0, s_len = 0;
  guint64 want_trips = 0, got_trips = 0, s_trips = 0;
  g_autofree char *want = run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len, &want_trips);
  g_autofree char *streams = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_STREAMS, path, &s_len, &s_trips);
  /* The shape with one copy per trip; then the default unroll (kernel
   * guards where the body allows them) gives the same bytes and trips. */
  g_setenv("DAGRUN_WHILE_UNROLL", "1", TRUE);
  g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &got_len, &got_trips);
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==, c->shape);
  gsize d_len = 0;
  guint64 d_trips = 0;
  g_autofree char *by_default = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &d_len, &d_trips);
  g_test_message("default: %s", dr_fake_graph_shape(FALSE));
  g_assert_cmpmem(got, got_len, want, want_len);
  g_assert_cmpmem(by_default, d_len, want, want_len);
  g_assert_cmpmem(streams, s_len, want, want_len);
  g_assert_cmpuint(want_trips, ==, c->trips);
  g_assert_cmpuint(got_trips, ==, c->trips);
  g_assert_cmpuint(d_trips, ==, c->trips);
}

/* The body graph has the body plan's edges: two independent kernels
 * side by side (no edge between them), the condition kernel after both,
 * the while node after the memset of its counters. */
static void test_width(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-width.bin", NULL);
  g_autofree char *yaml =
      pipeline(path,
               "  l:\n    op: loop\n    while: go\n    nodes:\n"
               "      a: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, "
               "y: \"x[0:1]\"}}\n"
               "      b: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: "
               "\"s[0:1]\"}}\n"
               "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, "
               "cond: go}}\n");
  g_autoptr(DrGraph) g = dr_fake_load_yaml("width.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  gsize len = 0;
  guint64 trips = 0;
  g_setenv("DAGRUN_WHILE_UNROLL", "1", TRUE);
  g_autofree char *bytes = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &len, &trips);
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  const char *shape = dr_fake_graph_shape(TRUE);
  g_test_message("%s", shape);
  /* a and b are roots of the body, check follows a (it reads x[0]), the
   * condition kernel follows check and b. */
  g_assert_nonnull(strstr(shape, "while<2>{0:scale_f32 1:add_f32 2:set_while_gt_f32<0> 3:cond<"));
  g_assert_true(strstr(shape, "3:cond<2,1>}") || strstr(shape, "3:cond<1,2>}"));
  g_assert_cmpuint(trips, ==, 9);
}

/* Every call of a graph-mode run with conditional nodes failed in turn:
 * the run fails (or, for a call whose failure is only reported, goes on),
 * nothing stays live and the fake saw no misuse. */
static void test_faults(gconstpointer data) {
  const char *which = data;
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-faults.bin", NULL);
  /* nested: cases[2]; device-loop: the same as run.device_loop's
   * iteration, with an if after the loops; unroll: cases[0] with 3
   * copies per trip. */
  gboolean unroll = g_str_has_prefix(which, "unroll");
  g_autofree char *yaml = pipeline(path, unroll ? cases[0].body : cases[2].body);
  if (strcmp(which, "device-loop") == 0) {
    g_autofree char *plain = g_steal_pointer(&yaml);
    /* No host buffer in a device loop's iteration: out stays, down goes. */
    g_autofree char *no_down = g_strndup(plain, strstr(plain, "  down:") - plain);
    yaml = g_strconcat("dagrun: 1\nrun: {device_loop: true}\n", no_down + strlen("dagrun: 1\n"),
                       "  pick:\n    op: if\n    if: go\n    nodes:\n"
                       "      yes: {op: memset, dst: \"s[4:8]\", value: 1}\n",
                       NULL);
    char *out = strstr(yaml, ", where: host");
    memmove(out, out + strlen(", where: host"), strlen(out + strlen(", where: host")) + 1);
  }
  if (unroll) g_setenv("DAGRUN_WHILE_UNROLL", "3", TRUE);
  if (strcmp(which, "unroll-if") == 0) g_setenv("DAGRUN_WHILE_GUARD", "if", TRUE);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("faults.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, 0, 1);
  dr_fake_reset();
  g_autoptr(DrReport) clean = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  guint64 n = dr_fake_points();
  g_assert_cmpuint(n, >, 20);
  guint failed = 0;
  for (guint64 p = 1; p <= n; p++) {
    for (int f = 0; f < 2; f++) {
      dr_fake_reset();
      dr_fake_arm(p, f ? DR_FAULT_ILLEGAL : DR_FAULT_INVALID);
      g_autoptr(GError) e = NULL;
      g_autoptr(DrReport) r = dr_run(plan, &opts, &e);
      if (r == NULL) {
        g_assert_nonnull(e);
        failed++;
      }
      /* A refused release keeps its object, as the runtime would. */
      const DrFakeCall *hit = dr_fake_faulted_call();
      if (hit && hit->release) continue;
      if (dr_fake_live_total() != 0) {
        g_autoptr(GString) live = g_string_new(NULL);
        dr_fake_describe_live(live);
        g_error("point %" G_GUINT64_FORMAT " (%s): left live: %s", p, f ? "sticky" : "invalid", live->str);
      }
      if (!f && strcmp(dr_fake_misuse(), "") != 0)
        g_error("point %" G_GUINT64_FORMAT ": misuse: %s", p, dr_fake_misuse());
    }
  }
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  g_unsetenv("DAGRUN_WHILE_GUARD");
  g_test_message("%" G_GUINT64_FORMAT " points, %u failed runs", n, failed);
  g_assert_cmpuint(failed, >, n);
}

/* run.device_loop: the iterations (1 warmup, 2 timed) are one launch of a
 * WHILE node around the iteration, ended by the counter kernel; the
 * bytes are the host backend's (which runs the iterations one by one),
 * each timed iteration's time is its trip's stamps' difference (the
 * fake's clock: 1 us per stamp, one stamp per trip), and a loop inside
 * the iteration nests. */
static void test_device_loop(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-dl.bin", NULL);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\nrun: {mode: graph, device_loop: true}\nbuffers:\n  x: {type: f32, count: 64, init: iota}\n"
      "  s: {type: f32, count: 64}\n  one: {type: f32, count: 1}\n  go: {type: i32, count: 1}\n"
      "  out: {type: f32, count: 64, save: '%s'}\n"
      "nodes:\n  init: {op: kernel, kernel: fill_f32, args: {y: one, value: 1.0}}\n"
      "  first: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
      "  l:\n    op: loop\n    while: go\n    nodes:\n" WHILE_BODY
      "  grow: {op: kernel, kernel: axpy_f32, args: {alpha: 0.5, x: x, y: s}}\n"
      "  keep: {op: copy, src: s, dst: out}\n",
      path);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("dl.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  gsize want_len = 0, got_len = 0;
  guint64 want_trips = 0;
  g_autofree char *want = run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len, &want_trips);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, 1, 2);
  g_autoptr(DrReport) r = NULL;
  g_setenv("DAGRUN_WHILE_UNROLL", "1", TRUE);
  g_autofree char *got = dr_fake_run_saved(plan, &opts, TRUE, path, &got_len, &r);
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  g_assert_cmpstr(
      dr_fake_graph_shape(FALSE), ==,
      "memset stamp while{fill_f32 fill_f32 memset cond1 while{scale_f32 add_f32 set_while_gt_f32 cond} "
      "axpy_f32 memcpy count}");
  guint launches = 0;
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++)
    launches += strcmp(g_array_index(trace, DrFakeCall, i).name, "cudaGraphLaunch") == 0;
  g_assert_cmpuint(launches, ==, 1);
  g_assert_cmpuint(r->iterations, ==, 2);
  /* The fake's clock advances 1 us per stamp: the start, then one per
   * trip. */
  g_assert_cmpfloat(r->iter_makespan_us[0], ==, 1.0);
  g_assert_cmpfloat(r->iter_makespan_us[1], ==, 1.0);
  g_assert_cmpuint(g_array_index(r->loops, DrLoopReport, 0).trips_max, ==, 9);
  g_assert_cmpuint(want_trips, ==, 9);
  g_assert_cmpmem(got, got_len, want, want_len);
  /* By default the while inside is kernel-guarded (several copies per
   * trip): the same bytes and trips. */
  dr_fake_reset();
  dr_fake_set_run_twins(TRUE);
  dr_fake_set_replay_graphs(TRUE);
  g_autoptr(DrReport) r2 = dr_run(plan, &opts, &error);
  dr_fake_set_run_twins(FALSE);
  dr_fake_set_replay_graphs(FALSE);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_null(strstr(dr_fake_graph_shape(FALSE), "if{"));
  g_assert_cmpuint(dr_fake_guard_skips(), >, 0);
  g_assert_cmpuint(g_array_index(r2->loops, DrLoopReport, 0).trips_max, ==, 9);
  char *data2 = NULL;
  gsize len2 = 0;
  g_assert_true(g_file_get_contents(path, &data2, &len2, NULL));
  g_autofree char *got2 = data2;
  g_unlink(path);
  g_assert_cmpmem(got2, len2, want, want_len);
}

/* DAGRUN_WHILE_UNROLL=2..4 with DAGRUN_WHILE_GUARD=if: each WHILE trip
 * holds the body U times, the 2nd to Uth each in an IF node set from the
 * condition after the copy before, so that no copy runs past the stop: 9
 * copies run, the bytes and trips are the host's. */
static void test_unroll(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-unroll.bin", NULL);
  g_autofree char *yaml = pipeline(path, "  l:\n    op: loop\n    while: go\n    nodes:\n" WHILE_BODY);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("unroll.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  for (guint u = 2; u <= 4; u++) {
    gsize want_len = 0, got_len = 0;
    guint64 want_trips = 0, got_trips = 0;
    g_autofree char *want =
        run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len, &want_trips);
    g_autofree char *n = g_strdup_printf("%u", u);
    g_setenv("DAGRUN_WHILE_UNROLL", n, TRUE);
    g_setenv("DAGRUN_WHILE_GUARD", "if", TRUE);
    g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &got_len, &got_trips);
    g_unsetenv("DAGRUN_WHILE_UNROLL");
    g_unsetenv("DAGRUN_WHILE_GUARD");
    g_autoptr(GString) shape =
        g_string_new("fill_f32 fill_f32 memset while{scale_f32 add_f32 set_while_gt_f32");
    for (guint k = 1; k < u; k++) g_string_append(shape, " cond if{scale_f32 add_f32 set_while_gt_f32}");
    g_string_append(shape, " cond} memcpy");
    g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==, shape->str);
    g_assert_cmpmem(got, got_len, want, want_len);
    g_assert_cmpuint(want_trips, ==, 9);
    g_assert_cmpuint(got_trips, ==, 9);
  }
}

/* Kernel guards (the default for a body of guardable kernels): with
 * DAGRUN_WHILE_UNROLL=4 each WHILE trip holds the body 4 times and no IF
 * node; in copies 2..4 the node that sets the condition comes after
 * every other node of its copy. The loop stops in the middle of its
 * third trip (9 iterations: 4 + 4 + 1), so the last 3 copies find the
 * condition 0 and their kernels do nothing: the bytes and the trips are
 * the host backend's, and the kernels run are exactly the host's. A
 * device that ignored the guards would run those copies: the fake made
 * to ignore them gives other bytes (the test can fail). */
static void test_guarded(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-guarded.bin", NULL);
  g_autofree char *yaml = pipeline(path, "  l:\n    op: loop\n    while: go\n    nodes:\n" WHILE_BODY);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("guarded.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  gsize want_len = 0, got_len = 0, bad_len = 0;
  guint64 want_trips = 0, got_trips = 0, bad_trips = 0;
  g_autofree char *want = run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len, &want_trips);
  g_setenv("DAGRUN_WHILE_UNROLL", "4", TRUE);
  g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &got_len, &got_trips);
  g_autofree char *shape = g_strdup(dr_fake_graph_shape(FALSE));
  g_autofree char *deps = g_strdup(dr_fake_graph_shape(TRUE));
  guint run = dr_fake_kernels_run(), skipped = dr_fake_guard_skips();
  dr_fake_set_ignore_guards(TRUE);
  g_autofree char *bad = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &bad_len, &bad_trips);
  dr_fake_set_ignore_guards(FALSE);
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  g_test_message("%s", deps);
  g_assert_cmpstr(shape, ==,
                  "fill_f32 fill_f32 memset while{scale_f32 add_f32 set_while_gt_f32 scale_f32 add_f32 "
                  "set_while_gt_f32 scale_f32 add_f32 set_while_gt_f32 scale_f32 add_f32 set_while_gt_f32 "
                  "cond} memcpy");
  /* Copy 2: half (3) and count (4) after copy 1's exits (1, 2), check (5)
   * after both. */
  g_assert_nonnull(strstr(deps, " 3:scale_f32<"));
  g_assert_true(strstr(deps, " 5:set_while_gt_f32<4,3>") || strstr(deps, " 5:set_while_gt_f32<3,4>") ||
                strstr(deps, " 5:set_while_gt_f32<2,3,4>") || strstr(deps, " 5:set_while_gt_f32<3,4,2>"));
  g_assert_cmpmem(got, got_len, want, want_len);
  g_assert_cmpuint(want_trips, ==, 9);
  g_assert_cmpuint(got_trips, ==, 9);
  /* 3 runs (1 warmup, 2 timed), each: init, first, 9 iterations of 3
   * kernels; 3 copies of 3 kernels skipped at the end of the last trip. */
  g_assert_cmpuint(run, ==, 3 * (2 + 9 * 3));
  g_assert_cmpuint(skipped, ==, 3 * 3 * 3);
  /* Ignoring the guards runs 12 iterations: s[0] counts them. */
  g_assert_cmpuint(bad_len, ==, want_len);
  g_assert_true(memcmp(bad, want, want_len) != 0);
}

/* Without DAGRUN_WHILE_UNROLL a body of guardable kernels gets
 * dr_loop_auto_unroll_guarded's copies, kernel-guarded; a body holding
 * a memset keeps one copy per trip (IF nodes only when forced). --plan
 * says which. */
static void test_guarded_default(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "condgraph-default.bin", NULL);
  for (int memset_in_body = 0; memset_in_body < 2; memset_in_body++) {
    g_autofree char *body =
        g_strconcat("  l:\n    op: loop\n    while: go\n    nodes:\n" WHILE_BODY,
                    memset_in_body ? "      z: {op: memset, dst: \"s[9:10]\", value: 0}\n" : "", NULL);
    g_autofree char *yaml = pipeline(path, body);
    g_autoptr(DrGraph) g = dr_fake_load_yaml("default.yaml", yaml);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    const DrPlan *bp = g_ptr_array_index(plan->bodies, 0);
    guint32 u = dr_loop_auto_unroll_guarded(bp->critical_path_us);
    /* --plan's line is graph mode's plan's (uncapped). */
    DrPlanOptions po = {.uncapped = TRUE};
    g_autoptr(DrPlan) graph_plan = dr_plan_build(g, &po, &error);
    g_assert_no_error(error);
    g_autoptr(GString) text = g_string_new(NULL);
    dr_plan_write_text(graph_plan, text);
    g_test_message("%s", text->str);
    gsize want_len = 0, got_len = 0;
    guint64 want_trips = 0, got_trips = 0;
    g_autofree char *want =
        run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len, &want_trips);
    g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &got_len, &got_trips);
    const char *shape = dr_fake_graph_shape(FALSE);
    g_test_message("U %u: %s", u, shape);
    g_assert_cmpmem(got, got_len, want, want_len);
    g_assert_cmpuint(got_trips, ==, want_trips);
    g_assert_null(strstr(shape, "if{"));
    guint copies = 0;
    for (const char *p = strstr(shape, "set_while_gt_f32"); p; p = strstr(p + 1, "set_while_gt_f32"))
      copies++;
    if (memset_in_body) {
      g_assert_cmpuint(copies, ==, 1);
      g_assert_nonnull(strstr(text->str,
                              "graph mode: one CUDA WHILE node, 1 copy of the body per trip (not "
                              "guardable by kernels: a memset or copy"));
    } else {
      g_assert_cmpuint(u, >, 1);
      g_assert_cmpuint(copies, ==, u);
      g_autofree char *line = g_strdup_printf(
          "graph mode: one CUDA WHILE node, %u copies of the body per "
          "trip, guarded by kernels",
          u);
      g_assert_nonnull(strstr(text->str, line));
    }
  }
}

/* What dr_loop_while_guardable refuses: a kernel after the node that
 * sets the condition, two such nodes, a copy; and what it accepts: a
 * kernel beside it (graph mode orders it before). */
static void test_guarded_rules(void) {
  static const struct {
    const char *body;
    const char *why; /* NULL: guardable */
  } rules[] = {
      {"      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"
       "      after: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 0.5, y: x}}\n",
       "a kernel after the one that sets the condition"},
      {"      a: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"
       "      b: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.02, cond: go}}\n",
       "two nodes that set the condition"},
      {"      c: {op: copy, src: x, dst: s}\n"
       "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n",
       "a memset or copy (no kernel of its own to read the condition)"},
      {"      beside: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"
       "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"
       "      idle: {op: noop}\n",
       NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
    g_autofree char *body =
        g_strconcat("  l:\n    op: loop\n    while: go\n    nodes:\n", rules[i].body, NULL);
    g_autofree char *yaml = pipeline("/dev/null", body);
    g_autoptr(DrGraph) g = dr_fake_load_yaml("rules.yaml", yaml);
    const DrLoop *l = dr_graph_loop(g, 0);
    const char *why = NULL;
    DrId writer = 0;
    gboolean ok = dr_loop_while_guardable(l->body, l->cond, &writer, &why);
    g_assert_cmpint(ok, ==, rules[i].why == NULL);
    g_assert_cmpstr(why, ==, rules[i].why);
    if (ok) g_assert_cmpstr(dr_graph_node(l->body, writer)->id, ==, "l/check");
  }
}

/* Without the conditional entries (a CUDA before 12.4: dr_fake_api has
 * none), graph mode refuses while: before any call but the device query. */
static void test_refused(void) {
  const DrCudaApi *prev = dr_cuda_api_set(dr_fake_api());
  g_autofree char *yaml = pipeline("/dev/null", cases[0].body);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("old.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, g->run.warmup, g->run.iterations);
  dr_fake_reset();
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "node 'l': graph mode builds while: as a CUDA conditional node"));
  dr_cuda_api_set(prev);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api_graph_nodes());
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = g_strdup_printf("/fault/condgraph/%s", cases[i].name);
    g_test_add_data_func(name, &cases[i], test_case);
  }
  g_test_add_func("/fault/condgraph/width", test_width);
  g_test_add_data_func("/fault/condgraph/faults/nested", "nested", test_faults);
  g_test_add_data_func("/fault/condgraph/faults/device-loop", "device-loop", test_faults);
  g_test_add_data_func("/fault/condgraph/faults/unroll", "unroll", test_faults);
  g_test_add_data_func("/fault/condgraph/faults/unroll-if", "unroll-if", test_faults);
  g_test_add_func("/fault/condgraph/guarded", test_guarded);
  g_test_add_func("/fault/condgraph/guarded/default", test_guarded_default);
  g_test_add_func("/fault/condgraph/guarded/rules", test_guarded_rules);
  g_test_add_func("/fault/condgraph/device-loop", test_device_loop);
  g_test_add_func("/fault/condgraph/unroll", test_unroll);
  g_test_add_func("/fault/condgraph/refused", test_refused);
  int rc = g_test_run();
  return rc;
}
