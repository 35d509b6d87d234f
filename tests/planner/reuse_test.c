/* reuse_test.c: buffer reuse (scheduler/reuse.c) on runs of several
 * devices, and the memory figures' paths that the planner's speed depends
 * on (scheduler/memory.c): what the cost pass collects for the lifetime
 * scan, and the greedy first flow. Not the bound's property tests against
 * every linear extension (memory_test.c) nor the plans across devices
 * (multi_device_test.c).
 *
 * Checked:
 *  - a chain of scratch buffers alternating between two devices groups per
 *    device: each buffer joins its own device's group, never the other's,
 *    though the other's last member is ordered before it;
 *  - on thousands of random programs over 2-3 devices (local work, peer
 *    copies) with every whole-run buffer scratch: every buffer's storage is
 *    a buffer of its own device (what the CUDA backend's check_devices
 *    insists on), uses of one storage are ordered, the per-device
 *    whole-run bytes add up to the run's, and reuse happens;
 *  - the memory figures are the same with measured durations (the cost
 *    pass then skips its model but still collects the alloc and free
 *    nodes) as without, on random programs with stream-ordered buffers. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"

#define COUNT 16

static DrId add_buffer(DrGraph *g, const char *name, gint32 device, guint64 count) {
  DrBuffer buf = {.name = name,
                  .type = DR_ELEM_F32,
                  .count = count,
                  .device = device,
                  .device_set = device >= 0,
                  .scratch = TRUE,
                  .alloc_node = DR_NONE,
                  .free_node = DR_NONE};
  return dr_graph_add_buffer(g, &buf);
}

static DrId add_node(DrGraph *g, DrOp op, DrId buffer) {
  g_autofree char *id = g_strdup_printf("n%u", g->nodes->len);
  DrNode node = {.id = id,
                 .op = op,
                 .priority = DR_PRIORITY_NORMAL,
                 .device = -1,
                 .kernel = DR_NONE,
                 .buffer = buffer,
                 .dev = -1,
                 .root = -1,
                 .peer = -1};
  DrId v = dr_graph_add_node(g, &node);
  if (op == DR_OP_ALLOC || op == DR_OP_FREE) {
    DrBuffer *b = dr_graph_buffer(g, buffer);
    DrId *first = op == DR_OP_ALLOC ? &b->alloc_node : &b->free_node;
    if (*first == DR_NONE) *first = v;
    DrAccess a = {.buffer = buffer, .mode = DR_ACCESS_WRITE, .begin = 0, .end = b->count};
    dr_graph_add_access(g, &a);
  }
  return v;
}

static void add_use(DrGraph *g, DrId buffer, DrAccessMode mode) {
  DrAccess a = {.buffer = buffer, .mode = mode, .begin = 0, .end = dr_graph_buffer(g, buffer)->count};
  dr_graph_add_access(g, &a);
}

static void run_passes(DrGraph *g) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_assert_true(dr_passes_run(g, diags));
}

static DrPlan *plan_reuse(DrGraph *g) {
  g->run.reuse = TRUE;
  g_autoptr(GError) error = NULL;
  DrPlan *plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  return plan;
}

static void two_devices(DrGraph *g) {
  g->run.devices[0] = 0;
  g->run.devices[1] = 1;
  g->run.n_devices = 2;
  g->run.device = 0;
}

/* a0 (device 0), a1 (device 1), b0 (device 0), b1 (device 1): a node
 * writes each, another reads it, and `after:` orders each reader before
 * the next buffer's writer: every use of a buffer reaches every use of
 * the later ones, so only the devices keep a1 out of a0's storage. */
static void test_per_device_chain(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  g->name = dr_graph_intern(g, "chain");
  two_devices(g);
  DrId a0 = add_buffer(g, "a0", 0, 1024), a1 = add_buffer(g, "a1", 1, 1024);
  DrId b0 = add_buffer(g, "b0", 0, 512), b1 = add_buffer(g, "b1", 1, 2048);
  DrId order[] = {a0, a1, b0, b1};
  for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
    DrId w = add_node(g, DR_OP_NOOP, DR_NONE);
    add_use(g, order[i], DR_ACCESS_WRITE);
    if (i > 0) dr_graph_add_after(g, w - 1, w, (DrLoc){"t.yaml", 1, 1});
    add_node(g, DR_OP_NOOP, DR_NONE);
    add_use(g, order[i], DR_ACCESS_READ);
  }
  run_passes(g);
  g_autoptr(DrPlan) plan = plan_reuse(g);
  g_assert_nonnull(plan->storage);
  g_assert_cmpuint(plan->storage[a0], ==, a0);
  g_assert_cmpuint(plan->storage[a1], ==, a1);
  g_assert_cmpuint(plan->storage[b0], ==, a0);
  g_assert_cmpuint(plan->storage[b1], ==, a1);
  g_assert_cmpuint(plan->n_shared, ==, 2);
  g_assert_cmpuint(plan->storage_bytes[a0], ==, 1024 * 4);
  g_assert_cmpuint(plan->storage_bytes[a1], ==, 2048 * 4);
  /* b0 fits in a0's storage (saves its own 2 KiB); b1 grows a1's to its
   * 8 KiB (saves a1's 4 KiB). */
  g_assert_cmpuint(plan->reuse_saved_bytes, ==, 512 * 4 + 1024 * 4);
  /* The per-device figures see each group on its own device. */
  g_assert_cmpuint(plan->device_memory->len, ==, 2);
  const DrPlanDeviceMemory *d0 = &g_array_index(plan->device_memory, DrPlanDeviceMemory, 0);
  const DrPlanDeviceMemory *d1 = &g_array_index(plan->device_memory, DrPlanDeviceMemory, 1);
  g_assert_cmpuint(d0->whole_run_bytes, ==, 1024 * 4);
  g_assert_cmpuint(d1->whole_run_bytes, ==, 2048 * 4);
}

/* reach[u] bit v: v reachable from u (n <= 64). */
static void closure(const DrGraph *g, guint64 *reach) {
  guint32 n = g->nodes->len;
  g_assert_cmpuint(n, <=, 64);
  memset(reach, 0, sizeof(guint64) * MAX(n, 1));
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    for (guint32 e = 0; e < g->edges->len; e++) {
      const DrEdge *ed = dr_graph_edge(g, e);
      guint64 next = reach[ed->from] | reach[ed->to] | (G_GUINT64_CONSTANT(1) << ed->to);
      if (next != reach[ed->from]) reach[ed->from] = next, changed = TRUE;
    }
  }
}

static gboolean uses(const DrGraph *g, DrId v, DrId b) {
  const DrNode *n = dr_graph_node(g, v);
  for (guint32 k = n->access_first; k < n->access_first + n->access_count; k++)
    if (dr_graph_access(g, k)->buffer == b) return TRUE;
  return FALSE;
}

/* A random program over nd devices: 3 scratch buffers on each, up to 24
 * nodes of local work (noops reading and writing buffers of one device)
 * and peer copies. */
static DrGraph *random_devices_program(GRand *r, guint32 nd) {
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, "devices");
  for (guint32 d = 0; d < nd; d++) g->run.devices[d] = (gint32)d;
  g->run.n_devices = nd;
  g->run.device = 0;
  for (guint32 d = 0; d < nd; d++)
    for (guint32 b = 0; b < 3; b++) {
      g_autofree char *name = g_strdup_printf("s%u_%u", d, b);
      /* Device 0's buffers sometimes name no device: the run's device. */
      add_buffer(g, name, d == 0 && g_rand_boolean(r) ? -1 : (gint32)d,
                 (guint64)g_rand_int_range(r, 1, 3000));
    }
  guint32 n = (guint32)g_rand_int_range(r, 2, 25);
  for (guint32 v = 0; v < n; v++) {
    guint32 d = (guint32)g_rand_int_range(r, 0, (gint32)nd);
    DrId mine = d * 3 + (DrId)g_rand_int_range(r, 0, 3);
    if (g_rand_int_range(r, 0, 4) == 0) { /* a peer copy */
      guint32 e = (guint32)g_rand_int_range(r, 0, (gint32)nd);
      DrId other = e * 3 + (DrId)g_rand_int_range(r, 0, 3);
      if (other == mine) other = e * 3 + (other % 3 + 1) % 3;
      add_node(g, DR_OP_COPY, DR_NONE);
      guint64 len = MIN(dr_graph_buffer(g, mine)->count, dr_graph_buffer(g, other)->count);
      DrAccess src = {.buffer = mine, .mode = DR_ACCESS_READ, .begin = 0, .end = len};
      DrAccess dst = {.buffer = other, .mode = DR_ACCESS_WRITE, .begin = 0, .end = len};
      dr_graph_add_access(g, &src);
      dr_graph_add_access(g, &dst);
      continue;
    }
    add_node(g, DR_OP_NOOP, DR_NONE);
    add_use(g, mine, g_rand_boolean(r) ? DR_ACCESS_READ : DR_ACCESS_WRITE);
    if (g_rand_boolean(r)) add_use(g, d * 3 + (mine % 3 + 1) % 3, DR_ACCESS_READ);
  }
  run_passes(g);
  return g;
}

static void test_per_device_property(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(1616);
  guint shared = 0, shared_across_possible = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autoptr(DrGraph) g = random_devices_program(r, 2 + iter % 2);
    g_autoptr(DrPlan) plan = plan_reuse(g);
    if (plan->storage == NULL) continue;
    guint64 reach[64];
    closure(g, reach);
    guint32 n = g->nodes->len;
    for (DrId b = 0; b < g->buffers->len; b++) {
      DrId s = plan->storage[b];
      g_assert_cmpint(dr_graph_buffer_device(g, b), ==, dr_graph_buffer_device(g, s));
      if (s == b) continue;
      shared++;
      /* Ordered: every use of one reaches every use of the other. */
      gboolean sb = TRUE, bs = TRUE;
      for (DrId u = 0; u < n; u++)
        for (DrId v = 0; v < n; v++) {
          if (uses(g, u, s) && uses(g, v, b) && !((reach[u] >> v) & 1)) sb = FALSE;
          if (uses(g, u, b) && uses(g, v, s) && !((reach[u] >> v) & 1)) bs = FALSE;
        }
      g_assert_true(sb || bs);
    }
    /* Would a device-blind grouping have found a pair across devices?
     * (Some programs must offer one, or the first check proves little.) */
    for (DrId a = 0; a < g->buffers->len; a++)
      for (DrId b = 0; b < g->buffers->len; b++) {
        if (dr_graph_buffer_device(g, a) == dr_graph_buffer_device(g, b)) continue;
        gboolean ab = FALSE, any_a = FALSE, any_b = FALSE;
        ab = TRUE;
        for (DrId u = 0; u < n; u++)
          for (DrId v = 0; v < n; v++) {
            any_a |= uses(g, u, a);
            any_b |= uses(g, v, b);
            if (uses(g, u, a) && uses(g, v, b) && !((reach[u] >> v) & 1)) ab = FALSE;
          }
        shared_across_possible += ab && any_a && any_b;
      }
    /* The per-device whole-run bytes add up to the run's (after reuse). */
    guint64 sum = 0;
    for (guint i = 0; i < plan->device_memory->len; i++)
      sum += g_array_index(plan->device_memory, DrPlanDeviceMemory, i).whole_run_bytes;
    g_assert_cmpuint(sum, ==, plan->whole_run_bytes);
  }
  g_test_message("%u buffers in another's storage; %u ordered pairs across devices", shared,
                 shared_across_possible);
  g_assert_cmpuint(shared, >, 150);
  g_assert_cmpuint(shared_across_possible, >, 50);
}

/* A random program with stream-ordered buffers of several lifetimes. */
static DrGraph *random_lifetimes_program(GRand *r) {
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, "lifetimes");
  guint32 nb = (guint32)g_rand_int_range(r, 1, 5);
  for (guint32 b = 0; b < nb; b++) {
    g_autofree char *name = g_strdup_printf("t%u", b);
    add_buffer(g, name, -1, (guint64)g_rand_int_range(r, 1, 5000));
    dr_graph_buffer(g, b)->scratch = FALSE;
  }
  DrBuffer state = {
      .name = "state", .type = DR_ELEM_F32, .count = COUNT, .alloc_node = DR_NONE, .free_node = DR_NONE};
  DrId st = dr_graph_add_buffer(g, &state);
  gboolean live[4] = {FALSE};
  guint32 n = (guint32)g_rand_int_range(r, 2, 30);
  for (guint32 v = 0; v < n; v++) {
    DrId b = (DrId)g_rand_int_range(r, 0, (gint32)nb);
    if (g_rand_int_range(r, 0, 3) == 0) {
      add_node(g, live[b] ? DR_OP_FREE : DR_OP_ALLOC, b);
      live[b] = !live[b];
      continue;
    }
    add_node(g, DR_OP_NOOP, DR_NONE);
    add_use(g, st, g_rand_boolean(r) ? DR_ACCESS_READ : DR_ACCESS_WRITE);
    if (live[b]) add_use(g, b, g_rand_boolean(r) ? DR_ACCESS_READ : DR_ACCESS_WRITE);
  }
  for (guint32 b = 0; b < nb; b++)
    if (live[b]) add_node(g, DR_OP_FREE, b);
  run_passes(g);
  return g;
}

static void test_memory_profiled(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(1617);
  guint with_lifetimes = 0;
  for (guint iter = 0; iter < 2000; iter++) {
    g_autoptr(DrGraph) g = random_lifetimes_program(r);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plain = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    g_autofree double *dur = g_new(double, g->nodes->len);
    for (guint32 v = 0; v < g->nodes->len; v++)
      dur[v] = g_rand_boolean(r) ? NAN : g_rand_double_range(r, 1, 50);
    DrPlanOptions o = {.durations = dur};
    g_autoptr(DrPlan) profiled = dr_plan_build(g, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(profiled->n_lifetimes, ==, plain->n_lifetimes);
    g_assert_cmpuint(profiled->peak_serial_bytes, ==, plain->peak_serial_bytes);
    g_assert_cmpuint(profiled->peak_bound_bytes, ==, plain->peak_bound_bytes);
    g_assert_cmpuint(profiled->peak_bound->len, ==, plain->peak_bound->len);
    with_lifetimes += plain->n_lifetimes > 0;
  }
  g_assert_cmpuint(with_lifetimes, >, 1000);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/reuse/per-device-chain", test_per_device_chain);
  g_test_add_func("/planner/reuse/per-device-property", test_per_device_property);
  g_test_add_func("/planner/memory/profiled", test_memory_profiled);
  return g_test_run();
}
