/* cli_test.c: the dagrun command line (cli/cli.c, run in-process through
 * dr__cli_run) against the public library it is a client of: `--plan`
 * prints byte for byte what dr_pipeline_plan and dr_stream_plan_write_text
 * give for every example under the same settings; the library's stream cap
 * rule; flag ranges (exit 64, the ranges of the file's `run:` keys); flags
 * that do nothing for the chosen backend say so; output files are checked
 * before anything runs and a failure to write one is exit 73 naming the
 * user's path, before or after the run; --dot with run flags also runs. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "cli/cli.h"
#include "include/dagrun/dagrun.h"

/* Runs the command line with the NULL-terminated `args`; returns its exit
 * code, with stdout and stderr in out and err (emptied first). */
static int cli_v(GString *out, GString *err, const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, "dagrun");
  for (guint i = 0; args[i] != NULL; i++) g_ptr_array_add(argv, (gpointer)args[i]);
  g_ptr_array_add(argv, NULL);
  g_string_truncate(out, 0);
  g_string_truncate(err, 0);
  int rc = dr__cli_run((int)argv->len - 1, (char **)argv->pdata, out, err);
  g_ptr_array_unref(argv);
  return rc;
}

#define CLI(out, err, ...) cli_v(out, err, (const char *const[]){__VA_ARGS__, NULL})

/* Every example pipeline: graphs/, graphs/gpu/ and the golden good_ cases. */
static GPtrArray *examples(void) {
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  const char *dirs[] = {"graphs", "graphs/gpu", "tests/golden"};
  for (guint d = 0; d < G_N_ELEMENTS(dirs); d++) {
    g_autoptr(GDir) dir = g_dir_open(dirs[d], 0, NULL);
    if (dir == NULL) continue;
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
      if (!g_str_has_suffix(name, ".yaml")) continue;
      if (d == 2 && !g_str_has_prefix(name, "good_")) continue;
      g_ptr_array_add(files, g_build_filename(dirs[d], name, NULL));
    }
  }
  return files;
}

/* The library's plan of `path` with `max_streams` and `mode` (-1: the
 * pipeline's), as text or JSON; NULL (error set) when it does not plan. */
static char *library_plan(const char *path, guint max_streams, int mode, gboolean json, GError **error) {
  g_autoptr(DrPipeline) p = dr_pipeline_load_file(path, error);
  if (p == NULL) return NULL;
  DrPlanSettings s = {
      .max_streams = max_streams, .mode_set = mode >= 0, .mode = mode >= 0 ? (DrMode)mode : 0};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &s, error);
  if (plan == NULL) return NULL;
  GString *out = g_string_new(NULL);
  if (json) {
    dr_stream_plan_write_json(plan, out);
    g_string_append_c(out, '\n');
  } else {
    dr_stream_plan_write_text(plan, out);
  }
  return g_string_free(out, FALSE);
}

/* `dagrun --plan` and dr_pipeline_plan agree byte for byte on every
 * example, in both formats, with the default cap, an explicit one, graph
 * and streams mode, and CUDA_DEVICE_MAX_CONNECTIONS set or not. */
static void test_plan_same_as_library(void) {
  g_autoptr(GPtrArray) files = examples();
  g_assert_cmpuint(files->len, >=, 20);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  const char *envs[] = {NULL, "3"};
  guint compared = 0;
  for (guint e = 0; e < G_N_ELEMENTS(envs); e++) {
    if (envs[e])
      g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", envs[e], TRUE);
    else
      g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    for (guint i = 0; i < files->len; i++) {
      const char *path = g_ptr_array_index(files, i);
      struct {
        const char *flag;
        guint max_streams;
        int mode;
      } cases[] = {
          {"--plan", 0, -1}, {"--max-streams=2", 2, -1}, {"--mode=graph", 0, 1}, {"--mode=streams", 0, 0}};
      for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        for (int json = 0; json <= 1; json++) {
          g_autoptr(GError) error = NULL;
          g_autofree char *want = library_plan(path, cases[c].max_streams, cases[c].mode, json, &error);
          int rc = CLI(out, err, "--plan", cases[c].flag, json ? "--format=json" : "--format=text", path);
          if (want == NULL) {
            g_assert_cmpint(rc, ==, dr_error_exit_code(error));
            continue;
          }
          if (rc != 0) g_error("%s %s: exit %d: %s", path, cases[c].flag, rc, err->str);
          g_assert_cmpstr(out->str, ==, want);
          compared++;
        }
      }
    }
  }
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  g_assert_cmpuint(compared, >=, 2 * 4 * 2 * 20);
}

/* mode: auto (the default): a while: loop is a CUDA conditional node, so
 * graph; a copy of pageable host memory is not capturable, so streams,
 * naming the copy; the run report says why too, and the host backend's
 * note when it ran there; run.mode forces one. */
static void test_mode_auto(void) {
  static const char loop_yaml[] =
      "dagrun: 1\nbuffers: {b: {type: f32, count: 32}, go: {type: i32, count: 1}}\n"
      "nodes:\n  l:\n    op: loop\n    while: go\n    nodes:\n"
      "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: b, tol: 1.0, cond: go}}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) lp = dr_pipeline_load_string("loop.yaml", loop_yaml, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) lplan = dr_pipeline_plan(lp, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_stream_plan_mode(lplan), ==, DR_MODE_GRAPH);
  g_assert_cmpstr(dr_stream_plan_mode_reason(lplan), ==, "auto: 10 iterations and every node capturable");

  static const char pageable_yaml[] =
      "dagrun: 1\nbuffers: {h: {type: f32, count: 32, where: pageable}, d: {type: f32, count: 32}}\n"
      "nodes:\n  up: {op: copy, src: h, dst: d}\n";
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("pageable.yaml", pageable_yaml, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_stream_plan_mode(plan), ==, DR_MODE_STREAMS);
  g_assert_cmpstr(dr_stream_plan_mode_reason(plan), ==,
                  "auto: node 'up' copies pageable host memory (graph mode does not capture it)");
  g_autoptr(GString) text = g_string_new(NULL);
  dr_stream_plan_write_text(plan, text);
  g_assert_nonnull(strstr(text->str, "\nmode streams (auto: node 'up' copies pageable"));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_stream_plan_write_json(plan, json);
  g_assert_nonnull(strstr(json->str, "\"mode\": \"streams\", \"mode_reason\": \"auto: node 'up'"));

  static const char plain[] =
      "dagrun: 1\nbuffers: {a: {type: f32, count: 64}}\nnodes:\n  x: {op: memset, dst: a, value: 1}\n";
  g_autoptr(DrPipeline) q = dr_pipeline_load_string("plain.yaml", plain, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) qp = dr_pipeline_plan(q, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_stream_plan_mode(qp), ==, DR_MODE_GRAPH);
  DrRunSettings rs;
  dr_run_settings_init(&rs, q);
  g_assert_cmpint(rs.mode, ==, DR_MODE_AUTO);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 2;
  rs.warmup = 0;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(qp, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_run_report_mode(r), ==, "streams");
  g_autoptr(GString) rt = g_string_new(NULL);
  dr_run_report_write_text(r, rt);
  g_assert_nonnull(
      strstr(rt->str,
             "mode streams (auto: the host backend has no graph mode; its threads run the plan's streams), 2 "
             "iterations"));
  g_autoptr(GString) rj = g_string_new(NULL);
  dr_run_report_write_json(r, rj);
  g_assert_nonnull(strstr(rj->str, "\"mode_reason\": \"auto: the host backend has no graph mode"));

  static const char forced[] =
      "dagrun: 1\nrun: {mode: streams}\nbuffers: {a: {type: f32, count: 64}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n";
  g_autoptr(DrPipeline) f = dr_pipeline_load_string("forced.yaml", forced, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) fp = dr_pipeline_plan(f, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_stream_plan_mode(fp), ==, DR_MODE_STREAMS);
  g_assert_cmpstr(dr_stream_plan_mode_reason(fp), ==, "set by run.mode");
}

/* A profile (a JSON run report) with these node durations and makespan,
 * written under TEST_TMPDIR; returns its path. */
static char *write_profile(const char *name, const char *mode, double makespan, const char *const *ids,
                           const double *us, guint n) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  char *path = g_build_filename(tmp ? tmp : g_get_tmp_dir(), name, NULL);
  g_autoptr(GString) j = g_string_new(NULL);
  g_string_append_printf(j, "{\"schema\": 1, \"mode\": \"%s\", \"makespan_us\": %.3f, \"nodes\": [", mode,
                         makespan);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(j, "%s{\"id\": \"%s\", \"duration_us\": %.3f}", i ? ", " : "", ids[i], us[i]);
  g_string_append(j, "]}\n");
  g_assert_true(g_file_set_contents(path, j->str, -1, NULL));
  return path;
}

/* #18.4: after a profile, --plan predicts the makespan by list scheduling
 * over the plan's streams, exactly: three independent memsets of 10, 20
 * and 30 us on one stream (max_streams 1) issued eagerly at 4 us a launch
 * end at 4 + 60 = 64 us (critical path 30: the cap costs 30, launches 4);
 * in graph mode each node adds 0.6 us: 61.8 (60 from a graph-mode profile,
 * whose durations hold it). Two device-to-host copies of
 * 5 us on two streams share one copy engine: launched at 4 and 8 us, the
 * second starts when the first ends (9) and ends at 14, 1 us later than
 * without the engine (transfers 1.0). */
static void test_prediction(void) {
  static const char yaml[] =
      "dagrun: 1\nbuffers: {a: {type: f32, count: 64}, b: {type: f32, count: 64}, c: {type: f32, count: "
      "64}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n  y: {op: memset, dst: b, value: 2}\n"
      "  z: {op: memset, dst: c, value: 3}\n";
  const char *ids[] = {"x", "y", "z"};
  const double us[] = {10, 20, 30};
  g_autofree char *prof = write_profile("predict.json", "streams", 70, ids, us, 3);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("predict.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  DrPlanSettings s = {.max_streams = 1, .profile_path = prof, .mode_set = TRUE, .mode = DR_MODE_STREAMS};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &s, &error);
  g_assert_no_error(error);
  double predicted = 0, measured = 0;
  g_assert_true(dr_stream_plan_predicted(plan, &predicted, &measured));
  g_assert_cmpfloat_with_epsilon(predicted, 64.0, 1e-9);
  g_assert_cmpfloat_with_epsilon(measured, 70.0, 1e-9);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_stream_plan_write_text(plan, text);
  g_assert_nonnull(
      strstr(text->str,
             "predicted makespan 64.0 us (streams mode; the profile measured 70.0 us in streams mode: "
             "-8.6%)\n"));
  g_autoptr(GString) ex = g_string_new(NULL);
  dr_stream_plan_write_explain(plan, ex);
  g_assert_cmpstr(ex->str, ==,
                  "explain: measured makespan 70.0 us, critical path 30.0 us, gap 40.0 us\n"
                  "  false serialization from the stream cap          30.0 us\n"
                  "  launch overhead                                   4.0 us\n"
                  "  waits (host calls and cross-stream edges)         0.0 us\n"
                  "  transfers (one copy engine per direction)         0.0 us\n"
                  "  not explained (measured - predicted)              6.0 us\n");
  g_autoptr(GString) json = g_string_new(NULL);
  dr_stream_plan_write_json(plan, json);
  g_assert_nonnull(strstr(json->str,
                          "\"prediction\": {\"mode\": \"streams\", \"predicted_us\": 64.000, "
                          "\"measured_us\": 70.000, \"cap_us\": 30.000, \"launch_us\": 4.000"));

  DrPlanSettings gs = {.max_streams = 1, .profile_path = prof, .mode_set = TRUE, .mode = DR_MODE_GRAPH};
  g_autoptr(DrStreamPlan) gp = dr_pipeline_plan(p, &gs, &error);
  g_assert_no_error(error);
  g_assert_true(dr_stream_plan_predicted(gp, &predicted, NULL));
  g_assert_cmpfloat_with_epsilon(predicted, 61.8, 1e-9);
  /* A graph-mode profile's durations hold each node's cost already. */
  g_autofree char *gprof = write_profile("predict_graph.json", "graph", 61, ids, us, 3);
  DrPlanSettings gg = {.max_streams = 1, .profile_path = gprof, .mode_set = TRUE, .mode = DR_MODE_GRAPH};
  g_autoptr(DrStreamPlan) ggp = dr_pipeline_plan(p, &gg, &error);
  g_assert_no_error(error);
  g_assert_true(dr_stream_plan_predicted(ggp, &predicted, NULL));
  g_assert_cmpfloat_with_epsilon(predicted, 60.0, 1e-9);
  g_remove(gprof);

  /* Two issue threads (run.issue_threads: 2), one per stream: the two
   * 10 us memsets launch together at 4 us and end at 14, where one thread
   * launches the second at 8 (ends at 18). */
  static const char two[] =
      "dagrun: 1\nrun: {issue_threads: %u}\nbuffers: {a: {type: f32, count: 64}, b: {type: f32, count: 64}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n  y: {op: memset, dst: b, value: 2}\n";
  const char *tids[] = {"x", "y"};
  const double tus[] = {10, 10};
  g_autofree char *tprof = write_profile("threads.json", "streams", 14, tids, tus, 2);
  for (guint t = 1; t <= 2; t++) {
    g_autofree char *y = g_strdup_printf(two, t);
    g_autoptr(DrPipeline) tp = dr_pipeline_load_string("threads.yaml", y, -1, &error);
    g_assert_no_error(error);
    DrPlanSettings ts = {.max_streams = 2, .profile_path = tprof, .mode_set = TRUE, .mode = DR_MODE_STREAMS};
    g_autoptr(DrStreamPlan) tsp = dr_pipeline_plan(tp, &ts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_stream_plan_n_streams(tsp), ==, 2);
    g_assert_true(dr_stream_plan_predicted(tsp, &predicted, NULL));
    g_assert_cmpfloat_with_epsilon(predicted, t == 1 ? 18.0 : 14.0, 1e-9);
  }
  g_remove(tprof);

  static const char copies[] =
      "dagrun: 1\nbuffers:\n  a: {type: f32, count: 64, init: zeros}\n  b: {type: f32, count: 64, init: "
      "zeros}\n"
      "  ha: {type: f32, count: 64, where: host}\n  hb: {type: f32, count: 64, where: host}\n"
      "nodes:\n  da: {op: copy, src: a, dst: ha}\n  db: {op: copy, src: b, dst: hb}\n";
  const char *cids[] = {"da", "db"};
  const double cus[] = {5, 5};
  g_autofree char *cprof = write_profile("copies.json", "streams", 14, cids, cus, 2);
  g_autoptr(DrPipeline) c = dr_pipeline_load_string("copies.yaml", copies, -1, &error);
  g_assert_no_error(error);
  DrPlanSettings cs = {.max_streams = 2, .profile_path = cprof, .mode_set = TRUE, .mode = DR_MODE_STREAMS};
  g_autoptr(DrStreamPlan) cp = dr_pipeline_plan(c, &cs, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_stream_plan_n_streams(cp), ==, 2);
  g_assert_true(dr_stream_plan_predicted(cp, &predicted, NULL));
  g_assert_cmpfloat_with_epsilon(predicted, 14.0, 1e-9);
  g_autoptr(GString) cex = g_string_new(NULL);
  dr_stream_plan_write_explain(cp, cex);
  g_assert_nonnull(strstr(cex->str, "  transfers (one copy engine per direction)         1.0 us\n"));
  g_assert_nonnull(strstr(cex->str, "  launch overhead                                   8.0 us\n"));
  /* Without a profile there is no prediction. */
  g_autoptr(DrStreamPlan) none = dr_pipeline_plan(c, NULL, &error);
  g_assert_false(dr_stream_plan_predicted(none, NULL, NULL));
  g_remove(prof);
  g_remove(cprof);
}

/* The library's cap rule (DrPlanSettings): the caller's, the pipeline's,
 * none in graph mode, CUDA_DEVICE_MAX_CONNECTIONS, else 32 here (no CUDA
 * context: this process never touches the driver). Mode auto (the
 * default) is streams for one iteration and graph for the pipeline's 10;
 * on the host backend always streams. */
static void test_cap_rule(void) {
  static const char yaml[] =
      "dagrun: 1\nbuffers: {a: {type: f32, count: 64}, b: {type: f32, count: 64}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n  y: {op: memset, dst: b, value: 2}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("cap.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  struct {
    const char *env;
    DrPlanSettings s;
    guint cap;
    const char *note;
    DrMode mode;
    const char *reason;
  } cases[] = {
      {NULL,
       {.iterations = 1},
       32,
       "default: dagrun asks the driver for 32 queues",
       DR_MODE_STREAMS,
       "auto: 1 iteration, nothing to replay"},
      {"3", {.iterations = 1}, 3, "from CUDA_DEVICE_MAX_CONNECTIONS", DR_MODE_STREAMS, NULL},
      {"99",
       {.iterations = 1},
       8,
       "CUDA_DEVICE_MAX_CONNECTIONS is not 1..32: the driver's default queues",
       DR_MODE_STREAMS,
       NULL},
      {"3", {.max_streams = 5}, 5, "set by max_streams", DR_MODE_GRAPH, NULL},
      {NULL,
       {.mode_set = TRUE, .mode = DR_MODE_GRAPH},
       0,
       "graph mode has no cap",
       DR_MODE_GRAPH,
       "set by --mode"},
      {NULL,
       {.max_streams = 2, .mode_set = TRUE, .mode = DR_MODE_GRAPH},
       2,
       "set by max_streams",
       DR_MODE_GRAPH,
       NULL},
      {NULL, {0}, 0, "graph mode has no cap", DR_MODE_GRAPH, "auto: 10 iterations and every node capturable"},
      {NULL,
       {.backend = DR_BACKEND_HOST},
       32,
       "default: dagrun asks the driver for 32 queues",
       DR_MODE_STREAMS,
       "auto: the host backend has no graph mode; its threads run the plan's streams"},
      {NULL,
       {.mode_set = TRUE, .mode = DR_MODE_STREAMS},
       32,
       "default: dagrun asks the driver for 32 queues",
       DR_MODE_STREAMS,
       "set by --mode"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    if (cases[i].env)
      g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", cases[i].env, TRUE);
    else
      g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &cases[i].s, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_stream_plan_cap(plan), ==, cases[i].cap);
    g_assert_cmpstr(dr_stream_plan_cap_note(plan), ==, cases[i].note);
    g_assert_cmpint(dr_stream_plan_mode(plan), ==, cases[i].mode);
    if (cases[i].reason) g_assert_cmpstr(dr_stream_plan_mode_reason(plan), ==, cases[i].reason);
  }
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  /* The pipeline's own max_streams. */
  g_autoptr(DrPipeline) q = dr_pipeline_load_string(
      "cap4.yaml",
      "dagrun: 1\nrun: {max_streams: 4, mode: graph}\nbuffers: {a: {type: f32, count: 8}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n",
      -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(q, NULL, &error);
  g_assert_cmpuint(dr_stream_plan_cap(plan), ==, 4);
  g_assert_cmpstr(dr_stream_plan_cap_note(plan), ==, "set by the pipeline's run.max_streams");
  g_assert_cmpint(dr_stream_plan_mode(plan), ==, DR_MODE_GRAPH);
  /* A host run does not ask for queues: the variable stays unset. */
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrStreamPlan) eager = dr_pipeline_plan(p, NULL, &error);
  g_autoptr(DrRunReport) r = dr_stream_plan_run(eager, &rs, &error);
  g_assert_no_error(error);
  g_assert_null(g_getenv("CUDA_DEVICE_MAX_CONNECTIONS"));
}

/* Out-of-range flags are exit 64 with the ranges of the file's keys. */
static void test_ranges(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  struct {
    const char *flag, *message;
  } bad[] = {
      {"--iterations=0", "--iterations must be between 1 and 2147483647, not 0"},
      {"--iterations=-1", "--iterations must be between 1 and 2147483647, not -1"},
      {"--warmup=-1", "--warmup must be between 0 and 2147483647, not -1"},
      {"--max-streams=5000", "--max-streams must be between 1 and 1024, not 5000"},
      {"--max-streams=0", "--max-streams must be between 1 and 1024, not 0"},
      {"--max-streams=-1", "--max-streams must be between 1 and 1024, not -1"},
      {"--device=-1", "--device must be between 0 and 1023, not -1"},
      {"--device=1024", "--device must be between 0 and 1023, not 1024"},
      {"--delay-seed=-2", "--delay-seed must not be negative"},
      {"--iterations=99999999999", "--iterations"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_cmpint(CLI(out, err, bad[i].flag, "graphs/priority.yaml"), ==, 64);
    g_assert_cmpstr(out->str, ==, "");
    if (strstr(err->str, bad[i].message) == NULL) g_error("%s: %s", bad[i].flag, err->str);
  }
  /* The ends of the ranges are fine. */
  g_assert_cmpint(CLI(out, err, "--plan", "--max-streams=1024", "graphs/priority.yaml"), ==, 0);
  g_assert_cmpint(CLI(out, err, "--plan", "--max-streams=1", "graphs/priority.yaml"), ==, 0);
  g_assert_nonnull(strstr(out->str, "cap "));
}

/* Flags that do nothing for the chosen backend or action say so (and the
 * command still does what it was asked). */
static void test_no_effect(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(
      CLI(out, err, "--backend=host", "--mode=graph", "--iterations=1", "--warmup=0", "graphs/priority.yaml"),
      ==, 0);
  g_assert_nonnull(strstr(err->str, "dagrun: warning: --mode=graph has no effect on the host backend"));
  g_assert_cmpuint(out->len, >, 0);
  g_assert_cmpint(CLI(out, err, "--backend=host", "--timing=events", "--iterations=1", "--warmup=0",
                      "graphs/priority.yaml"),
                  ==, 0);
  g_assert_nonnull(strstr(err->str, "dagrun: warning: --timing has no effect on the host backend"));
  g_assert_cmpint(CLI(out, err, "--plan", "--iterations=3", "graphs/priority.yaml"), ==, 0);
  g_assert_nonnull(strstr(err->str, "dagrun: warning: --iterations has no effect with --plan: nothing runs"));
  g_assert_cmpint(CLI(out, err, "--backend=host", "--iterations=1", "--warmup=0", "graphs/priority.yaml"), ==,
                  0);
  g_assert_null(strstr(err->str, "warning"));
  /* --backend chooses the device.* values a pipeline loads with, so it has
   * an effect when nothing runs. */
  g_assert_cmpint(CLI(out, err, "--check", "--backend=host", "graphs/priority.yaml"), ==, 0);
  g_assert_null(strstr(err->str, "warning"));
  /* --backend=auto on a machine without a usable GPU (as here): the run
   * falls back to the host, and the warning comes after it. */
  int rc = CLI(out, err, "--mode=graph", "--iterations=1", "--warmup=0", "graphs/priority.yaml");
  g_assert_cmpint(rc, ==, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_file("graphs/priority.yaml", &error);
  DrPlanSettings one = {.iterations = 1}; /* auto: one iteration is streams */
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &one, &error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  gboolean on_host = strcmp(dr_run_report_backend(r), "host") == 0;
  g_assert_cmpint(strstr(err->str, "--mode=graph has no effect on the host backend (chosen by") != NULL, ==,
                  on_host);
  /* That eager plan relied on the default 32 queues and its run was not
   * pinned to the host: the library asked the driver for them before any
   * CUDA context existed. */
  g_assert_cmpstr(g_getenv("CUDA_DEVICE_MAX_CONNECTIONS"), ==, "32");
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
}

/* A temporary directory and, in it, a path that cannot be created. */
typedef struct {
  char *dir, *bad, *good;
} Paths;

static void paths_init(Paths *p) {
  p->dir = g_dir_make_tmp("drcli-XXXXXX", NULL);
  g_assert_nonnull(p->dir);
  p->bad = g_build_filename(p->dir, "no-such-dir", "out.file", NULL);
  p->good = g_build_filename(p->dir, "out.file", NULL);
}

static void paths_clear(Paths *p) {
  g_remove(p->good);
  g_rmdir(p->dir);
  g_free(p->dir);
  g_free(p->bad);
  g_free(p->good);
}

/* A bad --trace, --timeline or --dot is found before anything runs: exit
 * 73, nothing on stdout, the user's path named (not GLib's temp name). */
static void test_outputs_before_run(void) {
  Paths p;
  paths_init(&p);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  const char *flags[] = {"--trace", "--timeline", "--dot"};
  for (guint i = 0; i < G_N_ELEMENTS(flags); i++) {
    g_autofree char *arg = g_strdup_printf("%s=%s", flags[i], p.bad);
    g_assert_cmpint(CLI(out, err, "--backend=host", "--iterations=1", arg, "graphs/priority.yaml"), ==, 73);
    g_assert_cmpstr(out->str, ==, "");
    g_autofree char *want = g_strdup_printf("%s: error: cannot create: No such file or directory\n", p.bad);
    g_assert_cmpstr(err->str, ==, want);
  }
  /* A directory is not a file. */
  g_autofree char *arg = g_strdup_printf("--trace=%s", p.dir);
  g_assert_cmpint(CLI(out, err, "--backend=host", arg, "graphs/priority.yaml"), ==, 73);
  g_assert_nonnull(strstr(err->str, "cannot create: Is a directory"));
  paths_clear(&p);
}

/* A `save:` path that cannot be created fails the library's run before it
 * starts (DR_ERROR_OUTPUT, exit 73). */
static void test_save_before_run(void) {
  Paths p;
  paths_init(&p);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\nbuffers: {a: {type: f32, count: 8, where: host, save: '%s'}}\n"
      "nodes:\n  x: {op: memset, dst: a, value: 1}\n",
      p.bad);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) pl = dr_pipeline_load_string("save.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(pl, NULL, &error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, pl);
  rs.backend = DR_BACKEND_HOST;
  g_assert_null(dr_stream_plan_run(plan, &rs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_OUTPUT);
  g_assert_cmpint(dr_error_exit_code(error), ==, 73);
  g_assert_true(g_str_has_prefix(error->message, p.bad));
  /* Through the command line: 73 as well. */
  g_autofree char *file = g_build_filename(p.dir, "save.yaml", NULL);
  g_assert_true(g_file_set_contents(file, yaml, -1, NULL));
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(CLI(out, err, "--backend=host", file), ==, 73);
  g_assert_cmpstr(out->str, ==, "");
  g_assert_true(g_str_has_prefix(err->str, p.bad));
  g_remove(file);
  paths_clear(&p);
}

/* An output that passes the check but cannot be written (a full device) is
 * found after the run: the report is printed, then exit 73 naming it. */
static void test_outputs_after_run(void) {
  if (!g_file_test("/dev/full", G_FILE_TEST_EXISTS)) {
    g_test_skip("no /dev/full");
    return;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(CLI(out, err, "--backend=host", "--iterations=1", "--warmup=0", "--trace=/dev/full",
                      "graphs/priority.yaml"),
                  ==, 73);
  g_assert_cmpuint(out->len, >, 0); /* the report is not lost */
  g_assert_cmpstr(err->str, ==, "/dev/full: error: cannot write: No space left on device\n");
}

/* --dot alone only writes the DAG; with run flags the pipeline runs too. */
static void test_dot_with_run(void) {
  Paths p;
  paths_init(&p);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_autofree char *dot = g_strdup_printf("--dot=%s", p.good);
  g_assert_cmpint(CLI(out, err, dot, "graphs/priority.yaml"), ==, 0);
  g_assert_cmpstr(out->str, ==, "");
  g_assert_true(g_file_test(p.good, G_FILE_TEST_EXISTS));
  g_remove(p.good);
  g_assert_cmpint(CLI(out, err, dot, "--backend=host", "--iterations=1", "graphs/priority.yaml"), ==, 0);
  g_assert_nonnull(strstr(out->str, "makespan"));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(p.good, &text, NULL, NULL));
  g_assert_true(g_str_has_prefix(text, "digraph"));
  paths_clear(&p);
}

/* The library refuses an unknown pass name, listing the names. */
static void test_dump_unknown_pass(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  g_assert_false(dr_pipeline_dump_file("graphs/priority.yaml", "typo", NULL, out, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_cmpstr(
      error->message, ==,
      "no pass named 'typo' (the names: parse, devices, lifetimes, hazards, afters, cycles, memory, passes)");
  g_assert_cmpstr(out->str, ==, "");
  const char *const *names = dr_pass_names();
  guint n = 0;
  while (names[n]) n++;
  g_assert_cmpuint(n, ==, 8);
  for (guint i = 0; i < n; i++) {
    g_autoptr(GError) e = NULL;
    g_string_truncate(out, 0);
    g_assert_true(dr_pipeline_dump_file("graphs/priority.yaml", names[i], NULL, out, &e));
    g_assert_no_error(e);
    g_assert_cmpuint(out->len, >, 0);
  }
}

/* output_test.c's tests. */
void dr_test_output_add(void);

/* --cache-clean removes dagrun's cache entries (and only them), says how
 * many and from where, and exits 0; an empty or missing cache is 0 too. */
static void test_cache_clean(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("cli-cache-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("DAGRUN_CACHE_DIR", dir, TRUE);
  g_autofree char *stem = g_strnfill(64, 'a');
  const char *files[] = {".cubin", ".names", ".cubin.X1y2Z3"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *p = g_strconcat(dir, "/", stem, files[i], NULL);
    g_assert_true(g_file_set_contents(p, "0123456789", 10, NULL));
  }
  g_autofree char *mine = g_build_filename(dir, "notes.txt", NULL);
  g_assert_true(g_file_set_contents(mine, "keep", -1, NULL));
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(CLI(out, err, "--cache-clean"), ==, 0);
  g_autofree char *want = g_strdup_printf("removed 1 cached kernel (30 bytes) from %s\n", dir);
  g_assert_cmpstr(out->str, ==, want);
  g_assert_cmpstr(err->str, ==, "");
  g_assert_true(g_file_test(mine, G_FILE_TEST_EXISTS));
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_assert_cmpstr(g_dir_read_name(d), ==, "notes.txt");
  g_assert_null(g_dir_read_name(d));
  g_assert_cmpint(CLI(out, err, "--cache-clean"), ==, 0);
  g_autofree char *none = g_strdup_printf("removed 0 cached kernels (0 bytes) from %s\n", dir);
  g_assert_cmpstr(out->str, ==, none);
  g_remove(mine);
  g_rmdir(dir);
  g_unsetenv("DAGRUN_CACHE_DIR");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  g_test_add_func("/cli/plan/same-as-library", test_plan_same_as_library);
  g_test_add_func("/cli/plan/cap-rule", test_cap_rule);
  g_test_add_func("/cli/plan/mode-auto", test_mode_auto);
  g_test_add_func("/cli/plan/prediction", test_prediction);
  g_test_add_func("/cli/flags/ranges", test_ranges);
  g_test_add_func("/cli/flags/no-effect", test_no_effect);
  g_test_add_func("/cli/outputs/before-run", test_outputs_before_run);
  g_test_add_func("/cli/outputs/save-before-run", test_save_before_run);
  g_test_add_func("/cli/outputs/after-run", test_outputs_after_run);
  g_test_add_func("/cli/dot/with-run-flags", test_dot_with_run);
  g_test_add_func("/cli/dump-after/unknown-pass", test_dump_unknown_pass);
  g_test_add_func("/cli/cache-clean", test_cache_clean);
  dr_test_output_add();
  return g_test_run();
}
