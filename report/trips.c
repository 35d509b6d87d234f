/* trips.c: the trip log (report.h): what a backend records of one
 * iteration's loop trips for the trace and the timeline, under the bound
 * DR_TRIP_SPANS_KEEP. Per loop it keeps the first DR_TRIP_SPANS_KEEP trips
 * as they come and the last DR_TRIP_SPANS_KEEP in a ring, each slot
 * remembering which trip of the iteration (its sequence number) it holds,
 * so trips counted but never given times (dr_trip_log_skip) can never
 * pass for later ones. O(1) per trip, O(loops × DR_TRIP_SPANS_KEEP) per
 * take. It times nothing itself: the backends do (backends/host.c,
 * backends/cuda/trips.c, in streams and graph mode). */
#include "report/report.h"

typedef struct {
  guint64 seq; /* the trip's place among the loop's trips of the iteration; G_MAXUINT64: empty */
  guint64 trip;
  double start_us, end_us;
} Slot;

typedef struct {
  const char *loop;
  DrId node;
  guint32 depth;
  guint64 seen; /* trips of the iteration so far */
  Slot first[DR_TRIP_SPANS_KEEP], last[DR_TRIP_SPANS_KEEP];
} Entry;

struct DrTripLog {
  GMutex mu;
  GHashTable *index; /* loop id pointer -> 1 + its entry's index */
  GArray *entries;   /* Entry, in first-trip order */
  GArray *body;      /* DrBodySpan (iteration unset), in the order noted */
};

DrTripLog *dr_trip_log_new(void) {
  DrTripLog *log = g_new0(DrTripLog, 1);
  g_mutex_init(&log->mu);
  log->index = g_hash_table_new(NULL, NULL);
  log->entries = g_array_new(FALSE, FALSE, sizeof(Entry));
  log->body = g_array_new(FALSE, FALSE, sizeof(DrBodySpan));
  return log;
}

void dr_trip_log_free(DrTripLog *log) {
  if (log == NULL) return;
  g_mutex_clear(&log->mu);
  g_hash_table_unref(log->index);
  g_array_unref(log->entries);
  g_array_unref(log->body);
  g_free(log);
}

/* The entry of `loop`, made on its first trip; under mu. */
static Entry *entry_of(DrTripLog *log, const char *loop, DrId node, guint32 depth) {
  guint k = GPOINTER_TO_UINT(g_hash_table_lookup(log->index, loop));
  if (k == 0) {
    Entry e = {.loop = loop, .node = node, .depth = depth};
    for (guint i = 0; i < DR_TRIP_SPANS_KEEP; i++) e.first[i].seq = e.last[i].seq = G_MAXUINT64;
    g_array_append_val(log->entries, e);
    k = log->entries->len;
    g_hash_table_insert(log->index, (gpointer)loop, GUINT_TO_POINTER(k));
  }
  return &g_array_index(log->entries, Entry, k - 1);
}

void dr_trip_log_add(DrTripLog *log, const char *loop, DrId node, guint32 depth, guint64 trip,
                     double start_us, double end_us) {
  g_mutex_lock(&log->mu);
  Entry *e = entry_of(log, loop, node, depth);
  guint64 s = e->seen++;
  Slot *slot =
      s < DR_TRIP_SPANS_KEEP ? &e->first[s] : &e->last[(s - DR_TRIP_SPANS_KEEP) % DR_TRIP_SPANS_KEEP];
  *slot = (Slot){s, trip, start_us, end_us};
  g_mutex_unlock(&log->mu);
}

void dr_trip_log_skip(DrTripLog *log, const char *loop, DrId node, guint32 depth, guint64 n) {
  g_mutex_lock(&log->mu);
  entry_of(log, loop, node, depth)->seen += n;
  g_mutex_unlock(&log->mu);
}

static void append(const Entry *e, const Slot *slot, guint32 iteration, GArray *spans) {
  DrTripSpan span = {iteration, e->node, e->depth, e->loop, slot->trip, slot->start_us, slot->end_us};
  g_array_append_val(spans, span);
}

void dr_trip_log_take(DrTripLog *log, guint32 iteration, GArray *spans, GArray *counts) {
  g_mutex_lock(&log->mu);
  /* Outer loops before the loops in their bodies, whose trips end first. */
  guint32 max_depth = 0;
  for (guint i = 0; i < log->entries->len; i++)
    max_depth = MAX(max_depth, g_array_index(log->entries, Entry, i).depth);
  for (guint32 d = 0; d <= max_depth; d++)
    for (guint i = 0; i < log->entries->len; i++) {
      const Entry *e = &g_array_index(log->entries, Entry, i);
      if (e->depth != d) continue;
      guint64 kept = 0;
      for (guint64 s = 0; s < MIN(e->seen, DR_TRIP_SPANS_KEEP); s++)
        if (e->first[s].seq == s) append(e, &e->first[s], iteration, spans), kept++;
      guint64 from = MAX(DR_TRIP_SPANS_KEEP, e->seen > DR_TRIP_SPANS_KEEP ? e->seen - DR_TRIP_SPANS_KEEP : 0);
      for (guint64 s = from; s < e->seen; s++) {
        const Slot *slot = &e->last[(s - DR_TRIP_SPANS_KEEP) % DR_TRIP_SPANS_KEEP];
        if (slot->seq == s) append(e, slot, iteration, spans), kept++;
      }
      DrTripCount c = {iteration, e->node, e->loop, e->seen, e->seen - kept};
      g_array_append_val(counts, c);
    }
  g_array_set_size(log->entries, 0);
  g_hash_table_remove_all(log->index);
  g_mutex_unlock(&log->mu);
}

void dr_trip_log_body(DrTripLog *log, const char *loop, DrId node, const char *id, guint64 trip,
                      double start_us, double end_us) {
  DrBodySpan span = {0, node, loop, id, trip, start_us, end_us};
  g_mutex_lock(&log->mu);
  g_array_append_val(log->body, span);
  g_mutex_unlock(&log->mu);
}

void dr_trip_log_take_body(DrTripLog *log, guint32 iteration, GArray *spans) {
  g_mutex_lock(&log->mu);
  for (guint i = 0; i < log->body->len; i++) {
    DrBodySpan span = g_array_index(log->body, DrBodySpan, i);
    span.iteration = iteration;
    g_array_append_val(spans, span);
  }
  g_array_set_size(log->body, 0);
  g_mutex_unlock(&log->mu);
}
