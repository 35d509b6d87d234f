/* ir_test.c: unit tests of the IR itself (ir/): building, lookups, edge
 * sorting, the invariant checker, the dump format, diagnostics formatting
 * and the serial plan with its checker. Passes are tested elsewhere. */
#include <glib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/graph.h"
#include "ir/plan.h"

static DrId add_buffer(DrGraph *g, const char *name, guint64 count, DrWhere where) {
  DrBuffer b = {.name = name, .type = DR_ELEM_F32, .count = count, .where = where};
  return dr_graph_add_buffer(g, &b);
}

static DrId add_node(DrGraph *g, const char *id, DrOp op) {
  DrNode n = {.op = op,
              .id = id,
              .priority = DR_PRIORITY_NORMAL,
              .device = -1,
              .kernel = DR_NONE,
              .buffer = DR_NONE,
              .loc = {"t.yaml", 1, 1}};
  return dr_graph_add_node(g, &n);
}

static void test_tables(void) {
  DrElemType t;
  g_assert_true(dr_elem_from_name("bf16", &t));
  g_assert_cmpint(t, ==, DR_ELEM_BF16);
  g_assert_cmpuint(dr_elem_size(t), ==, 2);
  g_assert_false(dr_elem_from_name("f8", &t));
  DrOp op;
  g_assert_true(dr_op_from_name("memset", &op));
  g_assert_cmpstr(dr_op_name(op), ==, "memset");
  DrPriority p;
  g_assert_true(dr_priority_from_name("high", &p));
  g_assert_cmpint(p, >, DR_PRIORITY_NORMAL);
  g_assert_true(dr_access_reads(DR_ACCESS_READ_WRITE));
  g_assert_true(dr_access_writes(DR_ACCESS_READ_WRITE));
  g_assert_false(dr_access_writes(DR_ACCESS_READ));
  guint32 n;
  const DrParam *params = dr_host_fn_params(DR_HOST_FN_CHECKSUM, &n);
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpstr(params[0].name, ==, "buffer");
}

static void test_build_and_lookup(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  DrId x = add_buffer(g, "x", 16, DR_WHERE_DEVICE);
  g_assert_cmpuint(x, ==, 0);
  g_assert_cmpuint(add_buffer(g, "x", 4, DR_WHERE_HOST), ==, DR_NONE);
  DrId a = add_node(g, "a", DR_OP_NOOP);
  DrAccess acc = {.buffer = x, .mode = DR_ACCESS_WRITE, .begin = 0, .end = 8};
  dr_graph_add_access(g, &acc);
  DrId b = add_node(g, "b", DR_OP_NOOP);
  acc.mode = DR_ACCESS_READ;
  dr_graph_add_access(g, &acc);
  g_assert_cmpuint(add_node(g, "a", DR_OP_NOOP), ==, DR_NONE);
  g_assert_cmpuint(dr_graph_find_node(g, "b"), ==, b);
  g_assert_cmpuint(dr_graph_find_node(g, "zz"), ==, DR_NONE);
  g_assert_cmpuint(dr_graph_node(g, b)->access_first, ==, 1);
  dr_graph_add_edge(g, a, b, DR_EDGE_AFTER, DR_NONE);
  dr_graph_add_edge(g, a, b, DR_EDGE_RAW, x);
  dr_graph_sort_edges(g);
  g_assert_cmpuint(g->edges->len, ==, 1);
  g_assert_cmpint(dr_graph_edge(g, 0)->kind, ==, DR_EDGE_RAW);
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_graph_check(g, &error));
  g_assert_no_error(error);
}

/* dr_graph_sort_edges against a plain qsort + dedupe on random edge lists,
 * grouped and scattered. */
static void test_sort_edges_random(void) {
  GRand *rng = g_rand_new_with_seed(7);
  for (int round = 0; round < 200; round++) {
    g_autoptr(DrGraph) g = dr_graph_new();
    guint n = 2 + g_rand_int_range(rng, 0, 50);
    for (guint i = 0; i < n; i++) {
      g_autofree char *id = g_strdup_printf("n%u", i);
      add_node(g, id, DR_OP_NOOP);
    }
    guint m = g_rand_int_range(rng, 0, 400);
    gboolean grouped = round % 2 == 0;
    for (guint i = 0; i < m; i++) {
      DrId to = grouped ? (DrId)(i * n / MAX(m, 1)) : (DrId)g_rand_int_range(rng, 0, n);
      DrId from = g_rand_int_range(rng, 0, n);
      dr_graph_add_edge(g, from, to, (DrEdgeKind)g_rand_int_range(rng, 0, 4), DR_NONE);
    }
    g_autoptr(GArray) want = g_array_copy(g->edges);
    dr_graph_sort_edges(g);
    /* Reference: full sort by (to, from, kind), keep the first of each pair. */
    for (guint i = 1; i < want->len; i++)
      for (guint j = i; j > 0; j--) {
        DrEdge *a = &g_array_index(want, DrEdge, j - 1), *b = &g_array_index(want, DrEdge, j);
        gboolean gt = a->to != b->to       ? a->to > b->to
                      : a->from != b->from ? a->from > b->from
                                           : a->kind > b->kind;
        if (!gt) break;
        DrEdge t = *a;
        *a = *b;
        *b = t;
      }
    guint k = 0;
    for (guint i = 0; i < want->len; i++) {
      DrEdge *e = &g_array_index(want, DrEdge, i);
      if (k > 0 && g_array_index(want, DrEdge, k - 1).from == e->from &&
          g_array_index(want, DrEdge, k - 1).to == e->to)
        continue;
      g_array_index(want, DrEdge, k++) = *e;
    }
    g_assert_cmpuint(g->edges->len, ==, k);
    for (guint i = 0; i < k; i++) {
      g_assert_cmpuint(dr_graph_edge(g, i)->from, ==, g_array_index(want, DrEdge, i).from);
      g_assert_cmpuint(dr_graph_edge(g, i)->to, ==, g_array_index(want, DrEdge, i).to);
      g_assert_cmpint(dr_graph_edge(g, i)->kind, ==, g_array_index(want, DrEdge, i).kind);
    }
  }
  g_rand_free(rng);
}

static void test_check_catches(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  DrId x = add_buffer(g, "x", 4, DR_WHERE_DEVICE);
  add_node(g, "a", DR_OP_NOOP);
  DrAccess acc = {.buffer = x, .mode = DR_ACCESS_WRITE, .begin = 0, .end = 5};
  dr_graph_add_access(g, &acc);
  g_autoptr(GError) error = NULL;
  g_assert_false(dr_graph_check(g, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "I2"));

  g_autoptr(DrGraph) h = dr_graph_new();
  add_node(h, "a", DR_OP_NOOP);
  add_node(h, "b", DR_OP_NOOP);
  dr_graph_add_edge(h, 1, 0, DR_EDGE_RAW, DR_NONE);
  g_autoptr(GError) error2 = NULL;
  g_assert_false(dr_graph_check(h, &error2));
  g_assert_nonnull(strstr(error2->message, "I4"));
}

static void test_dump(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  DrId x = add_buffer(g, "x", 16, DR_WHERE_HOST);
  add_node(g, "w", DR_OP_NOOP);
  DrAccess acc = {.buffer = x, .mode = DR_ACCESS_WRITE, .begin = 2, .end = 6};
  dr_graph_add_access(g, &acc);
  add_node(g, "r", DR_OP_NOOP);
  acc.mode = DR_ACCESS_READ;
  dr_graph_add_access(g, &acc);
  dr_graph_add_edge(g, 0, 1, DR_EDGE_RAW, x);
  g_autoptr(GString) out = g_string_new(NULL);
  dr_graph_dump(g, out);
  g_assert_cmpstr(out->str, ==,
                  "pipeline pipeline\n"
                  "run mode=auto iterations=10 warmup=2 max_streams=8(default) device=0\n"
                  "buffer x f32[16] host\n"
                  "node w noop\n"
                  "  access write x[2:6]\n"
                  "node r noop\n"
                  "  access read x[2:6]\n"
                  "edge w -> r raw x\n");
}

static void test_diags(void) {
  g_autoptr(DrDiags) d = dr_diags_new(2);
  g_autoptr(GError) none = NULL;
  g_assert_true(dr_diags_to_error(d, &none));
  dr_diags_error(d, (DrLoc){"p.yaml", 3, 7}, "node '%s': bad", "n1");
  dr_diags_note(d, (DrLoc){"p.yaml", 1, 1}, "see here");
  dr_diags_error(d, (DrLoc){"p.yaml", 4, 1}, "second");
  g_assert_true(dr_diags_full(d));
  dr_diags_error(d, DR_LOC_NONE, "third, dropped");
  dr_diags_note(d, DR_LOC_NONE, "dropped note");
  g_assert_cmpuint(dr_diags_n_errors(d), ==, 3);
  g_assert_cmpuint(dr_diags_len(d), ==, 3);
  g_autofree char *first = dr_diag_format(dr_diags_get(d, 0));
  g_assert_cmpstr(first, ==, "p.yaml:3:7: error: node 'n1': bad");
  g_autoptr(GError) error = NULL;
  g_assert_false(dr_diags_to_error(d, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "p.yaml:3:7: error: node 'n1': bad\n"
                  "p.yaml:1:1: note: see here\n"
                  "p.yaml:4:1: error: second\n"
                  "error: too many errors (3), showing the first 2");
  g_assert_cmpint(dr_error_exit_code(error), ==, 65);
  g_autoptr(GError) e2 = NULL;
  dr_set_error_at(&e2, DR_ERROR_IO, (DrLoc){"q.yaml", 0, 0}, "cannot read");
  g_assert_cmpstr(e2->message, ==, "q.yaml: error: cannot read");
  g_assert_cmpint(dr_error_exit_code(e2), ==, 66);
}

static void test_serial_plan(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  for (int i = 0; i < 5; i++) {
    g_autofree char *id = g_strdup_printf("n%d", i);
    add_node(g, id, DR_OP_NOOP);
  }
  dr_graph_add_edge(g, 0, 3, DR_EDGE_AFTER, DR_NONE);
  dr_graph_add_edge(g, 1, 4, DR_EDGE_AFTER, DR_NONE);
  dr_graph_sort_edges(g);
  g_autoptr(DrPlan) p = dr_plan_new_serial(g);
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_plan_check(p, &error));
  g_assert_cmpuint(dr_plan_n_streams(p), ==, 1);
}

/* A two-stream plan whose only cross-stream edge lacks its wait must fail
 * P2, and pass once the wait is added. */
static void test_plan_check_missing_wait(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  add_node(g, "a", DR_OP_NOOP);
  add_node(g, "b", DR_OP_NOOP);
  dr_graph_add_edge(g, 0, 1, DR_EDGE_AFTER, DR_NONE);
  g_autoptr(DrPlan) p = dr_plan_new(g);
  DrStream s = {DR_PRIORITY_NORMAL, 1};
  g_array_append_val(p->streams, s);
  g_array_append_val(p->streams, s);
  DrPlanStep s0 = {0, 0, 0, 0}, s1 = {1, 1, 0, 0};
  g_array_append_val(p->steps, s0);
  g_array_append_val(p->steps, s1);
  p->node_stream[1] = 1;
  p->node_step[1] = 1;
  g_autoptr(GError) error = NULL;
  g_assert_false(dr_plan_check(p, &error));
  g_assert_nonnull(strstr(error->message, "P2"));
  DrId w = 0;
  g_array_append_val(p->waits, w);
  dr_plan_step(p, 1)->wait_count = 1;
  p->needs_event[0] = TRUE;
  g_clear_error(&error);
  g_assert_true(dr_plan_check(p, &error));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ir/tables", test_tables);
  g_test_add_func("/ir/graph/build-and-lookup", test_build_and_lookup);
  g_test_add_func("/ir/graph/check-catches", test_check_catches);
  g_test_add_func("/ir/graph/sort-edges-random", test_sort_edges_random);
  g_test_add_func("/ir/graph/dump", test_dump);
  g_test_add_func("/ir/diags", test_diags);
  g_test_add_func("/ir/plan/serial", test_serial_plan);
  g_test_add_func("/ir/plan/check-missing-wait", test_plan_check_missing_wait);
  return g_test_run();
}
