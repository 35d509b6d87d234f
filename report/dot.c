/* dot.c: the --dot writer, the plan as a Graphviz digraph for review. Not
 * a layout: Graphviz draws it (`dot -Tsvg`).
 *
 * One cluster per stream (stream number and priority, in the stream's
 * colour); nodes filled with their stream's colour and labelled with id,
 * `label:`, and what they do (copies with their direction: H2D, D2H, D2D,
 * H2H). Every edge says why it exists: the buffer and the hazard ("x RAW")
 * or "after". Event waits are dashed red; edges that stream order or
 * another wait already imply are grey. The graph's label is the legend.
 *
 * The memory bound's certificate (plan->peak_bound: the stream-ordered
 * buffer lifetimes that some execution has alive together) is drawn on
 * the nodes that open and close them: each alloc and free node of it gets
 * a dashed dark-red border and a "bound: buf#k" line, and the legend says
 * the bound and the serial peak.
 *
 * With durations (from a run, or the --profile report), each node shows
 * its median duration and the critical path (the longest path weighted by
 * those durations, found here over the plan's issue order, which is a
 * topological order) is drawn bold black, as CUDASTF_DOT_TIMING does.
 *
 * Summary detail collapses each foreach family (the nodes expanded from
 * one YAML entry: they share the entry's source location) into one 3-D box
 * with the count, the range of ids and the summed duration; the edges
 * between two groups become one edge with a count, and the edges inside a
 * family are only counted. Auto detail is full up to DR_DOT_AUTO_FULL_MAX
 * nodes, summary above. Ids are quoted and escaped. O((V + E) log V). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/loops.h"
#include "report/num.h"
#include "report/plan_common.h"
#include "report/report.h"

/* Fill and border colours, cycled by stream number. */
static const char *const fills[] = {"#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#d9d9d9"};
static const char *const borders[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"};

#define CRITICAL_STYLE "color=\"#000000\", penwidth=3.5"
/* The alloc and free nodes of the memory bound's certificate: a thick
 * dashed dark-red border (beside the critical path's solid black). */
#define BOUND_COLOR "#b30000"
#define BOUND_STYLE "color=\"" BOUND_COLOR "\", penwidth=3, style=\"rounded,filled,dashed\""

static void dot_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\') g_string_append_c(out, '\\');
    if (*p == '\n')
      g_string_append(out, "\\n");
    else
      g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

/* Text inside an HTML-like label (the legend). */
static void html_text(GString *out, const char *s) {
  for (const char *p = s; *p; p++) {
    if (*p == '&')
      g_string_append(out, "&amp;");
    else if (*p == '<')
      g_string_append(out, "&lt;");
    else if (*p == '>')
      g_string_append(out, "&gt;");
    else if (*p == '"')
      g_string_append(out, "&quot;");
    else
      g_string_append_c(out, *p);
  }
}

double *dr_report_durations(const DrReport *report) {
  g_return_val_if_fail(report != NULL, NULL);
  double *dur = g_new(double, MAX(report->n_graph_nodes, 1));
  for (guint32 v = 0; v < report->n_graph_nodes; v++) dur[v] = NAN;
  for (guint i = 0; i < report->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(report->nodes, DrNodeReport, i);
    if (nr->node < report->n_graph_nodes) dur[nr->node] = nr->duration_us;
  }
  return dur;
}

const char *dr__plan_copy_direction(const DrGraph *g, const DrNode *node) {
  int src = -1, dst = -1;
  for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    int where = dr_graph_buffer(g, a->buffer)->where != DR_WHERE_DEVICE;
    if (dr_access_writes(a->mode))
      dst = where;
    else
      src = where;
  }
  static const char *const names[2][2] = {{"D2D", "D2H"}, {"H2D", "H2H"}};
  return src < 0 || dst < 0 ? NULL : names[src][dst];
}

/* What node `v` does, with a copy's direction after its op. */
static void node_detail(const DrGraph *g, DrId v, GString *out) {
  const DrNode *node = dr_graph_node(g, v);
  g_autoptr(GString) d = g_string_new(NULL);
  dr__plan_node_detail(g, v, d);
  const char *dir = node->op == DR_OP_COPY ? dr__plan_copy_direction(g, node) : NULL;
  if (dir != NULL && g_str_has_prefix(d->str, "copy"))
    g_string_append_printf(out, "copy %s%s", dir, d->str + strlen("copy"));
  else
    g_string_append(out, d->str);
}

static void append_us(GString *out, double us) {
  if (us >= 10000)
    dr__num_appendf(out, "%.2f ms", us / 1000.0);
  else
    dr__num_appendf(out, "%.1f \xc2\xb5s", us);
}

/* The critical path of the DAG weighted by dur (NAN counts as 0): sets
 * on_path[v] and, for its nodes, path_pred[v] (the node before, DR_NONE
 * for the first); returns its length. Issue order is topological. */
static double critical_path(const DrPlan *plan, const double *dur, gboolean *on_path, DrId *path_pred) {
  const DrGraph *g = plan->graph;
  guint32 n = g->nodes->len;
  g_autofree double *dist = g_new0(double, MAX(n, 1));
  DrId *pred = path_pred;
  g_autofree guint32 *first = g_new0(guint32, n + 1);
  g_autofree DrId *from = g_new(DrId, MAX(g->edges->len, 1));
  for (guint32 e = 0; e < g->edges->len; e++) first[dr_graph_edge(g, e)->to + 1]++;
  for (guint32 v = 0; v < n; v++) first[v + 1] += first[v];
  g_autofree guint32 *fill = g_memdup2(first, (n + 1) * sizeof(guint32));
  for (guint32 e = 0; e < g->edges->len; e++)
    from[fill[dr_graph_edge(g, e)->to]++] = dr_graph_edge(g, e)->from;
  DrId end = DR_NONE;
  for (guint32 i = 0; i < plan->steps->len; i++) {
    DrId v = dr_plan_step(plan, i)->node;
    pred[v] = DR_NONE;
    double best = 0;
    for (guint32 k = first[v]; k < first[v + 1]; k++)
      if (pred[v] == DR_NONE || dist[from[k]] > best) {
        best = dist[from[k]];
        pred[v] = from[k];
      }
    dist[v] = best + (isnan(dur[v]) ? 0 : MAX(dur[v], 0));
    if (end == DR_NONE || dist[v] > dist[end]) end = v;
  }
  for (DrId v = end; v != DR_NONE; v = pred[v]) on_path[v] = TRUE;
  return end == DR_NONE ? 0 : dist[end];
}

/* Groups: group[v] is the representative (first member in program order)
 * of v's foreach family, or v itself. A family is two or more nodes with
 * one source location (C API nodes have none and stay alone). */
static guint32 *families(const DrGraph *g, gboolean summary, guint32 *count) {
  guint32 n = g->nodes->len;
  guint32 *group = g_new(guint32, MAX(n, 1));
  for (guint32 v = 0; v < n; v++) group[v] = v;
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint32 v = 0; v < n && summary; v++) {
    const DrNode *node = dr_graph_node(g, v);
    if (node->loc.line == 0) continue;
    char *key = g_strdup_printf("%p:%u:%u", (const void *)node->loc.file, node->loc.line, node->loc.col);
    gpointer rep;
    if (g_hash_table_lookup_extended(seen, key, NULL, &rep)) {
      group[v] = GPOINTER_TO_UINT(rep);
      g_free(key);
    } else {
      g_hash_table_insert(seen, key, GUINT_TO_POINTER(v));
    }
  }
  for (guint32 v = 0; v < n; v++) count[group[v]]++;
  return group;
}

/* One edge between two groups (one pair of nodes in full detail). */
typedef struct {
  guint32 from, to; /* representatives */
  guint32 count, waits, implied, critical;
  guint32 kinds; /* bit per DrEdgeKind */
  DrId buffer;   /* of the first hazard edge */
  gboolean buffers_differ;
} GroupEdge;

static int group_edge_cmp(const void *a, const void *b) {
  const GroupEdge *x = a, *y = b;
  if (x->from != y->from) return x->from < y->from ? -1 : 1;
  if (x->to != y->to) return x->to < y->to ? -1 : 1;
  return 0;
}

static void edge_label(const DrGraph *g, const GroupEdge *ge, GString *out) {
  if (ge->buffer != DR_NONE && !ge->buffers_differ)
    g_string_append_printf(out, "%s ", dr_graph_buffer(g, ge->buffer)->name);
  gboolean sep = FALSE;
  for (guint k = 0; k <= DR_EDGE_OUTPUT; k++) {
    if (!(ge->kinds & (1u << k))) continue;
    g_autofree char *up = k == DR_EDGE_AFTER || k == DR_EDGE_OUTPUT ? g_strdup(dr_edge_kind_name(k))
                                                                    : g_ascii_strup(dr_edge_kind_name(k), -1);
    g_string_append_printf(out, "%s%s", sep ? "+" : "", up);
    sep = TRUE;
  }
  if (ge->count > 1) g_string_append_printf(out, " \xc3\x97%u", ge->count);
}

static void legend_row(GString *out, const char *color, const char *sample, const char *text) {
  g_string_append_printf(out, "<tr><td align=\"left\"><font color=\"%s\">%s</font> ", color, sample);
  html_text(out, text);
  g_string_append(out, "</td></tr>");
}

typedef struct {
  const DrPlan *plan;
  const DrDotOptions *opts;
  gboolean summary;
  const guint32 *group, *count;
  const gboolean *on_path;
  const DrId *path_pred;
  /* Per group (indexed by its representative): plan stream, or
   * G_MAXUINT32 when it spans several; last member; summed duration and
   * timed members; whether a member is on the critical path. */
  guint32 *group_stream, *last, *timed;
  guint32 *lo, *hi; /* lowest and highest stream of a group */
  double *total;
  gboolean *critical;
  /* Per group: the lifetimes of the memory bound's certificate
   * (plan->peak_bound) whose alloc or free it holds, as "buf#k" text;
   * NULL for none. */
  GString **bound;
} Ctx;

static void write_node(const Ctx *c, GString *out, guint32 v, guint32 s) {
  const DrGraph *g = c->plan->graph;
  const DrNode *node = dr_graph_node(g, v);
  g_autoptr(GString) label = g_string_new(NULL);
  gboolean family = c->count[v] > 1, critical = c->critical[v];
  double total = c->total[v];
  guint32 timed = c->timed[v];
  DrId last = c->last[v];
  if (family)
    g_string_append_printf(label, "%s \xe2\x80\xa6 %s\n\xc3\x97%u ", node->id, dr_graph_node(g, last)->id,
                           c->count[v]);
  else
    g_string_append_printf(label, "%s\n", node->id);
  if (node->label != NULL) g_string_append_printf(label, "\xe2\x80\x9c%s\xe2\x80\x9d\n", node->label);
  node_detail(g, v, label);
  if (family && c->group_stream[v] == G_MAXUINT32)
    g_string_append_printf(label, "\nstreams %u\xe2\x80\x93%u", c->lo[v], c->hi[v]);
  if (timed > 0) {
    g_string_append_c(label, '\n');
    if (family) g_string_append(label, "sum ");
    append_us(label, total);
  }
  if (c->bound[v] != NULL) g_string_append_printf(label, "\nbound: %s", c->bound[v]->str);
  g_string_append(out, "    ");
  dot_string(out, node->id);
  g_string_append(out, " [label=");
  dot_string(out, label->str);
  /* The certificate's border replaces the stream's (a critical node's
   * black is written after it and wins, the dashes stay). */
  const char *fill = s == G_MAXUINT32 ? "#ffffff" : fills[s % G_N_ELEMENTS(fills)];
  const char *border = s == G_MAXUINT32 ? "#555555" : borders[s % G_N_ELEMENTS(borders)];
  if (c->bound[v] != NULL)
    g_string_append_printf(out, ", fillcolor=\"%s\", " BOUND_STYLE, fill);
  else
    g_string_append_printf(out, ", fillcolor=\"%s\", color=\"%s\"", fill, border);
  if (family) g_string_append(out, ", shape=box3d");
  if (critical) g_string_append(out, ", " CRITICAL_STYLE);
  g_string_append(out, "];\n");
}

/* The edges between groups, merged per (from, to) pair and sorted. */
static GArray *group_edges(const Ctx *c, guint32 *inside) {
  const DrPlan *plan = c->plan;
  const DrGraph *g = plan->graph;
  /* A wait of step v on u is drawn on the edge (u, v). */
  g_autoptr(GHashTable) waited = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autoptr(GArray) keys = g_array_sized_new(FALSE, FALSE, sizeof(gint64), plan->waits->len);
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      gint64 key = ((gint64)dr_plan_wait(plan, w) << 32) | step->node;
      g_array_append_val(keys, key);
    }
  }
  for (guint32 k = 0; k < keys->len; k++) g_hash_table_add(waited, &g_array_index(keys, gint64, k));
  GArray *edges = g_array_sized_new(FALSE, FALSE, sizeof(GroupEdge), g->edges->len);
  for (guint32 e = 0; e < g->edges->len; e++) {
    const DrEdge *ed = dr_graph_edge(g, e);
    if (c->summary && c->group[ed->from] == c->group[ed->to]) {
      (*inside)++;
      continue;
    }
    gint64 key = ((gint64)ed->from << 32) | ed->to;
    gboolean wait = g_hash_table_contains(waited, &key);
    GroupEdge ge = {.from = c->group[ed->from],
                    .to = c->group[ed->to],
                    .count = 1,
                    .waits = wait,
                    .implied = !wait && plan->node_stream[ed->from] != plan->node_stream[ed->to],
                    .critical = c->on_path != NULL && c->on_path[ed->to] && c->path_pred[ed->to] == ed->from,
                    .kinds = 1u << ed->kind,
                    .buffer = ed->kind == DR_EDGE_AFTER || ed->kind == DR_EDGE_OUTPUT ? DR_NONE : ed->buffer};
    g_array_append_val(edges, ge);
  }
  if (!c->summary) return edges;
  g_array_sort(edges, group_edge_cmp);
  guint32 m = 0;
  for (guint32 i = 0; i < edges->len; i++) {
    GroupEdge *cur = &g_array_index(edges, GroupEdge, i);
    GroupEdge *prev = m > 0 ? &g_array_index(edges, GroupEdge, m - 1) : NULL;
    if (prev != NULL && group_edge_cmp(prev, cur) == 0) {
      prev->count++;
      prev->waits += cur->waits;
      prev->implied += cur->implied;
      prev->critical += cur->critical;
      prev->kinds |= cur->kinds;
      if (prev->buffer == DR_NONE)
        prev->buffer = cur->buffer;
      else if (cur->buffer != DR_NONE && cur->buffer != prev->buffer)
        prev->buffers_differ = TRUE;
    } else {
      g_array_index(edges, GroupEdge, m++) = *cur;
    }
  }
  g_array_set_size(edges, m);
  return edges;
}

static void write_legend(const Ctx *c, GString *out, guint32 n_groups, guint32 inside, double path_us) {
  const DrPlan *plan = c->plan;
  const DrGraph *g = plan->graph;
  g_string_append(out, "  label=<<table border=\"0\" cellspacing=\"1\"><tr><td align=\"left\"><b>");
  html_text(out, g->name ? g->name : "dagrun");
  g_string_append_printf(out, "</b>: width %u, %u streams (cap ", plan->width, plan->streams->len);
  if (plan->uncapped)
    g_string_append(out, "none");
  else
    g_string_append_printf(out, "%u", plan->cap);
  g_string_append_printf(out, "), %u edges, %u waits</td></tr>", plan->n_edges, plan->waits->len);
  if (c->summary)
    g_string_append_printf(out,
                           "<tr><td align=\"left\">summary: %u nodes shown as %u; a 3-D box is a foreach "
                           "family (\xc3\x97 count; %u edges inside families not drawn); --dot-detail=full "
                           "draws every node</td></tr>",
                           g->nodes->len, n_groups, inside);
  legend_row(out, "#555555", "&#8594;",
             "a dependency, labelled with its buffer and hazard, or after (an after: entry):");
  g_string_append(out,
                  "<tr><td align=\"left\">    RAW reads what the other wrote, WAR overwrites what it read, "
                  "WAW overwrites what it wrote; \xc3\x97N: N edges merged</td></tr>");
  legend_row(out, "red", "- - &#8594;", "an event wait between streams");
  legend_row(out, "#aaaaaa", "&#8594;", "implied by stream order or another wait (no event)");
  legend_row(out, "#555555", "&#9633;",
             "a node: id, \xe2\x80\x9clabel\xe2\x80\x9d, what it does (copies H2D, D2H, D2D: host/device "
             "to host/device); a cluster is a stream");
  if (plan->peak_bound->len > 0) {
    g_autoptr(GString) t = g_string_new(NULL);
    g_string_append_printf(
        t,
        "alloc and free of the memory bound's certificate: %u buffer lifetime%s alive at once "
        "in some execution (bound ",
        plan->peak_bound->len, plan->peak_bound->len == 1 ? "" : "s");
    dr__num_size_iec(t, plan->peak_bound_bytes);
    g_string_append(t, " with whole-run buffers; serial peak ");
    dr__num_size_iec(t, plan->peak_serial_bytes);
    g_string_append(t, ")");
    legend_row(out, BOUND_COLOR, "- - &#9633;", t->str);
  }
  if (c->on_path != NULL) {
    g_autoptr(GString) t = g_string_new("critical path ");
    append_us(t, path_us);
    g_string_append_printf(t, " (durations: %s)",
                           c->opts->timing_source ? c->opts->timing_source : "measured");
    legend_row(out, "#000000", "<b>&#9473;&#9473;</b>", t->str);
  }
  g_string_append(out, "</table>>;\n  labelloc=t;\n  labeljust=l;\n");
}

/* Each loop body of `plan` as a cluster (nested bodies inside theirs):
 * its nodes, by scoped id, with their op, and its own dependency edges,
 * and (`link`: the loop node is drawn under its own id, not in a summary
 * family) a dotted edge from the loop node into the cluster. */
static void write_loop_clusters(const DrPlan *plan, GString *out, guint depth, gboolean link) {
  const DrGraph *g = plan->graph;
  for (guint i = 0; plan->bodies != NULL && i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    for (guint part = 0; part < 2; part++) {
      const DrPlan *bp = g_ptr_array_index(plan->bodies, 2 * i + part);
      if (bp == NULL) continue;
      const DrGraph *body = bp->graph;
      g_autofree char *pad = g_strnfill(2 * (depth + 1), ' ');
      g_autoptr(GString) label = g_string_new(NULL);
      g_string_printf(label, "%s%s '%s': ", part ? "else of " : "", dr_loop_noun(l->kind), l->id);
      if (l->kind == DR_LOOP_REPEAT)
        g_string_append_printf(label, "repeat %" G_GUINT64_FORMAT, l->count);
      else
        g_string_append_printf(label, "%s %s", dr_loop_kind_name(l->kind), dr_graph_buffer(g, l->cond)->name);
      g_string_append_printf(label, ", body on %u stream%s", bp->streams->len,
                             bp->streams->len == 1 ? "" : "s");
      g_autofree char *cluster = g_strdup_printf("cluster_loop_%s_%u", l->id, part);
      g_string_append_printf(out, "%ssubgraph ", pad);
      dot_string(out, cluster);
      g_string_append(out, " {\n");
      g_string_append_printf(out, "%s  label=", pad);
      dot_string(out, label->str);
      g_string_append_printf(out, ";\n%s  style=dashed;\n", pad);
      for (DrId v = 0; v < dr_graph_n_nodes(body); v++) {
        g_autoptr(GString) text = g_string_new(dr_graph_node(body, v)->id);
        g_string_append_c(text, '\n');
        dr__plan_node_detail(body, v, text);
        g_string_append_printf(out, "%s  ", pad);
        dot_string(out, dr_graph_node(body, v)->id);
        g_string_append(out, " [label=");
        dot_string(out, text->str);
        g_string_append(out, ", fillcolor=\"#f4f4f4\"];\n");
      }
      write_loop_clusters(bp, out, depth + 1, TRUE);
      g_string_append_printf(out, "%s}\n", pad);
      for (guint e = 0; e < body->edges->len; e++) {
        const DrEdge *ed = dr_graph_edge(body, e);
        g_string_append_printf(out, "%s", pad);
        dot_string(out, dr_graph_node(body, ed->from)->id);
        g_string_append(out, " -> ");
        dot_string(out, dr_graph_node(body, ed->to)->id);
        g_string_append_printf(out, " [label=\"%s\"];\n", dr_edge_kind_name(ed->kind));
      }
      if (link && dr_graph_n_nodes(body) > 0) {
        g_string_append_printf(out, "%s", pad);
        dot_string(out, l->id);
        g_string_append(out, " -> ");
        dot_string(out, dr_graph_node(body, 0)->id);
        g_string_append(out, " [style=dotted, lhead=");
        dot_string(out, cluster);
        g_string_append(out, ", label=\"body\"];\n");
      }
    }
  }
}

void dr_plan_write_dot_opts(const DrPlan *plan, const DrDotOptions *opts, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  static const DrDotOptions defaults = {DR_DOT_DETAIL_AUTO, NULL, NULL};
  if (opts == NULL) opts = &defaults;
  const DrGraph *g = plan->graph;
  guint32 n = g->nodes->len, n_streams = plan->streams->len;
  gboolean summary = opts->detail == DR_DOT_DETAIL_SUMMARY ||
                     (opts->detail == DR_DOT_DETAIL_AUTO && n > DR_DOT_AUTO_FULL_MAX);
  g_autofree guint32 *count = g_new0(guint32, MAX(n, 1));
  g_autofree guint32 *group = families(g, summary, count);
  g_autofree guint32 *group_stream = g_new(guint32, MAX(n, 1)), *last = g_new(guint32, MAX(n, 1));
  g_autofree guint32 *timed = g_new0(guint32, MAX(n, 1));
  g_autofree double *total = g_new0(double, MAX(n, 1));
  g_autofree gboolean *critical = g_new0(gboolean, MAX(n, 1));
  g_autofree gboolean *on_path = opts->duration_us ? g_new0(gboolean, MAX(n, 1)) : NULL;
  g_autofree DrId *path_pred = g_new(DrId, MAX(n, 1));
  double path_us = on_path ? critical_path(plan, opts->duration_us, on_path, path_pred) : 0;
  g_autofree guint32 *lo = g_new(guint32, MAX(n, 1)), *hi = g_new(guint32, MAX(n, 1));
  guint32 n_groups = 0;
  for (guint32 v = 0; v < n; v++) {
    guint32 r = group[v], s = plan->node_stream[v];
    lo[r] = r == v ? s : MIN(lo[r], s);
    hi[r] = r == v ? s : MAX(hi[r], s);
    if (r == v) {
      group_stream[v] = plan->node_stream[v];
      n_groups++;
    } else if (group_stream[r] != plan->node_stream[v]) {
      group_stream[r] = G_MAXUINT32;
    }
    last[r] = v;
    critical[r] |= on_path != NULL && on_path[v];
    if (opts->duration_us != NULL && !isnan(opts->duration_us[v])) {
      total[r] += opts->duration_us[v];
      timed[r]++;
    }
  }
  g_autofree GString **bound = g_new0(GString *, MAX(n, 1));
  for (guint32 i = 0; i < plan->peak_bound->len; i++) {
    const DrPlanLifetime *l = &g_array_index(plan->peak_bound, DrPlanLifetime, i);
    DrId ends[2] = {group[l->alloc], group[l->free]};
    for (guint k = 0; k < 2; k++) {
      if (k == 1 && ends[1] == ends[0]) break;
      if (bound[ends[k]] == NULL)
        bound[ends[k]] = g_string_new(NULL);
      else
        g_string_append_c(bound[ends[k]], ' ');
      g_string_append_printf(bound[ends[k]], "%s#%u", dr_graph_buffer(g, l->buffer)->name, l->lifetime);
    }
  }
  Ctx c = {.plan = plan,
           .opts = opts,
           .summary = summary,
           .group = group,
           .count = count,
           .on_path = on_path,
           .path_pred = path_pred,
           .group_stream = group_stream,
           .last = last,
           .timed = timed,
           .lo = lo,
           .hi = hi,
           .total = total,
           .critical = critical,
           .bound = bound};
  guint32 inside = 0;
  g_autoptr(GArray) edges = group_edges(&c, &inside);

  g_string_append(out, "digraph ");
  dot_string(out, g->name ? g->name : "dagrun");
  g_string_append(out, " {\n");
  write_legend(&c, out, n_groups, inside, path_us);
  g_string_append(out,
                  "  rankdir=TB;\n  compound=true;\n"
                  "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n"
                  "  edge [color=\"#555555\", fontname=\"Helvetica\", fontsize=9];\n");
  /* Clusters: nodes grouped by stream, in stream order; families that
   * span streams stand outside. */
  guint32 *start = NULL;
  guint32 *bucket = dr__plan_steps_by_stream(plan, &start);
  for (guint32 s = 0; s < n_streams; s++) {
    const DrStream *st = &g_array_index(plan->streams, DrStream, s);
    const char *border = borders[s % G_N_ELEMENTS(borders)];
    gboolean opened = FALSE;
    for (guint32 k = start[s]; k < start[s + 1]; k++) {
      DrId v = dr_plan_step(plan, bucket[k])->node;
      if (group[v] != v || group_stream[v] != s) continue;
      if (!opened) {
        g_autoptr(GString) kind = g_string_new(NULL);
        dr__plan_stream_kind(plan->graph, st, kind);
        g_string_append_printf(out,
                               "  subgraph cluster_s%u {\n    label=\"stream %u (%s)\";\n"
                               "    color=\"%s\";\n    fontcolor=\"%s\";\n",
                               s, s, kind->str, border, border);
      }
      opened = TRUE;
      write_node(&c, out, v, s);
    }
    if (opened) g_string_append(out, "  }\n");
  }
  g_free(bucket);
  g_free(start);
  for (guint32 v = 0; v < n; v++)
    if (group[v] == v && group_stream[v] == G_MAXUINT32) write_node(&c, out, v, G_MAXUINT32);
  for (guint32 e = 0; e < edges->len; e++) {
    const GroupEdge *ge = &g_array_index(edges, GroupEdge, e);
    g_autoptr(GString) label = g_string_new(NULL);
    edge_label(g, ge, label);
    g_string_append(out, "  ");
    dot_string(out, dr_graph_node(g, ge->from)->id);
    g_string_append(out, " -> ");
    dot_string(out, dr_graph_node(g, ge->to)->id);
    g_string_append(out, " [label=");
    dot_string(out, label->str);
    if (ge->waits > 0) {
      g_string_append(out, ", style=dashed, color=red, penwidth=1.5, tooltip=\"event wait");
      if (ge->count > 1) g_string_append_printf(out, "s: %u of %u", ge->waits, ge->count);
      g_string_append_c(out, '"');
    } else if (ge->implied > 0) {
      g_string_append(out, ", color=\"#aaaaaa\", tooltip=\"implied by another wait\"");
    }
    if (ge->critical > 0) g_string_append(out, ", " CRITICAL_STYLE);
    g_string_append(out, "];\n");
  }
  write_loop_clusters(plan, out, 0, !summary);
  g_string_append(out, "}\n");
  for (guint32 v = 0; v < n; v++)
    if (bound[v] != NULL) g_string_free(bound[v], TRUE);
}

void dr_plan_write_dot(const DrPlan *plan, GString *out) { dr_plan_write_dot_opts(plan, NULL, out); }
