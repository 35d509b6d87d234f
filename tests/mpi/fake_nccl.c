/* fake_nccl.c: the fake NCCL of fake_nccl.h. Each data operation is an
 * Op, run at once or, inside a group, queued and run at the outermost
 * ncclGroupEnd, every input copied first (a group runs concurrently):
 * the sends of a group first (MPI_Isend), then every other
 * operation in order (a receive blocks in MPI_Recv), then the sends are
 * waited for, so a group of sends and receives in a ring cannot deadlock,
 * as NCCL promises for a group. Collectives across ranks use MPI's world
 * communicator: they run on the issuing thread in issue order, which is
 * the same on every rank, so they pair up. */
#include "tests/mpi/fake_nccl.h"

#include <string.h>
#include <unistd.h>

#include "backends/mpi.h"
#include "backends/reduce.h"

DrFakeNccl dr_fake_nccl;

typedef enum { F_ALLREDUCE, F_BCAST, F_REDUCE, F_ALLGATHER, F_RS, F_SEND, F_RECV } FOp;

typedef struct {
  FOp op;
  const void *send;
  void *recv;
  size_t count;
  DrElemType type;
  DrReduceOp reduce;
  int root; /* or peer */
} Op;

static GArray *queued; /* Op, inside a group */

void dr_fake_nccl_reset(void) {
  /* The trace's GString lives for the process (a test's last reset keeps
   * it; nothing else is held). */
  GString *t = dr_fake_nccl.trace;
  memset(&dr_fake_nccl, 0, sizeof dr_fake_nccl);
  dr_fake_nccl.trace = t ? t : g_string_new(NULL);
  g_string_truncate(dr_fake_nccl.trace, 0);
  if (queued) g_array_set_size(queued, 0);
}

/* Counts and traces the call; its result (non-zero: fail it). */
static DrNcclResult tick(const char *name) {
  DrFakeNccl *f = &dr_fake_nccl;
  g_string_append_printf(f->trace, "%s%s", f->trace->len ? " " : "", name);
  if (++f->calls != f->fail_at) return 0;
  g_string_append(f->trace, "!");
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

static DrNcclResult submit(const char *name, Op o) {
  DrNcclResult rc = tick(name);
  if (rc) return rc;
  if (dr_fake_nccl.depth > 0) {
    if (queued == NULL) queued = g_array_new(FALSE, FALSE, sizeof(Op));
    g_array_append_val(queued, o);
  } else {
    run_all(&o, 1);
  }
  return 0;
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
static DrNcclResult f_init_all(DrNcclComm *comms, int ndev, const int *devs) {
  DrNcclResult rc = tick("ncclCommInitAll");
  if (rc) return rc;
  for (int i = 0; i < ndev; i++) comms[i] = (DrNcclComm)GINT_TO_POINTER(0x100 + i);
  dr_fake_nccl.live += ndev;
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
  dr_fake_nccl.live++;
  *c = (DrNcclComm)GINT_TO_POINTER(0x200 + r);
  return 0;
}
/* Releases are traced, not counted: they cannot be failed (dagrun has
 * nothing left to do about a failed release), like tests/fault's. */
static void trace_only(const char *name) {
  g_string_append_printf(dr_fake_nccl.trace, "%s%s", dr_fake_nccl.trace->len ? " " : "", name);
}
static DrNcclResult f_destroy(DrNcclComm c) {
  dr_fake_nccl.live--;
  trace_only("ncclCommDestroy");
  return 0;
}
static DrNcclResult f_abort(DrNcclComm c) {
  dr_fake_nccl.live--;
  dr_fake_nccl.aborts++;
  trace_only("ncclCommAbort");
  return 0;
}
static DrNcclResult f_async(DrNcclComm c, DrNcclResult *r) {
  *r = 0;
  return tick("ncclCommGetAsyncError");
}
static DrNcclResult f_group_start(void) {
  DrNcclResult rc = tick("ncclGroupStart");
  if (rc == 0) dr_fake_nccl.depth++;
  return rc;
}
static DrNcclResult f_group_end(void) {
  /* Ends the group even when it fails, as NCCL does. */
  DrNcclResult rc = tick("ncclGroupEnd");
  if (dr_fake_nccl.depth > 0 && --dr_fake_nccl.depth == 0) {
    if (rc == 0 && queued) run_all((const Op *)(void *)queued->data, queued->len);
    if (queued) g_array_set_size(queued, 0);
    dr_fake_nccl.groups++;
  }
  return rc;
}
static DrNcclResult f_allreduce(const void *s, void *d, size_t n, int t, int op, DrNcclComm c,
                                cudaStream_t st) {
  return submit("ncclAllReduce", (Op){F_ALLREDUCE, s, d, n, elem_of(t), reduce_of(op), 0});
}
static DrNcclResult f_bcast(const void *s, void *d, size_t n, int t, int root, DrNcclComm c,
                            cudaStream_t st) {
  return submit("ncclBroadcast", (Op){F_BCAST, s, d, n, elem_of(t), DR_REDUCE_SUM, root});
}
static DrNcclResult f_reduce(const void *s, void *d, size_t n, int t, int op, int root, DrNcclComm c,
                             cudaStream_t st) {
  return submit("ncclReduce", (Op){F_REDUCE, s, d, n, elem_of(t), reduce_of(op), root});
}
static DrNcclResult f_allgather(const void *s, void *d, size_t n, int t, DrNcclComm c, cudaStream_t st) {
  return submit("ncclAllGather", (Op){F_ALLGATHER, s, d, n, elem_of(t), DR_REDUCE_SUM, 0});
}
static DrNcclResult f_rs(const void *s, void *d, size_t n, int t, int op, DrNcclComm c, cudaStream_t st) {
  return submit("ncclReduceScatter", (Op){F_RS, s, d, n, elem_of(t), reduce_of(op), 0});
}
static DrNcclResult f_send(const void *s, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  return submit("ncclSend", (Op){F_SEND, s, NULL, n, elem_of(t), DR_REDUCE_SUM, peer});
}
static DrNcclResult f_recv(void *d, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  return submit("ncclRecv", (Op){F_RECV, NULL, d, n, elem_of(t), DR_REDUCE_SUM, peer});
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
