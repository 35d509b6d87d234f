/* load.h: the core library's front door: a pipeline file (or string) in,
 * a checked DrGraph out, with the built-in kernels registered and the
 * dependency passes run. This is what the CLI and the tests call; it owns
 * reading the file, the parser owns the YAML, scheduler/passes.h the
 * dependencies. It does not plan or run. */
#ifndef DAGRUN_LIB_LOAD_H
#define DAGRUN_LIB_LOAD_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Registers every built-in kernel of kernels/registry.h in graph->kernels
 * (origin DR_KERNEL_BUILTIN, builtin_index set). */
void dr__graph_register_builtins(DrGraph *graph);

/* Reads and parses a pipeline file (or a string) into a new graph with the
 * built-ins registered, then runs dr_passes_run. NULL + error on failure;
 * diagnostics (several) go into diags. Errors: DR_ERROR_IO ("FILE: error:
 * cannot read: ...") when the file cannot be read, DR_ERROR_INVALID (all
 * diagnostics, one per line) for a bad pipeline. Free with dr_graph_free. */
DrGraph *dr_load_file(const char *path, DrDiags *diags, GError **error);
DrGraph *dr_load_string(const char *name, const char *yaml, gsize len, DrDiags *diags, GError **error);

/* Makes every graph loaded from now on be built for rank `rank` of
 * `nranks` (local rank `local_rank`): the values of the variables `rank`,
 * `nranks`, `local_rank` and what `rank:` tests. The process joins its job
 * once (lib/ranks.c), so this is process-wide; tests and the planning
 * benchmark set a rank of their own. */
void dr__load_set_ranks(guint32 rank, guint32 nranks, guint32 local_rank);

/* dr_load_file, stopping after the pass named `dump_after` (one of
 * dr_passes_names, or NULL for all) and appending the IR's dump at that
 * point to `dump` (for --dump-after). The file is parsed in chunks, never
 * held whole. */
DrGraph *dr__load_file_dump(const char *path, const char *dump_after, GString *dump, DrDiags *diags,
                            GError **error);

G_END_DECLS

#endif
