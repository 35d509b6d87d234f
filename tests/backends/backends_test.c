/* backends_test.c: the run driver and the host backend on small graphs built
 * by hand: results against expected values, --verify catching a plan with
 * a missing wait under random delays (and passing planned ones), the
 * deterministic init generator, host functions, the report's JSON and text
 * and the Chrome trace (parsed: one X event per node and iteration, a track
 * per stream), the critical path and overlap figures, the SVG timeline
 * (parsed as XML for every example pipeline), errors, backend selection
 * without a GPU, and the CUDA backend's eager path (stamp timing included)
 * on a fake runtime. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "backends/nccl_api.h"
#include "backends/cuda/graph.h"
#include "backends/verify.h"
#include "cli/cli.h"
#include "lib/load.h"
#include "tests/backends/testgraph.h"

/* ---- a minimal JSON validator ------------------------------------------ */

typedef struct {
  const char *p;
  int depth;
} Json;

static void ws(Json *j) {
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++;
}

static gboolean value(Json *j);

static gboolean string(Json *j) {
  if (*j->p != '"') return FALSE;
  for (j->p++; *j->p != '"'; j->p++) {
    if (*j->p == '\0' || (unsigned char)*j->p < 0x20) return FALSE;
    if (*j->p == '\\') {
      j->p++;
      if (*j->p == 'u') {
        for (int i = 0; i < 4; i++)
          if (!g_ascii_isxdigit(*++j->p)) return FALSE;
      } else if (!strchr("\"\\/bfnrt", *j->p)) {
        return FALSE;
      }
    }
  }
  j->p++;
  return TRUE;
}

static gboolean number(Json *j) {
  const char *s = j->p;
  if (*j->p == '-') j->p++;
  if (!g_ascii_isdigit(*j->p)) return FALSE;
  while (g_ascii_isdigit(*j->p)) j->p++;
  if (*j->p == '.') {
    j->p++;
    if (!g_ascii_isdigit(*j->p)) return FALSE;
    while (g_ascii_isdigit(*j->p)) j->p++;
  }
  if (*j->p == 'e' || *j->p == 'E') {
    j->p++;
    if (*j->p == '+' || *j->p == '-') j->p++;
    if (!g_ascii_isdigit(*j->p)) return FALSE;
    while (g_ascii_isdigit(*j->p)) j->p++;
  }
  return j->p > s;
}

static gboolean value(Json *j) {
  ws(j);
  if (++j->depth > 64) return FALSE;
  gboolean ok = FALSE;
  if (*j->p == '{') {
    j->p++;
    ws(j);
    ok = TRUE;
    if (*j->p == '}')
      j->p++;
    else
      for (;;) {
        ws(j);
        if (!string(j)) return FALSE;
        ws(j);
        if (*j->p++ != ':') return FALSE;
        if (!value(j)) return FALSE;
        ws(j);
        if (*j->p == ',') {
          j->p++;
          continue;
        }
        if (*j->p++ != '}') return FALSE;
        break;
      }
  } else if (*j->p == '[') {
    j->p++;
    ws(j);
    ok = TRUE;
    if (*j->p == ']')
      j->p++;
    else
      for (;;) {
        if (!value(j)) return FALSE;
        ws(j);
        if (*j->p == ',') {
          j->p++;
          continue;
        }
        if (*j->p++ != ']') return FALSE;
        break;
      }
  } else if (*j->p == '"') {
    ok = string(j);
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
    ok = TRUE;
  } else if (strncmp(j->p, "false", 5) == 0) {
    j->p += 5;
    ok = TRUE;
  } else {
    ok = number(j);
  }
  j->depth--;
  return ok;
}

static gboolean json_valid(const char *s) {
  Json j = {s, 0};
  if (!value(&j)) return FALSE;
  ws(&j);
  return *j.p == '\0';
}

static guint count_substr(const char *s, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void test_json_validator(void) {
  g_assert_true(json_valid("{\"a\": [1, 2.5, -3e2, true, false, null, \"x\\n\"], \"b\": {}}"));
  g_assert_false(json_valid("{\"a\": nan}"));
  g_assert_false(json_valid("{\"a\": 1,}"));
  g_assert_false(json_valid("[1 2]"));
  g_assert_false(json_valid("{\"a\": 1} x"));
}

/* ---- a minimal JSON parser (a tree, for checking the trace) --------------- */

/* A parsed JSON value. Objects keep their keys in order; strings keep their
 * escapes undecoded except \" and \\ (enough for the ids checked here). */
typedef struct JNode {
  char kind; /* 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null */
  char *str;
  double num;
  GPtrArray *kids; /* JNode *, objects and arrays */
  GPtrArray *keys; /* char *, objects */
} JNode;

static void jnode_free(JNode *n) {
  if (n == NULL) return;
  g_free(n->str);
  if (n->kids) g_ptr_array_unref(n->kids);
  if (n->keys) g_ptr_array_unref(n->keys);
  g_free(n);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JNode, jnode_free)

static char *jstring(Json *j) {
  const char *start = j->p;
  if (!string(j)) return NULL;
  GString *s = g_string_new(NULL);
  for (const char *q = start + 1; q < j->p - 1; q++) {
    if (*q == '\\' && (q[1] == '"' || q[1] == '\\')) q++;
    g_string_append_c(s, *q);
  }
  return g_string_free(s, FALSE);
}

/* Parses one value at j->p; NULL on a syntax error or beyond depth 64. */
static JNode *jparse_value(Json *j) {
  ws(j);
  if (++j->depth > 64) return NULL;
  g_autoptr(JNode) n = g_new0(JNode, 1);
  if (*j->p == '{' || *j->p == '[') {
    gboolean obj = *j->p == '{';
    char close = obj ? '}' : ']';
    n->kind = obj ? 'o' : 'a';
    n->kids = g_ptr_array_new_with_free_func((GDestroyNotify)jnode_free);
    if (obj) n->keys = g_ptr_array_new_with_free_func(g_free);
    j->p++;
    ws(j);
    if (*j->p == close)
      j->p++;
    else
      for (;;) {
        ws(j);
        if (obj) {
          char *key = jstring(j);
          if (key == NULL) return NULL;
          g_ptr_array_add(n->keys, key);
          ws(j);
          if (*j->p++ != ':') return NULL;
        }
        JNode *kid = jparse_value(j);
        if (kid == NULL) return NULL;
        g_ptr_array_add(n->kids, kid);
        ws(j);
        if (*j->p == ',') {
          j->p++;
          continue;
        }
        if (*j->p++ != close) return NULL;
        break;
      }
  } else if (*j->p == '"') {
    n->kind = 's';
    if ((n->str = jstring(j)) == NULL) return NULL;
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
    n->kind = j->p[0] == 't' ? 'b' : 'z';
    n->num = j->p[0] == 't';
    j->p += 4;
  } else if (strncmp(j->p, "false", 5) == 0) {
    n->kind = 'b';
    j->p += 5;
  } else {
    const char *start = j->p;
    if (!number(j)) return NULL;
    n->kind = 'n';
    n->num = g_ascii_strtod(start, NULL);
  }
  j->depth--;
  return g_steal_pointer(&n);
}

static JNode *jparse(const char *s) {
  Json j = {s, 0};
  JNode *n = jparse_value(&j);
  if (n == NULL) return NULL;
  ws(&j);
  if (*j.p != '\0') {
    jnode_free(n);
    return NULL;
  }
  return n;
}

/* The member `key` of object `o`, or NULL. */
static JNode *jget(const JNode *o, const char *key) {
  if (o == NULL || o->kind != 'o') return NULL;
  for (guint i = 0; i < o->keys->len; i++)
    if (strcmp(g_ptr_array_index(o->keys, i), key) == 0) return g_ptr_array_index(o->kids, i);
  return NULL;
}

static void test_json_parser(void) {
  g_autoptr(JNode) n = jparse("{\"a\": [1, 2.5, -3e2, true, null], \"b\": {\"c\": \"x\\\"y\"}}");
  g_assert_nonnull(n);
  g_assert_cmpint(jget(n, "a")->kids->len, ==, 5);
  g_assert_cmpfloat(((JNode *)g_ptr_array_index(jget(n, "a")->kids, 2))->num, ==, -300);
  g_assert_cmpstr(jget(jget(n, "b"), "c")->str, ==, "x\"y");
  g_assert_null(jget(n, "d"));
  g_assert_null(jparse("{\"a\": [1,]}"));
  g_assert_null(jparse("[1] 2"));
  /* The depth bound: 64 nested arrays are accepted, 65 refused. */
  for (guint depth = 64; depth <= 65; depth++) {
    g_autofree char *open = g_strnfill(depth, '[');
    g_autofree char *close = g_strnfill(depth, ']');
    g_autofree char *text = g_strconcat(open, close, NULL);
    g_autoptr(JNode) nested = jparse(text);
    if (depth == 64)
      g_assert_nonnull(nested);
    else
      g_assert_null(nested);
  }
}

/* Checks the structure of a Chrome trace of `plan` run for `iterations`:
 * it parses; a thread_name track per plan stream; exactly one X event per
 * node and iteration, on its node's stream's track; flow starts and ends
 * pair up, one pair per planned wait and iteration. */
static void check_trace(const char *trace, const DrPlan *plan, guint32 iterations) {
  const DrGraph *g = plan->graph;
  g_autoptr(JNode) root = jparse(trace);
  g_assert_nonnull(root);
  JNode *events = jget(root, "traceEvents");
  g_assert_nonnull(events);
  g_assert_cmpint(events->kind, ==, 'a');
  g_autoptr(GHashTable) tracks = g_hash_table_new(NULL, NULL);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) starts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) finishes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  guint n_x = 0, n_s = 0, n_f = 0;
  for (guint i = 0; i < events->kids->len; i++) {
    JNode *e = g_ptr_array_index(events->kids, i);
    const char *ph = jget(e, "ph")->str, *name = jget(e, "name")->str;
    if (strcmp(ph, "M") == 0 && strcmp(name, "thread_name") == 0) {
      guint tid = (guint)jget(e, "tid")->num;
      g_assert_true(g_str_has_prefix(jget(jget(e, "args"), "name")->str, "stream "));
      g_assert_false(g_hash_table_contains(tracks, GUINT_TO_POINTER(tid + 1)));
      g_hash_table_add(tracks, GUINT_TO_POINTER(tid + 1));
    } else if (strcmp(ph, "X") == 0) {
      n_x++;
      DrId id = dr_graph_find_node(g, name);
      g_assert_cmpuint(id, !=, DR_NONE);
      g_assert_cmpuint((guint)jget(e, "tid")->num, ==, plan->node_stream[id]);
      g_assert_cmpfloat(jget(e, "dur")->num, >=, 0);
      guint it = (guint)jget(jget(e, "args"), "iteration")->num;
      g_assert_cmpuint(it, <, iterations);
      char *key = g_strdup_printf("%s#%u", name, it);
      g_assert_false(g_hash_table_contains(seen, key));
      g_hash_table_add(seen, key);
    } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
      GHashTable *set = ph[0] == 's' ? starts : finishes;
      char *id = g_strdup_printf("%.0f", jget(e, "id")->num);
      g_assert_false(g_hash_table_contains(set, id));
      g_hash_table_add(set, id);
      if (ph[0] == 's')
        n_s++;
      else
        n_f++;
    }
  }
  g_assert_cmpuint(g_hash_table_size(tracks), ==, dr_plan_n_streams(plan));
  for (guint32 s = 0; s < plan->steps->len; s++)
    g_assert_true(g_hash_table_contains(tracks, GUINT_TO_POINTER(dr_plan_step(plan, s)->stream + 1)));
  g_assert_cmpuint(n_x, ==, dr_graph_n_nodes(g) * iterations);
  g_assert_cmpuint(n_s, ==, plan->waits->len * iterations);
  g_assert_cmpuint(n_f, ==, n_s);
  GHashTableIter iter;
  gpointer id;
  g_hash_table_iter_init(&iter, starts);
  while (g_hash_table_iter_next(&iter, &id, NULL)) g_assert_true(g_hash_table_contains(finishes, id));
}

/* ---- an SVG checker (GMarkup parses SVG: it is XML) ------------------------- */

typedef struct {
  guint depth, elements, titles, rects;
  gboolean in_title, root_svg;
  GString *title;
  GHashTable *titled; /* node ids named at the start of a <title> */
} SvgCheck;

static void svg_start(GMarkupParseContext *c, const char *el, const char **names, const char **values,
                      gpointer data, GError **error) {
  SvgCheck *k = data;
  if (k->depth++ == 0) k->root_svg = strcmp(el, "svg") == 0;
  k->elements++;
  if (strcmp(el, "rect") == 0) k->rects++;
  if (strcmp(el, "title") == 0) {
    k->in_title = TRUE;
    g_string_truncate(k->title, 0);
  }
}

static void svg_end(GMarkupParseContext *c, const char *el, gpointer data, GError **error) {
  SvgCheck *k = data;
  k->depth--;
  if (strcmp(el, "title") == 0) {
    k->in_title = FALSE;
    /* A run of merged bars, or a lane's untimed nodes: "N nodes (...),
     * stream S, ...; ids: A, B, ..." names N nodes (report.h). */
    const char *ids = strstr(k->title->str, "; ids: ");
    guint64 count = g_ascii_strtoull(k->title->str, NULL, 10);
    if (count > 0 && ids != NULL && strstr(k->title->str, " nodes (") != NULL) {
      g_auto(GStrv) names = g_strsplit(ids + strlen("; ids: "), ", ", -1);
      g_assert_cmpuint(g_strv_length(names), ==, count);
      for (guint i = 0; names[i]; i++) g_hash_table_add(k->titled, g_strdup(names[i]));
      k->titles += count;
      return;
    }
    k->titles++;
    /* "ID (op), stream S, ...": the id is what precedes the last " (" before
     * ", stream", so ids containing " (" survive. */
    const char *cut = strstr(k->title->str, ", stream ");
    g_assert_nonnull(cut);
    g_autofree char *head = g_strndup(k->title->str, cut - k->title->str);
    char *paren = g_strrstr(head, " (");
    g_assert_nonnull(paren);
    *paren = '\0';
    g_hash_table_add(k->titled, g_strdup(head));
  }
}

static void svg_text(GMarkupParseContext *c, const char *text, gsize len, gpointer data, GError **error) {
  SvgCheck *k = data;
  if (k->in_title) g_string_append_len(k->title, text, (gssize)len);
}

/* Parses `svg` as XML (failing the test if it is not) and checks that the
 * root is <svg> and every node of `g` is named by exactly one <title>: its
 * own, or the one of the merged run or untimed lane it belongs to. */
static void check_svg(const char *svg, const DrGraph *g) {
  static const GMarkupParser parser = {svg_start, svg_end, svg_text, NULL, NULL};
  SvgCheck k = {.title = g_string_new(NULL),
                .titled = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
  /* GMarkup does not take the XML declaration: skip it. */
  const char *body = svg;
  if (g_str_has_prefix(body, "<?xml")) body = strstr(body, "?>") + 2;
  GMarkupParseContext *ctx = g_markup_parse_context_new(&parser, 0, &k, NULL);
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_markup_parse_context_parse(ctx, body, -1, &error) && g_markup_parse_context_end_parse(ctx, &error);
  g_markup_parse_context_free(ctx);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_true(k.root_svg);
  g_assert_cmpuint(k.titles, ==, dr_graph_n_nodes(g));
  for (DrId i = 0; i < dr_graph_n_nodes(g); i++)
    if (!g_hash_table_contains(k.titled, dr_graph_node(g, i)->id))
      g_error("the timeline has no <title> for node '%s'", dr_graph_node(g, i)->id);
  g_string_free(k.title, TRUE);
  g_hash_table_unref(k.titled);
}

/* ---- fixtures ----------------------------------------------------------- */

static DrRunOptions host_opts(const DrGraph *g, guint32 iterations, guint32 warmup) {
  DrRunOptions o;
  dr_run_options_init(&o, g);
  o.backend = DR_BACKEND_HOST;
  /* Streams, the default before mode: auto: the CUDA cases here reuse
   * these options, and this file's fake has no capture model (the graph
   * mode cases ask for it; tests/fault sweeps graph mode on a fake that
   * models capture). */
  o.mode = DR_MODE_STREAMS;
  o.iterations = iterations;
  o.warmup = warmup;
  return o;
}

/* x = iota(n); y = 2x (scale); y += 3x (axpy); yh <- y; saved. */
static DrGraph *scale_axpy_graph(guint64 n, const char *save_path) {
  DrGraph *g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "y", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId yh = tg_buffer(g, "yh", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, yh)->save_path = save_path ? dr_graph_intern(g, save_path) : NULL;
  DrId s = tg_kernel_node(g, "scale", "scale_f32");
  tg_arg_buf(g, s, "x", "x", 0, 0);
  tg_arg_f(g, s, "alpha", 2.0);
  tg_arg_buf(g, s, "y", "y", 0, 0);
  DrId a = tg_kernel_node(g, "axpy", "axpy_f32");
  tg_arg_f(g, a, "alpha", 3.0);
  tg_arg_buf(g, a, "x", "x", 0, 0);
  tg_arg_buf(g, a, "y", "y", 0, 0);
  tg_copy(g, "down", "y", 0, 0, "yh", 0, 0);
  return g;
}

static void test_scale_axpy(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "yh.bin", NULL);
  g_autoptr(DrGraph) g = scale_axpy_graph(1000, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 3, 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(r->backend, ==, "host");
  g_assert_cmpuint(r->nodes->len, ==, 3);
  g_assert_cmpint(r->verified, ==, DR_VERIFIED_NOT_RUN);
  gsize n;
  g_autofree float *y = tg_read_floats(path, &n);
  g_assert_cmpuint(n, ==, 1000);
  /* scale overwrites y each iteration, so y = 5x however many ran. */
  for (gsize i = 0; i < n; i++) g_assert_cmpfloat(y[i], ==, 5.0f * (float)i);
  g_assert_false(isnan(r->makespan_us));
  g_assert_cmpfloat(r->makespan_us, >=, 0);
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    g_assert_false(isnan(nr->duration_us));
    g_assert_cmpfloat(nr->duration_min_us, <=, nr->duration_us);
    g_assert_cmpfloat(nr->duration_us, <=, nr->duration_max_us);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* Four chunks scaled independently, accumulated into acc by axpy chunks:
 * the planner spreads them over streams; verify under delays must pass and
 * the result must be the expected one. */
static DrGraph *chunks_graph(guint chunks, guint64 per, const char *save_path) {
  DrGraph *g = dr_graph_new();
  guint64 n = chunks * per;
  tg_buffer(g, "xh", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_IOTA, 0);
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "y", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  tg_buffer(g, "acc", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId out = tg_buffer(g, "out", DR_ELEM_F32, n, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, out)->save_path = save_path ? dr_graph_intern(g, save_path) : NULL;
  for (guint c = 0; c < chunks; c++) {
    guint64 b = c * per, e = (c + 1) * per;
    tg_copy(g, tg_name(g, "up", c), "xh", b, e, "x", b, e);
    DrId s = tg_kernel_node(g, tg_name(g, "scale", c), "scale_f32");
    tg_arg_buf(g, s, "x", "x", b, e);
    tg_arg_f(g, s, "alpha", 2.0);
    tg_arg_buf(g, s, "y", "y", b, e);
    DrId a = tg_kernel_node(g, tg_name(g, "acc", c), "axpy_f32");
    tg_arg_f(g, a, "alpha", 1.0);
    tg_arg_buf(g, a, "x", "y", b, e);
    tg_arg_buf(g, a, "y", "acc", b, e);
  }
  tg_copy(g, "down", "acc", 0, 0, "out", 0, 0);
  return g;
}

static void test_chunks_verify(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = chunks_graph(4, 256, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  g_assert_cmpuint(dr_plan_n_streams(plan), >=, 2);
  for (guint64 seed = 1; seed <= 5; seed++) {
    DrRunOptions o = host_opts(g, 2, 1);
    o.verify = TRUE;
    o.delay_seed = seed;
    o.delay_max_us = 100;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
    g_assert_true(dr_report_check_verified(r, NULL));
    gsize n;
    g_autofree float *out = tg_read_floats(path, &n);
    g_assert_cmpuint(n, ==, 1024);
    /* acc accumulates 2x once per iteration: 3 iterations (1 warmup). */
    for (gsize i = 0; i < n; i++) g_assert_cmpfloat(out[i], ==, 6.0f * (float)i);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* Two streams: A (stream 0) y += x; B (stream 1) z <- y. With the wait,
 * always right; without it (a broken plan), random delays let B run before
 * A and --verify must notice for some seed. */
static DrGraph *race_graph(void) {
  DrGraph *g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, 64, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "y", DR_ELEM_F32, 64, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  tg_buffer(g, "z", DR_ELEM_F32, 64, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId a = tg_kernel_node(g, "A", "axpy_f32");
  tg_arg_f(g, a, "alpha", 1.0);
  tg_arg_buf(g, a, "x", "x", 0, 0);
  tg_arg_buf(g, a, "y", "y", 0, 0);
  tg_copy(g, "B", "y", 0, 0, "z", 0, 0);
  tg_passes(g);
  return g;
}

static DrPlan *two_stream_plan(const DrGraph *g, gboolean with_wait) {
  DrPlan *p = dr_plan_new(g);
  DrStream s = {DR_PRIORITY_NORMAL, 1};
  g_array_append_val(p->streams, s);
  g_array_append_val(p->streams, s);
  DrPlanStep a = {0, 0, 0, 0}, b = {1, 1, 0, with_wait ? 1 : 0};
  g_array_append_val(p->steps, a);
  g_array_append_val(p->steps, b);
  p->node_stream[0] = 0;
  p->node_stream[1] = 1;
  p->node_step[0] = 0;
  p->node_step[1] = 1;
  if (with_wait) {
    DrId w = 0;
    g_array_append_val(p->waits, w);
    p->needs_event[0] = TRUE;
  }
  return p;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DR_UNDER_TSAN 1
#endif
#endif

static void test_verify_catches_missing_wait(void) {
#ifdef DR_UNDER_TSAN
  g_test_skip("the broken plan races on purpose; ThreadSanitizer would report it");
  return;
#endif
  g_autoptr(DrGraph) g = race_graph();
  g_autoptr(DrPlan) broken = two_stream_plan(g, FALSE);
  g_autoptr(DrPlan) good = two_stream_plan(g, TRUE);
  g_assert_false(dr_plan_check(broken, NULL));
  g_autoptr(GError) check = NULL;
  dr_plan_check(good, &check);
  g_assert_no_error(check);
  guint caught = 0;
  for (guint64 seed = 1; seed <= 20; seed++) {
    DrRunOptions o = host_opts(g, 1, 0);
    o.verify = TRUE;
    o.delay_seed = seed;
    o.delay_max_us = 2000;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(broken, &o, &error);
    g_assert_no_error(error);
    if (r->verified == DR_VERIFIED_FAIL) {
      caught++;
      g_assert_cmpstr(r->diff_buffer, ==, "z");
      /* B copied y before A added x: element 0 is 0 either way, so the
       * first difference is element 1 (serial 1, concurrent 0). */
      g_assert_cmpuint(r->diff_index, ==, 1);
      g_assert_cmpstr(r->diff_serial, ==, "1");
      g_assert_cmpstr(r->diff_concurrent, ==, "0");
      g_autoptr(GError) verr = NULL;
      g_assert_false(dr_report_check_verified(r, &verr));
      g_assert_error(verr, DR_ERROR, DR_ERROR_VERIFY);
      g_autoptr(GString) text = g_string_new(NULL);
      dr_report_write_text(r, text);
      g_assert_nonnull(strstr(text->str, "verify: FAILED: buffer 'z' element 1"));
    }
    g_autoptr(DrReport) r2 = dr_run(good, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r2->verified, ==, DR_VERIFIED_PASS);
  }
  g_test_message("missing wait caught for %u of 20 seeds", caught);
  g_assert_cmpuint(caught, >, 0);
}

/* A plan with the memory budget's edges (memory.limit) runs like any
 * other under --verify and the race shaker: four independent scratch
 * buffers, each scaled from x and copied out, under a limit of two at a
 * time (plus x): the host backend's measured high-water mark stays within
 * the limit for every seed, and the outputs match the serial run. */
static void test_memory_limit_shaken(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  const guint64 n = 256, k = 4;
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "out", DR_ELEM_F32, n * k, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  for (guint i = 0; i < k; i++)
    tg_buffer(g, tg_name(g, "s", i), DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  for (guint i = 0; i < k; i++) {
    const char *buf = tg_name(g, "s", i);
    tg_lifetime(g, tg_name(g, "alloc_s", i), buf, TRUE);
    DrId sc = tg_kernel_node(g, tg_name(g, "scale", i), "scale_f32");
    tg_arg_buf(g, sc, "x", "x", 0, 0);
    tg_arg_f(g, sc, "alpha", (double)(i + 1));
    tg_arg_buf(g, sc, "y", buf, 0, 0);
    tg_copy(g, tg_name(g, "out", i), buf, 0, 0, "out", i * n, (i + 1) * n);
    tg_lifetime(g, tg_name(g, "free_s", i), buf, FALSE);
  }
  guint64 whole = dr_pool_bytes(n * 4) + dr_pool_bytes(n * k * 4);
  g->run.memory_limit = whole + 2 * dr_pool_bytes(n * 4);
  g->run.memory_limit_set = TRUE;
  g_autoptr(DrPlan) plan = tg_plan(g);
  g_assert_true(g->budget.ran);
  g_assert_nonnull(g->memory_edges);
  g_assert_cmpuint(g->memory_edges->len, >=, 1);
  g_assert_cmpuint(g->budget.bound_before_bytes, ==, whole + k * dr_pool_bytes(n * 4));
  g_assert_cmpuint(plan->peak_bound_bytes, <=, g->run.memory_limit);
  g_assert_cmpuint(plan->width, ==, 2);
  for (guint64 seed = 1; seed <= 8; seed++) {
    DrRunOptions o = host_opts(g, 2, 1);
    o.verify = TRUE;
    o.delay_seed = seed;
    o.delay_max_us = 200;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
    g_assert_cmpuint(r->peak_measured_bytes, !=, G_MAXUINT64);
    g_assert_cmpuint(r->peak_measured_bytes, <=, g->run.memory_limit);
  }
}

/* The same broken plan with z's verify rule loosened: `skip` leaves z out
 * (and says so), a tolerance wide enough lets its difference pass with the
 * largest one reported, a tight one still catches it. Honest about what it
 * shows: on the host backend nothing differs legitimately, so the
 * difference here is the missing wait's race, which these rules are told
 * to accept. */
static void test_verify_rules_on_race(void) {
#ifdef DR_UNDER_TSAN
  g_test_skip("the broken plan races on purpose; ThreadSanitizer would report it");
  return;
#endif
  g_autoptr(DrGraph) g = race_graph();
  g_autoptr(DrPlan) broken = two_stream_plan(g, FALSE);
  DrBuffer *z = dr_graph_buffer(g, dr_graph_find_buffer(g, "z"));
  guint raced = 0;
  for (guint64 seed = 1; seed <= 20; seed++) {
    DrRunOptions o = host_opts(g, 1, 0);
    o.verify = TRUE;
    o.delay_seed = seed;
    o.delay_max_us = 2000;
    g_autoptr(GError) error = NULL;
    z->verify = DR_VERIFY_EXACT;
    g_autoptr(DrReport) exact = dr_run(broken, &o, &error);
    g_assert_no_error(error);
    if (exact->verified != DR_VERIFIED_FAIL) continue;
    raced++;
    z->verify = DR_VERIFY_SKIP;
    g_autoptr(DrReport) skip = dr_run(broken, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(skip->verified, ==, DR_VERIFIED_PASS);
    g_assert_cmpuint(skip->verify_skipped, ==, 1);
    g_autoptr(GString) text = g_string_new(NULL);
    dr_report_write_text(skip, text);
    g_assert_nonnull(strstr(text->str, "verify: passed; 1 buffer not compared (verify: skip)\n"));
    /* z = y after y += x, or y before it: they differ by x[i] = i < 64. */
    z->verify = DR_VERIFY_TOLERANCE;
    z->verify_rtol = 0.0;
    z->verify_atol = 64.0;
    g_autoptr(DrReport) loose = dr_run(broken, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(loose->verified, ==, DR_VERIFIED_PASS);
    if (loose->largest_buffer != NULL) {
      g_assert_cmpstr(loose->largest_buffer, ==, "z");
      g_assert_cmpfloat(loose->largest_abs, ==, (double)loose->largest_index);
      g_autoptr(GString) json = g_string_new(NULL);
      dr_report_write_json(loose, json);
      g_assert_nonnull(strstr(json->str, "\"largest_difference\": {\"buffer\": \"z\""));
    }
    z->verify_atol = 0.5;
    g_autoptr(DrReport) tight = dr_run(broken, &o, &error);
    g_assert_no_error(error);
    if (tight->verified == DR_VERIFIED_FAIL) g_assert_cmpstr(tight->diff_buffer, ==, "z");
  }
  z->verify = DR_VERIFY_EXACT;
  g_test_message("race seen for %u of 20 seeds", raced);
  g_assert_cmpuint(raced, >, 0);
}

/* The comparator itself on crafted captures: each rule, the largest
 * difference, the first element beyond a tolerance, NaN and infinities. */
static void test_verify_compare(void) {
  double diff;
  g_assert_true(dr__verify_within(1.0, 1.0, 0, 0, &diff));
  g_assert_cmpfloat(diff, ==, 0.0);
  g_assert_true(dr__verify_within(100.0, 100.5, 0.01, 0, &diff)); /* 0.5 <= 1 */
  g_assert_cmpfloat(diff, ==, 0.5);
  g_assert_false(dr__verify_within(100.0, 102.0, 0.01, 0, &diff)); /* 2 > 1 */
  g_assert_true(dr__verify_within(0.0, 1e-9, 0.5, 1e-8, &diff));   /* atol near zero */
  g_assert_false(dr__verify_within(0.0, 1e-9, 0.5, 0, &diff));
  g_assert_true(dr__verify_within(NAN, NAN, 0, 0, &diff));
  g_assert_false(dr__verify_within(NAN, 1.0, 1e9, 1e9, &diff));
  g_assert_false(dr__verify_within(1.0, NAN, 1e9, 1e9, &diff));
  g_assert_true(dr__verify_within(INFINITY, INFINITY, 0, 0, &diff));
  g_assert_false(dr__verify_within(INFINITY, 1.0, 1e9, 1e9, &diff));
  g_assert_false(dr__verify_within(-INFINITY, INFINITY, 1e9, 1e9, &diff));
  g_assert_false(dr__verify_within(1.0, INFINITY, 1e9, 1e9, &diff));

  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "e", DR_ELEM_F64, 4, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "t", DR_ELEM_F64, 4, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "c", DR_ELEM_I64, 2, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_buffer(g, "s", DR_ELEM_U8, 3, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  DrBuffer *t = dr_graph_buffer(g, 1), *c = dr_graph_buffer(g, 2), *s = dr_graph_buffer(g, 3);
  t->verify = DR_VERIFY_TOLERANCE, t->verify_rtol = 1e-12, t->verify_atol = 0;
  c->verify = DR_VERIFY_TOLERANCE, c->verify_rtol = 0, c->verify_atol = 10;
  s->verify = DR_VERIFY_SKIP;
  g_autoptr(DrPlan) plan = tg_plan(g);
  const double e[4] = {1, 2, 3, 4};
  /* The Jacobi case: the 15th digit differs. */
  const double t_ser[4] = {1.0, 0.1 + 0.2, 2.5, -7.0}, t_con[4] = {1.0, 0.3, 2.5, -7.000000000000001};
  const gint64 c_ser[2] = {1000, 2000}, c_con[2] = {1003, 1995};
  const guint8 s_ser[3] = {1, 2, 3}, s_con[3] = {9, 9, 9};
  GPtrArray *ser = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  GPtrArray *con = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_ptr_array_add(ser, g_bytes_new(e, sizeof e));
  g_ptr_array_add(con, g_bytes_new(e, sizeof e));
  g_ptr_array_add(ser, g_bytes_new(t_ser, sizeof t_ser));
  g_ptr_array_add(con, g_bytes_new(t_con, sizeof t_con));
  g_ptr_array_add(ser, g_bytes_new(c_ser, sizeof c_ser));
  g_ptr_array_add(con, g_bytes_new(c_con, sizeof c_con));
  g_ptr_array_add(ser, g_bytes_new(s_ser, sizeof s_ser));
  g_ptr_array_add(con, g_bytes_new(s_con, sizeof s_con));
  {
    DrReport *r = dr_report_new(plan, 1, 0);
    g_assert_true(dr__verify_compare(g, ser, con, r));
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
    g_assert_cmpuint(r->verify_skipped, ==, 1);
    /* The counter's 5 is the largest difference (t's are ~1e-16). */
    g_assert_cmpstr(r->largest_buffer, ==, "c");
    g_assert_cmpuint(r->largest_index, ==, 1);
    g_assert_cmpfloat(r->largest_abs, ==, 5.0);
    g_assert_cmpstr(r->largest_serial, ==, "2000");
    g_assert_cmpstr(r->largest_concurrent, ==, "1995");
    r->critical_path_us = NAN; /* no timings in this made-up report */
    g_autoptr(GString) text = g_string_new(NULL);
    dr_report_write_text(r, text);
    g_assert_nonnull(strstr(text->str,
                            "verify: passed; largest difference within tolerance 5: buffer 'c' element 1: "
                            "serial 2000, concurrent 1995; 1 buffer not compared (verify: skip)\n"));
    dr_report_free(r);
  }
  /* Exact buffers stay exact; a tolerance's first element beyond it is
   * the difference. */
  c->verify_atol = 4;
  {
    DrReport *r = dr_report_new(plan, 1, 0);
    g_assert_false(dr__verify_compare(g, ser, con, r));
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_FAIL);
    g_assert_cmpstr(r->diff_buffer, ==, "c");
    g_assert_cmpuint(r->diff_index, ==, 1);
    g_assert_cmpstr(r->largest_buffer, ==, "c"); /* element 0: 3 <= 4 */
    g_assert_cmpfloat(r->largest_abs, ==, 3.0);
    dr_report_free(r);
  }
  t->verify = DR_VERIFY_EXACT;
  {
    DrReport *r = dr_report_new(plan, 1, 0);
    g_assert_false(dr__verify_compare(g, ser, con, r));
    g_assert_cmpstr(r->diff_buffer, ==, "t");
    g_assert_cmpuint(r->diff_index, ==, 1);
    dr_report_free(r);
  }
  g_ptr_array_unref(ser);
  g_ptr_array_unref(con);
}

/* Stream-ordered scratch: alloc, memset, use, free, across iterations. */
static void test_alloc_free(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, 128, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "t", DR_ELEM_F32, 128, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  DrId out = tg_buffer(g, "out", DR_ELEM_F32, 128, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, out)->save_path = dr_graph_intern(g, path);
  tg_lifetime(g, "alloc_t", "t", TRUE);
  tg_memset(g, "zero_t", "t", 0);
  DrId a = tg_kernel_node(g, "acc", "axpy_f32");
  tg_arg_f(g, a, "alpha", 4.0);
  tg_arg_buf(g, a, "x", "x", 0, 0);
  tg_arg_buf(g, a, "y", "t", 0, 0);
  tg_copy(g, "down", "t", 0, 0, "out", 0, 0);
  tg_lifetime(g, "free_t", "t", FALSE);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 2, 1);
  o.verify = TRUE;
  o.delay_seed = 3;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  gsize n;
  g_autofree float *v = tg_read_floats(path, &n);
  g_assert_cmpuint(n, ==, 128);
  for (gsize i = 0; i < n; i++) g_assert_cmpfloat(v[i], ==, 4.0f * (float)i);
  g_remove(path);
  g_rmdir(dir);
}

/* Four lifetimes of one scratch buffer (decisions.md: any number): each
 * scales x by its own factor into t and copies t out, under --verify and
 * random delays; each lifetime's result must be its own. A fifth lifetime
 * copies t out without writing it: stream-ordered memory starts undefined,
 * and the host backend shows that as its alloc poison (0xA5 bytes), not
 * the previous lifetime's data. */
static void test_alloc_free_lifetimes(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = dr_graph_new();
  const guint64 n = 64, lives = 4;
  tg_buffer(g, "x", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "t", DR_ELEM_F32, n, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  DrId out = tg_buffer(g, "out", DR_ELEM_F32, n * (lives + 1), DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, out)->save_path = dr_graph_intern(g, path);
  for (guint k = 0; k < lives; k++) {
    tg_lifetime(g, tg_name(g, "alloc_t", k), "t", TRUE);
    DrId s = tg_kernel_node(g, tg_name(g, "scale", k), "scale_f32");
    tg_arg_buf(g, s, "x", "x", 0, 0);
    tg_arg_f(g, s, "alpha", (double)(k + 1));
    tg_arg_buf(g, s, "y", "t", 0, 0);
    tg_copy(g, tg_name(g, "down", k), "t", 0, 0, "out", k * n, (k + 1) * n);
    tg_lifetime(g, tg_name(g, "free_t", k), "t", FALSE);
  }
  tg_lifetime(g, "alloc_t_last", "t", TRUE);
  tg_copy(g, "down_undefined", "t", 0, 0, "out", lives * n, (lives + 1) * n);
  tg_lifetime(g, "free_t_last", "t", FALSE);
  g_autoptr(DrPlan) plan = tg_plan(g);
  for (guint64 seed = 1; seed <= 4; seed++) {
    DrRunOptions o = host_opts(g, 2, 1);
    o.verify = TRUE;
    o.delay_seed = seed;
    o.delay_max_us = 100;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
    /* The host backend measures what was live: within the plan's bound
     * (one 256-byte lifetime at a time here, plus the whole-run x). */
    g_assert_cmpuint(r->peak_measured_bytes, !=, G_MAXUINT64);
    g_assert_cmpuint(r->peak_measured_bytes, <=, r->peak_bound_bytes);
    g_assert_cmpuint(r->peak_bound_bytes, ==, plan->whole_run_bytes + dr_pool_bytes(n * sizeof(float)));
    g_assert_cmpuint(r->peak_measured_bytes, ==, r->peak_bound_bytes);
    gsize len;
    g_autofree float *v = tg_read_floats(path, &len);
    g_assert_cmpuint(len, ==, n * (lives + 1));
    for (guint k = 0; k < lives; k++)
      for (gsize i = 0; i < n; i++) g_assert_cmpfloat(v[k * n + i], ==, (float)(k + 1) * (float)i);
    const guint8 *undefined = (const guint8 *)(v + lives * n);
    for (gsize i = 0; i < n * sizeof(float); i++) g_assert_cmphex(undefined[i], ==, 0xA5);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* ---- initial contents ---------------------------------------------------- */

static guint64 ref_splitmix(guint64 *s) {
  guint64 z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Saves buffers with each init kind and checks the documented bytes. */
static void test_init_contents(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autoptr(DrGraph) g = dr_graph_new();
  const char *names[] = {"rf32", "ru8", "ri32", "if16", "if64", "zf32"};
  DrElemType types[] = {DR_ELEM_F32, DR_ELEM_U8, DR_ELEM_I32, DR_ELEM_F16, DR_ELEM_F64, DR_ELEM_F32};
  DrInitKind inits[] = {DR_INIT_RANDOM, DR_INIT_RANDOM, DR_INIT_RANDOM,
                        DR_INIT_IOTA,   DR_INIT_IOTA,   DR_INIT_ZEROS};
  char *paths[6];
  for (int i = 0; i < 6; i++) {
    DrId b =
        tg_buffer(g, names[i], types[i], 300, i == 5 ? DR_WHERE_HOST : DR_WHERE_DEVICE, inits[i], 42 + i);
    paths[i] = g_build_filename(dir, names[i], NULL);
    dr_graph_buffer(g, b)->save_path = dr_graph_intern(g, paths[i]);
  }
  tg_node(g, "nothing", DR_OP_NOOP);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 1, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);

  gsize len;
  g_autofree char *rf32 = NULL, *ru8 = NULL, *ri32 = NULL, *if16 = NULL, *if64 = NULL, *zf32 = NULL;
  g_assert_true(g_file_get_contents(paths[0], &rf32, &len, NULL));
  g_assert_cmpuint(len, ==, 1200);
  guint64 s = 42;
  for (int i = 0; i < 300; i++) {
    guint64 z = ref_splitmix(&s);
    float want = (float)((double)(z >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    g_assert_cmpfloat(((float *)rf32)[i], ==, want);
    g_assert_cmpfloat(want, >=, -1.0f);
    g_assert_cmpfloat(want, <=, 1.0f);
  }
  g_assert_true(g_file_get_contents(paths[1], &ru8, &len, NULL));
  g_assert_cmpuint(len, ==, 300);
  s = 43;
  for (int i = 0; i < 300; i++) g_assert_cmpuint((guint8)ru8[i], ==, ref_splitmix(&s) % 256);
  g_assert_true(g_file_get_contents(paths[2], &ri32, &len, NULL));
  s = 44;
  for (int i = 0; i < 300; i++)
    g_assert_cmpint(((gint32 *)ri32)[i], ==, (gint32)(ref_splitmix(&s) % 2001) - 1000);
  g_assert_true(g_file_get_contents(paths[3], &if16, &len, NULL));
  g_assert_cmpuint(len, ==, 600);
  g_assert_cmphex(((guint16 *)if16)[0], ==, 0x0000);
  g_assert_cmphex(((guint16 *)if16)[1], ==, 0x3c00);   /* 1.0 */
  g_assert_cmphex(((guint16 *)if16)[2], ==, 0x4000);   /* 2.0 */
  g_assert_cmphex(((guint16 *)if16)[299], ==, 0x5cac); /* 299.0 */
  g_assert_true(g_file_get_contents(paths[4], &if64, &len, NULL));
  for (int i = 0; i < 300; i++) g_assert_cmpfloat(((double *)if64)[i], ==, (double)i);
  g_assert_true(g_file_get_contents(paths[5], &zf32, &len, NULL));
  for (int i = 0; i < 300; i++) g_assert_cmpfloat(((float *)zf32)[i], ==, 0.0f);
  for (int i = 0; i < 6; i++) {
    g_remove(paths[i]);
    g_free(paths[i]);
  }
  g_rmdir(dir);
}

static void test_init_file(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *in = g_build_filename(dir, "in.bin", NULL);
  g_autofree char *outp = g_build_filename(dir, "out.bin", NULL);
  float data[16];
  for (int i = 0; i < 16; i++) data[i] = 0.5f * i;
  g_assert_true(g_file_set_contents(in, (const char *)data, sizeof data, NULL));
  g_autoptr(DrGraph) g = dr_graph_new();
  DrId b = tg_buffer(g, "a", DR_ELEM_F32, 16, DR_WHERE_DEVICE, DR_INIT_FILE, 0);
  dr_graph_buffer(g, b)->init_path = dr_graph_intern(g, in);
  DrId o = tg_buffer(g, "o", DR_ELEM_F32, 16, DR_WHERE_HOST, DR_INIT_NONE, 0);
  dr_graph_buffer(g, o)->save_path = dr_graph_intern(g, outp);
  tg_copy(g, "c", "a", 0, 0, "o", 0, 0);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions opts = host_opts(g, 1, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &opts, &error);
  g_assert_no_error(error);
  gsize n;
  g_autofree float *v = tg_read_floats(outp, &n);
  g_assert_cmpuint(n, ==, 16);
  g_assert_cmpmem(v, n * sizeof(float), data, sizeof data);

  /* A file of the wrong size is an I/O error, before anything runs. */
  g_assert_true(g_file_set_contents(in, (const char *)data, 12, NULL));
  g_autoptr(DrReport) r2 = dr_run(plan, &opts, &error);
  g_assert_null(r2);
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "buffer 'a'"));
  g_remove(in);
  g_remove(outp);
  g_rmdir(dir);
}

/* ---- host functions ------------------------------------------------------ */

/* print and checksum nodes write one implicit resource, the terminal: the
 * plan orders them in file order (an OUTPUT edge each, on one chain), and
 * however the workers are delayed their lines come out in that order;
 * sleep (no output) and the nodes of other ops stay free. */
static void test_host_output_order(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "h", DR_ELEM_I32, 16, DR_WHERE_HOST, DR_INIT_IOTA, 0);
  tg_buffer(g, "k", DR_ELEM_I32, 16, DR_WHERE_HOST, DR_INIT_ZEROS, 0);
  static const char *const ids[] = {"p0", "c1", "p2", "c3", "p4", "p5"};
  for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
    if (ids[i][0] == 'p')
      tg_host(g, ids[i], DR_HOST_FN_PRINT, NULL, ids[i]);
    else
      tg_host(g, ids[i], DR_HOST_FN_CHECKSUM, i % 2 ? "h" : "k", NULL);
    tg_host(g, tg_name(g, "nap", i), DR_HOST_FN_SLEEP, NULL, NULL);
  }
  g_autoptr(DrPlan) plan = tg_plan(g);
  guint32 output_edges = 0;
  for (guint32 i = 0; i < g->edges->len; i++) {
    const DrEdge *e = dr_graph_edge(g, i);
    if (e->kind != DR_EDGE_OUTPUT) continue;
    output_edges++;
    g_assert_cmpuint(e->buffer, ==, DR_NONE);
    /* From each printing node to the next printing one in file order. */
    g_assert_cmpuint(e->to, ==, e->from + 2);
  }
  g_assert_cmpuint(output_edges, ==, G_N_ELEMENTS(ids) - 1);
  /* The sleeps are free: 7 chains (the printers' one, six naps). */
  g_assert_cmpuint(dr_plan_n_streams(plan), ==, 7);
  for (guint64 seed = 1; seed <= 8; seed++) {
    FILE *out = tmpfile();
    DrRunOptions o = host_opts(g, 3, 0);
    o.host_output = out;
    o.delay_seed = seed;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    rewind(out);
    char buf[8192] = {0};
    size_t len = fread(buf, 1, sizeof buf - 1, out);
    fclose(out);
    g_assert_cmpuint(len, >, 0);
    /* Each iteration's lines, in file order, one iteration after another. */
    g_auto(GStrv) lines = g_strsplit(buf, "\n", -1);
    guint n = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
      if (lines[i][0] == '\0') continue;
      const char *id = ids[n % G_N_ELEMENTS(ids)];
      g_autofree char *want = ids[n % G_N_ELEMENTS(ids)][0] == 'p' ? g_strdup_printf("%s: %s", id, id)
                                                                   : g_strdup_printf("checksum %s ", id);
      if (!g_str_has_prefix(lines[i], want))
        g_error("seed %" G_GUINT64_FORMAT ": line %u '%s', want '%s...'", seed, i, lines[i], want);
      n++;
    }
    g_assert_cmpuint(n, ==, 3 * G_N_ELEMENTS(ids));
  }
}

static void test_host_functions(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "h", DR_ELEM_I32, 10, DR_WHERE_HOST, DR_INIT_IOTA, 0);
  tg_host(g, "sum", DR_HOST_FN_CHECKSUM, "h", NULL);
  tg_host(g, "say", DR_HOST_FN_PRINT, "h", "hello");
  tg_host(g, "hi", DR_HOST_FN_PRINT, NULL, "just text");
  g_autoptr(DrPlan) plan = tg_plan(g);
  FILE *out = tmpfile();
  DrRunOptions o = host_opts(g, 1, 0);
  o.host_output = out;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  rewind(out);
  char buf[4096] = {0};
  size_t len = fread(buf, 1, sizeof buf - 1, out);
  fclose(out);
  g_assert_cmpuint(len, >, 0);
  gint32 h[10];
  for (int i = 0; i < 10; i++) h[i] = i;
  guint64 fnv = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < sizeof h; i++) {
    fnv ^= ((guint8 *)h)[i];
    fnv *= 0x100000001b3ull;
  }
  g_autofree char *want = g_strdup_printf("checksum sum h 0x%016" G_GINT64_MODIFIER "x\n", fnv);
  g_assert_nonnull(strstr(buf, want));
  g_assert_nonnull(strstr(buf, "say: hello h[0, 1, 2, 3, 4, 5, 6, 7, ...]\n"));
  g_assert_nonnull(strstr(buf, "hi: just text\n"));
}

/* ---- report and trace ---------------------------------------------------- */

static void test_report_json_and_text(void) {
  g_autoptr(DrGraph) g = chunks_graph(3, 64, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 4, 1);
  o.verify = TRUE;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(r, json);
  g_assert_true(json_valid(json->str));
  g_assert_nonnull(strstr(json->str, "\"backend\": \"host\""));
  g_assert_nonnull(strstr(json->str, "\"mode\": \"streams\""));
  g_assert_nonnull(strstr(json->str, "\"iterations\": 4"));
  g_assert_nonnull(strstr(json->str, "\"verified\": true"));
  g_assert_nonnull(strstr(json->str, "\"makespan_us\": "));
  g_assert_cmpuint(count_substr(json->str, "{\"id\": "), ==, dr_graph_n_nodes(g));
  g_assert_cmpuint(count_substr(json->str, "\"start_us\": "), ==, dr_graph_n_nodes(g));
  /* One per node in "nodes"; the summary by kernel/op after it has its own
   * (the median over each row's instances). */
  char *summary = strstr(json->str, "\"summary\": [");
  g_assert_nonnull(summary);
  *summary = '\0';
  g_assert_cmpuint(count_substr(json->str, "\"duration_us\": "), ==, dr_graph_n_nodes(g));
  *summary = '"';
  g_assert_cmpuint(count_substr(summary, "\"duration_us\": "), ==, count_substr(summary, "{\"name\": "));
  g_assert_cmpuint(count_substr(summary, "{\"name\": "), >=, 2);
  g_assert_nonnull(strstr(json->str, "{\"id\": \"up0\", \"op\": \"copy\", \"stream\": "));

  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text(r, text);
  g_assert_nonnull(strstr(text->str, "backend host"));
  g_assert_nonnull(strstr(text->str, "scale2"));
  g_assert_nonnull(strstr(text->str, "verify: passed"));
  g_assert_nonnull(strstr(text->str, "makespan_us: median"));

  /* Without --verify the verdict is null. */
  DrRunOptions o2 = host_opts(g, 1, 0);
  g_autoptr(DrReport) r2 = dr_run(plan, &o2, &error);
  g_assert_no_error(error);
  g_autoptr(GString) json2 = g_string_new(NULL);
  dr_report_write_json(r2, json2);
  g_assert_true(json_valid(json2->str));
  g_assert_nonnull(strstr(json2->str, "\"verified\": null"));
}

static void test_trace(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "trace.json", NULL);
  g_autoptr(DrGraph) g = chunks_graph(4, 64, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 3, 1);
  o.trace_path = path;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_autofree char *trace = NULL;
  g_assert_true(g_file_get_contents(path, &trace, NULL, NULL));
  g_assert_true(json_valid(trace));
  g_assert_cmpuint(count_substr(trace, "\"ph\": \"X\""), ==, dr_graph_n_nodes(g) * 3);
  g_assert_cmpuint(count_substr(trace, "\"name\": \"thread_name\""), ==, dr_plan_n_streams(plan));
  g_assert_cmpuint(count_substr(trace, "\"ph\": \"s\""), ==, plan->waits->len * 3);
  g_assert_cmpuint(count_substr(trace, "\"ph\": \"f\""), ==, plan->waits->len * 3);
  g_assert_cmpuint(plan->waits->len, >, 0);
  g_assert_nonnull(strstr(trace, "\"name\": \"stream 0 (normal)\""));
  check_trace(trace, plan, 3);
  g_remove(path);
  g_rmdir(dir);
}

/* A diamond of host sleeps: a (30 ms) and b (1 ms) side by side, then c
 * after both. The critical path is a -> c, it explains nearly all of the
 * makespan, and two streams are used about half the time. */
static void test_critical_path(void) {
  static const char yaml[] =
      "dagrun: 1\n"
      "name: diamond\n"
      "run: {iterations: 3, warmup: 0}\n"
      "nodes:\n"
      "  a: {op: host, fn: sleep, args: {us: 30000}}\n"
      "  b: {op: host, fn: sleep, args: {us: 1000}}\n"
      "  c: {op: host, fn: sleep, args: {us: 1000}, after: [a, b]}\n";
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_load_string("diamond.yaml", yaml, sizeof yaml - 1, diags, &error);
  g_assert_no_error(error);
  g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  DrRunOptions o = host_opts(g, 3, 0);
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(r->critical_nodes->len, ==, 2);
  g_assert_cmpuint(g_array_index(r->critical_nodes, DrId, 0), ==, dr_graph_find_node(g, "a"));
  g_assert_cmpuint(g_array_index(r->critical_nodes, DrId, 1), ==, dr_graph_find_node(g, "c"));
  g_assert_cmpfloat(r->critical_path_us, >=, 31000);
  g_assert_cmpfloat(r->critical_path_us, <=, r->makespan_us * 1.01);
  g_assert_cmpfloat(r->overlap_critical, >, 0.8);
  g_assert_cmpfloat(r->overlap_critical, <=, 1.01);
  g_assert_cmpuint(r->streams_used, ==, 2);
  g_assert_cmpfloat(r->overlap_streams, >, 0.3);
  g_assert_cmpfloat(r->overlap_streams, <, 0.8);
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(r, json);
  g_assert_true(json_valid(json->str));
  g_autoptr(JNode) root = jparse(json->str);
  g_assert_cmpfloat(jget(root, "critical_path_us")->num, ==, round(r->critical_path_us * 1000) / 1000);
  JNode *cp = jget(root, "critical_path");
  g_assert_cmpuint(cp->kids->len, ==, 2);
  g_assert_cmpstr(((JNode *)g_ptr_array_index(cp->kids, 0))->str, ==, "a");
  g_assert_cmpfloat(jget(jget(root, "overlap"), "streams_used")->num, ==, 2);
  g_assert_cmpint(jget(jget(root, "overlap"), "efficiency")->kind, ==, 'n');
  g_assert_cmpint(jget(jget(root, "overlap"), "critical_over_makespan")->kind, ==, 'n');
  g_autoptr(GString) text = g_string_new(NULL);
  dr_report_write_text(r, text);
  g_assert_nonnull(strstr(text->str, "(2 nodes: a c)"));
  g_assert_nonnull(strstr(text->str, "overlap: 2 streams used, efficiency 0."));
}

/* The timeline names every node in a <title>, escapes ids that are not
 * XML-safe, and draws a bar per timed node and an arrow per wait. */
static void test_timeline_escaping(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "t.svg", NULL);
  g_autoptr(DrGraph) g = chunks_graph(3, 64, NULL);
  FILE *out = fopen("/dev/null", "w");
  tg_host(g, "say <&> \"hi\" 'x' (1)", DR_HOST_FN_PRINT, "out", "m");
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 2, 0);
  o.timeline_path = path;
  o.host_output = out;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  fclose(out);
  g_assert_no_error(error);
  g_autofree char *svg = NULL;
  g_assert_true(g_file_get_contents(path, &svg, NULL, NULL));
  check_svg(svg, g);
  g_assert_nonnull(strstr(svg, "say &lt;&amp;&gt; &quot;hi&quot; &apos;x&apos; (1)"));
  g_assert_cmpuint(count_substr(svg, "marker-end=\"url(#arrow)\""), ==, plan->waits->len);
  g_assert_cmpuint(plan->waits->len, >, 0);
  for (guint32 s = 0; s < dr_plan_n_streams(plan); s++) {
    g_autofree char *lane = g_strdup_printf(">stream %u (normal)</text>", s);
    g_assert_nonnull(strstr(svg, lane));
  }
  g_assert_nonnull(strstr(svg, ">copy</text>")); /* the legend */
  g_assert_nonnull(strstr(svg, ">host</text>"));
  /* Axis ticks in µs, or in ms when the (host-timed, so load-dependent)
   * iteration ran long. */
  g_assert_true(strstr(svg, "\xc2\xb5s</text>") != NULL || strstr(svg, " ms</text>") != NULL);
  g_remove(path);
  g_rmdir(dir);
}

/* Every example pipeline, run once on the host backend: the trace has the
 * documented structure, the timeline is XML naming every node, and the
 * JSON report parses with its new fields. */
static void test_examples_trace_and_timeline(void) {
  /* Bazel runs tests from the runfiles root, where graphs/ is. */
  g_autoptr(GDir) d = g_dir_open("graphs", 0, NULL);
  if (d == NULL) {
    g_test_skip("no graphs/ directory here");
    return;
  }
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *trace_path = g_build_filename(dir, "trace.json", NULL);
  g_autofree char *svg_path = g_build_filename(dir, "timeline.svg", NULL);
  FILE *devnull = fopen("/dev/null", "w");
  guint examples = 0;
  const char *f;
  while ((f = g_dir_read_name(d)) != NULL) {
    if (!g_str_has_suffix(f, ".yaml")) continue;
    g_autofree char *path = g_build_filename("graphs", f, NULL);
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(GError) error = NULL;
    g_autoptr(DrGraph) g = dr_load_file(path, diags, &error);
    g_assert_no_error(error);
    g_autoptr(DrPlan) plan = dr_plan_build(g, NULL, &error);
    g_assert_no_error(error);
    /* One iteration: transformer_block's host gemms take seconds. */
    DrRunOptions o = host_opts(g, 1, 0);
    o.trace_path = trace_path;
    o.timeline_path = svg_path;
    o.host_output = devnull;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_autofree char *trace = NULL, *svg = NULL;
    g_assert_true(g_file_get_contents(trace_path, &trace, NULL, NULL));
    g_assert_true(g_file_get_contents(svg_path, &svg, NULL, NULL));
    check_trace(trace, plan, 1);
    check_svg(svg, g);
    g_autoptr(GString) json = g_string_new(NULL);
    dr_report_write_json(r, json);
    g_autoptr(JNode) root = jparse(json->str);
    g_assert_nonnull(root);
    g_assert_cmpint(jget(root, "critical_path_us")->kind, ==, 'n');
    g_assert_cmpfloat(r->critical_path_us, >, 0);
    g_assert_cmpuint(r->critical_nodes->len, >, 0);
    g_test_message("%s: %u nodes, critical path %.1f us of makespan %.1f us, %u streams", f,
                   dr_graph_n_nodes(g), r->critical_path_us, r->makespan_us, r->streams_used);
    examples++;
  }
  fclose(devnull);
  g_assert_cmpuint(examples, >=, 5);
  g_remove(trace_path);
  g_remove(svg_path);
  g_rmdir(dir);
}

/* Runs the command line in-process; returns the exit code. */
static int cli(GString *out, GString *err, const char *a1, const char *a2, const char *a3, const char *a4,
               const char *a5, const char *a6) {
  char *argv[] = {"dagrun", (char *)a1, (char *)a2, (char *)a3, (char *)a4, (char *)a5, (char *)a6, NULL};
  int argc = 1;
  while (argv[argc]) argc++;
  g_string_truncate(out, 0);
  g_string_truncate(err, 0);
  return dr__cli_run(argc, argv, out, err);
}

/* The command line's --timing and --timeline: every mode is accepted (the
 * host times with its clocks whatever the mode), a bad one is exit 64,
 * --timeline writes the SVG, and the JSON report carries the critical
 * path and overlap. */
static void test_cli_timing_and_timeline(void) {
  if (!g_file_test("graphs/priority.yaml", G_FILE_TEST_EXISTS)) {
    g_test_skip("no graphs/ directory here");
    return;
  }
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *svg_path = g_build_filename(dir, "t.svg", NULL);
  g_autofree char *timeline = g_strdup_printf("--timeline=%s", svg_path);
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) err = g_string_new(NULL);
  g_assert_cmpint(cli(out, err, "--backend=host", "--timing=bogus", "graphs/priority.yaml", NULL, NULL, NULL),
                  ==, 64);
  g_assert_nonnull(strstr(err->str, "--timing must be auto, stamps, events or off, not 'bogus'"));
  const char *modes[] = {"--timing=stamps", "--timing=events", "--timing=off"};
  for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
    int rc = cli(out, err, "--backend=host", "--iterations=2", "--format=json", modes[i], timeline,
                 "graphs/priority.yaml");
    if (rc != 0) g_error("%s: exit %d: %s", modes[i], rc, err->str);
    g_autoptr(JNode) root = jparse(out->str);
    g_assert_nonnull(root);
    g_assert_cmpint(jget(root, "critical_path_us")->kind, ==, 'n');
    g_assert_cmpint(jget(jget(root, "overlap"), "efficiency")->kind, ==, 'n');
    g_autofree char *svg = NULL;
    g_assert_true(g_file_get_contents(svg_path, &svg, NULL, NULL));
    g_assert_true(g_str_has_prefix(svg, "<?xml"));
    g_assert_nonnull(strstr(svg, "</svg>"));
    g_remove(svg_path);
  }
  g_rmdir(dir);
}

/* A wide, long DAG (1000 nodes) still makes a valid, bounded timeline. */
static void test_timeline_large(void) {
  g_autoptr(DrGraph) g = chunks_graph(334, 16, NULL); /* 3 nodes per chunk and one */
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 1, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(r, plan, svg);
  check_svg(svg->str, g);
  g_assert_cmpuint(dr_graph_n_nodes(g), >=, 1000);
  /* The width is bounded (6000 px of plot at most). */
  const char *w = strstr(svg->str, "width=\"");
  g_assert_nonnull(w);
  g_assert_cmpfloat(g_ascii_strtod(w + 7, NULL), <=, 6000 + 200);
}

/* ---- the CUDA backend on a fake runtime --------------------------------- */

/* A synchronous CPU stand-in for the CUDA runtime, swapped in through
 * DrCudaApi: memory is host memory, copies and memsets happen at once,
 * kernels run their host twins, host functions are called in place, events
 * and streams are counted tokens. It runs the CUDA backend's eager path
 * (issue order, waits, alloc/free, init, read-back, verify) on machines
 * without a GPU, and with `fail_at` fails the Nth call to check every
 * failure path releases everything. Graph capture is not emulated. */
static struct {
  guint64 calls, fail_at;
  gint64 streams, events, mallocs, pinned, asyncs;
  gsize next_handle;
  guint64 clock_ns, stamps, self_stamps; /* the fake %globaltimer, stamp launches, self-stamps */
  guint64 instantiations, updates;
} fake;

static gboolean fake_tick(void) { return ++fake.calls == fake.fail_at; }

#define DR_X(name, params, args)              \
  static cudaError_t fake_##name params {     \
    if (fake_tick()) return cudaErrorUnknown; \
    return cudaSuccess;                       \
  }
DR_CUDA_API_LIST(DR_X)
#undef DR_X

#define FAKE_FAIL() \
  if (fake_tick()) return cudaErrorMemoryAllocation
static cudaError_t f_count(int *n) {
  FAKE_FAIL();
  *n = 1;
  return cudaSuccess;
}
static cudaError_t f_range(int *least, int *greatest) {
  FAKE_FAIL();
  *least = 0;
  *greatest = -5;
  return cudaSuccess;
}
static cudaError_t f_stream(cudaStream_t *s, unsigned f, int p) {
  FAKE_FAIL();
  *s = (cudaStream_t)GSIZE_TO_POINTER(++fake.next_handle);
  fake.streams++;
  return cudaSuccess;
}
static cudaError_t f_stream_destroy(cudaStream_t s) {
  fake.streams--;
  return cudaSuccess;
}
static cudaError_t f_event(cudaEvent_t *e, unsigned f) {
  FAKE_FAIL();
  *e = (cudaEvent_t)GSIZE_TO_POINTER(++fake.next_handle);
  fake.events++;
  return cudaSuccess;
}
static cudaError_t f_event_destroy(cudaEvent_t e) {
  fake.events--;
  return cudaSuccess;
}
static cudaError_t f_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) {
  FAKE_FAIL();
  *ms = 0.001f;
  return cudaSuccess;
}
static cudaError_t f_malloc(void **p, size_t n) {
  FAKE_FAIL();
  *p = g_malloc0(n);
  fake.mallocs++;
  return cudaSuccess;
}
static cudaError_t f_free(void *p) {
  g_free(p);
  fake.mallocs--;
  return cudaSuccess;
}
static cudaError_t f_malloc_host(void **p, size_t n) {
  FAKE_FAIL();
  *p = g_malloc0(n);
  fake.pinned++;
  return cudaSuccess;
}
static cudaError_t f_free_host(void *p) {
  g_free(p);
  fake.pinned--;
  return cudaSuccess;
}
static cudaError_t f_malloc_async(void **p, size_t n, cudaStream_t s) {
  FAKE_FAIL();
  *p = g_malloc(n);
  memset(*p, 0xab, n); /* stream-ordered memory starts undefined */
  fake.asyncs++;
  return cudaSuccess;
}
static cudaError_t f_free_async(void *p, cudaStream_t s) {
  FAKE_FAIL();
  g_free(p);
  fake.asyncs--;
  return cudaSuccess;
}
static cudaError_t f_memcpy_async(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
  FAKE_FAIL();
  memmove(d, s, n);
  return cudaSuccess;
}
static cudaError_t f_memset_async(void *d, int v, size_t n, cudaStream_t st) {
  FAKE_FAIL();
  memset(d, v, n);
  return cudaSuccess;
}
static cudaError_t f_host_func(cudaStream_t st, cudaHostFn_t fn, void *data) {
  FAKE_FAIL();
  fn(data);
  return cudaSuccess;
}
static cudaError_t f_pass(void) { return cudaSuccess; }
static cudaError_t f_sync(void) {
  FAKE_FAIL();
  return cudaSuccess;
}
static int f_kernel(const DrKernelDef *def, const DrKLaunch *l) {
  if (fake_tick()) return cudaErrorLaunchOutOfResources;
  char err[256];
  if (def->host(l, err) != 0) return cudaErrorLaunchFailure;
  if (l->stamp != NULL) { /* a self-stamping built-in: its end, like f_stamp */
    g_assert_true(def->flags & DR_KFLAG_STAMPS);
    fake.clock_ns += 1000;
    *(unsigned long long *)l->stamp = 1000000000ull + fake.clock_ns;
    fake.self_stamps++;
  }
  return cudaSuccess;
}

/* The stamp kernel: the fake clock advances 1 µs per stamp, so stamps
 * increase in issue order. */
static int f_stamp(unsigned long long *slot, cudaStream_t st) {
  if (fake_tick()) return cudaErrorLaunchFailure;
  fake.clock_ns += 1000;
  *slot = 1000000000ull + fake.clock_ns;
  fake.stamps++;
  return cudaSuccess;
}

static DrCudaApi fake_api(void) {
  DrCudaApi api = {
#define DR_X(name, params, args) .name = fake_##name,
      DR_CUDA_API_LIST(DR_X)
#undef DR_X
  };
  api.cudaGetDeviceCount = f_count;
  api.cudaDeviceGetStreamPriorityRange = f_range;
  api.cudaStreamCreateWithPriority = f_stream;
  api.cudaStreamDestroy = f_stream_destroy;
  api.cudaEventCreateWithFlags = f_event;
  api.cudaEventDestroy = f_event_destroy;
  api.cudaEventElapsedTime = f_elapsed;
  api.cudaMalloc = f_malloc;
  api.cudaFree = f_free;
  api.cudaMallocHost = f_malloc_host;
  api.cudaFreeHost = f_free_host;
  api.cudaMallocAsync = f_malloc_async;
  api.cudaFreeAsync = f_free_async;
  api.cudaMemcpyAsync = f_memcpy_async;
  api.cudaMemsetAsync = f_memset_async;
  api.cudaLaunchHostFunc = f_host_func;
  api.cudaDeviceSynchronize = f_sync; /* the checked drain after the last iteration */
  api.cudaGetLastError = f_pass;
  api.cudaGetErrorName = dr_cuda_api_default()->cudaGetErrorName;
  api.cudaGetErrorString = dr_cuda_api_default()->cudaGetErrorString;
  api.kernel_launch = f_kernel;
  api.stamp_launch = f_stamp;
  return api;
}

static gboolean fake_balanced(void) {
  return fake.streams == 0 && fake.events == 0 && fake.mallocs == 0 && fake.pinned == 0 && fake.asyncs == 0;
}

/* The chunked pipeline on the fake runtime equals the host backend, with
 * verify, alloc/free and a host node; the report says cuda/streams. */
static void test_cuda_fake_pipeline(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "out.bin", NULL);
  g_autoptr(DrGraph) g = chunks_graph(4, 256, path);
  tg_buffer(g, "t", DR_ELEM_F32, 64, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_lifetime(g, "alloc_t", "t", TRUE);
  tg_memset(g, "zero_t", "t", 0);
  /* A kernel on stream-ordered memory: its pointer changes every
   * iteration (the fake's cudaMallocAsync is g_malloc), so the launch bound
   * at setup must be refreshed before each. */
  DrId st = tg_kernel_node(g, "scale_t", "scale_f32");
  tg_arg_buf(g, st, "x", "t", 0, 0);
  tg_arg_f(g, st, "alpha", 3.0);
  tg_arg_buf(g, st, "y", "t", 0, 0);
  tg_copy(g, "t_to_acc", "t", 0, 0, "acc", 0, 64);
  tg_lifetime(g, "free_t", "t", FALSE);
  tg_host(g, "sum", DR_HOST_FN_CHECKSUM, "out", NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  FILE *out = tmpfile();
  DrRunOptions ho = host_opts(g, 2, 1);
  ho.host_output = out;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) rh = dr_run(plan, &ho, &error);
  g_assert_no_error(error);
  gsize n;
  g_autofree float *want = tg_read_floats(path, &n);

  DrCudaApi api = fake_api();
  dr_cuda_api_set(&api);
  memset(&fake, 0, sizeof fake);
  DrRunOptions co = host_opts(g, 2, 1);
  co.backend = DR_BACKEND_CUDA;
  co.verify = TRUE;
  co.host_output = out;
  g_autoptr(DrReport) rc = dr_run(plan, &co, &error);
  dr_cuda_api_set(NULL);
  g_assert_no_error(error);
  g_assert_true(fake_balanced());
  g_assert_cmpstr(rc->backend, ==, "cuda");
  g_assert_cmpstr(rc->mode, ==, "streams");
  g_assert_cmpint(rc->verified, ==, DR_VERIFIED_PASS);
  g_autofree float *got = tg_read_floats(path, &n);
  g_assert_cmpmem(got, n * sizeof(float), want, n * sizeof(float));
  /* The checksum host node ran through cudaLaunchHostFunc's trampoline
   * 3 times per run: once per host iteration, twice as many with verify. */
  rewind(out);
  char buf[8192] = {0};
  size_t len = fread(buf, 1, sizeof buf - 1, out);
  fclose(out);
  g_assert_cmpuint(len, >, 0);
  g_assert_cmpuint(count_substr(buf, "checksum sum out 0x"), ==, 3 + 6);
  g_remove(path);
  g_rmdir(dir);
}

/* Stamp timing on the fake runtime: a stamp per node and one per
 * iteration, each node's end is its stamp and its start the latest end
 * among its stream predecessor and its waits (or the iteration's start).
 * A table without stamp_launch falls back to events. */
static void test_cuda_fake_stamps(void) {
  g_autoptr(DrGraph) g = chunks_graph(3, 64, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  g_assert_cmpuint(dr_plan_n_streams(plan), >, 1);
  DrCudaApi api = fake_api();
  dr_cuda_api_set(&api);
  memset(&fake, 0, sizeof fake);
  DrRunOptions o = host_opts(g, 2, 1);
  o.backend = DR_BACKEND_CUDA;
  o.node_timing = DR_TIMING_STAMPS; /* auto would pick events eagerly */
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(fake_balanced());
  guint32 n = dr_graph_n_nodes(g), n_kernels = 0;
  for (DrId i = 0; i < n; i++) n_kernels += dr_graph_node(g, i)->op == DR_OP_KERNEL;
  g_assert_cmpuint(n_kernels, >, 0);
  /* Built-in kernels stamp their own end; every other node and the
   * iteration's start take a stamp launch. Warmup + 2 iterations. */
  g_assert_cmpuint(fake.self_stamps, ==, (guint64)n_kernels * 3);
  g_assert_cmpuint(fake.stamps, ==, (guint64)(n - n_kernels + 1) * 3);
  for (guint32 it = 0; it < 2; it++) {
    const double *st = r->sample_start + (gsize)it * n, *en = r->sample_end + (gsize)it * n;
    g_autofree double *last_end = g_new0(double, dr_plan_n_streams(plan));
    for (guint32 i = 0; i < plan->steps->len; i++) {
      const DrPlanStep *step = dr_plan_step(plan, i);
      DrId v = step->node;
      double ready = last_end[step->stream];
      for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++)
        ready = MAX(ready, en[dr_plan_wait(plan, w)]);
      g_assert_cmpfloat(st[v], ==, ready);
      g_assert_cmpfloat(en[v], >, st[v]);
      last_end[step->stream] = en[v];
    }
  }
  g_assert_false(isnan(r->critical_path_us));

  /* Graph mode captures the stamps like any kernel: the fake does not run
   * captured work, but the run must be clean and balanced. */
  memset(&fake, 0, sizeof fake);
  o.mode = DR_MODE_GRAPH;
  g_autoptr(DrReport) rg = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(fake_balanced());
  g_assert_cmpuint(fake.stamps, ==, n + 1); /* once, at capture */

  /* No stamp_launch in the table: events instead, no stamp at all. */
  api.stamp_launch = NULL;
  memset(&fake, 0, sizeof fake);
  o.mode = DR_MODE_STREAMS;
  g_autoptr(DrReport) re = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(fake_balanced());
  g_assert_cmpuint(fake.stamps, ==, 0);
  g_assert_cmpfloat(g_array_index(re->nodes, DrNodeReport, 0).duration_us, ==, 0); /* f_elapsed: all 1 µs */

  /* Timing off: no node times, so no critical path, and null in JSON. */
  o.node_timing = DR_TIMING_OFF;
  g_autoptr(DrReport) off = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(isnan(off->critical_path_us));
  g_assert_true(isnan(g_array_index(off->nodes, DrNodeReport, 0).duration_us));
  g_autoptr(GString) json_off = g_string_new(NULL);
  dr_report_write_json(off, json_off);
  g_assert_true(json_valid(json_off->str));
  g_assert_nonnull(strstr(json_off->str, "\"critical_path_us\": null, \"critical_path\": []"));
  g_autoptr(GString) svg = g_string_new(NULL);
  dr_timeline_write_svg(off, plan, svg);
  check_svg(svg->str, g);
  g_assert_nonnull(strstr(svg->str, "nodes were not timed"));
  dr_cuda_api_set(NULL);
}

/* Graph capture on the fake: a graph and an executable are handles. */
static cudaError_t f_end_capture(cudaStream_t s, cudaGraph_t *g) {
  if (fake_tick()) return cudaErrorStreamCaptureInvalidated;
  *g = (cudaGraph_t)GSIZE_TO_POINTER(++fake.next_handle);
  return cudaSuccess;
}
static cudaError_t f_instantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long f) {
  if (fake_tick()) return cudaErrorMemoryAllocation;
  *e = (cudaGraphExec_t)GSIZE_TO_POINTER(++fake.next_handle);
  fake.instantiations++;
  return cudaSuccess;
}
static cudaError_t f_exec_update_ok(cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info) {
  fake.updates++;
  return cudaSuccess;
}
static cudaError_t f_exec_update_refused(cudaGraphExec_t e, cudaGraph_t g,
                                         cudaGraphExecUpdateResultInfo *info) {
  fake.updates++;
  info->result = cudaGraphExecUpdateErrorTopologyChanged;
  return cudaErrorGraphExecUpdateFailure;
}

/* dr__cuda_graph_update on the fake: an accepted update keeps the
 * executable (no instantiation), a refused one or a table without the
 * entry re-instantiates; nothing leaks either way. */
static void test_cuda_fake_graph_update(void) {
  g_autoptr(DrGraph) g = scale_axpy_graph(16, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrCudaApi api = fake_api();
  api.cudaStreamEndCapture = f_end_capture;
  api.cudaGraphInstantiate = f_instantiate;
  dr_cuda_api_set(&api);
  for (int k = 0; k < 3; k++) {
    api.cudaGraphExecUpdate = k == 0 ? f_exec_update_ok : k == 1 ? f_exec_update_refused : NULL;
    memset(&fake, 0, sizeof fake);
    DrRunOptions o = host_opts(g, 1, 0);
    o.backend = DR_BACKEND_CUDA;
    o.mode = DR_MODE_GRAPH;
    g_autoptr(GError) error = NULL;
    DrBackend *b = dr__cuda_backend.open(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_true(dr__cuda_backend.setup(b, &error));
    g_assert_true(dr__cuda_backend.run_iteration(b, 0, NULL, &error));
    g_assert_cmpuint(fake.instantiations, ==, 1);
    const char *how = NULL;
    g_assert_true(dr__cuda_graph_update(b, &how, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(how, ==, k == 0 ? "updated" : "re-instantiated");
    g_assert_cmpuint(fake.instantiations, ==, k == 0 ? 1 : 2);
    g_assert_cmpuint(fake.updates, ==, k < 2 ? 1 : 0);
    g_assert_true(dr__cuda_backend.run_iteration(b, 1, NULL, &error));
    dr__cuda_backend.close(b);
    g_assert_true(fake_balanced());
  }
  dr_cuda_api_set(NULL);
}

/* A node whose launch breaks the capture (here: the fake marks the
 * capture invalidated when axpy_f32 is launched while capturing, as a
 * library kernel making a synchronous call would). Graph mode fails naming
 * that node; with run.fallback: streams the run goes on eagerly, reports
 * streams mode and computes the right result. Nothing leaks either way. */
static struct {
  gboolean capturing, broken;
  gboolean launch_fails; /* the breaking launch also returns the error */
} cap;
static cudaError_t f_begin_capture(cudaStream_t s, enum cudaStreamCaptureMode m) {
  if (fake_tick()) return cudaErrorUnknown;
  cap.capturing = TRUE;
  cap.broken = FALSE;
  return cudaSuccess;
}
static cudaError_t f_end_capture_breakable(cudaStream_t s, cudaGraph_t *g) {
  cap.capturing = FALSE;
  if (cap.broken) return cudaErrorStreamCaptureInvalidated;
  *g = (cudaGraph_t)GSIZE_TO_POINTER(++fake.next_handle);
  return cudaSuccess;
}
static int f_kernel_breaking(const DrKernelDef *def, const DrKLaunch *l) {
  if (cap.capturing && strcmp(def->name, "axpy_f32") == 0) {
    cap.broken = TRUE; /* by default "returns success", like a launcher that ignores the error */
    return cap.launch_fails ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  }
  return f_kernel(def, l);
}
static cudaError_t f_capture_info(cudaStream_t s, enum cudaStreamCaptureStatus *status,
                                  unsigned long long *id, cudaGraph_t *graph, const cudaGraphNode_t **deps,
                                  const cudaGraphEdgeData **edge_data, size_t *n_deps) {
  *status = !cap.capturing ? cudaStreamCaptureStatusNone
            : cap.broken   ? cudaStreamCaptureStatusInvalidated
                           : cudaStreamCaptureStatusActive;
  if (n_deps) *n_deps = 0;
  return cudaSuccess;
}

static void test_cuda_fake_uncapturable(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "yh.bin", NULL);
  g_autoptr(DrGraph) g = scale_axpy_graph(64, path);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrCudaApi api = fake_api();
  api.cudaStreamBeginCapture = f_begin_capture;
  api.cudaStreamEndCapture = f_end_capture_breakable;
  api.cudaGraphInstantiate = f_instantiate;
  api.cudaStreamGetCaptureInfo = f_capture_info;
  api.kernel_launch = f_kernel_breaking;
  dr_cuda_api_set(&api);
  for (int k = 0; k < 3; k++) {
    gboolean fallback = k == 1;
    cap.launch_fails = k == 2;
    memset(&fake, 0, sizeof fake);
    DrRunOptions o = host_opts(g, 2, 1);
    o.backend = DR_BACKEND_CUDA;
    o.mode = DR_MODE_GRAPH;
    o.graph_fallback = fallback;
    g_autoptr(GError) error = NULL;
    /* The fallback is the library's one warning, through g_log. */
    if (fallback)
      g_test_expect_message("dagrun", G_LOG_LEVEL_WARNING,
                            "node 'axpy'*cannot be captured*running in streams mode instead*");
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    if (fallback) g_test_assert_expected_messages();
    g_assert_true(fake_balanced());
    if (!fallback) {
      g_assert_null(r);
      g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
      g_assert_nonnull(strstr(error->message, "node 'axpy' (stream "));
      g_assert_nonnull(strstr(error->message, "cannot be captured into a CUDA graph"));
      /* A launch that failed too: its own error follows. */
      g_assert_true((strstr(error->message, "(then: node 'axpy'") != NULL) == cap.launch_fails);
      g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
      continue;
    }
    g_assert_no_error(error);
    g_assert_cmpstr(r->mode, ==, "streams");
    gsize n;
    g_autofree float *got = tg_read_floats(path, &n);
    g_assert_cmpuint(n, ==, 64);
    for (gsize i = 0; i < n; i++) g_assert_cmpfloat(got[i], ==, 5.0f * (float)i);
    g_remove(path);
  }
  cap.launch_fails = FALSE;
  dr_cuda_api_set(NULL);
  g_remove(path);
  g_rmdir(dir);
}

/* Fails every call of a clean run in turn: each failure is an error that
 * names the call (or the device probe), and nothing leaks. */
/* A fake NCCL behind the same table (backends/nccl_api.h): one rank, on
 * the fake CUDA's host memory, computed at the call (the fake streams run
 * everything at once). Counts communicators and fails its Nth call. */
static struct {
  guint64 calls, fail_at;
  gint64 comms;
  const void *pending_send;
  size_t pending_bytes;
} fnccl;

static size_t fnccl_size(int type) {
  return type == 1 ? 1 : type == 4 || type == 8 ? 8 : type == 6 || type == 9 ? 2 : 4;
}
static DrNcclResult fnccl_tick(void) { return ++fnccl.calls == fnccl.fail_at ? 2 /* ncclSystemError */ : 0; }
static DrNcclResult fnccl_version(int *v) {
  *v = 22809;
  return fnccl_tick();
}
static DrNcclResult fnccl_uid(DrNcclUniqueId *id) {
  memset(id, 0, sizeof *id);
  return fnccl_tick();
}
static DrNcclResult fnccl_init_all(DrNcclComm *comms, int ndev, const int *devs) {
  (void)devs;
  if (fnccl_tick()) return 2;
  for (int i = 0; i < ndev; i++) comms[i] = (DrNcclComm)GINT_TO_POINTER(0x100 + i);
  fnccl.comms += ndev;
  return 0;
}
static DrNcclResult fnccl_init_rank(DrNcclComm *c, int n, DrNcclUniqueId id, int r) {
  (void)c, (void)n, (void)id, (void)r;
  return 5; /* ncclInvalidUsage: one process here */
}
static DrNcclResult fnccl_destroy(DrNcclComm c) {
  (void)c;
  fnccl.comms--;
  return 0;
}
static DrNcclResult fnccl_async(DrNcclComm c, DrNcclResult *r) {
  (void)c;
  *r = 0;
  return 0;
}
static DrNcclResult fnccl_group(void) { return fnccl_tick(); }
static DrNcclResult fnccl_allreduce(const void *s, void *d, size_t n, int t, int op, DrNcclComm c,
                                    cudaStream_t st) {
  (void)op, (void)c, (void)st;
  if (fnccl_tick()) return 2;
  memmove(d, s, n * fnccl_size(t));
  return 0;
}
static DrNcclResult fnccl_bcast(const void *s, void *d, size_t n, int t, int root, DrNcclComm c,
                                cudaStream_t st) {
  return fnccl_allreduce(s, d, n, t, root, c, st);
}
static DrNcclResult fnccl_reduce(const void *s, void *d, size_t n, int t, int op, int root, DrNcclComm c,
                                 cudaStream_t st) {
  (void)root;
  return fnccl_allreduce(s, d, n, t, op, c, st);
}
static DrNcclResult fnccl_allgather(const void *s, void *d, size_t n, int t, DrNcclComm c, cudaStream_t st) {
  return fnccl_allreduce(s, d, n, t, 0, c, st);
}
static DrNcclResult fnccl_rs(const void *s, void *d, size_t n, int t, int op, DrNcclComm c, cudaStream_t st) {
  return fnccl_allreduce(s, d, n, t, op, c, st);
}
static DrNcclResult fnccl_send(const void *s, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  (void)peer, (void)c, (void)st;
  if (fnccl_tick()) return 2;
  fnccl.pending_send = s;
  fnccl.pending_bytes = n * fnccl_size(t);
  return 0;
}
static DrNcclResult fnccl_recv(void *d, size_t n, int t, int peer, DrNcclComm c, cudaStream_t st) {
  (void)peer, (void)c, (void)st, (void)n, (void)t;
  if (fnccl_tick()) return 2;
  memmove(d, fnccl.pending_send, fnccl.pending_bytes);
  return 0;
}
static const char *fnccl_err(DrNcclResult r) {
  return r == 2 ? "unhandled system error (fake)" : "fake error";
}

static const DrNcclApi fake_nccl = {
    fnccl_version,   fnccl_uid,   fnccl_init_all, fnccl_init_rank, fnccl_destroy, fnccl_destroy,
    fnccl_async,     fnccl_group, fnccl_group,    fnccl_allreduce, fnccl_bcast,   fnccl_reduce,
    fnccl_allgather, fnccl_rs,    fnccl_send,     fnccl_recv,      fnccl_err};

static DrGraph *collectives_graph(const char *dir) {
  g_autofree char *path = g_build_filename(dir, "coll.yaml", NULL);
  const char *yaml =
      "dagrun: 1\n"
      "run: {iterations: 2, warmup: 1}\n"
      "buffers:\n"
      "  a: {type: f32, count: 64, init: iota}\n"
      "  b: {type: f32, count: 64}\n"
      "  c: {type: f32, count: 64}\n"
      "  h: {type: f32, count: 64, where: host}\n"
      "nodes:\n"
      "  ar: {op: allreduce, src: a, dst: b}\n"
      "  bc: {op: broadcast, buffers: b}\n"
      "  rd: {op: reduce, reduce: max, src: b, dst: c}\n"
      "  ag: {op: allgather, src: c, dst: b}\n"
      "  rs: {op: reducescatter, src: b, dst: c}\n"
      "  aa: {op: alltoall, src: c, dst: b}\n"
      "  k: {op: kernel, kernel: scale_f32, args: {x: b, alpha: 2.0, y: c}}\n"
      "  down: {op: copy, src: c, dst: h}\n";
  g_assert_true(g_file_set_contents(path, yaml, -1, NULL));
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_file(path, diags, &error);
  g_assert_no_error(error);
  g_remove(path);
  return g;
}

/* Every collective on one device through the fake CUDA and fake NCCL
 * tables: the run verifies and matches the host backend's result; then
 * each NCCL call in turn fails: reported naming the call, and neither a
 * communicator nor a CUDA handle leaks (a failed one is aborted). */
static void test_cuda_fake_nccl(void) {
  g_autofree char *dir = g_dir_make_tmp("drtest-XXXXXX", NULL);
  g_autoptr(DrGraph) g = collectives_graph(dir);
  g_autoptr(DrPlan) plan = tg_plan(g);
  guint comm_streams = 0;
  for (guint32 s = 0; s < plan->streams->len; s++)
    comm_streams += g_array_index(plan->streams, DrStream, s).comm;
  g_assert_cmpuint(comm_streams, ==, 1);
  DrCudaApi api = fake_api();
  dr_cuda_api_set(&api);
  dr_nccl_api_set(&fake_nccl);
  DrRunOptions o = host_opts(g, 2, 1);
  o.backend = DR_BACKEND_CUDA;
  o.verify = TRUE;
  memset(&fake, 0, sizeof fake);
  memset(&fnccl, 0, sizeof fnccl);
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  }
  g_assert_true(fake_balanced());
  g_assert_cmpint(fnccl.comms, ==, 0);
  guint64 total = fnccl.calls;
  g_assert_cmpuint(total, >, 10);
  for (guint64 k = 1; k <= total; k++) {
    memset(&fake, 0, sizeof fake);
    memset(&fnccl, 0, sizeof fnccl);
    fnccl.fail_at = k;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    if (r != NULL)
      g_error("failing NCCL call %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " went unnoticed", k, total);
    g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
    g_assert_nonnull(strstr(error->message, "failed: unhandled system error (fake)"));
    g_assert_true(strstr(error->message, "nccl") != NULL);
    if (!fake_balanced() || fnccl.comms != 0)
      g_error("failing NCCL call %" G_GUINT64_FORMAT " (%s) leaked (communicators %" G_GINT64_FORMAT ")", k,
              error->message, fnccl.comms);
  }
  dr_nccl_api_set(NULL);
  dr_cuda_api_set(NULL);
  g_rmdir(dir);
  g_test_message("%" G_GUINT64_FORMAT " NCCL calls failed in turn, all reported, nothing leaked", total);
}

static void test_cuda_fake_faults(void) {
  g_autoptr(DrGraph) g = chunks_graph(3, 64, NULL);
  tg_buffer(g, "t", DR_ELEM_F32, 64, DR_WHERE_DEVICE, DR_INIT_NONE, 0);
  tg_lifetime(g, "alloc_t", "t", TRUE);
  tg_memset(g, "zero_t", "t", 0);
  tg_lifetime(g, "free_t", "t", FALSE);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrCudaApi api = fake_api();
  dr_cuda_api_set(&api);
  DrRunOptions o = host_opts(g, 2, 1);
  o.backend = DR_BACKEND_CUDA;
  o.verify = TRUE;
  memset(&fake, 0, sizeof fake);
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    g_assert_no_error(error);
  }
  guint64 total = fake.calls;
  g_assert_true(fake_balanced());
  g_assert_cmpuint(total, >, 50);
  for (guint64 k = 1; k <= total; k++) {
    memset(&fake, 0, sizeof fake);
    fake.fail_at = k;
    g_autoptr(GError) error = NULL;
    g_autoptr(DrReport) r = dr_run(plan, &o, &error);
    if (r != NULL)
      g_error("failing call %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " went unnoticed", k, total);
    g_assert_true(error->domain == DR_ERROR);
    g_assert_true(error->code == DR_ERROR_RUNTIME || error->code == DR_ERROR_UNAVAILABLE);
    g_assert_true(strstr(error->message, "failed") || strstr(error->message, "kernel launch") ||
                  strstr(error->message, "no usable CUDA device"));
    if (!fake_balanced())
      g_error("failing call %" G_GUINT64_FORMAT " (%s) leaked: streams %" G_GINT64_FORMAT
              " events %" G_GINT64_FORMAT " mallocs %" G_GINT64_FORMAT " pinned %" G_GINT64_FORMAT
              " async %" G_GINT64_FORMAT,
              k, error->message, fake.streams, fake.events, fake.mallocs, fake.pinned, fake.asyncs);
  }
  dr_cuda_api_set(NULL);
  g_test_message("%" G_GUINT64_FORMAT " injected failures, all reported, nothing leaked", total);
}

/* ---- errors and backend choice ------------------------------------------- */

static void test_kernel_check_error(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  tg_buffer(g, "x", DR_ELEM_F32, 10, DR_WHERE_DEVICE, DR_INIT_IOTA, 0);
  tg_buffer(g, "y", DR_ELEM_F32, 20, DR_WHERE_DEVICE, DR_INIT_ZEROS, 0);
  DrId a = tg_kernel_node(g, "bad_axpy", "axpy_f32");
  tg_arg_f(g, a, "alpha", 1.0);
  tg_arg_buf(g, a, "x", "x", 0, 0);
  tg_arg_buf(g, a, "y", "y", 0, 0);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 1, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_RUNTIME);
  g_assert_nonnull(strstr(error->message, "bad_axpy"));
}

/* The host backend has no twin for a user kernel: unavailable on this
 * backend (exit 69, decisions.md), said when the backend opens, before
 * anything is allocated or run (it was a runtime error, exit 70). */
static void test_user_kernel_on_host(void) {
  g_autoptr(DrGraph) g = tg_user_kernel_graph("/nonexistent/axpb.cu", 64, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 1, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_assert_null(r);
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_nonnull(strstr(error->message, "node 'user': kernel 'axpb' has no host twin"));
}

static void test_backend_choice(void) {
  g_autoptr(DrGraph) g = scale_axpy_graph(16, NULL);
  g_autoptr(DrPlan) plan = tg_plan(g);
  DrRunOptions o = host_opts(g, 1, 0);
  o.backend = DR_BACKEND_CUDA;
  g_autoptr(GError) error = NULL;
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  if (r == NULL) {
    /* No GPU here: --backend=cuda is unavailable (exit 69). */
    g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
    g_assert_cmpint(dr_error_exit_code(error), ==, 69);
    g_clear_error(&error);
    o.backend = DR_BACKEND_AUTO;
    g_autoptr(DrReport) r2 = dr_run(plan, &o, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(r2->backend, ==, "host");
  } else {
    g_assert_cmpstr(r->backend, ==, "cuda");
  }
  DrBackendKind k;
  g_assert_true(dr_backend_kind_from_name("host", &k));
  g_assert_cmpint(k, ==, DR_BACKEND_HOST);
  g_assert_false(dr_backend_kind_from_name("gpu", &k));
  g_assert_cmpstr(dr_backend_kind_name(DR_BACKEND_AUTO), ==, "auto");
  DrMode m;
  g_assert_true(dr_mode_from_name("graph", &m));
  g_assert_cmpint(m, ==, DR_MODE_GRAPH);
  DrTimingMode t;
  g_assert_true(dr_timing_mode_from_name("stamps", &t));
  g_assert_cmpint(t, ==, DR_TIMING_STAMPS);
  g_assert_true(dr_timing_mode_from_name("events", &t));
  g_assert_cmpint(t, ==, DR_TIMING_EVENTS);
  g_assert_false(dr_timing_mode_from_name("on", &t));
  g_assert_cmpstr(dr_timing_mode_name(DR_TIMING_OFF), ==, "off");
  /* Code written when node_timing was a gboolean keeps its meaning. */
  g_assert_cmpint(DR_TIMING_OFF, ==, FALSE);
  g_assert_cmpint(DR_TIMING_STAMPS, ==, TRUE);
  DrRunOptions d;
  dr_run_options_init(&d, g);
  g_assert_cmpint(d.node_timing, ==, DR_TIMING_AUTO);
}

/* DrRunOptions.stop: a run asked to stop finishes the iteration in flight
 * and returns the report of the iterations done, marked interrupted, with
 * no `save:` file written; a flag already set stops before the first. */
static volatile sig_atomic_t stop_flag;

static gpointer raise_stop_later(gpointer data) {
  g_usleep(GPOINTER_TO_UINT(data));
  __atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED); /* another thread: atomically */
  return NULL;
}

static void test_stop(void) {
  g_autofree char *dir = g_dir_make_tmp("dagrun-stop-XXXXXX", NULL);
  g_autofree char *save = g_build_filename(dir, "out.bin", NULL);
  g_autofree char *yaml = g_strdup_printf(
      "dagrun: 1\n"
      "buffers: {h: {type: f32, count: 16, init: iota, save: %s}}\n"
      "nodes:\n"
      "  nap: {op: host, fn: sleep, args: {us: 2000}}\n"
      "  twice: {op: kernel, kernel: scale_f32, args: {x: h, alpha: 2.0, y: h}}\n",
      save);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_load_string("stop.yaml", yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  g_autoptr(DrPlan) plan = tg_plan(g);

  DrRunOptions o = host_opts(g, 100000, 2);
  o.stop = &stop_flag;
  stop_flag = 0;
  GThread *t = g_thread_new("stopper", raise_stop_later, GUINT_TO_POINTER(100 * 1000));
  g_autoptr(DrReport) r = dr_run(plan, &o, &error);
  g_thread_join(t);
  g_assert_no_error(error);
  g_assert_true(r->interrupted);
  g_assert_cmpuint(r->iterations_requested, ==, 100000);
  g_assert_cmpuint(r->iterations, <, 100000);
  g_assert_false(g_file_test(save, G_FILE_TEST_EXISTS));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_report_write_json(r, json);
  g_assert_nonnull(strstr(json->str, "\"interrupted\": true"));

  stop_flag = 1; /* already set: not even a warmup iteration runs */
  o.verify = TRUE;
  g_autoptr(DrReport) r0 = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_true(r0->interrupted);
  g_assert_cmpuint(r0->iterations, ==, 0);
  g_assert_cmpint(r0->verified, ==, DR_VERIFIED_NOT_RUN);
  g_assert_false(g_file_test(save, G_FILE_TEST_EXISTS));

  stop_flag = 0; /* never set: the run completes and saves */
  o = host_opts(g, 3, 0);
  o.stop = &stop_flag;
  g_autoptr(DrReport) r1 = dr_run(plan, &o, &error);
  g_assert_no_error(error);
  g_assert_false(r1->interrupted);
  g_assert_cmpuint(r1->iterations, ==, 3);
  g_assert_true(g_file_test(save, G_FILE_TEST_EXISTS));
  g_remove(save);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/backends/json-validator", test_json_validator);
  g_test_add_func("/backends/host/scale-axpy", test_scale_axpy);
  g_test_add_func("/backends/host/chunks-verify", test_chunks_verify);
  g_test_add_func("/backends/host/alloc-free", test_alloc_free);
  g_test_add_func("/backends/host/memory-limit-shaken", test_memory_limit_shaken);
  g_test_add_func("/backends/host/alloc-free-lifetimes", test_alloc_free_lifetimes);
  g_test_add_func("/backends/host/host-functions", test_host_functions);
  g_test_add_func("/backends/host/host-output-order", test_host_output_order);
  g_test_add_func("/backends/verify/compare-rules", test_verify_compare);
  g_test_add_func("/backends/verify/rules-on-race", test_verify_rules_on_race);
  g_test_add_func("/backends/host/stop", test_stop);
  g_test_add_func("/backends/verify/catches-missing-wait", test_verify_catches_missing_wait);
  g_test_add_func("/backends/init/contents", test_init_contents);
  g_test_add_func("/backends/init/file", test_init_file);
  g_test_add_func("/backends/report/json-and-text", test_report_json_and_text);
  g_test_add_func("/backends/report/trace", test_trace);
  g_test_add_func("/backends/json-parser", test_json_parser);
  g_test_add_func("/backends/report/critical-path", test_critical_path);
  g_test_add_func("/backends/timeline/escaping", test_timeline_escaping);
  g_test_add_func("/backends/timeline/large", test_timeline_large);
  g_test_add_func("/backends/cli/timing-and-timeline", test_cli_timing_and_timeline);
  g_test_add_func("/backends/examples/trace-and-timeline", test_examples_trace_and_timeline);
  g_test_add_func("/backends/errors/kernel-check", test_kernel_check_error);
  g_test_add_func("/backends/errors/user-kernel-on-host", test_user_kernel_on_host);
  g_test_add_func("/backends/choice/cuda-or-fallback", test_backend_choice);
  g_test_add_func("/backends/cuda-fake/pipeline", test_cuda_fake_pipeline);
  g_test_add_func("/backends/cuda-fake/faults", test_cuda_fake_faults);
  g_test_add_func("/backends/cuda-fake/nccl", test_cuda_fake_nccl);
  g_test_add_func("/backends/cuda-fake/stamps", test_cuda_fake_stamps);
  g_test_add_func("/backends/cuda-fake/graph-update", test_cuda_fake_graph_update);
  g_test_add_func("/backends/cuda-fake/uncapturable", test_cuda_fake_uncapturable);
  return g_test_run();
}
