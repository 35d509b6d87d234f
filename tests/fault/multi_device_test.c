/* multi_device_test.c: the CUDA backend driving several devices from one
 * process, on the fake runtime of fake_cuda.h pretending to have 2 or 4
 * devices. What is checked, from the exact calls the backend makes:
 *  - every call on a stream (work, event records, waits) is made with that
 *    stream's device selected by the last cudaSetDevice, and the fake
 *    (which refuses work on another device's stream, events recorded on
 *    another device's stream, elapsed times across devices, kernels and
 *    cudaMemcpyAsync touching another device's memory) sees no misuse;
 *  - a dependency from a node of device 0 to a node of device 1 is one
 *    record of the producer's completion event on its device-0 stream and
 *    one wait on it on the consumer's device-1 stream, per iteration;
 *  - peer access is asked (cudaDeviceCanAccessPeer) and enabled once per
 *    pair of devices a peer copy uses, and a second backend run of the
 *    process (--verify's) takes cudaErrorPeerAccessAlreadyEnabled in its
 *    stride; peer copies are cudaMemcpyPeerAsync;
 *  - without peer access a peer copy is two cudaMemcpyAsync through pinned
 *    host memory, and nothing is enabled;
 *  - the results (a checksum host node) equal the host backend's, in both
 *    modes, with peer access and staged;
 *  - graph mode makes one capture whose nodes come from every device's
 *    streams, one instantiation, and replays it;
 *  - a pipeline with a copy from a device to itself (both buffers naming
 *    `device:`) takes cudaMemcpyPeerAsync with no peer access call;
 *  - more run.devices than the machine has is exit 69, and so is a
 *    per-rank collective on a rank of several devices (collectives over
 *    the devices of the process: tests/mpi/nccl_multi_test.c);
 *  - fault sweeps: each call of a fault-free run failed in turn, with each
 *    fault kind, fails the run cleanly (exit 70; 69 for no device) with
 *    nothing left live and no misuse, in both modes, on 2 and 4 devices.
 * This file runs no device code; the fake runs the kernels' host twins. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/run.h"
#include "include/dagrun/dagrun.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"
#include "tests/fault/fake_run.h"

/* Two devices: a memset on device 0, a peer copy to device 1 (a
 * cross-device edge), a kernel there, a copy down to host, a checksum; and
 * the other way, device 1 -> device 0, with stream-ordered scratch on both. */
static const char two_devices[] =
    "dagrun: 1\n"
    "name: two\n"
    "run: {devices: [0, 1]}\n"
    "memory: {release_threshold: {0: 1MiB, 1: 2MiB}}\n"
    "buffers:\n"
    "  a0: {type: f32, count: 256, init: {random: 1}}\n"
    "  b1: {type: f32, count: 256, device: 1}\n"
    "  c1: {type: f32, count: 256, init: {random: 2}, device: 1}\n"
    "  d0: {type: f32, count: 256}\n"
    "  t0: {type: f32, count: 256}\n"
    "  t1: {type: f32, count: 256, device: 1}\n"
    "  h: {type: f32, count: 256, where: host}\n"
    "  g: {type: f32, count: 256, where: host}\n"
    "nodes:\n"
    "  fill: {op: memset, dst: a0, value: 7}\n"
    "  p01: {op: copy, src: a0, dst: b1}\n"
    "  get1: {op: alloc, buffer: t1}\n"
    "  k1: {op: kernel, kernel: add_f32, args: {a: b1, b: c1, y: t1}}\n"
    "  down: {op: copy, src: t1, dst: h}\n"
    "  put1: {op: free, buffer: t1}\n"
    "  p10: {op: copy, src: c1, dst: d0}\n"
    "  get0: {op: alloc, buffer: t0}\n"
    "  k0: {op: kernel, kernel: add_f32, args: {a: d0, b: d0, y: t0}}\n"
    "  down0: {op: copy, src: t0, dst: g}\n"
    "  put0: {op: free, buffer: t0}\n"
    "  sum: {op: host, fn: checksum, args: {buffer: h}}\n"
    "  sum0: {op: host, fn: checksum, args: {buffer: g}}\n";

/* Four devices: a ring of peer copies 0 -> 1 -> 2 -> 3 -> 0, a kernel on
 * each, a checksum of what came back. */
static const char four_devices[] =
    "dagrun: 1\n"
    "name: four\n"
    "run: {devices: [0, 1, 2, 3]}\n"
    "buffers:\n"
    "  x0: {type: f32, count: 128, init: {random: 1}}\n"
    "  x1: {type: f32, count: 128, device: 1}\n"
    "  x2: {type: f32, count: 128, device: 2}\n"
    "  x3: {type: f32, count: 128, device: 3}\n"
    "  y0: {type: f32, count: 128}\n"
    "  y1: {type: f32, count: 128, device: 1}\n"
    "  y2: {type: f32, count: 128, device: 2}\n"
    "  y3: {type: f32, count: 128, device: 3}\n"
    "  h: {type: f32, count: 128, where: host}\n"
    "nodes:\n"
    "  c01: {op: copy, src: x0, dst: x1}\n"
    "  k1: {op: kernel, kernel: add_f32, args: {a: x1, b: x1, y: y1}}\n"
    "  c12: {op: copy, src: y1, dst: x2}\n"
    "  k2: {op: kernel, kernel: add_f32, args: {a: x2, b: x2, y: y2}}\n"
    "  c23: {op: copy, src: y2, dst: x3}\n"
    "  k3: {op: kernel, kernel: add_f32, args: {a: x3, b: x3, y: y3}}\n"
    "  c30: {op: copy, src: y3, dst: y0}\n"
    "  down: {op: copy, src: y0, dst: h}\n"
    "  sum: {op: host, fn: checksum, args: {buffer: h}}\n";

/* One device, a copy from it to itself through the peer path. */
static const char self_copy[] =
    "dagrun: 1\n"
    "name: self\n"
    "buffers:\n"
    "  a: {type: f32, count: 64, init: {random: 3}, device: 0}\n"
    "  b: {type: f32, count: 64, device: 0}\n"
    "  h: {type: f32, count: 64, where: host}\n"
    "nodes:\n"
    "  p: {op: copy, src: a, dst: b}\n"
    "  down: {op: copy, src: b, dst: h}\n"
    "  sum: {op: host, fn: checksum, args: {buffer: h}}\n";

static DrGraph *load(const char *yaml) { return dr_fake_load_yaml("test.yaml", yaml); }

/* The fake's streams in creation order (1-based serial -> device). */
typedef struct {
  GArray *dev;     /* int, [serial - 1] */
  guint n_set;     /* cudaSetDevice calls */
  guint misplaced; /* calls on a stream made with another device selected */
} TraceFacts;

static const char *const stream_calls[] = {
    "kernel_launch",      "cudaMemcpyAsync",          "cudaMemcpyPeerAsync", "cudaMemsetAsync",
    "cudaEventRecord",    "cudaEventRecordWithFlags", "cudaStreamWaitEvent", "cudaMallocAsync",
    "cudaLaunchHostFunc", "cudaLaunchKernel",         "stamp_launch"};

static gboolean is_stream_call(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(stream_calls); i++)
    if (strcmp(name, stream_calls[i]) == 0) return TRUE;
  return FALSE;
}

/* Walks the trace: the device of each stream (the device selected when it
 * was made) and whether each call on a stream had its device selected. */
static void trace_facts(TraceFacts *f) {
  const GArray *t = dr_fake_trace();
  f->dev = g_array_new(FALSE, TRUE, sizeof(int));
  f->n_set = f->misplaced = 0;
  int cur = 0;
  for (guint i = 0; i < t->len; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (c->rc != cudaSuccess) continue;
    if (strcmp(c->name, "cudaSetDevice") == 0) {
      cur = (int)c->size;
      f->n_set++;
    } else if (strcmp(c->name, "cudaStreamCreateWithPriority") == 0) {
      g_array_set_size(f->dev, MAX(f->dev->len, c->stream));
      g_array_index(f->dev, int, c->stream - 1) = cur;
    } else if (c->stream && is_stream_call(c->name) && c->stream <= f->dev->len &&
               g_array_index(f->dev, int, c->stream - 1) != cur) {
      g_test_message("%s on a stream of device %d with device %d selected", c->name,
                     g_array_index(f->dev, int, c->stream - 1), cur);
      f->misplaced++;
    }
  }
}

static guint count_calls(const char *name, cudaError_t rc) {
  const GArray *t = dr_fake_trace();
  guint n = 0;
  for (guint i = 0; i < t->len; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    n += strcmp(c->name, name) == 0 && c->rc == rc;
  }
  return n;
}

static void assert_clean(void) {
  g_autoptr(GString) live = g_string_new(NULL);
  dr_fake_describe_live(live);
  g_assert_cmpstr(live->str, ==, "nothing");
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
}

typedef struct {
  DrMode mode;
  DrTimingMode timing;
} ModeCase;

/* The fake with `devices` devices, peer access between them as `peer`,
 * the host twins running and graphs replayed. */
static void fake_devices(int devices, gboolean peer) {
  dr_fake_set_devices(devices);
  dr_fake_set_peer_access(peer);
  dr_fake_set_run_twins(TRUE);
  dr_fake_set_replay_graphs(TRUE);
}

/* Runs `p` for `iterations` on the host backend, then on the CUDA
 * backend in mc's mode and timing: the same output, nothing left behind,
 * every call on a stream made with that stream's device selected. The
 * trace's facts in *f (the caller unrefs f->dev). */
static void run_matches_host(const DrPlan *p, const ModeCase *mc, guint32 iterations, TraceFacts *f) {
  g_autofree char *want = dr_fake_host_printed(p, iterations);
  dr_fake_reset();
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, mc->mode, mc->timing, FALSE, iterations, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(got, ==, want);
  assert_clean();
  trace_facts(f);
  g_assert_cmpuint(f->misplaced, ==, 0);
}

/* The two-device pipeline: right device before every call, the results
 * of the host backend, one record and one wait for the cross-device edge
 * fill -> p01 per iteration. */
static void test_two_devices(gconstpointer data) {
  const ModeCase *mc = data;
  fake_devices(2, TRUE);
  g_autoptr(DrGraph) g = load(two_devices);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  const guint32 iterations = 3;
  TraceFacts f;
  run_matches_host(p, mc, iterations, &f);
  g_assert_cmpuint(f.n_set, >, 2);

  /* The edge fill (device 0) -> p01 (device 1). */
  DrId fill = dr_graph_find_node(g, "fill"), p01 = dr_graph_find_node(g, "p01");
  g_assert_cmpuint(fill, !=, DR_NONE);
  guint32 s_fill = p->node_stream[fill], s_p01 = p->node_stream[p01];
  g_assert_cmpint(g_array_index(p->streams, DrStream, s_fill).device, ==, 0);
  g_assert_cmpint(g_array_index(p->streams, DrStream, s_p01).device, ==, 1);
  g_assert_true(p->needs_event[fill]);
  const DrPlanStep *step = dr_plan_step(p, p->node_step[p01]);
  gboolean waits = FALSE;
  for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++)
    waits |= dr_plan_wait(p, w) == fill;
  g_assert_true(waits);
  /* fill's memset, then its completion event: recorded with device 0
   * selected on fill's stream; waited on by p01's stream with device 1
   * selected. Once per iteration (a graph: once, in the capture). */
  const GArray *t = dr_fake_trace();
  guint fill_stream = 0;
  for (guint i = 0; i < t->len && fill_stream == 0; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (strcmp(c->name, "cudaMemsetAsync") == 0 && c->size == 256 * 4) fill_stream = c->stream;
  }
  g_assert_cmpuint(fill_stream, !=, 0);
  /* fill's completion event: the one recorded on fill's stream that a
   * stream of device 1 waits on. */
  gconstpointer done = NULL;
  for (guint i = 0; i < t->len && done == NULL; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (strcmp(c->name, "cudaStreamWaitEvent") != 0 || g_array_index(f.dev, int, c->stream - 1) != 1)
      continue;
    for (guint j = 0; j < i && done == NULL; j++) {
      const DrFakeCall *r = &g_array_index(t, DrFakeCall, j);
      if (strcmp(r->name, "cudaEventRecord") == 0 && r->stream == fill_stream && r->event == c->event)
        done = c->event;
    }
  }
  g_assert_nonnull(done);
  guint records = 0, waits_seen = 0, p01_stream = 0;
  int cur = 0;
  for (guint i = 0; i < t->len; i++) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (strcmp(c->name, "cudaSetDevice") == 0) cur = (int)c->size;
    if (c->event == done && strcmp(c->name, "cudaEventRecord") == 0) {
      g_assert_cmpint(cur, ==, 0);
      g_assert_cmpuint(c->stream, ==, fill_stream);
      records++;
    }
    if (c->event == done && strcmp(c->name, "cudaStreamWaitEvent") == 0) {
      g_assert_cmpint(cur, ==, 1);
      g_assert_cmpint(g_array_index(f.dev, int, c->stream - 1), ==, 1);
      if (p01_stream == 0) p01_stream = c->stream;
      g_assert_cmpuint(c->stream, ==, p01_stream);
      waits_seen++;
    }
  }
  guint per_run = mc->mode == DR_MODE_GRAPH ? 1 : iterations;
  g_assert_cmpuint(records, ==, per_run);
  g_assert_cmpuint(waits_seen, ==, per_run);
  /* Peer copies: 0 -> 1 runs on device 1 (p01), 1 -> 0 on device 0 (p10):
   * two pairs, each asked and enabled once. */
  g_assert_cmpuint(count_calls("cudaDeviceCanAccessPeer", cudaSuccess), ==, 2);
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaSuccess), ==, 2);
  g_assert_cmpuint(dr_fake_peer_enables(1, 0), ==, 1);
  g_assert_cmpuint(dr_fake_peer_enables(0, 1), ==, 1);
  /* Eagerly cudaMemcpyPeerAsync; a capture refuses it (the H200 does), so
   * graph mode's two memcpy nodes come from cudaMemcpyDefault copies (the
   * fake calls cudaMemcpyPeerAsync while capturing a misuse). */
  g_assert_cmpuint(count_calls("cudaMemcpyPeerAsync", cudaSuccess), ==,
                   mc->mode == DR_MODE_GRAPH ? 0 : 2 * iterations);
  /* Each device's pool gets its own release threshold. */
  g_assert_cmpuint(count_calls("cudaDeviceGetDefaultMemPool", cudaSuccess), ==, 2);
  if (mc->mode == DR_MODE_GRAPH) {
    g_assert_cmpuint(count_calls("cudaStreamBeginCapture", cudaSuccess), ==, 1);
    g_assert_cmpuint(count_calls("cudaStreamEndCapture", cudaSuccess), ==, 1);
    g_assert_cmpuint(count_calls("cudaGraphInstantiate", cudaSuccess), ==, 1);
    g_assert_cmpuint(count_calls("cudaGraphLaunch", cudaSuccess), ==, iterations);
    /* The capture holds work of both devices' streams. */
    gboolean in = FALSE, dev_seen[2] = {FALSE, FALSE};
    for (guint i = 0; i < t->len; i++) {
      const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
      if (strcmp(c->name, "cudaStreamBeginCapture") == 0) in = TRUE;
      if (strcmp(c->name, "cudaStreamEndCapture") == 0) in = FALSE;
      if (in && c->stream &&
          (strcmp(c->name, "kernel_launch") == 0 || strcmp(c->name, "cudaMallocAsync") == 0))
        dev_seen[g_array_index(f.dev, int, c->stream - 1)] = TRUE;
    }
    g_assert_true(dev_seen[0] && dev_seen[1]);
  }
  g_array_unref(f.dev);
  dr_fake_reset();
}

/* --verify: two backend runs in one process; the second finds peer
 * access already enabled and goes on. */
static void test_peer_once(void) {
  dr_fake_set_devices(2);
  dr_fake_set_peer_access(TRUE);
  dr_fake_set_run_twins(TRUE);
  g_autoptr(DrGraph) g = load(two_devices);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  dr_fake_reset();
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, DR_MODE_STREAMS, DR_TIMING_AUTO, TRUE, 2, &error);
  g_assert_no_error(error);
  assert_clean();
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaSuccess), ==, 2);
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaErrorPeerAccessAlreadyEnabled), ==, 2);
  g_assert_cmpuint(dr_fake_peer_enables(1, 0), ==, 2);
  dr_fake_reset();
}

/* No peer access: staged copies, nothing enabled, the same results. */
static void test_staged(gconstpointer data) {
  const ModeCase *mc = data;
  fake_devices(2, FALSE);
  g_autoptr(DrGraph) g = load(two_devices);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  TraceFacts f;
  run_matches_host(p, mc, 2, &f);
  g_array_unref(f.dev);
  g_assert_cmpuint(count_calls("cudaDeviceCanAccessPeer", cudaSuccess), ==, 2);
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaSuccess), ==, 0);
  g_assert_cmpuint(count_calls("cudaMemcpyPeerAsync", cudaSuccess), ==, 0);
  /* Two staging buffers, besides the host buffers h and g. */
  g_assert_cmpuint(count_calls("cudaMallocHost", cudaSuccess), ==, 4);
  dr_fake_set_peer_access(TRUE);
  dr_fake_reset();
}

/* Four devices, a ring of peer copies. */
static void test_four_devices(gconstpointer data) {
  const ModeCase *mc = data;
  fake_devices(4, TRUE);
  g_autoptr(DrGraph) g = load(four_devices);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  TraceFacts f;
  run_matches_host(p, mc, 2, &f);
  g_array_unref(f.dev);
  /* Each copy runs on its dst's device: pairs (1,0), (2,1), (3,2), (0,3). */
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaSuccess), ==, 4);
  for (int d = 0; d < 4; d++) g_assert_cmpuint(dr_fake_peer_enables(d, (d + 3) % 4), ==, 1);
  dr_fake_reset();
}

/* A copy from device 0 to itself, both buffers naming it: the peer path,
 * no peer access asked; one device, so no cudaSetDevice after the first. */
static void test_self_copy(gconstpointer data) {
  const ModeCase *mc = data;
  fake_devices(1, TRUE);
  g_autoptr(DrGraph) g = load(self_copy);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  g_assert_true(dr_graph_copy_is_peer(g, dr_graph_find_node(g, "p"), NULL, NULL));
  g_assert_false(dr_graph_copy_is_peer(g, dr_graph_find_node(g, "down"), NULL, NULL));
  TraceFacts f;
  run_matches_host(p, mc, 2, &f);
  g_array_unref(f.dev);
  /* Eagerly the peer call; a capture takes a cudaMemcpyDefault copy. */
  if (mc->mode == DR_MODE_GRAPH)
    g_assert_cmpuint(count_calls("cudaMemcpyPeerAsync", cudaSuccess), ==, 0);
  else
    g_assert_cmpuint(count_calls("cudaMemcpyPeerAsync", cudaSuccess), >, 0);
  g_assert_cmpuint(count_calls("cudaDeviceCanAccessPeer", cudaSuccess), ==, 0);
  g_assert_cmpuint(count_calls("cudaDeviceEnablePeerAccess", cudaSuccess), ==, 0);
  /* One, at open, as before several devices. */
  g_assert_cmpuint(count_calls("cudaSetDevice", cudaSuccess), ==, 1);
  dr_fake_reset();
  g_autoptr(GError) error = NULL;
  g_autofree char *verified = dr_fake_run_printed(p, DR_BACKEND_CUDA, mc->mode, mc->timing, TRUE, 2, &error);
  g_assert_no_error(error);
  assert_clean();
  dr_fake_reset();
}

/* run.devices names a device the machine lacks: exit 69. */
static void test_missing_device(void) {
  dr_fake_set_devices(2);
  g_autoptr(DrGraph) g = load(four_devices);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  dr_fake_reset();
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, DR_MODE_STREAMS, DR_TIMING_AUTO, FALSE, 1, &error);
  g_assert_null(got);
  g_assert_nonnull(error);
  g_assert_cmpint(dr_error_exit_code(error), ==, 69);
  g_assert_nonnull(strstr(error->message, "cudaSetDevice"));
  assert_clean();
  dr_fake_reset();
}

/* A collective over several devices runs (tests/mpi:nccl_multi checks
 * it); what stays refused is a per-rank collective (one buffer: this
 * rank's part across an MPI job) on a rank that drives several devices:
 * exit 69 naming the node, before any CUDA call. */
static void test_collective_refused(void) {
  static const char yaml[] =
      "dagrun: 1\n"
      "name: coll\n"
      "run: {devices: [0, 1]}\n"
      "buffers:\n"
      "  g0: {type: f32, count: 16}\n"
      "  g1: {type: f32, count: 16, device: 1}\n"
      "nodes:\n"
      "  sync: {op: allreduce, reduce: sum, buffers: g0}\n";
  dr_fake_set_devices(2);
  dr__load_set_ranks(0, 2, 0);
  g_autoptr(DrGraph) g = load(yaml);
  dr__load_set_ranks(0, 1, 0);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  dr_fake_reset();
  g_autoptr(GError) error = NULL;
  g_autofree char *got =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, DR_MODE_STREAMS, DR_TIMING_AUTO, FALSE, 1, &error);
  g_assert_null(got);
  g_assert_cmpint(dr_error_exit_code(error), ==, 69);
  g_assert_nonnull(strstr(error->message, "node 'sync'"));
  g_assert_nonnull(strstr(error->message, "ranks x devices"));
  assert_clean();
  dr_fake_reset();
}

/* --plan knows the path at plan time on the CUDA backend (a probe through
 * the table), and says so in text and JSON; the host backend's plan says
 * the run checks it. */
static void test_plan_probe(void) {
  dr_fake_set_devices(2);
  g_autoptr(DrGraph) g = load(two_devices);
  DrId p01 = dr_graph_find_node(g, "p01");
  for (int can = 0; can < 2; can++) {
    dr_fake_set_peer_access(can);
    dr_fake_reset();
    g_autoptr(DrPlan) p = dr_fake_plan(g);
    g_assert_cmpstr(dr_plan_peer_path(p, p01), ==, "unknown");
    dr_run_probe_peers(p, DR_BACKEND_HOST);
    g_assert_null(p->peer_path);
    dr_run_probe_peers(p, DR_BACKEND_CUDA);
    g_assert_nonnull(p->peer_path);
    g_assert_cmpstr(dr_plan_peer_path(p, p01), ==, can ? "access" : "staged");
    g_assert_cmpuint(count_calls("cudaDeviceCanAccessPeer", cudaSuccess), ==, 2);
    g_assert_null(dr_plan_peer_path(p, dr_graph_find_node(g, "down")));
    g_autoptr(GString) text = g_string_new(NULL), json = g_string_new(NULL);
    dr_plan_write_text(p, text);
    dr_plan_write_json(p, json);
    g_assert_nonnull(
        strstr(text->str, can ? "KiB, peer 0->1)" : "peer 0->1 staged through pinned host memory"));
    g_assert_nonnull(strstr(json->str, can ? "\"peer\": \"access\"" : "\"peer\": \"staged\""));
    assert_clean();
  }
  dr_fake_set_peer_access(TRUE);
  dr_fake_reset();
}

/* ---- fault sweeps ------------------------------------------------------- */

typedef struct {
  const char *yaml;
  int devices;
  gboolean peer;
  DrMode mode;
  DrTimingMode timing;
} SweepCase;

static void test_sweep(gconstpointer data) {
  const SweepCase *sc = data;
  /* The plain table, as tests/fault:fault sweeps it: the node-map queries
   * of graph_nodes are optional calls whose failures graph.c ignores. */
  const DrCudaApi *prev = dr_cuda_api_set(dr_fake_api());
  dr_fake_set_devices(sc->devices);
  dr_fake_set_peer_access(sc->peer);
  dr_fake_set_run_twins(FALSE);
  dr_fake_set_replay_graphs(FALSE);
  g_autoptr(DrGraph) g = load(sc->yaml);
  g_autoptr(DrPlan) p = dr_fake_plan(g);
  dr_fake_reset();
  g_autoptr(GError) base_error = NULL;
  g_autofree char *base =
      dr_fake_run_printed(p, DR_BACKEND_CUDA, sc->mode, sc->timing, FALSE, 2, &base_error);
  g_assert_no_error(base_error);
  assert_clean();
  guint64 points = dr_fake_points();
  g_assert_cmpuint(points, >, 0);
  /* The calls new with several devices must be among the points. */
  g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
  const GArray *t = dr_fake_trace();
  for (guint i = 0; i < t->len; i++) g_hash_table_add(names, (gpointer)g_array_index(t, DrFakeCall, i).name);
  g_assert_true(g_hash_table_contains(names, "cudaSetDevice"));
  g_assert_true(g_hash_table_contains(names, "cudaDeviceCanAccessPeer"));
  /* (graph mode captures peer copies as cudaMemcpyAsync) */
  g_assert_true(g_hash_table_contains(names, !sc->peer                   ? "cudaMallocHost"
                                             : sc->mode == DR_MODE_GRAPH ? "cudaMemcpyAsync"
                                                                         : "cudaMemcpyPeerAsync"));
  if (sc->peer) g_assert_true(g_hash_table_contains(names, "cudaDeviceEnablePeerAccess"));
  /* The final close: its releases, and the selections and drains around
   * them, which close does not check (it has no error to report). */
  guint64 teardown_from = points + 1;
  for (guint i = t->len; i-- > 0;) {
    const DrFakeCall *c = &g_array_index(t, DrFakeCall, i);
    if (c->point == 0) continue;
    if (!c->release && strcmp(c->name, "cudaSetDevice") != 0 && strcmp(c->name, "cudaDeviceSynchronize") != 0)
      break;
    teardown_from = c->point;
  }
  guint failed = 0, ignored = 0;
  for (int k = 0; k < DR_N_FAULTS; k++)
    for (guint64 at = 1; at <= points; at++) {
      dr_fake_reset();
      dr_fake_arm(at, (DrFault)k);
      g_autoptr(GError) error = NULL;
      g_autofree char *got = dr_fake_run_printed(p, DR_BACKEND_CUDA, sc->mode, sc->timing, FALSE, 2, &error);
      const DrFakeCall *c = dr_fake_faulted_call();
      g_autoptr(GString) live = g_string_new(NULL);
      dr_fake_describe_live(live);
      gconstpointer only = NULL;
      gboolean rejected_release = c && c->release && dr_fake_only_live(&only);
      if (!rejected_release && strcmp(live->str, "nothing") != 0)
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): left %s", dr_fault_name((DrFault)k), at,
                           c ? c->name : "?", live->str);
      if (dr_fake_misuse()[0])
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): misuse %s", dr_fault_name((DrFault)k), at,
                           c ? c->name : "?", dr_fake_misuse());
      if (got != NULL) {
        /* Only a release after the run's last iteration may fail quietly. */
        if (c == NULL || (!c->release && at < teardown_from))
          g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): the run succeeded",
                             dr_fault_name((DrFault)k), at, c ? c->name : "?");
        ignored++;
        continue;
      }
      int code = dr_error_exit_code(error);
      gboolean no_device = strstr(error->message, "cudaErrorNoDevice") != NULL ||
                           (c && strcmp(c->name, "cudaGetDeviceCount") == 0);
      if (code != (no_device ? 69 : 70))
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT " (%s): exit %d: %s", dr_fault_name((DrFault)k),
                           at, c ? c->name : "?", code, error->message);
      /* A failed capture query reads as a broken capture (graph.c), which
       * names the node instead. */
      gboolean query = c && strcmp(c->name, "cudaStreamGetCaptureInfo") == 0 &&
                       strstr(error->message, "cannot be captured") != NULL;
      if (c && !query && !strstr(error->message, c->name) && !strstr(error->message, "kernel launch") &&
          !strstr(error->message, "stamp kernel"))
        g_test_fail_printf("%s fault at %" G_GUINT64_FORMAT ": the error does not name %s: %s",
                           dr_fault_name((DrFault)k), at, c->name, error->message);
      failed++;
    }
  g_test_message("%" G_GUINT64_FORMAT " points x %d faults: %u failed cleanly, %u in releases ignored",
                 points, DR_N_FAULTS, failed, ignored);
  dr_fake_set_peer_access(TRUE);
  dr_fake_reset();
  dr_cuda_api_set(prev);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dr_cuda_api_set(dr_fake_api_graph_nodes());
  static const ModeCase modes[] = {
      {DR_MODE_STREAMS, DR_TIMING_AUTO}, {DR_MODE_STREAMS, DR_TIMING_EVENTS},
      {DR_MODE_STREAMS, DR_TIMING_OFF},  {DR_MODE_GRAPH, DR_TIMING_AUTO},
      {DR_MODE_GRAPH, DR_TIMING_EVENTS}, {DR_MODE_GRAPH, DR_TIMING_STAMPS},
  };
  for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
    const char *m = dr_mode_name(modes[i].mode), *tm = dr_timing_mode_name(modes[i].timing);
    g_autofree char *a = g_strdup_printf("/multi-device/two/%s/%s", m, tm);
    g_autofree char *b = g_strdup_printf("/multi-device/staged/%s/%s", m, tm);
    g_autofree char *c = g_strdup_printf("/multi-device/four/%s/%s", m, tm);
    g_autofree char *d = g_strdup_printf("/multi-device/self-copy/%s/%s", m, tm);
    g_test_add_data_func(a, &modes[i], test_two_devices);
    g_test_add_data_func(b, &modes[i], test_staged);
    g_test_add_data_func(c, &modes[i], test_four_devices);
    g_test_add_data_func(d, &modes[i], test_self_copy);
  }
  g_test_add_func("/multi-device/peer-once", test_peer_once);
  g_test_add_func("/multi-device/plan-probe", test_plan_probe);
  g_test_add_func("/multi-device/missing-device", test_missing_device);
  g_test_add_func("/multi-device/collective-refused", test_collective_refused);
  static const SweepCase sweeps[] = {
      {two_devices, 2, TRUE, DR_MODE_STREAMS, DR_TIMING_EVENTS},
      {two_devices, 2, TRUE, DR_MODE_GRAPH, DR_TIMING_EVENTS},
      {two_devices, 2, FALSE, DR_MODE_STREAMS, DR_TIMING_OFF},
      {two_devices, 2, FALSE, DR_MODE_GRAPH, DR_TIMING_AUTO},
      {four_devices, 4, TRUE, DR_MODE_STREAMS, DR_TIMING_EVENTS},
      {four_devices, 4, TRUE, DR_MODE_GRAPH, DR_TIMING_EVENTS},
  };
  for (guint i = 0; i < G_N_ELEMENTS(sweeps); i++) {
    g_autofree char *path = g_strdup_printf("/multi-device/sweep/%d-devices%s/%s/%s", sweeps[i].devices,
                                            sweeps[i].peer ? "" : "-staged", dr_mode_name(sweeps[i].mode),
                                            dr_timing_mode_name(sweeps[i].timing));
    g_test_add_data_func(path, &sweeps[i], test_sweep);
  }
  return g_test_run();
}
