/* main.c: the dagrun executable: runs the command line (cli.c) and writes
 * its output to stdout and its diagnostics to stderr. */
#include <stdio.h>

#include "cli/cli.h"

/* The library reports through g_log (domain "dagrun", include/dagrun/
 * dagrun.h); the command line shows its warnings and notices as one
 * "dagrun: ..." line each on stderr, the way its own diagnostics read. */
static void log_line(const char *domain, GLogLevelFlags level, const char *message, gpointer data) {
  fprintf(stderr, "dagrun: %s%s\n", (level & G_LOG_LEVEL_WARNING) ? "warning: " : "", message);
}

int main(int argc, char **argv) {
  g_log_set_handler("dagrun", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, log_line, NULL);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  int rc = dr__cli_run_stdout(argc, argv, stdout, out, err);
  fwrite(out->str, 1, out->len, stdout);
  fflush(stdout);
  fwrite(err->str, 1, err->len, stderr);
  return rc;
}
