/* params_test.c: run-time parameters on the CUDA backend, through the fake
 * runtime's graph-node model (fake_cuda.h): a new value updates the
 * executable node by node (cudaGraphExecKernelNodeSetParams for kernels,
 * cudaGraphExecMemcpyNodeSetParams1D and cudaGraphExecMemsetNodeSetParams
 * for copies and memsets, also into stream-ordered scratch), never
 * capturing the iteration again, and the replay computes what a graph
 * captured at that value computes; DAGRUN_GRAPH_UPDATE=capture takes the
 * whole-graph path; a fault at every call of an update leaves nothing
 * behind. */
#include <glib.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "include/dagrun/dagrun.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/fault/fake_runner.h"

#define MAXSEQ 64

/* seq in 4..64: x[0:seq*4] scaled into the scratch s, a softmax over
 * rows of seq into y, a copy of y into h and a memset of the mask m. */
static const char *yaml =
    "dagrun: 1\n"
    "params:\n"
    "  seq: {type: int, default: 8, min: 4, max: 64}\n"
    "  alpha: {type: float, default: 2, min: 0, max: 8}\n"
    "buffers:\n"
    "  x: {type: f32, count: \"{seq*4}\", init: iota}\n"
    "  s: {type: f32, count: \"{seq*4}\"}\n"
    "  y: {type: f32, count: \"{seq*4}\", init: zeros}\n"
    "  h: {type: f32, count: \"{seq*4}\", init: zeros}\n"
    "  m: {type: u8, count: \"{seq}\", init: zeros}\n"
    "nodes:\n"
    "  a: {op: alloc, buffer: s}\n"
    "  sc: {op: kernel, kernel: scale_f32, args: {x: \"x[0:seq*4]\", alpha: \"{alpha}\", y: "
    "\"s[0:seq*4]\"}}\n"
    "  sm: {op: kernel, kernel: softmax_rows_f32, args: {x: \"s[0:seq*4]\", y: \"y[0:seq*4]\", cols: "
    "\"{seq}\"}}\n"
    "  f: {op: free, buffer: s}\n"
    "  cp: {op: copy, src: \"y[0:seq*4]\", dst: \"h[0:seq*4]\"}\n"
    "  ms: {op: memset, dst: \"m[0:seq]\", value: \"{seq}\"}\n";

typedef struct {
  float h[MAXSEQ * 4];
  guint8 m[MAXSEQ];
} Out;

static void read_out(DrRunner *r, Out *o) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_runner_read_buffer(r, "h", o->h, sizeof o->h, &error));
  g_assert_true(dr_runner_read_buffer(r, "m", o->m, sizeof o->m, &error));
  g_assert_no_error(error);
}

/* What a graph captured from the start at seq (fresh buffers) gives. */
static void reference_alpha(gint64 seq, const char *alpha, Out *o) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, seq);
  g_assert_true(dr_pipeline_set_param(p, "seq", v, &error));
  g_assert_true(dr_pipeline_set_param(p, "alpha", alpha, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  read_out(r, o);
}

static void reference(gint64 seq, Out *o) { reference_alpha(seq, "2", o); }

/* One runner, seq changed between runs: only node updates, and each run
 * equals a graph captured at that value. */
static void test_update_in_place(void) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    const gint64 seqs[] = {4, 64, 13, 37, 8};
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      g_assert_no_error(error);
      guint from = dr_fake_trace()->len;
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      /* Never the iteration again: each kernel's launch (sc, sm)
       * described and set, no capture at all; the copy's and the
       * memset's parameters set directly. */
      g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_params"), ==, 2);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 2);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemcpyNodeSetParams1D"), ==, 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemsetNodeSetParams"), ==, 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphLaunch"), ==, 1);
      Out got, want;
      memset(&got, 0, sizeof got);
      memset(&want, 0, sizeof want);
      read_out(r, &got);
      /* Bytes past seq keep what earlier (longer) runs wrote: compare the
       * run's extent. */
      reference(seqs[i], &want);
      g_assert_cmpmem(got.h, seqs[i] * 4 * sizeof(float), want.h, seqs[i] * 4 * sizeof(float));
      g_assert_cmpmem(got.m, (gsize)seqs[i], want.m, (gsize)seqs[i]);
      g_assert_cmpuint(got.m[0], ==, (guint)seqs[i]);
    }
    /* A float parameter: only sc's alpha. */
    g_assert_true(dr_runner_set_param_f64(r, "alpha", 0.5, &error));
    guint from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
    g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_params"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 1);
    /* The same value again: nothing to update. */
    g_assert_true(dr_runner_set_param_f64(r, "alpha", 0.5, &error));
    g_autoptr(DrRunReport) rr2 = dr_runner_run(r, &error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
    /* Two values set before one run: every node either changed is
     * updated (seq reaches all four, alpha sc). */
    g_assert_true(dr_runner_set_param(r, "seq", 50, &error));
    g_assert_true(dr_runner_set_param_f64(r, "alpha", 4, &error));
    from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) rr3 = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 2);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemcpyNodeSetParams1D"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemsetNodeSetParams"), ==, 1);
    {
      Out got, want;
      memset(&got, 0, sizeof got);
      memset(&want, 0, sizeof want);
      read_out(r, &got);
      reference_alpha(50, "4", &want);
      g_assert_cmpmem(got.h, 50 * 4 * sizeof(float), want.h, 50 * 4 * sizeof(float));
    }
    /* Out of range: refused, nothing changes. */
    g_assert_false(dr_runner_set_param(r, "seq", 65, &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
    g_assert_nonnull(strstr(error->message, "must be in 4..64, not 65"));
    g_clear_error(&error);
  }
  dr_fake_runner_finish();
}

/* DAGRUN_GRAPH_UPDATE=capture: the same values by re-capturing. */
static void test_update_recapture(void) {
  dr_fake_runner_start();
  g_setenv("DAGRUN_GRAPH_UPDATE", "capture", TRUE);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_true(dr_runner_set_param(r, "seq", 20, &error));
    guint from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 0);
    Out got, want;
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    read_out(r, &got);
    g_unsetenv("DAGRUN_GRAPH_UPDATE");
    reference(20, &want);
    g_assert_cmpmem(got.h, 20 * 4 * sizeof(float), want.h, 20 * 4 * sizeof(float));
  }
  g_unsetenv("DAGRUN_GRAPH_UPDATE");
  dr_fake_runner_finish();
}

/* Streams mode: the changed nodes are bound again; no capture at all. */
static void test_streams(void) {
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_STREAMS);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_true(dr_runner_set_param(r, "seq", 33, &error));
    guint from = dr_fake_trace()->len;
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
    Out got, want;
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    read_out(r, &got);
    reference(33, &want);
    g_assert_cmpmem(got.h, 33 * 4 * sizeof(float), want.h, 33 * 4 * sizeof(float));
  }
  dr_fake_runner_finish();
}

/* Whether a call named `name` comes before the first `before` in the
 * trace since `from` (and both are there). */
static gboolean called_before(guint from, const char *name, const char *before) {
  const GArray *t = dr_fake_trace();
  for (guint i = from; i < t->len; i++) {
    const char *n = g_array_index(t, DrFakeCall, i).name;
    if (strcmp(n, before) == 0) return FALSE;
    if (strcmp(n, name) == 0) return dr_fake_count_calls(i, before) > 0;
  }
  return FALSE;
}

/* A change while an iteration is in flight (dr_runner_run_on_stream, no
 * host wait): graph mode sets the nodes in place without waiting for the
 * device (CUDA applies them to later launches only); a change that
 * captures the iteration again (DAGRUN_GRAPH_UPDATE=capture) waits
 * first, and so does streams mode's. Each way's last run, read after the
 * stream, equals a graph captured at that value. */
static void test_in_flight(gconstpointer data) {
  const char *way = data;
  gboolean capture = strcmp(way, "capture") == 0, streams = strcmp(way, "streams") == 0;
  dr_fake_runner_start();
  if (capture) g_setenv("DAGRUN_GRAPH_UPDATE", "capture", TRUE);
  const DrCudaApi *api = dr_cuda_api();
  g_autoptr(GError) error = NULL;
  cudaStream_t mine = NULL;
  const gint64 seqs[] = {40, 12, 64, 20};
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, streams ? DR_MODE_STREAMS : DR_MODE_GRAPH);
    g_assert_cmpint(api->cudaStreamCreateWithPriority(&mine, cudaStreamNonBlocking, 0), ==, cudaSuccess);
    g_assert_true(dr_runner_run_on_stream(r, mine, &error));
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", seqs[i], &error));
      guint from = dr_fake_trace()->len;
      g_assert_true(dr_runner_run_on_stream(r, mine, &error));
      g_assert_no_error(error);
      /* The backend's wait for the device (dr__cuda_streams_sync). */
      guint waits = dr_fake_count_calls(from, "cudaDeviceSynchronize");
      if (capture) {
        g_assert_cmpuint(waits, >=, 1);
        g_assert_true(called_before(from, "cudaDeviceSynchronize", "cudaStreamBeginCapture"));
      } else if (streams) {
        g_assert_cmpuint(waits, >=, 1);
        g_assert_cmpstr(dr_runner_last_update(r), ==, "rebound");
      } else {
        g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
        g_assert_cmpuint(waits, ==, 0);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamSynchronize"), ==, 0);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaEventSynchronize"), ==, 0);
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 2);
      }
    }
    g_assert_cmpint(api->cudaStreamSynchronize(mine), ==, cudaSuccess);
    Out got, want;
    memset(&got, 0, sizeof got);
    memset(&want, 0, sizeof want);
    read_out(r, &got);
    g_unsetenv("DAGRUN_GRAPH_UPDATE");
    reference(20, &want);
    g_assert_cmpmem(got.h, 20 * 4 * sizeof(float), want.h, 20 * 4 * sizeof(float));
    g_assert_cmpmem(got.m, 20, want.m, 20);
  }
  g_assert_cmpint(api->cudaStreamDestroy(mine), ==, cudaSuccess);
  g_unsetenv("DAGRUN_GRAPH_UPDATE");
  dr_fake_runner_finish();
}

/* Parameters in device memory (backends/cuda/devwords.h): seq in 4..64;
 * ad, rl, sv and nr are element-wise over slices that start at 0 (ad into
 * the stream-ordered scratch s), so they can read their counts from
 * device words; nr's lengths (seq+64: 68..128) vary less than twofold, so
 * the automatic rule picks it alone. sh's output slice starts at seq, so
 * its pointer moves and it is always set on the executable. */
static const char *words_yaml =
    "dagrun: 1\n"
    "params:\n"
    "  seq: {type: int, default: 8, min: 4, max: 64}\n"
    "buffers:\n"
    "  x: {type: f32, count: \"{seq*4}\", init: iota}\n"
    "  s: {type: f32, count: \"{seq*4}\"}\n"
    "  z: {type: f32, count: \"{seq*4}\", init: zeros}\n"
    "  w: {type: f32, count: \"{seq*5}\", init: zeros}\n"
    "  v: {type: f32, count: \"{seq*4}\", init: zeros}\n"
    "  u: {type: f32, count: \"{seq+64}\", init: zeros}\n"
    "nodes:\n"
    "  a: {op: alloc, buffer: s}\n"
    "  ad: {op: kernel, kernel: add_f32, args: {a: \"x[0:seq*4]\", b: \"x[0:seq*4]\", y: \"s[0:seq*4]\"}}\n"
    "  rl: {op: kernel, kernel: relu_f32, args: {x: \"s[0:seq*4]\", y: \"z[0:seq*4]\"}}\n"
    "  f: {op: free, buffer: s, after: [rl]}\n"
    "  sv: {op: kernel, kernel: scale_f32, args: {x: \"z[0:seq*4]\", alpha: 2, y: \"v[0:seq*4]\"}}\n"
    "  sh: {op: kernel, kernel: scale_f32, args: {x: \"x[0:seq*4]\", alpha: 3, y: \"w[seq:seq*5]\"}}\n"
    "  nr: {op: kernel, kernel: relu_f32, args: {x: \"x[0:seq+64]\", y: \"u[0:seq+64]\"}}\n";

#define WORDS_MAX (64 * 5)

/* z and w after a run at seq in `mode` from fresh buffers, w's element 0
 * first set to -1 (then nothing at seq >= 1 writes it). */
static void words_reference(gint64 seq, DrMode mode, float *z, float *w) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("words.yaml", words_yaml, -1, &error);
  g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, seq);
  g_assert_true(dr_pipeline_set_param(p, "seq", v, &error));
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, mode);
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_true(dr_runner_read_buffer(r, "z", z, 64 * 4 * sizeof(float), &error));
  g_assert_true(dr_runner_read_buffer(r, "w", w, WORDS_MAX * sizeof(float), &error));
}

/* DAGRUN_GRAPH_DEVICE_PARAMS=1 ("all"): a change reaches ad, rl, sv and
 * nr as one word store (no node set, reported as device_reads), sh as a
 * node set; each run gives the bytes streams mode gives at that value and
 * writes nothing past its counts (a sentinel written between runs
 * survives). A scalar of sv set by hand is still set on its node.
 * =auto: nr alone reads words. Unset ("off", the default): all five are
 * set. */
static void test_device_words(gconstpointer data) {
  gboolean off = strcmp(data, "off") == 0, all = strcmp(data, "all") == 0;
  guint reads = off ? 0 : all ? 4 : 1;
  dr_fake_runner_start();
  if (!off) g_setenv("DAGRUN_GRAPH_DEVICE_PARAMS", all ? "1" : "auto", TRUE);
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("words.yaml", words_yaml, -1, &error);
    g_assert_no_error(error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    guint stores = dr_fake_words_launches();
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    /* The words are written once at setup (off: there are none). */
    g_assert_cmpuint(dr_fake_words_launches() - stores, ==, off ? 0 : 1);
    const gint64 seqs[] = {4, 64, 13, 37, 8, 9};
    for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
      gint64 seq = seqs[i];
      /* A sentinel past this run's extent of z (the buffer holds 256). */
      float sentinel[64 * 4];
      for (guint k = 0; k < G_N_ELEMENTS(sentinel); k++) sentinel[k] = -7.0f - (float)k;
      g_assert_true(dr_runner_write_buffer(r, "z", seq * 4 * sizeof(float), sentinel,
                                           (64 - seq) * 4 * sizeof(float), &error));
      g_assert_no_error(error);
      g_assert_true(dr_runner_set_param(r, "seq", seq, &error));
      guint from = dr_fake_trace()->len;
      stores = dr_fake_words_launches();
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      g_assert_cmpstr(dr_runner_last_update(r), ==, "updated-nodes");
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_words_launches() - stores, ==, off ? 0 : 1);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 5 - reads);
      g_autoptr(GString) json = g_string_new(NULL);
      dr_run_report_write_json(rr, json);
      g_autofree char *want_json = g_strdup_printf("\"device_reads\": %u", reads);
      g_autofree char *want_text = g_strdup_printf("; %u read from device memory", reads);
      g_assert_true((strstr(json->str, want_json) != NULL) == !off);
      g_autoptr(GString) text = g_string_new(NULL);
      dr_run_report_write_text(rr, text);
      g_assert_true((strstr(text->str, want_text) != NULL) == !off);
      float z[64 * 4], w[WORDS_MAX], zr[64 * 4], wr[WORDS_MAX];
      g_assert_true(dr_runner_read_buffer(r, "z", z, sizeof z, &error));
      g_assert_true(dr_runner_read_buffer(r, "w", w, sizeof w, &error));
      words_reference(seq, DR_MODE_STREAMS, zr, wr);
      g_assert_cmpmem(z, seq * 4 * sizeof(float), zr, seq * 4 * sizeof(float));
      g_assert_cmpmem(z + seq * 4, (64 - seq) * 4 * sizeof(float), sentinel, (64 - seq) * 4 * sizeof(float));
      g_assert_cmpmem(w + seq, seq * 4 * sizeof(float), wr + seq, seq * 4 * sizeof(float));
      float u[128];
      g_assert_true(dr_runner_read_buffer(r, "u", u, sizeof u, &error));
      for (gint64 e = 0; e < seq + 64; e++) g_assert_cmpfloat(u[e], ==, (float)e); /* relu of iota */
    }
    /* sv's alpha by hand (seq is 9 now): sv is set on its node either way,
     * no store. */
    g_assert_true(dr_runner_set_float(r, "sv", "alpha", 5, &error));
    guint from = dr_fake_trace()->len;
    stores = dr_fake_words_launches();
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_words_launches() - stores, ==, 0);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 1);
    float z[64 * 4], v[64 * 4];
    g_assert_true(dr_runner_read_buffer(r, "z", z, sizeof z, &error));
    g_assert_true(dr_runner_read_buffer(r, "v", v, sizeof v, &error));
    for (int e = 0; e < 9 * 4; e++) g_assert_cmpfloat(v[e], ==, 5.0f * z[e]);
  }
  g_unsetenv("DAGRUN_GRAPH_DEVICE_PARAMS");
  dr_fake_runner_finish();
}

/* Parameter buffers (`param:`): seq_d and temp_d hold the values, copied
 * into out_i and out_f each run. */
static const char *pbuf_yaml =
    "dagrun: 1\n"
    "params:\n"
    "  seq: {type: int, default: 8, min: 4, max: 64}\n"
    "  temp: {type: float, default: 0.5, min: 0, max: 2}\n"
    "buffers:\n"
    "  seq_d: {param: seq}\n"
    "  temp_d: {param: temp}\n"
    "  out_i: {type: i64, count: 1, init: zeros}\n"
    "  out_f: {type: f64, count: 1, init: zeros}\n"
    "nodes:\n"
    "  ci: {op: copy, src: seq_d, dst: out_i}\n"
    "  cf: {op: copy, src: temp_d, dst: out_f}\n";

/* On the host backend and the fake runtime's both modes: each run's
 * copies read the values it was given (the setup's, then each change's),
 * written before the run by one store for both buffers on the CUDA
 * backend (none when nothing changed, one word when one did), and the
 * report counts the buffers written. */
static void test_param_buffers(gconstpointer data) {
  const char *way = data;
  gboolean host = strcmp(way, "host") == 0;
  dr_fake_runner_start();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("pbuf.yaml", pbuf_yaml, -1, &error);
    g_assert_no_error(error);
    g_assert_true(dr_pipeline_set_param(p, "seq", "12", &error));
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    DrRunner *r = NULL;
    if (host) {
      DrRunSettings rs;
      dr_run_settings_init(&rs, p);
      rs.backend = DR_BACKEND_HOST;
      rs.iterations = 1;
      rs.warmup = 0;
      r = dr_runner_new(plan, &rs, &error);
    } else {
      r = dr_fake_cuda_runner(plan, p, strcmp(way, "graph") == 0 ? DR_MODE_GRAPH : DR_MODE_STREAMS);
    }
    g_assert_no_error(error);
    const struct {
      gint64 seq;
      double temp;
      guint written;
    } steps[] = {{12, 0.5, 0}, {40, 0.5, 1}, {40, 1.75, 1}, {4, 0.25, 2}, {4, 0.25, 0}};
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
      g_assert_true(dr_runner_set_param(r, "seq", steps[i].seq, &error));
      g_assert_true(dr_runner_set_param_f64(r, "temp", steps[i].temp, &error));
      guint stores = dr_fake_words_launches();
      g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
      g_assert_no_error(error);
      if (!host) g_assert_cmpuint(dr_fake_words_launches() - stores, ==, steps[i].written > 0);
      g_autoptr(GString) json = g_string_new(NULL);
      dr_run_report_write_json(rr, json);
      g_autofree char *want = g_strdup_printf("\"buffers\": %u", steps[i].written);
      g_assert_true((strstr(json->str, want) != NULL) == (steps[i].written > 0));
      gint64 got_i = 0;
      double got_f = 0;
      g_assert_true(dr_runner_read_buffer(r, "out_i", &got_i, sizeof got_i, &error));
      g_assert_true(dr_runner_read_buffer(r, "out_f", &got_f, sizeof got_f, &error));
      g_assert_cmpint(got_i, ==, steps[i].seq);
      g_assert_cmpfloat(got_f, ==, steps[i].temp);
    }
    dr_runner_free(r);
  }
  dr_fake_runner_finish();
}

/* A fault at every call of a graph-mode update: the run fails with the
 * runtime's error or succeeds; freeing the runner releases everything. */
static void test_update_faults(void) {
  guint64 total = 0;
  for (guint64 fail_at = 0;; fail_at++) {
    dr_fake_runner_start();
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = dr_pipeline_load_string("params.yaml", yaml, -1, &error);
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    DrRunner *r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    g_autoptr(DrRunReport) first = dr_runner_run(r, &error);
    g_assert_no_error(error);
    g_assert_true(dr_runner_set_param(r, "seq", 30, &error));
    guint64 before = dr_fake_points();
    if (fail_at > 0) dr_fake_arm(before + fail_at, DR_FAULT_LAUNCH);
    DrRunReport *rr = dr_runner_run(r, &error);
    if (fail_at == 0) {
      g_assert_no_error(error);
      total = dr_fake_points() - before;
    } else if (rr == NULL) {
      g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    }
    dr_run_report_free(rr);
    g_clear_error(&error);
    dr_fake_runner_free_faulted(r);
    if (fail_at >= total) break;
  }
  g_assert_cmpuint(total, >, 3);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api());
  g_test_add_func("/fault/params/update-in-place", test_update_in_place);
  g_test_add_func("/fault/params/update-recapture", test_update_recapture);
  g_test_add_func("/fault/params/streams", test_streams);
  g_test_add_func("/fault/params/update-faults", test_update_faults);
  g_test_add_data_func("/fault/params/in-flight/graph", "graph", test_in_flight);
  g_test_add_data_func("/fault/params/in-flight/capture", "capture", test_in_flight);
  g_test_add_data_func("/fault/params/in-flight/streams", "streams", test_in_flight);
  g_test_add_data_func("/fault/params/device-words/all", "all", test_device_words);
  g_test_add_data_func("/fault/params/device-words/auto", "auto", test_device_words);
  g_test_add_data_func("/fault/params/device-words/off", "off", test_device_words);
  g_test_add_data_func("/fault/params/buffers/graph", "graph", test_param_buffers);
  g_test_add_data_func("/fault/params/buffers/streams", "streams", test_param_buffers);
  g_test_add_data_func("/fault/params/buffers/host", "host", test_param_buffers);
  return g_test_run();
}
