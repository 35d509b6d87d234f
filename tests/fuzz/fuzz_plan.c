/* fuzz_plan.c: libFuzzer target for the whole path YAML -> graph -> plan ->
 * plan text, JSON and DOT. Whatever loads must plan, pass the plan's
 * invariant check and export. Built only with --config=fuzz. */
#include <glib.h>

#include "ir/diag.h"
#include "ir/plan.h"
#include "lib/load.h"
#include "report/report.h"
#include "scheduler/planner.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) graph = dr_load_string("fuzz.yaml", (const char *)data, size, diags, &error);
  if (graph == NULL) return 0;
  if (graph->nodes->len > 2000) return 0; /* keep the O(V·E) plan check cheap */
  DrPlanOptions opts = {0};
  g_autoptr(DrPlan) plan = dr_plan_build(graph, &opts, &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  g_assert_true(dr_plan_check(plan, &error));
  g_autoptr(GString) out = g_string_new(NULL);
  dr_plan_write_text(plan, out);
  dr_plan_write_json(plan, out);
  dr_plan_write_dot(plan, out);
  return 0;
}
