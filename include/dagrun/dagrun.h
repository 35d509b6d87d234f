/* dagrun.h: the dagrun C library, everything a program needs to build,
 * load, plan and run task graphs of GPU work without the command line.
 *
 * The three objects, all opaque:
 *   DrPipeline    a graph being built (buffers, kernels, nodes) or loaded
 *                 from YAML; validated once (dr_pipeline_validate), after
 *                 which it is frozen: nothing more can be added.
 *   DrStreamPlan  the stream plan of a validated pipeline: which stream
 *                 each node runs on, in which order, and which cross-stream
 *                 waits it needs. It keeps its pipeline alive.
 *   DrRunReport   what a run measured: per-node medians, the makespan and
 *                 --verify's verdict. It stands alone.
 * A pipeline means what running its nodes one at a time in the order they
 * were added would mean; dagrun derives the dependencies from what each
 * node reads and writes (see the pipeline format reference, docs/format.md).
 *
 * Errors: fallible functions take `GError **error` last and return FALSE or
 * NULL exactly when they set it, in the DR_ERROR domain (codes below, each
 * with the command line's exit code, dr_error_exit_code). Messages start
 * "FILE:LINE:COL: error: " like the command line's. Nodes and buffers added
 * through this API carry the location set by dr_pipeline_set_loc, else the
 * synthetic "<api>:N:1" where N is the node's 1-based position in the
 * pipeline ("<api:buffers>:N:1" for buffers, "<api:kernels>:N:1" for
 * registered kernels). Passing NULL where an object is required, or an
 * out-of-range index, is a programming error: the function logs a GLib
 * critical and returns FALSE, NULL or 0 without touching anything.
 *
 * Ownership: every `_new`/`_load`/`_plan`/`_run` result is the caller's, to
 * free with its NULL-safe `_free` (g_autoptr works for all three). Strings
 * returned by accessors are borrowed from the object asked.
 *
 * Threads: a DrPipeline (with its plans) is not thread-safe: use it from one
 * thread at a time. Distinct pipelines may be used from distinct threads.
 * Callbacks (dr_pipeline_add_callback) and user kernels' host twins run on
 * the host backend's worker threads or on CUDA's callback thread. Running
 * two plans at the same time on the CUDA backend is not supported.
 *
 * Messages: the library writes nothing to stderr. Its warnings (a
 * graph-mode run that fell back to streams) and notices (`auto` running
 * on the host) go through GLib's g_log in the log domain "dagrun"
 * (G_LOG_DOMAIN), as do the criticals of programming errors: silence or
 * redirect them with g_log_set_handler("dagrun", ...). Host functions'
 * print/checksum output goes to DrRunSettings.host_output, and the
 * progress bar, when asked for, is drawn on stderr.
 *
 * This header is self-contained (it needs GLib's headers: pkg-config
 * dagrun). It is not the pipeline format (docs/format.md) nor the command
 * line (dagrun --help). */
#ifndef DAGRUN_DAGRUN_H
#define DAGRUN_DAGRUN_H

#include <glib.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "hostfn.h"
#include "kernel.h"
#include "types.h"
#include "version.h"

G_BEGIN_DECLS

/* ---- shared enums and the kernel ABI ------------------------------------
 * types.h holds the enums (DrElemType, DrAccessMode, DrErrorCode,
 * DrPriority, DrWhere, DrMode, DrBackendKind, DrTimingMode, DrVerified...)
 * and kernel.h the kernel ABI (DrKernelDef); the library is built on these
 * very headers, so there is no second copy to drift. */

/* dagrun's GError domain; the codes are DrErrorCode (types.h). */
#define DR_ERROR (dr_error_quark())
GQuark dr_error_quark(void);

/* Returns the exit code the command line would use for `error`
 * (DR_ERROR_CODE_LIST's; 0 for NULL, 70 for other domains). */
int dr_error_exit_code(const GError *error);

/* The spellings the YAML and the command line use ("auto" "cuda" "host";
 * "streams" "graph"; "off" "stamps" "events" "auto": types.h's lists):
 * each returns TRUE and sets *out when `name` is one of them, else FALSE
 * leaving *out alone. */
gboolean dr_backend_kind_from_name(const char *name, DrBackendKind *out);
gboolean dr_mode_from_name(const char *name, DrMode *out);
gboolean dr_timing_mode_from_name(const char *name, DrTimingMode *out);

/* The ranges of the run settings, the same for the YAML's `run:` keys and
 * the command line's flags: iterations 1..DR_ITERATIONS_MAX, warmup
 * 0..DR_ITERATIONS_MAX, max_streams 1..DR_MAX_STREAMS_MAX, device
 * 0..DR_DEVICE_MAX. */
#define DR_ITERATIONS_MAX G_MAXINT32
#define DR_MAX_STREAMS_MAX 1024
#define DR_DEVICE_MAX 1023

/* Returns built-in kernel `i` (0-based, in `dagrun --kernels` order), or
 * NULL when i is past the last one; static storage. */
const DrKernelDef *dr_builtin_kernel(guint i);
/* Returns the shape rules of built-in kernel `i` in words, as `dagrun
 * --kernels` prints them ("y has the length of x", "1 <= m, n, k <=
 * 2147483647; a has m*k elements, b k*n, c m*n"): what its check refuses
 * at validation beyond the parameter declarations. NULL when it has none
 * or i is past the last one; static storage. */
const char *dr_builtin_kernel_rules(guint i);

/* Removes every entry of the on-disk cache of NVRTC-compiled user kernels
 * ($DAGRUN_CACHE_DIR, else the user cache directory's dagrun/nvrtc; only
 * dagrun's own entry and temporary files, nothing else in the directory).
 * On success returns TRUE with *entries and *bytes saying what went and,
 * when `dir` is not NULL, *dir the directory (g_free); a missing directory
 * is success with nothing removed. Fails with DR_ERROR_OUTPUT naming a
 * file that cannot be removed. Safe while other processes use the cache
 * (they compile again what they miss). */
/* Says which backend and device the read-only expression variables
 * `device.NAME` (device.sm_count, device.clock_khz, ...; docs/format.md)
 * describe in pipelines loaded from now on, process-wide: DR_BACKEND_HOST
 * gives the host backend's fixed values; DR_BACKEND_CUDA and
 * DR_BACKEND_AUTO (the default, with device 0) the values of CUDA device
 * `device` when a CUDA device is usable, else the fixed ones. The command
 * line calls it with its --backend and --device before loading. */
void dr_device_vars_select(DrBackendKind backend, int device);

gboolean dr_kernel_cache_clean(char **dir, guint *entries, guint64 *bytes, GError **error);

/* ---- version ------------------------------------------------------------ */

/* Returns the library's version, "MAJOR.MINOR.PATCH" (static storage); the
 * same string `dagrun --version` prints. dagrun_version is an alias. */
const char *dr_version(void);
const char *dagrun_version(void);

/* ---- pipelines ---------------------------------------------------------- */

typedef struct DrPipeline DrPipeline;
typedef struct DrStreamPlan DrStreamPlan;
typedef struct DrRunReport DrRunReport;

/* Returns a new empty pipeline named `name` (NULL: "pipeline") with the
 * built-in kernels registered and the default run settings (auto mode,
 * 10 iterations, 2 warmup). Free with dr_pipeline_free. */
DrPipeline *dr_pipeline_new(const char *name);

/* Drops the caller's reference; the pipeline lives on while a plan made
 * from it does. NULL-safe. */
void dr_pipeline_free(DrPipeline *pipeline);

/* Reads and validates a pipeline file (format v1). Returns a new, already
 * validated (frozen) pipeline, or NULL with `error` set: DR_ERROR_IO when
 * the file cannot be read, DR_ERROR_INVALID with every diagnostic, one per
 * line, "FILE:LINE:COL: error: ...", exactly as `dagrun --check` shows
 * them (without the caret lines). */
DrPipeline *dr_pipeline_load_file(const char *path, GError **error);

/* Diagnostics with their locations, for a display that shows the source
 * line (the command line's caret). A list of errors, each followed by the
 * notes that explain it, in the order found; at most 20 errors are kept,
 * and the parser reads the whole file and counts every error it finds
 * (dr_diagnostics_n_errors counts them all, kept or not; so do the checks
 * after parsing, except the cycle check, which stops at the limit).
 * Free
 * with dr_diagnostics_free (NULL-safe). */
typedef struct DrDiagnostics DrDiagnostics;
typedef enum { DR_DIAGNOSTIC_ERROR, DR_DIAGNOSTIC_NOTE } DrDiagnosticKind;
typedef struct {
  DrDiagnosticKind kind;
  const char *file; /* NULL when the diagnostic has no location */
  guint line, col;  /* 1-based; 0 when unknown */
  const char *text; /* the whole line: "FILE:LINE:COL: error: MESSAGE" */
} DrDiagnostic;

DrDiagnostics *dr_diagnostics_new(void);
void dr_diagnostics_free(DrDiagnostics *diagnostics);
guint dr_diagnostics_len(const DrDiagnostics *diagnostics);
/* Errors found, including those not kept past the limit. */
guint dr_diagnostics_n_errors(const DrDiagnostics *diagnostics);
/* Fills *out with diagnostic `i` (< dr_diagnostics_len); its strings are
 * borrowed from `diagnostics`. */
void dr_diagnostics_get(const DrDiagnostics *diagnostics, guint i, DrDiagnostic *out);

/* dr_pipeline_load_file that also puts every diagnostic into
 * `diagnostics` (emptied first; may be NULL). */
DrPipeline *dr_pipeline_load_file_diagnostics(const char *path, DrDiagnostics *diagnostics, GError **error);

/* The names dr_pipeline_dump_file accepts, in pipeline order and
 * NULL-terminated (static storage): "parse" (before any pass), each
 * dependency pass ("devices", "lifetimes", "hazards", "afters", "cycles") and
 * "passes" (after the last, as dr_pipeline_load_file leaves the graph). */
const char *const *dr_pass_names(void);

/* Loads the pipeline file `path` and runs the passes up to and including
 * `after` (one of dr_pass_names), then appends the IR's stable text dump
 * (the golden-test format of `dagrun --dump-after`) to `out`. Fails like
 * dr_pipeline_load_file_diagnostics (the errors of the passes that ran),
 * or with DR_ERROR_USAGE listing the names when `after` is not one. */
gboolean dr_pipeline_dump_file(const char *path, const char *after, DrDiagnostics *diagnostics, GString *out,
                               GError **error);

/* Like dr_pipeline_load_file, from `yaml` (`len` bytes, or -1 for a NUL-
 * terminated string). `name` is the file name diagnostics show; relative
 * paths in the YAML (init files, kernel sources) resolve against its
 * directory part ("." for a bare name), as if the text were that file. */
DrPipeline *dr_pipeline_load_string(const char *name, const char *yaml, gssize len, GError **error);

/* Appends the pipeline as YAML (format v1) to `out`: loading that text
 * again gives the same graph and so the same plan. Fails with
 * DR_ERROR_USAGE (leaving `out` as it was) when the pipeline holds what
 * YAML cannot say: callback nodes, kernels registered through
 * dr_pipeline_register_kernel, or a string (print message, label, path)
 * with a brace, which the format reads as an {expression}. User kernels from a `kernels:` section are
 * written with their source path made absolute. */
gboolean dr_pipeline_write_yaml(const DrPipeline *pipeline, GString *out, GError **error);

/* The pipeline's name, and whether it is frozen (validated). */
const char *dr_pipeline_name(const DrPipeline *pipeline);
gboolean dr_pipeline_is_frozen(const DrPipeline *pipeline);
guint dr_pipeline_n_nodes(const DrPipeline *pipeline);
guint dr_pipeline_n_buffers(const DrPipeline *pipeline);

/* Sets the location that buffers, nodes and dependencies added next
 * carry (for diagnostics): `file` (copied), 1-based line and column. file
 * NULL restores the synthetic "<api>:N:1" locations. */
void dr_pipeline_set_loc(DrPipeline *pipeline, const char *file, guint line, guint col);

/* Run settings (the YAML's `run:` and `memory:`), used by
 * dr_run_settings_init and the planner. They may be changed until the
 * pipeline is frozen; later calls fail with DR_ERROR_USAGE. */
gboolean dr_pipeline_set_run(DrPipeline *pipeline, DrMode mode, guint iterations, guint warmup,
                             GError **error);
/* max_streams 0: back to the default (the device's queue count). */
gboolean dr_pipeline_set_max_streams(DrPipeline *pipeline, guint max_streams, GError **error);
/* run.fallback: TRUE for `streams` (see DrRunSettings.graph_fallback). */
gboolean dr_pipeline_set_graph_fallback(DrPipeline *pipeline, gboolean fallback, GError **error);
gboolean dr_pipeline_set_device(DrPipeline *pipeline, gint device, GError **error);
gboolean dr_pipeline_set_release_threshold(DrPipeline *pipeline, guint64 bytes, GError **error);
/* memory.limit: the most device bytes the plan may need at once. The
 * planner adds ordering edges (each from an earlier node to a later one in
 * file order) until the certified worst-case peak fits. On an open
 * pipeline, validation applies it; on a validated one (loaded from YAML)
 * not yet planned, it applies now, on top of any limit the file set. A
 * limit below the serial peak (file order) fails with DR_ERROR_INVALID,
 * naming the buffers live together at that peak; DR_ERROR_USAGE once the
 * pipeline was planned or is invalid. */
gboolean dr_pipeline_set_memory_limit(DrPipeline *pipeline, guint64 bytes, GError **error);
/* Appends the memory/concurrency trade-off (--plan --memory-curve): for
 * up to `n_points` limits from the serial peak to the unconstrained
 * certified bound, the width and estimated critical path each allows and
 * the ordering edges it takes. Validates the pipeline first (its errors). */
gboolean dr_pipeline_write_memory_curve(DrPipeline *pipeline, guint n_points, GString *out, GError **error);

/* ---- buffers -------------------------------------------------------------
 * All fail with DR_ERROR_USAGE once the pipeline is frozen, and with
 * DR_ERROR_INVALID (message with the location) for what the YAML parser
 * would reject: a name taken, an unknown buffer, init or save on a buffer
 * that an alloc node names. */

/* Adds buffer `name` of `count` elements of `type` living on the device or
 * in pinned host memory. The name is one or more of A-Z a-z 0-9 _ - . and
 * count is 1 to 2^61 (the YAML's rules, ir/build.h). */
gboolean dr_pipeline_add_buffer(DrPipeline *pipeline, const char *name, DrElemType type, guint64 count,
                                DrWhere where, GError **error);
/* Initial contents, filled before the first iteration (at most one init
 * per buffer; a later call replaces an earlier one). */
gboolean dr_pipeline_buffer_init_zeros(DrPipeline *pipeline, const char *buffer, GError **error);
gboolean dr_pipeline_buffer_init_iota(DrPipeline *pipeline, const char *buffer, GError **error);
gboolean dr_pipeline_buffer_init_random(DrPipeline *pipeline, const char *buffer, guint64 seed,
                                        GError **error);
/* The file's raw bytes; they must be exactly the buffer's size:
 * dr_pipeline_validate checks the file (DR_ERROR_INVALID when it is
 * missing, unreadable or of another size), and the run reads it again
 * (DR_ERROR_IO if it changed since). `path` is copied; a
 * relative path resolves against the current directory at run time. */
gboolean dr_pipeline_buffer_init_file(DrPipeline *pipeline, const char *buffer, const char *path,
                                      GError **error);
/* --verify's rule for `buffer` (the YAML's `verify:`; default exact, byte
 * for byte): within a tolerance, element by element |concurrent - serial|
 * <= atol + rtol * |serial| (rtol and atol finite and >= 0, else
 * DR_ERROR_INVALID), or skipped. For buffers that legitimately differ
 * between a concurrent and the serial run (floating-point atomics, clock
 * counters). */
gboolean dr_pipeline_buffer_verify_tolerance(DrPipeline *pipeline, const char *buffer, double rtol,
                                             double atol, GError **error);
gboolean dr_pipeline_buffer_verify_skip(DrPipeline *pipeline, const char *buffer, GError **error);
/* Writes the buffer's bytes to `path` after the run. */
gboolean dr_pipeline_buffer_save(DrPipeline *pipeline, const char *buffer, const char *path, GError **error);

/* ---- kernels ------------------------------------------------------------ */

/* Registers the caller's kernel `def` under def->name. `def` and what it
 * points to must outlive the pipeline (a static definition, typically).
 * Fails with DR_ERROR_INVALID when the name is taken (built-ins too), a
 * kernel or parameter name breaks the naming rule (one or more of A-Z a-z
 * 0-9 _ - .) or repeats, a scalar is not i32, i64, f32 or f64, there are
 * more than 32 parameters, grid_over names no parameter or a float one, or
 * neither entry point is set. */
gboolean dr_pipeline_register_kernel(DrPipeline *pipeline, const DrKernelDef *def, GError **error);

/* ---- nodes ---------------------------------------------------------------
 * Each adds one node with a unique `id` at the end of the program order.
 * An id is one or more of A-Z a-z 0-9 _ - . ('/' is reserved for scoped
 * ids); the checks and their messages are the YAML parser's, through the
 * same builder, so the same mistake reads the same but for its location.
 * On failure nothing is added. Common failures: DR_ERROR_USAGE once the
 * pipeline is frozen; DR_ERROR_INVALID (with the location) for a taken id,
 * an unknown buffer, kernel or parameter, a slice out of bounds or empty,
 * copies of different lengths, a kernel given a host buffer or the wrong
 * element type, a host function given a device buffer, alloc/free of a
 * host buffer, a failed kernel check. */

/* Elements [begin, end) of buffer `buffer`. DR_SLICE_END as end: up to the
 * buffer's end. */
typedef struct {
  const char *buffer;
  guint64 begin;
  guint64 end;
} DrBufferSlice;

#define DR_SLICE_END G_MAXUINT64
/* The whole buffer, and elements [b, e). */
#define DR_WHOLE(name) ((DrBufferSlice){(name), 0, DR_SLICE_END})
#define DR_SLICE(name, b, e) ((DrBufferSlice){(name), (b), (e)})

typedef enum { DR_NAMED_ARG_SLICE, DR_NAMED_ARG_INT, DR_NAMED_ARG_FLOAT, DR_NAMED_ARG_STRING } DrNamedArgKind;

/* One argument of a kernel or host-function node, by parameter name. */
typedef struct {
  const char *name;
  DrNamedArgKind kind;
  DrBufferSlice slice; /* DR_NAMED_ARG_SLICE */
  gint64 i;            /* DR_NAMED_ARG_INT */
  double f;            /* DR_NAMED_ARG_FLOAT */
  const char *s;       /* DR_NAMED_ARG_STRING (print's message) */
} DrNamedArg;

#define DR_NAMED_SLICE(n, buf, b, e) \
  ((DrNamedArg){.name = (n), .kind = DR_NAMED_ARG_SLICE, .slice = {(buf), (b), (e)}})
#define DR_NAMED_WHOLE(n, buf) DR_NAMED_SLICE(n, buf, 0, DR_SLICE_END)
#define DR_NAMED_INT(n, v) ((DrNamedArg){.name = (n), .kind = DR_NAMED_ARG_INT, .i = (v)})
#define DR_NAMED_FLOAT(n, v) ((DrNamedArg){.name = (n), .kind = DR_NAMED_ARG_FLOAT, .f = (v)})
#define DR_NAMED_STRING(n, v) ((DrNamedArg){.name = (n), .kind = DR_NAMED_ARG_STRING, .s = (v)})

/* A kernel node: `kernel` (built-in, from `kernels:`, or registered) with
 * `n_args` named arguments. Integer values are accepted for float
 * parameters; optional scalars may be left out. */
gboolean dr_pipeline_add_kernel_node(DrPipeline *pipeline, const char *id, const char *kernel,
                                     const DrNamedArg *args, guint n_args, GError **error);
/* Sets a kernel node's launch shape: grid and block ({0,0,0} or NULL:
 * the kernel's default; else a 0 dimension is 1, as a missing one in YAML)
 * and dynamic shared memory bytes. A dimension above 2^31-1 is
 * DR_ERROR_INVALID with YAML's wording ("key 'grid': N is out of range
 * [1, 2147483647]"). */
gboolean dr_pipeline_node_set_launch(DrPipeline *pipeline, const char *id, const guint grid[3],
                                     const guint block[3], guint shared, GError **error);
/* Copies src to dst (same length in bytes); the direction follows where
 * the buffers live. */
gboolean dr_pipeline_add_copy(DrPipeline *pipeline, const char *id, DrBufferSlice src, DrBufferSlice dst,
                              GError **error);
/* Sets every byte of dst to `value`. */
gboolean dr_pipeline_add_memset(DrPipeline *pipeline, const char *id, DrBufferSlice dst, guint8 value,
                                GError **error);
/* Starts and ends the life of device buffer `buffer` (stream-ordered). */
gboolean dr_pipeline_add_alloc(DrPipeline *pipeline, const char *id, const char *buffer, GError **error);
gboolean dr_pipeline_add_free(DrPipeline *pipeline, const char *id, const char *buffer, GError **error);
/* A built-in host function node: `fn` is "print" (message: string,
 * buffer: optional host slice), "sleep" (us: int) or "checksum" (buffer). */
gboolean dr_pipeline_add_host(DrPipeline *pipeline, const char *id, const char *fn, const DrNamedArg *args,
                              guint n_args, GError **error);
/* A host node that calls fn(user_data) once per iteration (warmup and
 * timed, and again in the --verify reference run). It touches no buffer
 * as far as dagrun knows, so order it with dr_pipeline_node_after (or
 * declare the buffers it reads and writes: dr_pipeline_add_host_fn). fn
 * must not call CUDA; user_data is the caller's and must outlive the runs. */
gboolean dr_pipeline_add_callback(DrPipeline *pipeline, const char *id, void (*fn)(void *user_data),
                                  void *user_data, GError **error);
/* A host node that calls fn (include/dagrun/hostfn.h) once per iteration
 * (warmup and timed, and again in the --verify reference run) with its
 * arguments bound: `params` (n_params, at most 32; copied) declare them as
 * a kernel's are declared (kernel.h's DrKParam: a pointer's access mode
 * says what fn does with its slice; optional scalars take `def`; `doc` is
 * unused), and args/n_args give them by name as for
 * dr_pipeline_add_kernel_node, with host buffers only. The buffer
 * arguments' accesses order the node by hazards like a kernel, so, unlike
 * dr_pipeline_add_callback, it needs no dr_pipeline_node_after. fn must
 * not call CUDA; user_data (DrHostFnArgs.user_data) is the caller's and
 * must outlive the runs. A nonzero return fails the run (DR_ERROR_RUNTIME,
 * with fn's message; on the CUDA backend once its iteration has finished).
 * Fails with DR_ERROR_INVALID for what a YAML host function would be
 * refused for (a bad parameter name, type or access, a repeated one, a
 * device buffer, a missing argument) and as every node add does. */
gboolean dr_pipeline_add_host_fn(DrPipeline *pipeline, const char *id, DrHostFnFunc fn, void *user_data,
                                 const DrKParam *params, guint n_params, const DrNamedArg *args, guint n_args,
                                 GError **error);
/* A node that does nothing: a join point. */
gboolean dr_pipeline_add_noop(DrPipeline *pipeline, const char *id, GError **error);

/* Loops and conditionals (docs/format.md, "op: loop and op: if"): a body
 * is a pipeline of its own, made by dr_pipeline_new_body for the loop
 * node `id` it will be the body of, after the buffers and kernels it uses
 * (it sees the parent's as they are then), filled with the
 * dr_pipeline_add_* and dr_pipeline_node_* calls under short ids (stored,
 * reported and named in `after` as "ID/NODE" and short ids inside the
 * body); NULL when `pipeline` is frozen. Then one of the three calls
 * below adds the node `id` to `pipeline`, checking the body as YAML's
 * (what a body may hold, the condition: an i32 device buffer, a while's
 * body writing its element 0), and takes the body's nodes: the body
 * pipeline is frozen after (free it as usual). Nested loops: a body of a
 * body. repeat: `count` 1..2^31-1 trips; while: a do-while of `cond`;
 * if: `then_body` when cond[0] is non-zero, else `else_body` (NULL:
 * nothing). DR_ERROR_INVALID with YAML's wording on a bad body or
 * condition, nothing added. */
DrPipeline *dr_pipeline_new_body(DrPipeline *pipeline, const char *id);
gboolean dr_pipeline_add_repeat(DrPipeline *pipeline, const char *id, guint64 count, DrPipeline *body,
                                GError **error);
gboolean dr_pipeline_add_while(DrPipeline *pipeline, const char *id, const char *cond, DrPipeline *body,
                               GError **error);
gboolean dr_pipeline_add_if(DrPipeline *pipeline, const char *id, const char *cond, DrPipeline *then_body,
                            DrPipeline *else_body, GError **error);

/* Node `id` runs after node `after` completes (an explicit edge, YAML's
 * `after:`). Both must exist; a cycle is reported by validation. */
gboolean dr_pipeline_node_after(DrPipeline *pipeline, const char *id, const char *after, GError **error);
gboolean dr_pipeline_node_set_priority(DrPipeline *pipeline, const char *id, DrPriority priority,
                                       GError **error);
/* device -1: the run's device. */
gboolean dr_pipeline_node_set_device(DrPipeline *pipeline, const char *id, gint device, GError **error);
/* A label for reports (copied; NULL removes it). */
gboolean dr_pipeline_node_set_label(DrPipeline *pipeline, const char *id, const char *label, GError **error);

/* ---- validation and planning --------------------------------------------- */

/* Derives the dependencies (read/write hazards, explicit edges) and checks
 * lifetimes (use before alloc, after free, double free, alloc without
 * free) and cycles, with the command line's diagnostics. Returns TRUE and
 * freezes the pipeline, or FALSE with DR_ERROR_INVALID holding every
 * diagnostic, one per line; a pipeline that failed stays failed (later
 * calls repeat the error). Calling it again on a frozen pipeline is a
 * no-op returning TRUE. */
gboolean dr_pipeline_validate(DrPipeline *pipeline, GError **error);

/* The dependency edges validation found (0 before it). */
guint dr_pipeline_n_edges(const DrPipeline *pipeline);

/* Planner options; zero-initialise, or NULL for all defaults.
 *
 * The stream cap (the same for the library and the command line):
 * max_streams when not 0, else the pipeline's run.max_streams when set;
 * else none in graph mode; else CUDA_DEVICE_MAX_CONNECTIONS when set (an
 * invalid value: the driver's default, 8); else 32 when no CUDA context
 * exists in the process yet (the run then sets CUDA_DEVICE_MAX_CONNECTIONS
 * to 32 before it creates the context: see dr_stream_plan_run), else 8,
 * the queues the driver gave the existing context.
 * dr_stream_plan_cap_note says which rule applied. */
typedef struct {
  guint max_streams;        /* 0: as above; else 1..DR_MAX_STREAMS_MAX */
  const char *profile_path; /* NULL, or a run report JSON (dr_run_report_write_json)
                               whose measured durations replace the cost model */
  gboolean mode_set;        /* TRUE: plan for `mode`, not the pipeline's run mode */
  DrMode mode;              /* auto (the default run.mode): see DR_MODE_LIST */
  /* What auto resolves with: the timed iterations the run will make (0:
   * the pipeline's run.iterations) and the backend it will use (auto:
   * CUDA assumed; host: auto means streams, the host has no graph). */
  guint iterations;
  /* The backend the plan is for (0: auto), which also decides how a peer
   * copy between two devices is shown: with the path the CUDA backend will
   * take (cudaDeviceCanAccessPeer asked now: peer access, or staged through
   * pinned host memory); the host's, or no GPU: "checked at run time". */
  DrBackendKind backend;
} DrPlanSettings;

/* Validates the pipeline when not yet done, then plans it. Returns a new
 * plan holding a reference to the pipeline, or NULL with `error`
 * (validation's, or DR_ERROR_IO for a bad profile). Free with
 * dr_stream_plan_free. */
DrStreamPlan *dr_pipeline_plan(DrPipeline *pipeline, const DrPlanSettings *settings, GError **error);
void dr_stream_plan_free(DrStreamPlan *plan);

/* The plan as data. Steps are the nodes in issue order (each stream
 * receives its nodes in this order); node ids are the pipeline's. */
guint dr_stream_plan_n_streams(const DrStreamPlan *plan);
DrPriority dr_stream_plan_stream_priority(const DrStreamPlan *plan, guint stream);
guint dr_stream_plan_width(const DrStreamPlan *plan);   /* the DAG's width */
guint dr_stream_plan_n_edges(const DrStreamPlan *plan); /* dependency edges */
guint dr_stream_plan_n_waits(const DrStreamPlan *plan); /* cross-stream waits (events) */
guint dr_stream_plan_n_steps(const DrStreamPlan *plan); /* = the number of nodes */
const char *dr_stream_plan_step_node(const DrStreamPlan *plan, guint step);
guint dr_stream_plan_step_stream(const DrStreamPlan *plan, guint step);
guint dr_stream_plan_step_n_waits(const DrStreamPlan *plan, guint step);
/* The node the step waits for (on another stream). */
const char *dr_stream_plan_step_wait(const DrStreamPlan *plan, guint step, guint wait);
/* The stream of node `id`, or -1 when there is no such node. */
gint dr_stream_plan_node_stream(const DrStreamPlan *plan, const char *id);
/* The mode the plan was made for (streams or graph: auto is resolved by
 * DrPlanSettings' rule), its stream cap (0: none) and why the cap is what
 * it is (static storage, e.g. "set by max_streams"). */
DrMode dr_stream_plan_mode(const DrStreamPlan *plan);
/* Why the plan's mode is what it is ("auto: 10 iterations and every node
 * capturable", "set by run.mode"): borrowed from the plan. */
const char *dr_stream_plan_mode_reason(const DrStreamPlan *plan);
guint dr_stream_plan_cap(const DrStreamPlan *plan);
const char *dr_stream_plan_cap_note(const DrStreamPlan *plan);

/* After a plan made with DrPlanSettings.profile_path: TRUE with the
 * predicted makespan (a list-scheduling simulation of the plan's streams
 * with the profile's durations and the launch, wait and copy-engine costs
 * of an H200: docs/format.md, "Prediction") and the profile's measured
 * makespan (NAN when it has none); FALSE without a profile. Either
 * pointer may be NULL. */
gboolean dr_stream_plan_predicted(const DrStreamPlan *plan, double *predicted_us, double *measured_us);
/* Appends `dagrun --plan --explain`'s text: the gap between the measured
 * makespan and the critical path split into false serialization from the
 * stream cap, launch overhead, waits, transfers and what is not explained
 * (one line saying so without a profile). */
void dr_stream_plan_write_explain(const DrStreamPlan *plan, GString *out);

/* Appends the plan as `dagrun --plan` prints it (text), as its JSON
 * object (--format=json), or as a Graphviz digraph (--dot). */
void dr_stream_plan_write_text(const DrStreamPlan *plan, GString *out);
void dr_stream_plan_write_json(const DrStreamPlan *plan, GString *out);
void dr_stream_plan_write_dot(const DrStreamPlan *plan, GString *out);
/* The same bytes as dr_stream_plan_write_json, written to `file` as they
 * are made, so a plan of millions of nodes never exists as text in memory
 * (`dagrun --plan --format=json`). FALSE with DR_ERROR_IO (naming `what`,
 * e.g. "stdout" or the path) when a write fails; `file` is not closed. */
gboolean dr_stream_plan_write_json_file(const DrStreamPlan *plan, FILE *file, const char *what,
                                        GError **error);

/* DrDotDetail (how much the DOT draws, `dagrun --dot-detail`) is types.h's.
 * Returns TRUE and sets *out when `name` is "auto", "summary" or "full". */
gboolean dr_dot_detail_from_name(const char *name, DrDotDetail *out);

/* DOT settings; zero-initialise, or NULL for all defaults. */
typedef struct {
  DrDotDetail detail;
  /* NULL, or a report of a run of this plan: every node shows its median
   * duration and the critical path is drawn bold (as CUDASTF_DOT_TIMING). */
  const DrRunReport *report;
  /* Used when report is NULL: NULL, or a JSON run report
   * (dr_run_report_write_json) read for the same durations. */
  const char *profile_path;
} DrDotSettings;

/* dr_stream_plan_write_dot with `settings`. FALSE with DR_ERROR_IO when
 * the profile cannot be read, DR_ERROR_USAGE when the report is not of
 * this plan; `out` is then unchanged. */
gboolean dr_stream_plan_write_dot_with(const DrStreamPlan *plan, const DrDotSettings *settings, GString *out,
                                       GError **error);

/* ---- running -------------------------------------------------------------- */

typedef struct {
  DrBackendKind backend;     /* auto: CUDA when a device is usable, else host */
  DrMode mode;               /* CUDA: streams or a captured CUDA graph */
  guint iterations;          /* timed, >= 1 */
  guint warmup;              /* untimed, before them */
  gboolean verify;           /* compare with the serial plan's run */
  gint device;               /* CUDA device ordinal */
  DrTimingMode node_timing;  /* CUDA: how to time nodes (auto by default) */
  const char *trace_path;    /* NULL, or where to write a Chrome trace */
  const char *timeline_path; /* NULL, or where to write an SVG timeline */
  gboolean progress;         /* a progress bar on stderr for long runs */
  FILE *host_output;         /* print/checksum output; NULL: stdout */
  guint64 delay_seed;        /* host backend: random delays before nodes */
  guint delay_max_us;        /* 0: 200 µs when delay_seed is set */
  /* When non-NULL, read before every iteration: once *stop is nonzero the
   * run finishes the iteration in flight, releases everything and returns
   * the report of the timed iterations done (dr_run_report_interrupted; no
   * verify, no save files). Set it from a signal handler, or from another
   * thread with an atomic store (g_atomic_int_set or __atomic_store_n). */
  const volatile sig_atomic_t *stop;
  /* Graph mode: when a node's launch breaks the capture, run eagerly
   * instead of failing (a g_log warning, domain "dagrun"). The pipeline's
   * run.fallback. */
  gboolean graph_fallback;
  /* Graph mode on CUDA: NULL, or where to write CUDA's own DOT of the
   * captured graph (cudaGraphDebugDotPrint, verbose), once it is captured;
   * other runs write nothing. `dagrun --dot-cuda-graph`. */
  const char *cuda_graph_dot_path;
  /* Streams mode on CUDA: host threads that issue each iteration, one per
   * group of streams (1..DR_ISSUE_THREADS_MAX; 0: chosen from the plan's
   * width and size, 1 for narrow DAGs, always 1 with collectives or
   * loops). The pipeline's run.issue_threads, `dagrun --issue-threads`. */
  guint issue_threads;
} DrRunSettings;

/* Fills `settings` from the pipeline's run settings: its mode, iterations,
 * warmup, device and fallback; backend auto, node timing auto (what auto
 * picks: DR_TIMING_LIST in types.h); the rest off or NULL. */
void dr_run_settings_init(DrRunSettings *settings, const DrPipeline *pipeline);

/* Checks, without creating anything, that `path` can be written: an
 * existing file that is not a directory and is writable, or a new name in
 * a writable directory. FALSE with DR_ERROR_OUTPUT ("PATH: error: cannot
 * create: REASON") otherwise. "-" (stdout) is always fine. */
gboolean dr_output_check(const char *path, GError **error);

/* Runs `plan` (settings NULL: dr_run_settings_init's). Before anything
 * runs, checks the output files (the trace, the timeline, every `save:`)
 * with dr_output_check. When the plan's cap is the default 32 (see
 * DrPlanSettings) and the backend is not the host's, sets
 * CUDA_DEVICE_MAX_CONNECTIONS=32 in the process's environment if it is
 * still unset and no CUDA context exists yet (the driver reads it when it
 * creates the context): call it before other threads read the
 * environment. Returns the report, or NULL with `error`:
 * DR_ERROR_UNAVAILABLE (backend cuda and no device), DR_ERROR_IO (an init
 * file), DR_ERROR_OUTPUT (an output file, before or after the run; the
 * message names the path), DR_ERROR_RUNTIME (a CUDA call or a host kernel
 * failed; everything was released), DR_ERROR_USAGE (iterations 0). A
 * --verify difference is not an error: see dr_run_report_verified. */
DrRunReport *dr_stream_plan_run(const DrStreamPlan *plan, const DrRunSettings *settings, GError **error);
void dr_run_report_free(DrRunReport *report);

/* ---- runners: set up once, run many times ------------------------------
 * A runner opens the plan's backend and sets it up once (buffers allocated
 * and filled from their `init:`; in graph mode the iteration is captured
 * and instantiated), then runs it as often as asked, each run being
 * `warmup` + `iterations` iterations with its own report. Buffers keep
 * their contents from one run to the next. `save:` files are written after
 * each run, and the trace and timeline paths are rewritten by each run.
 * `verify` is refused (DR_ERROR_USAGE): there is no serial run from the
 * same contents to compare with. The plan must outlive the runner.
 *
 * Between runs a kernel node's scalar arguments may change
 * (dr_runner_set_int / dr_runner_set_float, by node id and parameter
 * name). The change is made in the pipeline itself (dr_pipeline_write_yaml
 * shows it) and takes effect at the next run. In graph mode the executable
 * graph is updated in place: the changed nodes alone when each is a
 * built-in kernel that captured as one kernel node (pointers into
 * stream-ordered buffers are the graph's own allocations, as captured;
 * cudaGraphExecKernelNodeSetParams, "updated-nodes"),
 * else the whole graph from a re-capture (cudaGraphExecUpdate, "updated";
 * "re-instantiated" only if the runtime refuses; with run.graph_cache a
 * new executable, "re-instantiated", or one kept from an earlier run with
 * the same values of the nodes that forced it, "cached"). Otherwise the launches
 * are bound again ("rebound"). dr_runner_last_update says which, or
 * "none". Only arguments the
 * node was given can change (an optional one left out keeps its default),
 * and the kernel's argument check must accept the new value; failures are
 * DR_ERROR_INVALID and change nothing. */
typedef struct DrRunner DrRunner;

/* Opens and sets up a runner; fails like dr_stream_plan_run (nothing runs).
 * dr_runner_last_update tells how the changes made since the run before
 * (scalars, and dr_runner_bind_buffer below) were applied. */
DrRunner *dr_runner_new(const DrStreamPlan *plan, const DrRunSettings *settings, GError **error);
/* One run; fails like dr_stream_plan_run (DR_ERROR_RUNTIME also when a
 * graph update failed; the runner then keeps the previous graph). */
DrRunReport *dr_runner_run(DrRunner *runner, GError **error);
gboolean dr_runner_set_int(DrRunner *runner, const char *node, const char *param, gint64 value,
                           GError **error);
/* Float parameters only (an integer parameter takes dr_runner_set_int). */
gboolean dr_runner_set_float(DrRunner *runner, const char *node, const char *param, double value,
                             GError **error);
const char *dr_runner_last_update(const DrRunner *runner);
/* ---- run-time parameters (`params:`, docs/format.md) --------------------
 * A pipeline's declared parameters take new values between runs without
 * loading, planning or (in graph mode) capturing again: the plan was made
 * for every value in the declared ranges. Each call checks the value
 * whole before keeping it: the parameter must exist, the value must read
 * as the parameter's type (an integer as the format writes one, size
 * suffixes allowed, or a float) and lie in min..max, and with it every
 * slice must stay in its buffer, every copy's sides equal and every
 * built-in kernel's rule hold; else DR_ERROR_USAGE (exit code 64) and
 * nothing changes. The value applies from the next run of any plan or
 * runner of the pipeline (the runners share it): on the host backend and
 * in streams mode the changed nodes are bound again ("rebound"); in graph
 * mode each changed node is set on the executable in place
 * (cudaGraphExecKernelNodeSetParams for built-in kernels,
 * cudaGraphExecMemcpyNodeSetParams1D and cudaGraphExecMemsetNodeSetParams
 * for copies and memsets: "updated-nodes"), and only a node CUDA cannot
 * update so (a user kernel, a launcher that made more than one node, as
 * cuBLAS may for gemm; a refused set) makes the whole iteration be
 * captured again
 * ("updated"). dr_runner_last_update says which; the run report gives
 * the values, the number of nodes updated and the time it took.
 * dr_pipeline_set_param takes the value as text (the command line's
 * --param); dr_runner_set_param an integer, dr_runner_set_param_f64 a
 * double (an integer parameter takes it only when it is a whole number).
 * dr_pipeline_n_params and dr_pipeline_param_name list the declared
 * parameters in file order (NULL past the end); dr_pipeline_param_value
 * is parameter i's current value as text that dr_pipeline_set_param
 * reads back to the same value (newly allocated; NULL past the end). */
gboolean dr_pipeline_set_param(DrPipeline *pipeline, const char *name, const char *value, GError **error);
guint dr_pipeline_n_params(const DrPipeline *pipeline);
const char *dr_pipeline_param_name(const DrPipeline *pipeline, guint i);
char *dr_pipeline_param_value(const DrPipeline *pipeline, guint i);
gboolean dr_runner_set_param(DrRunner *runner, const char *name, gint64 value, GError **error);
gboolean dr_runner_set_param_f64(DrRunner *runner, const char *name, double value, GError **error);
const char *dr_runner_backend(const DrRunner *runner); /* "host" | "cuda" */
/* Copies a whole-run buffer (all of it: `size` must be its byte size)
 * into `dst` and returns once it is there; DR_ERROR_USAGE for a
 * stream-ordered buffer or a wrong size. On CUDA the copy is made on the
 * stream of the last dr_runner_run_on_stream (see below), else on
 * dagrun's own, and waited for. */
gboolean dr_runner_read_buffer(DrRunner *runner, const char *buffer, void *dst, gsize size, GError **error);

/* ---- external memory and the caller's stream ---------------------------
 * dr_runner_bind_buffer makes whole-run buffer `buffer` live at the
 * caller's `ptr` from the next iteration on: `bytes` must be the buffer's
 * byte size. dagrun frees the memory it had allocated for the buffer and
 * never allocates, frees or initialises `ptr` (the buffer's `init:` does
 * not apply to it: its contents are the caller's). `ptr` must stay valid
 * until the runner is freed or the buffer bound elsewhere. On CUDA, a
 * `where: device` buffer takes device memory of the run's device (or
 * managed memory), a `where: host` buffer pinned or registered host memory
 * (cudaMallocHost, cudaHostRegister; or managed), checked with
 * cudaPointerGetAttributes; on the host backend every buffer is host
 * memory and any pointer to `bytes` readable, writable bytes will do.
 * Every node that touches the buffer follows: in graph mode the
 * executable is updated in place, each such node's parameters set
 * (cudaGraphExecKernelNodeSetParams for built-in kernels,
 * cudaGraphExecMemcpyNodeSetParams1D and cudaGraphExecMemsetNodeSetParams
 * for copies and memsets; host nodes read their pointers when they run):
 * dr_runner_last_update says "updated-nodes"; a node that cannot (a user
 * kernel, a launcher that made more than one node, or a refused update)
 * makes it a re-capture ("updated", or "re-instantiated"
 * if the runtime refuses that too). In streams mode and on the host the
 * launches are bound again ("rebound"). A bind first waits for any work
 * dagrun has in flight. Fails with DR_ERROR_INVALID for an unknown
 * buffer, DR_ERROR_USAGE for a stream-ordered buffer (alloc/free nodes: it
 * has no memory between runs), a wrong size or memory of the wrong kind,
 * DR_ERROR_RUNTIME when CUDA fails; the buffer is then as it was.
 *
 * dr_runner_write_buffer copies `bytes` bytes of `data` into the buffer
 * at byte `offset` (the range must lie inside it), in order: after
 * everything queued before (the iterations; on CUDA the work on the
 * stream of the last dr_runner_run_on_stream, where the copy is made,
 * else dagrun's own stream) and before the next iteration. `data` may be
 * reused as soon as the call returns. Fails as bind does (but for kinds
 * of memory).
 *
 * dr_runner_run_on_stream enqueues one iteration (untimed: no report, no
 * `save:` files, no trace) ordered against the caller's CUDA stream
 * `stream` (a cudaStream_t: NULL or cudaStreamLegacy for the legacy
 * default stream, cudaStreamPerThread, or the caller's own): the
 * iteration starts after the work already queued on `stream`, and the
 * work queued on it later waits for the whole iteration. The ordering is
 * two events (cudaEventRecord on `stream` and cudaStreamWaitEvent of
 * dagrun's entry stream, and the reverse at the end): the call never
 * waits on the host, and returns once the iteration is queued. The stream
 * must outlive the work queued and, as dr_runner_write_buffer and
 * dr_runner_read_buffer use it next, until another is given. Scalars
 * changed with dr_runner_set_int apply first, as for a run. dr_runner_run
 * stays ordered after these iterations (on dagrun's own stream) but not
 * against the caller's stream. On the host backend `stream` must be NULL:
 * the iteration then runs before the call returns; anything else is
 * DR_ERROR_UNAVAILABLE (exit code 69). */
gboolean dr_runner_bind_buffer(DrRunner *runner, const char *buffer, void *ptr, gsize bytes, GError **error);
gboolean dr_runner_write_buffer(DrRunner *runner, const char *buffer, gsize offset, const void *data,
                                gsize bytes, GError **error);
gboolean dr_runner_run_on_stream(DrRunner *runner, void *stream, GError **error);
void dr_runner_free(DrRunner *runner);

/* The report as data. Nodes are in plan (issue) order; times are medians
 * over the timed iterations in µs, NAN where not measured. */
const char *dr_run_report_backend(const DrRunReport *report); /* "host" | "cuda" */
const char *dr_run_report_mode(const DrRunReport *report);    /* "streams" | "graph" */
/* Timed iterations done (fewer than asked when interrupted). */
guint dr_run_report_iterations(const DrRunReport *report);
/* TRUE when DrRunSettings.stop ended the run early. */
gboolean dr_run_report_interrupted(const DrRunReport *report);
double dr_run_report_makespan_us(const DrRunReport *report);
DrVerified dr_run_report_verified(const DrRunReport *report);
/* FALSE with DR_ERROR_VERIFY naming the first difference when the
 * verification failed; TRUE otherwise. */
gboolean dr_run_report_check_verified(const DrRunReport *report, GError **error);
guint dr_run_report_n_nodes(const DrRunReport *report);
const char *dr_run_report_node_id(const DrRunReport *report, guint i);
const char *dr_run_report_node_op(const DrRunReport *report, guint i); /* "kernel", "copy", ... */
guint dr_run_report_node_stream(const DrRunReport *report, guint i);
double dr_run_report_node_start_us(const DrRunReport *report, guint i);
double dr_run_report_node_duration_us(const DrRunReport *report, guint i);

/* Whole-run figures from the node medians (NAN when nodes were not
 * timed): the critical path (the longest dependency path weighted by
 * median durations) and its nodes, first to last; the overlap efficiency
 * (sum of median durations / (makespan x streams used)); and critical
 * path / makespan (1.0: as short as the dependencies allow). */
double dr_run_report_critical_path_us(const DrRunReport *report);
guint dr_run_report_n_critical_nodes(const DrRunReport *report);
const char *dr_run_report_critical_node(const DrRunReport *report, guint i);
double dr_run_report_overlap_efficiency(const DrRunReport *report);
double dr_run_report_critical_over_makespan(const DrRunReport *report);

/* Appends the per-node table (as the command line prints it), the JSON
 * object (--format=json), or a Chrome/Perfetto trace (--trace). */
void dr_run_report_write_text(const DrRunReport *report, GString *out);
void dr_run_report_write_json(const DrRunReport *report, GString *out);
void dr_run_report_write_trace(const DrRunReport *report, GString *out);
/* DrReportSort (the order of the report's summary by kernel/op, `dagrun
 * --sort`) is types.h's. Returns TRUE and sets *out when `name` is one of
 * "total", "instances", "median", "stddev", "min", "max", "bytes", "name". */
gboolean dr_run_report_sort_from_name(const char *name, DrReportSort *out);
/* dr_run_report_write_text and dr_run_report_write_json (which sort the
 * summary by total time) with the summary by kernel/op in `sort`'s order. */
void dr_run_report_write_text_sorted(const DrRunReport *report, DrReportSort sort, GString *out);
void dr_run_report_write_json_sorted(const DrRunReport *report, DrReportSort sort, GString *out);
/* Appends a self-contained SVG timeline of the median iteration
 * (--timeline): a lane per stream, a bar per timed node, an arrow per
 * cross-stream wait. `plan` must be the plan the report was made from
 * (else a critical and nothing appended). */
void dr_run_report_write_timeline(const DrRunReport *report, const DrStreamPlan *plan, GString *out);

/* ---- ranks: one pipeline across the processes of an MPI job -------------
 * `mpirun -np N prog` runs N processes, each a *rank*; every rank loads the
 * same pipeline, in which `rank`, `nranks` and `local_rank` are variables
 * and `rank:` restricts nodes to some ranks, and plans its own nodes.
 * MPI is opened with dlopen through a plugin (libdagrun_mpi.so, see
 * docs/multi-gpu.md), so a program without MPI needs none of this: every
 * function below then behaves as rank 0 of 1. The collectives (agree,
 * gather) must be called by every rank, in the same order.
 *
 * dr_ranks_join joins the job when a launcher started the process
 * (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK is set), before the first
 * pipeline is loaded; idempotent. Fails with DR_ERROR_UNAVAILABLE when
 * launched by mpirun but MPI cannot be loaded, DR_ERROR_RUNTIME when MPI
 * fails to start. */
gboolean dr_ranks_join(GError **error);
guint dr_ranks_rank(void);
guint dr_ranks_size(void);
guint dr_ranks_local_rank(void);
/* Every rank passes its exit code; returns the largest (collective). */
int dr_ranks_agree(int code);
/* Every rank passes `text`; rank 0 gets every rank's, in rank order, as a
 * NULL-terminated array (free with g_strfreev), the others NULL
 * (collective). */
char **dr_ranks_gather(const char *text);
/* Ends every rank at once with exit status `code` (MPI_Abort), for a
 * failure the other ranks cannot know about, which would leave them
 * waiting in a collective; a single process exits with `code`. */
G_NORETURN void dr_ranks_abort(int code);
/* Leaves the job (MPI_Finalize), at the end of the program. */
void dr_ranks_leave(void);
/* Appends the run reports of every rank, `reports` [n] as each rank's
 * dr_run_report_write_text or _write_json wrote them (index = rank), as
 * one report: text gets a `rank` column in the node table, each rank's
 * summary lines prefixed `rank R:`, and a last line with the verdict of
 * --verify over every rank; JSON is an object {"schema", "nranks",
 * "verified", "ranks": [each report with a "rank" field]}
 * (docs/report.md). */
void dr_run_report_merge_ranks(char *const *reports, guint n, gboolean json, GString *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrPipeline, dr_pipeline_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrStreamPlan, dr_stream_plan_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrRunReport, dr_run_report_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrRunner, dr_runner_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrDiagnostics, dr_diagnostics_free)

G_END_DECLS

#endif
