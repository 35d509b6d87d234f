/* lifetimes.c: the lifetime pass, program-order checks of stream-ordered
 * buffers.
 *
 * Requires: a parsed graph (accesses within bounds, alloc/free nodes naming
 * device buffers). Provides: every buffer that an alloc node names (a
 * "stream-ordered" buffer) is allocated exactly once, freed exactly once,
 * and used only between the two in program order; no free names a buffer
 * that lives for the whole run. It reports, each as FILE:LINE:COL at the
 * offending access (uses) or node key (alloc/free), naming node and buffer,
 * with a note at the alloc or free it conflicts with:
 *   use before alloc, use after free, double alloc, double free,
 *   free before alloc, alloc with no free, free with no alloc.
 * It does not add edges: ordering alloc and free around the uses is the
 * hazard pass's job (they are whole-buffer writes).
 *
 * Algorithm: one scan over nodes finds the stream-ordered buffers (first
 * alloc); a second scan walks program order keeping per buffer the first
 * alloc and first free seen so far, and checks each node's accesses against
 * them; a last scan reports allocs never freed. A per-buffer stamp (last
 * node reported) keeps one error per (node, buffer). O(nodes + accesses +
 * buffers) time, O(buffers) memory. */
#include "scheduler/passes.h"

typedef struct {
  DrId first_alloc; /* the first alloc node in program order, or DR_NONE */
  DrId alloc_seen;  /* first_alloc once the scan has passed it */
  DrId free_seen;   /* the first free node the scan has passed */
  DrId reported;    /* the last node that got an error about this buffer */
  gboolean freed_early; /* a free came before the alloc (reported there) */
} Life;

static DrLoc node_loc(const DrGraph *g, DrId n) { return dr_graph_node(g, n)->loc; }
static const char *node_id(const DrGraph *g, DrId n) { return dr_graph_node(g, n)->id; }

static void check_alloc(const DrGraph *g, DrId n, Life *l, const char *buf, DrDiags *diags) {
  if (l->alloc_seen != DR_NONE) {
    dr_diags_error(diags, node_loc(g, n), "node '%s': allocates buffer '%s' again; it is already allocated by '%s'",
                   node_id(g, n), buf, node_id(g, l->alloc_seen));
    dr_diags_note(diags, node_loc(g, l->alloc_seen), "'%s' is first allocated here", buf);
    return;
  }
  l->alloc_seen = n;
}

static void check_free(const DrGraph *g, DrId n, const DrBuffer *b, Life *l, DrDiags *diags) {
  if (l->first_alloc == DR_NONE) {
    dr_diags_error(diags, node_loc(g, n),
                   "node '%s': frees buffer '%s', which no alloc node allocates (it lives for the whole run)",
                   node_id(g, n), b->name);
    dr_diags_note(diags, b->loc, "'%s' is declared here", b->name);
  } else if (l->free_seen != DR_NONE) {
    dr_diags_error(diags, node_loc(g, n), "node '%s': frees buffer '%s' again; it is already freed by '%s'",
                   node_id(g, n), b->name, node_id(g, l->free_seen));
    dr_diags_note(diags, node_loc(g, l->free_seen), "'%s' is first freed here", b->name);
    return;
  } else if (l->alloc_seen == DR_NONE) {
    dr_diags_error(diags, node_loc(g, n), "node '%s': frees buffer '%s' before it is allocated by '%s'",
                   node_id(g, n), b->name, node_id(g, l->first_alloc));
    dr_diags_note(diags, node_loc(g, l->first_alloc), "'%s' is allocated here", b->name);
    l->freed_early = TRUE; /* not a free of the allocation: later uses are fine */
    return;
  }
  l->free_seen = n;
}

static void check_use(const DrGraph *g, DrId n, const DrAccess *a, Life *l, const char *buf,
                      DrDiags *diags) {
  if (l->first_alloc == DR_NONE || l->reported == n) return;
  if (l->alloc_seen == DR_NONE) {
    l->reported = n;
    dr_diags_error(diags, a->loc, "node '%s': uses buffer '%s' before it is allocated by '%s'", node_id(g, n),
                   buf, node_id(g, l->first_alloc));
    dr_diags_note(diags, node_loc(g, l->first_alloc), "'%s' is allocated here", buf);
  } else if (l->free_seen != DR_NONE) {
    l->reported = n;
    dr_diags_error(diags, a->loc, "node '%s': uses buffer '%s' after it is freed by '%s'", node_id(g, n), buf,
                   node_id(g, l->free_seen));
    dr_diags_note(diags, node_loc(g, l->free_seen), "'%s' is freed here", buf);
  }
}

gboolean dr__lifetimes_check(const DrGraph *graph, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  guint n_errors = dr_diags_n_errors(diags);
  guint32 n_buffers = dr_graph_n_buffers(graph), n_nodes = dr_graph_n_nodes(graph);
  g_autofree Life *life = g_new(Life, MAX(n_buffers, 1));
  for (DrId b = 0; b < n_buffers; b++) life[b] = (Life){DR_NONE, DR_NONE, DR_NONE, DR_NONE, FALSE};

  for (DrId n = 0; n < n_nodes; n++) {
    const DrNode *node = dr_graph_node(graph, n);
    if (node->op == DR_OP_ALLOC && life[node->buffer].first_alloc == DR_NONE)
      life[node->buffer].first_alloc = n;
  }

  for (DrId n = 0; n < n_nodes && !dr_diags_full(diags); n++) {
    const DrNode *node = dr_graph_node(graph, n);
    if (node->op == DR_OP_ALLOC)
      check_alloc(graph, n, &life[node->buffer], dr_graph_buffer(graph, node->buffer)->name, diags);
    else if (node->op == DR_OP_FREE)
      check_free(graph, n, dr_graph_buffer(graph, node->buffer), &life[node->buffer], diags);
    for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
      const DrAccess *a = dr_graph_access(graph, i);
      /* An alloc's or free's own whole-buffer access is not a use. */
      if ((node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) && a->buffer == node->buffer) continue;
      check_use(graph, n, a, &life[a->buffer], dr_graph_buffer(graph, a->buffer)->name, diags);
    }
  }

  for (DrId n = 0; n < n_nodes && !dr_diags_full(diags); n++) {
    const DrNode *node = dr_graph_node(graph, n);
    if (node->op != DR_OP_ALLOC) continue;
    const Life *l = &life[node->buffer];
    if (l->first_alloc == n && l->free_seen == DR_NONE && !l->freed_early)
      dr_diags_error(diags, node->loc, "node '%s': allocates buffer '%s' but no node frees it", node->id,
                     dr_graph_buffer(graph, node->buffer)->name);
  }
  return dr_diags_n_errors(diags) == n_errors;
}
