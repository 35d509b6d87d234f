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
#include "report/json.h"
#include "report/num.h"
#include "report/report.h"
#include "scheduler/passes.h"
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
  g_autofree double *dur = dr_profile_durations(path, f->graph, &error);
  g_assert_no_error(error);
  DrPlanOptions opts = {0, dur};
  g_autoptr(DrPlan) plan = dr_plan_build(f->graph, &opts, &error);
  g_unlink(path);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  /* The profiled durations (1000 µs and up) dominate the critical path. */
  g_assert_cmpfloat(plan->critical_path_us, >=, 1000.0 * (f->report->nodes->len - 1));
}

/* ---- the JSON writer and reader ----------------------------------------- */

/* The writer's layout: ", " and ": ", one element per line where asked,
 * escapes, and null for what JSON cannot hold. */
static void test_json_writer(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  DrJsonWriter w;
  dr__json_init(&w, out, NULL);
  dr__json_begin_object(&w);
  dr__json_member_string(&w, "s", "q\"b\\n\nt\tc\x01\b\f\r\xc3\xa9/");
  dr__json_member_double(&w, "nan", NAN, 3);
  dr__json_member_double(&w, "inf", -INFINITY, 3);
  dr__json_member_double(&w, "x", 2.0 / 3.0, 3);
  dr__json_member_uint(&w, "big", G_MAXUINT64);
  dr__json_key(&w, "nested");
  dr__json_begin_object(&w);
  dr__json_key(&w, "empty");
  dr__json_begin_array(&w);
  dr__json_end_array(&w);
  dr__json_key(&w, "none");
  dr__json_begin_array_lines(&w, "  ");
  dr__json_end_array(&w);
  dr__json_end_object(&w);
  dr__json_key(&w, "lines");
  dr__json_begin_array_lines(&w, "  ");
  dr__json_bool(&w, TRUE);
  dr__json_null(&w);
  dr__json_begin_array(&w);
  dr__json_uint(&w, 1);
  dr__json_uint(&w, 2);
  dr__json_end_array(&w);
  dr__json_end_array(&w);
  dr__json_end_object(&w);
  g_assert_true(dr__json_finish(&w));
  g_assert_cmpstr(out->str, ==,
                  "{\"s\": \"q\\\"b\\\\n\\nt\\tc\\u0001\\b\\f\\r\xc3\xa9/\", \"nan\": null, \"inf\": null, "
                  "\"x\": 0.667, \"big\": 18446744073709551615, \"nested\": {\"empty\": [], \"none\": []}, "
                  "\"lines\": [\n  true,\n  null,\n  [1, 2]\n]}");
}

/* What the reader decodes: every escape, surrogate pairs, lone
 * surrogates; what it refuses: trailing commas, bad literals, numbers
 * outside the grammar, nesting past its limit (without recursing). */
static void test_json_reader(void) {
  static const char text[] =
      " {\"a\\u00e9\\ud83d\\ude00\\ud800x\\/\\\"\": [1, -2.5e3, true, false, null, {\"k\": {}}],"
      " \"n\": null, \"d\": 0.125} ";
  DrJsonReader r;
  dr__json_reader_init(&r, text, sizeof text - 1);
  g_assert_true(dr__json_enter(&r, '{'));
  guint i = 0;
  g_assert_true(dr__json_next(&r, '}', &i));
  g_autofree char *key = dr__json_read_key(&r);
  g_assert_cmpstr(key, ==, "a\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx/\"");
  g_assert_true(dr__json_skip(&r));
  g_assert_true(dr__json_next(&r, '}', &i));
  g_autofree char *n = dr__json_read_key(&r);
  double v = 0;
  g_assert_true(dr__json_read_number_or_null(&r, &v));
  g_assert_true(isnan(v));
  g_assert_true(dr__json_next(&r, '}', &i));
  g_autofree char *d = dr__json_read_key(&r);
  g_assert_true(dr__json_read_number_or_null(&r, &v));
  g_assert_cmpfloat(v, ==, 0.125);
  g_assert_false(dr__json_next(&r, '}', &i));
  g_assert_false(r.bad);
  g_assert_true(dr__json_at_end(&r));

  const char *bad[] = {"[1,]",      "[1 2]",      "[tru]",     "[01]",        "[1.]",   "[-]",
                       "[\"\\x\"]", "[\"a\nb\"]", "{\"a\" 1}", "[\"\\u12\"]", "{1: 2}", "[nul]"};
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    dr__json_reader_init(&r, bad[k], strlen(bad[k]));
    if (dr__json_skip(&r)) g_error("accepted %s", bad[k]);
    g_assert_true(r.bad);
  }
  g_autoptr(GString) deep = g_string_new(NULL);
  for (guint k = 0; k < 100000; k++) g_string_append_c(deep, '[');
  dr__json_reader_init(&r, deep->str, deep->len);
  g_assert_false(dr__json_skip(&r));
  g_assert_true(r.bad);
}

/* ---- numbers --------------------------------------------------------------- */

/* The formatter writes what the C locale's printf writes, and sizes as
 * GLib's g_format_size_full does untranslated in the C locale. */
static void test_num(void) {
  g_assert_cmpstr(setlocale(LC_ALL, NULL), ==, "C");
  g_autoptr(GRand) rand = g_rand_new_with_seed(11);
  for (guint k = 0; k < 20000; k++) {
    double v = g_rand_double_range(rand, -1e7, 1e7) * pow(10, -g_rand_int_range(rand, 0, 9));
    guint dec = (guint)g_rand_int_range(rand, 0, 10), width = (guint)g_rand_int_range(rand, 0, 14);
    g_autofree char *want = g_strdup_printf("%*.*f", (int)width, (int)dec, v);
    g_autoptr(GString) got = g_string_new(NULL);
    dr__num_fixed(got, v, dec, width);
    g_assert_cmpstr(got->str, ==, want);
    g_string_truncate(got, 0);
    dr__num_appendf(got, "<%*.*f>", (int)width, (int)dec, v);
    g_autofree char *want2 = g_strdup_printf("<%s>", want);
    g_assert_cmpstr(got->str, ==, want2);
  }
  guint64 sizes[] = {0,
                     1,
                     2,
                     1023,
                     1024,
                     1025,
                     1536,
                     1048575,
                     1048576,
                     10485760,
                     1073741824ull,
                     5497558138880ull,
                     3377699720527872ull,
                     1152921504606846976ull,
                     G_MAXUINT64};
  for (guint k = 0; k < G_N_ELEMENTS(sizes) + 2000; k++) {
    guint64 b = k < G_N_ELEMENTS(sizes) ? sizes[k] : g_rand_int(rand) >> g_rand_int_range(rand, 0, 31);
    if (k >= G_N_ELEMENTS(sizes) && k % 2) b *= g_rand_int(rand);
    g_autofree char *want = g_format_size_full(b, G_FORMAT_SIZE_IEC_UNITS);
    g_autoptr(GString) got = g_string_new(NULL);
    dr__num_size_iec(got, b);
    g_assert_cmpstr(got->str, ==, want);
  }
}

/* ---- the profile reader on everything the writer writes ------------------- */

/* A hand-made report over a graph whose ids need escaping: a failed
 * verdict (the nested "difference" object with escaped values), a node
 * that was not timed, critical path and overlap. */
static DrReport *hand_report(DrGraph *g, const char *const *ids, guint n) {
  for (guint i = 0; i < n; i++) {
    DrNode node = {.op = DR_OP_NOOP, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE, .id = ids[i]};
    dr_graph_add_node(g, &node);
  }
  DrReport *r = g_new0(DrReport, 1);
  r->name = g_strdup("hand \"made\"\n");
  r->backend = "host";
  r->mode = "streams";
  r->iterations = 1;
  r->verified = DR_VERIFIED_FAIL;
  r->diff_buffer = g_strdup("b\\uf");
  r->diff_serial = g_strdup("1.5");
  r->diff_concurrent = g_strdup("\"nan\"");
  r->n_graph_nodes = n;
  r->nodes = g_array_new(FALSE, TRUE, sizeof(DrNodeReport));
  r->critical_nodes = g_array_new(FALSE, FALSE, sizeof(DrId));
  r->stream_priorities = g_array_new(FALSE, TRUE, sizeof(DrPriority));
  r->flows = g_array_new(FALSE, TRUE, sizeof(DrReportFlow));
  for (guint i = 0; i < n; i++) {
    DrNodeReport nr = {.node = i,
                       .id = dr_graph_node(g, i)->id,
                       .op = DR_OP_NOOP,
                       .start_us = i,
                       .duration_us = 10.0 + i,
                       .duration_min_us = 10.0 + i,
                       .duration_max_us = 10.0 + i,
                       .gbps = NAN};
    if (i == 0) nr.start_us = nr.duration_us = nr.duration_min_us = nr.duration_max_us = NAN;
    g_array_append_val(r->nodes, nr);
    DrId v = i;
    g_array_append_val(r->critical_nodes, v);
  }
  r->sample_start = g_new(double, MAX(n, 1));
  r->sample_end = g_new(double, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    r->sample_start[i] = i == 0 ? NAN : (double)i;
    r->sample_end[i] = i == 0 ? NAN : 2.0 * i + 10;
  }
  r->iter_start_us = g_new0(double, 1);
  r->iter_makespan_us = g_new0(double, 1);
  r->iter_makespan_us[0] = 100;
  DrPriority p = DR_PRIORITY_NORMAL;
  g_array_append_val(r->stream_priorities, p);
  DrReportFlow fl = {n - 1, n - 2};
  if (n > 2) g_array_append_val(r->flows, fl);
  r->makespan_us = r->makespan_min_us = r->makespan_max_us = 100;
  r->critical_path_us = 50;
  r->overlap_streams = 0.5;
  r->overlap_critical = NAN;
  r->streams_used = 1;
  return r;
}

static char *write_temp(const char *text, gssize len) {
  g_autoptr(GError) error = NULL;
  char *path = NULL;
  int fd = g_file_open_tmp("report-test-XXXXXX.json", &path, &error);
  g_assert_no_error(error);
  close(fd);
  g_assert_true(g_file_set_contents(path, text, len, &error));
  g_assert_no_error(error);
  return path;
}

static void test_profile_reads_writer_output(void) {
  static const char *const ids[] = {"untimed", "q\"uo\\te",         "new\nline", "tab\there",
                                    "ctl\x01", "\xc3\xa9t\xc3\xa9", "a/b"};
  g_autoptr(DrGraph) g = dr_graph_new();
  g_autoptr(DrReport) r = hand_report(g, ids, G_N_ELEMENTS(ids));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(r, json);
  g_assert_true(g_str_has_prefix(json->str, "{\"schema\": 1, \"name\": \"hand \\\"made\\\"\\n\""));
  g_assert_nonnull(strstr(json->str, "\"difference\": {\"buffer\": \"b\\\\uf\", \"index\": 0, "));
  g_assert_nonnull(strstr(json->str,
                          "{\"id\": \"untimed\", \"op\": \"noop\", \"stream\": 0, \"start_us\": null, "
                          "\"duration_us\": null, "));
  g_assert_nonnull(strstr(json->str, "\"critical_over_makespan\": null}"));
  g_autofree char *path = write_temp(json->str, (gssize)json->len);
  double dur[G_N_ELEMENTS(ids)];
  for (guint i = 0; i < G_N_ELEMENTS(ids); i++) dur[i] = -1;
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_profile_read(path, g, dur, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(dur[0], ==, -1); /* null: left alone */
  for (guint i = 1; i < G_N_ELEMENTS(ids); i++) g_assert_cmpfloat(dur[i], ==, 10.0 + i);

  /* The trace is JSON the same reader walks. */
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(r, trace);
  DrJsonReader jr;
  dr__json_reader_init(&jr, trace->str, trace->len);
  g_assert_true(dr__json_skip(&jr));
  g_assert_true(dr__json_at_end(&jr));
  g_unlink(path);
}

/* A newer schema is refused by name; text after the object and a missing
 * "nodes" are errors that say so. */
static void test_profile_errors(void) {
  static const char *const ids[] = {"a"};
  g_autoptr(DrGraph) g = dr_graph_new();
  g_autoptr(DrReport) r = hand_report(g, ids, 1);
  double dur[1] = {0};
  struct {
    const char *text, *message;
  } cases[] = {
      {"{\"schema\": 2, \"nodes\": []}", "profile has report schema 2; this dagrun reads schema 1 and older"},
      {"{\"nodes\": []} x", "malformed JSON near byte 14"},
      {"{\"nodes\": [{\"id\": \"a\", \"duration_us\": nul}]}", "malformed JSON near byte"},
      {"{\"schema\": 1}", "profile has no \"nodes\" array"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *path = write_temp(cases[k].text, -1);
    g_autoptr(GError) error = NULL;
    g_assert_false(dr_profile_read(path, g, dur, &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_IO);
    if (strstr(error->message, cases[k].message) == NULL)
      g_error("%s: got '%s'", cases[k].text, error->message);
    g_unlink(path);
  }
  g_autoptr(GError) error = NULL;
  g_assert_false(dr_profile_read("/nonexistent/profile.json", g, dur, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, "cannot read profile: "));
}

/* ---- the plan JSON streamed to a file -------------------------------------- */

/* dr_plan_write_json_file writes the bytes dr_plan_write_json builds, for
 * a plan large enough to pass through the writer's buffer many times, and
 * a failed write is DR_ERROR_IO. */
static void test_plan_json_file(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  g->name = dr_graph_intern(g, "chains");
  for (guint i = 0; i < 20000; i++) {
    g_autofree char *id = g_strdup_printf("n%u", i);
    DrNode node = {.op = DR_OP_NOOP, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE, .id = id};
    DrId v = dr_graph_add_node(g, &node);
    if (i >= 4) dr_graph_add_edge(g, v - 4, v, DR_EDGE_AFTER, DR_NONE);
    if (i >= 5 && i % 7 == 0) dr_graph_add_edge(g, v - 5, v, DR_EDGE_AFTER, DR_NONE);
  }
  dr_graph_sort_edges(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) want = g_string_new(NULL);
  dr_plan_write_json(plan, want);
  g_assert_cmpuint(want->len, >, 4 * 64 * 1024);
  g_autofree char *path = write_temp("", 0);
  FILE *f = fopen(path, "w");
  g_assert_nonnull(f);
  g_assert_true(dr_plan_write_json_file(plan, f, path, &error));
  g_assert_no_error(error);
  fclose(f);
  g_autofree char *got = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &got, &len, NULL));
  g_assert_cmpuint(len, ==, want->len);
  g_assert_true(memcmp(got, want->str, len) == 0);
  g_unlink(path);
  FILE *full = fopen("/dev/full", "w");
  if (full == NULL) return;
  g_assert_false(dr_plan_write_json_file(plan, full, "/dev/full", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, "/dev/full: "));
  fclose(full);
}

/* summary_test.c's tests. */
void dr_test_summary_add(void);

/* public_header.c compiled: report.h and dagrun.h agree on DrVerified. */
int dr_test_report_verified_fail(void);

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_assert_cmpint(dr_test_report_verified_fail(), ==, DR_VERIFIED_FAIL);
  g_test_add("/report/writers/comma-decimal-locale", Fixture, NULL, fixture_set_up, test_comma_locale,
             fixture_tear_down);
  g_test_add("/report/profile/null-duration", Fixture, NULL, fixture_set_up, test_profile_null_duration,
             fixture_tear_down);
  g_test_add_func("/report/json/writer", test_json_writer);
  g_test_add_func("/report/json/reader", test_json_reader);
  g_test_add_func("/report/num/c-locale-printf", test_num);
  g_test_add_func("/report/profile/reads-writer-output", test_profile_reads_writer_output);
  g_test_add_func("/report/profile/errors", test_profile_errors);
  g_test_add_func("/report/plan-json/file", test_plan_json_file);
  dr_test_summary_add();
  return g_test_run();
}
