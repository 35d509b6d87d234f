/* api_test.c: the public C library (include/dagrun/dagrun.h) as a user
 * sees it: only the public header (plus the CLI for the version check and
 * abi.h for the layout check). Builds pipelines of every op, plans and
 * runs them on the host backend, checks misuse (criticals), wrong call
 * order, error messages with locations, the YAML round trip on every
 * example and good golden pipeline, user kernels and callbacks. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "include/dagrun/dagrun.h"
#include "tests/api/abi.h"

/* ---- helpers -------------------------------------------------------------- */

static char *plan_json(DrPipeline *p) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  GString *out = g_string_new(NULL);
  dr_stream_plan_write_json(plan, out);
  return g_string_free(out, FALSE);
}

static DrRunSettings host_settings(const DrPipeline *p, guint iterations, guint warmup, gboolean verify) {
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_HOST;
  s.iterations = iterations;
  s.warmup = warmup;
  s.verify = verify;
  return s;
}

#define N 4096
#define CHUNKS 4

/* The spec's chunked example at a small size: upload, scale, download per
 * chunk, with alloc/free, a checksum, a label and a high priority. */
static DrPipeline *build_chunked(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("chunked");
  g_assert_true(dr_pipeline_add_buffer(p, "x_host", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_random(p, "x_host", 42, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y_host", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_alloc(p, "alloc_x", "x", &error));
  g_assert_true(dr_pipeline_add_alloc(p, "alloc_y", "y", &error));
  for (guint c = 0; c < CHUNKS; c++) {
    guint64 b = c * (N / CHUNKS), e = (c + 1) * (N / CHUNKS);
    g_autofree char *up = g_strdup_printf("up%u", c);
    g_autofree char *sc = g_strdup_printf("scale%u", c);
    g_autofree char *down = g_strdup_printf("down%u", c);
    g_assert_true(dr_pipeline_add_copy(p, up, DR_SLICE("x_host", b, e), DR_SLICE("x", b, e), &error));
    DrNamedArg args[] = {DR_NAMED_SLICE("x", "x", b, e), DR_NAMED_FLOAT("alpha", 2.0),
                         DR_NAMED_SLICE("y", "y", b, e)};
    g_assert_true(dr_pipeline_add_kernel_node(p, sc, "scale_f32", args, G_N_ELEMENTS(args), &error));
    g_assert_true(dr_pipeline_add_copy(p, down, DR_SLICE("y", b, e), DR_SLICE("y_host", b, e), &error));
    g_assert_true(dr_pipeline_node_set_priority(p, down, DR_PRIORITY_HIGH, &error));
  }
  g_assert_true(dr_pipeline_add_free(p, "free_x", "x", &error));
  g_assert_true(dr_pipeline_add_free(p, "free_y", "y", &error));
  DrNamedArg ck[] = {DR_NAMED_WHOLE("buffer", "y_host")};
  g_assert_true(dr_pipeline_add_host(p, "report", "checksum", ck, 1, &error));
  g_assert_true(dr_pipeline_node_set_label(p, "report", "the checksum", &error));
  g_assert_no_error(error);
  return g_steal_pointer(&p);
}

/* ---- version and ABI ------------------------------------------------------ */

static void test_version(void) {
  g_assert_cmpstr(dr_version(), ==, DAGRUN_VERSION_STRING);
  g_assert_cmpstr(dagrun_version(), ==, dr_version());
  g_autofree char *want =
      g_strdup_printf("%d.%d.%d", DAGRUN_VERSION_MAJOR, DAGRUN_VERSION_MINOR, DAGRUN_VERSION_PATCH);
  g_assert_cmpstr(dr_version(), ==, want);
  g_assert_true(DAGRUN_CHECK_VERSION(0, 0, 1));
  g_assert_false(DAGRUN_CHECK_VERSION(DAGRUN_VERSION_MAJOR + 1, 0, 0));
  /* The command line prints the same version. */
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  char *argv[] = {"dagrun", "--version", NULL};
  g_assert_cmpint(dr__cli_run(2, argv, out, err), ==, 0);
  g_autofree char *line = g_strdup_printf("dagrun %s\n", dr_version());
  g_assert_cmpstr(out->str, ==, line);
}

static void test_abi(void) {
  uint64_t inside[64], outside[64];
  unsigned n_in = dr_test_internal_abi(inside, 64), n_out = 0;
#define DR_X(v) \
  if (n_out < 64) outside[n_out++] = (uint64_t)(v);
  DR_ABI_FACTS(DR_X)
#undef DR_X
  g_assert_cmpuint(n_in, ==, n_out);
  g_assert_cmpuint(n_in, >, 40);
  for (unsigned i = 0; i < n_in; i++) g_assert_cmpuint(inside[i], ==, outside[i]);
}

/* ---- building, planning, running ------------------------------------------ */

static void test_build_plan_run(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = build_chunked();
  g_assert_cmpstr(dr_pipeline_name(p), ==, "chunked");
  g_assert_cmpuint(dr_pipeline_n_buffers(p), ==, 4);
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, 2 + 3 * CHUNKS + 3);
  g_assert_false(dr_pipeline_is_frozen(p));
  g_assert_true(dr_pipeline_validate(p, &error));
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_is_frozen(p));
  g_assert_true(dr_pipeline_validate(p, &error)); /* a no-op now */

  DrPlanSettings ps = {.max_streams = 8};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &ps, &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  guint n_steps = dr_stream_plan_n_steps(plan);
  g_assert_cmpuint(n_steps, ==, dr_pipeline_n_nodes(p));
  g_assert_cmpuint(dr_stream_plan_n_streams(plan), >=, 2);
  g_assert_cmpuint(dr_stream_plan_width(plan), >=, CHUNKS);
  g_assert_cmpuint(dr_stream_plan_n_edges(plan), >, 0);
  /* Every step agrees with the per-node lookup; waits name other streams. */
  guint waits = 0;
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < n_steps; i++) {
    const char *id = dr_stream_plan_step_node(plan, i);
    g_assert_nonnull(id);
    g_hash_table_add(seen, (gpointer)id);
    guint s = dr_stream_plan_step_stream(plan, i);
    g_assert_cmpuint(s, <, dr_stream_plan_n_streams(plan));
    g_assert_cmpint(dr_stream_plan_node_stream(plan, id), ==, (gint)s);
    for (guint w = 0; w < dr_stream_plan_step_n_waits(plan, i); w++, waits++) {
      const char *on = dr_stream_plan_step_wait(plan, i, w);
      g_assert_true(g_hash_table_contains(seen, on)); /* issued before */
      g_assert_cmpint(dr_stream_plan_node_stream(plan, on), !=, (gint)s);
    }
  }
  g_hash_table_unref(seen);
  g_assert_cmpuint(waits, ==, dr_stream_plan_n_waits(plan));
  g_assert_cmpint(dr_stream_plan_node_stream(plan, "no-such-node"), ==, -1);
  /* The high-priority downloads sit on high-priority streams. */
  gint down_stream = dr_stream_plan_node_stream(plan, "down0");
  g_assert_cmpint(dr_stream_plan_stream_priority(plan, (guint)down_stream), ==, DR_PRIORITY_HIGH);

  g_autoptr(GString) text = g_string_new(NULL);
  dr_stream_plan_write_text(plan, text);
  g_assert_nonnull(strstr(text->str, "scale0"));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_stream_plan_write_json(plan, json);
  g_assert_nonnull(strstr(json->str, "\"streams\""));
  g_assert_nonnull(strstr(json->str, "\"width\""));
  g_autoptr(GString) dot = g_string_new(NULL);
  dr_stream_plan_write_dot(plan, dot);
  g_assert_true(g_str_has_prefix(dot->str, "digraph"));

  /* Run on the host backend with verify; the checksum goes to a file. */
  g_autofree char *out_path = g_build_filename(g_get_tmp_dir(), "api_test_host_out.txt", NULL);
  FILE *out = fopen(out_path, "w+");
  g_assert_nonnull(out);
  g_autofree char *trace_path = g_build_filename(g_get_tmp_dir(), "api_test_trace.json", NULL);
  DrRunSettings rs = host_settings(p, 3, 1, TRUE);
  rs.host_output = out;
  rs.trace_path = trace_path;
  g_autofree char *timeline_path = g_build_filename(g_get_tmp_dir(), "api_test_timeline.svg", NULL);
  rs.timeline_path = timeline_path;
  rs.delay_seed = 5;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  fclose(out);
  g_assert_cmpstr(dr_run_report_backend(r), ==, "host");
  g_assert_cmpstr(dr_run_report_mode(r), ==, "streams");
  g_assert_cmpuint(dr_run_report_iterations(r), ==, 3);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
  g_assert_true(dr_run_report_check_verified(r, &error));
  g_assert_no_error(error);
  g_assert_true(dr_run_report_makespan_us(r) > 0);
  g_assert_cmpuint(dr_run_report_n_nodes(r), ==, n_steps);
  for (guint i = 0; i < dr_run_report_n_nodes(r); i++) {
    g_assert_cmpstr(dr_run_report_node_id(r, i), ==, dr_stream_plan_step_node(plan, i));
    g_assert_cmpuint(dr_run_report_node_stream(r, i), ==, dr_stream_plan_step_stream(plan, i));
    g_assert_true(dr_run_report_node_start_us(r, i) >= 0);
    g_assert_true(dr_run_report_node_duration_us(r, i) >= 0);
  }
  g_assert_cmpstr(dr_run_report_node_op(r, 0), ==, "alloc");
  g_autoptr(GString) rt = g_string_new(NULL);
  dr_run_report_write_text(r, rt);
  g_assert_nonnull(strstr(rt->str, "scale3"));
  g_autoptr(GString) rj = g_string_new(NULL);
  dr_run_report_write_json(r, rj);
  g_assert_nonnull(strstr(rj->str, "\"verified\": true"));
  g_autoptr(GString) tr = g_string_new(NULL);
  dr_run_report_write_trace(r, tr);
  g_assert_nonnull(strstr(tr->str, "traceEvents"));
  g_autofree char *trace_file = NULL;
  g_assert_true(g_file_get_contents(trace_path, &trace_file, NULL, NULL));
  g_assert_nonnull(strstr(trace_file, "traceEvents"));
  g_autofree char *printed = NULL;
  g_assert_true(g_file_get_contents(out_path, &printed, NULL, NULL));
  g_assert_nonnull(strstr(printed, "checksum report y_host 0x"));
  g_unlink(out_path);
  g_unlink(trace_path);
  g_autofree char *svg_file = NULL;
  g_assert_true(g_file_get_contents(timeline_path, &svg_file, NULL, NULL));
  g_assert_true(g_str_has_prefix(svg_file, "<svg") || strstr(svg_file, "<svg") != NULL);
  g_unlink(timeline_path);
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_run_report_write_timeline(r, plan, svg);
  g_assert_nonnull(strstr(svg->str, "</svg>"));
  g_assert_nonnull(strstr(svg->str, "scale2"));
  /* The critical path runs through one chunk from alloc to the checksum. */
  g_assert_true(dr_run_report_critical_path_us(r) > 0);
  g_assert_true(dr_run_report_critical_path_us(r) <= dr_run_report_makespan_us(r) * 1.0001);
  guint nc = dr_run_report_n_critical_nodes(r);
  g_assert_cmpuint(nc, >=, 3);
  g_assert_cmpstr(dr_run_report_critical_node(r, nc - 1), ==, "report");
  g_assert_true(dr_run_report_overlap_efficiency(r) > 0);
  g_assert_true(dr_run_report_critical_over_makespan(r) > 0);
  g_assert_true(dr_run_report_critical_over_makespan(r) <= 1.0001);
}

/* A run report's JSON steers the planner (DrPlanSettings.profile_path). */
static void test_plan_profile(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = build_chunked();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 2, 0, FALSE);
  FILE *null_out = fopen("/dev/null", "w");
  rs.host_output = null_out;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  fclose(null_out);
  g_assert_no_error(error);
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(r, json);
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "api_profile.json", NULL);
  g_assert_true(g_file_set_contents(path, json->str, -1, &error));
  DrPlanSettings ps = {.max_streams = 2, .profile_path = path};
  g_autoptr(DrStreamPlan) profiled = dr_pipeline_plan(p, &ps, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_stream_plan_n_streams(profiled), <=, 2);
  g_assert_cmpuint(dr_stream_plan_n_steps(profiled), ==, dr_pipeline_n_nodes(p));
  g_unlink(path);
  DrPlanSettings bad = {.profile_path = "/nonexistent/profile.json"};
  g_assert_null(dr_pipeline_plan(p, &bad, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
}

/* init: {file:}, memset, copies and save:, checked byte for byte. */
static void test_init_file_memset_save(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *in = g_build_filename(g_get_tmp_dir(), "api_init.bin", NULL);
  g_autofree char *out = g_build_filename(g_get_tmp_dir(), "api_save.bin", NULL);
  guint8 bytes[64];
  for (guint i = 0; i < 64; i++) bytes[i] = (guint8)(3 * i + 1);
  g_assert_true(g_file_set_contents(in, (const char *)bytes, 64, &error));
  g_autoptr(DrPipeline) p = dr_pipeline_new("files");
  g_assert_true(dr_pipeline_add_buffer(p, "src", DR_ELEM_U8, 64, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_file(p, "src", in, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "dev", DR_ELEM_U8, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "dst", DR_ELEM_U8, 64, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_save(p, "dst", out, &error));
  g_assert_true(dr_pipeline_add_copy(p, "up", DR_WHOLE("src"), DR_WHOLE("dev"), &error));
  g_assert_true(dr_pipeline_add_memset(p, "clear", DR_SLICE("dev", 16, 32), 0xab, &error));
  g_assert_true(dr_pipeline_add_noop(p, "join", &error));
  g_assert_true(dr_pipeline_add_copy(p, "down", DR_WHOLE("dev"), DR_WHOLE("dst"), &error));
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 2, 1, TRUE);
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
  g_autofree char *got = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(out, &got, &len, &error));
  g_assert_cmpuint(len, ==, 64);
  for (guint i = 0; i < 64; i++) g_assert_cmpuint((guint8)got[i], ==, i >= 16 && i < 32 ? 0xab : bytes[i]);
  g_unlink(out);
  /* A file of the wrong size fails the run, before anything ran. */
  g_assert_true(g_file_set_contents(in, "short", 5, &error));
  g_assert_null(dr_stream_plan_run(plan, &rs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "buffer 'src'"));
  g_clear_error(&error);
  /* A pipeline validated with it is refused up front, at the buffer. */
  g_autoptr(DrPipeline) q = dr_pipeline_new("files");
  g_assert_true(dr_pipeline_add_buffer(q, "src", DR_ELEM_U8, 64, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_file(q, "src", in, &error));
  g_assert_false(dr_pipeline_validate(q, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_autofree char *want = g_strdup_printf(
      "<api:buffers>:1:1: error: buffer 'src', key 'init': init file '%s' "
      "holds 5 bytes; the buffer holds 64 (64 u8 elements)",
      in);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  g_unlink(in);
  g_autoptr(DrPipeline) r2 = dr_pipeline_new("files");
  g_assert_true(dr_pipeline_add_buffer(r2, "src", DR_ELEM_U8, 64, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_file(r2, "src", in, &error));
  g_assert_false(dr_pipeline_validate(r2, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "cannot read init file"));
}

/* The plan keeps the pipeline alive: free the pipeline first. */
static void test_plan_owns_pipeline(void) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = build_chunked();
  DrStreamPlan *plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  dr_pipeline_free(p);
  g_assert_cmpstr(dr_stream_plan_step_node(plan, 0), ==, "alloc_x");
  DrRunSettings rs;
  /* A plan made before may run after its pipeline's last reference went. */
  rs = (DrRunSettings){.backend = DR_BACKEND_HOST, .iterations = 1, .warmup = 0};
  FILE *null_out = fopen("/dev/null", "w");
  rs.host_output = null_out;
  DrRunReport *r = dr_stream_plan_run(plan, &rs, &error);
  fclose(null_out);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_NOT_RUN);
  dr_stream_plan_free(plan);
  /* The report stands alone: its ids and writers work after the graph went. */
  g_assert_cmpuint(dr_run_report_n_nodes(r), ==, 2 + 3 * CHUNKS + 3);
  g_assert_cmpstr(dr_run_report_node_id(r, 0), ==, "alloc_x");
  g_autoptr(GString) text = g_string_new(NULL);
  dr_run_report_write_text(r, text);
  dr_run_report_write_json(r, text);
  dr_run_report_write_trace(r, text);
  g_assert_nonnull(strstr(text->str, "scale3"));
  dr_run_report_free(r);
  dr_pipeline_free(NULL);
  dr_stream_plan_free(NULL);
  dr_run_report_free(NULL);
}

static void test_run_settings(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new(NULL);
  g_assert_cmpstr(dr_pipeline_name(p), ==, "pipeline");
  g_assert_true(dr_pipeline_set_run(p, DR_MODE_GRAPH, 7, 3, &error));
  g_assert_true(dr_pipeline_set_max_streams(p, 3, &error));
  g_assert_true(dr_pipeline_set_device(p, 1, &error));
  g_assert_true(dr_pipeline_set_release_threshold(p, 1 << 20, &error));
  g_assert_no_error(error);
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  g_assert_cmpint(s.mode, ==, DR_MODE_GRAPH);
  g_assert_cmpuint(s.iterations, ==, 7);
  g_assert_cmpuint(s.warmup, ==, 3);
  g_assert_cmpint(s.device, ==, 1);
  g_assert_cmpint(s.backend, ==, DR_BACKEND_AUTO);
  g_assert_cmpint(s.node_timing, ==, DR_TIMING_AUTO);
  g_assert_null(s.timeline_path);
  g_assert_false(s.progress);
  g_assert_false(s.verify);
  /* The YAML keeps the settings. */
  g_assert_true(dr_pipeline_add_noop(p, "n", &error));
  g_autoptr(GString) y = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, y, &error));
  g_autoptr(DrPipeline) q = dr_pipeline_load_string("settings.yaml", y->str, -1, &error);
  g_assert_no_error(error);
  dr_run_settings_init(&s, q);
  g_assert_cmpint(s.mode, ==, DR_MODE_GRAPH);
  g_assert_cmpuint(s.iterations, ==, 7);
  g_assert_cmpuint(s.warmup, ==, 3);
  g_assert_cmpint(s.device, ==, 1);
  g_autofree char *a = plan_json(p);
  g_autofree char *b = plan_json(q);
  g_assert_cmpstr(a, ==, b);
  g_assert_nonnull(strstr(a, "\"cap\": 3,"));
  /* iterations 0 at run time is a usage error, not a critical. */
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  DrRunSettings bad = host_settings(p, 0, 0, FALSE);
  g_assert_null(dr_stream_plan_run(plan, &bad, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
}

/* ---- misuse: programming errors are criticals ------------------------------ */

static void expect_critical(void) {
  g_test_expect_message("dagrun", G_LOG_LEVEL_CRITICAL, "*assertion*failed*");
}

static void test_misuse_null(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("m");
  g_assert_true(dr_pipeline_add_buffer(p, "b", DR_ELEM_U8, 16, DR_WHERE_DEVICE, &error));

  expect_critical();
  g_assert_false(dr_pipeline_add_buffer(NULL, "b", DR_ELEM_U8, 16, DR_WHERE_DEVICE, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_buffer(p, NULL, DR_ELEM_U8, 16, DR_WHERE_DEVICE, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_buffer(p, "c", (DrElemType)99, 16, DR_WHERE_DEVICE, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_noop(p, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_kernel_node(p, "k", NULL, NULL, 0, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_kernel_node(p, "k", "scale_f32", NULL, 2, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_add_callback(p, "cb", NULL, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_register_kernel(p, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_validate(NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_null(dr_pipeline_plan(NULL, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_null(dr_pipeline_load_file(NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_write_yaml(p, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_null(dr_stream_plan_run(NULL, NULL, &error));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_cmpuint(dr_stream_plan_n_streams(NULL), ==, 0);
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_null(dr_run_report_backend(NULL));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_false(dr_pipeline_set_run(p, DR_MODE_STREAMS, 0, 0, &error)); /* iterations >= 1 */
  g_test_assert_expected_messages();
  /* An error already set is misuse too. */
  GError *set = g_error_new_literal(DR_ERROR, DR_ERROR_IO, "earlier");
  expect_critical();
  g_assert_false(dr_pipeline_add_noop(p, "n", &set));
  g_test_assert_expected_messages();
  g_error_free(set);
  g_assert_no_error(error); /* none of the above set an error */
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, 0);
  g_assert_cmpuint(dr_pipeline_n_buffers(p), ==, 1);
}

static void test_misuse_indexes(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = build_chunked();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  guint n = dr_stream_plan_n_steps(plan);
  expect_critical();
  g_assert_null(dr_stream_plan_step_node(plan, n));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_null(dr_stream_plan_step_wait(plan, 0, dr_stream_plan_step_n_waits(plan, 0)));
  g_test_assert_expected_messages();
  expect_critical();
  (void)dr_stream_plan_stream_priority(plan, dr_stream_plan_n_streams(plan));
  g_test_assert_expected_messages();
  DrRunSettings rs = host_settings(p, 1, 0, FALSE);
  FILE *null_out = fopen("/dev/null", "w");
  rs.host_output = null_out;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  fclose(null_out);
  g_assert_no_error(error);
  expect_critical();
  g_assert_null(dr_run_report_node_id(r, dr_run_report_n_nodes(r)));
  g_test_assert_expected_messages();
  g_autoptr(DrStreamPlan) other = dr_pipeline_plan(p, NULL, &error);
  g_autoptr(GString) svg = g_string_new(NULL);
  expect_critical();
  dr_run_report_write_timeline(r, other, svg);
  g_test_assert_expected_messages();
  g_assert_cmpuint(svg->len, ==, 0);
  expect_critical();
  g_assert_null(dr_run_report_critical_node(r, dr_run_report_n_critical_nodes(r)));
  g_test_assert_expected_messages();
  expect_critical();
  g_assert_true(isnan(dr_run_report_node_duration_us(r, 1000)));
  g_test_assert_expected_messages();
}

/* ---- call order ------------------------------------------------------------- */

static void test_order_frozen(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = build_chunked();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_is_frozen(p));
  guint before = dr_pipeline_n_nodes(p);
  g_assert_false(dr_pipeline_add_noop(p, "late", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "frozen"));
  g_clear_error(&error);
  g_assert_false(dr_pipeline_add_buffer(p, "late", DR_ELEM_U8, 1, DR_WHERE_HOST, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_pipeline_node_after(p, "free_x", "up0", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_pipeline_set_max_streams(p, 2, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_pipeline_buffer_save(p, "y_host", "/tmp/x", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, before);
  /* Planning again works and gives the same plan. */
  g_autoptr(DrStreamPlan) again = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) a = g_string_new(NULL), b = g_string_new(NULL);
  dr_stream_plan_write_json(plan, a);
  dr_stream_plan_write_json(again, b);
  g_assert_cmpstr(a->str, ==, b->str);

  /* A loaded pipeline is frozen from the start. */
  g_autoptr(DrPipeline) l =
      dr_pipeline_load_string("x.yaml", "dagrun: 1\nnodes:\n  a: {op: noop}\n", -1, &error);
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_is_frozen(l));
  g_assert_false(dr_pipeline_add_noop(l, "b", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
}

static void test_order_failed_stays_failed(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("f");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 8, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_alloc(p, "a", "x", &error)); /* no free */
  g_assert_false(dr_pipeline_validate(p, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_autofree char *first = g_strdup(error->message);
  g_clear_error(&error);
  g_assert_null(dr_pipeline_plan(p, NULL, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, first);
  g_clear_error(&error);
  g_assert_false(dr_pipeline_add_free(p, "f", "x", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "invalid"));
}

/* ---- errors with locations --------------------------------------------------- */

#define ASSERT_INVALID(call, msg)                     \
  do {                                                \
    g_autoptr(GError) e_ = NULL;                      \
    guint n_ = dr_pipeline_n_nodes(p);                \
    g_assert_false(call);                             \
    g_assert_error(e_, DR_ERROR, DR_ERROR_INVALID);   \
    g_assert_cmpstr(e_->message, ==, msg);            \
    g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, n_); \
  } while (0)

static void test_errors_nodes(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("e");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, 16, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "i", DR_ELEM_I32, 16, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_noop(p, "first", &error));
  g_assert_no_error(error);

  /* Synthetic locations: <api>:N:1, N the node's 1-based position. */
  ASSERT_INVALID(dr_pipeline_add_copy(p, "c", DR_WHOLE("xx"), DR_WHOLE("y"), &e_),
                 "<api>:2:1: error: node 'c', key 'src': unknown buffer 'xx' (did you mean 'x'?)");
  ASSERT_INVALID(
      dr_pipeline_add_copy(p, "c", DR_SLICE("x", 0, 17), DR_WHOLE("y"), &e_),
      "<api>:2:1: error: node 'c', key 'src': slice 'x[0:17]' is out of bounds: buffer 'x' has 16 elements");
  ASSERT_INVALID(dr_pipeline_add_copy(p, "c", DR_SLICE("x", 4, 4), DR_WHOLE("y"), &e_),
                 "<api>:2:1: error: node 'c', key 'src': slice 'x[4:4]' is empty");
  ASSERT_INVALID(dr_pipeline_add_copy(p, "c", DR_SLICE("x", 5, 4), DR_WHOLE("y"), &e_),
                 "<api>:2:1: error: node 'c', key 'src': slice 'x[5:4]' is reversed: start 5 is after end 4");
  ASSERT_INVALID(
      dr_pipeline_add_copy(p, "c", DR_SLICE("x", 0, 8), DR_WHOLE("y"), &e_),
      "<api>:2:1: error: node 'c', key 'dst': copy lengths differ: src is 32 bytes, dst is 64 bytes");
  ASSERT_INVALID(dr_pipeline_add_noop(p, "first", &e_), "<api>:2:1: error: duplicate node id 'first'");
  ASSERT_INVALID(dr_pipeline_add_noop(p, "bad id", &e_),
                 "<api>:2:1: error: node 'bad id': a node id uses letters, digits, '_', '-' and '.'");
  DrNamedArg host_x[] = {DR_NAMED_WHOLE("x", "h"), DR_NAMED_FLOAT("alpha", 1), DR_NAMED_WHOLE("y", "y")};
  ASSERT_INVALID(
      dr_pipeline_add_kernel_node(p, "k", "scale_f32", host_x, 3, &e_),
      "<api>:2:1: error: node 'k', argument 'x': kernel 'scale_f32' takes device buffers; 'h' is a host "
      "buffer");
  DrNamedArg wrong_type[] = {DR_NAMED_WHOLE("x", "i"), DR_NAMED_FLOAT("alpha", 1), DR_NAMED_WHOLE("y", "y")};
  ASSERT_INVALID(
      dr_pipeline_add_kernel_node(p, "k", "scale_f32", wrong_type, 3, &e_),
      "<api>:2:1: error: node 'k', argument 'x': kernel 'scale_f32' wants f32 elements, but buffer 'i' "
      "holds i32");
  DrNamedArg unknown_param[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpah", 1),
                                DR_NAMED_WHOLE("y", "y")};
  ASSERT_INVALID(
      dr_pipeline_add_kernel_node(p, "k", "scale_f32", unknown_param, 3, &e_),
      "<api>:2:1: error: node 'k', key 'args': kernel 'scale_f32' has no parameter 'alpah' (did you "
      "mean 'alpha'?)");
  DrNamedArg missing[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 1)};
  ASSERT_INVALID(dr_pipeline_add_kernel_node(p, "k", "scale_f32", missing, 2, &e_),
                 "<api>:2:1: error: node 'k': missing argument 'y' of kernel 'scale_f32'");
  DrNamedArg not_slice[] = {DR_NAMED_INT("x", 3), DR_NAMED_FLOAT("alpha", 1), DR_NAMED_WHOLE("y", "y")};
  ASSERT_INVALID(dr_pipeline_add_kernel_node(p, "k", "scale_f32", not_slice, 3, &e_),
                 "<api>:2:1: error: node 'k', argument 'x': expected a buffer slice");
  DrNamedArg twice[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("x", "x")};
  ASSERT_INVALID(dr_pipeline_add_kernel_node(p, "k", "scale_f32", twice, 2, &e_),
                 "<api>:2:1: error: node 'k', key 'args': argument 'x' given twice");
  ASSERT_INVALID(
      dr_pipeline_add_kernel_node(p, "k", "scale_f23", NULL, 0, &e_),
      "<api>:2:1: error: node 'k', key 'kernel': unknown kernel 'scale_f23' (did you mean 'scale_f32'?)");
  ASSERT_INVALID(
      dr_pipeline_add_alloc(p, "a", "h", &e_),
      "<api>:2:1: error: node 'a', key 'buffer': alloc takes device buffers only; 'h' is a host buffer");
  ASSERT_INVALID(dr_pipeline_add_free(p, "a", "qqqq", &e_),
                 "<api>:2:1: error: node 'a', key 'buffer': unknown buffer 'qqqq'");
  DrNamedArg dev[] = {DR_NAMED_WHOLE("buffer", "x")};
  ASSERT_INVALID(
      dr_pipeline_add_host(p, "hc", "checksum", dev, 1, &e_),
      "<api>:2:1: error: node 'hc', argument 'buffer': host function 'checksum' runs on the CPU and needs "
      "a host buffer; 'x' lives on the device");
  ASSERT_INVALID(
      dr_pipeline_add_host(p, "hc", "chcksum", NULL, 0, &e_),
      "<api>:2:1: error: node 'hc', key 'fn': unknown host function 'chcksum' (did you mean 'checksum'?)");
  DrNamedArg neg[] = {DR_NAMED_INT("us", -5)};
  ASSERT_INVALID(dr_pipeline_add_host(p, "hs", "sleep", neg, 1, &e_),
                 "<api>:2:1: error: node 'hs', argument 'us': -5 is out of range [0, 9223372036854775807]");
  /* The kernel's own check runs when the node is added. */
  DrNamedArg lens[] = {DR_NAMED_SLICE("x", "x", 0, 8), DR_NAMED_FLOAT("alpha", 1), DR_NAMED_WHOLE("y", "y")};
  {
    g_autoptr(GError) e_ = NULL;
    g_assert_false(dr_pipeline_add_kernel_node(p, "k", "scale_f32", lens, 3, &e_));
    g_assert_error(e_, DR_ERROR, DR_ERROR_INVALID);
    g_assert_true(g_str_has_prefix(e_->message, "<api>:2:1: error: node 'k': kernel 'scale_f32': "));
  }
  /* Node properties name existing nodes. */
  ASSERT_INVALID(dr_pipeline_node_after(p, "first", "nope", &e_), "<api>: error: unknown node 'nope'");
  ASSERT_INVALID(dr_pipeline_node_after(p, "first", "first", &e_),
                 "<api>:1:1: error: node 'first', key 'after': a node cannot come after itself");
  ASSERT_INVALID(dr_pipeline_node_set_label(p, "frist", "l", &e_),
                 "<api>: error: unknown node 'frist' (did you mean 'first'?)");
  ASSERT_INVALID(dr_pipeline_node_set_launch(p, "first", NULL, NULL, 0, &e_),
                 "<api>:1:1: error: node 'first': a launch shape applies to kernel nodes only");
  /* Buffers. */
  ASSERT_INVALID(dr_pipeline_add_buffer(p, "x", DR_ELEM_U8, 1, DR_WHERE_HOST, &e_),
                 "<api:buffers>:5:1: error: duplicate buffer 'x'");
  ASSERT_INVALID(dr_pipeline_add_buffer(p, "z", DR_ELEM_U8, 0, DR_WHERE_HOST, &e_),
                 "<api:buffers>:5:1: error: buffer 'z', key 'count': must be between 1 and 2^61");
  ASSERT_INVALID(dr_pipeline_buffer_init_iota(p, "wwww", &e_), "<api:buffers>: error: unknown buffer 'wwww'");

  /* Caller locations. */
  dr_pipeline_set_loc(p, "builder.c", 42, 7);
  ASSERT_INVALID(dr_pipeline_add_copy(p, "c", DR_WHOLE("x"), DR_WHOLE("yy"), &e_),
                 "builder.c:42:7: error: node 'c', key 'dst': unknown buffer 'yy' (did you mean 'y'?)");
  g_assert_true(dr_pipeline_add_copy(p, "c", DR_WHOLE("x"), DR_WHOLE("y"), &error));
  dr_pipeline_set_loc(p, NULL, 0, 0);
  ASSERT_INVALID(dr_pipeline_add_noop(p, "c", &e_), "<api>:3:1: error: duplicate node id 'c'");
  g_assert_no_error(error);
  /* What failed left nothing behind: the pipeline validates and plans. */
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, 2);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_stream_plan_n_steps(plan), ==, 2);
}

static void test_errors_validate(void) {
  g_autoptr(GError) error = NULL;
  /* Use before alloc, located at the using node (caller location). */
  {
    g_autoptr(DrPipeline) p = dr_pipeline_new("v");
    g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 8, DR_WHERE_DEVICE, &error));
    g_assert_true(dr_pipeline_add_memset(p, "m", DR_WHOLE("x"), 0, &error));
    g_assert_true(dr_pipeline_add_alloc(p, "a", "x", &error));
    dr_pipeline_set_loc(p, "mine.c", 10, 3);
    g_assert_true(dr_pipeline_add_free(p, "f", "x", &error));
    g_assert_no_error(error);
    g_assert_false(dr_pipeline_validate(p, &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
    g_assert_true(g_str_has_prefix(error->message, "<api>:1:1: error: "));
    g_assert_nonnull(strstr(error->message, "'m'"));
    g_clear_error(&error);
  }
  /* init on a buffer that an alloc names. */
  {
    g_autoptr(DrPipeline) p = dr_pipeline_new("v");
    g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 8, DR_WHERE_DEVICE, &error));
    g_assert_true(dr_pipeline_buffer_init_zeros(p, "x", &error));
    g_assert_true(dr_pipeline_add_alloc(p, "a", "x", &error));
    g_assert_true(dr_pipeline_add_free(p, "f", "x", &error));
    g_assert_false(dr_pipeline_validate(p, &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
    g_assert_cmpstr(
        error->message, ==,
        "<api:buffers>:1:1: error: buffer 'x': 'init' needs a buffer that lives for the whole run, but "
        "node 'a' allocates it\n<api>:1:1: note: node 'a' is here");
    g_clear_error(&error);
  }
  /* An after: cycle. */
  {
    g_autoptr(DrPipeline) p = dr_pipeline_new("v");
    g_assert_true(dr_pipeline_add_noop(p, "a", &error));
    g_assert_true(dr_pipeline_add_noop(p, "b", &error));
    g_assert_true(dr_pipeline_node_after(p, "b", "a", &error));
    g_assert_true(dr_pipeline_node_after(p, "a", "b", &error));
    g_assert_no_error(error);
    g_assert_false(dr_pipeline_validate(p, &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "cycle"));
    g_clear_error(&error);
  }
}

static void test_errors_load(void) {
  g_autoptr(GError) error = NULL;
  g_assert_null(dr_pipeline_load_file("/nonexistent/p.yaml", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, "/nonexistent/p.yaml: error: cannot read"));
  g_clear_error(&error);
  const char *bad =
      "dagrun: 1\nbuffers:\n  x: {type: f32, count: 8}\nnodes:\n  c: {op: copy, src: x, dst: xy}\n";
  g_assert_null(dr_pipeline_load_string("bad.yaml", bad, -1, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_true(g_str_has_prefix(error->message, "bad.yaml:5:"));
  g_assert_nonnull(strstr(error->message, "unknown buffer 'xy'"));
  g_assert_cmpint(dr_error_exit_code(error), ==, 65);
  g_clear_error(&error);
  /* len bounds the text. */
  const char *good = "dagrun: 1\nnodes:\n  a: {op: noop}\nGARBAGE";
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("len.yaml", good, (gssize)(strlen(good) - 7), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, 1);
}

/* ---- YAML round trip --------------------------------------------------------- */

static guint round_trip_dir(const char *dir, const char *prefix) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
  g_assert_no_error(error);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL)
    if (g_str_has_prefix(name, prefix) && g_str_has_suffix(name, ".yaml"))
      g_ptr_array_add(names, g_strdup(name));
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
    g_test_message("round trip: %s", path);
    g_autoptr(DrPipeline) a = dr_pipeline_load_file(path, &error);
    g_assert_no_error(error);
    g_autoptr(GString) yaml = g_string_new(NULL);
    g_assert_true(dr_pipeline_write_yaml(a, yaml, &error));
    g_assert_no_error(error);
    g_autoptr(DrPipeline) b = dr_pipeline_load_string(path, yaml->str, (gssize)yaml->len, &error);
    if (error) g_printerr("%s\n--- written ---\n%s", error->message, yaml->str);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_pipeline_n_nodes(a), ==, dr_pipeline_n_nodes(b));
    g_assert_cmpuint(dr_pipeline_n_buffers(a), ==, dr_pipeline_n_buffers(b));
    g_autofree char *ja = plan_json(a);
    g_autofree char *jb = plan_json(b);
    g_assert_cmpstr(ja, ==, jb);
    /* And the written text is a fixed point. */
    g_autoptr(GString) yaml2 = g_string_new(NULL);
    g_assert_true(dr_pipeline_write_yaml(b, yaml2, &error));
    g_assert_cmpstr(yaml->str, ==, yaml2->str);
  }
  return names->len;
}

static void test_yaml_round_trip_files(void) {
  guint n_graphs = round_trip_dir("graphs", "");
  guint n_golden = round_trip_dir("tests/golden", "good_");
  guint n_gpu = round_trip_dir("graphs/gpu", "");
  g_test_message("%u graphs, %u goldens, %u GPU graphs", n_graphs, n_golden, n_gpu);
  g_assert_cmpuint(n_graphs, >=, 5);
  g_assert_cmpuint(n_golden, >=, 5);
  g_assert_cmpuint(n_gpu, >=, 1);
}

static void test_yaml_round_trip_api(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = build_chunked();
  /* More of the surface: memset, sleep/print, launch shape, device, after. */
  g_assert_true(dr_pipeline_add_buffer(p, "w", DR_ELEM_U8, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "w", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "s", DR_ELEM_F32, 8, DR_WHERE_HOST, &error));
  g_autofree char *save = g_build_filename(g_get_tmp_dir(), "api_rt_save.bin", NULL);
  g_assert_true(dr_pipeline_buffer_save(p, "s", save, &error));
  g_assert_true(dr_pipeline_add_memset(p, "ms", DR_SLICE("w", 8, 16), 7, &error));
  DrNamedArg pr[] = {DR_NAMED_STRING("message", "hello \"quoted\"\tworld"),
                     DR_NAMED_SLICE("buffer", "s", 0, 4)};
  g_assert_true(dr_pipeline_add_host(p, "say", "print", pr, 2, &error));
  DrNamedArg sl[] = {DR_NAMED_INT("us", 1)};
  g_assert_true(dr_pipeline_add_host(p, "nap", "sleep", sl, 1, &error));
  g_assert_true(dr_pipeline_add_noop(p, "join", &error));
  g_assert_true(dr_pipeline_node_after(p, "join", "nap", &error));
  g_assert_true(dr_pipeline_node_after(p, "join", "say", &error));
  g_assert_true(dr_pipeline_node_set_device(p, "join", 0, &error));
  guint grid[3] = {4, 0, 0}, block[3] = {128, 0, 0};
  /* The YAML's range and wording (grid: 3000000000 in a file says the same). */
  guint huge[3] = {4, 3000000000u, 0};
  g_assert_false(dr_pipeline_node_set_launch(p, "scale1", grid, huge, 256, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(
      strstr(error->message, "node 'scale1', key 'block': 3000000000 is out of range [1, 2147483647]"));
  g_clear_error(&error);
  g_assert_true(dr_pipeline_node_set_launch(p, "scale1", grid, block, 256, &error));
  g_assert_true(dr_pipeline_set_max_streams(p, 3, &error));
  g_assert_no_error(error);
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_no_error(error);
  g_autoptr(DrPipeline) q = dr_pipeline_load_string("api.yaml", yaml->str, -1, &error);
  if (error) g_printerr("%s\n%s", error->message, yaml->str);
  g_assert_no_error(error);
  g_autofree char *a = plan_json(p);
  g_autofree char *b = plan_json(q);
  g_assert_cmpstr(a, ==, b);
  g_assert_nonnull(strstr(yaml->str, "grid: [4, 1, 1]"));
  g_assert_nonnull(strstr(yaml->str, "label: \"the checksum\""));
  g_assert_nonnull(strstr(yaml->str, "after: [\"nap\", \"say\"]"));
}

static void test_yaml_unsayable(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("braces");
  g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, 4, DR_WHERE_HOST, &error));
  DrNamedArg a[] = {DR_NAMED_STRING("message", "x {1+1} y")};
  g_assert_true(dr_pipeline_add_host(p, "pr", "print", a, 1, &error));
  g_assert_no_error(error);
  g_autoptr(GString) yaml = g_string_new("keep");
  g_assert_false(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_cmpstr(
      error->message, ==,
      "node 'pr': \"x {1+1} y\" holds a brace, which the pipeline format would read as an {expression}");
  g_assert_cmpstr(yaml->str, ==, "keep");
  /* The pipeline itself is fine: it prints the message as given. */
  g_clear_error(&error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "api_braces.txt", NULL);
  FILE *out = fopen(path, "w+");
  DrRunSettings rs = host_settings(p, 1, 0, FALSE);
  rs.host_output = out;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  fclose(out);
  g_assert_no_error(error);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "pr: x {1+1} y\n");
  g_unlink(path);
}

/* ---- user kernels -------------------------------------------------------------- */

static int add_host(const DrKLaunch *l, char *err) {
  const float *x = l->args[0].ptr;
  float *y = l->args[1].ptr;
  float a = (float)l->args[2].f;
  if (l->counts[0] != l->counts[1]) {
    g_strlcpy(err, "x and y differ in length", DR_KERR_SIZE);
    return -1;
  }
  for (uint64_t i = 0; i < l->counts[0]; i++) y[i] = x[i] + a;
  return 0;
}

static int add_check(const uint64_t *counts, const DrKValue *args, char *err) {
  (void)args;
  if (counts[0] == counts[1]) return 0;
  g_snprintf(err, DR_KERR_SIZE, "x has %" G_GUINT64_FORMAT " elements but y %" G_GUINT64_FORMAT, counts[0],
             counts[1]);
  return -1;
}

static int no_cuda_launch(const DrKLaunch *l) {
  (void)l;
  return 100; /* cudaErrorNoDevice */
}

static const DrKParam add_params[] = {
    {.name = "x", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_READ},
    {.name = "y", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_WRITE},
    {.name = "a", .type = DR_ELEM_F32, .optional = 1, .def = 1.0},
};

static const DrKernelDef add_def = {.name = "offset_f32",
                                    .summary = "y = x + a",
                                    .params = add_params,
                                    .n_params = 3,
                                    .grid_over = 0,
                                    .block = 256,
                                    .launch = no_cuda_launch,
                                    .host = add_host,
                                    .check = add_check};

static const DrKernelDef launch_only_def = {
    .name = "gpu_only", .params = add_params, .n_params = 3, .grid_over = 0, .launch = no_cuda_launch};

static void test_user_kernel(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("user");
  g_assert_true(dr_pipeline_register_kernel(p, &add_def, &error));
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "x", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "out", DR_ELEM_F32, 64, DR_WHERE_HOST, &error));
  g_autofree char *save = g_build_filename(g_get_tmp_dir(), "api_user_kernel.bin", NULL);
  g_assert_true(dr_pipeline_buffer_save(p, "out", save, &error));
  DrNamedArg lo[] = {DR_NAMED_SLICE("x", "x", 0, 32), DR_NAMED_SLICE("y", "y", 0, 32)}; /* a left out: 1.0 */
  g_assert_true(dr_pipeline_add_kernel_node(p, "add_lo", "offset_f32", lo, 2, &error));
  DrNamedArg hi[] = {DR_NAMED_SLICE("x", "x", 32, 64), DR_NAMED_INT("a", 100),
                     DR_NAMED_SLICE("y", "y", 32, 64)};
  g_assert_true(dr_pipeline_add_kernel_node(p, "add_hi", "offset_f32", hi, 3, &error));
  g_assert_true(dr_pipeline_add_copy(p, "down", DR_WHOLE("y"), DR_WHOLE("out"), &error));
  g_assert_no_error(error);
  /* The kernel's check runs at add time. */
  DrNamedArg bad[] = {DR_NAMED_SLICE("x", "x", 0, 16), DR_NAMED_SLICE("y", "y", 0, 32)};
  g_assert_false(dr_pipeline_add_kernel_node(p, "bad", "offset_f32", bad, 2, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "<api>:4:1: error: node 'bad': kernel 'offset_f32': x has 16 elements but y 32");
  g_clear_error(&error);
  /* Registration errors. */
  g_assert_false(dr_pipeline_register_kernel(p, &add_def, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "duplicate kernel 'offset_f32'"));
  g_clear_error(&error);
  DrKernelDef clash = add_def;
  clash.name = "scale_f32";
  g_assert_false(dr_pipeline_register_kernel(p, &clash, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);
  DrKernelDef none = add_def;
  none.name = "none";
  none.launch = NULL;
  none.host = NULL;
  g_assert_false(dr_pipeline_register_kernel(p, &none, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "neither launch nor host"));
  g_clear_error(&error);
  static const DrKParam dup_params[] = {{.name = "x", .type = DR_ELEM_F32, .is_pointer = 1},
                                        {.name = "x", .type = DR_ELEM_F32, .is_pointer = 1}};
  DrKernelDef dup = add_def;
  dup.name = "dup";
  dup.params = dup_params;
  dup.n_params = 2;
  g_assert_false(dr_pipeline_register_kernel(p, &dup, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "parameter 'x' declared twice"));
  g_clear_error(&error);
  static const DrKParam u8_scalar[] = {{.name = "v", .type = DR_ELEM_U8}};
  DrKernelDef badscalar = add_def;
  badscalar.name = "badscalar";
  badscalar.params = u8_scalar;
  badscalar.n_params = 1;
  badscalar.grid_over = -1;
  g_assert_false(dr_pipeline_register_kernel(p, &badscalar, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);

  /* YAML cannot say a registered kernel. */
  g_autoptr(GString) yaml = g_string_new("keep");
  g_assert_false(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_cmpstr(yaml->str, ==, "keep");
  g_clear_error(&error);

  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  /* The two halves are independent. */
  g_assert_cmpuint(dr_stream_plan_width(plan), ==, 2);
  DrRunSettings rs = host_settings(p, 2, 1, TRUE);
  rs.delay_seed = 3;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(save, &bytes, &len, &error));
  g_assert_cmpuint(len, ==, 64 * sizeof(float));
  const float *out = (const float *)bytes;
  for (guint i = 0; i < 64; i++) g_assert_cmpfloat(out[i], ==, (float)i + (i < 32 ? 1.0f : 100.0f));
  g_unlink(save);
}

/* dr_pipeline_buffer_verify_*: the YAML's `verify:` from C, with the same
 * tolerance rule, and written back as YAML. */
static void test_buffer_verify_rules(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("rules");
  g_assert_true(dr_pipeline_add_buffer(p, "a", DR_ELEM_F64, 8, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "b", DR_ELEM_I64, 8, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_verify_tolerance(p, "a", 1e-12, 0.25, &error));
  g_assert_true(dr_pipeline_buffer_verify_skip(p, "b", &error));
  g_assert_no_error(error);
  g_assert_false(dr_pipeline_buffer_verify_tolerance(p, "a", -1.0, 0.0, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "<api:buffers>:1:1: error: buffer 'a', key 'verify': rtol must be a finite number >= 0");
  g_clear_error(&error);
  g_assert_false(dr_pipeline_buffer_verify_tolerance(p, "a", 0.0, NAN, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);
  g_assert_false(dr_pipeline_buffer_verify_skip(p, "c", &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_nonnull(strstr(yaml->str, "verify: {rtol: 9.9999999999999998e-13, atol: 0.25}"));
  g_assert_nonnull(strstr(yaml->str, "verify: skip"));
}

static void test_user_kernel_no_host_twin(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("gpu-only");
  g_assert_true(dr_pipeline_register_kernel(p, &launch_only_def, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 8, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 8, DR_WHERE_DEVICE, &error));
  DrNamedArg a[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "k", "gpu_only", a, 2, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 1, 0, FALSE);
  /* Unavailable on this backend (exit 69), found before anything runs. */
  g_assert_null(dr_stream_plan_run(plan, &rs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_nonnull(strstr(error->message, "kernel 'gpu_only' has no host twin"));
  g_assert_true(g_str_has_prefix(error->message, "<api>:1:1: error: node 'k': "));
}

/* ---- callbacks ------------------------------------------------------------------ */

typedef struct {
  gint calls;
  gint order_ok; /* set when `after` saw `before` run first in the same iteration */
  gint before_calls;
} Counter;

static void count_cb(void *data) { g_atomic_int_inc(&((Counter *)data)->calls); }

static void before_cb(void *data) { g_atomic_int_inc(&((Counter *)data)->before_calls); }

static void after_cb(void *data) {
  Counter *c = data;
  /* Runs after before_cb of the same iteration: counts match then. */
  if (g_atomic_int_get(&c->before_calls) == g_atomic_int_get(&c->calls) + 1) g_atomic_int_inc(&c->order_ok);
  g_atomic_int_inc(&c->calls);
}

static void test_callback_counts(void) {
  g_autoptr(GError) error = NULL;
  Counter c = {0}, d = {0};
  g_autoptr(DrPipeline) p = dr_pipeline_new("cb");
  g_assert_true(dr_pipeline_add_callback(p, "count", count_cb, &c, &error));
  g_assert_true(dr_pipeline_add_callback(p, "first", before_cb, &d, &error));
  g_assert_true(dr_pipeline_add_callback(p, "second", after_cb, &d, &error));
  g_assert_true(dr_pipeline_node_after(p, "second", "first", &error));
  g_assert_no_error(error);
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_false(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 3, 2, FALSE);
  rs.delay_seed = 11;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_run_report_n_nodes(r), ==, 3);
  g_assert_cmpstr(dr_run_report_node_op(r, 0), ==, "host");
  g_assert_cmpint(c.calls, ==, 5); /* warmup + iterations */
  g_assert_cmpint(d.calls, ==, 5);
  g_assert_cmpint(d.before_calls, ==, 5);
  g_assert_cmpint(d.order_ok, ==, 5);
  /* --verify runs the serial plan as many times again. */
  c = (Counter){0};
  d = (Counter){0};
  rs.verify = TRUE;
  g_autoptr(DrRunReport) r2 = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(c.calls, ==, 10);
  g_assert_cmpint(d.order_ok, ==, 10);
  g_assert_cmpint(dr_run_report_verified(r2), ==, DR_VERIFIED_PASS);
}

/* x = iota, y = alpha * x (node "s"), z += x (node "acc"): a runner on
 * the host backend. */
static DrPipeline *runner_pipeline(void) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = dr_pipeline_new("runner");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "x", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 64, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "z", DR_ELEM_F32, 64, DR_WHERE_DEVICE, &error));
  DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
  DrNamedArg aargs[] = {DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("y", "z")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "acc", "axpy_f32", aargs, 3, &error));
  g_assert_true(
      dr_pipeline_add_kernel_node(p, "wait", "spin", (DrNamedArg[]){DR_NAMED_INT("ns", 10)}, 1, &error));
  g_assert_no_error(error);
  return p;
}

static void read_f32(DrRunner *r, const char *buffer, float *out) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_runner_read_buffer(r, buffer, out, 64 * sizeof(float), &error));
  g_assert_no_error(error);
}

/* One setup, many runs: buffers carry over (z accumulates), a changed
 * scalar takes effect at the next run and is rebound once, and the change
 * is in the pipeline (its YAML). */
static void test_runner_host(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = runner_pipeline();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 2, 1, FALSE);
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_backend(r), ==, "host");
  float y[64], z[64];
  g_autoptr(DrRunReport) r1 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_run_report_iterations(r1), ==, 2);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  read_f32(r, "y", y);
  read_f32(r, "z", z);
  for (int i = 0; i < 64; i++) {
    g_assert_cmpfloat(y[i], ==, 2.0f * i);
    g_assert_cmpfloat(z[i], ==, 3.0f * i); /* three iterations, warmup included */
  }
  g_assert_true(dr_runner_set_float(r, "s", "alpha", 3.5, &error));
  g_assert_true(dr_runner_set_int(r, "acc", "alpha", -1, &error)); /* an integer for a float parameter */
  g_assert_true(dr_runner_set_int(r, "wait", "ns", 20, &error));
  g_assert_no_error(error);
  g_autoptr(DrRunReport) r2 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
  read_f32(r, "y", y);
  read_f32(r, "z", z);
  for (int i = 0; i < 64; i++) {
    g_assert_cmpfloat(y[i], ==, 3.5f * i);
    g_assert_cmpfloat(z[i], ==, 0.0f); /* 3i, then three times -i */
  }
  g_autoptr(DrRunReport) r3 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_nonnull(strstr(yaml->str, "\"alpha\": 3.5"));
  g_assert_nonnull(strstr(yaml->str, "\"ns\": 20"));
}

/* Every refusal names what is wrong and changes nothing. */
static void test_runner_errors(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = runner_pipeline();
  g_assert_true(dr_pipeline_add_memset(p, "m", DR_WHOLE("y"), 0, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 1, 0, TRUE);
  g_assert_null(dr_runner_new(plan, &rs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "verify"));
  g_clear_error(&error);
  rs.verify = FALSE;
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  static const struct {
    const char *node, *param;
    gboolean is_int;
    gint64 i;
    double f;
    const char *expect;
  } cases[] = {
      {"sx", "alpha", FALSE, 0, 1.0, "unknown node 'sx' (did you mean 's'?)"},
      {"m", "value", TRUE, 1, 0, "node 'm' is a memset node: only kernel arguments can change"},
      {"s", "alpa", FALSE, 0, 1.0,
       "node 's': kernel 'scale_f32' has no parameter 'alpa' (did you mean 'alpha'?)"},
      {"s", "x", FALSE, 0, 1.0, "node 's': parameter 'x' is a buffer"},
      {"s", "alpha", FALSE, 0, INFINITY, "node 's': parameter 'alpha': not a finite number"},
      {"wait", "ns", FALSE, 0, 5.0, "node 'wait': parameter 'ns' (i64) needs an integer"},
      {"wait", "ns", TRUE, -5, 0, "ns must be in 0..60000000000 (it is -5)"},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    gboolean ok = cases[k].is_int ? dr_runner_set_int(r, cases[k].node, cases[k].param, cases[k].i, &error)
                                  : dr_runner_set_float(r, cases[k].node, cases[k].param, cases[k].f, &error);
    g_assert_false(ok);
    g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
    if (strstr(error->message, cases[k].expect) == NULL)
      g_error("case %u: '%s' does not contain '%s'", k, error->message, cases[k].expect);
    g_clear_error(&error);
  }
  float y[64];
  g_assert_false(dr_runner_read_buffer(r, "y", y, sizeof y - 1, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_runner_read_buffer(r, "q", y, sizeof y, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);
  /* Nothing changed: the next run binds nothing; one iteration of
   * z += 1 * x. */
  g_autoptr(DrRunReport) rep = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  float z[64];
  read_f32(r, "z", z);
  for (int i = 0; i < 64; i++) g_assert_cmpfloat(z[i], ==, (float)i);
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_nonnull(strstr(yaml->str, "\"alpha\": 2.0"));
  g_assert_nonnull(strstr(yaml->str, "\"ns\": 10"));
}

typedef struct {
  gint calls;
  volatile sig_atomic_t stop;
} Stopper;

static void stop_after_three(void *data) {
  Stopper *st = data;
  if (g_atomic_int_add(&st->calls, 1) + 1 == 3) __atomic_store_n(&st->stop, 1, __ATOMIC_RELAXED);
}

/* DrRunSettings.stop ends a run after the iteration in flight. */
static void test_callback_stop(void) {
  g_autoptr(GError) error = NULL;
  Stopper st = {0};
  g_autoptr(DrPipeline) p = dr_pipeline_new("stop");
  g_assert_true(dr_pipeline_add_callback(p, "tick", stop_after_three, &st, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = host_settings(p, 50, 0, TRUE);
  rs.stop = &st.stop;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_true(dr_run_report_interrupted(r));
  g_assert_cmpint(st.calls, ==, 3); /* and no verify run after it */
  g_assert_cmpuint(dr_run_report_iterations(r), ==, 3);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_NOT_RUN);
  rs.stop = NULL;
  g_autoptr(DrRunReport) full = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_false(dr_run_report_interrupted(full));
  g_assert_cmpuint(dr_run_report_iterations(full), ==, 50);
}

/* ---- threads -------------------------------------------------------------------- */

/* Builds a pipeline, writes it as YAML, loads that YAML back (the parser
 * on this thread) and plans and runs what it loaded. */
static gpointer build_plan_run_thread(gpointer data) {
  (void)data;
  for (int i = 0; i < 3; i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) built = build_chunked();
    g_autoptr(GString) yaml = g_string_new(NULL);
    g_assert_true(dr_pipeline_write_yaml(built, yaml, &error));
    g_assert_no_error(error);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("thread.yaml", yaml->str, (gssize)yaml->len, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, dr_pipeline_n_nodes(built));
    g_autofree char *want = plan_json(built);
    g_autofree char *got = plan_json(p);
    g_assert_cmpstr(got, ==, want);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    DrRunSettings rs = host_settings(p, 2, 0, TRUE);
    FILE *null_out = fopen("/dev/null", "w");
    rs.host_output = null_out;
    g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
    fclose(null_out);
    g_assert_no_error(error);
    g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
  }
  return NULL;
}

/* The header promises that distinct pipelines work from distinct threads
 * (run under --config=tsan to mean something more than "no crash", and
 * under --config=asan to see that a thread's exit leaves nothing of the
 * parser behind). */
static void test_threads_distinct_pipelines(void) {
  GThread *t[4];
  for (int i = 0; i < 4; i++) t[i] = g_thread_new("api-test", build_plan_run_thread, NULL);
  for (int i = 0; i < 4; i++) g_thread_join(t[i]);
}

/* Under --config=tsan: GLib is linked statically and not instrumented,
 * and its locks are futexes, so ThreadSanitizer cannot see the locking of
 * its slice allocator and quark table (both documented thread-safe) and
 * reports memory handed between threads by them. Only those frames. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
  return "race:slab_allocator_alloc_chunk\n"
         "race:magazine_chain_pop_head\n"
         "race:thread_memory_magazine1_alloc\n"
         "race:quark_strdup\n"
         "race:g_quark_from_string\n";
}

/* The message of an error after its "FILE:LINE:COL: error: " prefix, up
 * to the end of its first line: what both front ends must agree on. */
static char *message_text(const GError *e) {
  const char *m = strstr(e->message, "error: ");
  g_assert_nonnull(m);
  m += strlen("error: ");
  const char *nl = strchr(m, '\n');
  return nl ? g_strndup(m, (gsize)(nl - m)) : g_strdup(m);
}

/* The same mistake, once as a YAML node and once through dr_pipeline_add_*:
 * one builder (ir/build.h), so the same message, only the location differs. */
static gboolean same_mistake_api(DrPipeline *p, int i, GError **e) {
  static const DrNamedArg alpah[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpah", 2.0),
                                     DR_NAMED_WHOLE("y", "y")};
  static const DrNamedArg host_x[] = {DR_NAMED_WHOLE("x", "h"), DR_NAMED_FLOAT("alpha", 2.0),
                                      DR_NAMED_WHOLE("y", "y")};
  static const DrNamedArg u8_x[] = {DR_NAMED_WHOLE("x", "b"), DR_NAMED_FLOAT("alpha", 2.0),
                                    DR_NAMED_WHOLE("y", "y")};
  static const DrNamedArg no_y[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0)};
  static const DrNamedArg us[] = {DR_NAMED_INT("us", -5)};
  static const DrNamedArg dev[] = {DR_NAMED_WHOLE("buffer", "x")};
  static const DrNamedArg short_y[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0),
                                       DR_NAMED_SLICE("y", "y", 0, 8)};
  switch (i) {
    case 0:
      return dr_pipeline_add_noop(p, "a:b@c", e);
    case 1:
      return dr_pipeline_add_noop(p, "up/0", e);
    case 2:
      return dr_pipeline_add_noop(p, "has space", e);
    case 3:
      return dr_pipeline_add_copy(p, "n", DR_WHOLE("xx"), DR_WHOLE("y"), e);
    case 4:
      return dr_pipeline_add_copy(p, "n", DR_SLICE("x", 0, 20), DR_WHOLE("y"), e);
    case 5:
      return dr_pipeline_add_copy(p, "n", DR_SLICE("x", 8, 4), DR_WHOLE("y"), e);
    case 6:
      return dr_pipeline_add_copy(p, "n", DR_SLICE("x", 0, 8), DR_WHOLE("y"), e);
    case 7:
      return dr_pipeline_add_kernel_node(p, "n", "scale_f32", alpah, 3, e);
    case 8:
      return dr_pipeline_add_kernel_node(p, "n", "scale_f32", host_x, 3, e);
    case 9:
      return dr_pipeline_add_kernel_node(p, "n", "scale_f32", u8_x, 3, e);
    case 10:
      return dr_pipeline_add_kernel_node(p, "n", "scale_f32", no_y, 2, e);
    case 11:
      return dr_pipeline_add_kernel_node(p, "n", "scal_f32", no_y, 2, e);
    case 12:
      return dr_pipeline_add_host(p, "n", "sleep", us, 1, e);
    case 13:
      return dr_pipeline_add_host(p, "n", "checksum", dev, 1, e);
    case 14:
      return dr_pipeline_add_host(p, "n", "prnt", NULL, 0, e);
    case 15:
      return dr_pipeline_add_alloc(p, "n", "h", e);
    case 16:
      return dr_pipeline_add_free(p, "n", "zz", e);
    case 17:
      return dr_pipeline_add_kernel_node(p, "n", "scale_f32", short_y, 3, e);
    case 18:
      return dr_pipeline_add_buffer(p, "b/1", DR_ELEM_F32, 4, DR_WHERE_DEVICE, e);
    case 19:
      return dr_pipeline_add_buffer(p, "z", DR_ELEM_F32, 0, DR_WHERE_DEVICE, e);
    default:
      return dr_pipeline_add_buffer(p, "z", DR_ELEM_F64, G_GUINT64_CONSTANT(1) << 61, DR_WHERE_DEVICE, e);
  }
}

static void test_errors_same_as_yaml(void) {
  static const char *const nodes[] = {
      "  a:b@c: {op: noop}\n",
      "  up/0: {op: noop}\n",
      "  'has space': {op: noop}\n",
      "  n: {op: copy, src: xx, dst: y}\n",
      "  n: {op: copy, src: 'x[0:20]', dst: y}\n",
      "  n: {op: copy, src: 'x[8:4]', dst: y}\n",
      "  n: {op: copy, src: 'x[0:8]', dst: y}\n",
      "  n: {op: kernel, kernel: scale_f32, args: {x: x, alpah: 2.0, y: y}}\n",
      "  n: {op: kernel, kernel: scale_f32, args: {x: h, alpha: 2.0, y: y}}\n",
      "  n: {op: kernel, kernel: scale_f32, args: {x: b, alpha: 2.0, y: y}}\n",
      "  n: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0}}\n",
      "  n: {op: kernel, kernel: scal_f32, args: {x: x, alpha: 2.0}}\n",
      "  n: {op: host, fn: sleep, args: {us: -5}}\n",
      "  n: {op: host, fn: checksum, args: {buffer: x}}\n",
      "  n: {op: host, fn: prnt}\n",
      "  n: {op: alloc, buffer: h}\n",
      "  n: {op: free, buffer: zz}\n",
      "  n: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: 'y[0:8]'}}\n",
  };
  static const char *const buffers[] = {"  b/1: {type: f32, count: 4}\n", "  z: {type: f32, count: 0}\n",
                                        "  z: {type: f64, count: 2305843009213693952}\n"};
  for (int i = 0; i < (int)G_N_ELEMENTS(nodes) + (int)G_N_ELEMENTS(buffers); i++) {
    gboolean is_node = i < (int)G_N_ELEMENTS(nodes);
    g_autofree char *yaml = g_strdup_printf(
        "dagrun: 1\nbuffers:\n  x: {type: f32, count: 16}\n  y: {type: f32, count: 16}\n"
        "  h: {type: f32, count: 16, where: host}\n  b: {type: u8, count: 16}\n%snodes:\n%s",
        is_node ? "" : buffers[i - G_N_ELEMENTS(nodes)], is_node ? nodes[i] : "  a: {op: noop}\n");
    g_autoptr(GError) ye = NULL;
    g_autoptr(DrPipeline) loaded = dr_pipeline_load_string("same", yaml, -1, &ye);
    g_assert_null(loaded);
    g_assert_error(ye, DR_ERROR, DR_ERROR_INVALID);

    g_autoptr(GError) ae = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_new("same");
    g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &ae));
    g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &ae));
    g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, 16, DR_WHERE_HOST, &ae));
    g_assert_true(dr_pipeline_add_buffer(p, "b", DR_ELEM_U8, 16, DR_WHERE_DEVICE, &ae));
    g_assert_false(same_mistake_api(p, i, &ae));
    g_assert_error(ae, DR_ERROR, DR_ERROR_INVALID);

    g_autofree char *from_yaml = message_text(ye);
    g_autofree char *from_api = message_text(ae);
    g_assert_cmpstr(from_api, ==, from_yaml);
  }
}

/* dr_pipeline_set_memory_limit: on a loaded (validated) pipeline it runs
 * the memory pass at once (one edge for three independent scratch buffers
 * under a limit of two, reported in the plan's JSON); below the serial
 * peak it fails as a bad pipeline naming the peak; once planned it is a
 * usage error. The curve ends at the unconstrained bound. */
static void test_memory_limit(void) {
  static const char yaml[] =
      "dagrun: 1\n"
      "name: limits\n"
      "buffers:\n"
      "  s0: {type: f32, count: 1024}\n"
      "  s1: {type: f32, count: 1024}\n"
      "  s2: {type: f32, count: 1024}\n"
      "nodes:\n"
      "  a0: {op: alloc, buffer: s0}\n"
      "  m0: {op: memset, dst: s0, value: 0}\n"
      "  f0: {op: free, buffer: s0}\n"
      "  a1: {op: alloc, buffer: s1}\n"
      "  m1: {op: memset, dst: s1, value: 0}\n"
      "  f1: {op: free, buffer: s1}\n"
      "  a2: {op: alloc, buffer: s2}\n"
      "  m2: {op: memset, dst: s2, value: 0}\n"
      "  f2: {op: free, buffer: s2}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("limits.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_pipeline_n_edges(p), ==, 6);
  g_assert_false(dr_pipeline_set_memory_limit(p, 4095, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "below the serial peak 4096 bytes"));
  g_clear_error(&error);
  g_assert_true(dr_pipeline_set_memory_limit(p, 8192, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(dr_pipeline_n_edges(p), ==, 7);
  g_autoptr(GString) curve = g_string_new(NULL);
  g_assert_true(dr_pipeline_write_memory_curve(p, 3, curve, &error));
  g_assert_nonnull(strstr(curve->str, "12.0\xc2\xa0KiB: width 3"));
  g_assert_nonnull(strstr(curve->str, "4.0\xc2\xa0KiB: width 1"));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_stream_plan_width(plan), ==, 2);
  g_autoptr(GString) json = g_string_new(NULL);
  dr_stream_plan_write_json(plan, json);
  g_assert_nonnull(strstr(json->str, "\"added_edges\": [{\"from\": \"f0\", \"to\": \"a1\"}]"));
  g_assert_false(dr_pipeline_set_memory_limit(p, 4096, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/api/version", test_version);
  g_test_add_func("/api/memory-limit", test_memory_limit);
  g_test_add_func("/api/abi", test_abi);
  g_test_add_func("/api/build/plan-run", test_build_plan_run);
  g_test_add_func("/api/build/plan-owns-pipeline", test_plan_owns_pipeline);
  g_test_add_func("/api/build/plan-profile", test_plan_profile);
  g_test_add_func("/api/build/init-file-memset-save", test_init_file_memset_save);
  g_test_add_func("/api/build/run-settings", test_run_settings);
  g_test_add_func("/api/misuse/null", test_misuse_null);
  g_test_add_func("/api/misuse/indexes", test_misuse_indexes);
  g_test_add_func("/api/order/frozen", test_order_frozen);
  g_test_add_func("/api/order/failed-stays-failed", test_order_failed_stays_failed);
  g_test_add_func("/api/errors/nodes", test_errors_nodes);
  g_test_add_func("/api/errors/validate", test_errors_validate);
  g_test_add_func("/api/errors/load", test_errors_load);
  g_test_add_func("/api/errors/same-as-yaml", test_errors_same_as_yaml);
  g_test_add_func("/api/yaml/round-trip-files", test_yaml_round_trip_files);
  g_test_add_func("/api/yaml/round-trip-api", test_yaml_round_trip_api);
  g_test_add_func("/api/yaml/unsayable", test_yaml_unsayable);
  g_test_add_func("/api/kernel/user", test_user_kernel);
  g_test_add_func("/api/kernel/no-host-twin", test_user_kernel_no_host_twin);
  g_test_add_func("/api/build/verify-rules", test_buffer_verify_rules);
  g_test_add_func("/api/callback/counts", test_callback_counts);
  g_test_add_func("/api/runner/host", test_runner_host);
  g_test_add_func("/api/runner/errors", test_runner_errors);
  g_test_add_func("/api/callback/stop", test_callback_stop);
  g_test_add_func("/api/threads/distinct-pipelines", test_threads_distinct_pipelines);
  return g_test_run();
}
