/* mpi_api.h: the one table through which dagrun calls MPI, and the
 * process's view of the ranks (DrMpiWorld).
 *
 * dagrun's own binary never links libmpi: the MPI ABI differs between
 * implementations (Open MPI's MPI_COMM_WORLD and MPI_FLOAT are addresses
 * of global objects, MPICH's are integers), so the only code that includes
 * <mpi.h> is a small plugin, libdagrun_mpi.so (backends/mpi_plugin.c),
 * built against the system's MPI and dlopened when the process was started
 * by a launcher (mpirun). The table speaks plain C: element types are
 * DrElemType, reductions DrMpiReduce, communicators small integers the
 * plugin hands out (0 is the world). Every entry returns 0 or an MPI
 * error code whose text error_string gives; a fault-injection test swaps
 * the table (dr__mpi_set_api) like DrCudaApi's. This file is not a
 * transport: data moves through MPI (host backend) or NCCL (CUDA). */
#ifndef DAGRUN_BACKENDS_MPI_API_H
#define DAGRUN_BACKENDS_MPI_API_H

#include <stddef.h>
#include <stdint.h>

#include "include/dagrun/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised on any incompatible change of DrMpiApi: the loader refuses a
 * plugin built for another version. */
#define DR_MPI_ABI 1

/* X(ENUM_SUFFIX, spelling) */
#define DR_MPI_REDUCE_LIST(X) \
  X(SUM, "sum")               \
  X(PROD, "prod")             \
  X(MIN, "min")               \
  X(MAX, "max")

typedef enum {
#define DR_X(e, s) DR_MPI_REDUCE_##e,
  DR_MPI_REDUCE_LIST(DR_X)
#undef DR_X
      DR_MPI_N_REDUCES
} DrMpiReduce;

typedef struct {
  uint32_t abi;        /* DR_MPI_ABI */
  const char *library; /* "Open MPI v4.1.4", for messages */
  /* MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the host backend's
   * workers run collectives concurrently, each on its own communicator);
   * *multiple: whether MPI granted it. */
  int (*init)(int *multiple);
  int (*finalize)(void);
  /* The world's rank and size, and the rank among the processes of this
   * machine (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). */
  int (*world)(int *rank, int *size, int *local_rank);
  /* A duplicate of the world communicator (collective: every rank calls
   * it, in the same order); *comm > 0. */
  int (*comm_dup)(int *comm);
  int (*comm_free)(int comm);
  int (*barrier)(int comm);
  int (*bcast)(void *buf, size_t bytes, int root, int comm);
  /* count elements of `type`; DR_ELEM_F16/BF16 are refused by the plugin
   * (MPI has no such type): callers reduce those themselves. send ==
   * recv: in place. */
  int (*allreduce)(const void *send, void *recv, size_t count, DrElemType type, DrMpiReduce op, int comm);
  int (*allgather)(const void *send, void *recv, size_t bytes_per_rank, int comm);
  int (*alltoall)(const void *send, void *recv, size_t bytes_per_rank, int comm);
  /* Rank `root` receives every rank's `bytes` (which may differ) into
   * recv at displs[r], counts[r] bytes each; others pass NULLs. */
  int (*gatherv)(const void *send, int bytes, void *recv, const int *counts, const int *displs, int root,
                 int comm);
  /* Point to point: isend starts a send of buf (which must stay intact
   * until wait(*req) returns), recv blocks until the message arrived. */
  int (*isend)(const void *buf, size_t bytes, int peer, int tag, int comm, int *req);
  int (*wait)(int req);
  int (*recv)(void *buf, size_t bytes, int peer, int tag, int comm);
  /* MPI_Abort of the world: every rank ends (does not return). */
  void (*abort)(int code);
  /* Writes the text of `code` into buf[len]. */
  void (*error_string)(int code, char *buf, int len);
} DrMpiApi;

/* The entry the plugin exports: returns its table (static storage). */
typedef const DrMpiApi *(*DrMpiPluginEntry)(void);
#define DR_MPI_PLUGIN_ENTRY "dr_mpi_plugin_api"
#define DR_MPI_PLUGIN_NAME "libdagrun_mpi.so"

#ifdef __cplusplus
}
#endif

#endif
