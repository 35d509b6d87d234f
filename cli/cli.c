/* cli.c: the dagrun command line (cli.h): options, the load -> plan -> run
 * sequence, and exit codes. Writes into two GStrings instead of the
 * terminal so the golden tests run the very same code in-process; main.c
 * prints them. It owns no logic of its own beyond choosing what to call. */
#include "cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/run.h"
#include "cli/diag_print.h"
#include "include/dagrun/version.h"
#include "kernels/registry.h"
#include "lib/load.h"
#include "scheduler/planner.h"


typedef struct {
  gboolean check, plan, verify, kernels, version;
  char *format, *dot, *trace, *backend, *mode, *dump_after, *profile, *timeline;
  gint64 delay_seed;
  char *timing;
  char *dot_detail, *dot_cuda_graph;
  char *fallback;
  gint iterations, warmup, max_streams, device;
  char **files;
} Options;

static void options_clear(Options *o) {
  g_free(o->format);
  g_free(o->dot);
  g_free(o->trace);
  g_free(o->backend);
  g_free(o->mode);
  g_free(o->dump_after);
  g_free(o->profile);
  g_free(o->timeline);
  g_free(o->timing);
  g_free(o->dot_detail);
  g_free(o->dot_cuda_graph);
  g_free(o->fallback);
  g_strfreev(o->files);
}

static int usage_error(GString *err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int usage_error(GString *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_string_append(err, "dagrun: error: ");
  g_string_append_vprintf(err, fmt, ap);
  va_end(ap);
  g_string_append(err, "\nTry 'dagrun --help'.\n");
  return 64;
}

/* Prints `error`, already "FILE: error: ..." shaped or not, and returns
 * its exit code. */
static int report_error(GString *err, const GError *error) {
  if (strstr(error->message, "error: ") != NULL)
    g_string_append_printf(err, "%s\n", error->message);
  else
    g_string_append_printf(err, "dagrun: error: %s\n", error->message);
  return dr_error_exit_code(error);
}

static void list_kernels(GString *out) {
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *k = &dr_kernel_registry[i];
    g_string_append_printf(out, "%s(", k->name);
    for (int j = 0; j < k->n_params; j++) {
      const DrKParam *p = &k->params[j];
      static const char *const types[] = {
#define DR_X(e, s, n) s,
          DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
      };
      static const char *const modes[] = {
#define DR_X(e, s, r, w) s,
          DR_ACCESS_MODE_LIST(DR_X)
#undef DR_X
      };
      g_string_append_printf(out, "%s%s: %s%s", j ? ", " : "", p->name, types[p->type], p->is_pointer ? "*" : "");
      if (p->is_pointer) g_string_append_printf(out, " %s", modes[p->access]);
      if (p->optional) g_string_append_printf(out, " = %g", p->def);
    }
    g_string_append_printf(out, ")\n    %s\n", k->summary);
  }
}

static gboolean write_output(const char *path, const GString *text, GString *out, GString *err) {
  if (strcmp(path, "-") == 0) {
    g_string_append_len(out, text->str, (gssize)text->len);
    return TRUE;
  }
  g_autoptr(GError) e = NULL;
  if (!g_file_set_contents(path, text->str, (gssize)text->len, &e)) {
    g_string_append_printf(err, "%s: error: cannot write: %s\n", path, e->message);
    return FALSE;
  }
  return TRUE;
}

/* Checks the option values that GOption cannot. Returns 0 or 64. */
static int validate(const Options *o, GString *err) {
  if (o->format && strcmp(o->format, "text") != 0 && strcmp(o->format, "json") != 0)
    return usage_error(err, "--format must be text or json, not '%s'", o->format);
  DrBackendKind backend;
  if (o->backend && !dr_backend_kind_from_name(o->backend, &backend))
    return usage_error(err, "--backend must be auto, cuda or host, not '%s'", o->backend);
  DrMode mode;
  if (o->mode && !dr_mode_from_name(o->mode, &mode))
    return usage_error(err, "--mode must be streams or graph, not '%s'", o->mode);
  if (o->dump_after && strcmp(o->dump_after, "parse") != 0 && strcmp(o->dump_after, "passes") != 0)
    return usage_error(err, "--dump-after must be parse or passes, not '%s'", o->dump_after);
  if (o->iterations == 0 || o->iterations < -1) return usage_error(err, "--iterations must be at least 1");
  if (o->warmup < -1) return usage_error(err, "--warmup must not be negative");
  if (o->max_streams == 0 || o->max_streams < -1) return usage_error(err, "--max-streams must be at least 1");
  if (o->device < -1) return usage_error(err, "--device must not be negative");
  if (o->delay_seed < 0) return usage_error(err, "--delay-seed must not be negative");
  DrTimingMode timing;
  if (o->timing && !dr_timing_mode_from_name(o->timing, &timing))
    return usage_error(err, "--timing must be auto, stamps, events or off, not '%s'", o->timing);
  if (o->fallback && strcmp(o->fallback, "none") != 0 && strcmp(o->fallback, "streams") != 0)
    return usage_error(err, "--fallback must be none or streams, not '%s'", o->fallback);
  DrDotDetail detail;
  if (o->dot_detail && !dr_dot_detail_from_name(o->dot_detail, &detail))
    return usage_error(err, "--dot-detail must be auto, summary or full, not '%s'", o->dot_detail);
  return 0;
}

/* Applies the command line's run settings over the file's `run:`. */
static void apply_overrides(const Options *o, DrGraph *g) {
  if (o->mode) dr_mode_from_name(o->mode, &g->run.mode);
  if (o->iterations > 0) g->run.iterations = (guint32)o->iterations;
  if (o->warmup >= 0) g->run.warmup = (guint32)o->warmup;
  if (o->max_streams > 0) {
    g->run.max_streams = (guint32)o->max_streams;
    g->run.max_streams_set = TRUE;
  }
  if (o->device >= 0) g->run.device = o->device;
  if (o->fallback) g->run.fallback_streams = strcmp(o->fallback, "streams") == 0;
}

/* Writes --dot: durations from `report` when given, else from --profile
 * when given. FALSE after printing why. */
static gboolean write_dot(const Options *o, const DrPlan *plan, const DrReport *report, GString *out,
                          GString *err) {
  DrDotOptions dopts = {.detail = DR_DOT_DETAIL_AUTO};
  if (o->dot_detail) dr_dot_detail_from_name(o->dot_detail, &dopts.detail);
  g_autofree double *dur = NULL;
  g_autofree char *source = NULL;
  if (report != NULL) {
    dur = dr_report_durations(report);
    source = g_strdup("this run");
  } else if (o->profile) {
    guint32 n = dr_graph_n_nodes(plan->graph);
    dur = g_new(double, MAX(n, 1));
    for (guint32 v = 0; v < n; v++) dur[v] = NAN;
    g_autoptr(GError) error = NULL;
    if (!dr_profile_read(o->profile, plan->graph, dur, &error)) {
      g_string_append_printf(err, "dagrun: error: %s\n", error->message);
      return FALSE;
    }
    source = g_strdup_printf("profile %s", o->profile);
  }
  dopts.duration_us = dur;
  dopts.timing_source = source;
  g_autoptr(GString) dot = g_string_new(NULL);
  dr_plan_write_dot_opts(plan, &dopts, dot);
  return write_output(o->dot, dot, out, err);
}

/* Set by SIGINT while a pipeline runs (dr_run polls it between
 * iterations). */
static volatile sig_atomic_t interrupt_flag;

static void on_sigint(int sig) {
  (void)sig;
  interrupt_flag = 1;
}

/* More eager streams than the device's hardware queues (8 by default)
 * serialize falsely (GPU-NOTES.md): unless the user chose, ask for one
 * queue per plan stream plus origin, up to 32 (the valid maximum). The
 * driver reads CUDA_DEVICE_MAX_CONNECTIONS when it creates the context, so
 * this must run before the process's first CUDA call (dr_run probes the
 * device first thing) and is the process's policy, not the library's: a
 * setenv while other threads may read the environment is not thread-safe,
 * which only the program (here, still single-threaded) can rule out. It
 * runs after planning, with the plan's stream count, rather than as a
 * fixed 32 at start-up: the planner reads the same variable as its stream
 * cap in streams mode, so setting it earlier would change the plans. */
static void raise_queue_count(const DrPlan *plan) {
  guint32 wanted = dr_plan_n_streams(plan) + 1;
  if (g_getenv("CUDA_DEVICE_MAX_CONNECTIONS") != NULL || wanted <= 8) return;
  char conns[16];
  g_snprintf(conns, sizeof conns, "%u", MIN(wanted, 32u));
  g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", conns, FALSE);
}

/* The eager stream cap the command line plans with when nobody chose one:
 * the process owns its queue count (raise_queue_count sets it to the plan's
 * streams + 1, at most 32), so it can plan for the most queues the driver
 * gives, 32, instead of the default 8. At 32 streams the origin stream
 * shares a queue with one of them; it only records the fork and waits for
 * the joins, which are ordered after that stream's work anyway. Measured on an
 * H200 (bench/, 2026-11-29): 32 independent 100 µs spins took 444 µs on 8
 * streams and 239 µs on 32; 16 chunked copy/compute lanes 5.8 ms on 16
 * streams against 6.5 ms capped at 8. */
#define CLI_EAGER_CAP 32u

static int plan_and_run(const Options *o, DrGraph *graph, GString *out, GString *err) {
  gboolean json = o->format && strcmp(o->format, "json") == 0;
  DrPlanOptions popts = {.max_streams = graph->run.max_streams_set ? graph->run.max_streams : 0,
                         .profile_path = o->profile};
  if (popts.max_streams == 0 && graph->run.mode == DR_MODE_STREAMS &&
      g_getenv("CUDA_DEVICE_MAX_CONNECTIONS") == NULL)
    popts.max_streams = CLI_EAGER_CAP;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(graph, &popts, &error);
  if (plan == NULL) return report_error(err, error);
  /* --dot alone does not run; with a run output it is written after the
   * run, with the run's durations. */
  gboolean run_dot = o->dot && !o->plan && (o->trace || o->timeline || o->verify || o->dot_cuda_graph);
  if (o->dot && !run_dot && !write_dot(o, plan, NULL, out, err)) return 66;
  if (o->plan) {
    if (json)
      dr_plan_write_json(plan, out);
    else
      dr_plan_write_text(plan, out);
    if (json) g_string_append_c(out, '\n');
    return 0;
  }
  if (o->dot && !run_dot) return 0; /* --dot alone is for review: it does not run */
  if (o->dot_cuda_graph && graph->run.mode != DR_MODE_GRAPH)
    return usage_error(err, "--dot-cuda-graph needs graph mode (--mode=graph)");
  DrRunOptions ropts;
  dr_run_options_init(&ropts, graph);
  if (o->backend) dr_backend_kind_from_name(o->backend, &ropts.backend);
  ropts.verify = o->verify;
  ropts.trace_path = o->trace;
  ropts.delay_seed = (guint64)o->delay_seed;
  if (o->timing) dr_timing_mode_from_name(o->timing, &ropts.node_timing);
  ropts.timeline_path = o->timeline;
  ropts.cuda_graph_dot_path = o->dot_cuda_graph;
  /* A progress bar only for a person watching: never into a file or pipe. */
  ropts.progress = isatty(STDERR_FILENO);
  /* --format=json keeps stdout pure JSON: host functions print elsewhere. */
  if (json) ropts.host_output = stderr;
  if (ropts.backend != DR_BACKEND_HOST) raise_queue_count(plan);
  /* Ctrl-C stops the run after the iteration in flight; a second one
   * kills the process the usual way (SA_RESETHAND). */
  interrupt_flag = 0;
  ropts.stop = &interrupt_flag;
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = (int)SA_RESETHAND}, old_sa;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  g_autoptr(DrReport) report = dr_run(plan, &ropts, &error);
  sigaction(SIGINT, &old_sa, NULL);
  if (report == NULL) return report_error(err, error);
  if (json) {
    dr_report_write_json(report, out);
    g_string_append_c(out, '\n');
  } else {
    dr_report_write_text(report, out);
  }
  if (run_dot && !write_dot(o, plan, report, out, err)) return 66;
  if (report->interrupted) {
    g_string_append_printf(err, "dagrun: interrupted after %u of %u timed iterations\n", report->iterations,
                           report->iterations_requested);
    return 130;
  }
  if (!dr_report_check_verified(report, &error)) return report_error(err, error);
  return 0;
}

/* Loads the pipeline and does what the options ask: dump, check, plan or
 * run. Returns the exit code. */
static int load_and_go(const Options *o, const char *path, GString *out, GString *err) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autofree char *text = NULL;
  DrLoadStage stage = o->dump_after && strcmp(o->dump_after, "parse") == 0 ? DR_LOAD_PARSE : DR_LOAD_PASSES;
  g_autoptr(DrGraph) graph = dr__load_file_until(path, stage, diags, &text, &error);
  if (graph == NULL) {
    if (error->domain == DR_ERROR && error->code == DR_ERROR_INVALID && dr_diags_len(diags) > 0) {
      dr__diag_print(diags, path, text, text ? strlen(text) : 0, err);
      return 65;
    }
    return report_error(err, error);
  }
  apply_overrides(o, graph);
  if (o->dump_after) {
    dr_graph_dump(graph, out);
    return 0;
  }
  if (o->check) {
    g_string_append_printf(out, "ok: %u nodes, %u edges\n", dr_graph_n_nodes(graph), graph->edges->len);
    return 0;
  }
  return plan_and_run(o, graph, out, err);
}

int dr__cli_run(int argc, char **argv, GString *out, GString *err) {
  Options o = {.iterations = -1, .warmup = -1, .max_streams = -1, .device = -1};
  GOptionEntry entries[] = {
      {"check", 0, 0, G_OPTION_ARG_NONE, &o.check, "Validate the pipeline only", NULL},
      {"plan", 0, 0, G_OPTION_ARG_NONE, &o.plan, "Print the stream plan and exit", NULL},
      {"format", 0, 0, G_OPTION_ARG_STRING, &o.format, "Output format of --plan and the run report",
       "text|json"},
      {"dot", 0, 0, G_OPTION_ARG_FILENAME, &o.dot,
       "Write the DAG for review (Graphviz), '-' for stdout; alone it does not run; with --trace, "
       "--timeline, "
       "--verify or --dot-cuda-graph it is written after the run with measured durations and the critical "
       "path, "
       "else with --profile's",
       "FILE"},
      {"dot-detail", 0, 0, G_OPTION_ARG_STRING, &o.dot_detail,
       "--dot: every node (full), each foreach family as one node (summary), or full up to 200 nodes (auto)",
       "auto|summary|full"},
      {"dot-cuda-graph", 0, 0, G_OPTION_ARG_FILENAME, &o.dot_cuda_graph,
       "Graph mode on CUDA: write the captured CUDA graph itself (cudaGraphDebugDotPrint)", "FILE"},
      {"trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace, "Write a Chrome/Perfetto trace of the timed run",
       "FILE"},
      {"backend", 0, 0, G_OPTION_ARG_STRING, &o.backend, "auto: cuda when a GPU is usable, else host",
       "auto|cuda|host"},
      {"mode", 0, 0, G_OPTION_ARG_STRING, &o.mode, "Eager streams or a captured CUDA graph", "streams|graph"},
      {"iterations", 0, 0, G_OPTION_ARG_INT, &o.iterations, "Timed iterations", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "Untimed iterations first", "N"},
      {"max-streams", 0, 0, G_OPTION_ARG_INT, &o.max_streams, "Cap on the streams used", "N"},
      {"device", 0, 0, G_OPTION_ARG_INT, &o.device, "CUDA device ordinal", "N"},
      {"verify", 0, 0, G_OPTION_ARG_NONE, &o.verify, "Compare against the serial run", NULL},
      {"kernels", 0, 0, G_OPTION_ARG_NONE, &o.kernels, "List the built-in kernels and their parameters", NULL},
      {"version", 0, 0, G_OPTION_ARG_NONE, &o.version, "Print the version", NULL},
      {"dump-after", 0, 0, G_OPTION_ARG_STRING, &o.dump_after, "Print the IR after a stage and exit",
       "parse|passes"},
      {"fallback", 0, 0, G_OPTION_ARG_STRING, &o.fallback,
       "Graph mode: when a node's launch breaks the capture, run in streams mode instead of failing (streams), "
       "or fail (none, the default)",
       "none|streams"},
      {"timing", 0, 0, G_OPTION_ARG_STRING, &o.timing,
       "Per-node timing on CUDA: auto (default: stamps, or events in streams mode when most nodes are not "
       "built-in kernels), stamps (a clock stamp at each node's end, written by built-in kernels themselves; "
       "start = when ready), events (two timing events per node, exact) or off (makespan only)",
       "auto|stamps|events|off"},
      {"delay-seed", 0, 0, G_OPTION_ARG_INT64, &o.delay_seed,
       "Host backend: random delays before each node, seeded (0: off); with --verify, shakes out races",
       "SEED"},
      {"profile", 0, 0, G_OPTION_ARG_FILENAME, &o.profile, "Plan with the durations of a JSON run report", "FILE"},
      {"timeline", 0, 0, G_OPTION_ARG_FILENAME, &o.timeline, "Write an SVG timeline of the median iteration",
       "FILE.svg"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.files, NULL, "PIPELINE.yaml"},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
  g_option_context_set_summary(ctx, "Compile a DAG of GPU work onto CUDA streams and run it.");
  g_option_context_set_description(
      ctx, "Exit codes: 0 success, 64 bad command line, 65 bad pipeline, 66 unreadable file,\n"
           "69 backend unavailable, 70 failure while running, 1 --verify found a difference.\n");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  int rc;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    rc = usage_error(err, "%s", error->message);
    goto done;
  }
  if (o.version) {
    g_string_append(out, "dagrun " DAGRUN_VERSION_STRING "\n");
    rc = 0;
    goto done;
  }
  if (o.kernels) {
    list_kernels(out);
    rc = 0;
    goto done;
  }
  if ((rc = validate(&o, err)) != 0) goto done;
  if (o.files == NULL || o.files[0] == NULL || o.files[1] != NULL) {
    rc = usage_error(err, "expected exactly one PIPELINE.yaml");
    goto done;
  }
  rc = load_and_go(&o, o.files[0], out, err);
done:
  options_clear(&o);
  return rc;
}
