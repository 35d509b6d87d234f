/* passes.h: the dependency passes that turn a parsed DrGraph into a DAG.
 *
 * dr_passes_run is the pipeline: devices (each node's device, multi-device
 * checks), lifetimes (alloc/free checks), hazards
 * (RAW/WAR/WAW edges from program order), afters (explicit `after:` edges),
 * cycles (rejects an `after:` that closes a loop), then dr_graph_sort_edges.
 * Each pass lives in its own file, whose head says what it requires and
 * provides. The individual passes are exported with the internal dr__
 * prefix for the tests; everything else calls dr_passes_run. This is not the
 * planner: streams and events are scheduler/planner.h's business. */
#ifndef DAGRUN_SCHEDULER_PASSES_H
#define DAGRUN_SCHEDULER_PASSES_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Runs the passes after parsing, in order: lifetimes (alloc/free
 * checks), hazards (RAW/WAR/WAW edges), afters (AFTER edges), cycles.
 * Leaves graph->edges sorted (dr_graph_sort_edges). Returns FALSE when
 * it added errors to diags. */
gboolean dr_passes_run(DrGraph *graph, DrDiags *diags);

/* dr_passes_run, stopping after the pass named `dump_after` (NULL: run all
 * and dump nothing) and appending dr_graph_dump's text of the graph at that
 * point to `dump`. "parse" dumps before the first pass, "passes" after the
 * last. `dump_after` must be one of dr_passes_names (a programming error
 * otherwise). Returns FALSE, dumping nothing, when a pass before the dump
 * point added errors to diags. */
gboolean dr_passes_run_dump(DrGraph *graph, DrDiags *diags, const char *dump_after, GString *dump);

/* The names dr_passes_run_dump accepts, in pipeline order, NULL-terminated
 * (static storage): parse, each pass, passes. */
const char *const *dr_passes_names(void);

/* Whether `name` is one of dr_passes_names. */
gboolean dr_passes_has_name(const char *name);

/* devices.c: checks every device named against the run's devices, the
 * devices of kernels' and collectives' buffers, and sets each node's
 * `dev`. Returns FALSE after adding errors to diags. */
gboolean dr__devices_run(DrGraph *graph, DrDiags *diags);

/* lifetimes.c: checks the program order of every stream-ordered buffer's
 * alloc, uses and free. Adds errors (with notes) to diags and returns FALSE
 * when it found any; changes nothing in the graph. */
gboolean dr__lifetimes_check(const DrGraph *graph, DrDiags *diags);

/* hazards.c: appends one RAW, WAR or WAW edge per (earlier node, later node)
 * pair that program order needs, enough that the edges' transitive closure
 * is exactly the order the accesses imply. Cannot fail. */
void dr__hazards_run(DrGraph *graph);

/* afters.c: appends a DR_EDGE_AFTER edge per graph->afters entry. Returns
 * FALSE, with an error in diags, for a node listing itself. */
gboolean dr__afters_run(DrGraph *graph, DrDiags *diags);

/* cycles.c: returns FALSE, with an error and notes per cycle found in
 * diags, when graph->edges contain a cycle; TRUE when they form a DAG. */
gboolean dr__cycles_check(const DrGraph *graph, DrDiags *diags);

G_END_DECLS

#endif
