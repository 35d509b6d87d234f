/* user_kernels.c: the CUDA backend's user kernels (`kernels:` in a
 * pipeline): load each one a kernel node uses, bind its arguments, launch.
 *
 * `source:` files are compiled with NVRTC for the device's compute
 * capability (sm_XY cubin), through the on-disk cache of nvrtc_cache.c
 * (a second load of unchanged source skips NVRTC), with the kernel's
 * include_dirs and defines as NVRTC options and its `name:` expression, if
 * any, registered with NVRTC (nvrtcAddNameExpression) so that the entry
 * point is the instantiation's lowered name; `ptx:`, `cubin:` and
 * `fatbin:` files are loaded as they are. Either way the code goes through cudaLibraryLoadData and the
 * entry point through cudaLibraryGetKernel, so launches are plain
 * cudaLaunchKernel calls on the node's stream that survive stream capture.
 * NVRTC is not linked: libnvrtc.so.13 is opened with dlopen on first miss,
 * so dagrun starts without it and only a pipeline with a `source:` kernel
 * fails (DR_ERROR_UNAVAILABLE) when it is missing. Loading happens at setup,
 * outside the timed region; a compile error is reported at the kernel's
 * declaration with NVRTC's log (DR_ERROR_INVALID). The host backend has no
 * twin for user kernels and refuses them (common.c). */
#include <string.h>

#include "backends/cuda/launch.h"
#include "backends/nvrtc_cache.h"
#include "ir/loops.h"

/* Compiles `src` (`len` bytes) to a cubin for sm_<cc>, through the NVRTC
 * cache; a kernel with a name expression gets its lowered name in
 * *lowered (g_free). Returns the cubin (g_free) or NULL with `error` set at
 * the declaration (NVRTC missing: no location, as it is not the file's
 * fault; a bad name expression: NVRTC's log, at the declaration). */
static char *compile_source(const DrKernelDecl *decl, const char *src, gsize len, int cc, char **lowered,
                            GError **error) {
  char arch[16];
  g_snprintf(arch, sizeof arch, "sm_%d", cc);
  char *cubin = NULL;
  gsize cubin_len = 0;
  g_autoptr(GError) local = NULL;
  g_auto(GStrv) options =
      dr__nvrtc_user_options((const char *const *)decl->include_dirs, decl->n_include_dirs,
                             (const char *const *)decl->defines, decl->n_defines);
  const char *const exprs[] = {decl->name_expr, NULL};
  g_auto(GStrv) names = NULL;
  if (dr__nvrtc_compile_cached_names(decl->source, src, len, arch, (const char *const *)options,
                                     decl->name_expr ? exprs : NULL, &names, &cubin, &cubin_len, NULL,
                                     &local)) {
    if (decl->name_expr) *lowered = g_strdup(names[0]);
    return cubin;
  }
  if (local->code == DR_ERROR_UNAVAILABLE)
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "kernel '%s': %s", decl->name, local->message);
  else
    dr_set_error_at(error, (DrErrorCode)local->code, decl->loc, "kernel '%s': %s", decl->name,
                    local->message);
  return NULL;
}

/* Loads kernel declaration `k` into l->user_lib[k]/user_fn[k]. */
static gboolean load_kernel(DrCudaLaunch *l, DrId k, int cc, GError **error) {
  const DrKernelDecl *decl = dr_graph_kernel(l->graph, k);
  const char *path = decl->source  ? decl->source
                     : decl->ptx   ? decl->ptx
                     : decl->cubin ? decl->cubin
                                   : decl->fatbin;
  if (path == NULL) {
    dr_set_error_at(error, DR_ERROR_INVALID, decl->loc, "kernel '%s' names no code", decl->name);
    return FALSE;
  }
  g_autofree char *contents = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &contents, &len, &local)) {
    dr_set_error_at(error, DR_ERROR_IO, decl->loc, "kernel '%s': %s", decl->name, local->message);
    return FALSE;
  }
  g_autofree char *cubin = NULL;
  g_autofree char *lowered = NULL;
  const void *code = contents; /* PTX text is NUL-terminated by g_file_get_contents */
  if (decl->source) {
    cubin = compile_source(decl, contents, len, cc, &lowered, error);
    if (cubin == NULL) return FALSE;
    code = cubin;
  }
  g_autofree char *what = g_strdup_printf("kernel '%s' (%s)", decl->name, path);
  DrCudaSite site = DR_SITE_SETUP(what);
  if (!DR_CUDA(site, cudaLibraryLoadData, &l->user_lib[k], code, NULL, NULL, 0, NULL, NULL, 0)) return FALSE;
  const char *entry = lowered ? lowered : decl->entry ? decl->entry : decl->name;
  if (!DR_CUDA(site, cudaLibraryGetKernel, &l->user_fn[k], l->user_lib[k], entry)) {
    if (lowered)
      g_prefix_error(error, "name '%s' (lowered '%s'): ", decl->name_expr, lowered);
    else
      g_prefix_error(error, "entry '%s': ", entry);
    return FALSE;
  }
  return TRUE;
}

/* Loads the user kernels the nodes of `g` use, and those of its loop
 * bodies (nested ones too: a body's kernel ids are the top-level graph's,
 * ir/loops.h), that are not loaded yet; *cc: the device's compute
 * capability, asked on first need (0: not yet). */
static gboolean load_used(DrCudaLaunch *l, const DrGraph *g, int device, int *cc, GError **error) {
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    const DrLoop *loop = n->loop ? dr_graph_node_loop(g, i) : NULL;
    if (loop != NULL && (!load_used(l, loop->body, device, cc, error) ||
                         (loop->else_body != NULL && !load_used(l, loop->else_body, device, cc, error))))
      return FALSE;
    if (n->op != DR_OP_KERNEL || dr_graph_kernel(g, n->kernel)->origin != DR_KERNEL_USER) continue;
    if (l->user_fn[n->kernel]) continue;
    if (*cc == 0) {
      int major = 0, minor = 0;
      DrCudaSite site = DR_SITE_SETUP("compute capability");
      if (!DR_CUDA(site, cudaDeviceGetAttribute, &major, cudaDevAttrComputeCapabilityMajor, device) ||
          !DR_CUDA(site, cudaDeviceGetAttribute, &minor, cudaDevAttrComputeCapabilityMinor, device))
        return FALSE;
      *cc = major * 10 + minor;
    }
    if (!load_kernel(l, n->kernel, *cc, error)) return FALSE;
  }
  return TRUE;
}

gboolean dr__user_kernels_load(DrCudaLaunch *l, int device, GError **error) {
  l->n_kernels = l->graph->kernels->len;
  l->user_lib = g_new0(cudaLibrary_t, MAX(l->n_kernels, 1));
  l->user_fn = g_new0(cudaKernel_t, MAX(l->n_kernels, 1));
  int cc = 0;
  return load_used(l, l->graph, device, &cc, error);
}

void dr__user_kernels_release(DrCudaLaunch *l) {
  if (l->user_lib)
    for (guint32 k = 0; k < l->n_kernels; k++)
      if (l->user_lib[k]) (void)dr_cuda_api()->cudaLibraryUnload(l->user_lib[k]);
  g_clear_pointer(&l->user_lib, g_free);
  g_clear_pointer(&l->user_fn, g_free);
}

typedef union {
  void *ptr;
  gint32 i32;
  gint64 i64;
  float f32;
  double f64;
  guint8 u8;
} ArgSlot;

static gboolean is_float(DrElemType t) { return t == DR_ELEM_F32 || t == DR_ELEM_F64; }

/* Puts scalar argument `arg` into `s`, converted to parameter type `t`. */
static void scalar_slot(const DrArg *arg, DrElemType t, ArgSlot *s) {
  double f = arg->kind == DR_ARG_FLOAT ? arg->v.f : (double)arg->v.i;
  gint64 i = arg->kind == DR_ARG_INT ? arg->v.i : (gint64)arg->v.f;
  switch (t) {
    case DR_ELEM_F32:
      s->f32 = (float)f;
      break;
    case DR_ELEM_F64:
      s->f64 = f;
      break;
    case DR_ELEM_I32:
      s->i32 = (gint32)i;
      break;
    case DR_ELEM_U8:
      s->u8 = (guint8)i;
      break;
    default:
      s->i64 = is_float(t) ? (gint64)f : i;
      break;
  }
}

/* Fills slots [np] from node `n`'s arguments (buffers: slice start, with
 * its element count in counts). */
static void bind_slots(const DrGraph *g, const DrNode *n, const DrKernelDecl *decl, void *const *bases,
                       guint32 np, ArgSlot *slots, guint64 *counts) {
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
    const DrArg *arg = dr_graph_arg(g, a);
    if (arg->param >= np) continue;
    ArgSlot *s = &slots[arg->param];
    if (arg->kind == DR_ARG_BUFFER) {
      const DrAccess *acc = dr_graph_access(g, arg->v.access);
      s->ptr = dr__slice_ptr(g, bases, acc);
      counts[arg->param] = acc->end - acc->begin;
      continue;
    }
    scalar_slot(arg, decl->params[arg->param].type, s);
  }
}

/* The threads `grid.over`'s argument asks for: a buffer's element count,
 * or a numeric scalar's value (at least 0). */
static guint64 covered(const DrParam *p, const ArgSlot *s, guint64 count) {
  if (p->is_pointer) return count;
  switch (p->type) {
    case DR_ELEM_I32:
      return (guint64)MAX(s->i32, 0);
    case DR_ELEM_I64:
      return (guint64)MAX(s->i64, 0);
    case DR_ELEM_F32:
      return (guint64)MAX(s->f32, 0);
    case DR_ELEM_F64:
      return (guint64)MAX(s->f64, 0);
    default:
      return 1;
  }
}

/* dim3 of a node's 3 extents, unset ones (0) 1; the first taken as is. */
static dim3 extents(guint32 first, const guint32 *ext) {
  dim3 d = {first, ext[1] ? ext[1] : 1, ext[2] ? ext[2] : 1};
  return d;
}

gboolean dr__user_kernel_launch(const DrCudaLaunch *l, const DrGraph *g, void *const *bases, DrId id,
                                cudaStream_t st, DrCudaSite site, GError **error) {
  const DrNode *n = dr_graph_node(g, id);
  const DrKernelDecl *decl = dr_graph_kernel(g, n->kernel);
  ArgSlot slots[64];
  void *args[64];
  guint64 counts[64] = {0};
  memset(slots, 0, sizeof slots);
  guint32 np = MIN(decl->n_params, 64);
  bind_slots(g, n, decl, bases, np, slots, counts);
  for (guint32 p = 0; p < np; p++) args[p] = &slots[p];

  guint32 block = n->block[0] ? n->block[0] : (decl->grid.block ? decl->grid.block : 256);
  dim3 blk = n->block[0] ? extents(block, n->block) : (dim3){block, 1, 1};
  dim3 grid = {1, 1, 1};
  if (n->grid[0]) {
    grid = extents(n->grid[0], n->grid);
  } else if (decl->grid.over != DR_NONE && decl->grid.over < np) {
    guint32 o = decl->grid.over;
    guint64 cover = covered(&decl->params[o], &slots[o], counts[o]);
    grid.x = (unsigned)CLAMP((cover + block - 1) / block, 1, G_MAXINT32);
  }
  cudaError_t rc =
      dr_cuda_api()->cudaLaunchKernel((const void *)l->user_fn[n->kernel], grid, blk, args, n->shared, st);
  if (rc == cudaSuccess) return TRUE; /* the hot path: nothing to format */
  g_autofree char *what = g_strdup_printf("kernel launch (%s)", decl->name);
  return dr__cuda_check(rc, what, site, error);
}
