/* nodes.c: the public library's kernels and nodes (dr_pipeline_register_kernel,
 * dr_pipeline_add_*): each call checks everything the YAML parser checks for
 * one node and adds nothing when a check fails. */
#include <math.h>
#include <string.h>

#include "lib/api_internal.h"

gboolean dr_pipeline_register_kernel(DrPipeline *pipeline, const DrKernelDef *def, GError **error) {
  CHECK_ARGS(pipeline, error);
  g_return_val_if_fail(def != NULL && def->name != NULL, FALSE);
  g_return_val_if_fail(def->n_params >= 0 && (def->n_params == 0 || def->params != NULL), FALSE);
  if (!dr__pipeline_check_open(pipeline, "register a kernel", error)) return FALSE;
  DrGraph *g = pipeline->graph;
  DrLoc loc = pipeline->loc_file ? dr__pipeline_next_loc(pipeline, FALSE)
                                 : (DrLoc){"<api:kernels>", g->kernels->len + 1, 1};
  if (!dr__valid_name(def->name))
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
    if (kp->name == NULL || !dr__valid_name(kp->name))
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
  if (!dr__pipeline_check_open(p, "add a node", error)) return FALSE;
  DrLoc loc = dr__pipeline_next_loc(p, FALSE);
  d->node = (DrNode){.op = op,
                     .priority = DR_PRIORITY_NORMAL,
                     .loc = loc,
                     .device = -1,
                     .kernel = DR_NONE,
                     .buffer = DR_NONE};
  if (!dr__valid_name(id))
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
    g_autofree char *hint = dr__buffer_hint(g, s.buffer);
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
  if (!dr__pipeline_check_open(p, what, error)) return NULL;
  DrId n = dr_graph_find_node(p->graph, id);
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
    g_autofree char *hint = dr__buffer_hint(p->graph, buffer);
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
  DrLoc loc = pipeline->loc_file ? dr__pipeline_next_loc(pipeline, FALSE) : n->loc;
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
