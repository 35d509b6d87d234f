/* aliases.c: "in expansion of alias" notes (internal.h). An error in an
 * anchored value is reported where the value is written, which is not the
 * node that used it: after one item (a node, a buffer, a kernel) is
 * converted, each error it added that lies inside the text of a value
 * that one of the item's aliases brought in gets a note at that alias,
 * like a compiler's note on a macro expansion. An alias inside an
 * anchored value is followed too (up to MAX_DEPTH expansions deep).
 *
 * Cost: (errors the item added) x (aliases it used); nothing when it added
 * none, the common case. */
#include <string.h>

#include "parser/internal.h"

#define MAX_DEPTH 4
/* Notes per error: one alias used many times adds one note per use. */
#define MAX_NOTES 3

static gint loc_cmp(guint32 al, guint32 ac, guint32 bl, guint32 bc) {
  return al != bl ? (al < bl ? -1 : 1) : (ac != bc ? (ac < bc ? -1 : 1) : 0);
}

/* Whether (line, col) lies in [from, to) (to.line 0: to the end). */
static gboolean in_range(guint32 line, guint32 col, DrLoc from, DrLoc to) {
  return loc_cmp(line, col, from.line, from.col) >= 0 &&
         (to.line == 0 || loc_cmp(line, col, to.line, to.col) < 0);
}

static gboolean in_value(guint32 line, guint32 col, const DrYAliasUse *u) {
  return loc_cmp(line, col, u->from_line, u->from_col) >= 0 && loc_cmp(line, col, u->to_line, u->to_col) < 0;
}

/* Finds the chain of aliases from `u` down to the value that holds
 * (line, col): chain[0] = u, chain[k] an alias inside chain[k-1]'s value.
 * Returns its length, 0 when the place is not inside u's expansion. */
static guint find_chain(const GArray *anchored, const DrYAliasUse *u, guint32 line, guint32 col,
                        const DrYAliasUse **chain) {
  chain[0] = u;
  guint n = 1;
  while (!in_value(line, col, chain[n - 1])) {
    if (n == MAX_DEPTH) return 0;
    const DrYAliasUse *inner = NULL;
    for (guint i = 0; i < anchored->len && inner == NULL; i++) {
      const DrYAliasUse *w = &g_array_index(anchored, DrYAliasUse, i);
      if (in_value(w->line, w->col, chain[n - 1]) && in_value(line, col, w)) inner = w;
    }
    if (inner == NULL) return 0;
    chain[n++] = inner;
  }
  return n;
}

void dr__parse_alias_notes(DrParse *p, guint first, DrLoc from, DrLoc to, const DrYAliasUse *uses,
                           guint n_uses) {
  if (n_uses == 0 || first == dr_diags_len(p->diags)) return;
  const GArray *anchored = dr__yreader_anchored_aliases(p->reader);
  for (guint i = first; i < dr_diags_len(p->diags); i++) {
    const DrDiag *d = dr_diags_get(p->diags, i);
    if (d->kind != DR_DIAG_ERROR || d->loc.file != p->file || d->loc.line == 0) continue;
    guint32 line = d->loc.line, col = d->loc.col;
    guint at = i + 1; /* after the error's own notes */
    while (at < dr_diags_len(p->diags) && dr_diags_get(p->diags, at)->kind == DR_DIAG_NOTE) at++;
    guint notes = 0;
    for (guint k = 0; k < n_uses && notes < MAX_NOTES; k++) {
      const DrYAliasUse *u = &uses[k];
      if (!in_range(u->line, u->col, from, to)) continue;
      /* An error at the alias itself is about the alias, not its value. */
      if (u->line == line && u->col == col) continue;
      const DrYAliasUse *chain[MAX_DEPTH];
      guint n = find_chain(anchored, u, line, col, chain);
      /* Innermost first, as compilers list nested expansions. */
      for (guint c = n; c-- > 0;) {
        dr_diags_insert_note(p->diags, at++, (DrLoc){p->file, chain[c]->line, chain[c]->col},
                             "in expansion of alias '*%s'%s here", chain[c]->name,
                             chain[c]->merged ? " (merged by '<<')" : "");
      }
      if (n > 0) notes++;
    }
    i = at - 1;
  }
}

void dr__parse_alias_uses_in(const GArray *uses, DrLoc from, DrLoc to, GArray *out) {
  for (guint k = 0; k < uses->len; k++) {
    const DrYAliasUse *u = &g_array_index(uses, DrYAliasUse, k);
    if (in_range(u->line, u->col, from, to)) g_array_append_val(out, *u);
  }
}
