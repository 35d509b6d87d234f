/* fake_run.c: shared steps of the tests on the fake CUDA table
 * (fake_run.h). Not part of the fake itself: the fake (fake_cuda.c) is
 * the runtime; this is what tests do with it. */
#include "tests/fault/fake_run.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_api.h"
#include "lib/load.h"
#include "scheduler/planner.h"
#include "tests/fault/fake_cuda.h"

DrGraph *dr_fake_load_yaml(const char *name, const char *yaml) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string(name, yaml, strlen(yaml), diags, &error);
  g_assert_no_error(error);
  g_assert_nonnull(g);
  return g;
}

DrRunOptions dr_fake_run_options(const DrGraph *g, DrMode mode, DrTimingMode timing, guint32 warmup,
                                 guint32 iterations) {
  static FILE *devnull; /* one for the process, never closed */
  if (devnull == NULL) devnull = fopen("/dev/null", "w");
  g_assert_nonnull(devnull);
  DrRunOptions opts;
  dr_run_options_init(&opts, g);
  opts.backend = DR_BACKEND_CUDA;
  opts.mode = mode;
  opts.node_timing = timing;
  opts.warmup = warmup;
  opts.iterations = iterations;
  opts.host_output = devnull;
  return opts;
}

char *dr_fake_run_saved(const DrPlan *plan, const DrRunOptions *opts, gboolean replay_graphs,
                        const char *path, gsize *len, DrReport **report) {
  g_autoptr(GError) error = NULL;
  dr_fake_reset();
  dr_fake_set_run_twins(TRUE);
  if (replay_graphs) dr_fake_set_replay_graphs(TRUE);
  g_autoptr(DrReport) r = dr_run(plan, opts, &error);
  dr_fake_set_run_twins(FALSE);
  if (replay_graphs) dr_fake_set_replay_graphs(FALSE);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  char *data = NULL;
  g_assert_true(g_file_get_contents(path, &data, len, NULL));
  g_unlink(path);
  if (report != NULL) *report = g_steal_pointer(&r);
  return data;
}

DrPlan *dr_fake_plan(const DrGraph *g) {
  g_autoptr(GError) error = NULL;
  DrPlan *p = dr_plan_build(g, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(p);
  return p;
}

char *dr_fake_run_printed(const DrPlan *plan, DrBackendKind backend, DrMode mode, DrTimingMode timing,
                          gboolean verify, guint32 iterations, GError **error) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  g_assert_nonnull(out);
  DrRunOptions o;
  dr_run_options_init(&o, plan->graph);
  o.backend = backend;
  o.mode = mode;
  o.node_timing = timing;
  o.iterations = iterations;
  o.warmup = 0;
  o.verify = verify;
  o.host_output = out;
  DrReport *r = dr_run(plan, &o, error);
  fclose(out);
  if (r == NULL) {
    free(buf);
    return NULL;
  }
  if (verify) g_assert_cmpint(r->verified, ==, DR_VERIFIED_PASS);
  dr_report_free(r);
  char *s = g_strdup(buf);
  free(buf);
  return s;
}

char *dr_fake_host_printed(const DrPlan *plan, guint32 iterations) {
  g_autoptr(GError) error = NULL;
  char *s =
      dr_fake_run_printed(plan, DR_BACKEND_HOST, DR_MODE_STREAMS, DR_TIMING_AUTO, FALSE, iterations, &error);
  g_assert_no_error(error);
  return s;
}

const DrFakeCall *dr_fake_faulted_call(void) {
  gint64 at = dr_fake_fault_index();
  return at >= 0 ? &g_array_index(dr_fake_trace(), DrFakeCall, at) : NULL;
}

guint dr_fake_count_calls(guint from, const char *name) {
  const GArray *t = dr_fake_trace();
  guint n = 0;
  for (guint i = from; i < t->len; i++) n += strcmp(g_array_index(t, DrFakeCall, i).name, name) == 0;
  return n;
}
