/* num.h: the report package's one number formatter, the only place where
 * a writer turns a double into text. Every run and plan writer (text,
 * JSON, trace, SVG, DOT) goes through it, so no output depends on the
 * process's locale: a program that calls setlocale(LC_ALL, "de_DE.UTF-8")
 * still gets '.' decimals, valid JSON and an SVG whose coordinates parse.
 *
 * Doubles are printf's "%.Nf" in the C locale (g_ascii_formatd, or
 * printf under uselocale() with a C locale object: the same exact decimal
 * rounding of the binary value, so the bytes are what the C locale always
 * gave). Integers need nothing: printf's %u and %d never
 * group or localise digits without the ' and I flags, which dagrun never
 * uses. Not a parser: the profile reader (json.c) reads numbers with
 * g_ascii_strtod. */
#ifndef DAGRUN_REPORT_NUM_H
#define DAGRUN_REPORT_NUM_H

#include <glib.h>

G_BEGIN_DECLS

/* Appends `v` with `decimals` (0..9) digits after a '.', right-aligned in
 * `width` columns (0: no padding); "nan" or "inf" for non-finite values,
 * as the C locale's printf writes them. */
void dr__num_fixed(GString *out, double v, guint decimals, guint width);

/* g_string_append_printf in the C locale: the format's %f, %e and %g
 * conversions always use '.', whatever setlocale said (uselocale() for the
 * calling thread only, so other threads are unaffected). For writers with
 * many numbers in one template (the SVG). */
void dr__num_appendf(GString *out, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Appends a byte count as g_format_size_full(bytes, IEC units) would in
 * the C locale and without translation: "17 bytes", "1 byte" below 1 KiB,
 * else one decimal and the largest IEC unit not above it, separated by a
 * no-break space (U+00A0): "1.0 MiB", "1024.0 KiB" for 1 MiB - 1. */
void dr__num_size_iec(GString *out, guint64 bytes);

G_END_DECLS

#endif
