/* num.c: the locale-independent number formatter (num.h). */
#include "report/num.h"

#include <locale.h>
#include <stdarg.h>
#include <math.h>
#include <string.h>

/* The C locale object, made once and kept for the process's life. */
static locale_t c_locale(void) {
  static gsize once = 0;
  static locale_t c;
  if (g_once_init_enter(&once)) {
    c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    g_once_init_leave(&once, 1);
  }
  return c;
}

void dr__num_appendf(GString *out, const char *format, ...) {
  locale_t c = c_locale();
  /* Without a locale object (out of memory) LC_NUMERIC decides. */
  locale_t old = c != (locale_t)0 ? uselocale(c) : (locale_t)0;
  va_list args;
  va_start(args, format);
  g_string_append_vprintf(out, format, args);
  va_end(args);
  if (old != (locale_t)0) uselocale(old);
}

void dr__num_fixed(GString *out, double v, guint decimals, guint width) {
  static const char *const formats[] = {"%.0f", "%.1f", "%.2f", "%.3f", "%.4f",
                                        "%.5f", "%.6f", "%.7f", "%.8f", "%.9f"};
  /* DBL_MAX in %.9f is 309 digits, a sign, a point and 9 decimals. */
  char buf[352];
  if (isnan(v))
    g_strlcpy(buf, "nan", sizeof buf);
  else if (isinf(v))
    g_strlcpy(buf, v < 0 ? "-inf" : "inf", sizeof buf);
  else
    g_ascii_formatd(buf, sizeof buf, formats[MIN(decimals, G_N_ELEMENTS(formats) - 1)], v);
  gsize len = strlen(buf);
  for (gsize i = len; i < width; i++) g_string_append_c(out, ' ');
  g_string_append_len(out, buf, (gssize)len);
}

void dr__num_size_iec(GString *out, guint64 bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    g_string_append_printf(out, "%u %s", (guint)bytes, bytes == 1 ? "byte" : "bytes");
    return;
  }
  guint u = 0;
  while (u + 1 < G_N_ELEMENTS(units) && bytes >= (guint64)1 << (10 * (u + 2))) u++;
  dr__num_fixed(out, (double)bytes / (double)((guint64)1 << (10 * (u + 1))), 1, 0);
  g_string_append(out, "\xc2\xa0");
  g_string_append(out, units[u]);
}
