/* multi_device_test.c: the host backend's model of several devices in one
 * process (docs/multi-gpu.md): each device's buffers are separate
 * allocations, a peer copy copies, a collective is computed in-process.
 * Checked: the collectives' results against values worked out by hand; the
 * example graphs/multi_gpu_overlap.yaml under --verify with random delays;
 * and, for every wait of its plan that crosses devices (a device's stream
 * and the communication stream, or two devices), the plan with that one
 * wait deleted fails --verify on every run when the waited-on node is
 * held back: the cross-device waits all carry data, and the verifier sees
 * a dropped one. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "backends/run.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/support/plan_edit.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DR_UNDER_TSAN 1
#endif
#endif

static DrRunOptions host_opts(const DrGraph *g, guint32 iterations) {
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = DR_BACKEND_HOST;
  o.iterations = iterations;
  o.warmup = 0;
  return o;
}

static DrGraph *load(const char *path) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  return g;
}

static DrGraph *load_text(const char *yaml) {
  g_autofree char *dir = g_dir_make_tmp("drmd-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "p.yaml", NULL);
  g_assert_true(g_file_set_contents(path, yaml, -1, NULL));
  DrGraph *g = load(path);
  g_remove(path);
  g_rmdir(dir);
  return g;
}

/* Every collective of one process on two devices, against hand values:
 * a = iota on device 0, iota + 10 on device 1 (by an add with c), each of
 * 4 elements; the results land in host buffers. */
static void test_collectives(void) {
  g_autoptr(DrGraph) g = load_text(
      "dagrun: 1\n"
      "run: {devices: [0, 1], iterations: 1, warmup: 0}\n"
      "buffers:\n"
      "  a0: {type: f32, count: 4, init: iota}\n"
      "  i1: {type: f32, count: 4, init: iota, device: 1}\n"
      "  ten: {type: f32, count: 4, device: 1}\n"
      "  a1: {type: f32, count: 4, device: 1}\n"
      "  s0: {type: f32, count: 4}\n"
      "  s1: {type: f32, count: 4, device: 1}\n"
      "  g0: {type: f32, count: 8}\n"
      "  g1: {type: f32, count: 8, device: 1}\n"
      "  r0: {type: f32, count: 4}\n"
      "  r1: {type: f32, count: 4, device: 1}\n"
      "  t0: {type: f32, count: 4}\n"
      "  t1: {type: f32, count: 4, device: 1}\n"
      "  b0: {type: f32, count: 4}\n"
      "  b1: {type: f32, count: 4, device: 1}\n"
      "  h: {type: f32, count: 38, where: host}\n"
      "nodes:\n"
      "  fill: {op: kernel, kernel: fill_f32, args: {y: ten, value: 10.0}}\n"
      "  mk1: {op: kernel, kernel: add_f32, args: {a: i1, b: ten, y: a1}}\n"
      "  sum: {op: allreduce, reduce: sum, src: [a0, a1], dst: [s0, s1]}\n"
      "  gat: {op: allgather, src: [a1, a0], dst: [g1, g0]}\n"
      "  rs: {op: reducescatter, reduce: max, src: [g0, g1], dst: [r0, r1]}\n"
      "  a2a: {op: alltoall, src: [a0, a1], dst: [t0, t1]}\n"
      "  bc: {op: broadcast, root: 1, src: [a0, a1], dst: [b0, b1]}\n"
      "  h_s1: {op: copy, src: s1, dst: \"h[0:4]\"}\n"
      "  h_g0: {op: copy, src: g0, dst: \"h[4:12]\"}\n"
      "  h_r0: {op: copy, src: r0, dst: \"h[12:16]\"}\n"
      "  h_r1: {op: copy, src: r1, dst: \"h[16:20]\"}\n"
      "  h_t0: {op: copy, src: t0, dst: \"h[20:24]\"}\n"
      "  h_t1: {op: copy, src: t1, dst: \"h[24:28]\"}\n"
      "  h_b0: {op: copy, src: b0, dst: \"h[28:32]\"}\n"
      "  avg: {op: allreduce, reduce: avg, buffers: [a0, a1]}\n"
      "  h_a0: {op: copy, src: a0, dst: \"h[32:36]\"}\n"
      "  peer: {op: copy, src: \"a1[0:2]\", dst: \"t0[0:2]\"}\n"
      "  h_p: {op: copy, src: \"t0[0:2]\", dst: \"h[36:38]\"}\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_dir_make_tmp("drmd-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "h.bin", NULL);
  dr_graph_buffer(g, dr_graph_find_buffer(g, "h"))->save_path = dr_graph_intern(g, path);
  DrRunOptions o = host_opts(g, 1);
  o.verify = TRUE;
  o.delay_seed = 5;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  gsize len = 0;
  g_autofree char *bytes = NULL;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  g_assert_cmpuint(len, ==, 38 * sizeof(float));
  const float *h = (const float *)bytes;
  /* a0 = 0 1 2 3, a1 = 10 11 12 13 */
  const float want[38] = {
      10, 12, 14, 16,                 /* allreduce sum, on device 1 */
      0,  1,  2,  3,  10, 11, 12, 13, /* allgather on device 0: rank 0's src first */
      0,  1,  2,  3,                  /* reducescatter max: rank 0 gets block 0 */
      10, 11, 12, 13,                 /* rank 1 block 1 */
      0,  1,  10, 11,                 /* alltoall: rank 0 gets block 0 of each rank */
      2,  3,  12, 13,                 /* rank 1 block 1 of each */
      10, 11, 12, 13,                 /* broadcast from rank 1, on device 0 */
      5,  6,  7,  8,                  /* allreduce avg in place */
      5,  6,                          /* the peer copy 1 -> 0 reads a1 after the avg */
  };                                  /* the peer copy reads a1 after the avg */
  for (guint i = 0; i < 38; i++) g_assert_cmpfloat(h[i], ==, want[i]);
  g_remove(path);
  g_rmdir(dir);
}

static void test_overlap_example(void) {
  if (!g_file_test("graphs/multi_gpu_overlap.yaml", G_FILE_TEST_EXISTS)) {
    g_test_skip("no graphs/ directory here");
    return;
  }
  g_autoptr(DrGraph) g = load("graphs/multi_gpu_overlap.yaml");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  /* The four kinds of work on their own streams: a comm stream, and
   * streams on both devices. */
  guint comm = 0, dev0 = 0, dev1 = 0;
  for (guint32 s = 0; s < plan->streams->len; s++) {
    const DrStream *st = &g_array_index(plan->streams, DrStream, s);
    comm += st->comm;
    dev0 += !st->comm && st->device == 0;
    dev1 += !st->comm && st->device == 1;
  }
  g_assert_cmpuint(comm, ==, 1);
  g_assert_cmpuint(dev0, >=, 2);
  g_assert_cmpuint(dev1, >=, 2);
  for (guint64 seed = 1; seed <= 3; seed++) {
    DrRunOptions o = host_opts(g, 2);
    o.verify = TRUE;
    o.delay_seed = seed;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  }
}

static void test_dropped_cross_device_wait(void) {
#ifdef DR_UNDER_TSAN
  g_test_skip("the broken plans race on purpose; ThreadSanitizer would report it");
  return;
#endif
  if (!g_file_test("graphs/multi_gpu_overlap.yaml", G_FILE_TEST_EXISTS)) {
    g_test_skip("no graphs/ directory here");
    return;
  }
  g_autoptr(DrGraph) g = load("graphs/multi_gpu_overlap.yaml");
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  guint cross = 0;
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *s = dr_plan_step(plan, i);
    for (guint32 w = s->wait_first; w < s->wait_first + s->wait_count; w++) {
      DrId u = dr_plan_wait(plan, w);
      gint32 du = g_array_index(plan->streams, DrStream, plan->node_stream[u]).device;
      gint32 dv = g_array_index(plan->streams, DrStream, s->stream).device;
      if (du == dv) continue;
      cross++;
      g_autoptr(DrPlan) broken = dr_test_plan_without_wait(plan, w);
      /* The waited-on node alone is held back, long enough for the node
       * that no longer waits for it to run first on every run: no draw of
       * random delays decides whether the drop is seen. Two runs, so one
       * slow start of the waiting side is not enough to hide it. */
      guint caught = 0;
      for (guint run = 0; run < 2; run++) {
        DrRunOptions o = host_opts(g, 1);
        o.verify = TRUE;
        o.delay_node_id = dr_graph_node(g, u)->id;
        o.delay_max_us = 100000;
        g_autoptr(DrReport) r = dr_run(broken, &o, &error);
        g_assert_no_error(error);
        caught += r->verified == DR_VERIFIED_FAIL;
      }
      g_test_message("wait of '%s' on '%s' (device %d -> %d): caught %u of 2", dr_graph_node(g, s->node)->id,
                     dr_graph_node(g, u)->id, du, dv, caught);
      g_assert_cmpuint(caught, ==, 2);
    }
  }
  g_assert_cmpuint(cross, >=, 4);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/backends/multi-device/collectives", test_collectives);
  g_test_add_func("/backends/multi-device/overlap-example", test_overlap_example);
  g_test_add_func("/backends/multi-device/dropped-cross-device-wait", test_dropped_cross_device_wait);
  return g_test_run();
}
