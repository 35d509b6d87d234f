/* suggest.h: "did you mean" for misspelled keys and names, by edit
 * distance (optimal string alignment: insertions, deletions, substitutions
 * and swaps of neighbours each cost 1). No YAML, no IR. */
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
} DrSuggest;

void dr__suggest_init(DrSuggest *s, const char *word);
void dr__suggest_add(DrSuggest *s, const char *candidate);
const char *dr__suggest_best(const DrSuggest *s);

/* Returns " (did you mean 'X'?)" for the best candidate, or "" (static),
 * newly allocated either way. */
char *dr__suggest_hint(const DrSuggest *s);

G_END_DECLS

#endif
