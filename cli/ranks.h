/* ranks.h: the command line's side of an MPI job (cli/ranks.c): the
 * protocol every rank follows so that one rank's failure never leaves the
 * others waiting, and rank 0's one report for all. Single process: every
 * function is a no-op that returns what it was given. */
#ifndef DAGRUN_CLI_RANKS_H
#define DAGRUN_CLI_RANKS_H

#include <glib.h>

G_BEGIN_DECLS

/* Before running: every rank passes the exit code it has so far (0: ready
 * to run); returns the largest over the ranks, so that all run or none
 * does. Called once per process, by run() or by dr__cli_ranks_finish. */
int dr__cli_ranks_ready(int code);

/* A run failed on this rank with exit code `code`, its message in `err`:
 * other ranks may be waiting in a collective for it, so `err` is printed
 * and every rank is ended with exit status 70 (MPI_Abort). Returns for a
 * single process, and for 65: the collectives check before the first
 * iteration, which fails on every rank alike. */
void dr__cli_ranks_run_failed(GString *err, int code);

/* After the command: makes the exit code the same on every rank (the
 * largest) and rank 0's `out` the one output: the run reports of every
 * rank merged (`ran`: `out` holds a run report, `json` its format), or
 * each rank's output under a "== rank R ==" line. Other ranks' `out` is
 * emptied. Returns the exit code. */
int dr__cli_ranks_finish(int rc, gboolean ran, gboolean json, GString *out);

/* The file a rank writes for output `path` (--trace, --timeline): in a
 * job of several ranks "DIR/NAME.rankR.EXT" ("NAME.rankR" without an
 * extension), so the ranks never write one file; `path` itself in a single
 * process and for "-" (standard output). Newly allocated. */
char *dr__cli_ranks_path(const char *path);

G_END_DECLS

#endif
