/* main.c: the dagrun executable: runs the command line (cli.c) and writes
 * its output to stdout and its diagnostics to stderr. */
#include <stdio.h>

#include "cli/cli.h"

int main(int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  int rc = dr__cli_run_stdout(argc, argv, stdout, out, err);
  fwrite(out->str, 1, out->len, stdout);
  fflush(stdout);
  fwrite(err->str, 1, err->len, stderr);
  return rc;
}
