/* nodes.c: one entry of `nodes:` to IR nodes: foreach expansion, the
 * common keys, each op's keys, the accesses each op implies, and `after:`
 * resolution once every id is known.
 *
 * foreach is expanded as an odometer over the variables in key order, the
 * first variable outermost, without materialising ranges; its cost is
 * bounded up front (node count and values walked). `after:` entries that
 * name an existing node resolve at once; forward references and `prefix*`
 * patterns wait for the end, where patterns are matched by binary search
 * over the sorted ids: O(N log N + matches). */
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"
#include "ir/build.h"
#include "ir/suggest.h"

#define M(op) (1u << DR_OP_##op)
#define ALL_OPS 0xffffffffu
#define M_OP(op) (1u << (op))
#define M_COLL                                                                                         \
  (M(ALLREDUCE) | M(BROADCAST) | M(REDUCE) | M(ALLGATHER) | M(REDUCESCATTER) | M(ALLTOALL) | M(SEND) | \
   M(RECV))

/* X(ENUM_SUFFIX, spelling, ops it applies to) */
#define NODE_KEY_LIST(X)                                           \
  X(OP, "op", ALL_OPS)                                             \
  X(FOREACH, "foreach", ALL_OPS)                                   \
  X(AFTER, "after", ALL_OPS)                                       \
  X(PRIORITY, "priority", ALL_OPS)                                 \
  X(DEVICE, "device", ALL_OPS)                                     \
  X(LABEL, "label", ALL_OPS)                                       \
  X(RANK, "rank", ALL_OPS)                                         \
  X(KERNEL, "kernel", M(KERNEL))                                   \
  X(ARGS, "args", M(KERNEL) | M(HOST))                             \
  X(GRID, "grid", M(KERNEL))                                       \
  X(BLOCK, "block", M(KERNEL))                                     \
  X(SHARED, "shared", M(KERNEL))                                   \
  X(SRC, "src", M(COPY) | (M_COLL & ~M(RECV)))                     \
  X(DST, "dst", M(COPY) | M(MEMSET) | (M_COLL & ~M(SEND)))         \
  X(VALUE, "value", M(MEMSET))                                     \
  X(BUFFER, "buffer", M(ALLOC) | M(FREE))                          \
  X(FN, "fn", M(HOST))                                             \
  X(BUFFERS, "buffers", M(ALLREDUCE) | M(BROADCAST) | M(REDUCE))   \
  X(REDUCE, "reduce", M(ALLREDUCE) | M(REDUCE) | M(REDUCESCATTER)) \
  X(ROOT, "root", M(BROADCAST) | M(REDUCE))                        \
  X(PEER, "peer", M(SEND) | M(RECV))

enum {
#define X(e, s, ops) K_##e,
  NODE_KEY_LIST(X)
#undef X
      K_N_KEYS
};

static const struct {
  const char *name;
  guint32 ops;
} node_keys[] = {
#define X(e, s, ops) {s, ops},
    NODE_KEY_LIST(X)
#undef X
};

#define MAX_FOREACH_VARS 8

typedef struct {
  const char *name;
  const DrYNode *list; /* NULL: the range start .. start+count-1 */
  gint64 start;
  guint64 count;
} LoopVar;

/* ---- helpers ----------------------------------------------------------- */

#define WHAT(p) ((p)->build.what->str)

/* "missing key", unless a misspelt key of the same node explains it. */
static void node_missing(DrParse *p, const DrYNode *key, const char *name) {
  if (p->node_typos == 0) dr__parse_missing(p, DR_LOC(p, key), WHAT(p), name);
}

static void node_error(DrParse *p, const DrYNode *at, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static void node_error(DrParse *p, const DrYNode *at, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (key != NULL)
    dr_diags_error(p->diags, DR_LOC(p, at), "%s, %s: %s", WHAT(p), key, msg);
  else
    dr_diags_error(p->diags, DR_LOC(p, at), "%s: %s", WHAT(p), msg);
}

/* A buffer name or slice as written, after substitution; owns its text. */
typedef struct {
  DrBuildSlice s;
  char *text;
  char *name;
} Slice;

static void slice_clear(Slice *sl) {
  g_free(sl->text);
  g_free(sl->name);
}

/* Parses a buffer name or slice value (`key` is "key 'src'" or "argument
 * 'x'" for messages); the builder checks it against the buffer. */
static gboolean parse_slice(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env, Slice *out) {
  memset(out, 0, sizeof *out);
  if (v->kind != DR_Y_SCALAR || dr__ynode_is_null(v)) {
    node_error(p, v, key, "expected a buffer name or slice like x[0:16], got %s", dr__ynode_kind_name(v));
    return FALSE;
  }
  if (v->plain && (g_ascii_isdigit(v->u.text[0]) || v->u.text[0] == '-' || v->u.text[0] == '.')) {
    node_error(p, v, key, "expected a buffer name or slice like x[0:16], got the number %s", v->u.text);
    return FALSE;
  }
  g_autofree char *msg = NULL;
  p->param_hits = 0;
  out->text =
      dr__expr_has_braces(v->u.text) ? dr__expr_substitute(v->u.text, env, &msg) : g_strdup(v->u.text);
  if (out->text == NULL) {
    p->param_hits = 0;
    node_error(p, v, key, "%s", msg);
    return FALSE;
  }
  DrSlice sl;
  if (!dr__slice_parse(out->text, env, &sl, &msg)) {
    p->param_hits = 0;
    node_error(p, v, key, "%s", msg);
    return FALSE;
  }
  /* Named only when a parameter was read (dr__params_note uses it then):
   * no printf per slice of every node. */
  g_autofree char *where = p->param_hits != 0 ? g_strdup_printf("%s, %s", WHAT(p), key) : NULL;
  if (!dr__params_note(p, v, env, where, NULL)) {
    g_free(sl.name);
    return FALSE;
  }
  out->name = sl.name;
  if ((sl.has_begin && sl.begin < 0) || (sl.has_end && sl.end < 0)) {
    node_error(p, v, key, "slice '%s' has a negative bound", out->text);
    return FALSE;
  }
  out->s = (DrBuildSlice){.buffer = sl.name,
                          .begin = sl.has_begin ? (guint64)sl.begin : 0,
                          .end = sl.has_end ? (guint64)sl.end : DR_BUILD_SLICE_END,
                          .text = out->text};
  return TRUE;
}

/* A slice value resolved by the builder into an access (mode unset). */
static gboolean slice_access(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env, DrAccess *out) {
  Slice sl;
  gboolean ok =
      parse_slice(p, key, v, env, &sl) && dr_build_resolve(&p->build, key, &sl.s, DR_LOC(p, v), out);
  slice_clear(&sl);
  return ok;
}

/* grid: / block: an integer or a list [x, y, z] of 1..3 positive integers. */
static gboolean parse_dim3(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env, guint32 out[3]) {
  out[0] = out[1] = out[2] = 1;
  gint64 x;
  if (v->kind == DR_Y_SCALAR) {
    if (!dr__parse_int(p, WHAT(p), key, v, env, 1, G_MAXINT32, &x)) return FALSE;
    out[0] = (guint32)x;
    return TRUE;
  }
  if (v->kind != DR_Y_SEQ || v->len < 1 || v->len > 3) {
    dr__parse_wrong_type(p, WHAT(p), key, v, "an integer or a list [x, y, z]");
    return FALSE;
  }
  for (guint i = 0; i < v->len; i++) {
    if (!dr__parse_int(p, WHAT(p), key, v->u.items[i], env, 1, G_MAXINT32, &x)) return FALSE;
    out[i] = (guint32)x;
  }
  return TRUE;
}

/* ---- arguments (kernels and host functions) ---------------------------- */

/* Converts the YAML value of parameter `param` to the type it declares and
 * hands it to the builder, which checks it. */
static void bind_value(DrParse *p, guint32 i, const DrYNode *v, const DrEnv *env) {
  DrBuild *b = &p->build;
  const DrParam *param = &b->params[i];
  g_string_assign(p->arg_key, "argument '");
  g_string_append(p->arg_key, param->name);
  g_string_append_c(p->arg_key, '\'');
  g_string_assign(p->arg_what, WHAT(p));
  g_string_append(p->arg_what, ", ");
  g_string_append(p->arg_what, p->arg_key->str);
  const char *awhat = p->arg_what->str;
  DrBuildValue val = {0};
  g_autofree char *str = NULL;
  if (param->is_pointer) {
    Slice sl;
    if (parse_slice(p, p->arg_key->str, v, env, &sl)) {
      val = (DrBuildValue){.kind = DR_BUILD_VALUE_SLICE, .slice = sl.s};
      dr_build_arg(b, i, &val, DR_LOC(p, v));
    }
    slice_clear(&sl);
    return;
  }
  if (param->is_string) {
    if (!dr__parse_string(p, awhat, NULL, v, env, &str)) return;
    val = (DrBuildValue){.kind = DR_BUILD_VALUE_STRING, .s = str};
  } else if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
    if (!dr__parse_int(p, awhat, NULL, v, env, G_MININT64, G_MAXINT64, &val.i)) return;
    val.kind = DR_BUILD_VALUE_INT;
  } else {
    if (!dr__parse_float(p, awhat, NULL, v, env, &val.f)) return;
    val.kind = DR_BUILD_VALUE_FLOAT;
  }
  dr_build_arg(b, i, &val, DR_LOC(p, v));
}

/* Binds `args` to the declared params of the node's kernel or host
 * function, in declaration order. */
static void bind_args(DrParse *p, const DrYNode *node_key, const DrYNode *args, const DrEnv *env) {
  gboolean is_map = args != NULL && args->kind == DR_Y_MAP;
  if (args != NULL && !dr__ynode_is_null(args) && !is_map) {
    dr__parse_wrong_type(p, WHAT(p), "args", args, "a mapping of parameter names to values");
    return;
  }
  guint n = is_map ? args->len : 0;
  g_autofree const char **names = g_new0(const char *, MAX(n, 1));
  g_autofree DrLoc *locs = g_new0(DrLoc, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    names[i] = dr_ynode_key(args, i)->u.text;
    locs[i] = DR_LOC(p, dr_ynode_key(args, i));
  }
  DrBuildArgs list = {.names = names,
                      .locs = locs,
                      .n = n,
                      .given = args != NULL,
                      .at = DR_LOC(p, args ? args : node_key),
                      .quiet = p->node_typos > 0};
  gint slot[DR_BUILD_MAX_PARAMS];
  if (!dr_build_args_match(&p->build, &list, slot)) return;
  for (guint32 i = 0; i < p->build.n_params; i++) {
    if (slot[i] < 0)
      dr_build_arg(&p->build, i, NULL, DR_LOC(p, node_key));
    else
      bind_value(p, i, dr_ynode_value(args, (guint)slot[i]), env);
  }
}

/* ---- ops --------------------------------------------------------------- */

static void convert_kernel(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_KERNEL] == NULL) {
    node_missing(p, key, "kernel");
    return;
  }
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "kernel", s[K_KERNEL], env, &name)) return;
  if (!dr_build_kernel_ref(&p->build, name, DR_LOC(p, s[K_KERNEL]))) return;
  DrNode *n = &p->build.node;
  if (s[K_GRID] != NULL) parse_dim3(p, "grid", s[K_GRID], env, n->grid);
  if (s[K_BLOCK] != NULL) parse_dim3(p, "block", s[K_BLOCK], env, n->block);
  guint64 shared;
  if (s[K_SHARED] != NULL && dr__parse_size(p, WHAT(p), "shared", s[K_SHARED], env, DR_SIZE_BYTES, &shared)) {
    if (shared > G_MAXUINT32)
      node_error(p, s[K_SHARED], "key 'shared'", "too large");
    else
      n->shared = (guint32)shared;
  }
  bind_args(p, key, s[K_ARGS], env);
}

static void convert_copy(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_SRC] == NULL || s[K_DST] == NULL) {
    node_missing(p, key, s[K_SRC] == NULL ? "src" : "dst");
    return;
  }
  DrAccess src, dst;
  gboolean ok_src = slice_access(p, "key 'src'", s[K_SRC], env, &src);
  gboolean ok_dst = slice_access(p, "key 'dst'", s[K_DST], env, &dst);
  if (ok_src && ok_dst) dr_build_copy(&p->build, &src, &dst);
}

static void convert_memset(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_DST] == NULL || s[K_VALUE] == NULL) {
    node_missing(p, key, s[K_DST] == NULL ? "dst" : "value");
    return;
  }
  gint64 value;
  p->param_ctx = DR_PARAM_CTX_MEMSET_VALUE;
  if (dr__parse_int(p, WHAT(p), "value", s[K_VALUE], env, 0, 255, &value))
    p->build.node.memset_value = (guint8)value;
  p->param_ctx = DR_PARAM_CTX_NONE;
  DrAccess dst;
  if (slice_access(p, "key 'dst'", s[K_DST], env, &dst))
    dr_build_add_access(&p->build, &dst, DR_ACCESS_WRITE);
}

static void convert_lifetime(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_BUFFER] == NULL) {
    node_missing(p, key, "buffer");
    return;
  }
  g_autofree char *name = NULL;
  if (dr__parse_string(p, WHAT(p), "buffer", s[K_BUFFER], env, &name))
    dr_build_lifetime(&p->build, name, DR_LOC(p, s[K_BUFFER]));
}

/* `fn: {lib: PATH, symbol: NAME, params: [...]}`: a C function from a
 * shared library with declared parameters (include/dagrun/hostfn.h). The
 * library is opened and the symbol looked up by the library's load
 * (lib/hostlib.c), not here: the parser touches no file but the YAML. */
static void convert_host_lib(DrParse *p, const DrYNode *key, const DrYNode *fn, const DrYNode *args,
                             const DrEnv *env) {
  static const char *const fn_keys[] = {"lib", "symbol", "params"};
  const DrYNode *f[3];
  g_autofree char *what = g_strdup_printf("%s, fn", WHAT(p));
  guint typos = dr__parse_map_slots(p, what, fn, fn_keys, 3, f);
  if (f[0] == NULL || f[1] == NULL) {
    if (typos == 0) dr__parse_missing(p, DR_LOC(p, fn), what, f[0] == NULL ? "lib" : "symbol");
    return;
  }
  g_autofree char *lib = NULL, *symbol = NULL;
  if (!dr__parse_string(p, what, "lib", f[0], env, &lib) ||
      !dr__parse_string(p, what, "symbol", f[1], env, &symbol))
    return;
  if (lib[0] == '\0' || symbol[0] == '\0') {
    dr__parse_error_at(p, lib[0] == '\0' ? f[0] : f[1], what, lib[0] == '\0' ? "lib" : "symbol", "is empty");
    return;
  }
  DrParam params[DR_BUILD_MAX_PARAMS];
  DrLoc locs[DR_BUILD_MAX_PARAMS];
  guint32 n_params = 0;
  if (f[2] != NULL && !dr__ynode_is_null(f[2])) {
    if (f[2]->kind != DR_Y_SEQ) {
      dr__parse_wrong_type(p, what, "params", f[2], "a list of parameters");
      return;
    }
    if (f[2]->len > DR_BUILD_MAX_PARAMS) {
      dr__parse_error_at(p, f[2], what, "params", "more than 64 parameters");
      return;
    }
    gboolean ok = TRUE;
    for (guint i = 0; i < f[2]->len; i++) {
      if (!dr__parse_param(p, what, f[2]->u.items[i], &params[n_params])) {
        ok = FALSE;
        continue;
      }
      locs[n_params++] = DR_LOC(p, f[2]->u.items[i]);
    }
    if (!ok) return;
  }
  DrCallback cb = {.params = params,
                   .n_params = n_params,
                   .lib = lib,
                   .path = dr__parse_lib_path(p, lib),
                   .symbol = symbol,
                   .lib_loc = DR_LOC(p, f[0]),
                   .symbol_loc = DR_LOC(p, f[1])};
  if (dr_build_host_callback(&p->build, &cb, symbol, locs, DR_LOC(p, fn))) bind_args(p, key, args, env);
}

static void convert_host(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_FN] == NULL) {
    node_missing(p, key, "fn");
    return;
  }
  if (s[K_FN]->kind == DR_Y_MAP) {
    convert_host_lib(p, key, s[K_FN], s[K_ARGS], env);
    return;
  }
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "fn", s[K_FN], env, &name)) return;
  if (dr_build_host_fn(&p->build, name, DR_LOC(p, s[K_FN]))) bind_args(p, key, s[K_ARGS], env);
}

/* A collective's participant list (`src:`, `dst:` or `buffers:`): a list
 * of buffer slices, one per device, or one slice (*per_rank: this rank's
 * copy). Resolved into out[]; returns the count, 0 after reporting. */
static guint participants(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env,
                          DrAccess out[DR_MAX_DEVICES], gboolean *per_rank) {
  *per_rank = v->kind != DR_Y_SEQ;
  if (*per_rank) return slice_access(p, key, v, env, &out[0]) ? 1 : 0;
  if (v->len == 0 || v->len > DR_MAX_DEVICES) {
    node_error(p, v, key, "expected a list of 1 to %d buffers (one per device), got %u", DR_MAX_DEVICES,
               v->len);
    return 0;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < v->len; i++) ok = slice_access(p, key, v->u.items[i], env, &out[i]) && ok;
  return ok ? v->len : 0;
}

static void convert_collective(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  DrBuild *b = &p->build;
  DrOp op = b->node.op;
  if (s[K_REDUCE] != NULL) {
    g_autofree char *r = NULL;
    if (dr__parse_string(p, WHAT(p), "reduce", s[K_REDUCE], env, &r))
      dr_build_reduce(b, r, DR_LOC(p, s[K_REDUCE]));
  }
  const DrYNode *src_v = s[K_SRC], *dst_v = s[K_DST];
  if (s[K_BUFFERS] != NULL) {
    if (src_v != NULL || dst_v != NULL) {
      node_error(p, s[K_BUFFERS], "key 'buffers'", "give either 'buffers' (in place) or 'src' and 'dst'");
      return;
    }
    src_v = dst_v = s[K_BUFFERS];
  }
  gboolean need_src = op != DR_OP_RECV, need_dst = op != DR_OP_SEND;
  if ((need_src && src_v == NULL) || (need_dst && dst_v == NULL)) {
    const char *miss = need_src && src_v == NULL ? "src" : "dst";
    if (op == DR_OP_ALLREDUCE || op == DR_OP_BROADCAST || op == DR_OP_REDUCE)
      miss = src_v == NULL && dst_v == NULL ? "buffers' (or 'src' and 'dst" : miss;
    node_missing(p, key, miss);
    return;
  }
  DrAccess src[DR_MAX_DEVICES], dst[DR_MAX_DEVICES];
  gboolean src_rank = FALSE, dst_rank = FALSE;
  guint ns = need_src ? participants(p, "key 'src'", src_v, env, src, &src_rank) : 0;
  guint nd = need_dst
                 ? participants(p, s[K_BUFFERS] ? "key 'buffers'" : "key 'dst'", dst_v, env, dst, &dst_rank)
                 : 0;
  if ((need_src && ns == 0) || (need_dst && nd == 0)) return;
  if (need_src && need_dst && (ns != nd || src_rank != dst_rank)) {
    if (src_rank != dst_rank)
      node_error(p, dst_v, "key 'dst'",
                 "src and dst must both be lists (one buffer per device) or both one buffer");
    else
      node_error(p, dst_v, "key 'dst'", "src names %u participants, dst %u", ns, nd);
    return;
  }
  guint n = need_src ? ns : nd;
  if (!dr_build_collective(b, need_src ? src : NULL, need_dst ? dst : NULL, n, need_src ? src_rank : dst_rank,
                           DR_LOC(p, need_src ? src_v : dst_v)))
    return;
  gint64 rank;
  if (op == DR_OP_BROADCAST || op == DR_OP_REDUCE) {
    rank = 0;
    if (s[K_ROOT] == NULL || dr__parse_int(p, WHAT(p), "root", s[K_ROOT], env, G_MININT32, G_MAXINT32, &rank))
      dr_build_collective_rank(b, "key 'root'", rank, DR_LOC(p, s[K_ROOT] ? s[K_ROOT] : key));
  }
  if (op == DR_OP_SEND || op == DR_OP_RECV) {
    if (s[K_PEER] == NULL)
      node_missing(p, key, "peer");
    else if (dr__parse_int(p, WHAT(p), "peer", s[K_PEER], env, G_MININT32, G_MAXINT32, &rank))
      dr_build_collective_rank(b, "key 'peer'", rank, DR_LOC(p, s[K_PEER]));
  }
}

/* ---- after: ------------------------------------------------------------ */

static void after_entry(DrParse *p, DrId to, const DrYNode *v, const DrEnv *env) {
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "after", v, env, &name)) return;
  if (p->scope != NULL) {
    /* Inside a body, after: names the body's nodes by their short ids. */
    char *scoped = g_strconcat(p->scope, name, NULL);
    g_free(name);
    name = scoped;
  }
  gsize len = strlen(name);
  gboolean prefix = len > 0 && name[len - 1] == '*';
  DrLoc loc = DR_LOC(p, v);
  if ((guint64)p->g->afters->len + p->afters->len >= DR_PARSE_MAX_AFTERS) {
    node_error(p, v, "key 'after'", "more than %" G_GUINT64_FORMAT " after: dependencies",
               DR_PARSE_MAX_AFTERS);
    return;
  }
  if (!prefix) {
    DrId from = dr_graph_find_node(p->g, name);
    if (from == to) {
      node_error(p, v, "key 'after'", "a node cannot come after itself");
      return;
    }
    if (from != DR_NONE) {
      dr_graph_add_after(p->g, from, to, loc);
      return;
    }
  }
  DrPendingAfter pa = {to, g_string_chunk_insert(p->g->strings, name), loc};
  g_array_append_val(p->afters, pa);
}

void dr__parse_after(DrParse *p, DrId to, const DrYNode *v, const DrEnv *env) {
  if (v->kind == DR_Y_SEQ) {
    for (guint i = 0; i < v->len; i++) after_entry(p, to, v->u.items[i], env);
  } else if (v->kind == DR_Y_SCALAR) {
    after_entry(p, to, v, env);
  } else {
    dr__parse_wrong_type(p, WHAT(p), "after", v, "a list of node ids");
  }
}

static int cmp_ids(const void *a, const void *b, void *graph) {
  DrGraph *g = graph;
  return strcmp(dr_graph_node(g, *(const DrId *)a)->id, dr_graph_node(g, *(const DrId *)b)->id);
}

/* Whether a node of another rank has an id starting with name[0..len). */
static gboolean other_rank_prefix(DrParse *p, const char *name, gsize len) {
  GHashTableIter it;
  gpointer id;
  g_hash_table_iter_init(&it, p->other_rank_ids);
  while (g_hash_table_iter_next(&it, &id, NULL))
    if (strncmp(id, name, len) == 0) return TRUE;
  return FALSE;
}

void dr__parse_resolve_afters(DrParse *p) {
  DrGraph *g = p->g;
  g_autofree DrId *sorted = NULL;
  guint64 total = g->afters->len;
  for (guint i = 0; i < p->afters->len; i++) {
    const DrPendingAfter *pa = &g_array_index(p->afters, DrPendingAfter, i);
    const DrNode *to = dr_graph_node(g, pa->to);
    dr_build_set_what(&p->build, to->id);
    gsize len = strlen(pa->name);
    if (len == 0 || pa->name[len - 1] != '*') {
      DrId from = dr_graph_find_node(g, pa->name);
      if (from == pa->to) {
        dr_diags_error(p->diags, pa->loc, "%s, key 'after': a node cannot come after itself", WHAT(p));
      } else if (from == DR_NONE && g_hash_table_contains(p->other_rank_ids, pa->name)) {
        /* A node of another rank: ranks order through collectives. */
      } else if (from == DR_NONE) {
        /* Past the limit the error is only counted: skip the O(nodes) hint.
         * The node itself is no suggestion for its own after:. */
        DrSuggest s;
        dr__suggest_init(&s, pa->name);
        for (DrId n = 0; n < dr_graph_n_nodes(g) && !dr_diags_full(p->diags); n++)
          if (n != pa->to) dr__suggest_add(&s, dr_graph_node(g, n)->id);
        g_autofree char *hint = dr__suggest_hint(&s);
        dr_diags_error(p->diags, pa->loc, "%s, key 'after': unknown node '%s'%s", WHAT(p), pa->name, hint);
      } else {
        dr_graph_add_after(g, from, pa->to, pa->loc);
        total++;
      }
      continue;
    }
    if (sorted == NULL) {
      sorted = g_new(DrId, MAX(dr_graph_n_nodes(g), 1));
      for (DrId n = 0; n < dr_graph_n_nodes(g); n++) sorted[n] = n;
      g_qsort_with_data(sorted, (gint)dr_graph_n_nodes(g), sizeof(DrId), cmp_ids, g);
    }
    gsize plen = len - 1;
    guint lo = 0, hi = dr_graph_n_nodes(g);
    while (lo < hi) {
      guint mid = lo + (hi - lo) / 2;
      if (strncmp(dr_graph_node(g, sorted[mid])->id, pa->name, plen) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    guint matched = 0;
    for (guint k = lo; k < dr_graph_n_nodes(g); k++) {
      DrId from = sorted[k];
      if (strncmp(dr_graph_node(g, from)->id, pa->name, plen) != 0) break;
      if (from == pa->to) continue;
      if (++total > DR_PARSE_MAX_AFTERS) {
        dr_diags_error(p->diags, pa->loc,
                       "%s, key 'after': more than %" G_GUINT64_FORMAT " after: dependencies", WHAT(p),
                       DR_PARSE_MAX_AFTERS);
        return;
      }
      dr_graph_add_after(g, from, pa->to, pa->loc);
      matched++;
    }
    if (matched == 0 && !other_rank_prefix(p, pa->name, plen))
      dr_diags_error(p->diags, pa->loc, "%s, key 'after': '%s' matches no other node", WHAT(p), pa->name);
  }
}

/* ---- one node ---------------------------------------------------------- */

/* The node's id after substitution, checked against the naming rule, or
 * NULL after reporting. */
static char *node_id(DrParse *p, const DrYNode *key, const DrEnv *env) {
  char *id;
  if (dr__expr_has_braces(key->u.text)) {
    g_autofree char *msg = NULL;
    id = dr__expr_substitute(key->u.text, env, &msg);
    if (id == NULL) {
      dr_diags_error(p->diags, DR_LOC(p, key), "node '%s': %s", key->u.text, msg);
      return NULL;
    }
  } else {
    id = g_strdup(key->u.text);
  }
  dr_build_set_what(&p->build, id);
  if (!dr_build_name_ok(&p->build, DR_NAME_NODE, id, NULL, DR_LOC(p, key))) {
    g_free(id);
    return NULL;
  }
  if (p->scope == NULL) return id;
  /* Inside a body: the scoped id, LOOP/NODE (decisions.md, "Names"). */
  char *scoped = g_strconcat(p->scope, id, NULL);
  g_free(id);
  dr_build_set_what(&p->build, scoped);
  return scoped;
}

/* Reports an unknown node key with a hint among the keys of `op` (every
 * op's keys when op is DR_N_OPS). */
static void unknown_node_key(DrParse *p, const DrYNode *k, guint op) {
  DrSuggest sg;
  dr__suggest_init(&sg, k->u.text);
  for (guint j = 0; j < K_N_KEYS; j++)
    if (op == DR_N_OPS || (node_keys[j].ops & M_OP(op))) dr__suggest_add(&sg, node_keys[j].name);
  g_autofree char *hint = dr__suggest_hint(&sg);
  dr_diags_error(p->diags, DR_LOC(p, k), "%s: unknown key '%s'%s", WHAT(p), k->u.text, hint);
}

static guint node_key_index(const char *name) {
  guint j = 0;
  while (j < K_N_KEYS && strcmp(node_keys[j].name, name) != 0) j++;
  return j;
}

/* The node's op, or FALSE after reporting (a missing op, or only the
 * typos that explain its absence). */
static gboolean node_op(DrParse *p, const DrYNode *key, const DrYNode *map, const DrEnv *env, DrOp *op) {
  const DrYNode *op_v = NULL;
  for (guint i = 0; i < map->len && op_v == NULL; i++)
    if (strcmp(dr_ynode_key(map, i)->u.text, "op") == 0) op_v = dr_ynode_value(map, i);
  if (op_v == NULL) {
    guint unknown = 0;
    for (guint i = 0; i < map->len; i++) {
      const DrYNode *k = dr_ynode_key(map, i);
      if (node_key_index(k->u.text) < K_N_KEYS) continue;
      unknown_node_key(p, k, DR_N_OPS);
      unknown++;
    }
    if (unknown == 0) dr__parse_missing(p, DR_LOC(p, key), WHAT(p), "op");
    return FALSE;
  }
  g_autofree char *op_name = NULL;
  if (!dr__parse_string(p, WHAT(p), "op", op_v, env, &op_name)) return FALSE;
  if (dr_op_from_name(op_name, op)) return TRUE;
  DrSuggest sg;
  dr__suggest_init(&sg, op_name);
  for (guint i = 0; i < DR_N_OPS; i++) dr__suggest_add(&sg, dr_op_name((DrOp)i));
  g_autofree char *hint = dr__suggest_hint(&sg);
  dr_diags_error(
      p->diags, DR_LOC(p, op_v), "%s, key 'op': unknown op '%s'%s", WHAT(p), op_name,
      dr__suggest_best(&sg)
          ? hint
          : " (expected kernel, copy, memset, alloc, free, host, noop or a collective: allreduce, broadcast, "
            "reduce, allgather, reducescatter, alltoall, send, recv)");
  return FALSE;
}

/* Sorts the node's keys into s[] by key, reporting keys that do not apply
 * to `op` and unknown ones (counted in p->node_typos). */
static void node_slots(DrParse *p, const DrYNode *map, DrOp op, const DrYNode **s) {
  p->node_typos = 0;
  for (guint i = 0; i < map->len; i++) {
    const DrYNode *k = dr_ynode_key(map, i);
    guint j = node_key_index(k->u.text);
    if (j < K_N_KEYS && (node_keys[j].ops & M_OP(op))) {
      s[j] = dr_ynode_value(map, i);
    } else if (j < K_N_KEYS) {
      dr_diags_error(p->diags, DR_LOC(p, k), "%s: key '%s' does not apply to op '%s'", WHAT(p), k->u.text,
                     dr_op_name(op));
    } else {
      unknown_node_key(p, k, op);
      p->node_typos++;
    }
  }
}

/* priority:, device:, label: into n (label: newly allocated in *label). */
static void node_common(DrParse *p, const DrYNode **s, const DrEnv *env, DrNode *n, char **label) {
  if (s[K_PRIORITY] != NULL) {
    g_autofree char *pr = NULL;
    DrPriority priority = n->priority; /* a bit-field has no address */
    if (dr__parse_string(p, WHAT(p), "priority", s[K_PRIORITY], env, &pr) &&
        !dr_priority_from_name(pr, &priority))
      dr_diags_error(p->diags, DR_LOC(p, s[K_PRIORITY]),
                     "%s, key 'priority': expected low, normal or high, got '%s'", WHAT(p), pr);
    n->priority = priority;
  }
  gint64 device;
  if (s[K_DEVICE] != NULL && dr__parse_int(p, WHAT(p), "device", s[K_DEVICE], env, 0, 1023, &device))
    n->device = (gint32)device;
  if (s[K_LABEL] != NULL && dr__parse_string(p, WHAT(p), "label", s[K_LABEL], env, label)) n->label = *label;
}

/* ---- rank: ------------------------------------------------------------- */

/* One `rank:` item: an integer expression (braces optional) or a range
 * A..B of them; *hit when this rank is in it. FALSE after reporting. */
static gboolean rank_item(DrParse *p, const DrYNode *v, const DrEnv *env, gboolean *hit) {
  if (v->kind != DR_Y_SCALAR || dr__ynode_is_null(v)) {
    dr__parse_wrong_type(p, WHAT(p), "rank", v, "a rank, a range A..B or a list of them");
    return FALSE;
  }
  g_autofree char *msg = NULL;
  g_autofree char *text =
      dr__expr_has_braces(v->u.text) ? dr__expr_substitute(v->u.text, env, &msg) : g_strdup(v->u.text);
  const char *dots = text ? strstr(text, "..") : NULL;
  gint64 a = 0, b = 0;
  gboolean ok = text != NULL && (dots ? dr__expr_eval(text, (gsize)(dots - text), env, &a, &msg) &&
                                            dr__expr_eval(dots + 2, strlen(dots + 2), env, &b, &msg)
                                      : dr__expr_eval(text, strlen(text), env, &a, &msg));
  if (!ok) {
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key 'rank': %s", WHAT(p), msg);
    return FALSE;
  }
  if (!dots) b = a;
  gint64 r = p->g->rank;
  *hit |= a <= r && r <= b;
  return TRUE;
}

/* Whether the node with `rank:` value v runs on this rank (a rank outside
 * 0..nranks-1 names no process: the node runs nowhere). *ok: FALSE after
 * reporting. */
static gboolean rank_selected(DrParse *p, const DrYNode *v, const DrEnv *env, gboolean *ok) {
  gboolean hit = FALSE;
  *ok = TRUE;
  if (v->kind == DR_Y_SEQ) {
    if (v->len == 0) {
      dr__parse_error_at(p, v, WHAT(p), "rank", "an empty list names no rank");
      *ok = FALSE;
    }
    for (guint i = 0; i < v->len && *ok; i++) *ok = rank_item(p, v->u.items[i], env, &hit);
  } else {
    *ok = rank_item(p, v, env, &hit);
  }
  return hit && *ok;
}

static void convert_node(DrParse *p, const DrYNode *key, const DrYNode *map, const DrEnv *env) {
  /* Notes left from before (a loop's own keys, read before its body) had
   * no node to patch. */
  dr__params_loop_notes(p);
  p->param_hits = 0;
  p->param_errors_at = dr_diags_n_errors(p->diags);
  g_autofree char *id = node_id(p, key, env);
  if (id == NULL) return;
  if (p->param_hits != 0) {
    p->param_hits = 0;
    dr_diags_error(p->diags, DR_LOC(p, key), "node '%s': a node id cannot use a parameter", id);
    return;
  }
  if (dr__parse_is_loop(map)) {
    dr__parse_loop(p, key, map, env, id);
    if (p->param_hits != 0 && p->param_notes->len == 0)
      dr_diags_error(p->diags, DR_LOC(p, key),
                     "node '%s': a loop's keys other than repeat: cannot use parameters yet", id);
    dr__params_loop_notes(p);
    p->param_hits = 0;
    return;
  }
  /* op first: it decides which other keys apply. */
  DrOp op;
  if (!node_op(p, key, map, env, &op)) return;
  const DrYNode *s[K_N_KEYS] = {NULL};
  node_slots(p, map, op, s);
  if (s[K_RANK] != NULL) {
    gboolean ok;
    if (!rank_selected(p, s[K_RANK], env, &ok)) {
      /* Another rank's node: this rank plans without it. */
      if (ok) g_hash_table_add(p->other_rank_ids, (gpointer)dr_graph_intern(p->g, id));
      return;
    }
  }
  DrNode common = {.priority = DR_PRIORITY_NORMAL, .device = -1};
  g_autofree char *label = NULL;
  node_common(p, s, env, &common, &label);
  DrBuild *b = &p->build;
  if (!dr_build_node_begin(b, id, op, DR_LOC(p, key), env != &p->rank_env)) return;
  b->node.priority = common.priority;
  b->node.device = common.device;
  b->node.label = common.label;
  switch (op) {
    case DR_OP_KERNEL:
      convert_kernel(p, key, s, env);
      break;
    case DR_OP_COPY:
      convert_copy(p, key, s, env);
      break;
    case DR_OP_MEMSET:
      convert_memset(p, key, s, env);
      break;
    case DR_OP_ALLOC:
    case DR_OP_FREE:
      convert_lifetime(p, key, s, env);
      break;
    case DR_OP_HOST:
      convert_host(p, key, s, env);
      break;
    case DR_OP_ALLREDUCE:
    case DR_OP_BROADCAST:
    case DR_OP_REDUCE:
    case DR_OP_ALLGATHER:
    case DR_OP_REDUCESCATTER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      convert_collective(p, key, s, env);
      break;
    case DR_OP_NOOP:
    case DR_N_OPS:
      break;
  }
  DrId nid = dr_build_node_commit(b);
  if (p->param_hits != 0) /* read by a value that keeps no expression (rank:, grid:, ...) */
    dr__parse_error_at(
        p, key, WHAT(p), NULL,
        "a parameter is read where none may be: parameters may set slice bounds, kernel scalar "
        "arguments and memset values (and buffer sizes)");
  p->param_hits = 0;
  dr__params_attach(p, nid, WHAT(p));
  if (s[K_AFTER] != NULL) dr__parse_after(p, nid, s[K_AFTER], env);
}

/* ---- foreach ----------------------------------------------------------- */

static gboolean valid_var(const char *s) {
  if (!(g_ascii_isalpha(s[0]) || s[0] == '_')) return FALSE;
  for (const char *q = s; *q; q++)
    if (!(g_ascii_isalnum(*q) || *q == '_')) return FALSE;
  return TRUE;
}

/* Parses `foreach:` into vars, its ranges evaluated in `outer` (the
 * ranks', or an enclosing group's variables too); returns the number of
 * combinations, or 0 after reporting. */
static guint64 parse_foreach(DrParse *p, const DrYNode *v, const DrEnv *outer, LoopVar *vars, guint *n_vars) {
  /* Parameters never set a range: at the top level, the rank variables
   * alone (rank_only_env); in a group, its variables and those. */
  const DrEnv *range_env = outer == &p->rank_env ? &p->rank_only_env : outer;
  const char *what = WHAT(p);
  if (v->kind != DR_Y_MAP || v->len == 0) {
    dr__parse_wrong_type(p, what, "foreach", v, "a mapping like {i: 0..3} or {i: [1, 2, 4]}");
    return 0;
  }
  if (v->len > MAX_FOREACH_VARS) {
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key 'foreach': more than %d variables", what,
                   MAX_FOREACH_VARS);
    return 0;
  }
  guint64 total = 1;
  for (guint i = 0; i < v->len; i++) {
    const DrYNode *k = dr_ynode_key(v, i), *val = dr_ynode_value(v, i);
    LoopVar *lv = &vars[i];
    lv->name = k->u.text;
    lv->list = NULL;
    if (!valid_var(lv->name)) {
      dr_diags_error(p->diags, DR_LOC(p, k), "%s, key 'foreach': '%s' is not a variable name", what,
                     lv->name);
      return 0;
    }
    if (val->kind == DR_Y_SEQ) {
      if (val->len == 0) {
        dr_diags_error(p->diags, DR_LOC(p, val), "%s, key 'foreach': '%s' has no values", what, lv->name);
        return 0;
      }
      for (guint j = 0; j < val->len; j++) {
        gint64 x;
        if (!dr__parse_int(p, what, "foreach", val->u.items[j], NULL, G_MININT64, G_MAXINT64, &x)) return 0;
      }
      lv->list = val;
      lv->count = val->len;
    } else if (val->kind == DR_Y_SCALAR && strstr(val->u.text, "..") != NULL) {
      const char *t = val->u.text;
      const char *dots = strstr(t, "..");
      gint64 a, b;
      g_autofree char *msg = NULL;
      if (!dr__expr_eval(t, (gsize)(dots - t), range_env, &a, &msg) ||
          !dr__expr_eval(dots + 2, strlen(dots + 2), range_env, &b, &msg)) {
        dr_diags_error(p->diags, DR_LOC(p, val), "%s, key 'foreach': bad range '%s': %s", what, t, msg);
        return 0;
      }
      if (b < a) {
        dr_diags_error(p->diags, DR_LOC(p, val),
                       "%s, key 'foreach': empty range '%s' (A..B includes both ends and needs A <= B)", what,
                       t);
        return 0;
      }
      lv->start = a;
      /* b - a in unsigned arithmetic: it overflows gint64 for wide ranges;
       * the full 64-bit range has 2^64 values, saturated (far past the
       * node limit, which reports it). */
      guint64 span = (guint64)b - (guint64)a;
      lv->count = span == G_MAXUINT64 ? G_MAXUINT64 : span + 1;
    } else {
      dr__parse_wrong_type(p, what, "foreach", val, "a range A..B or a list of integers");
      return 0;
    }
    if (__builtin_mul_overflow(total, lv->count, &total)) total = G_MAXUINT64;
  }
  *n_vars = v->len;
  return total;
}

static gint64 loop_value(DrParse *p, const LoopVar *lv, guint64 i) {
  if (lv->list == NULL) return (gint64)((guint64)lv->start + i); /* within [A, B]: no wrap */
  gint64 x = 0;
  dr__parse_int(p, WHAT(p), "foreach", lv->list->u.items[i], NULL, G_MININT64, G_MAXINT64, &x);
  return x;
}

/* ---- foreach groups ----------------------------------------------------- */

/* A `nodes:` entry that is a foreach group: `foreach:` and `nodes:` and no
 * `op:` (an `op: loop` with `nodes:` is a loop). */
static gboolean is_group(const DrYNode *v) {
  if (v == NULL || v->kind != DR_Y_MAP) return FALSE;
  gboolean fe = FALSE, nodes = FALSE;
  for (guint i = 0; i < v->len; i++) {
    const char *k = dr_ynode_key(v, i)->u.text;
    if (strcmp(k, "op") == 0) return FALSE;
    fe = fe || strcmp(k, "foreach") == 0;
    nodes = nodes || strcmp(k, "nodes") == 0;
  }
  return fe && nodes;
}

static const char *const group_keys[] = {"foreach", "nodes"};

/* Expands foreach group `key: {foreach: ..., nodes: {...}}`: per
 * combination of its variables (the first outermost, as for a node), every
 * entry of its `nodes:` in file order, each converted as a `nodes:` entry
 * of its own (its own foreach, a loop, a nested group) with the group's
 * variables in scope. The key only names the group in messages. Bounded
 * up front like a node's foreach: the nodes it adds (combinations times
 * entries, a nested entry's own expansion counted when it is converted)
 * and the values walked. After an iteration with an error the rest are
 * skipped. */
static void parse_group(DrParse *p, DrYNode *key, DrYNode *value) {
  const DrEnv *outer = p->group_env ? p->group_env : &p->rank_env;
  g_string_printf(p->build.what, "foreach group '%s'", key->u.text);
  const DrYNode *s[G_N_ELEMENTS(group_keys)];
  if (dr__parse_map_slots(p, WHAT(p), value, group_keys, G_N_ELEMENTS(group_keys), s) > 0) return;
  const DrYNode *nodes = s[1];
  if (nodes->kind != DR_Y_MAP || nodes->len == 0) {
    dr__parse_wrong_type(p, WHAT(p), "nodes", nodes, "a non-empty mapping of node ids to nodes");
    return;
  }
  LoopVar vars[MAX_FOREACH_VARS];
  guint n_vars = 0;
  guint64 total = parse_foreach(p, s[0], outer, vars, &n_vars);
  if (total == 0) return;
  guint64 adds = total > G_MAXUINT64 / nodes->len ? G_MAXUINT64 : total * nodes->len;
  if (adds > DR_PARSE_MAX_NODES - p->n_nodes) {
    dr_diags_error(p->diags, DR_LOC(p, s[0]),
                   "%s, key 'foreach': expands to %s%" G_GUINT64_FORMAT
                   " nodes; a pipeline may have at most %" G_GUINT64_FORMAT,
                   WHAT(p), adds == G_MAXUINT64 ? "more than " : "", adds, DR_PARSE_MAX_NODES);
    return;
  }
  guint64 work = total > G_MAXUINT64 / MAX(nodes->size, 1) ? G_MAXUINT64 : total * nodes->size;
  if (work > p->values_left) {
    dr_diags_error(p->diags, DR_LOC(p, s[0]),
                   "%s, key 'foreach': expanding %" G_GUINT64_FORMAT " copies of a %" G_GUINT64_FORMAT
                   "-value group exceeds the limit of %" G_GUINT64_FORMAT " values",
                   WHAT(p), total, nodes->size, DR_PARSE_MAX_EXPANDED_VALUES);
    return;
  }
  p->values_left -= work;
  DrVar bound[MAX_FOREACH_VARS];
  guint64 idx[MAX_FOREACH_VARS] = {0};
  for (guint i = 0; i < n_vars; i++) bound[i] = (DrVar){vars[i].name, loop_value(p, &vars[i], 0)};
  DrEnv env = {bound, n_vars, outer};
  const DrEnv *saved = p->group_env;
  p->group_env = &env;
  for (guint64 c = 0; c < total && !dr_diags_full(p->diags); c++) {
    guint errors = dr_diags_n_errors(p->diags);
    for (guint e = 0; e < nodes->len; e++)
      dr__parse_node_entry(p, (DrYNode *)dr_ynode_key(nodes, e), (DrYNode *)dr_ynode_value(nodes, e));
    if (dr_diags_n_errors(p->diags) > errors) break;
    for (guint i = n_vars; i-- > 0;) {
      if (++idx[i] < vars[i].count) {
        bound[i].value = loop_value(p, &vars[i], idx[i]);
        break;
      }
      idx[i] = 0;
      bound[i].value = loop_value(p, &vars[i], 0);
    }
  }
  p->group_env = saved;
}

void dr__parse_node_entry(DrParse *p, DrYNode *key, DrYNode *value) {
  if (is_group(value)) {
    parse_group(p, key, value);
    return;
  }
  const DrEnv *outer = p->group_env ? p->group_env : &p->rank_env;
  dr_build_set_what(&p->build, key->u.text);
  if (value->kind != DR_Y_MAP) {
    dr__parse_wrong_type(p, WHAT(p), NULL, value, "a mapping with 'op'");
    return;
  }
  const DrYNode *fe = NULL;
  for (guint i = 0; i < value->len && fe == NULL; i++)
    if (strcmp(dr_ynode_key(value, i)->u.text, "foreach") == 0) fe = dr_ynode_value(value, i);
  if (fe == NULL) {
    if (p->n_nodes >= DR_PARSE_MAX_NODES) {
      dr_diags_error(p->diags, DR_LOC(p, key), "%s: more than %" G_GUINT64_FORMAT " nodes", WHAT(p),
                     DR_PARSE_MAX_NODES);
      return;
    }
    p->n_nodes++;
    convert_node(p, key, value, outer);
    return;
  }
  LoopVar vars[MAX_FOREACH_VARS];
  guint n_vars = 0;
  guint64 total = parse_foreach(p, fe, outer, vars, &n_vars);
  if (total == 0) return;
  if (total > DR_PARSE_MAX_NODES - p->n_nodes) {
    dr_diags_error(p->diags, DR_LOC(p, fe),
                   "%s, key 'foreach': expands to %s%" G_GUINT64_FORMAT
                   " nodes; a pipeline may have at most %" G_GUINT64_FORMAT,
                   WHAT(p), total == G_MAXUINT64 ? "more than " : "", total, DR_PARSE_MAX_NODES);
    return;
  }
  guint64 work = total > G_MAXUINT64 / MAX(value->size, 1) ? G_MAXUINT64 : total * value->size;
  if (work > p->values_left) {
    dr_diags_error(p->diags, DR_LOC(p, fe),
                   "%s, key 'foreach': expanding %" G_GUINT64_FORMAT " copies of a %" G_GUINT64_FORMAT
                   "-value body exceeds the limit of %" G_GUINT64_FORMAT " values",
                   WHAT(p), total, value->size, DR_PARSE_MAX_EXPANDED_VALUES);
    return;
  }
  p->values_left -= work;
  p->n_nodes += total;
  DrVar bound[MAX_FOREACH_VARS];
  guint64 idx[MAX_FOREACH_VARS] = {0};
  for (guint i = 0; i < n_vars; i++) bound[i] = (DrVar){vars[i].name, loop_value(p, &vars[i], 0)};
  DrEnv env = {bound, n_vars, outer};
  for (guint64 c = 0; c < total; c++) {
    /* One bad expansion is enough: the others would repeat its errors. */
    guint errors = dr_diags_n_errors(p->diags);
    convert_node(p, key, value, &env);
    if (dr_diags_n_errors(p->diags) > errors) break;
    /* Odometer: the last variable turns fastest. */
    for (guint i = n_vars; i-- > 0;) {
      if (++idx[i] < vars[i].count) {
        bound[i].value = loop_value(p, &vars[i], idx[i]);
        break;
      }
      idx[i] = 0;
      bound[i].value = loop_value(p, &vars[i], 0);
    }
  }
}
