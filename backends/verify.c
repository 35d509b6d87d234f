/* verify.c: --verify's two halves: capture every whole-run buffer that some
 * node writes after a run's last iteration, and compare two captures by
 * each buffer's `verify:` rule: byte for byte (exact, the default),
 * element by element within |concurrent - serial| <= atol + rtol*|serial|
 * (tolerance: NaN equals only NaN, an infinity only itself), or not at all
 * (skip); reporting the first differing buffer and element, and the
 * largest difference the tolerances let pass.
 *
 * Buffers that an alloc node names are dead after their free node, so only
 * whole-run buffers are captured; what an alloc'd buffer computed is
 * visible only through what the pipeline copies out of it. Running the two
 * pipelines is run.c's job. */
#include <math.h>
#include <string.h>

#include "backends/verify.h"

static gboolean buffer_is_written(const DrGraph *g, DrId buffer) {
  for (guint i = 0; i < g->accesses->len; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    if (a->buffer == buffer && dr_access_writes(a->mode)) return TRUE;
  }
  return FALSE;
}

GPtrArray *dr__verify_capture(const DrBackendOps *ops, DrBackend *b, const DrGraph *g, GError **error) {
  g_autoptr(GPtrArray) out = g_ptr_array_new_full(dr_graph_n_buffers(g), (GDestroyNotify)g_bytes_unref);
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const DrBuffer *buf = dr_graph_buffer(g, i);
    /* Scratch contents mean nothing after the run (and reuse may have
     * shared their storage with a later buffer's). */
    if (buf->alloc_node != DR_NONE || buf->scratch || !buffer_is_written(g, i)) {
      g_ptr_array_add(out, NULL);
      continue;
    }
    gsize bytes = dr_buffer_bytes(buf);
    void *data = g_try_malloc(MAX(bytes, 1));
    if (data == NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_RUNTIME, "verify: out of host memory capturing buffer '%s'",
                  buf->name);
      return NULL;
    }
    if (!ops->read_buffer(b, i, data, error)) {
      g_free(data);
      return NULL;
    }
    g_ptr_array_add(out, g_bytes_new_take(data, bytes));
  }
  return g_steal_pointer(&out);
}

/* Sets the report's difference to element `elem` of buffer `buf`. */
static void set_diff(DrReport *report, const DrBuffer *buf, const guint8 *ds, const guint8 *dc,
                     guint64 elem) {
  GString *vs = g_string_new(NULL), *vc = g_string_new(NULL);
  dr__elem_format(buf->type, ds, elem, vs);
  dr__elem_format(buf->type, dc, elem, vc);
  report->verified = DR_VERIFIED_FAIL;
  report->diff_buffer = g_strdup(buf->name);
  report->diff_index = elem;
  report->diff_serial = g_string_free(vs, FALSE);
  report->diff_concurrent = g_string_free(vc, FALSE);
}

gboolean dr__verify_within(double serial, double concurrent, double rtol, double atol, double *diff) {
  if (isnan(serial) || isnan(concurrent)) {
    *diff = isnan(serial) && isnan(concurrent) ? 0.0 : INFINITY;
    return *diff == 0.0;
  }
  if (serial == concurrent) { /* equal infinities too */
    *diff = 0.0;
    return TRUE;
  }
  *diff = fabs(concurrent - serial);
  if (isinf(serial) || isinf(concurrent)) return FALSE; /* unequal: no tolerance covers it */
  return *diff <= atol + rtol * fabs(serial);
}

/* Compares one buffer element by element within its tolerance, keeping the
 * largest difference in the report. FALSE at the first element beyond it
 * (the report's difference). */
static gboolean compare_tolerance(const DrBuffer *buf, const guint8 *ds, const guint8 *dc, DrReport *report) {
  for (guint64 e = 0; e < buf->count; e++) {
    double s = dr__elem_value(buf->type, ds, e), c = dr__elem_value(buf->type, dc, e), diff;
    gboolean ok = dr__verify_within(s, c, buf->verify_rtol, buf->verify_atol, &diff);
    if (!ok) {
      set_diff(report, buf, ds, dc, e);
      return FALSE;
    }
    if (diff > 0.0 && (report->largest_buffer == NULL || diff > report->largest_abs)) {
      g_free(report->largest_buffer);
      g_free(report->largest_serial);
      g_free(report->largest_concurrent);
      GString *vs = g_string_new(NULL), *vc = g_string_new(NULL);
      dr__elem_format(buf->type, ds, e, vs);
      dr__elem_format(buf->type, dc, e, vc);
      report->largest_buffer = g_strdup(buf->name);
      report->largest_index = e;
      report->largest_abs = diff;
      report->largest_serial = g_string_free(vs, FALSE);
      report->largest_concurrent = g_string_free(vc, FALSE);
    }
  }
  return TRUE;
}

gboolean dr__verify_compare(const DrGraph *g, GPtrArray *serial, GPtrArray *concurrent, DrReport *report) {
  report->verify_skipped = 0;
  for (DrId i = 0; i < dr_graph_n_buffers(g) && i < serial->len && i < concurrent->len; i++) {
    GBytes *s = g_ptr_array_index(serial, i), *c = g_ptr_array_index(concurrent, i);
    if (s == NULL || c == NULL) continue;
    const DrBuffer *buf = dr_graph_buffer(g, i);
    if (buf->verify == DR_VERIFY_SKIP) {
      report->verify_skipped++;
      continue;
    }
    gsize len_s, len_c;
    const guint8 *ds = g_bytes_get_data(s, &len_s), *dc = g_bytes_get_data(c, &len_c);
    if (len_s == len_c && memcmp(ds, dc, len_s) == 0) continue;
    if (len_s == len_c && len_s == dr_buffer_bytes(buf) && buf->verify == DR_VERIFY_TOLERANCE) {
      if (compare_tolerance(buf, ds, dc, report)) continue;
      return FALSE;
    }
    gsize byte = 0;
    while (byte < MIN(len_s, len_c) && ds[byte] == dc[byte]) byte++;
    set_diff(report, buf, ds, dc, byte / dr_elem_size(buf->type));
    return FALSE;
  }
  report->verified = DR_VERIFIED_PASS;
  return TRUE;
}
