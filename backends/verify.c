/* verify.c: --verify's two halves: capture every whole-run buffer that some
 * node writes after a run's last iteration, and compare two captures byte
 * for byte, reporting the first differing buffer and element.
 *
 * Buffers that an alloc node names are dead after their free node, so only
 * whole-run buffers are captured; what an alloc'd buffer computed is
 * visible only through what the pipeline copies out of it. Running the two
 * pipelines is run.c's job. */
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

gboolean dr__verify_compare(const DrGraph *g, GPtrArray *serial, GPtrArray *concurrent, DrReport *report) {
  for (DrId i = 0; i < dr_graph_n_buffers(g) && i < serial->len && i < concurrent->len; i++) {
    GBytes *s = g_ptr_array_index(serial, i), *c = g_ptr_array_index(concurrent, i);
    if (s == NULL || c == NULL) continue;
    gsize len_s, len_c;
    const guint8 *ds = g_bytes_get_data(s, &len_s), *dc = g_bytes_get_data(c, &len_c);
    if (len_s == len_c && memcmp(ds, dc, len_s) == 0) continue;
    const DrBuffer *buf = dr_graph_buffer(g, i);
    gsize byte = 0;
    while (byte < MIN(len_s, len_c) && ds[byte] == dc[byte]) byte++;
    guint64 elem = byte / dr_elem_size(buf->type);
    GString *vs = g_string_new(NULL), *vc = g_string_new(NULL);
    dr__elem_format(buf->type, ds, elem, vs);
    dr__elem_format(buf->type, dc, elem, vc);
    report->verified = DR_VERIFIED_FAIL;
    report->diff_buffer = g_strdup(buf->name);
    report->diff_index = elem;
    report->diff_serial = g_string_free(vs, FALSE);
    report->diff_concurrent = g_string_free(vc, FALSE);
    return FALSE;
  }
  report->verified = DR_VERIFIED_PASS;
  return TRUE;
}
