/* hazards.c: the hazard pass, RAW/WAR/WAW edges from program order.
 *
 * Requires: a parsed graph whose lifetimes passed (lifetimes.c); accesses
 * within their buffers' bounds. Provides: hazard edges (from < to, kind and
 * buffer set) whose transitive closure is exactly the order that running the
 * nodes one at a time in file order implies: a node comes after every
 * earlier node that writes a range it reads or writes (RAW, WAW), or reads a
 * range it writes (WAR). Ranges are element ranges [begin, end); ranges that
 * only touch do not conflict, a read after a read makes no edge. Nodes that
 * print (print and checksum host nodes) also write one implicit resource,
 * the terminal: an OUTPUT edge from each to the next keeps their output in
 * file order (one edge per such node, O(V)). alloc and
 * free are whole-buffer writes: the parser gives them that access, and an
 * alloc/free node without one gets it here. The edge set is not minimal (the
 * planner removes redundancy) but never blows up: a write after k readers
 * adds k WAR edges, a write after a write one WAW edge, and a write after
 * readers no WAW edge (the readers already follow that writer).
 *
 * Algorithm: per buffer, an ordered map of disjoint segments ("runs"), each
 * holding the last writer of its elements and the readers since that write.
 * Because the whole program is known, the map's keys are compressed first:
 * each buffer's distinct access boundaries are gathered (a small cache drops
 * most repeats), radix-sorted (skipped when already in order) and
 * deduplicated, so a boundary becomes a dense index and the map becomes plain
 * arrays over those indices (writer, reader list head) plus a hierarchical
 * bitset marking where runs start, whose next/previous-set-bit queries cost
 * O(log64 P) word operations. A boundary's index is found next to the
 * buffer's previous lookup (slices in file order) or by a binary search over
 * every 8th boundary and a short scan, which keeps cache misses few on big
 * maps. An access [b, e) makes b and e run starts, splitting at most two runs
 * (a split copies the run's state; reader lists are immutable cons cells, so
 * both halves share theirs), then visits the runs inside [b, e): RAW to each
 * run's writer for a read; WAR to each run's readers, or WAW to its writer
 * when it has none, for a write. A write then coalesces the runs into one
 * with itself as writer; a read prepends itself to each run's reader list.
 * Edges to one target are deduplicated by a per-source stamp (the last target
 * an edge from it went to), so each (from, to) pair is added once. A node's
 * accesses are processed one after another; its own earlier accesses never
 * produce an edge (stamp), and what they hide from its later accesses is
 * already ordered by their own edges.
 *
 * Cost: O(A log P + V + T + R) time for A accesses, V nodes, P distinct
 * boundaries, T run visits (one per access when accesses cover whole buffers
 * or the same chunks; more when a wide access spans many finer runs, each run
 * visited once per access) and R reader cells walked by writes (each a WAR
 * edge candidate). Memory: O(P + V + reader cells), plus the sort's O(P)
 * scratch when some buffer's slices are out of order. Measured (this pass
 * alone, one core of the GPU host): a million nodes of three whole-buffer or
 * chunked accesses each 0.26-0.38 s, a million sequential fine slices 0.3 s,
 * a million random unaligned 8-element slices over 16 buffers (6M distinct
 * boundaries, bound by cache misses in the boundary lookup) 1.8-2.8 s. */
#include "scheduler/passes.h"

#include <string.h>

#define NIL G_MAXUINT32
#define NO_BIT G_MAXSIZE
#define SAMPLE 8

/* ---- a hierarchical bitset: next/previous set bit in O(log64 n) ------- */

#define BITS_MAX_LEVELS 8

typedef struct {
  guint n_levels;
  guint64 *level[BITS_MAX_LEVELS]; /* level l+1 bit w: level l word w is nonzero */
} Bits;

static void bits_init(Bits *bs, gsize n) {
  bs->n_levels = 0;
  do {
    gsize words = MAX((n + 63) / 64, 1);
    bs->level[bs->n_levels++] = g_new0(guint64, words);
    n = words;
  } while (n > 1 && bs->n_levels < BITS_MAX_LEVELS);
}

static void bits_clear_all(Bits *bs) {
  for (guint l = 0; l < bs->n_levels; l++) g_free(bs->level[l]);
}

static gboolean bits_test(const Bits *bs, gsize x) { return (bs->level[0][x >> 6] >> (x & 63)) & 1; }

static void bits_set(Bits *bs, gsize x) {
  for (guint l = 0; l < bs->n_levels; l++, x >>= 6) {
    guint64 old = bs->level[l][x >> 6];
    bs->level[l][x >> 6] = old | (G_GUINT64_CONSTANT(1) << (x & 63));
    if (old != 0) break;
  }
}

static void bits_unset(Bits *bs, gsize x) {
  for (guint l = 0; l < bs->n_levels; l++, x >>= 6) {
    bs->level[l][x >> 6] &= ~(G_GUINT64_CONSTANT(1) << (x & 63));
    if (bs->level[l][x >> 6] != 0) break;
  }
}

/* The smallest set index >= x, or NO_BIT. `n0` is level 0's bit count. */
static gsize bits_next(const Bits *bs, gsize n0, gsize x) {
  gsize n = n0;
  for (guint l = 0; l < bs->n_levels; l++) {
    if (x >= n) return NO_BIT;
    guint64 word = bs->level[l][x >> 6] & (~G_GUINT64_CONSTANT(0) << (x & 63));
    if (word != 0) {
      x = (x & ~(gsize)63) | (gsize)__builtin_ctzll(word);
      while (l-- > 0) x = (x << 6) | (gsize)__builtin_ctzll(bs->level[l][x]);
      return x;
    }
    x = (x >> 6) + 1;
    n = (n + 63) / 64;
  }
  return NO_BIT;
}

/* The largest set index <= x, or NO_BIT. */
static gsize bits_prev(const Bits *bs, gsize x) {
  for (guint l = 0; l < bs->n_levels; l++) {
    guint64 word = bs->level[l][x >> 6] & (~G_GUINT64_CONSTANT(0) >> (63 - (x & 63)));
    if (word != 0) {
      x = (x & ~(gsize)63) | (gsize)(63 - __builtin_clzll(word));
      while (l-- > 0) x = (x << 6) | (gsize)(63 - __builtin_clzll(bs->level[l][x]));
      return x;
    }
    if ((x >> 6) == 0) return NO_BIT;
    x = (x >> 6) - 1;
  }
  return NO_BIT;
}

/* ---- the accesses the pass sees ---------------------------------------- */

/* Visits node n's accesses, then the whole-buffer write an alloc/free node
 * without its own access implies. */
typedef struct {
  const DrGraph *graph;
  const DrNode *node;
  guint32 next, end;
  gboolean owns; /* saw an access of node->buffer */
  gboolean done;
  DrAccess implied;
} AccessIter;

static void iter_init(AccessIter *it, const DrGraph *g, DrId n) {
  it->graph = g;
  it->node = dr_graph_node(g, n);
  it->next = it->node->access_first;
  it->end = it->node->access_first + it->node->access_count;
  it->owns = FALSE;
  it->done = FALSE;
}

/* Returns the next access (borrowed until the next call), or NULL. */
static const DrAccess *iter_next(AccessIter *it) {
  if (it->next < it->end) {
    const DrAccess *a = dr_graph_access(it->graph, it->next++);
    it->owns |= a->buffer == it->node->buffer;
    return a;
  }
  if (it->done) return NULL;
  it->done = TRUE;
  if ((it->node->op != DR_OP_ALLOC && it->node->op != DR_OP_FREE) || it->owns) return NULL;
  it->implied = (DrAccess){it->node->buffer, DR_ACCESS_WRITE, 0,
                           dr_graph_buffer(it->graph, it->node->buffer)->count, it->node->loc};
  return &it->implied;
}

/* ---- boundary compression ---------------------------------------------- */

#define SEEN_SLOTS 4096

typedef struct {
  DrId buffer;
  guint64 value;
} Seen;

/* Visits every access boundary, skipping most repeats through a
 * direct-mapped cache (others may come twice; sorting drops them): counts
 * them per buffer into count[b + 1] when pts is NULL, else stores them at
 * pts[fill[b]++]. Both calls see the same sequence. */
static void gather(const DrGraph *g, Seen *seen, gsize *count, guint64 *pts, gsize *fill) {
  for (guint s = 0; s < SEEN_SLOTS; s++) seen[s] = (Seen){DR_NONE, 0};
  for (DrId n = 0; n < dr_graph_n_nodes(g); n++) {
    AccessIter it;
    iter_init(&it, g, n);
    for (const DrAccess *a; (a = iter_next(&it)) != NULL;) {
      if (a->begin >= a->end) continue;
      guint64 v[2] = {a->begin, a->end};
      for (guint k = 0; k < 2; k++) {
        guint64 h =
            (v[k] + a->buffer * G_GUINT64_CONSTANT(0x100000001b3)) * G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
        Seen *slot = &seen[(h >> 40) & (SEEN_SLOTS - 1)];
        if (slot->buffer == a->buffer && slot->value == v[k]) continue;
        *slot = (Seen){a->buffer, v[k]};
        if (pts == NULL)
          count[a->buffer + 1]++;
        else
          pts[fill[a->buffer]++] = v[k];
      }
    }
  }
}

static gboolean is_sorted(const guint64 *v, gsize n) {
  for (gsize i = 1; i < n; i++)
    if (v[i - 1] > v[i]) return FALSE;
  return TRUE;
}

/* Sorts v[0..n) with an LSD radix sort on the bytes where values differ;
 * tmp holds n values (unused when v is already sorted, the common case of
 * slices in file order). */
static void radix_sort(guint64 *v, guint64 *tmp, gsize n) {
  if (is_sorted(v, n)) return;
  guint64 varying = 0;
  for (gsize i = 1; i < n; i++) varying |= v[i] ^ v[0];
  if (n <= 32) { /* insertion sort: cheaper than 256-bucket passes */
    for (gsize i = 1; i < n; i++) {
      guint64 x = v[i];
      gsize j = i;
      for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
      v[j] = x;
    }
    return;
  }
  guint64 *src = v, *dst = tmp;
  for (guint shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xff) == 0) continue;
    gsize count[257] = {0};
    for (gsize i = 0; i < n; i++) count[((src[i] >> shift) & 0xff) + 1]++;
    for (guint d = 0; d < 256; d++) count[d + 1] += count[d];
    for (gsize i = 0; i < n; i++) dst[count[(src[i] >> shift) & 0xff]++] = src[i];
    guint64 *t = src;
    src = dst;
    dst = t;
  }
  if (src != v) memcpy(v, src, n * sizeof *v);
}

/* ---- the pass ---------------------------------------------------------- */

typedef struct {
  DrId node;
  guint32 next;
} ReaderCell;

typedef struct {
  DrGraph *graph;
  guint64 *pts; /* buffer b's sorted distinct boundaries: pts[first[b] .. first[b+1]) */
  gsize *first; /* [n_buffers + 1] */
  gsize n_pts;
  guint64 *samples;    /* every SAMPLE-th boundary of each buffer */
  gsize *sample_first; /* [n_buffers + 1] */
  gsize *finger;       /* [n_buffers]: the last point() answer */
  DrId *writer;        /* [n_pts], at run starts: the run's last writer, DR_NONE: none */
  guint32 *readers;    /* [n_pts], at run starts: reader cells since that write, NIL: none */
  Bits starts;         /* run starts; boundary i stands for [pts[i], pts[i+1]) */
  GArray *cells;       /* ReaderCell, never freed during the pass */
  DrId *stamp;         /* [n_nodes]: the last target an edge from it went to */
} Hazards;

static void compress(Hazards *hz) {
  const DrGraph *g = hz->graph;
  guint32 n_buffers = dr_graph_n_buffers(g);
  g_autofree Seen *seen = g_new(Seen, SEEN_SLOTS);
  hz->first = g_new0(gsize, n_buffers + 1);
  gather(g, seen, hz->first, NULL, NULL);
  gsize max_slice = 0;
  for (guint32 b = 0; b < n_buffers; b++) {
    max_slice = MAX(max_slice, hz->first[b + 1]);
    hz->first[b + 1] += hz->first[b];
  }
  hz->pts = g_new(guint64, MAX(hz->first[n_buffers], 1));
  g_autofree gsize *fill = g_memdup2(hz->first, sizeof(gsize) * (n_buffers + 1));
  gather(g, seen, NULL, hz->pts, fill);
  /* Sort each buffer's slice and squeeze out repeats, compacting in place. */
  g_autofree guint64 *tmp = NULL; /* the sort's scratch, only if a slice needs it */
  gsize w = 0;
  for (guint32 b = 0; b < n_buffers; b++) {
    gsize lo = hz->first[b], hi = hz->first[b + 1];
    if (tmp == NULL && !is_sorted(hz->pts + lo, hi - lo)) tmp = g_new(guint64, max_slice);
    radix_sort(hz->pts + lo, tmp, hi - lo);
    hz->first[b] = w;
    for (gsize i = lo; i < hi; i++)
      if (i == lo || hz->pts[i] != hz->pts[i - 1]) hz->pts[w++] = hz->pts[i];
  }
  hz->first[n_buffers] = hz->n_pts = w;

  hz->sample_first = g_new0(gsize, n_buffers + 1);
  for (guint32 b = 0; b < n_buffers; b++)
    hz->sample_first[b + 1] = hz->sample_first[b] + (hz->first[b + 1] - hz->first[b] + SAMPLE - 1) / SAMPLE;
  hz->samples = g_new(guint64, MAX(hz->sample_first[n_buffers], 1));
  hz->finger = g_memdup2(hz->first, sizeof(gsize) * (n_buffers + 1));
  for (guint32 b = 0; b < n_buffers; b++)
    for (gsize i = hz->first[b], k = hz->sample_first[b]; i < hz->first[b + 1]; i += SAMPLE)
      hz->samples[k++] = hz->pts[i];
}

/* The index of boundary `value` of buffer b (present by construction): at
 * or just after the buffer's last answer (chunks in file order), else a
 * binary search over every SAMPLE-th boundary (small, so it stays in
 * cache), then within one block of SAMPLE boundaries. */
static gsize point(Hazards *hz, DrId b, guint64 value) {
  gsize f = hz->finger[b], end = hz->first[b + 1];
  for (gsize i = f; i < end && i < f + 3; i++)
    if (hz->pts[i] == value) return hz->finger[b] = i;
  gsize lo = hz->sample_first[b], hi = hz->sample_first[b + 1];
  while (hi - lo > 1) {
    gsize mid = lo + (hi - lo) / 2;
    if (hz->samples[mid] <= value)
      lo = mid;
    else
      hi = mid;
  }
  gsize i = hz->first[b] + (lo - hz->sample_first[b]) * SAMPLE;
  while (hz->pts[i] != value) i++; /* within the block: one or two cache lines */
  lo = i;
  return hz->finger[b] = lo;
}

/* Makes boundary i a run start, copying the state of the run it splits. */
static void cut(Hazards *hz, gsize i) {
  if (bits_test(&hz->starts, i)) return;
  gsize p = bits_prev(&hz->starts, i);
  hz->writer[i] = hz->writer[p];
  hz->readers[i] = hz->readers[p];
  bits_set(&hz->starts, i);
}

static void depend(Hazards *hz, DrId from, DrId to, DrEdgeKind kind, DrId buffer) {
  if (from == to || hz->stamp[from] == to) return;
  hz->stamp[from] = to;
  dr_graph_add_edge(hz->graph, from, to, kind, buffer);
}

/* Whether `n` prints to the terminal: the built-in print and checksum host
 * functions (a C callback's effects are its own business). Their output
 * is an implicit resource that each of them writes, so they keep file
 * order among themselves: each one gets an OUTPUT edge from the previous. */
static gboolean writes_terminal(const DrNode *n) {
  return n->op == DR_OP_HOST && n->callback == 0 &&
         (n->host_fn == DR_HOST_FN_PRINT || n->host_fn == DR_HOST_FN_CHECKSUM);
}

/* Adds the edges node n's access `a` needs and records it in the map. */
static void access(Hazards *hz, DrId n, const DrAccess *a) {
  if (a->begin >= a->end) return;
  gboolean reads = dr_access_reads(a->mode), writes = dr_access_writes(a->mode);
  gsize lo = point(hz, a->buffer, a->begin), hi = point(hz, a->buffer, a->end);
  cut(hz, lo);
  if (hi + 1 < hz->first[a->buffer + 1]) cut(hz, hi); /* the last boundary starts no run */
  for (gsize s = lo; s < hi;) {
    gsize t = MIN(bits_next(&hz->starts, hz->n_pts, s + 1), hi);
    DrId writer = hz->writer[s];
    guint32 readers = hz->readers[s];
    if (reads && writer != DR_NONE) depend(hz, writer, n, DR_EDGE_RAW, a->buffer);
    if (writes) {
      for (guint32 c = readers; c != NIL; c = g_array_index(hz->cells, ReaderCell, c).next)
        depend(hz, g_array_index(hz->cells, ReaderCell, c).node, n, DR_EDGE_WAR, a->buffer);
      if (readers == NIL && writer != DR_NONE) depend(hz, writer, n, DR_EDGE_WAW, a->buffer);
      if (s != lo) bits_unset(&hz->starts, s);
    } else if (readers == NIL || g_array_index(hz->cells, ReaderCell, readers).node != n) {
      ReaderCell cell = {n, readers};
      hz->readers[s] = hz->cells->len;
      g_array_append_val(hz->cells, cell);
    }
    s = t;
  }
  if (writes) {
    hz->writer[lo] = n;
    hz->readers[lo] = NIL;
  }
}

void dr__hazards_run(DrGraph *graph) {
  g_return_if_fail(graph != NULL);
  guint32 n_nodes = dr_graph_n_nodes(graph), n_buffers = dr_graph_n_buffers(graph);
  Hazards hz = {.graph = graph};
  compress(&hz);
  hz.writer = g_new(DrId, MAX(hz.n_pts, 1));
  hz.readers = g_new(guint32, MAX(hz.n_pts, 1));
  bits_init(&hz.starts, MAX(hz.n_pts, 1));
  for (guint32 b = 0; b < n_buffers; b++) {
    if (hz.first[b + 1] - hz.first[b] < 2) continue;
    hz.writer[hz.first[b]] = DR_NONE; /* one run: never accessed */
    hz.readers[hz.first[b]] = NIL;
    bits_set(&hz.starts, hz.first[b]);
  }
  hz.cells = g_array_new(FALSE, FALSE, sizeof(ReaderCell));
  hz.stamp = g_new(DrId, MAX(n_nodes, 1));
  for (guint32 i = 0; i < n_nodes; i++) hz.stamp[i] = DR_NONE;

  DrId terminal = DR_NONE; /* the last node that wrote to the terminal */
  for (DrId n = 0; n < n_nodes; n++) {
    AccessIter it;
    iter_init(&it, graph, n);
    for (const DrAccess *a; (a = iter_next(&it)) != NULL;) access(&hz, n, a);
    if (writes_terminal(dr_graph_node(graph, n))) {
      if (terminal != DR_NONE) depend(&hz, terminal, n, DR_EDGE_OUTPUT, DR_NONE);
      terminal = n;
    }
  }

  g_free(hz.pts);
  g_free(hz.first);
  g_free(hz.samples);
  g_free(hz.sample_first);
  g_free(hz.finger);
  g_free(hz.writer);
  g_free(hz.readers);
  bits_clear_all(&hz.starts);
  g_array_unref(hz.cells);
  g_free(hz.stamp);
}
