/* parser.c: the pipeline parser's driver and its top-level sections
 * (parser.h): `dagrun`, `name`, `run`, `memory`, `buffers`, `kernels`, and
 * the typed-value helpers of internal.h. Nodes are in nodes.c.
 *
 * The top-level mapping and the `nodes:` mapping are streamed: each entry
 * is built as a small tree (events.c), converted and dropped. Nodes need
 * the buffers and kernels they name, so when a quick scan of the text
 * finds `buffers:` or `kernels:` after `nodes:`, the node trees are held
 * until the end of the document instead (correct, but more memory).
 * Cost: linear in the file, plus foreach expansion. */
#include "parser/internal.h"

#include <stdlib.h>
#include <string.h>

#include "ir/suggest.h"

/* ---- typed values ------------------------------------------------------ */

static void error_at(DrParse *p, const DrYNode *v, const char *what, const char *key, const char *msg) {
  if (key != NULL)
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key '%s': %s", what, key, msg);
  else
    dr_diags_error(p->diags, DR_LOC(p, v), "%s: %s", what, msg);
}

void dr__parse_missing(DrParse *p, DrLoc loc, const char *what, const char *key) {
  dr_diags_error(p->diags, loc, "%s: missing key '%s'", what, key);
}

void dr__parse_wrong_type(DrParse *p, const char *what, const char *key, const DrYNode *v,
                          const char *expected) {
  g_autofree char *msg = NULL;
  if (v->kind == DR_Y_SCALAR && !dr__ynode_is_null(v))
    msg = g_strdup_printf("expected %s, got '%s'", expected, v->u.text);
  else
    msg = g_strdup_printf("expected %s, got %s", expected, dr__ynode_kind_name(v));
  error_at(p, v, what, key, msg);
}

int dr__parse_key(DrParse *p, const char *what, const DrYNode *key, const char *const *names, guint n) {
  for (guint i = 0; i < n; i++)
    if (strcmp(key->u.text, names[i]) == 0) return (int)i;
  DrSuggest s;
  dr__suggest_init(&s, key->u.text);
  for (guint i = 0; i < n; i++) dr__suggest_add(&s, names[i]);
  g_autofree char *hint = dr__suggest_hint(&s);
  dr_diags_error(p->diags, DR_LOC(p, key), "%s: unknown key '%s'%s", what, key->u.text, hint);
  return -1;
}

/* Returns the scalar's text after substitution, or NULL after reporting.
 * *owned is the allocated copy to free (NULL when the text is borrowed
 * from the tree, the common case of no braces). */
static const char *scalar_text(DrParse *p, const char *what, const char *key, const DrYNode *v,
                               const DrEnv *env, const char *expected, char **owned) {
  *owned = NULL;
  if (v->kind != DR_Y_SCALAR || dr__ynode_is_null(v)) {
    dr__parse_wrong_type(p, what, key, v, expected);
    return NULL;
  }
  if (!dr__expr_has_braces(v->u.text)) return v->u.text;
  char *msg = NULL;
  *owned = dr__expr_substitute(v->u.text, env, &msg);
  if (*owned == NULL) {
    error_at(p, v, what, key, msg);
    g_free(msg);
  }
  return *owned;
}

gboolean dr__parse_string(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                          char **out) {
  char *owned;
  const char *t = scalar_text(p, what, key, v, env, "a string", &owned);
  *out = owned != NULL ? owned : g_strdup(t);
  return *out != NULL;
}

gboolean dr__parse_int(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                       gint64 min, gint64 max, gint64 *out) {
  g_autofree char *owned = NULL;
  const char *t = scalar_text(p, what, key, v, env, "an integer", &owned);
  if (t == NULL) return FALSE;
  const char *s = t[0] == '-' ? t + 1 : t;
  guint64 mag;
  g_autofree char *msg = NULL;
  if (!g_ascii_isdigit(s[0]) || !dr__size_parse(s, DR_SIZE_COUNT, &mag, &msg)) {
    if (msg == NULL || !g_ascii_isdigit(s[0])) {
      g_free(msg);
      msg = g_strdup_printf("expected an integer, got '%s'", t);
    }
    error_at(p, v, what, key, msg);
    return FALSE;
  }
  if (mag > (guint64)G_MAXINT64) mag = (guint64)G_MAXINT64;
  gint64 val = t[0] == '-' ? -(gint64)mag : (gint64)mag;
  if (val < min || val > max) {
    g_autofree char *m = g_strdup_printf(
        "%" G_GINT64_FORMAT " is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", val, min, max);
    error_at(p, v, what, key, m);
    return FALSE;
  }
  *out = val;
  return TRUE;
}

gboolean dr__parse_size(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                        DrSizeClass cls, guint64 *out) {
  g_autofree char *owned = NULL;
  const char *t =
      scalar_text(p, what, key, v, env, cls == DR_SIZE_BYTES ? "a size in bytes" : "a count", &owned);
  if (t == NULL) return FALSE;
  g_autofree char *msg = NULL;
  if (!dr__size_parse(t, cls, out, &msg)) {
    error_at(p, v, what, key, msg);
    return FALSE;
  }
  return TRUE;
}

gboolean dr__parse_float(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                         double *out) {
  g_autofree char *owned = NULL;
  const char *t = scalar_text(p, what, key, v, env, "a number", &owned);
  if (t == NULL) return FALSE;
  char *end = NULL;
  *out = g_ascii_strtod(t, &end);
  if (end == t || *end != '\0') {
    g_autofree char *msg = g_strdup_printf("expected a number, got '%s'", t);
    error_at(p, v, what, key, msg);
    return FALSE;
  }
  return TRUE;
}

/* A mapping's entries checked against `names`: fills slots[i] with the
 * value of names[i] or NULL. Unknown keys are reported and counted: a
 * caller skips "missing key" errors when a typo already explains them. */
static guint map_slots(DrParse *p, const char *what, const DrYNode *map, const char *const *names, guint n,
                       const DrYNode **slots) {
  memset(slots, 0, n * sizeof *slots);
  guint unknown = 0;
  for (guint i = 0; i < map->len; i++) {
    int k = dr__parse_key(p, what, dr_ynode_key(map, i), names, n);
    if (k >= 0)
      slots[k] = dr_ynode_value(map, i);
    else
      unknown++;
  }
  return unknown;
}

static gboolean expect_map(DrParse *p, const char *what, const char *key, const DrYNode *v) {
  if (v->kind == DR_Y_MAP) return TRUE;
  dr__parse_wrong_type(p, what, key, v, "a mapping");
  return FALSE;
}

/* ---- run: and memory: -------------------------------------------------- */

#define RUN_KEY_LIST(X)         \
  X(MODE, "mode")               \
  X(ITERATIONS, "iterations")   \
  X(WARMUP, "warmup")           \
  X(MAX_STREAMS, "max_streams") \
  X(DEVICE, "device")           \
  X(FALLBACK, "fallback")

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

static void parse_run(DrParse *p, const DrYNode *v) {
  if (!expect_map(p, "top level", "run", v)) return;
  const DrYNode *s[RUN_N_KEYS];
  map_slots(p, "run", v, run_keys, RUN_N_KEYS, s);
  DrRunConfig *r = &p->g->run;
  gint64 i;
  if (s[RUN_MODE] != NULL) {
    g_autofree char *m = NULL;
    if (dr__parse_string(p, "run", "mode", s[RUN_MODE], NULL, &m)) {
      if (strcmp(m, "streams") == 0)
        r->mode = DR_MODE_STREAMS;
      else if (strcmp(m, "graph") == 0)
        r->mode = DR_MODE_GRAPH;
      else
        error_at(p, s[RUN_MODE], "run", "mode", "expected 'streams' or 'graph'");
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
  if (s[RUN_DEVICE] && dr__parse_int(p, "run", "device", s[RUN_DEVICE], NULL, 0, 1023, &i))
    r->device = (gint32)i;
  if (s[RUN_FALLBACK] != NULL) {
    g_autofree char *f = NULL;
    if (dr__parse_string(p, "run", "fallback", s[RUN_FALLBACK], NULL, &f)) {
      if (strcmp(f, "none") == 0)
        r->fallback_streams = FALSE;
      else if (strcmp(f, "streams") == 0)
        r->fallback_streams = TRUE;
      else
        error_at(p, s[RUN_FALLBACK], "run", "fallback", "expected 'none' or 'streams'");
    }
  }
}

static const char *const memory_keys[] = {"release_threshold"};

static void parse_memory(DrParse *p, const DrYNode *v) {
  if (!expect_map(p, "top level", "memory", v)) return;
  const DrYNode *s[1];
  map_slots(p, "memory", v, memory_keys, 1, s);
  guint64 t;
  if (s[0] && dr__parse_size(p, "memory", "release_threshold", s[0], NULL, DR_SIZE_BYTES, &t)) {
    p->g->run.release_threshold = t;
    p->g->run.release_threshold_set = TRUE;
  }
}

/* ---- buffers: ---------------------------------------------------------- */

#define BUFFER_KEY_LIST(X) \
  X(TYPE, "type")          \
  X(COUNT, "count")        \
  X(BYTES, "bytes")        \
  X(WHERE, "where")        \
  X(INIT, "init")          \
  X(SAVE, "save")

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
      error_at(p, v, what, "init", msg);
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
    }
  }
}

static void parse_buffer(DrParse *p, const DrYNode *key, const DrYNode *v) {
  const char *name = key->u.text;
  g_autofree char *what = g_strdup_printf("buffer '%s'", name);
  if (!dr_build_name_ok(&p->build, DR_NAME_BUFFER, name, NULL, DR_LOC(p, key))) return;
  if (!expect_map(p, what, NULL, v)) return;
  const DrYNode *s[BUF_N_KEYS];
  guint unknown = map_slots(p, what, v, buffer_keys, BUF_N_KEYS, s);
  DrBuffer b = {.name = name, .loc = DR_LOC(p, key), .type = DR_ELEM_U8, .where = DR_WHERE_DEVICE};
  gboolean ok = TRUE;
  if (s[BUF_TYPE] != NULL) {
    g_autofree char *t = NULL;
    if (!dr__parse_string(p, what, "type", s[BUF_TYPE], NULL, &t))
      ok = FALSE;
    else if (!dr_elem_from_name(t, &b.type)) {
      g_autofree char *msg = g_strdup_printf("unknown element type '%s' (expected %s)", t, type_names());
      error_at(p, s[BUF_TYPE], what, "type", msg);
      ok = FALSE;
    }
  }
  if (s[BUF_COUNT] != NULL && s[BUF_BYTES] != NULL) {
    error_at(p, s[BUF_BYTES], what, "bytes", "give either 'count' or 'bytes', not both");
    ok = FALSE;
  } else if (s[BUF_COUNT] != NULL) {
    ok = dr__parse_size(p, what, "count", s[BUF_COUNT], NULL, DR_SIZE_COUNT, &b.count) && ok;
  } else if (s[BUF_BYTES] != NULL) {
    guint64 bytes;
    if (dr__parse_size(p, what, "bytes", s[BUF_BYTES], NULL, DR_SIZE_BYTES, &bytes)) {
      guint es = dr_elem_size(b.type);
      if (bytes % es != 0) {
        g_autofree char *msg = g_strdup_printf(
            "%" G_GUINT64_FORMAT " bytes is not a whole number of %s elements", bytes, dr_elem_name(b.type));
        error_at(p, s[BUF_BYTES], what, "bytes", msg);
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
  if (ok)
    dr_build_buffer_count_ok(&p->build, name, b.count, s[BUF_COUNT] ? "count" : "bytes",
                             DR_LOC(p, s[BUF_COUNT] ? s[BUF_COUNT] : s[BUF_BYTES]));
  if (s[BUF_WHERE] != NULL) {
    g_autofree char *w = NULL;
    if (dr__parse_string(p, what, "where", s[BUF_WHERE], NULL, &w)) {
      if (strcmp(w, "device") == 0)
        b.where = DR_WHERE_DEVICE;
      else if (strcmp(w, "host") == 0)
        b.where = DR_WHERE_HOST;
      else
        error_at(p, s[BUF_WHERE], what, "where", "expected 'device' or 'host'");
    }
  }
  if (s[BUF_INIT] != NULL) parse_init(p, what, s[BUF_INIT], &b);
  if (s[BUF_SAVE] != NULL) {
    g_autofree char *path = NULL;
    if (dr__parse_string(p, what, "save", s[BUF_SAVE], NULL, &path)) b.save_path = resolve_path(p, path);
  }
  dr_build_add_buffer(&p->build, &b);
}

static void parse_buffers(DrParse *p, const DrYNode *v) {
  p->seen_buffers = TRUE;
  if (dr__ynode_is_null(v)) return;
  if (!expect_map(p, "top level", "buffers", v)) return;
  for (guint i = 0; i < v->len && !dr_diags_full(p->diags); i++)
    parse_buffer(p, dr_ynode_key(v, i), dr_ynode_value(v, i));
}

/* ---- kernels: ---------------------------------------------------------- */

#define KERNEL_KEY_LIST(X) \
  X(SOURCE, "source")      \
  X(PTX, "ptx")            \
  X(CUBIN, "cubin")        \
  X(FATBIN, "fatbin")      \
  X(ENTRY, "entry")        \
  X(PARAMS, "params")      \
  X(GRID, "grid")

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

static gboolean parse_param(DrParse *p, const char *what, const DrYNode *v, DrParam *out) {
  if (!expect_map(p, what, "params", v)) return FALSE;
  const DrYNode *s[3];
  g_autofree char *pwhat = g_strdup_printf("%s, parameter", what);
  map_slots(p, pwhat, v, param_keys, 3, s);
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
    error_at(p, s[1], what, "type", msg);
    return FALSE;
  }
  out->access = DR_ACCESS_READ_WRITE;
  if (s[2] != NULL) {
    g_autofree char *a = NULL;
    if (!dr__parse_string(p, pwhat, "access", s[2], NULL, &a)) return FALSE;
    if (!out->is_pointer) {
      g_autofree char *msg = g_strdup_printf("parameter '%s' is a scalar; only pointers take 'access'", name);
      error_at(p, s[2], what, "access", msg);
      return FALSE;
    }
    gboolean found = FALSE;
    for (guint m = 0; m < DR_ACCESS_N_MODES && !found; m++)
      if (strcmp(a, dr_access_mode_name((DrAccessMode)m)) == 0) {
        out->access = (DrAccessMode)m;
        found = TRUE;
      }
    if (!found) {
      error_at(p, s[2], what, "access", "expected read, write or readwrite");
      return FALSE;
    }
  }
  out->name = dr_graph_intern(p->g, name);
  return TRUE;
}

static void parse_kernel(DrParse *p, const DrYNode *key, const DrYNode *v) {
  const char *name = key->u.text;
  g_autofree char *what = g_strdup_printf("kernel '%s'", name);
  if (!dr_build_name_ok(&p->build, DR_NAME_KERNEL, name, NULL, DR_LOC(p, key))) return;
  if (!expect_map(p, what, NULL, v)) return;
  const DrYNode *s[KER_N_KEYS];
  guint unknown = map_slots(p, what, v, kernel_keys, KER_N_KEYS, s);
  DrKernelDecl k = {
      .name = name, .loc = DR_LOC(p, key), .origin = DR_KERNEL_USER, .grid = {.over = DR_NONE, .block = 256}};
  gboolean ok = TRUE;
  const char **code[] = {&k.source, &k.ptx, &k.cubin, &k.fatbin};
  guint n_code = 0;
  for (guint i = 0; i < 4; i++) {
    if (s[KER_SOURCE + i] == NULL) continue;
    g_autofree char *path = NULL;
    if (++n_code > 1) {
      error_at(p, s[KER_SOURCE + i], what, kernel_keys[KER_SOURCE + i],
               "give exactly one of 'source', 'ptx', 'cubin' or 'fatbin'");
      ok = FALSE;
    } else if (dr__parse_string(p, what, kernel_keys[KER_SOURCE + i], s[KER_SOURCE + i], NULL, &path)) {
      *code[i] = resolve_path(p, path);
    } else {
      ok = FALSE;
    }
  }
  if (n_code == 0) ok = FALSE;
  if (n_code == 0 && unknown == 0) {
    dr_diags_error(p->diags, DR_LOC(p, key), "%s: missing key 'source' (or 'ptx', 'cubin', 'fatbin')", what);
    ok = FALSE;
  }
  k.entry = name;
  g_autofree char *entry = NULL;
  if (s[KER_ENTRY] != NULL) {
    if (dr__parse_string(p, what, "entry", s[KER_ENTRY], NULL, &entry))
      k.entry = entry;
    else
      ok = FALSE;
  }
  DrParam params[DR_MAX_PARAMS];
  DrLoc param_locs[DR_MAX_PARAMS];
  DrLoc over_loc = DR_LOC(p, key);
  if (s[KER_PARAMS] == NULL) {
    if (unknown == 0) dr__parse_missing(p, DR_LOC(p, key), what, "params");
    ok = FALSE;
  } else if (s[KER_PARAMS]->kind != DR_Y_SEQ) {
    dr__parse_wrong_type(p, what, "params", s[KER_PARAMS], "a list of parameters");
    ok = FALSE;
  } else if (s[KER_PARAMS]->len > DR_MAX_PARAMS) {
    error_at(p, s[KER_PARAMS], what, "params", "more than 64 parameters");
    ok = FALSE;
  } else {
    for (guint i = 0; i < s[KER_PARAMS]->len; i++) {
      const DrYNode *pv = s[KER_PARAMS]->u.items[i];
      if (!parse_param(p, what, pv, &params[k.n_params])) {
        ok = FALSE;
        continue;
      }
      param_locs[k.n_params++] = DR_LOC(p, pv);
    }
  }
  k.params = params;
  if (s[KER_GRID] != NULL && expect_map(p, what, "grid", s[KER_GRID])) {
    static const char *const grid_keys[] = {"over", "block"};
    const DrYNode *gs[2];
    g_autofree char *gwhat = g_strdup_printf("%s, grid", what);
    map_slots(p, gwhat, s[KER_GRID], grid_keys, 2, gs);
    if (gs[0] != NULL) {
      g_autofree char *over = NULL;
      if (dr__parse_string(p, gwhat, "over", gs[0], NULL, &over)) {
        for (guint j = 0; j < k.n_params; j++)
          if (strcmp(params[j].name, over) == 0) k.grid.over = j;
        if (k.grid.over == DR_NONE) {
          DrSuggest sg;
          dr__suggest_init(&sg, over);
          for (guint j = 0; j < k.n_params; j++) dr__suggest_add(&sg, params[j].name);
          g_autofree char *hint = dr__suggest_hint(&sg);
          g_autofree char *msg = g_strdup_printf("unknown parameter '%s'%s", over, hint);
          error_at(p, gs[0], gwhat, "over", msg);
          ok = FALSE;
        }
        over_loc = DR_LOC(p, gs[0]);
      }
    }
    gint64 block;
    if (gs[1] != NULL) {
      if (dr__parse_int(p, gwhat, "block", gs[1], NULL, 1, 1024, &block))
        k.grid.block = (guint32)block;
      else
        ok = FALSE;
    }
  }
  if (ok) dr_build_add_kernel(&p->build, &k, param_locs, over_loc);
}

static void parse_kernels(DrParse *p, const DrYNode *v) {
  p->seen_kernels = TRUE;
  if (dr__ynode_is_null(v)) return;
  if (!expect_map(p, "top level", "kernels", v)) return;
  for (guint i = 0; i < v->len && !dr_diags_full(p->diags); i++)
    parse_kernel(p, dr_ynode_key(v, i), dr_ynode_value(v, i));
}

/* ---- the top level ----------------------------------------------------- */

#define TOP_KEY_LIST(X) \
  X(DAGRUN, "dagrun")   \
  X(NAME, "name")       \
  X(RUN, "run")         \
  X(MEMORY, "memory")   \
  X(BUFFERS, "buffers") \
  X(KERNELS, "kernels") \
  X(NODES, "nodes")

enum {
#define X(e, s) TOP_##e,
  TOP_KEY_LIST(X)
#undef X
      TOP_N_KEYS
};
static const char *const top_keys[] = {
#define X(e, s) s,
    TOP_KEY_LIST(X)
#undef X
};

typedef struct {
  DrLoc seen[TOP_N_KEYS]; /* line 0: not seen */
  gboolean defer_nodes;
  gboolean not_a_map; /* the document is no mapping: nothing is missing */
} Top;

/* Takes references to key and value when it must hold them. */
static void node_entry(DrParse *p, Top *top, DrYNode *key, DrYNode *value) {
  if (top->defer_nodes) {
    g_ptr_array_add(p->deferred, dr__ynode_ref(key));
    g_ptr_array_add(p->deferred, dr__ynode_ref(value));
    return;
  }
  dr__parse_node_entry(p, key, value);
}

static void top_section(DrParse *p, Top *top, int idx, DrYNode *v) {
  switch (idx) {
    case TOP_DAGRUN: {
      gint64 version;
      if (dr__parse_int(p, "top level", "dagrun", v, NULL, G_MININT64, G_MAXINT64, &version) && version != 1)
        dr_diags_error(p->diags, DR_LOC(p, v),
                       "unsupported format version %" G_GINT64_FORMAT " (this dagrun reads 'dagrun: 1')",
                       version);
      break;
    }
    case TOP_NAME: {
      g_autofree char *name = NULL;
      if (dr__parse_string(p, "top level", "name", v, NULL, &name)) p->g->name = dr_graph_intern(p->g, name);
      break;
    }
    case TOP_RUN:
      parse_run(p, v);
      break;
    case TOP_MEMORY:
      parse_memory(p, v);
      break;
    case TOP_BUFFERS:
      parse_buffers(p, v);
      break;
    case TOP_KERNELS:
      parse_kernels(p, v);
      break;
    case TOP_NODES:
      if (dr__ynode_is_null(v)) break;
      if (!expect_map(p, "top level", "nodes", v)) break;
      for (guint i = 0; i < v->len && !dr_diags_full(p->diags); i++)
        node_entry(p, top, dr_ynode_key(v, i), dr_ynode_value(v, i));
      break;
  }
}

/* Registers a top-level key; FALSE (reported) when unknown or repeated. */
static int top_key(DrParse *p, Top *top, const DrYNode *key) {
  int idx = dr__parse_key(p, "top level", key, top_keys, TOP_N_KEYS);
  if (idx < 0) return -1;
  if (top->seen[idx].line != 0) {
    dr_diags_error(p->diags, DR_LOC(p, key), "duplicate key '%s'", key->u.text);
    dr_diags_note(p->diags, top->seen[idx], "'%s' first appears here", key->u.text);
    return -1;
  }
  top->seen[idx] = DR_LOC(p, key);
  return idx;
}

/* Keys of streamed mappings are built alone, so check here what events.c
 * checks inside a tree: a key must be a scalar. */
static gboolean scalar_key(DrParse *p, const DrYNode *key) {
  if (key->kind == DR_Y_SCALAR) return TRUE;
  dr_diags_error(p->diags, DR_LOC(p, key), "a mapping key must be a scalar, not %s",
                 dr__ynode_kind_name(key));
  return FALSE;
}

/* Streams `nodes:` entry by entry (the mapping start is consumed). */
static void stream_nodes(DrParse *p, Top *top) {
  DrYEvent ev;
  while (dr__yreader_next(p->reader, &ev) && ev.type != DR_YEV_MAP_END) {
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) key = dr__yreader_build(p->reader, &ev);
    if (key == NULL || !dr__yreader_next(p->reader, &ev)) break;
    g_autoptr(DrYNode) value = dr__yreader_build(p->reader, &ev);
    if (value == NULL) break;
    if (!scalar_key(p, key)) continue;
    if (strcmp(key->u.text, "<<") == 0 && key->plain) {
      dr_diags_error(p->diags, DR_LOC(p, key),
                     "nodes: merge keys '<<' are not supported directly under 'nodes:'");
      continue;
    }
    if (!dr_diags_full(p->diags)) node_entry(p, top, key, value);
  }
}

/* Streams the top-level mapping (its start is consumed). */
static void stream_root(DrParse *p, Top *top) {
  DrYEvent ev;
  while (dr__yreader_next(p->reader, &ev) && ev.type != DR_YEV_MAP_END) {
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) key = dr__yreader_build(p->reader, &ev);
    if (key == NULL || !dr__yreader_next(p->reader, &ev)) break;
    int idx = scalar_key(p, key) ? top_key(p, top, key) : -1;
    if (idx == TOP_NODES && ev.type == DR_YEV_MAP_START && ev.anchor == NULL) {
      stream_nodes(p, top);
      continue;
    }
    if (idx < 0) {
      dr__yreader_skip(p->reader, &ev);
      continue;
    }
    g_autoptr(DrYNode) value = dr__yreader_build(p->reader, &ev);
    if (value == NULL) break;
    top_section(p, top, idx, value);
  }
}

/* Finds a top-level key at the start of a line; returns its offset or -1. */
static gssize find_top_key(const char *yaml, gsize len, const char *key) {
  gsize kl = strlen(key);
  for (gsize i = 0; i + kl <= len;) {
    if ((i == 0 || yaml[i - 1] == '\n') && memcmp(yaml + i, key, kl) == 0) return (gssize)i;
    const char *nl = memchr(yaml + i, '\n', len - i);
    if (nl == NULL) break;
    i = (gsize)(nl - yaml) + 1;
  }
  return -1;
}

static void check_whole_run_buffers(DrParse *p) {
  for (DrId i = 0; i < dr_graph_n_buffers(p->g); i++) {
    const DrBuffer *b = dr_graph_buffer(p->g, i);
    DrId life = b->alloc_node != DR_NONE ? b->alloc_node : b->free_node;
    if (life == DR_NONE || (b->init == DR_INIT_NONE && b->save_path == NULL)) continue;
    const DrNode *n = dr_graph_node(p->g, life);
    dr_diags_error(p->diags, b->loc,
                   "buffer '%s': '%s' needs a buffer that lives for the whole run, but node '%s' %s it",
                   b->name, b->init != DR_INIT_NONE ? "init" : "save", n->id,
                   n->op == DR_OP_ALLOC ? "allocates" : "frees");
    dr_diags_note(p->diags, n->loc, "node '%s' is here", n->id);
  }
}

static void parse_root_tree(DrParse *p, Top *top, DrYNode *root) {
  if (root->kind != DR_Y_MAP) {
    dr_diags_error(p->diags, DR_LOC(p, root), "the top level must be a mapping with 'dagrun: 1', not %s",
                   dr__ynode_kind_name(root));
    top->not_a_map = TRUE;
    return;
  }
  for (guint i = 0; i < root->len; i++) {
    int idx = top_key(p, top, dr_ynode_key(root, i));
    if (idx >= 0) top_section(p, top, idx, dr_ynode_value(root, i));
  }
}

/* Whether `nodes:` must wait for buffers:/kernels: that come after it, from
 * the line offsets of the three keys (-1: not at the start of a line). */
static gboolean must_defer(gssize nodes_at, gssize buffers_at, gssize kernels_at) {
  return nodes_at < 0 || buffers_at > nodes_at || kernels_at > nodes_at;
}

/* must_defer for a file, by one pass over its lines; rewinds it. */
static gboolean must_defer_file(FILE *fp) {
  gssize at[3] = {-1, -1, -1};
  static const char *const keys[3] = {"nodes:", "buffers:", "kernels:"};
  char buf[4096];
  gssize line = 0;
  gboolean line_start = TRUE;
  while (fgets(buf, sizeof buf, fp) != NULL) {
    if (line_start)
      for (int k = 0; k < 3; k++)
        if (at[k] < 0 && strncmp(buf, keys[k], strlen(keys[k])) == 0) at[k] = line;
    gsize n = strlen(buf);
    line_start = n > 0 && buf[n - 1] == '\n';
    if (line_start) line++;
  }
  rewind(fp);
  return must_defer(at[0], at[1], at[2]);
}

static gboolean parse(DrGraph *graph, const char *file, const char *yaml, gsize len, FILE *fp,
                      DrDiags *diags) {
  guint errors_before = dr_diags_n_errors(diags);
  DrParse pp = {.g = graph, .diags = diags};
  DrParse *p = &pp;
  graph->file = dr_graph_intern(graph, file);
  /* Diagnostics outlive a graph that failed to load: their file name is
   * interned for the process (one string per pipeline file). */
  p->file = g_intern_string(file);
  g_autofree char *dir = g_path_get_dirname(file);
  graph->base_dir = dr_graph_intern(graph, dir);
  g_autofree char *base = g_path_get_basename(file);
  char *dot = strrchr(base, '.');
  if (dot != NULL && dot != base) *dot = '\0';
  graph->name = dr_graph_intern(graph, base);
  if (fp == NULL && len > DR_PARSE_MAX_FILE_BYTES) {
    dr_diags_error(diags, (DrLoc){p->file, 1, 1},
                   "file too large: %" G_GSIZE_FORMAT " bytes (the limit is 1 GiB)", len);
    return FALSE;
  }
  p->values_left = DR_PARSE_MAX_EXPANDED_VALUES;
  p->afters = g_array_new(FALSE, FALSE, sizeof(DrPendingAfter));
  p->deferred = g_ptr_array_new_with_free_func((GDestroyNotify)dr__ynode_unref);
  dr_build_init(&p->build, graph, diags, TRUE);
  p->arg_what = g_string_new(NULL);
  p->arg_key = g_string_new(NULL);
  Top top = {0};
  if (fp != NULL) {
    top.defer_nodes = must_defer_file(fp);
    p->reader = dr__yreader_new_file(p->file, fp, diags);
  } else {
    top.defer_nodes = must_defer(find_top_key(yaml, len, "nodes:"), find_top_key(yaml, len, "buffers:"),
                                 find_top_key(yaml, len, "kernels:"));
    p->reader = dr__yreader_new(p->file, yaml, len, diags);
  }

  DrYEvent ev;
  DrLoc root_loc = {p->file, 1, 1};
  if (!dr__yreader_next(p->reader, &ev)) {
    if (!dr__yreader_failed(p->reader))
      dr_diags_error(diags, root_loc, "empty pipeline: expected a mapping that starts with 'dagrun: 1'");
    top.not_a_map = TRUE;
  } else if (ev.type == DR_YEV_MAP_START && ev.anchor == NULL) {
    root_loc = (DrLoc){p->file, ev.line, ev.col};
    stream_root(p, &top);
  } else {
    root_loc = (DrLoc){p->file, ev.line, ev.col};
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) root = dr__yreader_build(p->reader, &ev);
    if (root != NULL) parse_root_tree(p, &top, root);
  }
  if (!dr__yreader_failed(p->reader)) {
    if (dr__yreader_next(p->reader, &ev))
      dr_diags_error(diags, (DrLoc){p->file, ev.line, ev.col},
                     "unexpected content after the top-level mapping");
  }
  if (!dr__yreader_failed(p->reader) && !top.not_a_map) {
    if (top.seen[TOP_DAGRUN].line == 0)
      dr_diags_error(diags, root_loc,
                     "top level: missing key 'dagrun' (the format version: write 'dagrun: 1')");
    if (top.seen[TOP_NODES].line == 0) dr__parse_missing(p, root_loc, "top level", "nodes");
    for (guint i = 0; i + 1 < p->deferred->len && !dr_diags_full(diags); i += 2)
      dr__parse_node_entry(p, p->deferred->pdata[i], p->deferred->pdata[i + 1]);
    dr__parse_resolve_afters(p);
    check_whole_run_buffers(p);
  }
  dr__yreader_free(p->reader);
  g_ptr_array_unref(p->deferred);
  g_array_unref(p->afters);
  dr_build_clear(&p->build);
  g_string_free(p->arg_what, TRUE);
  g_string_free(p->arg_key, TRUE);
  return dr_diags_n_errors(diags) == errors_before;
}

gboolean dr_parse_pipeline(DrGraph *graph, const char *file, const char *yaml, gsize len, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && file != NULL && yaml != NULL && diags != NULL, FALSE);
  return parse(graph, file, yaml, len, NULL, diags);
}

gboolean dr_parse_pipeline_file(DrGraph *graph, const char *file, FILE *fp, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && file != NULL && fp != NULL && diags != NULL, FALSE);
  return parse(graph, file, NULL, 0, fp, diags);
}
