/* bytes.h: the check of a pipeline's raw bytes before libyaml sees them.
 * libyaml's reader refuses the same bytes but reports them by offset only,
 * so every such error landed at 1:1 with "control characters are not
 * allowed"; this scanner finds the byte first and says where it is and
 * what it is: a UTF-16 or UTF-32 file (by its byte-order mark or its
 * zero bytes), a control character, a NUL byte, invalid UTF-8. It also
 * drops a leading UTF-8 byte-order mark, so the BOM never shifts columns,
 * and remembers tabs in indentation so that libyaml's token errors at such
 * a tab can say "YAML forbids tabs for indentation".
 *
 * It works on chunks as they stream past (files are never held whole) and
 * counts lines and columns the way libyaml's marks do: lines end at LF,
 * CR, CR LF, U+0085, U+2028 and U+2029; a column counts characters (Unicode
 * code points, a tab is one), not bytes, 1-based. It knows no YAML syntax
 * and makes no diagnostics itself: events.c reports what it found. */
#ifndef DAGRUN_PARSER_BYTES_H
#define DAGRUN_PARSER_BYTES_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint32 line, col;  /* of the next character: 1-based */
  gboolean started;   /* the start of the input (encoding, BOM) is behind */
  gboolean prev_cr;   /* the last character was CR: a LF after it ends no line */
  gboolean in_indent; /* only spaces and tabs so far on this line */
  char *problem;      /* the first bad byte's description, or NULL */
  guint32 problem_line, problem_col;
  GHashTable *indent_tabs; /* line -> column of its first tab in indentation */
} DrByteScan;

/* Lines with an indentation tab remembered at most (hostile input). */
#define DR_BYTESCAN_MAX_TABS 100000u

void dr__bytescan_init(DrByteScan *s);
void dr__bytescan_clear(DrByteScan *s);

/* Checks buf[0..len), the next bytes of the input (eof: the last ones),
 * and returns how many of them are good and complete, to hand to libyaml.
 * The bytes after those are an incomplete UTF-8 character that the next
 * call must see again at the start of its buffer, or, when s->problem is
 * set, the bad byte: s->problem says what it is and problem_line and
 * problem_col where. *skip is set to the bytes at the start of buf that
 * are not for libyaml: 3 for a UTF-8 byte-order mark at the start of the
 * input, else 0 (the returned count includes them). */
gsize dr__bytescan_feed(DrByteScan *s, const guint8 *buf, gsize len, gboolean eof, gsize *skip);

/* TRUE when line `line` has a tab in its indentation; sets *col to it. */
gboolean dr__bytescan_indent_tab(const DrByteScan *s, guint32 line, guint32 *col);

G_END_DECLS

#endif
