/* diag_print.c: diagnostics with the source line and a caret
 * (diag_print.h). Each location is found by scanning the text for its
 * line (memchr, or byte by byte when the file has CR or YAML 1.1 line
 * breaks, which the parser counts too): O(size of the text) per
 * diagnostic, and a run shows at most the collector's limit of them. */
#define _GNU_SOURCE /* memmem */
#include "cli/diag_print.h"

#include <string.h>

/* Longer source lines (generated files) are not echoed. */
#define MAX_SHOWN_LINE 1000

/* The length of the line break at p (0: none): LF, CR LF, CR, and the
 * YAML 1.1 breaks U+0085, U+2028, U+2029, as the parser counts lines. */
static gsize break_len(const char *p, const char *end) {
  if (*p == '\n') return 1;
  if (*p == '\r') return p + 1 < end && p[1] == '\n' ? 2 : 1;
  if ((guchar)*p == 0xC2 && p + 1 < end && (guchar)p[1] == 0x85) return 2;
  if ((guchar)*p == 0xE2 && p + 2 < end && (guchar)p[1] == 0x80 &&
      ((guchar)p[2] == 0xA8 || (guchar)p[2] == 0xA9))
    return 3;
  return 0;
}

/* Whether text has line breaks other than LF (one pass, memchr/memmem):
 * most files do not, and find_line then skips through them with memchr. */
static gboolean other_breaks(const char *text, gsize len) {
  return memchr(text, '\r', len) != NULL || memmem(text, len, "\xC2\x85", 2) != NULL ||
         memmem(text, len, "\xE2\x80\xA8", 3) != NULL || memmem(text, len, "\xE2\x80\xA9", 3) != NULL;
}

/* Finds line `line` (1-based) of text; returns its start and sets *n. */
static const char *find_line(const char *text, gsize len, gboolean slow, guint32 line, gsize *n) {
  const char *p = text, *end = text + len;
  for (guint32 l = 1; l < line; l++) {
    gsize b = 0;
    if (!slow) {
      p = memchr(p, '\n', (gsize)(end - p));
      if (p == NULL) return NULL;
      p++;
      continue;
    }
    while (p < end && (b = break_len(p, end)) == 0) p++;
    if (p == end) return NULL;
    p += b;
  }
  const char *q = p;
  while (q < end && break_len(q, end) == 0) q++;
  *n = (gsize)(q - p);
  return p;
}

/* gcc's layout: the line with its number in the gutter, then the caret.
 * Columns count characters (code points), as the parser's do; a byte that
 * is no valid UTF-8, or a control character, shows as '?' in one column, so
 * the line never garbles the terminal and the caret still lines up. A
 * UTF-8 byte-order mark at the start of the file is not shown. */
static void append_source(GString *out, const char *line, gsize n, guint32 lineno, guint32 col) {
  if (lineno == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
    line += 3;
    n -= 3;
  }
  g_autoptr(GString) caret = g_string_new("      | ");
  g_string_append_printf(out, "%5u | ", lineno);
  guint32 c = 1;
  for (gsize i = 0; i < n; c++) {
    gunichar u = g_utf8_get_char_validated(line + i, (gssize)(n - i));
    gsize w = u >= 0x80 && u < 0x110000 ? (gsize)(g_utf8_next_char(line + i) - (line + i)) : 1;
    gboolean shown = u < 0x110000 && (u >= 0x20 || u == '\t') && u != 0x7F && !(u >= 0x80 && u <= 0x9F);
    if (shown)
      g_string_append_len(out, line + i, (gssize)w);
    else
      g_string_append_c(out, '?');
    /* Keep tabs so the caret lines up under them. */
    if (c < col) g_string_append_c(caret, u == '\t' ? '\t' : ' ');
    i += w;
  }
  g_string_append_c(out, '\n');
  g_string_append(out, caret->str);
  g_string_append(out, "^\n");
}

void dr__diag_print(const DrDiagnostics *diags, const char *file, const char *text, gsize len, GString *out) {
  guint shown = 0;
  gboolean slow = text != NULL && other_breaks(text, len);
  for (guint i = 0; i < dr_diagnostics_len(diags); i++) {
    DrDiagnostic d;
    dr_diagnostics_get(diags, i, &d);
    g_string_append(out, d.text);
    g_string_append_c(out, '\n');
    if (d.kind == DR_DIAGNOSTIC_ERROR) shown++;
    gsize n;
    const char *line;
    if (text != NULL && d.line > 0 && d.file != NULL && file != NULL && strcmp(d.file, file) == 0 &&
        (line = find_line(text, len, slow, d.line, &n)) != NULL && n <= MAX_SHOWN_LINE) {
      append_source(out, line, n, d.line, d.col);
    }
  }
  if (dr_diagnostics_n_errors(diags) > shown)
    g_string_append_printf(out, "error: too many errors (%u), showing the first %u\n",
                           dr_diagnostics_n_errors(diags), shown);
}
