/* fake_cuda.c: the fake CUDA runtime and its fault shim (fake_cuda.h).
 *
 * Every object lives in `objects`, keyed by the pointer handed out: the
 * memory block for allocations, the Obj itself for handles. Each entry
 * point first passes the gate (gate_enter), which numbers the fault point,
 * fires the armed fault and applies the sticky state; it then checks its
 * handles and does the work. */
#include "tests/fault/fake_cuda.h"

#include <string.h>

#include "ir/graph.h"
#include "kernels/blas.h"

typedef struct {
  DrFakeKind kind;
  gsize size;           /* memory: bytes */
  guint flags;          /* events: creation flags */
  guint serial;         /* streams: creation number since the reset */
  GPtrArray *graph_mem; /* graphs: allocations captured into them (Obj *) */
  GPtrArray *nodes;     /* graphs: their nodes (FakeNode *, owned), in capture order;
                           graph execs: their own copies (FakeNode *, owned) */
  guint64 pooled;       /* stream-ordered memory: the bytes the pool counts for it */
  gboolean captured;    /* stream-ordered memory: allocated while capturing */
  guint64 graph_peak;   /* graphs and execs: the most captured bytes live at once */
  int device;           /* streams, events, device memory: the device current at creation */
  gboolean freed;       /* stream-ordered memory: freed inside its capture (the graph's now) */
  gconstpointer bound;  /* cuBLAS contexts: the stream bound */
} Obj;

/* A node of a captured graph (the graph-node model, fake_cuda.h): what a
 * captured call made, with the nodes it depends on. Kernel nodes keep the
 * built-in and a deep copy of its launch. */
typedef struct FakeNode {
  enum cudaGraphNodeType type;
  GPtrArray *deps;             /* FakeNode * (borrowed) */
  const struct FakeNode *orig; /* in an exec: the graph's node it copies */
  const DrKernelDef *def;      /* kernel */
  DrKValue args[32];
  uint64_t counts[32];
  DrKLaunch l;
  void *dst; /* memcpy, memset */
  const void *src;
  size_t count;
  int value;
  cudaHostFn_t fn; /* host */
  void *data;
  /* Conditional nodes' control kernels (ctl 1: cond_launch, 2:
   * count_launch; 3: the stamp kernel; 4: a library's own work,
   * dr_fake_library_work: fn(data), named lib; 6: trip_launch, over
   * stamps and trips (its ctl words), with cond its guard) and
   * conditional nodes. */
  int ctl;
  const char *lib;
  cudaGraphConditionalHandle handle;
  const gint32 *cond;
  guint64 *trips;          /* cond_launch's trips, count_launch's counter */
  const guint64 *limit_at; /* count_launch */
  guint64 *stamps;
  gboolean count_always;
  unsigned trip_flags, trip_keep; /* trip_launch */
  gint64 trip;
  guint64 trip_skip;
  enum cudaGraphConditionalNodeType ctype;
  unsigned size;
  cudaGraph_t body[2]; /* keys of fake.bodies */
  gboolean owns;       /* the graph's node (not an exec's copy): frees the bodies */
  gboolean disabled;   /* an exec's node: cudaGraphNodeSetEnabled(0) (a replay skips it) */
  /* A user kernel's launch (ctl 5), with dr_fake_api_user_sets: its
   * second argument as 8 bytes, which a replay reports. */
  gboolean user_rec;
  guint64 user_arg1;
} FakeNode;

/* dr_fake_api_user_sets: user kernel launches record their second
 * argument, and the last replayed one is kept. */
static gboolean user_record;
static guint64 user_replayed;

static void body_free(cudaGraph_t body);

static void fake_node_free(FakeNode *n) {
  if (n->owns)
    for (unsigned i = 0; i < n->size && i < 2; i++) body_free(n->body[i]);
  g_ptr_array_unref(n->deps);
  g_free(n);
}

static const char *const kind_names[] = {
#define DR_X(e, s) s,
    DR_FAKE_KIND_LIST(DR_X)
#undef DR_X
};

static const struct {
  const char *name;
  cudaError_t error;
  gboolean sticky;
} faults[] = {
#define DR_X(e, err, sticky, name) {name, err, sticky},
    DR_FAULT_LIST(DR_X)
#undef DR_X
};

const char *dr_fake_kind_name(DrFakeKind kind) { return kind_names[kind]; }
const char *dr_fault_name(DrFault fault) { return faults[fault].name; }
cudaError_t dr_fault_error(DrFault fault) { return faults[fault].error; }
gboolean dr_fault_sticky(DrFault fault) { return faults[fault].sticky; }

static struct {
  GHashTable *objects; /* key -> Obj* (owned) */
  guint live[DR_FAKE_N_KINDS];
  GArray *trace; /* DrFakeCall */
  guint64 points;
  guint64 fail_at;
  DrFault fault;
  gint64 fault_index;
  cudaError_t sticky;     /* cudaSuccess until a sticky fault fires */
  cudaError_t last_error; /* what cudaGetLastError returns */
  gpointer capture_stream;
  GPtrArray *capture_mem; /* Obj* allocated while capturing */
  GString *misuse;
  GString *after_sticky;
  gboolean run_twins;
  gboolean dry; /* move no data */
  guint n_streams_made;
  gboolean profiling; /* between cudaProfilerStart and cudaProfilerStop */
  /* The graph-node model, while capturing: each stream's current
   * dependencies (stream -> GPtrArray of FakeNode *), each event's captured
   * dependencies, and the nodes made so far (owned). */
  GHashTable *tails, *event_deps;
  GPtrArray *capture_nodes;
  gboolean allow_default_streams;
  gboolean replay;
  guint exec_node_sets;
  /* The default pool's and the graph allocator's accounting: an eager
   * cudaMallocAsync counts its size rounded up to FAKE_POOL_GRANULE until
   * its cudaFreeAsync; a graph's footprint is the most captured bytes live
   * at once in capture order, used from its first launch on. */
  guint64 pool_used, pool_high;
  guint64 capture_live, capture_peak;
  guint64 graph_high;
  /* Conditional nodes: the body graphs (Obj *, owned by their node; not
   * counted as live graphs: they go with it), the captures into an
   * existing graph in progress (Sub *, innermost last; each saved the
   * capture it interrupted), the handles (Handle, handle - 1), and the
   * shape of the last instantiated graph. */
  GHashTable *bodies;
  GPtrArray *subs;
  GArray *handles;
  GString *shape, *shape_deps;
  /* Several devices (dr_fake_set_devices): the device current now
   * (cudaSetDevice), each device's pool accounting (pool_used/pool_high
   * above are device 0's; graph_high counts on device 0), and the peer
   * access enabled from device a to b (peer_enables[a][b]: times it
   * succeeded). n_devices and peer_ok are settings, kept by a reset. */
  int n_devices;
  gboolean peer_no;
  int cur;
  guint64 dev_pool_used[DR_FAKE_MAX_DEVICES], dev_pool_high[DR_FAKE_MAX_DEVICES];
  guint peer_enables[DR_FAKE_MAX_DEVICES][DR_FAKE_MAX_DEVICES];
} fake;

typedef struct {
  gpointer capture_stream;
  GHashTable *tails, *event_deps;
  GPtrArray *capture_nodes;
  Obj *target;
} Sub;

typedef struct {
  unsigned default_value, flags, value;
  gboolean attached;
} Handle;

/* The pseudo-graph cudaStreamGetCaptureInfo returns for the outermost
 * capture (the fake builds its graph object at cudaStreamEndCapture). */
static int capture_graph_token;
#define CAPTURE_GRAPH ((cudaGraph_t)(void *)&capture_graph_token)

static void shape_of(const GPtrArray *nodes, gboolean in_body);
static void replay_nodes(const GPtrArray *nodes);

static void body_free(cudaGraph_t body) {
  Obj *o = fake.bodies ? g_hash_table_lookup(fake.bodies, body) : NULL;
  if (o == NULL) return;
  g_hash_table_remove(fake.bodies, body);
  if (o->nodes) g_ptr_array_unref(o->nodes);
  g_ptr_array_unref(o->graph_mem);
  g_free(o);
}

/* Device 0 keeps the one-device fields, so one-device runs read as before. */
static guint64 *pool_used_of(int d) { return d == 0 ? &fake.pool_used : &fake.dev_pool_used[d]; }
static guint64 *pool_high_of(int d) { return d == 0 ? &fake.pool_high : &fake.dev_pool_high[d]; }
static int n_devices(void) { return fake.n_devices > 0 ? fake.n_devices : 1; }
static gboolean device_valid(int d) { return d >= 0 && d < n_devices(); }

/* The pool's rounding of an allocation: 512 bytes (CuPy's async pool
 * reports 512 used bytes for a 12-byte allocation, cupy/cupy#5177). */
#define FAKE_POOL_GRANULE 512u
static guint64 fake_pool_bytes(gsize size) {
  return (MAX(size, 1) + FAKE_POOL_GRANULE - 1) / FAKE_POOL_GRANULE * FAKE_POOL_GRANULE;
}

/* ---- the graph-node model ------------------------------------------------ */

static GPtrArray *tail_of(gconstpointer stream) {
  if (fake.tails == NULL) {
    fake.tails =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_ptr_array_unref);
    fake.event_deps =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_ptr_array_unref);
  }
  GPtrArray *t = g_hash_table_lookup(fake.tails, stream);
  if (t == NULL) {
    t = g_ptr_array_new();
    g_hash_table_insert(fake.tails, (gpointer)stream, t);
  }
  return t;
}

/* A new node captured on `stream`: it depends on the stream's current
 * dependencies and becomes them. NULL when not capturing. */
static FakeNode *capture_node(gconstpointer stream, enum cudaGraphNodeType type) {
  if (fake.capture_stream == NULL) return NULL;
  GPtrArray *t = tail_of(stream);
  FakeNode *n = g_new0(FakeNode, 1);
  n->type = type;
  n->deps = g_ptr_array_copy(t, NULL, NULL);
  g_ptr_array_set_size(t, 0);
  g_ptr_array_add(t, n);
  if (fake.capture_nodes == NULL)
    fake.capture_nodes = g_ptr_array_new_with_free_func((GDestroyNotify)fake_node_free);
  g_ptr_array_add(fake.capture_nodes, n);
  return n;
}

/* Ends the model's capture: the nodes made, for the graph (or NULL). */
static GPtrArray *capture_model_end(void) {
  GPtrArray *nodes = g_steal_pointer(&fake.capture_nodes);
  if (fake.tails) {
    g_hash_table_remove_all(fake.tails);
    g_hash_table_remove_all(fake.event_deps);
  }
  return nodes;
}

/* Node copy `n` with its launch pointing at its own arrays. */
static FakeNode *node_copy(const FakeNode *n) {
  FakeNode *c = g_new(FakeNode, 1);
  *c = *n;
  c->deps = g_ptr_array_new();
  c->orig = n;
  c->owns = FALSE;
  c->l.args = c->args;
  c->l.counts = c->counts;
  return c;
}

static void set_launch(FakeNode *n, const DrKernelDef *def, const DrKLaunch *l) {
  n->def = def;
  n->l = *l;
  memcpy(n->args, l->args, sizeof(DrKValue) * (gsize)def->n_params);
  memcpy(n->counts, l->counts, sizeof(uint64_t) * (gsize)def->n_params);
  n->l.args = n->args;
  n->l.counts = n->counts;
}

/* The addresses are the devices' default pools' handles. */
static int pool_token[DR_FAKE_MAX_DEVICES];
/* The device of pool `pool`, or -1 when it is no pool's handle. */
static int pool_device(cudaMemPool_t pool) {
  for (int d = 0; d < DR_FAKE_MAX_DEVICES; d++)
    if (pool == (cudaMemPool_t)&pool_token[d]) return d;
  return -1;
}

/* ---- objects -------------------------------------------------------------- */

static void obj_free_memory(gpointer key, Obj *o) {
  if (o->kind == DR_FAKE_DEVICE_MEM || o->kind == DR_FAKE_HOST_MEM) g_free(key);
}

static void objects_init(void) {
  if (fake.objects) return;
  fake.objects = g_hash_table_new(g_direct_hash, g_direct_equal);
  fake.trace = g_array_new(FALSE, TRUE, sizeof(DrFakeCall));
  fake.misuse = g_string_new(NULL);
  fake.after_sticky = g_string_new(NULL);
  fake.capture_mem = g_ptr_array_new();
  fake.fault_index = -1;
}

static Obj *obj_find(gconstpointer key, DrFakeKind kind) {
  Obj *o = key ? g_hash_table_lookup(fake.objects, key) : NULL;
  return o && o->kind == kind ? o : NULL;
}

static gpointer obj_new(DrFakeKind kind, gsize size) {
  Obj *o = g_new0(Obj, 1);
  o->kind = kind;
  o->size = size;
  o->device = fake.cur;
  gpointer key = o;
  if (kind == DR_FAKE_DEVICE_MEM || kind == DR_FAKE_HOST_MEM) key = g_malloc0(MAX(size, 1));
  if (kind == DR_FAKE_GRAPH) o->graph_mem = g_ptr_array_new();
  g_hash_table_insert(fake.objects, key, o);
  fake.live[kind]++;
  return key;
}

static void obj_release(gpointer key) {
  Obj *o = g_hash_table_lookup(fake.objects, key);
  g_return_if_fail(o != NULL);
  g_hash_table_remove(fake.objects, key);
  fake.live[o->kind]--;
  if (o->graph_mem) {
    for (guint i = 0; i < o->graph_mem->len; i++) obj_release(o->graph_mem->pdata[i]);
    g_ptr_array_unref(o->graph_mem);
  }
  if (o->nodes) g_ptr_array_unref(o->nodes);
  g_ptr_array_remove(fake.capture_mem, key);
  obj_free_memory(key, o);
  if (key != (gpointer)o)
    g_free(o);
  else
    g_free(key);
}

/* The allocation holding [p, p + bytes), or NULL. */
static gpointer mem_find(gconstpointer p, gsize bytes, gboolean *partial) {
  GHashTableIter it;
  gpointer key, value;
  *partial = FALSE;
  g_hash_table_iter_init(&it, fake.objects);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    Obj *o = value;
    if (o->kind != DR_FAKE_DEVICE_MEM && o->kind != DR_FAKE_HOST_MEM) continue;
    const char *lo = key, *hi = lo + MAX(o->size, 1);
    if ((const char *)p >= lo && (const char *)p < hi) {
      if ((const char *)p + bytes > lo + o->size) *partial = TRUE;
      return key;
    }
  }
  return NULL;
}

/* ---- the gate -------------------------------------------------------------- */

static void misuse(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void misuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_string_append_vprintf(fake.misuse, fmt, ap);
  va_end(ap);
  g_string_append_c(fake.misuse, '\n');
}

typedef struct {
  cudaError_t rc; /* to return (after the work, when act) */
  gboolean act;   /* perform the call's effect */
} Gate;

/* Numbers the call and decides its fate. `release`: a destroy/free/unload;
 * `cleanup`: a call that only tears down (allowed after a sticky fault). */
static Gate gate_enter(const char *name, gconstpointer obj, gboolean release, gboolean cleanup) {
  objects_init();
  DrFakeCall c = {.name = name, .point = ++fake.points, .obj = obj, .rc = cudaSuccess, .release = release};
  Gate g = {cudaSuccess, TRUE};
  if (fake.sticky != cudaSuccess) {
    g.rc = fake.sticky;
    g.act = release;
    if (!release && !cleanup) g_string_append_printf(fake.after_sticky, "%s\n", name);
  } else if (fake.fail_at != 0 && c.point == fake.fail_at) {
    g.rc = faults[fake.fault].error;
    g.act = FALSE;
    fake.fault_index = fake.trace->len;
    if (faults[fake.fault].sticky) fake.sticky = g.rc;
  }
  c.rc = g.rc;
  Obj *so = obj ? g_hash_table_lookup(fake.objects, obj) : NULL;
  if (so && so->kind == DR_FAKE_STREAM) c.stream = so->serial;
  g_array_append_val(fake.trace, c);
  if (g.rc != cudaSuccess) fake.last_error = g.rc;
  return g;
}

/* The call being made (valid until the next call). */
static DrFakeCall *current(void) { return &g_array_index(fake.trace, DrFakeCall, fake.trace->len - 1); }

/* Ends a call: records `rc` as its result (a misuse found after the gate)
 * and returns it. */
static cudaError_t finish(cudaError_t rc) {
  if (rc != cudaSuccess) {
    current()->rc = rc;
    fake.last_error = rc;
  }
  return rc;
}

/* Enters the gate; `record` (an expression) fills the trace entry before
 * a call that must not act returns. */
#define GATE_RECORD(name, obj, release, cleanup, record)       \
  Gate gate = gate_enter((name), (obj), (release), (cleanup)); \
  record;                                                      \
  if (!gate.act) return gate.rc
#define GATE(name, obj, release, cleanup) GATE_RECORD(name, obj, release, cleanup, (void)0)

/* Checks a stream argument; FALSE (and a misuse) when it is not a live
 * fake stream. */
static gboolean stream_ok(const char *call, cudaStream_t s) {
  if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) {
    if (fake.allow_default_streams) return TRUE;
    misuse("%s: the legacy/per-thread default stream (%p)", call, (void *)s);
    return FALSE;
  }
  if (obj_find(s, DR_FAKE_STREAM) == NULL) {
    misuse("%s: %p is not a live stream", call, (void *)s);
    return FALSE;
  }
  return TRUE;
}

/* Work on stream `s` (already checked live) is enqueued from its own
 * device: the runtime refuses a launch into another device's stream, and
 * dagrun selects the stream's device before every per-device call. */
static gboolean stream_here(const char *call, cudaStream_t s) {
  Obj *o = obj_find(s, DR_FAKE_STREAM);
  if (o == NULL || o->device == fake.cur) return TRUE;
  misuse("%s: a stream of device %d while device %d is current", call, o->device, fake.cur);
  return FALSE;
}

/* The device of stream `s`: a fake stream's, else (a library user's
 * default stream) the current one. */
static int stream_device(cudaStream_t s) {
  Obj *o = obj_find(s, DR_FAKE_STREAM);
  return o ? o->device : fake.cur;
}

/* The device of fake device memory holding `p`, or -1 (host, pinned or
 * unknown memory). */
static int mem_device(gconstpointer p) {
  gboolean partial = FALSE;
  gpointer key = p ? mem_find(p, 1, &partial) : NULL;
  Obj *o = key ? g_hash_table_lookup(fake.objects, key) : NULL;
  return o && o->kind == DR_FAKE_DEVICE_MEM ? o->device : -1;
}

static gboolean event_ok(const char *call, cudaEvent_t e) {
  if (obj_find(e, DR_FAKE_EVENT) == NULL) {
    misuse("%s: %p is not a live event", call, (void *)e);
    return FALSE;
  }
  return TRUE;
}

/* Memory argument: inside a fake allocation, or plain host memory of the
 * caller's (never checked). */
static gboolean mem_ok(const char *call, gconstpointer p, gsize bytes) {
  gboolean partial = FALSE;
  if (p == NULL && bytes > 0) {
    misuse("%s: NULL pointer for %zu bytes", call, bytes);
    return FALSE;
  }
  if (mem_find(p, bytes, &partial) && partial) {
    misuse("%s: %zu bytes at %p run past the end of their allocation", call, bytes, p);
    return FALSE;
  }
  return TRUE;
}

static gboolean not_capturing(const char *call) {
  if (fake.capture_stream == NULL) return TRUE;
  misuse("%s during stream capture", call);
  return FALSE;
}

/* ---- device and streams ----------------------------------------------------- */

static cudaError_t fake_cudaGetDeviceCount(int *count) {
  GATE("cudaGetDeviceCount", NULL, FALSE, FALSE);
  *count = n_devices();
  return cudaSuccess;
}

static cudaError_t fake_cudaSetDevice(int device) {
  /* A selection, not work: allowed after a sticky fault (releases on
   * several devices select each first). */
  GATE_RECORD("cudaSetDevice", NULL, FALSE, TRUE, current()->size = (guint64)device);
  if (!device_valid(device)) return finish(cudaErrorInvalidDevice);
  fake.cur = device;
  return cudaSuccess;
}

static cudaError_t fake_cudaDeviceCanAccessPeer(int *can, int device, int peer) {
  GATE("cudaDeviceCanAccessPeer", NULL, FALSE, FALSE);
  if (!device_valid(device) || !device_valid(peer)) return finish(cudaErrorInvalidDevice);
  *can = !fake.peer_no && device != peer;
  return cudaSuccess;
}

/* From the current device to `peer`: once; again is
 * cudaErrorPeerAccessAlreadyEnabled, as the runtime says (for the
 * context's lifetime: a reset is a new process). */
static cudaError_t fake_cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  GATE_RECORD("cudaDeviceEnablePeerAccess", NULL, FALSE, FALSE, current()->size = (guint64)peer);
  if (!device_valid(peer) || peer == fake.cur) return finish(cudaErrorInvalidDevice);
  if (fake.peer_no || flags != 0) {
    misuse("cudaDeviceEnablePeerAccess: device %d cannot access device %d (flags %u)", fake.cur, peer, flags);
    return finish(cudaErrorPeerAccessUnsupported);
  }
  if (fake.peer_enables[fake.cur][peer]++ > 0) return finish(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

static cudaError_t fake_cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  GATE("cudaDeviceGetStreamPriorityRange", NULL, FALSE, FALSE);
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}

static cudaError_t fake_cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  GATE("cudaDeviceGetAttribute", NULL, FALSE, FALSE);
  *value = attr == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
  return finish(device_valid(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

static cudaError_t fake_cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int priority) {
  GATE("cudaStreamCreateWithPriority", NULL, FALSE, FALSE);
  if (priority > 0 || priority < -5)
    misuse("cudaStreamCreateWithPriority: priority %d out of [-5, 0]", priority);
  *stream = obj_new(DR_FAKE_STREAM, 0);
  ((Obj *)*stream)->serial = ++fake.n_streams_made;
  current()->obj = *stream;
  current()->stream = fake.n_streams_made;
  return cudaSuccess;
}

static cudaError_t fake_cudaStreamDestroy(cudaStream_t stream) {
  GATE("cudaStreamDestroy", stream, TRUE, TRUE);
  if (!stream_ok("cudaStreamDestroy", stream)) return finish(cudaErrorInvalidResourceHandle);
  if (stream == fake.capture_stream) misuse("cudaStreamDestroy: the stream is capturing");
  obj_release(stream);
  return gate.rc;
}

static cudaError_t fake_cudaStreamSynchronize(cudaStream_t stream) {
  GATE("cudaStreamSynchronize", stream, FALSE, FALSE);
  if (!stream_ok("cudaStreamSynchronize", stream)) return finish(cudaErrorInvalidResourceHandle);
  if (!not_capturing("cudaStreamSynchronize")) return finish(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

/* The profiler's capture range: starting it twice or stopping it when it
 * is not started is a misuse. Stopping counts as cleanup (close stops a
 * range a failed run left open). */
static cudaError_t fake_cudaProfilerStart(void) {
  GATE("cudaProfilerStart", NULL, FALSE, FALSE);
  if (fake.profiling) misuse("cudaProfilerStart: the profiler is already started");
  fake.profiling = TRUE;
  return cudaSuccess;
}

static cudaError_t fake_cudaProfilerStop(void) {
  GATE("cudaProfilerStop", NULL, FALSE, TRUE);
  if (!fake.profiling) misuse("cudaProfilerStop: the profiler is not started");
  fake.profiling = FALSE;
  return cudaSuccess;
}

gboolean dr_fake_profiling(void) { return fake.profiling; }

static cudaError_t fake_cudaDeviceSynchronize(void) {
  GATE("cudaDeviceSynchronize", NULL, FALSE, TRUE);
  if (!not_capturing("cudaDeviceSynchronize")) return finish(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

/* ---- events ---------------------------------------------------------------- */

static cudaError_t fake_cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  GATE("cudaEventCreateWithFlags", NULL, FALSE, FALSE);
  *event = obj_new(DR_FAKE_EVENT, 0);
  ((Obj *)*event)->flags = flags;
  return cudaSuccess;
}

static cudaError_t fake_cudaEventDestroy(cudaEvent_t event) {
  GATE("cudaEventDestroy", event, TRUE, TRUE);
  if (!event_ok("cudaEventDestroy", event)) return finish(cudaErrorInvalidResourceHandle);
  obj_release(event);
  return gate.rc;
}

static cudaError_t fake_cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  GATE_RECORD("cudaEventRecord", stream, FALSE, FALSE, current()->event = event);
  if (!event_ok("cudaEventRecord", event) || !stream_ok("cudaEventRecord", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (((Obj *)event)->device != stream_device(stream)) {
    misuse("cudaEventRecord: an event of device %d on a stream of device %d", ((Obj *)event)->device,
           stream_device(stream));
    return finish(cudaErrorInvalidResourceHandle);
  }

  if (fake.capture_stream)
    g_hash_table_insert(fake.event_deps, event, g_ptr_array_copy(tail_of(stream), NULL, NULL));
  return cudaSuccess;
}

static cudaError_t fake_cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  GATE_RECORD("cudaEventRecordWithFlags", stream, FALSE, FALSE, current()->event = event);
  if (!event_ok("cudaEventRecordWithFlags", event) || !stream_ok("cudaEventRecordWithFlags", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (((Obj *)event)->device != stream_device(stream)) {
    misuse("cudaEventRecordWithFlags: an event of device %d on a stream of device %d", ((Obj *)event)->device,
           stream_device(stream));
    return finish(cudaErrorInvalidResourceHandle);
  }

  (void)capture_node(stream, cudaGraphNodeTypeEventRecord);
  return cudaSuccess;
}

static cudaError_t fake_cudaEventSynchronize(cudaEvent_t event) {
  GATE("cudaEventSynchronize", NULL, FALSE, FALSE);
  if (!event_ok("cudaEventSynchronize", event)) return finish(cudaErrorInvalidResourceHandle);
  if (!not_capturing("cudaEventSynchronize")) return finish(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

static cudaError_t fake_cudaEventQuery(cudaEvent_t event) {
  GATE("cudaEventQuery", NULL, FALSE, FALSE);
  if (!event_ok("cudaEventQuery", event)) return finish(cudaErrorInvalidResourceHandle);
  if (!not_capturing("cudaEventQuery")) return finish(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess; /* a fake stream is always idle */
}

static cudaError_t fake_cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  GATE("cudaEventElapsedTime", NULL, FALSE, FALSE);
  if (!event_ok("cudaEventElapsedTime", start) || !event_ok("cudaEventElapsedTime", end))
    return finish(cudaErrorInvalidResourceHandle);
  if ((((Obj *)start)->flags | ((Obj *)end)->flags) & cudaEventDisableTiming) {
    misuse("cudaEventElapsedTime: an event made with cudaEventDisableTiming");
    return finish(cudaErrorInvalidResourceHandle);
  }
  if (((Obj *)start)->device != ((Obj *)end)->device) {
    misuse("cudaEventElapsedTime: events of devices %d and %d", ((Obj *)start)->device, ((Obj *)end)->device);
    return finish(cudaErrorInvalidResourceHandle);
  }
  *ms = 0.001f;
  return cudaSuccess;
}

static cudaError_t fake_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  GATE_RECORD("cudaStreamWaitEvent", stream, FALSE, FALSE, current()->event = event);
  if (!stream_ok("cudaStreamWaitEvent", stream) || !event_ok("cudaStreamWaitEvent", event))
    return finish(cudaErrorInvalidResourceHandle);
  GPtrArray *captured = fake.capture_stream ? g_hash_table_lookup(fake.event_deps, event) : NULL;
  if (captured) {
    GPtrArray *t = tail_of(stream);
    for (guint i = 0; i < captured->len; i++)
      if (!g_ptr_array_find(t, captured->pdata[i], NULL)) g_ptr_array_add(t, captured->pdata[i]);
  }
  return cudaSuccess;
}

/* ---- memory ----------------------------------------------------------------- */

static cudaError_t fake_cudaMalloc(void **ptr, size_t size) {
  GATE_RECORD("cudaMalloc", NULL, FALSE, FALSE, current()->size = size);
  if (!not_capturing("cudaMalloc")) return finish(cudaErrorStreamCaptureUnsupported);
  *ptr = obj_new(DR_FAKE_DEVICE_MEM, size);
  return cudaSuccess;
}

static cudaError_t release_mem(const char *call, void *ptr, DrFakeKind kind, Gate gate) {
  if (ptr == NULL) return gate.rc;
  if (obj_find(ptr, kind) == NULL) {
    misuse("%s: %p is not a live %s block", call, ptr, kind == DR_FAKE_HOST_MEM ? "pinned host" : "device");
    return finish(cudaErrorInvalidValue);
  }
  obj_release(ptr);
  return gate.rc;
}

static cudaError_t fake_cudaFree(void *ptr) {
  GATE("cudaFree", ptr, TRUE, TRUE);
  return release_mem("cudaFree", ptr, DR_FAKE_DEVICE_MEM, gate);
}

static cudaError_t fake_cudaMallocHost(void **ptr, size_t size) {
  GATE_RECORD("cudaMallocHost", NULL, FALSE, FALSE, current()->size = size);
  *ptr = obj_new(DR_FAKE_HOST_MEM, size);
  return cudaSuccess;
}

static cudaError_t fake_cudaFreeHost(void *ptr) {
  GATE("cudaFreeHost", ptr, TRUE, TRUE);
  return release_mem("cudaFreeHost", ptr, DR_FAKE_HOST_MEM, gate);
}

static cudaError_t fake_cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream) {
  GATE_RECORD("cudaMallocAsync", stream, FALSE, FALSE, current()->size = size);
  if (!stream_ok("cudaMallocAsync", stream) || !stream_here("cudaMallocAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  *ptr = obj_new(DR_FAKE_DEVICE_MEM, size);
  Obj *o = g_hash_table_lookup(fake.objects, *ptr);
  o->pooled = fake_pool_bytes(size);
  o->captured = fake.capture_stream != NULL;
  if (o->captured) {
    g_ptr_array_add(fake.capture_mem, *ptr);
    fake.capture_live += o->pooled;
    fake.capture_peak = MAX(fake.capture_peak, fake.capture_live);
  } else {
    *pool_used_of(o->device) += o->pooled;
    *pool_high_of(o->device) = MAX(*pool_high_of(o->device), *pool_used_of(o->device));
  }
  (void)capture_node(stream, cudaGraphNodeTypeMemAlloc);
  return cudaSuccess;
}

static cudaError_t fake_cudaFreeAsync(void *ptr, cudaStream_t stream) {
  GATE("cudaFreeAsync", ptr, TRUE, TRUE);
  /* After a sticky fault the stream may be gone already; the memory is
   * released with the context either way. */
  if (fake.sticky == cudaSuccess && !stream_ok("cudaFreeAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  Obj *o = ptr ? obj_find(ptr, DR_FAKE_DEVICE_MEM) : NULL;
  if (o && o->captured && o->freed) {
    misuse("cudaFreeAsync: %p was freed already in this capture", ptr);
    return finish(cudaErrorInvalidValue);
  }
  if (o && o->captured)
    fake.capture_live -= MIN(fake.capture_live, o->pooled);
  else if (o)
    *pool_used_of(o->device) -= MIN(*pool_used_of(o->device), o->pooled);
  /* Freed inside the capture that allocated it: a free node; the block
   * stays the graph's (released with it, or with a failed capture), so a
   * replay (dr_fake_set_replay_graphs) still has memory to run in. */
  if (o && o->captured && fake.capture_stream && gate.act) {
    o->freed = TRUE;
    (void)capture_node(stream, cudaGraphNodeTypeMemFree);
    return gate.rc;
  }
  return release_mem("cudaFreeAsync", ptr, DR_FAKE_DEVICE_MEM, gate);
}

static cudaError_t fake_cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device) {
  GATE("cudaDeviceGetDefaultMemPool", NULL, FALSE, FALSE);
  if (!device_valid(device)) return finish(cudaErrorInvalidDevice);
  *pool = (cudaMemPool_t)&pool_token[device];
  return cudaSuccess;
}

static cudaError_t fake_cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  GATE("cudaMemPoolSetAttribute", NULL, FALSE, FALSE);
  if (pool_device(pool) < 0 || value == NULL) {
    misuse("cudaMemPoolSetAttribute: bad pool %p or value", (void *)pool);
    return finish(cudaErrorInvalidValue);
  }
  if (attr == cudaMemPoolAttrUsedMemHigh || attr == cudaMemPoolAttrReservedMemHigh) {
    if (*(guint64 *)value != 0) {
      misuse("cudaMemPoolSetAttribute: a high-water mark can only be reset to 0");
      return finish(cudaErrorInvalidValue);
    }
    *pool_high_of(pool_device(pool)) = 0;
  }
  return cudaSuccess;
}

static cudaError_t fake_cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  GATE("cudaMemPoolGetAttribute", NULL, FALSE, FALSE);
  if (pool_device(pool) < 0 || value == NULL) {
    misuse("cudaMemPoolGetAttribute: bad pool %p or value", (void *)pool);
    return finish(cudaErrorInvalidValue);
  }
  if (attr == cudaMemPoolAttrUsedMemHigh)
    *(guint64 *)value = *pool_high_of(pool_device(pool));
  else if (attr == cudaMemPoolAttrUsedMemCurrent)
    *(guint64 *)value = *pool_used_of(pool_device(pool));
  else
    return finish(cudaErrorInvalidValue);
  return cudaSuccess;
}

static cudaError_t fake_cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                       void *value) {
  GATE("cudaDeviceGetGraphMemAttribute", NULL, FALSE, FALSE);
  if (value == NULL || attr != cudaGraphMemAttrUsedMemHigh) {
    misuse("cudaDeviceGetGraphMemAttribute: attribute %d or value", (int)attr);
    return finish(cudaErrorInvalidValue);
  }
  *(guint64 *)value = device == 0 ? fake.graph_high : 0;
  return finish(device_valid(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

static cudaError_t fake_cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr,
                                                       void *value) {
  GATE("cudaDeviceSetGraphMemAttribute", NULL, FALSE, FALSE);
  if (value == NULL || attr != cudaGraphMemAttrUsedMemHigh || *(guint64 *)value != 0) {
    misuse("cudaDeviceSetGraphMemAttribute: only UsedMemHigh, reset to 0");
    return finish(cudaErrorInvalidValue);
  }
  if (device == 0) fake.graph_high = 0;
  return finish(device_valid(device) ? cudaSuccess : cudaErrorInvalidDevice);
}

/* A checked copy's effect: the bytes move now, or a capture records a
 * memcpy node that a replay performs. */
static cudaError_t copy_or_capture(void *dst, const void *src, size_t count, cudaStream_t stream) {
  if (fake.capture_stream == NULL && !fake.dry && count) memmove(dst, src, count);
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeMemcpy);
  if (n) {
    n->dst = dst;
    n->src = src;
    n->count = count;
  }
  return cudaSuccess;
}

static cudaError_t fake_cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                        cudaStream_t stream) {
  GATE_RECORD("cudaMemcpyAsync", stream, FALSE, FALSE, current()->size = count);
  if (!stream_ok("cudaMemcpyAsync", stream) || !stream_here("cudaMemcpyAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (!mem_ok("cudaMemcpyAsync dst", dst, count) || !mem_ok("cudaMemcpyAsync src", src, count))
    return finish(cudaErrorInvalidValue);
  /* Stricter than the runtime (which copies across devices under UVA):
   * dagrun's device-to-device copies across devices are peer copies,
   * cudaMemcpyPeerAsync eagerly; only a capture (which refuses that call)
   * takes a cudaMemcpyDefault copy between the devices. */
  if (mem_device(dst) >= 0 && mem_device(src) >= 0 && mem_device(dst) != mem_device(src) &&
      !(fake.capture_stream != NULL && kind == cudaMemcpyDefault)) {
    misuse("cudaMemcpyAsync: from device %d to device %d memory (a peer copy)", mem_device(src),
           mem_device(dst));
    return finish(cudaErrorInvalidValue);
  }
  return copy_or_capture(dst, src, count, stream);
}

static cudaError_t fake_cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                            size_t count, cudaStream_t stream) {
  GATE_RECORD("cudaMemcpyPeerAsync", stream, FALSE, FALSE, current()->size = count);
  /* As the runtime (measured on the H200): not in a stream capture. */
  if (!not_capturing("cudaMemcpyPeerAsync")) return finish(cudaErrorStreamCaptureUnsupported);
  if (!stream_ok("cudaMemcpyPeerAsync", stream) || !stream_here("cudaMemcpyPeerAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (!device_valid(dst_device) || !device_valid(src_device)) return finish(cudaErrorInvalidDevice);
  if (!mem_ok("cudaMemcpyPeerAsync dst", dst, count) || !mem_ok("cudaMemcpyPeerAsync src", src, count))
    return finish(cudaErrorInvalidValue);
  if (mem_device(dst) != dst_device || mem_device(src) != src_device) {
    misuse("cudaMemcpyPeerAsync: dst on device %d (said %d), src on device %d (said %d)", mem_device(dst),
           dst_device, mem_device(src), src_device);
    return finish(cudaErrorInvalidValue);
  }
  return copy_or_capture(dst, src, count, stream);
}

/* Copy batches (dr_fake_api_batch): the size of each successful batch,
 * since the reset, and whether batches are refused as by a driver before
 * 12.8. */
static GString *batch_sizes;
static gboolean batch_refused;

static cudaError_t fake_cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                             size_t count, struct cudaMemcpyAttributes *attrs,
                                             size_t *attrs_idxs, size_t n_attrs, cudaStream_t stream) {
  guint64 total = 0;
  for (size_t i = 0; sizes && i < count; i++) total += sizes[i];
  GATE_RECORD("cudaMemcpyBatchAsync", stream, FALSE, FALSE, current()->size = total);
  if (batch_refused) return finish(cudaErrorNotSupported);
  /* As the runtime: a batch cannot be captured. */
  if (!not_capturing("cudaMemcpyBatchAsync")) return finish(cudaErrorStreamCaptureUnsupported);
  if (!stream_ok("cudaMemcpyBatchAsync", stream) || !stream_here("cudaMemcpyBatchAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  /* CUDA 13's rules for the arrays (cuda_runtime_api.h). */
  if (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL || attrs == NULL || attrs_idxs == NULL ||
      n_attrs == 0 || n_attrs > count || attrs_idxs[0] != 0) {
    misuse("cudaMemcpyBatchAsync: bad arrays (count %zu, %zu attributes)", count, n_attrs);
    return finish(cudaErrorInvalidValue);
  }
  for (size_t k = 0; k < n_attrs; k++)
    if ((k > 0 && attrs_idxs[k] <= attrs_idxs[k - 1]) || attrs_idxs[k] >= count ||
        attrs[k].srcAccessOrder == cudaMemcpySrcAccessOrderInvalid ||
        attrs[k].srcAccessOrder > cudaMemcpySrcAccessOrderAny) {
      misuse("cudaMemcpyBatchAsync: attribute %zu (first copy %zu, access order %d) is invalid", k,
             attrs_idxs[k], (int)attrs[k].srcAccessOrder);
      return finish(cudaErrorInvalidValue);
    }
  for (size_t i = 0; i < count; i++) {
    if (!mem_ok("cudaMemcpyBatchAsync dst", dsts[i], sizes[i]) ||
        !mem_ok("cudaMemcpyBatchAsync src", srcs[i], sizes[i]))
      return finish(cudaErrorInvalidValue);
    if (mem_device(dsts[i]) >= 0 && mem_device(srcs[i]) >= 0 && mem_device(dsts[i]) != mem_device(srcs[i])) {
      misuse("cudaMemcpyBatchAsync: copy %zu from device %d to device %d memory (a peer copy)", i,
             mem_device(srcs[i]), mem_device(dsts[i]));
      return finish(cudaErrorInvalidValue);
    }
    /* Copies of a batch run in any order: one that writes bytes another
     * touches makes the result undefined. */
    const char *d = dsts[i], *sr = srcs[i];
    for (size_t j = 0; j < i; j++) {
      const char *dj = dsts[j], *sj = srcs[j];
      gboolean clash = (d < dj + sizes[j] && dj < d + sizes[i]) || (d < sj + sizes[j] && sj < d + sizes[i]) ||
                       (sr < dj + sizes[j] && dj < sr + sizes[i]);
      if (clash && sizes[i] && sizes[j]) {
        misuse("cudaMemcpyBatchAsync: copies %zu and %zu of one batch overlap", j, i);
        return finish(cudaErrorInvalidValue);
      }
    }
  }
  /* Last first: nothing may depend on the order. */
  for (size_t i = count; i-- > 0;)
    if (!fake.dry && sizes[i]) memmove(dsts[i], srcs[i], sizes[i]);
  if (batch_sizes == NULL) batch_sizes = g_string_new(NULL);
  g_string_append_printf(batch_sizes, "%s%zu", batch_sizes->len ? "," : "", count);
  return cudaSuccess;
}

static cudaError_t fake_cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream) {
  GATE_RECORD("cudaMemsetAsync", stream, FALSE, FALSE, current()->size = count);
  if (!stream_ok("cudaMemsetAsync", stream) || !stream_here("cudaMemsetAsync", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (mem_device(ptr) >= 0 && mem_device(ptr) != fake.cur) {
    misuse("cudaMemsetAsync: memory of device %d from device %d", mem_device(ptr), fake.cur);
    return finish(cudaErrorInvalidValue);
  }
  if (!mem_ok("cudaMemsetAsync", ptr, count)) return finish(cudaErrorInvalidValue);
  if (fake.capture_stream == NULL && !fake.dry && count) memset(ptr, value, count);
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeMemset);
  if (n) {
    n->dst = ptr;
    n->value = value;
    n->count = count;
  }
  return cudaSuccess;
}

static cudaError_t fake_cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *data) {
  GATE("cudaLaunchHostFunc", stream, FALSE, FALSE);
  if (!stream_ok("cudaLaunchHostFunc", stream) || !stream_here("cudaLaunchHostFunc", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (fake.capture_stream == NULL && !fake.dry) fn(data);
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeHost);
  if (n) {
    n->fn = fn;
    n->data = data;
  }
  return cudaSuccess;
}

/* ---- capture and graphs --------------------------------------------------------- */

static cudaError_t fake_cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  GATE("cudaStreamBeginCapture", stream, FALSE, FALSE);
  if (!stream_ok("cudaStreamBeginCapture", stream)) return finish(cudaErrorInvalidResourceHandle);
  if (fake.capture_stream) {
    misuse("cudaStreamBeginCapture: a capture is already in progress");
    return finish(cudaErrorIllegalState);
  }
  fake.capture_stream = stream;
  (void)capture_model_end();
  (void)tail_of(stream);
  fake.capture_live = fake.capture_peak = 0;
  return cudaSuccess;
}

/* Ends the innermost capture into an existing graph: its nodes join the
 * graph when `keep`, and the interrupted capture is back. */
static void sub_end(gboolean keep) {
  Sub *sub = g_ptr_array_steal_index(fake.subs, fake.subs->len - 1);
  GPtrArray *nodes = g_steal_pointer(&fake.capture_nodes);
  for (guint i = 0; nodes && i < nodes->len; i++) {
    if (keep)
      g_ptr_array_add(sub->target->nodes, nodes->pdata[i]);
    else
      fake_node_free(nodes->pdata[i]);
  }
  if (nodes) {
    g_ptr_array_set_free_func(nodes, NULL);
    g_ptr_array_unref(nodes);
  }
  if (fake.tails) g_hash_table_unref(fake.tails);
  if (fake.event_deps) g_hash_table_unref(fake.event_deps);
  fake.capture_stream = sub->capture_stream;
  fake.tails = sub->tails;
  fake.event_deps = sub->event_deps;
  fake.capture_nodes = sub->capture_nodes;
  g_free(sub);
}

static cudaError_t fake_cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                                      const cudaGraphNode_t *deps,
                                                      const cudaGraphEdgeData *edge_data, size_t n_deps,
                                                      enum cudaStreamCaptureMode mode) {
  GATE("cudaStreamBeginCaptureToGraph", stream, FALSE, FALSE);
  if (!stream_ok("cudaStreamBeginCaptureToGraph", stream)) return finish(cudaErrorInvalidResourceHandle);
  Obj *target = fake.bodies ? g_hash_table_lookup(fake.bodies, graph) : NULL;
  if (target == NULL) {
    misuse("cudaStreamBeginCaptureToGraph: %p is not a conditional node's body graph", (void *)graph);
    return finish(cudaErrorInvalidValue);
  }
  if (stream == fake.capture_stream || (fake.tails && g_hash_table_contains(fake.tails, stream))) {
    misuse("cudaStreamBeginCaptureToGraph: the stream is capturing already");
    return finish(cudaErrorIllegalState);
  }
  if (edge_data != NULL) misuse("cudaStreamBeginCaptureToGraph: edge data (dagrun passes none)");
  if (fake.subs == NULL) fake.subs = g_ptr_array_new();
  Sub *sub = g_new0(Sub, 1);
  sub->capture_stream = fake.capture_stream;
  sub->tails = g_steal_pointer(&fake.tails);
  sub->event_deps = g_steal_pointer(&fake.event_deps);
  sub->capture_nodes = g_steal_pointer(&fake.capture_nodes);
  sub->target = target;
  g_ptr_array_add(fake.subs, sub);
  fake.capture_stream = stream;
  GPtrArray *t = tail_of(stream);
  for (size_t i = 0; i < n_deps; i++) g_ptr_array_add(t, (gpointer)deps[i]);
  (void)mode;
  return cudaSuccess;
}

static cudaError_t fake_cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  /* Ending a capture is cleanup too: a failed EndCapture still ends it. */
  Gate gate = gate_enter("cudaStreamEndCapture", stream, FALSE, fake.capture_stream != NULL);
  *graph = NULL;
  if (fake.subs && fake.subs->len && stream == fake.capture_stream) {
    Sub *sub = fake.subs->pdata[fake.subs->len - 1];
    cudaGraph_t target = NULL;
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, fake.bodies);
    while (g_hash_table_iter_next(&it, &key, &value))
      if (value == sub->target) target = key;
    gboolean keep = gate.act && gate.rc == cudaSuccess;
    sub_end(keep);
    if (!keep) return gate.rc;
    *graph = target;
    return cudaSuccess;
  }
  if (fake.capture_stream == NULL || stream != fake.capture_stream) {
    misuse("cudaStreamEndCapture: %p is not capturing", (void *)stream);
    return finish(gate.rc ? gate.rc : cudaErrorIllegalState);
  }
  fake.capture_stream = NULL;
  GPtrArray *nodes = capture_model_end();
  if (!gate.act || gate.rc != cudaSuccess) {
    /* No graph: what was allocated while capturing goes with it. */
    while (fake.capture_mem->len) obj_release(fake.capture_mem->pdata[0]);
    if (nodes) g_ptr_array_unref(nodes);
    return gate.rc;
  }
  *graph = obj_new(DR_FAKE_GRAPH, 0);
  Obj *g = (Obj *)*graph;
  g->nodes = nodes ? nodes : g_ptr_array_new_with_free_func((GDestroyNotify)fake_node_free);
  g->graph_peak = fake.capture_peak;
  /* Captured allocations not freed inside the capture belong to the graph. */
  for (guint i = 0; i < fake.capture_mem->len; i++) g_ptr_array_add(g->graph_mem, fake.capture_mem->pdata[i]);
  g_ptr_array_set_size(fake.capture_mem, 0);
  return cudaSuccess;
}

/* The flags of the last instantiation (dr_fake_instantiate_flags). */
static unsigned long long fake_instantiate_flags;

static cudaError_t fake_cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                             unsigned long long flags) {
  GATE("cudaGraphInstantiate", graph, FALSE, FALSE);
  if (obj_find(graph, DR_FAKE_GRAPH) == NULL) {
    misuse("cudaGraphInstantiate: %p is not a live graph", (void *)graph);
    return finish(cudaErrorInvalidValue);
  }
  *exec = obj_new(DR_FAKE_GRAPH_EXEC, 0);
  Obj *e = (Obj *)*exec, *g = (Obj *)graph;
  e->nodes = g_ptr_array_new_with_free_func((GDestroyNotify)fake_node_free);
  for (guint i = 0; g->nodes && i < g->nodes->len; i++)
    g_ptr_array_add(e->nodes, node_copy(g->nodes->pdata[i]));
  e->graph_peak = g->graph_peak;
  fake_instantiate_flags = flags;
  if (fake.shape == NULL) {
    fake.shape = g_string_new(NULL);
    fake.shape_deps = g_string_new(NULL);
  }
  g_string_truncate(fake.shape, 0);
  g_string_truncate(fake.shape_deps, 0);
  shape_of(g->nodes, FALSE);
  return cudaSuccess;
}

/* Accepts every update of a live executable from a live graph (the fake
 * records no graph contents to compare). */
static cudaError_t fake_cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                            cudaGraphExecUpdateResultInfo *info) {
  GATE("cudaGraphExecUpdate", exec, FALSE, FALSE);
  if (obj_find(exec, DR_FAKE_GRAPH_EXEC) == NULL || obj_find(graph, DR_FAKE_GRAPH) == NULL) {
    misuse("cudaGraphExecUpdate: %p or %p is not live", (void *)exec, (void *)graph);
    return finish(cudaErrorInvalidValue);
  }
  if (info) info->result = cudaGraphExecUpdateSuccess;
  /* The executable now runs the graph's work. */
  Obj *e = (Obj *)exec, *g = (Obj *)graph;
  g_ptr_array_set_size(e->nodes, 0);
  for (guint i = 0; g->nodes && i < g->nodes->len; i++)
    g_ptr_array_add(e->nodes, node_copy(g->nodes->pdata[i]));
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  GATE("cudaGraphLaunch", stream, FALSE, FALSE);
  if (obj_find(exec, DR_FAKE_GRAPH_EXEC) == NULL) {
    misuse("cudaGraphLaunch: %p is not a live graph exec", (void *)exec);
    return finish(cudaErrorInvalidValue);
  }
  if (!stream_ok("cudaGraphLaunch", stream)) return finish(cudaErrorInvalidResourceHandle);
  /* Replay (dr_fake_set_replay_graphs): each node's work, in capture
   * order (a topological order). */
  Obj *e = (Obj *)exec;
  /* Each launch applies the handles' defaults (cudaGraphCondAssignDefault). */
  for (guint i = 0; fake.handles && i < fake.handles->len; i++) {
    Handle *h = &g_array_index(fake.handles, Handle, i);
    if (h->flags & cudaGraphCondAssignDefault) h->value = h->default_value;
  }
  if (fake.replay && !fake.dry) replay_nodes(e->nodes);
  fake.graph_high = MAX(fake.graph_high, ((Obj *)obj_find(exec, DR_FAKE_GRAPH_EXEC))->graph_peak);
  return cudaSuccess;
}

/* The release of handle `h` by `call`, past its gate: a live object of
 * `kind` is released; anything else is a misuse ("not a live `what`")
 * answered with `bad`. */
static cudaError_t release_obj(const char *call, gpointer h, DrFakeKind kind, const char *what,
                               cudaError_t bad, Gate gate) {
  if (obj_find(h, kind) == NULL) {
    misuse("%s: %p is not a live %s", call, h, what);
    return finish(bad);
  }
  obj_release(h);
  return gate.rc;
}

static cudaError_t fake_cudaGraphExecDestroy(cudaGraphExec_t exec) {
  GATE("cudaGraphExecDestroy", exec, TRUE, TRUE);
  return release_obj("cudaGraphExecDestroy", exec, DR_FAKE_GRAPH_EXEC, "graph exec", cudaErrorInvalidValue,
                     gate);
}

static cudaError_t fake_cudaGraphDestroy(cudaGraph_t graph) {
  GATE("cudaGraphDestroy", graph, TRUE, TRUE);
  return release_obj("cudaGraphDestroy", graph, DR_FAKE_GRAPH, "graph", cudaErrorInvalidValue, gate);
}

/* ---- libraries and user kernels ---------------------------------------------- */

static cudaError_t fake_cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                            enum cudaJitOption *jit_opts, void **jit_vals, unsigned int n_jit,
                                            enum cudaLibraryOption *lib_opts, void **lib_vals,
                                            unsigned int n_lib) {
  GATE("cudaLibraryLoadData", NULL, FALSE, FALSE);
  if (code == NULL) return finish(cudaErrorInvalidValue);
  *lib = obj_new(DR_FAKE_LIBRARY, 0);
  return cudaSuccess;
}

static cudaError_t fake_cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t lib, const char *name) {
  GATE("cudaLibraryGetKernel", lib, FALSE, FALSE);
  if (obj_find(lib, DR_FAKE_LIBRARY) == NULL) {
    misuse("cudaLibraryGetKernel: %p is not a live library", (void *)lib);
    return finish(cudaErrorInvalidResourceHandle);
  }
  *kernel = (cudaKernel_t)lib; /* distinct per library, never dereferenced */
  return cudaSuccess;
}

static cudaError_t fake_cudaLibraryUnload(cudaLibrary_t lib) {
  GATE("cudaLibraryUnload", lib, TRUE, TRUE);
  return release_obj("cudaLibraryUnload", lib, DR_FAKE_LIBRARY, "library", cudaErrorInvalidResourceHandle,
                     gate);
}

/* cudaLaunchKernel calls that succeeded since the reset. */
static guint user_launches;

static cudaError_t fake_cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                                         cudaStream_t stream) {
  GATE("cudaLaunchKernel", stream, FALSE, FALSE);
  if (obj_find(func, DR_FAKE_LIBRARY) == NULL) {
    misuse("cudaLaunchKernel: %p is not a loaded kernel", func);
    return finish(cudaErrorInvalidResourceHandle);
  }
  if (!stream_ok("cudaLaunchKernel", stream) || !stream_here("cudaLaunchKernel", stream))
    return finish(cudaErrorInvalidResourceHandle);
  user_launches++;
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeKernel);
  if (n) n->ctl = 5; /* a user kernel: "user" in the shape, nothing in a replay */
  if (n && user_record && args != NULL && args[0] != NULL && args[1] != NULL) {
    n->user_rec = TRUE;
    memcpy(&n->user_arg1, args[1], sizeof n->user_arg1);
  }
  return cudaSuccess;
}

/* ---- errors ------------------------------------------------------------------- */

static cudaError_t fake_cudaGetLastError(void) {
  objects_init();
  DrFakeCall c = {.name = "cudaGetLastError", .point = 0, .rc = fake.last_error};
  g_array_append_val(fake.trace, c);
  cudaError_t rc = fake.last_error;
  /* A sticky error cannot be cleared. */
  fake.last_error = fake.sticky;
  return rc;
}

/* X(error, name, description): what cudart prints for the errors the fake
 * returns. */
#define FAKE_ERROR_LIST(X)                                                                          \
  X(cudaSuccess, "cudaSuccess", "no error")                                                         \
  X(cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument")                             \
  X(cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory")                        \
  X(cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal")                     \
  X(cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected")                   \
  X(cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle")    \
  X(cudaErrorIllegalState, "cudaErrorIllegalState",                                                 \
    "the operation cannot be performed in the present state")                                       \
  X(cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered") \
  X(cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure")                 \
  X(cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",                         \
    "operation not permitted when stream is capturing")                                             \
  X(cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",                         \
    "operation failed due to a previous error during capture")                                      \
  X(cudaErrorPeerAccessAlreadyEnabled, "cudaErrorPeerAccessAlreadyEnabled",                         \
    "peer access is already enabled")                                                               \
  X(cudaErrorPeerAccessUnsupported, "cudaErrorPeerAccessUnsupported",                               \
    "peer access is not supported between these two devices")

static const char *fake_cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define DR_X(e, name, desc) \
  case e:                   \
    return name;
    FAKE_ERROR_LIST(DR_X)
#undef DR_X
    default:
      return "cudaErrorUnknown";
  }
}

static const char *fake_cudaGetErrorString(cudaError_t error) {
  switch (error) {
#define DR_X(e, name, desc) \
  case e:                   \
    return desc;
    FAKE_ERROR_LIST(DR_X)
#undef DR_X
    default:
      return "unknown error";
  }
}

/* ---- built-in kernels ------------------------------------------------------------ */

/* The fake's %globaltimer: advances 1 µs per stamp written. */
static unsigned long long clock_ns;
/* Kernel launches since the reset, and those that asked for PDL; which
 * did, in launch order ('1' PDL, '0' not). */
static guint pdl_launches, kernel_launches;
static const char *split_kernel; /* dr_fake_set_split */
static guint64 split_count;
/* The second node of a split launch: a kernel of its own with no host
 * twin; a replay counts its runs (dr_fake_split_runs). */
static const DrKernelDef split_def = {.name = "split"};
static guint split_runs;
static GString *pdl_pattern;
/* Kernels a replay ran (their host twin) and those it skipped because
 * their guard word (DrKLaunch.guard) was 0, as the device would. */
static guint kernels_run, guard_skips;
static gboolean ignore_guards;
/* dr_fake_set_blas: the fake's cuBLAS contexts (settings a reset keeps),
 * and what a gemm's launch also captures (0: nothing more). */
static gboolean fake_blas_on;
static enum cudaGraphNodeType blas_extra;

/* Whether a guarded launch `l` does nothing now (its guard word is 0):
 * what a built-in with DR_KFLAG_GUARD does on the device. */
static gboolean guard_stops(const DrKLaunch *l) {
  return !ignore_guards && l->guard != NULL && *(const gint32 *)l->guard == 0;
}

/* Runs a kernel's host twin as the device would run the launch: nothing
 * when its guard stops it, else the twin and the count of the run. */
static int run_guarded(const DrKernelDef *def, const DrKLaunch *l, char *err) {
  if (guard_stops(l)) {
    guard_skips++;
    return 0;
  }
  kernels_run++;
  int rc = def->host(l, err);
  if (rc == 0 && l->guard_runs != NULL) (*(guint64 *)l->guard_runs)++;
  return rc;
}

static int fake_kernel_launch(const DrKernelDef *def, const DrKLaunch *l) {
  GATE_RECORD("kernel_launch", l->stream, FALSE, FALSE, current()->what = def->name);
  if (!stream_ok("kernel_launch", l->stream) || !stream_here("kernel_launch", l->stream))
    return finish(cudaErrorInvalidResourceHandle);
  for (int i = 0; i < def->n_params; i++) {
    const DrKParam *p = &def->params[i];
    if (!p->is_pointer) continue;
    g_autofree char *what = g_strdup_printf("kernel_launch %s.%s", def->name, p->name);
    if (!mem_ok(what, l->args[i].ptr, l->counts[i] * dr_elem_size(p->type)))
      return finish(cudaErrorInvalidValue);
    int md = mem_device(l->args[i].ptr);
    if (md >= 0 && md != fake.cur) {
      misuse("%s: memory of device %d in a launch on device %d", what, md, fake.cur);
      return finish(cudaErrorInvalidValue);
    }
  }
  if (def->scratch_bytes && !mem_ok("kernel_launch scratch", l->scratch, def->scratch_bytes))
    return finish(cudaErrorInvalidValue);
  if (def->flags & DR_KFLAG_BLAS) {
    /* A gemm launches on the stream its context is bound to: a context
     * bound elsewhere would be rebound here, racing its other stream. */
    Obj *b = fake_blas_on ? obj_find(l->blas, DR_FAKE_BLAS) : NULL;
    if (fake_blas_on && b == NULL) {
      misuse("kernel_launch %s: %p is not a live cuBLAS context", def->name, (void *)l->blas);
      return finish(cudaErrorInvalidValue);
    }
    if (b != NULL && b->bound != l->stream) {
      misuse("kernel_launch %s: on stream %p with a cuBLAS context bound to %p", def->name, (void *)l->stream,
             b->bound);
      return finish(cudaErrorInvalidValue);
    }
    if (blas_extra != 0) (void)capture_node(l->stream, blas_extra);
  }
  kernel_launches++;
  pdl_launches += l->pdl != 0;
  if (pdl_pattern == NULL) pdl_pattern = g_string_new(NULL);
  g_string_append_c(pdl_pattern, l->pdl ? '1' : '0');
  if (l->stamp != NULL && !(def->flags & DR_KFLAG_STAMPS)) {
    misuse("kernel_launch %s: a stamp for a kernel that does not write one", def->name);
    return finish(cudaErrorInvalidValue);
  }
  if (l->stamp != NULL && !mem_ok("kernel_launch stamp", l->stamp, sizeof(unsigned long long)))
    return finish(cudaErrorInvalidValue);
  if ((l->guard != NULL && !(def->flags & DR_KFLAG_GUARD)) || (l->guard_runs != NULL && l->guard == NULL)) {
    misuse("kernel_launch %s: a guard for a kernel that cannot read one (or a count without a guard)",
           def->name);
    return finish(cudaErrorInvalidValue);
  }
  if (l->counts_dev != NULL &&
      (!(def->flags & DR_KFLAG_DEVICE_COUNTS) ||
       !mem_ok("kernel_launch counts_dev", l->counts_dev, sizeof(uint64_t) * (gsize)def->n_params))) {
    misuse(
        "kernel_launch %s: counts in device memory for a kernel that cannot read them, or not device memory",
        def->name);
    return finish(cudaErrorInvalidValue);
  }
  if ((l->guard != NULL && !mem_ok("kernel_launch guard", l->guard, sizeof(gint32))) ||
      (l->guard_runs != NULL && !mem_ok("kernel_launch guard_runs", l->guard_runs, sizeof(guint64))))
    return finish(cudaErrorInvalidValue);
  if (fake.run_twins && !fake.dry && fake.capture_stream == NULL && def->host) {
    char err[DR_KERR_SIZE] = {0};
    if (run_guarded(def, l, err) != 0) {
      misuse("kernel_launch %s: host twin refused: %s", def->name, err);
      return finish(cudaErrorInvalidValue);
    }
  }
  FakeNode *node = capture_node(l->stream, cudaGraphNodeTypeKernel);
  if (node) set_launch(node, def, l);
  /* Like cuBLAS at some shapes (a split-K reduction after the product):
   * a second kernel node after the first, so the launch is no one node of
   * the graph. It does nothing on a replay; the first node does the work. */
  if (node && split_kernel && strcmp(def->name, split_kernel) == 0 && def->n_params > 0 &&
      l->counts[0] >= split_count) {
    /* A kernel of its own (no host twin: a replay skips it), which the
     * one-node capture of a later change makes again, so that the pair
     * can be set in place node by node, as cuBLAS's on the GPU. */
    static const DrKValue no_args[1];
    static const uint64_t no_counts[1];
    FakeNode *second = capture_node(l->stream, cudaGraphNodeTypeKernel);
    if (second) set_launch(second, &split_def, &(DrKLaunch){.args = no_args, .counts = no_counts});
  }
  /* A self-stamping built-in raises its stamp to its end (atomicMax). */
  if (l->stamp != NULL && !fake.dry && fake.capture_stream == NULL) {
    unsigned long long *slot = l->stamp;
    clock_ns += 1000;
    if (*slot < clock_ns) *slot = clock_ns;
  }
  return cudaSuccess;
}

/* The stamp kernel: one thread writes %globaltimer into *slot. */
static int fake_stamp_launch(unsigned long long *slot, cudaStream_t stream) {
  GATE("stamp_launch", stream, FALSE, FALSE);
  if (!stream_ok("stamp_launch", stream) || !stream_here("stamp_launch", stream))
    return finish(cudaErrorInvalidResourceHandle);
  gboolean partial = FALSE;
  if (slot == NULL || mem_find(slot, sizeof *slot, &partial) == NULL || partial) {
    misuse("stamp_launch: slot %p is not device memory", (void *)slot);
    return finish(cudaErrorInvalidValue);
  }
  if (fake.capture_stream == NULL && !fake.dry) *slot = clock_ns += 1000;
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeKernel); /* no built-in: never mapped */
  if (n) {
    n->ctl = 3; /* a replay writes the clock */
    n->dst = slot;
  }
  return cudaSuccess;
}

/* The spare kernel (DrCudaApi.spare_launch): a kernel node of no work,
 * nothing on a replay. */
static int fake_spare_launch(cudaStream_t stream) {
  GATE("spare_launch", stream, FALSE, FALSE);
  if (!stream_ok("spare_launch", stream) || !stream_here("spare_launch", stream))
    return finish(cudaErrorInvalidResourceHandle);
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeKernel);
  if (n) n->ctl = 7;
  return cudaSuccess;
}

/* The word store (DrCudaApi.words_launch): the words are written at once,
 * as a fake stream is always idle. Never captured (graph mode stores
 * before a launch, not inside one). */
static guint words_launches;
static int fake_words_launch(unsigned long long *const *dst, const unsigned long long *value, unsigned n,
                             cudaStream_t stream) {
  GATE("words_launch", stream, FALSE, FALSE);
  if (!stream_ok("words_launch", stream) || !stream_here("words_launch", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (fake.capture_stream != NULL) {
    misuse("words_launch: made while a capture is under way");
    return finish(cudaErrorStreamCaptureUnsupported);
  }
  for (unsigned i = 0; i < n; i++) {
    gboolean partial = FALSE;
    if (dst[i] == NULL || mem_find(dst[i], sizeof *dst[i], &partial) == NULL || partial) {
      misuse("words_launch: word %u at %p is not device memory", i, (void *)dst[i]);
      return finish(cudaErrorInvalidValue);
    }
  }
  if (!fake.dry)
    for (unsigned i = 0; i < n; i++) *dst[i] = value[i];
  words_launches++;
  return cudaSuccess;
}

/* ---- graph-node queries and per-node updates (dr_fake_api_graph_nodes) ---------- */

static gboolean node_ok(const char *call, cudaGraphNode_t node) {
  if (node != NULL) return TRUE;
  misuse("%s: a NULL node", call);
  return FALSE;
}

static FakeNode *exec_node(Obj *e, cudaGraphNode_t node) {
  for (guint i = 0; e && e->nodes && i < e->nodes->len; i++)
    if (((FakeNode *)e->nodes->pdata[i])->orig == (const FakeNode *)node) return e->nodes->pdata[i];
  return NULL;
}

static cudaError_t fake_cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                                 unsigned long long *id, cudaGraph_t *graph,
                                                 const cudaGraphNode_t **deps,
                                                 const cudaGraphEdgeData **edge_data, size_t *n_deps) {
  GATE("cudaStreamGetCaptureInfo", stream, FALSE, FALSE);
  if (!stream_ok("cudaStreamGetCaptureInfo", stream)) return finish(cudaErrorInvalidResourceHandle);
  *status = fake.capture_stream ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  GPtrArray *t = fake.capture_stream ? tail_of(stream) : NULL;
  if (graph) {
    *graph = NULL;
    if (fake.subs && fake.subs->len) {
      Obj *target = ((Sub *)fake.subs->pdata[fake.subs->len - 1])->target;
      GHashTableIter it;
      gpointer key, value;
      g_hash_table_iter_init(&it, fake.bodies);
      while (g_hash_table_iter_next(&it, &key, &value))
        if (value == target) *graph = key;
    } else if (fake.capture_stream) {
      *graph = CAPTURE_GRAPH;
    }
  }
  if (deps) *deps = t ? (const cudaGraphNode_t *)t->pdata : NULL;
  if (edge_data) *edge_data = NULL; /* all default edges */
  if (n_deps) *n_deps = t ? t->len : 0;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *n_nodes) {
  GATE("cudaGraphGetNodes", graph, FALSE, FALSE);
  Obj *g = obj_find(graph, DR_FAKE_GRAPH);
  if (g == NULL) {
    misuse("cudaGraphGetNodes: %p is not a live graph", (void *)graph);
    return finish(cudaErrorInvalidValue);
  }
  size_t n = g->nodes ? g->nodes->len : 0;
  if (nodes)
    for (size_t i = 0; i < MIN(n, *n_nodes); i++) nodes[i] = g->nodes->pdata[i];
  *n_nodes = n;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *deps,
                                                     cudaGraphEdgeData *edge_data, size_t *n_deps) {
  GATE("cudaGraphNodeGetDependencies", NULL, FALSE, FALSE);
  if (!node_ok("cudaGraphNodeGetDependencies", node)) return finish(cudaErrorInvalidValue);
  const FakeNode *n = (const FakeNode *)node;
  if (deps)
    for (size_t i = 0; i < MIN(n->deps->len, *n_deps); i++) {
      deps[i] = n->deps->pdata[i];
      if (edge_data) memset(&edge_data[i], 0, sizeof edge_data[i]);
    }
  *n_deps = n->deps->len;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *type) {
  GATE("cudaGraphNodeGetType", NULL, FALSE, FALSE);
  if (!node_ok("cudaGraphNodeGetType", node)) return finish(cudaErrorInvalidValue);
  *type = ((const FakeNode *)node)->type;
  return cudaSuccess;
}

/* A fake kernel node's parameters: func is the built-in, kernelParams its
 * launch (the node's copy, valid while the node lives). */
static cudaError_t fake_cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *p) {
  GATE("cudaGraphKernelNodeGetParams", NULL, FALSE, FALSE);
  FakeNode *n = (FakeNode *)node;
  if (!node_ok("cudaGraphKernelNodeGetParams", node) || n->type != cudaGraphNodeTypeKernel || n->def == NULL)
    return finish(cudaErrorInvalidValue);
  /* As the runtime on the H200: a kernel of cuBLAS's own module is no
   * function it can name. */
  if (n->def->flags & DR_KFLAG_BLAS) return finish(cudaErrorInvalidDeviceFunction);
  memset(p, 0, sizeof *p);
  p->func = (void *)n->def;
  p->kernelParams = (void **)(void *)n;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                                     const struct cudaKernelNodeParams *p) {
  GATE("cudaGraphKernelNodeSetParams", NULL, FALSE, FALSE);
  FakeNode *n = (FakeNode *)node, *from = (FakeNode *)(void *)p->kernelParams;
  if (!node_ok("cudaGraphKernelNodeSetParams", node) || from == NULL) return finish(cudaErrorInvalidValue);
  set_launch(n, from->def, &from->l);
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                         const struct cudaKernelNodeParams *p) {
  GATE("cudaGraphExecKernelNodeSetParams", exec, FALSE, FALSE);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node);
  FakeNode *from = (FakeNode *)(void *)p->kernelParams;
  if (n == NULL || n->type != cudaGraphNodeTypeKernel || from == NULL || from->def != n->def) {
    misuse("cudaGraphExecKernelNodeSetParams: node %p is not a kernel node of %p's graph", (void *)node,
           (void *)exec);
    return finish(cudaErrorInvalidValue);
  }
  set_launch(n, from->def, &from->l);
  fake.exec_node_sets++;
  return cudaSuccess;
}

/* DrCudaApi.kernel_node_copy, the driver's way: any kernel node's launch,
 * its function included, onto a kernel node of the executable. */
static cudaError_t fake_kernel_node_copy(cudaGraphExec_t exec, cudaGraphNode_t node,
                                         cudaGraphNode_t from_node) {
  GATE("kernel_node_copy", exec, FALSE, FALSE);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node), *from = (FakeNode *)from_node;
  if (n == NULL || n->type != cudaGraphNodeTypeKernel || !node_ok("kernel_node_copy", from_node) ||
      from->type != cudaGraphNodeTypeKernel || from->def == NULL) {
    misuse("kernel_node_copy: node %p is not a kernel node of %p's graph, or %p no kernel node", (void *)node,
           (void *)exec, (void *)from_node);
    return finish(cudaErrorInvalidValue);
  }
  set_launch(n, from->def, &from->l);
  fake.exec_node_sets++;
  return cudaSuccess;
}

/* A kernel, memcpy or memset node of the executable enabled or disabled
 * (a replay skips a disabled one), as the runtime allows. */
static cudaError_t fake_cudaGraphNodeSetEnabled(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                unsigned int enabled) {
  GATE("cudaGraphNodeSetEnabled", exec, FALSE, FALSE);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node);
  if (n == NULL || (n->type != cudaGraphNodeTypeKernel && n->type != cudaGraphNodeTypeMemcpy &&
                    n->type != cudaGraphNodeTypeMemset)) {
    misuse("cudaGraphNodeSetEnabled: node %p is not a kernel, memcpy or memset node of %p's graph",
           (void *)node, (void *)exec);
    return finish(cudaErrorInvalidValue);
  }
  n->disabled = !enabled;
  return cudaSuccess;
}

/* DrCudaApi.user_node_copy (dr_fake_api_user_sets): a user kernel node's
 * launch onto the executable's node of a user kernel. */
static cudaError_t fake_user_node_copy(cudaGraphExec_t exec, cudaGraphNode_t node,
                                       cudaGraphNode_t from_node) {
  GATE("user_node_copy", exec, FALSE, FALSE);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node), *from = (FakeNode *)from_node;
  if (n == NULL || n->ctl != 5 || from == NULL || from->ctl != 5) {
    misuse("user_node_copy: node %p is not a user kernel node of %p's graph, or %p none", (void *)node,
           (void *)exec, (void *)from_node);
    return finish(cudaErrorInvalidValue);
  }
  n->user_rec = from->user_rec;
  n->user_arg1 = from->user_arg1;
  fake.exec_node_sets++;
  return cudaSuccess;
}

/* DrCudaApi.kernel_node_params: the launchers the real library can
 * describe (dr__k_describe decides, making no CUDA call) give their launch
 * as a node of the model, which the exec's set copies as it copies a
 * captured node's (kernelParams names it, as GetParams's does). One at a
 * time: the caller sets it before describing another. */
static cudaError_t fake_kernel_node_params(const DrKernelDef *def, const DrKLaunch *l,
                                           struct cudaKernelNodeParams *p, DrKDescribed *store) {
  GATE("kernel_node_params", NULL, FALSE, FALSE);
  static FakeNode described;
  if (dr__k_describe(def, l, store) != 0) return cudaErrorNotSupported;
  memset(&described, 0, sizeof described);
  described.type = cudaGraphNodeTypeKernel;
  set_launch(&described, def, l);
  memset(p, 0, sizeof *p);
  p->func = (void *)def;
  p->kernelParams = (void **)(void *)&described;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                           void *dst, const void *src, size_t count,
                                                           enum cudaMemcpyKind kind) {
  GATE_RECORD("cudaGraphExecMemcpyNodeSetParams1D", exec, FALSE, FALSE, current()->size = count);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node);
  /* A new count is legal (the runtime asks only for 1-D operands from the
   * same contexts and no zero length): run-time parameters change it. */
  if (n == NULL || n->type != cudaGraphNodeTypeMemcpy || count == 0) {
    misuse("cudaGraphExecMemcpyNodeSetParams1D: node %p is not a memcpy node of %p's graph, or 0 bytes",
           (void *)node, (void *)exec);
    return finish(cudaErrorInvalidValue);
  }
  if (!mem_ok("cudaGraphExecMemcpyNodeSetParams1D dst", dst, count) ||
      !mem_ok("cudaGraphExecMemcpyNodeSetParams1D src", src, count))
    return finish(cudaErrorInvalidValue);
  n->dst = dst;
  n->src = src;
  n->count = count;
  fake.exec_node_sets++;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *p) {
  GATE("cudaGraphMemsetNodeGetParams", NULL, FALSE, FALSE);
  const FakeNode *n = (const FakeNode *)node;
  if (!node_ok("cudaGraphMemsetNodeGetParams", node) || n->type != cudaGraphNodeTypeMemset)
    return finish(cudaErrorInvalidValue);
  memset(p, 0, sizeof *p);
  p->dst = n->dst;
  p->value = (unsigned)n->value;
  p->elementSize = 1;
  p->width = n->count;
  p->height = 1;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                         const struct cudaMemsetParams *p) {
  GATE("cudaGraphExecMemsetNodeSetParams", exec, FALSE, FALSE);
  FakeNode *n = exec_node(obj_find(exec, DR_FAKE_GRAPH_EXEC), node);
  if (n == NULL || n->type != cudaGraphNodeTypeMemset || p->width == 0 || p->elementSize != 1 ||
      p->height != 1) {
    misuse("cudaGraphExecMemsetNodeSetParams: node %p is not this memset of %p's graph", (void *)node,
           (void *)exec);
    return finish(cudaErrorInvalidValue);
  }
  if (!mem_ok("cudaGraphExecMemsetNodeSetParams", p->dst, p->width)) return finish(cudaErrorInvalidValue);
  n->dst = p->dst;
  n->value = (int)p->value;
  n->count = p->width;
  fake.exec_node_sets++;
  return cudaSuccess;
}

/* Fake device memory is device memory of device 0, fake pinned memory host
 * memory, anything else the caller's pageable memory. */
static cudaError_t fake_cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr) {
  GATE("cudaPointerGetAttributes", NULL, FALSE, FALSE);
  gboolean partial = FALSE;
  gpointer key = mem_find(ptr, 1, &partial);
  Obj *o = key ? g_hash_table_lookup(fake.objects, key) : NULL;
  memset(attr, 0, sizeof *attr);
  attr->type = o == NULL                       ? cudaMemoryTypeUnregistered
               : o->kind == DR_FAKE_DEVICE_MEM ? cudaMemoryTypeDevice
                                               : cudaMemoryTypeHost;
  attr->device = 0;
  attr->devicePointer = o && o->kind == DR_FAKE_DEVICE_MEM ? (void *)ptr : NULL;
  attr->hostPointer = o && o->kind == DR_FAKE_HOST_MEM ? (void *)ptr : NULL;
  return cudaSuccess;
}

/* ---- conditional nodes (dr_fake_api_graph_nodes) --------------------------------- */

static Handle *handle_find(cudaGraphConditionalHandle h) {
  if (fake.handles == NULL || h == 0 || h > fake.handles->len) return NULL;
  return &g_array_index(fake.handles, Handle, h - 1);
}

/* `graph` is the capture in progress (the outermost) or a body graph. */
static gboolean graph_target_ok(const char *call, cudaGraph_t graph, Obj **body) {
  *body = fake.bodies ? g_hash_table_lookup(fake.bodies, graph) : NULL;
  if (*body != NULL) return TRUE;
  if (graph == CAPTURE_GRAPH && fake.capture_stream != NULL && (fake.subs == NULL || fake.subs->len == 0))
    return TRUE;
  misuse("%s: %p is neither the capture in progress nor a body graph", call, (void *)graph);
  return FALSE;
}

static cudaError_t fake_cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *handle,
                                                         cudaGraph_t graph, unsigned int default_value,
                                                         unsigned int flags) {
  GATE("cudaGraphConditionalHandleCreate", NULL, FALSE, FALSE);
  Obj *body = NULL;
  if (!graph_target_ok("cudaGraphConditionalHandleCreate", graph, &body))
    return finish(cudaErrorInvalidValue);
  if (flags != 0 && flags != cudaGraphCondAssignDefault) {
    misuse("cudaGraphConditionalHandleCreate: flags %u", flags);
    return finish(cudaErrorInvalidValue);
  }
  if (fake.handles == NULL) fake.handles = g_array_new(FALSE, TRUE, sizeof(Handle));
  Handle h = {default_value, flags, default_value, FALSE};
  g_array_append_val(fake.handles, h);
  *handle = fake.handles->len;
  return cudaSuccess;
}

static cudaError_t fake_cudaGraphAddNode(cudaGraphNode_t *node, cudaGraph_t graph,
                                         const cudaGraphNode_t *deps, const cudaGraphEdgeData *edge_data,
                                         size_t n_deps, struct cudaGraphNodeParams *params) {
  GATE("cudaGraphAddNode", NULL, FALSE, FALSE);
  Obj *body = NULL;
  if (!graph_target_ok("cudaGraphAddNode", graph, &body)) return finish(cudaErrorInvalidValue);
  if (edge_data != NULL) misuse("cudaGraphAddNode: edge data (dagrun passes none)");
  for (size_t i = 0; i < n_deps; i++)
    for (size_t j = 0; j < i; j++)
      if (deps[i] == deps[j]) {
        misuse("cudaGraphAddNode: a dependency listed twice");
        return finish(cudaErrorInvalidValue);
      }
  if (params->type != cudaGraphNodeTypeConditional && params->type != cudaGraphNodeTypeEmpty) {
    misuse("cudaGraphAddNode: node type %d (the fake adds conditional and empty nodes)", (int)params->type);
    return finish(cudaErrorNotSupported);
  }
  FakeNode *n = g_new0(FakeNode, 1);
  n->type = params->type;
  n->deps = g_ptr_array_new();
  for (size_t i = 0; i < n_deps; i++) g_ptr_array_add(n->deps, (gpointer)deps[i]);
  if (params->type == cudaGraphNodeTypeConditional) {
    const struct cudaConditionalNodeParams *c = &params->conditional;
    Handle *h = handle_find(c->handle);
    gboolean size_ok = c->type == cudaGraphCondTypeWhile ? c->size == 1
                       : c->type == cudaGraphCondTypeIf  ? (c->size == 1 || c->size == 2)
                                                         : FALSE;
    if (h == NULL || h->attached || !size_ok) {
      misuse("cudaGraphAddNode: conditional node: handle %llu (%s), type %d, size %u", c->handle,
             h == NULL     ? "unknown"
             : h->attached ? "used already"
                           : "new",
             (int)c->type, c->size);
      fake_node_free(n);
      return finish(cudaErrorInvalidValue);
    }
    h->attached = TRUE;
    n->handle = c->handle;
    n->ctype = c->type;
    n->size = c->size;
    n->owns = TRUE;
    if (fake.bodies == NULL) fake.bodies = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (unsigned i = 0; i < c->size; i++) {
      Obj *o = g_new0(Obj, 1);
      o->kind = DR_FAKE_GRAPH;
      o->graph_mem = g_ptr_array_new();
      o->nodes = g_ptr_array_new_with_free_func((GDestroyNotify)fake_node_free);
      n->body[i] = (cudaGraph_t)(void *)o;
      g_hash_table_insert(fake.bodies, o, o);
    }
    params->conditional.phGraph_out = n->body;
  }
  /* Into the graph a capture is filling (the capture in progress, or a
   * body graph captured into): in that capture's order, so that the
   * graph's list stays a topological order. */
  gboolean filling = body != NULL && fake.subs && fake.subs->len &&
                     ((Sub *)fake.subs->pdata[fake.subs->len - 1])->target == body;
  if (body != NULL && !filling) {
    g_ptr_array_add(body->nodes, n);
  } else {
    if (fake.capture_nodes == NULL)
      fake.capture_nodes = g_ptr_array_new_with_free_func((GDestroyNotify)fake_node_free);
    g_ptr_array_add(fake.capture_nodes, n);
  }
  *node = (cudaGraphNode_t)(void *)n;
  return cudaSuccess;
}

static cudaError_t fake_cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *deps,
                                                            const cudaGraphEdgeData *edge_data, size_t n_deps,
                                                            unsigned int flags) {
  GATE("cudaStreamUpdateCaptureDependencies", stream, FALSE, FALSE);
  if (!stream_ok("cudaStreamUpdateCaptureDependencies", stream))
    return finish(cudaErrorInvalidResourceHandle);
  if (fake.capture_stream == NULL) {
    misuse("cudaStreamUpdateCaptureDependencies: not capturing");
    return finish(cudaErrorIllegalState);
  }
  if (edge_data != NULL) misuse("cudaStreamUpdateCaptureDependencies: edge data (dagrun passes none)");
  GPtrArray *t = tail_of(stream);
  if (flags == cudaStreamSetCaptureDependencies) g_ptr_array_set_size(t, 0);
  for (size_t i = 0; i < n_deps; i++)
    if (!g_ptr_array_find(t, deps[i], NULL)) g_ptr_array_add(t, deps[i]);
  return cudaSuccess;
}

/* The control kernels exist only in a graph: outside a capture they are a
 * misuse (a real launch would set a handle no node owns). */
static FakeNode *control_node(const char *call, cudaGraphConditionalHandle handle, cudaStream_t stream) {
  if (fake.capture_stream == NULL) {
    misuse("%s outside a capture", call);
    return NULL;
  }
  if (handle_find(handle) == NULL) {
    misuse("%s: handle %llu unknown", call, handle);
    return NULL;
  }
  return capture_node(stream, cudaGraphNodeTypeKernel);
}

static int fake_cond_launch(cudaGraphConditionalHandle handle, const gint32 *cond, guint64 *trips,
                            gboolean count_always, cudaStream_t stream) {
  GATE("cond_launch", stream, FALSE, FALSE);
  if (!stream_ok("cond_launch", stream)) return finish(cudaErrorInvalidResourceHandle);
  if ((cond && !mem_ok("cond_launch cond", cond, sizeof *cond)) ||
      (trips && !mem_ok("cond_launch trips", trips, sizeof *trips)))
    return finish(cudaErrorInvalidValue);
  FakeNode *n = control_node("cond_launch", handle, stream);
  if (n == NULL) return finish(cudaErrorInvalidValue);
  n->ctl = 1;
  n->handle = handle;
  n->cond = cond;
  n->trips = trips;
  n->count_always = count_always;
  return cudaSuccess;
}

/* The trip stamp kernel's work (DrCudaApi.trip_launch), on the fake's
 * clock. */
static void trip_run(const FakeNode *n) {
  guint64 *stamps = n->stamps, *ctl = n->trips, keep = n->trip_keep;
  guint64 t = clock_ns += 1000;
  if ((n->trip_flags & DR_TRIP_CLOSE) && ctl[1] != 0) {
    stamps[2 * (ctl[1] - 1) + 1] = t;
    ctl[0]++;
    ctl[2]++;
    ctl[1] = 0;
  }
  if ((n->trip_flags & DR_TRIP_OPEN) && (n->cond == NULL || n->cond[0] != 0)) {
    guint64 s = ctl[0] + n->trip_skip, pos = s < keep ? s : keep + (s - keep) % keep;
    ctl[0] = s;
    stamps[2 * pos] = t;
    ctl[4 + pos] = s + 1;
    ctl[4 + 2 * keep + pos] = n->trip >= 0 ? (guint64)n->trip : ctl[2];
    ctl[1] = pos + 1;
  }
}

static int fake_trip_launch(guint64 *stamps, guint64 *ctl, const gint32 *guard, unsigned flags, gint64 trip,
                            guint64 skip, guint32 keep, cudaStream_t stream) {
  GATE("trip_launch", stream, FALSE, FALSE);
  if (!stream_ok("trip_launch", stream)) return finish(cudaErrorInvalidResourceHandle);
  if (keep == 0 || (flags & ~(DR_TRIP_CLOSE | DR_TRIP_OPEN)) != 0 || flags == 0 ||
      !mem_ok("trip_launch stamps", stamps, 4 * (gsize)keep * sizeof *stamps) ||
      !mem_ok("trip_launch ctl", ctl, (4 + 4 * (gsize)keep) * sizeof *ctl) ||
      (guard && !mem_ok("trip_launch guard", guard, sizeof *guard))) {
    misuse("trip_launch: bad arguments (flags %u, keep %u)", flags, keep);
    return finish(cudaErrorInvalidValue);
  }
  if (fake.capture_stream == NULL) {
    misuse("trip_launch outside a capture");
    return finish(cudaErrorInvalidValue);
  }
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeKernel);
  n->ctl = 6;
  n->stamps = stamps;
  n->trips = ctl;
  n->cond = guard;
  n->trip_flags = flags;
  n->trip = trip;
  n->trip_skip = skip;
  n->trip_keep = keep;
  return cudaSuccess;
}

static int fake_count_launch(cudaGraphConditionalHandle handle, guint64 *counter, const guint64 *limit,
                             guint64 *stamps, cudaStream_t stream) {
  GATE("count_launch", stream, FALSE, FALSE);
  if (!stream_ok("count_launch", stream)) return finish(cudaErrorInvalidResourceHandle);
  if (!mem_ok("count_launch counter", counter, sizeof *counter) ||
      !mem_ok("count_launch limit", limit, sizeof *limit) ||
      (stamps && !mem_ok("count_launch stamps", stamps, 2 * sizeof *stamps)))
    return finish(cudaErrorInvalidValue);
  FakeNode *n = control_node("count_launch", handle, stream);
  if (n == NULL) return finish(cudaErrorInvalidValue);
  n->ctl = 2;
  n->handle = handle;
  n->trips = counter;
  n->limit_at = limit;
  n->stamps = stamps;
  return cudaSuccess;
}

/* Appends the shape of `nodes` to fake.shape (names) and fake.shape_deps
 * (names with the indices of their dependencies in the same list), and
 * checks what CUDA allows in a conditional body (`in_body`). */
static void shape_of(const GPtrArray *nodes, gboolean in_body) {
  for (guint i = 0; nodes && i < nodes->len; i++) {
    const FakeNode *n = nodes->pdata[i];
    if (i) {
      g_string_append_c(fake.shape, ' ');
      g_string_append_c(fake.shape_deps, ' ');
    }
    const char *name = NULL;
    switch (n->type) {
      case cudaGraphNodeTypeKernel:
        name = n->ctl == 1   ? (n->cond ? "cond" : "cond1")
               : n->ctl == 2 ? "count"
               : n->ctl == 4 ? n->lib
               : n->ctl == 5 ? "user"
               : n->ctl == 6 ? "trip"
               : n->def      ? n->def->name
                             : "stamp";
        break;
      case cudaGraphNodeTypeMemcpy: {
        name = "memcpy";
        gboolean partial = FALSE;
        gpointer d = mem_find(n->dst, n->count, &partial), *sr = mem_find(n->src, n->count, &partial);
        Obj *od = d ? g_hash_table_lookup(fake.objects, d) : NULL;
        Obj *os = sr ? g_hash_table_lookup(fake.objects, sr) : NULL;
        if (in_body &&
            (od == NULL || os == NULL || od->kind != DR_FAKE_DEVICE_MEM || os->kind != DR_FAKE_DEVICE_MEM))
          misuse("cudaGraphInstantiate: a memcpy node touching host memory in a conditional body");
        break;
      }
      case cudaGraphNodeTypeMemset:
        name = "memset";
        break;
      case cudaGraphNodeTypeEmpty:
        name = "empty";
        break;
      case cudaGraphNodeTypeConditional:
        name = n->ctype == cudaGraphCondTypeWhile ? "while" : "if";
        break;
      case cudaGraphNodeTypeHost:
        name = "host";
        break;
      case cudaGraphNodeTypeEventRecord:
        name = "record";
        break;
      case cudaGraphNodeTypeMemAlloc:
        name = "alloc";
        break;
      case cudaGraphNodeTypeMemFree:
        name = "free";
        break;
      default:
        name = "other";
        break;
    }
    if (in_body && (n->type == cudaGraphNodeTypeHost || n->type == cudaGraphNodeTypeEventRecord ||
                    n->type == cudaGraphNodeTypeWaitEvent || n->type == cudaGraphNodeTypeMemAlloc ||
                    n->type == cudaGraphNodeTypeMemFree))
      misuse("cudaGraphInstantiate: a %s node in a conditional body", name);
    g_string_append(fake.shape, name);
    g_string_append_printf(fake.shape_deps, "%u:%s", i, name);
    if (n->deps->len) {
      g_string_append_c(fake.shape_deps, '<');
      for (guint d = 0; d < n->deps->len; d++) {
        guint at = 0;
        gboolean found = g_ptr_array_find((GPtrArray *)nodes, n->deps->pdata[d], &at);
        if (!found) misuse("cudaGraphInstantiate: a dependency outside the node's graph");
        g_string_append_printf(fake.shape_deps, d ? ",%u" : "%u", found ? at : 9999);
      }
      g_string_append_c(fake.shape_deps, '>');
    }
    if (n->type != cudaGraphNodeTypeConditional) continue;
    for (unsigned b = 0; b < n->size; b++) {
      const Obj *o = fake.bodies ? g_hash_table_lookup(fake.bodies, n->body[b]) : NULL;
      g_string_append(fake.shape, b ? " | " : "{");
      g_string_append(fake.shape_deps, b ? " | " : "{");
      if (o) shape_of(o->nodes, TRUE);
      if (o == NULL || o->nodes->len == 0) misuse("cudaGraphInstantiate: an empty conditional body");
    }
    g_string_append_c(fake.shape, '}');
    g_string_append_c(fake.shape_deps, '}');
  }
}

const char *dr_fake_graph_shape(gboolean deps) {
  GString *s = deps ? fake.shape_deps : fake.shape;
  return s ? s->str : "";
}

/* Performs `nodes` (a graph launch's replay): kernels through their host
 * twins, control kernels and conditional nodes as the device would. */
static void replay_nodes(const GPtrArray *nodes) {
  for (guint i = 0; nodes && i < nodes->len; i++) {
    const FakeNode *n = nodes->pdata[i];
    char err[DR_KERR_SIZE] = {0};
    if (n->disabled) continue; /* an empty node */
    if (n->type == cudaGraphNodeTypeKernel && n->def == &split_def) split_runs++;
    if (n->type == cudaGraphNodeTypeKernel && n->ctl == 5 && n->user_rec) user_replayed = n->user_arg1;
    if (n->type == cudaGraphNodeTypeKernel && n->ctl == 1) {
      unsigned v = n->cond == NULL ? 1u : n->cond[0] != 0;
      if (n->trips && (n->count_always || v)) n->trips[0]++;
      handle_find(n->handle)->value = v;
    } else if (n->type == cudaGraphNodeTypeKernel && n->ctl == 2) {
      guint64 k = ++n->trips[0], limit = n->limit_at[0];
      if (n->stamps && k <= limit) n->stamps[k] = clock_ns += 1000;
      handle_find(n->handle)->value = k < limit;
    } else if (n->type == cudaGraphNodeTypeKernel && n->ctl == 4) {
      n->fn(n->data);
    } else if (n->type == cudaGraphNodeTypeKernel && n->ctl == 6) {
      trip_run(n);
    } else if (n->type == cudaGraphNodeTypeKernel && n->ctl == 3) {
      *(unsigned long long *)n->dst = clock_ns += 1000;
    } else if (n->type == cudaGraphNodeTypeKernel && n->def && n->def->host) {
      /* A self-stamping built-in raises its stamp to its end, unless its
       * guard stopped it (it returns before its stamp). */
      gboolean runs = !guard_stops(&n->l);
      if (run_guarded(n->def, &n->l, err) != 0)
        misuse("cudaGraphLaunch: kernel %s: host twin refused: %s", n->def->name, err);
      else if (runs && n->l.stamp != NULL) {
        unsigned long long *slot = n->l.stamp;
        clock_ns += 1000;
        if (*slot < clock_ns) *slot = clock_ns;
      }
    }
    if (n->type == cudaGraphNodeTypeMemcpy && n->count) memmove(n->dst, n->src, n->count);
    if (n->type == cudaGraphNodeTypeMemset && n->count) memset(n->dst, n->value, n->count);
    if (n->type == cudaGraphNodeTypeHost) n->fn(n->data);
    if (n->type != cudaGraphNodeTypeConditional) continue;
    const FakeNode *o = n->orig ? n->orig : n;
    Handle *h = handle_find(o->handle);
    const Obj *b0 = g_hash_table_lookup(fake.bodies, o->body[0]);
    if (o->ctype == cudaGraphCondTypeIf) {
      if (h->value)
        replay_nodes(b0->nodes);
      else if (o->size == 2)
        replay_nodes(((const Obj *)g_hash_table_lookup(fake.bodies, o->body[1]))->nodes);
      continue;
    }
    for (guint64 trips = 0; h->value; trips++) {
      if (trips == 10000000) {
        misuse("cudaGraphLaunch: a WHILE node ran 10^7 trips");
        break;
      }
      replay_nodes(b0->nodes);
    }
  }
}

/* ---- cuBLAS contexts ------------------------------------------------------------- */

/* With dr_fake_set_blas(TRUE) a context is a fake object over the
 * caller's workspace (checked); otherwise the real kernels/blas.c's,
 * which needs cuBLAS and a device (so a test without the setting sees the
 * failure the machine would give). No fault point: cuBLAS calls are not
 * the runtime's. */
static DrKBlas *fake_blas_new(void *ws, uint64_t bytes, char *err) {
  objects_init();
  if (!fake_blas_on) return dr_kblas_new_with_workspace(ws, bytes, err);
  if (!mem_ok("cuBLAS workspace", ws, bytes)) {
    g_strlcpy(err, "the workspace is not device memory", 256);
    return NULL;
  }
  return obj_new(DR_FAKE_BLAS, 0);
}

static int fake_blas_bind(DrKBlas *blas, void *stream, char *err) {
  Obj *b = obj_find(blas, DR_FAKE_BLAS);
  if (b == NULL) return dr_kblas_bind(blas, stream, err);
  if (!stream_ok("cublasSetStream", stream)) {
    g_strlcpy(err, "not a live stream", 256);
    return -1;
  }
  b->bound = stream;
  return 0;
}

static void fake_blas_free(DrKBlas *blas) {
  if (obj_find(blas, DR_FAKE_BLAS) == NULL)
    dr_kblas_free(blas);
  else
    obj_release(blas);
}

static const char *fake_blas_last_error(const DrKBlas *blas) {
  return obj_find(blas, DR_FAKE_BLAS) ? "" : dr_kblas_last_error(blas);
}

void dr_fake_set_blas(gboolean on, enum cudaGraphNodeType extra) {
  fake_blas_on = on;
  blas_extra = extra;
}

guint dr_fake_user_launches(void) { return user_launches; }

/* ---- the table and the controls ---------------------------------------------------- */

static const DrCudaApi fake_api = {
#define DR_X(name, params, args) .name = fake_##name,
    DR_CUDA_API_LIST(DR_X)
#undef DR_X
        .cudaGetErrorName = fake_cudaGetErrorName,
    .cudaGetErrorString = fake_cudaGetErrorString,
    .kernel_launch = fake_kernel_launch,
    .blas_new = fake_blas_new,
    .blas_bind = fake_blas_bind,
    .blas_free = fake_blas_free,
    .blas_last_error = fake_blas_last_error,
    .stamp_launch = fake_stamp_launch,
    .cudaEventQuery = fake_cudaEventQuery,
    .cudaGraphExecUpdate = fake_cudaGraphExecUpdate,
    .cudaMemPoolGetAttribute = fake_cudaMemPoolGetAttribute,
    .cudaDeviceGetGraphMemAttribute = fake_cudaDeviceGetGraphMemAttribute,
    .cudaDeviceSetGraphMemAttribute = fake_cudaDeviceSetGraphMemAttribute,
};

const DrCudaApi *dr_fake_api(void) { return &fake_api; }

const DrCudaApi *dr_fake_api_batch(void) {
  static DrCudaApi api;
  api = fake_api;
  api.cudaMemcpyBatchAsync = fake_cudaMemcpyBatchAsync;
  return &api;
}

const char *dr_fake_batch_sizes(void) { return batch_sizes ? batch_sizes->str : ""; }
void dr_fake_set_batch_refused(gboolean refused) { batch_refused = refused; }
void dr_fake_set_split(const char *kernel, guint64 count) {
  split_kernel = kernel;
  split_count = count;
  split_runs = 0;
}

guint dr_fake_split_runs(void) { return split_runs; }
guint dr_fake_words_launches(void) { return words_launches; }

const DrCudaApi *dr_fake_api_user_sets(void) {
  static DrCudaApi api;
  api = *dr_fake_api_graph_nodes();
  api.user_node_copy = fake_user_node_copy;
  user_record = TRUE;
  return &api;
}

guint64 dr_fake_user_replayed(void) { return user_replayed; }

const DrCudaApi *dr_fake_api_graph_nodes(void) {
  static DrCudaApi api;
  api = fake_api;
  api.cudaStreamGetCaptureInfo = fake_cudaStreamGetCaptureInfo;
  api.cudaGraphGetNodes = fake_cudaGraphGetNodes;
  api.cudaGraphNodeGetDependencies = fake_cudaGraphNodeGetDependencies;
  api.cudaGraphNodeGetType = fake_cudaGraphNodeGetType;
  api.cudaGraphKernelNodeGetParams = fake_cudaGraphKernelNodeGetParams;
  api.cudaGraphKernelNodeSetParams = fake_cudaGraphKernelNodeSetParams;
  api.cudaGraphExecKernelNodeSetParams = fake_cudaGraphExecKernelNodeSetParams;
  api.kernel_node_copy = fake_kernel_node_copy;
  api.kernel_node_params = fake_kernel_node_params;
  api.spare_launch = fake_spare_launch;
  api.words_launch = fake_words_launch;
  api.cudaGraphNodeSetEnabled = fake_cudaGraphNodeSetEnabled;
  api.cudaGraphExecMemcpyNodeSetParams1D = fake_cudaGraphExecMemcpyNodeSetParams1D;
  api.cudaGraphMemsetNodeGetParams = fake_cudaGraphMemsetNodeGetParams;
  api.cudaGraphExecMemsetNodeSetParams = fake_cudaGraphExecMemsetNodeSetParams;
  api.cudaPointerGetAttributes = fake_cudaPointerGetAttributes;
  api.cudaGraphConditionalHandleCreate = fake_cudaGraphConditionalHandleCreate;
  api.cudaGraphAddNode = fake_cudaGraphAddNode;
  api.cudaStreamBeginCaptureToGraph = fake_cudaStreamBeginCaptureToGraph;
  api.cudaStreamUpdateCaptureDependencies = fake_cudaStreamUpdateCaptureDependencies;
  api.cond_launch = fake_cond_launch;
  api.count_launch = fake_count_launch;
  api.trip_launch = fake_trip_launch;
  return &api;
}

void dr_fake_set_replay_graphs(gboolean replay) { fake.replay = replay; }
void dr_fake_allow_default_streams(gboolean allow) { fake.allow_default_streams = allow; }
guint dr_fake_exec_node_sets(void) { return fake.exec_node_sets; }

guint dr_fake_pdl_launches(void) { return pdl_launches; }
guint dr_fake_kernel_launches(void) { return kernel_launches; }
guint dr_fake_kernels_run(void) { return kernels_run; }
guint dr_fake_guard_skips(void) { return guard_skips; }
void dr_fake_set_ignore_guards(gboolean on) { ignore_guards = on; }
const char *dr_fake_pdl_pattern(void) { return pdl_pattern ? pdl_pattern->str : ""; }
unsigned long long dr_fake_instantiate_flags(void) { return fake_instantiate_flags; }

void dr_fake_reset(void) {
  pdl_launches = kernel_launches = kernels_run = guard_skips = user_launches = words_launches = 0;
  user_record = FALSE;
  user_replayed = 0;
  if (pdl_pattern) g_string_truncate(pdl_pattern, 0);
  if (batch_sizes) g_string_truncate(batch_sizes, 0);
  fake_instantiate_flags = 0;
  objects_init();
  /* Graphs first: they release the allocations captured into them. */
  for (int pass = 0; pass < 2; pass++) {
    GHashTableIter it;
    gpointer key, value;
    GPtrArray *keys = g_ptr_array_new();
    g_hash_table_iter_init(&it, fake.objects);
    while (g_hash_table_iter_next(&it, &key, &value))
      if ((((Obj *)value)->kind == DR_FAKE_GRAPH) == (pass == 0)) g_ptr_array_add(keys, key);
    for (guint i = 0; i < keys->len; i++)
      if (g_hash_table_contains(fake.objects, keys->pdata[i])) obj_release(keys->pdata[i]);
    g_ptr_array_unref(keys);
  }
  g_array_set_size(fake.trace, 0);
  g_ptr_array_set_size(fake.capture_mem, 0);
  g_string_truncate(fake.misuse, 0);
  g_string_truncate(fake.after_sticky, 0);
  memset(fake.live, 0, sizeof fake.live);
  fake.points = 0;
  fake.fail_at = 0;
  fake.fault_index = -1;
  fake.sticky = cudaSuccess;
  fake.last_error = cudaSuccess;
  fake.capture_stream = NULL;
  fake.n_streams_made = 0;
  fake.profiling = FALSE;
  if (fake.capture_nodes) g_ptr_array_set_size(fake.capture_nodes, 0);
  if (fake.tails) {
    g_hash_table_remove_all(fake.tails);
    g_hash_table_remove_all(fake.event_deps);
  }
  while (fake.subs && fake.subs->len) sub_end(FALSE);
  if (fake.handles) g_array_set_size(fake.handles, 0);
  if (fake.shape) {
    g_string_truncate(fake.shape, 0);
    g_string_truncate(fake.shape_deps, 0);
  }
  fake.exec_node_sets = 0;
  fake.pool_used = fake.pool_high = fake.capture_live = fake.capture_peak = fake.graph_high = 0;
  fake.cur = 0;
  memset(fake.dev_pool_used, 0, sizeof fake.dev_pool_used);
  memset(fake.dev_pool_high, 0, sizeof fake.dev_pool_high);
  memset(fake.peer_enables, 0, sizeof fake.peer_enables);
}

void dr_fake_set_devices(int n) {
  g_return_if_fail(n >= 1 && n <= DR_FAKE_MAX_DEVICES);
  fake.n_devices = n;
}
void dr_fake_set_peer_access(gboolean can) { fake.peer_no = !can; }
guint dr_fake_peer_enables(int device, int peer) {
  g_return_val_if_fail(device_valid(device) && device_valid(peer), 0);
  return fake.peer_enables[device][peer];
}
int dr_fake_mem_device(gconstpointer p) {
  objects_init();
  return mem_device(p);
}

int dr_fake_current_device(void) { return fake.cur; }

gboolean dr_fake_library_work(cudaStream_t stream, const char *name, void (*fn)(void *), void *data) {
  objects_init();
  if (obj_find(stream, DR_FAKE_STREAM) == NULL) {
    misuse("%s: %p is not a live stream", name, (void *)stream);
    return FALSE;
  }
  FakeNode *n = capture_node(stream, cudaGraphNodeTypeKernel);
  if (n) {
    n->ctl = 4;
    n->lib = name;
    n->fn = (cudaHostFn_t)fn;
    n->data = data;
  } else if (!fake.dry) {
    fn(data);
  }
  return TRUE;
}

int dr_fake_device_of(gconstpointer obj) {
  Obj *o = obj ? g_hash_table_lookup(fake.objects, obj) : NULL;
  return o ? o->device : -1;
}

void dr_fake_arm(guint64 fail_at, DrFault fault) {
  objects_init();
  fake.fail_at = fail_at;
  fake.fault = fault;
}

void dr_fake_set_run_twins(gboolean run) { fake.run_twins = run; }
void dr_fake_set_move_data(gboolean move) { fake.dry = !move; }

guint dr_fake_live(DrFakeKind kind) { return fake.live[kind]; }

guint dr_fake_live_total(void) {
  guint n = 0;
  for (int k = 0; k < DR_FAKE_N_KINDS; k++) n += fake.live[k];
  return n;
}

void dr_fake_describe_live(GString *out) {
  gboolean first = TRUE;
  for (int k = 0; k < DR_FAKE_N_KINDS; k++) {
    if (fake.live[k] == 0) continue;
    g_string_append_printf(out, "%s%s %u", first ? "" : ", ", kind_names[k], fake.live[k]);
    first = FALSE;
  }
  if (first) g_string_append(out, "nothing");
}

gboolean dr_fake_only_live(gconstpointer *obj) {
  /* A graph counts with the allocations it owns (freed inside its
   * capture): a rejected cudaGraphDestroy leaves them all. */
  GHashTableIter it;
  gpointer key, value;
  guint owned = 0, n = 0;
  g_hash_table_iter_init(&it, fake.objects);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    Obj *o = value;
    if (o->kind == DR_FAKE_GRAPH) owned += o->graph_mem->len;
    n++;
    *obj = key;
  }
  if (n != owned + 1) return FALSE;
  g_hash_table_iter_init(&it, fake.objects);
  while (g_hash_table_iter_next(&it, &key, &value))
    if (((Obj *)value)->kind == DR_FAKE_GRAPH || owned == 0) *obj = key;
  return TRUE;
}

guint64 dr_fake_points(void) { return fake.points; }
const GArray *dr_fake_trace(void) {
  objects_init();
  return fake.trace;
}
gint64 dr_fake_fault_index(void) { return fake.fault_index; }
const char *dr_fake_misuse(void) {
  objects_init();
  return fake.misuse->str;
}
const char *dr_fake_after_sticky(void) {
  objects_init();
  return fake.after_sticky->str;
}
