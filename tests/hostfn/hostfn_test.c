/* hostfn_test.c: host functions with declared arguments and host twins
 * from shared libraries (include/dagrun/hostfn.h, lib/hostlib.c), through
 * the command line in-process (dr__cli_run) and the C library:
 *  - the hazards come from the declared access modes (edges in the IR);
 *  - a host function between a copy that fills its input and one that
 *    reads its output verifies under seeded delays, and the same pipeline
 *    with the output declared `read` is caught by --verify;
 *  - the iteration count, the user data and a failing function (exit 70);
 *  - a user kernel's host twin runs and verifies on the host backend, also
 *    in a loop body (tests/gpu/loops/jacobi_user.yaml, against the exact
 *    solution);
 *  - what --check reports (exit 65) for a missing library, a file that is
 *    not one, a missing symbol, a missing twin function;
 *  - dr_pipeline_add_host_fn: hazards without dr_pipeline_node_after, and
 *    its refusals.
 * Runs in tests/hostfn of the runfiles tree, where libdr_test_hostfn.so
 * lies beside the YAML files. */
#include <glib.h>
#include <math.h>
#include <glib/gstdio.h>
#include <string.h>

#include "cli/cli.h"
#include "include/dagrun/dagrun.h"
#include "ir/graph.h"
#include "lib/load.h"

/* Runs the command line on argv (NULL-terminated); returns the exit code. */
static int cli(GString *out, GString *err, const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer) "dagrun");
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  g_string_truncate(out, 0);
  g_string_truncate(err, 0);
  int rc = dr__cli_run((int)argv->len - 1, (char **)argv->pdata, out, err);
  g_ptr_array_unref(argv);
  return rc;
}

/* The absolute path of the test library (in the runfiles tree). */
static char *lib_path;

/* Writes `yaml` with each "LIB" replaced by lib_path to NAME in the test's
 * temporary directory; returns that path (owned by the caller). */
static char *write_tmp(const char *name, const char *yaml) {
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), name, NULL);
  g_auto(GStrv) parts = g_strsplit(yaml, "LIB", -1);
  g_autofree char *text = g_strjoinv(lib_path, parts);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return g_steal_pointer(&path);
}

static DrGraph *load(const char *path) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  return g;
}

/* Whether g has an edge from node `from` to node `to` of `kind` on
 * buffer `buffer`. */
static gboolean has_edge(const DrGraph *g, const char *from, const char *to, DrEdgeKind kind,
                         const char *buffer) {
  DrId f = dr_graph_find_node(g, from), t = dr_graph_find_node(g, to), b = dr_graph_find_buffer(g, buffer);
  for (guint i = 0; i < g->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(g, i);
    if (e->from == f && e->to == t && e->kind == kind && e->buffer == b) return TRUE;
  }
  return FALSE;
}

static void test_hazards(void) {
  g_autoptr(DrGraph) g = load("chain.yaml");
  const DrNode *h = dr_graph_node(g, dr_graph_find_node(g, "halve"));
  g_assert_cmpuint(h->access_count, ==, 2);
  const DrAccess *src = dr_graph_access(g, h->access_first), *dst = dr_graph_access(g, h->access_first + 1);
  g_assert_cmpstr(dr_graph_buffer(g, src->buffer)->name, ==, "x_host");
  g_assert_cmpint(src->mode, ==, DR_ACCESS_READ);
  g_assert_cmpstr(dr_graph_buffer(g, dst->buffer)->name, ==, "y_host");
  g_assert_cmpint(dst->mode, ==, DR_ACCESS_WRITE);
  g_assert_true(has_edge(g, "down", "halve", DR_EDGE_RAW, "x_host"));
  g_assert_true(has_edge(g, "halve", "up", DR_EDGE_RAW, "y_host"));
  /* The race variant declares dst read: nothing orders up after halve. */
  g_autoptr(DrGraph) r = load("chain_race.yaml");
  g_assert_true(has_edge(r, "down", "halve", DR_EDGE_RAW, "x_host"));
  for (guint i = 0; i < r->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(r, i);
    g_assert_false(e->from == dr_graph_find_node(r, "halve") && e->to == dr_graph_find_node(r, "up"));
  }
  /* The IR dump names the library and the symbol. */
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  g_assert_cmpint(cli(out, err, "--dump-after=hazards", "chain.yaml", NULL), ==, 0);
  g_assert_nonnull(
      strstr(out->str, "node halve host lib=./libdr_test_hostfn.so symbol=dr_test_scale_into\n"));
  g_assert_nonnull(strstr(out->str, "  arg alpha = 0.5"));
}

static void test_verify_delays(void) {
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  for (int seed = 1; seed <= 4; seed++) {
    g_autofree char *flag = g_strdup_printf("--delay-seed=%d", seed);
    int rc = cli(out, err, "--backend=host", "--verify", flag, "chain.yaml", NULL);
    if (rc != 0) g_printerr("%s%s", out->str, err->str);
    g_assert_cmpint(rc, ==, 0);
    g_assert_nonnull(strstr(out->str, "verify: passed"));
  }
}

/* The hazard is what makes the run right: without it (dst declared
 * read), the seeded delays let `up` copy y_host before `halve` wrote it. */
static void test_race_caught(void) {
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  int caught = 0;
  for (int seed = 1; seed <= 4; seed++) {
    g_autofree char *flag = g_strdup_printf("--delay-seed=%d", seed);
    int rc = cli(out, err, "--backend=host", "--verify", "--iterations=1", "--warmup=0", flag,
                 "chain_race.yaml", NULL);
    g_assert_true(rc == 0 || rc == 1);
    caught += rc == 1;
  }
  g_assert_cmpint(caught, >=, 1);
}

static void test_fail(void) {
  const char *yaml =
      "dagrun: 1\n"
      "run: {iterations: 3, warmup: 0}\n"
      "buffers: {h: {type: i64, count: 2, where: host}}\n"
      "nodes:\n"
      "  no: {op: host, fn: {lib: LIB, symbol: dr_test_fail_second}}\n";
  g_autofree char *path = write_tmp("fail.yaml", yaml);
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  g_assert_cmpint(cli(out, err, "--backend=host", path, NULL), ==, 70);
  g_assert_nonnull(strstr(
      err->str,
      "node 'no' (stream 0): host function 'dr_test_fail_second' failed: node no refused in iteration 1"));
}

static void test_iteration(void) {
  const char *yaml =
      "dagrun: 1\n"
      "run: {iterations: 3, warmup: 2}\n"
      "buffers: {h: {type: i64, count: 2, where: host}}\n"
      "nodes:\n"
      "  note:\n"
      "    op: host\n"
      "    fn: {lib: ./libdr_test_hostfn.so, symbol: dr_test_note, params: [{name: out, type: i64*, access: "
      "write}, {name: k, type: i64}]}\n"
      "    args: {out: h, k: -7}\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("note.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_HOST;
  g_autoptr(DrRunner) r = dr_runner_new(plan, &s, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunReport) rep = dr_runner_run(r, &error);
  g_assert_no_error(error);
  gint64 h[2] = {0};
  g_assert_true(dr_runner_read_buffer(r, "h", h, sizeof h, &error));
  g_assert_no_error(error);
  g_assert_cmpint(h[0], ==, 4); /* 2 warmups and 3 iterations: the fifth call */
  g_assert_cmpint(h[1], ==, -7);
}

static void test_twin(void) {
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  int rc = cli(out, err, "--backend=host", "--verify", "--delay-seed=3", "twin.yaml", NULL);
  if (rc != 0) g_printerr("%s%s", out->str, err->str);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(out->str, "verify: passed"));
  /* The example pipeline of graphs/gpu with a twin from examples/. */
  rc = cli(out, err, "--backend=host", "--verify", "--iterations=1", "--warmup=0", "--delay-seed=5",
           "../../graphs/gpu/user_kernel_twin.yaml", NULL);
  if (rc != 0) g_printerr("%s%s", out->str, err->str);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(out->str, "verify: passed"));
}

/* tests/gpu/loops/jacobi_user.yaml on the host backend: a user kernel
 * (the Jacobi sweep) in a while body runs through its host twin
 * (examples/hostfns.c) every trip, verifies under seeded delays, and the
 * loop stops at convergence within 2e-3 of the exact solution
 * u[i] = 0.005 * i * (31 - i) (the CPU reference of the GPU check
 * gpu/loops/jacobi-user, which compares the device with this). */
static void test_twin_in_loop(void) {
  g_autofree char *root = g_canonicalize_filename("../..", NULL);
  g_autofree char *yaml = NULL;
  g_assert_true(g_file_get_contents("../../tests/gpu/loops/jacobi_user.yaml", &yaml, NULL, NULL));
  g_autofree char *save = g_build_filename(g_get_tmp_dir(), "jacobi_user_u.bin", NULL);
  g_autofree char *prefix = g_strconcat(root, "/", NULL);
  g_auto(GStrv) parts = g_strsplit(yaml, "../../../", -1);
  g_autofree char *abs = g_strjoinv(prefix, parts);
  g_autofree char *with_u = g_strdup_printf(", save: '%s'}\n  un:", save);
  g_auto(GStrv) at_u = g_strsplit(abs, "}\n  un:", 2);
  g_assert_cmpuint(g_strv_length(at_u), ==, 2);
  g_autofree char *text = g_strjoinv(with_u, at_u);
  g_autofree char *path = g_build_filename(g_get_tmp_dir(), "jacobi_user.yaml", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  int rc = cli(out, err, "--backend=host", "--verify", "--delay-seed=7", path, NULL);
  if (rc != 0) g_printerr("%s%s", out->str, err->str);
  g_assert_cmpint(rc, ==, 0);
  g_assert_nonnull(strstr(out->str, "verify: passed"));
  g_assert_nonnull(strstr(out->str, "loop solve: "));
  g_autofree char *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(save, &bytes, &len, NULL));
  g_assert_cmpuint(len, ==, 32 * sizeof(float));
  const float *u = (const float *)(const void *)bytes;
  double worst = 0;
  for (int i = 0; i < 32; i++) worst = MAX(worst, fabs(u[i] - 0.005 * i * (31 - i)));
  g_test_message("max |u - exact| %g", worst);
  g_assert_cmpfloat(worst, <=, 2e-3);
  g_assert_cmpfloat(u[15], >, 1.0); /* not the zeros it started from */
  g_unlink(save);
  g_unlink(path);
}

/* `dagrun --check` on `yaml` (write_tmp'd to check.yaml) exits 65 with
 * `want` in its diagnostics. */
static void check_error(const char *yaml, const char *want) {
  g_autofree char *path = write_tmp("check.yaml", yaml);
  g_autoptr(GString) out = g_string_new(NULL), err = g_string_new(NULL);
  int rc = cli(out, err, "--check", path, NULL);
  if (rc != 65 || strstr(err->str, want) == NULL) g_printerr("rc %d:\n%s", rc, err->str);
  g_assert_cmpint(rc, ==, 65);
  g_assert_nonnull(strstr(err->str, want));
}

static void test_check_errors(void) {
  check_error(
      "dagrun: 1\nnodes:\n  cb: {op: host, fn: {lib: ./nope.so, symbol: f}}\n",
      "check.yaml:3:28: error: node 'cb', fn, key 'lib': cannot open library './nope.so': no such file");
  g_autofree char *not_lib = g_canonicalize_filename("not_a_lib.so", NULL);
  g_autofree char *bad =
      g_strdup_printf("dagrun: 1\nnodes:\n  cb: {op: host, fn: {lib: %s, symbol: f}}\n", not_lib);
  g_autofree char *bad_want = g_strdup_printf(
      "check.yaml:3:28: error: node 'cb', fn, key 'lib': cannot open library '%s': ", not_lib);
  check_error(bad, bad_want);
  check_error("dagrun: 1\nnodes:\n  cb: {op: host, fn: {lib: LIB, symbol: nope}}\n",
              "error: node 'cb', fn, key 'symbol': library '");
  check_error("dagrun: 1\nnodes:\n  cb: {op: host, fn: {lib: LIB, symbol: nope}}\n",
              "libdr_test_hostfn.so' has no symbol 'nope'");
  check_error(
      "dagrun: 1\nkernels:\n  k:\n    ptx: k.ptx\n    params: [{name: y, type: f32*}]\n"
      "    host_twin: {lib: LIB, fn: nope}\nnodes: {n: {op: noop}}\n",
      "error: kernel 'k', host_twin, key 'fn': library '");
  check_error(
      "dagrun: 1\nbuffers: {h: {type: f32, count: 4, where: host}}\nnodes:\n"
      "  cb: {op: host, fn: {lib: LIB, symbol: dr_test_scale_into, params: [{name: "
      "src, type: f32*, access: sideways}]}, args: {src: h}}\n",
      "node 'cb', fn, key 'access': expected read, write or readwrite");
  /* A device buffer, and a missing argument, as for a built-in. */
  check_error(
      "dagrun: 1\nbuffers: {d: {type: f32, count: 4}}\nnodes:\n"
      "  cb: {op: host, fn: {lib: LIB, symbol: dr_test_scale_into, params: [{name: "
      "src, type: f32*, access: read}]}, args: {src: d}}\n",
      "host function 'dr_test_scale_into' runs on the CPU and needs a host buffer; 'd' lives on the device");
  check_error(
      "dagrun: 1\nbuffers: {h: {type: f32, count: 4, where: host}}\nnodes:\n"
      "  cb: {op: host, fn: {lib: LIB, symbol: dr_test_scale_into, params: [{name: "
      "src, type: f32*, access: read}, {name: a, type: f32}]}, args: {src: h}}\n",
      "missing argument 'a' of host function 'dr_test_scale_into'");
  check_error("dagrun: 1\nnodes:\n  cb: {op: host, fn: {symbol: f}}\n", "node 'cb', fn: missing key 'lib'");
}

/* The YAML writer keeps a library function and a host twin (absolute
 * paths): the text loads back to the same dump. */
static void test_round_trip(void) {
  const char *files[] = {"chain.yaml", "twin.yaml"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_load_file(files[i], &error);
    g_assert_no_error(error);
    g_autoptr(GString) yaml = g_string_new(NULL);
    g_assert_true(dr_pipeline_write_yaml(p, yaml, &error));
    g_assert_no_error(error);
    g_assert_nonnull(strstr(yaml->str, "libdr_test_hostfn.so"));
    g_autoptr(DrPipeline) q = dr_pipeline_load_string("again.yaml", yaml->str, -1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_pipeline_n_nodes(q), ==, dr_pipeline_n_nodes(p));
  }
}

/* ---- dr_pipeline_add_host_fn ---- */

typedef struct {
  int calls;
  guint64 last_iteration;
} Seen;

static int api_double(const DrHostFnArgs *a) {
  Seen *seen = a->user_data;
  seen->calls++;
  seen->last_iteration = a->iteration;
  const float *src = a->args[0].ptr;
  float *dst = a->args[1].ptr;
  for (guint64 i = 0; i < a->args[0].count; i++) dst[i] = 2.0f * src[i] + (float)a->args[2].f;
  return 0;
}

static const DrKParam api_params[] = {
    {.name = "src", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_READ},
    {.name = "dst", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_WRITE},
    {.name = "bias", .type = DR_ELEM_F32, .optional = 1, .def = 1.0},
};

static DrPipeline *api_pipeline(Seen *seen) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = dr_pipeline_new("api-host-fn");
  g_assert_true(dr_pipeline_add_buffer(p, "a", DR_ELEM_F32, 1024, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "a", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "b", DR_ELEM_F32, 1024, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "c", DR_ELEM_F32, 1024, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "src", DR_ELEM_F32, 1024, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "src", &error));
  g_assert_true(dr_pipeline_add_copy(p, "fill", DR_WHOLE("src"), DR_WHOLE("a"), &error));
  DrNamedArg args[] = {DR_NAMED_WHOLE("src", "a"), DR_NAMED_WHOLE("dst", "b")};
  g_assert_true(dr_pipeline_add_host_fn(p, "twice", api_double, seen, api_params, 3, args, 2, &error));
  g_assert_no_error(error);
  g_assert_true(dr_pipeline_add_copy(p, "out", DR_WHOLE("b"), DR_WHOLE("c"), &error));
  return p;
}

static void test_api(void) {
  Seen seen = {0};
  g_autoptr(DrPipeline) p = api_pipeline(&seen);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  /* fill -> twice (a, RAW) -> out (b, RAW): no dr_pipeline_node_after. */
  g_assert_cmpuint(dr_stream_plan_n_edges(plan), ==, 2);
  g_assert_cmpuint(dr_stream_plan_n_streams(plan), ==, 1);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_stream_plan_write_text(plan, text);
  if (strstr(text->str, " host_fn") == NULL) g_printerr("%s", text->str);
  g_assert_nonnull(strstr(text->str, " host_fn"));
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_HOST;
  s.iterations = 2;
  s.warmup = 1;
  s.verify = TRUE;
  s.delay_seed = 11;
  g_autoptr(DrRunReport) rep = dr_stream_plan_run(plan, &s, &error);
  g_assert_no_error(error);
  g_assert_true(dr_run_report_check_verified(rep, &error));
  g_assert_no_error(error);
  g_assert_cmpint(seen.calls, ==, 3 + 3); /* the run's 3 and the reference run's 3 */
  g_assert_cmpuint(seen.last_iteration, ==, 2);
  /* The YAML writer cannot say a C function. */
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_assert_false(dr_pipeline_write_yaml(p, yaml, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
}

static void test_api_refusals(void) {
  Seen seen = {0};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("refusals");
  g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, 16, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "d", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &error));
  DrNamedArg on_device[] = {DR_NAMED_WHOLE("src", "d"), DR_NAMED_WHOLE("dst", "h")};
  g_assert_false(dr_pipeline_add_host_fn(p, "x", api_double, &seen, api_params, 3, on_device, 2, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "needs a host buffer; 'd' lives on the device"));
  g_clear_error(&error);
  const DrKParam twice[] = {{.name = "p", .type = DR_ELEM_F32, .is_pointer = 1},
                            {.name = "p", .type = DR_ELEM_F32, .is_pointer = 1}};
  DrNamedArg one[] = {DR_NAMED_WHOLE("p", "h")};
  g_assert_false(dr_pipeline_add_host_fn(p, "y", api_double, &seen, twice, 2, one, 1, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "host function 'y', key 'params': parameter 'p' declared twice"));
  g_clear_error(&error);
  const DrKParam bad_name[] = {{.name = "a b", .type = DR_ELEM_F32, .is_pointer = 1}};
  g_assert_false(dr_pipeline_add_host_fn(p, "z", api_double, &seen, bad_name, 1, NULL, 0, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(
      strstr(error->message, "host function 'z', parameter 'a b': a parameter name uses letters"));
  g_clear_error(&error);
  g_assert_cmpuint(dr_pipeline_n_nodes(p), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  const char *srcdir = g_getenv("TEST_SRCDIR");
  if (srcdir != NULL) {
    g_autofree char *dir = g_build_filename(srcdir, "dagrun", "tests", "hostfn", NULL);
    g_assert_cmpint(g_chdir(dir), ==, 0);
  }
  lib_path = g_canonicalize_filename("libdr_test_hostfn.so", NULL);
  g_test_add_func("/hostfn/plan/hazards", test_hazards);
  g_test_add_func("/hostfn/run/verify-delays", test_verify_delays);
  g_test_add_func("/hostfn/run/race-caught", test_race_caught);
  g_test_add_func("/hostfn/run/failure", test_fail);
  g_test_add_func("/hostfn/run/iteration", test_iteration);
  g_test_add_func("/hostfn/twin/run", test_twin);
  g_test_add_func("/hostfn/twin/in-loop", test_twin_in_loop);
  g_test_add_func("/hostfn/check/errors", test_check_errors);
  g_test_add_func("/hostfn/yaml/round-trip", test_round_trip);
  g_test_add_func("/hostfn/api/hazards", test_api);
  g_test_add_func("/hostfn/api/refusals", test_api_refusals);
  return g_test_run();
}
