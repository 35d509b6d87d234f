/* timeline.c: --timeline, a self-contained SVG picture of one iteration of
 * a run: the median iteration (the timed iteration whose makespan is
 * closest to the median makespan), drawn from its own samples so that bars
 * on one stream never overlap as a mix of medians from different
 * iterations could; each tooltip also gives the node's median, min and
 * max duration over all iterations.
 *
 * Layout: a title line, a time axis, then one lane per plan stream
 * (labelled with its number and priority, and its device when the run
 * drives several: lanes are grouped per device) of fixed height, a bar per node
 * coloured by op, arrows for the planned cross-stream waits, and a legend
 * of the ops present. Lanes never grow with the node count; the width does
 * (about 24 px per node of the busiest lane, between 900 and 6000 px: a
 * browser's time to draw the picture grows with its pixels far more than
 * with its elements, BENCHMARKS.md §7), so 10 nodes and 1000 both stay
 * readable; an id is written on its bar only when it fits, and every node
 * has a <title> tooltip. With too many waits to draw them all, a node's
 * bar carries its own waits' arrows hidden, shown while the pointer is on
 * it (CSS :hover; up to DR_TIMELINE_HOVER_WAITS_MAX arrows in all). A loop
 * node's bar shades every other trip of the drawn iteration (the trips
 * the backend timed, DrTripSpan) and its tooltip counts them. Everything is
 * escaped, so any node id makes valid XML, and every number is written in
 * the C locale (num.h), so coordinates parse whatever the process's
 * locale. This file draws only: the report is built by backends/run.c. */
#include <math.h>
#include <string.h>

#include "report/memory_track.h"
#include "report/num.h"
#include "report/report.h"

enum {
  LEFT = 120, /* lane labels */
  RIGHT = 30,
  TITLE_H = 28,
  AXIS_H = 26,
  LANE_H = 30,
  BAR_H = 20,
  LEGEND_H = 34,
  CHAR_W = 7, /* approximate width of a label character at 11 px */
  MIN_PLOT_W = 900,
  MAX_PLOT_W = 6000,
  PX_PER_NODE = 24, /* of the busiest lane */
};

/* Fill colours by op (Tableau 10). */
static const char *const op_colors[DR_N_OPS] = {
    [DR_OP_KERNEL] = "#4e79a7",   [DR_OP_COPY] = "#f28e2b",      [DR_OP_MEMSET] = "#76b7b2",
    [DR_OP_ALLOC] = "#59a14f",    [DR_OP_FREE] = "#edc948",      [DR_OP_HOST] = "#e15759",
    [DR_OP_NOOP] = "#bab0ac",     [DR_OP_ALLREDUCE] = "#b07aa1", [DR_OP_BROADCAST] = "#b07aa1",
    [DR_OP_REDUCE] = "#b07aa1",   [DR_OP_ALLGATHER] = "#b07aa1", [DR_OP_REDUCESCATTER] = "#b07aa1",
    [DR_OP_ALLTOALL] = "#b07aa1", [DR_OP_SEND] = "#ff9da7",      [DR_OP_RECV] = "#ff9da7",
};

static void xml_text(GString *out, const char *s) {
  for (const char *p = s ? s : ""; *p; p++) {
    switch (*p) {
      case '&':
        g_string_append(out, "&amp;");
        break;
      case '<':
        g_string_append(out, "&lt;");
        break;
      case '>':
        g_string_append(out, "&gt;");
        break;
      case '"':
        g_string_append(out, "&quot;");
        break;
      case '\'':
        g_string_append(out, "&apos;");
        break;
      default:
        /* XML 1.0 forbids most control characters even escaped. */
        if ((unsigned char)*p < 0x20 && *p != '\t' && *p != '\n')
          g_string_append_c(out, '?');
        else
          g_string_append_c(out, *p);
    }
  }
}

/* A "nice" tick step (1, 2 or 5 × 10^k µs) giving ticks about every
 * `target_px` pixels. */
static double tick_step(double span_us, double plot_w, double target_px) {
  double raw = span_us * target_px / plot_w;
  double p = pow(10, floor(log10(raw)));
  if (raw <= p) return p;
  if (raw <= 2 * p) return 2 * p;
  if (raw <= 5 * p) return 5 * p;
  return 10 * p;
}

/* A tick label: µs below 2 ms of span, else ms; no trailing zeros. */
static void tick_label(GString *out, double us, gboolean ms, double step) {
  double v = ms ? us / 1000.0 : us;
  double st = ms ? step / 1000.0 : step;
  int decimals = st >= 1 ? 0 : (int)ceil(-log10(st) - 1e-9);
  dr__num_appendf(out, "%.*f %s", MIN(decimals, 6), v, ms ? "ms" : "\xc2\xb5s");
}

/* The timed iteration whose makespan is closest to the median, or -1
 * when no iteration has one. */
static gint64 median_iteration(const DrReport *r) {
  gint64 best = -1;
  for (guint32 i = 0; i < r->iterations; i++) {
    double m = r->iter_makespan_us[i];
    if (isnan(m)) continue;
    if (best < 0 || fabs(m - r->makespan_us) < fabs(r->iter_makespan_us[best] - r->makespan_us)) best = i;
  }
  return best;
}

/* One timed node on its lane, in the drawn iteration. */
typedef struct {
  const DrNodeReport *nr;
  double t0, t1;
} Bar;

static int bar_cmp(const void *a, const void *b) {
  const Bar *x = a, *y = b;
  if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
  return x->nr->node < y->nr->node ? -1 : x->nr->node > y->nr->node;
}

/* The timed nodes of each lane (GArray of Bar), in start order. */
/* Stream s's device (0 when the report does not say). */
static gint32 stream_device(const DrReport *r, guint32 s) {
  return r->stream_devices && s < r->stream_devices->len ? g_array_index(r->stream_devices, gint32, s) : 0;
}

static GArray *lane_bars(const DrReport *r, const double *t_start, const double *t_end, guint32 n_streams) {
  GArray *lanes = g_array_new(FALSE, FALSE, sizeof(GArray *));
  for (guint32 s = 0; s < n_streams; s++) {
    GArray *l = g_array_new(FALSE, FALSE, sizeof(Bar));
    g_array_append_val(lanes, l);
  }
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    double t0 = t_start[nr->node], t1 = t_end[nr->node];
    if (nr->stream >= n_streams || isnan(t0) || isnan(t1)) continue;
    Bar b = {nr, t0, MAX(t1, t0)};
    g_array_append_val(g_array_index(lanes, GArray *, nr->stream), b);
  }
  for (guint32 s = 0; s < n_streams; s++) g_array_sort(g_array_index(lanes, GArray *, s), bar_cmp);
  return lanes;
}

typedef struct {
  const DrReport *r;
  const double *t_start, *t_end;
  double scale, lanes_top;
  const guint32 *row; /* [stream]: its lane's row from the top (lanes grouped per device) */
  double min_px;      /* bars narrower than this merge with their neighbours */
  const gboolean *critical;
  guint32 merged; /* runs drawn merged */
  /* Hover arrows: when set, the waits into node v are flows
   * in_flow[in_first[v] .. in_first[v + 1]) of r->flows; drawn hidden in
   * v's bar group while hover_left lasts. */
  const guint32 *in_first, *in_flow;
  const DrNodeReport *const *info;
  guint32 hover_left;
  /* The drawn iteration's trips of top-level loops: node v's are spans
   * trip_span[trip_first[v] .. trip_first[v + 1]), in trip order, and its
   * loop's count trip_count[v] (NULL: none). */
  const guint32 *trip_first;
  const DrTripSpan *const *trip_span;
  const DrTripCount *const *trip_count;
} Layout;

/* The runs of a lane: a bar at least min_px wide stands alone; narrower
 * bars merge into a run while each starts within min_px of the run's
 * end. Calls `emit` (when not NULL) with each run [first, last] of the
 * lane's bars; returns the number of runs. */
typedef void (*RunFn)(Layout *lay, const GArray *lane, guint first, guint last, guint32 s, GString *out);

static guint32 plan_lane(Layout *lay, const GArray *lane, guint32 s, RunFn emit, GString *out) {
  guint32 runs = 0;
  guint i = 0;
  while (i < lane->len) {
    const Bar *b = &g_array_index(lane, Bar, i);
    guint j = i + 1;
    if ((b->t1 - b->t0) * lay->scale < lay->min_px) {
      double end = b->t1 * lay->scale;
      while (j < lane->len) {
        const Bar *c = &g_array_index(lane, Bar, j);
        if ((c->t1 - c->t0) * lay->scale >= lay->min_px || c->t0 * lay->scale > end + lay->min_px) break;
        end = MAX(end, c->t1 * lay->scale);
        j++;
      }
    }
    if (emit) emit(lay, lane, i, j - 1, s, out);
    runs++;
    i = j;
  }
  return runs;
}

static guint64 count_elements(Layout *lay, const GArray *lanes) {
  guint64 total = 0;
  for (guint32 s = 0; s < lanes->len; s++)
    total += plan_lane(lay, g_array_index(lanes, GArray *, s), s, NULL, NULL);
  return total;
}

static guint32 arrow(const Layout *lay, const DrNodeReport *const *info, DrId u, DrId v, const char *cls,
                     GString *out);

/* A loop node's trips inside its bar: every other trip shaded lighter, so
 * each trip boundary shows (trips the bound left out are a gap with the
 * bar's own colour). */
static void trip_shades(const Layout *lay, DrId v, double y, GString *out) {
  for (guint32 k = lay->trip_first[v]; k < lay->trip_first[v + 1]; k++) {
    const DrTripSpan *sp = lay->trip_span[k];
    if (sp->trip % 2 == 0) continue;
    double x0 = LEFT + sp->start_us * lay->scale, x1 = LEFT + sp->end_us * lay->scale;
    dr__num_appendf(out,
                    "<rect class=\"trip\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                    "fill=\"#fff\" fill-opacity=\"0.35\"/>",
                    x0, y + 2, MAX(x1 - x0, 0.5), BAR_H - 4);
  }
}

/* Draws one run: a single node's bar with its tooltip and, when it fits,
 * its id; or a merged run as one bar whose tooltip lists its nodes. */
static void draw_run(Layout *lay, const GArray *lane, guint first, guint last, guint32 s, GString *out) {
  const Bar *a = &g_array_index(lane, Bar, first);
  double y = lay->lanes_top + lay->row[s] * LANE_H + (LANE_H - BAR_H) / 2.0;
  if (first == last) {
    const DrNodeReport *nr = a->nr;
    gboolean hover = lay->in_first && lay->in_first[nr->node + 1] > lay->in_first[nr->node];
    g_string_append(out, hover ? "<g class=\"h\"><title>" : "<g><title>");
    xml_text(out, nr->id);
    dr__num_appendf(out,
                    " (%s), stream %u, start %.1f \xc2\xb5s, duration %.1f \xc2\xb5s; over all iterations: "
                    "median %.1f, min %.1f, max %.1f \xc2\xb5s",
                    dr_op_name(nr->op), nr->stream, a->t0, a->t1 - a->t0, nr->duration_us,
                    nr->duration_min_us, nr->duration_max_us);
    const DrTripCount *tc = lay->trip_count ? lay->trip_count[nr->node] : NULL;
    if (tc != NULL) {
      dr__num_appendf(out, "; %" G_GUINT64_FORMAT " trips in this iteration", tc->trips);
      if (tc->dropped) dr__num_appendf(out, ", %" G_GUINT64_FORMAT " of them not drawn", tc->dropped);
    }
    g_string_append(out, "</title>");
    double x = LEFT + a->t0 * lay->scale, w = MAX((a->t1 - a->t0) * lay->scale, 1.0);
    /* A bar too narrow for an outline: the critical path's is black. */
    gboolean crit = lay->critical[nr->node], thin = w < 4;
    dr__num_appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"", x, y, w,
                    BAR_H, thin && crit ? "#000" : op_colors[nr->op]);
    if (thin)
      g_string_append(out, "/>");
    else if (crit)
      g_string_append(out, " stroke=\"#000\" stroke-width=\"1.5\"/>");
    else
      g_string_append(out, " stroke=\"#222\" stroke-width=\"0.4\"/>");
    if (lay->trip_first != NULL && !thin) trip_shades(lay, nr->node, y, out);
    if (w >= (double)strlen(nr->id) * CHAR_W + 6) {
      dr__num_appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"white\">", x + w / 2,
                      y + BAR_H / 2.0 + 4);
      xml_text(out, nr->id);
      g_string_append(out, "</text>");
    }
    for (guint32 k = hover ? lay->in_first[nr->node] : 0;
         hover && k < lay->in_first[nr->node + 1] && lay->hover_left > 0; k++) {
      const DrReportFlow *fl = &g_array_index(lay->r->flows, DrReportFlow, lay->in_flow[k]);
      g_string_append_c(out, '\n');
      lay->hover_left -= arrow(lay, lay->info, fl->from, fl->to, "w", out);
    }
    g_string_append(out, "</g>\n");
    return;
  }
  /* A merged run: "N nodes (op ×k, ...), stream S, ...; ids: a, b". */
  guint32 ops[DR_N_OPS] = {0};
  double busy = 0, end = a->t0;
  gboolean crit = FALSE;
  for (guint k = first; k <= last; k++) {
    const Bar *b = &g_array_index(lane, Bar, k);
    ops[b->nr->op]++;
    busy += b->t1 - b->t0;
    end = MAX(end, b->t1);
    crit |= lay->critical[b->nr->node];
  }
  int only = -1;
  for (int op = 0; op < DR_N_OPS; op++)
    if (ops[op]) only = only == -1 ? op : -2;
  dr__num_appendf(out, "<g><title>%u nodes (", last - first + 1);
  gboolean sep = FALSE;
  for (int op = 0; op < DR_N_OPS; op++)
    if (ops[op]) {
      dr__num_appendf(out, "%s%s \xc3\x97%u", sep ? ", " : "", dr_op_name((DrOp)op), ops[op]);
      sep = TRUE;
    }
  dr__num_appendf(out,
                  "), stream %u, %.1f to %.1f \xc2\xb5s, busy %.1f \xc2\xb5s; each narrower than %.0f px, "
                  "merged; ids: ",
                  s, a->t0, end, busy, lay->min_px);
  for (guint k = first; k <= last; k++) {
    if (k > first) g_string_append(out, ", ");
    xml_text(out, g_array_index(lane, Bar, k).nr->id);
  }
  double x = LEFT + a->t0 * lay->scale, w = MAX((end - a->t0) * lay->scale, 1.0);
  double fill = CLAMP(busy / MAX(end - a->t0, 1e-9), 0.3, 1.0);
  dr__num_appendf(out,
                  "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                  "fill-opacity=\"%.2f\"%s/></g>\n",
                  x, y, w, BAR_H,
                  crit && w < 4 ? "#000"
                  : only >= 0   ? op_colors[only]
                                : "#777777",
                  crit && w < 4 ? 1.0 : fill, crit && w >= 4 ? " stroke=\"#000\" stroke-width=\"1.5\"" : "");
  lay->merged++;
}

static void draw_lane(Layout *lay, const GArray *lane, guint32 s, GString *out) {
  plan_lane(lay, lane, s, draw_run, out);
}

/* Nodes that were not timed: one tooltip per lane listing them. */
static void untimed_titles(const DrReport *r, const double *t_start, const double *t_end, guint32 n_streams,
                           GString *out) {
  for (guint32 s = 0; s <= n_streams; s++) {
    guint32 count = 0;
    g_autoptr(GString) ids = g_string_new(NULL);
    for (guint i = 0; i < r->nodes->len; i++) {
      const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
      gboolean lane = s == n_streams ? nr->stream >= n_streams : nr->stream == s;
      if (!lane || !(isnan(t_start[nr->node]) || isnan(t_end[nr->node]))) continue;
      if (count++) g_string_append(ids, ", ");
      xml_text(ids, nr->id);
    }
    if (count == 1 && s < n_streams)
      dr__num_appendf(out, "<g><title>%s (not timed), stream %u</title></g>\n", ids->str, s);
    else if (count > 0)
      dr__num_appendf(out, "<g><title>%u nodes (not timed), stream %u; ids: %s</title></g>\n", count, s,
                      ids->str);
  }
}

/* Draws the arrow of u -> v (v waits for u); returns 1, or 0 when one of
 * them was not timed. */
static guint32 arrow(const Layout *lay, const DrNodeReport *const *info, DrId u, DrId v, const char *cls,
                     GString *out) {
  guint32 n = lay->r->n_graph_nodes;
  const DrNodeReport *a = u < n ? info[u] : NULL, *b = v < n ? info[v] : NULL;
  if (a == NULL || b == NULL || isnan(lay->t_end[u]) || isnan(lay->t_start[v])) return 0;
  double x1 = LEFT + lay->t_end[u] * lay->scale, x2 = LEFT + lay->t_start[v] * lay->scale;
  double y1 = lay->lanes_top + lay->row[a->stream] * LANE_H + LANE_H / 2.0,
         y2 = lay->lanes_top + lay->row[b->stream] * LANE_H + LANE_H / 2.0;
  y2 += y2 > y1 ? -BAR_H / 2.0 : BAR_H / 2.0; /* to the bar's edge facing the arrow */
  y1 += y2 > y1 ? BAR_H / 2.0 : -BAR_H / 2.0;
  g_string_append(out, "<line");
  if (cls) g_string_append_printf(out, " class=\"%s\"", cls);
  dr__num_appendf(out,
                  " x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                  "stroke-opacity=\"0.6\" stroke-width=\"0.8\" marker-end=\"url(#arrow)\"/>%s",
                  x1, y1, x2, y2, cls ? "" : "\n");
  return 1;
}

void dr_timeline_write_svg(const DrReport *r, const DrPlan *plan, GString *out) {
  /* The report carries every plan fact drawn here; the plan only has to be
   * the one it was made from. */
  g_return_if_fail(plan != NULL && plan->steps->len == r->nodes->len);
  gint64 it = median_iteration(r);
  /* Node v's start and end in the drawn iteration (NAN: not timed). */
  g_autofree double *t_start = g_new(double, MAX(r->n_graph_nodes, 1));
  g_autofree double *t_end = g_new(double, MAX(r->n_graph_nodes, 1));
  for (guint32 v = 0; v < r->n_graph_nodes; v++) {
    t_start[v] = it < 0 ? NAN : r->sample_start[(gsize)it * r->n_graph_nodes + v];
    t_end[v] = it < 0 ? NAN : r->sample_end[(gsize)it * r->n_graph_nodes + v];
  }
  guint32 n_streams = r->stream_priorities->len, n = r->n_graph_nodes;
  g_autofree const DrNodeReport **info = g_new0(const DrNodeReport *, MAX(n, 1));
  g_autofree guint32 *per_lane = g_new0(guint32, MAX(n_streams, 1));
  gboolean op_seen[DR_N_OPS] = {FALSE};
  double span = it < 0 ? 0 : r->iter_makespan_us[it];
  guint32 busiest = 1, untimed = 0;
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    info[nr->node] = nr;
    op_seen[nr->op] = TRUE;
    if (nr->stream < n_streams) busiest = MAX(busiest, ++per_lane[nr->stream]);
    if (isnan(t_start[nr->node]) || isnan(t_end[nr->node]))
      untimed++;
    else
      span = MAX(span, t_end[nr->node]);
  }
  if (!(span > 0)) span = 1;
  double plot_w = CLAMP((double)busiest * PX_PER_NODE, MIN_PLOT_W, MAX_PLOT_W);
  double scale = plot_w / span; /* px per µs */
  double width = LEFT + plot_w + RIGHT;
  double lanes_top = TITLE_H + AXIS_H;
  double lanes_h = (double)MAX(n_streams, 1) * LANE_H;
  double mem_h = dr__timeline_memory_height(r);
  double height = lanes_top + lanes_h + mem_h + LEGEND_H + (untimed ? 18 : 0);

  dr__num_appendf(out,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
                  width, height, width, height);
  g_string_append(out,
                  "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"6\" "
                  "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#333\"/></marker>"
                  "</defs>\n<style>.w{display:none}.h:hover .w{display:inline}</style>\n");
  dr__num_appendf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width,
                  height);

  /* Title. */
  g_string_append(out, "<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">");
  xml_text(out, r->name);
  dr__num_appendf(out, " \xe2\x80\x94 %s/%s, the median of %u iterations", r->backend,
                  r->mode ? r->mode : "?", r->iterations);
  if (it >= 0) dr__num_appendf(out, " (#%" G_GINT64_FORMAT ")", it);
  g_string_append(out, ": makespan ");
  if (it < 0)
    g_string_append(out, "-");
  else
    dr__num_appendf(out, "%.1f \xc2\xb5s", r->iter_makespan_us[it]);
  if (!isnan(r->critical_path_us))
    dr__num_appendf(out, ", critical path %.1f \xc2\xb5s, overlap %.2f", r->critical_path_us,
                    r->overlap_streams);
  g_string_append(out, "</text>\n");

  /* Lanes, grouped per device: the streams of one device next to each
   * other in stream order, devices in the order their first stream
   * appears, a collective's over several devices last; with several
   * devices each label names its device and a rule separates them. */
  g_autofree guint32 *row = g_new0(guint32, MAX(n_streams, 1));
  g_autofree guint32 *at_row = g_new0(guint32, MAX(n_streams, 1));
  {
    g_autoptr(GArray) devs = g_array_new(FALSE, FALSE, sizeof(gint32));
    for (guint32 s = 0; s < n_streams; s++) {
      gint32 d = stream_device(r, s);
      guint k = 0;
      while (k < devs->len && g_array_index(devs, gint32, k) != d) k++;
      if (k == devs->len) g_array_append_val(devs, d);
    }
    guint32 next = 0;
    for (int pass = 0; pass < 2; pass++) /* devices, then "all devices" */
      for (guint k = 0; k < devs->len; k++) {
        gint32 d = g_array_index(devs, gint32, k);
        if ((d < 0) != (pass == 1)) continue;
        for (guint32 s = 0; s < n_streams; s++)
          if (stream_device(r, s) == d) at_row[row[s] = next++] = s;
      }
  }
  for (guint32 k = 0; k < n_streams; k++) {
    guint32 s = at_row[k];
    double y = lanes_top + k * LANE_H;
    dr__num_appendf(out, "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n", y, width,
                    LANE_H, k % 2 ? "#ffffff" : "#f2f2f2");
    const char *prio = dr_priority_name(g_array_index(r->stream_priorities, DrPriority, s));
    gint32 d = stream_device(r, s);
    if (!r->multi_device)
      dr__num_appendf(out, "<text x=\"8\" y=\"%.0f\">stream %u (%s)</text>\n", y + LANE_H / 2 + 4, s, prio);
    else if (d < 0)
      dr__num_appendf(out, "<text x=\"8\" y=\"%.0f\">all: stream %u (%s)</text>\n", y + LANE_H / 2 + 4, s,
                      prio);
    else
      dr__num_appendf(out, "<text x=\"8\" y=\"%.0f\">dev %d: stream %u (%s)</text>\n", y + LANE_H / 2 + 4, d,
                      s, prio);
    if (r->multi_device && k > 0 && stream_device(r, at_row[k - 1]) != d)
      dr__num_appendf(out, "<line x1=\"0\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n", y, width,
                      y);
  }

  /* Time axis: ticks across the lanes, labels above them. */
  double step = tick_step(span, plot_w, 100);
  gboolean ms = span >= 2000;
  dr__num_appendf(out, "<line x1=\"%d\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>\n", LEFT,
                  lanes_top, LEFT + plot_w, lanes_top);
  for (guint k = 0; k * step <= span * 1.0000001 && k < 10000; k++) {
    double x = LEFT + k * step * scale;
    dr__num_appendf(out,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ccc\" "
                    "stroke-width=\"0.5\"/>\n",
                    x, lanes_top - 4, x, lanes_top + lanes_h);
    dr__num_appendf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">", x, lanes_top - 8);
    tick_label(out, k * step, ms, step);
    g_string_append(out, "</text>\n");
  }

  /* Bars: per lane in start order, sub-pixel runs merged (see plan_lane). */
  Layout lay = {
      .r = r, .t_start = t_start, .t_end = t_end, .scale = scale, .lanes_top = lanes_top, .row = row};
  g_autoptr(GArray) lanes = lane_bars(r, t_start, t_end, n_streams);
  lay.min_px = 1.0;
  for (guint k = 0; k < 24 && count_elements(&lay, lanes) > DR_TIMELINE_ELEMENT_BUDGET; k++) lay.min_px *= 2;
  g_autofree gboolean *critical = g_new0(gboolean, MAX(n, 1));
  for (guint i = 0; r->critical_nodes && i < r->critical_nodes->len; i++) {
    DrId v = g_array_index(r->critical_nodes, DrId, i);
    if (v < n) critical[v] = TRUE;
  }
  lay.critical = critical;
  /* Too many waits to draw: each node's own, on hover (flows by target,
   * a counting sort). */
  gboolean all_waits = r->flows->len <= DR_TIMELINE_ALL_WAITS_MAX;
  g_autofree guint32 *in_first = NULL, *in_flow = NULL;
  if (!all_waits) {
    in_first = g_new0(guint32, n + 1);
    in_flow = g_new(guint32, MAX(r->flows->len, 1));
    for (guint f = 0; f < r->flows->len; f++)
      if (g_array_index(r->flows, DrReportFlow, f).to < n)
        in_first[g_array_index(r->flows, DrReportFlow, f).to + 1]++;
    for (guint32 v = 0; v < n; v++) in_first[v + 1] += in_first[v];
    g_autofree guint32 *fill = g_memdup2(in_first, sizeof(guint32) * (n + 1));
    for (guint f = 0; f < r->flows->len; f++) {
      DrId to = g_array_index(r->flows, DrReportFlow, f).to;
      if (to < n) in_flow[fill[to]++] = f;
    }
    lay.in_first = in_first;
    lay.in_flow = in_flow;
    lay.info = info;
    lay.hover_left = DR_TIMELINE_HOVER_WAITS_MAX;
  }
  /* The drawn iteration's top-level trips by node (a counting sort). */
  g_autofree guint32 *trip_first = NULL;
  g_autofree const DrTripSpan **trip_span = NULL;
  g_autofree const DrTripCount **trip_count = NULL;
  if (it >= 0 && r->trip_spans != NULL) {
    trip_first = g_new0(guint32, n + 1);
    trip_span = g_new0(const DrTripSpan *, MAX(r->trip_spans->len, 1));
    trip_count = g_new0(const DrTripCount *, MAX(n, 1));
    for (guint i = 0; i < r->trip_counts->len; i++) {
      const DrTripCount *c = &g_array_index(r->trip_counts, DrTripCount, i);
      if (c->iteration == it && c->node < n && info[c->node] && strcmp(c->loop, info[c->node]->id) == 0)
        trip_count[c->node] = c;
    }
    for (guint i = 0; i < r->trip_spans->len; i++) {
      const DrTripSpan *sp = &g_array_index(r->trip_spans, DrTripSpan, i);
      if (sp->iteration == it && sp->depth == 0 && sp->node < n) trip_first[sp->node + 1]++;
    }
    for (guint32 v = 0; v < n; v++) trip_first[v + 1] += trip_first[v];
    g_autofree guint32 *fill = g_memdup2(trip_first, sizeof(guint32) * (n + 1));
    for (guint i = 0; i < r->trip_spans->len; i++) {
      const DrTripSpan *sp = &g_array_index(r->trip_spans, DrTripSpan, i);
      if (sp->iteration == it && sp->depth == 0 && sp->node < n) trip_span[fill[sp->node]++] = sp;
    }
    lay.trip_first = trip_first;
    lay.trip_span = trip_span;
    lay.trip_count = trip_count;
  }
  for (guint32 s = 0; s < lanes->len; s++) draw_lane(&lay, g_array_index(lanes, GArray *, s), s, out);
  for (guint32 s = 0; s < lanes->len; s++) g_array_unref(g_array_index(lanes, GArray *, s));
  untimed_titles(r, t_start, t_end, n_streams, out);

  /* Wait arrows, from the waited node's end to the waiting node's start:
   * every planned wait when there are few, else only the cross-stream
   * steps of the critical path (at 1000 nodes all of them would hide the
   * bars; the trace has every one), and each node's on hover (above). */
  guint32 arrows = 0;
  if (all_waits) {
    for (guint f = 0; f < r->flows->len; f++) {
      const DrReportFlow *fl = &g_array_index(r->flows, DrReportFlow, f);
      arrows += arrow(&lay, info, fl->from, fl->to, NULL, out);
    }
  } else {
    for (guint i = 1; r->critical_nodes && i < r->critical_nodes->len && arrows < DR_TIMELINE_PATH_ARROWS_MAX;
         i++) {
      DrId u = g_array_index(r->critical_nodes, DrId, i - 1), v = g_array_index(r->critical_nodes, DrId, i);
      if (u < n && v < n && info[u] && info[v] && info[u]->stream != info[v]->stream)
        arrows += arrow(&lay, info, u, v, NULL, out);
    }
  }

  dr__timeline_memory_track(r, t_start, t_end, LEFT, scale, span, lanes_top + lanes_h, width, out);

  /* Legend of the ops present, and a note on untimed nodes. */
  double ly = lanes_top + lanes_h + mem_h + 20, lx = LEFT;
  for (int op = 0; op < DR_N_OPS; op++) {
    if (!op_seen[op]) continue;
    dr__num_appendf(out,
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#222\" "
                    "stroke-width=\"0.4\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                    lx, ly - 10, op_colors[op], lx + 16, ly, dr_op_name((DrOp)op));
    lx += 16 + strlen(dr_op_name((DrOp)op)) * CHAR_W + 18;
  }
  if (all_waits)
    dr__num_appendf(out, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">arrows: cross-stream waits", lx + 10, ly);
  else
    dr__num_appendf(out,
                    "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">arrows: %s%u cross-stream steps of the "
                    "critical path (of %u waits: hover a bar for its own, --trace has them all)",
                    lx + 10, ly, arrows >= DR_TIMELINE_PATH_ARROWS_MAX ? "the first " : "the ", arrows,
                    r->flows->len);
  g_string_append(out, "; black: the critical path");
  if (lay.merged > 0)
    dr__num_appendf(out, "; pale bars: %u runs of nodes narrower than %.0f px, merged (hover: their ids)",
                    lay.merged, lay.min_px);
  g_string_append(out, "</text>\n");
  if (untimed)
    dr__num_appendf(out,
                    "<text x=\"%d\" y=\"%.0f\" fill=\"#555\">%u nodes were not timed (--timing=off)</text>\n",
                    LEFT, ly + 18, untimed);
  g_string_append(out, "</svg>\n");
}
