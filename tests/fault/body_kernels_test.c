/* body_kernels_test.c: gemm (cuBLAS) and user kernels inside loop bodies
 * on the CUDA backend (issue #17), on the fake CUDA table with its
 * graph-node model and its fake cuBLAS contexts (fake_cuda.h,
 * dr_fake_set_blas):
 *  - streams mode issues each trip's gemm on the loop node's stream with
 *    that stream's cuBLAS context (the fake calls a context bound to
 *    another stream a misuse) and each trip's user kernel there too;
 *  - graph mode captures a top-level repeat unrolled (the gemm and the
 *    user kernel once per trip, on the plan stream) and builds a while's
 *    body graph with the gemm's and the user kernel's nodes in it, one copy
 *    per trip (neither can read a guard);
 *  - the bytes (gemm's host twin running) are the host backend's and the
 *    trips too;
 *  - a failed launch inside a body names the body node;
 *  - a cuBLAS that captured a node a conditional body cannot hold is
 *    refused naming the gemm node, before the instantiation;
 *  - a kernel registered through the C library runs in a body (its
 *    launch through the table, the fake running its host twin);
 *  - a fault at every call of graph mode's run releases everything. */
#include <glib/gstdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/loops.h"
#include "ir/plan.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/fault/fake_runner.h"

static char *tmp_path(const char *name) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  return g_build_filename(tmp ? tmp : g_get_tmp_dir(), name, NULL);
}

/* A repeat and a while whose bodies each hold a gemm (a = 0.01 * a*w
 * twice, then a = 0.01 * a*w until sum(a) <= 1), `a` saved to `path`. */
static char *gemm_pipeline(const char *path) {
  return g_strdup_printf(
      "dagrun: 1\nbuffers:\n"
      "  a: {type: f32, count: 16, init: iota}\n  w: {type: f32, count: 16, init: iota}\n"
      "  t: {type: f32, count: 16}\n  err: {type: f32, count: 1}\n  go: {type: i32, count: 1}\n"
      "  out: {type: f32, count: 16, where: host, save: '%s'}\n"
      "nodes:\n"
      "  steps:\n    op: loop\n    repeat: 2\n    nodes:\n"
      "      mm: {op: kernel, kernel: gemm_f32, args: {a: a, b: w, c: t, m: 4, n: 4, k: 4}}\n"
      "      damp: {op: kernel, kernel: scale_f32, args: {x: t, alpha: 0.01, y: a}}\n"
      "  shrink:\n    op: loop\n    while: go\n    nodes:\n"
      "      mm: {op: kernel, kernel: gemm_f32, args: {a: a, b: w, c: t, m: 4, n: 4, k: 4, alpha: 0.01}}\n"
      "      keep: {op: copy, src: t, dst: a}\n"
      "      norm: {op: kernel, kernel: reduce_sum_f32, args: {x: a, y: err}}\n"
      "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: err, tol: 1.0, cond: go}}\n"
      "  down: {op: copy, src: a, dst: out}\n",
      path);
}

/* A repeat and a while whose bodies each hold the user kernel `touch`
 * (`ptx:` at `ptx`; the fake launches it and does nothing), the while
 * stopping after 9 trips (x[0] halved from 5 until <= 0.01), s saved. */
static char *user_pipeline(const char *ptx, const char *path) {
  return g_strdup_printf(
      "dagrun: 1\nkernels:\n  touch:\n    ptx: '%s'\n    params:\n"
      "      - {name: buf, type: f32*, access: readwrite}\n      - {name: n, type: i64}\n"
      "    grid: {over: n, block: 128}\n"
      "buffers:\n  x: {type: f32, count: 64, init: iota}\n  s: {type: f32, count: 64}\n"
      "  one: {type: f32, count: 1}\n  go: {type: i32, count: 1}\n"
      "  out: {type: f32, count: 64, where: host, save: '%s'}\n"
      "nodes:\n  init: {op: kernel, kernel: fill_f32, args: {y: one, value: 1.0}}\n"
      "  first: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
      "  warm:\n    op: loop\n    repeat: 3\n    nodes:\n"
      "      touch: {op: kernel, kernel: touch, args: {buf: \"s[32:64]\", n: 32}}\n"
      "  l:\n    op: loop\n    while: go\n    nodes:\n"
      "      touch: {op: kernel, kernel: touch, args: {buf: \"s[32:64]\", n: 32}}\n"
      "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
      "      count: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"
      "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"
      "  down: {op: copy, src: s, dst: out}\n",
      ptx, path);
}

/* Where the pipelines that are not compared save their bytes. */
static char *scratch;

static char *write_ptx(void) {
  char *ptx = tmp_path("body-touch.ptx");
  g_assert_true(g_file_set_contents(ptx, "// the fake runtime does not read PTX\n", -1, NULL));
  return ptx;
}

/* The trips of loop `i` in report `r` (its last iteration's). */
static guint64 trips_of(const DrReport *r, guint i) {
  g_assert_nonnull(r->loops);
  g_assert_cmpuint(r->loops->len, >, i);
  return g_array_index(r->loops, DrLoopReport, i).trips_max;
}

/* The stream (creation number) of every successful call named `name`
 * (a kernel_launch: of built-in `what`; NULL: any) in the trace is
 * `stream`; returns how many there were. */
static guint calls_on(const char *name, const char *what, guint stream) {
  const GArray *trace = dr_fake_trace();
  guint n = 0;
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (strcmp(c->name, name) != 0 || c->rc != cudaSuccess) continue;
    if (what != NULL && (c->what == NULL || strcmp(c->what, what) != 0)) continue;
    g_assert_cmpuint(c->stream, ==, stream);
    n++;
  }
  return n;
}

/* The stream of the first successful `what` kernel_launch in the trace. */
static guint stream_of_kernel(const char *what) {
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (strcmp(c->name, "kernel_launch") == 0 && c->what && strcmp(c->what, what) == 0) return c->stream;
  }
  g_assert_not_reached();
  return 0;
}

/* Gemm in a repeat and a while body, in both modes: the host backend's
 * bytes and trips; streams mode issues every trip's gemm on one stream
 * (the loops', with its own context: the fake checks the binding), graph
 * mode captures the repeat unrolled and builds the gemm into the WHILE
 * body, 1 copy per trip by default (a gemm reads no guard). */
static void test_gemm(gconstpointer data) {
  DrMode mode = GPOINTER_TO_INT(data) ? DR_MODE_GRAPH : DR_MODE_STREAMS;
  g_autofree char *path = tmp_path("body-gemm.bin");
  g_autofree char *yaml = gemm_pipeline(path);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("gemm.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  DrRunOptions host = dr_fake_run_options(g, DR_MODE_STREAMS, DR_TIMING_OFF, 0, 1);
  host.backend = DR_BACKEND_HOST;
  g_autoptr(DrReport) hr = NULL;
  gsize want_len = 0, got_len = 0;
  g_autofree char *want = dr_fake_run_saved(plan, &host, FALSE, path, &want_len, &hr);
  guint64 trips = trips_of(hr, 1);
  g_assert_cmpuint(trips_of(hr, 0), ==, 2);
  g_assert_cmpuint(trips, >=, 2);
  dr_fake_set_blas(TRUE, 0);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_OFF, 0, 1);
  g_autoptr(DrReport) r = NULL;
  g_autofree char *got = dr_fake_run_saved(plan, &opts, mode == DR_MODE_GRAPH, path, &got_len, &r);
  dr_fake_set_blas(FALSE, 0);
  g_assert_cmpmem(got, got_len, want, want_len);
  g_assert_cmpuint(trips_of(r, 0), ==, 2);
  g_assert_cmpuint(trips_of(r, 1), ==, trips);
  if (mode == DR_MODE_STREAMS) {
    /* 2 + trips gemms, all on one stream (the loops': every node here is
     * on the chain a -> t -> a), its context's (the fake checks that). */
    g_assert_cmpuint(calls_on("kernel_launch", "gemm_f32", stream_of_kernel("scale_f32")), ==, 2 + trips);
  } else {
    g_test_message("%s", dr_fake_graph_shape(TRUE));
    g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==,
                    "gemm_f32 scale_f32 gemm_f32 scale_f32 memset while{gemm_f32 memcpy reduce_sum_f32 "
                    "set_while_gt_f32 cond} memcpy");
    /* Forced to 3 copies per trip, the gemm cannot take a guard: copies 2
     * and 3 each in an IF node (never kernel guards, which the fake would
     * call a misuse on a gemm), the same bytes and trips. */
    g_setenv("DAGRUN_WHILE_UNROLL", "3", TRUE);
    dr_fake_set_blas(TRUE, 0);
    g_autoptr(DrReport) r3 = NULL;
    gsize len3 = 0;
    g_autofree char *got3 = dr_fake_run_saved(plan, &opts, TRUE, path, &len3, &r3);
    dr_fake_set_blas(FALSE, 0);
    g_unsetenv("DAGRUN_WHILE_UNROLL");
    const char *copy = "gemm_f32 memcpy reduce_sum_f32 set_while_gt_f32";
    g_autofree char *want3 = g_strdup_printf(
        "gemm_f32 scale_f32 gemm_f32 scale_f32 memset while{%s cond if{%s} cond if{%s} cond} memcpy", copy,
        copy, copy);
    g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==, want3);
    g_assert_cmpmem(got3, len3, want, want_len);
    g_assert_cmpuint(trips_of(r3, 1), ==, trips);
  }
}

/* A user kernel in a repeat and a while body, in both modes: streams mode
 * launches it on the loop node's stream every trip (3 + 9), graph mode
 * captures the repeat's 3 copies on the plan stream and the while's into
 * its body graph (the trips counted on the device: 9); the bytes agree. */
static void test_user(gconstpointer data) {
  DrMode mode = GPOINTER_TO_INT(data) ? DR_MODE_GRAPH : DR_MODE_STREAMS;
  g_autofree char *ptx = write_ptx();
  g_autofree char *path = tmp_path("body-user.bin");
  g_autofree char *yaml = user_pipeline(ptx, path);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("user.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_OFF, 0, 1);
  g_autoptr(DrReport) r = NULL;
  gsize len = 0;
  g_autofree char *got = dr_fake_run_saved(plan, &opts, mode == DR_MODE_GRAPH, path, &len, &r);
  g_assert_cmpuint(trips_of(r, 0), ==, 3);
  g_assert_cmpuint(trips_of(r, 1), ==, 9);
  /* s[0] counts the while's trips in both modes. */
  g_assert_cmpuint(len, ==, 64 * sizeof(float));
  g_assert_cmpfloat(((const float *)(const void *)got)[0], ==, 9.0f);
  if (mode == DR_MODE_STREAMS) {
    g_assert_cmpuint(dr_fake_user_launches(), ==, 3 + 9);
    /* warm's 3 trips on its stream, then l's 9 on l's (scale_f32's). */
    const GArray *trace = dr_fake_trace();
    guint k = 0, warm = 0, l = stream_of_kernel("scale_f32");
    for (guint i = 0; i < trace->len; i++) {
      const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
      if (strcmp(c->name, "cudaLaunchKernel") != 0) continue;
      if (k == 0) warm = c->stream;
      g_assert_cmpuint(c->stream, ==, k < 3 ? warm : l);
      k++;
    }
    g_assert_cmpuint(k, ==, 3 + 9);
  } else {
    g_assert_cmpuint(dr_fake_user_launches(), ==, 3 + 1);
    g_test_message("%s", dr_fake_graph_shape(TRUE));
    g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==,
                    "fill_f32 fill_f32 user user user memset while{user scale_f32 add_f32 set_while_gt_f32 "
                    "cond} memcpy");
  }
}

/* The `which`-th (1-based) call named `name` of a clean run of `plan`
 * fails: the run fails with DR_ERROR_RUNTIME naming `node`, `kernel`, and
 * leaves nothing live. */
static void fail_call(const DrPlan *plan, const DrRunOptions *opts, const char *name, const char *what,
                      guint which, const char *node, const char *kernel) {
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  g_autoptr(DrReport) clean = dr_run(plan, opts, &error);
  g_assert_no_error(error);
  const GArray *trace = dr_fake_trace();
  guint64 point = 0;
  for (guint i = 0, seen = 0; i < trace->len && point == 0; i++) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (strcmp(c->name, name) == 0 && (what == NULL || (c->what && strcmp(c->what, what) == 0)) &&
        ++seen == which)
      point = c->point;
  }
  g_assert_cmpuint(point, >, 0);
  dr_fake_reset();
  dr_fake_arm(point, DR_FAULT_LAUNCH);
  g_autoptr(DrReport) r = dr_run(plan, opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_test_message("%s", error->message);
  g_autofree char *want_node = g_strdup_printf("node '%s'", node);
  g_autofree char *want_kernel = g_strdup_printf("kernel launch (%s", kernel);
  g_assert_nonnull(strstr(error->message, want_node));
  g_assert_nonnull(strstr(error->message, want_kernel));
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
}

/* A failed launch inside a body names the body node and the kernel, in
 * both modes, for a user kernel and for a gemm (the while's: its third
 * gemm launch in streams mode, its only capture in graph mode). */
static void test_failed_launch(gconstpointer data) {
  DrMode mode = GPOINTER_TO_INT(data) ? DR_MODE_GRAPH : DR_MODE_STREAMS;
  g_autofree char *ptx = write_ptx();
  g_autofree char *yaml = user_pipeline(ptx, scratch);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("fail.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_OFF, 0, 1);
  /* The 4th user launch is the while's first (graph mode: its capture). */
  fail_call(plan, &opts, "cudaLaunchKernel", NULL, 4, "l/touch", "touch");
  fail_call(plan, &opts, "cudaLaunchKernel", NULL, 2, "warm/touch", "touch");
  g_autofree char *gyaml = gemm_pipeline(scratch);
  g_autoptr(DrGraph) gg = dr_fake_load_yaml("fail-gemm.yaml", gyaml);
  g_autoptr(DrPlan) gp = dr_fake_plan(gg);
  DrRunOptions gopts = dr_fake_run_options(gg, mode, DR_TIMING_OFF, 0, 1);
  dr_fake_set_blas(TRUE, 0);
  fail_call(gp, &gopts, "kernel_launch", "gemm_f32", 3, "shrink/mm", "gemm_f32");
  fail_call(gp, &gopts, "kernel_launch", "gemm_f32", 1, "steps/mm", "gemm_f32");
  dr_fake_set_blas(FALSE, 0);
}

/* A cuBLAS whose gemm captured a host node (what a conditional body
 * cannot hold): graph mode refuses it at the while's gemm, naming the
 * node, before any instantiation, and leaves nothing live; streams mode
 * captures nothing and runs. */
static void test_blas_capture(void) {
  g_autofree char *yaml = gemm_pipeline(scratch);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("capture.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_fake_plan(g);
  dr_fake_set_blas(TRUE, cudaGraphNodeTypeHost);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_OFF, 0, 1);
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message,
                          "node 'shrink/mm': cuBLAS captured a host node for this gemm, which "
                          "a CUDA conditional body cannot hold"));
  g_assert_cmpuint(dr_fake_count_calls(0, "cudaGraphInstantiate"), ==, 0);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  DrRunOptions eager = dr_fake_run_options(g, DR_MODE_STREAMS, DR_TIMING_OFF, 0, 1);
  g_clear_error(&error);
  dr_fake_reset();
  g_autoptr(DrReport) ok = dr_run(plan, &eager, &error);
  g_assert_no_error(error);
  dr_fake_set_blas(FALSE, 0);
}

/* Every call of a graph-mode run of both pipelines (timing auto) failed
 * in turn: the run fails or goes on, nothing stays live, no misuse. */
static void test_faults(void) {
  g_autofree char *ptx = write_ptx();
  char *yamls[2] = {user_pipeline(ptx, scratch), gemm_pipeline(scratch)};
  dr_fake_set_blas(TRUE, 0);
  for (int k = 0; k < 2; k++) {
    g_autoptr(DrGraph) g = dr_fake_load_yaml("faults.yaml", yamls[k]);
    g_autoptr(DrPlan) plan = dr_fake_plan(g);
    DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, 0, 1);
    g_autoptr(GError) error = NULL;
    dr_fake_reset();
    g_autoptr(DrReport) clean = dr_run(plan, &opts, &error);
    g_assert_no_error(error);
    guint64 n = dr_fake_points();
    guint failed = 0;
    for (guint64 p = 1; p <= n; p++) {
      dr_fake_reset();
      dr_fake_arm(p, DR_FAULT_INVALID);
      g_autoptr(GError) e = NULL;
      g_autoptr(DrReport) r = dr_run(plan, &opts, &e);
      failed += r == NULL;
      const DrFakeCall *hit = dr_fake_faulted_call();
      if (hit && hit->release) continue;
      if (dr_fake_live_total() != 0) {
        g_autoptr(GString) live = g_string_new(NULL);
        dr_fake_describe_live(live);
        g_error("pipeline %d, point %" G_GUINT64_FORMAT ": left live: %s", k, p, live->str);
      }
      if (strcmp(dr_fake_misuse(), "") != 0)
        g_error("pipeline %d, point %" G_GUINT64_FORMAT ": misuse: %s", k, p, dr_fake_misuse());
    }
    g_test_message("pipeline %d: %" G_GUINT64_FORMAT " points, %u failed runs", k, n, failed);
    g_assert_cmpuint(failed, >, n / 2);
  }
  dr_fake_set_blas(FALSE, 0);
  for (int k = 0; k < 2; k++) g_free(yamls[k]);
}

/* A kernel registered through the C library: y = x + a. Its launcher is
 * never called on the fake (the table's kernel_launch runs the twin). */
static int offset_host(const DrKLaunch *l, char *err) {
  const float *x = l->args[0].ptr;
  float *y = l->args[1].ptr;
  for (uint64_t i = 0; i < l->counts[1]; i++) y[i] = x[i] + (float)l->args[2].f;
  return 0;
}

static int offset_launch(const DrKLaunch *l) {
  (void)l;
  return (int)cudaErrorNoDevice;
}

static const DrKParam offset_params[] = {
    {.name = "x", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_READ},
    {.name = "y", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_WRITE},
    {.name = "a", .type = DR_ELEM_F32, .optional = 1, .def = 1.0},
};

static const DrKernelDef offset_def = {.name = "offset_f32",
                                       .params = offset_params,
                                       .n_params = 3,
                                       .grid_over = 1,
                                       .block = 256,
                                       .launch = offset_launch,
                                       .host = offset_host};

/* y += 2 five times in a repeat body (a C library kernel), through the
 * public API: y is 10 after one run, in streams mode (what auto picks:
 * the kernel is not capturable) and forced graph mode (captured
 * unrolled on the fake), the kernel launched 5 times on one stream. */
static void test_api_kernel(gconstpointer data) {
  DrMode mode = GPOINTER_TO_INT(data) ? DR_MODE_GRAPH : DR_MODE_STREAMS;
  dr_fake_runner_start();
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_new("api-body");
    g_assert_true(dr_pipeline_register_kernel(p, &offset_def, &error));
    g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 16, DR_WHERE_DEVICE, &error));
    g_assert_true(dr_pipeline_buffer_init_zeros(p, "y", &error));
    g_autoptr(DrPipeline) body = dr_pipeline_new_body(p, "l");
    DrNamedArg args[] = {DR_NAMED_SLICE("x", "y", 0, 16), DR_NAMED_SLICE("y", "y", 0, 16),
                         DR_NAMED_FLOAT("a", 2.0)};
    g_assert_true(dr_pipeline_add_kernel_node(body, "inc", "offset_f32", args, 3, &error));
    g_assert_true(dr_pipeline_add_repeat(p, "l", 5, body, &error));
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    DrRunner *r = dr_fake_cuda_runner(plan, p, mode);
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    float y[16];
    g_assert_true(dr_runner_read_buffer(r, "y", y, sizeof y, &error));
    for (int e = 0; e < 16; e++) g_assert_cmpfloat(y[e], ==, 10.0f);
    const GArray *trace = dr_fake_trace();
    guint launches = 0, stream = 0;
    for (guint i = 0; i < trace->len; i++) {
      const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
      if (strcmp(c->name, "kernel_launch") != 0 || strcmp(c->what, "offset_f32") != 0) continue;
      if (launches++ == 0) stream = c->stream;
      g_assert_cmpuint(c->stream, ==, stream);
    }
    g_assert_cmpuint(launches, ==, 5);
    /* The iteration's stamps (timing auto) around it, and no trip stamps:
     * graph mode takes those only with DAGRUN_TRIP_STAMPS=1 (then the
     * ring's memset, its base stamp, a trip stamp kernel before each trip
     * and after the last: tests/fault:trips). */
    if (mode == DR_MODE_GRAPH)
      g_assert_cmpstr(dr_fake_graph_shape(FALSE), ==,
                      "stamp offset_f32 offset_f32 offset_f32 offset_f32 offset_f32 stamp");
    dr_runner_free(r);
  }
  dr_fake_runner_finish();
  dr_cuda_api_set(dr_fake_api_graph_nodes());
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api_graph_nodes());
  scratch = tmp_path("body-scratch.bin");
  g_test_add_data_func("/fault/body-kernels/gemm/streams", GINT_TO_POINTER(0), test_gemm);
  g_test_add_data_func("/fault/body-kernels/gemm/graph", GINT_TO_POINTER(1), test_gemm);
  g_test_add_data_func("/fault/body-kernels/user/streams", GINT_TO_POINTER(0), test_user);
  g_test_add_data_func("/fault/body-kernels/user/graph", GINT_TO_POINTER(1), test_user);
  g_test_add_data_func("/fault/body-kernels/failed-launch/streams", GINT_TO_POINTER(0), test_failed_launch);
  g_test_add_data_func("/fault/body-kernels/failed-launch/graph", GINT_TO_POINTER(1), test_failed_launch);
  g_test_add_func("/fault/body-kernels/blas-capture", test_blas_capture);
  g_test_add_func("/fault/body-kernels/faults", test_faults);
  g_test_add_data_func("/fault/body-kernels/api/streams", GINT_TO_POINTER(0), test_api_kernel);
  g_test_add_data_func("/fault/body-kernels/api/graph", GINT_TO_POINTER(1), test_api_kernel);
  return g_test_run();
}
