/* mpi.h: the process's view of the ranks (DrMpiWorld) and how it joins
 * them: the launcher test and the plugin loader. The table itself is
 * mpi_api.h's. Implemented in mpi.c. */
#ifndef DAGRUN_BACKENDS_MPI_H
#define DAGRUN_BACKENDS_MPI_H

#include <glib.h>

#include "backends/mpi_api.h"

G_BEGIN_DECLS

/* The ranks this process belongs to. Without a launcher: rank 0 of 1, no
 * table. */
typedef struct {
  const DrMpiApi *api; /* NULL: a single process, no MPI */
  guint32 rank, size, local_rank;
  gboolean multiple;    /* MPI_THREAD_MULTIPLE granted */
  const char *launcher; /* the environment variable that said so, or NULL */
} DrMpiWorld;

/* The environment variable of a launcher found in the environment
 * (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK, ...), or NULL: whether this
 * process was started by mpirun or srun and should join its ranks. */
const char *dr__mpi_launcher(void);

/* Joins the ranks once per process: under a launcher, loads the plugin
 * (DAGRUN_MPI_PLUGIN, else libdagrun_mpi.so beside the executable, in
 * ../lib/dagrun/, ../backends/, then the loader's path), initialises MPI
 * and asks the world's shape; without one, rank 0 of 1. Idempotent: later
 * calls return the first result. NULL with DR_ERROR_UNAVAILABLE when
 * launched by mpirun but the plugin or libmpi cannot be loaded, or
 * DR_ERROR_RUNTIME when MPI_Init fails. */
const DrMpiWorld *dr__mpi_join(GError **error);

/* The world joined so far (rank 0 of 1 before dr__mpi_join). */
const DrMpiWorld *dr__mpi_world(void);

/* Tests: makes `api` the table (NULL: back to none) with the world it
 * reports, as if joined; returns the previous table. */
const DrMpiApi *dr__mpi_set_api(const DrMpiApi *api);

/* Finalizes MPI if it was joined (at exit). */
void dr__mpi_leave(void);

/* Sets `error` (DR_ERROR_RUNTIME) to "WHAT: CALL failed on rank R: TEXT
 * (CODE)" for the
 * failed return `rc` of `call`; returns FALSE. */
gboolean dr__mpi_fail(int rc, const char *what, const char *call, GError **error);

/* The CUDA backend's bootstrap across ranks: rank 0 makes the job's
 * ncclUniqueId (`make`, ncclGetUniqueId through the NCCL table, returns 0
 * on success) into id[len], and broadcasts a status and then the id over
 * MPI; every rank returns with the same bytes. Collective (every rank calls
 * it once per communicator, before ncclCommInitRank). FALSE with
 * DR_ERROR_RUNTIME on every rank when rank 0's `make` or MPI failed. */
gboolean dr__mpi_share_nccl_id(int (*make)(void *id), void *id, gsize len, GError **error);

/* Registers fn(data) to run before this process aborts the job
 * (dr_ranks_abort): the CUDA backend's ncclCommAbort of its
 * communicators, so that no rank waits in a kernel for a peer that is
 * gone. dr__mpi_unregister_abort removes it (at close). Thread-safe. */
void dr__mpi_register_abort(void (*fn)(void *data), void *data);
void dr__mpi_unregister_abort(void (*fn)(void *data), void *data);
/* Runs the registered functions, latest first (dr_ranks_abort). */
void dr__mpi_run_abort_hooks(void);

/* Ends the whole job with exit status `code`: the abort hooks, then
 * MPI_Abort (a single process: exit). For a failure the other ranks
 * cannot learn of, which would leave them waiting in a collective (the
 * host backend's worker that failed while others of its rank may be
 * blocked in MPI). Does not return. */
G_NORETURN void dr__mpi_abort_job(int code);

G_END_DECLS

#endif
