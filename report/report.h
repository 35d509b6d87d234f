/* report.h: the report package: the run report model (DrReport: per-node
 * timing medians, makespan, critical path, --verify's verdict) and every
 * writer of what dagrun tells the user about a plan or a run: the run
 * report as a text table and as JSON, the Chrome/Perfetto trace, the SVG
 * timeline, the plan as text, JSON and Graphviz DOT, and the reader of the
 * JSON run report (--profile).
 *
 * All writers share one JSON writer and one number formatter (json.h,
 * num.h), so no output depends on the process's locale and every JSON
 * output escapes and separates the same way. docs/report.md documents the
 * JSON outputs and docs/report.schema.json is their schema.
 *
 * Not here: running (backends/run.c fills the report's samples; stats.c
 * here turns them into medians and the critical path), planning
 * (scheduler/ builds the plan), the public API's report accessors
 * (lib/api.c). This package depends on ir/ and GLib only. */
#ifndef DAGRUN_REPORT_REPORT_H
#define DAGRUN_REPORT_REPORT_H

#include <glib.h>
#include <stdio.h>

#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* The run report JSON's "schema": raised on any incompatible change to a
 * JSON output (a key removed or renamed, a meaning changed). */
#define DR_REPORT_SCHEMA 1

/* DrVerified is the public header's (include/dagrun/types.h). */

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
  const char *what; /* its summary row's name (DrOpSummary.name) */
  /* Bytes a copy or memset moves (its destination slice), or a kernel
   * reads plus writes through its buffer arguments' slices (a readwrite
   * argument counts twice); 0 for other ops. */
  guint64 bytes;
  double gbps; /* bytes / median duration; NAN when not timed or no bytes */
  /* The GPU its stream belongs to (DrStream.device): -1 for a collective
   * over several devices of one process (one launch per device). */
  gint32 device;
} DrNodeReport;

typedef struct {
  DrId from, to; /* graph node ids: `to` waits for `from` */
} DrReportFlow;

/* One loop or conditional (ir/loops.h) of the top-level graph over the
 * timed iterations: the trips its body made per iteration (a conditional:
 * 1 when a body ran, 0 when none did), as the backend counted them. */
typedef struct {
  DrId node;
  const char *id; /* borrowed from the graph */
  guint64 trips_min, trips_max, trips_sum;
  guint32 samples; /* timed iterations counted */
  /* Over the loop's trips that have spans (DrTripSpan, every timed
   * iteration; dr_report_summarise): how many, and their durations'
   * median, min and max in µs (NAN: none). */
  guint64 trip_spans;
  double trip_us_median, trip_us_min, trip_us_max;
  /* Its body nodes timed in the last trip (DrBodySpan; at any depth
   * under it), DrBodyNodeStats in the order first seen; NULL: none
   * (owned, dr_report_summarise). */
  GArray *body;
} DrLoopReport;

/* One body node's times in its loop's last trip over the timed
 * iterations that timed it: how many, their median, min and max (µs). */
typedef struct {
  const char *id;   /* scoped, borrowed from the graph */
  const char *loop; /* the loop whose body holds it */
  guint32 samples;
  double us_median, us_min, us_max;
} DrBodyNodeStats;
/* One trip of a loop's body in one timed iteration, as the backend timed
 * it (the trace draws it under its loop node, the timeline shades it in
 * the node's bar): µs from the iteration's start, like the node samples.
 * Loops nested in a body have trips too, `depth` deep (0: a trip of a
 * top-level loop), each under the trip of the loop around it. */
typedef struct {
  guint32 iteration; /* timed iteration */
  DrId node;         /* the top-level (loop) node it runs under */
  guint32 depth;
  const char *loop; /* the loop's scoped id, borrowed from the graph ("solve", "solve/inner") */
  guint64 trip;     /* 0-based, within its run of the loop */
  double start_us, end_us;
} DrTripSpan;

/* Per timed iteration and loop (nested ones too) that made trips: how many
 * it made in all (over every run of a nested loop) and how many of them
 * have no span (DR_TRIP_SPANS_KEEP). */
typedef struct {
  guint32 iteration;
  DrId node;        /* the top-level node */
  const char *loop; /* borrowed from the graph */
  guint64 trips, dropped;
} DrTripCount;

/* One node of a loop's body in the last trip of the loop in one timed
 * iteration (graph mode on the CUDA backend: each built-in's own end
 * stamp, its start when it became ready in the body's plan; no other
 * backend or mode times body nodes): µs from the iteration's start, like
 * the trips. */
typedef struct {
  guint32 iteration; /* timed iteration */
  DrId node;         /* the top-level (loop) node it runs under */
  const char *loop;  /* the loop whose body holds it, borrowed from the graph */
  const char *id;    /* the body node's scoped id ("solve/step"), borrowed */
  guint64 trip;      /* the trip (its loop's last in the iteration) */
  double start_us, end_us;
} DrBodySpan;

/* The bound on trip spans: per loop and timed iteration, the first
 * DR_TRIP_SPANS_KEEP trips and the last DR_TRIP_SPANS_KEEP (counted over
 * every run of a nested loop in the iteration) keep their spans; those in
 * between are only counted (DrTripCount.dropped), so a 10^6-trip loop
 * costs 2 x DR_TRIP_SPANS_KEEP spans per iteration. */
#define DR_TRIP_SPANS_KEEP 32u

/* A trip log: what a backend fills with one iteration's trips under that
 * bound (trips.c), safe to add to from several threads. dr_trip_log_add
 * appends the next trip of `loop` (the key is the id pointer) in the
 * iteration; dr_trip_log_skip counts `n` trips of it that have no times
 * (a device ring that kept only the bound's trips: the trips between).
 * dr_trip_log_take appends the iteration's spans (per loop, outer loops
 * first, else in the order of their first logged trip; each loop's in
 * trip order) to `spans` and its counts to `counts`
 * as `iteration`, then empties the log. dr_trip_log_body notes body node
 * `id` of `loop` in that loop's last trip `trip` (DrBodySpan);
 * dr_trip_log_take_body appends those to `spans` (DrBodySpan) as
 * `iteration` in the order noted and forgets them. */
typedef struct DrTripLog DrTripLog;
DrTripLog *dr_trip_log_new(void);
void dr_trip_log_free(DrTripLog *log);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrTripLog, dr_trip_log_free)
void dr_trip_log_add(DrTripLog *log, const char *loop, DrId node, guint32 depth, guint64 trip,
                     double start_us, double end_us);
void dr_trip_log_skip(DrTripLog *log, const char *loop, DrId node, guint32 depth, guint64 n);
void dr_trip_log_take(DrTripLog *log, guint32 iteration, GArray *spans, GArray *counts);
void dr_trip_log_body(DrTripLog *log, const char *loop, DrId node, const char *id, guint64 trip,
                      double start_us, double end_us);
void dr_trip_log_take_body(DrTripLog *log, guint32 iteration, GArray *spans);

/* One row of the summary by kernel/op (summary.c), like nsys stats'
 * cuda_gpu_kern_sum: the nodes of one op and name (a kernel's name, a
 * host node's function ("callback" for a C API one), a copy's direction
 * ("copy H2D", "copy D2H", "copy D2D", "copy H2H"), else the op's name)
 * over every timed iteration.
 * An instance is one node's execution in one timed iteration that was
 * timed. Durations in µs; NAN when no instance was timed. */
typedef struct {
  DrOp op;
  const char *name; /* owned by the report (summary_names) */
  guint32 nodes;    /* nodes in the row */
  guint64 instances;
  double total_us;  /* the sum of the instances' durations */
  double percent;   /* total_us / the sum of every row's total_us × 100 */
  double median_us; /* over the instances */
  double stddev_us; /* sample standard deviation (n - 1); 0 for one */
  double min_us, max_us;
  guint64 bytes; /* the nodes' bytes (DrNodeReport.bytes) × their timed instances */
  double gbps;   /* bytes / total_us, in GB/s; NAN without bytes or time */
} DrOpSummary;

typedef struct {
  char *name;                 /* the pipeline's name */
  const char *backend;        /* "host" | "cuda" */
  const char *mode;           /* "streams" | "graph" (the host reports "streams") */
  char *mode_reason;          /* why that mode (ir/mode.h: "auto: ...", "set by ..."), or NULL */
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
  /* Buffers compared within a tolerance (`verify: {rtol, atol}`): the
   * largest |concurrent - serial| over them, where (largest_buffer NULL:
   * none compared, or all equal), and how many buffers `verify: skip`
   * left out. */
  char *largest_buffer;
  guint64 largest_index;
  double largest_abs;
  char *largest_serial, *largest_concurrent;
  guint32 verify_skipped;
  GArray *nodes; /* DrNodeReport, in plan (issue) order */

  /* Raw samples for the trace: [iterations][n_graph_nodes], µs relative
   * to each iteration's start (NAN when not measured), and each timed
   * iteration's start relative to the first's. */
  guint32 n_graph_nodes;
  double *sample_start, *sample_end;
  double *iter_start_us;
  double *iter_makespan_us;
  /* Plan facts the trace needs, copied so the report stands alone. */
  GArray *stream_priorities; /* DrPriority per plan stream */
  GArray *stream_devices;    /* gint32 per plan stream (DrStream.device); NULL: all the run's one device */
  /* The run drives several devices (run.devices, or a collective over
   * several): the text report and the timeline show each node's device,
   * the trace has a process per device. */
  gboolean multi_device;
  /* The MPI rank this report is of (graph->rank) and the job's ranks
   * (run.nranks; 1: no job): the trace names its process after the rank. */
  guint32 rank, nranks;
  GArray *flows; /* DrReportFlow: one per planned wait */

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

  /* Device memory (the plan's figures, ir/plan.h, copied so the report
   * stands alone): the serial peak in file order and the certified bound
   * over every execution the plan allows; and the high-water mark the
   * backend measured over the run (whole-run buffers plus the most
   * stream-ordered bytes live at once), G_MAXUINT64 when the backend does
   * not measure it or the plan has no device memory. */
  guint64 peak_serial_bytes, peak_bound_bytes, peak_measured_bytes;
  /* For the memory track (memory_track.c): the whole-run device bytes and,
   * per graph node, the pool bytes an alloc node takes (+) or a free node
   * gives back (-), else 0; mem_delta NULL when no node allocates. */
  guint64 whole_run_bytes;
  gint64 *mem_delta;

  /* DrLoopReport per loop of the graph, in graph->loops order; NULL when
   * the graph has none or the backend does not count trips. */
  GArray *loops;

  /* Trip spans (DrTripSpan) and counts (DrTripCount) of every timed
   * iteration, in iteration order; NULL when the graph has no loops, the
   * nodes were not timed or the backend does not time trips. */
  GArray *trip_spans, *trip_counts;
  /* Body node spans (DrBodySpan) of every timed iteration, in iteration
   * order; NULL when no backend timed body nodes. */
  GArray *body_spans;

  /* The summary by kernel/op (DrOpSummary), rows in the order their first
   * node appears in plan order; writers sort a copy (dr_report_summary). */
  GArray *summary;
  GStringChunk *summary_names; /* the rows' names: the report outlives the graph */

  /* Run-time parameters (`params:`): the values this run used
   * (DrReportParam, declaration order; NULL when none are declared), and
   * for a runner's run how the change reached the backend (param_update,
   * static: "none", "rebound", "updated-nodes", "updated",
   * "re-instantiated", "cached"; NULL outside a runner), the nodes it updated and
   * the host time it took (NAN: nothing changed). */
  GArray *params;
  const char *param_update;
  guint32 param_nodes;
  double param_update_us;
  /* For that change: the node that could not be updated in place and
   * forced a new capture (NULL: none), and with run.graph_cache the
   * cache's result ("hit", "miss", "evict"; NULL: not used) and the
   * variants it holds. Strings outlive the graph (the runner copies). */
  const char *param_forced_by;
  const char *graph_cache;
  guint32 graph_cache_variants;
  /* Of the nodes it updated, those whose new counts went to device memory
   * (graph mode's parameters in device memory) rather than to a node set. */
  guint32 param_device_reads;
  /* Parameter buffers (`param:`) it wrote before the run. */
  guint32 param_buffers;
} DrReport;

/* One parameter's value in a report. */
typedef struct {
  char *name; /* owned */
  gboolean is_int;
  gint64 i;
  double f;
} DrReportParam;

/* Copies the current values of graph's parameters into report->params
 * (nothing when it declares none); model.c. */
void dr_report_set_params(DrReport *report, const DrGraph *graph);

/* A new report for a run of `plan` (stats.c): named after the plan's
 * graph, verdict not run, every sample NAN, room for `iterations` (at
 * least 1) iterations of samples, and the plan's stream priorities and
 * waits copied. The backend then fills sample_start/sample_end and
 * iter_makespan_us (and `backend`, `mode`); free with dr_report_free. */
DrReport *dr_report_new(const DrPlan *plan, guint32 iterations, guint32 warmup);

/* Computes everything the writers print from the samples (stats.c): each
 * node's median start and median/min/max duration (NaN samples ignored;
 * NAN when none), bytes and GB/s, in plan order; the makespan statistics;
 * the iterations' trace offsets; the critical path and overlap figures.
 * Call once, after the samples are in; `plan` is the report's. */
void dr_report_summarise(DrReport *report, const DrPlan *plan);

/* Fills report->summary from the samples and each node's bytes
 * (summary.c); dr_report_summarise calls it last. O(iterations × V log
 * (iterations × V)). */
void dr__report_summarise_ops(DrReport *report, const DrPlan *plan);

/* The summary's rows (pointers into report->summary, a new array for the
 * caller to g_ptr_array_unref) in `sort`'s order: largest first by the
 * key (NAN last), by name A to Z for DR_REPORT_SORT_NAME; ties by name,
 * then op. */
GPtrArray *dr_report_summary(const DrReport *report, DrReportSort sort);

/* Frees a report and everything it owns (NULL-safe). */
void dr_report_free(DrReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrReport, dr_report_free)

/* Returns FALSE and sets DR_ERROR_VERIFY (exit 1) naming the first
 * difference when the report's verification failed; TRUE otherwise. */
gboolean dr_report_check_verified(const DrReport *report, GError **error);

/* ---- the run report (run_report.c, trace.c, timeline.c) ---------------- */

/* Appends a readable per-node table (plan order: id, op, stream, start,
 * median/min/max duration, GB/s), the summary by kernel/op in `sort`'s
 * order, the makespan, the critical path and overlap efficiency, and the
 * verdict to `out`. */
void dr_report_write_text_sorted(const DrReport *report, DrReportSort sort, GString *out);
/* dr_report_write_text_sorted by total time. */
void dr_report_write_text(const DrReport *report, GString *out);

/* Appends one JSON object and a newline: "schema" (DR_REPORT_SCHEMA),
 * "name", "backend", "mode", "iterations", "warmup", "interrupted",
 * "makespan_us", "makespan_min_us", "makespan_max_us", "verified"
 * (true/false/null), "difference" (object or null), "critical_path_us",
 * "critical_path" (node ids), "overlap": {"streams_used", "efficiency",
 * "critical_over_makespan"}, "nodes": [{"id", "op", "stream", "start_us",
 * "duration_us", "duration_min_us", "duration_max_us", "bytes", "gbps"}],
 * "summary": [{"name", "op", "nodes", "instances", "duration_total_us",
 * "time_percent", "duration_us", "duration_stddev_us", "duration_min_us",
 * "duration_max_us", "bytes", "gbps"}] in `sort`'s order. Unmeasured
 * numbers are null. docs/report.md has the details. */
void dr_report_write_json_sorted(const DrReport *report, DrReportSort sort, GString *out);
/* dr_report_write_json_sorted by total time. */
void dr_report_write_json(const DrReport *report, GString *out);

/* Appends a Chrome trace event JSON object (Perfetto, chrome://tracing):
 * one "X" event per node and timed iteration, a track (tid) per plan stream
 * named by thread_name metadata with its priority, and a flow arrow
 * ("s"/"f" pair) per planned cross-stream wait and iteration, and counter
 * tracks ("C" events, one sample per distinct start or end time):
 * "concurrency" {"nodes": N running} and, when the plan has copies, "copy
 * bandwidth" {"GB/s": the sum over running copies of bytes / duration}.
 * Each trip span (trip_spans) is an "X" event "LOOP trip" (cat "trip",
 * args iteration, loop, trip) on its loop node's track, and a loop node's
 * event carries its loops' "trips" (and "trips_without_span") counts.
 * Nodes that were not timed are left out. */
void dr_trace_write(const DrReport *report, GString *out);

/* Appends a self-contained SVG timeline of the median iteration (the timed
 * iteration whose makespan is closest to the median; timeline.c): a lane
 * per plan stream labelled with its number and priority, a bar per timed
 * node at its start with its duration, coloured by op (with a legend) and
 * labelled with its id where it fits, a <title> tooltip per node (id, op,
 * stream, start, duration, and the median/min/max duration over all
 * iterations: "ID (OP), stream S, ..."), the critical path outlined in
 * black, an arrow per planned wait from the waited node's end to the
 * waiting node's start (only the critical path's when there are many, and
 * each node's own while the pointer is on its bar),
 * and a time axis. Runs of bars too narrow to see are drawn as one bar
 * whose tooltip is "N nodes (OP ×K, ...), stream S, ...; ids: A, B, ...";
 * untimed nodes get no bar, only a tooltip: their own "ID (not timed),
 * stream S" or one per lane, "N nodes (not timed), stream S; ids: ...".
 * Every node is named in exactly one tooltip. A loop node's bar shades
 * its odd trips of the drawn iteration (rects of class "trip") and its
 * tooltip ends "; N trips in this iteration" (", M of them not drawn").
 * `plan` must be the plan the report was made from. */
void dr_timeline_write_svg(const DrReport *report, const DrPlan *plan, GString *out);
/* The timeline's scale limits: at most about DR_TIMELINE_ELEMENT_BUDGET
 * bars (bars narrower than a pixel, or than the width that keeps within
 * the budget, merge into one bar per run whose tooltip lists their ids),
 * so 100k nodes make a few MB; and every wait is drawn only when there are
 * at most DR_TIMELINE_ALL_WAITS_MAX, else only the critical path's. */
#define DR_TIMELINE_ELEMENT_BUDGET 6000
#define DR_TIMELINE_ALL_WAITS_MAX 200
#define DR_TIMELINE_PATH_ARROWS_MAX 1000 /* the critical path's, at most */
/* Beyond DR_TIMELINE_ALL_WAITS_MAX, each single node's bar also holds the
 * arrows of its own waits, hidden until hovered: this many in all. */
#define DR_TIMELINE_HOVER_WAITS_MAX 4000

/* ---- the plan (plan_text.c, plan_json.c, dot.c) ------------------------ */

/* Appends the human-readable plan (--plan): summary, the cap and what it
 * costs when it binds, the antichain, each stream's nodes, then every step
 * in issue order with its waits. Stable text: the golden-test format. */
void dr_plan_write_text(const DrPlan *plan, GString *out);

/* Appends the plan as one JSON object and a newline (--plan
 * --format=json): streams, width, events, edges, cap, cap_binds,
 * critical_path_us, planned_path_us, antichain, stream_priorities and
 * nodes (id, op, stream, priority, waits) in plan order. */
void dr_plan_write_json(const DrPlan *plan, GString *out);

/* The same bytes as dr_plan_write_json, written to `file` as they are
 * made (a few tens of KiB in memory, whatever the plan's size). FALSE
 * with DR_ERROR_IO (naming `what`, e.g. the path) when a write fails. */
gboolean dr_plan_write_json_file(const DrPlan *plan, FILE *file, const char *what, GError **error);

/* DrDotDetail is the public header's (include/dagrun/types.h); auto draws
 * every node up to DR_DOT_AUTO_FULL_MAX nodes, else the summary. */
#define DR_DOT_AUTO_FULL_MAX 200

typedef struct {
  DrDotDetail detail;
  /* NULL, or each graph node's duration in µs (NAN: unknown), from a run
   * (dr_report_durations) or a profile (dr_profile_read): the nodes show
   * them and the critical path is drawn bold. */
  const double *duration_us;
  const char *timing_source; /* where they come from, for the legend ("run", "profile FILE") */
} DrDotOptions;

/* Appends the plan as a Graphviz digraph (--dot; dot.c): one cluster per
 * stream, nodes coloured by stream and labelled with id, label and op
 * (copies with their direction), every edge labelled with its buffer and
 * hazard or "after", event waits dashed red, a legend as the graph's
 * label; with durations, the critical path bold. opts NULL: auto detail,
 * no durations. */
void dr_plan_write_dot_opts(const DrPlan *plan, const DrDotOptions *opts, GString *out);
/* dr_plan_write_dot_opts with NULL options. */
void dr_plan_write_dot(const DrPlan *plan, GString *out);

/* Returns a new array (g_free) of each graph node's median duration in
 * µs from `report` (NAN for nodes it did not time), n_graph_nodes long. */
double *dr_report_durations(const DrReport *report);

/* ---- the profile reader (profile.c) ------------------------------------ */

/* Reads the JSON run report at `path` (what dr_report_write_json writes,
 * or any JSON object with a "nodes" array of {"id", "duration_us"}) and
 * sets dur[v] (indexed by DrId of `graph`) to the measured median of each
 * node it names with a finite, non-negative duration; other nodes (null:
 * not timed; unknown ids) keep their value. FALSE with DR_ERROR_IO when the
 * file cannot be read, is not such JSON (naming the byte), has no "nodes"
 * array or a "schema" newer than DR_REPORT_SCHEMA. */
gboolean dr_profile_read(const char *path, const DrGraph *graph, double *dur, GError **error);

/* The durations of the profile at `path` for `graph`: a new array indexed
 * by DrId (g_free it), NAN for each node the profile does not time. NULL
 * with dr_profile_read's error. */
double *dr_profile_durations(const char *path, const DrGraph *graph, GError **error);

/* The profile's median makespan (NAN when it has none) and mode (a new
 * string, NULL when it has none); FALSE with DR_ERROR_IO as
 * dr_profile_read. */
gboolean dr_profile_makespan(const char *path, double *makespan_us, char **mode, GError **error);

/* After a --profile: the predicted makespan line of --plan (nothing when
 * the plan has no prediction), and --explain's split of the gap between
 * the measured makespan and the critical path (plan_text.c). */
void dr_plan_write_prediction(const DrPlan *plan, GString *out);
void dr_plan_write_explain(const DrPlan *plan, GString *out);

/* Appends one report made of the run reports of every rank of an MPI job,
 * `reports` [n] (index = rank) as dr_report_write_text or _write_json wrote
 * them: the layout is report/ranks.c's (and dagrun.h's
 * dr_run_report_merge_ranks). */
void dr_report_merge_ranks(char *const *reports, guint n, gboolean json, GString *out);

G_END_DECLS

#endif
