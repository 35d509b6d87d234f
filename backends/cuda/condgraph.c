/* condgraph.c: graph mode's loops and conditionals as CUDA conditional
 * graph nodes (issue #17), built while graph.c captures the iteration.
 *
 * A top-level `while:` or `if:` (and a `repeat:` whose body holds one) is
 * issued on its capturing stream `st` as: the reset of its trip counter
 * (a memset node), for an `if:` the condition kernel (loopctl.cu) that
 * sets the handle from the condition buffer, then one conditional node
 * added to the capture's graph after the stream's current dependencies
 * (cudaStreamGetCaptureInfo, cudaGraphAddNode), which the stream then
 * depends on (cudaStreamUpdateCaptureDependencies). The node's body graph
 * is built, not captured as a whole: each body node's work is captured
 * alone into the body graph on this part's own stream
 * (cudaStreamBeginCaptureToGraph with the node's dependencies,
 * cudaStreamEndCapture), and its dependencies are those of the body's own
 * plan (scheduler/loops.c): the previous node of its plan stream and the
 * nodes it waits on, so the body graph has the plan's width and its
 * fewest waits as edges, and a node that adds several graph nodes (a
 * launcher of two kernels) is followed by all of them. Noops add no graph
 * node (their dependents follow their dependencies).
 *
 *  - while: a WHILE node, a do-while (format.md): the first trip always
 *    runs, so the handle's value before the node is 1: at the top level
 *    the handle's default (cudaGraphCondAssignDefault, applied at each
 *    launch of the executable), nested (or inside run.device_loop's
 *    WHILE), a condition kernel with no condition before the node (a
 *    default is applied once per launch, not each time an enclosing body
 *    runs the node again: the fake's replay caught that). The body ends
 *    with the condition kernel reading the condition buffer after every
 *    node of the trip, so no trip runs past the stop condition. A trip
 *    may hold U copies of the body (dr__cuda_while_choice), copies 2..U
 *    guarded so that none runs past the stop either: when the body is
 *    only guardable kernels (ir/loops.h, dr_loop_while_guardable, the
 *    default) by the kernels themselves, each given the condition as its
 *    guard word (DrKLaunch.guard: it returns at once when the word is 0),
 *    so the trip has one conditional node whatever U; otherwise (memsets,
 *    copies, nested loops; or DAGRUN_WHILE_GUARD=if) each copy in an IF
 *    node after a condition kernel, U = 1 unless DAGRUN_WHILE_UNROLL
 *    says more.
 *  - if: an IF node of size 2 when there is an `else:` (CUDA 12.8+), 1
 *    otherwise, after the condition kernel.
 *  - repeat: N inside a body: the body built N times in a row, unrolled
 *    (no condition between the copies); at the top level a `repeat:`
 *    whose body holds a while or if is a counted WHILE (the counter
 *    kernel ends each trip: the mechanism of run.device_loop), and one
 *    that holds none stays captured unrolled by loops.c.
 *
 * What CUDA allows in a body (kernel, memset, device memcpy, empty,
 * child and conditional nodes; one context) is what ir/loops.c's rules
 * let through, checked at --check. A gemm's capture is cuBLAS's choice
 * (its kernels, and memsets, on the context's workspace set at setup, so
 * no allocation): it is checked after its capture by walking the nodes
 * it added, and anything else is an error naming the gemm node
 * (check_blas_capture). A user kernel is one cudaLaunchKernel: one kernel
 * node. Neither reads a guard word, so a while body holding one is
 * guarded by IF nodes (one copy per trip by default).
 *
 * Trip spans (trips.c's ring, with node timing on): each copy of a body
 * that is a trip starts with the trip stamp kernel opening the trip and
 * ends with it closing the trip (no event nodes, which a body cannot
 * hold): a while's first copy opens unguarded; a kernel-guarded copy's
 * open is the close of the copy before and reads the condition, so a
 * copy after the stop opens nothing; an IF-guarded copy's stamps are
 * inside its IF body; an if's body is trip 0, its else body no trip; a
 * repeat in a body stamps the unrolled copies it keeps, a close and the
 * next open in one (dr__cuda_trips_repeat_flags). A nested while's run
 * trips are reset (a memset node) before its node; the top-level loop's
 * words, by trips.c before it. Body nodes' times (the same words): each
 * built-in of a body (not a user kernel or gemm: no DR_KFLAG_STAMPS)
 * gets its node's stamp word as DrKLaunch.stamp, which it raises to its
 * end in every copy that runs, so that after the launch it holds the
 * loop's last trip's (trips.c reads them); memsets, copies, user kernels
 * and gemms are not timed.
 * This file owns no CUDA handle that outlives the capture: the graph
 * owns the nodes, their bodies and the handles; loops.c owns the stream
 * and the counters. */
#include <string.h>

#include "backends/cuda/cuda.h"
#include "ir/loops.h"

/* One build: what stays the same through the recursion. A kernel-guarded
 * copy of a while body builds with `guard` set: each of its kernels gets
 * it as DrKLaunch.guard, and node `guard_writer` of graph `guard_body`
 * (the one that sets the condition) also `guard_runs`, which counts the
 * copies that ran. */
typedef struct {
  DrCudaLoops *l;
  const DrCudaMemory *m;
  const DrCudaApi *api;
  GError **error;
  const gint32 *guard;
  guint64 *guard_runs;
  const DrGraph *guard_body;
  DrId guard_writer;
  const DrCudaTrips *trips; /* NULL: no trip spans; else the ring when it is on */
} Build;

/* Appends the nodes of `from` to `to` that it does not hold yet. */
static void add_unique(GArray *to, const cudaGraphNode_t *from, gsize n) {
  for (gsize i = 0; i < n; i++) {
    gboolean seen = FALSE;
    for (guint j = 0; j < to->len && !seen; j++) seen = g_array_index(to, cudaGraphNode_t, j) == from[i];
    if (!seen) g_array_append_val(to, from[i]);
  }
}

static GArray *nodes_new(void) { return g_array_new(FALSE, FALSE, sizeof(cudaGraphNode_t)); }

static const cudaGraphNode_t *nodes_data(const GArray *a) {
  return a->len ? (const cudaGraphNode_t *)(const void *)a->data : NULL;
}

/* The work one body node's capture enqueues on `s`. */
typedef gboolean (*WorkFn)(const Build *bd, gconstpointer what, cudaStream_t s, GError **error);

/* Captures `work` alone into `graph` after `deps` on the build's stream;
 * `exits` receives the nodes the stream depends on after it (the work's
 * last nodes). A failed work still ends the capture. */
static gboolean capture_one(const Build *bd, cudaGraph_t graph, const GArray *deps, WorkFn work,
                            gconstpointer what, const char *node_id, GArray *exits) {
  const DrCudaApi *api = bd->api;
  GError **error = bd->error;
  cudaStream_t s = bd->l->body_stream;
  DrCudaSite site = DR_SITE_NODE(node_id, -1);
  if (!DR_CUDA(site, cudaStreamBeginCaptureToGraph, s, graph, nodes_data(deps), NULL, deps->len,
               cudaStreamCaptureModeThreadLocal))
    return FALSE;
  gboolean ok = work(bd, what, s, error);
  if (ok) {
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t *after = NULL;
    const cudaGraphEdgeData *edges = NULL; /* asked for: see graph.c's capture_after */
    size_t n_after = 0;
    ok = DR_CUDA(site, cudaStreamGetCaptureInfo, s, &status, NULL, NULL, &after, &edges, &n_after);
    if (ok && status != cudaStreamCaptureStatusActive) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                  "node '%s': its work broke the capture of its loop body (a call stream capture does not "
                  "allow)",
                  node_id);
      ok = FALSE;
    }
    if (ok) {
      g_array_set_size(exits, 0);
      add_unique(exits, after, n_after);
    }
  }
  cudaGraph_t same = NULL;
  cudaError_t rc = api->cudaStreamEndCapture(s, &same);
  if (!ok) {
    (void)api->cudaGetLastError();
    return FALSE;
  }
  return dr__cuda_check(rc, "cudaStreamEndCapture", site, error);
}

/* Adds a node of `params` to `graph` after `deps`: *out. */
static gboolean add_node(const Build *bd, cudaGraph_t graph, const GArray *deps,
                         struct cudaGraphNodeParams *params, const char *node_id, cudaGraphNode_t *out) {
  GError **error = bd->error;
  return DR_CUDA(DR_SITE_NODE(node_id, -1), cudaGraphAddNode, out, graph, nodes_data(deps), NULL, deps->len,
                 params);
}

/* ---- the work of one body node -------------------------------------------- */

typedef struct {
  const DrGraph *g;
  DrId v;
} NodeRef;

static gboolean node_work(const Build *bd, gconstpointer what, cudaStream_t s, GError **error) {
  const NodeRef *r = what;
  const DrNode *n = dr_graph_node(r->g, r->v);
  DrCudaSite site = DR_SITE_NODE(n->id, -1);
  void *const *bases = bd->m->bases;
  switch (n->op) {
    case DR_OP_KERNEL: {
      /* Alone in its capture: no early launch. A guard only in a
       * kernel-guarded copy, whose kernels are all guardable built-ins. */
      DrKLaunch how;
      memset(&how, 0, sizeof how);
      how.guard = bd->guard;
      how.guard_runs =
          bd->guard && r->g == bd->guard_body && r->v == bd->guard_writer ? bd->guard_runs : NULL;
      /* Its end in the trip, when it stamps itself (trips.h); a guarded
       * copy that does not run stamps nothing. */
      const DrKernelDef *def = dr__kernel_def_of(r->g, r->v);
      if (def != NULL && (def->flags & DR_KFLAG_STAMPS) &&
          dr_graph_kernel(r->g, n->kernel)->origin != DR_KERNEL_USER)
        how.stamp = dr__cuda_trips_node_stamp(bd->trips, r->g, r->v);
      return dr__cuda_loops_kernel(bd->l, bd->m, bd->api, r->g, r->v, s, dr__cuda_loops_body_blas(bd->l, n),
                                   &how, error);
    }
    case DR_OP_COPY: {
      const DrAccess *src, *dst;
      dr__copy_accesses(r->g, n, &src, &dst);
      guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(r->g, dst->buffer)->type);
      /* Device to device only (ir/loops.c): a memcpy node CUDA allows in a body. */
      return DR_CUDA(site, cudaMemcpyAsync, dr__slice_ptr(r->g, bases, dst), dr__slice_ptr(r->g, bases, src),
                     bytes, cudaMemcpyDeviceToDevice, s);
    }
    case DR_OP_MEMSET: {
      const DrAccess *dst = dr__node_access(r->g, n, 0);
      guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(r->g, dst->buffer)->type);
      return DR_CUDA(site, cudaMemsetAsync, dr__slice_ptr(r->g, bases, dst), n->memset_value, bytes, s);
    }
    default: /* the body rules (ir/loops.c) leave nothing else with work */
      return TRUE;
  }
}

typedef struct {
  cudaGraphConditionalHandle handle;
  const gint32 *cond; /* NULL: the value 1 */
  guint64 *trips;     /* NULL: not counted */
  gboolean count_always;
} CondRef;

static gboolean cond_work(const Build *bd, gconstpointer what, cudaStream_t s, GError **error) {
  const CondRef *c = what;
  int rc = bd->api->cond_launch(c->handle, c->cond, c->trips, c->count_always, s);
  return rc == 0 ||
         dr__cuda_check((cudaError_t)rc, "the condition kernel", DR_SITE_SETUP("a loop's condition"), error);
}

typedef struct {
  cudaGraphConditionalHandle handle;
  guint64 *counter;
  const guint64 *limit;
  guint64 *stamps;
} CountRef;

static gboolean count_work(const Build *bd, gconstpointer what, cudaStream_t s, GError **error) {
  const CountRef *c = what;
  int rc = bd->api->count_launch(c->handle, c->counter, c->limit, c->stamps, s);
  return rc == 0 ||
         dr__cuda_check((cudaError_t)rc, "the counter kernel", DR_SITE_SETUP("a counted loop"), error);
}

typedef struct {
  const DrLoop *loop;
  unsigned flags;
  const gint32 *guard;
  gint64 trip;
  guint64 skip;
} TripRef;

static gboolean trip_work(const Build *bd, gconstpointer what, cudaStream_t s, GError **error) {
  const TripRef *t = what;
  return dr__cuda_trips_ring_stamp(bd->trips, t->loop, t->flags, t->guard, t->trip, t->skip, s, error);
}

static gboolean run_work(const Build *bd, gconstpointer what, cudaStream_t s, GError **error) {
  return dr__cuda_trips_ring_run(bd->trips, what, s, error);
}

/* The trip stamp kernel of `loop` (DrCudaApi.trip_launch's `flags`,
 * `guard`, `trip`, `skip`) in `graph` after `last`, which becomes it;
 * nothing without the ring. */
static gboolean trip_stamp(const Build *bd, const DrLoop *loop, unsigned flags, const gint32 *guard,
                           gint64 trip, guint64 skip, cudaGraph_t graph, GArray *last) {
  if (!dr__cuda_trips_ring_on(bd->trips)) return TRUE;
  TripRef t = {loop, flags, guard, trip, skip};
  return capture_one(bd, graph, last, trip_work, &t, loop->id, last);
}

/* What a node of CUDA type `t` is, when a conditional body cannot hold
 * it (CUDA's rules: kernel, memset, memcpy, empty, child graph and
 * conditional nodes only), else NULL. */
static const char *forbidden_in_body(enum cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel:
    case cudaGraphNodeTypeMemset:
    case cudaGraphNodeTypeMemcpy:
    case cudaGraphNodeTypeEmpty:
    case cudaGraphNodeTypeGraph:
    case cudaGraphNodeTypeConditional:
      return NULL;
    case cudaGraphNodeTypeHost:
      return "a host node";
    case cudaGraphNodeTypeWaitEvent:
    case cudaGraphNodeTypeEventRecord:
      return "an event node";
    case cudaGraphNodeTypeMemAlloc:
    case cudaGraphNodeTypeMemFree:
      return "a memory allocation node (stream-ordered cudaMallocAsync or cudaFreeAsync)";
    default:
      return "a node of a kind (external semaphore, batch memory operation)";
  }
}

/* A gemm's work is cuBLAS's choice (kernels, and memsets of its output or
 * workspace, on the stream it is bound to): checks that its capture
 * `exits` (its last nodes), walked back to the nodes it was captured after
 * (`deps`), holds only what a conditional body may, so that a breach is
 * said here naming the node instead of by the instantiation. Nothing
 * without the table's node queries. */
static gboolean check_blas_capture(const Build *bd, const GArray *deps, const GArray *exits,
                                   const char *node_id) {
  const DrCudaApi *api = bd->api;
  if (api->cudaGraphNodeGetType == NULL || api->cudaGraphNodeGetDependencies == NULL) return TRUE;
  GError **error = bd->error;
  DrCudaSite site = DR_SITE_NODE(node_id, -1);
  g_autoptr(GArray) seen = nodes_new();
  g_autoptr(GArray) todo = nodes_new();
  add_unique(seen, nodes_data(deps), deps->len);
  for (guint i = 0; i < exits->len; i++) {
    guint before = seen->len;
    add_unique(seen, &g_array_index(exits, cudaGraphNode_t, i), 1);
    if (seen->len > before) g_array_append_val(todo, g_array_index(exits, cudaGraphNode_t, i));
  }
  while (todo->len > 0) {
    cudaGraphNode_t node = g_array_index(todo, cudaGraphNode_t, todo->len - 1);
    g_array_set_size(todo, todo->len - 1);
    enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    if (!DR_CUDA(site, cudaGraphNodeGetType, node, &type)) return FALSE;
    const char *what = forbidden_in_body(type);
    if (what != NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                  "node '%s': cuBLAS captured %s for this gemm, which a CUDA conditional body cannot hold "
                  "(kernels, memsets, device copies); hoist the gemm out of the loop or use --mode=streams",
                  node_id, what);
      return FALSE;
    }
    size_t n = 0;
    if (!DR_CUDA(site, cudaGraphNodeGetDependencies, node, NULL, NULL, &n)) return FALSE;
    g_autofree cudaGraphNode_t *up = g_new0(cudaGraphNode_t, MAX(n, 1));
    /* Edge data asked for: without it a programmatic edge (a launch with
     * programmatic dependent launch) makes the query fail as lossy. */
    g_autofree cudaGraphEdgeData *edges = g_new0(cudaGraphEdgeData, MAX(n, 1));
    if (n > 0 && !DR_CUDA(site, cudaGraphNodeGetDependencies, node, up, edges, &n)) return FALSE;
    for (size_t i = 0; i < n; i++) {
      guint before = seen->len;
      add_unique(seen, &up[i], 1);
      if (seen->len > before) g_array_append_val(todo, up[i]);
    }
  }
  return TRUE;
}

/* ---- bodies -------------------------------------------------------------- */

static gboolean build_conditional(const Build *bd, const DrGraph *g, const DrPlan *plan, DrId v,
                                  cudaGraph_t graph, const GArray *deps, GArray *exits);
static gboolean guarded_copies(const Build *bd, const DrLoop *loop, const DrPlan *bp,
                               const DrCudaWhileChoice *ch, const gint32 *cond, guint64 *trips,
                               cudaGraph_t graph, GArray *last);

/* The plan of body `which` (0: the body, 1: the else body) of loop node v
 * of `plan`'s graph. */
static const DrPlan *body_plan(const DrPlan *plan, DrId v, guint which) {
  guint32 l = dr_graph_node(plan->graph, v)->loop - 1;
  return g_ptr_array_index(plan->bodies, 2 * l + which);
}

/* Builds one copy of body `plan` into `graph` after `entry`; `exits`: the
 * nodes a follower must depend on (entry itself when the copy added no
 * node). In a kernel-guarded copy (bd->guard) the node that sets the
 * condition is built last, after every other node of the copy (it has no
 * successor in the body's DAG, dr_loop_while_guardable; its place in the
 * plan is kept as a noop), so that every kernel of the copy reads the
 * condition as it was when the copy started. */
static gboolean build_body(const Build *bd, const DrPlan *plan, cudaGraph_t graph, const GArray *entry,
                           GArray *exits) {
  const DrGraph *g = plan->graph;
  guint32 n = dr_graph_n_nodes(g);
  GArray **out = g_new0(GArray *, MAX(n, 1));
  gboolean *followed = g_new0(gboolean, MAX(n, 1));
  guint32 *last = g_new(guint32, MAX(plan->streams->len, 1));
  for (guint32 k = 0; k < plan->streams->len; k++) last[k] = DR_NONE;
  gboolean ok = TRUE;
  DrId deferred = bd->guard && bd->guard_body == g ? bd->guard_writer : DR_NONE;
  g_autoptr(GArray) deferred_deps = nodes_new();
  for (guint32 i = 0; ok && i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    DrId v = step->node;
    g_autoptr(GArray) deps = nodes_new();
    DrId prev = last[step->stream];
    if (prev == DR_NONE && step->wait_count == 0) add_unique(deps, nodes_data(entry), entry->len);
    if (prev != DR_NONE) {
      add_unique(deps, nodes_data(out[prev]), out[prev]->len);
      followed[prev] = TRUE;
    }
    for (guint32 w = 0; w < step->wait_count; w++) {
      DrId u = dr_plan_wait(plan, step->wait_first + w);
      add_unique(deps, nodes_data(out[u]), out[u]->len);
      followed[u] = TRUE;
    }
    last[step->stream] = v;
    out[v] = nodes_new();
    const DrNode *node = dr_graph_node(g, v);
    if (node->loop) {
      ok = build_conditional(bd, g, plan, v, graph, deps, out[v]);
    } else if (v == deferred) {
      add_unique(deferred_deps, nodes_data(deps), deps->len);
      add_unique(out[v], nodes_data(deps), deps->len);
    } else if (node->op == DR_OP_NOOP) {
      add_unique(out[v], nodes_data(deps), deps->len);
    } else {
      NodeRef r = {g, v};
      ok = capture_one(bd, graph, deps, node_work, &r, node->id, out[v]) &&
           (!dr__cuda_is_gemm(g, v) || check_blas_capture(bd, deps, out[v], node->id));
    }
  }
  if (ok) {
    g_array_set_size(exits, 0);
    for (DrId v = 0; v < n; v++)
      if (out[v] && !followed[v]) add_unique(exits, nodes_data(out[v]), out[v]->len);
    if (n == 0) add_unique(exits, nodes_data(entry), entry->len);
  }
  if (ok && deferred != DR_NONE) {
    add_unique(deferred_deps, nodes_data(exits), exits->len);
    NodeRef r = {g, deferred};
    ok = capture_one(bd, graph, deferred_deps, node_work, &r, dr_graph_node(g, deferred)->id, exits);
  }
  for (DrId v = 0; v < n; v++)
    if (out[v]) g_array_unref(out[v]);
  g_free(out);
  g_free(followed);
  g_free(last);
  return ok;
}

/* Builds body `plan` into the empty body graph `graph` of a conditional
 * node; `exits` its last nodes. A body that adds no graph node (noops
 * only) gets an empty node, so that no body graph is empty. */
static gboolean fill_body(const Build *bd, const DrPlan *plan, cudaGraph_t graph, const char *id,
                          GArray *exits) {
  g_autoptr(GArray) none = nodes_new();
  if (!build_body(bd, plan, graph, none, exits)) return FALSE;
  if (exits->len > 0) return TRUE;
  struct cudaGraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = cudaGraphNodeTypeEmpty;
  cudaGraphNode_t node = NULL;
  if (!add_node(bd, graph, none, &p, id, &node)) return FALSE;
  g_array_append_val(exits, node);
  return TRUE;
}

/* One trip of `loop`, body `plan`, into the empty body graph `graph`: the
 * trip's open stamp (its number `trip`, < 0: the run's count), the body,
 * and when `close` its close stamp (else the caller's); `exits` its last
 * nodes. Without the ring, fill_body. */
static gboolean fill_trip(const Build *bd, const DrLoop *loop, const DrPlan *plan, cudaGraph_t graph,
                          gint64 trip, gboolean close, GArray *exits) {
  if (!dr__cuda_trips_ring_on(bd->trips)) return fill_body(bd, plan, graph, loop->id, exits);
  g_autoptr(GArray) open = nodes_new();
  return trip_stamp(bd, loop, DR_TRIP_OPEN, NULL, trip, 0, graph, open) &&
         build_body(bd, plan, graph, open, exits) &&
         (!close || trip_stamp(bd, loop, DR_TRIP_CLOSE, NULL, -1, 0, graph, exits));
}

/* Adds a conditional node of `type` with `size` bodies and `handle` to
 * `graph` after `deps`: *node and its body graphs bodies[size]. */
static gboolean add_conditional(const Build *bd, cudaGraph_t graph, const GArray *deps,
                                cudaGraphConditionalHandle handle, enum cudaGraphConditionalNodeType type,
                                unsigned size, const char *id, cudaGraphNode_t *node, cudaGraph_t *bodies) {
  struct cudaGraphNodeParams p;
  memset(&p, 0, sizeof p);
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = handle;
  p.conditional.type = type;
  p.conditional.size = size;
  if (!add_node(bd, graph, deps, &p, id, node)) return FALSE;
  for (unsigned i = 0; i < size; i++) bodies[i] = p.conditional.phGraph_out[i];
  return TRUE;
}

/* A while or if (or a repeat, as a counted WHILE) node v of `plan`'s
 * graph `g` into `graph` after `deps`, as the file head says. `top`: the
 * capturing stream when `graph` is the capture's own graph (a launch
 * applies the handle's default; the top-level loop's counters), NULL
 * inside a body. `exits` receives the conditional node. */
static gboolean build_loop(const Build *bd, const DrGraph *g, const DrPlan *plan, DrId v, cudaGraph_t graph,
                           const GArray *deps, cudaStream_t top, GArray *exits) {
  GError **error = bd->error;
  const DrLoop *loop = dr_graph_node_loop(g, v);
  DrCudaSite site = DR_SITE_NODE(loop->id, -1);
  guint32 li = dr_graph_node(g, v)->loop - 1;
  guint64 *trips = top && bd->l->counters ? bd->l->counters + 3 * li : NULL;
  gint32 *cond = loop->kind == DR_LOOP_REPEAT ? NULL : (gint32 *)bd->m->bases[loop->cond];
  cudaGraphConditionalHandle h = 0;
  g_autoptr(GArray) before = nodes_new();
  add_unique(before, nodes_data(deps), deps->len);
  /* A first trip: by the handle's default only where the node runs once
   * per launch, at the top level of the executable's own graph (not in
   * run.device_loop's WHILE body, where every iteration runs it again). */
  gboolean by_default = top && loop->kind != DR_LOOP_IF && !bd->l->device_loop;
  /* A nested while's trips are numbered from 0 at each of its runs. */
  if (top == NULL && loop->kind != DR_LOOP_IF && dr__cuda_trips_ring_on(bd->trips) &&
      !capture_one(bd, graph, before, run_work, loop, loop->id, before))
    return FALSE;
  if (!DR_CUDA(site, cudaGraphConditionalHandleCreate, &h, graph, by_default ? 1u : 0u,
               by_default ? (unsigned)cudaGraphCondAssignDefault : 0u))
    return FALSE;
  if (loop->kind == DR_LOOP_IF || !by_default) {
    /* An if's choice, a nested do-while's first trip. At the top level
     * the kernel goes on the capturing stream itself (the capture's graph
     * is not captured into from a second stream), and the node follows
     * what the stream depends on then. */
    CondRef c = {h, loop->kind == DR_LOOP_IF ? cond : NULL, loop->kind == DR_LOOP_IF ? trips : NULL, FALSE};
    if (top == NULL) {
      if (!capture_one(bd, graph, before, cond_work, &c, loop->id, before)) return FALSE;
    } else {
      enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      const cudaGraphNode_t *now = NULL;
      const cudaGraphEdgeData *edges = NULL;
      size_t n_now = 0;
      if (!cond_work(bd, &c, top, error) ||
          !DR_CUDA(site, cudaStreamGetCaptureInfo, top, &status, NULL, NULL, &now, &edges, &n_now))
        return FALSE;
      g_array_set_size(before, 0);
      add_unique(before, now, n_now);
    }
  }
  cudaGraph_t bodies[2] = {NULL, NULL};
  cudaGraphNode_t node = NULL;
  g_autoptr(GArray) last = nodes_new();
  if (loop->kind == DR_LOOP_IF) {
    unsigned size = loop->else_body ? 2 : 1;
    if (!add_conditional(bd, graph, before, h, cudaGraphCondTypeIf, size, loop->id, &node, bodies) ||
        !fill_trip(bd, loop, body_plan(plan, v, 0), bodies[0], 0, TRUE, last) ||
        (size == 2 && !fill_body(bd, body_plan(plan, v, 1), bodies[1], loop->id, last)))
      return FALSE;
  } else {
    const DrPlan *bp = body_plan(plan, v, 0);
    /* A while's copies 2..U, guarded (dr__cuda_while_choice): by their
     * kernels (guarded_copies), or each in an IF node set from the
     * condition after the copy before (counting the copies that run); the
     * trip's end then reads it once more for the WHILE. */
    DrCudaWhileChoice ch = {1, DR_WHILE_GUARD_NONE, DR_NONE};
    if (loop->kind == DR_LOOP_WHILE) dr__cuda_while_choice(loop, bp, &ch);
    gboolean kernel_guards = ch.guard == DR_WHILE_GUARD_KERNEL;
    if (!add_conditional(bd, graph, before, h, cudaGraphCondTypeWhile, 1, loop->id, &node, bodies) ||
        !fill_trip(bd, loop, bp, bodies[0], -1, !kernel_guards, last))
      return FALSE;
    guint32 unroll = ch.guard == DR_WHILE_GUARD_IF ? ch.unroll : 1;
    if (kernel_guards && !guarded_copies(bd, loop, bp, &ch, cond, trips, bodies[0], last)) return FALSE;
    for (guint32 k = 1; k < unroll; k++) {
      cudaGraphConditionalHandle hk = 0;
      cudaGraphNode_t guard = NULL;
      cudaGraph_t copy[1] = {NULL};
      CondRef c = {0, cond, trips, FALSE};
      if (!DR_CUDA(site, cudaGraphConditionalHandleCreate, &hk, bodies[0], 0u, 0u)) return FALSE;
      c.handle = hk;
      g_autoptr(GArray) inner = nodes_new();
      if (!capture_one(bd, bodies[0], last, cond_work, &c, loop->id, last) ||
          !add_conditional(bd, bodies[0], last, hk, cudaGraphCondTypeIf, 1, loop->id, &guard, copy) ||
          !fill_trip(bd, loop, bp, copy[0], -1, TRUE, inner))
        return FALSE;
      g_array_set_size(last, 0);
      g_array_append_val(last, guard);
    }
    g_autoptr(GArray) end = nodes_new();
    if (loop->kind == DR_LOOP_WHILE) {
      CondRef c = {h, cond, trips, TRUE};
      if (!capture_one(bd, bodies[0], last, cond_work, &c, loop->id, end)) return FALSE;
    } else {
      /* A counted WHILE: its counter is the top-level loop's (a repeat
       * with a while or if inside is built only at the top level). */
      CountRef c = {h, bd->l->counters + 3 * li + 1, bd->l->counters + 3 * li + 2, NULL};
      if (!capture_one(bd, bodies[0], last, count_work, &c, loop->id, end)) return FALSE;
    }
  }
  g_array_set_size(exits, 0);
  g_array_append_val(exits, node);
  return TRUE;
}

void dr__cuda_while_choice(const DrLoop *loop, const DrPlan *body, DrCudaWhileChoice *out) {
  const char *force = g_getenv("DAGRUN_WHILE_GUARD");
  DrId writer = DR_NONE;
  gboolean by_kernels =
      !(force && strcmp(force, "if") == 0) && dr_loop_while_guardable(body->graph, loop->cond, &writer, NULL);
  guint32 u = by_kernels ? dr_loop_auto_unroll_guarded(body->critical_path_us) : 1;
  const char *v = g_getenv("DAGRUN_WHILE_UNROLL");
  guint64 n = 0;
  if (v && strcmp(v, "auto") == 0)
    u = by_kernels ? u : dr_loop_auto_unroll(body->critical_path_us);
  else if (v && g_ascii_string_to_unsigned(v, 10, 1, 64, &n, NULL))
    u = (guint32)n;
  out->unroll = u;
  out->guard = u == 1 ? DR_WHILE_GUARD_NONE : by_kernels ? DR_WHILE_GUARD_KERNEL : DR_WHILE_GUARD_IF;
  out->writer = out->guard == DR_WHILE_GUARD_KERNEL ? writer : DR_NONE;
}

/* A while's copies 2..U of body `bp` (ch->unroll of them, kernel-guarded)
 * in its WHILE body graph `graph` after `last`, the first copy's exits,
 * which become the last copy's. Each copy's kernels read the condition
 * `cond` as their guard: a copy after the stop does nothing, and every
 * kernel of a copy that starts runs, because the one that sets the
 * condition is the copy's last (dr_loop_while_guardable). That one also
 * counts the copy in `trips` (NULL: not counted) when it runs, as the IF
 * nodes' condition kernels do. With the ring, each copy starts with the
 * stamp that closes the trip before and opens its own when the condition
 * lets it run, and the last copy ends with a close. */
static gboolean guarded_copies(const Build *bd, const DrLoop *loop, const DrPlan *bp,
                               const DrCudaWhileChoice *ch, const gint32 *cond, guint64 *trips,
                               cudaGraph_t graph, GArray *last) {
  Build gb = *bd;
  gb.guard = cond;
  gb.guard_runs = trips;
  gb.guard_body = bp->graph;
  gb.guard_writer = ch->writer;
  g_autoptr(GArray) next = nodes_new();
  for (guint32 k = 1; k < ch->unroll; k++) {
    if (!trip_stamp(bd, loop, DR_TRIP_CLOSE | DR_TRIP_OPEN, cond, -1, 0, graph, last) ||
        !build_body(&gb, bp, graph, last, next))
      return FALSE;
    g_array_set_size(last, 0);
    add_unique(last, nodes_data(next), next->len);
  }
  return trip_stamp(bd, loop, DR_TRIP_CLOSE, NULL, -1, 0, graph, last);
}

/* A loop node v inside a body being built: a while or if as a
 * conditional node, a repeat unrolled (its body `count` times in a row). */
static gboolean build_conditional(const Build *bd, const DrGraph *g, const DrPlan *plan, DrId v,
                                  cudaGraph_t graph, const GArray *deps, GArray *exits) {
  const DrLoop *loop = dr_graph_node_loop(g, v);
  if (loop->kind != DR_LOOP_REPEAT) return build_loop(bd, g, plan, v, graph, deps, NULL, exits);
  g_autoptr(GArray) entry = nodes_new();
  add_unique(entry, nodes_data(deps), deps->len);
  for (guint64 t = 0; t < loop->count; t++) {
    guint64 skip = 0, none = 0;
    unsigned before = dr__cuda_trips_repeat_flags(loop, t, FALSE, &skip);
    unsigned after = dr__cuda_trips_repeat_flags(loop, t, TRUE, &none);
    if ((before && !trip_stamp(bd, loop, before, NULL, (gint64)t, skip, graph, entry)) ||
        !build_body(bd, body_plan(plan, v, 0), graph, entry, exits) ||
        (after && !trip_stamp(bd, loop, after, NULL, -1, 0, graph, exits)))
      return FALSE;
    g_array_set_size(entry, 0);
    add_unique(entry, nodes_data(exits), exits->len);
  }
  return TRUE;
}

gboolean dr__cuda_cond_issue(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrPlan *plan,
                             DrId v, cudaStream_t st, GError **error) {
  const DrGraph *g = plan->graph;
  const DrLoop *loop = dr_graph_node_loop(g, v);
  guint32 li = dr_graph_node(g, v)->loop - 1;
  DrCudaSite site = DR_SITE_NODE(loop->id, -1);
  Build bd = {l, m, api, error};
  bd.trips = l->trip_stamps;
  /* The counters, reset by memset nodes on the capturing stream before
   * the node: its trips, and a counted WHILE's counter. */
  if (!DR_CUDA(site, cudaMemsetAsync, l->counters + 3 * li, 0, 2 * sizeof(guint64), st)) return FALSE;
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = NULL;
  const cudaGraphNode_t *deps = NULL;
  const cudaGraphEdgeData *edges = NULL;
  size_t n_deps = 0;
  if (!DR_CUDA(site, cudaStreamGetCaptureInfo, st, &status, NULL, &graph, &deps, &edges, &n_deps))
    return FALSE;
  if (status != cudaStreamCaptureStatusActive || graph == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': graph mode builds it only while capturing",
                loop->id);
    return FALSE;
  }
  /* The stream's dependencies are copied before any other call reuses
   * their storage. */
  g_autoptr(GArray) before = nodes_new();
  add_unique(before, deps, n_deps);
  g_autoptr(GArray) exits = nodes_new();
  if (!build_loop(&bd, g, plan, v, graph, before, st, exits)) return FALSE;
  /* A counted repeat's trips are its counter's (a parameter's count). */
  l->device_trips[li] = loop->kind != DR_LOOP_REPEAT || loop->counted;
  return DR_CUDA(site, cudaStreamUpdateCaptureDependencies, st, (cudaGraphNode_t *)(void *)exits->data, NULL,
                 exits->len, cudaStreamSetCaptureDependencies);
}

/* ---- run.device_loop ------------------------------------------------------ */

gboolean dr__cuda_device_loop_begin(DrCudaLoops *l, cudaStream_t origin, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaSite site = DR_SITE_SETUP("run.device_loop's WHILE node");
  cudaStream_t x = l->dl_outer;
  if (!DR_CUDA(site, cudaStreamBeginCapture, x, cudaStreamCaptureModeThreadLocal)) return FALSE;
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = NULL;
  const cudaGraphNode_t *deps = NULL;
  const cudaGraphEdgeData *edges = NULL;
  size_t n_deps = 0;
  cudaGraphNode_t node = NULL;
  cudaGraph_t body = NULL;
  /* The counter's reset and the start stamp (stamps[0]) before the node;
   * the first trip always runs (the handle's default, at each launch). */
  gboolean ok = DR_CUDA(site, cudaMemsetAsync, l->dl, 0, sizeof(guint64), x) &&
                dr__cuda_check((cudaError_t)api->stamp_launch((unsigned long long *)l->dl_stamps, x),
                               "stamp kernel launch", site, error) &&
                DR_CUDA(site, cudaStreamGetCaptureInfo, x, &status, NULL, &graph, &deps, &edges, &n_deps) &&
                DR_CUDA(site, cudaGraphConditionalHandleCreate, &l->dl_handle, graph, 1u,
                        (unsigned)cudaGraphCondAssignDefault);
  if (ok) {
    g_autoptr(GArray) before = nodes_new();
    add_unique(before, deps, n_deps);
    Build bd = {l, NULL, api, error};
    cudaGraph_t bodies[1] = {NULL};
    ok = add_conditional(&bd, graph, before, l->dl_handle, cudaGraphCondTypeWhile, 1, "run.device_loop",
                         &node, bodies) &&
         DR_CUDA(site, cudaStreamUpdateCaptureDependencies, x, &node, NULL, 1,
                 cudaStreamSetCaptureDependencies);
    body = bodies[0];
  }
  ok = ok && DR_CUDA(site, cudaStreamBeginCaptureToGraph, origin, body, NULL, NULL, 0,
                     cudaStreamCaptureModeThreadLocal);
  if (ok) return TRUE;
  cudaGraph_t dropped = NULL;
  (void)api->cudaStreamEndCapture(x, &dropped);
  if (dropped) (void)api->cudaGraphDestroy(dropped);
  (void)api->cudaGetLastError();
  return FALSE;
}

cudaError_t dr__cuda_device_loop_end(DrCudaLoops *l, cudaStream_t origin, gboolean ok, cudaGraph_t *graph) {
  const DrCudaApi *api = dr_cuda_api();
  cudaError_t rc = cudaSuccess;
  *graph = NULL;
  if (ok) rc = (cudaError_t)api->count_launch(l->dl_handle, l->dl, l->dl + 1, l->dl_stamps, origin);
  cudaGraph_t same = NULL;
  cudaError_t end_body = api->cudaStreamEndCapture(origin, &same);
  if (rc == cudaSuccess) rc = end_body;
  cudaGraph_t whole = NULL;
  cudaError_t end_outer = api->cudaStreamEndCapture(l->dl_outer, &whole);
  if (rc == cudaSuccess) rc = end_outer;
  if (rc != cudaSuccess || !ok) {
    if (whole) (void)api->cudaGraphDestroy(whole);
    return rc;
  }
  *graph = whole;
  return cudaSuccess;
}
