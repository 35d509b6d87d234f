/* fake_runner.c: the public API's DrRunner on the fake CUDA table
 * (fake_runner.h). Apart from fake_run.c so that a test of the internals
 * does not link the public library. */
#include "tests/fault/fake_runner.h"

#include "backends/cuda_api.h"
#include "tests/fault/fake_cuda.h"

void dr_fake_runner_start(void) {
  dr_fake_reset();
  dr_cuda_api_set(dr_fake_api_graph_nodes());
  dr_fake_set_run_twins(TRUE);
  dr_fake_set_replay_graphs(TRUE);
  dr_fake_allow_default_streams(FALSE);
}

void dr_fake_runner_finish(void) {
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpuint(dr_fake_live_total(), ==, 0);
  dr_fake_set_replay_graphs(FALSE);
  dr_fake_set_run_twins(FALSE);
  dr_fake_allow_default_streams(FALSE);
  dr_fake_reset();
  dr_cuda_api_set(dr_fake_api());
}

void dr_fake_runner_free_faulted(DrRunner *r) {
  dr_fake_arm(0, DR_FAULT_LAUNCH);
  dr_runner_free(r);
  gint64 at = dr_fake_fault_index();
  gboolean failed_release = at >= 0 && g_array_index(dr_fake_trace(), DrFakeCall, at).release;
  g_assert_cmpstr(dr_fake_misuse(), ==, "");
  g_assert_cmpuint(dr_fake_live_total(), ==, failed_release ? 1 : 0);
  dr_fake_reset();
  dr_fake_runner_finish();
}

DrRunner *dr_fake_cuda_runner(DrStreamPlan *plan, const DrPipeline *p, DrMode mode) {
  g_autoptr(GError) error = NULL;
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_CUDA;
  rs.mode = mode;
  rs.iterations = 1;
  rs.warmup = 0;
  DrRunner *r = dr_runner_new(plan, &rs, &error);
  g_assert_no_error(error);
  return r;
}
