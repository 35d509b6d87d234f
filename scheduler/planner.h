/* planner.h: the stream planner, which compiles a DrGraph's dependency DAG
 * onto CUDA streams and writes the plan for review.
 *
 * dr_plan_build runs the planning passes (scheduler/planner.c lists them):
 * the cost model, the issue order, a minimum chain cover per priority class
 * (streams = the DAG's width), the stream cap, and the fewest cross-stream
 * waits. This file does not run anything (backends/ executes plans) nor
 * write anything: the plan's writers (text for --plan, JSON for --plan
 * --format=json, Graphviz DOT for --dot) are in report/report.h. */
#ifndef DAGRUN_SCHEDULER_PLANNER_H
#define DAGRUN_SCHEDULER_PLANNER_H

#include <glib.h>

#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* The planner takes its cap as given: it reads no environment. The
 * library resolves the cap (lib/settings.c: the user's max_streams, else
 * CUDA_DEVICE_MAX_CONNECTIONS, else 32 or 8) and passes it here. */
typedef struct {
  guint32 max_streams; /* the cap; 0: graph->run.max_streams when set,
                          else none in graph mode, else 8 */
  /* NULL, or measured durations in µs indexed by DrId (NAN: keep the cost
   * model's estimate); the library reads them from a --profile report
   * (dr_profile_durations), so the planner opens no file. */
  const double *durations;
  /* Tests only: TRUE makes the chain cover skip its greedy merges so
   * Dinic's phases do all the work (held against the slow references). */
  gboolean no_greedy_merges;
  gboolean no_memory;   /* skip the memory figures (plan->peak_*: 0);
                           for measuring what they cost */
  gboolean uncapped;    /* TRUE: no cap at all (max_streams ignored) */
  const char *cap_note; /* static: why this cap, kept as plan->cap_note */
} DrPlanOptions;

/* Plans `graph`, whose edges must be sorted by (to, from) as dr_passes_run
 * leaves them and acyclic. `opts` may be NULL (all defaults). Returns a new
 * plan that borrows `graph` (free it with dr_plan_free before the graph), or
 * NULL with `error` set (DR_ERROR_INVALID for unsorted edges or a cycle,
 * never DR_ERROR_IO: the planner reads no file). */
DrPlan *dr_plan_build(const DrGraph *graph, const DrPlanOptions *opts, GError **error);

G_END_DECLS

#endif
