/* predict.h: the plan's predicted makespan and the split of its gap to the
 * critical path (predict.c), for `--plan` after a `--profile` run (#18.4). */
#ifndef DAGRUN_SCHEDULER_PREDICT_H
#define DAGRUN_SCHEDULER_PREDICT_H

#include "ir/plan.h"

G_BEGIN_DECLS

/* The costs the simulation charges. dr_predict_costs_default fills them
 * with GPU-NOTES.md's H200 constants. */
typedef struct {
  gboolean graph;       /* a graph replay: no host issue; graph_node_us per node */
  double launch_us;     /* eager: host time to enqueue a kernel, copy, memset, alloc or free */
  double host_node_us;  /* eager: host time of a cudaLaunchHostFunc */
  double wait_us;       /* eager: host time of a cudaStreamWaitEvent */
  double record_us;     /* eager: host time of a cudaEventRecord */
  double edge_us;       /* device time of one cross-stream edge (either mode) */
  double graph_node_us; /* graph: device time each node adds in a replay */
  /* eager: host threads issuing (stream k on thread k mod N, each with its
   * own clock; a wait on another thread's node also waits, on the host,
   * until that thread has issued it; backends/cuda/threads.h); 0 or 1:
   * one. */
  guint32 issue_threads;
} DrPredictCosts;

void dr_predict_costs_default(DrPredictCosts *c, gboolean graph);

/* The prediction. Each figure is a makespan of a list-scheduling
 * simulation of the plan (each stream runs its nodes in plan order; a node
 * starts when its stream is free, every node it waits on has finished plus
 * edge_us, and, eagerly, the one host thread has issued it in plan order),
 * each adding one cost to the one before:
 *   critical_path_us  the DAG's longest path with the durations (no plan)
 *   capped_us         the plan's streams, nothing else: stream order adds
 *                     edges (false serialization from the cap)
 *   launched_us       + the host's launch costs (or graph_node_us)
 *   waited_us         + the waits' host cost and the edges' device cost
 *   predicted_us      + transfers: host-to-device copies share one copy
 *                     engine, device-to-host copies another
 * so the gap predicted - critical path splits into cap, launch, waits
 * and transfers, each >= 0 up to list scheduling's anomalies. */
/* (DrPlanPrediction, ir/plan.h, holds them.) */

/* Simulates `plan` with `dur` (µs indexed by DrId; NAN: the cost model's
 * estimate) and `costs` into out's five figures (the rest is left). O(V +
 * waits). */
void dr_plan_predict(const DrPlan *plan, const double *dur, const DrPredictCosts *costs,
                     DrPlanPrediction *out);

G_END_DECLS

#endif
