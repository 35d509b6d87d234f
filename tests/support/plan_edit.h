/* plan_edit.h: edits of a DrPlan that tests make to show a plan's parts
 * are needed (test-only; no product code uses it). Not a planner: the
 * result is a plan the planner would not make. */
#ifndef DAGRUN_TESTS_SUPPORT_PLAN_EDIT_H
#define DAGRUN_TESTS_SUPPORT_PLAN_EDIT_H

#include "ir/plan.h"

/* A new plan of p's graph equal to `p` but without wait number `drop`
 * (an index into p->waits): the step that held it has one wait fewer and
 * the later steps' wait indices shift down by one. The caller frees it
 * with dr_plan_free. */
DrPlan *dr_test_plan_without_wait(const DrPlan *p, guint32 drop);

#endif
