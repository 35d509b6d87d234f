/* memory_track.c: live device bytes over time, drawn from a report's
 * timed samples: the "device 0 memory" counter track of the Perfetto
 * trace (trace.c) and the memory track under the lanes of the SVG
 * timeline (timeline.c), both called from there. Not the plan's figures
 * (scheduler/memory.c) nor what the backend measured.
 *
 * The model: whole-run bytes all the time, plus each stream-ordered
 * lifetime's pool bytes (r->mem_delta) from its alloc node's start to its
 * free node's end, so the track never shows less than the device can
 * hold at a moment. At one instant, what ends is taken away before what
 * starts is added (a hand-over from a free to an alloc is no overlap).
 * Untimed nodes are left out. dagrun runs one device today: one track.
 * Cost: O(k log k) for k timed alloc and free nodes. */
#include <math.h>

#include "report/memory_track.h"
#include "report/num.h"

typedef struct {
  double ts;
  gint64 delta;
} Step;

static int step_cmp(const void *a, const void *b) {
  const Step *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->delta > y->delta) - (x->delta < y->delta); /* frees first */
}

/* The steps of the live-bytes curve of one iteration into `steps`. */
static void collect(const DrReport *r, const double *st, const double *en, GArray *steps) {
  g_array_set_size(steps, 0);
  for (guint32 v = 0; v < r->n_graph_nodes; v++) {
    gint64 d = r->mem_delta[v];
    if (d == 0 || isnan(st[v]) || isnan(en[v])) continue;
    Step s = {d > 0 ? st[v] : MAX(en[v], st[v]), d};
    g_array_append_val(steps, s);
  }
  g_array_sort(steps, step_cmp);
}

void dr__trace_memory_counter(DrJsonWriter *w, const DrReport *r, const double *st, const double *en,
                              double base) {
  if (r->mem_delta == NULL) return;
  g_autoptr(GArray) scratch = g_array_new(FALSE, FALSE, sizeof(Step));
  collect(r, st, en, scratch);
  gint64 live = (gint64)r->whole_run_bytes;
  for (guint i = 0; i < scratch->len; i++) {
    const Step *s = &g_array_index(scratch, Step, i);
    live += s->delta;
    if (i + 1 < scratch->len && g_array_index(scratch, Step, i + 1).ts == s->ts) continue;
    dr__json_begin_object(w);
    dr__json_member_string(w, "name", "device 0 memory");
    dr__json_member_string(w, "ph", "C");
    dr__json_member_uint(w, "pid", 1);
    dr__json_member_double(w, "ts", base + s->ts, 3);
    dr__json_key(w, "args");
    dr__json_begin_object(w);
    dr__json_member_uint(w, "bytes", (guint64)MAX(live, 0));
    dr__json_end_object(w);
    dr__json_end_object(w);
  }
}

double dr__timeline_memory_height(const DrReport *r) { return r->mem_delta ? DR_MEMORY_TRACK_H : 0; }

void dr__timeline_memory_track(const DrReport *r, const double *t_start, const double *t_end, double x0,
                               double scale, double span, double y, double width, GString *out) {
  if (r->mem_delta == NULL) return;
  g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(Step));
  collect(r, t_start, t_end, steps);
  gint64 live = (gint64)r->whole_run_bytes, peak = live;
  for (guint i = 0; i < steps->len; i++) {
    live += g_array_index(steps, Step, i).delta;
    peak = MAX(peak, live);
  }
  double top = y + 18, h = DR_MEMORY_TRACK_H - 26; /* label above, margin below */
  dr__num_appendf(out, "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" fill=\"#fbfbf4\"/>\n", y, width,
                  DR_MEMORY_TRACK_H);
  dr__num_appendf(out, "<text x=\"8\" y=\"%.0f\">device 0 memory</text>\n", y + 14);
  g_string_append(out, "<text x=\"8\" y=\"");
  dr__num_appendf(out, "%.0f\" fill=\"#555\">peak ", y + 28);
  dr__num_size_iec(out, (guint64)MAX(peak, 0));
  g_string_append(out, "</text>\n");
  double ys = peak > 0 ? h / (double)peak : 0;
  live = (gint64)r->whole_run_bytes;
  dr__num_appendf(out, "<polyline fill=\"none\" stroke=\"#7a5c00\" stroke-width=\"1.2\" points=\"%.1f,%.1f",
                  x0, top + h - live * ys);
  for (guint i = 0; i < steps->len; i++) {
    const Step *s = &g_array_index(steps, Step, i);
    double x = x0 + s->ts * scale;
    dr__num_appendf(out, " %.1f,%.1f", x, top + h - live * ys);
    live += s->delta;
    dr__num_appendf(out, " %.1f,%.1f", x, top + h - live * ys);
  }
  dr__num_appendf(out, " %.1f,%.1f\">", x0 + span * scale, top + h - live * ys);
  /* A <desc>, not a <title>: every <title> of the timeline names nodes. */
  g_string_append(out,
                  "<desc>live device bytes: whole-run buffers plus each stream-ordered lifetime from "
                  "its alloc's start to its free's end</desc></polyline>\n");
}
