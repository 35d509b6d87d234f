/* fake_nccl.h: a fake NCCL behind dagrun's own table (DrNcclApi,
 * backends/nccl_api.h), for the CUDA backend's NCCL paths on the CPU with
 * the fake CUDA runtime of tests/fault (device memory is host memory
 * there, and work happens when it is issued).
 *
 * It models what dagrun relies on. A communicator is made by
 * ncclCommInitAll (one process: a clique of ndev ranks, rank i on
 * devlist[i]) or ncclCommInitRank (the MPI job's shape, and the id every
 * rank must share, are recorded). Operations inside ncclGroupStart/End
 * are deferred to the outermost ncclGroupEnd, where NCCL launches them,
 * so work recorded "after" an operation but before its group ends sees
 * the old data, as it would on a GPU. A job's data moves through the
 * process's MPI table (dr__mpi_world: a real MPI under mpirun,
 * tests/mpi/fake_mpi.c in a unit test), reduced with the host model's
 * reducer (backends/reduce.h). A clique's operations are matched across
 * its ranks at the group's end (the k-th operation of every rank is one
 * collective: the same op, count, type, reduction and root; the k-th send
 * from a to b meets b's k-th receive from a) and computed across the
 * ranks' buffers, every input read before any output is written (a group
 * runs concurrently); the work is enqueued on the ranks' streams through
 * dr_fake_library_work, so a capture records it and a graph replay
 * performs it. What NCCL would hang on or refuse is a misuse (recorded,
 * and the call answers ncclInvalidUsage): a call on a clique of several
 * ranks outside a group, a group that leaves a rank's part of a
 * collective out or disagrees across ranks, a stream or buffer of another
 * device than the communicator's, a communicator destroyed or unknown.
 * Every call is counted and traced; fail_at makes the Nth call fail with
 * ncclSystemError (or a chosen code) and no effect (a group holding a
 * failed call launches nothing). async_at gives the communicator of the
 * Nth data operation an asynchronous error (ncclRemoteError, or
 * async_code): that operation never completes (a dead peer) and
 * ncclCommGetAsyncError reports the error (after async_late polls that
 * still say ncclSuccess: NCCL notices a dead peer late) until the
 * communicator is aborted. Single-threaded, process-global, like the CUDA backend's
 * issue. Not NCCL: no asynchrony of its own, no GPU. */
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
  guint init_alls;        /* successful ncclCommInitAll calls */
  int init_all_ndev;      /* the last one's ndev and devlist */
  int init_all_devs[8];
  guint64 async_at;   /* the data operation (1-based) whose communicator fails; 0: none */
  int async_code;     /* its asynchronous error (0: ncclRemoteError, 6) */
  guint async_late;   /* polls of the failed communicator that still answer success first */
  guint async_polls;  /* ncclCommGetAsyncError calls that reported an error */
  guint clique_colls; /* collectives computed across a clique of several ranks */
  GString *misuse;    /* what NCCL would hang on or refuse, one per line; "" when none */
} DrFakeNccl;

/* The fake's state (reset it with dr_fake_nccl_reset). */
extern DrFakeNccl dr_fake_nccl;

/* Forgets everything (keeps nothing deferred). */
void dr_fake_nccl_reset(void);
/* The table to hand to dr_nccl_api_set. */
const DrNcclApi *dr_fake_nccl_api(void);
/* Whether a live communicator has an asynchronous error (async_at): on
 * a GPU, its collective would never finish until it is aborted. */
gboolean dr_fake_nccl_hung(void);
/* The first 8 bytes of `id` as 16 hex digits (static storage). */
const char *dr_fake_nccl_id_hex(const DrNcclUniqueId *id);

G_END_DECLS

#endif
