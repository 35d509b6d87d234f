/* budget.c: the memory budget (budget.h): ordering edges that make the
 * certified worst-case peak fit a limit, the pass that adds them, and the
 * memory/concurrency trade-off curve. Not the bound itself (memory.c) nor
 * the plan (planner.c).
 *
 * Requires: a DAG whose edges are sorted by (to, from) and whose
 * lifetimes passed (the cycles pass ran). Provides graph->budget and
 * graph->memory_edges, and edges in graph->edges (AFTER, buffer DR_NONE).
 *
 * Why an edge always exists. The lifetimes of a maximum-weight antichain
 * heavier than the serial peak cannot all overlap in file order: intervals
 * that overlap pairwise share a point (Helly, in one dimension), where
 * file order would have them all live. So some lifetime x of the
 * antichain is freed before another, y, is allocated in file order, and
 * the edge free(x) -> alloc(y) runs forward in file order: the serial
 * meaning is unchanged and, since every edge of the graph that goes
 * backward is an `after:` the user wrote, only such an edge could make it
 * close a cycle (checked). Each edge makes x precede y, so the antichain
 * loses weight; the loop ends because each edge orders a pair that was
 * unordered, and at the latest when the order is file order's, whose bound
 * is the serial peak.
 *
 * Cost per added edge: the chosen edge's insertion into a copy of the edge
 * array (O(E)), the edge index again (O(V + E)), the issue order kept
 * topological (when the edge runs backward in it, only the nodes between
 * its ends that must move are moved: order_repair), the longest paths
 * (O(V + E)),
 * the new augmenting paths of the bound's flow (memory.c continues the
 * flow so far: added capacity keeps it feasible), and O(A^2) candidate pairs for an
 * antichain of A lifetimes. The widths (before and after) cost a chain
 * cover each, only when an edge is added. Nothing without a limit. */
#include "scheduler/budget.h"

#include <string.h>

#include "ir/plan.h"
#include "scheduler/plan_internal.h"

typedef struct {
  const DrGraph *g;
  GArray *edges; /* DrEdge: the graph's and the added ones, sorted by (to, from) */
  double *dur;   /* [n] the cost model's, computed once */
  DrPlanCtx ctx;
  double path_us; /* the critical path under `edges` */
} Work;

/* (Re)builds the edge index and issue order of w->edges. */
static void work_index(Work *w) {
  w->ctx.dur = NULL; /* ours, not the context's */
  dr__plan_ctx_clear(&w->ctx);
  memset(&w->ctx, 0, sizeof w->ctx);
  w->ctx.graph = w->g;
  w->ctx.n = w->g->nodes->len;
  w->ctx.m = w->edges->len;
  w->ctx.edges = (const DrEdge *)w->edges->data;
  g_autoptr(GError) error = NULL;
  if (!dr__plan_index(&w->ctx, &error)) g_error("memory budget: %s", error->message);
  if (w->dur == NULL) {
    dr__plan_costs(&w->ctx, NULL);
    w->dur = w->ctx.dur;
  }
  w->ctx.dur = w->dur;
  if (!dr__plan_order(&w->ctx, &w->path_us, &error)) g_error("memory budget: %s", error->message);
}

/* After an edge is added: the edge index again, the order kept (and
 * repaired by order_repair where the edge runs backward in it). A
 * topological order is all the longest paths, the cycle test and the
 * chain cover need of it, and longest paths do not depend on which
 * topological order computes them. */
static void work_reindex(Work *w) {
  g_clear_pointer(&w->ctx.pred_off, g_free);
  g_clear_pointer(&w->ctx.succ_off, g_free);
  g_clear_pointer(&w->ctx.succ_edge, g_free);
  w->ctx.m = w->edges->len;
  w->ctx.edges = (const DrEdge *)w->edges->data;
  g_autoptr(GError) error = NULL;
  if (!dr__plan_index(&w->ctx, &error)) g_error("memory budget: %s", error->message);
}

static int pos_cmp(const void *a, const void *b, gpointer data) {
  const guint32 *pos = data;
  guint32 x = pos[*(const DrId *)a], y = pos[*(const DrId *)b];
  return x < y ? -1 : x > y;
}

static int u32_cmp(const void *a, const void *b) {
  guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
  return x < y ? -1 : x > y;
}

/* The search of order_repair: from `start`, the nodes it reaches forward
 * (or backward) whose positions lie within [lo, hi], appended to `out`. */
static void region(const DrPlanCtx *c, DrId start, gboolean forward, guint32 lo, guint32 hi, guint32 *stamp,
                   guint32 mark, GArray *stack, GArray *out) {
  g_array_set_size(stack, 0);
  g_array_append_val(stack, start);
  stamp[start] = mark;
  while (stack->len > 0) {
    DrId u = g_array_index(stack, DrId, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    g_array_append_val(out, u);
    guint32 k0 = forward ? c->succ_off[u] : DR__PRED_BEGIN(c, u);
    guint32 k1 = forward ? c->succ_off[u + 1] : DR__PRED_END(c, u);
    for (guint32 k = k0; k < k1; k++) {
      DrId v = forward ? c->edges[c->succ_edge[k]].to : c->edges[k].from;
      if (stamp[v] != mark && c->pos[v] >= lo && c->pos[v] <= hi) {
        stamp[v] = mark;
        g_array_append_val(stack, v);
      }
    }
  }
}

/* After an edge x -> y that the issue order has backward (y before x):
 * the order made topological again by moving only the nodes between them
 * that must move (Pearce and Kelly's dynamic topological order): those
 * that reach x go, in their old relative order, before those that y
 * reaches, into the same positions. O(the region and its edges, and a
 * sort of it), against a heap over every node for a new issue order. */
static void order_repair(Work *w, DrId x, DrId y, guint32 *stamp, guint32 *mark, GArray *stack) {
  DrPlanCtx *c = &w->ctx;
  guint32 lo = c->pos[y], hi = c->pos[x];
  g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(DrId));
  g_autoptr(GArray) back = g_array_new(FALSE, FALSE, sizeof(DrId));
  region(c, y, TRUE, lo, hi, stamp, ++*mark, stack, fwd);
  region(c, x, FALSE, lo, hi, stamp, ++*mark, stack, back);
  g_array_sort_with_data(fwd, pos_cmp, c->pos);
  g_array_sort_with_data(back, pos_cmp, c->pos);
  guint32 total = back->len + fwd->len;
  g_autofree guint32 *slots = g_new(guint32, total);
  g_autofree DrId *nodes = g_new(DrId, total);
  for (guint32 i = 0; i < back->len; i++) nodes[i] = g_array_index(back, DrId, i);
  for (guint32 i = 0; i < fwd->len; i++) nodes[back->len + i] = g_array_index(fwd, DrId, i);
  for (guint32 i = 0; i < total; i++) slots[i] = c->pos[nodes[i]];
  qsort(slots, total, sizeof(guint32), u32_cmp);
  for (guint32 i = 0; i < total; i++) {
    c->pos[nodes[i]] = slots[i];
    c->order[slots[i]] = nodes[i];
  }
}

static void work_clear(Work *w) {
  w->ctx.dur = NULL;
  dr__plan_ctx_clear(&w->ctx);
  g_free(w->dur);
  g_array_unref(w->edges);
}

static guint32 work_width(Work *w) {
  g_autoptr(GArray) antichain = g_array_new(FALSE, FALSE, sizeof(DrId));
  /* A cover before this one (the width before the edges) left its arrays:
   * the index is rebuilt in place now, not with the context cleared. */
  g_clear_pointer(&w->ctx.chain, g_free);
  g_clear_pointer(&w->ctx.node_class, g_free);
  g_clear_pointer(&w->ctx.class_chains, g_free);
  return dr__plan_chains(&w->ctx, antichain);
}

/* Inserts edge (from, to) keeping w->edges sorted by (to, from); returns
 * its index. */
static guint insert_edge(GArray *edges, DrEdge e) {
  guint lo = 0, hi = edges->len;
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    const DrEdge *m = &g_array_index(edges, DrEdge, mid);
    if (m->to < e.to || (m->to == e.to && m->from < e.from))
      lo = mid + 1;
    else
      hi = mid;
  }
  g_array_insert_val(edges, lo, e);
  return lo;
}

/* Whether `src` reaches `dst` (issue order positions bound the search: a
 * node after dst in a topological order cannot reach it). */
static gboolean reaches(const DrPlanCtx *c, DrId src, DrId dst, guint32 *stamp, guint32 mark, GArray *stack) {
  if (c->pos[src] > c->pos[dst]) return FALSE;
  g_array_set_size(stack, 0);
  g_array_append_val(stack, src);
  stamp[src] = mark;
  while (stack->len > 0) {
    DrId u = g_array_index(stack, DrId, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    if (u == dst) return TRUE;
    for (guint32 i = c->succ_off[u]; i < c->succ_off[u + 1]; i++) {
      DrId v = c->edges[c->succ_edge[i]].to;
      if (stamp[v] != mark && c->pos[v] <= c->pos[dst]) {
        stamp[v] = mark;
        g_array_append_val(stack, v);
      }
    }
  }
  return FALSE;
}

typedef struct {
  gboolean found;
  double growth;
  guint64 separated;
  DrEdge edge;
} Candidate;

static gboolean candidate_better(const Candidate *a, const Candidate *b) {
  if (!b->found) return TRUE;
  if (a->growth != b->growth) return a->growth < b->growth;
  if (a->separated != b->separated) return a->separated > b->separated;
  if (a->edge.from != b->edge.from) return a->edge.from < b->edge.from;
  return a->edge.to < b->edge.to;
}

/* ef: the longest path ending with v (v included); tl: starting with v.
 * Returns the critical path, the largest ef: the very sums and maxima
 * that order.c's estimated finishes make, so the same double. */
static double longest_paths(const Work *w, double *ef, double *tl) {
  const DrPlanCtx *c = &w->ctx;
  guint32 n = c->n;
  double path = 0;
  for (guint32 i = 0; i < n; i++) {
    DrId v = c->order[i];
    double best = 0;
    for (guint32 e = DR__PRED_BEGIN(c, v); e < DR__PRED_END(c, v); e++)
      best = MAX(best, ef[c->edges[e].from]);
    ef[v] = best + w->dur[v];
    path = MAX(path, ef[v]);
  }
  for (guint32 i = n; i-- > 0;) {
    DrId v = c->order[i];
    double best = 0;
    for (guint32 k = c->succ_off[v]; k < c->succ_off[v + 1]; k++)
      best = MAX(best, tl[c->edges[c->succ_edge[k]].to]);
    tl[v] = best + w->dur[v];
  }
  return path;
}

/* The edge to add against antichain `anti` (DrPlanLifetime). */
static Candidate choose_edge(Work *w, const GArray *anti, double *ef, double *tl, guint32 *stamp,
                             guint32 *mark, GArray *stack) {
  const DrPlanCtx *c = &w->ctx;
  w->path_us = longest_paths(w, ef, tl);
  Candidate best = {0};
  for (guint i = 0; i < anti->len; i++) {
    const DrPlanLifetime *x = &g_array_index(anti, DrPlanLifetime, i);
    for (guint j = 0; j < anti->len; j++) {
      const DrPlanLifetime *y = &g_array_index(anti, DrPlanLifetime, j);
      if (i == j || x->free >= y->alloc) continue; /* forward in file order only */
      double path = MAX(w->path_us, ef[x->free] + tl[y->alloc]);
      Candidate cand = {
          TRUE, path - w->path_us, MIN(x->bytes, y->bytes), {x->free, y->alloc, DR_EDGE_AFTER, DR_NONE}};
      if (!candidate_better(&cand, &best)) continue;
      if (reaches(c, y->alloc, x->free, stamp, ++*mark, stack)) continue; /* would close a cycle */
      best = cand;
    }
  }
  return best;
}

/* dr__budget_edges over the edges `base` (DrEdge, sorted) instead of the
 * graph's own. */
static gboolean budget_edges_on(const DrGraph *graph, const GArray *base, guint64 limit, gboolean widths,
                                GArray *added, DrMemoryBudget *out) {
  guint32 n = graph->nodes->len;
  g_autoptr(GArray) lives = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  g_autofree guint32 *life_of = g_new(guint32, MAX(n, 1));
  guint64 whole = 0, serial = 0;
  dr__memory_lifetimes(graph, lives, life_of, &whole, &serial);
  *out = (DrMemoryBudget){.ran = TRUE, .limit = limit, .serial_peak_bytes = serial};
  if (limit < serial) return FALSE;

  Work w = {.g = graph, .edges = g_array_sized_new(FALSE, FALSE, sizeof(DrEdge), base->len + 16)};
  g_array_append_vals(w.edges, base->data, base->len);
  work_index(&w);
  g_autoptr(GArray) anti = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  DrMemoryFlow *flow = dr__memory_flow_new(&w.ctx, lives, life_of);
  guint64 bound = whole + dr__memory_flow_run(flow, anti);
  out->bound_before_bytes = bound;
  out->path_before_us = w.path_us;
  if (widths && bound > limit) out->width_before = work_width(&w);
  g_autofree double *ef = g_new(double, MAX(n, 1));
  g_autofree double *tl = g_new(double, MAX(n, 1));
  g_autofree guint32 *stamp = g_new0(guint32, MAX(n, 1));
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(DrId));
  guint32 mark = 0;
  guint first = added->len;
  while (bound > limit) {
    Candidate cand = choose_edge(&w, anti, ef, tl, stamp, &mark, stack);
    if (!cand.found) { /* cannot happen (file head): the limit is not below the serial peak */
      g_critical("memory budget: no edge lowers a bound of %" G_GUINT64_FORMAT " bytes", bound);
      break;
    }
    g_array_append_val(added, cand.edge);
    guint at = insert_edge(w.edges, cand.edge);
    work_reindex(&w);
    if (w.ctx.pos[cand.edge.from] > w.ctx.pos[cand.edge.to])
      order_repair(&w, cand.edge.from, cand.edge.to, stamp, &mark, stack);
    dr__memory_flow_insert_edge(flow, at, w.edges->len);
    g_array_set_size(anti, 0);
    bound = whole + dr__memory_flow_run(flow, anti); /* the flow so far stays feasible */
  }
  dr__memory_flow_free(flow);
  out->bound_after_bytes = bound;
  out->path_after_us = added->len > first ? longest_paths(&w, ef, tl) : w.path_us;
  if (widths) out->width_after = added->len > first ? work_width(&w) : out->width_before;
  if (widths && out->width_before == 0) out->width_before = out->width_after = work_width(&w);
  work_clear(&w);
  return TRUE;
}

gboolean dr__budget_edges(const DrGraph *graph, guint64 limit, gboolean widths, GArray *added,
                          DrMemoryBudget *out) {
  g_return_val_if_fail(graph != NULL && added != NULL && out != NULL, FALSE);
  return budget_edges_on(graph, graph->edges, limit, widths, added, out);
}

/* The error of a limit below the serial peak, with the certificate: the
 * lifetimes live together at the serial peak in file order. */
static void below_serial(const DrGraph *g, const DrMemoryBudget *b, DrDiags *diags) {
  guint32 n = g->nodes->len;
  g_autoptr(GArray) lives = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  g_autofree guint32 *life_of = g_new(guint32, MAX(n, 1));
  guint64 whole = 0, serial = 0;
  dr__memory_lifetimes(g, lives, life_of, &whole, &serial);
  /* The first node of file order after which the peak is live. */
  guint64 live = whole;
  DrId at = DR_NONE;
  for (DrId v = 0; v < n && at == DR_NONE; v++) {
    if (life_of[v] == DR_NONE) continue;
    const DrPlanLifetime *l = &g_array_index(lives, DrPlanLifetime, life_of[v]);
    live = l->alloc == v ? live + l->bytes : live - l->bytes;
    if (live == serial) at = v;
  }
  DrLoc loc = g->run.memory_limit_loc;
  if (loc.file == NULL) loc = (DrLoc){g->file, 0, 0};
  g_autofree char *lim = g_format_size_full(b->limit, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *pk = g_format_size_full(serial, G_FORMAT_SIZE_IEC_UNITS);
  dr_diags_error(diags, loc,
                 "memory limit %" G_GUINT64_FORMAT " bytes (%s) is below the serial peak %" G_GUINT64_FORMAT
                 " bytes (%s): even one node at a time in file order, these buffers are live together",
                 b->limit, lim, serial, pk);
  if (whole > 0)
    dr_diags_note(diags, loc, "%" G_GUINT64_FORMAT " bytes of buffers that live for the whole run", whole);
  for (guint i = 0; at != DR_NONE && i < lives->len; i++) {
    const DrPlanLifetime *l = &g_array_index(lives, DrPlanLifetime, i);
    if (l->alloc > at || l->free <= at) continue;
    const DrBuffer *buf = dr_graph_buffer(g, l->buffer);
    const DrNode *alloc = dr_graph_node(g, l->alloc);
    dr_diags_note(diags, alloc->loc,
                  "buffer '%s' (lifetime %u, %" G_GUINT64_FORMAT
                  " bytes as the pool counts it) is allocated "
                  "here by node '%s' and freed by node '%s'",
                  buf->name, l->lifetime, l->bytes, alloc->id, dr_graph_node(g, l->free)->id);
  }
}

gboolean dr__budget_run(DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  if (!graph->run.memory_limit_set) return TRUE;
  g_autoptr(GArray) added = g_array_new(FALSE, FALSE, sizeof(DrEdge));
  DrMemoryBudget b;
  if (!dr__budget_edges(graph, graph->run.memory_limit, TRUE, added, &b)) {
    below_serial(graph, &b, diags);
    return FALSE;
  }
  graph->budget = b;
  if (added->len == 0) return TRUE;
  for (guint i = 0; i < added->len; i++) {
    const DrEdge *e = &g_array_index(added, DrEdge, i);
    dr_graph_add_edge(graph, e->from, e->to, e->kind, e->buffer);
  }
  dr_graph_sort_edges(graph);
  if (graph->memory_edges) g_array_unref(graph->memory_edges);
  graph->memory_edges = g_steal_pointer(&added);
  return TRUE;
}

void dr__budget_curve(const DrGraph *graph, guint n_points, GArray *points) {
  g_return_if_fail(graph != NULL && points != NULL && n_points > 0);
  g_autoptr(GArray) added = g_array_new(FALSE, FALSE, sizeof(DrEdge));
  /* The graph without the edges a limit added: the curve is the trade-off
   * of the pipeline itself. */
  g_autoptr(GArray) base = g_array_sized_new(FALSE, FALSE, sizeof(DrEdge), graph->edges->len);
  for (guint e = 0; e < graph->edges->len; e++) {
    const DrEdge *ed = dr_graph_edge(graph, e);
    gboolean ours = FALSE;
    for (guint k = 0; graph->memory_edges && k < graph->memory_edges->len && !ours; k++) {
      const DrEdge *m = &g_array_index(graph->memory_edges, DrEdge, k);
      ours = m->from == ed->from && m->to == ed->to && ed->kind == DR_EDGE_AFTER;
    }
    if (!ours) g_array_append_val(base, *ed);
  }
  DrMemoryBudget top;
  /* The unconstrained bound: a limit nothing exceeds. */
  budget_edges_on(graph, base, G_MAXUINT64, TRUE, added, &top);
  guint64 lo = top.serial_peak_bytes, hi = top.bound_before_bytes;
  guint k = hi > lo ? MAX(n_points, 2) : 1;
  for (guint i = 0; i < k; i++) {
    guint64 limit = k == 1 ? hi : lo + (guint64)((double)(hi - lo) * i / (k - 1));
    if (i == k - 1) limit = hi;
    DrMemoryBudget b;
    g_array_set_size(added, 0);
    budget_edges_on(graph, base, limit, TRUE, added, &b);
    DrMemoryCurvePoint p = {limit, b.width_after, added->len, b.path_after_us};
    g_array_append_val(points, p);
  }
}
