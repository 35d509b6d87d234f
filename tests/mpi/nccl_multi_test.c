/* nccl_multi_test.c: the CUDA backend's collectives over several devices
 * of one process, on the CPU: the fake CUDA runtime of tests/fault
 * pretending to have 2 or 4 devices, and the fake NCCL of fake_nccl.h,
 * whose ncclCommInitAll makes a clique of one communicator per device and
 * which computes each collective across its ranks' buffers only when
 * every rank's call came inside one group (otherwise it answers
 * ncclInvalidUsage: NCCL would hang). What is checked:
 *  - one ncclCommInitAll over run.devices in order; every collective
 *    call of a device inside a group, every group holding a whole number
 *    of calls per device, collectives ready together in one group; each
 *    call on a stream and buffers of its communicator's device (the fake
 *    NCCL's checks), every CUDA call around them with its stream's device
 *    selected (the fake CUDA's);
 *  - allreduce, broadcast, allgather, reducescatter (and a grouped
 *    integer allreduce) over 2 and 4 devices give the host backend's
 *    results, in streams mode and graph mode (the capture records the
 *    NCCL work on every device's stream and each replay performs it), and
 *    --verify passes; so does graphs/data_parallel.yaml (4 devices);
 *  - the fake is sensitive: a dropped call of one device fails the run,
 *    and a wrong buffer changes the result;
 *  - an asynchronous NCCL error (a peer that never answers) while the run
 *    waits: no blocking wait is made while it hangs, the run fails with
 *    exit 70 and a clear message, and every communicator is aborted;
 *  - fault sweeps: each NCCL call failed in turn, and each CUDA call with
 *    two fault kinds, fail the run cleanly (exit 70 naming the call,
 *    communicators aborted, nothing left live, no misuse), in both modes. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/nccl_api.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "ir/diag.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"
#include "tests/mpi/fake_nccl.h"

/* Every collective kind of a single process over D devices: per device a
 * kernel, then sum (allreduce) and mx (an independent integer
 * allreduce) and bc (broadcast from the last device), which are ready
 * together, then rs (reducescatter of sum's result) and ag (allgather of
 * rs's); every result copied down and checksummed. */
static char *coll_yaml(int D) {
  GString *y = g_string_new("dagrun: 1\nname: coll\nrun: {devices: [");
  for (int d = 0; d < D; d++) g_string_append_printf(y, "%s%d", d ? ", " : "", d);
  g_string_append(y, "]}\nbuffers:\n");
  for (int d = 0; d < D; d++) {
    g_string_append_printf(y, "  x%d: {type: f32, count: 64, init: {random: %d}, device: %d}\n", d, d + 1, d);
    g_string_append_printf(y, "  g%d: {type: f32, count: 64, device: %d}\n", d, d);
    g_string_append_printf(y, "  s%d: {type: f32, count: 64, device: %d}\n", d, d);
    g_string_append_printf(y, "  o%d: {type: f32, count: 64, device: %d}\n", d, d);
    g_string_append_printf(y, "  q%d: {type: f32, count: %d, device: %d}\n", d, 64 / D, d);
    g_string_append_printf(y, "  t%d: {type: f32, count: 64, device: %d}\n", d, d);
    g_string_append_printf(y, "  m%d: {type: i32, count: 16, init: {random: %d}, device: %d}\n", d, 40 + d,
                           d);
    g_string_append_printf(y, "  hs%d: {type: f32, count: 64, where: host}\n", d);
    g_string_append_printf(y, "  ho%d: {type: f32, count: 64, where: host}\n", d);
    g_string_append_printf(y, "  ht%d: {type: f32, count: 64, where: host}\n", d);
    g_string_append_printf(y, "  hm%d: {type: i32, count: 16, where: host}\n", d);
  }
  g_string_append(y, "nodes:\n");
  for (int d = 0; d < D; d++)
    g_string_append_printf(y, "  k%d: {op: kernel, kernel: scale_f32, args: {x: x%d, alpha: %d.5, y: g%d}}\n",
                           d, d, d + 1, d);
  const char *lists[][3] = {{"sum", "g", "s"}, {"bc", "g", "o"}, {"rs", "s", "q"}, {"ag", "q", "t"}};
  const char *ops[] = {"allreduce, reduce: sum", "broadcast, root: %d", "reducescatter, reduce: sum",
                       "allgather"};
  for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
    g_autofree char *op = g_strdup_printf(ops[i], D - 1);
    g_string_append_printf(y, "  %s: {op: %s, src: [", lists[i][0], op);
    for (int d = 0; d < D; d++) g_string_append_printf(y, "%s%s%d", d ? ", " : "", lists[i][1], d);
    g_string_append(y, "], dst: [");
    for (int d = 0; d < D; d++) g_string_append_printf(y, "%s%s%d", d ? ", " : "", lists[i][2], d);
    g_string_append(y, "]}\n");
    if (i == 0) {
      g_string_append(y, "  mx: {op: allreduce, reduce: max, buffers: [");
      for (int d = 0; d < D; d++) g_string_append_printf(y, "%sm%d", d ? ", " : "", d);
      g_string_append(y, "]}\n");
    }
  }
  const char *down[][2] = {{"s", "hs"}, {"o", "ho"}, {"t", "ht"}, {"m", "hm"}};
  for (int d = 0; d < D; d++)
    for (guint i = 0; i < G_N_ELEMENTS(down); i++) {
      g_string_append_printf(y, "  d%s%d: {op: copy, src: %s%d, dst: %s%d}\n", down[i][1], d, down[i][0], d,
                             down[i][1], d);
      g_string_append_printf(y, "  c%s%d: {op: host, fn: checksum, args: {buffer: %s%d}}\n", down[i][1], d,
                             down[i][1], d);
    }
  return g_string_free(y, FALSE);
}

static DrGraph *load(const char *yaml) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string("test.yaml", yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

static DrGraph *load_file(const char *path) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

/* The fakes, fresh, with `devices` devices; the CUDA table `cuda`. */
static void fakes_on(int devices, const DrCudaApi *cuda) {
  dr_fake_set_devices(devices);
  dr_fake_set_peer_access(TRUE);
  dr_fake_set_run_twins(TRUE);
  dr_fake_set_move_data(TRUE);
  dr_fake_set_replay_graphs(TRUE);
  dr_fake_reset();
  dr_cuda_api_set(cuda);
  dr_fake_nccl_reset();
  dr_nccl_api_set(dr_fake_nccl_api());
}

static void fakes_off(void) {
  dr_nccl_api_set(NULL);
  dr_cuda_api_set(NULL);
  dr_fake_set_devices(1);
  dr_fake_reset();
}

static void assert_clean(void) {
  g_autoptr(GString) live = g_string_new(NULL);
  dr_fake_describe_live(live);
  g_assert_cmpstr(live->str, ==, "nothing");
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpstr(dr_fake_nccl.misuse->str, ==, "");
  g_assert_cmpint(dr_fake_nccl.live, ==, 0);
  g_assert_cmpint(dr_fake_nccl.depth, ==, 0);
}

static gboolean is_data_call(const char *t) {
  static const char *const names[] = {"ncclAllReduce",     "ncclBroadcast", "ncclReduce", "ncclAllGather",
                                      "ncclReduceScatter", "ncclSend",      "ncclRecv"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (strcmp(t, names[i]) == 0) return TRUE;
  return FALSE;
}

/* Reads the fake NCCL's trace: every data call inside a group, each
 * outermost group a multiple of D calls; the largest group's calls. */
static guint trace_groups(int D, guint *n_groups) {
  g_auto(GStrv) calls = g_strsplit(dr_fake_nccl.trace->str, " ", -1);
  int depth = 0;
  guint in_group = 0, largest = 0;
  *n_groups = 0;
  for (guint i = 0; calls[i] != NULL; i++) {
    const char *c = calls[i];
    if (strcmp(c, "ncclGroupStart") == 0 && depth++ == 0) in_group = 0;
    if (strcmp(c, "ncclGroupEnd") == 0 && --depth == 0) {
      if (in_group % (guint)D != 0) g_error("a group of %u calls over %d devices: %s", in_group, D, c);
      largest = MAX(largest, in_group);
      (*n_groups)++;
    }
    if (is_data_call(c)) {
      if (depth == 0) g_error("%s outside every group: %s", c, dr_fake_nccl.trace->str);
      in_group++;
    }
  }
  return largest;
}

/* Every call on a stream (work, records, waits) made with that stream's
 * device selected, from the fake CUDA's trace. */
static guint misplaced_calls(void) {
  static const char *const stream_calls[] = {"kernel_launch",       "cudaMemcpyAsync",
                                             "cudaMemcpyPeerAsync", "cudaMemsetAsync",
                                             "cudaEventRecord",     "cudaEventRecordWithFlags",
                                             "cudaStreamWaitEvent", "cudaMallocAsync",
                                             "cudaLaunchHostFunc",  "stamp_launch"};
  const GArray *t = dr_fake_trace();
  g_autoptr(GArray) dev = g_array_new(FALSE, TRUE, sizeof(int));
  int cur = 0;
  guint bad = 0;
  for (guint i = 0; i < t->len; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (c->rc != cudaSuccess) continue;
    if (strcmp(c->name, "cudaSetDevice") == 0) {
      cur = (int)c->size;
    } else if (strcmp(c->name, "cudaStreamCreateWithPriority") == 0) {
      g_array_set_size(dev, MAX(dev->len, c->stream));
      g_array_index(dev, int, c->stream - 1) = cur;
    } else if (c->stream && c->stream <= dev->len) {
      for (guint k = 0; k < G_N_ELEMENTS(stream_calls); k++)
        if (strcmp(c->name, stream_calls[k]) == 0 && g_array_index(dev, int, c->stream - 1) != cur) {
          g_test_message("%s on a stream of device %d with device %d selected", c->name,
                         g_array_index(dev, int, c->stream - 1), cur);
          bad++;
        }
    }
  }
  return bad;
}

typedef struct {
  int devices;
  DrMode mode;
  DrTimingMode timing;
} Case;

/* Every collective over D devices: the host backend's results, and the
 * calls as NCCL needs them. */
static void test_collectives(gconstpointer data) {
  const Case *tc = data;
  int D = tc->devices;
  g_autofree char *yaml = coll_yaml(D);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  const guint32 iterations = 3;
  g_autofree char *want = dr_fake_host_printed(p, iterations);
  fakes_on(D, dr_fake_api_graph_nodes());
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, FALSE, iterations, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(got, ==, want);
  assert_clean();
  g_assert_cmpuint(misplaced_calls(), ==, 0);
  /* One communicator per device, rank r on run.devices[r]. */
  g_assert_cmpuint(dr_fake_nccl.init_alls, ==, 1);
  g_assert_cmpint(dr_fake_nccl.init_all_ndev, ==, D);
  for (int d = 0; d < D; d++) g_assert_cmpint(dr_fake_nccl.init_all_devs[d], ==, d);
  g_assert_cmpuint(dr_fake_nccl.aborts, ==, 0);
  /* Five collectives computed across the devices per issue (once per
   * iteration eagerly; in graph mode once, in the capture: the replays
   * perform them, which the equal results show). */
  g_assert_cmpuint(dr_fake_nccl.clique_colls, ==, 5 * (tc->mode == DR_MODE_GRAPH ? 1 : iterations));
  guint n_groups = 0;
  guint largest = trace_groups(D, &n_groups);
  /* sum, mx and bc are ready together: one group of their 3 D calls. */
  g_assert_cmpuint(largest, ==, 3 * (guint)D);
  g_assert_cmpuint(n_groups, ==, 3 * (tc->mode == DR_MODE_GRAPH ? 1 : iterations));
  if (tc->mode == DR_MODE_GRAPH) {
    /* The capture holds the NCCL work on every device's stream. */
    const char *shape = dr_fake_graph_shape(FALSE);
    guint nccl_nodes = 0;
    for (const char *s = shape; (s = strstr(s, "nccl")) != NULL; s += 4) nccl_nodes++;
    g_assert_cmpuint(nccl_nodes, ==, 3 * (guint)D);
    /* Each device's part depends on what came before (the side streams
     * joined the node's inputs) and something depends on it (they were
     * joined back before the node's completion): no part dangles. */
    g_auto(GStrv) nodes = g_strsplit(dr_fake_graph_shape(TRUE), " ", -1);
    for (guint i = 0; nodes[i] != NULL; i++) {
      if (strstr(nodes[i], ":nccl") == NULL) continue;
      if (strchr(nodes[i], '<') == NULL) g_error("NCCL node %s depends on nothing", nodes[i]);
      gboolean needed = FALSE;
      for (guint j = i + 1; nodes[j] != NULL && !needed; j++) {
        const char *lt = strchr(nodes[j], '<');
        g_auto(GStrv) deps = lt ? g_strsplit_set(lt + 1, ",>", -1) : NULL;
        for (guint k = 0; deps && deps[k] != NULL && !needed; k++)
          needed = deps[k][0] && g_ascii_strtoull(deps[k], NULL, 10) == i;
      }
      if (!needed) g_error("nothing depends on NCCL node %s", nodes[i]);
    }
  }
  fakes_off();
}

/* --verify: the concurrent run against the serial one (whose plan puts the
 * collectives on a stream of the first device). */
static void test_verify(gconstpointer data) {
  const Case *tc = data;
  g_autofree char *yaml = coll_yaml(tc->devices);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  fakes_on(tc->devices, dr_fake_api_graph_nodes());
  g_autoptr(GError) error = NULL;
  g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, TRUE, 2, &error);
  g_assert_no_error(error);
  g_assert_nonnull(got);
  assert_clean();
  g_assert_cmpuint(dr_fake_nccl.init_alls, ==, 2);
  fakes_off();
}

/* Runs example `name` (graphs/) on the host and on the fakes, `save`
 * saved from each, and compares the bytes. */
static void run_example(const char *name, const char *save, int D, DrMode mode) {
  g_autofree char *path = g_build_filename("graphs", name, NULL);
  g_autoptr(DrGraph) g = load_file(path);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  g_autofree char *dir = g_dir_make_tmp("drnccl-XXXXXX", NULL);
  g_autofree char *want = NULL, *got = NULL;
  gsize want_len = 0, got_len = 0;
  for (int cuda = 0; cuda < 2; cuda++) {
    g_autofree char *out = g_build_filename(dir, cuda ? "cuda.bin" : "host.bin", NULL);
    dr_graph_buffer(g, dr_graph_find_buffer(g, save))->save_path = dr_graph_intern(g, out);
    if (cuda) fakes_on(D, dr_fake_api_graph_nodes());
    DrRunOptions o;
    dr_run_options_init(&o, g);
    o.backend = cuda ? DR_BACKEND_CUDA : DR_BACKEND_HOST;
    o.mode = cuda ? mode : DR_MODE_STREAMS;
    o.iterations = 2;
    o.warmup = 1;
    o.verify = cuda;
    o.host_output = NULL;
    FILE *sink = fopen("/dev/null", "w");
    o.host_output = sink;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(p, &o, &error);
    fclose(sink);
    g_assert_no_error(error);
    if (cuda) {
      g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
      assert_clean();
      g_assert_cmpuint(dr_fake_nccl.clique_colls, >, 0);
      fakes_off();
    }
    g_assert_true(g_file_get_contents(out, cuda ? &got : &want, cuda ? &got_len : &want_len, NULL));
    g_unlink(out);
  }
  g_rmdir(dir);
  g_assert_cmpmem(got, got_len, want, want_len);
  dr_graph_buffer(g, dr_graph_find_buffer(g, save))->save_path = NULL;
}

static void test_examples(gconstpointer data) {
  const Case *tc = data;
  /* (graphs/multi_gpu_overlap.yaml's gemm needs cuBLAS, which the fake
   * runtime has not: tests/gpu/run.sh runs it where two GPUs are.) */
  run_example("data_parallel.yaml", "w_host", 4, tc->mode);
}

/* ---- the fake is sensitive -------------------------------------------- */

/* A NCCL table that forwards to the fake but drops device 1's calls, or
 * hands device 0's allreduce its src as its dst. */
static DrNcclApi mutant;
static int mutation;
static DrNcclComm mutant_comms[8];
static DrNcclResult mutant_init_all(DrNcclComm *comms, int ndev, const int *devs) {
  DrNcclResult rc = dr_fake_nccl_api()->ncclCommInitAll(comms, ndev, devs);
  for (int i = 0; rc == 0 && i < ndev && i < 8; i++) mutant_comms[i] = comms[i];
  return rc;
}
static DrNcclResult mutant_allreduce(const void *s, void *d, size_t n, int t, int op, DrNcclComm c,
                                     cudaStream_t st) {
  if (mutation == 1 && c == mutant_comms[1]) return 0;
  if (mutation == 2 && c == mutant_comms[0]) d = (void *)s;
  return dr_fake_nccl_api()->ncclAllReduce(s, d, n, t, op, c, st);
}

static void test_sensitive(void) {
  g_autofree char *yaml = coll_yaml(2);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  g_autofree char *want = dr_fake_host_printed(p, 1);
  mutant = *dr_fake_nccl_api();
  mutant.ncclCommInitAll = mutant_init_all;
  mutant.ncclAllReduce = mutant_allreduce;
  for (mutation = 1; mutation <= 2; mutation++) {
    fakes_on(2, dr_fake_api_graph_nodes());
    dr_nccl_api_set(&mutant);
    g_autoptr(GError) error = NULL;
    g_autofree char *got =
        dr_fake_run_printed(p, DR_BACKEND_CUDA, DR_MODE_STREAMS, DR_TIMING_AUTO, FALSE, 1, &error);
    if (mutation == 1) {
      /* device 1's call dropped: the group is incomplete (NCCL would hang) */
      g_assert_null(got);
      g_assert_nonnull(strstr(dr_fake_nccl.misuse->str, "left out"));
      g_assert_cmpint(dr_error_exit_code(error), ==, 70);
    } else {
      g_assert_no_error(error);
      g_assert_cmpstr(got, !=, want);
    }
    g_assert_cmpint(dr_fake_nccl.live, ==, 0);
    fakes_off();
  }
}

/* ---- asynchronous errors ---------------------------------------------- */

/* The fake CUDA runtime, but its waits see NCCL's hang: while a
 * communicator has an asynchronous error and is not aborted, every
 * iteration's event is not ready, and a blocking wait would never
 * return (counted: none may happen). */
static DrCudaApi hanging;
static guint blocking_while_hung, queries_while_hung;
static cudaError_t hang_query(cudaEvent_t e) {
  cudaError_t rc = dr_fake_api_graph_nodes()->cudaEventQuery(e);
  if (rc == cudaSuccess && dr_fake_nccl_hung()) {
    queries_while_hung++;
    return cudaErrorNotReady;
  }
  return rc;
}
static cudaError_t hang_event_sync(cudaEvent_t e) {
  blocking_while_hung += dr_fake_nccl_hung();
  return dr_fake_api_graph_nodes()->cudaEventSynchronize(e);
}
static cudaError_t hang_stream_sync(cudaStream_t s) {
  blocking_while_hung += dr_fake_nccl_hung();
  return dr_fake_api_graph_nodes()->cudaStreamSynchronize(s);
}
static cudaError_t hang_device_sync(void) {
  blocking_while_hung += dr_fake_nccl_hung();
  return dr_fake_api_graph_nodes()->cudaDeviceSynchronize();
}

static void test_async_error(gconstpointer data) {
  const Case *tc = data;
  int D = tc->devices;
  g_autofree char *yaml = coll_yaml(D);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  hanging = *dr_fake_api_graph_nodes();
  hanging.cudaEventQuery = hang_query;
  hanging.cudaEventSynchronize = hang_event_sync;
  hanging.cudaStreamSynchronize = hang_stream_sync;
  hanging.cudaDeviceSynchronize = hang_device_sync;
  /* The failing operation: the first collective's call of the last
   * device, or one of the second group. */
  guint64 ats[] = {(guint64)D, 3 * (guint64)D + 1};
  for (guint a = 0; a < G_N_ELEMENTS(ats); a++) {
    fakes_on(D, &hanging);
    dr_fake_nccl.async_at = ats[a];
    /* The second time NCCL notices late: the wait polls the event while
     * the collective hangs, and must not block. */
    dr_fake_nccl.async_late = a == 1 ? 5 : 0;
    blocking_while_hung = queries_while_hung = 0;
    g_autoptr(GError) error = NULL;
    g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, FALSE, 3, &error);
    g_assert_null(got);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    g_assert_cmpint(dr_error_exit_code(error), ==, 70);
    g_test_message("%s", error->message);
    g_assert_nonnull(strstr(error->message, "asynchronous error on the communicator of device"));
    g_assert_nonnull(strstr(error->message, "(NCCL error 6)"));
    g_assert_nonnull(strstr(error->message, "aborted"));
    g_assert_cmpuint(blocking_while_hung, ==, 0);
    if (a == 1) g_assert_cmpuint(queries_while_hung, >, 0);
    g_assert_cmpuint(dr_fake_nccl.async_polls, ==, 1);
    /* Every communicator aborted, none destroyed. */
    g_assert_cmpuint(dr_fake_nccl.aborts, ==, (guint)D);
    g_assert_null(strstr(dr_fake_nccl.trace->str, "ncclCommDestroy"));
    g_assert_false(dr_fake_nccl_hung());
    assert_clean();
    fakes_off();
  }
}

/* ---- fault sweeps --------------------------------------------------------- */

/* Each NCCL call of a clean run (with --verify's second run) failed in
 * turn. */
static void test_nccl_faults(gconstpointer data) {
  const Case *tc = data;
  int D = tc->devices;
  g_autofree char *yaml = coll_yaml(D);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  fakes_on(D, dr_fake_api_graph_nodes());
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, TRUE, 2, &error);
    g_assert_no_error(error);
    g_assert_nonnull(got);
  }
  guint64 total = dr_fake_nccl.calls;
  g_assert_cmpuint(total, >, 10);
  g_assert_nonnull(strstr(dr_fake_nccl.trace->str, "ncclCommGetAsyncError"));
  for (guint64 k = 1; k <= total; k++) {
    fakes_on(D, dr_fake_api_graph_nodes());
    dr_fake_nccl.fail_at = k;
    g_autoptr(GError) error = NULL;
    g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, TRUE, 2, &error);
    if (got != NULL)
      g_error("failing NCCL call %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " went unnoticed", k, total);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    g_assert_cmpint(dr_error_exit_code(error), ==, 70);
    if (strstr(error->message, "failed: unhandled system error (fake) (NCCL error 2)") == NULL ||
        strstr(error->message, "nccl") == NULL)
      g_error("failing NCCL call %" G_GUINT64_FORMAT ": unclear message: %s", k, error->message);
    g_autoptr(GString) live = g_string_new(NULL);
    dr_fake_describe_live(live);
    if (dr_fake_nccl.live != 0 || strcmp(live->str, "nothing") != 0 || dr_fake_misuse()[0] ||
        dr_fake_nccl.misuse->str[0] || dr_fake_nccl.depth != 0)
      g_error("failing NCCL call %" G_GUINT64_FORMAT " (%s): communicators %" G_GINT64_FORMAT
              ", CUDA objects %s, misuse %s%s, depth %d",
              k, error->message, dr_fake_nccl.live, live->str, dr_fake_misuse(), dr_fake_nccl.misuse->str,
              dr_fake_nccl.depth);
    /* A failure while communicators live aborts them, never destroys them. */
    const char *t = dr_fake_nccl.trace->str, *bang = strchr(t, '!');
    g_assert_nonnull(bang);
    g_autofree char *before = g_strndup(t, (gsize)(bang - t));
    g_auto(GStrv) calls = g_strsplit(before, " ", -1);
    int comms_live = 0;
    for (guint c = 0; calls[c] != NULL && calls[c + 1] != NULL; c++) /* the last is the failed one */
      comms_live += g_str_equal(calls[c], "ncclCommInitAll")                                             ? D
                    : g_str_equal(calls[c], "ncclCommDestroy") || g_str_equal(calls[c], "ncclCommAbort") ? -1
                                                                                                         : 0;
    if (comms_live > 0 && (strstr(bang, "ncclCommAbort") == NULL || strstr(bang, "ncclCommDestroy") != NULL))
      g_error("failing NCCL call %" G_GUINT64_FORMAT " with communicators live: not aborted: %s", k, t);
  }
  g_test_message("%" G_GUINT64_FORMAT " NCCL calls failed in turn, all reported, nothing leaked", total);
  fakes_off();
}

/* Each CUDA call of a clean run failed in turn, with a plain and a sticky
 * fault: the new calls (the side streams, their events, fan out and in,
 * the polling query) among them. */
static void test_cuda_faults(gconstpointer data) {
  const Case *tc = data;
  int D = tc->devices;
  g_autofree char *yaml = coll_yaml(D);
  g_autoptr(DrGraph) g = load(yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  fakes_on(D, dr_fake_api());
  dr_fake_set_run_twins(FALSE);
  dr_fake_set_move_data(FALSE);
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, FALSE, 2, &error);
    g_assert_no_error(error);
    g_assert_nonnull(got);
  }
  guint64 points = dr_fake_points();
  gboolean saw_query = FALSE;
  const GArray *t = dr_fake_trace();
  for (guint i = 0; i < t->len; i++)
    saw_query |= strcmp(g_array_index(t, DrFakeCall, i).name, "cudaEventQuery") == 0;
  g_assert_true(saw_query);
  /* The final close's releases, selections and drains are not checked. */
  guint64 teardown_from = points + 1;
  for (guint i = t->len; i-- > 0;) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (c->point == 0) continue;
    if (!c->release && strcmp(c->name, "cudaSetDevice") != 0 && strcmp(c->name, "cudaDeviceSynchronize") != 0)
      break;
    teardown_from = c->point;
  }
  const DrFault kinds[] = {DR_FAULT_INVALID, DR_FAULT_ILLEGAL};
  guint failed = 0;
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
    for (guint64 at = 1; at <= points; at++) {
      fakes_on(D, dr_fake_api());
      dr_fake_set_run_twins(FALSE);
      dr_fake_set_move_data(FALSE);
      dr_fake_arm(at, kinds[k]);
      g_autoptr(GError) error = NULL;
      g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, tc->mode, tc->timing, FALSE, 2, &error);
      gint64 fi = dr_fake_fault_index();
      const DrFakeCall *c = fi >= 0 ? &g_array_index(dr_fake_trace(), DrFakeCall, fi) : NULL;
      g_autoptr(GString) live = g_string_new(NULL);
      dr_fake_describe_live(live);
      gconstpointer only = NULL;
      gboolean rejected_release = c && c->release && dr_fake_only_live(&only);
      if (!rejected_release && strcmp(live->str, "nothing") != 0)
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): left %s", dr_fault_name(kinds[k]), at,
                           c ? c->name : "?", live->str);
      if (dr_fake_misuse()[0] || dr_fake_nccl.misuse->str[0] || dr_fake_nccl.live != 0)
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT
                           " (%s): misuse %s%s, communicators %" G_GINT64_FORMAT,
                           dr_fault_name(kinds[k]), at, c ? c->name : "?", dr_fake_misuse(),
                           dr_fake_nccl.misuse->str, dr_fake_nccl.live);
      if (got != NULL) {
        if (c == NULL || (!c->release && at < teardown_from))
          g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): the run succeeded",
                             dr_fault_name(kinds[k]), at, c ? c->name : "?");
        continue;
      }
      gboolean no_device = c && strcmp(c->name, "cudaGetDeviceCount") == 0;
      if (dr_error_exit_code(error) != (no_device ? 69 : 70))
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): exit %d: %s", dr_fault_name(kinds[k]), at,
                           c ? c->name : "?", dr_error_exit_code(error), error->message);
      if (c && !strstr(error->message, c->name) && !strstr(error->message, "kernel launch") &&
          !strstr(error->message, "stamp kernel"))
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT ": the error does not name %s: %s",
                           dr_fault_name(kinds[k]), at, c->name, error->message);
      failed++;
    }
  g_test_message("%" G_GUINT64_FORMAT " points x 2 faults: %u failed cleanly", points, failed);
  fakes_off();
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* Run from the workspace root (bazel test's runfiles root holds graphs/). */
  static const Case cases[] = {
      {2, DR_MODE_STREAMS, DR_TIMING_AUTO},   {2, DR_MODE_STREAMS, DR_TIMING_EVENTS},
      {2, DR_MODE_GRAPH, DR_TIMING_AUTO},     {2, DR_MODE_GRAPH, DR_TIMING_EVENTS},
      {4, DR_MODE_STREAMS, DR_TIMING_EVENTS}, {4, DR_MODE_GRAPH, DR_TIMING_EVENTS},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const Case *c = &cases[i];
    const char *m = dr_mode_name(c->mode), *tm = dr_timing_mode_name(c->timing);
    g_autofree char *a = g_strdup_printf("/nccl-multi/collectives/%d/%s/%s", c->devices, m, tm);
    g_test_add_data_func(a, c, test_collectives);
    if (c->timing != DR_TIMING_EVENTS) continue;
    g_autofree char *v = g_strdup_printf("/nccl-multi/verify/%d/%s", c->devices, m);
    g_autofree char *e = g_strdup_printf("/nccl-multi/async-error/%d/%s", c->devices, m);
    g_autofree char *f = g_strdup_printf("/nccl-multi/nccl-faults/%d/%s", c->devices, m);
    g_test_add_data_func(v, c, test_verify);
    g_test_add_data_func(e, c, test_async_error);
    g_test_add_data_func(f, c, test_nccl_faults);
    if (c->devices == 2) {
      g_autofree char *x = g_strdup_printf("/nccl-multi/cuda-faults/%d/%s", c->devices, m);
      g_autofree char *ex = g_strdup_printf("/nccl-multi/examples/%s", m);
      g_test_add_data_func(x, c, test_cuda_faults);
      g_test_add_data_func(ex, c, test_examples);
    }
  }
  static const Case one = {1, DR_MODE_STREAMS, DR_TIMING_EVENTS};
  g_test_add_data_func("/nccl-multi/async-error/1/streams", &one, test_async_error);
  g_test_add_func("/nccl-multi/sensitive", test_sensitive);
  return g_test_run();
}
