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
 * iteration is one cudaGraphLaunch between the origin's timing events. */
#include "backends/cuda_state.h"

gboolean dr__cuda_graph_capture(DrBackend *b, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  DrCudaSite site = DR_SITE_SETUP("graph capture");
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
  b->cuda_graph = graph;
  return DR_CUDA(DR_SITE_SETUP("graph instantiation"), cudaGraphInstantiate, &b->cuda_graph_exec, b->cuda_graph, 0);
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
