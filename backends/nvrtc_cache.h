/* nvrtc_cache.h: internal to backends/: compile CUDA C++ source to a cubin
 * with NVRTC, through an on-disk cache. It is CPU-only (NVRTC compiles on the
 * host), so it runs and is tested on a machine without a GPU; it is not the
 * loader (cuda/user_kernels.c turns the cubin into a cudaLibrary_t).
 *
 * The cache key is the SHA-256 of: a cache format version, the source bytes,
 * the target architecture, the full NVRTC option list, the identity of the
 * NVRTC library (see nvrtc_cache.c), the name expressions asked for, and
 * the headers the source includes (dr__nvrtc_deps: the contents of every
 * header outside the toolkit that an #include line reaches, the resolved
 * path of every toolkit header), so editing an included header compiles
 * again. The directory is bounded in size and age (nvrtc_evict.c). */
#ifndef DAGRUN_BACKENDS_NVRTC_CACHE_H
#define DAGRUN_BACKENDS_NVRTC_CACHE_H

#include <glib.h>

G_BEGIN_DECLS

/* Bumped whenever the key's layout or the options dagrun always passes
 * change, so old entries stop matching. */
#define DR_NVRTC_CACHE_FORMAT 3

/* The cache's bounds unless DAGRUN_CACHE_MAX_BYTES and
 * DAGRUN_CACHE_MAX_AGE_DAYS say otherwise (docs/environment.md). */
#define DR_NVRTC_CACHE_MAX_BYTES_DEFAULT (1ull << 30)
#define DR_NVRTC_CACHE_MAX_AGE_DAYS_DEFAULT 30

/* Returns the cache directory, newly allocated: $DAGRUN_CACHE_DIR when set
 * and not empty, else g_get_user_cache_dir()/dagrun/nvrtc. It may not exist. */
char *dr__nvrtc_cache_dir(void);

/* Compiles `source` (`len` bytes, need not be NUL-terminated) for `arch`
 * ("sm_90") with NVRTC, or reads the cubin a previous call cached.
 * `name` is the program name NVRTC's log uses for line numbers (the .cu
 * path) and the name in error messages. `extra_options` is NULL or a
 * NULL-terminated list passed to NVRTC after --gpu-architecture and
 * --std=c++17 and before the toolkit's include paths (include/, then
 * include/cccl when that directory exists, as nvcc does), so its
 * --include-path directories are searched first; it is part of the key.
 *
 * On success returns TRUE with *out_cubin (g_free) and *out_len set, and
 * *hit (when not NULL) TRUE when the cubin came from the cache, in which case
 * NVRTC was not loaded. A cache entry that cannot be read or is not a cubin
 * counts as a miss and is rewritten; a cache directory that cannot be
 * created or written is not an error (the cubin is compiled and returned).
 *
 * Fails with DR_ERROR_UNAVAILABLE when libnvrtc cannot be loaded, with
 * DR_ERROR_INVALID and NVRTC's log (with `name`'s line numbers) when the
 * source does not compile, DR_ERROR_RUNTIME for other NVRTC failures.
 * Messages carry no location; the caller prefixes its own. Thread-safe. */
gboolean dr__nvrtc_compile_cached(const char *name, const char *source, gsize len, const char *arch,
                                  const char *const *extra_options, char **out_cubin, gsize *out_len,
                                  gboolean *hit, GError **error);

/* dr__nvrtc_compile_cached with name expressions: each of `name_exprs`
 * (NULL-terminated; NULL or empty for none) is registered with
 * nvrtcAddNameExpression ("reduce<float, 256>") and is part of the key; on
 * success *out_lowered (g_strfreev) holds their lowered (mangled) names in
 * the same order, to look up in the cubin, from NVRTC or from the entry's
 * .names file on a hit. A name expression that does not name a __global__
 * function (NVRTC's error, with its log) fails with DR_ERROR_INVALID. */
gboolean dr__nvrtc_compile_cached_names(const char *name, const char *source, gsize len, const char *arch,
                                        const char *const *extra_options, const char *const *name_exprs,
                                        char ***out_lowered, char **out_cubin, gsize *out_len, gboolean *hit,
                                        GError **error);

/* Returns the dependency record of `source` (`len` bytes, the contents of
 * file `name`), newly allocated: one line per header its #include lines
 * reach, resolved against the including file's directory (quoted includes),
 * then `user_dirs`, then `toolkit_dirs` (both NULL-terminated, may be
 * NULL); a header outside `toolkit_dirs` with its SHA-256, and followed,
 * one under them by its path only (the line formats: nvrtc_deps.c). Never
 * fails: a header that cannot be found or read is a line saying so. */
char *dr__nvrtc_deps(const char *name, const char *source, gsize len, const char *const *user_dirs,
                     const char *const *toolkit_dirs);

/* Sets the file's access and modification times to now (a cache hit, so
 * eviction treats the entry as recently used). Failure is only logged. */
void dr__nvrtc_cache_touch(const char *path);

/* The cache's bounds: *max_bytes from $DAGRUN_CACHE_MAX_BYTES (a byte
 * count, optionally with Ki/Mi/Gi or KiB/MiB/GiB), *max_age_s from
 * $DAGRUN_CACHE_MAX_AGE_DAYS (days), each 0 for no bound, else the
 * defaults above; a value that does not parse is a warning (g_log) and
 * the default. */
void dr__nvrtc_cache_limits(guint64 *max_bytes, guint64 *max_age_s);

/* Bounds cache directory `dir`: removes entries older than the age bound,
 * then the oldest until the rest fit the size bound, and temporary files a
 * writer left more than an hour ago. Only dagrun's entry files are
 * considered. Returns the entries removed. Never fails (errors are logged:
 * the cache is an optimisation). Safe against concurrent users. */
guint dr__nvrtc_cache_evict(const char *dir);

/* Removes every cache entry of `dir` and every temporary file of one;
 * *n_entries and *n_bytes say how many entries and bytes went (temporary
 * files count in the bytes only). A missing directory is no error (0, 0).
 * Fails with DR_ERROR_OUTPUT (FALSE) naming a file that cannot be removed. */
gboolean dr__nvrtc_cache_clean(const char *dir, guint *n_entries, guint64 *n_bytes, GError **error);

/* Returns the NVRTC options for a `kernels:` entry's include_dirs and
 * defines (DrKernelDecl): "--include-path=DIR" for each directory, then
 * "-DNAME[=VALUE]" for each define, in order, as a NULL-terminated vector
 * (g_strfreev) to pass as dr__nvrtc_compile_cached's extra_options. */
char **dr__nvrtc_user_options(const char *const *include_dirs, guint n_include_dirs,
                              const char *const *defines, guint n_defines);

G_END_DECLS

#endif
