/* memory.h: internal to backends/cuda/: the CUDA backend's buffers
 * (memory.c).
 *
 * This part owns every buffer's memory: whole-run device buffers
 * (cudaMalloc), host buffers (cudaMallocHost, pinned), both filled with
 * their `init:` before the first iteration, and stream-ordered buffers,
 * which alloc and free nodes get from and give back to the device's
 * default pool (cudaMallocAsync, cudaFreeAsync) on the node's stream.
 * It also does the work of copy and memset nodes: a peer copy (between two
 * devices, or a device and itself with both `device:` named) is
 * cudaMemcpyPeerAsync, or, where the two devices have no peer access, two
 * copies through a pinned host staging buffer of its own, both in the
 * node's stream order. With several devices each device buffer is
 * allocated on its device (selected first), each device with a
 * stream-ordered buffer has its default pool's release threshold set
 * (memory.release_threshold, per device), and the high-water mark is the
 * sum over the devices. It owns no stream: the caller names the one to
 * use. */
#ifndef DAGRUN_BACKENDS_CUDA_MEMORY_H
#define DAGRUN_BACKENDS_CUDA_MEMORY_H

#include "backends/cuda/streams.h"

G_BEGIN_DECLS

typedef struct {
  const DrGraph *graph; /* borrowed */
  guint32 n_buffers;
  void **bases;         /* [n_buffers]: device or pinned host memory, NULL: none (yet) */
  gboolean *pinned;     /* [n_buffers]: bases[i] is cudaMallocHost memory */
  gboolean *async_live; /* [n_buffers]: bases[i] came from cudaMallocAsync */
  gboolean *external;   /* [n_buffers]: bases[i] is the library user's (never freed) */
  /* Reuse (the plan's storage, storage_bytes; NULL: none): a whole-run
   * buffer b with storage[b] != b points into that buffer's allocation. */
  const DrId *storage;
  const guint64 *storage_bytes;
  const DrCudaStreams *streams; /* borrowed, from setup on: the devices */
  /* [device index]: the device's default pool, once setup found a
   * stream-ordered buffer on it; NULL: none. */
  cudaMemPool_t pools[DR_MAX_DEVICES];
  gboolean any_pool;
  /* [n_nodes]: a staged peer copy's pinned host buffer (its bytes), else
   * NULL. */
  void **stage;
  guint32 n_nodes;
  /* The high-water mark of stream-ordered bytes the last run measured
   * (dr__cuda_memory_read_high); G_MAXUINT64: not measured. */
  guint64 high;
} DrCudaMemory;

/* Prepares `m` for `graph`'s buffers; no memory yet, no CUDA call. */
void dr__cuda_memory_open(DrCudaMemory *m, const DrGraph *graph);

/* Allocates every whole-run buffer and fills it with its init contents
 * (device buffers through a host copy on `s`'s origin), then sets the
 * release threshold of the default pool of `s`'s device when a buffer is
 * stream-ordered (memory.release_threshold; default: keep everything, so
 * steady-state allocations cost ~1.5 µs, see GPU-NOTES.md). Fails as
 * DR_CUDA and dr__buffer_init do. */
gboolean dr__cuda_memory_setup(DrCudaMemory *m, const DrCudaStreams *s, GError **error);

/* Before any CUDA call: FALSE with DR_ERROR_UNAVAILABLE, naming the node,
 * when `mode` is graph mode and a copy touches a `where: pageable` buffer
 * (graph mode does not capture pageable copies; docs/format.md). */
gboolean dr__cuda_memory_mode_check(const DrGraph *g, DrMode mode, GError **error);

/* Before the first timed iteration of a run (streams mode): resets the
 * pool's high-water mark (cudaMemPoolAttrUsedMemHigh set to 0), so what
 * dr__cuda_memory_read_high reads covers the timed iterations (and, when
 * iterations overlap on the host, an allocation of the last warmup still in
 * flight). Graph mode resets nothing: a graph's allocations stay mapped to
 * its executable from its first launch on (cudaGraphMemAttrUsedMemHigh
 * would not rise again after a reset), and every launch uses the same
 * footprint. Nothing when no buffer is stream-ordered or the table has no
 * cudaMemPoolGetAttribute. Fails as DR_CUDA does. */
gboolean dr__cuda_memory_reset_high(DrCudaMemory *m, gboolean graph_mode, GError **error);

/* After the last iteration of a run, the device drained: sets m->high to
 * the most stream-ordered bytes live at once, as the runtime counts them:
 * the default pool's cudaMemPoolAttrUsedMemHigh in streams mode, the
 * device's cudaGraphMemAttrUsedMemHigh in graph mode; 0 when no buffer is
 * stream-ordered; G_MAXUINT64 (not measured) when the table lacks the
 * entry. Fails as DR_CUDA does. */
gboolean dr__cuda_memory_read_high(DrCudaMemory *m, gboolean graph_mode, GError **error);

/* Alloc node: buffer `buffer` from the default pool, ordered on `st`. */
gboolean dr__cuda_memory_alloc(DrCudaMemory *m, DrId buffer, cudaStream_t st, DrCudaSite site,
                               GError **error);

/* Free node: buffer `buffer` back to the pool, ordered on `st` (nothing
 * when it has no memory). */
gboolean dr__cuda_memory_free(DrCudaMemory *m, DrId buffer, cudaStream_t st, DrCudaSite site, GError **error);

/* Copy node `v`: its destination slice from its source, on `st` (a peer
 * copy as the header says: cudaMemcpyPeerAsync eagerly; while `capturing`,
 * which refuses that call, a cudaMemcpyDefault copy between the devices'
 * unified addresses). */
gboolean dr__cuda_memory_copy(const DrCudaMemory *m, DrId v, cudaStream_t st, gboolean capturing,
                              DrCudaSite site, GError **error);

/* Memset node `node`: its slice set to its byte value, on `st`. */
gboolean dr__cuda_memory_set(const DrCudaMemory *m, const DrNode *node, cudaStream_t st, DrCudaSite site,
                             GError **error);

/* After a capture, which made the graph's memory nodes the owners of what
 * cudaMallocAsync returned while capturing (or lost it with a failed
 * capture): forgets those pointers, so close does not free them. */
void dr__cuda_memory_forget_async(DrCudaMemory *m);

/* TRUE when buffer `buffer` has memory to read back; else FALSE with
 * DR_ERROR_RUNTIME (no CUDA call). */
gboolean dr__cuda_memory_readable(const DrCudaMemory *m, DrId buffer, GError **error);

/* Copies readable buffer `buffer` (all its bytes) into `dst` through
 * `origin` and waits for it. Fails as DR_CUDA does. */
gboolean dr__cuda_memory_read(const DrCudaMemory *m, DrId buffer, void *dst, cudaStream_t origin,
                              GError **error);

/* A buffer's memory as it was before a bind. */
typedef struct {
  void *ptr;
  gboolean pinned, external;
} DrCudaBase;

/* External memory (dr_runner_bind_buffer): checks that `ptr` is memory
 * whole-run buffer `buffer` can live in (cudaPointerGetAttributes: device
 * or managed memory of device `device` for a device buffer; pinned,
 * registered or managed host memory for a host buffer), then makes `ptr`
 * its base, never to be freed here, and its memory before into *old: the
 * caller then either makes the nodes follow and releases *old
 * (dr__cuda_memory_release), or puts it back (dr__cuda_memory_unbind).
 * FALSE with DR_ERROR_USAGE for memory of the wrong kind, or as DR_CUDA
 * fails; the buffer is then unchanged. */
gboolean dr__cuda_memory_bind(DrCudaMemory *m, DrId buffer, void *ptr, int device, DrCudaBase *old,
                              GError **error);
void dr__cuda_memory_unbind(DrCudaMemory *m, DrId buffer, const DrCudaBase *old);
/* Frees `old` when it was dagrun's (the device must be idle). */
void dr__cuda_memory_release(const DrCudaBase *old);

/* Enqueues a copy of `bytes` of `data` to whole-run buffer `buffer` at
 * byte `offset` on `st` (any stream, the legacy one too), from a host
 * copy this call makes, so `data` may be reused at once: a device buffer
 * takes cudaMemcpyAsync from it and a host function after that frees it,
 * a host buffer one host function that copies and frees, both in stream
 * order and without waiting. Fails as DR_CUDA does. */
gboolean dr__cuda_memory_write(const DrCudaMemory *m, DrId buffer, guint64 offset, const void *data,
                               guint64 bytes, cudaStream_t st, GError **error);

/* Releases every buffer; stream-ordered ones still live (after a failed
 * iteration) are freed on `origin` and drained. */
void dr__cuda_memory_close(DrCudaMemory *m, cudaStream_t origin);

G_END_DECLS

#endif
