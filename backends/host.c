/* host.c: the host backend, a CPU stand-in for the CUDA streams executor
 * that runs any plan without a GPU and makes --verify meaningful on CI.
 *
 * One worker thread per plan stream runs that stream's nodes in issue
 * order. A node's completion in an iteration is a per-node counter (the
 * last iteration epoch it finished) under one mutex and condition
 * variable: a planned wait (u before v) blocks v's worker until u's counter
 * reaches the current epoch, exactly what cudaStreamWaitEvent does on a
 * device. Iterations are separated by a barrier: run_iteration releases
 * every worker, then waits until all of them are done. Every buffer is
 * plain host memory allocated at setup. A stream-ordered buffer keeps one
 * block for all its lifetimes, the way the pool hands the same memory back:
 * its alloc and free nodes fill it with poison bytes (0xA5 on alloc, as
 * uninitialised, 0xDD on free), so a use that a plan leaves unordered with
 * respect to its lifetime's alloc or free, or with a neighbouring lifetime,
 * reads or leaves different bytes and --verify sees it. Kernels run their
 * registry host twins. A buffer bound to a library user's memory
 * (bind_buffer) is that memory, never freed here; the only stream
 * run_on_stream takes is NULL. With a delay seed, each node first sleeps a
 * pseudo-random time, so a plan that lacks a wait produces a different
 * result under --verify. This is not a simulator of GPU timing: times are
 * host wall-clock.
 *
 * The lock is a pthread mutex and condition variable rather than GMutex and
 * GCond: GLib's are futex-based inside a static library that sanitizers do
 * not instrument, so --config=tsan could not see the happens-before edges
 * they create and would report every completion flag as a race. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "ir/loops.h"
#include "backends/mpi.h"
#include "backends/mpi_coll.h"

struct DrBackend {
  const DrPlan *plan; /* borrowed */
  const DrGraph *graph;
  DrRunOptions opts;
  guint32 n_nodes, n_buffers, n_streams;
  void **bases;          /* [n_buffers], owned unless external */
  gboolean *external;    /* [n_buffers]: bases[i] is the caller's (bind_buffer) */
  DrKernelCall *kcalls;  /* [n_nodes], bound at setup */
  DrHostCall *hcalls;    /* [n_nodes], bound at setup */
  guint32 *stream_first; /* [n_streams + 1]: ranges of stream_steps */
  guint32 *stream_steps; /* step indices grouped by stream, issue order */

  pthread_mutex_t mu;
  pthread_cond_t cond;
  gboolean sync_ready; /* mu and cond initialised */
  GThread **threads;   /* [n_streams]; n_threads actually started */
  guint32 n_threads;
  /* Under mu: */
  guint32 epoch;     /* current iteration's epoch, from 1 */
  guint32 iteration; /* the caller's iteration number (delay seeding) */
  gboolean quit;
  guint32 n_finished;  /* workers done with `epoch` */
  guint32 *node_epoch; /* [n_nodes]: last epoch the node completed */
  gboolean abort;
  GError *error; /* the first worker failure */
  DrIterTiming *timing;
  gint64 t0_ns;
  /* Stream-ordered bytes live now and at most so far (dr_pool_bytes per
   * lifetime), updated by the alloc and free nodes on the workers. */
  _Atomic guint64 live_bytes, high_bytes;
  /* Loops (ir/loops.h): a backend of the same kind per body plan
   * (plan->bodies: 2 per loop, NULL where the plan has none), with its own
   * workers and the enclosing backend's buffers (borrowed_bases). The
   * loop node's worker drives it: one run_iteration per trip, reading the
   * condition in between (a host-driven loop). trips[l]: the trips loop l
   * made the last time it ran. */
  DrBackend **bodies;
  guint32 n_bodies;
  gboolean borrowed_bases;
  _Atomic guint64 *trips;
  /* Trip spans (DrIterTiming.trips): the log of the timed iteration in
   * progress (NULL: not timed) and that iteration's start, set by the
   * top-level backend's run_iteration and handed by each loop node to its
   * bodies with the top-level node it runs under and its depth (0: the
   * top-level backend; a body of a top-level loop 1). */
  DrTripLog *trip_log;
  gint64 trip_t0_ns;
  DrId trip_top;
  guint32 trip_depth;
  /* The collectives across the ranks of an MPI job, NULL in a single
   * process (backends/mpi_coll.h). */
  DrRankColls *rank_colls;
};

typedef struct {
  DrBackend *b;
  guint32 stream;
} Worker;

static gint64 now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(DrBackend *b, GError *error) {
  if (b->rank_colls != NULL) {
    /* This rank's other workers may be blocked in MPI, waiting for ranks
     * that wait for this one: nothing can finish; end the whole job. */
    g_printerr("dagrun: error: %s\ndagrun: rank %u of %u failed; ending every rank\n", error->message,
               dr__mpi_world()->rank, dr__mpi_world()->size);
    dr__mpi_abort_job(70);
  }
  pthread_mutex_lock(&b->mu);
  if (b->error == NULL)
    b->error = error;
  else
    g_error_free(error);
  b->abort = TRUE;
  pthread_cond_broadcast(&b->cond);
  pthread_mutex_unlock(&b->mu);
}

/* What a stream-ordered buffer holds right after its alloc and its free. */
#define POISON_ALLOC 0xA5
#define POISON_FREE 0xDD

static gboolean host_run_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error);

/* Element 0 of condition buffer `cond`: non-zero is true. */
static gboolean cond_true(const DrBackend *b, DrId cond) { return ((const gint32 *)b->bases[cond])[0] != 0; }

/* Hands b's trip log down to `body`, a body of b's loop node `id`. */
static void hand_down(DrBackend *b, DrId id, DrBackend *body) {
  body->trip_log = b->trip_log;
  body->trip_t0_ns = b->trip_t0_ns;
  body->trip_top = b->trip_depth == 0 ? id : b->trip_top;
  body->trip_depth = b->trip_depth + 1;
}

/* The body's trip `trip` of loop `l` (node `id` of b's graph): one run of
 * the body's plan, its span logged when the iteration is timed. */
static gboolean run_trip(DrBackend *b, DrId id, const DrLoop *l, DrBackend *body, guint64 trip, guint32 seed,
                         GError **error) {
  hand_down(b, id, body);
  DrId top = body->trip_top;
  gint64 t_start = now_ns();
  if (!host_run_iteration(body, seed, NULL, error)) return FALSE;
  if (b->trip_log != NULL)
    dr_trip_log_add(b->trip_log, l->id, top, b->trip_depth, trip, (double)(t_start - b->trip_t0_ns) / 1000.0,
                    (double)(now_ns() - b->trip_t0_ns) / 1000.0);
  return TRUE;
}

/* Runs loop node `id` of the outer iteration `iteration`: its body's trips
 * one after another, each a whole run of the body's plan on the body's
 * workers (the loop node's worker waits), the condition read after each
 * trip (while) or before the one (if). */
static gboolean run_loop(DrBackend *b, DrId id, guint32 iteration, GError **error) {
  const DrNode *n = dr_graph_node(b->graph, id);
  const DrLoop *l = dr_graph_node_loop(b->graph, id);
  DrBackend *body = b->bodies[2 * (n->loop - 1)], *other = b->bodies[2 * (n->loop - 1) + 1];
  guint64 trips = 0;
  /* Each trip seeds its delays apart from the others and from the outer
   * iteration's. */
#define TRIP_SEED() ((guint32)(iteration * 2654435761u + (guint32)trips * 40503u + 1u))
  switch (l->kind) {
    case DR_LOOP_REPEAT:
      for (; trips < l->count; trips++)
        if (!run_trip(b, id, l, body, trips, TRIP_SEED(), error)) return FALSE;
      break;
    case DR_LOOP_WHILE:
      do {
        if (!run_trip(b, id, l, body, trips, TRIP_SEED(), error)) return FALSE;
        trips++;
      } while (cond_true(b, l->cond));
      break;
    case DR_LOOP_IF:
      /* The else body is no trip (the report counts 0): it has no span. */
      if (cond_true(b, l->cond)) {
        if (!run_trip(b, id, l, body, 0, TRIP_SEED(), error)) return FALSE;
        trips = 1;
      } else if (other != NULL &&
                 (hand_down(b, id, other), !host_run_iteration(other, TRIP_SEED(), NULL, error))) {
        return FALSE;
      }
      break;
    case DR_N_LOOP_KINDS:
      break;
  }
#undef TRIP_SEED
  atomic_store(&b->trips[n->loop - 1], trips);
  return TRUE;
}

/* Runs one node's work. Returns FALSE with `error` set on failure. */
static gboolean execute(DrBackend *b, guint32 stream, DrId id, guint32 iteration, GError **error) {
  const DrGraph *g = b->graph;
  const DrNode *n = dr_graph_node(g, id);
  switch (n->op) {
    case DR_OP_KERNEL: {
      const DrKernelCall *call = &b->kcalls[id];
      char msg[257] = {0};
      if (call->def->host == NULL) {
        g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %u): kernel '%s' has no host twin",
                    n->id, stream, call->def->name);
        return FALSE;
      }
      if (call->def->host(&call->launch, msg) != 0) {
        g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %u): kernel '%s' (host twin): %s",
                    n->id, stream, call->def->name, msg[0] ? msg : "failed");
        return FALSE;
      }
      return TRUE;
    }
    case DR_OP_COPY: {
      const DrAccess *src, *dst;
      dr__copy_accesses(g, n, &src, &dst);
      guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
      memmove(dr__slice_ptr(g, b->bases, dst), dr__slice_ptr(g, b->bases, src), bytes);
      return TRUE;
    }
    case DR_OP_MEMSET: {
      const DrAccess *dst = dr__node_access(g, n, 0);
      guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
      memset(dr__slice_ptr(g, b->bases, dst), n->memset_value, bytes);
      return TRUE;
    }
    case DR_OP_HOST: {
      if (dr__host_call_run(&b->hcalls[id])) return TRUE;
      const char *symbol = g_array_index(g->callbacks, DrCallback, n->callback - 1).symbol;
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %u): host function%s%s%s failed: %s",
                  n->id, stream, symbol ? " '" : "", symbol ? symbol : "", symbol ? "'" : "",
                  b->hcalls[id].fn->err);
      return FALSE;
    }
    case DR_OP_ALLOC:
    case DR_OP_FREE: {
      guint64 bytes = dr_buffer_bytes(dr_graph_buffer(g, n->buffer));
      if (n->op == DR_OP_FREE) atomic_fetch_sub(&b->live_bytes, dr_pool_bytes(bytes));
      memset(b->bases[n->buffer], n->op == DR_OP_ALLOC ? POISON_ALLOC : POISON_FREE, bytes);
      if (n->op == DR_OP_ALLOC) {
        guint64 live = atomic_fetch_add(&b->live_bytes, dr_pool_bytes(bytes)) + dr_pool_bytes(bytes);
        guint64 high = atomic_load(&b->high_bytes);
        while (live > high && !atomic_compare_exchange_weak(&b->high_bytes, &high, live)) {
        }
      }
      return TRUE;
    }
    case DR_OP_ALLREDUCE:
    case DR_OP_BROADCAST:
    case DR_OP_REDUCE:
    case DR_OP_ALLGATHER:
    case DR_OP_REDUCESCATTER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      /* Across the ranks of an MPI job: backends/mpi_coll.c. */
      if (n->per_rank && b->rank_colls != NULL) return dr__rank_colls_run(b->rank_colls, id, b->bases, error);
      dr__collective_host_run(g, n, b->bases);
      return TRUE;
    case DR_OP_NOOP:
      return n->loop == 0 || run_loop(b, id, iteration, error);
    case DR_N_OPS:
      return TRUE;
  }
  return TRUE;
}

static void random_delay(DrBackend *b, DrId id, guint32 iteration) {
  if (b->opts.delay_node_id != NULL) {
    if (strcmp(dr_graph_node(b->graph, id)->id, b->opts.delay_node_id) == 0)
      g_usleep(b->opts.delay_max_us ? b->opts.delay_max_us : 200);
    return;
  }
  if (b->opts.delay_seed == 0) return;
  guint64 s = b->opts.delay_seed ^ ((guint64)id * G_GUINT64_CONSTANT(0x9E3779B97F4A7C15)) ^
              ((guint64)iteration << 32);
  guint64 z = dr__splitmix64(&s);
  guint32 max = b->opts.delay_max_us ? b->opts.delay_max_us : 200;
  gulong us = (gulong)(z % ((guint64)max + 1));
  if (us) g_usleep(us);
}

/* Runs this worker's stream for the current epoch. */
static void run_stream(DrBackend *b, guint32 stream, guint32 epoch, guint32 iteration) {
  const DrPlan *p = b->plan;
  for (guint32 k = b->stream_first[stream]; k < b->stream_first[stream + 1]; k++) {
    const DrPlanStep *step = dr_plan_step(p, b->stream_steps[k]);
    pthread_mutex_lock(&b->mu);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      DrId u = dr_plan_wait(p, w);
      /* The planned wait for edge u -> step->node: block until u completed
       * in this iteration. */
      while (b->node_epoch[u] < epoch && !b->abort) pthread_cond_wait(&b->cond, &b->mu);
    }
    gboolean abort = b->abort;
    pthread_mutex_unlock(&b->mu);
    if (abort) return;
    random_delay(b, step->node, iteration);
    gint64 t_start = now_ns();
    GError *error = NULL;
    if (!execute(b, stream, step->node, iteration, &error)) {
      fail(b, error);
      return;
    }
    gint64 t_end = now_ns();
    pthread_mutex_lock(&b->mu);
    if (b->timing) {
      b->timing->start_us[step->node] = (double)(t_start - b->t0_ns) / 1000.0;
      b->timing->end_us[step->node] = (double)(t_end - b->t0_ns) / 1000.0;
    }
    b->node_epoch[step->node] = epoch;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mu);
  }
}

static gpointer worker_main(gpointer data) {
  Worker *w = data;
  DrBackend *b = w->b;
  guint32 done_epoch = 0;
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (!b->quit && b->epoch == done_epoch) pthread_cond_wait(&b->cond, &b->mu);
    if (b->quit) break;
    done_epoch = b->epoch;
    guint32 iteration = b->iteration;
    pthread_mutex_unlock(&b->mu);
    run_stream(b, w->stream, done_epoch, iteration);
    pthread_mutex_lock(&b->mu);
    b->n_finished++;
    pthread_cond_broadcast(&b->cond);
  }
  pthread_mutex_unlock(&b->mu);
  g_free(w);
  return NULL;
}

static void host_close(DrBackend *b) {
  if (b == NULL) return;
  if (b->sync_ready) {
    pthread_mutex_lock(&b->mu);
    b->quit = TRUE;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mu);
    for (guint32 i = 0; i < b->n_threads; i++) g_thread_join(b->threads[i]);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cond);
  }
  dr__rank_colls_close(b->rank_colls);
  for (guint32 i = 0; i < b->n_bodies; i++) host_close(b->bodies[i]);
  g_free(b->bodies);
  g_free(b->trips);
  if (b->bases && !b->borrowed_bases)
    for (guint32 i = 0; i < b->n_buffers; i++)
      if (!b->external[i] && (b->plan->storage == NULL || b->plan->storage[i] == i))
        g_free(b->bases[i]); /* not the caller's, nor a reuse alias */
  g_free(b->bases);
  g_free(b->external);
  g_free(b->kcalls);
  dr__host_calls_free(b->hcalls, b->n_nodes);
  g_free(b->hcalls);
  g_free(b->stream_first);
  g_free(b->stream_steps);
  g_free(b->threads);
  g_free(b->node_epoch);
  g_clear_error(&b->error);
  g_free(b);
}

/* FALSE with DR_ERROR_UNAVAILABLE (exit 69) at the first kernel node whose
 * kernel has no host twin: a `kernels:` kernel (CUDA code only) or a
 * registered one without `host`. Checked before anything is allocated or
 * run, so such a pipeline fails up front rather than in its first
 * iteration. */
static gboolean host_twins_ok(const DrGraph *g, GError **error) {
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op != DR_OP_KERNEL) continue;
    const DrKernelDecl *decl = dr_graph_kernel(g, n->kernel);
    const DrKernelDef *def = decl->api_def;
    if (def == NULL && decl->origin == DR_KERNEL_BUILTIN) continue;
    if (def == NULL && decl->twin != NULL) continue; /* host_twin: {lib, fn} */
    if (def != NULL && def->host != NULL) continue;
    dr_set_error_at(error, DR_ERROR_UNAVAILABLE, n->loc,
                    "node '%s': kernel '%s' has no host twin, so the host backend cannot run it (%s); "
                    "run it with --backend=cuda",
                    n->id, decl->name,
                    def != NULL ? "it was registered without a host function"
                                : "a user kernel is CUDA code only unless it names a host_twin: {lib, fn}");
    return FALSE;
  }
  return TRUE;
}

static DrBackend *host_open(const DrPlan *plan, const DrRunOptions *opts, GError **error) {
  if (!host_twins_ok(plan->graph, error)) return NULL;
  DrBackend *b = g_new0(DrBackend, 1);
  b->plan = plan;
  b->graph = plan->graph;
  b->opts = *opts;
  b->n_nodes = dr_graph_n_nodes(b->graph);
  b->n_buffers = dr_graph_n_buffers(b->graph);
  b->n_streams = dr_plan_n_streams(plan);
  b->bases = g_new0(void *, MAX(b->n_buffers, 1));
  b->external = g_new0(gboolean, MAX(b->n_buffers, 1));
  b->kcalls = g_new0(DrKernelCall, MAX(b->n_nodes, 1));
  b->hcalls = g_new0(DrHostCall, MAX(b->n_nodes, 1));
  b->node_epoch = g_new0(guint32, MAX(b->n_nodes, 1));
  b->stream_first = g_new0(guint32, b->n_streams + 1);
  b->stream_steps = g_new0(guint32, MAX(b->n_nodes, 1));
  for (guint32 i = 0; i < plan->steps->len; i++) b->stream_first[dr_plan_step(plan, i)->stream + 1]++;
  for (guint32 s = 0; s < b->n_streams; s++) b->stream_first[s + 1] += b->stream_first[s];
  g_autofree guint32 *fill = g_memdup2(b->stream_first, sizeof(guint32) * (b->n_streams + 1));
  for (guint32 i = 0; i < plan->steps->len; i++) b->stream_steps[fill[dr_plan_step(plan, i)->stream]++] = i;

  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cond, NULL);
  b->sync_ready = TRUE;
  b->threads = g_new0(GThread *, MAX(b->n_streams, 1));
  for (guint32 s = 0; s < b->n_streams; s++) {
    Worker *w = g_new(Worker, 1);
    *w = (Worker){b, s};
    g_autofree char *name = g_strdup_printf("dr-stream-%u", s);
    b->threads[s] = g_thread_try_new(name, worker_main, w, error);
    if (b->threads[s] == NULL) {
      g_free(w);
      host_close(b);
      return NULL;
    }
    b->n_threads++;
  }
  if (plan->bodies != NULL) {
    b->n_bodies = plan->bodies->len;
    b->bodies = g_new0(DrBackend *, b->n_bodies);
    b->trips = g_new0(_Atomic guint64, MAX(dr_graph_n_loops(b->graph), 1));
    for (guint32 i = 0; i < b->n_bodies; i++) {
      const DrPlan *bp = g_ptr_array_index(plan->bodies, i);
      if (bp == NULL) continue;
      if ((b->bodies[i] = host_open(bp, opts, error)) == NULL) {
        host_close(b);
        return NULL;
      }
      b->bodies[i]->borrowed_bases = TRUE;
    }
  }
  return b;
}

/* Binds every kernel and host node to the buffers, and every body's (which
 * share them). */
static gboolean bind_calls(DrBackend *b, GError **error) {
  const DrGraph *g = b->graph;
  for (DrId i = 0; i < b->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op == DR_OP_KERNEL && !dr__kernel_call_bind(g, i, b->bases, &b->kcalls[i], error)) return FALSE;
    if (n->op == DR_OP_HOST) dr__host_call_bind(g, i, b->bases, b->opts.host_output, &b->hcalls[i]);
  }
  for (guint32 i = 0; i < b->n_bodies; i++) {
    DrBackend *body = b->bodies[i];
    if (body == NULL) continue;
    memcpy(body->bases, b->bases, sizeof(void *) * b->n_buffers);
    if (!bind_calls(body, error)) return FALSE;
  }
  return TRUE;
}

static gboolean host_setup(DrBackend *b, GError **error) {
  const DrGraph *g = b->graph;
  const DrId *storage = b->plan->storage;
  if (dr__rank_colls_needed(g) && (b->rank_colls = dr__rank_colls_open(g, error)) == NULL) return FALSE;
  for (DrId i = 0; i < b->n_buffers; i++) {
    const DrBuffer *buf = dr_graph_buffer(g, i);
    guint64 bytes = storage ? b->plan->storage_bytes[i] : dr_buffer_bytes(buf);
    if (storage && storage[i] != i) continue; /* in another's storage (reuse): below */
    if (b->bases[i] == NULL) {
      b->bases[i] = g_try_malloc0(MAX(bytes, 1));
      if (b->bases[i] == NULL) {
        g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                    "buffer '%s': out of host memory (%" G_GUINT64_FORMAT " bytes)", buf->name, bytes);
        return FALSE;
      }
    }
    if (buf->alloc_node == DR_NONE && !dr__buffer_init(g, i, b->bases[i], error)) return FALSE;
  }
  for (DrId i = 0; storage && i < b->n_buffers; i++) {
    if (storage[i] == i) continue;
    b->bases[i] = b->bases[storage[i]];
    if (!dr__buffer_init(g, i, b->bases[i], error)) return FALSE;
  }
  return bind_calls(b, error);
}

static gboolean host_args_changed(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                  GError **error) {
  const DrGraph *g = b->graph;
  *how = "rebound";
  /* Every node first into a scratch call, so that a failure keeps the
   * previous binding whole (a call points into itself: bind in place). */
  DrKernelCall probe;
  for (DrId i = 0; i < b->n_nodes; i++)
    if (dr_graph_node(g, i)->op == DR_OP_KERNEL && !dr__kernel_call_bind(g, i, b->bases, &probe, error))
      return FALSE;
  for (DrId i = 0; i < b->n_nodes; i++)
    if (dr_graph_node(g, i)->op == DR_OP_KERNEL &&
        !dr__kernel_call_bind(g, i, b->bases, &b->kcalls[i], error))
      return FALSE;
  return TRUE;
}

static gboolean host_run_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error) {
  pthread_mutex_lock(&b->mu);
  b->timing = timing;
  b->iteration = iteration;
  b->n_finished = 0;
  b->t0_ns = now_ns();
  if (b->trip_depth == 0) {
    b->trip_log = timing ? timing->trips : NULL;
    b->trip_t0_ns = b->t0_ns;
  }
  b->epoch++;
  pthread_cond_broadcast(&b->cond);
  while (b->n_finished < b->n_threads) pthread_cond_wait(&b->cond, &b->mu);
  gint64 t_end = now_ns();
  GError *failure = g_steal_pointer(&b->error);
  b->abort = FALSE;
  b->timing = NULL;
  pthread_mutex_unlock(&b->mu);
  if (failure) {
    g_propagate_error(error, failure);
    return FALSE;
  }
  if (timing) {
    double makespan = 0;
    for (DrId i = 0; i < b->n_nodes; i++) makespan = MAX(makespan, timing->end_us[i]);
    timing->makespan_us = b->n_nodes ? makespan : (double)(t_end - b->t0_ns) / 1000.0;
  }
  return TRUE;
}

static gboolean host_read_buffer(DrBackend *b, DrId buffer, void *dst, GError **error) {
  memcpy(dst, b->bases[buffer], dr_buffer_bytes(dr_graph_buffer(b->graph, buffer)));
  return TRUE;
}

/* External memory on the host backend: every buffer is host memory here,
 * `where: device` ones too, so any pointer the caller can read and write
 * will do (nothing can be checked). Iterations never outlive their
 * run_iteration, so a bind or a write between them needs no ordering. */
static gboolean host_bind_buffer(DrBackend *b, DrId buffer, void *ptr, const char **how, GError **error) {
  if (!dr_plan_storage_bindable(b->graph, b->plan->storage, buffer, error)) return FALSE;
  if (!b->external[buffer]) g_free(b->bases[buffer]);
  b->bases[buffer] = ptr;
  b->external[buffer] = TRUE;
  *how = "rebound";
  /* Binding cannot fail: the arguments were checked when bound at setup
   * and only a base changed. */
  return bind_calls(b, error);
}

static gboolean host_write_buffer(DrBackend *b, DrId buffer, guint64 offset, const void *data, guint64 bytes,
                                  GError **error) {
  memcpy((char *)b->bases[buffer] + offset, data, bytes);
  return TRUE;
}

/* The host backend has no CUDA stream to order against: `stream` must be
 * NULL, and the iteration has finished when the call returns. */
static gboolean host_run_on_stream(DrBackend *b, guint32 iteration, void *stream, GError **error) {
  if (stream != NULL) {
    g_set_error(
        error, DR_ERROR, DR_ERROR_UNAVAILABLE,
        "the host backend has no CUDA streams: run_on_stream takes a NULL stream there (the iteration "
        "then runs before the call returns)");
    return FALSE;
  }
  return host_run_iteration(b, iteration, NULL, error);
}

static const char *host_mode_name(const DrBackend *b) { return "streams"; }

static guint64 host_memory_high(const DrBackend *b) { return atomic_load(&((DrBackend *)b)->high_bytes); }

static guint64 host_loop_trips(const DrBackend *b, guint32 loop) { return atomic_load(&b->trips[loop]); }

const DrBackendOps dr__host_backend = {
    .name = "host",
    .open = host_open,
    .setup = host_setup,
    .run_iteration = host_run_iteration,
    .args_changed = host_args_changed,
    .read_buffer = host_read_buffer,
    .bind_buffer = host_bind_buffer,
    .write_buffer = host_write_buffer,
    .run_on_stream = host_run_on_stream,
    .close = host_close,
    .mode_name = host_mode_name,
    .memory_high = host_memory_high,
    .loop_trips = host_loop_trips,
};
