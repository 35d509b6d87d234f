/* issue.c: one iteration's issue, shared by both modes, and streams mode's
 * operations (issue the iteration again each time).
 *
 * One iteration, from the origin stream: the start stamp (stamps) and the
 * fork, which every plan stream that needs it waits on; then the steps in
 * the plan's interleaved order, each with its waits on other streams'
 * completion events, its timing events (events), its work, its stamp
 * (stamps: inline, or aside in graph mode) and its completion event when a
 * later step of another stream waits on it (collectives ready together:
 * one NCCL group, issue_group); then every stream joins origin.
 * The walk decides the order and which part does each piece: the waits and
 * events are streams.c's, the timing timing.c's, copies, memsets and
 * stream-ordered allocations memory.c's, launches launch.c's. With several
 * devices each step first selects its stream's device (streams.c), so a
 * cross-device edge is a record after the cudaSetDevice of the producer's
 * device and a wait after that of the consumer's. A capture
 * (graph.c) runs the same walk with its hooks. Eagerly, with more than one
 * issue thread (threads.c, b->threads), the steps go through
 * dr__cuda_threads_issue instead of the loop here: the fork and the joins
 * stay on this thread (the thread count is 1 with collectives, so NCCL
 * groups are always issued here). Eagerly, a run of copies on one stream
 * may go as one cudaMemcpyBatchAsync from its first copy's step (batch.h
 * says which and why no edge is lost). This file owns no CUDA handle. */
#include "backends/cuda/cuda.h"

/* Enqueues node `v`'s work on `st`: bound built-in `k` (DR_NONE: none), or
 * the work of its op. */
static gboolean issue_work(DrBackend *b, const DrCudaApi *api, DrId v, guint32 k, cudaStream_t st,
                           gboolean capturing, GError **error) {
  DrCudaSite site = dr__cuda_node_site(b->plan, v);
  if (G_LIKELY(k != DR_NONE))
    return dr__cuda_launch_kernel(&b->launch, api, b->memory.bases, &b->launch.kcalls[k], site, error);
  const DrNode *n = dr_graph_node(b->graph, v);
  switch (n->op) {
    case DR_OP_KERNEL: /* built-ins take the bound path */
      return dr__user_kernel_launch(&b->launch, b->graph, b->memory.bases, v, st, site, error);
    case DR_OP_COPY:
      return dr__cuda_memory_copy(&b->memory, v, st, capturing, site, error);
    case DR_OP_MEMSET:
      return dr__cuda_memory_set(&b->memory, n, st, site, error);
    case DR_OP_ALLOC:
      return dr__cuda_memory_alloc(&b->memory, n->buffer, st, site, error);
    case DR_OP_FREE:
      return dr__cuda_memory_free(&b->memory, n->buffer, st, site, error);
    case DR_OP_HOST:
      return dr__cuda_launch_host(&b->launch, v, st, site, error);
    case DR_OP_ALLREDUCE:
    case DR_OP_BROADCAST:
    case DR_OP_REDUCE:
    case DR_OP_ALLGATHER:
    case DR_OP_REDUCESCATTER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      return dr__cuda_nccl_issue(&b->nccl, b->graph, v, b->memory.bases, st, error);
    case DR_OP_NOOP: /* a loop's trips (loops.c), or nothing */
      return n->loop == 0 || dr__cuda_loop_issue(&b->loops, &b->memory, api, b->graph, v, st, error);
    case DR_N_OPS:
      return TRUE;
  }
  return TRUE;
}

/* One walk: what stays the same for every step, read once. */
typedef struct {
  DrBackend *b;
  const DrCudaApi *api;
  const DrCudaCapture *cap;     /* NULL: eager */
  gboolean events;              /* timing events around each node */
  cudaEvent_t *t_start, *t_end; /* this slot's, when events */
  DrCudaBatch *batch;           /* eager copy batches (batch.h), NULL: none */
} Walk;

/* Node v's work with its timing events around it (events), and what the
 * capture makes of it. A failed work call goes through the capture's
 * `after` (which blames the node when the work broke the capture). */
static gboolean issue_timed(const Walk *w, DrId v, guint32 k, cudaStream_t st, GError **error) {
  DrBackend *b = w->b;
  /* Capturing: which graph node a built-in's launch, a copy or a memset
   * makes (per-node argument and external-pointer updates, graph.c). */
  gsize n_before = G_MAXSIZE;
  DrOp op = dr_graph_node(b->graph, v)->op;
  gboolean mapped = op == DR_OP_KERNEL || op == DR_OP_COPY || op == DR_OP_MEMSET; /* user kernels too */
  g_autofree cudaGraphNode_t *before = w->cap && mapped ? w->cap->before(b, st, &n_before) : NULL;
  gboolean capturing = w->cap != NULL;
  if (w->events &&
      !dr__cuda_timing_event(w->t_start[v], st, capturing, dr__cuda_node_site(b->plan, v), error))
    return FALSE;
  if (!issue_work(b, w->api, v, k, st, w->cap != NULL, error))
    return capturing && w->cap->after(b, v, st, FALSE, NULL, G_MAXSIZE, error);
  if (w->events && !dr__cuda_timing_event(w->t_end[v], st, capturing, dr__cuda_node_site(b->plan, v), error))
    return FALSE;
  return !capturing || w->cap->after(b, v, st, TRUE, before, n_before, error);
}

/* Step `step` of a copy in a batch (batch.h): at the head, its waits,
 * then every copy of the batch and their completion events (only the last
 * may have one); at a member, nothing: its head issued it. No timing (a
 * batch forms only when nodes are not timed) and never in a capture. */
static gboolean issue_batched(const Walk *w, const DrPlanStep *step, const DrId *copies, guint32 n,
                              GError **error) {
  DrBackend *b = w->b;
  if (copies[0] != step->node) return TRUE;
  cudaStream_t st = b->streams.stream[step->stream];
  if (!dr__cuda_streams_use(&b->streams, step->stream, error) ||
      !dr__cuda_streams_wait(&b->streams, w->api, step, error) ||
      !dr__cuda_batch_issue(w->batch, &b->memory, w->api, step->node, st, error))
    return FALSE;
  for (guint32 j = 0; j < n; j++)
    if (!dr__cuda_streams_done(&b->streams, w->api, copies[j], st, error)) return FALSE;
  return TRUE;
}

/* Issues step `step`: its waits, its work, its stamp, its completion
 * event. */
static gboolean issue_step_work(const Walk *w, const DrPlanStep *step, GError **error) {
  DrBackend *b = w->b;
  DrId v = step->node;
  if (G_UNLIKELY(w->batch != NULL)) {
    guint32 n;
    const DrId *copies = dr__cuda_batch_of(w->batch, v, &n);
    if (copies != NULL) return issue_batched(w, step, copies, n, error);
  }
  cudaStream_t st = b->streams.stream[step->stream];
  /* Several devices: the step's calls are made with its stream's device
   * selected (nothing with one). */
  if (!dr__cuda_streams_use(&b->streams, step->stream, error) ||
      !dr__cuda_streams_wait(&b->streams, w->api, step, error))
    return FALSE;
  guint32 k = b->launch.node_kcall[v];
  if (G_LIKELY(k != DR_NONE && !w->events && w->cap == NULL)) {
    /* The hot path: a bound built-in, nothing else around it. */
    if (!issue_work(b, w->api, v, k, st, w->cap != NULL, error)) return FALSE;
  } else if (!issue_timed(w, v, k, st, error)) {
    return FALSE;
  }
  gboolean self_stamped = k != DR_NONE && b->launch.kcalls[k].call.launch.stamp != NULL;
  return dr__cuda_timing_node_stamp(&b->timing, v, step->stream, st, self_stamped, error) &&
         dr__cuda_streams_done(&b->streams, w->api, v, st, error);
}

/* issue_step_work inside the node's NVTX range (profile.h: nothing when no
 * tool is attached). */
static gboolean issue_step(const Walk *w, const DrPlanStep *step, GError **error) {
  const DrCudaProfile *p = &w->b->profile;
  dr__cuda_profile_node_begin(p, step->node);
  gboolean ok = issue_step_work(w, step, error);
  dr__cuda_profile_node_end(p);
  return ok;
}

/* Issues the `n` steps of an NCCL group (nccl.h) from `steps`: every
 * step's waits and start events, then the collectives between
 * ncclGroupStart and ncclGroupEnd (where NCCL launches them), then every
 * step's end event, stamp and completion event, so that nothing recorded
 * after a step can run before its collective. A step's waits also hold
 * back the group's earlier steps: no deadlock, as no step of a group
 * reaches another. */
static gboolean issue_group(const Walk *w, const DrPlanStep *steps, guint32 n, GError **error) {
  DrBackend *b = w->b;
  cudaStream_t st = b->streams.stream[steps[0].stream];
  gboolean capturing = w->cap != NULL;
  const char *first = dr_graph_node(b->graph, steps[0].node)->id;
  /* Several devices: the group's calls with its stream's device selected. */
  if (!dr__cuda_streams_use(&b->streams, steps[0].stream, error)) return FALSE;
  for (guint32 j = 0; j < n; j++) {
    DrId v = steps[j].node;
    if (!dr__cuda_streams_wait(&b->streams, w->api, &steps[j], error) ||
        (w->events &&
         !dr__cuda_timing_event(w->t_start[v], st, capturing, dr__cuda_node_site(b->plan, v), error)))
      return FALSE;
  }
  if (!dr__cuda_nccl_group_start(&b->nccl, first, error)) return FALSE;
  gboolean ok = TRUE;
  for (guint32 j = 0; j < n && ok; j++)
    ok = dr__cuda_nccl_issue(&b->nccl, b->graph, steps[j].node, b->memory.bases, st, error);
  if (!dr__cuda_nccl_group_end(&b->nccl, first, ok, error))
    return capturing && w->cap->after(b, steps[0].node, st, FALSE, NULL, G_MAXSIZE, error);
  for (guint32 j = 0; j < n; j++) {
    DrId v = steps[j].node;
    if ((w->events &&
         !dr__cuda_timing_event(w->t_end[v], st, capturing, dr__cuda_node_site(b->plan, v), error)) ||
        (capturing && !w->cap->after(b, v, st, TRUE, NULL, G_MAXSIZE, error)) ||
        !dr__cuda_timing_node_stamp(&b->timing, v, steps[j].stream, st, FALSE, error) ||
        !dr__cuda_streams_done(&b->streams, w->api, v, st, error))
      return FALSE;
  }
  return TRUE;
}

/* issue_step as a DrCudaStepFn (threads.c). */
static gboolean issue_step_fn(const void *walk, const DrPlanStep *step, GError **error) {
  return issue_step(walk, step, error);
}

gboolean dr__cuda_issue_iteration(DrBackend *b, const DrCudaCapture *capture, GError **error) {
  const DrCudaStreams *s = &b->streams;
  const DrCudaTiming *t = &b->timing;
  gsize slot = (gsize)b->slot * b->n_nodes;
  Walk w = {b, dr_cuda_api(), capture, t->mode == DR_TIMING_EVENTS, NULL, NULL, capture ? NULL : b->batch};
  if (w.events) {
    w.t_start = t->t_start + slot;
    w.t_end = t->t_end + slot;
  }
  if (!dr__cuda_timing_start_stamp(t, s->origin, error) || !dr__cuda_streams_fork(s, error)) return FALSE;
  if (capture == NULL && b->threads != NULL) {
    if (!dr__cuda_threads_issue(b->threads, issue_step_fn, &w, error)) return FALSE;
  } else {
    const DrPlanStep *steps = (const DrPlanStep *)(void *)b->plan->steps->data;
    for (guint32 i = 0, n_steps = b->plan->steps->len; i < n_steps; i++) {
      guint32 group = dr__cuda_nccl_group_len(&b->nccl, i); /* collectives issued together */
      if (G_UNLIKELY(group > 0)) {
        if (!issue_group(&w, &steps[i], group, error)) return FALSE;
        i += group - 1;
      } else if (!issue_step(&w, &steps[i], error)) {
        return FALSE;
      }
    }
  }
  for (guint32 k = 0; k < s->n_streams; k++)
    if (!dr__cuda_streams_join(s, k, error) || !dr__cuda_timing_join(t, k, s->origin, error)) return FALSE;
  return TRUE;
}

gboolean dr__cuda_bind(DrBackend *b, GError **error) {
  const DrCudaTiming *t = &b->timing;
  DrCudaBindHow how = {
      .stamps = b->mode->kernel_stamps && t->mode == DR_TIMING_STAMPS ? t->stamps : NULL,
      .early = b->mode->early_launch && t->mode != DR_TIMING_EVENTS,
  };
  return dr__cuda_launch_bind(&b->launch, &b->streams, &b->memory, &how, error);
}

/* ---- streams mode ------------------------------------------------------- */

/* A worker's first act: the run's device is current on its thread too
 * (the runtime's current device is per host thread). */
static gboolean thread_init(gpointer data, GError **error) {
  const DrBackend *b = data;
  return DR_CUDA(DR_SITE_SETUP("an issue thread"), cudaSetDevice, b->streams.devices[0].ordinal);
}

/* Streams mode's setup end: bind, start the issue threads the plan and
 * run.issue_threads ask for (threads.h), and form the copy batches
 * (batch.h: not when nodes are timed), once. */
static gboolean streams_prepare(DrBackend *b, GError **error) {
  if (!dr__cuda_bind(b, error)) return FALSE;
  guint32 n = dr__cuda_threads_count(b->plan, b->opts.issue_threads);
  if (b->threads == NULL && n > 1) b->threads = dr__cuda_threads_new(b->plan, n, thread_init, b);
  if (b->batch == NULL) b->batch = dr__cuda_batch_new(b->plan, b->timing.mode != DR_TIMING_OFF);
  return TRUE;
}

static gboolean streams_issue(DrBackend *b, GError **error) {
  return dr__cuda_issue_iteration(b, NULL, error);
}

static gboolean streams_args_changed(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                     GError **error) {
  /* User kernels read their arguments at each launch; built-ins are bound
   * once, so bind them again (only `nodes` when known), after checking
   * every one in a scratch call (a failure keeps the previous binding
   * whole). */
  *how = "rebound";
  if (nodes != NULL) return dr__cuda_launch_rebind(&b->launch, &b->memory, nodes, n, error);
  return dr__cuda_launch_probe(&b->launch, &b->memory, error) && dr__cuda_bind(b, error);
}

static gboolean streams_buffer_moved(DrBackend *b, DrId buffer, const char **how, GError **error) {
  /* Copies and memsets read the bases at each issue; bound built-ins and
   * host calls hold pointers: bind them again. */
  *how = "rebound";
  dr__cuda_launch_rebind_hosts(&b->launch, &b->memory);
  return dr__cuda_bind(b, error);
}

const DrCudaMode dr__cuda_streams_mode = {
    .name = "streams",
    .depth = DR_CUDA_MAX_IN_FLIGHT,
    .keep_fork_join = FALSE,
    .stamps_by_default = FALSE,
    .stamps_aside = FALSE,
    .kernel_stamps = TRUE,
    .early_launch = TRUE,
    .prepare = streams_prepare,
    .issue = streams_issue,
    .args_changed = streams_args_changed,
    .buffer_moved = streams_buffer_moved,
};
