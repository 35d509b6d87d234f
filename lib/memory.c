/* memory.c: the public library's memory budget (include/dagrun/dagrun.h):
 * a memory limit set on a pipeline, before or after it was validated, and
 * the memory/concurrency curve. The pass and the curve themselves are
 * scheduler/budget.c's. */
#include "lib/api_internal.h"
#include "report/num.h"
#include "scheduler/budget.h"

gboolean dr_pipeline_set_memory_limit(DrPipeline *pipeline, guint64 bytes, GError **error) {
  CHECK_ARGS(pipeline, error);
  DrRunConfig *r = &pipeline->graph->run;
  if (!pipeline->frozen && pipeline->failed == NULL) {
    /* Validation runs the pass. */
    r->memory_limit = bytes;
    r->memory_limit_set = TRUE;
    r->memory_limit_loc = DR_LOC_NONE;
    return TRUE;
  }
  if (pipeline->failed != NULL || pipeline->refs > 1) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                "pipeline '%s': cannot set a memory limit: the pipeline is %s", pipeline->graph->name,
                pipeline->failed ? "invalid" : "planned");
    return FALSE;
  }
  /* Validated (loaded from YAML) and not planned: the pass runs now, on
   * top of any limit the file set. */
  r->memory_limit = bytes;
  r->memory_limit_set = TRUE;
  r->memory_limit_loc = DR_LOC_NONE;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  if (!dr__budget_run(pipeline->graph, diags)) return dr_diags_to_error(diags, error);
  DR_GRAPH_CHECK(pipeline->graph);
  return TRUE;
}

gboolean dr_pipeline_write_memory_curve(DrPipeline *pipeline, guint n_points, GString *out, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(out != NULL && n_points > 0, FALSE);
  if (!dr_pipeline_validate(pipeline, error)) return FALSE;
  g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(DrMemoryCurvePoint));
  dr__budget_curve(pipeline->graph, n_points, points);
  g_string_append(out, "memory curve (limit: width, estimated critical path, ordering edges added):\n");
  for (guint i = 0; i < points->len; i++) {
    const DrMemoryCurvePoint *p = &g_array_index(points, DrMemoryCurvePoint, i);
    g_string_append(out, "  ");
    dr__num_size_iec(out, p->limit);
    dr__num_appendf(out, ": width %u, critical path %.1f us, %u edge%s%s\n", p->width, p->path_us,
                    p->edges_added, p->edges_added == 1 ? "" : "s",
                    i == 0 && points->len > 1 ? " (the serial peak)"
                    : i + 1 == points->len    ? " (the unconstrained bound)"
                                              : "");
  }
  return TRUE;
}
