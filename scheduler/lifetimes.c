/* lifetimes.c: the lifetime pass, program-order checks of stream-ordered
 * buffers.
 *
 * Requires: a parsed graph (accesses within bounds, alloc/free nodes naming
 * device buffers). Provides: every buffer that an alloc node names (a
 * "stream-ordered" buffer) has one or more lifetimes, each an alloc, then
 * uses, then a free, in program order, one after another (decisions.md:
 * "any number of lifetimes"); every use of it lies inside one of them; no
 * free names a buffer that lives for the whole run. Lifetime k of a buffer
 * is its k-th alloc (1-based) up to the next free. It reports, each as
 * FILE:LINE:COL at the offending access (uses) or node key (alloc/free),
 * naming node and buffer, with a note at the alloc or free it conflicts
 * with:
 *   use before the first alloc, use after the last free, use between two
 *   lifetimes (the message names the nearer one in program order: the
 *   free that ended the one before, or the alloc that starts the one
 *   after), alloc while allocated (double alloc), free while not allocated
 *   (double free), free before the first alloc, alloc with no free, free
 *   with no alloc.
 * It does not add edges: ordering each alloc and free around its uses, and
 * each lifetime after the one before, is the hazard pass's job (alloc and
 * free are whole-buffer writes, so an alloc follows the previous free by a
 * WAW edge, and a free follows every use of its lifetime).
 *
 * Algorithm: one scan over nodes finds each buffer's first alloc and links
 * every alloc to the buffer's next alloc; a second scan walks program order
 * keeping per buffer the current lifetime (its alloc, whether it is still
 * allocated, the last free), and checks each node's accesses against it; a
 * last scan reports lifetimes never freed. A per-buffer stamp (last node
 * reported) keeps one error per (node, buffer). O(nodes + accesses +
 * buffers) time, O(nodes + buffers) memory. */
#include "scheduler/passes.h"

typedef struct {
  DrId first_alloc;     /* the first alloc node in program order, or DR_NONE */
  DrId cur_alloc;       /* the alloc of the latest lifetime the scan entered */
  DrId last_free;       /* the latest free the scan passed that ended a lifetime */
  guint32 index;        /* cur_alloc's lifetime number, 1-based */
  gboolean live;        /* between cur_alloc and its free */
  DrId reported;        /* the last node that got an error about this buffer */
  gboolean freed_early; /* a free came before the first alloc (reported there) */
} Life;

static DrLoc node_loc(const DrGraph *g, DrId n) { return dr_graph_node(g, n)->loc; }
static const char *node_id(const DrGraph *g, DrId n) { return dr_graph_node(g, n)->id; }

static void check_alloc(const DrGraph *g, DrId n, Life *l, const char *buf, DrDiags *diags) {
  if (l->live) {
    dr_diags_error(diags, node_loc(g, n),
                   "node '%s': allocates buffer '%s' again; it is already allocated by '%s'", node_id(g, n),
                   buf, node_id(g, l->cur_alloc));
    dr_diags_note(diags, node_loc(g, l->cur_alloc),
                  "'%s' is allocated here, and no node frees it before '%s'", buf, node_id(g, n));
    return;
  }
  l->cur_alloc = n;
  l->index++;
  l->live = TRUE;
}

static void check_free(const DrGraph *g, DrId n, const DrBuffer *b, Life *l, DrDiags *diags) {
  if (l->first_alloc == DR_NONE) {
    dr_diags_error(diags, node_loc(g, n),
                   "node '%s': frees buffer '%s', which no alloc node allocates (it lives for the whole run)",
                   node_id(g, n), b->name);
    dr_diags_note(diags, b->loc, "'%s' is declared here", b->name);
  } else if (l->live) {
    l->live = FALSE;
    l->last_free = n;
  } else if (l->last_free != DR_NONE) {
    dr_diags_error(diags, node_loc(g, n), "node '%s': frees buffer '%s' again; it is already freed by '%s'",
                   node_id(g, n), b->name, node_id(g, l->last_free));
    dr_diags_note(diags, node_loc(g, l->last_free),
                  "'%s' is freed here, and no node allocates it again before '%s'", b->name, node_id(g, n));
  } else {
    dr_diags_error(diags, node_loc(g, n), "node '%s': frees buffer '%s' before it is allocated by '%s'",
                   node_id(g, n), b->name, node_id(g, l->first_alloc));
    dr_diags_note(diags, node_loc(g, l->first_alloc), "'%s' is allocated here", b->name);
    l->freed_early = TRUE; /* not a free of the allocation: later uses are fine */
  }
}

/* A use of a buffer that is not allocated at node n: names the nearer of
 * the lifetime that ended before n and the one that starts after it. */
static void report_use(const DrGraph *g, DrId n, const DrAccess *a, const Life *l, const DrId *next_alloc,
                       const char *buf, DrDiags *diags) {
  if (l->last_free == DR_NONE) { /* before the first lifetime (or a free before it) */
    dr_diags_error(diags, a->loc, "node '%s': uses buffer '%s' before it is allocated by '%s'", node_id(g, n),
                   buf, node_id(g, l->first_alloc));
    dr_diags_note(diags, node_loc(g, l->first_alloc), "'%s' is allocated here", buf);
    return;
  }
  DrId next = next_alloc[l->cur_alloc];
  if (next == DR_NONE) { /* after the last lifetime */
    dr_diags_error(diags, a->loc, "node '%s': uses buffer '%s' after it is freed by '%s'", node_id(g, n), buf,
                   node_id(g, l->last_free));
    dr_diags_note(diags, node_loc(g, l->last_free), "'%s' is freed here", buf);
  } else if (n - l->last_free <= next - n) {
    dr_diags_error(
        diags, a->loc,
        "node '%s': uses buffer '%s' outside its lifetimes: after '%s' frees it (the end of lifetime "
        "%u), before '%s' allocates it again",
        node_id(g, n), buf, node_id(g, l->last_free), l->index, node_id(g, next));
    dr_diags_note(diags, node_loc(g, l->last_free), "lifetime %u of '%s' ends here", l->index, buf);
  } else {
    dr_diags_error(
        diags, a->loc,
        "node '%s': uses buffer '%s' outside its lifetimes: before '%s' allocates it again (the start "
        "of lifetime %u), after '%s' frees it",
        node_id(g, n), buf, node_id(g, next), l->index + 1, node_id(g, l->last_free));
    dr_diags_note(diags, node_loc(g, next), "lifetime %u of '%s' starts here", l->index + 1, buf);
  }
}

gboolean dr__lifetimes_check(const DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  guint n_errors = dr_diags_n_errors(diags);
  guint32 n_buffers = dr_graph_n_buffers(graph), n_nodes = dr_graph_n_nodes(graph);
  g_autofree Life *life = g_new(Life, MAX(n_buffers, 1));
  for (DrId b = 0; b < n_buffers; b++) life[b] = (Life){DR_NONE, DR_NONE, DR_NONE, 0, FALSE, DR_NONE, FALSE};
  /* next_alloc[a]: the buffer's next alloc after alloc node a; cur_alloc
   * doubles as "the latest alloc seen" while linking. */
  g_autofree DrId *next_alloc = g_new(DrId, MAX(n_nodes, 1));
  for (DrId n = 0; n < n_nodes; n++) {
    const DrNode *node = dr_graph_node(graph, n);
    next_alloc[n] = DR_NONE;
    if (node->op != DR_OP_ALLOC) continue;
    Life *l = &life[node->buffer];
    if (l->first_alloc == DR_NONE)
      l->first_alloc = n;
    else
      next_alloc[l->cur_alloc] = n;
    l->cur_alloc = n;
  }
  for (DrId b = 0; b < n_buffers; b++) life[b].cur_alloc = DR_NONE;

  for (DrId n = 0; n < n_nodes; n++) {
    const DrNode *node = dr_graph_node(graph, n);
    if (node->op == DR_OP_ALLOC)
      check_alloc(graph, n, &life[node->buffer], dr_graph_buffer(graph, node->buffer)->name, diags);
    else if (node->op == DR_OP_FREE)
      check_free(graph, n, dr_graph_buffer(graph, node->buffer), &life[node->buffer], diags);
    for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
      const DrAccess *a = dr_graph_access(graph, i);
      /* An alloc's or free's own whole-buffer access is not a use. */
      if ((node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) && a->buffer == node->buffer) continue;
      Life *l = &life[a->buffer];
      if (l->first_alloc == DR_NONE || l->live || l->reported == n) continue;
      l->reported = n;
      report_use(graph, n, a, l, next_alloc, dr_graph_buffer(graph, a->buffer)->name, diags);
    }
  }

  for (DrId n = 0; n < n_nodes; n++) {
    const DrNode *node = dr_graph_node(graph, n);
    if (node->op != DR_OP_ALLOC) continue;
    const Life *l = &life[node->buffer];
    if (l->cur_alloc == n && l->live && !l->freed_early)
      dr_diags_error(diags, node->loc, "node '%s': allocates buffer '%s' but no node frees it", node->id,
                     dr_graph_buffer(graph, node->buffer)->name);
  }
  return dr_diags_n_errors(diags) == n_errors;
}
