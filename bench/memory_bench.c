/* memory_bench.c: what the planner's memory figures (scheduler/memory.c:
 * the serial peak and the certified worst-case peak) cost on programs of
 * up to a million nodes with stream-ordered buffers, against planning the
 * same DAG without them (DrPlanOptions.no_memory). Prints a markdown table.
 *
 * The programs are built as the parser would (accesses, alloc and free
 * nodes with their whole-buffer writes) and go through the dependency
 * passes, so the DAG is hazard-derived:
 *  - steps: a decoder-like loop; each step allocates two scratch buffers,
 *    writes and reads them in a few kernels that also touch a state of 64
 *    cells, and frees them (every buffer has n/16 lifetimes);
 *  - random: kernels reading and writing 64 one-element cells at random,
 *    with 32 scratch buffers whose lifetimes open and close at random
 *    (each open one used a few times in between).
 * Each configuration is planned REPEATS times with and without the memory
 * pass, alternating; the table shows the least CPU time of each (process
 * CPU time, not wall-clock, so a shared machine's waiting is not counted),
 * their ratio, and the median of the REPEATS ratios of one plan with to
 * the plan without just before it (steadier on a loaded machine). The last columns are the memory budget pass
 * (scheduler/budget.c), which runs only under a memory limit: its cost
 * (least of REPEATS) with a limit that fits (the bound: one edge index,
 * issue order and flow, no edge added), and, at 10k nodes, with the limit
 * halfway between the serial peak and the bound (the edges it adds and
 * its time; "-" above: each added edge recomputes the index, the issue
 * order and the flow from scratch, too slow for a bench at 100k).
 *
 * Usage: memory_bench [--quick]   (--quick: up to 100k nodes)
 *        memory_bench N           (one size: 10000, 100000 or 1000000)
 * Build with -c opt: bazel build -c opt //bench:memory_bench */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/budget.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"

#define CELLS 64
#define SCRATCH 32
#define REPEATS 7

typedef struct {
  DrGraph *g;
  DrId kernel;
  guint32 next;
} B;

static DrId add(B *b, DrOp op, DrId buffer) {
  char id[32];
  g_snprintf(id, sizeof id, "n%u", b->next++);
  DrNode node = {.op = op,
                 .priority = DR_PRIORITY_NORMAL,
                 .id = id,
                 .device = -1,
                 .kernel = op == DR_OP_KERNEL ? b->kernel : DR_NONE,
                 .buffer = buffer};
  DrId v = dr_graph_add_node(b->g, &node);
  if (op == DR_OP_ALLOC || op == DR_OP_FREE) {
    DrBuffer *buf = dr_graph_buffer(b->g, buffer);
    DrId *first = op == DR_OP_ALLOC ? &buf->alloc_node : &buf->free_node;
    if (*first == DR_NONE) *first = v;
    DrAccess a = {.buffer = buffer, .mode = DR_ACCESS_WRITE, .begin = 0, .end = buf->count};
    dr_graph_add_access(b->g, &a);
  }
  return v;
}

static void touch(B *b, DrId buffer, DrAccessMode mode) {
  DrAccess a = {.buffer = buffer, .mode = mode, .begin = 0, .end = dr_graph_buffer(b->g, buffer)->count};
  dr_graph_add_access(b->g, &a);
}

static B begin(const char *name) {
  B b = {dr_graph_new(), DR_NONE, 0};
  b.g->name = dr_graph_intern(b.g, name);
  DrKernelDecl k = {.name = "k", .origin = DR_KERNEL_USER, .grid = {DR_NONE, 1}};
  b.kernel = dr_graph_add_kernel(b.g, &k);
  char nm[32];
  for (guint32 c = 0; c < CELLS; c++) {
    g_snprintf(nm, sizeof nm, "c%u", c);
    DrBuffer buf = {.name = nm, .type = DR_ELEM_F32, .count = 1};
    dr_graph_add_buffer(b.g, &buf);
  }
  for (guint32 s = 0; s < SCRATCH; s++) {
    g_snprintf(nm, sizeof nm, "s%u", s);
    DrBuffer buf = {.name = nm, .type = DR_ELEM_F32, .count = 1024 * (s + 1)};
    dr_graph_add_buffer(b.g, &buf);
  }
  return b;
}

static DrGraph *steps(guint32 n, guint32 seed) {
  B b = begin("steps");
  GRand *r = g_rand_new_with_seed(seed);
  while (b.next + 8 <= n) {
    DrId s0 = CELLS + (DrId)g_rand_int_range(r, 0, SCRATCH / 2), s1 = s0 + SCRATCH / 2;
    add(&b, DR_OP_ALLOC, s0);
    add(&b, DR_OP_ALLOC, s1);
    add(&b, DR_OP_KERNEL, DR_NONE); /* scores = f(state) */
    touch(&b, (DrId)g_rand_int_range(r, 0, CELLS), DR_ACCESS_READ);
    touch(&b, s0, DR_ACCESS_WRITE);
    add(&b, DR_OP_KERNEL, DR_NONE); /* probs = softmax(scores) */
    touch(&b, s0, DR_ACCESS_READ);
    touch(&b, s1, DR_ACCESS_WRITE);
    add(&b, DR_OP_FREE, s0);
    add(&b, DR_OP_KERNEL, DR_NONE); /* out[t] = probs */
    touch(&b, s1, DR_ACCESS_READ);
    touch(&b, (DrId)g_rand_int_range(r, 0, CELLS), DR_ACCESS_WRITE);
    add(&b, DR_OP_KERNEL, DR_NONE); /* state += probs */
    touch(&b, s1, DR_ACCESS_READ);
    touch(&b, (DrId)g_rand_int_range(r, 0, CELLS), DR_ACCESS_READ_WRITE);
    add(&b, DR_OP_FREE, s1);
  }
  g_rand_free(r);
  return b.g;
}

static DrGraph *random_program(guint32 n, guint32 seed) {
  B b = begin("random");
  GRand *r = g_rand_new_with_seed(seed);
  gboolean live[SCRATCH] = {FALSE};
  guint32 n_live = 0;
  while (b.next + n_live + 1 < n) {
    DrId s = (DrId)g_rand_int_range(r, 0, SCRATCH);
    if (g_rand_int_range(r, 0, 8) == 0) { /* open or close a lifetime */
      add(&b, live[s] ? DR_OP_FREE : DR_OP_ALLOC, CELLS + s);
      n_live += live[s] ? -1 : 1;
      live[s] = !live[s];
      continue;
    }
    add(&b, DR_OP_KERNEL, DR_NONE);
    guint32 touches = (guint32)g_rand_int_range(r, 1, 4);
    for (guint32 t = 0; t < touches; t++)
      touch(&b, (DrId)g_rand_int_range(r, 0, CELLS),
            g_rand_int_range(r, 0, 3) == 0 ? DR_ACCESS_WRITE : DR_ACCESS_READ);
    if (live[s]) touch(&b, CELLS + s, g_rand_boolean(r) ? DR_ACCESS_WRITE : DR_ACCESS_READ);
  }
  for (guint32 s = 0; s < SCRATCH; s++)
    if (live[s]) add(&b, DR_OP_FREE, CELLS + s);
  g_rand_free(r);
  return b.g;
}

/* CPU seconds of this process: the machine may be shared, and waiting for
 * a core is not what planning costs. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double plan_s(const DrGraph *g, gboolean memory, DrPlan **keep) {
  DrPlanOptions o = {.no_memory = !memory};
  g_autoptr(GError) error = NULL;
  double t0 = cpu_s();
  DrPlan *p = dr_plan_build(g, &o, &error);
  double s = cpu_s() - t0;
  if (p == NULL) g_error("plan: %s", error->message);
  if (keep) {
    dr_plan_free(*keep);
    *keep = p;
  } else {
    dr_plan_free(p);
  }
  return s;
}

static int double_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void row(const char *shape, guint32 n) {
  g_autoptr(DrGraph) g = strcmp(shape, "steps") == 0 ? steps(n, 3 + n) : random_program(n, 5 + n);
  g_autoptr(DrDiags) d = dr_diags_new(0);
  if (!dr_passes_run(g, d)) g_error("%s: the passes failed", shape);
  double with = G_MAXDOUBLE, without = G_MAXDOUBLE, pair[REPEATS];
  DrPlan *plan = NULL;
  for (int k = 0; k < REPEATS; k++) {
    double wo = plan_s(g, FALSE, NULL), wi = plan_s(g, TRUE, &plan);
    without = MIN(without, wo);
    with = MIN(with, wi);
    pair[k] = wi / wo;
  }
  qsort(pair, REPEATS, sizeof(double), double_cmp);
  g_autoptr(GArray) added = g_array_new(FALSE, FALSE, sizeof(DrEdge));
  DrMemoryBudget b;
  double fits = G_MAXDOUBLE, binds = G_MAXDOUBLE;
  for (int k = 0; k < REPEATS; k++) {
    double t0 = cpu_s();
    g_array_set_size(added, 0);
    dr__budget_edges(g, plan->peak_bound_bytes, FALSE, added, &b);
    fits = MIN(fits, cpu_s() - t0);
  }
  guint added_binds = 0;
  if (n <= 10000) {
    guint64 half = plan->peak_serial_bytes + (plan->peak_bound_bytes - plan->peak_serial_bytes) / 2;
    double t0 = cpu_s();
    g_array_set_size(added, 0);
    dr__budget_edges(g, half, FALSE, added, &b);
    binds = cpu_s() - t0;
    added_binds = added->len;
  }
  printf("| %s | %u | %u | %u | %u | %.1f | %.1f | %u | %.3f | %.3f | %.3f | %.3f | %.3f |", shape,
         g->nodes->len, g->edges->len, plan->width, plan->n_lifetimes,
         (double)plan->peak_serial_bytes / 1048576.0, (double)plan->peak_bound_bytes / 1048576.0,
         plan->peak_bound->len, without, with, with / without, pair[REPEATS / 2], fits);
  if (n <= 10000)
    printf(" %u edges, %.3f |\n", added_binds, binds);
  else
    printf(" - |\n");
  fflush(stdout);
  dr_plan_free(plan);
}

int main(int argc, char **argv) {
  gboolean quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  guint32 only = argc > 1 && !quick ? (guint32)g_ascii_strtoull(argv[1], NULL, 10) : 0;
  printf(
      "| program | nodes | edges | width | lifetimes | serial MiB | bound MiB | certificate | plan s "
      "(no memory) | plan s | ratio | median pair ratio | budget s (limit fits) | budget at half (edges, s) "
      "|\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  static const guint32 sizes[] = {10000, 100000, 1000000};
  for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
    if (quick && sizes[i] > 100000) break;
    if (only != 0 && sizes[i] != only) continue;
    row("steps", sizes[i]);
    row("random", sizes[i]);
  }
  return 0;
}
