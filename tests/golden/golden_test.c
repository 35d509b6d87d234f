/* golden_test.c: runs every tests/golden/NAME.yaml through the dagrun
 * command line in-process (dr__cli_run, exactly what the binary runs) and
 * compares "exit N\n" + stdout + stderr with NAME.expected, byte for byte.
 *
 * Arguments: NAME.args when present (whitespace-separated), else
 * --dump-after=parse for good_* cases and --check for the others. The file
 * name is passed relative to tests/golden, so messages read "NAME.yaml:L:C".
 * With DAGRUN_REGEN=1 under `bazel run` the .expected files are rewritten
 * in the source tree instead (see README.md). */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "cli/cli.h"

static const char *regen_dir; /* non-NULL: write .expected files here */

static char *run_case(const char *name) {
  g_autofree char *args_path = g_strdup_printf("%s.args", name);
  g_autofree char *yaml = g_strdup_printf("%s.yaml", name);
  g_autofree char *args_text = NULL;
  GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(argv, g_strdup("dagrun"));
  if (g_file_get_contents(args_path, &args_text, NULL, NULL)) {
    g_auto(GStrv) words = g_strsplit_set(g_strstrip(args_text), " \t\n", -1);
    for (guint i = 0; words[i]; i++)
      if (words[i][0]) g_ptr_array_add(argv, g_strdup(words[i]));
  } else {
    g_ptr_array_add(argv, g_strdup(g_str_has_prefix(name, "good_") ? "--dump-after=parse" : "--check"));
  }
  g_ptr_array_add(argv, g_strdup(yaml));
  /* dr__cli_run may permute argv (GOption): hand it a copy of the pointers. */
  g_autofree char **copy = g_new0(char *, argv->len + 1);
  memcpy(copy, argv->pdata, argv->len * sizeof(char *));
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  int rc = dr__cli_run((int)argv->len, copy, out, err);
  g_ptr_array_unref(argv);
  return g_strdup_printf("exit %d\n%s%s", rc, out->str, err->str);
}

static void test_case(gconstpointer data) {
  const char *name = data;
  g_autofree char *got = run_case(name);
  g_autofree char *expected_path = g_strdup_printf("%s.expected", name);
  if (regen_dir != NULL) {
    g_autofree char *dest = g_build_filename(regen_dir, expected_path, NULL);
    g_autoptr(GError) error = NULL;
    g_assert_true(g_file_set_contents(dest, got, -1, &error));
    return;
  }
  g_autofree char *expected = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(expected_path, &expected, NULL, &error))
    g_error("%s: %s (run with DAGRUN_REGEN=1, see README.md)", expected_path, error->message);
  g_assert_cmpstr(got, ==, expected);
}

static gint cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  const char *srcdir = g_getenv("TEST_SRCDIR");
  const char *ws = g_getenv("BUILD_WORKSPACE_DIRECTORY");
  if (g_getenv("DAGRUN_REGEN") != NULL) {
    if (ws == NULL) g_error("DAGRUN_REGEN=1 needs `bazel run` (BUILD_WORKSPACE_DIRECTORY)");
    regen_dir = g_build_filename(ws, "tests", "golden", NULL);
    if (g_chdir(regen_dir) != 0) g_error("cannot enter %s", regen_dir);
  } else if (g_file_test("tests/golden", G_FILE_TEST_IS_DIR)) {
    g_assert_cmpint(g_chdir("tests/golden"), ==, 0);
  } else if (srcdir != NULL) {
    g_autofree char *dir = g_build_filename(srcdir, "dagrun", "tests", "golden", NULL);
    g_assert_cmpint(g_chdir(dir), ==, 0);
  }
  g_autoptr(GDir) dir = g_dir_open(".", 0, NULL);
  g_assert_nonnull(dir);
  GPtrArray *names = g_ptr_array_new();
  const char *f;
  guint bad = 0, good = 0;
  while ((f = g_dir_read_name(dir)) != NULL) {
    if (!g_str_has_suffix(f, ".yaml")) continue;
    g_ptr_array_add(names, g_strndup(f, strlen(f) - 5));
    if (g_str_has_prefix(f, "good_"))
      good++;
    else
      bad++;
  }
  g_ptr_array_sort(names, cmp_str);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_strdup_printf("/golden/%s", (char *)names->pdata[i]);
    g_test_add_data_func(path, names->pdata[i], test_case);
  }
  /* The suite itself: enough cases on both sides. */
  g_assert_cmpuint(bad, >=, 45);
  g_assert_cmpuint(good, >=, 5);
  return g_test_run();
}
