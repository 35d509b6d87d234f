/* batch_test.c: streams mode's copy batches (backends/cuda/batch.h) on the
 * fake CUDA table with cudaMemcpyBatchAsync (dr_fake_api_batch), which
 * performs a batch's copies last first and calls overlapping copies in one
 * batch a misuse. Per case: the batches formed (their sizes, in order, for
 * every iteration), the bytes saved against the host backend's, nothing
 * live and no misuse; where no batch may form (a hazard between the
 * copies, a node between them, pageable memory, node timing, graph mode,
 * DAGRUN_COPY_BATCH=0, a table without the call, a runtime that refuses
 * it) none does and the bytes are the same. Then a fault at every call of
 * a batched run (invalid, and sticky illegal address): the run fails
 * naming the call (a batch's failure its first copy), nothing stays live,
 * no misuse. */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <glib/gstdio.h>
#include <pthread.h>
#include <string.h>

#include "backends/cuda/batch.h"
#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

static FILE *devnull;

static DrGraph *load_yaml(const char *yaml) { return dr_fake_load_yaml("batch.yaml", yaml); }

static char *out_path(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  return g_build_filename(tmp ? tmp : g_get_tmp_dir(), "batch.bin", NULL);
}

/* A pipeline of u8 buffers: h (host, random), d (device), out (host, saved
 * to `path`), 64 bytes each; `where` is h's where: value; `cap` the
 * stream cap; `nodes` the nodes, after which `down` copies d to out. */
static char *pipeline(const char *path, const char *where, guint cap, const char *nodes) {
  return g_strdup_printf(
      "dagrun: 1\nrun: {max_streams: %u}\nbuffers:\n"
      "  h: {type: u8, count: 64, where: %s, init: {random: 7}}\n"
      "  d: {type: u8, count: 64}\n  e: {type: u8, count: 64}\n"
      "  out: {type: u8, count: 64, where: host, save: '%s'}\n"
      "nodes:\n%s  down: {op: copy, src: d, dst: out}\n",
      cap, where, path, nodes);
}

/* Six independent uploads of 8 bytes into d[0:48]. */
#define UPS                                          \
  "  up{i}:\n    foreach: {i: 0..5}\n    op: copy\n" \
  "    src: \"h[{i*8}:{i*8+8}]\"\n    dst: \"d[{i*8}:{i*8+8}]\"\n"

/* One run of `plan` (1 warmup, 2 timed) on `backend`; returns the saved
 * bytes. */
static char *run_bytes(const DrPlan *plan, const DrGraph *g, DrBackendKind backend, DrMode mode,
                       DrTimingMode timing, const char *path, gsize *len) {
  DrRunOptions opts = dr_fake_run_options(g, mode, timing, 1, 2);
  opts.backend = backend;
  return dr_fake_run_saved(plan, &opts, TRUE, path, len, NULL); /* graph mode's copies, replayed */
}

/* Calls named `name` in the fake's trace since the reset. */
static guint calls_of(const char *name) { return dr_fake_count_calls(0, name); }

typedef struct {
  const char *name;
  const char *where; /* h's */
  guint cap;
  const char *nodes;
  DrMode mode;
  DrTimingMode timing;
  const char *env;     /* DAGRUN_COPY_BATCH, or NULL */
  int table;           /* 0: with the batch call, 1: without, 2: refused */
  const char *batches; /* dr_fake_batch_sizes after the run: 3 iterations */
} Case;

static const Case cases[] = {
    /* One stream: the six uploads are one batch, down (it reads them) is
     * alone after it. */
    {"one-stream", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, "6,6,6"},
    /* The default cap of 32: six independent copies on six streams, then
     * down waiting on them: no two copies share a stream. */
    {"wide", "host", 32, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, ""},
    /* A cap of 2: the planner puts up0-up3 on one stream, up4 and up5 on
     * the other (down waits on up5): each stream's uploads are a batch. */
    {"two-streams", "host", 2, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, "4,2,4,2,4,2"},
    /* A hazard: b reads what a wrote (RAW on d[0:8]), so a batch ends
     * before b; b and c (independent of both) are one. The fake runs a
     * batch last first: a wrong batch would read stale bytes. */
    {"hazard", "host", 1,
     "  a: {op: copy, src: \"h[0:8]\", dst: \"d[0:8]\"}\n"
     "  b: {op: copy, src: \"d[0:8]\", dst: \"d[8:16]\"}\n"
     "  c: {op: copy, src: \"h[16:24]\", dst: \"d[16:24]\"}\n",
     DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, "2,2,2"},
    /* after: orders two copies with no shared bytes: no batch of them. */
    {"after", "host", 1,
     "  a: {op: copy, src: \"h[0:8]\", dst: \"d[0:8]\"}\n"
     "  b: {op: copy, src: \"h[8:16]\", dst: \"d[8:16]\", after: [a]}\n",
     DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, ""},
    /* A memset between copies on the stream splits them: two batches of
     * two (m is in file order between them). */
    {"split", "host", 1,
     "  a: {op: copy, src: \"h[0:8]\", dst: \"d[0:8]\"}\n"
     "  b: {op: copy, src: \"h[8:16]\", dst: \"d[8:16]\"}\n"
     "  m: {op: memset, dst: e, value: 3}\n"
     "  c: {op: copy, src: \"h[16:24]\", dst: \"d[16:24]\"}\n"
     "  x: {op: copy, src: \"e[0:8]\", dst: \"d[24:32]\"}\n",
     DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, "2,2,2,2,2,2"},
    /* Device to device and device to host copies batch like uploads. */
    {"kinds", "host", 1,
     "  m: {op: memset, dst: e, value: 9}\n"
     "  a: {op: copy, src: \"e[0:8]\", dst: \"d[0:8]\"}\n"
     "  b: {op: copy, src: \"h[8:16]\", dst: \"d[8:16]\"}\n"
     "  c: {op: copy, src: \"e[16:24]\", dst: \"h[32:40]\"}\n",
     DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, "3,3,3"},
    /* Pageable host memory keeps one cudaMemcpyAsync per copy. */
    {"pageable", "pageable", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 0, ""},
    /* Timed nodes: no batch (a batch has one start and end). */
    {"events", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_EVENTS, NULL, 0, ""},
    {"stamps", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_STAMPS, NULL, 0, ""},
    /* A capture cannot hold a batch. */
    {"graph", "host", 1, UPS, DR_MODE_GRAPH, DR_TIMING_OFF, NULL, 0, ""},
    {"env-off", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, "0", 0, ""},
    {"env-on", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, "1", 0, "6,6,6"},
    /* A table without the call, and a runtime that refuses it. */
    {"no-entry", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 1, ""},
    {"refused", "host", 1, UPS, DR_MODE_STREAMS, DR_TIMING_OFF, NULL, 2, ""},
};

static void test_case(gconstpointer data) {
  const Case *c = data;
  g_autofree char *path = out_path();
  g_autofree char *yaml = pipeline(path, c->where, c->cap, c->nodes);
  g_autoptr(DrGraph) g = load_yaml(yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  if (c->env) g_setenv("DAGRUN_COPY_BATCH", c->env, TRUE);
  gsize want_len = 0, got_len = 0;
  g_autofree char *want = run_bytes(plan, g, DR_BACKEND_HOST, c->mode, c->timing, path, &want_len);
  const DrCudaApi *prev = dr_cuda_api_set(c->table == 1 ? dr_fake_api() : dr_fake_api_batch());
  dr_fake_set_batch_refused(c->table == 2);
  g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, c->mode, c->timing, path, &got_len);
  g_autofree char *batches = g_strdup(dr_fake_batch_sizes());
  guint batch_calls = calls_of("cudaMemcpyBatchAsync"), copies = calls_of("cudaMemcpyAsync");
  dr_fake_set_batch_refused(FALSE);
  dr_cuda_api_set(prev);
  if (c->env) g_unsetenv("DAGRUN_COPY_BATCH");
  g_test_message("%s: batches '%s', %u batch calls, %u cudaMemcpyAsync", c->name, batches, batch_calls,
                 copies);
  g_assert_cmpstr(batches, ==, c->batches);
  g_assert_cmpmem(got, got_len, want, want_len);
  if (c->table == 2) {
    /* Refused once, then one cudaMemcpyAsync per copy. */
    g_assert_cmpuint(batch_calls, ==, 1);
  } else {
    guint want_calls = 0;
    for (const char *q = c->batches; *q; q++) want_calls += *q == ',';
    g_assert_cmpuint(batch_calls, ==, c->batches[0] ? want_calls + 1 : 0);
  }
}

/* The two-streams case's batches are the plan's streams: the plan put
 * four uploads on one stream and two on the other, and the batch calls
 * go to two CUDA streams, one with 4 copies (32 bytes), one with 2. */
static void test_streams(void) {
  g_autofree char *path = out_path();
  g_autofree char *yaml = pipeline(path, "host", 2, UPS);
  g_autoptr(DrGraph) g = load_yaml(yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_plan_n_streams(plan), ==, 2);
  guint per_stream[2] = {0, 0};
  for (guint i = 0; i < 6; i++) {
    g_autofree char *id = g_strdup_printf("up%u", i);
    DrId v = dr_graph_find_node(g, id);
    g_assert_cmpuint(v, !=, DR_NONE);
    per_stream[plan->node_stream[v]]++;
  }
  g_assert_cmpuint(per_stream[0], ==, 4);
  g_assert_cmpuint(per_stream[1], ==, 2);
  const DrCudaApi *prev = dr_cuda_api_set(dr_fake_api_batch());
  gsize len = 0;
  g_autofree char *got = run_bytes(plan, g, DR_BACKEND_CUDA, DR_MODE_STREAMS, DR_TIMING_OFF, path, &len);
  const GArray *t = dr_fake_trace();
  guint stream_of_size[2] = {0, 0}, calls = 0;
  for (guint i = 0; i < t->len; i++) {
    const DrFakeCall *fc = &g_array_index(t, DrFakeCall, i);
    if (strcmp(fc->name, "cudaMemcpyBatchAsync") != 0) continue;
    calls++;
    g_assert_true(fc->size == 32 || fc->size == 16);
    guint *s = &stream_of_size[fc->size == 16];
    if (*s == 0) *s = fc->stream;
    g_assert_cmpuint(*s, ==, fc->stream);
  }
  dr_cuda_api_set(prev);
  g_assert_cmpuint(calls, ==, 6);
  g_assert_cmpuint(stream_of_size[0], !=, stream_of_size[1]);
}

/* Every call of a batched run failed in turn (invalid value, then the
 * sticky illegal address): the run fails with the call named (a batch's
 * failure names its first copy, up0 or up4, and the batch), or, for a failed
 * release, goes on; nothing stays live; no misuse. */
static void test_faults(void) {
  g_autofree char *path = out_path();
  g_autofree char *yaml = pipeline(path, "host", 2, UPS);
  g_autoptr(DrGraph) g = load_yaml(yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.backend = DR_BACKEND_CUDA;
  opts.mode = DR_MODE_STREAMS;
  opts.node_timing = DR_TIMING_OFF;
  opts.warmup = 0;
  opts.iterations = 2;
  opts.host_output = devnull;
  const DrCudaApi *prev = dr_cuda_api_set(dr_fake_api_batch());
  dr_fake_reset();
  g_autoptr(DrReport) clean = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_unlink(path);
  guint64 n = dr_fake_points();
  guint failed = 0, batch_faults = 0;
  for (guint64 p = 1; p <= n; p++) {
    for (int f = 0; f < 2; f++) {
      dr_fake_reset();
      dr_fake_arm(p, f ? DR_FAULT_ILLEGAL : DR_FAULT_INVALID);
      g_autoptr(GError) e = NULL;
      g_autoptr(DrReport) r = dr_run(plan, &opts, &e);
      g_unlink(path);
      gint64 at = dr_fake_fault_index();
      g_assert_cmpint(at, >=, 0);
      const DrFakeCall *fc = &g_array_index(dr_fake_trace(), DrFakeCall, at);
      if (r == NULL) {
        g_assert_nonnull(e);
        failed++;
        if (strstr(e->message, fc->name) == NULL)
          g_error("point %" G_GUINT64_FORMAT ": '%s' does not name %s", p, e->message, fc->name);
        if (strcmp(fc->name, "cudaMemcpyBatchAsync") == 0) {
          batch_faults++;
          g_assert_true((strstr(e->message, "node 'up0' (stream 0), a batch of 4 copies") != NULL) ||
                        (strstr(e->message, "node 'up4' (stream 1), a batch of 2 copies") != NULL));
        }
      } else {
        g_assert_true(fc->release);
      }
      /* A refused release keeps its object, as the runtime would. */
      if (fc->release) continue;
      if (dr_fake_live_total() != 0) {
        g_autoptr(GString) live = g_string_new(NULL);
        dr_fake_describe_live(live);
        g_error("point %" G_GUINT64_FORMAT " (%s): left live: %s", p, f ? "sticky" : "invalid", live->str);
      }
      if (strcmp(dr_fake_misuse(), "") != 0)
        g_error("point %" G_GUINT64_FORMAT ": misuse: %s", p, dr_fake_misuse());
    }
  }
  dr_cuda_api_set(prev);
  g_test_message("%" G_GUINT64_FORMAT " points, %u failed runs, %u at a batch", n, failed, batch_faults);
  /* Two batches per iteration, two iterations, two fault kinds. */
  g_assert_cmpuint(batch_faults, ==, 8);
}

/* The checks at issue: two copies with no DAG edge whose bytes overlap in
 * this iteration (here d and e at one address, as two buffers sharing
 * storage or bound to one external block would be) go as two calls, and so
 * do copies from a host buffer bound to external memory; apart, as one
 * batch. */
static void test_overlap_split(void) {
  g_autoptr(DrGraph) g = load_yaml(
      "dagrun: 1\nrun: {max_streams: 1}\nbuffers:\n  h: {type: u8, count: 64, where: host}\n"
      "  d: {type: u8, count: 64}\n  e: {type: u8, count: 64}\nnodes:\n"
      "  a: {op: copy, src: \"h[0:8]\", dst: \"d[0:8]\"}\n"
      "  b: {op: copy, src: \"h[8:16]\", dst: \"e[4:12]\"}\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  const DrCudaApi *prev = dr_cuda_api_set(dr_fake_api_batch());
  const DrCudaApi *api = dr_cuda_api();
  dr_fake_reset();
  g_autoptr(DrCudaBatch) c = dr__cuda_batch_new(plan, FALSE);
  g_assert_cmpuint(dr__cuda_batch_count(c), ==, 1);
  guint32 n = 0;
  const DrId *copies = dr__cuda_batch_of(c, 0, &n);
  g_assert_cmpuint(n, ==, 2);
  g_assert_cmpuint(copies[0], ==, 0);
  cudaStream_t st = NULL;
  void *h = NULL, *d = NULL, *e = NULL;
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, 0), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMallocHost(&h, 64), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMalloc(&d, 64), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMalloc(&e, 64), ==, cudaSuccess);
  DrCudaMemory m;
  memset(&m, 0, sizeof m);
  m.graph = g;
  void *bases[3] = {h, d, e};
  m.bases = bases;
  gboolean external[3] = {FALSE, FALSE, FALSE};
  m.external = external;
  /* 0: apart, one batch; 1: d and e alias, two calls; 2: apart, but h is
   * the library user's memory (maybe pageable): two calls. */
  for (int how = 0; how < 3; how++) {
    bases[2] = how == 1 ? d : e;
    external[0] = how == 2;
    guint batches = calls_of("cudaMemcpyBatchAsync"), singles = calls_of("cudaMemcpyAsync");
    g_assert_true(dr__cuda_batch_issue(c, &m, api, 0, st, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(calls_of("cudaMemcpyBatchAsync") - batches, ==, how ? 0 : 1);
    g_assert_cmpuint(calls_of("cudaMemcpyAsync") - singles, ==, how ? 2 : 0);
  }
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  (void)api->cudaFree(e);
  (void)api->cudaFree(d);
  (void)api->cudaFreeHost(h);
  (void)api->cudaStreamDestroy(st);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  dr_cuda_api_set(prev);
}

/* Several issue threads (threads.h), the fake behind one lock (it is
 * single-threaded): each thread issues its streams' batches, the bytes are
 * the host backend's, and every upload on a stream with two or more of
 * them went in a batch. */
static const DrCudaApi *inner;
static pthread_mutex_t big = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

#define DR_X(name, params, args)            \
  static cudaError_t locked_##name params { \
    pthread_mutex_lock(&big);               \
    cudaError_t rc = inner->name args;      \
    pthread_mutex_unlock(&big);             \
    return rc;                              \
  }
DR_CUDA_API_LIST(DR_X)
#undef DR_X

static cudaError_t locked_batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                struct cudaMemcpyAttributes *attrs, size_t *attrs_idxs, size_t n_attrs,
                                cudaStream_t stream) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrs_idxs, n_attrs, stream);
  pthread_mutex_unlock(&big);
  return rc;
}

static void test_threads(void) {
  g_autofree char *path = out_path();
  g_autofree char *yaml = pipeline(path, "host", 4,
                                   "  up{i}:\n    foreach: {i: 0..15}\n    op: copy\n"
                                   "    src: \"h[{i*4}:{i*4+4}]\"\n    dst: \"d[{i*4}:{i*4+4}]\"\n");
  g_autoptr(DrGraph) g = load_yaml(yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  guint per_stream[4] = {0}, want = 0;
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++)
    if (g_str_has_prefix(dr_graph_node(g, v)->id, "up")) per_stream[plan->node_stream[v]]++;
  for (guint k = 0; k < 4; k++) want += per_stream[k] >= 2 ? per_stream[k] : 0;
  g_assert_cmpuint(want, >=, 8);
  inner = dr_fake_api_batch();
  DrCudaApi api = *inner;
#define DR_X(name, params, args) api.name = locked_##name;
  DR_CUDA_API_LIST(DR_X)
#undef DR_X
  api.cudaMemcpyBatchAsync = locked_batch;
  api.kernel_launch = NULL; /* no kernel here */
  api.stamp_launch = NULL;
  gsize want_len = 0, got_len = 0;
  g_autofree char *ref = run_bytes(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, DR_TIMING_OFF, path, &want_len);
  const DrCudaApi *prev = dr_cuda_api_set(&api);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.backend = DR_BACKEND_CUDA;
  opts.mode = DR_MODE_STREAMS;
  opts.node_timing = DR_TIMING_OFF;
  opts.issue_threads = 4;
  opts.warmup = 1;
  opts.iterations = 2;
  opts.host_output = devnull;
  dr_fake_reset();
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  dr_cuda_api_set(prev);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_autofree char *got = NULL;
  g_assert_true(g_file_get_contents(path, &got, &got_len, NULL));
  g_unlink(path);
  g_assert_cmpmem(got, got_len, ref, want_len);
  guint batched = 0;
  g_auto(GStrv) sizes = g_strsplit(dr_fake_batch_sizes(), ",", -1);
  for (guint i = 0; sizes[i]; i++) batched += (guint)g_ascii_strtoull(sizes[i], NULL, 10);
  g_test_message("batches '%s' (per stream %u %u %u %u)", dr_fake_batch_sizes(), per_stream[0], per_stream[1],
                 per_stream[2], per_stream[3]);
  g_assert_cmpuint(batched, ==, 3 * want);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  devnull = fopen("/dev/null", "w");
  dr_cuda_api_set(dr_fake_api_batch());
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *p = g_strdup_printf("/batch/case/%s", cases[i].name);
    g_test_add_data_func(p, &cases[i], test_case);
  }
  g_test_add_func("/batch/streams", test_streams);
  g_test_add_func("/batch/overlap-split", test_overlap_split);
  g_test_add_func("/batch/threads", test_threads);
  g_test_add_func("/batch/faults", test_faults);
  int rc = g_test_run();
  fclose(devnull);
  return rc;
}
