/* batch.h: internal to backends/cuda/: streams mode's copy batches
 * (batch.c): a run of copy nodes on one plan stream issued as one
 * cudaMemcpyBatchAsync instead of one cudaMemcpyAsync each.
 *
 * Why: the host time of issuing copies (the H200, 2026-12-01: 64 copies of
 * 1 MiB took 91 us as 64 cudaMemcpyAsync calls, 33 us as one batch). What
 * CUDA promises: the batch as a whole runs in stream order, its copies in
 * any order or at once. So a batch holds only copies that stream order
 * alone would not have to order among themselves:
 *  - consecutive on their stream (nothing else between them on it), the
 *    first (the head) with any waits, every later one (a member) with none;
 *  - no DAG edge between two of them (a hazard on overlapping bytes, an
 *    `after:`, a memory-budget edge), and, checked again at each issue on
 *    the pointers of that iteration, no two whose bytes overlap where one
 *    writes (buffers that share storage under reuse, external memory):
 *    such a pair splits the batch there;
 *  - only the last may have a completion event (another stream waits on
 *    it): recorded after the batch, it is where stream order puts it;
 *  - memory kinds the call takes as cudaMemcpyAsync would: device and
 *    pinned host memory (a device buffer bound to external memory too);
 *    never a peer copy (cudaMemcpyPeerAsync, or staged through the host),
 *    a copy touching `where: pageable` memory (CUDA's pageable path blocks
 *    the issuing thread; kept as it was) or a host buffer bound to external
 *    memory (which may be pageable: the bind checks it only where the
 *    table has cudaPointerGetAttributes), nor an empty copy;
 *  - at most DR_CUDA_BATCH_MAX copies.
 * Members are issued at their head's place in the walk; at their own place
 * nothing is left to do. A member has no wait, so moving it earlier in the
 * walk (past other streams' steps) drops no edge, and everything it reads
 * the pointers of (a stream-ordered buffer's alloc) was issued before its
 * head.
 *
 * Not in graph mode (a batch cannot be captured), and not when the run
 * times nodes (--timing=events or stamps): a batch has one start and one
 * end on its stream, so its copies could not have times of their own, and
 * a timing event (~1.7 us) or stamp launch (~4 us) per copy costs more
 * host time than batching saves. DAGRUN_COPY_BATCH=0 turns batching off;
 * a table without cudaMemcpyBatchAsync (an older shim) and a runtime that
 * answers cudaErrorNotSupported or cudaErrorCallRequiresNewerDriver (a
 * driver before 12.8) get one cudaMemcpyAsync per copy, as before. This
 * part owns no CUDA handle and no stream. */
#ifndef DAGRUN_BACKENDS_CUDA_BATCH_H
#define DAGRUN_BACKENDS_CUDA_BATCH_H

#include "backends/cuda/memory.h"

G_BEGIN_DECLS

/* The most copies in one batch (the overlap check is quadratic in it). */
#define DR_CUDA_BATCH_MAX 64u

typedef struct DrCudaBatch DrCudaBatch;

/* The batches of streams mode for `plan` (borrowed) as the rules above
 * form them; NULL when none forms: `timed` (the run times nodes), a table
 * without cudaMemcpyBatchAsync, DAGRUN_COPY_BATCH=0, or no two copies
 * that may share a batch. No CUDA call. Free with dr__cuda_batch_free. */
DrCudaBatch *dr__cuda_batch_new(const DrPlan *plan, gboolean timed);
void dr__cuda_batch_free(DrCudaBatch *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrCudaBatch, dr__cuda_batch_free)

/* How many batches formed. */
guint32 dr__cuda_batch_count(const DrCudaBatch *c);

/* Node v's part: 0 when it is in no batch; else its batch's copies in
 * plan order, *n of them, with v first (v heads it) or not (a member,
 * issued with its head). */
const DrId *dr__cuda_batch_of(const DrCudaBatch *c, DrId v, guint32 *n);

/* Enqueues the copies of the batch that node `head` heads on `st`, its
 * stream, after the head's waits: one cudaMemcpyBatchAsync, or several
 * where bytes overlap, a single copy as cudaMemcpyAsync; one
 * cudaMemcpyAsync each once the runtime has refused batches. A failure
 * names the first copy of the failed call. Called by the one thread that
 * issues `st`. Fails as DR_CUDA does. */
gboolean dr__cuda_batch_issue(DrCudaBatch *c, const DrCudaMemory *m, const DrCudaApi *api, DrId head,
                              cudaStream_t st, GError **error);

G_END_DECLS

#endif
