/* predict.c: the makespan a plan should take, by list scheduling over the
 * plan's own streams (predict.h says what each figure adds).
 *
 * One pass over the steps in plan order per figure, with one host clock
 * (eager issue is one thread in plan order: every step's waits, its
 * launch and its completion record advance it), each stream's ready time,
 * each node's finish, and one ready time per copy direction. Several issue
 * threads (DrPredictCosts.issue_threads) each have their own host clock.
 * What it does not model: the hardware queue count (the cap already keeps
 * eager streams within it), stamps and timing events, and kernels that
 * share SMs (each node takes its measured time whatever runs beside it).
 * O(V + waits) per figure; no allocation but four arrays. */
#include "scheduler/predict.h"

#include <math.h>

#include "scheduler/plan_internal.h"

void dr_predict_costs_default(DrPredictCosts *c, gboolean graph) {
  /* GPU-NOTES.md (H200, CUDA 13.0): launch 3.7-4.4 us of host time, a
   * host function ~24 us, cudaStreamWaitEvent and an untimed
   * cudaEventRecord ~0.2 us each, a cross-stream edge ~0.2 us of GPU time,
   * a graph chain replayed at ~0.5-0.7 us per node. */
  *c = (DrPredictCosts){.graph = graph,
                        .launch_us = 4.0,
                        .host_node_us = 24.0,
                        .wait_us = 0.2,
                        .record_us = 0.2,
                        .edge_us = 0.2,
                        .graph_node_us = 0.6};
}

enum { LAUNCH = 1, WAITS = 2, TRANSFERS = 4 };

/* 0: not a host<->device copy; 1: host to device; 2: device to host. */
static int copy_direction(const DrGraph *g, const DrNode *n) {
  if (n->op != DR_OP_COPY) return 0;
  const DrAccess *src, *dst;
  dr_graph_copy_ends(g, n, &src, &dst);
  if (src == NULL || dst == NULL) return 0;
  DrWhere ws = dr_graph_buffer(g, src->buffer)->where, wd = dr_graph_buffer(g, dst->buffer)->where;
  if (ws == DR_WHERE_HOST && wd == DR_WHERE_DEVICE) return 1;
  if (ws == DR_WHERE_DEVICE && wd == DR_WHERE_HOST) return 2;
  return 0;
}

static double simulate(const DrPlan *plan, const double *dur, const DrPredictCosts *c, int what) {
  const DrGraph *g = plan->graph;
  guint32 n = dr_graph_n_nodes(g);
  g_autofree double *finish = g_new0(double, MAX(n, 1));
  g_autofree double *ready = g_new0(double, MAX(plan->streams->len, 1));
  /* Per issue thread: its host clock; per node: when its thread issued it. */
  guint32 threads = MAX(c->issue_threads, 1);
  g_autofree double *hosts = g_new0(double, threads);
  g_autofree double *issued = g_new0(double, MAX(n, 1));
  double engine[3] = {0, 0, 0}, end = 0;
  const DrPlanStep *steps = (const DrPlanStep *)(void *)plan->steps->data;
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *st = &steps[i];
    DrId v = st->node;
    const DrNode *node = dr_graph_node(g, v);
    double d = dur && isfinite(dur[v]) ? dur[v] : dr__node_cost_us(g, v);
    double start = ready[st->stream];
    for (guint32 w = st->wait_first; w < st->wait_first + st->wait_count; w++) {
      double f = finish[dr_plan_wait(plan, w)] + ((what & WAITS) ? c->edge_us : 0);
      start = MAX(start, f);
    }
    if (!c->graph) {
      double *host = &hosts[st->stream % threads];
      /* A wait on a node of another thread blocks until it is issued. */
      if (threads > 1 && (what & (LAUNCH | WAITS)))
        for (guint32 w = st->wait_first; w < st->wait_first + st->wait_count; w++) {
          DrId u = dr_plan_wait(plan, w);
          if (plan->node_stream[u] % threads != st->stream % threads) *host = MAX(*host, issued[u]);
        }
      if (what & WAITS) *host += c->wait_us * st->wait_count;
      if ((what & LAUNCH) && node->op != DR_OP_NOOP)
        *host += node->op == DR_OP_HOST ? c->host_node_us : c->launch_us;
      if (what & (LAUNCH | WAITS)) start = MAX(start, *host);
      if ((what & WAITS) && plan->needs_event[v]) *host += c->record_us;
      issued[v] = *host;
    } else if ((what & LAUNCH) && node->op != DR_OP_NOOP) {
      d += c->graph_node_us;
    }
    int dir = (what & TRANSFERS) ? copy_direction(g, node) : 0;
    if (dir) start = MAX(start, engine[dir]);
    finish[v] = start + d;
    if (dir) engine[dir] = finish[v];
    ready[st->stream] = finish[v];
    end = MAX(end, finish[v]);
  }
  return end;
}

void dr_plan_predict(const DrPlan *plan, const double *dur, const DrPredictCosts *costs,
                     DrPlanPrediction *out) {
  g_return_if_fail(plan != NULL && costs != NULL && out != NULL);
  out->critical_path_us = plan->critical_path_us;
  out->capped_us = simulate(plan, dur, costs, 0);
  out->launched_us = simulate(plan, dur, costs, LAUNCH);
  out->waited_us = simulate(plan, dur, costs, LAUNCH | WAITS);
  out->predicted_us = simulate(plan, dur, costs, LAUNCH | WAITS | TRANSFERS);
}
