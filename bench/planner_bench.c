/* planner_bench.c: plan time and peak memory of the stream planner on
 * random layered DAGs of 10k to 1M nodes and widths 3 to ~1000, with two
 * baselines computed in the same run: Taskflow's round-robin capturer
 * (nodes levelized by longest path, each level dealt round-robin over 4
 * streams, an event per cross-stream edge) and one wait per cross-stream
 * edge on dagrun's own stream assignment (no vector-clock reduction).
 * Prints a markdown table. Not a GPU benchmark: bench/gpu_bench.sh runs
 * plans on the device.
 *
 * The DAGs: L layers of w nodes; node j of a layer depends on node perm(j)
 * of the layer before (a random matching, so every node has a successor and
 * the width is exactly w) plus 0-2 random extra nodes of that layer or, one
 * time in three, of the layer before it (edges that other paths may imply,
 * as hazard-derived DAGs have). The programs: random reads and writes of
 * 64 one-element cells with the deps pass's hazard edges (program()). All
 * nodes are kernels the cost model prices at 3 µs. Each case runs in a
 * forked child so its peak RSS (getrusage) is its own.
 *
 * Usage: planner_bench [--quick]   (--quick: up to 100k nodes)
 *        planner_bench N W          (one layered case: N nodes, width W)
 *        planner_bench N program    (one program case over 64 cells)
 * Build with -c opt: the planner's own files are not compiled with -O2
 * otherwise. */
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "scheduler/planner.h"

#define NODE_US 3.0 /* the cost model's price of an access-free kernel */

/* Adds kernel node "n<v>" calling kernel `kid` to `g`. */
static void add_kernel_node(DrGraph *g, DrId kid, guint32 v) {
  char id[32];
  g_snprintf(id, sizeof id, "n%u", v);
  DrNode node = {.op = DR_OP_KERNEL,
                 .priority = DR_PRIORITY_NORMAL,
                 .id = id,
                 .device = -1,
                 .kernel = kid,
                 .buffer = DR_NONE};
  dr_graph_add_node(g, &node);
}

static DrGraph *layered(guint32 n, guint32 w, guint32 seed) {
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, "layered");
  DrKernelDecl k = {.name = "k", .origin = DR_KERNEL_USER, .grid = {DR_NONE, 1}};
  DrId kid = dr_graph_add_kernel(g, &k);
  GRand *r = g_rand_new_with_seed(seed);
  guint32 *perm = g_new(guint32, w);
  for (guint32 v = 0; v < n; v++) {
    add_kernel_node(g, kid, v);
    guint32 j = v % w;
    if (v < w) continue;
    if (j == 0) {
      for (guint32 i = 0; i < w; i++) perm[i] = i;
      for (guint32 i = w; i > 1; i--) {
        guint32 x = (guint32)g_rand_int_range(r, 0, (gint32)i), t = perm[i - 1];
        perm[i - 1] = perm[x];
        perm[x] = t;
      }
    }
    guint32 prev = v - j - w;
    dr_graph_add_edge(g, prev + perm[j], v, DR_EDGE_RAW, DR_NONE);
    guint32 extra = (guint32)g_rand_int_range(r, 0, 3);
    for (guint32 e = 0; e < extra && w > 1; e++) {
      /* The layer before, or (one time in three) the one before that. */
      guint32 from = prev + (guint32)g_rand_int_range(r, 0, (gint32)w);
      if (from >= w && g_rand_int_range(r, 0, 3) == 0) from -= w;
      dr_graph_add_edge(g, from, v, DR_EDGE_RAW, DR_NONE);
    }
  }
  dr_graph_sort_edges(g);
  g_free(perm);
  g_rand_free(r);
  return g;
}

/* A random program over `cells` one-element slices: each node reads or
 * writes 1-3 random cells, and hazard edges follow per cell (RAW and WAW
 * from the last writer, WAR from the readers since), as the deps pass
 * derives them from slices: many of those edges are implied by others. */
static DrGraph *program(guint32 n, guint32 cells, guint32 seed) {
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, "program");
  DrKernelDecl k = {.name = "k", .origin = DR_KERNEL_USER, .grid = {DR_NONE, 1}};
  DrId kid = dr_graph_add_kernel(g, &k);
  GRand *r = g_rand_new_with_seed(seed);
  guint32 *writer = g_new(guint32, cells);
  GArray **readers = g_new(GArray *, cells);
  for (guint32 c = 0; c < cells; c++) {
    writer[c] = DR_NONE;
    readers[c] = g_array_new(FALSE, FALSE, sizeof(guint32));
  }
  for (guint32 v = 0; v < n; v++) {
    add_kernel_node(g, kid, v);
    guint32 touches = (guint32)g_rand_int_range(r, 1, 4);
    for (guint32 t = 0; t < touches; t++) {
      guint32 c = (guint32)g_rand_int_range(r, 0, (gint32)cells);
      gboolean writes = g_rand_int_range(r, 0, 3) == 0;
      if (writer[c] != DR_NONE && writer[c] != v)
        dr_graph_add_edge(g, writer[c], v, writes ? DR_EDGE_WAW : DR_EDGE_RAW, DR_NONE);
      if (!writes) {
        g_array_append_val(readers[c], v);
        continue;
      }
      for (guint32 i = 0; i < readers[c]->len; i++)
        if (g_array_index(readers[c], guint32, i) != v)
          dr_graph_add_edge(g, g_array_index(readers[c], guint32, i), v, DR_EDGE_WAR, DR_NONE);
      g_array_set_size(readers[c], 0);
      writer[c] = v;
    }
  }
  dr_graph_sort_edges(g);
  for (guint32 c = 0; c < cells; c++) g_array_unref(readers[c]);
  g_free(readers);
  g_free(writer);
  g_rand_free(r);
  return g;
}

/* Resident set now, from /proc/self/statm, in bytes. */
static guint64 rss_now(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/self/statm", &text, NULL, NULL)) return 0;
  guint64 pages = 0, resident = 0;
  if (sscanf(text, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &pages, &resident) != 2) return 0;
  return resident * (guint64)sysconf(_SC_PAGESIZE);
}

/* User plus system CPU time of this process, µs: less sensitive than wall
 * time to other jobs sharing the machine. */
static gint64 cpu_us(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (gint64)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
         ru.ru_stime.tv_usec;
}

static guint64 rss_peak(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (guint64)ru.ru_maxrss * 1024;
}

/* Round-robin over 4 streams by longest-path level (Taskflow's capturer):
 * returns the cross-stream edges (its event count) and the planned path
 * over DAG edges plus the stream order it adds. */
static void round_robin4(const DrGraph *g, guint32 *cross_out, double *path_out) {
  guint32 n = g->nodes->len, m = g->edges->len;
  guint32 *level = g_new0(guint32, n), *stream = g_new(guint32, n);
  /* Edges are sorted by `to` and the generator's ids are topological. */
  guint32 max_level = 0;
  for (guint32 e = 0; e < m; e++) {
    const DrEdge *ed = dr_graph_edge(g, e);
    level[ed->to] = MAX(level[ed->to], level[ed->from] + 1);
    max_level = MAX(max_level, level[ed->to]);
  }
  guint32 *per_level = g_new0(guint32, max_level + 2);
  for (guint32 v = 0; v < n; v++) per_level[level[v] + 1]++;
  for (guint32 l = 0; l <= max_level; l++) per_level[l + 1] += per_level[l];
  guint32 *by_level = g_new(guint32, n), *fill = g_memdup2(per_level, (max_level + 2) * sizeof(guint32));
  for (guint32 v = 0; v < n; v++) {
    stream[v] = (fill[level[v]] - per_level[level[v]]) % 4;
    by_level[fill[level[v]]++] = v;
  }
  guint32 cross = 0;
  for (guint32 e = 0; e < m; e++)
    cross += stream[dr_graph_edge(g, e)->from] != stream[dr_graph_edge(g, e)->to];
  /* Finish times in level order: stream order is level order. */
  double *finish = g_new0(double, n), last[4] = {0, 0, 0, 0}, path = 0;
  guint32 *pred_start = g_new0(guint32, n + 1);
  for (guint32 e = 0; e < m; e++) pred_start[dr_graph_edge(g, e)->to + 1]++;
  for (guint32 v = 0; v < n; v++) pred_start[v + 1] += pred_start[v];
  for (guint32 i = 0; i < n; i++) {
    guint32 v = by_level[i];
    double start = last[stream[v]];
    for (guint32 e = pred_start[v]; e < pred_start[v + 1]; e++)
      start = MAX(start, finish[dr_graph_edge(g, e)->from]);
    finish[v] = start + NODE_US;
    last[stream[v]] = finish[v];
    path = MAX(path, finish[v]);
  }
  *cross_out = cross;
  *path_out = path;
  g_free(pred_start);
  g_free(finish);
  g_free(fill);
  g_free(by_level);
  g_free(per_level);
  g_free(stream);
  g_free(level);
}

/* Plans one DAG (layered of layer width w, or with cells > 0 a random
 * program over that many cells) and prints its table row. */
static void run_case(guint32 n, guint32 w, guint32 cells) {
  g_autoptr(DrGraph) g = cells ? program(n, cells, 11 + n) : layered(n, w, 7 + n + w);
  guint64 before = rss_now();
  DrPlanOptions uncapped = {1u << 20, NULL};
  gint64 t0 = g_get_monotonic_time(), c0 = cpu_us();
  g_autoptr(GError) error = NULL;
  DrPlan *plan = dr_plan_build(g, &uncapped, &error);
  gint64 t1 = g_get_monotonic_time(), c1 = cpu_us();
  if (plan == NULL) g_error("plan: %s", error->message);
  guint64 peak = rss_peak();
  guint32 cross = 0;
  for (guint32 e = 0; e < g->edges->len; e++)
    cross += plan->node_stream[dr_graph_edge(g, e)->from] != plan->node_stream[dr_graph_edge(g, e)->to];

  DrPlanOptions capped = {8, NULL};
  gint64 c2 = cpu_us();
  DrPlan *plan8 = dr_plan_build(g, &capped, &error);
  gint64 c3 = cpu_us();
  if (plan8 == NULL) g_error("plan: %s", error->message);

  guint32 cross8 = 0;
  for (guint32 e = 0; e < g->edges->len; e++)
    cross8 += plan8->node_stream[dr_graph_edge(g, e)->from] != plan8->node_stream[dr_graph_edge(g, e)->to];
  guint32 rr_cross = 0;
  double rr_path = 0;
  round_robin4(g, &rr_cross, &rr_path);
  g_autofree char *shape =
      cells ? g_strdup_printf("program, %u cells", cells) : g_strdup_printf("layered, w %u", w);
  printf(
      "| %u | %s | %u | %u | %u | %u | %u | %.1f | %.1f | %.0f | %.1f | %u | %u | %u | %.0f | %.0f | %u | "
      "%.0f |\n",
      n, shape, g->edges->len, plan->width, plan->streams->len, plan->waits->len, cross, (c1 - c0) / 1e3,
      (t1 - t0) / 1e3, (double)(peak - before) / n, (c3 - c2) / 1e3, plan8->streams->len, plan8->waits->len,
      cross8, plan->critical_path_us, plan8->planned_path_us, rr_cross, rr_path);
  g_printerr("%u, %s: whole-process peak %.0f bytes/node\n", n, shape, (double)peak / n);
  fflush(stdout);
  dr_plan_free(plan8);
  dr_plan_free(plan);
}

/* Runs one case in a child process, so its peak RSS is its own. */
static void run_forked(guint32 n, guint32 w, guint32 cells) {
  pid_t pid = fork();
  if (pid == 0) {
    run_case(n, w, cells);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    printf("| %u | w %u, cells %u | (failed: status %d) |\n", n, w, cells, status);
}

int main(int argc, char **argv) {
  gboolean quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  gboolean one = argc > 2;
  static const guint32 sizes[] = {10000, 100000, 1000000};
  static const guint32 widths[] = {3, 8, 32, 1000};
  printf(
      "| nodes | DAG | edges | width | streams | waits | cross-stream edges (1 wait each) "
      "| plan CPU ms | plan wall ms | plan peak B/node | cap 8: plan CPU ms | cap 8: streams "
      "| cap 8: waits | cap 8: cross-stream edges | critical path us | cap 8: planned path us "
      "| RR4: waits (= cross edges) | RR4: planned path us |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  fflush(stdout);
  if (one) {
    guint32 n = (guint32)g_ascii_strtoull(argv[1], NULL, 10);
    if (strcmp(argv[2], "program") == 0)
      run_forked(n, 0, 64);
    else
      run_forked(n, (guint32)g_ascii_strtoull(argv[2], NULL, 10), 0);
    return 0;
  }
  for (guint i = 0; i < G_N_ELEMENTS(sizes) - (quick ? 1 : 0); i++)
    for (guint j = 0; j < G_N_ELEMENTS(widths); j++) run_forked(sizes[i], widths[j], 0);
  for (guint i = 0; i < G_N_ELEMENTS(sizes) - (quick ? 1 : 0); i++) run_forked(sizes[i], 0, 64);
  return 0;
}
