/* nccl.c: the CUDA backend's NCCL part (nccl.h): a one-rank communicator
 * and each collective's NCCL calls. With one rank, every collective is
 * still a real NCCL launch on the node's stream (so a capture records it,
 * and its cost is NCCL's): alltoall is a group of ncclSend/ncclRecv, the
 * way NCCL's documentation writes it. */
#include "backends/cuda/nccl.h"

#include <string.h>

#include "backends/backend.h"

static gboolean has_collectives(const DrGraph *g) {
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++)
    if (DR_OP_IS_COLLECTIVE(dr_graph_node(g, i)->op)) return TRUE;
  return FALSE;
}

gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrGraph *graph, int device, GError **error) {
  memset(n, 0, sizeof *n);
  if (!has_collectives(graph)) return TRUE;
  const char *why = NULL;
  const DrNcclApi *api = dr_nccl_api(&why);
  if (api == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "the pipeline has collectives, which need NCCL: %s",
                why ? why : "not found");
    return FALSE;
  }
  n->api = api;
  int devs[1] = {device};
  if (!DR_NCCL(api, NULL, ncclCommInitAll, &n->comm, 1, devs)) {
    n->failed = TRUE;
    n->comm = NULL;
    return FALSE;
  }
  return TRUE;
}

void dr__cuda_nccl_close(DrCudaNccl *n) {
  if (n->api == NULL || n->comm == NULL) return;
  if (n->failed)
    (void)n->api->ncclCommAbort(n->comm);
  else
    (void)n->api->ncclCommDestroy(n->comm);
  n->comm = NULL;
}

gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *g, DrId v, void *const *bases, cudaStream_t st,
                             GError **error) {
  const DrNode *node = dr_graph_node(g, v);
  g_return_val_if_fail(n->api != NULL && n->comm != NULL && node->n_parts == 1, FALSE);
  const DrNcclApi *api = n->api;
  const DrAccess *a0 = dr__node_access(g, node, 0);
  const DrAccess *a1 = node->access_count > 1 ? dr__node_access(g, node, 1) : NULL;
  DrElemType et = dr_graph_buffer(g, a0->buffer)->type;
  int type = dr_nccl_type(et), op = dr_nccl_op(node->reduce);
  const void *src = dr__slice_ptr(g, bases, a0);
  void *dst = a1 ? dr__slice_ptr(g, bases, a1) : NULL;
  size_t c_src = a0->end - a0->begin, c_dst = a1 ? a1->end - a1->begin : 0;
  gboolean ok = TRUE;
  switch (node->op) {
    case DR_OP_ALLREDUCE:
      ok = DR_NCCL(api, node->id, ncclAllReduce, src, dst, c_src, type, op, n->comm, st);
      break;
    case DR_OP_BROADCAST:
      ok = DR_NCCL(api, node->id, ncclBroadcast, src, dst, c_src, type, node->root, n->comm, st);
      break;
    case DR_OP_REDUCE:
      ok = DR_NCCL(api, node->id, ncclReduce, src, dst, c_src, type, op, node->root, n->comm, st);
      break;
    case DR_OP_ALLGATHER:
      ok = DR_NCCL(api, node->id, ncclAllGather, src, dst, c_src, type, n->comm, st);
      break;
    case DR_OP_REDUCESCATTER:
      ok = DR_NCCL(api, node->id, ncclReduceScatter, src, dst, c_dst, type, op, n->comm, st);
      break;
    case DR_OP_ALLTOALL: {
      /* one rank: block 0 to and from itself */
      if (!DR_NCCL(api, node->id, ncclGroupStart)) {
        ok = FALSE;
        break;
      }
      ok = DR_NCCL(api, node->id, ncclSend, src, c_src, type, 0, n->comm, st);
      ok = ok && DR_NCCL(api, node->id, ncclRecv, dst, c_dst, type, 0, n->comm, st);
      /* a group opened is always closed, even after a failed call in it */
      DrNcclResult end = api->ncclGroupEnd();
      if (ok) ok = dr__nccl_check(api, end, "ncclGroupEnd", node->id, error);
      break;
    }
    default:
      g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "node '%s': %s needs another process (mpirun)",
                  node->id, dr_op_name(node->op));
      ok = FALSE;
      break;
  }
  if (!ok) n->failed = TRUE;
  return ok;
}
