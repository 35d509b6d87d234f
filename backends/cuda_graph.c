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

/* Captures one iteration into a new graph (*out, owned by the caller). */
static gboolean capture_iteration(DrBackend *b, cudaGraph_t *out, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaSite site = DR_SITE_SETUP("graph capture");
  *out = NULL;
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
    return FALSE;
  }
  if (!dr__cuda_check(rc, "cudaStreamEndCapture", site, error)) {
    if (graph) (void)api->cudaGraphDestroy(graph);
    return FALSE;
  }
  *out = graph;
  return TRUE;
}

gboolean dr__cuda_graph_capture(DrBackend *b, GError **error) {
  if (!capture_iteration(b, &b->cuda_graph, error)) return FALSE;
  return DR_CUDA(DR_SITE_SETUP("graph instantiation"), cudaGraphInstantiate, &b->cuda_graph_exec, b->cuda_graph, 0);
}

gboolean dr__cuda_graph_update(DrBackend *b, const char **how, GError **error) {
  g_return_val_if_fail(b != NULL && b->graph_mode, FALSE);
  const DrCudaApi *api = dr_cuda_api();
  cudaGraph_t graph = NULL;
  if (!capture_iteration(b, &graph, error)) return FALSE;
  if (api->cudaGraphExecUpdate != NULL && b->cuda_graph_exec != NULL) {
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    cudaError_t rc = api->cudaGraphExecUpdate(b->cuda_graph_exec, graph, &info);
    if (rc == cudaSuccess) {
      if (b->cuda_graph) (void)api->cudaGraphDestroy(b->cuda_graph);
      b->cuda_graph = graph;
      *how = "updated";
      return TRUE;
    }
    if (rc != cudaErrorGraphExecUpdateFailure) {
      /* Not a refusal but a failure: report it, keep the old graph. */
      (void)api->cudaGraphDestroy(graph);
      return dr__cuda_check(rc, "cudaGraphExecUpdate", DR_SITE_SETUP("graph update"), error);
    }
    /* Refused (topology, node kinds or memory nodes differ): the
     * executable is unchanged; instantiate. */
    (void)api->cudaGetLastError();
  }
  cudaGraphExec_t exec = NULL;
  if (!DR_CUDA(DR_SITE_SETUP("graph re-instantiation"), cudaGraphInstantiate, &exec, graph, 0)) {
    (void)api->cudaGraphDestroy(graph);
    return FALSE;
  }
  dr__cuda_graph_release(b);
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
}
