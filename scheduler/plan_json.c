/* plan_json.c: the --plan --format=json writer. Not a general JSON library:
 * it writes one object of the shape the spec fixes (and reads nothing).
 *
 * {"streams", "width", "events" (cross-stream waits), "edges", "cap",
 * "cap_binds", "critical_path_us", "planned_path_us", "antichain": [ids],
 * "memory": {"peak_serial_bytes", "peak_bound_bytes", "whole_run_bytes",
 * "granule_bytes", "lifetimes", "peak_bound_buffers": [{"buffer",
 * "lifetime", "alloc", "free", "bytes"}]}, "stream_priorities": [names], "nodes": [{"id", "op", "stream",
 * "priority", "waits": [ids]}] in plan order}. Strings are escaped per
 * RFC 8259 (quote, backslash, control characters). O(V + waits). */
#include "scheduler/planner.h"

#include <math.h>

static void json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"': g_string_append(out, "\\\""); break;
      case '\\': g_string_append(out, "\\\\"); break;
      case '\n': g_string_append(out, "\\n"); break;
      case '\r': g_string_append(out, "\\r"); break;
      case '\t': g_string_append(out, "\\t"); break;
      case '\b': g_string_append(out, "\\b"); break;
      case '\f': g_string_append(out, "\\f"); break;
      default:
        if (*p < 0x20)
          g_string_append_printf(out, "\\u%04x", *p);
        else
          g_string_append_c(out, (char)*p);
    }
  }
  g_string_append_c(out, '"');
}

/* A double in plain JSON (no locale, no inf/nan). */
static void json_number(GString *out, double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite(v)) v = 0;
  g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.3f", v));
}

void dr_plan_write_json(const DrPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  const DrGraph *g = plan->graph;
  g_string_append_printf(out,
                         "{\"streams\": %u, \"width\": %u, \"events\": %u, \"edges\": %u, "
                         "\"cap\": %u, \"cap_binds\": %s, \"critical_path_us\": ",
                         plan->streams->len, plan->width, plan->waits->len, plan->n_edges,
                         plan->cap, plan->cap_binds ? "true" : "false");
  json_number(out, plan->critical_path_us);
  g_string_append(out, ", \"planned_path_us\": ");
  json_number(out, plan->planned_path_us);
  g_string_append(out, ", \"antichain\": [");
  for (guint32 i = 0; i < plan->antichain->len; i++) {
    if (i) g_string_append(out, ", ");
    json_string(out, dr_graph_node(g, g_array_index(plan->antichain, DrId, i))->id);
  }
  g_string_append_printf(out,
                         "], \"memory\": {\"peak_serial_bytes\": %" G_GUINT64_FORMAT
                         ", \"peak_bound_bytes\": %" G_GUINT64_FORMAT
                         ", \"whole_run_bytes\": %" G_GUINT64_FORMAT
                         ", \"granule_bytes\": %u, \"lifetimes\": %u, \"peak_bound_buffers\": [",
                         plan->peak_serial_bytes, plan->peak_bound_bytes, plan->whole_run_bytes,
                         DR_POOL_GRANULE, plan->n_lifetimes);
  for (guint32 i = 0; i < plan->peak_bound->len; i++) {
    const DrPlanLifetime *l = &g_array_index(plan->peak_bound, DrPlanLifetime, i);
    g_string_append(out, i ? ", {\"buffer\": " : "{\"buffer\": ");
    json_string(out, dr_graph_buffer(g, l->buffer)->name);
    g_string_append_printf(out, ", \"lifetime\": %u, \"alloc\": ", l->lifetime);
    json_string(out, dr_graph_node(g, l->alloc)->id);
    g_string_append(out, ", \"free\": ");
    json_string(out, dr_graph_node(g, l->free)->id);
    g_string_append_printf(out, ", \"bytes\": %" G_GUINT64_FORMAT "}", l->bytes);
  }
  g_string_append(out, "]}, \"stream_priorities\": [");
  for (guint32 s = 0; s < plan->streams->len; s++) {
    if (s) g_string_append(out, ", ");
    json_string(out, dr_priority_name(g_array_index(plan->streams, DrStream, s).priority));
  }
  g_string_append(out, "], \"nodes\": [");
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    const DrNode *node = dr_graph_node(g, step->node);
    g_string_append(out, i ? ",\n  {\"id\": " : "\n  {\"id\": ");
    json_string(out, node->id);
    g_string_append(out, ", \"op\": ");
    json_string(out, dr_op_name(node->op));
    g_string_append_printf(out, ", \"stream\": %u, \"priority\": ", step->stream);
    json_string(out, dr_priority_name(node->priority));
    g_string_append(out, ", \"waits\": [");
    for (guint32 w = 0; w < step->wait_count; w++) {
      if (w) g_string_append(out, ", ");
      json_string(out, dr_graph_node(g, dr_plan_wait(plan, step->wait_first + w))->id);
    }
    g_string_append(out, "]}");
  }
  g_string_append(out, plan->steps->len ? "\n]}\n" : "]}\n");
}
