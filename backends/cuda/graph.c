/* graph.c: graph mode, the CUDA backend's second set of operations over
 * the shared parts: capture one whole iteration once and replay it.
 *
 * Capture starts on the origin stream in thread-local mode; the fork event
 * pulls every plan stream into the capture, the plan is issued exactly as
 * in eager mode (dr__cuda_issue_iteration, with this file's capture
 * hooks), so stream order and the planned
 * waits become the graph's edges and capture adds no edge the DAG does not
 * imply beyond stream order itself; the join events bring every stream back
 * to origin before EndCapture. alloc/free nodes become graph memory nodes,
 * host nodes host nodes, timing events external event-record nodes. The
 * graph is instantiated once at setup (outside the timed region) and each
 * iteration is one cudaGraphLaunch between the origin's timing events.
 * Two switches for A/B runs (graph_switch): programmatic dependent launch
 * edges between built-ins (DAGRUN_GRAPH_PDL) and per-node priorities
 * (DAGRUN_GRAPH_PRIORITY).
 * dr__cuda_graph_update re-captures after a library user changed scalar
 * arguments and updates the executable in place (cudaGraphExecUpdate),
 * re-instantiating only when the runtime refuses; when only scalars of
 * mapped kernel nodes changed, each node's parameters are set on the
 * executable instead. A buffer bound to new memory (graph_buffer_moved)
 * is followed the same way: each kernel, memcpy and memset node that
 * touches it gets its new parameters on the executable, and only what
 * cannot takes the re-capture. With run.graph_cache a change that forces
 * a re-capture instantiates a new executable and keeps the one before
 * (graph_cache.h), and a change back to values seen before puts a kept
 * one back in use instead of capturing (cached_update). A node whose work breaks the capture is named, and
 * with run.fallback: streams the backend goes on in streams mode. This
 * file owns the graph, the executable and the node map (graph.h); it
 * issues nothing itself. */
#include <string.h>

#include "backends/cuda/cuda.h"
#include "ir/loops.h"

/* The table has what per-node updates need. */
static gboolean can_map(const DrCudaApi *api) {
  return api->cudaStreamGetCaptureInfo && api->cudaGraphGetNodes && api->cudaGraphNodeGetType &&
         api->cudaGraphNodeGetDependencies && api->cudaGraphKernelNodeGetParams &&
         api->cudaGraphExecKernelNodeSetParams;
}

/* Forgets the node map (node and chain). */
static void drop_map(DrCudaGraphState *cg) {
  g_clear_pointer(&cg->node, g_free);
  g_clear_pointer(&cg->chain, g_hash_table_unref);
  g_clear_pointer(&cg->live, g_free);
}

/* Whether node v is a kernel node of a user kernel (`kernels:`). */
static gboolean is_user_kernel(const DrGraph *g, DrId v) {
  const DrNode *n = dr_graph_node(g, v);
  return n->op == DR_OP_KERNEL && dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER;
}

/* DrCudaCapture.before: asked only while the node map is kept. */
static cudaGraphNode_t *capture_before(DrBackend *b, cudaStream_t st, gsize *n) {
  const DrCudaApi *api = dr_cuda_api();
  *n = G_MAXSIZE;
  if (b->cuda_graph.node == NULL) return NULL;
  enum cudaStreamCaptureStatus status;
  const cudaGraphNode_t *deps = NULL;
  const cudaGraphEdgeData *edges = NULL; /* asked for: see capture_after */
  size_t n_deps = 0;
  if (api->cudaStreamGetCaptureInfo(st, &status, NULL, NULL, &deps, &edges, &n_deps) != cudaSuccess ||
      status != cudaStreamCaptureStatusActive) {
    (void)api->cudaGetLastError();
    return NULL;
  }
  *n = n_deps;
  return n_deps ? g_memdup2(deps, n_deps * sizeof *deps) : NULL;
}

/* The same nodes, in any order (a and b hold no duplicates). */
static gboolean same_nodes(const cudaGraphNode_t *a, const cudaGraphNode_t *b, gsize n) {
  for (gsize i = 0; i < n; i++) {
    gsize j = 0;
    while (j < n && b[j] != a[i]) j++;
    if (j == n) return FALSE;
  }
  return TRUE;
}

/* Whether `node` is one of `set` [n]. */
static gboolean among(cudaGraphNode_t node, const cudaGraphNode_t *set, gsize n) {
  for (gsize i = 0; i < n; i++)
    if (set[i] == node) return TRUE;
  return FALSE;
}

/* The dependencies of `node` (*n of them, a new array), or NULL with *n
 * G_MAXSIZE when the query fails. With edge data: a programmatic edge
 * (DAGRUN_GRAPH_PDL) is not default data, and without it the query would
 * fail (cudaErrorLossyQuery). */
static cudaGraphNode_t *dependencies(cudaGraphNode_t node, gsize *n) {
  const DrCudaApi *api = dr_cuda_api();
  size_t n_in = 0;
  *n = G_MAXSIZE;
  if (api->cudaGraphNodeGetDependencies(node, NULL, NULL, &n_in) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return NULL;
  }
  cudaGraphNode_t *in = g_new0(cudaGraphNode_t, MAX(n_in, 1));
  g_autofree cudaGraphEdgeData *edges = g_new0(cudaGraphEdgeData, MAX(n_in, 1));
  if (n_in && api->cudaGraphNodeGetDependencies(node, in, edges, &n_in) != cudaSuccess) {
    (void)api->cudaGetLastError();
    g_free(in);
    return NULL;
  }
  *n = n_in;
  return in;
}

/* Maps v to what its work added to the capture, when that is one node of
 * v's kind (a kernel node for a built-in, a memcpy or memset node for a
 * copy or memset) whose dependencies are exactly `before`, or, for a
 * kernel, a chain of at most DR_GRAPH_CHAIN_MAX kernel or memset nodes
 * ending at a kernel node, each depending on the one before it and the
 * first on exactly `before` (cuBLAS captures a gemm so at some shapes: a
 * split-K product and its reduction): cg->node[v] is the chain's last
 * node, cg->chain holds the whole chain. The last `spares` nodes of the
 * chain are spare slots (spare slots, below): cg->live[v] counts the
 * others. Anything else (a fork inside the work, a node of another kind)
 * leaves v unmapped. */
static void note_node(DrCudaGraphState *cg, DrId v, enum cudaGraphNodeType want, const cudaGraphNode_t *deps,
                      size_t n_deps, const cudaGraphNode_t *before, gsize n_before, guint spares) {
  const DrCudaApi *api = dr_cuda_api();
  enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  if (n_deps != 1 || among(deps[0], before, n_before) ||
      api->cudaGraphNodeGetType(deps[0], &type) != cudaSuccess || type != want) {
    (void)api->cudaGetLastError();
    g_debug("graph capture: node %u not mapped: its work ends at %zu nodes, the first of type %d", v, n_deps,
            n_deps ? (int)type : -1);
    return;
  }
  cudaGraphNode_t path[DR_GRAPH_CHAIN_MAX];
  guint len = 0;
  cudaGraphNode_t node = deps[0];
  for (;;) {
    path[len++] = node;
    gsize n_in = 0;
    g_autofree cudaGraphNode_t *in = dependencies(node, &n_in);
    if (in == NULL) return;
    if (n_in == n_before && same_nodes(in, before, n_in)) break; /* the work's first node */
    enum cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
    if (want != cudaGraphNodeTypeKernel || n_in != 1 || len == DR_GRAPH_CHAIN_MAX ||
        among(in[0], before, n_before) || api->cudaGraphNodeGetType(in[0], &t) != cudaSuccess ||
        (t != cudaGraphNodeTypeKernel && t != cudaGraphNodeTypeMemset)) {
      (void)api->cudaGetLastError();
      g_debug(
          "graph capture: node %u not mapped: its work is no chain of at most %d nodes after the %zu before "
          "it",
          v, DR_GRAPH_CHAIN_MAX, n_before);
      return;
    }
    node = in[0];
  }
  if (spares > 0 && len <= spares) return; /* the launch made nothing of its own */
  cg->node[v] = deps[0];
  if (spares > 0 && cg->live != NULL) cg->live[v] = (guint8)(len - spares);
  if (len > 1) {
    /* In launch order, NULL-terminated. */
    cudaGraphNode_t *chain = g_new0(cudaGraphNode_t, len + 1);
    for (guint i = 0; i < len; i++) chain[i] = path[len - 1 - i];
    if (cg->chain == NULL) cg->chain = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_hash_table_insert(cg->chain, GUINT_TO_POINTER(v), chain);
  }
}

/* Spare slots. cuBLAS captures a gemm as one kernel node at some shapes
 * and as two (a split-K product and its reduction) at others, and no
 * executable takes a new topology in place: without a spare, a change
 * across that line captures and instantiates the whole iteration again
 * (BENCHMARKS.md §16: 45 of 93 changes of the decoder sweep). So a gemm
 * whose values depend on run-time parameters is captured with one spare
 * kernel node after its launch (spare_launch: a kernel of no work), which
 * is disabled on the executable (cudaGraphNodeSetEnabled; a disabled node
 * runs as an empty one) while the launch makes fewer nodes, and set from
 * the launch's extra node and enabled when it makes more (set_node_params).
 * Not with run.graph_cache, which keys each gemm shape to an executable of
 * its own instead, and not for nodes that never vary. DAGRUN_GRAPH_SPARES=0
 * captures none (for A/B runs of their cost, bench/params_bench.sh). */
static gboolean graph_switch(const char *name, gboolean dflt);

static gboolean wants_spare(const DrBackend *b, DrId v) {
  const DrCudaApi *api = dr_cuda_api();
  const DrGraph *g = b->graph;
  if (api->spare_launch == NULL || api->cudaGraphNodeSetEnabled == NULL || b->cuda_graph.live == NULL ||
      g->run.graph_cache > 0 || !dr__cuda_is_gemm(g, v) || !graph_switch("DAGRUN_GRAPH_SPARES", TRUE))
    return FALSE;
  for (guint i = 0; i < g->param_uses->len; i++)
    if (g_array_index(g->param_uses, DrParamUse, i).node == v) return TRUE;
  return FALSE;
}

/* Disables the spare slots of a new executable (each node's chain past
 * its live nodes). A slot that cannot be disabled runs its spare kernel,
 * which does nothing, and its node is unmapped: a change of it captures
 * the iteration again. */
static void disable_spares(DrBackend *b) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaGraphState *cg = &b->cuda_graph;
  if (cg->live == NULL || cg->node == NULL || cg->exec == NULL) return;
  for (DrId v = 0; v < b->n_nodes; v++) {
    if (cg->live[v] == 0) continue;
    cudaGraphNode_t *chain = cg->chain ? g_hash_table_lookup(cg->chain, GUINT_TO_POINTER(v)) : NULL;
    gboolean ok = chain != NULL;
    for (guint i = cg->live[v]; ok && chain[i] != NULL; i++)
      ok = api->cudaGraphNodeSetEnabled(cg->exec, chain[i], 0) == cudaSuccess;
    if (ok) continue;
    (void)api->cudaGetLastError();
    g_debug("graph capture: node '%s': its spare slot cannot be disabled; not set in place",
            dr_graph_node(b->graph, v)->id);
    cg->node[v] = NULL;
    cg->live[v] = 0;
  }
}

/* DrCudaCapture.after, with one query of the stream's capture state:
 *  - when the work broke the capture (it made a call capture does not
 *    allow: a synchronous copy, an allocation, a synchronization; a
 *    library kernel's launcher might), v is to blame: uncapturable = v and
 *    the error names it and says why (any error of the work itself follows
 *    in parentheses); FALSE;
 *  - else FALSE when !ok;
 *  - else, given what the stream depended on before a built-in's launch,
 *    maps v to the one kernel node the launch added, if it added exactly
 *    one; TRUE. */
static gboolean capture_after(DrBackend *b, DrId v, cudaStream_t st, gboolean ok,
                              const cudaGraphNode_t *before, gsize n_before, GError **error) {
  DrCudaGraphState *cg = &b->cuda_graph;
  const DrCudaApi *api = dr_cuda_api();
  /* A spare slot after a varying library call (spare slots, below). A
   * launch that failed leaves none: the query below then finds the
   * capture broken, or v's chain without it. */
  guint spares = 0;
  if (ok && n_before != G_MAXSIZE && wants_spare(b, v)) {
    if (api->spare_launch(st) == 0)
      spares = 1;
    else
      (void)api->cudaGetLastError();
  }
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  const cudaGraphNode_t *deps = NULL;
  /* Asked for although unused: without it the query fails
   * (cudaErrorLossyQuery) when a dependency carries edge data, which
   * would read as a broken capture. */
  const cudaGraphEdgeData *edges = NULL;
  size_t n_deps = 0;
  if (api->cudaStreamGetCaptureInfo &&
      api->cudaStreamGetCaptureInfo(st, &status, NULL, NULL, &deps, &edges, &n_deps) != cudaSuccess)
    status = cudaStreamCaptureStatusInvalidated; /* not capturing any more */
  if (status == cudaStreamCaptureStatusActive) {
    if (ok && cg->node != NULL && cg->cap_base != NULL) {
      const DrNode *n = dr_graph_node(b->graph, v);
      for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++)
        cg->cap_base[a] = b->memory.bases[dr_graph_access(b->graph, a)->buffer];
    }
    if (ok && n_before != G_MAXSIZE && cg->node != NULL) {
      DrOp op = dr_graph_node(b->graph, v)->op;
      enum cudaGraphNodeType want = op == DR_OP_COPY     ? cudaGraphNodeTypeMemcpy
                                    : op == DR_OP_MEMSET ? cudaGraphNodeTypeMemset
                                                         : cudaGraphNodeTypeKernel;
      note_node(cg, v, want, deps, n_deps, before, n_before, spares);
    }
    return ok;
  }
  (void)api->cudaGetLastError();
  cg->uncapturable = v;
  const char *why =
      "its work made a call that stream capture does not allow (a synchronous copy, an allocation or a "
      "synchronization), which invalidated the capture";
  /* The failed call's own error (the launch after the capture broke), if
   * any, goes last, in parentheses. */
  g_autofree char *then = NULL;
  if (!ok && error && *error) {
    then = g_strdup_printf(" (then: %s)", (*error)->message);
    g_clear_error(error);
  }
  g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
              "node '%s' (stream %u) cannot be captured into a CUDA graph: %s%s",
              dr_graph_node(b->graph, v)->id, b->plan->node_stream[v], why, then ? then : "");
  return FALSE;
}

static const DrCudaCapture capture_hooks = {capture_before, capture_after};

/* Graph mode's two switches, each read from the environment for A/B runs
 * (bench/graph_ab.sh) with its default here, one constant each, chosen by
 * measurement on the H200 (BENCHMARKS.md, "graph mode at the hardware's
 * pace"):
 *   DAGRUN_GRAPH_PDL=0|1       programmatic dependent launch edges between
 *                              built-ins, where eager mode launches early
 *   DAGRUN_GRAPH_PRIORITY=0|1  instantiate with
 *                              cudaGraphInstantiateFlagUseNodePriority: each
 *                              kernel node keeps its stream's priority
 * (capture copies a stream's priority into its kernel nodes; without the
 * flag the whole graph runs at origin's). The probe of issue #18: a
 * 1000-leaf fan-out of alternating priorities launched in 278 µs without
 * the flag, 354 µs with it. On the H200 (bench/graph_ab.sh, 2026-12-01,
 * 5 alternating rounds, --timing=off) PDL edges took the 2000-kernel chain
 * from 1710.8 to 1437.1 µs (0.84x) and left spin32, fanout32 and
 * priority.yaml within noise (0.98-1.00x); the priority flag changed
 * nothing measurable (0.97-1.00x). So PDL is on, priorities off. */
#define GRAPH_PDL_DEFAULT TRUE
#define GRAPH_PRIORITY_DEFAULT FALSE

/* The switch `name`: "1" on, "0" off, anything else (or unset) `dflt`. */
static gboolean graph_switch(const char *name, gboolean dflt) {
  const char *v = g_getenv(name);
  if (v != NULL && strcmp(v, "1") == 0) return TRUE;
  if (v != NULL && strcmp(v, "0") == 0) return FALSE;
  return dflt;
}

/* Graph mode's instantiation flags. */
static unsigned long long instantiate_flags(void) {
  return graph_switch("DAGRUN_GRAPH_PRIORITY", GRAPH_PRIORITY_DEFAULT)
             ? cudaGraphInstantiateFlagUseNodePriority
             : 0;
}

/* Binds the built-ins for a capture: as dr__cuda_bind, but with
 * programmatic dependent launch where DAGRUN_GRAPH_PDL allows it and
 * nothing is captured between two kernels of a stream. Capture turns such
 * a launch (cudaLaunchAttributeProgrammaticStreamSerialization) into a
 * programmatic edge (cudaGraphDependencyTypeProgrammatic, from
 * cudaGraphKernelNodePortProgrammatic) from the stream's previous kernel
 * node, so the same rule as eager mode applies (dr__cuda_launch_bind:
 * no wait, no completion event, a built-in's kernel before), and in
 * addition no timing node between: timing events are event-record nodes
 * of their own, and so are inline stamps (DAGRUN_STAMPS_INLINE=1); stamps
 * aside (the default) add only an event record, which captures no node,
 * and the side stream's stamp depends on the kernel by a full edge. */
static gboolean graph_bind(DrBackend *b, GError **error) {
  const DrCudaTiming *t = &b->timing;
  gboolean between = t->mode == DR_TIMING_EVENTS || (t->mode == DR_TIMING_STAMPS && !t->stamp_aside);
  DrCudaBindHow how = {
      .stamps = b->mode->kernel_stamps && t->mode == DR_TIMING_STAMPS ? t->stamps : NULL,
      .early = graph_switch("DAGRUN_GRAPH_PDL", GRAPH_PDL_DEFAULT) && !between,
  };
  return dr__cuda_launch_bind(&b->launch, &b->streams, &b->memory, &how, error);
}

/* Captures one iteration into a new graph (*out, owned by the caller).
 * With `map`, the node map maps node ids to the new graph's nodes. */
static gboolean capture_iteration(DrBackend *b, cudaGraph_t *out, gboolean map, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaGraphState *cg = &b->cuda_graph;
  cudaStream_t origin = b->streams.origin;
  DrCudaSite site = DR_SITE_SETUP("graph capture");
  *out = NULL;
  drop_map(cg);
  /* run.device_loop: the iteration is the body of one WHILE node
   * (condgraph.c); its nodes are no nodes of the executable's own graph
   * to set parameters on, so no node map. */
  gboolean dl = b->loops.device_loop;
  if (map && can_map(api) && !dl) {
    cg->node = g_new0(cudaGraphNode_t, MAX(b->n_nodes, 1));
    cg->live = g_new0(guint8, MAX(b->n_nodes, 1));
    g_free(cg->cap_base);
    cg->cap_base = g_new0(void *, MAX(b->graph->accesses->len, 1));
  }
  if (dl ? !dr__cuda_device_loop_begin(&b->loops, origin, error)
         : !DR_CUDA(site, cudaStreamBeginCapture, origin, cudaStreamCaptureModeThreadLocal))
    return FALSE;
  /* A capture makes a graph that outlives this call: bind what the graph
   * holds now (a library user may have changed scalars since setup, see
   * dr__cuda_graph_update). */
  b->loops.capturing = TRUE; /* loops become conditional nodes (condgraph.c) */
  gboolean issued = graph_bind(b, error) && dr__cuda_issue_iteration(b, &capture_hooks, error);
  b->loops.capturing = FALSE;
  cudaGraph_t graph = NULL;
  cudaError_t rc = dl ? dr__cuda_device_loop_end(&b->loops, origin, issued, &graph)
                      : api->cudaStreamEndCapture(origin, &graph);
  /* The pointers cudaMallocAsync returned while capturing belong to the
   * graph's memory nodes now, valid only while the graph runs; when the
   * capture failed they went with it. Either way close must not free
   * them. */
  dr__cuda_memory_forget_async(&b->memory);
  if (!issued) {
    /* The issue error is the one to report; ending the capture only
     * leaves every stream usable for cleanup. */
    (void)api->cudaGetLastError();
    if (graph) (void)api->cudaGraphDestroy(graph);
    drop_map(cg);
    return FALSE;
  }
  if (!dr__cuda_check(rc, "cudaStreamEndCapture", site, error)) {
    if (graph) (void)api->cudaGraphDestroy(graph);
    drop_map(cg);
    return FALSE;
  }
  *out = graph;
  return TRUE;
}

/* Captures the iteration again, with its node map, after a change:
 * first waits for the iterations in flight (graph_args_changed runs
 * while they may run, and a capture binds every launch again), the wait
 * counted in cg->spent.wait. */
static gboolean recapture(DrBackend *b, cudaGraph_t *out, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  gboolean idle = dr__cuda_quiesce(b, error);
  b->cuda_graph.spent.wait += g_get_monotonic_time() - t0;
  return idle && capture_iteration(b, out, TRUE, error);
}

/* --dot-cuda-graph: CUDA's own picture of the captured graph. */
static gboolean write_cuda_graph_dot(DrBackend *b, GError **error) {
  const char *path = b->opts.cuda_graph_dot_path;
  if (path == NULL) return TRUE;
  if (dr_cuda_api()->cudaGraphDebugDotPrint == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "--dot-cuda-graph: %s: this CUDA runtime cannot print graphs",
                path);
    return FALSE;
  }
  return DR_CUDA(DR_SITE_SETUP("--dot-cuda-graph"), cudaGraphDebugDotPrint, b->cuda_graph.graph, path,
                 cudaGraphDebugDotFlagsVerbose);
}

/* run.graph_cache: the executable in use was just captured from the
 * graph as it is now: its key, and the values its nodes hold. */
static void note_captured(DrBackend *b) {
  DrCudaGraphState *cg = &b->cuda_graph;
  if (cg->cache.key) g_bytes_unref(cg->cache.key);
  cg->cache.key = dr__cuda_graph_cache_key(&cg->cache, b->graph, cg->node, b->launch.node_kcall);
  dr__cuda_graph_cache_hold(&cg->cache, &cg->held, b->graph, DR_NONE);
}

/* Captures one iteration, writes it for --dot-cuda-graph, and instantiates it. */
static gboolean capture_and_instantiate(DrBackend *b, GError **error) {
  DrCudaGraphState *cg = &b->cuda_graph;
  if (!capture_iteration(b, &cg->graph, TRUE, error)) return FALSE;
  if (!write_cuda_graph_dot(b, error)) return FALSE;
  if (!DR_CUDA(DR_SITE_SETUP("graph instantiation"), cudaGraphInstantiate, &cg->exec, cg->graph,
               instantiate_flags()))
    return FALSE;
  disable_spares(b);
  return TRUE;
}

/* DrCudaMode.prepare: the capture, outside the timed region. When a node
 * broke it and the run allows (run.fallback: streams), the backend goes on
 * in streams mode: the plan stays (graph mode's, uncapped), one iteration
 * in flight, stamps inline. */
static gboolean graph_prepare(DrBackend *b, GError **error) {
  g_autoptr(GError) local = NULL;
  /* Parameters in device memory (devwords.h): chosen before the capture,
   * which binds their nodes at their largest counts. Not with
   * run.device_loop: without a node map every change captures the
   * iteration again anyway. */
  if (!b->loops.device_loop &&
      !dr__cuda_devwords_open(&b->devwords, b->graph, b->plan, &b->streams, b->memory.bases, error))
    return FALSE;
  b->launch.words = &b->devwords;
  if (capture_and_instantiate(b, &local)) {
    /* run.graph_cache: needs the node map (run.device_loop has none). */
    DrCudaGraphState *cg = &b->cuda_graph;
    dr__cuda_graph_cache_init(&cg->cache, b->graph, cg->node != NULL ? b->graph->run.graph_cache : 0);
    if (cg->cache.cap > 0) note_captured(b);
    return TRUE;
  }
  if (b->cuda_graph.uncapturable == DR_NONE || !b->opts.graph_fallback) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  g_warning("%s; running in streams mode instead (run.fallback: streams)", local->message);
  b->launch.words = NULL; /* streams mode launches with the counts themselves */
  dr__cuda_devwords_close(&b->devwords);
  b->mode = &dr__cuda_streams_mode;
  b->loops.device_loop = FALSE; /* streams mode issues every iteration */
  dr__cuda_timing_inline(&b->timing);
  return b->mode->prepare(b, error);
}

gboolean dr__cuda_graph_update(DrBackend *b, const char **how, GError **error) {
  g_return_val_if_fail(b != NULL && b->mode == &dr__cuda_graph_mode, FALSE);
  const DrCudaApi *api = dr_cuda_api();
  DrCudaGraphState *cg = &b->cuda_graph;
  cudaGraph_t graph = NULL;
  /* The new graph's node map is kept only if it is instantiated: after an
   * in-place update the executable's nodes are the old graph's. */
  if (!recapture(b, &graph, error)) return FALSE;
  if (api->cudaGraphExecUpdate != NULL && cg->exec != NULL) {
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    cudaError_t rc = api->cudaGraphExecUpdate(cg->exec, graph, &info);
    if (rc == cudaSuccess) {
      if (cg->graph) (void)api->cudaGraphDestroy(cg->graph);
      cg->graph = graph;
      drop_map(cg);
      *how = "updated";
      return TRUE;
    }
    if (rc != cudaErrorGraphExecUpdateFailure) {
      /* Not a refusal but a failure: report it, keep the old graph. */
      (void)api->cudaGraphDestroy(graph);
      drop_map(cg);
      return dr__cuda_check(rc, "cudaGraphExecUpdate", DR_SITE_SETUP("graph update"), error);
    }
    /* Refused (topology, node kinds or memory nodes differ): the
     * executable is unchanged; instantiate. */
    (void)api->cudaGetLastError();
  }
  cudaGraphExec_t exec = NULL;
  if (!DR_CUDA(DR_SITE_SETUP("graph re-instantiation"), cudaGraphInstantiate, &exec, graph,
               instantiate_flags())) {
    (void)api->cudaGraphDestroy(graph);
    drop_map(cg);
    return FALSE;
  }
  cudaGraphNode_t *map = g_steal_pointer(&cg->node);
  guint8 *live = g_steal_pointer(&cg->live);
  void **cap_base = g_steal_pointer(&cg->cap_base);
  if (cg->exec) (void)api->cudaGraphExecDestroy(cg->exec);
  if (cg->graph) (void)api->cudaGraphDestroy(cg->graph);
  cg->node = map;
  cg->live = live;
  cg->cap_base = cap_base;
  cg->graph = graph;
  cg->exec = exec;
  disable_spares(b);
  *how = "re-instantiated";
  return TRUE;
}

void dr__cuda_graph_release(DrCudaGraphState *cg) {
  const DrCudaApi *api = dr_cuda_api();
  if (cg->exec) (void)api->cudaGraphExecDestroy(cg->exec);
  if (cg->graph) (void)api->cudaGraphDestroy(cg->graph);
  cg->exec = NULL;
  cg->graph = NULL;
  drop_map(cg);
  g_clear_pointer(&cg->held, g_hash_table_unref);
  g_clear_pointer(&cg->cap_base, g_free);
  dr__cuda_graph_cache_free(&cg->cache);
}

/* The base of `buffer` as node v saw it when captured (cap_base), or
 * NULL when not known. */
static void *captured_base(const DrBackend *b, DrId v, DrId buffer) {
  const DrCudaGraphState *cg = &b->cuda_graph;
  const DrNode *n = dr_graph_node(b->graph, v);
  if (cg->cap_base == NULL) return NULL;
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++)
    if (dr_graph_access(b->graph, a)->buffer == buffer) return cg->cap_base[a];
  return NULL;
}

/* Where access `a` of node v points in the executable: the buffer's base
 * now for whole-run buffers, the captured one for stream-ordered ones. */
static void *node_slice_ptr(const DrBackend *b, DrId v, const DrAccess *a) {
  const DrGraph *g = b->graph;
  const DrBuffer *buf = dr_graph_buffer(g, a->buffer);
  void *base = buf->alloc_node == DR_NONE ? b->memory.bases[a->buffer] : captured_base(b, v, a->buffer);
  return base ? (char *)base + a->begin * dr_elem_size(buf->type) : NULL;
}

/* Binds kernel call k's cuBLAS handle, if it is a gemm's, to `stream`;
 * FALSE (with a debug line naming node v) when cuBLAS refuses. */
static gboolean bind_blas(const DrBackend *b, DrId v, guint32 k, cudaStream_t stream) {
  const DrBoundKernel *kc = &b->launch.kcalls[k];
  char err[DR_KERR_SIZE] = {0};
  if (!(kc->call.def->flags & DR_KFLAG_BLAS) || kc->call.launch.blas == NULL ||
      dr__cuda_blas_bind(kc->call.launch.blas, stream, err) == 0)
    return TRUE;
  g_debug("graph update: node '%s': %s", dr_graph_node(b->graph, v)->id, err);
  return FALSE;
}

/* G_MESSAGES_DEBUG=all: what node v's one-node capture `one` holds when
 * it is not one node: each node's type and number of dependencies, in
 * the graph's order. */
static void debug_shape(const DrBackend *b, DrId v, cudaGraph_t one) {
  const DrCudaApi *api = dr_cuda_api();
  size_t n = 0;
  if (api->cudaGraphGetNodes(one, NULL, &n) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return;
  }
  g_autofree cudaGraphNode_t *nodes = g_new0(cudaGraphNode_t, MAX(n, 1));
  g_autoptr(GString) what = g_string_new(NULL);
  if (n > 0 && api->cudaGraphGetNodes(one, nodes, &n) == cudaSuccess)
    for (size_t i = 0; i < n; i++) {
      enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
      size_t in = 0;
      (void)api->cudaGraphNodeGetType(nodes[i], &type);
      (void)api->cudaGraphNodeGetDependencies(nodes[i], NULL, NULL, &in);
      g_string_append_printf(what, " type %d (%zu in)", (int)type, in);
    }
  (void)api->cudaGetLastError();
  g_debug("graph update: node '%s': its launch captured %zu nodes:%s", dr_graph_node(b->graph, v)->id, n,
          what->str);
}

/* The nodes of graph `one` in chain order (each depending on the one
 * before it, the first on none), *n of them, a new array; NULL when
 * they form no such chain or a query fails. */
static cudaGraphNode_t *chain_of(cudaGraph_t one, gsize *n) {
  const DrCudaApi *api = dr_cuda_api();
  size_t count = 0;
  *n = 0;
  if (api->cudaGraphGetNodes(one, NULL, &count) != cudaSuccess || count == 0 || count > DR_GRAPH_CHAIN_MAX) {
    (void)api->cudaGetLastError();
    return NULL;
  }
  cudaGraphNode_t all[DR_GRAPH_CHAIN_MAX], dep[DR_GRAPH_CHAIN_MAX];
  if (api->cudaGraphGetNodes(one, all, &count) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return NULL;
  }
  /* Each node's one dependency (NULL: none); more than one: no chain. */
  for (size_t i = 0; i < count; i++) {
    gsize n_in = 0;
    g_autofree cudaGraphNode_t *in = dependencies(all[i], &n_in);
    if (in == NULL || n_in > 1) return NULL;
    dep[i] = n_in ? in[0] : NULL;
  }
  cudaGraphNode_t *order = g_new0(cudaGraphNode_t, count);
  cudaGraphNode_t prev = NULL;
  for (size_t k = 0; k < count; k++) {
    size_t i = 0;
    while (i < count && dep[i] != prev) i++;
    if (i == count) {
      g_free(order);
      return NULL;
    }
    order[k] = prev = all[i];
  }
  *n = count;
  return order;
}

/* Sets kernel node `to` of `exec` to `params`, and its template node too
 * (not needed to run; kept true). */
static cudaError_t set_kernel(cudaGraphExec_t exec, cudaGraphNode_t to,
                              const struct cudaKernelNodeParams *params) {
  const DrCudaApi *api = dr_cuda_api();
  cudaError_t rc = api->cudaGraphExecKernelNodeSetParams(exec, to, params);
  if (rc == cudaSuccess && api->cudaGraphKernelNodeSetParams)
    (void)api->cudaGraphKernelNodeSetParams(to, params);
  return rc;
}

/* Sets executable node `to` from captured node `from` of the same kind: a
 * kernel node through the runtime (and its template node too), or
 * through the driver when `foreign` (a library's launch) or when the
 * runtime cannot name the function (a kernel of another module: cuBLAS's;
 * the template then keeps the launch it was captured with, only the
 * executable runs); a memset node through
 * cudaGraphExecMemsetNodeSetParams. */
static cudaError_t set_one(cudaGraphExec_t exec, cudaGraphNode_t to, cudaGraphNode_t from, gboolean foreign) {
  const DrCudaApi *api = dr_cuda_api();
  enum cudaGraphNodeType want = cudaGraphNodeTypeEmpty, type = cudaGraphNodeTypeEmpty;
  cudaError_t rc = api->cudaGraphNodeGetType(to, &want);
  if (rc == cudaSuccess) rc = api->cudaGraphNodeGetType(from, &type);
  if (rc == cudaSuccess && want != type) rc = cudaErrorInvalidValue;
  if (rc == cudaSuccess && type == cudaGraphNodeTypeMemset) {
    struct cudaMemsetParams p;
    memset(&p, 0, sizeof p);
    rc = api->cudaGraphMemsetNodeGetParams && api->cudaGraphExecMemsetNodeSetParams
             ? api->cudaGraphMemsetNodeGetParams(from, &p)
             : cudaErrorNotSupported;
    if (rc == cudaSuccess) rc = api->cudaGraphExecMemsetNodeSetParams(exec, to, &p);
  } else if (rc == cudaSuccess && type == cudaGraphNodeTypeKernel && foreign && api->kernel_node_copy) {
    rc = api->kernel_node_copy(exec, to, from);
  } else if (rc == cudaSuccess && type == cudaGraphNodeTypeKernel) {
    struct cudaKernelNodeParams params;
    rc = api->cudaGraphKernelNodeGetParams(from, &params);
    if (rc == cudaSuccess) {
      rc = set_kernel(exec, to, &params);
    } else if (api->kernel_node_copy) {
      (void)api->cudaGetLastError();
      rc = api->kernel_node_copy(exec, to, from);
    }
  } else if (rc == cudaSuccess) {
    rc = cudaErrorInvalidValue;
  }
  if (rc != cudaSuccess) (void)api->cudaGetLastError();
  return rc;
}

/* Spare slots: node v's chain `to` runs its first `live` nodes and is to
 * run its first `n` (each set already): the slots between are enabled or
 * disabled on the executable, and cg->live[v] becomes n. */
static cudaError_t set_live(DrCudaGraphState *cg, DrId v, const cudaGraphNode_t *to, guint live, guint n) {
  const DrCudaApi *api = dr_cuda_api();
  cudaError_t rc = cudaSuccess;
  for (guint i = MIN(live, n); rc == cudaSuccess && i < MAX(live, n); i++)
    rc = api->cudaGraphNodeSetEnabled(cg->exec, to[i], i < n);
  if (rc == cudaSuccess) cg->live[v] = (guint8)n;
  return rc;
}

/* User kernel node v's launch with the arguments now, captured alone on
 * origin, set on its node of the executable through the driver
 * (user_node_copy: the runtime cannot name a kernel of a loaded library).
 * Pointers into stream-ordered buffers are the graph's own allocations,
 * as captured. FALSE when that does not work out (the caller then
 * captures the iteration again). */
static gboolean set_user_params(DrBackend *b, DrId v) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaGraphState *cg = &b->cuda_graph;
  const DrGraph *g = b->graph;
  const DrNode *n = dr_graph_node(g, v);
  cudaStream_t origin = b->streams.origin;
  if (api->user_node_copy == NULL || cg->node == NULL || cg->node[v] == NULL ||
      (cg->chain != NULL && g_hash_table_contains(cg->chain, GUINT_TO_POINTER(v))) ||
      b->streams.stream_device[b->plan->node_stream[v]] != 0)
    return FALSE;
  guint nb = dr_graph_n_buffers(g);
  g_autofree void **bases = g_memdup2(b->memory.bases, MAX(nb, 1) * sizeof *bases);
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    DrId buf = dr_graph_access(g, a)->buffer;
    if (dr_graph_buffer(g, buf)->alloc_node == DR_NONE) continue;
    if ((bases[buf] = captured_base(b, v, buf)) == NULL) return FALSE;
  }
  gint64 t1 = g_get_monotonic_time();
  cudaGraph_t one = NULL;
  if (api->cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  gboolean launched =
      dr__user_kernel_launch(&b->launch, g, bases, v, origin, DR_SITE_NODE(n->id, -1), &local);
  cudaError_t ended = api->cudaStreamEndCapture(origin, &one);
  gint64 t2 = g_get_monotonic_time();
  gsize count = 0;
  g_autofree cudaGraphNode_t *made =
      launched && ended == cudaSuccess && one != NULL ? chain_of(one, &count) : NULL;
  cudaError_t set = made != NULL && count == 1 ? api->user_node_copy(cg->exec, cg->node[v], made[0])
                                               : cudaErrorInvalidValue;
  cg->spent.capture += t2 - t1;
  cg->spent.set += g_get_monotonic_time() - t2;
  cg->spent.nodes++;
  if (one) (void)api->cudaGraphDestroy(one);
  if (set == cudaSuccess) return TRUE;
  (void)api->cudaGetLastError();
  g_debug(
      "graph update: user kernel node '%s' not set in place: launch %s, end of capture %d, %zu node%s, set "
      "%d",
      n->id, launched ? "made" : local->message, (int)ended, count, count == 1 ? "" : "s", (int)set);
  return FALSE;
}

/* Sets node v's parameters on the executable from a one-node capture of
 * its launch (bound, with the new arguments) on origin. FALSE when that
 * does not work out; the caller then updates the whole graph. */
static gboolean set_user_params(DrBackend *b, DrId v);

static gboolean set_node_params(DrBackend *b, DrId v) {
  const DrCudaApi *api = dr_cuda_api();
  const DrCudaGraphState *cg = &b->cuda_graph;
  const DrCudaLaunch *ln = &b->launch;
  cudaStream_t origin = b->streams.origin;
  guint32 k = ln->node_kcall[v];
  if (k == DR_NONE && is_user_kernel(b->graph, v)) return set_user_params(b, v);
  if (k == DR_NONE || cg->node == NULL || cg->node[v] == NULL) return FALSE;
  /* The one-node capture runs on origin: only for nodes of origin's device. */
  if (b->streams.stream_device[b->plan->node_stream[v]] != 0) return FALSE;
  /* Bound again here, only when set: a node that needs no set (a cache
   * hit holds its values) keeps its binding until one does, or until a
   * capture binds everything. Binding every node costs ~0.16 µs a node on
   * the H200's host (310 µs for a 2000-node chain). */
  DrCudaGraphState *spent = &b->cuda_graph;
  gint64 tb = g_get_monotonic_time();
  gboolean bound = dr__cuda_launch_rebind(&b->launch, &b->memory, &v, 1, NULL);
  spent->spent.bind += g_get_monotonic_time() - tb;
  if (!bound) return FALSE;
  /* Pointers into stream-ordered buffers: the graph's own allocations of
   * the node's lifetimes, as captured (the bases are forgotten after a
   * capture), plus the offsets bound now. */
  const DrKPatch *pts = &ln->patches[ln->kcalls[k].patch_first];
  for (guint32 j = 0; j < ln->kcalls[k].patch_count; j++) {
    void *base = captured_base(b, v, pts[j].buffer);
    if (base == NULL) return FALSE;
    pts[j].slot->ptr = (char *)base + pts[j].offset;
  }
  DrKLaunch l = ln->kcalls[k].call.launch;
  l.stream = origin;
  l.pdl = 0; /* alone in its capture: no kernel before it (the edge is the executable's) */
  gint64 t0 = g_get_monotonic_time();
  /* A built-in of one launch that maps to one node: its launch described
   * and set, no capture (~5 µs a node less on the H200's host). */
  if (api->kernel_node_params &&
      (cg->chain == NULL || !g_hash_table_contains(cg->chain, GUINT_TO_POINTER(v)))) {
    struct cudaKernelNodeParams params;
    DrKDescribed store;
    if (api->kernel_node_params(ln->kcalls[k].call.def, &l, &params, &store) == cudaSuccess) {
      gint64 t1 = g_get_monotonic_time();
      cudaError_t set = set_kernel(cg->exec, cg->node[v], &params);
      spent->spent.get += t1 - t0;
      spent->spent.set += g_get_monotonic_time() - t1;
      spent->spent.nodes++;
      if (set == cudaSuccess) return TRUE;
      g_debug("graph update: node '%s' not set in place from its described launch: set %d",
              dr_graph_node(b->graph, v)->id, (int)set);
      (void)api->cudaGetLastError();
      return FALSE;
    }
    (void)api->cudaGetLastError();
  }
  /* A gemm's cuBLAS handle is bound to its node's stream; moved to origin
   * here, before the capture, so that cublasSetStream and
   * cublasSetWorkspace are not made inside it, and back after it. */
  if (!bind_blas(b, v, k, origin)) return FALSE;
  gint64 t1 = g_get_monotonic_time();
  cudaGraph_t one = NULL;
  if (api->cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return FALSE;
  }
  int launched = api->kernel_launch(ln->kcalls[k].call.def, &l);
  cudaError_t ended = api->cudaStreamEndCapture(origin, &one);
  /* The handle back on its node's stream, where the next capture of the
   * iteration launches it. */
  gint64 t2 = g_get_monotonic_time();
  if (!bind_blas(b, v, k, ln->kcalls[k].call.launch.stream)) launched = -1;
  gint64 t3 = g_get_monotonic_time();
  /* What v is mapped to, in launch order, and what the capture made. */
  const cudaGraphNode_t *to = cg->chain ? g_hash_table_lookup(cg->chain, GUINT_TO_POINTER(v)) : NULL;
  gsize m = 0;
  if (to == NULL)
    to = &cg->node[v], m = 1;
  else
    while (to[m]) m++;
  gsize n = 0;
  g_autofree cudaGraphNode_t *made =
      launched == 0 && ended == cudaSuccess && one != NULL ? chain_of(one, &n) : NULL;
  /* With spare slots (live > 0) the launch may make fewer nodes than
   * the chain has, the rest then disabled, or more than run now, up to
   * the chain's length. */
  guint live = cg->live != NULL ? cg->live[v] : 0;
  gboolean ok = made != NULL && (live > 0 ? n <= m : n == m);
  if (made == NULL && launched == 0 && ended == cudaSuccess && one != NULL) debug_shape(b, v, one);
  gint64 t4 = g_get_monotonic_time();
  cudaError_t set = cudaSuccess;
  /* A library's kernels (cuBLAS's) are of a module the runtime cannot
   * name: straight to the driver (asking the runtime first would fail with
   * cudaErrorInvalidDeviceFunction every time, an API error to a sanitizer). */
  gboolean foreign = (ln->kcalls[k].call.def->flags & DR_KFLAG_BLAS) != 0;
  for (gsize i = 0; ok && i < n; i++) ok = (set = set_one(cg->exec, to[i], made[i], foreign)) == cudaSuccess;
  if (ok && live > 0) ok = (set = set_live(spent, v, to, live, (guint)n)) == cudaSuccess;
  gint64 t5 = g_get_monotonic_time();
  spent->spent.bind += (t1 - t0) + (t3 - t2);
  spent->spent.capture += t2 - t1;
  spent->spent.get += t4 - t3;
  spent->spent.set += t5 - t4;
  spent->spent.nodes++;
  if (!ok)
    g_debug(
        "graph update: node '%s' not set in place: launch %d, end of capture %d, %zu node%s made against %zu "
        "mapped, set %d",
        dr_graph_node(b->graph, v)->id, launched, (int)ended, n, n == 1 ? "" : "s", m, (int)set);
  if (one) (void)api->cudaGraphDestroy(one);
  if (!ok) (void)api->cudaGetLastError();
  return ok;
}

/* DrCudaMode.args_changed: when only the scalar arguments of `nodes` [n]
 * changed, each is re-launched alone into a one-node capture and its
 * parameters set on the executable in place
 * (cudaGraphExecKernelNodeSetParams; *how "updated-nodes"), with no
 * re-capture of the iteration; a node that cannot (not mapped to one
 * kernel node, a pointer into a stream-ordered buffer, a refused set), or
 * NULL `nodes`, sends the whole change down dr__cuda_graph_update. */
static gboolean set_memory_params(DrBackend *b, DrId v);

/* Whether node v can be set in place on the executable in use at all:
 * mapped to one graph node of its kind, a kernel with a bound built-in
 * launch (graph_cache.h's sense), or a counted loop (nothing to set). */
static gboolean settable(const DrBackend *b, DrId v) {
  return dr__cuda_graph_settable(b->graph, v, b->cuda_graph.node, b->launch.node_kcall);
}

/* Sets each of `nodes` [n] on the executable in place (a counted loop's
 * count is written by loops.c, so it needs nothing here). Returns the
 * first node that could not be set, DR_NONE when all were. Without
 * `skip_fixed`, a node that cannot be set at all (settable) is returned
 * before anything is set; with it, such nodes are skipped: a cache hit
 * already holds their values. Each node is set once. */
static DrId set_in_place(DrBackend *b, const DrId *nodes, guint32 n, gboolean skip_fixed) {
  /* A node that cannot be set at all is known before any call: nothing
   * is set on an executable that is about to be replaced. */
  for (guint32 i = 0; i < n && !skip_fixed; i++)
    if (!settable(b, nodes[i])) return nodes[i];
  g_autofree gboolean *done = g_new0(gboolean, MAX(b->n_nodes, 1));
  for (guint32 i = 0; i < n; i++) {
    DrId v = nodes[i];
    if (done[v]) continue;
    done[v] = TRUE;
    const DrNode *node = dr_graph_node(b->graph, v);
    if (node->loop || !settable(b, v)) continue; /* a counted loop's count is written; fixed: skipped */
    /* A cache hit: a node that holds the values now needs no set. */
    if (skip_fixed && dr__cuda_graph_cache_holds(&b->cuda_graph.cache, b->cuda_graph.held, b->graph, v))
      continue;
    gboolean ok = node->op == DR_OP_KERNEL ? set_node_params(b, v) : set_memory_params(b, v);
    if (!ok) return v;
    if (b->cuda_graph.held) dr__cuda_graph_cache_hold(&b->cuda_graph.cache, &b->cuda_graph.held, b->graph, v);
  }
  return DR_NONE;
}

/* The executable in use as a new variant (keyed by the cache's key of
 * it), leaving graph mode without one. */
static DrCudaGraphVariant *take_current(DrCudaGraphState *cg) {
  DrCudaGraphVariant *v = dr__cuda_graph_variant_new(&cg->cache);
  v->graph = g_steal_pointer(&cg->graph);
  v->exec = g_steal_pointer(&cg->exec);
  v->node = g_steal_pointer(&cg->node);
  v->chain = g_steal_pointer(&cg->chain);
  v->held = g_steal_pointer(&cg->held);
  v->cap_base = g_steal_pointer(&cg->cap_base);
  v->key = g_steal_pointer(&cg->cache.key);
  return v;
}

/* Puts variant `v` (taken) in use; its dirty list goes to *dirty. */
static void put_current(DrCudaGraphState *cg, DrCudaGraphVariant *v, GArray **dirty) {
  drop_map(cg);
  g_free(cg->cap_base);
  cg->graph = g_steal_pointer(&v->graph);
  cg->exec = g_steal_pointer(&v->exec);
  cg->node = g_steal_pointer(&v->node);
  cg->chain = g_steal_pointer(&v->chain);
  if (cg->held) g_hash_table_unref(cg->held);
  cg->held = g_steal_pointer(&v->held);
  cg->cap_base = g_steal_pointer(&v->cap_base);
  if (cg->cache.key) g_bytes_unref(cg->cache.key);
  cg->cache.key = g_steal_pointer(&v->key);
  if (dirty) *dirty = g_steal_pointer(&v->dirty);
  dr__cuda_graph_variant_free(v);
}

/* run.graph_cache: the change of `nodes` [n] could not be set in place.
 * A cached variant for the values now is put back in use and set in
 * place (*how "cached"); else the iteration is captured and instantiated
 * as a new variant (*how "re-instantiated"), the one in use kept idle,
 * evicting the least recently used when the cache is full. On failure
 * the executable in use stays. */
static gboolean cached_update(DrBackend *b, const DrId *nodes, guint32 n, const char **how, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaGraphState *cg = &b->cuda_graph;
  DrCudaGraphCache *c = &cg->cache;
  gint64 t0 = g_get_monotonic_time();
  DrCudaGraphVariant *hit = dr__cuda_graph_cache_take(c, b->graph, b->launch.node_kcall);
  gint64 t1 = g_get_monotonic_time();
  cg->spent.lookup = t1 - t0;
  DrCudaGraphVariant *old = take_current(cg);
  dr__cuda_graph_variant_mark(old, nodes, n);
  if (hit != NULL) {
    g_autoptr(GArray) dirty = NULL;
    dr__cuda_graph_variant_mark(hit, nodes, n);
    put_current(cg, hit, &dirty);
    cg->spent.swap += g_get_monotonic_time() - t1;
    if (set_in_place(b, (const DrId *)(void *)dirty->data, dirty->len, TRUE) == DR_NONE) {
      dr__cuda_graph_cache_use(c);
      (void)dr__cuda_graph_cache_put(c, old); /* one was taken: room */
      c->result = DR_GRAPH_CACHE_HIT;
      *how = "cached";
      return TRUE;
    }
    /* A refused set: that variant is of no use; make a new one. */
    (void)api->cudaGetLastError();
    dr__cuda_graph_variant_free(take_current(cg));
  }
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (!recapture(b, &graph, error) || !DR_CUDA(DR_SITE_SETUP("graph instantiation (run.graph_cache)"),
                                               cudaGraphInstantiate, &exec, graph, instantiate_flags())) {
    if (graph) (void)api->cudaGraphDestroy(graph);
    put_current(cg, old, NULL);
    return FALSE;
  }
  cg->graph = graph;
  cg->exec = exec;
  note_captured(b);
  dr__cuda_graph_cache_use(c);
  c->result = dr__cuda_graph_cache_put(c, old) ? DR_GRAPH_CACHE_EVICT : DR_GRAPH_CACHE_MISS;
  *how = "re-instantiated";
  return TRUE;
}

/* G_MESSAGES_DEBUG=all: where a change that began at t0 spent its time. */
static void debug_spent(const DrCudaGraphState *cg, const char *how, gint64 t0) {
  /* Not formatted when no one reads it: every change passes here. */
  if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN)) return;
  g_debug("graph update: %s in %" G_GINT64_FORMAT " us: %u node sets; wait %" G_GINT64_FORMAT
          " us, cache lookup %" G_GINT64_FORMAT ", swap %" G_GINT64_FORMAT ", bind %" G_GINT64_FORMAT
          ", capture %" G_GINT64_FORMAT ", read %" G_GINT64_FORMAT ", set %" G_GINT64_FORMAT,
          how, g_get_monotonic_time() - t0, cg->spent.nodes, cg->spent.wait, cg->spent.lookup, cg->spent.swap,
          cg->spent.bind, cg->spent.capture, cg->spent.get, cg->spent.set);
}

static gboolean graph_args_changed(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                   GError **error) {
  DrCudaGraphState *cg = &b->cuda_graph;
  DrCudaGraphCache *c = &cg->cache;
  memset(&cg->spent, 0, sizeof cg->spent);
  gint64 t0 = g_get_monotonic_time();
  /* DAGRUN_GRAPH_UPDATE=capture: every change re-captures the iteration
   * (the A/B baseline of bench/params_bench.sh). */
  const char *force = g_getenv("DAGRUN_GRAPH_UPDATE");
  const char *before = cg->forced_by;
  cg->forced_by = NULL;
  c->result = DR_GRAPH_CACHE_NONE;
  /* This runs while earlier iterations may still run on the device
   * (changes_in_flight): a node set or a swap of executables affects only
   * later launches, so neither waits; a counted loop's new count (its
   * pinned word may still feed the copy of an earlier change) and a
   * capture of the whole iteration wait for the device first. A counted
   * loop's new count is a device word (loops.c), whatever else the change
   * takes: never a capture. */
  if (dr__cuda_loops_counts_pending(&b->loops)) {
    gint64 tw = g_get_monotonic_time();
    if (!dr__cuda_quiesce(b, error)) return FALSE;
    cg->spent.wait += g_get_monotonic_time() - tw;
  }
  if (!dr__cuda_loops_write_counts(&b->loops, b->streams.origin, NULL, error)) return FALSE;
  /* Nodes that read their counts from device memory (devwords.h): their
   * new counts are one store on origin, after the iterations in flight,
   * and, unless a scalar of theirs changed too (set by hand,
   * dr_runner_set_float), they take no further part (no set, no cache
   * key). */
  if (!dr__cuda_devwords_write(&b->devwords, nodes, n, b->streams.origin, error)) return FALSE;
  g_autofree DrId *rest = NULL;
  if (nodes != NULL && b->devwords.last_reads > 0) {
    rest = g_new(DrId, MAX(n, 1));
    guint32 k = 0;
    for (guint32 i = 0; i < n; i++)
      if (!dr__cuda_devwords_reads(&b->devwords, nodes[i]) ||
          !dr__cuda_launch_scalars_same(&b->launch, &b->memory, nodes[i]))
        rest[k++] = nodes[i];
    nodes = rest;
    n = k;
    if (n == 0) {
      *how = "updated-nodes";
      debug_spent(cg, *how, t0);
      return TRUE;
    }
  }
  dr__cuda_graph_cache_changed(c, nodes, n);
  gboolean by_capture = force != NULL && strcmp(force, "capture") == 0;
  if (nodes == NULL || cg->node == NULL || cg->exec == NULL || by_capture) {
    /* What changed is not known node by node: no variant can be trusted. */
    dr__cuda_graph_cache_clear(c);
    /* No node map since a whole-graph update in place: the node that
     * forced that one forces this one too. */
    if (nodes != NULL && cg->node == NULL && cg->exec != NULL && !by_capture) cg->forced_by = before;
    if (!dr__cuda_graph_update(b, how, error)) return FALSE;
    if (c->cap > 0) note_captured(b);
    return TRUE;
  }
  /* With the cache, a change of a keyed node (a library call's shape)
   * goes to it: a variant holds that value, or a new one is made. */
  DrId failed = DR_NONE;
  for (guint32 i = 0; i < n && c->cap > 0 && failed == DR_NONE; i++)
    if (nodes[i] < b->n_nodes &&
        dr__cuda_graph_cache_keys(c, b->graph, nodes[i], cg->node, b->launch.node_kcall))
      failed = nodes[i];
  if (failed == DR_NONE) failed = set_in_place(b, nodes, n, FALSE);
  if (failed == DR_NONE) {
    *how = "updated-nodes";
    debug_spent(cg, *how, t0);
    return TRUE;
  }
  /* Named, so a user learns which node cost a re-capture (and the
   * report says it). */
  cg->forced_by = dr_graph_node(b->graph, failed)->id;
  if (c->cap > 0) {
    gboolean ok = cached_update(b, nodes, n, how, error);
    if (ok) debug_spent(cg, *how, t0);
    return ok;
  }
  g_message("graph update: node '%s' cannot be updated in place; capturing the iteration again",
            cg->forced_by);
  return dr__cuda_graph_update(b, how, error);
}

/* Sets copy or memset node v's pointers on the executable from the
 * buffers' bases now (cudaGraphExecMemcpyNodeSetParams1D,
 * cudaGraphExecMemsetNodeSetParams). FALSE when that does not work out
 * (not mapped, no such entry, refused); the caller then updates the whole
 * graph. */
static gboolean set_memory_params(DrBackend *b, DrId v) {
  const DrCudaApi *api = dr_cuda_api();
  const DrCudaGraphState *cg = &b->cuda_graph;
  const DrGraph *g = b->graph;
  const DrNode *n = dr_graph_node(g, v);
  if (cg->node == NULL || cg->node[v] == NULL) return FALSE;
  gboolean ok = FALSE;
  if (n->op == DR_OP_COPY && api->cudaGraphExecMemcpyNodeSetParams1D) {
    const DrAccess *src, *dst;
    dr__copy_accesses(g, n, &src, &dst);
    gsize bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
    void *to = node_slice_ptr(b, v, dst), *from = node_slice_ptr(b, v, src);
    ok = to != NULL && from != NULL &&
         api->cudaGraphExecMemcpyNodeSetParams1D(cg->exec, cg->node[v], to, from, bytes, cudaMemcpyDefault) ==
             cudaSuccess;
  } else if (n->op == DR_OP_MEMSET && api->cudaGraphMemsetNodeGetParams &&
             api->cudaGraphExecMemsetNodeSetParams) {
    struct cudaMemsetParams p;
    memset(&p, 0, sizeof p);
    const DrAccess *dst = dr__node_access(g, n, 0);
    ok = api->cudaGraphMemsetNodeGetParams(cg->node[v], &p) == cudaSuccess;
    /* The extent and value too: a run-time parameter may change them. */
    gsize bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
    p.dst = node_slice_ptr(b, v, dst);
    p.value = n->memset_value;
    ok = ok && p.dst != NULL && p.elementSize == 1 && p.height == 1;
    p.width = bytes;
    ok = ok && api->cudaGraphExecMemsetNodeSetParams(cg->exec, cg->node[v], &p) == cudaSuccess;
  }
  if (!ok) (void)api->cudaGetLastError();
  return ok;
}

/* DrCudaMode.buffer_moved: every node that touches `buffer` gets the new
 * pointer in place on the executable: built-ins re-launched into a
 * one-node capture and set (cudaGraphExecKernelNodeSetParams), copies and
 * memsets set directly, host nodes read their host call (rebound) when
 * they run; *how "updated-nodes", no re-capture. A node that cannot (user
 * kernels, whose arguments the capture baked in; a node not mapped; a
 * refused set) sends the whole change down dr__cuda_graph_update. */
static gboolean graph_buffer_moved(DrBackend *b, DrId buffer, const char **how, GError **error) {
  const DrGraph *g = b->graph;
  /* Idle variants hold the old pointer: drop them (run.graph_cache). */
  dr__cuda_graph_cache_clear(&b->cuda_graph.cache);
  dr__cuda_launch_rebind_hosts(&b->launch, &b->memory);
  if (!graph_bind(b, error)) return FALSE;
  if (b->cuda_graph.node == NULL || b->cuda_graph.exec == NULL) return dr__cuda_graph_update(b, how, error);
  for (DrId v = 0; v < b->n_nodes; v++) {
    const DrNode *n = dr_graph_node(g, v);
    gboolean touches = FALSE;
    for (guint32 a = 0; a < n->access_count && !touches; a++)
      touches = dr__node_access(g, n, a)->buffer == buffer;
    if (!touches || n->op == DR_OP_HOST) continue;
    gboolean ok = n->op == DR_OP_KERNEL ? set_node_params(b, v) : set_memory_params(b, v);
    if (!ok) return dr__cuda_graph_update(b, how, error);
  }
  *how = "updated-nodes";
  return TRUE;
}

/* DrCudaMode.issue: one replay of the executable on origin. */
static gboolean graph_issue(DrBackend *b, GError **error) {
  return DR_CUDA(DR_SITE_SETUP("graph launch"), cudaGraphLaunch, b->cuda_graph.exec, b->streams.origin);
}

const DrCudaMode dr__cuda_graph_mode = {
    .name = "graph",
    /* One iteration in flight. Measured on the H200 with two: launching
     * the executable again while its previous launch ran made replays
     * slower, not faster (32 parallel 100 us spins: 236 us against 129;
     * the width-546 layered DAG: a median of 17.3 ms against 1.46 ms), as
     * if the second launch waited on the host for the first. A graph
     * launch costs the host a few µs, so there is little to hide anyway. */
    .depth = 1,
    .keep_fork_join = TRUE,
    /* A stamp node costs ~0.1 µs in a graph. */
    .stamps_by_default = TRUE,
    .stamps_aside = TRUE,
    .kernel_stamps = FALSE,
    /* Not read: graph_bind decides (DAGRUN_GRAPH_PDL). */
    .early_launch = FALSE,
    .prepare = graph_prepare,
    .issue = graph_issue,
    .args_changed = graph_args_changed,
    /* graph_args_changed waits itself where it must. */
    .changes_in_flight = TRUE,
    .buffer_moved = graph_buffer_moved,
};
