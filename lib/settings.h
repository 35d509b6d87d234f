/* settings.h: the run and plan settings, resolved once for the library and
 * the command line alike (lib/settings.c): the stream cap, the environment
 * (CUDA_DEVICE_MAX_CONNECTIONS), the output-file checks, and the one
 * translation of the public DrRunSettings into the backends' DrRunOptions.
 * Not installed; only lib/ includes it. The scheduler and the backends read
 * no environment for these: what they need arrives here, as arguments. */
#ifndef DAGRUN_LIB_SETTINGS_H
#define DAGRUN_LIB_SETTINGS_H

#include <glib.h>

/* The internal headers first, then the public one (api_internal.h). */
#include "lib/api_internal.h"

G_BEGIN_DECLS

/* Fills `opts` (the planner's) from `settings` (may be NULL) for `graph`:
 * the cap by the rule of DrPlanSettings (the only place that reads
 * CUDA_DEVICE_MAX_CONNECTIONS for planning), the profile path, and sets
 * *mode to the mode planned for (auto resolved: ir/mode.h; *mode_reason,
 * owned by the caller, says why) and *wants_queues when the cap is the
 * default 32 that the run must ask the driver for. */
void dr__plan_options_resolve(const DrGraph *graph, const DrPlanSettings *settings, DrPlanOptions *opts,
                              DrMode *mode, char **mode_reason, gboolean *wants_queues);

/* Whether the process has a CUDA context already (the driver's primary
 * context of any device is active, or one is current on this thread). Asks
 * the driver only when libcuda is already loaded, never loads it and never
 * creates a context: without a driver or a GPU, FALSE. */
gboolean dr__cuda_context_exists(void);

/* Before a run on a backend other than the host's: when `wants_queues`,
 * sets CUDA_DEVICE_MAX_CONNECTIONS=32 unless it is set or a context
 * exists. Not thread-safe (setenv): the public contract says so. */
void dr__queue_count_request(gboolean wants_queues, DrBackendKind backend);

/* Translates `s` (NULL: dr_run_settings_init's for `graph`) into the
 * backends' options; FALSE with DR_ERROR_USAGE for zero iterations. */
gboolean dr__run_options_from_settings(const DrGraph *graph, const DrRunSettings *s, DrRunOptions *o,
                                       GError **error);

/* dr_output_check on the run's output files: the trace, the timeline and
 * each buffer's `save:` path. */
gboolean dr__outputs_check(const DrGraph *graph, const DrRunOptions *o, GError **error);

G_END_DECLS

#endif
