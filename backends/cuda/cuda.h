/* cuda.h: internal to backends/cuda/: the CUDA backend as parts with one
 * owner each, and the table of a mode's operations.
 *
 * The parts, each a private struct written only by its own file:
 *   streams   devices, streams, fork/join and completion events (streams.c)
 *   memory    whole-run and stream-ordered buffers, pinned host (memory.c)
 *   launch    bound kernel launches, host calls, cuBLAS, user kernels
 *             (launch.c, user_kernels.c)
 *   timing    slot events, node timing events, stamps (timing.c)
 *   cuda_graph  graph mode's graph and executable (graph.c)
 *   devwords  graph mode's run-time parameters in device memory (devwords.c)
 *   profile   NVTX ranges and stream names for profilers (profile.c)
 * The backend (backend.c) opens and closes them in order, keeps the
 * iterations in flight, and calls the mode in effect (`mode`) where the
 * modes differ: how setup ends (bind, or capture and instantiate), what an
 * iteration enqueues (the issue walk of issue.c, or a graph replay) and how
 * changed arguments reach the device. Graph mode can give way to streams
 * mode at setup (run.fallback: streams), which swaps the table.
 *
 * Ownership: each part is the one owner of every CUDA handle it holds; a
 * NULL handle means "not created", so close can release a backend that
 * failed anywhere in open or setup with no other bookkeeping. */
#ifndef DAGRUN_BACKENDS_CUDA_CUDA_H
#define DAGRUN_BACKENDS_CUDA_CUDA_H

#include "backends/backend.h"
#include "backends/cuda/batch.h"
#include "backends/cuda/devwords.h"
#include "backends/cuda/graph.h"
#include "backends/cuda/issue.h"
#include "backends/cuda/launch.h"
#include "backends/cuda/loops.h"
#include "backends/cuda/memory.h"
#include "backends/cuda/nccl.h"
#include "backends/cuda/profile.h"
#include "backends/cuda/streams.h"
#include "backends/cuda/threads.h"
#include "backends/cuda/timing.h"
#include "backends/cuda/trips.h"

G_BEGIN_DECLS

typedef struct {
  const char *name; /* the report's mode name */
  /* Read at open, and kept through a fallback to the other mode: */
  guint32 depth;              /* iterations in flight at most (timing slots) */
  gboolean keep_fork_join;    /* every stream forks and joins (a capture needs it) */
  gboolean stamps_by_default; /* --timing=auto is stamps */
  gboolean stamps_aside;      /* stamps on side streams, off the critical path */
  /* Read at every binding (dr__cuda_bind), by the mode in effect: */
  gboolean kernel_stamps; /* self-stamping built-ins write their own end stamp */
  gboolean early_launch;  /* built-ins may launch early (PDL) */
  /* Setup's last step, after buffers and launch resources. */
  gboolean (*prepare)(DrBackend *b, GError **error);
  /* Enqueues one iteration on origin, between its slot's begin and end
   * events (no wait). */
  gboolean (*issue)(DrBackend *b, GError **error);
  /* DrBackendOps.args_changed, for this mode. */
  gboolean (*args_changed)(DrBackend *b, const DrId *nodes, guint32 n, const char **how, GError **error);
  /* FALSE: the backend waits for the iterations in flight before
   * args_changed. TRUE: args_changed may run while they run (it touches
   * nothing they use, or calls dr__cuda_quiesce itself first), so the
   * host applies a change while the device runs the iteration before. */
  gboolean changes_in_flight;
  /* Whole-run buffer `buffer` has a new base (external memory, memory.c
   * bound it; the device is idle): makes every node that touches it use
   * the new pointer from the next iteration on, *how as args_changed. */
  gboolean (*buffer_moved)(DrBackend *b, DrId buffer, const char **how, GError **error);
} DrCudaMode;

/* Waits for the work in flight (iterations, writes between runs) before
 * something it may still use changes; nothing when the backend is idle.
 * FALSE with `error` set when that work failed. */
gboolean dr__cuda_quiesce(DrBackend *b, GError **error);

/* Streams mode: every iteration is issued (issue.c). */
extern const DrCudaMode dr__cuda_streams_mode;
/* Graph mode: captured once, replayed (graph.c). */
extern const DrCudaMode dr__cuda_graph_mode;

struct DrBackend {
  const DrPlan *plan; /* borrowed */
  const DrGraph *graph;
  DrRunOptions opts;
  guint32 n_nodes;
  const DrCudaMode *mode; /* the mode in effect */
  DrCudaStreams streams;
  DrCudaMemory memory;
  DrCudaLaunch launch;
  DrCudaTiming timing;
  DrCudaGraphState cuda_graph;
  DrCudaDevWords devwords; /* devwords.c: graph mode's parameters in device memory */
  DrCudaProfile profile;
  DrCudaLoops loops; /* loops.c: host-driven loops */
  DrCudaTrips trips; /* trips.c: their trip stamps */
  DrCudaNccl nccl;
  /* Streams mode's issue threads (threads.c), NULL: the calling thread
   * issues every step. Made by streams mode's prepare (issue.c). */
  DrCudaThreads *threads;
  /* Streams mode's copy batches (batch.c), NULL: none. Made by streams
   * mode's prepare (issue.c). */
  DrCudaBatch *batch;
  /* cudaProfilerStart was called and cudaProfilerStop not yet: the
   * profiler's capture range is open (backend.c). */
  gboolean profiling;
  /* Iterations in flight (backend.c): the host issues iteration i+1 while
   * the device runs iteration i, so the launch latency of an eager
   * iteration hides behind the one before it. */
  guint32 slot;      /* the timing slot of the iteration being issued */
  guint32 in_flight; /* launched and not yet finished */
  /* Nothing this backend enqueued is still in flight: the last iteration,
   * read-back or device drain finished without an error. close drains the
   * device only when this is FALSE (after a failure). */
  gboolean idle;
  /* The library user's stream (dr_runner_run_on_stream, backend.c): the
   * two events that order an iteration after the work queued on it and
   * its later work after the iteration (created at the first such run),
   * and the last such stream, which write_buffer and read_buffer follow. */
  struct {
    cudaEvent_t in, out;
    cudaStream_t stream;
    gboolean set;
  } caller;
};

G_END_DECLS

#endif
