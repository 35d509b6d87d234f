/* expr.h: the small languages inside YAML scalars: sizes with suffixes
 * ("16Mi", "1MiB"), integer expressions over foreach loop variables
 * ("(c+1)*4Mi"), `{expr}` substitution in ids and strings, and buffer
 * slices ("x[0:{n}]"). Pure functions over strings; no YAML, no IR.
 *
 * Every function that can fail returns FALSE (or NULL) and sets *msg to a
 * newly allocated message without a location; the caller knows where the
 * scalar was and reports it. Nothing here recurses deeper than
 * DR_EXPR_MAX_DEPTH parentheses, `?:` and calls. */
#ifndef DAGRUN_PARSER_EXPR_H
#define DAGRUN_PARSER_EXPR_H

#include <glib.h>

G_BEGIN_DECLS

#define DR_EXPR_MAX_DEPTH 64

/* Which suffixes a size accepts: counts (Ki Mi Gi) and/or bytes (KiB MiB
 * GiB kB MB GB). */
typedef enum {
  DR_SIZE_COUNT = 1 << 0,
  DR_SIZE_BYTES = 1 << 1,
  DR_SIZE_ANY = DR_SIZE_COUNT | DR_SIZE_BYTES,
} DrSizeClass;

/* One foreach loop variable bound to a value. */
typedef struct {
  const char *name;
  gint64 value;
} DrVar;

/* The loop variables in scope (n == 0: none), then those of `outer` (the
 * parser's rank variables `rank`, `nranks`, `local_rank`), which an inner
 * variable of the same name hides. */
typedef struct DrEnv {
  const DrVar *vars;
  guint n;
  const struct DrEnv *outer;
  /* The run-time parameters' hook (parser/params.c): when not NULL,
   * reading variable i of this env sets bit i of *hits, so the caller
   * learns that a value depends on a parameter and keeps its expression
   * (ir/params.h). At most 64 variables in such an env. */
  guint64 *hits;
} DrEnv;

/* Parses `text`, a non-negative integer with an optional suffix of the
 * classes in `classes`, into *out. FALSE + *msg on a bad number, an unknown
 * or misplaced suffix, or overflow. */
gboolean dr__size_parse(const char *text, DrSizeClass classes, guint64 *out, char **msg);

/* The same for a signed integer (an optional '-' or '+'): FALSE + *msg when
 * it does not fit in 64 signed bits. Integers are decimal, 0x hexadecimal
 * or 0o octal (the YAML 1.2 core schema) in both; "1.5" is "not an
 * integer", and `_` separators and 0b binary (YAML 1.1 only) say so. */
gboolean dr__int_parse(const char *text, DrSizeClass classes, gint64 *out, char **msg);

/* Evaluates the integer expression text[0..len) over `env` (NULL: no
 * variables): + - * / % with C precedence and truncating division,
 * comparisons < <= > >= == != (1 or 0), the conditional a ? b : c (only
 * the branch taken is evaluated; the other is still parsed), min(a, b) and
 * max(a, b), parentheses, unary minus, integers with any size suffix.
 * FALSE + *msg on a syntax error, an unknown variable or function,
 * division by zero or overflow (outside the branch `?:` does not take). */
gboolean dr__expr_eval(const char *text, gsize len, const DrEnv *env, gint64 *out, char **msg);

/* X(NAME, cudaDeviceAttr value, the host backend's value): the read-only
 * `device.NAME` variables (docs/format.md, "Device variables"), the one
 * list of them. The attribute is the number of CUDA's enum cudaDeviceAttr
 * (lib/device_vars.c checks each against the header); the host values
 * are an H200's. */
#define DR_DEVICE_VAR_LIST(X)         \
  X(sm_count, 16, 132)                \
  X(clock_khz, 13, 1980000)           \
  X(cc_major, 75, 9)                  \
  X(cc_minor, 76, 0)                  \
  X(warp_size, 10, 32)                \
  X(max_threads_per_block, 1, 1024)   \
  X(max_threads_per_sm, 39, 2048)     \
  X(smem_per_block_optin, 97, 232448) \
  X(smem_per_sm, 81, 233472)          \
  X(l2_bytes, 38, 52428800)

typedef enum {
#define DR_X(n, a, v) DR_DEVICE_VAR_##n,
  DR_DEVICE_VAR_LIST(DR_X)
#undef DR_X
      DR_N_DEVICE_VARS
} DrDeviceVar;

/* A resolver of `device.NAME`: returns TRUE with variable `var`'s value
 * in *out, or FALSE with *msg (g_free) saying why it cannot. */
typedef gboolean (*DrDeviceVarFn)(DrDeviceVar var, gint64 *out, char **msg);

/* Installs the resolver every expression's `device.NAME` goes to, for the
 * whole process (the library installs its own before loading). Without
 * one (NULL, the default), each variable has its host backend's value. */
void dr__expr_set_device_vars(DrDeviceVarFn fn);

/* Returns TRUE when `text` holds a '{' or '}' and so needs substitution. */
gboolean dr__expr_has_braces(const char *text);

/* Returns a newly allocated copy of `text` with every `{expr}` replaced by
 * its decimal value, or NULL + *msg (unbalanced braces, bad expression). */
char *dr__expr_substitute(const char *text, const DrEnv *env, char **msg);

/* A parsed slice "name[begin:end]"; either bound may be missing. */
typedef struct {
  char *name; /* newly allocated */
  gboolean has_begin, has_end;
  gint64 begin, end;
} DrSlice;

/* Parses `text` ("x", "x[a:b]", "x[:b]", "x[a:]", "x[:]"), bounds being
 * integer expressions over `env`. FALSE + *msg on bad syntax; bounds are
 * checked against the buffer by the caller. Free out->name with g_free. */
gboolean dr__slice_parse(const char *text, const DrEnv *env, DrSlice *out, char **msg);

G_END_DECLS

#endif
