/* api_gpu_test.c: the public C library on the CUDA backend (tags gpu):
 * a kernel registered through the API launches on CUDA and agrees with
 * its host twin, callback nodes run through cudaLaunchHostFunc the right
 * number of times in streams and graph mode, and the YAML user-kernel
 * pipeline (graphs/gpu/user_kernel.yaml, NVRTC) verifies. */
#include <glib/gstdio.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

int dr_test_scale_launch(const void *launch);      /* gpu_forward.c */
int dr_test_sync_scale_launch(const void *launch); /* gpu_forward.c: synchronizes first */

static int my_scale_launch(const DrKLaunch *l) { return dr_test_scale_launch(l); }

static int my_scale_host(const DrKLaunch *l, char *err) {
  const float *x = l->args[0].ptr;
  float *y = l->args[2].ptr;
  float a = (float)l->args[1].f;
  if (l->counts[0] != l->counts[2]) {
    g_strlcpy(err, "x and y differ in length", DR_KERR_SIZE);
    return -1;
  }
  for (uint64_t i = 0; i < l->counts[0]; i++) y[i] = a * x[i];
  return 0;
}

static const DrKParam my_params[] = {
    {.name = "x", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_READ},
    {.name = "alpha", .type = DR_ELEM_F32},
    {.name = "y", .type = DR_ELEM_F32, .is_pointer = 1, .access = DR_ACCESS_WRITE},
};

static const DrKernelDef my_scale = {.name = "my_scale",
                                     .params = my_params,
                                     .n_params = 3,
                                     .grid_over = 0,
                                     .block = 256,
                                     .launch = my_scale_launch,
                                     .host = my_scale_host};

static void count_cb(void *data) { g_atomic_int_inc((gint *)data); }

#define N (1 << 20)

/* Builds upload, my_scale in two halves, download, callback; saves the
 * result to `save`. */
static DrPipeline *build(const char *save, gint *calls) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("api-gpu");
  DrNamedArg lo[] = {DR_NAMED_SLICE("x", "x", 0, N / 2), DR_NAMED_FLOAT("alpha", 3.0),
                     DR_NAMED_SLICE("y", "y", 0, N / 2)};
  DrNamedArg hi[] = {DR_NAMED_SLICE("x", "x", N / 2, N), DR_NAMED_FLOAT("alpha", -0.5),
                     DR_NAMED_SLICE("y", "y", N / 2, N)};
  g_assert_true(dr_pipeline_register_kernel(p, &my_scale, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "xh", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_init_random(p, "xh", 7, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "yh", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_buffer_save(p, "yh", save, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_copy(p, "up", DR_WHOLE("xh"), DR_WHOLE("x"), &error));
  g_assert_true(dr_pipeline_add_kernel_node(p, "lo", "my_scale", lo, 3, &error));
  g_assert_true(dr_pipeline_add_kernel_node(p, "hi", "my_scale", hi, 3, &error));
  g_assert_true(dr_pipeline_add_copy(p, "down", DR_WHOLE("y"), DR_WHOLE("yh"), &error));
  g_assert_true(dr_pipeline_add_callback(p, "cb", count_cb, calls, &error));
  g_assert_true(dr_pipeline_node_after(p, "cb", "down", &error));
  g_assert_no_error(error);
  return g_steal_pointer(&p);
}

/* The pipeline's run settings on `backend` in `mode`, `warmup` +
 * `iterations` iterations. */
static DrRunSettings settings(const DrPipeline *p, DrBackendKind backend, DrMode mode, guint warmup,
                              guint iterations) {
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = backend;
  rs.mode = mode;
  rs.warmup = warmup;
  rs.iterations = iterations;
  return rs;
}

static char *run_and_read(DrBackendKind backend, DrMode mode, gint *calls) {
  g_autoptr(GError) error = NULL;
  g_autofree char *save = g_build_filename(g_get_tmp_dir(), "api_gpu_out.bin", NULL);
  g_autoptr(DrPipeline) p = build(save, calls);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = settings(p, backend, mode, 1, 4);
  rs.verify = TRUE;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
  g_assert_cmpstr(dr_run_report_backend(r), ==, backend == DR_BACKEND_CUDA ? "cuda" : "host");
  char *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(save, &bytes, &len, &error));
  g_assert_cmpuint(len, ==, N * sizeof(float));
  g_unlink(save);
  return bytes;
}

static void test_user_kernel_cuda(gconstpointer mode_p) {
  DrMode mode = GPOINTER_TO_INT(mode_p);
  gint host_calls = 0, cuda_calls = 0;
  g_autofree char *host = run_and_read(DR_BACKEND_HOST, DR_MODE_STREAMS, &host_calls);
  g_autofree char *cuda = run_and_read(DR_BACKEND_CUDA, mode, &cuda_calls);
  g_assert_cmpint(host_calls, ==, 2 * (1 + 4));
  g_assert_cmpint(cuda_calls, ==, 2 * (1 + 4));
  /* Multiplication by a float is exact on both sides. */
  g_assert_cmpint(memcmp(host, cuda, N * sizeof(float)), ==, 0);
}

static void test_yaml_user_kernel(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_file("graphs/gpu/user_kernel.yaml", &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_CUDA;
  rs.verify = TRUE;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
}

/* A runner on the CUDA backend: x = random, y = alpha * x (built-in
 * scale_f32, node "s"), then a spin of `ns` (node "wait"), and beside them
 * z = beta * x through a stream-ordered buffer t (node "s2" writes t).
 * Changing alpha and ns between runs sets those two nodes' parameters on
 * the executable in graph mode ("updated-nodes") and rebinds the launches
 * in streams mode ("rebound"); the next run computes with the new alpha
 * (read back) and spins for the new time (the makespan follows it).
 * Changing s2's beta, whose output is stream-ordered memory, takes the
 * whole-graph update ("updated"), after which the per-node path stays off
 * until a re-instantiation. */
static void test_runner_cuda(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  enum { M = 1 << 16 };
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("runner-gpu");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_random(p, "x", 3, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
  g_assert_true(
      dr_pipeline_add_kernel_node(p, "wait", "spin", (DrNamedArg[]){DR_NAMED_INT("ns", 50000)}, 1, &error));
  g_assert_true(dr_pipeline_node_after(p, "wait", "s", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "t", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "z", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_alloc(p, "alloc_t", "t", &error));
  DrNamedArg s2args[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 4.0), DR_NAMED_WHOLE("y", "t")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s2", "scale_f32", s2args, 3, &error));
  DrNamedArg s3args[] = {DR_NAMED_WHOLE("x", "t"), DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("y", "z")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s3", "scale_f32", s3args, 3, &error));
  g_assert_true(dr_pipeline_add_free(p, "free_t", "t", &error));
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = settings(p, DR_BACKEND_CUDA, mode, 1, 5);
  g_autoptr(DrRunner) r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  g_autofree float *x = g_new(float, M);
  g_autofree float *y = g_new(float, M);
  g_assert_true(dr_runner_read_buffer(r, "x", x, M * sizeof(float), &error));
  g_autoptr(DrRunReport) r1 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  g_assert_true(dr_runner_read_buffer(r, "y", y, M * sizeof(float), &error));
  for (int i = 0; i < M; i++) g_assert_cmpfloat(y[i], ==, 2.0f * x[i]);
  double m1 = dr_run_report_makespan_us(r1);
  g_assert_cmpfloat(m1, >=, 50.0);
  g_assert_true(dr_runner_set_float(r, "s", "alpha", -0.25, &error));
  g_assert_true(dr_runner_set_int(r, "wait", "ns", 400000, &error));
  g_autoptr(DrRunReport) r2 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, mode == DR_MODE_GRAPH ? "updated-nodes" : "rebound");
  g_assert_true(dr_runner_read_buffer(r, "y", y, M * sizeof(float), &error));
  for (int i = 0; i < M; i++) g_assert_cmpfloat(y[i], ==, -0.25f * x[i]);
  double m2 = dr_run_report_makespan_us(r2);
  g_test_message("%s: makespan %.1f us with a 50 us spin, %.1f us with 400 us", dr_run_report_mode(r2), m1,
                 m2);
  g_assert_cmpfloat(m2, >=, 400.0);
  g_assert_cmpfloat(m2, <, m1 + 400.0);
  g_autoptr(DrRunReport) r3 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
  g_assert_cmpfloat(dr_run_report_makespan_us(r3), >=, 400.0);
  /* s2 writes stream-ordered memory: set in place all the same, its
   * pointer from the graph's own allocation as captured (no re-capture). */
  g_assert_true(dr_runner_set_float(r, "s2", "alpha", 0.5, &error));
  g_autoptr(DrRunReport) r4 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, mode == DR_MODE_GRAPH ? "updated-nodes" : "rebound");
  g_autofree float *z = g_new(float, M);
  g_assert_true(dr_runner_read_buffer(r, "z", z, M * sizeof(float), &error));
  for (int i = 0; i < M; i++) g_assert_cmpfloat(z[i], ==, 0.5f * x[i]);
  /* And now s alone again: still node by node (no whole-graph update
   * came between). */
  g_assert_true(dr_runner_set_float(r, "s", "alpha", 8.0, &error));
  g_autoptr(DrRunReport) r5 = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_runner_last_update(r), ==, mode == DR_MODE_GRAPH ? "updated-nodes" : "rebound");
  g_assert_true(dr_runner_read_buffer(r, "y", y, M * sizeof(float), &error));
  for (int i = 0; i < M; i++) g_assert_cmpfloat(y[i], ==, 8.0f * x[i]);
}

static int sync_scale_launch(const DrKLaunch *l) { return dr_test_sync_scale_launch(l); }

static const DrKernelDef sync_scale = {.name = "sync_scale",
                                       .params = my_params,
                                       .n_params = 3,
                                       .grid_over = 0,
                                       .block = 256,
                                       .launch = sync_scale_launch,
                                       .host = my_scale_host};

/* A registered kernel whose launcher synchronizes its stream cannot be
 * captured: graph mode fails naming its node; with graph_fallback the run
 * goes on in streams mode and verifies. */
static void test_uncapturable(void) {
  enum { M = 4096 };
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_new("uncapturable");
  g_assert_true(dr_pipeline_register_kernel(p, &sync_scale, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_random(p, "x", 5, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, M, DR_WHERE_DEVICE, &error));
  DrNamedArg a1[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "fine", "scale_f32", a1, 3, &error));
  DrNamedArg a2[] = {DR_NAMED_WHOLE("x", "y"), DR_NAMED_FLOAT("alpha", 3.0), DR_NAMED_WHOLE("y", "x")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "careless", "sync_scale", a2, 3, &error));
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs = settings(p, DR_BACKEND_CUDA, DR_MODE_GRAPH, 1, 2);
  g_assert_null(dr_stream_plan_run(plan, &rs, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "node 'careless'"));
  g_assert_nonnull(strstr(error->message, "cannot be captured into a CUDA graph"));
  g_clear_error(&error);
  rs.graph_fallback = TRUE;
  rs.verify = TRUE;
  /* The fallback is reported through g_log (domain "dagrun") as a
   * warning, which g_test_init makes fatal: only errors are, for this run. */
  GLogLevelFlags fatal = g_log_set_always_fatal(G_LOG_FATAL_MASK);
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_log_set_always_fatal(fatal);
  g_assert_no_error(error);
  g_assert_cmpstr(dr_run_report_mode(r), ==, "streams");
  g_assert_cmpint(dr_run_report_verified(r), ==, DR_VERIFIED_PASS);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_data_func("/api/gpu/user-kernel/streams", GINT_TO_POINTER(DR_MODE_STREAMS),
                       test_user_kernel_cuda);
  g_test_add_data_func("/api/gpu/user-kernel/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_user_kernel_cuda);
  g_test_add_func("/api/gpu/yaml-user-kernel", test_yaml_user_kernel);
  g_test_add_data_func("/api/gpu/runner/streams", GINT_TO_POINTER(DR_MODE_STREAMS), test_runner_cuda);
  g_test_add_data_func("/api/gpu/runner/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_runner_cuda);
  g_test_add_func("/api/gpu/uncapturable", test_uncapturable);
  return g_test_run();
}
