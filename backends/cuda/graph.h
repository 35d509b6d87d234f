/* graph.h: internal to backends/cuda/ (and its tests): graph mode's state
 * and the updates a session asks of it (graph.c).
 *
 * Graph mode is the CUDA backend's second set of operations over the
 * shared parts (dr__cuda_graph_mode, cuda.h): it captures one iteration's
 * issue (issue.c) into a CUDA graph once at setup, instantiates it, and
 * replays it per iteration. This part owns the captured graph, its
 * executable and the map from nodes to the graph's kernel nodes. */
#ifndef DAGRUN_BACKENDS_CUDA_GRAPH_H
#define DAGRUN_BACKENDS_CUDA_GRAPH_H

#include "backends/backend.h"
#include "backends/cuda/graph_cache.h"
#include "backends/cuda_api.h"

G_BEGIN_DECLS

/* The most graph nodes one built-in's launch may make and still be set
 * in place node by node (a gemm's split-K product and reduction: 2). */
#define DR_GRAPH_CHAIN_MAX 8

typedef struct {
  cudaGraph_t graph;    /* the captured iteration */
  cudaGraphExec_t exec; /* its executable */
  /* [n_nodes] while capturing, then for the executable's graph: node v's
   * one kernel node in `graph` when v is a built-in kernel whose launch
   * made exactly that node, else NULL. NULL altogether when the table has
   * no capture queries, or after a whole-graph update (the executable's
   * nodes are then no longer `graph`'s). See dr__cuda_graph_update. */
  cudaGraphNode_t *node;
  /* With `node`: for each v whose launch made a chain of graph nodes
   * (graph.c, note_node), GUINT_TO_POINTER(v) -> its nodes in launch
   * order, NULL-terminated (node[v] is the last); NULL when there is none. */
  GHashTable *chain;
  /* With `node`, or NULL: spare slots (graph.c). For a node captured with
   * spare kernel nodes after its launch (a varying library call, no graph
   * cache), how many nodes of its chain its launch uses now: the first
   * live[v] run, the rest are disabled on the executable. 0: no spare. */
  guint8 *live;
  /* run.graph_cache: the values the executable's nodes hold, where known
   * (dr__cuda_graph_cache_hold). */
  GHashTable *held;
  /* [graph accesses], kept with the last capture that made a node map:
   * the base address of each access's buffer when its node was captured.
   * For a stream-ordered buffer that is the graph's own allocation of the
   * lifetime the node is in (fixed for the executable), which a per-node
   * update needs once the capture has forgotten it. NULL before. */
  void **cap_base;
  /* The node whose work broke the last capture (DR_NONE: none did). */
  DrId uncapturable;
  /* run.graph_cache: the idle instantiated variants (graph_cache.h). */
  DrCudaGraphCache cache;
  /* The node that forced the last change to capture the iteration again
   * (it could not be set in place), or NULL: none did. */
  const char *forced_by;
  /* Where the last args_changed spent its time, for its debug line
   * (G_MESSAGES_DEBUG=all): per phase of the per-node sets, in µs. */
  struct {
    gint64 wait, lookup, bind, capture, get, set, swap;
    guint32 nodes;
  } spent;
} DrCudaGraphState;

/* Makes the executable run the graph's current arguments (a library user
 * changed scalar arguments of nodes since setup): re-captures one
 * iteration, then tries cudaGraphExecUpdate (about 3x cheaper than
 * instantiating, GPU-NOTES.md) and falls back to a fresh instantiation
 * when the table has no update entry or the runtime refuses the update
 * (a changed topology, memory nodes). Sets *how to "updated" or
 * "re-instantiated". The backend must be in graph mode and set up; it
 * waits for the iterations in flight before the capture. On failure
 * (DR_ERROR_RUNTIME: the capture or the instantiation failed) the
 * previous executable and graph are kept. */
gboolean dr__cuda_graph_update(DrBackend *b, const char **how, GError **error);

/* Destroys the executable and the captured graph, drops the node map and
 * destroys the cache's idle variants (NULL-safe fields). */
void dr__cuda_graph_release(DrCudaGraphState *cg);

G_END_DECLS

#endif
