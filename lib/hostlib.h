/* hostlib.h: the shared libraries a pipeline names, opened up front: host
 * functions (`op: host`, `fn: {lib, symbol, params}`, called through
 * include/dagrun/hostfn.h) and user kernels' host twins (`host_twin: {lib,
 * fn}`, kernel.h's DrKernelDef.host ABI). They are opened after parsing
 * (lib/load.c), so `dagrun --check` reports a library that cannot be
 * opened or a symbol it lacks at the key that names it (exit 65), before
 * anything runs.
 *
 * What it is not: the YAML of those keys (parser/), the calls
 * (backends/common.c). It never runs anything from a library but what
 * dlopen itself runs (the library's constructors). */
#ifndef DAGRUN_LIB_HOSTLIB_H
#define DAGRUN_LIB_HOSTLIB_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Opens every library `graph`'s host functions and host twins name (each
 * path once, dlopen RTLD_NOW | RTLD_LOCAL; the graph keeps the handles,
 * dlclosed when it is freed) and looks up each symbol: sets
 * DrCallback.call, and DrKernelDecl.twin to a DrKernelDef made from the
 * kernel's declaration (in loop bodies' kernel tables too). Reports each
 * library that cannot be opened at its `lib:` value and each missing
 * symbol at its `symbol:` (`fn:`) value. Returns whether nothing was
 * reported. O(nodes + kernels) plus one dlopen per library. */
gboolean dr__host_libs_resolve(DrGraph *graph, DrDiags *diags);

G_END_DECLS

#endif
