/* nccl.c: the CUDA backend's NCCL part (nccl.h): the communicators, the
 * groups, each collective's NCCL calls, and the watch over NCCL's
 * asynchronous errors.
 *
 * Communicators. A single process makes one ncclCommInitAll over the
 * devices it drives (run.devices, or the run's device alone): one
 * communicator per device, rank r on run.devices[r], the rank the devices
 * pass gave participant r (graph.h, I7). In an MPI job of several ranks,
 * the per-rank collectives (one buffer: "this rank's copy") use a
 * communicator over the job: rank 0 calls ncclGetUniqueId, MPI
 * broadcasts the id (dr__mpi_share_nccl_id: a status first, so a failure
 * on rank 0 fails every rank alike), and every rank calls
 * ncclCommInitRank(nranks, id, rank) on its device; a collective given as
 * a list of this process's devices still uses the one-process
 * communicators. (A rank that drives several devices with per-rank
 * collectives would need a communicator of ranks x devices: refused at
 * open, streams.c.) While a job's communicator lives, an abort hook
 * (dr__mpi_register_abort) aborts it when the process ends the job
 * (MPI_Abort after a failure), so no kernel of this rank keeps waiting on
 * a peer that is gone. Each communicator is destroyed at close, or
 * aborted at once after a failed call or an asynchronous error, so that
 * the device drain that follows a failure does not wait on NCCL kernels
 * whose peers will never come.
 *
 * One process, several devices. A collective over the devices is one
 * NCCL call per device (participant r's buffers, comms[r]), all inside
 * one ncclGroupStart/End: NCCL requires a process's calls for all its
 * devices in one group, since each call waits for the others'. The node
 * has one plan stream (the communication stream of device -1, which
 * streams.c opens on the first device; or, in --verify's serial plan, a
 * stream of that device): the participant of that stream's device runs
 * on it, every other participant r on side[r], a communication stream of
 * device r at its highest priority that this part owns (one per device:
 * the collectives over several devices are one chain in every plan, so
 * sharing it orders nothing the plan does not). Two event hops join them,
 * each recorded and waited on with its stream's device selected: before
 * the group, fan[L] recorded on the plan stream (device index L) after
 * the step's waits, and every side stream waits on it (the edges into
 * the node: its inputs on every device are ready before any participant
 * starts); after the group, back[r] recorded on each side stream, and the
 * plan stream waits on each (every participant's part happens before the
 * node's completion event, which issue.c records on the plan stream, so
 * the edges out of the node wait for all of it). The NCCL calls
 * themselves are made with no cudaSetDevice between them: a communicator
 * knows its device, and NCCL's own multi-device example makes them so.
 * A capture over the plan stream pulls the side streams in through fan
 * and joins them back through back, so graph mode's one capture holds
 * every device's NCCL kernels. Cost per collective: 2 (D - 1) waits,
 * D records, 2 D device selections on top of the D calls.
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
 * where NCCL launches the group's work; with several devices the side
 * streams join the group's first collective before its calls and rejoin
 * the plan stream after ncclGroupEnd, once for the whole group. The issue
 * order, and so the calls inside each group, is the same on every rank
 * because the chain makes every rank's plan issue its collectives in
 * file order.
 *
 * Asynchronous errors. A NCCL failure after the launch (a peer that died,
 * a broken connection) leaves NCCL's kernels waiting and the stream never
 * done, so the wait for an iteration (dr__cuda_nccl_wait, before the
 * backend's cudaEventSynchronize) polls ncclCommGetAsyncError on every
 * communicator and cudaEventQuery in turn, and aborts every communicator
 * on an error instead of blocking. Polling is cheap (NCCL reads a flag);
 * the host yields for the first polls, then sleeps 20 us, then 200 us
 * between them.
 *
 * With one device, every collective is still a real NCCL launch on the
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
  for (guint32 r = 0; n->comms && r < n->n_comms; r++)
    if (n->comms[r] != NULL) (void)n->api->ncclCommAbort(n->comms[r]);
  if (n->rank_comm != NULL) (void)n->api->ncclCommAbort(n->rank_comm);
  for (guint32 r = 0; n->comms && r < n->n_comms; r++) n->comms[r] = NULL;
  n->rank_comm = NULL;
}

/* After a failed call: every communicator aborted now (see the file
 * head), or, inside an open group, once ncclGroupEnd has closed it
 * (dr__cuda_nccl_group_end). */
static gboolean fail(DrCudaNccl *n) {
  n->failed = TRUE;
  if (n->depth == 0) abort_comms(n);
  return FALSE;
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

/* Several devices: each device's communication stream (its highest
 * priority) and its two events, made with the device selected. */
static gboolean open_sides(DrCudaNccl *n, GError **error) {
  const DrCudaStreams *s = n->streams;
  n->side = g_new0(cudaStream_t, n->n_comms);
  n->fan = g_new0(cudaEvent_t, n->n_comms);
  n->back = g_new0(cudaEvent_t, n->n_comms);
  for (guint32 d = 0; d < n->n_comms; d++) {
    g_autofree char *what = g_strdup_printf("the communication stream of device %d", s->devices[d].ordinal);
    DrCudaSite site = DR_SITE_SETUP(what);
    if (!dr__cuda_streams_use_device(s, d, error) ||
        !DR_CUDA(site, cudaStreamCreateWithPriority, &n->side[d], cudaStreamNonBlocking,
                 s->devices[d].prio_greatest) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &n->fan[d], cudaEventDisableTiming) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &n->back[d], cudaEventDisableTiming))
      return FALSE;
  }
  return TRUE;
}

gboolean dr__cuda_nccl_open(DrCudaNccl *n, const DrPlan *plan, const DrCudaStreams *streams, GError **error) {
  memset(n, 0, sizeof *n);
  n->lead = -1;
  n->streams = streams;
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
    /* One communicator per device, rank r on device index r. */
    guint32 nd = streams->n_devices;
    int devs[DR_MAX_DEVICES];
    for (guint32 d = 0; d < nd; d++) devs[d] = streams->devices[d].ordinal;
    n->comms = g_new0(DrNcclComm, nd);
    if (!DR_NCCL(api, NULL, ncclCommInitAll, n->comms, (int)nd, devs)) {
      memset(n->comms, 0, sizeof(DrNcclComm) * nd);
      return fail(n);
    }
    n->n_comms = nd;
    /* NCCL selected each device in turn; back to the first. */
    if (nd > 1 && (!open_sides(n, error) || !dr__cuda_streams_use_device(streams, 0, error))) return fail(n);
  }
  return TRUE;
}

void dr__cuda_nccl_close(DrCudaNccl *n) {
  if (n->hooked) dr__mpi_unregister_abort(abort_hook, n);
  n->hooked = FALSE;
  if (n->failed) {
    abort_comms(n);
  } else if (n->api != NULL) {
    for (guint32 r = 0; n->comms && r < n->n_comms; r++)
      if (n->comms[r] != NULL) (void)n->api->ncclCommDestroy(n->comms[r]);
    if (n->rank_comm != NULL) (void)n->api->ncclCommDestroy(n->rank_comm);
    n->rank_comm = NULL;
  }
  const DrCudaApi *cuda = dr_cuda_api();
  for (guint32 d = 0; n->side && d < n->n_comms; d++) {
    if (n->side[d]) (void)cuda->cudaStreamDestroy(n->side[d]);
    if (n->fan[d]) (void)cuda->cudaEventDestroy(n->fan[d]);
    if (n->back[d]) (void)cuda->cudaEventDestroy(n->back[d]);
  }
  g_clear_pointer(&n->side, g_free);
  g_clear_pointer(&n->fan, g_free);
  g_clear_pointer(&n->back, g_free);
  g_clear_pointer(&n->comms, g_free);
  n->n_comms = 0;
  g_clear_pointer(&n->group_len, g_free);
}

/* ---- several devices: the side streams around the calls ---------------- */

/* Before the calls of collective `node` (plan stream `lead` of device
 * index L, selected): DAG edges into the node -> every participant. The
 * step's waits were made on `lead`; each side stream waits on an event
 * recorded after them. Device L is selected again after. */
static gboolean fan_out(DrCudaNccl *n, const char *node, guint32 L, cudaStream_t lead, GError **error) {
  const DrCudaStreams *s = n->streams;
  DrCudaSite site = {node, -1, "joining the other devices' communication streams"};
  if (!DR_CUDA(site, cudaEventRecord, n->fan[L], lead)) return FALSE;
  for (guint32 d = 0; d < n->n_comms; d++)
    if (d != L && (!dr__cuda_streams_use_device(s, d, error) ||
                   !DR_CUDA(site, cudaStreamWaitEvent, n->side[d], n->fan[L], 0)))
      return FALSE;
  return dr__cuda_streams_use_device(s, L, error);
}

/* After ncclGroupEnd: every participant -> the node's completion on
 * `lead` (events and timing recorded there after it). */
static gboolean fan_in(DrCudaNccl *n, const char *node, guint32 L, cudaStream_t lead, GError **error) {
  const DrCudaStreams *s = n->streams;
  DrCudaSite site = {node, -1, "joining the other devices' communication streams back"};
  for (guint32 d = 0; d < n->n_comms; d++)
    if (d != L && (!dr__cuda_streams_use_device(s, d, error) ||
                   !DR_CUDA(site, cudaEventRecord, n->back[d], n->side[d])))
      return FALSE;
  if (!dr__cuda_streams_use_device(s, L, error)) return FALSE;
  for (guint32 d = 0; d < n->n_comms; d++)
    if (d != L && !DR_CUDA(site, cudaStreamWaitEvent, lead, n->back[d], 0)) return FALSE;
  return TRUE;
}

gboolean dr__cuda_nccl_group_start(DrCudaNccl *n, const char *node, GError **error) {
  if (!DR_NCCL(n->api, node, ncclGroupStart)) return fail(n);
  n->depth++;
  n->lead = -1;
  return TRUE;
}

gboolean dr__cuda_nccl_group_end(DrCudaNccl *n, const char *node, gboolean ok, GError **error) {
  DrNcclResult rc = n->api->ncclGroupEnd();
  n->depth--;
  gint32 lead = n->lead;
  n->lead = -1;
  if (ok) ok = dr__nccl_check(n->api, rc, "ncclGroupEnd", node, error);
  if (ok && lead >= 0) ok = fan_in(n, node, (guint32)lead, n->lead_stream, error);
  return ok || fail(n);
}

/* alltoall over `peers` ranks: block p of src to rank p, block p of dst
 * from rank p, in one group (nested in the caller's, if any). */
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

/* One participant's call of collective `node`: src/dst of `c_src`/`c_dst`
 * elements on `comm` of a communicator of `peers` ranks, on `st`. */
static gboolean call_one(DrCudaNccl *n, const DrNode *node, DrNcclComm comm, gint32 peers, const void *src,
                         void *dst, size_t c_src, size_t c_dst, DrElemType et, gboolean across,
                         cudaStream_t st, GError **error) {
  const DrNcclApi *api = n->api;
  int type = dr_nccl_type(et), op = dr_nccl_op(node->reduce);
  switch (node->op) {
    case DR_OP_ALLREDUCE:
      return DR_NCCL(api, node->id, ncclAllReduce, src, dst, c_src, type, op, comm, st);
    case DR_OP_BROADCAST:
      return DR_NCCL(api, node->id, ncclBroadcast, src, dst, c_src, type, node->root, comm, st);
    case DR_OP_REDUCE:
      return DR_NCCL(api, node->id, ncclReduce, src, dst, c_src, type, op, node->root, comm, st);
    case DR_OP_ALLGATHER:
      return DR_NCCL(api, node->id, ncclAllGather, src, dst, c_src, type, comm, st);
    case DR_OP_REDUCESCATTER:
      return DR_NCCL(api, node->id, ncclReduceScatter, src, dst, c_dst, type, op, comm, st);
    case DR_OP_ALLTOALL:
      return alltoall(n, comm, peers, node->id, src, dst, c_src, et, st, error);
    case DR_OP_SEND:
    case DR_OP_RECV:
      if (!across) {
        g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "node '%s': %s needs another process (mpirun)",
                    node->id, dr_op_name(node->op));
        return FALSE;
      }
      if (node->op == DR_OP_SEND)
        return DR_NCCL(api, node->id, ncclSend, src, c_src, type, node->peer, comm, st);
      return DR_NCCL(api, node->id, ncclRecv, (void *)src, c_src, type, node->peer, comm, st);
    default:
      g_return_val_if_reached(FALSE);
  }
}

/* Collective `v` over the n_comms devices (participant r on comms[r]),
 * `st` its plan stream: see the file head. */
static gboolean issue_devices(DrCudaNccl *n, const DrGraph *g, DrId v, void *const *bases, cudaStream_t st,
                              GError **error) {
  const DrNode *node = dr_graph_node(g, v);
  const DrCudaStreams *s = n->streams;
  guint32 L = s->stream_device[s->plan->node_stream[v]];
  for (guint32 r = 0; r < n->n_comms; r++)
    if (n->comms[r] == NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': the NCCL communicators were aborted",
                  node->id);
      return FALSE;
    }
  gboolean own = n->depth == 0;
  if (own || n->lead < 0) {
    if (!fan_out(n, node->id, L, st, error)) return fail(n);
    if (!own) {
      n->lead = (gint32)L;
      n->lead_stream = st;
    }
  }
  g_return_val_if_fail(own || n->lead == (gint32)L, FALSE); /* a group is on one plan stream */
  if (own && !DR_NCCL(n->api, node->id, ncclGroupStart)) return fail(n);
  const DrAccess *a0 = dr__node_access(g, node, 0), *a1 = dr__node_access(g, node, 1);
  DrElemType et = dr_graph_buffer(g, a0->buffer)->type;
  size_t c_src = a0->end - a0->begin, c_dst = a1->end - a1->begin;
  gboolean ok = TRUE;
  for (guint32 r = 0; r < n->n_comms && ok; r++)
    ok = call_one(n, node, n->comms[r], (gint32)n->n_comms,
                  dr__slice_ptr(g, bases, dr__node_access(g, node, 2 * r)),
                  dr__slice_ptr(g, bases, dr__node_access(g, node, 2 * r + 1)), c_src, c_dst, et, FALSE,
                  r == L ? st : n->side[r], error);
  if (own) {
    /* a group opened is always closed, even after a failed call in it */
    DrNcclResult end = n->api->ncclGroupEnd();
    ok = ok && dr__nccl_check(n->api, end, "ncclGroupEnd", node->id, error) &&
         fan_in(n, node->id, L, st, error);
  }
  return ok || fail(n);
}

gboolean dr__cuda_nccl_issue(DrCudaNccl *n, const DrGraph *g, DrId v, void *const *bases, cudaStream_t st,
                             GError **error) {
  const DrNode *node = dr_graph_node(g, v);
  g_return_val_if_fail(n->api != NULL, FALSE);
  if (!node->per_rank && node->n_parts > 1) {
    g_return_val_if_fail(node->n_parts == n->n_comms, FALSE);
    return issue_devices(n, g, v, bases, st, error);
  }
  g_return_val_if_fail(node->n_parts == 1, FALSE);
  gboolean across = n->ranks && node->per_rank;
  DrNcclComm comm = across ? n->rank_comm : n->comms != NULL ? n->comms[0] : NULL;
  if (comm == NULL) {
    /* the abort hook ran (the job is ending), or an earlier failure */
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': the NCCL communicator was aborted", node->id);
    return FALSE;
  }
  gboolean p2p = node->op == DR_OP_SEND || node->op == DR_OP_RECV;
  const DrAccess *a0 = dr__node_access(g, node, 0);
  const DrAccess *a1 = !p2p && node->access_count > 1 ? dr__node_access(g, node, 1) : NULL;
  DrElemType et = dr_graph_buffer(g, a0->buffer)->type;
  void *src = dr__slice_ptr(g, bases, a0);
  void *dst = a1 ? dr__slice_ptr(g, bases, a1) : NULL;
  size_t c_src = a0->end - a0->begin, c_dst = a1 ? a1->end - a1->begin : 0;
  return call_one(n, node, comm, across ? n->nranks : 1, src, dst, c_src, c_dst, et, across, st, error) ||
         fail(n);
}

/* ---- asynchronous errors ------------------------------------------------ */

/* ncclCommGetAsyncError on `comm` (device `dev`, rank `rank` of
 * `nranks`); an error aborts every communicator. */
static gboolean check_comm(DrCudaNccl *n, DrNcclComm comm, int dev, gint32 rank, gint32 nranks,
                           GError **error) {
  if (comm == NULL) return TRUE;
  DrNcclResult async = 0;
  DrNcclResult rc = n->api->ncclCommGetAsyncError(comm, &async);
  if (rc != 0) {
    const char *msg = n->api->ncclGetErrorString ? n->api->ncclGetErrorString(rc) : NULL;
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                "NCCL, waiting for an iteration: ncclCommGetAsyncError failed: %s (NCCL error %d)",
                msg ? msg : "?", rc);
    return fail(n);
  }
  if (async == 0 || async == 7 /* ncclInProgress: not an error */) return TRUE;
  const char *msg = n->api->ncclGetErrorString ? n->api->ncclGetErrorString(async) : NULL;
  g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
              "NCCL reported an asynchronous error on the communicator of device %d (rank %d of %d) while "
              "the run waited for an iteration: %s (NCCL error %d); every NCCL communicator of the run "
              "was aborted (ncclCommAbort)",
              dev, rank, nranks, msg ? msg : "?", async);
  return fail(n);
}

static gboolean check_async(DrCudaNccl *n, GError **error) {
  for (guint32 r = 0; r < n->n_comms; r++)
    if (!check_comm(n, n->comms[r], n->streams->devices[r].ordinal, (gint32)r, (gint32)n->n_comms, error))
      return FALSE;
  return check_comm(n, n->rank_comm, n->streams->devices[0].ordinal, n->rank, n->nranks, error);
}

gboolean dr__cuda_nccl_wait(DrCudaNccl *n, cudaEvent_t done, GError **error) {
  if (n->api == NULL || n->failed) return TRUE;
  const DrCudaApi *cuda = dr_cuda_api();
  for (guint polls = 0;; polls++) {
    if (!check_async(n, error)) return FALSE;
    if (cuda->cudaEventQuery == NULL) return TRUE;
    cudaError_t rc = cuda->cudaEventQuery(done);
    if (rc == cudaSuccess) return TRUE;
    if (rc != cudaErrorNotReady)
      return dr__cuda_check(rc, "cudaEventQuery", DR_SITE_SETUP("waiting for an iteration"), error);
    (void)cuda->cudaGetLastError(); /* "not ready" is no error: leave none behind */
    if (polls < 64)
      g_thread_yield();
    else
      g_usleep(polls < 1024 ? 20 : 200);
  }
}
