/* loops.c: loop and conditional nodes (loops.h): their body graphs, the
 * rules of what a body may hold, and the accesses a loop node stands for
 * in its enclosing graph. Parsing them is parser/loops.c's job; passes
 * and planning over the bodies are scheduler/loops.c's. */
#include "ir/loops.h"

#include <string.h>

static const char *const kind_names[] = {
#define DR_X(e, s) s,
    DR_LOOP_KIND_LIST(DR_X)
#undef DR_X
};

const char *dr_loop_kind_name(DrLoopKind kind) {
  g_return_val_if_fail(kind < DR_N_LOOP_KINDS, "?");
  return kind_names[kind];
}

const DrLoop *dr_graph_node_loop(const DrGraph *g, DrId node) {
  g_return_val_if_fail(g != NULL && node < dr_graph_n_nodes(g), NULL);
  guint32 l = dr_graph_node(g, node)->loop;
  return l == 0 ? NULL : dr_graph_loop(g, l - 1);
}

DrGraph *dr_loop_body_new(const DrGraph *parent) {
  g_return_val_if_fail(parent != NULL, NULL);
  DrGraph *g = dr_graph_new();
  g->name = dr_graph_intern(g, parent->name);
  g->file = dr_graph_intern(g, parent->file);
  g->base_dir = dr_graph_intern(g, parent->base_dir);
  g->run = parent->run;
  g->run.device_loop = FALSE; /* the pipeline's, not a body's */
  for (DrId i = 0; i < dr_graph_n_buffers(parent); i++) dr_graph_add_buffer(g, dr_graph_buffer(parent, i));
  for (DrId i = 0; i < parent->kernels->len; i++) dr_graph_add_kernel(g, dr_graph_kernel(parent, i));
  return g;
}

void dr_loop_free(DrLoop *loop) {
  if (loop == NULL) return;
  dr_graph_free(loop->body);
  dr_graph_free(loop->else_body);
  g_free(loop);
}

static void loop_free_ptr(gpointer p) { dr_loop_free(p); }

const char *dr_loop_noun(DrLoopKind kind) { return kind == DR_LOOP_IF ? "conditional" : "loop"; }

/* Reports each node of `body` that a conditional body cannot hold: `in`
 * says where it would be ("cannot be in the body of loop 'x'"), `dev` why
 * a device does not fit, `fix` what to do. Returns the reports made. */
static guint check_nodes(const DrGraph *body, gint32 device, const char *in, const char *dev, const char *fix,
                         DrDiags *diags) {
  guint before = dr_diags_n_errors(diags);
  for (DrId i = 0; i < dr_graph_n_nodes(body); i++) {
    const DrNode *n = dr_graph_node(body, i);
    switch (n->op) {
      case DR_OP_HOST:
      case DR_OP_ALLOC:
      case DR_OP_FREE:
      case DR_OP_ALLREDUCE:
      case DR_OP_BROADCAST:
      case DR_OP_REDUCE:
      case DR_OP_ALLGATHER:
      case DR_OP_REDUCESCATTER:
      case DR_OP_ALLTOALL:
      case DR_OP_SEND:
      case DR_OP_RECV:
        dr_diags_error(diags, n->loc,
                       "node '%s': op '%s' %s (a body holds kernels, memsets, device-to-device copies, noops "
                       "and nested loops or conditionals, on one device): %s",
                       n->id, dr_op_name(n->op), in, fix);
        continue;
      case DR_OP_COPY:
        for (guint32 a = 0; a < n->access_count; a++) {
          const DrAccess *acc = dr_graph_access(body, n->access_first + a);
          const DrBuffer *buf = dr_graph_buffer(body, acc->buffer);
          if (buf->where == DR_WHERE_DEVICE) continue;
          dr_diags_error(
              diags, acc->loc,
              "node '%s': a copy touching host memory (buffer '%s' is where: %s) %s (a body copies "
              "device to device only): %s",
              n->id, buf->name, dr_where_name(buf->where), in, fix);
          break;
        }
        break;
      default:
        break;
    }
    if (n->device >= 0 && n->device != device)
      dr_diags_error(diags, n->loc, "node '%s': device %d %s; a body runs on one device: %s", n->id,
                     n->device, dev, fix);
  }
  return dr_diags_n_errors(diags) - before;
}

gboolean dr_loop_check_body(const DrGraph *body, const char *id, DrLoopKind kind, gint32 device,
                            DrDiags *diags) {
  g_return_val_if_fail(body != NULL && id != NULL && diags != NULL, FALSE);
  const char *noun = dr_loop_noun(kind);
  g_autofree char *in = g_strdup_printf("cannot be in the body of %s '%s'", noun, id);
  g_autofree char *dev = g_strdup_printf("is not the device of %s '%s' (%s)", noun, id,
                                         device < 0 ? "the run's device" : "its device: key");
  return check_nodes(body, device, in, dev, "hoist it out of the loop", diags) == 0;
}

gboolean dr_loop_check_device_loop(const DrGraph *g, DrDiags *diags) {
  g_return_val_if_fail(g != NULL && diags != NULL, FALSE);
  if (!g->run.device_loop) return TRUE;
  g_autofree char *dev = g_strdup_printf("is not the run's device (device %d)", g->run.device);
  guint bad = check_nodes(g, g->run.device,
                          "prevents run.device_loop (the iteration would be the body of a WHILE node)", dev,
                          "hoist it out of the pipeline or set run.device_loop: false", diags);
  if (bad > 0) dr_diags_note(diags, g->run.device_loop_loc, "run.device_loop is set here");
  return bad == 0;
}

gboolean dr_loop_body_sets(const DrGraph *body, DrId cond) {
  g_return_val_if_fail(body != NULL, FALSE);
  for (guint32 i = 0; i < body->accesses->len; i++) {
    const DrAccess *a = dr_graph_access(body, i);
    if (a->buffer == cond && a->mode != DR_ACCESS_READ && a->begin == 0 && a->end > 0) return TRUE;
  }
  return FALSE;
}

/* Widens the hull [*b, *e) (empty while *e == 0) by a. */
static void hull_add(guint64 *b, guint64 *e, const DrAccess *a) {
  if (*e == 0) {
    *b = a->begin;
    *e = a->end;
    return;
  }
  *b = MIN(*b, a->begin);
  *e = MAX(*e, a->end);
}

static void hulls_of(const DrGraph *body, guint64 *rb, guint64 *re, guint64 *wb, guint64 *we, DrLoc *rl,
                     DrLoc *wl) {
  for (guint32 i = 0; i < body->accesses->len; i++) {
    const DrAccess *a = dr_graph_access(body, i);
    if (a->end <= a->begin) continue;
    if (a->mode == DR_ACCESS_READ || a->mode == DR_ACCESS_READ_WRITE) {
      if (re[a->buffer] == 0) rl[a->buffer] = a->loc;
      hull_add(&rb[a->buffer], &re[a->buffer], a);
    }
    if (a->mode == DR_ACCESS_WRITE || a->mode == DR_ACCESS_READ_WRITE) {
      if (we[a->buffer] == 0) wl[a->buffer] = a->loc;
      hull_add(&wb[a->buffer], &we[a->buffer], a);
    }
  }
}

void dr_loop_attach(DrGraph *g, DrId node, DrLoop *loop) {
  g_return_if_fail(g != NULL && loop != NULL && loop->body != NULL);
  g_return_if_fail(node != DR_NONE && node + 1 == dr_graph_n_nodes(g));
  guint32 nb = dr_graph_n_buffers(g);
  g_autofree guint64 *rb = g_new0(guint64, MAX(nb, 1)), *re = g_new0(guint64, MAX(nb, 1));
  g_autofree guint64 *wb = g_new0(guint64, MAX(nb, 1)), *we = g_new0(guint64, MAX(nb, 1));
  g_autofree DrLoc *rl = g_new0(DrLoc, MAX(nb, 1)), *wl = g_new0(DrLoc, MAX(nb, 1));
  hulls_of(loop->body, rb, re, wb, we, rl, wl);
  if (loop->else_body) hulls_of(loop->else_body, rb, re, wb, we, rl, wl);
  if (loop->kind != DR_LOOP_REPEAT && loop->cond != DR_NONE) {
    DrAccess c = {loop->cond, DR_ACCESS_READ, 0, 1, loop->cond_loc};
    if (re[loop->cond] == 0) rl[loop->cond] = loop->cond_loc;
    hull_add(&rb[loop->cond], &re[loop->cond], &c);
  }
  for (DrId b = 0; b < nb; b++) {
    if (re[b] > 0 && we[b] > 0 && rb[b] == wb[b] && re[b] == we[b]) {
      DrAccess a = {b, DR_ACCESS_READ_WRITE, rb[b], re[b], wl[b]};
      dr_graph_add_access(g, &a);
      continue;
    }
    if (re[b] > 0) {
      DrAccess a = {b, DR_ACCESS_READ, rb[b], re[b], rl[b]};
      dr_graph_add_access(g, &a);
    }
    if (we[b] > 0) {
      DrAccess a = {b, DR_ACCESS_WRITE, wb[b], we[b], wl[b]};
      dr_graph_add_access(g, &a);
    }
  }
  if (g->loops == NULL) g->loops = g_ptr_array_new_with_free_func(loop_free_ptr);
  DrNode *n = dr_graph_node(g, node);
  loop->node = node;
  loop->id = n->id;
  loop->loc = n->loc;
  /* A body's plan is titled by its loop (report/plan_text.c). */
  loop->body->name = dr_graph_intern(loop->body, n->id);
  if (loop->else_body) loop->else_body->name = dr_graph_intern(loop->else_body, n->id);
  g_ptr_array_add(g->loops, loop);
  n->loop = g->loops->len;
}

guint32 dr_loop_auto_unroll(double body_us) {
  guint32 u = 1;
  while (u < DR_WHILE_UNROLL_MAX && !(u * body_us >= DR_WHILE_TRIP_US)) u++;
  return u;
}

static const char *const guard_names[] = {
#define DR_X(e, s) s,
    DR_WHILE_GUARD_LIST(DR_X)
#undef DR_X
};

const char *dr_while_guard_name(DrWhileGuard guard) {
  g_return_val_if_fail(guard < DR_N_WHILE_GUARDS, "?");
  return guard_names[guard];
}

/* Whether node v of `g` writes element 0 of buffer `cond`. */
static gboolean node_sets(const DrGraph *g, DrId v, DrId cond) {
  const DrNode *n = dr_graph_node(g, v);
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    const DrAccess *acc = dr_graph_access(g, a);
    if (acc->buffer == cond && acc->mode != DR_ACCESS_READ && acc->begin == 0 && acc->end > 0) return TRUE;
  }
  return FALSE;
}

gboolean dr_loop_while_guardable(const DrGraph *body, DrId cond, DrId *writer, const char **why) {
  g_return_val_if_fail(body != NULL, FALSE);
  const char *no = NULL;
  DrId w = DR_NONE;
  guint32 n = dr_graph_n_nodes(body);
  for (DrId v = 0; v < n && no == NULL; v++) {
    const DrNode *node = dr_graph_node(body, v);
    if (node->loop != 0)
      no = "a nested loop or conditional";
    else if (node->op == DR_OP_KERNEL && !dr_graph_kernel(body, node->kernel)->guardable)
      no = "a kernel that cannot read a guard (cuBLAS, checksum_u8 or a user kernel)";
    else if (node->op != DR_OP_KERNEL && node->op != DR_OP_NOOP)
      no = "a memset or copy (no kernel of its own to read the condition)";
    else if (node_sets(body, v, cond)) {
      if (w != DR_NONE) no = "two nodes that set the condition";
      w = v;
    }
  }
  if (no == NULL && w == DR_NONE) no = "no node that sets the condition";
  if (no == NULL) {
    /* No kernel may follow w: walk the edges forward from it. */
    g_autofree gboolean *after = g_new0(gboolean, MAX(n, 1));
    g_autofree guint32 *first = g_new0(guint32, n + 1);
    guint32 ne = body->edges ? body->edges->len : 0;
    g_autofree DrId *to = g_new(DrId, MAX(ne, 1));
    for (guint32 e = 0; e < ne; e++) first[dr_graph_edge(body, e)->from + 1]++;
    for (DrId v = 0; v < n; v++) first[v + 1] += first[v];
    g_autofree guint32 *fill = g_memdup2(first, sizeof(guint32) * (n + 1));
    for (guint32 e = 0; e < ne; e++) to[fill[dr_graph_edge(body, e)->from]++] = dr_graph_edge(body, e)->to;
    g_autofree DrId *stack = g_new(DrId, MAX(n, 1));
    guint32 top = 0;
    stack[top++] = w;
    while (top > 0 && no == NULL) {
      DrId v = stack[--top];
      for (guint32 i = first[v]; i < first[v + 1]; i++)
        if (!after[to[i]]) {
          after[to[i]] = TRUE;
          stack[top++] = to[i];
          if (dr_graph_node(body, to[i])->op == DR_OP_KERNEL)
            no = "a kernel after the one that sets the condition";
        }
    }
  }
  if (writer) *writer = no == NULL ? w : DR_NONE;
  if (why) *why = no;
  return no == NULL;
}

guint32 dr_loop_auto_unroll_guarded(double body_us) {
  guint32 u = 1;
  while (u < DR_WHILE_GUARDED_MAX && !(u * DR_WHILE_GUARD_SHARE * body_us >= DR_WHILE_TRIP_US)) u++;
  return u;
}

guint64 dr_graph_n_nodes_deep(const DrGraph *g) {
  g_return_val_if_fail(g != NULL, 0);
  guint64 n = dr_graph_n_nodes(g);
  for (guint i = 0; i < dr_graph_n_loops(g); i++) {
    const DrLoop *l = dr_graph_loop(g, i);
    n += dr_graph_n_nodes_deep(l->body);
    if (l->else_body) n += dr_graph_n_nodes_deep(l->else_body);
  }
  return n;
}
