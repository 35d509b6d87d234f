/* nvrtc_cache_test.c: the NVRTC cubin cache (backends/nvrtc_cache.h) on the
 * CPU: misses, hits, what changes the key, damaged entries and an unusable
 * cache directory. NVRTC compiles on the host, so no GPU is needed; when
 * libnvrtc cannot be loaded every case is skipped. No timing here: the
 * speed-up is measured by bench/nvrtc_cache_bench.c. */
#define _GNU_SOURCE /* memmem */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <utime.h>

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

/* Compiles `src` as file `name` with `opts` through the cache; FALSE (test
 * skipped) when NVRTC is missing. */
static gboolean compile_named(const char *name, const char *src, const char *const *opts, gboolean *hit) {
  char *cubin = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok = dr__nvrtc_compile_cached(name, src, strlen(src), "sm_90", opts, &cubin, &len, hit, &error);
  if (!ok && g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE)) {
    g_test_skip(error->message);
    return FALSE;
  }
  g_assert_no_error(error);
  g_free(cubin);
  return TRUE;
}

static void put(const char *dir, const char *file, const char *text) {
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autofree char *parent = g_path_get_dirname(path);
  g_assert_cmpint(g_mkdir_with_parents(parent, 0700), ==, 0);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Editing any header the source reaches compiles again: one in the kernel's
 * include_dirs, one it includes in turn, one beside the .cu file (quoted,
 * found in the source's directory as NVRTC finds it); a header created
 * where a missing one was looked for does too. */
static void test_header_edit(Fixture *f, gconstpointer data) {
  (void)data;
  g_autoptr(GError) error = NULL;
  g_autofree char *tree = g_dir_make_tmp("nvrtc-dep-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *inc = g_build_filename(tree, "inc", NULL);
  g_autofree char *src_dir = g_build_filename(tree, "src", NULL);
  put(inc, "scale.h", "#pragma once\n#include \"nested/more.h\"\n#define SCALE 2.0f\n");
  put(inc, "nested/more.h", "#pragma once\n#define MORE 1.0f\n");
  put(src_dir, "local.h", "#pragma once\n#define LOCAL 0.5f\n");
  static const char src[] =
      "#include <scale.h>\n"
      "#include \"local.h\"\n"
      "#if 0\n#include \"maybe.h\"\n#endif\n"
      "#include <cuda/std/type_traits>\n"
      "extern \"C\" __global__ void k(float *y) { y[0] = SCALE * MORE * LOCAL; }\n";
  g_autofree char *name = g_build_filename(src_dir, "k.cu", NULL);
  g_autofree char *opt = g_strconcat("--include-path=", inc, NULL);
  const char *const opts[] = {opt, NULL};
  gboolean hit = TRUE;
  if (!compile_named(name, src, opts, &hit)) {
    remove_tree(tree);
    return;
  }
  g_assert_false(hit);
  g_assert_true(compile_named(name, src, opts, &hit));
  g_assert_true(hit);

  /* What the key holds for the headers. */
  const char *const users[] = {inc, NULL};
  const char *const toolkit[] = {"/usr/local/cuda/include", "/usr/local/cuda/include/cccl", NULL};
  g_autofree char *deps = dr__nvrtc_deps(name, src, strlen(src), users, toolkit);
  g_autofree char *scale = g_build_filename(inc, "scale.h", NULL);
  g_autofree char *more = g_build_filename(inc, "nested", "more.h", NULL);
  g_autofree char *local = g_build_filename(src_dir, "local.h", NULL);
  g_autofree char *want_scale = g_strdup_printf("user %s ", scale);
  g_autofree char *want_more = g_strdup_printf("user %s ", more);
  g_autofree char *want_local = g_strdup_printf("user %s ", local);
  g_autofree char *want_missing = g_strdup_printf("missing \"maybe.h\" %s\n", name);
  g_assert_nonnull(strstr(deps, want_scale));
  g_assert_nonnull(strstr(deps, want_more));
  g_assert_nonnull(strstr(deps, want_local));
  g_assert_nonnull(strstr(deps, want_missing));
  g_assert_true(g_str_has_prefix(strstr(deps, "toolkit "), "toolkit /usr/local/cuda/include/cccl/cuda/std/"));

  const char *edits[][2] = {
      {"inc/scale.h", "#pragma once\n#include \"nested/more.h\"\n#define SCALE 3.0f\n"},
      {"inc/nested/more.h", "#pragma once\n#define MORE 4.0f\n"},
      {"src/local.h", "#pragma once\n#define LOCAL 0.25f\n"},
      {"src/maybe.h", "/* appears where a missing header was looked for */\n"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(edits); i++) {
    put(tree, edits[i][0], edits[i][1]);
    g_assert_true(compile_named(name, src, opts, &hit));
    g_assert_false(hit);
    g_assert_true(compile_named(name, src, opts, &hit));
    g_assert_true(hit);
  }
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 5);
  remove_tree(tree);
}

/* One template source, two instantiations by name expression: each gets its
 * lowered name from NVRTC on a miss and from the entry's .names file on a
 * hit; a name that is no kernel is an error naming it. */
static void test_name_expressions(Fixture *f, gconstpointer data) {
  (void)data;
  static const char src[] =
      "template <typename T, int N> __global__ void fill(T *y, T v) {\n"
      "  if (threadIdx.x < N) y[threadIdx.x] = v;\n"
      "}\n";
  const char *const exprs[] = {"fill<float, 256>", "fill<double, 32>", NULL};
  for (int round = 0; round < 2; round++) {
    char *cubin = NULL;
    gsize len = 0;
    gboolean hit = FALSE;
    g_auto(GStrv) lowered = NULL;
    g_autoptr(GError) error = NULL;
    gboolean ok = dr__nvrtc_compile_cached_names("fill.cu", src, strlen(src), "sm_90", NULL, exprs, &lowered,
                                                 &cubin, &len, &hit, &error);
    if (!ok && g_error_matches(error, DR_ERROR, DR_ERROR_UNAVAILABLE)) {
      g_test_skip(error->message);
      return;
    }
    g_assert_no_error(error);
    g_assert_cmpint(hit, ==, round == 1);
    g_assert_cmpuint(g_strv_length(lowered), ==, 2);
    g_assert_cmpstr(lowered[0], ==, "_Z4fillIfLi256EEvPT_S0_");
    g_assert_cmpstr(lowered[1], ==, "_Z4fillIdLi32EEvPT_S0_");
    g_assert_nonnull(memmem(cubin, len, lowered[0], strlen(lowered[0])));
    g_free(cubin);
  }
  g_autofree char *names = NULL;
  g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
  const char *e;
  guint n_names = 0;
  while ((e = g_dir_read_name(d)) != NULL) n_names += g_str_has_suffix(e, ".names");
  g_assert_cmpuint(n_names, ==, 1);

  const char *const bad[] = {"fil<float, 256>", NULL};
  char *cubin = NULL;
  gsize len = 0;
  g_auto(GStrv) lowered = NULL;
  g_autoptr(GError) error = NULL;
  g_assert_false(dr__nvrtc_compile_cached_names("fill.cu", src, strlen(src), "sm_90", NULL, bad, &lowered,
                                                &cubin, &len, NULL, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "fil"));
  g_assert_null(cubin);
  g_assert_null(lowered);
}

/* Sets `path`'s mtime `age_s` seconds into the past. */
static void age(const char *path, gint64 age_s) {
  struct utimbuf t;
  t.actime = t.modtime = (time_t)(g_get_real_time() / G_USEC_PER_SEC - age_s);
  g_assert_cmpint(utime(path, &t), ==, 0);
}

/* The size bound keeps the newest entries that fit; the age bound drops old
 * ones; a hit makes an entry young again; files not named like entries are
 * never touched; --cache-clean's function removes every entry. */
static void test_bounds_and_clean(Fixture *f, gconstpointer data) {
  (void)data;
  gboolean hit;
  g_autofree char *src2 = g_strconcat(kSource, "// two\n", NULL);
  g_autofree char *src3 = g_strconcat(kSource, "// three\n", NULL);
  if (!compile_named("a.cu", kSource, NULL, &hit)) return;
  g_autofree char *first = NULL;
  g_assert_cmpuint(count_entries(f->dir, &first), ==, 1);
  struct stat st;
  g_assert_cmpint(g_stat(first, &st), ==, 0);
  age(first, 100);
  g_assert_true(compile_named("a.cu", src2, NULL, &hit));
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);
  g_autoptr(GDir) d2 = g_dir_open(f->dir, 0, NULL);
  for (const char *e2; (e2 = g_dir_read_name(d2)) != NULL;) {
    g_autofree char *p = g_build_filename(f->dir, e2, NULL);
    if (strcmp(p, first) != 0) age(p, 50);
  }

  /* Room for two entries: a third evicts the oldest, unless a hit made it
   * the newest. */
  g_autofree char *bound = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)st.st_size * 2 + 100);
  g_setenv("DAGRUN_CACHE_MAX_BYTES", bound, TRUE);
  g_assert_true(compile_named("a.cu", kSource, NULL, &hit));
  g_assert_true(hit); /* touched: now the newest */
  g_assert_true(compile_named("a.cu", src3, NULL, &hit));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);
  g_assert_true(g_file_test(first, G_FILE_TEST_EXISTS));
  g_assert_true(compile_named("a.cu", src2, NULL, &hit));
  g_assert_false(hit); /* src2's was the oldest, and went */
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 2);
  g_assert_false(g_file_test(first, G_FILE_TEST_EXISTS)); /* and then the oldest was the first */
  g_unsetenv("DAGRUN_CACHE_MAX_BYTES");
  g_assert_true(compile_named("a.cu", kSource, NULL, &hit));
  g_assert_false(hit);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 3);

  /* An entry older than the age bound goes at the next store; a stale
   * temporary file too, and a stranger's file never. */
  g_autofree char *other = g_build_filename(f->dir, "README", NULL);
  g_assert_true(g_file_set_contents(other, "mine", -1, NULL));
  age(other, 400 * 86400);
  age(first, 31 * 86400);
  g_autofree char *temp = g_strconcat(first, ".Ab12Cd", NULL);
  g_assert_true(g_file_set_contents(temp, "half", -1, NULL));
  age(temp, 7200);
  g_assert_cmpuint(dr__nvrtc_cache_evict(f->dir), ==, 1);
  g_assert_false(g_file_test(first, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(temp, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(other, G_FILE_TEST_EXISTS));
  g_setenv("DAGRUN_CACHE_MAX_AGE_DAYS", "0", TRUE);
  age(other, 0);
  g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
  const char *e;
  while ((e = g_dir_read_name(d)) != NULL)
    if (g_str_has_suffix(e, ".cubin")) {
      g_autofree char *p = g_build_filename(f->dir, e, NULL);
      age(p, 1000 * 86400);
    }
  g_assert_cmpuint(dr__nvrtc_cache_evict(f->dir), ==, 0); /* 0: no age bound */
  g_unsetenv("DAGRUN_CACHE_MAX_AGE_DAYS");

  guint n = 0;
  guint64 bytes = 0;
  g_autoptr(GError) error = NULL;
  g_remove(other);
  g_assert_true(dr__nvrtc_cache_clean(f->dir, &n, &bytes, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, 2);
  g_assert_cmpuint(bytes, >=, 2 * (guint64)st.st_size - 1000);
  g_assert_cmpuint(count_entries(f->dir, NULL), ==, 0);
  g_autofree char *missing = g_build_filename(f->dir, "none", NULL);
  g_assert_true(dr__nvrtc_cache_clean(missing, &n, &bytes, &error));
  g_assert_cmpuint(n, ==, 0);
}

static void test_limits(void) {
  guint64 b, a;
  g_unsetenv("DAGRUN_CACHE_MAX_BYTES");
  g_unsetenv("DAGRUN_CACHE_MAX_AGE_DAYS");
  dr__nvrtc_cache_limits(&b, &a);
  g_assert_cmpuint(b, ==, 1ull << 30);
  g_assert_cmpuint(a, ==, 30 * 86400);
  g_setenv("DAGRUN_CACHE_MAX_BYTES", "512MiB", TRUE);
  g_setenv("DAGRUN_CACHE_MAX_AGE_DAYS", "7", TRUE);
  dr__nvrtc_cache_limits(&b, &a);
  g_assert_cmpuint(b, ==, 512ull << 20);
  g_assert_cmpuint(a, ==, 7 * 86400);
  g_setenv("DAGRUN_CACHE_MAX_BYTES", "0", TRUE);
  dr__nvrtc_cache_limits(&b, &a);
  g_assert_cmpuint(b, ==, 0);
  g_unsetenv("DAGRUN_CACHE_MAX_BYTES");
  g_unsetenv("DAGRUN_CACHE_MAX_AGE_DAYS");
  if (g_test_subprocess()) {
    g_setenv("DAGRUN_CACHE_MAX_BYTES", "lots", TRUE);
    dr__nvrtc_cache_limits(&b, &a);
    return;
  }
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed(); /* g_warning is fatal under GTest */
  g_test_trap_assert_stderr("*DAGRUN_CACHE_MAX_BYTES='lots' is not a size*");
}

typedef struct {
  const char *src;
  gboolean ok;
} Racer;

static gpointer race(gpointer data) {
  Racer *r = data;
  char *cubin = NULL;
  gsize len = 0;
  r->ok = dr__nvrtc_compile_cached("r.cu", r->src, strlen(r->src), "sm_90", NULL, &cubin, &len, NULL, NULL);
  g_free(cubin);
  return NULL;
}

/* Several compiles of the same and of different sources at once under a
 * bound that evicts all the time: every entry left is a whole cubin and no
 * temporary file is left. (Threads: the files' rename and unlink are the
 * same between processes.) */
static void test_concurrent(Fixture *f, gconstpointer data) {
  (void)data;
  gboolean hit;
  if (!compile_named("r.cu", kSource, NULL, &hit)) return;
  g_setenv("DAGRUN_CACHE_MAX_BYTES", "1", TRUE); /* every store evicts */
  g_autofree char *a = g_strconcat(kSource, "// a\n", NULL);
  g_autofree char *b = g_strconcat(kSource, "// b\n", NULL);
  Racer r[6] = {{kSource}, {a}, {b}, {kSource}, {a}, {b}};
  GThread *t[6];
  for (int i = 0; i < 6; i++) t[i] = g_thread_new("racer", race, &r[i]);
  for (int i = 0; i < 6; i++) g_thread_join(t[i]);
  for (int i = 0; i < 6; i++) g_assert_true(r[i].ok);
  g_unsetenv("DAGRUN_CACHE_MAX_BYTES");
  g_autoptr(GDir) d = g_dir_open(f->dir, 0, NULL);
  const char *e;
  while ((e = g_dir_read_name(d)) != NULL) {
    g_assert_true(g_str_has_suffix(e, ".cubin"));
    g_autofree char *p = g_build_filename(f->dir, e, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(p, &text, &len, NULL));
    g_assert_cmpmem(text, 4,
                    "\x7f"
                    "ELF",
                    4);
  }
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
  ADD("header-edit", test_header_edit);
  ADD("name-expressions", test_name_expressions);
  ADD("bounds-and-clean", test_bounds_and_clean);
  ADD("concurrent", test_concurrent);
#undef ADD
  g_test_add_func("/backends/nvrtc-cache/default-dir", test_default_dir);
  g_test_add_func("/backends/nvrtc-cache/limits", test_limits);
  return g_test_run();
}
