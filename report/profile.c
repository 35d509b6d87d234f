/* profile.c: the profile reader (--profile=FILE): measured node durations
 * from a previous run's JSON report, for the planner's cost model
 * (scheduler/cost.c). It sits beside the writer (run_report.c) and reads
 * through the same package's JSON reader, so it accepts everything the
 * writer writes: "duration_us": null for a node that was not timed, the
 * nested "difference" and "overlap" objects, escaped strings.
 *
 * It walks the top-level object, refuses a "schema" newer than the one
 * this dagrun writes, and from each element of "nodes" takes "id" and
 * "duration_us", skipping every other member; a null or negative duration
 * and an id the graph lacks leave that node's estimate alone. Text after
 * the object is an error. O(profile size + nodes named). */
#include <math.h>
#include <string.h>

#include "report/json.h"
#include "report/report.h"

/* Reads one element of "nodes" and applies its duration. */
static gboolean read_node(DrJsonReader *r, const DrGraph *graph, double *dur) {
  g_autofree char *id = NULL;
  double d = NAN;
  if (!dr__json_enter(r, '{')) return FALSE;
  for (guint i = 0; dr__json_next(r, '}', &i);) {
    g_autofree char *key = dr__json_read_key(r);
    if (key == NULL) return FALSE;
    if (strcmp(key, "id") == 0 && dr__json_peek(r) == '"') {
      g_free(id);
      if ((id = dr__json_read_string(r)) == NULL) return FALSE;
    } else if (strcmp(key, "duration_us") == 0) {
      if (!dr__json_read_number_or_null(r, &d)) return FALSE;
    } else if (!dr__json_skip(r)) {
      return FALSE;
    }
  }
  if (r->bad) return FALSE;
  if (id != NULL && isfinite(d) && d >= 0) {
    DrId v = dr_graph_find_node(graph, id);
    if (v != DR_NONE) dur[v] = d;
  }
  return TRUE;
}

/* The profile's text (*len its length), or NULL with `error` set. */
static char *read_profile(const char *path, gsize *len, GError **error) {
  char *text = NULL;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, len, &local)) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "cannot read profile: %s", local->message);
    return NULL;
  }
  return text;
}

/* FALSE, with the error for the JSON that `r` could not read. */
static gboolean malformed(const char *path, const DrJsonReader *r, GError **error) {
  g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: malformed JSON near byte %" G_GSIZE_FORMAT, path,
              dr__json_reader_pos(r));
  return FALSE;
}

gboolean dr_profile_read(const char *path, const DrGraph *graph, double *dur, GError **error) {
  g_return_val_if_fail(path != NULL && graph != NULL && dur != NULL, FALSE);
  gsize len = 0;
  g_autofree char *text = read_profile(path, &len, error);
  if (text == NULL) return FALSE;
  DrJsonReader r;
  dr__json_reader_init(&r, text, len);
  gboolean seen_nodes = FALSE;
  if (!dr__json_enter(&r, '{')) goto bad;
  for (guint i = 0; dr__json_next(&r, '}', &i);) {
    g_autofree char *key = dr__json_read_key(&r);
    if (key == NULL) goto bad;
    if (strcmp(key, "nodes") == 0) {
      seen_nodes = TRUE;
      if (!dr__json_enter(&r, '[')) goto bad;
      for (guint k = 0; dr__json_next(&r, ']', &k);)
        if (!read_node(&r, graph, dur)) goto bad;
      if (r.bad) goto bad;
    } else if (strcmp(key, "schema") == 0 && g_ascii_isdigit(dr__json_peek(&r))) {
      double schema = 0;
      if (!dr__json_read_number_or_null(&r, &schema)) goto bad;
      if (schema > DR_REPORT_SCHEMA) {
        g_set_error(error, DR_ERROR, DR_ERROR_IO,
                    "%s: profile has report schema %" G_GUINT64_FORMAT
                    "; this dagrun reads schema %d and older",
                    path, (guint64)MIN(schema, 1e18), DR_REPORT_SCHEMA);
        return FALSE;
      }
    } else if (!dr__json_skip(&r)) {
      goto bad;
    }
  }
  if (r.bad || !dr__json_at_end(&r)) goto bad;
  if (!seen_nodes) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: profile has no \"nodes\" array", path);
    return FALSE;
  }
  return TRUE;
bad:
  return malformed(path, &r, error);
}

gboolean dr_profile_makespan(const char *path, double *makespan_us, char **mode, GError **error) {
  g_return_val_if_fail(path != NULL && makespan_us != NULL && mode != NULL, FALSE);
  *makespan_us = NAN;
  *mode = NULL;
  gsize len = 0;
  g_autofree char *text = read_profile(path, &len, error);
  if (text == NULL) return FALSE;
  DrJsonReader r;
  dr__json_reader_init(&r, text, len);
  if (!dr__json_enter(&r, '{')) goto bad;
  for (guint i = 0; dr__json_next(&r, '}', &i);) {
    g_autofree char *key = dr__json_read_key(&r);
    if (key == NULL) goto bad;
    if (strcmp(key, "makespan_us") == 0) {
      if (!dr__json_read_number_or_null(&r, makespan_us)) goto bad;
    } else if (strcmp(key, "mode") == 0 && dr__json_peek(&r) == '"') {
      g_free(*mode);
      if ((*mode = dr__json_read_string(&r)) == NULL) goto bad;
    } else if (!dr__json_skip(&r)) {
      goto bad;
    }
  }
  if (!r.bad) return TRUE;
bad:
  g_clear_pointer(mode, g_free);
  return malformed(path, &r, error);
}

double *dr_profile_durations(const char *path, const DrGraph *graph, GError **error) {
  g_return_val_if_fail(path != NULL && graph != NULL, NULL);
  guint32 n = dr_graph_n_nodes(graph);
  g_autofree double *dur = g_new(double, MAX(n, 1));
  for (guint32 v = 0; v < n; v++) dur[v] = NAN;
  if (!dr_profile_read(path, graph, dur, error)) return NULL;
  return g_steal_pointer(&dur);
}
