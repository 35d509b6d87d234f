/* cuda.c: the CUDA backend, eager streams: the plan's streams become CUDA
 * streams (non-blocking, with priorities), its waits become events, and
 * every node is issued in the plan's interleaved order. Graph mode shares
 * this file's open/setup/issue and only replaces how an iteration is
 * launched (cuda_graph.c).
 *
 * One iteration, from the origin stream: record iter_start (timing) and
 * the fork event; every plan stream waits on the fork; steps issue in plan
 * order (wait events of other streams' nodes, timing event, the work, the
 * completion event when a later step waits on it); every stream records its
 * join event and origin waits on all of them; record iter_end and wait for
 * it on the host. The makespan is iter_end - iter_start. Node times
 * (opts.node_timing): with stamps (the default) a stamp kernel writes the
 * iteration's start on origin before the fork and each node's end on its
 * stream right after it, and the stamp array is copied back once after
 * iter_end; a node's start is when it became ready (run.h,
 * DR_TIMING_LIST). In graph mode each stamp hangs off its node on a side
 * branch (a side stream per plan stream while capturing) instead of
 * sitting between the node and its successor, so stamping adds no kernel
 * to the graph's critical path; DAGRUN_STAMPS_INLINE=1 keeps them inline,
 * to measure the two placements against each other. With events, two
 * timing events around each node are read against iter_start.
 *
 * Memory: whole-run device buffers come from cudaMalloc, host buffers from
 * cudaMallocHost (pinned), both filled with their init contents before the
 * first iteration; alloc/free nodes are cudaMallocAsync/cudaFreeAsync on
 * the node's stream from the device's default pool, whose release threshold
 * is the pipeline's memory.release_threshold (default: keep everything, so
 * steady-state allocations cost ~1.5 µs, see GPU-NOTES.md). Every CUDA call
 * goes through DR_CUDA (cuda_api.h). This file does not plan and does not
 * compile user kernels (user_kernels.c does). */
#include <math.h>
#include <string.h>

#include "backends/cuda_state.h"

gboolean dr__cuda_available(char **why) {
  int count = 0;
  cudaError_t rc = dr_cuda_api()->cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    (void)dr_cuda_api()->cudaGetLastError();
    *why = g_strdup_printf("cudaGetDeviceCount: %s", dr_cuda_api()->cudaGetErrorName(rc));
    return FALSE;
  }
  if (count < 1) {
    *why = g_strdup("cudaGetDeviceCount: 0 devices");
    return FALSE;
  }
  return TRUE;
}

/* ---- teardown ----------------------------------------------------------- */

static void destroy_events(cudaEvent_t *events, guint32 n) {
  if (events == NULL) return;
  for (guint32 i = 0; i < n; i++)
    if (events[i]) (void)dr_cuda_api()->cudaEventDestroy(events[i]);
  g_free(events);
}

static void cuda_close(DrBackend *b) {
  if (b == NULL) return;
  const DrCudaApi *api = dr_cuda_api();
  /* Work may still be in flight after a failure (host functions read
   * b->hcalls): let it drain before anything is released. After a clean
   * run nothing is (the last iteration drained the device, checked), so
   * close makes only releases and has no error to lose. */
  if (!b->idle) (void)api->cudaDeviceSynchronize();
  dr__cuda_graph_release(b);
  if (b->blas)
    for (guint32 s = 0; s < b->n_streams; s++) dr_kblas_free(b->blas[s]);
  /* After the handles that use them. */
  if (b->blas_ws)
    for (guint32 s = 0; s < b->n_streams; s++)
      if (b->blas_ws[s]) (void)api->cudaFree(b->blas_ws[s]);
  if (b->scratch)
    for (guint32 i = 0; i < b->n_nodes; i++)
      if (b->scratch[i]) (void)api->cudaFree(b->scratch[i]);
  dr__user_kernels_release(b);
  if (b->bases) {
    gboolean freed_async = FALSE;
    for (guint32 i = 0; i < b->n_buffers; i++) {
      if (b->bases[i] == NULL) continue;
      freed_async |= b->async_live[i];
      if (b->async_live[i])
        (void)api->cudaFreeAsync(b->bases[i], b->origin);
      else if (b->pinned[i])
        (void)api->cudaFreeHost(b->bases[i]);
      else
        (void)api->cudaFree(b->bases[i]);
    }
    /* Only a failed iteration leaves stream-ordered memory live. */
    if (freed_async) (void)api->cudaDeviceSynchronize();
  }
  destroy_events(b->node_done, b->n_nodes);
  destroy_events(b->t_start, b->depth * b->n_nodes);
  destroy_events(b->t_end, b->depth * b->n_nodes);
  if (b->stamps) (void)api->cudaFree(b->stamps);
  if (b->stamps_host) (void)api->cudaFreeHost(b->stamps_host);
  g_free(b->prev_on_stream);
  destroy_events(b->stamp_ready, b->n_nodes);
  destroy_events(b->stamp_join, b->n_streams);
  if (b->stamp_streams)
    for (guint32 s = 0; s < b->n_streams; s++)
      if (b->stamp_streams[s]) (void)api->cudaStreamDestroy(b->stamp_streams[s]);
  g_free(b->stamp_streams);
  destroy_events(b->join, b->n_streams);
  g_free(b->needs_fork);
  g_free(b->needs_join);
  if (b->fork) (void)api->cudaEventDestroy(b->fork);
  for (guint32 k = 0; k < DR_CUDA_MAX_IN_FLIGHT; k++) {
    if (b->iter_start[k]) (void)api->cudaEventDestroy(b->iter_start[k]);
    if (b->iter_end[k]) (void)api->cudaEventDestroy(b->iter_end[k]);
    if (b->iter_done[k]) (void)api->cudaEventDestroy(b->iter_done[k]);
  }
  if (b->streams)
    for (guint32 s = 0; s < b->n_streams; s++)
      if (b->streams[s]) (void)api->cudaStreamDestroy(b->streams[s]);
  if (b->origin) (void)api->cudaStreamDestroy(b->origin);
  (void)api->cudaGetLastError();
  g_free(b->streams);
  g_free(b->bases);
  g_free(b->pinned);
  g_free(b->async_live);
  g_free(b->hcalls);
  g_free(b->scratch);
  g_free(b->blas);
  g_free(b->blas_ws);
  g_free(b->kcalls);
  g_free(b->node_kcall);
  g_free(b->patches);
  g_free(b);
}

/* ---- open: streams and events ----------------------------------------- */

static int map_priority(DrPriority p, int least, int greatest) {
  switch (p) {
    case DR_PRIORITY_HIGH:
      return greatest;
    case DR_PRIORITY_LOW:
      return least;
    default:
      return (least + greatest) / 2;
  }
}

/* The built-in behind kernel node `id`, or NULL (user kernels fail later,
 * at binding, with the message dr__kernel_call_bind gives). */
static const DrKernelDef *node_kernel_def(const DrGraph *g, DrId id) {
  const DrKernelDecl *decl = dr_graph_kernel(g, dr_graph_node(g, id)->kernel);
  if (decl->api_def != NULL) return decl->api_def; /* registered through the C API */
  if (decl->origin != DR_KERNEL_BUILTIN || decl->builtin_index >= (guint32)dr_kernel_registry_len)
    return NULL;
  return &dr_kernel_registry[decl->builtin_index];
}

/* Node `id` is a kernel whose launch writes its own end stamp
 * (DR_KFLAG_STAMPS): eager stamps timing needs no stamp launch after it. */
static gboolean self_stamping(const DrGraph *g, DrId id) {
  if (dr_graph_node(g, id)->op != DR_OP_KERNEL) return FALSE;
  const DrKernelDef *def = node_kernel_def(g, id);
  return def != NULL && (def->flags & DR_KFLAG_STAMPS) != 0;
}

/* --timing=auto: stamps in a graph (a stamp node costs ~0.1 µs there).
 * Eagerly, a self-stamping built-in costs no extra call while events cost
 * ~1.7 µs of host time per node and a stamp launch ~4 µs per other node
 * (BENCHMARKS.md §4): stamps unless more than 2 nodes in 5 need a stamp
 * launch. */
static DrTimingMode auto_timing(const DrGraph *g, gboolean graph_mode) {
  if (graph_mode) return DR_TIMING_STAMPS;
  guint32 n = dr_graph_n_nodes(g), launches = 0;
  for (DrId i = 0; i < n; i++) launches += !self_stamping(g, i);
  return (guint64)launches * 5 <= (guint64)n * 2 ? DR_TIMING_STAMPS : DR_TIMING_EVENTS;
}

static DrBackend *cuda_open(const DrPlan *plan, const DrRunOptions *opts, GError **error) {
  const DrGraph *g = plan->graph;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->device >= 0 && n->device != opts->device) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                  "node '%s': device %d differs from the run's device %d; multi-device pipelines are not "
                  "supported by this backend",
                  n->id, n->device, opts->device);
      return NULL;
    }
  }
  DrBackend *b = g_new0(DrBackend, 1);
  b->plan = plan;
  b->graph = g;
  b->opts = *opts;
  b->graph_mode = opts->mode == DR_MODE_GRAPH;
  b->uncapturable = DR_NONE;
  b->n_nodes = dr_graph_n_nodes(g);
  b->n_buffers = dr_graph_n_buffers(g);
  b->n_streams = dr_plan_n_streams(plan);
  b->streams = g_new0(cudaStream_t, MAX(b->n_streams, 1));
  b->join = g_new0(cudaEvent_t, MAX(b->n_streams, 1));
  b->needs_fork = g_new(gboolean, MAX(b->n_streams, 1));
  b->needs_join = g_new(gboolean, MAX(b->n_streams, 1));
  b->prev_on_stream = g_new(DrId, MAX(b->n_nodes, 1));
  {
    /* Plan order: each node's predecessor on its stream; a stream's first
     * step decides its fork, its last its join (needs_event: a later node
     * on another stream waits on it). A capture keeps every fork and
     * join. */
    g_autofree DrId *last = g_new(DrId, MAX(b->n_streams, 1));
    for (guint32 s = 0; s < b->n_streams; s++) last[s] = DR_NONE;
    for (guint32 i = 0; i < plan->steps->len; i++) {
      const DrPlanStep *step = dr_plan_step(plan, i);
      if (last[step->stream] == DR_NONE) b->needs_fork[step->stream] = b->graph_mode || step->wait_count == 0;
      b->prev_on_stream[step->node] = last[step->stream];
      last[step->stream] = step->node;
    }
    for (guint32 s = 0; s < b->n_streams; s++) {
      if (last[s] == DR_NONE) b->needs_fork[s] = TRUE;
      b->needs_join[s] = b->graph_mode || last[s] == DR_NONE || !plan->needs_event[last[s]];
    }
  }
  b->node_done = g_new0(cudaEvent_t, MAX(b->n_nodes, 1));
  b->bases = g_new0(void *, MAX(b->n_buffers, 1));
  b->pinned = g_new0(gboolean, MAX(b->n_buffers, 1));
  b->async_live = g_new0(gboolean, MAX(b->n_buffers, 1));
  b->hcalls = g_new0(DrHostCall, MAX(b->n_nodes, 1));
  b->scratch = g_new0(void *, MAX(b->n_nodes, 1));
  b->blas = g_new0(DrKBlas *, MAX(b->n_streams, 1));
  b->blas_ws = g_new0(void *, MAX(b->n_streams, 1));
  b->node_kcall = g_new(guint32, MAX(b->n_nodes, 1));
  for (guint32 i = 0; i < b->n_nodes; i++) b->node_kcall[i] = DR_NONE;
  b->timing = opts->node_timing;
  if (b->timing == DR_TIMING_AUTO) b->timing = auto_timing(g, b->graph_mode);
  if (b->timing == DR_TIMING_STAMPS && dr_cuda_api()->stamp_launch == NULL) b->timing = DR_TIMING_EVENTS;
  /* Graph mode keeps one iteration in flight. Measured on the H200 with
   * two: launching the executable again while its previous launch ran made
   * replays slower, not faster (32 parallel 100 us spins: 236 us against
   * 129; the width-546 layered DAG: a median of 17.3 ms against 1.46 ms),
   * as if the second launch waited on the host for the first. A graph
   * launch costs the host a few µs, so there is little to hide anyway. */
  b->depth = b->graph_mode ? 1 : DR_CUDA_MAX_IN_FLIGHT;
  if (b->timing == DR_TIMING_EVENTS) {
    b->t_start = g_new0(cudaEvent_t, MAX(b->depth * b->n_nodes, 1));
    b->t_end = g_new0(cudaEvent_t, MAX(b->depth * b->n_nodes, 1));
  }
  if (b->timing == DR_TIMING_STAMPS) {
    const char *inline_env = g_getenv("DAGRUN_STAMPS_INLINE");
    b->stamp_aside = b->graph_mode && !(inline_env && strcmp(inline_env, "1") == 0);
  }
  if (b->stamp_aside) {
    b->stamp_streams = g_new0(cudaStream_t, MAX(b->n_streams, 1));
    b->stamp_join = g_new0(cudaEvent_t, MAX(b->n_streams, 1));
    b->stamp_ready = g_new0(cudaEvent_t, MAX(b->n_nodes, 1));
  }

  /* CUDA_DEVICE_MAX_CONNECTIONS (the hardware queues) is the process's
   * policy, set before its first CUDA call: the CLI does (cli.c), library
   * users may (run.h). Library code must not setenv: not thread-safe. */
  g_autofree char *dev = g_strdup_printf("device %d", opts->device);
  DrCudaSite site = DR_SITE_SETUP(dev);
  int least = 0, greatest = 0;
  if (!DR_CUDA(site, cudaSetDevice, opts->device) ||
      !DR_CUDA(site, cudaDeviceGetStreamPriorityRange, &least, &greatest) ||
      !DR_CUDA(site, cudaStreamCreateWithPriority, &b->origin, cudaStreamNonBlocking,
               map_priority(DR_PRIORITY_NORMAL, least, greatest)))
    goto fail;
  for (guint32 s = 0; s < b->n_streams; s++) {
    DrPriority p = g_array_index(plan->streams, DrStream, s).priority;
    DrCudaSite ss = {NULL, s, NULL};
    if (!DR_CUDA(ss, cudaStreamCreateWithPriority, &b->streams[s], cudaStreamNonBlocking,
                 map_priority(p, least, greatest)) ||
        !DR_CUDA(ss, cudaEventCreateWithFlags, &b->join[s], cudaEventDisableTiming))
      goto fail;
  }
  if (!DR_CUDA(site, cudaEventCreateWithFlags, &b->fork, cudaEventDisableTiming)) goto fail;
  for (guint32 k = 0; k < b->depth; k++)
    if (!DR_CUDA(site, cudaEventCreateWithFlags, &b->iter_start[k], cudaEventDefault) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &b->iter_end[k], cudaEventDefault) ||
        !DR_CUDA(site, cudaEventCreateWithFlags, &b->iter_done[k], cudaEventDisableTiming))
      goto fail;
  for (DrId i = 0; i < b->n_nodes; i++) {
    DrCudaSite ns = DR_SITE_NODE(dr_graph_node(g, i)->id, plan->node_stream[i]);
    if (plan->needs_event[i] &&
        !DR_CUDA(ns, cudaEventCreateWithFlags, &b->node_done[i], cudaEventDisableTiming))
      goto fail;
    for (guint32 k = 0; b->timing == DR_TIMING_EVENTS && k < b->depth; k++) {
      gsize e = (gsize)k * b->n_nodes + i;
      if (!DR_CUDA(ns, cudaEventCreateWithFlags, &b->t_start[e], cudaEventDefault) ||
          !DR_CUDA(ns, cudaEventCreateWithFlags, &b->t_end[e], cudaEventDefault))
        goto fail;
    }
  }
  if (b->timing == DR_TIMING_STAMPS) {
    gsize bytes = sizeof(unsigned long long) * (b->n_nodes + 1);
    DrCudaSite ts = DR_SITE_SETUP("timing stamps");
    /* Zeroed: self-stamping kernels raise their slot (atomicMax), which
     * reads it first (compute-sanitizer's initcheck flagged the reads). */
    if (!DR_CUDA(ts, cudaMalloc, (void **)&b->stamps, bytes) ||
        !DR_CUDA(ts, cudaMemsetAsync, b->stamps, 0, bytes, b->origin) ||
        !DR_CUDA(ts, cudaStreamSynchronize, b->origin) ||
        !DR_CUDA(ts, cudaMallocHost, (void **)&b->stamps_host, bytes * b->depth))
      goto fail;
  }
  for (guint32 s = 0; b->stamp_aside && s < b->n_streams; s++) {
    g_autofree char *what = g_strdup_printf("the timing stamps' side stream of stream %u", s);
    DrCudaSite ss = DR_SITE_SETUP(what);
    if (!DR_CUDA(ss, cudaStreamCreateWithPriority, &b->stamp_streams[s], cudaStreamNonBlocking,
                 map_priority(g_array_index(plan->streams, DrStream, s).priority, least, greatest)) ||
        !DR_CUDA(ss, cudaEventCreateWithFlags, &b->stamp_join[s], cudaEventDisableTiming))
      goto fail;
  }
  for (DrId i = 0; b->stamp_aside && i < b->n_nodes; i++) {
    DrCudaSite ns = DR_SITE_NODE(dr_graph_node(g, i)->id, plan->node_stream[i]);
    if (!DR_CUDA(ns, cudaEventCreateWithFlags, &b->stamp_ready[i], cudaEventDisableTiming)) goto fail;
  }
  return b;
fail:
  cuda_close(b);
  return NULL;
}

/* ---- setup: buffers ----------------------------------------------------- */

/* Per-node scratch and the node's stream's cuBLAS context, made before the
 * timed region and before any capture. */
static gboolean kernel_resources(DrBackend *b, DrId id, GError **error) {
  const DrKernelDef *def = node_kernel_def(b->graph, id);
  if (def == NULL) return TRUE;
  guint32 s = b->plan->node_stream[id];
  DrCudaSite site = DR_SITE_NODE(dr_graph_node(b->graph, id)->id, s);
  if (def->scratch_bytes && !DR_CUDA(site, cudaMalloc, &b->scratch[id], def->scratch_bytes)) return FALSE;
  if ((def->flags & DR_KFLAG_BLAS) && b->blas[s] == NULL) {
    if (b->blas_ws[s] == NULL && !DR_CUDA(site, cudaMalloc, &b->blas_ws[s], DR_KBLAS_DEFAULT_WORKSPACE))
      return FALSE;
    char err[256] = {0};
    b->blas[s] = dr_kblas_new_with_workspace(b->blas_ws[s], DR_KBLAS_DEFAULT_WORKSPACE, err);
    if (b->blas[s] == NULL || dr_kblas_bind(b->blas[s], b->streams[s], err) != 0) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s' (stream %u): cuBLAS: %s",
                  dr_graph_node(b->graph, id)->id, s, err);
      return FALSE;
    }
  }
  return TRUE;
}

/* Eagerly, which built-in kernel nodes may launch early with programmatic
 * dependent launch (DrKLaunch.pdl): those whose stream's previous
 * operation in the iteration is another built-in's kernel, with nothing in
 * between: the node waits on no other stream, the previous node records no
 * completion event and is not a cuBLAS call, and there are no timing
 * events. The launch latency then overlaps the previous kernel (on the
 * H200 a queued eager launch starts ~3 µs after its predecessor ends,
 * against ~0.8 µs in a graph). NULL when none may: graph mode, events
 * timing, or DAGRUN_PDL=0 in the environment (for A/B measurements). */
static gboolean *early_launches(const DrBackend *b) {
  const char *env = g_getenv("DAGRUN_PDL");
  if (b->graph_mode || b->timing == DR_TIMING_EVENTS || (env && strcmp(env, "0") == 0)) return NULL;
  const DrPlan *p = b->plan;
  const DrGraph *g = b->graph;
  gboolean *ok = g_new0(gboolean, MAX(b->n_nodes, 1));
  for (guint32 i = 0; i < p->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(p, i);
    DrId v = step->node, u = b->prev_on_stream[v];
    if (u == DR_NONE || step->wait_count > 0 || p->needs_event[u]) continue;
    const DrKernelDef *du = self_stamping(g, u) ? node_kernel_def(g, u) : NULL;
    const DrKernelDef *dv = dr_graph_node(g, v)->op == DR_OP_KERNEL ? node_kernel_def(g, v) : NULL;
    /* Built-ins end with their own kernel (self-stamping ones: all but
     * the cuBLAS calls); v must be a built-in too (it waits first). */
    ok[v] = du != NULL && dv != NULL && dr_graph_kernel(g, dr_graph_node(g, v)->kernel)->api_def == NULL &&
            dr_graph_kernel(g, dr_graph_node(g, u)->kernel)->api_def == NULL;
  }
  return ok;
}

/* dr__cuda_bind_kernels: binds every built-in kernel node's launch once
 * (dr__kernel_call_bind
 * against `bases`, whose whole-run pointers are fixed from setup on), with
 * its stream, cuBLAS context and scratch, and records each pointer
 * argument into a stream-ordered buffer as a patch, refreshed from `bases`
 * before every launch. Replaces an earlier binding. Fails like
 * dr__kernel_call_bind (DR_ERROR_RUNTIME naming the node). */
gboolean dr__cuda_bind_kernels(DrBackend *b, GError **error) {
  const DrGraph *g = b->graph;
  g_clear_pointer(&b->kcalls, g_free);
  g_clear_pointer(&b->patches, g_free);
  b->n_kcalls = b->n_patches = 0;
  guint32 n_calls = 0, n_patches = 0;
  for (DrId i = 0; i < b->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    b->node_kcall[i] = DR_NONE;
    if (n->op != DR_OP_KERNEL || dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER) continue;
    n_calls++;
    n_patches += n->arg_count;
  }
  b->kcalls = g_new0(DrBoundKernel, MAX(n_calls, 1));
  b->patches = g_new0(DrKPatch, MAX(n_patches, 1));
  g_autofree gboolean *pdl = early_launches(b);
  for (DrId i = 0; i < b->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op != DR_OP_KERNEL || dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER) continue;
    DrBoundKernel *k = &b->kcalls[b->n_kcalls];
    if (!dr__kernel_call_bind(g, i, b->bases, &k->call, error)) return FALSE;
    guint32 s = b->plan->node_stream[i];
    DrKLaunch *l = &k->call.launch;
    l->stream = b->streams[s];
    l->blas = (k->call.def->flags & DR_KFLAG_BLAS) ? b->blas[s] : NULL;
    l->scratch = b->scratch[i];
    /* Eager stamps: a self-stamping built-in writes its own end stamp
     * (graph mode keeps its stamp nodes aside, off the critical path). */
    l->stamp = !b->graph_mode && b->timing == DR_TIMING_STAMPS && (k->call.def->flags & DR_KFLAG_STAMPS)
                   ? (void *)&b->stamps[i]
                   : NULL;
    l->pdl = pdl != NULL && pdl[i];
    k->patch_first = b->n_patches;
    for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
      const DrArg *arg = dr_graph_arg(g, a);
      if (arg->kind != DR_ARG_BUFFER || arg->param >= (guint32)k->call.def->n_params) continue;
      const DrAccess *acc = dr_graph_access(g, arg->v.access);
      const DrBuffer *buf = dr_graph_buffer(g, acc->buffer);
      if (buf->alloc_node == DR_NONE) continue; /* whole-run: its pointer is final */
      b->patches[b->n_patches++] =
          (DrKPatch){&k->call.args[arg->param], acc->buffer, acc->begin * (guint64)dr_elem_size(buf->type)};
    }
    k->patch_count = b->n_patches - k->patch_first;
    b->node_kcall[i] = b->n_kcalls++;
  }
  return TRUE;
}

static gboolean cuda_setup(DrBackend *b, GError **error) {
  const DrGraph *g = b->graph;
  gboolean any_alloc = FALSE;
  for (DrId i = 0; i < b->n_buffers; i++) {
    const DrBuffer *buf = dr_graph_buffer(g, i);
    if (buf->alloc_node != DR_NONE) {
      any_alloc = TRUE;
      continue; /* lives from its alloc node to its free node */
    }
    g_autofree char *what = g_strdup_printf("buffer '%s'", buf->name);
    DrCudaSite site = DR_SITE_SETUP(what);
    gsize bytes = MAX(dr_buffer_bytes(buf), 1);
    if (buf->where == DR_WHERE_HOST) {
      if (!DR_CUDA(site, cudaMallocHost, &b->bases[i], bytes)) return FALSE;
      b->pinned[i] = TRUE;
      if (!dr__buffer_init(g, i, b->bases[i], error)) return FALSE;
    } else {
      if (!DR_CUDA(site, cudaMalloc, &b->bases[i], bytes)) return FALSE;
      g_autofree void *tmp = g_try_malloc(bytes);
      if (tmp == NULL) {
        g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "%s: out of host memory for its init", what);
        return FALSE;
      }
      /* On origin, never the legacy default stream; synchronized before
       * tmp goes away. */
      if (!dr__buffer_init(g, i, tmp, error) ||
          !DR_CUDA(site, cudaMemcpyAsync, b->bases[i], tmp, dr_buffer_bytes(buf), cudaMemcpyHostToDevice,
                   b->origin) ||
          !DR_CUDA(site, cudaStreamSynchronize, b->origin))
        return FALSE;
    }
  }
  if (any_alloc) {
    cudaMemPool_t pool = NULL;
    guint64 threshold = g->run.release_threshold_set ? g->run.release_threshold : G_MAXUINT64;
    DrCudaSite site = DR_SITE_SETUP("the device's default memory pool");
    if (!DR_CUDA(site, cudaDeviceGetDefaultMemPool, &pool, b->opts.device) ||
        !DR_CUDA(site, cudaMemPoolSetAttribute, pool, cudaMemPoolAttrReleaseThreshold, &threshold))
      return FALSE;
  }
  for (DrId i = 0; i < b->n_nodes; i++) {
    const DrNode *n = dr_graph_node(g, i);
    if (n->op == DR_OP_HOST) dr__host_call_bind(g, i, b->bases, b->opts.host_output, &b->hcalls[i]);
    if (n->op == DR_OP_KERNEL && !kernel_resources(b, i, error)) return FALSE;
  }
  if (!dr__user_kernels_load(b, error)) return FALSE;
  /* Graph mode binds when it captures (dr__cuda_issue_iteration). */
  if (b->graph_mode) {
    g_autoptr(GError) local = NULL;
    if (dr__cuda_graph_capture(b, &local)) return TRUE;
    if (b->uncapturable == DR_NONE || !b->opts.graph_fallback) {
      g_propagate_error(error, g_steal_pointer(&local));
      return FALSE;
    }
    /* run.fallback: streams. The plan stays (graph mode's, uncapped), one
     * iteration in flight, stamps inline. */
    g_printerr("dagrun: warning: %s; running in streams mode instead (run.fallback: streams)\n",
               local->message);
    b->graph_mode = FALSE;
    b->stamp_aside = FALSE;
  }
  return dr__cuda_bind_kernels(b, error);
}

/* ---- issuing ------------------------------------------------------------ */

static void CUDART_CB host_trampoline(void *data) {
  /* Runs on a CUDA-owned thread: must not call CUDA. */
  dr__host_call_run(data);
}

static gboolean record_timing(DrBackend *b, cudaEvent_t ev, cudaStream_t st, gboolean capturing,
                              DrCudaSite site, GError **error) {
  if (capturing) return DR_CUDA(site, cudaEventRecordWithFlags, ev, st, cudaEventRecordExternal);
  return DR_CUDA(site, cudaEventRecord, ev, st);
}

/* Enqueues the stamp kernel writing %globaltimer into `slot` on `st`. */
static gboolean stamp(unsigned long long *slot, cudaStream_t st, DrCudaSite site, GError **error) {
  return dr__cuda_check((cudaError_t)dr_cuda_api()->stamp_launch(slot, st), "stamp kernel launch", site,
                        error);
}

/* Reports the failed launch of bound kernel `k` (not the hot path). */
static gboolean kernel_launch_failed(const DrBoundKernel *k, int rc, DrCudaSite site, GError **error) {
  const DrKLaunch *l = &k->call.launch;
  const char *blas_err = l->blas ? dr_kblas_last_error(l->blas) : "";
  g_autofree char *what =
      g_strdup_printf("kernel launch (%s%s%s)", k->call.def->name, blas_err[0] ? ": " : "", blas_err);
  return dr__cuda_check((cudaError_t)rc, what, site, error);
}

/* Enqueues built-in kernel node `k` (bound at setup) on its stream: the
 * hot path of eager issue, a pointer refresh per stream-ordered argument
 * and the launch, nothing allocated or formatted. */
static inline gboolean issue_kernel(DrBackend *b, const DrCudaApi *api, DrBoundKernel *k, DrCudaSite site,
                                    GError **error) {
  for (guint32 j = k->patch_first; j < k->patch_first + k->patch_count; j++) {
    const DrKPatch *pt = &b->patches[j];
    pt->slot->ptr = (char *)b->bases[pt->buffer] + pt->offset;
  }
  int rc = api->kernel_launch(k->call.def, &k->call.launch);
  return G_LIKELY(rc == 0) || kernel_launch_failed(k, rc, site, error);
}

/* Enqueues node `id`'s work other than a built-in kernel on `st`. */
static gboolean issue_work(DrBackend *b, DrId id, cudaStream_t st, DrCudaSite site, GError **error) {
  const DrGraph *g = b->graph;
  const DrNode *n = dr_graph_node(g, id);
  switch (n->op) {
    case DR_OP_KERNEL: /* built-ins take the bound path (issue_kernel) */
      return dr__user_kernel_launch(b, id, st, site, error);
    case DR_OP_COPY: {
      const DrAccess *src, *dst;
      dr__copy_accesses(g, n, &src, &dst);
      gsize bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
      return DR_CUDA(site, cudaMemcpyAsync, dr__slice_ptr(g, b->bases, dst), dr__slice_ptr(g, b->bases, src),
                     bytes, cudaMemcpyDefault, st);
    }
    case DR_OP_MEMSET: {
      const DrAccess *dst = dr__node_access(g, n, 0);
      gsize bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(g, dst->buffer)->type);
      return DR_CUDA(site, cudaMemsetAsync, dr__slice_ptr(g, b->bases, dst), n->memset_value, bytes, st);
    }
    case DR_OP_ALLOC: {
      const DrBuffer *buf = dr_graph_buffer(g, n->buffer);
      if (!DR_CUDA(site, cudaMallocAsync, &b->bases[n->buffer], MAX(dr_buffer_bytes(buf), 1), st))
        return FALSE;
      b->async_live[n->buffer] = TRUE;
      return TRUE;
    }
    case DR_OP_FREE: {
      if (b->bases[n->buffer] == NULL) return TRUE;
      if (!DR_CUDA(site, cudaFreeAsync, b->bases[n->buffer], st)) return FALSE;
      b->bases[n->buffer] = NULL;
      b->async_live[n->buffer] = FALSE;
      return TRUE;
    }
    case DR_OP_HOST:
      return DR_CUDA(site, cudaLaunchHostFunc, st, host_trampoline, &b->hcalls[id]);
    case DR_OP_NOOP:
    case DR_N_OPS:
      return TRUE;
  }
  return TRUE;
}

/* DR_CUDA for the per-node calls of the issue loop: the table fetched once
 * per iteration (`api` in scope, with `cudaError_t rc_`), the site (an
 * expression) built only when the call failed. */
#define ISSUE_CUDA(site_expr, fn, ...) \
  (G_LIKELY((rc_ = api->fn(__VA_ARGS__)) == cudaSuccess) || dr__cuda_check(rc_, #fn, (site_expr), error))

/* The site of node v's calls. */
#define NODE_SITE(v) DR_SITE_NODE(dr_graph_node(g, (v))->id, p->node_stream[(v)])

gboolean dr__cuda_issue_iteration(DrBackend *b, gboolean capturing, GError **error) {
  const DrPlan *p = b->plan;
  const DrGraph *g = b->graph;
  const DrCudaApi *api = dr_cuda_api();
  cudaError_t rc_;
  gboolean events = b->timing == DR_TIMING_EVENTS, stamps = b->timing == DR_TIMING_STAMPS;
  /* A capture makes a graph that outlives this call: bind what the graph
   * holds now (a library user may have changed scalars since setup, see
   * dr__cuda_graph_update). */
  if (capturing && !dr__cuda_bind_kernels(b, error)) return FALSE;
  DrCudaSite site = DR_SITE_SETUP("iteration fork");
  /* The iteration's start stamp goes before the fork, so the fork (and
   * through it every node) happens after it: no node can seem to start
   * before the iteration did. */
  if (stamps && !stamp(&b->stamps[b->n_nodes], b->origin, site, error)) return FALSE;
  /* Fork: the iteration's start happens before every stream's first node
   * (directly, or through the node it waits on: needs_fork). */
  if (!DR_CUDA(site, cudaEventRecord, b->fork, b->origin)) return FALSE;
  for (guint32 s = 0; s < b->n_streams; s++)
    if (b->needs_fork[s] && !DR_CUDA(site, cudaStreamWaitEvent, b->streams[s], b->fork, 0)) return FALSE;

  const DrPlanStep *steps = (const DrPlanStep *)(void *)p->steps->data;
  for (guint32 i = 0, n_steps = p->steps->len; i < n_steps; i++) {
    const DrPlanStep *step = &steps[i];
    DrId v = step->node;
    cudaStream_t st = b->streams[step->stream];
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      DrId u = dr_plan_wait(p, w);
      /* DAG edge u -> v across streams: v's stream waits for u's
       * completion event. */
      if (!ISSUE_CUDA(NODE_SITE(v), cudaStreamWaitEvent, st, b->node_done[u], 0)) return FALSE;
    }
    guint32 k = b->node_kcall[v];
    /* Capturing: which graph node a built-in's launch makes (per-node
     * argument updates, cuda_graph.c). */
    gsize n_before = G_MAXSIZE;
    g_autofree cudaGraphNode_t *before =
        capturing && k != DR_NONE && b->graph_node != NULL ? dr__capture_before(st, &n_before) : NULL;
    if (G_LIKELY(!events && k != DR_NONE)) {
      /* The hot path: a bound built-in, nothing else around it. */
      if (!issue_kernel(b, api, &b->kcalls[k], NODE_SITE(v), error))
        return capturing && dr__capture_after(b, v, st, FALSE, NULL, G_MAXSIZE, error);
    } else {
      DrCudaSite ns = NODE_SITE(v);
      gsize e = (gsize)b->slot * b->n_nodes + v;
      if (events && !record_timing(b, b->t_start[e], st, capturing, ns, error)) return FALSE;
      if (k != DR_NONE ? !issue_kernel(b, api, &b->kcalls[k], ns, error) : !issue_work(b, v, st, ns, error))
        return capturing && dr__capture_after(b, v, st, FALSE, NULL, G_MAXSIZE, error);
      if (events && !record_timing(b, b->t_end[e], st, capturing, ns, error)) return FALSE;
    }
    if (capturing && !dr__capture_after(b, v, st, TRUE, before, n_before, error)) return FALSE;
    if (stamps && b->stamp_aside) {
      /* DAG-free timing edge v -> v's stamp: the side stream of v's plan
       * stream waits for v and stamps; nothing but the join waits for the
       * stamp, so v's successors do not. */
      cudaStream_t side = b->stamp_streams[step->stream];
      /* Calls on the side stream blame neither the node nor a plan
       * stream: the side stream is neither. */
      g_autofree char *what = g_strdup_printf("timing stamp of '%s' (side stream of stream %u)",
                                              dr_graph_node(g, v)->id, step->stream);
      DrCudaSite sides = DR_SITE_SETUP(what);
      if (!DR_CUDA(NODE_SITE(v), cudaEventRecord, b->stamp_ready[v], st) ||
          !DR_CUDA(sides, cudaStreamWaitEvent, side, b->stamp_ready[v], 0) ||
          !stamp(&b->stamps[v], side, sides, error))
        return FALSE;
    } else if (stamps && (k == DR_NONE || b->kcalls[k].call.launch.stamp == NULL) &&
               !stamp(&b->stamps[v], st, NODE_SITE(v), error)) {
      /* Inline (eager mode), for nodes that do not stamp themselves: v's
       * end stamp goes before its completion event, so whoever waits on v
       * also runs after the stamp. */
      return FALSE;
    }
    /* Source of the DAG edges v -> w for every later w on another stream
     * that waits on v (needs_event[v]). */
    if (p->needs_event[v] && !ISSUE_CUDA(NODE_SITE(v), cudaEventRecord, b->node_done[v], st)) return FALSE;
  }

  site = DR_SITE_SETUP("iteration join");
  /* Graph-mode stamps aside: which side streams stamped something. */
  g_autofree gboolean *side_used = NULL;
  if (stamps && b->stamp_aside) {
    side_used = g_new0(gboolean, MAX(b->n_streams, 1));
    for (guint32 i = 0; i < p->steps->len; i++) side_used[dr_plan_step(p, i)->stream] = TRUE;
  }
  for (guint32 s = 0; s < b->n_streams; s++) {
    /* Join: every stream's last node happens before the iteration's end
     * (directly, or through a stream that waits on it: needs_join). */
    if (b->needs_join[s] && (!DR_CUDA(site, cudaEventRecord, b->join[s], b->streams[s]) ||
                             !DR_CUDA(site, cudaStreamWaitEvent, b->origin, b->join[s], 0)))
      return FALSE;
    /* Join of the stamps: every stamp happens before the iteration's end
     * (and before the stamps are copied back). A side stream that stamped
     * nothing was never pulled into the capture: it has nothing to join. */
    if (side_used && side_used[s] &&
        (!DR_CUDA(site, cudaEventRecord, b->stamp_join[s], b->stamp_streams[s]) ||
         !DR_CUDA(site, cudaStreamWaitEvent, b->origin, b->stamp_join[s], 0)))
      return FALSE;
  }
  return TRUE;
}

/* Nanoseconds from stamp `t0` to `t`, in µs. */
static double stamp_us(unsigned long long t, unsigned long long t0) {
  return (double)(gint64)(t - t0) / 1000.0;
}

/* Turns slot `k`'s copied-back stamps into node times: end = the node's
 * stamp; start = when it became ready, the latest of the iteration's start
 * stamp, the previous node on its stream's stamp and the stamps of the
 * nodes it waits on (its planned waits). */
static void read_stamps(DrBackend *b, guint32 k, DrIterTiming *t) {
  /* Stamps aside (graph mode) may run a launch latency after a successor
   * started; an end is clamped so that it never precedes its start. */
  const DrPlan *p = b->plan;
  const unsigned long long *st = b->stamps_host + (gsize)k * (b->n_nodes + 1);
  unsigned long long t0 = st[b->n_nodes];
  for (guint32 i = 0; i < p->steps->len; i++) {
    const DrPlanStep *step = dr_plan_step(p, i);
    DrId v = step->node;
    unsigned long long ready = t0;
    if (b->prev_on_stream[v] != DR_NONE) ready = MAX(ready, st[b->prev_on_stream[v]]);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++)
      ready = MAX(ready, st[dr_plan_wait(p, w)]);
    t->start_us[v] = stamp_us(ready, t0);
    t->end_us[v] = stamp_us(MAX(st[v], ready), t0);
  }
}

/* Reads slot `k`'s timing (events, or the stamps copied back) once its
 * iteration has completed. */
static gboolean read_timing(DrBackend *b, guint32 k, DrIterTiming *t, GError **error) {
  float ms = 0;
  DrCudaSite site = DR_SITE_SETUP("iteration timing");
  if (!DR_CUDA(site, cudaEventElapsedTime, &ms, b->iter_start[k], b->iter_end[k])) return FALSE;
  t->makespan_us = ms * 1000.0;
  if (b->timing == DR_TIMING_STAMPS) {
    read_stamps(b, k, t);
    return TRUE;
  }
  if (b->timing != DR_TIMING_EVENTS) return TRUE;
  for (DrId i = 0; i < b->n_nodes; i++) {
    float s = 0, e = 0;
    gsize ev = (gsize)k * b->n_nodes + i;
    DrCudaSite ns = DR_SITE_NODE(dr_graph_node(b->graph, i)->id, b->plan->node_stream[i]);
    if (!DR_CUDA(ns, cudaEventElapsedTime, &s, b->iter_start[k], b->t_start[ev]) ||
        !DR_CUDA(ns, cudaEventElapsedTime, &e, b->iter_start[k], b->t_end[ev]))
      return FALSE;
    t->start_us[i] = s * 1000.0;
    t->end_us[i] = e * 1000.0;
  }
  return TRUE;
}

/* Enqueues iteration `iteration` on its slot without waiting for it. The
 * iteration starts on origin, after the previous iteration's join (origin's
 * order), and its fork holds back every stream until then: iterations never
 * overlap on the device, only the host's issuing overlaps the device's
 * running. */
static gboolean cuda_launch_iteration(DrBackend *b, guint32 iteration, gboolean timed, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("iteration");
  guint32 k = iteration % b->depth;
  b->slot = k;
  b->idle = FALSE;
  b->in_flight++;
  if (!DR_CUDA(site, cudaEventRecord, b->iter_start[k], b->origin)) return FALSE;
  if (b->graph_mode) {
    if (!dr__cuda_graph_launch(b, error)) return FALSE;
  } else if (!dr__cuda_issue_iteration(b, FALSE, error)) {
    return FALSE;
  }
  if (!DR_CUDA(site, cudaEventRecord, b->iter_end[k], b->origin)) return FALSE;
  /* One copy of every stamp per timed iteration, after iter_end: outside
   * the measured makespan and after the join (every stamp written). */
  if (timed && b->timing == DR_TIMING_STAMPS &&
      !DR_CUDA(site, cudaMemcpyAsync, b->stamps_host + (gsize)k * (b->n_nodes + 1), b->stamps,
               sizeof(unsigned long long) * (b->n_nodes + 1), cudaMemcpyDeviceToHost, b->origin))
    return FALSE;
  return DR_CUDA(site, cudaEventRecord, b->iter_done[k], b->origin);
}

/* Waits for the oldest iteration in flight, `iteration`, and reads its
 * timing into `timing` (NULL: untimed). */
static gboolean cuda_finish_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error) {
  guint32 k = iteration % b->depth;
  if (!DR_CUDA(DR_SITE_SETUP("iteration"), cudaEventSynchronize, b->iter_done[k])) return FALSE;
  /* After the run's last iteration, drain the whole device and check it:
   * an error that arrives now is the run's to report (DR_ERROR_RUNTIME
   * naming cudaDeviceSynchronize), not close's to drop. */
  if (iteration + 1 == b->opts.warmup + b->opts.iterations &&
      !DR_CUDA(DR_SITE_SETUP("draining the device after the last iteration"), cudaDeviceSynchronize))
    return FALSE;
  b->in_flight--;
  b->idle = b->in_flight == 0;
  return timing == NULL || read_timing(b, k, timing, error);
}

static guint32 cuda_max_in_flight(const DrBackend *b) { return b->depth; }

static gboolean cuda_run_iteration(DrBackend *b, guint32 iteration, DrIterTiming *timing, GError **error) {
  return cuda_launch_iteration(b, iteration, timing != NULL, error) &&
         cuda_finish_iteration(b, iteration, timing, error);
}

static gboolean cuda_read_buffer(DrBackend *b, DrId buffer, void *dst, GError **error) {
  const DrBuffer *buf = dr_graph_buffer(b->graph, buffer);
  if (b->bases[buffer] == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "buffer '%s' is not live after the run", buf->name);
    return FALSE;
  }
  g_autofree char *what = g_strdup_printf("reading back buffer '%s'", buf->name);
  DrCudaSite site = DR_SITE_SETUP(what);
  b->idle = FALSE;
  b->idle = DR_CUDA(site, cudaMemcpyAsync, dst, b->bases[buffer], dr_buffer_bytes(buf), cudaMemcpyDefault,
                    b->origin) &&
            DR_CUDA(site, cudaStreamSynchronize, b->origin);
  return b->idle;
}

static gboolean cuda_args_changed(DrBackend *b, const DrId *nodes, guint32 n, const char **how,
                                  GError **error) {
  g_return_val_if_fail(b->idle, FALSE);
  if (b->graph_mode) return dr__cuda_graph_update_nodes(b, nodes, n, how, error);
  /* User kernels read their arguments at each launch; built-ins are bound
   * once, so bind them again, after checking every one in a scratch call
   * (a failure keeps the previous binding whole). */
  *how = "rebound";
  DrKernelCall probe;
  for (DrId i = 0; i < b->n_nodes; i++)
    if (b->node_kcall[i] != DR_NONE && !dr__kernel_call_bind(b->graph, i, b->bases, &probe, error))
      return FALSE;
  return dr__cuda_bind_kernels(b, error);
}

static const char *cuda_mode_name(const DrBackend *b) { return b->graph_mode ? "graph" : "streams"; }

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
    .close = cuda_close,
    .mode_name = cuda_mode_name,
};
