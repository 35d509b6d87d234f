/* trips.h: internal to backends/cuda/: the trip spans of loops (trips.c):
 * with node timing on, a %globaltimer stamp before and after each trip the
 * bound keeps (report.h's DR_TRIP_SPANS_KEEP first and last trips per loop
 * and iteration), placed on the iteration's time line by the loop node's
 * own measured start.
 *
 * This part owns the device array of trip stamps, its pinned copies (one
 * per timing slot, filled by timing.c's copy after iter_end), the host's
 * note of which trip each stamp pair holds (streams mode) and graph mode's
 * ring, the same notes kept on the device by the trip stamp kernel, since
 * the graph's trips are not the host's to see. loops.c calls it around
 * each trip it issues (or captures unrolled), condgraph.c around each copy
 * of a body it builds; the backend opens a slot before an iteration's issue
 * and reads it after its timing. */
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
 * that loop's index in graph->loops and its depth (0: top-level), its
 * body's plan, and with the ring the word its ring starts at and the one
 * its body nodes' stamps start at (one per body node). */
typedef struct {
  const DrLoop *loop;
  DrId top;
  guint32 top_index, depth;
  const DrPlan *plan;
  gsize ring, node_at;
  guint32 unroll; /* a while: graph mode's copies per WHILE trip (dr__cuda_while_choice); else 1 */
  DrId writer;    /* kernel-guarded copies: the node that sets the condition; else DR_NONE */
} DrCudaTripLoop;

typedef struct {
  gboolean on;           /* set up: the graph has loops, timing is on, one device, a stamp kernel */
  gboolean stamping;     /* the iteration being issued stamps its trips (is timed) */
  guint32 slot;          /* its timing slot */
  guint32 depth;         /* slots */
  GArray *loops;         /* DrCudaTripLoop, every loop of the graph (nested too) */
  GHashTable *index;     /* const DrLoop * -> 1 + its index in loops */
  GHashTable *bodies;    /* a loop's body (const DrGraph *) -> 1 + the loop's index in loops */
  guint32 n_top;         /* top-level loops */
  DrCudaTripSlot *slots; /* [depth * loops->len] */
  /* Device words: per loop 4K (a start and an end stamp per position),
   * then per top-level loop the stamp at the start of its issue; words of
   * them; graph mode (with the trip stamp kernel): from word ring_at
   * (0: no ring), per loop the ring's words (DrCudaApi.trip_launch's
   * ctl) and its body nodes' stamps (DrCudaTripLoop.ring, node_at).
   * The pinned copies [depth * words]. */
  unsigned long long *dev, *host;
  gsize words, ring_at;
  gboolean *ring_slot; /* [depth]: the slot's iteration was a graph launch (the ring holds its notes) */
} DrCudaTrips;

/* Setup, after timing's open: when `t`'s mode times nodes, the graph of
 * `plan` has loops, the run drives one device and the table has a stamp
 * kernel, allocates the stamps (zeroed on `origin`), in `graph_mode` with
 * the table's trip stamp kernel also the ring, and their pinned copies and
 * has `t` copy them back with each timed iteration's stamps; else leaves
 * `tr` off. Fails as DR_CUDA does. */
gboolean dr__cuda_trips_setup(DrCudaTrips *tr, DrCudaTiming *t, const DrPlan *plan, guint32 n_devices,
                              gboolean graph_mode, cudaStream_t origin, GError **error);

/* Before an iteration's issue (or launch) on slot `k`: whether its trip
 * words are copied back (`stamp`: a timed iteration), whether they are the
 * ring's (`ring`: a graph launch; the host stamps nothing), and the
 * slot's notes emptied. */
void dr__cuda_trips_begin(DrCudaTrips *tr, guint32 k, gboolean stamp, gboolean ring);

/* Around the issue of top-level loop `loop` on `st`: the stamp its trips
 * are placed by; `ring` (graph mode's capture): with the ring's words of
 * the loop and of those nested in it emptied before (a memset). */
gboolean dr__cuda_trips_loop(DrCudaTrips *tr, const DrLoop *loop, gboolean ring, cudaStream_t st,
                             GError **error);

/* Around trip `trip` of `loop` on `st`, issued by the host (`ring`: into
 * graph mode's capture, unrolled, dr__cuda_trips_repeat_flags): begin
 * stamps its start when the bound keeps it and sets *pos (-1: no stamps);
 * end stamps its end. */
gboolean dr__cuda_trips_trip_begin(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, gboolean ring,
                                   cudaStream_t st, gint32 *pos, GError **error);
gboolean dr__cuda_trips_trip_end(DrCudaTrips *tr, const DrLoop *loop, guint64 trip, gint32 pos, gboolean ring,
                                 cudaStream_t st, GError **error);

/* ---- graph mode's ring (condgraph.c, while capturing) ------------------ */

/* Whether `tr` (NULL: no) keeps graph mode's ring. */
gboolean dr__cuda_trips_ring_on(const DrCudaTrips *tr);

/* The trip stamp kernel over `loop`'s ring on `st` (DrCudaApi.trip_launch:
 * `flags` DR_TRIP_CLOSE and/or DR_TRIP_OPEN, `guard`, `trip`, `skip`);
 * nothing without the ring. Fails as DR_CUDA does, naming the loop. */
gboolean dr__cuda_trips_ring_stamp(const DrCudaTrips *tr, const DrLoop *loop, unsigned flags,
                                   const gint32 *guard, gint64 trip, guint64 skip, cudaStream_t st,
                                   GError **error);

/* The word body node `v` of loop body `body` raises to its end as its
 * stamp (DrKLaunch.stamp of a built-in with DR_KFLAG_STAMPS), emptied with
 * its loop's ring; NULL without the ring or for an else body. The read
 * gives each body node of a loop's last trip in an iteration a span. */
unsigned long long *dr__cuda_trips_node_stamp(const DrCudaTrips *tr, const DrGraph *body, DrId v);

/* A memset on `st` of `loop`'s run trips (the trip numbers of a while's
 * run start at 0): before each run of a loop nested in a body; nothing
 * without the ring. */
gboolean dr__cuda_trips_ring_run(const DrCudaTrips *tr, const DrLoop *loop, cudaStream_t st, GError **error);

/* Graph mode's stamp of repeat `loop` before (`after` FALSE) or after trip
 * `trip` of one of its runs, as DrCudaApi.trip_launch's flags (0: none):
 * a repeat of more than 2 K trips stamps its first and last K (*skip: the
 * trips between, counted by the open of trip count - K; else 0); a close
 * and the next trip's open are one stamp, before the next trip. */
unsigned dr__cuda_trips_repeat_flags(const DrLoop *loop, guint64 trip, gboolean after, guint64 *skip);
/* After slot `k`'s iteration finished and its node times were read into
 * `timing`: adds its trips to timing->trips (nothing when NULL or none
 * were stamped), each at its loop node's start plus its stamps' distance
 * from the loop's. */
void dr__cuda_trips_read(const DrCudaTrips *tr, guint32 k, DrIterTiming *timing);

/* Releases the stamps and notes (NULL-safe fields). */
void dr__cuda_trips_close(DrCudaTrips *tr);

G_END_DECLS

#endif
