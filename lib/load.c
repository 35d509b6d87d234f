/* load.c: reading a pipeline, registering the built-in kernels, parsing and
 * running the up-front checks (checks.h) and the dependency passes
 * (load.h). Glue only: each step's logic
 * lives in its own package. */
#include "lib/load.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/registry.h"
#include "lib/checks.h"
#include "lib/params.h"
#include "lib/hostlib.h"
#include "parser/parser.h"
#include "scheduler/passes.h"

void dr__graph_register_builtins(DrGraph *graph) {
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *def = &dr_kernel_registry[i];
    DrParam params[64];
    g_return_if_fail(def->n_params <= 64);
    for (int j = 0; j < def->n_params; j++) {
      const DrKParam *kp = &def->params[j];
      params[j] = (DrParam){.name = kp->name,
                            .type = kp->type,
                            .is_pointer = kp->is_pointer != 0,
                            .access = kp->access,
                            .optional = kp->optional != 0,
                            .def = kp->def};
    }
    DrKernelDecl decl = {
        .name = def->name,
        .origin = DR_KERNEL_BUILTIN,
        .builtin_index = (guint32)i,
        .params = params,
        .n_params = (guint32)def->n_params,
        .grid = {.over = def->grid_over < 0 ? DR_NONE : (DrId)def->grid_over, .block = def->block},
        .entry = def->name,
        .guardable = (def->flags & DR_KFLAG_GUARD) != 0};
    dr_graph_add_kernel(graph, &decl);
  }
}

/* The rank every graph is loaded for (dr__load_set_ranks). */
static guint32 load_rank, load_nranks = 1, load_local_rank;

void dr__load_set_ranks(guint32 rank, guint32 nranks, guint32 local_rank) {
  g_return_if_fail(nranks >= 1 && rank < nranks);
  load_rank = rank;
  load_nranks = nranks;
  load_local_rank = local_rank;
}

/* With several ranks, every rank must issue its collectives (and sends
 * and receives) in the same order, or they deadlock or pair wrongly; ranks
 * plan different graphs, so the order is the one they share, the file's:
 * each such node comes after the one before it (docs/multi-gpu.md). */
static void chain_rank_collectives(DrGraph *graph) {
  if (graph->run.nranks <= 1) return;
  DrId prev = DR_NONE;
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++) {
    const DrNode *n = dr_graph_node(graph, i);
    if (!DR_OP_IS_COLLECTIVE(n->op) || !n->per_rank) continue;
    if (prev != DR_NONE) dr_graph_add_after(graph, prev, i, n->loc);
    prev = i;
  }
}

/* Parses from `fp` when not NULL, else from yaml[0..len); then the passes,
 * up to `dump_after` when not NULL (dumping into `dump` there). */
static DrGraph *load(const char *name, const char *yaml, gsize len, FILE *fp, const char *dump_after,
                     GString *dump, DrDiags *diags, GError **error) {
  g_autoptr(DrGraph) graph = dr_graph_new();
  graph->rank = load_rank;
  graph->run.nranks = load_nranks;
  graph->local_rank = load_local_rank;
  /* In a job, each rank drives the GPU of its rank on its machine unless
   * run.device (or --device) says otherwise (docs/multi-gpu.md). */
  if (load_nranks > 1) graph->run.device = (gint32)load_local_rank;
  dr__graph_register_builtins(graph);
  gboolean ok = fp != NULL ? dr_parse_pipeline_file(graph, name, fp, diags)
                           : dr_parse_pipeline(graph, name, yaml, len, diags);
  if (ok) chain_rank_collectives(graph);
  /* The invariants (I5: one alloc and one free per buffer) hold only once
   * the lifetimes pass has rejected double allocs and frees: the pass
   * table checks them after each pass, not here. */
  /* The shared libraries it names (host functions, host twins), then the
   * kernels' shape rules and the init files, after a clean parse and
   * before the dependency passes: a bad call is the user's first problem. */
  /* Parameters (lib/params.h): every slice proved over the declared
   * ranges; the kernels' rules checked at the current values; the hazard
   * pass run on each slice's widest extent, then the current values
   * back. Host functions' and twins' libraries opened (lib/hostlib.c). */
  ok = ok && dr__params_prove(graph, diags);
  if (ok && !dr__params_apply(graph, NULL, error)) return NULL;
  if (ok) ok = dr__host_libs_resolve(graph, diags) & dr__pipeline_checks(graph, diags);
  if (ok) dr__params_widen(graph);
  ok = ok && dr_passes_run_dump(graph, diags, dump_after, dump);
  if (ok && !dr__params_apply(graph, NULL, error)) return NULL;
  if (!ok) {
    dr_diags_to_error(diags, error);
    return NULL;
  }
  return g_steal_pointer(&graph);
}

static const char *io_reason(int err) { return g_strerror(err); }

DrGraph *dr__load_file_dump(const char *path, const char *dump_after, GString *dump, DrDiags *diags,
                            GError **error) {
  g_return_val_if_fail(path != NULL && diags != NULL, NULL);
  GStatBuf st;
  if (g_stat(path, &st) != 0) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: error: cannot read: %s", path, io_reason(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: error: cannot read: %s", path, io_reason(EISDIR));
    return NULL;
  }
  if ((guint64)st.st_size > DR_PARSE_MAX_FILE_BYTES) {
    /* The location's file must outlive diags: the caller's path does. */
    dr_diags_error(diags, (DrLoc){path, 1, 1},
                   "file too large: %" G_GUINT64_FORMAT " bytes (the limit is 1 GiB)", (guint64)st.st_size);
    dr_diags_to_error(diags, error);
    return NULL;
  }
  FILE *fp = g_fopen(path, "rb");
  if (fp == NULL) {
    g_set_error(error, DR_ERROR, DR_ERROR_IO, "%s: error: cannot read: %s", path, io_reason(errno));
    return NULL;
  }
  DrGraph *g = load(path, NULL, 0, fp, dump_after, dump, diags, error);
  fclose(fp);
  return g;
}

DrGraph *dr_load_file(const char *path, DrDiags *diags, GError **error) {
  return dr__load_file_dump(path, NULL, NULL, diags, error);
}

DrGraph *dr_load_string(const char *name, const char *yaml, gsize len, DrDiags *diags, GError **error) {
  g_return_val_if_fail(name != NULL && yaml != NULL && diags != NULL, NULL);
  return load(name, yaml, len, NULL, NULL, NULL, diags, error);
}
