/* fake_cuda.h: a fake CUDA runtime for the CPU, and the fault shim on top
 * of it: a DrCudaApi table (backends/cuda_api.h) that emulates devices
 * in host memory (one by default, up to 8: dr_fake_set_devices) and can
 * fail the Nth call with a chosen error.
 *
 * The fake keeps every object the backends make in one table: device and
 * pinned memory are g_malloc0 blocks of the asked size; streams, events,
 * graphs, graph executables and libraries are distinct small heap objects
 * used as handles. Each kind has a live counter, so a test can prove that a
 * run released everything. Copies, memsets and host functions happen at
 * once on the calling thread (a fake stream is always idle); kernel
 * launches do nothing, or run the registry's host twin when asked; the
 * timing stamp kernel (stamp_launch) writes a fake clock. Stream
 * capture records nothing: between BeginCapture and EndCapture work is not
 * performed, and a graph launch does nothing.
 *
 * The shim counts the "fault points": every call of the table except the
 * error-reporting ones (cudaGetLastError, cudaGetErrorName/String). When
 * the count reaches fail_at the call fails with the chosen error and has
 * no effect. A sticky fault (cudaErrorIllegalAddress) also makes every
 * later call fail with it, like a real device after a fault; only releases
 * (destroy, free, unload) still release, since the objects are gone with
 * the context anyway, and the fake remembers any other call made after it.
 * The fake also checks handles: a stream, event or pointer it did not hand
 * out (or that was already released) is a misuse, recorded and answered
 * with cudaErrorInvalidResourceHandle/InvalidValue.
 *
 * Single-threaded, process-global state, like the runtime it stands for.
 * This is not a simulator: no timing, no concurrency, no device code. */
#ifndef DAGRUN_TESTS_FAULT_FAKE_CUDA_H
#define DAGRUN_TESTS_FAULT_FAKE_CUDA_H

#include <cuda_runtime_api.h>
#include <glib.h>

#include "backends/cuda_api.h"

G_BEGIN_DECLS

/* X(ENUM_SUFFIX, counter name): the kinds of objects the fake tracks. */
#define DR_FAKE_KIND_LIST(X)      \
  X(DEVICE_MEM, "allocations")    \
  X(HOST_MEM, "host allocations") \
  X(STREAM, "streams")            \
  X(EVENT, "events")              \
  X(GRAPH, "graphs")              \
  X(GRAPH_EXEC, "graph execs")    \
  X(LIBRARY, "libraries")         \
  X(BLAS, "cuBLAS contexts")

typedef enum {
#define DR_X(e, s) DR_FAKE_##e,
  DR_FAKE_KIND_LIST(DR_X)
#undef DR_X
      DR_FAKE_N_KINDS
} DrFakeKind;

const char *dr_fake_kind_name(DrFakeKind kind);

/* X(ENUM_SUFFIX, cudaError_t, sticky, short name): the faults a test can
 * inject. */
#define DR_FAULT_LIST(X)                                              \
  X(OOM, cudaErrorMemoryAllocation, FALSE, "oom")                     \
  X(INVALID, cudaErrorInvalidValue, FALSE, "invalid")                 \
  X(LAUNCH, cudaErrorLaunchFailure, FALSE, "launch")                  \
  X(CAPTURE, cudaErrorStreamCaptureInvalidated, FALSE, "capture")     \
  X(ILLEGAL, cudaErrorIllegalAddress, TRUE, "sticky-illegal-address") \
  X(NO_DEVICE, cudaErrorNoDevice, FALSE, "no-device")

typedef enum {
#define DR_X(e, err, sticky, name) DR_FAULT_##e,
  DR_FAULT_LIST(DR_X)
#undef DR_X
      DR_N_FAULTS
} DrFault;

const char *dr_fault_name(DrFault fault);
cudaError_t dr_fault_error(DrFault fault);
gboolean dr_fault_sticky(DrFault fault);

/* One call made through the fake table. */
typedef struct {
  const char *name;    /* the runtime function, "kernel_launch" or
                         "stamp_launch" */
  guint64 point;       /* 1-based fault point, 0 for error-reporting calls */
  gconstpointer obj;   /* the stream used, the object released or the stream
                         created, or NULL */
  guint stream;        /* that stream's creation number since the reset
                         (1-based; stable across runs), or 0 */
  guint64 size;        /* bytes copied, set or allocated; 0 otherwise */
  const char *what;    /* kernel_launch: the built-in's name; else NULL */
  cudaError_t rc;      /* what the fake returned */
  gboolean release;    /* a destroy/free/unload */
  gconstpointer event; /* cudaEventRecord(WithFlags), cudaStreamWaitEvent: the event */
} DrFakeCall;

/* Resets the fake: releases whatever is still live (after reading the
 * counters), clears the trace, misuse log, sticky state and fault. */
void dr_fake_reset(void);

/* Arms the shim: the fault point `fail_at` (1-based; 0 = none) fails with
 * `fault`. Call after dr_fake_reset. */
void dr_fake_arm(guint64 fail_at, DrFault fault);

/* When TRUE, kernel_launch runs the built-in's host twin on the fake
 * memory (outside capture); else it only checks its arguments' pointers. */
void dr_fake_set_run_twins(gboolean run);

/* When TRUE (the default), copies, memsets and host functions are
 * performed; FALSE checks their arguments only (a fault sweep does not look
 * at the data, and moving it dominates its run time). */
void dr_fake_set_move_data(gboolean move);

/* The table to hand to dr_cuda_api_set. */
const DrCudaApi *dr_fake_api(void);

/* Live objects of `kind` now. */
guint dr_fake_live(DrFakeKind kind);
/* Sum over every kind. */
guint dr_fake_live_total(void);
/* Appends "allocations 1, streams 2" style text for the non-zero live
 * counts to `out`. */
void dr_fake_describe_live(GString *out);
/* The live object of a kind, when exactly one object is live in total (a
 * graph with the stream-ordered allocations freed inside its capture,
 * which it owns, counts as one): TRUE and *obj set; else FALSE. */
gboolean dr_fake_only_live(gconstpointer *obj);

/* Kernel launches since the reset that asked for programmatic dependent
 * launch (DrKLaunch.pdl), and those made in all. */
guint dr_fake_pdl_launches(void);
guint dr_fake_kernel_launches(void);
/* Kernels run since the reset (their host twins, eagerly with run_twins
 * or in a graph launch's replay), and launches that did nothing because
 * their guard word (DrKLaunch.guard) was 0, as a built-in with
 * DR_KFLAG_GUARD does on the device (a guarded launch that runs also adds
 * 1 to its guard_runs). A guard given to a kernel without the flag is a
 * misuse. */
guint dr_fake_kernels_run(void);
guint dr_fake_guard_skips(void);
/* With `on`, guarded launches run whatever their guard word says (a
 * device without the guard: what a test must be able to catch). Kept by
 * dr_fake_reset. */
void dr_fake_set_ignore_guards(gboolean on);
/* The kernel launches since the reset in order, '1' for each that asked
 * for PDL and '0' for each that did not ("" when none). Borrowed. */
const char *dr_fake_pdl_pattern(void);
/* The flags of the last successful cudaGraphInstantiate since the reset
 * (0 when none). */
unsigned long long dr_fake_instantiate_flags(void);

/* The graph-node model. While capturing, the fake also records what each
 * captured call made as a node of the graph (kernel launches with a deep
 * copy of the launch, copies, memsets, host functions, external event
 * records, stream-ordered allocations), with the nodes it depends on as
 * stream order and captured event waits imply; a graph owns its nodes and
 * an executable its own copies. dr_fake_api_graph_nodes is dr_fake_api
 * plus what per-node graph updates use (cudaStreamGetCaptureInfo, node
 * queries, kernel/memcpy/memset node parameters, exec per-node sets) and
 * cudaPointerGetAttributes (fake device memory is device 0's, fake pinned
 * memory host memory, anything else unregistered); dr_fake_api leaves them
 * NULL as before. With dr_fake_set_replay_graphs(TRUE) a graph launch
 * performs its executable's nodes in capture order (kernels through their
 * host twins), so a test can see which pointers the executable holds.
 * dr_fake_allow_default_streams(TRUE) accepts the legacy and per-thread
 * default streams (a library user's streams) instead of calling them a
 * misuse. dr_fake_exec_node_sets counts successful per-node sets on
 * executables since the reset. */
const DrCudaApi *dr_fake_api_graph_nodes(void);
void dr_fake_set_replay_graphs(gboolean replay);
void dr_fake_allow_default_streams(gboolean allow);
guint dr_fake_exec_node_sets(void);

/* Conditional nodes (issue #17), in dr_fake_api_graph_nodes only:
 * cudaGraphConditionalHandleCreate, cudaGraphAddNode (conditional and
 * empty nodes), cudaStreamBeginCaptureToGraph (into a body graph, nested
 * in the capture in progress), cudaStreamUpdateCaptureDependencies and
 * the control kernels (cond_launch, count_launch, trip_launch: only while
 * capturing, its stamps on the clock the stamp kernel advances). A replay
 * runs them as
 * the device would (IF and WHILE bodies by their handle's value, each
 * launch applying the defaults). dr_fake_graph_shape: the last
 * instantiated graph, its nodes in order, a conditional node followed by
 * its bodies in braces, "|" between an IF's two ("while{scale_f32 cond}"):
 * kernels by built-in name, "cond" (the condition kernel reading a
 * condition), "cond1" (setting 1), "count", "stamp", "trip", memcpy, memset,
 * empty, record, host, alloc, free; with `deps`, each as "I:NAME<J,K>"
 * with the indices of its dependencies in its own list. Instantiation
 * calls a host, event, alloc or free node, a host memcpy or an empty body
 * inside a conditional body a misuse. Borrowed. */
const char *dr_fake_graph_shape(gboolean deps);
/* Several devices. dr_fake_set_devices(n) (1..DR_FAKE_MAX_DEVICES; a
 * setting a reset keeps; default 1) makes cudaGetDeviceCount say n and
 * devices 0..n-1 valid everywhere a device is named. cudaSetDevice
 * selects the current device (a reset selects 0); streams, events and
 * device memory belong to the device current when they were made. Work
 * on a stream of another device than the current one, an event recorded
 * on another device's stream, elapsed time between two devices' events, a
 * kernel argument or memset in another device's memory, and
 * cudaMemcpyAsync between two devices' memory (dagrun's peer copies use
 * cudaMemcpyPeerAsync) are misuses; cudaStreamWaitEvent takes any
 * device's event, as the runtime does. Each device has its own default
 * pool and pool accounting. dr_fake_set_peer_access(FALSE) (a setting;
 * default TRUE) makes cudaDeviceCanAccessPeer say no for every pair, and
 * enabling it a misuse; enabling it twice for a pair answers
 * cudaErrorPeerAccessAlreadyEnabled. dr_fake_peer_enables counts the
 * calls that enabled device -> peer since the reset (the second and later
 * ones are counted too, though they failed); dr_fake_device_of is the
 * device of a live stream, event or allocation (-1: none). A trace entry
 * of cudaSetDevice carries the device in `size`, of
 * cudaDeviceEnablePeerAccess the peer. */
#define DR_FAKE_MAX_DEVICES 8
void dr_fake_set_devices(int n);
void dr_fake_set_peer_access(gboolean can);
guint dr_fake_peer_enables(int device, int peer);
int dr_fake_device_of(gconstpointer obj);

/* Work a library enqueues on a stream by itself, not through the table
 * (NCCL's kernels; tests/mpi/fake_nccl.c): `fn(data)` is performed at
 * once (not when data moves are off), or, while a capture is in
 * progress, recorded as a kernel node of that stream named `name` in
 * dr_fake_graph_shape and performed by each replay. No fault point, no
 * trace entry, no device check (the library selects its device itself).
 * FALSE (a misuse) when `stream` is not a live fake stream. `data` must
 * outlive every graph that holds it. dr_fake_mem_device: the device of
 * the fake device memory holding `p` (-1: host, pinned or unknown);
 * dr_fake_current_device: the device cudaSetDevice selected last. */
gboolean dr_fake_library_work(cudaStream_t stream, const char *name, void (*fn)(void *), void *data);
int dr_fake_mem_device(gconstpointer p);
int dr_fake_current_device(void);

/* Copy batches (streams mode, backends/cuda/batch.h): dr_fake_api_batch
 * is dr_fake_api plus cudaMemcpyBatchAsync, which checks CUDA 13's rules
 * for its arrays (a count, attributes whose first applies from copy 0,
 * each access order valid), calls two copies of one batch whose bytes
 * overlap where one writes a misuse (the runtime may run them in any
 * order), is refused in a capture, and performs the copies last first.
 * dr_fake_batch_sizes: the copies of each successful batch since the
 * reset, "3,2" ("" when none). Borrowed. dr_fake_set_batch_refused(TRUE)
 * (a setting a reset keeps) answers every batch cudaErrorNotSupported, as
 * a driver before 12.8 does. */
const DrCudaApi *dr_fake_api_batch(void);
const char *dr_fake_batch_sizes(void);
void dr_fake_set_batch_refused(gboolean refused);

/* A captured launch of built-in `kernel` (NULL: none, the default) whose
 * first parameter spans at least `count` elements adds a second kernel
 * node after its own, as cuBLAS's gemm does at some shapes (a split-K
 * reduction): that launch is then no one node that can be set in place. */
void dr_fake_set_split(const char *kernel, guint64 count);

/* How many times replays ran such a second node since dr_fake_set_split
 * (a disabled one does not run). */
guint dr_fake_split_runs(void);

/* Word stores (DrCudaApi.words_launch: graph mode's parameters in device
 * memory) since the reset; dr_fake_api_graph_nodes has the entry. */
guint dr_fake_words_launches(void);

/* dr_fake_api_graph_nodes with user_node_copy: a user kernel's node can be
 * set in place. Until dr_fake_reset, user kernel launches also record
 * their second argument (8 bytes: the test's kernel must have two), and
 * dr_fake_user_replayed says what the last replay of one had. */
const DrCudaApi *dr_fake_api_user_sets(void);
guint64 dr_fake_user_replayed(void);

/* cuBLAS (the table's blas_* entries). With dr_fake_set_blas(TRUE, 0) (a
 * setting a reset keeps; default off) a gemm's cuBLAS context is a fake
 * object (live kind "cuBLAS contexts") over the backend's workspace, which
 * must be live device memory, and a gemm's launch (a kernel_launch with
 * DR_KFLAG_BLAS, one kernel node in a capture, its host twin run as any
 * built-in's) checks that its context is live and bound to the launch's
 * stream (a misuse otherwise). `extra` (non-zero) makes each gemm launch
 * in a capture also add a node of that type after its kernel, as a cuBLAS
 * that captured more than kernels would. Off, the entries call the real
 * kernels/blas.c (no cuBLAS on the machine: the backend's setup fails). */
void dr_fake_set_blas(gboolean on, enum cudaGraphNodeType extra);

/* Successful cudaLaunchKernel calls (user kernels) since the reset; in a
 * capture each is a kernel node named "user" in dr_fake_graph_shape. */
guint dr_fake_user_launches(void);

/* Whether cudaProfilerStart was called and cudaProfilerStop not since. */
gboolean dr_fake_profiling(void);

/* Fault points counted so far (after a fault-free run: the run's C). */
guint64 dr_fake_points(void);
/* Every call since the reset, in order (DrFakeCall). Borrowed. */
const GArray *dr_fake_trace(void);
/* Index in the trace of the injected fault's call, or -1 when it has not
 * fired. */
gint64 dr_fake_fault_index(void);
/* Misuses seen (bad handles, work on released objects, legacy-stream use,
 * non-release calls after a sticky fault...), one per line; "" when none.
 * Borrowed. */
const char *dr_fake_misuse(void);
/* Non-release, non-error-reporting calls made after a sticky fault fired
 * (cudaDeviceSynchronize, cudaStreamEndCapture and cudaProfilerStop count as cleanup and are
 * not listed), one name per line; "" when none. Borrowed. */
const char *dr_fake_after_sticky(void);

G_END_DECLS

#endif
