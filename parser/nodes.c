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
#include "parser/suggest.h"

#define M(op) (1u << DR_OP_##op)
#define ALL_OPS 0xffffffffu
#define M_OP(op) (1u << (op))

/* X(ENUM_SUFFIX, spelling, ops it applies to) */
#define NODE_KEY_LIST(X)                 \
  X(OP, "op", ALL_OPS)                   \
  X(FOREACH, "foreach", ALL_OPS)         \
  X(AFTER, "after", ALL_OPS)             \
  X(PRIORITY, "priority", ALL_OPS)       \
  X(DEVICE, "device", ALL_OPS)           \
  X(LABEL, "label", ALL_OPS)             \
  X(KERNEL, "kernel", M(KERNEL))         \
  X(ARGS, "args", M(KERNEL) | M(HOST))   \
  X(GRID, "grid", M(KERNEL))             \
  X(BLOCK, "block", M(KERNEL))           \
  X(SHARED, "shared", M(KERNEL))         \
  X(SRC, "src", M(COPY))                 \
  X(DST, "dst", M(COPY) | M(MEMSET))     \
  X(VALUE, "value", M(MEMSET))           \
  X(BUFFER, "buffer", M(ALLOC) | M(FREE)) \
  X(FN, "fn", M(HOST))

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

#define WHAT(p) ((p)->what->str)

/* a + b + c, newly allocated: the per-node message prefixes are built
 * for every node, so without printf. */
static char *concat3(const char *a, const char *b, const char *c) {
  return g_strconcat(a, b, c, NULL);
}

/* Sets `buf` to a + b + c and returns its text (no allocation once warm). */
static const char *scratch(GString *buf, const char *a, const char *b, const char *c) {
  g_string_assign(buf, a);
  g_string_append(buf, b);
  g_string_append(buf, c);
  return buf->str;
}

/* Sets WHAT to "node 'ID'" (no printf: this runs for every node). */
static void set_what(DrParse *p, const char *id) {
  g_string_assign(p->what, "node '");
  g_string_append(p->what, id);
  g_string_append_c(p->what, '\'');
}

/* "missing key", unless a misspelt key of the same node explains it. */
static void node_missing(DrParse *p, const DrYNode *key, const char *name) {
  if (p->node_typos == 0) dr__parse_missing(p, DR_LOC(p, key), WHAT(p), name);
}

static void node_error(DrParse *p, const DrYNode *at, const char *key, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
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

static char *suggest_buffer(DrParse *p, const char *name) {
  DrSuggest s;
  dr__suggest_init(&s, name);
  for (DrId i = 0; i < dr_graph_n_buffers(p->g); i++) dr__suggest_add(&s, dr_graph_buffer(p->g, i)->name);
  return dr__suggest_hint(&s);
}

/* Resolves a buffer name or slice into an access (mode unset). `key` is
 * "key 'src'" or "argument 'x'" for messages. */
static gboolean slice_access(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env, DrAccess *out) {
  if (v->kind != DR_Y_SCALAR || dr__ynode_is_null(v)) {
    node_error(p, v, key, "expected a buffer name or slice like x[0:16], got %s", dr__ynode_kind_name(v));
    return FALSE;
  }
  if (v->plain && (g_ascii_isdigit(v->u.text[0]) || v->u.text[0] == '-' || v->u.text[0] == '.')) {
    node_error(p, v, key, "expected a buffer name or slice like x[0:16], got the number %s", v->u.text);
    return FALSE;
  }
  g_autofree char *msg = NULL;
  g_autofree char *text = dr__expr_has_braces(v->u.text) ? dr__expr_substitute(v->u.text, env, &msg)
                                                          : g_strdup(v->u.text);
  if (text == NULL) {
    node_error(p, v, key, "%s", msg);
    return FALSE;
  }
  DrSlice sl;
  if (!dr__slice_parse(text, env, &sl, &msg)) {
    node_error(p, v, key, "%s", msg);
    return FALSE;
  }
  g_autofree char *name = sl.name;
  DrId b = dr_graph_find_buffer(p->g, name);
  if (b == DR_NONE) {
    g_autofree char *hint = suggest_buffer(p, name);
    node_error(p, v, key, "unknown buffer '%s'%s", name, hint);
    return FALSE;
  }
  const DrBuffer *buf = dr_graph_buffer(p->g, b);
  gint64 begin = sl.has_begin ? sl.begin : 0;
  gint64 end = sl.has_end ? sl.end : (gint64)MIN(buf->count, (guint64)G_MAXINT64);
  if (begin < 0 || end < 0) {
    node_error(p, v, key, "slice '%s' has a negative bound", text);
    return FALSE;
  }
  if (begin > end) {
    node_error(p, v, key, "slice '%s' is reversed: start %" G_GINT64_FORMAT " is after end %" G_GINT64_FORMAT,
               text, begin, end);
    return FALSE;
  }
  if ((guint64)end > buf->count) {
    node_error(p, v, key,
               "slice '%s' is out of bounds: buffer '%s' has %" G_GUINT64_FORMAT " elements",
               text, name, buf->count);
    return FALSE;
  }
  if (begin == end) {
    node_error(p, v, key, "slice '%s' is empty", text);
    return FALSE;
  }
  *out = (DrAccess){.buffer = b, .begin = (guint64)begin, .end = (guint64)end, .loc = DR_LOC(p, v)};
  return TRUE;
}

static guint64 access_bytes(DrParse *p, const DrAccess *a) {
  return (a->end - a->begin) * dr_elem_size(dr_graph_buffer(p->g, a->buffer)->type);
}

/* A buffer key naming a whole device buffer (alloc, free). */
static DrId whole_device_buffer(DrParse *p, DrOp op, const DrYNode *v, const DrEnv *env) {
  g_autofree char *name = NULL;
  g_autofree char *key = g_strdup("key 'buffer'");
  if (!dr__parse_string(p, WHAT(p), "buffer", v, env, &name)) return DR_NONE;
  if (strchr(name, '[') != NULL) {
    node_error(p, v, key, "%s takes a whole buffer, not a slice", dr_op_name(op));
    return DR_NONE;
  }
  DrId b = dr_graph_find_buffer(p->g, name);
  if (b == DR_NONE) {
    g_autofree char *hint = suggest_buffer(p, name);
    node_error(p, v, key, "unknown buffer '%s'%s", name, hint);
    return DR_NONE;
  }
  if (dr_graph_buffer(p->g, b)->where != DR_WHERE_DEVICE) {
    node_error(p, v, key, "%s takes device buffers only; '%s' is a host buffer", dr_op_name(op), name);
    return DR_NONE;
  }
  return b;
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

static void add_default_arg(DrParse *p, const DrParam *param, guint32 index, DrLoc loc) {
  DrArg a = {.param = index, .loc = loc};
  if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
    a.kind = DR_ARG_INT;
    a.v.i = (gint64)param->def;
  } else {
    a.kind = DR_ARG_FLOAT;
    a.v.f = param->def;
  }
  dr_graph_add_arg(p->g, &a);
}

/* Binds `args` to the declared params of a kernel (host == FALSE) or host
 * function, in declaration order, adding accesses for pointers. */
static void bind_args(DrParse *p, const DrYNode *node_key, const DrYNode *args, const DrEnv *env,
                      const char *callee, const DrParam *params, guint32 n_params, gboolean host) {
  const DrYNode *vals[64] = {NULL};
  g_return_if_fail(n_params <= 64);
  guint unknown = 0;
  if (args == NULL) {
    GString *need = g_string_new(NULL);
    for (guint32 i = 0; i < n_params; i++)
      if (!params[i].optional) g_string_append_printf(need, "%s%s", need->len ? ", " : "", params[i].name);
    if (need->len > 0 && p->node_typos == 0)
      dr_diags_error(p->diags, DR_LOC(p, node_key), "%s: missing key 'args' (%s takes %s)", WHAT(p), callee,
                     need->str);
    gboolean missing = need->len > 0;
    g_string_free(need, TRUE);
    if (missing) return;
  }
  if (args != NULL && !dr__ynode_is_null(args)) {
    if (args->kind != DR_Y_MAP) {
      dr__parse_wrong_type(p, WHAT(p), "args", args, "a mapping of parameter names to values");
      return;
    }
    for (guint i = 0; i < args->len; i++) {
      const DrYNode *k = dr_ynode_key(args, i);
      guint32 j = 0;
      while (j < n_params && strcmp(params[j].name, k->u.text) != 0) j++;
      if (j < n_params) {
        vals[j] = dr_ynode_value(args, i);
        continue;
      }
      DrSuggest s;
      dr__suggest_init(&s, k->u.text);
      for (j = 0; j < n_params; j++) dr__suggest_add(&s, params[j].name);
      g_autofree char *hint = dr__suggest_hint(&s);
      node_error(p, k, "key 'args'", "%s has no parameter '%s'%s", callee, k->u.text, hint);
      unknown++;
    }
  }
  for (guint32 i = 0; i < n_params; i++) {
    const DrParam *param = &params[i];
    const DrYNode *v = vals[i];
    const char *key = scratch(p->arg_key, "argument '", param->name, "'");
    if (v == NULL) {
      if (!param->optional && unknown == 0)
        dr_diags_error(p->diags, DR_LOC(p, args ? args : node_key), "%s: missing argument '%s' of %s", WHAT(p),
                       param->name, callee);
      else if (!param->is_pointer && !param->is_string)
        add_default_arg(p, param, i, DR_LOC(p, node_key));
      continue;
    }
    DrArg a = {.param = i, .loc = DR_LOC(p, v)};
    const char *awhat = scratch(p->arg_what, WHAT(p), ", argument '", param->name);
    g_string_append_c(p->arg_what, '\'');
    if (param->is_pointer) {
      DrAccess acc;
      if (!slice_access(p, key, v, env, &acc)) continue;
      const DrBuffer *b = dr_graph_buffer(p->g, acc.buffer);
      if (!host && b->where != DR_WHERE_DEVICE) {
        node_error(p, v, key, "%s takes device buffers; '%s' is a host buffer", callee, b->name);
        continue;
      }
      if (host && b->where != DR_WHERE_HOST) {
        node_error(p, v, key, "%s runs on the CPU and needs a host buffer; '%s' lives on the device", callee,
                   b->name);
        continue;
      }
      if (!param->any_type && b->type != param->type) {
        node_error(p, v, key, "%s wants %s elements, but buffer '%s' holds %s", callee, dr_elem_name(param->type),
                   b->name, dr_elem_name(b->type));
        continue;
      }
      acc.mode = param->access;
      a.kind = DR_ARG_BUFFER;
      a.v.access = dr_graph_add_access(p->g, &acc);
    } else if (param->is_string) {
      g_autofree char *s = NULL;
      if (!dr__parse_string(p, awhat, NULL, v, env, &s)) continue;
      a.kind = DR_ARG_STRING;
      a.v.s = s; /* interned by dr_graph_add_arg */
      dr_graph_add_arg(p->g, &a);
      continue;
    } else if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
      gint64 lo = param->type == DR_ELEM_I32 ? G_MININT32 : G_MININT64;
      gint64 hi = param->type == DR_ELEM_I32 ? G_MAXINT32 : G_MAXINT64;
      if (host) lo = 0;
      if (!dr__parse_int(p, awhat, NULL, v, env, lo, hi, &a.v.i)) continue;
      a.kind = DR_ARG_INT;
    } else {
      if (!dr__parse_float(p, awhat, NULL, v, env, &a.v.f)) continue;
      a.kind = DR_ARG_FLOAT;
    }
    dr_graph_add_arg(p->g, &a);
  }
}

/* ---- ops --------------------------------------------------------------- */

static void convert_kernel(DrParse *p, DrId id, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_KERNEL] == NULL) {
    node_missing(p, key, "kernel");
    return;
  }
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "kernel", s[K_KERNEL], env, &name)) return;
  DrId k = dr_graph_find_kernel(p->g, name);
  if (k == DR_NONE) {
    DrSuggest sg;
    dr__suggest_init(&sg, name);
    for (DrId i = 0; i < p->g->kernels->len; i++) dr__suggest_add(&sg, dr_graph_kernel(p->g, i)->name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    node_error(p, s[K_KERNEL], "key 'kernel'", "unknown kernel '%s'%s", name, hint);
    return;
  }
  DrNode *n = dr_graph_node(p->g, id);
  n->kernel = k;
  if (s[K_GRID] != NULL) parse_dim3(p, "grid", s[K_GRID], env, n->grid);
  if (s[K_BLOCK] != NULL) parse_dim3(p, "block", s[K_BLOCK], env, n->block);
  guint64 shared;
  if (s[K_SHARED] != NULL && dr__parse_size(p, WHAT(p), "shared", s[K_SHARED], env, DR_SIZE_BYTES, &shared)) {
    if (shared > G_MAXUINT32) node_error(p, s[K_SHARED], "key 'shared'", "too large");
    else n->shared = (guint32)shared;
  }
  const DrKernelDecl *decl = dr_graph_kernel(p->g, k);
  g_autofree char *callee = concat3("kernel '", decl->name, "'");
  bind_args(p, key, s[K_ARGS], env, callee, decl->params, decl->n_params, FALSE);
}

static void convert_copy(DrParse *p, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_SRC] == NULL || s[K_DST] == NULL) {
    node_missing(p, key, s[K_SRC] == NULL ? "src" : "dst");
    return;
  }
  DrAccess src, dst;
  gboolean ok_src = slice_access(p, "key 'src'", s[K_SRC], env, &src);
  gboolean ok_dst = slice_access(p, "key 'dst'", s[K_DST], env, &dst);
  if (!ok_src || !ok_dst) return;
  if (access_bytes(p, &src) != access_bytes(p, &dst)) {
    node_error(p, s[K_DST], "key 'dst'",
               "copy lengths differ: src is %" G_GUINT64_FORMAT " bytes, dst is %" G_GUINT64_FORMAT " bytes",
               access_bytes(p, &src), access_bytes(p, &dst));
    return;
  }
  src.mode = DR_ACCESS_READ;
  dst.mode = DR_ACCESS_WRITE;
  dr_graph_add_access(p->g, &src);
  dr_graph_add_access(p->g, &dst);
}

static void convert_memset(DrParse *p, DrId id, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_DST] == NULL || s[K_VALUE] == NULL) {
    node_missing(p, key, s[K_DST] == NULL ? "dst" : "value");
    return;
  }
  gint64 value;
  if (dr__parse_int(p, WHAT(p), "value", s[K_VALUE], env, 0, 255, &value))
    dr_graph_node(p->g, id)->memset_value = (guint8)value;
  DrAccess dst;
  if (!slice_access(p, "key 'dst'", s[K_DST], env, &dst)) return;
  dst.mode = DR_ACCESS_WRITE;
  dr_graph_add_access(p->g, &dst);
}

static void convert_lifetime(DrParse *p, DrOp op, DrId id, const DrYNode *key, const DrYNode **s,
                             const DrEnv *env) {
  if (s[K_BUFFER] == NULL) {
    node_missing(p, key, "buffer");
    return;
  }
  DrId b = whole_device_buffer(p, op, s[K_BUFFER], env);
  if (b == DR_NONE) return;
  DrBuffer *buf = dr_graph_buffer(p->g, b);
  dr_graph_node(p->g, id)->buffer = b;
  DrId *slot = op == DR_OP_ALLOC ? &buf->alloc_node : &buf->free_node;
  if (*slot == DR_NONE) *slot = id;
  DrAccess a = {.buffer = b, .mode = DR_ACCESS_WRITE, .begin = 0, .end = buf->count,
                .loc = DR_LOC(p, s[K_BUFFER])};
  dr_graph_add_access(p->g, &a);
}

static void convert_host(DrParse *p, DrId id, const DrYNode *key, const DrYNode **s, const DrEnv *env) {
  if (s[K_FN] == NULL) {
    node_missing(p, key, "fn");
    return;
  }
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "fn", s[K_FN], env, &name)) return;
  DrHostFn fn;
  if (!dr_host_fn_from_name(name, &fn)) {
    DrSuggest sg;
    dr__suggest_init(&sg, name);
    for (guint i = 0; i < DR_N_HOST_FNS; i++) dr__suggest_add(&sg, dr_host_fn_name((DrHostFn)i));
    g_autofree char *hint = dr__suggest_hint(&sg);
    node_error(p, s[K_FN], "key 'fn'", "unknown host function '%s'%s", name,
               dr__suggest_best(&sg) ? hint : " (expected print, sleep or checksum)");
    return;
  }
  dr_graph_node(p->g, id)->host_fn = fn;
  guint32 n_params;
  const DrParam *params = dr_host_fn_params(fn, &n_params);
  g_autofree char *callee = concat3("host function '", name, "'");
  bind_args(p, key, s[K_ARGS], env, callee, params, n_params, TRUE);
}

/* ---- after: ------------------------------------------------------------ */

static void after_entry(DrParse *p, DrId to, const DrYNode *v, const DrEnv *env) {
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), "after", v, env, &name)) return;
  gsize len = strlen(name);
  gboolean prefix = len > 0 && name[len - 1] == '*';
  DrLoc loc = DR_LOC(p, v);
  if ((guint64)p->g->afters->len + p->afters->len >= DR_PARSE_MAX_AFTERS) {
    node_error(p, v, "key 'after'", "more than %" G_GUINT64_FORMAT " after: dependencies", DR_PARSE_MAX_AFTERS);
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

static void parse_after(DrParse *p, DrId to, const DrYNode *v, const DrEnv *env) {
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

void dr__parse_resolve_afters(DrParse *p) {
  DrGraph *g = p->g;
  g_autofree DrId *sorted = NULL;
  guint64 total = g->afters->len;
  for (guint i = 0; i < p->afters->len && !dr_diags_full(p->diags); i++) {
    const DrPendingAfter *pa = &g_array_index(p->afters, DrPendingAfter, i);
    const DrNode *to = dr_graph_node(g, pa->to);
    set_what(p, to->id);
    gsize len = strlen(pa->name);
    if (len == 0 || pa->name[len - 1] != '*') {
      DrId from = dr_graph_find_node(g, pa->name);
      if (from == pa->to) {
        dr_diags_error(p->diags, pa->loc, "%s, key 'after': a node cannot come after itself", WHAT(p));
      } else if (from == DR_NONE) {
        DrSuggest s;
        dr__suggest_init(&s, pa->name);
        for (DrId n = 0; n < dr_graph_n_nodes(g); n++) dr__suggest_add(&s, dr_graph_node(g, n)->id);
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
      if (strncmp(dr_graph_node(g, sorted[mid])->id, pa->name, plen) < 0) lo = mid + 1;
      else hi = mid;
    }
    guint matched = 0;
    for (guint k = lo; k < dr_graph_n_nodes(g); k++) {
      DrId from = sorted[k];
      if (strncmp(dr_graph_node(g, from)->id, pa->name, plen) != 0) break;
      if (from == pa->to) continue;
      if (++total > DR_PARSE_MAX_AFTERS) {
        dr_diags_error(p->diags, pa->loc, "%s, key 'after': more than %" G_GUINT64_FORMAT " after: dependencies",
                       WHAT(p), DR_PARSE_MAX_AFTERS);
        return;
      }
      dr_graph_add_after(g, from, pa->to, pa->loc);
      matched++;
    }
    if (matched == 0)
      dr_diags_error(p->diags, pa->loc, "%s, key 'after': '%s' matches no other node", WHAT(p), pa->name);
  }
}

/* ---- one node ---------------------------------------------------------- */

static gboolean valid_id(const char *id) {
  if (id[0] == '\0') return FALSE;
  for (const char *q = id; *q; q++)
    if (*q == '*' || g_ascii_isspace(*q) || *q == '[' || *q == ']' || *q == ',' || *q == '"' || *q == '\'')
      return FALSE;
  return TRUE;
}

static void convert_node(DrParse *p, const DrYNode *key, const DrYNode *map, const DrEnv *env) {
  g_autofree char *id = NULL;
  if (dr__expr_has_braces(key->u.text)) {
    g_autofree char *msg = NULL;
    id = dr__expr_substitute(key->u.text, env, &msg);
    if (id == NULL) {
      dr_diags_error(p->diags, DR_LOC(p, key), "node '%s': %s", key->u.text, msg);
      return;
    }
  } else {
    id = g_strdup(key->u.text);
  }
  set_what(p, id);
  if (!valid_id(id)) {
    dr_diags_error(p->diags, DR_LOC(p, key),
                   "%s: a node id must be non-empty, without spaces, quotes, brackets, ',' or '*'", WHAT(p));
    return;
  }
  /* op first: it decides which other keys apply. */
  const DrYNode *op_v = NULL;
  for (guint i = 0; i < map->len && op_v == NULL; i++)
    if (strcmp(dr_ynode_key(map, i)->u.text, "op") == 0) op_v = dr_ynode_value(map, i);
  if (op_v == NULL) {
    /* A misspelt 'op' explains its absence: report only the typos then. */
    guint unknown = 0;
    for (guint i = 0; i < map->len; i++) {
      const DrYNode *k = dr_ynode_key(map, i);
      guint j = 0;
      while (j < K_N_KEYS && strcmp(node_keys[j].name, k->u.text) != 0) j++;
      if (j < K_N_KEYS) continue;
      DrSuggest sg;
      dr__suggest_init(&sg, k->u.text);
      for (j = 0; j < K_N_KEYS; j++) dr__suggest_add(&sg, node_keys[j].name);
      g_autofree char *hint = dr__suggest_hint(&sg);
      dr_diags_error(p->diags, DR_LOC(p, k), "%s: unknown key '%s'%s", WHAT(p), k->u.text, hint);
      unknown++;
    }
    if (unknown == 0) dr__parse_missing(p, DR_LOC(p, key), WHAT(p), "op");
    return;
  }
  g_autofree char *op_name = NULL;
  if (!dr__parse_string(p, WHAT(p), "op", op_v, env, &op_name)) return;
  DrOp op;
  if (!dr_op_from_name(op_name, &op)) {
    DrSuggest sg;
    dr__suggest_init(&sg, op_name);
    for (guint i = 0; i < DR_N_OPS; i++) dr__suggest_add(&sg, dr_op_name((DrOp)i));
    g_autofree char *hint = dr__suggest_hint(&sg);
    dr_diags_error(p->diags, DR_LOC(p, op_v),
                   "%s, key 'op': unknown op '%s'%s", WHAT(p), op_name,
                   dr__suggest_best(&sg) ? hint : " (expected kernel, copy, memset, alloc, free, host or noop)");
    return;
  }
  const DrYNode *s[K_N_KEYS] = {NULL};
  p->node_typos = 0;
  for (guint i = 0; i < map->len; i++) {
    const DrYNode *k = dr_ynode_key(map, i);
    guint j = 0;
    while (j < K_N_KEYS && strcmp(node_keys[j].name, k->u.text) != 0) j++;
    if (j < K_N_KEYS && (node_keys[j].ops & M_OP(op))) {
      s[j] = dr_ynode_value(map, i);
    } else if (j < K_N_KEYS) {
      dr_diags_error(p->diags, DR_LOC(p, k), "%s: key '%s' does not apply to op '%s'", WHAT(p), k->u.text,
                     dr_op_name(op));
    } else {
      DrSuggest sg;
      dr__suggest_init(&sg, k->u.text);
      for (j = 0; j < K_N_KEYS; j++)
        if (node_keys[j].ops & M_OP(op)) dr__suggest_add(&sg, node_keys[j].name);
      g_autofree char *hint = dr__suggest_hint(&sg);
      dr_diags_error(p->diags, DR_LOC(p, k), "%s: unknown key '%s'%s", WHAT(p), k->u.text, hint);
      p->node_typos++;
    }
  }
  DrNode n = {.op = op, .priority = DR_PRIORITY_NORMAL, .id = id, .loc = DR_LOC(p, key), .device = -1,
              .kernel = DR_NONE, .buffer = DR_NONE};
  if (s[K_PRIORITY] != NULL) {
    g_autofree char *pr = NULL;
    if (dr__parse_string(p, WHAT(p), "priority", s[K_PRIORITY], env, &pr) && !dr_priority_from_name(pr, &n.priority))
      dr_diags_error(p->diags, DR_LOC(p, s[K_PRIORITY]), "%s, key 'priority': expected low, normal or high, got '%s'",
                     WHAT(p), pr);
  }
  gint64 device;
  if (s[K_DEVICE] != NULL && dr__parse_int(p, WHAT(p), "device", s[K_DEVICE], env, 0, 1023, &device))
    n.device = (gint32)device;
  g_autofree char *label = NULL;
  if (s[K_LABEL] != NULL && dr__parse_string(p, WHAT(p), "label", s[K_LABEL], env, &label)) n.label = label;
  DrId nid = dr_graph_add_node(p->g, &n);
  if (nid == DR_NONE) {
    DrId first = dr_graph_find_node(p->g, id);
    dr_diags_error(p->diags, DR_LOC(p, key), "duplicate node id '%s'%s", id, env != NULL ? " after foreach expansion" : "");
    dr_diags_note(p->diags, dr_graph_node(p->g, first)->loc, "'%s' is first defined here", id);
    return;
  }
  switch (op) {
    case DR_OP_KERNEL: convert_kernel(p, nid, key, s, env); break;
    case DR_OP_COPY: convert_copy(p, key, s, env); break;
    case DR_OP_MEMSET: convert_memset(p, nid, key, s, env); break;
    case DR_OP_ALLOC:
    case DR_OP_FREE: convert_lifetime(p, op, nid, key, s, env); break;
    case DR_OP_HOST: convert_host(p, nid, key, s, env); break;
    case DR_OP_NOOP:
    case DR_N_OPS: break;
  }
  if (s[K_AFTER] != NULL) parse_after(p, nid, s[K_AFTER], env);
}

/* ---- foreach ----------------------------------------------------------- */

static gboolean valid_var(const char *s) {
  if (!(g_ascii_isalpha(s[0]) || s[0] == '_')) return FALSE;
  for (const char *q = s; *q; q++)
    if (!(g_ascii_isalnum(*q) || *q == '_')) return FALSE;
  return TRUE;
}

/* Parses `foreach:` into vars; returns the number of combinations, or 0
 * after reporting. */
static guint64 parse_foreach(DrParse *p, const DrYNode *v, LoopVar *vars, guint *n_vars) {
  const char *what = WHAT(p);
  if (v->kind != DR_Y_MAP || v->len == 0) {
    dr__parse_wrong_type(p, what, "foreach", v, "a mapping like {i: 0..3} or {i: [1, 2, 4]}");
    return 0;
  }
  if (v->len > MAX_FOREACH_VARS) {
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key 'foreach': more than %d variables", what, MAX_FOREACH_VARS);
    return 0;
  }
  guint64 total = 1;
  for (guint i = 0; i < v->len; i++) {
    const DrYNode *k = dr_ynode_key(v, i), *val = dr_ynode_value(v, i);
    LoopVar *lv = &vars[i];
    lv->name = k->u.text;
    lv->list = NULL;
    if (!valid_var(lv->name)) {
      dr_diags_error(p->diags, DR_LOC(p, k), "%s, key 'foreach': '%s' is not a variable name", what, lv->name);
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
      if (!dr__expr_eval(t, (gsize)(dots - t), NULL, &a, &msg) ||
          !dr__expr_eval(dots + 2, strlen(dots + 2), NULL, &b, &msg)) {
        dr_diags_error(p->diags, DR_LOC(p, val), "%s, key 'foreach': bad range '%s': %s", what, t, msg);
        return 0;
      }
      if (b < a) {
        dr_diags_error(p->diags, DR_LOC(p, val),
                       "%s, key 'foreach': empty range '%s' (A..B includes both ends and needs A <= B)", what, t);
        return 0;
      }
      lv->start = a;
      lv->count = (guint64)(b - a) + 1;
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
  if (lv->list == NULL) return lv->start + (gint64)i;
  gint64 x = 0;
  dr__parse_int(p, WHAT(p), "foreach", lv->list->u.items[i], NULL, G_MININT64, G_MAXINT64, &x);
  return x;
}

void dr__parse_node_entry(DrParse *p, DrYNode *key, DrYNode *value) {
  set_what(p, key->u.text);
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
    convert_node(p, key, value, NULL);
    return;
  }
  LoopVar vars[MAX_FOREACH_VARS];
  guint n_vars = 0;
  guint64 total = parse_foreach(p, fe, vars, &n_vars);
  if (total == 0) return;
  if (total > DR_PARSE_MAX_NODES - p->n_nodes) {
    dr_diags_error(p->diags, DR_LOC(p, fe),
                   "%s, key 'foreach': expands to %s%" G_GUINT64_FORMAT " nodes; a pipeline may have at most %"
                   G_GUINT64_FORMAT, WHAT(p), total == G_MAXUINT64 ? "more than " : "", total, DR_PARSE_MAX_NODES);
    return;
  }
  guint64 work = total > G_MAXUINT64 / MAX(value->size, 1) ? G_MAXUINT64 : total * value->size;
  if (work > p->values_left) {
    dr_diags_error(p->diags, DR_LOC(p, fe),
                   "%s, key 'foreach': expanding %" G_GUINT64_FORMAT " copies of a %" G_GUINT64_FORMAT
                   "-value body exceeds the limit of %" G_GUINT64_FORMAT " values", WHAT(p), total, value->size,
                   DR_PARSE_MAX_EXPANDED_VALUES);
    return;
  }
  p->values_left -= work;
  p->n_nodes += total;
  DrVar bound[MAX_FOREACH_VARS];
  guint64 idx[MAX_FOREACH_VARS] = {0};
  for (guint i = 0; i < n_vars; i++) bound[i] = (DrVar){vars[i].name, loop_value(p, &vars[i], 0)};
  DrEnv env = {bound, n_vars};
  for (guint64 c = 0; c < total && !dr_diags_full(p->diags); c++) {
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
