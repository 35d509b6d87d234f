/* dot.c: the --dot writer, the plan as a Graphviz digraph for review. Not
 * a layout: Graphviz draws it (`dot -Tsvg`).
 *
 * One cluster per stream (its label is the legend: stream number and
 * priority, in the stream's colour); nodes filled with their stream's
 * colour and labelled with id and what they do; dependency edges solid
 * (grey when stream order or another path already implies them), event
 * waits dashed red. Ids are quoted and escaped. O(V + E). */
#include "report/plan_common.h"
#include "report/report.h"

/* Fill and border colours, cycled by stream number. */
static const char *const fills[] = {"#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#d9d9d9"};
static const char *const borders[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"};

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

void dr_plan_write_dot(const DrPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  const DrGraph *g = plan->graph;
  guint32 n = g->nodes->len, n_streams = plan->streams->len;
  g_string_append(out, "digraph ");
  dot_string(out, g->name ? g->name : "dagrun");
  g_string_append_printf(out,
                         " {\n  label=\"width %u, %u streams (cap %u), %u edges, %u waits\";\n"
                         "  labelloc=t;\n  rankdir=TB;\n  compound=true;\n"
                         "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n"
                         "  edge [color=\"#555555\"];\n",
                         plan->width, n_streams, plan->cap, plan->n_edges, plan->waits->len);
  /* Clusters: nodes grouped by stream, in stream order. */
  guint32 *start = NULL;
  guint32 *bucket = dr__plan_steps_by_stream(plan, &start);
  for (guint32 s = 0; s < n_streams; s++) {
    const DrStream *st = &g_array_index(plan->streams, DrStream, s);
    const char *fill = fills[s % G_N_ELEMENTS(fills)], *border = borders[s % G_N_ELEMENTS(borders)];
    g_string_append_printf(out,
                           "  subgraph cluster_s%u {\n    label=\"stream %u (%s)\";\n"
                           "    color=\"%s\";\n    fontcolor=\"%s\";\n",
                           s, s, dr_priority_name(st->priority), border, border);
    for (guint32 k = start[s]; k < start[s + 1]; k++) {
      const DrPlanStep *step = dr_plan_step(plan, bucket[k]);
      g_autoptr(GString) label = g_string_new(dr_graph_node(g, step->node)->id);
      g_string_append_c(label, '\n');
      dr__plan_node_detail(g, step->node, label);
      g_string_append(out, "    ");
      dot_string(out, dr_graph_node(g, step->node)->id);
      g_string_append(out, " [label=");
      dot_string(out, label->str);
      g_string_append_printf(out, ", fillcolor=\"%s\", color=\"%s\"];\n", fill, border);
    }
    g_string_append(out, "  }\n");
  }
  g_free(bucket);
  g_free(start);
  /* Edges: a wait of step v on u is drawn on the edge (u, v). */
  GHashTable *waited = g_hash_table_new(g_int64_hash, g_int64_equal);
  GArray *keys = g_array_sized_new(FALSE, FALSE, sizeof(gint64), plan->waits->len);
  for (guint32 i = 0; i < n; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      gint64 key = ((gint64)dr_plan_wait(plan, w) << 32) | step->node;
      g_array_append_val(keys, key);
    }
  }
  for (guint32 k = 0; k < keys->len; k++) g_hash_table_add(waited, &g_array_index(keys, gint64, k));
  for (guint32 e = 0; e < g->edges->len; e++) {
    const DrEdge *ed = dr_graph_edge(g, e);
    gint64 key = ((gint64)ed->from << 32) | ed->to;
    g_string_append(out, "  ");
    dot_string(out, dr_graph_node(g, ed->from)->id);
    g_string_append(out, " -> ");
    dot_string(out, dr_graph_node(g, ed->to)->id);
    if (g_hash_table_contains(waited, &key))
      g_string_append(out, " [style=dashed, color=red, penwidth=1.5, tooltip=\"event wait\"]");
    else if (plan->node_stream[ed->from] != plan->node_stream[ed->to])
      g_string_append(out, " [color=\"#aaaaaa\", tooltip=\"implied by another wait\"]");
    g_string_append_printf(out, "; /* %s */\n", dr_edge_kind_name(ed->kind));
  }
  g_hash_table_unref(waited);
  g_array_unref(keys);
  g_string_append(out, "}\n");
}
