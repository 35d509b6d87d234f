/* planner_test.c: tests of the stream planner (scheduler/planner.h).
 *
 * Property tests run the planner on thousands of random DAGs of every shape
 * (chains, fork-joins, layered, random, random programs over sliced buffers
 * whose hazards a tiny local builder derives, program order permuted so
 * edges also point backward) and hold each plan against slow references:
 * a bitset transitive closure and the exact width by bipartite matching on
 * it (König/Dilworth), for n <= 48. Golden tests pin the --plan text, JSON
 * and DOT of small graphs; DAGRUN_REGEN=1 rewrites them. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/support/dag_reference.h"
#include "tests/support/plan_edit.h"
#include "tests/support/golden.h"

/* ---- graph building ----------------------------------------------------- */

static DrId add_node(DrGraph *g, DrOp op, DrPriority prio, const char *fmt, guint32 i) {
  g_autofree char *id = g_strdup_printf(fmt, i);
  DrNode node = {.op = op, .priority = prio, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
  node.id = id;
  if (op == DR_OP_KERNEL) node.kernel = dr_graph_find_kernel(g, "k");
  return dr_graph_add_node(g, &node);
}

static DrGraph *new_graph(const char *name) {
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, name);
  DrKernelDecl k = {.name = "k", .origin = DR_KERNEL_USER, .grid = {DR_NONE, 1}};
  dr_graph_add_kernel(g, &k);
  return g;
}

typedef struct {
  guint32 n;
  GArray *from, *to; /* abstract edges over 0..n-1, from < to */
} Shape;

static void shape_edge(Shape *s, guint32 u, guint32 v) {
  g_array_append_val(s->from, u);
  g_array_append_val(s->to, v);
}

static Shape shape_new(guint32 n) {
  return (Shape){n, g_array_new(FALSE, FALSE, sizeof(guint32)), g_array_new(FALSE, FALSE, sizeof(guint32))};
}

static void shape_clear(Shape *s) {
  g_array_unref(s->from);
  g_array_unref(s->to);
}

/* Random DAG shapes, abstract nodes numbered topologically. */
static Shape make_shape(GRand *r, int kind, guint32 max_n) {
  guint32 n = (guint32)g_rand_int_range(r, 1, (gint32)max_n + 1);
  Shape s = shape_new(n);
  switch (kind) {
    case 0: /* chains, sometimes several independent ones */
    {
      guint32 k = (guint32)g_rand_int_range(r, 1, 4);
      for (guint32 v = k; v < n; v++) shape_edge(&s, v - k, v);
      break;
    }
    case 1: /* fork-join stages */
    {
      guint32 v = 1;
      guint32 src = 0;
      while (v < n) {
        guint32 branches = (guint32)g_rand_int_range(r, 1, 6), len = (guint32)g_rand_int_range(r, 1, 4);
        GArray *tails = g_array_new(FALSE, FALSE, sizeof(guint32));
        for (guint32 b = 0; b < branches && v < n; b++) {
          guint32 prev = src;
          for (guint32 l = 0; l < len && v < n; l++, v++) {
            shape_edge(&s, prev, v);
            prev = v;
          }
          g_array_append_val(tails, prev);
        }
        if (v < n) {
          for (guint32 t = 0; t < tails->len; t++) shape_edge(&s, g_array_index(tails, guint32, t), v);
          src = v++;
        }
        g_array_unref(tails);
      }
      break;
    }
    case 2: /* layered, with occasional skip edges */
    {
      guint32 lw = (guint32)g_rand_int_range(r, 1, 8);
      for (guint32 v = lw; v < n; v++) {
        guint32 layer_start = (v / lw) * lw;
        guint32 prev_start = layer_start - lw;
        guint32 deg = (guint32)g_rand_int_range(r, 0, 3);
        for (guint32 d = 0; d < deg; d++)
          shape_edge(&s, prev_start + (guint32)g_rand_int_range(r, 0, (gint32)lw), v);
        if (g_rand_int_range(r, 0, 8) == 0)
          shape_edge(&s, (guint32)g_rand_int_range(r, 0, (gint32)layer_start), v);
      }
      break;
    }
    default: /* random: each pair with a random density */
    {
      double p = g_rand_double_range(r, 0.0, 0.3);
      for (guint32 v = 1; v < n; v++)
        for (guint32 u = 0; u < v; u++)
          if (g_rand_double(r) < p) shape_edge(&s, u, v);
      break;
    }
  }
  return s;
}

/* Turns a shape into a graph, nodes added in a random permutation of
 * program order (edges then point either way, as AFTER edges may). */
static DrGraph *shape_graph(GRand *r, const Shape *s, gboolean priorities, gboolean permute) {
  DrGraph *g = new_graph("random");
  guint32 *perm = g_new(guint32, MAX(s->n, 1));
  for (guint32 i = 0; i < s->n; i++) perm[i] = i;
  if (permute)
    for (guint32 i = s->n; i > 1; i--) {
      guint32 j = (guint32)g_rand_int_range(r, 0, (gint32)i), t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
  /* Node with program position p is abstract node inv[p]. */
  guint32 *inv = g_new(guint32, MAX(s->n, 1));
  for (guint32 i = 0; i < s->n; i++) inv[perm[i]] = i;
  for (guint32 p = 0; p < s->n; p++) {
    DrOp op = (DrOp)g_rand_int_range(r, 0, 3);
    DrOp ops[] = {DR_OP_KERNEL, DR_OP_HOST, DR_OP_NOOP};
    DrPriority prio = priorities ? (DrPriority)g_rand_int_range(r, 0, DR_N_PRIORITIES) : DR_PRIORITY_NORMAL;
    add_node(g, ops[op], prio, "n%u", inv[p]);
  }
  for (guint32 e = 0; e < s->from->len; e++)
    dr_graph_add_edge(g, perm[g_array_index(s->from, guint32, e)], perm[g_array_index(s->to, guint32, e)],
                      DR_EDGE_AFTER, DR_NONE);
  dr_graph_sort_edges(g);
  g_free(inv);
  g_free(perm);
  return g;
}

/* A random program: nodes read and write slices of a few buffers; a tiny
 * hazard builder adds RAW/WAR/WAW edges between overlapping accesses. */
static DrGraph *program_graph(GRand *r, guint32 max_n) {
  DrGraph *g = new_graph("program");
  guint32 n_buf = (guint32)g_rand_int_range(r, 1, 4), n = (guint32)g_rand_int_range(r, 1, (gint32)max_n + 1);
  for (guint32 b = 0; b < n_buf; b++) {
    g_autofree char *name = g_strdup_printf("b%u", b);
    DrBuffer buf = {
        .name = name, .type = DR_ELEM_F32, .count = 16, .alloc_node = DR_NONE, .free_node = DR_NONE};
    dr_graph_add_buffer(g, &buf);
  }
  for (guint32 v = 0; v < n; v++) {
    add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "p%u", v);
    guint32 k = (guint32)g_rand_int_range(r, 1, 3);
    for (guint32 a = 0; a < k; a++) {
      guint64 begin = (guint64)g_rand_int_range(r, 0, 16);
      DrAccess acc = {.buffer = (DrId)g_rand_int_range(r, 0, (gint32)n_buf),
                      .mode = (DrAccessMode)g_rand_int_range(r, 0, DR_ACCESS_N_MODES),
                      .begin = begin,
                      .end = begin + (guint64)g_rand_int_range(r, 1, (gint32)(17 - begin))};
      dr_graph_add_access(g, &acc);
    }
  }
  for (DrId v = 0; v < n; v++) {
    const DrNode *nv = dr_graph_node(g, v);
    for (DrId u = 0; u < v; u++) {
      const DrNode *nu = dr_graph_node(g, u);
      for (guint32 i = nu->access_first; i < nu->access_first + nu->access_count; i++)
        for (guint32 j = nv->access_first; j < nv->access_first + nv->access_count; j++) {
          const DrAccess *a = dr_graph_access(g, i), *b = dr_graph_access(g, j);
          if (a->buffer != b->buffer || a->end <= b->begin || b->end <= a->begin) continue;
          gboolean aw = dr_access_writes(a->mode), bw = dr_access_writes(b->mode);
          if (!aw && !bw) continue;
          DrEdgeKind kind = aw && bw ? DR_EDGE_WAW : aw ? DR_EDGE_RAW : DR_EDGE_WAR;
          dr_graph_add_edge(g, u, v, kind, a->buffer);
        }
    }
  }
  dr_graph_sort_edges(g);
  return g;
}

/* The slow references (n <= 64) are tests/support/dag_reference.h's. */

/* ---- plan properties -------------------------------------------------- */

typedef struct {
  guint plans, waits_checked, binding;
} Stats;

/* Checks every property of a plan of a small graph (n <= 64). */
static void check_small(const DrGraph *g, const DrPlan *plan, guint32 cap, Stats *stats) {
  g_autoptr(GError) error = NULL;
  guint32 n = g->nodes->len;
  g_assert_true(dr_plan_check(plan, &error));
  g_assert_no_error(error);
  g_autofree guint64 *reach = dr_test_closure(g);
  guint64 all = n == 64 ? G_MAXUINT64 : (G_GUINT64_CONSTANT(1) << n) - 1;

  /* The width and its certificate. */
  g_assert_cmpuint(plan->width, ==, dr_test_width(reach, n, all));
  g_assert_cmpuint(plan->antichain->len, ==, plan->width);
  for (guint32 i = 0; i < plan->antichain->len; i++)
    for (guint32 j = i + 1; j < plan->antichain->len; j++)
      g_assert_false(dr_test_comparable(reach, g_array_index(plan->antichain, DrId, i),
                                        g_array_index(plan->antichain, DrId, j)));

  /* Stream count: the sum of class widths, unless the cap binds. */
  guint32 class_width_sum = 0, n_classes = 0;
  for (guint p = 0; p < DR_N_PRIORITIES; p++) {
    guint64 mask = 0;
    for (DrId v = 0; v < n; v++)
      if (dr_graph_node(g, v)->priority == p) mask |= G_GUINT64_CONSTANT(1) << v;
    if (mask == 0) continue;
    n_classes++;
    class_width_sum += dr_test_width(reach, n, mask);
  }
  g_assert_cmpuint(plan->cap_binds, ==, class_width_sum > plan->cap);
  if (cap > 0) g_assert_cmpuint(plan->cap, ==, MAX(cap, n_classes));
  if (!plan->cap_binds) {
    g_assert_cmpuint(plan->streams->len, ==, class_width_sum);
    g_assert_cmpfloat_with_epsilon(plan->planned_path_us, plan->critical_path_us, 1e-9);
    /* No ordering the DAG does not imply: one stream is one chain. */
    for (DrId a = 0; a < n; a++)
      for (DrId b = a + 1; b < n; b++)
        if (plan->node_stream[a] == plan->node_stream[b]) g_assert_true(dr_test_comparable(reach, a, b));
  } else {
    stats->binding++;
    g_assert_cmpuint(plan->streams->len, <=, plan->cap);
    g_assert_cmpfloat(plan->planned_path_us, >=, plan->critical_path_us - 1e-9);
  }
  /* Priorities never share a stream (P4, also in dr_plan_check). */
  for (DrId v = 0; v < n; v++)
    g_assert_cmpint(g_array_index(plan->streams, DrStream, plan->node_stream[v]).priority, ==,
                    dr_graph_node(g, v)->priority);

  /* No redundant wait: dropping any one breaks P2. */
  for (guint32 w = 0; w < plan->waits->len; w++) {
    g_autoptr(DrPlan) q = dr_test_plan_without_wait(plan, w);
    g_autoptr(GError) e2 = NULL;
    g_assert_false(dr_plan_check(q, &e2));
    g_assert_nonnull(e2);
    g_assert_true(g_str_has_prefix(e2->message, "P2"));
    stats->waits_checked++;
  }
  stats->plans++;
}

static void test_random_small(gconstpointer data) {
  int kind = GPOINTER_TO_INT(data);
  g_autoptr(GRand) r = g_rand_new_with_seed(1234 + (guint32)kind);
  Stats stats = {0};
  for (int iter = 0; iter < 1000; iter++) {
    gboolean priorities = iter % 4 == 3;
    guint32 cap = iter % 3 == 2 ? (guint32)g_rand_int_range(r, 1, 6) : 64;
    g_autoptr(DrGraph) g = NULL;
    if (kind == 4) {
      g = program_graph(r, 40);
    } else {
      Shape s = make_shape(r, kind, 40);
      g = shape_graph(r, &s, priorities, iter % 2 == 1);
      shape_clear(&s);
    }
    /* Every fifth plan without greedy merges: Dinic's phases do it all. */
    DrPlanOptions opts = {cap, NULL, .no_greedy_merges = iter % 5 == 4};
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
    g_assert_no_error(error);
    check_small(g, plan, cap, &stats);
  }
  g_assert_cmpuint(stats.plans, ==, 1000);
  if (g_test_verbose())
    g_printerr("kind %d: %u plans, %u waits proven necessary, %u with the cap binding\n", kind, stats.plans,
               stats.waits_checked, stats.binding);
}

/* The waits that events.c's vector clocks give, recomputed the plain way:
 * a full 32-bit clock row per stream and a full copy per node, joined
 * entry by entry (events.c narrows clocks to 16 bits and shares copies
 * between a stream's nodes; the waits must be the same, in the same
 * order). O(V * S) memory: for tests only. */
static void check_waits_reference(const DrGraph *g, const DrPlan *plan) {
  guint32 n = g->nodes->len, m = g->edges->len, S = MAX(plan->streams->len, 1);
  guint32 *pred_off = g_new0(guint32, n + 1);
  for (guint32 e = 0; e < m; e++) pred_off[dr_graph_edge(g, e)->to + 1]++;
  for (guint32 v = 0; v < n; v++) pred_off[v + 1] += pred_off[v];
  guint32 *rows = g_new0(guint32, (gsize)S * S), *snap = g_new0(guint32, (gsize)n * S);
  guint32 *count = g_new0(guint32, S), *place = g_new0(guint32, MAX(n, 1));
  GArray *preds = g_array_new(FALSE, FALSE, sizeof(guint32)); /* steps, descending */
  guint32 checked = 0;
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *step = &g_array_index(plan->steps, DrPlanStep, i);
    DrId v = step->node;
    guint32 s = step->stream, *row = rows + (gsize)s * S;
    place[v] = ++count[s];
    row[s] = place[v];
    g_array_set_size(preds, 0);
    for (guint32 e = pred_off[v]; e < pred_off[v + 1]; e++) {
      DrId u = dr_graph_edge(g, e)->from;
      if (plan->node_stream[u] == s) continue;
      guint32 k = preds->len, su = plan->node_step[u];
      g_array_set_size(preds, k + 1);
      for (; k > 0 && g_array_index(preds, guint32, k - 1) < su; k--)
        g_array_index(preds, guint32, k) = g_array_index(preds, guint32, k - 1);
      g_array_index(preds, guint32, k) = su;
    }
    guint32 w = step->wait_first;
    for (guint32 k = 0; k < preds->len; k++) {
      DrId u = g_array_index(plan->steps, DrPlanStep, g_array_index(preds, guint32, k)).node;
      if (row[plan->node_stream[u]] >= place[u]) continue;
      g_assert_cmpuint(w, <, step->wait_first + step->wait_count);
      g_assert_cmpuint(g_array_index(plan->waits, DrId, w), ==, u);
      w++;
      for (guint32 x = 0; x < S; x++) row[x] = MAX(row[x], snap[(gsize)u * S + x]);
    }
    g_assert_cmpuint(w, ==, step->wait_first + step->wait_count);
    checked += step->wait_count;
    memcpy(snap + (gsize)v * S, row, S * sizeof(guint32));
  }
  g_assert_cmpuint(checked, ==, plan->waits->len);
  g_array_unref(preds);
  g_free(place);
  g_free(count);
  g_free(snap);
  g_free(rows);
  g_free(pred_off);
}

/* Larger DAGs: no exact reference, but the certificate must hold: an
 * antichain (pairwise unreachable, checked by BFS) as large as the number
 * of streams, and dr_plan_check. */
static void test_random_large(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(99);
  for (int iter = 0; iter < 40; iter++) {
    Shape s = make_shape(r, iter % 4, 3000);
    g_autoptr(DrGraph) g = shape_graph(r, &s, FALSE, iter % 2);
    shape_clear(&s);
    DrPlanOptions opts = {100000, NULL, .no_greedy_merges = iter % 3 == 2};
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
    g_assert_no_error(error);
    g_assert_true(dr_plan_check(plan, &error));
    g_assert_cmpuint(plan->streams->len, ==, plan->width);
    g_assert_cmpuint(plan->antichain->len, ==, plan->width);
    check_waits_reference(g, plan);
    guint32 n = g->nodes->len;
    /* Successor lists for the BFS. */
    GPtrArray *succ = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint32 v = 0; v < n; v++) g_ptr_array_add(succ, g_array_new(FALSE, FALSE, sizeof(DrId)));
    for (guint32 e = 0; e < g->edges->len; e++)
      g_array_append_val(g_ptr_array_index(succ, dr_graph_edge(g, e)->from), dr_graph_edge(g, e)->to);
    guint8 *in_chain = g_new0(guint8, n), *seen = g_new(guint8, n);
    for (guint32 i = 0; i < plan->antichain->len; i++) in_chain[g_array_index(plan->antichain, DrId, i)] = 1;
    GArray *stack = g_array_new(FALSE, FALSE, sizeof(DrId));
    for (guint32 i = 0; i < plan->antichain->len; i++) {
      DrId a = g_array_index(plan->antichain, DrId, i);
      memset(seen, 0, n);
      g_array_append_val(stack, a);
      while (stack->len) {
        DrId x = g_array_index(stack, DrId, stack->len - 1);
        g_array_set_size(stack, stack->len - 1);
        GArray *out = g_ptr_array_index(succ, x);
        for (guint32 k = 0; k < out->len; k++) {
          DrId y = g_array_index(out, DrId, k);
          if (seen[y]) continue;
          seen[y] = 1;
          g_assert_false(in_chain[y]);
          g_array_append_val(stack, y);
        }
      }
    }
    g_array_unref(stack);
    g_free(seen);
    g_free(in_chain);
    g_ptr_array_unref(succ);
  }
}

/* Large and wide enough that the cap merges chains by the list-scheduling
 * heuristic rather than the exact greedy (cap.c). */
static void test_cap_heuristic(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(5);
  for (guint32 cap = 1; cap <= 9; cap += 4) {
    Shape s = shape_new(3000);
    for (guint32 v = 100; v < s.n; v++) {
      shape_edge(&s, v - 100, v);
      if (g_rand_boolean(r)) shape_edge(&s, v - 100 - v % 100 + (guint32)g_rand_int_range(r, 0, 100), v);
    }
    g_autoptr(DrGraph) g = shape_graph(r, &s, FALSE, TRUE);
    shape_clear(&s);
    DrPlanOptions opts = {cap, NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
    g_assert_no_error(error);
    g_assert_true(dr_plan_check(plan, &error));
    g_assert_cmpuint(plan->width, ==, 100);
    g_assert_true(plan->cap_binds);
    g_assert_cmpuint(plan->streams->len, ==, cap);
    g_assert_cmpfloat(plan->planned_path_us, >=, plan->critical_path_us);
  }
}

/* 20000 independent nodes asking for unlimited streams: the cap stops at
 * 4096 and the list scheduling spreads them evenly. */
static void test_cap_limit_wide(void) {
  g_autoptr(DrGraph) g = new_graph("wide");
  for (guint32 i = 0; i < 20000; i++) add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "w%u", i);
  DrPlanOptions opts = {G_MAXUINT32, NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->width, ==, 20000);
  g_assert_cmpuint(plan->cap, ==, 4096);
  g_assert_true(plan->cap_binds);
  g_assert_cmpuint(plan->streams->len, ==, 4096);
  g_assert_cmpuint(plan->waits->len, ==, 0);
  for (guint32 s = 0; s < 4096; s++)
    g_assert_cmpuint(g_array_index(plan->streams, DrStream, s).n_nodes, <=, 5);
  g_assert_true(dr_plan_check(plan, &error));
}

/* ---- hand-made graphs and goldens ------------------------------------ */

/* a -> {b, c} -> d, plus e independent: width 3. */
static DrGraph *diamond(void) {
  DrGraph *g = new_graph("diamond");
  DrId a = add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "a", 0);
  DrId b = add_node(g, DR_OP_HOST, DR_PRIORITY_NORMAL, "b", 0);
  DrId c = add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "c", 0);
  DrId d = add_node(g, DR_OP_NOOP, DR_PRIORITY_NORMAL, "d", 0);
  add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "e", 0);
  dr_graph_add_edge(g, a, b, DR_EDGE_RAW, DR_NONE);
  dr_graph_add_edge(g, a, c, DR_EDGE_RAW, DR_NONE);
  dr_graph_add_edge(g, b, d, DR_EDGE_RAW, DR_NONE);
  dr_graph_add_edge(g, c, d, DR_EDGE_WAR, DR_NONE);
  dr_graph_sort_edges(g);
  return g;
}

/* The spec's chunked pipeline shape: alloc, 4 x (upload -> scale), a
 * high-priority download, free, report; copies with real byte counts. */
static DrGraph *chunked(void) {
  DrGraph *g = new_graph("chunked");
  DrBuffer xh = {.name = "x_host", .type = DR_ELEM_F32, .count = 1 << 20, .where = DR_WHERE_HOST};
  DrBuffer x = {.name = "x", .type = DR_ELEM_F32, .count = 1 << 20};
  DrBuffer y = {.name = "y", .type = DR_ELEM_F32, .count = 1 << 20};
  DrBuffer yh = {.name = "y_host", .type = DR_ELEM_F32, .count = 1 << 20, .where = DR_WHERE_HOST};
  DrId bxh = dr_graph_add_buffer(g, &xh), bx = dr_graph_add_buffer(g, &x), by = dr_graph_add_buffer(g, &y),
       byh = dr_graph_add_buffer(g, &yh);
  DrNode al = {.op = DR_OP_ALLOC,
               .priority = DR_PRIORITY_NORMAL,
               .id = "alloc_x",
               .buffer = bx,
               .kernel = DR_NONE,
               .device = -1};
  DrId alloc = dr_graph_add_node(g, &al);
  DrId up[4], sc[4];
  guint64 q = (1 << 20) / 4;
  for (guint32 c = 0; c < 4; c++) {
    up[c] = add_node(g, DR_OP_COPY, DR_PRIORITY_NORMAL, "up%u", c);
    DrAccess src = {.buffer = bxh, .mode = DR_ACCESS_READ, .begin = c * q, .end = (c + 1) * q};
    DrAccess dst = {.buffer = bx, .mode = DR_ACCESS_WRITE, .begin = c * q, .end = (c + 1) * q};
    dr_graph_add_access(g, &src);
    dr_graph_add_access(g, &dst);
  }
  for (guint32 c = 0; c < 4; c++) {
    sc[c] = add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, "scale%u", c);
    DrAccess in = {.buffer = bx, .mode = DR_ACCESS_READ, .begin = c * q, .end = (c + 1) * q};
    DrAccess out = {.buffer = by, .mode = DR_ACCESS_WRITE, .begin = c * q, .end = (c + 1) * q};
    dr_graph_add_access(g, &in);
    dr_graph_add_access(g, &out);
  }
  DrId down = add_node(g, DR_OP_COPY, DR_PRIORITY_HIGH, "down", 0);
  DrAccess src = {.buffer = by, .mode = DR_ACCESS_READ, .begin = 0, .end = 1 << 20};
  DrAccess dst = {.buffer = byh, .mode = DR_ACCESS_WRITE, .begin = 0, .end = 1 << 20};
  dr_graph_add_access(g, &src);
  dr_graph_add_access(g, &dst);
  DrNode fr = {.op = DR_OP_FREE,
               .priority = DR_PRIORITY_NORMAL,
               .id = "free_x",
               .buffer = bx,
               .kernel = DR_NONE,
               .device = -1};
  DrId free_x = dr_graph_add_node(g, &fr);
  DrNode rep = {.op = DR_OP_HOST,
                .priority = DR_PRIORITY_NORMAL,
                .id = "report",
                .host_fn = DR_HOST_FN_CHECKSUM,
                .kernel = DR_NONE,
                .buffer = DR_NONE,
                .device = -1};
  DrId report = dr_graph_add_node(g, &rep);
  for (guint32 c = 0; c < 4; c++) {
    dr_graph_add_edge(g, alloc, up[c], DR_EDGE_WAW, bx);
    dr_graph_add_edge(g, up[c], sc[c], DR_EDGE_RAW, bx);
    dr_graph_add_edge(g, sc[c], down, DR_EDGE_RAW, by);
    dr_graph_add_edge(g, sc[c], free_x, DR_EDGE_WAR, bx);
  }
  dr_graph_add_edge(g, down, report, DR_EDGE_RAW, byh);
  dr_graph_sort_edges(g);
  return g;
}

/* 6 independent 3-node chains of different lengths in time: width 6. */
static DrGraph *six_chains(void) {
  DrGraph *g = new_graph("six-chains");
  for (guint32 c = 0; c < 6; c++) {
    DrId prev = DR_NONE;
    for (guint32 k = 0; k < 3; k++) {
      g_autofree char *id = g_strdup_printf("c%u_%u", c, k);
      DrId v = add_node(g, c % 2 ? DR_OP_HOST : DR_OP_KERNEL, DR_PRIORITY_NORMAL, id, 0);
      if (prev != DR_NONE) dr_graph_add_edge(g, prev, v, DR_EDGE_RAW, DR_NONE);
      prev = v;
    }
  }
  dr_graph_sort_edges(g);
  return g;
}

typedef DrGraph *(*GraphMaker)(void);
typedef struct {
  const char *name;
  GraphMaker make;
  guint32 cap;
} Golden;

static const Golden goldens[] = {
    {"diamond", diamond, 8},
    {"chunked", chunked, 8},
    {"six-chains-cap2", six_chains, 2},
};

static void test_golden(gconstpointer data) {
  const Golden *gd = data;
  g_autoptr(DrGraph) g = gd->make();
  DrPlanOptions opts = {gd->cap, NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  g_assert_true(dr_plan_check(plan, &error));
  g_autoptr(GString) text = g_string_new(NULL), json = g_string_new(NULL), dot = g_string_new(NULL);
  dr_plan_write_text(plan, text);
  dr_plan_write_json(plan, json);
  dr_plan_write_dot(plan, dot);
  g_autofree char *t = g_strdup_printf("%s.plan.expected", gd->name);
  g_autofree char *j = g_strdup_printf("%s.json.expected", gd->name);
  g_autofree char *d = g_strdup_printf("%s.dot.expected", gd->name);
  dr_test_check_golden("tests/planner/golden", "//tests/planner:planner", t, text->str);
  dr_test_check_golden("tests/planner/golden", "//tests/planner:planner", j, json->str);
  dr_test_check_golden("tests/planner/golden", "//tests/planner:planner", d, dot->str);
}

static void test_diamond_exact(void) {
  g_autoptr(DrGraph) g = diamond();
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->width, ==, 3);
  g_assert_cmpuint(plan->streams->len, ==, 3);
  /* One of b, c shares a's stream; the other waits on a; d waits on the
   * other one: 2 events for 4 edges, and e runs alone. */
  g_assert_cmpuint(plan->waits->len, ==, 2);
  g_assert_false(plan->cap_binds);
  g_assert_cmpuint(plan->cap, ==, 8);
}

/* The issue order interleaves streams by estimated start: six independent
 * chains of equal-cost nodes issue their first nodes first, one per
 * stream, not one stream after another. */
static void test_order_interleaves(void) {
  g_autoptr(DrGraph) g = new_graph("interleave");
  for (guint32 c = 0; c < 6; c++) {
    DrId prev = DR_NONE;
    for (guint32 k = 0; k < 3; k++) {
      g_autofree char *id = g_strdup_printf("c%u_%u", c, k);
      DrId v = add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, id, 0);
      if (prev != DR_NONE) dr_graph_add_edge(g, prev, v, DR_EDGE_RAW, DR_NONE);
      prev = v;
    }
  }
  dr_graph_sort_edges(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->streams->len, ==, 6);
  for (guint32 i = 0; i < 18; i++) {
    const DrPlanStep *step = dr_plan_step(plan, i);
    g_assert_cmpuint(step->stream, ==, i % 6);
    g_assert_true(g_str_has_suffix(dr_graph_node(g, step->node)->id, i < 6 ? "_0" : i < 12 ? "_1" : "_2"));
  }
}

static void test_cap_binds_six(void) {
  g_autoptr(DrGraph) g = six_chains();
  DrPlanOptions opts = {2, NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  g_assert_true(plan->cap_binds);
  g_assert_cmpuint(plan->width, ==, 6);
  g_assert_cmpuint(plan->streams->len, ==, 2);
  g_assert_cmpfloat(plan->planned_path_us, >, plan->critical_path_us);
  g_assert_true(dr_plan_check(plan, &error));
}

/* The planner's own cap rule, which reads no environment: the resolved
 * cap arrives in DrPlanOptions (the library's rule over
 * CUDA_DEVICE_MAX_CONNECTIONS is tested in tests/api, /api/plan/cap). */
static void test_cap_sources(void) {
  g_autoptr(DrGraph) g = six_chains();
  g_autoptr(GError) error = NULL;
  g_setenv("CUDA_DEVICE_MAX_CONNECTIONS", "3", TRUE);
  g_autoptr(DrPlan) p1 = dr_plan_build(g, NULL, &error);
  g_assert_cmpuint(p1->cap, ==, 8); /* pure: the environment is not read */
  g_assert_false(p1->uncapped);
  DrPlanOptions three = {.max_streams = 3, .cap_note = "note"};
  g_autoptr(DrPlan) p2 = dr_plan_build(g, &three, &error);
  g_assert_cmpuint(p2->cap, ==, 3);
  g_assert_cmpstr(p2->cap_note, ==, "note");
  /* Graph mode: no queue cap (capture would turn merges into false edges),
   * neither the default nor the environment's. */
  g->run.mode = DR_MODE_GRAPH;
  g_autoptr(DrPlan) pg = dr_plan_build(g, NULL, &error);
  g_assert_cmpuint(pg->cap, ==, 4096);
  g_assert_true(pg->uncapped);
  g_assert_false(pg->cap_binds);
  g_assert_cmpuint(pg->streams->len, ==, 6);
  g->run.max_streams = 4;
  g->run.max_streams_set = TRUE;
  g_autoptr(DrPlan) p3 = dr_plan_build(g, NULL, &error);
  g_assert_cmpuint(p3->cap, ==, 4);
  g_assert_false(p3->uncapped);
  DrPlanOptions opts = {5, NULL};
  g_autoptr(DrPlan) p4 = dr_plan_build(g, &opts, &error);
  g_assert_cmpuint(p4->cap, ==, 5);
  g_assert_cmpuint(p4->streams->len, ==, 5);
  DrPlanOptions huge = {G_MAXUINT32, NULL};
  g_autoptr(DrPlan) p5 = dr_plan_build(g, &huge, &error);
  g_assert_cmpuint(p5->cap, ==, 4096);
  g_assert_cmpuint(p5->streams->len, ==, 6);
  DrPlanOptions none = {.max_streams = 2, .uncapped = TRUE};
  g_autoptr(DrPlan) p6 = dr_plan_build(g, &none, &error);
  g_assert_true(p6->uncapped);
  g_assert_cmpuint(p6->streams->len, ==, 6);
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  g_assert_no_error(error);
}

static void test_cycle_and_unsorted(void) {
  g_autoptr(DrGraph) g = new_graph("cycle");
  DrId a = add_node(g, DR_OP_NOOP, DR_PRIORITY_NORMAL, "a", 0);
  DrId b = add_node(g, DR_OP_NOOP, DR_PRIORITY_NORMAL, "b", 0);
  dr_graph_add_edge(g, a, b, DR_EDGE_RAW, DR_NONE);
  dr_graph_add_edge(g, b, a, DR_EDGE_AFTER, DR_NONE);
  g_autoptr(GError) error = NULL;
  g_assert_null(dr_plan_build(g, NULL, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "not sorted"));
  g_clear_error(&error);
  dr_graph_sort_edges(g);
  g_assert_null(dr_plan_build(g, NULL, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "cycle"));
}

static void test_empty(void) {
  g_autoptr(DrGraph) g = new_graph("empty");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->width, ==, 0);
  g_assert_cmpuint(plan->streams->len, ==, 0);
  g_assert_true(dr_plan_check(plan, &error));
  g_autoptr(GString) s = g_string_new(NULL);
  dr_plan_write_json(plan, s);
  g_assert_nonnull(strstr(s->str, "\"nodes\": []"));
}

static void test_profile(void) {
  g_autoptr(DrGraph) g = diamond();
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("planner-profile-XXXXXX.json", &path, &error);
  g_assert_cmpint(fd, >=, 0);
  close(fd);
  const char *json =
      "{\"backend\": \"host\", \"x\": [1, {\"y\": \"]}\"}], \"nodes\": [\n"
      " {\"id\": \"a\", \"op\": \"kernel\", \"stream\": 0, \"start_us\": 0, \"duration_us\": 100.5},\n"
      " {\"duration_us\": 1e3, \"id\": \"b\"}, {\"id\": \"unknown\", \"duration_us\": 7}]}";
  g_assert_true(g_file_set_contents(path, json, -1, &error));
  g_autofree double *dur = dr_profile_durations(path, g, &error);
  g_assert_no_error(error);
  DrPlanOptions opts = {0, dur};
  g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  /* a (100.5) -> b (1000) -> d (noop, 0). */
  g_assert_cmpfloat_with_epsilon(plan->critical_path_us, 1100.5, 1e-9);
  g_assert_true(g_file_set_contents(path, "{\"nodes\": [{\"id\": \"a\",}", -1, &error));
  g_assert_null(dr_profile_durations(path, g, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_clear_error(&error);
  g_unlink(path);
  g_assert_null(dr_profile_durations(path, g, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
}

/* Truncated and mutated profiles never crash the reader: each either
 * applies or fails with DR_ERROR_IO. */
static void test_profile_garbage(void) {
  g_autoptr(DrGraph) g = diamond();
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("planner-garbage-XXXXXX.json", &path, &error);
  g_assert_cmpint(fd, >=, 0);
  close(fd);
  const char *good =
      "{\"nodes\": [{\"id\": \"a\", \"duration_us\": 5}, {\"id\": \"b\\u0041\", "
      "\"x\": [[{}], \"s\\\"\"], \"duration_us\": -1e2}], \"t\": {\"u\": null}}";
  g_autoptr(GRand) r = g_rand_new_with_seed(3);
  static const char alphabet[] = "{}[]\":,\\ 0123456789.eE-+abnrtu\"";
  guint ok = 0, failed = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autoptr(GString) text = g_string_new(good);
    if (iter % 2) {
      g_string_truncate(text, (gsize)g_rand_int_range(r, 0, (gint32)text->len + 1));
    } else {
      for (guint k = 0, edits = (guint)g_rand_int_range(r, 1, 4); k < edits; k++)
        text->str[g_rand_int_range(r, 0, (gint32)text->len)] =
            alphabet[g_rand_int_range(r, 0, (gint32)sizeof alphabet - 1)];
    }
    /* No fsync per case (g_file_set_contents does one): 3000 of them took
     * 30 s on a busy disk. */
    g_assert_true(
        g_file_set_contents_full(path, text->str, (gssize)text->len, G_FILE_SET_CONTENTS_NONE, 0600, &error));
    g_autofree double *dur = dr_profile_durations(path, g, &error);
    DrPlanOptions opts = {0, dur};
    g_autoptr(DrPlan) plan = dur ? dr_plan_build(g, &opts, &error) : NULL;
    if (plan != NULL) {
      ok++;
      g_assert_no_error(error);
    } else {
      failed++;
      g_assert_error(error, DR_ERROR, DR_ERROR_IO);
      g_clear_error(&error);
    }
  }
  g_unlink(path);
  g_assert_cmpuint(ok, >, 0);
  g_assert_cmpuint(failed, >, 0);
}

static void test_json_escapes(void) {
  g_autoptr(DrGraph) g = new_graph("esc");
  DrId a = add_node(g, DR_OP_NOOP, DR_PRIORITY_NORMAL, "q\"uo\\te\n", 0);
  DrId b = add_node(g, DR_OP_NOOP, DR_PRIORITY_LOW, "tab\there", 0);
  dr_graph_add_edge(g, a, b, DR_EDGE_AFTER, DR_NONE);
  dr_graph_sort_edges(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) s = g_string_new(NULL);
  dr_plan_write_json(plan, s);
  g_assert_nonnull(strstr(s->str, "\"id\": \"q\\\"uo\\\\te\\n\""));
  g_assert_nonnull(strstr(s->str, "\"waits\": [\"q\\\"uo\\\\te\\n\"]"));
  g_assert_nonnull(strstr(s->str, "tab\\there"));
  g_assert_nonnull(strstr(s->str, "\"streams\": 2, \"width\": 1, \"events\": 1, \"edges\": 1"));
}

/* A C-API callback node (DrNode.callback != 0) keeps host_fn at its zero
 * value, print: the text and DOT labels must say callback, and a built-in
 * host node next to it keeps its function's name. */
static void test_host_callback_label(void) {
  g_autoptr(DrGraph) g = new_graph("cb");
  DrCallback cb = {NULL, NULL};
  g_array_append_val(g->callbacks, cb);
  DrNode node = {.op = DR_OP_HOST, .device = -1, .kernel = DR_NONE, .buffer = DR_NONE};
  node.id = "cb";
  node.callback = 1;
  DrId a = dr_graph_add_node(g, &node);
  node.id = "say";
  node.callback = 0;
  node.host_fn = DR_HOST_FN_PRINT;
  DrId b = dr_graph_add_node(g, &node);
  dr_graph_add_edge(g, a, b, DR_EDGE_AFTER, DR_NONE);
  dr_graph_sort_edges(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GString) text = g_string_new(NULL);
  dr_plan_write_text(plan, text);
  g_assert_nonnull(strstr(text->str, "cb (host callback)"));
  g_assert_nonnull(strstr(text->str, "say (host print)"));
  g_assert_null(strstr(text->str, "cb (host print)"));
  g_autoptr(GString) dot = g_string_new(NULL);
  dr_plan_write_dot(plan, dot);
  g_assert_nonnull(strstr(dot->str, "\"cb\\nhost callback\""));
  g_assert_nonnull(strstr(dot->str, "\"say\\nhost print\""));
}

/* Counts the non-overlapping occurrences of needle in hay. */
static guint count_substr(const char *hay, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle)) n++;
  return n;
}

/* Renders each plan's DOT with Graphviz and checks the picture itself: one
 * SVG node group per DAG node and one edge group per DOT edge. Graphviz runs
 * with HOME and XDG_CACHE_HOME in a fresh temporary directory, so fontconfig
 * has a writable cache on a brand-new machine (an empty
 * /var/cache/fontconfig inside the Bazel sandbox); what fontconfig prints on
 * stderr about its cache is not the render and is not asserted. */
static void test_dot_renders(void) {
  if (!g_file_test("/usr/bin/dot", G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("Graphviz dot is not installed");
    return;
  }
  g_autoptr(GError) error = NULL;
  g_autofree char *home = g_dir_make_tmp("planner-dot-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *cache = g_build_filename(home, ".cache", NULL);
  g_autofree char *env_home = g_strconcat("HOME=", home, NULL);
  g_autofree char *env_cache = g_strconcat("XDG_CACHE_HOME=", cache, NULL);
  char *envp[] = {env_home, env_cache, "PATH=/usr/bin:/bin", NULL};
  GraphMaker makers[] = {diamond, chunked, six_chains};
  for (guint i = 0; i < G_N_ELEMENTS(makers); i++) {
    g_autoptr(DrGraph) g = makers[i]();
    DrPlanOptions opts = {2, NULL};
    g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
    g_assert_no_error(error);
    g_autoptr(GString) dot = g_string_new(NULL);
    dr_plan_write_dot(plan, dot);
    g_autofree char *path = g_build_filename(home, "plan.dot", NULL);
    g_assert_true(g_file_set_contents(path, dot->str, -1, &error));
    g_autofree char *out = NULL, *err = NULL;
    gint status = 0;
    const char *argv[] = {"/usr/bin/dot", "-Tsvg", path, NULL};
    g_assert_true(
        g_spawn_sync(home, (char **)argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, &error)) g_printerr("dot stderr:\n%s", err);
    g_assert_no_error(error);
    /* Graphviz's own complaints about the input start "Warning:" or "Error:". */
    g_assert_null(strstr(err, "Warning:"));
    g_assert_null(strstr(err, "Error:"));
    g_assert_nonnull(strstr(out, "<svg"));
    g_assert_cmpuint(count_substr(out, "class=\"node\""), ==, dr_graph_n_nodes(g));
    g_assert_cmpuint(count_substr(out, "class=\"edge\""), ==, count_substr(dot->str, " -> "));
    g_assert_cmpuint(count_substr(out, "class=\"cluster\""), ==, dr_plan_n_streams(plan));
    g_unlink(path);
  }
  g_autofree char *fc = g_build_filename(cache, "fontconfig", NULL);
  if (g_file_test(fc, G_FILE_TEST_IS_DIR)) {
    g_autoptr(GDir) d = g_dir_open(fc, 0, NULL);
    for (const char *name; d && (name = g_dir_read_name(d));) {
      g_autofree char *f = g_build_filename(fc, name, NULL);
      g_unlink(f);
    }
    g_rmdir(fc);
  }
  g_rmdir(cache);
  g_rmdir(home);
}

/* Streams longer than 16-bit clocks hold (events.c switches to 32-bit):
 * three chains of 40,000 nodes, a_i -> b_i -> c_i every fourth i and the
 * edge a_i -> c_i that those imply. The waits are the reference's: one
 * per a_i -> b_i and b_i -> c_i, none for a_i -> c_i, also past place
 * 32767 (where a 16-bit clock would wrap and drop or add waits). */
static void test_events_long_streams(void) {
  const guint32 len = 40000;
  g_autoptr(DrGraph) g = new_graph("long");
  for (guint32 c = 0; c < 3; c++)
    for (guint32 i = 0; i < len; i++)
      add_node(g, DR_OP_KERNEL, DR_PRIORITY_NORMAL, c == 0 ? "a%u" : c == 1 ? "b%u" : "c%u", i);
  for (guint32 c = 0; c < 3; c++)
    for (guint32 i = 1; i < len; i++)
      dr_graph_add_edge(g, c * len + i - 1, c * len + i, DR_EDGE_RAW, DR_NONE);
  for (guint32 i = 0; i < len; i += 4) {
    dr_graph_add_edge(g, i, len + i, DR_EDGE_RAW, DR_NONE);
    dr_graph_add_edge(g, len + i, 2 * len + i, DR_EDGE_RAW, DR_NONE);
    dr_graph_add_edge(g, i, 2 * len + i, DR_EDGE_RAW, DR_NONE);
  }
  dr_graph_sort_edges(g);
  DrPlanOptions opts = {64, NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(plan->width, ==, 3);
  g_assert_cmpuint(plan->streams->len, ==, 3);
  for (guint32 s = 0; s < 3; s++)
    g_assert_cmpuint(g_array_index(plan->streams, DrStream, s).n_nodes, ==, len);
  g_assert_cmpuint(plan->waits->len, ==, 2 * (len / 4));
  check_waits_reference(g, plan);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  static const char *const kinds[] = {"chains", "forkjoin", "layered", "random", "program"};
  for (int k = 0; k < 5; k++) {
    g_autofree char *path = g_strdup_printf("/planner/property/%s", kinds[k]);
    g_test_add_data_func(path, GINT_TO_POINTER(k), test_random_small);
  }
  g_test_add_func("/planner/property/large-certificate", test_random_large);
  for (guint i = 0; i < G_N_ELEMENTS(goldens); i++) {
    g_autofree char *path = g_strdup_printf("/planner/golden/%s", goldens[i].name);
    g_test_add_data_func(path, &goldens[i], test_golden);
  }
  g_test_add_func("/planner/diamond", test_diamond_exact);
  g_test_add_func("/planner/events/long-streams", test_events_long_streams);
  g_test_add_func("/planner/order/interleaves", test_order_interleaves);
  g_test_add_func("/planner/cap/binds", test_cap_binds_six);
  g_test_add_func("/planner/cap/sources", test_cap_sources);
  g_test_add_func("/planner/cap/heuristic", test_cap_heuristic);
  g_test_add_func("/planner/cap/limit-wide", test_cap_limit_wide);
  g_test_add_func("/planner/errors/cycle-and-unsorted", test_cycle_and_unsorted);
  g_test_add_func("/planner/empty", test_empty);
  g_test_add_func("/planner/profile", test_profile);
  g_test_add_func("/planner/profile/garbage", test_profile_garbage);
  g_test_add_func("/planner/json/escapes", test_json_escapes);
  g_test_add_func("/planner/dot/renders", test_dot_renders);
  g_test_add_func("/planner/labels/host-callback", test_host_callback_label);
  return g_test_run();
}
