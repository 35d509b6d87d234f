/* rank_plan_bench.c: what planning costs each rank of a 1024-rank job
 * (docs/multi-gpu.md, "Per-rank planning"): every rank parses the one
 * YAML for its own rank and plans only its own nodes, so the cost per rank
 * should not grow with the rank count. The pipeline is a data-parallel
 * training iteration as a 128-machine x 8-GPU job would run it: LAYERS
 * layers, each a forward and a backward kernel per micro-batch, then one
 * bucketed gradient allreduce over every rank and the layer's update; a
 * ring exchange with the neighbouring ranks (send/recv); one data-loading
 * node per rank written as `foreach: {r: 0..nranks-1}` with `rank: r` (so
 * the file has nranks of them and each rank keeps one); and a checkpoint
 * node on rank 0 only.
 *
 * For each rank asked (default 0, 1, 511, 1023), a child process (so each
 * one's peak memory is its own) loads the pipeline as that rank of NRANKS
 * (lib/load.c's dr__load_set_ranks, what joining the job sets), runs the
 * passes and plans; it prints the nodes it kept, the parse + passes time,
 * the plan time (process CPU time, best of 3) and its peak RSS. Also the
 * same for a 1-rank job, as the baseline. Prints a markdown table.
 *
 * Usage: rank_plan_bench [NRANKS [LAYERS [MICRO]]]   (default 1024 96 16)
 * Build with -c opt: bazel build -c opt //bench:rank_plan_bench */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ir/diag.h"
#include "lib/load.h"
#include "scheduler/planner.h"

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static GString *pipeline(guint layers, guint micro) {
  GString *y = g_string_new("dagrun: 1\nname: dp-1024\nrun: {iterations: 1, warmup: 0}\nbuffers:\n");
  guint chunk = 4096;
  g_string_append_printf(y, "  w:    {type: f32, count: %u}\n", layers * chunk);
  g_string_append_printf(y, "  grad: {type: f32, count: %u}\n", layers * chunk);
  g_string_append_printf(y, "  act:  {type: f32, count: %u}\n", layers * micro * chunk);
  g_string_append_printf(y, "  x:    {type: f32, count: %u}\n", micro * chunk);
  g_string_append(y, "  halo: {type: f32, count: 1024}\n  edge: {type: f32, count: 1024}\n");
  g_string_append_printf(y, "  w_host: {type: f32, count: %u, where: host}\n", layers * chunk);
  g_string_append(y,
                  "nodes:\n"
                  "  load{r}:\n    foreach: {r: 0..nranks-1}\n    rank: r\n"
                  "    op: kernel\n    kernel: iota_f32\n    args: {y: x, start: \"{r}\"}\n");
  /* layer L, micro-batch m: forward reads w[L] and the previous layer's
   * activation, backward writes into grad[L]; then the allreduce. */
  g_string_append_printf(
      y,
      "  fwd{L}_{m}:\n    foreach: {L: 0..%u, m: 0..%u}\n    op: kernel\n    kernel: mul_f32\n"
      "    args: {a: \"w[L*%u:(L+1)*%u]\", b: \"x[m*%u:(m+1)*%u]\", y: \"act[(L*%u+m)*%u:(L*%u+m+1)*%u]\"}\n",
      layers - 1, micro - 1, chunk, chunk, chunk, chunk, micro, chunk, micro, chunk);
  g_string_append_printf(
      y,
      "  bwd{L}_{m}:\n    foreach: {L: 0..%u, m: 0..%u}\n    op: kernel\n    kernel: axpy_f32\n"
      "    args: {alpha: 0.5, x: \"act[(L*%u+m)*%u:(L*%u+m+1)*%u]\", y: \"grad[L*%u:(L+1)*%u]\"}\n",
      layers - 1, micro - 1, micro, chunk, micro, chunk, chunk, chunk);
  g_string_append_printf(y,
                         "  allreduce{L}:\n    foreach: {L: 0..%u}\n    op: allreduce\n    reduce: avg\n"
                         "    buffers: \"grad[L*%u:(L+1)*%u]\"\n",
                         layers - 1, chunk, chunk);
  g_string_append_printf(y,
                         "  update{L}:\n    foreach: {L: 0..%u}\n    op: kernel\n    kernel: axpy_f32\n"
                         "    args: {alpha: -0.001, x: \"grad[L*%u:(L+1)*%u]\", y: \"w[L*%u:(L+1)*%u]\"}\n",
                         layers - 1, chunk, chunk, chunk, chunk);
  g_string_append(y,
                  "  to_next: {op: send, src: halo, peer: \"{(rank + 1) % nranks}\"}\n"
                  "  from_prev: {op: recv, dst: edge, peer: \"{(rank + nranks - 1) % nranks}\"}\n"
                  "  checkpoint: {op: copy, src: w, dst: w_host, rank: 0}\n");
  return y;
}

typedef struct {
  guint nodes, edges, streams;
  double load_ms, plan_ms;
  long rss_kib;
} Row;

/* In a child: loads and plans as `rank` of `nranks`, best of 3. */
static Row measure(const GString *yaml, guint rank, guint nranks) {
  Row row = {0};
  row.load_ms = row.plan_ms = G_MAXDOUBLE;
  for (int rep = 0; rep < 3; rep++) {
    dr__load_set_ranks(rank, nranks, rank % 8);
    g_autoptr(DrDiags) diags = dr_diags_new(20);
    g_autoptr(GError) error = NULL;
    double t0 = cpu_ms();
    g_autoptr(DrGraph) g = dr_load_string("dp-1024.yaml", yaml->str, yaml->len, diags, &error);
    double t1 = cpu_ms();
    if (g == NULL) {
      fprintf(stderr, "rank %u: %s\n", rank, error->message);
      exit(1);
    }
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    double t2 = cpu_ms();
    if (plan == NULL) {
      fprintf(stderr, "rank %u: %s\n", rank, error->message);
      exit(1);
    }
    row.load_ms = MIN(row.load_ms, t1 - t0);
    row.plan_ms = MIN(row.plan_ms, t2 - t1);
    row.nodes = dr_graph_n_nodes(g);
    row.edges = g->edges->len;
    row.streams = dr_plan_n_streams(plan);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  row.rss_kib = ru.ru_maxrss;
  return row;
}

int main(int argc, char **argv) {
  guint nranks = argc > 1 ? (guint)atoi(argv[1]) : 1024;
  guint layers = argc > 2 ? (guint)atoi(argv[2]) : 96;
  guint micro = argc > 3 ? (guint)atoi(argv[3]) : 16;
  g_autoptr(GString) yaml = pipeline(layers, micro);
  guint ranks[] = {0, 1, nranks / 2 - 1, nranks - 1};
  printf("pipeline: %u layers x %u micro-batches, %u ranks (%zu bytes of YAML)\n\n", layers, micro, nranks,
         yaml->len);
  printf(
      "| job | rank | nodes kept | edges | streams | parse + passes (ms) | plan (ms) | peak RSS (MiB) |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (guint k = 0; k < G_N_ELEMENTS(ranks) + 1; k++) {
    gboolean single = k == G_N_ELEMENTS(ranks);
    guint rank = single ? 0 : ranks[k], n = single ? 2 : nranks;
    int fd[2];
    if (pipe(fd) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      Row row = measure(yaml, rank, n);
      if (write(fd[1], &row, sizeof row) != (ssize_t)sizeof row) _exit(1);
      _exit(0);
    }
    close(fd[1]);
    Row row;
    gboolean ok = read(fd[0], &row, sizeof row) == (ssize_t)sizeof row;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!ok || status != 0) return 1;
    printf("| %u rank%s | %u | %u | %u | %u | %.1f | %.1f | %.1f |\n", n, n == 1 ? "" : "s", rank, row.nodes,
           row.edges, row.streams, row.load_ms, row.plan_ms, row.rss_kib / 1024.0);
  }
  return 0;
}
