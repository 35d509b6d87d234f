/* plan.h: DrPlan, the stream plan the scheduler makes of a DrGraph and every
 * backend executes.
 *
 * A plan assigns each node to one stream, fixes the issue order (a
 * topological order that interleaves streams) and lists, for each node, the
 * nodes on other streams whose completion it must wait for. Stream order
 * plus these waits imply every DAG edge. The plan borrows its graph: the
 * graph must outlive it. This file holds data only; scheduler/ makes plans.
 *
 * INVARIANTS (dr_plan_check):
 *  P1. steps holds every node exactly once; node_step[steps[i].node] == i.
 *  P2. Nodes on one stream appear in steps in an order consistent with the
 *      DAG; every edge (u, v) is implied by stream order plus waits
 *      (transitively).
 *  P3. Every wait of step i names a node on another stream with a smaller
 *      step index, and needs_event[that node] is TRUE.
 *  P4. All nodes of one stream share the stream's priority (a communication
 *      stream: every node a collective), and its device (DrNode.dev; host
 *      nodes: the stream's device; a communication stream of device -1
 *      holds only collectives over several devices).
 */
#ifndef DAGRUN_IR_PLAN_H
#define DAGRUN_IR_PLAN_H

#include <glib.h>

#include "ir/graph.h"

G_BEGIN_DECLS

/* A stream belongs to one device: `device` is its GPU (the run's device for
 * host nodes' streams); a communication stream (comm) carries the
 * collectives, at high priority, counted beside the compute streams. The
 * communication stream of a collective over several devices of one
 * process has device -1: the backend runs it as one stream per device,
 * issued together (ncclGroupStart/End). */
typedef struct {
  DrPriority priority;
  guint32 n_nodes;
  gint32 device;
  gboolean comm;
} DrStream;

typedef struct {
  DrId node;
  guint32 stream;
  guint32 wait_first; /* into plan->waits */
  guint32 wait_count;
} DrPlanStep;

/* The bytes the stream-ordered pool counts for an allocation of `bytes`:
 * rounded up to DR_POOL_GRANULE (a zero-byte buffer is allocated as one
 * byte). The memory figures of a plan count every device allocation this
 * way, so they compare with what the pool measures (docs/design.md,
 * "Memory"). */
#define DR_POOL_GRANULE 512u
static inline guint64 dr_pool_bytes(guint64 bytes) {
  return (MAX(bytes, 1) + DR_POOL_GRANULE - 1) / DR_POOL_GRANULE * DR_POOL_GRANULE;
}

/* One lifetime of a stream-ordered buffer: its `lifetime`-th alloc node
 * (1-based, program order) up to the next free node. */
typedef struct {
  DrId buffer;
  guint32 lifetime;
  DrId alloc, free;
  guint64 bytes; /* dr_pool_bytes of the buffer */
} DrPlanLifetime;

/* The memory figures of one device of a run on several (run.devices):
 * those of DrPlan (below) restricted to the buffers that live on it. */
typedef struct {
  gint32 device; /* a CUDA ordinal of dr_graph_devices */
  guint64 whole_run_bytes;
  guint64 peak_serial_bytes;
  guint64 peak_bound_bytes;
  GArray *peak_bound; /* DrPlanLifetime: the certificate on this device */
  guint32 n_lifetimes;
} DrPlanDeviceMemory;

typedef struct {
  const DrGraph *graph;  /* borrowed */
  GArray *streams;       /* DrStream */
  GArray *steps;         /* DrPlanStep, in issue order */
  GArray *waits;         /* DrId: nodes waited upon, grouped per step */
  guint32 *node_stream;  /* [n_nodes] */
  guint32 *node_step;    /* [n_nodes] */
  gboolean *needs_event; /* [n_nodes]: some later step waits on it */

  guint32 width;      /* the DAG's width (Dilworth) */
  GArray *antichain;  /* DrId: a maximum antichain, the width's certificate */
  guint32 cap;        /* the stream cap used */
  gboolean cap_binds; /* width (per priority) exceeded the cap */
  guint32 n_edges;    /* dependency edges in the graph */
  /* Estimated critical path (µs) of the DAG and of the capped plan, by the
   * cost model; equal when the cap does not bind. */
  double critical_path_us;
  double planned_path_us;

  /* Device memory of the run's device (scheduler/memory.c), every
   * allocation counted as dr_pool_bytes. whole_run_bytes: the buffers that
   * live for the whole run. peak_serial_bytes: whole-run plus the most
   * stream-ordered bytes live at once when the nodes run one at a time in
   * file order. peak_bound_bytes: whole-run plus the weight of a
   * maximum-weight antichain of lifetimes (L1 before L2 when L1's free
   * reaches L2's alloc in the DAG): no execution the DAG allows, eager,
   * captured or with any timing, has more bytes live at once.
   * peak_bound (DrPlanLifetime) is that antichain, the bound's
   * certificate, in program order of the allocs. n_lifetimes counts every
   * lifetime. */
  guint64 whole_run_bytes;
  guint64 peak_serial_bytes;
  guint64 peak_bound_bytes;
  GArray *peak_bound;
  guint32 n_lifetimes;
  /* Reuse (scheduler/reuse.c, memory.reuse: auto): storage[b] is the
   * buffer whose allocation holds whole-run buffer b (b itself when it has
   * its own; a member of a shared group names the group's first buffer),
   * storage_bytes[b] what a group's first buffer allocates (its members'
   * largest size). NULL without reuse. reuse_saved_bytes: the whole-run
   * bytes this saves (already taken off whole_run_bytes and the peaks),
   * n_shared: buffers placed in another's storage. */
  DrId *storage;
  guint64 *storage_bytes;
  guint64 reuse_saved_bytes;
  guint32 n_shared;
  /* Per device (DrPlanDeviceMemory, in dr_graph_devices order), only when
   * the run has more than one device; empty otherwise, when the figures
   * above are the device's. The figures above stay the whole run's (every
   * device's buffers together); each device's bound bounds what that
   * device's pool can hold at once. */
  GArray *device_memory;
  gboolean uncapped;    /* no cap asked for (graph mode): cap is 4096, report "none" */
  const char *cap_note; /* static: why the cap is what it is, or NULL */
  /* The mode the plan was made for (never AUTO once the library resolved
   * it: ir/mode.h) and why (owned), or NULL when nobody said (a plan made
   * by the scheduler alone: the writers then print no mode line). */
  DrMode mode;
  char *mode_reason;
  /* After a --profile (lib/plan.c, scheduler/predict.h): the predicted
   * makespan and its parts; NULL otherwise (owned). */
  struct DrPlanPrediction *prediction;
  /* The plans of the loop bodies (ir/loops.h): 2 per loop of the graph,
   * in graph->loops order, the body's then the else body's (NULL when
   * the loop has none); each borrows its body graph. NULL when the graph
   * has no loop. */
  GPtrArray *bodies;
  /* Peer copies' path, known only on the CUDA backend (backends/run.h,
   * dr_run_probe_peers; NULL: not asked, as on the host backend or without
   * a GPU): [n * n] over the ranks of the run's devices (n of
   * dr_graph_devices), [a * n + b] = DR_PEER_ACCESS when device a can
   * access device b's memory (cudaDeviceCanAccessPeer), DR_PEER_STAGED when
   * it cannot (a peer copy from a to b or b to a run on a then stages
   * through pinned host memory), 0 when not asked. */
  guint8 *peer_path;
} DrPlan;

#define DR_PEER_ACCESS 1u
#define DR_PEER_STAGED 2u

/* How peer copy node `v` (dr_graph_copy_is_peer) moves its bytes by
 * `plan`'s probe: "access" (cudaMemcpyPeerAsync; a device to itself
 * always), "staged" (through pinned host memory) or "unknown" (not
 * probed: said at run time). */
const char *dr_plan_peer_path(const DrPlan *plan, DrId v);

/* The plan's predicted makespan (scheduler/predict.c): list-scheduling
 * simulations of the plan, each adding one cost to the one before (µs):
 * critical path (none), capped (the plan's streams), launched (host launch
 * costs, or a graph's per-node cost), waited (waits and cross-stream
 * edges), predicted (copy engines). measured_us: the profile's makespan
 * (NAN: it has none); profile_mode: the mode the profile ran in ("?"). */
typedef struct DrPlanPrediction {
  double critical_path_us, capped_us, launched_us, waited_us, predicted_us;
  double measured_us;
  char *profile_mode;
  DrMode mode; /* the mode predicted for */
} DrPlanPrediction;

/* Returns an empty plan for `graph` with node arrays sized to it. Free with
 * dr_plan_free (NULL-safe). */
DrPlan *dr_plan_new(const DrGraph *graph);
void dr_plan_free(DrPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrPlan, dr_plan_free)

#ifdef DR_CHECK_INVARIANTS
#define DR_PLAN_CHECK(p)                                              \
  do {                                                                \
    g_autoptr(GError) dr__check_error = NULL;                         \
    if (!dr_plan_check((p), &dr__check_error))                        \
      g_error("plan invariant broken: %s", dr__check_error->message); \
  } while (0)
#else
#define DR_PLAN_CHECK(p) ((void)0)
#endif

#define dr_plan_n_streams(p) ((p)->streams->len)
#define dr_plan_step(p, i) (&g_array_index((p)->steps, DrPlanStep, (i)))
#define dr_plan_wait(p, i) (g_array_index((p)->waits, DrId, (i)))

/* Returns the serial plan: every node on one stream in program order, no
 * waits (with several run.devices: one stream per device, each node
 * waiting on the node before it in program order when that is on another
 * stream, so still one node at a time in program order), and the same for every loop body (plan->bodies).
 * Used by
 * --verify's reference run. */
DrPlan *dr_plan_new_serial(const DrGraph *graph);

/* Checks P1-P4 (P2 by a reachability walk, so O(V·E) at worst: for tests
 * and debug builds). On failure sets `error` and returns FALSE. */
gboolean dr_plan_check(const DrPlan *plan, GError **error);

/* Whether whole-run buffer `buffer` of `graph` may be bound to external
 * memory under the reuse placement `storage` (a plan's storage array, NULL
 * without reuse): FALSE, with DR_ERROR_USAGE naming the buffer, when
 * reuse put it in another buffer's storage or others in its own, since
 * binding would move them too. The one check of both backends' bind. */
gboolean dr_plan_storage_bindable(const DrGraph *graph, const DrId *storage, DrId buffer, GError **error);

G_END_DECLS

#endif
