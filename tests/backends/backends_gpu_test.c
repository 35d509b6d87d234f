/* backends_gpu_test.c: the CUDA backends on a real device (tag gpu): results
 * in streams and graph mode against the host backend, --verify, stream-
 * ordered alloc/free and host functions surviving capture, cuBLAS gemm,
 * timing (stamps against events, and what each costs per node), and a
 * fault-injection shim (DrCudaApi) that fails the Nth CUDA
 * call for every N and checks that each failure is reported as an error
 * naming the call and that every stream, event and allocation made before
 * it was released. Without a device every case is skipped. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/cuda/graph.h"
#include "tests/backends/testgraph.h"

static gboolean have_gpu(void) {
  int n = 0;
  if (dr_cuda_api()->cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    (void)dr_cuda_api()->cudaGetLastError();
    g_test_skip("no CUDA device");
    return FALSE;
  }
  return TRUE;
}

static DrRunOptions opts_for(const DrGraph *g, DrBackendKind backend, DrMode mode) {
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = backend;
  o.mode = mode;
  o.iterations = 3;
  o.warmup = 1;
  return o;
}

/* Chunked upload, scale, accumulate into acc, download; an alloc'd scratch
 * buffer per chunk pair; a checksum host node at the end. */
static DrGraph *pipeline_graph(guint chunks, guint64 per, const char *save_path) {
  DrGraph *g = dr_graph_new();
  guint64 n = chunks * per;
  tg_buffer(g, "xh", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_RANDOM, 7);
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "t", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "acc", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  DrId out = tg_buffer(g, "out", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_NONE, 0);
  if (save_path) dr_graph_buffer(g, out)->save_path = dr_graph_intern(g, save_path);
  tg_lifetime(g, "alloc_t", "t", TRUE);
  for (guint c = 0; c < chunks; c++) {
    guint64 b = c * per, e = (c + 1) * per;
    tg_copy(g, tg_name(g, "up", c), "xh", b, e, "x", b, e);
    DrId s = tg_kernel_node(g, tg_name(g, "scale", c), "scale_f32");
    tg_arg_buf(g, s, "x", "x", b, e);
    tg_arg_f(g, s, "alpha", 2.0);
    tg_arg_buf(g, s, "y", "t", b, e);
    DrId a = tg_kernel_node(g, tg_name(g, "acc", c), "axpy_f32");
    tg_arg_f(g, a, "alpha", 0.5);
    tg_arg_buf(g, a, "x", "t", b, e);
    tg_arg_buf(g, a, "y", "acc", b, e);
  }
  tg_lifetime(g, "free_t", "t", FALSE);
  tg_copy(g, "down", "acc", 0, 0, "out", 0, 0);
  tg_host(g, "sum", DR_HOST_FN_CHECKSUM, "out", NULL);
  return g;
}

static char *run_and_read(const DrPlan *plan, DrRunOptions *o, const char *path, gsize *len,
                          char **host_out) {
  FILE *f = tmpfile();
  o->host_output = f;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, o, &error);
  g_assert_no_error(error);
  if (o->verify) g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  g_assert_false(isnan(r->makespan_us));
  g_assert_cmpfloat(r->makespan_us, >, 0);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text(r, text);
  g_test_message("%s", text->str);
  rewind(f);
  char buf[65536] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  *host_out = g_strdup(buf);
  char *data = NULL;
  g_assert_true(g_file_get_contents(path, &data, len, NULL));
  return data;
}

static void test_pipeline_modes(void) {
  if (!have_gpu()) return;
  g_autofree char *dir = g_dir_make_tmp("drgpu-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = pipeline_graph(8, 1 << 16, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions ho = opts_for(g, DR_BACKEND_HOST, DR_MODE_STREAMS);
  gsize hlen, slen, glen;
  g_autofree char *hout = NULL, *sout = NULL, *gout = NULL;
  g_autofree char *host = run_and_read(plan, &ho, path, &hlen, &hout);
  DrRunOptions so = opts_for(g, DR_BACKEND_CUDA, DR_MODE_STREAMS);
  so.verify = TRUE;
  g_autofree char *streams = run_and_read(plan, &so, path, &slen, &sout);
  DrRunOptions go = opts_for(g, DR_BACKEND_CUDA, DR_MODE_GRAPH);
  go.verify = TRUE;
  g_autofree char *graph = run_and_read(plan, &go, path, &glen, &gout);
  /* scale and fmaf are exact IEEE operations: identical bytes everywhere. */
  g_assert_cmpmem(host, hlen, streams, slen);
  g_assert_cmpmem(host, hlen, graph, glen);
  /* The checksum host node ran once per iteration (1 warmup + 3) in each
   * run (the verify run adds 4 more) with the same result. */
  g_assert_nonnull(strstr(hout, "checksum sum out 0x"));
  g_assert_cmpuint(strlen(hout) * 2, ==, strlen(sout));
  g_assert_cmpstr(sout, ==, gout);
  g_assert_true(g_str_has_prefix(sout, hout));
  g_remove(path);
  g_rmdir(dir);
}

/* Per-step scratch with several lifetimes (decisions.md): each of `lives`
 * steps allocates t, scales x into it by its own factor, adds it into acc
 * and copies it out, then frees it. Every alloc gets a fresh pointer from
 * the pool; every kernel and copy must use its own lifetime's. */
static DrGraph *lifetimes_graph(guint lives, guint64 n, const char *save_path) {
  DrGraph *g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_RANDOM, 11);
  tg_buffer(g, "t", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "acc", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId out = tg_buffer(g, "out", DR_ELEM_F32, n * lives, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, out)->save_path = dr_graph_intern(g, save_path);
  for (guint k = 0; k < lives; k++) {
    tg_lifetime(g, tg_name(g, "alloc_t", k), "t", TRUE);
    DrId s = tg_kernel_node(g, tg_name(g, "scale", k), "scale_f32");
    tg_arg_buf(g, s, "x", "x", 0, 0);
    tg_arg_f(g, s, "alpha", (double)(k + 1));
    tg_arg_buf(g, s, "y", "t", 0, 0);
    DrId a = tg_kernel_node(g, tg_name(g, "acc", k), "axpy_f32");
    tg_arg_f(g, a, "alpha", 1.0);
    tg_arg_buf(g, a, "x", "t", 0, 0);
    tg_arg_buf(g, a, "y", "acc", 0, 0);
    tg_copy(g, tg_name(g, "down", k), "t", 0, 0, "out", k * n, (k + 1) * n);
    tg_lifetime(g, tg_name(g, "free_t", k), "t", FALSE);
  }
  return g;
}

static void test_lifetimes(void) {
  if (!have_gpu()) return;
  g_autofree char *dir = g_dir_make_tmp("drgpu-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = lifetimes_graph(4, 1 << 18, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions ho = opts_for(g, DR_BACKEND_HOST, DR_MODE_STREAMS);
  gsize hlen, slen, glen;
  g_autofree char *hout = NULL, *sout = NULL, *gout = NULL;
  g_autofree char *host = run_and_read(plan, &ho, path, &hlen, &hout);
  DrRunOptions so = opts_for(g, DR_BACKEND_CUDA, DR_MODE_STREAMS);
  so.verify = TRUE;
  g_autofree char *streams = run_and_read(plan, &so, path, &slen, &sout);
  DrRunOptions go = opts_for(g, DR_BACKEND_CUDA, DR_MODE_GRAPH);
  go.verify = TRUE;
  g_autofree char *graph = run_and_read(plan, &go, path, &glen, &gout);
  g_assert_cmpuint(hlen, ==, 4 * (1 << 18) * sizeof(float));
  g_assert_cmpmem(host, hlen, streams, slen);
  g_assert_cmpmem(host, hlen, graph, glen);
  g_remove(path);
  g_rmdir(dir);
}

static void test_timing_and_report(void) {
  if (!have_gpu()) return;
  g_autoptr(DrGraph) g = pipeline_graph(4, 1 << 20, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  for (int run = 0; run < 4; run++) {
    int mode = run % 2;
    DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    FILE *devnull = fopen("/dev/null", "w");
    o.host_output = devnull;
    o.iterations = 5;
    o.node_timing = run < 2 ? DR_TIMING_STAMPS : DR_TIMING_EVENTS;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    fclose(devnull);
    g_assert_no_error(error);
    g_assert_cmpstr(r->backend, ==, "cuda");
    g_assert_cmpstr(r->mode, ==, mode ? "graph" : "streams");
    for (guint i = 0; i < r->nodes->len; i++) {
      const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
      g_assert_false(isnan(n->start_us));
      g_assert_cmpfloat(n->duration_us, >=, 0);
      g_assert_cmpfloat(n->start_us + n->duration_us, <=, r->makespan_max_us + 1);
      if (n->op == DR_OP_COPY) g_assert_cmpfloat(n->gbps, >, 0);
    }
    /* Along any path the nodes' intervals are disjoint (each starts after
     * its predecessors end), so the critical path fits in the makespan. */
    g_assert_false(isnan(r->critical_path_us));
    g_assert_cmpfloat(r->critical_path_us, <=, r->makespan_max_us + 1);
    g_assert_cmpuint(r->critical_nodes->len, >, 0);
    g_test_message("timing %s", dr_timing_mode_name(o.node_timing));
    g_autoptr(GString) json = g_string_new(NULL);
    dr_report_write_json(r, json);
    g_test_message("%s", json->str);
  }
}

/* gemm through cuBLAS in both modes, against the host twin. */
static void test_gemm(void) {
  if (!have_gpu()) return;
  g_autofree char *dir = g_dir_make_tmp("drgpu-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "c.bin", NULL);
  g_autoptr(DrGraph) g = dr_graph_new();
  const guint64 m = 64, n = 48, k = 32;
  tg_buffer(g, "a", DR_ELEM_F32, m * k, DR_WHERE_DEVICE, DR_INIT_RANDOM, 1);
  tg_buffer(g, "b", DR_ELEM_F32, k * n, DR_WHERE_DEVICE, DR_INIT_RANDOM, 2);
  tg_buffer(g, "c", DR_ELEM_F32, m * n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId ch = tg_buffer(g, "ch", DR_ELEM_F32, m * n, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, ch)->save_path = dr_graph_intern(g, path);
  DrId gm = tg_kernel_node(g, "mm", "gemm_f32");
  tg_arg_buf(g, gm, "a", "a", 0, 0);
  tg_arg_buf(g, gm, "b", "b", 0, 0);
  tg_arg_buf(g, gm, "c", "c", 0, 0);
  DrArg am = {.param = tg_param(g, gm, "m"), .kind = DR_ARG_INT, .v.i = (gint64)m};
  DrArg an = {.param = tg_param(g, gm, "n"), .kind = DR_ARG_INT, .v.i = (gint64)n};
  DrArg ak = {.param = tg_param(g, gm, "k"), .kind = DR_ARG_INT, .v.i = (gint64)k};
  dr_graph_add_arg(g, &am);
  dr_graph_add_arg(g, &an);
  dr_graph_add_arg(g, &ak);
  tg_copy(g, "down", "c", 0, 0, "ch", 0, 0);
  g_autoptr(DrPlan) plan = tg_plan(g);
  gsize len;
  DrRunOptions ho = opts_for(g, DR_BACKEND_HOST, DR_MODE_STREAMS);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) rh = dr_run(plan, &ho, &error);
  g_assert_no_error(error);
  g_autofree float *want = tg_read_floats(path, &len);
  for (int mode = 0; mode < 2; mode++) {
    DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_autofree float *got = tg_read_floats(path, &len);
    g_assert_cmpuint(len, ==, m * n);
    for (gsize i = 0; i < len; i++) g_assert_cmpfloat_with_epsilon(got[i], want[i], 1e-4);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* A user kernel compiled by NVRTC, in both modes; and a compile error. */
static void test_user_kernel(void) {
  if (!have_gpu()) return;
  g_autofree char *dir = g_dir_make_tmp("drgpu-XXXXXX", NULL);
  g_autofree char *src = g_build_filename(dir, "axpb.cu", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.cu", NULL);
  g_autofree char *path = g_build_filename(dir, "y.bin", NULL);
  const char *code =
      "extern \"C\" __global__ void axpb(const float *x, float *y, float a, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = a * x[i] + 1.0f;\n"
      "}\n";
  g_assert_true(g_file_set_contents(src, code, -1, NULL));
  g_assert_true(g_file_set_contents(bad, "this is not CUDA\n", -1, NULL));
  g_autoptr(DrGraph) g = tg_user_kernel_graph(src, 1000, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  for (int mode = 0; mode < 2; mode++) {
    DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    o.verify = TRUE;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
    gsize n;
    g_autofree float *y = tg_read_floats(path, &n);
    g_assert_cmpuint(n, ==, 1000);
    for (gsize i = 0; i < n; i++) g_assert_cmpfloat(y[i], ==, 3.0f * (float)i + 1.0f);
  }
  g_autoptr(DrGraph) gb = tg_user_kernel_graph(bad, 16, NULL);
  g_autoptr(DrPlan) pb = tg_plan(gb);
  DrRunOptions o = opts_for(gb, DR_BACKEND_CUDA, DR_MODE_STREAMS);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(pb, &o, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "does not compile"));
  g_test_message("%s", error->message);
  g_remove(src);
  g_remove(bad);
  g_remove(path);
  g_rmdir(dir);
}

/* 16 independent 200 µs spins on 16 streams must overlap: the makespan
 * stays well under two spins in both modes (the bound is loose: eager
 * launches cost ~4 µs each). The library never sets
 * CUDA_DEVICE_MAX_CONNECTIONS (run.h): like the CLI, this test raises it
 * to one queue per stream when the user did not set it; measured on an
 * H200 (10 iterations, median): streams 271 µs with 17 queues against 302
 * µs with 8, graph 215 against 222. The message prints the numbers; run it
 * alone (-p) so that no earlier test created the context. */
static void test_wide_overlap(void) {
  if (!have_gpu()) return;
  gboolean user_set = g_getenv("CUDA_DEVICE_MAX_CONNECTIONS") != NULL;
  g_autoptr(DrGraph) g = dr_graph_new();
  for (guint i = 0; i < 16; i++) {
    DrId n = tg_kernel_node(g, tg_name(g, "spin", i), "spin");
    DrArg a = {.param = tg_param(g, n, "ns"), .kind = DR_ARG_INT, .v.i = 200000};
    dr_graph_add_arg(g, &a);
  }
  g->run.max_streams = 16;
  g->run.max_streams_set = TRUE;
  tg_passes(g);
  DrPlanOptions po = {.max_streams = 16};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, &po, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_plan_n_streams(plan), ==, 16);
  if (!user_set) g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", "17", FALSE);
  for (int mode = 0; mode < 2; mode++) {
    DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    o.node_timing = DR_TIMING_OFF;
    o.iterations = 10;
    o.warmup = 2;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    /* Timing off: nodes unmeasured, the makespan still measured. */
    g_assert_true(isnan(g_array_index(r->nodes, DrNodeReport, 0).duration_us));
    g_test_message(
        "16 x 200 us spins on 16 streams, %s, CUDA_DEVICE_MAX_CONNECTIONS=%s: makespan %.1f us "
        "(min %.1f)",
        r->mode, g_getenv("CUDA_DEVICE_MAX_CONNECTIONS"), r->makespan_us, r->makespan_min_us);
    g_assert_cmpfloat(r->makespan_us, >=, 200);
    if (!user_set) g_assert_cmpfloat(r->makespan_us, <, 360);
  }
}

/* What per-node timing costs: a chain of 500 small kernels (scale on 256
 * elements, ping-ponging between two buffers), makespan with timing off,
 * stamps and events, in both modes. Prints the per-node overhead of each
 * against off; checks that events add cost, that the graph replays the
 * chain faster than eager issue (GPU-NOTES.md: ~4.3 µs against ~0.6 µs per
 * node), and that stamps cost the graph less than events. The target for
 * stamps is < 0.5 µs/node in graph mode; the message says whether it was
 * met. Seen on an H200 before stamps existed (median of 10): streams 5.5
 * µs/node off, 8.5 with events; graph 1.0 off, 4.7 with events. */
static void test_timing_overhead(void) {
  if (!have_gpu()) return;
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "a", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "b", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  for (guint i = 0; i < 500; i++) {
    DrId n = tg_kernel_node(g, tg_name(g, "k", i), "scale_f32");
    tg_arg_buf(g, n, "x", i % 2 ? "b" : "a", 0, 0);
    tg_arg_f(g, n, "alpha", 1.0);
    tg_arg_buf(g, n, "y", i % 2 ? "a" : "b", 0, 0);
  }
  g_autoptr(DrPlan) plan = tg_plan(g);
  double us[2][DR_N_TIMINGS];
  for (int mode = 0; mode < 2; mode++)
    for (int t = 0; t < DR_N_TIMINGS; t++) {
      DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
      o.node_timing = (DrTimingMode)t;
      o.iterations = 10;
      o.warmup = 2;
      g_autoptr(GError) error = NULL;
      g_autoptr(DrReport) r = dr_run(plan, &o, &error);
      g_assert_no_error(error);
      us[mode][t] = r->makespan_us;
      g_test_message("500-kernel chain, %s, timing %s: makespan %.1f us (%.2f us per node)", r->mode,
                     dr_timing_mode_name(o.node_timing), r->makespan_us, r->makespan_us / 500);
    }
  for (int mode = 0; mode < 2; mode++) {
    double stamps = (us[mode][DR_TIMING_STAMPS] - us[mode][DR_TIMING_OFF]) / 500;
    double events = (us[mode][DR_TIMING_EVENTS] - us[mode][DR_TIMING_OFF]) / 500;
    g_test_message(
        "%s: per-node timing overhead: stamps %.2f us, events %.2f us%s", mode ? "graph" : "streams", stamps,
        events,
        mode ? (stamps < 0.5 ? " (stamps: target < 0.5 us met)" : " (stamps: target < 0.5 us NOT met)") : "");
  }
  /* Graph mode with the stamps inline (between each node and its
   * successor) rather than aside: what the side branches save. */
  g_setenv("DAGRUN_STAMPS_INLINE", "1", TRUE);
  DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, DR_MODE_GRAPH);
  o.iterations = 10;
  o.warmup = 2;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_unsetenv("DAGRUN_STAMPS_INLINE");
  g_assert_no_error(error);
  g_test_message("graph: stamps inline: makespan %.1f us, per-node overhead %.2f us (aside: %.2f us)",
                 r->makespan_us, (r->makespan_us - us[1][DR_TIMING_OFF]) / 500,
                 (us[1][DR_TIMING_STAMPS] - us[1][DR_TIMING_OFF]) / 500);
  g_assert_cmpfloat(us[0][DR_TIMING_EVENTS], >, us[0][DR_TIMING_OFF]);
  g_assert_cmpfloat(us[1][DR_TIMING_EVENTS], >, us[1][DR_TIMING_OFF]);
  g_assert_cmpfloat(us[1][DR_TIMING_OFF], <, us[0][DR_TIMING_OFF]);
  g_assert_cmpfloat(us[1][DR_TIMING_STAMPS], <, us[1][DR_TIMING_EVENTS]);
}

/* Stamps against events on a chain of spin kernels of 100 to 400 µs (one
 * stream, so a node becomes ready when its predecessor ends and stamps'
 * "ready-to-end" is the kernel's time plus launch gaps): every node's
 * median duration agrees within 5% in both modes. */
static void test_stamps_vs_events(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  for (guint i = 0; i < 8; i++) {
    DrId n = tg_kernel_node(g, tg_name(g, "spin", i), "spin");
    DrArg a = {.param = tg_param(g, n, "ns"), .kind = DR_ARG_INT, .v.i = 100000 * (1 + i % 4)};
    dr_graph_add_arg(g, &a);
  }
  /* A chain: each spin after the previous one. */
  for (guint i = 1; i < 8; i++)
    dr_graph_add_after(g, dr_graph_find_node(g, tg_name(g, "spin", i - 1)),
                       dr_graph_find_node(g, tg_name(g, "spin", i)), (DrLoc){0});
  g_autoptr(DrPlan) plan = tg_plan(g);
  g_assert_cmpuint(dr_plan_n_streams(plan), ==, 1); /* checked with or without a GPU */
  g_assert_cmpuint(g->edges->len, ==, 7);
  if (!have_gpu()) return;
  for (int mode = 0; mode < 2; mode++) {
    DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    o.iterations = 10;
    o.warmup = 2;
    g_autoptr(GError) error = NULL;
    o.node_timing = DR_TIMING_STAMPS;
    g_autoptr(DrReport) rs = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    o.node_timing = DR_TIMING_EVENTS;
    g_autoptr(DrReport) re = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < rs->nodes->len; i++) {
      const DrNodeReport *s = &g_array_index(rs->nodes, DrNodeReport, i);
      const DrNodeReport *e = &g_array_index(re->nodes, DrNodeReport, i);
      g_assert_cmpuint(s->node, ==, e->node);
      g_test_message("%s %s: stamps %.2f us, events %.2f us (%+.2f%%)", rs->mode, s->id, s->duration_us,
                     e->duration_us, 100 * (s->duration_us - e->duration_us) / e->duration_us);
      g_assert_cmpfloat(fabs(s->duration_us - e->duration_us), <=, 0.05 * e->duration_us);
    }
  }
}

/* The scalar argument `param` of node `id`. */
static DrArg *node_arg(DrGraph *g, const char *id, const char *param) {
  const DrNode *n = dr_graph_node(g, dr_graph_find_node(g, id));
  guint32 p = tg_param(g, dr_graph_find_node(g, id), param);
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++)
    if (dr_graph_arg(g, i)->param == p) return dr_graph_arg(g, i);
  g_error("node '%s' has no argument '%s'", id, param);
}

/* A library user changes a scalar argument between runs of one graph-mode
 * backend: dr__cuda_graph_update re-captures and updates the executable
 * in place (cudaGraphExecUpdate), and the next iteration computes with the
 * new value. Then the cost of an update against a re-instantiation (the
 * table without the update entry) on a 500-kernel chain, printed
 * (GPU-NOTES.md: 0.58 ms against 1.65 ms for 1000 nodes). */
static void test_graph_update(void) {
  if (!have_gpu()) return;
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, 1024, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "y", DR_ELEM_F32, 1024, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId s = tg_kernel_node(g, "scale", "scale_f32");
  tg_arg_buf(g, s, "x", "x", 0, 0);
  tg_arg_f(g, s, "alpha", 2.0);
  tg_arg_buf(g, s, "y", "y", 0, 0);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, DR_MODE_GRAPH);
  g_autoptr(GError) error = NULL;
  DrBackend *b = dr__cuda_backend.open(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(dr__cuda_backend.setup(b, &error));
  g_autofree float *y = g_new(float, 1024);
  g_assert_true(dr__cuda_backend.run_iteration(b, 0, NULL, &error));
  g_assert_true(dr__cuda_backend.read_buffer(b, dr_graph_find_buffer(g, "y"), y, &error));
  g_assert_cmpfloat(y[10], ==, 20.0f);
  node_arg(g, "scale", "alpha")->v.f = 3.0;
  const char *how = NULL;
  g_assert_true(dr__cuda_graph_update(b, &how, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(how, ==, "updated");
  g_assert_true(dr__cuda_backend.run_iteration(b, 1, NULL, &error));
  g_assert_true(dr__cuda_backend.read_buffer(b, dr_graph_find_buffer(g, "y"), y, &error));
  g_assert_cmpfloat(y[10], ==, 30.0f);
  dr__cuda_backend.close(b);

  g_autoptr(DrGraph) chain = dr_graph_new();
  tg_buffer(chain, "a", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(chain, "b", DR_ELEM_F32, 256, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  for (guint i = 0; i < 500; i++) {
    DrId n = tg_kernel_node(chain, tg_name(chain, "k", i), "scale_f32");
    tg_arg_buf(chain, n, "x", i % 2 ? "b" : "a", 0, 0);
    tg_arg_f(chain, n, "alpha", 1.0);
    tg_arg_buf(chain, n, "y", i % 2 ? "a" : "b", 0, 0);
  }
  g_autoptr(DrPlan) cplan = tg_plan(chain);
  DrCudaApi no_update = *dr_cuda_api_default();
  no_update.cudaGraphExecUpdate = NULL;
  for (int k = 0; k < 2; k++) {
    if (k) dr_cuda_api_set(&no_update);
    DrRunOptions co = opts_for(chain, DR_BACKEND_CUDA, DR_MODE_GRAPH);
    DrBackend *cb = dr__cuda_backend.open(cplan, &co, &error);
    g_assert_no_error(error);
    g_assert_true(dr__cuda_backend.setup(cb, &error));
    g_assert_true(dr__cuda_backend.run_iteration(cb, 0, NULL, &error));
    node_arg(chain, "k7", "alpha")->v.f = 1.5;
    gint64 t0 = g_get_monotonic_time();
    g_assert_true(dr__cuda_graph_update(cb, &how, &error));
    gint64 t1 = g_get_monotonic_time();
    g_assert_no_error(error);
    g_assert_cmpstr(how, ==, k ? "re-instantiated" : "updated");
    g_assert_true(dr__cuda_backend.run_iteration(cb, 1, NULL, &error));
    g_test_message("500-kernel chain: re-capture + %s in %.2f ms", how, (t1 - t0) / 1000.0);
    dr__cuda_backend.close(cb);
    dr_cuda_api_set(NULL);
  }
}

/* ---- fault injection ----------------------------------------------------- */

static struct {
  guint64 calls;                                         /* calls made so far */
  guint64 fail_at;                                       /* 1-based call to fail; 0: none */
  gint64 streams, events, mallocs, hosts, graphs, execs; /* live handles */
  gboolean during_cleanup_ok;
} shim;

static const DrCudaApi *real;

/* Counts a call; returns TRUE when this one must fail. Calls that release
 * never fail, so the balance below measures the backend, not the shim. */
static gboolean shim_tick(void) {
  shim.calls++;
  return shim.fail_at && shim.calls == shim.fail_at;
}

#define TRACK_CREATE(field, rc)            \
  do {                                     \
    if ((rc) == cudaSuccess) shim.field++; \
  } while (0)

#define DR_X(name, params, args)                       \
  static cudaError_t shim_##name params {              \
    if (shim_tick()) return cudaErrorMemoryAllocation; \
    return real->name args;                            \
  }
DR_CUDA_API_LIST(DR_X)
#undef DR_X

static cudaError_t count_stream_create(cudaStream_t *s, unsigned int f, int p) {
  if (shim_tick()) return cudaErrorMemoryAllocation;
  cudaError_t rc = real->cudaStreamCreateWithPriority(s, f, p);
  TRACK_CREATE(streams, rc);
  return rc;
}
static cudaError_t count_stream_destroy(cudaStream_t s) {
  shim.streams--;
  return real->cudaStreamDestroy(s);
}
static cudaError_t count_event_create(cudaEvent_t *e, unsigned int f) {
  if (shim_tick()) return cudaErrorMemoryAllocation;
  cudaError_t rc = real->cudaEventCreateWithFlags(e, f);
  TRACK_CREATE(events, rc);
  return rc;
}
static cudaError_t count_event_destroy(cudaEvent_t e) {
  shim.events--;
  return real->cudaEventDestroy(e);
}
static cudaError_t count_malloc(void **p, size_t n) {
  if (shim_tick()) return cudaErrorMemoryAllocation;
  cudaError_t rc = real->cudaMalloc(p, n);
  TRACK_CREATE(mallocs, rc);
  return rc;
}
static cudaError_t count_free(void *p) {
  shim.mallocs--;
  return real->cudaFree(p);
}
static cudaError_t count_malloc_host(void **p, size_t n) {
  if (shim_tick()) return cudaErrorMemoryAllocation;
  cudaError_t rc = real->cudaMallocHost(p, n);
  TRACK_CREATE(hosts, rc);
  return rc;
}
static cudaError_t count_free_host(void *p) {
  shim.hosts--;
  return real->cudaFreeHost(p);
}
static cudaError_t count_end_capture(cudaStream_t s, cudaGraph_t *g) {
  if (shim_tick()) {
    /* Still end the real capture so the streams leave capture mode; report
     * failure and hand back no graph. */
    cudaGraph_t tmp = NULL;
    (void)real->cudaStreamEndCapture(s, &tmp);
    if (tmp) (void)real->cudaGraphDestroy(tmp);
    *g = NULL;
    return cudaErrorMemoryAllocation;
  }
  cudaError_t rc = real->cudaStreamEndCapture(s, g);
  if (rc == cudaSuccess && *g) shim.graphs++;
  return rc;
}
static cudaError_t count_graph_destroy(cudaGraph_t g) {
  shim.graphs--;
  return real->cudaGraphDestroy(g);
}
static cudaError_t count_instantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long f) {
  if (shim_tick()) return cudaErrorMemoryAllocation;
  cudaError_t rc = real->cudaGraphInstantiate(e, g, f);
  TRACK_CREATE(execs, rc);
  return rc;
}
static cudaError_t count_exec_destroy(cudaGraphExec_t e) {
  shim.execs--;
  return real->cudaGraphExecDestroy(e);
}
/* Never fail the error-state queries and synchronizations that cleanup
 * uses: count only what the backend asks for as work. */
static cudaError_t pass_sync(void) { return real->cudaDeviceSynchronize(); }
static cudaError_t pass_last(void) { return real->cudaGetLastError(); }
static cudaError_t pass_free_async(void *p, cudaStream_t s) { return real->cudaFreeAsync(p, s); }

static int shim_kernel_launch(const DrKernelDef *def, const DrKLaunch *l) {
  if (shim_tick()) return cudaErrorLaunchOutOfResources;
  return real->kernel_launch(def, l);
}

static int shim_stamp_launch(unsigned long long *slot, cudaStream_t stream) {
  if (shim_tick()) return cudaErrorLaunchOutOfResources;
  return real->stamp_launch(slot, stream);
}

static DrCudaApi make_shim(void) {
  DrCudaApi api = {
#define DR_X(name, params, args) .name = shim_##name,
      DR_CUDA_API_LIST(DR_X)
#undef DR_X
  };
  api.cudaStreamCreateWithPriority = count_stream_create;
  api.cudaStreamDestroy = count_stream_destroy;
  api.cudaEventCreateWithFlags = count_event_create;
  api.cudaEventDestroy = count_event_destroy;
  api.cudaMalloc = count_malloc;
  api.cudaFree = count_free;
  api.cudaMallocHost = count_malloc_host;
  api.cudaFreeHost = count_free_host;
  api.cudaStreamEndCapture = count_end_capture;
  api.cudaGraphDestroy = count_graph_destroy;
  api.cudaGraphInstantiate = count_instantiate;
  api.cudaGraphExecDestroy = count_exec_destroy;
  api.cudaDeviceSynchronize = pass_sync;
  api.cudaGetLastError = pass_last;
  api.cudaFreeAsync = pass_free_async;
  api.cudaGetErrorName = real->cudaGetErrorName;
  api.cudaGetErrorString = real->cudaGetErrorString;
  api.kernel_launch = shim_kernel_launch;
  api.stamp_launch = shim_stamp_launch;
  return api;
}

static void fault_sweep(DrMode mode) {
  if (!have_gpu()) return;
  g_autoptr(DrGraph) g = pipeline_graph(3, 4096, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  real = dr_cuda_api_default();
  DrCudaApi api = make_shim();
  dr_cuda_api_set(&api);
  FILE *devnull = fopen("/dev/null", "w");
  DrRunOptions o = opts_for(g, DR_BACKEND_CUDA, mode);
  o.iterations = 2;
  o.host_output = devnull;
  /* A clean run counts the calls. */
  memset(&shim, 0, sizeof shim);
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
  }
  guint64 total = shim.calls;
  g_assert_cmpint(shim.streams, ==, 0);
  g_assert_cmpint(shim.events, ==, 0);
  g_assert_cmpint(shim.mallocs, ==, 0);
  g_assert_cmpint(shim.hosts, ==, 0);
  g_test_message("%s: %" G_GUINT64_FORMAT " CUDA calls in a clean run", dr_mode_name(mode), total);
  guint failures = 0;
  for (guint64 n = 1; n <= total; n++) {
    memset(&shim, 0, sizeof shim);
    shim.fail_at = n;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    if (r == NULL) {
      failures++;
      g_assert_nonnull(error);
      g_assert_true(error->domain == DR_ERROR);
      if (error->code == DR_ERROR_RUNTIME)
        g_assert_true(strstr(error->message, "failed") != NULL ||
                      strstr(error->message, "kernel launch") != NULL);
    }
    /* Whatever happened, everything made was released. */
    if (shim.streams || shim.events || shim.mallocs || shim.hosts || shim.graphs || shim.execs)
      g_error("fail at call %" G_GUINT64_FORMAT ": leaked streams %" G_GINT64_FORMAT
              " events %" G_GINT64_FORMAT " mallocs %" G_GINT64_FORMAT " pinned %" G_GINT64_FORMAT
              " graphs %" G_GINT64_FORMAT " execs %" G_GINT64_FORMAT " (%s)",
              n, shim.streams, shim.events, shim.mallocs, shim.hosts, shim.graphs, shim.execs,
              error ? error->message : "no error");
  }
  fclose(devnull);
  dr_cuda_api_set(NULL);
  g_test_message("%u of %" G_GUINT64_FORMAT " injected failures surfaced as errors", failures, total);
  /* The device still works after the sweep. */
  DrRunOptions clean = opts_for(g, DR_BACKEND_CUDA, mode);
  FILE *dn = fopen("/dev/null", "w");
  clean.host_output = dn;
  clean.verify = TRUE;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &clean, &error);
  fclose(dn);
  g_assert_no_error(error);
  g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  g_assert_cmpuint(failures, ==, total); /* no failure is swallowed */
}

static void test_faults_streams(void) { fault_sweep(DR_MODE_STREAMS); }
static void test_faults_graph(void) { fault_sweep(DR_MODE_GRAPH); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/backends/gpu/pipeline-modes", test_pipeline_modes);
  g_test_add_func("/backends/gpu/lifetimes", test_lifetimes);
  g_test_add_func("/backends/gpu/timing-and-report", test_timing_and_report);
  g_test_add_func("/backends/gpu/gemm", test_gemm);
  g_test_add_func("/backends/gpu/user-kernel", test_user_kernel);
  g_test_add_func("/backends/gpu/wide-overlap", test_wide_overlap);
  g_test_add_func("/backends/gpu/timing-overhead", test_timing_overhead);
  g_test_add_func("/backends/gpu/stamps-vs-events", test_stamps_vs_events);
  g_test_add_func("/backends/gpu/graph-update", test_graph_update);
  g_test_add_func("/backends/gpu/faults/streams", test_faults_streams);
  g_test_add_func("/backends/gpu/faults/graph", test_faults_graph);
  return g_test_run();
}
