/* trip_spans.h: lookups in a run report's loop trip spans and counts
 * (DrReport.trip_spans, .trip_counts; report/report.h) for the trip tests
 * of the host and CUDA backends (test-only; no product code uses it). */
#ifndef DAGRUN_TESTS_SUPPORT_TRIP_SPANS_H
#define DAGRUN_TESTS_SUPPORT_TRIP_SPANS_H

#include "report/report.h"

/* The spans (const DrTripSpan *) of loop `loop` (its id with its path,
 * "outer/inner") in timed iteration `it`, in the report's order; the
 * caller frees the array (not the spans) with g_ptr_array_unref. */
GPtrArray *dr_test_trip_spans(const DrReport *r, guint32 it, const char *loop);

/* The trip count of `loop` in timed iteration `it`, or NULL. */
const DrTripCount *dr_test_trip_count(const DrReport *r, guint32 it, const char *loop);

#endif
