/* params_api.c: the public library's run-time parameters
 * (dr_pipeline_set_param; the runner's calls are run.c's, on the same
 * helper): a value is checked whole before it is kept, so a set that
 * fails changes nothing. Evaluation and patching are lib/params.c's. */
#include "lib/api_internal.h"
#include "lib/params.h"

/* Sets every parameter's value from `from` (a copy of graph->params),
 * leaving what the graph holds (the applied values) alone. */
static void set_values(DrGraph *g, const GArray *from) {
  for (guint k = 0; k < g->params->len; k++) {
    DrRunParam *rp = &g_array_index(g->params, DrRunParam, k);
    rp->i = g_array_index(from, DrRunParam, k).i;
    rp->f = g_array_index(from, DrRunParam, k).f;
  }
}

/* Patches the graph back to the values it held before (the last run's,
 * in `before`'s applied fields), so that the next run sees every node
 * that differs from them. */
static void back_to_applied(DrGraph *g, const GArray *before) {
  for (guint k = 0; k < g->params->len; k++) {
    DrRunParam *rp = &g_array_index(g->params, DrRunParam, k);
    rp->i = g_array_index(before, DrRunParam, k).i_applied;
    rp->f = g_array_index(before, DrRunParam, k).f_applied;
  }
  (void)dr__params_apply(g, NULL, NULL); /* values it held: they evaluate */
}

gboolean dr__params_try(DrGraph *g, const char *name, const char *text, gboolean is_int, gint64 i, double f,
                        GError **error) {
  g_autoptr(GArray) saved = g_array_sized_new(FALSE, FALSE, sizeof(DrRunParam), g->params->len);
  g_array_append_vals(saved, g->params->data, g->params->len);
  if (!dr__params_set(g, name, text, is_int, i, f, error)) return FALSE;
  g_autoptr(GArray) now = g_array_sized_new(FALSE, FALSE, sizeof(DrRunParam), g->params->len);
  g_array_append_vals(now, g->params->data, g->params->len);
  /* Patch the graph to the new values to check them (slices, copies,
   * then the built-ins' rules), then put back what it held. */
  g_autoptr(GArray) changed = g_array_new(FALSE, FALSE, sizeof(DrId));
  if (!dr__params_apply(g, changed, error)) { /* changed nothing */
    set_values(g, saved);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  g_autofree void **bases = g_new0(void *, MAX(dr_graph_n_buffers(g), 1));
  for (guint k = 0; k < changed->len && local == NULL; k++) {
    DrId v = g_array_index(changed, DrId, k);
    const DrNode *n = dr_graph_node(g, v);
    if (n->op != DR_OP_KERNEL || dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER) continue;
    DrKernelCall probe;
    (void)dr__kernel_call_bind(g, v, bases, &probe, &local);
  }
  g_autoptr(GString) vals = g_string_new(NULL);
  dr__params_describe(g, vals);
  back_to_applied(g, saved);
  if (local != NULL) {
    set_values(g, saved);
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "with %s: %s", vals->str, local->message);
    return FALSE;
  }
  set_values(g, now);
  return TRUE;
}

gboolean dr_pipeline_set_param(DrPipeline *pipeline, const char *name, const char *value, GError **error) {
  g_return_val_if_fail(pipeline != NULL && name != NULL && value != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return dr__params_try(pipeline->graph, name, value, FALSE, 0, 0, error);
}

guint dr_pipeline_n_params(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, 0);
  return pipeline->graph->params->len;
}

const char *dr_pipeline_param_name(const DrPipeline *pipeline, guint i) {
  g_return_val_if_fail(pipeline != NULL, NULL);
  if (i >= pipeline->graph->params->len) return NULL;
  return g_array_index(pipeline->graph->params, DrRunParam, i).name;
}

char *dr_pipeline_param_value(const DrPipeline *pipeline, guint i) {
  g_return_val_if_fail(pipeline != NULL, NULL);
  if (i >= pipeline->graph->params->len) return NULL;
  const DrRunParam *rp = &g_array_index(pipeline->graph->params, DrRunParam, i);
  if (rp->type == DR_RUN_PARAM_INT) return g_strdup_printf("%" G_GINT64_FORMAT, rp->i);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup(g_ascii_dtostr(buf, sizeof buf, rp->f));
}
