/* trips.h: internal to backends/cuda/: the trip spans of host-driven loops
 * (trips.c): in streams mode, with node timing on, a %globaltimer stamp
 * before and after each trip the bound keeps (report.h's
 * DR_TRIP_SPANS_KEEP first and last trips per loop and iteration), placed
 * on the iteration's time line by the loop node's own measured start.
 *
 * This part owns the device array of trip stamps, its pinned copies (one
 * per timing slot, filled by timing.c's copy after iter_end) and the host's
 * note of which trip each stamp pair holds. loops.c calls it around each
 * trip it issues; the backend opens a slot before an iteration's issue and
 * reads it after its timing. Graph mode builds its loops as conditional
 * nodes or unrolled copies captured once (condgraph.c, loops.c) and asks
 * for no trip stamps: its trips have no spans. */
#ifndef DAGRUN_BACKENDS_CUDA_TRIPS_H
#define DAGRUN_BACKENDS_CUDA_TRIPS_H

#include "backends/backend.h"
#include "backends/cuda/timing.h"
#include "ir/loops.h"

G_BEGIN_DECLS

/* Per loop and slot: which trip each stamp pair holds. Positions
 * 0..K-1 are the loop's first K trips of the iteration, K..2K-1 a ring of
 * the latest; seq[pos] is the trip's place among the loop's trips of the
 * iteration (G_MAXUINT64: none). */
typedef struct {
  guint64 seen;
  guint64 seq[2 * DR_TRIP_SPANS_KEEP];
  guint64 trip[2 * DR_TRIP_SPANS_KEEP];
} DrCudaTripSlot;

/* One loop at any depth: its id, the top-level loop node it runs under,
 * that loop's index in graph->loops and its depth (0: top-level). */
typedef struct {
  const DrLoop *loop;
  DrId top;
  guint32 top_index, depth;
} DrCudaTripLoop;

typedef struct {
  gboolean on;           /* set up: the graph has loops, timing is on, one device, a stamp kernel */
  gboolean stamping;     /* the iteration being issued stamps its trips */
  guint32 slot;          /* its timing slot */
  guint32 depth;         /* slots */
  GArray *loops;         /* DrCudaTripLoop, every loop of the graph (nested too) */
  GHashTable *index;     /* const DrLoop * -> 1 + its index in loops */
  guint32 n_top;         /* top-level loops */
  DrCudaTripSlot *slots; /* [depth * loops->len] */
  /* Device words: per loop 4K (a start and an end stamp per position),
   * then per top-level loop the stamp at the start of its issue; words of
   * them; the pinned copies [depth * words]. */
  unsigned long long *dev, *host;
  gsize words;
} DrCudaTrips;

/* Setup, after timing's open: when `t`'s mode times nodes, the graph of
 * `plan` has loops, the run drives one device and the table has a stamp
 * kernel, allocates the stamps (zeroed on `origin`) and their pinned
 * copies and has `t` copy them back with each timed iteration's stamps;
 * else leaves `tr` off. Fails as DR_CUDA does. */
gboolean dr__cuda_trips_setup(DrCudaTrips *tr, DrCudaTiming *t, const DrPlan *plan, guint32 n_devices,
                              cudaStream_t origin, GError **error);

/* Before an iteration's issue on slot `k`: whether it stamps its trips
 * (`stamp`: a timed iteration issued eagerly), and the slot's notes
 * emptied. */
void dr__cuda_trips_begin(DrCudaTrips *tr, guint32 k, gboolean stamp);

/* Around the issue of top-level loop `loop` on `st`: the stamp its trips
 * are placed by. */
gboolean dr__cuda_trips_loop(DrCudaTrips *tr, const DrLoop *loop, cudaStream_t st, GError **error);

/* Around trip `trip` of `loop` on `st`: begin stamps its start when the
 * bound keeps it and sets *pos (-1: no stamps); end stamps its end. */
gboolean dr__cuda_trips_trip_begin(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, cudaStream_t st,
                                   gint32 *pos, GError **error);
gboolean dr__cuda_trips_trip_end(DrCudaTrips *tr, const DrLoop *loop, gint32 pos, cudaStream_t st,
                                 GError **error);

/* After slot `k`'s iteration finished and its node times were read into
 * `timing`: adds its trips to timing->trips (nothing when NULL or none
 * were stamped), each at its loop node's start plus its stamps' distance
 * from the loop's. */
void dr__cuda_trips_read(const DrCudaTrips *tr, guint32 k, DrIterTiming *timing);

/* Releases the stamps and notes (NULL-safe fields). */
void dr__cuda_trips_close(DrCudaTrips *tr);

G_END_DECLS

#endif
