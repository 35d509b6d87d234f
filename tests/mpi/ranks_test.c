/* ranks_test.c: the MPI layer without mpirun: the rank variables and
 * `rank:` in the parser, the merged report of several ranks, and, on a
 * fake MPI table (fake_mpi.c), the rank protocol (agree, gather), the
 * collectives check and the collectives across ranks of the host backend,
 * each MPI call failed in turn. The same paths under a real mpirun are
 * tests/mpi/mpi_test.sh's. */
#include <glib.h>
#include <string.h>

#include "backends/mpi.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/diag.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/mpi/fake_mpi.h"

/* Loads `yaml` as rank `rank` of `nranks`; NULL and *msg on errors. */
static DrGraph *load_as(const char *yaml, guint rank, guint nranks, char **msg) {
  dr__load_set_ranks(rank, nranks, rank % 2);
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string("t.yaml", yaml, strlen(yaml), diags, &error);
  dr__load_set_ranks(0, 1, 0);
  if (g == NULL && msg) *msg = g_strdup(error->message);
  return g;
}

static const char *const ranks_yaml =
    "dagrun: 1\n"
    "buffers:\n"
    "  x: {type: f32, count: 64, init: iota}\n"
    "  y: {type: f32, count: 64}\n"
    "nodes:\n"
    "  s{rank}_of_{nranks}_{local_rank}:\n"
    "    op: kernel\n"
    "    kernel: scale_f32\n"
    "    args: {x: \"x[rank*8:rank*8+8]\", alpha: \"{rank + 1}\", y: \"y[rank*8:rank*8+8]\"}\n"
    "  tail:\n"
    "    op: noop\n"
    "    rank: \"{nranks - 1}\"\n"
    "  mid:\n"
    "    op: noop\n"
    "    rank: [0, \"2..nranks-2\"]\n"
    "    after: [tail]\n"
    "  per{r}:\n"
    "    foreach: {r: 0..nranks-1}\n"
    "    op: noop\n"
    "    rank: r\n"
    "    after: [\"mid*\"]\n";

static void test_parse_variables(void) {
  for (guint rank = 0; rank < 5; rank++) {
    g_autofree char *msg = NULL;
    g_autoptr(DrGraph) g = load_as(ranks_yaml, rank, 5, &msg);
    g_assert_null(msg);
    g_assert_nonnull(g);
    g_autofree char *s = g_strdup_printf("s%u_of_5_%u", rank, rank % 2);
    g_assert_cmpuint(dr_graph_find_node(g, s), !=, DR_NONE);
    g_autofree char *per = g_strdup_printf("per%u", rank);
    g_assert_cmpuint(dr_graph_find_node(g, per), !=, DR_NONE);
    g_assert_cmpuint(dr_graph_find_node(g, "tail") != DR_NONE, ==, rank == 4);
    g_assert_cmpuint(dr_graph_find_node(g, "mid") != DR_NONE, ==, rank == 0 || (rank >= 2 && rank <= 3));
    /* One kernel, one per, and tail/mid where kept. */
    g_assert_cmpuint(dr_graph_n_nodes(g), ==, 2 + (rank == 4) + (rank == 0 || (rank >= 2 && rank <= 3)));
    g_assert_cmpuint(g->rank, ==, rank);
    g_assert_cmpuint(g->run.nranks, ==, 5);
  }
}

static void test_parse_single(void) {
  /* No job: rank 0 of 1, the default every load sees. */
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_load_string("t.yaml", ranks_yaml, strlen(ranks_yaml), diags, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(dr_graph_find_node(g, "s0_of_1_0"), !=, DR_NONE);
  g_assert_cmpuint(dr_graph_find_node(g, "tail"), !=, DR_NONE); /* nranks - 1 = 0 */
  g_assert_cmpuint(dr_graph_find_node(g, "mid"), !=, DR_NONE);
}

static void expect_error(const char *yaml, const char *want) {
  g_autofree char *msg = NULL;
  g_autoptr(DrGraph) g = load_as(yaml, 1, 4, &msg);
  g_assert_null(g);
  if (strstr(msg, want) == NULL) g_error("expected '%s' in: %s", want, msg);
}

static void test_parse_errors(void) {
  expect_error("dagrun: 1\nnodes:\n  a: {op: noop, rank: []}\n",
               "t.yaml:3:23: error: node 'a', key 'rank': an empty list names no rank");
  expect_error("dagrun: 1\nnodes:\n  a: {op: noop, rank: \"rank + nodes\"}\n",
               "t.yaml:3:23: error: node 'a', key 'rank': unknown loop variable 'nodes'");
  expect_error("dagrun: 1\nnodes:\n  a: {op: noop, rank: {x: 1}}\n",
               "t.yaml:3:23: error: node 'a', key 'rank'");
  /* An after: on a node that exists on no rank is still an error. */
  expect_error("dagrun: 1\nnodes:\n  a: {op: noop, after: [b]}\n", "unknown node 'b'");
}

static char *report_text(const char *name, DrVerified v) {
  g_autoptr(GString) s = g_string_new(NULL);
  g_string_append_printf(s, "%s: backend host, mode streams, 1 iterations (0 warmup)\n", name);
  g_string_append(s, "node op     stream\nk0   kernel      0\nk1   copy        1\n");
  g_string_append(s, "makespan_us: median 1.0, min 1.0, max 1.0\n");
  g_string_append_printf(s, "verify: %s\n",
                         v == DR_VERIFIED_PASS   ? "passed"
                         : v == DR_VERIFIED_FAIL ? "FAILED: buffer 'y'"
                                                 : "not run");
  return g_string_free(g_steal_pointer(&s), FALSE);
}

static void test_merge_text(void) {
  char *reports[] = {report_text("p", DR_VERIFIED_PASS), report_text("p", DR_VERIFIED_FAIL),
                     report_text("p", DR_VERIFIED_PASS), NULL};
  g_autoptr(GString) out = g_string_new(NULL);
  dr_run_report_merge_ranks(reports, 3, FALSE, out);
  const char *want =
      "rank 0: p: backend host, mode streams, 1 iterations (0 warmup)\n"
      "rank 1: p: backend host, mode streams, 1 iterations (0 warmup)\n"
      "rank 2: p: backend host, mode streams, 1 iterations (0 warmup)\n"
      "rank node op     stream\n"
      "0    k0   kernel      0\n"
      "0    k1   copy        1\n"
      "1    k0   kernel      0\n"
      "1    k1   copy        1\n"
      "2    k0   kernel      0\n"
      "2    k1   copy        1\n"
      "rank 0: makespan_us: median 1.0, min 1.0, max 1.0\n"
      "rank 0: verify: passed\n"
      "rank 1: makespan_us: median 1.0, min 1.0, max 1.0\n"
      "rank 1: verify: FAILED: buffer 'y'\n"
      "rank 2: makespan_us: median 1.0, min 1.0, max 1.0\n"
      "rank 2: verify: passed\n"
      "verify (3 ranks): FAILED on rank 1\n";
  g_assert_cmpstr(out->str, ==, want);
  for (int i = 0; i < 3; i++) g_free(reports[i]);
}

static void test_merge_json(void) {
  char *reports[] = {g_strdup("{\"schema\": 1, \"name\": \"p\", \"verified\": true}\n"),
                     g_strdup("{\"schema\": 1, \"name\": \"p\", \"verified\": true}"), NULL};
  g_autoptr(GString) out = g_string_new(NULL);
  dr_run_report_merge_ranks(reports, 2, TRUE, out);
  g_assert_cmpstr(
      out->str, ==,
      "{\"schema\": 1, \"nranks\": 2, \"verified\": true, \"failed_ranks\": [], \"ranks\": [{\"rank\": "
      "0, \"schema\": 1, \"name\": \"p\", \"verified\": true}, {\"rank\": 1, \"schema\": 1, \"name\": "
      "\"p\", \"verified\": true}]}\n");
  g_free(reports[1]);
  reports[1] = g_strdup("{\"schema\": 1, \"name\": \"p\", \"verified\": false}");
  g_string_truncate(out, 0);
  dr_run_report_merge_ranks(reports, 2, TRUE, out);
  g_assert_nonnull(strstr(out->str, "\"verified\": false, \"failed_ranks\": [1]"));
  g_free(reports[0]);
  g_free(reports[1]);
}

/* ---- on the fake MPI table ------------------------------------------------- */

static void test_fake_protocol(void) {
  fake_mpi_reset(0, 3);
  dr__mpi_set_api(&fake_mpi_api);
  g_assert_cmpuint(dr_ranks_size(), ==, 3);
  g_assert_cmpuint(dr_ranks_rank(), ==, 0);
  g_assert_cmpint(dr_ranks_agree(65), ==, 65);
  g_auto(GStrv) all = dr_ranks_gather("hello");
  g_assert_nonnull(all);
  g_assert_cmpuint(g_strv_length(all), ==, 3);
  g_assert_cmpstr(all[2], ==, "hello");
  dr__mpi_set_api(NULL);
  g_assert_cmpuint(dr_ranks_size(), ==, 1);
  /* Not rank 0: nothing gathered here. */
  fake_mpi_reset(1, 2);
  dr__mpi_set_api(&fake_mpi_api);
  g_assert_null(dr_ranks_gather("x"));
  dr__mpi_set_api(NULL);
}

static void test_fake_join_fails(void) {
  /* MPI_Init failing: the first call. */
  fake_mpi_reset(0, 2);
  fake_mpi_fail_at(1);
  dr__mpi_set_api(&fake_mpi_api);
  g_assert_null(dr__mpi_world()->api);
  dr__mpi_set_api(NULL);
}

static int make_id(void *id) {
  memset(id, 0x5a, 128);
  return 0;
}

static int make_id_fails(void *id) { return 3; }

static int hook_calls;
static void hook(void *data) { hook_calls += GPOINTER_TO_INT(data); }

static void test_fake_nccl_bootstrap(void) {
  fake_mpi_reset(0, 4);
  dr__mpi_set_api(&fake_mpi_api);
  guint8 id[128] = {0};
  g_autoptr(GError) error = NULL;
  g_assert_true(dr__mpi_share_nccl_id(make_id, id, sizeof id, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(id[127], ==, 0x5a);
  g_assert_false(dr__mpi_share_nccl_id(make_id_fails, id, sizeof id, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_clear_error(&error);
  /* Each MPI call of the bootstrap failing in turn. */
  for (guint n = 1; n <= 2; n++) {
    fake_mpi_fail_at(n);
    g_assert_false(dr__mpi_share_nccl_id(make_id, id, sizeof id, &error));
    g_assert_nonnull(strstr(error->message, "MPI_Bcast failed on rank 0: fake MPI error"));
    g_clear_error(&error);
  }
  fake_mpi_fail_at(0);
  /* The abort hooks run latest first; unregistered ones do not. */
  hook_calls = 0;
  dr__mpi_register_abort(hook, GINT_TO_POINTER(1));
  dr__mpi_register_abort(hook, GINT_TO_POINTER(10));
  dr__mpi_unregister_abort(hook, GINT_TO_POINTER(1));
  dr__mpi_run_abort_hooks();
  g_assert_cmpint(hook_calls, ==, 10);
  dr__mpi_unregister_abort(hook, GINT_TO_POINTER(10));
  dr__mpi_set_api(NULL);
}

/* ---- collectives across ranks on the fake table ------------------------ */

static const char *const coll_yaml =
    "dagrun: 1\n"
    "run: {iterations: 2, warmup: 0}\n"
    "buffers:\n"
    "  a: {type: f32, count: 8, init: iota}\n"
    "  b: {type: f32, count: 8}\n"
    "  g: {type: f32, count: 16}\n"
    "  r: {type: f32, count: 8}\n"
    "nodes:\n"
    "  sum: {op: allreduce, reduce: sum, src: a, dst: b}\n"
    "  bc: {op: broadcast, src: a, dst: r, root: 1}\n"
    "  ag: {op: allgather, src: a, dst: g}\n"
    "  tx: {op: send, src: a, peer: 1}\n"
    "  rx: {op: recv, dst: r, peer: 1}\n";

/* Runs coll_yaml as rank 0 of 2 on the fake table (already set); the
 * report, or NULL with *error. */
static DrReport *run_coll(GError **error) {
  g_autoptr(DrGraph) g = load_as(coll_yaml, 0, 2, NULL);
  g_assert_nonnull(g);
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, error);
  g_assert_nonnull(plan);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.backend = DR_BACKEND_HOST;
  opts.verify = TRUE;
  return dr_run(plan, &opts, error);
}

static void test_fake_collectives(void) {
  fake_mpi_reset(0, 2);
  dr__mpi_set_api(&fake_mpi_api);
  guint64 before = fake_mpi_calls();
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) report = run_coll(&error);
  g_assert_no_error(error);
  g_assert_cmpint(report->verified, ==, DR_VERIFIED_PASS);
  /* Every communicator freed, every send waited for. */
  g_assert_cmpint(fake_mpi_open_comms(), ==, 0);
  g_assert_cmpint(fake_mpi_pending_sends(), ==, 0);
  /* The chain in file order: rank 0's plan orders its collectives. */
  g_autoptr(DrGraph) g = load_as(coll_yaml, 0, 2, NULL);
  g_assert_cmpuint(g->afters->len, ==, 4);
  g_assert_cmpuint(fake_mpi_calls() - before, >, 10);
  dr__mpi_set_api(NULL);
}

/* Each MPI call before the first iteration (the collectives check and the
 * communicators of both runs' setup) failed in turn: a GError naming the
 * call, every communicator freed. */
static void test_fake_collectives_fail_setup(void) {
  /* check (1 allgather) + setup (1 + 3 comm dups) = the first 5 calls. */
  for (guint n = 1; n <= 5; n++) {
    fake_mpi_reset(0, 2);
    dr__mpi_set_api(&fake_mpi_api);
    fake_mpi_fail_at(n);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) report = run_coll(&error);
    g_assert_null(report);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    if (strstr(error->message, "failed on rank 0: fake MPI error (17)") == NULL)
      g_error("call %u: unexpected message: %s", n, error->message);
    g_assert_nonnull(strstr(error->message, n == 1 ? "MPI_Allgather" : "MPI_Comm_dup"));
    g_assert_cmpint(fake_mpi_open_comms(), ==, 0);
    dr__mpi_set_api(NULL);
  }
}

/* A call failing while running ends the job (the other ranks may wait in
 * a collective): exit 70 with the node and call named. */
static void test_fake_collectives_fail_run(void) {
  for (guint n = 6; n <= 9; n++) {
    if (g_test_subprocess()) {
      const char *which = g_getenv("FAKE_MPI_FAIL_AT");
      fake_mpi_reset(0, 2);
      dr__mpi_set_api(&fake_mpi_api);
      fake_mpi_fail_at((guint64)g_ascii_strtoull(which, NULL, 10));
      g_autoptr(GError) error = NULL;
      g_autoptr(DrReport) report = run_coll(&error);
      return; /* not reached */
    }
    g_autofree char *v = g_strdup_printf("%u", n);
    g_setenv("FAKE_MPI_FAIL_AT", v, TRUE);
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDIN);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr(
        "*dagrun: error: node '*': MPI_* failed on rank 0: fake MPI error (17)*ending every rank*");
  }
}

static void test_fake_collectives_mismatch(void) {
  fake_mpi_reset(0, 2);
  dr__mpi_set_api(&fake_mpi_api);
  fake_mpi_other_fingerprint(TRUE);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) report = run_coll(&error);
  g_assert_null(report);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  /* Located at a collective of this rank (file:line:col). */
  if (!g_str_has_prefix(error->message, "t.yaml:") || strstr(error->message, ": error: collective") == NULL)
    g_error("unexpected: %s", error->message);
  g_assert_cmpint(fake_mpi_open_comms(), ==, 0);
  dr__mpi_set_api(NULL);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/mpi/parse/variables", test_parse_variables);
  g_test_add_func("/mpi/parse/single-process", test_parse_single);
  g_test_add_func("/mpi/parse/errors", test_parse_errors);
  g_test_add_func("/mpi/report/merge-text", test_merge_text);
  g_test_add_func("/mpi/report/merge-json", test_merge_json);
  g_test_add_func("/mpi/fake/protocol", test_fake_protocol);
  g_test_add_func("/mpi/fake/join-fails", test_fake_join_fails);
  g_test_add_func("/mpi/fake/nccl-bootstrap", test_fake_nccl_bootstrap);
  g_test_add_func("/mpi/fake/collectives", test_fake_collectives);
  g_test_add_func("/mpi/fake/collectives-fail-setup", test_fake_collectives_fail_setup);
  g_test_add_func("/mpi/fake/collectives-fail-run", test_fake_collectives_fail_run);
  g_test_add_func("/mpi/fake/collectives-mismatch", test_fake_collectives_mismatch);
  return g_test_run();
}
