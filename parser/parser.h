/* parser.h: the pipeline parser, YAML (format version 1) to DrGraph.
 *
 * It streams the document: top-level sections are built and converted one
 * at a time, and `nodes:` one entry at a time, so memory stays
 * proportional to the IR, not to the text. Every problem it can see in one
 * node, buffer or kernel is reported into a DrDiags (several per file);
 * cross-node checks (lifetimes, hazards, cycles) are the passes' job
 * (scheduler/passes.h). It does not read files: lib/load.c does. */
#ifndef DAGRUN_PARSER_PARSER_H
#define DAGRUN_PARSER_PARSER_H

#include <glib.h>
#include <stdio.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* Limits against hostile input; each is a FILE:LINE:COL diagnostic. The
 * fuzz build (--config=fuzz) lowers them with -D so that one input cannot
 * spend seconds on a legal but huge expansion (10M nodes take ~16 s). */
#ifndef DR_PARSE_MAX_FILE_BYTES
#define DR_PARSE_MAX_FILE_BYTES (G_GUINT64_CONSTANT(1) << 30)
#endif
#ifndef DR_PARSE_MAX_NODES
#define DR_PARSE_MAX_NODES G_GUINT64_CONSTANT(10000000)
#endif
/* Values walked while expanding foreach bodies, over the whole file. */
#ifndef DR_PARSE_MAX_EXPANDED_VALUES
#define DR_PARSE_MAX_EXPANDED_VALUES G_GUINT64_CONSTANT(500000000)
#endif
/* Explicit after: dependencies once `prefix*` entries are expanded. */
#ifndef DR_PARSE_MAX_AFTERS
#define DR_PARSE_MAX_AFTERS G_GUINT64_CONSTANT(50000000)
#endif

/* Parses yaml[0..len), the pipeline file `file` (used in diagnostics and to
 * resolve relative paths), into `graph`, which must already hold the
 * built-in kernels (dr__graph_register_builtins). Sets graph->file,
 * base_dir and name. Returns TRUE when it reported no error; otherwise the
 * graph is partial and must not be run. */
gboolean dr_parse_pipeline(DrGraph *graph, const char *file, const char *yaml, gsize len, DrDiags *diags);

/* The same, reading the open, seekable file `fp` in chunks so the text is
 * never held in memory whole (what lib/load.c uses). `file` names it in
 * diagnostics. */
gboolean dr_parse_pipeline_file(DrGraph *graph, const char *file, FILE *fp, DrDiags *diags);

G_END_DECLS

#endif
