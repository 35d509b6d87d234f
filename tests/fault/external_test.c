/* external_test.c: the library's external memory and caller-stream paths
 * on the CUDA backend, driven through the fake CUDA table with its
 * graph-node model (fake_cuda.h): dr_runner_bind_buffer updates a graph
 * executable node by node (kernel, memcpy and memset node parameters)
 * instead of re-capturing the iteration, and the replayed executable then
 * really uses the caller's memory; streams mode rebinds; pointers of the
 * wrong kind are refused; dr_runner_run_on_stream orders the iteration by
 * an event recorded on the caller's stream that dagrun's entry stream
 * waits on, and the reverse at the end, for an explicit, the legacy and
 * the per-thread default stream, with no synchronization;
 * dr_runner_write_buffer and dr_runner_read_buffer go on that stream; and
 * a fault at any call of a bind fails cleanly. */
#include <string.h>

#include "include/dagrun/dagrun.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/fault/fake_runner.h"

#define N 64

/* x (iota) -> y = 2x ("s"); z += x ("acc"); y -> h, pinned ("dl");
 * m = 0x01 bytes ("ms"). */
static DrPipeline *pipeline(void) {
  g_autoptr(GError) error = NULL;
  DrPipeline *p = dr_pipeline_new("external");
  g_assert_true(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_buffer_init_iota(p, "x", &error));
  g_assert_true(dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "z", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "h", DR_ELEM_F32, N, DR_WHERE_HOST, &error));
  g_assert_true(dr_pipeline_add_buffer(p, "m", DR_ELEM_U8, N, DR_WHERE_DEVICE, &error));
  DrNamedArg sargs[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("alpha", 2.0), DR_NAMED_WHOLE("y", "y")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "s", "scale_f32", sargs, 3, &error));
  DrNamedArg aargs[] = {DR_NAMED_FLOAT("alpha", 1.0), DR_NAMED_WHOLE("x", "x"), DR_NAMED_WHOLE("y", "z")};
  g_assert_true(dr_pipeline_add_kernel_node(p, "acc", "axpy_f32", aargs, 3, &error));
  g_assert_true(dr_pipeline_add_copy(p, "dl", DR_WHOLE("y"), DR_WHOLE("h"), &error));
  g_assert_true(dr_pipeline_add_memset(p, "ms", DR_WHOLE("m"), 1, &error));
  g_assert_no_error(error);
  return p;
}

static void run_once(DrRunner *r) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
  g_assert_no_error(error);
  g_assert_nonnull(rr);
}

static void read_f32(DrRunner *r, const char *buffer, float *out) {
  g_autoptr(GError) error = NULL;
  g_assert_true(dr_runner_read_buffer(r, buffer, out, N * sizeof(float), &error));
  g_assert_no_error(error);
}

/* The trace's calls from `from` on, fault points only, one name per line. */
static char *calls_since(guint from) {
  const GArray *t = dr_fake_trace();
  GString *s = g_string_new(NULL);
  for (guint i = from; i < t->len; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (c->point) g_string_append_printf(s, "%s\n", c->name);
  }
  return g_string_free(s, FALSE);
}

/* Graph mode: binding updates the executable in place, node by node, and
 * the replayed executable computes from and into the caller's memory;
 * dagrun frees what it had and never frees the caller's. Streams mode:
 * the same results, by rebinding. */
static void test_bind(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  gboolean graph = mode == DR_MODE_GRAPH;
  dr_fake_runner_start();
  const DrCudaApi *api = dr_cuda_api();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = pipeline();
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, mode);
    run_once(r);
    float y[N];
    read_f32(r, "y", y);
    g_assert_cmpfloat(y[5], ==, 10.0f); /* the replay computes */
    /* The caller's memory. */
    float *x2 = NULL, *y2 = NULL, *h2 = NULL;
    guint8 *m2 = NULL;
    g_assert_cmpint(api->cudaMalloc((void **)&x2, N * sizeof(float)), ==, cudaSuccess);
    g_assert_cmpint(api->cudaMalloc((void **)&y2, N * sizeof(float)), ==, cudaSuccess);
    g_assert_cmpint(api->cudaMallocHost((void **)&h2, N * sizeof(float)), ==, cudaSuccess);
    g_assert_cmpint(api->cudaMalloc((void **)&m2, N), ==, cudaSuccess);
    for (int i = 0; i < N; i++) x2[i] = 3.0f * i; /* fake device memory is host memory */
    guint before = dr_fake_live(DR_FAKE_DEVICE_MEM) + dr_fake_live(DR_FAKE_HOST_MEM);
    guint from = dr_fake_trace()->len;
    g_assert_true(dr_runner_bind_buffer(r, "x", x2, N * sizeof(float), &error));
    g_assert_true(dr_runner_bind_buffer(r, "y", y2, N * sizeof(float), &error));
    g_assert_true(dr_runner_bind_buffer(r, "h", h2, N * sizeof(float), &error));
    g_assert_true(dr_runner_bind_buffer(r, "m", m2, N, &error));
    g_assert_no_error(error);
    /* dagrun's own memory for the four is gone. */
    g_assert_cmpuint(dr_fake_live(DR_FAKE_DEVICE_MEM) + dr_fake_live(DR_FAKE_HOST_MEM), ==, before - 4);
    g_autofree char *calls = calls_since(from);
    if (graph) {
      /* No re-capture of the iteration, no executable update or
       * instantiation: each kernel bound again has its launch described
       * and set, no capture (s and acc read x, s writes y: three), the
       * copy's and the memset's parameters set directly (dl reads y and
       * writes h: twice). */
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphInstantiate"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_node_params"), ==, 3);
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_launch"), ==, 0);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecKernelNodeSetParams"), ==, 3);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemcpyNodeSetParams1D"), ==, 2);
      g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecMemsetNodeSetParams"), ==, 1);
      g_assert_cmpuint(dr_fake_exec_node_sets(), ==, 6);
    } else {
      g_assert_null(strstr(calls, "Capture"));
      g_assert_cmpuint(dr_fake_count_calls(from, "kernel_launch"), ==, 0);
    }
    g_assert_null(strstr(calls, "Synchronize")); /* idle after a run: nothing to wait for */
    run_once(r);
    g_assert_cmpstr(dr_runner_last_update(r), ==, graph ? "updated-nodes" : "rebound");
    for (int i = 0; i < N; i++) {
      g_assert_cmpfloat(y2[i], ==, 6.0f * i);
      g_assert_cmpfloat(h2[i], ==, 6.0f * i);
      g_assert_cmpuint(m2[i], ==, 1);
    }
    read_f32(r, "h", y);
    g_assert_cmpfloat(y[7], ==, 42.0f);
    /* New input bytes, on dagrun's stream (no caller stream yet). */
    const float in[2] = {100.0f, 200.0f};
    from = dr_fake_trace()->len;
    g_assert_true(dr_runner_write_buffer(r, "x", 2 * sizeof(float), in, sizeof in, &error));
    g_assert_no_error(error);
    g_autofree char *wcalls = calls_since(from);
    g_assert_cmpstr(wcalls, ==,
                    "cudaMemcpyAsync\ncudaLaunchHostFunc\n"); /* the copy, then freeing its bytes */
    g_assert_cmpuint(g_array_index(dr_fake_trace(), DrFakeCall, dr_fake_trace()->len - 2).size, ==,
                     sizeof in);
    run_once(r);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "none");
    g_assert_cmpfloat(y2[2], ==, 200.0f);
    g_assert_cmpfloat(y2[3], ==, 400.0f);
    g_assert_cmpfloat(y2[4], ==, 24.0f);
    /* A host write goes through a host function in stream order. */
    from = dr_fake_trace()->len;
    g_assert_true(dr_runner_write_buffer(r, "h", 0, in, sizeof in, &error));
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaLaunchHostFunc"), ==, 1);
    g_assert_cmpfloat(h2[1], ==, 200.0f);
    /* Memory of the wrong kind: refused, nothing changed. */
    g_autofree float *pageable = g_new0(float, N);
    g_assert_false(dr_runner_bind_buffer(r, "x", h2, N * sizeof(float), &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
    g_assert_nonnull(strstr(error->message,
                            "buffer 'x' lives on the device; the memory bound to it is pinned host memory"));
    g_clear_error(&error);
    g_assert_false(dr_runner_bind_buffer(r, "h", pageable, N * sizeof(float), &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
    g_assert_nonnull(strstr(error->message, "pageable host memory"));
    g_assert_nonnull(strstr(error->message, "cudaHostRegister"));
    g_clear_error(&error);
    g_assert_false(dr_runner_bind_buffer(r, "x", pageable, N * sizeof(float), &error));
    g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
    g_clear_error(&error);
    run_once(r);
    g_assert_cmpfloat(y2[5], ==, 30.0f);
    /* Freeing the runner leaves the caller's memory alone. */
    dr_runner_free(g_steal_pointer(&r));
    g_assert_cmpuint(dr_fake_live(DR_FAKE_DEVICE_MEM), ==, 3);
    g_assert_cmpuint(dr_fake_live(DR_FAKE_HOST_MEM), ==, 1);
    g_assert_cmpint(api->cudaFree(x2), ==, cudaSuccess);
    g_assert_cmpint(api->cudaFree(y2), ==, cudaSuccess);
    g_assert_cmpint(api->cudaFreeHost(h2), ==, cudaSuccess);
    g_assert_cmpint(api->cudaFree(m2), ==, cudaSuccess);
  }
  dr_fake_runner_finish();
}

/* Graph mode with no per-node entries in the table (dr_fake_api): the
 * bind re-captures and updates the whole executable, and says so. */
static void test_bind_recapture(void) {
  dr_fake_runner_start();
  dr_cuda_api_set(dr_fake_api());
  const DrCudaApi *api = dr_cuda_api();
  g_autoptr(GError) error = NULL;
  {
    g_autoptr(DrPipeline) p = pipeline();
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    run_once(r);
    float *x2 = NULL;
    g_assert_cmpint(api->cudaMalloc((void **)&x2, N * sizeof(float)), ==, cudaSuccess);
    guint from = dr_fake_trace()->len;
    g_assert_true(dr_runner_bind_buffer(r, "x", x2, N * sizeof(float), &error));
    g_assert_no_error(error);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaStreamBeginCapture"), ==, 1);
    g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphExecUpdate"), ==, 1);
    run_once(r);
    g_assert_cmpstr(dr_runner_last_update(r), ==, "updated");
    dr_runner_free(g_steal_pointer(&r));
    g_assert_cmpint(api->cudaFree(x2), ==, cudaSuccess);
  }
  dr_fake_runner_finish();
}

/* run_on_stream: the caller's stream -> an event -> dagrun's entry stream,
 * the iteration, then dagrun's stream -> an event -> the caller's stream;
 * nothing synchronizes. For an explicit stream, the legacy default stream
 * (NULL) and the per-thread default stream, in both modes. Writes and
 * reads follow the caller's stream. */
static void test_run_on_stream(gconstpointer data) {
  DrMode mode = (DrMode)GPOINTER_TO_INT(data);
  dr_fake_runner_start();
  dr_fake_allow_default_streams(TRUE);
  const DrCudaApi *api = dr_cuda_api();
  g_autoptr(GError) error = NULL;
  cudaStream_t mine = NULL;
  {
    g_autoptr(DrPipeline) p = pipeline();
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    g_autoptr(DrRunner) r = dr_fake_cuda_runner(plan, p, mode);
    g_assert_cmpint(api->cudaStreamCreateWithPriority(&mine, cudaStreamNonBlocking, 0), ==, cudaSuccess);
    cudaStream_t streams[] = {mine, NULL, cudaStreamPerThread};
    float z[N];
    for (guint k = 0; k < G_N_ELEMENTS(streams); k++) {
      cudaStream_t user = streams[k];
      guint from = dr_fake_trace()->len;
      g_assert_true(dr_runner_run_on_stream(r, user, &error));
      g_assert_no_error(error);
      /* The fault points of the call, in order. */
      const GArray *t = dr_fake_trace();
      g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(DrFakeCall));
      for (guint i = from; i < t->len; i++)
        if (g_array_index(t, DrFakeCall, i).point) g_array_append_val(pts, g_array_index(t, DrFakeCall, i));
      g_autofree char *calls = calls_since(from);
      guint i = 0;
      /* The events are made once, at the first such run. */
      while (strcmp(g_array_index(pts, DrFakeCall, i).name, "cudaEventCreateWithFlags") == 0) i++;
      g_assert_cmpuint(i, ==, k == 0 ? 2 : 0);
      const DrFakeCall *rec_in = &g_array_index(pts, DrFakeCall, i);
      const DrFakeCall *wait_in = &g_array_index(pts, DrFakeCall, i + 1);
      const DrFakeCall *rec_out = &g_array_index(pts, DrFakeCall, pts->len - 2);
      const DrFakeCall *wait_out = &g_array_index(pts, DrFakeCall, pts->len - 1);
      g_assert_cmpstr(rec_in->name, ==, "cudaEventRecord");
      g_assert_true(rec_in->obj == user);
      g_assert_cmpstr(wait_in->name, ==, "cudaStreamWaitEvent");
      g_assert_true(wait_in->obj != user && wait_in->stream != 0); /* one of dagrun's streams */
      g_assert_cmpstr(rec_out->name, ==, "cudaEventRecord");
      g_assert_true(rec_out->obj == wait_in->obj); /* the entry stream is the exit one (origin) */
      g_assert_cmpstr(wait_out->name, ==, "cudaStreamWaitEvent");
      g_assert_true(wait_out->obj == user);
      g_assert_null(strstr(calls, "Synchronize"));
      g_assert_null(strstr(calls, "cudaEventQuery"));
      if (mode == DR_MODE_GRAPH) {
        g_assert_cmpuint(dr_fake_count_calls(from, "cudaGraphLaunch"), ==, 1);
      } else {
        g_assert_cmpuint(dr_fake_count_calls(from, "kernel_launch"), ==, 2);
      }
      /* The iteration ran (the fake does the work at once). */
      read_f32(r, "z", z);
      g_assert_cmpfloat(z[3], ==, 3.0f * (k + 1));
    }
    /* Writes and reads after it go on the caller's stream; a write then
     * orders dagrun's entry stream after it. */
    cudaStream_t last = streams[G_N_ELEMENTS(streams) - 1];
    guint from = dr_fake_trace()->len;
    const float one = 1000.0f;
    g_assert_true(dr_runner_write_buffer(r, "x", 0, &one, sizeof one, &error));
    g_assert_no_error(error);
    g_autofree char *wcalls = calls_since(from);
    g_assert_cmpstr(wcalls, ==,
                    "cudaMemcpyAsync\ncudaLaunchHostFunc\ncudaEventRecord\ncudaStreamWaitEvent\n");
    const GArray *t = dr_fake_trace();
    g_assert_true(g_array_index(t, DrFakeCall, t->len - 4).obj == last);
    g_assert_true(g_array_index(t, DrFakeCall, t->len - 3).obj == last);
    g_assert_true(g_array_index(t, DrFakeCall, t->len - 2).obj == last);
    from = t->len;
    float y[N];
    read_f32(r, "x", y);
    g_assert_cmpfloat(y[0], ==, 1000.0f);
    g_autofree char *rcalls = calls_since(from);
    g_assert_cmpstr(rcalls, ==, "cudaMemcpyAsync\ncudaStreamSynchronize\n");
    g_assert_true(g_array_index(dr_fake_trace(), DrFakeCall, from).obj == last);
    /* A plain run after them still works and drains. */
    run_once(r);
    read_f32(r, "y", y);
    g_assert_cmpfloat(y[0], ==, 2000.0f);
  }
  g_assert_cmpint(api->cudaStreamDestroy(mine), ==, cudaSuccess);
  dr_fake_runner_finish();
}

/* A fault at every call a graph-mode bind makes: an error (the bind's or
 * the next run's), or success; the runner still frees everything but the
 * caller's memory. */
static void test_bind_faults(void) {
  guint64 total = 0;
  for (guint64 fail_at = 0;; fail_at++) {
    dr_fake_runner_start();
    const DrCudaApi *api = dr_cuda_api();
    g_autoptr(GError) error = NULL;
    g_autoptr(DrPipeline) p = pipeline();
    g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
    DrRunner *r = dr_fake_cuda_runner(plan, p, DR_MODE_GRAPH);
    run_once(r);
    float *x2 = NULL;
    g_assert_cmpint(api->cudaMalloc((void **)&x2, N * sizeof(float)), ==, cudaSuccess);
    guint64 before = dr_fake_points();
    if (fail_at > 0) dr_fake_arm(before + fail_at, DR_FAULT_LAUNCH);
    gboolean ok = dr_runner_bind_buffer(r, "x", x2, N * sizeof(float), &error);
    if (fail_at == 0) {
      g_assert_true(ok);
      total = dr_fake_points() - before;
    } else if (!ok) {
      g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
      g_assert_nonnull(strstr(error->message, "cudaErrorLaunchFailure"));
    }
    /* A failed release (the old memory's cudaFree) has nothing to undo:
     * the fake then keeps the block; it cannot fail the bind. */
    const DrFakeCall *hit = dr_fake_faulted_call();
    gboolean failed_release = hit && hit->release;
    if (failed_release) g_assert_true(ok);
    dr_fake_arm(0, DR_FAULT_LAUNCH);
    /* Either way the runner runs on: on the caller's x (zeros) after a
     * bind, on its own (iota) after a failed one. */
    x2[4] = 0.5f;
    g_clear_error(&error);
    g_autoptr(DrRunReport) rr = dr_runner_run(r, &error);
    g_assert_no_error(error);
    float y[N];
    read_f32(r, "y", y);
    g_assert_cmpfloat(y[4], ==, ok ? 1.0f : 8.0f);
    dr_runner_free(r);
    g_assert_cmpint(api->cudaFree(x2), ==, cudaSuccess);
    g_assert_cmpstr(dr_fake_misuse(), ==, "");
    g_assert_cmpuint(dr_fake_live_total(), ==, failed_release ? 1 : 0);
    dr_fake_reset();
    dr_fake_runner_finish();
    if (fail_at >= total) break;
  }
  g_assert_cmpuint(total, >, 3);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api());
  g_test_add_data_func("/fault/external/bind-streams", GINT_TO_POINTER(DR_MODE_STREAMS), test_bind);
  g_test_add_data_func("/fault/external/bind-graph", GINT_TO_POINTER(DR_MODE_GRAPH), test_bind);
  g_test_add_func("/fault/external/bind-graph-recapture", test_bind_recapture);
  g_test_add_data_func("/fault/external/run-on-stream-streams", GINT_TO_POINTER(DR_MODE_STREAMS),
                       test_run_on_stream);
  g_test_add_data_func("/fault/external/run-on-stream-graph", GINT_TO_POINTER(DR_MODE_GRAPH),
                       test_run_on_stream);
  g_test_add_func("/fault/external/bind-faults", test_bind_faults);
  return g_test_run();
}
