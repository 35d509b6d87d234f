/* timeline.c: --timeline, a self-contained SVG picture of one iteration of
 * a run: the median iteration (the timed iteration whose makespan is
 * closest to the median makespan), drawn from its own samples so that bars
 * on one stream never overlap as a mix of medians from different
 * iterations could; each tooltip also gives the node's median, min and
 * max duration over all iterations.
 *
 * Layout: a title line, a time axis, then one lane per plan stream
 * (labelled with its number and priority) of fixed height, a bar per node
 * coloured by op, arrows for the planned cross-stream waits, and a legend
 * of the ops present. Lanes never grow with the node count; the width does
 * (about 40 px per node of the busiest lane, between 900 and 16000 px), so
 * 10 nodes and 1000 both stay readable; an id is written on its bar only
 * when it fits, and every node has a <title> tooltip. Everything is
 * escaped, so any node id makes valid XML, and every number is written in
 * the C locale (num.h), so coordinates parse whatever the process's
 * locale. This file draws only: the report is built by backends/run.c. */
#include <math.h>
#include <string.h>

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
  MAX_PLOT_W = 16000,
  PX_PER_NODE = 40, /* of the busiest lane */
};

/* Fill colours by op (Tableau 10). */
static const char *const op_colors[DR_N_OPS] = {
    [DR_OP_KERNEL] = "#4e79a7", [DR_OP_COPY] = "#f28e2b", [DR_OP_MEMSET] = "#76b7b2",
    [DR_OP_ALLOC] = "#59a14f",  [DR_OP_FREE] = "#edc948", [DR_OP_HOST] = "#e15759",
    [DR_OP_NOOP] = "#bab0ac",
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
  double height = lanes_top + lanes_h + LEGEND_H + (untimed ? 18 : 0);

  dr__num_appendf(out,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
                  width, height, width, height);
  g_string_append(out,
                  "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"6\" "
                  "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"#333\"/></marker>"
                  "</defs>\n");
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

  /* Lanes. */
  for (guint32 s = 0; s < n_streams; s++) {
    double y = lanes_top + s * LANE_H;
    dr__num_appendf(out, "<rect x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" fill=\"%s\"/>\n", y, width,
                    LANE_H, s % 2 ? "#ffffff" : "#f2f2f2");
    dr__num_appendf(out, "<text x=\"8\" y=\"%.0f\">stream %u (%s)</text>\n", y + LANE_H / 2 + 4, s,
                    dr_priority_name(g_array_index(r->stream_priorities, DrPriority, s)));
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

  /* Bars, each with its tooltip; untimed nodes keep only the tooltip. */
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    g_string_append(out, "<g><title>");
    xml_text(out, nr->id);
    dr__num_appendf(out, " (%s), stream %u", dr_op_name(nr->op), nr->stream);
    double t0 = t_start[nr->node], t1 = t_end[nr->node];
    if (isnan(t0) || isnan(t1)) {
      g_string_append(out, ", not timed</title></g>\n");
      continue;
    }
    dr__num_appendf(
        out,
        ", start %.1f \xc2\xb5s, duration %.1f \xc2\xb5s; over all iterations: median %.1f, min %.1f, "
        "max %.1f \xc2\xb5s</title>",
        t0, t1 - t0, nr->duration_us, nr->duration_min_us, nr->duration_max_us);
    double x = LEFT + t0 * scale, w = MAX((t1 - t0) * scale, 1.0);
    double y = lanes_top + nr->stream * LANE_H + (LANE_H - BAR_H) / 2.0;
    dr__num_appendf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"#222\" "
                    "stroke-width=\"0.4\"/>",
                    x, y, w, BAR_H, op_colors[nr->op]);
    if (w >= (double)strlen(nr->id) * CHAR_W + 6) {
      dr__num_appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"white\">", x + w / 2,
                      y + BAR_H / 2.0 + 4);
      xml_text(out, nr->id);
      g_string_append(out, "</text>");
    }
    g_string_append(out, "</g>\n");
  }

  /* Wait arrows: from the waited node's end to the waiting node's start. */
  for (guint f = 0; f < r->flows->len; f++) {
    const DrReportFlow *fl = &g_array_index(r->flows, DrReportFlow, f);
    const DrNodeReport *a = fl->from < n ? info[fl->from] : NULL, *b = fl->to < n ? info[fl->to] : NULL;
    if (a == NULL || b == NULL || isnan(t_end[fl->from]) || isnan(t_start[fl->to])) continue;
    double x1 = LEFT + t_end[fl->from] * scale, x2 = LEFT + t_start[fl->to] * scale;
    double y1 = lanes_top + a->stream * LANE_H + LANE_H / 2.0,
           y2 = lanes_top + b->stream * LANE_H + LANE_H / 2.0;
    y2 += y2 > y1 ? -BAR_H / 2.0 : BAR_H / 2.0; /* to the bar's edge facing the arrow */
    y1 += y2 > y1 ? BAR_H / 2.0 : -BAR_H / 2.0;
    dr__num_appendf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                    "stroke-opacity=\"0.6\" stroke-width=\"0.8\" marker-end=\"url(#arrow)\"/>\n",
                    x1, y1, x2, y2);
  }

  /* Legend of the ops present, and a note on untimed nodes. */
  double ly = lanes_top + lanes_h + 20, lx = LEFT;
  for (int op = 0; op < DR_N_OPS; op++) {
    if (!op_seen[op]) continue;
    dr__num_appendf(out,
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#222\" "
                    "stroke-width=\"0.4\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                    lx, ly - 10, op_colors[op], lx + 16, ly, dr_op_name((DrOp)op));
    lx += 16 + strlen(dr_op_name((DrOp)op)) * CHAR_W + 18;
  }
  dr__num_appendf(out, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">arrows: cross-stream waits</text>\n",
                  lx + 10, ly);
  if (untimed)
    dr__num_appendf(out,
                    "<text x=\"%d\" y=\"%.0f\" fill=\"#555\">%u nodes were not timed (--timing=off)</text>\n",
                    LEFT, ly + 18, untimed);
  g_string_append(out, "</svg>\n");
}
