/* suggest.c: edit distance and "did you mean" hints (suggest.h).
 * Two rows of dynamic programming plus the row before them for swaps:
 * O(|a|*|b|) time, O(|b|) memory; candidates whose lengths differ by more
 * than the threshold are skipped in O(1). */
#include "ir/suggest.h"

#include <string.h>

/* Characters that look like ASCII ones, with their Unicode names:
 * X(code point, ASCII twin ("" when it is invisible), name). */
#define LOOKALIKE_LIST(X)                                          \
  X(0x00A0, " ", "NO-BREAK SPACE")                                 \
  X(0x00AD, "", "SOFT HYPHEN")                                     \
  X(0x200B, "", "ZERO WIDTH SPACE")                                \
  X(0x200C, "", "ZERO WIDTH NON-JOINER")                           \
  X(0x200D, "", "ZERO WIDTH JOINER")                               \
  X(0x2060, "", "WORD JOINER")                                     \
  X(0xFEFF, "", "ZERO WIDTH NO-BREAK SPACE")                       \
  X(0x2010, "-", "HYPHEN")                                         \
  X(0x2011, "-", "NON-BREAKING HYPHEN")                            \
  X(0x2012, "-", "FIGURE DASH")                                    \
  X(0x2013, "-", "EN DASH")                                        \
  X(0x2014, "-", "EM DASH")                                        \
  X(0x2212, "-", "MINUS SIGN")                                     \
  X(0x2018, "'", "LEFT SINGLE QUOTATION MARK")                     \
  X(0x2019, "'", "RIGHT SINGLE QUOTATION MARK")                    \
  X(0x201C, "\"", "LEFT DOUBLE QUOTATION MARK")                    \
  X(0x201D, "\"", "RIGHT DOUBLE QUOTATION MARK")                   \
  X(0x0410, "A", "CYRILLIC CAPITAL LETTER A")                      \
  X(0x0412, "B", "CYRILLIC CAPITAL LETTER VE")                     \
  X(0x0415, "E", "CYRILLIC CAPITAL LETTER IE")                     \
  X(0x041A, "K", "CYRILLIC CAPITAL LETTER KA")                     \
  X(0x041C, "M", "CYRILLIC CAPITAL LETTER EM")                     \
  X(0x041D, "H", "CYRILLIC CAPITAL LETTER EN")                     \
  X(0x041E, "O", "CYRILLIC CAPITAL LETTER O")                      \
  X(0x0420, "P", "CYRILLIC CAPITAL LETTER ER")                     \
  X(0x0421, "C", "CYRILLIC CAPITAL LETTER ES")                     \
  X(0x0422, "T", "CYRILLIC CAPITAL LETTER TE")                     \
  X(0x0425, "X", "CYRILLIC CAPITAL LETTER HA")                     \
  X(0x0430, "a", "CYRILLIC SMALL LETTER A")                        \
  X(0x0435, "e", "CYRILLIC SMALL LETTER IE")                       \
  X(0x043E, "o", "CYRILLIC SMALL LETTER O")                        \
  X(0x0440, "p", "CYRILLIC SMALL LETTER ER")                       \
  X(0x0441, "c", "CYRILLIC SMALL LETTER ES")                       \
  X(0x0443, "y", "CYRILLIC SMALL LETTER U")                        \
  X(0x0445, "x", "CYRILLIC SMALL LETTER HA")                       \
  X(0x0455, "s", "CYRILLIC SMALL LETTER DZE")                      \
  X(0x0456, "i", "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I") \
  X(0x0458, "j", "CYRILLIC SMALL LETTER JE")                       \
  X(0x0501, "d", "CYRILLIC SMALL LETTER KOMI DE")                  \
  X(0x051B, "q", "CYRILLIC SMALL LETTER QA")                       \
  X(0x051D, "w", "CYRILLIC SMALL LETTER WE")                       \
  X(0x0391, "A", "GREEK CAPITAL LETTER ALPHA")                     \
  X(0x0392, "B", "GREEK CAPITAL LETTER BETA")                      \
  X(0x0395, "E", "GREEK CAPITAL LETTER EPSILON")                   \
  X(0x0396, "Z", "GREEK CAPITAL LETTER ZETA")                      \
  X(0x0397, "H", "GREEK CAPITAL LETTER ETA")                       \
  X(0x0399, "I", "GREEK CAPITAL LETTER IOTA")                      \
  X(0x039A, "K", "GREEK CAPITAL LETTER KAPPA")                     \
  X(0x039C, "M", "GREEK CAPITAL LETTER MU")                        \
  X(0x039D, "N", "GREEK CAPITAL LETTER NU")                        \
  X(0x039F, "O", "GREEK CAPITAL LETTER OMICRON")                   \
  X(0x03A1, "P", "GREEK CAPITAL LETTER RHO")                       \
  X(0x03A4, "T", "GREEK CAPITAL LETTER TAU")                       \
  X(0x03A5, "Y", "GREEK CAPITAL LETTER UPSILON")                   \
  X(0x03A7, "X", "GREEK CAPITAL LETTER CHI")                       \
  X(0x03B1, "a", "GREEK SMALL LETTER ALPHA")                       \
  X(0x03B9, "i", "GREEK SMALL LETTER IOTA")                        \
  X(0x03BA, "k", "GREEK SMALL LETTER KAPPA")                       \
  X(0x03BD, "v", "GREEK SMALL LETTER NU")                          \
  X(0x03BF, "o", "GREEK SMALL LETTER OMICRON")                     \
  X(0x03C1, "p", "GREEK SMALL LETTER RHO")                         \
  X(0x03C4, "t", "GREEK SMALL LETTER TAU")                         \
  X(0x03C5, "u", "GREEK SMALL LETTER UPSILON")                     \
  X(0x0131, "i", "LATIN SMALL LETTER DOTLESS I")                   \
  X(0x0261, "g", "LATIN SMALL LETTER SCRIPT G")

static const struct {
  gunichar c;
  const char *ascii;
  const char *name;
} lookalikes[] = {
#define X(c, a, n) {c, a, n},
    LOOKALIKE_LIST(X)
#undef X
};

/* The look-alike entry for c, or -1. Fullwidth forms (U+FF01..U+FF5E) are
 * handled by the callers arithmetically. */
static int lookalike_find(gunichar c) {
  for (guint i = 0; i < G_N_ELEMENTS(lookalikes); i++)
    if (lookalikes[i].c == c) return (int)i;
  return -1;
}

/* Writes word with look-alikes folded to ASCII into out (size n); "" when
 * it does not fit or is not UTF-8. */
static void fold(const char *word, char *out, gsize n) {
  gsize w = 0;
  out[0] = '\0';
  if (!g_utf8_validate(word, -1, NULL)) return;
  for (const char *p = word; *p; p = g_utf8_next_char(p)) {
    gunichar c = g_utf8_get_char(p);
    char buf[8];
    const char *rep = buf;
    int i;
    if (c < 0x80) {
      buf[0] = (char)c, buf[1] = '\0';
    } else if (c >= 0xFF01 && c <= 0xFF5E) {
      buf[0] = (char)(c - 0xFF01 + 0x21), buf[1] = '\0';
    } else if ((i = lookalike_find(c)) >= 0) {
      rep = lookalikes[i].ascii;
    } else {
      gint k = g_unichar_to_utf8(c, buf);
      buf[k] = '\0';
    }
    gsize l = strlen(rep);
    if (w + l + 1 > n) {
      out[0] = '\0';
      return;
    }
    memcpy(out + w, rep, l);
    w += l;
  }
  out[w] = '\0';
}

char *dr__suggest_describe_non_ascii(const char *word) {
  if (!g_utf8_validate(word, -1, NULL)) return NULL;
  GString *out = g_string_new(NULL);
  guint n = 0;
  gunichar seen[3];
  for (const char *p = word; *p && n < 3; p = g_utf8_next_char(p)) {
    gunichar c = g_utf8_get_char(p);
    gboolean again = FALSE;
    for (guint k = 0; k < n; k++) again |= seen[k] == c;
    if (c < 0x80 || again) continue;
    seen[n++] = c;
    if (out->len > 0) g_string_append(out, "; ");
    g_autofree char *ch = g_strndup(p, (gsize)(g_utf8_next_char(p) - p));
    int i = lookalike_find(c);
    if (i >= 0 && lookalikes[i].ascii[0] == '\0')
      g_string_append_printf(out, "it holds an invisible U+%04X %s", c, lookalikes[i].name);
    else if (i >= 0)
      g_string_append_printf(out, "'%s' is U+%04X %s, not the ASCII '%s'", ch, c, lookalikes[i].name,
                             lookalikes[i].ascii);
    else if (c >= 0xFF01 && c <= 0xFF5E)
      g_string_append_printf(out, "'%s' is the fullwidth form U+%04X, not the ASCII '%c'", ch, c,
                             (char)(c - 0xFF01 + 0x21));
    else
      g_string_append_printf(out, "'%s' is U+%04X, not an ASCII character", ch, c);
  }
  if (out->len == 0) return (g_string_free(out, TRUE), NULL);
  return g_string_free(out, FALSE);
}

#define MAX_WORD 128

guint dr__edit_distance(const char *a, const char *b, guint limit) {
  gsize la = strlen(a), lb = strlen(b);
  if (la > MAX_WORD || lb > MAX_WORD) return limit + 1;
  if ((la > lb ? la - lb : lb - la) > limit) return limit + 1;
  guint rows[3][MAX_WORD + 1];
  guint *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (gsize j = 0; j <= lb; j++) prev[j] = (guint)j;
  for (gsize i = 1; i <= la; i++) {
    cur[0] = (guint)i;
    guint row_min = cur[0];
    for (gsize j = 1; j <= lb; j++) {
      guint cost = a[i - 1] == b[j - 1] ? 0 : 1;
      guint d = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d = MIN(d, prev2[j - 2] + 1);
      cur[j] = d;
      row_min = MIN(row_min, d);
    }
    if (row_min > limit) return limit + 1;
    guint *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}

static guint threshold(const char *a, const char *b) {
  gsize n = MAX(strlen(a), strlen(b));
  return (guint)MAX(1, n / 3);
}

void dr__suggest_init(DrSuggest *s, const char *word) {
  s->word = word;
  s->best = NULL;
  s->best_distance = G_MAXUINT;
  fold(word, s->folded, sizeof s->folded);
  if (s->folded[0] == '\0') g_strlcpy(s->folded, word, sizeof s->folded);
}

void dr__suggest_add(DrSuggest *s, const char *candidate) {
  if (candidate == NULL || strcmp(candidate, s->word) == 0) return;
  /* Look-alikes compare by their ASCII spelling: 'оp' is 0 from "op". */
  const char *word = s->folded;
  if (s->best != NULL && s->best_distance == 0) return;
  if (strcmp(word, candidate) == 0) {
    s->best = candidate;
    s->best_distance = 0;
    return;
  }
  guint limit = threshold(word, candidate);
  if (s->best != NULL) limit = MIN(limit, s->best_distance - 1);
  guint d = dr__edit_distance(word, candidate, limit);
  if (d <= limit && d < s->best_distance) {
    s->best = candidate;
    s->best_distance = d;
  }
}

const char *dr__suggest_best(const DrSuggest *s) { return s->best; }

char *dr__suggest_hint(const DrSuggest *s) {
  g_autofree char *what = dr__suggest_describe_non_ascii(s->word);
  if (s->best == NULL) return what != NULL ? g_strdup_printf(" (%s)", what) : g_strdup("");
  if (what != NULL) return g_strdup_printf(" (did you mean '%s'? %s)", s->best, what);
  return g_strdup_printf(" (did you mean '%s'?)", s->best);
}
