/* cost.c: the planner's cost model, an estimated duration per node, and the
 * reader of measured durations from a previous run's JSON report
 * (--profile=FILE). Not a simulator: the numbers only rank merges when the
 * stream cap binds and order the issue timeline.
 *
 * Requires: a graph. Provides: ctx->dur in µs.
 *
 * Model (GPU-NOTES.md, H200): copies move bytes at 55 GB/s plus 2 µs;
 * kernels touch their accessed bytes at 3 TB/s plus 3 µs, except `spin`
 * (its `ns` argument) and gemm_* (2*m*n*k flops at 50 TFLOP/s plus 3 µs);
 * memset writes at 3 TB/s plus 2 µs; host nodes cost 24 µs (sleep: its
 * `us` argument more); alloc and free 2 µs; noop 0.
 * The profile reader is a small iterative JSON scanner: it finds the
 * top-level "nodes" array and takes "id" and "duration_us" from each
 * element, skipping any other value; ids it does not know are ignored.
 * Complexity: O(V + accesses + args), O(profile size). */
#include <math.h>
#include <string.h>

#include "scheduler/plan_internal.h"

#define COPY_BYTES_PER_US 55e3 /* 55 GB/s */
#define MEM_BYTES_PER_US 3e6   /* 3 TB/s */
#define FLOPS_PER_US 50e6      /* 50 TFLOP/s */
#define COPY_FIXED_US 2.0
#define KERNEL_FIXED_US 3.0
#define HOST_FIXED_US 24.0
#define POOL_FIXED_US 2.0

static guint64 access_bytes(const DrGraph *g, const DrNode *node, gboolean writes_only) {
  guint64 bytes = 0;
  for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    if (writes_only && !dr_access_writes(a->mode)) continue;
    bytes += (a->end - a->begin) * (guint64)dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
  }
  return bytes;
}

/* The integer argument named `name` of a kernel or host node, or -1. */
static gint64 int_arg(const DrGraph *g, const DrNode *node, const char *name) {
  const DrParam *params = NULL;
  guint32 n_params = 0;
  if (node->op == DR_OP_KERNEL && node->kernel < g->kernels->len) {
    params = dr_graph_kernel(g, node->kernel)->params;
    n_params = dr_graph_kernel(g, node->kernel)->n_params;
  } else if (node->op == DR_OP_HOST) {
    params = dr_host_fn_params(node->host_fn, &n_params);
  }
  for (guint32 i = node->arg_first; i < node->arg_first + node->arg_count; i++) {
    const DrArg *a = dr_graph_arg(g, i);
    if (a->kind == DR_ARG_INT && a->param < n_params && strcmp(params[a->param].name, name) == 0)
      return a->v.i;
  }
  return -1;
}

double dr__node_cost_us(const DrGraph *g, DrId id) {
  const DrNode *node = dr_graph_node(g, id);
  switch (node->op) {
    case DR_OP_COPY:
      /* The source slice: a copy's read access. */
      return (double)(access_bytes(g, node, FALSE) - access_bytes(g, node, TRUE)) /
                 COPY_BYTES_PER_US +
             COPY_FIXED_US;
    case DR_OP_MEMSET:
      return (double)access_bytes(g, node, TRUE) / MEM_BYTES_PER_US + COPY_FIXED_US;
    case DR_OP_KERNEL: {
      const char *name =
          node->kernel < g->kernels->len ? dr_graph_kernel(g, node->kernel)->name : "";
      if (strcmp(name, "spin") == 0) {
        gint64 ns = int_arg(g, node, "ns");
        return ns > 0 ? (double)ns / 1e3 : KERNEL_FIXED_US;
      }
      if (g_str_has_prefix(name, "gemm")) {
        gint64 m = int_arg(g, node, "m"), nn = int_arg(g, node, "n"), k = int_arg(g, node, "k");
        if (m > 0 && nn > 0 && k > 0)
          return 2.0 * (double)m * (double)nn * (double)k / FLOPS_PER_US + KERNEL_FIXED_US;
      }
      return (double)access_bytes(g, node, FALSE) / MEM_BYTES_PER_US + KERNEL_FIXED_US;
    }
    case DR_OP_HOST: {
      gint64 us = node->host_fn == DR_HOST_FN_SLEEP ? int_arg(g, node, "us") : -1;
      return HOST_FIXED_US + (us > 0 ? (double)us : 0.0);
    }
    case DR_OP_ALLOC:
    case DR_OP_FREE:
      return POOL_FIXED_US;
    case DR_OP_NOOP:
    case DR_N_OPS:
      break;
  }
  return 0.0;
}

/* ---- the profile reader ------------------------------------------------ */

typedef struct {
  const char *p, *end;
} Scan;

static void skip_ws(Scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static gboolean eat(Scan *s, char c) {
  skip_ws(s);
  if (s->p < s->end && *s->p == c) {
    s->p++;
    return TRUE;
  }
  return FALSE;
}

/* Reads a JSON string (the quote already next) into a new string, decoding
 * the simple escapes; \u escapes outside ASCII become '?' (node ids the
 * planner matches are what dagrun itself wrote). NULL when malformed. */
static char *read_string(Scan *s) {
  if (!eat(s, '"')) return NULL;
  GString *out = g_string_new(NULL);
  while (s->p < s->end && *s->p != '"') {
    char ch = *s->p++;
    if (ch == '\\') {
      if (s->p >= s->end) break;
      char esc = *s->p++;
      switch (esc) {
        case 'n': ch = '\n'; break;
        case 't': ch = '\t'; break;
        case 'r': ch = '\r'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'u': {
          if (s->end - s->p < 4) goto bad;
          char hex[5] = {s->p[0], s->p[1], s->p[2], s->p[3], 0};
          guint64 cp = g_ascii_strtoull(hex, NULL, 16);
          ch = cp < 0x80 ? (char)cp : '?';
          s->p += 4;
          break;
        }
        default: ch = esc; break;
      }
    }
    g_string_append_c(out, ch);
  }
  if (!eat(s, '"')) goto bad;
  return g_string_free(out, FALSE);
bad:
  g_string_free(out, TRUE);
  return NULL;
}

/* Skips one JSON value of any kind, iteratively. */
static gboolean skip_value(Scan *s) {
  guint depth = 0;
  skip_ws(s);
  do {
    skip_ws(s);
    if (s->p >= s->end) return FALSE;
    char c = *s->p;
    if (c == '"') {
      g_free(read_string(s));
    } else if (c == '{' || c == '[') {
      depth++;
      s->p++;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return FALSE;
      depth--;
      s->p++;
    } else if (c == ',' || c == ':') {
      if (depth == 0) return FALSE;
      s->p++;
    } else {
      const char *start = s->p;
      while (s->p < s->end && strchr(",:]} \t\r\n", *s->p) == NULL) s->p++;
      if (s->p == start) return FALSE;
    }
  } while (depth > 0);
  return TRUE;
}

static gboolean read_number(Scan *s, double *out) {
  skip_ws(s);
  char *end = NULL;
  char buf[64];
  gsize len = MIN((gsize)(s->end - s->p), sizeof buf - 1);
  memcpy(buf, s->p, len);
  buf[len] = 0;
  *out = g_ascii_strtod(buf, &end);
  if (end == buf) return FALSE;
  s->p += end - buf;
  return TRUE;
}

/* Reads one element of "nodes": an object; applies its duration. */
static gboolean read_profile_node(Scan *s, DrPlanCtx *ctx) {
  char *id = NULL;
  double dur = NAN;
  if (!eat(s, '{')) return FALSE;
  if (!eat(s, '}')) {
    do {
      g_autofree char *key = read_string(s);
      if (key == NULL || !eat(s, ':')) goto bad;
      skip_ws(s);
      if (strcmp(key, "id") == 0) {
        g_free(id);
        if ((id = read_string(s)) == NULL) goto bad;
      } else if (strcmp(key, "duration_us") == 0) {
        if (!read_number(s, &dur)) goto bad;
      } else if (!skip_value(s)) {
        goto bad;
      }
    } while (eat(s, ','));
    if (!eat(s, '}')) goto bad;
  }
  if (id != NULL && isfinite(dur) && dur >= 0) {
    DrId v = dr_graph_find_node(ctx->graph, id);
    if (v != DR_NONE) ctx->dur[v] = dur;
  }
  g_free(id);
  return TRUE;
bad:
  g_free(id);
  return FALSE;
}

static gboolean read_profile(DrPlanCtx *ctx, const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &text, &len, error)) return FALSE;
  Scan s = {text, text + len};
  gboolean seen_nodes = FALSE;
  if (!eat(&s, '{')) goto bad;
  if (!eat(&s, '}')) {
    do {
      g_autofree char *key = read_string(&s);
      if (key == NULL || !eat(&s, ':')) goto bad;
      if (strcmp(key, "nodes") == 0) {
        seen_nodes = TRUE;
        if (!eat(&s, '[')) goto bad;
        if (!eat(&s, ']')) {
          do {
            if (!read_profile_node(&s, ctx)) goto bad;
          } while (eat(&s, ','));
          if (!eat(&s, ']')) goto bad;
        }
      } else if (!skip_value(&s)) {
        goto bad;
      }
    } while (eat(&s, ','));
    if (!eat(&s, '}')) goto bad;
  }
  if (!seen_nodes) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: profile has no \"nodes\" array", path);
    return FALSE;
  }
  return TRUE;
bad:
  g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: malformed JSON near byte %" G_GSIZE_FORMAT, path,
              (gsize)(s.p - text));
  return FALSE;
}

gboolean dr__plan_costs(DrPlanCtx *ctx, const char *profile_path, GError **error) {
  ctx->dur = g_new(double, MAX(ctx->n, 1));
  for (DrId v = 0; v < ctx->n; v++) ctx->dur[v] = dr__node_cost_us(ctx->graph, v);
  if (profile_path == NULL) return TRUE;
  GError *local = NULL;
  if (!read_profile(ctx, profile_path, &local)) {
    if (local->domain != DR_ERROR)
      g_set_error(error, DR_ERROR, DR_ERROR_IO, "cannot read profile: %s", local->message);
    else
      g_propagate_error(error, g_steal_pointer(&local));
    g_clear_error(&local);
    return FALSE;
  }
  return TRUE;
}
