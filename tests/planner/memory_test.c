/* memory_test.c: tests of the planner's memory figures (scheduler/memory.c):
 * the serial peak and the certified worst-case peak.
 *
 * Property tests build thousands of small random programs with whole-run
 * and stream-ordered device buffers (each with one or more lifetimes), uses
 * and random `after:` edges, run the dependency passes and the planner, and
 * hold the plan against brute force: every linear extension of the DAG is
 * enumerated, and the bound must be at least the live bytes of each and
 * equal the maximum over them (an antichain's allocs can all run before any
 * of its frees); the serial peak must be the live maximum of file order;
 * the certificate must be an antichain (no free of it reaches an alloc of
 * it) of the bound's weight. Chains and fork-joins get their exact values.
 * A larger property test checks the certificate and random extensions on
 * DAGs of up to 62 nodes.
 *
 * The budget (scheduler/budget.c): on thousands of random programs, a limit
 * drawn between the serial peak and the bound gets edges that run forward
 * in file order, keep the graph a DAG, bring the bound within the limit,
 * and keep every linear extension (all of them, by brute force) within it;
 * a limit below the serial peak is refused with the buffers live at that
 * peak as notes. */
#include <glib.h>
#include <string.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/budget.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"

/* ---- building ----------------------------------------------------------- */

typedef struct {
  DrGraph *g;
  guint32 next_id;
} Prog;

static DrId buffer(Prog *p, const char *name, guint64 count) {
  DrBuffer b = {.name = name, .type = DR_ELEM_U8, .count = count};
  DrId id = dr_graph_add_buffer(p->g, &b);
  g_assert_cmpuint(id, !=, DR_NONE);
  return id;
}

static DrId node(Prog *p, DrOp op, DrId buf) {
  g_autofree char *id = g_strdup_printf("n%u", p->next_id++);
  DrNode n = {
      .op = op, .priority = DR_PRIORITY_NORMAL, .id = id, .device = -1, .kernel = DR_NONE, .buffer = buf};
  DrId v = dr_graph_add_node(p->g, &n);
  if (op == DR_OP_ALLOC || op == DR_OP_FREE) {
    DrBuffer *b = dr_graph_buffer(p->g, buf);
    DrId *first = op == DR_OP_ALLOC ? &b->alloc_node : &b->free_node;
    if (*first == DR_NONE) *first = v;
    DrAccess a = {.buffer = buf, .mode = DR_ACCESS_WRITE, .begin = 0, .end = b->count};
    dr_graph_add_access(p->g, &a);
  }
  return v;
}

static void use(Prog *p, DrId buf, DrAccessMode mode) {
  DrAccess a = {.buffer = buf, .mode = mode, .begin = 0, .end = dr_graph_buffer(p->g, buf)->count};
  dr_graph_add_access(p->g, &a);
}

static DrPlan *plan_of(DrGraph *g) {
  g_autoptr(DrDiags) d = dr_diags_new(0);
  gboolean ok = dr_passes_run(g, d);
  if (!ok) {
    g_autoptr(GString) text = g_string_new(NULL);
    for (guint i = 0; i < dr_diags_len(d); i++)
      g_string_append_printf(text, "%s\n", dr_diags_get(d, i)->message);
    g_error("passes failed: %s", text->str);
  }
  g_autoptr(GError) error = NULL;
  DrPlan *plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  return plan;
}

/* ---- references --------------------------------------------------------- */

/* reach[u] bit v: v reachable from u (n <= 64). */
static void closure(const DrGraph *g, guint64 *reach) {
  guint32 n = g->nodes->len;
  memset(reach, 0, sizeof(guint64) * n);
  for (guint32 e = 0; e < g->edges->len; e++)
    reach[dr_graph_edge(g, e)->from] |= G_GUINT64_CONSTANT(1) << dr_graph_edge(g, e)->to;
  /* Edges are sorted by target; sweep sources from the highest id down
   * works only for forward edges, so iterate to a fixed point. */
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    for (guint32 u = 0; u < n; u++) {
      guint64 r = reach[u];
      for (guint64 m = r; m; m &= m - 1) r |= reach[__builtin_ctzll(m)];
      if (r != reach[u]) reach[u] = r, changed = TRUE;
    }
  }
}

typedef struct {
  const DrGraph *g;
  guint32 n;
  guint64 *pred_mask; /* [n]: direct predecessors */
  gint64 *delta;      /* [n]: bytes a node adds to the live set (alloc +, free -) */
  guint64 min_ext;    /* the smallest per-extension maximum seen */
  guint64 max_ext;    /* the largest */
  guint64 bound;      /* the plan's stream-ordered bound, checked per extension */
  guint64 extensions;
  guint64 budget;
} Enum;

static void enumerate(Enum *en, guint64 done, gint64 live, guint64 peak) {
  if (en->extensions >= en->budget) return;
  if (done == (en->n == 64 ? ~G_GUINT64_CONSTANT(0) : (G_GUINT64_CONSTANT(1) << en->n) - 1)) {
    en->extensions++;
    g_assert_cmpuint(peak, <=, en->bound);
    en->max_ext = MAX(en->max_ext, peak);
    en->min_ext = MIN(en->min_ext, peak);
    return;
  }
  for (guint32 v = 0; v < en->n; v++) {
    guint64 bit = G_GUINT64_CONSTANT(1) << v;
    if ((done & bit) || (en->pred_mask[v] & ~done)) continue;
    gint64 l = live + en->delta[v];
    enumerate(en, done | bit, l, MAX(peak, (guint64)MAX(l, 0)));
  }
}

/* Checks the certificate: lifetimes pairwise unordered, of the bound's
 * weight; returns that weight. */
static guint64 check_certificate(const DrPlan *plan, const guint64 *reach) {
  guint64 w = 0;
  for (guint32 i = 0; i < plan->peak_bound->len; i++) {
    const DrPlanLifetime *a = &g_array_index(plan->peak_bound, DrPlanLifetime, i);
    w += a->bytes;
    g_assert_cmpuint(a->bytes, ==, dr_pool_bytes(dr_buffer_bytes(dr_graph_buffer(plan->graph, a->buffer))));
    for (guint32 j = 0; j < plan->peak_bound->len; j++) {
      const DrPlanLifetime *b = &g_array_index(plan->peak_bound, DrPlanLifetime, j);
      if (i != j) g_assert_false((reach[a->free] >> b->alloc) & 1);
    }
  }
  g_assert_cmpuint(plan->whole_run_bytes + w, ==, plan->peak_bound_bytes);
  return w;
}

/* A random program of at most max_n nodes: 1-2 whole-run and 1-3
 * stream-ordered buffers of sizes that round differently, lifetimes
 * toggled at random, uses of what is live, random forward `after:`. */
static DrGraph *random_program(GRand *r, guint32 max_n) {
  Prog p = {dr_graph_new(), 0};
  p.g->name = dr_graph_intern(p.g, "random");
  guint32 n_whole = (guint32)g_rand_int_range(r, 1, 3), n_scratch = (guint32)g_rand_int_range(r, 1, 4);
  DrId whole[2], scratch[3];
  gboolean live[3] = {FALSE, FALSE, FALSE};
  for (guint32 b = 0; b < n_whole; b++) {
    g_autofree char *name = g_strdup_printf("w%u", b);
    whole[b] = buffer(&p, name, (guint64)g_rand_int_range(r, 1, 5000));
  }
  for (guint32 b = 0; b < n_scratch; b++) {
    g_autofree char *name = g_strdup_printf("s%u", b);
    scratch[b] = buffer(&p, name, (guint64)g_rand_int_range(r, 1, 5000));
  }
  guint32 target = (guint32)g_rand_int_range(r, 2, (gint32)max_n + 1);
  while (p.next_id < target) {
    guint32 open = 0;
    for (guint32 b = 0; b < n_scratch; b++) open += live[b];
    /* Leave room to free what is live. */
    if (p.next_id + open >= target) break;
    if (g_rand_int_range(r, 0, 5) < 2) {
      guint32 b = (guint32)g_rand_int_range(r, 0, (gint32)n_scratch);
      node(&p, live[b] ? DR_OP_FREE : DR_OP_ALLOC, scratch[b]);
      live[b] = !live[b];
      continue;
    }
    node(&p, DR_OP_NOOP, DR_NONE);
    guint32 k = (guint32)g_rand_int_range(r, 1, 3);
    for (guint32 a = 0; a < k; a++) {
      DrAccessMode mode = g_rand_boolean(r) ? DR_ACCESS_READ : DR_ACCESS_WRITE;
      guint32 b = (guint32)g_rand_int_range(r, 0, (gint32)(n_whole + n_scratch));
      if (b >= n_whole && !live[b - n_whole]) continue;
      use(&p, b < n_whole ? whole[b] : scratch[b - n_whole], mode);
    }
  }
  for (guint32 b = 0; b < n_scratch; b++)
    if (live[b]) node(&p, DR_OP_FREE, scratch[b]);
  g_assert_cmpuint(p.next_id, <=, max_n + 2); /* an alloc may overshoot by its free */
  guint32 n = p.next_id, n_after = n > 2 ? (guint32)g_rand_int_range(r, 0, 3) : 0;
  for (guint32 k = 0; k < n_after; k++) {
    DrId u = (DrId)g_rand_int_range(r, 0, (gint32)n - 1);
    DrId v = (DrId)g_rand_int_range(r, (gint32)u + 1, (gint32)n);
    dr_graph_add_after(p.g, u, v, (DrLoc){"t.yaml", 1, 1});
  }
  return p.g;
}

static void setup_enum(Enum *en, const DrGraph *g, const DrPlan *plan, guint64 budget) {
  guint32 n = g->nodes->len;
  en->g = g;
  en->n = n;
  en->pred_mask = g_new0(guint64, MAX(n, 1));
  en->delta = g_new0(gint64, MAX(n, 1));
  for (guint32 e = 0; e < g->edges->len; e++)
    en->pred_mask[dr_graph_edge(g, e)->to] |= G_GUINT64_CONSTANT(1) << dr_graph_edge(g, e)->from;
  for (DrId v = 0; v < n; v++) {
    const DrNode *nd = dr_graph_node(g, v);
    if (nd->op != DR_OP_ALLOC && nd->op != DR_OP_FREE) continue;
    gint64 w = (gint64)dr_pool_bytes(dr_buffer_bytes(dr_graph_buffer(g, nd->buffer)));
    en->delta[v] = nd->op == DR_OP_ALLOC ? w : -w;
  }
  en->min_ext = G_MAXUINT64;
  en->max_ext = 0;
  en->bound = plan->peak_bound_bytes - plan->whole_run_bytes;
  en->extensions = 0;
  en->budget = budget;
}

static void clear_enum(Enum *en) {
  g_free(en->pred_mask);
  g_free(en->delta);
}

/* ---- tests -------------------------------------------------------------- */

static void test_property_small(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(2026);
  guint64 total_ext = 0, with_lifetimes = 0, bound_above_serial = 0;
  for (guint iter = 0; iter < 4000; iter++) {
    g_autoptr(DrGraph) g = random_program(r, 9);
    g_autoptr(DrPlan) plan = plan_of(g);
    guint32 n = g->nodes->len;
    guint64 reach[64];
    closure(g, reach);
    guint64 cert = check_certificate(plan, reach);
    Enum en;
    setup_enum(&en, g, plan, 2000000);
    enumerate(&en, 0, 0, 0);
    g_assert_cmpuint(en.extensions, <, en.budget); /* complete */
    total_ext += en.extensions;
    /* The bound is reached by some extension: it is exact. */
    g_assert_cmpuint(en.max_ext, ==, cert);
    /* The serial peak is file order's, an extension of its own. */
    gint64 live = 0;
    guint64 peak = 0;
    for (DrId v = 0; v < n; v++) live += en.delta[v], peak = MAX(peak, (guint64)MAX(live, 0));
    g_assert_cmpuint(plan->peak_serial_bytes, ==, plan->whole_run_bytes + peak);
    g_assert_cmpuint(plan->peak_serial_bytes, <=, plan->peak_bound_bytes);
    with_lifetimes += plan->n_lifetimes > 0;
    bound_above_serial += plan->peak_bound_bytes > plan->peak_serial_bytes;
    clear_enum(&en);
  }
  g_test_message("%" G_GUINT64_FORMAT " linear extensions; %" G_GUINT64_FORMAT
                 " of 4000 DAGs with lifetimes, %" G_GUINT64_FORMAT " with a bound above the serial peak",
                 total_ext, with_lifetimes, bound_above_serial);
  g_assert_cmpuint(with_lifetimes, >, 3000);
  g_assert_cmpuint(bound_above_serial, >, 100);
}

/* Per device (plan->device_memory): random programs whose buffers live on
 * two devices of run.devices. Each device's bound is exact against brute
 * force over that device's buffers alone (the maximum over every linear
 * extension of its live bytes), its certificate an antichain of its own
 * lifetimes, its serial peak file order's; the whole-run figures stay
 * those over every buffer, and the devices' whole-run bytes add up. */
static void test_devices_property(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(1616);
  guint exact_below_whole = 0, split = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autoptr(DrGraph) g = random_program(r, 9);
    g->run.devices[0] = 0;
    g->run.devices[1] = 1;
    g->run.n_devices = 2;
    /* A node's buffers are on its device: buffers used by one node
     * (union-find) share a device, drawn at random per group. */
    guint32 nb = g->buffers->len, root[8], dev[8];
    g_assert_cmpuint(nb, <=, 8);
    for (DrId b = 0; b < nb; b++) root[b] = b, dev[b] = (guint32)g_rand_int_range(r, 0, 2);
    for (DrId v = 0; v < g->nodes->len; v++) {
      const DrNode *nd = dr_graph_node(g, v);
      for (guint32 k = 1; k < nd->access_count; k++) {
        guint32 a = dr_graph_access(g, nd->access_first)->buffer,
                b = dr_graph_access(g, nd->access_first + k)->buffer;
        while (root[a] != a) a = root[a];
        while (root[b] != b) b = root[b];
        root[b] = a;
      }
    }
    for (DrId b = 0; b < nb; b++) {
      guint32 top = b;
      while (root[top] != top) top = root[top];
      DrBuffer *buf = dr_graph_buffer(g, b);
      buf->device = (gint32)dev[top];
      buf->device_set = buf->device != 0;
    }
    g_autoptr(DrPlan) plan = plan_of(g);
    guint64 reach[64];
    closure(g, reach);
    guint32 n = g->nodes->len;
    g_assert_cmpuint(plan->device_memory->len, ==, 2);
    guint64 whole = 0, stream_sum = 0;
    for (guint32 d = 0; d < 2; d++) {
      const DrPlanDeviceMemory *dm = &g_array_index(plan->device_memory, DrPlanDeviceMemory, d);
      g_assert_cmpint(dm->device, ==, (gint32)d);
      whole += dm->whole_run_bytes;
      guint64 w = 0;
      for (guint32 i = 0; i < dm->peak_bound->len; i++) {
        const DrPlanLifetime *a = &g_array_index(dm->peak_bound, DrPlanLifetime, i);
        g_assert_cmpint(dr_graph_buffer_device(g, a->buffer), ==, (gint32)d);
        w += a->bytes;
        for (guint32 j = 0; j < dm->peak_bound->len; j++) {
          const DrPlanLifetime *b = &g_array_index(dm->peak_bound, DrPlanLifetime, j);
          if (i != j) g_assert_false((reach[a->free] >> b->alloc) & 1);
        }
      }
      g_assert_cmpuint(dm->whole_run_bytes + w, ==, dm->peak_bound_bytes);
      stream_sum += w;
      Enum en;
      setup_enum(&en, g, plan, 2000000);
      for (DrId v = 0; v < n; v++) {
        const DrNode *nd = dr_graph_node(g, v);
        if ((nd->op == DR_OP_ALLOC || nd->op == DR_OP_FREE) &&
            dr_graph_buffer_device(g, nd->buffer) != (gint32)d)
          en.delta[v] = 0;
      }
      en.bound = w;
      enumerate(&en, 0, 0, 0);
      g_assert_cmpuint(en.extensions, <, en.budget);
      g_assert_cmpuint(en.max_ext, ==, w);
      gint64 live = 0;
      guint64 peak = 0;
      for (DrId v = 0; v < n; v++) live += en.delta[v], peak = MAX(peak, (guint64)MAX(live, 0));
      g_assert_cmpuint(dm->peak_serial_bytes, ==, dm->whole_run_bytes + peak);
      g_assert_cmpuint(dm->peak_serial_bytes, <=, dm->peak_bound_bytes);
      clear_enum(&en);
    }
    g_assert_cmpuint(whole, ==, plan->whole_run_bytes);
    split += g_array_index(plan->device_memory, DrPlanDeviceMemory, 0).n_lifetimes > 0 &&
             g_array_index(plan->device_memory, DrPlanDeviceMemory, 1).n_lifetimes > 0;
    /* The whole run's bound is one antichain over both devices: at most
     * the devices' bounds together, at least the larger of them. */
    g_assert_cmpuint(plan->peak_bound_bytes, <=, plan->whole_run_bytes + stream_sum);
    exact_below_whole += plan->peak_bound_bytes < plan->whole_run_bytes + stream_sum;
  }
  g_test_message("%u of 3000 with the whole run's bound below the devices' sum", exact_below_whole);
  g_test_message("%u of 3000 with lifetimes on both devices", split);
  g_assert_cmpuint(exact_below_whole, >, 0);
  g_assert_cmpuint(split, >, 300);
}

/* One device: no per-device rows, the figures above are that device's. */
static void test_devices_single(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(7);
  g_autoptr(DrGraph) g = random_program(r, 9);
  g_autoptr(DrPlan) plan = plan_of(g);
  g_assert_cmpuint(plan->device_memory->len, ==, 0);
}

static void test_property_large(void) {
  /* Up to 62 nodes: the certificate is an antichain of the bound's weight,
   * and no random extension (random topological orders) exceeds it. */
  g_autoptr(GRand) r = g_rand_new_with_seed(64);
  for (guint iter = 0; iter < 600; iter++) {
    g_autoptr(DrGraph) g = random_program(r, 60);
    g_autoptr(DrPlan) plan = plan_of(g);
    guint32 n = g->nodes->len;
    guint64 reach[64];
    closure(g, reach);
    guint64 cert = check_certificate(plan, reach);
    Enum en;
    setup_enum(&en, g, plan, 0);
    for (guint k = 0; k < 20; k++) {
      guint64 done = 0, peak = 0;
      gint64 live = 0;
      for (guint32 step = 0; step < n; step++) {
        guint32 ready[64], n_ready = 0;
        for (guint32 v = 0; v < n; v++)
          if (!((done >> v) & 1) && !(en.pred_mask[v] & ~done)) ready[n_ready++] = v;
        g_assert_cmpuint(n_ready, >, 0);
        guint32 v = ready[g_rand_int_range(r, 0, (gint32)n_ready)];
        done |= G_GUINT64_CONSTANT(1) << v;
        live += en.delta[v];
        peak = MAX(peak, (guint64)MAX(live, 0));
      }
      g_assert_cmpuint(peak, <=, cert);
    }
    clear_enum(&en);
  }
}

/* k lifetimes one after another (each alloc after the previous free): the
 * bound is the largest single one, as is the serial peak. Without the
 * `after:` edges t#2 and u#1 could overlap (see chain-unordered). */
static void test_chain(void) {
  Prog p = {dr_graph_new(), 0};
  g_autoptr(DrGraph) g = p.g;
  DrId w = buffer(&p, "w", 1000);
  DrId t = buffer(&p, "t", 3000), u = buffer(&p, "u", 70000);
  DrId prev_free = DR_NONE;
  for (guint k = 0; k < 5; k++) {
    DrId b = k == 2 ? u : t;
    DrId a = node(&p, DR_OP_ALLOC, b);
    /* Lifetimes of different buffers need an explicit order. */
    if (prev_free != DR_NONE) dr_graph_add_after(g, prev_free, a, (DrLoc){"t.yaml", 1, 1});
    node(&p, DR_OP_NOOP, DR_NONE);
    use(&p, w, DR_ACCESS_READ);
    use(&p, b, DR_ACCESS_WRITE);
    prev_free = node(&p, DR_OP_FREE, b);
  }
  g_autoptr(DrPlan) plan = plan_of(g);
  g_assert_cmpuint(plan->whole_run_bytes, ==, 1024);
  g_assert_cmpuint(plan->n_lifetimes, ==, 5);
  g_assert_cmpuint(plan->peak_serial_bytes, ==, 1024 + dr_pool_bytes(70000));
  g_assert_cmpuint(plan->peak_bound_bytes, ==, plan->peak_serial_bytes);
  g_assert_cmpuint(plan->peak_bound->len, ==, 1);
  const DrPlanLifetime *l = &g_array_index(plan->peak_bound, DrPlanLifetime, 0);
  g_assert_cmpstr(dr_graph_buffer(g, l->buffer)->name, ==, "u");
  g_assert_cmpuint(l->lifetime, ==, 1);
}

/* The same lifetimes with only the hazards: t's lifetimes are ordered among
 * themselves, u's single lifetime overlaps any of them. */
static void test_chain_unordered(void) {
  Prog p = {dr_graph_new(), 0};
  g_autoptr(DrGraph) g = p.g;
  DrId w = buffer(&p, "w", 1000);
  DrId t = buffer(&p, "t", 3000), u = buffer(&p, "u", 70000);
  for (guint k = 0; k < 5; k++) {
    DrId b = k == 2 ? u : t;
    node(&p, DR_OP_ALLOC, b);
    node(&p, DR_OP_NOOP, DR_NONE);
    use(&p, w, DR_ACCESS_READ);
    use(&p, b, DR_ACCESS_WRITE);
    node(&p, DR_OP_FREE, b);
  }
  g_autoptr(DrPlan) plan = plan_of(g);
  g_assert_cmpuint(plan->peak_serial_bytes, ==, 1024 + dr_pool_bytes(70000));
  g_assert_cmpuint(plan->peak_bound_bytes, ==, 1024 + dr_pool_bytes(70000) + dr_pool_bytes(3000));
  g_assert_cmpuint(plan->peak_bound->len, ==, 2);
}

/* A fork, k branches each with its own scratch lifetime, a join: the
 * branches may all be live at once, so the bound is their sum, while file
 * order keeps one live at a time. */
static void test_fork_join(void) {
  Prog p = {dr_graph_new(), 0};
  g_autoptr(DrGraph) g = p.g;
  DrId in = buffer(&p, "in", 512), out = buffer(&p, "out", 4096);
  node(&p, DR_OP_NOOP, DR_NONE);
  use(&p, in, DR_ACCESS_WRITE);
  guint64 sum = 0, largest = 0;
  for (guint k = 0; k < 4; k++) {
    g_autofree char *name = g_strdup_printf("s%u", k);
    guint64 count = 1000 * (k + 1);
    DrId s = buffer(&p, name, count);
    node(&p, DR_OP_ALLOC, s);
    node(&p, DR_OP_NOOP, DR_NONE);
    use(&p, in, DR_ACCESS_READ);
    use(&p, s, DR_ACCESS_WRITE);
    node(&p, DR_OP_NOOP, DR_NONE);
    use(&p, s, DR_ACCESS_READ);
    use(&p, out, DR_ACCESS_WRITE);
    DrAccess slice = {.buffer = out, .mode = DR_ACCESS_WRITE, .begin = k * 1024, .end = (k + 1) * 1024};
    g_array_index(g->accesses, DrAccess, g->accesses->len - 1) = slice;
    node(&p, DR_OP_FREE, s);
    sum += dr_pool_bytes(count);
    largest = MAX(largest, dr_pool_bytes(count));
  }
  node(&p, DR_OP_NOOP, DR_NONE);
  use(&p, out, DR_ACCESS_READ);
  g_autoptr(DrPlan) plan = plan_of(g);
  g_assert_cmpuint(plan->peak_serial_bytes, ==, 512 + 4096 + largest);
  g_assert_cmpuint(plan->peak_bound_bytes, ==, 512 + 4096 + sum);
  g_assert_cmpuint(plan->peak_bound->len, ==, 4);
}

/* No stream-ordered buffers: the bound is the whole-run bytes; host
 * buffers do not count; --no-memory leaves zeros. */
static void test_whole_run_only(void) {
  Prog p = {dr_graph_new(), 0};
  g_autoptr(DrGraph) g = p.g;
  DrId a = buffer(&p, "a", 1), b = buffer(&p, "b", 513);
  DrBuffer h = {.name = "h", .type = DR_ELEM_U8, .count = 1 << 20, .where = DR_WHERE_HOST};
  dr_graph_add_buffer(g, &h);
  node(&p, DR_OP_NOOP, DR_NONE);
  use(&p, a, DR_ACCESS_WRITE);
  use(&p, b, DR_ACCESS_WRITE);
  g_autoptr(DrPlan) plan = plan_of(g);
  g_assert_cmpuint(plan->whole_run_bytes, ==, 512 + 1024);
  g_assert_cmpuint(plan->peak_serial_bytes, ==, 512 + 1024);
  g_assert_cmpuint(plan->peak_bound_bytes, ==, 512 + 1024);
  g_assert_cmpuint(plan->n_lifetimes, ==, 0);
  DrPlanOptions o = {.no_memory = TRUE};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) bare = dr_plan_build(g, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(bare->peak_bound_bytes, ==, 0);
}

/* The budget pass on the graph `g` (passes run, no limit yet) under
 * `limit`: TRUE when it accepted it. */
static gboolean apply_limit(DrGraph *g, guint64 limit, DrDiags *d) {
  g->run.memory_limit = limit;
  g->run.memory_limit_set = TRUE;
  g->run.memory_limit_loc = (DrLoc){"t.yaml", 3, 17};
  return dr__budget_run(g, d);
}

static void test_budget_property(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(1616);
  guint64 constrained = 0, edges = 0, refused = 0, exts = 0;
  for (guint iter = 0; iter < 4000; iter++) {
    g_autoptr(DrGraph) g = random_program(r, 9);
    g_autoptr(DrPlan) before = plan_of(g);
    guint64 serial = before->peak_serial_bytes, bound = before->peak_bound_bytes;
    guint32 old_edges = g->edges->len;
    g_autoptr(DrDiags) d = dr_diags_new(0);
    if (serial > before->whole_run_bytes && g_rand_int_range(r, 0, 10) == 0) {
      /* Below the serial peak: refused, the certificate as notes. */
      g_assert_false(apply_limit(g, serial - 1, d));
      g_assert_cmpuint(dr_diags_n_errors(d), ==, 1);
      g_assert_cmpuint(dr_diags_len(d), >=, 2);
      g_assert_cmpuint(g->edges->len, ==, old_edges);
      refused++;
      continue;
    }
    guint64 limit =
        serial + (bound > serial ? (guint64)g_rand_int_range(r, 0, (gint32)(bound - serial + 1)) : 0);
    g_assert_true(apply_limit(g, limit, d));
    g_assert_true(g->budget.ran);
    g_assert_cmpuint(g->budget.bound_before_bytes, ==, bound);
    g_assert_cmpuint(g->budget.bound_after_bytes, <=, limit);
    guint32 added = g->memory_edges ? g->memory_edges->len : 0;
    g_assert_cmpuint(g->edges->len, ==, old_edges + added);
    if (bound <= limit) g_assert_cmpuint(added, ==, 0);
    for (guint i = 0; i < added; i++) {
      const DrEdge *e = &g_array_index(g->memory_edges, DrEdge, i);
      g_assert_cmpuint(e->from, <, e->to); /* forward in file order */
      g_assert_true(dr_graph_node(g, e->from)->op == DR_OP_FREE);
      g_assert_true(dr_graph_node(g, e->to)->op == DR_OP_ALLOC);
    }
    g_assert_true(dr__cycles_check(g, d));
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) after = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(after->peak_bound_bytes, ==, g->budget.bound_after_bytes);
    g_assert_cmpuint(after->peak_bound_bytes, <=, limit);
    g_assert_cmpuint(after->peak_serial_bytes, ==, serial);
    g_assert_cmpuint(after->width, ==, g->budget.width_after);
    if (added > 0) {
      g_assert_cmpuint(before->width, ==, g->budget.width_before);
      g_assert_cmpfloat(g->budget.path_after_us, >=, g->budget.path_before_us);
    }
    /* Every execution the new DAG allows stays within the limit. */
    Enum en;
    setup_enum(&en, g, after, 2000000);
    en.bound = limit - after->whole_run_bytes;
    enumerate(&en, 0, 0, 0);
    g_assert_cmpuint(en.extensions, <, en.budget);
    exts += en.extensions;
    clear_enum(&en);
    constrained += added > 0;
    edges += added;
  }
  g_test_message("%" G_GUINT64_FORMAT " DAGs needed edges (%" G_GUINT64_FORMAT " in all), %" G_GUINT64_FORMAT
                 " limits refused, %" G_GUINT64_FORMAT " linear extensions checked",
                 constrained, edges, refused, exts);
  g_assert_cmpuint(constrained, >, 50);
  g_assert_cmpuint(refused, >, 50);
}

/* A fork of three independent 1 KiB scratch buffers: a limit of two lets
 * one edge in, a limit of one (the serial peak) serializes them, a limit
 * below it is refused naming the one buffer live at the serial peak. */
static void test_budget_fork(void) {
  for (guint k = 1; k <= 4; k++) {
    Prog p = {dr_graph_new(), 0};
    g_autoptr(DrGraph) g = p.g;
    p.g->name = "fork";
    DrId bufs[3];
    for (guint i = 0; i < 3; i++) {
      g_autofree char *name = g_strdup_printf("s%u", i);
      bufs[i] = buffer(&p, name, 1024);
    }
    for (guint i = 0; i < 3; i++) {
      node(&p, DR_OP_ALLOC, bufs[i]);
      node(&p, DR_OP_NOOP, DR_NONE);
      use(&p, bufs[i], DR_ACCESS_WRITE);
      node(&p, DR_OP_FREE, bufs[i]);
    }
    g_autoptr(DrPlan) plan = plan_of(g);
    g_assert_cmpuint(plan->peak_bound_bytes, ==, 3072);
    g_assert_cmpuint(plan->peak_serial_bytes, ==, 1024);
    g_autoptr(DrDiags) d = dr_diags_new(0);
    if (k == 4) {
      g_assert_false(apply_limit(g, 1023, d));
      g_assert_cmpuint(dr_diags_len(d), ==, 2);
      g_assert_nonnull(strstr(dr_diags_get(d, 0)->message, "below the serial peak 1024 bytes"));
      g_assert_nonnull(strstr(dr_diags_get(d, 1)->message, "buffer 's0'"));
      g_assert_cmpuint(dr_diags_get(d, 0)->loc.line, ==, 3);
      continue;
    }
    g_assert_true(apply_limit(g, 1024 * k, d));
    guint32 added = g->memory_edges ? g->memory_edges->len : 0;
    g_assert_cmpuint(added, ==, 3 - k);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) after = dr_plan_build(g, NULL, &error);
    g_assert_cmpuint(after->peak_bound_bytes, ==, 1024 * k);
    g_assert_cmpuint(after->width, ==, k);
    g_assert_cmpuint(g->budget.width_before, ==, 3);
  }
}

/* The curve: from the serial peak to the bound, width never falls as the
 * limit rises, and the last point needs no edge. */
static void test_budget_curve(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(99);
  for (guint iter = 0; iter < 300; iter++) {
    g_autoptr(DrGraph) g = random_program(r, 12);
    g_autoptr(DrPlan) plan = plan_of(g);
    g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(DrMemoryCurvePoint));
    dr__budget_curve(g, 5, pts);
    g_assert_cmpuint(pts->len, >=, 1);
    const DrMemoryCurvePoint *first = &g_array_index(pts, DrMemoryCurvePoint, 0);
    const DrMemoryCurvePoint *last = &g_array_index(pts, DrMemoryCurvePoint, pts->len - 1);
    g_assert_cmpuint(last->limit, ==, plan->peak_bound_bytes);
    g_assert_cmpuint(last->edges_added, ==, 0);
    g_assert_cmpuint(last->width, ==, plan->width);
    g_assert_cmpuint(first->limit, ==, plan->peak_serial_bytes);
    for (guint i = 1; i < pts->len; i++)
      g_assert_cmpuint(g_array_index(pts, DrMemoryCurvePoint, i).limit, >,
                       g_array_index(pts, DrMemoryCurvePoint, i - 1).limit);
  }
}

/* Reuse (scheduler/reuse.c): random programs whose whole-run buffers are
 * scratch, planned with memory.reuse: auto. Two buffers in one storage
 * have every use of the earlier reach every use of the later (closure),
 * so no execution has them live together; the saving is what the groups'
 * largest members save, taken off the whole-run bytes; no edge is added. */
/* A random program of whole-run scratch buffers only: up to 14 noops,
 * each writing or reading one or two of 2-5 buffers, a random `after:`. */
static DrGraph *random_scratch_program(GRand *r) {
  Prog p = {dr_graph_new(), 0};
  p.g->name = dr_graph_intern(p.g, "scratch");
  guint32 nb = (guint32)g_rand_int_range(r, 2, 6);
  for (guint32 b = 0; b < nb; b++) {
    g_autofree char *name = g_strdup_printf("s%u", b);
    DrId id = buffer(&p, name, (guint64)g_rand_int_range(r, 1, 5000));
    dr_graph_buffer(p.g, id)->scratch = TRUE;
  }
  guint32 n = (guint32)g_rand_int_range(r, 2, 15);
  for (guint32 v = 0; v < n; v++) {
    node(&p, DR_OP_NOOP, DR_NONE);
    guint32 k = (guint32)g_rand_int_range(r, 1, 3);
    for (guint32 a = 0; a < k; a++)
      use(&p, (DrId)g_rand_int_range(r, 0, (gint32)nb), g_rand_boolean(r) ? DR_ACCESS_READ : DR_ACCESS_WRITE);
  }
  if (n > 2 && g_rand_boolean(r)) {
    DrId u = (DrId)g_rand_int_range(r, 0, (gint32)n - 1);
    dr_graph_add_after(p.g, u, (DrId)g_rand_int_range(r, (gint32)u + 1, (gint32)n), (DrLoc){"t.yaml", 1, 1});
  }
  return p.g;
}

static void test_reuse_property(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(3003);
  guint shared_total = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autoptr(DrGraph) g = iter % 2 ? random_scratch_program(r) : random_program(r, 14);
    for (DrId b = 0; b < g->buffers->len; b++) {
      DrBuffer *buf = dr_graph_buffer(g, b);
      if (buf->alloc_node == DR_NONE) buf->scratch = TRUE;
    }
    g_autoptr(DrPlan) plain = plan_of(g);
    g->run.reuse = TRUE;
    guint32 edges = g->edges->len;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(g->edges->len, ==, edges);
    g_assert_cmpuint(plan->width, ==, plain->width);
    g_assert_cmpuint(plan->whole_run_bytes + plan->reuse_saved_bytes, ==, plain->whole_run_bytes);
    g_assert_cmpuint(plan->peak_bound_bytes + plan->reuse_saved_bytes, ==, plain->peak_bound_bytes);
    if (plan->storage == NULL) {
      g_assert_cmpuint(plan->reuse_saved_bytes, ==, 0);
      continue;
    }
    /* Binding to external memory (dr_plan_storage_bindable, both
     * backends' check): refused exactly for members of a shared group. */
    for (DrId b = 0; b < g->buffers->len; b++) {
      gboolean grouped = FALSE;
      for (DrId j = 0; j < g->buffers->len; j++)
        grouped = grouped || (j != b && plan->storage[j] == plan->storage[b]);
      g_autoptr(GError) bind_error = NULL;
      g_assert_cmpint(dr_plan_storage_bindable(g, plan->storage, b, &bind_error), ==, !grouped);
      if (grouped) {
        g_assert_error(bind_error, DR_ERROR, DR_ERROR_USAGE);
        g_assert_nonnull(strstr(bind_error->message, dr_graph_buffer(g, b)->name));
      }
      g_assert_true(dr_plan_storage_bindable(g, NULL, b, NULL));
    }
    guint64 reach[64];
    closure(g, reach);
    guint32 n = g->nodes->len;
    for (DrId a = 0; a < g->buffers->len; a++)
      for (DrId b = 0; b < g->buffers->len; b++) {
        if (a == b || plan->storage[a] != plan->storage[b]) continue;
        /* Ordered one way or the other: every use of one reaches every use of the other. */
        gboolean ab = TRUE, ba = TRUE;
        for (DrId u = 0; u < n; u++)
          for (DrId v = 0; v < n; v++) {
            const DrNode *nu = dr_graph_node(g, u), *nv = dr_graph_node(g, v);
            gboolean u_a = FALSE, v_b = FALSE;
            for (guint32 k = nu->access_first; k < nu->access_first + nu->access_count; k++)
              u_a |= dr_graph_access(g, k)->buffer == a;
            for (guint32 k = nv->access_first; k < nv->access_first + nv->access_count; k++)
              v_b |= dr_graph_access(g, k)->buffer == b;
            if (!u_a || !v_b) continue;
            if (!((reach[u] >> v) & 1)) ab = FALSE;
            if (!((reach[v] >> u) & 1)) ba = FALSE;
          }
        g_assert_true(ab || ba);
      }
    for (DrId b = 0; b < g->buffers->len; b++) {
      if (plan->storage[b] == b) continue;
      shared_total++;
      g_assert_cmpuint(plan->storage[plan->storage[b]], ==, plan->storage[b]); /* a group's first buffer */
      g_assert_cmpuint(plan->storage_bytes[plan->storage[b]], >=, dr_buffer_bytes(dr_graph_buffer(g, b)));
    }
  }
  g_test_message("%u buffers placed in another's storage", shared_total);
  g_assert_cmpuint(shared_total, >, 100);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/memory/chain", test_chain);
  g_test_add_func("/planner/memory/chain-unordered", test_chain_unordered);
  g_test_add_func("/planner/memory/fork-join", test_fork_join);
  g_test_add_func("/planner/memory/whole-run-only", test_whole_run_only);
  g_test_add_func("/planner/memory/property-small", test_property_small);
  g_test_add_func("/planner/memory/property-large", test_property_large);
  g_test_add_func("/planner/memory/budget-fork", test_budget_fork);
  g_test_add_func("/planner/memory/budget-property", test_budget_property);
  g_test_add_func("/planner/memory/budget-curve", test_budget_curve);
  g_test_add_func("/planner/memory/reuse-property", test_reuse_property);
  g_test_add_func("/planner/memory/devices-property", test_devices_property);
  g_test_add_func("/planner/memory/devices-single", test_devices_single);
  return g_test_run();
}
