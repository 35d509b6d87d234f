/* suggest.c: edit distance and "did you mean" hints (suggest.h).
 * Two rows of dynamic programming plus the row before them for swaps:
 * O(|a|*|b|) time, O(|b|) memory; candidates whose lengths differ by more
 * than the threshold are skipped in O(1). */
#include "ir/suggest.h"

#include <string.h>

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
}

void dr__suggest_add(DrSuggest *s, const char *candidate) {
  if (candidate == NULL || strcmp(candidate, s->word) == 0) return;
  guint limit = threshold(s->word, candidate);
  if (s->best != NULL) limit = MIN(limit, s->best_distance - 1);
  guint d = dr__edit_distance(s->word, candidate, limit);
  if (d <= limit && d < s->best_distance) {
    s->best = candidate;
    s->best_distance = d;
  }
}

const char *dr__suggest_best(const DrSuggest *s) { return s->best; }

char *dr__suggest_hint(const DrSuggest *s) {
  if (s->best == NULL) return g_strdup("");
  return g_strdup_printf(" (did you mean '%s'?)", s->best);
}
