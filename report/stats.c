/* stats.c: the run report's statistics: a new report sized for a plan's
 * samples, and, once the backend has filled them, each node's median,
 * minimum and maximum, the makespans, the critical path and the overlap
 * figures. The run driver (backends/run.c) calls both; nothing here runs
 * or writes anything. O(iterations × V log iterations + E). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

/* Bytes node `id` moves (DrNodeReport.bytes): a copy's or memset's
 * destination slice; a kernel's buffer arguments' slices, each counted
 * once per direction (a readwrite slice twice: read and written); 0 for
 * other ops. A kernel's figure is what its declarations promise, not a
 * measurement: a kernel may touch less (or, through caches, more). */
static guint64 moved_bytes(const DrGraph *g, DrId id) {
  const DrNode *n = dr_graph_node(g, id);
  if (n->op != DR_OP_COPY && n->op != DR_OP_MEMSET && n->op != DR_OP_KERNEL) return 0;
  guint64 sum = 0;
  for (guint32 i = n->access_first; i < n->access_first + n->access_count; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    guint64 bytes = (a->end - a->begin) * dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
    if (n->op != DR_OP_KERNEL) {
      if (dr_access_writes(a->mode)) return bytes;
      continue;
    }
    sum += bytes * (guint64)(dr_access_reads(a->mode) + dr_access_writes(a->mode));
  }
  return sum;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median, min and max of the non-NaN values; NAN when there are none. */
static void stats(const double *v, guint n, double *median, double *min, double *max) {
  g_autofree double *s = g_new(double, MAX(n, 1));
  guint k = 0;
  for (guint i = 0; i < n; i++)
    if (!isnan(v[i])) s[k++] = v[i];
  if (k == 0) {
    *median = *min = *max = NAN;
    return;
  }
  qsort(s, k, sizeof(double), cmp_double);
  *median = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
  if (min) *min = s[0];
  if (max) *max = s[k - 1];
}

/* The longest path of the DAG weighted by median node durations (an
 * unmeasured node weighs 0), over the graph's dependency edges, by dynamic
 * programming in a topological order (Kahn's, ties in plan order). O(V +
 * E). Fills critical_path_us and critical_nodes, then the overlap
 * figures. */
static void report_critical_path(DrReport *r, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = r->n_graph_nodes, m = g->edges->len;
  g_autofree double *dur = g_new0(double, MAX(n, 1));
  g_autofree double *finish = g_new0(double, MAX(n, 1));
  g_autofree DrId *pred = g_new(DrId, MAX(n, 1));
  g_autofree guint32 *indeg = g_new0(guint32, MAX(n, 1));
  g_autofree guint32 *out_first = g_new0(guint32, n + 1);
  g_autofree DrId *out_to = g_new(DrId, MAX(m, 1));
  g_autofree DrId *queue = g_new(DrId, MAX(n, 1));
  gboolean any = FALSE;
  double sum = 0;
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    if (isnan(nr->duration_us)) continue;
    dur[nr->node] = MAX(nr->duration_us, 0.0);
    sum += dur[nr->node];
    any = TRUE;
  }
  /* Outgoing edges grouped by source (a counting sort). */
  for (guint32 e = 0; e < m; e++) {
    out_first[dr_graph_edge(g, e)->from + 1]++;
    indeg[dr_graph_edge(g, e)->to]++;
  }
  for (guint32 v = 0; v < n; v++) out_first[v + 1] += out_first[v];
  {
    g_autofree guint32 *fill = g_memdup2(out_first, sizeof(guint32) * (n + 1));
    for (guint32 e = 0; e < m; e++) out_to[fill[dr_graph_edge(g, e)->from]++] = dr_graph_edge(g, e)->to;
  }
  guint32 head = 0, tail = 0;
  for (guint32 s = 0; s < plan->steps->len; s++) {
    DrId v = dr_plan_step(plan, s)->node;
    pred[v] = DR_NONE;
    if (indeg[v] == 0) queue[tail++] = v;
  }
  DrId last = DR_NONE;
  double best = 0;
  while (head < tail) {
    DrId u = queue[head++];
    finish[u] += dur[u]; /* finish[u] held its ready time until now */
    if (last == DR_NONE || finish[u] > best) {
      best = finish[u];
      last = u;
    }
    for (guint32 k = out_first[u]; k < out_first[u + 1]; k++) {
      DrId v = out_to[k];
      if (pred[v] == DR_NONE || finish[u] > finish[v]) {
        finish[v] = finish[u];
        pred[v] = u;
      }
      if (--indeg[v] == 0) queue[tail++] = v;
    }
  }
  r->critical_nodes = g_array_new(FALSE, FALSE, sizeof(DrId));
  for (DrId v = last; v != DR_NONE; v = pred[v]) g_array_prepend_val(r->critical_nodes, v);
  /* Streams used, counted from the steps (hand-made plans may leave
   * DrStream.n_nodes unset). */
  g_autofree gboolean *used = g_new0(gboolean, MAX(dr_plan_n_streams(plan), 1));
  r->streams_used = 0;
  for (guint32 s = 0; s < plan->steps->len; s++) {
    guint32 st = dr_plan_step(plan, s)->stream;
    if (!used[st]) r->streams_used++;
    used[st] = TRUE;
  }
  if (!any) {
    r->critical_path_us = r->overlap_streams = r->overlap_critical = NAN;
    return;
  }
  r->critical_path_us = best;
  gboolean span = !isnan(r->makespan_us) && r->makespan_us > 0;
  r->overlap_streams = span && r->streams_used ? sum / (r->makespan_us * r->streams_used) : NAN;
  r->overlap_critical = span ? best / r->makespan_us : NAN;
}

/* Loop `lr`'s body nodes' last-trip durations (DrBodySpan) over the timed
 * iterations, per node in the order first seen. O(spans x body nodes). */
static void loop_body_stats(const DrReport *r, DrLoopReport *lr) {
  g_autoptr(GPtrArray) ids = g_ptr_array_new();
  g_autoptr(GPtrArray) durs = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  g_autoptr(GPtrArray) loops = g_ptr_array_new();
  for (guint k = 0; r->body_spans != NULL && k < r->body_spans->len; k++) {
    const DrBodySpan *sp = &g_array_index(r->body_spans, DrBodySpan, k);
    if (sp->node != lr->node) continue;
    guint at = 0;
    while (at < ids->len && strcmp(g_ptr_array_index(ids, at), sp->id) != 0) at++;
    if (at == ids->len) {
      g_ptr_array_add(ids, (gpointer)sp->id);
      g_ptr_array_add(loops, (gpointer)sp->loop);
      g_ptr_array_add(durs, g_array_new(FALSE, FALSE, sizeof(double)));
    }
    double us = sp->end_us - sp->start_us;
    g_array_append_val(g_ptr_array_index(durs, at), us);
  }
  if (ids->len == 0) return;
  lr->body = g_array_new(FALSE, FALSE, sizeof(DrBodyNodeStats));
  for (guint i = 0; i < ids->len; i++) {
    const GArray *d = g_ptr_array_index(durs, i);
    DrBodyNodeStats b = {g_ptr_array_index(ids, i), g_ptr_array_index(loops, i), d->len, NAN, NAN, NAN};
    stats((const double *)(const void *)d->data, d->len, &b.us_median, &b.us_min, &b.us_max);
    g_array_append_val(lr->body, b);
  }
}

/* Each top-level loop's trip durations over its spans. */
static void loop_trip_stats(DrReport *r) {
  for (guint i = 0; r->loops != NULL && i < r->loops->len; i++) {
    DrLoopReport *lr = &g_array_index(r->loops, DrLoopReport, i);
    g_autoptr(GArray) d = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint k = 0; r->trip_spans != NULL && k < r->trip_spans->len; k++) {
      const DrTripSpan *sp = &g_array_index(r->trip_spans, DrTripSpan, k);
      double us = sp->end_us - sp->start_us;
      if (sp->node == lr->node && sp->depth == 0) g_array_append_val(d, us);
    }
    lr->trip_spans = d->len;
    stats((const double *)d->data, d->len, &lr->trip_us_median, &lr->trip_us_min, &lr->trip_us_max);
    loop_body_stats(r, lr);
  }
}

void dr_report_summarise(DrReport *r, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = r->n_graph_nodes, it = r->iterations;
  g_autofree double *start = g_new(double, MAX(it, 1));
  g_autofree double *dur = g_new(double, MAX(it, 1));
  for (guint32 s = 0; s < plan->steps->len; s++) {
    DrId id = dr_plan_step(plan, s)->node;
    const DrNode *node = dr_graph_node(g, id);
    for (guint32 i = 0; i < it; i++) {
      start[i] = r->sample_start[(gsize)i * n + id];
      dur[i] = r->sample_end[(gsize)i * n + id] - start[i];
    }
    guint32 stream = dr_plan_step(plan, s)->stream;
    DrNodeReport nr = {.node = id,
                       .id = node->id,
                       .op = node->op,
                       .stream = stream,
                       .device = g_array_index(plan->streams, DrStream, stream).device};
    double smin, smax;
    stats(start, it, &nr.start_us, &smin, &smax);
    stats(dur, it, &nr.duration_us, &nr.duration_min_us, &nr.duration_max_us);
    nr.bytes = moved_bytes(g, id);
    nr.gbps = nr.bytes && nr.duration_us > 0 ? (double)nr.bytes / (nr.duration_us * 1e3) : NAN;
    g_array_append_val(r->nodes, nr);
  }
  stats(r->iter_makespan_us, it, &r->makespan_us, &r->makespan_min_us, &r->makespan_max_us);
  double t = 0;
  for (guint32 i = 0; i < it; i++) {
    r->iter_start_us[i] = t;
    /* Iterations run back to back; the trace lays them out by makespan
     * plus a small gap so they read apart. */
    t += (isnan(r->iter_makespan_us[i]) ? 0 : r->iter_makespan_us[i]) + 1.0;
  }
  report_critical_path(r, plan);
  dr__report_summarise_ops(r, plan);
  loop_trip_stats(r);
}

DrReport *dr_report_new(const DrPlan *plan, guint32 iterations, guint32 warmup) {
  const DrGraph *g = plan->graph;
  DrReport *r = g_new0(DrReport, 1);
  r->name = g_strdup(g->name ? g->name : "pipeline");
  r->peak_serial_bytes = plan->peak_serial_bytes;
  r->peak_bound_bytes = plan->peak_bound_bytes;
  r->peak_measured_bytes = G_MAXUINT64;
  r->whole_run_bytes = plan->whole_run_bytes;
  r->param_update_us = NAN;
  dr_report_set_params(r, g);
  if (plan->n_lifetimes > 0) r->mem_delta = g_new0(gint64, MAX(dr_graph_n_nodes(g), 1));
  for (DrId v = 0; r->mem_delta && v < dr_graph_n_nodes(g); v++) {
    const DrNode *node = dr_graph_node(g, v);
    if (node->op != DR_OP_ALLOC && node->op != DR_OP_FREE) continue;
    gint64 bytes = (gint64)dr_pool_bytes(dr_buffer_bytes(dr_graph_buffer(g, node->buffer)));
    r->mem_delta[v] = node->op == DR_OP_ALLOC ? bytes : -bytes;
  }
  r->iterations = iterations;
  r->iterations_requested = iterations;
  r->warmup = warmup;
  r->n_graph_nodes = dr_graph_n_nodes(g);
  gsize samples = (gsize)MAX(iterations, 1) * MAX(r->n_graph_nodes, 1);
  r->sample_start = g_new(double, samples);
  r->sample_end = g_new(double, samples);
  for (gsize i = 0; i < samples; i++) r->sample_start[i] = r->sample_end[i] = NAN;
  r->iter_start_us = g_new0(double, MAX(iterations, 1));
  r->iter_makespan_us = g_new(double, MAX(iterations, 1));
  for (guint32 i = 0; i < MAX(iterations, 1); i++) r->iter_makespan_us[i] = NAN;
  r->nodes = g_array_new(FALSE, TRUE, sizeof(DrNodeReport));
  r->stream_priorities = g_array_new(FALSE, TRUE, sizeof(DrPriority));
  r->stream_devices = g_array_new(FALSE, TRUE, sizeof(gint32));
  r->multi_device = g->run.n_devices > 1;
  for (guint32 s = 0; s < dr_plan_n_streams(plan); s++) {
    const DrStream *st = &g_array_index(plan->streams, DrStream, s);
    g_array_append_val(r->stream_priorities, st->priority);
    g_array_append_val(r->stream_devices, st->device);
    r->multi_device |= st->device < 0;
  }
  r->rank = g->rank;
  r->nranks = MAX(g->run.nranks, 1);
  r->flows = g_array_new(FALSE, TRUE, sizeof(DrReportFlow));
  for (guint32 s = 0; s < plan->steps->len; s++) {
    const DrPlanStep *step = dr_plan_step(plan, s);
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      DrReportFlow f = {dr_plan_wait(plan, w), step->node};
      g_array_append_val(r->flows, f);
    }
  }
  r->verified = DR_VERIFIED_NOT_RUN;
  return r;
}
