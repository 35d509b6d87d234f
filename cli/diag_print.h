/* diag_print.h: the compiler-style display of diagnostics: each as
 * "FILE:LINE:COL: error: MESSAGE", then the source line and a caret under
 * the column, like gcc. The CLI's business only; the library hands out the
 * diagnostics with their locations (DrDiagnostics, dagrun.h). */
#ifndef DAGRUN_CLI_DIAG_PRINT_H
#define DAGRUN_CLI_DIAG_PRINT_H

#include <glib.h>

#include "include/dagrun/dagrun.h"

G_BEGIN_DECLS

/* Appends every diagnostic in `diags` to `out`. When a diagnostic's file is
 * `file` (compared as strings) and `text` (len bytes) is not NULL, the
 * source line and a caret follow it, the caret under the column counted
 * in characters. Ends with "error: too many errors (N), showing the first
 * M" when the collector dropped some (the library's error text ends the
 * same way). */
void dr__diag_print(const DrDiagnostics *diags, const char *file, const char *text, gsize len, GString *out);

G_END_DECLS

#endif
