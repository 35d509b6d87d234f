/* report.c: the public library's run reports: accessors over the backend's
 * DrReport and its writers. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"

void dr_run_report_free(DrRunReport *report) {
  if (report == NULL) return;
  dr_report_free(report->report);
  g_string_chunk_free(report->ids);
  g_free(report);
}

const char *dr_run_report_backend(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NULL);
  return report->report->backend;
}

const char *dr_run_report_mode(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NULL);
  return report->report->mode;
}

guint dr_run_report_iterations(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, 0);
  return report->report->iterations;
}

gboolean dr_run_report_interrupted(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, FALSE);
  return report->report->interrupted;
}

double dr_run_report_makespan_us(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NAN);
  return report->report->makespan_us;
}

DrVerified dr_run_report_verified(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, DR_VERIFIED_NOT_RUN);
  return report->report->verified;
}

gboolean dr_run_report_check_verified(const DrRunReport *report, GError **error) {
  g_return_val_if_fail(report != NULL, FALSE);
  return dr_report_check_verified(report->report, error);
}

guint dr_run_report_n_nodes(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, 0);
  return report->report->nodes->len;
}

static const DrNodeReport *node_report(const DrRunReport *report, guint i) {
  return &g_array_index(report->report->nodes, DrNodeReport, i);
}

#define NODE_OK(report, i) ((report) != NULL && (i) < (report)->report->nodes->len)

const char *dr_run_report_node_id(const DrRunReport *report, guint i) {
  g_return_val_if_fail(NODE_OK(report, i), NULL);
  return node_report(report, i)->id;
}

const char *dr_run_report_node_op(const DrRunReport *report, guint i) {
  g_return_val_if_fail(NODE_OK(report, i), NULL);
  return dr_op_name(node_report(report, i)->op);
}

guint dr_run_report_node_stream(const DrRunReport *report, guint i) {
  g_return_val_if_fail(NODE_OK(report, i), 0);
  return node_report(report, i)->stream;
}

double dr_run_report_node_start_us(const DrRunReport *report, guint i) {
  g_return_val_if_fail(NODE_OK(report, i), NAN);
  return node_report(report, i)->start_us;
}

double dr_run_report_node_duration_us(const DrRunReport *report, guint i) {
  g_return_val_if_fail(NODE_OK(report, i), NAN);
  return node_report(report, i)->duration_us;
}

double dr_run_report_critical_path_us(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NAN);
  return report->report->critical_path_us;
}

guint dr_run_report_n_critical_nodes(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, 0);
  return report->report->critical_nodes ? report->report->critical_nodes->len : 0;
}

const char *dr_run_report_critical_node(const DrRunReport *report, guint i) {
  g_return_val_if_fail(report != NULL && i < dr_run_report_n_critical_nodes(report), NULL);
  DrId v = g_array_index(report->report->critical_nodes, DrId, i);
  for (guint k = 0; k < report->report->nodes->len; k++)
    if (node_report(report, k)->node == v) return node_report(report, k)->id;
  g_return_val_if_reached(NULL);
}

double dr_run_report_overlap_efficiency(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NAN);
  return report->report->overlap_streams;
}

double dr_run_report_critical_over_makespan(const DrRunReport *report) {
  g_return_val_if_fail(report != NULL, NAN);
  return report->report->overlap_critical;
}

void dr_run_report_write_text(const DrRunReport *report, GString *out) {
  g_return_if_fail(report != NULL && out != NULL);
  dr_report_write_text(report->report, out);
}

void dr_run_report_write_json(const DrRunReport *report, GString *out) {
  g_return_if_fail(report != NULL && out != NULL);
  dr_report_write_json(report->report, out);
}

gboolean dr_run_report_sort_from_name(const char *name, DrReportSort *out) {
  g_return_val_if_fail(name != NULL && out != NULL, FALSE);
  return dr_report_sort_from_name(name, out);
}

void dr_run_report_write_text_sorted(const DrRunReport *report, DrReportSort sort, GString *out) {
  g_return_if_fail(report != NULL && out != NULL && (guint)sort < DR_N_REPORT_SORTS);
  dr_report_write_text_sorted(report->report, sort, out);
}

void dr_run_report_write_json_sorted(const DrRunReport *report, DrReportSort sort, GString *out) {
  g_return_if_fail(report != NULL && out != NULL && (guint)sort < DR_N_REPORT_SORTS);
  dr_report_write_json_sorted(report->report, sort, out);
}

void dr_run_report_write_trace(const DrRunReport *report, GString *out) {
  g_return_if_fail(report != NULL && out != NULL);
  dr_trace_write(report->report, out);
}

void dr_run_report_write_timeline(const DrRunReport *report, const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(report != NULL && plan != NULL && out != NULL);
  g_return_if_fail(plan->plan == report->plan);
  dr_timeline_write_svg(report->report, plan->plan, out);
}
