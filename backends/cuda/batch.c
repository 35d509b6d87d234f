/* batch.c: streams mode's copy batches (batch.h says which copies share a
 * batch and why that keeps every DAG edge).
 *
 * Forming them is one pass over the plan's steps in issue order, O(V + E):
 * each stream keeps the batch it is building; a copy step that may join it
 * (no wait, no DAG edge from a copy already in it, room left, the last one
 * having no completion event) joins, any other step closes it (a copy then
 * starts the next). Edges are looked up through an in-edge index built
 * here, since the graph's edge order is not promised to this pass. Issuing
 * a batch reads the pointers of this iteration, splits it where two
 * copies' bytes overlap and one of them writes (O(k^2) for k <= 64 copies),
 * and makes one cudaMemcpyBatchAsync per part. This file decides nothing
 * about what runs when beyond that, and owns no CUDA handle. */
#include "backends/cuda/batch.h"

#include <string.h>

#include "backends/backend.h"

struct DrCudaBatch {
  const DrPlan *plan; /* borrowed */
  const DrGraph *graph;
  guint32 n_batches;
  guint32 *of;    /* [n_nodes]: 1 + the node's batch, 0: none */
  guint32 *first; /* [n_batches + 1]: batch i is members[first[i] .. first[i + 1]) */
  DrId *members;  /* in plan order within each batch, its head first */
  /* Scratch of the call's arrays, [n_members], at the same offsets: a
   * batch is issued by the one thread that issues its stream. */
  void **dsts;
  const void **srcs;
  size_t *sizes;
  gint refused; /* atomic: the runtime refused a batch; one call per copy from then on */
};

/* Copy node v may be in a batch at all: not a peer copy (cudaMemcpyPeerAsync
 * or staged through the host) and no pageable memory. */
static gboolean batchable(const DrGraph *g, DrId v) {
  const DrNode *n = dr_graph_node(g, v);
  return n->op == DR_OP_COPY && !dr_graph_copy_is_peer(g, v, NULL, NULL) &&
         dr_graph_copy_pageable(g, v) == DR_NONE;
}

/* The batch being built on each stream while the steps are walked. */
typedef struct {
  GArray **open;   /* [n_streams]: DrId, the copies so far */
  guint32 *tag;    /* [n_nodes]: 1 + the stream whose open batch holds it, 0: none */
  GArray *members; /* DrId, every closed batch's */
  GArray *first;   /* guint32 */
} Former;

static void close_open(Former *f, guint32 k) {
  GArray *o = f->open[k];
  for (guint32 i = 0; i < o->len; i++) f->tag[g_array_index(o, DrId, i)] = 0;
  if (o->len >= 2) {
    guint32 at = f->members->len;
    g_array_append_val(f->first, at);
    g_array_append_vals(f->members, o->data, o->len);
  }
  g_array_set_size(o, 0);
}

DrCudaBatch *dr__cuda_batch_new(const DrPlan *plan, gboolean timed) {
  g_return_val_if_fail(plan != NULL, NULL);
  const char *env = g_getenv("DAGRUN_COPY_BATCH");
  if (timed || dr_cuda_api()->cudaMemcpyBatchAsync == NULL || (env && strcmp(env, "0") == 0)) return NULL;
  const DrGraph *g = plan->graph;
  guint32 n_nodes = dr_graph_n_nodes(g), n_streams = dr_plan_n_streams(plan);
  /* In-edges of every node (CSR). */
  g_autofree guint32 *in_first = g_new0(guint32, n_nodes + 1);
  for (guint32 e = 0; e < g->edges->len; e++) in_first[dr_graph_edge(g, e)->to + 1]++;
  for (guint32 v = 0; v < n_nodes; v++) in_first[v + 1] += in_first[v];
  g_autofree DrId *in_from = g_new(DrId, MAX(g->edges->len, 1));
  g_autofree guint32 *fill = g_memdup2(in_first, sizeof(guint32) * (n_nodes + 1));
  for (guint32 e = 0; e < g->edges->len; e++) {
    const DrEdge *ed = dr_graph_edge(g, e);
    in_from[fill[ed->to]++] = ed->from;
  }

  Former f = {g_new0(GArray *, MAX(n_streams, 1)), g_new0(guint32, MAX(n_nodes, 1)),
              g_array_new(FALSE, FALSE, sizeof(DrId)), g_array_new(FALSE, FALSE, sizeof(guint32))};
  for (guint32 k = 0; k < n_streams; k++) f.open[k] = g_array_new(FALSE, FALSE, sizeof(DrId));
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    DrId v = step->node;
    guint32 k = step->stream;
    GArray *o = f.open[k];
    if (!batchable(g, v)) {
      close_open(&f, k);
      continue;
    }
    gboolean joins = o->len > 0 && o->len < DR_CUDA_BATCH_MAX && step->wait_count == 0;
    for (guint32 j = in_first[v]; joins && j < in_first[v + 1]; j++) joins = f.tag[in_from[j]] != k + 1;
    if (!joins) close_open(&f, k);
    g_array_append_val(o, v);
    f.tag[v] = k + 1;
    /* Its completion event goes after the batch: nothing may follow it. */
    if (plan->needs_event[v]) close_open(&f, k);
  }
  for (guint32 k = 0; k < n_streams; k++) {
    close_open(&f, k);
    g_array_free(f.open[k], TRUE);
  }
  g_free(f.open);
  g_free(f.tag);

  DrCudaBatch *c = NULL;
  if (f.first->len > 0) {
    c = g_new0(DrCudaBatch, 1);
    c->plan = plan;
    c->graph = g;
    c->n_batches = f.first->len;
    guint32 n_members = f.members->len;
    g_array_append_val(f.first, n_members);
    c->first = (guint32 *)(void *)g_array_free(f.first, FALSE);
    c->members = (DrId *)(void *)g_array_free(f.members, FALSE);
    c->of = g_new0(guint32, MAX(n_nodes, 1));
    for (guint32 b = 0; b < c->n_batches; b++)
      for (guint32 j = c->first[b]; j < c->first[b + 1]; j++) c->of[c->members[j]] = b + 1;
    c->dsts = g_new0(void *, n_members);
    c->srcs = g_new0(const void *, n_members);
    c->sizes = g_new0(size_t, n_members);
  } else {
    g_array_free(f.first, TRUE);
    g_array_free(f.members, TRUE);
  }
  return c;
}

void dr__cuda_batch_free(DrCudaBatch *c) {
  if (c == NULL) return;
  g_free(c->of);
  g_free(c->first);
  g_free(c->members);
  g_free(c->dsts);
  g_free(c->srcs);
  g_free(c->sizes);
  g_free(c);
}

guint32 dr__cuda_batch_count(const DrCudaBatch *c) { return c ? c->n_batches : 0; }

const DrId *dr__cuda_batch_of(const DrCudaBatch *c, DrId v, guint32 *n) {
  g_return_val_if_fail(n != NULL, NULL);
  *n = 0;
  if (c == NULL || c->of[v] == 0) return NULL;
  guint32 b = c->of[v] - 1;
  *n = c->first[b + 1] - c->first[b];
  return &c->members[c->first[b]];
}

static gboolean overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *x = a, *y = b;
  return x < y + nb && y < x + na;
}

/* One copy on its own, as memory.c issues a copy that is not a peer copy. */
static gboolean issue_one(const DrCudaBatch *c, const DrCudaApi *api, guint32 j, cudaStream_t st,
                          GError **error) {
  cudaError_t rc_;
  return DR_CUDA_HOT(api, dr__cuda_node_site(c->plan, c->members[j]), cudaMemcpyAsync, c->dsts[j], c->srcs[j],
                     c->sizes[j], cudaMemcpyDefault, st);
}

/* Enqueues the `n` copies gathered from offset `at` of the scratch. */
static gboolean flush(DrCudaBatch *c, const DrCudaApi *api, guint32 at, guint32 n, cudaStream_t st,
                      GError **error) {
  if (n == 0) return TRUE;
  if (n == 1) return issue_one(c, api, at, st, error);
  /* The stream orders the batch after what came before it on st, as it
   * would each copy: the sources are read in stream order. */
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  size_t attr_at = 0;
  cudaError_t rc =
      api->cudaMemcpyBatchAsync(c->dsts + at, c->srcs + at, c->sizes + at, n, &attr, &attr_at, 1, st);
  if (G_LIKELY(rc == cudaSuccess)) return TRUE;
  if (rc == cudaErrorNotSupported || rc == cudaErrorCallRequiresNewerDriver) {
    /* A driver without batches: clear the error, never ask again. */
    (void)api->cudaGetLastError();
    g_atomic_int_set(&c->refused, 1);
    for (guint32 j = at; j < at + n; j++)
      if (!issue_one(c, api, j, st, error)) return FALSE;
    return TRUE;
  }
  g_autofree char *what = g_strdup_printf("a batch of %u copies", n);
  DrCudaSite site = dr__cuda_node_site(c->plan, c->members[at]);
  site.what = what;
  return dr__cuda_check(rc, "cudaMemcpyBatchAsync", site, error);
}

/* Whole-run host buffer `buffer` lives in the library user's memory. */
static gboolean external_host(const DrCudaMemory *m, DrId buffer) {
  return m->external != NULL && m->external[buffer] &&
         dr_graph_buffer(m->graph, buffer)->where != DR_WHERE_DEVICE;
}

gboolean dr__cuda_batch_issue(DrCudaBatch *c, const DrCudaMemory *m, const DrCudaApi *api, DrId head,
                              cudaStream_t st, GError **error) {
  g_return_val_if_fail(c != NULL && m != NULL && c->of[head] != 0, FALSE);
  const DrGraph *g = c->graph;
  guint32 b = c->of[head] - 1, end = c->first[b + 1];
  gboolean one_by_one = g_atomic_int_get(&c->refused) || api->cudaMemcpyBatchAsync == NULL;
  guint32 at = c->first[b], n = 0; /* the part being gathered */
  for (guint32 j = c->first[b]; j < end; j++) {
    const DrAccess *src, *dst;
    dr__copy_accesses(g, dr_graph_node(g, c->members[j]), &src, &dst);
    void *to = dr__slice_ptr(g, m->bases, dst);
    const void *from = dr__slice_ptr(g, m->bases, src);
    size_t bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
    /* An empty copy goes alone, as before batches (what a batch makes of
     * a zero size is not documented), and so does one touching a host
     * buffer bound to external memory: without cudaPointerGetAttributes
     * the bind could not check that it is not pageable. */
    gboolean alone = bytes == 0 || external_host(m, src->buffer) || external_host(m, dst->buffer);
    gboolean clash = one_by_one;
    for (guint32 i = at; i < at + n && !clash; i++)
      clash = overlap(to, bytes, c->dsts[i], c->sizes[i]) || overlap(to, bytes, c->srcs[i], c->sizes[i]) ||
              overlap(from, bytes, c->dsts[i], c->sizes[i]);
    if (clash || alone) {
      if (!flush(c, api, at, n, st, error)) return FALSE;
      at += n;
      n = 0;
    }
    /* Gathered in place: slot j holds copy j, so a part is a slice. */
    c->dsts[j] = to;
    c->srcs[j] = from;
    c->sizes[j] = bytes;
    n++;
    if (alone) {
      if (!flush(c, api, at, n, st, error)) return FALSE;
      at += n;
      n = 0;
    }
  }
  return flush(c, api, at, n, st, error);
}
