/* json.h: the report package's one JSON writer and, beside it, the reader
 * of what it writes. Every JSON output (the run report, the plan, the
 * Chrome trace) is written through DrJsonWriter, so escaping, numbers and
 * separators are decided once; the profile reader (profile.c) reads run
 * reports through DrJsonReader, which accepts everything the writer can
 * emit (null, true/false, nested objects and arrays, every escape). Not a
 * general JSON library: no document tree, no pretty-printer beyond the
 * one-element-per-line arrays dagrun's outputs use.
 *
 * Writer layout: members and elements are separated by ", ", keys by ": "
 * (`{"a": 1, "b": [1, 2]}`). A container opened with an indent string
 * instead puts each element on its own line, "\n" + indent before it and
 * "\n" before the closing bracket when not empty (the plan's and the
 * trace's long arrays). Strings are escaped per RFC 8259: quote,
 * backslash, \n \r \t \b \f, other control characters as \u00XX; bytes
 * >= 0x80 pass through (ids are UTF-8). Doubles have a fixed number of
 * decimals and never depend on the locale (num.h); NaN and infinities,
 * which JSON lacks, are written as null.
 *
 * The output goes to a GString; with a FILE sink the writer hands it to
 * the file whenever it grows past a threshold, so a million-node plan is
 * streamed instead of built in memory. */
#ifndef DAGRUN_REPORT_JSON_H
#define DAGRUN_REPORT_JSON_H

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

#define DR_JSON_MAX_DEPTH 16

typedef struct {
  gboolean any;       /* an element was written at this level */
  const char *indent; /* NULL: inline; else one element per line */
} DrJsonLevel;

typedef struct {
  GString *out;
  FILE *sink; /* NULL: everything stays in `out` */
  gboolean sink_failed;
  guint depth;
  gboolean after_key;
  DrJsonLevel level[DR_JSON_MAX_DEPTH];
} DrJsonWriter;

/* Starts writing one JSON value, appended to `out` (borrowed). With a
 * `sink`, `out` is written to it and emptied whenever it holds more than
 * 64 KiB, and by dr__json_finish. */
void dr__json_init(DrJsonWriter *w, GString *out, FILE *sink);
/* Writes what remains in `out` to the sink (if any). FALSE when a write
 * to the sink failed, now or earlier (errno tells why). */
gboolean dr__json_finish(DrJsonWriter *w);

void dr__json_begin_object(DrJsonWriter *w);
void dr__json_begin_array(DrJsonWriter *w);
/* An array with each element on its own line after "\n" + `indent`
 * (static storage). */
void dr__json_begin_array_lines(DrJsonWriter *w, const char *indent);
void dr__json_end_object(DrJsonWriter *w);
void dr__json_end_array(DrJsonWriter *w);

/* Writes an object member's key; the next call writes its value. */
void dr__json_key(DrJsonWriter *w, const char *key);

/* Values: an array element, or the value of the key just written. */
void dr__json_string(DrJsonWriter *w, const char *s); /* NULL: "" */
void dr__json_uint(DrJsonWriter *w, guint64 v);
void dr__json_int(DrJsonWriter *w, gint64 v);
/* The shortest text that reads back as v (C locale); null when not finite. */
void dr__json_shortest(DrJsonWriter *w, double v);
void dr__json_bool(DrJsonWriter *w, gboolean v);
void dr__json_null(DrJsonWriter *w);
/* `v` with `decimals` digits after the point, or null when not finite. */
void dr__json_double(DrJsonWriter *w, double v, guint decimals);

/* Key and value in one call. */
void dr__json_member_string(DrJsonWriter *w, const char *key, const char *s);
void dr__json_member_uint(DrJsonWriter *w, const char *key, guint64 v);
void dr__json_member_bool(DrJsonWriter *w, const char *key, gboolean v);
void dr__json_member_double(DrJsonWriter *w, const char *key, double v, guint decimals);

/* Appends `s` as a quoted, escaped JSON string (no separator). */
void dr__json_append_string(GString *out, const char *s);

/* ---- the reader ---------------------------------------------------------
 * A pull reader over text in memory: the caller walks the value it
 * expects and skips the rest. Every function returns FALSE (or NULL) on
 * malformed input and then marks the reader bad; `pos` is where. Nesting
 * is limited to DR_JSON_MAX_READ_DEPTH when skipping. */
#define DR_JSON_MAX_READ_DEPTH 512

typedef struct {
  const char *start, *p, *end;
  gboolean bad;
} DrJsonReader;

void dr__json_reader_init(DrJsonReader *r, const char *text, gsize len);
/* The byte offset where reading stopped (where the error is when bad). */
gsize dr__json_reader_pos(const DrJsonReader *r);
/* The next significant character, or 0 at the end of the text. */
char dr__json_peek(DrJsonReader *r);
/* Consumes '{' or '[' (`open`). */
gboolean dr__json_enter(DrJsonReader *r, char open);
/* Iterates a container entered with dr__json_enter: TRUE while another
 * element follows (after the ',' when *index > 0, which it then counts),
 * FALSE once the closing `close` is consumed or on malformed input (bad). */
gboolean dr__json_next(DrJsonReader *r, char close, guint *index);
/* A string (decoded: escapes, \u with surrogate pairs to UTF-8; a lone
 * surrogate becomes U+FFFD), newly allocated. */
char *dr__json_read_string(DrJsonReader *r);
/* An object member's key and its ':'. */
char *dr__json_read_key(DrJsonReader *r);
/* A number, or null (*v = NAN). */
gboolean dr__json_read_number_or_null(DrJsonReader *r, double *v);
/* Skips one value of any kind (iterative, checked literals). */
gboolean dr__json_skip(DrJsonReader *r);
/* TRUE when only whitespace is left. */
gboolean dr__json_at_end(DrJsonReader *r);

G_END_DECLS

#endif
