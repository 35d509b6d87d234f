/* ranks.c: the run reports of every rank of an MPI job as one report
 * (report.h, dr_report_merge_ranks): rank 0 receives each rank's report as
 * the text or JSON writer wrote it and merges the texts, so the one-rank
 * writers stay the only writers of a report's contents. Text: the first
 * rank's node-table header gets a `rank` column and every rank's rows
 * follow it under their rank number; every other line is prefixed
 * `rank R: `; a last line gives --verify's verdict over every rank. JSON:
 * {"schema": 1, "nranks": N, "verified": V, "failed_ranks": [...],
 * "ranks": [each report with "rank": R first]}. Cost: linear in the
 * texts. */
#include <string.h>

#include "report/report.h"

/* A report's verdict: 1 pass, 0 fail, -1 not run (read from what the
 * writer wrote: "verify: passed|FAILED|not run", JSON "verified": true|false|null). */
static int verdict(const char *text, gboolean json) {
  if (json) {
    const char *v = strstr(text, ", \"verified\": ");
    if (v == NULL) return -1;
    v += strlen(", \"verified\": ");
    return strncmp(v, "true", 4) == 0 ? 1 : strncmp(v, "false", 5) == 0 ? 0 : -1;
  }
  const char *v = strstr(text, "\nverify: ");
  if (v == NULL) return -1;
  v += strlen("\nverify: ");
  return strncmp(v, "passed", 6) == 0 ? 1 : strncmp(v, "FAILED", 6) == 0 ? 0 : -1;
}

/* A summary line ("makespan_us: ...") rather than a node row: its first
 * word ends with ':' (node ids cannot hold one). */
static gboolean summary_line(const char *line) {
  const char *sp = strchr(line, ' ');
  gsize n = sp ? (gsize)(sp - line) : strlen(line);
  return n > 0 && line[n - 1] == ':';
}

static void merge_text(char *const *reports, guint n, GString *out) {
  /* Three passes over the ranks: their titles, one node table, then each
   * rank's summary lines. */
  g_autoptr(GPtrArray) split = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  for (guint r = 0; r < n; r++) g_ptr_array_add(split, g_strsplit(reports[r], "\n", -1));
  for (int pass = 0; pass < 3; pass++) {
    gboolean header_done = FALSE;
    for (guint r = 0; r < n; r++) {
      char **lines = split->pdata[r];
      gboolean in_table = FALSE;
      for (guint i = 0; lines[i] != NULL; i++) {
        const char *l = lines[i];
        if (l[0] == '\0' && lines[i + 1] == NULL) break;
        int kind; /* 0 title, 1 table, 2 summary */
        if (i == 0) {
          kind = 0;
        } else if (g_str_has_prefix(l, "node ")) {
          in_table = TRUE;
          if (pass == 1 && !header_done) g_string_append_printf(out, "rank %s\n", l);
          header_done = TRUE;
          continue;
        } else if (in_table && !summary_line(l)) {
          kind = 1;
        } else {
          in_table = FALSE;
          kind = 2;
        }
        if (kind != pass) continue;
        if (kind == 1)
          g_string_append_printf(out, "%-4u %s\n", r, l);
        else
          g_string_append_printf(out, "rank %u: %s\n", r, l);
      }
    }
  }
}

void dr_report_merge_ranks(char *const *reports, guint n, gboolean json, GString *out) {
  g_autoptr(GString) failed = g_string_new(NULL);
  gboolean all_pass = n > 0, any_run = FALSE;
  for (guint r = 0; r < n; r++) {
    int v = verdict(reports[r], json);
    any_run |= v >= 0;
    all_pass &= v == 1;
    if (v == 0) g_string_append_printf(failed, "%s%u", failed->len ? ", " : "", r);
  }
  if (json) {
    g_string_append_printf(
        out, "{\"schema\": 1, \"nranks\": %u, \"verified\": %s, \"failed_ranks\": [%s], \"ranks\": [", n,
        !any_run   ? "null"
        : all_pass ? "true"
                   : "false",
        failed->str);
    for (guint r = 0; r < n; r++) {
      const char *t = reports[r];
      while (*t == ' ' || *t == '\n') t++;
      gsize len = strlen(t);
      while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == ' ')) len--;
      if (r) g_string_append(out, ", ");
      if (len > 1 && t[0] == '{')
        g_string_append_printf(out, "{\"rank\": %u, %.*s", r, (int)(len - 1), t + 1);
      else
        g_string_append_printf(out, "{\"rank\": %u}", r);
    }
    g_string_append(out, "]}\n");
    return;
  }
  merge_text(reports, n, out);
  if (!any_run)
    g_string_append_printf(out, "verify (%u ranks): not run\n", n);
  else if (all_pass)
    g_string_append_printf(out, "verify (%u ranks): passed on every rank\n", n);
  else
    g_string_append_printf(out, "verify (%u ranks): FAILED on rank %s\n", n, failed->len ? failed->str : "?");
}
