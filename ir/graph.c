/* graph.c: building, looking up, checking and dumping the IR (graph.h).
 * No pass logic lives here: passes are in scheduler/. */
#include "ir/graph.h"

#include "ir/loops.h"

#include <stdlib.h>
#include <string.h>

/* Host function parameters: print(message, buffer?), sleep(us),
 * checksum(buffer). Buffers must be host-visible (checked by the parser). */
static const DrParam print_params[] = {
    {.name = "message", .is_string = TRUE},
    {.name = "buffer", .is_pointer = TRUE, .access = DR_ACCESS_READ, .optional = TRUE, .any_type = TRUE},
};
static const DrParam sleep_params[] = {{.name = "us", .type = DR_ELEM_I64}};
static const DrParam checksum_params[] = {
    {.name = "buffer", .is_pointer = TRUE, .access = DR_ACCESS_READ, .any_type = TRUE},
};

const DrParam *dr_host_fn_params(DrHostFn fn, guint32 *n_params) {
  switch (fn) {
    case DR_HOST_FN_PRINT:
      *n_params = G_N_ELEMENTS(print_params);
      return print_params;
    case DR_HOST_FN_SLEEP:
      *n_params = G_N_ELEMENTS(sleep_params);
      return sleep_params;
    case DR_HOST_FN_CHECKSUM:
      *n_params = G_N_ELEMENTS(checksum_params);
      return checksum_params;
    case DR_N_HOST_FNS:
      break;
  }
  g_return_val_if_reached(NULL);
}

/* ---- construction ------------------------------------------------------ */

static void kernel_clear(gpointer p) {
  DrKernelDecl *k = p;
  g_free(k->params);
  g_free(k->include_dirs);
  g_free(k->defines);
}

static void callback_clear(gpointer p) {
  DrCallback *cb = p;
  g_free((gpointer)cb->params);
}

/* One dr_graph_keep entry. */
typedef struct {
  gpointer data;
  GDestroyNotify free_fn;
} Kept;

/* A copy of strs[0..n) owned by the graph, its strings interned (NULL
 * when n == 0). */
static const char **intern_all(DrGraph *graph, const char *const *strs, guint32 n) {
  if (n == 0) return NULL;
  const char **out = g_new0(const char *, n);
  for (guint32 i = 0; i < n; i++) out[i] = dr_graph_intern(graph, strs[i]);
  return out;
}

DrGraph *dr_graph_new(void) {
  DrGraph *g = g_new0(DrGraph, 1);
  g->buffers = g_array_new(FALSE, TRUE, sizeof(DrBuffer));
  g->nodes = g_array_new(FALSE, TRUE, sizeof(DrNode));
  g->accesses = g_array_new(FALSE, TRUE, sizeof(DrAccess));
  g->args = g_array_new(FALSE, TRUE, sizeof(DrArg));
  g->edges = g_array_new(FALSE, TRUE, sizeof(DrEdge));
  g->afters = g_array_new(FALSE, TRUE, sizeof(DrAfter));
  g->kernels = g_array_new(FALSE, TRUE, sizeof(DrKernelDecl));
  g_array_set_clear_func(g->kernels, kernel_clear);
  g->callbacks = g_array_new(FALSE, TRUE, sizeof(DrCallback));
  g->params = g_array_new(FALSE, TRUE, sizeof(DrRunParam));
  g->param_uses = g_array_new(FALSE, TRUE, sizeof(DrParamUse));
  g->param_vars = g_array_new(FALSE, TRUE, sizeof(DrParamVar));
  g_array_set_clear_func(g->callbacks, callback_clear);
  g->strings = g_string_chunk_new(64 * 1024);
  g->buffer_index = g_hash_table_new(g_str_hash, g_str_equal);
  g->kernel_index = g_hash_table_new(g_str_hash, g_str_equal);
  g->name = "pipeline";
  g->base_dir = ".";
  g->run.mode = DR_MODE_AUTO;
  g->run.iterations = 10;
  g->run.warmup = 2;
  g->run.max_streams = 8;
  g->run.device = 0;
  g->run.nranks = 1;
  g->run.release_threshold = G_MAXUINT64;
  return g;
}

void dr_graph_free(DrGraph *graph) {
  if (graph == NULL) return;
  g_array_unref(graph->buffers);
  g_array_unref(graph->nodes);
  g_array_unref(graph->accesses);
  g_array_unref(graph->args);
  g_array_unref(graph->edges);
  g_array_unref(graph->afters);
  g_array_unref(graph->kernels);
  g_array_unref(graph->callbacks);
  g_array_unref(graph->params);
  g_array_unref(graph->param_uses);
  g_array_unref(graph->param_vars);
  if (graph->loops) g_ptr_array_unref(graph->loops);
  /* After everything that may point into what it keeps (twin defs). */
  for (guint i = graph->kept ? graph->kept->len : 0; i > 0; i--) {
    const Kept *k = &g_array_index(graph->kept, Kept, i - 1);
    if (k->free_fn) k->free_fn(k->data);
  }
  if (graph->kept) g_array_unref(graph->kept);
  g_free(graph->node_slots);
  g_hash_table_unref(graph->buffer_index);
  g_hash_table_unref(graph->kernel_index);
  if (graph->memory_edges) g_array_unref(graph->memory_edges);
  g_string_chunk_free(graph->strings);
  g_free(graph);
}

const char *dr_graph_intern(DrGraph *graph, const char *s) {
  if (s == NULL) return NULL;
  return g_string_chunk_insert_const(graph->strings, s);
}

static DrId index_add(GHashTable *index, const char *key, guint len) {
  if (g_hash_table_contains(index, key)) return DR_NONE;
  g_hash_table_insert(index, (gpointer)key, GUINT_TO_POINTER(len + 1));
  return len;
}

static DrId index_find(GHashTable *index, const char *key) {
  gpointer v = g_hash_table_lookup(index, key);
  return v ? GPOINTER_TO_UINT(v) - 1 : DR_NONE;
}

DrId dr_graph_add_buffer(DrGraph *graph, const DrBuffer *buffer) {
  DrBuffer b = *buffer;
  b.name = dr_graph_intern(graph, b.name);
  b.init_path = dr_graph_intern(graph, b.init_path);
  b.save_path = dr_graph_intern(graph, b.save_path);
  b.alloc_node = b.free_node = DR_NONE;
  DrId id = index_add(graph->buffer_index, b.name, graph->buffers->len);
  if (id != DR_NONE) g_array_append_val(graph->buffers, b);
  return id;
}

/* ---- the node-id index (DrGraph.node_slots) ----
 * Open addressing with linear probing over a power of two of slots, at
 * most 3/4 full, each the id's hash and DrId + 1 (0: empty); a probe reads
 * a node's id only when the hashes agree. It replaces two GHashTables (the
 * index and the string chunk's own table of interned ids, since node ids
 * go into the chunk without it: they are unique already): 8 bytes a slot
 * instead of about 45 per node, and one probe sequence per node added. */
struct DrNodeSlot {
  guint32 hash;
  guint32 id1; /* DrId + 1; 0: empty */
};

/* FNV-1a over the bytes, then a 64-bit finalizer: the low bits pick the
 * slot, so every byte must reach them. */
static guint32 node_id_hash(const char *s) {
  guint64 h = G_GUINT64_CONSTANT(0xcbf29ce484222325);
  for (; *s; s++) h = (h ^ (guchar)*s) * G_GUINT64_CONSTANT(0x100000001b3);
  h ^= h >> 31;
  h *= G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
  h ^= h >> 32;
  return (guint32)h;
}

/* The slot holding `id`, or the empty slot where it would go. */
static struct DrNodeSlot *node_slot(const DrGraph *graph, const char *id, guint32 hash) {
  for (guint32 i = hash & graph->node_slots_mask;; i = (i + 1) & graph->node_slots_mask) {
    struct DrNodeSlot *slot = &graph->node_slots[i];
    if (slot->id1 == 0) return slot;
    if (slot->hash == hash && strcmp(dr_graph_node(graph, slot->id1 - 1)->id, id) == 0) return slot;
  }
}

/* Makes room for one more node: doubles the slots (from 64) once they
 * would be more than 3/4 full, moving each by its stored hash. */
static void node_slots_reserve(DrGraph *graph) {
  guint64 size = graph->node_slots ? (guint64)graph->node_slots_mask + 1 : 0;
  if (((guint64)graph->nodes->len + 1) * 4 <= size * 3) return;
  guint64 new_size = MAX(size * 2, 64);
  g_return_if_fail(new_size <= G_GUINT64_CONSTANT(1) << 32);
  struct DrNodeSlot *old = graph->node_slots;
  graph->node_slots = g_new0(struct DrNodeSlot, new_size);
  graph->node_slots_mask = (guint32)(new_size - 1);
  for (guint64 i = 0; i < size; i++) {
    if (old[i].id1 == 0) continue;
    guint32 j = old[i].hash & graph->node_slots_mask;
    while (graph->node_slots[j].id1 != 0) j = (j + 1) & graph->node_slots_mask;
    graph->node_slots[j] = old[i];
  }
  g_free(old);
}

DrId dr_graph_add_node(DrGraph *graph, const DrNode *node) {
  g_return_val_if_fail(node->id != NULL, DR_NONE);
  node_slots_reserve(graph);
  guint32 hash = node_id_hash(node->id);
  struct DrNodeSlot *slot = node_slot(graph, node->id, hash);
  if (slot->id1 != 0) return DR_NONE;
  DrNode n = *node;
  n.id = g_string_chunk_insert(graph->strings, n.id);
  n.label = dr_graph_intern(graph, n.label);
  n.access_first = graph->accesses->len;
  n.access_count = 0;
  n.arg_first = graph->args->len;
  n.arg_count = 0;
  DrId id = graph->nodes->len;
  *slot = (struct DrNodeSlot){hash, id + 1};
  g_array_append_val(graph->nodes, n);
  return id;
}

guint32 dr_graph_add_access(DrGraph *graph, const DrAccess *access) {
  g_return_val_if_fail(graph->nodes->len > 0, 0);
  DrNode *n = dr_graph_node(graph, graph->nodes->len - 1);
  g_array_append_val(graph->accesses, *access);
  n->access_count++;
  return graph->accesses->len - 1;
}

guint32 dr_graph_add_arg(DrGraph *graph, const DrArg *arg) {
  g_return_val_if_fail(graph->nodes->len > 0, 0);
  DrNode *n = dr_graph_node(graph, graph->nodes->len - 1);
  DrArg a = *arg;
  if (a.kind == DR_ARG_STRING) a.v.s = dr_graph_intern(graph, a.v.s);
  g_array_append_val(graph->args, a);
  n->arg_count++;
  return graph->args->len - 1;
}

void dr_graph_add_edge(DrGraph *graph, DrId from, DrId to, DrEdgeKind kind, DrId buffer) {
  DrEdge e = {from, to, kind, buffer};
  g_array_append_val(graph->edges, e);
}

void dr_graph_add_after(DrGraph *graph, DrId from, DrId to, DrLoc loc) {
  DrAfter a = {from, to, loc};
  g_array_append_val(graph->afters, a);
}

DrId dr_graph_add_kernel(DrGraph *graph, const DrKernelDecl *decl) {
  DrKernelDecl k = *decl;
  k.name = dr_graph_intern(graph, k.name);
  DrId id = index_add(graph->kernel_index, k.name, graph->kernels->len);
  if (id == DR_NONE) return DR_NONE;
  k.params = g_new0(DrParam, MAX(k.n_params, 1));
  for (guint32 i = 0; i < k.n_params; i++) {
    k.params[i] = decl->params[i];
    k.params[i].name = dr_graph_intern(graph, decl->params[i].name);
  }
  k.source = dr_graph_intern(graph, k.source);
  k.ptx = dr_graph_intern(graph, k.ptx);
  k.cubin = dr_graph_intern(graph, k.cubin);
  k.fatbin = dr_graph_intern(graph, k.fatbin);
  k.entry = dr_graph_intern(graph, k.entry);
  k.name_expr = dr_graph_intern(graph, k.name_expr);
  k.include_dirs = intern_all(graph, decl->include_dirs, decl->n_include_dirs);
  k.defines = intern_all(graph, decl->defines, decl->n_defines);
  k.twin_lib = dr_graph_intern(graph, k.twin_lib);
  k.twin_path = dr_graph_intern(graph, k.twin_path);
  k.twin_fn = dr_graph_intern(graph, k.twin_fn);
  g_array_append_val(graph->kernels, k);
  return id;
}

guint32 dr_graph_add_callback(DrGraph *graph, const DrCallback *cb) {
  DrCallback c = *cb;
  DrParam *params = g_new0(DrParam, MAX(cb->n_params, 1));
  for (guint32 i = 0; i < cb->n_params; i++) {
    params[i] = cb->params[i];
    params[i].name = dr_graph_intern(graph, cb->params[i].name);
  }
  c.params = params;
  c.lib = dr_graph_intern(graph, c.lib);
  c.path = dr_graph_intern(graph, c.path);
  c.symbol = dr_graph_intern(graph, c.symbol);
  g_array_append_val(graph->callbacks, c);
  return graph->callbacks->len;
}

const char *dr_graph_host_fn_label(const DrGraph *graph, const DrNode *n) {
  if (n->callback == 0) return dr_host_fn_name(n->host_fn);
  const DrCallback *cb = &g_array_index(graph->callbacks, DrCallback, n->callback - 1);
  if (cb->symbol != NULL) return cb->symbol;
  return cb->call != NULL ? "host_fn" : "callback";
}

void dr_graph_keep(DrGraph *graph, gpointer data, GDestroyNotify free_fn) {
  if (graph->kept == NULL) graph->kept = g_array_new(FALSE, FALSE, sizeof(Kept));
  Kept k = {data, free_fn};
  g_array_append_val(graph->kept, k);
}

DrId dr_graph_find_node(const DrGraph *graph, const char *id) {
  if (graph->node_slots == NULL || id == NULL) return DR_NONE;
  return node_slot(graph, id, node_id_hash(id))->id1 - 1;
}
DrId dr_graph_find_buffer(const DrGraph *graph, const char *name) {
  return index_find(graph->buffer_index, name);
}
DrId dr_graph_find_kernel(const DrGraph *graph, const char *name) {
  return index_find(graph->kernel_index, name);
}

static int edge_cmp(gconstpointer pa, gconstpointer pb) {
  const DrEdge *a = pa, *b = pb;
  if (a->to != b->to) return a->to < b->to ? -1 : 1;
  if (a->from != b->from) return a->from < b->from ? -1 : 1;
  return (int)a->kind - (int)b->kind;
}

/* Sorts one target's bucket by (from, kind): insertion sort, since buckets
 * are a node's in-edges and nearly always short and nearly sorted. */
static void sort_bucket(DrEdge *e, guint n) {
  if (n > 32) {
    qsort(e, n, sizeof(DrEdge), edge_cmp);
    return;
  }
  for (guint i = 1; i < n; i++) {
    DrEdge cur = e[i];
    guint j = i;
    while (j > 0 && edge_cmp(&e[j - 1], &cur) > 0) {
      e[j] = e[j - 1];
      j--;
    }
    e[j] = cur;
  }
}

/* A counting sort by target (O(V + E), stable), then each target's short
 * bucket by source; a million-node pipeline has millions of edges, where a
 * comparison sort cost most of the passes' time. Already sorted input (the
 * hazard pass emits edges grouped by target) skips the scatter. */
void dr_graph_sort_edges(DrGraph *graph) {
  GArray *e = graph->edges;
  guint32 n_nodes = graph->nodes->len;
  if (e->len == 0) return;
  DrEdge *edges = (DrEdge *)e->data;
  gboolean grouped = TRUE;
  for (guint i = 1; i < e->len && grouped; i++) grouped = edges[i - 1].to <= edges[i].to;
  if (!grouped) {
    guint32 *start = g_new0(guint32, n_nodes + 1);
    for (guint i = 0; i < e->len; i++) start[edges[i].to + 1]++;
    for (guint32 v = 0; v < n_nodes; v++) start[v + 1] += start[v];
    DrEdge *sorted = g_new(DrEdge, e->len);
    for (guint i = 0; i < e->len; i++) sorted[start[edges[i].to]++] = edges[i];
    memcpy(edges, sorted, e->len * sizeof(DrEdge));
    g_free(sorted);
    g_free(start);
  }
  for (guint i = 0; i < e->len;) {
    guint j = i + 1;
    while (j < e->len && edges[j].to == edges[i].to) j++;
    sort_bucket(edges + i, j - i);
    i = j;
  }
  guint w = 1;
  for (guint r = 1; r < e->len; r++) {
    if (edges[r].from == edges[w - 1].from && edges[r].to == edges[w - 1].to) continue;
    edges[w++] = edges[r];
  }
  g_array_set_size(e, w);
}

/* ---- invariants -------------------------------------------------------- */

#define FAIL(...)                                                \
  do {                                                           \
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, __VA_ARGS__); \
    return FALSE;                                                \
  } while (0)

/* I3 for a kernel node's arguments: existing parameters, each once. */
static gboolean check_kernel_args(const DrGraph *graph, const DrNode *n, GError **error) {
  if (n->kernel >= graph->kernels->len) FAIL("I3: kernel node '%s' names no kernel", n->id);
  const DrKernelDecl *k = dr_graph_kernel(graph, n->kernel);
  guint64 seen = 0;
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
    const DrArg *arg = dr_graph_arg(graph, a);
    if (arg->param >= k->n_params) FAIL("I3: arg %u of '%s' names no parameter", a, n->id);
    if (arg->param < 64) {
      if (seen & (G_GUINT64_CONSTANT(1) << arg->param))
        FAIL("I3: parameter %u of '%s' bound twice", arg->param, n->id);
      seen |= G_GUINT64_CONSTANT(1) << arg->param;
    }
  }
  return TRUE;
}

/* I2 and I3 within node n: its accesses in bounds, its buffer arguments
 * naming its own accesses. */
static gboolean check_node_ranges(const DrGraph *graph, const DrNode *n, GError **error) {
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    const DrAccess *ac = dr_graph_access(graph, a);
    if (ac->buffer >= graph->buffers->len) FAIL("I2: access %u of '%s' names no buffer", a, n->id);
    const DrBuffer *b = dr_graph_buffer(graph, ac->buffer);
    if (ac->begin > ac->end || ac->end > b->count)
      FAIL("I2: access %u of '%s' out of bounds of '%s'", a, n->id, b->name);
  }
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
    const DrArg *arg = dr_graph_arg(graph, a);
    if (arg->kind == DR_ARG_BUFFER &&
        (arg->v.access < n->access_first || arg->v.access >= n->access_first + n->access_count))
      FAIL("I3: buffer arg %u of '%s' names an access of another node", a, n->id);
  }
  return TRUE;
}

/* I5 for alloc and free node i. */
static gboolean check_lifetime_node(const DrGraph *graph, DrId i, const DrNode *n, GError **error) {
  if (n->buffer >= graph->buffers->len) FAIL("I5: '%s' names no buffer", n->id);
  const DrBuffer *b = dr_graph_buffer(graph, n->buffer);
  if (b->where != DR_WHERE_DEVICE) FAIL("I5: '%s' names host buffer '%s'", n->id, b->name);
  /* The buffer records the first alloc and free; a second one is legal
   * IR until the lifetimes pass rejects it. */
  DrId first = n->op == DR_OP_ALLOC ? b->alloc_node : b->free_node;
  if (first == DR_NONE || first > i) FAIL("I5: buffer '%s' does not record '%s'", b->name, n->id);
  return TRUE;
}

/* The number of accesses a collective with n_parts participants has. */
static guint32 collective_accesses(const DrNode *n) {
  return n->op == DR_OP_SEND || n->op == DR_OP_RECV ? n->n_parts : 2 * n->n_parts;
}

/* I7 for collective node n. */
static gboolean check_collective(const DrNode *n, GError **error) {
  if (n->access_count != collective_accesses(n))
    FAIL("I7: collective '%s' has %u accesses for %u participants", n->id, n->access_count, n->n_parts);
  if (n->n_parts > DR_MAX_DEVICES) FAIL("I7: collective '%s' has %u participants", n->id, n->n_parts);
  return TRUE;
}

/* I1-I3, I5 and I7 for node i; advances the tiling cursors. */
static gboolean check_node(const DrGraph *graph, DrId i, guint32 *next_access, guint32 *next_arg,
                           GError **error) {
  const DrNode *n = dr_graph_node(graph, i);
  if (n->id == NULL || n->id[0] == '\0') FAIL("I1: node %u has no id", i);
  if (dr_graph_find_node(graph, n->id) != i) FAIL("I1: node id '%s' not unique", n->id);
  if (n->access_first != *next_access) FAIL("I2: accesses of '%s' do not tile", n->id);
  *next_access += n->access_count;
  if (n->arg_first != *next_arg) FAIL("I3: args of '%s' do not tile", n->id);
  *next_arg += n->arg_count;
  if (n->callback > graph->callbacks->len) FAIL("I3: host node '%s' names no callback", n->id);
  for (guint32 a = n->arg_first; n->callback && a < n->arg_first + n->arg_count; a++)
    if (dr_graph_arg(graph, a)->param >=
        g_array_index(graph->callbacks, DrCallback, n->callback - 1).n_params)
      FAIL("I3: arg %u of '%s' names no parameter of its host function", a, n->id);
  if (!check_node_ranges(graph, n, error)) return FALSE;
  if (n->op == DR_OP_KERNEL && !check_kernel_args(graph, n, error)) return FALSE;
  if ((n->op == DR_OP_ALLOC || n->op == DR_OP_FREE) && !check_lifetime_node(graph, i, n, error)) return FALSE;
  if (DR_OP_IS_COLLECTIVE(n->op) && !check_collective(n, error)) return FALSE;
  if (n->device < -1 || n->dev < -1) FAIL("I7: node '%s' names device %d", n->id, MIN(n->device, n->dev));
  return TRUE;
}

gboolean dr_graph_check(const DrGraph *graph, GError **error) {
  guint32 n_nodes = graph->nodes->len;
  guint32 next_access = 0, next_arg = 0;
  for (DrId i = 0; i < n_nodes; i++)
    if (!check_node(graph, i, &next_access, &next_arg, error)) return FALSE;
  if (next_access != graph->accesses->len)
    FAIL("I2: %u accesses belong to no node", graph->accesses->len - next_access);
  if (next_arg != graph->args->len) FAIL("I3: %u args belong to no node", graph->args->len - next_arg);
  for (guint i = 0; i < graph->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(graph, i);
    if (e->from >= n_nodes || e->to >= n_nodes) FAIL("I4: edge %u joins missing nodes", i);
    if (e->from == e->to) FAIL("I4: edge %u is a self loop on '%s'", i, dr_graph_node(graph, e->to)->id);
    if (e->kind != DR_EDGE_AFTER && e->from > e->to) FAIL("I4: hazard edge %u goes backward", i);
  }
  return TRUE;
}

/* ---- devices ----------------------------------------------------------- */

const gint32 *dr_graph_devices(const DrGraph *graph, guint32 *n) {
  g_return_val_if_fail(graph != NULL && n != NULL, NULL);
  if (graph->run.n_devices == 0) {
    *n = 1;
    return &graph->run.device;
  }
  *n = graph->run.n_devices;
  return graph->run.devices;
}

gint32 dr_graph_device_rank(const DrGraph *graph, gint32 device) {
  guint32 n;
  const gint32 *devs = dr_graph_devices(graph, &n);
  for (guint32 i = 0; i < n; i++)
    if (devs[i] == device) return (gint32)i;
  return -1;
}

gint32 dr_graph_buffer_device(const DrGraph *graph, DrId b) {
  const DrBuffer *buf = dr_graph_buffer(graph, b);
  if (buf->where != DR_WHERE_DEVICE) return -1;
  return buf->device_set ? buf->device : graph->run.device;
}

DrId dr_graph_copy_pageable(const DrGraph *graph, DrId v) {
  const DrNode *n = dr_graph_node(graph, v);
  for (guint32 a = n->access_first; n->op == DR_OP_COPY && a < n->access_first + n->access_count; a++) {
    DrId b = dr_graph_access(graph, a)->buffer;
    if (dr_graph_buffer(graph, b)->where == DR_WHERE_PAGEABLE) return b;
  }
  return DR_NONE;
}

void dr_graph_copy_ends(const DrGraph *graph, const DrNode *node, const DrAccess **src,
                        const DrAccess **dst) {
  *src = *dst = NULL;
  for (guint32 i = 0; i < node->access_count; i++) {
    const DrAccess *a = dr_graph_access(graph, node->access_first + i);
    if (a->mode == DR_ACCESS_READ && *src == NULL)
      *src = a;
    else if (dr_access_writes(a->mode) && *dst == NULL)
      *dst = a;
  }
}

gboolean dr_graph_copy_is_peer(const DrGraph *graph, DrId v, gint32 *src_dev, gint32 *dst_dev) {
  const DrNode *n = dr_graph_node(graph, v);
  if (n->op != DR_OP_COPY) return FALSE;
  const DrAccess *from, *to;
  dr_graph_copy_ends(graph, n, &from, &to);
  if (from == NULL || to == NULL) return FALSE;
  DrId src = from->buffer, dst = to->buffer;
  gint32 s = dr_graph_buffer_device(graph, src), d = dr_graph_buffer_device(graph, dst);
  if (s < 0 || d < 0) return FALSE;
  if (s == d && !(dr_graph_buffer(graph, src)->device_set && dr_graph_buffer(graph, dst)->device_set))
    return FALSE;
  if (src_dev) *src_dev = s;
  if (dst_dev) *dst_dev = d;
  return TRUE;
}

gint32 dr_graph_node_device(const DrGraph *graph, DrId v) {
  const DrNode *n = dr_graph_node(graph, v);
  if (DR_OP_IS_COLLECTIVE(n->op) && n->n_parts > 1) return -1;
  return n->dev >= 0 ? n->dev : graph->run.device;
}

guint64 dr_graph_release_threshold(const DrGraph *graph, gint32 device, gboolean *set) {
  const DrRunConfig *r = &graph->run;
  for (guint32 i = 0; i < r->n_device_thresholds; i++)
    if (r->device_thresholds[i].device == device) {
      if (set) *set = TRUE;
      return r->device_thresholds[i].bytes;
    }
  if (set) *set = r->release_threshold_set;
  return r->release_threshold;
}

/* ---- dump -------------------------------------------------------------- */

static void dump_access(const DrGraph *g, const DrAccess *a, GString *out) {
  const DrBuffer *b = dr_graph_buffer(g, a->buffer);
  g_string_append_printf(out, "%s %s[%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT "]",
                         dr_access_mode_name(a->mode), b->name, a->begin, a->end);
}

static void dump_run(const DrGraph *graph, GString *out) {
  const DrRunConfig *r = &graph->run;
  g_string_append_printf(out, "pipeline %s\n", graph->name);
  g_string_append_printf(out, "run mode=%s iterations=%u warmup=%u max_streams=%u%s device=%d",
                         dr_mode_name(r->mode), r->iterations, r->warmup, r->max_streams,
                         r->max_streams_set ? "" : "(default)", r->device);
  if (r->release_threshold_set)
    g_string_append_printf(out, " release_threshold=%" G_GUINT64_FORMAT, r->release_threshold);
  if (r->fallback_streams) g_string_append_printf(out, " fallback=%s", dr_fallback_name(DR_FALLBACK_STREAMS));
  if (r->memory_limit_set) g_string_append_printf(out, " memory_limit=%" G_GUINT64_FORMAT, r->memory_limit);
  if (r->reuse) g_string_append(out, " reuse=auto");
  if (r->issue_threads) g_string_append_printf(out, " issue_threads=%u", r->issue_threads);
  if (r->graph_cache) g_string_append_printf(out, " graph_cache=%u", r->graph_cache);
  for (guint32 i = 0; i < r->n_devices; i++)
    g_string_append_printf(out, "%s%d%s", i == 0 ? " devices=[" : ",", r->devices[i],
                           i + 1 == r->n_devices ? "]" : "");
  for (guint32 i = 0; i < r->n_device_thresholds; i++)
    g_string_append_printf(out, " release_threshold[%d]=%" G_GUINT64_FORMAT, r->device_thresholds[i].device,
                           r->device_thresholds[i].bytes);
  g_string_append_c(out, '\n');
}

static void dump_buffer(const DrGraph *graph, const DrBuffer *b, GString *out) {
  g_string_append_printf(out, "buffer %s %s[%" G_GUINT64_FORMAT "] %s", b->name, dr_elem_name(b->type),
                         b->count, dr_where_name(b->where));
  if (b->init != DR_INIT_NONE) {
    g_string_append_printf(out, " init=%s", dr_init_name(b->init));
    if (b->init == DR_INIT_RANDOM) g_string_append_printf(out, "(%" G_GUINT64_FORMAT ")", b->init_seed);
    if (b->init == DR_INIT_FILE) g_string_append_printf(out, "(%s)", b->init_path);
  }
  if (b->save_path) g_string_append_printf(out, " save=%s", b->save_path);
  if (b->verify == DR_VERIFY_SKIP) g_string_append(out, " verify=skip");
  if (b->verify == DR_VERIFY_TOLERANCE) {
    char r[G_ASCII_DTOSTR_BUF_SIZE], a[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(out, " verify=(rtol %s, atol %s)",
                           g_ascii_formatd(r, sizeof r, "%g", b->verify_rtol),
                           g_ascii_formatd(a, sizeof a, "%g", b->verify_atol));
  }
  if (b->device_set) g_string_append_printf(out, " device=%d", b->device);
  if (b->alloc_node != DR_NONE)
    g_string_append_printf(out, " alloc=%s", dr_graph_node(graph, b->alloc_node)->id);
  if (b->free_node != DR_NONE)
    g_string_append_printf(out, " free=%s", dr_graph_node(graph, b->free_node)->id);
  if (b->scratch) g_string_append(out, " scratch");
  if (b->param)
    g_string_append_printf(out, " param=%s", g_array_index(graph->params, DrRunParam, b->param - 1).name);
  g_string_append_c(out, '\n');
}

static void dump_kernel(const DrKernelDecl *k, GString *out) {
  if (k->name_expr)
    g_string_append_printf(out, "kernel %s name=\"%s\" (", k->name, k->name_expr);
  else
    g_string_append_printf(out, "kernel %s entry=%s (", k->name, k->entry ? k->entry : k->name);
  for (guint32 p = 0; p < k->n_params; p++) {
    const DrParam *pp = &k->params[p];
    g_string_append_printf(out, "%s%s %s%s", p ? ", " : "", pp->name, dr_elem_name(pp->type),
                           pp->is_pointer ? "*" : "");
    if (pp->is_pointer) g_string_append_printf(out, " %s", dr_access_mode_name(pp->access));
  }
  g_string_append(out, ")");
  for (guint32 i = 0; i < k->n_include_dirs; i++) g_string_append_printf(out, " -I%s", k->include_dirs[i]);
  for (guint32 i = 0; i < k->n_defines; i++) g_string_append_printf(out, " -D%s", k->defines[i]);
  if (k->twin_lib) g_string_append_printf(out, " host_twin=%s:%s", k->twin_lib, k->twin_fn);
  g_string_append_c(out, '\n');
}

/* The node's line: id, op and what the op names, then its settings. */
static void dump_node_line(const DrGraph *graph, const DrNode *n, GString *out) {
  g_string_append_printf(out, "node %s %s", n->id, dr_op_name(n->op));
  if (n->op == DR_OP_KERNEL) g_string_append_printf(out, " %s", dr_graph_kernel(graph, n->kernel)->name);
  const DrCallback *cb = n->op == DR_OP_HOST && n->callback
                             ? &g_array_index(graph->callbacks, DrCallback, n->callback - 1)
                             : NULL;
  if (cb != NULL && cb->lib != NULL)
    g_string_append_printf(out, " lib=%s symbol=%s", cb->lib, cb->symbol);
  else if (cb != NULL && cb->call != NULL)
    g_string_append(out, " <host fn>");
  else if (cb != NULL)
    g_string_append(out, " <callback>");
  else if (n->op == DR_OP_HOST)
    g_string_append_printf(out, " %s", dr_host_fn_name(n->host_fn));
  if (n->op == DR_OP_MEMSET) g_string_append_printf(out, " value=%u", n->memset_value);
  if (n->op == DR_OP_ALLOC || n->op == DR_OP_FREE)
    g_string_append_printf(out, " %s", dr_graph_buffer(graph, n->buffer)->name);
  if (n->priority != DR_PRIORITY_NORMAL)
    g_string_append_printf(out, " priority=%s", dr_priority_name(n->priority));
  if (n->device >= 0) g_string_append_printf(out, " device=%d", n->device);
  if (DR_OP_IS_COLLECTIVE(n->op)) {
    if (n->op == DR_OP_ALLREDUCE || n->op == DR_OP_REDUCE || n->op == DR_OP_REDUCESCATTER)
      g_string_append_printf(out, " reduce=%s", dr_reduce_name(n->reduce));
    if (n->root >= 0) g_string_append_printf(out, " root=%d", n->root);
    if (n->peer >= 0) g_string_append_printf(out, " peer=%d", n->peer);
    g_string_append_printf(out, " parts=%u%s", n->n_parts, n->per_rank ? " per_rank" : "");
  }
  /* the resolved device, only where there is a choice (keeps one-device dumps as they were) */
  if (graph->run.n_devices > 1) g_string_append_printf(out, " dev=%d", n->dev);
  if (n->label) g_string_append_printf(out, " label=\"%s\"", n->label);
  if (n->grid[0]) g_string_append_printf(out, " grid=[%u,%u,%u]", n->grid[0], n->grid[1], n->grid[2]);
  if (n->block[0]) g_string_append_printf(out, " block=[%u,%u,%u]", n->block[0], n->block[1], n->block[2]);
  if (n->shared) g_string_append_printf(out, " shared=%u", n->shared);
  g_string_append_c(out, '\n');
}

static void dump_arg(const DrGraph *graph, const DrArg *arg, const char *pname, GString *out) {
  g_string_append_printf(out, "  arg %s = ", pname);
  switch (arg->kind) {
    case DR_ARG_BUFFER:
      dump_access(graph, dr_graph_access(graph, arg->v.access), out);
      break;
    case DR_ARG_INT:
      g_string_append_printf(out, "%" G_GINT64_FORMAT, arg->v.i);
      break;
    case DR_ARG_FLOAT:
      g_string_append_printf(out, "%.17g", arg->v.f);
      break;
    case DR_ARG_STRING:
      g_string_append_printf(out, "\"%s\"", arg->v.s);
      break;
  }
  g_string_append_c(out, '\n');
}

static void dump_node(const DrGraph *graph, const DrNode *n, GString *out) {
  dump_node_line(graph, n, out);
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    g_string_append(out, "  access ");
    dump_access(graph, dr_graph_access(graph, a), out);
    g_string_append_c(out, '\n');
  }
  const DrParam *params = NULL;
  guint32 n_params = 0;
  if (n->op == DR_OP_KERNEL) {
    params = dr_graph_kernel(graph, n->kernel)->params;
    n_params = dr_graph_kernel(graph, n->kernel)->n_params;
  } else if (n->op == DR_OP_HOST && !n->callback) {
    params = dr_host_fn_params(n->host_fn, &n_params);
  } else if (n->op == DR_OP_HOST) {
    params = g_array_index(graph->callbacks, DrCallback, n->callback - 1).params;
    n_params = g_array_index(graph->callbacks, DrCallback, n->callback - 1).n_params;
  }
  for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
    const DrArg *arg = dr_graph_arg(graph, a);
    dump_arg(graph, arg, arg->param < n_params ? params[arg->param].name : "?", out);
  }
}

static void dump_nodes_edges(const DrGraph *graph, GString *out);

/* Each loop's header and its bodies' nodes and edges (scoped ids). */
static void dump_loops(const DrGraph *graph, GString *out) {
  for (guint i = 0; i < dr_graph_n_loops(graph); i++) {
    const DrLoop *l = dr_graph_loop(graph, i);
    g_string_append_printf(out, "loop %s %s", l->id, dr_loop_kind_name(l->kind));
    if (l->kind == DR_LOOP_REPEAT)
      g_string_append_printf(out, " %" G_GUINT64_FORMAT "%s\n", l->count, l->counted ? " counted" : "");
    else
      g_string_append_printf(out, " %s\n", dr_graph_buffer(graph, l->cond)->name);
    dump_nodes_edges(l->body, out);
    if (l->else_body != NULL) {
      g_string_append_printf(out, "else %s\n", l->id);
      dump_nodes_edges(l->else_body, out);
    }
    g_string_append_printf(out, "end %s\n", l->id);
  }
}

/* `params:` and their uses (nothing without them): a parameter per line
 * with its range, then each use with what it patches and its text. */
static void dump_params(const DrGraph *graph, GString *out) {
  for (guint i = 0; i < graph->params->len; i++) {
    const DrRunParam *rp = &g_array_index(graph->params, DrRunParam, i);
    char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE], c[G_ASCII_DTOSTR_BUF_SIZE];
    if (rp->type == DR_RUN_PARAM_INT) {
      g_string_append_printf(out, "param %s int default %" G_GINT64_FORMAT, rp->name, rp->i_def);
      if (rp->has_min) g_string_append_printf(out, " min %" G_GINT64_FORMAT, rp->i_min);
      if (rp->has_max) g_string_append_printf(out, " max %" G_GINT64_FORMAT, rp->i_max);
    } else {
      g_string_append_printf(out, "param %s float default %s", rp->name,
                             g_ascii_dtostr(a, sizeof a, rp->f_def));
      if (rp->has_min) g_string_append_printf(out, " min %s", g_ascii_dtostr(b, sizeof b, rp->f_min));
      if (rp->has_max) g_string_append_printf(out, " max %s", g_ascii_dtostr(c, sizeof c, rp->f_max));
    }
    g_string_append_c(out, '\n');
  }
  static const char *const kinds[] = {
#define DR_X(e, s) s,
      DR_PARAM_USE_LIST(DR_X)
#undef DR_X
  };
  for (guint i = 0; i < graph->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(graph->param_uses, DrParamUse, i);
    g_string_append_printf(out, "param-use %s %s '%s'", dr_graph_node(graph, u->node)->id, kinds[u->kind],
                           u->text);
    for (guint32 k = 0; k < u->n_vars; k++) {
      const DrParamVar *v = &g_array_index(graph->param_vars, DrParamVar, u->var_first + k);
      if (strcmp(v->name, "rank") == 0 || strcmp(v->name, "nranks") == 0 ||
          strcmp(v->name, "local_rank") == 0)
        continue;
      g_string_append_printf(out, " %s=%" G_GINT64_FORMAT, v->name, v->value);
    }
    g_string_append_c(out, '\n');
  }
}

void dr_graph_dump(const DrGraph *graph, GString *out) {
  dump_run(graph, out);
  dump_params(graph, out);
  for (guint i = 0; i < graph->buffers->len; i++) dump_buffer(graph, dr_graph_buffer(graph, i), out);
  for (guint i = 0; i < graph->kernels->len; i++)
    if (dr_graph_kernel(graph, i)->origin == DR_KERNEL_USER) dump_kernel(dr_graph_kernel(graph, i), out);
  dump_nodes_edges(graph, out);
}

static void dump_nodes_edges(const DrGraph *graph, GString *out) {
  for (guint i = 0; i < graph->nodes->len; i++) dump_node(graph, dr_graph_node(graph, i), out);
  for (guint i = 0; i < graph->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(graph, i);
    g_string_append_printf(out, "edge %s -> %s %s", dr_graph_node(graph, e->from)->id,
                           dr_graph_node(graph, e->to)->id, dr_edge_kind_name(e->kind));
    if (e->buffer != DR_NONE) g_string_append_printf(out, " %s", dr_graph_buffer(graph, e->buffer)->name);
    g_string_append_c(out, '\n');
  }
  dump_loops(graph, out);
}
