/* checks.h: the up-front checks of a pipeline that need more than the IR
 * builder can see while it builds one node: each built-in (or registered)
 * kernel's shape rule over a node's bound arguments, `init: {file:}` files
 * on disk. They run before anything runs: after parsing a file
 * (lib/load.c, so `dagrun --check` reports them) and when the library
 * validates a built pipeline; kernel nodes added through the C API are
 * checked as they are added (lib/nodes.c). Every problem is a located
 * DrDiags error (exit 65).
 *
 * What it is not: the naming, slice and type rules (ir/build.c), the
 * dependency passes (scheduler/passes.h). */
#ifndef DAGRUN_LIB_CHECKS_H
#define DAGRUN_LIB_CHECKS_H

#include <glib.h>

#include "include/dagrun/kernel.h"
#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* The DrKernelDef behind a kernel declaration: a registered kernel's own,
 * a built-in's registry entry, or NULL (a YAML user kernel, compiled by the
 * CUDA backend: no check, no host twin). */
const DrKernelDef *dr__kernel_decl_def(const DrKernelDecl *decl);

/* Runs def->check (when set) over one kernel call: counts[i] the element
 * count of pointer parameter i's slice, vals[i] scalar i's value,
 * locs[i] where argument i was given (a zero DrLoc: not given). On
 * refusal reports "WHAT: kernel 'NAME': MESSAGE" at the location of the
 * argument the message names first (the checks name the argument at
 * fault first: "c must have m*n = 9 elements"), else at `at`, and
 * returns FALSE. */
gboolean dr__kernel_check_call(const DrKernelDef *def, const char *what, const guint64 *counts,
                               const DrKValue *vals, const DrLoc *locs, DrLoc at, DrDiags *diags);

/* Every check of this file over the whole graph: each kernel node's shape
 * rule, then each buffer's init file (exists, is a readable regular file,
 * holds exactly the buffer's bytes; reported at the `file:` value, or at
 * the buffer for the C library's). Returns whether nothing was reported.
 * O(nodes + arguments + buffers), one stat per init file. */
gboolean dr__pipeline_checks(const DrGraph *graph, DrDiags *diags);

G_END_DECLS

#endif
