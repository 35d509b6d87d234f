/* planner.c: dr_plan_build, the stream planner's pass list, and the edge
 * index the passes share. Not the passes themselves: one file each.
 *
 * The passes, in order:
 *   index_edges       predecessor/successor index over the sorted edges
 *   dr__plan_costs    cost.c    estimated (or profiled) duration per node
 *   dr__plan_order    order.c   issue order: Kahn by estimated start
 *   dr__plan_chains   chains.c  exact width, antichain, min chain cover
 *   dr__plan_cap      cap.c     stream cap, chain merges, steps
 *   dr__plan_events   events.c  fewest cross-stream waits
 *   dr__plan_memory   memory.c  serial peak, certified worst-case peak
 *   dr__plan_reuse    reuse.c   scratch buffers in shared storage (reuse: auto)
 *   dr__plan_memory_devices  memory.c  the same figures per device (run.devices)
 *
 * Requires: a graph whose edges are sorted by (to, from) (dr_passes_run or
 * dr_graph_sort_edges). Provides: a DrPlan satisfying P1-P4 (ir/plan.h),
 * checked by dr_plan_check after planning in debug builds (DR_PLAN_CHECK)
 * for every plan of up to PLAN_CHECK_MAX_WORK nodes x edges.
 *
 * The index: graph->edges sorted by (to, from) already groups predecessor
 * lists, so pred_off is a prefix sum over it; successor lists are edge
 * indices bucketed by `from` (a counting sort). O(V + E) time, 8 bytes per
 * node plus 4 per edge. */
#include "scheduler/planner.h"

#include "scheduler/plan_internal.h"

/* Debug builds run dr_plan_check on plans up to this many V * E. */
#define PLAN_CHECK_MAX_WORK 1e6

gboolean dr__plan_index(DrPlanCtx *ctx, GError **error) {
  guint32 n = ctx->n, m = ctx->m;
  ctx->pred_off = g_new0(guint32, n + 1);
  ctx->succ_off = g_new0(guint32, n + 1);
  ctx->succ_edge = g_new(guint32, MAX(m, 1));
  for (guint32 e = 0; e < m; e++) {
    const DrEdge *ed = &ctx->edges[e];
    if (ed->from >= n || ed->to >= n || ed->from == ed->to) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "edge %u joins no two distinct nodes", e);
      return FALSE;
    }
    if (e > 0 && (ed->to < ctx->edges[e - 1].to ||
                  (ed->to == ctx->edges[e - 1].to && ed->from <= ctx->edges[e - 1].from))) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                  "edges are not sorted by (to, from): run dr_graph_sort_edges first");
      return FALSE;
    }
    ctx->pred_off[ed->to + 1]++;
    ctx->succ_off[ed->from + 1]++;
  }
  for (guint32 v = 0; v < n; v++) {
    ctx->pred_off[v + 1] += ctx->pred_off[v];
    ctx->succ_off[v + 1] += ctx->succ_off[v];
  }
  guint32 *fill = g_memdup2(ctx->succ_off, (gsize)n * sizeof(guint32) + (n == 0));
  for (guint32 e = 0; e < m; e++) ctx->succ_edge[fill[ctx->edges[e].from]++] = e;
  g_free(fill);
  return TRUE;
}

void dr__plan_ctx_clear(DrPlanCtx *ctx) {
  g_free(ctx->pred_off);
  g_free(ctx->succ_off);
  g_free(ctx->succ_edge);
  g_free(ctx->dur);
  g_free(ctx->order);
  g_free(ctx->pos);
  g_free(ctx->chain);
  g_free(ctx->node_class);
  g_free(ctx->node_prio);
  g_free(ctx->class_chains);
  g_free(ctx->chain_stream);
  if (ctx->pool_nodes != NULL) g_array_unref(ctx->pool_nodes);
}

DrPlan *dr_plan_build(const DrGraph *graph, const DrPlanOptions *opts, GError **error) {
  g_return_val_if_fail(graph != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  DrPlanOptions defaults = {0};
  if (opts == NULL) opts = &defaults;
  DrPlanCtx ctx = {.graph = graph,
                   .n = graph->nodes->len,
                   .m = graph->edges->len,
                   .edges = (const DrEdge *)graph->edges->data,
                   .no_greedy_merges = opts->no_greedy_merges,
                   .pool_nodes = opts->no_memory ? NULL : g_array_new(FALSE, FALSE, sizeof(DrPlanPoolNode))};
  double critical_path_us = 0;
  if (!dr__plan_index(&ctx, error)) {
    dr__plan_ctx_clear(&ctx);
    return NULL;
  }
  dr__plan_costs(&ctx, opts->durations);
  if (!dr__plan_order(&ctx, &critical_path_us, error)) {
    dr__plan_ctx_clear(&ctx);
    return NULL;
  }
  /* The chain cover does not read the durations, and its working memory
   * is the plan's peak: they are dropped for it and made again after
   * (O(V), the same values). */
  g_clear_pointer(&ctx.dur, g_free);
  GArray *antichain = g_array_new(FALSE, FALSE, sizeof(DrId));
  guint32 width = dr__plan_chains(&ctx, antichain);
  dr__plan_costs(&ctx, opts->durations);
  /* The plan's node arrays are made only now, after the chain cover's
   * working memory is gone: the peak of a 1M-node plan is in that pass. */
  DrPlan *plan = dr_plan_new(graph);
  g_array_unref(plan->antichain);
  plan->antichain = antichain;
  plan->width = width;
  plan->critical_path_us = critical_path_us;
  plan->n_edges = ctx.m;
  dr__plan_cap(&ctx, plan, opts);
  dr__plan_events(&ctx, plan);
  if (!opts->no_memory) dr__plan_memory(&ctx, plan);
  if (!opts->no_memory) dr__plan_reuse(&ctx, plan);
  if (!opts->no_memory) dr__plan_memory_devices(&ctx, plan);
  dr__plan_ctx_clear(&ctx);
  /* dr_plan_check walks back from each edge's head (O(V * E)): debug
   * builds check every plan small enough for that to stay quick; the
   * planner tests check the large ones themselves. */
  if ((double)plan->steps->len * (double)(ctx.m + 1) <= PLAN_CHECK_MAX_WORK) DR_PLAN_CHECK(plan);
  if (!dr__plan_loops(plan, opts, error)) {
    dr_plan_free(plan);
    return NULL;
  }
  return plan;
}
