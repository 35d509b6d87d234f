/* build.c: the one builder of nodes, buffers and kernel declarations
 * (build.h): the naming rule, node drafts, argument binding, slices,
 * lifetimes, copies, buffers and kernel declarations, each check with its
 * one message. Every function is O(size of its input) apart from name
 * lookups, which are hash lookups in the graph. */
#include "ir/build.h"

#include <math.h>
#include <string.h>

#include "ir/suggest.h"

static const char *const name_nouns[] = {
#define DR_X(e, s) s,
    DR_NAME_KIND_LIST(DR_X)
#undef DR_X
};

static void report(DrBuild *b, DrLoc loc, const char *key, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
/* Reports "WHAT, KEY: MSG" (or "WHAT: MSG" without a key) at `loc`. */
static void report(DrBuild *b, DrLoc loc, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (key != NULL)
    dr_diags_error(b->diags, loc, "%s, %s: %s", b->what->str, key, msg);
  else
    dr_diags_error(b->diags, loc, "%s: %s", b->what->str, msg);
}

void dr_build_init(DrBuild *b, DrGraph *g, DrDiags *diags) {
  memset(b, 0, sizeof *b);
  b->g = g;
  b->diags = diags;
  b->what = g_string_new(NULL);
  b->scratch = g_string_new(NULL);
  b->callee = g_string_new(NULL);
}

void dr_build_clear(DrBuild *b) {
  if (b->what) g_string_free(b->what, TRUE);
  if (b->scratch) g_string_free(b->scratch, TRUE);
  if (b->callee) g_string_free(b->callee, TRUE);
  b->what = b->scratch = b->callee = NULL;
}

/* Sets `buf` to a + b + "'" (no printf: this runs for every node). */
static const char *quoted(GString *buf, const char *a, const char *name) {
  g_string_assign(buf, a);
  g_string_append(buf, name);
  g_string_append_c(buf, '\'');
  return buf->str;
}

const char *dr_build_set_what(DrBuild *b, const char *id) { return quoted(b->what, "node '", id); }

/* ---- names --------------------------------------------------------------- */

static gboolean name_char(char c) { return g_ascii_isalnum(c) || c == '_' || c == '-' || c == '.'; }

gboolean dr_build_name_ok(DrBuild *b, DrNameKind kind, const char *name, const char *owner, DrLoc loc) {
  gboolean slash = FALSE, ok = name[0] != '\0';
  for (const char *q = name; *q; q++) {
    if (*q == '/')
      slash = TRUE;
    else if (!name_char(*q))
      ok = FALSE;
  }
  if (ok && !slash) return TRUE;
  g_autofree char *what = NULL;
  switch (kind) {
    case DR_NAME_NODE:
      what = g_strdup_printf("node '%s'", name);
      break;
    case DR_NAME_BUFFER:
      what = g_strdup_printf("buffer '%s'", name);
      break;
    case DR_NAME_KERNEL:
      what = g_strdup_printf("kernel '%s'", name);
      break;
    case DR_NAME_PARAM:
      what = g_strdup_printf("%s, parameter '%s'", owner, name);
      break;
  }
  const char *why = ok && kind == DR_NAME_NODE ? "'/' is reserved for scoped ids (LOOP/NODE); " : "";
  /* "letters" means ASCII ones: name a look-alike that is not. */
  g_autofree char *chars = dr__suggest_describe_non_ascii(name);
  g_autofree char *detail = chars != NULL ? g_strdup_printf(" (%s)", chars) : g_strdup("");
  dr_diags_error(b->diags, loc, "%s: %sa %s uses letters, digits, '_', '-' and '.'%s", what, why,
                 name_nouns[kind], detail);
  return FALSE;
}

/* ---- node drafts --------------------------------------------------------- */

gboolean dr_build_node_begin(DrBuild *b, const char *id, DrOp op, DrLoc loc, gboolean expanded) {
  dr_build_set_what(b, id);
  b->n_accesses = b->n_args = 0;
  b->params = NULL;
  b->n_params = 0;
  b->errors_at_begin = dr_diags_n_errors(b->diags);
  b->node = (DrNode){.op = op,
                     .priority = DR_PRIORITY_NORMAL,
                     .id = id,
                     .loc = loc,
                     .device = -1,
                     .kernel = DR_NONE,
                     .buffer = DR_NONE,
                     .root = -1,
                     .peer = -1,
                     .dev = -1};
  DrId first = dr_graph_find_node(b->g, id);
  if (first == DR_NONE) return TRUE;
  dr_diags_error(b->diags, loc, "duplicate node id '%s'%s", id, expanded ? " after foreach expansion" : "");
  dr_diags_note(b->diags, dr_graph_node(b->g, first)->loc, "'%s' is first defined here", id);
  return FALSE;
}

gboolean dr_build_node_failed(const DrBuild *b) { return dr_diags_n_errors(b->diags) > b->errors_at_begin; }

DrId dr_build_node_commit(DrBuild *b) {
  DrGraph *g = b->g;
  DrId id = dr_graph_add_node(g, &b->node);
  g_return_val_if_fail(id != DR_NONE, DR_NONE);
  guint32 base = g->accesses->len;
  for (guint i = 0; i < b->n_accesses; i++) dr_graph_add_access(g, &b->accesses[i]);
  for (guint i = 0; i < b->n_args; i++) {
    DrArg a = b->args[i];
    if (a.kind == DR_ARG_BUFFER) a.v.access = base + (guint32)b->arg_access[i];
    dr_graph_add_arg(g, &a);
  }
  const DrNode *n = dr_graph_node(g, id);
  if ((n->op == DR_OP_ALLOC || n->op == DR_OP_FREE) && n->buffer != DR_NONE) {
    DrBuffer *buf = dr_graph_buffer(g, n->buffer);
    DrId *slot = n->op == DR_OP_ALLOC ? &buf->alloc_node : &buf->free_node;
    if (*slot == DR_NONE) *slot = id;
  }
  return id;
}

void dr_build_add_access(DrBuild *b, const DrAccess *a, DrAccessMode mode) {
  g_return_if_fail(b->n_accesses < G_N_ELEMENTS(b->accesses));
  b->accesses[b->n_accesses] = *a;
  b->accesses[b->n_accesses].mode = mode;
  b->n_accesses++;
}

/* ---- callees --------------------------------------------------------------- */

gboolean dr_build_kernel_ref(DrBuild *b, const char *name, DrLoc loc) {
  const DrGraph *g = b->g;
  DrId k = dr_graph_find_kernel(g, name);
  if (k == DR_NONE) {
    DrSuggest sg;
    dr__suggest_init(&sg, name);
    for (DrId i = 0; i < g->kernels->len && !dr_diags_full(b->diags); i++)
      dr__suggest_add(&sg, dr_graph_kernel(g, i)->name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    report(b, loc, "key 'kernel'", "unknown kernel '%s'%s", name, hint);
    return FALSE;
  }
  const DrKernelDecl *decl = dr_graph_kernel(g, k);
  b->node.kernel = k;
  b->params = decl->params;
  b->n_params = decl->n_params;
  quoted(b->callee, "kernel '", decl->name);
  return TRUE;
}

gboolean dr_build_host_fn(DrBuild *b, const char *name, DrLoc loc) {
  DrHostFn fn;
  if (!dr_host_fn_from_name(name, &fn)) {
    DrSuggest sg;
    dr__suggest_init(&sg, name);
    for (guint i = 0; i < DR_N_HOST_FNS; i++) dr__suggest_add(&sg, dr_host_fn_name((DrHostFn)i));
    g_autofree char *hint = dr__suggest_hint(&sg);
    report(b, loc, "key 'fn'", "unknown host function '%s'%s", name,
           dr__suggest_best(&sg) ? hint
                                 : " (expected print, sleep or checksum, or fn: {lib, symbol} for a function "
                                   "of a shared library)");
    return FALSE;
  }
  b->node.host_fn = fn;
  b->params = dr_host_fn_params(fn, &b->n_params);
  quoted(b->callee, "host function '", dr_host_fn_name(fn));
  return TRUE;
}

static gboolean param_ok(DrBuild *b, const char *owner, const DrParam *params, guint32 i, DrLoc loc);

gboolean dr_build_host_callback(DrBuild *b, const DrCallback *cb, const char *name, const DrLoc *param_locs,
                                DrLoc loc) {
  g_return_val_if_fail(cb->n_params == 0 || cb->params != NULL, FALSE);
  quoted(b->callee, "host function '", name);
  if (cb->n_params > DR_BUILD_MAX_PARAMS) {
    report(b, loc, "key 'fn'", "%s declares more than %d parameters", b->callee->str, DR_BUILD_MAX_PARAMS);
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint32 i = 0; i < cb->n_params; i++)
    ok = param_ok(b, b->callee->str, cb->params, i, param_locs ? param_locs[i] : loc) && ok;
  if (!ok) return FALSE;
  b->node.callback = dr_graph_add_callback(b->g, cb);
  const DrCallback *added = &g_array_index(b->g->callbacks, DrCallback, b->node.callback - 1);
  b->params = added->params;
  b->n_params = added->n_params;
  return TRUE;
}

/* ---- arguments -------------------------------------------------------------- */

/* "missing key 'args' (CALLEE takes a, b)" when required ones exist;
 * returns whether some are required. */
static gboolean missing_all(DrBuild *b, const DrBuildArgs *args) {
  GString *need = g_string_new(NULL);
  for (guint32 i = 0; i < b->n_params; i++)
    if (!b->params[i].optional)
      g_string_append_printf(need, "%s%s", need->len ? ", " : "", b->params[i].name);
  gboolean missing = need->len > 0;
  if (missing && !args->quiet)
    report(b, args->at, NULL, "missing key 'args' (%s takes %s)", b->callee->str, need->str);
  g_string_free(need, TRUE);
  return missing;
}

/* The index of parameter `name`, or -1 after an "has no parameter" report. */
static gint param_index(DrBuild *b, const char *name, DrLoc loc) {
  for (guint32 j = 0; j < b->n_params; j++)
    if (strcmp(b->params[j].name, name) == 0) return (gint)j;
  DrSuggest s;
  dr__suggest_init(&s, name);
  for (guint32 j = 0; j < b->n_params; j++) dr__suggest_add(&s, b->params[j].name);
  g_autofree char *hint = dr__suggest_hint(&s);
  report(b, loc, "key 'args'", "%s has no parameter '%s'%s", b->callee->str, name, hint);
  return -1;
}

gboolean dr_build_args_match(DrBuild *b, const DrBuildArgs *args, gint slot[DR_BUILD_MAX_PARAMS]) {
  g_return_val_if_fail(b->n_params <= DR_BUILD_MAX_PARAMS, FALSE);
  for (guint i = 0; i < DR_BUILD_MAX_PARAMS; i++) slot[i] = -1;
  b->arg_unknown = 0;
  b->arg_at = args->at;
  if (!args->given && missing_all(b, args)) return FALSE;
  for (guint i = 0; i < args->n; i++) {
    const char *name = args->names[i] ? args->names[i] : "";
    gint j = param_index(b, name, args->locs[i]);
    if (j < 0) {
      b->arg_unknown++;
    } else if (slot[j] >= 0) {
      report(b, args->locs[i], "key 'args'", "argument '%s' given twice", name);
      b->arg_unknown++;
    } else {
      slot[j] = (gint)i;
    }
  }
  return TRUE;
}

static void add_arg(DrBuild *b, const DrArg *a, gint access) {
  b->arg_access[b->n_args] = access;
  b->args[b->n_args++] = *a;
}

/* A left-out parameter: its default, or a "missing argument" report. */
static gboolean bind_default(DrBuild *b, guint32 i, DrLoc loc) {
  const DrParam *param = &b->params[i];
  if (!param->optional) {
    if (b->arg_unknown == 0)
      report(b, b->arg_at, NULL, "missing argument '%s' of %s", param->name, b->callee->str);
    return FALSE;
  }
  if (param->is_pointer || param->is_string) return TRUE;
  DrArg a = {.param = i, .loc = loc};
  if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
    a.kind = DR_ARG_INT;
    a.v.i = (gint64)param->def;
  } else {
    a.kind = DR_ARG_FLOAT;
    a.v.f = param->def;
  }
  add_arg(b, &a, -1);
  return TRUE;
}

static gboolean bind_pointer(DrBuild *b, const char *key, guint32 i, const DrBuildValue *v, DrLoc loc) {
  const DrParam *param = &b->params[i];
  gboolean host = b->node.op == DR_OP_HOST;
  if (v->kind != DR_BUILD_VALUE_SLICE) {
    report(b, loc, key, "expected a buffer slice");
    return FALSE;
  }
  DrAccess acc;
  if (!dr_build_resolve(b, key, &v->slice, loc, &acc)) return FALSE;
  const DrBuffer *buf = dr_graph_buffer(b->g, acc.buffer);
  if (!host && buf->where != DR_WHERE_DEVICE) {
    report(b, loc, key, "%s takes device buffers; '%s' is a host buffer", b->callee->str, buf->name);
    return FALSE;
  }
  if (host && buf->where == DR_WHERE_DEVICE) {
    report(b, loc, key, "%s runs on the CPU and needs a host buffer; '%s' lives on the device",
           b->callee->str, buf->name);
    return FALSE;
  }
  if (!param->any_type && buf->type != param->type) {
    report(b, loc, key, "%s wants %s elements, but buffer '%s' holds %s", b->callee->str,
           dr_elem_name(param->type), buf->name, dr_elem_name(buf->type));
    return FALSE;
  }
  DrArg a = {.param = i, .kind = DR_ARG_BUFFER, .loc = loc};
  add_arg(b, &a, (gint)b->n_accesses);
  dr_build_add_access(b, &acc, param->access);
  return TRUE;
}

static gboolean bind_scalar(DrBuild *b, const char *key, guint32 i, const DrBuildValue *v, DrLoc loc) {
  const DrParam *param = &b->params[i];
  DrArg a = {.param = i, .loc = loc};
  if (param->is_string) {
    if (v->kind != DR_BUILD_VALUE_STRING || v->s == NULL) {
      report(b, loc, key, "expected a string");
      return FALSE;
    }
    a.kind = DR_ARG_STRING;
    a.v.s = dr_graph_intern(b->g, v->s);
  } else if (param->type == DR_ELEM_I32 || param->type == DR_ELEM_I64) {
    /* The built-in host functions' integers (sleep's us) are counts. */
    gboolean count = b->node.op == DR_OP_HOST && b->node.callback == 0;
    gint64 lo = count ? 0 : param->type == DR_ELEM_I32 ? G_MININT32 : G_MININT64;
    gint64 hi = param->type == DR_ELEM_I32 ? G_MAXINT32 : G_MAXINT64;
    if (v->kind != DR_BUILD_VALUE_INT) {
      report(b, loc, key, "expected an integer");
      return FALSE;
    }
    if (v->i < lo || v->i > hi) {
      report(b, loc, key, "%" G_GINT64_FORMAT " is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
             v->i, lo, hi);
      return FALSE;
    }
    a.kind = DR_ARG_INT;
    a.v.i = v->i;
  } else {
    if (v->kind != DR_BUILD_VALUE_FLOAT && v->kind != DR_BUILD_VALUE_INT) {
      report(b, loc, key, "expected a number");
      return FALSE;
    }
    a.kind = DR_ARG_FLOAT;
    a.v.f = v->kind == DR_BUILD_VALUE_INT ? (double)v->i : v->f;
    if (!isfinite(a.v.f)) {
      report(b, loc, key, "not a finite number");
      return FALSE;
    }
  }
  add_arg(b, &a, -1);
  return TRUE;
}

gboolean dr_build_arg(DrBuild *b, guint32 param, const DrBuildValue *v, DrLoc loc) {
  g_return_val_if_fail(param < b->n_params, FALSE);
  if (v == NULL) return bind_default(b, param, loc);
  const char *key = quoted(b->scratch, "argument '", b->params[param].name);
  if (b->params[param].is_pointer) return bind_pointer(b, key, param, v, loc);
  return bind_scalar(b, key, param, v, loc);
}

/* ---- slices, copies, lifetimes ------------------------------------------------ */

char *dr_build_buffer_hint(const DrGraph *g, const char *name) {
  DrSuggest s;
  dr__suggest_init(&s, name);
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) dr__suggest_add(&s, dr_graph_buffer(g, i)->name);
  return dr__suggest_hint(&s);
}

/* The buffer `name`, or DR_NONE after an "unknown buffer" report. */
static DrId find_buffer(DrBuild *b, const char *key, const char *name, DrLoc loc) {
  DrId id = dr_graph_find_buffer(b->g, name);
  if (id != DR_NONE) return id;
  /* Past the error limit the report is only counted (the parser reads on
   * to count them all): skip the hint, O(buffers). */
  g_autofree char *hint = dr_diags_full(b->diags) ? g_strdup("") : dr_build_buffer_hint(b->g, name);
  report(b, loc, key, "unknown buffer '%s'%s", name, hint);
  return DR_NONE;
}

gboolean dr_build_resolve(DrBuild *b, const char *key, const DrBuildSlice *s, DrLoc loc, DrAccess *out) {
  if (s->buffer == NULL) {
    report(b, loc, key, "no buffer named");
    return FALSE;
  }
  DrId id = find_buffer(b, key, s->buffer, loc);
  if (id == DR_NONE) return FALSE;
  const DrBuffer *buf = dr_graph_buffer(b->g, id);
  guint64 end = s->end == DR_BUILD_SLICE_END ? buf->count : s->end;
  g_autofree char *spelt =
      s->text != NULL ? NULL
      : s->end == DR_BUILD_SLICE_END
          ? g_strdup_printf("%s[%" G_GUINT64_FORMAT ":]", s->buffer, s->begin)
          : g_strdup_printf("%s[%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT "]", s->buffer, s->begin, s->end);
  const char *text = s->text != NULL ? s->text : spelt;
  if (s->begin > end) {
    report(b, loc, key, "slice '%s' is reversed: start %" G_GUINT64_FORMAT " is after end %" G_GUINT64_FORMAT,
           text, s->begin, end);
    return FALSE;
  }
  if (end > buf->count) {
    report(b, loc, key, "slice '%s' is out of bounds: buffer '%s' has %" G_GUINT64_FORMAT " elements", text,
           buf->name, buf->count);
    return FALSE;
  }
  if (s->begin == end) {
    report(b, loc, key, "slice '%s' is empty", text);
    return FALSE;
  }
  *out = (DrAccess){.buffer = id, .begin = s->begin, .end = end, .loc = loc};
  return TRUE;
}

/* The bytes of `a` in *out; FALSE when they do not fit 64 bits (never for
 * a buffer that passed dr_build_buffer_count_ok, but a wrapped product
 * must not make two different lengths look equal). */
static gboolean access_bytes(const DrGraph *g, const DrAccess *a, guint64 *out) {
  return g_uint64_checked_mul(out, a->end - a->begin, dr_elem_size(dr_graph_buffer(g, a->buffer)->type));
}

gboolean dr_build_copy(DrBuild *b, const DrAccess *src, const DrAccess *dst) {
  guint64 sb, tb;
  gboolean sok = access_bytes(b->g, src, &sb), tok = access_bytes(b->g, dst, &tb);
  if (!sok || !tok) {
    const DrAccess *big = !sok ? src : dst;
    report(b, dst->loc, "key 'dst'",
           "copy lengths differ: %s is %" G_GUINT64_FORMAT " %s elements, 2^64 bytes or more",
           !sok ? "src" : "dst", big->end - big->begin,
           dr_elem_name(dr_graph_buffer(b->g, big->buffer)->type));
    return FALSE;
  }
  if (sb != tb) {
    report(b, dst->loc, "key 'dst'",
           "copy lengths differ: src is %" G_GUINT64_FORMAT " bytes, dst is %" G_GUINT64_FORMAT " bytes", sb,
           tb);
    return FALSE;
  }
  dr_build_add_access(b, src, DR_ACCESS_READ);
  dr_build_add_access(b, dst, DR_ACCESS_WRITE);
  return TRUE;
}

gboolean dr_build_lifetime(DrBuild *b, const char *name, DrLoc loc) {
  const char *op = dr_op_name(b->node.op);
  if (strchr(name, '[') != NULL) {
    report(b, loc, "key 'buffer'", "%s takes a whole buffer, not a slice", op);
    return FALSE;
  }
  DrId id = find_buffer(b, "key 'buffer'", name, loc);
  if (id == DR_NONE) return FALSE;
  const DrBuffer *buf = dr_graph_buffer(b->g, id);
  if (buf->where != DR_WHERE_DEVICE) {
    report(b, loc, "key 'buffer'", "%s takes device buffers only; '%s' is a host buffer", op, name);
    return FALSE;
  }
  b->node.buffer = id;
  DrAccess a = {.buffer = id, .begin = 0, .end = buf->count, .loc = loc};
  dr_build_add_access(b, &a, DR_ACCESS_WRITE);
  return TRUE;
}

/* ---- buffers and kernels ---------------------------------------------------- */

gboolean dr_build_buffer_count_ok(DrBuild *b, const char *name, DrElemType type, guint64 count,
                                  const char *key, DrLoc loc) {
  const guint64 most = G_GUINT64_CONSTANT(1) << 61;
  if (count < 1 || count > most) {
    dr_diags_error(b->diags, loc, "buffer '%s', key '%s': must be between 1 and 2^61", name, key);
    return FALSE;
  }
  guint64 bytes;
  if (g_uint64_checked_mul(&bytes, count, dr_elem_size(type)) && bytes <= most) return TRUE;
  dr_diags_error(b->diags, loc,
                 "buffer '%s', key '%s': %" G_GUINT64_FORMAT
                 " %s elements of %u bytes are more than 2^61 bytes, "
                 "the most a buffer holds",
                 name, key, count, dr_elem_name(type), dr_elem_size(type));
  return FALSE;
}

gboolean dr_build_buffer_tolerance_ok(DrBuild *b, const char *name, const char *key, double v, DrLoc loc) {
  if (isfinite(v) && v >= 0.0) return TRUE;
  dr_diags_error(b->diags, loc, "buffer '%s', key 'verify': %s must be a finite number >= 0", name, key);
  return FALSE;
}

DrId dr_build_add_buffer(DrBuild *b, const DrBuffer *buf) {
  if (buf->where != DR_WHERE_DEVICE && buf->device_set)
    dr_diags_error(b->diags, buf->device_loc,
                   "buffer '%s', key 'device': a host buffer is visible to every device; 'device' applies to "
                   "device buffers",
                   buf->name);
  DrId id = dr_graph_add_buffer(b->g, buf);
  if (id == DR_NONE) dr_diags_error(b->diags, buf->loc, "duplicate buffer '%s'", buf->name);
  return id;
}

void dr_build_check_whole_run_buffers(const DrGraph *g, DrDiags *diags) {
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const DrBuffer *b = dr_graph_buffer(g, i);
    DrId life = b->alloc_node != DR_NONE ? b->alloc_node : b->free_node;
    if (life == DR_NONE || (b->init == DR_INIT_NONE && b->save_path == NULL && b->verify == DR_VERIFY_EXACT))
      continue;
    const DrNode *n = dr_graph_node(g, life);
    dr_diags_error(diags, b->loc,
                   "buffer '%s': '%s' needs a buffer that lives for the whole run, but node '%s' %s it",
                   b->name,
                   b->init != DR_INIT_NONE ? "init"
                   : b->save_path != NULL  ? "save"
                                           : "verify",
                   n->id, n->op == DR_OP_ALLOC ? "allocates" : "frees");
    dr_diags_note(diags, n->loc, "node '%s' is here", n->id);
  }
}

/* Checks parameter i of `params` against the ones before it; `owner`:
 * "kernel 'k'" or "host function 'f'". */
static gboolean param_ok(DrBuild *b, const char *owner, const DrParam *params, guint32 i, DrLoc loc) {
  const DrParam *p = &params[i];
  if (!dr_build_name_ok(b, DR_NAME_PARAM, p->name ? p->name : "", owner, loc)) return FALSE;
  for (guint32 j = 0; j < i; j++)
    if (strcmp(params[j].name, p->name) == 0) {
      dr_diags_error(b->diags, loc, "%s, key 'params': parameter '%s' declared twice", owner, p->name);
      return FALSE;
    }
  gboolean scalar_ok =
      p->type == DR_ELEM_I32 || p->type == DR_ELEM_I64 || p->type == DR_ELEM_F32 || p->type == DR_ELEM_F64;
  if (!p->is_pointer && !scalar_ok) {
    dr_diags_error(b->diags, loc, "%s, parameter '%s': a scalar parameter is i32, i64, f32 or f64", owner,
                   p->name);
    return FALSE;
  }
  if ((guint)p->type >= DR_ELEM_N_TYPES || (guint)p->access >= DR_ACCESS_N_MODES) {
    dr_diags_error(b->diags, loc, "%s, parameter '%s': a bad type or access", owner, p->name);
    return FALSE;
  }
  return TRUE;
}

DrId dr_build_add_kernel(DrBuild *b, const DrKernelDecl *decl, const DrLoc *param_locs, DrLoc over_loc) {
  gboolean ok = TRUE;
  g_autofree char *owner = g_strdup_printf("kernel '%s'", decl->name);
  for (guint32 i = 0; i < decl->n_params; i++)
    ok = param_ok(b, owner, decl->params, i, param_locs ? param_locs[i] : decl->loc) && ok;
  if (!ok) return DR_NONE;
  const DrParam *over = decl->grid.over != DR_NONE ? &decl->params[decl->grid.over] : NULL;
  if (over != NULL && !over->is_pointer && over->type != DR_ELEM_I32 && over->type != DR_ELEM_I64) {
    dr_diags_error(
        b->diags, over_loc,
        "kernel '%s', grid, key 'over': names a floating-point parameter; use an integer or a pointer",
        decl->name);
    return DR_NONE;
  }
  DrId id = dr_graph_add_kernel(b->g, decl);
  if (id != DR_NONE) return id;
  const DrKernelDecl *other = dr_graph_kernel(b->g, dr_graph_find_kernel(b->g, decl->name));
  if (other->origin == DR_KERNEL_BUILTIN && other->api_def == NULL)
    dr_diags_error(b->diags, decl->loc, "kernel '%s': a built-in kernel has this name", decl->name);
  else
    dr_diags_error(b->diags, decl->loc, "duplicate kernel '%s'", decl->name);
  return DR_NONE;
}

/* ---- collectives ------------------------------------------------------------ */

gboolean dr_collective_counts_ok(DrOp op, guint32 nranks, guint64 src_count, guint64 dst_count,
                                 const char **want) {
  const char *w = NULL;
  switch (op) {
    case DR_OP_ALLGATHER:
      if (dst_count != src_count * nranks) w = "dst holds nranks times src's elements";
      break;
    case DR_OP_REDUCESCATTER:
      if (src_count != dst_count * nranks) w = "src holds nranks times dst's elements";
      break;
    case DR_OP_ALLTOALL:
      if (src_count != dst_count || src_count % nranks != 0)
        w = "src and dst hold the same number of elements, a multiple of nranks";
      break;
    case DR_OP_SEND:
    case DR_OP_RECV:
      break;
    default:
      if (src_count != dst_count) w = "src and dst hold the same number of elements";
      break;
  }
  if (want) *want = w;
  return w == NULL;
}

gboolean dr_build_reduce(DrBuild *b, const char *name, DrLoc loc) {
  DrReduceOp r;
  if (dr_reduce_from_name(name, &r)) {
    b->node.reduce = r;
    return TRUE;
  }
  DrSuggest sg;
  dr__suggest_init(&sg, name);
  for (guint i = 0; i < DR_N_REDUCES; i++) dr__suggest_add(&sg, dr_reduce_name((DrReduceOp)i));
  g_autofree char *hint = dr__suggest_hint(&sg);
  report(b, loc, "key 'reduce'", "unknown reduction '%s'%s", name,
         dr__suggest_best(&sg) ? hint : " (expected sum, prod, min, max or avg)");
  return FALSE;
}

static guint64 access_count(const DrAccess *a) { return a->end - a->begin; }

/* Participant i's src and dst: device buffers, not partly overlapping. */
static gboolean participant_ok(DrBuild *b, const DrAccess *src, const DrAccess *dst) {
  const DrAccess *both[2] = {src, dst};
  for (guint k = 0; k < 2; k++) {
    if (both[k] == NULL) continue;
    const DrBuffer *buf = dr_graph_buffer(b->g, both[k]->buffer);
    if (buf->where != DR_WHERE_DEVICE) {
      report(b, both[k]->loc, k == 0 ? "key 'src'" : "key 'dst'",
             "%s takes device buffers; '%s' is a host buffer (copy it to a device buffer first)",
             dr_op_name(b->node.op), buf->name);
      return FALSE;
    }
  }
  if (src == NULL || dst == NULL || src->buffer != dst->buffer) return TRUE;
  gboolean same = src->begin == dst->begin && src->end == dst->end;
  gboolean disjoint = src->end <= dst->begin || dst->end <= src->begin;
  if (!same && !disjoint) {
    report(b, dst->loc, "key 'dst'",
           "src and dst of one participant overlap; give the same range (in place) or disjoint ones");
    return FALSE;
  }
  return TRUE;
}

gboolean dr_build_collective(DrBuild *b, const DrAccess *src, const DrAccess *dst, guint n, gboolean per_rank,
                             DrLoc loc) {
  DrOp op = b->node.op;
  g_return_val_if_fail(DR_OP_IS_COLLECTIVE(op), FALSE);
  const char *key = op == DR_OP_RECV ? "key 'dst'" : "key 'src'";
  if (n == 0 || n > DR_MAX_DEVICES) {
    report(b, loc, key, "%s takes 1 to %d participants (one buffer per device), not %u", dr_op_name(op),
           DR_MAX_DEVICES, n);
    return FALSE;
  }
  g_return_val_if_fail(op == DR_OP_RECV || src != NULL, FALSE);
  g_return_val_if_fail(op == DR_OP_SEND || dst != NULL, FALSE);
  const DrAccess *first = src ? &src[0] : &dst[0];
  DrElemType type = dr_graph_buffer(b->g, first->buffer)->type;
  guint64 c_src = src ? access_count(&src[0]) : 0, c_dst = dst ? access_count(&dst[0]) : 0;
  gboolean ok = TRUE;
  for (guint i = 0; i < n; i++) {
    const DrAccess *si = src ? &src[i] : NULL, *di = dst ? &dst[i] : NULL;
    if (!participant_ok(b, si, di)) {
      ok = FALSE;
      continue;
    }
    const DrAccess *both[2] = {si, di};
    gboolean in_place = si && di && si->buffer == di->buffer && si->begin == di->begin && si->end == di->end;
    for (guint k = 0; k < (in_place ? 1u : 2u); k++) {
      if (both[k] == NULL) continue;
      const DrBuffer *buf = dr_graph_buffer(b->g, both[k]->buffer);
      const char *kk = k == 0 ? "key 'src'" : "key 'dst'";
      if (buf->type != type) {
        report(b, both[k]->loc, kk, "participants disagree on the element type: '%s' holds %s, '%s' holds %s",
               buf->name, dr_elem_name(buf->type), dr_graph_buffer(b->g, first->buffer)->name,
               dr_elem_name(type));
        ok = FALSE;
      } else if (access_count(both[k]) != (k == 0 ? c_src : c_dst)) {
        report(b, both[k]->loc, kk,
               "participants disagree on the size: %" G_GUINT64_FORMAT " elements here, %" G_GUINT64_FORMAT
               " in the first participant",
               access_count(both[k]), k == 0 ? c_src : c_dst);
        ok = FALSE;
      }
    }
  }
  const char *want = NULL;
  if (ok && src && dst && !per_rank && !dr_collective_counts_ok(op, n, c_src, c_dst, &want)) {
    report(b, dst[0].loc, "key 'dst'",
           "%s with %u participants: %s (src has %" G_GUINT64_FORMAT ", dst %" G_GUINT64_FORMAT ")",
           dr_op_name(op), n, want, c_src, c_dst);
    ok = FALSE;
  }
  if ((op == DR_OP_ALLGATHER || op == DR_OP_REDUCESCATTER || op == DR_OP_ALLTOALL) && ok && src && dst)
    for (guint i = 0; i < n; i++)
      if (src[i].buffer == dst[i].buffer) {
        report(b, dst[i].loc, "key 'dst'", "%s cannot run in place; give a separate dst", dr_op_name(op));
        ok = FALSE;
        break;
      }
  if (!ok) return FALSE;
  for (guint i = 0; i < n; i++) {
    if (src) dr_build_add_access(b, &src[i], DR_ACCESS_READ);
    if (dst) dr_build_add_access(b, &dst[i], DR_ACCESS_WRITE);
  }
  b->node.n_parts = n;
  b->node.per_rank = per_rank;
  return TRUE;
}

gboolean dr_build_collective_rank(DrBuild *b, const char *key, gint64 rank, DrLoc loc) {
  DrOp op = b->node.op;
  gint64 n = b->node.per_rank ? G_MAXINT32 : (gint64)b->node.n_parts;
  if (rank < 0 || (b->node.n_parts > 0 && rank >= n)) {
    report(b, loc, key,
           "rank %" G_GINT64_FORMAT " is out of range [0, %" G_GINT64_FORMAT "] (%s has %" G_GINT64_FORMAT
           " participants)",
           rank, n - 1, dr_op_name(op), n);
    return FALSE;
  }
  if (strcmp(key, "key 'peer'") == 0)
    b->node.peer = (gint32)rank;
  else
    b->node.root = (gint32)rank;
  return TRUE;
}
