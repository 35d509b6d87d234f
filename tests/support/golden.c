/* golden.c: golden-file comparison for tests (golden.h). */
#include "tests/support/golden.h"

#include <glib.h>

void dr_test_check_golden(const char *dir, const char *target, const char *name, const char *actual) {
  const char *ws = g_getenv("BUILD_WORKSPACE_DIRECTORY");
  g_autofree char *path = g_build_filename(ws && g_getenv("DAGRUN_REGEN") ? ws : ".", dir, name, NULL);
  if (g_getenv("DAGRUN_REGEN")) {
    g_autoptr(GError) error = NULL;
    g_assert_true(g_file_set_contents(path, actual, -1, &error));
    return;
  }
  g_autofree char *expected = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &expected, NULL, &error))
    g_error("%s: %s (DAGRUN_REGEN=1 bazel run %s writes it)", path, error->message, target);
  g_assert_cmpstr(actual, ==, expected);
}
