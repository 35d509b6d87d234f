/* fake_mpi.c: a DrMpiApi that emulates a job of `size` ranks inside one
 * process (fake_mpi.h), for the unit and fault tests of the MPI layer:
 * this process is rank `rank`, and every other rank is taken to hold
 * exactly what this one holds (a gather returns this rank's data in every
 * slot), except where a test asks one rank's contribution to differ
 * (fake_mpi_other_fingerprint). Every call is counted; fake_mpi_fail_at(N)
 * makes the Nth call from now fail with an MPI-style error code, to prove
 * that each failure path reports the node and call and releases
 * everything. abort records its code and longjmps nowhere: the tests only
 * check that it was asked for. */
#include "tests/mpi/fake_mpi.h"

#include <string.h>

static struct {
  int rank, size;
  guint64 calls, fail_at;
  int aborted;
  gboolean other_differs;
  int next_comm, open_comms, pending;
} f;

void fake_mpi_reset(int rank, int size) {
  memset(&f, 0, sizeof f);
  f.rank = rank;
  f.size = size;
  f.next_comm = 1;
  f.aborted = -1;
}

void fake_mpi_fail_at(guint64 n) { f.fail_at = n ? f.calls + n : 0; }
guint64 fake_mpi_calls(void) { return f.calls; }
int fake_mpi_aborted(void) { return f.aborted; }
int fake_mpi_open_comms(void) { return f.open_comms; }
int fake_mpi_pending_sends(void) { return f.pending; }
void fake_mpi_other_fingerprint(gboolean differs) { f.other_differs = differs; }

#define FAKE_ERR 17

/* Counts the call; TRUE when it is the one to fail. */
static gboolean failing(void) { return ++f.calls == f.fail_at; }

static int fk_init(int *multiple) {
  if (failing()) return FAKE_ERR;
  *multiple = 1;
  return 0;
}
static int fk_finalize(void) { return 0; }
static int fk_world(int *rank, int *size, int *local) {
  if (failing()) return FAKE_ERR;
  *rank = f.rank;
  *size = f.size;
  *local = f.rank;
  return 0;
}
static int fk_comm_dup(int *comm) {
  if (failing()) return FAKE_ERR;
  *comm = f.next_comm++;
  f.open_comms++;
  return 0;
}
static int fk_comm_free(int comm) {
  f.open_comms--;
  return 0;
}
static int fk_barrier(int comm) { return failing() ? FAKE_ERR : 0; }
static int fk_bcast(void *buf, size_t bytes, int root, int comm) { return failing() ? FAKE_ERR : 0; }
static int fk_allreduce(const void *send, void *recv, size_t count, DrElemType type, DrMpiReduce op,
                        int comm) {
  if (failing()) return FAKE_ERR;
  if (send != recv) memcpy(recv, send, count * 4);
  return 0;
}
static int fk_allgather(const void *send, void *recv, size_t bytes, int comm) {
  if (failing()) return FAKE_ERR;
  for (int r = 0; r < f.size; r++) memcpy((char *)recv + (size_t)r * bytes, send, bytes);
  /* The collectives check's fingerprint (8 bytes on the world): rank
   * size-1 has another one when the test says so. */
  if (f.other_differs && comm == 0 && bytes == 8 && f.size > 1) ((char *)recv)[(f.size - 1) * 8] ^= 1;
  return 0;
}
static int fk_alltoall(const void *send, void *recv, size_t bytes, int comm) {
  if (failing()) return FAKE_ERR;
  /* Every rank holds this rank's src: block `rank` of it, from each. */
  for (int r = 0; r < f.size; r++)
    memcpy((char *)recv + (size_t)r * bytes, (const char *)send + (size_t)f.rank * bytes, bytes);
  return 0;
}
static int fk_gatherv(const void *send, int bytes, void *recv, const int *counts, const int *displs, int root,
                      int comm) {
  if (failing()) return FAKE_ERR;
  if (f.rank == root)
    for (int r = 0; r < f.size; r++) memcpy((char *)recv + displs[r], send, (size_t)MIN(bytes, counts[r]));
  return 0;
}
static int fk_isend(const void *buf, size_t bytes, int peer, int tag, int comm, int *req) {
  if (failing()) return FAKE_ERR;
  f.pending++;
  *req = tag;
  return 0;
}
static int fk_wait(int req) {
  f.pending--;
  return failing() ? FAKE_ERR : 0;
}
static int fk_recv(void *buf, size_t bytes, int peer, int tag, int comm) {
  if (failing()) return FAKE_ERR;
  memset(buf, 0x11, bytes);
  return 0;
}
static void fk_abort(int code) { f.aborted = code; }
static void fk_error_string(int code, char *buf, int len) { g_strlcpy(buf, "fake MPI error", (gsize)len); }

const DrMpiApi fake_mpi_api = {
    .abi = DR_MPI_ABI,
    .library = "fake MPI",
    .init = fk_init,
    .finalize = fk_finalize,
    .world = fk_world,
    .comm_dup = fk_comm_dup,
    .comm_free = fk_comm_free,
    .barrier = fk_barrier,
    .bcast = fk_bcast,
    .allreduce = fk_allreduce,
    .allgather = fk_allgather,
    .alltoall = fk_alltoall,
    .gatherv = fk_gatherv,
    .isend = fk_isend,
    .wait = fk_wait,
    .recv = fk_recv,
    .abort = fk_abort,
    .error_string = fk_error_string,
};
