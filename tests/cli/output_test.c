/* output_test.c: what the command line writes where (cli/cli.c), run
 * in-process: --plan --format=json streamed to a real stdout gives the
 * very bytes the in-memory path gives, for every example, and a stdout
 * that cannot be written is exit 73; --format=json keeps stdout one JSON
 * object (host print output goes to stderr; --dot/--trace/--timeline=-
 * are refused, exit 64); --sort orders the summary by kernel/op in both
 * formats and refuses unknown keys. The terminal's side (the progress
 * bar, TERM=dumb, NO_COLOR) is terminal_test.py's. Registered by
 * cli_test.c. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

void dr_test_output_add(void);

/* dagrun with the NULL-terminated `args`, stdout streamed to `file` when
 * non-NULL; out and err are emptied first. */
static int run_args(FILE *file, GString *out, GString *err, const char *const *args) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, "dagrun");
  for (guint i = 0; args[i] != NULL; i++) g_ptr_array_add(argv, (gpointer)args[i]);
  g_ptr_array_add(argv, NULL);
  g_string_truncate(out, 0);
  g_string_truncate(err, 0);
  return dr__cli_run_stdout((int)argv->len - 1, (char **)argv->pdata, file, out, err);
}

#define RUN(file, out, err, ...) run_args(file, out, err, (const char *const[]){__VA_ARGS__, NULL})

/* Every example: graphs/ and the golden good_ cases. */
static GPtrArray *examples(void) {
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  const char *dirs[] = {"graphs", "tests/golden"};
  for (guint d = 0; d < G_N_ELEMENTS(dirs); d++) {
    g_autoptr(GDir) dir = g_dir_open(dirs[d], 0, NULL);
    if (dir == NULL) continue;
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL)
      if (g_str_has_suffix(name, ".yaml") && (d == 0 || g_str_has_prefix(name, "good_")))
        g_ptr_array_add(files, g_build_filename(dirs[d], name, NULL));
  }
  return files;
}

/* The streamed --plan --format=json is byte for byte the in-memory one. */
static void test_plan_json_streamed(void) {
  g_autoptr(GPtrArray) files = examples();
  g_assert_cmpuint(files->len, >=, 20);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_autoptr(GString) want = g_string_new(NULL);
  guint compared = 0;
  for (guint i = 0; i < files->len; i++) {
    const char *path = g_ptr_array_index(files, i);
    int rc = RUN(NULL, want, err, "--plan", "--format=json", path);
    if (rc != 0) continue; /* a good_ case that does not plan here */
    FILE *f = tmpfile();
    g_assert_nonnull(f);
    g_assert_cmpint(RUN(f, out, err, "--plan", "--format=json", path), ==, 0);
    g_assert_cmpuint(out->len, ==, 0); /* nothing left for main() to print */
    long len = ftell(f);
    g_assert_cmpint(len, ==, (long)want->len);
    rewind(f);
    g_autofree char *got = g_malloc(want->len + 1);
    g_assert_cmpuint(fread(got, 1, want->len, f), ==, want->len);
    fclose(f);
    if (memcmp(got, want->str, want->len) != 0) g_error("%s: streamed --plan JSON differs", path);
    compared++;
  }
  g_assert_cmpuint(compared, >=, 20);
  FILE *full = fopen("/dev/full", "w");
  if (full == NULL) return;
  g_assert_cmpint(RUN(full, out, err, "--plan", "--format=json", "graphs/pipeline.yaml"), ==, 73);
  g_assert_nonnull(strstr(err->str, "dagrun: error: stdout: "));
  fclose(full);
}

/* Writes a pipeline with host print nodes to a temporary file. */
static char *printing_pipeline(void) {
  static const char yaml[] =
      "dagrun: 1\n"
      "run: {iterations: 2, warmup: 0}\n"
      "buffers:\n"
      "  h: {type: f32, count: 16, where: host, init: iota}\n"
      "nodes:\n"
      "  say: {op: host, fn: print, args: {message: \"hello from print\", buffer: 'h[0:4]'}}\n"
      "  sum: {op: host, fn: checksum, args: {buffer: h}, after: [say]}\n";
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("dagrun-print-XXXXXX.yaml", &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(write(fd, yaml, sizeof yaml - 1), ==, (gssize)(sizeof yaml - 1));
  close(fd);
  return g_steal_pointer(&path);
}

/* With --format=json stdout is exactly one JSON object, and nothing may
 * add a second document to it. (That print output goes to the process's
 * stderr then is terminal_test.py's, which runs the binary.) */
static void test_json_stdout_pure(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_autofree char *path = printing_pipeline();
  g_autofree char *trace = g_build_filename(g_get_tmp_dir(), "dagrun-output-test-trace.json", NULL);
  g_autofree char *trace_flag = g_strdup_printf("--trace=%s", trace);
  g_assert_cmpint(RUN(NULL, out, err, "--backend=host", "--format=json", trace_flag, path), ==, 0);
  g_assert_true(g_str_has_prefix(out->str, "{\"schema\": "));
  g_assert_true(g_str_has_suffix(out->str, "}\n\n"));
  g_assert_null(strstr(out->str, "hello from print"));
  g_assert_cmpuint((guint)(strchr(out->str, '\n') - out->str), ==, out->len - 2); /* one line */
  g_unlink(trace);
  const char *flags[] = {"--dot=-", "--trace=-", "--timeline=-"};
  for (guint i = 0; i < G_N_ELEMENTS(flags); i++) {
    g_assert_cmpint(RUN(NULL, out, err, "--backend=host", "--format=json", flags[i], path), ==, 64);
    g_assert_cmpuint(out->len, ==, 0);
    g_autofree char *want = g_strdup_printf("dagrun: error: %.*s=- would mix its output into --format=json's",
                                            (int)(strchr(flags[i], '=') - flags[i]), flags[i]);
    if (!g_str_has_prefix(err->str, want)) g_error("%s: got '%s'", flags[i], err->str);
    g_assert_cmpint(RUN(NULL, out, err, "--plan", "--format=json", flags[i], path), ==, 64);
  }
  /* The DOT alone, or beside the text report, may still go to stdout. */
  g_assert_cmpint(RUN(NULL, out, err, "--dot=-", path), ==, 0);
  g_assert_true(g_str_has_prefix(out->str, "digraph "));
  g_assert_cmpint(RUN(NULL, out, err, "--dot=-", "--format=text", "--plan", path), ==, 0);
  g_unlink(path);
}

/* --sort orders the summary in both formats; unknown keys are exit 64. */
static void test_sort(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(RUN(NULL, out, err, "--backend=host", "--iterations=2", "--warmup=0", "--sort=name",
                      "graphs/pipeline.yaml"),
                  ==, 0);
  const char *t = strstr(out->str, "summary by kernel/op (sorted by name):\nname ");
  g_assert_nonnull(t);
  const char *a = strstr(t, "\nalloc "), *c = strstr(t, "\ncopy D2H "), *d = strstr(t, "\ncopy H2D "),
             *s = strstr(t, "\nscale_f32 ");
  g_assert_true(a && c && d && s && a < c && c < d && d < s);
  g_assert_cmpint(RUN(NULL, out, err, "--backend=host", "--iterations=2", "--warmup=0", "--sort=instances",
                      "--format=json", "graphs/pipeline.yaml"),
                  ==, 0);
  t = strstr(out->str, "\"summary\": [{\"name\": ");
  g_assert_nonnull(t);
  /* 16 copies in two directions, 8 kernels, 2 allocs, 2 frees: the
   * kernels' 16 instances tie with each copy direction's, then by name. */
  a = strstr(t, "\"copy D2H\""), d = strstr(t, "\"copy H2D\""), s = strstr(t, "\"scale_f32\"");
  const char *al = strstr(t, "\"alloc\"");
  g_assert_true(a && d && s && al && a < d && d < s && s < al);
  g_assert_cmpint(RUN(NULL, out, err, "--sort=duration", "graphs/pipeline.yaml"), ==, 64);
  g_assert_cmpstr(
      err->str, ==,
      "dagrun: error: --sort must be total, instances, median, stddev, min, max, bytes or name, not "
      "'duration'\nTry 'dagrun --help'.\n");
  g_assert_cmpint(RUN(NULL, out, err, "--sort=name", "--plan", "graphs/pipeline.yaml"), ==, 0);
  g_assert_cmpstr(err->str, ==, "dagrun: warning: --sort has no effect with --plan: nothing runs\n");
}

void dr_test_output_add(void) {
  g_test_add_func("/cli/output/plan-json-streamed", test_plan_json_streamed);
  g_test_add_func("/cli/output/json-stdout-pure", test_json_stdout_pure);
  g_test_add_func("/cli/output/sort", test_sort);
}
