/* devwords.c: graph mode's run-time parameters kept in device memory
 * (devwords.h): which nodes read their counts from words, their launch at
 * the largest counts, and the store that writes new counts.
 *
 * Why: a node set on the executable costs the host 2-5 µs
 * (cudaGraphExecKernelNodeSetParams, BENCHMARKS.md §16), one per changed
 * node; the words of every such node of a change are written by one small
 * kernel launch whose arguments carry the values (stamp.cu's word store),
 * so a change costs one launch however many element-wise nodes it
 * reaches, and like a node set it needs no wait for the iterations in
 * flight (the store is stream ordered on origin, after them). The price
 * is on the device: such a node is launched in the shape of its largest
 * counts, its surplus threads finding no element (BENCHMARKS.md §18
 * measures both ways). Only nodes whose slices keep their start are
 * chosen: a pointer argument is fixed in the captured node, a count is
 * not. */
#include "backends/cuda/devwords.h"

#include <string.h>

#include "backends/cuda/launch.h"

/* The parameter use of access `a` of node v, or NULL: none. */
static const DrParamUse *use_of(const DrGraph *g, DrId v, guint32 a) {
  for (guint i = 0; i < g->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    if (u->node == v && u->kind == DR_PARAM_USE_ACCESS && u->index == a) return u;
  }
  return NULL;
}

/* Which nodes read words (DAGRUN_GRAPH_DEVICE_PARAMS): none (unset, the
 * default, or "0"), every one that can ("1"), or ("auto") those whose
 * slices' lengths vary at most twofold, so that a launch shaped for the
 * largest carries at most as many surplus blocks as live ones. Measured
 * (BENCHMARKS.md §18): 32 chained element-wise nodes took 16-17 µs of
 * host time a change reading words against 41-54 setting nodes (H100),
 * and their steps 2.5 µs longer at the largest length (the count's load)
 * and up to 8 µs at the smallest (surplus blocks): words pay where a
 * node changes every few steps and the host waits for each step, not in
 * a sweep of many steps a length or a loop that queues its steps. So the
 * default keeps every node on the executable. */
typedef enum { WORDS_NONE, WORDS_AUTO, WORDS_ALL } WordsRule;

static WordsRule words_rule(void) {
  const char *sw = g_getenv("DAGRUN_GRAPH_DEVICE_PARAMS");
  if (sw != NULL && strcmp(sw, "1") == 0) return WORDS_ALL;
  if (sw != NULL && strcmp(sw, "auto") == 0) return WORDS_AUTO;
  return WORDS_NONE;
}

/* Whether node v may read its counts from words: a built-in that can, on
 * the first device, whose run-time parameters reach only the ends of its
 * slices (each with a fixed start), and under WORDS_AUTO whose slices'
 * lengths vary at most twofold. */
static gboolean candidate(const DrGraph *g, const DrPlan *plan, const DrCudaStreams *s, DrId v,
                          WordsRule rule) {
  const DrNode *n = dr_graph_node(g, v);
  if (n->op != DR_OP_KERNEL || n->loop) return FALSE;
  const DrKernelDef *def = dr__kernel_def_of(g, v);
  if (def == NULL || !(def->flags & DR_KFLAG_DEVICE_COUNTS)) return FALSE;
  if (s->stream_device[plan->node_stream[v]] != 0) return FALSE;
  guint uses = 0;
  for (guint i = 0; i < g->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    if (u->node != v) continue;
    if (u->kind != DR_PARAM_USE_ACCESS || !u->fixed_begin || u->hull_end == 0) return FALSE;
    if (rule == WORDS_AUTO && u->hull_end - u->hull_begin > 2 * (u->least_end - u->hull_begin)) return FALSE;
    uses++;
  }
  return uses > 0;
}

/* The counts node v's launch works on with the graph's values now
 * (`out`, indexed like its kernel's parameters; scalars 0). */
static void counts_now(const DrGraph *g, DrId v, guint64 *out, guint32 n_params) {
  const DrNode *n = dr_graph_node(g, v);
  memset(out, 0, n_params * sizeof *out);
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *arg = dr_graph_arg(g, i);
    if (arg->kind != DR_ARG_BUFFER || arg->param >= n_params) continue;
    const DrAccess *a = dr_graph_access(g, arg->v.access);
    out[arg->param] = a->end - a->begin;
  }
}

gboolean dr__cuda_devwords_open(DrCudaDevWords *w, const DrGraph *g, const DrPlan *plan,
                                const DrCudaStreams *s, void *const *bases, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  dr__cuda_devwords_close(w);
  w->graph = g;
  w->n_nodes = dr_graph_n_nodes(g);
  WordsRule rule = words_rule();
  if (api->words_launch == NULL || g->param_uses->len == 0 || rule == WORDS_NONE) return TRUE;
  g_autofree guint32 *first = g_new(guint32, MAX(w->n_nodes, 1));
  guint32 n_words = 0;
  for (DrId v = 0; v < w->n_nodes; v++) {
    first[v] = DR_NONE;
    if (!candidate(g, plan, s, v, rule)) continue;
    /* Its launch at the largest counts must pass its check. */
    DrKernelCall call;
    g_autoptr(GError) refused = NULL;
    DrCudaDevWords probe = {.graph = g, .first = first, .n_nodes = w->n_nodes};
    first[v] = n_words;
    if (!dr__kernel_call_bind(g, v, bases, &call, &refused) ||
        !dr__cuda_devwords_widen(&probe, v, &call, &refused)) {
      g_debug("graph capture: node '%s' sets its counts on the executable: %s", dr_graph_node(g, v)->id,
              refused->message);
      first[v] = DR_NONE;
      continue;
    }
    n_words += (guint32)call.def->n_params;
  }
  if (n_words == 0) return TRUE;
  DrCudaSite site = DR_SITE_SETUP("the device words of run-time parameters");
  if (!DR_CUDA(site, cudaMalloc, (void **)&w->words, n_words * sizeof *w->words)) return FALSE;
  w->first = g_steal_pointer(&first);
  w->n_words = n_words;
  w->held = g_new(guint64, n_words);
  for (guint32 i = 0; i < n_words; i++) w->held[i] = G_MAXUINT64; /* nothing written yet */
  /* Every word, once: the counts now. */
  return dr__cuda_devwords_write(w, NULL, 0, s->origin, error);
}

gboolean dr__cuda_devwords_reads(const DrCudaDevWords *w, DrId v) {
  return w->first != NULL && v < w->n_nodes && w->first[v] != DR_NONE;
}

gboolean dr__cuda_devwords_widen(const DrCudaDevWords *w, DrId v, DrKernelCall *call, GError **error) {
  if (!dr__cuda_devwords_reads(w, v)) return TRUE;
  const DrGraph *g = w->graph;
  const DrNode *n = dr_graph_node(g, v);
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *arg = dr_graph_arg(g, i);
    if (arg->kind != DR_ARG_BUFFER || arg->param >= (guint32)call->def->n_params) continue;
    const DrParamUse *u = use_of(g, v, arg->v.access);
    if (u != NULL) call->counts[arg->param] = u->hull_end - u->hull_begin;
  }
  if (!dr__kernel_call_reshape(g, v, call, error)) return FALSE;
  call->launch.counts_dev = w->words != NULL ? (const uint64_t *)(w->words + w->first[v]) : NULL;
  return TRUE;
}

gboolean dr__cuda_devwords_write(DrCudaDevWords *w, const DrId *nodes, guint32 n, cudaStream_t stream,
                                 GError **error) {
  w->last_reads = 0;
  if (w->first == NULL) return TRUE;
  g_autoptr(GArray) dst = g_array_new(FALSE, FALSE, sizeof(unsigned long long *));
  g_autoptr(GArray) value = g_array_new(FALSE, FALSE, sizeof(unsigned long long));
  guint64 counts[G_N_ELEMENTS(((DrKernelCall *)NULL)->counts)];
  const DrGraph *g = w->graph;
  guint32 m = nodes != NULL ? n : w->n_nodes;
  for (guint32 i = 0; i < m; i++) {
    DrId v = nodes != NULL ? nodes[i] : i;
    if (!dr__cuda_devwords_reads(w, v)) continue;
    w->last_reads++;
    guint32 np = (guint32)dr__kernel_def_of(g, v)->n_params;
    counts_now(g, v, counts, np);
    for (guint32 p = 0; p < np; p++) {
      unsigned long long c = counts[p], *to = w->words + w->first[v] + p;
      if (w->held[w->first[v] + p] == c) continue;
      g_array_append_val(dst, to);
      g_array_append_val(value, c);
    }
  }
  if (dst->len == 0) return TRUE;
  const DrCudaApi *api = dr_cuda_api();
  int rc = api->words_launch((unsigned long long *const *)(void *)dst->data,
                             (const unsigned long long *)(void *)value->data, dst->len, stream);
  if (!dr__cuda_check((cudaError_t)rc, "the store of run-time parameters' device words",
                      DR_SITE_SETUP("graph update"), error))
    return FALSE;
  for (guint i = 0; i < dst->len; i++)
    w->held[g_array_index(dst, unsigned long long *, i) - w->words] =
        g_array_index(value, unsigned long long, i);
  return TRUE;
}

void dr__cuda_devwords_close(DrCudaDevWords *w) {
  if (w->words != NULL) (void)dr_cuda_api()->cudaFree(w->words);
  g_free(w->first);
  g_free(w->held);
  memset(w, 0, sizeof *w);
}
