/* params.h: the command line's run-time parameters (params.c): --param
 * NAME=VALUE and the sweep file of --params-from=FILE, read and checked
 * before anything runs. A client of the public API (dr_pipeline_set_param)
 * like the rest of cli/. */
#ifndef DAGRUN_CLI_PARAMS_H
#define DAGRUN_CLI_PARAMS_H

#include <glib.h>

#include "include/dagrun/dagrun.h"

G_BEGIN_DECLS

/* Sets each "NAME=VALUE" of `params` (NULL-terminated; NULL: none) on the
 * pipeline, in order. Returns 0, or 64 after writing why into `err`. */
int dr__cli_params_set(DrPipeline *pipeline, char **params, GString *err);

/* One line of a sweep file: its "NAME=VALUE" words (owned strings). */
typedef struct {
  guint line;
  GPtrArray *sets;
} DrCliSweepLine;

/* Reads sweep file `path` (one run per line of whitespace-separated
 * NAME=VALUE words; blank lines and lines starting with '#' are skipped)
 * and checks every line against the pipeline, each over the values the
 * pipeline has now, which it then has again. Returns 0 with *lines (an
 * array of DrCliSweepLine, at least one, free with dr__cli_sweep_free),
 * 66 when it cannot be read, or 65 with "FILE:LINE:COL: error: ..." in
 * `err` for a bad word or an empty file. */
int dr__cli_params_read(const char *path, DrPipeline *pipeline, GArray **lines, GString *err);
void dr__cli_sweep_free(GArray *lines);

/* The pipeline's current values ("seq=512", ...; NULL-terminated, free
 * with g_strfreev), to return to with dr__cli_params_set. */
char **dr__cli_params_save(const DrPipeline *pipeline);

G_END_DECLS

#endif
