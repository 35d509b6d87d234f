/* testgraph.h: small helpers for the backend tests: build DrGraphs by hand
 * (built-in kernels registered from the registry, nodes with accesses and
 * arguments), run the dependency passes and plan them, and read files back.
 * Header-only, static functions: shared by the CPU and the GPU test. */
#ifndef DAGRUN_TESTS_BACKENDS_TESTGRAPH_H
#define DAGRUN_TESTS_BACKENDS_TESTGRAPH_H

#include <glib.h>
#include <string.h>

#include "backends/run.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "kernels/registry.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"

/* Registers built-in `name` (once) and returns its kernel id. */
static inline DrId tg_kernel(DrGraph *g, const char *name) {
  DrId k = dr_graph_find_kernel(g, name);
  if (k != DR_NONE) return k;
  const DrKernelDef *def = dr_kernel_find(name);
  g_assert_nonnull(def);
  DrParam params[32] = {0};
  for (int i = 0; i < def->n_params; i++) {
    params[i].name = def->params[i].name;
    params[i].type = def->params[i].type;
    params[i].is_pointer = def->params[i].is_pointer;
    params[i].access = def->params[i].access;
    params[i].optional = def->params[i].optional;
  }
  DrKernelDecl decl = {
      .name = def->name,
      .origin = DR_KERNEL_BUILTIN,
      .builtin_index = (guint32)(def - dr_kernel_registry),
      .params = params,
      .n_params = (guint32)def->n_params,
      .grid = {def->grid_over < 0 ? DR_NONE : (DrId)def->grid_over, def->block},
  };
  return dr_graph_add_kernel(g, &decl);
}

static inline DrId tg_buffer(DrGraph *g, const char *name, DrElemType type, guint64 count, DrWhere where,
                             DrInitKind init, guint64 seed) {
  DrBuffer b = {.name = name, .type = type, .count = count, .where = where, .init = init, .init_seed = seed};
  DrId id = dr_graph_add_buffer(g, &b);
  g_assert_cmpuint(id, !=, DR_NONE);
  return id;
}

/* Returns "PREFIX<i>" interned in the graph: ids of numbered nodes. */
static inline const char *tg_name(DrGraph *g, const char *prefix, guint i) {
  char buf[64];
  g_snprintf(buf, sizeof buf, "%s%u", prefix, i);
  return dr_graph_intern(g, buf);
}

static inline DrId tg_node(DrGraph *g, const char *id, DrOp op) {
  DrNode n = {
      .op = op, .id = id, .device = -1, .priority = DR_PRIORITY_NORMAL, .kernel = DR_NONE, .buffer = DR_NONE};
  DrId nid = dr_graph_add_node(g, &n);
  g_assert_cmpuint(nid, !=, DR_NONE);
  return nid;
}

static inline guint32 tg_access(DrGraph *g, const char *buffer, guint64 begin, guint64 end,
                                DrAccessMode mode) {
  DrId b = dr_graph_find_buffer(g, buffer);
  g_assert_cmpuint(b, !=, DR_NONE);
  if (end == 0) end = dr_graph_buffer(g, b)->count;
  DrAccess a = {.buffer = b, .mode = mode, .begin = begin, .end = end};
  return dr_graph_add_access(g, &a);
}

/* A kernel node; then add its arguments with tg_arg_buf / tg_arg_f. */
static inline DrId tg_kernel_node(DrGraph *g, const char *id, const char *kernel) {
  DrId k = tg_kernel(g, kernel);
  DrNode n = {.op = DR_OP_KERNEL,
              .id = id,
              .priority = DR_PRIORITY_NORMAL,
              .device = -1,
              .kernel = k,
              .buffer = DR_NONE};
  DrId nid = dr_graph_add_node(g, &n);
  g_assert_cmpuint(nid, !=, DR_NONE);
  return nid;
}

static inline guint32 tg_param(DrGraph *g, DrId node, const char *param) {
  const DrKernelDecl *k = dr_graph_kernel(g, dr_graph_node(g, node)->kernel);
  for (guint32 i = 0; i < k->n_params; i++)
    if (strcmp(k->params[i].name, param) == 0) return i;
  g_assert_not_reached();
}

/* Binds kernel parameter `param` of the last node to buffer[begin:end)
 * (end 0: the whole buffer) with the parameter's access mode. */
static inline void tg_arg_buf(DrGraph *g, DrId node, const char *param, const char *buffer, guint64 begin,
                              guint64 end) {
  guint32 p = tg_param(g, node, param);
  DrAccessMode mode = dr_graph_kernel(g, dr_graph_node(g, node)->kernel)->params[p].access;
  guint32 a = tg_access(g, buffer, begin, end, mode);
  DrArg arg = {.param = p, .kind = DR_ARG_BUFFER, .v.access = a};
  dr_graph_add_arg(g, &arg);
}

static inline void tg_arg_f(DrGraph *g, DrId node, const char *param, double v) {
  DrArg arg = {.param = tg_param(g, node, param), .kind = DR_ARG_FLOAT, .v.f = v};
  dr_graph_add_arg(g, &arg);
}

static inline DrId tg_copy(DrGraph *g, const char *id, const char *src, guint64 sb, guint64 se,
                           const char *dst, guint64 db, guint64 de) {
  DrId n = tg_node(g, id, DR_OP_COPY);
  tg_access(g, src, sb, se, DR_ACCESS_READ);
  tg_access(g, dst, db, de, DR_ACCESS_WRITE);
  return n;
}

static inline DrId tg_memset(DrGraph *g, const char *id, const char *dst, guint8 value) {
  DrNode n = {.op = DR_OP_MEMSET,
              .id = id,
              .priority = DR_PRIORITY_NORMAL,
              .device = -1,
              .kernel = DR_NONE,
              .buffer = DR_NONE,
              .memset_value = value};
  DrId nid = dr_graph_add_node(g, &n);
  tg_access(g, dst, 0, 0, DR_ACCESS_WRITE);
  return nid;
}

/* alloc (is_alloc) or free of `buffer`, a whole-buffer write as the parser
 * gives them. */
static inline DrId tg_lifetime(DrGraph *g, const char *id, const char *buffer, gboolean is_alloc) {
  DrId b = dr_graph_find_buffer(g, buffer);
  DrNode n = {.op = is_alloc ? DR_OP_ALLOC : DR_OP_FREE,
              .id = id,
              .priority = DR_PRIORITY_NORMAL,
              .device = -1,
              .kernel = DR_NONE,
              .buffer = b};
  DrId nid = dr_graph_add_node(g, &n);
  tg_access(g, buffer, 0, 0, DR_ACCESS_WRITE);
  DrId *first = is_alloc ? &dr_graph_buffer(g, b)->alloc_node : &dr_graph_buffer(g, b)->free_node;
  if (*first == DR_NONE) *first = nid; /* the parser records the first only */
  return nid;
}

/* A host node calling `fn` with an optional buffer and message. */
static inline DrId tg_host(DrGraph *g, const char *id, DrHostFn fn, const char *buffer, const char *message) {
  DrNode n = {.op = DR_OP_HOST,
              .id = id,
              .priority = DR_PRIORITY_NORMAL,
              .device = -1,
              .kernel = DR_NONE,
              .buffer = DR_NONE,
              .host_fn = fn};
  DrId nid = dr_graph_add_node(g, &n);
  guint32 n_params;
  const DrParam *params = dr_host_fn_params(fn, &n_params);
  for (guint32 p = 0; p < n_params; p++) {
    if (params[p].is_string && message) {
      DrArg arg = {.param = p, .kind = DR_ARG_STRING, .v.s = dr_graph_intern(g, message)};
      dr_graph_add_arg(g, &arg);
    } else if (params[p].is_pointer && buffer) {
      guint32 a = tg_access(g, buffer, 0, 0, DR_ACCESS_READ);
      DrArg arg = {.param = p, .kind = DR_ARG_BUFFER, .v.access = a};
      dr_graph_add_arg(g, &arg);
    }
  }
  return nid;
}

/* Declares user kernel `name` y = a*x + 1 over n elements, from `source`
 * (a path), params (x f32* read, y f32* write, a f32, n i64), grid over n. */
static inline DrId tg_user_kernel(DrGraph *g, const char *name, const char *source) {
  DrParam params[] = {
      {.name = "x", .type = DR_ELEM_F32, .is_pointer = TRUE, .access = DR_ACCESS_READ},
      {.name = "y", .type = DR_ELEM_F32, .is_pointer = TRUE, .access = DR_ACCESS_WRITE},
      {.name = "a", .type = DR_ELEM_F32},
      {.name = "n", .type = DR_ELEM_I64},
  };
  DrKernelDecl decl = {.name = name,
                       .origin = DR_KERNEL_USER,
                       .params = params,
                       .n_params = 4,
                       .grid = {3, 128},
                       .source = dr_graph_intern(g, source),
                       .entry = name};
  return dr_graph_add_kernel(g, &decl);
}

/* x = iota(n); y = user kernel `name`(x, a = 3, n); yh <- y (saved). */
static inline DrGraph *tg_user_kernel_graph(const char *source, guint64 n, const char *save_path) {
  DrGraph *g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "y", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId yh = tg_buffer(g, "yh", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_NONE, 0);
  if (save_path) dr_graph_buffer(g, yh)->save_path = dr_graph_intern(g, save_path);
  DrId k = tg_user_kernel(g, "axpb", source);
  DrNode node = {.op = DR_OP_KERNEL,
                 .id = "user",
                 .priority = DR_PRIORITY_NORMAL,
                 .device = -1,
                 .kernel = k,
                 .buffer = DR_NONE};
  DrId u = dr_graph_add_node(g, &node);
  guint32 ax = tg_access(g, "x", 0, 0, DR_ACCESS_READ);
  guint32 ay = tg_access(g, "y", 0, 0, DR_ACCESS_WRITE);
  DrArg args[] = {{.param = 0, .kind = DR_ARG_BUFFER, .v.access = ax},
                  {.param = 1, .kind = DR_ARG_BUFFER, .v.access = ay},
                  {.param = 2, .kind = DR_ARG_FLOAT, .v.f = 3.0},
                  {.param = 3, .kind = DR_ARG_INT, .v.i = (gint64)n}};
  (void)u;
  for (guint i = 0; i < G_N_ELEMENTS(args); i++) dr_graph_add_arg(g, &args[i]);
  tg_copy(g, "down", "y", 0, 0, "yh", 0, 0);
  return g;
}

/* Runs the dependency passes; fails the test on diagnostics. */
static inline void tg_passes(DrGraph *g) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  gboolean ok = dr_passes_run(g, diags);
  if (!ok) {
    g_autoptr(GError) e = NULL;
    dr_diags_to_error(diags, &e);
    g_error("passes failed: %s", e ? e->message : "?");
  }
}

static DrPlan *tg_plan(DrGraph *g) {
  tg_passes(g);
  g_autoptr(GError) error = NULL;
  DrPlan *p = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GError) check = NULL;
  g_assert_true(dr_plan_check(p, &check));
  return p;
}

/* Reads `path` as an array of floats. */
G_GNUC_UNUSED static float *tg_read_floats(const char *path, gsize *n) {
  char *data = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(g_file_get_contents(path, &data, &len, &error));
  *n = len / sizeof(float);
  return (float *)data;
}

#endif
