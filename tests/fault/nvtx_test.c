/* nvtx_test.c: what a profiler sees of a run, on the CPU: a statically
 * linked NVTX injection (InitializeInjectionNvtx2_fnptr, the NVTX v3
 * loader's third way in) records every range the CUDA backend makes while
 * it runs on the fake CUDA table (fake_cuda.h). Its own binary, because an
 * injection is the process's for good.
 *
 * Checked: one push/pop range per node issue, named by the node's id (a
 * registered string in domain "dagrun") with the iteration number as
 * payload, alone on the push/pop stack; one start/end range per
 * iteration's issue ("warmup" / "iteration"); every range closed; in graph
 * mode node ranges only inside the capture (no payload) and none around
 * replays; the plan's streams named. */
#include <glib.h>
#include <nvtx3/nvToolsExt.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

/* ---- the injection: a log of what NVTX was told ---- */

static struct {
  GPtrArray *strings; /* registered: handle i+1 is strings[i] */
  GString *log;       /* one line per event */
  int depth;          /* push/pop stack depth */
  int max_depth;
  int open_ranges; /* start/end ranges not yet ended */
  guint stream_names;
  char *domain;
} rec;

static const char *message_of(const nvtxEventAttributes_t *a) {
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    gsize i = GPOINTER_TO_SIZE(a->message.registered);
    return i >= 1 && i <= rec.strings->len ? rec.strings->pdata[i - 1] : "?bad-handle";
  }
  return a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?";
}

static void log_event(const char *what, const nvtxEventAttributes_t *a) {
  g_string_append_printf(rec.log, "%s %s", what, message_of(a));
  if (a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT32)
    g_string_append_printf(rec.log, " %u", a->payload.uiValue);
  g_string_append_c(rec.log, '\n');
}

static nvtxDomainHandle_t NVTX_API inj_domain_create(const char *name) {
  g_free(rec.domain);
  rec.domain = g_strdup(name);
  return (nvtxDomainHandle_t)GSIZE_TO_POINTER(0x1234);
}

static nvtxStringHandle_t NVTX_API inj_register(nvtxDomainHandle_t d, const char *s) {
  g_ptr_array_add(rec.strings, g_strdup(s));
  return (nvtxStringHandle_t)GSIZE_TO_POINTER(rec.strings->len);
}

static int NVTX_API inj_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  log_event("push", a);
  rec.depth++;
  rec.max_depth = MAX(rec.max_depth, rec.depth);
  return rec.depth;
}

static int NVTX_API inj_pop(nvtxDomainHandle_t d) {
  g_string_append(rec.log, "pop\n");
  return --rec.depth;
}

static nvtxRangeId_t NVTX_API inj_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  log_event("start", a);
  rec.open_ranges++;
  return 7;
}

static void NVTX_API inj_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  g_string_append(rec.log, "end\n");
  rec.open_ranges--;
}

static void NVTX_API inj_name_stream(cudaStream_t s, const char *name) { rec.stream_names++; }

static void set_fn(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
  if (id < size && table[id] != NULL) *table[id] = fn;
}

static int NVTX_API inject(NvtxGetExportTableFunc_t get) {
  const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
  if (cb == NULL) return 0;
  NvtxFunctionTable t = NULL;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size)) return 0;
  set_fn(t, size, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)inj_domain_create);
  set_fn(t, size, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)inj_register);
  set_fn(t, size, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)inj_push);
  set_fn(t, size, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)inj_pop);
  set_fn(t, size, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)inj_start);
  set_fn(t, size, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)inj_end);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CUDART, &t, &size))
    set_fn(t, size, NVTX_CBID_CUDART_NameCudaStreamA, (NvtxFunctionPointer)inj_name_stream);
  return 1;
}

/* The NVTX loader calls this when no NVTX_INJECTION64_PATH is set. */
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = inject;

/* ---- the runs ---- */

static const char yaml[] =
    "dagrun: 1\n"
    "name: nvtx\n"
    "buffers:\n"
    "  a: {type: f32, count: 1Ki, init: iota}\n"
    "  b: {type: f32, count: 1Ki}\n"
    "  c: {type: f32, count: 1Ki}\n"
    "nodes:\n"
    "  s1: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 2.0, y: b}}\n"
    "  s2: {op: kernel, kernel: scale_f32, args: {x: a, alpha: 3.0, y: c}}\n"
    "  s3: {op: kernel, kernel: add_f32, args: {a: b, b: c, y: b}}\n";

static void run(DrMode mode, guint32 warmup, guint32 iterations) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_fake_load_yaml("nvtx.yaml", yaml);
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions opts = dr_fake_run_options(g, mode, DR_TIMING_STAMPS, warmup, iterations);
  dr_fake_reset();
  g_string_truncate(rec.log, 0);
  rec.stream_names = 0;
  DrReport *r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  dr_report_free(r);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpint(rec.depth, ==, 0);
  g_assert_cmpint(rec.open_ranges, ==, 0);
  g_assert_cmpint(rec.max_depth, <=, 1); /* a node's range is alone on the stack */
  g_assert_cmpstr(rec.domain, ==, "dagrun");
  g_assert_cmpuint(rec.stream_names, >=, 1);
}

/* The plan's issue order of the three nodes, as "push ID N\npop\n" lines
 * for iteration N (N < 0: no payload). */
static void append_nodes(GString *want, gint64 n) {
  /* s1 and s2 are independent, s3 joins them: the planner issues s1, s2,
   * s3 (checked by the first run's own log below). */
  const char *ids[] = {"s1", "s2", "s3"};
  for (int i = 0; i < 3; i++) {
    if (n < 0)
      g_string_append_printf(want, "push %s\npop\n", ids[i]);
    else
      g_string_append_printf(want, "push %s %" G_GINT64_FORMAT "\npop\n", ids[i], n);
  }
}

static void test_streams(void) {
  run(DR_MODE_STREAMS, 1, 2);
  g_autoptr(GString) want = g_string_new(NULL);
  for (guint i = 0; i < 3; i++) {
    g_string_append_printf(want, "start %s %u\n", i < 1 ? "warmup" : "iteration", i);
    append_nodes(want, i);
    g_string_append(want, "end\n");
  }
  g_assert_cmpstr(rec.log->str, ==, want->str);
}

static void test_graph(void) {
  run(DR_MODE_GRAPH, 1, 2);
  g_autoptr(GString) want = g_string_new(NULL);
  append_nodes(want, -1); /* the capture, at setup */
  for (guint i = 0; i < 3; i++)
    g_string_append_printf(want, "start %s %u\nend\n", i < 1 ? "warmup" : "iteration", i);
  g_assert_cmpstr(rec.log->str, ==, want->str);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  rec.strings = g_ptr_array_new_with_free_func(g_free);
  rec.log = g_string_new(NULL);
  dr_cuda_api_set(dr_fake_api());
  g_test_add_func("/nvtx/streams", test_streams);
  g_test_add_func("/nvtx/graph", test_graph);
  return g_test_run();
}
