/* params.c: run-time parameters evaluated (params.h): proofs at load,
 * planning extents, setting values and patching the graph per run.
 *
 * A use (ir/params.h) is evaluated by the parser's own expression language
 * (parser/expr.h) from the text the user wrote, with the loop variables it
 * was expanded with and the parameters' values, so it gives exactly what
 * the parser would have built had the value been written in the file.
 *
 * The proof is by enumeration, not symbolic: a use over parameters whose
 * ranges hold at most DR_PARAMS_ENUM_MAX combinations is evaluated at
 * every one (exact: the first value that breaks it is the one reported,
 * and the planning extent is the exact union of the slice over the range);
 * beyond that, or once DR_PARAMS_ENUM_BUDGET evaluations are spent, at the
 * corners of the ranges and the default (exact for expressions monotone in
 * each parameter, which slices written with + - * by constants, min and max
 * are), with the whole buffer as the planning extent, so ordering stays
 * safe whatever the expression, and every set of values is checked again
 * before it runs (dr__params_apply). Cost: O(combinations × text) per use. */
#include "lib/params.h"

#include <math.h>
#include <string.h>

#include "ir/loops.h"
#include "ir/suggest.h"
#include "parser/expr.h"

#define BIT(k) (G_GUINT64_CONSTANT(1) << (k))

/* What a use evaluates to. */
typedef struct {
  guint64 begin, end; /* ACCESS */
  gint64 i;           /* integer ARG, MEMSET_VALUE */
  double f;           /* float ARG */
} UseValue;

static const DrRunParam *param_at(const DrGraph *g, guint k) {
  return &g_array_index(g->params, DrRunParam, k);
}

/* The parameters as expression variables at their current values. */
static void param_vars(const DrGraph *g, DrVar *pv) {
  for (guint k = 0; k < g->params->len; k++) {
    const DrRunParam *rp = param_at(g, k);
    pv[k] = (DrVar){rp->name, rp->type == DR_RUN_PARAM_INT ? rp->i : 0};
  }
}

/* Evaluates use u with the parameters at pv[] (float parameters: fv[]).
 * FALSE + *msg (without location) when the value is bad. */
static gboolean eval_use(const DrGraph *g, const DrParamUse *u, const DrVar *pv, const double *fv,
                         UseValue *out, char **msg) {
  DrVar loopv_small[16];
  g_autofree DrVar *loopv_big = u->n_vars > 16 ? g_new(DrVar, u->n_vars) : NULL;
  DrVar *loopv = loopv_big ? loopv_big : loopv_small;
  for (guint32 k = 0; k < u->n_vars; k++) {
    const DrParamVar *v = &g_array_index(g->param_vars, DrParamVar, u->var_first + k);
    loopv[k] = (DrVar){v->name, v->value};
  }
  DrEnv outer = {pv, g->params->len, NULL, NULL};
  DrEnv env = {loopv, u->n_vars, &outer, NULL};
  g_autofree char *text =
      dr__expr_has_braces(u->text) ? dr__expr_substitute(u->text, &env, msg) : g_strdup(u->text);
  if (text == NULL) return FALSE;
  memset(out, 0, sizeof *out);
  switch (u->kind) {
    case DR_PARAM_USE_ACCESS: {
      const DrAccess *a = dr_graph_access(g, u->index);
      const DrBuffer *b = dr_graph_buffer(g, a->buffer);
      DrSlice sl;
      if (!dr__slice_parse(text, &env, &sl, msg)) return FALSE;
      g_free(sl.name);
      gint64 begin = sl.has_begin ? sl.begin : 0;
      gint64 end = sl.has_end ? sl.end : (gint64)MIN(b->count, (guint64)G_MAXINT64);
      if (begin < 0 || end < 0) {
        *msg = g_strdup_printf("slice '%s' has a negative bound", text);
        return FALSE;
      }
      if (begin >= end) {
        *msg = g_strdup_printf("slice '%s' is %s", text, begin == end ? "empty" : "reversed");
        return FALSE;
      }
      if ((guint64)end > b->count) {
        *msg = g_strdup_printf("slice '%s' ends past buffer '%s' (%" G_GUINT64_FORMAT " elements)", text,
                               b->name, b->count);
        return FALSE;
      }
      out->begin = (guint64)begin;
      out->end = (guint64)end;
      return TRUE;
    }
    case DR_PARAM_USE_ARG: {
      const DrArg *arg = dr_graph_arg(g, u->index);
      if (arg->kind == DR_ARG_FLOAT) {
        guint64 floats = 0;
        for (guint k = 0; k < g->params->len; k++)
          if (param_at(g, k)->type == DR_RUN_PARAM_FLOAT) floats |= BIT(k);
        if (u->params & floats) {
          out->f = fv[__builtin_ctzll(u->params & floats)];
          return TRUE;
        }
        char *end = NULL;
        out->f = g_ascii_strtod(text, &end);
        if (end == text || *end != '\0') {
          *msg = g_strdup_printf("expected a number, got '%s'", text);
          return FALSE;
        }
        return TRUE;
      }
      if (!dr__int_parse(text, DR_SIZE_COUNT, &out->i, msg)) return FALSE;
      const DrNode *n = dr_graph_node(g, u->node);
      const DrKernelDecl *d = dr_graph_kernel(g, n->kernel);
      if (d->params[arg->param].type == DR_ELEM_I32 && (out->i < G_MININT32 || out->i > G_MAXINT32)) {
        *msg = g_strdup_printf("argument '%s' is an i32: %" G_GINT64_FORMAT " does not fit",
                               d->params[arg->param].name, out->i);
        return FALSE;
      }
      return TRUE;
    }
    case DR_PARAM_USE_MEMSET_VALUE:
      if (!dr__int_parse(text, DR_SIZE_COUNT, &out->i, msg)) return FALSE;
      if (out->i < 0 || out->i > 255) {
        *msg = g_strdup_printf("memset value %" G_GINT64_FORMAT " is out of range [0, 255]", out->i);
        return FALSE;
      }
      return TRUE;
    case DR_PARAM_USE_LOOP_COUNT:
      /* The parser's own range for repeat: (parser/loops.c). */
      if (!dr__int_parse(text, DR_SIZE_COUNT, &out->i, msg)) return FALSE;
      if (out->i < 1 || out->i > G_MAXINT32) {
        *msg = g_strdup_printf("repeat count %" G_GINT64_FORMAT
                               " is out of range [1, %d] (a loop runs at least once)",
                               out->i, G_MAXINT32);
        return FALSE;
      }
      return TRUE;
  }
  return FALSE;
}

/* "seq=5000, batch=3": the values of `mask`'s parameters in pv. */
static char *values_text(const DrGraph *g, guint64 mask, const DrVar *pv) {
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < g->params->len; k++)
    if (mask & BIT(k))
      g_string_append_printf(s, "%s%s=%" G_GINT64_FORMAT, s->len ? ", " : "", pv[k].name, pv[k].value);
  return g_string_free(s, FALSE);
}

static const char *use_what(DrParamUseKind k) {
  switch (k) {
#define DR_X(e, s)       \
  case DR_PARAM_USE_##e: \
    return s;
    DR_PARAM_USE_LIST(DR_X)
#undef DR_X
  }
  return "?";
}

gboolean dr__params_prove(DrGraph *g, DrDiags *diags) {
  guint errors = dr_diags_n_errors(diags);
  guint64 budget = DR_PARAMS_ENUM_BUDGET;
  DrVar pv[DR_MAX_RUN_PARAMS];
  double fv[DR_MAX_RUN_PARAMS];
  for (guint i = 0; i < g->param_uses->len; i++) {
    DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    const DrNode *n = dr_graph_node(g, u->node);
    param_vars(g, pv);
    for (guint k = 0; k < g->params->len; k++) fv[k] = param_at(g, k)->f;
    /* The integer parameters it reads, their ranges and how many
     * combinations those hold. */
    guint ks[DR_MAX_RUN_PARAMS], nk = 0;
    guint64 combos = 1;
    gboolean bounded = TRUE;
    for (guint k = 0; k < g->params->len; k++) {
      const DrRunParam *rp = param_at(g, k);
      if (!(u->params & BIT(k)) || rp->type != DR_RUN_PARAM_INT) continue;
      ks[nk++] = k;
      if (!rp->has_min || !rp->has_max) {
        bounded = FALSE;
        dr_diags_error(
            diags, u->loc,
            "node '%s': %s '%s' depends on parameter '%s', which needs both 'min:' and 'max:' so that "
            "every value can be checked",
            n->id, use_what(u->kind), u->text, rp->name);
        dr_diags_note(diags, rp->loc, "parameter '%s' is declared here", rp->name);
        continue;
      }
      guint64 span = (guint64)rp->i_max - (guint64)rp->i_min;
      if (span == G_MAXUINT64 || __builtin_mul_overflow(combos, span + 1, &combos)) combos = G_MAXUINT64;
    }
    if (!bounded) continue;
    gboolean exhaustive = combos <= DR_PARAMS_ENUM_MAX && combos <= budget;
    if (exhaustive) budget -= combos;
    /* lo: the least begin, top_begin the greatest; least_end the least end */
    guint64 lo = G_MAXUINT64, hi = 0, top_begin = 0, least_end = G_MAXUINT64;
    /* Odometer over the combinations (exhaustive) or the corners (bit j
     * of `corner`: parameter ks[j] at its max), then the defaults. */
    guint64 corners = nk >= 12 ? 4096 : (G_GUINT64_CONSTANT(1) << nk);
    guint64 total = exhaustive ? combos : corners + 1;
    if (exhaustive)
      for (guint j = 0; j < nk; j++) pv[ks[j]].value = param_at(g, ks[j])->i_min;
    for (guint64 c = 0; c < total; c++) {
      if (!exhaustive) {
        for (guint j = 0; j < nk; j++) {
          const DrRunParam *rp = param_at(g, ks[j]);
          pv[ks[j]].value = c == corners ? rp->i_def : ((c >> (j % 64)) & 1) ? rp->i_max : rp->i_min;
        }
      }
      UseValue val;
      g_autofree char *msg = NULL;
      if (!eval_use(g, u, pv, fv, &val, &msg)) {
        g_autofree char *at = values_text(g, u->params, pv);
        dr_diags_error(diags, u->loc, "node '%s': with %s: %s", n->id, at, msg);
        break;
      }
      lo = MIN(lo, val.begin);
      hi = MAX(hi, val.end);
      top_begin = MAX(top_begin, val.begin);
      least_end = MIN(least_end, val.end);
      if (exhaustive) /* next combination */
        for (guint j = 0; j < nk; j++) {
          const DrRunParam *rp = param_at(g, ks[j]);
          if (pv[ks[j]].value < rp->i_max) {
            pv[ks[j]].value++;
            break;
          }
          pv[ks[j]].value = rp->i_min;
        }
    }
    if (u->kind == DR_PARAM_USE_ACCESS) {
      const DrAccess *a = dr_graph_access(g, u->index);
      u->hull_begin = exhaustive ? lo : 0;
      u->hull_end = exhaustive ? hi : dr_graph_buffer(g, a->buffer)->count;
      u->fixed_begin = exhaustive && lo == top_begin;
      u->least_end = u->fixed_begin ? least_end : 0;
    }
  }
  return dr_diags_n_errors(diags) == errors;
}

void dr__params_widen(DrGraph *g) {
  g->params_applied = FALSE;
  for (guint i = 0; i < g->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    if (u->kind != DR_PARAM_USE_ACCESS || u->hull_end == 0) continue;
    DrAccess *a = dr_graph_access(g, u->index);
    a->begin = u->hull_begin;
    a->end = u->hull_end;
  }
}

/* The most sets of values the memo keeps (then it starts again), and the
 * most bytes their values may take (a program of a million uses keeps
 * two sets, not 256). */
#define MEMO_MAX 256
#define MEMO_MAX_BYTES (G_GUINT64_CONSTANT(64) << 20)

/* The parameters' current values as a memo key. */
static GBytes *values_key(const DrGraph *g) {
  GByteArray *k = g_byte_array_new();
  for (guint i = 0; i < g->params->len; i++) {
    const DrRunParam *rp = param_at(g, i);
    g_byte_array_append(k, (const guint8 *)&rp->i, sizeof rp->i);
    g_byte_array_append(k, (const guint8 *)&rp->f, sizeof rp->f);
  }
  return g_byte_array_free_to_bytes(k);
}

/* Whether the nodes hold the current values already. */
static gboolean applied_now(const DrGraph *g) {
  if (!g->params_applied) return FALSE;
  for (guint k = 0; k < g->params->len; k++) {
    const DrRunParam *rp = param_at(g, k);
    if (rp->i != rp->i_applied || memcmp(&rp->f, &rp->f_applied, sizeof rp->f) != 0) return FALSE;
  }
  return TRUE;
}

/* The uses' values at the current parameter values [nu], from the memo
 * or evaluated (and kept; the memo owns the array), or NULL with `error`
 * set at the first use whose value is bad. Evaluating parses each use's
 * text again (a decoder step's 200 uses take most of a change's host
 * time); a value is a function of the parameters alone, and a sweep
 * comes back to the same values. */
static const UseValue *use_values(DrGraph *g, GError **error) {
  guint nu = g->param_uses->len;
  if (g->params_memo == NULL) {
    g->params_memo =
        g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, g_free);
    dr_graph_keep(g, g->params_memo, (GDestroyNotify)g_hash_table_unref);
  }
  GHashTable *memo = g->params_memo;
  g_autoptr(GBytes) key = values_key(g);
  const UseValue *hit = g_hash_table_lookup(memo, key);
  if (hit != NULL) return hit;
  DrVar pv[DR_MAX_RUN_PARAMS];
  double fv[DR_MAX_RUN_PARAMS];
  param_vars(g, pv);
  for (guint k = 0; k < g->params->len; k++) fv[k] = param_at(g, k)->f;
  g_autofree UseValue *vals = g_new(UseValue, MAX(nu, 1));
  for (guint i = 0; i < nu; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    g_autofree char *msg = NULL;
    if (!eval_use(g, u, pv, fv, &vals[i], &msg)) {
      g_autoptr(GString) now = g_string_new(NULL);
      dr__params_describe(g, now);
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "%s:%u:%u: error: with %s: node '%s': %s", u->loc.file,
                  u->loc.line, u->loc.col, now->str, dr_graph_node(g, u->node)->id, msg);
      return NULL;
    }
  }
  guint64 per_set = (guint64)MAX(nu, 1) * sizeof(UseValue);
  guint keep = (guint)CLAMP(MEMO_MAX_BYTES / per_set, 2, MEMO_MAX);
  if (g_hash_table_size(memo) >= keep) g_hash_table_remove_all(memo);
  g_hash_table_insert(memo, g_steal_pointer(&key), vals);
  return g_steal_pointer(&vals);
}

gboolean dr__params_apply(DrGraph *g, GArray *changed, GError **error) {
  guint nu = g->param_uses->len;
  if (nu == 0) {
    for (guint k = 0; k < g->params->len; k++) {
      DrRunParam *rp = &g_array_index(g->params, DrRunParam, k);
      rp->i_applied = rp->i;
      rp->f_applied = rp->f;
    }
    return TRUE;
  }
  /* Nothing set since the last apply: the nodes hold these values. */
  if (applied_now(g)) return TRUE;
  const UseValue *vals = use_values(g, error);
  if (vals == NULL) return FALSE;
  /* A copy's two sides must stay the same size. */
  for (guint i = 0; i < nu; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    const DrNode *n = dr_graph_node(g, u->node);
    if (n->op != DR_OP_COPY || u->kind != DR_PARAM_USE_ACCESS) continue;
    guint64 bytes[2];
    for (guint32 s = 0; s < 2; s++) {
      guint32 ai = n->access_first + s;
      const DrAccess *a = dr_graph_access(g, ai);
      guint64 b = a->begin, e = a->end;
      for (guint j = 0; j < nu; j++) {
        const DrParamUse *o = &g_array_index(g->param_uses, DrParamUse, j);
        if (o->kind == DR_PARAM_USE_ACCESS && o->index == ai) b = vals[j].begin, e = vals[j].end;
      }
      bytes[s] = (e - b) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
    }
    if (bytes[0] != bytes[1]) {
      g_autoptr(GString) now = g_string_new(NULL);
      dr__params_describe(g, now);
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                  "%s:%u:%u: error: with %s: node '%s': the copy's src has %" G_GUINT64_FORMAT
                  " bytes and its dst %" G_GUINT64_FORMAT,
                  u->loc.file, u->loc.line, u->loc.col, now->str, n->id, bytes[0], bytes[1]);
      return FALSE;
    }
  }
  for (guint i = 0; i < nu; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    gboolean diff = FALSE;
    if (u->kind == DR_PARAM_USE_ACCESS) {
      DrAccess *a = dr_graph_access(g, u->index);
      diff = a->begin != vals[i].begin || a->end != vals[i].end;
      a->begin = vals[i].begin;
      a->end = vals[i].end;
    } else if (u->kind == DR_PARAM_USE_ARG) {
      DrArg *a = dr_graph_arg(g, u->index);
      if (a->kind == DR_ARG_FLOAT) {
        diff = a->v.f != vals[i].f;
        a->v.f = vals[i].f;
      } else {
        diff = a->v.i != vals[i].i;
        a->v.i = vals[i].i;
      }
    } else if (u->kind == DR_PARAM_USE_LOOP_COUNT) {
      DrLoop *l = dr_graph_loop(g, u->index);
      diff = l->count != (guint64)vals[i].i;
      l->count = (guint64)vals[i].i;
    } else {
      DrNode *n = dr_graph_node(g, u->node);
      diff = n->memset_value != (guint8)vals[i].i;
      n->memset_value = (guint8)vals[i].i;
    }
    if (diff && changed != NULL &&
        (changed->len == 0 || g_array_index(changed, DrId, changed->len - 1) != (DrId)u->node)) {
      DrId v = u->node;
      g_array_append_val(changed, v);
    }
  }
  for (guint k = 0; k < g->params->len; k++) {
    DrRunParam *rp = &g_array_index(g->params, DrRunParam, k);
    rp->i_applied = rp->i;
    rp->f_applied = rp->f;
  }
  g->params_applied = TRUE;
  return TRUE;
}

gboolean dr__params_set(DrGraph *g, const char *name, const char *text, gboolean is_int, gint64 i, double f,
                        GError **error) {
  DrRunParam *rp = NULL;
  for (guint k = 0; k < g->params->len && rp == NULL; k++)
    if (strcmp(param_at(g, k)->name, name) == 0) rp = &g_array_index(g->params, DrRunParam, k);
  if (rp == NULL) {
    DrSuggest sg;
    dr__suggest_init(&sg, name);
    for (guint k = 0; k < g->params->len; k++) dr__suggest_add(&sg, param_at(g, k)->name);
    g_autofree char *hint = dr__suggest_hint(&sg);
    if (g->params->len == 0)
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                  "unknown parameter '%s': the pipeline declares none (params:)", name);
    else
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "unknown parameter '%s'%s", name, hint);
    return FALSE;
  }
  if (rp->type == DR_RUN_PARAM_INT) {
    if (text != NULL) {
      g_autofree char *msg = NULL;
      if (!dr__int_parse(text, DR_SIZE_COUNT, &i, &msg)) {
        g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "parameter '%s' is an integer: %s", name, msg);
        return FALSE;
      }
    } else if (!is_int) {
      if (!(f == floor(f) && f >= -9.2e18 && f <= 9.2e18)) {
        g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "parameter '%s' is an integer, not %g", name, f);
        return FALSE;
      }
      i = (gint64)f;
    }
    if (i < rp->i_min || i > rp->i_max) {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                  "parameter '%s' must be in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT
                  ", not %" G_GINT64_FORMAT,
                  name, rp->i_min, rp->i_max, i);
      return FALSE;
    }
    rp->i = i;
    return TRUE;
  }
  if (text != NULL) {
    char *end = NULL;
    f = g_ascii_strtod(text, &end);
    if (end == text || *end != '\0') {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "parameter '%s' is a float, not '%s'", name, text);
      return FALSE;
    }
  } else if (is_int) {
    f = (double)i;
  }
  if (!isfinite(f) || f < rp->f_min || f > rp->f_max) {
    char a[G_ASCII_DTOSTR_BUF_SIZE], b[G_ASCII_DTOSTR_BUF_SIZE], c[G_ASCII_DTOSTR_BUF_SIZE];
    g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "parameter '%s' must be in %s..%s, not %s", name,
                g_ascii_dtostr(a, sizeof a, rp->f_min), g_ascii_dtostr(b, sizeof b, rp->f_max),
                g_ascii_dtostr(c, sizeof c, f));
    return FALSE;
  }
  rp->f = f;
  return TRUE;
}

void dr__params_describe(const DrGraph *g, GString *out) {
  for (guint k = 0; k < g->params->len; k++) {
    const DrRunParam *rp = param_at(g, k);
    if (k) g_string_append_c(out, ' ');
    if (rp->type == DR_RUN_PARAM_INT) {
      g_string_append_printf(out, "%s=%" G_GINT64_FORMAT, rp->name, rp->i);
    } else {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf(out, "%s=%s", rp->name, g_ascii_dtostr(buf, sizeof buf, rp->f));
    }
  }
}
