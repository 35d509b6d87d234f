/* pipelined.c: a chunked upload / compute / download pipeline built with
 * the dagrun C library, planned, printed and run on the host backend with
 * --verify. Build it against an installed dagrun:
 *
 *   cc -o pipelined examples/pipelined.c $(pkg-config --cflags --libs dagrun)
 *   ./pipelined [CHUNKS [TIMELINE.svg]]
 *
 * Each chunk's scale depends only on its own upload, so the planner puts
 * the chunks on parallel streams and copies overlap compute. Exit status:
 * 0 on success, else dr_error_exit_code of the error. */
#include <dagrun/dagrun.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1u << 16)

static int fail(GError *error) {
  fprintf(stderr, "pipelined: %s\n", error->message);
  int rc = dr_error_exit_code(error);
  g_error_free(error);
  return rc;
}

int main(int argc, char **argv) {
  guint chunks = argc > 1 ? (guint)atoi(argv[1]) : 4;
  if (chunks == 0 || N % chunks != 0) {
    fprintf(stderr, "usage: pipelined [CHUNKS dividing %u [TIMELINE.svg]]\n", N);
    return 64;
  }
  GError *error = NULL;
  printf("dagrun %s\n", dr_version());
  g_autoptr(DrPipeline) p = dr_pipeline_new("pipelined");
  gboolean ok = dr_pipeline_add_buffer(p, "x_host", DR_ELEM_F32, N, DR_WHERE_HOST, &error) &&
                dr_pipeline_buffer_init_random(p, "x_host", 42, &error) &&
                dr_pipeline_add_buffer(p, "y_host", DR_ELEM_F32, N, DR_WHERE_HOST, &error) &&
                dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) &&
                dr_pipeline_add_buffer(p, "y", DR_ELEM_F32, N, DR_WHERE_DEVICE, &error) &&
                dr_pipeline_add_alloc(p, "alloc_x", "x", &error) &&
                dr_pipeline_add_alloc(p, "alloc_y", "y", &error);
  for (guint c = 0; ok && c < chunks; c++) {
    guint64 b = (guint64)c * (N / chunks), e = (guint64)(c + 1) * (N / chunks);
    char up[32], scale[32], down[32];
    g_snprintf(up, sizeof up, "up%u", c);
    g_snprintf(scale, sizeof scale, "scale%u", c);
    g_snprintf(down, sizeof down, "down%u", c);
    DrNamedArg args[] = {DR_NAMED_SLICE("x", "x", b, e), DR_NAMED_FLOAT("alpha", 2.0),
                         DR_NAMED_SLICE("y", "y", b, e)};
    ok = dr_pipeline_add_copy(p, up, DR_SLICE("x_host", b, e), DR_SLICE("x", b, e), &error) &&
         dr_pipeline_add_kernel_node(p, scale, "scale_f32", args, 3, &error) &&
         dr_pipeline_add_copy(p, down, DR_SLICE("y", b, e), DR_SLICE("y_host", b, e), &error) &&
         dr_pipeline_node_set_priority(p, down, DR_PRIORITY_HIGH, &error);
  }
  DrNamedArg sum[] = {DR_NAMED_WHOLE("buffer", "y_host")};
  ok = ok && dr_pipeline_add_free(p, "free_x", "x", &error) &&
       dr_pipeline_add_free(p, "free_y", "y", &error) &&
       dr_pipeline_add_host(p, "report", "checksum", sum, 1, &error);
  if (!ok) return fail(error);

  DrPlanSettings ps = {.max_streams = 8};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &ps, &error);
  if (plan == NULL) return fail(error);
  printf("plan: %u nodes on %u streams, width %u, %u cross-stream waits\n", dr_stream_plan_n_steps(plan),
         dr_stream_plan_n_streams(plan), dr_stream_plan_width(plan), dr_stream_plan_n_waits(plan));
  for (guint i = 0; i < dr_stream_plan_n_steps(plan); i++) {
    printf("  %-8s stream %u", dr_stream_plan_step_node(plan, i), dr_stream_plan_step_stream(plan, i));
    for (guint w = 0; w < dr_stream_plan_step_n_waits(plan, i); w++)
      printf("%s%s", w ? ", " : "  waits for ", dr_stream_plan_step_wait(plan, i, w));
    printf("\n");
  }

  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 5;
  rs.warmup = 1;
  rs.verify = TRUE;
  g_autoptr(DrRunReport) report = dr_stream_plan_run(plan, &rs, &error);
  if (report == NULL) return fail(error);
  g_autoptr(GString) table = g_string_new(NULL);
  dr_run_report_write_text(report, table);
  fputs(table->str, stdout);
  printf("backend %s, makespan %.1f us, verified: %s\n", dr_run_report_backend(report),
         dr_run_report_makespan_us(report),
         dr_run_report_verified(report) == DR_VERIFIED_PASS ? "yes" : "NO");
  printf("critical path %.1f us through %u nodes (ending at %s), overlap efficiency %.2f\n",
         dr_run_report_critical_path_us(report), dr_run_report_n_critical_nodes(report),
         dr_run_report_n_critical_nodes(report)
             ? dr_run_report_critical_node(report, dr_run_report_n_critical_nodes(report) - 1)
             : "-",
         dr_run_report_overlap_efficiency(report));
  if (argc > 2) { /* an SVG timeline of the median iteration */
    g_autoptr(GString) svg = g_string_new(NULL);
    dr_run_report_write_timeline(report, plan, svg);
    if (!g_file_set_contents(argv[2], svg->str, (gssize)svg->len, &error)) return fail(error);
    printf("timeline written to %s\n", argv[2]);
  }
  if (!dr_run_report_check_verified(report, &error)) return fail(error);
  return 0;
}
