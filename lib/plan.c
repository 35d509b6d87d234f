/* plan.c: the public library's validation and stream plans: the same passes
 * as `dagrun --check` (scheduler/passes.h), then the planner, and the
 * plan's accessors and writers. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"
#include "backends/cuda/threads.h"
#include "lib/settings.h"
#include "scheduler/predict.h"

gboolean dr_pipeline_validate(DrPipeline *pipeline, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (pipeline->failed != NULL) {
    g_propagate_error(error, g_error_copy(pipeline->failed));
    return FALSE;
  }
  if (pipeline->frozen) return TRUE;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  dr_build_check_whole_run_buffers(pipeline->graph, diags);
  if (dr_diags_n_errors(diags) == 0 && dr__pipeline_checks(pipeline->graph, diags))
    dr_passes_run(pipeline->graph, diags);
  if (!dr_diags_to_error(diags, &pipeline->failed)) {
    g_propagate_error(error, g_error_copy(pipeline->failed));
    return FALSE;
  }
  DR_GRAPH_CHECK(pipeline->graph);
  pipeline->frozen = TRUE;
  return TRUE;
}

guint dr_pipeline_n_edges(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, 0);
  return pipeline->frozen ? pipeline->graph->edges->len : 0;
}

DrStreamPlan *dr_pipeline_plan(DrPipeline *pipeline, const DrPlanSettings *settings, GError **error) {
  g_return_val_if_fail(pipeline != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (!dr_pipeline_validate(pipeline, error)) return NULL;
  g_return_val_if_fail(settings == NULL || settings->max_streams <= DR_MAX_STREAMS_MAX, NULL);
  DrPlanOptions opts;
  DrMode mode;
  g_autofree char *mode_reason = NULL;
  gboolean wants_queues;
  dr__plan_options_resolve(pipeline->graph, settings, &opts, &mode, &mode_reason, &wants_queues);
  /* opts carries the cap (or uncapped) for `mode`: the planner need not
   * look at the pipeline's own mode. The profile is read here, so the
   * planner opens no file. */
  g_autofree double *profiled = NULL;
  if (settings != NULL && settings->profile_path != NULL &&
      (profiled = dr_profile_durations(settings->profile_path, pipeline->graph, error)) == NULL)
    return NULL;
  opts.durations = profiled;
  DrPlan *plan = dr_plan_build(pipeline->graph, &opts, error);
  if (plan == NULL) return NULL;
  dr_run_probe_peers(plan, settings ? settings->backend : DR_BACKEND_AUTO);
  plan->mode = mode;
  plan->mode_reason = g_steal_pointer(&mode_reason);
  if (profiled != NULL) {
    /* #18.4: what the plan should take, against what the profile took. */
    DrPlanPrediction *pr = g_new0(DrPlanPrediction, 1);
    if (!dr_profile_makespan(settings->profile_path, &pr->measured_us, &pr->profile_mode, error)) {
      g_free(pr);
      dr_plan_free(plan);
      return NULL;
    }
    DrPredictCosts costs;
    dr_predict_costs_default(&costs, mode == DR_MODE_GRAPH);
    /* A graph-mode profile's durations run from stamp to stamp along each
     * stream, each node's cost in the replay included: not added again
     * (a chain of 2000 tiny kernels was predicted at 1.76x, BENCHMARKS.md
     * §12). */
    if (mode == DR_MODE_GRAPH && pr->profile_mode && strcmp(pr->profile_mode, "graph") == 0)
      costs.graph_node_us = 0;
    /* Eager runs issue from the threads the CUDA backend picks. */
    costs.issue_threads = dr__cuda_threads_count(plan, pipeline->graph->run.issue_threads);
    dr_plan_predict(plan, profiled, &costs, pr);
    pr->mode = mode;
    plan->prediction = pr;
  }
  DrStreamPlan *sp = g_new0(DrStreamPlan, 1);
  sp->plan = plan;
  sp->mode = mode;
  sp->wants_queues = wants_queues;
  sp->pipeline = pipeline;
  pipeline->refs++;
  return sp;
}

void dr_stream_plan_free(DrStreamPlan *plan) {
  if (plan == NULL) return;
  dr_plan_free(plan->plan);
  dr__pipeline_unref(plan->pipeline);
  g_free(plan);
}

guint dr_stream_plan_n_streams(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return dr_plan_n_streams(plan->plan);
}

DrPriority dr_stream_plan_stream_priority(const DrStreamPlan *plan, guint stream) {
  g_return_val_if_fail(plan != NULL && stream < dr_plan_n_streams(plan->plan), DR_PRIORITY_NORMAL);
  return g_array_index(plan->plan->streams, DrStream, stream).priority;
}

guint dr_stream_plan_width(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return plan->plan->width;
}

guint dr_stream_plan_n_edges(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return plan->plan->n_edges;
}

guint dr_stream_plan_n_waits(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return plan->plan->waits->len;
}

guint dr_stream_plan_n_steps(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return plan->plan->steps->len;
}

const char *dr_stream_plan_step_node(const DrStreamPlan *plan, guint step) {
  g_return_val_if_fail(plan != NULL && step < plan->plan->steps->len, NULL);
  return dr_graph_node(plan->pipeline->graph, dr_plan_step(plan->plan, step)->node)->id;
}

guint dr_stream_plan_step_stream(const DrStreamPlan *plan, guint step) {
  g_return_val_if_fail(plan != NULL && step < plan->plan->steps->len, 0);
  return dr_plan_step(plan->plan, step)->stream;
}

guint dr_stream_plan_step_n_waits(const DrStreamPlan *plan, guint step) {
  g_return_val_if_fail(plan != NULL && step < plan->plan->steps->len, 0);
  return dr_plan_step(plan->plan, step)->wait_count;
}

const char *dr_stream_plan_step_wait(const DrStreamPlan *plan, guint step, guint wait) {
  g_return_val_if_fail(plan != NULL && step < plan->plan->steps->len, NULL);
  const DrPlanStep *s = dr_plan_step(plan->plan, step);
  g_return_val_if_fail(wait < s->wait_count, NULL);
  return dr_graph_node(plan->pipeline->graph, dr_plan_wait(plan->plan, s->wait_first + wait))->id;
}

gint dr_stream_plan_node_stream(const DrStreamPlan *plan, const char *id) {
  g_return_val_if_fail(plan != NULL && id != NULL, -1);
  DrId n = dr_graph_find_node(plan->pipeline->graph, id);
  return n == DR_NONE ? -1 : (gint)plan->plan->node_stream[n];
}

void dr_stream_plan_write_explain(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_explain(plan->plan, out);
}

gboolean dr_stream_plan_predicted(const DrStreamPlan *plan, double *predicted_us, double *measured_us) {
  g_return_val_if_fail(plan != NULL, FALSE);
  const DrPlanPrediction *p = plan->plan->prediction;
  if (p == NULL) return FALSE;
  if (predicted_us) *predicted_us = p->predicted_us;
  if (measured_us) *measured_us = p->measured_us;
  return TRUE;
}

const char *dr_stream_plan_mode_reason(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, NULL);
  return plan->plan->mode_reason;
}

DrMode dr_stream_plan_mode(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, DR_MODE_STREAMS);
  return plan->mode;
}

guint dr_stream_plan_cap(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, 0);
  return plan->plan->uncapped ? 0 : plan->plan->cap;
}

const char *dr_stream_plan_cap_note(const DrStreamPlan *plan) {
  g_return_val_if_fail(plan != NULL, NULL);
  return plan->plan->cap_note;
}

void dr_stream_plan_write_text(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_text(plan->plan, out);
}

void dr_stream_plan_write_json(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_json(plan->plan, out);
}

gboolean dr_stream_plan_write_json_file(const DrStreamPlan *plan, FILE *file, const char *what,
                                        GError **error) {
  g_return_val_if_fail(plan != NULL && file != NULL && what != NULL, FALSE);
  return dr_plan_write_json_file(plan->plan, file, what, error);
}

void dr_stream_plan_write_dot(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_dot(plan->plan, out);
}

gboolean dr_stream_plan_write_dot_with(const DrStreamPlan *plan, const DrDotSettings *settings, GString *out,
                                       GError **error) {
  g_return_val_if_fail(plan != NULL && out != NULL, FALSE);
  DrDotSettings s = settings ? *settings : (DrDotSettings){0};
  g_return_val_if_fail((guint)s.detail <= DR_DOT_DETAIL_FULL, FALSE);
  const DrGraph *g = plan->pipeline->graph;
  g_autofree double *dur = NULL;
  g_autofree char *source = NULL;
  if (s.report != NULL) {
    if (s.report->plan != plan->plan || s.report->report->n_graph_nodes != g->nodes->len) {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "the DOT's report is not of a run of this plan");
      return FALSE;
    }
    dur = dr_report_durations(s.report->report);
    source = g_strdup("this run");
  } else if (s.profile_path != NULL) {
    if ((dur = dr_profile_durations(s.profile_path, g, error)) == NULL) return FALSE;
    source = g_strdup_printf("profile %s", s.profile_path);
  }
  DrDotOptions o = {s.detail, dur, source};
  dr_plan_write_dot_opts(plan->plan, &o, out);
  return TRUE;
}
