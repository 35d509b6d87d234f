/* checks.c: the up-front checks that need a kernel's definition or the
 * file system (checks.h): kernel shape rules over bound arguments and
 * `init: {file:}` files. Glue between the IR and kernels/: the rules
 * themselves are the kernels' own checks (kernels/checks.c), the wording
 * of each refusal theirs. */
#include "lib/checks.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/loops.h"
#include "kernels/registry.h"

const DrKernelDef *dr__kernel_decl_def(const DrKernelDecl *decl) {
  if (decl->api_def) return decl->api_def;
  if (decl->origin == DR_KERNEL_BUILTIN && decl->builtin_index < (guint32)dr_kernel_registry_len)
    return &dr_kernel_registry[decl->builtin_index];
  return NULL;
}

/* The parameter whose name starts `msg` (followed by a character that
 * cannot continue a name), or -1. */
static int blamed_param(const DrKernelDef *def, const char *msg) {
  for (int i = 0; i < def->n_params; i++) {
    const char *name = def->params[i].name;
    size_t n = strlen(name);
    if (n > 0 && strncmp(msg, name, n) == 0 && !g_ascii_isalnum(msg[n]) && msg[n] != '_') return i;
  }
  return -1;
}

gboolean dr__kernel_check_call(const DrKernelDef *def, const char *what, const guint64 *counts,
                               const DrKValue *vals, const DrLoc *locs, DrLoc at, DrDiags *diags) {
  if (def == NULL || def->check == NULL) return TRUE;
  char msg[DR_KERR_SIZE] = {0};
  if (def->check((const uint64_t *)counts, vals, msg) == 0) return TRUE;
  msg[DR_KERR_SIZE - 1] = '\0';
  int p = blamed_param(def, msg);
  DrLoc loc = p >= 0 && locs[p].file != NULL ? locs[p] : at;
  dr_diags_error(diags, loc, "%s: kernel '%s': %s", what, def->name, msg[0] ? msg : "arguments refused");
  return FALSE;
}

/* One kernel node's shape rule over its committed arguments. */
static gboolean check_kernel_node(const DrGraph *g, const DrNode *n, DrDiags *diags) {
  const DrKernelDef *def = dr__kernel_decl_def(dr_graph_kernel(g, n->kernel));
  if (def == NULL || def->check == NULL || def->n_params > 64) return TRUE;
  guint64 counts[64] = {0};
  DrKValue vals[64] = {{0}};
  DrLoc locs[64] = {{0}};
  for (guint32 k = 0; k < n->arg_count; k++) {
    const DrArg *a = dr_graph_arg(g, n->arg_first + k);
    if (a->param >= (guint32)def->n_params) continue;
    locs[a->param] = a->loc;
    if (a->kind == DR_ARG_INT) {
      vals[a->param].i = a->v.i;
    } else if (a->kind == DR_ARG_FLOAT) {
      vals[a->param].f = a->v.f;
    } else if (a->kind == DR_ARG_BUFFER) {
      const DrAccess *acc = dr_graph_access(g, a->v.access);
      counts[a->param] = acc->end - acc->begin;
    }
  }
  g_autofree char *what = g_strdup_printf("node '%s'", n->id);
  return dr__kernel_check_call(def, what, counts, vals, locs, n->loc, diags);
}

/* A whole-run buffer's init file: there, a regular file we may read, and
 * exactly the buffer's size. */
static gboolean check_init_file(const DrBuffer *b, DrDiags *diags) {
  DrLoc at = b->init_loc.file != NULL ? b->init_loc : b->loc;
  const char *path = b->init_path;
  GStatBuf st;
  int err = 0;
  if (g_stat(path, &st) != 0)
    err = errno;
  else if (S_ISDIR(st.st_mode))
    err = EISDIR;
  else if (g_access(path, R_OK) != 0)
    err = errno;
  if (err != 0) {
    dr_diags_error(diags, at, "buffer '%s', key 'init': cannot read init file '%s': %s", b->name, path,
                   g_strerror(err));
    return FALSE;
  }
  if (!S_ISREG(st.st_mode)) {
    dr_diags_error(diags, at, "buffer '%s', key 'init': init file '%s' is not a regular file", b->name, path);
    return FALSE;
  }
  guint64 want = dr_buffer_bytes(b);
  if ((guint64)st.st_size != want) {
    dr_diags_error(diags, at,
                   "buffer '%s', key 'init': init file '%s' holds %" G_GUINT64_FORMAT
                   " bytes; the buffer holds %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " %s elements)",
                   b->name, path, (guint64)st.st_size, want, b->count, dr_elem_name(b->type));
    return FALSE;
  }
  return TRUE;
}

/* The kernel shape rules of `graph`'s kernel nodes and, through its loops
 * and conditionals, of every body's (nested bodies too). */
static void check_kernel_nodes(const DrGraph *graph, DrDiags *diags) {
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++) {
    const DrNode *n = dr_graph_node(graph, i);
    if (n->op == DR_OP_KERNEL && n->kernel != DR_NONE) check_kernel_node(graph, n, diags);
  }
  for (guint32 l = 0; l < dr_graph_n_loops(graph); l++) {
    const DrLoop *loop = dr_graph_loop(graph, l);
    if (loop->body) check_kernel_nodes(loop->body, diags);
    if (loop->else_body) check_kernel_nodes(loop->else_body, diags);
  }
}

/* Parameter buffers (`param:`) are dagrun's to write, before a run: no
 * node of `g` (or of its bodies) writes one, and none is allocated by a
 * node (it keeps the value between runs). `top` names the parameters. */
static void check_param_buffers(const DrGraph *top, const DrGraph *g, DrDiags *diags) {
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    for (guint32 k = 0; k < n->access_count; k++) {
      const DrAccess *a = dr_graph_access(g, n->access_first + k);
      const DrBuffer *b = dr_graph_buffer(g, a->buffer);
      if (b->param == 0) continue;
      const char *param = g_array_index(top->params, DrRunParam, b->param - 1).name;
      if (a->mode != DR_ACCESS_READ && n->op != DR_OP_ALLOC && n->op != DR_OP_FREE)
        dr_diags_error(diags, a->loc,
                       "node '%s' writes buffer '%s', which holds run-time parameter '%s' (dagrun writes it "
                       "before each run): nodes only read it",
                       n->id, b->name, param);
    }
  }
  for (guint32 l = 0; l < dr_graph_n_loops(g); l++) {
    const DrLoop *loop = dr_graph_loop(g, l);
    if (loop->body) check_param_buffers(top, loop->body, diags);
    if (loop->else_body) check_param_buffers(top, loop->else_body, diags);
  }
}

gboolean dr__pipeline_checks(const DrGraph *graph, DrDiags *diags) {
  guint before = dr_diags_n_errors(diags);
  check_kernel_nodes(graph, diags);
  check_param_buffers(graph, graph, diags);
  for (DrId i = 0; i < dr_graph_n_buffers(graph); i++) {
    const DrBuffer *b = dr_graph_buffer(graph, i);
    if (b->param == 0 || b->alloc_node == DR_NONE) continue;
    const DrNode *n = dr_graph_node(graph, b->alloc_node);
    dr_diags_error(
        diags, n->loc,
        "node '%s': buffer '%s' holds run-time parameter '%s' for the whole run; no node allocates "
        "or frees it",
        n->id, b->name, g_array_index(graph->params, DrRunParam, b->param - 1).name);
  }
  for (DrId i = 0; i < dr_graph_n_buffers(graph); i++) {
    const DrBuffer *b = dr_graph_buffer(graph, i);
    if (b->init == DR_INIT_FILE && b->init_path != NULL) check_init_file(b, diags);
  }
  return dr_diags_n_errors(diags) == before;
}
