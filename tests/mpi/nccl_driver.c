/* nccl_driver.c: a test program for mpirun: dagrun's CUDA backend across
 * the ranks of a real MPI job, on the fake CUDA runtime (tests/fault) and
 * the fake NCCL (fake_nccl.c, whose data moves through the job's MPI), so
 * the bootstrap and the multi-rank NCCL paths run on a machine without a
 * GPU. It does what the command line does for one pipeline (join the job,
 * load and plan for this rank, agree, run, abort every rank on a failure,
 * agree on the exit code) and prints what the NCCL table saw:
 *
 *   nccl rank R of N: made id HEX          (rank 0: each ncclGetUniqueId)
 *   nccl rank R of N: init_rank nranks=N rank=R id=HEX uids=K groups=G calls=C
 *   nccl rank R of N: groups=G calls=C     (no job: one process)
 *   rank R: verify passed | failed | not run
 *
 * Usage: nccl_driver [--verify] [--iterations=N] [--warmup=N] PIPELINE. The
 * environment's FAKE_NCCL_FAIL_RANK and FAKE_NCCL_FAIL_AT fail that
 * rank's Nth NCCL call. Exit codes as dagrun's (65, 70, 1); 2 when
 * something was left live at the end. tests/mpi/mpi_test.sh runs it. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
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
#include "tests/mpi/fake_nccl.h"

static G_NORETURN void fail_run(const char *msg) {
  fprintf(stderr, "dagrun: error: %s\n", msg);
  fprintf(stderr, "dagrun: rank %u of %u failed; ending every rank\n", dr_ranks_rank(), dr_ranks_size());
  dr_ranks_abort(70);
}

int main(int argc, char **argv) {
  gboolean verify = FALSE;
  guint iterations = 0;
  gint warmup = -1;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--verify") == 0)
      verify = TRUE;
    else if (g_str_has_prefix(argv[i], "--iterations="))
      iterations = (guint)atoi(argv[i] + 13);
    else if (g_str_has_prefix(argv[i], "--warmup="))
      warmup = atoi(argv[i] + 9);
    else
      path = argv[i];
  }
  if (path == NULL) {
    fprintf(stderr, "usage: nccl_driver [--verify] [--iterations=N] [--warmup=N] PIPELINE\n");
    return 64;
  }
  g_autoptr(GError) error = NULL;
  if (!dr_ranks_join(&error)) {
    fprintf(stderr, "%s\n", error->message);
    return 69;
  }
  guint rank = dr_ranks_rank(), size = dr_ranks_size();
  /* The fake runtime has one device per process: every rank plays the
   * only rank of its machine (local rank 0, device 0). */
  dr__load_set_ranks(rank, size, 0);
  dr_fake_reset();
  dr_fake_set_run_twins(TRUE);
  dr_cuda_api_set(dr_fake_api());
  dr_fake_nccl_reset();
  const char *fr = g_getenv("FAKE_NCCL_FAIL_RANK"), *fa = g_getenv("FAKE_NCCL_FAIL_AT");
  if (fr && fa && (guint)atoi(fr) == rank) dr_fake_nccl.fail_at = g_ascii_strtoull(fa, NULL, 10);
  dr_nccl_api_set(dr_fake_nccl_api());

  int code = 0;
  g_autoptr(DrDiags) diags = dr_diags_new(20);
  g_autoptr(DrGraph) g = dr_load_file(path, diags, &error);
  g_autoptr(DrPlan) plan = g ? dr_plan_build(g, NULL, &error) : NULL;
  if (plan == NULL) {
    fprintf(stderr, "%s\n", error ? error->message : "load failed");
    code = error ? dr_error_exit_code(error) : 65;
  }
  code = dr_ranks_agree(code);
  if (code != 0) return code;
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = DR_BACKEND_CUDA;
  o.mode = DR_MODE_STREAMS;
  o.verify = verify;
  if (iterations) o.iterations = iterations;
  if (warmup >= 0) o.warmup = (guint32)warmup;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  if (r == NULL) {
    if (dr_error_exit_code(error) == 65) {
      /* the collectives check: every rank failed alike */
      fprintf(stderr, "%s\n", error->message);
      return dr_ranks_agree(65);
    }
    fail_run(error->message);
  }
  const DrFakeNccl *f = &dr_fake_nccl;
  if (rank == 0 && f->unique_ids > 0)
    printf("nccl rank %u of %u: made id %s\n", rank, size, dr_fake_nccl_id_hex(&f->made_id));
  if (f->init_ranks > 0)
    printf("nccl rank %u of %u: init_rank nranks=%d rank=%d id=%s uids=%u groups=%u calls=%" G_GUINT64_FORMAT
           "\n",
           rank, size, f->init_nranks, f->init_rank, dr_fake_nccl_id_hex(&f->init_id), f->unique_ids,
           f->groups, f->calls);
  if (f->init_ranks == 0)
    printf("nccl rank %u of %u: groups=%u calls=%" G_GUINT64_FORMAT "\n", rank, size, f->groups, f->calls);
  printf("rank %u: verify %s\n", rank,
         r->verified == DR_VERIFIED_PASS   ? "passed"
         : r->verified == DR_VERIFIED_FAIL ? "failed"
                                           : "not run");
  if (r->verified == DR_VERIFIED_FAIL) code = 1;
  if (f->live != 0 || dr_fake_live_total() != 0) {
    printf("rank %u: left live: %" G_GINT64_FORMAT " communicators, %u CUDA objects\n", rank, f->live,
           dr_fake_live_total());
    code = 2;
  }
  fflush(stdout);
  code = dr_ranks_agree(code);
  dr_nccl_api_set(NULL);
  dr_cuda_api_set(NULL);
  dr_ranks_leave();
  return code;
}
