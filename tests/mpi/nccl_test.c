/* nccl_test.c: the CUDA backend's NCCL paths without a GPU or mpirun: the
 * fake CUDA runtime (tests/fault), the fake NCCL (fake_nccl.c) and, for an
 * MPI job, the fake MPI table (fake_mpi.c, this process playing one rank
 * of several). Checks: collectives ready together are issued in one
 * ncclGroupStart/End and dependent ones are not; the job's bootstrap
 * (rank 0 alone makes the ncclUniqueId, every rank's ncclCommInitRank
 * gets (nranks, that id, its rank)); the abort hook aborts the job's
 * communicator; each NCCL call, and each MPI call of the bootstrap,
 * failed in turn is a clear error with nothing leaked. The same paths
 * under a real mpirun: tests/mpi/mpi_test.sh with nccl_driver. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/mpi.h"
#include "backends/nccl_api.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/diag.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/mpi/fake_mpi.h"
#include "tests/mpi/fake_nccl.h"

/* Loads `yaml` as rank `rank` of `nranks` and plans it; every rank has
 * local rank 0 (its own machine), so it runs on the fake's one device. */
static DrPlan *plan_as(const char *yaml, guint rank, guint nranks, DrGraph **graph) {
  dr__load_set_ranks(rank, nranks, 0);
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string("t.yaml", yaml, strlen(yaml), diags, &error);
  dr__load_set_ranks(0, 1, 0);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  DrPlan *plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  *graph = g;
  return plan;
}

static DrReport *run_cuda(const DrPlan *plan, gboolean verify, GError **error) {
  DrRunOptions o;
  dr_run_options_init(&o, plan->graph);
  o.backend = DR_BACKEND_CUDA;
  o.mode = DR_MODE_STREAMS;
  o.iterations = 2;
  o.warmup = 1;
  o.verify = verify;
  return dr_run(plan, &o, error);
}

static void fakes_on(void) {
  dr_fake_reset();
  dr_fake_set_run_twins(TRUE);
  dr_cuda_api_set(dr_fake_api());
  dr_fake_nccl_reset();
  dr_nccl_api_set(dr_fake_nccl_api());
}

static void fakes_off(void) {
  dr_nccl_api_set(NULL);
  dr_cuda_api_set(NULL);
  dr_fake_reset();
}

/* Three allreduces: g1 and g2 independent (ready together), g3 reading
 * what g1 wrote (after it); then each result downloaded and printed. */
static const char *const group_yaml =
    "dagrun: 1\n"
    "buffers:\n"
    "  a: {type: f32, count: 64, init: iota}\n"
    "  b: {type: f32, count: 64, init: iota}\n"
    "  c: {type: f32, count: 64}\n"
    "  h: {type: f32, count: 64, where: host}\n"
    "nodes:\n"
    "  g1: {op: allreduce, reduce: sum, buffers: a}\n"
    "  g2: {op: allreduce, reduce: max, buffers: b}\n"
    "  g3: {op: allreduce, reduce: sum, src: a, dst: c}\n"
    "  k: {op: kernel, kernel: axpy_f32, args: {alpha: 1.0, x: b, y: c}}\n"
    "  down: {op: copy, src: c, dst: h}\n";

/* Runs `plan` once with h saved to `path`: on the CUDA backend (fakes
 * on) or the host's. */
static void run_saving(DrPlan *plan, const char *path, gboolean cuda) {
  DrGraph *g = (DrGraph *)plan->graph;
  dr_graph_buffer(g, dr_graph_find_buffer(g, "h"))->save_path = dr_graph_intern(g, path);
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = cuda ? DR_BACKEND_CUDA : DR_BACKEND_HOST;
  o.mode = DR_MODE_STREAMS;
  o.iterations = 1;
  o.warmup = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
}

static void test_groups(void) {
  g_autoptr(DrGraph) g = NULL;
  g_autoptr(DrPlan) plan = plan_as(group_yaml, 0, 1, &g);
  /* The result is the host backend's, which runs no group: the fake runs
   * a group's collectives as if concurrently, so a group holding g1 and
   * g3 would give g3 the old a. */
  g_autofree char *dir = g_dir_make_tmp("drnccl-XXXXXX", NULL);
  g_autofree char *host_h = g_build_filename(dir, "host.bin", NULL);
  g_autofree char *cuda_h = g_build_filename(dir, "cuda.bin", NULL);
  run_saving(plan, host_h, FALSE);
  fakes_on();
  run_saving(plan, cuda_h, TRUE);
  g_autofree char *want = NULL, *got = NULL;
  gsize want_len = 0, got_len = 0;
  g_assert_true(g_file_get_contents(host_h, &want, &want_len, NULL));
  g_assert_true(g_file_get_contents(cuda_h, &got, &got_len, NULL));
  g_assert_cmpmem(got, got_len, want, want_len);
  g_unlink(host_h);
  g_unlink(cuda_h);
  g_rmdir(dir);
  dr_graph_buffer(g, dr_graph_find_buffer(g, "h"))->save_path = NULL;
  dr_fake_nccl_reset();
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = run_cuda(plan, TRUE, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  /* g1 and g2 in one group per iteration (3 iterations of the concurrent
   * run, 3 of the serial one); g3 alone. */
  const char *t = dr_fake_nccl.trace->str;
  g_test_message("trace: %s", t);
  g_assert_nonnull(strstr(t, "ncclGroupStart ncclAllReduce ncclAllReduce ncclGroupEnd ncclAllReduce"));
  g_assert_null(strstr(t, "ncclAllReduce ncclAllReduce ncclAllReduce"));
  g_assert_cmpuint(dr_fake_nccl.groups, ==, 6);
  g_assert_cmpint(dr_fake_nccl.live, ==, 0);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  fakes_off();
}

/* The data-parallel step's shape, per rank: four bucket allreduces of one
 * buffer each, and a host node that may stand for a failure elsewhere. */
static const char *const rank_yaml =
    "dagrun: 1\n"
    "buffers:\n"
    "  g: {type: f32, count: 256, init: iota}\n"
    "  t: {type: f32, count: 4, init: iota}\n"
    "  h: {type: f32, count: 256, where: host}\n"
    "nodes:\n"
    "  s{c}:\n"
    "    foreach: {c: 0..3}\n"
    "    op: kernel\n"
    "    kernel: scale_f32\n"
    "    args: {x: \"g[c*64:(c+1)*64]\", alpha: \"{rank + 1}\", y: \"g[c*64:(c+1)*64]\"}\n"
    "  ar{c}:\n"
    "    foreach: {c: 0..3}\n"
    "    op: allreduce\n"
    "    reduce: avg\n"
    "    buffers: \"g[c*64:(c+1)*64]\"\n"
    "  tot: {op: allreduce, reduce: sum, buffers: t}\n"
    "  down: {op: copy, src: g, dst: h}\n"
    "  hook: {op: host, fn: print, args: {message: hook}}\n";

static void test_bootstrap(void) {
  for (guint rank = 0; rank < 2; rank++) {
    g_autoptr(DrGraph) g = NULL;
    g_autoptr(DrPlan) plan = plan_as(rank_yaml, rank, 2, &g);
    fake_mpi_reset((int)rank, 2);
    dr__mpi_set_api(&fake_mpi_api);
    fakes_on();
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = run_cuda(plan, FALSE, &error);
    g_assert_no_error(error);
    /* Rank 0 alone made the id; the job's communicator: (2, id, rank). */
    g_assert_cmpuint(dr_fake_nccl.unique_ids, ==, rank == 0 ? 1 : 0);
    g_assert_cmpuint(dr_fake_nccl.init_ranks, ==, 1);
    g_assert_cmpint(dr_fake_nccl.init_nranks, ==, 2);
    g_assert_cmpint(dr_fake_nccl.init_rank, ==, (int)rank);
    if (rank == 0)
      g_assert_true(memcmp(&dr_fake_nccl.init_id, &dr_fake_nccl.made_id, sizeof(DrNcclUniqueId)) == 0);
    g_assert_null(strstr(dr_fake_nccl.trace->str, "ncclCommInitAll"));
    g_assert_cmpint(dr_fake_nccl.live, ==, 0);
    g_assert_cmpuint(dr_fake_nccl.aborts, ==, 0);
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
    fakes_off();
    dr__mpi_set_api(NULL);
  }
}

/* The abort hook, while the job's communicator lives: a host callback
 * that runs the hooks (as dr_ranks_abort does before MPI_Abort). */
static guint aborts_seen;
static void run_hooks(void *data) {
  dr__mpi_run_abort_hooks();
  aborts_seen = dr_fake_nccl.aborts;
}

static void test_abort_hook(void) {
  g_autoptr(DrGraph) g = NULL;
  g_autoptr(DrPlan) plan = plan_as(rank_yaml, 1, 2, &g);
  DrCallback cb = {run_hooks, NULL};
  g_array_append_val(g->callbacks, cb);
  dr_graph_node(g, dr_graph_find_node(g, "hook"))->callback = g->callbacks->len;
  fake_mpi_reset(1, 2);
  dr__mpi_set_api(&fake_mpi_api);
  fakes_on();
  aborts_seen = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = run_cuda(plan, FALSE, &error);
  /* The communicator is gone after the hook: the next collective fails
   * (a real job would be ending in MPI_Abort by then). */
  g_assert_cmpuint(aborts_seen, ==, 1);
  g_assert_null(r);
  g_assert_nonnull(strstr(error->message, "the NCCL communicator was aborted"));
  g_assert_cmpint(dr_fake_nccl.live, ==, 0);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  /* ...and after close no hook is left to run. */
  guint before = dr_fake_nccl.aborts;
  dr__mpi_run_abort_hooks();
  g_assert_cmpuint(dr_fake_nccl.aborts, ==, before);
  fakes_off();
  dr__mpi_set_api(NULL);
}

/* Each NCCL call of a job's run failed in turn (rank 0 of 2, with
 * --verify's second run): DR_ERROR_RUNTIME naming the call, exit 70 from
 * the CLI; a communicator made is aborted, nothing leaks. Then each MPI
 * call of the bootstrap (the status and the id broadcasts). */
static void test_faults(void) {
  g_autoptr(DrGraph) g = NULL;
  g_autoptr(DrPlan) plan = plan_as(rank_yaml, 0, 2, &g);
  fake_mpi_reset(0, 2);
  dr__mpi_set_api(&fake_mpi_api);
  fakes_on();
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = run_cuda(plan, TRUE, &error);
    g_assert_no_error(error);
  }
  guint64 total = dr_fake_nccl.calls;
  g_assert_cmpuint(total, >, 20);
  for (guint64 k = 1; k <= total; k++) {
    dr_fake_reset();
    dr_fake_set_run_twins(TRUE);
    dr_fake_nccl_reset();
    dr_fake_nccl.fail_at = k;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = run_cuda(plan, TRUE, &error);
    if (r != NULL) g_error("failing NCCL call %" G_GUINT64_FORMAT " went unnoticed", k);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    g_assert_cmpint(dr_error_exit_code(error), ==, 70);
    if (strstr(error->message, "failed: unhandled system error (fake) (NCCL error 2)") == NULL ||
        strstr(error->message, "nccl") == NULL)
      g_error("failing NCCL call %" G_GUINT64_FORMAT ": unclear message: %s", k, error->message);
    if (dr_fake_nccl.live != 0 || dr_fake_live_total() != 0)
      g_error("failing NCCL call %" G_GUINT64_FORMAT " (%s) leaked: communicators %" G_GINT64_FORMAT
              ", CUDA objects %u",
              k, error->message, dr_fake_nccl.live, dr_fake_live_total());
    /* A failure while a communicator lives aborts it, never destroys it. */
    const char *t = dr_fake_nccl.trace->str, *bang = strchr(t, '!');
    g_assert_nonnull(bang);
    g_autofree char *before = g_strndup(t, (gsize)(bang - t));
    g_auto(GStrv) calls = g_strsplit(before, " ", -1);
    int live = 0;
    for (guint c = 0; calls[c] != NULL && calls[c + 1] != NULL; c++) /* the last is the failed one */
      live += g_str_equal(calls[c], "ncclCommInitRank")                                              ? 1
              : g_str_has_prefix(calls[c], "ncclComm") && !g_str_equal(calls[c], "ncclCommInitRank") ? -1
                                                                                                     : 0;
    if (live > 0 && (strstr(bang, "ncclCommAbort") == NULL || strstr(bang, "ncclCommDestroy") != NULL))
      g_error("failing NCCL call %" G_GUINT64_FORMAT " with a communicator live: not aborted: %s", k, t);
    g_assert_cmpint(dr_fake_nccl.depth, ==, 0); /* every group opened was closed */
  }
  g_test_message("%" G_GUINT64_FORMAT " NCCL calls failed in turn, all reported, nothing leaked", total);
  /* The bootstrap's two broadcasts come after the collectives check's one
   * allgather: MPI calls 2 and 3 of the run. */
  for (guint n = 2; n <= 3; n++) {
    fake_mpi_reset(0, 2);
    dr__mpi_set_api(&fake_mpi_api);
    dr_fake_reset();
    dr_fake_nccl_reset();
    fake_mpi_fail_at(n);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = run_cuda(plan, FALSE, &error);
    g_assert_null(r);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    if (strstr(error->message, "NCCL bootstrap: MPI_Bcast failed on rank 0") == NULL)
      g_error("MPI call %u: unexpected message: %s", n, error->message);
    g_assert_cmpuint(dr_fake_nccl.init_ranks, ==, 0);
    g_assert_cmpint(dr_fake_nccl.live, ==, 0);
    g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  }
  fakes_off();
  dr__mpi_set_api(NULL);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/mpi/nccl/groups", test_groups);
  g_test_add_func("/mpi/nccl/bootstrap", test_bootstrap);
  g_test_add_func("/mpi/nccl/abort-hook", test_abort_hook);
  g_test_add_func("/mpi/nccl/faults", test_faults);
  return g_test_run();
}
