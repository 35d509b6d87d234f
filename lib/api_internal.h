/* api_internal.h: what the files of lib/ share behind the public header:
 * the public types' definitions and the pipeline helpers nodes.c needs.
 * Not installed; nothing outside lib/ includes it.
 *
 * A DrPipeline wraps a DrGraph with the state the public contract needs:
 * a reference count (plans keep their pipeline alive), whether it is frozen
 * (validated: the passes ran and added the dependency edges, so nothing may
 * be added any more), a remembered validation failure, and the location
 * given by dr_pipeline_set_loc. Adding a node goes through the same IR
 * builder as the YAML parser (ir/build.h), so the same rules and messages,
 * and adds nothing when a check fails; validation then runs the same passes as
 * `dagrun --check` (scheduler/passes.h). lib/ is glue: it makes no
 * scheduling decision and runs nothing itself. */
#ifndef DAGRUN_LIB_API_INTERNAL_H
#define DAGRUN_LIB_API_INTERNAL_H

#include <math.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/run.h"
#include "ir/build.h"
#include "ir/diag.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "kernels/registry.h"
#include "lib/checks.h"
#include "lib/load.h"
#include "lib/yaml_writer.h"
#include "ir/suggest.h"
#include "scheduler/passes.h"
#include "scheduler/planner.h"
/* The public API these files implement (its types are the internals' own). */
#include "include/dagrun/dagrun.h"

#define MAX_PARAMS 32

struct DrPipeline {
  int refs;
  DrGraph *graph;
  gboolean frozen;
  GError *failed;       /* validation's error, kept: a failed pipeline stays failed */
  const char *loc_file; /* interned in the graph; NULL: synthetic locations */
  guint loc_line, loc_col;
  /* A loop body (dr_pipeline_new_body, lib/loops.c): the scope its node
   * ids get ("LOOP/", owned), and its parent (a reference); NULL for a
   * pipeline. */
  char *scope;
  DrPipeline *parent;
};

/* `id` as node ids are stored in `p`: "SCOPE/id" in a body, else `id`
 * (interned in p's graph either way). */
const char *dr__pipeline_node_id(DrPipeline *p, const char *id);

struct DrStreamPlan {
  DrPipeline *pipeline; /* a reference */
  DrPlan *plan;
  DrMode mode;           /* planned for (the pipeline's, or DrPlanSettings') */
  gboolean wants_queues; /* the cap is the default 32: runs ask for 32 queues */
};

struct DrRunReport {
  DrReport *report;
  GStringChunk *ids;  /* the nodes' ids, copied: the report outlives the graph */
  const DrPlan *plan; /* the plan run, for identity checks only (may be gone) */
};

/* Sets parameter `name` (from `text`, else i when is_int, else f) after
 * checking that every slice, copy and built-in kernel's rule holds with
 * the new value (lib/params_api.c); the graph keeps the values it was
 * patched with (the next run patches it). FALSE with DR_ERROR_USAGE,
 * changing nothing, otherwise. */
gboolean dr__params_try(DrGraph *g, const char *name, const char *text, gboolean is_int, gint64 i, double f,
                        GError **error);

#define CHECK_ARGS(p, error)                \
  g_return_val_if_fail((p) != NULL, FALSE); \
  g_return_val_if_fail((error) == NULL || *(error) == NULL, FALSE)

/* A new pipeline (one reference) owning `graph`; frozen when loaded. */
DrPipeline *dr__pipeline_wrap(DrGraph *graph, gboolean frozen);

/* Drops one reference to `p`; frees it with its graph at the last. */
void dr__pipeline_unref(DrPipeline *p);

/* The location of the next node (or buffer, `buffers` TRUE). */
DrLoc dr__pipeline_next_loc(const DrPipeline *p, gboolean buffers);

/* FALSE with DR_ERROR_USAGE when the pipeline may not change any more. */
gboolean dr__pipeline_check_open(const DrPipeline *p, const char *what, GError **error);

/* The IR builder (ir/build.h) over a pipeline's graph, reporting into a
 * collector of one error: the library stops at the first problem. */
typedef struct {
  DrBuild b;
  DrDiags *diags;
} DrApiBuild;

/* Starts x over p's graph; always end it with dr__api_build_end. */
void dr__api_build_begin(DrApiBuild *x, DrPipeline *p);
/* Ends x: FALSE with `error` (DR_ERROR_INVALID, the builder's message at
 * its location) when something was reported. */
gboolean dr__api_build_end(DrApiBuild *x, GError **error);

/* The buffer named `name`, or NULL with an error saying `what` names it. */
DrBuffer *dr__pipeline_find_buffer(DrPipeline *p, const char *name, const char *what, GError **error);

/* Makes the parser's `device.NAME` go to the library's resolver
 * (lib/device_vars.c), whose values follow dr_device_vars_select.
 * Idempotent; called before every load. */
void dr__device_vars_install(void);

#endif
