/* plan_memory.h: the memory budget's, reuse's and per-device memory's part of the plan writers
 * (plan_memory.c), called by plan_text.c and plan_json.c. Not public:
 * only report/ includes it. */
#ifndef DAGRUN_REPORT_PLAN_MEMORY_H
#define DAGRUN_REPORT_PLAN_MEMORY_H

#include <glib.h>

#include "ir/plan.h"
#include "report/json.h"

G_BEGIN_DECLS

/* Under a memory limit (plan->graph->budget.ran), appends the line
 * "memory limit L: N ordering edges added (a -> b, ...); bound B0 -> B1,
 * width W0 -> W1, critical path P0 -> P1 us" (or "fits (bound B), no
 * edge added"); nothing without a limit. */
void dr__plan_budget_text(const DrPlan *plan, GString *out);

/* Under a memory limit, writes the member "budget": {"limit_bytes",
 * "bound_before_bytes", "bound_after_bytes", "width_before",
 * "width_after", "critical_path_before_us", "critical_path_after_us",
 * "added_edges": [{"from", "to"}]} into the open object of `w`; nothing
 * without a limit. */
void dr__plan_budget_json(const DrPlan *plan, DrJsonWriter *w);

/* Under memory.reuse: auto, appends "memory reuse: S saved, N buffers in
 * another's storage: b in a ..." (or that none share); nothing without. */
void dr__plan_reuse_text(const DrPlan *plan, GString *out);

/* Under memory.reuse: auto, writes the member "reuse": {"saved_bytes",
 * "shared": [{"buffer", "storage"}]} (each buffer placed in another's
 * storage, and that buffer) into the open object of `w`. */
void dr__plan_reuse_json(const DrPlan *plan, DrJsonWriter *w);

/* Writes the array of lifetimes `lives` (DrPlanLifetime): objects
 * {"buffer", "lifetime", "alloc", "free", "bytes"}, as the key `key` of
 * the open object of `w`. */
void dr__plan_lifetimes_json(const DrGraph *g, const char *key, const GArray *lives, DrJsonWriter *w);

/* On a run of several devices (plan->device_memory not empty), appends a
 * line per device: "memory on device D: serial peak S, bound B (W
 * whole-run + K of N lifetimes: buf#k ...)"; nothing otherwise. */
void dr__plan_devices_text(const DrPlan *plan, GString *out);

/* On a run of several devices, writes the member "devices": [{"device",
 * "peak_serial_bytes", "peak_bound_bytes", "whole_run_bytes", "lifetimes",
 * "peak_bound_buffers": [...]}] (dr_graph_devices order) into the open
 * object of `w`; nothing otherwise. */
void dr__plan_devices_json(const DrPlan *plan, DrJsonWriter *w);

G_END_DECLS

#endif
