/* trips_test.c: the trip spans of the CUDA backend's host-driven loops
 * (backends/cuda/trips.c) on the fake CUDA table, whose stamp kernel
 * writes a clock that advances 1 µs per stamp: in streams mode a repeat:
 * 5, a while that stops after a data-dependent number of trips (the host
 * backend's count) and a nested loop give exactly their trips as spans, in
 * order, not overlapping, inside the loop node's span (a nested trip
 * inside its outer trip), over iterations in flight in both timing slots;
 * the bound keeps the first and last DR_TRIP_SPANS_KEEP trips of a repeat
 * (stamping none in between) and of a while (a ring); no trip stamp is
 * launched when timing is off; a fault at every call of a run with trip
 * stamps releases everything. Graph mode (the graph's own trip stamp
 * kernels, trips.c's ring) gives the same spans: a while with one copy per
 * trip, kernel-guarded copies and IF-guarded copies (a copy after the stop
 * is no trip), a repeat captured unrolled (its middle trips unstamped),
 * nested loops in a while's body (a while's trips numbered per run, inside
 * the outer trip; a repeat of 70 keeping its first and last K over the
 * runs), an if (trip 0, or none), and a fault at every call of it; and
 * the body nodes' times in each loop's last trip (their own end stamps,
 * started when the body's plan made them ready: exact on the fake's
 * clock), in the report, its JSON, text and trace. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/plan.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/support/trip_spans.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

#define HEAD                                                           \
  "dagrun: 1\nbuffers:\n  x: {type: f32, count: 16, init: iota}\n"     \
  "  y: {type: f32, count: 16}\n  go: {type: i32, count: 1}\nnodes:\n" \
  "  pre: {op: kernel, kernel: fill_f32, args: {y: y, value: 1.0}}\n"  \
  "  one: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"

#define REPEAT5                                              \
  HEAD "  solve:\n    op: loop\n    repeat: 5\n    nodes:\n" \
       "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n"

/* x[0] = 5 halves each trip until it is at most `tol`. */
static char *while_yaml(const char *tol) {
  return g_strdup_printf(HEAD
                         "  solve:\n    op: loop\n    while: go\n    nodes:\n"
                         "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: "
                         "\"x[0:1]\"}}\n"
                         "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[0:1]\", tol: %s, "
                         "cond: go}}\n",
                         tol);
}

#define NESTED                                                                      \
  HEAD "  outer:\n    op: loop\n    repeat: 3\n    nodes:\n"                        \
       "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n" \
       "      inner:\n        op: loop\n        repeat: 4\n        nodes:\n"        \
       "          b: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 1.0, y: x}}\n"

/* Runs `yaml` on the fake CUDA backend (twins running) in `mode` with
 * `timing`, 1 warmup and `iterations` timed; the run must succeed and
 * leave nothing live. *stamps: the stamp kernels launched. */
static DrReport *run(const char *yaml, DrMode mode, DrTimingMode timing, guint32 iterations, DrGraph **g,
                     DrPlan **plan, guint *stamps) {
  *g = dr_fake_load_yaml("t.yaml", yaml);
  *plan = dr_fake_plan(*g);
  DrRunOptions opts = dr_fake_run_options(*g, mode, timing, 1, iterations);
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  dr_fake_set_run_twins(TRUE);
  dr_fake_set_replay_graphs(TRUE);
  DrReport *r = dr_run(*plan, &opts, &error);
  dr_fake_set_run_twins(FALSE);
  dr_fake_set_replay_graphs(FALSE);
  g_assert_no_error(error);
  if (stamps) *stamps = dr_fake_count_calls(0, "stamp_launch");
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  return r;
}

static DrId node_id(const DrGraph *g, const char *id) {
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++)
    if (strcmp(dr_graph_node(g, v)->id, id) == 0) return v;
  g_assert_not_reached();
}

/* Spans [from, to) of `s` are trips `first`.. in order, each after the
 * one before, of positive length, within [lo, hi]. */
static void assert_serial(GPtrArray *s, guint from, guint to, guint64 first, double lo, double hi) {
  double prev_end = lo;
  for (guint k = from; k < to; k++) {
    const DrTripSpan *sp = g_ptr_array_index(s, k);
    g_assert_cmpuint(sp->trip, ==, first + (k - from));
    g_assert_cmpfloat(sp->start_us, >=, prev_end);
    g_assert_cmpfloat(sp->end_us, >, sp->start_us);
    prev_end = sp->end_us;
  }
  g_assert_cmpfloat(prev_end, <=, hi);
}

/* The loop node's span in timed iteration `it`. */
#define NODE_START(r, it, v) ((r)->sample_start[(gsize)(it) * (r)->n_graph_nodes + (v)])
#define NODE_END(r, it, v) ((r)->sample_end[(gsize)(it) * (r)->n_graph_nodes + (v)])

static void test_repeat(void) {
  DrGraph *g;
  DrPlan *plan;
  guint stamps = 0;
  /* 3 timed iterations: both timing slots, each slot used twice. */
  DrReport *r = run(REPEAT5, DR_MODE_STREAMS, DR_TIMING_STAMPS, 3, &g, &plan, NULL);
  DrId solve = node_id(g, "solve");
  g_assert_nonnull(r->trip_spans);
  g_assert_cmpuint(r->trip_spans->len, ==, 15);
  for (guint32 it = 0; it < 3; it++) {
    g_autoptr(GPtrArray) s = dr_test_trip_spans(r, it, "solve");
    g_assert_cmpuint(s->len, ==, 5);
    assert_serial(s, 0, 5, 0, NODE_START(r, it, solve), NODE_END(r, it, solve));
    g_assert_cmpuint(dr_test_trip_count(r, it, "solve")->trips, ==, 5);
    g_assert_cmpuint(dr_test_trip_count(r, it, "solve")->dropped, ==, 0);
  }
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
  /* Timing off: no stamp launched, no spans; events: the trips are
   * stamped all the same (2 per trip and 1 per loop, per timed
   * iteration). */
  r = run(REPEAT5, DR_MODE_STREAMS, DR_TIMING_OFF, 3, &g, &plan, &stamps);
  g_assert_cmpuint(stamps, ==, 0);
  g_assert_null(r->trip_spans);
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
  r = run(REPEAT5, DR_MODE_STREAMS, DR_TIMING_EVENTS, 3, &g, &plan, &stamps);
  g_assert_cmpuint(stamps, ==, 3 * (2 * 5 + 1));
  g_assert_cmpuint(r->trip_spans->len, ==, 15);
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
}

/* The trips of a while are the host backend's: 5 / 2^n <= 0.01 at n = 9. */
static void test_while(void) {
  DrGraph *g;
  DrPlan *plan;
  g_autofree char *yaml = while_yaml("0.01");
  DrReport *r = run(yaml, DR_MODE_STREAMS, DR_TIMING_STAMPS, 2, &g, &plan, NULL);
  DrId solve = node_id(g, "solve");
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) s = dr_test_trip_spans(r, it, "solve");
    g_assert_cmpuint(s->len, ==, 9);
    assert_serial(s, 0, 9, 0, NODE_START(r, it, solve), NODE_END(r, it, solve));
  }
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
}

static void test_nested(void) {
  DrGraph *g;
  DrPlan *plan;
  DrReport *r = run(NESTED, DR_MODE_STREAMS, DR_TIMING_STAMPS, 2, &g, &plan, NULL);
  DrId outer = node_id(g, "outer");
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) o = dr_test_trip_spans(r, it, "outer");
    g_autoptr(GPtrArray) in = dr_test_trip_spans(r, it, "outer/inner");
    g_assert_cmpuint(o->len, ==, 3);
    g_assert_cmpuint(in->len, ==, 12);
    assert_serial(o, 0, 3, 0, NODE_START(r, it, outer), NODE_END(r, it, outer));
    for (guint k = 0; k < 3; k++) {
      const DrTripSpan *os = g_ptr_array_index(o, k);
      assert_serial(in, 4 * k, 4 * k + 4, 0, os->start_us, os->end_us);
      g_assert_cmpuint(((const DrTripSpan *)g_ptr_array_index(in, 4 * k))->depth, ==, 1);
      g_assert_cmpuint(((const DrTripSpan *)g_ptr_array_index(in, 4 * k))->node, ==, outer);
    }
  }
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
}

/* The bound: a repeat: 100 stamps only the trips it keeps; a while of
 * unknown length keeps the latest in a ring. */
static void test_bound(void) {
  const guint K = DR_TRIP_SPANS_KEEP;
  DrGraph *g;
  DrPlan *plan;
  guint stamps = 0;
  DrReport *r = run(HEAD
                    "  solve:\n    op: loop\n    repeat: 100\n    nodes:\n"
                    "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n",
                    DR_MODE_STREAMS, DR_TIMING_EVENTS, 1, &g, &plan, &stamps);
  g_autoptr(GPtrArray) s = dr_test_trip_spans(r, 0, "solve");
  g_assert_cmpuint(s->len, ==, 2 * K);
  /* The fake's events say nothing of its stamp clock: the spans are
   * checked against each other only. */
  assert_serial(s, 0, K, 0, ((const DrTripSpan *)g_ptr_array_index(s, 0))->start_us, INFINITY);
  assert_serial(s, K, 2 * K, 100 - K, ((const DrTripSpan *)g_ptr_array_index(s, K - 1))->end_us, INFINITY);
  g_assert_cmpuint(dr_test_trip_count(r, 0, "solve")->trips, ==, 100);
  g_assert_cmpuint(dr_test_trip_count(r, 0, "solve")->dropped, ==, 100 - 2 * K);
  g_assert_cmpuint(stamps, ==, 2 * 2 * K + 1);
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
  /* 5 / 2^n <= 1e-30 first at n = 102 (f32 halves exactly), the trips the
   * report counts. */
  g_autofree char *yaml = while_yaml("1.0e-30");
  r = run(yaml, DR_MODE_STREAMS, DR_TIMING_STAMPS, 2, &g, &plan, NULL);
  DrId solve = node_id(g, "solve");
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) w = dr_test_trip_spans(r, it, "solve");
    const DrTripCount *c = dr_test_trip_count(r, it, "solve");
    g_assert_cmpuint(c->trips, ==, 102);
    g_assert_cmpuint(g_array_index(r->loops, DrLoopReport, 0).trips_max, ==, 102);
    g_assert_cmpuint(w->len, ==, 2 * K);
    g_assert_cmpuint(c->dropped, ==, 102 - 2 * K);
    assert_serial(w, 0, K, 0, NODE_START(r, it, solve), NODE_END(r, it, solve));
    assert_serial(w, K, 2 * K, 102 - K, ((const DrTripSpan *)g_ptr_array_index(w, K - 1))->end_us,
                  NODE_END(r, it, solve));
  }
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
}

/* Graph mode: the graph carries the trip stamps itself (trips.c's ring,
 * the trip stamp kernel in each body copy that is a trip): spans as in
 * streams mode, whatever copies a trip of the WHILE holds. */

/* Runs `yaml` in graph mode with stamps (2 timed iterations) and checks
 * loop `loop` (node `node`) has `trips` trips per iteration, all kept
 * when at most 2K, else the first and last K; returns the report. */
static DrReport *graph_run_check(const char *yaml, const char *loop, const char *node, guint64 trips,
                                 DrGraph **g, DrPlan **plan) {
  const guint64 K = DR_TRIP_SPANS_KEEP;
  DrReport *r = run(yaml, DR_MODE_GRAPH, DR_TIMING_STAMPS, 2, g, plan, NULL);
  DrId v = node_id(*g, node);
  g_assert_nonnull(r->trip_spans);
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) s = dr_test_trip_spans(r, it, loop);
    const DrTripCount *c = dr_test_trip_count(r, it, loop);
    if (trips == 0) { /* as in streams mode: a loop without trips has no count */
      g_assert_null(c);
      g_assert_cmpuint(s->len, ==, 0);
      continue;
    }
    g_assert_nonnull(c);
    g_assert_cmpuint(c->trips, ==, trips);
    g_assert_cmpuint(s->len, ==, MIN(trips, 2 * K));
    g_assert_cmpuint(c->dropped, ==, trips - s->len);
    if (strchr(loop, '/') != NULL) continue; /* the caller checks a nested loop's trips */
    if (trips <= 2 * K) {
      assert_serial(s, 0, s->len, 0, NODE_START(r, it, v), NODE_END(r, it, v));
    } else {
      assert_serial(s, 0, K, 0, NODE_START(r, it, v), NODE_END(r, it, v));
      assert_serial(s, K, 2 * K, trips - K, ((const DrTripSpan *)g_ptr_array_index(s, K - 1))->end_us,
                    NODE_END(r, it, v));
    }
  }
  return r;
}

static void graph_free(DrReport *r, DrPlan *plan, DrGraph *g) {
  dr_report_free(r);
  dr_plan_free(plan);
  dr_graph_free(g);
}

/* Body node `id`'s span in timed iteration `it` (graph mode's body node
 * stamps): one, in trip `trip` of `loop` (its last), inside that trip's
 * span, of positive length; NULL asserts there is none. */
static const DrBodySpan *body_span(const DrReport *r, guint32 it, const char *loop, const char *id,
                                   guint64 trip) {
  const DrBodySpan *found = NULL;
  for (guint i = 0; r->body_spans != NULL && i < r->body_spans->len; i++) {
    const DrBodySpan *b = &g_array_index(r->body_spans, DrBodySpan, i);
    if (b->iteration != it || strcmp(b->id, id) != 0) continue;
    g_assert_null(found);
    found = b;
  }
  if (trip == G_MAXUINT64) {
    g_assert_null(found);
    return NULL;
  }
  g_assert_nonnull(found);
  g_assert_cmpstr(found->loop, ==, loop);
  g_assert_cmpuint(found->trip, ==, trip);
  g_autoptr(GPtrArray) s = dr_test_trip_spans(r, it, loop);
  const DrTripSpan *last = g_ptr_array_index(s, s->len - 1);
  g_assert_cmpuint(last->trip, ==, trip);
  g_assert_cmpfloat(found->start_us, >=, last->start_us);
  g_assert_cmpfloat(found->end_us, >, found->start_us);
  g_assert_cmpfloat(found->end_us, <=, last->end_us);
  return found;
}

/* A while: one copy per trip, the default (kernel-guarded copies: a copy
 * after the stop must not pass for a trip), IF-guarded copies; 9 trips
 * and 102 (a ring of the latest K). */
static void test_graph_while(void) {
  static const struct {
    const char *unroll, *guard;
  } ways[] = {{"1", NULL}, {NULL, NULL}, {"4", NULL}, {"3", "if"}};
  for (guint w = 0; w < G_N_ELEMENTS(ways); w++) {
    if (ways[w].unroll) g_setenv("DAGRUN_WHILE_UNROLL", ways[w].unroll, TRUE);
    if (ways[w].guard) g_setenv("DAGRUN_WHILE_GUARD", ways[w].guard, TRUE);
    static const char *const tols[] = {"0.01", "1.0e-30"};
    static const guint64 trips[] = {9, 102};
    for (guint t = 0; t < 2; t++) {
      DrGraph *g;
      DrPlan *plan;
      g_autofree char *yaml = while_yaml(tols[t]);
      DrReport *r = graph_run_check(yaml, "solve", "solve", trips[t], &g, &plan);
      g_assert_cmpuint(g_array_index(r->loops, DrLoopReport, 0).trips_max, ==, trips[t]);
      /* The body's nodes in the last trip (whichever copy ran it), check
       * after half, which it reads. */
      for (guint32 it = 0; it < 2; it++) {
        const DrBodySpan *half = body_span(r, it, "solve", "solve/half", trips[t] - 1);
        const DrBodySpan *check = body_span(r, it, "solve", "solve/check", trips[t] - 1);
        g_assert_cmpfloat(check->start_us, >=, half->end_us);
      }
      graph_free(r, plan, g);
    }
    g_unsetenv("DAGRUN_WHILE_UNROLL");
    g_unsetenv("DAGRUN_WHILE_GUARD");
  }
}

/* A repeat captured unrolled (no condition inside): the host captures its
 * stamps, the first and last K of 100 only. */
static void test_graph_repeat(void) {
  const guint K = DR_TRIP_SPANS_KEEP;
  DrGraph *g;
  DrPlan *plan;
  DrReport *r = graph_run_check(REPEAT5, "solve", "solve", 5, &g, &plan);
  /* an open per trip, the close before the next trip's open in one */
  g_assert_cmpuint(dr_fake_count_calls(0, "trip_launch"), ==, 5 + 1);
  graph_free(r, plan, g);
  r = graph_run_check(HEAD
                      "  solve:\n    op: loop\n    repeat: 100\n    nodes:\n"
                      "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n",
                      "solve", "solve", 100, &g, &plan);
  g_assert_cmpuint(dr_fake_count_calls(0, "trip_launch"), ==, 2 * (K + 1));
  graph_free(r, plan, g);
  /* Timing off: no trip stamp in the graph, no spans. */
  guint stamps = 0;
  r = run(REPEAT5, DR_MODE_GRAPH, DR_TIMING_OFF, 2, &g, &plan, &stamps);
  g_assert_cmpuint(stamps, ==, 0);
  g_assert_cmpuint(dr_fake_count_calls(0, "trip_launch"), ==, 0);
  g_assert_null(r->trip_spans);
  graph_free(r, plan, g);
}

/* Nested loops in a while's body: a while (numbered from 0 at each run,
 * inside its outer trip) and an unrolled repeat of more than 2K (its
 * first and last K of each run stamped, the ring keeping the last run's). */
static void test_graph_nested(void) {
  const guint K = DR_TRIP_SPANS_KEEP;
  static const char *const unrolls[] = {"1", NULL};
  for (guint u = 0; u < G_N_ELEMENTS(unrolls); u++) {
    if (unrolls[u]) g_setenv("DAGRUN_WHILE_UNROLL", unrolls[u], TRUE);
    /* outer halves x[0] from 5: 9 trips; inner halves x[1] from 4 to 1: 2 trips per run. */
    DrGraph *g;
    DrPlan *plan;
    DrReport *r = graph_run_check(
        "dagrun: 1\nbuffers:\n  x: {type: f32, count: 16, init: iota}\n  y: {type: f32, count: 16}\n"
        "  go: {type: i32, count: 1}\n  go2: {type: i32, count: 1}\nnodes:\n"
        "  one: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
        "  solve:\n    op: loop\n    while: go\n    nodes:\n"
        "      reset: {op: kernel, kernel: fill_f32, args: {y: \"x[1:2]\", value: 4.0}}\n"
        "      inner:\n        op: loop\n        while: go2\n        nodes:\n"
        "          q: {op: kernel, kernel: scale_f32, args: {x: \"x[1:2]\", alpha: 0.5, y: \"x[1:2]\"}}\n"
        "          c2: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[1:2]\", tol: 1.5, cond: go2}}\n"
        "      many:\n        op: loop\n        repeat: 70\n        nodes:\n"
        "          m: {op: kernel, kernel: scale_f32, args: {x: \"y[0:1]\", alpha: 1.0, y: \"y[0:1]\"}}\n"
        "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
        "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[0:1]\", tol: 0.01, cond: go}}\n",
        "solve", "solve", 9, &g, &plan);
    DrId solve = node_id(g, "solve");
    for (guint32 it = 0; it < 2; it++) {
      g_autoptr(GPtrArray) o = dr_test_trip_spans(r, it, "solve");
      g_autoptr(GPtrArray) in = dr_test_trip_spans(r, it, "solve/inner");
      g_autoptr(GPtrArray) m = dr_test_trip_spans(r, it, "solve/many");
      g_assert_cmpuint(dr_test_trip_count(r, it, "solve/inner")->trips, ==, 2 * 9);
      g_assert_cmpuint(in->len, ==, 2 * 9);
      g_assert_cmpuint(dr_test_trip_count(r, it, "solve/many")->trips, ==, 70 * 9);
      g_assert_cmpuint(m->len, ==, 2 * K);
      g_assert_cmpuint(dr_test_trip_count(r, it, "solve/many")->dropped, ==, 70 * 9 - 2 * K);
      for (guint k = 0; k < 9; k++) {
        const DrTripSpan *os = g_ptr_array_index(o, k);
        g_assert_cmpuint(((const DrTripSpan *)g_ptr_array_index(in, 2 * k))->depth, ==, 1);
        g_assert_cmpuint(((const DrTripSpan *)g_ptr_array_index(in, 2 * k))->node, ==, solve);
        assert_serial(in, 2 * k, 2 * k + 2, 0, os->start_us, os->end_us);
      }
      const DrTripSpan *first = g_ptr_array_index(o, 0), *last = g_ptr_array_index(o, 8);
      assert_serial(m, 0, K, 0, first->start_us, first->end_us);
      assert_serial(m, K, 2 * K, 70 - K, last->start_us, last->end_us);
      /* Body nodes: each loop's last trip; half waits for nothing in the
       * body plan, check for half and for many (a nested loop: its last
       * trip's end). */
      body_span(r, it, "solve/inner", "solve/inner/q", 1);
      body_span(r, it, "solve/inner", "solve/inner/c2", 1);
      body_span(r, it, "solve/many", "solve/many/m", 69);
      body_span(r, it, "solve", "solve/reset", 8);
      const DrBodySpan *check = body_span(r, it, "solve", "solve/check", 8);
      g_assert_cmpfloat(check->start_us, >=, ((const DrTripSpan *)g_ptr_array_index(m, 2 * K - 1))->end_us);
    }
    graph_free(r, plan, g);
    g_unsetenv("DAGRUN_WHILE_UNROLL");
  }
}

/* A repeat with a while inside: a counted WHILE at the top level (its
 * trips numbered by the device, the while's from 0 in each). */
static void test_graph_counted(void) {
  DrGraph *g;
  DrPlan *plan;
  DrReport *r =
      graph_run_check(HEAD
                      "  solve:\n    op: loop\n    repeat: 3\n    nodes:\n"
                      "      again: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
                      "      w:\n        op: loop\n        while: go\n        nodes:\n"
                      "          half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, "
                      "y: \"x[0:1]\"}}\n"
                      "          check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[0:1]\", "
                      "tol: 0.01, cond: go}}\n",
                      "solve", "solve", 3, &g, &plan);
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) o = dr_test_trip_spans(r, it, "solve");
    g_autoptr(GPtrArray) w = dr_test_trip_spans(r, it, "solve/w");
    g_assert_cmpuint(w->len, ==, 3 * 9);
    for (guint k = 0; k < 3; k++) {
      const DrTripSpan *os = g_ptr_array_index(o, k);
      assert_serial(w, 9 * k, 9 * k + 9, 0, os->start_us, os->end_us);
    }
  }
  graph_free(r, plan, g);
}

/* Body node times in the last trip, exactly on the fake's clock: a node
 * starts when its body-plan dependencies have ended (two independent
 * kernels feeding a third, in both orders), after a nested loop when its
 * last trip ended; a memset has no time and neither has a node after it
 * (its start is not known). */
static void test_graph_body_nodes(void) {
  static const char *const orders[] = {"ab", "ba"};
  for (guint o = 0; o < 2; o++) {
    const char *first = orders[o][0] == 'a' ? "a" : "b", *second = orders[o][0] == 'a' ? "b" : "a";
    g_autofree char *yaml = g_strdup_printf(
        "dagrun: 1\nbuffers:\n  x: {type: f32, count: 16, init: iota}\n  y: {type: f32, count: 16}\n"
        "  go: {type: i32, count: 1}\n  go2: {type: i32, count: 1}\nnodes:\n"
        "  one: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
        "  solve:\n    op: loop\n    while: go\n    nodes:\n"
        "      %s: {op: kernel, kernel: scale_f32, args: {x: \"x[%s]\", alpha: 1.0, y: \"x[%s]\"}}\n"
        "      %s: {op: kernel, kernel: scale_f32, args: {x: \"x[%s]\", alpha: 1.0, y: \"x[%s]\"}}\n"
        "      c: {op: kernel, kernel: add_f32, args: {a: \"x[2:3]\", b: \"x[3:4]\", y: \"y[0:1]\"}}\n"
        "      reset: {op: kernel, kernel: fill_f32, args: {y: \"x[1:2]\", value: 4.0}}\n"
        "      inner:\n        op: loop\n        while: go2\n        nodes:\n"
        "          q: {op: kernel, kernel: scale_f32, args: {x: \"x[1:2]\", alpha: 0.5, y: \"x[1:2]\"}}\n"
        "          c2: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[1:2]\", tol: 1.5, cond: go2}}\n"
        "      k: {op: kernel, kernel: scale_f32, args: {x: \"x[1:2]\", alpha: 1.0, y: \"y[1:2]\"}}\n"
        "      z: {op: memset, dst: \"y[4:5]\", value: 0}\n"
        "      after_z: {op: kernel, kernel: scale_f32, args: {x: \"y[4:5]\", alpha: 1.0, y: \"y[5:6]\"}}\n"
        "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
        "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[0:1]\", tol: 0.01, cond: go}}\n",
        first, strcmp(first, "a") == 0 ? "2:3" : "3:4", strcmp(first, "a") == 0 ? "2:3" : "3:4", second,
        strcmp(second, "a") == 0 ? "2:3" : "3:4", strcmp(second, "a") == 0 ? "2:3" : "3:4");
    DrGraph *g;
    DrPlan *plan;
    DrReport *r = graph_run_check(yaml, "solve", "solve", 9, &g, &plan);
    for (guint32 it = 0; it < 2; it++) {
      const DrBodySpan *sa = body_span(r, it, "solve", "solve/a", 8);
      const DrBodySpan *sb = body_span(r, it, "solve", "solve/b", 8);
      const DrBodySpan *sc = body_span(r, it, "solve", "solve/c", 8);
      g_assert_cmpfloat(sc->start_us, ==, MAX(sa->end_us, sb->end_us));
      g_autoptr(GPtrArray) in = dr_test_trip_spans(r, it, "solve/inner");
      const DrBodySpan *sk = body_span(r, it, "solve", "solve/k", 8);
      g_assert_cmpfloat(sk->start_us, ==, ((const DrTripSpan *)g_ptr_array_index(in, in->len - 1))->end_us);
      body_span(r, it, "solve", "solve/z", G_MAXUINT64);
      body_span(r, it, "solve", "solve/after_z", G_MAXUINT64);
    }
    /* The report: per body node its last-trip time over the 2 timed
     * iterations, in the JSON run report, the text and the trace. */
    const DrLoopReport *lr = &g_array_index(r->loops, DrLoopReport, 0);
    g_assert_nonnull(lr->body);
    gboolean seen_c = FALSE, seen_q = FALSE;
    for (guint i = 0; i < lr->body->len; i++) {
      const DrBodyNodeStats *b = &g_array_index(lr->body, DrBodyNodeStats, i);
      g_assert_cmpuint(b->samples, ==, 2);
      g_assert_cmpfloat(b->us_min, >, 0);
      g_assert_cmpfloat(b->us_min, <=, b->us_median);
      g_assert_cmpfloat(b->us_median, <=, b->us_max);
      g_assert_cmpstr(b->id, !=, "solve/z");
      seen_c = seen_c || strcmp(b->id, "solve/c") == 0;
      seen_q = seen_q || (strcmp(b->id, "solve/inner/q") == 0 && strcmp(b->loop, "solve/inner") == 0);
    }
    g_assert_true(seen_c && seen_q);
    g_autoptr(GString) json = g_string_new(NULL), text = g_string_new(NULL), trace = g_string_new(NULL);
    dr_report_write_json(r, json);
    dr_report_write_text(r, text);
    dr_trace_write(r, trace);
    g_assert_nonnull(strstr(json->str, "\"body_nodes\""));
    g_assert_nonnull(strstr(json->str, "\"id\": \"solve/inner/c2\""));
    g_test_message("%s", text->str);
    g_assert_nonnull(strstr(text->str, "  solve/c: "));
    g_assert_nonnull(strstr(trace->str, "\"name\": \"solve/k\""));
    g_assert_nonnull(strstr(trace->str, "\"cat\": \"body\""));
    graph_free(r, plan, g);
  }
}

/* Kernel-guarded copies build the node that sets the condition after
 * every other node of the copy: in a last trip that is a guarded copy
 * (trip 8 of 9 with 3 copies per WHILE trip: the third), it starts when
 * the last of them ended, though it waits for none but half in the plan. */
static void test_graph_body_writer(void) {
  g_setenv("DAGRUN_WHILE_UNROLL", "3", TRUE);
  DrGraph *g;
  DrPlan *plan;
  DrReport *r = graph_run_check(
      HEAD
      "  solve:\n    op: loop\n    while: go\n    nodes:\n"
      "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
      "      side: {op: kernel, kernel: scale_f32, args: {x: \"y[0:1]\", alpha: 1.0, y: \"y[0:1]\"}}\n"
      "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: \"x[0:1]\", tol: 0.01, cond: go}}\n"
      "      side2: {op: kernel, kernel: scale_f32, args: {x: \"y[1:2]\", alpha: 1.0, y: \"y[1:2]\"}}\n",
      "solve", "solve", 9, &g, &plan);
  g_unsetenv("DAGRUN_WHILE_UNROLL");
  for (guint32 it = 0; it < 2; it++) {
    const DrBodySpan *half = body_span(r, it, "solve", "solve/half", 8);
    const DrBodySpan *side = body_span(r, it, "solve", "solve/side", 8);
    const DrBodySpan *side2 = body_span(r, it, "solve", "solve/side2", 8);
    const DrBodySpan *check = body_span(r, it, "solve", "solve/check", 8);
    g_assert_cmpfloat(check->start_us, ==, MAX(half->end_us, MAX(side->end_us, side2->end_us)));
  }
  graph_free(r, plan, g);
}

/* An if: its body is trip 0 when the condition holds, its else body no trip. */
static void test_graph_if(void) {
  for (int yes = 0; yes < 2; yes++) {
    g_autofree char *yaml = g_strdup_printf(
        HEAD
        "  set: {op: memset, dst: go, value: %d}\n"
        "  pick:\n    op: if\n    if: go\n    nodes:\n"
        "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n"
        "    else:\n      b: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 1.0, y: x}}\n",
        yes);
    DrGraph *g;
    DrPlan *plan;
    DrReport *r = graph_run_check(yaml, "pick", "pick", yes ? 1 : 0, &g, &plan);
    graph_free(r, plan, g);
  }
}

/* A fault at every call of a run of `yaml` in `mode` with `timing`: the
 * run fails cleanly (an error, nothing live) until the fault point lies in
 * the releases of its close, which ignores them (the fake then keeps the
 * object whose release it refused). Returns that point. */
static guint64 sweep(const char *yaml, DrMode mode, DrTimingMode timing) {
  g_autoptr(DrGraph) g = dr_fake_load_yaml("t.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  DrRunOptions opts = dr_fake_run_options(g, mode, timing, 1, 2);
  guint64 p = 1;
  for (;; p++) {
    g_autoptr(GError) error = NULL;
    dr_fake_reset();
    dr_fake_set_move_data(FALSE);
    dr_fake_arm(p, (p % 2) ? DR_FAULT_INVALID : DR_FAULT_ILLEGAL);
    DrReport *r = dr_run(plan, &opts, &error);
    dr_fake_set_move_data(TRUE);
    if (r != NULL) {
      const DrFakeCall *c = dr_fake_faulted_call();
      g_assert_true(c == NULL || c->release);
      dr_report_free(r);
      return p;
    }
    g_assert_nonnull(error);
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
}

/* The sweep with stamps covers every trip stamp: per timed iteration 1
 * (outer's base) + 2 x 3 (outer's trips) + 2 x 12 (inner's), 2 timed
 * iterations, beyond what the same run makes without timing. */
static void test_faults(void) {
  guint64 off = sweep(NESTED, DR_MODE_STREAMS, DR_TIMING_OFF),
          on = sweep(NESTED, DR_MODE_STREAMS, DR_TIMING_STAMPS);
  g_assert_cmpuint(on, >=, off + 2 * (1 + 2 * 3 + 2 * 12));
}

/* Graph mode: a fault at every call of a run with the ring (graph mode
 * tolerates some failures, e.g. of optional queries, so a run may still
 * succeed): each run fails cleanly or succeeds, nothing live, no misuse;
 * and a fault in each trip stamp kernel's launch fails the run. */
static void test_graph_faults(void) {
  g_autofree char *yaml = while_yaml("0.01");
  g_autoptr(DrGraph) g = dr_fake_load_yaml("t.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_STAMPS, 1, 2);
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  g_autoptr(DrReport) clean = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  guint64 n = dr_fake_points();
  guint trip_faults = 0;
  for (guint64 p = 1; p <= n; p++) {
    g_autoptr(GError) e = NULL;
    dr_fake_reset();
    dr_fake_set_move_data(FALSE);
    dr_fake_arm(p, (p % 2) ? DR_FAULT_INVALID : DR_FAULT_ILLEGAL);
    g_autoptr(DrReport) r = dr_run(plan, &opts, &e);
    dr_fake_set_move_data(TRUE);
    const DrFakeCall *hit = dr_fake_faulted_call();
    g_assert_true(r == NULL || (hit == NULL || hit->release || strcmp(hit->name, "trip_launch") != 0));
    if (r == NULL) g_assert_nonnull(e);
    if (hit && strcmp(hit->name, "trip_launch") == 0) trip_faults++;
    if (hit && hit->release) continue;
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
  /* the default unroll: an open, a close|open per later copy, a close */
  g_assert_cmpuint(trip_faults, >=, 2);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* Graph mode stamps trips only when asked (backends/cuda/trips.c). */
  g_setenv("DAGRUN_TRIP_STAMPS", "1", TRUE);
  dr_cuda_api_set(dr_fake_api_graph_nodes());
  g_test_add_func("/fault/trips/repeat", test_repeat);
  g_test_add_func("/fault/trips/while", test_while);
  g_test_add_func("/fault/trips/nested", test_nested);
  g_test_add_func("/fault/trips/bound", test_bound);
  g_test_add_func("/fault/trips/graph/while", test_graph_while);
  g_test_add_func("/fault/trips/graph/repeat", test_graph_repeat);
  g_test_add_func("/fault/trips/graph/nested", test_graph_nested);
  g_test_add_func("/fault/trips/graph/counted", test_graph_counted);
  g_test_add_func("/fault/trips/graph/body-nodes", test_graph_body_nodes);
  g_test_add_func("/fault/trips/graph/body-writer", test_graph_body_writer);
  g_test_add_func("/fault/trips/graph/if", test_graph_if);
  g_test_add_func("/fault/trips/graph/faults", test_graph_faults);
  g_test_add_func("/fault/trips/faults", test_faults);
  return g_test_run();
}
