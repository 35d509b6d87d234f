/* mpi.c: finding the ranks (mpi_api.h): whether a launcher started this
 * process, loading libdagrun_mpi.so and MPI with dlopen, the world's
 * shape, and the host-side reduction the collectives share. It holds the
 * process's one DrMpiWorld (MPI itself is once per process); it moves no
 * pipeline data itself: the host backend's collectives across ranks
 * (backends/mpi_coll.c) and the library's rank protocol (lib/ranks.c)
 * call the table. */
#include "backends/mpi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/dagrun/dagrun.h"

static DrMpiWorld world = {NULL, 0, 1, 0, FALSE, NULL};
static gboolean joined;
static GError *join_error;

const char *dr__mpi_launcher(void) {
  /* Open MPI's mpirun, then PMI-1/2 (MPICH's hydra, srun), then PMIx. */
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
  for (guint i = 0; i < G_N_ELEMENTS(vars); i++)
    if (g_getenv(vars[i]) != NULL) return vars[i];
  return NULL;
}

/* The directory of the running executable, or NULL. */
static char *exe_dir(void) {
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  return exe ? g_path_get_dirname(exe) : NULL;
}

/* dlopens the plugin from the documented places; NULL with *why. */
static void *open_plugin(char **why) {
  const char *env = g_getenv("DAGRUN_MPI_PLUGIN");
  if (env != NULL && env[0] != '\0') {
    void *h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) *why = g_strdup_printf("DAGRUN_MPI_PLUGIN=%s: %s", env, dlerror());
    return h;
  }
  g_autofree char *dir = exe_dir();
  GString *tried = g_string_new(NULL);
  if (dir != NULL) {
    const char *const rel[] = {"", "../lib/dagrun/", "../backends/"};
    for (guint i = 0; i < G_N_ELEMENTS(rel); i++) {
      g_autofree char *path = g_strconcat(dir, "/", rel[i], DR_MPI_PLUGIN_NAME, NULL);
      if (!g_file_test(path, G_FILE_TEST_EXISTS)) continue;
      void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
      if (h != NULL) return (g_string_free(tried, TRUE), h);
      g_string_append_printf(tried, "%s: %s; ", path, dlerror());
    }
  }
  /* RTLD_GLOBAL: Open MPI loads its components with dlopen and they need
   * libmpi's symbols. */
  void *h = dlopen(DR_MPI_PLUGIN_NAME, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    g_string_append_printf(tried, "%s", dlerror());
    *why = g_string_free(tried, FALSE);
    return NULL;
  }
  g_string_free(tried, TRUE);
  return h;
}

gboolean dr__mpi_fail(int rc, const char *what, const char *call, GError **error) {
  char text[256] = "";
  if (world.api != NULL && world.api->error_string != NULL) world.api->error_string(rc, text, sizeof text);
  g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "%s: %s failed on rank %u: %s (%d)", what, call, world.rank,
              text[0] ? text : "error", rc);
  return FALSE;
}

/* Asks the table for the world's shape; FALSE with `error`. */
static gboolean ask_world(const DrMpiApi *api, GError **error) {
  int multiple = 0, rank = 0, size = 1, local = 0;
  int rc = api->init(&multiple);
  if (rc != 0) return dr__mpi_fail(rc, "dagrun", "MPI_Init_thread", error);
  rc = api->world(&rank, &size, &local);
  if (rc != 0) return dr__mpi_fail(rc, "dagrun", "MPI_Comm_rank", error);
  world.api = api;
  world.rank = (guint32)rank;
  world.size = (guint32)MAX(size, 1);
  world.local_rank = (guint32)local;
  world.multiple = multiple != 0;
  return TRUE;
}

const DrMpiWorld *dr__mpi_join(GError **error) {
  if (joined) {
    if (join_error != NULL) {
      g_propagate_error(error, g_error_copy(join_error));
      return NULL;
    }
    return &world;
  }
  joined = TRUE;
  world.launcher = dr__mpi_launcher();
  if (world.launcher == NULL) return &world;
  g_autofree char *why = NULL;
  void *h = open_plugin(&why);
  DrMpiPluginEntry entry = h ? (DrMpiPluginEntry)dlsym(h, DR_MPI_PLUGIN_ENTRY) : NULL;
  const DrMpiApi *api = entry ? entry() : NULL;
  if (api == NULL || api->abi != DR_MPI_ABI) {
    g_set_error(&join_error, DR_ERROR, DR_ERROR_UNAVAILABLE,
                "dagrun: error: started by an MPI launcher (%s is set) but MPI is unavailable: %s",
                world.launcher,
                why   ? why
                : api ? "libdagrun_mpi.so was built for another dagrun"
                      : "libdagrun_mpi.so has no " DR_MPI_PLUGIN_ENTRY);
    g_propagate_error(error, g_error_copy(join_error));
    return NULL;
  }
  if (!ask_world(api, &join_error)) {
    g_propagate_error(error, g_error_copy(join_error));
    return NULL;
  }
  return &world;
}

const DrMpiWorld *dr__mpi_world(void) { return &world; }

const DrMpiApi *dr__mpi_set_api(const DrMpiApi *api) {
  const DrMpiApi *old = world.api;
  world = (DrMpiWorld){NULL, 0, 1, 0, FALSE, NULL};
  g_clear_error(&join_error);
  joined = api != NULL;
  if (api != NULL) {
    world.launcher = "test";
    /* A table that fails to start leaves rank 0 of 1 (the fault tests'
     * first call). */
    g_autoptr(GError) error = NULL;
    if (!ask_world(api, &error)) world = (DrMpiWorld){NULL, 0, 1, 0, FALSE, "test"};
  }
  return old;
}

void dr__mpi_leave(void) {
  if (world.api != NULL && world.api->finalize != NULL) world.api->finalize();
  world.api = NULL;
}

gboolean dr__mpi_share_nccl_id(int (*make)(void *id), void *id, gsize len, GError **error) {
  const DrMpiWorld *w = &world;
  gint32 status = 0;
  if (w->rank == 0) status = make(id);
  if (w->api == NULL || w->size <= 1) {
    if (status != 0)
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "NCCL: ncclGetUniqueId failed (%d)", status);
    return status == 0;
  }
  int rc = w->api->bcast(&status, sizeof status, 0, 0);
  if (rc != 0) return dr__mpi_fail(rc, "NCCL bootstrap", "MPI_Bcast", error);
  if (status != 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "NCCL bootstrap: ncclGetUniqueId failed on rank 0 (%d)",
                status);
    return FALSE;
  }
  rc = w->api->bcast(id, len, 0, 0);
  if (rc != 0) return dr__mpi_fail(rc, "NCCL bootstrap", "MPI_Bcast", error);
  return TRUE;
}

typedef struct {
  void (*fn)(void *);
  void *data;
} AbortHook;

static GMutex hooks_mu;
static GArray *hooks; /* AbortHook */

void dr__mpi_register_abort(void (*fn)(void *data), void *data) {
  g_mutex_lock(&hooks_mu);
  if (hooks == NULL) hooks = g_array_new(FALSE, FALSE, sizeof(AbortHook));
  AbortHook h = {fn, data};
  g_array_append_val(hooks, h);
  g_mutex_unlock(&hooks_mu);
}

void dr__mpi_unregister_abort(void (*fn)(void *data), void *data) {
  g_mutex_lock(&hooks_mu);
  for (guint i = 0; hooks != NULL && i < hooks->len; i++) {
    AbortHook *h = &g_array_index(hooks, AbortHook, i);
    if (h->fn == fn && h->data == data) {
      g_array_remove_index(hooks, i);
      break;
    }
  }
  g_mutex_unlock(&hooks_mu);
}

void dr__mpi_run_abort_hooks(void) {
  /* No lock: the process is going down, and a hook may hang on a lock the
   * failing thread holds. */
  for (guint i = hooks ? hooks->len : 0; i-- > 0;) {
    AbortHook h = g_array_index(hooks, AbortHook, i);
    h.fn(h.data);
  }
}

void dr__mpi_abort_job(int code) {
  fflush(stdout);
  fflush(stderr);
  dr__mpi_run_abort_hooks();
  if (world.api != NULL && world.size > 1) world.api->abort(code);
  exit(code);
}
