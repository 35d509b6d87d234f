/* diag.h: source locations, dagrun's GError domain, and the diagnostics
 * collector every pass reports into.
 *
 * A DrLoc is a 1-based (line, column) in a named file, the column counting
 * characters (Unicode code points), not bytes; libyaml's 0-based marks are
 * converted in exactly one place (parser/events.c), and parser/bytes.c
 * counts the same way for bytes libyaml never sees. A DrDiags
 * gathers errors and notes up to a limit, like a compiler, so one
 * `dagrun --check` shows several problems at once. This file does not print:
 * the caret display belongs to the CLI (cli/diag_print.c). */
#ifndef DAGRUN_IR_DIAG_H
#define DAGRUN_IR_DIAG_H

#include <glib.h>

#include "include/dagrun/dagrun.h"

G_BEGIN_DECLS

/* A place in a source file. `file` is a string owned by whoever made the
 * location (the graph's string chunk for parsed pipelines, or a static
 * string); line and col are 1-based; line 0 means "no location". */
typedef struct {
  const char *file;
  guint32 line;
  guint32 col;
} DrLoc;

#define DR_LOC_NONE ((DrLoc){NULL, 0, 0})

/* dagrun's GError domain (DR_ERROR, dr_error_quark), its codes
 * (DrErrorCode, with their exit codes in DR_ERROR_CODE_LIST) and
 * dr_error_exit_code are the public header's: include/dagrun/dagrun.h. */

typedef enum { DR_DIAG_ERROR, DR_DIAG_NOTE } DrDiagKind;

typedef struct {
  DrDiagKind kind;
  DrLoc loc;
  char *message; /* without the "FILE:LINE:COL: error: " prefix */
} DrDiag;

typedef struct DrDiags DrDiags;

/* Returns a new collector that stops accepting errors after `max_errors`
 * (0 means the default, 20). Free with dr_diags_free. */
DrDiags *dr_diags_new(guint max_errors);
void dr_diags_free(DrDiags *diags);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrDiags, dr_diags_free)

/* Records an error at `loc`. Once the limit is reached further errors are
 * counted but not stored, and dr_diags_full returns TRUE so a pass may stop
 * early. */
void dr_diags_error(DrDiags *diags, DrLoc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Records a note that explains the error before it (e.g. one step of a
 * cycle). Notes after a dropped error are dropped too. */
void dr_diags_note(DrDiags *diags, DrLoc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Inserts a note at position `index` (<= dr_diags_len), for notes that
 * are known only after the error was recorded (the parser's "in expansion
 * of alias" notes). */
void dr_diags_insert_note(DrDiags *diags, guint index, DrLoc loc, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

guint dr_diags_n_errors(const DrDiags *diags);
gboolean dr_diags_full(const DrDiags *diags);
guint dr_diags_len(const DrDiags *diags);
const DrDiag *dr_diags_get(const DrDiags *diags, guint i);

/* Formats one diagnostic as "FILE:LINE:COL: error: MESSAGE" (or "note:");
 * a location without a line prints as "FILE: error: ..." or just
 * "error: ...". Returns a newly allocated string. */
char *dr_diag_format(const DrDiag *diag);

/* When `diags` holds errors, sets `error` (DR_ERROR, DR_ERROR_INVALID) to all
 * its diagnostics formatted one per line and returns FALSE; otherwise
 * returns TRUE. */
gboolean dr_diags_to_error(const DrDiags *diags, GError **error);

/* Sets `error` to code in DR_ERROR with a message prefixed by the location,
 * "FILE:LINE:COL: error: ", and returns FALSE, for single-error paths. */
gboolean dr_set_error_at(GError **error, DrErrorCode code, DrLoc loc, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

G_END_DECLS

#endif
