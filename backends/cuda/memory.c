/* memory.c: the CUDA backend's buffers: whole-run device and pinned host
 * buffers with their init contents, the default pool's release threshold,
 * the stream-ordered allocations of alloc/free nodes, the copies and
 * memsets of copy/memset nodes, reading a buffer back, and a library
 * user's memory bound to a buffer (checked, never freed) and written
 * between runs in stream order.
 *
 * Whole-run pointers are fixed from setup on, so launches bind them once
 * (launch.c); a stream-ordered buffer's pointer exists only from its alloc
 * node on, and launches into it are patched just before they run. Every
 * CUDA call goes through DR_CUDA. This file does not decide when a node
 * runs (issue.c) nor on which stream (streams.c), nor which pairs of
 * devices have peer access (streams.c decides at open). */
#include "backends/cuda/memory.h"

#include <string.h>

#include "backends/backend.h"

void dr__cuda_memory_open(DrCudaMemory *m, const DrGraph *graph) {
  m->graph = graph;
  m->n_buffers = dr_graph_n_buffers(graph);
  m->bases = g_new0(void *, MAX(m->n_buffers, 1));
  m->pinned = g_new0(gboolean, MAX(m->n_buffers, 1));
  m->async_live = g_new0(gboolean, MAX(m->n_buffers, 1));
  m->external = g_new0(gboolean, MAX(m->n_buffers, 1));
  m->n_nodes = dr_graph_n_nodes(graph);
  m->stage = g_new0(void *, MAX(m->n_nodes, 1));
  m->high = G_MAXUINT64;
}

/* The device index buffer `i` lives on (0 for host buffers). */
static guint32 buffer_device(const DrCudaMemory *m, DrId i) {
  return dr__cuda_streams_device_index(m->streams, dr_graph_buffer_device(m->graph, i));
}

/* Allocates whole-run buffer `i` and fills it with its init contents. */
static gboolean whole_run_buffer(DrCudaMemory *m, DrId i, GError **error) {
  const DrGraph *g = m->graph;
  const DrBuffer *buf = dr_graph_buffer(g, i);
  g_autofree char *what = g_strdup_printf("buffer '%s'", buf->name);
  DrCudaSite site = DR_SITE_SETUP(what);
  gsize bytes = MAX(dr_buffer_bytes(buf), 1);
  /* A device buffer is made, and filled, on its device. */
  guint32 d = buffer_device(m, i);
  cudaStream_t origin = dr__cuda_streams_setup_of(m->streams, d);
  if (buf->where == DR_WHERE_HOST) {
    if (!DR_CUDA(site, cudaMallocHost, &m->bases[i], bytes)) return FALSE;
    m->pinned[i] = TRUE;
    return dr__buffer_init(g, i, m->bases[i], error);
  }
  if (buf->where == DR_WHERE_PAGEABLE) {
    /* Plain malloc'd memory, as a program's own arrays are: copies to and
     * from it are the driver's pageable path (staged, blocking the
     * issuing thread), which is the point of asking for it. */
    m->bases[i] = g_try_malloc(bytes);
    if (m->bases[i] == NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "%s: out of host memory (%zu bytes, where: pageable)",
                  what, bytes);
      return FALSE;
    }
    return dr__buffer_init(g, i, m->bases[i], error);
  }
  if (!dr__cuda_streams_use_device(m->streams, d, error)) return FALSE;
  if (m->storage && m->storage[i] != i)
    m->bases[i] = m->bases[m->storage[i]]; /* reuse: in that buffer's storage, allocated first */
  else if (!DR_CUDA(site, cudaMalloc, &m->bases[i], m->storage ? MAX(m->storage_bytes[i], 1) : bytes))
    return FALSE;
  g_autofree void *tmp = g_try_malloc(bytes);
  if (tmp == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "%s: out of host memory for its init", what);
    return FALSE;
  }
  /* On origin, never the legacy default stream; synchronized before tmp
   * goes away. */
  return dr__buffer_init(g, i, tmp, error) &&
         DR_CUDA(site, cudaMemcpyAsync, m->bases[i], tmp, dr_buffer_bytes(buf), cudaMemcpyHostToDevice,
                 origin) &&
         DR_CUDA(site, cudaStreamSynchronize, origin);
}

/* The pinned staging buffer of every peer copy whose devices have no
 * peer access (streams.c decided): the copy's bytes, whole. */
static gboolean stage_buffers(DrCudaMemory *m, GError **error) {
  const DrCudaStreams *s = m->streams;
  const DrPlan *plan = s->plan;
  for (DrId v = 0; s->peer && v < m->n_nodes; v++) {
    gint32 sd, dd;
    if (!dr_graph_copy_is_peer(m->graph, v, &sd, &dd)) continue;
    guint32 a = s->stream_device[plan->node_stream[v]];
    guint32 b = dr__cuda_streams_device_index(s, s->devices[a].ordinal == sd ? dd : sd);
    if (s->peer[a * s->n_devices + b] != DR_CUDA_PEER_STAGED) continue;
    const DrNode *n = dr_graph_node(m->graph, v);
    const DrAccess *src, *dst;
    dr__copy_accesses(m->graph, n, &src, &dst);
    gsize bytes = (dst->end - dst->begin) * dr_elem_size(dr_graph_buffer(m->graph, dst->buffer)->type);
    if (!DR_CUDA(dr__cuda_node_site(plan, v), cudaMallocHost, &m->stage[v], MAX(bytes, 1))) return FALSE;
  }
  return TRUE;
}

gboolean dr__cuda_memory_setup(DrCudaMemory *m, const DrCudaStreams *s, GError **error) {
  const DrGraph *g = m->graph;
  m->streams = s;
  gboolean on_device[DR_MAX_DEVICES] = {FALSE};
  /* Groups' storage first, then the buffers placed in it (reuse). */
  for (int pass = 0; pass < 2; pass++)
    for (DrId i = 0; i < m->n_buffers; i++) {
      gboolean alias = m->storage && m->storage[i] != i;
      if (dr_graph_buffer(g, i)->alloc_node != DR_NONE)
        on_device[buffer_device(m, i)] = TRUE; /* lives from its alloc node to its free node */
      else if (alias == (pass == 1) && !whole_run_buffer(m, i, error))
        return FALSE;
    }
  if (!stage_buffers(m, error)) return FALSE;
  for (guint32 d = 0; d < s->n_devices; d++) {
    if (!on_device[d]) continue;
    cudaMemPool_t pool = NULL;
    gboolean set = FALSE;
    guint64 threshold = dr_graph_release_threshold(g, s->devices[d].ordinal, &set);
    if (!set) threshold = G_MAXUINT64;
    g_autofree char *what =
        s->n_devices > 1 ? g_strdup_printf("the default memory pool of device %d", s->devices[d].ordinal)
                         : g_strdup("the device's default memory pool");
    DrCudaSite site = DR_SITE_SETUP(what);
    if (!DR_CUDA(site, cudaDeviceGetDefaultMemPool, &pool, s->devices[d].ordinal) ||
        !DR_CUDA(site, cudaMemPoolSetAttribute, pool, cudaMemPoolAttrReleaseThreshold, &threshold))
      return FALSE;
    m->pools[d] = pool;
    m->any_pool = TRUE;
  }
  return dr__cuda_streams_use_device(s, 0, error);
}

gboolean dr__cuda_memory_reset_high(DrCudaMemory *m, gboolean graph_mode, GError **error) {
  if (graph_mode || !m->any_pool || dr_cuda_api()->cudaMemPoolGetAttribute == NULL) return TRUE;
  guint64 zero = 0;
  for (guint32 d = 0; d < m->streams->n_devices; d++)
    if (m->pools[d] && !DR_CUDA(DR_SITE_SETUP("resetting the pool's high-water mark"),
                                cudaMemPoolSetAttribute, m->pools[d], cudaMemPoolAttrUsedMemHigh, &zero))
      return FALSE;
  return TRUE;
}

gboolean dr__cuda_memory_read_high(DrCudaMemory *m, gboolean graph_mode, GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  m->high = G_MAXUINT64;
  if (!m->any_pool) {
    m->high = 0; /* nothing stream-ordered */
    return TRUE;
  }
  if (graph_mode ? api->cudaDeviceGetGraphMemAttribute == NULL : api->cudaMemPoolGetAttribute == NULL)
    return TRUE;
  DrCudaSite site = DR_SITE_SETUP("reading the high-water mark of stream-ordered memory");
  /* Several devices: the sum of their marks (each device's peak, added:
   * what the plan's bound over every device's lifetimes covers). */
  guint64 sum = 0;
  for (guint32 d = 0; d < m->streams->n_devices; d++) {
    guint64 high = 0;
    if (m->pools[d] == NULL) continue;
    if (graph_mode ? !DR_CUDA(site, cudaDeviceGetGraphMemAttribute, m->streams->devices[d].ordinal,
                              cudaGraphMemAttrUsedMemHigh, &high)
                   : !DR_CUDA(site, cudaMemPoolGetAttribute, m->pools[d], cudaMemPoolAttrUsedMemHigh, &high))
      return FALSE;
    sum += high;
  }
  m->high = sum;
  return TRUE;
}

gboolean dr__cuda_memory_alloc(DrCudaMemory *m, DrId buffer, cudaStream_t st, DrCudaSite site,
                               GError **error) {
  const DrBuffer *buf = dr_graph_buffer(m->graph, buffer);
  if (!DR_CUDA(site, cudaMallocAsync, &m->bases[buffer], MAX(dr_buffer_bytes(buf), 1), st)) return FALSE;
  m->async_live[buffer] = TRUE;
  return TRUE;
}

gboolean dr__cuda_memory_free(DrCudaMemory *m, DrId buffer, cudaStream_t st, DrCudaSite site,
                              GError **error) {
  if (m->bases[buffer] == NULL) return TRUE;
  if (!DR_CUDA(site, cudaFreeAsync, m->bases[buffer], st)) return FALSE;
  m->bases[buffer] = NULL;
  m->async_live[buffer] = FALSE;
  return TRUE;
}

/* Bytes of access `a`'s slice. */
static gsize slice_bytes(const DrGraph *g, const DrAccess *a) {
  return (a->end - a->begin) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
}

gboolean dr__cuda_memory_copy(const DrCudaMemory *m, DrId v, cudaStream_t st, gboolean capturing,
                              DrCudaSite site, GError **error) {
  const DrGraph *g = m->graph;
  const DrAccess *src, *dst;
  dr__copy_accesses(g, dr_graph_node(g, v), &src, &dst);
  void *to = dr__slice_ptr(g, m->bases, dst);
  const void *from = dr__slice_ptr(g, m->bases, src);
  gsize bytes = slice_bytes(g, dst);
  gint32 sd, dd;
  if (G_LIKELY(!dr_graph_copy_is_peer(g, v, &sd, &dd)))
    return DR_CUDA(site, cudaMemcpyAsync, to, from, bytes, cudaMemcpyDefault, st);
  /* Stream capture refuses cudaMemcpyPeerAsync (the H200:
   * cudaErrorStreamCaptureUnsupported); under UVA a cudaMemcpyDefault copy
   * between the devices is the same copy-engine transfer, as a memcpy node. */
  if (m->stage[v] == NULL && capturing)
    return DR_CUDA(site, cudaMemcpyAsync, to, from, bytes, cudaMemcpyDefault, st);
  if (m->stage[v] == NULL) return DR_CUDA(site, cudaMemcpyPeerAsync, to, dd, from, sd, bytes, st);
  /* No peer access: src -> pinned host -> dst, both on st, so the second
   * starts after the first in stream order (one memcpy node after the
   * other in a capture). */
  return DR_CUDA(site, cudaMemcpyAsync, m->stage[v], from, bytes, cudaMemcpyDeviceToHost, st) &&
         DR_CUDA(site, cudaMemcpyAsync, to, m->stage[v], bytes, cudaMemcpyHostToDevice, st);
}

gboolean dr__cuda_memory_set(const DrCudaMemory *m, const DrNode *node, cudaStream_t st, DrCudaSite site,
                             GError **error) {
  const DrGraph *g = m->graph;
  const DrAccess *dst = dr__node_access(g, node, 0);
  return DR_CUDA(site, cudaMemsetAsync, dr__slice_ptr(g, m->bases, dst), node->memset_value,
                 slice_bytes(g, dst), st);
}

void dr__cuda_memory_forget_async(DrCudaMemory *m) {
  for (guint32 i = 0; i < m->n_buffers; i++)
    if (m->async_live[i]) {
      m->async_live[i] = FALSE;
      m->bases[i] = NULL;
    }
}

gboolean dr__cuda_memory_readable(const DrCudaMemory *m, DrId buffer, GError **error) {
  if (m->bases[buffer] != NULL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "buffer '%s' is not live after the run",
              dr_graph_buffer(m->graph, buffer)->name);
  return FALSE;
}

gboolean dr__cuda_memory_read(const DrCudaMemory *m, DrId buffer, void *dst, cudaStream_t origin,
                              GError **error) {
  const DrBuffer *buf = dr_graph_buffer(m->graph, buffer);
  g_autofree char *what = g_strdup_printf("reading back buffer '%s'", buf->name);
  DrCudaSite site = DR_SITE_SETUP(what);
  return DR_CUDA(site, cudaMemcpyAsync, dst, m->bases[buffer], dr_buffer_bytes(buf), cudaMemcpyDefault,
                 origin) &&
         DR_CUDA(site, cudaStreamSynchronize, origin);
}

/* The kind of memory `ptr` is, for the error message. */
static const char *memory_kind(enum cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
    default:
      return "pageable host memory (not known to CUDA)";
  }
}

gboolean dr__cuda_memory_bind(DrCudaMemory *m, DrId buffer, void *ptr, int device, DrCudaBase *old,
                              GError **error) {
  const DrCudaApi *api = dr_cuda_api();
  const DrBuffer *buf = dr_graph_buffer(m->graph, buffer);
  g_autofree char *what = g_strdup_printf("binding buffer '%s' to external memory", buf->name);
  DrCudaSite site = DR_SITE_SETUP(what);
  if (!dr_plan_storage_bindable(m->graph, m->storage, buffer, error)) return FALSE;
  if (api->cudaPointerGetAttributes != NULL) {
    struct cudaPointerAttributes attr;
    memset(&attr, 0, sizeof attr);
    if (!DR_CUDA(site, cudaPointerGetAttributes, &attr, ptr)) return FALSE;
    gboolean fits =
        buf->where == DR_WHERE_DEVICE ? attr.type == cudaMemoryTypeManaged ||
                                            (attr.type == cudaMemoryTypeDevice && attr.device == device)
        : buf->where == DR_WHERE_HOST ? attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeManaged
                                      : attr.type != cudaMemoryTypeDevice;
    if (!fits) {
      g_autofree char *detail =
          buf->where == DR_WHERE_DEVICE && attr.type == cudaMemoryTypeDevice
              ? g_strdup_printf(" of device %d, not %d", attr.device, device)
              : g_strdup(buf->where == DR_WHERE_HOST ? " (pin it with cudaHostRegister)" : "");
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "buffer '%s' lives %s; the memory bound to it is %s%s",
                  buf->name,
                  buf->where == DR_WHERE_DEVICE ? "on the device"
                  : buf->where == DR_WHERE_HOST ? "in pinned host memory"
                                                : "in host memory",
                  memory_kind(attr.type), detail);
      return FALSE;
    }
  }
  *old = (DrCudaBase){m->bases[buffer], m->pinned[buffer], m->external[buffer]};
  m->bases[buffer] = ptr;
  m->pinned[buffer] = FALSE;
  m->external[buffer] = TRUE;
  return TRUE;
}

void dr__cuda_memory_unbind(DrCudaMemory *m, DrId buffer, const DrCudaBase *old) {
  m->bases[buffer] = old->ptr;
  m->pinned[buffer] = old->pinned;
  m->external[buffer] = old->external;
}

void dr__cuda_memory_release(const DrCudaBase *old) {
  const DrCudaApi *api = dr_cuda_api();
  /* A failed release has nothing to undo (the memory is lost to the
   * context at worst). */
  if (old->external || old->ptr == NULL)
    return;
  else if (old->pinned)
    (void)api->cudaFreeHost(old->ptr);
  else
    (void)api->cudaFree(old->ptr);
}

/* A host buffer's write, run in stream order by a host function. */
typedef struct {
  void *dst;
  void *src; /* owned */
  gsize bytes;
} HostWrite;

static void CUDART_CB host_write(void *data) {
  HostWrite *w = data;
  memcpy(w->dst, w->src, w->bytes);
  g_free(w->src);
  g_free(w);
}

static void CUDART_CB host_free(void *data) { g_free(data); }

gboolean dr__cuda_memory_write(const DrCudaMemory *m, DrId buffer, guint64 offset, const void *data,
                               guint64 bytes, cudaStream_t st, GError **error) {
  const DrBuffer *buf = dr_graph_buffer(m->graph, buffer);
  g_autofree char *what = g_strdup_printf("writing buffer '%s'", buf->name);
  DrCudaSite site = DR_SITE_SETUP(what);
  char *dst = (char *)m->bases[buffer] + offset;
  if (buf->where != DR_WHERE_DEVICE) {
    HostWrite *w = g_new(HostWrite, 1);
    *w = (HostWrite){dst, g_memdup2(data, bytes), bytes};
    if (DR_CUDA(site, cudaLaunchHostFunc, st, host_write, w)) return TRUE;
    g_free(w->src);
    g_free(w);
    return FALSE;
  }
  /* The copy is freed by a host function after it, in stream order, so
   * it outlives the transfer however the runtime stages pageable memory. */
  void *tmp = g_memdup2(data, bytes);
  if (!DR_CUDA(site, cudaMemcpyAsync, dst, tmp, bytes, cudaMemcpyHostToDevice, st)) {
    g_free(tmp);
    return FALSE;
  }
  if (DR_CUDA(site, cudaLaunchHostFunc, st, host_free, tmp)) return TRUE;
  /* Not enqueued: wait for the copy before the bytes go. */
  (void)dr_cuda_api()->cudaStreamSynchronize(st);
  g_free(tmp);
  return FALSE;
}

void dr__cuda_memory_close(DrCudaMemory *m, cudaStream_t origin) {
  const DrCudaApi *api = dr_cuda_api();
  const DrCudaStreams *s = m->streams;
  gboolean several = s != NULL && s->n_devices > 1;
  gboolean freed_async = FALSE;
  for (guint32 i = 0; m->bases && i < m->n_buffers; i++) {
    if (m->bases[i] == NULL || m->external[i] || (m->storage && m->storage[i] != i))
      continue; /* none, the caller's, or a reuse alias */
    freed_async |= m->async_live[i];
    /* Several devices: released with the buffer's device selected, a
     * stream-ordered one on that device's setup stream. */
    guint32 d = several && !m->pinned[i] ? buffer_device(m, i) : 0;
    if (several) (void)api->cudaSetDevice(s->devices[d].ordinal);
    if (m->async_live[i])
      (void)api->cudaFreeAsync(m->bases[i], several ? dr__cuda_streams_setup_of(s, d) : origin);
    else if (m->pinned[i])
      (void)api->cudaFreeHost(m->bases[i]);
    else if (dr_graph_buffer(m->graph, i)->where == DR_WHERE_PAGEABLE)
      g_free(m->bases[i]);
    else
      (void)api->cudaFree(m->bases[i]);
  }
  for (guint32 v = 0; m->stage && v < m->n_nodes; v++)
    if (m->stage[v]) (void)api->cudaFreeHost(m->stage[v]);
  g_clear_pointer(&m->stage, g_free);
  /* Only a failed iteration leaves stream-ordered memory live. */
  if (freed_async && several)
    (void)dr__cuda_streams_sync(s, "releasing stream-ordered buffers", NULL);
  else if (freed_async)
    (void)api->cudaDeviceSynchronize();
  if (several) (void)api->cudaSetDevice(s->devices[0].ordinal);
  g_free(m->bases);
  g_free(m->pinned);
  g_free(m->async_live);
  g_free(m->external);
  m->bases = NULL;
  m->pinned = m->async_live = m->external = NULL;
}

gboolean dr__cuda_memory_mode_check(const DrGraph *g, DrMode mode, GError **error) {
  if (mode != DR_MODE_GRAPH) return TRUE;
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++) {
    DrId b = dr_graph_copy_pageable(g, i);
    if (b == DR_NONE) continue;
    const DrNode *n = dr_graph_node(g, i);
    const DrBuffer *buf = dr_graph_buffer(g, b);
    g_set_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE,
                "%s:%u:%u: node '%s': graph mode does not capture a copy of pageable host memory (buffer "
                "'%s' is where: pageable): CUDA copies pageable memory synchronously with the host, through "
                "a staging buffer, which a replayed graph does not do; use --mode=streams, or where: host",
                n->loc.file, n->loc.line, n->loc.col, n->id, buf->name);
    return FALSE;
  }
  return TRUE;
}
