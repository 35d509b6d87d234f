/* fake_mpi.h: a fake MPI table for tests (fake_mpi.c): one process plays
 * rank `rank` of a job of `size`, every other rank holding the same data,
 * with a fail-the-Nth-call shim like tests/fault's fake CUDA runtime. */
#ifndef DAGRUN_TESTS_MPI_FAKE_MPI_H
#define DAGRUN_TESTS_MPI_FAKE_MPI_H

#include <glib.h>

#include "backends/mpi.h"

extern const DrMpiApi fake_mpi_api;

/* Forgets every count and injected failure; this process is `rank` of
 * `size`. Call before dr__mpi_set_api(&fake_mpi_api). */
void fake_mpi_reset(int rank, int size);
/* The Nth call from now fails (0: none). */
void fake_mpi_fail_at(guint64 n);
/* Calls made since the reset. */
guint64 fake_mpi_calls(void);
/* The code MPI_Abort was called with, or -1. */
int fake_mpi_aborted(void);
/* Communicators dup'd and not freed; sends started and not waited for. */
int fake_mpi_open_comms(void);
int fake_mpi_pending_sends(void);
/* The last rank's collectives fingerprint differs from this rank's. */
void fake_mpi_other_fingerprint(gboolean differs);

#endif
