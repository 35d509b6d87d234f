/* summary_test.c: the run report's summary by kernel/op (report/summary.c)
 * and the kernels' bytes (report/stats.c), on a planned pipeline whose
 * samples are written by hand, so every figure is known: instances,
 * total, share, median, standard deviation, min, max, bytes and GB/s per
 * row, every --sort order, untimed instances left out, and both writers
 * carrying the rows in the order asked. Registered by report_test.c. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"

void dr_test_summary_add(void);

static const char yaml[] =
    "dagrun: 1\n"
    "name: summary-test\n"
    "buffers:\n"
    "  h: {type: f32, count: 1Ki, where: host, init: iota}\n"
    "  x: {type: f32, count: 1Ki}\n"
    "  y: {type: f32, count: 1Ki}\n"
    "nodes:\n"
    "  up: {op: copy, src: h, dst: x}\n"
    "  s0: {op: kernel, kernel: scale_f32, args: {x: \"x[0:256]\", alpha: 2, y: \"y[0:256]\"}}\n"
    "  s1: {op: kernel, kernel: scale_f32, args: {x: \"x[256:512]\", alpha: 2, y: \"y[256:512]\"}}\n"
    "  ax: {op: kernel, kernel: axpy_f32, args: {alpha: 1, x: \"x[512:1024]\", y: \"y[512:1024]\"}}\n"
    "  nap: {op: host, fn: sleep, args: {us: 1}}\n";

typedef struct {
  DrGraph *graph;
  DrPlan *plan;
  DrReport *report;
} Fixture;

static DrId node_named(const DrGraph *g, const char *id) {
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++)
    if (strcmp(dr_graph_node(g, v)->id, id) == 0) return v;
  g_error("no node %s", id);
}

/* Durations by hand over 3 iterations (NAN: not timed in that one). */
static void set_up(Fixture *f, gconstpointer data) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  f->graph = dr_load_string("summary.yaml", yaml, sizeof yaml - 1, diags, &error);
  g_assert_no_error(error);
  f->plan = dr_plan_build(f->graph, NULL, &error);
  g_assert_no_error(error);
  f->report = dr_report_new(f->plan, 3, 0);
  f->report->backend = "host";
  f->report->mode = "streams";
  static const struct {
    const char *id;
    double dur[3];
  } d[] = {
      {"up", {4, 4, 4}},    {"s0", {1, 2, 3}},        {"s1", {4, 5, NAN}},
      {"ax", {10, 30, 20}}, {"nap", {NAN, NAN, NAN}},
  };
  guint32 n = f->report->n_graph_nodes;
  for (guint i = 0; i < G_N_ELEMENTS(d); i++) {
    DrId v = node_named(f->graph, d[i].id);
    for (guint it = 0; it < 3; it++) {
      f->report->sample_start[it * n + v] = 1;
      f->report->sample_end[it * n + v] = 1 + d[i].dur[it];
    }
  }
  for (guint it = 0; it < 3; it++) f->report->iter_makespan_us[it] = 50;
  dr_report_summarise(f->report, f->plan);
}

static void tear_down(Fixture *f, gconstpointer data) {
  dr_report_free(f->report);
  dr_plan_free(f->plan);
  dr_graph_free(f->graph);
}

static const DrOpSummary *row_named(const DrReport *r, const char *name) {
  for (guint i = 0; i < r->summary->len; i++)
    if (strcmp(g_array_index(r->summary, DrOpSummary, i).name, name) == 0)
      return &g_array_index(r->summary, DrOpSummary, i);
  g_error("no summary row %s", name);
}

static const DrNodeReport *node_report(const DrReport *r, const char *id) {
  for (guint i = 0; i < r->nodes->len; i++)
    if (strcmp(g_array_index(r->nodes, DrNodeReport, i).id, id) == 0)
      return &g_array_index(r->nodes, DrNodeReport, i);
  g_error("no node report %s", id);
}

/* A kernel's bytes are its slices read plus written (axpy's readwrite y
 * twice); a copy's its destination; a host node's none. */
static void test_kernel_bytes(Fixture *f, gconstpointer data) {
  const DrReport *r = f->report;
  g_assert_cmpuint(node_report(r, "s0")->bytes, ==, 2 * 256 * 4);
  g_assert_cmpuint(node_report(r, "ax")->bytes, ==, 3 * 512 * 4);
  g_assert_cmpuint(node_report(r, "up")->bytes, ==, 1024 * 4);
  g_assert_cmpuint(node_report(r, "nap")->bytes, ==, 0);
  /* 2048 bytes over s0's median 2 µs: 1.024 GB/s. */
  g_assert_cmpfloat_with_epsilon(node_report(r, "s0")->gbps, 1.024, 1e-9);
}

/* Rows by op and name, statistics over every timed instance. */
static void test_rows(Fixture *f, gconstpointer data) {
  const DrReport *r = f->report;
  g_assert_cmpuint(r->summary->len, ==, 4);
  const DrOpSummary *scale = row_named(r, "scale_f32");
  g_assert_cmpint(scale->op, ==, DR_OP_KERNEL);
  g_assert_cmpuint(scale->nodes, ==, 2);
  g_assert_cmpuint(scale->instances, ==, 5); /* s1's third is not timed */
  g_assert_cmpfloat(scale->total_us, ==, 15);
  g_assert_cmpfloat(scale->median_us, ==, 3);
  g_assert_cmpfloat(scale->min_us, ==, 1);
  g_assert_cmpfloat(scale->max_us, ==, 5);
  g_assert_cmpfloat_with_epsilon(scale->stddev_us, sqrt(2.5), 1e-12); /* 1..5: sample variance 2.5 */
  g_assert_cmpuint(scale->bytes, ==, 5 * 2048);
  g_assert_cmpfloat_with_epsilon(scale->gbps, 5 * 2048 / 15e3, 1e-12);
  const DrOpSummary *axpy = row_named(r, "axpy_f32");
  g_assert_cmpuint(axpy->instances, ==, 3);
  g_assert_cmpfloat(axpy->total_us, ==, 60);
  g_assert_cmpfloat(axpy->median_us, ==, 20);
  g_assert_cmpfloat_with_epsilon(axpy->stddev_us, 10, 1e-12);
  const DrOpSummary *copy = row_named(r, "copy H2D");
  g_assert_cmpint(copy->op, ==, DR_OP_COPY);
  g_assert_cmpfloat(copy->stddev_us, ==, 0);
  g_assert_cmpfloat(copy->total_us, ==, 12);
  /* Shares of 15 + 60 + 12 = 87 µs. */
  g_assert_cmpfloat_with_epsilon(axpy->percent, 100.0 * 60 / 87, 1e-9);
  g_assert_cmpfloat_with_epsilon(scale->percent + axpy->percent + copy->percent, 100, 1e-9);
  const DrOpSummary *nap = row_named(r, "sleep");
  g_assert_cmpint(nap->op, ==, DR_OP_HOST);
  g_assert_cmpuint(nap->instances, ==, 0);
  g_assert_true(isnan(nap->total_us) && isnan(nap->median_us) && isnan(nap->percent) && isnan(nap->gbps));
}

/* The row names in `sort`'s order, comma-separated. */
static char *order(const DrReport *r, DrReportSort sort) {
  g_autoptr(GPtrArray) rows = dr_report_summary(r, sort);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < rows->len; i++)
    g_string_append_printf(s, "%s%s", i ? "," : "", ((const DrOpSummary *)g_ptr_array_index(rows, i))->name);
  return g_string_free(s, FALSE);
}

static void test_sort(Fixture *f, gconstpointer data) {
  static const struct {
    const char *key, *want;
  } cases[] = {
      {"total", "axpy_f32,scale_f32,copy H2D,sleep"},  {"instances", "scale_f32,axpy_f32,copy H2D,sleep"},
      {"median", "axpy_f32,copy H2D,scale_f32,sleep"}, {"stddev", "axpy_f32,scale_f32,copy H2D,sleep"},
      {"min", "axpy_f32,copy H2D,scale_f32,sleep"},    {"max", "axpy_f32,scale_f32,copy H2D,sleep"},
      {"bytes", "axpy_f32,copy H2D,scale_f32,sleep"},  {"name", "axpy_f32,copy H2D,scale_f32,sleep"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    DrReportSort sort;
    g_assert_true(dr_report_sort_from_name(cases[i].key, &sort));
    g_assert_cmpstr(dr_report_sort_name(sort), ==, cases[i].key);
    g_autofree char *got = order(f->report, sort);
    if (strcmp(got, cases[i].want) != 0)
      g_error("--sort=%s: got %s, want %s", cases[i].key, got, cases[i].want);
  }
  DrReportSort sort;
  g_assert_false(dr_report_sort_from_name("Total", &sort));
  g_assert_false(dr_report_sort_from_name("duration", &sort));
}

/* Both writers carry the rows, in the order asked. */
static void test_writers(Fixture *f, gconstpointer data) {
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json_sorted(f->report, DR_REPORT_SORT_NAME, json);
  const char *summary = strstr(json->str, "\"summary\": [");
  g_assert_nonnull(summary);
  g_assert_nonnull(
      strstr(summary,
             "{\"name\": \"axpy_f32\", \"op\": \"kernel\", \"nodes\": 1, \"instances\": 3, "
             "\"duration_total_us\": 60.000, \"time_percent\": 68.966, \"duration_us\": 20.000, "
             "\"duration_stddev_us\": 10.000, \"duration_min_us\": 10.000, \"duration_max_us\": 30.000, "
             "\"bytes\": 18432, \"gbps\": 0.307}, {\"name\": \"copy H2D\""));
  g_assert_nonnull(strstr(summary,
                          "{\"name\": \"sleep\", \"op\": \"host\", \"nodes\": 1, \"instances\": 0, "
                          "\"duration_total_us\": null, "));
  g_assert_nonnull(strstr(json->str, "{\"id\": \"s0\", \"op\": \"kernel\""));
  g_assert_nonnull(strstr(json->str, "\"bytes\": 2048, \"gbps\": 1.024}"));
  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text_sorted(f->report, DR_REPORT_SORT_INSTANCES, text);
  const char *t = strstr(text->str, "summary by kernel/op (sorted by instances):\n");
  g_assert_nonnull(t);
  const char *a = strstr(t, "\nscale_f32 "), *b = strstr(t, "\naxpy_f32 "), *c = strstr(t, "\nsleep ");
  g_assert_true(a && b && c && a < b && b < c);
  g_assert_nonnull(
      strstr(t, "\naxpy_f32  kernel      1         3         60.0   69.0       20.0       10.0"));
}

void dr_test_summary_add(void) {
  g_test_add("/report/summary/kernel-bytes", Fixture, NULL, set_up, test_kernel_bytes, tear_down);
  g_test_add("/report/summary/rows", Fixture, NULL, set_up, test_rows, tear_down);
  g_test_add("/report/summary/sort", Fixture, NULL, set_up, test_sort, tear_down);
  g_test_add("/report/summary/writers", Fixture, NULL, set_up, test_writers, tear_down);
}
