/* graph_cache_key_test.c: which idle variant of run.graph_cache
 * (backends/cuda/graph_cache.h) a state of the graph matches, with the
 * data structure alone (no run, no CUDA call).
 *
 * A variant's key leaves out the nodes its own executable can take in
 * place, and what one executable can take another may not: on the H200
 * (gpu/params/graph-cache, 2026-12-01) cuBLAS captured a gemm as one
 * kernel node at m=64 (set in place) and as several at m=128 (not). The
 * lookup must key the state for each variant's own node map; keyed with
 * the map of the executable in use it missed every return to a shape seen
 * before. */
#include <glib.h>

#include "backends/cuda/graph_cache.h"
#include "ir/graph.h"
#include "tests/fault/fake_run.h"

static const char *yaml =
    "dagrun: 1\n"
    "params:\n"
    "  seq: {type: int, default: 8, min: 4, max: 64}\n"
    "buffers:\n"
    "  x: {type: f32, count: 64, init: iota}\n"
    "  y: {type: f32, count: 64, init: zeros}\n"
    "nodes:\n"
    "  g: {op: kernel, kernel: scale_f32, args: {x: \"x[0:seq]\", alpha: 2.0, y: \"y[0:seq]\"}}\n";

/* A variant (no executable) whose node map maps node g or not, keyed for
 * the graph's values now with that map. */
static DrCudaGraphVariant *variant(const DrCudaGraphCache *c, const DrGraph *graph, DrId g, gboolean mapped,
                                   const guint32 *node_kcall) {
  DrCudaGraphVariant *v = dr__cuda_graph_variant_new(c);
  v->node = g_new0(cudaGraphNode_t, dr_graph_n_nodes(graph));
  if (mapped) v->node[g] = (cudaGraphNode_t)GSIZE_TO_POINTER(0x10);
  v->key = dr__cuda_graph_cache_key(c, graph, v->node, node_kcall);
  return v;
}

static void test_own_map(void) {
  g_autoptr(DrGraph) graph = dr_fake_load_yaml("key.yaml", yaml);
  DrId g = dr_graph_find_node(graph, "g");
  g_assert_cmpuint(g, !=, DR_NONE);
  guint32 n = dr_graph_n_nodes(graph);
  g_autofree guint32 *node_kcall = g_new(guint32, n);
  for (guint32 i = 0; i < n; i++) node_kcall[i] = DR_NONE;
  node_kcall[g] = 0; /* g is a bound built-in launch */
  DrCudaGraphCache c;
  dr__cuda_graph_cache_init(&c, graph, 3);
  g_assert_true(c.varying[g]); /* a parameter sizes it */

  /* The keys differ by map: with g set in place it is not in the key. */
  g_autofree cudaGraphNode_t *none = g_new0(cudaGraphNode_t, n);
  g_autoptr(GBytes) unmapped_key = dr__cuda_graph_cache_key(&c, graph, none, node_kcall);
  DrCudaGraphVariant *a = variant(&c, graph, g, TRUE, node_kcall);
  g_assert_false(g_bytes_equal(a->key, unmapped_key));

  /* Variant a (g in place) is idle; the executable in use cannot set g.
   * The state now matches a by a's own map. */
  g_assert_false(dr__cuda_graph_cache_put(&c, a));
  DrCudaGraphVariant *hit = dr__cuda_graph_cache_take(&c, graph, node_kcall);
  g_assert_true(hit == a);
  g_assert_cmpuint(c.idle->len, ==, 0);
  dr__cuda_graph_variant_free(hit);

  /* A variant that cannot set g matches only g's values it was keyed
   * with. */
  DrCudaGraphVariant *b = variant(&c, graph, g, FALSE, node_kcall);
  g_bytes_unref(b->key);
  b->key = g_bytes_new_static("other values", 12);
  g_assert_false(dr__cuda_graph_cache_put(&c, b));
  g_assert_null(dr__cuda_graph_cache_take(&c, graph, node_kcall));
  DrCudaGraphVariant *b2 = variant(&c, graph, g, FALSE, node_kcall);
  g_assert_false(dr__cuda_graph_cache_put(&c, b2));
  g_assert_true(dr__cuda_graph_cache_take(&c, graph, node_kcall) == b2);
  dr__cuda_graph_variant_free(b2);
  dr__cuda_graph_cache_free(&c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fault/graph-cache/key-own-map", test_own_map);
  return g_test_run();
}
