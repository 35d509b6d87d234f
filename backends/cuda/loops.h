/* loops.h: loops and conditionals (ir/loops.h) on the CUDA backend, as
 * host-driven loops (loops.c). */
#ifndef DAGRUN_BACKENDS_CUDA_LOOPS_H
#define DAGRUN_BACKENDS_CUDA_LOOPS_H

#include "backends/backend.h"
#include "backends/cuda/launch.h"
#include "backends/cuda/memory.h"
#include "backends/cuda/trips.h"
#include "ir/loops.h"

G_BEGIN_DECLS

typedef struct {
  gint32 *cond_host; /* cudaMallocHost'd: a condition read back; NULL: none needed */
  guint64 *trips;    /* [top-level loops]: the trips of each at its last issue */
  /* Graph mode's conditional nodes (condgraph.c), NULL/FALSE otherwise:
   * the stream each body node is captured alone on, the device counters
   * ([2 * top-level loops]: each loop's trips, then a counted WHILE's
   * counter, reset by the graph at each run of the loop), their pinned
   * read-back, and which loops' trips the device counts. */
  cudaStream_t body_stream;
  guint64 *counters, *counters_host;
  gboolean *device_trips;
  guint64 *limits;     /* [top-level loops]: each limit word as the device holds it */
  gboolean graph_mode; /* set up for graph mode */
  /* run.device_loop (graph mode): the iterations as one WHILE node
   * (condgraph.c): its stream (the capture around origin's), its counter
   * and limit (device [2]), the trips' end stamps (device [cap + 1],
   * [0] the start), their pinned read-back ([cap + 2]: [0] stages the
   * limit), the iterations they hold, and whether the stamps of the last
   * launch were read. */
  gboolean device_loop;
  cudaStream_t dl_outer;
  guint64 *dl, *dl_stamps, *dl_host;
  guint32 dl_cap;
  cudaGraphConditionalHandle dl_handle;
  gboolean capturing; /* graph.c is capturing the iteration */
  const DrPlan *plan; /* borrowed: the plan whose graph's loops these are */
  /* const DrNode * -> DrKernelCall *: each body kernel's launch, bound
   * again at every issue, in place (a node never runs beside itself), and
   * kept until close, as a capture may refer to it. */
  GHashTable *calls;
  /* const DrNode * -> device scratch (cudaMalloc'd at setup, before any
   * capture) of each body kernel whose built-in needs scratch: without it a
   * reduction borrows its scratch with cudaMallocAsync, which a conditional
   * body cannot hold (memory nodes). Freed at close. */
  GHashTable *scratch;
  /* Borrowed, NULL: no trip stamps; the backend's trip stamps
   * (trips.h), set at setup when they are on. */
  DrCudaTrips *trip_stamps;
  /* Graph mode: const DrNode * -> DrKBlas * of each gemm node of a body
   * built as conditional nodes, bound to body_stream, and their
   * workspaces (cudaMalloc'd), made at setup (body_blas in loops.c). */
  GHashTable *blas;
  GPtrArray *blas_ws;
  /* Borrowed: the launch part, for user kernels in bodies and the cuBLAS
   * context of a loop node's stream. */
  const DrCudaLaunch *launch;
} DrCudaLoops;

/* At open, before any CUDA call: what this build cannot run. Graph mode
 * captures a `repeat:` loop without a while or if inside unrolled (no
 * condition between the copies) and builds every other loop as CUDA
 * conditional nodes (condgraph.c), refusing them and run.device_loop only
 * when the runtime table lacks the entries (a CUDA before 12.4). Every
 * kernel a body may hold runs in every mode: built-ins, gemm (a cuBLAS
 * context per loop stream, or per body gemm node in graph mode), user
 * kernels and kernels registered through the C library. FALSE with
 * DR_ERROR_UNAVAILABLE naming the loop (the key). */
gboolean dr__cuda_loops_check(const DrPlan *plan, DrMode mode, GError **error);

/* Setup: the pinned word a condition is read back into and the trip
 * counts, when the graph has loops; in graph mode (`graph_mode`) also
 * the body stream, the device counters (a counted WHILE's limit
 * written) and a cuBLAS context for each gemm node of a body built as
 * conditional nodes, and with run.device_loop what it needs for
 * `iterations` (warmups included) trips. `launch` (borrowed, set up
 * after this) launches the bodies' user kernels. */
gboolean dr__cuda_loops_setup(DrCudaLoops *l, const DrPlan *plan, const DrCudaLaunch *launch,
                              gboolean graph_mode, guint32 iterations, GError **error);

/* Whether node `v` of `g` is a gemm (a built-in or C library kernel with
 * DR_KFLAG_BLAS: a cuBLAS call), and whether `loop`'s bodies (nested ones
 * too) hold one. */
gboolean dr__cuda_is_gemm(const DrGraph *g, DrId v);
gboolean dr__cuda_loop_has_blas(const DrLoop *loop);

/* Enqueues body kernel node `v` of body `g` on `st`: a user kernel
 * through user_kernels.c, a built-in bound now against `m`'s bases
 * (dr__cuda_loops_call) with `blas` as its cuBLAS context (a gemm; it must
 * be bound to `st`) and, when `how` is not NULL, its pdl, guard and
 * guard_runs. Fails as DR_CUDA does, naming the node (and cuBLAS's
 * message). */
gboolean dr__cuda_loops_kernel(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                               DrId v, cudaStream_t st, DrKBlas *blas, const DrKLaunch *how, GError **error);

/* Graph mode: the cuBLAS context (bound to body_stream) of body gemm node
 * `n`, or NULL. */
DrKBlas *dr__cuda_loops_body_blas(const DrCudaLoops *l, const DrNode *n);

/* run.device_loop, in graph.c's capture of the iteration: begin starts
 * the capture around it on the loop's own stream (the counter's reset,
 * the start stamp, the WHILE node) and the capture of its body on
 * `origin`, where the iteration's issue then goes; end closes the body
 * with the counter kernel (when `ok`) and ends both captures, returning
 * the first failure (cudaSuccess: *graph is the whole graph, owned by the
 * caller). begin fails as DR_CUDA does, with no capture left open. */
gboolean dr__cuda_device_loop_begin(DrCudaLoops *l, cudaStream_t origin, GError **error);
cudaError_t dr__cuda_device_loop_end(DrCudaLoops *l, cudaStream_t origin, gboolean ok, cudaGraph_t *graph);

/* run.device_loop: sets the limit for this launch (`trips`, at most
 * dl_cap) before it, on `origin`; after it (drained), reads the stamps
 * back. */
gboolean dr__cuda_device_loop_limit(DrCudaLoops *l, cudaStream_t origin, guint32 trips, GError **error);
gboolean dr__cuda_device_loop_read(DrCudaLoops *l, cudaStream_t origin, guint32 trips, GError **error);

/* After an iteration finished (graph mode: one in flight): reads the
 * device-counted trips of that iteration into `trips`, through `origin`
 * (a 16-byte-per-loop copy and a synchronisation); nothing without
 * device counters. */
gboolean dr__cuda_loops_read_trips(DrCudaLoops *l, cudaStream_t origin, GError **error);

/* Graph mode: writes the limit word of every top-level counted loop
 * (DrLoop.counted) whose count changed since it was last written (an
 * 8-byte copy on `origin` each, before the next launch), so that the
 * counted WHILE runs the new count without a capture; *wrote (when not
 * NULL): whether any was written. Nothing without device counters
 * (streams mode reads DrLoop.count at each issue). Fails as DR_CUDA does,
 * naming the loop. */
gboolean dr__cuda_loops_write_counts(DrCudaLoops *l, cudaStream_t origin, gboolean *wrote, GError **error);

/* Whether dr__cuda_loops_write_counts would write a count now (a counted
 * loop's count changed since it was last written). Its pinned word may
 * still feed a copy in flight: graph mode waits for the device first. */
gboolean dr__cuda_loops_counts_pending(const DrCudaLoops *l);

/* The launch of body kernel node `v` of body `g`, bound against `bases`
 * now (owned by `l`, kept until close); NULL with the binding's error. */
DrKernelCall *dr__cuda_loops_call(DrCudaLoops *l, const DrGraph *g, DrId v, void *const *bases,
                                  GError **error);

/* Graph mode's copies of a while's body per WHILE trip and how copies
 * 2..U are guarded (condgraph.c; ir/loops.h's rules). */
typedef struct {
  guint32 unroll;     /* U, 1 or more */
  DrWhileGuard guard; /* NONE exactly when U = 1 */
  DrId writer;        /* DR_WHILE_GUARD_KERNEL: the body node that sets the condition */
} DrCudaWhileChoice;

/* The choice for `loop`'s body plan `body`: by kernels when the body
 * allows it (dr_loop_while_guardable) and DAGRUN_WHILE_GUARD is not
 * `if`, then dr_loop_auto_unroll_guarded's U by default; otherwise IF
 * nodes, and U = 1 by default (an IF node costs about a trip, BENCHMARKS
 * §13). DAGRUN_WHILE_UNROLL=N (1..64) forces U, `auto` the auto rule of
 * the guard kind (dr_loop_auto_unroll for IF nodes); anything else is
 * the default. */
void dr__cuda_while_choice(const DrLoop *loop, const DrPlan *body, DrCudaWhileChoice *out);

/* Graph mode, while capturing: loop node `v` of `plan`'s graph (a top-level
 * loop) as a CUDA conditional node after what `st` depends on, which then
 * depends on it (condgraph.c's file head). Fails as DR_CUDA does, naming
 * the loop or body node. */
gboolean dr__cuda_cond_issue(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrPlan *plan,
                             DrId v, cudaStream_t st, GError **error);

/* Enqueues loop node `v` of `g` on `st`: each trip is the body's nodes in
 * file order on `st` (one stream: file order implies every dependency of
 * the body); a while reads its condition back after each trip (a copy to
 * the pinned word and a stream synchronisation), an if before choosing a
 * body. Built-ins are bound against `m`'s bases as they are now (so
 * stream-ordered buffers' current pointers). Fails as DR_CUDA does,
 * naming the body node. Records the loop's trips (a top-level loop of
 * the plan's graph: `g` is it). */
gboolean dr__cuda_loop_issue(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                             DrId v, cudaStream_t st, GError **error);

/* Releases the pinned word, the counters, the bodies' cuBLAS contexts
 * and their workspaces, and the body stream (NULL-safe fields). */
void dr__cuda_loops_close(DrCudaLoops *l);

G_END_DECLS

#endif
