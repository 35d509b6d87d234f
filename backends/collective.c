/* collective.c: collectives computed in one process, the host backend's
 * model of NCCL (docs/multi-gpu.md): the participants' buffers are
 * separate allocations (separate memory spaces, one per device), and a
 * collective node reads every participant's src and writes every dst, as
 * NCCL's ring would, element by element. Integers reduce exactly in 64
 * bits (avg: the sum divided by the rank count, truncated, as ncclAvg);
 * floating types in double, stored once (rounded to nearest even for
 * f16/bf16). Not NCCL, not MPI: the CUDA backend's NCCL calls are in
 * cuda/nccl.c, the multi-process host model is the MPI layer's. Cost:
 * O(ranks x elements) per node. The reducer itself (reduce.h) is defined
 * here and shared with the multi-process half. */
#include <string.h>

#include "backends/backend.h"
#include "backends/reduce.h"

gboolean dr__reduce_is_float(DrElemType t) {
  return t == DR_ELEM_F16 || t == DR_ELEM_BF16 || t == DR_ELEM_F32 || t == DR_ELEM_F64;
}

DrReduceVal dr__reduce_combine(DrReduceOp r, gboolean fl, DrReduceVal a, DrReduceVal b) {
  switch (r) {
    case DR_REDUCE_SUM:
    case DR_REDUCE_AVG:
      a.f += b.f;
      a.i = (gint64)((guint64)a.i + (guint64)b.i);
      break;
    case DR_REDUCE_PROD:
      a.f *= b.f;
      a.i = (gint64)((guint64)a.i * (guint64)b.i);
      break;
    case DR_REDUCE_MIN:
      if (fl ? b.f < a.f : b.i < a.i) a = b;
      break;
    case DR_REDUCE_MAX:
      if (fl ? b.f > a.f : b.i > a.i) a = b;
      break;
    case DR_N_REDUCES:
      break;
  }
  return a;
}

DrReduceVal dr__reduce_finish(DrReduceOp r, guint32 ranks, DrReduceVal acc) {
  if (r == DR_REDUCE_AVG) {
    acc.f /= ranks;
    acc.i /= (gint64)ranks;
  }
  return acc;
}

void dr__reduce_blocks(DrElemType t, DrReduceOp op, const void *blocks, guint64 stride, guint32 ranks,
                       guint64 count, void *dst) {
  gboolean fl = dr__reduce_is_float(t);
  guint64 esz = dr_elem_size(t);
  for (guint64 e = 0; e < count; e++) {
    DrReduceVal acc = {0};
    dr__elem_load(t, blocks, e, &acc.f, &acc.i);
    for (guint32 r = 1; r < ranks; r++) {
      DrReduceVal v = {0};
      dr__elem_load(t, (const char *)blocks + r * stride * esz, e, &v.f, &v.i);
      acc = dr__reduce_combine(op, fl, acc, v);
    }
    acc = dr__reduce_finish(op, ranks, acc);
    dr__elem_store(t, dst, e, acc.f, acc.i);
  }
}

typedef struct {
  const DrGraph *g;
  const DrNode *n;
  void *const *bases;
  DrElemType type;
  guint32 ranks;
} Ctx;

/* Participant r's src (dst: FALSE) base pointer, at its slice's start. */
static void *part(const Ctx *c, guint32 r, gboolean dst) {
  guint32 step = c->n->op == DR_OP_SEND || c->n->op == DR_OP_RECV ? 1 : 2;
  return dr__slice_ptr(c->g, c->bases, dr__node_access(c->g, c->n, step * r + (dst && step == 2 ? 1 : 0)));
}

static DrReduceVal load(const Ctx *c, const void *p, guint64 i) {
  DrReduceVal v = {0};
  dr__elem_load(c->type, p, i, &v.f, &v.i);
  return v;
}

/* The reduction over ranks of src[r][off + e]. */
static DrReduceVal reduce_at(const Ctx *c, guint64 off, guint64 e) {
  gboolean fl = dr__reduce_is_float(c->type);
  DrReduceVal acc = load(c, part(c, 0, FALSE), off + e);
  for (guint32 r = 1; r < c->ranks; r++)
    acc = dr__reduce_combine(c->n->reduce, fl, acc, load(c, part(c, r, FALSE), off + e));
  return dr__reduce_finish(c->n->reduce, c->ranks, acc);
}

static void store(const Ctx *c, void *p, guint64 i, DrReduceVal v) {
  dr__elem_store(c->type, p, i, v.f, v.i);
}

void dr__collective_host_run(const DrGraph *graph, const DrNode *n, void *const *bases) {
  g_return_if_fail(DR_OP_IS_COLLECTIVE(n->op) && n->n_parts > 0);
  const DrAccess *a0 = dr__node_access(graph, n, 0);
  Ctx c = {graph, n, bases, dr_graph_buffer(graph, a0->buffer)->type, n->n_parts};
  guint64 esz = dr_elem_size(c.type);
  guint64 c_src = a0->end - a0->begin;
  guint64 c_dst =
      n->access_count > 1 ? dr__node_access(graph, n, 1)->end - dr__node_access(graph, n, 1)->begin : 0;
  guint32 R = c.ranks;
  switch (n->op) {
    case DR_OP_ALLREDUCE:
      /* element by element: each e's inputs are read before its outputs
       * are written, so in place is safe */
      for (guint64 e = 0; e < c_src; e++) {
        DrReduceVal v = reduce_at(&c, 0, e);
        for (guint32 r = 0; r < R; r++) store(&c, part(&c, r, TRUE), e, v);
      }
      break;
    case DR_OP_REDUCE:
      for (guint64 e = 0; e < c_src; e++) store(&c, part(&c, (guint32)n->root, TRUE), e, reduce_at(&c, 0, e));
      break;
    case DR_OP_BROADCAST: {
      const void *from = part(&c, (guint32)n->root, FALSE);
      for (guint32 r = 0; r < R; r++)
        if (part(&c, r, TRUE) != from) memmove(part(&c, r, TRUE), from, c_src * esz);
      break;
    }
    case DR_OP_ALLGATHER:
      for (guint32 r = 0; r < R; r++)
        for (guint32 i = 0; i < R; i++)
          memcpy((char *)part(&c, r, TRUE) + i * c_src * esz, part(&c, i, FALSE), c_src * esz);
      break;
    case DR_OP_REDUCESCATTER:
      for (guint32 r = 0; r < R; r++)
        for (guint64 e = 0; e < c_dst; e++) store(&c, part(&c, r, TRUE), e, reduce_at(&c, r * c_dst, e));
      break;
    case DR_OP_ALLTOALL: {
      guint64 blk = c_src / R * esz;
      for (guint32 r = 0; r < R; r++)
        for (guint32 i = 0; i < R; i++)
          memcpy((char *)part(&c, r, TRUE) + i * blk, (const char *)part(&c, i, FALSE) + r * blk, blk);
      break;
    }
    default:
      /* send and recv pair processes: the MPI layer's */
      break;
  }
}
