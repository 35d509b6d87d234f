/* nvrtc_cache.h: internal to backends/: compile CUDA C++ source to a cubin
 * with NVRTC, through an on-disk cache. It is CPU-only (NVRTC compiles on the
 * host), so it runs and is tested on a machine without a GPU; it is not the
 * loader (cuda/user_kernels.c turns the cubin into a cudaLibrary_t).
 *
 * The cache key is the SHA-256 of: a cache format version, the source bytes,
 * the target architecture, the full NVRTC option list and the identity of the
 * NVRTC library (see nvrtc_cache.c). Headers the source #includes are NOT
 * part of the key: editing an included header does not invalidate an entry
 * (delete the cache directory, or touch the .cu source). */
#ifndef DAGRUN_BACKENDS_NVRTC_CACHE_H
#define DAGRUN_BACKENDS_NVRTC_CACHE_H

#include <glib.h>

G_BEGIN_DECLS

/* Bumped whenever the key's layout or the options dagrun always passes
 * change, so old entries stop matching. */
#define DR_NVRTC_CACHE_FORMAT 2

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

/* Returns the NVRTC options for a `kernels:` entry's include_dirs and
 * defines (DrKernelDecl): "--include-path=DIR" for each directory, then
 * "-DNAME[=VALUE]" for each define, in order, as a NULL-terminated vector
 * (g_strfreev) to pass as dr__nvrtc_compile_cached's extra_options. */
char **dr__nvrtc_user_options(const char *const *include_dirs, guint n_include_dirs,
                              const char *const *defines, guint n_defines);

G_END_DECLS

#endif
