/* sizes_test.c: the builder's overflow-checked sizes (ir/build.c): a
 * buffer's count times its element size at the 2^61 boundaries of every
 * element type, and copies whose byte lengths would wrap 64 bits. */
#include <glib.h>
#include <string.h>

#include "ir/build.h"
#include "ir/diag.h"
#include "ir/graph.h"

#define MOST (G_GUINT64_CONSTANT(1) << 61)

/* Whether dr_build_buffer_count_ok accepts `count` elements of `type`;
 * the message of a refusal in *msg (or NULL). */
static gboolean count_ok(DrElemType type, guint64 count, char **msg) {
  g_autoptr(DrGraph) g = dr_graph_new();
  g_autoptr(DrDiags) d = dr_diags_new(0);
  DrBuild b;
  dr_build_init(&b, g, d);
  gboolean ok = dr_build_buffer_count_ok(&b, "x", type, count, "count", (DrLoc){"t.yaml", 3, 5});
  dr_build_clear(&b);
  g_assert_cmpuint(dr_diags_n_errors(d), ==, ok ? 0 : 1);
  *msg = ok ? NULL : g_strdup(dr_diags_get(d, 0)->message);
  return ok;
}

static void test_buffer_bytes(void) {
  static const DrElemType types[] = {DR_ELEM_U8,   DR_ELEM_I32, DR_ELEM_I64, DR_ELEM_F16,
                                     DR_ELEM_BF16, DR_ELEM_F32, DR_ELEM_F64};
  for (guint i = 0; i < G_N_ELEMENTS(types); i++) {
    guint64 es = dr_elem_size(types[i]);
    char *msg = NULL;
    /* The largest count that fits 2^61 bytes, and one more. */
    g_assert_true(count_ok(types[i], MOST / es, &msg));
    gboolean over = count_ok(types[i], MOST / es + 1, &msg);
    g_assert_false(over);
    g_assert_nonnull(msg);
    g_free(msg);
    g_assert_false(count_ok(types[i], 0, &msg));
    g_assert_cmpstr(msg, ==, "buffer 'x', key 'count': must be between 1 and 2^61");
    g_free(msg);
    g_assert_false(count_ok(types[i], G_MAXUINT64, &msg));
    g_free(msg);
  }
  /* 2^61 f64 elements are 2^64 bytes: the product wraps to 0 unchecked. */
  char *msg = NULL;
  g_assert_false(count_ok(DR_ELEM_F64, MOST, &msg));
  g_assert_cmpstr(msg, ==,
                  "buffer 'x', key 'count': 2305843009213693952 f64 elements of 8 bytes are more than 2^61 "
                  "bytes, the most a buffer holds");
  g_free(msg);
  /* 2^62 + 1 f32 elements: (2^64 + 4) wraps to 4 bytes unchecked. */
  g_assert_false(count_ok(DR_ELEM_F32, (G_GUINT64_CONSTANT(1) << 62) + 1, &msg));
  g_free(msg);
  g_assert_true(count_ok(DR_ELEM_U8, MOST, &msg));
}

/* A copy whose source would wrap to the destination's byte count is
 * refused (buffers added to the graph directly, past the builder's count
 * check, as a caller that skipped it would). */
static void test_copy_wrap(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  g_autoptr(DrDiags) d = dr_diags_new(0);
  DrBuffer big = {.name = "big", .type = DR_ELEM_F64, .count = (G_GUINT64_CONSTANT(1) << 61) + 1};
  DrBuffer small = {.name = "small", .type = DR_ELEM_U8, .count = 8};
  g_assert_cmpuint(dr_graph_add_buffer(g, &big), ==, 0);
  g_assert_cmpuint(dr_graph_add_buffer(g, &small), ==, 1);
  DrBuild b;
  dr_build_init(&b, g, d);
  g_assert_true(dr_build_node_begin(&b, "c", DR_OP_COPY, (DrLoc){"t.yaml", 9, 3}, FALSE));
  DrAccess src, dst;
  /* (2^61 + 1) * 8 = 2^64 + 8, which wraps to 8: small's byte count. */
  DrBuildSlice s = {.buffer = "big", .begin = 0, .end = DR_BUILD_SLICE_END};
  DrBuildSlice t = {.buffer = "small", .begin = 0, .end = DR_BUILD_SLICE_END};
  g_assert_true(dr_build_resolve(&b, "key 'src'", &s, (DrLoc){"t.yaml", 9, 10}, &src));
  g_assert_true(dr_build_resolve(&b, "key 'dst'", &t, (DrLoc){"t.yaml", 9, 20}, &dst));
  g_assert_false(dr_build_copy(&b, &src, &dst));
  g_assert_cmpuint(dr_diags_n_errors(d), ==, 1);
  const DrDiag *e = dr_diags_get(d, 0);
  g_assert_cmpuint(e->loc.col, ==, 20);
  g_assert_cmpstr(e->message, ==,
                  "node 'c', key 'dst': copy lengths differ: src is 2305843009213693953 f64 elements, 2^64 "
                  "bytes or more");
  /* Equal lengths still pass. */
  DrBuildSlice s8 = {.buffer = "big", .begin = 4, .end = 5};
  g_assert_true(dr_build_resolve(&b, "key 'src'", &s8, (DrLoc){"t.yaml", 9, 10}, &src));
  g_assert_true(dr_build_copy(&b, &src, &dst));
  dr_build_clear(&b);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ir/sizes/buffer-bytes", test_buffer_bytes);
  g_test_add_func("/ir/sizes/copy-wrap", test_copy_wrap);
  return g_test_run();
}
