/* expr.c: sizes, integer expressions, `{expr}` substitution and slices
 * (expr.h).
 *
 * The expression evaluator is a recursive-descent parser whose only
 * recursion is through parentheses, `?:` and function calls, together
 * capped at DR_EXPR_MAX_DEPTH; chains of unary minus are counted in a
 * loop. All arithmetic is checked for
 * overflow. Cost: linear in the text. */
#include "parser/expr.h"

#include <string.h>

/* X(spelling, multiplier, class) */
#define SUFFIX_LIST(X)                \
  X("Ki", 1ull << 10, DR_SIZE_COUNT)  \
  X("Mi", 1ull << 20, DR_SIZE_COUNT)  \
  X("Gi", 1ull << 30, DR_SIZE_COUNT)  \
  X("KiB", 1ull << 10, DR_SIZE_BYTES) \
  X("MiB", 1ull << 20, DR_SIZE_BYTES) \
  X("GiB", 1ull << 30, DR_SIZE_BYTES) \
  X("kB", 1000ull, DR_SIZE_BYTES)     \
  X("MB", 1000000ull, DR_SIZE_BYTES)  \
  X("GB", 1000000000ull, DR_SIZE_BYTES)

static const struct {
  const char *name;
  guint64 mult;
  DrSizeClass cls;
} suffixes[] = {
#define X(s, m, c) {s, m, c},
    SUFFIX_LIST(X)
#undef X
};

/* Looks up the suffix text[0..len); returns its index or -1. */
static int suffix_find(const char *text, gsize len) {
  for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++)
    if (strlen(suffixes[i].name) == len && strncmp(text, suffixes[i].name, len) == 0) return (int)i;
  return -1;
}

static const char *class_list(DrSizeClass cls) {
  switch (cls) {
    case DR_SIZE_COUNT:
      return "Ki Mi Gi";
    case DR_SIZE_BYTES:
      return "KiB MiB GiB kB MB GB";
    default:
      return "Ki Mi Gi KiB MiB GiB kB MB GB";
  }
}

/* Reads an integer literal at s[0..end) (end NULL: up to the NUL): decimal,
 * 0x hexadecimal or 0o octal digits, the YAML 1.2 core schema's integers.
 * Sets *after past the digits. FALSE + *msg (naming `text`, the whole
 * scalar) on `_` separators (YAML 1.1 only), a prefix without digits, or
 * more than 64 bits. */
static gboolean scan_integer(const char *s, const char *end, const char *text, guint64 *out,
                             const char **after, char **msg) {
#define AT(q) ((end == NULL || (q) < end) ? *(q) : '\0')
  guint base = 10;
  if (AT(s) == '0' && (AT(s + 1) == 'x' || AT(s + 1) == 'o')) {
    base = AT(s + 1) == 'x' ? 16 : 8;
    s += 2;
  } else if (AT(s) == '0' && AT(s + 1) == 'b' && (AT(s + 2) == '0' || AT(s + 2) == '1')) {
    *msg = g_strdup_printf(
        "'%s' is a binary number, which only YAML 1.1 reads; write it in hexadecimal (0x...)", text);
    return FALSE;
  }
  guint64 v = 0;
  const char *digits = s;
  for (;; s++) {
    char c = AT(s);
    guint d;
    if (g_ascii_isdigit(c) && (guint)(c - '0') < base)
      d = (guint)(c - '0');
    else if (base == 16 && g_ascii_isxdigit(c))
      d = (guint)g_ascii_xdigit_value(c);
    else if (c == '_' && s > digits) {
      *msg = g_strdup_printf(
          "'%s' is not a number: only YAML 1.1 reads '_' as a digit separator; write the digits "
          "without it",
          text);
      return FALSE;
    } else
      break;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, (guint64)d, &v)) {
      *msg = g_strdup_printf("'%s' does not fit in 64 bits", text);
      return FALSE;
    }
  }
  if (s == digits) {
    *msg = base == 10
               ? g_strdup("expected a number")
               : g_strdup_printf("'%s' has no digits after its '0%c' prefix", text, base == 16 ? 'x' : 'o');
    return FALSE;
  }
#undef AT
  *after = s;
  *out = v;
  return TRUE;
}

/* TRUE when `text` reads whole as a floating-point number ("1.5", "1e3"):
 * then "not an integer" says more than "not a number". */
static gboolean looks_like_float(const char *text) {
  char *end = NULL;
  const char *t = text;
  while (*t == ' ') t++;
  if (!g_ascii_isdigit(*t) && *t != '.' && *t != '-' && *t != '+') return FALSE;
  if (strpbrk(t, ".eE") == NULL || strpbrk(t, "xX") != NULL) return FALSE;
  g_ascii_strtod(t, &end);
  return end != t && *end == '\0';
}

/* Reads an integer and an optional suffix at *p; advances *p. */
static gboolean read_number(const char **p, DrSizeClass classes, const char *text, guint64 *out, char **msg) {
  const char *s = *p;
  if (!g_ascii_isdigit(*s)) {
    *msg = g_strdup("expected a number");
    return FALSE;
  }
  guint64 v = 0;
  if (!scan_integer(s, NULL, text, &v, &s, msg)) return FALSE;
  const char *suf = s;
  while (g_ascii_isalpha(*s)) s++;
  if (s > suf) {
    int i = suffix_find(suf, (gsize)(s - suf));
    if (i < 0 || !(suffixes[i].cls & classes)) {
      *msg = g_strdup_printf("%s size suffix '%.*s' (use %s)", i < 0 ? "unknown" : "wrong", (int)(s - suf),
                             suf, class_list(classes));
      return FALSE;
    }
    if (__builtin_mul_overflow(v, suffixes[i].mult, &v)) {
      *msg = g_strdup_printf(suffixes[i].cls == DR_SIZE_BYTES ? "'%s' does not fit in a 64-bit size in bytes"
                                                              : "'%s' does not fit in 64 bits",
                             text);
      return FALSE;
    }
  }
  *p = s;
  *out = v;
  return TRUE;
}

gboolean dr__size_parse(const char *text, DrSizeClass classes, guint64 *out, char **msg) {
  const char *p = text;
  while (*p == ' ') p++;
  if (*p == '-') {
    *msg = g_strdup_printf("'%s' is negative", text);
    return FALSE;
  }
  if (looks_like_float(text)) {
    *msg = g_strdup_printf("'%s' is not an integer", text);
    return FALSE;
  }
  if (!g_ascii_isdigit(*p)) {
    *msg = g_strdup_printf("'%s' is not a number", text);
    return FALSE;
  }
  if (!read_number(&p, classes, text, out, msg)) return FALSE;
  while (*p == ' ') p++;
  if (*p != '\0') {
    *msg = g_strdup_printf("'%s' is not a number", text);
    return FALSE;
  }
  return TRUE;
}

gboolean dr__int_parse(const char *text, DrSizeClass classes, gint64 *out, char **msg) {
  const char *p = text;
  while (*p == ' ') p++;
  gboolean negative = *p == '-';
  if (*p == '-' || *p == '+') p++;
  if (looks_like_float(text)) {
    *msg = g_strdup_printf("'%s' is not an integer", text);
    return FALSE;
  }
  guint64 mag;
  if (!g_ascii_isdigit(*p)) {
    *msg = g_strdup_printf("expected an integer, got '%s'", text);
    return FALSE;
  }
  if (!read_number(&p, classes, text, &mag, msg)) return FALSE;
  while (*p == ' ') p++;
  if (*p != '\0') {
    *msg = g_strdup_printf("expected an integer, got '%s'", text);
    return FALSE;
  }
  if (mag > (guint64)G_MAXINT64 + (negative ? 1u : 0u)) {
    *msg = g_strdup_printf("'%s' does not fit in a 64-bit signed integer", text);
    return FALSE;
  }
  *out = negative ? (gint64)(0 - mag) : (gint64)mag;
  return TRUE;
}

/* ---- expressions ------------------------------------------------------- */

/* The grammar, lowest precedence first (C's, for the operators it has):
 *   cond    = compare [ '?' cond ':' cond ]          (right-associative)
 *   compare = relation { ('==' | '!=') relation }
 *   relation= sum { ('<' | '<=' | '>' | '>=') sum }
 *   sum     = product { ('+' | '-') product }
 *   product = unary { ('*' | '/' | '%') unary }
 *   unary   = { '-' | '+' } primary
 *   primary = number | name | name '(' cond ',' cond ')' | '(' cond ')'
 * Comparisons give 1 or 0. `?:` evaluates only the branch it picks, as in
 * C: the other is parsed (syntax and names are checked) with `skip` set,
 * so its division by zero or overflow is no error. */
typedef struct {
  const char *p, *end;
  const DrEnv *env;
  char *msg;
  guint depth;
  guint skip; /* > 0 inside a branch that `?:` does not take */
} Expr;

static gboolean expr_cond(Expr *e, gint64 *out);

static void skip_space(Expr *e) {
  while (e->p < e->end && (*e->p == ' ' || *e->p == '\t')) e->p++;
}

static gboolean fail(Expr *e, char *msg) {
  if (e->msg == NULL)
    e->msg = msg;
  else
    g_free(msg);
  return FALSE;
}

/* An arithmetic error (overflow, division by zero): an error unless in a
 * branch `?:` does not take, where the value is 0 instead. */
static gboolean arith_fail(Expr *e, const char *what, gint64 *out) {
  if (e->skip > 0) {
    *out = 0;
    return TRUE;
  }
  return fail(e, g_strdup(what));
}

/* One more level of parentheses, `?:` or function call; FALSE past the
 * limit, so deep input stops instead of recursing on. */
static gboolean enter(Expr *e, gboolean paren) {
  if (++e->depth > DR_EXPR_MAX_DEPTH)
    return fail(e, g_strdup_printf(paren ? "expression nested deeper than %d parentheses"
                                         : "expression nested deeper than %d levels of parentheses, '?:' "
                                           "and calls",
                                   DR_EXPR_MAX_DEPTH));
  return TRUE;
}

/* X(name, C expression over a and b): the functions of two arguments. */
#define FUNCTION_LIST(X)  \
  X("min", a < b ? a : b) \
  X("max", a > b ? a : b)

/* The call name(a, b) with e->p after the name at its '('. */
static gboolean expr_call(Expr *e, const char *name, gsize len, gint64 *out) {
  int which = -1, i = 0;
#define X(n, body)                                                            \
  if (which < 0 && strlen(n) == len && strncmp(n, name, len) == 0) which = i; \
  i++;
  FUNCTION_LIST(X)
#undef X
  if (which < 0)
    return fail(e, g_strdup_printf("unknown function '%.*s' (functions: min, max)", (int)len, name));
  if (!enter(e, FALSE)) return FALSE;
  e->p++; /* '(' */
  gint64 a, b;
  if (!expr_cond(e, &a)) return FALSE;
  skip_space(e);
  if (e->p >= e->end || *e->p != ',')
    return fail(e, g_strdup_printf("'%.*s' takes two arguments: expected ','", (int)len, name));
  e->p++;
  if (!expr_cond(e, &b)) return FALSE;
  skip_space(e);
  if (e->p < e->end && *e->p == ',')
    return fail(e, g_strdup_printf("'%.*s' takes two arguments, not more", (int)len, name));
  if (e->p >= e->end || *e->p != ')') return fail(e, g_strdup("missing ')'"));
  e->p++;
  e->depth--;
  i = 0;
#define X(n, body)               \
  if (which == i) *out = (body); \
  i++;
  FUNCTION_LIST(X)
#undef X
  return TRUE;
}

/* ---- device.* variables ----------------------------------------------
 * Kept apart from the loop variables: `device.NAME` is read-only, comes
 * from the device (or the host backend's table), and is resolved by the
 * process-wide resolver the library installs, not by the environment. */

static DrDeviceVarFn device_vars;

static const struct {
  const char *name;
  gint64 host;
} device_table[] = {
#define DR_X(n, a, v) {#n, v},
    DR_DEVICE_VAR_LIST(DR_X)
#undef DR_X
};

void dr__expr_set_device_vars(DrDeviceVarFn fn) { g_atomic_pointer_set(&device_vars, fn); }

/* `device.NAME` with `s` just past the dot: NAME's value into *out. */
static gboolean device_var(Expr *e, const char *s, gint64 *out) {
  const char *name = s;
  while (s < e->end && (g_ascii_isalnum(*s) || *s == '_')) s++;
  gsize len = (gsize)(s - name);
  if (len == 0) return fail(e, g_strdup("'device.' needs a name (device.sm_count, device.clock_khz, ...)"));
  int var = -1;
  for (int k = 0; k < DR_N_DEVICE_VARS; k++)
    if (strlen(device_table[k].name) == len && strncmp(device_table[k].name, name, len) == 0) var = k;
  if (var < 0) {
    GString *known = g_string_new(NULL);
    for (int k = 0; k < DR_N_DEVICE_VARS; k++)
      g_string_append_printf(known, "%sdevice.%s", k ? ", " : "", device_table[k].name);
    gboolean ok = fail(e, g_strdup_printf("unknown device variable 'device.%.*s' (the device variables: %s)",
                                          (int)len, name, known->str));
    g_string_free(known, TRUE);
    return ok;
  }
  DrDeviceVarFn fn = g_atomic_pointer_get(&device_vars);
  char *msg = NULL;
  if (fn == NULL)
    *out = device_table[var].host;
  else if (!fn((DrDeviceVar)var, out, &msg))
    return fail(e, msg);
  e->p = s;
  return TRUE;
}

static gboolean expr_primary(Expr *e, gint64 *out) {
  skip_space(e);
  if (e->p >= e->end) return fail(e, g_strdup("unexpected end of expression"));
  char c = *e->p;
  if (c == '(') {
    if (!enter(e, TRUE)) return FALSE;
    e->p++;
    if (!expr_cond(e, out)) return FALSE;
    skip_space(e);
    if (e->p >= e->end || *e->p != ')') return fail(e, g_strdup("missing ')'"));
    e->p++;
    e->depth--;
    return TRUE;
  }
  if (g_ascii_isdigit(c)) {
    const char *s = e->p;
    guint64 v = 0;
    g_autofree char *lit = NULL;
    {
      const char *q = s;
      while (q < e->end && (g_ascii_isalnum(*q) || *q == '_')) q++;
      lit = g_strndup(s, (gsize)(q - s));
    }
    char *msg = NULL;
    if (!scan_integer(s, e->end, lit, &v, &s, &msg)) return fail(e, msg);
    const char *suf = s;
    while (s < e->end && g_ascii_isalnum(*s)) s++;
    if (s > suf) {
      int i = suffix_find(suf, (gsize)(s - suf));
      if (i < 0)
        return fail(e, g_strdup_printf("unknown size suffix '%.*s' (use %s)", (int)(s - suf), suf,
                                       class_list(DR_SIZE_ANY)));
      if (__builtin_mul_overflow(v, suffixes[i].mult, &v))
        return fail(e, g_strdup_printf("'%s' does not fit in 64 bits", lit));
    }
    if (v > G_MAXINT64) return fail(e, g_strdup_printf("'%s' does not fit in a 64-bit signed integer", lit));
    e->p = s;
    *out = (gint64)v;
    return TRUE;
  }
  if (g_ascii_isalpha(c) || c == '_') {
    const char *s = e->p;
    while (s < e->end && (g_ascii_isalnum(*s) || *s == '_')) s++;
    const char *name = e->p;
    gsize len = (gsize)(s - e->p);
    if (len == 6 && strncmp(name, "device", 6) == 0 && s < e->end && *s == '.')
      return device_var(e, s + 1, out);
    const char *q = s;
    while (q < e->end && (*q == ' ' || *q == '\t')) q++;
    if (q < e->end && *q == '(') {
      e->p = q;
      return expr_call(e, name, len, out);
    }
    for (const DrEnv *env = e->env; env != NULL; env = env->outer)
      for (guint i = 0; i < env->n; i++) {
        const char *vname = env->vars[i].name;
        if (strlen(vname) == len && strncmp(vname, name, len) == 0) {
          if (env->hits != NULL && i < 64) *env->hits |= G_GUINT64_CONSTANT(1) << i; /* params hook */
          *out = env->vars[i].value;
          e->p = s;
          return TRUE;
        }
      }
    return fail(e, g_strdup_printf("unknown loop variable '%.*s'", (int)len, name));
  }
  if (c == '!' || c == '=')
    return fail(e, g_strdup_printf("unexpected '%c' in expression (comparisons are == != < <= > >=)", c));
  return fail(e, g_strdup_printf("unexpected '%c' in expression", c));
}

static gboolean expr_unary(Expr *e, gint64 *out) {
  gboolean negate = FALSE;
  for (;;) {
    skip_space(e);
    if (e->p < e->end && *e->p == '-')
      negate = !negate;
    else if (e->p < e->end && *e->p == '+')
      (void)0;
    else
      break;
    e->p++;
  }
  if (!expr_primary(e, out)) return FALSE;
  if (negate) {
    if (*out == G_MININT64) return arith_fail(e, "integer overflow", out);
    *out = -*out;
  }
  return TRUE;
}

static gboolean expr_product(Expr *e, gint64 *out) {
  if (!expr_unary(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    if (e->p >= e->end || (*e->p != '*' && *e->p != '/' && *e->p != '%')) return TRUE;
    char op = *e->p++;
    gint64 rhs;
    if (!expr_unary(e, &rhs)) return FALSE;
    if (op == '*') {
      if (__builtin_mul_overflow(*out, rhs, out) && !arith_fail(e, "integer overflow", out)) return FALSE;
    } else if (rhs == 0) {
      if (!arith_fail(e, "division by zero", out)) return FALSE;
    } else if (*out == G_MININT64 && rhs == -1) {
      if (!arith_fail(e, "integer overflow", out)) return FALSE;
    } else {
      *out = op == '/' ? *out / rhs : *out % rhs;
    }
  }
}

static gboolean expr_sum(Expr *e, gint64 *out) {
  if (!expr_product(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    if (e->p >= e->end || (*e->p != '+' && *e->p != '-')) return TRUE;
    char op = *e->p++;
    gint64 rhs;
    if (!expr_product(e, &rhs)) return FALSE;
    gboolean ovf =
        op == '+' ? __builtin_add_overflow(*out, rhs, out) : __builtin_sub_overflow(*out, rhs, out);
    if (ovf && !arith_fail(e, "integer overflow", out)) return FALSE;
  }
}

/* `<` `<=` `>` `>=` at e->p (not `<<`/`>>`, which are not operators):
 * the operator's length, or 0. *op is its first character, *eq whether it
 * ends in '='. */
static guint relation_op(Expr *e, char *op, gboolean *eq) {
  if (e->p >= e->end || (*e->p != '<' && *e->p != '>')) return 0;
  *op = *e->p;
  *eq = e->p + 1 < e->end && e->p[1] == '=';
  return *eq ? 2 : 1;
}

static gboolean expr_relation(Expr *e, gint64 *out) {
  if (!expr_sum(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    char op;
    gboolean eq;
    guint n = relation_op(e, &op, &eq);
    if (n == 0) return TRUE;
    if (n == 1 && e->p + 1 < e->end && e->p[1] == op)
      return fail(e, g_strdup_printf("unexpected '%c%c' in expression (no shift operators)", op, op));
    e->p += n;
    gint64 rhs;
    if (!expr_sum(e, &rhs)) return FALSE;
    *out = op == '<' ? (eq ? *out <= rhs : *out < rhs) : (eq ? *out >= rhs : *out > rhs);
  }
}

static gboolean expr_compare(Expr *e, gint64 *out) {
  if (!expr_relation(e, out)) return FALSE;
  for (;;) {
    skip_space(e);
    if (e->p + 1 >= e->end || (*e->p != '=' && *e->p != '!') || e->p[1] != '=') {
      if (e->p < e->end && *e->p == '=')
        return fail(e, g_strdup("unexpected '=' in expression (equality is '==')"));
      return TRUE;
    }
    char op = *e->p;
    e->p += 2;
    gint64 rhs;
    if (!expr_relation(e, &rhs)) return FALSE;
    *out = op == '=' ? *out == rhs : *out != rhs;
  }
}

static gboolean expr_cond(Expr *e, gint64 *out) {
  if (!expr_compare(e, out)) return FALSE;
  skip_space(e);
  if (e->p >= e->end || *e->p != '?') return TRUE;
  if (!enter(e, FALSE)) return FALSE;
  e->p++;
  gboolean pick = *out != 0;
  gint64 a, b;
  if (!pick) e->skip++;
  if (!expr_cond(e, &a)) return FALSE;
  if (!pick) e->skip--;
  skip_space(e);
  if (e->p >= e->end || *e->p != ':') return fail(e, g_strdup("'?' without its ':'"));
  e->p++;
  if (pick) e->skip++;
  if (!expr_cond(e, &b)) return FALSE;
  if (pick) e->skip--;
  e->depth--;
  *out = pick ? a : b;
  return TRUE;
}

gboolean dr__expr_eval(const char *text, gsize len, const DrEnv *env, gint64 *out, char **msg) {
  Expr e = {text, text + len, env, NULL, 0, 0};
  if (expr_cond(&e, out)) {
    skip_space(&e);
    if (e.p == e.end) return TRUE;
    fail(&e, *e.p == ')'   ? g_strdup("unbalanced ')'")
             : *e.p == ':' ? g_strdup("':' without a '?' before it")
                           : g_strdup_printf("unexpected '%c' in expression", *e.p));
  }
  *msg = g_strdup_printf("%s in '%.*s'", e.msg, (int)len, text);
  g_free(e.msg);
  return FALSE;
}

/* ---- substitution ------------------------------------------------------ */

gboolean dr__expr_has_braces(const char *text) { return strpbrk(text, "{}") != NULL; }

char *dr__expr_substitute(const char *text, const DrEnv *env, char **msg) {
  GString *out = g_string_sized_new(strlen(text) + 8);
  const char *p = text;
  while (*p) {
    if (*p == '}') {
      *msg = g_strdup_printf("unmatched '}' in '%s'", text);
      return (g_string_free(out, TRUE), NULL);
    }
    if (*p != '{') {
      g_string_append_c(out, *p++);
      continue;
    }
    const char *close = strchr(p + 1, '}');
    const char *open = strchr(p + 1, '{');
    if (close == NULL || (open != NULL && open < close)) {
      *msg = g_strdup_printf("unmatched '{' in '%s'", text);
      return (g_string_free(out, TRUE), NULL);
    }
    gint64 v;
    if (!dr__expr_eval(p + 1, (gsize)(close - p - 1), env, &v, msg)) return (g_string_free(out, TRUE), NULL);
    g_string_append_printf(out, "%" G_GINT64_FORMAT, v);
    p = close + 1;
  }
  return g_string_free(out, FALSE);
}

/* ---- slices ------------------------------------------------------------ */

static gboolean bound(const char *s, const char *e, const DrEnv *env, gboolean *has, gint64 *v, char **msg) {
  while (s < e && *s == ' ') s++;
  while (e > s && e[-1] == ' ') e--;
  *has = e > s;
  if (!*has) return TRUE;
  return dr__expr_eval(s, (gsize)(e - s), env, v, msg);
}

gboolean dr__slice_parse(const char *text, const DrEnv *env, DrSlice *out, char **msg) {
  memset(out, 0, sizeof *out);
  const char *lb = strchr(text, '[');
  const char *name_end = lb ? lb : text + strlen(text);
  const char *n = text;
  while (n < name_end && *n == ' ') n++;
  while (name_end > n && name_end[-1] == ' ') name_end--;
  if (name_end == n) {
    *msg = g_strdup_printf("'%s' names no buffer", text);
    return FALSE;
  }
  for (const char *q = n; q < name_end; q++)
    if (!(g_ascii_isalnum(*q) || *q == '_' || *q == '-' || *q == '.')) {
      *msg = g_strdup_printf("'%s' is not a buffer name or slice", text);
      return FALSE;
    }
  if (lb != NULL) {
    const char *rb = strrchr(lb, ']');
    const char *colon = memchr(lb, ':', rb ? (gsize)(rb - lb) : 0);
    if (rb == NULL || rb[1] != '\0' || colon == NULL) {
      *msg = g_strdup_printf("bad slice '%s' (expected NAME[START:END])", text);
      return FALSE;
    }
    if (!bound(lb + 1, colon, env, &out->has_begin, &out->begin, msg) ||
        !bound(colon + 1, rb, env, &out->has_end, &out->end, msg))
      return FALSE;
  }
  out->name = g_strndup(n, (gsize)(name_end - n));
  return TRUE;
}
