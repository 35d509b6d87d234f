/* graph.h: DrGraph, dagrun's intermediate representation, the graph in the
 * middle between the parser (or the C API) and the scheduler and backends.
 *
 * Everything lives in dense arrays indexed by ids (DrId): buffers, nodes,
 * accesses, arguments, edges, kernel declarations. Passes use plain arrays
 * and bitsets over those ids. Every buffer, node, access and argument keeps
 * the source location it came from, so an error found three passes later
 * still points at the user's line. This file is not the schedule: see
 * plan.h for the stream plan.
 *
 * INVARIANTS (checked by dr_graph_check after each pass in debug builds,
 * -DDR_CHECK_INVARIANTS=1):
 *  I1. Node ids are unique, non-empty; nodes are in program (file) order.
 *  I2. Every access names an existing buffer, begin <= end <= buffer count,
 *      and belongs to exactly one node: node.access_first .. +access_count
 *      tile the access array in node order.
 *  I3. Every argument belongs to exactly one node (arg_first/arg_count tile
 *      the arg array in node order); a buffer argument names an access of
 *      the same node; kernel nodes name an existing kernel declaration and
 *      each parameter at most once.
 *  I4. Every edge joins two existing nodes, from != to. Hazard edges (RAW,
 *      WAR, WAW) always go forward in program order (from < to); only AFTER
 *      edges may go backward until the cycle pass has run. After
 *      dr_graph_sort_edges the edge array is sorted by (to, from) with no
 *      duplicate (from, to) pair.
 *  I5. alloc and free nodes name device buffers; buffer.alloc_node and
 *      free_node record the first alloc and free node of the buffer (a
 *      buffer may have several lifetimes: the lifetimes pass checks that
 *      its allocs and frees alternate, see scheduler/lifetimes.c).
 *  I6. Strings (ids, names, file names) are interned in the graph's string
 *      chunk and live as long as the graph.
 *  I7. A collective node (DR_OP_IS_COLLECTIVE) has 2 * n_parts accesses:
 *      participant i's src (READ) at access_first + 2i and its dst (WRITE)
 *      at + 2i + 1 (the same range twice when in place); send has only
 *      src accesses and recv only dst ones (n_parts accesses). After the
 *      devices pass, participant r of a list is rank r (on run.devices[r]).
 *      Every
 *      device and buffer device named is >= -1.
 */
#ifndef DAGRUN_IR_GRAPH_H
#define DAGRUN_IR_GRAPH_H

#include <glib.h>

#include "include/dagrun/hostfn.h"
#include "include/dagrun/kernel.h"
#include "include/dagrun/types.h"
#include "ir/diag.h"
#include "ir/names.h"
#include "ir/params.h"

G_BEGIN_DECLS

typedef guint32 DrId;
#define DR_NONE G_MAXUINT32

/* X(ENUM_SUFFIX, spelling) */
#define DR_INIT_LIST(X) \
  X(NONE, "none")       \
  X(ZEROS, "zeros")     \
  X(IOTA, "iota")       \
  X(RANDOM, "random")   \
  X(FILE, "file")

typedef enum {
#define DR_X(e, s) DR_INIT_##e,
  DR_INIT_LIST(DR_X)
#undef DR_X
} DrInitKind;

const char *dr_init_name(DrInitKind kind);
gboolean dr_init_from_name(const char *name, DrInitKind *out);

/* X(ENUM_SUFFIX, spelling): how --verify compares a buffer with the
 * serial run's (`verify:`): byte for byte, element by element within
 * |concurrent - serial| <= atol + rtol * |serial|, or not at all. */
#define DR_VERIFY_RULE_LIST(X) \
  X(EXACT, "exact")            \
  X(TOLERANCE, "tolerance")    \
  X(SKIP, "skip")

typedef enum {
#define DR_X(e, s) DR_VERIFY_##e,
  DR_VERIFY_RULE_LIST(DR_X)
#undef DR_X
} DrVerifyRule;

const char *dr_verify_rule_name(DrVerifyRule rule);
gboolean dr_verify_rule_from_name(const char *name, DrVerifyRule *out);
/* The most GPUs one process drives (`run.devices`) and the most
 * participants a single-process collective has. */
#define DR_MAX_DEVICES 32

typedef struct {
  const char *name; /* interned */
  DrLoc loc;        /* the buffer's key in `buffers:` */
  DrElemType type;
  /* `device:` given (device buffers only): the GPU it lives on; else
   * (device_set FALSE, as a zeroed DrBuffer has it) the run's device.
   * Host buffers have none: pinned memory is visible to every device. */
  gint32 device;
  gboolean device_set;
  DrLoc device_loc; /* its `device:` key, for messages */
  guint64 count;    /* elements; bytes = count * dr_elem_size(type) */
  DrWhere where;
  DrInitKind init;
  guint64 init_seed;     /* DR_INIT_RANDOM */
  const char *init_path; /* DR_INIT_FILE, resolved relative to the pipeline */
  DrLoc init_loc;        /* DR_INIT_FILE: the `file:` value; file NULL from the C library */
  const char *save_path; /* NULL unless `save:` */
  DrVerifyRule verify;   /* default DR_VERIFY_EXACT (0) */
  double verify_rtol;    /* DR_VERIFY_TOLERANCE: finite, >= 0 */
  double verify_atol;
  DrId alloc_node; /* DR_NONE: lives for the whole run */
  DrId free_node;
  /* `scratch: true`: a whole-run device buffer whose contents mean nothing
   * between its uses (no init, no save): memory.reuse may share its
   * storage with others (scheduler/reuse.c). */
  gboolean scratch;
  /* `param: NAME`: the buffer holds run-time parameter param - 1's value
   * (one i64 or f64), written by dagrun before each run whose value
   * differs; nodes only read it. 0: an ordinary buffer. */
  guint32 param;
} DrBuffer;

static inline guint64 dr_buffer_bytes(const DrBuffer *b) { return b->count * (guint64)dr_elem_size(b->type); }

/* One use of a buffer range by a node, in elements [begin, end). */
typedef struct {
  DrId buffer;
  DrAccessMode mode;
  guint64 begin;
  guint64 end;
  DrLoc loc; /* the slice text or the key that implies the access */
} DrAccess;

/* A declared parameter of a kernel or host function. */
typedef struct {
  const char *name;
  DrElemType type;
  gboolean is_pointer; /* "f32*": a buffer argument */
  DrAccessMode access; /* pointers only */
  gboolean is_string;  /* host functions only (print's message) */
  gboolean optional;   /* may be left out; the kernel has a default */
  gboolean any_type;   /* pointer of any element type (host functions) */
  double def;          /* optional scalars: the value used when left out */
} DrParam;

/* How the default grid is computed: enough blocks of `block` threads to
 * cover the value of parameter `over` (an integer scalar, or the element
 * count of a buffer parameter). over == DR_NONE: one block. */
typedef struct {
  DrId over;
  guint32 block;
} DrGridRule;

typedef enum { DR_KERNEL_BUILTIN, DR_KERNEL_USER } DrKernelOrigin;

/* A kernel as the IR sees it: a name and parameter declarations that drive
 * hazard inference. Built-in kernels are registered by the core library
 * from kernels/registry before parsing; user kernels come from `kernels:`. */
typedef struct {
  const char *name;
  DrLoc loc;
  DrKernelOrigin origin;
  guint32 builtin_index; /* index in the kernel registry, DR_KERNEL_BUILTIN */
  DrParam *params;       /* n_params, owned by the graph */
  guint32 n_params;
  DrGridRule grid;
  /* DR_KERNEL_USER: exactly one of source/ptx/cubin/fatbin is set. */
  const char *source;
  const char *ptx;
  const char *cubin;
  const char *fatbin;
  const char *entry;
  /* DR_KERNEL_USER `source:` kernels: a C++ name expression (`name:`,
   * "reduce<float, 256>") that NVRTC instantiates and lowers
   * (nvrtcAddNameExpression); the kernel is then the lowered name, and
   * entry is NULL. NULL otherwise. Interned. */
  const char *name_expr;
  /* DR_KERNEL_USER `source:` kernels: NVRTC's extra include directories
   * (absolute paths) and macro definitions ("NAME" or "NAME=VALUE"), in
   * file order, n_include_dirs and n_defines of them; interned strings in
   * arrays the graph owns (dr_graph_add_kernel copies them). */
  const char **include_dirs;
  guint32 n_include_dirs;
  const char **defines;
  guint32 n_defines;
  /* Kernels registered through the C API (dr_pipeline_add_kernel): their
   * `const DrKernelDef *` (kernels/registry.h), owned by the caller, with
   * origin DR_KERNEL_BUILTIN; builtin_index is then unused. NULL otherwise.
   * A void pointer so the IR does not depend on kernels/. */
  const void *api_def;
  /* DR_KERNEL_USER `host_twin: {lib, fn}`: the shared library as written
   * (interned; NULL: no twin) and resolved (relative to base_dir when it
   * has a '/', else the bare name for the dynamic loader), the function's
   * symbol, and where both were written. twin: the DrKernelDef the host
   * backend runs (kernel.h's host ABI; its params mirror `params`), made
   * by the library's load (lib/hostlib.c) once the symbol is found and
   * kept alive by the graph (dr_graph_keep); NULL until then. */
  const char *twin_lib, *twin_path, *twin_fn;
  DrLoc twin_lib_loc, twin_fn_loc;
  const DrKernelDef *twin;
  /* Its CUDA launch honours a guard word (DR_KFLAG_GUARD of its
   * DrKernelDef, include/dagrun/kernel.h): set for the built-ins that have
   * the flag (lib/load.c) and for C API kernels whose definition does;
   * what lets graph mode guard a while body's unrolled copies with kernels
   * (ir/loops.h, dr_loop_while_guardable). */
  gboolean guardable;
} DrKernelDecl;

/* X(ENUM_SUFFIX, spelling): the built-in host functions. Their parameters
 * are declared in ir/graph.c (dr_host_fn_params). */
#define DR_HOST_FN_LIST(X) \
  X(PRINT, "print")        \
  X(SLEEP, "sleep")        \
  X(CHECKSUM, "checksum")

typedef enum {
#define DR_X(e, s) DR_HOST_FN_##e,
  DR_HOST_FN_LIST(DR_X)
#undef DR_X
      DR_N_HOST_FNS
} DrHostFn;

const char *dr_host_fn_name(DrHostFn fn);
gboolean dr_host_fn_from_name(const char *name, DrHostFn *out);
/* The parameter declarations of a host function (static storage). */
const DrParam *dr_host_fn_params(DrHostFn fn, guint32 *n_params);

typedef enum { DR_ARG_BUFFER, DR_ARG_INT, DR_ARG_FLOAT, DR_ARG_STRING } DrArgKind;

/* A bound argument of a kernel or host node. */
typedef struct {
  guint32 param; /* index into the kernel's (or host fn's) params */
  DrArgKind kind;
  union {
    DrId access; /* DR_ARG_BUFFER: an access of the same node */
    gint64 i;
    double f;
    const char *s; /* interned */
  } v;
  DrLoc loc;
} DrArg;

typedef struct DrLoop DrLoop; /* ir/loops.h */

/* The node array is the IR's largest (a 5M-node pipeline holds 5M of
 * these), so the small fields share the first word: the enums as 8-bit
 * bit-fields (they keep their enum types, so switches on them are still
 * checked; their address cannot be taken) and two bytes: 120 bytes on
 * x86-64 (136 before). */
typedef struct {
  DrOp op : 8;
  DrPriority priority : 8;
  /* DR_OP_HOST */
  DrHostFn host_fn : 8;
  /* allreduce, reduce, reducescatter (see the collectives below) */
  DrReduceOp reduce : 8;
  /* DR_OP_MEMSET */
  guint8 memset_value;
  /* collectives: the node named one buffer, not a list (below) */
  gboolean per_rank : 8;
  gint32 device; /* -1: the run's device */
  /* Set by the devices pass (scheduler/devices.c): the GPU the node runs
   * on: node.device when given, else the device of its device buffers,
   * else the run's; -1 for a host node and for a collective spanning
   * several devices (each participant runs on its buffers' device). */
  gint32 dev;
  const char *id;    /* interned, unique */
  const char *label; /* NULL unless `label:` */
  DrLoc loc;         /* the node's key in `nodes:` */
  guint32 access_first, access_count;
  guint32 arg_first, arg_count;
  /* DR_OP_KERNEL */
  DrId kernel;
  guint32 grid[3], block[3]; /* 0 in grid[0]/block[0]: use the default */
  guint32 shared;
  /* DR_OP_HOST: C API host nodes: 1 + index in graph->callbacks (host_fn
   * is then unused); 0: the built-in host_fn */
  guint32 callback;
  /* DR_OP_ALLOC / DR_OP_FREE */
  DrId buffer;
  /* A loop or conditional (ir/loops.h): 1 + its index in graph->loops, op
   * DR_OP_NOOP; 0: not a loop. */
  guint32 loop;
  /* Collectives (DR_OP_IS_COLLECTIVE; docs/multi-gpu.md). Participant i's
   * accesses are described at I7. n_parts: the participants written (one
   * per device of run.devices in a single process); per_rank (above): the
   * node named one buffer, not a list: "this rank's copy" (across
   * processes, or a single process driving one device). root and peer are
   * ranks: in a single process, rank r is run.devices[r] (the run's device
   * alone when run.devices is not given). reduce (above): allreduce,
   * reduce, reducescatter. */
  gint32 root; /* broadcast, reduce: -1 elsewhere */
  gint32 peer; /* send, recv: -1 elsewhere */
  guint32 n_parts;
} DrNode;

/* X(ENUM_SUFFIX, spelling) */
#define DR_EDGE_KIND_LIST(X) \
  X(RAW, "raw")              \
  X(WAR, "war")              \
  X(WAW, "waw")              \
  X(AFTER, "after")          \
  X(OUTPUT, "output")

typedef enum {
#define DR_X(e, s) DR_EDGE_##e,
  DR_EDGE_KIND_LIST(DR_X)
#undef DR_X
} DrEdgeKind;

const char *dr_edge_kind_name(DrEdgeKind kind);
gboolean dr_edge_kind_from_name(const char *name, DrEdgeKind *out);

/* A dependency: `to` must start after `from` completes. `buffer` names the
 * buffer of a hazard edge (DR_NONE for AFTER and OUTPUT). OUTPUT edges
 * keep the nodes that write to the terminal (print and checksum host
 * nodes) in file order among themselves: a hazard on an implicit
 * resource, the terminal (scheduler/hazards.c). */
typedef struct {
  DrId from;
  DrId to;
  DrEdgeKind kind;
  DrId buffer;
} DrEdge;

/* An explicit `after:` entry, resolved to node ids by the parser; the
 * hazard pass turns them into AFTER edges. */
typedef struct {
  DrId from; /* the node listed in after: */
  DrId to;   /* the node that has the after: key */
  DrLoc loc; /* the list entry */
} DrAfter;

/* A host node's C function, called on a host worker thread or CUDA's
 * callback thread; it must not call CUDA. Either a plain callback added
 * through the C API (dr_pipeline_add_callback: fn, user_data; no
 * arguments, no accesses), or a host function with declared parameters
 * (include/dagrun/hostfn.h): `call` from dr_pipeline_add_host_fn, or from
 * YAML's `fn: {lib, symbol, params}`, where `lib` (as written, interned),
 * `path` (resolved like a host twin's) and `symbol` name it and the
 * library's load (lib/hostlib.c) sets `call` (NULL until then). params
 * (n_params, owned by the graph) drive argument binding and the node's
 * accesses like a kernel's. */
typedef struct {
  void (*fn)(void *user_data);
  void *user_data;
  DrHostFnFunc call;
  const DrParam *params;
  guint32 n_params;
  const char *lib, *path, *symbol;
  DrLoc lib_loc, symbol_loc;
} DrCallback;

/* `run:` and `memory:`; the CLI overrides fields after parsing. A field's
 * `_set` flag says whether the file (or the command line) gave it. */
typedef struct {
  DrMode mode;
  guint32 iterations; /* default 10 */
  guint32 warmup;     /* default 2 */
  guint32 max_streams;
  gboolean max_streams_set; /* else: the device's queue count */
  gint32 device;            /* default 0; with run.devices: its first */
  /* run.devices: the GPUs this process drives (ranks 0..n-1 of a single-
   * process NCCL communicator, in this order). n_devices 0: the list was
   * not given, the run's devices are run.device alone. */
  gint32 devices[DR_MAX_DEVICES];
  guint32 n_devices;
  /* The processes of the run (MPI ranks), each running this pipeline: 1
   * without MPI. Set before the passes; a collective over one buffer is
   * checked against it. */
  guint32 nranks;
  guint64 release_threshold;
  gboolean release_threshold_set; /* else: keep everything (UINT64_MAX) */
  /* memory.release_threshold given per device ({DEVICE: SIZE}); a device
   * not listed takes release_threshold. */
  struct {
    gint32 device;
    guint64 bytes;
    DrLoc loc;
  } device_thresholds[DR_MAX_DEVICES];
  guint32 n_device_thresholds;
  /* run.fallback: streams: a graph-mode run whose iteration cannot be
   * captured (a node's launch breaks the capture) runs eagerly instead of
   * failing. Default FALSE (none). */
  gboolean fallback_streams;
  /* memory.limit (or --memory-limit=): the most device bytes the plan may
   * need at once (scheduler/budget.c adds ordering edges until the
   * certified bound fits). memory_limit_loc: where the file gave it
   * (DR_LOC_NONE: the command line or the API). */
  guint64 memory_limit;
  gboolean memory_limit_set;
  DrLoc memory_limit_loc;
  /* memory.reuse: auto: scratch buffers share storage when every
   * execution orders their uses (scheduler/reuse.c). Default FALSE. */
  gboolean reuse;
  /* run.device_loop: true: graph mode runs --iterations as one launch of
   * a WHILE node around the iteration (ir/loops.h says when that is
   * legal). Default FALSE. */
  gboolean device_loop;
  DrLoc device_loop_loc;
  /* run.issue_threads (--issue-threads): host threads issuing an eager
   * iteration on CUDA (backends/cuda/threads.h); 0 (the default): chosen
   * from the plan's width. */
  guint32 issue_threads;
  /* run.graph_cache: graph mode keeps up to this many instantiated
   * executables of the iteration, least recently used evicted, for
   * parameter values that force a new capture
   * (backends/cuda/graph_cache.h). Default 0: none kept (every such
   * change updates or replaces the one executable). */
  guint32 graph_cache;
} DrRunConfig;

/* What the memory budget pass (scheduler/budget.c) did under a limit:
 * the certified bound, width and estimated critical path (cost model, µs)
 * before and after the ordering edges it added (kept in
 * DrGraph.memory_edges as AFTER edges, also in DrGraph.edges). */
typedef struct {
  gboolean ran; /* a limit was set and the pass ran */
  guint64 limit;
  guint64 serial_peak_bytes;
  guint64 bound_before_bytes, bound_after_bytes;
  guint32 width_before, width_after; /* equal to each other when no edge was added */
  double path_before_us, path_after_us;
} DrMemoryBudget;

typedef struct {
  const char *name;     /* `name:`, or the file's base name */
  const char *file;     /* the pipeline's path as given, interned */
  const char *base_dir; /* for relative `source:`, `init: {file:}` paths */
  DrRunConfig run;
  GArray *buffers;   /* DrBuffer */
  GArray *nodes;     /* DrNode */
  GArray *accesses;  /* DrAccess */
  GArray *args;      /* DrArg */
  GArray *edges;     /* DrEdge */
  GArray *afters;    /* DrAfter */
  GArray *kernels;   /* DrKernelDecl */
  GArray *callbacks; /* DrCallback, named by DrNode.callback */
  GArray *kept;      /* what the graph keeps alive (dr_graph_keep); NULL until the first */
  GPtrArray *loops;  /* DrLoop *, owned (ir/loops.h); NULL until the first */
  GStringChunk *strings;
  /* Node id -> DrId: open addressing (ir/graph.c, node_slot), a slot per
   * {hash, DrId + 1} (0: empty), a power of two of them at most 3/4 full;
   * the key is the node's own interned id. 8 bytes a slot, a fifth of a
   * GHashTable's per node. */
  struct DrNodeSlot *node_slots;
  guint32 node_slots_mask;  /* slots - 1; 0 before the first node */
  GHashTable *buffer_index; /* name -> DrId+1 */
  GHashTable *kernel_index; /* name -> DrId+1 */
  DrMemoryBudget budget;    /* scheduler/budget.c */
  GArray *memory_edges;     /* DrEdge: the edges it added (NULL: none) */
  /* The MPI rank the graph is built for (of run.nranks) and its rank on
   * its machine: with run.nranks, the expression variables `rank`,
   * `nranks`, `local_rank`, which `rank:` on nodes tests. Set before
   * parsing (lib/load.c, from the job the process joined); a single
   * process: 0 of 1. */
  guint32 rank, local_rank;
  /* `params:` (ir/params.h): DrRunParam in file order, the DrParamUse of
   * every parameter-dependent value, and the loop and rank variables
   * (DrVar-like {interned name, value}: DrParamVar) the uses were
   * expanded with. Empty without `params:`. */
  GArray *params;
  GArray *param_uses;
  GArray *param_vars;
  /* lib/params.c's: whether the nodes hold the values of the parameters'
   * i_applied/f_applied (FALSE after dr__params_widen), and its memo of
   * the uses' values per set of parameter values (NULL until the first;
   * freed with the graph through dr_graph_keep). */
  gboolean params_applied;
  gpointer params_memo;
} DrGraph;

/* A loop or rank variable's value as a parameter use was expanded with. */
typedef struct {
  const char *name; /* interned */
  gint64 value;
} DrParamVar;

/* Returns a new empty graph with default run settings. Free with
 * dr_graph_free (NULL-safe). */
DrGraph *dr_graph_new(void);
void dr_graph_free(DrGraph *graph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrGraph, dr_graph_free)

/* Returns `s` interned in the graph (stable for the graph's life). */
const char *dr_graph_intern(DrGraph *graph, const char *s);

#define dr_graph_n_nodes(g) ((g)->nodes->len)
#define dr_graph_n_buffers(g) ((g)->buffers->len)
#define dr_graph_node(g, i) (&g_array_index((g)->nodes, DrNode, (i)))
#define dr_graph_buffer(g, i) (&g_array_index((g)->buffers, DrBuffer, (i)))
#define dr_graph_access(g, i) (&g_array_index((g)->accesses, DrAccess, (i)))
#define dr_graph_arg(g, i) (&g_array_index((g)->args, DrArg, (i)))
#define dr_graph_edge(g, i) (&g_array_index((g)->edges, DrEdge, (i)))
#define dr_graph_kernel(g, i) (&g_array_index((g)->kernels, DrKernelDecl, (i)))

/* Adds a buffer (name interned; alloc/free set to DR_NONE). Returns its id,
 * or DR_NONE when the name is taken. */
DrId dr_graph_add_buffer(DrGraph *graph, const DrBuffer *buffer);
/* Adds a node at the end of program order (id interned; access/arg ranges
 * start empty at the current ends of those arrays). Returns its id, or
 * DR_NONE when the id is taken. */
DrId dr_graph_add_node(DrGraph *graph, const DrNode *node);
/* Appends an access to the last node added; returns its index. */
guint32 dr_graph_add_access(DrGraph *graph, const DrAccess *access);
/* Appends an argument to the last node added; returns its index. */
guint32 dr_graph_add_arg(DrGraph *graph, const DrArg *arg);
void dr_graph_add_edge(DrGraph *graph, DrId from, DrId to, DrEdgeKind kind, DrId buffer);
void dr_graph_add_after(DrGraph *graph, DrId from, DrId to, DrLoc loc);
/* Adds a kernel declaration, copying params into the graph. Returns its id,
 * or DR_NONE when the name is taken. */
DrId dr_graph_add_kernel(DrGraph *graph, const DrKernelDecl *decl);
/* Adds a host function entry, copying cb->params (names interned) and
 * interning lib, path and symbol. Returns 1 + its index: the value of
 * DrNode.callback that names it. */
guint32 dr_graph_add_callback(DrGraph *graph, const DrCallback *cb);
/* What host node n calls, for reports: a library function's symbol,
 * "host_fn" for one added by dr_pipeline_add_host_fn, "callback" for any
 * other C function (dr_pipeline_add_callback's), else the built-in's
 * name. */
const char *dr_graph_host_fn_label(const DrGraph *graph, const DrNode *n);
/* Keeps `data` alive as long as the graph: free_fn(data) runs when the
 * graph is freed, in the reverse order of the calls (a shared library's
 * handle, what was made from its symbols). */
void dr_graph_keep(DrGraph *graph, gpointer data, GDestroyNotify free_fn);

/* Lookups by name; DR_NONE when absent. */
DrId dr_graph_find_node(const DrGraph *graph, const char *id);
DrId dr_graph_find_buffer(const DrGraph *graph, const char *name);
DrId dr_graph_find_kernel(const DrGraph *graph, const char *name);

/* Sorts edges by (to, from) and removes duplicate (from, to) pairs, keeping
 * the first kind in RAW < WAR < WAW < AFTER order. */
void dr_graph_sort_edges(DrGraph *graph);

/* The run's devices: run.devices, or run.device alone; *n set to their
 * number (>= 1). Ranks of a single-process communicator are indexes into
 * this array. */
const gint32 *dr_graph_devices(const DrGraph *graph, guint32 *n);
/* The rank of `device` among dr_graph_devices, or -1 when it is not one. */
gint32 dr_graph_device_rank(const DrGraph *graph, gint32 device);
/* The GPU buffer `b` lives on: its device, else the run's; -1 for a host
 * buffer. */
gint32 dr_graph_buffer_device(const DrGraph *graph, DrId b);
/* The device whose streams run node v: its resolved device (DrNode.dev),
 * the run's device for host nodes (and for nodes the devices pass has not
 * seen), -1 for a collective over several devices. */
gint32 dr_graph_node_device(const DrGraph *graph, DrId v);
/* Copy node v is a peer copy: src and dst are device buffers on two
 * different devices, or both name their `device:` (a copy from a device
 * to itself then takes the peer path too, so one GPU exercises it);
 * *src_dev and *dst_dev (each may be NULL) are then their devices. FALSE
 * for every other node. */
gboolean dr_graph_copy_is_peer(const DrGraph *graph, DrId v, gint32 *src_dev, gint32 *dst_dev);
/* The first `where: pageable` buffer copy node v reads or writes; DR_NONE
 * when it touches none, or v is not a copy. */
DrId dr_graph_copy_pageable(const DrGraph *graph, DrId v);
/* A copy node's two ends: *src its first read access, *dst its first
 * written one (borrowed from the graph), each NULL when it has none (a
 * node that is not a copy may have neither). */
void dr_graph_copy_ends(const DrGraph *graph, const DrNode *node, const DrAccess **src, const DrAccess **dst);
/* The release threshold of `device`: its memory.release_threshold entry,
 * else the run's; *set: whether either was given. */
guint64 dr_graph_release_threshold(const DrGraph *graph, gint32 device, gboolean *set);

/* TRUE when one participant's src and dst element counts fit op among
 * `nranks` participants (allgather: dst = nranks * src; reducescatter:
 * src = nranks * dst; alltoall: equal, a multiple of nranks; send and
 * recv: anything; the others: equal). Else *want (when given) says what
 * the op needs, in words. Defined in build.c; shared by the builder, the devices pass and the
 * backends' run-time checks across ranks. */
gboolean dr_collective_counts_ok(DrOp op, guint32 nranks, guint64 src_count, guint64 dst_count,
                                 const char **want);
/* Checks the invariants above; on failure sets `error` naming the first one
 * broken and returns FALSE. */
gboolean dr_graph_check(const DrGraph *graph, GError **error);

#ifdef DR_CHECK_INVARIANTS
#define DR_GRAPH_CHECK(g)                                           \
  do {                                                              \
    g_autoptr(GError) dr__check_error = NULL;                       \
    if (!dr_graph_check((g), &dr__check_error))                     \
      g_error("IR invariant broken: %s", dr__check_error->message); \
  } while (0)
#else
#define DR_GRAPH_CHECK(g) ((void)0)
#endif

/* Writes the stable text dump (the golden-test format for --dump-after) to
 * `out`: run settings, buffers, kernels used, nodes with their accesses and
 * arguments, and edges, one item per line, no pointers or addresses. */
void dr_graph_dump(const DrGraph *graph, GString *out);

G_END_DECLS

#endif
