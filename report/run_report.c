/* run_report.c: the run report's two renderings: a readable per-node table
 * and the JSON object of the spec (docs/report.md). Building the report is
 * the run driver's job (backends/run.c); nothing here runs anything. The
 * trace and the timeline are trace.c and timeline.c. Every number goes
 * through num.h and the JSON through json.h, so the locale never shows. */
#include <math.h>
#include <string.h>

#include "report/json.h"
#include "report/num.h"
#include "report/report.h"

static const char *verified_name(DrVerified v) {
  switch (v) {
    case DR_VERIFIED_PASS:
      return "passed";
    case DR_VERIFIED_FAIL:
      return "FAILED";
    case DR_VERIFIED_NOT_RUN:
      break;
  }
  return "not run";
}

/* " %*.1f", or "-" in the same width when unmeasured. */
static void text_number(GString *out, double v, guint width) {
  g_string_append_c(out, ' ');
  if (isnan(v))
    g_string_append_printf(out, "%*s", (int)width, "-");
  else
    dr__num_fixed(out, v, 1, width);
}

static void text_number3(GString *out, double v) {
  g_string_append_c(out, ' ');
  if (isnan(v))
    g_string_append(out, "-");
  else
    dr__num_fixed(out, v, 3, 0);
}

/* The id of graph node `v` (from the report's node list). */
static const char *node_id(const DrReport *r, DrId v) {
  for (guint i = 0; i < r->nodes->len; i++)
    if (g_array_index(r->nodes, DrNodeReport, i).node == v)
      return g_array_index(r->nodes, DrNodeReport, i).id;
  return "?";
}

/* The loop node's median time over its mean trips (NAN when either is
 * unknown). */
static double us_per_trip(const DrReport *r, const DrLoopReport *lr, double mean) {
  for (guint k = 0; k < r->nodes->len; k++) {
    const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, k);
    if (n->node == lr->node && !isnan(n->duration_us) && mean > 0) return n->duration_us / mean;
  }
  return NAN;
}

/* "loops": one object per loop of the top-level graph (DrLoopReport): its
 * id, its trips per timed iteration (min, max, mean) and its time per
 * trip, and when its trips were timed, their spans' count and median,
 * min and max duration, and when body nodes were timed ("body_nodes"),
 * each one's last-trip time over the iterations; the loop is also the one
 * node it is in "nodes". */
static void write_loops_json(const DrReport *r, DrJsonWriter *w) {
  dr__json_key(w, "loops");
  dr__json_begin_array(w);
  for (guint i = 0; i < r->loops->len; i++) {
    const DrLoopReport *lr = &g_array_index(r->loops, DrLoopReport, i);
    double mean = lr->samples ? (double)lr->trips_sum / lr->samples : NAN;
    dr__json_begin_object(w);
    dr__json_member_string(w, "id", lr->id);
    dr__json_member_uint(w, "iterations", lr->samples);
    dr__json_member_uint(w, "trips_min", lr->samples ? lr->trips_min : 0);
    dr__json_member_uint(w, "trips_max", lr->trips_max);
    dr__json_member_double(w, "trips_mean", mean, 3);
    dr__json_member_double(w, "us_per_trip", us_per_trip(r, lr, mean), 3);
    if (lr->trip_spans > 0) {
      dr__json_member_uint(w, "trip_spans", lr->trip_spans);
      dr__json_member_double(w, "trip_us_median", lr->trip_us_median, 3);
      dr__json_member_double(w, "trip_us_min", lr->trip_us_min, 3);
      dr__json_member_double(w, "trip_us_max", lr->trip_us_max, 3);
    }
    if (lr->body != NULL) {
      dr__json_key(w, "body_nodes");
      dr__json_begin_array(w);
      for (guint k = 0; k < lr->body->len; k++) {
        const DrBodyNodeStats *b = &g_array_index(lr->body, DrBodyNodeStats, k);
        dr__json_begin_object(w);
        dr__json_member_string(w, "id", b->id);
        dr__json_member_string(w, "loop", b->loop);
        dr__json_member_uint(w, "samples", b->samples);
        dr__json_member_double(w, "us_median", b->us_median, 3);
        dr__json_member_double(w, "us_min", b->us_min, 3);
        dr__json_member_double(w, "us_max", b->us_max, 3);
        dr__json_end_object(w);
      }
      dr__json_end_array(w);
    }
    dr__json_end_object(w);
  }
  dr__json_end_array(w);
}

/* "loop ID: T trips per iteration (min, max), D us per trip": the loop's
 * median time over its mean trips; then a line per body node timed in the
 * last trip (DrLoopReport.body). */
static void write_loops_text(const DrReport *r, GString *out) {
  for (guint i = 0; r->loops != NULL && i < r->loops->len; i++) {
    const DrLoopReport *lr = &g_array_index(r->loops, DrLoopReport, i);
    if (lr->samples == 0) continue;
    double mean = (double)lr->trips_sum / lr->samples;
    g_string_append_printf(out, "loop %s: ", lr->id);
    dr__num_fixed(out, mean, mean == (double)(guint64)mean ? 0 : 1, 0);
    g_string_append_printf(out, " trips per iteration (min %" G_GUINT64_FORMAT ", max %" G_GUINT64_FORMAT ")",
                           lr->trips_min, lr->trips_max);
    for (guint k = 0; k < r->nodes->len; k++) {
      const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, k);
      if (n->node != lr->node || isnan(n->duration_us) || mean <= 0) continue;
      g_string_append(out, ", ");
      dr__num_fixed(out, n->duration_us / mean, 2, 0);
      g_string_append(out, " us per trip");
    }
    g_string_append_c(out, '\n');
    /* "  solve/step: 1.02 us in the last trip (median, min 1.00, max 1.10)" */
    for (guint k = 0; lr->body != NULL && k < lr->body->len; k++) {
      const DrBodyNodeStats *b = &g_array_index(lr->body, DrBodyNodeStats, k);
      g_string_append_printf(out, "  %s: ", b->id);
      dr__num_fixed(out, b->us_median, 2, 0);
      g_string_append(out, " us in the last trip (median, min ");
      dr__num_fixed(out, b->us_min, 2, 0);
      g_string_append(out, ", max ");
      dr__num_fixed(out, b->us_max, 2, 0);
      g_string_append(out, ")\n");
    }
  }
}

/* The summary by kernel/op as a table, rows in `sort`'s order. */
static void text_summary(const DrReport *r, DrReportSort sort, GString *out) {
  g_autoptr(GPtrArray) rows = dr_report_summary(r, sort);
  if (rows->len == 0) return;
  int namew = 4;
  for (guint i = 0; i < rows->len; i++)
    namew = MAX(namew, (int)strlen(((const DrOpSummary *)g_ptr_array_index(rows, i))->name));
  g_string_append_printf(out, "summary by kernel/op (sorted by %s):\n", dr_report_sort_name(sort));
  g_string_append_printf(out, "%-*s %-6s %6s %9s %12s %6s %10s %10s %10s %10s %8s %12s\n", namew, "name",
                         "op", "nodes", "instances", "total_us", "time%", "median_us", "stddev_us", "min_us",
                         "max_us", "GB/s", "bytes");
  for (guint i = 0; i < rows->len; i++) {
    const DrOpSummary *row = g_ptr_array_index(rows, i);
    g_string_append_printf(out, "%-*s %-6s %6u %9" G_GUINT64_FORMAT, namew, row->name, dr_op_name(row->op),
                           row->nodes, row->instances);
    text_number(out, row->total_us, 12);
    text_number(out, row->percent, 6);
    text_number(out, row->median_us, 10);
    text_number(out, row->stddev_us, 10);
    text_number(out, row->min_us, 10);
    text_number(out, row->max_us, 10);
    g_string_append_c(out, ' ');
    if (isnan(row->gbps))
      g_string_append_printf(out, "%8s", "-");
    else
      dr__num_fixed(out, row->gbps, 2, 8);
    g_string_append_printf(out, " %12" G_GUINT64_FORMAT "\n", row->bytes);
  }
}

void dr_report_write_text(const DrReport *r, GString *out) {
  dr_report_write_text_sorted(r, DR_REPORT_SORT_TOTAL, out);
}

void dr_report_write_text_sorted(const DrReport *r, DrReportSort sort, GString *out) {
  g_string_append_printf(out, "%s: backend %s, mode %s", r->name, r->backend, r->mode ? r->mode : "?");
  if (r->mode_reason) g_string_append_printf(out, " (%s)", r->mode_reason);
  g_string_append_printf(out, ", %u iterations (%u warmup)\n", r->iterations, r->warmup);
  if (r->interrupted)
    g_string_append_printf(out, "interrupted after %u of %u timed iterations: figures cover those only\n",
                           r->iterations, r->iterations_requested);
  int idw = 4;
  for (guint i = 0; i < r->nodes->len; i++)
    idw = MAX(idw, (int)strlen(g_array_index(r->nodes, DrNodeReport, i).id));
  /* The device column only where the run drives several devices, so a
   * one-device report keeps its shape. */
  g_string_append_printf(out, "%-*s %-6s %6s", idw, "node", "op", "stream");
  if (r->multi_device) g_string_append_printf(out, " %6s", "device");
  g_string_append_printf(out, " %10s %10s %10s %10s %8s\n", "start_us", "median_us", "min_us", "max_us",
                         "GB/s");
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
    g_string_append_printf(out, "%-*s %-6s %6u", idw, n->id, dr_op_name(n->op), n->stream);
    if (r->multi_device && n->device < 0)
      g_string_append_printf(out, " %6s", "all");
    else if (r->multi_device)
      g_string_append_printf(out, " %6d", n->device);
    text_number(out, n->start_us, 10);
    text_number(out, n->duration_us, 10);
    text_number(out, n->duration_min_us, 10);
    text_number(out, n->duration_max_us, 10);
    g_string_append_c(out, ' ');
    if (isnan(n->gbps))
      g_string_append_printf(out, "%8s", "");
    else
      dr__num_fixed(out, n->gbps, 2, 8);
    g_string_append_c(out, '\n');
  }
  write_loops_text(r, out);
  text_summary(r, sort, out);
  g_string_append(out, "makespan_us: median");
  text_number(out, r->makespan_us, 0);
  g_string_append(out, ", min");
  text_number(out, r->makespan_min_us, 0);
  g_string_append(out, ", max");
  text_number(out, r->makespan_max_us, 0);
  g_string_append_c(out, '\n');
  if (!isnan(r->critical_path_us)) {
    g_string_append(out, "critical_path_us: ");
    dr__num_fixed(out, r->critical_path_us, 1, 0);
    g_string_append_printf(out, " (%u nodes:", r->critical_nodes->len);
    /* The whole path would drown a big DAG's table: its ends suffice. */
    guint len = r->critical_nodes->len;
    for (guint i = 0; i < len; i++) {
      if (len > 8 && i == 4) {
        g_string_append_printf(out, " ... %u more ...", len - 8);
        i = len - 4;
      }
      DrId v = g_array_index(r->critical_nodes, DrId, i);
      g_string_append_printf(out, " %s", node_id(r, v));
    }
    g_string_append(out, ")\n");
    g_string_append_printf(out, "overlap: %u streams used, efficiency", r->streams_used);
    text_number3(out, r->overlap_streams);
    g_string_append(out, " (sum of durations / (makespan x streams)), critical path / makespan");
    text_number3(out, r->overlap_critical);
    g_string_append_c(out, '\n');
  }
  if (r->peak_bound_bytes > 0) {
    g_string_append(out, "memory: serial peak ");
    dr__num_size_iec(out, r->peak_serial_bytes);
    g_string_append(out, ", bound ");
    dr__num_size_iec(out, r->peak_bound_bytes);
    g_string_append(out, " (any execution), measured ");
    if (r->peak_measured_bytes == G_MAXUINT64)
      g_string_append(out, "not measured");
    else
      dr__num_size_iec(out, r->peak_measured_bytes);
    g_string_append_c(out, '\n');
  }
  if (r->params != NULL) {
    g_string_append(out, "params:");
    for (guint i = 0; i < r->params->len; i++) {
      const DrReportParam *p = &g_array_index(r->params, DrReportParam, i);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      if (p->is_int)
        g_string_append_printf(out, " %s=%" G_GINT64_FORMAT, p->name, p->i);
      else
        g_string_append_printf(out, " %s=%s", p->name, g_ascii_dtostr(buf, sizeof buf, p->f));
    }
    if (r->param_update != NULL && (r->param_nodes > 0 || r->param_buffers > 0)) {
      g_string_append_printf(out, " (%s: %u nodes in", r->param_update, r->param_nodes);
      text_number(out, r->param_update_us, 1);
      g_string_append(out, " us");
      if (r->param_device_reads)
        g_string_append_printf(out, "; %u read from device memory", r->param_device_reads);
      if (r->param_buffers)
        g_string_append_printf(out, "; %u parameter buffer%s written", r->param_buffers,
                               r->param_buffers == 1 ? "" : "s");
      if (r->param_forced_by) g_string_append_printf(out, "; forced by node '%s'", r->param_forced_by);
      if (r->graph_cache)
        g_string_append_printf(out, "; graph cache %s, %u variant%s", r->graph_cache, r->graph_cache_variants,
                               r->graph_cache_variants == 1 ? "" : "s");
      g_string_append(out, ")");
    }
    g_string_append_c(out, '\n');
  }
  g_string_append_printf(out, "verify: %s", verified_name(r->verified));
  if (r->verified == DR_VERIFIED_FAIL)
    g_string_append_printf(out, ": buffer '%s' element %" G_GUINT64_FORMAT ": serial %s, concurrent %s",
                           r->diff_buffer, r->diff_index, r->diff_serial, r->diff_concurrent);
  if (r->verified != DR_VERIFIED_NOT_RUN && r->largest_buffer != NULL) {
    char d[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(out,
                           "; largest difference within tolerance %s: buffer '%s' element %" G_GUINT64_FORMAT
                           ": serial %s, concurrent %s",
                           g_ascii_formatd(d, sizeof d, "%.3g", r->largest_abs), r->largest_buffer,
                           r->largest_index, r->largest_serial, r->largest_concurrent);
  }
  if (r->verified != DR_VERIFIED_NOT_RUN && r->verify_skipped > 0)
    g_string_append_printf(out, "; %u buffer%s not compared (verify: skip)", r->verify_skipped,
                           r->verify_skipped == 1 ? "" : "s");
  g_string_append_c(out, '\n');
}

void dr_report_write_json(const DrReport *r, GString *out) {
  dr_report_write_json_sorted(r, DR_REPORT_SORT_TOTAL, out);
}

void dr_report_write_json_sorted(const DrReport *r, DrReportSort sort, GString *out) {
  DrJsonWriter w;
  dr__json_init(&w, out, NULL);
  dr__json_begin_object(&w);
  dr__json_member_uint(&w, "schema", DR_REPORT_SCHEMA);
  dr__json_member_string(&w, "name", r->name);
  dr__json_member_string(&w, "backend", r->backend);
  dr__json_member_string(&w, "mode", r->mode);
  if (r->mode_reason) dr__json_member_string(&w, "mode_reason", r->mode_reason);
  dr__json_member_uint(&w, "iterations", r->iterations);
  dr__json_member_uint(&w, "warmup", r->warmup);
  dr__json_member_bool(&w, "interrupted", r->interrupted);
  dr__json_member_double(&w, "makespan_us", r->makespan_us, 3);
  dr__json_member_double(&w, "makespan_min_us", r->makespan_min_us, 3);
  dr__json_member_double(&w, "makespan_max_us", r->makespan_max_us, 3);
  dr__json_key(&w, "verified");
  if (r->verified == DR_VERIFIED_NOT_RUN)
    dr__json_null(&w);
  else
    dr__json_bool(&w, r->verified == DR_VERIFIED_PASS);
  dr__json_key(&w, "difference");
  if (r->verified == DR_VERIFIED_FAIL) {
    dr__json_begin_object(&w);
    dr__json_member_string(&w, "buffer", r->diff_buffer);
    dr__json_member_uint(&w, "index", r->diff_index);
    dr__json_member_string(&w, "serial", r->diff_serial);
    dr__json_member_string(&w, "concurrent", r->diff_concurrent);
    dr__json_end_object(&w);
  } else {
    dr__json_null(&w);
  }
  if (r->verified != DR_VERIFIED_NOT_RUN) {
    dr__json_key(&w, "largest_difference");
    if (r->largest_buffer != NULL) {
      dr__json_begin_object(&w);
      dr__json_member_string(&w, "buffer", r->largest_buffer);
      dr__json_member_uint(&w, "index", r->largest_index);
      dr__json_member_string(&w, "serial", r->largest_serial);
      dr__json_member_string(&w, "concurrent", r->largest_concurrent);
      char d[G_ASCII_DTOSTR_BUF_SIZE];
      dr__json_member_string(&w, "abs", g_ascii_formatd(d, sizeof d, "%.17g", r->largest_abs));
      dr__json_end_object(&w);
    } else {
      dr__json_null(&w);
    }
    dr__json_member_uint(&w, "verify_skipped", r->verify_skipped);
  }
  dr__json_member_double(&w, "critical_path_us", r->critical_path_us, 3);
  dr__json_key(&w, "critical_path");
  dr__json_begin_array(&w);
  if (!isnan(r->critical_path_us)) {
    g_autofree const char **ids = g_new0(const char *, MAX(r->n_graph_nodes, 1));
    for (guint i = 0; i < r->nodes->len; i++) {
      const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
      ids[n->node] = n->id;
    }
    for (guint i = 0; i < r->critical_nodes->len; i++)
      dr__json_string(&w, ids[g_array_index(r->critical_nodes, DrId, i)]);
  }
  dr__json_end_array(&w);
  dr__json_key(&w, "overlap");
  dr__json_begin_object(&w);
  dr__json_member_uint(&w, "streams_used", r->streams_used);
  dr__json_member_double(&w, "efficiency", r->overlap_streams, 3);
  dr__json_member_double(&w, "critical_over_makespan", r->overlap_critical, 3);
  dr__json_end_object(&w);
  dr__json_key(&w, "memory");
  dr__json_begin_object(&w);
  dr__json_member_uint(&w, "peak_serial_bytes", r->peak_serial_bytes);
  dr__json_member_uint(&w, "peak_bound_bytes", r->peak_bound_bytes);
  dr__json_key(&w, "peak_measured_bytes");
  if (r->peak_measured_bytes == G_MAXUINT64)
    dr__json_null(&w);
  else
    dr__json_uint(&w, r->peak_measured_bytes);
  dr__json_end_object(&w);
  if (r->params != NULL) {
    dr__json_key(&w, "params");
    dr__json_begin_object(&w);
    for (guint i = 0; i < r->params->len; i++) {
      const DrReportParam *p = &g_array_index(r->params, DrReportParam, i);
      dr__json_key(&w, p->name);
      if (p->is_int)
        dr__json_int(&w, p->i);
      else
        dr__json_shortest(&w, p->f);
    }
    dr__json_end_object(&w);
    if (r->param_update != NULL) {
      dr__json_key(&w, "param_update");
      dr__json_begin_object(&w);
      dr__json_member_string(&w, "how", r->param_update);
      dr__json_member_uint(&w, "nodes", r->param_nodes);
      dr__json_member_double(&w, "us", r->param_update_us, 1);
      if (r->param_device_reads) dr__json_member_uint(&w, "device_reads", r->param_device_reads);
      if (r->param_buffers) dr__json_member_uint(&w, "buffers", r->param_buffers);
      if (r->param_forced_by) dr__json_member_string(&w, "forced_by", r->param_forced_by);
      if (r->graph_cache) {
        dr__json_key(&w, "graph_cache");
        dr__json_begin_object(&w);
        dr__json_member_string(&w, "result", r->graph_cache);
        dr__json_member_uint(&w, "variants", r->graph_cache_variants);
        dr__json_end_object(&w);
      }
      dr__json_end_object(&w);
    }
  }
  dr__json_key(&w, "nodes");
  dr__json_begin_array(&w);
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
    dr__json_begin_object(&w);
    dr__json_member_string(&w, "id", n->id);
    dr__json_member_string(&w, "op", dr_op_name(n->op));
    dr__json_member_uint(&w, "stream", n->stream);
    dr__json_member_double(&w, "start_us", n->start_us, 3);
    dr__json_member_double(&w, "duration_us", n->duration_us, 3);
    dr__json_member_double(&w, "duration_min_us", n->duration_min_us, 3);
    dr__json_member_double(&w, "duration_max_us", n->duration_max_us, 3);
    dr__json_key(&w, "device");
    dr__json_double(&w, n->device, 0);
    dr__json_member_uint(&w, "bytes", n->bytes);
    dr__json_member_double(&w, "gbps", n->gbps, 3);
    dr__json_end_object(&w);
  }
  dr__json_end_array(&w);
  if (r->loops != NULL && r->loops->len > 0) write_loops_json(r, &w);
  dr__json_key(&w, "summary");
  dr__json_begin_array(&w);
  g_autoptr(GPtrArray) rows = dr_report_summary(r, sort);
  for (guint i = 0; i < rows->len; i++) {
    const DrOpSummary *row = g_ptr_array_index(rows, i);
    dr__json_begin_object(&w);
    dr__json_member_string(&w, "name", row->name);
    dr__json_member_string(&w, "op", dr_op_name(row->op));
    dr__json_member_uint(&w, "nodes", row->nodes);
    dr__json_member_uint(&w, "instances", row->instances);
    dr__json_member_double(&w, "duration_total_us", row->total_us, 3);
    dr__json_member_double(&w, "time_percent", row->percent, 3);
    dr__json_member_double(&w, "duration_us", row->median_us, 3);
    dr__json_member_double(&w, "duration_stddev_us", row->stddev_us, 3);
    dr__json_member_double(&w, "duration_min_us", row->min_us, 3);
    dr__json_member_double(&w, "duration_max_us", row->max_us, 3);
    dr__json_member_uint(&w, "bytes", row->bytes);
    dr__json_member_double(&w, "gbps", row->gbps, 3);
    dr__json_end_object(&w);
  }
  dr__json_end_array(&w);
  dr__json_end_object(&w);
  dr__json_finish(&w);
  g_string_append_c(out, '\n');
}
