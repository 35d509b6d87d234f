/* model.c: the run report model's lifetime and verdict (report.h). The
 * report is filled by the run driver (backends/run.c); this file only
 * frees it and turns a failed --verify into an error. */
#include "report/report.h"

void dr_report_free(DrReport *r) {
  if (r == NULL) return;
  g_free(r->name);
  g_free(r->mode_reason);
  g_free(r->diff_buffer);
  g_free(r->diff_serial);
  g_free(r->diff_concurrent);
  g_free(r->largest_buffer);
  g_free(r->largest_serial);
  g_free(r->largest_concurrent);
  if (r->nodes) g_array_unref(r->nodes);
  g_free(r->sample_start);
  g_free(r->sample_end);
  g_free(r->iter_start_us);
  g_free(r->iter_makespan_us);
  if (r->stream_priorities) g_array_unref(r->stream_priorities);
  if (r->stream_devices) g_array_unref(r->stream_devices);
  if (r->flows) g_array_unref(r->flows);
  if (r->critical_nodes) g_array_unref(r->critical_nodes);
  g_free(r->mem_delta);
  for (guint i = 0; r->loops != NULL && i < r->loops->len; i++) {
    GArray *body = g_array_index(r->loops, DrLoopReport, i).body;
    if (body) g_array_unref(body);
  }
  if (r->loops) g_array_unref(r->loops);
  if (r->trip_spans) g_array_unref(r->trip_spans);
  if (r->trip_counts) g_array_unref(r->trip_counts);
  if (r->body_spans) g_array_unref(r->body_spans);
  if (r->summary) g_array_unref(r->summary);
  if (r->summary_names) g_string_chunk_free(r->summary_names);
  if (r->params) {
    for (guint i = 0; i < r->params->len; i++) g_free(g_array_index(r->params, DrReportParam, i).name);
    g_array_unref(r->params);
  }
  g_free(r);
}

void dr_report_set_params(DrReport *r, const DrGraph *g) {
  if (g->params->len == 0) return;
  if (r->params == NULL) r->params = g_array_new(FALSE, TRUE, sizeof(DrReportParam));
  for (guint i = 0; i < r->params->len; i++) g_free(g_array_index(r->params, DrReportParam, i).name);
  g_array_set_size(r->params, 0);
  for (guint k = 0; k < g->params->len; k++) {
    const DrRunParam *rp = &g_array_index(g->params, DrRunParam, k);
    DrReportParam p = {g_strdup(rp->name), rp->type == DR_RUN_PARAM_INT, rp->i, rp->f};
    g_array_append_val(r->params, p);
  }
}

gboolean dr_report_check_verified(const DrReport *r, GError **error) {
  if (r->verified != DR_VERIFIED_FAIL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_VERIFY,
              "verify: buffer '%s' differs from the serial run at element %" G_GUINT64_FORMAT
              ": serial %s, concurrent %s",
              r->diff_buffer, r->diff_index, r->diff_serial, r->diff_concurrent);
  return FALSE;
}
