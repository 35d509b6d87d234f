/* cycles.c: the cycle pass, rejecting `after:` entries that close a loop.
 *
 * Requires: every edge in graph->edges (hazards and afters have run).
 * Hazard edges go forward in program order, so only AFTER edges can close a
 * cycle. Provides: TRUE when the edges form a DAG; otherwise, per cycle
 * found, an error at the `after:` entry that closes it,
 *   FILE:LINE:COL: error: dependency cycle: a -> b -> c -> a
 * where a is the cycle's earliest node in program order and c -> a the
 * (backward) after entry, and one note per edge of the cycle, in order, at
 * the after entry (AFTER) or the later node (hazards), saying why it is
 * there: "'b' writes x after 'a' reads it". It changes nothing.
 *
 * Algorithm: when every edge goes forward (no backward after:), program
 * order is a topological order and there is nothing to do. Otherwise,
 * Kahn's topological sort over in/out adjacency arrays (CSR of edge
 * indices); when it leaves nodes unprocessed, each of them has an
 * unprocessed predecessor, so walking predecessors from one must revisit a
 * node of the walk: that closes a cycle. Walks from every unprocessed node,
 * each node entered at most once, report the distinct cycles they close.
 * Iterative throughout; O(V + E) time and memory. */
#include "scheduler/passes.h"

typedef struct {
  guint32 *first; /* [n_nodes + 1]: edges of node v are idx[first[v] .. first[v+1]) */
  guint32 *idx;   /* edge indices */
} Csr;

static void csr_build(Csr *c, const DrGraph *g, gboolean by_to) {
  guint32 n = dr_graph_n_nodes(g), m = g->edges->len;
  c->first = g_new0(guint32, n + 1);
  c->idx = g_new(guint32, MAX(m, 1));
  for (guint32 e = 0; e < m; e++) {
    const DrEdge *edge = dr_graph_edge(g, e);
    c->first[(by_to ? edge->to : edge->from) + 1]++;
  }
  for (guint32 v = 0; v < n; v++) c->first[v + 1] += c->first[v];
  g_autofree guint32 *fill = g_memdup2(c->first, sizeof(guint32) * (n + 1));
  for (guint32 e = 0; e < m; e++) {
    const DrEdge *edge = dr_graph_edge(g, e);
    c->idx[fill[by_to ? edge->to : edge->from]++] = e;
  }
}

static void csr_clear(Csr *c) {
  g_free(c->first);
  g_free(c->idx);
}

static guint64 pair_key(DrId from, DrId to) { return ((guint64)from << 32) | to; }

/* Where an edge comes from: its after: entry, or the node it leads to. */
static DrLoc edge_loc(const DrGraph *g, GHashTable *afters, const DrEdge *e) {
  if (e->kind == DR_EDGE_AFTER) {
    guint64 key = pair_key(e->from, e->to);
    gpointer v = g_hash_table_lookup(afters, &key);
    if (v != NULL) return g_array_index(g->afters, DrAfter, GPOINTER_TO_UINT(v) - 1).loc;
  }
  return dr_graph_node(g, e->to)->loc;
}

static void note_edge(const DrGraph *g, GHashTable *afters, const DrEdge *e, DrDiags *diags) {
  const char *from = dr_graph_node(g, e->from)->id, *to = dr_graph_node(g, e->to)->id;
  const char *buf = e->buffer != DR_NONE ? dr_graph_buffer(g, e->buffer)->name : "?";
  DrLoc loc = edge_loc(g, afters, e);
  switch (e->kind) {
    case DR_EDGE_RAW:
      dr_diags_note(diags, loc, "'%s' reads %s after '%s' writes it", to, buf, from);
      break;
    case DR_EDGE_WAR:
      dr_diags_note(diags, loc, "'%s' writes %s after '%s' reads it", to, buf, from);
      break;
    case DR_EDGE_WAW:
      dr_diags_note(diags, loc, "'%s' writes %s after '%s' writes it", to, buf, from);
      break;
    case DR_EDGE_AFTER:
      dr_diags_note(diags, loc, "'%s' lists '%s' in after:", to, from);
      break;
    case DR_EDGE_OUTPUT:
      dr_diags_note(diags, loc, "'%s' writes to the terminal after '%s' does (they keep file order)", to,
                    from);
      break;
  }
}

/* Reports the cycle whose edges, in dependency order, are cyc[0 .. len). */
static void report(const DrGraph *g, GHashTable *afters, const guint32 *cyc, guint32 len, DrDiags *diags) {
  /* Start at the earliest node: the edge into it goes backward, so it is
   * the after: entry that closes the cycle, printed last. */
  guint32 start = 0;
  for (guint32 i = 1; i < len; i++)
    if (dr_graph_edge(g, cyc[i])->from < dr_graph_edge(g, cyc[start])->from) start = i;
  const DrEdge *closing = dr_graph_edge(g, cyc[(start + len - 1) % len]);
  GString *msg = g_string_new("dependency cycle: ");
  g_string_append(msg, dr_graph_node(g, dr_graph_edge(g, cyc[start])->from)->id);
  for (guint32 i = 0; i < len; i++)
    g_string_append_printf(msg, " -> %s", dr_graph_node(g, dr_graph_edge(g, cyc[(start + i) % len])->to)->id);
  dr_diags_error(diags, edge_loc(g, afters, closing), "%s", msg->str);
  g_string_free(msg, TRUE);
  for (guint32 i = 0; i < len; i++) note_edge(g, afters, dr_graph_edge(g, cyc[(start + i) % len]), diags);
}

static GHashTable *afters_index(const DrGraph *g, guint64 *keys) {
  GHashTable *t = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < g->afters->len; i++) {
    const DrAfter *a = &g_array_index(g->afters, DrAfter, i);
    keys[i] = pair_key(a->from, a->to);
    if (!g_hash_table_contains(t, &keys[i])) g_hash_table_insert(t, &keys[i], GUINT_TO_POINTER(i + 1));
  }
  return t;
}

gboolean dr__cycles_check(const DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  /* Edges that all go forward in program order cannot close a cycle: the
   * common case costs one scan and no memory. */
  gboolean backward = FALSE;
  for (guint i = 0; i < graph->edges->len && !backward; i++)
    backward = dr_graph_edge(graph, i)->from > dr_graph_edge(graph, i)->to;
  if (!backward) return TRUE;

  guint32 n = dr_graph_n_nodes(graph);
  Csr out;
  csr_build(&out, graph, FALSE);

  /* Kahn: indeg[v] ends > 0 exactly for the nodes no order can place. */
  g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
  g_autofree DrId *queue = g_new(DrId, MAX(n, 1));
  guint32 head = 0, tail = 0;
  for (guint i = 0; i < graph->edges->len; i++) indeg[dr_graph_edge(graph, i)->to]++;
  for (DrId v = 0; v < n; v++)
    if (indeg[v] == 0) queue[tail++] = v;
  while (head < tail) {
    DrId u = queue[head++];
    for (guint32 i = out.first[u]; i < out.first[u + 1]; i++) {
      DrId w = dr_graph_edge(graph, out.idx[i])->to;
      if (--indeg[w] == 0) queue[tail++] = w;
    }
  }
  gboolean acyclic = tail == n;
  csr_clear(&out);

  if (!acyclic) {
    Csr in;
    csr_build(&in, graph, TRUE);
    /* Predecessor walks over the unplaced nodes. state: 0 new, 1 on the
     * current walk (pos = its index there), 2 done. The walk's edges
     * (into walk[i] from walk[i+1]) go into path. */
    g_autofree guint8 *state = g_new0(guint8, n);
    g_autofree guint32 *pos = g_new(guint32, n);
    g_autofree DrId *walk = g_new(DrId, n);
    g_autofree guint32 *path = g_new(guint32, n);
    g_autofree guint32 *cyc = g_new(guint32, n);
    g_autofree guint64 *keys = g_new(guint64, MAX(graph->afters->len, 1));
    GHashTable *afters = afters_index(graph, keys);
    for (DrId v = 0; v < n && !dr_diags_full(diags); v++) {
      if (indeg[v] == 0 || state[v] != 0) continue;
      guint32 len = 0;
      DrId u = v;
      while (state[u] == 0) {
        state[u] = 1;
        pos[u] = len;
        walk[len] = u;
        for (guint32 i = in.first[u];; i++) { /* an unplaced predecessor exists */
          const DrEdge *e = dr_graph_edge(graph, in.idx[i]);
          if (indeg[e->from] > 0) {
            path[len++] = in.idx[i];
            u = e->from;
            break;
          }
        }
      }
      if (state[u] == 1) {
        /* walk[pos[u]] .. walk[len-1] is the cycle; its edges in dependency
         * order are path[len-1], path[len-2], ..., path[pos[u]]. */
        guint32 clen = 0;
        for (guint32 i = len; i-- > pos[u];) cyc[clen++] = path[i];
        report(graph, afters, cyc, clen, diags);
      }
      for (guint32 i = 0; i < len; i++) state[walk[i]] = 2;
    }
    g_hash_table_unref(afters);
    csr_clear(&in);
  }
  return acyclic;
}
