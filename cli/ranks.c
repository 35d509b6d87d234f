/* ranks.c: the command line under mpirun (ranks.h). Every rank runs the
 * same command on the same pipeline; three collectives keep them in step:
 * one agreement before running (a rank that failed to load or plan stops
 * all of them, with its exit code), one gather of the outputs to rank 0
 * after, and one agreement on the exit code. A failure while running ends
 * every rank at once (dr_ranks_abort), since the others may be inside a
 * collective that the failed rank will never join. */
#include "cli/ranks.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "include/dagrun/dagrun.h"

static gboolean ready_done;

/* The launcher ends the surviving ranks with SIGTERM when one rank died
 * (Open MPI's mpirun does): each then says so and exits 70, "a rank that
 * died" (decisions.md), rather than as killed. Async-signal-safe. */
static void on_sigterm(int sig) {
  static const char msg[] = "dagrun: ended by the MPI launcher: another rank failed or died\n";
  ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)n;
  _exit(70);
}

int dr__cli_ranks_ready(int code) {
  if (dr_ranks_size() <= 1) return code;
  if (!ready_done) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
  }
  ready_done = TRUE;
  return dr_ranks_agree(code);
}

void dr__cli_ranks_run_failed(GString *err, int code) {
  /* 65 from a run: the collectives check, which every rank failed alike. */
  if (dr_ranks_size() <= 1 || code == 65) return;
  fwrite(err->str, 1, err->len, stderr);
  fprintf(stderr, "dagrun: rank %u of %u failed; ending every rank\n", dr_ranks_rank(), dr_ranks_size());
  dr_ranks_abort(70);
}

int dr__cli_ranks_finish(int rc, gboolean ran, gboolean json, GString *out) {
  if (dr_ranks_size() <= 1) return rc;
  if (!ready_done) rc = dr__cli_ranks_ready(rc);
  g_auto(GStrv) all = dr_ranks_gather(out->str);
  g_string_truncate(out, 0);
  if (all != NULL) {
    guint n = g_strv_length(all);
    if (ran) {
      dr_run_report_merge_ranks(all, n, json, out);
    } else {
      for (guint r = 0; r < n; r++)
        if (all[r][0] != '\0') g_string_append_printf(out, "== rank %u ==\n%s", r, all[r]);
    }
  }
  return dr_ranks_agree(rc);
}

char *dr__cli_ranks_path(const char *path) {
  if (dr_ranks_size() <= 1 || strcmp(path, "-") == 0) return g_strdup(path);
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  if (dot == NULL || dot == (slash ? slash + 1 : path))
    return g_strdup_printf("%s.rank%u", path, dr_ranks_rank());
  return g_strdup_printf("%.*s.rank%u%s", (int)(dot - path), path, dr_ranks_rank(), dot);
}
