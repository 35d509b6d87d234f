/* graph_cache.c: graph mode's bounded LRU cache of instantiated
 * executables (`run.graph_cache`), the data structure of graph_cache.h:
 * keys, the idle variants, what each must set when it is back in use, and
 * eviction. It makes no capture and no node update (graph.c does); the
 * only CUDA calls are the destruction of evicted variants. Cost: a key is
 * O(nodes + their accesses and arguments), made once per forced change
 * (which costs a capture anyway, or saves one); a lookup compares it with
 * at most cap - 1 keys. */
#include "backends/cuda/graph_cache.h"

#include <string.h>

#include "backends/cuda/loops.h"
#include "ir/loops.h"

static const char *const result_names[] = {
#define DR_X(e, s) s,
    DR_GRAPH_CACHE_RESULT_LIST(DR_X)
#undef DR_X
};

const char *dr__graph_cache_result_name(DrGraphCacheResult r) {
  g_return_val_if_fail((guint)r < G_N_ELEMENTS(result_names), NULL);
  return result_names[r];
}

void dr__cuda_graph_cache_init(DrCudaGraphCache *c, const DrGraph *g, guint32 cap) {
  g_return_if_fail(c != NULL && g != NULL);
  memset(c, 0, sizeof *c);
  c->cap = MIN(cap, DR_GRAPH_CACHE_MAX);
  c->n_nodes = dr_graph_n_nodes(g);
  c->varying = g_new0(gboolean, MAX(c->n_nodes, 1));
  c->library = g_new0(gboolean, MAX(c->n_nodes, 1));
  c->memo = g_byte_array_new();
  c->memo_at = g_new0(guint32, MAX(c->n_nodes, 1));
  c->memo_len = g_new0(guint32, MAX(c->n_nodes, 1));
  c->memo_epoch = g_new0(guint64, MAX(c->n_nodes, 1));
  c->epoch = 1; /* no memo yet */
  /* A library call (cuBLAS's gemm) is set in place only through a
   * one-node capture of the library's launch, ~10-20 µs of host time a
   * node on the H200, so with the cache each of its shapes gets an
   * executable of its own instead (keyed). */
  for (DrId v = 0; v < c->n_nodes; v++) c->library[v] = dr__cuda_is_gemm(g, v);
  for (guint i = 0; i < g->param_uses->len; i++) {
    guint32 v = g_array_index(g->param_uses, DrParamUse, i).node;
    if (v < c->n_nodes) c->varying[v] = TRUE;
  }
  c->idle = g_ptr_array_new_with_free_func((GDestroyNotify)dr__cuda_graph_variant_free);
}

gboolean dr__cuda_graph_settable(const DrGraph *g, DrId v, const cudaGraphNode_t *map,
                                 const guint32 *node_kcall) {
  const DrNode *n = dr_graph_node(g, v);
  if (n->loop) return dr_graph_node_loop(g, v)->counted;
  if (map == NULL || map[v] == NULL) return FALSE;
  if (n->op == DR_OP_KERNEL)
    return (node_kcall != NULL && node_kcall[v] != DR_NONE) ||
           (dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER && dr_cuda_api()->user_node_copy != NULL);
  return n->op == DR_OP_COPY || n->op == DR_OP_MEMSET;
}

/* Whether node v's values are in a key made under node map `map`: it
 * varies and cannot be set in place there, or is a library call. */
static gboolean keyed(const DrCudaGraphCache *c, const DrGraph *g, DrId v, const cudaGraphNode_t *map,
                      const guint32 *node_kcall) {
  return c->varying[v] && (c->library[v] || !dr__cuda_graph_settable(g, v, map, node_kcall));
}

gboolean dr__cuda_graph_cache_keys(const DrCudaGraphCache *c, const DrGraph *g, DrId v,
                                   const cudaGraphNode_t *map, const guint32 *node_kcall) {
  g_return_val_if_fail(c != NULL && g != NULL && v < c->n_nodes, FALSE);
  return c->cap > 0 && keyed(c, g, v, map, node_kcall);
}

/* Appends node v's values (each access's [begin, end), each argument's
 * value, the memset value) to `k`. */
static void append_values(GByteArray *k, const DrGraph *g, DrId v) {
  const DrNode *n = dr_graph_node(g, v);
  for (guint32 a = 0; a < n->access_count; a++) {
    const DrAccess *acc = dr_graph_access(g, n->access_first + a);
    guint64 be[2] = {acc->begin, acc->end};
    g_byte_array_append(k, (const guint8 *)be, sizeof be);
  }
  for (guint32 a = 0; a < n->arg_count; a++) {
    const DrArg *arg = dr_graph_arg(g, n->arg_first + a);
    gint64 bits = 0;
    if (arg->kind == DR_ARG_INT) bits = arg->v.i;
    if (arg->kind == DR_ARG_FLOAT) memcpy(&bits, &arg->v.f, sizeof bits);
    g_byte_array_append(k, (const guint8 *)&bits, sizeof bits);
  }
  g_byte_array_append(k, &n->memset_value, 1);
}

/* Node v's values now (append_values's bytes, *len of them), made once
 * per change (dr__cuda_graph_cache_changed starts a new one) into the
 * cache's memo: a lookup keys the state for every idle variant and a
 * hit compares every changed node. The pointer lasts until the next call. */
static const guint8 *values_now(const DrCudaGraphCache *c, const DrGraph *g, DrId v, gsize *len) {
  if (c->memo_epoch[v] != c->epoch) {
    c->memo_at[v] = c->memo->len;
    append_values(c->memo, g, v);
    c->memo_len[v] = c->memo->len - c->memo_at[v];
    c->memo_epoch[v] = c->epoch;
  }
  *len = c->memo_len[v];
  return c->memo->data + c->memo_at[v];
}

/* The nodes a key under node map `map` covers: set[v] (n_nodes). */
static void keyed_set(const DrCudaGraphCache *c, const DrGraph *g, const cudaGraphNode_t *map,
                      const guint32 *node_kcall, gboolean *set) {
  for (DrId v = 0; v < c->n_nodes; v++) set[v] = keyed(c, g, v, map, node_kcall);
}

/* The key of `g` as it is now over the nodes of `set`. */
static GBytes *key_of(const DrCudaGraphCache *c, const DrGraph *g, const gboolean *set) {
  GByteArray *k = g_byte_array_new();
  for (DrId v = 0; v < c->n_nodes; v++) {
    if (!set[v]) continue;
    g_byte_array_append(k, (const guint8 *)&v, sizeof v);
    gsize len = 0;
    const guint8 *bytes = values_now(c, g, v, &len);
    g_byte_array_append(k, bytes, (guint)len);
  }
  return g_byte_array_free_to_bytes(k);
}

GBytes *dr__cuda_graph_cache_key(const DrCudaGraphCache *c, const DrGraph *g, const cudaGraphNode_t *map,
                                 const guint32 *node_kcall) {
  g_return_val_if_fail(c != NULL && g != NULL, NULL);
  g_autofree gboolean *set = g_new(gboolean, MAX(c->n_nodes, 1));
  keyed_set(c, g, map, node_kcall, set);
  return key_of(c, g, set);
}

/* Node v's values now, as a new GBytes (from the memo). */
static GBytes *node_values(const DrCudaGraphCache *c, const DrGraph *g, DrId v) {
  gsize len = 0;
  const guint8 *bytes = values_now(c, g, v, &len);
  return g_bytes_new(bytes, len);
}

void dr__cuda_graph_cache_hold(const DrCudaGraphCache *c, GHashTable **held, const DrGraph *g, DrId v) {
  g_return_if_fail(c != NULL && held != NULL && g != NULL);
  if (c->cap == 0) return;
  if (*held == NULL) *held = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_bytes_unref);
  if (v != DR_NONE) {
    g_hash_table_insert(*held, GUINT_TO_POINTER(v), node_values(c, g, v));
    return;
  }
  g_hash_table_remove_all(*held);
  for (DrId u = 0; u < c->n_nodes; u++)
    if (c->varying[u]) g_hash_table_insert(*held, GUINT_TO_POINTER(u), node_values(c, g, u));
}

gboolean dr__cuda_graph_cache_holds(const DrCudaGraphCache *c, GHashTable *held, const DrGraph *g, DrId v) {
  g_return_val_if_fail(c != NULL && g != NULL, FALSE);
  GBytes *was = held ? g_hash_table_lookup(held, GUINT_TO_POINTER(v)) : NULL;
  if (was == NULL) return FALSE;
  gsize n = 0, len = 0;
  const guint8 *bytes = g_bytes_get_data(was, &n);
  const guint8 *now = values_now(c, g, v, &len);
  return n == len && memcmp(bytes, now, n) == 0;
}

void dr__cuda_graph_cache_changed(DrCudaGraphCache *c, const DrId *nodes, guint32 n) {
  g_return_if_fail(c != NULL);
  /* A new change: the memo's values are of the graph before it. */
  c->epoch++;
  if (c->memo) g_byte_array_set_size(c->memo, 0);
  if (c->cap == 0 || nodes == NULL) return;
  for (guint32 i = 0; i < n; i++)
    if (nodes[i] < c->n_nodes && !c->varying[nodes[i]]) {
      c->varying[nodes[i]] = TRUE;
      c->varying_gen++; /* the idle variants' keyed sets are stale */
    }
  for (guint i = 0; i < c->idle->len; i++)
    dr__cuda_graph_variant_mark(g_ptr_array_index(c->idle, i), nodes, n);
}

DrCudaGraphVariant *dr__cuda_graph_variant_new(const DrCudaGraphCache *c) {
  g_return_val_if_fail(c != NULL, NULL);
  DrCudaGraphVariant *v = g_new0(DrCudaGraphVariant, 1);
  v->dirty = g_array_new(FALSE, FALSE, sizeof(DrId));
  v->marked = g_new0(gboolean, MAX(c->n_nodes, 1));
  return v;
}

void dr__cuda_graph_variant_mark(DrCudaGraphVariant *v, const DrId *nodes, guint32 n) {
  g_return_if_fail(v != NULL);
  for (guint32 i = 0; nodes != NULL && i < n; i++) {
    if (v->marked[nodes[i]]) continue;
    v->marked[nodes[i]] = TRUE;
    g_array_append_val(v->dirty, nodes[i]);
  }
}

/* G_MESSAGES_DEBUG=dagrun: why idle variant v did not match the state
 * now (`key`): both keys' sizes, the first byte that differs and the
 * nodes the key covers under v's node map. */
static void debug_miss(const DrCudaGraphCache *c, const DrGraph *g, const DrCudaGraphVariant *v, GBytes *key,
                       const guint32 *node_kcall) {
  /* Not built when no one reads it: a lookup passes every idle variant. */
  if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN)) return;
  gsize na = 0, nb = 0, d = 0;
  const guint8 *a = g_bytes_get_data(v->key, &na), *b = g_bytes_get_data(key, &nb);
  while (d < na && d < nb && a[d] == b[d]) d++;
  g_autoptr(GString) nodes = g_string_new(NULL);
  for (DrId u = 0; u < c->n_nodes; u++)
    if (keyed(c, g, u, v->node, node_kcall)) g_string_append_printf(nodes, " %s", dr_graph_node(g, u)->id);
  guint64 was = 0, now = 0;
  gsize w = d < 4 ? 0 : 4 + (d - 4) / 8 * 8; /* the 8-byte field holding byte d (after the node id) */
  if (w + 8 <= na) memcpy(&was, a + w, 8);
  if (w + 8 <= nb) memcpy(&now, b + w, 8);
  g_debug("graph cache: an idle variant's key (%" G_GSIZE_FORMAT
          " bytes) differs from now's (%" G_GSIZE_FORMAT " bytes) at byte %" G_GSIZE_FORMAT
          " (the field at %" G_GSIZE_FORMAT ": %" G_GUINT64_FORMAT " then, %" G_GUINT64_FORMAT
          " now); nodes keyed now:%s",
          na, nb, d, w, was, now, nodes->str);
}

DrCudaGraphVariant *dr__cuda_graph_cache_take(DrCudaGraphCache *c, const DrGraph *g,
                                              const guint32 *node_kcall) {
  g_return_val_if_fail(c != NULL && g != NULL, NULL);
  /* The state now is keyed once per distinct set of keyed nodes (most
   * variants share one): a key is O(the nodes' accesses and arguments). */
  gsize n = MAX(c->n_nodes, 1);
  const gboolean *last = NULL;
  g_autoptr(GBytes) key = NULL;
  for (guint i = 0; i < c->idle->len; i++) {
    DrCudaGraphVariant *v = g_ptr_array_index(c->idle, i);
    if (v->key == NULL) continue;
    /* The state now, keyed for this variant's executable: which nodes it
     * can take in place is its own (cuBLAS may capture a gemm as one
     * kernel node at one shape and as several at another). Its set is
     * kept until another node starts to vary. */
    if (v->keyed == NULL || v->keyed_gen != c->varying_gen) {
      if (v->keyed == NULL) v->keyed = g_new(gboolean, n);
      keyed_set(c, g, v->node, node_kcall, v->keyed);
      v->keyed_gen = c->varying_gen;
    }
    if (key == NULL || memcmp(v->keyed, last, n * sizeof *last) != 0) {
      if (key) g_bytes_unref(key);
      key = key_of(c, g, v->keyed);
      last = v->keyed;
    }
    if (g_bytes_equal(v->key, key)) return g_ptr_array_steal_index(c->idle, i);
    debug_miss(c, g, v, key, node_kcall);
  }
  return NULL;
}

gboolean dr__cuda_graph_cache_put(DrCudaGraphCache *c, DrCudaGraphVariant *v) {
  g_return_val_if_fail(c != NULL && v != NULL, FALSE);
  v->used = c->clock;
  g_ptr_array_add(c->idle, v);
  if (c->idle->len + 1 <= c->cap) return FALSE;
  guint oldest = 0;
  for (guint i = 1; i < c->idle->len; i++)
    if (((DrCudaGraphVariant *)g_ptr_array_index(c->idle, i))->used <
        ((DrCudaGraphVariant *)g_ptr_array_index(c->idle, oldest))->used)
      oldest = i;
  g_ptr_array_remove_index(c->idle, oldest); /* destroys it */
  return TRUE;
}

void dr__cuda_graph_cache_use(DrCudaGraphCache *c) {
  g_return_if_fail(c != NULL);
  c->clock++;
}

guint32 dr__cuda_graph_cache_variants(const DrCudaGraphCache *c) {
  g_return_val_if_fail(c != NULL, 0);
  return c->idle ? c->idle->len + 1 : 1;
}

void dr__cuda_graph_cache_clear(DrCudaGraphCache *c) {
  g_return_if_fail(c != NULL);
  if (c->idle) g_ptr_array_set_size(c->idle, 0);
}

void dr__cuda_graph_variant_free(DrCudaGraphVariant *v) {
  if (v == NULL) return;
  const DrCudaApi *api = dr_cuda_api();
  if (v->exec) (void)api->cudaGraphExecDestroy(v->exec);
  if (v->graph) (void)api->cudaGraphDestroy(v->graph);
  g_free(v->node);
  if (v->chain) g_hash_table_unref(v->chain);
  if (v->held) g_hash_table_unref(v->held);
  g_free(v->cap_base);
  if (v->key) g_bytes_unref(v->key);
  g_free(v->keyed);
  if (v->dirty) g_array_unref(v->dirty);
  g_free(v->marked);
  g_free(v);
}

void dr__cuda_graph_cache_free(DrCudaGraphCache *c) {
  if (c == NULL) return;
  g_clear_pointer(&c->idle, g_ptr_array_unref);
  g_clear_pointer(&c->key, g_bytes_unref);
  g_clear_pointer(&c->varying, g_free);
  g_clear_pointer(&c->library, g_free);
  g_clear_pointer(&c->memo, g_byte_array_unref);
  g_clear_pointer(&c->memo_at, g_free);
  g_clear_pointer(&c->memo_len, g_free);
  g_clear_pointer(&c->memo_epoch, g_free);
  c->cap = 0;
}
