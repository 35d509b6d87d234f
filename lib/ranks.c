/* ranks.c: the public library's MPI job (dagrun.h, "ranks"): joining it,
 * the two small collectives the command line's protocol needs (agree on
 * an exit code, gather texts to rank 0), aborting every rank, and the
 * merged run report. Every call goes through the MPI table of
 * backends/mpi.h; without a launcher there is no table and each function
 * is its single-process self. It does not decide what a rank runs: the
 * parser's `rank:` and the plan do. */
#include <string.h>

#include "backends/mpi.h"
#include "lib/api_internal.h"
#include "lib/load.h"
#include "report/report.h"

gboolean dr_ranks_join(GError **error) {
  const DrMpiWorld *w = dr__mpi_join(error);
  if (w == NULL) return FALSE;
  dr__load_set_ranks(w->rank, w->size, w->local_rank);
  return TRUE;
}

guint dr_ranks_rank(void) { return dr__mpi_world()->rank; }
guint dr_ranks_size(void) { return dr__mpi_world()->size; }
guint dr_ranks_local_rank(void) { return dr__mpi_world()->local_rank; }

/* A failed collective of the protocol itself: nothing sensible is left
 * but to end every rank. */
static G_NORETURN void protocol_failed(int rc, const char *call) {
  g_autoptr(GError) error = NULL;
  dr__mpi_fail(rc, "dagrun", call, &error);
  g_printerr("%s\n", error->message);
  dr_ranks_abort(70);
}

int dr_ranks_agree(int code) {
  const DrMpiWorld *w = dr__mpi_world();
  if (w->api == NULL || w->size <= 1) return code;
  gint32 v = code;
  int rc = w->api->allreduce(&v, &v, 1, DR_ELEM_I32, DR_MPI_REDUCE_MAX, 0);
  if (rc != 0) protocol_failed(rc, "MPI_Allreduce");
  return v;
}

char **dr_ranks_gather(const char *text) {
  g_return_val_if_fail(text != NULL, NULL);
  const DrMpiWorld *w = dr__mpi_world();
  if (w->api == NULL || w->size <= 1) {
    char **one = g_new0(char *, 2);
    one[0] = g_strdup(text);
    return one;
  }
  gsize len = strlen(text);
  if (len > G_MAXINT32) len = G_MAXINT32;
  gint32 mine = (gint32)len;
  g_autofree gint32 *lens = g_new0(gint32, w->size);
  int rc = w->api->allgather(&mine, lens, sizeof mine, 0);
  if (rc != 0) protocol_failed(rc, "MPI_Allgather");
  g_autofree int *counts = g_new0(int, w->size);
  g_autofree int *displs = g_new0(int, w->size);
  guint64 total = 0;
  for (guint r = 0; r < w->size; r++) {
    counts[r] = lens[r];
    displs[r] = (int)MIN(total, (guint64)G_MAXINT32);
    total += (guint64)lens[r];
  }
  if (total > G_MAXINT32) protocol_failed(-1, "MPI_Gatherv (reports over 2 GiB)");
  g_autofree char *all = w->rank == 0 ? g_malloc(total + 1) : NULL;
  rc = w->api->gatherv(text, mine, all, w->rank == 0 ? counts : NULL, w->rank == 0 ? displs : NULL, 0, 0);
  if (rc != 0) protocol_failed(rc, "MPI_Gatherv");
  if (w->rank != 0) return NULL;
  char **out = g_new0(char *, w->size + 1);
  for (guint r = 0; r < w->size; r++) out[r] = g_strndup(all + displs[r], (gsize)counts[r]);
  return out;
}

void dr_ranks_abort(int code) { dr__mpi_abort_job(code); }

void dr_ranks_leave(void) { dr__mpi_leave(); }

void dr_run_report_merge_ranks(char *const *reports, guint n, gboolean json, GString *out) {
  g_return_if_fail(reports != NULL && out != NULL);
  dr_report_merge_ranks(reports, n, json, out);
}
