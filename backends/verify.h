/* verify.h: internal to backends/: capturing written buffers and comparing
 * the concurrent run against the serial one (verify.c). */
#ifndef DAGRUN_BACKENDS_VERIFY_H
#define DAGRUN_BACKENDS_VERIFY_H

#include "backends/backend.h"

G_BEGIN_DECLS

/* Returns one GBytes per graph buffer (NULL entries for buffers no node
 * writes and for alloc'd buffers) with the buffer's current contents read
 * through `ops->read_buffer`, or NULL with `error` set. */
GPtrArray *dr__verify_capture(const DrBackendOps *ops, DrBackend *b, const DrGraph *graph, GError **error);

/* Compares two captures of the same graph, each buffer by its `verify:`
 * rule. Sets report->verified, and on a difference the first differing
 * buffer (in buffer order), element index and both values; the largest
 * difference within tolerance (report->largest_*) and the count of
 * skipped buffers. Returns TRUE when nothing differs beyond its rule. */
gboolean dr__verify_compare(const DrGraph *graph, GPtrArray *serial, GPtrArray *concurrent, DrReport *report);

/* Whether `concurrent` is within `rtol`/`atol` of `serial`: |c - s| <=
 * atol + rtol*|s|; NaN matches only NaN, an infinity only itself. *diff:
 * |c - s| (0 when equal, INFINITY for a NaN against a number). */
gboolean dr__verify_within(double serial, double concurrent, double rtol, double atol, double *diff);

G_END_DECLS

#endif
