/* devices_test.c: what the report writers show of devices and ranks: a
 * run over two devices of one process (host backend) has a device column
 * in its text report and a "device" per node in its JSON, a trace process
 * per device (plus one for a collective over both), timeline lanes
 * grouped per device, and a device per step in --plan's text and JSON; a
 * one-device run keeps its old shape (no column, pid 1 only); a rank's
 * trace names its rank and keeps its process ids apart from the others'. */
#include <glib.h>
#include <string.h>

#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/diag.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"

/* Two devices: a kernel on each (streams on 0 and 1), a peer copy to 1,
 * an allreduce over both (the communication stream of "all devices"). */
static const char *const two_yaml =
    "dagrun: 1\n"
    "name: two\n"
    "run: {devices: [0, 1], iterations: 1, warmup: 0}\n"
    "buffers:\n"
    "  a0: {type: f32, count: 64, init: iota}\n"
    "  a1: {type: f32, count: 64, init: iota, device: 1}\n"
    "  b0: {type: f32, count: 64}\n"
    "  b1: {type: f32, count: 64, device: 1}\n"
    "  p1: {type: f32, count: 64, device: 1}\n"
    "nodes:\n"
    "  k0: {op: kernel, kernel: scale_f32, args: {x: a0, alpha: 2.0, y: b0}}\n"
    "  k1: {op: kernel, kernel: scale_f32, args: {x: a1, alpha: 2.0, y: b1}}\n"
    "  peer: {op: copy, src: b0, dst: p1}\n"
    "  sum: {op: allreduce, reduce: sum, buffers: [b0, b1]}\n";

static const char *const one_yaml =
    "dagrun: 1\n"
    "name: one\n"
    "run: {iterations: 1, warmup: 0}\n"
    "buffers:\n"
    "  a: {type: f32, count: 64, init: iota}\n"
    "  b: {type: f32, count: 64}\n"
    "nodes:\n"
    "  k: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: b}}\n";

typedef struct {
  DrGraph *g;
  DrPlan *plan;
  DrReport *r;
} Run;

static Run run_yaml(const char *yaml, guint rank, guint nranks) {
  dr__load_set_ranks(rank, nranks, rank);
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(GError) error = NULL;
  Run x = {0};
  x.g = dr_load_string("t.yaml", yaml, strlen(yaml), diags, &error);
  dr__load_set_ranks(0, 1, 0);
  g_assert_no_error(error);
  x.plan = dr_plan_build(x.g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions o;
  dr_run_options_init(&o, x.g);
  o.backend = DR_BACKEND_HOST;
  x.r = dr_run(x.plan, &o, &error);
  g_assert_no_error(error);
  return x;
}

static void run_free(Run *x) {
  dr_report_free(x->r);
  dr_plan_free(x->plan);
  dr_graph_free(x->g);
}

static void test_two_devices(void) {
  Run x = run_yaml(two_yaml, 0, 1);
  g_assert_true(x.r->multi_device);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text(x.r, text);
  g_assert_nonnull(strstr(text->str, "node op     stream device   start_us"));
  g_assert_true(g_regex_match_simple("^k1 +kernel +[0-9]+ +1 ", text->str, G_REGEX_MULTILINE, 0));
  g_assert_true(g_regex_match_simple("^sum +allreduce +[0-9]+ +all ", text->str, G_REGEX_MULTILINE, 0));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(x.r, json);
  g_assert_true(g_regex_match_simple("\"id\": \"k1\", [^}]*\"device\": 1, \"bytes\"", json->str, 0, 0));
  g_assert_true(g_regex_match_simple("\"id\": \"sum\", [^}]*\"device\": -1, \"bytes\"", json->str, 0, 0));
  /* The trace: a process per device and one for "all devices"; each
   * node's event in its device's process. */
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_assert_nonnull(
      strstr(trace->str, "\"pid\": 1, \"args\": {\"name\": \"dagrun two (host, streams) device 0\"}"));
  g_assert_nonnull(
      strstr(trace->str, "\"pid\": 2, \"args\": {\"name\": \"dagrun two (host, streams) device 1\"}"));
  g_assert_nonnull(
      strstr(trace->str, "\"pid\": 3, \"args\": {\"name\": \"dagrun two (host, streams) all devices\"}"));
  g_assert_true(g_regex_match_simple("\"name\": \"k1\", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": 2,",
                                     trace->str, 0, 0));
  g_assert_true(g_regex_match_simple("\"name\": \"sum\", \"cat\": \"allreduce\", \"ph\": \"X\", \"pid\": 3,",
                                     trace->str, 0, 0));
  /* The timeline: lanes labelled with their device, device 0's first,
   * then 1's, then the collective's. */
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(x.r, x.plan, svg);
  const char *d0 = strstr(svg->str, ">dev 0: stream "), *d1 = strstr(svg->str, ">dev 1: stream "),
             *all = strstr(svg->str, ">all: stream ");
  g_assert_nonnull(d0);
  g_assert_nonnull(d1);
  g_assert_nonnull(all);
  g_assert_true(d0 < d1 && d1 < all);
  /* No lane of device 0 after device 1's first. */
  g_assert_null(strstr(d1, ">dev 0: "));
  /* --plan: each step's device, text and JSON. */
  g_autoptr(GString) pt = g_string_new(NULL);
  dr_plan_write_text(x.plan, pt);
  g_assert_true(g_regex_match_simple(" k1 \\(kernel [^)]*\\) on device 1", pt->str, 0, 0));
  g_assert_true(g_regex_match_simple(" sum \\([^)]*\\) on all devices", pt->str, 0, 0));
  g_autoptr(GString) pj = g_string_new(NULL);
  dr_plan_write_json(x.plan, pj);
  g_assert_true(g_regex_match_simple("\"id\": \"k1\", [^}]*\"device\": 1, \"waits\"", pj->str, 0, 0));
  run_free(&x);
}

static void test_one_device(void) {
  Run x = run_yaml(one_yaml, 0, 1);
  g_assert_false(x.r->multi_device);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text(x.r, text);
  g_assert_null(strstr(text->str, "device"));
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_assert_nonnull(strstr(trace->str, "\"pid\": 1, \"args\": {\"name\": \"dagrun one (host, streams)\"}"));
  g_assert_null(strstr(trace->str, "\"pid\": 2"));
  g_assert_null(strstr(trace->str, "process_sort_index"));
  g_autoptr(GString) pt = g_string_new(NULL);
  dr_plan_write_text(x.plan, pt);
  g_assert_null(strstr(pt->str, "on device"));
  run_free(&x);
}

/* Rank 2 of 4: its trace's process says so and its ids start past the
 * ranks before it (DR_MAX_DEVICES + 1 each), so four traces load side by
 * side. */
static void test_rank_trace(void) {
  Run x = run_yaml(one_yaml, 2, 4);
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(x.r, trace);
  g_autofree char *want =
      g_strdup_printf("\"pid\": %u, \"args\": {\"name\": \"dagrun one (host, streams) rank 2 of 4\"}",
                      2 * (DR_MAX_DEVICES + 1) + 1);
  g_assert_nonnull(strstr(trace->str, want));
  g_assert_null(strstr(trace->str, "\"pid\": 1,"));
  run_free(&x);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/report/devices/two", test_two_devices);
  g_test_add_func("/report/devices/one", test_one_device);
  g_test_add_func("/report/devices/rank-trace", test_rank_trace);
  return g_test_run();
}
