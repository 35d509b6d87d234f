/* run.h: running a DrPlan and reporting what happened: the options, the
 * run report (per-node timing medians, makespan, --verify's verdict) and its
 * three renderings (a text table, JSON, a Chrome/Perfetto trace).
 *
 * dr_run picks a backend (host threads, CUDA streams or a captured CUDA
 * graph, see backend.h), sets up every buffer outside the timed region, runs
 * `warmup` untimed and `iterations` timed iterations, saves buffers that ask
 * for it, and with `verify` re-runs the serial plan on the same backend from
 * the same initial contents and compares every written buffer byte for byte.
 * This file does not plan (scheduler/) and does not print to the terminal
 * except the host functions' output (print, checksum) and the one-line
 * notice when `auto` falls back to the host. */
#ifndef DAGRUN_BACKENDS_RUN_H
#define DAGRUN_BACKENDS_RUN_H

#include <glib.h>
#include <signal.h>
#include <stdio.h>

#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* X(ENUM_SUFFIX, spelling) */
#define DR_BACKEND_LIST(X) \
  X(AUTO, "auto")          \
  X(CUDA, "cuda")          \
  X(HOST, "host")

typedef enum {
#define DR_X(e, s) DR_BACKEND_##e,
  DR_BACKEND_LIST(DR_X)
#undef DR_X
      DR_N_BACKENDS
} DrBackendKind;

const char *dr_backend_kind_name(DrBackendKind kind);
gboolean dr_backend_kind_from_name(const char *name, DrBackendKind *out);
const char *dr_mode_name(DrMode mode);
gboolean dr_mode_from_name(const char *name, DrMode *out);

/* X(ENUM_SUFFIX, spelling): how the CUDA backend times each node. OFF is 0
 * and STAMPS 1 so that code written when this was a gboolean (TRUE: time
 * every node) keeps its meaning and gets the cheap default.
 *   off:    the makespan only; node times are NAN.
 *   stamps: each node's end lands as a %globaltimer value in its slot of a
 *           device array (copied back once per iteration, after the
 *           join): eagerly, a built-in kernel writes it itself (its last
 *           block, DR_KFLAG_STAMPS, no extra launch) and other nodes get a
 *           one-thread stamp kernel after them; in a graph every node gets
 *           a stamp node on a side stream. A node's end is its stamp; its
 *           start is when it became ready: the latest of the iteration's
 *           start stamp, the end stamp of the previous node on its stream
 *           and the end stamps of the nodes it waits on. That
 *           "ready-to-end" interval includes any queueing behind other
 *           work. %globaltimer ticks in ns but may advance in ~1 µs steps.
 *   events: two timing events around each node, exact (the reference
 *           mode) but ~3-3.6 µs of GPU time per node on an H200.
 *   auto:   (the default) stamps in graph mode; in streams mode stamps
 *           unless more than 2 nodes in 5 would need a stamp launch (not
 *           self-stamping built-ins), else events. Measured on an H200
 *           (tests/backends, 500-kernel chain): stamps cost 0.12 µs per
 *           node in a graph and nothing measurable eagerly (-0.11 µs),
 *           events 3.8 and 2.1-3.0 µs; a stamp launch costs ~4 µs of host
 *           time eagerly.
 * The host backend times every node with host clocks whatever the mode. */
#define DR_TIMING_LIST(X) \
  X(OFF, "off")           \
  X(STAMPS, "stamps")     \
  X(EVENTS, "events")     \
  X(AUTO, "auto")

typedef enum {
#define DR_X(e, s) DR_TIMING_##e,
  DR_TIMING_LIST(DR_X)
#undef DR_X
      DR_N_TIMINGS
} DrTimingMode;

const char *dr_timing_mode_name(DrTimingMode mode);
gboolean dr_timing_mode_from_name(const char *name, DrTimingMode *out);

typedef struct {
  DrBackendKind backend; /* auto: CUDA when a device is usable, else host */
  DrMode mode;           /* streams | graph (CUDA only; the host runs threads) */
  guint32 iterations;    /* timed iterations, >= 1 */
  guint32 warmup;        /* untimed iterations before them */
  gboolean verify;       /* compare against the serial plan's run */
  /* Host backend: before each node sleep a pseudo-random 0..delay_max_us
   * µs seeded by (delay_seed, node, iteration); 0 = no delays. Shakes out
   * missing waits under --verify. */
  guint64 delay_seed;
  guint32 delay_max_us; /* 0: 200 */
  gint32 device;        /* CUDA device ordinal */
  /* How to time every node (see DR_TIMING_LIST). Events cost ~3-3.6 µs of
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
} DrRunOptions;

/* Fills `opts` with the graph's `run:` settings (mode, iterations, warmup,
 * device), backend auto, stamp timing, everything else off. */
void dr_run_options_init(DrRunOptions *opts, const DrGraph *graph);

typedef enum { DR_VERIFIED_NOT_RUN, DR_VERIFIED_PASS, DR_VERIFIED_FAIL } DrVerified;

/* One node's timing over the timed iterations. Times are µs relative to
 * the iteration's start; NAN where the backend did not measure. */
typedef struct {
  DrId node;
  const char *id; /* borrowed from the graph */
  DrOp op;
  guint32 stream;
  double start_us;    /* median */
  double duration_us; /* median */
  double duration_min_us, duration_max_us;
  guint64 bytes; /* copies and memsets: bytes moved; else 0 */
  double gbps;   /* bytes / median duration; NAN when not timed or no bytes */
} DrNodeReport;

typedef struct {
  DrId from, to; /* graph node ids: `to` waits for `from` */
} DrReportFlow;

typedef struct {
  char *name;                 /* the pipeline's name */
  const char *backend;        /* "host" | "cuda" */
  const char *mode;           /* "streams" | "graph" (the host reports "streams") */
  guint32 iterations, warmup; /* iterations: timed iterations done */
  gboolean interrupted;       /* DrRunOptions.stop ended the run early */
  guint32 iterations_requested;
  double makespan_us; /* median over the timed iterations */
  double makespan_min_us, makespan_max_us;
  DrVerified verified;
  /* When verified == DR_VERIFIED_FAIL: the first buffer (in buffer order)
   * and element that differ, and both values printed by type. */
  char *diff_buffer;
  guint64 diff_index;
  char *diff_serial;     /* the serial (reference) run's value */
  char *diff_concurrent; /* the concurrent run's value */
  GArray *nodes;         /* DrNodeReport, in plan (issue) order */

  /* Raw samples for the trace: [iterations][n_graph_nodes], µs relative
   * to each iteration's start (NAN when not measured), and each timed
   * iteration's start relative to the first's. */
  guint32 n_graph_nodes;
  double *sample_start, *sample_end;
  double *iter_start_us;
  double *iter_makespan_us;
  /* Plan facts the trace needs, copied so the report stands alone. */
  GArray *stream_priorities; /* DrPriority per plan stream */
  GArray *flows;             /* DrReportFlow: one per planned wait */

  /* Whole-run figures from the node medians (NAN when nodes were not
   * timed): the critical path is the longest path of the DAG (the graph's
   * dependency edges) weighted by median durations; `critical_nodes` lists
   * its nodes (DrId) from first to last. overlap_streams = sum of median
   * durations / (makespan × streams used); overlap_critical = critical
   * path / makespan (1.0: the run is as short as its dependencies allow). */
  double critical_path_us;
  GArray *critical_nodes;
  guint32 streams_used; /* plan streams with at least one node */
  double overlap_streams, overlap_critical;
} DrReport;

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

void dr_report_free(DrReport *report);

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
const char *dr_session_backend(const DrSession *session); /* "host" | "cuda" */
void dr_session_close(DrSession *session);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrSession, dr_session_close)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrReport, dr_report_free)

/* Returns FALSE and sets DR_ERROR_VERIFY (exit 1) naming the first
 * difference when the report's verification failed; TRUE otherwise. */
gboolean dr_report_check_verified(const DrReport *report, GError **error);

/* Appends a readable per-node table (plan order: id, op, stream, start,
 * median/min/max duration, GB/s), the makespan, the critical path and
 * overlap efficiency, and the verdict to `out`. */
void dr_report_write_text(const DrReport *report, GString *out);

/* Appends one JSON object: "name", "backend", "mode", "iterations",
 * "warmup", "makespan_us", "makespan_min_us", "makespan_max_us",
 * "verified" (true/false/null), "difference" (object or null),
 * "critical_path_us", "critical_path" (node ids), "overlap":
 * {"streams_used", "efficiency", "critical_over_makespan"}, "nodes":
 * [{"id","op","stream","start_us","duration_us","duration_min_us",
 * "duration_max_us","bytes","gbps"}]. Unmeasured numbers are null. */
void dr_report_write_json(const DrReport *report, GString *out);

/* Appends a Chrome trace event JSON object (Perfetto, chrome://tracing):
 * one "X" event per node and timed iteration, a track (tid) per plan stream
 * named by thread_name metadata with its priority, and a flow arrow
 * ("s"/"f" pair) per planned cross-stream wait and iteration. Nodes that
 * were not timed are left out. */
void dr_trace_write(const DrReport *report, GString *out);

/* Appends a self-contained SVG timeline of the median iteration (the timed
 * iteration whose makespan is closest to the median; timeline.c): a lane
 * per plan stream labelled with its number and priority, a bar per timed
 * node at its start with its duration, coloured by op (with a legend) and
 * labelled with its id where it fits, a <title> tooltip per node (id, op,
 * stream, start, duration, and the median/min/max duration over all
 * iterations), an arrow per planned wait from the waited node's end to the
 * waiting node's start, and a time axis. `plan` must be the plan the
 * report was made from. Nodes that were not timed get no bar, only their
 * <title>. */
void dr_timeline_write_svg(const DrReport *report, const DrPlan *plan, GString *out);

G_END_DECLS

#endif
