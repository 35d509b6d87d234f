/* profile.c: NVTX ranges and names for profilers (profile.h says what a
 * tool sees). The domain is made once per process, the node ids are
 * registered once per open, and nothing is formatted per launch: an
 * iteration's number travels as the ranges' payload.
 *
 * Cost with no tool attached (tests/backends:issue_cost under callgrind,
 * -c opt, 2000 scale_f32 nodes x 5 iterations, eager, timing off):
 * dr__cuda_issue_iteration went from 90.2 to 96.2 instructions per node
 * and iteration (the two NULL tests around each node). */
#include "backends/cuda/profile.h"

#include <nvtx3/nvToolsExtCudaRt.h>
#include <string.h>

/* The process's "dagrun" domain, or NULL when no tool is attached (NVTX's
 * first call looks for one, once) or DAGRUN_NVTX=0 asks for no ranges (a
 * profile of the same run without dagrun's annotations). */
static nvtxDomainHandle_t profile_domain(void) {
  static gsize once = 0;
  static nvtxDomainHandle_t domain;
  if (g_once_init_enter(&once)) {
    const char *env = g_getenv("DAGRUN_NVTX");
    domain = env != NULL && strcmp(env, "0") == 0 ? NULL : nvtxDomainCreateA("dagrun");
    g_once_init_leave(&once, 1);
  }
  return domain;
}

void dr__cuda_profile_open(DrCudaProfile *p, const DrPlan *plan, const DrCudaStreams *s) {
  memset(p, 0, sizeof *p);
  p->payload_type = NVTX_PAYLOAD_UNKNOWN;
  p->domain = profile_domain();
  if (p->domain == NULL) return;
  const DrGraph *g = plan->graph;
  guint32 n = dr_graph_n_nodes(g);
  p->node_name = g_new0(nvtxStringHandle_t, MAX(n, 1));
  for (DrId v = 0; v < n; v++)
    p->node_name[v] = nvtxDomainRegisterStringA(p->domain, dr_graph_node(g, v)->id);
  p->warmup_name = nvtxDomainRegisterStringA(p->domain, "warmup");
  p->iteration_name = nvtxDomainRegisterStringA(p->domain, "iteration");
  if (s->origin) nvtxNameCudaStreamA(s->origin, "origin");
  for (guint32 k = 0; k < s->n_streams; k++) {
    if (s->stream == NULL || s->stream[k] == NULL) continue;
    const DrStream *st = &g_array_index(plan->streams, DrStream, k);
    g_autofree char *name = g_strdup_printf("stream %u (%s)", k, dr_priority_name(st->priority));
    nvtxNameCudaStreamA(s->stream[k], name);
  }
}

void dr__cuda_profile_close(DrCudaProfile *p) {
  g_clear_pointer(&p->node_name, g_free);
  p->domain = NULL;
}

nvtxRangeId_t dr__cuda_profile_iteration_begin(DrCudaProfile *p, guint32 iteration, gboolean warmup) {
  if (G_LIKELY(p->domain == NULL)) return 0;
  p->payload_type = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
  p->iteration = iteration;
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = warmup ? p->warmup_name : p->iteration_name;
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
  a.payload.uiValue = iteration;
  return nvtxDomainRangeStartEx(p->domain, &a);
}

void dr__cuda_profile_iteration_end(DrCudaProfile *p, nvtxRangeId_t id) {
  if (G_LIKELY(p->domain == NULL)) return;
  nvtxDomainRangeEnd(p->domain, id);
  p->payload_type = NVTX_PAYLOAD_UNKNOWN;
}
