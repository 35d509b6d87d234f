/* bytes.c: the raw-byte check in front of libyaml (bytes.h).
 *
 * One pass over each chunk, a few comparisons per byte; it accepts exactly
 * what libyaml's reader accepts (YAML's printable set: TAB, LF, CR,
 * U+0020..U+007E, U+0085, U+00A0..U+D7FF, U+E000..U+FFFD and
 * U+10000..U+10FFFF, in well-formed shortest-form UTF-8), so libyaml never
 * refuses a byte itself. The encoding is guessed from the first bytes the
 * way YAML 1.2 (section 5.2) does it: a byte-order mark, or the zero bytes
 * an ASCII character has in UTF-16 and UTF-32. */
#include "parser/bytes.h"

#include <string.h>

void dr__bytescan_init(DrByteScan *s) {
  memset(s, 0, sizeof *s);
  s->line = 1;
  s->col = 1;
  s->in_indent = TRUE;
}

void dr__bytescan_clear(DrByteScan *s) {
  g_free(s->problem);
  s->problem = NULL;
  if (s->indent_tabs != NULL) g_hash_table_unref(s->indent_tabs);
  s->indent_tabs = NULL;
}

gboolean dr__bytescan_indent_tab(const DrByteScan *s, guint32 line, guint32 *col) {
  if (s->indent_tabs == NULL) return FALSE;
  gpointer v = g_hash_table_lookup(s->indent_tabs, GUINT_TO_POINTER(line));
  if (v == NULL) return FALSE;
  *col = GPOINTER_TO_UINT(v);
  return TRUE;
}

static void problem(DrByteScan *s, char *msg) {
  s->problem = msg;
  s->problem_line = s->line;
  s->problem_col = s->col;
}

/* The encoding a file's first bytes show, or NULL for UTF-8 (or too few
 * bytes to tell). */
static const char *other_encoding(const guint8 *b, gsize n) {
  if (n >= 4 && b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0)
    return "UTF-32 (little-endian, with a byte-order mark)";
  if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF)
    return "UTF-32 (big-endian, with a byte-order mark)";
  if (n >= 2 && b[0] == 0xFF && b[1] == 0xFE) return "UTF-16 (little-endian, with a byte-order mark)";
  if (n >= 2 && b[0] == 0xFE && b[1] == 0xFF) return "UTF-16 (big-endian, with a byte-order mark)";
  if (n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] != 0) return "UTF-32 (big-endian)";
  if (n >= 4 && b[0] != 0 && b[1] == 0 && b[2] == 0 && b[3] == 0) return "UTF-32 (little-endian)";
  if (n >= 2 && b[0] == 0 && b[1] != 0 && (n < 4 || b[2] == 0)) return "UTF-16 (big-endian)";
  if (n >= 2 && b[0] != 0 && b[1] == 0 && (n < 4 || b[3] == 0)) return "UTF-16 (little-endian)";
  return NULL;
}

/* Whether YAML (and so libyaml) accepts code point c in a file. */
static gboolean printable(guint32 c) {
  return c == 0x09 || c == 0x0A || c == 0x0D || (c >= 0x20 && c <= 0x7E) || c == 0x85 ||
         (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

static char *describe_unprintable(guint32 c) {
  if (c == 0) return g_strdup("a NUL byte (U+0000); YAML files hold text only");
  if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F))
    return g_strdup_printf("control character U+%04X; YAML allows only tab, line feed and carriage return",
                           c);
  return g_strdup_printf("character U+%04X, which YAML does not allow in a file", c);
}

/* The next line or column after code point c. */
static void advance(DrByteScan *s, guint32 c) {
  gboolean cr = c == '\r';
  if (c == '\n' && s->prev_cr) {
    s->prev_cr = FALSE;
    return; /* CR LF is one line break */
  }
  s->prev_cr = cr;
  if (c == '\n' || cr || c == 0x85 || c == 0x2028 || c == 0x2029) {
    s->line++;
    s->col = 1;
    s->in_indent = TRUE;
    return;
  }
  if (s->in_indent) {
    if (c == '\t') {
      if (s->indent_tabs == NULL) s->indent_tabs = g_hash_table_new(NULL, NULL);
      if (g_hash_table_size(s->indent_tabs) < DR_BYTESCAN_MAX_TABS &&
          !g_hash_table_contains(s->indent_tabs, GUINT_TO_POINTER(s->line)))
        g_hash_table_insert(s->indent_tabs, GUINT_TO_POINTER(s->line), GUINT_TO_POINTER(s->col));
    } else if (c != ' ') {
      s->in_indent = FALSE;
    }
  }
  s->col++;
}

gsize dr__bytescan_feed(DrByteScan *s, const guint8 *buf, gsize len, gboolean eof, gsize *skip) {
  *skip = 0;
  if (s->problem != NULL) return 0;
  if (!s->started) {
    if (len < 4 && !eof) return 0; /* wait for enough bytes to tell */
    s->started = TRUE;
    const char *enc = other_encoding(buf, len);
    if (enc != NULL) {
      problem(s, g_strdup_printf("the file is %s; dagrun reads UTF-8 (convert it, e.g. with iconv -t UTF-8)",
                                 enc));
      return 0;
    }
    if (len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF) *skip = 3;
  }
  gsize i = *skip;
  while (i < len) {
    guint8 b = buf[i];
    /* The common case, a run of printable ASCII inside a line. */
    if (b >= 0x20 && b < 0x7F && !s->in_indent) {
      gsize j = i + 1;
      while (j < len && buf[j] >= 0x20 && buf[j] < 0x7F) j++;
      s->col += (guint32)(j - i);
      s->prev_cr = FALSE;
      i = j;
      continue;
    }
    if (b < 0x80) {
      if (!printable(b)) {
        problem(s, describe_unprintable(b));
        return i;
      }
      advance(s, b);
      i++;
      continue;
    }
    guint width = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (width == 0) {
      problem(s, g_strdup_printf(b >= 0x80 && b <= 0xBF
                                     ? "invalid UTF-8 byte 0x%02X: a continuation byte without a first byte "
                                       "(is the file Latin-1? dagrun reads UTF-8)"
                                     : "invalid UTF-8 byte 0x%02X: no UTF-8 character starts with it (is the "
                                       "file Latin-1? dagrun reads UTF-8)",
                                 b));
      return i;
    }
    guint32 c = b & (0x7F >> width);
    for (guint k = 1; k < width; k++) {
      if (i + k >= len) {
        if (!eof) return i; /* the rest comes with the next chunk */
        problem(s, g_strdup_printf(
                       "invalid UTF-8: the file ends inside the character that byte 0x%02X starts", b));
        return i;
      }
      guint8 t = buf[i + k];
      if ((t & 0xC0) != 0x80) {
        problem(s, g_strdup_printf(
                       "invalid UTF-8 byte 0x%02X: it starts a %u-byte character, but 0x%02X does not "
                       "continue it (is the file Latin-1? dagrun reads UTF-8)",
                       b, width, t));
        return i;
      }
      c = (c << 6) | (t & 0x3F);
    }
    /* Overlong forms, surrogates and code points past U+10FFFF. */
    if ((width == 3 && c < 0x800) || (width == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c <= 0xDFFF)) {
      problem(s, g_strdup_printf("invalid UTF-8 sequence starting with byte 0x%02X (%s)", b,
                                 c >= 0xD800 && c <= 0xDFFF ? "a UTF-16 surrogate"
                                 : c > 0x10FFFF             ? "past U+10FFFF"
                                                            : "an overlong form"));
      return i;
    }
    if (!printable(c)) {
      problem(s, describe_unprintable(c));
      return i;
    }
    advance(s, c);
    i += width;
  }
  return i;
}
