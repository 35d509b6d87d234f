/* nvrtc_deps.c: the headers a user kernel's source includes, as the part of
 * the NVRTC cache key that stands for them (contract in nvrtc_cache.h,
 * dr__nvrtc_deps). It reads files; it does not compile or preprocess.
 *
 * NVRTC (CUDA 13) has no dependency output: it refuses -M, -MD, -MF and
 * --dependency-output ("unrecognized option"), nvrtc.h documents none, and
 * no API lists the files a compile opened. So dagrun finds them itself, the
 * way NVRTC resolves them (checked against NVRTC 13.0 on the CPU): a quoted
 * #include is looked up in the including file's directory (for the source,
 * the directory of the program name, which is the .cu path), then in each
 * --include-path in order; an angled one in the include paths only. Every
 * `#include` line of a file is followed, whatever #if it sits in, so the
 * list is a superset of what NVRTC opened: a header in a branch that is
 * not compiled still counts, never the other way round (a key may change
 * when it need not; it never stays when it must change). Comments are not
 * stripped, for the same reason.
 *
 * Per dependency, one line of the record:
 *   user PATH SHA256      a header outside the toolkit: its contents, and it
 *                         is followed in turn
 *   toolkit PATH          a header under the toolkit's include directories:
 *                         only its resolved path. The toolkit's headers come
 *                         with its NVRTC, which the key already names by its
 *                         file (path, size, mtime), so they are not read;
 *                         they are not followed either
 *   missing "NAME" FILE   not found (NVRTC's built-in headers, a header in a
 *                         dead #if branch): if it appears later, the key
 *                         changes
 *   computed FILE:LINE    `#include MACRO`: not followed (not keyed by what
 *                         the macro names: write the header's name, or
 *                         touch the .cu file after editing it)
 *   unreadable PATH       found but not readable
 *   too-deep PATH         nested DR_MAX_DEPTH deep: not followed further
 *   truncated             more than DR_MAX_DEPS headers: the rest not listed
 * A header is listed once, at its first inclusion, in depth-first order. */
#include <string.h>

#include "backends/nvrtc_cache.h"

/* At most this many distinct headers are followed (a bound on the work a
 * hostile tree of headers can cause; past it the record says so). */
#define DR_MAX_DEPS 4096
/* ... and nested at most this deep (NVRTC's own limit is lower), which
 * bounds the recursion. */
#define DR_MAX_DEPTH 200

typedef struct {
  const char *const *user_dirs;
  const char *const *toolkit_dirs;
  GHashTable *seen; /* resolved path -> itself */
  GString *out;
  guint n;
} Deps;

static gboolean under_toolkit(const Deps *d, const char *path) {
  for (const char *const *t = d->toolkit_dirs; t && *t; t++) {
    gsize n = strlen(*t);
    if (strncmp(path, *t, n) == 0 && (path[n] == '/' || path[n] == '\0')) return TRUE;
  }
  return FALSE;
}

/* The file `spelling` names, from a file in directory `here` (NULL for an
 * angled include), or NULL. Newly allocated, canonical (no ./ or ../). */
static char *resolve(const Deps *d, const char *here, const char *spelling) {
  if (g_path_is_absolute(spelling))
    return g_file_test(spelling, G_FILE_TEST_IS_REGULAR) ? g_canonicalize_filename(spelling, NULL) : NULL;
  if (here != NULL) {
    g_autofree char *p = g_build_filename(here, spelling, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) return g_canonicalize_filename(p, NULL);
  }
  for (int pass = 0; pass < 2; pass++)
    for (const char *const *dir = pass == 0 ? d->user_dirs : d->toolkit_dirs; dir && *dir; dir++) {
      g_autofree char *p = g_build_filename(*dir, spelling, NULL);
      if (g_file_test(p, G_FILE_TEST_IS_REGULAR)) return g_canonicalize_filename(p, NULL);
    }
  return NULL;
}

static void scan(Deps *d, const char *file, const char *text, gsize len, guint depth);

/* One #include of `spelling` (quoted when `quoted`) from `file`, itself
 * `depth` includes below the source. */
static void include(Deps *d, const char *file, const char *spelling, gboolean quoted, guint depth) {
  g_autofree char *here = quoted ? g_path_get_dirname(file) : NULL;
  g_autofree char *path = resolve(d, here, spelling);
  if (path == NULL) {
    g_string_append_printf(d->out, "missing \"%s\" %s\n", spelling, file);
    return;
  }
  if (g_hash_table_contains(d->seen, path)) return;
  if (d->n++ >= DR_MAX_DEPS) {
    if (d->n == DR_MAX_DEPS + 1) g_string_append(d->out, "truncated\n");
    return;
  }
  char *key = g_strdup(path);
  g_hash_table_add(d->seen, key);
  if (under_toolkit(d, path)) {
    g_string_append_printf(d->out, "toolkit %s\n", path);
    return;
  }
  g_autofree char *text = NULL;
  gsize n = 0;
  if (!g_file_get_contents(path, &text, &n, NULL)) {
    g_string_append_printf(d->out, "unreadable %s\n", path);
    return;
  }
  g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)text, n);
  g_string_append_printf(d->out, "user %s %s\n", path, sum);
  if (depth + 1 >= DR_MAX_DEPTH)
    g_string_append_printf(d->out, "too-deep %s\n", path);
  else
    scan(d, key, text, n, depth + 1);
}

/* Follows every #include line of `text` (`len` bytes, the contents of
 * `file`, `depth` includes below the source). */
static void scan(Deps *d, const char *file, const char *text, gsize len, guint depth) {
  const char *p = text, *end = text + len;
  guint line = 0;
  while (p < end) {
    const char *eol = memchr(p, '\n', (gsize)(end - p));
    if (eol == NULL) eol = end;
    line++;
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q < eol && *q == '#') {
      q++;
      while (q < eol && (*q == ' ' || *q == '\t')) q++;
      gsize kw = 0;
      if ((gsize)(eol - q) >= 12 && strncmp(q, "include_next", 12) == 0)
        kw = 12;
      else if ((gsize)(eol - q) >= 7 && strncmp(q, "include", 7) == 0)
        kw = 7;
      if (kw && (q + kw == eol || !(g_ascii_isalnum(q[kw]) || q[kw] == '_'))) {
        q += kw;
        while (q < eol && (*q == ' ' || *q == '\t')) q++;
        char close = q < eol && *q == '"' ? '"' : q < eol && *q == '<' ? '>' : '\0';
        const char *stop = close ? memchr(q + 1, close, (gsize)(eol - q - 1)) : NULL;
        if (stop != NULL && stop > q + 1) {
          g_autofree char *spelling = g_strndup(q + 1, (gsize)(stop - q - 1));
          include(d, file, spelling, close == '"', depth);
        } else {
          g_string_append_printf(d->out, "computed %s:%u\n", file, line);
        }
      }
    }
    p = eol + 1;
  }
}

char *dr__nvrtc_deps(const char *name, const char *source, gsize len, const char *const *user_dirs,
                     const char *const *toolkit_dirs) {
  g_return_val_if_fail(name != NULL && source != NULL, NULL);
  Deps d = {.user_dirs = user_dirs,
            .toolkit_dirs = toolkit_dirs,
            .seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
            .out = g_string_new(NULL)};
  scan(&d, name, source, len, 0);
  g_hash_table_unref(d.seen);
  return g_string_free(d.out, FALSE);
}
