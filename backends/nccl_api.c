/* nccl_api.c: the NCCL table of nccl_api.h: dlopen of libnccl.so.2 once
 * per process (DAGRUN_NCCL_LIB, the loader's path, then the Python wheel's
 * copy), the fake-table switch for tests, and the type and op mappings. */
#include "backends/nccl_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

static const DrNcclApi *override = NULL;
static DrNcclApi real_api;
static gboolean real_ok = FALSE;
static char real_path[4096];
static char real_why[8192];

/* Fills real_api from `lib`; FALSE (noting the symbol) when one is missing. */
static gboolean bind_symbols(void *lib) {
#define DR_X(name, params, args)                                              \
  real_api.name = (DrNcclResult(*) params)dlsym(lib, #name);                  \
  if (real_api.name == NULL) {                                                \
    g_snprintf(real_why, sizeof real_why, "libnccl has no symbol %s", #name); \
    return FALSE;                                                             \
  }
  DR_NCCL_API_LIST(DR_X)
#undef DR_X
  real_api.ncclGetErrorString = (const char *(*)(DrNcclResult))dlsym(lib, "ncclGetErrorString");
  return real_api.ncclGetErrorString != NULL;
}

static void *try_open(const char *path, GString *tried) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib != NULL) {
    g_strlcpy(real_path, path, sizeof real_path);
    return lib;
  }
  g_string_append_printf(tried, "%s%s", tried->len ? ", " : "", path);
  return NULL;
}

/* python3's sys.path entries that end in site-packages or dist-packages. */
static char **python_site_dirs(void) {
  const char *argv[] = {"python3", "-c", "import sys\nfor p in sys.path: print(p)", NULL};
  g_autofree char *out = NULL;
  gint status = 0;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                    &out, NULL, &status, NULL) ||
      status != 0)
    return NULL;
  return g_strsplit(out, "\n", -1);
}

static void load_real(void) {
  g_autoptr(GString) tried = g_string_new(NULL);
  void *lib = NULL;
  const char *env = g_getenv("DAGRUN_NCCL_LIB");
  if (env != NULL && env[0] != '\0') {
    lib = try_open(env, tried);
  } else {
    lib = try_open("libnccl.so.2", tried);
    if (lib == NULL) {
      g_auto(GStrv) dirs = python_site_dirs();
      for (guint i = 0; dirs != NULL && dirs[i] != NULL && lib == NULL; i++) {
        if (!g_str_has_suffix(dirs[i], "site-packages") && !g_str_has_suffix(dirs[i], "dist-packages"))
          continue;
        g_autofree char *p = g_build_filename(dirs[i], "nvidia", "nccl", "lib", "libnccl.so.2", NULL);
        if (g_file_test(p, G_FILE_TEST_EXISTS)) lib = try_open(p, tried);
      }
    }
  }
  if (lib == NULL) {
    g_snprintf(real_why, sizeof real_why,
               "NCCL not found (tried %s; set DAGRUN_NCCL_LIB to libnccl.so.2's path, or install the "
               "nvidia-nccl-cu13 wheel)",
               tried->str);
    return;
  }
  real_ok = bind_symbols(lib);
  if (!real_ok) dlclose(lib);
}

const DrNcclApi *dr_nccl_api(const char **why) {
  if (override != NULL) return override;
  static gsize once = 0;
  if (g_once_init_enter(&once)) {
    load_real();
    g_once_init_leave(&once, 1);
  }
  if (!real_ok && why != NULL) *why = real_why;
  return real_ok ? &real_api : NULL;
}

const DrNcclApi *dr_nccl_api_set(const DrNcclApi *api) {
  const DrNcclApi *prev = override;
  override = api;
  return prev;
}

const char *dr_nccl_api_path(void) { return override == NULL && real_ok ? real_path : NULL; }

int dr_nccl_type(DrElemType type) {
  switch (type) {
    case DR_ELEM_U8:
      return 1; /* ncclUint8 */
    case DR_ELEM_I32:
      return 2; /* ncclInt32 */
    case DR_ELEM_I64:
      return 4; /* ncclInt64 */
    case DR_ELEM_F16:
      return 6; /* ncclFloat16 */
    case DR_ELEM_F32:
      return 7; /* ncclFloat32 */
    case DR_ELEM_F64:
      return 8; /* ncclFloat64 */
    case DR_ELEM_BF16:
      return 9; /* ncclBfloat16 */
    case DR_ELEM_N_TYPES:
      break;
  }
  g_return_val_if_reached(7);
}

int dr_nccl_op(DrReduceOp op) {
  static const int codes[DR_N_REDUCES] = {[DR_REDUCE_SUM] = 0,
                                          [DR_REDUCE_PROD] = 1,
                                          [DR_REDUCE_MIN] = 3,
                                          [DR_REDUCE_MAX] = 2,
                                          [DR_REDUCE_AVG] = 4};
  g_return_val_if_fail((guint)op < DR_N_REDUCES, 0);
  return codes[op];
}

gboolean dr__nccl_check(const DrNcclApi *api, DrNcclResult rc, const char *call, const char *node,
                        GError **error) {
  if (rc == 0) return TRUE;
  const char *msg = api->ncclGetErrorString ? api->ncclGetErrorString(rc) : NULL;
  if (node != NULL)
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': %s failed: %s (NCCL error %d)", node, call,
                msg ? msg : "?", rc);
  else
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "NCCL setup: %s failed: %s (NCCL error %d)", call,
                msg ? msg : "?", rc);
  return FALSE;
}
