/* main.c: the dagrun executable: joins the MPI job when mpirun started it
 * (lib/ranks.c), runs the command line (cli.c) and writes its output to
 * stdout and its diagnostics to stderr. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "include/dagrun/dagrun.h"

/* The library reports through g_log (domain "dagrun", include/dagrun/
 * dagrun.h); the command line shows its warnings and notices as one
 * "dagrun: ..." line each on stderr, the way its own diagnostics read. */
static void log_line(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {
  fprintf(stderr, "dagrun: %s%s\n", (level & G_LOG_LEVEL_WARNING) ? "warning: " : "", message);
}

int main(int argc, char **argv) {
  g_log_set_handler("dagrun", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, log_line, NULL);
  /* Debug lines (G_MESSAGES_DEBUG=all) to stderr too: GLib's default writes
   * them to stdout, into --format=json's reports. */
  g_log_writer_default_set_use_stderr(TRUE);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  /* Under mpirun, join the job before anything else: the pipeline's
   * `rank` and `nranks` are known from the first line parsed. */
  g_autoptr(GError) error = NULL;
  if (!dr_ranks_join(&error)) {
    fprintf(stderr, "%s\n", error->message);
    return dr_error_exit_code(error);
  }
  int rc = dr__cli_run_stdout(argc, argv, stdout, out, err);
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
