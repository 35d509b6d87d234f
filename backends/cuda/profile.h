/* profile.h: internal to backends/cuda/: what a profiler (Nsight Systems,
 * Nsight Compute) sees of a run (profile.c): NVTX ranges named after the
 * plan's nodes, the plan's streams named, and the profiler's capture range
 * around the timed iterations.
 *
 * NVTX v3 is header-only: with no tool attached, its first call finds no
 * injection library and every later call is a test of a NULL pointer. This
 * part goes one step further: the domain "dagrun" is created once per
 * process and is NULL when no tool is attached (or DAGRUN_NVTX=0), and
 * then nothing else is done (a NULL test before and after each node on the
 * eager hot path: 6 instructions, measured with tests/backends:issue_cost,
 * profile.c). With a tool attached:
 *   - a push/pop range per node issue, in domain "dagrun", its message the
 *     node's id (a string registered once at open), its payload the run's
 *     iteration number (warmups first, counting from 0); a capture's node
 *     ranges (graph mode's setup) have no payload;
 *   - a start/end range per iteration's issue ("warmup" or "iteration",
 *     same payload), a process range so that a node's range is alone on
 *     the push/pop stack: `ncu --nvtx --nvtx-include "dagrun@ID/"` selects
 *     that node's kernels;
 *   - origin and each plan stream named ("origin", "stream K (priority)",
 *     as the trace names them).
 * The capture range (cudaProfilerStart/Stop, through DrCudaApi) is not
 * NVTX and is always made: see backend.c. This part owns no CUDA handle. */
#ifndef DAGRUN_BACKENDS_CUDA_PROFILE_H
#define DAGRUN_BACKENDS_CUDA_PROFILE_H

#include <nvtx3/nvToolsExt.h>

#include "backends/cuda/streams.h"

G_BEGIN_DECLS

typedef struct {
  nvtxDomainHandle_t domain;     /* NULL: no tool attached, every call below is a no-op */
  nvtxStringHandle_t *node_name; /* [n_nodes]: the node ids, registered */
  nvtxStringHandle_t warmup_name, iteration_name;
  /* The payload of the node ranges: the iteration being issued, or none
   * (NVTX_PAYLOAD_UNKNOWN: a capture outside any iteration). */
  nvtxPayloadType_t payload_type;
  guint32 iteration;
} DrCudaProfile;

/* Gets the "dagrun" domain (NULL when no tool is attached; then nothing
 * else), registers the node ids and names origin and the plan's streams of
 * `s` (open). No CUDA call; cannot fail. */
void dr__cuda_profile_open(DrCudaProfile *p, const DrPlan *plan, const DrCudaStreams *s);
/* Frees the host arrays; NULL-safe fields, the domain is the process's. */
void dr__cuda_profile_close(DrCudaProfile *p);

/* Opens the range of iteration `iteration` (`warmup`: one of the warmups)
 * around its issue; returns its id for dr__cuda_profile_iteration_end. The
 * node ranges issued until then carry `iteration` as payload. */
nvtxRangeId_t dr__cuda_profile_iteration_begin(DrCudaProfile *p, guint32 iteration, gboolean warmup);
void dr__cuda_profile_iteration_end(DrCudaProfile *p, nvtxRangeId_t id);

/* Around node v's issue (its waits, work, stamp and completion event). */
static inline void dr__cuda_profile_node_begin(const DrCudaProfile *p, DrId v) {
  if (G_LIKELY(p->domain == NULL)) return;
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = p->node_name[v];
  a.payloadType = p->payload_type;
  a.payload.uiValue = p->iteration;
  (void)nvtxDomainRangePushEx(p->domain, &a);
}

static inline void dr__cuda_profile_node_end(const DrCudaProfile *p) {
  if (G_LIKELY(p->domain == NULL)) return;
  (void)nvtxDomainRangePop(p->domain);
}

G_END_DECLS

#endif
