/* plan_json.c: the --plan --format=json writer, through the package's
 * JSON writer (json.h). It writes one object of the shape the spec fixes
 * (docs/report.md):
 *
 * {"streams", "width", "events" (cross-stream waits), "edges", "cap",
 * "cap_binds", "mode" and "mode_reason" (when the library resolved them),
 * "critical_path_us", "planned_path_us", "antichain": [ids],
 * "memory": {"peak_serial_bytes", "peak_bound_bytes", "whole_run_bytes",
 * "granule_bytes", "lifetimes", "peak_bound_buffers": [{"buffer",
 * "lifetime", "alloc", "free", "bytes"}], on several devices "devices":
 * [{"device", the same figures and "peak_bound_buffers"}]},
 * "stream_priorities": [names], "nodes": [{"id", "op", "stream",
 * "priority", "device" (with several devices), "peer" (peer copies only:
 * "access", "staged" or "unknown"), "waits": [ids]}] in plan order, one
 * node per line}.
 *
 * The same code writes into a GString or streams to a FILE (the writer
 * hands its buffer to the file every 64 KiB), so a million-node plan does
 * not have to be built in memory. O(V + waits). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ir/loops.h"
#include "report/json.h"
#include "report/plan_memory.h"
#include "report/report.h"

static void write_plan_object(const DrPlan *plan, DrJsonWriter *w);

/* A loop node's "loop": its kind, count or condition, and each body's
 * own plan (ir/plan.h, plan->bodies) as a plan object of its own. */
static void write_loop(const DrPlan *plan, const DrLoop *l, DrJsonWriter *w) {
  const DrGraph *g = plan->graph;
  guint32 i = dr_graph_node(g, l->node)->loop - 1;
  dr__json_key(w, "loop");
  dr__json_begin_object(w);
  dr__json_member_string(w, "kind", dr_loop_kind_name(l->kind));
  if (l->kind == DR_LOOP_REPEAT) {
    dr__json_member_uint(w, "count", l->count);
    /* A count from a parameter: the current value, evaluated per run. */
    if (l->counted) dr__json_member_bool(w, "counted", TRUE);
  } else
    dr__json_member_string(w, "cond", dr_graph_buffer(g, l->cond)->name);
  for (guint part = 0; plan->bodies != NULL && part < 2; part++) {
    const DrPlan *bp = g_ptr_array_index(plan->bodies, 2 * i + part);
    if (bp == NULL) continue;
    dr__json_key(w, part == 0 ? "body" : "else");
    write_plan_object(bp, w);
  }
  dr__json_end_object(w);
}

static void write_plan(const DrPlan *plan, DrJsonWriter *w) {
  write_plan_object(plan, w);
  g_string_append_c(w->out, '\n');
}

static void write_plan_object(const DrPlan *plan, DrJsonWriter *w) {
  const DrGraph *g = plan->graph;
  dr__json_begin_object(w);
  dr__json_member_uint(w, "streams", plan->streams->len);
  dr__json_member_uint(w, "width", plan->width);
  dr__json_member_uint(w, "events", plan->waits->len);
  dr__json_member_uint(w, "edges", plan->n_edges);
  dr__json_member_uint(w, "cap", plan->cap);
  dr__json_member_bool(w, "cap_binds", plan->cap_binds);
  if (plan->mode_reason) {
    dr__json_member_string(w, "mode", dr_mode_name(plan->mode));
    dr__json_member_string(w, "mode_reason", plan->mode_reason);
  }
  dr__json_member_double(w, "critical_path_us", plan->critical_path_us, 3);
  dr__json_member_double(w, "planned_path_us", plan->planned_path_us, 3);
  if (plan->prediction) {
    const DrPlanPrediction *p = plan->prediction;
    dr__json_key(w, "prediction");
    dr__json_begin_object(w);
    dr__json_member_string(w, "mode", dr_mode_name(p->mode));
    dr__json_member_double(w, "predicted_us", p->predicted_us, 3);
    dr__json_member_double(w, "measured_us", isfinite(p->measured_us) ? p->measured_us : NAN, 3);
    dr__json_member_double(w, "cap_us", p->capped_us - p->critical_path_us, 3);
    dr__json_member_double(w, "launch_us", p->launched_us - p->capped_us, 3);
    dr__json_member_double(w, "waits_us", p->waited_us - p->launched_us, 3);
    dr__json_member_double(w, "transfers_us", p->predicted_us - p->waited_us, 3);
    dr__json_end_object(w);
  }
  dr__json_key(w, "antichain");
  dr__json_begin_array(w);
  for (guint32 i = 0; i < plan->antichain->len; i++)
    dr__json_string(w, dr_graph_node(g, g_array_index(plan->antichain, DrId, i))->id);
  dr__json_end_array(w);
  dr__json_key(w, "memory");
  dr__json_begin_object(w);
  dr__json_member_uint(w, "peak_serial_bytes", plan->peak_serial_bytes);
  dr__json_member_uint(w, "peak_bound_bytes", plan->peak_bound_bytes);
  dr__json_member_uint(w, "whole_run_bytes", plan->whole_run_bytes);
  dr__json_member_uint(w, "granule_bytes", DR_POOL_GRANULE);
  dr__json_member_uint(w, "lifetimes", plan->n_lifetimes);
  dr__plan_lifetimes_json(g, "peak_bound_buffers", plan->peak_bound, w);
  dr__plan_devices_json(plan, w);
  dr__plan_budget_json(plan, w);
  dr__plan_reuse_json(plan, w);
  dr__json_end_object(w);
  dr__json_key(w, "stream_priorities");
  dr__json_begin_array(w);
  for (guint32 s = 0; s < plan->streams->len; s++)
    dr__json_string(w, dr_priority_name(g_array_index(plan->streams, DrStream, s).priority));
  dr__json_end_array(w);
  gboolean multi = g->run.n_devices > 1;
  for (guint32 s = 0; s < plan->streams->len; s++)
    multi = multi || g_array_index(plan->streams, DrStream, s).comm;
  if (multi) {
    /* Only where devices or communication streams exist, so one-device
     * plans keep their shape: each stream's device (-1: a collective's
     * over several devices) and whether it is a communication stream. */
    dr__json_key(w, "stream_devices");
    dr__json_begin_array(w);
    for (guint32 s = 0; s < plan->streams->len; s++)
      dr__json_double(w, g_array_index(plan->streams, DrStream, s).device, 0);
    dr__json_end_array(w);
    dr__json_key(w, "stream_comm");
    dr__json_begin_array(w);
    for (guint32 s = 0; s < plan->streams->len; s++)
      dr__json_bool(w, g_array_index(plan->streams, DrStream, s).comm);
    dr__json_end_array(w);
  }
  dr__json_key(w, "nodes");
  dr__json_begin_array_lines(w, "  ");
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    const DrNode *node = dr_graph_node(g, step->node);
    dr__json_begin_object(w);
    dr__json_member_string(w, "id", node->id);
    dr__json_member_string(w, "op", dr_op_name(node->op));
    dr__json_member_uint(w, "stream", step->stream);
    dr__json_member_string(w, "priority", dr_priority_name(node->priority));
    if (multi) {
      /* its stream's device, where stream_devices is written */
      dr__json_key(w, "device");
      dr__json_double(w, g_array_index(plan->streams, DrStream, step->stream).device, 0);
    }
    /* Peer copies only, so other plans keep their shape: "access",
     * "staged" or "unknown" (DrPlan.peer_path). */
    const char *peer = dr_plan_peer_path(plan, step->node);
    if (peer != NULL) dr__json_member_string(w, "peer", peer);
    dr__json_key(w, "waits");
    dr__json_begin_array(w);
    for (guint32 k = 0; k < step->wait_count; k++)
      dr__json_string(w, dr_graph_node(g, dr_plan_wait(plan, step->wait_first + k))->id);
    dr__json_end_array(w);
    if (node->loop) write_loop(plan, dr_graph_node_loop(g, step->node), w);
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
  dr__json_end_object(w);
}

void dr_plan_write_json(const DrPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  DrJsonWriter w;
  dr__json_init(&w, out, NULL);
  write_plan(plan, &w);
}

gboolean dr_plan_write_json_file(const DrPlan *plan, FILE *file, const char *what, GError **error) {
  g_return_val_if_fail(plan != NULL && file != NULL, FALSE);
  g_autoptr(GString) buf = g_string_sized_new(80 * 1024);
  DrJsonWriter w;
  dr__json_init(&w, buf, file);
  write_plan(plan, &w);
  if (!dr__json_finish(&w)) {
    int saved = errno;
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: %s", what ? what : "plan", g_strerror(saved));
    return FALSE;
  }
  return TRUE;
}
