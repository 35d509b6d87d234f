/* backend.c: the CUDA backend's entry in the backend vtable (backend.h):
 * it opens and closes the parts (cuda.h) in order, keeps iterations in
 * flight, and hands what differs between streams and graph mode to the
 * mode in effect (DrCudaMode).
 *
 * Open: the streams and their events (streams.c), then timing (timing.c);
 * buffers and launches only get their host arrays. Setup: buffers
 * (memory.c), launch resources and user kernels (launch.c), then the mode
 * (bind; or capture and instantiate). Each iteration takes a timing slot
 * (iteration % depth): its start event on origin, the mode's enqueueing,
 * its end event, the stamps' copy and its done event; finishing waits for
 * the slot and reads its timing. The profiler's capture range spans the
 * timed iterations, and each iteration's issue is an NVTX range
 * (profile.c). A library user's stream orders an iteration by two events
 * (run_on_stream), and binds and writes of external memory go to memory.c
 * and the mode. Close releases in the opposite order, and
 * first drains the device when something may still be in flight (every
 * device, with several: streams.c selects each device for its calls and
 * leaves the first selected between them). This file
 * makes no decision of its own about streams, memory, launches or timing:
 * each part's file owns those. */
#include "backends/cuda/cuda.h"

static void cuda_close(DrBackend *b) {
  if (b == NULL) return;
  const DrCudaApi *api = dr_cuda_api();
  /* Work may still be in flight after a failure (host functions read the
   * host calls): let it drain before anything is released. After a clean
   * run nothing is (the last iteration drained the device, checked), so
   * close makes only releases and has no error to lose. */
  if (!b->idle && b->streams.n_devices > 1)
    (void)dr__cuda_streams_sync(&b->streams, "closing", NULL);
  else if (!b->idle)
    (void)api->cudaDeviceSynchronize();
  /* A run stopped or failed before its last timed iteration finished. */
  if (b->profiling) (void)api->cudaProfilerStop();
  if (b->caller.in) (void)api->cudaEventDestroy(b->caller.in);
  if (b->caller.out) (void)api->cudaEventDestroy(b->caller.out);
  dr__cuda_trips_close(&b->trips);
  dr__cuda_threads_free(b->threads); /* idle between iterations: joins at once */
  dr__cuda_batch_free(b->batch);
  dr__cuda_profile_close(&b->profile);
  dr__cuda_graph_release(&b->cuda_graph);
  dr__cuda_launch_close(&b->launch);
  dr__cuda_devwords_close(&b->devwords);
  dr__cuda_loops_close(&b->loops);
  dr__cuda_nccl_close(&b->nccl);
  dr__cuda_memory_close(&b->memory, b->streams.origin);
  dr__cuda_timing_close(&b->timing);
  dr__cuda_streams_close(&b->streams);
  (void)api->cudaGetLastError();
  g_free(b);
}

/* run.device_loop in graph mode: the iterations are one launch of a WHILE
 * node (condgraph.c). Nodes are not timed inside it (no event nodes in a
 * body; their stamps would be each trip's): each iteration's time is the
 * difference of the counter kernel's stamps at the ends of its trip and
 * the one before. */
static gboolean device_loop(const DrBackend *b) {
  return b->graph->run.device_loop && b->mode == &dr__cuda_graph_mode;
}

static DrBackend *cuda_open(const DrPlan *plan, const DrRunOptions *opts, GError **error) {
  if (!dr__cuda_loops_check(plan, opts->mode, error)) return NULL;
  if (!dr__cuda_memory_mode_check(plan->graph, opts->mode, error)) return NULL;
  if (!dr__cuda_streams_check(plan, opts->device, error)) return NULL;
  DrBackend *b = g_new0(DrBackend, 1);
  b->plan = plan;
  b->graph = plan->graph;
  b->opts = *opts;
  b->n_nodes = dr_graph_n_nodes(plan->graph);
  b->mode = opts->mode == DR_MODE_GRAPH ? &dr__cuda_graph_mode : &dr__cuda_streams_mode;
  b->cuda_graph.uncapturable = DR_NONE;
  dr__cuda_memory_open(&b->memory, plan->graph);
  b->memory.storage = plan->storage;
  b->memory.storage_bytes = plan->storage_bytes;
  dr__cuda_launch_open(&b->launch, plan);
  DrCudaTimingAsk ask = {b->mode->depth, b->mode->stamps_by_default, b->mode->stamps_aside};
  if (dr__cuda_streams_open(&b->streams, plan, opts->device, b->mode->keep_fork_join, error) &&
      dr__cuda_timing_open(&b->timing, plan, &b->streams, device_loop(b) ? DR_TIMING_OFF : opts->node_timing,
                           &ask, error)) {
    dr__cuda_profile_open(&b->profile, plan, &b->streams);
    return b;
  }
  cuda_close(b);
  return NULL;
}

static gboolean cuda_setup(DrBackend *b, GError **error) {
  return dr__cuda_memory_setup(&b->memory, &b->streams, error) &&
         dr__cuda_loops_setup(&b->loops, b->plan, &b->launch, b->mode == &dr__cuda_graph_mode,
                              b->opts.warmup + b->opts.iterations, error) &&
         dr__cuda_trips_setup(&b->trips, &b->timing, b->plan, b->streams.n_devices,
                              b->mode == &dr__cuda_graph_mode, b->streams.origin, error) &&
         (b->loops.trip_stamps = b->trips.on ? &b->trips : NULL, TRUE) &&
         dr__cuda_nccl_open(&b->nccl, b->plan, &b->streams, error) &&
         dr__cuda_launch_setup(&b->launch, &b->streams, &b->memory, b->opts.host_output, error) &&
         b->mode->prepare(b, error);
}

/* Enqueues iteration `iteration` on its slot without waiting for it. The
 * iteration starts on origin, after the previous iteration's join (origin's
 * order), and its fork holds back every stream until then: iterations never
 * overlap on the device, only the host's issuing overlaps the device's
 * running.
 *
 * The profiler's capture range (cudaProfilerStart/Stop: what `nsys
 * --capture-range=cudaProfilerApi` and `ncu --profile-from-start off`
 * record) opens before the first timed iteration's first call and closes
 * once the last one has finished and the device is drained
 * (cuda_finish_iteration), so every call inside it belongs to a timed
 * iteration; warmups, setup, read-back and --verify's reference run (which
 * times nothing) stay outside. The last warmup may still be running on the
 * device when it opens (iterations in flight): its calls were all made
 * before. Each iteration's issue is an NVTX range (profile.h). */
static gboolean cuda_launch_iteration(DrBackend *b, guint32 iteration, gboolean timed, GError **error) {
  if (timed && !b->profiling) {
    if (!dr__cuda_memory_reset_high(&b->memory, b->mode == &dr__cuda_graph_mode, error)) return FALSE;
    if (!DR_CUDA(DR_SITE_SETUP("opening the profiler's capture range"), cudaProfilerStart)) return FALSE;
    b->profiling = TRUE;
  }
  guint32 k = iteration % b->timing.depth;
  b->slot = k;
  b->idle = FALSE;
  b->in_flight++;
  /* run.device_loop: the first iteration's launch runs them all. */
  if (b->loops.device_loop && iteration > 0) return TRUE;
  if (b->loops.device_loop &&
      !dr__cuda_device_loop_limit(&b->loops, b->streams.origin, b->opts.warmup + b->opts.iterations, error))
    return FALSE;
  nvtxRangeId_t range = dr__cuda_profile_iteration_begin(&b->profile, iteration, iteration < b->opts.warmup);
  /* Trip stamps: the host's where it issues the loops (streams mode), the
   * graph's own (the ring) in graph mode; copied back when timed. */
  dr__cuda_trips_begin(&b->trips, k, timed, b->mode == &dr__cuda_graph_mode);
  gboolean ok = dr__cuda_timing_begin(&b->timing, k, b->streams.origin, error) && b->mode->issue(b, error) &&
                dr__cuda_timing_end(&b->timing, k, b->streams.origin, timed, error);
  dr__cuda_profile_iteration_end(&b->profile, range);
  return ok;
}

/* Waits for the oldest iteration in flight, `iteration`, and reads its
 * timing into `timing` (NULL: untimed). */
static gboolean cuda_finish_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error) {
  guint32 k = iteration % b->timing.depth;
  gboolean dl = b->loops.device_loop, launched = !dl || iteration == 0;
  /* With NCCL communicators the wait watches their asynchronous errors
   * first, so a dead peer fails the run instead of hanging it. */
  if (launched && (!dr__cuda_nccl_wait(&b->nccl, b->timing.iter_done[k], error) ||
                   !dr__cuda_timing_wait(&b->timing, k, error)))
    return FALSE;
  /* A host function that failed on CUDA's callback thread fails the run
   * now that its iteration is over. */
  if (!dr__cuda_launch_host_failed(&b->launch, error)) return FALSE;
  /* Graph mode's device-counted trips of this iteration (one in flight:
   * the next launch resets them; with run.device_loop, the last
   * iteration's); nothing to read otherwise. */
  if (launched && !dr__cuda_loops_read_trips(&b->loops, b->streams.origin, error)) return FALSE;
  if (dl && iteration == 0 &&
      !dr__cuda_device_loop_read(&b->loops, b->streams.origin, b->opts.warmup + b->opts.iterations, error))
    return FALSE;
  /* After the run's last iteration, drain the whole device and check it:
   * an error that arrives now is the run's to report (DR_ERROR_RUNTIME
   * naming cudaDeviceSynchronize), not close's to drop. */
  if (iteration + 1 == b->opts.warmup + b->opts.iterations) {
    if (!dr__cuda_streams_sync(&b->streams, "draining the device after the last iteration", error) ||
        !dr__cuda_memory_read_high(&b->memory, b->mode == &dr__cuda_graph_mode, error))
      return FALSE;
    if (b->profiling) {
      b->profiling = FALSE;
      if (!DR_CUDA(DR_SITE_SETUP("closing the profiler's capture range"), cudaProfilerStop)) return FALSE;
    }
  }
  b->in_flight--;
  b->idle = b->in_flight == 0;
  if (timing == NULL) return TRUE;
  if (launched && !dr__cuda_timing_read(&b->timing, k, b->streams.prev_on_stream, timing, error))
    return FALSE;
  if (launched) dr__cuda_trips_read(&b->trips, k, timing);
  if (dl) {
    /* The trip's end stamp less the one before (stamps[0]: the start). */
    const guint64 *st = b->loops.dl_host + 1;
    timing->makespan_us = (double)(st[iteration + 1] - st[iteration]) / 1e3;
  }
  return TRUE;
}

static guint32 cuda_max_in_flight(const DrBackend *b) { return b->timing.depth; }

static gboolean cuda_run_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error) {
  return cuda_launch_iteration(b, iteration, timing != NULL, error) &&
         cuda_finish_iteration(b, iteration, timing, error);
}

/* The stream a read or write between runs goes on: the library user's
 * of the last dr_runner_run_on_stream (so it follows that stream's
 * order), else origin (after every iteration dagrun enqueued). */
static cudaStream_t between_runs_stream(const DrBackend *b) {
  return b->caller.set ? b->caller.stream : b->streams.origin;
}

static gboolean cuda_read_buffer(DrBackend *b, DrId buffer, void *dst, GError **error) {
  if (!dr__cuda_memory_readable(&b->memory, buffer, error)) return FALSE;
  b->idle = FALSE;
  /* Every iteration dagrun enqueued is before it: each run_on_stream's
   * stream waits for its iteration, each plain run drained the device. */
  b->idle = dr__cuda_memory_read(&b->memory, buffer, dst, between_runs_stream(b), error);
  return b->idle;
}

/* Waits for the work in flight (run_on_stream's iterations, writes) before
 * something it may still use changes: a setup step, not a run's order. */
gboolean dr__cuda_quiesce(DrBackend *b, GError **error) {
  if (b->idle) return TRUE;
  if (!dr__cuda_streams_sync(&b->streams, "waiting for the work in flight", error)) return FALSE;
  b->idle = TRUE;
  return TRUE;
}

/* The memory before is released only once every node follows the new
 * pointer; when they cannot, the old pointer is put back and the nodes
 * follow it again (best effort: the runner should then be freed). */
static gboolean cuda_bind_buffer(DrBackend *b, DrId buffer, void *ptr, const char **how, GError **error) {
  DrCudaBase old;
  int device =
      b->streams.n_devices > 1 ? dr_graph_buffer_device(b->graph, buffer) : b->streams.devices[0].ordinal;
  if (!dr__cuda_quiesce(b, error) || !dr__cuda_memory_bind(&b->memory, buffer, ptr, device, &old, error))
    return FALSE;
  if (!b->mode->buffer_moved(b, buffer, how, error)) {
    dr__cuda_memory_unbind(&b->memory, buffer, &old);
    const char *again_how = NULL;
    g_autoptr(GError) again = NULL;
    (void)b->mode->buffer_moved(b, buffer, &again_how, &again);
    return FALSE;
  }
  dr__cuda_memory_release(&old);
  return TRUE;
}

/* After writes enqueued on `st` (between_runs_stream): with a caller's
 * stream, the writes on it -> every later iteration, a plain
 * dr_runner_run's too (those start on origin). */
static gboolean order_writes(DrBackend *b, cudaStream_t st, GError **error) {
  if (!b->caller.set) return TRUE;
  DrCudaSite site = DR_SITE_SETUP("ordering a write on the caller's stream");
  return DR_CUDA(site, cudaEventRecord, b->caller.in, st) &&
         DR_CUDA(site, cudaStreamWaitEvent, b->streams.origin, b->caller.in, 0);
}

static gboolean cuda_write_buffer(DrBackend *b, DrId buffer, guint64 offset, const void *data, guint64 bytes,
                                  GError **error) {
  b->idle = FALSE;
  cudaStream_t st = between_runs_stream(b);
  return dr__cuda_memory_write(&b->memory, buffer, offset, data, bytes, st, error) &&
         order_writes(b, st, error);
}

/* Parameter buffers: the words of device buffers of the first device in
 * one store (DrCudaApi.words_launch: values as kernel arguments, no host
 * copy to keep alive), any other through dr__cuda_memory_write; ordered
 * as cuda_write_buffer orders a write (order_writes). */
static gboolean cuda_write_words(DrBackend *b, const DrId *buffers, const guint64 *words, guint32 n,
                                 GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  b->idle = FALSE;
  cudaStream_t st = between_runs_stream(b);
  g_autofree unsigned long long **dst = g_new(unsigned long long *, MAX(n, 1));
  g_autofree unsigned long long *val = g_new(unsigned long long, MAX(n, 1));
  guint32 k = 0;
  for (guint32 i = 0; i < n; i++) {
    const DrBuffer *buf = dr_graph_buffer(b->graph, buffers[i]);
    gboolean store =
        api->words_launch != NULL && buf->where == DR_WHERE_DEVICE && !b->memory.external[buffers[i]] &&
        dr__cuda_streams_device_index(&b->streams, dr_graph_buffer_device(b->graph, buffers[i])) == 0;
    if (store) {
      dst[k] = b->memory.bases[buffers[i]];
      val[k++] = words[i];
    } else if (!dr__cuda_memory_write(&b->memory, buffers[i], 0, &words[i], sizeof words[i], st, error)) {
      return FALSE;
    }
  }
  if (k > 0 &&
      !dr__cuda_check((cudaError_t)api->words_launch(dst, val, k, st), "the store of parameter buffers",
                      DR_SITE_SETUP("writing parameter buffers"), error))
    return FALSE;
  return order_writes(b, st, error);
}

/* One iteration between the library user's work on `stream` (NULL: the
 * legacy default stream; cudaStreamPerThread; or theirs), by events and
 * no host wait: the user's work queued so far -> the iteration's fork on
 * origin (every plan stream starts after the fork); the iteration's join
 * on origin (every plan stream joins it) -> the user's later work. */
static gboolean cuda_run_on_stream(DrBackend *b, guint32 iteration, void *stream, GError **error) {
  cudaStream_t user = stream;
  cudaStream_t origin = b->streams.origin;
  DrCudaSite site = DR_SITE_SETUP("ordering the iteration on the caller's stream");
  if (b->caller.in == NULL &&
      (!DR_CUDA(site, cudaEventCreateWithFlags, &b->caller.in, cudaEventDisableTiming) ||
       !DR_CUDA(site, cudaEventCreateWithFlags, &b->caller.out, cudaEventDisableTiming)))
    return FALSE;
  b->idle = FALSE;
  b->caller.stream = user;
  b->caller.set = TRUE;
  /* Slot 0's stamps and events serve untimed iterations (nothing reads
   * them), like a warmup. */
  b->slot = 0;
  dr__cuda_trips_begin(&b->trips, 0, FALSE, FALSE);
  nvtxRangeId_t range = dr__cuda_profile_iteration_begin(&b->profile, iteration, TRUE);
  gboolean ok = DR_CUDA(site, cudaEventRecord, b->caller.in, user) &&
                DR_CUDA(site, cudaStreamWaitEvent, origin, b->caller.in, 0) && b->mode->issue(b, error) &&
                DR_CUDA(site, cudaEventRecord, b->caller.out, origin) &&
                DR_CUDA(site, cudaStreamWaitEvent, user, b->caller.out, 0);
  dr__cuda_profile_iteration_end(&b->profile, range);
  return ok;
}

static gboolean cuda_args_changed(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                  GError **error) {
  return (b->mode->changes_in_flight || dr__cuda_quiesce(b, error)) &&
         b->mode->args_changed(b, nodes, n, how, error);
}

static const char *cuda_mode_name(const DrBackend *b) { return b->mode->name; }

static guint64 cuda_memory_high(const DrBackend *b) { return b->memory.high; }
/* The trips at the loop's last issue: with iterations in flight, that of
 * the iteration issued last (graph mode: the capture's, a repeat's count). */
static guint64 cuda_loop_trips(const DrBackend *b, guint32 loop) {
  return b->loops.trips != NULL ? b->loops.trips[loop] : 0;
}

/* The last change's forcing node, graph cache outcome (graph.h) and
 * device-word writes (devwords.h). */
static void cuda_update_detail(const DrBackend *b, DrUpdateDetail *detail) {
  if (b->mode != &dr__cuda_graph_mode) return;
  const DrCudaGraphState *cg = &b->cuda_graph;
  detail->forced_by = cg->forced_by;
  detail->cache = dr__graph_cache_result_name(cg->cache.result);
  detail->variants = cg->cache.cap > 0 ? dr__cuda_graph_cache_variants(&cg->cache) : 0;
  detail->device_reads = b->devwords.last_reads;
}

const DrBackendOps dr__cuda_backend = {
    .name = "cuda",
    .open = cuda_open,
    .setup = cuda_setup,
    .run_iteration = cuda_run_iteration,
    .launch_iteration = cuda_launch_iteration,
    .finish_iteration = cuda_finish_iteration,
    .max_in_flight = cuda_max_in_flight,
    .args_changed = cuda_args_changed,
    .read_buffer = cuda_read_buffer,
    .bind_buffer = cuda_bind_buffer,
    .write_buffer = cuda_write_buffer,
    .write_words = cuda_write_words,
    .run_on_stream = cuda_run_on_stream,
    .close = cuda_close,
    .mode_name = cuda_mode_name,
    .memory_high = cuda_memory_high,
    .loop_trips = cuda_loop_trips,
    .update_detail = cuda_update_detail,
};
