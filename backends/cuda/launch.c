/* launch.c: the CUDA backend's launches and their binding: per-node
 * scratch and per-stream cuBLAS contexts made at setup, every built-in
 * kernel node's launch bound once (so that issuing one is a launch and
 * nothing else), programmatic dependent launch where the stream allows it,
 * and host functions through cudaLaunchHostFunc.
 *
 * A binding is complete but for the pointers into stream-ordered buffers,
 * which exist only from their alloc node on: each such argument is a patch,
 * refreshed from the bases right before the launch (dr__cuda_launch_kernel,
 * launch.h). Bindings are made again when scalar arguments change (a
 * session) and at every capture. User kernels are loaded and launched by
 * user_kernels.c. This file does not decide when a node runs (issue.c). */
#include <string.h>

#include "backends/cuda/launch.h"

#include "backends/cuda/loops.h"
#include "ir/loops.h"

const DrKernelDef *dr__cuda_kernel_def(const DrGraph *g, DrId id) {
  const DrKernelDecl *decl = dr_graph_kernel(g, dr_graph_node(g, id)->kernel);
  if (decl->api_def != NULL) return decl->api_def; /* registered through the C API */
  if (decl->origin != DR_KERNEL_BUILTIN || decl->builtin_index >= (guint32)dr_kernel_registry_len)
    return NULL;
  return &dr_kernel_registry[decl->builtin_index];
}

gboolean dr__cuda_self_stamping(const DrGraph *g, DrId id) {
  if (dr_graph_node(g, id)->op != DR_OP_KERNEL) return FALSE;
  const DrKernelDef *def = dr__cuda_kernel_def(g, id);
  return def != NULL && (def->flags & DR_KFLAG_STAMPS) != 0;
}

void dr__cuda_launch_open(DrCudaLaunch *l, const DrPlan *plan) {
  l->plan = plan;
  l->graph = plan->graph;
  l->n_nodes = dr_graph_n_nodes(plan->graph);
  l->n_streams = dr_plan_n_streams(plan);
  l->hcalls = g_new0(DrHostCall, MAX(l->n_nodes, 1));
  l->scratch = g_new0(void *, MAX(l->n_nodes, 1));
  l->blas = g_new0(DrKBlas *, MAX(l->n_streams, 1));
  l->blas_ws = g_new0(void *, MAX(l->n_streams, 1));
  l->node_kcall = g_new(guint32, MAX(l->n_nodes, 1));
  for (guint32 i = 0; i < l->n_nodes; i++) l->node_kcall[i] = DR_NONE;
}

DrKBlas *dr__cuda_blas_new(void *ws, guint64 bytes, char *err) {
  const DrCudaApi *api = dr_cuda_api();
  return api->blas_new ? api->blas_new(ws, bytes, err) : dr_kblas_new_with_workspace(ws, bytes, err);
}

int dr__cuda_blas_bind(DrKBlas *blas, cudaStream_t stream, char *err) {
  const DrCudaApi *api = dr_cuda_api();
  return api->blas_bind ? api->blas_bind(blas, stream, err) : dr_kblas_bind(blas, stream, err);
}

void dr__cuda_blas_free(DrKBlas *blas) {
  const DrCudaApi *api = dr_cuda_api();
  if (api->blas_free)
    api->blas_free(blas);
  else
    dr_kblas_free(blas);
}

const char *dr__cuda_blas_last_error(const DrKBlas *blas) {
  const DrCudaApi *api = dr_cuda_api();
  return api->blas_last_error ? api->blas_last_error(blas) : dr_kblas_last_error(blas);
}

gboolean dr__cuda_blas_make(DrKBlas **blas, void **ws, cudaStream_t stream, DrCudaSite site, GError **error) {
  if (*blas != NULL) return TRUE;
  if (*ws == NULL && !DR_CUDA(site, cudaMalloc, ws, DR_KBLAS_DEFAULT_WORKSPACE)) return FALSE;
  char err[256] = {0};
  *blas = dr__cuda_blas_new(*ws, DR_KBLAS_DEFAULT_WORKSPACE, err);
  if (*blas == NULL || dr__cuda_blas_bind(*blas, stream, err) != 0) {
    if (site.stream >= 0)
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %" G_GINT64_FORMAT "): cuBLAS: %s",
                  site.node, site.stream, err);
    else
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': cuBLAS: %s", site.node, err);
    return FALSE;
  }
  return TRUE;
}

/* Per-node scratch and the node's stream's cuBLAS context, made before the
 * timed region and before any capture. A loop node's stream gets a cuBLAS
 * context too when its body (nested ones included) holds a gemm: streams
 * mode, and graph mode's unrolled repeat, issue the body there. */
static gboolean kernel_resources(DrCudaLaunch *l, const DrCudaStreams *s, DrId id, GError **error) {
  const DrNode *n = dr_graph_node(l->graph, id);
  const DrKernelDef *def = n->op == DR_OP_KERNEL ? dr__cuda_kernel_def(l->graph, id) : NULL;
  const DrLoop *loop = n->loop ? dr_graph_node_loop(l->graph, id) : NULL;
  gboolean blas =
      def != NULL ? (def->flags & DR_KFLAG_BLAS) != 0 : loop != NULL && dr__cuda_loop_has_blas(loop);
  if (def == NULL && !blas) return TRUE;
  guint32 k = l->plan->node_stream[id];
  DrCudaSite site = DR_SITE_NODE(n->id, k);
  /* On the node's device: its scratch, and its stream's cuBLAS context. */
  if (!dr__cuda_streams_use(s, k, error)) return FALSE;
  if (def != NULL && def->scratch_bytes && !DR_CUDA(site, cudaMalloc, &l->scratch[id], def->scratch_bytes))
    return FALSE;
  return !blas || dr__cuda_blas_make(&l->blas[k], &l->blas_ws[k], s->stream[k], site, error);
}

gboolean dr__cuda_launch_setup(DrCudaLaunch *l, const DrCudaStreams *s, const DrCudaMemory *m,
                               FILE *host_output, GError **error) {
  const DrGraph *g = l->graph;
  for (DrId i = 0; i < l->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op == DR_OP_HOST) dr__host_call_bind(g, i, m->bases, host_output, &l->hcalls[i]);
    if ((n->op == DR_OP_KERNEL || n->loop) && !kernel_resources(l, s, i, error)) return FALSE;
  }
  g_free(l->host_fns);
  l->host_fns = g_new(guint32, MAX(l->n_nodes, 1));
  l->n_host_fns = 0;
  for (DrId i = 0; i < l->n_nodes; i++)
    if (l->hcalls[i].fn != NULL) l->host_fns[l->n_host_fns++] = i;
  /* User kernels are loaded once (cudaLibraryLoadData: context-independent,
   * launched on whichever device is selected) for the first device's
   * compute capability. */
  return dr__cuda_streams_use_device(s, 0, error) && dr__user_kernels_load(l, s->devices[0].ordinal, error);
}

/* Which built-in kernel nodes may launch early with programmatic dependent
 * launch (DrKLaunch.pdl): those whose stream's previous operation in the
 * iteration is another built-in's kernel, with nothing in between: the
 * node waits on no other stream, the previous node records no completion
 * event and is not a cuBLAS call. The launch latency then overlaps the
 * previous kernel (on the H200 a queued eager launch starts ~3 µs after
 * its predecessor ends, against ~0.8 µs in a graph). In a capture the same
 * launches become programmatic edges (graph.c, graph_bind). NULL when none
 * may: `early` FALSE (events timing; graph mode unless DAGRUN_GRAPH_PDL),
 * or DAGRUN_PDL=0 in the environment (for A/B measurements). */
static gboolean *early_launches(const DrCudaLaunch *l, const DrCudaStreams *s, gboolean early) {
  const char *env = g_getenv("DAGRUN_PDL");
  if (!early || (env && strcmp(env, "0") == 0)) return NULL;
  const DrPlan *p = l->plan;
  const DrGraph *g = l->graph;
  gboolean *ok = g_new0(gboolean, MAX(l->n_nodes, 1));
  for (guint32 i = 0; i < p->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(p, i);
    DrId v = step->node, u = s->prev_on_stream[v];
    if (u == DR_NONE || step->wait_count > 0 || p->needs_event[u]) continue;
    const DrKernelDef *du = dr__cuda_self_stamping(g, u) ? dr__cuda_kernel_def(g, u) : NULL;
    const DrKernelDef *dv = dr_graph_node(g, v)->op == DR_OP_KERNEL ? dr__cuda_kernel_def(g, v) : NULL;
    /* Built-ins end with their own kernel (self-stamping ones: all but
     * the cuBLAS calls); v must be a built-in too (it waits first). */
    ok[v] = du != NULL && dv != NULL && dr_graph_kernel(g, dr_graph_node(g, v)->kernel)->api_def == NULL &&
            dr_graph_kernel(g, dr_graph_node(g, u)->kernel)->api_def == NULL;
  }
  return ok;
}

/* Node `n` is a built-in kernel: bound at setup, not launched from its
 * arguments at each issue. */
static gboolean is_bound(const DrGraph *g, const DrNode *n) {
  return n->op == DR_OP_KERNEL && dr_graph_kernel(g, n->kernel)->origin != DR_KERNEL_USER;
}

/* Whether argument `arg` of bound kernel `k` is a pointer into a
 * stream-ordered buffer, a patch: then its slot, buffer and byte offset
 * in *p. A whole-run buffer's pointer is final. */
static gboolean patch_of(const DrGraph *g, DrBoundKernel *k, const DrArg *arg, DrKPatch *p) {
  if (arg->kind != DR_ARG_BUFFER || arg->param >= (guint32)k->call.def->n_params) return FALSE;
  const DrAccess *acc = dr_graph_access(g, arg->v.access);
  const DrBuffer *buf = dr_graph_buffer(g, acc->buffer);
  if (buf->alloc_node == DR_NONE) return FALSE;
  *p = (DrKPatch){&k->call.args[arg->param], acc->buffer, acc->begin * (guint64)dr_elem_size(buf->type)};
  return TRUE;
}

/* Records the pointer arguments of bound kernel `k` (node `n`) into
 * stream-ordered buffers as patches. */
static void add_patches(DrCudaLaunch *l, const DrNode *n, DrBoundKernel *k) {
  k->patch_first = l->n_patches;
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++)
    if (patch_of(l->graph, k, dr_graph_arg(l->graph, a), &l->patches[l->n_patches])) l->n_patches++;
  k->patch_count = l->n_patches - k->patch_first;
}

gboolean dr__cuda_launch_bind(DrCudaLaunch *l, const DrCudaStreams *s, const DrCudaMemory *m,
                              const DrCudaBindHow *how, GError **error) {
  const DrGraph *g = l->graph;
  g_clear_pointer(&l->kcalls, g_free);
  g_clear_pointer(&l->patches, g_free);
  l->n_kcalls = l->n_patches = 0;
  guint32 n_calls = 0, n_patches = 0;
  for (DrId i = 0; i < l->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    l->node_kcall[i] = DR_NONE;
    if (!is_bound(g, n)) continue;
    n_calls++;
    n_patches += n->arg_count;
  }
  l->kcalls = g_new0(DrBoundKernel, MAX(n_calls, 1));
  l->patches = g_new0(DrKPatch, MAX(n_patches, 1));
  g_autofree gboolean *pdl = early_launches(l, s, how->early);
  for (DrId i = 0; i < l->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (!is_bound(g, n)) continue;
    DrBoundKernel *k = &l->kcalls[l->n_kcalls];
    if (!dr__kernel_call_bind(g, i, m->bases, &k->call, error) ||
        (l->words != NULL && !dr__cuda_devwords_widen(l->words, i, &k->call, error)))
      return FALSE;
    guint32 st = l->plan->node_stream[i];
    DrKLaunch *kl = &k->call.launch;
    kl->stream = s->stream[st];
    kl->blas = (k->call.def->flags & DR_KFLAG_BLAS) ? l->blas[st] : NULL;
    kl->scratch = l->scratch[i];
    kl->stamp = how->stamps && (k->call.def->flags & DR_KFLAG_STAMPS) ? (void *)&how->stamps[i] : NULL;
    kl->pdl = pdl != NULL && pdl[i];
    add_patches(l, n, k);
    l->node_kcall[i] = l->n_kcalls++;
  }
  return TRUE;
}

gboolean dr__cuda_launch_rebind(DrCudaLaunch *l, const DrCudaMemory *m, const DrId *nodes, guint32 n,
                                GError **error) {
  const DrGraph *g = l->graph;
  /* All bound first, aside, so that a failure changes nothing. */
  g_autofree DrKernelCall *fresh = g_new(DrKernelCall, MAX(n, 1));
  for (guint32 i = 0; i < n; i++)
    if (nodes[i] < l->n_nodes && l->node_kcall[nodes[i]] != DR_NONE &&
        (!dr__kernel_call_bind(g, nodes[i], m->bases, &fresh[i], error) ||
         (l->words != NULL && !dr__cuda_devwords_widen(l->words, nodes[i], &fresh[i], error))))
      return FALSE;
  for (guint32 i = 0; i < n; i++) {
    DrId v = nodes[i];
    if (v >= l->n_nodes || l->node_kcall[v] == DR_NONE) continue;
    DrBoundKernel *k = &l->kcalls[l->node_kcall[v]];
    DrKLaunch keep = k->call.launch;
    k->call = fresh[i];
    DrKLaunch *kl = &k->call.launch;
    kl->args = k->call.args; /* its own arrays, not the copy's */
    kl->counts = k->call.counts;
    kl->stream = keep.stream;
    kl->blas = keep.blas;
    kl->scratch = keep.scratch;
    kl->stamp = keep.stamp;
    kl->pdl = keep.pdl;
    kl->guard = keep.guard;
    kl->guard_runs = keep.guard_runs;
    /* The same pointer arguments in the same order: only the offsets of
     * the patches into stream-ordered buffers can have moved. */
    const DrNode *node = dr_graph_node(g, v);
    guint32 j = k->patch_first;
    for (guint32 a = node->arg_first; a < node->arg_first + node->arg_count; a++)
      if (patch_of(g, k, dr_graph_arg(g, a), &l->patches[j])) j++;
  }
  return TRUE;
}

gboolean dr__cuda_launch_scalars_same(const DrCudaLaunch *l, const DrCudaMemory *m, DrId v) {
  if (v >= l->n_nodes || l->node_kcall[v] == DR_NONE) return FALSE;
  const DrKernelCall *bound = &l->kcalls[l->node_kcall[v]].call;
  DrKernelCall fresh;
  if (!dr__kernel_call_bind(l->graph, v, m->bases, &fresh, NULL)) return FALSE;
  for (int i = 0; i < bound->def->n_params; i++)
    if (!bound->def->params[i].is_pointer &&
        memcmp(&fresh.args[i], &bound->args[i], sizeof fresh.args[i]) != 0)
      return FALSE;
  return TRUE;
}

gboolean dr__cuda_launch_probe(const DrCudaLaunch *l, const DrCudaMemory *m, GError **error) {
  DrKernelCall probe;
  for (DrId i = 0; i < l->n_nodes; i++)
    if (l->node_kcall[i] != DR_NONE && !dr__kernel_call_bind(l->graph, i, m->bases, &probe, error))
      return FALSE;
  return TRUE;
}

gboolean dr__cuda_launch_failed(const DrBoundKernel *k, int rc, DrCudaSite site, GError **error) {
  const DrKLaunch *l = &k->call.launch;
  const char *blas_err = l->blas ? dr__cuda_blas_last_error(l->blas) : "";
  g_autofree char *what =
      g_strdup_printf("kernel launch (%s%s%s)", k->call.def->name, blas_err[0] ? ": " : "", blas_err);
  return dr__cuda_check((cudaError_t)rc, what, site, error);
}

static void CUDART_CB host_trampoline(void *data) {
  /* Runs on a CUDA-owned thread: must not call CUDA. A host function's
   * failure cannot stop the stream from here: it is recorded in its
   * DrHostFnBound and reported after the iteration
   * (dr__cuda_launch_host_failed). */
  (void)dr__host_call_run(data);
}

gboolean dr__cuda_launch_host_failed(const DrCudaLaunch *l, GError **error) {
  for (guint32 k = 0; k < l->n_host_fns; k++) {
    const DrHostCall *c = &l->hcalls[l->host_fns[k]];
    if (!g_atomic_int_get(&c->fn->failed)) continue;
    const DrNode *n = dr_graph_node(l->graph, l->host_fns[k]);
    const char *symbol = g_array_index(l->graph->callbacks, DrCallback, n->callback - 1).symbol;
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %u): host function%s%s%s failed: %s",
                n->id, l->plan->node_stream[l->host_fns[k]], symbol ? " '" : "", symbol ? symbol : "",
                symbol ? "'" : "", c->fn->err);
    return FALSE;
  }
  return TRUE;
}

void dr__cuda_launch_rebind_hosts(DrCudaLaunch *l, const DrCudaMemory *m) {
  for (DrId i = 0; i < l->n_nodes; i++)
    if (dr_graph_node(l->graph, i)->op == DR_OP_HOST)
      dr__host_call_bind(l->graph, i, m->bases, l->hcalls[i].out, &l->hcalls[i]);
}

gboolean dr__cuda_launch_host(DrCudaLaunch *l, DrId id, cudaStream_t st, DrCudaSite site, GError **error) {
  return DR_CUDA(site, cudaLaunchHostFunc, st, host_trampoline, &l->hcalls[id]);
}

void dr__cuda_launch_close(DrCudaLaunch *l) {
  const DrCudaApi *api = dr_cuda_api();
  if (l->blas)
    for (guint32 k = 0; k < l->n_streams; k++)
      if (l->blas[k]) dr__cuda_blas_free(l->blas[k]);
  /* After the handles that use them. */
  if (l->blas_ws)
    for (guint32 k = 0; k < l->n_streams; k++)
      if (l->blas_ws[k]) (void)api->cudaFree(l->blas_ws[k]);
  if (l->scratch)
    for (guint32 i = 0; i < l->n_nodes; i++)
      if (l->scratch[i]) (void)api->cudaFree(l->scratch[i]);
  dr__user_kernels_release(l);
  dr__host_calls_free(l->hcalls, l->n_nodes);
  g_free(l->hcalls);
  g_free(l->host_fns);
  g_free(l->scratch);
  g_free(l->blas);
  g_free(l->blas_ws);
  g_free(l->kcalls);
  g_free(l->node_kcall);
  g_free(l->patches);
  memset(l, 0, sizeof *l);
}
