/* suggest.h: "did you mean" for misspelled keys and names, by edit
 * distance (optimal string alignment: insertions, deletions, substitutions
 * and swaps of neighbours each cost 1). A word with a non-ASCII look-alike
 * of a Latin letter (Cyrillic 'о' in "op", a no-break space, a typographic
 * dash) is compared by its ASCII spelling, and the hint names the
 * character ("U+043E CYRILLIC SMALL LETTER O"). No YAML, no IR. */
#ifndef DAGRUN_IR_SUGGEST_H
#define DAGRUN_IR_SUGGEST_H

#include <glib.h>

G_BEGIN_DECLS

/* Returns the edit distance between a and b, or a number larger than
 * `limit` as soon as it is sure to exceed it. */
guint dr__edit_distance(const char *a, const char *b, guint limit);

/* Collects the closest candidate to `word`. Feed candidates with
 * dr__suggest_add; dr__suggest_best returns the closest one close enough
 * to be a likely typo (distance at most a third of the longer length,
 * at least 1), or NULL. The candidates must outlive the DrSuggest. */
typedef struct {
  const char *word;
  const char *best;
  guint best_distance;
  char folded[132]; /* word with look-alikes replaced by ASCII ("" when too long) */
} DrSuggest;

void dr__suggest_init(DrSuggest *s, const char *word);
void dr__suggest_add(DrSuggest *s, const char *candidate);
const char *dr__suggest_best(const DrSuggest *s);

/* Returns " (did you mean 'X'?)" for the best candidate, or "", newly
 * allocated either way. When the word holds non-ASCII characters the hint
 * names them: " (did you mean 'op'? 'о' is U+043E CYRILLIC SMALL LETTER O,
 * not the ASCII 'o')". */
char *dr__suggest_hint(const DrSuggest *s);

/* Returns a description of the (first three distinct) non-ASCII
 * characters in `word` ("'о' is U+043E CYRILLIC SMALL LETTER O, not the
 * ASCII 'o'"), or NULL when it is all ASCII (or not UTF-8). Newly
 * allocated. */
char *dr__suggest_describe_non_ascii(const char *word);

G_END_DECLS

#endif
