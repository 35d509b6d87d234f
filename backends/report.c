/* report.c: the run report's three renderings: a readable per-node table,
 * the JSON object of the spec, and the Chrome trace event format. Building
 * the report is run.c's job; nothing here runs anything. */
#include <math.h>
#include <string.h>

#include "backends/run.h"

static void json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': g_string_append(out, "\\\""); break;
      case '\\': g_string_append(out, "\\\\"); break;
      case '\n': g_string_append(out, "\\n"); break;
      case '\t': g_string_append(out, "\\t"); break;
      case '\r': g_string_append(out, "\\r"); break;
      default:
        if (*p < 0x20) g_string_append_printf(out, "\\u%04x", *p);
        else g_string_append_c(out, (char)*p);
    }
  }
  g_string_append_c(out, '"');
}

/* A JSON number, or null for NaN/inf (JSON has neither). */
static void json_number(GString *out, double v) {
  if (isnan(v) || isinf(v)) g_string_append(out, "null");
  else g_string_append_printf(out, "%.3f", v);
}

static const char *verified_name(DrVerified v) {
  switch (v) {
    case DR_VERIFIED_PASS: return "passed";
    case DR_VERIFIED_FAIL: return "FAILED";
    case DR_VERIFIED_NOT_RUN: break;
  }
  return "not run";
}

static void text_number(GString *out, double v, int width) {
  if (isnan(v)) g_string_append_printf(out, " %*s", width, "-");
  else g_string_append_printf(out, " %*.1f", width, v);
}

static void text_number3(GString *out, double v) {
  if (isnan(v)) g_string_append(out, " -");
  else g_string_append_printf(out, " %.3f", v);
}

/* The id of graph node `v` (from the report's node list). */
static const char *node_id(const DrReport *r, DrId v) {
  for (guint i = 0; i < r->nodes->len; i++)
    if (g_array_index(r->nodes, DrNodeReport, i).node == v) return g_array_index(r->nodes, DrNodeReport, i).id;
  return "?";
}

void dr_report_write_text(const DrReport *r, GString *out) {
  g_string_append_printf(out, "%s: backend %s, mode %s, %u iterations (%u warmup)\n", r->name, r->backend,
                         r->mode ? r->mode : "?", r->iterations, r->warmup);
  if (r->interrupted)
    g_string_append_printf(out, "interrupted after %u of %u timed iterations: figures cover those only\n",
                           r->iterations, r->iterations_requested);
  int idw = 4;
  for (guint i = 0; i < r->nodes->len; i++)
    idw = MAX(idw, (int)strlen(g_array_index(r->nodes, DrNodeReport, i).id));
  g_string_append_printf(out, "%-*s %-6s %6s %10s %10s %10s %10s %8s\n", idw, "node", "op", "stream", "start_us",
                         "median_us", "min_us", "max_us", "GB/s");
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
    g_string_append_printf(out, "%-*s %-6s %6u", idw, n->id, dr_op_name(n->op), n->stream);
    text_number(out, n->start_us, 10);
    text_number(out, n->duration_us, 10);
    text_number(out, n->duration_min_us, 10);
    text_number(out, n->duration_max_us, 10);
    if (isnan(n->gbps)) g_string_append_printf(out, " %8s", "");
    else g_string_append_printf(out, " %8.2f", n->gbps);
    g_string_append_c(out, '\n');
  }
  g_string_append(out, "makespan_us: median");
  text_number(out, r->makespan_us, 0);
  g_string_append(out, ", min");
  text_number(out, r->makespan_min_us, 0);
  g_string_append(out, ", max");
  text_number(out, r->makespan_max_us, 0);
  g_string_append_c(out, '\n');
  if (!isnan(r->critical_path_us)) {
    g_string_append_printf(out, "critical_path_us: %.1f (%u nodes:", r->critical_path_us, r->critical_nodes->len);
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
    g_autofree char *serial = g_format_size_full(r->peak_serial_bytes, G_FORMAT_SIZE_IEC_UNITS);
    g_autofree char *bound = g_format_size_full(r->peak_bound_bytes, G_FORMAT_SIZE_IEC_UNITS);
    g_autofree char *measured = r->peak_measured_bytes == G_MAXUINT64
                                    ? g_strdup("not measured")
                                    : g_format_size_full(r->peak_measured_bytes, G_FORMAT_SIZE_IEC_UNITS);
    g_string_append_printf(out, "memory: serial peak %s, bound %s (any execution), measured %s\n", serial,
                           bound, measured);
  }
  g_string_append_printf(out, "verify: %s", verified_name(r->verified));
  if (r->verified == DR_VERIFIED_FAIL)
    g_string_append_printf(out, ": buffer '%s' element %" G_GUINT64_FORMAT ": serial %s, concurrent %s",
                           r->diff_buffer, r->diff_index, r->diff_serial, r->diff_concurrent);
  g_string_append_c(out, '\n');
}

void dr_report_write_json(const DrReport *r, GString *out) {
  g_string_append(out, "{\"name\": ");
  json_string(out, r->name);
  g_string_append(out, ", \"backend\": ");
  json_string(out, r->backend);
  g_string_append(out, ", \"mode\": ");
  json_string(out, r->mode);
  g_string_append_printf(out, ", \"iterations\": %u, \"warmup\": %u, \"interrupted\": %s, \"makespan_us\": ",
                         r->iterations, r->warmup, r->interrupted ? "true" : "false");
  json_number(out, r->makespan_us);
  g_string_append(out, ", \"makespan_min_us\": ");
  json_number(out, r->makespan_min_us);
  g_string_append(out, ", \"makespan_max_us\": ");
  json_number(out, r->makespan_max_us);
  g_string_append_printf(out, ", \"verified\": %s, \"difference\": ",
                         r->verified == DR_VERIFIED_NOT_RUN ? "null"
                         : r->verified == DR_VERIFIED_PASS  ? "true"
                                                            : "false");
  if (r->verified == DR_VERIFIED_FAIL) {
    g_string_append(out, "{\"buffer\": ");
    json_string(out, r->diff_buffer);
    g_string_append_printf(out, ", \"index\": %" G_GUINT64_FORMAT ", \"serial\": ", r->diff_index);
    json_string(out, r->diff_serial);
    g_string_append(out, ", \"concurrent\": ");
    json_string(out, r->diff_concurrent);
    g_string_append_c(out, '}');
  } else {
    g_string_append(out, "null");
  }
  g_string_append(out, ", \"critical_path_us\": ");
  json_number(out, r->critical_path_us);
  g_string_append(out, ", \"critical_path\": [");
  if (!isnan(r->critical_path_us)) {
    g_autofree const char **ids = g_new0(const char *, MAX(r->n_graph_nodes, 1));
    for (guint i = 0; i < r->nodes->len; i++) {
      const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
      ids[n->node] = n->id;
    }
    for (guint i = 0; i < r->critical_nodes->len; i++) {
      if (i) g_string_append(out, ", ");
      json_string(out, ids[g_array_index(r->critical_nodes, DrId, i)]);
    }
  }
  g_string_append_printf(out, "], \"overlap\": {\"streams_used\": %u, \"efficiency\": ", r->streams_used);
  json_number(out, r->overlap_streams);
  g_string_append(out, ", \"critical_over_makespan\": ");
  json_number(out, r->overlap_critical);
  g_string_append_printf(out,
                         "}, \"memory\": {\"peak_serial_bytes\": %" G_GUINT64_FORMAT
                         ", \"peak_bound_bytes\": %" G_GUINT64_FORMAT ", \"peak_measured_bytes\": ",
                         r->peak_serial_bytes, r->peak_bound_bytes);
  if (r->peak_measured_bytes == G_MAXUINT64)
    g_string_append(out, "null");
  else
    g_string_append_printf(out, "%" G_GUINT64_FORMAT, r->peak_measured_bytes);
  g_string_append(out, "}, \"nodes\": [");
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *n = &g_array_index(r->nodes, DrNodeReport, i);
    g_string_append(out, i ? ", {\"id\": " : "{\"id\": ");
    json_string(out, n->id);
    g_string_append(out, ", \"op\": ");
    json_string(out, dr_op_name(n->op));
    g_string_append_printf(out, ", \"stream\": %u, \"start_us\": ", n->stream);
    json_number(out, n->start_us);
    g_string_append(out, ", \"duration_us\": ");
    json_number(out, n->duration_us);
    g_string_append(out, ", \"duration_min_us\": ");
    json_number(out, n->duration_min_us);
    g_string_append(out, ", \"duration_max_us\": ");
    json_number(out, n->duration_max_us);
    g_string_append_printf(out, ", \"bytes\": %" G_GUINT64_FORMAT ", \"gbps\": ", n->bytes);
    json_number(out, n->gbps);
    g_string_append_c(out, '}');
  }
  g_string_append(out, "]}\n");
}

void dr_trace_write(const DrReport *r, GString *out) {
  g_string_append(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  g_string_append(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": ");
  g_autofree char *pname = g_strdup_printf("dagrun %s (%s, %s)", r->name, r->backend, r->mode ? r->mode : "?");
  json_string(out, pname);
  g_string_append(out, "}}");
  for (guint s = 0; s < r->stream_priorities->len; s++) {
    DrPriority p = g_array_index(r->stream_priorities, DrPriority, s);
    g_autofree char *tname = g_strdup_printf("stream %u (%s)", s, dr_priority_name(p));
    g_string_append_printf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %u, \"args\": "
                                "{\"name\": ",
                           s);
    json_string(out, tname);
    g_string_append_printf(out, "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 1, \"tid\": %u, "
                                "\"args\": {\"sort_index\": %u}}",
                           s, s);
  }
  guint32 n = r->n_graph_nodes;
  /* Node id -> plan stream and op, from the report's node list. */
  g_autofree guint32 *stream_of = g_new0(guint32, MAX(n, 1));
  g_autofree const DrNodeReport **info = g_new0(const DrNodeReport *, MAX(n, 1));
  for (guint i = 0; i < r->nodes->len; i++) {
    const DrNodeReport *nr = &g_array_index(r->nodes, DrNodeReport, i);
    stream_of[nr->node] = nr->stream;
    info[nr->node] = nr;
  }
  guint64 flow_id = 1;
  for (guint32 it = 0; it < r->iterations; it++) {
    double base = r->iter_start_us[it];
    const double *st = r->sample_start + (gsize)it * n, *en = r->sample_end + (gsize)it * n;
    for (guint32 id = 0; id < n; id++) {
      if (info[id] == NULL || isnan(st[id]) || isnan(en[id])) continue;
      g_string_append(out, ",\n{\"name\": ");
      json_string(out, info[id]->id);
      g_string_append(out, ", \"cat\": ");
      json_string(out, dr_op_name(info[id]->op));
      g_string_append_printf(out, ", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
                                  "\"args\": {\"iteration\": %u}}",
                             stream_of[id], base + st[id], MAX(en[id] - st[id], 0.0), it);
    }
    for (guint f = 0; f < r->flows->len; f++) {
      const DrReportFlow *fl = &g_array_index(r->flows, DrReportFlow, f);
      if (isnan(en[fl->from]) || isnan(st[fl->to])) continue;
      /* The arrow leaves the waited node at its end and binds to the
       * enclosing slice of the waiting node at its start ("bp": "e"). */
      g_string_append_printf(out, ",\n{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"s\", \"id\": %" G_GUINT64_FORMAT
                                  ", \"pid\": 1, \"tid\": %u, \"ts\": %.3f}",
                             flow_id, stream_of[fl->from], base + MAX(en[fl->from] - 0.001, st[fl->from]));
      g_string_append_printf(out, ",\n{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"f\", \"bp\": \"e\", \"id\": %"
                                  G_GUINT64_FORMAT ", \"pid\": 1, \"tid\": %u, \"ts\": %.3f}",
                             flow_id, stream_of[fl->to], base + st[fl->to]);
      flow_id++;
    }
  }
  g_string_append(out, "\n]}\n");
}
