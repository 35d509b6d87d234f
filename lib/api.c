/* api.c: the public C library (include/dagrun/dagrun.h) over the IR, the
 * passes, the planner and the backends.
 *
 * A DrPipeline wraps a DrGraph with the state the public contract needs:
 * a reference count (plans keep their pipeline alive), whether it is frozen
 * (validated: the passes ran and added the dependency edges, so nothing may
 * be added any more), a remembered validation failure, and the location
 * given by dr_pipeline_set_loc. Adding a node checks everything the YAML
 * parser checks for one node (parser/nodes.c), with the same messages, and
 * adds nothing when a check fails; validation then runs the same passes as
 * `dagrun --check` (scheduler/passes.h). This file is glue: it makes no
 * scheduling decision and runs nothing itself. */
#include <math.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/run.h"
#include "ir/diag.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "kernels/registry.h"
#include "lib/load.h"
#include "lib/yaml_writer.h"
#include "parser/suggest.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"
/* After the internal headers: its copies of their types are then skipped. */
#include "include/dagrun/dagrun.h"

#define MAX_PARAMS 32

struct DrPipeline {
  int refs;
  DrGraph *graph;
  gboolean frozen;
  GError *failed;       /* validation's error, kept: a failed pipeline stays failed */
  const char *loc_file; /* interned in the graph; NULL: synthetic locations */
  guint loc_line, loc_col;
};

struct DrStreamPlan {
  DrPipeline *pipeline; /* a reference */
  DrPlan *plan;
};

struct DrRunReport {
  DrReport *report;
  GStringChunk *ids;  /* the nodes' ids, copied: the report outlives the graph */
  const DrPlan *plan; /* the plan run, for identity checks only (may be gone) */
};

/* ---- version ------------------------------------------------------------ */

const char *dr_version(void) { return DAGRUN_VERSION_STRING; }

const char *dagrun_version(void) { return DAGRUN_VERSION_STRING; }

/* ---- pipelines ---------------------------------------------------------- */

static DrPipeline *pipeline_wrap(DrGraph *graph, gboolean frozen) {
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
  return pipeline_wrap(g, FALSE);
}

static void pipeline_unref(DrPipeline *p) {
  if (p == NULL || --p->refs > 0) return;
  dr_graph_free(p->graph);
  g_clear_error(&p->failed);
  g_free(p);
}

void dr_pipeline_free(DrPipeline *pipeline) { pipeline_unref(pipeline); }

DrPipeline *dr_pipeline_load_file(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  DrGraph *g = dr_load_file(path, diags, error);
  return g ? pipeline_wrap(g, TRUE) : NULL;
}

DrPipeline *dr_pipeline_load_string(const char *name, const char *yaml, gssize len, GError **error) {
  g_return_val_if_fail(name != NULL && yaml != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  DrGraph *g = dr_load_string(name, yaml, len < 0 ? strlen(yaml) : (gsize)len, diags, error);
  return g ? pipeline_wrap(g, TRUE) : NULL;
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
static DrLoc next_loc(const DrPipeline *p, gboolean buffers) {
  if (p->loc_file != NULL) return (DrLoc){p->loc_file, p->loc_line, p->loc_col};
  if (buffers) return (DrLoc){"<api:buffers>", dr_graph_n_buffers(p->graph) + 1, 1};
  return (DrLoc){"<api>", dr_graph_n_nodes(p->graph) + 1, 1};
}

/* FALSE with DR_ERROR_USAGE when the pipeline may not change any more. */
static gboolean check_open(const DrPipeline *p, const char *what, GError **error) {
  if (!p->frozen && p->failed == NULL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
              "pipeline '%s': cannot %s: the pipeline is %s (validated or planned, or loaded from YAML)",
              p->graph->name, what, p->failed ? "invalid" : "frozen");
  return FALSE;
}

#define CHECK_ARGS(p, error)                \
  g_return_val_if_fail((p) != NULL, FALSE); \
  g_return_val_if_fail((error) == NULL || *(error) == NULL, FALSE)

gboolean dr_pipeline_set_run(DrPipeline *pipeline, DrMode mode, guint iterations, guint warmup,
                             GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(mode == DR_MODE_STREAMS || mode == DR_MODE_GRAPH, FALSE);
  g_return_val_if_fail(iterations >= 1, FALSE);
  if (!check_open(pipeline, "change run settings", error)) return FALSE;
  DrRunConfig *r = &pipeline->graph->run;
  r->mode = mode;
  r->iterations = iterations;
  r->warmup = warmup;
  return TRUE;
}

gboolean dr_pipeline_set_max_streams(DrPipeline *pipeline, guint max_streams, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(max_streams <= 4096, FALSE);
  if (!check_open(pipeline, "change run settings", error)) return FALSE;
  DrRunConfig *r = &pipeline->graph->run;
  r->max_streams_set = max_streams > 0;
  r->max_streams = max_streams > 0 ? max_streams : 8;
  return TRUE;
}

gboolean dr_pipeline_set_graph_fallback(DrPipeline *pipeline, gboolean fallback, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (!check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.fallback_streams = fallback != FALSE;
  return TRUE;
}

gboolean dr_pipeline_set_device(DrPipeline *pipeline, gint device, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(device >= 0, FALSE);
  if (!check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.device = device;
  return TRUE;
}

gboolean dr_pipeline_set_release_threshold(DrPipeline *pipeline, guint64 bytes, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (!check_open(pipeline, "change run settings", error)) return FALSE;
  pipeline->graph->run.release_threshold = bytes;
  pipeline->graph->run.release_threshold_set = TRUE;
  return TRUE;
}

/* ---- buffers ------------------------------------------------------------ */

static gboolean valid_name(const char *s) {
  if (s[0] == '\0') return FALSE;
  for (const char *c = s; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '_' && *c != '-' && *c != '.') return FALSE;
  return TRUE;
}

static char *buffer_hint(const DrGraph *g, const char *name) {
  DrSuggest s;
  dr__suggest_init(&s, name);
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) dr__suggest_add(&s, dr_graph_buffer(g, i)->name);
  return dr__suggest_hint(&s);
}

gboolean dr_pipeline_add_buffer(DrPipeline *pipeline, const char *name, DrElemType type, guint64 count,
                                DrWhere where, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(name != NULL, FALSE);
  g_return_val_if_fail((guint)type < DR_ELEM_N_TYPES, FALSE);
  g_return_val_if_fail(where == DR_WHERE_DEVICE || where == DR_WHERE_HOST, FALSE);
  if (!check_open(pipeline, "add a buffer", error)) return FALSE;
  DrGraph *g = pipeline->graph;
  DrLoc loc = next_loc(pipeline, TRUE);
  if (!valid_name(name))
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "buffer '%s': a buffer name uses letters, digits, '_', '-' and '.'", name);
  if (count == 0 || count > G_MAXUINT64 / 8)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "buffer '%s', key 'count': must be between 1 and 2^61", name);
  if (dr_graph_find_buffer(g, name) != DR_NONE)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "duplicate buffer '%s'", name);
  DrBuffer b = {.name = name, .loc = loc, .type = type, .count = count, .where = where, .init = DR_INIT_NONE};
  return dr_graph_add_buffer(g, &b) != DR_NONE;
}

/* The buffer `name`, or NULL with DR_ERROR_INVALID. */
static DrBuffer *find_buffer(DrPipeline *p, const char *name, const char *what, GError **error) {
  if (!check_open(p, what, error)) return NULL;
  DrId b = dr_graph_find_buffer(p->graph, name);
  if (b != DR_NONE) return dr_graph_buffer(p->graph, b);
  g_autofree char *hint = buffer_hint(p->graph, name);
  DrLoc loc = p->loc_file ? next_loc(p, TRUE) : (DrLoc){"<api:buffers>", 0, 0};
  dr_set_error_at(error, DR_ERROR_INVALID, loc, "unknown buffer '%s'%s", name, hint);
  return NULL;
}

static gboolean set_init(DrPipeline *p, const char *buffer, DrInitKind kind, guint64 seed, const char *path,
                         GError **error) {
  DrBuffer *b = find_buffer(p, buffer, "set a buffer's init", error);
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

gboolean dr_pipeline_buffer_save(DrPipeline *pipeline, const char *buffer, const char *path, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(buffer != NULL && path != NULL, FALSE);
  DrBuffer *b = find_buffer(pipeline, buffer, "set a buffer's save path", error);
  if (b == NULL) return FALSE;
  b->save_path = dr_graph_intern(pipeline->graph, path);
  return TRUE;
}

/* ---- kernels ------------------------------------------------------------ */

gboolean dr_pipeline_register_kernel(DrPipeline *pipeline, const DrKernelDef *def, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(def != NULL && def->name != NULL, FALSE);
  g_return_val_if_fail(def->n_params >= 0 && (def->n_params == 0 || def->params != NULL), FALSE);
  if (!check_open(pipeline, "register a kernel", error)) return FALSE;
  DrGraph *g = pipeline->graph;
  DrLoc loc =
      pipeline->loc_file ? next_loc(pipeline, FALSE) : (DrLoc){"<api:kernels>", g->kernels->len + 1, 1};
  if (!valid_name(def->name))
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "kernel '%s': a kernel name uses letters, digits, '_', '-' and '.'", def->name);
  if (dr_graph_find_kernel(g, def->name) != DR_NONE)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': the name is taken", def->name);
  if (def->launch == NULL && def->host == NULL)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': neither launch nor host is set",
                           def->name);
  if (def->n_params > MAX_PARAMS)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': more than %d parameters", def->name,
                           MAX_PARAMS);
  if (def->grid_over >= def->n_params || def->grid_over < -1)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': grid_over %d names no parameter",
                           def->name, def->grid_over);
  DrParam params[MAX_PARAMS];
  for (int i = 0; i < def->n_params; i++) {
    const DrKParam *kp = &def->params[i];
    if (kp->name == NULL || !valid_name(kp->name))
      return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': parameter %d has no valid name",
                             def->name, i);
    for (int j = 0; j < i; j++)
      if (strcmp(def->params[j].name, kp->name) == 0)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "kernel '%s': parameter '%s' declared twice",
                               def->name, kp->name);
    if ((guint)kp->type >= DR_ELEM_N_TYPES || (guint)kp->access >= DR_ACCESS_N_MODES)
      return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                             "kernel '%s': parameter '%s' has a bad type or access", def->name, kp->name);
    gboolean scalar_ok = kp->type == DR_ELEM_I32 || kp->type == DR_ELEM_I64 || kp->type == DR_ELEM_F32 ||
                         kp->type == DR_ELEM_F64;
    if (!kp->is_pointer && !scalar_ok)
      return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                             "kernel '%s': scalar parameter '%s' must be i32, i64, f32 or f64", def->name,
                             kp->name);
    params[i] = (DrParam){.name = kp->name,
                          .type = kp->type,
                          .is_pointer = kp->is_pointer != 0,
                          .access = kp->access,
                          .optional = !kp->is_pointer && kp->optional,
                          .def = kp->def};
  }
  DrKernelDecl decl = {.name = def->name,
                       .loc = loc,
                       .origin = DR_KERNEL_BUILTIN,
                       .builtin_index = DR_NONE,
                       .params = params,
                       .n_params = (guint32)def->n_params,
                       .grid = {.over = def->grid_over < 0 ? DR_NONE : (DrId)def->grid_over,
                                .block = def->block ? def->block : 256},
                       .entry = def->name,
                       .api_def = def};
  return dr_graph_add_kernel(g, &decl) != DR_NONE;
}

/* The registry definition behind a kernel declaration, or NULL (YAML user
 * kernels compiled by NVRTC). */
static const DrKernelDef *decl_def(const DrKernelDecl *decl) {
  if (decl->api_def) return decl->api_def;
  if (decl->origin == DR_KERNEL_BUILTIN && decl->builtin_index < (guint32)dr_kernel_registry_len)
    return &dr_kernel_registry[decl->builtin_index];
  return NULL;
}

/* ---- nodes -------------------------------------------------------------- */

/* What a node is being made of before anything is added to the graph. */
typedef struct {
  DrPipeline *p;
  DrNode node;
  const char *what; /* "node 'ID'" */
  DrAccess accesses[MAX_PARAMS + 2];
  guint n_accesses;
  DrArg args[MAX_PARAMS];
  gint arg_access[MAX_PARAMS]; /* index into accesses, or -1 */
  guint n_args;
} Draft;

static gboolean draft_begin(Draft *d, DrPipeline *p, const char *id, DrOp op, GError **error) {
  memset(d, 0, sizeof *d);
  d->p = p;
  if (!check_open(p, "add a node", error)) return FALSE;
  DrLoc loc = next_loc(p, FALSE);
  d->node = (DrNode){.op = op,
                     .priority = DR_PRIORITY_NORMAL,
                     .loc = loc,
                     .device = -1,
                     .kernel = DR_NONE,
                     .buffer = DR_NONE};
  if (!valid_name(id))
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "node '%s': a node id uses letters, digits, '_', '-' and '.'", id);
  if (dr_graph_find_node(p->graph, id) != DR_NONE)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "duplicate node id '%s'", id);
  d->node.id = id;
  d->what = id;
  return TRUE;
}

/* Adds the drafted node, its accesses and its arguments. */
static gboolean draft_commit(Draft *d) {
  DrGraph *g = d->p->graph;
  DrId id = dr_graph_add_node(g, &d->node);
  g_return_val_if_fail(id != DR_NONE, FALSE);
  guint32 base = g->accesses->len;
  for (guint i = 0; i < d->n_accesses; i++) dr_graph_add_access(g, &d->accesses[i]);
  for (guint i = 0; i < d->n_args; i++) {
    DrArg a = d->args[i];
    if (a.kind == DR_ARG_BUFFER) a.v.access = base + (guint32)d->arg_access[i];
    dr_graph_add_arg(g, &a);
  }
  DrNode *n = dr_graph_node(g, id);
  if ((n->op == DR_OP_ALLOC || n->op == DR_OP_FREE) && n->buffer != DR_NONE) {
    DrBuffer *b = dr_graph_buffer(g, n->buffer);
    DrId *slot = n->op == DR_OP_ALLOC ? &b->alloc_node : &b->free_node;
    if (*slot == DR_NONE) *slot = id;
  }
  return TRUE;
}

/* Resolves `s` into an access (mode unset); `key` is "key 'src'" or
 * "argument 'x'". Messages as parser/nodes.c words them. */
static gboolean resolve_slice(Draft *d, const char *key, DrBufferSlice s, DrAccess *out, GError **error) {
  const DrGraph *g = d->p->graph;
  DrLoc loc = d->node.loc;
  if (s.buffer == NULL)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: no buffer named", d->what, key);
  DrId b = dr_graph_find_buffer(g, s.buffer);
  if (b == DR_NONE) {
    g_autofree char *hint = buffer_hint(g, s.buffer);
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: unknown buffer '%s'%s", d->what, key,
                           s.buffer, hint);
  }
  const DrBuffer *buf = dr_graph_buffer(g, b);
  guint64 end = s.end == DR_SLICE_END ? buf->count : s.end;
  g_autofree char *text =
      s.end == DR_SLICE_END
          ? g_strdup_printf("%s[%" G_GUINT64_FORMAT ":]", s.buffer, s.begin)
          : g_strdup_printf("%s[%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT "]", s.buffer, s.begin, s.end);
  if (s.begin > end)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "node '%s', %s: slice '%s' is reversed: start %" G_GUINT64_FORMAT
                           " is after end %" G_GUINT64_FORMAT,
                           d->what, key, text, s.begin, end);
  if (end > buf->count)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "node '%s', %s: slice '%s' is out of bounds: buffer '%s' has %" G_GUINT64_FORMAT
                           " elements",
                           d->what, key, text, s.buffer, buf->count);
  if (s.begin == end)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: slice '%s' is empty", d->what, key,
                           text);
  *out = (DrAccess){.buffer = b, .begin = s.begin, .end = end, .loc = loc};
  return TRUE;
}

static guint64 access_bytes(const DrGraph *g, const DrAccess *a) {
  return (a->end - a->begin) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
}

static guint add_access(Draft *d, const DrAccess *a, DrAccessMode mode) {
  d->accesses[d->n_accesses] = *a;
  d->accesses[d->n_accesses].mode = mode;
  return d->n_accesses++;
}

/* Binds named `args` to `params` in declaration order (kernels: host
 * FALSE; host functions: host TRUE), like the parser's bind_args, filling
 * kvals/counts for the kernel's check when not NULL. */
static gboolean bind_args(Draft *d, const char *callee, const DrParam *params, guint32 n_params,
                          const DrNamedArg *args, guint n_args, gboolean host, DrKValue *kvals,
                          guint64 *counts, GError **error) {
  const DrGraph *g = d->p->graph;
  DrLoc loc = d->node.loc;
  const DrNamedArg *vals[MAX_PARAMS] = {NULL};
  g_return_val_if_fail(n_params <= MAX_PARAMS, FALSE);
  for (guint i = 0; i < n_args; i++) {
    const char *name = args[i].name ? args[i].name : "";
    guint32 j = 0;
    while (j < n_params && strcmp(params[j].name, name) != 0) j++;
    if (j == n_params) {
      DrSuggest s;
      dr__suggest_init(&s, name);
      for (j = 0; j < n_params; j++) dr__suggest_add(&s, params[j].name);
      g_autofree char *hint = dr__suggest_hint(&s);
      return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                             "node '%s', key 'args': %s has no parameter '%s'%s", d->what, callee, name,
                             hint);
    }
    if (vals[j] != NULL)
      return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', key 'args': argument '%s' given twice",
                             d->what, name);
    vals[j] = &args[i];
  }
  for (guint32 i = 0; i < n_params; i++) {
    const DrParam *param = &params[i];
    const DrNamedArg *v = vals[i];
    g_autofree char *key = g_strdup_printf("argument '%s'", param->name);
    DrArg a = {.param = i, .loc = loc};
    gint acc_index = -1;
    if (v == NULL) {
      if (!param->optional)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s': missing argument '%s' of %s",
                               d->what, param->name, callee);
      if (param->is_pointer || param->is_string) continue;
      if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
        a.kind = DR_ARG_INT;
        a.v.i = (gint64)param->def;
        if (kvals) kvals[i].i = a.v.i;
      } else {
        a.kind = DR_ARG_FLOAT;
        a.v.f = param->def;
        if (kvals) kvals[i].f = a.v.f;
      }
    } else if (param->is_pointer) {
      if (v->kind != DR_NAMED_ARG_SLICE)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: expected a buffer slice",
                               d->what, key);
      DrAccess acc;
      if (!resolve_slice(d, key, v->slice, &acc, error)) return FALSE;
      const DrBuffer *b = dr_graph_buffer(g, acc.buffer);
      if (!host && b->where != DR_WHERE_DEVICE)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                               "node '%s', %s: %s takes device buffers; '%s' is a host buffer", d->what, key,
                               callee, b->name);
      if (host && b->where != DR_WHERE_HOST)
        return dr_set_error_at(
            error, DR_ERROR_INVALID, loc,
            "node '%s', %s: %s runs on the CPU and needs a host buffer; '%s' lives on the device", d->what,
            key, callee, b->name);
      if (!param->any_type && b->type != param->type)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                               "node '%s', %s: %s wants %s elements, but buffer '%s' holds %s", d->what, key,
                               callee, dr_elem_name(param->type), b->name, dr_elem_name(b->type));
      acc_index = (gint)add_access(d, &acc, param->access);
      a.kind = DR_ARG_BUFFER;
      if (counts) counts[i] = acc.end - acc.begin;
    } else if (param->is_string) {
      if (v->kind != DR_NAMED_ARG_STRING || v->s == NULL)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: expected a string", d->what,
                               key);
      a.kind = DR_ARG_STRING;
      a.v.s = v->s; /* interned by dr_graph_add_arg */
    } else if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
      if (v->kind != DR_NAMED_ARG_INT)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: expected an integer", d->what,
                               key);
      gint64 lo = host ? 0 : param->type == DR_ELEM_I32 ? G_MININT32 : G_MININT64;
      gint64 hi = param->type == DR_ELEM_I32 ? G_MAXINT32 : G_MAXINT64;
      if (v->i < lo || v->i > hi)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                               "node '%s', %s: %" G_GINT64_FORMAT " is out of range %" G_GINT64_FORMAT
                               "..%" G_GINT64_FORMAT,
                               d->what, key, v->i, lo, hi);
      a.kind = DR_ARG_INT;
      a.v.i = v->i;
      if (kvals) kvals[i].i = v->i;
    } else {
      if (v->kind != DR_NAMED_ARG_FLOAT && v->kind != DR_NAMED_ARG_INT)
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: expected a number", d->what,
                               key);
      a.kind = DR_ARG_FLOAT;
      a.v.f = v->kind == DR_NAMED_ARG_INT ? (double)v->i : v->f;
      if (!isfinite(a.v.f))
        return dr_set_error_at(error, DR_ERROR_INVALID, loc, "node '%s', %s: not a finite number", d->what,
                               key);
      if (kvals) kvals[i].f = a.v.f;
    }
    d->arg_access[d->n_args] = acc_index;
    d->args[d->n_args++] = a;
  }
  return TRUE;
}

gboolean dr_pipeline_add_kernel_node(DrPipeline *pipeline, const char *id, const char *kernel,
                                     const DrNamedArg *args, guint n_args, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && kernel != NULL, FALSE);
  g_return_val_if_fail(n_args == 0 || args != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_KERNEL, error)) return FALSE;
  const DrGraph *g = pipeline->graph;
  DrId k = dr_graph_find_kernel(g, kernel);
  if (k == DR_NONE) {
    DrSuggest sg;
    dr__suggest_init(&sg, kernel);
    for (DrId i = 0; i < g->kernels->len; i++) dr__suggest_add(&sg, dr_graph_kernel(g, i)->name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc,
                           "node '%s', key 'kernel': unknown kernel '%s'%s", id, kernel, hint);
  }
  const DrKernelDecl *decl = dr_graph_kernel(g, k);
  d.node.kernel = k;
  g_autofree char *callee = g_strdup_printf("kernel '%s'", decl->name);
  DrKValue kvals[MAX_PARAMS] = {{0}};
  guint64 counts[MAX_PARAMS] = {0};
  if (!bind_args(&d, callee, decl->params, decl->n_params, args, n_args, FALSE, kvals, counts, error))
    return FALSE;
  const DrKernelDef *def = decl_def(decl);
  char msg[DR_KERR_SIZE] = {0};
  if (def != NULL && def->check != NULL && def->check((const uint64_t *)counts, kvals, msg) != 0)
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc, "node '%s': %s: %s", id, callee, msg);
  return draft_commit(&d);
}

/* The kernel node `id`, or NULL with DR_ERROR_INVALID. */
static DrNode *find_node(DrPipeline *p, const char *id, const char *what, GError **error) {
  if (!check_open(p, what, error)) return NULL;
  DrId n = dr_graph_find_node(p->graph, id);
  if (n != DR_NONE) return dr_graph_node(p->graph, n);
  DrSuggest sg;
  dr__suggest_init(&sg, id);
  for (DrId i = 0; i < dr_graph_n_nodes(p->graph); i++) dr__suggest_add(&sg, dr_graph_node(p->graph, i)->id);
  g_autofree char *hint = dr__suggest_hint(&sg);
  DrLoc loc = p->loc_file ? next_loc(p, FALSE) : (DrLoc){"<api>", 0, 0};
  dr_set_error_at(error, DR_ERROR_INVALID, loc, "unknown node '%s'%s", id, hint);
  return NULL;
}

gboolean dr_pipeline_node_set_launch(DrPipeline *pipeline, const char *id, const guint grid[3],
                                     const guint block[3], guint shared, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  DrNode *n = find_node(pipeline, id, "set a launch shape", error);
  if (n == NULL) return FALSE;
  if (n->op != DR_OP_KERNEL)
    return dr_set_error_at(error, DR_ERROR_INVALID, n->loc,
                           "node '%s': a launch shape applies to kernel nodes only", id);
  for (int i = 0; i < 3; i++) {
    guint gv = grid ? grid[i] : 0, bv = block ? block[i] : 0;
    if (gv > G_MAXINT32 || bv > G_MAXINT32)
      return dr_set_error_at(error, DR_ERROR_INVALID, n->loc, "node '%s': grid and block must be below 2^31",
                             id);
  }
  /* The parser's convention: all 0 = default, else missing dimensions 1. */
  gboolean has_grid = grid && (grid[0] || grid[1] || grid[2]);
  gboolean has_block = block && (block[0] || block[1] || block[2]);
  for (int i = 0; i < 3; i++) {
    n->grid[i] = has_grid ? MAX(grid[i], 1u) : 0;
    n->block[i] = has_block ? MAX(block[i], 1u) : 0;
  }
  n->shared = shared;
  return TRUE;
}

gboolean dr_pipeline_add_copy(DrPipeline *pipeline, const char *id, DrBufferSlice src, DrBufferSlice dst,
                              GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_COPY, error)) return FALSE;
  DrAccess s, t;
  if (!resolve_slice(&d, "key 'src'", src, &s, error) || !resolve_slice(&d, "key 'dst'", dst, &t, error))
    return FALSE;
  guint64 sb = access_bytes(pipeline->graph, &s), tb = access_bytes(pipeline->graph, &t);
  if (sb != tb)
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc,
                           "node '%s', key 'dst': copy lengths differ: src is %" G_GUINT64_FORMAT
                           " bytes, dst is %" G_GUINT64_FORMAT " bytes",
                           id, sb, tb);
  add_access(&d, &s, DR_ACCESS_READ);
  add_access(&d, &t, DR_ACCESS_WRITE);
  return draft_commit(&d);
}

gboolean dr_pipeline_add_memset(DrPipeline *pipeline, const char *id, DrBufferSlice dst, guint8 value,
                                GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_MEMSET, error)) return FALSE;
  DrAccess t;
  if (!resolve_slice(&d, "key 'dst'", dst, &t, error)) return FALSE;
  d.node.memset_value = value;
  add_access(&d, &t, DR_ACCESS_WRITE);
  return draft_commit(&d);
}

static gboolean add_lifetime(DrPipeline *p, const char *id, DrOp op, const char *buffer, GError **error) {
  Draft d;
  if (!draft_begin(&d, p, id, op, error)) return FALSE;
  DrId b = dr_graph_find_buffer(p->graph, buffer);
  if (b == DR_NONE) {
    g_autofree char *hint = buffer_hint(p->graph, buffer);
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc,
                           "node '%s', key 'buffer': unknown buffer '%s'%s", id, buffer, hint);
  }
  const DrBuffer *buf = dr_graph_buffer(p->graph, b);
  if (buf->where != DR_WHERE_DEVICE)
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc,
                           "node '%s', key 'buffer': %s takes device buffers only; '%s' is a host buffer", id,
                           dr_op_name(op), buffer);
  d.node.buffer = b;
  DrAccess a = {.buffer = b, .begin = 0, .end = buf->count, .loc = d.node.loc};
  add_access(&d, &a, DR_ACCESS_WRITE);
  return draft_commit(&d);
}

gboolean dr_pipeline_add_alloc(DrPipeline *pipeline, const char *id, const char *buffer, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && buffer != NULL, FALSE);
  return add_lifetime(pipeline, id, DR_OP_ALLOC, buffer, error);
}

gboolean dr_pipeline_add_free(DrPipeline *pipeline, const char *id, const char *buffer, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && buffer != NULL, FALSE);
  return add_lifetime(pipeline, id, DR_OP_FREE, buffer, error);
}

gboolean dr_pipeline_add_host(DrPipeline *pipeline, const char *id, const char *fn, const DrNamedArg *args,
                              guint n_args, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && fn != NULL, FALSE);
  g_return_val_if_fail(n_args == 0 || args != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_HOST, error)) return FALSE;
  DrHostFn f;
  if (!dr_host_fn_from_name(fn, &f)) {
    DrSuggest sg;
    dr__suggest_init(&sg, fn);
    for (guint i = 0; i < DR_N_HOST_FNS; i++) dr__suggest_add(&sg, dr_host_fn_name((DrHostFn)i));
    g_autofree char *hint = dr__suggest_hint(&sg);
    return dr_set_error_at(error, DR_ERROR_INVALID, d.node.loc,
                           "node '%s', key 'fn': unknown host function '%s'%s", id, fn,
                           dr__suggest_best(&sg) ? hint : " (expected print, sleep or checksum)");
  }
  d.node.host_fn = f;
  guint32 n_params;
  const DrParam *params = dr_host_fn_params(f, &n_params);
  g_autofree char *callee = g_strdup_printf("host function '%s'", fn);
  if (!bind_args(&d, callee, params, n_params, args, n_args, TRUE, NULL, NULL, error)) return FALSE;
  return draft_commit(&d);
}

gboolean dr_pipeline_add_callback(DrPipeline *pipeline, const char *id, void (*fn)(void *user_data),
                                  void *user_data, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && fn != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_HOST, error)) return FALSE;
  DrCallback cb = {fn, user_data};
  g_array_append_val(pipeline->graph->callbacks, cb);
  d.node.callback = pipeline->graph->callbacks->len;
  return draft_commit(&d);
}

gboolean dr_pipeline_add_noop(DrPipeline *pipeline, const char *id, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  Draft d;
  if (!draft_begin(&d, pipeline, id, DR_OP_NOOP, error)) return FALSE;
  return draft_commit(&d);
}

gboolean dr_pipeline_node_after(DrPipeline *pipeline, const char *id, const char *after, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && after != NULL, FALSE);
  DrNode *n = find_node(pipeline, id, "add a dependency", error);
  if (n == NULL) return FALSE;
  DrLoc loc = pipeline->loc_file ? next_loc(pipeline, FALSE) : n->loc;
  if (strcmp(id, after) == 0)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "node '%s', key 'after': a node cannot come after itself", id);
  if (find_node(pipeline, after, "add a dependency", error) == NULL) return FALSE;
  dr_graph_add_after(pipeline->graph, dr_graph_find_node(pipeline->graph, after),
                     dr_graph_find_node(pipeline->graph, id), loc);
  return TRUE;
}

gboolean dr_pipeline_node_set_priority(DrPipeline *pipeline, const char *id, DrPriority priority,
                                       GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && (guint)priority < DR_N_PRIORITIES, FALSE);
  DrNode *n = find_node(pipeline, id, "set a priority", error);
  if (n == NULL) return FALSE;
  n->priority = priority;
  return TRUE;
}

gboolean dr_pipeline_node_set_device(DrPipeline *pipeline, const char *id, gint device, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && device >= -1, FALSE);
  DrNode *n = find_node(pipeline, id, "set a device", error);
  if (n == NULL) return FALSE;
  n->device = device;
  return TRUE;
}

gboolean dr_pipeline_node_set_label(DrPipeline *pipeline, const char *id, const char *label, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  DrNode *n = find_node(pipeline, id, "set a label", error);
  if (n == NULL) return FALSE;
  n->label = dr_graph_intern(pipeline->graph, label);
  return TRUE;
}

/* ---- validation and planning --------------------------------------------- */

/* The parser's check that init/save buffers live for the whole run
 * (parser/parser.c does it for YAML once all nodes are known). */
static void check_whole_run_buffers(const DrGraph *g, DrDiags *diags) {
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const DrBuffer *b = dr_graph_buffer(g, i);
    DrId life = b->alloc_node != DR_NONE ? b->alloc_node : b->free_node;
    if (life == DR_NONE || (b->init == DR_INIT_NONE && b->save_path == NULL)) continue;
    const DrNode *n = dr_graph_node(g, life);
    dr_diags_error(diags, b->loc,
                   "buffer '%s': '%s' needs a buffer that lives for the whole run, but node '%s' %s it",
                   b->name, b->init != DR_INIT_NONE ? "init" : "save", n->id,
                   n->op == DR_OP_ALLOC ? "allocates" : "frees");
    dr_diags_note(diags, n->loc, "node '%s' is here", n->id);
  }
}

gboolean dr_pipeline_validate(DrPipeline *pipeline, GError **error) {
  CHECK_ARGS(pipeline, error);
  if (pipeline->failed != NULL) {
    g_propagate_error(error, g_error_copy(pipeline->failed));
    return FALSE;
  }
  if (pipeline->frozen) return TRUE;
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  check_whole_run_buffers(pipeline->graph, diags);
  if (dr_diags_n_errors(diags) == 0) dr_passes_run(pipeline->graph, diags);
  if (!dr_diags_to_error(diags, &pipeline->failed)) {
    g_propagate_error(error, g_error_copy(pipeline->failed));
    return FALSE;
  }
  DR_GRAPH_CHECK(pipeline->graph);
  pipeline->frozen = TRUE;
  return TRUE;
}

DrStreamPlan *dr_pipeline_plan(DrPipeline *pipeline, const DrPlanSettings *settings, GError **error) {
  g_return_val_if_fail(pipeline != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (!dr_pipeline_validate(pipeline, error)) return NULL;
  DrPlanOptions opts = {0};
  if (settings) {
    opts.max_streams = settings->max_streams;
    opts.profile_path = settings->profile_path;
  }
  DrPlan *plan = dr_plan_build(pipeline->graph, &opts, error);
  if (plan == NULL) return NULL;
  DrStreamPlan *sp = g_new0(DrStreamPlan, 1);
  sp->plan = plan;
  sp->pipeline = pipeline;
  pipeline->refs++;
  return sp;
}

void dr_stream_plan_free(DrStreamPlan *plan) {
  if (plan == NULL) return;
  dr_plan_free(plan->plan);
  pipeline_unref(plan->pipeline);
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

void dr_stream_plan_write_text(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_text(plan->plan, out);
}

void dr_stream_plan_write_json(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_json(plan->plan, out);
}

void dr_stream_plan_write_dot(const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(plan != NULL && out != NULL);
  dr_plan_write_dot(plan->plan, out);
}

/* ---- running -------------------------------------------------------------- */

void dr_run_settings_init(DrRunSettings *settings, const DrPipeline *pipeline) {
  g_return_if_fail(settings != NULL && pipeline != NULL);
  DrRunOptions o;
  dr_run_options_init(&o, pipeline->graph);
  *settings = (DrRunSettings){.backend = o.backend,
                              .mode = o.mode,
                              .iterations = o.iterations,
                              .warmup = o.warmup,
                              .verify = o.verify,
                              .device = o.device,
                              .node_timing = o.node_timing,
                              .timeline_path = o.timeline_path,
                              .progress = o.progress,
                              .stop = o.stop,
                              .trace_path = o.trace_path,
                              .host_output = o.host_output,
                              .delay_seed = o.delay_seed,
                              .delay_max_us = o.delay_max_us,
                              .graph_fallback = o.graph_fallback};
}

/* The run options of `settings` (NULL: dr_run_settings_init's) for `plan`;
 * FALSE with DR_ERROR_USAGE for zero iterations. */
static gboolean settings_to_options(const DrStreamPlan *plan, const DrRunSettings *settings, DrRunOptions *o,
                                    GError **error) {
  DrRunSettings s;
  if (settings == NULL)
    dr_run_settings_init(&s, plan->pipeline);
  else
    s = *settings;
  g_return_val_if_fail((guint)s.backend < DR_N_BACKENDS, FALSE);
  g_return_val_if_fail(s.mode == DR_MODE_STREAMS || s.mode == DR_MODE_GRAPH, FALSE);
  g_return_val_if_fail((guint)s.node_timing < DR_N_TIMINGS, FALSE);
  if (s.iterations == 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "pipeline '%s': iterations must be at least 1",
                plan->pipeline->graph->name);
    return FALSE;
  }
  *o = (DrRunOptions){.backend = s.backend,
                      .mode = s.mode,
                      .iterations = s.iterations,
                      .warmup = s.warmup,
                      .verify = s.verify,
                      .delay_seed = s.delay_seed,
                      .delay_max_us = s.delay_max_us,
                      .device = s.device,
                      .node_timing = s.node_timing,
                      .timeline_path = s.timeline_path,
                      .progress = s.progress,
                      .stop = s.stop,
                      .trace_path = s.trace_path,
                      .host_output = s.host_output,
                      .graph_fallback = s.graph_fallback};
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
};

DrRunner *dr_runner_new(const DrStreamPlan *plan, const DrRunSettings *settings, GError **error) {
  g_return_val_if_fail(plan != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  DrRunOptions o;
  if (!settings_to_options(plan, settings, &o, error)) return NULL;
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

DrRunReport *dr_runner_run(DrRunner *runner, GError **error) {
  g_return_val_if_fail(runner != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  runner->update = "none";
  if (runner->changed->len > 0) {
    if (!dr_session_args_changed(runner->session, (const DrId *)(void *)runner->changed->data,
                                 runner->changed->len, &runner->update, error))
      return NULL;
    for (guint i = 0; i < runner->changed->len; i++)
      runner->is_changed[g_array_index(runner->changed, DrId, i)] = FALSE;
    g_array_set_size(runner->changed, 0);
  }
  DrReport *r = dr_session_run(runner->session, error);
  return r ? wrap_report(r, runner->plan->plan) : NULL;
}

/* Sets scalar `param` of kernel node `node` (is_int: to i, else to f). */
static gboolean runner_set(DrRunner *runner, const char *node, const char *param, gboolean is_int, gint64 i,
                           double f, GError **error) {
  g_return_val_if_fail(runner != NULL && node != NULL && param != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  DrGraph *g = runner->plan->pipeline->graph;
  DrId v = dr_graph_find_node(g, node);
  if (v == DR_NONE) {
    DrSuggest sg;
    dr__suggest_init(&sg, node);
    for (DrId k = 0; k < dr_graph_n_nodes(g); k++) dr__suggest_add(&sg, dr_graph_node(g, k)->id);
    g_autofree char *hint = dr__suggest_hint(&sg);
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "unknown node '%s'%s", node, hint);
    return FALSE;
  }
  const DrNode *n = dr_graph_node(g, v);
  if (n->op != DR_OP_KERNEL) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s' is a %s node: only kernel arguments can change",
                node, dr_op_name(n->op));
    return FALSE;
  }
  const DrKernelDecl *decl = dr_graph_kernel(g, n->kernel);
  guint32 p = 0;
  while (p < decl->n_params && strcmp(decl->params[p].name, param) != 0) p++;
  if (p == decl->n_params) {
    DrSuggest sg;
    dr__suggest_init(&sg, param);
    for (guint32 k = 0; k < decl->n_params; k++) dr__suggest_add(&sg, decl->params[k].name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s': kernel '%s' has no parameter '%s'%s", node,
                decl->name, param, hint);
    return FALSE;
  }
  const DrParam *pd = &decl->params[p];
  if (pd->is_pointer) {
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                "node '%s': parameter '%s' is a buffer; only scalar arguments can change between runs", node,
                param);
    return FALSE;
  }
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
  if (pd->type == DR_ELEM_I32 || pd->type == DR_ELEM_I64) {
    gint64 lo = pd->type == DR_ELEM_I32 ? G_MININT32 : G_MININT64;
    gint64 hi = pd->type == DR_ELEM_I32 ? G_MAXINT32 : G_MAXINT64;
    if (!is_int || i < lo || i > hi) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                  "node '%s': parameter '%s' (%s) needs an integer in %" G_GINT64_FORMAT
                  "..%" G_GINT64_FORMAT,
                  node, param, dr_elem_name(pd->type), lo, hi);
      return FALSE;
    }
    arg->v.i = i;
  } else {
    double x = is_int ? (double)i : f;
    if (!isfinite(x)) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "node '%s': parameter '%s': not a finite number", node,
                  param);
      return FALSE;
    }
    arg->v.f = x;
  }
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

void dr_runner_free(DrRunner *runner) {
  if (runner == NULL) return;
  dr_session_close(runner->session);
  g_array_unref(runner->changed);
  g_free(runner->is_changed);
  g_free(runner);
}

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

void dr_run_report_write_trace(const DrRunReport *report, GString *out) {
  g_return_if_fail(report != NULL && out != NULL);
  dr_trace_write(report->report, out);
}

void dr_run_report_write_timeline(const DrRunReport *report, const DrStreamPlan *plan, GString *out) {
  g_return_if_fail(report != NULL && plan != NULL && out != NULL);
  g_return_if_fail(plan->plan == report->plan);
  dr_timeline_write_svg(report->report, plan->plan, out);
}
