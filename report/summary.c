/* summary.c: the run report's summary by kernel/op, the profiler-style
 * table beside the per-node one (like nsys stats' cuda_gpu_kern_sum and
 * Taskflow's tfprof): the nodes grouped by op and name (a kernel's name, a
 * host node's function, a copy's direction as "copy H2D", else the
 * op's name), and for each group its
 * instances (node executions in timed iterations that were timed), their
 * total, share, median, standard deviation, minimum and maximum duration,
 * and the bytes they moved with the resulting GB/s. Built once from the
 * samples (dr__report_summarise_ops); the writers sort a copy of the rows
 * (dr_report_summary). Nothing here writes or runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/plan_common.h"
#include "report/report.h"

/* The row name of graph node `id`: see DrOpSummary. */
static const char *row_name(const DrGraph *g, DrId id) {
  const DrNode *n = dr_graph_node(g, id);
  if (n->op == DR_OP_KERNEL && n->kernel != DR_NONE) return dr_graph_kernel(g, n->kernel)->name;
  if (n->op == DR_OP_HOST) return dr_graph_host_fn_label(g, n);
  if (n->op == DR_OP_COPY) {
    const char *dir = dr__plan_copy_direction(g, n);
    static const char *const names[][2] = {
        {"H2D", "copy H2D"}, {"D2H", "copy D2H"}, {"D2D", "copy D2D"}, {"H2H", "copy H2H"}};
    for (guint i = 0; dir && i < G_N_ELEMENTS(names); i++)
      if (strcmp(dir, names[i][0]) == 0) return names[i][1];
  }
  return dr_op_name(n->op);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median, sample standard deviation, min and max of v[0..k) (sorted in
 * place); all NAN when k is 0. */
static void row_stats(double *v, gsize k, DrOpSummary *row) {
  if (k == 0) {
    row->median_us = row->stddev_us = row->min_us = row->max_us = row->total_us = NAN;
    return;
  }
  qsort(v, k, sizeof(double), cmp_double);
  double sum = 0;
  for (gsize i = 0; i < k; i++) sum += v[i];
  double mean = sum / (double)k, sq = 0;
  for (gsize i = 0; i < k; i++) sq += (v[i] - mean) * (v[i] - mean);
  row->total_us = sum;
  row->median_us = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  row->stddev_us = k > 1 ? sqrt(sq / (double)(k - 1)) : 0.0;
  row->min_us = v[0];
  row->max_us = v[k - 1];
}

void dr__report_summarise_ops(DrReport *r, const DrPlan *plan) {
  const DrGraph *g = plan->graph;
  guint32 n = r->n_graph_nodes;
  if (r->summary == NULL) r->summary = g_array_new(FALSE, TRUE, sizeof(DrOpSummary));
  g_array_set_size(r->summary, 0);
  /* Rows by (op, name); each node's row, then each row's durations. */
  g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autofree guint32 *row_of = g_new(guint32, MAX(r->nodes->len, 1));
  /* Names copied: a library report outlives its plan and graph. */
  if (r->summary_names == NULL) r->summary_names = g_string_chunk_new(256);
  for (guint i = 0; i < r->nodes->len; i++) {
    DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    nr->what = g_string_chunk_insert_const(r->summary_names, row_name(g, nr->node));
    g_autofree char *key = g_strdup_printf("%d:%s", (int)nr->op, nr->what);
    gpointer found;
    if (g_hash_table_lookup_extended(index, key, NULL, &found)) {
      row_of[i] = GPOINTER_TO_UINT(found);
    } else {
      DrOpSummary row = {.op = nr->op, .name = nr->what};
      row_of[i] = r->summary->len;
      g_array_append_val(r->summary, row);
      g_hash_table_insert(index, g_steal_pointer(&key), GUINT_TO_POINTER(row_of[i]));
    }
    g_array_index(r->summary, DrOpSummary, row_of[i]).nodes++;
  }
  guint rows = r->summary->len;
  g_autofree gsize *first = g_new0(gsize, rows + 1);
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    DrOpSummary *row = &g_array_index(r->summary, DrOpSummary, row_of[i]);
    for (guint32 it = 0; it < r->iterations; it++) {
      double d = r->sample_end[(gsize)it * n + nr->node] - r->sample_start[(gsize)it * n + nr->node];
      if (isnan(d)) continue;
      row->instances++;
      row->bytes += nr->bytes;
    }
  }
  for (guint k = 0; k < rows; k++)
    first[k + 1] = first[k] + g_array_index(r->summary, DrOpSummary, k).instances;
  g_autofree double *dur = g_new(double, MAX(first[rows], 1));
  g_autofree gsize *fill = g_memdup2(first, sizeof(gsize) * (rows + 1));
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    for (guint32 it = 0; it < r->iterations; it++) {
      double d = r->sample_end[(gsize)it * n + nr->node] - r->sample_start[(gsize)it * n + nr->node];
      if (!isnan(d)) dur[fill[row_of[i]]++] = MAX(d, 0.0);
    }
  }
  double all = 0;
  for (guint k = 0; k < rows; k++) {
    DrOpSummary *row = &g_array_index(r->summary, DrOpSummary, k);
    row_stats(dur + first[k], first[k + 1] - first[k], row);
    if (!isnan(row->total_us)) all += row->total_us;
    row->gbps = row->bytes && row->total_us > 0 ? (double)row->bytes / (row->total_us * 1e3) : NAN;
  }
  for (guint k = 0; k < rows; k++) {
    DrOpSummary *row = &g_array_index(r->summary, DrOpSummary, k);
    row->percent = isnan(row->total_us) || all <= 0 ? NAN : 100.0 * row->total_us / all;
  }
}

/* The value a row sorts by under `sort` (not DR_REPORT_SORT_NAME). */
static double sort_key(const DrOpSummary *row, DrReportSort sort) {
  switch (sort) {
    case DR_REPORT_SORT_TOTAL:
      return row->total_us;
    case DR_REPORT_SORT_INSTANCES:
      return (double)row->instances;
    case DR_REPORT_SORT_MEDIAN:
      return row->median_us;
    case DR_REPORT_SORT_STDDEV:
      return row->stddev_us;
    case DR_REPORT_SORT_MIN:
      return row->min_us;
    case DR_REPORT_SORT_MAX:
      return row->max_us;
    case DR_REPORT_SORT_BYTES:
      return (double)row->bytes;
    case DR_REPORT_SORT_NAME:
    case DR_N_REPORT_SORTS:
      break;
  }
  return 0;
}

static int cmp_rows(gconstpointer pa, gconstpointer pb, gpointer data) {
  const DrOpSummary *a = *(const DrOpSummary *const *)pa, *b = *(const DrOpSummary *const *)pb;
  DrReportSort sort = (DrReportSort)GPOINTER_TO_INT(data);
  if (sort != DR_REPORT_SORT_NAME) {
    double x = sort_key(a, sort), y = sort_key(b, sort);
    if (isnan(x) != isnan(y)) return isnan(x) ? 1 : -1; /* unmeasured last */
    if (!isnan(x) && x != y) return x > y ? -1 : 1;
  }
  int c = strcmp(a->name, b->name);
  if (c != 0) return c;
  return (a->op > b->op) - (a->op < b->op);
}

GPtrArray *dr_report_summary(const DrReport *r, DrReportSort sort) {
  g_return_val_if_fail(r != NULL && (guint)sort < DR_N_REPORT_SORTS, NULL);
  guint rows = r->summary ? r->summary->len : 0;
  GPtrArray *out = g_ptr_array_sized_new(rows);
  for (guint k = 0; k < rows; k++) g_ptr_array_add(out, &g_array_index(r->summary, DrOpSummary, k));
  g_ptr_array_sort_with_data(out, cmp_rows, GINT_TO_POINTER(sort));
  return out;
}
