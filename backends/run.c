/* run.c: dr_run, the driver every backend shares: choose the backend, run
 * warmup and timed iterations (with a progress bar when asked), gather
 * per-node samples into the report with its critical path, for --verify
 * run the serial plan the same way and compare, write the trace and the
 * timeline, and save buffers last, once everything else succeeded. The
 * backends themselves live in host.c, cuda.c, cuda_graph.c; the report's
 * renderings in report.c and timeline.c. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/verify.h"

DR_DEFINE_NAME_TABLE(DrBackendKind, DR_BACKEND_LIST, backend, DR_N_BACKENDS, dr_backend_kind_name,
                     dr_backend_kind_from_name)

const char *dr_mode_name(DrMode mode) { return mode == DR_MODE_GRAPH ? "graph" : "streams"; }

gboolean dr_mode_from_name(const char *name, DrMode *out) {
  if (strcmp(name, "streams") == 0)
    *out = DR_MODE_STREAMS;
  else if (strcmp(name, "graph") == 0)
    *out = DR_MODE_GRAPH;
  else
    return FALSE;
  return TRUE;
}

DR_DEFINE_NAME_TABLE(DrTimingMode, DR_TIMING_LIST, timing, DR_N_TIMINGS, dr_timing_mode_name,
                     dr_timing_mode_from_name)

void dr_run_options_init(DrRunOptions *opts, const DrGraph *graph) {
  memset(opts, 0, sizeof *opts);
  opts->backend = DR_BACKEND_AUTO;
  opts->mode = graph->run.mode;
  opts->iterations = graph->run.iterations;
  opts->warmup = graph->run.warmup;
  opts->device = graph->run.device;
  opts->graph_fallback = graph->run.fallback_streams;
  opts->node_timing = DR_TIMING_AUTO;
}

void dr_report_free(DrReport *r) {
  if (r == NULL) return;
  g_free(r->name);
  g_free(r->diff_buffer);
  g_free(r->diff_serial);
  g_free(r->diff_concurrent);
  if (r->nodes) g_array_unref(r->nodes);
  g_free(r->sample_start);
  g_free(r->sample_end);
  g_free(r->iter_start_us);
  g_free(r->iter_makespan_us);
  if (r->stream_priorities) g_array_unref(r->stream_priorities);
  if (r->flows) g_array_unref(r->flows);
  if (r->critical_nodes) g_array_unref(r->critical_nodes);
  g_free(r);
}

gboolean dr_report_check_verified(const DrReport *r, GError **error) {
  if (r->verified != DR_VERIFIED_FAIL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_VERIFY,
              "verify: buffer '%s' differs from the serial run at element %" G_GUINT64_FORMAT
              ": serial %s, concurrent %s",
              r->diff_buffer, r->diff_index, r->diff_serial, r->diff_concurrent);
  return FALSE;
}

/* ---- statistics ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median, min and max of the non-NaN values; NAN when there are none. */
static void stats(const double *v, guint n, double *median, double *min, double *max) {
  g_autofree double *s = g_new(double, MAX(n, 1));
  guint k = 0;
  for (guint i = 0; i < n; i++)
    if (!isnan(v[i])) s[k++] = v[i];
  if (k == 0) {
    *median = *min = *max = NAN;
    return;
  }
  qsort(s, k, sizeof(double), cmp_double);
  *median = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
  if (min) *min = s[0];
  if (max) *max = s[k - 1];
}

/* The longest path of the DAG weighted by median node durations (an
 * unmeasured node weighs 0), over the graph's dependency edges, by dynamic
 * programming in a topological order (Kahn's, ties in plan order). O(V +
 * E). Fills critical_path_us and critical_nodes, then the overlap
 * figures. */
static void report_critical_path(DrReport *r, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = r->n_graph_nodes, m = g->edges->len;
  g_autofree double *dur = g_new0(double, MAX(n, 1));
  g_autofree double *finish = g_new0(double, MAX(n, 1));
  g_autofree DrId *pred = g_new(DrId, MAX(n, 1));
  g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
  g_autofree guint32 *out_first = g_new0(guint32, n + 1);
  g_autofree DrId *out_to = g_new(DrId, MAX(m, 1));
  g_autofree DrId *queue = g_new(DrId, MAX(n, 1));
  gboolean any = FALSE;
  double sum = 0;
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    if (isnan(nr->duration_us)) continue;
    dur[nr->node] = MAX(nr->duration_us, 0.0);
    sum += dur[nr->node];
    any = TRUE;
  }
  /* Outgoing edges grouped by source (a counting sort). */
  for (guint32 e = 0; e < m; e++) {
    out_first[dr_graph_edge(g, e)->from + 1]++;
    indeg[dr_graph_edge(g, e)->to]++;
  }
  for (guint32 v = 0; v < n; v++) out_first[v + 1] += out_first[v];
  {
    g_autofree guint32 *fill = g_memdup2(out_first, sizeof(guint32) * (n + 1));
    for (guint32 e = 0; e < m; e++) out_to[fill[dr_graph_edge(g, e)->from]++] = dr_graph_edge(g, e)->to;
  }
  guint32 head = 0, tail = 0;
  for (guint32 s = 0; s < plan->steps->len; s++) {
    DrId v = dr_plan_step(plan, s)->node;
    pred[v] = DR_NONE;
    if (indeg[v] == 0) queue[tail++] = v;
  }
  DrId last = DR_NONE;
  double best = 0;
  while (head < tail) {
    DrId u = queue[head++];
    finish[u] += dur[u]; /* finish[u] held its ready time until now */
    if (last == DR_NONE || finish[u] > best) {
      best = finish[u];
      last = u;
    }
    for (guint32 k = out_first[u]; k < out_first[u + 1]; k++) {
      DrId v = out_to[k];
      if (pred[v] == DR_NONE || finish[u] > finish[v]) {
        finish[v] = finish[u];
        pred[v] = u;
      }
      if (--indeg[v] == 0) queue[tail++] = v;
    }
  }
  r->critical_nodes = g_array_new(FALSE, FALSE, sizeof(DrId));
  for (DrId v = last; v != DR_NONE; v = pred[v]) g_array_prepend_val(r->critical_nodes, v);
  /* Streams used, counted from the steps (hand-made plans may leave
   * DrStream.n_nodes unset). */
  g_autofree gboolean *used = g_new0(gboolean, MAX(dr_plan_n_streams(plan), 1));
  r->streams_used = 0;
  for (guint32 s = 0; s < plan->steps->len; s++) {
    guint32 st = dr_plan_step(plan, s)->stream;
    if (!used[st]) r->streams_used++;
    used[st] = TRUE;
  }
  if (!any) {
    r->critical_path_us = r->overlap_streams = r->overlap_critical = NAN;
    return;
  }
  r->critical_path_us = best;
  gboolean span = !isnan(r->makespan_us) && r->makespan_us > 0;
  r->overlap_streams = span && r->streams_used ? sum / (r->makespan_us * r->streams_used) : NAN;
  r->overlap_critical = span ? best / r->makespan_us : NAN;
}

static void report_summarise(DrReport *r, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = r->n_graph_nodes, it = r->iterations;
  g_autofree double *start = g_new(double, MAX(it, 1));
  g_autofree double *dur = g_new(double, MAX(it, 1));
  for (guint32 s = 0; s < plan->steps->len; s++) {
    DrId id = dr_plan_step(plan, s)->node;
    const DrNode *node = dr_graph_node(g, id);
    for (guint32 i = 0; i < it; i++) {
      start[i] = r->sample_start[(gsize)i * n + id];
      dur[i] = r->sample_end[(gsize)i * n + id] - start[i];
    }
    DrNodeReport nr = {.node = id, .id = node->id, .op = node->op, .stream = dr_plan_step(plan, s)->stream};
    double smin, smax;
    stats(start, it, &nr.start_us, &smin, &smax);
    stats(dur, it, &nr.duration_us, &nr.duration_min_us, &nr.duration_max_us);
    nr.bytes = dr__node_bytes(g, id);
    nr.gbps = nr.bytes && nr.duration_us > 0 ? (double)nr.bytes / (nr.duration_us * 1e3) : NAN;
    g_array_append_val(r->nodes, nr);
  }
  stats(r->iter_makespan_us, it, &r->makespan_us, &r->makespan_min_us, &r->makespan_max_us);
  double t = 0;
  for (guint32 i = 0; i < it; i++) {
    r->iter_start_us[i] = t;
    /* Iterations run back to back; the trace lays them out by makespan
     * plus a small gap so they read apart. */
    t += (isnan(r->iter_makespan_us[i]) ? 0 : r->iter_makespan_us[i]) + 1.0;
  }
  report_critical_path(r, plan);
}

static DrReport *report_new(const DrPlan *plan, const DrRunOptions *opts) {
  const DrGraph *g = plan->graph;
  DrReport *r = g_new0(DrReport, 1);
  r->name = g_strdup(g->name ? g->name : "pipeline");
  r->iterations = opts->iterations;
  r->iterations_requested = opts->iterations;
  r->warmup = opts->warmup;
  r->n_graph_nodes = dr_graph_n_nodes(g);
  gsize samples = (gsize)MAX(opts->iterations, 1) * MAX(r->n_graph_nodes, 1);
  r->sample_start = g_new(double, samples);
  r->sample_end = g_new(double, samples);
  for (gsize i = 0; i < samples; i++) r->sample_start[i] = r->sample_end[i] = NAN;
  r->iter_start_us = g_new0(double, MAX(opts->iterations, 1));
  r->iter_makespan_us = g_new(double, MAX(opts->iterations, 1));
  for (guint32 i = 0; i < MAX(opts->iterations, 1); i++) r->iter_makespan_us[i] = NAN;
  r->nodes = g_array_new(FALSE, TRUE, sizeof(DrNodeReport));
  r->stream_priorities = g_array_new(FALSE, TRUE, sizeof(DrPriority));
  for (guint32 s = 0; s < dr_plan_n_streams(plan); s++)
    g_array_append_val(r->stream_priorities, g_array_index(plan->streams, DrStream, s).priority);
  r->flows = g_array_new(FALSE, TRUE, sizeof(DrReportFlow));
  for (guint32 s = 0; s < plan->steps->len; s++) {
    const DrPlanStep *step = dr_plan_step(plan, s);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      DrReportFlow f = {dr_plan_wait(plan, w), step->node};
      g_array_append_val(r->flows, f);
    }
  }
  r->verified = DR_VERIFIED_NOT_RUN;
  return r;
}

/* ---- running one pipeline --------------------------------------------- */

/* A `save:` buffer's contents, read back after the timed run and written
 * only once the whole run has succeeded, so that a failed run leaves no
 * save file behind. */
typedef struct {
  DrId buffer;
  char *data;
  gsize bytes;
} PendingSave;

static void pending_save_free(PendingSave *p) {
  g_free(p->data);
  g_free(p);
}

/* Reads every `save:` buffer into a new array of PendingSave. */
static GPtrArray *read_saves(const DrBackendOps *ops, DrBackend *b, const DrGraph *g, GError **error) {
  g_autoptr(GPtrArray) saves = g_ptr_array_new_with_free_func((GDestroyNotify)pending_save_free);
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const DrBuffer *buf = dr_graph_buffer(g, i);
    if (buf->save_path == NULL) continue;
    gsize bytes = dr_buffer_bytes(buf);
    char *data = g_try_malloc(MAX(bytes, 1));
    if (data == NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "save: out of host memory for buffer '%s'", buf->name);
      return NULL;
    }
    PendingSave *p = g_new0(PendingSave, 1);
    *p = (PendingSave){i, data, bytes};
    g_ptr_array_add(saves, p);
    if (!ops->read_buffer(b, i, data, error)) return NULL;
  }
  return g_steal_pointer(&saves);
}

/* The reason in a g_file_set_contents error, without GLib's temporary
 * file name (the user named `path`, not "path.XXXXXX"). */
static const char *write_reason(const GError *e) {
  const char *colon = strrchr(e->message, ':');
  return colon != NULL && colon[1] == ' ' ? colon + 2 : e->message;
}

/* Writes the pending saves; on a failure removes the files it already
 * wrote and fails (DR_ERROR_OUTPUT naming the save path). */
static gboolean write_saves(const DrGraph *g, GPtrArray *saves, GError **error) {
  for (guint k = 0; k < saves->len; k++) {
    const PendingSave *p = g_ptr_array_index(saves, k);
    const DrBuffer *buf = dr_graph_buffer(g, p->buffer);
    g_autoptr(GError) local = NULL;
    if (!g_file_set_contents(buf->save_path, p->data, (gssize)p->bytes, &local)) {
      g_set_error(error, DR_ERROR, DR_ERROR_OUTPUT, "%s: error: cannot write buffer '%s' (save:): %s",
                  buf->save_path, buf->name, write_reason(local));
      for (guint j = 0; j < k; j++)
        (void)g_remove(dr_graph_buffer(g, ((PendingSave *)g_ptr_array_index(saves, j))->buffer)->save_path);
      return FALSE;
    }
  }
  return TRUE;
}

/* The progress bar on stderr (opts->progress): drawn only once the run has
 * taken half a second, redrawn at most every 100 ms, erased at the end. */
typedef struct {
  gboolean on, drawn;
  gint64 t0, last;
} Progress;

static void progress_show(Progress *p, guint32 done, guint32 total) {
  if (!p->on) return;
  gint64 now = g_get_monotonic_time();
  if (now - p->t0 < 500000 || (p->drawn && now - p->last < 100000)) return;
  enum { WIDTH = 30 };
  char bar[WIDTH + 1];
  guint32 fill = total ? (guint32)((guint64)done * WIDTH / total) : WIDTH;
  for (guint32 i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  fprintf(stderr, "\r[%s] %u/%u iterations", bar, done, total);
  fflush(stderr);
  p->drawn = TRUE;
  p->last = now;
}

static void progress_end(Progress *p) {
  if (!p->drawn) return;
  fputs("\r\033[K", stderr); /* carriage return, erase the line */
  fflush(stderr);
  p->drawn = FALSE;
}

/* An atomic load: the flag may be set by a signal handler or by another
 * thread (which must store it atomically too). */
static gboolean stop_requested(const DrRunOptions *opts) {
  return opts->stop != NULL && __atomic_load_n(opts->stop, __ATOMIC_RELAXED) != 0;
}

/* Runs warmup + iterations on `b` (open and set up), timed into `report`
 * when non-NULL; *stopped tells whether a stop request cut the run short. */
static gboolean run_iterations(const DrBackendOps *ops, DrBackend *b, const DrGraph *g,
                               const DrRunOptions *opts, DrReport *report, gboolean *stopped,
                               GError **error) {
  gboolean ok = TRUE;
  Progress progress = {.on = opts->progress && report != NULL, .t0 = g_get_monotonic_time()};
  guint32 total = opts->warmup + opts->iterations;
  guint32 n = dr_graph_n_nodes(g);
  guint32 done = 0;
  *stopped = FALSE;
  /* Iterations 0..warmup-1 are warmups, then the timed ones. A pipelining
   * backend gets the next iteration launched while the one before runs
   * (up to max_in_flight); a stop request stops the launching, and what is
   * in flight is finished (and counted: it ran whole). */
  gboolean pipelined = ops->launch_iteration != NULL;
  guint32 depth = pipelined ? MAX(ops->max_in_flight(b), 1) : 1;
  guint32 launched = 0, finished = 0;
  while (ok) {
    gboolean more = !*stopped && launched < total;
    if (more && (*stopped = stop_requested(opts))) more = FALSE;
    if (more && pipelined && launched - finished < depth) {
      ok = ops->launch_iteration(b, launched, report != NULL && launched >= opts->warmup, error);
      launched++;
      continue;
    }
    if (!more && finished == launched) break; /* nothing left in flight */
    guint32 i = finished;
    DrIterTiming t = {NULL, NULL, NAN};
    gboolean timed = report != NULL && i >= opts->warmup;
    if (timed) {
      t.start_us = report->sample_start + (gsize)(i - opts->warmup) * n;
      t.end_us = report->sample_end + (gsize)(i - opts->warmup) * n;
    }
    if (pipelined) {
      ok = ops->finish_iteration(b, i, timed ? &t : NULL, error);
    } else {
      ok = ops->run_iteration(b, i, timed ? &t : NULL, error);
      launched++;
    }
    finished++;
    if (ok && timed) report->iter_makespan_us[done++] = t.makespan_us;
    progress_show(&progress, finished, total);
  }
  if (report) {
    report->iterations = done;
    report->interrupted = *stopped;
  }
  progress_end(&progress);
  if (ok && report) report->mode = ops->mode_name(b);
  return ok;
}

/* Opens `ops` on `plan`, sets up, runs warmup + iterations (timed into
 * `report` when non-NULL), reads the `save:` buffers into *saves when
 * non-NULL, captures written buffers into *capture when non-NULL,
 * closes. */
static gboolean run_pipeline(const DrBackendOps *ops, const DrPlan *plan, const DrRunOptions *opts,
                             DrReport *report, GPtrArray **saves, GPtrArray **capture, GError **error) {
  const DrGraph *g = plan->graph;
  DrBackend *b = ops->open(plan, opts, error);
  if (b == NULL) return FALSE;
  gboolean stopped = FALSE;
  gboolean ok = ops->setup(b, error) && run_iterations(ops, b, g, opts, report, &stopped, error);
  /* An interrupted run's buffers hold a partial result: neither saved nor
   * verified. */
  if (ok && !stopped && saves) ok = (*saves = read_saves(ops, b, g, error)) != NULL;
  if (ok && !stopped && capture) ok = (*capture = dr__verify_capture(ops, b, g, error)) != NULL;
  ops->close(b);
  return ok;
}

static const DrBackendOps *choose_backend(const DrRunOptions *opts, GError **error) {
  if (opts->backend == DR_BACKEND_HOST) return &dr__host_backend;
  g_autofree char *why = NULL;
  if (dr__cuda_available(&why)) return &dr__cuda_backend;
  if (opts->backend == DR_BACKEND_CUDA) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "--backend=cuda: no usable CUDA device (%s)", why);
    return NULL;
  }
  g_printerr("dagrun: no usable CUDA device (%s); running on the host backend\n", why);
  return &dr__host_backend;
}

/* Writes the --trace and --timeline files the options ask for. */
static gboolean write_outputs(const DrReport *report, const DrPlan *plan, const DrRunOptions *opts,
                              GError **error) {
  if (opts->trace_path) {
    g_autoptr(GString) trace = g_string_new(NULL);
    dr_trace_write(report, trace);
    g_autoptr(GError) local = NULL;
    if (!g_file_set_contents(opts->trace_path, trace->str, (gssize)trace->len, &local)) {
      g_set_error(error, DR_ERROR, DR_ERROR_OUTPUT, "%s: error: cannot write the trace: %s", opts->trace_path,
                  write_reason(local));
      return FALSE;
    }
  }
  if (opts->timeline_path) {
    g_autoptr(GString) svg = g_string_new(NULL);
    dr_timeline_write_svg(report, plan, svg);
    g_autoptr(GError) local = NULL;
    if (!g_file_set_contents(opts->timeline_path, svg->str, (gssize)svg->len, &local)) {
      g_set_error(error, DR_ERROR, DR_ERROR_OUTPUT, "%s: error: cannot write the timeline: %s",
                  opts->timeline_path, write_reason(local));
      return FALSE;
    }
  }
  return TRUE;
}

DrReport *dr_run(const DrPlan *plan, const DrRunOptions *opts_in, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  DrRunOptions opts;
  if (opts_in)
    opts = *opts_in;
  else
    dr_run_options_init(&opts, plan->graph);
  if (opts.iterations == 0) opts.iterations = 1;
  const DrBackendOps *ops = choose_backend(&opts, error);
  if (ops == NULL) return NULL;

  g_autoptr(DrReport) report = report_new(plan, &opts);
  report->backend = ops->name;
  g_autoptr(GPtrArray) concurrent = NULL;
  g_autoptr(GPtrArray) saves = NULL;
  if (!run_pipeline(ops, plan, &opts, report, &saves, opts.verify ? &concurrent : NULL, error)) return NULL;
  report_summarise(report, plan);

  if (opts.verify && !report->interrupted) {
    g_autoptr(DrPlan) serial = dr_plan_new_serial(plan->graph);
    DrRunOptions sopts = opts;
    sopts.delay_seed = 0; /* one stream: delays cannot reorder anything */
    sopts.node_timing = DR_TIMING_OFF;
    sopts.progress = FALSE;
    g_autoptr(GPtrArray) reference = NULL;
    if (!run_pipeline(ops, serial, &sopts, NULL, NULL, &reference, error)) return NULL;
    dr__verify_compare(plan->graph, reference, concurrent, report);
  }

  if (!write_outputs(report, plan, &opts, error)) return NULL;
  /* Last, so that a run that failed anywhere leaves no save file. */
  if (!report->interrupted && !write_saves(plan->graph, saves, error)) return NULL;
  return g_steal_pointer(&report);
}

/* ---- sessions ------------------------------------------------------------ */

struct DrSession {
  const DrBackendOps *ops;
  DrBackend *b;
  const DrPlan *plan; /* borrowed */
  DrRunOptions opts;
};

DrSession *dr_session_open(const DrPlan *plan, const DrRunOptions *opts_in, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  DrRunOptions opts;
  if (opts_in)
    opts = *opts_in;
  else
    dr_run_options_init(&opts, plan->graph);
  if (opts.iterations == 0) opts.iterations = 1;
  if (opts.verify) {
    g_set_error(
        error, DR_ERROR, DR_ERROR_USAGE,
        "verify applies to one-shot runs: a session's buffers carry over from run to run, so there is "
        "no serial run from the same contents to compare with");
    return NULL;
  }
  const DrBackendOps *ops = choose_backend(&opts, error);
  if (ops == NULL) return NULL;
  DrBackend *b = ops->open(plan, &opts, error);
  if (b == NULL) return NULL;
  if (!ops->setup(b, error)) {
    ops->close(b);
    return NULL;
  }
  DrSession *s = g_new0(DrSession, 1);
  s->ops = ops;
  s->b = b;
  s->plan = plan;
  s->opts = opts;
  return s;
}

DrReport *dr_session_run(DrSession *s, GError **error) {
  g_return_val_if_fail(s != NULL, NULL);
  g_autoptr(DrReport) report = report_new(s->plan, &s->opts);
  report->backend = s->ops->name;
  gboolean stopped = FALSE;
  if (!run_iterations(s->ops, s->b, s->plan->graph, &s->opts, report, &stopped, error)) return NULL;
  report_summarise(report, s->plan);
  if (!write_outputs(report, s->plan, &s->opts, error)) return NULL;
  if (!stopped) {
    g_autoptr(GPtrArray) saves = read_saves(s->ops, s->b, s->plan->graph, error);
    if (saves == NULL || !write_saves(s->plan->graph, saves, error)) return NULL;
  }
  return g_steal_pointer(&report);
}

gboolean dr_session_args_changed(DrSession *s, const DrId *nodes, guint32 n, const char **how,
                                 GError **error) {
  g_return_val_if_fail(s != NULL && how != NULL, FALSE);
  return s->ops->args_changed(s->b, nodes, n, how, error);
}

gboolean dr_session_read_buffer(DrSession *s, DrId buffer, void *dst, GError **error) {
  g_return_val_if_fail(s != NULL && dst != NULL, FALSE);
  g_return_val_if_fail(buffer < dr_graph_n_buffers(s->plan->graph), FALSE);
  const DrBuffer *buf = dr_graph_buffer(s->plan->graph, buffer);
  if (buf->alloc_node != DR_NONE) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                "buffer '%s' is stream-ordered (alloc/free nodes): it has no memory between runs", buf->name);
    return FALSE;
  }
  return s->ops->read_buffer(s->b, buffer, dst, error);
}

const char *dr_session_backend(const DrSession *s) { return s->ops->name; }

void dr_session_close(DrSession *s) {
  if (s == NULL) return;
  s->ops->close(s->b);
  g_free(s);
}
