/* loops.c: a loop or conditional entry of `nodes:` (issue #17) to IR: the
 * node's keys, its bodies parsed like any `nodes:` section (foreach,
 * anchors and `after:` inside, ids scoped "LOOP/NODE"), the body rules
 * (ir/loops.h, dr_loop_check_body), then the loop node itself through the
 * builder. What a loop means is ir/loops.h's; this file only reads it.
 *
 *   solve:                       refine:
 *     op: loop                     op: if
 *     while: go  # or repeat: N    if: go
 *     nodes: {...}                 nodes: {...}
 *                                  else: {...}   # optional
 */
#include <string.h>

#include "ir/loops.h"
#include "parser/internal.h"

#define WHAT(p) ((p)->build.what->str)

/* X(ENUM_SUFFIX, spelling, applies to loop, applies to if) */
#define LOOP_KEY_LIST(X)      \
  X(OP, "op", 1, 1)           \
  X(FOREACH, "foreach", 1, 1) \
  X(AFTER, "after", 1, 1)     \
  X(DEVICE, "device", 1, 1)   \
  X(LABEL, "label", 1, 1)     \
  X(NODES, "nodes", 1, 1)     \
  X(REPEAT, "repeat", 1, 0)   \
  X(WHILE, "while", 1, 0)     \
  X(IF, "if", 0, 1)           \
  X(ELSE, "else", 0, 1)

enum {
#define X(e, s, l, i) LK_##e,
  LOOP_KEY_LIST(X)
#undef X
      LK_N_KEYS
};

static const char *const loop_keys[] = {
#define X(e, s, l, i) s,
    LOOP_KEY_LIST(X)
#undef X
};
static const gboolean for_loop[] = {
#define X(e, s, l, i) l,
    LOOP_KEY_LIST(X)
#undef X
};
static const gboolean for_if[] = {
#define X(e, s, l, i) i,
    LOOP_KEY_LIST(X)
#undef X
};

/* The op value's text, or NULL when it is no plain scalar. */
static const char *op_text(const DrYNode *map) {
  for (guint i = 0; i < map->len; i++)
    if (strcmp(dr_ynode_key(map, i)->u.text, "op") == 0) {
      const DrYNode *v = dr_ynode_value(map, i);
      return v->kind == DR_Y_SCALAR ? v->u.text : NULL;
    }
  return NULL;
}

gboolean dr__parse_is_loop(const DrYNode *map) {
  if (map == NULL || map->kind != DR_Y_MAP) return FALSE;
  const char *op = op_text(map);
  return op != NULL && (strcmp(op, "loop") == 0 || strcmp(op, "if") == 0);
}

/* Parses the body mapping `v` (key `key` of node `id`) into a new body
 * graph of p->g, in the scope "ID/". Returns it (never NULL: a body with
 * problems was reported and holds what parsed). */
static DrGraph *parse_body(DrParse *p, const char *id, const char *key, const DrYNode *v) {
  DrGraph *body = dr_loop_body_new(p->g);
  if (dr__ynode_is_null(v)) return body;
  if (v->kind != DR_Y_MAP) {
    dr__parse_wrong_type(p, WHAT(p), key, v, "a mapping of node ids to nodes, like 'nodes:'");
    return body;
  }
  DrGraph *outer_g = p->g;
  GArray *outer_afters = p->afters;
  char *outer_scope = p->scope;
  DrBuild outer_build = p->build;
  p->g = body;
  p->afters = g_array_new(FALSE, FALSE, sizeof(DrPendingAfter));
  p->scope = g_strconcat(id, "/", NULL);
  dr_build_init(&p->build, body, p->diags);
  for (guint i = 0; i < v->len && !dr_diags_full(p->diags); i++)
    dr__parse_node_entry(p, (DrYNode *)dr_ynode_key(v, i), (DrYNode *)dr_ynode_value(v, i));
  dr__parse_resolve_afters(p);
  dr_build_clear(&p->build);
  g_free(p->scope);
  g_array_unref(p->afters);
  p->build = outer_build;
  p->scope = outer_scope;
  p->afters = outer_afters;
  p->g = outer_g;
  dr_build_set_what(&p->build, id);
  return body;
}

/* The condition buffer named by `v` (key `key`): an existing i32 buffer
 * in device memory. DR_NONE after reporting. */
static DrId parse_cond(DrParse *p, const char *key, const DrYNode *v, const DrEnv *env) {
  g_autofree char *name = NULL;
  if (!dr__parse_string(p, WHAT(p), key, v, env, &name)) return DR_NONE;
  DrId b = dr_graph_find_buffer(p->g, name);
  if (b == DR_NONE) {
    g_autofree char *hint = dr_build_buffer_hint(p->g, name);
    dr_diags_error(p->diags, DR_LOC(p, v), "%s, key '%s': unknown buffer '%s'%s", WHAT(p), key, name, hint);
    return DR_NONE;
  }
  const DrBuffer *buf = dr_graph_buffer(p->g, b);
  if (buf->type != DR_COND_TYPE || buf->where != DR_WHERE_DEVICE) {
    dr_diags_error(p->diags, DR_LOC(p, v),
                   "%s, key '%s': a condition is a device buffer of type %s whose element 0 is tested "
                   "(non-zero: true); '%s' is %s in %s memory",
                   WHAT(p), key, dr_elem_name(DR_COND_TYPE), name, dr_elem_name(buf->type),
                   dr_where_name(buf->where));
    return DR_NONE;
  }
  return b;
}

/* A `repeat:` that read parameters (note `n`, of loop `id`): a counted
 * loop, at the top level only (parameters reach no body yet) and from
 * integer parameters (expressions are integer). FALSE after reporting. */
static gboolean count_param_ok(DrParse *p, const DrParamNote *n, const char *id) {
  if (p->scope != NULL) {
    dr_diags_error(p->diags, n->loc,
                   "node '%s', key 'repeat': a count from a parameter is supported for top-level loops only "
                   "(parameters inside loop and conditional bodies are not supported yet)",
                   id);
    return FALSE;
  }
  if (n->params & dr__params_float_mask(p)) {
    dr_diags_error(p->diags, n->loc,
                   "node '%s', key 'repeat': a count comes from integer parameters, not float ones", id);
    return FALSE;
  }
  return TRUE;
}

void dr__parse_loop(DrParse *p, const DrYNode *key, const DrYNode *map, const DrEnv *env, const char *id) {
  DrLoopKind kind = strcmp(op_text(map), "if") == 0 ? DR_LOOP_IF : DR_LOOP_WHILE;
  const gboolean *applies = kind == DR_LOOP_IF ? for_if : for_loop;
  const char *op = kind == DR_LOOP_IF ? "if" : "loop";
  const DrYNode *s[LK_N_KEYS];
  guint typos = dr__parse_map_slots(p, WHAT(p), map, loop_keys, LK_N_KEYS, s);
  for (guint k = 0; k < LK_N_KEYS; k++)
    if (s[k] != NULL && !applies[k]) {
      const DrYNode *kn = NULL;
      for (guint i = 0; i < map->len && kn == NULL; i++)
        if (strcmp(dr_ynode_key(map, i)->u.text, loop_keys[k]) == 0) kn = dr_ynode_key(map, i);
      dr_diags_error(p->diags, DR_LOC(p, kn), "%s: key '%s' does not apply to op '%s'", WHAT(p), loop_keys[k],
                     op);
      s[k] = NULL;
    }

  DrLoop *loop = g_new0(DrLoop, 1);
  DrParamNote count_note;
  gboolean has_count_note = FALSE;
  loop->cond = DR_NONE;
  loop->kind = kind;
  gboolean ok = TRUE;
  if (kind != DR_LOOP_IF) {
    if ((s[LK_REPEAT] == NULL) == (s[LK_WHILE] == NULL)) {
      if (s[LK_REPEAT] != NULL)
        dr_diags_error(p->diags, DR_LOC(p, s[LK_WHILE]),
                       "%s: a loop has either 'repeat: N' or 'while: CONDITION', not both", WHAT(p));
      else if (typos == 0)
        dr_diags_error(
            p->diags, DR_LOC(p, key),
            "%s: missing key 'repeat' or 'while' (a loop runs N times, or while a condition holds)", WHAT(p));
      ok = FALSE;
    } else if (s[LK_REPEAT] != NULL) {
      gint64 n;
      loop->kind = DR_LOOP_REPEAT;
      guint notes = p->param_notes->len;
      gboolean parsed = dr__parse_int(p, WHAT(p), "repeat", s[LK_REPEAT], env, 1, G_MAXINT32, &n);
      if (parsed)
        loop->count = (guint64)n;
      else
        ok = FALSE;
      /* A count read from a parameter: taken out of the notes before the
       * body is parsed (whose nodes would report it), kept for the node. */
      if (p->param_notes->len > notes) {
        count_note = g_array_index(p->param_notes, DrParamNote, notes);
        has_count_note = TRUE;
        g_array_set_size(p->param_notes, notes);
        if (parsed && !count_param_ok(p, &count_note, id)) ok = FALSE;
        loop->counted = TRUE;
      }
    } else {
      loop->cond = parse_cond(p, "while", s[LK_WHILE], env);
      loop->cond_loc = DR_LOC(p, s[LK_WHILE]);
      ok = loop->cond != DR_NONE;
    }
  } else if (s[LK_IF] == NULL) {
    if (typos == 0) dr__parse_missing(p, DR_LOC(p, key), WHAT(p), "if");
    ok = FALSE;
  } else {
    loop->cond = parse_cond(p, "if", s[LK_IF], env);
    loop->cond_loc = DR_LOC(p, s[LK_IF]);
    ok = loop->cond != DR_NONE;
  }
  if (s[LK_NODES] == NULL && typos == 0) {
    dr__parse_missing(p, DR_LOC(p, key), WHAT(p), "nodes");
    ok = FALSE;
  }
  gint64 device = -1;
  if (s[LK_DEVICE] != NULL && !dr__parse_int(p, WHAT(p), "device", s[LK_DEVICE], env, 0, 1023, &device))
    ok = FALSE;
  g_autofree char *label = NULL;
  if (s[LK_LABEL] != NULL && !dr__parse_string(p, WHAT(p), "label", s[LK_LABEL], env, &label)) ok = FALSE;

  loop->body = s[LK_NODES] != NULL ? parse_body(p, id, "nodes", s[LK_NODES]) : dr_loop_body_new(p->g);
  if (s[LK_ELSE] != NULL) loop->else_body = parse_body(p, id, "else", s[LK_ELSE]);
  if (!dr_loop_check_body(loop->body, id, kind, (gint32)device, p->diags)) ok = FALSE;
  if (loop->else_body && !dr_loop_check_body(loop->else_body, id, kind, (gint32)device, p->diags)) ok = FALSE;
  if (ok && loop->kind == DR_LOOP_WHILE && !dr_loop_body_sets(loop->body, loop->cond)) {
    dr_diags_error(p->diags, loop->cond_loc,
                   "%s, key 'while': no node of the body writes %s[0], so the loop would never stop (set "
                   "it in the body, e.g. with kernel set_while_gt_f32)",
                   WHAT(p), dr_graph_buffer(p->g, loop->cond)->name);
    ok = FALSE;
  }

  DrBuild *b = &p->build;
  if (!dr_build_node_begin(b, id, DR_OP_NOOP, DR_LOC(p, key), env != NULL)) {
    dr_loop_free(loop);
    return;
  }
  b->node.device = (gint32)device;
  b->node.label = label;
  DrId nid = dr_build_node_commit(b);
  if (!ok || nid == DR_NONE) {
    /* The file fails anyway; the node stays for later `after:` lookups. */
    dr_loop_free(loop);
  } else {
    dr_loop_attach(p->g, nid, loop);
    if (has_count_note) {
      DrParamUse u = {.kind = DR_PARAM_USE_LOOP_COUNT,
                      .node = nid,
                      .index = dr_graph_node(p->g, nid)->loop - 1,
                      .text = count_note.text,
                      .loc = count_note.loc,
                      .var_first = count_note.var_first,
                      .n_vars = count_note.n_vars,
                      .params = count_note.params};
      g_array_append_val(p->g->param_uses, u);
    }
  }
  if (s[LK_AFTER] != NULL && nid != DR_NONE) dr__parse_after(p, nid, s[LK_AFTER], env);
}
