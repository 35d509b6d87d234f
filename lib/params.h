/* params.h: run-time parameters, evaluated (lib/params.c): the checks at
 * load that hold for every value in range, the extents the hazard pass
 * orders by, and setting values and patching the graph before a run. The
 * declarations and uses are the IR's (ir/params.h); the parser notes
 * them (parser/params.c). Not here: how a backend follows a patched node
 * (args_changed). */
#ifndef DAGRUN_LIB_PARAMS_H
#define DAGRUN_LIB_PARAMS_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* The most evaluations dr__params_prove spends on enumerating values,
 * over all uses; past it, uses are checked at their range's corners. */
#define DR_PARAMS_ENUM_BUDGET 4000000u
/* The most value combinations one use is enumerated over. */
#define DR_PARAMS_ENUM_MAX 65536u

/* At load, before the passes: for every slice that depends on parameters,
 * proves it stays inside its buffer for every value in the declared
 * ranges (each combination, when they number at most DR_PARAMS_ENUM_MAX
 * and the budget allows; else at every corner of the ranges, and the
 * slice's planning extent is then the whole buffer), reporting the first
 * value that breaks it at the slice's location; computes each slice's
 * planning extent (DrParamUse.hull_*). A slice over a parameter without
 * min or max is an error (nothing to prove it over). FALSE when it
 * reported errors. */
gboolean dr__params_prove(DrGraph *graph, DrDiags *diags);

/* Sets every parameter-dependent access to its planning extent (before
 * the hazard pass), or (dr__params_apply) to the current values. */
void dr__params_widen(DrGraph *graph);

/* Evaluates every use with the parameters' current values and patches the
 * graph (accesses, scalar arguments, memset values); the ids of the nodes
 * whose values changed are appended to `changed` (when not NULL), each
 * once. FALSE with DR_ERROR_USAGE, changing nothing, when a value breaks
 * a slice's bounds, a copy's equal sizes or an argument's type range
 * (possible only where dr__params_prove checked corners). */
gboolean dr__params_apply(DrGraph *graph, GArray *changed, GError **error);

/* Sets parameter `name` from `text` (an integer as the format writes one,
 * with size suffixes; or a float), or from i (is_int) / f. FALSE with
 * DR_ERROR_USAGE for an unknown name (with a suggestion), a bad value or
 * one outside min..max; nothing changes then. Does not patch the graph. */
gboolean dr__params_set(DrGraph *graph, const char *name, const char *text, gboolean is_int, gint64 i,
                        double f, GError **error);

/* Appends "seq=1024 temp=0.5" (the current values, in declaration order)
 * to `out`. */
void dr__params_describe(const DrGraph *graph, GString *out);

G_END_DECLS

#endif
