/* settings.c: the settings resolved once, in the library, the same for the
 * C API and the command line (settings.h): the stream cap and why, the
 * CUDA queue count the run asks the driver for, the output-file checks and
 * the one copy of DrRunSettings into DrRunOptions.
 *
 * The cap (docs/design.md, decisions.md): the caller's max_streams, else
 * the pipeline's run.max_streams; else none in graph mode; else
 * CUDA_DEVICE_MAX_CONNECTIONS when set; else 32 when no CUDA context exists
 * yet (the run then sets the variable to 32 before the context is created,
 * so the driver gives that many hardware queues), else 8: the context
 * already has the driver's default queues, and more eager streams than
 * queues serialize falsely (GPU-NOTES.md). Measured on an H200 (bench/,
 * 2026-11-29): 32 independent 100 µs spins took 444 µs on 8 streams and
 * 239 µs on 32; 16 chunked copy/compute lanes 5.8 ms on 16 streams against
 * 6.5 ms capped at 8.
 *
 * Whether a context exists is asked of the driver without loading it:
 * libcuda is looked up with RTLD_NOLOAD, so a process that has not touched
 * CUDA (or has no driver or GPU) has no context, and no call here creates
 * one (cuDevicePrimaryCtxGetState and cuCtxGetCurrent only read). */
#include "lib/settings.h"

#include "ir/mode.h"

#include <dlfcn.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define ENV_QUEUES "CUDA_DEVICE_MAX_CONNECTIONS"
#define QUEUES_ASKED 32u /* and "32" for setenv below */
#define DRIVER_QUEUES 8u

/* ---- the stream cap --------------------------------------------------- */

typedef int (*CuDeviceGetCount)(int *count);
typedef int (*CuDeviceGet)(int *device, int ordinal);
typedef int (*CuPrimaryCtxGetState)(int device, unsigned *flags, int *active);
typedef int (*CuCtxGetCurrent)(void **ctx);

/* Asks an already loaded driver whether any context exists. */
static gboolean driver_has_context(void *lib) {
  CuCtxGetCurrent get_current = (CuCtxGetCurrent)dlsym(lib, "cuCtxGetCurrent");
  CuDeviceGetCount get_count = (CuDeviceGetCount)dlsym(lib, "cuDeviceGetCount");
  CuDeviceGet get_device = (CuDeviceGet)dlsym(lib, "cuDeviceGet");
  CuPrimaryCtxGetState get_state = (CuPrimaryCtxGetState)dlsym(lib, "cuDevicePrimaryCtxGetState");
  void *current = NULL;
  /* Before cuInit every call fails (CUDA_ERROR_NOT_INITIALIZED): no context. */
  if (get_current != NULL && get_current(&current) == 0 && current != NULL) return TRUE;
  int count = 0;
  if (get_count == NULL || get_device == NULL || get_state == NULL || get_count(&count) != 0) return FALSE;
  for (int i = 0; i < count; i++) {
    int dev = 0, active = 0;
    unsigned flags = 0;
    if (get_device(&dev, i) == 0 && get_state(dev, &flags, &active) == 0 && active) return TRUE;
  }
  return FALSE;
}

gboolean dr__cuda_context_exists(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) return FALSE;
  gboolean yes = driver_has_context(lib);
  dlclose(lib);
  return yes;
}

/* The eager cap when the user gave none, and why (static strings). */
static guint32 eager_default_cap(const char **note, gboolean *wants_queues) {
  const char *env = g_getenv(ENV_QUEUES);
  if (env != NULL) {
    guint64 v = 0;
    if (g_ascii_string_to_unsigned(env, 10, 1, 32, &v, NULL)) {
      *note = "from CUDA_DEVICE_MAX_CONNECTIONS";
      return (guint32)v;
    }
    *note = "CUDA_DEVICE_MAX_CONNECTIONS is not 1..32: the driver's default queues";
    return DRIVER_QUEUES;
  }
  if (dr__cuda_context_exists()) {
    *note =
        "a CUDA context already exists and CUDA_DEVICE_MAX_CONNECTIONS is unset: the driver gave it 8 queues";
    return DRIVER_QUEUES;
  }
  *note = "default: dagrun asks the driver for 32 queues";
  *wants_queues = TRUE;
  return QUEUES_ASKED;
}

void dr__plan_options_resolve(const DrGraph *graph, const DrPlanSettings *settings, DrPlanOptions *opts,
                              DrMode *mode, char **mode_reason, gboolean *wants_queues) {
  DrPlanSettings none = {0};
  const DrPlanSettings *s = settings ? settings : &none;
  DrMode asked = s->mode_set ? s->mode : graph->run.mode;
  if (asked == DR_MODE_AUTO && s->backend == DR_BACKEND_HOST) {
    *mode = DR_MODE_STREAMS;
    *mode_reason = g_strdup("auto: the host backend has no graph mode; its threads run the plan's streams");
  } else {
    *mode = dr_mode_resolve(graph, asked, s->iterations ? s->iterations : graph->run.iterations,
                            s->mode_set ? "--mode" : "run.mode", mode_reason);
  }
  *wants_queues = FALSE;
  *opts = (DrPlanOptions){0};
  if (s->max_streams > 0) {
    opts->max_streams = s->max_streams;
    opts->cap_note = "set by max_streams";
  } else if (graph->run.max_streams_set) {
    opts->max_streams = graph->run.max_streams;
    opts->cap_note = "set by the pipeline's run.max_streams";
  } else if (*mode == DR_MODE_GRAPH) {
    opts->uncapped = TRUE;
    opts->cap_note = "graph mode has no cap";
  } else {
    opts->max_streams = eager_default_cap(&opts->cap_note, wants_queues);
  }
}

void dr__queue_count_request(gboolean wants_queues, DrBackendKind backend) {
  if (!wants_queues || backend == DR_BACKEND_HOST || g_getenv(ENV_QUEUES) != NULL) return;
  if (dr__cuda_context_exists()) return;
  g_setenv(ENV_QUEUES, "32", FALSE); /* QUEUES_ASKED */
}

/* ---- run settings ------------------------------------------------------- */

/* The fields DrRunSettings and DrRunOptions share, copied in one place. */
#define RUN_FIELDS(X)    \
  X(backend)             \
  X(mode)                \
  X(iterations)          \
  X(warmup)              \
  X(verify)              \
  X(delay_seed)          \
  X(delay_max_us)        \
  X(device)              \
  X(node_timing)         \
  X(trace_path)          \
  X(timeline_path)       \
  X(progress)            \
  X(host_output)         \
  X(stop)                \
  X(graph_fallback)      \
  X(cuda_graph_dot_path) \
  X(issue_threads)

void dr_run_settings_init(DrRunSettings *settings, const DrPipeline *pipeline) {
  g_return_if_fail(settings != NULL && pipeline != NULL);
  DrRunOptions o;
  dr_run_options_init(&o, pipeline->graph);
  memset(settings, 0, sizeof *settings);
#define X(f) settings->f = o.f;
  RUN_FIELDS(X)
#undef X
}

gboolean dr__run_options_from_settings(const DrGraph *graph, const DrRunSettings *s, DrRunOptions *o,
                                       GError **error) {
  dr_run_options_init(o, graph);
  if (s == NULL) return TRUE;
  g_return_val_if_fail((guint)s->backend < DR_N_BACKENDS, FALSE);
  g_return_val_if_fail((guint)s->mode < DR_N_MODES, FALSE);
  g_return_val_if_fail((guint)s->node_timing < DR_N_TIMINGS, FALSE);
  if (s->iterations == 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "pipeline '%s': iterations must be at least 1", graph->name);
    return FALSE;
  }
#define X(f) o->f = s->f;
  RUN_FIELDS(X)
#undef X
  return TRUE;
}

/* ---- output files ------------------------------------------------------- */

static gboolean cannot_create(const char *path, int err, GError **error) {
  g_set_error(error, DR_ERROR, DR_ERROR_OUTPUT, "%s: error: cannot create: %s", path, g_strerror(err));
  return FALSE;
}

gboolean dr_output_check(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (strcmp(path, "-") == 0) return TRUE;
  if (path[0] == '\0') return cannot_create(path, ENOENT, error);
  GStatBuf st;
  if (g_stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return cannot_create(path, EISDIR, error);
    if (g_access(path, W_OK) != 0) return cannot_create(path, errno, error);
    return TRUE;
  }
  if (errno != ENOENT) return cannot_create(path, errno, error);
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_stat(dir, &st) != 0) return cannot_create(path, errno, error);
  if (!S_ISDIR(st.st_mode)) return cannot_create(path, ENOTDIR, error);
  if (g_access(dir, W_OK | X_OK) != 0) return cannot_create(path, errno, error);
  return TRUE;
}

gboolean dr__outputs_check(const DrGraph *graph, const DrRunOptions *o, GError **error) {
  if (o->trace_path != NULL && !dr_output_check(o->trace_path, error)) return FALSE;
  if (o->timeline_path != NULL && !dr_output_check(o->timeline_path, error)) return FALSE;
  for (DrId i = 0; i < dr_graph_n_buffers(graph); i++) {
    const char *save = dr_graph_buffer(graph, i)->save_path;
    if (save != NULL && !dr_output_check(save, error)) return FALSE;
  }
  return TRUE;
}
