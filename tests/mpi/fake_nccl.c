/* fake_nccl.c: the fake NCCL of fake_nccl.h. Each data operation is an
 * Op, run at once or, inside a group, queued and run at the outermost
 * ncclGroupEnd. A job's operations (ncclCommInitRank's communicator),
 * every input copied first (a group runs concurrently): the sends of a
 * group first (MPI_Isend), then every other operation in order (a receive
 * blocks in MPI_Recv), then the sends are waited for, so a group of sends
 * and receives in a ring cannot deadlock, as NCCL promises for a group.
 * Collectives across ranks use MPI's world communicator: they run on the
 * issuing thread in issue order, which is the same on every rank, so they
 * pair up. A clique's operations (ncclCommInitAll's communicators) are
 * matched across its ranks and computed together in one Batch, enqueued
 * on every participating stream through the fake CUDA runtime
 * (dr_fake_library_work; the last stream's item computes), so that a
 * capture holds them and a replay runs them. */
#include "tests/mpi/fake_nccl.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "backends/mpi.h"
#include "backends/reduce.h"
#include "tests/fault/fake_cuda.h"

DrFakeNccl dr_fake_nccl;

typedef enum { F_ALLREDUCE, F_BCAST, F_REDUCE, F_ALLGATHER, F_RS, F_SEND, F_RECV } FOp;

/* A communicator: the handle dagrun gets is its address. */
typedef struct {
  int clique; /* ncclCommInitAll's serial (1-based); 0: a job's (ncclCommInitRank) */
  int rank, nranks;
  int device;         /* the CUDA device it drives */
  DrNcclResult async; /* its asynchronous error (async_at) */
  gboolean gone;      /* destroyed or aborted */
} FComm;

typedef struct {
  FOp op;
  const void *send;
  void *recv;
  size_t count;
  DrElemType type;
  DrReduceOp reduce;
  int root; /* or peer */
  FComm *comm;
  cudaStream_t stream;
  gboolean hung; /* its communicator failed (async_at): it never completes */
} Op;

/* One collective of a clique, its ranks' buffers in rank order. */
typedef struct {
  Op o; /* the kind, count, type, reduction, root of rank 0's call */
  guint32 R;
  const void *send[DR_FAKE_MAX_DEVICES];
  void *recv[DR_FAKE_MAX_DEVICES];
} Coll;

/* A send from one rank of a clique met by the peer's receive. */
typedef struct {
  const void *src;
  void *dst;
  size_t bytes;
} Pair;

/* A group's clique work, run by the last of its stream items. */
typedef struct {
  GArray *colls; /* Coll */
  GArray *pairs; /* Pair */
  guint items, ran;
} Batch;

static GArray *queued;     /* Op, inside a group */
static gboolean group_bad; /* a call inside the open group failed */
static GPtrArray *comms;   /* FComm *, every one made since the reset (owned) */
static GPtrArray *batches; /* Batch *, owned: a captured graph may replay them */
static int cliques;
static guint64 data_ops;

static void batch_free(Batch *b) {
  g_array_unref(b->colls);
  g_array_unref(b->pairs);
  g_free(b);
}

void dr_fake_nccl_reset(void) {
  /* The trace's and misuse log's GStrings live for the process (a test's
   * last reset keeps them); communicators and batches go. */
  GString *t = dr_fake_nccl.trace, *m = dr_fake_nccl.misuse;
  memset(&dr_fake_nccl, 0, sizeof dr_fake_nccl);
  dr_fake_nccl.trace = t ? t : g_string_new(NULL);
  dr_fake_nccl.misuse = m ? m : g_string_new(NULL);
  g_string_truncate(dr_fake_nccl.trace, 0);
  g_string_truncate(dr_fake_nccl.misuse, 0);
  if (queued) g_array_set_size(queued, 0);
  if (comms) g_ptr_array_set_size(comms, 0);
  if (batches) g_ptr_array_set_size(batches, 0);
  group_bad = FALSE;
  cliques = 0;
  data_ops = 0;
}

static void nmisuse(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void nmisuse(const char *fmt, ...) {
  if (dr_fake_nccl.misuse == NULL) dr_fake_nccl.misuse = g_string_new(NULL);
  va_list ap;
  va_start(ap, fmt);
  g_string_append_vprintf(dr_fake_nccl.misuse, fmt, ap);
  va_end(ap);
  g_string_append_c(dr_fake_nccl.misuse, '\n');
}

static FComm *new_comm(int clique, int rank, int nranks, int device) {
  if (comms == NULL) comms = g_ptr_array_new_with_free_func(g_free);
  FComm *c = g_new0(FComm, 1);
  *c = (FComm){clique, rank, nranks, device, 0, FALSE};
  g_ptr_array_add(comms, c);
  dr_fake_nccl.live++;
  return c;
}

/* The live communicator behind handle `h`, or NULL (a misuse, noted). */
static FComm *comm_of(const char *call, DrNcclComm h) {
  FComm *c = (FComm *)(void *)h;
  if (comms == NULL || !g_ptr_array_find(comms, c, NULL)) {
    nmisuse("%s: %p is not a communicator", call, (void *)h);
    return NULL;
  }
  if (c->gone) {
    nmisuse("%s: a communicator already destroyed or aborted", call);
    return NULL;
  }
  return c;
}

gboolean dr_fake_nccl_hung(void) {
  for (guint i = 0; comms && i < comms->len; i++) {
    const FComm *c = comms->pdata[i];
    if (!c->gone && c->async != 0) return TRUE;
  }
  return FALSE;
}

/* Counts and traces the call; its result (non-zero: fail it). */
static DrNcclResult tick(const char *name) {
  DrFakeNccl *f = &dr_fake_nccl;
  g_string_append_printf(f->trace, "%s%s", f->trace->len ? " " : "", name);
  if (++f->calls != f->fail_at) return 0;
  g_string_append(f->trace, "!");
  if (f->depth > 0) group_bad = TRUE;
  return f->fail_code ? f->fail_code : 2;
}

static DrElemType elem_of(int t) {
  switch (t) {
    case 1:
      return DR_ELEM_U8;
    case 2:
      return DR_ELEM_I32;
    case 4:
      return DR_ELEM_I64;
    case 6:
      return DR_ELEM_F16;
    case 8:
      return DR_ELEM_F64;
    case 9:
      return DR_ELEM_BF16;
    default:
      return DR_ELEM_F32;
  }
}

static DrReduceOp reduce_of(int op) {
  static const DrReduceOp r[] = {DR_REDUCE_SUM, DR_REDUCE_PROD, DR_REDUCE_MAX, DR_REDUCE_MIN, DR_REDUCE_AVG};
  return op >= 0 && op < 5 ? r[op] : DR_REDUCE_SUM;
}

/* The job's shape: MPI's world, or one rank. */
static const DrMpiApi *job(guint32 *size, guint32 *rank) {
  const DrMpiWorld *w = dr__mpi_world();
  *size = w->api ? w->size : 1;
  *rank = w->api ? w->rank : 0;
  return w->api && w->size > 1 ? w->api : NULL;
}

static void gather(const DrMpiApi *mpi, const void *send, void *all, size_t bytes) {
  if (mpi == NULL || mpi->allgather(send, all, bytes, 0) != 0) memcpy(all, send, bytes);
}

/* Performs one operation; sends were started already (see run_all). */
static void perform(const Op *o) {
  guint32 R, me;
  const DrMpiApi *mpi = job(&R, &me);
  if (mpi == NULL) R = 1, me = 0;
  size_t esz = dr_elem_size(o->type), bytes = o->count * esz;
  switch (o->op) {
    case F_ALLREDUCE:
    case F_REDUCE: {
      g_autofree void *all = g_malloc(MAX(R * bytes, 1));
      gather(mpi, o->send, all, bytes);
      if (o->op == F_ALLREDUCE || (guint32)o->root == me)
        dr__reduce_blocks(o->type, o->reduce, all, o->count, R, o->count, o->recv);
      break;
    }
    case F_BCAST:
      if ((guint32)o->root == me && o->recv != o->send) memmove(o->recv, o->send, bytes);
      if (mpi) mpi->bcast(o->recv, bytes, o->root, 0);
      break;
    case F_ALLGATHER: {
      g_autofree void *all = g_malloc(MAX(R * bytes, 1));
      gather(mpi, o->send, all, bytes);
      memcpy(o->recv, all, R * bytes);
      break;
    }
    case F_RS: {
      g_autofree void *all = g_malloc(MAX(R * bytes, 1));
      if (mpi == NULL || mpi->alltoall(o->send, all, bytes, 0) != 0) memcpy(all, o->send, bytes);
      dr__reduce_blocks(o->type, o->reduce, all, o->count, R, o->count, o->recv);
      break;
    }
    case F_RECV:
      if (mpi) mpi->recv(o->recv, bytes, o->root, 77, 0);
      break;
    case F_SEND:
      break;
  }
}

/* Runs `ops`: sends first (a one-rank send is kept for the matching
 * receive), the rest in order, then the sends are waited for. */
static void run_all(const Op *in, guint n) {
  guint32 R, me;
  const DrMpiApi *mpi = job(&R, &me);
  /* A group's operations run concurrently on a GPU, in no order: each
   * reads its input as it was when the group ended, before any of them
   * writes, so a group holding two dependent collectives computes the
   * wrong thing here too. */
  g_autofree Op *ops = g_memdup2(in, sizeof(Op) * MAX(n, 1));
  g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; n > 1 && i < n; i++) {
    if (ops[i].send == NULL) continue;
    /* reducescatter's input is R blocks of its count */
    gsize bytes = ops[i].count * dr_elem_size(ops[i].type) * (ops[i].op == F_RS ? R : 1);
    void *c = g_memdup2(ops[i].send, MAX(bytes, 1));
    g_ptr_array_add(copies, c);
    ops[i].send = c;
  }
  g_autoptr(GArray) reqs = g_array_new(FALSE, FALSE, sizeof(int));
  const Op *self_send = NULL;
  for (guint i = 0; i < n; i++) {
    if (ops[i].op != F_SEND) continue;
    if (mpi == NULL || (guint32)ops[i].root == me) {
      self_send = &ops[i];
      if (mpi == NULL) continue;
    }
    int req = 0;
    if (mpi->isend(ops[i].send, ops[i].count * dr_elem_size(ops[i].type), ops[i].root, 77, 0, &req) == 0)
      g_array_append_val(reqs, req);
  }
  for (guint i = 0; i < n; i++) {
    if (ops[i].op == F_RECV && mpi == NULL) {
      if (self_send) memmove(ops[i].recv, self_send->send, ops[i].count * dr_elem_size(ops[i].type));
      continue;
    }
    perform(&ops[i]);
  }
  for (guint i = 0; i < reqs->len; i++) mpi->wait(g_array_index(reqs, int, i));
}

/* Operation `o`'s stream and buffers belong to its communicator's
 * device (as far as the fake CUDA runtime knows them). */
static gboolean placed(const char *call, const Op *o) {
  int sd = dr_fake_device_of(o->stream);
  if (sd < 0) {
    nmisuse("%s: %p is not a live stream", call, (void *)o->stream);
    return FALSE;
  }
  int dev = o->comm->device, ds = o->send ? dr_fake_mem_device(o->send) : -1;
  int dd = o->recv ? dr_fake_mem_device(o->recv) : -1;
  if (sd != dev || (ds >= 0 && ds != dev) || (dd >= 0 && dd != dev)) {
    nmisuse(
        "%s: the communicator of device %d (rank %d of %d) got a stream of device %d, send memory of "
        "device %d, recv memory of device %d",
        call, dev, o->comm->rank, o->comm->nranks, sd, ds, dd);
    return FALSE;
  }
  return TRUE;
}

static size_t in_bytes(const Op *o, guint32 R) {
  return o->count * dr_elem_size(o->type) * (o->op == F_RS ? R : 1);
}

/* Runs batch `b`: every input copied first, then every output written. */
static void run_batch(Batch *b) {
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) colls = g_array_copy(b->colls);
  g_autoptr(GArray) pairs = g_array_copy(b->pairs);
  for (guint k = 0; k < colls->len; k++) {
    Coll *c = &g_array_index(colls, Coll, k);
    for (guint32 r = 0; r < c->R; r++) {
      void *copy = g_memdup2(c->send[r], MAX(in_bytes(&c->o, c->R), 1));
      g_ptr_array_add(keep, copy);
      c->send[r] = copy;
    }
  }
  for (guint k = 0; k < pairs->len; k++) {
    Pair *q = &g_array_index(pairs, Pair, k);
    void *copy = g_memdup2(q->src, MAX(q->bytes, 1));
    g_ptr_array_add(keep, copy);
    q->src = copy;
  }
  for (guint k = 0; k < colls->len; k++) {
    const Coll *c = &g_array_index(colls, Coll, k);
    guint32 R = c->R;
    size_t bytes = c->o.count * dr_elem_size(c->o.type);
    g_autofree char *all = g_malloc(MAX(R * bytes, 1));
    switch (c->o.op) {
      case F_ALLREDUCE:
      case F_REDUCE:
        for (guint32 r = 0; r < R; r++) memcpy(all + r * bytes, c->send[r], bytes);
        for (guint32 r = 0; r < R; r++)
          if (c->o.op == F_ALLREDUCE || (guint32)c->o.root == r)
            dr__reduce_blocks(c->o.type, c->o.reduce, all, c->o.count, R, c->o.count, c->recv[r]);
        break;
      case F_BCAST:
        for (guint32 r = 0; r < R; r++) memmove(c->recv[r], c->send[c->o.root], bytes);
        break;
      case F_ALLGATHER:
        for (guint32 r = 0; r < R; r++)
          for (guint32 i = 0; i < R; i++) memcpy((char *)c->recv[r] + i * bytes, c->send[i], bytes);
        break;
      case F_RS:
        for (guint32 r = 0; r < R; r++) {
          for (guint32 i = 0; i < R; i++)
            memcpy(all + i * bytes, (const char *)c->send[i] + r * bytes, bytes);
          dr__reduce_blocks(c->o.type, c->o.reduce, all, c->o.count, R, c->o.count, c->recv[r]);
        }
        break;
      case F_SEND:
      case F_RECV:
        break;
    }
  }
  for (guint k = 0; k < pairs->len; k++) {
    const Pair *q = &g_array_index(pairs, Pair, k);
    memmove(q->dst, q->src, q->bytes);
  }
}

/* One stream's item of a batch: the last of a launch computes it. */
static void batch_item(void *data) {
  Batch *b = data;
  if (++b->ran % b->items == 0) run_batch(b);
}

static gboolean same_call(const Op *a, const Op *b) {
  return a->op == b->op && a->count == b->count && a->type == b->type && a->reduce == b->reduce &&
         a->root == b->root;
}

/* Matches clique `clique`'s operations among `ops` across its ranks and
 * enqueues them as one batch; ncclInvalidUsage (a misuse noted) when a
 * rank's part is missing or the ranks disagree: NCCL would hang. */
static DrNcclResult launch_clique(const Op *ops, guint n, int clique) {
  guint32 R = 0;
  g_autoptr(GPtrArray) streams = g_ptr_array_new();
  GArray *per[DR_FAKE_MAX_DEVICES] = {NULL}; /* Op *, collectives of rank r */
  g_autoptr(GArray) sends = g_array_new(FALSE, FALSE, sizeof(const Op *));
  g_autoptr(GArray) recvs = g_array_new(FALSE, FALSE, sizeof(const Op *));
  for (guint i = 0; i < n; i++) {
    const Op *o = &ops[i];
    if (o->comm->clique != clique) continue;
    R = (guint32)o->comm->nranks;
    if (!g_ptr_array_find(streams, o->stream, NULL)) g_ptr_array_add(streams, o->stream);
    if (o->op == F_SEND || o->op == F_RECV) {
      g_array_append_val(o->op == F_SEND ? sends : recvs, o);
      continue;
    }
    int r = o->comm->rank;
    if (per[r] == NULL) per[r] = g_array_new(FALSE, FALSE, sizeof(const Op *));
    g_array_append_val(per[r], o);
  }
  Batch *b = g_new0(Batch, 1);
  b->colls = g_array_new(FALSE, FALSE, sizeof(Coll));
  b->pairs = g_array_new(FALSE, FALSE, sizeof(Pair));
  DrNcclResult rc = 0;
  guint n0 = per[0] ? per[0]->len : 0;
  for (guint32 r = 0; r < R && rc == 0; r++)
    if ((per[r] ? per[r]->len : 0) != n0) {
      nmisuse(
          "ncclGroupEnd: rank %u of a clique of %u has %u collectives in the group, rank 0 %u (a device's "
          "call left out: NCCL would hang)",
          r, R, per[r] ? per[r]->len : 0, n0);
      rc = 5;
    }
  for (guint k = 0; k < n0 && rc == 0; k++) {
    Coll c = {.o = *g_array_index(per[0], const Op *, k), .R = R};
    gboolean hung = FALSE;
    for (guint32 r = 0; r < R && rc == 0; r++) {
      const Op *o = g_array_index(per[r], const Op *, k);
      if (!same_call(o, &c.o)) {
        nmisuse("ncclGroupEnd: collective %u of the group differs between rank 0 and rank %u", k, r);
        rc = 5;
      }
      hung |= o->hung;
      c.send[r] = o->send;
      c.recv[r] = o->recv;
    }
    if (rc == 0 && !hung) {
      g_array_append_val(b->colls, c);
      if (R > 1) dr_fake_nccl.clique_colls++;
    }
  }
  /* The k-th send from a to b meets b's k-th receive from a. */
  g_autofree guint8 *used = g_new0(guint8, MAX(recvs->len, 1));
  for (guint i = 0; i < sends->len && rc == 0; i++) {
    const Op *s = g_array_index(sends, const Op *, i);
    guint j = 0;
    for (; j < recvs->len; j++) {
      const Op *q = g_array_index(recvs, const Op *, j);
      if (!used[j] && q->comm->rank == s->root && q->root == s->comm->rank) break;
    }
    if (j == recvs->len || g_array_index(recvs, const Op *, j)->count != s->count) {
      nmisuse("ncclGroupEnd: a send from rank %d to rank %d has no matching receive in the group",
              s->comm->rank, s->root);
      rc = 5;
      break;
    }
    used[j] = 1;
    const Op *q = g_array_index(recvs, const Op *, j);
    if (!s->hung && !q->hung) {
      Pair p = {s->send, q->recv, s->count * dr_elem_size(s->type)};
      g_array_append_val(b->pairs, p);
    }
  }
  for (guint j = 0; j < recvs->len && rc == 0; j++)
    if (!used[j]) {
      nmisuse("ncclGroupEnd: a receive has no matching send in the group");
      rc = 5;
    }
  for (guint32 r = 0; r < DR_FAKE_MAX_DEVICES; r++)
    if (per[r]) g_array_unref(per[r]);
  if (rc != 0 || (b->colls->len == 0 && b->pairs->len == 0)) {
    batch_free(b);
    return rc;
  }
  if (batches == NULL) batches = g_ptr_array_new_with_free_func((GDestroyNotify)batch_free);
  g_ptr_array_add(batches, b);
  b->items = streams->len;
  for (guint i = 0; i < streams->len; i++)
    if (!dr_fake_library_work(streams->pdata[i], "nccl", batch_item, b)) return 5;
  return 0;
}

/* Launches `ops` (a group's, or one call's): a job's through MPI, each
 * clique's as one batch. */
static DrNcclResult launch(const Op *ops, guint n) {
  g_autoptr(GArray) job = g_array_new(FALSE, FALSE, sizeof(Op));
  for (guint i = 0; i < n; i++)
    if (ops[i].comm->clique == 0 && !ops[i].hung) g_array_append_val(job, ops[i]);
  if (job->len) run_all((const Op *)(void *)job->data, job->len);
  DrNcclResult rc = 0;
  for (int c = 1; c <= cliques && rc == 0; c++) rc = launch_clique(ops, n, c);
  return rc;
}

static DrNcclResult submit(const char *name, DrNcclComm comm, Op o) {
  DrNcclResult rc = tick(name);
  if (rc) return rc;
  DrFakeNccl *f = &dr_fake_nccl;
  o.comm = comm_of(name, comm);
  if (o.comm == NULL || !placed(name, &o)) {
    if (f->depth > 0) group_bad = TRUE;
    return 5; /* ncclInvalidUsage */
  }
  if (++data_ops == f->async_at) o.comm->async = f->async_code ? f->async_code : 6; /* ncclRemoteError */
  o.hung = o.comm->async != 0;
  if (f->depth > 0) {
    if (queued == NULL) queued = g_array_new(FALSE, FALSE, sizeof(Op));
    g_array_append_val(queued, o);
    return 0;
  }
  if (o.comm->clique && o.comm->nranks > 1) {
    nmisuse(
        "%s outside ncclGroupStart/End on a communicator of %d devices of one process (NCCL would hang: "
        "every device's call goes in one group)",
        name, o.comm->nranks);
    return 5;
  }
  return launch(&o, 1);
}

static DrNcclResult f_version(int *v) {
  *v = 22809;
  return tick("ncclGetVersion");
}
static DrNcclResult f_uid(DrNcclUniqueId *id) {
  DrNcclResult rc = tick("ncclGetUniqueId");
  if (rc) return rc;
  memset(id, 0, sizeof *id);
  guint64 v = ((guint64)getpid() << 32) ^ g_random_int() ^ ((guint64)g_random_int() << 16);
  memcpy(id->internal, &v, sizeof v);
  g_strlcpy(id->internal + 8, "fake-nccl-id", sizeof id->internal - 8);
  dr_fake_nccl.made_id = *id;
  dr_fake_nccl.unique_ids++;
  return 0;
}
static DrNcclResult f_init_all(DrNcclComm *out, int ndev, const int *devs) {
  DrNcclResult rc = tick("ncclCommInitAll");
  if (rc) return rc;
  if (ndev < 1 || ndev > DR_FAKE_MAX_DEVICES) return 4; /* ncclInvalidArgument */
  for (int i = 0; i < ndev; i++)
    for (int j = 0; j < i; j++)
      if (devs[i] == devs[j]) {
        nmisuse("ncclCommInitAll: device %d twice (NCCL: duplicate GPU)", devs[i]);
        return 5;
      }
  cliques++;
  for (int i = 0; i < ndev; i++) out[i] = (DrNcclComm)(void *)new_comm(cliques, i, ndev, devs[i]);
  dr_fake_nccl.init_alls++;
  dr_fake_nccl.init_all_ndev = ndev;
  for (int i = 0; i < ndev && i < 8; i++) dr_fake_nccl.init_all_devs[i] = devs[i];
  return 0;
}
static DrNcclResult f_init_rank(DrNcclComm *c, int n, DrNcclUniqueId id, int r) {
  DrNcclResult rc = tick("ncclCommInitRank");
  if (rc) return rc;
  if (n < 1 || r < 0 || r >= n) return 4; /* ncclInvalidArgument */
  dr_fake_nccl.init_nranks = n;
  dr_fake_nccl.init_rank = r;
  dr_fake_nccl.init_id = id;
  dr_fake_nccl.init_ranks++;
  *c = (DrNcclComm)(void *)new_comm(0, r, n, dr_fake_current_device());
  return 0;
}
/* Releases are traced, not counted: they cannot be failed (dagrun has
 * nothing left to do about a failed release), like tests/fault's. */
static void trace_only(const char *name) {
  g_string_append_printf(dr_fake_nccl.trace, "%s%s", dr_fake_nccl.trace->len ? " " : "", name);
}
static DrNcclResult release(const char *name, DrNcclComm h) {
  trace_only(name);
  FComm *c = comm_of(name, h);
  if (c == NULL) return 4;
  c->gone = TRUE;
  dr_fake_nccl.live--;
  return 0;
}
static DrNcclResult f_destroy(DrNcclComm c) { return release("ncclCommDestroy", c); }
static DrNcclResult f_abort(DrNcclComm c) {
  dr_fake_nccl.aborts++;
  return release("ncclCommAbort", c);
}
static DrNcclResult f_async(DrNcclComm h, DrNcclResult *r) {
  DrNcclResult rc = tick("ncclCommGetAsyncError");
  if (rc) return rc;
  FComm *c = comm_of("ncclCommGetAsyncError", h);
  if (c == NULL) return 4;
  *r = c->async;
  if (c->async && dr_fake_nccl.async_late > 0) {
    dr_fake_nccl.async_late--;
    *r = 0;
  }
  if (*r) dr_fake_nccl.async_polls++;
  return 0;
}
static DrNcclResult f_group_start(void) {
  DrNcclResult rc = tick("ncclGroupStart");
  if (rc == 0 && dr_fake_nccl.depth++ == 0) group_bad = FALSE;
  return rc;
}
static DrNcclResult f_group_end(void) {
  /* Ends the group even when it fails, as NCCL does. */
  DrNcclResult rc = tick("ncclGroupEnd");
  if (dr_fake_nccl.depth > 0 && --dr_fake_nccl.depth == 0) {
    if (rc == 0 && !group_bad && queued) rc = launch((const Op *)(void *)queued->data, queued->len);
    if (queued) g_array_set_size(queued, 0);
    group_bad = FALSE;
    dr_fake_nccl.groups++;
  }
  return rc;
}
static DrNcclResult f_allreduce(const void *s, void *d, size_t n, int t, int op, DrNcclComm c,
                                cudaStream_t st) {
  return submit("ncclAllReduce", c,
                (Op){F_ALLREDUCE, s, d, n, elem_of(t), reduce_of(op), 0, NULL, st, FALSE});
}
static DrNcclResult f_bcast(const void *s, void *d, size_t n, int t, int root, DrNcclComm c,
                            cudaStream_t st) {
  return submit("ncclBroadcast", c, (Op){F_BCAST, s, d, n, elem_of(t), DR_REDUCE_SUM, root, NULL, st, FALSE});
}
static DrNcclResult f_reduce(const void *s, void *d, size_t n, int t, int op, int root, DrNcclComm c,
                             cudaStream_t st) {
  return submit("ncclReduce", c, (Op){F_REDUCE, s, d, n, elem_of(t), reduce_of(op), root, NULL, st, FALSE});
}
static DrNcclResult f_allgather(const void *s, void *d, size_t n, int t, DrNcclComm c, cudaStream_t st) {
  return submit("ncclAllGather", c,
                (Op){F_ALLGATHER, s, d, n, elem_of(t), DR_REDUCE_SUM, 0, NULL, st, FALSE});
}
static DrNcclResult f_rs(const void *s, void *d, size_t n, int t, int op, DrNcclComm c, cudaStream_t st) {
  return submit("ncclReduceScatter", c, (Op){F_RS, s, d, n, elem_of(t), reduce_of(op), 0, NULL, st, FALSE});
}
static DrNcclResult f_send(const void *s, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  return submit("ncclSend", c, (Op){F_SEND, s, NULL, n, elem_of(t), DR_REDUCE_SUM, peer, NULL, st, FALSE});
}
static DrNcclResult f_recv(void *d, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  return submit("ncclRecv", c, (Op){F_RECV, NULL, d, n, elem_of(t), DR_REDUCE_SUM, peer, NULL, st, FALSE});
}
static const char *f_err(DrNcclResult r) { return "unhandled system error (fake)"; }

static const DrNcclApi table = {
    .ncclGetVersion = f_version,
    .ncclGetUniqueId = f_uid,
    .ncclCommInitAll = f_init_all,
    .ncclCommInitRank = f_init_rank,
    .ncclCommDestroy = f_destroy,
    .ncclCommAbort = f_abort,
    .ncclCommGetAsyncError = f_async,
    .ncclGroupStart = f_group_start,
    .ncclGroupEnd = f_group_end,
    .ncclAllReduce = f_allreduce,
    .ncclBroadcast = f_bcast,
    .ncclReduce = f_reduce,
    .ncclAllGather = f_allgather,
    .ncclReduceScatter = f_rs,
    .ncclSend = f_send,
    .ncclRecv = f_recv,
    .ncclGetErrorString = f_err,
};

const DrNcclApi *dr_fake_nccl_api(void) { return &table; }

const char *dr_fake_nccl_id_hex(const DrNcclUniqueId *id) {
  static char hex[17];
  for (int i = 0; i < 8; i++) g_snprintf(hex + 2 * i, 3, "%02x", (guint8)id->internal[i]);
  return hex;
}
