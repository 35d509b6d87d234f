/* plan_memory.c: the memory budget's part of the plan writers (the text
 * line and the JSON object of what scheduler/budget.c did under a memory
 * limit: the edges it added, the bound, width and estimated critical path
 * before and after), reuse's, each device's figures on a run of several
 * and the memory/concurrency curve's text. Kept apart
 * from plan_text.c and plan_json.c, which call in here. */
#include "report/plan_memory.h"

#include "report/num.h"

/* Edges shown in the text line before "... (N more)". */
#define EDGES_SHOWN 8

void dr__plan_budget_text(const DrPlan *plan, GString *out) {
  const DrGraph *g = plan->graph;
  const DrMemoryBudget *b = &g->budget;
  if (!b->ran) return;
  guint n = g->memory_edges ? g->memory_edges->len : 0;
  g_string_append(out, "memory limit ");
  dr__num_size_iec(out, b->limit);
  if (n == 0) {
    g_string_append(out, ": fits (bound ");
    dr__num_size_iec(out, b->bound_before_bytes);
    g_string_append(out, "), no edge added\n");
    return;
  }
  g_string_append_printf(out, ": %u ordering edge%s added", n, n == 1 ? "" : "s");
  for (guint i = 0; i < MIN(n, EDGES_SHOWN); i++) {
    const DrEdge *e = &g_array_index(g->memory_edges, DrEdge, i);
    g_string_append_printf(out, "%s%s -> %s", i ? ", " : " (", dr_graph_node(g, e->from)->id,
                           dr_graph_node(g, e->to)->id);
  }
  if (n > EDGES_SHOWN) g_string_append_printf(out, " ... (%u more)", n - EDGES_SHOWN);
  g_string_append(out, "); bound ");
  dr__num_size_iec(out, b->bound_before_bytes);
  g_string_append(out, " -> ");
  dr__num_size_iec(out, b->bound_after_bytes);
  dr__num_appendf(out, ", width %u -> %u, critical path %.1f -> %.1f us\n", b->width_before, b->width_after,
                  b->path_before_us, b->path_after_us);
}

void dr__plan_budget_json(const DrPlan *plan, DrJsonWriter *w) {
  const DrGraph *g = plan->graph;
  const DrMemoryBudget *b = &g->budget;
  if (!b->ran) return;
  dr__json_key(w, "budget");
  dr__json_begin_object(w);
  dr__json_member_uint(w, "limit_bytes", b->limit);
  dr__json_member_uint(w, "bound_before_bytes", b->bound_before_bytes);
  dr__json_member_uint(w, "bound_after_bytes", b->bound_after_bytes);
  dr__json_member_uint(w, "width_before", b->width_before);
  dr__json_member_uint(w, "width_after", b->width_after);
  dr__json_member_double(w, "critical_path_before_us", b->path_before_us, 3);
  dr__json_member_double(w, "critical_path_after_us", b->path_after_us, 3);
  dr__json_key(w, "added_edges");
  dr__json_begin_array(w);
  for (guint i = 0; g->memory_edges && i < g->memory_edges->len; i++) {
    const DrEdge *e = &g_array_index(g->memory_edges, DrEdge, i);
    dr__json_begin_object(w);
    dr__json_member_string(w, "from", dr_graph_node(g, e->from)->id);
    dr__json_member_string(w, "to", dr_graph_node(g, e->to)->id);
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
  dr__json_end_object(w);
}

void dr__plan_reuse_text(const DrPlan *plan, GString *out) {
  const DrGraph *g = plan->graph;
  if (!g->run.reuse) return;
  g_string_append(out, "memory reuse: ");
  if (plan->n_shared == 0) {
    g_string_append(out, "no scratch buffers share storage\n");
    return;
  }
  dr__num_size_iec(out, plan->reuse_saved_bytes);
  g_string_append_printf(out, " saved, %u buffer%s in another's storage:", plan->n_shared,
                         plan->n_shared == 1 ? "" : "s");
  guint shown = 0;
  for (DrId b = 0; b < g->buffers->len && shown < EDGES_SHOWN; b++) {
    if (plan->storage[b] == b) continue;
    g_string_append_printf(out, "%s%s in %s", shown ? ", " : " ", dr_graph_buffer(g, b)->name,
                           dr_graph_buffer(g, plan->storage[b])->name);
    shown++;
  }
  if (plan->n_shared > shown) g_string_append_printf(out, " ... (%u more)", plan->n_shared - shown);
  g_string_append_c(out, '\n');
}

void dr__plan_reuse_json(const DrPlan *plan, DrJsonWriter *w) {
  const DrGraph *g = plan->graph;
  if (!g->run.reuse) return;
  dr__json_key(w, "reuse");
  dr__json_begin_object(w);
  dr__json_member_uint(w, "saved_bytes", plan->reuse_saved_bytes);
  dr__json_key(w, "shared");
  dr__json_begin_array(w);
  for (DrId b = 0; plan->storage && b < g->buffers->len; b++) {
    if (plan->storage[b] == b) continue;
    dr__json_begin_object(w);
    dr__json_member_string(w, "buffer", dr_graph_buffer(g, b)->name);
    dr__json_member_string(w, "storage", dr_graph_buffer(g, plan->storage[b])->name);
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
  dr__json_end_object(w);
}

void dr__plan_lifetimes_json(const DrGraph *g, const char *key, const GArray *lives, DrJsonWriter *w) {
  dr__json_key(w, key);
  dr__json_begin_array(w);
  for (guint32 i = 0; i < lives->len; i++) {
    const DrPlanLifetime *l = &g_array_index(lives, DrPlanLifetime, i);
    dr__json_begin_object(w);
    dr__json_member_string(w, "buffer", dr_graph_buffer(g, l->buffer)->name);
    dr__json_member_uint(w, "lifetime", l->lifetime);
    dr__json_member_string(w, "alloc", dr_graph_node(g, l->alloc)->id);
    dr__json_member_string(w, "free", dr_graph_node(g, l->free)->id);
    dr__json_member_uint(w, "bytes", l->bytes);
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
}

/* Lifetimes of a device's certificate shown before "... (N more)". */
#define DEVICE_LIFETIMES_SHOWN 8u

void dr__plan_devices_text(const DrPlan *plan, GString *out) {
  const DrGraph *g = plan->graph;
  for (guint32 r = 0; r < plan->device_memory->len; r++) {
    const DrPlanDeviceMemory *d = &g_array_index(plan->device_memory, DrPlanDeviceMemory, r);
    g_string_append_printf(out, "memory on device %d: serial peak ", d->device);
    dr__num_size_iec(out, d->peak_serial_bytes);
    g_string_append(out, ", bound ");
    dr__num_size_iec(out, d->peak_bound_bytes);
    g_string_append(out, " (");
    dr__num_size_iec(out, d->whole_run_bytes);
    g_string_append_printf(out, " whole-run + %u of %u lifetime%s", d->peak_bound->len, d->n_lifetimes,
                           d->n_lifetimes == 1 ? "" : "s");
    for (guint32 i = 0; i < MIN(d->peak_bound->len, DEVICE_LIFETIMES_SHOWN); i++) {
      const DrPlanLifetime *l = &g_array_index(d->peak_bound, DrPlanLifetime, i);
      g_string_append_printf(out, "%s%s#%u", i ? " " : ": ", dr_graph_buffer(g, l->buffer)->name,
                             l->lifetime);
    }
    if (d->peak_bound->len > DEVICE_LIFETIMES_SHOWN)
      g_string_append_printf(out, " ... (%u more)", d->peak_bound->len - DEVICE_LIFETIMES_SHOWN);
    g_string_append(out, ")\n");
  }
}

void dr__plan_devices_json(const DrPlan *plan, DrJsonWriter *w) {
  if (plan->device_memory->len == 0) return;
  dr__json_key(w, "devices");
  dr__json_begin_array(w);
  for (guint32 r = 0; r < plan->device_memory->len; r++) {
    const DrPlanDeviceMemory *d = &g_array_index(plan->device_memory, DrPlanDeviceMemory, r);
    dr__json_begin_object(w);
    dr__json_member_uint(w, "device", (guint64)MAX(d->device, 0));
    dr__json_member_uint(w, "peak_serial_bytes", d->peak_serial_bytes);
    dr__json_member_uint(w, "peak_bound_bytes", d->peak_bound_bytes);
    dr__json_member_uint(w, "whole_run_bytes", d->whole_run_bytes);
    dr__json_member_uint(w, "lifetimes", d->n_lifetimes);
    dr__plan_lifetimes_json(plan->graph, "peak_bound_buffers", d->peak_bound, w);
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
}
