/* diag.c: dagrun's error domain and the diagnostics collector (diag.h).
 * Formatting only; printing with a caret is the CLI's job. */
#include "ir/diag.h"

#include <stdarg.h>

G_DEFINE_QUARK(dagrun - error - quark, dr_error)

struct DrDiags {
  GArray *items; /* DrDiag */
  guint max_errors;
  guint n_errors;    /* counted, stored or not */
  gboolean dropping; /* the last error was over the limit: drop its notes */
};

int dr_error_exit_code(const GError *error) {
  if (error == NULL) return 0;
  if (error->domain != DR_ERROR) return 70;
  switch ((DrErrorCode)error->code) {
#define DR_X(e, code) \
  case DR_ERROR_##e:  \
    return code;
    DR_ERROR_CODE_LIST(DR_X)
#undef DR_X
  }
  return 70;
}

static void diag_clear(gpointer p) { g_free(((DrDiag *)p)->message); }

DrDiags *dr_diags_new(guint max_errors) {
  DrDiags *d = g_new0(DrDiags, 1);
  d->items = g_array_new(FALSE, TRUE, sizeof(DrDiag));
  g_array_set_clear_func(d->items, diag_clear);
  d->max_errors = max_errors ? max_errors : 20;
  return d;
}

void dr_diags_free(DrDiags *diags) {
  if (diags == NULL) return;
  g_array_unref(diags->items);
  g_free(diags);
}

static void push(DrDiags *d, DrDiagKind kind, DrLoc loc, const char *fmt, va_list ap) {
  DrDiag item = {kind, loc, g_strdup_vprintf(fmt, ap)};
  g_array_append_val(d->items, item);
}

void dr_diags_error(DrDiags *diags, DrLoc loc, const char *fmt, ...) {
  g_return_if_fail(diags != NULL);
  diags->n_errors++;
  diags->dropping = diags->n_errors > diags->max_errors;
  if (diags->dropping) return;
  va_list ap;
  va_start(ap, fmt);
  push(diags, DR_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
}

void dr_diags_note(DrDiags *diags, DrLoc loc, const char *fmt, ...) {
  g_return_if_fail(diags != NULL);
  if (diags->dropping) return;
  va_list ap;
  va_start(ap, fmt);
  push(diags, DR_DIAG_NOTE, loc, fmt, ap);
  va_end(ap);
}

void dr_diags_insert_note(DrDiags *diags, guint index, DrLoc loc, const char *fmt, ...) {
  g_return_if_fail(diags != NULL && index <= diags->items->len);
  va_list ap;
  va_start(ap, fmt);
  DrDiag item = {DR_DIAG_NOTE, loc, g_strdup_vprintf(fmt, ap)};
  va_end(ap);
  g_array_insert_val(diags->items, index, item);
}

guint dr_diags_n_errors(const DrDiags *diags) { return diags->n_errors; }
gboolean dr_diags_full(const DrDiags *diags) { return diags->n_errors >= diags->max_errors; }
guint dr_diags_len(const DrDiags *diags) { return diags->items->len; }

const DrDiag *dr_diags_get(const DrDiags *diags, guint i) {
  g_return_val_if_fail(i < diags->items->len, NULL);
  return &g_array_index(diags->items, DrDiag, i);
}

static void append_loc(GString *s, DrLoc loc) {
  if (loc.file != NULL && loc.line > 0)
    g_string_append_printf(s, "%s:%u:%u: ", loc.file, loc.line, loc.col);
  else if (loc.file != NULL)
    g_string_append_printf(s, "%s: ", loc.file);
}

char *dr_diag_format(const DrDiag *diag) {
  GString *s = g_string_new(NULL);
  append_loc(s, diag->loc);
  g_string_append(s, diag->kind == DR_DIAG_ERROR ? "error: " : "note: ");
  g_string_append(s, diag->message);
  return g_string_free(s, FALSE);
}

gboolean dr_diags_to_error(const DrDiags *diags, GError **error) {
  if (diags->n_errors == 0) return TRUE;
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < diags->items->len; i++) {
    g_autofree char *line = dr_diag_format(&g_array_index(diags->items, DrDiag, i));
    if (i > 0) g_string_append_c(s, '\n');
    g_string_append(s, line);
  }
  if (diags->n_errors > diags->max_errors)
    g_string_append_printf(s, "\nerror: too many errors (%u), showing the first %u", diags->n_errors,
                           diags->max_errors);
  g_set_error_literal(error, DR_ERROR, DR_ERROR_INVALID, s->str);
  g_string_free(s, TRUE);
  return FALSE;
}

gboolean dr_set_error_at(GError **error, DrErrorCode code, DrLoc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  DrDiag d = {DR_DIAG_ERROR, loc, msg};
  g_autofree char *full = dr_diag_format(&d);
  g_set_error_literal(error, DR_ERROR, code, full);
  return FALSE;
}
