/* external_test.c: the library as a program embedding it uses it, on the
 * host backend: buffers bound to the caller's memory
 * (dr_runner_bind_buffer), new input bytes between runs
 * (dr_runner_write_buffer), runs ordered against a caller's stream
 * (dr_runner_run_on_stream: NULL only, here), messages through g_log in
 * the "dagrun" domain and never on stderr, the defaults the header's
 * comments state, and g_autoptr on every public type. The CUDA paths of
 * the same functions are tests/fault/external_test.c (fake CUDA) and
 * tests/api/api_gpu_test.c (the device). */
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "include/dagrun/dagrun.h"

#define N 64

/* x (iota) -> y = 2x (node "s"); z += x (node "acc"); h: a host buffer
 * that "dl" copies y into and "sum" checksums; t: stream-ordered. */
static DrPipeline *pipeline(void) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = dr_pipeline_new("external");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "x", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "z", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "t", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
  DrNamedArg aargs[] = {DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("y", "z")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "acc", "axpy_f32", aargs, 3, &error));
  g_assert_true(dr_pipeline_add_copy(p, "dl", DR_WHOLE("y"), DR_WHOLE("h"), &error));
  g_assert_true(dr_pipeline_add_alloc(p, "ta", "t", &error));
  g_assert_true(dr_pipeline_add_memset(p, "tm", DR_WHOLE("t"), 0, &error));
  g_assert_true(dr_pipeline_add_free(p, "tf", "t", &error));
  g_assert_no_error(error);
  return p;
}

static DrRunner *host_runner(DrStreamPlan *plan, const DrPipeline *p, guint iterations, guint warmup) {
  g_autoptr(GError) error = NULL;
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = iterations;
  rs.warmup = warmup;
  DrRunner *r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  return r;
}

static void read_f32(DrRunner *r, const char *buffer, float *out) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_runner_read_buffer(r, buffer, out, N * sizeof(float), &error));
  g_assert_no_error(error);
}

/* The caller's memory is the buffer: read by the kernels, written by
 * them, copied to a bound host buffer; init does not touch it; a write
 * between runs is what the next run reads. */
static void test_bind_host(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = pipeline();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunner) r = host_runner(plan, p, 1, 0);
  float xs[N], ys[N], hs[N], zs[N];
  for (int i = 0; i < N; i++) {
    xs[i] = 10.0f * i;
    ys[i] = hs[i] = -1.0f;
    zs[i] = 1.0f;
  }
  g_assert_true(dr_runner_bind_buffer(r, "x", xs, sizeof xs, &error));
  g_assert_true(dr_runner_bind_buffer(r, "y", ys, sizeof ys, &error));
  g_assert_true(dr_runner_bind_buffer(r, "h", hs, sizeof hs, &error));
  g_assert_true(dr_runner_bind_buffer(r, "z", zs, sizeof zs, &error));
  g_assert_no_error(error);
  /* Binding applies no init: the caller's bytes stay. */
  g_assert_cmpfloat(xs[3], ==, 30.0f);
  g_assert_cmpfloat(ys[3], ==, -1.0f);
  g_autoptr(DrRunReport) r1 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
  for (int i = 0; i < N; i++) {
    g_assert_cmpfloat(ys[i], ==, 20.0f * i);
    g_assert_cmpfloat(hs[i], ==, 20.0f * i);
    g_assert_cmpfloat(zs[i], ==, 1.0f + 10.0f * i);
  }
  /* read_buffer reads the bound memory too. */
  float back[N];
  read_f32(r, "y", back);
  g_assert_cmpfloat(back[5], ==, 100.0f);
  /* New input bytes: elements 4..7 of x. */
  const float in[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  g_assert_true(dr_runner_write_buffer(r, "x", 4 * sizeof(float), in, sizeof in, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(xs[4], ==, 1.0f); /* the bound memory is the buffer */
  g_autoptr(DrRunReport) r2 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  for (int i = 0; i < N; i++) {
    float x = i >= 4 && i < 8 ? in[i - 4] : 10.0f * i;
    g_assert_cmpfloat(ys[i], ==, 2.0f * x);
    g_assert_cmpfloat(hs[i], ==, 2.0f * x);
  }
  /* A write into a buffer dagrun owns. */
  float zeros[N] = {0};
  g_autoptr(DrPipeline) q = pipeline();
  g_autoptr(DrStreamPlan) qplan = dr_pipeline_plan(q, NULL, &error);
  g_autoptr(DrRunner) qr = host_runner(qplan, q, 1, 0);
  g_assert_true(dr_runner_write_buffer(qr, "x", 0, zeros, sizeof zeros, &error));
  g_assert_true(dr_runner_write_buffer(qr, "x", sizeof zeros - sizeof(float), in, sizeof(float), &error));
  g_assert_true(dr_runner_write_buffer(qr, "x", sizeof zeros, in, 0, &error)); /* empty, at the end */
  g_assert_no_error(error);
  g_autoptr(DrRunReport) q1 = dr_runner_run(qr, &error);
  g_assert_no_error(error);
  read_f32(qr, "y", back);
  for (int i = 0; i < N - 1; i++) g_assert_cmpfloat(back[i], ==, 0.0f);
  g_assert_cmpfloat(back[N - 1], ==, 2.0f);
}

/* Every refusal names what is wrong, with its error code, and changes
 * nothing. */
static void test_bind_errors(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = pipeline();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_autoptr(DrRunner) r = host_runner(plan, p, 1, 0);
  float xs[N];
  g_assert_false(dr_runner_bind_buffer(r, "xx", xs, sizeof xs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "unknown buffer 'xx'"));
  g_assert_nonnull(strstr(error->message, "'x'")); /* did you mean */
  g_clear_error(&error);
  g_assert_false(dr_runner_bind_buffer(r, "x", xs, sizeof xs - 1, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "buffer 'x' holds 256 bytes; the memory bound to it has 255"));
  g_clear_error(&error);
  g_assert_false(dr_runner_bind_buffer(r, "t", xs, sizeof xs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "buffer 't' is stream-ordered"));
  g_clear_error(&error);
  g_assert_false(dr_runner_write_buffer(r, "t", 0, xs, 4, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_runner_write_buffer(r, "x", 253, xs, 4, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_assert_nonnull(strstr(error->message, "buffer 'x' holds 256 bytes: cannot write 4 at offset 253"));
  g_clear_error(&error);
  g_assert_false(dr_runner_write_buffer(r, "x", G_MAXSIZE, xs, 4, &error)); /* no overflow */
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  g_assert_false(dr_runner_write_buffer(r, "nope", 0, xs, 4, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_clear_error(&error);
  /* A stream on the host backend: unavailable, exit code 69. */
  int not_a_stream;
  g_assert_false(dr_runner_run_on_stream(r, &not_a_stream, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_cmpint(dr_error_exit_code(error), ==, 69);
  g_clear_error(&error);
  /* Nothing changed: the runner still runs on its own memory. */
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  float y[N];
  read_f32(r, "y", y);
  g_assert_cmpfloat(y[7], ==, 14.0f);
  /* Programming errors are criticals in the "dagrun" domain. */
  g_test_expect_message("dagrun", G_LOG_LEVEL_CRITICAL, "*assertion*failed*");
  g_assert_false(dr_runner_bind_buffer(r, "x", NULL, sizeof xs, &error));
  g_test_assert_expected_messages();
  g_test_expect_message("dagrun", G_LOG_LEVEL_CRITICAL, "*assertion*failed*");
  g_assert_false(dr_runner_write_buffer(r, "x", 0, NULL, 4, &error));
  g_test_assert_expected_messages();
  g_assert_no_error(error);
}

static void count_cb(void *data) { g_atomic_int_inc((gint *)data); }

/* On the host, run_on_stream(NULL) is one untimed iteration, done when the
 * call returns; scalars changed before it apply to it. */
static void test_run_on_stream_host(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = pipeline();
  gint calls = 0;
  g_assert_true(dr_pipeline_add_callback(p, "cb", count_cb, &calls, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunner) r = host_runner(plan, p, 3, 1);
  g_assert_true(dr_runner_run_on_stream(r, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpint(calls, ==, 1);
  float z[N], y[N];
  read_f32(r, "z", z);
  g_assert_cmpfloat(z[3], ==, 3.0f);
  g_assert_true(dr_runner_set_float(r, "s", "alpha", 5.0, &error));
  g_assert_true(dr_runner_run_on_stream(r, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
  g_assert_cmpint(calls, ==, 2);
  read_f32(r, "y", y);
  g_assert_cmpfloat(y[3], ==, 15.0f);
  /* A run after them: warmup + iterations. */
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpint(calls, ==, 6);
  read_f32(r, "z", z);
  g_assert_cmpfloat(z[3], ==, 6.0f * 3.0f);
}

/* ---- messages ---------------------------------------------------------------- */

typedef struct {
  guint n;
  GString *text;
} Logged;

static void log_to(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {
  Logged *l = data;
  l->n++;
  g_string_append_printf(l->text, "%s\n", message);
}

static void silent(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {}

/* A run with backend auto on a machine without a GPU falls back to the
 * host: the library says so through g_log (domain "dagrun", a message), and
 * writes nothing to stderr itself. With a silencing handler nothing at all
 * reaches stderr. */
static void test_log_domain(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = pipeline();
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  Logged logged = {0, g_string_new(NULL)};
  guint id = g_log_set_handler("dagrun", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL | G_LOG_FLAG_RECURSION, log_to,
                               &logged);
  /* stderr into a file for the run. */
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("drlog-XXXXXX", &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunReport) rr = dr_stream_plan_run(plan, &rs, &error);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  g_log_remove_handler("dagrun", id);
  g_assert_no_error(error);
  g_autofree char *err = NULL;
  g_assert_true(g_file_get_contents(path, &err, NULL, NULL));
  g_remove(path);
  g_assert_cmpstr(err, ==, "");
  if (strcmp(dr_run_report_backend(rr), "host") == 0) {
    g_assert_cmpuint(logged.n, ==, 1);
    g_assert_nonnull(strstr(logged.text->str, "no usable CUDA device"));
    g_assert_nonnull(strstr(logged.text->str, "running on the host backend"));
  } else {
    g_assert_cmpuint(logged.n, ==, 0); /* a GPU: nothing to say */
  }
  g_string_free(logged.text, TRUE);
}

/* ---- the header says what the code does ---------------------------------------- */

/* The header's text with each comment line break (newline, spaces, '*')
 * and run of spaces made one space, so a phrase reads the same wherever
 * the comment wraps. */
static char *header_prose(void) {
  g_autofree char *h = NULL;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_get_contents("include/dagrun/dagrun.h", &h, NULL, &error));
  g_assert_no_error(error);
  g_autoptr(GRegex) wrap = g_regex_new("\\s*\\n\\s*\\*?\\s*|  +", 0, 0, NULL);
  return g_regex_replace_literal(wrap, h, -1, 0, " ", 0, NULL);
}

/* The integer after `prefix` in the header's text (the first occurrence). */
static guint64 header_number(const char *header, const char *prefix) {
  const char *at = strstr(header, prefix);
  if (at == NULL) g_error("dagrun.h no longer says \"%s\"", prefix);
  return g_ascii_strtoull(at + strlen(prefix), NULL, 10);
}

/* Each default the header's comments state, read from the header itself
 * and compared with what the library does. */
static void test_documented_defaults(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *h = header_prose();
  /* dr_pipeline_new: name NULL is "pipeline"; "(streams mode, 10
   * iterations, 2 warmup)". */
  g_assert_nonnull(strstr(h, "`name` (NULL: \"pipeline\")"));
  g_assert_nonnull(strstr(h, "default run settings (auto mode, "));
  guint64 iterations = header_number(h, "default run settings (auto mode, ");
  guint64 warmup = header_number(h, " iterations, ");
  g_autoptr(DrPipeline) p = dr_pipeline_new(NULL);
  g_assert_cmpstr(dr_pipeline_name(p), ==, "pipeline");
  DrRunSettings s;
  memset(&s, 0xAB, sizeof s); /* init sets every field */
  dr_run_settings_init(&s, p);
  g_assert_cmpint(s.mode, ==, DR_MODE_AUTO);
  g_assert_cmpuint(s.iterations, ==, iterations);
  g_assert_cmpuint(s.warmup, ==, warmup);
  /* "backend auto, node timing auto ...; the rest off or NULL". */
  g_assert_nonnull(strstr(h, "backend auto, node timing auto"));
  g_assert_cmpint(s.backend, ==, DR_BACKEND_AUTO);
  g_assert_cmpint(s.node_timing, ==, DR_TIMING_AUTO);
  g_assert_cmpint(s.device, ==, 0);
  g_assert_false(s.verify);
  g_assert_false(s.progress);
  g_assert_false(s.graph_fallback);
  g_assert_null(s.trace_path);
  g_assert_null(s.timeline_path);
  g_assert_null(s.host_output);
  g_assert_null(s.stop);
  g_assert_null(s.cuda_graph_dot_path);
  g_assert_cmpuint(s.delay_seed, ==, 0);
  g_assert_cmpuint(s.delay_max_us, ==, 0);
  /* A run with NULL settings does the documented iterations. */
  g_assert_true(dr_pipeline_add_noop(p, "n", &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  /* Silenced: backend auto may say it runs on the host. */
  guint id = g_log_set_handler("dagrun", G_LOG_LEVEL_MESSAGE, silent, NULL);
  g_autoptr(DrRunReport) rr = dr_stream_plan_run(plan, NULL, &error);
  g_log_remove_handler("dagrun", id);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_run_report_iterations(rr), ==, iterations);
  /* The stream cap: "else 32 when no CUDA context exists in the process
   * yet", "(an invalid value: the driver's default, 8)", "else none in
   * graph mode", the variable when set. */
  guint64 asked =
      header_number(h, "else CUDA_DEVICE_MAX_CONNECTIONS when set (an invalid value: the driver's default, ");
  guint64 fresh = header_number(h, "8); else ");
  g_autofree char *saved = g_strdup(g_getenv("CUDA_DEVICE_MAX_CONNECTIONS"));
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  /* The eager cap: one iteration, so auto means streams. */
  DrPlanSettings eager = {.iterations = 1};
  g_autoptr(DrStreamPlan) p1 = dr_pipeline_plan(p, &eager, &error);
  g_assert_no_error(error);
  if (strcmp(dr_run_report_backend(rr), "host") == 0) /* no CUDA context in this process */
    g_assert_cmpuint(dr_stream_plan_cap(p1), ==, fresh);
  g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", "banana", TRUE);
  g_autoptr(DrStreamPlan) p2 = dr_pipeline_plan(p, &eager, &error);
  g_assert_cmpuint(dr_stream_plan_cap(p2), ==, asked);
  g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", "5", TRUE);
  g_autoptr(DrStreamPlan) p3 = dr_pipeline_plan(p, &eager, &error);
  g_assert_cmpuint(dr_stream_plan_cap(p3), ==, 5);
  DrPlanSettings graph = {.mode_set = TRUE, .mode = DR_MODE_GRAPH};
  g_autoptr(DrStreamPlan) p4 = dr_pipeline_plan(p, &graph, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_stream_plan_cap(p4), ==, 0);
  if (saved)
    g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved, TRUE);
  else
    g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  /* The ranges the header states are the constants. */
  g_assert_cmpuint(header_number(h, "#define DR_MAX_STREAMS_MAX "), ==, DR_MAX_STREAMS_MAX);
  g_assert_cmpuint(header_number(h, "#define DR_DEVICE_MAX "), ==, DR_DEVICE_MAX);
  g_assert_true(dr_pipeline_set_max_streams(p, 0, &error) == FALSE); /* frozen now */
  g_clear_error(&error);
  /* "at most 20 errors are kept (dr_diagnostics_n_errors counts them all)". */
  guint64 kept = header_number(h, "in the order found; at most ");
  g_autoptr(GString) bad = g_string_new("dagrun: 1\nname: many\nnodes:\n");
  for (guint i = 0; i < kept + 5; i++) g_string_append_printf(bad, "  n%u: {op: bogus%u}\n", i, i);
  g_autofree char *dir = g_dir_make_tmp("drdefaults-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "many.yaml", NULL);
  g_assert_true(g_file_set_contents(file, bad->str, -1, NULL));
  g_autoptr(DrDiagnostics) d = dr_diagnostics_new();
  g_autoptr(DrPipeline) none = dr_pipeline_load_file_diagnostics(file, d, &error);
  g_assert_null(none);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  /* The parser reads on past the limit and counts every error. */
  g_assert_nonnull(strstr(h, "the parser reads the whole file and counts every error it finds"));
  g_assert_cmpuint(dr_diagnostics_n_errors(d), ==, kept + 5);
  guint n_err = 0;
  for (guint i = 0; i < dr_diagnostics_len(d); i++) {
    DrDiagnostic x;
    dr_diagnostics_get(d, i, &x);
    n_err += x.kind == DR_DIAGNOSTIC_ERROR;
  }
  g_assert_cmpuint(n_err, ==, kept);
  g_remove(file);
  g_rmdir(dir);
}

/* ---- g_autoptr on every public type --------------------------------------------- */

/* Every opaque type the header declares has a cleanup function, and
 * g_autoptr frees each (this test runs under ASan in CI: a leak fails it). */
static void test_autoptr(void) {
  g_autoptr(GError) error = NULL;
  g_autofree char *h = NULL;
  g_assert_true(g_file_get_contents("include/dagrun/dagrun.h", &h, NULL, &error));
  g_autoptr(GRegex) re = g_regex_new("^typedef struct (Dr[A-Za-z]+) \\1;$", G_REGEX_MULTILINE, 0, NULL);
  g_autoptr(GMatchInfo) m = NULL;
  guint n_types = 0;
  for (g_regex_match(re, h, 0, &m); g_match_info_matches(m); g_match_info_next(m, NULL)) {
    g_autofree char *type = g_match_info_fetch(m, 1);
    g_autofree char *cleanup = g_strdup_printf("G_DEFINE_AUTOPTR_CLEANUP_FUNC(%s, ", type);
    if (strstr(h, cleanup) == NULL) g_error("%s has no G_DEFINE_AUTOPTR_CLEANUP_FUNC", type);
    n_types++;
  }
  g_assert_cmpuint(n_types, ==, 5);
  {
    g_autoptr(DrPipeline) p = pipeline();
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = host_runner(plan, p, 1, 0);
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_autoptr(DrDiagnostics) d = dr_diagnostics_new();
    g_assert_no_error(error);
    g_assert_nonnull(rr);
    g_assert_nonnull(d);
  }
  { /* NULL is fine for each. */
    g_autoptr(DrPipeline) p = NULL;
    g_autoptr(DrStreamPlan) plan = NULL;
    g_autoptr(DrRunner) r = NULL;
    g_autoptr(DrRunReport) rr = NULL;
    g_autoptr(DrDiagnostics) d = NULL;
    (void)p, (void)plan, (void)r, (void)rr, (void)d;
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/api/external/bind-host", test_bind_host);
  g_test_add_func("/api/external/errors", test_bind_errors);
  g_test_add_func("/api/external/run-on-stream-host", test_run_on_stream_host);
  g_test_add_func("/api/log/domain", test_log_domain);
  g_test_add_func("/api/header/documented-defaults", test_documented_defaults);
  g_test_add_func("/api/header/autoptr", test_autoptr);
  return g_test_run();
}
