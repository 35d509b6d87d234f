/* trace.c: --trace, the run as Chrome trace event JSON (Perfetto,
 * chrome://tracing): process and thread metadata naming a track per plan
 * stream with its priority, one complete ("X") event per timed node and
 * iteration (ts and dur in µs, iterations laid out one after another),
 * and a flow ("s"/"f" pair) per planned wait and iteration. The format's
 * own keys (ts, dur, ph, tid) are Chrome's, not dagrun's. Written through
 * the package's JSON writer, one event per line. O(iterations × (V +
 * waits)). */
#include <math.h>

#include "report/json.h"
#include "report/report.h"

static void metadata(DrJsonWriter *w, const char *name, gboolean has_tid, guint32 tid, const char *arg_key,
                     const char *arg_str, guint32 arg_uint) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", name);
  dr__json_member_string(w, "ph", "M");
  dr__json_member_uint(w, "pid", 1);
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
static void flow(DrJsonWriter *w, const char *ph, guint64 id, guint32 tid, double ts) {
  dr__json_begin_object(w);
  dr__json_member_string(w, "name", "wait");
  dr__json_member_string(w, "cat", "wait");
  dr__json_member_string(w, "ph", ph);
  if (ph[0] == 'f') dr__json_member_string(w, "bp", "e");
  dr__json_member_uint(w, "id", id);
  dr__json_member_uint(w, "pid", 1);
  dr__json_member_uint(w, "tid", tid);
  dr__json_member_double(w, "ts", ts, 3);
  dr__json_end_object(w);
}

void dr_trace_write(const DrReport *r, GString *out) {
  DrJsonWriter w;
  dr__json_init(&w, out, NULL);
  dr__json_begin_object(&w);
  dr__json_member_string(&w, "displayTimeUnit", "ms");
  dr__json_key(&w, "traceEvents");
  dr__json_begin_array_lines(&w, "");
  g_autofree char *pname =
      g_strdup_printf("dagrun %s (%s, %s)", r->name, r->backend, r->mode ? r->mode : "?");
  metadata(&w, "process_name", FALSE, 0, "name", pname, 0);
  for (guint s = 0; s < r->stream_priorities->len; s++) {
    DrPriority p = g_array_index(r->stream_priorities, DrPriority, s);
    g_autofree char *tname = g_strdup_printf("stream %u (%s)", s, dr_priority_name(p));
    metadata(&w, "thread_name", TRUE, s, "name", tname, 0);
    metadata(&w, "thread_sort_index", TRUE, s, "sort_index", NULL, s);
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
  for (guint32 it = 0; it < r->iterations; it++) {
    double base = r->iter_start_us[it];
    const double *st = r->sample_start + (gsize)it * n, *en = r->sample_end + (gsize)it * n;
    for (guint32 id = 0; id < n; id++) {
      if (info[id] == NULL || isnan(st[id]) || isnan(en[id])) continue;
      dr__json_begin_object(&w);
      dr__json_member_string(&w, "name", info[id]->id);
      dr__json_member_string(&w, "cat", dr_op_name(info[id]->op));
      dr__json_member_string(&w, "ph", "X");
      dr__json_member_uint(&w, "pid", 1);
      dr__json_member_uint(&w, "tid", stream_of[id]);
      dr__json_member_double(&w, "ts", base + st[id], 3);
      dr__json_member_double(&w, "dur", MAX(en[id] - st[id], 0.0), 3);
      dr__json_key(&w, "args");
      dr__json_begin_object(&w);
      dr__json_member_uint(&w, "iteration", it);
      dr__json_end_object(&w);
      dr__json_end_object(&w);
    }
    for (guint f = 0; f < r->flows->len; f++) {
      const DrReportFlow *fl = &g_array_index(r->flows, DrReportFlow, f);
      if (isnan(en[fl->from]) || isnan(st[fl->to])) continue;
      flow(&w, "s", flow_id, stream_of[fl->from], base + MAX(en[fl->from] - 0.001, st[fl->from]));
      flow(&w, "f", flow_id, stream_of[fl->to], base + st[fl->to]);
      flow_id++;
    }
  }
  dr__json_end_array(&w);
  dr__json_end_object(&w);
  dr__json_finish(&w);
  g_string_append_c(out, '\n');
}
