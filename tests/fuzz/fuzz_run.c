/* fuzz_run.c: libFuzzer target for the whole path, run included: whatever
 * loads (that is, passes `dagrun --check`) is planned and run once on the
 * host backend with --verify (iterations 1, warmup 0), and must run: the
 * only error allowed is DR_ERROR_UNAVAILABLE (a user kernel has no host
 * twin), and the concurrent run must equal the serial one. This is what
 * the 2^61-element buffer crash was out of reach of: the other targets
 * stop at planning.
 *
 * Capped so one input costs milliseconds and little memory: a pipeline is
 * skipped (not run) when it runs more than 2000 nodes, a loop body's
 * counted once per trip (a `repeat: 100000` of one noop is 100000 nodes:
 * CI's fuzz run once hit its 10 s timeout on one), holds a `while:` (its
 * trips depend on the data), has a buffer over 1 MiB or 8 MiB of buffers
 * in all, more than 64 MiB of accessed bytes summed over the nodes run,
 * more than 20 ms of sleep or spin, or gemm calls of more than 5e7
 * multiply-adds, or a function from a shared library (a host function's
 * or a host twin: the user's code). `save:` paths are dropped (nothing is
 * written) and host output goes to /dev/null. Built only with
 * --config=fuzz. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "backends/run.h"
#include "ir/diag.h"
#include "ir/loops.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

#define MAX_NODES 2000
#define MAX_BUFFER_BYTES (G_GUINT64_CONSTANT(1) << 20)
#define MAX_TOTAL_BYTES (G_GUINT64_CONSTANT(8) << 20)
#define MAX_ACCESSED_BYTES (G_GUINT64_CONSTANT(64) << 20)
#define MAX_WAIT_US 20000
#define MAX_GEMM_MACS 5e7

/* The value of scalar argument `name` of kernel node n, or -1. */
static gint64 int_arg(const DrGraph *g, const DrNode *n, const char *name) {
  const DrKernelDecl *k = dr_graph_kernel(g, n->kernel);
  for (guint32 i = 0; i < n->arg_count; i++) {
    const DrArg *a = dr_graph_arg(g, n->arg_first + i);
    if (a->kind == DR_ARG_INT && a->param < k->n_params && strcmp(k->params[a->param].name, name) == 0)
      return a->v.i;
  }
  return -1;
}

/* What running a graph once costs, loop bodies counted once per trip. */
typedef struct {
  double nodes, accessed, wait_us, macs;
} Cost;

/* Adds to `c` the cost of running `g` `times` times; FALSE when it holds
 * something the caps refuse outright: a while loop (its trips depend on
 * the data, and a condition that stays true is a loop that never ends:
 * a hang by the pipeline's own meaning, not dagrun's), or a function of
 * the user's (a shared library's function or a user kernel's host twin:
 * calling whatever symbol an input names is no test of dagrun). */
static gboolean add_cost(const DrGraph *g, double times, Cost *c) {
  c->nodes += times * dr_graph_n_nodes(g);
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op == DR_OP_HOST && n->callback != 0) return FALSE;
    if (n->op == DR_OP_KERNEL && dr_graph_kernel(g, n->kernel)->twin != NULL) return FALSE;
    const DrLoop *l = dr_graph_node_loop(g, i);
    if (l != NULL) {
      /* The loop node's own accesses are the hull of its bodies': the
       * bodies' nodes are what runs. */
      if (l->kind == DR_LOOP_WHILE) return FALSE;
      double trips = l->kind == DR_LOOP_REPEAT ? times * (double)l->count : times;
      if (!add_cost(l->body, trips, c)) return FALSE;
      if (l->else_body != NULL && !add_cost(l->else_body, trips, c)) return FALSE;
      continue;
    }
    for (guint32 a = 0; a < n->access_count; a++) {
      const DrAccess *acc = dr_graph_access(g, n->access_first + a);
      c->accessed +=
          times * (double)(acc->end - acc->begin) * dr_elem_size(dr_graph_buffer(g, acc->buffer)->type);
    }
    if (n->op == DR_OP_HOST && n->callback == 0 && n->host_fn == DR_HOST_FN_SLEEP) {
      for (guint32 a = 0; a < n->arg_count; a++) {
        const DrArg *arg = dr_graph_arg(g, n->arg_first + a);
        if (arg->kind == DR_ARG_INT && arg->v.i > 0) c->wait_us += times * (double)arg->v.i;
      }
    }
    if (n->op == DR_OP_KERNEL) {
      const char *k = dr_graph_kernel(g, n->kernel)->name;
      if (strcmp(k, "spin") == 0) c->wait_us += times * (double)MAX(int_arg(g, n, "ns"), 0) / 1000;
      if (g_str_has_prefix(k, "gemm_"))
        c->macs +=
            times * (double)int_arg(g, n, "m") * (double)int_arg(g, n, "n") * (double)int_arg(g, n, "k");
    }
    if (c->nodes > MAX_NODES || c->accessed > MAX_ACCESSED_BYTES || c->wait_us > MAX_WAIT_US ||
        c->macs > MAX_GEMM_MACS)
      return FALSE;
  }
  return c->nodes <= MAX_NODES;
}

/* Whether running `g` once stays within the caps above. */
static gboolean cheap(DrGraph *g) {
  guint64 total = 0;
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    DrBuffer *b = dr_graph_buffer(g, i);
    guint64 bytes = dr_buffer_bytes(b);
    if (bytes > MAX_BUFFER_BYTES) return FALSE;
    total += bytes;
    b->save_path = NULL;
  }
  if (total > MAX_TOTAL_BYTES) return FALSE;
  Cost c = {0};
  return add_cost(g, 1.0, &c);
}

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  static FILE *devnull = NULL;
  if (devnull == NULL) devnull = fopen("/dev/null", "w");
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) graph = dr_load_string("fuzz.yaml", (const char *)data, size, diags, &error);
  if (graph == NULL || !cheap(graph)) return 0;
  DrPlanOptions popts = {0};
  g_autoptr(DrPlan) plan = dr_plan_build(graph, &popts, &error);
  g_assert_no_error(error);
  DrRunOptions o;
  dr_run_options_init(&o, graph);
  o.backend = DR_BACKEND_HOST;
  o.iterations = 1;
  o.warmup = 0;
  o.verify = TRUE;
  o.host_output = devnull;
  g_autoptr(DrReport) report = dr_run(plan, &o, &error);
  if (report == NULL) {
    g_assert_nonnull(error);
    if (!g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE))
      g_error("a pipeline that passed --check failed to run: %s", error->message);
    return 0;
  }
  if (report->verified != DR_VERIFIED_PASS)
    g_error("--verify failed on the host backend: buffer '%s' element %" G_GUINT64_FORMAT
            ": serial %s, "
            "concurrent %s",
            report->diff_buffer, report->diff_index, report->diff_serial, report->diff_concurrent);
  return 0;
}
