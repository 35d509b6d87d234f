/* graph_cache_test.c: graph mode's cache of instantiated executables
 * (`run.graph_cache: N`, issue #19; backends/cuda/graph_cache.h) on the
 * fake runtime's graph-node model, through the public API.
 *
 * The pipeline has a node that cannot be updated in place when the
 * parameter changes (a user kernel, whose arguments its capture baked in;
 * on the GPU also a gemm whose cuBLAS launch made several nodes) beside
 * two that can (scale_f32, reduce_sum_f32). Each change of seq forces a new capture: without the cache
 * the executable is updated or replaced ("updated", "re-instantiated");
 * with it, a value seen before puts its kept executable back ("cached":
 * no capture, no cudaGraphInstantiate, the in-place node set on it) and a
 * new one instantiates a variant, evicting the least recently used when
 * the cache is full. Every run's bytes equal a graph captured at that
 * value; the report names the node that forced it and what the cache
 * did; faults at every call release everything. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "include/dagrun/dagrun.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/fault/fake_runner.h"

#define MAXSEQ 64

/* A PTX file the fake loads without reading (tests/fault:fault does the
 * same); its path in *ptx. */
static char *ptx_path(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  char *ptx = g_build_filename(tmp, "graph-cache-touch.ptx", NULL);
  g_assert_true(g_file_set_contents(ptx, "// the fake runtime does not read PTX\n", -1, NULL));
  return ptx;
}

static char *pipeline(guint cache) {
  g_autofree char *ptx = ptx_path();
  return g_strdup_printf(
      "dagrun: 1\n"
      "run: {graph_cache: %u}\n"
      "params:\n"
      "  seq: {type: int, default: 8, min: 4, max: %d}\n"
      "  alpha: {type: float, default: 2, min: 0, max: 8}\n"
      "kernels:\n"
      "  touch:\n"
      "    ptx: '%s'\n"
      "    params:\n"
      "      - {name: buf, type: f32*, access: readwrite}\n"
      "      - {name: n, type: i64}\n"
      "    grid: {over: n, block: 128}\n"
      "buffers:\n"
      "  x: {type: f32, count: %d, init: iota}\n"
      "  y: {type: f32, count: %d, init: zeros}\n"
      "  z: {type: f32, count: %d, init: zeros}\n"
      "  s: {type: f32, count: 1, init: zeros}\n"
      "nodes:\n"
      "  sc: {op: kernel, kernel: scale_f32, args: {x: \"x[0:seq]\", alpha: \"{alpha}\", y: \"y[0:seq]\"}}\n"
      "  t: {op: kernel, kernel: touch, args: {buf: \"z[0:seq]\", n: \"{seq}\"}}\n"
      "  r: {op: kernel, kernel: reduce_sum_f32, args: {x: \"y[0:seq]\", y: s}}\n",
      cache, MAXSEQ, ptx, MAXSEQ, MAXSEQ, MAXSEQ);
}

typedef struct {
  float y[MAXSEQ];
  float s;
} Out;

static void read_out(DrRunner *r, Out *o) {
  g_autoptr(GError) error = NULL;
  memset(o, 0, sizeof *o);
  g_assert_true(dr_runner_read_buffer(r, "y", o->y, sizeof o->y, &error));
  g_assert_true(dr_runner_read_buffer(r, "s", &o->s, sizeof o->s, &error));
  g_assert_no_error(error);
}

/* What a graph captured from the start at seq gives. */
static void reference(gint64 seq, Out *o) {
  g_autoptr(GError) error = NULL;
  g_autofree char *text = pipeline(0);
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
  g_assert_no_error(error);
  g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, seq);
  g_assert_true(dr_pipeline_set_param(p, "seq", v, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  read_out(r, o);
}

static char *json_of(DrRunReport *rr) {
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(rr, json);
  return g_string_free(g_steal_pointer(&json), FALSE);
}

typedef struct {
  gint64 seq;
  const char *how;    /* dr_runner_last_update */
  const char *result; /* the report's graph_cache result */
  guint variants;
} Step;

/* What test_lru checks of each step beyond sweep's: the calls a hit or a
 * miss makes, and the node that forced it in both reports. */
static void lru_step(const Step *st, DrRunReport *rr, guint from) {
  gboolean hit = strcmp(st->result, "hit") == 0;
  /* A hit: the kept executable already holds sc's and r's values at
   * this seq, so nothing is captured or set; a miss: the iteration
   * (nothing is set on the one replaced). */
  g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, hit ? 0 : 1);
  g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
  g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 0);
  g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphLaunch"), ==, 1);
  g_autofree char *json = json_of(rr);
  g_assert_nonnull(strstr(json, "\"forced_by\": \"t\""));
  g_autoptr(GString) text_report = g_string_new(NULL);
  dr_run_report_write_text(rr, text_report);
  g_autofree char *line =
      g_strdup_printf("forced by node 't'; graph cache %s, %u variants", st->result, st->variants);
  g_assert_nonnull(strstr(text_report->str, line));
}

/* Runs `steps` [n] on a cache of 2 after one run at the default, with
 * `split` (or NULL) captured as two nodes from seq 16 on
 * (dr_fake_set_split). Each step is checked: its update, whether it
 * instantiated, the JSON report's cache result, and the bytes of a graph
 * captured at that value (computed first, on the fake too); `more`, when
 * given, checks more of it. */
static void sweep(const Step *steps, guint n, const char *split,
                  void (*more)(const Step *st, DrRunReport *rr, guint from)) {
  g_autofree Out *want = g_new(Out, n);
  dr_fake_runner_start();
  for (guint i = 0; i < n; i++) reference(steps[i].seq, &want[i]);
  dr_fake_runner_finish();
  dr_fake_runner_start();
  dr_fake_set_split(split, 16);
  g_autoptr(GError) error = NULL;
  {
    g_autofree char *text = pipeline(2);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < n; i++) {
      g_assert_true(dr_runner_set_param(r, "seq", steps[i].seq, &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, steps[i].how);
      gboolean hit = strcmp(steps[i].result, "hit") == 0;
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, hit ? 0 : 1);
      g_autofree char *json = json_of(rr);
      g_autofree char *want_cache = g_strdup_printf("\"graph_cache\": {\"result\": \"%s\", \"variants\": %u}",
                                                    steps[i].result, steps[i].variants);
      if (strstr(json, want_cache) == NULL) g_printerr("step %u: %s\n", i, json);
      g_assert_nonnull(strstr(json, want_cache));
      if (more) more(&steps[i], rr, from);
      Out got;
      read_out(r, &got);
      gsize bytes = (gsize)steps[i].seq * sizeof(float);
      g_assert_cmpmem(got.y, bytes, want[i].y, bytes);
      g_assert_cmpfloat(got.s, ==, want[i].s);
    }
  }
  dr_fake_set_split(NULL, 0);
  dr_fake_runner_finish();
}

/* A cache of 2: every step's update, instantiations, report and bytes. */
static void test_lru(void) {
  const Step steps[] = {
      {16, "re-instantiated", "miss", 2},  /* {8} -> {8, 16} */
      {8, "cached", "hit", 2},             /* 8 back */
      {16, "cached", "hit", 2},            /* 16 back */
      {32, "re-instantiated", "evict", 2}, /* 8 least recently used: gone */
      {16, "cached", "hit", 2},            /* 16 kept */
      {8, "re-instantiated", "evict", 2},  /* 8 again: 32 goes */
      {16, "cached", "hit", 2},
  };
  sweep(steps, G_N_ELEMENTS(steps), NULL, lru_step);
}

/* The GPU's case (tests/gpu/run.sh, gpu/params/graph-cache): a launch
 * that is one node at one shape and two at another, like cuBLAS's gemm.
 * Here sc captures as two nodes from seq 16 on, so the executable of 16
 * cannot take sc in place while the one of 8 can; the sweep of the GPU
 * check, cache of 2, hits where a value comes back. */
static void test_split(void) {
  const Step steps[] = {
      {16, "re-instantiated", "miss", 2}, /* {8} -> {8, 16}; t forces it */
      {8, "cached", "hit", 2},            /* sc cannot be set on 16's: forced by sc */
      {16, "cached", "hit", 2},
      {32, "re-instantiated", "evict", 2},
      {16, "cached", "hit", 2},
      {8, "re-instantiated", "evict", 2},
  };
  sweep(steps, G_N_ELEMENTS(steps), "scale_f32", NULL);
}

/* A gemm sized by seq is set in place: its one-node capture's kernel is
 * cuBLAS's, which the runtime cannot name (cudaGraphKernelNodeGetParams
 * refuses it, as on the H200), so the driver's copy sets it
 * (kernel_node_copy): no capture of the iteration, no instantiation. */
static const char *gemm_text =
    "dagrun: 1\n"
    "%s"
    "params:\n"
    "  seq: {type: int, default: 4, min: 1, max: 16}\n"
    "buffers:\n"
    "  x: {type: f32, count: 64, init: iota}\n"
    "  w: {type: f32, count: 16, init: iota}\n"
    "  y: {type: f32, count: 64, init: zeros}\n"
    "nodes:\n"
    "  mm: {op: kernel, kernel: gemm_f32, args: {a: \"x[0:seq*4]\", b: w, c: \"y[0:seq*4]\", m: \"{seq}\", "
    "n: 4, k: 4}}\n";

/* y of a fresh graph-mode run of gemm pipeline `text` at each of `seqs`
 * [n] (the fake's cuBLAS on), into want[i]. */
static void gemm_reference(const char *text, const gint64 *seqs, guint n, float (*want)[64]) {
  g_autoptr(GError) error = NULL;
  for (guint i = 0; i < n; i++) {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("gemm.yaml", text, -1, &error);
    g_assert_no_error(error);
    g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, seqs[i]);
    g_assert_true(dr_pipeline_set_param(p, "seq", v, &error));
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_true(dr_runner_read_buffer(r, "y", want[i], sizeof want[i], &error));
  }
}

/* y of runner `r` over the gemm's extent at `seq` equals `want`'s. */
static void same_y(DrRunner *r, gint64 seq, const float *want) {
  g_autoptr(GError) error = NULL;
  float got[64];
  g_assert_true(dr_runner_read_buffer(r, "y", got, sizeof got, &error));
  g_assert_no_error(error);
  gsize bytes = (gsize)seq * 4 * sizeof(float);
  g_assert_cmpmem(got, bytes, want, bytes);
}

/* With the cache a gemm is keyed: each shape gets an executable of its
 * own (captured once, forced by the gemm), and a shape seen before puts
 * its executable back with nothing to set: no cuBLAS launch, no capture,
 * no node set. Every run's bytes equal a run captured at that value. */
static void test_gemm_cached(void) {
  const gint64 seqs[] = {16, 4, 16, 4, 9, 16};
  const char *hows[] = {"re-instantiated", "cached", "cached", "cached", "re-instantiated", "cached"};
  g_autofree char *plain = g_strdup_printf(gemm_text, "");
  g_autofree char *cached = g_strdup_printf(gemm_text, "run: {graph_cache: 4}\n");
  float want[G_N_ELEMENTS(seqs)][64];
  dr_fake_runner_start();
  dr_fake_set_blas(TRUE, 0);
  g_autoptr(GError) error = NULL;
  gemm_reference(plain, seqs, G_N_ELEMENTS(seqs), want);
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("gemm.yaml", cached, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error); /* seq 4: the setup's executable */
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, hows[i]);
      gboolean hit = strcmp(hows[i], "cached") == 0;
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, hit ? 0 : 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, hit ? 0 : 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_launch"), ==, hit ? 0 : 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_copy"), ==, 0);
      g_autofree char *json = json_of(rr);
      g_assert_nonnull(strstr(json, "\"forced_by\": \"mm\""));
      g_assert_nonnull(strstr(json, hit ? "\"result\": \"hit\"" : "\"result\": \"miss\""));
      same_y(r, seqs[i], want[i]);
    }
  }
  dr_fake_set_blas(FALSE, 0);
  dr_fake_runner_finish();
}

static void test_gemm_in_place(void) {
  g_autofree char *text = g_strdup_printf(gemm_text, "");
  const gint64 seqs[] = {16, 4, 9};
  float want[G_N_ELEMENTS(seqs)][64];
  dr_fake_runner_start();
  dr_fake_set_blas(TRUE, 0);
  g_autoptr(GError) error = NULL;
  gemm_reference(text, seqs, G_N_ELEMENTS(seqs), want);
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("gemm.yaml", text, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_copy"), ==, 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      same_y(r, seqs[i], want[i]);
    }
  }
  dr_fake_set_blas(FALSE, 0);
  dr_fake_runner_finish();
}

/* Spare slots (graph.c): a varying gemm without the cache is captured
 * with a spare kernel node after it. Here cuBLAS's launch is one node
 * below seq 9 and two from 9 on (dr_fake_set_split, like its split-K
 * product and reduction on the H200): every change is set in place (the
 * gemm's one-node capture, no capture of the iteration, no
 * instantiation), the spare taking the reduction's node and being
 * enabled when the launch makes two, and disabled when it makes one
 * again, so the reduction runs exactly in the runs of a split shape.
 * Every run's bytes equal a run captured at that value. */
static void test_gemm_spare(void) {
  g_autofree char *text = g_strdup_printf(gemm_text, "");
  const gint64 seqs[] = {16, 4, 9, 4, 16, 12};
  float want[G_N_ELEMENTS(seqs)][64];
  dr_fake_runner_start();
  dr_fake_set_blas(TRUE, 0);
  g_autoptr(GError) error = NULL;
  gemm_reference(text, seqs, G_N_ELEMENTS(seqs), want);
  dr_fake_set_split("gemm_f32", 36); /* a's seq*4 elements: from seq 9 */
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("gemm.yaml", text, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    guint setup = dr_fake_trace()->len;
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error); /* seq 4: one node, the spare disabled */
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_count_calls(setup, "spare_launch"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(setup, "cudaGraphNodeSetEnabled"), ==, 1);
    gint64 was = 4;
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len, runs = dr_fake_split_runs();
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 1); /* the gemm alone */
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      gboolean split = seqs[i] >= 9, split_before = was >= 9;
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_copy"), ==, split ? 2 : 1);
      /* The spare changes state only where the split does. */
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphNodeSetEnabled"), ==, split != split_before);
      g_assert_cmpuint(dr_fake_split_runs() - runs, ==, split ? 1 : 0);
      g_autofree char *json = json_of(rr);
      g_assert_null(strstr(json, "forced_by"));
      same_y(r, seqs[i], want[i]);
      was = seqs[i];
    }
  }
  dr_fake_set_split(NULL, 0);
  dr_fake_set_blas(FALSE, 0);
  dr_fake_runner_finish();
}

/* A user kernel whose arguments read a parameter is set in place where
 * the table can copy its node (user_node_copy: the driver's copy on the
 * GPU): its launch captured alone, no capture of the iteration, no
 * instantiation; every replay runs it with the value set (the fake's
 * record of its second argument, n). Without the copy (the other tests'
 * table) it captures the iteration again, as test_off checks. */
static void test_user_in_place(void) {
  dr_fake_runner_start();
  dr_cuda_api_set(dr_fake_api_user_sets());
  g_autoptr(GError) error = NULL;
  {
    g_autofree char *text = pipeline(0);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_user_replayed(), ==, 8);
    const gint64 seqs[] = {16, 8, 64, 5};
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
      /* t alone, and r (a reduction: two launches, captured alone too);
       * sc's launch is described. */
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 2);
      g_assert_cmpuint(dr_fake_count_calls(from, "user_node_copy"), ==, 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      g_assert_cmpuint(dr_fake_user_replayed(), ==, (guint64)seqs[i]);
      g_autofree char *json = json_of(rr);
      g_assert_null(strstr(json, "forced_by"));
      Out got, want;
      read_out(r, &got);
      dr_cuda_api_set(dr_fake_api_graph_nodes());
      reference(seqs[i], &want);
      dr_cuda_api_set(dr_fake_api_user_sets());
      gsize bytes = (gsize)seqs[i] * sizeof(float);
      g_assert_cmpmem(got.y, bytes, want.y, bytes);
      g_assert_cmpfloat(got.s, ==, want.s);
    }
  }
  dr_fake_runner_finish();
}

/* A hit sets what the kept executable does not hold: alpha changed while
 * the executable of 16 was in use (sc set in place there), so going back
 * to 8 sets sc on 8's (its launch described and set) and not r, whose values 8's
 * executable holds. The bytes are a graph captured at (8, alpha 5). */
static void test_hit_sets_what_differs(void) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autofree char *text = pipeline(2);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_true(dr_runner_set_param(r, "seq", 16, &error));
    g_autoptr(DrRunReport) second = dr_runner_run(r, &error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "re-instantiated");
    g_assert_true(dr_runner_set_param_f64(r, "alpha", 5.0, &error));
    g_autoptr(DrRunReport) third = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
    g_assert_true(dr_runner_set_param(r, "seq", 8, &error));
    guint from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) back = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "cached");
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
    g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_params"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
    Out got;
    read_out(r, &got);
    for (int e = 0; e < 8; e++) g_assert_cmpfloat(got.y[e], ==, 5.0f * (float)e);
    g_assert_cmpfloat(got.s, ==, 5.0f * 28.0f);
  }
  dr_fake_runner_finish();
}

/* A launch captured as a chain of two kernel nodes (sc from seq 16 on,
 * like cuBLAS's split-K gemm on the H200) is set in place node by node
 * while the new shape makes the same chain: no capture of the iteration,
 * no instantiation, two node sets. A shape that makes one node (8) cannot
 * be set on the pair: sc forces a capture and the report says so. Every
 * run's bytes equal a graph captured at that value. */
static void test_chain_in_place(void) {
  const char *text =
      "dagrun: 1\n"
      "params:\n"
      "  seq: {type: int, default: 16, min: 4, max: 64}\n"
      "buffers:\n"
      "  x: {type: f32, count: 64, init: iota}\n"
      "  y: {type: f32, count: 64, init: zeros}\n"
      "nodes:\n"
      "  sc: {op: kernel, kernel: scale_f32, args: {x: \"x[0:seq]\", alpha: 3.0, y: \"y[0:seq]\"}}\n";
  const struct {
    gint64 seq;
    const char *how;
  } steps[] = {{32, "updated-nodes"}, {48, "updated-nodes"}, {8, NULL}, {16, NULL}};
  dr_fake_runner_start();
  dr_fake_set_split("scale_f32", 16);
  /* sc stands for a library call here, which keeps no count in device
   * memory (an element-wise built-in otherwise would: devwords.h). */
  g_setenv("DAGRUN_GRAPH_DEVICE_PARAMS", "0", TRUE);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("chain.yaml", text, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", steps[i].seq, &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      const char *how = dr_runner_last_update(r);
      g_autofree char *json = json_of(rr);
      if (steps[i].how != NULL) {
        g_assert_cmpstr(how, ==, steps[i].how);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 1); /* sc alone */
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 2);
        g_assert_null(strstr(json, "forced_by"));
      } else {
        /* 8 makes one node where the executable has two (then 16 two
         * where the one of 8 has one): the iteration is captured again. */
        g_assert_true(strcmp(how, "updated") == 0 || strcmp(how, "re-instantiated") == 0);
        g_assert_nonnull(strstr(json, "\"forced_by\": \"sc\""));
      }
      float got[64], want[64] = {0};
      g_assert_true(dr_runner_read_buffer(r, "y", got, sizeof got, &error));
      for (gint64 e = 0; e < steps[i].seq; e++) want[e] = 3.0f * (float)e;
      /* y keeps what longer runs before wrote past seq: compare [0, seq). */
      g_assert_cmpmem(got, (gsize)steps[i].seq * sizeof(float), want, (gsize)steps[i].seq * sizeof(float));
    }
  }
  dr_fake_set_split(NULL, 0);
  g_unsetenv("DAGRUN_GRAPH_DEVICE_PARAMS");
  dr_fake_runner_finish();
}

/* Without the cache (the default): the one executable is updated or
 * replaced, the report names the node and says nothing of a cache. */
static void test_off(void) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autofree char *text = pipeline(0);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    const gint64 seqs[] = {16, 8, 16};
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      const char *how = dr_runner_last_update(r);
      g_assert_true(strcmp(how, "updated") == 0 || strcmp(how, "re-instantiated") == 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), >=, 1);
      g_autofree char *json = json_of(rr);
      g_assert_nonnull(strstr(json, "\"forced_by\": \"t\""));
      g_assert_null(strstr(json, "graph_cache"));
    }
  }
  dr_fake_runner_finish();
}

/* A cache of 1 keeps only the executable in use: every forced change
 * instantiates and evicts the one before. */
static void test_one(void) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autofree char *text = pipeline(1);
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    const gint64 seqs[] = {16, 8, 16};
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, "re-instantiated");
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecDestroy"), ==, 1);
      g_autofree char *json = json_of(rr);
      g_assert_nonnull(strstr(json, "\"graph_cache\": {\"result\": \"evict\", \"variants\": 1}"));
    }
  }
  dr_fake_runner_finish();
}

/* A fault at every call of a miss and of a hit: the run fails with the
 * runtime's error or succeeds; freeing the runner releases everything. */
static void test_faults(void) {
  for (int which = 0; which < 2; which++) {
    guint64 total = 0;
    for (guint64 fail_at = 0;; fail_at++) {
      dr_fake_runner_start();
      g_autoptr(GError) error = NULL;
      g_autofree char *text = pipeline(3);
      g_autoptr(DrPipeline) p = dr_pipeline_load_string("cache.yaml", text, -1, &error);
      g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
      DrRunner *r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
      g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
      g_assert_no_error(error);
      /* which 0: a miss (16 new); 1: a hit (back to 8 after 16). */
      if (which == 1) {
        g_assert_true(dr_runner_set_param(r, "seq", 16, &error));
        g_autoptr(DrRunReport) second = dr_runner_run(r, &error);
        g_assert_no_error(error);
      }
      g_assert_true(dr_runner_set_param(r, "seq", which == 1 ? 8 : 16, &error));
      guint64 before = dr_fake_points();
      if (fail_at > 0) dr_fake_arm(before + fail_at, DR_FAULT_LAUNCH);
      DrRunReport *rr = dr_runner_run(r, &error);
      if (fail_at == 0) {
        g_assert_no_error(error);
        g_assert_cmpstr(dr_runner_last_update(r), ==, which == 1 ? "cached" : "re-instantiated");
        total = dr_fake_points() - before;
      } else if (rr == NULL) {
        g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
      }
      dr_run_report_free(rr);
      g_clear_error(&error);
      dr_fake_runner_free_faulted(r);
      if (fail_at >= total) break;
    }
    g_assert_cmpuint(total, >, 2);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api());
  g_test_add_func("/fault/graph-cache/lru", test_lru);
  g_test_add_func("/fault/graph-cache/split", test_split);
  g_test_add_func("/fault/graph-cache/gemm-in-place", test_gemm_in_place);
  g_test_add_func("/fault/graph-cache/gemm-cached", test_gemm_cached);
  g_test_add_func("/fault/graph-cache/gemm-spare", test_gemm_spare);
  g_test_add_func("/fault/graph-cache/user-in-place", test_user_in_place);
  g_test_add_func("/fault/graph-cache/chain-in-place", test_chain_in_place);
  g_test_add_func("/fault/graph-cache/hit-sets-what-differs", test_hit_sets_what_differs);
  g_test_add_func("/fault/graph-cache/off", test_off);
  g_test_add_func("/fault/graph-cache/one", test_one);
  g_test_add_func("/fault/graph-cache/faults", test_faults);
  return g_test_run();
}
