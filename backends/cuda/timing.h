/* timing.h: internal to backends/cuda/: the CUDA backend's timing
 * (timing.c): the iteration slots' events, per-node timing events, and
 * %globaltimer stamps.
 *
 * This part owns, per slot (one per iteration in flight, iteration %
 * depth), the events around the iteration on origin (start, end: the
 * makespan; done: after the stamps' copy), and, by timing mode, either
 * two timing events per node and slot (events) or the device stamp array,
 * its pinned copy per slot, and in graph mode the side streams that carry
 * the stamps off the critical path (stamps). It decides --timing=auto.
 * Events belong to a device: with several devices each node's timing
 * events are made on its stream's device and read against a start event
 * of that device (dev_start, recorded at the iteration's start on the
 * device's setup stream after origin's start), and stamps give way to
 * events (%globaltimer is per GPU, and a stamp written by one device into
 * another's array would need peer access). It owns no plan stream and
 * launches no node. */
#ifndef DAGRUN_BACKENDS_CUDA_TIMING_H
#define DAGRUN_BACKENDS_CUDA_TIMING_H

#include "backends/backend.h"
#include "backends/cuda/streams.h"

G_BEGIN_DECLS

/* Iterations the CUDA backend keeps in flight at most. */
#define DR_CUDA_MAX_IN_FLIGHT 2u

typedef struct {
  const DrPlan *plan;           /* borrowed */
  const DrCudaStreams *streams; /* borrowed: the devices */
  guint32 n_nodes, n_streams;
  /* The timing in effect: the run's, --timing=auto decided, and stamps
   * become events when the CUDA table has no stamp_launch (an older
   * shim). */
  DrTimingMode mode;
  /* Slots: the host issues iteration i+1 while the device runs iteration
   * i, so each of the `depth` slots has its own events and stamp copy,
   * read when its iteration is finished. */
  guint32 depth;
  cudaEvent_t iter_start[DR_CUDA_MAX_IN_FLIGHT]; /* timing, on origin, per slot */
  cudaEvent_t iter_end[DR_CUDA_MAX_IN_FLIGHT];
  cudaEvent_t iter_done[DR_CUDA_MAX_IN_FLIGHT]; /* no timing: after the stamps' copy */
  /* Several devices, events: per slot, device index d >= 1's start (its
   * setup stream waits for iter_start, then records it); [k][0] unused. */
  cudaEvent_t dev_start[DR_CUDA_MAX_IN_FLIGHT][DR_MAX_DEVICES];
  cudaEvent_t *t_start; /* [depth * n_nodes]: timing events, when mode == EVENTS */
  cudaEvent_t *t_end;   /* [depth * n_nodes] */
  /* mode == STAMPS: %globaltimer stamps, [n_nodes + 1]: slot v is node v's
   * end, slot n_nodes the iteration's start; device memory, and its pinned
   * copies [depth * (n_nodes + 1)], one per slot, filled once per timed
   * iteration after the join (in origin's order, before the next
   * iteration's fork, so one device array serves every slot). */
  unsigned long long *stamps, *stamps_host;
  /* Stamps off the critical path (graph mode): node v's stamp runs on its
   * plan stream's side stream after v (stamp_ready[v]), so the next node on
   * v's stream does not wait for it; every side stream that stamped
   * something (side_used) joins origin at the end (stamp_join). Eager mode
   * stamps inline. */
  gboolean stamp_aside;
  cudaStream_t *stamp_streams; /* [n_streams] */
  cudaEvent_t *stamp_ready;    /* [n_nodes], no timing */
  cudaEvent_t *stamp_join;     /* [n_streams], no timing */
  gboolean *side_used;         /* [n_streams] */
  /* Another part's device words copied back with each timed iteration
   * (trips.c's trip stamps): while *extra_on, extra_bytes from extra_dev
   * into extra_host + k * extra_bytes, after iter_end; none when
   * extra_bytes is 0. */
  const void *extra_dev;
  void *extra_host;
  gsize extra_bytes;
  const gboolean *extra_on;
} DrCudaTiming;

/* What the mode asks of timing at open. */
typedef struct {
  guint32 depth;              /* slots: iterations in flight */
  gboolean stamps_by_default; /* --timing=auto is stamps (a stamp node in a graph costs ~0.1 µs) */
  gboolean stamps_aside;      /* stamps on side streams, unless DAGRUN_STAMPS_INLINE=1 */
} DrCudaTimingAsk;

/* Opens timing `asked` (DR_TIMING_AUTO: decided here) for `plan` on `s`:
 * every slot's events, per-node timing events or the stamp array (zeroed
 * on origin) and its pinned copies, side streams and their events. Fails
 * as DR_CUDA does; `t` is then half-built and dr__cuda_timing_close
 * releases it. */
gboolean dr__cuda_timing_open(DrCudaTiming *t, const DrPlan *plan, const DrCudaStreams *s, DrTimingMode asked,
                              const DrCudaTimingAsk *ask, GError **error);

/* From now on stamps run inline, on their node's stream (graph mode gave
 * way to streams mode at setup). */
void dr__cuda_timing_inline(DrCudaTiming *t);

/* Releases every event, stream and stamp array of `t`. */
void dr__cuda_timing_close(DrCudaTiming *t);

/* Slot `k`'s iteration starts on `origin` (iter_start; with several
 * devices and events, then every other device's dev_start). */
gboolean dr__cuda_timing_begin(const DrCudaTiming *t, guint32 k, cudaStream_t origin, GError **error);

/* Slot `k`'s iteration ends on `origin`: iter_end, then (`timed`, stamps)
 * one copy of every stamp into the slot's pinned copy, outside the
 * measured makespan and after the join, and (`timed`) the extra words'
 * copy, then iter_done. */
gboolean dr__cuda_timing_end(const DrCudaTiming *t, guint32 k, cudaStream_t origin, gboolean timed,
                             GError **error);

/* Waits on the host for slot `k`'s iteration (iter_done). */
gboolean dr__cuda_timing_wait(const DrCudaTiming *t, guint32 k, GError **error);

/* Reads slot `k`'s timing (events, or the stamps copied back) once its
 * iteration has completed: the makespan, and node times. With stamps a
 * node's end is its stamp and its start when it became ready: the latest
 * of the iteration's start, its stream predecessor's end
 * (`prev_on_stream`) and the ends of the nodes it waits on. */
gboolean dr__cuda_timing_read(const DrCudaTiming *t, guint32 k, const DrId *prev_on_stream, DrIterTiming *out,
                              GError **error);

/* ---- within an iteration's issue (issue.c) ----------------------------- */

/* Stamps the iteration's start on `origin` (stamps only); before the fork,
 * so the fork (and through it every node) happens after it: no node can
 * seem to start before the iteration did. */
gboolean dr__cuda_timing_start_stamp(const DrCudaTiming *t, cudaStream_t origin, GError **error);

/* Records timing event `ev` on `st` (as an external event node while
 * `capturing`, so that it survives capture). */
gboolean dr__cuda_timing_event(cudaEvent_t ev, cudaStream_t st, gboolean capturing, DrCudaSite site,
                               GError **error);

/* dr__cuda_timing_node_stamp when a stamp is to be launched. */
gboolean dr__cuda_timing_stamp_node(const DrCudaTiming *t, DrId v, guint32 stream, cudaStream_t st,
                                    GError **error);

/* After node `v`'s work on `st` (plan stream `stream`), stamps only: its
 * end stamp, on the side stream (aside) or inline on `st` unless the
 * node's launch stamped itself (`self_stamped`). Inline: nothing to do on
 * the hot path. */
static inline gboolean dr__cuda_timing_node_stamp(const DrCudaTiming *t, DrId v, guint32 stream,
                                                  cudaStream_t st, gboolean self_stamped, GError **error) {
  if (t->mode != DR_TIMING_STAMPS || (self_stamped && !t->stamp_aside)) return TRUE;
  return dr__cuda_timing_stamp_node(t, v, stream, st, error);
}

/* The join of plan stream `stream`'s stamps into `origin`, when its side
 * stream stamped something. */
gboolean dr__cuda_timing_join(const DrCudaTiming *t, guint32 stream, cudaStream_t origin, GError **error);

G_END_DECLS

#endif
