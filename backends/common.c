/* common.c: what the host and CUDA executors share: the deterministic
 * buffer initialisation, element formatting (with f16/bf16 conversion),
 * kernel argument binding against the registry, and the built-in host
 * functions. Nothing here touches CUDA or threads. */
#include <math.h>
#include <string.h>

#include "backends/backend.h"

/* ---- numbers ------------------------------------------------------------ */

guint64 dr__splitmix64(guint64 *state) {
  guint64 z = (*state += G_GUINT64_CONSTANT(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

guint64 dr__fnv1a64(const void *data, gsize len) {
  const guint8 *p = data;
  guint64 h = G_GUINT64_CONSTANT(0xcbf29ce484222325);
  for (gsize i = 0; i < len; i++) {
    h ^= p[i];
    h *= G_GUINT64_CONSTANT(0x100000001b3);
  }
  return h;
}

static guint32 float_bits(float f) {
  guint32 u;
  memcpy(&u, &f, 4);
  return u;
}

static float bits_float(guint32 u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE binary16 from a float, round to nearest even. */
static guint16 float_to_f16(float f) {
  guint32 x = float_bits(f);
  guint32 sign = (x >> 16) & 0x8000;
  guint32 absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return (guint16)(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) return (guint16)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (absx < 0x38800000) {                                 /* subnormal half or zero */
    float a = bits_float(absx);
    /* a * 2^24 is the subnormal mantissa; rint rounds to nearest even. */
    return (guint16)(sign | (guint32)rintf(a * 16777216.0f));
  }
  guint32 mant = absx & 0x7fffff;
  guint32 exp = (absx >> 23) - 127 + 15;
  guint32 h = (exp << 10) | (mant >> 13);
  guint32 rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (guint16)(sign | h);
}

static float f16_to_float(guint16 h) {
  guint32 sign = (guint32)(h & 0x8000) << 16;
  guint32 exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    float f = (float)mant / 16777216.0f;
    return sign ? -f : f;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000 | (mant << 13));
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

static guint16 float_to_bf16(float f) {
  guint32 x = float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return (guint16)((x >> 16) | 0x40);
  guint32 lsb = (x >> 16) & 1;
  return (guint16)((x + 0x7fff + lsb) >> 16);
}

static float bf16_to_float(guint16 h) { return bits_float((guint32)h << 16); }

/* Stores `v` (integral for integer types) as element i of `dst`. */
static void store_elem(DrElemType type, void *dst, guint64 i, double v, gint64 iv) {
  switch (type) {
    case DR_ELEM_U8:
      ((guint8 *)dst)[i] = (guint8)(iv & 0xff);
      break;
    case DR_ELEM_I32:
      ((gint32 *)dst)[i] = (gint32)iv;
      break;
    case DR_ELEM_I64:
      ((gint64 *)dst)[i] = iv;
      break;
    case DR_ELEM_F16:
      ((guint16 *)dst)[i] = float_to_f16((float)v);
      break;
    case DR_ELEM_BF16:
      ((guint16 *)dst)[i] = float_to_bf16((float)v);
      break;
    case DR_ELEM_F32:
      ((float *)dst)[i] = (float)v;
      break;
    case DR_ELEM_F64:
      ((double *)dst)[i] = v;
      break;
    case DR_ELEM_N_TYPES:
      g_return_if_reached();
  }
}

void dr__elem_store(DrElemType type, void *dst, guint64 i, double v, gint64 iv) {
  store_elem(type, dst, i, v, iv);
}

void dr__elem_load(DrElemType type, const void *src, guint64 i, double *v, gint64 *iv) {
  switch (type) {
    case DR_ELEM_U8:
      *iv = ((const guint8 *)src)[i];
      break;
    case DR_ELEM_I32:
      *iv = ((const gint32 *)src)[i];
      break;
    case DR_ELEM_I64:
      *iv = ((const gint64 *)src)[i];
      break;
    case DR_ELEM_F16:
      *v = f16_to_float(((const guint16 *)src)[i]);
      return;
    case DR_ELEM_BF16:
      *v = bf16_to_float(((const guint16 *)src)[i]);
      return;
    case DR_ELEM_F32:
      *v = ((const float *)src)[i];
      return;
    case DR_ELEM_F64:
      *v = ((const double *)src)[i];
      return;
    case DR_ELEM_N_TYPES:
      g_return_if_reached();
  }
  *v = (double)*iv;
}

/* g_snprintf(buf, size, format, v) in the C locale (g_ascii_formatd
 * allocates nothing). */
static int float_snprint(char *buf, size_t size, const char *format, double v) {
  if (size == 0) return 0;
  g_ascii_formatd(buf, (gint)size, format, v);
  return (int)strlen(buf);
}

/* Writes element i as text into buf (snprintf semantics). No GLib
 * allocation: host functions call this on worker and CUDA callback threads. */
static int elem_snprint(char *buf, size_t size, DrElemType type, const void *data, guint64 i) {
  switch (type) {
    case DR_ELEM_U8:
      return g_snprintf(buf, size, "%u", ((const guint8 *)data)[i]);
    case DR_ELEM_I32:
      return g_snprintf(buf, size, "%d", ((const gint32 *)data)[i]);
    case DR_ELEM_I64:
      return g_snprintf(buf, size, "%" G_GINT64_FORMAT, ((const gint64 *)data)[i]);
    /* The C locale's digits whatever setlocale said: these values land in
     * the run report's "difference" and in host print output. */
    case DR_ELEM_F16:
      return float_snprint(buf, size, "%.9g", f16_to_float(((const guint16 *)data)[i]));
    case DR_ELEM_BF16:
      return float_snprint(buf, size, "%.9g", bf16_to_float(((const guint16 *)data)[i]));
    case DR_ELEM_F32:
      return float_snprint(buf, size, "%.9g", ((const float *)data)[i]);
    case DR_ELEM_F64:
      return float_snprint(buf, size, "%.17g", ((const double *)data)[i]);
    case DR_ELEM_N_TYPES:
      break;
  }
  return g_snprintf(buf, size, "?");
}

double dr__elem_value(DrElemType type, const void *data, guint64 i) {
  switch (type) {
    case DR_ELEM_U8:
      return ((const guint8 *)data)[i];
    case DR_ELEM_I32:
      return ((const gint32 *)data)[i];
    case DR_ELEM_I64:
      return (double)((const gint64 *)data)[i];
    case DR_ELEM_F16:
      return f16_to_float(((const guint16 *)data)[i]);
    case DR_ELEM_BF16:
      return bf16_to_float(((const guint16 *)data)[i]);
    case DR_ELEM_F32:
      return ((const float *)data)[i];
    case DR_ELEM_F64:
      return ((const double *)data)[i];
    case DR_ELEM_N_TYPES:
      break;
  }
  return NAN;
}

void dr__elem_format(DrElemType type, const void *data, guint64 i, GString *out) {
  char buf[64];
  elem_snprint(buf, sizeof buf, type, data, i);
  g_string_append(out, buf);
}

/* ---- buffer initialisation --------------------------------------------- */

guint64 dr__param_buffer_word(const DrGraph *graph, DrId buffer) {
  const DrBuffer *b = dr_graph_buffer(graph, buffer);
  g_return_val_if_fail(b->param > 0, 0);
  const DrRunParam *rp = &g_array_index(graph->params, DrRunParam, b->param - 1);
  guint64 word = 0;
  if (rp->type == DR_RUN_PARAM_INT)
    memcpy(&word, &rp->i, sizeof word);
  else
    memcpy(&word, &rp->f, sizeof word);
  return word;
}

gboolean dr__buffer_init(const DrGraph *graph, DrId buffer, void *dst, GError **error) {
  const DrBuffer *b = dr_graph_buffer(graph, buffer);
  guint64 bytes = dr_buffer_bytes(b);
  if (b->param) { /* a parameter's value, as its next run uses it */
    guint64 word = dr__param_buffer_word(graph, buffer);
    memcpy(dst, &word, sizeof word);
    return TRUE;
  }
  switch (b->init) {
    case DR_INIT_NONE:
    case DR_INIT_ZEROS:
      memset(dst, 0, bytes);
      return TRUE;
    case DR_INIT_IOTA:
      for (guint64 i = 0; i < b->count; i++) store_elem(b->type, dst, i, (double)i, (gint64)i);
      return TRUE;
    case DR_INIT_RANDOM: {
      guint64 state = b->init_seed;
      gboolean is_float = b->type == DR_ELEM_F16 || b->type == DR_ELEM_BF16 || b->type == DR_ELEM_F32 ||
                          b->type == DR_ELEM_F64;
      for (guint64 i = 0; i < b->count; i++) {
        guint64 z = dr__splitmix64(&state);
        if (is_float)
          store_elem(b->type, dst, i, (double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0, 0);
        else if (b->type == DR_ELEM_U8)
          store_elem(b->type, dst, i, 0, (gint64)(z % 256));
        else
          store_elem(b->type, dst, i, 0, (gint64)(z % 2001) - 1000);
      }
      return TRUE;
    }
    case DR_INIT_FILE: {
      /* The parser already resolved it against the pipeline's folder. */
      const char *path = b->init_path;
      g_autofree char *contents = NULL;
      gsize len = 0;
      g_autoptr(GError) local = NULL;
      if (!g_file_get_contents(path, &contents, &len, &local)) {
        g_set_error(error, DR_ERROR, DR_ERROR_IO, "buffer '%s': init file: %s", b->name, local->message);
        return FALSE;
      }
      if (len != bytes) {
        g_set_error(error, DR_ERROR, DR_ERROR_IO,
                    "buffer '%s': init file %s holds %" G_GSIZE_FORMAT
                    " bytes, the buffer %" G_GUINT64_FORMAT,
                    b->name, path, len, bytes);
        return FALSE;
      }
      memcpy(dst, contents, bytes);
      return TRUE;
    }
  }
  g_return_val_if_reached(FALSE);
}

/* ---- node helpers ------------------------------------------------------ */

static gboolean elem_is_float(DrElemType t) {
  return t == DR_ELEM_F16 || t == DR_ELEM_BF16 || t == DR_ELEM_F32 || t == DR_ELEM_F64;
}

const DrKernelDef *dr__kernel_def_of(const DrGraph *graph, DrId id) {
  const DrKernelDecl *decl = dr_graph_kernel(graph, dr_graph_node(graph, id)->kernel);
  /* Kernels registered through the C API (lib/nodes.c) carry their own
   * definition in decl->api_def instead of a registry index. */
  if (decl->api_def != NULL) return decl->api_def;
  /* A user kernel's host twin from a shared library (lib/hostlib.c). */
  if (decl->origin == DR_KERNEL_USER) return decl->twin;
  if (decl->origin != DR_KERNEL_BUILTIN || decl->builtin_index >= (guint32)dr_kernel_registry_len)
    return NULL;
  return &dr_kernel_registry[decl->builtin_index];
}

gboolean dr__kernel_call_bind(const DrGraph *graph, DrId id, void *const *bases, DrKernelCall *call,
                              GError **error) {
  const DrNode *n = dr_graph_node(graph, id);
  memset(call, 0, sizeof *call);
  const DrKernelDecl *decl = dr_graph_kernel(graph, n->kernel);
  const DrKernelDef *def = dr__kernel_def_of(graph, id);
  if (def == NULL && decl->origin != DR_KERNEL_BUILTIN) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME,
                "node '%s': user kernel '%s' has no host twin: it runs on the CUDA backend only", n->id,
                decl->name);
    return FALSE;
  }
  if (def == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': kernel '%s' is not in the registry", n->id,
                decl->name);
    return FALSE;
  }
  if (def->n_params > (int)G_N_ELEMENTS(call->args)) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': kernel '%s' has too many parameters", n->id,
                def->name);
    return FALSE;
  }
  call->def = def;
  gboolean bound[G_N_ELEMENTS(call->args)] = {0};
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *arg = dr_graph_arg(graph, i);
    if (arg->param >= (guint32)def->n_params) continue;
    const DrKParam *p = &def->params[arg->param];
    DrKValue *v = &call->args[arg->param];
    bound[arg->param] = TRUE;
    switch (arg->kind) {
      case DR_ARG_BUFFER: {
        const DrAccess *a = dr_graph_access(graph, arg->v.access);
        v->ptr = dr__slice_ptr(graph, bases, a);
        call->counts[arg->param] = a->end - a->begin;
        break;
      }
      case DR_ARG_INT:
        if (elem_is_float(p->type))
          v->f = (double)arg->v.i;
        else
          v->i = arg->v.i;
        break;
      case DR_ARG_FLOAT:
        if (elem_is_float(p->type))
          v->f = arg->v.f;
        else
          v->i = (int64_t)arg->v.f;
        break;
      case DR_ARG_STRING:
        break;
    }
  }
  for (int i = 0; i < def->n_params; i++) {
    if (bound[i]) continue;
    const DrKParam *p = &def->params[i];
    if (p->is_pointer || !p->optional) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': kernel '%s' parameter '%s' is not bound",
                  n->id, def->name, p->name);
      return FALSE;
    }
    if (elem_is_float(p->type))
      call->args[i].f = p->def;
    else
      call->args[i].i = (int64_t)p->def;
  }
  DrKLaunch *l = &call->launch;
  l->args = call->args;
  l->counts = call->counts;
  return dr__kernel_call_reshape(graph, id, call, error);
}

gboolean dr__kernel_call_reshape(const DrGraph *graph, DrId id, DrKernelCall *call, GError **error) {
  const DrNode *n = dr_graph_node(graph, id);
  const DrKernelDef *def = call->def;
  DrKLaunch *l = &call->launch;
  char msg[512] = {0};
  if (def->check && def->check(call->counts, call->args, msg) != 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "node '%s': kernel '%s': %s", n->id, def->name, msg);
    return FALSE;
  }
  dr_kernel_default_shape(def, call->counts, call->args, l->grid, l->block);
  if (n->block[0]) {
    /* Keep the covered thread count when only the block is given. */
    guint64 threads = (guint64)l->grid[0] * l->block[0];
    l->block[0] = n->block[0];
    l->block[1] = n->block[1] ? n->block[1] : 1;
    l->block[2] = n->block[2] ? n->block[2] : 1;
    l->grid[0] = (unsigned)CLAMP((threads + n->block[0] - 1) / n->block[0], 1, G_MAXINT32);
  }
  if (n->grid[0]) {
    l->grid[0] = n->grid[0];
    l->grid[1] = n->grid[1] ? n->grid[1] : 1;
    l->grid[2] = n->grid[2] ? n->grid[2] : 1;
  }
  l->shared = n->shared;
  return TRUE;
}

/* Binds the declared arguments of host function node n into call->fn
 * (allocated on the first bind). */
static void host_fn_bind(const DrGraph *graph, const DrNode *n, void *const *bases, DrHostCall *call) {
  const DrCallback *cb = &g_array_index(graph->callbacks, DrCallback, n->callback - 1);
  if (call->fn == NULL) {
    call->fn = g_malloc0(sizeof(DrHostFnBound) + sizeof(DrHostFnArg) * MAX(cb->n_params, 1));
    call->fn->a.abi_version = DR_HOST_FN_ABI_VERSION;
  }
  DrHostFnBound *f = call->fn;
  f->a.n_args = cb->n_params;
  f->a.args = f->args;
  f->a.node = n->id;
  f->a.user_data = cb->user_data;
  f->a.err = f->err;
  for (guint32 i = 0; i < cb->n_params; i++)
    f->args[i] = (DrHostFnArg){.name = cb->params[i].name,
                               .type = cb->params[i].type,
                               .is_pointer = cb->params[i].is_pointer,
                               .access = cb->params[i].access};
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *arg = dr_graph_arg(graph, i);
    if (arg->param >= cb->n_params) continue;
    DrHostFnArg *x = &f->args[arg->param];
    switch (arg->kind) {
      case DR_ARG_BUFFER: {
        const DrAccess *a = dr_graph_access(graph, arg->v.access);
        const DrBuffer *b = dr_graph_buffer(graph, a->buffer);
        x->ptr = dr__slice_ptr(graph, bases, a);
        x->count = a->end - a->begin;
        x->bytes = x->count * dr_elem_size(b->type);
        x->buffer = b->name;
        break;
      }
      case DR_ARG_INT: /* the builder gives float parameters DR_ARG_FLOAT */
        x->i = arg->v.i;
        break;
      case DR_ARG_FLOAT:
        x->f = arg->v.f;
        break;
      case DR_ARG_STRING:
        break;
    }
  }
}

void dr__host_calls_free(DrHostCall *calls, guint32 n) {
  if (calls == NULL) return;
  for (guint32 i = 0; i < n; i++) g_clear_pointer(&calls[i].fn, g_free);
}

void dr__host_call_bind(const DrGraph *graph, DrId id, void *const *bases, FILE *out, DrHostCall *call) {
  const DrNode *n = dr_graph_node(graph, id);
  DrHostFnBound *keep = call->node == id ? call->fn : NULL;
  if (call->fn != keep) g_free(call->fn);
  memset(call, 0, sizeof *call);
  call->fn = keep;
  call->graph = graph;
  call->node = id;
  call->out = out ? out : stdout;
  call->message = "";
  if (n->callback && g_array_index(graph->callbacks, DrCallback, n->callback - 1).fn == NULL) {
    host_fn_bind(graph, n, bases, call);
    return;
  }
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *arg = dr_graph_arg(graph, i);
    switch (arg->kind) {
      case DR_ARG_BUFFER: {
        const DrAccess *a = dr_graph_access(graph, arg->v.access);
        const DrBuffer *b = dr_graph_buffer(graph, a->buffer);
        call->data = dr__slice_ptr(graph, bases, a);
        call->count = a->end - a->begin;
        call->bytes = call->count * dr_elem_size(b->type);
        call->type = b->type;
        call->buffer_name = b->name;
        break;
      }
      case DR_ARG_STRING:
        call->message = arg->v.s;
        break;
      case DR_ARG_INT:
        call->sleep_us = arg->v.i;
        break;
      case DR_ARG_FLOAT:
        call->sleep_us = (gint64)arg->v.f;
        break;
    }
  }
}

/* Appends with snprintf semantics, keeping *len within size - 1. */
#define LINE_APPEND(line, len, ...)                                              \
  do {                                                                           \
    if ((len) < sizeof(line) - 1) {                                              \
      int dr__n = g_snprintf((line) + (len), sizeof(line) - (len), __VA_ARGS__); \
      (len) = MIN((len) + (size_t)MAX(dr__n, 0), sizeof(line) - 1);              \
    }                                                                            \
  } while (0)

gboolean dr__host_call_run(const DrHostCall *call) {
  /* A stack buffer, not a GString: this runs on worker threads and CUDA's
   * callback thread, where no allocator state should be shared. */
  const DrNode *n = dr_graph_node(call->graph, call->node);
  if (n->callback) {
    /* A C function added through the C API (lib/nodes.c) or from a shared
     * library (lib/hostlib.c). */
    const DrCallback *cb = &g_array_index(call->graph->callbacks, DrCallback, n->callback - 1);
    if (cb->fn != NULL) {
      cb->fn(cb->user_data);
      return TRUE;
    }
    DrHostFnBound *f = call->fn;
    if (g_atomic_int_get(&f->failed)) return FALSE;
    f->err[0] = '\0';
    int rc = -1;
    if (cb->call == NULL) /* a graph that did not go through the library's load */
      g_strlcpy(f->err, "its library was not opened", DR_HOST_FN_ERR_SIZE);
    else
      rc = cb->call(&f->a);
    f->a.iteration++;
    if (rc == 0) return TRUE;
    f->err[DR_HOST_FN_ERR_SIZE - 1] = '\0';
    if (f->err[0] == '\0') g_snprintf(f->err, DR_HOST_FN_ERR_SIZE, "returned %d", rc);
    g_atomic_int_set(&f->failed, 1);
    return FALSE;
  }
  char line[2048];
  size_t len = 0;
  switch (n->host_fn) {
    case DR_HOST_FN_PRINT:
      LINE_APPEND(line, len, "%s: %s", n->id, call->message);
      if (call->data) {
        LINE_APPEND(line, len, " %s[", call->buffer_name);
        for (guint64 i = 0; i < MIN(call->count, 8); i++) {
          char v[64];
          elem_snprint(v, sizeof v, call->type, call->data, i);
          LINE_APPEND(line, len, "%s%s", i ? ", " : "", v);
        }
        LINE_APPEND(line, len, "%s", call->count > 8 ? ", ...]" : "]");
      }
      break;
    case DR_HOST_FN_SLEEP:
      if (call->sleep_us > 0) g_usleep((gulong)call->sleep_us);
      return TRUE;
    case DR_HOST_FN_CHECKSUM:
      LINE_APPEND(line, len, "checksum %s %s 0x%016" G_GINT64_MODIFIER "x", n->id,
                  call->buffer_name ? call->buffer_name : "?",
                  dr__fnv1a64(call->data, call->data ? call->bytes : 0));
      break;
    case DR_N_HOST_FNS:
      return TRUE;
  }
  LINE_APPEND(line, len, "\n");
  fwrite(line, 1, len, call->out);
  fflush(call->out);
  return TRUE;
}
