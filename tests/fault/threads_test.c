/* threads_test.c: streams mode's issue from several host threads
 * (backends/cuda/threads.h) on the CPU.
 *
 * Two levels. The threads alone, with a step function that checks, under
 * a lock, what the CUDA calls need: every wait's node was "recorded" in
 * this round before the waiting step runs, and each stream's steps come
 * in plan order; also a step that fails (the error comes back, nobody
 * hangs, the next round runs whole). Then the CUDA backend on the fake
 * runtime (tests/fault/fake_cuda.h) behind a lock (the fake is
 * single-threaded), with a checker in the table: every cudaStreamWaitEvent
 * is issued after the cudaEventRecord of the same iteration, each stream
 * receives its memsets in the order a one-thread run gives it, the data
 * are right, and a fault sweep (every call failed in turn, 4 threads)
 * reports each failure and releases everything. Meant to run under TSan
 * too (tools/test.sh tsan). */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include <pthread.h>
#include <string.h>

#include "backends/cuda/threads.h"
#include "backends/cuda_api.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

/* A random layered DAG: `layers` x `width` memsets of one element each of
 * buffer b (node i sets b[i] to i % 251 + 1), each after 1-3 nodes of the
 * layer before. */
static char *layered_yaml(guint layers, guint width, guint32 seed) {
  g_autoptr(GRand) r = g_rand_new_with_seed(seed);
  GString *y = g_string_new(NULL);
  g_string_append_printf(y, "dagrun: 1\nbuffers: {b: {type: u8, count: %u}}\nnodes:\n", layers * width);
  for (guint l = 0; l < layers; l++)
    for (guint w = 0; w < width; w++) {
      guint i = l * width + w;
      g_string_append_printf(y, "  n%u: {op: memset, dst: \"b[%u:%u]\", value: %u", i, i, i + 1, i % 251 + 1);
      if (l > 0) {
        guint k = 1 + g_rand_int_range(r, 0, 3);
        g_string_append(y, ", after: [");
        for (guint j = 0; j < k; j++)
          g_string_append_printf(y, "%sn%u", j ? ", " : "", (l - 1) * width + g_rand_int_range(r, 0, width));
        g_string_append(y, "]");
      }
      g_string_append(y, "}\n");
    }
  return g_string_free(y, FALSE);
}

static DrGraph *load(const char *yaml) {
  DrGraph *g = dr_fake_load_yaml("layered.yaml", yaml);
  g->run.mode = DR_MODE_STREAMS;
  return g;
}

static DrPlan *plan_of(const DrGraph *g, guint32 max_streams) {
  DrPlanOptions po = {.max_streams = max_streams};
  g_autoptr(GError) error = NULL;
  DrPlan *p = dr_plan_build(g, &po, &error);
  g_assert_no_error(error);
  return p;
}

/* ---- the threads alone --------------------------------------------------- */

typedef struct {
  const DrPlan *plan;
  pthread_mutex_t lock; /* pthread: TSan sees it (backends/cuda/threads.c) */
  gint round;
  gint *recorded;     /* [n_nodes]: the round its step ran in */
  guint32 *last_step; /* [n_streams]: +1 of the last step index run this round */
  gint *last_round;   /* [n_streams] */
  guint64 checked_waits, cross, steps;
  guint32 fail_at; /* steps this round before one fails; G_MAXUINT32: none */
  guint32 ran;     /* steps run this round */
} Checker;

static gboolean check_step(const void *walk, const DrPlanStep *step, GError **error) {
  Checker *c = (Checker *)walk;
  pthread_mutex_lock(&c->lock);
  guint32 index = c->plan->node_step[step->node];
  for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
    DrId u = dr_plan_wait(c->plan, w);
    if (c->recorded[u] != c->round)
      g_error("step %u waits on node %u, not recorded this round (%d, round %d)", index, u, c->recorded[u],
              c->round);
    c->checked_waits++;
    c->cross += c->plan->node_stream[u] % 4 != step->stream % 4;
  }
  if (c->last_round[step->stream] == c->round && c->last_step[step->stream] > index)
    g_error("stream %u: step %u after step %u", step->stream, index, c->last_step[step->stream] - 1);
  c->last_round[step->stream] = c->round;
  c->last_step[step->stream] = index + 1;
  gboolean fails = c->ran++ == c->fail_at;
  if (!fails) c->recorded[step->node] = c->round;
  c->steps++;
  pthread_mutex_unlock(&c->lock);
  if (fails) g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "step %u failed on purpose", index);
  return !fails;
}

static void test_order(void) {
  g_autofree char *yaml = layered_yaml(16, 40, 7);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) plan = plan_of(g, 32);
  guint32 n = dr_graph_n_nodes(g);
  for (guint32 threads = 2; threads <= 8; threads += 2) {
    Checker c = {.plan = plan, .fail_at = G_MAXUINT32};
    pthread_mutex_init(&c.lock, NULL);
    c.recorded = g_new0(gint, n);
    c.last_step = g_new0(guint32, plan->streams->len);
    c.last_round = g_new0(gint, plan->streams->len);
    g_autoptr(DrCudaThreads) t = dr__cuda_threads_new(plan, threads, NULL, NULL);
    g_assert_cmpuint(dr__cuda_threads_n(t), ==, threads);
    for (gint round = 1; round <= 20; round++) {
      pthread_mutex_lock(&c.lock);
      c.round = round;
      c.ran = 0;
      /* Rounds 5, 10, ...: a step fails somewhere in the middle. */
      c.fail_at = round % 5 == 0 ? (guint32)(round * 37) % n : G_MAXUINT32;
      pthread_mutex_unlock(&c.lock);
      g_autoptr(GError) error = NULL;
      gboolean ok = dr__cuda_threads_issue(t, check_step, &c, &error);
      if (round % 5 == 0) {
        g_assert_false(ok);
        g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
        g_assert_nonnull(strstr(error->message, "failed on purpose"));
      } else {
        g_assert_no_error(error);
        g_assert_true(ok);
        pthread_mutex_lock(&c.lock);
        g_assert_cmpuint(c.ran, ==, n);
        pthread_mutex_unlock(&c.lock);
      }
    }
    g_assert_cmpuint(c.checked_waits, >, 0);
    g_assert_cmpuint(c.cross, >, 0);
    g_free(c.recorded);
    g_free(c.last_step);
    g_free(c.last_round);
    pthread_mutex_destroy(&c.lock);
  }
}

static void test_count(void) {
  /* Narrow: one thread. */
  g_autofree char *narrow = layered_yaml(50, 3, 1);
  g_autoptr(DrGraph) gn = load(narrow);
  g_autoptr(DrPlan) pn = plan_of(gn, 32);
  g_assert_cmpuint(dr__cuda_threads_count(pn, 0), ==, 1);
  g_assert_cmpuint(dr__cuda_threads_count(pn, 8), ==, MIN(8, pn->streams->len));
  /* Wide and big (width 64, 4096 nodes, 32 streams): 8. */
  g_autofree char *wide = layered_yaml(64, 64, 2);
  g_autoptr(DrGraph) gw = load(wide);
  g_autoptr(DrPlan) pw = plan_of(gw, 32);
  g_assert_cmpuint(pw->streams->len, ==, 32);
  g_assert_cmpuint(dr__cuda_threads_count(pw, 0), ==, 8);
  g_assert_cmpuint(dr__cuda_threads_count(pw, 3), ==, 3);
  g_assert_cmpuint(dr__cuda_threads_count(pw, 99), ==, DR_CUDA_MAX_ISSUE_THREADS);
  /* Wide but small (32 spins): one. */
  g_autofree char *small = layered_yaml(1, 32, 3);
  g_autoptr(DrGraph) gs = load(small);
  g_autoptr(DrPlan) ps = plan_of(gs, 32);
  g_assert_cmpuint(dr__cuda_threads_count(ps, 0), ==, 1);
}

/* ---- the CUDA backend on the fake, behind a lock and a checker ----------- */

static const DrCudaApi *inner;
static pthread_mutex_t big = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP; /* pthread: TSan sees it */
static struct {
  GHashTable *records;    /* event -> GUINT record count */
  GHashTable *stream_ids; /* stream -> creation number (1-based) */
  GPtrArray *per_stream;  /* [creation number]: GArray of memset pointers */
  guint max_record, waits, stale_waits, streams_made;
} chk;

static void chk_reset(void) {
  if (chk.records) g_hash_table_unref(chk.records);
  if (chk.stream_ids) g_hash_table_unref(chk.stream_ids);
  if (chk.per_stream) g_ptr_array_unref(chk.per_stream);
  memset(&chk, 0, sizeof chk);
  chk.records = g_hash_table_new(g_direct_hash, g_direct_equal);
  chk.stream_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
  chk.per_stream = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  g_ptr_array_add(chk.per_stream, g_array_new(FALSE, FALSE, sizeof(guintptr)));
}

#define DR_X(name, params, args)            \
  static cudaError_t locked_##name params { \
    pthread_mutex_lock(&big);               \
    cudaError_t rc = inner->name args;      \
    pthread_mutex_unlock(&big);             \
    return rc;                              \
  }
DR_CUDA_API_LIST(DR_X)
#undef DR_X

static void note_record(cudaEvent_t e) {
  guint n = GPOINTER_TO_UINT(g_hash_table_lookup(chk.records, e)) + 1;
  g_hash_table_insert(chk.records, e, GUINT_TO_POINTER(n));
  chk.max_record = MAX(chk.max_record, n);
}

static cudaError_t checked_record(cudaEvent_t e, cudaStream_t s) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaEventRecord(e, s);
  if (rc == cudaSuccess) note_record(e);
  pthread_mutex_unlock(&big);
  return rc;
}

static cudaError_t checked_record_flags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaEventRecordWithFlags(e, s, flags);
  if (rc == cudaSuccess) note_record(e);
  pthread_mutex_unlock(&big);
  return rc;
}

/* Every event is recorded at most once per iteration and the fork first,
 * so the most records of any event is the iteration's number: a wait on an
 * event recorded fewer times waits on an earlier iteration's record. */
static cudaError_t checked_wait(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaStreamWaitEvent(s, e, flags);
  if (rc == cudaSuccess) {
    chk.waits++;
    if (GPOINTER_TO_UINT(g_hash_table_lookup(chk.records, e)) != chk.max_record) chk.stale_waits++;
  }
  pthread_mutex_unlock(&big);
  return rc;
}

static cudaError_t checked_stream_create(cudaStream_t *s, unsigned int flags, int priority) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaStreamCreateWithPriority(s, flags, priority);
  if (rc == cudaSuccess) {
    g_hash_table_insert(chk.stream_ids, *s, GUINT_TO_POINTER(++chk.streams_made));
    g_ptr_array_add(chk.per_stream, g_array_new(FALSE, FALSE, sizeof(guintptr)));
  }
  pthread_mutex_unlock(&big);
  return rc;
}

static cudaError_t checked_memset(void *ptr, int value, size_t count, cudaStream_t s) {
  pthread_mutex_lock(&big);
  cudaError_t rc = inner->cudaMemsetAsync(ptr, value, count, s);
  if (rc == cudaSuccess && count == 1) { /* a node's (setup's memsets are larger) */
    guint id = GPOINTER_TO_UINT(g_hash_table_lookup(chk.stream_ids, s));
    guintptr p = (guintptr)ptr;
    g_array_append_val(g_ptr_array_index(chk.per_stream, id), p);
  }
  pthread_mutex_unlock(&big);
  return rc;
}

static int locked_kernel_launch(const DrKernelDef *def, const DrKLaunch *l) {
  pthread_mutex_lock(&big);
  int rc = inner->kernel_launch(def, l);
  pthread_mutex_unlock(&big);
  return rc;
}

static int locked_stamp_launch(unsigned long long *slot, cudaStream_t stream) {
  pthread_mutex_lock(&big);
  int rc = inner->stamp_launch(slot, stream);
  pthread_mutex_unlock(&big);
  return rc;
}

static DrCudaApi locked_api(void) {
  inner = dr_fake_api();
  DrCudaApi api = *inner;
#define DR_X(name, params, args) api.name = locked_##name;
  DR_CUDA_API_LIST(DR_X)
#undef DR_X
  api.cudaEventRecord = checked_record;
  api.cudaEventRecordWithFlags = checked_record_flags;
  api.cudaStreamWaitEvent = checked_wait;
  api.cudaStreamCreateWithPriority = checked_stream_create;
  api.cudaMemsetAsync = checked_memset;
  api.kernel_launch = locked_kernel_launch;
  if (inner->stamp_launch) api.stamp_launch = locked_stamp_launch;
  return api;
}

/* Each stream's memsets, as offsets from the lowest pointer set. */
static GPtrArray *per_stream_offsets(void) {
  guintptr lo = (guintptr)-1;
  for (guint s = 0; s < chk.per_stream->len; s++) {
    GArray *a = g_ptr_array_index(chk.per_stream, s);
    for (guint i = 0; i < a->len; i++) lo = MIN(lo, g_array_index(a, guintptr, i));
  }
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  for (guint s = 0; s < chk.per_stream->len; s++) {
    GArray *a = g_ptr_array_index(chk.per_stream, s);
    GArray *o = g_array_new(FALSE, FALSE, sizeof(guintptr));
    for (guint i = 0; i < a->len; i++) {
      guintptr d = g_array_index(a, guintptr, i) - lo;
      g_array_append_val(o, d);
    }
    g_ptr_array_add(out, o);
  }
  return out;
}

static DrRunOptions opts_for(const DrGraph *g, guint32 threads, DrTimingMode timing) {
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = DR_BACKEND_CUDA;
  o.mode = DR_MODE_STREAMS;
  o.node_timing = timing;
  o.iterations = 3;
  o.warmup = 1;
  o.issue_threads = threads;
  return o;
}

static void test_fake_run(gconstpointer data) {
  DrTimingMode timing = GPOINTER_TO_INT(data);
  g_autofree char *yaml = layered_yaml(12, 30, 11);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) plan = plan_of(g, 16);
  g_assert_cmpuint(plan->streams->len, ==, 16);
  DrCudaApi api = locked_api();
  const DrCudaApi *prev = dr_cuda_api_set(&api);
  GPtrArray *want = NULL;
  for (guint32 threads = 1; threads <= 8; threads *= 2) {
    dr_fake_reset();
    chk_reset();
    DrRunOptions o = opts_for(g, threads, timing);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(r->mode, ==, "streams");
    g_assert_cmpuint(chk.waits, >, 0);
    g_assert_cmpuint(chk.stale_waits, ==, 0);
    g_assert_cmpuint(chk.max_record, ==, 4); /* warmup + 3 iterations */
    GPtrArray *got = per_stream_offsets();
    if (want == NULL) {
      want = got;
    } else {
      g_assert_cmpuint(got->len, ==, want->len);
      for (guint s = 0; s < got->len; s++) {
        GArray *a = g_ptr_array_index(got, s), *b = g_ptr_array_index(want, s);
        g_assert_cmpuint(a->len, ==, b->len);
        if (a->len > 0) /* an empty GArray's data may be NULL */
          g_assert_cmpmem(a->data, a->len * sizeof(guintptr), b->data, b->len * sizeof(guintptr));
      }
      g_ptr_array_unref(got);
    }
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
  g_ptr_array_unref(want);
  dr_cuda_api_set(prev);
}

/* Every call failed in turn with 4 issue threads: each failure is reported
 * and nothing leaks; no thread hangs. */
static void test_fake_sweep(void) {
  g_autofree char *yaml = layered_yaml(6, 16, 5);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) plan = plan_of(g, 8);
  DrCudaApi api = locked_api();
  const DrCudaApi *prev = dr_cuda_api_set(&api);
  dr_fake_set_move_data(FALSE);
  DrRunOptions o = opts_for(g, 4, DR_TIMING_STAMPS);
  o.iterations = 2;
  dr_fake_reset();
  chk_reset();
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
  }
  guint64 total = dr_fake_points();
  g_assert_cmpuint(total, >, 100);
  guint failed = 0, tested = 0;
  for (guint64 k = 1; k <= total; k += MAX(1, total / 200)) {
    dr_fake_reset();
    chk_reset();
    dr_fake_arm(k, k % 2 ? DR_FAULT_LAUNCH : DR_FAULT_ILLEGAL);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    tested++;
    const DrFakeCall *fc = dr_fake_faulted_call();
    g_assert_nonnull(fc);
    if (r == NULL) {
      failed++;
      g_assert_true(error->domain == DR_ERROR);
      if (!strstr(error->message, "failed") && !strstr(error->message, "kernel launch") &&
          !strstr(error->message, "no usable CUDA device"))
        g_error("fault at %" G_GUINT64_FORMAT " (%s): %s", k, fc->name, error->message);
    } else {
      g_assert_true(fc->release); /* only a release's fault goes unreported (close ignores it) */
    }
    g_assert_cmpuint(chk.stale_waits, ==, 0);
    if (!fc->release && dr_fake_live_total() != 0) {
      g_autoptr(GString) live = g_string_new(NULL);
      dr_fake_describe_live(live);
      g_error("fault at %" G_GUINT64_FORMAT " (%s): left live: %s", k, fc->name, live->str);
    }
    g_assert_cmpstr(dr_fake_misuse(), ==, "");
  }
  g_assert_cmpuint(failed, >, tested / 2);
  dr_fake_set_move_data(TRUE);
  dr_cuda_api_set(prev);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/threads/order", test_order);
  g_test_add_func("/threads/count", test_count);
  g_test_add_data_func("/threads/fake/stamps", GINT_TO_POINTER(DR_TIMING_STAMPS), test_fake_run);
  g_test_add_data_func("/threads/fake/events", GINT_TO_POINTER(DR_TIMING_EVENTS), test_fake_run);
  g_test_add_data_func("/threads/fake/off", GINT_TO_POINTER(DR_TIMING_OFF), test_fake_run);
  g_test_add_func("/threads/fake/sweep", test_fake_sweep);
  return g_test_run();
}
