/* nccl.c: the CUDA backend's NCCL part (nccl.h): the communicators, the
 * groups, and each collective's NCCL calls.
 *
 * Communicators. A single process has one: ncclCommInitAll over its one
 * device (one rank). In an MPI job of several ranks, the per-rank
 * collectives (one buffer: "this rank's copy") use a communicator over
 * the job: rank 0 calls ncclGetUniqueId, MPI broadcasts the id
 * (dr__mpi_share_nccl_id: a status first, so a failure on rank 0 fails
 * every rank alike), and every rank calls ncclCommInitRank(nranks, id,
 * rank) on its device; a collective given as a list of this process's
 * devices still uses the one-process communicator. While a job's
 * communicator lives, an abort hook (dr__mpi_register_abort) aborts it
 * when the process ends the job (MPI_Abort after a failure), so no kernel
 * of this rank keeps waiting on a peer that is gone. Each communicator is
 * destroyed at close, or aborted after a failed call.
 *
 * Groups. Collectives that are ready together go inside one
 * ncclGroupStart/End: a run of consecutive plan steps on one stream, all
 * collectives, with no buffer hazard (RAW, WAR, WAW) and no `after:`
 * between any two of them. A path between two steps of a run through a
 * third node would put that node inside the run (the steps are in a
 * topological order), so the direct edges are all there is to test. The
 * `after:` edges the loader adds to chain the
 * per-rank collectives of a job in file order (lib/load.c) order their
 * issue, which the group keeps, not their execution, so they do not
 * split a group. The issue walk (issue.c) issues a group's waits before
 * ncclGroupStart and its completion events and timing after ncclGroupEnd,
 * where NCCL launches the group's work. The issue order, and so the
 * calls inside each group, is the same on every rank because the chain
 * makes every rank's plan issue its collectives in file order.
 *
 * With one rank, every collective is still a real NCCL launch on the
 * node's stream (so a capture records it, and its cost is NCCL's);
 * alltoall is a group of ncclSend/ncclRecv per peer, the way NCCL's
 * documentation writes it. Cost: O(steps + edges) at open. */
#include "backends/cuda/nccl.h"

#include <string.h>

#include "backends/backend.h"
#include "backends/mpi.h"

static gboolean has_collectives(const DrGraph *g, gboolean *per_rank, gboolean *listed) {
  gboolean any = FALSE;
  *per_rank = *listed = FALSE;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (!DR_OP_IS_COLLECTIVE(n->op)) continue;
    any = TRUE;
    if (n->per_rank)
      *per_rank = TRUE;
    else
      *listed = TRUE;
  }
  return any;
}

/* dr__mpi_share_nccl_id's maker, on rank 0; its result kept for the
 * message (one bootstrap at a time: the backend opens on one thread). */
static DrNcclResult made_rc;
static int make_unique_id(void *id) {
  const DrNcclApi *api = dr_nccl_api(NULL);
  made_rc = api != NULL ? api->ncclGetUniqueId((DrNcclUniqueId *)id) : -1;
  return made_rc;
}

static void abort_comms(DrCudaNccl *n) {
  if (n->api == NULL) return;
  if (n->comm != NULL) (void)n->api->ncclCommAbort(n->comm);
  if (n->rank_comm != NULL) (void)n->api->ncclCommAbort(n->rank_comm);
  n->comm = n->rank_comm = NULL;
}

/* The abort hook: the job ends (dr__mpi_abort_job). */
static void abort_hook(void *data) { abort_comms(data); }

/* Whether edge `e` keeps its two ends out of one group: any edge does,
 * but the loader's chain of a job's per-rank collectives. */
static gboolean splits(const DrGraph *g, const DrEdge *e) {
  return !(e->kind == DR_EDGE_AFTER && g->run.nranks > 1 && dr_graph_node(g, e->from)->per_rank &&
           dr_graph_node(g, e->to)->per_rank);
}

/* group_len from the plan (see the file head): a group grows from step i
 * while the next step is a collective on the same stream that no edge
 * joins to a step already in it (every edge into a step comes from an
 * earlier one; a path through a third node would put it inside the
 * group too). */
static void find_groups(DrCudaNccl *n, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n_steps = plan->steps->len, V = dr_graph_n_nodes(g);
  if (n_steps == 0) return;
  /* The edges into each node, as steps (CSR). */
  g_autofree guint32 *first = g_new0(guint32, V + 1);
  for (guint32 e = 0; e < g->edges->len; e++)
    if (splits(g, dr_graph_edge(g, e))) first[dr_graph_edge(g, e)->to + 1]++;
  for (guint32 v = 0; v < V; v++) first[v + 1] += first[v];
  g_autofree guint32 *from = g_new0(guint32, MAX(first[V], 1));
  g_autofree guint32 *fill = g_memdup2(first, sizeof(guint32) * V);
  for (guint32 e = 0; e < g->edges->len; e++) {
    const DrEdge *ed = dr_graph_edge(g, e);
    if (splits(g, ed)) from[fill[ed->to]++] = plan->node_step[ed->from];
  }
  n->group_len = g_new0(guint32, n_steps);
  for (guint32 i = 0; i < n_steps;) {
    const DrPlanStep *head = dr_plan_step(plan, i);
    guint32 j = i + 1;
    if (DR_OP_IS_COLLECTIVE(dr_graph_node(g, head->node)->op)) {
      for (; j < n_steps; j++) {
        const DrPlanStep *st = dr_plan_step(plan, j);
        if (st->stream != head->stream || !DR_OP_IS_COLLECTIVE(dr_graph_node(g, st->node)->op)) break;
        gboolean joined = FALSE;
        for (guint32 k = first[st->node]; k < first[st->node + 1] && !joined; k++) joined = from[k] >= i;
        if (joined) break;
      }
    }
    if (j - i >= 2) {
      n->group_len[i] = j - i;
      n->n_groups++;
    }
    i = j;
  }
}

gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrPlan *plan, int device, GError **error) {
  memset(n, 0, sizeof *n);
  const DrGraph *graph = plan->graph;
  gboolean per_rank, listed;
  if (!has_collectives(graph, &per_rank, &listed)) return TRUE;
  const char *why = NULL;
  const DrNcclApi *api = dr_nccl_api(&why);
  if (api == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "the pipeline has collectives, which need NCCL: %s",
                why ? why : "not found");
    return FALSE;
  }
  n->api = api;
  n->nranks = 1;
  find_groups(n, plan);
  const DrMpiWorld *w = dr__mpi_world();
  n->ranks = per_rank && w->api != NULL && w->size > 1;
  if (n->ranks) {
    DrNcclUniqueId id;
    memset(&id, 0, sizeof id);
    made_rc = 0;
    g_autoptr(GError) shared = NULL;
    if (!dr__mpi_share_nccl_id(make_unique_id, &id, sizeof id, &shared)) {
      /* Rank 0 says what NCCL said; the others that rank 0 failed. */
      if (made_rc == 0 || dr__nccl_check(api, made_rc, "ncclGetUniqueId", NULL, error))
        g_propagate_error(error, g_steal_pointer(&shared));
      return FALSE;
    }
    n->nranks = (gint32)w->size;
    n->rank = (gint32)w->rank;
    if (!DR_NCCL(api, NULL, ncclCommInitRank, &n->rank_comm, n->nranks, id, n->rank)) {
      n->failed = TRUE;
      n->rank_comm = NULL;
      return FALSE;
    }
    dr__mpi_register_abort(abort_hook, n);
    n->hooked = TRUE;
  }
  if (!n->ranks || listed) {
    int devs[1] = {device};
    if (!DR_NCCL(api, NULL, ncclCommInitAll, &n->comm, 1, devs)) {
      n->failed = TRUE;
      n->comm = NULL;
      return FALSE;
    }
  }
  return TRUE;
}

void dr__cuda_nccl_close(DrCudaNccl *n) {
  if (n->hooked) dr__mpi_unregister_abort(abort_hook, n);
  n->hooked = FALSE;
  if (n->failed) {
    abort_comms(n);
  } else if (n->api != NULL) {
    if (n->comm != NULL) (void)n->api->ncclCommDestroy(n->comm);
    if (n->rank_comm != NULL) (void)n->api->ncclCommDestroy(n->rank_comm);
    n->comm = n->rank_comm = NULL;
  }
  g_clear_pointer(&n->group_len, g_free);
}

gboolean dr__cuda_nccl_group_start(DrCudaNccl *n, const char *node, GError **error) {
  if (DR_NCCL(n->api, node, ncclGroupStart)) return TRUE;
  n->failed = TRUE;
  return FALSE;
}

gboolean dr__cuda_nccl_group_end(DrCudaNccl *n, const char *node, gboolean ok, GError **error) {
  DrNcclResult rc = n->api->ncclGroupEnd();
  if (ok) ok = dr__nccl_check(n->api, rc, "ncclGroupEnd", node, error);
  if (!ok) n->failed = TRUE;
  return ok;
}

/* alltoall over `peers` ranks: block p of src to rank p, block p of dst
 * from rank p, in one group. */
static gboolean alltoall(DrCudaNccl *n, DrNcclComm comm, gint32 peers, const char *id, const void *src,
                         void *dst, size_t c_src, DrElemType et, cudaStream_t st, GError **error) {
  const DrNcclApi *api = n->api;
  int type = dr_nccl_type(et);
  size_t blk = c_src / (size_t)peers, esz = dr_elem_size(et);
  if (!DR_NCCL(api, id, ncclGroupStart)) return FALSE;
  gboolean ok = TRUE;
  for (gint32 p = 0; p < peers && ok; p++) {
    ok = DR_NCCL(api, id, ncclSend, (const char *)src + (size_t)p * blk * esz, blk, type, p, comm, st);
    ok = ok && DR_NCCL(api, id, ncclRecv, (char *)dst + (size_t)p * blk * esz, blk, type, p, comm, st);
  }
  /* a group opened is always closed, even after a failed call in it */
  DrNcclResult end = api->ncclGroupEnd();
  return ok && dr__nccl_check(api, end, "ncclGroupEnd", id, error);
}

gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *g, DrId v, void *const *bases, cudaStream_t st,
                             GError **error) {
  const DrNode *node = dr_graph_node(g, v);
  gboolean across = n->ranks && node->per_rank;
  DrNcclComm comm = across ? n->rank_comm : n->comm;
  g_return_val_if_fail(n->api != NULL && node->n_parts == 1, FALSE);
  if (comm == NULL) {
    /* the abort hook ran: the job is ending */
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': the NCCL communicator was aborted", node->id);
    return FALSE;
  }
  const DrNcclApi *api = n->api;
  gboolean p2p = node->op == DR_OP_SEND || node->op == DR_OP_RECV;
  const DrAccess *a0 = dr__node_access(g, node, 0);
  const DrAccess *a1 = !p2p && node->access_count > 1 ? dr__node_access(g, node, 1) : NULL;
  DrElemType et = dr_graph_buffer(g, a0->buffer)->type;
  int type = dr_nccl_type(et), op = dr_nccl_op(node->reduce);
  void *src = dr__slice_ptr(g, bases, a0);
  void *dst = a1 ? dr__slice_ptr(g, bases, a1) : NULL;
  size_t c_src = a0->end - a0->begin, c_dst = a1 ? a1->end - a1->begin : 0;
  gboolean ok = TRUE;
  switch (node->op) {
    case DR_OP_ALLREDUCE:
      ok = DR_NCCL(api, node->id, ncclAllReduce, src, dst, c_src, type, op, comm, st);
      break;
    case DR_OP_BROADCAST:
      ok = DR_NCCL(api, node->id, ncclBroadcast, src, dst, c_src, type, node->root, comm, st);
      break;
    case DR_OP_REDUCE:
      ok = DR_NCCL(api, node->id, ncclReduce, src, dst, c_src, type, op, node->root, comm, st);
      break;
    case DR_OP_ALLGATHER:
      ok = DR_NCCL(api, node->id, ncclAllGather, src, dst, c_src, type, comm, st);
      break;
    case DR_OP_REDUCESCATTER:
      ok = DR_NCCL(api, node->id, ncclReduceScatter, src, dst, c_dst, type, op, comm, st);
      break;
    case DR_OP_ALLTOALL:
      ok = alltoall(n, comm, across ? n->nranks : 1, node->id, src, dst, c_src, et, st, error);
      break;
    case DR_OP_SEND:
    case DR_OP_RECV:
      if (!across) {
        g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "node '%s': %s needs another process (mpirun)",
                    node->id, dr_op_name(node->op));
        ok = FALSE;
      } else if (node->op == DR_OP_SEND) {
        ok = DR_NCCL(api, node->id, ncclSend, src, c_src, type, node->peer, comm, st);
      } else {
        ok = DR_NCCL(api, node->id, ncclRecv, src, c_src, type, node->peer, comm, st);
      }
      break;
    default:
      g_return_val_if_reached(FALSE);
  }
  if (!ok) n->failed = TRUE;
  return ok;
}
