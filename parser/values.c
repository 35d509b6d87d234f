/* values.c: the parser's typed values (internal.h): a tree value to a
 * string, integer, size or number after `{expr}` substitution, mapping keys
 * checked against a list, and the "WHAT, key 'KEY': PROBLEM" wording every
 * parser message uses. It knows no section and no node: sections.c and
 * nodes.c call it, it calls neither. */
#include <stdlib.h>
#include <string.h>

#include "ir/suggest.h"
#include "parser/internal.h"

void dr__parse_error_at(DrParse *p, const DrYNode *v, const char *what, const char *key, const char *msg) {
  if (key != NULL)
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key '%s': %s", what, key, msg);
  else
    dr_diags_error(p->diags, DR_LOC(p, v), "%s: %s", what, msg);
}

void dr__parse_missing(DrParse *p, DrLoc loc, const char *what, const char *key) {
  dr_diags_error(p->diags, loc, "%s: missing key '%s'", what, key);
}

void dr__parse_wrong_type(DrParse *p, const char *what, const char *key, const DrYNode *v,
                          const char *expected) {
  g_autofree char *msg = NULL;
  if (v->kind == DR_Y_SCALAR && !dr__ynode_is_null(v))
    msg = g_strdup_printf("expected %s, got '%s'", expected, v->u.text);
  else
    msg = g_strdup_printf("expected %s, got %s", expected, dr__ynode_kind_name(v));
  dr__parse_error_at(p, v, what, key, msg);
}

int dr__parse_key(DrParse *p, const char *what, const DrYNode *key, const char *const *names, guint n) {
  for (guint i = 0; i < n; i++)
    if (strcmp(key->u.text, names[i]) == 0) return (int)i;
  DrSuggest s;
  dr__suggest_init(&s, key->u.text);
  for (guint i = 0; i < n; i++) dr__suggest_add(&s, names[i]);
  g_autofree char *hint = dr__suggest_hint(&s);
  dr_diags_error(p->diags, DR_LOC(p, key), "%s: unknown key '%s'%s", what, key->u.text, hint);
  return -1;
}

/* Returns the scalar's text after substitution, or NULL after reporting.
 * *owned is the allocated copy to free (NULL when the text is borrowed
 * from the tree, the common case of no braces). */
static const char *scalar_text(DrParse *p, const char *what, const char *key, const DrYNode *v,
                               const DrEnv *env, const char *expected, char **owned) {
  *owned = NULL;
  if (v->kind != DR_Y_SCALAR || dr__ynode_is_null(v)) {
    dr__parse_wrong_type(p, what, key, v, expected);
    return NULL;
  }
  if (!dr__expr_has_braces(v->u.text)) return v->u.text;
  char *msg = NULL;
  p->param_hits = 0;
  *owned = dr__expr_substitute(v->u.text, env, &msg);
  if (*owned == NULL) {
    p->param_hits = 0;
    dr__parse_error_at(p, v, what, key, msg);
    g_free(msg);
  } else if (!dr__params_note(p, v, env, what, key)) {
    g_clear_pointer(owned, g_free);
  }
  return *owned;
}

gboolean dr__parse_string(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                          char **out) {
  char *owned;
  const char *t = scalar_text(p, what, key, v, env, "a string", &owned);
  *out = owned != NULL ? owned : g_strdup(t);
  return *out != NULL;
}

gboolean dr__parse_int(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                       gint64 min, gint64 max, gint64 *out) {
  g_autofree char *owned = NULL;
  const char *t = scalar_text(p, what, key, v, env, "an integer", &owned);
  if (t == NULL) return FALSE;
  gint64 val;
  g_autofree char *msg = NULL;
  if (!dr__int_parse(t, DR_SIZE_COUNT, &val, &msg)) {
    dr__parse_error_at(p, v, what, key, msg);
    return FALSE;
  }
  if (val < min || val > max) {
    g_autofree char *m = g_strdup_printf(
        "%" G_GINT64_FORMAT " is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", val, min, max);
    dr__parse_error_at(p, v, what, key, m);
    return FALSE;
  }
  *out = val;
  return TRUE;
}

gboolean dr__parse_size(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                        DrSizeClass cls, guint64 *out) {
  g_autofree char *owned = NULL;
  const char *t =
      scalar_text(p, what, key, v, env, cls == DR_SIZE_BYTES ? "a size in bytes" : "a count", &owned);
  if (t == NULL) return FALSE;
  g_autofree char *msg = NULL;
  if (!dr__size_parse(t, cls, out, &msg)) {
    dr__parse_error_at(p, v, what, key, msg);
    return FALSE;
  }
  return TRUE;
}

gboolean dr__parse_float(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                         double *out) {
  g_autofree char *owned = NULL;
  const char *t = scalar_text(p, what, key, v, env, "a number", &owned);
  if (t == NULL) return FALSE;
  char *end = NULL;
  *out = g_ascii_strtod(t, &end);
  if (end == t || *end != '\0') {
    g_autofree char *msg = g_strdup_printf("expected a number, got '%s'", t);
    dr__parse_error_at(p, v, what, key, msg);
    return FALSE;
  }
  return TRUE;
}

/* A mapping's entries checked against `names`: fills slots[i] with the
 * value of names[i] or NULL. Unknown keys are reported and counted: a
 * caller skips "missing key" errors when a typo already explains them. */
guint dr__parse_map_slots(DrParse *p, const char *what, const DrYNode *map, const char *const *names, guint n,
                          const DrYNode **slots) {
  memset(slots, 0, n * sizeof *slots);
  guint unknown = 0;
  for (guint i = 0; i < map->len; i++) {
    int k = dr__parse_key(p, what, dr_ynode_key(map, i), names, n);
    if (k >= 0)
      slots[k] = dr_ynode_value(map, i);
    else
      unknown++;
  }
  return unknown;
}

gboolean dr__parse_expect_map(DrParse *p, const char *what, const char *key, const DrYNode *v) {
  if (v->kind == DR_Y_MAP) return TRUE;
  dr__parse_wrong_type(p, what, key, v, "a mapping");
  return FALSE;
}
