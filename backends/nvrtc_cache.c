/* nvrtc_cache.c: NVRTC, opened with dlopen, behind an on-disk cubin cache
 * (contract in nvrtc_cache.h). It compiles and caches; it does not load code
 * onto a device and needs no GPU.
 *
 * A hit must not pay for NVRTC, not even its dlopen (libnvrtc is ~100 MB), so
 * the key names the library by its file rather than by nvrtcVersion: the
 * first libnvrtc.so.13 (or libnvrtc.so) found in $LD_LIBRARY_PATH, the CUDA
 * lib64 directory and the usual system directories, keyed by its real path,
 * size and mtime, and that exact file is the one dlopen'd on a miss, so the
 * key and the compiler agree. Only when no such file is found does dlopen
 * search by soname, and then the key holds nvrtcVersion (so hits load NVRTC).
 *
 * Entries are <cache dir>/<sha256 hex>.cubin, written with
 * g_file_set_contents (temp file + rename), so readers never see half a
 * file from a concurrent writer; after each store the directory is bounded
 * (nvrtc_evict.c). A read entry is checked to be a whole ELF
 * image (every table and section inside the file) before it is trusted;
 * anything else is a miss and gets rewritten. The toolkit's include paths
 * are passed the way nvcc passes them (include/, then include/cccl when it
 * exists), after the caller's own options, so a kernel's include_dirs win
 * like nvcc's -I. NVRTC has no dependency output (nvrtc_deps.c), so the
 * key's part for the included headers is found by reading them; it costs
 * a hit one read of each user header. Not covered by the key: the NVRTC
 * program name (`name`), which only reaches the cubin's debug line tables,
 * and the contents of the toolkit's headers (they come with its NVRTC,
 * whose file the key names).
 *
 * An entry with name expressions has a second file, <hex>.names, holding
 * the lowered names: NVRTC gives them only after compiling, and a hit must
 * not compile. */
#include "backends/nvrtc_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utime.h>

#include "ir/diag.h"

#define CUDA_LIB64 "/usr/local/cuda/lib64"
#define CUDA_INCLUDE "/usr/local/cuda/include"
/* CUDA 13 moved libcu++ (cuda/std/...), CUB and Thrust here; nvcc passes it
 * as -isystem after include/, so cooperative_groups.h finds
 * cuda/std/type_traits. */
#define CUDA_CCCL_INCLUDE CUDA_INCLUDE "/cccl"

/* The NVRTC entry points used, by name (nvrtc.h's types as plain ints and
 * pointers, so no NVRTC header is needed to build). */
typedef int (*NvrtcCreate)(void **prog, const char *src, const char *name, int n_headers,
                           const char *const *headers, const char *const *include_names);
typedef int (*NvrtcCompile)(void *prog, int n_options, const char *const *options);
typedef int (*NvrtcSize)(void *prog, size_t *size);
typedef int (*NvrtcGet)(void *prog, char *out);
typedef int (*NvrtcDestroy)(void **prog);
typedef const char *(*NvrtcErrorString)(int result);
typedef int (*NvrtcVersion)(int *major, int *minor);
typedef int (*NvrtcAddName)(void *prog, const char *name_expression);
typedef int (*NvrtcLowered)(void *prog, const char *name_expression, const char **lowered);

/* Process-wide state, under `lock`: the library's identity (found once) and
 * its entry points (opened once, on the first miss). */
static struct {
  gboolean located;
  char *path;     /* absolute file to dlopen, or NULL: dlopen by soname */
  char *identity; /* the library's part of the key; NULL until known */
  gboolean tried, ok;
  char why[256];
  NvrtcCreate create;
  NvrtcCompile compile;
  NvrtcSize log_size, cubin_size;
  NvrtcGet log, cubin;
  NvrtcDestroy destroy;
  NvrtcErrorString error_string;
  NvrtcVersion version;
  NvrtcAddName add_name;
  NvrtcLowered lowered;
} nvrtc;

static GMutex lock;

/* Finds the libnvrtc file (see the head); sets nvrtc.path and identity. */
static void locate_locked(void) {
  if (nvrtc.located) return;
  nvrtc.located = TRUE;
  g_autoptr(GPtrArray) dirs = g_ptr_array_new_with_free_func(g_free);
  const char *ld = g_getenv("LD_LIBRARY_PATH");
  if (ld != NULL) {
    g_auto(GStrv) parts = g_strsplit(ld, ":", -1);
    for (char **p = parts; *p; p++)
      if (**p) g_ptr_array_add(dirs, g_strdup(*p));
  }
  const char *fixed[] = {CUDA_LIB64, "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"};
  for (gsize i = 0; i < G_N_ELEMENTS(fixed); i++) g_ptr_array_add(dirs, g_strdup(fixed[i]));
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so"};
  for (guint d = 0; d < dirs->len; d++) {
    for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
      g_autofree char *file = g_build_filename(dirs->pdata[d], names[i], NULL);
      char *real = realpath(file, NULL); /* malloc'd: free, not g_free */
      struct stat st;
      if (real == NULL || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        free(real);
        continue;
      }
      nvrtc.path = g_strdup(real);
      nvrtc.identity = g_strdup_printf("file:%s:%lld:%lld.%09ld", real, (long long)st.st_size,
                                       (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
      free(real);
      return;
    }
  }
}

/* Opens libnvrtc once per process. Returns FALSE with nvrtc.why set. */
static gboolean open_locked(void) {
  if (nvrtc.tried) return nvrtc.ok;
  nvrtc.tried = TRUE;
  void *h = NULL;
  if (nvrtc.path != NULL) {
    h = dlopen(nvrtc.path, RTLD_NOW | RTLD_LOCAL);
  } else {
    h = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) h = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (h == NULL) {
    g_snprintf(nvrtc.why, sizeof nvrtc.why, "cannot load NVRTC (libnvrtc.so.13): %s", dlerror());
    return FALSE;
  }
  nvrtc.create = (NvrtcCreate)dlsym(h, "nvrtcCreateProgram");
  nvrtc.compile = (NvrtcCompile)dlsym(h, "nvrtcCompileProgram");
  nvrtc.log_size = (NvrtcSize)dlsym(h, "nvrtcGetProgramLogSize");
  nvrtc.log = (NvrtcGet)dlsym(h, "nvrtcGetProgramLog");
  nvrtc.cubin_size = (NvrtcSize)dlsym(h, "nvrtcGetCUBINSize");
  nvrtc.cubin = (NvrtcGet)dlsym(h, "nvrtcGetCUBIN");
  nvrtc.destroy = (NvrtcDestroy)dlsym(h, "nvrtcDestroyProgram");
  nvrtc.error_string = (NvrtcErrorString)dlsym(h, "nvrtcGetErrorString");
  nvrtc.version = (NvrtcVersion)dlsym(h, "nvrtcVersion");
  nvrtc.add_name = (NvrtcAddName)dlsym(h, "nvrtcAddNameExpression");
  nvrtc.lowered = (NvrtcLowered)dlsym(h, "nvrtcGetLoweredName");
  nvrtc.ok = nvrtc.create && nvrtc.compile && nvrtc.log_size && nvrtc.log && nvrtc.cubin_size &&
             nvrtc.cubin && nvrtc.destroy && nvrtc.error_string && nvrtc.version && nvrtc.add_name &&
             nvrtc.lowered;
  if (!nvrtc.ok) {
    g_snprintf(nvrtc.why, sizeof nvrtc.why, "libnvrtc.so.13 lacks an entry point dagrun uses");
    return FALSE;
  }
  if (nvrtc.identity == NULL) {
    int major = 0, minor = 0;
    (void)nvrtc.version(&major, &minor);
    nvrtc.identity = g_strdup_printf("version:%d.%d", major, minor);
  }
  return TRUE;
}

/* Returns the library's key part, newly allocated, or NULL when NVRTC is
 * missing (why in *why). Opens NVRTC only when its file was not found. */
static char *library_identity(char **why) {
  g_mutex_lock(&lock);
  locate_locked();
  if (nvrtc.identity == NULL && !open_locked()) *why = g_strdup(nvrtc.why);
  char *id = g_strdup(nvrtc.identity);
  g_mutex_unlock(&lock);
  return id;
}

char *dr__nvrtc_cache_dir(void) {
  const char *env = g_getenv("DAGRUN_CACHE_DIR");
  if (env != NULL && *env) return g_strdup(env);
  return g_build_filename(g_get_user_cache_dir(), "dagrun", "nvrtc", NULL);
}

/* Feeds one length-prefixed field, so that no two key tuples hash alike. */
static void hash_field(GChecksum *sum, const void *data, gsize len) {
  guint64 n = GUINT64_TO_LE((guint64)len);
  g_checksum_update(sum, (const guchar *)&n, sizeof n);
  g_checksum_update(sum, data, len);
}

/* TRUE when `data` is a whole ELF64 image: its header, program and section
 * header tables and every section with file contents lie inside `len`, so a
 * truncated or overwritten entry is caught before CUDA sees it. */
static gboolean is_whole_elf(const char *data, gsize len) {
  if (len < sizeof(Elf64_Ehdr) || memcmp(data, ELFMAG, SELFMAG) != 0 || data[EI_CLASS] != ELFCLASS64)
    return FALSE;
  Elf64_Ehdr eh;
  memcpy(&eh, data, sizeof eh);
  if (eh.e_phnum && (eh.e_phentsize < sizeof(Elf64_Phdr) || eh.e_phoff > len ||
                     (guint64)eh.e_phnum * eh.e_phentsize > len - eh.e_phoff))
    return FALSE;
  if (eh.e_shnum == 0 || eh.e_shentsize < sizeof(Elf64_Shdr) || eh.e_shoff > len ||
      (guint64)eh.e_shnum * eh.e_shentsize > len - eh.e_shoff)
    return FALSE;
  for (guint i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + (gsize)i * eh.e_shentsize, sizeof sh);
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
    if (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset) return FALSE;
  }
  return TRUE;
}

/* Compiles with NVRTC, registering each of `exprs` (NULL-terminated, may be
 * NULL) as a name expression; *lowered gets their lowered names (g_strfreev)
 * when `exprs` is not NULL. Returns the cubin (g_free) or NULL with `error`
 * set. */
static char *compile(const char *name, const char *source, gsize len, const char *const *options,
                     int n_options, const char *const *exprs, char ***lowered, gsize *out_len,
                     GError **error) {
  g_mutex_lock(&lock);
  gboolean ok = open_locked();
  g_mutex_unlock(&lock);
  if (!ok) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "%s", nvrtc.why);
    return NULL;
  }
  g_autofree char *src = g_strndup(source, len); /* NVRTC wants a C string */
  void *prog = NULL;
  int rc = nvrtc.create(&prog, src, name, 0, NULL, NULL);
  if (rc != 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "nvrtcCreateProgram failed: %s", nvrtc.error_string(rc));
    return NULL;
  }
  for (const char *const *e = exprs; e && *e; e++) {
    rc = nvrtc.add_name(prog, *e);
    if (rc != 0) {
      g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "name '%s': nvrtcAddNameExpression failed: %s", *e,
                  nvrtc.error_string(rc));
      nvrtc.destroy(&prog);
      return NULL;
    }
  }
  rc = nvrtc.compile(prog, n_options, options);
  char *cubin = NULL;
  if (rc != 0) {
    size_t log_len = 0;
    g_autofree char *log = NULL;
    if (nvrtc.log_size(prog, &log_len) == 0 && log_len > 0) {
      log = g_malloc0(log_len + 1);
      if (nvrtc.log(prog, log) != 0) log[0] = '\0';
    }
    g_set_error(error, DR_ERROR, DR_ERROR_INVALID, "%s does not compile (NVRTC: %s):\n%s", name,
                nvrtc.error_string(rc), log ? g_strstrip(log) : "");
  } else {
    size_t size = 0;
    if (nvrtc.cubin_size(prog, &size) == 0 && size > 0) {
      cubin = g_malloc(size);
      if (nvrtc.cubin(prog, cubin) != 0) g_clear_pointer(&cubin, g_free);
    }
    if (cubin == NULL)
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "NVRTC produced no cubin for %s", name);
    else
      *out_len = size;
    guint n_exprs = exprs ? g_strv_length((char **)exprs) : 0;
    g_auto(GStrv) names = cubin && exprs ? g_new0(char *, n_exprs + 1) : NULL;
    for (guint i = 0; names && i < n_exprs; i++) {
      const char *low = NULL;
      rc = nvrtc.lowered(prog, exprs[i], &low);
      if (rc != 0 || low == NULL) {
        /* NVRTC compiles a name expression it cannot instantiate as a
         * plain error above; what is left is a name that is not a
         * __global__ function template instance. */
        g_set_error(error, DR_ERROR, DR_ERROR_INVALID,
                    "name '%s' is not a __global__ function of %s (NVRTC: %s)", exprs[i], name,
                    nvrtc.error_string(rc));
        g_clear_pointer(&cubin, g_free);
        break;
      }
      names[i] = g_strdup(low);
    }
    if (cubin && names) *lowered = g_steal_pointer(&names);
  }
  nvrtc.destroy(&prog);
  return cubin;
}

/* The lowered names file of an entry: one "EXPR\tLOWERED" line per name
 * expression, in order. Returns the names (g_strfreev), or NULL when the
 * file is missing or does not hold exactly `exprs`. */
static char **read_names(const char *path, const char *const *exprs) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL)) return NULL;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint n = g_strv_length((char **)exprs);
  if (g_strv_length(lines) != n + 1 || lines[n][0] != '\0') return NULL;
  g_auto(GStrv) out = g_new0(char *, n + 1);
  for (guint i = 0; i < n; i++) {
    char *tab = strchr(lines[i], '\t');
    if (tab == NULL || tab[1] == '\0') return NULL;
    *tab = '\0';
    if (strcmp(lines[i], exprs[i]) != 0) return NULL;
    out[i] = g_strdup(tab + 1);
  }
  return g_steal_pointer(&out);
}

gboolean dr__nvrtc_compile_cached(const char *name, const char *source, gsize len, const char *arch,
                                  const char *const *extra_options, char **out_cubin, gsize *out_len,
                                  gboolean *hit, GError **error) {
  return dr__nvrtc_compile_cached_names(name, source, len, arch, extra_options, NULL, NULL, out_cubin,
                                        out_len, hit, error);
}

gboolean dr__nvrtc_compile_cached_names(const char *name, const char *source, gsize len, const char *arch,
                                        const char *const *extra_options, const char *const *name_exprs,
                                        char ***out_lowered, char **out_cubin, gsize *out_len, gboolean *hit,
                                        GError **error) {
  g_return_val_if_fail(name != NULL && source != NULL && arch != NULL, FALSE);
  g_return_val_if_fail(out_cubin != NULL && out_len != NULL, FALSE);
  g_return_val_if_fail(name_exprs == NULL || out_lowered != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (hit) *hit = FALSE;
  if (name_exprs != NULL && name_exprs[0] == NULL) name_exprs = NULL;

  g_autoptr(GPtrArray) options = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) user_dirs = g_ptr_array_new();
  g_ptr_array_add(options, g_strdup_printf("--gpu-architecture=%s", arch));
  g_ptr_array_add(options, g_strdup("--std=c++17"));
  for (const char *const *o = extra_options; o && *o; o++) {
    g_ptr_array_add(options, g_strdup(*o));
    if (g_str_has_prefix(*o, "--include-path=")) g_ptr_array_add(user_dirs, (gpointer)(*o + 15));
  }
  g_ptr_array_add(user_dirs, NULL);
  g_ptr_array_add(options, g_strdup("--include-path=" CUDA_INCLUDE));
  if (g_file_test(CUDA_CCCL_INCLUDE, G_FILE_TEST_IS_DIR))
    g_ptr_array_add(options, g_strdup("--include-path=" CUDA_CCCL_INCLUDE));

  g_autofree char *why = NULL;
  g_autofree char *lib = library_identity(&why);
  if (lib == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE, "%s", why);
    return FALSE;
  }
  const char *const toolkit[] = {CUDA_INCLUDE, CUDA_CCCL_INCLUDE, NULL};
  g_autofree char *deps = dr__nvrtc_deps(name, source, len, (const char *const *)user_dirs->pdata, toolkit);
  g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
  char format[32];
  g_snprintf(format, sizeof format, "dagrun-nvrtc-cache/%d", DR_NVRTC_CACHE_FORMAT);
  hash_field(sum, format, strlen(format));
  hash_field(sum, lib, strlen(lib));
  hash_field(sum, arch, strlen(arch));
  hash_field(sum, source, len);
  for (guint i = 0; i < options->len; i++) hash_field(sum, options->pdata[i], strlen(options->pdata[i]));
  hash_field(sum, deps, strlen(deps));
  for (const char *const *e = name_exprs; e && *e; e++) hash_field(sum, *e, strlen(*e));

  g_autofree char *dir = dr__nvrtc_cache_dir();
  g_autofree char *file = g_strconcat(g_checksum_get_string(sum), ".cubin", NULL);
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autofree char *names_file = g_strconcat(g_checksum_get_string(sum), ".names", NULL);
  g_autofree char *names_path = g_build_filename(dir, names_file, NULL);

  /* The names are read before the cubin: a writer renames its names file
   * into place before its cubin, so a cubin seen means its names were. */
  g_auto(GStrv) names = name_exprs ? read_names(names_path, name_exprs) : NULL;
  char *cached = NULL;
  gsize cached_len = 0;
  if ((name_exprs == NULL || names != NULL) && g_file_get_contents(path, &cached, &cached_len, NULL)) {
    if (is_whole_elf(cached, cached_len)) {
      dr__nvrtc_cache_touch(path);
      if (name_exprs) dr__nvrtc_cache_touch(names_path);
      *out_cubin = cached;
      *out_len = cached_len;
      if (out_lowered) *out_lowered = g_steal_pointer(&names);
      if (hit) *hit = TRUE;
      return TRUE;
    }
    g_free(cached);
  }

  gsize cubin_len = 0;
  g_auto(GStrv) lowered = NULL;
  char *cubin = compile(name, source, len, (const char *const *)options->pdata, (int)options->len, name_exprs,
                        &lowered, &cubin_len, error);
  if (cubin == NULL) return FALSE;
  /* The cache is an optimisation: failing to store an entry costs the next
   * run a compile, nothing more, so it is only logged. Each file is written
   * to a temporary name and renamed (g_file_set_contents), so a concurrent
   * reader sees the old file, no file, or the whole new one. */
  g_autoptr(GError) local = NULL;
  g_autoptr(GString) names_text = g_string_new(NULL);
  for (guint i = 0; lowered && lowered[i]; i++)
    g_string_append_printf(names_text, "%s\t%s\n", name_exprs[i], lowered[i]);
  if (g_mkdir_with_parents(dir, 0700) != 0)
    g_debug("nvrtc cache: cannot create %s: %s", dir, g_strerror(errno));
  else if (name_exprs && !g_file_set_contents(names_path, names_text->str, (gssize)names_text->len, &local))
    g_debug("nvrtc cache: %s", local->message);
  else if (!g_file_set_contents(path, cubin, (gssize)cubin_len, &local))
    g_debug("nvrtc cache: %s", local->message);
  else
    dr__nvrtc_cache_evict(dir);
  *out_cubin = cubin;
  *out_len = cubin_len;
  if (out_lowered) *out_lowered = g_steal_pointer(&lowered);
  return TRUE;
}

char **dr__nvrtc_user_options(const char *const *include_dirs, guint n_include_dirs,
                              const char *const *defines, guint n_defines) {
  char **out = g_new0(char *, n_include_dirs + n_defines + 1);
  guint n = 0;
  for (guint i = 0; i < n_include_dirs; i++) out[n++] = g_strconcat("--include-path=", include_dirs[i], NULL);
  for (guint i = 0; i < n_defines; i++) out[n++] = g_strconcat("-D", defines[i], NULL);
  return out;
}
