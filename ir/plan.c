/* plan.c: allocation, the serial plan and the invariant check of DrPlan
 * (plan.h). Planning itself is scheduler/'s job. */
#include "ir/plan.h"

#include "ir/loops.h"

#include <string.h>

DrPlan *dr_plan_new(const DrGraph *graph) {
  g_return_val_if_fail(graph != NULL, NULL);
  DrPlan *p = g_new0(DrPlan, 1);
  guint32 n = graph->nodes->len;
  p->graph = graph;
  p->streams = g_array_new(FALSE, TRUE, sizeof(DrStream));
  p->steps = g_array_sized_new(FALSE, TRUE, sizeof(DrPlanStep), n);
  p->waits = g_array_new(FALSE, TRUE, sizeof(DrId));
  p->antichain = g_array_new(FALSE, TRUE, sizeof(DrId));
  p->peak_bound = g_array_new(FALSE, TRUE, sizeof(DrPlanLifetime));
  p->device_memory = g_array_new(FALSE, TRUE, sizeof(DrPlanDeviceMemory));
  p->node_stream = g_new0(guint32, MAX(n, 1));
  p->node_step = g_new0(guint32, MAX(n, 1));
  p->needs_event = g_new0(gboolean, MAX(n, 1));
  p->n_edges = graph->edges->len;
  return p;
}

void dr_plan_free(DrPlan *plan) {
  if (plan == NULL) return;
  g_array_unref(plan->streams);
  g_array_unref(plan->steps);
  g_array_unref(plan->waits);
  g_array_unref(plan->antichain);
  g_array_unref(plan->peak_bound);
  for (guint i = 0; i < plan->device_memory->len; i++)
    g_array_unref(g_array_index(plan->device_memory, DrPlanDeviceMemory, i).peak_bound);
  g_array_unref(plan->device_memory);
  g_free(plan->node_stream);
  g_free(plan->node_step);
  g_free(plan->needs_event);
  g_free(plan->storage);
  g_free(plan->storage_bytes);
  g_free(plan->peer_path);
  g_free(plan->mode_reason);
  if (plan->prediction) g_free(plan->prediction->profile_mode);
  g_free(plan->prediction);
  if (plan->bodies) g_ptr_array_unref(plan->bodies);
  g_free(plan);
}

const char *dr_plan_peer_path(const DrPlan *plan, DrId v) {
  const DrGraph *g = plan->graph;
  gint32 sd, dd;
  if (!dr_graph_copy_is_peer(g, v, &sd, &dd)) return NULL;
  if (sd == dd) return "access";
  if (plan->peer_path == NULL) return "unknown";
  guint32 n;
  (void)dr_graph_devices(g, &n);
  gint32 a = dr_graph_node_device(g, v), b = a == sd ? dd : sd;
  gint32 ra = dr_graph_device_rank(g, a), rb = dr_graph_device_rank(g, b);
  if (ra < 0 || rb < 0) return "unknown";
  guint8 p = plan->peer_path[(guint32)ra * n + (guint32)rb];
  return p == DR_PEER_ACCESS ? "access" : p == DR_PEER_STAGED ? "staged" : "unknown";
}

/* Several devices: the serial order still, on one stream per device (a
 * stream belongs to one device), each node waiting on the one before it
 * when that ran on another device's stream. */
static void serial_per_device(DrPlan *p, const DrGraph *graph) {
  guint32 n = graph->nodes->len;
  gint32 devs[DR_MAX_DEVICES + 1];
  guint32 n_devs = 0;
  for (DrId i = 0; i < n; i++) {
    gint32 d = dr_graph_node_device(graph, i);
    guint32 k = 0;
    while (k < n_devs && devs[k] != d) k++;
    if (k == n_devs) {
      devs[n_devs++] = d;
      DrStream s = {DR_PRIORITY_NORMAL, 0, d, d < 0};
      g_array_append_val(p->streams, s);
    }
    g_array_index(p->streams, DrStream, k).n_nodes++;
    DrPlanStep step = {i, k, p->waits->len, 0};
    if (i > 0 && p->node_stream[i - 1] != k) {
      DrId prev = i - 1;
      g_array_append_val(p->waits, prev);
      step.wait_count = 1;
      p->needs_event[prev] = TRUE;
    }
    g_array_append_val(p->steps, step);
    p->node_step[i] = i;
    p->node_stream[i] = k;
  }
}

DrPlan *dr_plan_new_serial(const DrGraph *graph) {
  DrPlan *p = dr_plan_new(graph);
  guint32 n = graph->nodes->len;
  if (graph->run.n_devices > 1) {
    serial_per_device(p, graph);
  } else {
    DrStream s = {DR_PRIORITY_NORMAL, n, graph->run.device, FALSE};
    g_array_append_val(p->streams, s);
    for (DrId i = 0; i < n; i++) {
      DrPlanStep step = {i, 0, 0, 0};
      g_array_append_val(p->steps, step);
      p->node_step[i] = i;
    }
  }
  p->width = n ? 1 : 0;
  p->cap = 1;
  if (dr_graph_n_loops(graph) > 0) {
    p->bodies = g_ptr_array_new_with_free_func((GDestroyNotify)dr_plan_free);
    for (guint i = 0; i < dr_graph_n_loops(graph); i++) {
      const DrLoop *l = dr_graph_loop(graph, i);
      g_ptr_array_add(p->bodies, dr_plan_new_serial(l->body));
      g_ptr_array_add(p->bodies, l->else_body ? dr_plan_new_serial(l->else_body) : NULL);
    }
  }
  return p;
}

#define FAIL(...)                                                \
  do {                                                           \
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, __VA_ARGS__); \
    return FALSE;                                                \
  } while (0)

/* Is `to` reachable from `from` through stream order and waits? Walks
 * backward from `to` over "happens-before" links: the previous step on the
 * same stream and every waited node. */
static gboolean ordered(const DrPlan *p, DrId from, DrId to, guint32 *prev_on_stream, guint8 *seen,
                        GArray *stack) {
  guint32 n = p->graph->nodes->len;
  memset(seen, 0, n);
  g_array_set_size(stack, 0);
  g_array_append_val(stack, to);
  while (stack->len) {
    DrId v = g_array_index(stack, DrId, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    if (v == from) return TRUE;
    if (seen[v]) continue;
    seen[v] = 1;
    const DrPlanStep *s = dr_plan_step(p, p->node_step[v]);
    if (p->node_step[v] < p->node_step[from]) continue;
    guint32 prev = prev_on_stream[p->node_step[v]];
    if (prev != G_MAXUINT32) g_array_append_val(stack, dr_plan_step(p, prev)->node);
    for (guint32 w = s->wait_first; w < s->wait_first + s->wait_count; w++) {
      DrId u = dr_plan_wait(p, w);
      g_array_append_val(stack, u);
    }
  }
  return FALSE;
}

gboolean dr_plan_check(const DrPlan *plan, GError **error) {
  const DrGraph *g = plan->graph;
  guint32 n = g->nodes->len;
  if (plan->steps->len != n) FAIL("P1: %u steps for %u nodes", plan->steps->len, n);
  g_autofree guint8 *seen = g_new0(guint8, MAX(n, 1));
  g_autofree guint32 *prev_on_stream = g_new(guint32, MAX(n, 1));
  g_autofree guint32 *last = g_new(guint32, MAX(plan->streams->len, 1));
  for (guint32 s = 0; s < plan->streams->len; s++) last[s] = G_MAXUINT32;
  for (guint32 i = 0; i < n; i++) {
    const DrPlanStep *s = dr_plan_step(plan, i);
    if (s->node >= n || seen[s->node]) FAIL("P1: step %u repeats or names no node", i);
    seen[s->node] = 1;
    if (plan->node_step[s->node] != i) FAIL("P1: node_step of '%s' is wrong", dr_graph_node(g, s->node)->id);
    if (s->stream >= plan->streams->len) FAIL("P1: step %u names no stream", i);
    if (plan->node_stream[s->node] != s->stream)
      FAIL("P1: node_stream of '%s' is wrong", dr_graph_node(g, s->node)->id);
    const DrStream *st = &g_array_index(plan->streams, DrStream, s->stream);
    const DrNode *nd = dr_graph_node(g, s->node);
    if (st->comm ? !DR_OP_IS_COLLECTIVE(nd->op) : nd->priority != st->priority)
      FAIL("P4: '%s' has another priority than its stream", nd->id);
    if (dr_graph_node_device(g, s->node) != st->device)
      FAIL("P4: '%s' runs on device %d, its stream on %d", nd->id, dr_graph_node_device(g, s->node),
           st->device);
    prev_on_stream[i] = last[s->stream];
    last[s->stream] = i;
    for (guint32 w = s->wait_first; w < s->wait_first + s->wait_count; w++) {
      DrId u = dr_plan_wait(plan, w);
      if (u >= n || plan->node_step[u] >= i || plan->node_stream[u] == s->stream)
        FAIL("P3: wait %u of '%s' is not an earlier node on another stream", w,
             dr_graph_node(g, s->node)->id);
      if (!plan->needs_event[u]) FAIL("P3: '%s' is waited on but records no event", dr_graph_node(g, u)->id);
    }
  }
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(DrId));
  for (guint i = 0; i < g->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(g, i);
    if (!ordered(plan, e->from, e->to, prev_on_stream, seen, stack))
      FAIL("P2: edge %s -> %s is not implied by the plan", dr_graph_node(g, e->from)->id,
           dr_graph_node(g, e->to)->id);
  }
  return TRUE;
}

gboolean dr_plan_storage_bindable(const DrGraph *graph, const DrId *storage, DrId buffer, GError **error) {
  g_return_val_if_fail(graph != NULL && buffer < graph->buffers->len, FALSE);
  for (DrId j = 0; storage != NULL && j < graph->buffers->len; j++)
    if (storage[j] != j && (j == buffer || storage[j] == buffer)) {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                  "buffer '%s' shares its storage with other scratch buffers (memory.reuse: auto); it cannot "
                  "be bound to external memory",
                  dr_graph_buffer(graph, buffer)->name);
      return FALSE;
    }
  return TRUE;
}
