/* plan_edit.c: edits of a DrPlan for tests (plan_edit.h). */
#include "tests/support/plan_edit.h"

#include <string.h>

DrPlan *dr_test_plan_without_wait(const DrPlan *p, guint32 drop) {
  DrPlan *q = dr_plan_new(p->graph);
  g_array_append_vals(q->streams, p->streams->data, p->streams->len);
  g_array_append_vals(q->steps, p->steps->data, p->steps->len);
  guint32 n = p->graph->nodes->len;
  memcpy(q->node_stream, p->node_stream, n * sizeof(guint32));
  memcpy(q->node_step, p->node_step, n * sizeof(guint32));
  memcpy(q->needs_event, p->needs_event, n * sizeof(gboolean));
  for (guint32 w = 0; w < p->waits->len; w++)
    if (w != drop) g_array_append_val(q->waits, g_array_index(p->waits, DrId, w));
  for (guint32 i = 0; i < q->steps->len; i++) {
    DrPlanStep *s = dr_plan_step(q, i);
    if (s->wait_first <= drop && drop < s->wait_first + s->wait_count)
      s->wait_count--;
    else if (s->wait_first > drop)
      s->wait_first--;
  }
  return q;
}
