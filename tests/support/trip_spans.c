/* trip_spans.c: lookups in a run report's trip spans (trip_spans.h). */
#include "tests/support/trip_spans.h"

#include <string.h>

GPtrArray *dr_test_trip_spans(const DrReport *r, guint32 it, const char *loop) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; r->trip_spans && i < r->trip_spans->len; i++) {
    const DrTripSpan *sp = &g_array_index(r->trip_spans, DrTripSpan, i);
    if (sp->iteration == it && strcmp(sp->loop, loop) == 0) g_ptr_array_add(out, (gpointer)sp);
  }
  return out;
}

const DrTripCount *dr_test_trip_count(const DrReport *r, guint32 it, const char *loop) {
  for (guint i = 0; r->trip_counts && i < r->trip_counts->len; i++) {
    const DrTripCount *c = &g_array_index(r->trip_counts, DrTripCount, i);
    if (c->iteration == it && strcmp(c->loop, loop) == 0) return c;
  }
  return NULL;
}
