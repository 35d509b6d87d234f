/* fake_nccl.h: a fake NCCL behind dagrun's own table (DrNcclApi,
 * backends/nccl_api.h), for the CUDA backend's NCCL paths on the CPU with
 * the fake CUDA runtime of tests/fault (device memory is host memory
 * there, and work happens when it is issued).
 *
 * It models what dagrun relies on: a communicator is made by
 * ncclCommInitAll (one process) or ncclCommInitRank (the MPI job's
 * shape, and the id every rank must share, are recorded); operations
 * inside ncclGroupStart/End are deferred to the outermost ncclGroupEnd,
 * where NCCL launches them, so work recorded "after" an operation but
 * before its group ends sees the old data, as it would on a GPU. The data
 * moves through the process's MPI table (dr__mpi_world: a real MPI under
 * mpirun, tests/mpi/fake_mpi.c in a unit test), reduced with the host
 * model's reducer (backends/reduce.h), or within the process when there is
 * no job (one rank). Every call is counted and traced; fail_at makes the
 * Nth call fail with ncclSystemError (or a chosen code) and no effect.
 * Single-threaded, process-global, like the CUDA backend's issue. Not
 * NCCL: no streams, no asynchrony, no GPU. */
#ifndef DAGRUN_TESTS_MPI_FAKE_NCCL_H
#define DAGRUN_TESTS_MPI_FAKE_NCCL_H

#include <glib.h>

#include "backends/nccl_api.h"

G_BEGIN_DECLS

typedef struct {
  guint64 calls;    /* every call but ncclGetErrorString */
  guint64 fail_at;  /* the call to fail (1-based; 0: none) */
  int fail_code;    /* its NCCL result (0: ncclSystemError, 2) */
  gint64 live;      /* communicators made and not destroyed or aborted */
  guint aborts;     /* ncclCommAbort calls */
  guint unique_ids; /* ncclGetUniqueId calls */
  guint init_ranks; /* successful ncclCommInitRank calls */
  int init_nranks;  /* the last ncclCommInitRank's arguments */
  int init_rank;
  DrNcclUniqueId init_id;
  DrNcclUniqueId made_id; /* the last id ncclGetUniqueId made */
  guint groups;           /* outermost groups ended */
  int depth;              /* ncclGroupStart nesting now */
  GString *trace;         /* "ncclGroupStart ncclAllReduce ...", space-separated */
} DrFakeNccl;

/* The fake's state (reset it with dr_fake_nccl_reset). */
extern DrFakeNccl dr_fake_nccl;

/* Forgets everything (keeps nothing deferred). */
void dr_fake_nccl_reset(void);
/* The table to hand to dr_nccl_api_set. */
const DrNcclApi *dr_fake_nccl_api(void);
/* The first 8 bytes of `id` as 16 hex digits (static storage). */
const char *dr_fake_nccl_id_hex(const DrNcclUniqueId *id);

G_END_DECLS

#endif
