/* review_api_test.c: the review pictures through the public API only
 * (include/dagrun/dagrun.h): dr_stream_plan_write_dot_with's detail, a
 * run's durations, a profile's, and its errors. */
#include <glib/gstdio.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

static guint count_substr(const char *s, const char *needle) {
  guint n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void test_dot_with(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_file("bench/pipelines/review1000.yaml", &error);
  g_assert_no_error(error);
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  /* NULL settings: auto detail, summary at 1000 nodes. */
  g_autoptr(GString) dot = g_string_new(NULL);
  g_assert_true(dr_stream_plan_write_dot_with(plan, NULL, dot, &error));
  g_assert_cmpuint(count_substr(dot->str, "shape=box3d"), ==, 4);
  DrDotSettings full = {.detail = DR_DOT_DETAIL_FULL};
  g_string_truncate(dot, 0);
  g_assert_true(dr_stream_plan_write_dot_with(plan, &full, dot, &error));
  g_assert_cmpuint(count_substr(dot->str, " -> "), ==, 750);

  /* A run's durations, then the same from its JSON report as a profile. */
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  g_autoptr(DrRunReport) r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  DrDotSettings timed = {.detail = DR_DOT_DETAIL_SUMMARY, .report = r};
  g_string_truncate(dot, 0);
  g_assert_true(dr_stream_plan_write_dot_with(plan, &timed, dot, &error));
  g_assert_nonnull(strstr(dot->str, "(durations: this run)"));
  g_assert_nonnull(strstr(dot->str, "\\nsum "));
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(r, json);
  g_autofree char *dir = g_dir_make_tmp("review-api-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "r.json", NULL);
  g_assert_true(g_file_set_contents(path, json->str, -1, NULL));
  DrDotSettings prof = {.profile_path = path};
  g_string_truncate(dot, 0);
  g_assert_true(dr_stream_plan_write_dot_with(plan, &prof, dot, &error));
  g_assert_nonnull(strstr(dot->str, "(durations: profile "));

  /* A missing profile, and a report of another plan, are errors. */
  DrDotSettings missing = {.profile_path = "/nonexistent/r.json"};
  g_string_truncate(dot, 0);
  g_assert_false(dr_stream_plan_write_dot_with(plan, &missing, dot, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_cmpuint(dot->len, ==, 0);
  g_clear_error(&error);
  g_autoptr(DrStreamPlan) other = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  g_assert_false(dr_stream_plan_write_dot_with(other, &timed, dot, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_unlink(path);
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/review/api/dot-with", test_dot_with);
  return g_test_run();
}
