/* cuda_graph.c: graph mode: capture one whole iteration once and replay it.
 *
 * Capture starts on the origin stream in thread-local mode; the fork event
 * pulls every plan stream into the capture, the plan is issued exactly as
 * in eager mode (dr__cuda_issue_iteration), so stream order and the planned
 * waits become the graph's edges and capture adds no edge the DAG does not
 * imply beyond stream order itself; the join events bring every stream back
 * to origin before EndCapture. alloc/free nodes become graph memory nodes,
 * host nodes host nodes, timing events external event-record nodes. The
 * graph is instantiated once at setup (outside the timed region) and each
 * iteration is one cudaGraphLaunch between the origin's timing events.
 * dr__cuda_graph_update re-captures after a library user changed scalar
 * arguments and updates the executable in place (cudaGraphExecUpdate),
 * re-instantiating only when the runtime refuses. */
#include <string.h>

#include "backends/cuda_state.h"

/* The table has what per-node updates need. */
static gboolean can_map(const DrCudaApi *api) {
  return api->cudaStreamGetCaptureInfo && api->cudaGraphGetNodes && api->cudaGraphNodeGetType &&
         api->cudaGraphNodeGetDependencies && api->cudaGraphKernelNodeGetParams &&
         api->cudaGraphExecKernelNodeSetParams;
}

cudaGraphNode_t *dr__capture_before(cudaStream_t st, gsize *n) {
  const DrCudaApi *api = dr_cuda_api();
  enum cudaStreamCaptureStatus status;
  const cudaGraphNode_t *deps = NULL;
  size_t n_deps = 0;
  if (api->cudaStreamGetCaptureInfo(st, &status, NULL, NULL, &deps, NULL, &n_deps) != cudaSuccess ||
      status != cudaStreamCaptureStatusActive) {
    (void)api->cudaGetLastError();
    *n = G_MAXSIZE;
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

/* Maps v to deps[0] when that is one kernel node whose dependencies are
 * exactly `before`: the launch added that one node (a launcher of two
 * kernels, or of a memset and a kernel, ends at a node that depends on
 * its own first node). */
static void note_node(DrBackend *b, DrId v, const cudaGraphNode_t *deps, size_t n_deps,
                      const cudaGraphNode_t *before, gsize n_before) {
  const DrCudaApi *api = dr_cuda_api();
  enum cudaGraphNodeType type;
  size_t n_in = 0;
  if (n_deps != 1 || api->cudaGraphNodeGetType(deps[0], &type) != cudaSuccess ||
      type != cudaGraphNodeTypeKernel ||
      api->cudaGraphNodeGetDependencies(deps[0], NULL, NULL, &n_in) != cudaSuccess || n_in != n_before) {
    (void)api->cudaGetLastError();
    return;
  }
  cudaGraphNode_t node = deps[0];
  g_autofree cudaGraphNode_t *in = g_new(cudaGraphNode_t, MAX(n_in, 1));
  if (n_in && (api->cudaGraphNodeGetDependencies(node, in, NULL, &n_in) != cudaSuccess || n_in != n_before ||
               !same_nodes(in, before, n_in))) {
    (void)api->cudaGetLastError();
    return;
  }
  b->graph_node[v] = node;
}

gboolean dr__capture_after(DrBackend *b, DrId v, cudaStream_t st, gboolean ok, const cudaGraphNode_t *before,
                           gsize n_before, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  const cudaGraphNode_t *deps = NULL;
  size_t n_deps = 0;
  if (api->cudaStreamGetCaptureInfo &&
      api->cudaStreamGetCaptureInfo(st, &status, NULL, NULL, &deps, NULL, &n_deps) != cudaSuccess)
    status = cudaStreamCaptureStatusInvalidated; /* not capturing any more */
  if (status == cudaStreamCaptureStatusActive) {
    if (ok && n_before != G_MAXSIZE && b->graph_node != NULL) note_node(b, v, deps, n_deps, before, n_before);
    return ok;
  }
  (void)api->cudaGetLastError();
  b->uncapturable = v;
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

/* Captures one iteration into a new graph (*out, owned by the caller).
 * With `map`, b->graph_node maps node ids to the new graph's nodes. */
static gboolean capture_iteration(DrBackend *b, cudaGraph_t *out, gboolean map, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaSite site = DR_SITE_SETUP("graph capture");
  *out = NULL;
  g_clear_pointer(&b->graph_node, g_free);
  if (map && can_map(api)) b->graph_node = g_new0(cudaGraphNode_t, MAX(b->n_nodes, 1));
  if (!DR_CUDA(site, cudaStreamBeginCapture, b->origin, cudaStreamCaptureModeThreadLocal)) return FALSE;
  gboolean issued = dr__cuda_issue_iteration(b, TRUE, error);
  cudaGraph_t graph = NULL;
  cudaError_t rc = api->cudaStreamEndCapture(b->origin, &graph);
  /* The pointers cudaMallocAsync returned while capturing belong to the
   * graph's memory nodes now, valid only while the graph runs; when the
   * capture failed they went with it. Either way close must not free
   * them. */
  for (guint32 i = 0; i < b->n_buffers; i++)
    if (b->async_live[i]) {
      b->async_live[i] = FALSE;
      b->bases[i] = NULL;
    }
  if (!issued) {
    /* The issue error is the one to report; ending the capture only
     * leaves every stream usable for cleanup. */
    (void)api->cudaGetLastError();
    if (graph) (void)api->cudaGraphDestroy(graph);
    g_clear_pointer(&b->graph_node, g_free);
    return FALSE;
  }
  if (!dr__cuda_check(rc, "cudaStreamEndCapture", site, error)) {
    if (graph) (void)api->cudaGraphDestroy(graph);
    g_clear_pointer(&b->graph_node, g_free);
    return FALSE;
  }
  *out = graph;
  return TRUE;
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
  return DR_CUDA(DR_SITE_SETUP("--dot-cuda-graph"), cudaGraphDebugDotPrint, b->cuda_graph, path,
                 cudaGraphDebugDotFlagsVerbose);
}

gboolean dr__cuda_graph_capture(DrBackend *b, GError **error) {
  if (!capture_iteration(b, &b->cuda_graph, TRUE, error)) return FALSE;
  if (!write_cuda_graph_dot(b, error)) return FALSE;
  return DR_CUDA(DR_SITE_SETUP("graph instantiation"), cudaGraphInstantiate, &b->cuda_graph_exec,
                 b->cuda_graph, 0);
}

gboolean dr__cuda_graph_update(DrBackend *b, const char **how, GError **error) {
  g_return_val_if_fail(b != NULL && b->graph_mode, FALSE);
  const DrCudaApi *api = dr_cuda_api();
  cudaGraph_t graph = NULL;
  /* The new graph's node map is kept only if it is instantiated: after an
   * in-place update the executable's nodes are the old graph's. */
  if (!capture_iteration(b, &graph, TRUE, error)) return FALSE;
  if (api->cudaGraphExecUpdate != NULL && b->cuda_graph_exec != NULL) {
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    cudaError_t rc = api->cudaGraphExecUpdate(b->cuda_graph_exec, graph, &info);
    if (rc == cudaSuccess) {
      if (b->cuda_graph) (void)api->cudaGraphDestroy(b->cuda_graph);
      b->cuda_graph = graph;
      g_clear_pointer(&b->graph_node, g_free);
      *how = "updated";
      return TRUE;
    }
    if (rc != cudaErrorGraphExecUpdateFailure) {
      /* Not a refusal but a failure: report it, keep the old graph. */
      (void)api->cudaGraphDestroy(graph);
      g_clear_pointer(&b->graph_node, g_free);
      return dr__cuda_check(rc, "cudaGraphExecUpdate", DR_SITE_SETUP("graph update"), error);
    }
    /* Refused (topology, node kinds or memory nodes differ): the
     * executable is unchanged; instantiate. */
    (void)api->cudaGetLastError();
  }
  cudaGraphExec_t exec = NULL;
  if (!DR_CUDA(DR_SITE_SETUP("graph re-instantiation"), cudaGraphInstantiate, &exec, graph, 0)) {
    (void)api->cudaGraphDestroy(graph);
    g_clear_pointer(&b->graph_node, g_free);
    return FALSE;
  }
  cudaGraphNode_t *map = g_steal_pointer(&b->graph_node);
  dr__cuda_graph_release(b);
  b->graph_node = map;
  b->cuda_graph = graph;
  b->cuda_graph_exec = exec;
  *how = "re-instantiated";
  return TRUE;
}

gboolean dr__cuda_graph_launch(DrBackend *b, GError **error) {
  return DR_CUDA(DR_SITE_SETUP("graph launch"), cudaGraphLaunch, b->cuda_graph_exec, b->origin);
}

void dr__cuda_graph_release(DrBackend *b) {
  const DrCudaApi *api = dr_cuda_api();
  if (b->cuda_graph_exec) (void)api->cudaGraphExecDestroy(b->cuda_graph_exec);
  if (b->cuda_graph) (void)api->cudaGraphDestroy(b->cuda_graph);
  b->cuda_graph_exec = NULL;
  b->cuda_graph = NULL;
  g_clear_pointer(&b->graph_node, g_free);
}

/* Sets node v's parameters on the executable from a one-node capture of
 * its launch (bound, with the new arguments) on origin. FALSE when that
 * does not work out; the caller then updates the whole graph. */
static gboolean set_node_params(DrBackend *b, DrId v) {
  const DrCudaApi *api = dr_cuda_api();
  guint32 k = b->node_kcall[v];
  if (k == DR_NONE || b->graph_node == NULL || b->graph_node[v] == NULL || b->kcalls[k].patch_count > 0)
    return FALSE;
  DrKLaunch l = b->kcalls[k].call.launch;
  l.stream = b->origin;
  cudaGraph_t one = NULL;
  if (api->cudaStreamBeginCapture(b->origin, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)api->cudaGetLastError();
    return FALSE;
  }
  int launched = api->kernel_launch(b->kcalls[k].call.def, &l);
  cudaError_t ended = api->cudaStreamEndCapture(b->origin, &one);
  cudaGraphNode_t node = NULL;
  size_t n = 1;
  struct cudaKernelNodeParams params;
  gboolean ok =
      launched == 0 && ended == cudaSuccess && one != NULL &&
      api->cudaGraphGetNodes(one, &node, &n) == cudaSuccess && n == 1 &&
      api->cudaGraphKernelNodeGetParams(node, &params) == cudaSuccess &&
      api->cudaGraphExecKernelNodeSetParams(b->cuda_graph_exec, b->graph_node[v], &params) == cudaSuccess;
  /* The template graph follows (not needed to run; kept true). */
  if (ok && api->cudaGraphKernelNodeSetParams)
    (void)api->cudaGraphKernelNodeSetParams(b->graph_node[v], &params);
  if (one) (void)api->cudaGraphDestroy(one);
  if (!ok) (void)api->cudaGetLastError();
  return ok;
}

gboolean dr__cuda_graph_update_nodes(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                     GError **error) {
  g_return_val_if_fail(b != NULL && b->graph_mode, FALSE);
  if (nodes == NULL || b->graph_node == NULL || b->cuda_graph_exec == NULL)
    return dr__cuda_graph_update(b, how, error);
  if (!dr__cuda_bind_kernels(b, error)) return FALSE;
  for (guint32 i = 0; i < n; i++)
    if (!set_node_params(b, nodes[i])) return dr__cuda_graph_update(b, how, error);
  *how = "updated-nodes";
  return TRUE;
}
