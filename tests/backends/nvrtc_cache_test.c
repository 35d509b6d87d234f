/* nvrtc_cache_test.c: the NVRTC cubin cache (backends/nvrtc_cache.h) on the
 * CPU: misses, hits, what changes the key, damaged entries and an unusable
 * cache directory. NVRTC compiles on the host, so no GPU is needed; when
 * libnvrtc cannot be loaded every case is skipped. No timing here: the
 * speed-up is measured by bench/nvrtc_cache_bench.c. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "backends/nvrtc_cache.h"
#include "ir/diag.h"

static const char kSource[] =
    "extern \"C\" __global__ void axpb_f32(const float *x, float *y, long long n, float a, float b) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + b;\n"
    "}\n";

typedef struct {
  char *dir; /* the cache directory, $DAGRUN_CACHE_DIR */
} Fixture;

static void fixture_set_up(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  f->dir = g_dir_make_tmp("nvrtc-cache-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("DAGRUN_CACHE_DIR", f->dir, TRUE);
}

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d != NULL) {
    const char *e;
    while ((e = g_dir_read_name(d)) != NULL) {
      g_autofree char *child = g_build_filename(path, e, NULL);
      remove_tree(child);
    }
    g_dir_close(d);
  }
  (void)g_remove(path);
}

static void fixture_tear_down(Fixture *f, gconstpointer data) {
  (void)data;
  remove_tree(f->dir);
  g_free(f->dir);
  g_unsetenv("DAGRUN_CACHE_DIR");
}

/* Returns the number of entries in `dir` and, when exactly one, its path
 * in *only (g_free). */
static guint count_entries(const char *dir, char **only) {
  guint n = 0;
  if (only) *only = NULL;
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return 0;
  const char *e;
  while ((e = g_dir_read_name(d)) != NULL) {
    g_assert_true(g_str_has_suffix(e, ".cubin"));
    if (only && n == 0) *only = g_build_filename(dir, e, NULL);
    n++;
  }
  g_dir_close(d);
  if (only && n != 1) g_clear_pointer(only, g_free);
  return n;
}

/* Compiles through the cache; returns FALSE (and skips the test) when NVRTC
 * is not available, else asserts success. */
static gboolean compile(const char *src, const char *arch, const char *const *opts, GBytes **out,
                        gboolean *hit) {
  char *cubin = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok = dr__nvrtc_compile_cached("axpb.cu", src, strlen(src), arch, opts, &cubin, &len, hit, &error);
  if (!ok && g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE)) {
    g_test_skip(error->message);
    return FALSE;
  }
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_cmpuint(len, >, 4);
  g_assert_cmpmem(cubin, 4,
                  "\x7f"
                  "ELF",
                  4);
  *out = g_bytes_new_take(cubin, len);
  return TRUE;
}

static void test_miss_then_hit(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GBytes) first = NULL, second = NULL;
  gboolean hit = TRUE;
  if (!compile(kSource, "sm_90", NULL, &first, &hit)) return;
  g_assert_false(hit);
  g_autofree char *entry = NULL;
  g_assert_cmpuint(count_entries(f->dir, &entry), ==, 1);
  g_autofree char *stored = NULL;
  gsize stored_len = 0;
  g_assert_true(g_file_get_contents(entry, &stored, &stored_len, NULL));
  g_assert_cmpmem(stored, stored_len, g_bytes_get_data(first, NULL), g_bytes_get_size(first));

  g_assert_true(compile(kSource, "sm_90", NULL, &second, &hit));
  g_assert_true(hit);
  g_assert_true(g_bytes_equal(first, second));
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 1);
}

static void test_key_changes(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GBytes) base = NULL, other_src = NULL, other_opts = NULL, other_arch = NULL, again = NULL;
  gboolean hit = TRUE;
  if (!compile(kSource, "sm_90", NULL, &base, &hit)) return;
  g_assert_false(hit);

  g_autofree char *src2 = g_strconcat(kSource, "// a comment changes the bytes\n", NULL);
  g_assert_true(compile(src2, "sm_90", NULL, &other_src, &hit));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);

  const char *const opts[] = {"-DDAGRUN_TEST=1", NULL};
  g_assert_true(compile(kSource, "sm_90", opts, &other_opts, &hit));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 3);

  g_assert_true(compile(kSource, "sm_80", NULL, &other_arch, &hit));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 4);
  g_assert_false(g_bytes_equal(base, other_arch));

  /* And each one is a hit the second time. */
  g_autoptr(GBytes) a2 = NULL, o2 = NULL;
  g_assert_true(compile(kSource, "sm_80", NULL, &a2, &hit));
  g_assert_true(hit);
  g_assert_true(g_bytes_equal(other_arch, a2));
  g_assert_true(compile(kSource, "sm_90", opts, &o2, &hit));
  g_assert_true(hit);
  g_assert_true(compile(kSource, "sm_90", NULL, &again, &hit));
  g_assert_true(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 4);
}

/* Overwrites the single entry with `bytes`, then checks the next call
 * misses, returns the real cubin and rewrites the entry with it. */
static void damage_and_recover(Fixture *f, const void *bytes, gsize len, GBytes *good) {
  g_autofree char *entry = NULL;
  g_assert_cmpuint(count_entries(f->dir, &entry), ==, 1);
  g_assert_true(g_file_set_contents(entry, bytes, (gssize)len, NULL));
  g_autoptr(GBytes) got = NULL;
  gboolean hit = TRUE;
  g_assert_true(compile(kSource, "sm_90", NULL, &got, &hit));
  g_assert_false(hit);
  g_assert_true(g_bytes_equal(got, good));
  g_autofree char *stored = NULL;
  gsize stored_len = 0;
  g_assert_true(g_file_get_contents(entry, &stored, &stored_len, NULL));
  g_assert_cmpmem(stored, stored_len, g_bytes_get_data(good, NULL), g_bytes_get_size(good));
}

static void test_damaged_entry(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GBytes) good = NULL;
  gboolean hit = TRUE;
  if (!compile(kSource, "sm_90", NULL, &good, &hit)) return;
  gsize len = 0;
  const char *bytes = g_bytes_get_data(good, &len);
  damage_and_recover(f, bytes, len / 2, good);             /* truncated */
  damage_and_recover(f, bytes, len - 1, good);             /* one byte short */
  damage_and_recover(f, "not a cubin at all\n", 19, good); /* garbage */
  damage_and_recover(f, "", 0, good);                      /* empty */
  g_autoptr(GBytes) last = NULL;
  g_assert_true(compile(kSource, "sm_90", NULL, &last, &hit));
  g_assert_true(hit);
}

static void test_unwritable_dir(Fixture *f, gconstpointer data) {
  (void)data;
  /* A directory under a regular file cannot be created, even by root. */
  g_autofree char *file = g_build_filename(f->dir, "plain-file", NULL);
  g_assert_true(g_file_set_contents(file, "x", 1, NULL));
  g_autofree char *bad = g_build_filename(file, "cache", NULL);
  g_setenv("DAGRUN_CACHE_DIR", bad, TRUE);
  g_autoptr(GBytes) first = NULL, second = NULL;
  gboolean hit = TRUE;
  if (!compile(kSource, "sm_90", NULL, &first, &hit)) return;
  g_assert_false(hit);
  g_assert_true(compile(kSource, "sm_90", NULL, &second, &hit));
  g_assert_false(hit);
  g_assert_true(g_bytes_equal(first, second));
  g_assert_false(g_file_test(bad, G_FILE_TEST_EXISTS));
}

static void test_compile_error(Fixture *f, gconstpointer data) {
  (void)data;
  static const char bad[] =
      "extern \"C\" __global__ void k(float *y) {\n"
      "  y[0] = 1.0f;\n"
      "  y[1] = undeclared_name;\n"
      "}\n";
  char *cubin = NULL;
  gsize len = 0;
  gboolean hit = TRUE;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      dr__nvrtc_compile_cached("bad.cu", bad, strlen(bad), "sm_90", NULL, &cubin, &len, &hit, &error);
  if (!ok && g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE)) {
    g_test_skip(error->message);
    return;
  }
  g_assert_false(ok);
  g_assert_null(cubin);
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "bad.cu does not compile"));
  g_assert_nonnull(strstr(error->message, "bad.cu(3)"));
  g_assert_nonnull(strstr(error->message, "undeclared_name"));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 0);
}

/* A kernel as users write them under nvcc: cooperative groups, cuda/std and
 * a CUB block reduction (CUDA 13 keeps the last two in include/cccl), a
 * header from the kernel's own include_dirs and a value from its defines,
 * through the options
 * dr__nvrtc_user_options builds for user_kernels.c. Compiles for sm_90 on
 * the CPU (no device is asked for anything). */
static const char kPortSource[] =
    "#include <cooperative_groups.h>\n"
    "#include <cuda/std/type_traits>\n"
    "#include <cub/block/block_reduce.cuh>\n"
    "#include \"port_tile.h\"\n"
    "#ifndef PORT_SCALE\n"
    "#error PORT_SCALE is not defined\n"
    "#endif\n"
    "namespace cg = cooperative_groups;\n"
    "static_assert(cuda::std::is_same<port_elem_t, float>::value, \"port_elem_t\");\n"
    "extern \"C\" __global__ void port_scale(port_elem_t *y, long long n) {\n"
    "  cg::thread_block block = cg::this_thread_block();\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + block.thread_rank();\n"
    "  if (i < n) y[i] = PORT_TILE_SCALE(y[i], PORT_SCALE);\n"
    "  block.sync();\n"
    "}\n"
    "extern \"C\" __global__ void port_sum(const port_elem_t *x, port_elem_t *out) {\n"
    "  typedef cub::BlockReduce<port_elem_t, 128> Reduce;\n"
    "  __shared__ typename Reduce::TempStorage tmp;\n"
    "  port_elem_t s = Reduce(tmp).Sum(x[threadIdx.x]);\n"
    "  if (threadIdx.x == 0) *out = s;\n"
    "}\n";

static gboolean compile_port(const char *const *options, gboolean *hit, GError **error) {
  char *cubin = NULL;
  gsize len = 0;
  gboolean ok = dr__nvrtc_compile_cached("port.cu", kPortSource, strlen(kPortSource), "sm_90", options,
                                         &cubin, &len, hit, error);
  if (ok) {
    g_assert_cmpuint(len, >, 4);
    g_assert_cmpmem(cubin, 4,
                    "\x7f"
                    "ELF",
                    4);
  }
  g_free(cubin);
  return ok;
}

static void test_user_options(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  g_autofree char *inc = g_dir_make_tmp("nvrtc-inc-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *header = g_build_filename(inc, "port_tile.h", NULL);
  g_assert_true(g_file_set_contents(header,
                                    "#pragma once\n"
                                    "typedef float port_elem_t;\n"
                                    "#define PORT_TILE_SCALE(v, s) ((v) * (s))\n",
                                    -1, NULL));
  const char *dirs[] = {inc};
  const char *defines3[] = {"PORT_SCALE=3", "PORT_FLAG"};
  const char *defines4[] = {"PORT_SCALE=4", "PORT_FLAG"};
  g_auto(GStrv) opts3 = dr__nvrtc_user_options(dirs, 1, defines3, 2);
  g_auto(GStrv) opts4 = dr__nvrtc_user_options(dirs, 1, defines4, 2);
  g_autofree char *want_inc = g_strconcat("--include-path=", inc, NULL);
  g_assert_cmpuint(g_strv_length(opts3), ==, 3);
  g_assert_cmpstr(opts3[0], ==, want_inc);
  g_assert_cmpstr(opts3[1], ==, "-DPORT_SCALE=3");
  g_assert_cmpstr(opts3[2], ==, "-DPORT_FLAG");
  g_auto(GStrv) none = dr__nvrtc_user_options(NULL, 0, NULL, 0);
  g_assert_cmpuint(g_strv_length(none), ==, 0);

  gboolean hit = TRUE;
  if (!compile_port((const char *const *)opts3, &hit, &error)) {
    if (g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE)) {
      g_test_skip(error->message);
      remove_tree(inc);
      return;
    }
    g_error("port.cu: %s", error->message);
  }
  g_assert_false(hit);
  g_assert_true(compile_port((const char *const *)opts3, &hit, &error));
  g_assert_true(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 1);
  /* A define is part of the key: another value is another entry. */
  g_assert_true(compile_port((const char *const *)opts4, &hit, &error));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);

  /* Without the kernel's include directory the header is not found, and
   * without its define the #error fires: both are the user's options. */
  const char *only_inc[] = {opts3[0], NULL};
  g_assert_false(compile_port(only_inc, &hit, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "PORT_SCALE is not defined"));
  g_clear_error(&error);
  const char *only_def[] = {opts3[1], NULL};
  g_assert_false(compile_port(only_def, &hit, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "port_tile.h"));
  g_clear_error(&error);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);
  remove_tree(inc);
}

static void test_default_dir(void) {
  g_unsetenv("DAGRUN_CACHE_DIR");
  g_autofree char *dir = dr__nvrtc_cache_dir();
  g_autofree char *want = g_build_filename(g_get_user_cache_dir(), "dagrun", "nvrtc", NULL);
  g_assert_cmpstr(dir, ==, want);
  g_setenv("DAGRUN_CACHE_DIR", "/some/where", TRUE);
  g_autofree char *env = dr__nvrtc_cache_dir();
  g_assert_cmpstr(env, ==, "/some/where");
  g_unsetenv("DAGRUN_CACHE_DIR");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) \
  g_test_add("/backends/nvrtc-cache/" path, Fixture, NULL, fixture_set_up, fn, fixture_tear_down)
  ADD("miss-then-hit", test_miss_then_hit);
  ADD("key-changes", test_key_changes);
  ADD("damaged-entry", test_damaged_entry);
  ADD("unwritable-dir", test_unwritable_dir);
  ADD("compile-error", test_compile_error);
  ADD("user-options", test_user_options);
#undef ADD
  g_test_add_func("/backends/nvrtc-cache/default-dir", test_default_dir);
  return g_test_run();
}
