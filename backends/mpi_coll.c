/* mpi_coll.c: collectives across the ranks of an MPI job on the host
 * backend (mpi_coll.h), the multi-process half of the host model of NCCL
 * (the one-process half is collective.c). Each rank's node names its own
 * buffer (per_rank); its data moves through MPI on the host copies.
 *
 * Before the first run, dr__rank_colls_check has every rank describe its
 * collectives in file order (op, id, element type, counts, reduction,
 * root) and compares the descriptions, so participants that disagree are a
 * FILE:LINE:COL error on every rank instead of a hang or a wrong result.
 * Each collective node then gets its own communicator (MPI_Comm_dup at
 * open, in file order on every rank), so collectives that the plan runs
 * on different streams (worker threads, MPI_THREAD_MULTIPLE) can never
 * match each other's messages; point-to-point nodes share one, with the
 * k-th send from rank a to rank b (file order) matching b's k-th receive
 * from a by tag k. Sends are buffered: the node copies its data aside and
 * starts MPI_Isend, waited for when the node runs next or at close, so a
 * ring of sends and receives cannot deadlock in a serial plan.
 *
 * Reductions: every rank gathers the participants' inputs (MPI_Allgather,
 * MPI_Alltoall for reducescatter) and reduces them in rank order with
 * the one reducer of reduce.h, collective.c's too (integers exactly in 64 bits, floats in
 * double, stored once), so the result is bitwise the same on every rank,
 * in the concurrent and the serial run, and equal to the one-process
 * model's; MPI_Allreduce promises none of that. Cost per node: the MPI
 * traffic plus O(ranks x elements) host memory and time. */
#include "backends/mpi_coll.h"

#include <string.h>

#include "backends/backend.h"
#include "backends/mpi.h"
#include "backends/reduce.h"

typedef struct {
  int comm;         /* its communicator (collectives), 0: none */
  int tag;          /* send/recv: the match number */
  void *stage;      /* send: the copy in flight */
  gboolean pending; /* send: an isend not waited for */
  int req;
} NodeComm;

struct DrRankColls {
  const DrGraph *graph;
  const DrMpiWorld *w;
  NodeComm *nodes; /* [n_nodes] */
  int p2p;         /* the point-to-point communicator */
};

gboolean dr__rank_colls_needed(const DrGraph *g) {
  if (dr__mpi_world()->api == NULL || dr__mpi_world()->size <= 1) return FALSE;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (DR_OP_IS_COLLECTIVE(n->op) && n->per_rank) return TRUE;
  }
  return FALSE;
}

static gboolean is_p2p(DrOp op) { return op == DR_OP_SEND || op == DR_OP_RECV; }

/* The participant's src (dst: FALSE) access of a per_rank node. */
static const DrAccess *part_access(const DrGraph *g, const DrNode *n, gboolean dst) {
  if (is_p2p(n->op)) return dr__node_access(g, n, 0);
  return dr__node_access(g, n, dst ? 1 : 0);
}

static guint64 part_count(const DrGraph *g, const DrNode *n, gboolean dst) {
  const DrAccess *a = part_access(g, n, dst);
  return a->end - a->begin;
}

/* One collective as this rank sees it: what every rank must agree on. */
static void describe(const DrGraph *g, const DrNode *n, GString *out) {
  const DrAccess *a = part_access(g, n, FALSE);
  g_string_append_printf(out, "%s '%s' of %s, %" G_GUINT64_FORMAT " element%s in, %" G_GUINT64_FORMAT " out",
                         dr_op_name(n->op), n->id, dr_elem_name(dr_graph_buffer(g, a->buffer)->type),
                         part_count(g, n, FALSE), part_count(g, n, FALSE) == 1 ? "" : "s",
                         part_count(g, n, TRUE));
  if (n->op == DR_OP_ALLREDUCE || n->op == DR_OP_REDUCE || n->op == DR_OP_REDUCESCATTER)
    g_string_append_printf(out, ", reduce %s", dr_reduce_name(n->reduce));
  if (n->op == DR_OP_BROADCAST || n->op == DR_OP_REDUCE) g_string_append_printf(out, ", root %d", n->root);
}

/* The first node of `g` that is a collective across ranks (send and
 * receive aside), its description in `desc`; DR_NONE when none. */
static GPtrArray *descriptions(const DrGraph *g, GArray *ids) {
  GPtrArray *d = g_ptr_array_new_with_free_func(g_free);
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (!DR_OP_IS_COLLECTIVE(n->op) || !n->per_rank || is_p2p(n->op)) continue;
    GString *s = g_string_new(NULL);
    describe(g, n, s);
    g_ptr_array_add(d, g_string_free(s, FALSE));
    g_array_append_val(ids, i);
  }
  return d;
}

/* Rank 0's account of the first difference between the ranks' lists
 * (`all`: each rank's descriptions joined by '\n'). */
static char *first_difference(char **all, guint n_ranks) {
  g_autoptr(GPtrArray) lists = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  guint longest = 0;
  for (guint r = 0; r < n_ranks; r++) {
    char **l = all[r][0] ? g_strsplit(all[r], "\n", -1) : g_new0(char *, 1);
    g_ptr_array_add(lists, l);
    longest = MAX(longest, g_strv_length(l));
  }
  for (guint k = 0; k < longest; k++) {
    char **l0 = lists->pdata[0];
    const char *d0 = k < g_strv_length(l0) ? l0[k] : NULL;
    for (guint r = 1; r < n_ranks; r++) {
      char **lr = lists->pdata[r];
      const char *dr = k < g_strv_length(lr) ? lr[k] : NULL;
      if (g_strcmp0(d0, dr) == 0) continue;
      return g_strdup_printf(
          "collective %u across ranks disagrees: rank 0 has %s, rank %u has %s (every rank "
          "must run the same collectives, in the same file order, with the same sizes, types, "
          "reductions and roots)",
          k + 1, d0 ? d0 : "no more collectives", r, dr ? dr : "no more collectives");
    }
  }
  return g_strdup("collectives across ranks disagree");
}

gboolean dr__rank_colls_check(const DrGraph *g, GError **error) {
  const DrMpiWorld *w = dr__mpi_world();
  if (w->api == NULL || w->size <= 1) return TRUE;
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(DrId));
  g_autoptr(GPtrArray) d = descriptions(g, ids);
  g_ptr_array_add(d, NULL);
  g_autofree char *mine = g_strjoinv("\n", (char **)d->pdata);
  /* Compare fingerprints first: the common case moves 8 bytes a rank. */
  guint64 fp = dr__fnv1a64(mine, strlen(mine));
  g_autofree guint64 *fps = g_new0(guint64, w->size);
  int rc = w->api->allgather(&fp, fps, sizeof fp, 0);
  if (rc != 0) return dr__mpi_fail(rc, "collectives", "MPI_Allgather", error);
  gboolean same = TRUE;
  for (guint r = 1; r < w->size; r++) same &= fps[r] == fps[0];
  if (same) return TRUE;
  /* Rank 0 finds the first difference and tells every rank. */
  gint32 len = (gint32)MIN(strlen(mine), (gsize)G_MAXINT32);
  g_autofree gint32 *lens = g_new0(gint32, w->size);
  rc = w->api->allgather(&len, lens, sizeof len, 0);
  if (rc != 0) return dr__mpi_fail(rc, "collectives", "MPI_Allgather", error);
  g_autofree int *counts = g_new0(int, w->size), *displs = g_new0(int, w->size);
  gint64 total = 0;
  for (guint r = 0; r < w->size; r++) {
    counts[r] = lens[r];
    displs[r] = (int)total;
    total += lens[r];
  }
  if (total > G_MAXINT32) total = G_MAXINT32;
  g_autofree char *all = w->rank == 0 ? g_malloc0((gsize)total + 1) : NULL;
  rc = w->api->gatherv(mine, len, all, counts, displs, 0, 0);
  if (rc != 0) return dr__mpi_fail(rc, "collectives", "MPI_Gatherv", error);
  g_autofree char *msg = NULL;
  gint32 at = -1; /* the index of the first differing collective */
  if (w->rank == 0) {
    char **per = g_new0(char *, w->size + 1);
    for (guint r = 0; r < w->size; r++) per[r] = g_strndup(all + displs[r], (gsize)counts[r]);
    msg = first_difference(per, w->size);
    const char *k = strstr(msg, "collective ");
    at = k ? (gint32)g_ascii_strtoll(k + 11, NULL, 10) - 1 : -1;
    g_strfreev(per);
  }
  gint32 mlen = msg ? (gint32)strlen(msg) : 0;
  rc = w->api->bcast(&mlen, sizeof mlen, 0, 0);
  if (rc == 0) rc = w->api->bcast(&at, sizeof at, 0, 0);
  if (rc != 0) return dr__mpi_fail(rc, "collectives", "MPI_Bcast", error);
  if (msg == NULL) msg = g_malloc0((gsize)mlen + 1);
  rc = w->api->bcast(msg, (size_t)mlen, 0, 0);
  if (rc != 0) return dr__mpi_fail(rc, "collectives", "MPI_Bcast", error);
  /* Located at this rank's collective of that number, or its last. */
  DrLoc loc = {g->file ? g->file : "pipeline", 1, 1};
  if (ids->len > 0) {
    guint k = at >= 0 && (guint)at < ids->len ? (guint)at : ids->len - 1;
    loc = dr_graph_node(g, g_array_index(ids, DrId, k))->loc;
  }
  g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "%s:%u:%u: error: %s", loc.file, loc.line, loc.col, msg);
  return FALSE;
}

DrRankColls *dr__rank_colls_open(const DrGraph *g, GError **error) {
  const DrMpiWorld *w = dr__mpi_world();
  g_return_val_if_fail(w->api != NULL, NULL);
  if (!w->multiple) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE,
                "collectives across ranks: %s does not provide MPI_THREAD_MULTIPLE, which the host "
                "backend's workers need",
                w->api->library ? w->api->library : "MPI");
    return NULL;
  }
  DrRankColls *c = g_new0(DrRankColls, 1);
  c->graph = g;
  c->w = w;
  c->nodes = g_new0(NodeComm, MAX(dr_graph_n_nodes(g), 1));
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) c->nodes[i].comm = -1;
  /* Every rank dups the same number of communicators in the same order:
   * one for point to point, then one per collective (their lists agree:
   * dr__rank_colls_check). */
  int rc = w->api->comm_dup(&c->p2p);
  if (rc != 0) {
    dr__rank_colls_close(c);
    dr__mpi_fail(rc, "collectives", "MPI_Comm_dup", error);
    return NULL;
  }
  g_autoptr(GHashTable) sent = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GHashTable) recvd = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (!DR_OP_IS_COLLECTIVE(n->op) || !n->per_rank) continue;
    NodeComm *nc = &c->nodes[i];
    if (is_p2p(n->op)) {
      if (n->peer < 0 || (guint32)n->peer >= w->size) {
        g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                    "%s:%u:%u: error: node '%s': peer %d is not a rank (0..%u)", n->loc.file, n->loc.line,
                    n->loc.col, n->id, n->peer, w->size - 1);
        dr__rank_colls_close(c);
        return NULL;
      }
      GHashTable *t = n->op == DR_OP_SEND ? sent : recvd;
      gpointer key = GINT_TO_POINTER(n->peer + 1);
      nc->tag = GPOINTER_TO_INT(g_hash_table_lookup(t, key));
      g_hash_table_insert(t, key, GINT_TO_POINTER(nc->tag + 1));
      nc->comm = c->p2p;
      if (n->op == DR_OP_SEND) {
        const DrAccess *a = part_access(g, n, FALSE);
        nc->stage = g_malloc(MAX((a->end - a->begin) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type), 1));
      }
      continue;
    }
    if (n->op == DR_OP_BROADCAST || n->op == DR_OP_REDUCE) {
      if (n->root < 0 || (guint32)n->root >= w->size) {
        g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                    "%s:%u:%u: error: node '%s': root %d is not a rank (0..%u)", n->loc.file, n->loc.line,
                    n->loc.col, n->id, n->root, w->size - 1);
        dr__rank_colls_close(c);
        return NULL;
      }
    }
    rc = w->api->comm_dup(&nc->comm);
    if (rc != 0) {
      nc->comm = -1;
      dr__rank_colls_close(c);
      dr__mpi_fail(rc, n->id, "MPI_Comm_dup", error);
      return NULL;
    }
  }
  return c;
}

/* ---- running one node ------------------------------------------------------ */

gboolean dr__rank_colls_run(DrRankColls *c, DrId node, void *const *bases, GError **error) {
  const DrGraph *g = c->graph;
  const DrNode *n = dr_graph_node(g, node);
  const DrMpiApi *api = c->w->api;
  NodeComm *nc = &c->nodes[node];
  guint32 R = c->w->size, me = c->w->rank;
  const DrAccess *sa = part_access(g, n, FALSE), *da = part_access(g, n, TRUE);
  DrElemType t = dr_graph_buffer(g, sa->buffer)->type;
  guint64 esz = dr_elem_size(t);
  guint64 cs = sa->end - sa->begin, cd = da->end - da->begin;
  void *src = n->op == DR_OP_RECV ? NULL : dr__slice_ptr(g, bases, sa);
  void *dst = n->op == DR_OP_SEND ? NULL : dr__slice_ptr(g, bases, da);
  int rc = 0;
  const char *call = "?";
  switch (n->op) {
    case DR_OP_ALLREDUCE:
    case DR_OP_REDUCE: {
      g_autofree void *all = g_try_malloc(MAX(R * cs * esz, 1));
      if (all == NULL) break;
      call = "MPI_Allgather";
      rc = api->allgather(src, all, cs * esz, nc->comm);
      if (rc == 0 && (n->op == DR_OP_ALLREDUCE || (guint32)n->root == me))
        dr__reduce_blocks(t, n->reduce, all, cs, R, cs, dst);
      break;
    }
    case DR_OP_BROADCAST:
      if ((guint32)n->root == me && dst != src) memmove(dst, src, cs * esz);
      call = "MPI_Bcast";
      rc = api->bcast(dst, cs * esz, n->root, nc->comm);
      break;
    case DR_OP_ALLGATHER: {
      /* Into a scratch first: src may lie inside dst. */
      g_autofree void *all = g_try_malloc(MAX(R * cs * esz, 1));
      if (all == NULL) break;
      call = "MPI_Allgather";
      rc = api->allgather(src, all, cs * esz, nc->comm);
      if (rc == 0) memcpy(dst, all, R * cs * esz);
      break;
    }
    case DR_OP_REDUCESCATTER: {
      /* Block `me` of every rank's src, in rank order, then reduced. */
      g_autofree void *all = g_try_malloc(MAX(R * cd * esz, 1));
      if (all == NULL) break;
      call = "MPI_Alltoall";
      rc = api->alltoall(src, all, cd * esz, nc->comm);
      if (rc == 0) dr__reduce_blocks(t, n->reduce, all, cd, R, cd, dst);
      break;
    }
    case DR_OP_ALLTOALL: {
      g_autofree void *all = g_try_malloc(MAX(cd * esz, 1));
      if (all == NULL) break;
      call = "MPI_Alltoall";
      rc = api->alltoall(src, all, cs / R * esz, nc->comm);
      if (rc == 0) memcpy(dst, all, cd * esz);
      break;
    }
    case DR_OP_SEND:
      if (nc->pending) {
        nc->pending = FALSE;
        call = "MPI_Wait";
        if ((rc = api->wait(nc->req)) != 0) break;
      }
      memcpy(nc->stage, src, cs * esz);
      call = "MPI_Isend";
      rc = api->isend(nc->stage, cs * esz, n->peer, nc->tag, nc->comm, &nc->req);
      nc->pending = rc == 0;
      break;
    case DR_OP_RECV:
      call = "MPI_Recv";
      rc = api->recv(dst, cd * esz, n->peer, nc->tag, nc->comm);
      break;
    default:
      return TRUE;
  }
  if (g_strcmp0(call, "?") == 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': out of host memory for the collective", n->id);
    return FALSE;
  }
  if (rc != 0) {
    g_autofree char *what = g_strdup_printf("node '%s'", n->id);
    return dr__mpi_fail(rc, what, call, error);
  }
  return TRUE;
}

void dr__rank_colls_close(DrRankColls *c) {
  if (c == NULL) return;
  const DrMpiApi *api = c->w->api;
  for (DrId i = 0; i < dr_graph_n_nodes(c->graph); i++) {
    NodeComm *nc = &c->nodes[i];
    if (nc->pending) api->wait(nc->req);
    g_free(nc->stage);
    if (nc->comm > 0 && nc->comm != c->p2p) api->comm_free(nc->comm);
  }
  if (c->p2p > 0) api->comm_free(c->p2p);
  g_free(c->nodes);
  g_free(c);
}
