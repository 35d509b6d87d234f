/* trips_test.c: loop trips in the trace and the timeline (issue #17 item
 * 6), on the host backend: a repeat: 5 loop, a while that stops after a
 * data-dependent number of trips and a nested loop each give exactly their
 * trips as spans, in trip order, not overlapping, inside the loop node's
 * span (a nested loop's inside its outer trip); the bound keeps the first
 * and last DR_TRIP_SPANS_KEEP trips and counts the rest; untimed runs log
 * none; the trace has a "LOOP trip" event per span and the timeline shades
 * every other trip. The trip log's own bookkeeping (skip) is tested
 * directly, as the CUDA backend's device ring uses it. */
#include <glib.h>
#include <string.h>

#include "backends/run.h"
#include "ir/diag.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/support/trip_spans.h"

typedef struct {
  DrGraph *g;
  DrPlan *plan;
  DrReport *r;
} Run;

static Run run_yaml(const char *yaml, guint32 iterations, DrTimingMode timing) {
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(GError) error = NULL;
  Run x = {0};
  x.g = dr_load_string("t.yaml", yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  x.plan = dr_plan_build(x.g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions o;
  dr_run_options_init(&o, x.g);
  o.backend = DR_BACKEND_HOST;
  o.iterations = iterations;
  o.warmup = 1;
  o.node_timing = timing;
  x.r = dr_run(x.plan, &o, &error);
  g_assert_no_error(error);
  return x;
}

static void run_free(Run *x) {
  dr_report_free(x->r);
  dr_plan_free(x->plan);
  dr_graph_free(x->g);
}

#define HEAD                                                                \
  "dagrun: 1\nname: t\nbuffers:\n  x: {type: f32, count: 16, init: iota}\n" \
  "  y: {type: f32, count: 16}\n  go: {type: i32, count: 1}\nnodes:\n"      \
  "  pre: {op: kernel, kernel: fill_f32, args: {y: y, value: 1.0}}\n"

/* Spans `s` are trips `first`.. in order, one after another, within
 * [lo, hi], all under top-level node `node` at `depth`. */
static void assert_serial(GPtrArray *s, guint64 first, double lo, double hi, DrId node, guint32 depth) {
  double prev_end = lo;
  for (guint k = 0; k < s->len; k++) {
    const DrTripSpan *sp = g_ptr_array_index(s, k);
    g_assert_cmpuint(sp->trip, ==, first + k);
    g_assert_cmpuint(sp->node, ==, node);
    g_assert_cmpuint(sp->depth, ==, depth);
    g_assert_cmpfloat(sp->start_us, >=, prev_end);
    g_assert_cmpfloat(sp->end_us, >=, sp->start_us);
    prev_end = sp->end_us;
  }
  g_assert_cmpfloat(prev_end, <=, hi);
}

static DrId node_id(const DrGraph *g, const char *id) {
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++)
    if (strcmp(dr_graph_node(g, v)->id, id) == 0) return v;
  g_assert_not_reached();
}

static guint count_substr(const char *hay, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void test_repeat(void) {
  Run x = run_yaml(HEAD
                   "  solve:\n    op: loop\n    repeat: 5\n    nodes:\n"
                   "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n"
                   "      b: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 1.0, y: x}}\n",
                   3, DR_TIMING_AUTO);
  DrId solve = node_id(x.g, "solve");
  guint32 n = x.r->n_graph_nodes;
  g_assert_nonnull(x.r->trip_spans);
  g_assert_cmpuint(x.r->trip_spans->len, ==, 15);
  for (guint32 it = 0; it < 3; it++) {
    g_autoptr(GPtrArray) s = dr_test_trip_spans(x.r, it, "solve");
    g_assert_cmpuint(s->len, ==, 5);
    assert_serial(s, 0, x.r->sample_start[(gsize)it * n + solve], x.r->sample_end[(gsize)it * n + solve],
                  solve, 0);
    const DrTripCount *c = dr_test_trip_count(x.r, it, "solve");
    g_assert_nonnull(c);
    g_assert_cmpuint(c->trips, ==, 5);
    g_assert_cmpuint(c->dropped, ==, 0);
  }
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_assert_cmpuint(count_substr(trace->str, "\"name\": \"solve trip\", \"cat\": \"trip\", \"ph\": \"X\""), ==,
                   15);
  g_assert_nonnull(strstr(trace->str, "\"args\": {\"iteration\": 2, \"loop\": \"solve\", \"trip\": 4}"));
  g_assert_nonnull(strstr(trace->str, "\"trips\": {\"solve\": 5}"));
  g_assert_null(strstr(trace->str, "trips_without_span"));
  /* The JSON run report: the trips' durations over their 15 spans. */
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(x.r, json);
  g_assert_true(
      g_regex_match_simple("\"id\": \"solve\", [^}]*\"trip_spans\": 15, \"trip_us_median\": [0-9.]+, "
                           "\"trip_us_min\": [0-9.]+, \"trip_us_max\": [0-9.]+}",
                           json->str, 0, 0));
  const DrLoopReport *lr = &g_array_index(x.r->loops, DrLoopReport, 0);
  g_assert_cmpfloat(lr->trip_us_min, <=, lr->trip_us_median);
  g_assert_cmpfloat(lr->trip_us_median, <=, lr->trip_us_max);
  for (guint i = 0; i < x.r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(x.r->nodes, DrNodeReport, i);
    if (nr->node == solve) g_assert_cmpfloat(lr->trip_us_max, <=, nr->duration_max_us);
  }
  /* The timeline: trips 1 and 3 shaded in the loop's bar. */
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(x.r, x.plan, svg);
  g_assert_cmpuint(count_substr(svg->str, "class=\"trip\""), ==, 2);
  g_assert_nonnull(strstr(svg->str, "; 5 trips in this iteration</title>"));
  run_free(&x);
}

/* x[0] = 1 halves each trip until it is at most tol: 7 trips for 0.01. */
static void test_while(void) {
  Run x = run_yaml(HEAD
                   "  one: {op: kernel, kernel: fill_f32, args: {y: x, value: 1.0}}\n"
                   "  solve:\n    op: loop\n    while: go\n    nodes:\n"
                   "      halve: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 0.5, y: x}}\n"
                   "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n",
                   2, DR_TIMING_AUTO);
  DrId solve = node_id(x.g, "solve");
  guint32 n = x.r->n_graph_nodes;
  for (guint32 it = 0; it < 2; it++) {
    g_autoptr(GPtrArray) s = dr_test_trip_spans(x.r, it, "solve");
    g_assert_cmpuint(s->len, ==, 7);
    assert_serial(s, 0, x.r->sample_start[(gsize)it * n + solve], x.r->sample_end[(gsize)it * n + solve],
                  solve, 0);
    g_assert_cmpuint(dr_test_trip_count(x.r, it, "solve")->trips, ==, 7);
  }
  run_free(&x);
}

/* A repeat: 4 inside a repeat: 3: 3 outer trips, each holding 4 inner
 * ones (trips 0..3 of each run), one level deeper. */
static void test_nested(void) {
  Run x = run_yaml(HEAD
                   "  outer:\n    op: loop\n    repeat: 3\n    nodes:\n"
                   "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n"
                   "      inner:\n        op: loop\n        repeat: 4\n        nodes:\n"
                   "          b: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 1.0, y: x}}\n",
                   1, DR_TIMING_AUTO);
  DrId outer = node_id(x.g, "outer");
  g_autoptr(GPtrArray) o = dr_test_trip_spans(x.r, 0, "outer");
  g_autoptr(GPtrArray) in = dr_test_trip_spans(x.r, 0, "outer/inner");
  g_assert_cmpuint(o->len, ==, 3);
  g_assert_cmpuint(in->len, ==, 12);
  assert_serial(o, 0, x.r->sample_start[outer], x.r->sample_end[outer], outer, 0);
  for (guint k = 0; k < 3; k++) {
    const DrTripSpan *os = g_ptr_array_index(o, k);
    g_autoptr(GPtrArray) run = g_ptr_array_new();
    for (guint j = 0; j < 4; j++) g_ptr_array_add(run, g_ptr_array_index(in, 4 * k + j));
    assert_serial(run, 0, os->start_us, os->end_us, outer, 1);
  }
  g_assert_cmpuint(dr_test_trip_count(x.r, 0, "outer/inner")->trips, ==, 12);
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_assert_cmpuint(count_substr(trace->str, "\"name\": \"outer/inner trip\""), ==, 12);
  g_assert_nonnull(strstr(trace->str, "\"trips\": {\"outer\": 3, \"outer/inner\": 12}"));
  run_free(&x);
}

/* 100 trips: the first and last DR_TRIP_SPANS_KEEP have spans, the 36
 * between are counted. */
static void test_bound(void) {
  Run x = run_yaml(HEAD
                   "  solve:\n    op: loop\n    repeat: 100\n    nodes:\n"
                   "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n",
                   1, DR_TIMING_AUTO);
  DrId solve = node_id(x.g, "solve");
  g_autoptr(GPtrArray) s = dr_test_trip_spans(x.r, 0, "solve");
  g_assert_cmpuint(s->len, ==, 2 * DR_TRIP_SPANS_KEEP);
  g_autoptr(GPtrArray) head = g_ptr_array_new(), tail = g_ptr_array_new();
  for (guint k = 0; k < s->len; k++)
    g_ptr_array_add(k < DR_TRIP_SPANS_KEEP ? head : tail, g_ptr_array_index(s, k));
  assert_serial(head, 0, x.r->sample_start[solve], x.r->sample_end[solve], solve, 0);
  assert_serial(tail, 100 - DR_TRIP_SPANS_KEEP,
                ((const DrTripSpan *)g_ptr_array_index(head, head->len - 1))->end_us, x.r->sample_end[solve],
                solve, 0);
  g_assert_cmpuint(dr_test_trip_count(x.r, 0, "solve")->dropped, ==, 100 - 2 * DR_TRIP_SPANS_KEEP);
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_assert_nonnull(strstr(trace->str, "\"trips_without_span\": {\"solve\": 36}"));
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(x.r, x.plan, svg);
  g_assert_nonnull(strstr(svg->str, "; 100 trips in this iteration, 36 of them not drawn</title>"));
  run_free(&x);
}

/* --timing=off: no node times, so no trip spans either. */
static void test_untimed(void) {
  Run x = run_yaml(HEAD
                   "  solve:\n    op: loop\n    repeat: 5\n    nodes:\n"
                   "      a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 1.0, y: y}}\n",
                   1, DR_TIMING_OFF);
  g_assert_null(x.r->trip_spans);
  run_free(&x);
}

/* The log itself: skipped trips take their places in the sequence, so a
 * ring slot that held an earlier trip is not mistaken for a later one. */
static void test_log_skip(void) {
  g_autoptr(DrTripLog) log = dr_trip_log_new();
  static const char loop[] = "l";
  const guint K = DR_TRIP_SPANS_KEEP;
  /* 3K trips: K first, K + 5 in the ring, then 5 skipped, K - 5 more. */
  guint64 t = 0;
  for (; t < 2 * K + 5; t++) dr_trip_log_add(log, loop, 7, 0, t, (double)t, t + 0.5);
  dr_trip_log_skip(log, loop, 7, 0, 5);
  t += 5;
  for (; t < 3 * K; t++) dr_trip_log_add(log, loop, 7, 0, t, (double)t, t + 0.5);
  g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(DrTripSpan));
  g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(DrTripCount));
  dr_trip_log_take(log, 4, spans, counts);
  /* The first K, then of the last K (trips 2K..3K-1) the K - 5 that have
   * times: 2K+5..2K+9 were skipped, and their ring slots still hold trips
   * K+5..K+9, which must not come back. */
  g_assert_cmpuint(counts->len, ==, 1);
  const DrTripCount *c = &g_array_index(counts, DrTripCount, 0);
  g_assert_cmpuint(c->iteration, ==, 4);
  g_assert_cmpuint(c->trips, ==, 3 * K);
  g_assert_cmpuint(spans->len, ==, 2 * K - 5);
  g_assert_cmpuint(c->dropped, ==, 3 * K - spans->len);
  for (guint k = 0; k < K; k++) g_assert_cmpuint(g_array_index(spans, DrTripSpan, k).trip, ==, k);
  for (guint k = K; k < spans->len; k++) {
    guint64 trip = g_array_index(spans, DrTripSpan, k).trip;
    g_assert_true(trip >= 2 * K && !(trip >= 2 * K + 5 && trip < 2 * K + 10));
    g_assert_cmpfloat(g_array_index(spans, DrTripSpan, k).start_us, ==, (double)trip);
  }
  /* Taken: the log is empty for the next iteration. */
  g_array_set_size(counts, 0);
  dr_trip_log_take(log, 5, spans, counts);
  g_assert_cmpuint(counts->len, ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/report/trips/repeat", test_repeat);
  g_test_add_func("/report/trips/while", test_while);
  g_test_add_func("/report/trips/nested", test_nested);
  g_test_add_func("/report/trips/bound", test_bound);
  g_test_add_func("/report/trips/untimed", test_untimed);
  g_test_add_func("/report/trips/log-skip", test_log_skip);
  return g_test_run();
}
