/* loops.c: loops and conditionals on the CUDA backend. In streams mode
 * they are host-driven: the loop node's issue enqueues the body's trips
 * on the loop node's stream, and a `while:` or `if:` reads its condition
 * back to the host (a 4-byte copy into pinned memory and a
 * cudaStreamSynchronize of that stream per trip), so the host's issuing
 * waits for the device at every trip. The body runs serially on one
 * stream, in file order, which implies every dependency of the body (its
 * own plan's streams are not used here). In graph mode a `repeat:` loop
 * with no while or if inside is captured unrolled, the body N times with
 * nothing between the copies (unless its count is a run-time parameter's:
 * then it is a counted WHILE whose limit, a device word, this file writes
 * when the value changes, so a new count needs no capture); every other
 * loop becomes CUDA conditional
 * nodes, built by condgraph.c, and this file owns what those need beyond
 * the graph: the body stream, the device trip counters, read back after
 * the run, and the cuBLAS contexts of the bodies' gemms. A body kernel is
 * launched as at the top level: a built-in bound again at each issue
 * (dr__cuda_loops_call), a gemm with the cuBLAS context of the stream it
 * goes on (host-driven and unrolled: the loop node's plan stream's, which
 * launch.c makes when the body holds a gemm; a conditional body: one per
 * gemm node, bound to the body stream), a user kernel through
 * user_kernels.c (loaded for the bodies' nodes too).
 * docs/format.md says what a trip costs. */
#include "backends/cuda/loops.h"

#include "backends/cuda/launch.h"
#include "ir/loops.h"

gboolean dr__cuda_is_gemm(const DrGraph *g, DrId v) {
  const DrNode *n = dr_graph_node(g, v);
  if (n->op != DR_OP_KERNEL || dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER) return FALSE;
  const DrKernelDef *def = dr__kernel_def_of(g, v);
  return def != NULL && (def->flags & DR_KFLAG_BLAS) != 0;
}

static gboolean body_has_blas(const DrGraph *body) {
  for (DrId i = 0; body != NULL && i < dr_graph_n_nodes(body); i++) {
    const DrLoop *l = dr_graph_node(body, i)->loop ? dr_graph_node_loop(body, i) : NULL;
    if (dr__cuda_is_gemm(body, i) || (l != NULL && dr__cuda_loop_has_blas(l))) return TRUE;
  }
  return FALSE;
}

gboolean dr__cuda_loop_has_blas(const DrLoop *loop) {
  return body_has_blas(loop->body) || body_has_blas(loop->else_body);
}

/* The first while or if at or under `g`'s loops, or NULL. */
static const DrLoop *conditional(const DrGraph *g) {
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    if (l->kind != DR_LOOP_REPEAT) return l;
    const DrLoop *c = conditional(l->body);
    if (c) return c;
  }
  return NULL;
}

/* The table has what conditional nodes need. */
static gboolean can_build_conditionals(const DrCudaApi *api) {
  return api->cudaStreamGetCaptureInfo && api->cudaGraphConditionalHandleCreate && api->cudaGraphAddNode &&
         api->cudaStreamBeginCaptureToGraph && api->cudaStreamUpdateCaptureDependencies && api->cond_launch &&
         api->count_launch;
}

/* Loop `l` needs conditional nodes in graph mode: a while or if, or a
 * repeat with one inside. */
static gboolean needs_conditional(const DrLoop *l) {
  return l->kind != DR_LOOP_REPEAT || l->counted || conditional(l->body) != NULL;
}

gboolean dr__cuda_loops_check(const DrPlan *plan, DrMode mode, GError **error) {
  const DrGraph *g = plan->graph;
  const DrRunConfig *run = &g->run;
  if (run->device_loop && mode == DR_MODE_GRAPH && !can_build_conditionals(dr_cuda_api())) {
    g_set_error(
        error, DR_ERROR, DR_ERROR_UNAVAILABLE,
        "%s:%u:%u: run.device_loop: the WHILE node around the iteration needs CUDA conditional nodes, "
        "which this CUDA runtime does not offer (CUDA 12.4 or later); set run.device_loop: false",
        run->device_loop_loc.file, run->device_loop_loc.line, run->device_loop_loc.col);
    return FALSE;
  }
  const DrLoop *c = mode == DR_MODE_GRAPH && !can_build_conditionals(dr_cuda_api()) ? conditional(g) : NULL;
  if (c != NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE,
                "%s:%u:%u: node '%s': graph mode builds %s: as a CUDA conditional node, which this CUDA "
                "runtime does not offer (CUDA 12.4 or later); use --mode=streams",
                c->loc.file, c->loc.line, c->loc.col, c->id, dr_loop_kind_name(c->kind));
    return FALSE;
  }
  return TRUE;
}

/* run.device_loop's counter, limit and stamps, and its capture stream. */
static gboolean device_loop_setup(DrCudaLoops *l, guint32 iterations, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("run.device_loop's counter and stamps");
  l->device_loop = TRUE;
  l->dl_cap = iterations;
  return DR_CUDA(site, cudaMalloc, (void **)&l->dl, 2 * sizeof(guint64)) &&
         DR_CUDA(site, cudaMalloc, (void **)&l->dl_stamps, ((gsize)iterations + 1) * sizeof(guint64)) &&
         DR_CUDA(site, cudaMallocHost, (void **)&l->dl_host, ((gsize)iterations + 2) * sizeof(guint64)) &&
         DR_CUDA(site, cudaStreamCreateWithPriority, &l->dl_outer, cudaStreamNonBlocking, 0);
}

/* Scratch for every built-in kernel of `g`'s loop bodies (nested too) that
 * needs it, made here because a capture forbids cudaMalloc. */
static gboolean body_scratch(DrCudaLoops *l, const DrGraph *g, gboolean in_body, GError **error) {
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++) {
    const DrNode *n = dr_graph_node(g, v);
    /* A user kernel's def is its host twin's: the device runs its own code. */
    if (in_body && n->op == DR_OP_KERNEL && dr_graph_kernel(g, n->kernel)->origin != DR_KERNEL_USER) {
      const DrKernelDef *def = dr__kernel_def_of(g, v);
      if (def != NULL && def->scratch_bytes) {
        void *scratch = NULL;
        if (!DR_CUDA(DR_SITE_NODE(n->id, -1), cudaMalloc, &scratch, def->scratch_bytes)) return FALSE;
        if (l->scratch == NULL) l->scratch = g_hash_table_new(NULL, NULL);
        g_hash_table_insert(l->scratch, (gpointer)n, scratch);
      }
    }
    const DrLoop *loop = n->loop ? dr_graph_node_loop(g, v) : NULL;
    if (loop != NULL && (!body_scratch(l, loop->body, TRUE, error) ||
                         (loop->else_body != NULL && !body_scratch(l, loop->else_body, TRUE, error))))
      return FALSE;
  }
  return TRUE;
}

/* Graph mode: a cuBLAS context bound to the body stream for every gemm
 * node of `g` (a body of a loop built as conditional nodes, and the bodies
 * nested in it), over a workspace of its own: the nodes of a body graph
 * may run side by side, and a workspace must not be shared by two calls
 * at once (blas.h). Made here, before any capture. */
static gboolean body_blas(DrCudaLoops *l, const DrGraph *g, GError **error) {
  for (DrId v = 0; g != NULL && v < dr_graph_n_nodes(g); v++) {
    const DrNode *n = dr_graph_node(g, v);
    const DrLoop *loop = n->loop ? dr_graph_node_loop(g, v) : NULL;
    if (loop != NULL && (!body_blas(l, loop->body, error) || !body_blas(l, loop->else_body, error)))
      return FALSE;
    if (!dr__cuda_is_gemm(g, v)) continue;
    if (l->blas == NULL) {
      l->blas = g_hash_table_new(NULL, NULL);
      l->blas_ws = g_ptr_array_new();
    }
    DrKBlas *blas = NULL;
    void *ws = NULL;
    gboolean ok = dr__cuda_blas_make(&blas, &ws, l->body_stream, DR_SITE_NODE(n->id, -1), error);
    if (ws != NULL) g_ptr_array_add(l->blas_ws, ws);
    if (blas != NULL) g_hash_table_insert(l->blas, (gpointer)n, blas);
    if (!ok) return FALSE;
  }
  return TRUE;
}

gboolean dr__cuda_loops_setup(DrCudaLoops *l, const DrPlan *plan, const DrCudaLaunch *launch,
                              gboolean graph_mode, guint32 iterations, GError **error) {
  const DrGraph *g = plan->graph;
  guint n = dr_graph_n_loops(g);
  l->plan = plan;
  l->launch = launch;
  if (graph_mode && g->run.device_loop && !device_loop_setup(l, iterations, error)) return FALSE;
  if (n == 0) return TRUE;
  if (!body_scratch(l, g, FALSE, error)) return FALSE;
  l->trips = g_new0(guint64, n);
  l->device_trips = g_new0(gboolean, n);
  if (l->cond_host == NULL && !DR_CUDA(DR_SITE_SETUP("the pinned word loop conditions are read into"),
                                       cudaMallocHost, (void **)&l->cond_host, sizeof(gint32)))
    return FALSE;
  gboolean any = FALSE;
  for (guint i = 0; i < n; i++) any = any || needs_conditional(dr_graph_loop(g, i));
  if (!graph_mode || !any) return TRUE;
  l->graph_mode = TRUE;
  DrCudaSite site = DR_SITE_SETUP("the loop counters of graph mode's conditional nodes");
  if (!DR_CUDA(site, cudaMalloc, (void **)&l->counters, 3 * n * sizeof(guint64)) ||
      !DR_CUDA(site, cudaMallocHost, (void **)&l->counters_host, 3 * n * sizeof(guint64)) ||
      !DR_CUDA(DR_SITE_SETUP("the stream loop bodies are captured on"), cudaStreamCreateWithPriority,
               &l->body_stream, cudaStreamNonBlocking, 0))
    return FALSE;
  for (guint i = 0; i < n; i++) {
    const DrLoop *loop = dr_graph_loop(g, i);
    if (needs_conditional(loop) &&
        (!body_blas(l, loop->body, error) || !body_blas(l, loop->else_body, error)))
      return FALSE;
  }
  /* Each loop's limit (a repeat's count, read by a counted WHILE's
   * counter kernel), written here; a count from a parameter again when it
   * changes (dr__cuda_loops_write_counts). */
  l->limits = g_new0(guint64, n);
  for (guint i = 0; i < n; i++) {
    const DrLoop *loop = dr_graph_loop(g, i);
    l->counters_host[3 * i] = l->counters_host[3 * i + 1] = 0;
    l->counters_host[3 * i + 2] = l->limits[i] = loop->kind == DR_LOOP_REPEAT ? loop->count : 0;
  }
  return DR_CUDA(site, cudaMemcpyAsync, l->counters, l->counters_host, 3 * n * sizeof(guint64),
                 cudaMemcpyHostToDevice, l->body_stream) &&
         DR_CUDA(site, cudaStreamSynchronize, l->body_stream);
}

gboolean dr__cuda_loops_read_trips(DrCudaLoops *l, cudaStream_t origin, GError **error) {
  if (l->counters == NULL || l->plan == NULL) return TRUE;
  guint n = dr_graph_n_loops(l->plan->graph);
  DrCudaSite site = DR_SITE_SETUP("reading the loops' trip counters");
  if (!DR_CUDA(site, cudaMemcpyAsync, l->counters_host, l->counters, 3 * n * sizeof(guint64),
               cudaMemcpyDeviceToHost, origin) ||
      !DR_CUDA(site, cudaStreamSynchronize, origin))
    return FALSE;
  /* A while's or if's trips are its trip counter; a counted WHILE's (a
   * repeat) its counter kernel's count. */
  for (guint i = 0; i < n; i++)
    if (l->device_trips[i])
      l->trips[i] = l->counters_host[3 * i + (dr_graph_loop(l->plan->graph, i)->kind == DR_LOOP_REPEAT)];
  return TRUE;
}

gboolean dr__cuda_loops_counts_pending(const DrCudaLoops *l) {
  if (l->counters == NULL || l->limits == NULL || l->plan == NULL) return FALSE;
  const DrGraph *g = l->plan->graph;
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *loop = dr_graph_loop(g, i);
    if (loop->counted && loop->count != l->limits[i]) return TRUE;
  }
  return FALSE;
}

gboolean dr__cuda_loops_write_counts(DrCudaLoops *l, cudaStream_t origin, gboolean *wrote, GError **error) {
  if (wrote) *wrote = FALSE;
  if (l->counters == NULL || l->limits == NULL || l->plan == NULL) return TRUE;
  const DrGraph *g = l->plan->graph;
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *loop = dr_graph_loop(g, i);
    if (!loop->counted || loop->count == l->limits[i]) continue;
    /* Ordered on origin before the next launch; the pinned word is not
     * written again before that copy has run (read_trips, the next
     * writer, synchronises origin after the launch). */
    l->counters_host[3 * i + 2] = loop->count;
    if (!DR_CUDA(DR_SITE_NODE(loop->id, -1), cudaMemcpyAsync, l->counters + 3 * i + 2,
                 l->counters_host + 3 * i + 2, sizeof(guint64), cudaMemcpyHostToDevice, origin))
      return FALSE;
    l->limits[i] = loop->count;
    if (wrote) *wrote = TRUE;
  }
  return TRUE;
}

gboolean dr__cuda_device_loop_limit(DrCudaLoops *l, cudaStream_t origin, guint32 trips, GError **error) {
  if (trips > l->dl_cap) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                "run.device_loop: %u iterations, but the backend was set up for %u", trips, l->dl_cap);
    return FALSE;
  }
  l->dl_host[0] = trips;
  return DR_CUDA(DR_SITE_SETUP("run.device_loop's limit"), cudaMemcpyAsync, l->dl + 1, l->dl_host,
                 sizeof(guint64), cudaMemcpyHostToDevice, origin);
}

gboolean dr__cuda_device_loop_read(DrCudaLoops *l, cudaStream_t origin, guint32 trips, GError **error) {
  DrCudaSite site = DR_SITE_SETUP("reading run.device_loop's stamps");
  return DR_CUDA(site, cudaMemcpyAsync, l->dl_host + 1, l->dl_stamps, ((gsize)trips + 1) * sizeof(guint64),
                 cudaMemcpyDeviceToHost, origin) &&
         DR_CUDA(site, cudaStreamSynchronize, origin);
}

void dr__cuda_loops_close(DrCudaLoops *l) {
  const DrCudaApi *api = dr_cuda_api();
  if (l->blas != NULL) {
    GHashTableIter it;
    gpointer blas;
    g_hash_table_iter_init(&it, l->blas);
    while (g_hash_table_iter_next(&it, NULL, &blas)) dr__cuda_blas_free(blas);
    g_clear_pointer(&l->blas, g_hash_table_unref);
  }
  /* After the contexts that use them, which go before their stream. */
  for (guint i = 0; l->blas_ws != NULL && i < l->blas_ws->len; i++)
    (void)api->cudaFree(g_ptr_array_index(l->blas_ws, i));
  g_clear_pointer(&l->blas_ws, g_ptr_array_unref);
  if (l->cond_host != NULL) (void)api->cudaFreeHost(l->cond_host);
  if (l->counters_host != NULL) (void)api->cudaFreeHost(l->counters_host);
  if (l->counters != NULL) (void)api->cudaFree(l->counters);
  if (l->body_stream != NULL) (void)api->cudaStreamDestroy(l->body_stream);
  if (l->dl != NULL) (void)api->cudaFree(l->dl);
  if (l->dl_stamps != NULL) (void)api->cudaFree(l->dl_stamps);
  if (l->dl_host != NULL) (void)api->cudaFreeHost(l->dl_host);
  if (l->dl_outer != NULL) (void)api->cudaStreamDestroy(l->dl_outer);
  l->dl = l->dl_stamps = l->dl_host = NULL;
  l->dl_outer = NULL;
  l->device_loop = FALSE;
  l->cond_host = NULL;
  l->counters_host = NULL;
  l->counters = NULL;
  l->body_stream = NULL;
  g_clear_pointer(&l->trips, g_free);
  g_clear_pointer(&l->device_trips, g_free);
  g_clear_pointer(&l->limits, g_free);
  g_clear_pointer(&l->calls, g_hash_table_unref);
  if (l->scratch != NULL) {
    GHashTableIter it;
    gpointer ptr;
    g_hash_table_iter_init(&it, l->scratch);
    while (g_hash_table_iter_next(&it, NULL, &ptr)) (void)api->cudaFree(ptr);
    g_clear_pointer(&l->scratch, g_hash_table_unref);
  }
}

DrKernelCall *dr__cuda_loops_call(DrCudaLoops *l, const DrGraph *g, DrId v, void *const *bases,
                                  GError **error) {
  const DrNode *n = dr_graph_node(g, v);
  if (l->calls == NULL) l->calls = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  DrKernelCall *call = g_hash_table_lookup(l->calls, n);
  if (call == NULL) g_hash_table_insert(l->calls, (gpointer)n, call = g_new0(DrKernelCall, 1));
  if (!dr__kernel_call_bind(g, v, bases, call, error)) return NULL;
  if (call->def->scratch_bytes && l->scratch != NULL) {
    call->launch.scratch = g_hash_table_lookup(l->scratch, n);
  }
  return call;
}

gboolean dr__cuda_loops_kernel(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                               DrId v, cudaStream_t st, DrKBlas *blas, const DrKLaunch *how, GError **error) {
  const DrNode *n = dr_graph_node(g, v);
  DrCudaSite site = DR_SITE_NODE(n->id, -1);
  if (dr_graph_kernel(g, n->kernel)->origin == DR_KERNEL_USER)
    return dr__user_kernel_launch(l->launch, g, m->bases, v, st, site, error);
  DrKernelCall *call = dr__cuda_loops_call(l, g, v, m->bases, error);
  if (call == NULL) return FALSE;
  call->launch.stream = st;
  if (how != NULL) {
    call->launch.pdl = how->pdl;
    call->launch.guard = how->guard;
    call->launch.guard_runs = how->guard_runs;
  }
  /* graph mode's body node stamps (trips.h); never a host-driven trip's */
  call->launch.stamp = how != NULL ? how->stamp : NULL;
  if (call->def->flags & DR_KFLAG_BLAS) {
    call->launch.blas = blas;
    if (blas == NULL) {
      /* launch.c and body_blas make one for every gemm a body can hold */
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': no cuBLAS context for its stream", n->id);
      return FALSE;
    }
  }
  int rc = api->kernel_launch(call->def, &call->launch);
  if (G_LIKELY(rc == 0)) return TRUE;
  const char *blas_err = call->launch.blas ? dr__cuda_blas_last_error(call->launch.blas) : "";
  g_autofree char *what =
      g_strdup_printf("kernel launch (%s%s%s)", call->def->name, blas_err[0] ? ": " : "", blas_err);
  return dr__cuda_check((cudaError_t)rc, what, site, error);
}

DrKBlas *dr__cuda_loops_body_blas(const DrCudaLoops *l, const DrNode *n) {
  return l->blas != NULL ? g_hash_table_lookup(l->blas, n) : NULL;
}

/* Element 0 of condition `cond`, read back on `st`. */
static gboolean read_cond(DrCudaLoops *l, const DrCudaMemory *m, const DrLoop *loop, cudaStream_t st,
                          gboolean *out, GError **error) {
  DrCudaSite site = DR_SITE_NODE(loop->id, -1);
  if (!DR_CUDA(site, cudaMemcpyAsync, l->cond_host, m->bases[loop->cond], sizeof(gint32), cudaMemcpyDefault,
               st) ||
      !DR_CUDA(site, cudaStreamSynchronize, st))
    return FALSE;
  *out = *l->cond_host != 0;
  return TRUE;
}

static gboolean issue_loop(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                           DrId v, cudaStream_t st, DrKBlas *blas, guint64 *trips, GError **error);

/* One trip of `body` on `st`, in file order; `blas`: the cuBLAS context
 * bound to `st` (the launch part's for the loop node's stream). */
static gboolean issue_body(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *body,
                           cudaStream_t st, DrKBlas *blas, GError **error) {
  for (DrId i = 0; i < dr_graph_n_nodes(body); i++) {
    const DrNode *n = dr_graph_node(body, i);
    DrCudaSite site = DR_SITE_NODE(n->id, -1);
    switch (n->op) {
      case DR_OP_KERNEL:
        if (!dr__cuda_loops_kernel(l, m, api, body, i, st, blas, NULL, error)) return FALSE;
        break;
      case DR_OP_COPY: {
        const DrAccess *src, *dst;
        dr__copy_accesses(body, n, &src, &dst);
        guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(body, dst->buffer)->type);
        if (!DR_CUDA(site, cudaMemcpyAsync, dr__slice_ptr(body, m->bases, dst),
                     dr__slice_ptr(body, m->bases, src), bytes, cudaMemcpyDefault, st))
          return FALSE;
        break;
      }
      case DR_OP_MEMSET: {
        const DrAccess *dst = dr__node_access(body, n, 0);
        guint64 bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(body, dst->buffer)->type);
        if (!DR_CUDA(site, cudaMemsetAsync, dr__slice_ptr(body, m->bases, dst), n->memset_value, bytes, st))
          return FALSE;
        break;
      }
      case DR_OP_NOOP:
        if (n->loop) {
          guint64 trips;
          if (!issue_loop(l, m, api, body, i, st, blas, &trips, error)) return FALSE;
        }
        break;
      default: /* the body rules (ir/loops.c) leave nothing else */
        break;
    }
  }
  return TRUE;
}

/* Trip `trip` of `loop`: its body between its trip stamps (trips.h): the
 * ring's in graph mode's capture (a repeat captured unrolled). */
static gboolean issue_trip(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrLoop *loop,
                           const DrGraph *body, guint64 trip, cudaStream_t st, DrKBlas *blas,
                           GError **error) {
  gint32 pos = -1;
  if (l->trip_stamps == NULL) return issue_body(l, m, api, body, st, blas, error);
  gboolean ring = l->capturing; /* graph mode's capture */
  return dr__cuda_trips_trip_begin(l->trip_stamps, loop, trip, ring, st, &pos, error) &&
         issue_body(l, m, api, body, st, blas, error) &&
         dr__cuda_trips_trip_end(l->trip_stamps, loop, trip, pos, ring, st, error);
}

/* Issues loop `v` of `g`; *trips: the trips its body made. */
static gboolean issue_loop(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                           DrId v, cudaStream_t st, DrKBlas *blas, guint64 *trips, GError **error) {
  const DrLoop *loop = dr_graph_node_loop(g, v);
  gboolean again = TRUE;
  *trips = 0;
  switch (loop->kind) {
    case DR_LOOP_REPEAT:
      for (; *trips < loop->count; (*trips)++)
        if (!issue_trip(l, m, api, loop, loop->body, *trips, st, blas, error)) return FALSE;
      return TRUE;
    case DR_LOOP_WHILE:
      for (; again; (*trips)++)
        if (!issue_trip(l, m, api, loop, loop->body, *trips, st, blas, error) ||
            !read_cond(l, m, loop, st, &again, error))
          return FALSE;
      return TRUE;
    case DR_LOOP_IF:
      if (!read_cond(l, m, loop, st, &again, error)) return FALSE;
      *trips = again ? 1 : 0;
      if (again) return issue_trip(l, m, api, loop, loop->body, 0, st, blas, error);
      return loop->else_body == NULL || issue_body(l, m, api, loop->else_body, st, blas, error);
    case DR_N_LOOP_KINDS:
      break;
  }
  return TRUE;
}

gboolean dr__cuda_loop_issue(DrCudaLoops *l, const DrCudaMemory *m, const DrCudaApi *api, const DrGraph *g,
                             DrId v, cudaStream_t st, GError **error) {
  gboolean ring = l->capturing; /* graph mode's capture */
  const DrLoop *loop = dr_graph_node_loop(g, v);
  if (l->trip_stamps != NULL && !dr__cuda_trips_loop(l->trip_stamps, loop, ring, st, error)) return FALSE;
  if (ring && needs_conditional(loop)) {
    if (l->trips != NULL && loop->kind == DR_LOOP_REPEAT && !loop->counted)
      l->trips[dr_graph_node(g, v)->loop - 1] = loop->count;
    return dr__cuda_cond_issue(l, m, api, l->plan, v, st, error);
  }
  guint64 trips = 0;
  DrKBlas *blas = l->launch != NULL ? l->launch->blas[l->plan->node_stream[v]] : NULL;
  gboolean ok = issue_loop(l, m, api, g, v, st, blas, &trips, error);
  if (l->trips != NULL) l->trips[dr_graph_node(g, v)->loop - 1] = trips;
  return ok;
}
