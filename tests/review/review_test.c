/* review_test.c: the review pictures. The DOT of a small pipeline (every
 * edge says why it exists, copies their direction, `label:`, the legend)
 * and of a 1000-node foreach pipeline in summary detail, both as goldens
 * and rendered by Graphviz; durations and the critical path from a run and
 * from --profile; the SVG timeline's size bound at 100k nodes (size only:
 * render times are bench/render_bench.sh's) and the trace's counter
 * tracks. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "backends/run.h"
#include "cli/cli.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/support/golden.h"

static guint count_substr(const char *s, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static DrGraph *load(const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  return g;
}

static DrPlan *plan_of(const DrGraph *g, guint cap) {
  g_autoptr(GError) error = NULL;
  DrPlanOptions opts = {cap, NULL};
  DrPlan *plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  return plan;
}

/* Made-up durations: node v takes 10 * (v + 1) µs. */
static double *fake_durations(const DrGraph *g) {
  double *dur = g_new(double, dr_graph_n_nodes(g));
  for (guint32 v = 0; v < dr_graph_n_nodes(g); v++) dur[v] = 10.0 * (v + 1);
  return dur;
}

/* The small pipeline in full detail: hazard and after labels, copy
 * directions, the label, the legend; and with durations, the critical
 * path drawn bold. */
static void test_dot_small(void) {
  g_autoptr(DrGraph) g = load("tests/review/small.yaml");
  g_autoptr(DrPlan) plan = plan_of(g, 8);
  g_autoptr(GString) dot = g_string_new(NULL);
  dr_plan_write_dot(plan, dot);
  dr_test_check_golden("tests/review/golden", "//tests/review:review", "small.dot.expected", dot->str);
  g_assert_nonnull(strstr(dot->str, "copy H2D 4.0\xc2\xa0KiB"));
  g_assert_nonnull(strstr(dot->str, "copy D2D 4.0\xc2\xa0KiB"));
  g_assert_nonnull(strstr(dot->str, "copy D2H 4.0\xc2\xa0KiB"));
  g_assert_nonnull(strstr(dot->str, "\xe2\x80\x9cupload the input\xe2\x80\x9d"));
  g_assert_nonnull(strstr(dot->str, "\"up\" -> \"dup\" [label=\"x RAW\""));
  g_assert_nonnull(strstr(dot->str, "\"dup\" -> \"zero\" [label=\"x WAR\""));
  g_assert_nonnull(strstr(dot->str, "\"dup\" -> \"sc\" [label=\"y WAW\""));
  g_assert_nonnull(strstr(dot->str, "\"sc\" -> \"note\" [label=\"after\""));
  g_assert_cmpuint(count_substr(dot->str, " -> "), ==, g->edges->len);
  g_assert_null(strstr(dot->str, "critical path"));

  g_autofree double *dur = fake_durations(g);
  DrDotOptions o = {DR_DOT_DETAIL_FULL, dur, "test"};
  g_autoptr(GString) timed = g_string_new(NULL);
  dr_plan_write_dot_opts(plan, &o, timed);
  dr_test_check_golden("tests/review/golden", "//tests/review:review", "small-timed.dot.expected",
                       timed->str);
  /* up 10, dup 20, sc 30, zero 40, down 50, note 60 µs: the longest
   * path is up, dup, sc, note (120 µs). */
  g_assert_nonnull(strstr(timed->str, "critical path 120.0 \xc2\xb5s (durations: test)"));
  g_assert_nonnull(strstr(timed->str,
                          "\"sc\" -> \"note\" [label=\"after\", style=dashed, color=red, penwidth=1.5, "
                          "tooltip=\"event wait\", color=\"#000000\", penwidth=3.5]"));
  g_assert_cmpuint(count_substr(timed->str, "penwidth=3.5"), ==, 4 + 3); /* 4 nodes, 3 edges */
}

/* A 1000-node pipeline of four foreach entries: auto detail is summary, so
 * it draws four family nodes and three merged edges. */
static void test_dot_summary(void) {
  g_autoptr(DrGraph) g = load("bench/pipelines/review1000.yaml");
  g_assert_cmpuint(dr_graph_n_nodes(g), ==, 1000);
  g_autoptr(DrPlan) plan = plan_of(g, 32);
  g_autoptr(GString) dot = g_string_new(NULL);
  dr_plan_write_dot(plan, dot);
  dr_test_check_golden("tests/review/golden", "//tests/review:review", "review1000.dot.expected", dot->str);
  g_assert_cmpuint(count_substr(dot->str, "shape=box3d"), ==, 4);
  g_assert_cmpuint(count_substr(dot->str, " -> "), ==, 3);
  g_assert_nonnull(strstr(dot->str,
                          "\"up0\" -> \"scale0\" [label=\"x RAW \xc3\x97"
                          "250\""));
  g_assert_nonnull(strstr(dot->str, "summary: 1000 nodes shown as 4"));
  g_assert_nonnull(strstr(dot->str,
                          "up0 \xe2\x80\xa6 up249\\n\xc3\x97"
                          "250 copy H2D"));
  /* Full detail draws every node and edge. */
  DrDotOptions full = {DR_DOT_DETAIL_FULL, NULL, NULL};
  g_autoptr(GString) all = g_string_new(NULL);
  dr_plan_write_dot_opts(plan, &full, all);
  g_assert_cmpuint(count_substr(all->str, " -> "), ==, g->edges->len);
  g_assert_cmpuint(count_substr(all->str, " [label=\"up"), ==, 250);
  g_assert_null(strstr(all->str, "box3d"));
}

/* Both DOTs render with Graphviz: one SVG node per drawn node, one edge per
 * DOT edge, no complaints. dot runs with a private HOME and cache so
 * fontconfig has a writable cache on a brand-new machine. */
static void test_dot_renders(void) {
  if (!g_file_test("/usr/bin/dot", G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("Graphviz dot is not installed");
    return;
  }
  g_autoptr(GError) error = NULL;
  g_autofree char *home = g_dir_make_tmp("review-dot-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *cache = g_build_filename(home, ".cache", NULL);
  g_autofree char *env_home = g_strconcat("HOME=", home, NULL);
  g_autofree char *env_cache = g_strconcat("XDG_CACHE_HOME=", cache, NULL);
  char *envp[] = {env_home, env_cache, "PATH=/usr/bin:/bin", NULL};
  const char *files[] = {"tests/review/small.yaml", "bench/pipelines/review1000.yaml"};
  const guint nodes[] = {6, 4};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autoptr(DrGraph) g = load(files[i]);
    g_autoptr(DrPlan) plan = plan_of(g, 8);
    g_autofree double *dur = fake_durations(g);
    DrDotOptions o = {DR_DOT_DETAIL_AUTO, dur, "test"};
    g_autoptr(GString) dot = g_string_new(NULL);
    dr_plan_write_dot_opts(plan, &o, dot);
    g_autofree char *path = g_build_filename(home, "plan.dot", NULL);
    g_assert_true(g_file_set_contents(path, dot->str, -1, &error));
    g_autofree char *out = NULL, *err = NULL;
    gint status = 0;
    const char *argv[] = {"/usr/bin/dot", "-Tsvg", path, NULL};
    g_assert_true(
        g_spawn_sync(home, (char **)argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, &error)) g_printerr("dot stderr:\n%s", err);
    g_assert_no_error(error);
    g_assert_null(strstr(err, "Warning:"));
    g_assert_null(strstr(err, "Error:"));
    g_assert_cmpuint(count_substr(out, "class=\"node\""), ==, nodes[i]);
    g_assert_cmpuint(count_substr(out, "class=\"edge\""), ==, count_substr(dot->str, " -> "));
    g_assert_nonnull(strstr(out, "critical path"));
    g_unlink(path);
  }
  const char *rm[] = {"/bin/rm", "-rf", home, NULL};
  g_spawn_sync(NULL, (char **)rm, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, NULL, NULL);
}

static int cli(GString *out, GString *err, const char *a1, const char *a2, const char *a3, const char *a4,
               const char *a5) {
  char *argv[] = {"dagrun", (char *)a1, (char *)a2, (char *)a3, (char *)a4, (char *)a5, NULL};
  int argc = 1;
  while (argv[argc]) argc++;
  g_string_truncate(out, 0);
  g_string_truncate(err, 0);
  return dr__cli_run(argc, argv, out, err);
}

/* --dot-detail takes auto, summary or full; --dot with --timeline runs and
 * draws the run's durations; --dot with --profile draws the profile's
 * without running; --dot-cuda-graph needs graph mode. */
static void test_cli(void) {
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  g_assert_cmpint(cli(out, err, "--dot=-", "--dot-detail=bogus", "tests/review/small.yaml", NULL, NULL), ==,
                  64);
  g_assert_nonnull(strstr(err->str, "--dot-detail must be auto, summary or full"));
  g_assert_cmpint(
      cli(out, err, "--dot=-", "--dot-detail=full", "bench/pipelines/review1000.yaml", NULL, NULL), ==, 0);
  g_assert_cmpuint(count_substr(out->str, " -> "), ==, 750);
  g_assert_cmpint(cli(out, err, "--dot=-", "--dot-cuda-graph=x.dot", "tests/review/small.yaml", NULL, NULL),
                  ==, 64);
  g_assert_nonnull(strstr(err->str, "--dot-cuda-graph needs graph mode"));

  g_autofree char *dir = g_dir_make_tmp("review-cli-XXXXXX", NULL);
  g_autofree char *dot_path = g_build_filename(dir, "run.dot", NULL);
  g_autofree char *svg_path = g_build_filename(dir, "run.svg", NULL);
  g_autofree char *json_path = g_build_filename(dir, "run.json", NULL);
  g_autofree char *dot_arg = g_strconcat("--dot=", dot_path, NULL);
  g_autofree char *svg_arg = g_strconcat("--timeline=", svg_path, NULL);
  g_assert_cmpint(
      cli(out, err, "--backend=host", "--format=json", dot_arg, svg_arg, "tests/review/small.yaml"), ==, 0);
  g_assert_true(g_file_set_contents(json_path, out->str, -1, NULL));
  g_autofree char *dot = NULL;
  g_assert_true(g_file_get_contents(dot_path, &dot, NULL, NULL));
  g_assert_nonnull(strstr(dot, "(durations: this run)"));
  g_assert_cmpuint(count_substr(dot, "penwidth=3.5"), >=, 1);
  g_unlink(dot_path);
  /* --profile: no run, durations from the report. */
  g_autofree char *prof_arg = g_strconcat("--profile=", json_path, NULL);
  g_assert_cmpint(cli(out, err, dot_arg, prof_arg, "tests/review/small.yaml", NULL, NULL), ==, 0);
  g_free(dot);
  dot = NULL;
  g_assert_true(g_file_get_contents(dot_path, &dot, NULL, NULL));
  g_autofree char *source = g_strdup_printf("(durations: profile %s)", json_path);
  g_assert_nonnull(strstr(dot, source));
  g_assert_cmpuint(out->len, ==, 0); /* nothing ran: no report */
  g_unlink(dot_path);
  g_unlink(svg_path);
  g_unlink(json_path);
  g_rmdir(dir);
}

/* A made-up report of `plan`: each stream's nodes one after another, 1 µs
 * apart and 0.8 µs long, waits as planned, the critical path stream 0's
 * nodes. */
static DrReport *fake_report(const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = dr_graph_n_nodes(g), n_streams = dr_plan_n_streams(plan);
  DrReport *r = g_new0(DrReport, 1);
  r->name = g_strdup(g->name);
  r->backend = "host";
  r->mode = "streams";
  r->iterations = r->iterations_requested = 1;
  r->n_graph_nodes = n;
  r->nodes = g_array_new(FALSE, FALSE, sizeof(DrNodeReport));
  r->sample_start = g_new(double, n);
  r->sample_end = g_new(double, n);
  r->iter_start_us = g_new0(double, 1);
  r->iter_makespan_us = g_new0(double, 1);
  r->stream_priorities = g_array_new(FALSE, FALSE, sizeof(DrPriority));
  r->flows = g_array_new(FALSE, FALSE, sizeof(DrReportFlow));
  r->critical_nodes = g_array_new(FALSE, FALSE, sizeof(DrId));
  g_autofree guint32 *next = g_new0(guint32, n_streams);
  for (guint32 s = 0; s < n_streams; s++)
    g_array_append_val(r->stream_priorities, g_array_index(plan->streams, DrStream, s).priority);
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *st = dr_plan_step(plan, i);
    double t0 = next[st->stream]++;
    r->sample_start[st->node] = t0;
    r->sample_end[st->node] = t0 + 0.8;
    r->iter_makespan_us[0] = MAX(r->iter_makespan_us[0], t0 + 0.8);
    DrNodeReport nr = {.node = st->node,
                       .id = dr_graph_node(g, st->node)->id,
                       .op = dr_graph_node(g, st->node)->op,
                       .stream = st->stream,
                       .start_us = t0,
                       .duration_us = 0.8,
                       .duration_min_us = 0.8,
                       .duration_max_us = 0.8,
                       .gbps = NAN};
    g_array_append_val(r->nodes, nr);
    if (st->stream == 0) g_array_append_val(r->critical_nodes, st->node);
    for (guint32 w = st->wait_first; w < st->wait_first + st->wait_count; w++) {
      DrReportFlow f = {dr_plan_wait(plan, w), st->node};
      g_array_append_val(r->flows, f);
    }
  }
  r->makespan_us = r->makespan_min_us = r->makespan_max_us = r->iter_makespan_us[0];
  r->critical_path_us = 0.8 * r->critical_nodes->len;
  r->streams_used = n_streams;
  return r;
}

/* 100k nodes on 8 streams make a timeline under 5 MB (it was 27 MB before
 * sub-pixel bars merged) that still names every node. */
static void test_timeline_100k(void) {
  const char *yaml =
      "dagrun: 1\nname: big\nbuffers:\n  buf: {type: f32, count: 4096}\nnodes:\n  n{l}_{i}:\n"
      "    foreach: {l: 0..7, i: 0..12499}\n    op: kernel\n    kernel: scale_f32\n"
      "    args: {x: \"buf[{l*512+(i%2)*256}:{l*512+(i%2)*256+256}]\", alpha: 1.0,\n"
      "           y: \"buf[{l*512+((i+1)%2)*256}:{l*512+((i+1)%2)*256+256}]\"}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g = dr_load_string("big.yaml", yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_graph_n_nodes(g), ==, 100000);
  g_autoptr(DrPlan) plan = plan_of(g, 8);
  g_autoptr(DrReport) r = fake_report(plan);
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(r, plan, svg);
  g_test_message("100k-node timeline: %zu bytes", svg->len);
  g_assert_cmpuint(svg->len, <, 5 * 1000 * 1000);
  /* Every node is named once: its own tooltip or its run's id list. */
  guint named = count_substr(svg->str, "), stream ");
  g_assert_cmpuint(named, <=, DR_TIMELINE_ELEMENT_BUDGET + 16);
  g_assert_cmpuint(count_substr(svg->str, "<rect "), <=, DR_TIMELINE_ELEMENT_BUDGET + 100);
  g_assert_nonnull(strstr(svg->str, "n3_12499"));
  /* Drawn arrows: the critical path's; the others' are hidden, on hover. */
  guint hidden = count_substr(svg->str, "<line class=\"w\"");
  g_assert_cmpuint(hidden, <=, DR_TIMELINE_HOVER_WAITS_MAX);
  g_assert_cmpuint(count_substr(svg->str, "marker-end") - hidden, <=, DR_TIMELINE_PATH_ARROWS_MAX);
}

/* Past DR_TIMELINE_ALL_WAITS_MAX waits, a node's bar holds its own waits'
 * arrows, hidden until hovered (CSS), within the hover budget; every
 * hidden arrow sits in a hover group. */
static void test_timeline_hover_waits(void) {
  /* Four chains (node i reads i-4's and i-5's output): a wait per node. */
  const char *yaml =
      "dagrun: 1\nname: waits\nbuffers:\n  buf: {type: f32, count: 32768}\nnodes:\n  n{i}:\n"
      "    foreach: {i: 0..999}\n    op: kernel\n    kernel: add_f32\n"
      "    args: {a: \"buf[{((i+996)%128)*256}:{((i+996)%128)*256+256}]\",\n"
      "           b: \"buf[{((i+995)%128)*256}:{((i+995)%128)*256+256}]\",\n"
      "           y: \"buf[{(i%128)*256}:{(i%128)*256+256}]\"}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g = dr_load_string("waits.yaml", yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  g_autoptr(DrPlan) plan = plan_of(g, 8);
  g_autoptr(DrReport) r = fake_report(plan);
  g_assert_cmpuint(r->flows->len, >, DR_TIMELINE_ALL_WAITS_MAX);
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(r, plan, svg);
  g_assert_nonnull(strstr(svg->str, "<style>.w{display:none}.h:hover .w{display:inline}</style>"));
  guint hidden = count_substr(svg->str, "<line class=\"w\"");
  g_assert_cmpuint(hidden, >, 0);
  g_assert_cmpuint(hidden, <=, DR_TIMELINE_HOVER_WAITS_MAX);
  g_assert_cmpuint(count_substr(svg->str, "<g class=\"h\">"), >, 0);
  for (const char *p = strstr(svg->str, "<line class=\"w\""); p; p = strstr(p + 1, "<line class=\"w\"")) {
    const char *g_open = g_strrstr_len(svg->str, p - svg->str, "<g"), *g_close = strstr(p, "</g>");
    g_assert_true(g_str_has_prefix(g_open, "<g class=\"h\">"));
    g_assert_nonnull(g_close);
  }
  g_assert_nonnull(strstr(svg->str, "hover a bar for its own"));
  /* The picture's width stays bounded whatever the node count. */
  const char *w = strstr(svg->str, " width=\"");
  g_assert_cmpfloat(g_ascii_strtod(w + 8, NULL), <=, 6000 + 200);
}

/* The trace's counter tracks: concurrency rises to the number of streams
 * running at once and falls back to 0; copy bandwidth is bytes / duration. */
static void test_trace_counters(void) {
  g_autoptr(DrGraph) g = load("tests/review/small.yaml");
  g_autoptr(DrPlan) plan = plan_of(g, 8);
  g_autoptr(DrReport) r = fake_report(plan);
  for (guint i = 0; i < r->nodes->len; i++) {
    DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    if (nr->op == DR_OP_COPY) nr->bytes = 8000; /* 8000 B / 0.8 µs = 10 GB/s */
  }
  g_autoptr(GString) trace = g_string_new(NULL);
  dr_trace_write(r, trace);
  g_assert_nonnull(strstr(trace->str, "\"name\": \"concurrency\", \"ph\": \"C\""));
  /* At t = 0 the first node of each stream starts: 3 streams. */
  g_assert_nonnull(strstr(trace->str, "\"ts\": 0.000, \"args\": {\"nodes\": 3}}"));
  g_assert_nonnull(strstr(trace->str, "\"args\": {\"nodes\": 0}}"));
  /* At t = 0 two copies start (up on stream 0, down on stream 1): 20 GB/s;
   * at 1 µs dup alone: 10 GB/s. */
  g_assert_nonnull(strstr(trace->str,
                          "\"name\": \"copy bandwidth\", \"ph\": \"C\", \"pid\": 1, \"ts\": 0.000, "
                          "\"args\": {\"GB/s\": 20.000}}"));
  g_assert_nonnull(strstr(trace->str, "\"ts\": 1.000, \"args\": {\"GB/s\": 10.000}}"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/review/dot/small", test_dot_small);
  g_test_add_func("/review/dot/summary", test_dot_summary);
  g_test_add_func("/review/dot/renders", test_dot_renders);
  g_test_add_func("/review/dot/cli", test_cli);
  g_test_add_func("/review/timeline/100k-size", test_timeline_100k);
  g_test_add_func("/review/timeline/hover-waits", test_timeline_hover_waits);
  g_test_add_func("/review/trace/counters", test_trace_counters);
  return g_test_run();
}
