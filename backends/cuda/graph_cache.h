/* graph_cache.h: internal to backends/cuda/: graph mode's bounded cache
 * of instantiated executables (`run.graph_cache: N`, issue #19), the data
 * structure only (graph_cache.c). graph.c decides when to look in it and
 * does every capture, instantiation and in-place node update.
 *
 * A change that a node cannot take in place (a launcher that made several
 * graph nodes, as cuBLAS may for gemm; a user kernel where the table has
 * no user_node_copy) forces a new capture
 * and instantiation. With the cache, the executable in use is kept as an
 * idle *variant* instead of being destroyed, keyed by the values of the
 * nodes that cannot be set in place (the key, below); when those values
 * come back, the variant is put back in use and only what can be set in
 * place is set on it (the nodes changed since it was last in use, its
 * `dirty` list). At most `cap` variants exist, the one in use counted;
 * the least recently used idle one is destroyed when another is needed.
 *
 * The key of a state of the graph is, for every node that may vary (a
 * node with a parameter use, or one ever handed to args_changed) and that
 * cannot be set in place on the variant's executable (not mapped to one
 * graph node of its kind, or a kernel without a bound built-in launch
 * that is no user kernel the table can set),
 * or that is a library call (a cuBLAS gemm: setting it in place takes a
 * capture of cuBLAS's launch, 10-20 µs of host time on the H200, and may
 * meet a launch of another topology; with the cache each of its shapes
 * keeps an executable instead), its id and its values: each access's [begin, end), each argument's
 * value and the memset value. Nodes that never varied hold the values
 * they were captured with in every variant; nodes that can be set in place
 * are set on a hit. So two states with equal keys differ only in what the
 * variant can take in place, and a hit is always correct; a node that
 * starts to vary only makes older keys unequal (misses, never a wrong
 * hit). A counted loop (ir/loops.h) is not in the key: its count is a
 * device word outside every executable (cuda/loops.c). */
#ifndef DAGRUN_BACKENDS_CUDA_GRAPH_CACHE_H
#define DAGRUN_BACKENDS_CUDA_GRAPH_CACHE_H

#include "backends/backend.h"
#include "backends/cuda_api.h"

G_BEGIN_DECLS

/* The most variants run.graph_cache may ask for. */
#define DR_GRAPH_CACHE_MAX 64u

/* One instantiated variant, idle (not the executable in use). Owns its
 * graph, executable, node map and captured bases (graph.h says what
 * those are). */
typedef struct {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t *node;
  GHashTable *chain;
  GHashTable *held; /* what its nodes hold (dr__cuda_graph_cache_hold) */
  void **cap_base;
  GBytes *key;
  gboolean *keyed; /* [n_nodes] or NULL: the nodes its key covers, as of keyed_gen */
  guint64 keyed_gen;
  guint64 used;     /* the cache's clock when it was last in use */
  GArray *dirty;    /* DrId: nodes changed since it was in use, each once */
  gboolean *marked; /* [n_nodes]: in `dirty` */
} DrCudaGraphVariant;

/* X(ENUM_SUFFIX, spelling): what the cache did for a forced change. */
#define DR_GRAPH_CACHE_RESULT_LIST(X) \
  X(NONE, NULL)                       \
  X(HIT, "hit")                       \
  X(MISS, "miss")                     \
  X(EVICT, "evict")

typedef enum {
#define DR_X(e, s) DR_GRAPH_CACHE_##e,
  DR_GRAPH_CACHE_RESULT_LIST(DR_X)
#undef DR_X
} DrGraphCacheResult;

/* The spelling of `r` in reports ("hit", "miss": a new variant
 * instantiated, "evict": that, and the least recently used idle variant
 * destroyed to make room); NULL for NONE. */
const char *dr__graph_cache_result_name(DrGraphCacheResult r);

typedef struct {
  guint32 cap;       /* run.graph_cache; 0: off (the cache is never used) */
  GPtrArray *idle;   /* DrCudaGraphVariant *, owned */
  GBytes *key;       /* the key of the executable in use; NULL: not known */
  gboolean *varying; /* [n_nodes]: may vary (see the file head) */
  gboolean *library; /* [n_nodes]: a library call (cuBLAS's gemm), keyed when varying */
  /* Each node's values in this change, made once (graph_cache.c,
   * values_now): memo->data + memo_at[v], memo_len[v] bytes, valid while
   * memo_epoch[v] == epoch. Mutable through a const cache. */
  GByteArray *memo;
  guint32 *memo_at, *memo_len;
  guint64 *memo_epoch;
  guint64 epoch;
  guint64 varying_gen; /* moves on when a node starts to vary */
  guint32 n_nodes;
  guint64 clock;
  /* The last change's outcome, for the report. */
  DrGraphCacheResult result;
} DrCudaGraphCache;

/* Whether node v of `g` can be set in place on an executable of node map
 * `map` (NULL: nothing mapped) and built-in launches `node_kcall`
 * ([n_nodes], DR_NONE: none): a mapped copy or memset, a mapped kernel
 * with a bound built-in launch, a mapped user kernel where the table can
 * copy its node (user_node_copy), or a counted loop, whose count lives
 * outside the executable. The one rule of graph.c's per-node updates and
 * of the cache's keys. */
gboolean dr__cuda_graph_settable(const DrGraph *g, DrId v, const cudaGraphNode_t *map,
                                 const guint32 *node_kcall);

/* Sets the cache up for graph `g` with room for `cap` variants (0: off);
 * the nodes with parameter uses vary from the start. */
void dr__cuda_graph_cache_init(DrCudaGraphCache *c, const DrGraph *g, guint32 cap);

/* The key (file head) of `g` as it is now, for an executable whose node
 * map is `map` (NULL: nothing mapped) and whose built-in launches are
 * `node_kcall` ([n_nodes], DR_NONE: none). A new reference. */
GBytes *dr__cuda_graph_cache_key(const DrCudaGraphCache *c, const DrGraph *g, const cudaGraphNode_t *map,
                                 const guint32 *node_kcall);

/* With the cache on: notes in *held (GUINT_TO_POINTER(v) -> the node's
 * values as a key holds them: its accesses' extents, its arguments, its
 * memset value; the table made on first use) that an executable's node v holds `g`'s values now
 * (it was just set in place), or with v DR_NONE that every varying node
 * does (it was just captured). On a hit only the nodes whose values
 * differ from what the variant holds are set (graph.c). */
void dr__cuda_graph_cache_hold(const DrCudaGraphCache *c, GHashTable **held, const DrGraph *g, DrId v);

/* Whether *held says node v holds `g`'s values now (FALSE: not known). */
gboolean dr__cuda_graph_cache_holds(const DrCudaGraphCache *c, GHashTable *held, const DrGraph *g, DrId v);

/* Whether the cache is on and node v's values are in the key of an
 * executable of node map `map` (the file head; also every varying
 * library call: cuBLAS's gemm, which only a capture of its launch could
 * set, gets an executable per shape). graph.c sends a change of such a
 * node to the cache instead of setting it in place. */
gboolean dr__cuda_graph_cache_keys(const DrCudaGraphCache *c, const DrGraph *g, DrId v,
                                   const cudaGraphNode_t *map, const guint32 *node_kcall);

/* Nodes `nodes` [n] changed: they vary from now on, and every idle
 * variant must set them when it is put back in use. */
void dr__cuda_graph_cache_changed(DrCudaGraphCache *c, const DrId *nodes, guint32 n);

/* The idle variant whose key equals the key of `g` as it is now for that
 * variant's own node map (dr__cuda_graph_cache_key), taken out of the
 * cache (the caller owns it), or NULL. Each variant is keyed with its own
 * map, not the one in use: what one executable can take in place another
 * may not (on the H200, a gemm_f32 at m=64 could be set in place and at
 * m=128 not), and a key made with another map never equals. */
DrCudaGraphVariant *dr__cuda_graph_cache_take(DrCudaGraphCache *c, const DrGraph *g,
                                              const guint32 *node_kcall);

/* Keeps `v` (taken) as idle, stamped as used now; when that makes more
 * than cap - 1 idle variants (room for the one in use), destroys the least
 * recently used idle one (possibly `v` itself) and returns TRUE. */
gboolean dr__cuda_graph_cache_put(DrCudaGraphCache *c, DrCudaGraphVariant *v);

/* Stamps the variant about to be in use (the clock moves on). */
void dr__cuda_graph_cache_use(DrCudaGraphCache *c);

/* The variants the cache holds now, the one in use counted (1 + idle). */
guint32 dr__cuda_graph_cache_variants(const DrCudaGraphCache *c);

/* Destroys every idle variant (their memory goes back: a buffer moved, or
 * a change of unknown nodes). */
void dr__cuda_graph_cache_clear(DrCudaGraphCache *c);

/* A new empty variant for cache `c`'s graph (its handles NULL). */
DrCudaGraphVariant *dr__cuda_graph_variant_new(const DrCudaGraphCache *c);
/* Notes nodes `nodes` [n] in v's dirty list (each once). */
void dr__cuda_graph_variant_mark(DrCudaGraphVariant *v, const DrId *nodes, guint32 n);

/* Destroys variant `v` (NULL-safe). */
void dr__cuda_graph_variant_free(DrCudaGraphVariant *v);

/* Releases everything (NULL-safe fields); init may follow. */
void dr__cuda_graph_cache_free(DrCudaGraphCache *c);

G_END_DECLS

#endif
