/* mpi_coll.h: collectives across the ranks of an MPI job on the host
 * backend (mpi_coll.c says how): the check that every rank's collectives
 * agree, and the communicators and buffers of one backend instance. Only
 * per_rank collective nodes (one buffer: "this rank's copy") go through
 * here, and only when the process joined a job of more than one rank;
 * everything else is collective.c's. */
#ifndef DAGRUN_BACKENDS_MPI_COLL_H
#define DAGRUN_BACKENDS_MPI_COLL_H

#include <glib.h>

#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct DrRankColls DrRankColls;

/* TRUE when `graph` has per_rank collectives and the process is one of
 * several ranks: they need dr__rank_colls_open. */
gboolean dr__rank_colls_needed(const DrGraph *graph);

/* Collective over the ranks (every rank calls it once before a run, the
 * library's dr_run does): compares every rank's collectives (file order;
 * op, id, element type, counts, reduction, root; send and receive aside).
 * FALSE with DR_ERROR_INVALID, "FILE:LINE:COL: error: collective K across
 * ranks disagrees: rank 0 has ..., rank R has ...", on every rank when
 * they differ (located at this rank's K-th collective); DR_ERROR_RUNTIME
 * when MPI fails. TRUE at once for a single process. */
gboolean dr__rank_colls_check(const DrGraph *graph, GError **error);

/* Collective over the ranks: a communicator per collective node and one
 * for point to point, send staging buffers. NULL with DR_ERROR_UNAVAILABLE
 * when MPI lacks MPI_THREAD_MULTIPLE, DR_ERROR_INVALID for a root or peer
 * that is not a rank, DR_ERROR_RUNTIME when MPI fails. The graph must
 * outlive it. */
DrRankColls *dr__rank_colls_open(const DrGraph *graph, GError **error);

/* Runs per_rank collective node `node` of this rank, its buffers at host
 * `bases`. Blocks until the other ranks' nodes have taken part (a send
 * only until its data is copied aside). FALSE with DR_ERROR_RUNTIME naming
 * the node and the MPI call. Thread-safe across distinct nodes. */
gboolean dr__rank_colls_run(DrRankColls *colls, DrId node, void *const *bases, GError **error);

/* Waits for the sends in flight, frees the communicators; NULL-safe. */
void dr__rank_colls_close(DrRankColls *colls);

G_END_DECLS

#endif
