/* cli.h: the dagrun command line as a function, so the golden tests run
 * exactly what the binary runs, in-process. */
#ifndef DAGRUN_CLI_CLI_H
#define DAGRUN_CLI_CLI_H

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

/* Runs `dagrun ARGS...` (argv[0] is the program name; argv is not kept).
 * Appends what the program writes on stdout to `out` and on stderr to
 * `err`, and returns the exit code the spec assigns (0, 1, 64, 65, 66, 69,
 * 70). --help prints GLib's help to stdout and exits the process. */
int dr__cli_run(int argc, char **argv, GString *out, GString *err);

/* dr__cli_run for the executable: `stdout_file` (NULL: none) is the real
 * stdout, and outputs too big to build in memory (--plan --format=json)
 * are streamed to it, after what `out` holds then; the bytes on stdout are
 * those dr__cli_run would have put in `out`. */
int dr__cli_run_stdout(int argc, char **argv, FILE *stdout_file, GString *out, GString *err);

G_END_DECLS

#endif
