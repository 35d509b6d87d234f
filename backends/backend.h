/* backend.h: the one small vtable every executor implements, and the
 * helpers the executors share (buffer initialisation, kernel argument
 * binding, the host functions).
 *
 * A backend is driven by run.c in this order: open (streams, threads,
 * events: no buffer yet), setup (allocate whole-run buffers, fill their
 * `init:`; graph mode also captures here), run_iteration once per warmup
 * and timed iteration (or launch_iteration/finish_iteration, keeping up
 * to max_in_flight iterations in flight), read_buffer to copy buffers back for --verify and
 * `save:`, close. Everything but run_iteration is outside the timed region.
 * close is NULL-safe and tolerates a state that failed half-way through
 * open or setup. This file is not the public API: see run.h. */
#ifndef DAGRUN_BACKENDS_BACKEND_H
#define DAGRUN_BACKENDS_BACKEND_H

#include <glib.h>
#include <stdio.h>

#include "backends/run.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "kernels/registry.h"

G_BEGIN_DECLS

typedef struct DrBackend DrBackend; /* each backend's own state */

/* One iteration's measurements, filled by run_iteration: node start/end in
 * µs from the iteration's start (NAN when not measured), indexed by graph
 * node id, and the makespan. */
typedef struct {
  double *start_us; /* [n_nodes] */
  double *end_us;   /* [n_nodes] */
  double makespan_us;
  /* NULL, or where the backend adds the iteration's loop trips (report.h,
   * dr_trip_log_add), µs from the iteration's start like the nodes: set
   * when the graph has loops and its nodes are timed. */
  DrTripLog *trips;
} DrIterTiming;

typedef struct {
  const char *name;
  /* Returns a new state for `plan` (borrowed until close), or NULL with
   * `error` set (DR_ERROR_UNAVAILABLE when the backend cannot run here). */
  DrBackend *(*open)(const DrPlan *plan, const DrRunOptions *opts, GError **error);
  /* Allocates whole-run buffers and fills their init contents. */
  gboolean (*setup)(DrBackend *b, GError **error);
  /* Runs one whole iteration and waits for it to finish. `timing` may be
   * NULL (warmup, the verify reference run). */
  gboolean (*run_iteration)(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error);
  /* Optional pipelining (all three or none; run.c uses run_iteration
   * when NULL): launch_iteration enqueues an iteration without waiting
   * (`timed`: its timing will be read), finish_iteration waits for the
   * oldest one launched and not yet finished, which is `iteration`, and
   * reads its timing (`timing` NULL: untimed). Iterations are launched and
   * finished in order, at most max_in_flight(b) launched and unfinished at
   * once; they must not overlap on the device, only the host's issuing of
   * one with the device's running of the one before. */
  gboolean (*launch_iteration)(DrBackend *b, guint32 iteration, gboolean timed, GError **error);
  gboolean (*finish_iteration)(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error);
  guint32 (*max_in_flight)(const DrBackend *b);
  /* Scalar kernel arguments of the graph's nodes `nodes` [n] (NULL: of
   * any node) changed since setup (a session, run.h): makes the next
   * iteration use them. Sets *how: "rebound" (the launches were bound
   * again), "updated-nodes" (graph mode: those nodes' parameters set on
   * the executable), "updated" (graph mode: the executable updated in
   * place from a re-capture), "re-instantiated" or "cached" (graph mode,
   * run.graph_cache: an executable kept from before put back in use and
   * its changed nodes set in place). Only between runs (no
   * iteration in flight). On failure the previous binding is kept. */
  gboolean (*args_changed)(DrBackend *b, const DrId *nodes, guint32 n, const char **how, GError **error);
  /* Copies whole-run buffer `buffer` (all its bytes) into `dst`. */
  gboolean (*read_buffer)(DrBackend *b, DrId buffer, void *dst, GError **error);
  /* External memory (a session, run.h; all three or none: NULL when the
   * backend has none). Only between runs. bind_buffer makes whole-run
   * buffer `buffer` live at the caller's `ptr` (its dr_buffer_bytes,
   * checked by the caller) from the next iteration on: the backend checks
   * where `ptr` lives, releases its own memory for the buffer, never frees
   * `ptr`, and makes every node that touches the buffer use it, setting
   * *how like args_changed. write_buffer copies `bytes` of `data` into the
   * buffer at byte `offset` (in range, checked by the caller), ordered
   * after the work queued before it (the caller's stream of the last
   * run_on_stream, else the backend's own) and before the next iteration;
   * `data` may be reused once it returns. run_on_stream enqueues one
   * untimed iteration after the work queued on `stream` and makes the work
   * queued on it later wait for the iteration, without waiting on the
   * host. */
  gboolean (*bind_buffer)(DrBackend *b, DrId buffer, void *ptr, const char **how, GError **error);
  /* Optional: writes words[i] (8 bytes) into whole-run buffer
   * buffers[i] for i < n, ordered as write_buffer's writes, in as few
   * operations as the backend can (parameter buffers,
   * dr_session_write_params). NULL: write_buffer, one each. */
  gboolean (*write_words)(DrBackend *b, const DrId *buffers, const guint64 *words, guint32 n, GError **error);
  gboolean (*write_buffer)(DrBackend *b, DrId buffer, guint64 offset, const void *data, guint64 bytes,
                           GError **error);
  gboolean (*run_on_stream)(DrBackend *b, guint32 iteration, void *stream, GError **error);
  /* Releases everything; NULL-safe, tolerates half-built state. */
  void (*close)(DrBackend *b);
  /* The mode name the report shows ("streams" | "graph"). */
  const char *(*mode_name)(const DrBackend *b);
  /* Optional: the most stream-ordered bytes (dr_pool_bytes per lifetime)
   * live at once so far, as the backend measured it. NULL, or G_MAXUINT64
   * returned: not measured. */
  guint64 (*memory_high)(const DrBackend *b);
  /* Optional: the trips loop `loop` (its index in graph->loops) made in
   * the last iteration that finished. NULL: not counted. */
  guint64 (*loop_trips)(const DrBackend *b, guint32 loop);
  /* Optional: more about the last args_changed than its *how
   * (DrUpdateDetail, left zero when there is nothing to say). */
  void (*update_detail)(const DrBackend *b, DrUpdateDetail *detail);
} DrBackendOps;

extern const DrBackendOps dr__host_backend;
/* backends/cuda/: one entry for both modes; what differs between streams
 * and graph mode is each mode's own table of operations over the
 * backend's parts (cuda/cuda.h), picked at open from opts->mode. */
extern const DrBackendOps dr__cuda_backend;

/* Returns TRUE when the CUDA runtime reports at least one device; else
 * FALSE with `why` (newly allocated) saying what the runtime said. */
gboolean dr__cuda_available(char **why);

/* ---- shared helpers (common.c) ---------------------------------------- */

/* The documented deterministic initial contents. Fills `dst` (the buffer's
 * dr_buffer_bytes) per the buffer's `init:`:
 *   none, zeros: all zero bytes;
 *   iota:        element i holds i converted to the element type (u8: i
 *                mod 256; f16/bf16 rounded to nearest even);
 *   random SEED: splitmix64 seeded with SEED, one 64-bit draw z per element
 *                in order: floats (f16 bf16 f32 f64) take
 *                ((z >> 11) * 2^-53) * 2 - 1, uniform in [-1, 1), converted
 *                with round-to-nearest; u8 takes z mod 256; i32 and i64 take
 *                (z mod 2001) - 1000;
 *   file PATH:   the file's raw bytes, which must be exactly the buffer's
 *                size (DR_ERROR_IO otherwise);
 *   param NAME:  (DrBuffer.param, no init) the parameter's current value,
 *                dr__param_buffer_word.
 * Every backend uses this, so both backends start from the same bytes. */
gboolean dr__buffer_init(const DrGraph *graph, DrId buffer, void *dst, GError **error);

/* The 8 bytes a parameter buffer (`param:`, DrBuffer.param) holds for the
 * parameter's current value: the i64 or the f64, as memory has it. A
 * buffer with `param:` is initialized to it (dr__buffer_init). */
guint64 dr__param_buffer_word(const DrGraph *graph, DrId buffer);

/* Returns splitmix64's next value and advances *state. */
guint64 dr__splitmix64(guint64 *state);

/* FNV-1a 64-bit hash of `len` bytes. */
guint64 dr__fnv1a64(const void *data, gsize len);

/* The launch description of a kernel node, bound to buffer base pointers
 * (`bases[buffer id]`, host or device memory). */
typedef struct {
  const DrKernelDef *def;
  DrKValue args[32];
  uint64_t counts[32];
  DrKLaunch launch;
} DrKernelCall;

/* Fills `call` for kernel node `node`: each declared parameter in order
 * gets its argument (buffers: base + slice begin, counts[param] = slice
 * length; optional scalars left out: the registry's default), the kernel's
 * argument check runs, and the launch shape is the node's grid/block or
 * else the registry's default (dr_kernel_default_shape; a node's block
 * alone keeps the covered thread count). stream, blas and scratch are left
 * NULL for the backend. Fails (DR_ERROR_RUNTIME) for user kernels (the CUDA
 * backend launches those itself, cuda/user_kernels.c), unknown built-ins and
 * failed checks. */
gboolean dr__kernel_call_bind(const DrGraph *graph, DrId node, void *const *bases, DrKernelCall *call,
                              GError **error);

/* The second half of dr__kernel_call_bind, for a caller that changed
 * call->counts since (graph mode's counts in device memory bind a launch
 * at its largest counts, cuda/devwords.c): runs the kernel's argument
 * check on the counts now and sets the launch shape from them as bind
 * does (the node's grid/block, else the registry's default). */
gboolean dr__kernel_call_reshape(const DrGraph *graph, DrId node, DrKernelCall *call, GError **error);

/* The definition kernel node `node` runs with: a C API kernel's own, a
 * user kernel's host twin from a shared library, or the built-in's
 * registry entry; NULL for a user kernel without a twin or an index past
 * the registry. */
const DrKernelDef *dr__kernel_def_of(const DrGraph *graph, DrId node);

/* A host function's bound arguments (include/dagrun/hostfn.h): what it
 * is called with, its error buffer, and args[a.n_args]. */
typedef struct {
  DrHostFnArgs a;
  char err[DR_HOST_FN_ERR_SIZE];
  /* Nonzero once the function failed (g_atomic_int_*: it is set on CUDA's
   * callback thread and read after the iteration); err then keeps its
   * message and the function is not called again. */
  gint failed;
  DrHostFnArg args[];
} DrHostFnBound;

/* A host node bound to host pointers: what cudaLaunchHostFunc's trampoline
 * and the host backend's workers run. It never calls CUDA. */
typedef struct {
  const DrGraph *graph;
  DrId node;
  const void *data; /* the buffer argument's slice start, or NULL */
  guint64 bytes;    /* its length in bytes */
  guint64 count;    /* its length in elements */
  DrElemType type;
  const char *buffer_name;
  const char *message;
  gint64 sleep_us;
  FILE *out;
  /* A host function with declared arguments (DrCallback.call): made at
   * the first bind, kept (its iteration count too) by later binds of the
   * same call, freed by dr__host_calls_free. NULL for other nodes. */
  DrHostFnBound *fn;
} DrHostCall;

/* Fills `call` for host node `node` given host base pointers per buffer.
 * A call bound before (a rebind after a buffer moved) keeps its
 * DrHostFnBound. */
void dr__host_call_bind(const DrGraph *graph, DrId node, void *const *bases, FILE *out, DrHostCall *call);
/* Frees what dr__host_call_bind allocated in calls[0..n) (not `calls`). */
void dr__host_calls_free(DrHostCall *calls, guint32 n);

/* Runs a host function: print writes "NODE: MESSAGE" plus up to the first
 * 8 elements of its buffer; sleep sleeps; checksum writes
 * "checksum NODE BUFFER 0x%016llx" (FNV-1a 64 of the slice's bytes), one
 * line, written and flushed at once; a C callback is called; a host
 * function with declared arguments is called with them and its run count.
 * Returns FALSE only when such a function returned nonzero, now or on an
 * earlier call (it is then not called again): its message is in
 * call->fn->err (never empty) and call->fn->failed is set. */
gboolean dr__host_call_run(const DrHostCall *call);

/* Writes element `index` of `data` (of `type`) to `out` as text. */
void dr__elem_format(DrElemType type, const void *data, guint64 index, GString *out);
/* Element `index` of `data` (of `type`) as a double (i64 beyond 2^53
 * rounded). */
double dr__elem_value(DrElemType type, const void *data, guint64 index);

/* Element i of `data` (of `type`): dr__elem_load sets *v (and, for the
 * integer types, *iv exactly); dr__elem_store writes v, or iv for the
 * integer types, rounding to nearest even for f16/bf16. */
void dr__elem_load(DrElemType type, const void *src, guint64 i, double *v, gint64 *iv);
void dr__elem_store(DrElemType type, void *dst, guint64 i, double v, gint64 iv);

/* Computes collective node `n` within one process (backends/collective.c):
 * every participant's src and dst in host memory at `bases` (the host
 * backend's buffers). rank r is participant r; a node over one buffer
 * (per_rank) is a collective of one rank. Cannot fail. */
void dr__collective_host_run(const DrGraph *graph, const DrNode *n, void *const *bases);

/* Pointer to element `begin` of a buffer whose memory starts at `base`;
 * NULL while the buffer has no memory (a stream-ordered buffer before its
 * alloc node ran: its users are re-pointed when they are issued). */
static inline void *dr__slice_ptr(const DrGraph *graph, void *const *bases, const DrAccess *a) {
  char *base = bases[a->buffer];
  if (base == NULL) return NULL;
  const DrBuffer *b = dr_graph_buffer(graph, a->buffer);
  return base + a->begin * (guint64)dr_elem_size(b->type);
}

/* The node's accesses, the i-th one. */
#define dr__node_access(g, n, i) dr_graph_access((g), (n)->access_first + (i))

/* For copy nodes: the read (src) and written (dst) access (the IR's
 * dr_graph_copy_ends, under the name the backends use). */
static inline void dr__copy_accesses(const DrGraph *graph, const DrNode *node, const DrAccess **src,
                                     const DrAccess **dst) {
  dr_graph_copy_ends(graph, node, src, dst);
}

G_END_DECLS

#endif
