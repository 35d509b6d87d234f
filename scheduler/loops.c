/* loops.c: the plans of loop and conditional bodies (ir/loops.h). Each
 * body is a graph of its own, planned by the same planner on its own
 * streams (width-exact, fewest waits): a trip of the body is like an
 * iteration of a pipeline, complete before the next one starts, so the
 * dependencies between trips need no wait, and the body's plan knows
 * nothing of the nodes around its loop (the loop node's accesses stand
 * for the body in the enclosing plan). Nested loops are planned by the
 * recursion through dr_plan_build. Cost: one planning per body. */
#include "ir/loops.h"
#include "scheduler/plan_internal.h"
#include "scheduler/planner.h"

gboolean dr__plan_loops(DrPlan *plan, const DrPlanOptions *opts, GError **error) {
  const DrGraph *g = plan->graph;
  if (dr_graph_n_loops(g) == 0) return TRUE;
  DrPlanOptions body_opts = *opts;
  body_opts.durations = NULL; /* indexed by the enclosing graph's ids */
  plan->bodies = g_ptr_array_new_with_free_func((GDestroyNotify)dr_plan_free);
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    DrPlan *body = dr_plan_build(l->body, &body_opts, error);
    if (body == NULL) return FALSE;
    g_ptr_array_add(plan->bodies, body);
    DrPlan *other = NULL;
    if (l->else_body != NULL && (other = dr_plan_build(l->else_body, &body_opts, error)) == NULL)
      return FALSE;
    g_ptr_array_add(plan->bodies, other);
  }
  return TRUE;
}
