/* devices.c: the devices pass, the first of the dependency passes: checks
 * every device a pipeline names against the run's devices and resolves the
 * device each node runs on (DrNode.dev).
 *
 * Requires: a parsed graph. Provides: every buffer's and node's `device:`
 * is one of the run's devices (run.devices, or run.device alone); every
 * node's `dev` is set: its `device:` when given, else the device of its
 * device buffers (a copy: its dst's, else its src's), else the run's; -1
 * for host nodes and for collectives over several devices. A kernel's,
 * memset's, alloc's and free's device buffers are all on its device; a
 * copy whose src and dst are on different devices is a peer copy (the
 * backend's business), and a copy given `device:` touches that device. A
 * collective over a list of buffers has one participant per device of the
 * run, src and dst of a participant on the same device; a collective over
 * one buffer ("this rank's copy") runs on that buffer's device and is
 * checked against run.nranks (sizes, root); send and recv need another
 * process (run.nranks > 1): between the devices of one process a copy is
 * the peer-to-peer transfer.
 *
 * It is not the hazard pass: collectives read their src and write their
 * dst like any node, and the hazard pass orders them across devices from
 * those accesses. Each report is at the offending key or access, as
 * FILE:LINE:COL. O(nodes + accesses + buffers), plus O(devices) per
 * device lookup (at most DR_MAX_DEVICES). */
#include <string.h>

#include "scheduler/passes.h"

/* "[0, 1]": the run's devices, newly allocated. */
static char *devices_text(const DrGraph *g) {
  guint32 n;
  const gint32 *devs = dr_graph_devices(g, &n);
  GString *s = g_string_new("[");
  for (guint32 i = 0; i < n; i++) g_string_append_printf(s, "%s%d", i ? ", " : "", devs[i]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static gboolean check_listed(const DrGraph *g, DrDiags *diags, gint32 device, DrLoc loc, const char *what) {
  if (device < 0 || dr_graph_device_rank(g, device) >= 0) return TRUE;
  g_autofree char *list = devices_text(g);
  dr_diags_error(diags, loc,
                 "%s, key 'device': device %d is not one of the run's devices %s (list it in run.devices)",
                 what, device, list);
  return FALSE;
}

/* The first device buffer's device among node n's accesses; -1: none. */
static gint32 first_buffer_device(const DrGraph *g, const DrNode *n) {
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    gint32 d = dr_graph_buffer_device(g, dr_graph_access(g, a)->buffer);
    if (d >= 0) return d;
  }
  return -1;
}

/* Kernels, memsets, allocs, frees: every device buffer on n->dev. */
static gboolean check_local(const DrGraph *g, DrDiags *diags, const DrNode *n) {
  gboolean ok = TRUE;
  for (guint32 a = n->access_first; a < n->access_first + n->access_count; a++) {
    const DrAccess *ac = dr_graph_access(g, a);
    gint32 d = dr_graph_buffer_device(g, ac->buffer);
    if (d < 0 || d == n->dev) continue;
    dr_diags_error(diags, ac->loc,
                   "node '%s': a %s runs on device %d, but buffer '%s' is on device %d (a %s's buffers must "
                   "be on its device; copy it over first)",
                   n->id, dr_op_name(n->op), n->dev, dr_graph_buffer(g, ac->buffer)->name, d,
                   dr_op_name(n->op));
    ok = FALSE;
  }
  return ok;
}

static gboolean resolve_copy(const DrGraph *g, DrDiags *diags, DrNode *n) {
  const DrAccess *src = dr_graph_access(g, n->access_first);
  const DrAccess *dst = dr_graph_access(g, n->access_first + 1);
  gint32 ds = dr_graph_buffer_device(g, src->buffer), dd = dr_graph_buffer_device(g, dst->buffer);
  if (n->device < 0) {
    n->dev = dd >= 0 ? dd : ds >= 0 ? ds : g->run.device;
    return TRUE;
  }
  n->dev = n->device;
  if ((ds < 0 && dd < 0) || ds == n->device || dd == n->device) return TRUE;
  dr_diags_error(
      diags, n->loc,
      "node '%s': the copy runs on device %d, but its src is on device %d and its dst on device %d", n->id,
      n->device, ds, dd);
  return FALSE;
}

/* Reorders a checked collective's participants so that participant r is
 * rank r (run.devices[r]), as graph.h's I7 promises after this pass: the
 * backends then read ranks off the access order. */
static void sort_by_rank(DrGraph *g, DrNode *n, guint step, gint32 *part_dev) {
  DrAccess tmp[2 * DR_MAX_DEVICES];
  DrAccess *acc = dr_graph_access(g, n->access_first);
  memcpy(tmp, acc, sizeof(DrAccess) * step * n->n_parts);
  for (guint32 i = 0; i < n->n_parts; i++) {
    gint32 r = dr_graph_device_rank(g, part_dev[i]);
    memcpy(&acc[step * (guint32)r], &tmp[step * i], sizeof(DrAccess) * step);
  }
  for (guint32 i = 0; i < n->n_parts; i++) part_dev[i] = dr_graph_devices(g, &(guint32){0})[i];
}

static gboolean check_collective(DrGraph *g, DrDiags *diags, DrNode *n) {
  const char *op = dr_op_name(n->op);
  guint32 n_devs;
  const gint32 *devs = dr_graph_devices(g, &n_devs);
  guint32 nranks = n->per_rank ? MAX(g->run.nranks, 1) : n->n_parts;
  gboolean has_src = n->op != DR_OP_RECV, has_dst = n->op != DR_OP_SEND;
  guint step = has_src && has_dst ? 2 : 1;
  if (n->n_parts == 0) return TRUE; /* the builder reported */
  if ((n->op == DR_OP_SEND || n->op == DR_OP_RECV) && g->run.nranks <= 1) {
    dr_diags_error(
        diags, n->loc,
        "node '%s': %s pairs ranks of different processes (mpirun -np N); between the devices of one "
        "process, a copy is the peer-to-peer transfer",
        n->id, op);
    return FALSE;
  }
  if (n->device >= 0 && n->n_parts > 1) {
    dr_diags_error(
        diags, n->loc,
        "node '%s': 'device' does not apply to a %s over several devices (each participant runs on "
        "its buffers' device)",
        n->id, op);
    return FALSE;
  }
  gint32 part_dev[DR_MAX_DEVICES];
  for (guint32 i = 0; i < n->n_parts; i++) {
    const DrAccess *first = dr_graph_access(g, n->access_first + step * i);
    part_dev[i] = dr_graph_buffer_device(g, first->buffer);
    if (step == 2) {
      const DrAccess *dst = dr_graph_access(g, n->access_first + 2 * i + 1);
      gint32 dd = dr_graph_buffer_device(g, dst->buffer);
      if (dd != part_dev[i]) {
        dr_diags_error(
            diags, dst->loc,
            "node '%s': participant %u's src '%s' is on device %d but its dst '%s' on device %d (a "
            "participant's buffers are on one device)",
            n->id, i, dr_graph_buffer(g, first->buffer)->name, part_dev[i],
            dr_graph_buffer(g, dst->buffer)->name, dd);
        return FALSE;
      }
    }
    for (guint32 j = 0; j < i; j++)
      if (part_dev[j] == part_dev[i]) {
        dr_diags_error(
            diags, first->loc,
            "node '%s': participants %u and %u are both on device %d (%s takes one buffer per device)", n->id,
            j, i, part_dev[i], op);
        return FALSE;
      }
  }
  if (!n->per_rank && n->n_parts != n_devs) {
    g_autofree char *list = devices_text(g);
    dr_diags_error(diags, n->loc,
                   "node '%s': %s names %u participant%s, but the run drives %u device%s %s; give one buffer "
                   "per device",
                   n->id, op, n->n_parts, n->n_parts == 1 ? "" : "s", n_devs, n_devs == 1 ? "" : "s", list);
    return FALSE;
  }
  if (n->per_rank && g->run.nranks <= 1 && n_devs > 1) {
    g_autofree char *list = devices_text(g);
    dr_diags_error(
        diags, n->loc,
        "node '%s': %s names one buffer, but the run drives devices %s; give a list, one buffer per "
        "device",
        n->id, op, list);
    return FALSE;
  }
  (void)devs;
  if (n->per_rank && has_src && has_dst) {
    const char *want = NULL;
    guint64 cs = dr_graph_access(g, n->access_first)->end - dr_graph_access(g, n->access_first)->begin;
    const DrAccess *d = dr_graph_access(g, n->access_first + 1);
    if (!dr_collective_counts_ok(n->op, nranks, cs, d->end - d->begin, &want)) {
      dr_diags_error(diags, d->loc,
                     "node '%s': %s over %u rank%s: %s (src has %" G_GUINT64_FORMAT ", dst %" G_GUINT64_FORMAT
                     ")",
                     n->id, op, nranks, nranks == 1 ? "" : "s", want, cs, d->end - d->begin);
      return FALSE;
    }
  }
  gint32 rank = n->root >= 0 ? n->root : n->peer;
  if (rank >= 0 && (guint32)rank >= nranks) {
    dr_diags_error(diags, n->loc, "node '%s', key '%s': rank %d is out of range [0, %u]", n->id,
                   n->root >= 0 ? "root" : "peer", rank, nranks - 1);
    return FALSE;
  }
  if (!n->per_rank) sort_by_rank(g, n, step, part_dev);
  n->dev = n->n_parts == 1 ? part_dev[0] : -1;
  return TRUE;
}

static gboolean resolve_node(DrGraph *g, DrDiags *diags, DrNode *n) {
  g_autofree char *what = g_strdup_printf("node '%s'", n->id);
  if (!check_listed(g, diags, n->device, n->loc, what)) return FALSE;
  switch (n->op) {
    case DR_OP_HOST:
      n->dev = -1;
      return TRUE;
    case DR_OP_COPY:
      return resolve_copy(g, diags, n);
    case DR_OP_KERNEL:
    case DR_OP_MEMSET:
    case DR_OP_ALLOC:
    case DR_OP_FREE:
    case DR_OP_NOOP: {
      gint32 d = first_buffer_device(g, n);
      n->dev = n->device >= 0 ? n->device : d >= 0 ? d : g->run.device;
      return check_local(g, diags, n);
    }
    default:
      return check_collective(g, diags, n);
  }
}

gboolean dr__devices_run(DrGraph *graph, DrDiags *diags) {
  gboolean ok = TRUE;
  for (DrId i = 0; i < dr_graph_n_buffers(graph); i++) {
    const DrBuffer *b = dr_graph_buffer(graph, i);
    g_autofree char *what = g_strdup_printf("buffer '%s'", b->name);
    ok = check_listed(graph, diags, b->device_set ? b->device : -1, b->device_loc, what) && ok;
  }
  for (guint32 i = 0; i < graph->run.n_device_thresholds; i++) {
    gint32 d = graph->run.device_thresholds[i].device;
    if (dr_graph_device_rank(graph, d) >= 0) continue;
    g_autofree char *list = devices_text(graph);
    dr_diags_error(diags, graph->run.device_thresholds[i].loc,
                   "memory, key 'release_threshold': device %d is not one of the run's devices %s", d, list);
    ok = FALSE;
  }
  if (!ok) return FALSE;
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++)
    ok = resolve_node(graph, diags, dr_graph_node(graph, i)) && ok;
  return ok;
}
