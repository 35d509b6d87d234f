/* diag_print.c: diagnostics with the source line and a caret
 * (diag_print.h). Each location is found by scanning the text for its
 * line (memchr): O(size of the text) per diagnostic, and a run shows at
 * most the collector's limit of them. */
#include "cli/diag_print.h"

#include <string.h>

/* Longer source lines (generated files) are not echoed. */
#define MAX_SHOWN_LINE 1000

/* Finds line `line` (1-based) of text; returns its start and sets *n. */
static const char *find_line(const char *text, gsize len, guint32 line, gsize *n) {
  const char *p = text, *end = text + len;
  for (guint32 l = 1; l < line; l++) {
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    if (nl == NULL) return NULL;
    p = nl + 1;
  }
  const char *nl = memchr(p, '\n', (gsize)(end - p));
  *n = (gsize)((nl ? nl : end) - p);
  if (*n > 0 && p[*n - 1] == '\r') (*n)--;
  return p;
}

/* gcc's layout: the line with its number in the gutter, then the caret. */
static void append_source(GString *out, const char *line, gsize n, guint32 lineno, guint32 col) {
  g_string_append_printf(out, "%5u | %.*s\n      | ", lineno, (int)n, line);
  /* Keep tabs so the caret lines up; skip UTF-8 continuation bytes. */
  for (gsize i = 0; i + 1 < col && i < n; i++) {
    unsigned char c = (unsigned char)line[i];
    if (c == '\t')
      g_string_append_c(out, '\t');
    else if ((c & 0xC0) != 0x80)
      g_string_append_c(out, ' ');
  }
  g_string_append(out, "^\n");
}

void dr__diag_print(const DrDiagnostics *diags, const char *file, const char *text, gsize len, GString *out) {
  guint shown = 0;
  for (guint i = 0; i < dr_diagnostics_len(diags); i++) {
    DrDiagnostic d;
    dr_diagnostics_get(diags, i, &d);
    g_string_append(out, d.text);
    g_string_append_c(out, '\n');
    if (d.kind == DR_DIAGNOSTIC_ERROR) shown++;
    gsize n;
    const char *line;
    if (text != NULL && d.line > 0 && d.file != NULL && file != NULL && strcmp(d.file, file) == 0 &&
        (line = find_line(text, len, d.line, &n)) != NULL && n <= MAX_SHOWN_LINE) {
      append_source(out, line, n, d.line, d.col);
    }
  }
  if (dr_diagnostics_n_errors(diags) > shown)
    g_string_append_printf(out, "error: too many errors (%u), showing the first %u\n",
                           dr_diagnostics_n_errors(diags), shown);
}
