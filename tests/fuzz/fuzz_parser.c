/* fuzz_parser.c: libFuzzer target for the parser and the passes after it:
 * any byte string must load into a graph or into diagnostics, never crash,
 * hang or leak. Built only with --config=fuzz (clang's libFuzzer). */
#include <glib.h>

#include "ir/diag.h"
#include "lib/load.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) graph = dr_load_string("fuzz.yaml", (const char *)data, size, diags, &error);
  if (graph == NULL) {
    g_assert_nonnull(error);
    g_assert_cmpint(dr_error_exit_code(error), !=, 0);
  }
  return 0;
}
