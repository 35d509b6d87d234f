/* loops.c: the public library's loops and conditionals
 * (dr_pipeline_new_body, dr_pipeline_add_repeat/while/if): a body is a
 * DrPipeline around a body graph (ir/loops.h, dr_loop_body_new) whose
 * node ids get the loop's scope, and adding the loop hands the body graph
 * to ir/loops.c's dr_loop_attach, as parser/loops.c does for YAML, with
 * the same checks and wording. */
#include <string.h>

#include "ir/loops.h"
#include "lib/api_internal.h"

const char *dr__pipeline_node_id(DrPipeline *p, const char *id) {
  if (p->scope == NULL) return dr_graph_intern(p->graph, id);
  g_autofree char *scoped = g_strconcat(p->scope, id, NULL);
  return dr_graph_intern(p->graph, scoped);
}

DrPipeline *dr_pipeline_new_body(DrPipeline *pipeline, const char *id) {
  g_return_val_if_fail(pipeline != NULL && id != NULL, NULL);
  if (pipeline->frozen || pipeline->failed) return NULL;
  DrPipeline *b = dr__pipeline_wrap(dr_loop_body_new(pipeline->graph), FALSE);
  b->scope = g_strconcat(dr__pipeline_node_id(pipeline, id), "/", NULL);
  b->parent = pipeline;
  pipeline->refs++;
  return b;
}

/* The body's graph for a loop of `p`, checked (`what`: "nodes" or
 * "else"); NULL after reporting into x. */
static gboolean body_ok(DrApiBuild *x, DrPipeline *p, DrPipeline *body, const char *id, DrLoopKind kind,
                        DrLoc loc, GError **error) {
  if (body->parent != p) {
    dr_set_error_at(error, DR_ERROR_USAGE, loc,
                    "node '%s': the body was not made by dr_pipeline_new_body for this pipeline", id);
    return FALSE;
  }
  if (!dr__pipeline_check_open(body, "become a body", error)) return FALSE;
  return dr_loop_check_body(body->graph, id, kind, -1, x->diags);
}

/* The condition buffer `cond` (an i32 device buffer), DR_NONE after
 * reporting. */
static DrId cond_ok(DrApiBuild *x, DrPipeline *p, const char *key, const char *cond, DrLoc loc) {
  DrId b = dr_graph_find_buffer(p->graph, cond);
  g_autofree char *what = g_strdup_printf("node '%s'", x->b.what->str);
  if (b == DR_NONE) {
    g_autofree char *hint = dr_build_buffer_hint(p->graph, cond);
    dr_diags_error(x->diags, loc, "%s, key '%s': unknown buffer '%s'%s", what, key, cond, hint);
    return DR_NONE;
  }
  const DrBuffer *buf = dr_graph_buffer(p->graph, b);
  if (buf->type != DR_COND_TYPE || buf->where == DR_WHERE_HOST) {
    dr_diags_error(x->diags, loc,
                   "%s, key '%s': a condition is a device buffer of type %s whose element 0 is tested "
                   "(non-zero: true); '%s' is %s in %s memory",
                   what, key, dr_elem_name(DR_COND_TYPE), cond, dr_elem_name(buf->type),
                   dr_where_name(buf->where));
    return DR_NONE;
  }
  return b;
}

/* Takes body's graph (leaving it an empty body, frozen). */
static DrGraph *take(DrPipeline *body) {
  DrGraph *g = body->graph;
  body->graph = dr_loop_body_new(body->parent->graph);
  body->frozen = TRUE;
  return g;
}

static gboolean add_loop(DrPipeline *p, const char *id, DrLoopKind kind, guint64 count, const char *cond,
                         DrPipeline *body, DrPipeline *else_body, GError **error) {
  CHECK_ARGS(p, error);
  g_return_val_if_fail(id != NULL && body != NULL, FALSE);
  if (!dr__pipeline_check_open(p, "add a node", error)) return FALSE;
  DrApiBuild x;
  dr__api_build_begin(&x, p);
  DrLoc loc = dr__pipeline_next_loc(p, FALSE);
  const char *sid = dr__pipeline_node_id(p, id);
  dr_build_set_what(&x.b, sid);
  if (!dr_build_name_ok(&x.b, DR_NAME_NODE, id, NULL, loc)) return dr__api_build_end(&x, error);
  gboolean ok = body_ok(&x, p, body, sid, kind, loc, error) &&
                (else_body == NULL || body_ok(&x, p, else_body, sid, kind, loc, error));
  if (!ok) {
    if (error && *error) {
      dr__api_build_end(&x, NULL);
      return FALSE;
    }
    return dr__api_build_end(&x, error) && FALSE;
  }
  DrId c = DR_NONE;
  if (kind == DR_LOOP_REPEAT && (count < 1 || count > G_MAXINT32))
    dr_diags_error(x.diags, loc, "%s, key 'repeat': %" G_GUINT64_FORMAT " is out of range [1, %d]", sid,
                   count, G_MAXINT32);
  if (kind != DR_LOOP_REPEAT) c = cond_ok(&x, p, kind == DR_LOOP_IF ? "if" : "while", cond, loc);
  if (kind == DR_LOOP_WHILE && c != DR_NONE && !dr_loop_body_sets(body->graph, c))
    dr_diags_error(
        x.diags, loc,
        "node '%s', key 'while': no node of the body writes %s[0], so the loop would never stop (set it "
        "in the body, e.g. with kernel set_while_gt_f32)",
        sid, cond);
  if (dr_diags_n_errors(x.diags) > 0 || !dr_build_node_begin(&x.b, sid, DR_OP_NOOP, loc, FALSE))
    return dr__api_build_end(&x, error) && FALSE;
  DrId nid = dr_build_node_commit(&x.b);
  if (nid == DR_NONE) return dr__api_build_end(&x, error) && FALSE;
  DrLoop *loop = g_new0(DrLoop, 1);
  loop->kind = kind;
  loop->count = kind == DR_LOOP_REPEAT ? count : 0;
  loop->cond = c;
  loop->cond_loc = loc;
  loop->body = take(body);
  loop->else_body = else_body ? take(else_body) : NULL;
  dr_loop_attach(p->graph, nid, loop);
  return dr__api_build_end(&x, error);
}

gboolean dr_pipeline_add_repeat(DrPipeline *pipeline, const char *id, guint64 count, DrPipeline *body,
                                GError **error) {
  return add_loop(pipeline, id, DR_LOOP_REPEAT, count, NULL, body, NULL, error);
}

gboolean dr_pipeline_add_while(DrPipeline *pipeline, const char *id, const char *cond, DrPipeline *body,
                               GError **error) {
  g_return_val_if_fail(cond != NULL, FALSE);
  return add_loop(pipeline, id, DR_LOOP_WHILE, 0, cond, body, NULL, error);
}

gboolean dr_pipeline_add_if(DrPipeline *pipeline, const char *id, const char *cond, DrPipeline *then_body,
                            DrPipeline *else_body, GError **error) {
  g_return_val_if_fail(cond != NULL, FALSE);
  return add_loop(pipeline, id, DR_LOOP_IF, 0, cond, then_body, else_body, error);
}
