/* sections.c: the top-level sections other than `nodes:` (internal.h):
 * `run`, `memory`, `buffers` and `kernels`, each entry's keys read with
 * the typed values of values.c and handed to the IR builder (ir/build.h),
 * which owns the naming rule and the buffer and kernel checks. Cost:
 * linear in the section. */
#include <stdlib.h>
#include <string.h>

#include "ir/suggest.h"
#include "parser/internal.h"

/* Reports "expected CHOICES" (a name table's spellings) at v. */
static void expected(DrParse *p, const DrYNode *v, const char *what, const char *key, const char *choices) {
  g_autofree char *msg = g_strconcat("expected ", choices, NULL);
  dr__parse_error_at(p, v, what, key, msg);
}

/* ---- run: and memory: -------------------------------------------------- */

#define RUN_KEY_LIST(X)             \
  X(MODE, "mode")                   \
  X(ITERATIONS, "iterations")       \
  X(WARMUP, "warmup")               \
  X(MAX_STREAMS, "max_streams")     \
  X(DEVICE, "device")               \
  X(FALLBACK, "fallback")           \
  X(DEVICE_LOOP, "device_loop")     \
  X(DEVICES, "devices")             \
  X(ISSUE_THREADS, "issue_threads") \
  X(GRAPH_CACHE, "graph_cache")

enum {
#define X(e, s) RUN_##e,
  RUN_KEY_LIST(X)
#undef X
      RUN_N_KEYS
};
static const char *const run_keys[] = {
#define X(e, s) s,
    RUN_KEY_LIST(X)
#undef X
};

/* run.devices: a list of distinct GPU numbers; run.device (`device_v`,
 * when given) must be one of them, else it becomes the first. */
static void parse_devices(DrParse *p, const DrYNode *v, const DrYNode *device_v) {
  DrRunConfig *r = &p->g->run;
  if (v->kind != DR_Y_SEQ || v->len == 0 || v->len > DR_MAX_DEVICES) {
    g_autofree char *msg = g_strdup_printf("a list of 1 to %d GPU numbers like [0, 1]", DR_MAX_DEVICES);
    dr__parse_wrong_type(p, "run", "devices", v, msg);
    return;
  }
  for (guint i = 0; i < v->len; i++) {
    gint64 d;
    if (!dr__parse_int(p, "run", "devices", v->u.items[i], NULL, 0, 1023, &d)) return;
    for (guint j = 0; j < r->n_devices; j++)
      if (r->devices[j] == d) {
        g_autofree char *msg = g_strdup_printf("device %" G_GINT64_FORMAT " is listed twice", d);
        dr__parse_error_at(p, v->u.items[i], "run", "devices", msg);
        return;
      }
    r->devices[r->n_devices++] = (gint32)d;
  }
  if (device_v == NULL) {
    r->device = r->devices[0];
  } else if (dr_graph_device_rank(p->g, r->device) < 0) {
    g_autofree char *msg = g_strdup_printf("device %d is not in run.devices", r->device);
    dr__parse_error_at(p, device_v, "run", "device", msg);
  }
}

void dr__parse_run(DrParse *p, const DrYNode *v) {
  if (!dr__parse_expect_map(p, "top level", "run", v)) return;
  const DrYNode *s[RUN_N_KEYS];
  dr__parse_map_slots(p, "run", v, run_keys, RUN_N_KEYS, s);
  DrRunConfig *r = &p->g->run;
  gint64 i;
  if (s[RUN_MODE] != NULL) {
    g_autofree char *m = NULL;
    if (dr__parse_string(p, "run", "mode", s[RUN_MODE], NULL, &m)) {
      if (!dr_mode_from_name(m, &r->mode)) expected(p, s[RUN_MODE], "run", "mode", dr_mode_choices());
    }
  }
  if (s[RUN_ITERATIONS] && dr__parse_int(p, "run", "iterations", s[RUN_ITERATIONS], NULL, 1, G_MAXINT32, &i))
    r->iterations = (guint32)i;
  if (s[RUN_WARMUP] && dr__parse_int(p, "run", "warmup", s[RUN_WARMUP], NULL, 0, G_MAXINT32, &i))
    r->warmup = (guint32)i;
  if (s[RUN_MAX_STREAMS] && dr__parse_int(p, "run", "max_streams", s[RUN_MAX_STREAMS], NULL, 1, 1024, &i)) {
    r->max_streams = (guint32)i;
    r->max_streams_set = TRUE;
  }
  if (s[RUN_ISSUE_THREADS] &&
      dr__parse_int(p, "run", "issue_threads", s[RUN_ISSUE_THREADS], NULL, 0, DR_ISSUE_THREADS_MAX, &i))
    r->issue_threads = (guint32)i;
  /* The bound of backends/cuda/graph_cache.h's DR_GRAPH_CACHE_MAX. */
  if (s[RUN_GRAPH_CACHE] && dr__parse_int(p, "run", "graph_cache", s[RUN_GRAPH_CACHE], NULL, 0, 64, &i))
    r->graph_cache = (guint32)i;
  if (s[RUN_DEVICE] && dr__parse_int(p, "run", "device", s[RUN_DEVICE], NULL, 0, 1023, &i))
    r->device = (gint32)i;
  if (s[RUN_DEVICES] != NULL) parse_devices(p, s[RUN_DEVICES], s[RUN_DEVICE]);
  if (s[RUN_FALLBACK] != NULL) {
    g_autofree char *f = NULL;
    if (dr__parse_string(p, "run", "fallback", s[RUN_FALLBACK], NULL, &f)) {
      DrFallback fb;
      if (dr_fallback_from_name(f, &fb))
        r->fallback_streams = fb == DR_FALLBACK_STREAMS;
      else
        expected(p, s[RUN_FALLBACK], "run", "fallback", dr_fallback_choices());
    }
  }
  if (s[RUN_DEVICE_LOOP] != NULL) {
    g_autofree char *d = NULL;
    if (dr__parse_string(p, "run", "device_loop", s[RUN_DEVICE_LOOP], NULL, &d)) {
      if (strcmp(d, "true") == 0 || strcmp(d, "false") == 0) {
        r->device_loop = strcmp(d, "true") == 0;
        r->device_loop_loc = DR_LOC(p, s[RUN_DEVICE_LOOP]);
      } else {
        expected(p, s[RUN_DEVICE_LOOP], "run", "device_loop", "true or false");
      }
    }
  }
}

static const char *const memory_keys[] = {"release_threshold", "limit", "reuse"};

void dr__parse_memory(DrParse *p, const DrYNode *v) {
  if (!dr__parse_expect_map(p, "top level", "memory", v)) return;
  const DrYNode *s[3];
  dr__parse_map_slots(p, "memory", v, memory_keys, 3, s);
  guint64 t;
  DrRunConfig *r = &p->g->run;
  if (s[0] && s[0]->kind == DR_Y_MAP) {
    /* per device: {DEVICE: SIZE} */
    if (s[0]->len > DR_MAX_DEVICES) {
      dr__parse_error_at(p, s[0], "memory", "release_threshold", "more devices than a process drives");
      return;
    }
    for (guint i = 0; i < s[0]->len; i++) {
      gint64 d;
      if (!dr__parse_int(p, "memory", "release_threshold", dr_ynode_key(s[0], i), NULL, 0, 1023, &d) ||
          !dr__parse_size(p, "memory", "release_threshold", dr_ynode_value(s[0], i), NULL, DR_SIZE_BYTES, &t))
        continue;
      r->device_thresholds[r->n_device_thresholds].device = (gint32)d;
      r->device_thresholds[r->n_device_thresholds].loc = DR_LOC(p, dr_ynode_key(s[0], i));
      r->device_thresholds[r->n_device_thresholds++].bytes = t;
    }
  } else if (s[0] && dr__parse_size(p, "memory", "release_threshold", s[0], NULL, DR_SIZE_BYTES, &t)) {
    r->release_threshold = t;
    r->release_threshold_set = TRUE;
  }
  if (s[1] && dr__parse_size(p, "memory", "limit", s[1], NULL, DR_SIZE_BYTES, &t)) {
    p->g->run.memory_limit = t;
    p->g->run.memory_limit_set = TRUE;
    p->g->run.memory_limit_loc = DR_LOC(p, s[1]);
  }
  if (s[2] != NULL) {
    g_autofree char *r = NULL;
    if (dr__parse_string(p, "memory", "reuse", s[2], NULL, &r)) {
      if (strcmp(r, "auto") == 0 || strcmp(r, "none") == 0)
        p->g->run.reuse = strcmp(r, "auto") == 0;
      else
        expected(p, s[2], "memory", "reuse", "auto or none");
    }
  }
}

/* ---- buffers: ---------------------------------------------------------- */

#define BUFFER_KEY_LIST(X) \
  X(TYPE, "type")          \
  X(COUNT, "count")        \
  X(BYTES, "bytes")        \
  X(WHERE, "where")        \
  X(INIT, "init")          \
  X(SAVE, "save")          \
  X(SCRATCH, "scratch")    \
  X(VERIFY, "verify")      \
  X(DEVICE, "device")      \
  X(PARAM, "param")

enum {
#define X(e, s) BUF_##e,
  BUFFER_KEY_LIST(X)
#undef X
      BUF_N_KEYS
};
static const char *const buffer_keys[] = {
#define X(e, s) s,
    BUFFER_KEY_LIST(X)
#undef X
};

static const char *resolve_path(DrParse *p, const char *path) {
  if (g_path_is_absolute(path)) return dr_graph_intern(p->g, path);
  g_autofree char *full = g_build_filename(p->g->base_dir, path, NULL);
  return dr_graph_intern(p->g, full);
}

const char *dr__parse_lib_path(DrParse *p, const char *lib) {
  /* Like dlopen: a name without '/' is the dynamic loader's to find. */
  if (strchr(lib, '/') == NULL) return dr_graph_intern(p->g, lib);
  return resolve_path(p, lib);
}

static const char *type_names(void) { return "u8, i32, i64, f16, bf16, f32 or f64"; }

static void parse_init(DrParse *p, const char *what, const DrYNode *v, DrBuffer *b) {
  if (v->kind == DR_Y_SCALAR && !dr__ynode_is_null(v)) {
    if (strcmp(v->u.text, "zeros") == 0)
      b->init = DR_INIT_ZEROS;
    else if (strcmp(v->u.text, "iota") == 0)
      b->init = DR_INIT_IOTA;
    else {
      DrSuggest s;
      dr__suggest_init(&s, v->u.text);
      dr__suggest_add(&s, "zeros");
      dr__suggest_add(&s, "iota");
      dr__suggest_add(&s, "random");
      dr__suggest_add(&s, "file");
      g_autofree char *hint = dr__suggest_hint(&s);
      g_autofree char *msg = g_strdup_printf(
          "unknown init '%s'%s", v->u.text,
          dr__suggest_best(&s) ? hint : " (expected zeros, iota, {random: SEED} or {file: PATH})");
      dr__parse_error_at(p, v, what, "init", msg);
    }
    return;
  }
  static const char *const init_keys[] = {"random", "file"};
  if (v->kind != DR_Y_MAP || v->len != 1) {
    dr__parse_wrong_type(p, what, "init", v, "zeros, iota, {random: SEED} or {file: PATH}");
    return;
  }
  int k = dr__parse_key(p, what, dr_ynode_key(v, 0), init_keys, 2);
  const DrYNode *val = dr_ynode_value(v, 0);
  if (k == 0) {
    guint64 seed;
    if (dr__parse_size(p, what, "random", val, NULL, DR_SIZE_COUNT, &seed)) {
      b->init = DR_INIT_RANDOM;
      b->init_seed = seed;
    }
  } else if (k == 1) {
    g_autofree char *path = NULL;
    if (dr__parse_string(p, what, "file", val, NULL, &path)) {
      b->init = DR_INIT_FILE;
      b->init_path = resolve_path(p, path);
      b->init_loc = DR_LOC(p, val);
    }
  }
}

/* `verify: exact | skip | {rtol: R, atol: A}` (each tolerance optional,
 * default 0, finite and >= 0). */
static void parse_verify(DrParse *p, const char *what, const DrYNode *v, DrBuffer *b) {
  static const char *const expect = "exact, skip or {rtol: R, atol: A}";
  if (v->kind == DR_Y_SCALAR && !dr__ynode_is_null(v)) {
    DrVerifyRule rule;
    if (dr_verify_rule_from_name(v->u.text, &rule) && rule != DR_VERIFY_TOLERANCE) {
      b->verify = rule;
    } else {
      g_autofree char *msg = g_strdup_printf("unknown rule '%s' (expected %s)", v->u.text, expect);
      dr__parse_error_at(p, v, what, "verify", msg);
    }
    return;
  }
  if (v->kind != DR_Y_MAP || v->len == 0) {
    dr__parse_wrong_type(p, what, "verify", v, expect);
    return;
  }
  static const char *const keys[] = {"rtol", "atol"};
  const DrYNode *s[2];
  if (dr__parse_map_slots(p, what, v, keys, 2, s) != 0) return;
  double tol[2] = {0.0, 0.0};
  gboolean ok = TRUE;
  for (int i = 0; i < 2; i++)
    if (s[i] != NULL)
      ok = dr__parse_float(p, what, keys[i], s[i], NULL, &tol[i]) &&
           dr_build_buffer_tolerance_ok(&p->build, b->name, keys[i], tol[i], DR_LOC(p, s[i])) && ok;
  if (!ok) return;
  b->verify = DR_VERIFY_TOLERANCE;
  b->verify_rtol = tol[0];
  b->verify_atol = tol[1];
}

/* `param: NAME`: the buffer holds run-time parameter NAME's value, one
 * i64 (an int parameter) or f64 (a float one) in device memory; its type
 * and count follow from that (given, they must agree), and it has no
 * init (the value is), is no scratch and no host buffer. Sets b->param,
 * b->type and b->count; FALSE after an error. */
static gboolean parse_param_buffer(DrParse *p, const char *what, const DrYNode *const *s, DrBuffer *b) {
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, what, "param", s[BUF_PARAM], NULL, &name)) return FALSE;
  const GArray *params = p->g->params;
  guint k = 0;
  while (k < params->len && strcmp(g_array_index(params, DrRunParam, k).name, name) != 0) k++;
  if (k == params->len) {
    g_autofree char *msg =
        g_strdup_printf("no run-time parameter '%s' (declare it in 'params:', before 'buffers:')", name);
    dr__parse_error_at(p, s[BUF_PARAM], what, "param", msg);
    return FALSE;
  }
  const DrRunParam *rp = &g_array_index(params, DrRunParam, k);
  DrElemType want = rp->type == DR_RUN_PARAM_INT ? DR_ELEM_I64 : DR_ELEM_F64;
  gboolean ok = TRUE;
  if (s[BUF_TYPE] != NULL && b->type != want) {
    g_autofree char *msg = g_strdup_printf("a buffer holding %s parameter '%s' has type %s, not %s",
                                           rp->type == DR_RUN_PARAM_INT ? "int" : "float", name,
                                           dr_elem_name(want), dr_elem_name(b->type));
    dr__parse_error_at(p, s[BUF_TYPE], what, "type", msg);
    ok = FALSE;
  }
  const DrYNode *size = s[BUF_COUNT] ? s[BUF_COUNT] : s[BUF_BYTES];
  if (size != NULL && b->count != 1) {
    dr__parse_error_at(p, size, what, s[BUF_COUNT] ? "count" : "bytes",
                       "a buffer holding a run-time parameter has exactly one element");
    ok = FALSE;
  }
  static const int refused[] = {BUF_INIT, BUF_SCRATCH, BUF_WHERE};
  static const char *const why[] = {"its contents are the parameter's value",
                                    "it keeps the value between runs", "it lives in device memory"};
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++)
    if (s[refused[i]] != NULL && (refused[i] != BUF_WHERE || b->where != DR_WHERE_DEVICE)) {
      g_autofree char *msg = g_strdup_printf("not with 'param' (%s)", why[i]);
      dr__parse_error_at(p, s[refused[i]], what, buffer_keys[refused[i]], msg);
      ok = FALSE;
    }
  b->type = want;
  b->count = 1;
  b->param = k + 1;
  return ok;
}

static void parse_buffer(DrParse *p, const DrYNode *key, const DrYNode *v) {
  const char *name = key->u.text;
  g_autofree char *what = g_strdup_printf("buffer '%s'", name);
  if (!dr_build_name_ok(&p->build, DR_NAME_BUFFER, name, NULL, DR_LOC(p, key))) return;
  if (!dr__parse_expect_map(p, what, NULL, v)) return;
  const DrYNode *s[BUF_N_KEYS];
  guint unknown = dr__parse_map_slots(p, what, v, buffer_keys, BUF_N_KEYS, s);
  DrBuffer b = {.name = name, .loc = DR_LOC(p, key), .type = DR_ELEM_U8, .where = DR_WHERE_DEVICE};
  gboolean ok = TRUE;
  if (s[BUF_TYPE] != NULL) {
    g_autofree char *t = NULL;
    if (!dr__parse_string(p, what, "type", s[BUF_TYPE], NULL, &t))
      ok = FALSE;
    else if (!dr_elem_from_name(t, &b.type)) {
      g_autofree char *msg = g_strdup_printf("unknown element type '%s' (expected %s)", t, type_names());
      dr__parse_error_at(p, s[BUF_TYPE], what, "type", msg);
      ok = FALSE;
    }
  }
  if (s[BUF_COUNT] != NULL && s[BUF_BYTES] != NULL) {
    dr__parse_error_at(p, s[BUF_BYTES], what, "bytes", "give either 'count' or 'bytes', not both");
    ok = FALSE;
  } else if (s[BUF_PARAM] != NULL && s[BUF_COUNT] == NULL && s[BUF_BYTES] == NULL) {
    b.count = 1; /* one element: the parameter's value */
  } else if (s[BUF_COUNT] != NULL) {
    ok = dr__parse_size(p, what, "count", s[BUF_COUNT], &p->param_max_env, DR_SIZE_COUNT, &b.count) && ok;
  } else if (s[BUF_BYTES] != NULL) {
    guint64 bytes;
    if (dr__parse_size(p, what, "bytes", s[BUF_BYTES], &p->param_max_env, DR_SIZE_BYTES, &bytes)) {
      guint es = dr_elem_size(b.type);
      if (bytes % es != 0) {
        g_autofree char *msg = g_strdup_printf(
            "%" G_GUINT64_FORMAT " bytes is not a whole number of %s elements", bytes, dr_elem_name(b.type));
        dr__parse_error_at(p, s[BUF_BYTES], what, "bytes", msg);
        ok = FALSE;
      }
      b.count = bytes / es;
    } else {
      ok = FALSE;
    }
  } else {
    if (unknown == 0) dr_diags_error(p->diags, DR_LOC(p, key), "%s: missing key 'count' (or 'bytes')", what);
    ok = FALSE;
  }
  if (ok && (s[BUF_COUNT] != NULL || s[BUF_BYTES] != NULL))
    dr_build_buffer_count_ok(&p->build, name, b.type, b.count, s[BUF_COUNT] ? "count" : "bytes",
                             DR_LOC(p, s[BUF_COUNT] ? s[BUF_COUNT] : s[BUF_BYTES]));
  if (s[BUF_WHERE] != NULL) {
    g_autofree char *w = NULL;
    if (dr__parse_string(p, what, "where", s[BUF_WHERE], NULL, &w)) {
      if (!dr_where_from_name(w, &b.where)) expected(p, s[BUF_WHERE], what, "where", dr_where_choices());
    }
  }
  gint64 dev;
  if (s[BUF_DEVICE] != NULL && dr__parse_int(p, what, "device", s[BUF_DEVICE], NULL, 0, 1023, &dev)) {
    b.device = (gint32)dev;
    b.device_set = TRUE;
    b.device_loc = DR_LOC(p, s[BUF_DEVICE]);
  }
  if (s[BUF_INIT] != NULL) parse_init(p, what, s[BUF_INIT], &b);
  if (s[BUF_SAVE] != NULL) {
    g_autofree char *path = NULL;
    if (dr__parse_string(p, what, "save", s[BUF_SAVE], NULL, &path)) b.save_path = resolve_path(p, path);
  }
  if (s[BUF_SCRATCH] != NULL) {
    g_autofree char *v = NULL;
    if (dr__parse_string(p, what, "scratch", s[BUF_SCRATCH], NULL, &v)) {
      if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
        b.scratch = strcmp(v, "true") == 0;
      else
        expected(p, s[BUF_SCRATCH], what, "scratch", "true or false");
    }
    /* Scratch contents mean nothing between uses: no init, no save. */
    if (b.scratch && (s[BUF_INIT] != NULL || s[BUF_SAVE] != NULL || b.where != DR_WHERE_DEVICE))
      dr__parse_error_at(p, s[BUF_SCRATCH], what, "scratch",
                         "a scratch buffer is a device buffer with no 'init' and no 'save' (its contents "
                         "mean nothing between its uses, and 'memory: {reuse: auto}' may share its storage)");
  }
  if (s[BUF_VERIFY] != NULL) parse_verify(p, what, s[BUF_VERIFY], &b);
  if (s[BUF_PARAM] != NULL && !parse_param_buffer(p, what, s, &b)) return;
  dr_build_add_buffer(&p->build, &b);
}

void dr__parse_buffers(DrParse *p, const DrYNode *v) {
  p->seen_buffers = TRUE;
  if (dr__ynode_is_null(v)) return;
  if (!dr__parse_expect_map(p, "top level", "buffers", v)) return;
  const GArray *uses = dr__yreader_entry_aliases(p->reader);
  for (guint i = 0; i < v->len; i++) {
    guint first = dr_diags_len(p->diags);
    parse_buffer(p, dr_ynode_key(v, i), dr_ynode_value(v, i));
    DrLoc to = i + 1 < v->len ? DR_LOC(p, dr_ynode_key(v, i + 1)) : DR_LOC_NONE;
    dr__parse_alias_notes(p, first, DR_LOC(p, dr_ynode_key(v, i)), to,
                          (const DrYAliasUse *)(gconstpointer)uses->data, uses->len);
  }
}

/* ---- kernels: ---------------------------------------------------------- */

#define KERNEL_KEY_LIST(X)        \
  X(SOURCE, "source")             \
  X(PTX, "ptx")                   \
  X(CUBIN, "cubin")               \
  X(FATBIN, "fatbin")             \
  X(ENTRY, "entry")               \
  X(NAME, "name")                 \
  X(PARAMS, "params")             \
  X(GRID, "grid")                 \
  X(INCLUDE_DIRS, "include_dirs") \
  X(DEFINES, "defines")           \
  X(HOST_TWIN, "host_twin")

enum {
#define X(e, s) KER_##e,
  KERNEL_KEY_LIST(X)
#undef X
      KER_N_KEYS
};
static const char *const kernel_keys[] = {
#define X(e, s) s,
    KERNEL_KEY_LIST(X)
#undef X
};

#define DR_MAX_PARAMS 64

static const char *const param_keys[] = {"name", "type", "access"};

gboolean dr__parse_param(DrParse *p, const char *what, const DrYNode *v, DrParam *out) {
  if (!dr__parse_expect_map(p, what, "params", v)) return FALSE;
  const DrYNode *s[3];
  g_autofree char *pwhat = g_strdup_printf("%s, parameter", what);
  dr__parse_map_slots(p, pwhat, v, param_keys, 3, s);
  memset(out, 0, sizeof *out);
  if (s[0] == NULL || s[1] == NULL) {
    dr__parse_missing(p, DR_LOC(p, v), pwhat, s[0] == NULL ? "name" : "type");
    return FALSE;
  }
  g_autofree char *name = NULL, *type = NULL;
  if (!dr__parse_string(p, pwhat, "name", s[0], NULL, &name)) return FALSE;
  if (!dr__parse_string(p, pwhat, "type", s[1], NULL, &type)) return FALSE;
  gsize tl = strlen(type);
  out->is_pointer = tl > 0 && type[tl - 1] == '*';
  if (out->is_pointer) type[tl - 1] = '\0';
  gboolean scalar_ok = strcmp(type, "i32") == 0 || strcmp(type, "i64") == 0 || strcmp(type, "f32") == 0 ||
                       strcmp(type, "f64") == 0;
  if (!dr_elem_from_name(type, &out->type) || (!out->is_pointer && !scalar_ok)) {
    g_autofree char *msg = g_strdup_printf(
        "parameter '%s': unknown type '%s%s' (expected a pointer like f32* or a scalar i32, i64, f32, f64)",
        name, type, out->is_pointer ? "*" : "");
    dr__parse_error_at(p, s[1], what, "type", msg);
    return FALSE;
  }
  out->access = DR_ACCESS_READ_WRITE;
  if (s[2] != NULL) {
    g_autofree char *a = NULL;
    if (!dr__parse_string(p, pwhat, "access", s[2], NULL, &a)) return FALSE;
    if (!out->is_pointer) {
      g_autofree char *msg = g_strdup_printf("parameter '%s' is a scalar; only pointers take 'access'", name);
      dr__parse_error_at(p, s[2], what, "access", msg);
      return FALSE;
    }
    if (!dr_access_mode_from_name(a, &out->access)) {
      dr__parse_error_at(p, s[2], what, "access", "expected read, write or readwrite");
      return FALSE;
    }
  }
  out->name = dr_graph_intern(p->g, name);
  return TRUE;
}

/* Exactly one of source/ptx/cubin/fatbin, its path resolved into k. */
static gboolean kernel_code(DrParse *p, const char *what, const DrYNode *key, const DrYNode **s,
                            guint unknown, DrKernelDecl *k) {
  gboolean ok = TRUE;
  const char **code[] = {&k->source, &k->ptx, &k->cubin, &k->fatbin};
  guint n_code = 0;
  for (guint i = 0; i < 4; i++) {
    if (s[KER_SOURCE + i] == NULL) continue;
    g_autofree char *path = NULL;
    if (++n_code > 1) {
      dr__parse_error_at(p, s[KER_SOURCE + i], what, kernel_keys[KER_SOURCE + i],
                         "give exactly one of 'source', 'ptx', 'cubin' or 'fatbin'");
      ok = FALSE;
    } else if (dr__parse_string(p, what, kernel_keys[KER_SOURCE + i], s[KER_SOURCE + i], NULL, &path)) {
      *code[i] = resolve_path(p, path);
    } else {
      ok = FALSE;
    }
  }
  if (n_code == 0 && unknown == 0)
    dr_diags_error(p->diags, DR_LOC(p, key), "%s: missing key 'source' (or 'ptx', 'cubin', 'fatbin')", what);
  return ok && n_code > 0;
}

/* `params:` into params/locs (DR_MAX_PARAMS each); k->n_params counts them. */
static gboolean kernel_params(DrParse *p, const char *what, const DrYNode *key, const DrYNode *v,
                              guint unknown, DrKernelDecl *k, DrParam *params, DrLoc *locs) {
  if (v == NULL) {
    if (unknown == 0) dr__parse_missing(p, DR_LOC(p, key), what, "params");
    return FALSE;
  }
  if (v->kind != DR_Y_SEQ) {
    dr__parse_wrong_type(p, what, "params", v, "a list of parameters");
    return FALSE;
  }
  if (v->len > DR_MAX_PARAMS) {
    dr__parse_error_at(p, v, what, "params", "more than 64 parameters");
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < v->len; i++) {
    const DrYNode *pv = v->u.items[i];
    if (!dr__parse_param(p, what, pv, &params[k->n_params])) {
      ok = FALSE;
      continue;
    }
    locs[k->n_params++] = DR_LOC(p, pv);
  }
  k->params = params;
  return ok;
}

/* `grid: {over, block}` into k->grid; *over_loc: where `over` is. */
static gboolean kernel_grid(DrParse *p, const char *what, const DrYNode *v, DrKernelDecl *k,
                            DrLoc *over_loc) {
  if (!dr__parse_expect_map(p, what, "grid", v)) return TRUE;
  static const char *const grid_keys[] = {"over", "block"};
  const DrYNode *gs[2];
  g_autofree char *gwhat = g_strdup_printf("%s, grid", what);
  dr__parse_map_slots(p, gwhat, v, grid_keys, 2, gs);
  gboolean ok = TRUE;
  g_autofree char *over = NULL;
  if (gs[0] != NULL && dr__parse_string(p, gwhat, "over", gs[0], NULL, &over)) {
    for (guint j = 0; j < k->n_params; j++)
      if (strcmp(k->params[j].name, over) == 0) k->grid.over = j;
    if (k->grid.over == DR_NONE) {
      DrSuggest sg;
      dr__suggest_init(&sg, over);
      for (guint j = 0; j < k->n_params; j++) dr__suggest_add(&sg, k->params[j].name);
      g_autofree char *hint = dr__suggest_hint(&sg);
      g_autofree char *msg = g_strdup_printf("unknown parameter '%s'%s", over, hint);
      dr__parse_error_at(p, gs[0], gwhat, "over", msg);
      ok = FALSE;
    }
    *over_loc = DR_LOC(p, gs[0]);
  }
  gint64 block;
  if (gs[1] != NULL) {
    if (dr__parse_int(p, gwhat, "block", gs[1], NULL, 1, 1024, &block))
      k->grid.block = (guint32)block;
    else
      ok = FALSE;
  }
  return ok;
}

#define DR_MAX_NVRTC_LIST 64

/* TRUE when `d` is NAME or NAME=VALUE with NAME a C identifier. */
static gboolean define_ok(const char *d) {
  if (!(g_ascii_isalpha(d[0]) || d[0] == '_')) return FALSE;
  const char *q = d;
  while (g_ascii_isalnum(*q) || *q == '_') q++;
  return *q == '\0' || *q == '=';
}

/* `include_dirs:` or `defines:` (key KER_INCLUDE_DIRS / KER_DEFINES), a
 * list of strings, into out[0..*n) (DR_MAX_NVRTC_LIST of them, newly
 * allocated for defines, interned for the resolved directories). Only a
 * `source:` kernel is compiled, so only it takes them. */
static gboolean kernel_nvrtc_list(DrParse *p, const char *what, int key, const DrYNode *v,
                                  const DrKernelDecl *k, char **owned, const char **out, guint32 *n) {
  const char *name = kernel_keys[key];
  if (k->source == NULL && (k->ptx || k->cubin || k->fatbin)) {
    g_autofree char *msg =
        g_strdup_printf("'%s' applies only to a 'source:' kernel (NVRTC compiles it)", name);
    dr__parse_error_at(p, v, what, name, msg);
    return FALSE;
  }
  if (v->kind != DR_Y_SEQ) {
    dr__parse_wrong_type(p, what, name, v,
                         key == KER_DEFINES ? "a list of NAME or NAME=VALUE" : "a list of directories");
    return FALSE;
  }
  if (v->len > DR_MAX_NVRTC_LIST) {
    g_autofree char *msg = g_strdup_printf("more than %d entries", DR_MAX_NVRTC_LIST);
    dr__parse_error_at(p, v, what, name, msg);
    return FALSE;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < v->len; i++) {
    char *text = NULL;
    if (!dr__parse_string(p, what, name, v->u.items[i], NULL, &text)) {
      ok = FALSE;
      continue;
    }
    if (key == KER_DEFINES && !define_ok(text)) {
      g_autofree char *msg = g_strdup_printf(
          "'%s' is not NAME or NAME=VALUE (NAME: letters, digits, '_', not starting with a digit)", text);
      dr__parse_error_at(p, v->u.items[i], what, name, msg);
      g_free(text);
      ok = FALSE;
      continue;
    }
    if (key == KER_INCLUDE_DIRS && text[0] == '\0') {
      dr__parse_error_at(p, v->u.items[i], what, name, "an empty directory name");
      g_free(text);
      ok = FALSE;
      continue;
    }
    if (key == KER_INCLUDE_DIRS) {
      out[(*n)++] = resolve_path(p, text);
      g_free(text);
    } else {
      owned[*n] = text;
      out[(*n)++] = text;
    }
  }
  return ok;
}

#define DR_MAX_NAME_EXPR 1024

/* `name:`, a C++ name expression for NVRTC ("reduce<float, 256>"), into
 * *out (g_free). Only a `source:` kernel is compiled, so only it takes one,
 * and not with `entry:`, which names an extern "C" function instead.
 * Whether it names a __global__ function is NVRTC's to say, when the
 * CUDA backend compiles it. */
static gboolean kernel_name_expr(DrParse *p, const char *what, const DrYNode **s, const DrKernelDecl *k,
                                 char **out) {
  const DrYNode *v = s[KER_NAME];
  if (k->source == NULL && (k->ptx || k->cubin || k->fatbin)) {
    dr__parse_error_at(p, v, what, "name",
                       "'name' applies only to a 'source:' kernel (NVRTC instantiates it); a ptx, cubin or "
                       "fatbin kernel names its function with 'entry'");
    return FALSE;
  }
  if (s[KER_ENTRY] != NULL) {
    dr__parse_error_at(p, v, what, "name",
                       "give 'name' (a C++ name expression, e.g. \"reduce<float, 256>\") or 'entry' (an "
                       "extern \"C\" function), not both");
    return FALSE;
  }
  g_autofree char *text = NULL;
  if (!dr__parse_string(p, what, "name", v, NULL, &text)) return FALSE;
  const char *bad = NULL;
  gboolean show = FALSE; /* the text is worth repeating in the message */
  if (g_strstrip(text)[0] == '\0') {
    bad = "an empty name expression";
  } else if (strlen(text) > DR_MAX_NAME_EXPR) {
    bad = "a name expression longer than 1024 characters";
  } else if (!(g_ascii_isalpha(text[0]) || text[0] == '_' || text[0] == ':')) {
    bad = "a name expression starts with a function's name (letters, digits, '_', '::')";
    show = TRUE;
  }
  for (const char *c = text; bad == NULL && *c; c++)
    if ((guchar)*c < 0x20 || *c == 0x7f)
      bad = "a name expression is one line without control characters (a tab, a line break)";
  if (bad != NULL) {
    g_autofree char *msg = show ? g_strdup_printf("'%s': %s", text, bad) : g_strdup(bad);
    dr__parse_error_at(p, v, what, "name", msg);
    return FALSE;
  }
  *out = g_steal_pointer(&text);
  return TRUE;
}

/* `host_twin: {lib: PATH, fn: SYMBOL}` into k (the library is opened by
 * the library's load, lib/hostlib.c). */
static gboolean kernel_host_twin(DrParse *p, const char *what, const DrYNode *v, DrKernelDecl *k, char **lib,
                                 char **fn) {
  if (!dr__parse_expect_map(p, what, "host_twin", v)) return FALSE;
  static const char *const twin_keys[] = {"lib", "fn"};
  const DrYNode *t[2];
  g_autofree char *twhat = g_strdup_printf("%s, host_twin", what);
  guint typos = dr__parse_map_slots(p, twhat, v, twin_keys, 2, t);
  if (t[0] == NULL || t[1] == NULL) {
    if (typos == 0) dr__parse_missing(p, DR_LOC(p, v), twhat, t[0] == NULL ? "lib" : "fn");
    return FALSE;
  }
  if (!dr__parse_string(p, twhat, "lib", t[0], NULL, lib) ||
      !dr__parse_string(p, twhat, "fn", t[1], NULL, fn))
    return FALSE;
  if ((*lib)[0] == '\0' || (*fn)[0] == '\0') {
    dr__parse_error_at(p, (*lib)[0] == '\0' ? t[0] : t[1], twhat, (*lib)[0] == '\0' ? "lib" : "fn",
                       "is empty");
    return FALSE;
  }
  k->twin_lib = *lib;
  k->twin_path = dr__parse_lib_path(p, *lib);
  k->twin_fn = *fn;
  k->twin_lib_loc = DR_LOC(p, t[0]);
  k->twin_fn_loc = DR_LOC(p, t[1]);
  return TRUE;
}

static void parse_kernel(DrParse *p, const DrYNode *key, const DrYNode *v) {
  const char *name = key->u.text;
  g_autofree char *what = g_strdup_printf("kernel '%s'", name);
  if (!dr_build_name_ok(&p->build, DR_NAME_KERNEL, name, NULL, DR_LOC(p, key))) return;
  if (!dr__parse_expect_map(p, what, NULL, v)) return;
  const DrYNode *s[KER_N_KEYS];
  guint unknown = dr__parse_map_slots(p, what, v, kernel_keys, KER_N_KEYS, s);
  DrKernelDecl k = {
      .name = name, .loc = DR_LOC(p, key), .origin = DR_KERNEL_USER, .grid = {.over = DR_NONE, .block = 256}};
  gboolean ok = kernel_code(p, what, key, s, unknown, &k);
  k.entry = name;
  g_autofree char *entry = NULL;
  if (s[KER_ENTRY] != NULL) {
    if (dr__parse_string(p, what, "entry", s[KER_ENTRY], NULL, &entry))
      k.entry = entry;
    else
      ok = FALSE;
  }
  g_autofree char *name_expr = NULL;
  if (s[KER_NAME] != NULL) {
    if (kernel_name_expr(p, what, s, &k, &name_expr)) {
      k.name_expr = name_expr;
      k.entry = NULL;
    } else {
      ok = FALSE;
    }
  }
  DrParam params[DR_MAX_PARAMS];
  DrLoc param_locs[DR_MAX_PARAMS];
  DrLoc over_loc = DR_LOC(p, key);
  ok = kernel_params(p, what, key, s[KER_PARAMS], unknown, &k, params, param_locs) && ok;
  if (s[KER_GRID] != NULL) ok = kernel_grid(p, what, s[KER_GRID], &k, &over_loc) && ok;
  const char *dirs[DR_MAX_NVRTC_LIST], *defines[DR_MAX_NVRTC_LIST];
  char *owned[DR_MAX_NVRTC_LIST] = {NULL};
  k.include_dirs = dirs;
  k.defines = defines;
  if (s[KER_INCLUDE_DIRS] != NULL)
    ok = kernel_nvrtc_list(p, what, KER_INCLUDE_DIRS, s[KER_INCLUDE_DIRS], &k, NULL, dirs,
                           &k.n_include_dirs) &&
         ok;
  if (s[KER_DEFINES] != NULL)
    ok = kernel_nvrtc_list(p, what, KER_DEFINES, s[KER_DEFINES], &k, owned, defines, &k.n_defines) && ok;
  g_autofree char *twin_lib = NULL, *twin_fn = NULL;
  if (s[KER_HOST_TWIN] != NULL)
    ok = kernel_host_twin(p, what, s[KER_HOST_TWIN], &k, &twin_lib, &twin_fn) && ok;
  if (ok) dr_build_add_kernel(&p->build, &k, param_locs, over_loc);
  for (guint32 i = 0; i < k.n_defines; i++) g_free(owned[i]);
}

void dr__parse_kernels(DrParse *p, const DrYNode *v) {
  p->seen_kernels = TRUE;
  if (dr__ynode_is_null(v)) return;
  if (!dr__parse_expect_map(p, "top level", "kernels", v)) return;
  const GArray *uses = dr__yreader_entry_aliases(p->reader);
  for (guint i = 0; i < v->len; i++) {
    guint first = dr_diags_len(p->diags);
    parse_kernel(p, dr_ynode_key(v, i), dr_ynode_value(v, i));
    DrLoc to = i + 1 < v->len ? DR_LOC(p, dr_ynode_key(v, i + 1)) : DR_LOC_NONE;
    dr__parse_alias_notes(p, first, DR_LOC(p, dr_ynode_key(v, i)), to,
                          (const DrYAliasUse *)(gconstpointer)uses->data, uses->len);
  }
}
