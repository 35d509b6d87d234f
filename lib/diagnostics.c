/* diagnostics.c: the public library's diagnostics with locations, loading
 * with them, the IR dump after a named pass, and the built-in kernel list
 * (include/dagrun/dagrun.h): what the command line needs beside pipelines,
 * plans and reports, so that it is a client of the public API only. The
 * caret display itself stays in cli/. */
#include <string.h>

#include "lib/api_internal.h"

struct DrDiagnostics {
  DrDiags *diags;
  GPtrArray *texts; /* char *: dr_diag_format of each, made on demand */
};

DrDiagnostics *dr_diagnostics_new(void) {
  DrDiagnostics *d = g_new0(DrDiagnostics, 1);
  d->diags = dr_diags_new(0);
  d->texts = g_ptr_array_new_with_free_func(g_free);
  return d;
}

void dr_diagnostics_free(DrDiagnostics *diagnostics) {
  if (diagnostics == NULL) return;
  dr_diags_free(diagnostics->diags);
  g_ptr_array_unref(diagnostics->texts);
  g_free(diagnostics);
}

/* Empties `d` for a new load and returns its collector. */
static DrDiags *diagnostics_reset(DrDiagnostics *d) {
  dr_diags_free(d->diags);
  d->diags = dr_diags_new(0);
  g_ptr_array_set_size(d->texts, 0);
  return d->diags;
}

guint dr_diagnostics_len(const DrDiagnostics *diagnostics) {
  g_return_val_if_fail(diagnostics != NULL, 0);
  return dr_diags_len(diagnostics->diags);
}

guint dr_diagnostics_n_errors(const DrDiagnostics *diagnostics) {
  g_return_val_if_fail(diagnostics != NULL, 0);
  return dr_diags_n_errors(diagnostics->diags);
}

void dr_diagnostics_get(const DrDiagnostics *diagnostics, guint i, DrDiagnostic *out) {
  g_return_if_fail(diagnostics != NULL && out != NULL && i < dr_diags_len(diagnostics->diags));
  GPtrArray *texts = diagnostics->texts;
  while (texts->len <= i)
    g_ptr_array_add(texts, dr_diag_format(dr_diags_get(diagnostics->diags, texts->len)));
  const DrDiag *d = dr_diags_get(diagnostics->diags, i);
  *out = (DrDiagnostic){.kind = d->kind == DR_DIAG_NOTE ? DR_DIAGNOSTIC_NOTE : DR_DIAGNOSTIC_ERROR,
                        .file = d->loc.file,
                        .line = d->loc.line,
                        .col = d->loc.col,
                        .text = g_ptr_array_index(texts, i)};
}

/* Loads `path` into a graph, dumping after `after` when not NULL. */
static DrGraph *load_graph(const char *path, const char *after, GString *dump, DrDiagnostics *diagnostics,
                           GError **error) {
  g_autoptr(DrDiags) own = NULL;
  DrDiags *diags = diagnostics ? diagnostics_reset(diagnostics) : (own = dr_diags_new(0));
  dr__device_vars_install();
  return dr__load_file_dump(path, after, dump, diags, error);
}

DrPipeline *dr_pipeline_load_file_diagnostics(const char *path, DrDiagnostics *diagnostics, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  DrGraph *g = load_graph(path, NULL, NULL, diagnostics, error);
  return g ? dr__pipeline_wrap(g, TRUE) : NULL;
}

const char *const *dr_pass_names(void) { return dr_passes_names(); }

gboolean dr_pipeline_dump_file(const char *path, const char *after, DrDiagnostics *diagnostics, GString *out,
                               GError **error) {
  g_return_val_if_fail(path != NULL && after != NULL && out != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (!dr_passes_has_name(after)) {
    g_autofree char *list = g_strjoinv(", ", (char **)dr_passes_names());
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "no pass named '%s' (the names: %s)", after, list);
    return FALSE;
  }
  g_autoptr(DrGraph) g = load_graph(path, after, out, diagnostics, error);
  return g != NULL;
}

const DrKernelDef *dr_builtin_kernel(guint i) {
  return i < (guint)dr_kernel_registry_len ? &dr_kernel_registry[i] : NULL;
}

const char *dr_builtin_kernel_rules(guint i) {
  return i < (guint)dr_kernel_registry_len ? dr_kernel_rules(&dr_kernel_registry[i]) : NULL;
}
