/* multi_device_test.c: property tests of plans across devices
 * (docs/multi-gpu.md), on thousands of random programs over 1 to 4
 * devices, against slow exact references: local nodes, peer copies, host
 * nodes and collectives over every device read and write slices of
 * buffers that live on devices; the devices and hazard passes make the
 * edges, the planner the plan. Checked per plan: P1-P4 (dr_plan_check,
 * which also checks each node's stream is on its device); each
 * (device, priority) class uncapped gets exactly its width in streams (by
 * bipartite matching on the closure); each communication class exactly
 * one stream, holding only collectives; a stream is a chain of the DAG
 * unless it is a communication stream; the per-device cap holds; and no
 * wait is redundant, across devices too: dropping any one wait breaks P2.
 * The slow references (closure, width) and the plan with one wait
 * dropped are planner_test.c's too: tests/support's dag_reference.h and
 * plan_edit.h. */
#include <glib.h>
#include <string.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"
#include "tests/support/dag_reference.h"
#include "tests/support/plan_edit.h"

#define N_BUF_PER_DEV 2
#define COUNT 16

static void add_access(DrGraph *g, DrId buf, DrAccessMode mode, GRand *r) {
  guint64 begin = (guint64)g_rand_int_range(r, 0, COUNT);
  DrAccess a = {.buffer = buf,
                .mode = mode,
                .begin = begin,
                .end = begin + (guint64)g_rand_int_range(r, 1, (gint32)(COUNT + 1 - begin))};
  dr_graph_add_access(g, &a);
}

static DrId dev_buffer(GRand *r, guint32 d) {
  return d * N_BUF_PER_DEV + (DrId)g_rand_int_range(r, 0, N_BUF_PER_DEV);
}

/* A random program over nd devices (ids 0, 2, 4, ...: not the ranks), n
 * nodes; the passes add the edges. */
static DrGraph *program(GRand *r, guint32 nd, guint32 n) {
  DrGraph *g = dr_graph_new();
  for (guint32 d = 0; d < nd; d++) g->run.devices[d] = (gint32)(2 * d);
  g->run.n_devices = nd;
  g->run.device = 0;
  for (guint32 d = 0; d < nd; d++)
    for (guint32 b = 0; b < N_BUF_PER_DEV; b++) {
      g_autofree char *name = g_strdup_printf("b%u_%u", d, b);
      DrBuffer buf = {.name = name,
                      .type = DR_ELEM_F32,
                      .count = COUNT,
                      .device = (gint32)(2 * d),
                      .device_set = TRUE,
                      .alloc_node = DR_NONE,
                      .free_node = DR_NONE};
      dr_graph_add_buffer(g, &buf);
    }
  DrBuffer host = {.name = "h", .type = DR_ELEM_F32, .count = COUNT, .where = DR_WHERE_HOST};
  DrId h = dr_graph_add_buffer(g, &host);
  for (guint32 v = 0; v < n; v++) {
    g_autofree char *id = g_strdup_printf("n%u", v);
    guint32 kind = (guint32)g_rand_int_range(r, 0, 10);
    DrPriority prio = g_rand_int_range(r, 0, 4) == 0 ? DR_PRIORITY_HIGH : DR_PRIORITY_NORMAL;
    DrNode node = {.id = id,
                   .priority = prio,
                   .device = -1,
                   .kernel = DR_NONE,
                   .buffer = DR_NONE,
                   .dev = -1,
                   .root = -1,
                   .peer = -1};
    guint32 d = (guint32)g_rand_int_range(r, 0, (gint32)nd);
    if (kind < 5) { /* local work on device d */
      node.op = DR_OP_NOOP;
      dr_graph_add_node(g, &node);
      add_access(g, dev_buffer(r, d), DR_ACCESS_READ, r);
      add_access(g, dev_buffer(r, d), g_rand_boolean(r) ? DR_ACCESS_WRITE : DR_ACCESS_READ_WRITE, r);
    } else if (kind < 7) { /* a copy, a peer copy when the devices differ */
      node.op = DR_OP_COPY;
      dr_graph_add_node(g, &node);
      guint32 e = (guint32)g_rand_int_range(r, 0, (gint32)nd);
      DrId src = dev_buffer(r, d), dst = dev_buffer(r, e);
      if (src == dst) dst = e * N_BUF_PER_DEV + (dst % N_BUF_PER_DEV + 1) % N_BUF_PER_DEV;
      guint64 len = (guint64)g_rand_int_range(r, 1, COUNT + 1);
      guint64 sb = (guint64)g_rand_int_range(r, 0, (gint32)(COUNT - len + 1));
      guint64 db = (guint64)g_rand_int_range(r, 0, (gint32)(COUNT - len + 1));
      DrAccess a = {.buffer = src, .mode = DR_ACCESS_READ, .begin = sb, .end = sb + len};
      DrAccess b = {.buffer = dst, .mode = DR_ACCESS_WRITE, .begin = db, .end = db + len};
      dr_graph_add_access(g, &a);
      dr_graph_add_access(g, &b);
    } else if (kind < 8) { /* a host node reading the host buffer */
      node.op = DR_OP_HOST;
      node.host_fn = DR_HOST_FN_CHECKSUM;
      dr_graph_add_node(g, &node);
      add_access(g, h, DR_ACCESS_READ, r);
    } else { /* an allreduce over every device, in place, same range */
      node.op = DR_OP_ALLREDUCE;
      node.n_parts = nd;
      dr_graph_add_node(g, &node);
      guint64 begin = (guint64)g_rand_int_range(r, 0, COUNT);
      guint64 end = begin + (guint64)g_rand_int_range(r, 1, (gint32)(COUNT + 1 - begin));
      for (guint32 p = 0; p < nd; p++) {
        DrId buf = dev_buffer(r, p);
        DrAccess s = {.buffer = buf, .mode = DR_ACCESS_READ, .begin = begin, .end = end};
        DrAccess t = {.buffer = buf, .mode = DR_ACCESS_WRITE, .begin = begin, .end = end};
        dr_graph_add_access(g, &s);
        dr_graph_add_access(g, &t);
      }
    }
  }
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_assert_true(dr_passes_run(g, diags));
  return g;
}

typedef struct {
  guint plans, waits_checked, cross_device_waits, binding, comm_streams;
} Stats;

static void check(const DrGraph *g, const DrPlan *plan, guint32 cap, Stats *st) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_plan_check(plan, &error));
  g_assert_no_error(error);
  guint32 n = g->nodes->len, nd;
  const gint32 *devs = dr_graph_devices(g, &nd);
  g_autofree guint64 *reach = dr_test_closure(g);

  /* Streams per class against the reference widths. */
  gboolean binds = FALSE;
  for (guint32 slot = 0; slot <= nd; slot++) {
    gint32 dev = slot < nd ? devs[slot] : -1;
    guint32 compute_width = 0;
    for (guint kind = 0; kind <= DR_N_PRIORITIES; kind++) {
      gboolean comm = kind == DR_N_PRIORITIES;
      guint64 mask = 0;
      for (DrId v = 0; v < n; v++) {
        const DrNode *nd_ = dr_graph_node(g, v);
        if (dr_graph_node_device(g, v) != dev) continue;
        if (comm ? DR_OP_IS_COLLECTIVE(nd_->op) : (!DR_OP_IS_COLLECTIVE(nd_->op) && nd_->priority == kind))
          mask |= G_GUINT64_CONSTANT(1) << v;
      }
      guint32 streams = 0;
      for (guint32 s = 0; s < plan->streams->len; s++) {
        const DrStream *x = &g_array_index(plan->streams, DrStream, s);
        if (x->device == dev && x->comm == comm && (comm || x->priority == kind)) streams++;
      }
      if (mask == 0) {
        g_assert_cmpuint(streams, ==, 0);
        continue;
      }
      if (comm) {
        g_assert_cmpuint(streams, ==, 1);
        st->comm_streams++;
      } else {
        guint32 w = dr_test_width(reach, n, mask);
        compute_width += w;
        if (!plan->cap_binds) g_assert_cmpuint(streams, ==, w);
      }
    }
    binds = binds || compute_width > plan->cap;
  }
  g_assert_cmpuint(plan->cap_binds, ==, binds);
  if (plan->cap_binds) st->binding++;
  (void)cap;
  /* Per device, compute streams within the cap. */
  for (guint32 slot = 0; slot < nd; slot++) {
    guint32 k = 0;
    for (guint32 s = 0; s < plan->streams->len; s++) {
      const DrStream *x = &g_array_index(plan->streams, DrStream, s);
      k += x->device == devs[slot] && !x->comm;
    }
    g_assert_cmpuint(k, <=, plan->cap);
  }
  /* Uncapped, a compute stream is a chain of the DAG. */
  if (!plan->cap_binds)
    for (DrId a = 0; a < n; a++)
      for (DrId b = a + 1; b < n; b++)
        if (plan->node_stream[a] == plan->node_stream[b] &&
            !g_array_index(plan->streams, DrStream, plan->node_stream[a]).comm)
          g_assert_true(dr_test_comparable(reach, a, b));
  /* No redundant wait, across devices too. */
  for (guint32 i = 0; i < plan->steps->len; i++) {
    const DrPlanStep *s = dr_plan_step(plan, i);
    for (guint32 w = s->wait_first; w < s->wait_first + s->wait_count; w++) {
      DrId u = dr_plan_wait(plan, w);
      gint32 du = g_array_index(plan->streams, DrStream, plan->node_stream[u]).device;
      gint32 dv = g_array_index(plan->streams, DrStream, s->stream).device;
      st->cross_device_waits += du != dv;
      g_autoptr(DrPlan) q = dr_test_plan_without_wait(plan, w);
      g_autoptr(GError) e2 = NULL;
      g_assert_false(dr_plan_check(q, &e2));
      g_assert_true(g_str_has_prefix(e2->message, "P2"));
      st->waits_checked++;
    }
  }
  st->plans++;
}

static void test_random(void) {
  g_autoptr(GRand) r = g_rand_new_with_seed(1414);
  Stats st = {0};
  for (int iter = 0; iter < 1500; iter++) {
    guint32 nd = (guint32)g_rand_int_range(r, 1, 5);
    g_autoptr(DrGraph) g = program(r, nd, (guint32)g_rand_int_range(r, 1, 41));
    guint32 cap = iter % 3 == 2 ? (guint32)g_rand_int_range(r, 1, 4) : 64;
    DrPlanOptions opts = {cap, NULL, .no_greedy_merges = iter % 5 == 4};
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPlan) plan = dr_plan_build(g, &opts, &error);
    g_assert_no_error(error);
    check(g, plan, cap, &st);
  }
  g_test_message("%u plans, %u waits checked (%u across devices), %u with the cap binding, %u comm streams",
                 st.plans, st.waits_checked, st.cross_device_waits, st.binding, st.comm_streams);
  g_assert_cmpuint(st.cross_device_waits, >, 1000);
  g_assert_cmpuint(st.binding, >, 10);
  g_assert_cmpuint(st.comm_streams, >, 100);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/planner/multi-device/random", test_random);
  return g_test_run();
}
