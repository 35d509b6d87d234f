/* run.c: the public library's runs and runners: one-shot runs and DrRunner
 * sessions run many times. The settings are resolved in lib/settings.c. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"
#include "lib/params.h"
#include "lib/settings.h"

/* ---- running -------------------------------------------------------------- */

/* The run options of `settings` for `plan`, after the checks every run
 * makes first: the output files, then the queue count it asks for. */
static gboolean settings_to_options(const DrStreamPlan *plan, const DrRunSettings *settings, DrRunOptions *o,
                                    GError **error) {
  const DrGraph *g = plan->pipeline->graph;
  if (!dr__run_options_from_settings(g, settings, o, error) || !dr__outputs_check(g, o, error)) return FALSE;
  dr__queue_count_request(plan->wants_queues, o->backend);
  return TRUE;
}

/* The public report of `r` (taken), a run of `plan`. */
static DrRunReport *wrap_report(DrReport *r, const DrPlan *plan) {
  DrRunReport *rr = g_new0(DrRunReport, 1);
  rr->report = r;
  rr->plan = plan;
  /* DrNodeReport.id borrows the graph's string; the public report stands
   * alone, so it points at its own copies (the writers read ids only from
   * the node list). */
  rr->ids = g_string_chunk_new(1024);
  for (guint i = 0; i < r->nodes->len; i++) {
    DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    nr->id = g_string_chunk_insert_const(rr->ids, nr->id);
  }
  return rr;
}

DrRunReport *dr_stream_plan_run(const DrStreamPlan *plan, const DrRunSettings *settings, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  DrRunOptions o;
  if (!settings_to_options(plan, settings, &o, error)) return NULL;
  /* The parameters' current values (dr_pipeline_set_param). */
  if (!dr__params_apply(plan->pipeline->graph, NULL, error)) return NULL;
  DrReport *r = dr_run(plan->plan, &o, error);
  return r ? wrap_report(r, plan->plan) : NULL;
}

/* ---- runners ------------------------------------------------------------- */

struct DrRunner {
  const DrStreamPlan *plan; /* borrowed */
  DrSession *session;
  GArray *changed;      /* DrId: nodes whose scalars changed since the last run */
  gboolean *is_changed; /* [n_nodes]: in `changed` */
  const char *update;   /* static: how the last run applied them */
  const char *bound;    /* static: how the last bind since the last run was applied, or NULL */
  /* Run-time parameters: the nodes their last change reached (handed to
   * args_changed) and the time that took, for the report. */
  guint32 param_nodes, param_buffers;
  double param_update_us;
  /* The backend's detail of that change (dr_session_update_detail). */
  DrUpdateDetail detail;
};

DrRunner *dr_runner_new(const DrStreamPlan *plan, const DrRunSettings *settings, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  DrRunOptions o;
  if (!settings_to_options(plan, settings, &o, error)) return NULL;
  if (!dr__params_apply(plan->pipeline->graph, NULL, error)) return NULL;
  DrSession *session = dr_session_open(plan->plan, &o, error);
  if (session == NULL) return NULL;
  DrRunner *r = g_new0(DrRunner, 1);
  r->plan = plan;
  r->session = session;
  r->update = "none";
  r->changed = g_array_new(FALSE, FALSE, sizeof(DrId));
  r->is_changed = g_new0(gboolean, MAX(dr_graph_n_nodes(plan->pipeline->graph), 1));
  return r;
}

/* Applies what changed since the last run (binds, already applied, and
 * scalars) and notes how in runner->update. */
static gboolean apply_changes(DrRunner *runner, GError **error) {
  runner->update = runner->bound ? runner->bound : "none";
  runner->bound = NULL;
  runner->param_nodes = runner->param_buffers = 0;
  runner->param_update_us = NAN;
  memset(&runner->detail, 0, sizeof runner->detail);
  /* Parameters first: the nodes whose values they change join the
   * scalars changed by hand. */
  g_autoptr(GArray) by_params = g_array_new(FALSE, FALSE, sizeof(DrId));
  if (!dr__params_apply(runner->plan->pipeline->graph, by_params, error)) return FALSE;
  /* Parameter buffers (`param:`): one store for those whose value changed. */
  gint64 t0 = g_get_monotonic_time();
  guint32 written = 0;
  if (!dr_session_write_params(runner->session, &written, error)) return FALSE;
  runner->param_buffers = written;
  if (written > 0) runner->param_update_us = (double)(g_get_monotonic_time() - t0);
  for (guint i = 0; i < by_params->len; i++) {
    DrId v = g_array_index(by_params, DrId, i);
    if (runner->is_changed[v]) continue;
    runner->is_changed[v] = TRUE;
    g_array_append_val(runner->changed, v);
  }
  if (runner->changed->len == 0) return TRUE;
  if (!dr_session_args_changed(runner->session, (const DrId *)(void *)runner->changed->data,
                               runner->changed->len, &runner->update, error))
    return FALSE;
  dr_session_update_detail(runner->session, &runner->detail);
  if (by_params->len > 0) {
    runner->param_nodes = runner->changed->len;
    runner->param_update_us = (double)(g_get_monotonic_time() - t0);
  }
  for (guint i = 0; i < runner->changed->len; i++)
    runner->is_changed[g_array_index(runner->changed, DrId, i)] = FALSE;
  g_array_set_size(runner->changed, 0);
  return TRUE;
}

DrRunReport *dr_runner_run(DrRunner *runner, GError **error) {
  g_return_val_if_fail(runner != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (!apply_changes(runner, error)) return NULL;
  DrReport *r = dr_session_run(runner->session, error);
  if (r == NULL) return NULL;
  r->param_update = runner->update;
  r->param_nodes = runner->param_nodes;
  r->param_buffers = runner->param_buffers;
  r->param_update_us = runner->param_update_us;
  r->graph_cache = runner->detail.cache;
  r->graph_cache_variants = runner->detail.variants;
  r->param_device_reads = runner->param_nodes > 0 ? runner->detail.device_reads : 0;
  DrRunReport *rr = wrap_report(r, runner->plan->plan);
  if (runner->detail.forced_by)
    r->param_forced_by = g_string_chunk_insert_const(rr->ids, runner->detail.forced_by);
  return rr;
}

gboolean dr_runner_set_param(DrRunner *runner, const char *name, gint64 value, GError **error) {
  g_return_val_if_fail(runner != NULL && name != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return dr__params_try(runner->plan->pipeline->graph, name, NULL, TRUE, value, 0, error);
}

gboolean dr_runner_set_param_f64(DrRunner *runner, const char *name, double value, GError **error) {
  g_return_val_if_fail(runner != NULL && name != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return dr__params_try(runner->plan->pipeline->graph, name, NULL, FALSE, 0, value, error);
}

/* Kernel node `node`'s declaration and the index of its scalar parameter
 * `param` that the node was given; NULL with DR_ERROR_INVALID otherwise. */
static const DrKernelDecl *find_scalar(const DrGraph *g, const char *node, const char *param, DrId *v,
                                       guint32 *p, GError **error) {
  *v = dr_graph_find_node(g, node);
  if (*v == DR_NONE) {
    DrSuggest sg;
    dr__suggest_init(&sg, node);
    for (DrId k = 0; k < dr_graph_n_nodes(g); k++) dr__suggest_add(&sg, dr_graph_node(g, k)->id);
    g_autofree char *hint = dr__suggest_hint(&sg);
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "unknown node '%s'%s", node, hint);
    return NULL;
  }
  const DrNode *n = dr_graph_node(g, *v);
  if (n->op != DR_OP_KERNEL) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s' is a %s node: only kernel arguments can change",
                node, dr_op_name(n->op));
    return NULL;
  }
  const DrKernelDecl *decl = dr_graph_kernel(g, n->kernel);
  *p = 0;
  while (*p < decl->n_params && strcmp(decl->params[*p].name, param) != 0) (*p)++;
  if (*p == decl->n_params) {
    DrSuggest sg;
    dr__suggest_init(&sg, param);
    for (guint32 k = 0; k < decl->n_params; k++) dr__suggest_add(&sg, decl->params[k].name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s': kernel '%s' has no parameter '%s'%s", node,
                decl->name, param, hint);
    return NULL;
  }
  if (decl->params[*p].is_pointer) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                "node '%s': parameter '%s' is a buffer; only scalar arguments can change between runs", node,
                param);
    return NULL;
  }
  return decl;
}

/* Stores the new value (is_int: i, else f) into `arg` of type `pd`; FALSE
 * with DR_ERROR_INVALID, changing nothing, when it does not fit. */
static gboolean store_scalar(DrArg *arg, const DrParam *pd, const char *node, gboolean is_int, gint64 i,
                             double f, GError **error) {
  if (pd->type == DR_ELEM_I32 || pd->type == DR_ELEM_I64) {
    gint64 lo = pd->type == DR_ELEM_I32 ? G_MININT32 : G_MININT64;
    gint64 hi = pd->type == DR_ELEM_I32 ? G_MAXINT32 : G_MAXINT64;
    if (!is_int || i < lo || i > hi) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                  "node '%s': parameter '%s' (%s) needs an integer in %" G_GINT64_FORMAT
                  "..%" G_GINT64_FORMAT,
                  node, pd->name, dr_elem_name(pd->type), lo, hi);
      return FALSE;
    }
    arg->v.i = i;
    return TRUE;
  }
  double x = is_int ? (double)i : f;
  if (!isfinite(x)) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s': parameter '%s': not a finite number", node,
                pd->name);
    return FALSE;
  }
  arg->v.f = x;
  return TRUE;
}

/* Sets scalar `param` of kernel node `node` (is_int: to i, else to f). */
static gboolean runner_set(DrRunner *runner, const char *node, const char *param, gboolean is_int, gint64 i,
                           double f, GError **error) {
  g_return_val_if_fail(runner != NULL && node != NULL && param != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  DrGraph *g = runner->plan->pipeline->graph;
  DrId v;
  guint32 p;
  const DrKernelDecl *decl = find_scalar(g, node, param, &v, &p, error);
  if (decl == NULL) return FALSE;
  const DrNode *n = dr_graph_node(g, v);
  DrArg *arg = NULL;
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++)
    if (dr_graph_arg(g, a)->param == p) arg = dr_graph_arg(g, a);
  if (arg == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                "node '%s': parameter '%s' was left out when the node was built (its default applies); only "
                "arguments the node was given can change",
                node, param);
    return FALSE;
  }
  DrArg before = *arg;
  if (!store_scalar(arg, &decl->params[p], node, is_int, i, f, error)) return FALSE;
  /* The kernel's own check, on the new value (built-ins and registered
   * kernels; user kernels have none). */
  if (decl->origin != DR_KERNEL_USER) {
    g_autofree void **bases = g_new0(void *, MAX(dr_graph_n_buffers(g), 1));
    DrKernelCall probe;
    g_autoptr(GError) local = NULL;
    if (!dr__kernel_call_bind(g, v, bases, &probe, &local)) {
      *arg = before;
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "%s", local->message);
      return FALSE;
    }
  }
  if (!runner->is_changed[v]) {
    runner->is_changed[v] = TRUE;
    g_array_append_val(runner->changed, v);
  }
  return TRUE;
}

gboolean dr_runner_set_int(DrRunner *runner, const char *node, const char *param, gint64 value,
                           GError **error) {
  return runner_set(runner, node, param, TRUE, value, 0, error);
}

gboolean dr_runner_set_float(DrRunner *runner, const char *node, const char *param, double value,
                             GError **error) {
  return runner_set(runner, node, param, FALSE, 0, value, error);
}

const char *dr_runner_last_update(const DrRunner *runner) {
  g_return_val_if_fail(runner != NULL, NULL);
  return runner->update;
}

const char *dr_runner_backend(const DrRunner *runner) {
  g_return_val_if_fail(runner != NULL, NULL);
  return dr_session_backend(runner->session);
}

gboolean dr_runner_read_buffer(DrRunner *runner, const char *buffer, void *dst, gsize size, GError **error) {
  g_return_val_if_fail(runner != NULL && buffer != NULL && dst != NULL, FALSE);
  const DrGraph *g = runner->plan->pipeline->graph;
  DrId b = dr_graph_find_buffer(g, buffer);
  if (b == DR_NONE) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "unknown buffer '%s'", buffer);
    return FALSE;
  }
  gsize bytes = dr_buffer_bytes(dr_graph_buffer(g, b));
  if (size != bytes) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                "buffer '%s' holds %" G_GSIZE_FORMAT " bytes, not %" G_GSIZE_FORMAT, buffer, bytes, size);
    return FALSE;
  }
  return dr_session_read_buffer(runner->session, b, dst, error);
}

/* Buffer `buffer` of the runner's graph; NULL with DR_ERROR_INVALID
 * (with a suggestion) when there is none. */
static const DrBuffer *runner_buffer(const DrRunner *runner, const char *buffer, DrId *id, GError **error) {
  const DrGraph *g = runner->plan->pipeline->graph;
  *id = dr_graph_find_buffer(g, buffer);
  if (*id != DR_NONE) return dr_graph_buffer(g, *id);
  DrSuggest sg;
  dr__suggest_init(&sg, buffer);
  for (DrId k = 0; k < dr_graph_n_buffers(g); k++) dr__suggest_add(&sg, dr_graph_buffer(g, k)->name);
  g_autofree char *hint = dr__suggest_hint(&sg);
  g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "unknown buffer '%s'%s", buffer, hint);
  return NULL;
}

gboolean dr_runner_bind_buffer(DrRunner *runner, const char *buffer, void *ptr, gsize bytes, GError **error) {
  g_return_val_if_fail(runner != NULL && buffer != NULL && ptr != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  DrId b;
  if (runner_buffer(runner, buffer, &b, error) == NULL) return FALSE;
  const char *how = NULL;
  if (!dr_session_bind_buffer(runner->session, b, ptr, bytes, &how, error)) return FALSE;
  /* The heavier of two binds since the last run is the one to tell. */
  if (runner->bound == NULL || strcmp(runner->bound, "updated-nodes") == 0 ||
      strcmp(runner->bound, "rebound") == 0)
    runner->bound = how;
  return TRUE;
}

gboolean dr_runner_write_buffer(DrRunner *runner, const char *buffer, gsize offset, const void *data,
                                gsize bytes, GError **error) {
  g_return_val_if_fail(runner != NULL && buffer != NULL && (data != NULL || bytes == 0), FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  DrId b;
  if (runner_buffer(runner, buffer, &b, error) == NULL) return FALSE;
  return dr_session_write_buffer(runner->session, b, offset, data, bytes, error);
}

gboolean dr_runner_run_on_stream(DrRunner *runner, void *stream, GError **error) {
  g_return_val_if_fail(runner != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  /* What changed applies first, as for a run. */
  if (!apply_changes(runner, error)) return FALSE;
  return dr_session_run_on_stream(runner->session, stream, error);
}

void dr_runner_free(DrRunner *runner) {
  if (runner == NULL) return;
  dr_session_close(runner->session);
  g_array_unref(runner->changed);
  g_free(runner->is_changed);
  g_free(runner);
}
