/* hazards.c: the hazard pass, RAW/WAR/WAW edges from program order.
 *
 * Requires: a parsed graph whose lifetimes passed (lifetimes.c); accesses
 * within their buffers' bounds. Provides: hazard edges (from < to, kind and
 * buffer set) whose transitive closure is exactly the order that running the
 * nodes one at a time in file order implies: a node comes after every
 * earlier node that writes a range it reads or writes (RAW, WAW), or reads a
 * range it writes (WAR). Ranges are element ranges [begin, end); ranges that
 * only touch do not conflict, a read after a read makes no edge. alloc and
 * free are whole-buffer writes: the parser gives them that access, and an
 * alloc/free node without one gets it here. The edge set is not minimal (the
 * planner removes redundancy) but never blows up: a write after k readers
 * adds k WAR edges, a write after a write one WAW edge, and a write after
 * readers no WAW edge (the readers already follow that writer).
 *
 * Algorithm: per buffer, an ordered map of disjoint segments that tile
 * [0, count), each holding the last writer of its elements and the readers
 * since that write. The map is a treap keyed by the segment's begin, with
 * iterative split and merge, nodes in one array, and reader lists as
 * immutable cons cells shared between the halves of a split segment. An
 * access [b, e) cuts the map at b and e (splitting at most two segments),
 * splits out the subtree M of segments inside [b, e), and for each of them
 * adds RAW (to its writer, for reads) and WAR (to its readers) or WAW (to its
 * writer, when it has no readers, for writes). A write then replaces M by
 * one segment (coalescing); a read prepends the node to each M segment's
 * reader list. Edges to one target are deduplicated by a per-source stamp
 * (the last target an edge from it went to), so each (from, to) pair is
 * added once. A node's accesses are processed one after another; its own
 * earlier accesses never produce an edge (stamp), and what they hide from a
 * later access of the same node is already ordered by their own edges.
 *
 * Cost: O(A log S + V + T) time for A accesses, V nodes, S segments (at most
 * 2A + buffers) and T segment visits, where T is the number of (access,
 * overlapped segment) pairs: one per access in a pipeline of whole buffers
 * or aligned chunks, bounded in general by the edges a non-deduplicated
 * inference would add. Memory: O(S + V + reader cells). */
#include "scheduler/passes.h"

#define NIL G_MAXUINT32

typedef struct {
  guint64 begin, end;
  DrId writer;      /* last writer of these elements, DR_NONE: none yet */
  guint32 readers;  /* reader cell list since that write, NIL: none */
  guint32 left, right;
  guint32 prio;     /* treap heap order: a parent's prio >= its children's */
} Seg;

typedef struct {
  DrId node;
  guint32 next;
} ReaderCell;

typedef struct {
  DrGraph *graph;
  Seg *segs; /* segment pool; freed ones chain through `left` */
  guint32 n_segs, cap_segs, free_segs;
  GArray *cells;   /* ReaderCell, never freed during the pass */
  guint32 *root;   /* [n_buffers]: each buffer's treap, NIL until touched */
  DrId *stamp;     /* [n_nodes]: the last target an edge from it went to */
  GArray *stack;   /* guint32, scratch for walking M */
  guint32 rng;
} Hazards;

static guint32 next_prio(Hazards *hz) {
  /* xorshift32: deterministic, so the edge order is reproducible. */
  guint32 x = hz->rng;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return hz->rng = x;
}

static guint32 seg_new(Hazards *hz, guint64 begin, guint64 end, DrId writer, guint32 readers) {
  guint32 s;
  if (hz->free_segs != NIL) {
    s = hz->free_segs;
    hz->free_segs = hz->segs[s].left;
  } else {
    if (hz->n_segs == hz->cap_segs) {
      hz->cap_segs = MAX(64, hz->cap_segs * 2);
      hz->segs = g_renew(Seg, hz->segs, hz->cap_segs);
    }
    s = hz->n_segs++;
  }
  hz->segs[s] = (Seg){begin, end, writer, readers, NIL, NIL, next_prio(hz)};
  return s;
}

static void seg_release(Hazards *hz, guint32 s) {
  hz->segs[s].left = hz->free_segs;
  hz->free_segs = s;
}

/* Splits treap t into *l (begin < key) and *r (begin >= key). */
static void treap_split(Seg *segs, guint32 t, guint64 key, guint32 *l, guint32 *r) {
  guint32 *lp = l, *rp = r;
  while (t != NIL) {
    if (segs[t].begin < key) {
      *lp = t;
      lp = &segs[t].right;
      t = segs[t].right;
    } else {
      *rp = t;
      rp = &segs[t].left;
      t = segs[t].left;
    }
  }
  *lp = *rp = NIL;
}

/* Joins treaps a and b, every key of a below every key of b. */
static guint32 treap_merge(Seg *segs, guint32 a, guint32 b) {
  guint32 root = NIL, *p = &root;
  while (a != NIL && b != NIL) {
    if (segs[a].prio >= segs[b].prio) {
      *p = a;
      p = &segs[a].right;
      a = segs[a].right;
    } else {
      *p = b;
      p = &segs[b].left;
      b = segs[b].left;
    }
  }
  *p = a != NIL ? a : b;
  return root;
}

/* Makes `pos` a segment boundary of the map at *root (which tiles
 * [0, count)), splitting the segment that contains it. */
static void cut(Hazards *hz, guint32 *root, guint64 pos) {
  guint32 t = *root, s = NIL;
  while (t != NIL) {
    if (hz->segs[t].begin <= pos) {
      s = t;
      t = hz->segs[t].right;
    } else {
      t = hz->segs[t].left;
    }
  }
  if (s == NIL || hz->segs[s].begin == pos || hz->segs[s].end <= pos) return;
  guint32 half = seg_new(hz, pos, hz->segs[s].end, hz->segs[s].writer, hz->segs[s].readers);
  hz->segs[s].end = pos;
  guint32 l, r;
  treap_split(hz->segs, *root, pos, &l, &r);
  *root = treap_merge(hz->segs, treap_merge(hz->segs, l, half), r);
}

static void depend(Hazards *hz, DrId from, DrId to, DrEdgeKind kind, DrId buffer) {
  if (from == to || hz->stamp[from] == to) return;
  hz->stamp[from] = to;
  dr_graph_add_edge(hz->graph, from, to, kind, buffer);
}

/* Adds the edges node `n`'s access [b, e) of `buffer` needs and records it
 * in the buffer's map. */
static void access(Hazards *hz, DrId n, DrId buffer, DrAccessMode mode, guint64 b, guint64 e) {
  if (b >= e) return;
  gboolean reads = dr_access_reads(mode), writes = dr_access_writes(mode);
  guint32 *root = &hz->root[buffer];
  if (*root == NIL) *root = seg_new(hz, 0, dr_graph_buffer(hz->graph, buffer)->count, DR_NONE, NIL);
  cut(hz, root, b);
  cut(hz, root, e);
  guint32 l, m, r;
  treap_split(hz->segs, *root, b, &l, &r);
  treap_split(hz->segs, r, e, &m, &r);

  /* Visit M's segments in any order; children are read before a release
   * reuses `left`. */
  g_array_set_size(hz->stack, 0);
  if (m != NIL) g_array_append_val(hz->stack, m);
  while (hz->stack->len > 0) {
    guint32 s = g_array_index(hz->stack, guint32, --hz->stack->len);
    Seg seg = hz->segs[s];
    if (seg.left != NIL) g_array_append_val(hz->stack, seg.left);
    if (seg.right != NIL) g_array_append_val(hz->stack, seg.right);
    if (reads && seg.writer != DR_NONE) depend(hz, seg.writer, n, DR_EDGE_RAW, buffer);
    if (writes) {
      for (guint32 c = seg.readers; c != NIL; c = g_array_index(hz->cells, ReaderCell, c).next)
        depend(hz, g_array_index(hz->cells, ReaderCell, c).node, n, DR_EDGE_WAR, buffer);
      if (seg.readers == NIL && seg.writer != DR_NONE) depend(hz, seg.writer, n, DR_EDGE_WAW, buffer);
      seg_release(hz, s);
    } else if (seg.readers == NIL || g_array_index(hz->cells, ReaderCell, seg.readers).node != n) {
      ReaderCell cell = {n, seg.readers};
      hz->segs[s].readers = hz->cells->len;
      g_array_append_val(hz->cells, cell);
    }
  }
  if (writes) m = seg_new(hz, b, e, n, NIL);
  *root = treap_merge(hz->segs, treap_merge(hz->segs, l, m), r);
}

void dr__hazards_run(DrGraph *graph) {
  g_return_if_fail(graph != NULL);
  guint32 n_nodes = dr_graph_n_nodes(graph), n_buffers = dr_graph_n_buffers(graph);
  Hazards hz = {
      .graph = graph,
      .free_segs = NIL,
      .cells = g_array_new(FALSE, FALSE, sizeof(ReaderCell)),
      .root = g_new(guint32, MAX(n_buffers, 1)),
      .stamp = g_new(DrId, MAX(n_nodes, 1)),
      .stack = g_array_new(FALSE, FALSE, sizeof(guint32)),
      .rng = 0x9e3779b9u,
  };
  for (guint32 i = 0; i < n_buffers; i++) hz.root[i] = NIL;
  for (guint32 i = 0; i < n_nodes; i++) hz.stamp[i] = DR_NONE;

  for (DrId n = 0; n < n_nodes; n++) {
    const DrNode *node = dr_graph_node(graph, n);
    gboolean owns_access = FALSE; /* alloc/free: its whole-buffer write */
    for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
      const DrAccess *a = dr_graph_access(graph, i);
      owns_access |= a->buffer == node->buffer;
      access(&hz, n, a->buffer, a->mode, a->begin, a->end);
    }
    if ((node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) && !owns_access)
      access(&hz, n, node->buffer, DR_ACCESS_WRITE, 0, dr_graph_buffer(graph, node->buffer)->count);
  }

  g_free(hz.segs);
  g_array_unref(hz.cells);
  g_free(hz.root);
  g_free(hz.stamp);
  g_array_unref(hz.stack);
}
