/* mode.h: what `mode: auto` (the default, include/dagrun/types.h's
 * DR_MODE_LIST) resolves to for a graph, and why (mode.c). */
#ifndef DAGRUN_IR_MODE_H
#define DAGRUN_IR_MODE_H

#include "ir/graph.h"

G_BEGIN_DECLS

/* Resolves `asked` for `g` run `iterations` timed times: STREAMS or GRAPH
 * are returned as they are (the reason says "forced" and by whom: `forced_by`,
 * e.g. "--mode" or "run.mode"); AUTO becomes GRAPH when iterations > 1 and
 * every node is capturable (dr_mode_uncapturable), else STREAMS. Returns
 * the mode; *reason (owned by the caller, g_free) says which rule applied,
 * in a phrase that starts with the rule ("auto: ...", "set by ..."). */
DrMode dr_mode_resolve(const DrGraph *g, DrMode asked, guint32 iterations, const char *forced_by,
                       char **reason);

/* NULL when every node of `g` is known to be capturable into a CUDA graph
 * by the graph mode dagrun builds today; else why not, naming the first
 * node that is not (owned by the caller). Not capturable: a kernel
 * registered through the C library (its launcher is the caller's code and
 * may synchronize or allocate: graph mode would need run.fallback), a copy
 * of `where: pageable` memory (graph mode refuses it). Host nodes, copies,
 * memsets, allocs and frees, collectives, user kernels and loops (while:
 * and if: as CUDA conditional nodes) are captured, in bodies too;
 * run.device_loop makes auto graph mode, which it needs. */
char *dr_mode_uncapturable(const DrGraph *g);

G_END_DECLS

#endif
