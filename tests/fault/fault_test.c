/* fault_test.c: CUDA fault injection on the CPU. Every example pipeline of
 * graphs/ runs through the CUDA backend on the fake runtime of fake_cuda.h,
 * in both modes (streams, graph) and every timing mode (stamps, events,
 * off): once fault-free, counting its fault points C, then once per fault
 * point N (all of them, or 200 spread evenly with the first and last 20
 * always in; DAGRUN_FAULT_ALL=1 takes all) for each fault kind. The data
 * is scaled down 1024x after planning when that leaves the calls the same
 * (checked), so the sweeps do not spend their time filling buffers. Each
 * faulted run must:
 *  - fail: dr_run returns NULL with a DR_ERROR whose exit code is 70, or 69
 *    when the failed call is the device probe (cudaGetDeviceCount: run.c
 *    reports --backend=cuda with no usable device as DR_ERROR_UNAVAILABLE)
 *    or the error is cudaErrorNoDevice (cuda_api.h maps it so anywhere).
 *    A fault in a close (after a clean run: its releases only) is ignored
 *    by cuda_close by design: the run succeeds; only a sticky one before
 *    --verify's reference run fails that run's first call, cudaSetDevice.
 *    The device drain at the end of each backend run's last iteration
 *    (cudaDeviceSynchronize) is checked: a fault there fails that run,
 *    naming the call;
 *  - name the failed call and the CUDA error, and when it blames a node,
 *    name an existing node on its planned stream, of an op that makes that
 *    call, with the call's payload (bytes, kernel) matching the node, in
 *    plan order, and the same CUDA stream for every call blamed on one
 *    plan stream; work calls it does not blame on a node must not be on a
 *    plan stream;
 *  - release everything: no live allocation, host allocation, stream,
 *    event, graph, graph exec or library (only the object of a rejected
 *    release call may stay, when the fault hit that very call);
 *  - make no misuse of the runtime (fake_cuda.h), and after a sticky fault
 *    no call but releases, cudaDeviceSynchronize, cudaStreamEndCapture and
 *    cudaGetLastError;
 *  - leave no `save:` file behind (a pipeline with `save:` buffers, with
 *    and without --verify).
 * A pipeline with a `ptx:` user kernel covers the library calls. The fake's
 * own detectors and its data path are tested first (/fault/fake/).
 * Problems are collected per sweep and reported together, so one run shows
 * every failing point. This test does not run device code. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "include/dagrun/dagrun.h"

#define MAX_POINTS 200 /* per pipeline, mode and fault kind */
#define EDGE_POINTS 20 /* always tested at each end */
#define MAX_PROBLEM_LINES 40

static FILE *devnull;
static guint64 passed_by_mode[2];
static guint64 rejected_releases;
static GString *summary;

/* ---- the subject: a pipeline, planned, with its fault-free run ------------- */

typedef struct {
  char *label; /* "pipeline/streams" */
  DrGraph *graph;
  DrPlan *plan;
  DrRunOptions opts;
  guint64 points;        /* C: fault points of the fault-free run */
  guint64 teardown_from; /* first fault point of the final close */
  guint8 *in_close;      /* [points + 1]: the point lies in a close */
  guint8 *run_of;        /* [points + 1]: 0 the run, 1 --verify's serial run */
  DrPlan *serial;        /* with --verify: the reference run's plan */
  guint64 sweep_to;      /* last fault point to sweep */
  char *baseline_error;  /* the fault-free run's error, or NULL */
  GPtrArray *names;      /* [points]: the call at each point (static strings) */
} Subject;

static void subject_free(Subject *s) {
  if (s == NULL) return;
  dr_plan_free(s->serial);
  dr_plan_free(s->plan);
  dr_graph_free(s->graph);
  g_free(s->in_close);
  g_free(s->run_of);
  g_free(s->label);
  g_free(s->baseline_error);
  if (s->names) g_ptr_array_unref(s->names);
  g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Subject, subject_free)

static gboolean graph_uses_blas(const DrGraph *g) {
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op != DR_OP_KERNEL) continue;
    const DrKernelDecl *k = dr_graph_kernel(g, n->kernel);
    if (k->origin == DR_KERNEL_BUILTIN && (dr_kernel_registry[k->builtin_index].flags & DR_KFLAG_BLAS))
      return TRUE;
  }
  return FALSE;
}

/* Runs the subject fault-free on the fake and records its fault points. */
static void subject_baseline(Subject *s) {
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  DrReport *r = dr_run(s->plan, &s->opts, &error);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_autoptr(GString) live = g_string_new(NULL);
  dr_fake_describe_live(live);
  g_assert_cmpstr(live->str, ==, "nothing");
  g_clear_pointer(&s->baseline_error, g_free);
  if (r == NULL) {
    /* Only cuBLAS may fail here: its workspace comes through the table,
     * but cublasCreate makes its handle with the real runtime and driver,
     * beside the table (kernels/blas.c). */
    g_assert_nonnull(error);
    g_assert_true(graph_uses_blas(s->graph));
    g_assert_nonnull(strstr(error->message, "cuBLAS"));
    s->baseline_error = g_strdup(error->message);
  }
  dr_report_free(r);
  s->points = dr_fake_points();
  g_assert_cmpuint(s->points, >, 0);
  if (s->names) g_ptr_array_unref(s->names);
  s->names = g_ptr_array_new();
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (c->point != 0) g_ptr_array_add(s->names, (gpointer)c->name);
  }
  /* Every close (one per backend run; each open starts with
   * cudaSetDevice): after a clean run cuda_close makes only releases (the
   * run's last iteration drained the device, checked), so a close is the
   * releases that end a run. After a failed one (a baseline stopped by
   * cuBLAS) it starts with its unchecked drain, cudaDeviceSynchronize. */
  g_free(s->in_close);
  g_free(s->run_of);
  s->in_close = g_new0(guint8, s->points + 1);
  s->run_of = g_new0(guint8, s->points + 1);
  gboolean tail = TRUE;
  for (guint i = trace->len; i-- > 0;) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (c->point == 0) continue;
    gboolean drain = s->baseline_error && strcmp(c->name, "cudaDeviceSynchronize") == 0;
    s->in_close[c->point] = tail && (c->release || drain);
    tail = s->in_close[c->point] && !drain;
    if (strcmp(c->name, "cudaSetDevice") == 0) tail = TRUE; /* what precedes ends the previous run */
  }
  int opens = 0;
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *c = &g_array_index(trace, DrFakeCall, i);
    if (c->point == 0) continue;
    if (strcmp(c->name, "cudaSetDevice") == 0) opens++;
    s->run_of[c->point] = (guint8)MAX(opens - 1, 0);
  }
  /* The final teardown: the last close. */
  s->teardown_from = s->points + 1;
  while (s->teardown_from > 1 && s->in_close[s->teardown_from - 1]) s->teardown_from--;
  g_assert_cmpuint(s->names->len, ==, s->points);
  g_assert_cmpuint(s->teardown_from, <=, s->points);
  /* A failing baseline: sweep what came before its failure. */
  s->sweep_to = s->baseline_error ? s->teardown_from - 1 : s->points;
  dr_fake_reset();
}

/* Plans `graph` (taken) and runs it fault-free on the fake in `mode`. */
static Subject *subject_new(const char *label, DrGraph *graph, DrMode mode, DrTimingMode timing) {
  Subject *s = g_new0(Subject, 1);
  s->label = g_strdup_printf("%s/%s/%s", label, dr_mode_name(mode), dr_timing_mode_name(timing));
  s->graph = graph;
  g_autoptr(GError) error = NULL;
  s->plan = dr_plan_build(graph, NULL, &error);
  g_assert_no_error(error);
  dr_run_options_init(&s->opts, graph);
  s->opts.backend = DR_BACKEND_CUDA;
  s->opts.mode = mode;
  s->opts.iterations = 2; /* two timed iterations and a warmup: repeats run */
  s->opts.warmup = 1;
  s->opts.node_timing = timing;
  s->opts.host_output = devnull;
  subject_baseline(s);
  return s;
}

/* The fault points to try: all of 1..n, or the first and last EDGE_POINTS
 * and evenly spread ones between, MAX_POINTS in all. */
static GArray *sample_points(guint64 n) {
  GArray *pts = g_array_new(FALSE, FALSE, sizeof(guint64));
  /* DAGRUN_FAULT_ALL=1: every point (a few times slower). */
  if (n <= MAX_POINTS || g_getenv("DAGRUN_FAULT_ALL") != NULL) {
    for (guint64 i = 1; i <= n; i++) g_array_append_val(pts, i);
    return pts;
  }
  for (guint64 i = 1; i <= EDGE_POINTS; i++) g_array_append_val(pts, i);
  guint64 lo = EDGE_POINTS + 1, hi = n - EDGE_POINTS, mid = MAX_POINTS - 2 * EDGE_POINTS;
  for (guint64 k = 0; k < mid; k++) {
    guint64 p = lo + (hi - lo) * k / (mid - 1);
    guint64 last = g_array_index(pts, guint64, pts->len - 1);
    if (p > last) g_array_append_val(pts, p);
  }
  for (guint64 i = n - EDGE_POINTS + 1; i <= n; i++) {
    guint64 last = g_array_index(pts, guint64, pts->len - 1);
    if (i > last) g_array_append_val(pts, i);
  }
  return pts;
}

/* ---- one sweep ---------------------------------------------------------------- */

/* What a faulted run said about the call it blamed. */
typedef struct {
  guint64 point;
  const char *call;
  DrId node;      /* DR_NONE: not blamed on a node */
  guint stream;   /* the call's stream (fake creation number), or 0 */
  gboolean aside; /* blamed on a node, on a stream that is none of the plan's */
} Blame;

typedef struct {
  const Subject *s;
  DrFault fault;
  GString *problems;
  guint n_problems;
  guint64 passed, tested, teardown_ok;
  GArray *blames;        /* Blame */
  GHashTable *stream_of; /* run << 24 | plan stream + 1 -> fake stream number */
} Sweep;

static void problem(Sweep *w, guint64 point, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void problem(Sweep *w, guint64 point, const char *fmt, ...) {
  w->n_problems++;
  if (w->n_problems > MAX_PROBLEM_LINES) return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_string_append_printf(w->problems, "%s %s N=%" G_GUINT64_FORMAT " (%s): %s\n", w->s->label,
                         dr_fault_name(w->fault), point,
                         point ? (const char *)w->s->names->pdata[point - 1] : "-", msg);
}

/* The op a node must have to make `call` as its work; DR_N_OPS: any
 * (timing and completion events, waits). */
static DrOp op_of_call(const char *call) {
  static const struct {
    const char *call;
    DrOp op;
  } table[] = {
      {"cudaMemcpyAsync", DR_OP_COPY},    {"cudaMemcpyPeerAsync", DR_OP_COPY},
      {"cudaMemsetAsync", DR_OP_MEMSET},  {"kernel_launch", DR_OP_KERNEL},
      {"cudaLaunchKernel", DR_OP_KERNEL}, {"cudaMalloc", DR_OP_KERNEL},
      {"cudaMallocAsync", DR_OP_ALLOC},   {"cudaFreeAsync", DR_OP_FREE},
      {"cudaLaunchHostFunc", DR_OP_HOST},
  };
  for (guint i = 0; i < G_N_ELEMENTS(table); i++)
    if (strcmp(call, table[i].call) == 0) return table[i].op;
  return DR_N_OPS;
}

/* Calls that are a node's work when they run in an iteration. */
static gboolean is_stream_work(const char *call) {
  DrOp op = op_of_call(call);
  return op != DR_N_OPS && strcmp(call, "cudaMalloc") != 0;
}

/* The token the message must hold for `call`. */
static const char *call_token(const char *call) {
  /* Built-in and user kernels alike: "kernel launch (NAME)". */
  if (strcmp(call, "kernel_launch") == 0 || strcmp(call, "cudaLaunchKernel") == 0) return "kernel launch (";
  if (strcmp(call, "stamp_launch") == 0) return "stamp kernel launch";
  return call;
}

/* Checks that the call blamed on node `v` carries v's payload. */
static void check_payload(Sweep *w, guint64 point, const DrFakeCall *fc, DrId v) {
  const DrGraph *g = w->s->graph;
  const DrNode *n = dr_graph_node(g, v);
  const char *call = fc->name;
  if (strcmp(call, "cudaMemcpyAsync") == 0 || strcmp(call, "cudaMemcpyPeerAsync") == 0 ||
      strcmp(call, "cudaMemsetAsync") == 0) {
    guint64 bytes = 0;
    for (guint32 i = 0; i < n->access_count; i++) {
      const DrAccess *a = dr_graph_access(g, n->access_first + i);
      if (dr_access_writes(a->mode))
        bytes = (a->end - a->begin) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
    }
    if (bytes != fc->size)
      problem(w, point, "node '%s' moves %" G_GUINT64_FORMAT " bytes, the failed %s %" G_GUINT64_FORMAT,
              n->id, bytes, call, fc->size);
  } else if (strcmp(call, "cudaMallocAsync") == 0) {
    guint64 bytes = MAX(dr_buffer_bytes(dr_graph_buffer(g, n->buffer)), 1);
    if (bytes != fc->size)
      problem(w, point, "node '%s' allocates %" G_GUINT64_FORMAT " bytes, the failed call %" G_GUINT64_FORMAT,
              n->id, bytes, fc->size);
  } else if (strcmp(call, "kernel_launch") == 0) {
    const char *kernel = dr_graph_kernel(g, n->kernel)->name;
    if (fc->what == NULL || strcmp(kernel, fc->what) != 0)
      problem(w, point, "node '%s' runs %s, the failed launch was %s", n->id, kernel,
              fc->what ? fc->what : "?");
  }
}

/* Parses "node 'ID' (stream K)" out of `msg`: TRUE with *node (DR_NONE if
 * unknown id) and *stream (-1 if absent) when a node is named. */
static gboolean parse_blame(const DrGraph *g, const char *msg, DrId *node, gint64 *stream, char **id_out) {
  const char *p = strstr(msg, "node '");
  *node = DR_NONE;
  *stream = -1;
  if (p == NULL) return FALSE;
  p += strlen("node '");
  const char *q = strchr(p, '\'');
  if (q == NULL) return FALSE;
  g_autofree char *id = g_strndup(p, q - p);
  *node = dr_graph_find_node(g, id);
  const char *st = strstr(q, " (stream ");
  if (st == q + 1) *stream = g_ascii_strtoll(st + strlen(" (stream "), NULL, 10);
  *id_out = g_steal_pointer(&id);
  return TRUE;
}

/* The plan that the backend run holding `point` executes. */
static const DrPlan *plan_at(const Subject *s, guint64 point) {
  return s->run_of[point] && s->serial ? s->serial : s->plan;
}

static void check_error(Sweep *w, guint64 point, const DrFakeCall *fc, const GError *error) {
  const Subject *s = w->s;
  const DrPlan *plan = plan_at(s, point);
  const char *call = fc->name;
  if (error == NULL) {
    problem(w, point, "dr_run returned NULL without an error");
    return;
  }
  if (error->domain != DR_ERROR) {
    problem(w, point, "error of domain %s: %s", g_quark_to_string(error->domain), error->message);
    return;
  }
  /* cuda_api.h: cudaErrorNoDevice (and InsufficientDriver, InvalidDevice)
   * is DR_ERROR_UNAVAILABLE wherever it comes. */
  int want = strcmp(call, "cudaGetDeviceCount") == 0 || w->fault == DR_FAULT_NO_DEVICE ? 69 : 70;
  if (dr_error_exit_code(error) != want)
    problem(w, point, "exit code %d, want %d: %s", dr_error_exit_code(error), want, error->message);
  if (strstr(error->message, call_token(call)) == NULL)
    problem(w, point, "the message does not name the failed call: %s", error->message);
  const char *err_name = dr_cuda_api()->cudaGetErrorName(dr_fault_error(w->fault));
  if (strstr(error->message, err_name) == NULL)
    problem(w, point, "the message does not name %s: %s", err_name, error->message);

  Blame b = {point, call, DR_NONE, fc->stream, FALSE};
  g_autofree char *id = NULL;
  gint64 stream = -1;
  if (parse_blame(s->graph, error->message, &b.node, &stream, &id)) {
    if (b.node == DR_NONE) {
      problem(w, point, "blames an unknown node '%s': %s", id, error->message);
      return;
    }
    const DrNode *n = dr_graph_node(s->graph, b.node);
    /* A node's call on a stream that is no plan stream (graph mode's side
     * streams for timing stamps) may name the node alone; check_blames
     * makes sure its stream is no plan stream. */
    b.aside = stream < 0 && fc->stream != 0;
    if (b.aside) {
      /* checked in check_blames */
    } else if (stream < 0 || (guint64)stream != plan->node_stream[b.node])
      problem(w, point, "blames node '%s' on stream %" G_GINT64_FORMAT ", planned on stream %u: %s", n->id,
              stream, plan->node_stream[b.node], error->message);
    DrOp op = op_of_call(call);
    if (op != DR_N_OPS && op != n->op)
      problem(w, point, "blames %s node '%s' for %s: %s", dr_op_name(n->op), n->id, call, error->message);
    else
      check_payload(w, point, fc, b.node);
    /* Every call with a stream blamed on plan stream K uses one handle. */
    if (fc->stream && !fc->release && strcmp(call, "cudaStreamCreateWithPriority") != 0 && stream >= 0) {
      gpointer key = GSIZE_TO_POINTER(((gsize)s->run_of[point] << 24) + (gsize)stream + 1);
      guint seen = GPOINTER_TO_UINT(g_hash_table_lookup(w->stream_of, key));
      if (seen == 0)
        g_hash_table_insert(w->stream_of, key, GUINT_TO_POINTER(fc->stream));
      else if (seen != fc->stream)
        problem(w, point,
                "blames stream %" G_GINT64_FORMAT " for a call on another CUDA stream than before: %s",
                stream, error->message);
    }
  } else if (is_stream_work(call) && strncmp(error->message, "setup", 5) != 0) {
    problem(w, point, "work call blamed on neither a node nor setup: %s", error->message);
  }
  g_array_append_val(w->blames, b);
}

/* After the sweep: blames in point order follow the plan, and work not
 * blamed on a node never ran on a plan stream. */
static void check_blames(Sweep *w) {
  const Subject *s = w->s;
  GHashTable *plan_streams = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, w->stream_of);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    if (g_hash_table_contains(plan_streams, value))
      problem(w, 0, "two plan streams blamed on one CUDA stream (#%u)", GPOINTER_TO_UINT(value));
    g_hash_table_add(plan_streams, value);
  }
  for (guint i = 0; i < w->blames->len; i++) {
    const Blame *b = &g_array_index(w->blames, Blame, i);
    /* Streams mode with one plan stream: that stream is origin too
     * (backends/cuda/streams.h), where setup work runs. */
    const DrPlan *run_plan = s->run_of[b->point] == 1 && s->serial ? s->serial : s->plan;
    gboolean setup_there = s->opts.mode == DR_MODE_STREAMS && dr_plan_n_streams(run_plan) == 1;
    if (b->node == DR_NONE && is_stream_work(b->call) && b->stream && !setup_there &&
        g_hash_table_contains(plan_streams, GUINT_TO_POINTER(b->stream)))
      problem(w, b->point, "%s on a plan stream not blamed on a node", b->call);
    if (b->aside && g_hash_table_contains(plan_streams, GUINT_TO_POINTER(b->stream)))
      problem(w, b->point, "%s blamed on node '%s' without its stream, but it ran on a plan stream", b->call,
              dr_graph_node(s->graph, b->node)->id);
    if (i == 0) continue;
    const Blame *a = &g_array_index(w->blames, Blame, i - 1);
    if (a->node == DR_NONE || b->node == DR_NONE || b->point != a->point + 1 || a->node == b->node) continue;
    const DrPlan *plan = plan_at(s, b->point);
    /* Adjacent calls of two nodes: per-node resources are made and
     * timings read in node order, iterations issue in plan order. */
    gboolean making = strcmp(b->call, "cudaEventCreateWithFlags") == 0 ||
                      strcmp(b->call, "cudaMalloc") == 0 || strcmp(b->call, "cudaEventElapsedTime") == 0;
    gboolean ordered = making ? b->node > a->node : plan->node_step[b->node] > plan->node_step[a->node];
    if (!ordered)
      problem(w, b->point, "blames node '%s' right after a call blamed on '%s': out of %s order",
              dr_graph_node(s->graph, b->node)->id, dr_graph_node(s->graph, a->node)->id,
              making ? "node" : "plan");
  }
  g_hash_table_unref(plan_streams);
}

/* Removes the subject's save files; TRUE when one existed. */
static gboolean save_files_left(const DrGraph *g, GString *which) {
  gboolean any = FALSE;
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const char *path = dr_graph_buffer(g, i)->save_path;
    if (path == NULL || !g_file_test(path, G_FILE_TEST_EXISTS)) continue;
    if (which) g_string_append_printf(which, "%s%s", any ? ", " : "", dr_graph_buffer(g, i)->name);
    any = TRUE;
    g_unlink(path);
  }
  return any;
}

static void run_point(Sweep *w, guint64 point) {
  const Subject *s = w->s;
  guint before = w->n_problems;
  save_files_left(s->graph, NULL);
  dr_fake_reset();
  dr_fake_arm(point, w->fault);
  g_autoptr(GError) error = NULL;
  DrReport *r = dr_run(s->plan, &s->opts, &error);
  w->tested++;

  gint64 fi = dr_fake_fault_index();
  if (fi < 0) {
    problem(w, point, "the run never reached the fault point (%" G_GUINT64_FORMAT " points)",
            dr_fake_points());
    dr_report_free(r);
    return;
  }
  const DrFakeCall *fc = &g_array_index(dr_fake_trace(), DrFakeCall, fi);
  if (strcmp(fc->name, s->names->pdata[point - 1]) != 0)
    problem(w, point, "the fault hit %s, the fault-free run made %s there", fc->name,
            (const char *)s->names->pdata[point - 1]);

  /* A sticky fault in a close that another backend run follows (--verify's
   * reference run): a close makes only releases, which report nothing, so
   * the next run's first call, cudaSetDevice, is the one that fails and is
   * reported. (A real device cannot fault in a release; the device sync
   * that could see a fault after the run's work, at the end of its last
   * iteration, is checked and fails the run that made it: check_error
   * requires it to name cudaDeviceSynchronize.) */
  gboolean sticky_between_runs = dr_fault_sticky(w->fault) && s->in_close[point] && point < s->teardown_from;
  if (sticky_between_runs) {
    if (r != NULL)
      problem(w, point, "dr_run succeeded after a sticky fault");
    else if (error == NULL || dr_error_exit_code(error) != 70 ||
             strstr(error->message, "cudaSetDevice") == NULL)
      problem(w, point, "want exit 70 naming cudaSetDevice: %s", error ? error->message : "no error");
    else
      w->teardown_ok++;
  } else if (s->in_close[point]) {
    /* close ignores what its releases say: the run's outcome stands. */
    if (s->baseline_error == NULL && r == NULL)
      problem(w, point, "a fault in a teardown failed the run: %s", error ? error->message : "?");
    if (r) w->teardown_ok++;
  } else if (r != NULL) {
    problem(w, point, "dr_run succeeded despite the fault");
  } else {
    check_error(w, point, fc, error);
  }
  dr_report_free(r);

  if (dr_fake_live_total() != 0) {
    gconstpointer only = NULL;
    if (fc->release && dr_fake_only_live(&only) && only == fc->obj) {
      rejected_releases++; /* the fault rejected this very release */
    } else {
      g_autoptr(GString) live = g_string_new(NULL);
      dr_fake_describe_live(live);
      problem(w, point, "left live after the run: %s", live->str);
    }
  }
  if (dr_fake_misuse()[0]) {
    g_autofree char *what = g_strstrip(g_strdelimit(g_strdup(dr_fake_misuse()), "\n", ';'));
    problem(w, point, "runtime misuse: %s", what);
  }
  if (dr_fault_sticky(w->fault) && dr_fake_after_sticky()[0] &&
      !(sticky_between_runs && strcmp(dr_fake_after_sticky(), "cudaSetDevice\n") == 0)) {
    g_autofree char *calls = g_strdelimit(g_strdup(dr_fake_after_sticky()), "\n", ' ');
    problem(w, point, "calls after the sticky fault: %s", calls);
  }
  g_autoptr(GString) saved = g_string_new(NULL);
  if (save_files_left(s->graph, saved) && r == NULL)
    problem(w, point, "a failed run left save files behind: %s", saved->str);
  if (w->n_problems == before) w->passed++;
}

/* Sweeps the subject's fault points with `fault`; returns the passed
 * count; asserts there was no problem. */
static void sweep(const Subject *s, DrFault fault) {
  Sweep w = {.s = s, .fault = fault};
  w.problems = g_string_new(NULL);
  w.blames = g_array_new(FALSE, FALSE, sizeof(Blame));
  w.stream_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GArray) pts = sample_points(s->sweep_to);
  dr_fake_set_move_data(FALSE);
  for (guint i = 0; i < pts->len; i++) run_point(&w, g_array_index(pts, guint64, i));
  check_blames(&w);
  dr_fake_reset();
  dr_fake_set_move_data(TRUE);

  passed_by_mode[s->opts.mode == DR_MODE_GRAPH] += w.passed;
  guint64 bytes = 0;
  for (DrId i = 0; i < dr_graph_n_buffers(s->graph); i++)
    bytes += dr_buffer_bytes(dr_graph_buffer(s->graph, i));
  g_autofree char *line = g_strdup_printf(
      "%s %s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " fault points passed (C = %" G_GUINT64_FORMAT
      ", %" G_GUINT64_FORMAT " of them in a close; buffers %" G_GUINT64_FORMAT " bytes)%s",
      s->label, dr_fault_name(fault), w.passed, w.tested, s->points, w.teardown_ok, bytes,
      s->baseline_error ? " [baseline stops at cuBLAS]" : "");
  g_test_message("%s", line);
  g_string_append_printf(summary, "%s\n", line);
  if (w.n_problems > MAX_PROBLEM_LINES)
    g_string_append_printf(w.problems, "... %u problems in all\n", w.n_problems);
  g_autofree char *problems = g_string_free(w.problems, FALSE);
  g_array_unref(w.blames);
  g_hash_table_unref(w.stream_of);
  g_assert_cmpstr(problems, ==, "");
}

/* ---- the test cases ------------------------------------------------------------- */

typedef struct {
  char *name; /* graphs/NAME.yaml */
  gboolean verify;
  DrMode mode;
  DrTimingMode timing;
  DrFault fault; /* DR_N_FAULTS: the fault-free check */
} Case;

static DrGraph *load_example(const char *name) {
  g_autofree char *path = g_strdup_printf("graphs/%s.yaml", name);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

/* Divides (or with `up`, multiplies) by `f` the count and every slice
 * bound of each buffer whose count and slice bounds are all multiples of
 * it (when dividing), recording which in `which` (when multiplying,
 * those): the same DAG with f times less data, run under the plan made
 * for the real sizes. Returns how many buffers it scaled. */
static guint scale_graph(DrGraph *g, guint64 f, gboolean up, gboolean *which) {
  guint n = 0;
  if (!up) {
    for (DrId i = 0; i < dr_graph_n_buffers(g); i++) which[i] = dr_graph_buffer(g, i)->count % f == 0;
    for (guint i = 0; i < g->accesses->len; i++) {
      const DrAccess *a = dr_graph_access(g, i);
      if (a->begin % f || a->end % f) which[a->buffer] = FALSE;
    }
  }
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    if (!which[i]) continue;
    DrBuffer *b = dr_graph_buffer(g, i);
    b->count = up ? b->count * f : b->count / f;
    n++;
  }
  for (guint i = 0; i < g->accesses->len; i++) {
    DrAccess *a = dr_graph_access(g, i);
    if (!which[a->buffer]) continue;
    a->begin = up ? a->begin * f : a->begin / f;
    a->end = up ? a->end * f : a->end / f;
  }
  return n;
}

#define SCALE 1024

/* The subject a sweep uses: the example with its data scaled down by
 * SCALE after planning, when that makes exactly the same calls as the
 * real sizes (so a sweep's hundreds of runs do not spend their time
 * filling buffers); else the example as it is. */
static Subject *sweep_subject_new(const char *name, DrMode mode, DrTimingMode timing, gboolean *scaled) {
  Subject *s = subject_new(name, load_example(name), mode, timing);
  *scaled = FALSE;
  g_autoptr(GPtrArray) full = g_ptr_array_ref(s->names);
  g_autofree gboolean *which = g_new0(gboolean, MAX(dr_graph_n_buffers(s->graph), 1));
  if (scale_graph(s->graph, SCALE, FALSE, which) == 0) return s;
  subject_baseline(s);
  *scaled = s->names->len == full->len;
  for (guint i = 0; *scaled && i < full->len; i++) *scaled = strcmp(s->names->pdata[i], full->pdata[i]) == 0;
  if (!*scaled) {
    scale_graph(s->graph, SCALE, TRUE, which);
    subject_baseline(s);
  }
  return s;
}

/* sweep_subject_new, made once per pipeline and mode (borrowed). */
static const Subject *sweep_subject(const char *name, DrMode mode, DrTimingMode timing, gboolean *scaled) {
  static GHashTable *cache; /* "name/mode" -> Subject; "name/mode?" -> scaled */
  if (cache == NULL) cache = g_hash_table_new(g_str_hash, g_str_equal);
  g_autofree char *key = g_strdup_printf("%s/%s/%s", name, dr_mode_name(mode), dr_timing_mode_name(timing));
  g_autofree char *flag = g_strdup_printf("%s?", key);
  Subject *s = g_hash_table_lookup(cache, key);
  if (s == NULL) {
    s = sweep_subject_new(name, mode, timing, scaled);
    g_hash_table_insert(cache, g_strdup(key), s);
    g_hash_table_insert(cache, g_strdup(flag), GINT_TO_POINTER(*scaled));
  }
  *scaled = GPOINTER_TO_INT(g_hash_table_lookup(cache, flag));
  return s;
}

static void test_fault_free(gconstpointer data) {
  const Case *c = data;
  gboolean scaled = FALSE;
  const Subject *s = sweep_subject(c->name, c->mode, c->timing, &scaled);
  g_test_message(
      "%s: %" G_GUINT64_FORMAT " fault points, teardown from %" G_GUINT64_FORMAT "; sweeps use the %s%s%s",
      s->label, s->points, s->teardown_from,
      scaled ? "data scaled down 1024x (same plan, same calls)" : "full-size data",
      s->baseline_error ? "; fails without a fault: " : "", s->baseline_error ? s->baseline_error : "");
}

static void test_sweep(gconstpointer data) {
  const Case *c = data;
  gboolean scaled = FALSE;
  const Subject *s = sweep_subject(c->name, c->mode, c->timing, &scaled);
  sweep(s, c->fault);
}

/* The `save:` pipeline: x (iota) scaled into y on the device, copied to
 * the host buffer back; y and back are saved under TEST_TMPDIR. */
static DrGraph *save_graph(char **dev_path, char **host_path) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  *dev_path = g_build_filename(tmp, "fault-save-y.bin", NULL);
  *host_path = g_build_filename(tmp, "fault-save-back.bin", NULL);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\n"
      "name: save\n"
      "buffers:\n"
      "  x:    {type: f32, count: 1Ki, init: iota}\n"
      "  y:    {type: f32, count: 1Ki, save: '%s'}\n"
      "  back: {type: f32, count: 1Ki, where: host, save: '%s'}\n"
      "nodes:\n"
      "  scale: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: y}}\n"
      "  down:  {op: copy, src: y, dst: back}\n",
      *dev_path, *host_path);
  return dr_fake_load_yaml("save.yaml", yaml);
}

/* A faulted run of the `save:` pipeline must leave none of its files
 * (complete or not); with --verify too, whose serial reference run comes
 * after the save. */
static void test_save(gconstpointer data) {
  const Case *c = data;
  g_autofree char *dev_path = NULL, *host_path = NULL;
  DrGraph *g = save_graph(&dev_path, &host_path);
  g_unlink(dev_path);
  g_unlink(host_path);
  g_autoptr(Subject) s = g_new0(Subject, 1);
  s->label = g_strdup_printf("save%s/%s/%s", c->verify ? "+verify" : "", dr_mode_name(c->mode),
                             dr_timing_mode_name(c->timing));
  s->graph = g;
  g_autoptr(GError) error = NULL;
  s->plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  dr_run_options_init(&s->opts, g);
  s->opts.backend = DR_BACKEND_CUDA;
  s->opts.mode = c->mode;
  s->opts.iterations = 1;
  s->opts.warmup = 0;
  s->opts.verify = c->verify;
  s->opts.node_timing = c->timing;
  if (c->verify) s->serial = dr_plan_new_serial(g);
  s->opts.host_output = devnull;
  subject_baseline(s);
  /* The fault-free run wrote both files. */
  g_assert_true(g_file_test(dev_path, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(host_path, G_FILE_TEST_EXISTS));
  sweep(s, c->fault);
}

/* The device drain at the end of a backend run's last iteration is
 * checked: a sticky fault there, in the first of --verify's two runs,
 * fails that run naming cudaDeviceSynchronize (close used to drop it, and
 * the reference run then failed in cudaSetDevice, blaming setup), and
 * everything is still released. */
static void test_sync_fault_reported(gconstpointer data) {
  const Case *c = data;
  g_autofree char *dev_path = NULL, *host_path = NULL;
  g_autoptr(DrGraph) g = save_graph(&dev_path, &host_path);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, c->mode, DR_TIMING_AUTO, 1, 2);
  opts.verify = TRUE;
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  dr_report_free(r);
  /* The first run's drain: the first cudaDeviceSynchronize. */
  guint64 sync_point = 0;
  guint syncs = 0;
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *fc = &g_array_index(trace, DrFakeCall, i);
    if (strcmp(fc->name, "cudaDeviceSynchronize") != 0) continue;
    if (sync_point == 0) sync_point = fc->point;
    syncs++;
  }
  g_assert_cmpuint(syncs, ==, 2); /* one drain per backend run, none in the closes */
  g_unlink(dev_path);             /* the fault-free run saved them */
  g_unlink(host_path);
  dr_fake_reset();
  dr_fake_arm(sync_point, DR_FAULT_ILLEGAL);
  r = dr_run(plan, &opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "cudaDeviceSynchronize failed: cudaErrorIllegalAddress"));
  g_assert_null(strstr(error->message, "cudaSetDevice"));
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpstr(dr_fake_after_sticky(), ==, "");
  g_assert_false(g_file_test(dev_path, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(host_path, G_FILE_TEST_EXISTS));
  dr_fake_reset();
}

/* The CUDA backend keeps two iterations in flight eagerly: iteration i+1
 * is issued before the host waits for iteration i, never a third before i
 * is finished, and every timed iteration is still read (its own timing
 * slot). Graph mode keeps one (replays measured slower with two).
 * The trace, reduced to "I" per iteration issued (a run of kernel launches
 * or a graph launch) and "S" per wait, shows the order. */
typedef struct {
  DrMode mode;
  DrTimingMode timing;
  const char *expect;
} PipelineCase;

static void test_pipelined(gconstpointer data) {
  const PipelineCase *c = data;
  static const char yaml[] =
      "dagrun: 1\n"
      "name: pipelined\n"
      "buffers:\n"
      "  a: {type: f32, count: 1Ki, init: iota}\n"
      "  b: {type: f32, count: 1Ki}\n"
      "  c: {type: f32, count: 1Ki}\n"
      "nodes:\n"
      "  s1: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: b}}\n"
      "  s2: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 3.0, y: c}}\n"
      "  s3: {op: kernel, kernel: add_f32, args: {a: b, b: c, y: b}}\n";
  g_autoptr(DrGraph) g = dr_fake_load_yaml("pipelined.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, c->mode, c->timing, 1, 3);
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  g_assert_cmpuint(r->iterations, ==, 3);
  for (guint i = 0; i < 3; i++) g_assert_false(isnan(r->iter_makespan_us[i]));
  for (guint i = 0; i < 3 * dr_graph_n_nodes(g); i++) g_assert_false(isnan(r->sample_end[i]));
  dr_report_free(r);
  g_autoptr(GString) order = g_string_new(NULL);
  const GArray *trace = dr_fake_trace();
  guint kernels = 0; /* streams mode: an iteration is three kernel launches */
  for (guint i = 0; i < trace->len; i++) {
    const char *name = g_array_index(trace, DrFakeCall, i).name;
    if (c->mode == DR_MODE_GRAPH ? strcmp(name, "cudaGraphLaunch") == 0
                                 : strcmp(name, "kernel_launch") == 0 && kernels++ % 3 == 0)
      g_string_append_c(order, 'I');
    if (strcmp(name, "cudaEventSynchronize") == 0) g_string_append_c(order, 'S');
  }
  g_assert_cmpstr(order->str, ==, c->expect);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  dr_fake_reset();
}

/* The measured high-water mark: every example with stream-ordered buffers,
 * in both modes on the fake runtime (which counts each allocation rounded
 * to 512 bytes, eagerly from cudaMallocAsync to cudaFreeAsync, in graph
 * mode as the graph's footprint in capture order), reports a measured peak
 * within the certified bound and at least the whole-run bytes plus the
 * largest lifetime. Eagerly the fake runs the issue order, one node at a
 * time: on the one-stream plan that is the serial peak exactly; and the
 * mark is reset before the first timed iteration (a pool that already held
 * a huge allocation from setup does not count it). Without the optional
 * table entries the report says "not measured". */
static void test_measured_high(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  const char *names[] = {"decoder_scratch", "scratch",       "transformer_block",
                         "pipeline",        "fanout_reduce", "priority"};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
    g_autoptr(DrGraph) g = load_example(names[k]);
    if (graph_uses_blas(g)) continue; /* the fake has no cuBLAS */
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_EVENTS, 1, 2);
    dr_fake_reset();
    dr_fake_set_move_data(FALSE);
    DrReport *r = dr_run(plan, &opts, &error);
    g_assert_no_error(error);
    g_test_message("%s: measured %" G_GUINT64_FORMAT ", serial %" G_GUINT64_FORMAT
                   ", bound %" G_GUINT64_FORMAT,
                   names[k], r->peak_measured_bytes, plan->peak_serial_bytes, plan->peak_bound_bytes);
    if (plan->peak_bound_bytes == 0) {
      g_assert_cmpuint(r->peak_measured_bytes, ==, G_MAXUINT64);
    } else {
      guint64 largest = 0;
      for (guint i = 0; i < plan->peak_bound->len; i++)
        largest = MAX(largest, g_array_index(plan->peak_bound, DrPlanLifetime, i).bytes);
      g_assert_cmpuint(r->peak_measured_bytes, !=, G_MAXUINT64);
      g_assert_cmpuint(r->peak_measured_bytes, <=, plan->peak_bound_bytes);
      g_assert_cmpuint(r->peak_measured_bytes, >=, plan->whole_run_bytes + largest);
      if (dr_plan_n_streams(plan) == 1) g_assert_cmpuint(r->peak_measured_bytes, ==, plan->peak_serial_bytes);
    }
    dr_report_free(r);
    g_assert_cmpstr(dr_fake_misuse(), ==, "");
    dr_fake_set_move_data(TRUE);
  }
  /* No query entry: not measured. */
  g_autoptr(DrGraph) g = load_example("decoder_scratch");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrCudaApi api = *dr_fake_api();
  api.cudaMemPoolGetAttribute = NULL;
  api.cudaDeviceGetGraphMemAttribute = NULL;
  const DrCudaApi *prev = dr_cuda_api_set(&api);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_EVENTS, 1, 1);
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->peak_measured_bytes, ==, G_MAXUINT64);
  dr_report_free(r);
  dr_cuda_api_set(prev);
  dr_fake_reset();
}

/* Reuse on the CUDA backend: scratch buffers placed in another's storage
 * point into it (one cudaMalloc per group: 4 whole-run allocations for 5
 * buffers), and close frees each group once (the fake reports a double
 * free as misuse), in both modes. */
static void test_reuse_aliases(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  static const char yaml[] =
      "dagrun: 1\n"
      "name: reuse\n"
      "memory: {reuse: auto}\n"
      "buffers:\n"
      "  x: {type: f32, count: 1024, init: iota}\n"
      "  y: {type: f32, count: 1024}\n"
      "  t0: {type: f32, count: 1024, scratch: true}\n"
      "  t1: {type: f32, count: 2048, scratch: true}\n"
      "  t2: {type: f32, count: 1024, scratch: true}\n"
      "nodes:\n"
      "  a: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: t0}}\n"
      "  b: {op: kernel, kernel: scale_f32, args: {x: t0, alpha: 3.0, y: y}}\n"
      "  c: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 4.0, y: \"t1[0:1024]\"}}\n"
      "  d: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 5.0, y: t2}}\n"
      "  e: {op: kernel, kernel: add_f32, args: {a: \"t1[0:1024]\", b: t2, y: x}}\n";
  g_autoptr(DrGraph) g = dr_fake_load_yaml("reuse.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->n_shared, ==, 1);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_EVENTS, 1, 2);
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  dr_report_free(r);
  guint mallocs = 0;
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++)
    mallocs += strcmp(g_array_index(trace, DrFakeCall, i).name, "cudaMalloc") == 0;
  g_assert_cmpuint(mallocs, >=, 4);
  guint big = 0; /* t0's storage holds t1: 8 KiB */
  for (guint i = 0; i < trace->len; i++) {
    const DrFakeCall *fc = &g_array_index(trace, DrFakeCall, i);
    big += strcmp(fc->name, "cudaMalloc") == 0 && fc->size == 8192;
  }
  g_assert_cmpuint(big, ==, 1);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  dr_fake_reset();
}

/* The reset: a pipeline whose warmup allocates more than its timed
 * iterations cannot be written, but a pool that setup left high can: the
 * fake's mark is raised by hand before the run and the eager report still
 * shows only what the timed iterations used. */
static void test_measured_reset(void) {
  g_autoptr(DrGraph) g = load_example("scratch");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_STREAMS, DR_TIMING_EVENTS, 1, 1);
  dr_fake_reset();
  /* An allocation outside the run, made and given back on a stream of the
   * fake's own: it raises the pool's mark. */
  const DrCudaApi *api = dr_fake_api();
  cudaStream_t st = NULL;
  void *p = NULL;
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, 0), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMallocAsync(&p, (size_t)1 << 30, st), ==, cudaSuccess);
  g_assert_cmpint(api->cudaFreeAsync(p, st), ==, cudaSuccess);
  g_assert_cmpint(api->cudaStreamDestroy(st), ==, cudaSuccess);
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->peak_measured_bytes, <=, plan->peak_bound_bytes);
  dr_report_free(r);
  dr_fake_reset();
}

/* The profiler's capture range (cudaProfilerStart/Stop: what `nsys
 * --capture-range=cudaProfilerApi` records) wraps exactly the timed
 * iterations: no warmup before it, all of them inside it, closed after the
 * last one drained the device, and --verify's reference run (which times
 * nothing) after it. Counted in the fake's trace: kernel launches (three
 * an iteration) eagerly, graph launches in graph mode. */
static void test_profiler_range(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  static const char yaml[] =
      "dagrun: 1\n"
      "name: profiler\n"
      "buffers:\n"
      "  a: {type: f32, count: 1Ki, init: iota}\n"
      "  b: {type: f32, count: 1Ki}\n"
      "  c: {type: f32, count: 1Ki}\n"
      "nodes:\n"
      "  s1: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: b}}\n"
      "  s2: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 3.0, y: c}}\n"
      "  s3: {op: kernel, kernel: add_f32, args: {a: b, b: c, y: b}}\n";
  enum { WARMUP = 2, ITERATIONS = 3 };
  g_autoptr(DrGraph) g = dr_fake_load_yaml("profiler.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_STAMPS, WARMUP, ITERATIONS);
  opts.verify = TRUE;
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->iterations, ==, ITERATIONS);
  dr_report_free(r);
  const char *work = mode == DR_MODE_GRAPH ? "cudaGraphLaunch" : "kernel_launch";
  guint per = mode == DR_MODE_GRAPH ? 1 : 3; /* work calls an iteration */
  guint starts = 0, stops = 0, before = 0, inside = 0, after = 0;
  const char *before_stop = NULL;
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++) {
    const char *name = g_array_index(trace, DrFakeCall, i).name;
    if (strcmp(name, "cudaProfilerStart") == 0) starts++;
    if (strcmp(name, "cudaProfilerStop") == 0) {
      stops++;
      before_stop = g_array_index(trace, DrFakeCall, i - 1).name;
    }
    if (strcmp(name, work) == 0) *(starts == 0 ? &before : stops == 0 ? &inside : &after) += 1;
  }
  g_assert_cmpuint(starts, ==, 1);
  g_assert_cmpuint(stops, ==, 1);
  g_assert_cmpuint(before, ==, WARMUP * per);
  g_assert_cmpuint(inside, ==, ITERATIONS * per);
  g_assert_cmpuint(after, ==, (WARMUP + ITERATIONS) * per);  /* the reference run */
  g_assert_cmpstr(before_stop, ==, "cudaDeviceSynchronize"); /* the drain */
  g_assert_false(dr_fake_profiling());
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  dr_fake_reset();
}

/* A library runner (dagrun.h) on the fake in each mode: the executable
 * graph is updated in place after a scalar changed (rebound in streams
 * mode), and then every fault point of that changed run, from the update
 * on, fails cleanly: an error naming CUDA, the runner still usable for
 * freeing, nothing leaked once it is freed. */
static void test_runner(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  guint64 total = 0;
  for (guint64 fail_at = 0;; fail_at++) {
    g_autoptr(GError) error = NULL;
    dr_fake_reset();
    g_autoptr(DrPipeline) p = dr_pipeline_new("runner");
    g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 256, DR_WHERE_DEVICE, &error));
    g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, 256, DR_WHERE_DEVICE, &error));
    DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
    g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    DrRunSettings rs;
    dr_run_settings_init(&rs, p);
    rs.backend = DR_BACKEND_CUDA;
    rs.mode = mode;
    rs.iterations = 2;
    rs.warmup = 1;
    DrRunner *r = dr_runner_new(plan, &rs, &error);
    g_assert_no_error(error);
    DrRunReport *rep = dr_runner_run(r, &error);
    g_assert_no_error(error);
    dr_run_report_free(rep);
    g_assert_true(dr_runner_set_float(r, "s", "alpha", 5.0, &error));
    guint64 before = dr_fake_points();
    gboolean failed_release = FALSE; /* the fake then keeps the object */
    if (fail_at > 0) dr_fake_arm(before + fail_at, DR_FAULT_LAUNCH);
    rep = dr_runner_run(r, &error);
    if (fail_at == 0) {
      g_assert_no_error(error);
      g_assert_nonnull(rep);
      g_assert_cmpstr(dr_runner_last_update(r), ==, mode == DR_MODE_GRAPH ? "updated" : "rebound");
      total = dr_fake_points() - before;
      dr_run_report_free(rep);
    } else if (rep != NULL) {
      /* Only a failed release (a destroy, whose error has nothing to
       * undo) may leave the run whole. */
      const DrFakeCall *fc = dr_fake_faulted_call();
      g_assert_nonnull(fc);
      if (!fc->release) g_error("fault point %" G_GUINT64_FORMAT " (%s) was not reported", fail_at, fc->name);
      failed_release = TRUE;
      dr_run_report_free(rep);
    } else {
      g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
      g_assert_nonnull(strstr(error->message, "cudaErrorLaunchFailure"));
    }
    dr_runner_free(r);
    if (!failed_release) g_assert_cmpuint(dr_fake_live_total(), ==, 0);
    g_assert_cmpstr(dr_fake_misuse(), ==, "");
    if (fail_at == total) break;
  }
  g_assert_cmpuint(total, >, 3);
  dr_fake_reset();
}

/* Programmatic dependent launch is asked for exactly where nothing but
 * the previous built-in kernel precedes a launch on its stream: eagerly,
 * without timing events. Two chains of three kernels, the second chain's
 * head b1 waiting on the first chain's head a1 (a cross-stream wait): PDL
 * for a3, b2 and b3 (3). Not for the heads (first on their streams; b1
 * also waits on a1), and not for a2, since a1 records the event b1 waits
 * on between them. None with events, or with DAGRUN_PDL=0. Graph mode
 * (the capture's launches) asks for the same launches, in the same
 * places, by default (GRAPH_PDL_DEFAULT in backends/cuda/graph.c: change
 * this expectation with it) and with DAGRUN_GRAPH_PDL=1, with stamps aside
 * or no timing; none with DAGRUN_GRAPH_PDL=0, with events, with inline
 * stamps (DAGRUN_STAMPS_INLINE=1: a stamp kernel between) or with
 * DAGRUN_PDL=0. */
typedef struct {
  DrMode mode;
  DrTimingMode timing;
  const char *env;       /* DAGRUN_PDL, or NULL */
  const char *graph_env; /* DAGRUN_GRAPH_PDL, or NULL */
  gboolean stamps_inline;
  guint expect;
} PdlCase;

static const char pdl_yaml[] =
    "dagrun: 1\n"
    "name: pdl\n"
    "buffers:\n"
    "  a: {type: f32, count: 1Ki, init: iota}\n"
    "  b: {type: f32, count: 1Ki}\n"
    "nodes:\n"
    "  a1: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: a}}\n"
    "  a2: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: a}}\n"
    "  a3: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: a}}\n"
    "  b1: {op: kernel, kernel: spin, args: {ns: 10}, after: [a1]}\n"
    "  b2: {op: kernel, kernel: fill_f32, args: {y: b, value: 1.0}, after: [b1]}\n"
    "  b3: {op: kernel, kernel: scale_f32, args: {x: b, alpha: 3.0, y: b}}\n";

/* One run of `plan` as `c` says, with its environment set and then unset;
 * the fake's counters stay for the caller. */
static void pdl_run(const DrPlan *plan, const DrGraph *g, const PdlCase *c) {
  g_autoptr(GError) error = NULL;
  DrRunOptions opts = dr_fake_run_options(g, c->mode, c->timing, 0, 1);
  if (c->env) g_setenv("DAGRUN_PDL", c->env, TRUE);
  if (c->graph_env) g_setenv("DAGRUN_GRAPH_PDL", c->graph_env, TRUE);
  if (c->stamps_inline) g_setenv("DAGRUN_STAMPS_INLINE", "1", TRUE);
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_unsetenv("DAGRUN_PDL");
  g_unsetenv("DAGRUN_GRAPH_PDL");
  g_unsetenv("DAGRUN_STAMPS_INLINE");
  g_assert_no_error(error);
  dr_report_free(r);
  g_assert_cmpuint(dr_fake_kernel_launches(), >=, 6);
}

static void test_pdl(gconstpointer data) {
  const PdlCase *c = data;
  g_autoptr(DrGraph) g = dr_fake_load_yaml("pdl.yaml", pdl_yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_plan_n_streams(plan), ==, 2);
  /* Where eager mode asks for PDL, launch by launch. */
  static const PdlCase eager = {DR_MODE_STREAMS, DR_TIMING_OFF, NULL, NULL, FALSE, 3};
  pdl_run(plan, g, &eager);
  g_autofree char *eager_pattern = g_strdup(dr_fake_pdl_pattern());
  g_assert_cmpuint(dr_fake_pdl_launches(), ==, 3);
  pdl_run(plan, g, c);
  g_assert_cmpuint(dr_fake_pdl_launches(), ==, c->expect);
  /* The capture issues the iteration's launches in the same order as an
   * eager iteration: where it asks for PDL, the pattern is eager mode's. */
  if (c->expect > 0) g_assert_cmpstr(dr_fake_pdl_pattern(), ==, eager_pattern);
  /* Eagerly, the stream of b1 needs no fork wait (b1 waits on a1, after
   * the fork): the waits are b1's on a1, one fork wait and the two joins. */
  if (c->mode == DR_MODE_STREAMS) {
    guint waits = 0;
    const GArray *trace = dr_fake_trace();
    for (guint i = 0; i < trace->len; i++)
      waits += strcmp(g_array_index(trace, DrFakeCall, i).name, "cudaStreamWaitEvent") == 0;
    g_assert_cmpuint(waits, ==, 4);
  }
  dr_fake_reset();
}

/* Graph mode instantiates with cudaGraphInstantiateFlagUseNodePriority
 * exactly when DAGRUN_GRAPH_PRIORITY=1 (off by default: the probe of
 * issue #18 launched a fan-out of mixed priorities slower with it), also
 * after a whole-graph update that re-instantiates. data: the value of
 * DAGRUN_GRAPH_PRIORITY, or NULL. */
static void test_graph_priority(gconstpointer data) {
  const char *env = data;
  g_autoptr(DrGraph) g = dr_fake_load_yaml("pdl.yaml", pdl_yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_STAMPS, 0, 1);
  if (env) g_setenv("DAGRUN_GRAPH_PRIORITY", env, TRUE);
  dr_fake_reset();
  DrReport *r = dr_run(plan, &opts, &error);
  g_unsetenv("DAGRUN_GRAPH_PRIORITY");
  g_assert_no_error(error);
  dr_report_free(r);
  unsigned long long want = env && strcmp(env, "1") == 0 ? cudaGraphInstantiateFlagUseNodePriority : 0;
  g_assert_cmpuint(dr_fake_instantiate_flags(), ==, want);
  dr_fake_reset();
}

/* A pipeline with a user kernel (`ptx:`, loaded with cudaLibraryLoadData,
 * launched with cudaLaunchKernel) beside a built-in: the library calls'
 * failure paths and the libraries' live count. */
static void test_user_kernel(gconstpointer data) {
  const Case *c = data;
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *ptx = g_build_filename(tmp, "fault-touch.ptx", NULL);
  g_assert_true(g_file_set_contents(ptx, "// the fake runtime does not read PTX\n", -1, NULL));
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\n"
      "name: user-kernel\n"
      "kernels:\n"
      "  touch:\n"
      "    ptx: '%s'\n"
      "    params:\n"
      "      - {name: buf, type: f32*, access: readwrite}\n"
      "      - {name: n, type: i64}\n"
      "    grid: {over: n, block: 128}\n"
      "buffers:\n"
      "  a: {type: f32, count: 4Ki, init: iota}\n"
      "  b: {type: f32, count: 4Ki}\n"
      "nodes:\n"
      "  t0: {op: kernel, kernel: touch, args: {buf: 'a[0:2Ki]', n: 2048}}\n"
      "  t1: {op: kernel, kernel: touch, args: {buf: 'a[2Ki:4Ki]', n: 2048}}\n"
      "  s:  {op: kernel, kernel: scale_f32, args: {x: a, alpha: 3.0, y: b}}\n",
      ptx);
  DrGraph *g = dr_fake_load_yaml("user-kernel.yaml", yaml);
  g_autoptr(Subject) s = subject_new("user-kernel", g, c->mode, c->timing);
  /* The run loaded the library and launched it twice. */
  guint loads = 0, launches = 0;
  for (guint i = 0; i < s->names->len; i++) {
    loads += strcmp(s->names->pdata[i], "cudaLibraryLoadData") == 0;
    launches += strcmp(s->names->pdata[i], "cudaLaunchKernel") == 0;
  }
  g_assert_cmpuint(loads, ==, 1);
  g_assert_cmpuint(launches, >=, 2);
  sweep(s, c->fault);
}

/* The fake moves real data: the `save:` pipeline on the fake's streams
 * mode with the kernels' host twins writes the same bytes as the host
 * backend. */
static void test_fake_data(void) {
  g_autofree char *dev_path = NULL, *host_path = NULL;
  g_autoptr(DrGraph) g = save_graph(&dev_path, &host_path);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.iterations = 1;
  opts.warmup = 0;
  opts.host_output = devnull;
  char *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL};
  gsize want_len[2], got_len[2];
  const char *paths[2] = {dev_path, host_path};
  for (int pass = 0; pass < 2; pass++) {
    opts.backend = pass ? DR_BACKEND_CUDA : DR_BACKEND_HOST;
    dr_fake_reset();
    dr_fake_set_run_twins(pass == 1);
    g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
    dr_fake_set_run_twins(FALSE);
    g_assert_no_error(error);
    g_assert_nonnull(r);
    g_assert_cmpstr(r->backend, ==, pass ? "cuda" : "host");
    for (int f = 0; f < 2; f++) {
      g_assert_true(
          g_file_get_contents(paths[f], pass ? &got[f] : &want[f], pass ? &got_len[f] : &want_len[f], NULL));
      g_unlink(paths[f]);
    }
  }
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  for (int f = 0; f < 2; f++) {
    g_assert_cmpuint(got_len[f], ==, 4096);
    g_assert_cmpmem(got[f], got_len[f], want[f], want_len[f]);
    g_assert_cmpfloat(((float *)got[f])[3], ==, 6.0f); /* 2 * iota */
    g_free(got[f]);
    g_free(want[f]);
  }
}

/* The bytes of buffer `out` (a host buffer with save: PATH) after running
 * `plan` on `backend` in `mode`, through the fake with the twins running. */
static char *loop_run(const DrPlan *plan, const DrGraph *g, DrBackendKind backend, DrMode mode,
                      const char *path, gsize *len) {
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_AUTO, 1, 2);
  opts.backend = backend;
  return dr_fake_run_saved(plan, &opts, FALSE, path, len, NULL);
}

/* Loops on the CUDA backend, on the fake with the twins running: streams
 * mode runs repeat, while (the condition read back per trip) and if/else
 * host-driven and leaves the bytes the host backend leaves; graph mode
 * captures repeat unrolled (the fake replays no graph: the launches
 * captured are checked). Graph mode on a table without conditional-node
 * entries refuses while and if, and run.device_loop, before any call but
 * the device query. */
static void test_fake_loops(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "fault-loops.bin", NULL);
  const char *repeat =
      "    op: loop\n    repeat: 3\n    nodes:\n"
      "      dbl: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: x}}\n"
      "      inner:\n        op: loop\n        repeat: 2\n        nodes:\n"
      "          acc: {op: kernel, kernel: axpy_f32, args: {alpha: 0.5, x: x, y: s}}\n";
  const char *cond =
      "    op: loop\n    while: go\n    nodes:\n"
      "      half: {op: kernel, kernel: scale_f32, args: {x: \"x[0:1]\", alpha: 0.5, y: \"x[0:1]\"}}\n"
      "      count: {op: kernel, kernel: add_f32, args: {a: \"s[0:1]\", b: one, y: \"s[0:1]\"}}\n"
      "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 0.01, cond: go}}\n"
      "  pick:\n    op: if\n    if: go\n    nodes:\n"
      "      yes: {op: memset, dst: \"s[4:8]\", value: 1}\n    else:\n"
      "      no: {op: memset, dst: \"s[4:8]\", value: 2}\n";
  for (int c = 0; c < 2; c++) {
    g_autofree char *yaml = g_strdup_printf(
        "dagrun: 1\nbuffers:\n  x: {type: f32, count: 64, init: iota}\n  s: {type: f32, count: 64}\n"
        "  one: {type: f32, count: 1}\n  go: {type: i32, count: 1}\n"
        "  out: {type: f32, count: 64, where: host, save: '%s'}\n"
        "nodes:\n  init: {op: kernel, kernel: fill_f32, args: {y: one, value: 1.0}}\n"
        "  first: {op: kernel, kernel: fill_f32, args: {y: \"x[0:1]\", value: 5.0}}\n"
        "  l:\n%s  down: {op: copy, src: s, dst: out}\n",
        path, c == 0 ? repeat : cond);
    g_autoptr(DrGraph) g = dr_fake_load_yaml("loop.yaml", yaml);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    gsize want_len, got_len;
    g_autofree char *want = loop_run(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len);
    g_autofree char *got = loop_run(plan, g, DR_BACKEND_CUDA, DR_MODE_STREAMS, path, &got_len);
    g_assert_cmpmem(got, got_len, want, want_len);
    if (c == 1) {
      /* 5 -> 2.5 -> ... -> 0.0098: 9 trips per iteration, 3 iterations */
      g_assert_cmpfloat(((float *)got)[0], ==, 27.0f);
      g_assert_cmphex(((guint32 *)got)[4], ==, 0x02020202u); /* the else body's memset */
    }
    if (c == 0) {
      /* The fake replays no graph: what the capture recorded is what
       * counts, the body unrolled, 3 x (dbl + 2 x acc), after init and
       * first. */
      g_autofree char *graph = loop_run(plan, g, DR_BACKEND_CUDA, DR_MODE_GRAPH, path, &got_len);
      g_assert_cmpuint(dr_fake_kernel_launches(), ==, 2 + 3 * (1 + 2));
      continue;
    }
    DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, 0, 1);
    dr_fake_reset();
    g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
    g_assert_null(r);
    g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
    /* dr_fake_api has no conditional-node entries (a CUDA before 12.4);
     * tests/fault/condgraph_test.c runs the table that has them. */
    g_assert_nonnull(strstr(error->message,
                            "loop.yaml:11:3: node 'l': graph mode builds while: as a CUDA conditional node"));
    const GArray *trace = dr_fake_trace();
    for (guint i = 0; i < trace->len; i++)
      g_assert_cmpstr(g_array_index(trace, DrFakeCall, i).name, ==, "cudaGetDeviceCount");
  }
  g_autoptr(DrGraph) d =
      dr_fake_load_yaml("dl.yaml",
                        "dagrun: 1\nrun: {device_loop: true}\nbuffers:\n  x: {type: f32, count: 8}\n"
                        "nodes:\n  s: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: x}}\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(d, NULL, &error);
  DrRunOptions opts = dr_fake_run_options(d, DR_MODE_GRAPH, DR_TIMING_AUTO, 0, 1);
  dr_fake_reset();
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_nonnull(strstr(error->message, "dl.yaml:2:20: run.device_loop"));
}

/* where: pageable on the fake: streams mode copies from and to malloc'd
 * memory (no cudaMallocHost for it, nothing leaked) and leaves the host
 * backend's bytes; graph mode refuses the first pageable copy by name,
 * before any call but the device query. */
static void test_fake_pageable(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "fault-pageable.bin", NULL);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\nbuffers:\n  hp: {type: f32, count: 256, where: pageable, init: iota}\n"
      "  d: {type: f32, count: 256}\n  out: {type: f32, count: 256, where: pageable, save: '%s'}\n"
      "nodes:\n  up: {op: copy, src: hp, dst: d}\n"
      "  k: {op: kernel, kernel: scale_f32, args: {x: d, alpha: 2.0, y: d}}\n"
      "  down: {op: copy, src: d, dst: out}\n",
      path);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("pageable.yaml", yaml);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  gsize want_len, got_len;
  g_autofree char *want = loop_run(plan, g, DR_BACKEND_HOST, DR_MODE_STREAMS, path, &want_len);
  g_autofree char *got = loop_run(plan, g, DR_BACKEND_CUDA, DR_MODE_STREAMS, path, &got_len);
  g_assert_cmpmem(got, got_len, want, want_len);
  g_assert_cmpfloat(((float *)got)[3], ==, 6.0f);
  const GArray *trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++)
    g_assert_cmpstr(g_array_index(trace, DrFakeCall, i).name, !=, "cudaMallocHost");
  DrRunOptions opts = dr_fake_run_options(g, DR_MODE_GRAPH, DR_TIMING_AUTO, 0, 1);
  dr_fake_reset();
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_nonnull(strstr(error->message,
                          "pageable.yaml:7:3: node 'up': graph mode does not capture a copy of pageable host "
                          "memory (buffer 'hp' is where: pageable)"));
  trace = dr_fake_trace();
  for (guint i = 0; i < trace->len; i++)
    g_assert_cmpstr(g_array_index(trace, DrFakeCall, i).name, ==, "cudaGetDeviceCount");
}

/* Several lifetimes of one stream-ordered buffer on the fake: every alloc
 * node makes its own cudaMallocAsync and every free its cudaFreeAsync, each
 * kernel and copy of a lifetime gets that lifetime's pointer (the twins
 * then write what the host backend writes), and nothing is left live. */
static void test_fake_lifetimes(void) {
  const char *tmp = g_getenv("TEST_TMPDIR");
  if (tmp == NULL) tmp = g_get_tmp_dir();
  g_autofree char *path = g_build_filename(tmp, "fault-lifetimes-out.bin", NULL);
  GString *yaml = g_string_new(NULL);
  g_string_append_printf(yaml,
                         "dagrun: 1\nname: lifetimes\nbuffers:\n"
                         "  x:   {type: f32, count: 256, init: iota}\n"
                         "  t:   {type: f32, count: 256}\n"
                         "  out: {type: f32, count: 768, save: '%s'}\n"
                         "nodes:\n",
                         path);
  for (guint k = 0; k < 3; k++)
    g_string_append_printf(yaml,
                           "  a%u: {op: alloc, buffer: t}\n"
                           "  s%u: {op: kernel, kernel: scale_f32, args: {x: x, alpha: %u.0, y: t}}\n"
                           "  c%u: {op: copy, src: t, dst: \"out[%u:%u]\"}\n"
                           "  f%u: {op: free, buffer: t}\n",
                           k, k, k + 1, k, k * 256, (k + 1) * 256, k);
  g_autofree char *text = g_string_free(yaml, FALSE);
  g_autoptr(DrGraph) g = dr_fake_load_yaml("lifetimes.yaml", text);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.iterations = 1;
  opts.warmup = 0;
  opts.host_output = devnull;
  g_autofree char *want = NULL, *got = NULL;
  gsize want_len = 0, got_len = 0;
  for (int pass = 0; pass < 2; pass++) {
    opts.backend = pass ? DR_BACKEND_CUDA : DR_BACKEND_HOST;
    dr_fake_reset();
    dr_fake_set_run_twins(pass == 1);
    g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
    dr_fake_set_run_twins(FALSE);
    g_assert_no_error(error);
    g_assert_nonnull(r);
    g_assert_true(g_file_get_contents(path, pass ? &got : &want, pass ? &got_len : &want_len, NULL));
    g_unlink(path);
    if (pass == 0) continue;
    guint mallocs = 0, frees = 0;
    const GArray *trace = dr_fake_trace();
    for (guint i = 0; i < trace->len; i++) {
      const DrFakeCall *call = &g_array_index(trace, DrFakeCall, i);
      mallocs += strcmp(call->name, "cudaMallocAsync") == 0;
      frees += strcmp(call->name, "cudaFreeAsync") == 0;
    }
    g_assert_cmpuint(mallocs, ==, 3);
    g_assert_cmpuint(frees, ==, 3);
  }
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpuint(got_len, ==, 768 * sizeof(float));
  g_assert_cmpmem(got, got_len, want, want_len);
  for (guint k = 0; k < 3; k++) g_assert_cmpfloat(((float *)got)[k * 256 + 5], ==, 5.0f * (float)(k + 1));
}

/* The fake's own detectors fire: a leak shows in the live counts, a
 * released handle used again is a misuse, the armed fault fails exactly
 * the Nth point and has no effect, a sticky fault fails everything after
 * it (releases still release) and cudaGetLastError cannot clear it, and
 * a non-release call after it is listed. */
static void test_fake_detectors(void) {
  const DrCudaApi *api = dr_fake_api();
  cudaStream_t st = NULL, st2 = NULL;
  cudaEvent_t ev = NULL;
  void *p = NULL;
  dr_fake_reset();
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st, cudaStreamNonBlocking, 0), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMalloc(&p, 64), ==, cudaSuccess);
  g_assert_cmpuint(dr_fake_live(DR_FAKE_STREAM), ==, 1);
  g_assert_cmpuint(dr_fake_live(DR_FAKE_DEVICE_MEM), ==, 1);
  g_assert_cmpint(api->cudaMemsetAsync(p, 7, 64, st), ==, cudaSuccess);
  g_assert_cmpint(((guint8 *)p)[63], ==, 7);
  g_assert_cmpint(api->cudaMemsetAsync(p, 7, 65, st), ==, cudaErrorInvalidValue); /* past the end */
  g_assert_cmpint(api->cudaFree(p), ==, cudaSuccess);
  g_assert_cmpint(api->cudaStreamDestroy(st), ==, cudaSuccess);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpint(api->cudaStreamSynchronize(st), ==, cudaErrorInvalidResourceHandle);      /* released */
  g_assert_cmpint(api->cudaMemsetAsync(p, 0, 1, NULL), ==, cudaErrorInvalidResourceHandle); /* legacy */
  g_assert_nonnull(strstr(dr_fake_misuse(), "past the end"));
  g_assert_nonnull(strstr(dr_fake_misuse(), "not a live stream"));
  g_assert_nonnull(strstr(dr_fake_misuse(), "legacy"));

  /* Point 2 fails with no effect; the error is sticky only when asked. */
  dr_fake_reset();
  dr_fake_arm(2, DR_FAULT_OOM);
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st, 0, 0), ==, cudaSuccess);
  g_assert_cmpint(api->cudaEventCreateWithFlags(&ev, 0), ==, cudaErrorMemoryAllocation);
  g_assert_cmpuint(dr_fake_live(DR_FAKE_EVENT), ==, 0);
  g_assert_cmpint(dr_fake_fault_index(), ==, 1);
  g_assert_cmpint(api->cudaGetLastError(), ==, cudaErrorMemoryAllocation);
  g_assert_cmpint(api->cudaGetLastError(), ==, cudaSuccess);
  g_assert_cmpint(api->cudaStreamSynchronize(st), ==, cudaSuccess);
  g_assert_cmpuint(dr_fake_points(), ==, 3);
  g_assert_cmpstr(api->cudaGetErrorName(cudaErrorMemoryAllocation), ==, "cudaErrorMemoryAllocation");
  g_assert_cmpstr(api->cudaGetErrorString(cudaErrorMemoryAllocation), ==, "out of memory");

  dr_fake_reset();
  g_assert_cmpuint(dr_fake_live_total(), ==, 0); /* the reset released the stream */
  dr_fake_arm(2, DR_FAULT_ILLEGAL);
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st, 0, 0), ==, cudaSuccess);
  g_assert_cmpint(api->cudaMalloc(&p, 8), ==, cudaErrorIllegalAddress);
  g_assert_cmpint(api->cudaStreamCreateWithPriority(&st2, 0, 0), ==, cudaErrorIllegalAddress);
  g_assert_cmpuint(dr_fake_live(DR_FAKE_STREAM), ==, 1);
  g_assert_cmpint(api->cudaStreamDestroy(st), ==, cudaErrorIllegalAddress);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpint(api->cudaGetLastError(), ==, cudaErrorIllegalAddress);
  g_assert_cmpint(api->cudaGetLastError(), ==, cudaErrorIllegalAddress);
  g_assert_cmpint(api->cudaDeviceSynchronize(), ==, cudaErrorIllegalAddress);
  g_assert_cmpstr(dr_fake_after_sticky(), ==, "cudaStreamCreateWithPriority\n");
  dr_fake_reset();
}

static void test_summary(void) {
  g_test_message("fault points passed: streams mode %" G_GUINT64_FORMAT ", graph mode %" G_GUINT64_FORMAT
                 " (rejected releases left to the fake: %" G_GUINT64_FORMAT ")",
                 passed_by_mode[0], passed_by_mode[1], rejected_releases);
  g_test_message("per sweep:\n%s", summary->str);
  g_print("# streams mode: %" G_GUINT64_FORMAT " fault points passed\n# graph mode: %" G_GUINT64_FORMAT
          " fault points passed\n",
          passed_by_mode[0], passed_by_mode[1]);
}

static gint cmp_str(gconstpointer a, gconstpointer b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* One failing sweep must not hide the others' results. */
  g_test_set_nonfatal_assertions();
  devnull = fopen("/dev/null", "w");
  g_assert_nonnull(devnull);
  summary = g_string_new(NULL);
  dr_cuda_api_set(dr_fake_api());

  /* Bazel runs tests from the runfiles root, where graphs/ is. */
  const char *srcdir = g_getenv("TEST_SRCDIR");
  if (!g_file_test("graphs", G_FILE_TEST_IS_DIR) && srcdir) {
    g_autofree char *root = g_build_filename(srcdir, "dagrun", NULL);
    g_assert_cmpint(g_chdir(root), ==, 0);
  }
  g_autoptr(GDir) dir = g_dir_open("graphs", 0, NULL);
  g_assert_nonnull(dir);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *f;
  while ((f = g_dir_read_name(dir)) != NULL) {
    if (!g_str_has_suffix(f, ".yaml")) continue;
    g_autofree char *name = g_strndup(f, strlen(f) - 5);
    /* Examples on several devices (the CUDA backend refuses them, exit 69)
     * and with collectives (NCCL's table has its own fake and sweep:
     * tests/backends, /backends/cuda-fake/nccl) are not this table's. */
    g_autoptr(DrGraph) g = load_example(name);
    gboolean collectives = FALSE;
    for (DrId i = 0; i < dr_graph_n_nodes(g); i++)
      collectives |= DR_OP_IS_COLLECTIVE(dr_graph_node(g, i)->op);
    if (g->run.n_devices > 1 || collectives) continue;
    g_ptr_array_add(names, g_steal_pointer(&name));
  }
  g_ptr_array_sort(names, cmp_str);
  g_assert_cmpuint(names->len, >, 0);

  g_test_add_func("/fault/fake/detectors", test_fake_detectors);
  for (int m = 0; m < 2; m++)
    for (int k = 0; k < DR_N_FAULTS; k++) {
      Case *c = g_new0(Case, 1);
      c->name = "user-kernel";
      c->mode = m ? DR_MODE_GRAPH : DR_MODE_STREAMS;
      c->timing = DR_TIMING_STAMPS;
      c->fault = (DrFault)k;
      g_autofree char *path =
          g_strdup_printf("/fault/user-kernel/%s/%s", dr_mode_name(c->mode), dr_fault_name(c->fault));
      g_test_add_data_func_full(path, c, test_user_kernel, g_free);
    }
  g_test_add_func("/fault/fake/data", test_fake_data);
  g_test_add_func("/fault/fake/lifetimes", test_fake_lifetimes);
  g_test_add_func("/fault/fake/loops", test_fake_loops);
  g_test_add_func("/fault/fake/pageable", test_fake_pageable);
  static const PdlCase pdl[] = {
      {DR_MODE_STREAMS, DR_TIMING_OFF, NULL, NULL, FALSE, 3},
      {DR_MODE_STREAMS, DR_TIMING_STAMPS, NULL, NULL, FALSE, 3},
      {DR_MODE_STREAMS, DR_TIMING_AUTO, NULL, NULL, FALSE, 3},
      {DR_MODE_STREAMS, DR_TIMING_EVENTS, NULL, NULL, FALSE, 0},
      {DR_MODE_STREAMS, DR_TIMING_OFF, "0", NULL, FALSE, 0},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, NULL, NULL, FALSE, 3},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, NULL, "0", FALSE, 0},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, NULL, "1", FALSE, 3},
      {DR_MODE_GRAPH, DR_TIMING_OFF, NULL, "1", FALSE, 3},
      {DR_MODE_GRAPH, DR_TIMING_AUTO, NULL, "1", FALSE, 3},
      {DR_MODE_GRAPH, DR_TIMING_EVENTS, NULL, "1", FALSE, 0},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, NULL, "1", TRUE, 0},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, "0", "1", FALSE, 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(pdl); i++) {
    g_autofree char *path = g_strdup_printf(
        "/fault/fake/pdl/%s/%s%s%s%s%s", dr_mode_name(pdl[i].mode), dr_timing_mode_name(pdl[i].timing),
        pdl[i].env ? "/DAGRUN_PDL=0" : "", pdl[i].graph_env ? "/DAGRUN_GRAPH_PDL=" : "",
        pdl[i].graph_env ? pdl[i].graph_env : "", pdl[i].stamps_inline ? "/DAGRUN_STAMPS_INLINE=1" : "");
    g_test_add_data_func(path, &pdl[i], test_pdl);
  }
  g_test_add_data_func("/fault/fake/graph-priority/default", NULL, test_graph_priority);
  g_test_add_data_func("/fault/fake/graph-priority/0", "0", test_graph_priority);
  g_test_add_data_func("/fault/fake/graph-priority/1", "1", test_graph_priority);
  g_test_add_data_func("/fault/fake/profiler-range/streams", GINT_TO_POINTER(DR_MODE_STREAMS),
                       test_profiler_range);
  g_test_add_data_func("/fault/fake/profiler-range/graph", GINT_TO_POINTER(DR_MODE_GRAPH),
                       test_profiler_range);
  g_test_add_data_func("/fault/fake/measured-high/streams", GINT_TO_POINTER(DR_MODE_STREAMS),
                       test_measured_high);
  g_test_add_data_func("/fault/fake/measured-high/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_measured_high);
  g_test_add_func("/fault/fake/measured-high/reset", test_measured_reset);
  g_test_add_data_func("/fault/fake/reuse/streams", GINT_TO_POINTER(DR_MODE_STREAMS), test_reuse_aliases);
  g_test_add_data_func("/fault/fake/reuse/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_reuse_aliases);
  g_test_add_data_func("/fault/fake/runner/streams", GINT_TO_POINTER(DR_MODE_STREAMS), test_runner);
  g_test_add_data_func("/fault/fake/runner/graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_runner);
  static const PipelineCase pipelined[] = {
      {DR_MODE_STREAMS, DR_TIMING_EVENTS, "IISISISS"},
      {DR_MODE_STREAMS, DR_TIMING_STAMPS, "IISISISS"},
      {DR_MODE_GRAPH, DR_TIMING_STAMPS, "ISISISIS"},
      {DR_MODE_GRAPH, DR_TIMING_EVENTS, "ISISISIS"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(pipelined); i++) {
    g_autofree char *path = g_strdup_printf("/fault/fake/pipelined/%s/%s", dr_mode_name(pipelined[i].mode),
                                            dr_timing_mode_name(pipelined[i].timing));
    g_test_add_data_func(path, &pipelined[i], test_pipelined);
  }
  /* Every timing mode the CUDA backend has: each makes different calls. */
  static const DrTimingMode timings[] = {DR_TIMING_STAMPS, DR_TIMING_EVENTS, DR_TIMING_OFF};
  for (guint i = 0; i < names->len; i++)
    for (int m = 0; m < 2; m++)
      for (guint t = 0; t < G_N_ELEMENTS(timings); t++)
        for (int k = -1; k < DR_N_FAULTS; k++) {
          Case *c = g_new0(Case, 1);
          c->name = names->pdata[i];
          c->mode = m ? DR_MODE_GRAPH : DR_MODE_STREAMS;
          c->timing = timings[t];
          c->fault = k < 0 ? DR_N_FAULTS : (DrFault)k;
          g_autofree char *path =
              g_strdup_printf("/fault/%s/%s/%s/%s", c->name, dr_mode_name(c->mode),
                              dr_timing_mode_name(c->timing), k < 0 ? "fault-free" : dr_fault_name(c->fault));
          g_test_add_data_func_full(path, c, k < 0 ? test_fault_free : test_sweep, g_free);
        }
  for (int v = 0; v < 2; v++)
    for (int m = 0; m < 2; m++)
      for (int k = 0; k < DR_N_FAULTS; k++) {
        Case *c = g_new0(Case, 1);
        c->name = "save";
        c->verify = v;
        c->mode = m ? DR_MODE_GRAPH : DR_MODE_STREAMS;
        c->timing = DR_TIMING_STAMPS;
        c->fault = (DrFault)k;
        g_autofree char *path = g_strdup_printf("/fault/%s/%s/%s", v ? "save+verify" : "save",
                                                dr_mode_name(c->mode), dr_fault_name(c->fault));
        g_test_add_data_func_full(path, c, test_save, g_free);
      }
  for (int m = 0; m < 2; m++) {
    Case *c = g_new0(Case, 1);
    c->name = "save";
    c->mode = m ? DR_MODE_GRAPH : DR_MODE_STREAMS;
    g_autofree char *path = g_strdup_printf("/fault/sync-reported/%s", dr_mode_name(c->mode));
    g_test_add_data_func_full(path, c, test_sync_fault_reported, g_free);
  }
  /* Last: GLib runs a suite's own cases before its child suites. */
  g_test_add_func("/fault/~summary/totals", test_summary);
  return g_test_run();
}
