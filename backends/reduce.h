/* reduce.h: the one reducer of the host model of NCCL, shared by its two
 * halves: collective.c (one process, several devices) and mpi_coll.c
 * (several ranks), so both compute a reduction bit for bit alike.
 * Integers reduce exactly in 64 bits (wrapping like NCCL's unsigned
 * arithmetic), floating types in double; avg divides once at the end (the
 * truncated quotient for integers, as ncclAvg). Storing the result in the
 * element type (rounding once) is dr__elem_store's. Implemented in
 * collective.c. */
#ifndef DAGRUN_BACKENDS_REDUCE_H
#define DAGRUN_BACKENDS_REDUCE_H

#include <glib.h>

#include "ir/graph.h"

G_BEGIN_DECLS

/* One element as the reducer holds it: f for floating types, i (exact)
 * for integer types; dr__elem_load fills both. */
typedef struct {
  double f;
  gint64 i;
} DrReduceVal;

/* TRUE for the floating element types (f16, bf16, f32, f64). */
gboolean dr__reduce_is_float(DrElemType type);

/* The reduction `op` of acc and v (acc first: rank order); avg sums. */
DrReduceVal dr__reduce_combine(DrReduceOp op, gboolean is_float, DrReduceVal acc, DrReduceVal v);

/* Finishes a reduction over `ranks` values: divides for avg, else
 * returns acc unchanged. */
DrReduceVal dr__reduce_finish(DrReduceOp op, guint32 ranks, DrReduceVal acc);

/* dst[e] = the reduction `op` in rank order of blocks[r * stride + e] for
 * r < ranks, e < count (elements of `type`), stored once in `type`. dst
 * may be one of the blocks only when count <= stride and it is block 0
 * (each element is read before it is written). */
void dr__reduce_blocks(DrElemType type, DrReduceOp op, const void *blocks, guint64 stride, guint32 ranks,
                       guint64 count, void *dst);

G_END_DECLS

#endif
