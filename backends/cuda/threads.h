/* threads.h: internal to backends/cuda/: streams mode's issue from several
 * host threads (threads.c), one per group of plan streams.
 *
 * Why: issuing is host-bound on wide DAGs (a launch costs the issuing
 * thread ~3-4 us) and the driver scales to ~2.5x with 8 threads that each
 * own their streams (GPU-NOTES.md, 2026-12-01). What: thread g issues the
 * steps of the streams k with k % n_threads == g, in plan order; the
 * calling thread is group 0, the others are persistent workers woken once
 * per iteration. Every stream is issued by one thread in plan order, so
 * stream order is the plan's. A cross-stream wait is still a
 * cudaStreamWaitEvent on the waited node's completion event (issued by the
 * step function, streams.c), but when that node belongs to another group
 * the thread first blocks on the HOST until the owner has published it:
 * its cudaEventRecord of THIS iteration has returned. Without that, the
 * wait could be issued before the record and wait on the previous
 * iteration's (or on nothing), dropping a DAG edge.
 *
 * Deadlock freedom: every thread issues in the global plan order and a
 * step waits only on earlier steps (plan.h, P3). Among the blocked
 * threads take the one whose blocked step s comes first in plan order; it
 * waits on u < s, whose owner has not published u, so that owner is
 * blocked at a step <= u < s: a contradiction. So some thread always
 * makes progress. A failure sets `abort`, which releases every waiter. */
#ifndef DAGRUN_BACKENDS_CUDA_THREADS_H
#define DAGRUN_BACKENDS_CUDA_THREADS_H

#include <glib.h>

#include "ir/plan.h"

G_BEGIN_DECLS

typedef struct DrCudaThreads DrCudaThreads;

/* Issues one step (its waits, work and completion event): issue.c's walk. */
typedef gboolean (*DrCudaStepFn)(const void *walk, const DrPlanStep *step, GError **error);
/* Run once by each worker thread before its first step (the CUDA device
 * is per host thread: cudaSetDevice), NULL for none. */
typedef gboolean (*DrCudaThreadInitFn)(gpointer data, GError **error);

/* The most issue threads, whatever is asked (the probe saw no gain past 8). */
#define DR_CUDA_MAX_ISSUE_THREADS ((guint32)DR_ISSUE_THREADS_MAX)

/* How many threads issue `plan` in streams mode. asked > 0: that many,
 * at most DR_CUDA_MAX_ISSUE_THREADS and the plan's streams. asked 0
 * (auto): min(streams / 4, steps / 512, 8), at least 1, so narrow or
 * small DAGs (where waking threads costs more than it saves) keep one.
 * Always 1 when a node is a collective (NCCL needs one issue order on
 * every rank: file order), a loop (host-driven trips), or the plan spans
 * several devices. */
guint32 dr__cuda_threads_count(const DrPlan *plan, guint32 asked);

/* Starts n_threads - 1 workers for `plan` (borrowed; n_threads >= 2).
 * `init` (with `init_data`) runs on each worker before its first step.
 * Free with dr__cuda_threads_free, which stops and joins them. */
DrCudaThreads *dr__cuda_threads_new(const DrPlan *plan, guint32 n_threads, DrCudaThreadInitFn init,
                                    gpointer init_data);
void dr__cuda_threads_free(DrCudaThreads *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrCudaThreads, dr__cuda_threads_free)

guint32 dr__cuda_threads_n(const DrCudaThreads *t);

/* Issues every step of the plan once through `fn(walk, step)`, each
 * group's on its thread (the caller's is group 0), with the host ordering
 * above. Returns when every thread has stopped issuing. FALSE with the
 * first failure's error: the other threads stop at their next step (what
 * they issued stays issued, as when one thread fails midway). */
gboolean dr__cuda_threads_issue(DrCudaThreads *t, DrCudaStepFn fn, const void *walk, GError **error);

G_END_DECLS

#endif
