/* hostfn_test.c: host functions with declared arguments on the CUDA
 * backend, through the fake CUDA table (fake_cuda.h: copies move real
 * bytes, kernels run their host twins, host functions run in stream
 * order, captured graphs replay node by node). A shared library's function
 * between a device-to-host and a host-to-device copy computes the same
 * bytes in streams and graph mode as on the host backend; a C API host
 * function runs once per iteration in both modes (cudaLaunchHostFunc, a
 * host node of the graph) with its run count, and its failure fails the
 * run after its iteration; every fault point of the
 * streams run releases everything (the sweep of fault_test.c covers
 * graphs/host_callbacks.yaml too). */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/build.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

/* The saved bytes of z_host after one run of `g` (saved at `path`) on
 * `backend` in `mode`. */
static char *run_saved(DrGraph *g, DrBackendKind backend, DrMode mode, const char *path, gsize *len) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_AUTO, 1, 2);
  opts.backend = backend;
  return dr_fake_run_saved(plan, &opts, TRUE, path, len, NULL);
}

static DrGraph *lib_graph(char **path) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  *path = g_build_filename(tmp ? tmp : g_get_tmp_dir(), "hostfn-z.bin", NULL);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\n"
      "buffers:\n"
      "  x: {type: f32, count: 1Ki, init: iota}\n"
      "  x_host: {type: f32, count: 1Ki, where: host}\n"
      "  y_host: {type: f32, count: 1Ki, where: host}\n"
      "  y: {type: f32, count: 1Ki}\n"
      "  z: {type: f32, count: 1Ki}\n"
      "  z_host: {type: f32, count: 1Ki, where: host, save: '%s'}\n"
      "nodes:\n"
      "  down: {op: copy, src: x, dst: x_host}\n"
      "  halve:\n"
      "    op: host\n"
      "    fn: {lib: examples/libdagrun_example_hostfns.so, symbol: dr_example_scale_into,\n"
      "         params: [{name: src, type: f32*, access: read}, {name: dst, type: f32*, access: write},\n"
      "                  {name: alpha, type: f32}]}\n"
      "    args: {src: x_host, dst: y_host, alpha: 0.5}\n"
      "  up: {op: copy, src: y_host, dst: y}\n"
      "  triple: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 3.0, y: z}}\n"
      "  back: {op: copy, src: z, dst: z_host}\n",
      *path);
  return dr_fake_load_yaml("hostfn.yaml", yaml);
}

static void test_lib_data(void) {
  g_autofree char *path = NULL;
  g_autoptr(DrGraph) g = lib_graph(&path);
  gsize want_len = 0, len = 0;
  g_autofree char *want = run_saved(g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len);
  g_assert_cmpuint(want_len, ==, 4096);
  g_assert_cmpfloat(((float *)want)[3], ==, 4.5f); /* 3 * 0.5 * iota */
  for (int m = 0; m < 2; m++) {
    g_autofree char *got = run_saved(g, DR_BACKEND_CUDA, m ? DR_MODE_GRAPH : DR_MODE_STREAMS, path, &len);
    g_assert_cmpmem(got, len, want, want_len);
  }
}

/* ---- a C API host function: its run count in both modes ---- */

typedef struct {
  int calls;
  guint64 last;
} Seen;

static int count_fn(const DrHostFnArgs *a) {
  Seen *s = a->user_data;
  s->calls++;
  s->last = a->iteration;
  const float *h = a->args[0].ptr;
  return h[1] == 1.0f ? 0 : 1; /* the copy before it (an iota) has run */
}

static void test_api_counts(void) {
  for (int m = 0; m < 2; m++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrGraph) g = dr_fake_load_yaml("count.yaml",
                                             "dagrun: 1\n"
                                             "buffers:\n"
                                             "  d: {type: f32, count: 64, init: iota}\n"
                                             "  h: {type: f32, count: 64, where: host}\n"
                                             "nodes:\n"
                                             "  down: {op: copy, src: d, dst: h}\n");
    /* What dr_pipeline_add_host_fn builds (lib/nodes.c), on the IR. */
    DrBuild b;
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    dr_build_init(&b, g, diags);
    Seen seen = {0};
    const DrParam params[] = {
        {.name = "h", .type = DR_ELEM_F32, .is_pointer = TRUE, .access = DR_ACCESS_READ}};
    DrCallback cb = {.call = count_fn, .user_data = &seen, .params = params, .n_params = 1};
    DrLoc loc = {"count.yaml", 7, 1};
    g_assert_true(dr_build_node_begin(&b, "count", DR_OP_HOST, loc, FALSE));
    g_assert_true(dr_build_host_callback(&b, &cb, "count", NULL, loc));
    const char *names[] = {"h"};
    DrBuildArgs args = {.names = names, .locs = &loc, .n = 1, .given = TRUE, .at = loc};
    gint slot[DR_BUILD_MAX_PARAMS];
    g_assert_true(dr_build_args_match(&b, &args, slot));
    DrBuildValue v = {.kind = DR_BUILD_VALUE_SLICE, .slice = {"h", 0, DR_BUILD_SLICE_END, NULL}};
    g_assert_true(dr_build_arg(&b, 0, &v, loc));
    dr_build_node_commit(&b);
    dr_build_clear(&b);
    g_assert_cmpuint(dr_diags_n_errors(diags), ==, 0);
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    DrRunOptions opts = dr_fake_run_options(g, m ? DR_MODE_GRAPH : DR_MODE_STREAMS, DR_TIMING_AUTO, 2, 3);
    dr_fake_reset();
    dr_fake_set_replay_graphs(TRUE);
    g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
    dr_fake_set_replay_graphs(FALSE);
    g_assert_no_error(error);
    g_assert_cmpint(seen.calls, ==, 5);
    g_assert_cmpuint(seen.last, ==, 4);
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
}

static int fail_second(const DrHostFnArgs *a) {
  Seen *s = a->user_data;
  s->calls++;
  if (a->iteration == 0) return 0;
  g_snprintf(a->err, DR_HOST_FN_ERR_SIZE, "refused in iteration %u", (unsigned)a->iteration);
  return 1;
}

/* A failure on CUDA's callback thread fails the run after its iteration
 * (exit 70, the node and the message), and the function is not called
 * again; everything is released. */
static void test_failure(void) {
  for (int m = 0; m < 2; m++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrGraph) g = dr_fake_load_yaml("fail.yaml",
                                             "dagrun: 1\n"
                                             "buffers: {h: {type: f32, count: 8, where: host}}\n"
                                             "nodes:\n"
                                             "  z: {op: memset, dst: h, value: 0}\n");
    DrBuild b;
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    dr_build_init(&b, g, diags);
    Seen seen = {0};
    DrCallback cb = {.call = fail_second, .user_data = &seen};
    DrLoc loc = {"fail.yaml", 5, 1};
    g_assert_true(dr_build_node_begin(&b, "no", DR_OP_HOST, loc, FALSE));
    g_assert_true(dr_build_host_callback(&b, &cb, "no", NULL, loc));
    dr_build_node_commit(&b);
    dr_build_clear(&b);
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    DrRunOptions opts = dr_fake_run_options(g, m ? DR_MODE_GRAPH : DR_MODE_STREAMS, DR_TIMING_AUTO, 1, 3);
    dr_fake_reset();
    dr_fake_set_replay_graphs(TRUE);
    DrReport *r = dr_run(plan, &opts, &error);
    dr_fake_set_replay_graphs(FALSE);
    g_assert_null(r);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    g_assert_nonnull(strstr(error->message, "node 'no' (stream "));
    g_assert_nonnull(strstr(error->message, "): host function failed: refused in iteration 1"));
    g_assert_cmpint(seen.calls, ==, 2);
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
}

/* Every call of the streams run failed in turn: an error, nothing live. */
static void test_sweep(void) {
  g_autofree char *path = NULL;
  g_autoptr(DrGraph) g = lib_graph(&path);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, g->run.mode, DR_TIMING_AUTO, 0, 1);
  dr_fake_reset();
  g_autoptr(DrReport) ok = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  guint64 points = dr_fake_points();
  g_assert_cmpuint(points, >, 10);
  for (guint64 k = 1; k <= points; k++) {
    dr_fake_reset();
    dr_fake_arm(k, DR_FAULT_OOM);
    DrReport *r = dr_run(plan, &opts, &error);
    if (r == NULL) {
      g_assert_nonnull(error);
      g_clear_error(&error);
    }
    dr_report_free(r);
    if (dr_fake_live_total() == 0) continue;
    /* Only a release the fault refused may stay live. */
    const GArray *trace = dr_fake_trace();
    const DrFakeCall *fc = NULL;
    for (guint i = 0; i < trace->len; i++)
      if (g_array_index(trace, DrFakeCall, i).point == k) fc = &g_array_index(trace, DrFakeCall, i);
    gconstpointer only = NULL;
    g_assert_nonnull(fc);
    g_assert_true(fc->release && dr_fake_only_live(&only) && only == fc->obj);
  }
  g_unlink(path);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api());
  const char *srcdir = g_getenv("TEST_SRCDIR");
  if (!g_file_test("examples", G_FILE_TEST_IS_DIR) && srcdir) {
    g_autofree char *root = g_build_filename(srcdir, "dagrun", NULL);
    g_assert_cmpint(g_chdir(root), ==, 0);
  }
  g_test_add_func("/fault/hostfn/lib-data", test_lib_data);
  g_test_add_func("/fault/hostfn/api-counts", test_api_counts);
  g_test_add_func("/fault/hostfn/failure", test_failure);
  g_test_add_func("/fault/hostfn/sweep", test_sweep);
  int rc = g_test_run();
  return rc;
}
