/* trace.c: --trace, the run as Chrome trace event JSON (Perfetto,
 * chrome://tracing): process and thread metadata naming a process per
 * device (and rank, in an MPI job) and a track per plan stream with its
 * priority, one complete ("X") event per timed node and
 * iteration (ts and dur in µs, iterations laid out one after another),
 * a complete event per loop trip the backend timed (report.h's
 * DrTripSpan: on its loop node's track, nested inside the node's event)
 * and per body node its loop's backend timed in the last trip (DrBodySpan,
 * inside that trip's event), a flow ("s"/"f" pair) per planned wait and iteration, and two counter
 * tracks ("C" events): "concurrency", the number of nodes running, and
 * "copy bandwidth", the GB/s of the copies running. The format's
 * own keys (ts, dur, ph, tid) are Chrome's, not dagrun's. Written through
 * the package's JSON writer, one event per line. O(iterations × (V log V +
 * waits)). */
#include <math.h>

#include "report/json.h"
#include "report/memory_track.h"
#include "report/report.h"

static void metadata(DrJsonWriter *w, const char *name, guint32 pid, gboolean has_tid, guint32 tid,
                     const char *arg_key, const char *arg_str, guint32 arg_uint) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", name);
  dr__json_member_string(w, "ph", "M");
  dr__json_member_uint(w, "pid", pid);
  if (has_tid) dr__json_member_uint(w, "tid", tid);
  dr__json_key(w, "args");
  dr__json_begin_object(w);
  if (arg_str)
    dr__json_member_string(w, arg_key, arg_str);
  else
    dr__json_member_uint(w, arg_key, arg_uint);
  dr__json_end_object(w);
  dr__json_end_object(w);
}

/* One end of a wait's arrow: "s" leaves the waited node's end, "f" binds
 * to the enclosing slice of the waiting node at its start ("bp": "e"). */
static void flow(DrJsonWriter *w, const char *ph, guint64 id, guint32 pid, guint32 tid, double ts) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", "wait");
  dr__json_member_string(w, "cat", "wait");
  dr__json_member_string(w, "ph", ph);
  if (ph[0] == 'f') dr__json_member_string(w, "bp", "e");
  dr__json_member_uint(w, "id", id);
  dr__json_member_uint(w, "pid", pid);
  dr__json_member_uint(w, "tid", tid);
  dr__json_member_double(w, "ts", ts, 3);
  dr__json_end_object(w);
}

/* A node's start or end, for the counter tracks. */
typedef struct {
  double ts;
  int running; /* +1 at a start, -1 at an end */
  double gbps; /* a copy's bandwidth while it runs, signed like running */
} Tick;

static int tick_cmp(const void *a, const void *b) {
  const Tick *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->running - y->running; /* ends first: a hand-over is no overlap */
}

static void counter(DrJsonWriter *w, guint32 pid, const char *name, const char *key, double ts, double value,
                    guint decimals) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", name);
  dr__json_member_string(w, "ph", "C");
  dr__json_member_uint(w, "pid", pid);
  dr__json_member_double(w, "ts", ts, 3);
  dr__json_key(w, "args");
  dr__json_begin_object(w);
  dr__json_member_double(w, key, value, decimals);
  dr__json_end_object(w);
  dr__json_end_object(w);
}

/* The counter tracks of one iteration: "concurrency" (nodes running) and
 * "copy bandwidth" (GB/s of the copies running, each at its bytes over its
 * duration), one sample per distinct start or end time. */
static void counters(DrJsonWriter *w, guint32 pid, const DrReport *r, const DrNodeReport *const *info,
                     const double *st, const double *en, double base, GArray *ticks) {
  g_array_set_size(ticks, 0);
  gboolean copies = FALSE;
  for (guint32 id = 0; id < r->n_graph_nodes; id++) {
    if (info[id] == NULL || isnan(st[id]) || isnan(en[id])) continue;
    double dur = MAX(en[id] - st[id], 0.0);
    double gbps = info[id]->op == DR_OP_COPY && dur > 0 ? (double)info[id]->bytes / dur / 1000.0 : 0;
    copies |= info[id]->op == DR_OP_COPY;
    Tick a = {st[id], 1, gbps}, b = {st[id] + dur, -1, -gbps};
    g_array_append_val(ticks, a);
    g_array_append_val(ticks, b);
  }
  g_array_sort(ticks, tick_cmp);
  int running = 0;
  double gbps = 0;
  for (guint i = 0; i < ticks->len; i++) {
    const Tick *t = &g_array_index(ticks, Tick, i);
    running += t->running;
    gbps += t->gbps;
    if (i + 1 < ticks->len && g_array_index(ticks, Tick, i + 1).ts == t->ts) continue;
    if (running == 0) gbps = 0; /* no drift from float sums */
    counter(w, pid, "concurrency", "nodes", base + t->ts, running, 0);
    if (copies) counter(w, pid, "copy bandwidth", "GB/s", base + t->ts, MAX(gbps, 0.0), 3);
  }
}

/* A complete event of a loop's trip on its top-level loop node's track
 * (`name`, `cat`; args iteration, loop, trip), [start, end] from `base`. */
static void loop_event(DrJsonWriter *w, const char *name, const char *cat, guint32 pid, guint32 tid,
                       double base, double start, double end, guint32 iteration, const char *loop,
                       guint64 trip_no) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", name);
  dr__json_member_string(w, "cat", cat);
  dr__json_member_string(w, "ph", "X");
  dr__json_member_uint(w, "pid", pid);
  dr__json_member_uint(w, "tid", tid);
  dr__json_member_double(w, "ts", base + start, 3);
  dr__json_member_double(w, "dur", MAX(end - start, 0.0), 3);
  dr__json_key(w, "args");
  dr__json_begin_object(w);
  dr__json_member_uint(w, "iteration", iteration);
  dr__json_member_string(w, "loop", loop);
  dr__json_member_uint(w, "trip", trip_no);
  dr__json_end_object(w);
  dr__json_end_object(w);
}

/* One trip of a loop as a complete event on its top-level loop node's
 * track: inside the node's event, and a nested loop's inside the trip of
 * the loop around it, so viewers nest them by time. */
static void trip(DrJsonWriter *w, const DrTripSpan *sp, guint32 pid, guint32 tid, double base) {
  g_autofree char *name = g_strdup_printf("%s trip", sp->loop);
  loop_event(w, name, "trip", pid, tid, base, sp->start_us, sp->end_us, sp->iteration, sp->loop, sp->trip);
}

/* A body node in its loop's last trip (DrBodySpan) as a complete event on
 * the top-level loop node's track, inside that trip's event ("cat":
 * "body"; a body's parallel branches overlap on the track). */
static void body_node(DrJsonWriter *w, const DrBodySpan *sp, guint32 pid, guint32 tid, double base) {
  loop_event(w, sp->id, "body", pid, tid, base, sp->start_us, sp->end_us, sp->iteration, sp->loop, sp->trip);
}

/* A loop node's args: the trips of each loop under it in the iteration
 * ("trips": {LOOP: N}) and, when the bound left some without a span,
 * how many ("trips_without_span": {LOOP: N}); counts [first, end). */
static void trip_counts(DrJsonWriter *w, const DrReport *r, guint first, guint end, DrId node) {
  for (int pass = 0; pass < 2; pass++) {
    gboolean open = FALSE;
    for (guint i = first; i < end; i++) {
      const DrTripCount *c = &g_array_index(r->trip_counts, DrTripCount, i);
      if (c->node != node || (pass == 1 && c->dropped == 0)) continue;
      if (!open) {
        dr__json_key(w, pass == 0 ? "trips" : "trips_without_span");
        dr__json_begin_object(w);
        open = TRUE;
      }
      dr__json_member_uint(w, c->loop, pass == 0 ? c->trips : c->dropped);
    }
    if (open) dr__json_end_object(w);
  }
}

void dr_trace_write(const DrReport *r, GString *out) {
  DrJsonWriter w;
  dr__json_init(&w, out, NULL);
  dr__json_begin_object(&w);
  dr__json_member_string(&w, "displayTimeUnit", "ms");
  dr__json_key(&w, "traceEvents");
  dr__json_begin_array_lines(&w, "");
  /* The run's parameter values, as each process's label. */
  g_autoptr(GString) labels = NULL;
  if (r->params != NULL) {
    labels = g_string_new(NULL);
    for (guint i = 0; i < r->params->len; i++) {
      const DrReportParam *p = &g_array_index(r->params, DrReportParam, i);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf(labels, "%s%s=", i ? " " : "", p->name);
      if (p->is_int)
        g_string_append_printf(labels, "%" G_GINT64_FORMAT, p->i);
      else
        g_string_append(labels, g_ascii_dtostr(buf, sizeof buf, p->f));
    }
  }
  /* A process per device (in the order the streams first name them) and,
   * in an MPI job, per rank: each rank writes its own trace, so their
   * process ids never collide when the files are opened together. One
   * device of one process stays pid 1, named as before. */
  guint32 n_streams = r->stream_priorities->len;
  g_autofree guint32 *pid_of = g_new0(guint32, MAX(n_streams, 1));
  g_autoptr(GArray) devs = g_array_new(FALSE, FALSE, sizeof(gint32));
  guint32 pid0 = r->nranks > 1 ? r->rank * (DR_MAX_DEVICES + 1) : 0;
  for (guint s = 0; s < n_streams; s++) {
    gint32 d =
        r->stream_devices && s < r->stream_devices->len ? g_array_index(r->stream_devices, gint32, s) : 0;
    guint k = 0;
    while (k < devs->len && g_array_index(devs, gint32, k) != d) k++;
    if (k == devs->len) g_array_append_val(devs, d);
    pid_of[s] = pid0 + 1 + k;
  }
  if (devs->len == 0) {
    gint32 d = 0;
    g_array_append_val(devs, d);
  }
  for (guint k = 0; k < devs->len; k++) {
    gint32 d = g_array_index(devs, gint32, k);
    g_autoptr(GString) pname = g_string_new(NULL);
    g_string_append_printf(pname, "dagrun %s (%s, %s)", r->name, r->backend, r->mode ? r->mode : "?");
    if (r->nranks > 1) g_string_append_printf(pname, " rank %u of %u", r->rank, r->nranks);
    if (r->multi_device && d < 0)
      g_string_append(pname, " all devices");
    else if (r->multi_device)
      g_string_append_printf(pname, " device %d", d);
    metadata(&w, "process_name", pid0 + 1 + k, FALSE, 0, "name", pname->str, 0);
    if (labels != NULL) metadata(&w, "process_labels", pid0 + 1 + k, FALSE, 0, "labels", labels->str, 0);
    if (devs->len > 1 || r->nranks > 1)
      metadata(&w, "process_sort_index", pid0 + 1 + k, FALSE, 0, "sort_index", NULL, pid0 + k);
  }
  for (guint s = 0; s < n_streams; s++) {
    DrPriority p = g_array_index(r->stream_priorities, DrPriority, s);
    g_autofree char *tname = g_strdup_printf("stream %u (%s)", s, dr_priority_name(p));
    metadata(&w, "thread_name", pid_of[s], TRUE, s, "name", tname, 0);
    metadata(&w, "thread_sort_index", pid_of[s], TRUE, s, "sort_index", NULL, s);
  }
  guint32 n = r->n_graph_nodes;
  /* Node id -> plan stream and op, from the report's node list. */
  g_autofree guint32 *stream_of = g_new0(guint32, MAX(n, 1));
  g_autofree const DrNodeReport **info = g_new0(const DrNodeReport *, MAX(n, 1));
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    stream_of[nr->node] = nr->stream;
    info[nr->node] = nr;
  }
  guint64 flow_id = 1;
  g_autoptr(GArray) ticks = g_array_new(FALSE, FALSE, sizeof(Tick));
  /* Trip spans and counts are in iteration order: [first, end) of each. */
  guint n_spans = r->trip_spans ? r->trip_spans->len : 0, n_counts = r->trip_counts ? r->trip_counts->len : 0;
  guint s_end = 0, c_first = 0, c_end = 0, b_end = 0, n_body = r->body_spans ? r->body_spans->len : 0;
  for (guint32 it = 0; it < r->iterations; it++) {
    double base = r->iter_start_us[it];
    for (c_first = c_end;
         c_end < n_counts && g_array_index(r->trip_counts, DrTripCount, c_end).iteration == it;)
      c_end++;
    const double *st = r->sample_start + (gsize)it * n, *en = r->sample_end + (gsize)it * n;
    for (guint32 id = 0; id < n; id++) {
      if (info[id] == NULL || isnan(st[id]) || isnan(en[id])) continue;
      dr__json_begin_object(&w);
      dr__json_member_string(&w, "name", info[id]->id);
      dr__json_member_string(&w, "cat", dr_op_name(info[id]->op));
      dr__json_member_string(&w, "ph", "X");
      dr__json_member_uint(&w, "pid", pid_of[stream_of[id]]);
      dr__json_member_uint(&w, "tid", stream_of[id]);
      dr__json_member_double(&w, "ts", base + st[id], 3);
      dr__json_member_double(&w, "dur", MAX(en[id] - st[id], 0.0), 3);
      dr__json_key(&w, "args");
      dr__json_begin_object(&w);
      dr__json_member_uint(&w, "iteration", it);
      if (info[id]->op == DR_OP_NOOP) trip_counts(&w, r, c_first, c_end, id);
      dr__json_end_object(&w);
      dr__json_end_object(&w);
    }
    for (; s_end < n_spans && g_array_index(r->trip_spans, DrTripSpan, s_end).iteration == it; s_end++) {
      const DrTripSpan *sp = &g_array_index(r->trip_spans, DrTripSpan, s_end);
      if (sp->node < n && info[sp->node] != NULL)
        trip(&w, sp, pid_of[stream_of[sp->node]], stream_of[sp->node], base);
    }
    for (; b_end < n_body && g_array_index(r->body_spans, DrBodySpan, b_end).iteration == it; b_end++) {
      const DrBodySpan *sp = &g_array_index(r->body_spans, DrBodySpan, b_end);
      if (sp->node < n && info[sp->node] != NULL)
        body_node(&w, sp, pid_of[stream_of[sp->node]], stream_of[sp->node], base);
    }
    counters(&w, pid0 + 1, r, info, st, en, base, ticks);
    dr__trace_memory_counter(&w, r, st, en, base);
    for (guint f = 0; f < r->flows->len; f++) {
      const DrReportFlow *fl = &g_array_index(r->flows, DrReportFlow, f);
      if (isnan(en[fl->from]) || isnan(st[fl->to])) continue;
      flow(&w, "s", flow_id, pid_of[stream_of[fl->from]], stream_of[fl->from],
           base + MAX(en[fl->from] - 0.001, st[fl->from]));
      flow(&w, "f", flow_id, pid_of[stream_of[fl->to]], stream_of[fl->to], base + st[fl->to]);
      flow_id++;
    }
  }
  dr__json_end_array(&w);
  dr__json_end_object(&w);
  dr__json_finish(&w);
  g_string_append_c(out, '\n');
}
