/* deps_test.c: tests of the dependency passes (scheduler/passes.h):
 * lifetimes, hazards, afters and cycles, on graphs built in code.
 *
 * Programs are written in a small notation (see add()) so each test reads
 * like the pipeline it stands for. Locations are synthetic but exact: buffer
 * i is declared at t.yaml:(100+i):3, node i (0-based) at t.yaml:(i+1):3, its
 * k-th access at t.yaml:(i+1):(10+10k), after entry j at t.yaml:(200+j):5.
 * Hazard edges are checked exactly for small programs, and on thousands of
 * random programs against a slow reference that adds an edge for every
 * conflicting earlier access: both must give the same partial order. */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/graph.h"
#include "scheduler/passes.h"

#define FILE_NAME "t.yaml"

/* ---- building programs ------------------------------------------------- */

/* Declares device buffers from "x:16 y:8". */
static void bufs(DrGraph *g, const char *spec) {
  g_auto(GStrv) items = g_strsplit(spec, " ", -1);
  for (guint i = 0; items[i] != NULL; i++) {
    g_auto(GStrv) kv = g_strsplit(items[i], ":", 2);
    DrBuffer b = {.name = kv[0],
                  .type = DR_ELEM_F32,
                  .count = g_ascii_strtoull(kv[1], NULL, 10),
                  .where = DR_WHERE_DEVICE,
                  .loc = {FILE_NAME, 100 + dr_graph_n_buffers(g), 3}};
    g_assert_cmpuint(dr_graph_add_buffer(g, &b), !=, DR_NONE);
  }
}

static DrAccessMode mode_of(const char *s) {
  if (strcmp(s, "r") == 0) return DR_ACCESS_READ;
  if (strcmp(s, "w") == 0) return DR_ACCESS_WRITE;
  g_assert_cmpstr(s, ==, "rw");
  return DR_ACCESS_READ_WRITE;
}

/* Adds node `id` with accesses from `spec`: "r x[0:4] w y rw z[2:]" (mode
 * then buffer, whole buffer without brackets), or "alloc x" / "free x"
 * (a whole-buffer write, as the parser gives them; "alloc- x" leaves the
 * access out so the hazard pass must imply it), or "" for a noop. */
static DrId add(DrGraph *g, const char *id, const char *spec) {
  DrId n = dr_graph_n_nodes(g);
  guint32 line = n + 1;
  g_auto(GStrv) tok = g_strsplit(spec, " ", -1);
  DrNode node = {.op = DR_OP_NOOP,
                 .id = id,
                 .priority = DR_PRIORITY_NORMAL,
                 .device = -1,
                 .kernel = DR_NONE,
                 .buffer = DR_NONE,
                 .loc = {FILE_NAME, line, 3}};
  gboolean lifetime = tok[0] != NULL && g_str_has_prefix(tok[0], "alloc") | g_str_has_prefix(tok[0], "free");
  if (lifetime) {
    node.op = g_str_has_prefix(tok[0], "alloc") ? DR_OP_ALLOC : DR_OP_FREE;
    node.buffer = dr_graph_find_buffer(g, tok[1]);
    g_assert_cmpuint(node.buffer, !=, DR_NONE);
  }
  g_assert_cmpuint(dr_graph_add_node(g, &node), ==, n);
  if (lifetime) {
    DrBuffer *b = dr_graph_buffer(g, node.buffer);
    DrId *slot = node.op == DR_OP_ALLOC ? &b->alloc_node : &b->free_node;
    if (*slot == DR_NONE) *slot = n; /* the parser records the first only */
    if (!g_str_has_suffix(tok[0], "-")) {
      DrAccess a = {node.buffer, DR_ACCESS_WRITE, 0, b->count, {FILE_NAME, line, 10}};
      dr_graph_add_access(g, &a);
    }
    return n;
  }
  for (guint k = 0; tok[k] != NULL && tok[k][0] != '\0'; k += 2) {
    g_assert_nonnull(tok[k + 1]);
    char name[64];
    const char *br = strchr(tok[k + 1], '[');
    gsize len = br ? (gsize)(br - tok[k + 1]) : strlen(tok[k + 1]);
    g_assert_cmpuint(len, <, sizeof name);
    memcpy(name, tok[k + 1], len);
    name[len] = '\0';
    DrId bid = dr_graph_find_buffer(g, name);
    g_assert_cmpuint(bid, !=, DR_NONE);
    guint64 count = dr_graph_buffer(g, bid)->count, begin = 0, end = count;
    if (br != NULL) {
      char *rest;
      if (br[1] != ':') begin = g_ascii_strtoull(br + 1, &rest, 10), br = rest - 1;
      g_assert_cmpint(br[1], ==, ':');
      if (br[2] != ']') end = g_ascii_strtoull(br + 2, NULL, 10);
    }
    DrAccess a = {bid, mode_of(tok[k]), begin, end, {FILE_NAME, line, 10 + 10 * (k / 2)}};
    dr_graph_add_access(g, &a);
  }
  return n;
}

static void after(DrGraph *g, const char *from, const char *to) {
  DrId f = dr_graph_find_node(g, from), t = dr_graph_find_node(g, to);
  g_assert_cmpuint(f, !=, DR_NONE);
  g_assert_cmpuint(t, !=, DR_NONE);
  dr_graph_add_after(g, f, t, (DrLoc){FILE_NAME, 200 + g->afters->len, 5});
}

/* Sorts the edges and spells them "a>b raw x, b>c after". */
static char *edges(DrGraph *g) {
  dr_graph_sort_edges(g);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < g->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(g, i);
    g_string_append_printf(s, "%s%s>%s %s", i ? ", " : "", dr_graph_node(g, e->from)->id,
                           dr_graph_node(g, e->to)->id, dr_edge_kind_name(e->kind));
    if (e->buffer != DR_NONE) g_string_append_printf(s, " %s", dr_graph_buffer(g, e->buffer)->name);
  }
  return g_string_free(s, FALSE);
}

static char *hazard_edges(DrGraph *g) {
  dr__hazards_run(g);
  return edges(g);
}

/* All diagnostics, formatted, one per line. */
static char *diags_text(const DrDiags *d) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < dr_diags_len(d); i++) {
    g_autofree char *line = dr_diag_format(dr_diags_get(d, i));
    g_string_append_printf(s, "%s\n", line);
  }
  return g_string_free(s, FALSE);
}

#define ASSERT_HAZARDS(g, want)              \
  do {                                       \
    g_autofree char *got_ = hazard_edges(g); \
    g_assert_cmpstr(got_, ==, want);         \
  } while (0)

/* ---- hazards: exact edges ---------------------------------------------- */

static void test_hazards_basic(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:16 y:16");
  add(g, "a", "w x");
  add(g, "b", "r x w y");
  add(g, "c", "r x");
  add(g, "d", "w x");
  add(g, "e", "w x");
  add(g, "f", "r y");
  /* b reads a's x (RAW); c reads x too (no edge to b: read after read);
   * d overwrites after readers b, c (WAR each, no WAW to a: implied); e
   * overwrites d (one WAW); f reads b's y. */
  ASSERT_HAZARDS(g, "a>b raw x, a>c raw x, b>d war x, c>d war x, d>e waw x, b>f raw y");
}

static void test_hazards_touching(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:16");
  add(g, "a", "w x[0:8]");
  add(g, "b", "w x[8:16]");
  add(g, "c", "r x[0:8]");
  add(g, "d", "r x[8:16]");
  add(g, "e", "w x[4:4]"); /* empty: touches everything, conflicts with nothing */
  ASSERT_HAZARDS(g, "a>c raw x, b>d raw x");
}

static void test_hazards_partial_overlap(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:16");
  add(g, "a", "w x[0:10]");
  add(g, "b", "w x[6:16]");
  add(g, "c", "r x[0:6]");  /* only a's part */
  add(g, "d", "r x[5:7]");  /* a's element 5 and b's element 6 */
  add(g, "e", "r x[10:]");  /* only b */
  add(g, "f", "w x[3:12]"); /* after readers c, d, e, and b's unread x[7:10] */
  add(g, "g", "r x[2:3]");  /* still a's */
  ASSERT_HAZARDS(g,
                 "a>b waw x, a>c raw x, a>d raw x, b>d raw x, b>e raw x, "
                 "b>f waw x, c>f war x, d>f war x, e>f war x, a>g raw x");
}

static void test_hazards_readers_then_writer(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8");
  add(g, "w0", "w x");
  for (int i = 0; i < 5; i++) {
    g_autofree char *id = g_strdup_printf("r%d", i);
    add(g, id, "r x");
  }
  add(g, "w1", "w x");
  add(g, "w2", "w x");
  add(g, "w3", "w x[2:4]");
  add(g, "r5", "r x");
  ASSERT_HAZARDS(g,
                 "w0>r0 raw x, w0>r1 raw x, w0>r2 raw x, w0>r3 raw x, w0>r4 raw x, "
                 "r0>w1 war x, r1>w1 war x, r2>w1 war x, r3>w1 war x, r4>w1 war x, "
                 "w1>w2 waw x, w2>w3 waw x, w2>r5 raw x, w3>r5 raw x");
}

static void test_hazards_readwrite(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8");
  add(g, "w", "w x");
  add(g, "r", "r x");
  add(g, "acc", "rw x"); /* after the writer (RAW) and the reader (WAR) */
  add(g, "acc2", "rw x[0:4]");
  add(g, "r2", "r x[4:8]");            /* reads acc's half */
  add(g, "both", "r x[0:2] w x[0:2]"); /* one node reading and writing: no self edge */
  add(g, "last", "r x[1:2]");
  ASSERT_HAZARDS(g,
                 "w>r raw x, w>acc raw x, r>acc war x, acc>acc2 raw x, acc>r2 raw x, "
                 "acc2>both raw x, both>last raw x");
}

static void test_hazards_dedupe(void) {
  /* b conflicts with a on three ranges of two buffers: one edge, added once
   * (checked before dr_graph_sort_edges could hide a duplicate). */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:16 y:16");
  add(g, "a", "w x[0:4] w x[8:12] w y");
  add(g, "b", "r x r y w x[2:10]");
  dr__hazards_run(g);
  g_assert_cmpuint(g->edges->len, ==, 1);
  g_autofree char *got = edges(g);
  g_assert_cmpstr(got, ==, "a>b raw x");
}

static void test_hazards_alloc_free(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8 y:8");
  add(g, "a", "alloc tmp");
  add(g, "k1", "r x[0:4] w tmp[0:4]");
  add(g, "k2", "r x[4:8] w tmp[4:8]");
  add(g, "c", "r tmp w y");
  add(g, "f", "free tmp");
  add(g, "a2", "alloc- y"); /* no access given: implied whole-buffer write */
  ASSERT_HAZARDS(g, "a>k1 waw tmp, a>k2 waw tmp, k1>c raw tmp, k2>c raw tmp, c>f war tmp, c>a2 waw y");
}

static void test_hazards_chunks(void) {
  /* The spec's chunked-scale example: each scale waits for its own upload. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "xh:16 yh:16 x:16 y:16");
  add(g, "ax", "alloc x");
  add(g, "ay", "alloc y");
  for (int c = 0; c < 4; c++) {
    g_autofree char *id = g_strdup_printf("up%d", c);
    g_autofree char *spec = g_strdup_printf("r xh[%d:%d] w x[%d:%d]", 4 * c, 4 * c + 4, 4 * c, 4 * c + 4);
    add(g, id, spec);
  }
  for (int c = 0; c < 4; c++) {
    g_autofree char *id = g_strdup_printf("s%d", c);
    g_autofree char *spec = g_strdup_printf("r x[%d:%d] w y[%d:%d]", 4 * c, 4 * c + 4, 4 * c, 4 * c + 4);
    add(g, id, spec);
  }
  add(g, "down", "r y w yh");
  add(g, "fx", "free x");
  add(g, "fy", "free y");
  ASSERT_HAZARDS(g,
                 "ax>up0 waw x, ax>up1 waw x, ax>up2 waw x, ax>up3 waw x, "
                 "ay>s0 waw y, up0>s0 raw x, ay>s1 waw y, up1>s1 raw x, "
                 "ay>s2 waw y, up2>s2 raw x, ay>s3 waw y, up3>s3 raw x, "
                 "s0>down raw y, s1>down raw y, s2>down raw y, s3>down raw y, "
                 "s0>fx war x, s1>fx war x, s2>fx war x, s3>fx war x, down>fy war y");
}

/* ---- hazards: property test against a slow reference ------------------ */

/* Reference: i < j conflict when some access pair on one buffer overlaps
 * (both non-empty, sharing an element) and one of them writes. Closure by bitsets (n <= 64). */
static gboolean accesses_conflict(const DrAccess *a, const DrAccess *b) {
  return a->buffer == b->buffer && a->begin < a->end && b->begin < b->end && a->begin < b->end &&
         b->begin < a->end && (dr_access_writes(a->mode) || dr_access_writes(b->mode));
}

/* The accesses of node n as the hazard pass sees them: alloc/free without
 * their access imply a whole-buffer write. */
static guint node_accesses(const DrGraph *g, DrId n, DrAccess *out) {
  const DrNode *node = dr_graph_node(g, n);
  guint k = 0;
  gboolean own = FALSE;
  for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
    out[k] = *dr_graph_access(g, i);
    own |= out[k].buffer == node->buffer;
    k++;
  }
  if ((node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) && !own)
    out[k++] = (DrAccess){node->buffer, DR_ACCESS_WRITE, 0, dr_graph_buffer(g, node->buffer)->count};
  return k;
}

static gboolean nodes_conflict(const DrGraph *g, DrId i, DrId j) {
  DrAccess ai[8], aj[8];
  guint ni = node_accesses(g, i, ai), nj = node_accesses(g, j, aj);
  for (guint p = 0; p < ni; p++)
    for (guint q = 0; q < nj; q++)
      if (accesses_conflict(&ai[p], &aj[q])) return TRUE;
  return FALSE;
}

/* Whether edge e is a real conflict of its kind on its buffer. */
static gboolean edge_is_real(const DrGraph *g, const DrEdge *e) {
  DrAccess af[8], at[8];
  guint nf = node_accesses(g, e->from, af), nt = node_accesses(g, e->to, at);
  for (guint p = 0; p < nf; p++)
    for (guint q = 0; q < nt; q++) {
      const DrAccess *f = &af[p], *t = &at[q];
      if (f->buffer != e->buffer || !accesses_conflict(f, t)) continue;
      gboolean ok = FALSE;
      switch (e->kind) {
        case DR_EDGE_RAW:
          ok = dr_access_writes(f->mode) && dr_access_reads(t->mode);
          break;
        case DR_EDGE_WAR:
          ok = dr_access_reads(f->mode) && dr_access_writes(t->mode);
          break;
        case DR_EDGE_WAW:
          ok = dr_access_writes(f->mode) && dr_access_writes(t->mode);
          break;
        case DR_EDGE_AFTER:
          break;
      }
      if (ok) return TRUE;
    }
  return FALSE;
}

static void closure(guint64 *reach, guint n) {
  for (guint k = 0; k < n; k++)
    for (guint i = 0; i < n; i++)
      if (reach[i] & (G_GUINT64_CONSTANT(1) << k)) reach[i] |= reach[k];
}

/* A random program of at most 40 nodes over 1..3 buffers of 1..12
 * elements: reads, writes, readwrites of random slices (some empty), and
 * alloc/free nodes with and without their access. */
static DrGraph *random_program(GRand *rng) {
  DrGraph *g = dr_graph_new();
  guint n_buffers = g_rand_int_range(rng, 1, 4), n_nodes = g_rand_int_range(rng, 1, 41);
  for (guint b = 0; b < n_buffers; b++) {
    char name[8];
    g_snprintf(name, sizeof name, "b%u", b);
    DrBuffer buf = {
        .name = name, .type = DR_ELEM_F32, .count = g_rand_int_range(rng, 1, 13), .where = DR_WHERE_DEVICE};
    dr_graph_add_buffer(g, &buf);
  }
  for (guint i = 0; i < n_nodes; i++) {
    char id[8];
    g_snprintf(id, sizeof id, "n%u", i);
    DrNode node = {.op = DR_OP_NOOP, .id = id, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
    guint kind = g_rand_int_range(rng, 0, 10);
    if (kind == 0) {
      node.op = g_rand_boolean(rng) ? DR_OP_ALLOC : DR_OP_FREE;
      node.buffer = g_rand_int_range(rng, 0, n_buffers);
    }
    dr_graph_add_node(g, &node);
    if (node.op != DR_OP_NOOP) {
      if (g_rand_boolean(rng)) {
        DrAccess a = {node.buffer, DR_ACCESS_WRITE, 0, dr_graph_buffer(g, node.buffer)->count};
        dr_graph_add_access(g, &a);
      }
      continue;
    }
    guint n_acc = g_rand_int_range(rng, 0, 4);
    for (guint k = 0; k < n_acc; k++) {
      DrId b = g_rand_int_range(rng, 0, n_buffers);
      guint64 count = dr_graph_buffer(g, b)->count;
      guint64 lo = g_rand_int_range(rng, 0, count + 1), hi = g_rand_int_range(rng, 0, count + 1);
      if (lo > hi) {
        guint64 t = lo;
        lo = hi;
        hi = t;
      }
      if (g_rand_int_range(rng, 0, 4) == 0) lo = 0, hi = count;
      DrAccess a = {b, (DrAccessMode)g_rand_int_range(rng, 0, DR_ACCESS_N_MODES), lo, hi};
      dr_graph_add_access(g, &a);
    }
  }
  return g;
}

static void test_hazards_property(void) {
  g_autoptr(GRand) rng = g_rand_new_with_seed(20261129);
  guint total_edges = 0, total_ref = 0;
  for (guint iter = 0; iter < 5000; iter++) {
    g_autoptr(DrGraph) g = random_program(rng);
    guint n = dr_graph_n_nodes(g);
    dr__hazards_run(g);
    guint64 got[64] = {0}, want[64] = {0};
    for (guint i = 0; i < g->edges->len; i++) {
      const DrEdge *e = dr_graph_edge(g, i);
      g_assert_cmpuint(e->from, <, e->to);
      if (!edge_is_real(g, e)) {
        g_autofree char *s = edges(g);
        g_error("iteration %u: edge %s>%s %s is no conflict in: %s", iter, dr_graph_node(g, e->from)->id,
                dr_graph_node(g, e->to)->id, dr_edge_kind_name(e->kind), s);
      }
      got[e->from] |= G_GUINT64_CONSTANT(1) << e->to;
    }
    for (guint i = 0; i < n; i++)
      for (guint j = i + 1; j < n; j++)
        if (nodes_conflict(g, i, j)) want[i] |= G_GUINT64_CONSTANT(1) << j, total_ref++;
    total_edges += g->edges->len;
    closure(got, n);
    closure(want, n);
    for (guint i = 0; i < n; i++)
      if (got[i] != want[i]) {
        GString *dump = g_string_new(NULL);
        dr_graph_dump(g, dump);
        g_error("iteration %u: node n%u reaches %" G_GINT64_MODIFIER "x, reference %" G_GINT64_MODIFIER
                "x\n%s",
                iter, i, got[i], want[i], dump->str);
      }
  }
  /* The point of the segment map: far fewer edges than the reference. */
  g_assert_cmpuint(total_edges, <, total_ref);
  g_test_message("hazard edges %u, reference edges %u", total_edges, total_ref);
}

/* Large random programs: thousands of nodes over big buffers, so the
 * boundary sort takes its radix path and the run bitset has three levels.
 * Reachability by bitsets in reverse program order (hazard edges go
 * forward): row i = the nodes that must follow node i. */
typedef struct {
  guint32 from, to;
} Pair;

/* pairs: Pair, sorted by from, descending, so row `to` is complete before
 * row `from` uses it. */
static guint64 *forward_reach(guint n, guint words, const GArray *pairs) {
  guint64 *reach = g_new0(guint64, (gsize)n * words);
  for (guint k = 0; k < pairs->len; k++) {
    Pair p = g_array_index(pairs, Pair, k);
    guint64 *rf = reach + (gsize)p.from * words, *rt = reach + (gsize)p.to * words;
    rf[p.to / 64] |= G_GUINT64_CONSTANT(1) << (p.to % 64);
    for (guint w = 0; w < words; w++) rf[w] |= rt[w];
  }
  return reach;
}

static gint cmp_pair_from_desc(gconstpointer a, gconstpointer b) {
  const Pair *pa = a, *pb = b;
  return pa->from != pb->from ? (pa->from < pb->from ? 1 : -1) : 0;
}

static void test_hazards_property_large(void) {
  g_autoptr(GRand) rng = g_rand_new_with_seed(42);
  for (guint iter = 0; iter < 16; iter++) {
    g_autoptr(DrGraph) g = dr_graph_new();
    guint n_buffers = g_rand_int_range(rng, 1, 5), n = g_rand_int_range(rng, 500, 2000);
    for (guint b = 0; b < n_buffers; b++) {
      char name[8];
      g_snprintf(name, sizeof name, "b%u", b);
      DrBuffer buf = {.name = name,
                      .type = DR_ELEM_F32,
                      .count = g_rand_int_range(rng, 1000, 1 << 22),
                      .where = DR_WHERE_DEVICE};
      dr_graph_add_buffer(g, &buf);
    }
    for (guint i = 0; i < n; i++) {
      char id[16];
      g_snprintf(id, sizeof id, "n%u", i);
      DrNode node = {.op = DR_OP_NOOP, .id = id, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
      dr_graph_add_node(g, &node);
      guint n_acc = g_rand_int_range(rng, 1, 4);
      for (guint k = 0; k < n_acc; k++) {
        DrId b = g_rand_int_range(rng, 0, n_buffers);
        guint64 count = dr_graph_buffer(g, b)->count, lo, hi;
        switch (g_rand_int_range(rng, 0, 4)) {
          case 0:
            lo = 0, hi = count;
            break; /* whole */
          case 1:
            lo = g_rand_int_range(rng, 0, count), hi = MIN(count, lo + count / 8);
            break; /* wide */
          case 2:
            lo = (count / 16) * g_rand_int_range(rng, 0, 16), hi = lo + count / 16;
            break; /* chunk */
          default:
            lo = g_rand_int_range(rng, 0, count), hi = MIN(count, lo + g_rand_int_range(rng, 1, 64));
        }
        DrAccess a = {b, (DrAccessMode)g_rand_int_range(rng, 0, DR_ACCESS_N_MODES), lo, hi};
        dr_graph_add_access(g, &a);
      }
    }
    dr__hazards_run(g);
    g_autoptr(GArray) mine = g_array_new(FALSE, FALSE, sizeof(Pair));
    for (guint i = 0; i < g->edges->len; i++) {
      const DrEdge *e = dr_graph_edge(g, i);
      g_assert_cmpuint(e->from, <, e->to);
      g_assert_true(edge_is_real(g, e));
      Pair p = {e->from, e->to};
      g_array_append_val(mine, p);
    }
    g_array_sort(mine, cmp_pair_from_desc);
    g_autoptr(GArray) ref = g_array_new(FALSE, FALSE, sizeof(Pair));
    for (guint i = n; i-- > 0;)
      for (guint j = i + 1; j < n; j++)
        if (nodes_conflict(g, i, j)) {
          Pair p = {i, j};
          g_array_append_val(ref, p);
        }
    guint words = (n + 63) / 64;
    g_autofree guint64 *got = forward_reach(n, words, mine);
    g_autofree guint64 *want = forward_reach(n, words, ref);
    for (guint i = 0; i < n; i++)
      if (memcmp(got + (gsize)i * words, want + (gsize)i * words, words * sizeof(guint64)) != 0)
        g_error("large iteration %u: node n%u reaches different nodes than the reference", iter, i);
    g_assert_cmpuint(g->edges->len, <=, ref->len);
  }
}

/* ---- hazards: size ----------------------------------------------------- */

/* 200k nodes over chunked buffers, plus 200k single-element writes read
 * back at once: completes, edges linear in the nodes. Not timed; the
 * structure must keep it from being quadratic. */
static void test_hazards_size(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  const guint n = 200000, n_bufs = 8, chunks = 1000;
  for (guint b = 0; b < n_bufs; b++) {
    char name[8];
    g_snprintf(name, sizeof name, "b%u", b);
    DrBuffer buf = {.name = name, .type = DR_ELEM_F32, .count = chunks * 64, .where = DR_WHERE_DEVICE};
    dr_graph_add_buffer(g, &buf);
  }
  DrBuffer big = {.name = "big", .type = DR_ELEM_F32, .count = n, .where = DR_WHERE_DEVICE};
  DrId bigid = dr_graph_add_buffer(g, &big);
  for (guint i = 0; i < n; i++) {
    char id[16];
    g_snprintf(id, sizeof id, "k%u", i);
    DrNode node = {.op = DR_OP_NOOP, .id = id, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
    dr_graph_add_node(g, &node);
    guint64 c = (i * 7919u) % chunks;
    DrAccess r = {i % n_bufs, DR_ACCESS_READ, c * 64, c * 64 + 64};
    DrAccess w = {(i + 1) % n_bufs, DR_ACCESS_WRITE, c * 64 + 32,
                  c * 64 + 96 > chunks * 64 ? chunks * 64 : c * 64 + 96};
    DrAccess rw = {(i + 3) % n_bufs, DR_ACCESS_READ_WRITE, (i % 3) * 64, (i % 3) * 64 + 640};
    dr_graph_add_access(g, &r);
    dr_graph_add_access(g, &w);
    dr_graph_add_access(g, &rw);
  }
  for (guint i = 0; i < n; i++) {
    char id[16];
    g_snprintf(id, sizeof id, "s%u", i);
    DrNode node = {.op = DR_OP_NOOP, .id = id, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
    dr_graph_add_node(g, &node);
    DrAccess w = {bigid, DR_ACCESS_WRITE, i, i + 1};
    dr_graph_add_access(g, &w);
  }
  DrNode all = {.op = DR_OP_NOOP, .id = "all", .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
  DrId reader = dr_graph_add_node(g, &all);
  DrAccess r = {bigid, DR_ACCESS_READ, 0, n};
  dr_graph_add_access(g, &r);

  dr__hazards_run(g);
  guint into_reader = 0;
  for (guint i = 0; i < g->edges->len; i++) into_reader += dr_graph_edge(g, i)->to == reader;
  g_assert_cmpuint(into_reader, ==, n);
  g_assert_cmpuint(g->edges->len, <, 8u * n);
  dr_graph_sort_edges(g);
  g_autoptr(GError) error = NULL;
  dr_graph_check(g, &error);
  g_assert_no_error(error);
}

/* ---- lifetimes --------------------------------------------------------- */

static char *lifetimes(DrGraph *g, gboolean ok) {
  g_autoptr(DrDiags) d = dr_diags_new(0);
  g_assert_cmpint(dr__lifetimes_check(g, d), ==, ok);
  return diags_text(d);
}

#define ASSERT_LIFETIMES(g, want)                          \
  do {                                                     \
    g_autofree char *got_ = lifetimes(g, want[0] == '\0'); \
    g_assert_cmpstr(got_, ==, want);                       \
  } while (0)

static void test_lifetimes_ok(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8 w:8");
  add(g, "u0", "r x w w"); /* whole-run buffers: no rules */
  add(g, "a", "alloc tmp");
  add(g, "k", "r x w tmp");
  add(g, "f", "free tmp");
  add(g, "u1", "r w");
  ASSERT_LIFETIMES(g, "");
}

static void test_lifetimes_use_before_alloc(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  add(g, "k0", "r x w tmp[0:4] r tmp[4:8]"); /* one error per node and buffer */
  add(g, "a", "alloc tmp");
  add(g, "f", "free tmp");
  ASSERT_LIFETIMES(g,
                   "t.yaml:1:20: error: node 'k0': uses buffer 'tmp' before it is allocated by 'a'\n"
                   "t.yaml:2:3: note: 'tmp' is allocated here\n");
}

static void test_lifetimes_use_after_free(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  add(g, "a", "alloc tmp");
  add(g, "k", "w tmp");
  add(g, "free_tmp", "free tmp");
  add(g, "k3", "r x r tmp[2:4]");
  ASSERT_LIFETIMES(g,
                   "t.yaml:4:20: error: node 'k3': uses buffer 'tmp' after it is freed by 'free_tmp'\n"
                   "t.yaml:3:3: note: 'tmp' is freed here\n");
}

static void test_lifetimes_double_alloc(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "tmp:8");
  add(g, "a1", "alloc tmp");
  add(g, "a2", "alloc tmp");
  add(g, "f", "free tmp");
  ASSERT_LIFETIMES(
      g,
      "t.yaml:2:3: error: node 'a2': allocates buffer 'tmp' again; it is already allocated by 'a1'\n"
      "t.yaml:1:3: note: 'tmp' is allocated here, and no node frees it before 'a2'\n");
}

static void test_lifetimes_double_free(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "tmp:8");
  add(g, "a", "alloc tmp");
  add(g, "f1", "free tmp");
  add(g, "f2", "free tmp");
  ASSERT_LIFETIMES(g,
                   "t.yaml:3:3: error: node 'f2': frees buffer 'tmp' again; it is already freed by 'f1'\n"
                   "t.yaml:2:3: note: 'tmp' is freed here, and no node allocates it again before 'f2'\n");
}

static void test_lifetimes_free_before_alloc(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "tmp:8");
  add(g, "f", "free tmp");
  add(g, "a", "alloc tmp");
  add(g, "k", "r tmp");
  /* One error: the early free is not the allocation's free, so no "use
   * after free" for k and no "never freed" for a. */
  ASSERT_LIFETIMES(g,
                   "t.yaml:1:3: error: node 'f': frees buffer 'tmp' before it is allocated by 'a'\n"
                   "t.yaml:2:3: note: 'tmp' is allocated here\n");
}

static void test_lifetimes_alloc_without_free(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:4 tmp:8");
  add(g, "k", "w x");
  add(g, "a", "alloc tmp");
  add(g, "u", "w tmp");
  ASSERT_LIFETIMES(g, "t.yaml:2:3: error: node 'a': allocates buffer 'tmp' but no node frees it\n");
}

static void test_lifetimes_free_without_alloc(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:4 w:8");
  add(g, "k", "w w");
  add(g, "f", "free w");
  ASSERT_LIFETIMES(g,
                   "t.yaml:2:3: error: node 'f': frees buffer 'w', which no alloc node allocates "
                   "(it lives for the whole run)\n"
                   "t.yaml:101:3: note: 'w' is declared here\n");
}

static void test_lifetimes_several(void) {
  /* Errors come in program order, several per run, never-freed last. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "p:4 q:4");
  add(g, "u", "r q");
  add(g, "ap", "alloc p");
  add(g, "aq", "alloc q");
  add(g, "fp", "free p");
  add(g, "v", "rw p[1:2]");
  ASSERT_LIFETIMES(g,
                   "t.yaml:1:10: error: node 'u': uses buffer 'q' before it is allocated by 'aq'\n"
                   "t.yaml:3:3: note: 'q' is allocated here\n"
                   "t.yaml:5:10: error: node 'v': uses buffer 'p' after it is freed by 'fp'\n"
                   "t.yaml:4:3: note: 'p' is freed here\n"
                   "t.yaml:3:3: error: node 'aq': allocates buffer 'q' but no node frees it\n");
}

static void test_lifetimes_many(void) {
  /* Three lifetimes of one buffer, each its own alloc -> uses -> free. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  for (guint k = 0; k < 3; k++) {
    g_autofree char *a = g_strdup_printf("a%u", k), *u = g_strdup_printf("u%u", k),
                    *f = g_strdup_printf("f%u", k);
    add(g, a, "alloc tmp");
    add(g, u, "r x w tmp");
    add(g, f, "free tmp");
  }
  ASSERT_LIFETIMES(g, "");
}

static void test_lifetimes_between_nearer_before(void) {
  /* A use between two lifetimes names the nearer one: here the end of the
   * first (one node back) rather than the start of the second. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  add(g, "a1", "alloc tmp");
  add(g, "f1", "free tmp");
  add(g, "u", "r tmp");
  add(g, "k1", "w x");
  add(g, "k2", "w x");
  add(g, "a2", "alloc tmp");
  add(g, "f2", "free tmp");
  ASSERT_LIFETIMES(g,
                   "t.yaml:3:10: error: node 'u': uses buffer 'tmp' outside its lifetimes: after 'f1' frees "
                   "it (the end of lifetime 1), before 'a2' allocates it again\n"
                   "t.yaml:2:3: note: lifetime 1 of 'tmp' ends here\n");
}

static void test_lifetimes_between_nearer_after(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  add(g, "a1", "alloc tmp");
  add(g, "f1", "free tmp");
  add(g, "a2", "alloc tmp");
  add(g, "f2", "free tmp");
  add(g, "k1", "w x");
  add(g, "k2", "w x");
  add(g, "u", "w tmp[0:2]");
  add(g, "a3", "alloc tmp");
  add(g, "f3", "free tmp");
  add(g, "late", "r tmp");
  ASSERT_LIFETIMES(g,
                   "t.yaml:7:10: error: node 'u': uses buffer 'tmp' outside its lifetimes: before 'a3' "
                   "allocates it again (the start of lifetime 3), after 'f2' frees it\n"
                   "t.yaml:8:3: note: lifetime 3 of 'tmp' starts here\n"
                   "t.yaml:10:10: error: node 'late': uses buffer 'tmp' after it is freed by 'f3'\n"
                   "t.yaml:9:3: note: 'tmp' is freed here\n");
}

static void test_lifetimes_double_in_second(void) {
  /* The second lifetime's errors name the second lifetime's nodes, and an
   * unfreed last lifetime is reported at its own alloc. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "tmp:8");
  add(g, "a1", "alloc tmp");
  add(g, "f1", "free tmp");
  add(g, "f1b", "free tmp");
  add(g, "a2", "alloc tmp");
  add(g, "f2", "free tmp");
  add(g, "a3", "alloc tmp");
  add(g, "a3b", "alloc tmp");
  ASSERT_LIFETIMES(g,
                   "t.yaml:3:3: error: node 'f1b': frees buffer 'tmp' again; it is already freed by 'f1'\n"
                   "t.yaml:2:3: note: 'tmp' is freed here, and no node allocates it again before 'f1b'\n"
                   "t.yaml:7:3: error: node 'a3b': allocates buffer 'tmp' again; it is already allocated by "
                   "'a3'\n"
                   "t.yaml:6:3: note: 'tmp' is allocated here, and no node frees it before 'a3b'\n"
                   "t.yaml:6:3: error: node 'a3': allocates buffer 'tmp' but no node frees it\n");
}

static void test_lifetimes_property(void) {
  /* Random alloc/free/use sequences over one buffer: the pass accepts a
   * program exactly when allocs and frees alternate starting with an
   * alloc, end freed, and every use lies between an alloc and its free;
   * the hazards then order every alloc after the previous free and every
   * use between its lifetime's alloc and free. */
  g_autoptr(GRand) rng = g_rand_new_with_seed(12);
  guint n_ok = 0;
  for (guint iter = 0; iter < 4000; iter++) {
    g_autoptr(DrGraph) g = dr_graph_new();
    bufs(g, "x:4 tmp:8");
    guint n = g_rand_int_range(rng, 1, 12);
    gboolean live = FALSE, good = TRUE, any_alloc = FALSE;
    char kinds[16];
    for (guint i = 0; i < n; i++) {
      g_autofree char *id = g_strdup_printf("n%u", i);
      guint r = g_rand_int_range(rng, 0, 10);
      kinds[i] = r < 3 ? 'a' : r < 6 ? 'f' : r < 9 ? 'u' : 'x';
      add(g, id,
          kinds[i] == 'a'   ? "alloc tmp"
          : kinds[i] == 'f' ? "free tmp"
          : kinds[i] == 'u' ? "rw tmp[1:3]"
                            : "w x");
      any_alloc |= kinds[i] == 'a';
    }
    for (guint i = 0; i < n; i++) {
      if (kinds[i] == 'a')
        good &= !live, live = TRUE;
      else if (kinds[i] == 'f')
        good &= live, live = FALSE;
      else if (kinds[i] == 'u')
        good &= live;
    }
    good &= !live;
    if (!any_alloc) { /* a whole-run buffer: uses are fine, frees are not */
      good = TRUE;
      for (guint i = 0; i < n; i++) good &= kinds[i] != 'f';
    }
    g_autoptr(DrDiags) d = dr_diags_new(0);
    g_assert_cmpint(dr__lifetimes_check(g, d), ==, good);
    if (!good) continue;
    n_ok++;
    dr__hazards_run(g);
    dr_graph_sort_edges(g);
    guint64 reach[16] = {0};
    for (guint e = 0; e < g->edges->len; e++)
      reach[dr_graph_edge(g, e)->from] |= G_GUINT64_CONSTANT(1) << dr_graph_edge(g, e)->to;
    closure(reach, n);
    for (guint i = 0; i < n; i++)
      for (guint j = i + 1; j < n; j++)
        if (kinds[i] != 'x' && kinds[j] != 'x') /* uses are readwrites: every tmp node is ordered */
          g_assert_true((reach[i] >> j) & 1);
  }
  g_assert_cmpuint(n_ok, >, 300);
}

/* ---- afters and cycles ------------------------------------------------- */

static void test_afters_edges(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:4");
  add(g, "a", "w x");
  add(g, "b", "");
  add(g, "c", "r x");
  after(g, "b", "c"); /* c: after [b] */
  after(g, "c", "b"); /* backward; fine while it closes no cycle */
  g_autoptr(DrDiags) d = dr_diags_new(0);
  g_assert_true(dr__afters_run(g, d));
  g_autofree char *got = edges(g);
  g_assert_cmpstr(got, ==, "c>b after, b>c after");
}

static void test_afters_self(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  add(g, "a", "");
  add(g, "b", "");
  after(g, "a", "b");
  after(g, "b", "b");
  g_autoptr(DrDiags) d = dr_diags_new(0);
  g_assert_false(dr__afters_run(g, d));
  g_autofree char *got = diags_text(d);
  g_assert_cmpstr(got, ==, "t.yaml:201:5: error: node 'b': lists itself in after:\n");
}

static char *run_passes(DrGraph *g, gboolean ok) {
  g_autoptr(DrDiags) d = dr_diags_new(0);
  g_assert_cmpint(dr_passes_run(g, d), ==, ok);
  return diags_text(d);
}

static void test_cycles_after_only(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  add(g, "a", "");
  add(g, "b", "");
  after(g, "a", "b"); /* b: after [a] */
  after(g, "b", "a"); /* a: after [b] closes it */
  g_autofree char *got = run_passes(g, FALSE);
  g_assert_cmpstr(got, ==,
                  "t.yaml:201:5: error: dependency cycle: a -> b -> a\n"
                  "t.yaml:200:5: note: 'b' lists 'a' in after:\n"
                  "t.yaml:201:5: note: 'a' lists 'b' in after:\n");
}

static void test_cycles_through_hazards(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 y:8");
  add(g, "z", "w y");
  add(g, "a", "r x");
  add(g, "b", "w x[0:4]"); /* WAR after a */
  add(g, "c", "r x[2:3]"); /* RAW after b */
  after(g, "c", "a");      /* a: after [c] closes a -> b -> c -> a */
  g_autofree char *got = run_passes(g, FALSE);
  g_assert_cmpstr(got, ==,
                  "t.yaml:200:5: error: dependency cycle: a -> b -> c -> a\n"
                  "t.yaml:3:3: note: 'b' writes x after 'a' reads it\n"
                  "t.yaml:4:3: note: 'c' reads x after 'b' writes it\n"
                  "t.yaml:200:5: note: 'a' lists 'c' in after:\n");
}

static void test_cycles_several(void) {
  /* Two separate cycles, one WAW-based; a node downstream of a cycle is
   * not reported again. */
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8");
  add(g, "p", "");
  add(g, "q", "");
  add(g, "r", "");
  add(g, "w1", "w x");
  add(g, "w2", "w x");
  add(g, "down", "");
  after(g, "p", "q");
  after(g, "q", "r");
  after(g, "r", "p");
  after(g, "w2", "w1");
  after(g, "w2", "down");
  after(g, "r", "down");
  g_autofree char *got = run_passes(g, FALSE);
  g_assert_cmpstr(got, ==,
                  "t.yaml:202:5: error: dependency cycle: p -> q -> r -> p\n"
                  "t.yaml:200:5: note: 'q' lists 'p' in after:\n"
                  "t.yaml:201:5: note: 'r' lists 'q' in after:\n"
                  "t.yaml:202:5: note: 'p' lists 'r' in after:\n"
                  "t.yaml:203:5: error: dependency cycle: w1 -> w2 -> w1\n"
                  "t.yaml:5:3: note: 'w2' writes x after 'w1' writes it\n"
                  "t.yaml:203:5: note: 'w1' lists 'w2' in after:\n");
}

static void test_cycles_limit(void) {
  /* 30 separate two-node cycles: the pass stops at the diagnostics limit. */
  g_autoptr(DrGraph) g = dr_graph_new();
  for (int i = 0; i < 30; i++) {
    g_autofree char *a = g_strdup_printf("a%d", i), *b = g_strdup_printf("b%d", i);
    add(g, a, "");
    add(g, b, "");
    after(g, a, b);
    after(g, b, a);
  }
  g_autoptr(DrDiags) d = dr_diags_new(5);
  g_assert_true(dr__afters_run(g, d));
  g_assert_false(dr__cycles_check(g, d));
  g_assert_cmpuint(dr_diags_n_errors(d), ==, 5);
  g_assert_true(dr_diags_full(d));
  g_assert_cmpstr(dr_diags_get(d, 12)->message, ==, "dependency cycle: a4 -> b4 -> a4");
}

static void test_passes_run(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "x:8 tmp:8");
  add(g, "a", "alloc tmp");
  add(g, "k", "r x w tmp");
  add(g, "log", "");
  add(g, "f", "free tmp");
  after(g, "log", "k"); /* backward, acyclic */
  after(g, "k", "f");   /* duplicates the WAW hazard: folded */
  g_autofree char *diags = run_passes(g, TRUE);
  g_assert_cmpstr(diags, ==, "");
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < g->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(g, i);
    g_string_append_printf(s, "%s>%s %s;", dr_graph_node(g, e->from)->id, dr_graph_node(g, e->to)->id,
                           dr_edge_kind_name(e->kind));
  }
  /* Sorted by (to, from) already, without a second sort. */
  g_assert_cmpstr(s->str, ==, "a>k waw;log>k after;k>f waw;");
  g_string_free(s, TRUE);
  g_autoptr(GError) error = NULL;
  dr_graph_check(g, &error);
  g_assert_no_error(error);
}

static void test_passes_stop_after_errors(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  bufs(g, "tmp:8");
  add(g, "k", "w tmp");
  add(g, "a", "alloc tmp");
  add(g, "f", "free tmp");
  after(g, "f", "k"); /* would close a cycle, but lifetimes stop the run first */
  g_autofree char *got = run_passes(g, FALSE);
  g_assert_cmpstr(got, ==,
                  "t.yaml:1:10: error: node 'k': uses buffer 'tmp' before it is allocated by 'a'\n"
                  "t.yaml:2:3: note: 'tmp' is allocated here\n");
  g_assert_cmpuint(g->edges->len, ==, 0);
}

/* Random programs with random after: entries (some backward): the passes
 * report a cycle exactly when the reference order has one, and otherwise
 * their edges give the reference order plus the afters. */
static void test_passes_property(void) {
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  guint n_cyclic = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autoptr(DrGraph) g = random_program(rng);
    guint n = dr_graph_n_nodes(g);
    /* Alloc/free would need well-formed lifetimes: make them noops. */
    for (guint i = 0; i < n; i++) {
      DrNode *node = dr_graph_node(g, i);
      if (node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) node->op = DR_OP_NOOP, node->buffer = DR_NONE;
    }
    guint64 want[64] = {0};
    for (guint i = 0; i < n; i++)
      for (guint j = i + 1; j < n; j++)
        if (nodes_conflict(g, i, j)) want[i] |= G_GUINT64_CONSTANT(1) << j;
    guint n_afters = n > 1 ? g_rand_int_range(rng, 0, 4) : 0;
    for (guint k = 0; k < n_afters; k++) {
      DrId f = g_rand_int_range(rng, 0, n), t = g_rand_int_range(rng, 0, n);
      if (f == t) continue;
      dr_graph_add_after(g, f, t, (DrLoc){FILE_NAME, 200 + k, 5});
      want[f] |= G_GUINT64_CONSTANT(1) << t;
    }
    closure(want, n);
    gboolean cyclic = FALSE;
    for (guint i = 0; i < n; i++) cyclic |= (want[i] >> i) & 1;
    g_autoptr(DrDiags) d = dr_diags_new(0);
    gboolean ok = dr_passes_run(g, d);
    g_assert_cmpint(ok, ==, !cyclic);
    if (cyclic) {
      n_cyclic++;
      /* The first error lists a real cycle: each step is an edge. */
      const char *msg = dr_diags_get(d, 0)->message;
      g_assert_true(g_str_has_prefix(msg, "dependency cycle: "));
      g_auto(GStrv) ids = g_strsplit(msg + strlen("dependency cycle: "), " -> ", -1);
      guint len = g_strv_length(ids);
      g_assert_cmpuint(len, >=, 3);
      g_assert_cmpstr(ids[0], ==, ids[len - 1]);
      for (guint k = 0; k + 1 < len; k++) {
        DrId f = dr_graph_find_node(g, ids[k]), t = dr_graph_find_node(g, ids[k + 1]);
        gboolean found = FALSE;
        for (guint e = 0; e < g->edges->len; e++)
          found |= dr_graph_edge(g, e)->from == f && dr_graph_edge(g, e)->to == t;
        g_assert_true(found);
      }
      /* and one note per step */
      g_assert_cmpuint(dr_diags_len(d), >=, len);
      for (guint k = 1; k < len; k++) g_assert_cmpint(dr_diags_get(d, k)->kind, ==, DR_DIAG_NOTE);
      continue;
    }
    guint64 got[64] = {0};
    for (guint i = 0; i < g->edges->len; i++) {
      const DrEdge *e = dr_graph_edge(g, i);
      got[e->from] |= G_GUINT64_CONSTANT(1) << e->to;
    }
    closure(got, n);
    for (guint i = 0; i < n; i++) g_assert_cmphex(got[i], ==, want[i]);
  }
  g_assert_cmpuint(n_cyclic, >, 100);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/scheduler/hazards/basic", test_hazards_basic);
  g_test_add_func("/scheduler/hazards/touching", test_hazards_touching);
  g_test_add_func("/scheduler/hazards/partial-overlap", test_hazards_partial_overlap);
  g_test_add_func("/scheduler/hazards/readers-then-writer", test_hazards_readers_then_writer);
  g_test_add_func("/scheduler/hazards/readwrite", test_hazards_readwrite);
  g_test_add_func("/scheduler/hazards/dedupe", test_hazards_dedupe);
  g_test_add_func("/scheduler/hazards/alloc-free", test_hazards_alloc_free);
  g_test_add_func("/scheduler/hazards/chunks", test_hazards_chunks);
  g_test_add_func("/scheduler/hazards/property", test_hazards_property);
  g_test_add_func("/scheduler/hazards/property-large", test_hazards_property_large);
  g_test_add_func("/scheduler/hazards/size", test_hazards_size);
  g_test_add_func("/scheduler/lifetimes/ok", test_lifetimes_ok);
  g_test_add_func("/scheduler/lifetimes/use-before-alloc", test_lifetimes_use_before_alloc);
  g_test_add_func("/scheduler/lifetimes/use-after-free", test_lifetimes_use_after_free);
  g_test_add_func("/scheduler/lifetimes/double-alloc", test_lifetimes_double_alloc);
  g_test_add_func("/scheduler/lifetimes/double-free", test_lifetimes_double_free);
  g_test_add_func("/scheduler/lifetimes/free-before-alloc", test_lifetimes_free_before_alloc);
  g_test_add_func("/scheduler/lifetimes/alloc-without-free", test_lifetimes_alloc_without_free);
  g_test_add_func("/scheduler/lifetimes/free-without-alloc", test_lifetimes_free_without_alloc);
  g_test_add_func("/scheduler/lifetimes/several", test_lifetimes_several);
  g_test_add_func("/scheduler/lifetimes/many", test_lifetimes_many);
  g_test_add_func("/scheduler/lifetimes/between-nearer-before", test_lifetimes_between_nearer_before);
  g_test_add_func("/scheduler/lifetimes/between-nearer-after", test_lifetimes_between_nearer_after);
  g_test_add_func("/scheduler/lifetimes/double-in-second", test_lifetimes_double_in_second);
  g_test_add_func("/scheduler/lifetimes/property", test_lifetimes_property);
  g_test_add_func("/scheduler/afters/edges", test_afters_edges);
  g_test_add_func("/scheduler/afters/self", test_afters_self);
  g_test_add_func("/scheduler/cycles/after-only", test_cycles_after_only);
  g_test_add_func("/scheduler/cycles/through-hazards", test_cycles_through_hazards);
  g_test_add_func("/scheduler/cycles/several", test_cycles_several);
  g_test_add_func("/scheduler/cycles/limit", test_cycles_limit);
  g_test_add_func("/scheduler/passes/run", test_passes_run);
  g_test_add_func("/scheduler/passes/stop-after-errors", test_passes_stop_after_errors);
  g_test_add_func("/scheduler/passes/property", test_passes_property);
  return g_test_run();
}
