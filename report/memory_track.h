/* memory_track.h: the memory track of the trace and the timeline
 * (memory_track.c), called by trace.c and timeline.c. Not public: only
 * report/ includes it. */
#ifndef DAGRUN_REPORT_MEMORY_TRACK_H
#define DAGRUN_REPORT_MEMORY_TRACK_H

#include <glib.h>

#include "report/json.h"
#include "report/report.h"

G_BEGIN_DECLS

/* The height (px) of the timeline's memory track. */
#define DR_MEMORY_TRACK_H 70

/* Writes the "device 0 memory" counter samples ({"bytes": live}) of one
 * iteration (node starts st, ends en, µs from the iteration's start at
 * `base`) into the trace's event array; nothing when no node allocates. */
void dr__trace_memory_counter(DrJsonWriter *w, const DrReport *r, const double *st, const double *en,
                              double base);

/* The memory track's height in the timeline: DR_MEMORY_TRACK_H when a
 * node allocates, else 0 (no track). */
double dr__timeline_memory_height(const DrReport *r);

/* Draws the memory track of the drawn iteration (t_start, t_end per node)
 * as a band at `y` of `width` px: a step curve of live bytes over the
 * plot (x = x0 + t * scale for t in [0, span]), labelled with its peak.
 * Nothing when no node allocates. */
void dr__timeline_memory_track(const DrReport *r, const double *t_start, const double *t_end, double x0,
                               double scale, double span, double y, double width, GString *out);

G_END_DECLS

#endif
