/* yaml_writer.h: a DrGraph written back out as a pipeline file (format v1),
 * for dr_pipeline_write_yaml. Loading the text again (lib/load.h) gives a
 * graph with the same buffers, nodes, accesses, arguments and explicit
 * edges, hence the same plan. It is not a pretty-printer of the user's
 * file: comments, anchors and foreach loops are not kept. */
#ifndef DAGRUN_LIB_YAML_WRITER_H
#define DAGRUN_LIB_YAML_WRITER_H

#include <glib.h>

#include "ir/graph.h"

G_BEGIN_DECLS

/* Appends `graph` as YAML to `out`. Paths (init files, save paths, user
 * kernel sources) are written absolute. Fails with DR_ERROR_USAGE, leaving
 * `out` unchanged, when the graph holds callback nodes or kernels
 * registered through the C API, which YAML cannot name. */
gboolean dr_graph_write_yaml(const DrGraph *graph, GString *out, GError **error);

G_END_DECLS

#endif
