/* plan_text.c: the --plan text writer, the human-readable plan and the
 * planner's golden-test format. Not JSON (plan_json.c) nor DOT (dot.c),
 * though the node details and the per-stream grouping here are shared
 * with dot.c (plan_common.h).
 *
 * Layout: a summary (width with its antichain certificate, streams and the
 * cap, what the cap costs when it binds, waits against cross-stream edges,
 * critical and planned paths, device memory: the serial peak and the
 * certified bound with its lifetimes), then each stream's nodes in stream order,
 * then every step in issue order with its waits. Only ids, counts and
 * rounded estimates (num.h: '.' decimals and English sizes whatever the
 * locale): no addresses, so the text is stable. O(V + E). */
#include <string.h>
#include <math.h>

#include "ir/loops.h"
#include "report/num.h"
#include "report/plan_common.h"
#include "report/plan_memory.h"
#include "report/report.h"

/* At most this many antichain ids are printed. */
#define ANTICHAIN_SHOWN 32u

static guint64 node_bytes(const DrGraph *g, const DrNode *node, gboolean reads) {
  guint64 bytes = 0;
  for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    if (reads ? dr_access_reads(a->mode) : dr_access_writes(a->mode))
      bytes += (a->end - a->begin) * (guint64)dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
  }
  return bytes;
}

void dr__plan_node_detail(const DrGraph *g, DrId id, GString *out) {
  const DrNode *node = dr_graph_node(g, id);
  const DrLoop *loop = node->loop ? dr_graph_node_loop(g, id) : NULL;
  if (loop != NULL) {
    /* "loop repeat 3", "loop while go", "if go": one node in its graph. */
    if (loop->kind == DR_LOOP_IF)
      g_string_append_printf(out, "if %s", dr_graph_buffer(g, loop->cond)->name);
    else if (loop->kind == DR_LOOP_REPEAT)
      g_string_append_printf(out, "loop repeat %" G_GUINT64_FORMAT "%s", loop->count,
                             loop->counted ? " (counted: from a parameter, per run)" : "");
    else
      g_string_append_printf(out, "loop while %s", dr_graph_buffer(g, loop->cond)->name);
    guint64 inside = dr_graph_n_nodes(loop->body) + (loop->else_body ? dr_graph_n_nodes(loop->else_body) : 0);
    g_string_append_printf(out, ", %" G_GUINT64_FORMAT " body node%s", inside, inside == 1 ? "" : "s");
    return;
  }
  g_string_append(out, dr_op_name(node->op));
  switch (node->op) {
    case DR_OP_KERNEL:
      if (node->kernel < g->kernels->len)
        g_string_append_printf(out, " %s", dr_graph_kernel(g, node->kernel)->name);
      break;
    case DR_OP_COPY:
    case DR_OP_MEMSET:
      g_string_append_c(out, ' ');
      dr__num_size_iec(out, node_bytes(g, node, node->op == DR_OP_COPY));
      break;
    case DR_OP_HOST:
      g_string_append_printf(out, " %s", dr_graph_host_fn_label(g, node));
      break;
    case DR_OP_ALLOC:
    case DR_OP_FREE:
      if (node->buffer < g->buffers->len)
        g_string_append_printf(out, " %s", dr_graph_buffer(g, node->buffer)->name);
      break;
    case DR_OP_ALLREDUCE:
    case DR_OP_REDUCE:
    case DR_OP_REDUCESCATTER:
      g_string_append_printf(out, " %s", dr_reduce_name(node->reduce));
      /* fall through */
    case DR_OP_BROADCAST:
    case DR_OP_ALLGATHER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      g_string_append_c(out, ' ');
      dr__num_size_iec(out, node_bytes(g, node, node->op != DR_OP_RECV) / MAX(node->n_parts, 1));
      if (node->n_parts > 1) g_string_append_printf(out, " x%u", node->n_parts);
      if (node->root >= 0) g_string_append_printf(out, " root=%d", node->root);
      if (node->peer >= 0) g_string_append_printf(out, " peer=%d", node->peer);
      break;
    case DR_OP_NOOP:
    case DR_N_OPS:
      break;
  }
}

/* A peer copy's devices and path (DrPlan.peer_path): ", peer 0->1",
 * ", peer 0->1 staged through pinned host memory" (no peer access), ",
 * peer 0->1 (access checked at run time)" (not probed: the host backend
 * copies between its separate memories). */
static void write_peer(const DrPlan *plan, DrId v, GString *out) {
  gint32 sd, dd;
  const char *path = dr_plan_peer_path(plan, v);
  if (path == NULL || !dr_graph_copy_is_peer(plan->graph, v, &sd, &dd)) return;
  g_string_append_printf(out, ", peer %d->%d", sd, dd);
  if (strcmp(path, "staged") == 0)
    g_string_append(out, " staged through pinned host memory");
  else if (strcmp(path, "unknown") == 0)
    g_string_append(out, " (access checked at run time)");
}

void dr__plan_stream_kind(const DrGraph *g, const DrStream *st, GString *out) {
  if (g->run.n_devices > 1 && st->device >= 0) g_string_append_printf(out, "device %d, ", st->device);
  if (st->comm)
    g_string_append_printf(out, "comm%s", st->device < 0 ? ", all devices" : "");
  else
    g_string_append(out, dr_priority_name(st->priority));
}

guint32 *dr__plan_steps_by_stream(const DrPlan *plan, guint32 **start_out) {
  guint32 n = plan->steps->len, n_streams = plan->streams->len;
  guint32 *start = g_new0(guint32, n_streams + 1);
  guint32 *bucket = g_new(guint32, MAX(n, 1));
  for (guint32 s = 0; s < n_streams; s++)
    start[s + 1] = start[s] + g_array_index(plan->streams, DrStream, s).n_nodes;
  guint32 *fill = g_memdup2(start, (n_streams + 1) * sizeof(guint32));
  for (guint32 i = 0; i < n; i++) bucket[fill[dr_plan_step(plan, i)->stream]++] = i;
  g_free(fill);
  *start_out = start;
  return bucket;
}

/* "memory: serial peak S (file order), bound B (any execution: W
 * whole-run + K of N lifetimes: buf#k ...), 512 B granules". */
static void write_memory(const DrPlan *plan, GString *out) {
  const DrGraph *g = plan->graph;
  g_string_append(out, "memory: serial peak ");
  dr__num_size_iec(out, plan->peak_serial_bytes);
  g_string_append(out, " (file order), bound ");
  dr__num_size_iec(out, plan->peak_bound_bytes);
  g_string_append(out, " (any execution: ");
  dr__num_size_iec(out, plan->whole_run_bytes);
  g_string_append_printf(out, " whole-run + %u of %u lifetime%s", plan->peak_bound->len, plan->n_lifetimes,
                         plan->n_lifetimes == 1 ? "" : "s");
  for (guint32 i = 0; i < MIN(plan->peak_bound->len, ANTICHAIN_SHOWN); i++) {
    const DrPlanLifetime *l = &g_array_index(plan->peak_bound, DrPlanLifetime, i);
    g_string_append_printf(out, "%s%s#%u", i ? " " : ": ", dr_graph_buffer(g, l->buffer)->name, l->lifetime);
  }
  if (plan->peak_bound->len > ANTICHAIN_SHOWN)
    g_string_append_printf(out, " ... (%u more)", plan->peak_bound->len - ANTICHAIN_SHOWN);
  g_string_append_printf(out, "), %u B granules\n", DR_POOL_GRANULE);
}

/* Graph mode's unroll of while `l` with body plan `bp`, as
 * backends/cuda/condgraph.c chooses it without DAGRUN_WHILE_GUARD (the
 * rules are ir/loops.h's): one line. */
static void write_while_choice(const DrLoop *l, const DrPlan *bp, GString *out) {
  const char *why = NULL;
  double us = bp->critical_path_us;
  if (dr_loop_while_guardable(bp->graph, l->cond, NULL, &why)) {
    guint32 u = dr_loop_auto_unroll_guarded(us);
    g_string_append_printf(out,
                           "graph mode: one CUDA WHILE node, %u %s of the body per trip, guarded by %s "
                           "(a body of %.2f us against a trip's %.1f us), or DAGRUN_WHILE_UNROLL\n",
                           u, u == 1 ? "copy" : "copies",
                           dr_while_guard_name(u == 1 ? DR_WHILE_GUARD_NONE : DR_WHILE_GUARD_KERNEL), us,
                           DR_WHILE_TRIP_US);
    return;
  }
  g_string_append_printf(
      out,
      "graph mode: one CUDA WHILE node, 1 copy of the body per trip (not guardable by "
      "kernels: %s), or DAGRUN_WHILE_UNROLL guarded by %s (auto: %u, for a body of %.2f us "
      "against a trip's %.1f us)\n",
      why, dr_while_guard_name(DR_WHILE_GUARD_IF), dr_loop_auto_unroll(us), us, DR_WHILE_TRIP_US);
}

/* The copies touching `where: pageable` buffers, which block the issuing
 * host thread (CUDA's synchronization rules for pageable memory): one line
 * naming up to ANTICHAIN_SHOWN of them, none when there are none. */
static void write_pageable(const DrGraph *g, GString *out) {
  guint n = 0;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *node = dr_graph_node(g, i);
    if (dr_graph_copy_pageable(g, i) == DR_NONE) continue;
    if (n == 0)
      g_string_append(
          out,
          "pageable copies (each blocks the host thread issuing it on CUDA: to the device until the driver "
          "has staged it, from the device until it is done; graph mode refuses them):");
    if (n++ < ANTICHAIN_SHOWN) g_string_append_printf(out, " %s", node->id);
  }
  if (n > ANTICHAIN_SHOWN) g_string_append_printf(out, " ... (%u more)", n - ANTICHAIN_SHOWN);
  if (n) g_string_append_c(out, '\n');
}

void dr_plan_write_prediction(const DrPlan *plan, GString *out) {
  const DrPlanPrediction *p = plan->prediction;
  if (p == NULL) return;
  dr__num_appendf(out, "predicted makespan %.1f us (%s mode", p->predicted_us, dr_mode_name(p->mode));
  if (isfinite(p->measured_us) && p->measured_us > 0)
    dr__num_appendf(out, "; the profile measured %.1f us in %s mode: %+.1f%%", p->measured_us,
                    p->profile_mode ? p->profile_mode : "?",
                    100.0 * (p->predicted_us / p->measured_us - 1.0));
  g_string_append(out, ")\n");
}

void dr_plan_write_explain(const DrPlan *plan, GString *out) {
  const DrPlanPrediction *p = plan->prediction;
  if (p == NULL) {
    g_string_append(out, "explain: no profile (--profile=FILE, a JSON run report), nothing to explain\n");
    return;
  }
  gboolean measured = isfinite(p->measured_us) && p->measured_us > 0;
  double total = measured ? p->measured_us : p->predicted_us;
  dr__num_appendf(out, "explain: %s makespan %.1f us, critical path %.1f us, gap %.1f us\n",
                  measured ? "measured" : "predicted (the profile has no makespan)", total,
                  p->critical_path_us, total - p->critical_path_us);
  const struct {
    const char *what;
    double us;
  } parts[] = {
      {"false serialization from the stream cap", p->capped_us - p->critical_path_us},
      {"launch overhead", p->launched_us - p->capped_us},
      {"waits (host calls and cross-stream edges)", p->waited_us - p->launched_us},
      {"transfers (one copy engine per direction)", p->predicted_us - p->waited_us},
      {"not explained (measured - predicted)", total - p->predicted_us},
  };
  for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
    if (i == G_N_ELEMENTS(parts) - 1 && !measured) break;
    dr__num_appendf(out, "  %-42s %10.1f us\n", parts[i].what, parts[i].us);
  }
}

void dr_plan_write_text(const DrPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  const DrGraph *g = plan->graph;
  guint32 n = g->nodes->len, n_streams = plan->streams->len, cross = 0;
  for (guint32 e = 0; e < g->edges->len; e++)
    cross += plan->node_stream[dr_graph_edge(g, e)->from] != plan->node_stream[dr_graph_edge(g, e)->to];

  g_string_append_printf(out, "plan %s: %u nodes, %u edges\n", g->name ? g->name : "(unnamed)", n,
                         plan->n_edges);
  g_string_append_printf(out, "width %u, antichain:", plan->width);
  for (guint32 i = 0; i < MIN(plan->antichain->len, ANTICHAIN_SHOWN); i++)
    g_string_append_printf(out, " %s", dr_graph_node(g, g_array_index(plan->antichain, DrId, i))->id);
  if (plan->antichain->len > ANTICHAIN_SHOWN)
    g_string_append_printf(out, " ... (%u more)", plan->antichain->len - ANTICHAIN_SHOWN);
  if (plan->uncapped)
    g_string_append_printf(out, "\nstreams %u, cap none (graph mode)", n_streams);
  else
    g_string_append_printf(out, "\nstreams %u, cap %u", n_streams, plan->cap);
  if (plan->cap_binds) {
    double pct =
        plan->critical_path_us > 0 ? 100.0 * (plan->planned_path_us / plan->critical_path_us - 1.0) : 0.0;
    dr__num_appendf(out, " (binds: chains merged onto %u streams cost %.1f us of critical path, +%.1f%%",
                    n_streams, plan->planned_path_us - plan->critical_path_us, pct);
    if (plan->cap_note) g_string_append_printf(out, "; cap %s", plan->cap_note);
    g_string_append_c(out, ')');
  } else if (!plan->uncapped) {
    g_string_append(out, " (does not bind)");
  }
  if (plan->mode_reason)
    g_string_append_printf(out, "\nmode %s (%s)", dr_mode_name(plan->mode), plan->mode_reason);
  g_string_append_printf(out, "\nevents %u (for %u cross-stream edges)\n", plan->waits->len, cross);
  dr__num_appendf(out, "critical path %.1f us, planned path %.1f us\n", plan->critical_path_us,
                  plan->planned_path_us);
  dr_plan_write_prediction(plan, out);
  if (plan->peak_bound_bytes > 0) write_memory(plan, out); /* no device memory: no line */
  if (plan->peak_bound_bytes > 0) dr__plan_devices_text(plan, out);
  write_pageable(g, out);
  dr__plan_budget_text(plan, out);
  dr__plan_reuse_text(plan, out);

  guint32 *start = NULL;
  guint32 *bucket = dr__plan_steps_by_stream(plan, &start);
  for (guint32 s = 0; s < n_streams; s++) {
    const DrStream *st = &g_array_index(plan->streams, DrStream, s);
    g_string_append_printf(out, "stream %u (", s);
    dr__plan_stream_kind(g, st, out);
    g_string_append_printf(out, ", %u node%s):", st->n_nodes, st->n_nodes == 1 ? "" : "s");
    for (guint32 k = start[s]; k < start[s + 1]; k++)
      g_string_append_printf(out, " %s", dr_graph_node(g, dr_plan_step(plan, bucket[k])->node)->id);
    g_string_append_c(out, '\n');
  }
  g_free(bucket);
  g_free(start);

  g_string_append(out, "steps:\n");
  for (guint32 i = 0; i < n; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    g_string_append_printf(out, "  %u s%u %s (", i, step->stream, dr_graph_node(g, step->node)->id);
    dr__plan_node_detail(g, step->node, out);
    write_peer(plan, step->node, out);
    g_string_append_c(out, ')');
    if (g->run.n_devices > 1) {
      /* each node's device where there are several (its stream's) */
      gint32 d = g_array_index(plan->streams, DrStream, step->stream).device;
      if (d < 0)
        g_string_append(out, " on all devices");
      else
        g_string_append_printf(out, " on device %d", d);
    }
    if (step->wait_count > 0) {
      g_string_append(out, " waits");
      for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
        DrId u = dr_plan_wait(plan, w);
        g_string_append_printf(out, " %s@s%u", dr_graph_node(g, u)->id, plan->node_stream[u]);
      }
    }
    g_string_append_c(out, '\n');
  }
  /* Each body's own plan (ir/plan.h, plan->bodies), after its loop's. */
  for (guint i = 0; plan->bodies != NULL && i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    for (guint part = 0; part < 2; part++) {
      const DrPlan *bp = g_ptr_array_index(plan->bodies, 2 * i + part);
      if (bp == NULL) continue;
      g_string_append_printf(out, "%s of %s '%s' (", part == 0 ? "body" : "else body", dr_loop_noun(l->kind),
                             l->id);
      dr__plan_node_detail(g, l->node, out);
      g_string_append(out, "):\n");
      if (l->kind == DR_LOOP_WHILE && part == 0 && plan->uncapped) write_while_choice(l, bp, out);
      dr_plan_write_text(bp, out);
    }
  }
}
