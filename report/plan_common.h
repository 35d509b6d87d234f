/* plan_common.h: what the plan's text and DOT writers share (plan_text.c
 * defines both). Not public: only report/ includes it. */
#ifndef DAGRUN_REPORT_PLAN_COMMON_H
#define DAGRUN_REPORT_PLAN_COMMON_H

#include <glib.h>

#include "ir/graph.h"
#include "ir/plan.h"

G_BEGIN_DECLS

/* Appends a short description of what node `id` does: its op and kernel,
 * host function, buffer or byte count ("kernel scale_f32", "copy 4.0 MiB",
 * "alloc x"). */
void dr__plan_node_detail(const DrGraph *graph, DrId id, GString *out);

/* The steps grouped by stream, each group in stream order: the steps of
 * stream s are bucket[start[s] .. start[s + 1]). Returns `bucket` (n
 * steps) and sets *start (n_streams + 1); free both. */
/* Appends what a stream is to `out`: its priority ("normal"), after
 * "device D, " when the run has several devices, and "comm" (with ", all
 * devices" for a multi-device collective's) for a communication stream. */
void dr__plan_stream_kind(const DrGraph *graph, const DrStream *st, GString *out);

guint32 *dr__plan_steps_by_stream(const DrPlan *plan, guint32 **start);

G_END_DECLS

#endif
