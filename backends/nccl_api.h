/* nccl_api.h: the one table through which dagrun calls NCCL, opened with
 * dlopen (like cuBLAS and NVRTC) so the binary starts without it, and the
 * macro that turns a failed call into a GError.
 *
 * The types are declared here, not taken from <nccl.h>: a build needs no
 * NCCL headers, and the ABI used (handles as pointers, enums as int,
 * ncclUniqueId as 128 bytes) is NCCL 2's, stable since 2.0. The mapping of
 * dagrun's element types and reductions onto NCCL's lives here too. Tests
 * swap the table (dr_nccl_api_set) for a fake one to drive the collective
 * paths and fail the Nth call, as tests/fault does for CUDA. This file owns
 * no communicator: the CUDA backend's nccl part does (cuda/nccl.c). */
#ifndef DAGRUN_BACKENDS_NCCL_API_H
#define DAGRUN_BACKENDS_NCCL_API_H

#include <cuda_runtime_api.h>
#include <glib.h>

#include "ir/graph.h"

G_BEGIN_DECLS

typedef struct DrNcclComm *DrNcclComm; /* ncclComm_t */
typedef int DrNcclResult;              /* ncclResult_t: 0 is ncclSuccess */
typedef struct {
  char internal[128];
} DrNcclUniqueId;

/* X(name, (parameter list), (argument names)): the NCCL functions dagrun
 * calls, all returning ncclResult_t. Data types and reduction ops are
 * NCCL's int codes (dr_nccl_type, dr_nccl_op). */
/* clang-format off */
#define DR_NCCL_API_LIST(X)                                                                                                            \
  X(ncclGetVersion, (int *version), (version))                                                                                         \
  X(ncclGetUniqueId, (DrNcclUniqueId * id), (id))                                                                                      \
  X(ncclCommInitAll, (DrNcclComm * comms, int ndev, const int *devlist), (comms, ndev, devlist))                                       \
  X(ncclCommInitRank, (DrNcclComm * comm, int nranks, DrNcclUniqueId id, int rank), (comm, nranks, id, rank))                          \
  X(ncclCommDestroy, (DrNcclComm comm), (comm))                                                                                        \
  X(ncclCommAbort, (DrNcclComm comm), (comm))                                                                                          \
  X(ncclCommGetAsyncError, (DrNcclComm comm, DrNcclResult *result), (comm, result))                                                    \
  X(ncclGroupStart, (void), ())                                                                                                        \
  X(ncclGroupEnd, (void), ())                                                                                                          \
  X(ncclAllReduce, (const void *send, void *recv, size_t count, int type, int op, DrNcclComm comm, cudaStream_t stream), (send, recv, count, type, op, comm, stream)) \
  X(ncclBroadcast, (const void *send, void *recv, size_t count, int type, int root, DrNcclComm comm, cudaStream_t stream), (send, recv, count, type, root, comm, stream)) \
  X(ncclReduce, (const void *send, void *recv, size_t count, int type, int op, int root, DrNcclComm comm, cudaStream_t stream), (send, recv, count, type, op, root, comm, stream)) \
  X(ncclAllGather, (const void *send, void *recv, size_t send_count, int type, DrNcclComm comm, cudaStream_t stream), (send, recv, send_count, type, comm, stream)) \
  X(ncclReduceScatter, (const void *send, void *recv, size_t recv_count, int type, int op, DrNcclComm comm, cudaStream_t stream), (send, recv, recv_count, type, op, comm, stream)) \
  X(ncclSend, (const void *send, size_t count, int type, int peer, DrNcclComm comm, cudaStream_t stream), (send, count, type, peer, comm, stream)) \
  X(ncclRecv, (void *recv, size_t count, int type, int peer, DrNcclComm comm, cudaStream_t stream), (recv, count, type, peer, comm, stream))
/* clang-format on */

typedef struct {
#define DR_X(name, params, args) DrNcclResult(*name) params;
  DR_NCCL_API_LIST(DR_X)
#undef DR_X
  const char *(*ncclGetErrorString)(DrNcclResult result);
} DrNcclApi;

/* The table in use: a table set by dr_nccl_api_set, else the real NCCL,
 * loaded on first use (thread-safe, once per process): DAGRUN_NCCL_LIB
 * when set (a path), else "libnccl.so.2" through the loader's search path,
 * else nvidia/nccl/lib/libnccl.so.2 under each site-packages or
 * dist-packages directory of python3's sys.path (the nvidia-nccl-cu13 or
 * -cu12 wheel). NULL when none loads or a symbol is missing; `why` (when
 * not NULL) then says where it looked, static storage until the next
 * call. */
const DrNcclApi *dr_nccl_api(const char **why);
/* Makes `api` (NULL: back to the real NCCL) the table in use; returns the
 * previous one set (NULL for the real one). Not thread-safe: between runs. */
const DrNcclApi *dr_nccl_api_set(const DrNcclApi *api);
/* The path of the library dr_nccl_api loaded, or NULL (a fake, or none). */
const char *dr_nccl_api_path(void);

/* NCCL's data type code for `type` (ncclUint8, ncclInt32, ncclInt64,
 * ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64). */
int dr_nccl_type(DrElemType type);
/* NCCL's reduction code for `op` (ncclSum 0, ncclProd 1, ncclMax 2,
 * ncclMin 3, ncclAvg 4: note max before min). */
int dr_nccl_op(DrReduceOp op);

/* Turns `rc` from `call` into a GError (DR_ERROR_RUNTIME) naming `node`
 * (NULL: setup), the call and NCCL's error string. TRUE when rc is 0. */
gboolean dr__nccl_check(const DrNcclApi *api, DrNcclResult rc, const char *call, const char *node,
                        GError **error);

/* Calls `fn` through table `api` and checks it for node `node`; TRUE on
 * success, FALSE with *error set. Expects `GError **error` in scope. */
#define DR_NCCL(api, node, fn, ...) dr__nccl_check((api), (api)->fn(__VA_ARGS__), #fn, (node), error)

G_END_DECLS

#endif
