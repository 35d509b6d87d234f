/* nodes.c: the public library's kernels and nodes (dr_pipeline_register_kernel,
 * dr_pipeline_add_*). Each call hands its values to the IR builder
 * (ir/build.h), the same one the YAML parser uses, so the rules and their
 * messages are the YAML's; it adds nothing when a check fails. What is
 * left here is what only a C caller can get wrong (a DrKernelDef's fields)
 * and the registry kernel's own check. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"

void dr__api_build_begin(DrApiBuild *x, DrPipeline *p) {
  x->diags = dr_diags_new(1);
  dr_build_init(&x->b, p->graph, x->diags);
}

gboolean dr__api_build_end(DrApiBuild *x, GError **error) {
  gboolean ok = dr_diags_n_errors(x->diags) == 0;
  if (!ok) {
    const DrDiag *d = dr_diags_get(x->diags, 0);
    dr_set_error_at(error, DR_ERROR_INVALID, d->loc, "%s", d->message);
  }
  dr_build_clear(&x->b);
  dr_diags_free(x->diags);
  return ok;
}

/* The checks of a DrKernelDef that YAML cannot get wrong; params filled. */
static gboolean def_ok(DrApiBuild *x, const DrKernelDef *def, DrLoc loc, DrParam *params) {
  DrDiags *d = x->diags;
  if (def->launch == NULL && def->host == NULL)
    dr_diags_error(d, loc, "kernel '%s': neither launch nor host is set", def->name);
  else if (def->n_params > MAX_PARAMS)
    dr_diags_error(d, loc, "kernel '%s': more than %d parameters", def->name, MAX_PARAMS);
  else if (def->grid_over >= def->n_params || def->grid_over < -1)
    dr_diags_error(d, loc, "kernel '%s': grid_over %d names no parameter", def->name, def->grid_over);
  for (int i = 0; i < def->n_params && dr_diags_n_errors(d) == 0; i++) {
    const DrKParam *kp = &def->params[i];
    if ((guint)kp->type >= DR_ELEM_N_TYPES || (guint)kp->access >= DR_ACCESS_N_MODES)
      dr_diags_error(d, loc, "kernel '%s': parameter %d has a bad type or access", def->name, i);
    params[i] = (DrParam){.name = kp->name,
                          .type = kp->type,
                          .is_pointer = kp->is_pointer != 0,
                          .access = kp->access,
                          .optional = !kp->is_pointer && kp->optional,
                          .def = kp->def};
  }
  return dr_diags_n_errors(d) == 0;
}

gboolean dr_pipeline_register_kernel(DrPipeline *pipeline, const DrKernelDef *def, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(def != NULL && def->name != NULL, FALSE);
  g_return_val_if_fail(def->n_params >= 0 && (def->n_params == 0 || def->params != NULL), FALSE);
  if (!dr__pipeline_check_open(pipeline, "register a kernel", error)) return FALSE;
  DrGraph *g = pipeline->graph;
  DrLoc loc = pipeline->loc_file ? dr__pipeline_next_loc(pipeline, FALSE)
                                 : (DrLoc){"<api:kernels>", g->kernels->len + 1, 1};
  DrApiBuild x;
  dr__api_build_begin(&x, pipeline);
  DrParam params[MAX_PARAMS];
  if (dr_build_name_ok(&x.b, DR_NAME_KERNEL, def->name, NULL, loc) && def_ok(&x, def, loc, params)) {
    DrKernelDecl decl = {.name = def->name,
                         .loc = loc,
                         .origin = DR_KERNEL_BUILTIN,
                         .builtin_index = DR_NONE,
                         .params = params,
                         .n_params = (guint32)def->n_params,
                         .grid = {.over = def->grid_over < 0 ? DR_NONE : (DrId)def->grid_over,
                                  .block = def->block ? def->block : 256},
                         .entry = def->name,
                         .api_def = def,
                         .guardable = (def->flags & DR_KFLAG_GUARD) != 0};
    dr_build_add_kernel(&x.b, &decl, NULL, loc);
  }
  return dr__api_build_end(&x, error);
}

/* ---- nodes -------------------------------------------------------------- */

/* Starts node `id` in x (always initialised: end it with node_end). */
static gboolean node_begin(DrApiBuild *x, DrPipeline *p, const char *id, DrOp op, GError **error) {
  dr__api_build_begin(x, p);
  if (!dr__pipeline_check_open(p, "add a node", error)) return FALSE;
  DrLoc loc = dr__pipeline_next_loc(p, FALSE);
  dr_build_set_what(&x->b, id);
  return dr_build_name_ok(&x->b, DR_NAME_NODE, id, NULL, loc) &&
         dr_build_node_begin(&x->b, dr__pipeline_node_id(p, id), op, loc, FALSE);
}

/* Adds the node when `ok` and nothing was reported; ends x. */
static gboolean node_end(DrApiBuild *x, gboolean ok, GError **error) {
  if (ok && dr_diags_n_errors(x->diags) == 0)
    dr_build_node_commit(&x->b);
  else
    ok = FALSE;
  return dr__api_build_end(x, error) && ok;
}

static DrBuildSlice build_slice(DrBufferSlice s) {
  return (DrBuildSlice){s.buffer, s.begin, s.end == DR_SLICE_END ? DR_BUILD_SLICE_END : s.end, NULL};
}

static DrBuildValue build_value(const DrNamedArg *a) {
  switch (a->kind) {
    case DR_NAMED_ARG_SLICE:
      return (DrBuildValue){.kind = DR_BUILD_VALUE_SLICE, .slice = build_slice(a->slice)};
    case DR_NAMED_ARG_INT:
      return (DrBuildValue){.kind = DR_BUILD_VALUE_INT, .i = a->i};
    case DR_NAMED_ARG_FLOAT:
      return (DrBuildValue){.kind = DR_BUILD_VALUE_FLOAT, .f = a->f};
    case DR_NAMED_ARG_STRING:
      break;
  }
  return (DrBuildValue){.kind = DR_BUILD_VALUE_STRING, .s = a->s};
}

/* Binds the caller's named arguments through the builder, stopping at the
 * first problem; every argument is placed at the node's location. */
static gboolean bind_named(DrApiBuild *x, const DrNamedArg *args, guint n_args) {
  DrBuild *b = &x->b;
  g_autofree const char **names = g_new0(const char *, MAX(n_args, 1));
  g_autofree DrLoc *locs = g_new0(DrLoc, MAX(n_args, 1));
  for (guint i = 0; i < n_args; i++) {
    names[i] = args[i].name;
    locs[i] = b->node.loc;
  }
  DrBuildArgs list = {.names = names, .locs = locs, .n = n_args, .given = TRUE, .at = b->node.loc};
  gint slot[DR_BUILD_MAX_PARAMS];
  if (!dr_build_args_match(b, &list, slot) || dr_build_node_failed(b)) return FALSE;
  for (guint32 i = 0; i < b->n_params; i++) {
    DrBuildValue v = slot[i] >= 0 ? build_value(&args[slot[i]]) : (DrBuildValue){0};
    if (!dr_build_arg(b, i, slot[i] >= 0 ? &v : NULL, b->node.loc) || dr_build_node_failed(b)) return FALSE;
  }
  return TRUE;
}

/* Runs the kernel's own check over the bound arguments (lib/checks.c, the
 * same as for a loaded file). */
static gboolean kernel_check(DrApiBuild *x) {
  DrBuild *b = &x->b;
  const DrKernelDef *def = dr__kernel_decl_def(dr_graph_kernel(b->g, b->node.kernel));
  if (def == NULL || def->check == NULL) return TRUE;
  DrKValue kvals[DR_BUILD_MAX_PARAMS] = {{0}};
  guint64 counts[DR_BUILD_MAX_PARAMS] = {0};
  DrLoc locs[DR_BUILD_MAX_PARAMS] = {{0}};
  for (guint k = 0; k < b->n_args; k++) {
    const DrArg *a = &b->args[k];
    locs[a->param] = a->loc;
    if (a->kind == DR_ARG_INT)
      kvals[a->param].i = a->v.i;
    else if (a->kind == DR_ARG_FLOAT)
      kvals[a->param].f = a->v.f;
    else if (a->kind == DR_ARG_BUFFER)
      counts[a->param] = b->accesses[b->arg_access[k]].end - b->accesses[b->arg_access[k]].begin;
  }
  return dr__kernel_check_call(def, b->what->str, counts, kvals, locs, b->node.loc, x->diags);
}

gboolean dr_pipeline_add_kernel_node(DrPipeline *pipeline, const char *id, const char *kernel,
                                     const DrNamedArg *args, guint n_args, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && kernel != NULL, FALSE);
  g_return_val_if_fail(n_args == 0 || args != NULL, FALSE);
  DrApiBuild x;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_KERNEL, error) &&
                dr_build_kernel_ref(&x.b, kernel, x.b.node.loc) && bind_named(&x, args, n_args) &&
                kernel_check(&x);
  return node_end(&x, ok, error);
}

/* The kernel node `id`, or NULL with DR_ERROR_INVALID. */
static DrNode *find_node(DrPipeline *p, const char *id, const char *what, GError **error) {
  if (!dr__pipeline_check_open(p, what, error)) return NULL;
  DrId n = dr_graph_find_node(p->graph, dr__pipeline_node_id(p, id));
  if (n != DR_NONE) return dr_graph_node(p->graph, n);
  DrSuggest sg;
  dr__suggest_init(&sg, id);
  for (DrId i = 0; i < dr_graph_n_nodes(p->graph); i++) dr__suggest_add(&sg, dr_graph_node(p->graph, i)->id);
  g_autofree char *hint = dr__suggest_hint(&sg);
  DrLoc loc = p->loc_file ? dr__pipeline_next_loc(p, FALSE) : (DrLoc){"<api>", 0, 0};
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
  /* YAML's range and wording for each given dimension (parser/nodes.c
   * parse_dim3: 1..2^31-1); 0 here is "not given", as YAML's missing
   * dimensions, since a C array always has three. */
  for (int i = 0; i < 6; i++) {
    const guint *dims = i < 3 ? grid : block;
    if (dims != NULL && dims[i % 3] > G_MAXINT32)
      return dr_set_error_at(error, DR_ERROR_INVALID, n->loc,
                             "node '%s', key '%s': %u is out of range [1, %d]", id, i < 3 ? "grid" : "block",
                             dims[i % 3], G_MAXINT32);
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
  DrApiBuild x;
  DrBuildSlice s = build_slice(src), t = build_slice(dst);
  DrAccess sa, ta;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_COPY, error) &&
                dr_build_resolve(&x.b, "key 'src'", &s, x.b.node.loc, &sa) &&
                dr_build_resolve(&x.b, "key 'dst'", &t, x.b.node.loc, &ta) && dr_build_copy(&x.b, &sa, &ta);
  return node_end(&x, ok, error);
}

gboolean dr_pipeline_add_memset(DrPipeline *pipeline, const char *id, DrBufferSlice dst, guint8 value,
                                GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  DrApiBuild x;
  DrBuildSlice t = build_slice(dst);
  DrAccess ta;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_MEMSET, error) &&
                dr_build_resolve(&x.b, "key 'dst'", &t, x.b.node.loc, &ta);
  if (ok) {
    x.b.node.memset_value = value;
    dr_build_add_access(&x.b, &ta, DR_ACCESS_WRITE);
  }
  return node_end(&x, ok, error);
}

static gboolean add_lifetime(DrPipeline *p, const char *id, DrOp op, const char *buffer, GError **error) {
  DrApiBuild x;
  gboolean ok = node_begin(&x, p, id, op, error) && dr_build_lifetime(&x.b, buffer, x.b.node.loc);
  return node_end(&x, ok, error);
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
  DrApiBuild x;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_HOST, error) && dr_build_host_fn(&x.b, fn, x.b.node.loc) &&
                bind_named(&x, args, n_args);
  return node_end(&x, ok, error);
}

gboolean dr_pipeline_add_callback(DrPipeline *pipeline, const char *id, void (*fn)(void *user_data),
                                  void *user_data, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && fn != NULL, FALSE);
  DrApiBuild x;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_HOST, error);
  if (ok) {
    DrCallback cb = {fn, user_data};
    g_array_append_val(pipeline->graph->callbacks, cb);
    x.b.node.callback = pipeline->graph->callbacks->len;
  }
  return node_end(&x, ok, error);
}

gboolean dr_pipeline_add_host_fn(DrPipeline *pipeline, const char *id, DrHostFnFunc fn, void *user_data,
                                 const DrKParam *params, guint n_params, const DrNamedArg *args, guint n_args,
                                 GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && fn != NULL, FALSE);
  g_return_val_if_fail(n_params == 0 || params != NULL, FALSE);
  g_return_val_if_fail(n_args == 0 || args != NULL, FALSE);
  DrApiBuild x;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_HOST, error);
  if (ok && n_params > MAX_PARAMS) {
    dr_diags_error(x.diags, x.b.node.loc, "node '%s': a host function takes at most %d parameters", id,
                   MAX_PARAMS);
    ok = FALSE;
  }
  if (ok) {
    DrParam decl[MAX_PARAMS];
    for (guint i = 0; i < n_params; i++)
      decl[i] = (DrParam){.name = params[i].name ? params[i].name : "",
                          .type = params[i].type,
                          .is_pointer = params[i].is_pointer != 0,
                          .access = params[i].access,
                          .optional = !params[i].is_pointer && params[i].optional,
                          .def = params[i].def};
    DrCallback cb = {.call = fn, .user_data = user_data, .params = decl, .n_params = n_params};
    ok = dr_build_host_callback(&x.b, &cb, id, NULL, x.b.node.loc) && bind_named(&x, args, n_args);
  }
  return node_end(&x, ok, error);
}

gboolean dr_pipeline_add_noop(DrPipeline *pipeline, const char *id, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL, FALSE);
  DrApiBuild x;
  gboolean ok = node_begin(&x, pipeline, id, DR_OP_NOOP, error);
  return node_end(&x, ok, error);
}

gboolean dr_pipeline_node_after(DrPipeline *pipeline, const char *id, const char *after, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(id != NULL && after != NULL, FALSE);
  DrNode *n = find_node(pipeline, id, "add a dependency", error);
  if (n == NULL) return FALSE;
  DrLoc loc = pipeline->loc_file ? dr__pipeline_next_loc(pipeline, FALSE) : n->loc;
  if (strcmp(id, after) == 0)
    return dr_set_error_at(error, DR_ERROR_INVALID, loc,
                           "node '%s', key 'after': a node cannot come after itself", id);
  if (find_node(pipeline, after, "add a dependency", error) == NULL) return FALSE;
  dr_graph_add_after(pipeline->graph,
                     dr_graph_find_node(pipeline->graph, dr__pipeline_node_id(pipeline, after)),
                     dr_graph_find_node(pipeline->graph, dr__pipeline_node_id(pipeline, id)), loc);
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
