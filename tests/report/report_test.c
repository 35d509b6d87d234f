/* report_test.c: the report writers and the profile reader.
 *
 * A small pipeline (copies, kernels, a host node, two priorities, so
 * several streams, waits and sizes) is planned and run on the host
 * backend; its report and plan go through every writer. Under a
 * comma-decimal locale (de_DE.UTF-8, which tools/setup.sh generates) the
 * bytes must equal the C locale's. The profile reader must read back what
 * the JSON writer writes: untimed nodes (null durations), the verdict's
 * nested difference object, escaped strings. */
#include <glib.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "backends/run.h"
#include "lib/load.h"
#include "scheduler/planner.h"

static const char yaml[] =
    "dagrun: 1\n"
    "name: report-test\n"
    "run: {iterations: 3, warmup: 0}\n"
    "buffers:\n"
    "  h: {type: f32, count: 3Ki, where: host, init: iota}\n"
    "  d: {type: f32, count: 3Ki}\n"
    "  e: {type: f32, count: 3Ki}\n"
    "  back: {type: f32, count: 3Ki, where: host}\n"
    "nodes:\n"
    "  up{i}:\n"
    "    foreach: {i: 0..2}\n"
    "    op: copy\n"
    "    src: \"h[{i*1Ki}:{(i+1)*1Ki}]\"\n"
    "    dst: \"d[{i*1Ki}:{(i+1)*1Ki}]\"\n"
    "  scale{i}:\n"
    "    foreach: {i: 0..2}\n"
    "    op: kernel\n"
    "    kernel: scale_f32\n"
    "    args: {x: \"d[{i*1Ki}:{(i+1)*1Ki}]\", alpha: 2.5, y: \"e[{i*1Ki}:{(i+1)*1Ki}]\"}\n"
    "  down: {op: copy, src: e, dst: back, priority: high}\n"
    "  nap: {op: host, fn: sleep, args: {us: 50}}\n";

typedef struct {
  DrGraph *graph;
  DrPlan *plan;
  DrReport *report;
} Fixture;

static void fixture_set_up(Fixture *f, gconstpointer data) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  f->graph = dr_load_string("report.yaml", yaml, sizeof yaml - 1, diags, &error);
  g_assert_no_error(error);
  f->plan = dr_plan_build(f->graph, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions o;
  dr_run_options_init(&o, f->graph);
  o.backend = DR_BACKEND_HOST;
  o.verify = TRUE;
  f->report = dr_run(f->plan, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(f->plan->waits->len, >, 0);
}

static void fixture_tear_down(Fixture *f, gconstpointer data) {
  dr_report_free(f->report);
  dr_plan_free(f->plan);
  dr_graph_free(f->graph);
}

/* Every writer's output, concatenated with a line naming each. */
static char *write_all(const Fixture *f) {
  GString *out = g_string_new(NULL);
  g_string_append(out, "== run text\n");
  dr_report_write_text(f->report, out);
  g_string_append(out, "== run json\n");
  dr_report_write_json(f->report, out);
  g_string_append(out, "== trace\n");
  dr_trace_write(f->report, out);
  g_string_append(out, "== timeline\n");
  dr_timeline_write_svg(f->report, f->plan, out);
  g_string_append(out, "== plan text\n");
  dr_plan_write_text(f->plan, out);
  g_string_append(out, "== plan json\n");
  dr_plan_write_json(f->plan, out);
  g_string_append(out, "== dot\n");
  dr_plan_write_dot(f->plan, out);
  return g_string_free(out, FALSE);
}

/* The first line where a and b differ, for the failure message. */
static char *first_difference(const char *a, const char *b) {
  g_auto(GStrv) la = g_strsplit(a, "\n", -1), lb = g_strsplit(b, "\n", -1);
  for (guint i = 0; la[i] && lb[i]; i++)
    if (strcmp(la[i], lb[i]) != 0)
      return g_strdup_printf("line %u:\n  C:     %.300s\n  de_DE: %.300s", i + 1, la[i], lb[i]);
  return g_strdup("(lengths differ)");
}

/* A program that sets a comma-decimal locale before writing gets the same
 * bytes as one in the C locale: JSON with '.' decimals, an SVG whose
 * coordinates parse, sizes in the plan in English with a '.'. */
static void test_comma_locale(Fixture *f, gconstpointer data) {
  g_autofree char *c_out = write_all(f);
  g_assert_nonnull(strstr(c_out, "\"makespan_us\": "));
  const char *want[] = {"de_DE.UTF-8", "de_DE.utf8"};
  const char *got = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(want) && got == NULL; i++) got = setlocale(LC_ALL, want[i]);
  if (got == NULL) {
    g_printerr(
        "report_test: WARNING: no de_DE.UTF-8 locale (run tools/setup.sh): the comma-decimal test is "
        "SKIPPED\n");
    g_test_skip("setlocale(LC_ALL, \"de_DE.UTF-8\") failed: run tools/setup.sh to generate it");
    return;
  }
  char buf[32];
  g_snprintf(buf, sizeof buf, "%.1f", 1.5);
  g_assert_cmpstr(buf, ==, "1,5"); /* the locale really is comma-decimal */
  g_autofree char *de_out = write_all(f);
  setlocale(LC_ALL, "C");
  if (strcmp(c_out, de_out) != 0) {
    g_autofree char *diff = first_difference(c_out, de_out);
    g_test_fail_printf("the writers' output depends on the locale: %s", diff);
  }
}

/* A node the backend did not time has "duration_us": null in the JSON
 * report; planning with that report as a profile keeps the cost model's
 * estimate for it and takes the others' durations. */
static void test_profile_null_duration(Fixture *f, gconstpointer data) {
  DrNodeReport *n0 = &g_array_index(f->report->nodes, DrNodeReport, 0);
  n0->start_us = n0->duration_us = n0->duration_min_us = n0->duration_max_us = n0->gbps = NAN;
  for (guint i = 1; i < f->report->nodes->len; i++)
    g_array_index(f->report->nodes, DrNodeReport, i).duration_us = 1000.0 * i;
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(f->report, json);
  g_assert_nonnull(strstr(json->str, "\"duration_us\": null"));
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("report-profile-XXXXXX.json", &path, &error);
  g_assert_no_error(error);
  close(fd);
  g_assert_true(g_file_set_contents(path, json->str, (gssize)json->len, &error));
  DrPlanOptions opts = {0, path};
  g_autoptr(DrPlan) plan = dr_plan_build(f->graph, &opts, &error);
  g_unlink(path);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  /* The profiled durations (1000 µs and up) dominate the critical path. */
  g_assert_cmpfloat(plan->critical_path_us, >=, 1000.0 * (f->report->nodes->len - 1));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add("/report/writers/comma-decimal-locale", Fixture, NULL, fixture_set_up, test_comma_locale,
             fixture_tear_down);
  g_test_add("/report/profile/null-duration", Fixture, NULL, fixture_set_up, test_profile_null_duration,
             fixture_tear_down);
  return g_test_run();
}
