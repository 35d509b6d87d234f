/* passes.c: the dependency passes as a table (passes.h), in QBE's spirit: a
 * static array of {name, function} and a short loop that runs each in
 * order, stops after the first that reported errors (later passes assume
 * the earlier ones' guarantees: hazards assume well-formed lifetimes,
 * cycles assume every edge is in place), checks the IR's invariants after
 * each one in debug builds (DR_GRAPH_CHECK: -DDR_CHECK_INVARIANTS=1, on in
 * --config=debug, asan and fuzz) and dumps the IR after the one that
 * --dump-after names. Each pass owns its file; this one only orders them. */
#include "scheduler/passes.h"

#include <string.h>

static gboolean run_lifetimes(DrGraph *graph, DrDiags *diags) { return dr__lifetimes_check(graph, diags); }

static gboolean run_hazards(DrGraph *graph, DrDiags *diags) {
  (void)diags;
  dr__hazards_run(graph);
  return TRUE;
}

/* The cycle check, then the edges sorted by (to, from) as the planner needs
 * them (a DAG's edges in any order are a DAG). */
static gboolean run_cycles(DrGraph *graph, DrDiags *diags) {
  if (!dr__cycles_check(graph, diags)) return FALSE;
  dr_graph_sort_edges(graph);
  return TRUE;
}

static const struct {
  const char *name;
  gboolean (*run)(DrGraph *graph, DrDiags *diags);
} passes[] = {
    {"devices", dr__devices_run}, {"lifetimes", run_lifetimes}, {"hazards", run_hazards},
    {"afters", dr__afters_run},   {"cycles", run_cycles},
};

/* The names --dump-after accepts: "parse" (the library stops before the
 * first pass), each pass, and "passes" (after the last one). */
static const char *const names[] = {"parse",  "devices", "lifetimes", "hazards",
                                    "afters", "cycles",  "passes",    NULL};

G_STATIC_ASSERT(G_N_ELEMENTS(names) == G_N_ELEMENTS(passes) + 3);

const char *const *dr_passes_names(void) { return names; }

gboolean dr_passes_has_name(const char *name) {
  g_return_val_if_fail(name != NULL, FALSE);
  for (guint i = 0; names[i] != NULL; i++)
    if (strcmp(names[i], name) == 0) return TRUE;
  return FALSE;
}

gboolean dr_passes_run_dump(DrGraph *graph, DrDiags *diags, const char *dump_after, GString *dump) {
  g_return_val_if_fail(graph != NULL && diags != NULL, FALSE);
  g_return_val_if_fail(dump_after == NULL || (dump != NULL && dr_passes_has_name(dump_after)), FALSE);
  if (dump_after != NULL && strcmp(dump_after, "parse") == 0) {
    dr_graph_dump(graph, dump);
    return TRUE;
  }
  for (guint i = 0; i < G_N_ELEMENTS(passes); i++) {
    if (!passes[i].run(graph, diags)) return FALSE;
    DR_GRAPH_CHECK(graph);
    if (dump_after != NULL && strcmp(dump_after, passes[i].name) == 0) {
      dr_graph_dump(graph, dump);
      return TRUE;
    }
  }
  if (dump_after != NULL) dr_graph_dump(graph, dump); /* "passes" */
  return TRUE;
}

gboolean dr_passes_run(DrGraph *graph, DrDiags *diags) {
  return dr_passes_run_dump(graph, diags, NULL, NULL);
}
