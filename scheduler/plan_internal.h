/* plan_internal.h: the planner's working state, shared by its pass files
 * (planner.c, cost.c, order.c, chains.c, cap.c, events.c). Not public: only
 * the scheduler's planner includes it.
 *
 * DrPlanCtx indexes the graph once (predecessor lists are ranges of the
 * sorted edge array, successor lists an index array over it) and carries
 * each pass's results to the next. Node arrays are indexed by DrId. */
#ifndef DAGRUN_SCHEDULER_PLAN_INTERNAL_H
#define DAGRUN_SCHEDULER_PLAN_INTERNAL_H

#include <glib.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/planner.h"

G_BEGIN_DECLS

typedef struct {
  const DrGraph *graph;
  guint32 n, m;
  const DrEdge *edges;       /* graph->edges, sorted by (to, from) */
  guint32 *pred_off;         /* [n+1]: edges pred_off[v] .. pred_off[v+1] end at v */
  guint32 *succ_off;         /* [n+1]: succ_edge[succ_off[v] ..] start at v */
  guint32 *succ_edge;        /* [m]: edge indices grouped by `from` */
  gboolean no_greedy_merges; /* DrPlanOptions' */

  /* cost.c */
  double *dur; /* [n] estimated (or profiled) duration, µs; NULL while the chain cover runs */
  /* When not NULL (the memory figures are wanted), cost.c appends each
   * alloc and free node in program order (DrPlanPoolNode), so that
   * memory.c numbers the lifetimes without a second walk over every
   * node. The planner owns it. */
  GArray *pool_nodes;
  /* cost.c, on its first call (before the order), for order.c, which
   * frees it: a byte per node read in the same walk over the nodes (each
   * walk over a million 120-byte nodes costs more than the byte itself).
   * NULL when not made. */
  guint8 *node_prio; /* [n] DrPriority */
  /* order.c */
  guint32 *order; /* [n] the issue order: node ids, topological */
  guint32 *pos;   /* [n] position of each node in `order` */
  /* chains.c */
  guint32 *chain; /* [n] chain of each node (a chain never mixes classes) */
  guint32 n_chains;
  guint32 n_classes;     /* dr__plan_n_classes */
  guint8 *node_class;    /* [n] dr__plan_class of each node (a byte: see below) */
  guint32 *class_chains; /* [n_classes] chains per class */
  /* cap.c */
  guint32 *chain_stream; /* [n_chains] stream of each chain (before renumbering) */
  guint32 n_streams;
} DrPlanCtx;

/* Stream classes: the streams of one (device slot, kind) never hold
 * another class's nodes. The kind is a priority, or DR__CLASS_COMM for the
 * communication stream; the device slot is the device's rank among the
 * run's devices, or n_devices for collectives over several devices. Class
 * c is slot * DR__CLASS_KINDS + kind, so one device's classes are
 * contiguous and, within a device, higher kinds (comm, then high
 * priority) have higher numbers. */
#define DR__CLASS_KINDS (DR_N_PRIORITIES + 1)
#define DR__CLASS_COMM DR_N_PRIORITIES
/* Every class fits DrPlanCtx.node_class's byte: one per node is the
 * chain cover's, the planner's peak, on 5M-node graphs. */
G_STATIC_ASSERT((DR_MAX_DEVICES + 1) * DR__CLASS_KINDS <= 256);
guint32 dr__plan_n_classes(const DrGraph *graph);
guint32 dr__plan_class(const DrGraph *graph, DrId v);
/* The DrStream (priority, device, comm; no nodes) of class c. */
DrStream dr__plan_class_stream(const DrGraph *graph, guint32 c);

/* An alloc or free node and the buffer it names (DrPlanCtx.pool_nodes). */
typedef struct {
  DrId node, buffer;
  gboolean alloc; /* an alloc (else a free) */
} DrPlanPoolNode;

#define DR__PRED_BEGIN(c, v) ((c)->pred_off[(v)])
#define DR__PRED_END(c, v) ((c)->pred_off[(v) + 1])

/* cost.c: fills ctx->dur from the cost model, except where `durations`
 * (when not NULL) has a measured value (not NAN), and ctx->pool_nodes
 * when it is not NULL; before the issue order exists, also node_prio. */
void dr__plan_costs(DrPlanCtx *ctx, const double *durations);
/* cost.c: the cost model's estimate for one node, µs. */
double dr__node_cost_us(const DrGraph *graph, DrId node);

/* order.c: fills order and pos, and returns the critical path (µs).
 * FALSE with `error` when the graph has a cycle. */
gboolean dr__plan_order(DrPlanCtx *ctx, double *critical_path_us, GError **error);

/* chains.c: returns the exact width of the DAG, appending a maximum
 * antichain to `antichain` (DrId), and puts a minimum chain cover per
 * stream class into ctx->chain (chains of the full partial order), except
 * that each communication class is one chain in issue order: one NCCL
 * communicator runs its collectives in one order on every rank. Sets
 * n_classes, node_class and class_chains. */
guint32 dr__plan_chains(DrPlanCtx *ctx, GArray *antichain);

/* chains.c: minimum chain cover restricted to the nodes with required[v]
 * (chains of the full DAG's order). Writes the chain of each required node
 * into chain[] starting at `first_chain` (others untouched) and returns
 * the number of chains; when `antichain` is not NULL appends a maximum
 * antichain of the required nodes (as large as the returned count). */
guint32 dr__chain_cover(const DrPlanCtx *ctx, const guint8 *required, guint32 *chain, guint32 first_chain,
                        GArray *antichain);

/* cap.c: resolves the stream cap, maps chains to at most that many streams
 * (merging chains when the width exceeds it) and fills plan->streams,
 * steps (issue order), node_stream, node_step, cap, cap_binds and
 * planned_path_us. */
void dr__plan_cap(DrPlanCtx *ctx, DrPlan *plan, const DrPlanOptions *opts);

/* memory.c: fills plan->whole_run_bytes, peak_serial_bytes,
 * peak_bound_bytes, peak_bound and n_lifetimes: the serial peak in file
 * order and the exact worst case over every execution the DAG allows (a
 * maximum-weight antichain of lifetimes, by minimum flow). Needs the edge
 * index and ctx->order. */
void dr__plan_memory(const DrPlanCtx *ctx, DrPlan *plan);

/* memory.c: numbers the lifetimes of `graph` in program order into
 * `lives` (DrPlanLifetime, closed ones only) and life_of [n nodes] (the
 * lifetime of each alloc and free node, else DR_NONE), and returns the
 * whole-run bytes and the serial peak (file order, whole-run included). */
void dr__memory_lifetimes(const DrGraph *graph, GArray *lives, guint32 *life_of, guint64 *whole_run,
                          guint64 *serial_peak);

/* memory.c: the weight of a maximum-weight antichain of `lives` (the
 * stream-ordered part of the certified bound) under ctx's edge index;
 * appends the antichain to `antichain` (DrPlanLifetime, program order). */
guint64 dr__memory_bound(const DrPlanCtx *ctx, GArray *lives, guint32 *life_of, GArray *antichain);

/* memory.c: the same bound as a flow kept between calls, for a graph that
 * gains edges (budget.c). new: over `ctx` (kept by pointer: the caller
 * may rebuild the index in place, same nodes), `lives` and `life_of`
 * (borrowed); insert_edge: the edge array gained an edge at index `at`,
 * now `m` edges (call before the next run); run: augments to a maximum
 * flow from the flow so far and appends the certificate to `antichain`,
 * returning its weight. */
typedef struct DrMemoryFlow DrMemoryFlow;
DrMemoryFlow *dr__memory_flow_new(const DrPlanCtx *ctx, GArray *lives, guint32 *life_of);
void dr__memory_flow_insert_edge(DrMemoryFlow *mf, guint32 at, guint32 m);
guint64 dr__memory_flow_run(DrMemoryFlow *mf, GArray *antichain);
void dr__memory_flow_free(DrMemoryFlow *mf);

/* planner.c: builds ctx's edge index (pred_off, succ_off, succ_edge) over
 * ctx->edges (sorted by (to, from)); FALSE with `error` when unsorted or
 * an edge names a missing node. dr__plan_ctx_clear frees every array of
 * ctx the passes made. */
gboolean dr__plan_index(DrPlanCtx *ctx, GError **error);
void dr__plan_ctx_clear(DrPlanCtx *ctx);

/* reuse.c: under memory.reuse: auto, places whole-run scratch buffers
 * whose uses every execution orders into shared storage (plan->storage,
 * storage_bytes, n_shared) and takes the bytes saved off the plan's
 * whole-run bytes and peaks (reuse_saved_bytes). Run after
 * dr__plan_memory. Adds no edge. */
void dr__plan_reuse(const DrPlanCtx *ctx, DrPlan *plan);

/* memory.c: on a run of several devices (dr_graph_devices), fills
 * plan->device_memory: each device's whole-run bytes (after reuse's
 * placement), serial peak and certified bound, over the buffers that live
 * on it, each bound with its own antichain (one flow per device). Nothing
 * on one device. Run after dr__plan_reuse. */
void dr__plan_memory_devices(const DrPlanCtx *ctx, DrPlan *plan);

/* events.c: adds the fewest cross-stream waits that make stream order plus
 * waits imply every edge, and sets needs_event. */
void dr__plan_events(const DrPlanCtx *ctx, DrPlan *plan);

/* loops.c: plans every loop body of plan->graph (ir/loops.h) on its own,
 * with `opts`' cap and no measured durations, into plan->bodies. */
gboolean dr__plan_loops(DrPlan *plan, const DrPlanOptions *opts, GError **error);

G_END_DECLS

#endif
