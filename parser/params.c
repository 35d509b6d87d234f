/* params.c: the `params:` section and the parser's side of run-time
 * parameters (ir/params.h): declaring them, making them visible to
 * expressions, and noting every value that read one so its expression is
 * kept instead of folded.
 *
 * Parameters are an outer scope of every node expression (after the loop
 * and rank variables), through the expression language's hook
 * (DrEnv.hits, parser/expr.h): an evaluation that reads a parameter sets
 * its bit. values.c and nodes.c call dr__params_note after each value they
 * evaluate; the note (the scalar as written, its location, the loop
 * variables in scope) becomes a DrParamUse when the node is committed and
 * the note matches one of its accesses, scalar arguments or its memset
 * value (dr__params_attach); anything else that read a parameter is an
 * error at its location. Buffer sizes are evaluated with every parameter
 * at its max (param_max_env), which each parameter read there must have.
 * It does not evaluate uses again: lib/params.c does, per run. */
#include <string.h>

#include "parser/internal.h"

#define PARAM_KEY_LIST(X) \
  X(TYPE, "type")         \
  X(DEFAULT, "default")   \
  X(MIN, "min")           \
  X(MAX, "max")

enum {
#define X(e, s) PK_##e,
  PARAM_KEY_LIST(X)
#undef X
      PK_N_KEYS
};
static const char *const param_keys[] = {
#define X(e, s) s,
    PARAM_KEY_LIST(X)
#undef X
};

static gboolean param_name_ok(const char *s) {
  if (!(g_ascii_isalpha(s[0]) || s[0] == '_')) return FALSE;
  for (const char *q = s; *q; q++)
    if (!(g_ascii_isalnum(*q) || *q == '_')) return FALSE;
  return TRUE;
}

/* Reads an int or float bound `key` of parameter `what`. */
static gboolean param_value(DrParse *p, const char *what, const char *key, const DrYNode *v, DrRunParamType t,
                            gint64 *i, double *f) {
  if (t == DR_RUN_PARAM_INT) return dr__parse_int(p, what, key, v, NULL, G_MININT64, G_MAXINT64, i);
  return dr__parse_float(p, what, key, v, NULL, f);
}

static void parse_one(DrParse *p, const DrYNode *key, const DrYNode *v) {
  const char *name = key->u.text;
  g_autofree char *what = g_strdup_printf("parameter '%s'", name);
  if (!param_name_ok(name)) {
    dr_diags_error(p->diags, DR_LOC(p, key),
                   "%s: a parameter name is letters, digits and '_', not starting with a digit", what);
    return;
  }
  static const char *const reserved[] = {"rank", "nranks", "local_rank", "min", "max"};
  for (guint i = 0; i < G_N_ELEMENTS(reserved); i++)
    if (strcmp(name, reserved[i]) == 0) {
      dr_diags_error(p->diags, DR_LOC(p, key), "%s: '%s' is reserved in expressions", what, name);
      return;
    }
  if (p->top->params->len >= DR_MAX_RUN_PARAMS) {
    dr_diags_error(p->diags, DR_LOC(p, key), "%s: a pipeline declares at most %d parameters", what,
                   DR_MAX_RUN_PARAMS);
    return;
  }
  if (!dr__parse_expect_map(p, what, NULL, v)) return;
  const DrYNode *s[PK_N_KEYS];
  guint unknown = dr__parse_map_slots(p, what, v, param_keys, PK_N_KEYS, s);
  DrRunParam rp = {.name = dr_graph_intern(p->g, name), .loc = DR_LOC(p, key), .type = DR_RUN_PARAM_INT};
  if (s[PK_TYPE] != NULL) {
    g_autofree char *t = NULL;
    if (!dr__parse_string(p, what, "type", s[PK_TYPE], NULL, &t)) return;
    if (strcmp(t, "int") == 0)
      rp.type = DR_RUN_PARAM_INT;
    else if (strcmp(t, "float") == 0)
      rp.type = DR_RUN_PARAM_FLOAT;
    else {
      g_autofree char *msg = g_strdup_printf("expected int or float, got '%s'", t);
      dr__parse_error_at(p, s[PK_TYPE], what, "type", msg);
      return;
    }
  }
  if (s[PK_DEFAULT] == NULL) {
    if (unknown == 0) dr__parse_missing(p, DR_LOC(p, key), what, "default");
    return;
  }
  gboolean ok = param_value(p, what, "default", s[PK_DEFAULT], rp.type, &rp.i_def, &rp.f_def);
  rp.i_min = G_MININT64, rp.i_max = G_MAXINT64, rp.f_min = -G_MAXDOUBLE, rp.f_max = G_MAXDOUBLE;
  if (s[PK_MIN] != NULL)
    ok = (rp.has_min = param_value(p, what, "min", s[PK_MIN], rp.type, &rp.i_min, &rp.f_min)) && ok;
  if (s[PK_MAX] != NULL)
    ok = (rp.has_max = param_value(p, what, "max", s[PK_MAX], rp.type, &rp.i_max, &rp.f_max)) && ok;
  if (!ok) return;
  gboolean in = rp.type == DR_RUN_PARAM_INT ? rp.i_min <= rp.i_def && rp.i_def <= rp.i_max
                                            : rp.f_min <= rp.f_def && rp.f_def <= rp.f_max;
  if (!in) {
    const DrYNode *at = s[PK_MAX] && s[PK_MIN] ? s[PK_DEFAULT] : s[PK_MAX] ? s[PK_MAX] : s[PK_MIN];
    dr__parse_error_at(p, at ? at : s[PK_DEFAULT], what,
                       at == s[PK_DEFAULT] ? "default"
                       : at == s[PK_MAX]   ? "max"
                                           : "min",
                       rp.type == DR_RUN_PARAM_INT && rp.i_min > rp.i_max ? "min is above max"
                       : rp.type == DR_RUN_PARAM_FLOAT && rp.f_min > rp.f_max
                           ? "min is above max"
                           : "the default lies outside min..max");
    return;
  }
  rp.i = rp.i_applied = rp.i_def;
  rp.f = rp.f_applied = rp.f_def;
  for (guint i = 0; i < p->top->params->len; i++)
    if (strcmp(g_array_index(p->top->params, DrRunParam, i).name, name) == 0) {
      dr_diags_error(p->diags, DR_LOC(p, key), "%s declared twice", what);
      return;
    }
  g_array_append_val(p->top->params, rp);
}

void dr__parse_params(DrParse *p, const DrYNode *v, gboolean too_late) {
  if (too_late) {
    dr__parse_error_at(p, v, "top level", "params",
                       "'params:' must come before 'buffers:', 'kernels:' and 'nodes:', which may use them");
    return;
  }
  if (!dr__parse_expect_map(p, "top level", "params", v)) return;
  for (guint i = 0; i < v->len; i++) parse_one(p, dr_ynode_key(v, i), dr_ynode_value(v, i));
  dr__params_env_init(p);
}

void dr__params_env_init(DrParse *p) {
  GArray *ps = p->top->params;
  for (guint i = 0; i < ps->len; i++) {
    const DrRunParam *rp = &g_array_index(ps, DrRunParam, i);
    gint64 now = rp->type == DR_RUN_PARAM_INT ? rp->i : 0;
    /* Without a max, the default: the size is an error anyway (note),
     * and this keeps the evaluation from overflowing first. */
    gint64 top = rp->type != DR_RUN_PARAM_INT ? 0 : rp->has_max ? rp->i_max : rp->i_def;
    p->param_vars[i] = (DrVar){rp->name, now};
    p->param_max_vars[i] = (DrVar){rp->name, top};
  }
  p->param_env = (DrEnv){p->param_vars, ps->len, NULL, &p->param_hits};
  p->param_max_env = (DrEnv){p->param_max_vars, ps->len, NULL, &p->param_hits};
  p->rank_env.outer = &p->param_env;
}

/* The names of the parameters in `mask`, "'a', 'b'". */
static char *mask_names(const DrParse *p, guint64 mask) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < p->top->params->len; i++)
    if (mask & (G_GUINT64_CONSTANT(1) << i))
      g_string_append_printf(s, "%s'%s'", s->len ? ", " : "",
                             g_array_index(p->top->params, DrRunParam, i).name);
  return g_string_free(s, FALSE);
}

guint64 dr__params_float_mask(const DrParse *p) {
  guint64 m = 0;
  for (guint i = 0; i < p->top->params->len; i++)
    if (g_array_index(p->top->params, DrRunParam, i).type == DR_RUN_PARAM_FLOAT)
      m |= G_GUINT64_CONSTANT(1) << i;
  return m;
}

/* TRUE when `text` is "{NAME}" for float parameter k alone in `hits`. */
static gboolean whole_float(const DrParse *p, const char *text, guint64 hits) {
  gsize len = strlen(text);
  if (__builtin_popcountll(hits) != 1 || len < 3 || text[0] != '{' || text[len - 1] != '}') return FALSE;
  const char *name = g_array_index(p->top->params, DrRunParam, __builtin_ctzll(hits)).name;
  g_autofree char *inner = g_strstrip(g_strndup(text + 1, len - 2));
  return strcmp(inner, name) == 0;
}

gboolean dr__params_note(DrParse *p, const DrYNode *v, const DrEnv *env, const char *what, const char *key) {
  guint64 hits = p->param_hits;
  p->param_hits = 0;
  if (hits == 0) return TRUE;
  guint64 floats = dr__params_float_mask(p) & hits;
  if (floats != 0 && (env == &p->param_max_env || hits != floats || !whole_float(p, v->u.text, hits))) {
    /* Expressions are integer: a float parameter's value there would be
     * a made-up 0. */
    g_autofree char *names = mask_names(p, floats);
    g_autofree char *msg = g_strdup_printf(
        "float parameter %s can only be a float kernel argument written whole, as '{NAME}' (expressions are "
        "integer)",
        names);
    dr__parse_error_at(p, v, what, key, msg);
    return FALSE;
  }
  if (env == &p->param_max_env) {
    /* A size: evaluated with every parameter at its max. */
    for (guint i = 0; i < p->top->params->len; i++) {
      const DrRunParam *rp = &g_array_index(p->top->params, DrRunParam, i);
      if (!(hits & (G_GUINT64_CONSTANT(1) << i))) continue;
      if (!rp->has_max) {
        g_autofree char *msg = g_strdup_printf(
            "parameter '%s' sizes memory, so it needs a 'max:' (buffers are sized at every parameter's max)",
            rp->name);
        dr__parse_error_at(p, v, what, key, msg);
        dr_diags_note(p->diags, rp->loc, "parameter '%s' is declared here", rp->name);
      }
    }
    return TRUE;
  }
  DrParamNote n = {.loc = DR_LOC(p, v),
                   .text = dr_graph_intern(p->g, v->u.text),
                   .params = hits,
                   .ctx = p->param_ctx,
                   .var_first = p->g->param_vars->len};
  for (const DrEnv *e = env; e != NULL && e != &p->param_env; e = e->outer)
    for (guint i = 0; i < e->n; i++) {
      DrParamVar pv = {dr_graph_intern(p->g, e->vars[i].name), e->vars[i].value};
      g_array_append_val(p->g->param_vars, pv);
    }
  n.n_vars = p->g->param_vars->len - n.var_first;
  g_array_append_val(p->param_notes, n);
  return TRUE;
}

void dr__params_clear_notes(DrParse *p, const char *what) {
  for (guint i = 0; what && i < p->param_notes->len; i++) {
    const DrParamNote *n = &g_array_index(p->param_notes, DrParamNote, i);
    g_autofree char *names = mask_names(p, n->params);
    dr_diags_error(
        p->diags, n->loc, "%s: parameter %s cannot be used here: %s", what, names,
        "parameters may set slice bounds, kernel scalar arguments and memset values (and buffer sizes)");
  }
  g_array_set_size(p->param_notes, 0);
}

void dr__params_loop_notes(DrParse *p) {
  for (guint i = 0; i < p->param_notes->len; i++) {
    const DrParamNote *n = &g_array_index(p->param_notes, DrParamNote, i);
    g_autofree char *names = mask_names(p, n->params);
    dr_diags_error(
        p->diags, n->loc,
        "parameter %s: a loop's or conditional's own keys other than repeat: cannot use parameters yet",
        names);
  }
  g_array_set_size(p->param_notes, 0);
}

static gboolean same_loc(DrLoc a, DrLoc b) { return a.line == b.line && a.col == b.col; }

void dr__params_attach(DrParse *p, guint32 nid, const char *what) {
  if (p->param_notes->len == 0) return;
  DrGraph *g = p->g;
  if (dr_diags_n_errors(p->diags) > p->param_errors_at) {
    /* The node has errors of its own: its values may not have been kept. */
    g_array_set_size(p->param_notes, 0);
    return;
  }
  if (p->scope != NULL || nid == DR_NONE) {
    if (p->scope != NULL)
      for (guint i = 0; i < p->param_notes->len; i++)
        dr_diags_error(p->diags, g_array_index(p->param_notes, DrParamNote, i).loc,
                       "%s: parameters inside loop and conditional bodies are not supported yet", what);
    g_array_set_size(p->param_notes, 0);
    return;
  }
  const DrNode *node = dr_graph_node(g, nid);
  guint64 floats = dr__params_float_mask(p);
  for (guint i = 0; i < p->param_notes->len; i++) {
    const DrParamNote *n = &g_array_index(p->param_notes, DrParamNote, i);
    DrParamUse u = {.node = nid,
                    .text = n->text,
                    .loc = n->loc,
                    .var_first = n->var_first,
                    .n_vars = n->n_vars,
                    .params = n->params,
                    .index = G_MAXUINT32};
    if (n->ctx == DR_PARAM_CTX_MEMSET_VALUE && node->op == DR_OP_MEMSET) {
      u.kind = DR_PARAM_USE_MEMSET_VALUE;
      u.index = 0;
    }
    for (guint32 a = 0; u.index == G_MAXUINT32 && a < node->access_count; a++) {
      const DrAccess *acc = dr_graph_access(g, node->access_first + a);
      gboolean taken = FALSE; /* this node's uses are the last ones */
      for (guint k = g->param_uses->len; k > 0; k--) {
        const DrParamUse *o = &g_array_index(g->param_uses, DrParamUse, k - 1);
        if (o->node != nid) break;
        taken = taken || (o->kind == DR_PARAM_USE_ACCESS && o->index == node->access_first + a);
      }
      if (!taken && same_loc(acc->loc, n->loc) &&
          (node->op == DR_OP_KERNEL || node->op == DR_OP_COPY || node->op == DR_OP_MEMSET)) {
        u.kind = DR_PARAM_USE_ACCESS;
        u.index = node->access_first + a;
      }
    }
    for (guint32 a = 0; u.index == G_MAXUINT32 && a < node->arg_count; a++) {
      const DrArg *arg = dr_graph_arg(g, node->arg_first + a);
      if (node->op == DR_OP_KERNEL && (arg->kind == DR_ARG_INT || arg->kind == DR_ARG_FLOAT) &&
          same_loc(arg->loc, n->loc)) {
        u.kind = DR_PARAM_USE_ARG;
        u.index = node->arg_first + a;
      }
    }
    if (u.index == G_MAXUINT32) {
      g_autofree char *names = mask_names(p, n->params);
      dr_diags_error(p->diags, n->loc, "%s: parameter %s cannot be used here: %s", what, names,
                     "parameters may set slice bounds, kernel scalar arguments and memset values (and buffer "
                     "sizes)");
      continue;
    }
    if (n->params & floats) {
      /* A float parameter only as a whole float argument: "{temp}". */
      const DrArg *arg = u.kind == DR_PARAM_USE_ARG ? dr_graph_arg(g, u.index) : NULL;
      gboolean whole = FALSE;
      const char *t = n->text;
      gsize len = strlen(t);
      if (arg != NULL && arg->kind == DR_ARG_FLOAT && len > 2 && t[0] == '{' && t[len - 1] == '}' &&
          __builtin_popcountll(n->params) == 1) {
        guint k = (guint)__builtin_ctzll(n->params);
        const char *pname = g_array_index(g->params, DrRunParam, k).name;
        g_autofree char *inner = g_strstrip(g_strndup(t + 1, len - 2));
        whole = strcmp(inner, pname) == 0;
        if (whole) dr_graph_arg(g, u.index)->v.f = g_array_index(g->params, DrRunParam, k).f;
      }
      if (!whole) {
        g_autofree char *names = mask_names(p, n->params & floats);
        dr_diags_error(
            p->diags, n->loc,
            "%s: float parameter %s can only be a float kernel argument written whole, as '{NAME}' "
            "(expressions are integer)",
            what, names);
        continue;
      }
    }
    g_array_append_val(g->param_uses, u);
  }
  g_array_set_size(p->param_notes, 0);
}
