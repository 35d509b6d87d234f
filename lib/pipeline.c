/* pipeline.c: the public library's pipelines: creating, loading and writing
 * them, their run settings and their buffers (include/dagrun/dagrun.h).
 * Nodes are added in lib/nodes.c; this file makes no scheduling decision. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"

/* ---- version ------------------------------------------------------------ */

const char *dr_version(void) { return DAGRUN_VERSION_STRING; }

const char *dagrun_version(void) { return DAGRUN_VERSION_STRING; }

/* ---- pipelines ---------------------------------------------------------- */

DrPipeline *dr__pipeline_wrap(DrGraph *graph, gboolean frozen) {
  DrPipeline *p = g_new0(DrPipeline, 1);
  p->refs = 1;
  p->graph = graph;
  p->frozen = frozen;
  return p;
}

DrPipeline *dr_pipeline_new(const char *name) {
  DrGraph *g = dr_graph_new();
  dr__graph_register_builtins(g);
  g->name = dr_graph_intern(g, name ? name : "pipeline");
  g->file = dr_graph_intern(g, "<api>");
  return dr__pipeline_wrap(g, FALSE);
}

void dr__pipeline_unref(DrPipeline *p) {
  if (p == NULL || --p->refs > 0) return;
  dr_graph_free(p->graph);
  g_clear_error(&p->failed);
  g_free(p->scope);
  dr__pipeline_unref(p->parent);
  g_free(p);
}

void dr_pipeline_free(DrPipeline *pipeline) { dr__pipeline_unref(pipeline); }

DrPipeline *dr_pipeline_load_file(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  dr__device_vars_install();
  DrGraph *g = dr_load_file(path, diags, error);
  return g ? dr__pipeline_wrap(g, TRUE) : NULL;
}

DrPipeline *dr_pipeline_load_string(const char *name, const char *yaml, gssize len, GError **error) {
  g_return_val_if_fail(name != NULL && yaml != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  dr__device_vars_install();
  DrGraph *g = dr_load_string(name, yaml, len < 0 ? strlen(yaml) : (gsize)len, diags, error);
  return g ? dr__pipeline_wrap(g, TRUE) : NULL;
}

gboolean dr_pipeline_write_yaml(const DrPipeline *pipeline, GString *out, GError **error) {
  g_return_val_if_fail(pipeline != NULL && out != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return dr_graph_write_yaml(pipeline->graph, out, error);
}

const char *dr_pipeline_name(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, NULL);
  return pipeline->graph->name;
}

gboolean dr_pipeline_is_frozen(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, FALSE);
  return pipeline->frozen;
}

guint dr_pipeline_n_nodes(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, 0);
  return dr_graph_n_nodes(pipeline->graph);
}

guint dr_pipeline_n_buffers(const DrPipeline *pipeline) {
  g_return_val_if_fail(pipeline != NULL, 0);
  return dr_graph_n_buffers(pipeline->graph);
}

void dr_pipeline_set_loc(DrPipeline *pipeline, const char *file, guint line, guint col) {
  g_return_if_fail(pipeline != NULL);
  pipeline->loc_file = dr_graph_intern(pipeline->graph, file);
  pipeline->loc_line = line;
  pipeline->loc_col = col;
}

/* The location of the next node (or buffer, `buffers` TRUE). */
DrLoc dr__pipeline_next_loc(const DrPipeline *p, gboolean buffers) {
  if (p->loc_file != NULL) return (DrLoc){p->loc_file, p->loc_line, p->loc_col};
  if (buffers) return (DrLoc){"<api:buffers>", dr_graph_n_buffers(p->graph) + 1, 1};
  return (DrLoc){"<api>", dr_graph_n_nodes(p->graph) + 1, 1};
}

/* FALSE with DR_ERROR_USAGE when the pipeline may not change any more. */
gboolean dr__pipeline_check_open(const DrPipeline *p, const char *what, GError **error) {
  if (!p->frozen && p->failed == NULL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
              "pipeline '%s': cannot %s: the pipeline is %s (validated or planned, or loaded from YAML)",
              p->graph->name, what, p->failed ? "invalid" : "frozen");
  return FALSE;
}

gboolean dr_pipeline_set_run(DrPipeline *pipeline, DrMode mode, guint iterations, guint warmup,
                             GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail((guint)mode < DR_N_MODES, FALSE);
  g_return_val_if_fail(iterations >= 1, FALSE);
  if (!dr__pipeline_check_open(pipeline, "change run settings", error)) return FALSE;
  DrRunConfig *r = &pipeline->graph->run;
  r->mode = mode;
  r->iterations = iterations;
  r->warmup = warmup;
  return TRUE;
}

gboolean dr_pipeline_set_max_streams(DrPipeline *pipeline, guint max_streams, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(max_streams <= 4096, FALSE);
  if (!dr__pipeline_check_open(pipeline, "change run settings", error)) return FALSE;
  DrRunConfig *r = &pipeline->graph->run;
  r->max_streams_set = max_streams > 0;
  r->max_streams = max_streams > 0 ? max_streams : 8;
  return TRUE;
}

gboolean dr_pipeline_set_graph_fallback(DrPipeline *pipeline, gboolean fallback, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (!dr__pipeline_check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.fallback_streams = fallback != FALSE;
  return TRUE;
}

gboolean dr_pipeline_set_device(DrPipeline *pipeline, gint device, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(device >= 0, FALSE);
  if (!dr__pipeline_check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.device = device;
  return TRUE;
}

gboolean dr_pipeline_set_release_threshold(DrPipeline *pipeline, guint64 bytes, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (!dr__pipeline_check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.release_threshold = bytes;
  pipeline->graph->run.release_threshold_set = TRUE;
  return TRUE;
}

/* ---- buffers ------------------------------------------------------------ */

gboolean dr_pipeline_add_buffer(DrPipeline *pipeline, const char *name, DrElemType type, guint64 count,
                                DrWhere where, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(name != NULL, FALSE);
  g_return_val_if_fail((guint)type < DR_ELEM_N_TYPES, FALSE);
  g_return_val_if_fail((guint)where < DR_N_WHERES, FALSE);
  if (!dr__pipeline_check_open(pipeline, "add a buffer", error)) return FALSE;
  DrLoc loc = dr__pipeline_next_loc(pipeline, TRUE);
  DrBuffer b = {.name = name, .loc = loc, .type = type, .count = count, .where = where, .init = DR_INIT_NONE};
  DrApiBuild x;
  dr__api_build_begin(&x, pipeline);
  if (dr_build_name_ok(&x.b, DR_NAME_BUFFER, name, NULL, loc) &&
      dr_build_buffer_count_ok(&x.b, name, type, count, "count", loc))
    dr_build_add_buffer(&x.b, &b);
  return dr__api_build_end(&x, error);
}

/* The buffer `name`, or NULL with DR_ERROR_INVALID. */
DrBuffer *dr__pipeline_find_buffer(DrPipeline *p, const char *name, const char *what, GError **error) {
  if (!dr__pipeline_check_open(p, what, error)) return NULL;
  DrId b = dr_graph_find_buffer(p->graph, name);
  if (b != DR_NONE) return dr_graph_buffer(p->graph, b);
  g_autofree char *hint = dr_build_buffer_hint(p->graph, name);
  DrLoc loc = p->loc_file ? dr__pipeline_next_loc(p, TRUE) : (DrLoc){"<api:buffers>", 0, 0};
  dr_set_error_at(error, DR_ERROR_INVALID, loc, "unknown buffer '%s'%s", name, hint);
  return NULL;
}

static gboolean set_init(DrPipeline *p, const char *buffer, DrInitKind kind, guint64 seed, const char *path,
                         GError **error) {
  DrBuffer *b = dr__pipeline_find_buffer(p, buffer, "set a buffer's init", error);
  if (b == NULL) return FALSE;
  b->init = kind;
  b->init_seed = seed;
  b->init_path = kind == DR_INIT_FILE ? dr_graph_intern(p->graph, path) : NULL;
  return TRUE;
}

gboolean dr_pipeline_buffer_init_zeros(DrPipeline *pipeline, const char *buffer, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL, FALSE);
  return set_init(pipeline, buffer, DR_INIT_ZEROS, 0, NULL, error);
}

gboolean dr_pipeline_buffer_init_iota(DrPipeline *pipeline, const char *buffer, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL, FALSE);
  return set_init(pipeline, buffer, DR_INIT_IOTA, 0, NULL, error);
}

gboolean dr_pipeline_buffer_init_random(DrPipeline *pipeline, const char *buffer, guint64 seed,
                                        GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL, FALSE);
  return set_init(pipeline, buffer, DR_INIT_RANDOM, seed, NULL, error);
}

gboolean dr_pipeline_buffer_init_file(DrPipeline *pipeline, const char *buffer, const char *path,
                                      GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL && path != NULL, FALSE);
  return set_init(pipeline, buffer, DR_INIT_FILE, 0, path, error);
}

gboolean dr_pipeline_buffer_verify_tolerance(DrPipeline *pipeline, const char *buffer, double rtol,
                                             double atol, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL, FALSE);
  DrBuffer *b = dr__pipeline_find_buffer(pipeline, buffer, "set a buffer's verify rule", error);
  if (b == NULL) return FALSE;
  DrApiBuild x;
  dr__api_build_begin(&x, pipeline);
  if (dr_build_buffer_tolerance_ok(&x.b, buffer, "rtol", rtol, b->loc) &&
      dr_build_buffer_tolerance_ok(&x.b, buffer, "atol", atol, b->loc)) {
    b->verify = DR_VERIFY_TOLERANCE;
    b->verify_rtol = rtol;
    b->verify_atol = atol;
  }
  return dr__api_build_end(&x, error);
}

gboolean dr_pipeline_buffer_verify_skip(DrPipeline *pipeline, const char *buffer, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL, FALSE);
  DrBuffer *b = dr__pipeline_find_buffer(pipeline, buffer, "set a buffer's verify rule", error);
  if (b == NULL) return FALSE;
  b->verify = DR_VERIFY_SKIP;
  return TRUE;
}

gboolean dr_pipeline_buffer_save(DrPipeline *pipeline, const char *buffer, const char *path, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL && path != NULL, FALSE);
  DrBuffer *b = dr__pipeline_find_buffer(pipeline, buffer, "set a buffer's save path", error);
  if (b == NULL) return FALSE;
  b->save_path = dr_graph_intern(pipeline->graph, path);
  return TRUE;
}

/* ---- kernels ------------------------------------------------------------ */
