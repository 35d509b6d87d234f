/* build.h: the one builder of IR nodes, buffers and kernel declarations.
 * Both front ends call it: the YAML parser (parser/nodes.c, sections.c)
 * and the C library (lib/nodes.c, lib/pipeline.c). It owns every rule
 * about what a valid node, buffer or kernel call is, and the one wording
 * of each diagnostic; callers bring the values and their locations (from
 * the YAML, or the C caller's synthetic ones).
 *
 * What it is not: it reads no YAML and parses no text. Turning a scalar
 * into an integer, a slice text into a DrBuildSlice, or a DrNamedArg into
 * a DrBuildValue is the caller's job, and so are the messages about that
 * (a YAML value of the wrong shape). Cross-node checks (lifetimes,
 * hazards, cycles) are the passes' (scheduler/passes.h).
 *
 * Names (decisions.md): node ids, buffer, kernel and parameter names are
 * one or more of A-Z a-z 0-9 _ - . ; '/' is reserved for scoped node ids
 * (LOOP/NODE) and so refused in a written id.
 *
 * A node is built as a draft: dr_build_node_begin, then the op's calls
 * (each reports into the DrDiags and returns FALSE on a problem), then
 * dr_build_node_commit, which adds the node with the accesses and
 * arguments that passed. The parser commits even after an error (the file
 * fails anyway, and later `after:` references then find the node); the
 * library commits only when nothing was reported. Buffers alike: the
 * parser adds a buffer whose keys had a problem (so that the nodes naming
 * it do not cascade into "unknown buffer"), the library only a valid one. */
#ifndef DAGRUN_IR_BUILD_H
#define DAGRUN_IR_BUILD_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Parameters of one kernel or host function, at most. */
#define DR_BUILD_MAX_PARAMS 64

/* X(ENUM_SUFFIX, the noun in messages) */
#define DR_NAME_KIND_LIST(X) \
  X(NODE, "node id")         \
  X(BUFFER, "buffer name")   \
  X(KERNEL, "kernel name")   \
  X(PARAM, "parameter name")

typedef enum {
#define DR_X(e, s) DR_NAME_##e,
  DR_NAME_KIND_LIST(DR_X)
#undef DR_X
} DrNameKind;

/* A buffer range as written: [begin, end) in elements; end ==
 * DR_BUILD_SLICE_END: to the buffer's end. `text` is the slice as written
 * for messages, or NULL to spell it from the fields. */
#define DR_BUILD_SLICE_END G_MAXUINT64
typedef struct {
  const char *buffer;
  guint64 begin;
  guint64 end;
  const char *text;
} DrBuildSlice;

typedef enum {
  DR_BUILD_VALUE_SLICE,
  DR_BUILD_VALUE_INT,
  DR_BUILD_VALUE_FLOAT,
  DR_BUILD_VALUE_STRING,
} DrBuildValueKind;

/* One argument value, already typed by the caller. */
typedef struct {
  DrBuildValueKind kind;
  DrBuildSlice slice;
  gint64 i;
  double f;
  const char *s;
} DrBuildValue;

/* The named arguments of a call: names[i] given at locs[i]. `given`:
 * whether an argument list was written at all (YAML: the `args:` key);
 * `at`: where "missing" errors point; `quiet`: a misspelt key of the same
 * node already explains missing ones, so they are not reported. */
typedef struct {
  const char *const *names;
  const DrLoc *locs;
  guint n;
  gboolean given;
  DrLoc at;
  gboolean quiet;
} DrBuildArgs;

typedef struct {
  DrGraph *g;
  DrDiags *diags;
  GString *what;    /* "node 'ID'" (or the caller's context) */
  GString *scratch; /* messages' "argument 'x'" */
  /* the node being built */
  DrNode node;
  guint errors_at_begin;
  DrAccess accesses[DR_BUILD_MAX_PARAMS + 2];
  guint n_accesses;
  DrArg args[DR_BUILD_MAX_PARAMS];
  gint arg_access[DR_BUILD_MAX_PARAMS]; /* index into accesses, or -1 */
  guint n_args;
  /* the callee of a kernel or host node, once named */
  const DrParam *params;
  guint32 n_params;
  GString *callee; /* "kernel 'k'", "host function 'print'" */
  guint arg_unknown;
  DrLoc arg_at;
} DrBuild;

/* Prepares `b` to build into `g`, reporting into `diags` (both borrowed).
 * Release with dr_build_clear. */
void dr_build_init(DrBuild *b, DrGraph *g, DrDiags *diags);
void dr_build_clear(DrBuild *b);

/* Sets the message context to "node 'ID'" and returns it (owned by b). */
const char *dr_build_set_what(DrBuild *b, const char *id);

/* TRUE when `name` follows the naming rule for `kind`; otherwise reports
 * "WHAT: a KIND uses letters, ..." at `loc` (WHAT: "node 'x'", "buffer
 * 'x'", "kernel 'x'", or "OWNER, parameter 'x'" where `owner`, "kernel
 * 'k'" or "host function 'f'", is given) and returns FALSE. */
gboolean dr_build_name_ok(DrBuild *b, DrNameKind kind, const char *name, const char *owner, DrLoc loc);

/* ---- nodes ---- */

/* Starts the draft of node `id` (already name-checked) with op `op` at
 * `loc`. FALSE after reporting "duplicate node id 'ID'" (with " after
 * foreach expansion" when `expanded`) and a note at the first one. */
gboolean dr_build_node_begin(DrBuild *b, const char *id, DrOp op, DrLoc loc, gboolean expanded);
/* Adds the draft with what passed; returns its id. */
DrId dr_build_node_commit(DrBuild *b);
/* Whether anything was reported since dr_build_node_begin. */
gboolean dr_build_node_failed(const DrBuild *b);

/* A kernel node's kernel by name, or an "unknown kernel" report at `loc`. */
gboolean dr_build_kernel_ref(DrBuild *b, const char *name, DrLoc loc);
/* A host node's built-in function by name, or an "unknown host function"
 * report at `loc`. */
gboolean dr_build_host_fn(DrBuild *b, const char *name, DrLoc loc);

/* A host node calling a function with declared parameters (a DrCallback
 * with params: YAML's `fn: {lib, symbol, params}`, or
 * dr_pipeline_add_host_fn): checks the parameters as a kernel's are
 * checked (names, repeats, scalar types; param_locs one per parameter, or
 * NULL: `loc`), adds `cb` to the graph (dr_graph_add_callback) and makes
 * it the callee, "host function 'NAME'", so dr_build_args_match and
 * dr_build_arg bind its arguments and add the accesses its parameters'
 * modes say. FALSE after reporting. */
gboolean dr_build_host_callback(DrBuild *b, const DrCallback *cb, const char *name, const DrLoc *param_locs,
                                DrLoc loc);

/* Binds names to the callee's parameters (dr_build_kernel_ref or
 * dr_build_host_fn first): slot[i] is the index in args of parameter i's
 * value, or -1. Reports unknown and repeated names. Returns FALSE when
 * binding must stop: no argument list was given and some are required. */
gboolean dr_build_args_match(DrBuild *b, const DrBuildArgs *args, gint slot[DR_BUILD_MAX_PARAMS]);
/* Binds parameter `param` to `v` given at `loc`, or (v NULL) to its
 * default, reporting a missing required argument. Checks the value's kind,
 * range, buffer placement and element type; adds the access of a pointer.
 * For the calls after dr_build_args_match, in parameter order. */
gboolean dr_build_arg(DrBuild *b, guint32 param, const DrBuildValue *v, DrLoc loc);

/* Resolves `s` (key: "key 'src'" in messages) into an access at `loc`
 * (mode unset): a known buffer, a non-empty, in-bounds range. */
gboolean dr_build_resolve(DrBuild *b, const char *key, const DrBuildSlice *s, DrLoc loc, DrAccess *out);
/* Adds `a` to the draft with `mode`. */
void dr_build_add_access(DrBuild *b, const DrAccess *a, DrAccessMode mode);
/* A copy node's two resolved accesses: same length in bytes, or a report
 * at dst's location. */
gboolean dr_build_copy(DrBuild *b, const DrAccess *src, const DrAccess *dst);
/* An alloc or free node's buffer, whole and on the device (`name` as
 * written: a slice is refused), reported at `loc`. */
gboolean dr_build_lifetime(DrBuild *b, const char *name, DrLoc loc);

/* ---- collectives (docs/multi-gpu.md) ---- */

/* A reducing collective's `reduce:` by name, or an "unknown reduction"
 * report at `loc`. */
gboolean dr_build_reduce(DrBuild *b, const char *name, DrLoc loc);
/* The n participants of the draft collective: src[i] and dst[i] resolved
 * (dr_build_resolve) for participant i, the same range in both for in
 * place; src NULL for recv, dst NULL for send. per_rank: one buffer was
 * written, not a list ("this rank's copy"). Checks device buffers, one
 * element type and equal sizes across participants, the op's size rule
 * (dr_collective_counts_ok, with nranks = n unless per_rank), partial
 * overlap and in-place use where the op forbids it, reporting at the
 * accesses' locations (`loc`: a wrong participant count); adds the
 * accesses of graph.h's I7 and sets n_parts and per_rank. Devices (one
 * per participant, covering run.devices) are the devices pass's checks
 * (scheduler/devices.c): `run:` may come after `nodes:`. */
gboolean dr_build_collective(DrBuild *b, const DrAccess *src, const DrAccess *dst, guint n, gboolean per_rank,
                             DrLoc loc);
/* `root:` or `peer:` (key: "key 'root'" or "key 'peer'") = rank, after
 * dr_build_collective: >= 0 and below the participant count of a list
 * (a per_rank node's upper bound is checked against nranks later), else
 * a report at `loc`. */
gboolean dr_build_collective_rank(DrBuild *b, const char *key, gint64 rank, DrLoc loc);

/* ---- buffers and kernels ---- */

/* " (did you mean 'X'?)" for an unknown buffer `name`, or ""; newly
 * allocated. */
char *dr_build_buffer_hint(const DrGraph *g, const char *name);

/* TRUE when buffer `name` may hold `count` elements of `type`: 1 to 2^61
 * elements and at most 2^61 bytes (so every byte count and offset of a
 * buffer or slice fits 64 bits with room to add); else a report at `loc`,
 * naming `key` ("count" or "bytes"). */
gboolean dr_build_buffer_count_ok(DrBuild *b, const char *name, DrElemType type, guint64 count,
                                  const char *key, DrLoc loc);
/* TRUE when `v` may be a `verify:` tolerance (`key` "rtol" or "atol" of
 * buffer `name`): finite and >= 0; else a report at `loc`. */
gboolean dr_build_buffer_tolerance_ok(DrBuild *b, const char *name, const char *key, double v, DrLoc loc);
/* Adds `buf` (name-checked) at buf->loc; DR_NONE after "duplicate buffer". */
DrId dr_build_add_buffer(DrBuild *b, const DrBuffer *buf);
/* Reports into `diags` each buffer with `init:`, `save:` or a `verify:`
 * other than the default exact (each needs the buffer for the whole run)
 * that an alloc or free node makes stream-ordered, with a note at that
 * node. Run once every node is known: by the parser after the nodes, by
 * the library's validation for pipelines built by calls. */
void dr_build_check_whole_run_buffers(const DrGraph *g, DrDiags *diags);

/* Checks a kernel declaration's parameters (names, repeats, scalar types,
 * the grid rule's parameter) and adds it. param_locs (one per parameter,
 * or NULL: decl->loc) and over_loc place the reports. Returns its id, or
 * DR_NONE after reporting; a name taken by a built-in kernel has its own
 * message. */
DrId dr_build_add_kernel(DrBuild *b, const DrKernelDecl *decl, const DrLoc *param_locs, DrLoc over_loc);

G_END_DECLS

#endif
