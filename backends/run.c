/* run.c: dr_run, the driver every backend shares: choose the backend, run
 * warmup and timed iterations (with a progress bar when asked), gather
 * per-node samples into the report (report/stats.c turns them into
 * medians and the critical path), for --verify run the serial plan the
 * same way and compare, write the trace and the timeline, and save buffers
 * last, once everything else succeeded. The backends themselves live in
 * host.c and cuda/ (cuda/cuda.h says which part owns what); the report's model and renderings in
 * report/. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "ir/loops.h"
#include "ir/mode.h"
#include "backends/mpi_coll.h"
#include "backends/verify.h"

void dr_run_options_init(DrRunOptions *opts, const DrGraph *graph) {
  memset(opts, 0, sizeof *opts);
  opts->backend = DR_BACKEND_AUTO;
  opts->mode = graph->run.mode;
  opts->iterations = graph->run.iterations;
  opts->warmup = graph->run.warmup;
  opts->device = graph->run.device;
  opts->graph_fallback = graph->run.fallback_streams;
  opts->issue_threads = graph->run.issue_threads;
  opts->node_timing = DR_TIMING_AUTO;
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
 * taken half a second, redrawn at most every 100 ms, erased at the end by
 * blanks over it (no escape sequences, so NO_COLOR and dumb terminals see
 * none), and never drawn where host print/checksum output (or a C API
 * callback's) goes to a terminal: the bar would share that output's line. */
typedef struct {
  gboolean on, drawn;
  gint64 t0, last;
  int len; /* characters of the last drawing */
} Progress;

/* Whether a node may write to the host output and that output is a
 * terminal (then stderr's bar would share its lines). */
static gboolean host_prints_to_terminal(const DrGraph *g, const DrRunOptions *opts) {
  int fd = fileno(opts->host_output ? opts->host_output : stdout);
  if (fd < 0 || !isatty(fd)) return FALSE;
  for (guint32 v = 0; v < dr_graph_n_nodes(g); v++) {
    const DrNode *n = dr_graph_node(g, v);
    if (n->op == DR_OP_HOST && (n->callback || n->host_fn != DR_HOST_FN_SLEEP)) return TRUE;
  }
  return FALSE;
}

static void progress_show(Progress *p, guint32 done, guint32 total) {
  if (!p->on) return;
  gint64 now = g_get_monotonic_time();
  if (now - p->t0 < 500000 || (p->drawn && now - p->last < 100000)) return;
  enum { WIDTH = 30 };
  char bar[WIDTH + 1];
  guint32 fill = total ? (guint32)((guint64)done * WIDTH / total) : WIDTH;
  for (guint32 i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  int len = fprintf(stderr, "\r[%s] %u/%u iterations", bar, done, total);
  fflush(stderr);
  p->len = MAX(p->len, len - 1);
  p->drawn = TRUE;
  p->last = now;
}

static void progress_end(Progress *p) {
  if (!p->drawn) return;
  fprintf(stderr, "\r%*s\r", p->len, ""); /* blank the line, back to its start */
  fflush(stderr);
  p->drawn = FALSE;
}

/* An atomic load: the flag may be set by a signal handler or by another
 * thread (which must store it atomically too). */
static gboolean stop_requested(const DrRunOptions *opts) {
  return opts->stop != NULL && __atomic_load_n(opts->stop, __ATOMIC_RELAXED) != 0;
}

/* Adds the trips of each loop in the iteration that just finished to
 * `report` (report->loops, made on first use). */
static void count_trips(const DrBackendOps *ops, const DrBackend *b, const DrGraph *g, DrReport *report) {
  if (ops->loop_trips == NULL || dr_graph_n_loops(g) == 0) return;
  if (report->loops == NULL) {
    report->loops = g_array_new(FALSE, TRUE, sizeof(DrLoopReport));
    for (guint i = 0; i < dr_graph_n_loops(g); i++) {
      const DrLoop *l = dr_graph_loop(g, i);
      DrLoopReport lr = {.node = l->node, .id = l->id, .trips_min = G_MAXUINT64};
      g_array_append_val(report->loops, lr);
    }
  }
  for (guint i = 0; i < report->loops->len; i++) {
    DrLoopReport *lr = &g_array_index(report->loops, DrLoopReport, i);
    guint64 t = ops->loop_trips(b, i);
    lr->trips_min = MIN(lr->trips_min, t);
    lr->trips_max = MAX(lr->trips_max, t);
    lr->trips_sum += t;
    lr->samples++;
  }
}

/* Moves the trips the backend logged in the timed iteration `done` into
 * `report` (its arrays made on first use). */
static void take_trips(DrTripLog *trips, guint32 done, DrReport *report) {
  if (report->trip_spans == NULL) {
    report->trip_spans = g_array_new(FALSE, FALSE, sizeof(DrTripSpan));
    report->trip_counts = g_array_new(FALSE, FALSE, sizeof(DrTripCount));
  }
  dr_trip_log_take(trips, done, report->trip_spans, report->trip_counts);
  g_autoptr(GArray) body = g_array_new(FALSE, FALSE, sizeof(DrBodySpan));
  dr_trip_log_take_body(trips, done, body);
  if (body->len > 0 && report->body_spans == NULL)
    report->body_spans = g_array_new(FALSE, FALSE, sizeof(DrBodySpan));
  if (body->len > 0) g_array_append_vals(report->body_spans, body->data, body->len);
}

/* Why the run ran in mode `ran` (owned): the host's note, who forced it,
 * or auto's rule (ir/mode.h), and a graph-mode fallback to streams. */
static char *mode_reason(const DrBackendOps *ops, const DrGraph *g, const DrRunOptions *opts,
                         const char *ran) {
  if (strcmp(ops->name, "host") == 0)
    return g_strdup(opts->mode_asked == DR_MODE_AUTO
                        ? "auto: the host backend has no graph mode; its threads run the plan's streams"
                        : "the host backend has no graph mode; its threads run the plan's streams");
  char *why = NULL;
  DrMode mode = dr_mode_resolve(g, opts->mode_asked, opts->iterations,
                                opts->mode_asked == g->run.mode ? "run.mode" : "--mode", &why);
  if (strcmp(ran, dr_mode_name(mode)) == 0) return why;
  char *fell = g_strdup_printf("%s; the capture failed, so it ran eagerly (run.fallback: streams)", why);
  g_free(why);
  return fell;
}

/* Runs warmup + iterations on `b` (open and set up), timed into `report`
 * when non-NULL; *stopped tells whether a stop request cut the run short. */
static gboolean run_iterations(const DrBackendOps *ops, DrBackend *b, const DrGraph *g,
                               const DrRunOptions *opts, DrReport *report, gboolean *stopped,
                               GError **error) {
  gboolean ok = TRUE;
  Progress progress = {.on = opts->progress && report != NULL && !host_prints_to_terminal(g, opts),
                       .t0 = g_get_monotonic_time()};
  guint32 total = opts->warmup + opts->iterations;
  guint32 n = dr_graph_n_nodes(g);
  guint32 done = 0;
  *stopped = FALSE;
  /* Iterations 0..warmup-1 are warmups, then the timed ones. A pipelining
   * backend gets the next iteration launched while the one before runs
   * (up to max_in_flight); a stop request stops the launching, and what is
   * in flight is finished (and counted: it ran whole). */
  /* Loop trips are timed with the nodes (DrIterTiming.trips). */
  g_autoptr(DrTripLog) trips = report != NULL && dr_graph_n_loops(g) > 0 && opts->node_timing != DR_TIMING_OFF
                                   ? dr_trip_log_new()
                                   : NULL;
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
    DrIterTiming t = {NULL, NULL, NAN, NULL};
    gboolean timed = report != NULL && i >= opts->warmup;
    if (timed) {
      t.start_us = report->sample_start + (gsize)(i - opts->warmup) * n;
      t.end_us = report->sample_end + (gsize)(i - opts->warmup) * n;
      t.trips = trips;
    }
    if (pipelined) {
      ok = ops->finish_iteration(b, i, timed ? &t : NULL, error);
    } else {
      ok = ops->run_iteration(b, i, timed ? &t : NULL, error);
      launched++;
    }
    finished++;
    if (ok && timed) {
      if (trips != NULL) take_trips(trips, done, report);
      report->iter_makespan_us[done++] = t.makespan_us;
      count_trips(ops, b, g, report);
    }
    progress_show(&progress, finished, total);
  }
  if (report) {
    report->iterations = done;
    report->interrupted = *stopped;
  }
  progress_end(&progress);
  if (ok && report) {
    report->mode = ops->mode_name(b);
    g_free(report->mode_reason);
    report->mode_reason = mode_reason(ops, g, opts, report->mode);
  }
  return ok;
}

/* The report's measured peak: whole-run bytes plus the backend's
 * high-water mark of stream-ordered bytes; G_MAXUINT64 (not measured) when
 * the backend measures none or the plan has no device memory. */
static guint64 measured_peak(const DrBackendOps *ops, const DrBackend *b, const DrPlan *plan) {
  if (ops->memory_high == NULL || plan->peak_bound_bytes == 0) return G_MAXUINT64;
  guint64 high = ops->memory_high(b);
  return high == G_MAXUINT64 ? G_MAXUINT64 : plan->whole_run_bytes + high;
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
  if (ok && report) report->peak_measured_bytes = measured_peak(ops, b, plan);
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
  g_message("no usable CUDA device (%s); running on the host backend", why);
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

/* `opts_in`, or the graph's defaults when NULL; at least one iteration. */
static DrRunOptions options_for(const DrPlan *plan, const DrRunOptions *opts_in) {
  DrRunOptions opts;
  if (opts_in)
    opts = *opts_in;
  else
    dr_run_options_init(&opts, plan->graph);
  if (opts.iterations == 0) opts.iterations = 1;
  opts.mode_asked = opts.mode;
  g_autofree char *unused = NULL;
  opts.mode = dr_mode_resolve(plan->graph, opts.mode, opts.iterations, NULL, &unused);
  return opts;
}

DrReport *dr_run(const DrPlan *plan, const DrRunOptions *opts_in, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  DrRunOptions opts = options_for(plan, opts_in);
  const DrBackendOps *ops = choose_backend(&opts, error);
  if (ops == NULL) return NULL;
  /* Across ranks: every rank's collectives must agree before any runs. */
  if (!dr__rank_colls_check(plan->graph, error)) return NULL;

  g_autoptr(DrReport) report = dr_report_new(plan, opts.iterations, opts.warmup);
  report->backend = ops->name;
  g_autoptr(GPtrArray) concurrent = NULL;
  g_autoptr(GPtrArray) saves = NULL;
  if (!run_pipeline(ops, plan, &opts, report, &saves, opts.verify ? &concurrent : NULL, error)) return NULL;
  dr_report_summarise(report, plan);

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
  guint32 on_stream_iterations; /* run_on_stream's iteration numbers */
  /* The parameter buffers (`param:`), found once at open so that a run of
   * a pipeline without them looks at nothing: their ids
   * [n_param_buffers], and [n_buffers] what each holds now (its setup's
   * value, then the last dr_session_write_params). */
  DrId *param_buffers;
  guint32 n_param_buffers;
  guint64 *param_words;
};

DrSession *dr_session_open(const DrPlan *plan, const DrRunOptions *opts_in, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  DrRunOptions opts = options_for(plan, opts_in);
  if (opts.verify) {
    g_set_error(
        error, DR_ERROR, DR_ERROR_USAGE,
        "verify applies to one-shot runs: a session's buffers carry over from run to run, so there is "
        "no serial run from the same contents to compare with");
    return NULL;
  }
  const DrBackendOps *ops = choose_backend(&opts, error);
  if (ops == NULL || !dr__rank_colls_check(plan->graph, error)) return NULL;
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
  guint32 nb = dr_graph_n_buffers(plan->graph);
  s->param_buffers = g_new(DrId, MAX(nb, 1));
  s->param_words = g_new0(guint64, MAX(nb, 1));
  for (DrId i = 0; i < nb; i++)
    if (dr_graph_buffer(plan->graph, i)->param) {
      s->param_buffers[s->n_param_buffers++] = i;
      s->param_words[i] = dr__param_buffer_word(plan->graph, i);
    }
  return s;
}

DrReport *dr_session_run(DrSession *s, GError **error) {
  g_return_val_if_fail(s != NULL, NULL);
  g_autoptr(DrReport) report = dr_report_new(s->plan, s->opts.iterations, s->opts.warmup);
  report->backend = s->ops->name;
  gboolean stopped = FALSE;
  if (!run_iterations(s->ops, s->b, s->plan->graph, &s->opts, report, &stopped, error)) return NULL;
  report->peak_measured_bytes = measured_peak(s->ops, s->b, s->plan);
  dr_report_summarise(report, s->plan);
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

void dr_session_update_detail(const DrSession *s, DrUpdateDetail *detail) {
  g_return_if_fail(s != NULL && detail != NULL);
  memset(detail, 0, sizeof *detail);
  if (s->ops->update_detail) s->ops->update_detail(s->b, detail);
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

/* FALSE with DR_ERROR_USAGE when `buf` is stream-ordered: it has no
 * memory between runs to bind, write or read. */
static gboolean whole_run(const DrBuffer *buf, const char *what, GError **error) {
  if (buf->alloc_node == DR_NONE) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
              "buffer '%s' is stream-ordered (alloc/free nodes): it cannot be %s; only whole-run buffers can",
              buf->name, what);
  return FALSE;
}

/* FALSE with DR_ERROR_UNAVAILABLE when the backend has no external memory. */
static gboolean has_external(const DrSession *s, GError **error) {
  if (s->ops->bind_buffer != NULL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "the %s backend has no external memory", s->ops->name);
  return FALSE;
}

gboolean dr_session_bind_buffer(DrSession *s, DrId buffer, void *ptr, gsize bytes, const char **how,
                                GError **error) {
  g_return_val_if_fail(s != NULL && ptr != NULL && how != NULL, FALSE);
  g_return_val_if_fail(buffer < dr_graph_n_buffers(s->plan->graph), FALSE);
  const DrBuffer *buf = dr_graph_buffer(s->plan->graph, buffer);
  if (!whole_run(buf, "bound to external memory", error) || !has_external(s, error)) return FALSE;
  guint64 want = dr_buffer_bytes(buf);
  if (bytes != want) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                "buffer '%s' holds %" G_GUINT64_FORMAT " bytes; the memory bound to it has %" G_GSIZE_FORMAT,
                buf->name, want, bytes);
    return FALSE;
  }
  return s->ops->bind_buffer(s->b, buffer, ptr, how, error);
}

gboolean dr_session_write_buffer(DrSession *s, DrId buffer, guint64 offset, const void *data, guint64 bytes,
                                 GError **error) {
  g_return_val_if_fail(s != NULL && (data != NULL || bytes == 0), FALSE);
  g_return_val_if_fail(buffer < dr_graph_n_buffers(s->plan->graph), FALSE);
  const DrBuffer *buf = dr_graph_buffer(s->plan->graph, buffer);
  if (!whole_run(buf, "written", error) || !has_external(s, error)) return FALSE;
  guint64 size = dr_buffer_bytes(buf);
  if (offset > size || bytes > size - offset) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                "buffer '%s' holds %" G_GUINT64_FORMAT " bytes: cannot write %" G_GUINT64_FORMAT
                " at offset %" G_GUINT64_FORMAT,
                buf->name, size, bytes, offset);
    return FALSE;
  }
  if (bytes == 0) return TRUE;
  return s->ops->write_buffer(s->b, buffer, offset, data, bytes, error);
}

gboolean dr_session_run_on_stream(DrSession *s, void *stream, GError **error) {
  g_return_val_if_fail(s != NULL, FALSE);
  if (!has_external(s, error)) return FALSE;
  return s->ops->run_on_stream(s->b, s->on_stream_iterations++, stream, error);
}

const char *dr_session_backend(const DrSession *s) { return s->ops->name; }

void dr_session_close(DrSession *s) {
  if (s == NULL) return;
  s->ops->close(s->b);
  g_free(s->param_buffers);
  g_free(s->param_words);
  g_free(s);
}

gboolean dr_session_write_params(DrSession *s, guint32 *written, GError **error) {
  g_return_val_if_fail(s != NULL && written != NULL, FALSE);
  const DrGraph *g = s->plan->graph;
  *written = 0;
  if (s->n_param_buffers == 0) return TRUE;
  g_autoptr(GArray) buffers = g_array_new(FALSE, FALSE, sizeof(DrId));
  g_autoptr(GArray) words = g_array_new(FALSE, FALSE, sizeof(guint64));
  for (guint32 k = 0; k < s->n_param_buffers; k++) {
    DrId i = s->param_buffers[k];
    guint64 w = dr__param_buffer_word(g, i);
    if (w == s->param_words[i]) continue;
    g_array_append_val(buffers, i);
    g_array_append_val(words, w);
  }
  if (buffers->len == 0) return TRUE;
  const DrId *ids = (const DrId *)(void *)buffers->data;
  const guint64 *ws = (const guint64 *)(void *)words->data;
  gboolean ok = TRUE;
  if (s->ops->write_words != NULL)
    ok = s->ops->write_words(s->b, ids, ws, buffers->len, error);
  else
    for (guint i = 0; i < buffers->len && ok; i++)
      ok = s->ops->write_buffer(s->b, ids[i], 0, &ws[i], 8, error);
  if (!ok) return FALSE;
  for (guint i = 0; i < buffers->len; i++) s->param_words[ids[i]] = ws[i];
  *written = buffers->len;
  return TRUE;
}
