/* main.c: the dagrun executable: joins the MPI job when mpirun started it
 * (lib/ranks.c), runs the command line (cli.c) and writes its output to
 * stdout and its diagnostics to stderr. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "include/dagrun/dagrun.h"

int main(int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  /* Under mpirun, join the job before anything else: the pipeline's
   * `rank` and `nranks` are known from the first line parsed. */
  g_autoptr(GError) error = NULL;
  if (!dr_ranks_join(&error)) {
    fprintf(stderr, "%s\n", error->message);
    return dr_error_exit_code(error);
  }
  int rc = dr__cli_run(argc, argv, out, err);
  /* One write where the pipe allows: under mpirun, output is forwarded in
   * the chunks it was written in, and other ranks' lines could otherwise
   * land inside a line of the report. */
  fflush(stdout);
  for (gsize done = 0; done < out->len;) {
    ssize_t n = write(STDOUT_FILENO, out->str + done, out->len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += (gsize)n;
  }
  fwrite(err->str, 1, err->len, stderr);
  fflush(stderr);
  dr_ranks_leave();
  return rc;
}
