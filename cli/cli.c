/* cli.c: the dagrun command line (cli.h): options, their checks and exit
 * codes, as a thin client of the public library (include/dagrun/dagrun.h):
 * load -> plan -> run go through the same calls a program would make, so
 * the same YAML gives the same plan both ways. Writes into two GStrings
 * instead of the terminal so the golden tests run the very same code
 * in-process; main.c prints them. What it owns: parsing and checking the
 * flags (with the same ranges as the file's `run:` keys), the caret display
 * of diagnostics (diag_print.c), SIGINT, and its own output files (--dot,
 * --trace, --timeline), which it checks before anything runs. */
#include "cli/cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "cli/diag_print.h"
#include "cli/params.h"
#include "cli/ranks.h"
#include "include/dagrun/dagrun.h"

/* An integer flag not given. */
#define UNSET G_MININT

typedef struct {
  gboolean check, plan, verify, kernels, version, cache_clean;
  char *format, *dot, *trace, *backend, *mode, *dump_after, *profile, *timeline;
  gint64 delay_seed;
  char *timing;
  char *fallback;
  char *dot_detail, *dot_cuda_graph;
  char *sort;
  /* NULL (in-process callers), or the real stdout: big outputs (--plan
   * --format=json) are streamed to it instead of built in `out`. */
  FILE *stdout_file;
  gint iterations, warmup, max_streams, device, issue_threads;
  char *memory_limit;         /* --memory-limit=SIZE as given */
  guint64 memory_limit_bytes; /* parsed by validate */
  gboolean memory_curve;
  char **params;     /* --param NAME=VALUE, repeatable */
  char *params_from; /* --params-from=FILE: a sweep, one run per line */
  gboolean explain;
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
  g_free(o->fallback);
  g_free(o->dot_detail);
  g_free(o->dot_cuda_graph);
  g_free(o->memory_limit);
  g_free(o->sort);
  g_strfreev(o->params);
  g_free(o->params_from);
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
  const DrKernelDef *k;
  for (guint i = 0; (k = dr_builtin_kernel(i)) != NULL; i++) {
    g_string_append_printf(out, "%s(", k->name);
    for (int j = 0; j < k->n_params; j++) {
      const DrKParam *p = &k->params[j];
      g_string_append_printf(out, "%s%s: %s%s", j ? ", " : "", p->name, types[p->type],
                             p->is_pointer ? "*" : "");
      if (p->is_pointer) g_string_append_printf(out, " %s", modes[p->access]);
      if (p->optional) g_string_append_printf(out, " = %g", p->def);
    }
    g_string_append_printf(out, ")\n    %s\n", k->summary);
    const char *rules = dr_builtin_kernel_rules(i);
    if (rules != NULL) g_string_append_printf(out, "    rules: %s\n", rules);
  }
}

/* Writes `text` to `path` ("-": into `out`). On failure says so naming the
 * user's path and returns FALSE (exit 73). */
static gboolean write_output(const char *path, const GString *text, GString *out, GString *err) {
  if (strcmp(path, "-") == 0) {
    g_string_append_len(out, text->str, (gssize)text->len);
    return TRUE;
  }
  FILE *f = fopen(path, "wb");
  gboolean ok = f != NULL && fwrite(text->str, 1, text->len, f) == text->len;
  int e = errno;
  if (f != NULL && fclose(f) != 0 && ok) ok = FALSE, e = errno;
  if (!ok) g_string_append_printf(err, "%s: error: cannot write: %s\n", path, g_strerror(e));
  return ok;
}

/* ---- checking the options ------------------------------------------------ */

/* FALSE when `v` was given outside lo..hi (then says so). */
static gboolean in_range(gint v, const char *flag, gint lo, gint hi, GString *err) {
  if (v == UNSET || (v >= lo && v <= hi)) return TRUE;
  usage_error(err, "--%s must be between %d and %d, not %d", flag, lo, hi, v);
  return FALSE;
}

static int check_names(const Options *o, GString *err) {
  if (o->format && strcmp(o->format, "text") != 0 && strcmp(o->format, "json") != 0)
    return usage_error(err, "--format must be text or json, not '%s'", o->format);
  DrBackendKind backend;
  if (o->backend && !dr_backend_kind_from_name(o->backend, &backend))
    return usage_error(err, "--backend must be auto, cuda or host, not '%s'", o->backend);
  DrMode mode;
  if (o->mode && !dr_mode_from_name(o->mode, &mode))
    return usage_error(err, "--mode must be auto, streams or graph, not '%s'", o->mode);
  DrTimingMode timing;
  if (o->timing && !dr_timing_mode_from_name(o->timing, &timing))
    return usage_error(err, "--timing must be auto, stamps, events or off, not '%s'", o->timing);
  if (o->fallback && strcmp(o->fallback, "none") != 0 && strcmp(o->fallback, "streams") != 0)
    return usage_error(err, "--fallback must be none or streams, not '%s'", o->fallback);
  DrDotDetail detail;
  if (o->dot_detail && !dr_dot_detail_from_name(o->dot_detail, &detail))
    return usage_error(err, "--dot-detail must be auto, summary or full, not '%s'", o->dot_detail);
  DrReportSort sort;
  if (o->sort && !dr_run_report_sort_from_name(o->sort, &sort))
    return usage_error(
        err, "--sort must be total, instances, median, stddev, min, max, bytes or name, not '%s'", o->sort);
  if (o->format && strcmp(o->format, "json") == 0) {
    /* stdout then holds exactly one JSON object. */
    const char *const to_stdout[][2] = {
        {"--dot", o->dot}, {"--trace", o->trace}, {"--timeline", o->timeline}};
    for (guint i = 0; i < G_N_ELEMENTS(to_stdout); i++)
      if (to_stdout[i][1] && strcmp(to_stdout[i][1], "-") == 0)
        return usage_error(err,
                           "%s=- would mix its output into --format=json's JSON on stdout: give it a file",
                           to_stdout[i][0]);
  }
  if (o->dot_cuda_graph && !(o->mode && strcmp(o->mode, "graph") == 0))
    return usage_error(err, "--dot-cuda-graph needs graph mode (--mode=graph)");
  const char *const *names = dr_pass_names();
  if (o->dump_after && !g_strv_contains(names, o->dump_after)) {
    g_autofree char *list = g_strjoinv(", ", (char **)names);
    return usage_error(err, "--dump-after must be one of %s; not '%s'", list, o->dump_after);
  }
  return 0;
}

/* A size as the pipeline format writes one: decimal digits, optionally
 * followed by Ki, Mi, Gi (or KiB, MiB, GiB). FALSE when it is not one or
 * overflows 64 bits. */
static gboolean parse_size(const char *s, guint64 *out) {
  static const struct {
    const char *suffix;
    guint shift;
  } suffixes[] = {{"", 0}, {"Ki", 10}, {"KiB", 10}, {"Mi", 20}, {"MiB", 20}, {"Gi", 30}, {"GiB", 30}};
  const char *p = s;
  guint64 v = 0;
  if (!g_ascii_isdigit(*p)) return FALSE;
  for (; g_ascii_isdigit(*p); p++) {
    if (v > (G_MAXUINT64 - (guint64)(*p - '0')) / 10) return FALSE;
    v = v * 10 + (guint64)(*p - '0');
  }
  for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
    if (strcmp(p, suffixes[i].suffix) != 0) continue;
    if (suffixes[i].shift > 0 && v > (G_MAXUINT64 >> suffixes[i].shift)) return FALSE;
    *out = v << suffixes[i].shift;
    return TRUE;
  }
  return FALSE;
}

/* Checks the option values that GOption cannot. Returns 0 or 64. */
static int validate(Options *o, GString *err) {
  int rc = check_names(o, err);
  if (rc != 0) return rc;
  if (!in_range(o->iterations, "iterations", 1, DR_ITERATIONS_MAX, err) ||
      !in_range(o->warmup, "warmup", 0, DR_ITERATIONS_MAX, err) ||
      !in_range(o->max_streams, "max-streams", 1, DR_MAX_STREAMS_MAX, err) ||
      !in_range(o->device, "device", 0, DR_DEVICE_MAX, err) ||
      !in_range(o->issue_threads, "issue-threads", 0, DR_ISSUE_THREADS_MAX, err))
    return 64;
  if (o->delay_seed < 0) return usage_error(err, "--delay-seed must not be negative");
  if (o->memory_limit && !parse_size(o->memory_limit, &o->memory_limit_bytes))
    return usage_error(err, "--memory-limit must be a size in bytes (e.g. 512MiB, 2Gi, 1048576); not '%s'",
                       o->memory_limit);
  if (o->memory_curve && !o->plan) return usage_error(err, "--memory-curve needs --plan");
  if (o->explain && !(o->plan && o->profile))
    return usage_error(err, "--explain needs --plan and --profile=FILE (a JSON run report to explain)");
  return 0;
}

/* The first flag given that only a run uses, or NULL. */
static const char *run_flag(const Options *o) {
  if (o->iterations != UNSET) return "--iterations";
  if (o->warmup != UNSET) return "--warmup";
  if (o->verify) return "--verify";
  if (o->trace) return "--trace";
  if (o->timeline) return "--timeline";
  if (o->backend) return "--backend";
  if (o->timing) return "--timing";
  if (o->delay_seed != 0) return "--delay-seed";
  if (o->device != UNSET) return "--device";
  if (o->issue_threads != UNSET) return "--issue-threads";
  if (o->fallback) return "--fallback";
  if (o->dot_cuda_graph) return "--dot-cuda-graph";
  if (o->sort) return "--sort";
  return NULL;
}

static void warn(GString *err, const char *what, const char *why) {
  g_string_append_printf(err, "dagrun: warning: %s has no effect %s\n", what, why);
}

/* Says which of the given flags do nothing for what was asked. */
static void warn_no_effect(const Options *o, GString *err) {
  const char *stop = o->dump_after ? "--dump-after" : o->check ? "--check" : o->plan ? "--plan" : NULL;
  /* --backend and --device choose the device.* values the pipeline is
   * loaded with (every stop loads it), and --plan's peer-copy path and
   * mode: they have an effect without a run. */
  Options but_backend = *o;
  but_backend.backend = NULL;
  but_backend.device = UNSET;
  const char *flag = run_flag(&but_backend);
  if (flag && stop) {
    g_autofree char *why = g_strdup_printf("with %s: nothing runs", stop);
    warn(err, flag, why);
    return;
  }
  gboolean host = o->backend && strcmp(o->backend, "host") == 0;
  gboolean cuda = o->backend && strcmp(o->backend, "cuda") == 0;
  if (host && o->mode && strcmp(o->mode, "graph") == 0)
    warn(err, "--mode=graph", "on the host backend: it runs the plan's streams as threads");
  if (host && o->timing) warn(err, "--timing", "on the host backend: it times every node with host clocks");
  if (host && o->device != UNSET) warn(err, "--device", "on the host backend");
  if (o->fallback && (host || (o->mode && strcmp(o->mode, "streams") == 0)))
    warn(err, "--fallback", "outside graph mode on CUDA: only a capture falls back");
  if (cuda && o->delay_seed != 0)
    warn(err, "--delay-seed", "on the CUDA backend: only the host backend delays nodes");
}

/* With --backend=auto the backend is known only once the run chose it: the
 * flags that did nothing on the host backend say so then. */
static void warn_auto_host(const Options *o, const DrRunReport *report, GString *err) {
  if ((o->backend && strcmp(o->backend, "auto") != 0) || strcmp(dr_run_report_backend(report), "host") != 0)
    return;
  if (o->mode && strcmp(o->mode, "graph") == 0)
    warn(err, "--mode=graph",
         "on the host backend (chosen by --backend=auto): it runs the plan's streams as threads");
  if (o->timing) warn(err, "--timing", "on the host backend (chosen by --backend=auto)");
}

/* ---- load, plan, run ------------------------------------------------------ */

/* Set by SIGINT while a pipeline runs (the library polls it between
 * iterations). */
static volatile sig_atomic_t interrupt_flag;

/* `out` holds a run report (for the merge of an MPI job's, cli/ranks.c). */
static gboolean ran_report;

static void on_sigint(int sig) {
  (void)sig;
  interrupt_flag = 1;
}

/* Prints a failed load's error: diagnostics with carets (65), or else. */
static int load_failed(const char *path, const DrDiagnostics *diags, const GError *error, GString *err) {
  if (!g_error_matches(error, DR_ERROR, DR_ERROR_INVALID) || dr_diagnostics_len(diags) == 0)
    return report_error(err, error);
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, NULL)) text = NULL;
  dr__diag_print(diags, path, text, len, err);
  return 65;
}

/* The run settings: the pipeline's, then the command line's over them. */
static void run_settings(const Options *o, const DrPipeline *pipeline, DrRunSettings *rs) {
  dr_run_settings_init(rs, pipeline);
  if (o->mode) dr_mode_from_name(o->mode, &rs->mode);
  if (o->iterations != UNSET) rs->iterations = (guint)o->iterations;
  if (o->warmup != UNSET) rs->warmup = (guint)o->warmup;
  if (o->device != UNSET) rs->device = o->device;
  if (o->issue_threads != UNSET) rs->issue_threads = (guint)o->issue_threads;
  if (o->fallback) rs->graph_fallback = strcmp(o->fallback, "streams") == 0;
  if (o->backend) dr_backend_kind_from_name(o->backend, &rs->backend);
  if (o->timing) dr_timing_mode_from_name(o->timing, &rs->node_timing);
  rs->verify = o->verify;
  rs->delay_seed = (guint64)o->delay_seed;
  /* A progress bar only for a person watching: never into a file or pipe,
   * nor on a terminal that says it cannot redraw a line (TERM=dumb). The
   * run driver also keeps it off the line of host print output. */
  const char *term = g_getenv("TERM");
  rs->progress = isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
  /* --format=json keeps stdout pure JSON: host functions print elsewhere. */
  if (o->format && strcmp(o->format, "json") == 0) rs->host_output = stderr;
  rs->cuda_graph_dot_path = o->dot_cuda_graph;
  /* The CLI writes the trace and the timeline itself, after the report. */
}

/* Writes --dot: durations from `report` when given, else from --profile
 * when given. Returns 0, or the exit code after printing why. */
static int write_dot(const Options *o, const DrStreamPlan *plan, const DrRunReport *report, GString *out,
                     GString *err) {
  DrDotSettings ds = {
      .detail = DR_DOT_DETAIL_AUTO, .report = report, .profile_path = report ? NULL : o->profile};
  if (o->dot_detail) dr_dot_detail_from_name(o->dot_detail, &ds.detail);
  g_autoptr(GString) dot = g_string_new(NULL);
  g_autoptr(GError) error = NULL;
  if (!dr_stream_plan_write_dot_with(plan, &ds, dot, &error)) return report_error(err, error);
  return write_output(o->dot, dot, out, err) ? 0 : 73;
}

/* Runs under a SIGINT handler: Ctrl-C stops the run after the iteration in
 * flight; a second one kills the process the usual way (SA_RESETHAND). */
static DrRunReport *run_interruptible(const DrStreamPlan *plan, DrRunSettings *rs, GError **error) {
  interrupt_flag = 0;
  rs->stop = &interrupt_flag;
  struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = (int)SA_RESETHAND}, old_sa;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_sa);
  DrRunReport *report = dr_stream_plan_run(plan, rs, error);
  sigaction(SIGINT, &old_sa, NULL);
  return report;
}

/* Writes the report, then the trace and timeline files. Returns 0 or 73. */
static int write_report(const Options *o, const DrRunReport *report, const DrStreamPlan *plan, GString *out,
                        GString *err) {
  DrReportSort sort = DR_REPORT_SORT_TOTAL;
  if (o->sort) dr_run_report_sort_from_name(o->sort, &sort);
  if (o->format && strcmp(o->format, "json") == 0) {
    dr_run_report_write_json_sorted(report, sort, out);
    g_string_append_c(out, '\n');
  } else {
    dr_run_report_write_text_sorted(report, sort, out);
  }
  if (o->trace) {
    g_autoptr(GString) trace = g_string_new(NULL);
    dr_run_report_write_trace(report, trace);
    g_autofree char *path = dr__cli_ranks_path(o->trace); /* one file per rank */
    if (!write_output(path, trace, out, err)) return 73;
  }
  if (o->timeline) {
    g_autoptr(GString) svg = g_string_new(NULL);
    dr_run_report_write_timeline(report, plan, svg);
    g_autofree char *path = dr__cli_ranks_path(o->timeline);
    if (!write_output(path, svg, out, err)) return 73;
  }
  return 0;
}

/* --params-from: one run per line of `lines`, each from the values the
 * pipeline had before plus the line's; one report per line. Without
 * --verify the runs share one runner, so graph mode updates its
 * executable in place between lines; with it, each line is a run of its
 * own (a runner has no serial run to compare with). */
static int run_sweep(const Options *o, DrPipeline *pipeline, const DrStreamPlan *plan, const GArray *lines,
                     GString *out, GString *err) {
  DrRunSettings rs;
  run_settings(o, pipeline, &rs);
  g_autoptr(GError) error = NULL;
  int ready = dr__cli_ranks_ready(0);
  if (ready != 0) return ready;
  ran_report = TRUE;
  g_auto(GStrv) base = dr__cli_params_save(pipeline);
  g_autoptr(DrRunner) runner = NULL;
  if (!rs.verify && (runner = dr_runner_new(plan, &rs, &error)) == NULL) return report_error(err, error);
  for (guint i = 0; i < lines->len; i++) {
    const DrCliSweepLine *sl = &g_array_index(lines, DrCliSweepLine, i);
    int rc = dr__cli_params_set(pipeline, base, err);
    g_ptr_array_add(sl->sets, NULL);
    if (rc == 0) rc = dr__cli_params_set(pipeline, (char **)sl->sets->pdata, err);
    g_ptr_array_set_size(sl->sets, sl->sets->len - 1);
    if (rc != 0) return rc;
    g_autoptr(DrRunReport) report =
        runner ? dr_runner_run(runner, &error) : run_interruptible(plan, &rs, &error);
    if (report == NULL) return report_error(err, error);
    if (i == 0) warn_auto_host(o, report, err);
    if ((rc = write_report(o, report, plan, out, err)) != 0) return rc;
    /* JSON Lines: one report per line, no blank line between. */
    if (o->format && strcmp(o->format, "json") == 0 && out->len >= 2 && out->str[out->len - 1] == '\n' &&
        out->str[out->len - 2] == '\n')
      g_string_truncate(out, out->len - 1);
    if (dr_run_report_interrupted(report)) return 130;
    if (!dr_run_report_check_verified(report, &error)) return report_error(err, error);
  }
  return 0;
}

static int run(const Options *o, const DrPipeline *pipeline, const DrStreamPlan *plan, GString *out,
               GString *err) {
  DrRunSettings rs;
  run_settings(o, pipeline, &rs);
  g_autoptr(GError) error = NULL;
  int ready = dr__cli_ranks_ready(0);
  if (ready != 0) return ready;
  ran_report = TRUE;
  g_autoptr(DrRunReport) report = run_interruptible(plan, &rs, &error);
  if (report == NULL) {
    int code = report_error(err, error);
    dr__cli_ranks_run_failed(err, code);
    return code;
  }
  warn_auto_host(o, report, err);
  int rc = write_report(o, report, plan, out, err);
  /* With a run, the DOT shows its durations and critical path. */
  if (rc == 0 && o->dot) rc = write_dot(o, plan, report, out, err);
  if (dr_run_report_interrupted(report)) {
    g_string_append_printf(err, "dagrun: interrupted after %u of %u timed iterations\n",
                           dr_run_report_iterations(report), rs.iterations);
    return 130;
  }
  if (rc != 0) return rc;
  if (!dr_run_report_check_verified(report, &error)) return report_error(err, error);
  return 0;
}

/* Every output file the command line writes, checked before anything. */
static int check_outputs(const Options *o, GString *err) {
  const char *paths[] = {o->dot, o->trace, o->timeline, o->dot_cuda_graph};
  for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
    g_autoptr(GError) error = NULL;
    if (paths[i] != NULL && !dr_output_check(paths[i], &error)) return report_error(err, error);
  }
  return 0;
}

/* --plan --format=json to the real stdout as it is written (what `out`
 * holds goes first), the same bytes as into `out`: a plan of millions of
 * nodes is never held as text. Returns 0, or 73 when stdout fails. */
static int stream_plan_json(const Options *o, const DrStreamPlan *plan, GString *out, GString *err) {
  g_autoptr(GError) error = NULL;
  gboolean ok = fwrite(out->str, 1, out->len, o->stdout_file) == out->len;
  g_string_truncate(out, 0);
  ok = ok && dr_stream_plan_write_json_file(plan, o->stdout_file, "stdout", &error);
  ok = ok && fputc('\n', o->stdout_file) != EOF && fflush(o->stdout_file) == 0;
  if (!ok) {
    g_string_append_printf(err, "dagrun: error: %s\n", error ? error->message : "stdout: cannot write");
    return 73;
  }
  return 0;
}

static int plan_and_run(const Options *o, DrPipeline *pipeline, const GArray *sweep, GString *out,
                        GString *err) {
  DrPlanSettings ps = {.max_streams = o->max_streams != UNSET ? (guint)o->max_streams : 0,
                       .profile_path = o->profile};
  if (o->mode) ps.mode_set = dr_mode_from_name(o->mode, &ps.mode);
  /* mode: auto resolves with what the run will do. */
  if (o->iterations != UNSET) ps.iterations = (guint)o->iterations;
  if (o->backend) (void)dr_backend_kind_from_name(o->backend, &ps.backend);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(pipeline, &ps, &error);
  if (plan == NULL) return report_error(err, error);
  int rc = check_outputs(o, err);
  if (rc != 0) return rc;
  /* --dot without a run now; with one, after it (run()). */
  gboolean runs = !o->plan && (o->dot == NULL || run_flag(o) != NULL || sweep != NULL);
  if (o->dot && !runs && (rc = write_dot(o, plan, NULL, out, err)) != 0) return rc;
  if (o->plan) {
    gboolean json = o->format && strcmp(o->format, "json") == 0;
    if (json && o->stdout_file) return stream_plan_json(o, plan, out, err);
    if (json)
      dr_stream_plan_write_json(plan, out);
    else
      dr_stream_plan_write_text(plan, out);
    if (json) g_string_append_c(out, '\n');
    if (o->explain && !json) dr_stream_plan_write_explain(plan, out);
    if (o->memory_curve && !dr_pipeline_write_memory_curve(pipeline, 5, out, &error))
      return report_error(err, error);
    return 0;
  }
  /* --dot alone is for review and does not run; with run flags it does. */
  if (o->dot && run_flag(o) == NULL && sweep == NULL) return 0;
  if (sweep != NULL) return run_sweep(o, pipeline, plan, sweep, out, err);
  return run(o, pipeline, plan, out, err);
}

/* Loads the pipeline and does what the options ask: dump, check, plan or
 * run. Returns the exit code. */
static int load_and_go(const Options *o, const char *path, GString *out, GString *err) {
  g_autoptr(GError) error = NULL;
  /* device.* in the file describe the device this command will run on. */
  DrBackendKind backend = DR_BACKEND_AUTO;
  if (o->backend) (void)dr_backend_kind_from_name(o->backend, &backend);
  dr_device_vars_select(backend, o->device != UNSET ? o->device : 0);
  g_autoptr(DrDiagnostics) diags = dr_diagnostics_new();
  if (o->dump_after) {
    if (!dr_pipeline_dump_file(path, o->dump_after, diags, out, &error))
      return load_failed(path, diags, error, err);
    return 0;
  }
  g_autoptr(DrPipeline) pipeline = dr_pipeline_load_file_diagnostics(path, diags, &error);
  if (pipeline == NULL) return load_failed(path, diags, error, err);
  if (o->memory_limit && !dr_pipeline_set_memory_limit(pipeline, o->memory_limit_bytes, &error)) {
    /* The message says which buffers the serial peak has live together. */
    g_string_append_printf(
        err, "%s: error: --memory-limit=%s: %s\n", path, o->memory_limit,
        strstr(error->message, "error: ") ? strstr(error->message, "error: ") + 7 : error->message);
    return dr_error_exit_code(error);
  }
  int rc = dr__cli_params_set(pipeline, o->params, err);
  if (rc != 0) return rc;
  GArray *sweep = NULL;
  if (o->params_from && (rc = dr__cli_params_read(o->params_from, pipeline, &sweep, err)) != 0) return rc;
  if (o->check) {
    dr__cli_sweep_free(sweep);
    g_string_append_printf(out, "ok: %u nodes, %u edges\n", dr_pipeline_n_nodes(pipeline),
                           dr_pipeline_n_edges(pipeline));
    return 0;
  }
  rc = plan_and_run(o, pipeline, sweep, out, err);
  dr__cli_sweep_free(sweep);
  return rc;
}

/* --cache-clean: empties the NVRTC cache and says what went. */
static int cache_clean(GString *out, GString *err) {
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = NULL;
  guint entries = 0;
  guint64 bytes = 0;
  if (!dr_kernel_cache_clean(&dir, &entries, &bytes, &error)) return report_error(err, error);
  g_string_append_printf(out, "removed %u cached kernel%s (%" G_GUINT64_FORMAT " bytes) from %s\n", entries,
                         entries == 1 ? "" : "s", bytes, dir);
  return 0;
}

int dr__cli_run(int argc, char **argv, GString *out, GString *err) {
  return dr__cli_run_stdout(argc, argv, NULL, out, err);
}

int dr__cli_run_stdout(int argc, char **argv, FILE *stdout_file, GString *out, GString *err) {
  Options o = {.iterations = UNSET,
               .warmup = UNSET,
               .max_streams = UNSET,
               .device = UNSET,
               .issue_threads = UNSET,
               .stdout_file = stdout_file};
  GOptionEntry entries[] = {
      {"check", 0, 0, G_OPTION_ARG_NONE, &o.check, "Validate the pipeline only", NULL},
      {"plan", 0, 0, G_OPTION_ARG_NONE, &o.plan, "Print the stream plan and exit", NULL},
      {"format", 0, 0, G_OPTION_ARG_STRING, &o.format, "Output format of --plan and the run report",
       "text|json"},
      {"dot", 0, 0, G_OPTION_ARG_FILENAME, &o.dot,
       "Write the DAG for review (Graphviz), '-' for stdout; alone it does not run", "FILE"},
      {"dot-detail", 0, 0, G_OPTION_ARG_STRING, &o.dot_detail,
       "How much --dot draws: summary collapses each foreach family into one node (auto: full up to 200 "
       "nodes)",
       "auto|summary|full"},
      {"dot-cuda-graph", 0, 0, G_OPTION_ARG_FILENAME, &o.dot_cuda_graph,
       "Graph mode: write the captured CUDA graph itself (cudaGraphDebugDotPrint)", "FILE"},
      {"trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace, "Write a Chrome/Perfetto trace of the timed run",
       "FILE"},
      {"backend", 0, 0, G_OPTION_ARG_STRING, &o.backend, "auto: cuda when a GPU is usable, else host",
       "auto|cuda|host"},
      {"mode", 0, 0, G_OPTION_ARG_STRING, &o.mode,
       "Eager streams, a captured CUDA graph, or auto: graph when it iterates and can be captured",
       "auto|streams|graph"},
      {"iterations", 0, 0, G_OPTION_ARG_INT, &o.iterations, "Timed iterations (1..2147483647)", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "Untimed iterations first (0..2147483647)", "N"},
      {"max-streams", 0, 0, G_OPTION_ARG_INT, &o.max_streams, "Cap on the streams used (1..1024)", "N"},
      {"device", 0, 0, G_OPTION_ARG_INT, &o.device, "CUDA device ordinal (0..1023)", "N"},
      {"issue-threads", 0, 0, G_OPTION_ARG_INT, &o.issue_threads,
       "Streams mode on CUDA: host threads issuing each iteration (0..8; 0: from the DAG's width)", "N"},
      {"verify", 0, 0, G_OPTION_ARG_NONE, &o.verify, "Compare against the serial run", NULL},
      {"kernels", 0, 0, G_OPTION_ARG_NONE, &o.kernels, "List the built-in kernels and their parameters",
       NULL},
      {"version", 0, 0, G_OPTION_ARG_NONE, &o.version, "Print the version", NULL},
      {"cache-clean", 0, 0, G_OPTION_ARG_NONE, &o.cache_clean,
       "Remove every compiled user kernel from the NVRTC cache (DAGRUN_CACHE_DIR) and exit", NULL},
      {"dump-after", 0, 0, G_OPTION_ARG_STRING, &o.dump_after, "Print the IR after a pass and exit",
       "parse|lifetimes|hazards|afters|cycles|memory|passes"},
      {"fallback", 0, 0, G_OPTION_ARG_STRING, &o.fallback,
       "Graph mode: when a node's launch breaks the capture, run in streams mode instead of failing "
       "(streams), "
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
      {"profile", 0, 0, G_OPTION_ARG_FILENAME, &o.profile, "Plan with the durations of a JSON run report",
       "FILE"},
      {"timeline", 0, 0, G_OPTION_ARG_FILENAME, &o.timeline, "Write an SVG timeline of the median iteration",
       "FILE.svg"},
      {"memory-limit", 0, 0, G_OPTION_ARG_STRING, &o.memory_limit,
       "Most device bytes live at once: add ordering edges until the certified peak fits (memory.limit)",
       "SIZE"},
      {"explain", 0, 0, G_OPTION_ARG_NONE, &o.explain,
       "With --plan --profile: split the gap between the measured makespan and the critical path", NULL},
      {"memory-curve", 0, 0, G_OPTION_ARG_NONE, &o.memory_curve,
       "With --plan: width and estimated critical path for limits from the serial peak to the bound", NULL},
      {"sort", 0, 0, G_OPTION_ARG_STRING, &o.sort,
       "Order of the run report's summary by kernel/op: largest first by total time (default), instances, "
       "median, stddev, min, max or bytes; or by name",
       "total|instances|median|stddev|min|max|bytes|name"},
      {"param", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.params,
       "Set a run-time parameter declared in params: (repeatable); out of its range: exit 64", "NAME=VALUE"},
      {"params-from", 0, 0, G_OPTION_ARG_FILENAME, &o.params_from,
       "A sweep: one run per line of NAME=VALUE words, one report each (graph mode updates the graph in "
       "place)",
       "FILE"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.files, NULL, "PIPELINE.yaml"},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
  g_option_context_set_summary(ctx, "Compile a DAG of GPU work onto CUDA streams and run it.");
  g_option_context_set_description(
      ctx,
      "Exit codes: 0 success, 1 --verify found a difference, 64 bad command line, 65 bad pipeline,\n"
      "66 unreadable file, 69 backend unavailable, 70 failure while running, 73 cannot write an\n"
      "output file, 130 interrupted.\n");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  int rc;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    rc = usage_error(err, "%s", error->message);
  } else if (o.version) {
    g_string_append(out, "dagrun " DAGRUN_VERSION_STRING "\n");
    rc = 0;
  } else if (o.kernels) {
    list_kernels(out);
    rc = 0;
  } else if (o.cache_clean) {
    rc = cache_clean(out, err);
  } else if ((rc = validate(&o, err)) != 0) {
  } else if (o.files == NULL || o.files[0] == NULL || o.files[1] != NULL) {
    rc = usage_error(err, "expected exactly one PIPELINE.yaml");
  } else {
    warn_no_effect(&o, err);
    ran_report = FALSE;
    rc = load_and_go(&o, o.files[0], out, err);
    rc = dr__cli_ranks_finish(rc, ran_report, o.format && strcmp(o.format, "json") == 0, out);
  }
  options_clear(&o);
  return rc;
}
