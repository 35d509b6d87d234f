/* run.h: running a DrPlan and reporting what happened: the options and
 * dr_run, which fills the run report (per-node timing medians, makespan,
 * --verify's verdict). The report model and its renderings (text, JSON,
 * Chrome/Perfetto trace, SVG timeline) are the report package's
 * (report/report.h, included here).
 *
 * dr_run picks a backend (host threads, CUDA streams or a captured CUDA
 * graph, see backend.h), sets up every buffer outside the timed region, runs
 * `warmup` untimed and `iterations` timed iterations, saves buffers that ask
 * for it, and with `verify` re-runs the serial plan on the same backend from
 * the same initial contents and compares every written buffer byte for byte.
 * This file does not plan (scheduler/) nor render reports (report/), and
 * does not print to the terminal except the host functions' output
 * (print, checksum) and the progress bar when asked; the notice when
 * `auto` falls back to the host is a g_message (domain "dagrun"). */
#ifndef DAGRUN_BACKENDS_RUN_H
#define DAGRUN_BACKENDS_RUN_H

#include <glib.h>
#include <signal.h>
#include <stdio.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "report/report.h"

G_BEGIN_DECLS

/* DrBackendKind, DrMode, DrTimingMode (what each timing mode does and
 * costs) and DrVerified are the public header's (include/dagrun/types.h);
 * their names are ir/names.h's. */

typedef struct {
  DrBackendKind backend; /* auto: CUDA when a device is usable, else host */
  /* streams | graph (CUDA only; the host runs threads) | auto: dr_run and
   * dr_session_open resolve auto (ir/mode.h) with `iterations`, keep what
   * was asked in mode_asked and say why in the report's mode_reason. */
  DrMode mode;
  DrMode mode_asked; /* set by dr_run and dr_session_open */
  /* Streams mode on CUDA: host threads issuing the iteration (threads.h);
   * 0: chosen from the plan's width (1 for narrow DAGs). */
  guint32 issue_threads;
  guint32 iterations; /* timed iterations, >= 1 */
  guint32 warmup;     /* untimed iterations before them */
  gboolean verify;    /* compare against the serial plan's run */
  /* Host backend: before each node sleep a pseudo-random 0..delay_max_us
   * µs seeded by (delay_seed, node, iteration); 0 = no delays. Shakes out
   * missing waits under --verify. */
  guint64 delay_seed;
  guint32 delay_max_us; /* 0: 200 */
  /* Host backend: when non-NULL, only the node of this id (a body node by
   * its path, e.g. "solve/step") sleeps, exactly delay_max_us µs before
   * each of its runs, and delay_seed is not read. A dropped wait u -> v is
   * then exposed on every run: delay u, and v, no longer ordered after it,
   * runs first (tests/backends/multi_device_test.c). */
  const char *delay_node_id;
  gint32 device; /* CUDA device ordinal */
  /* How to time every node (see DR_TIMING_LIST, include/dagrun/types.h). Events cost ~3-3.6 µs of
   * GPU time per node in both modes, measured on an H200 by
   * tests/backends/backends_gpu_test.c (a 500-node chain of small kernels
   * went from 1.0 to 4.7 µs/node in graph mode); stamps are the default.
   * Off: makespan only, and the nodes' times are NAN. */
  DrTimingMode node_timing;
  const char *trace_path;    /* NULL, or where dr_run writes the Chrome trace */
  const char *timeline_path; /* NULL, or where dr_run writes the SVG timeline */
  /* Draw a progress bar (iterations done / total) on stderr while the run
   * takes more than half a second. The caller decides (the CLI: only when
   * stderr is a terminal), so tests and JSON output stay clean. */
  gboolean progress;
  FILE *host_output; /* print/checksum output; NULL: stdout */
  /* When non-NULL, checked before every iteration: once *stop is nonzero
   * the run finishes the iteration in flight, releases everything and
   * returns the report of the timed iterations done so far, marked
   * `interrupted` (no --verify, no `save:` files). Set it from a signal
   * handler (the CLI's SIGINT) or from another thread with an atomic
   * store (g_atomic_int_set or __atomic_store_n). */
  const volatile sig_atomic_t *stop;
  /* Graph mode: when the iteration cannot be captured because a node's
   * launch broke the capture, run eagerly (streams) instead of failing,
   * with a one-line warning on stderr naming the node and why. */
  gboolean graph_fallback;
  /* Graph mode: NULL, or where to write CUDA's DOT of the captured graph
   * (cudaGraphDebugDotPrint, verbose) once it is captured. */
  const char *cuda_graph_dot_path;
} DrRunOptions;

/* Fills `opts` with the graph's `run:` settings (mode, iterations, warmup,
 * device), backend auto, stamp timing, everything else off. */
void dr_run_options_init(DrRunOptions *opts, const DrGraph *graph);

/* --plan on the CUDA backend says how each peer copy between two devices
 * will move (DrPlan.peer_path): with `backend` cuda or auto, and a peer
 * copy between two different devices in `plan`, asks
 * cudaDeviceCanAccessPeer (through DrCudaApi; no stream, no allocation)
 * for each pair a peer copy uses, as the CUDA backend will at open
 * (backends/cuda/streams.c). Leaves peer_path NULL (unknown) for the host
 * backend, or when the runtime says no device, or a call fails (the run
 * says it then). */
void dr_run_probe_peers(DrPlan *plan, DrBackendKind backend);

/* Hardware queues: the CUDA backend runs a plan's streams eagerly on the
 * device's hardware work queues, 8 by default; with more streams than
 * queues, streams share queues and serialize falsely (GPU-NOTES.md). The
 * driver takes the queue count from the environment variable
 * CUDA_DEVICE_MAX_CONNECTIONS (1..32) when it creates the process's CUDA
 * context, that is at the process's first CUDA call. dr_run never reads
 * or sets it: the library resolves the cap and sets the variable to 32
 * before the context exists when its plan relied on that
 * (lib/settings.c), for the C API and the CLI alike.
 *
 * Runs `plan` (its graph must have passed the scheduler's passes) with
 * `opts` (NULL: dr_run_options_init of the plan's graph). Returns the report
 * (free with dr_report_free), or NULL with `error` set:
 *   DR_ERROR_UNAVAILABLE  --backend=cuda and no usable device;
 *   DR_ERROR_IO           an init file could not be read;
 *   DR_ERROR_OUTPUT       a save path, the trace or the timeline could not
 *                         be written (the message names the path);
 *   DR_ERROR_RUNTIME      a CUDA call or a host kernel failed (the message
 *                         names the node, its stream and the call), after
 *                         every resource has been released.
 * A --verify difference is not an error: the report says DR_VERIFIED_FAIL
 * (see dr_report_check_verified). */
DrReport *dr_run(const DrPlan *plan, const DrRunOptions *opts, GError **error);

/* A session: a plan's backend opened and set up once (buffers allocated
 * and initialised; graph mode captured and instantiated), then run as many
 * times as wanted, each run `warmup` + `iterations` iterations with its own
 * report. Buffers carry their contents over from run to run (their `init:`
 * applies once, at open); `save:` files are written after every run that
 * was not interrupted; trace and timeline options apply to every run. What
 * the library's DrRunner wraps (dagrun.h).
 *
 * dr_session_open fails like dr_run (and DR_ERROR_USAGE for `verify`:
 * there is no serial run from the same contents to compare with).
 * dr_session_args_changed tells the backend that scalar kernel arguments
 * of the plan's graph changed (the caller changed them), those of `nodes`
 * [n] or, with NULL, of any node: see DrBackendOps.args_changed for
 * *how. dr_session_read_buffer copies a
 * whole-run buffer (DR_ERROR_USAGE for a stream-ordered one). The plan
 * must outlive the session. */
typedef struct DrSession DrSession;
DrSession *dr_session_open(const DrPlan *plan, const DrRunOptions *opts, GError **error);
DrReport *dr_session_run(DrSession *session, GError **error);
gboolean dr_session_args_changed(DrSession *session, const DrId *nodes, guint32 n, const char **how,
                                 GError **error);
gboolean dr_session_read_buffer(DrSession *session, DrId buffer, void *dst, GError **error);
/* More about the last args_changed than its *how (dr_session_update_detail,
 * DrBackendOps.update_detail), zero where there is nothing to say. */
typedef struct {
  /* The node that could not be updated in place and so forced a
   * whole-graph update (borrowed from the graph), or NULL. */
  const char *forced_by;
  /* run.graph_cache: what the cache did ("hit", "miss", "evict"; static,
   * NULL: not used) and the variants it holds now. */
  const char *cache;
  guint32 variants;
  /* Graph mode: the changed nodes whose new counts were written to
   * device memory (cuda/devwords.h) instead of set on the executable. */
  guint32 device_reads;
} DrUpdateDetail;

/* Writes each parameter buffer (`param:`) whose parameter's value differs
 * from what it holds (one store, in stream order after the iterations
 * queued and before the next: DrBackendOps.write_words, else
 * write_buffer); *written says how many. Between runs. */
gboolean dr_session_write_params(DrSession *session, guint32 *written, GError **error);

/* After dr_session_args_changed: DrBackendOps.update_detail's answer
 * (DrUpdateDetail), all zero when the backend has nothing to say. */
void dr_session_update_detail(const DrSession *session, DrUpdateDetail *detail);
/* External memory and the caller's stream (DrBackendOps.bind_buffer,
 * write_buffer, run_on_stream): FALSE with DR_ERROR_USAGE for a
 * stream-ordered buffer, a size that is not the buffer's (bind) or a range
 * past its end (write); DR_ERROR_UNAVAILABLE when the backend has no such
 * operation; else as the backend fails. */
gboolean dr_session_bind_buffer(DrSession *session, DrId buffer, void *ptr, gsize bytes, const char **how,
                                GError **error);
gboolean dr_session_write_buffer(DrSession *session, DrId buffer, guint64 offset, const void *data,
                                 guint64 bytes, GError **error);
gboolean dr_session_run_on_stream(DrSession *session, void *stream, GError **error);
const char *dr_session_backend(const DrSession *session); /* "host" | "cuda" */
void dr_session_close(DrSession *session);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrSession, dr_session_close)

G_END_DECLS

#endif
