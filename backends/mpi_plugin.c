/* mpi_plugin.c: libdagrun_mpi.so, the only code of dagrun that includes
 * <mpi.h>: the DrMpiApi table (mpi_api.h) over the system's MPI (Debian's
 * Open MPI in the build), exported as dr_mpi_plugin_api. dagrun dlopens it
 * when mpirun started the process, so the plain binary never depends on
 * libmpi and the implementation's ABI (Open MPI's handles are addresses of
 * its global objects, MPICH's are integers) is this file's compiler's
 * business. Communicators are handed out as small integers (0: the
 * world); element types and reductions arrive as dagrun's enums. No GLib:
 * the plugin is a thin shim, and the logic (signatures, reports, aborts)
 * lives in dagrun (backends/mpi.c, lib/ranks.c). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backends/mpi_api.h"

#define MAX_COMMS 4096

static MPI_Comm comms[MAX_COMMS];
static int n_comms = 1;

static MPI_Comm comm_of(int c) { return c > 0 && c < n_comms ? comms[c] : MPI_COMM_WORLD; }

static int p_init(int *multiple) {
  int provided = MPI_THREAD_SINGLE, rc;
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited)
    rc = MPI_Query_thread(&provided);
  else
    rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return rc;
  /* Errors come back as codes, so dagrun can name the node that failed. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  comms[0] = MPI_COMM_WORLD;
  *multiple = provided >= MPI_THREAD_MULTIPLE;
  return MPI_SUCCESS;
}

static int p_finalize(void) {
  for (int i = 1; i < n_comms; i++)
    if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
  n_comms = 1;
  int fin = 0;
  MPI_Finalized(&fin);
  return fin ? MPI_SUCCESS : MPI_Finalize();
}

static int p_world(int *rank, int *size, int *local_rank) {
  int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm node = MPI_COMM_NULL;
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(node, local_rank);
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  return rc;
}

/* Every rank dups and frees in the same order, so slots match too (not
 * that MPI needs them to). */
static int p_comm_dup(int *comm) {
  int c = 1;
  while (c < n_comms && comms[c] != MPI_COMM_NULL) c++;
  if (c >= MAX_COMMS) return MPI_ERR_COMM;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
  if (rc != MPI_SUCCESS) {
    comms[c] = MPI_COMM_NULL;
    return rc;
  }
  MPI_Comm_set_errhandler(comms[c], MPI_ERRORS_RETURN);
  if (c == n_comms) n_comms++;
  *comm = c;
  return MPI_SUCCESS;
}

static int p_comm_free(int comm) {
  if (comm <= 0 || comm >= n_comms || comms[comm] == MPI_COMM_NULL) return MPI_SUCCESS;
  int rc = MPI_Comm_free(&comms[comm]);
  comms[comm] = MPI_COMM_NULL;
  return rc;
}

static int p_barrier(int comm) { return MPI_Barrier(comm_of(comm)); }

/* MPI counts are int: large transfers go in chunks. */
#define CHUNK ((size_t)1 << 30)

static int p_bcast(void *buf, size_t bytes, int root, int comm) {
  for (size_t off = 0; off < bytes || (bytes == 0 && off == 0); off += CHUNK) {
    size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
    int rc = MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, comm_of(comm));
    if (rc != MPI_SUCCESS || bytes == 0) return rc;
  }
  return MPI_SUCCESS;
}

static MPI_Datatype dtype(DrElemType t) {
  switch (t) {
    case DR_ELEM_U8:
      return MPI_UINT8_T;
    case DR_ELEM_I32:
      return MPI_INT32_T;
    case DR_ELEM_I64:
      return MPI_INT64_T;
    case DR_ELEM_F32:
      return MPI_FLOAT;
    case DR_ELEM_F64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

static MPI_Op mpi_op(DrMpiReduce op) {
  switch (op) {
    case DR_MPI_REDUCE_SUM:
      return MPI_SUM;
    case DR_MPI_REDUCE_PROD:
      return MPI_PROD;
    case DR_MPI_REDUCE_MIN:
      return MPI_MIN;
    case DR_MPI_REDUCE_MAX:
      return MPI_MAX;
    default:
      return MPI_OP_NULL;
  }
}

static int p_allreduce(const void *send, void *recv, size_t count, DrElemType type, DrMpiReduce op,
                       int comm) {
  MPI_Datatype dt = dtype(type);
  MPI_Op o = mpi_op(op);
  if (dt == MPI_DATATYPE_NULL) return MPI_ERR_TYPE;
  if (o == MPI_OP_NULL) return MPI_ERR_OP;
  int size = 0;
  MPI_Type_size(dt, &size);
  size_t chunk = CHUNK / (size_t)size;
  for (size_t off = 0; off < count || (count == 0 && off == 0); off += chunk) {
    size_t n = count - off < chunk ? count - off : chunk;
    const void *s = send == recv ? MPI_IN_PLACE : (const char *)send + off * (size_t)size;
    int rc = MPI_Allreduce(s, (char *)recv + off * (size_t)size, (int)n, dt, o, comm_of(comm));
    if (rc != MPI_SUCCESS || count == 0) return rc;
  }
  return MPI_SUCCESS;
}

static int p_allgather(const void *send, void *recv, size_t bytes, int comm) {
  if (bytes > (size_t)INT32_MAX) return MPI_ERR_COUNT;
  return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm_of(comm));
}

static int p_alltoall(const void *send, void *recv, size_t bytes, int comm) {
  if (bytes > (size_t)INT32_MAX) return MPI_ERR_COUNT;
  return MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm_of(comm));
}

static int p_gatherv(const void *send, int bytes, void *recv, const int *counts, const int *displs, int root,
                     int comm) {
  return MPI_Gatherv(send, bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE, root, comm_of(comm));
}

/* Requests of sends in flight: a free list over a fixed table, under a
 * lock (several workers send at once). */
#define MAX_REQS 4096
static MPI_Request reqs[MAX_REQS];
static int req_used[MAX_REQS];
static pthread_mutex_t req_mu = PTHREAD_MUTEX_INITIALIZER;

static int p_isend(const void *buf, size_t bytes, int peer, int tag, int comm, int *req) {
  if (bytes > (size_t)INT32_MAX) return MPI_ERR_COUNT;
  pthread_mutex_lock(&req_mu);
  int r = 0;
  while (r < MAX_REQS && req_used[r]) r++;
  if (r < MAX_REQS) req_used[r] = 1;
  pthread_mutex_unlock(&req_mu);
  if (r == MAX_REQS) return MPI_ERR_REQUEST;
  int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(comm), &reqs[r]);
  if (rc != MPI_SUCCESS) {
    req_used[r] = 0;
    return rc;
  }
  *req = r;
  return MPI_SUCCESS;
}

static int p_wait(int req) {
  if (req < 0 || req >= MAX_REQS || !req_used[req]) return MPI_ERR_REQUEST;
  int rc = MPI_Wait(&reqs[req], MPI_STATUS_IGNORE);
  pthread_mutex_lock(&req_mu);
  req_used[req] = 0;
  pthread_mutex_unlock(&req_mu);
  return rc;
}

static int p_recv(void *buf, size_t bytes, int peer, int tag, int comm) {
  if (bytes > (size_t)INT32_MAX) return MPI_ERR_COUNT;
  return MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, tag, comm_of(comm), MPI_STATUS_IGNORE);
}

static void p_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static void p_error_string(int code, char *buf, int len) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, text, &n) != MPI_SUCCESS) n = 0;
  text[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = '\0';
  if (len > 0) {
    strncpy(buf, n ? text : "unknown MPI error", (size_t)len - 1);
    buf[len - 1] = '\0';
  }
}

static char library[MPI_MAX_LIBRARY_VERSION_STRING];

static const DrMpiApi api = {
    .abi = DR_MPI_ABI,
    .library = library,
    .init = p_init,
    .finalize = p_finalize,
    .world = p_world,
    .comm_dup = p_comm_dup,
    .comm_free = p_comm_free,
    .barrier = p_barrier,
    .bcast = p_bcast,
    .allreduce = p_allreduce,
    .allgather = p_allgather,
    .alltoall = p_alltoall,
    .gatherv = p_gatherv,
    .isend = p_isend,
    .wait = p_wait,
    .recv = p_recv,
    .abort = p_abort,
    .error_string = p_error_string,
};

/* The plugin's one export (DR_MPI_PLUGIN_ENTRY). */
const DrMpiApi *dr_mpi_plugin_api(void) {
  if (library[0] == '\0') {
    int n = 0;
    MPI_Get_library_version(library, &n);
    char *nl = strchr(library, ',');
    if (nl) *nl = '\0';
  }
  return &api;
}
