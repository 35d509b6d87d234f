/* hostlib.c: opening the shared libraries of host functions and host
 * twins (hostlib.h). Each distinct resolved path is opened once per
 * graph; a path with a '/' that names no file gets its own message (the
 * loader's would be about the absolute path), any other failure dlerror's
 * text. A twin's DrKernelDef is made here from the kernel's own
 * declaration (its params as DrKParam, its grid rule), so the host backend
 * binds and runs a user kernel's twin exactly like a built-in's. */
#include "lib/hostlib.h"

#include <dlfcn.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ir/loops.h"

typedef struct {
  DrGraph *g;
  DrDiags *diags;
  GHashTable *handles; /* resolved path -> handle (borrowed: the graph keeps them) */
} Libs;

static void lib_close(gpointer handle) { dlclose(handle); }

/* The handle of `path` (written as `lib`), or NULL after a report at `loc`
 * (WHAT: "node 'x', fn" or "kernel 'k', host_twin"). */
static void *lib_open(Libs *l, const char *what, const char *lib, const char *path, DrLoc loc) {
  void *h = g_hash_table_lookup(l->handles, path);
  if (h != NULL) return h;
  if (strchr(path, '/') != NULL && !g_file_test(path, G_FILE_TEST_EXISTS)) {
    dr_diags_error(l->diags, loc,
                   "%s, key 'lib': cannot open library '%s': no such file (a relative path is resolved from "
                   "the pipeline file's directory)",
                   what, lib);
    return NULL;
  }
  dlerror();
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *why = dlerror();
    dr_diags_error(l->diags, loc, "%s, key 'lib': cannot open library '%s': %s", what, lib,
                   why ? why : "dlopen failed");
    return NULL;
  }
  dr_graph_keep(l->g, h, lib_close);
  g_hash_table_insert(l->handles, (gpointer)path, h);
  return h;
}

/* The address of `symbol` in h, or NULL after a report at `loc`. */
static void *lib_symbol(Libs *l, void *h, const char *what, const char *key, const char *lib,
                        const char *symbol, DrLoc loc) {
  dlerror();
  void *sym = dlsym(h, symbol);
  if (sym != NULL && dlerror() == NULL) return sym;
  dr_diags_error(l->diags, loc, "%s, key '%s': library '%s' has no symbol '%s'", what, key, lib, symbol);
  return NULL;
}

/* A DrKernelDef for user kernel k's host twin `host`, owned by l->g. */
static const DrKernelDef *twin_def(Libs *l, const DrKernelDecl *k, void *host) {
  DrKernelDef *def = g_new0(DrKernelDef, 1);
  DrKParam *params = g_new0(DrKParam, MAX(k->n_params, 1));
  for (guint32 i = 0; i < k->n_params; i++)
    params[i] = (DrKParam){.name = k->params[i].name,
                           .type = k->params[i].type,
                           .is_pointer = k->params[i].is_pointer,
                           .access = k->params[i].access};
  def->name = k->name;
  def->summary = "user kernel (host twin from a shared library)";
  def->params = params;
  def->n_params = (int)k->n_params;
  def->grid_over = k->grid.over == DR_NONE ? -1 : (int)k->grid.over;
  def->block = k->grid.block;
  /* A data pointer to a function pointer: what dlsym's contract allows. */
  memcpy(&def->host, &host, sizeof host);
  dr_graph_keep(l->g, params, g_free);
  dr_graph_keep(l->g, def, g_free);
  return def;
}

/* Copies the top graph's twins into a loop body's kernel table (same ids),
 * recursively. */
static void body_twins(const DrGraph *top, DrGraph *body) {
  for (DrId i = 0; i < body->kernels->len && i < top->kernels->len; i++)
    dr_graph_kernel(body, i)->twin = dr_graph_kernel(top, i)->twin;
  for (guint32 j = 0; j < dr_graph_n_loops(body); j++) {
    DrLoop *loop = dr_graph_loop(body, j);
    if (loop->body) body_twins(top, loop->body);
    if (loop->else_body) body_twins(top, loop->else_body);
  }
}

gboolean dr__host_libs_resolve(DrGraph *graph, DrDiags *diags) {
  guint before = dr_diags_n_errors(diags);
  Libs l = {graph, diags, g_hash_table_new(g_str_hash, g_str_equal)};
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++) {
    const DrNode *n = dr_graph_node(graph, i);
    if (n->op != DR_OP_HOST || n->callback == 0) continue;
    DrCallback *cb = &g_array_index(graph->callbacks, DrCallback, n->callback - 1);
    if (cb->lib == NULL || cb->call != NULL) continue;
    g_autofree char *what = g_strdup_printf("node '%s', fn", n->id);
    void *h = lib_open(&l, what, cb->lib, cb->path, cb->lib_loc);
    void *sym = h ? lib_symbol(&l, h, what, "symbol", cb->lib, cb->symbol, cb->symbol_loc) : NULL;
    if (sym != NULL) memcpy(&cb->call, &sym, sizeof sym);
  }
  for (DrId i = 0; i < graph->kernels->len; i++) {
    DrKernelDecl *k = dr_graph_kernel(graph, i);
    if (k->origin != DR_KERNEL_USER || k->twin_lib == NULL || k->twin != NULL) continue;
    g_autofree char *what = g_strdup_printf("kernel '%s', host_twin", k->name);
    void *h = lib_open(&l, what, k->twin_lib, k->twin_path, k->twin_lib_loc);
    void *sym = h ? lib_symbol(&l, h, what, "fn", k->twin_lib, k->twin_fn, k->twin_fn_loc) : NULL;
    if (sym != NULL) k->twin = twin_def(&l, k, sym);
  }
  for (guint32 j = 0; j < dr_graph_n_loops(graph); j++) {
    DrLoop *loop = dr_graph_loop(graph, j);
    if (loop->body) body_twins(graph, loop->body);
    if (loop->else_body) body_twins(graph, loop->else_body);
  }
  g_hash_table_unref(l.handles);
  return dr_diags_n_errors(diags) == before;
}
