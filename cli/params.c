/* params.c: --param and --params-from (params.h). What a value may be is
 * the library's to say (dr_pipeline_set_param); this file splits the
 * words, places errors in the sweep file, and keeps the exit codes of
 * decisions.md: 64 for the command line, 65 at FILE:LINE:COL for a bad
 * word in the file, 66 when the file cannot be read. */
#include "cli/params.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int dr__cli_params_set(DrPipeline *pipeline, char **params, GString *err) {
  for (guint i = 0; params != NULL && params[i] != NULL; i++) {
    const char *eq = strchr(params[i], '=');
    if (eq == NULL || eq == params[i]) {
      g_string_append_printf(
          err, "dagrun: error: --param expects NAME=VALUE, not '%s'\nTry 'dagrun --help'.\n", params[i]);
      return 64;
    }
    g_autofree char *name = g_strndup(params[i], (gsize)(eq - params[i]));
    g_autoptr(GError) error = NULL;
    if (!dr_pipeline_set_param(pipeline, name, eq + 1, &error)) {
      g_string_append_printf(err, "dagrun: error: --param %s: %s\n", params[i], error->message);
      return 64;
    }
  }
  return 0;
}

char **dr__cli_params_save(const DrPipeline *pipeline) {
  guint n = dr_pipeline_n_params(pipeline);
  char **out = g_new0(char *, n + 1);
  for (guint i = 0; i < n; i++) {
    g_autofree char *v = dr_pipeline_param_value(pipeline, i);
    out[i] = g_strdup_printf("%s=%s", dr_pipeline_param_name(pipeline, i), v);
  }
  return out;
}

void dr__cli_sweep_free(GArray *lines) {
  if (lines == NULL) return;
  for (guint i = 0; i < lines->len; i++) g_ptr_array_unref(g_array_index(lines, DrCliSweepLine, i).sets);
  g_array_unref(lines);
}

/* The message of a library error without a "FILE:L:C: error: " head of
 * its own (a value that breaks a slice names the slice's place). */
static const char *bare(const char *msg) {
  const char *e = strstr(msg, "error: ");
  return e ? e + 7 : msg;
}

int dr__cli_params_read(const char *path, DrPipeline *pipeline, GArray **lines, GString *err) {
  *lines = NULL;
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) ioerr = NULL;
  if (!g_file_get_contents(path, &text, &len, &ioerr)) {
    /* The reason as the pipeline loader words it (strerror). */
    FILE *f = fopen(path, "rb");
    int e = f ? EISDIR : errno;
    if (f) fclose(f);
    g_string_append_printf(err, "%s: error: cannot read: %s\n", path, g_strerror(e));
    return 66;
  }
  g_auto(GStrv) base = dr__cli_params_save(pipeline);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(DrCliSweepLine));
  int rc = 0;
  guint lineno = 0;
  for (const char *p = text; rc == 0 && p < text + len;) {
    const char *nl = memchr(p, '\n', (gsize)(text + len - p));
    const char *end = nl ? nl : text + len;
    lineno++;
    const char *q = p;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q < end && *q != '#') {
      DrCliSweepLine sl = {lineno, g_ptr_array_new_with_free_func(g_free)};
      g_array_append_val(out, sl);
      while (rc == 0 && q < end) {
        const char *w = q;
        while (q < end && *q != ' ' && *q != '\t' && *q != '\r') q++;
        g_autofree char *word = g_strndup(w, (gsize)(q - w));
        guint col = (guint)(w - p) + 1;
        const char *eq = strchr(word, '=');
        g_autoptr(GError) error = NULL;
        if (eq == NULL || eq == word) {
          g_string_append_printf(err, "%s:%u:%u: error: expected NAME=VALUE, not '%s'\n", path, lineno, col,
                                 word);
          rc = 65;
        } else {
          g_autofree char *name = g_strndup(word, (gsize)(eq - word));
          if (!dr_pipeline_set_param(pipeline, name, eq + 1, &error)) {
            g_string_append_printf(err, "%s:%u:%u: error: %s\n", path, lineno, col, bare(error->message));
            rc = 65;
          } else {
            g_ptr_array_add(sl.sets, g_steal_pointer(&word));
          }
        }
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
      }
      /* Each line starts from the values before the file. */
      g_autoptr(GString) ignored = g_string_new(NULL);
      (void)dr__cli_params_set(pipeline, base, ignored);
    }
    p = end + (nl ? 1 : 0);
  }
  if (rc == 0 && out->len == 0) {
    g_string_append_printf(err, "%s:1:1: error: no parameter sets (one NAME=VALUE ... line per run)\n", path);
    rc = 65;
  }
  if (rc != 0) {
    dr__cli_sweep_free(out);
    return rc;
  }
  *lines = out;
  return 0;
}
