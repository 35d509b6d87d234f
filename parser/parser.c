/* parser.c: the pipeline parser's driver (parser.h): it streams the
 * document, dispatches each top-level key to its section (sections.c) or,
 * for `nodes:`, each entry to nodes.c, and finishes with the checks that
 * need the whole file. It converts no value itself beyond `dagrun` and
 * `name`. Files: values <- sections, nodes <- parser; no file calls back
 * into the one that calls it.
 *
 * The top-level mapping and the `nodes:` mapping are streamed: each entry
 * is built as a small tree (events.c), converted and dropped. Nodes need
 * the buffers and kernels they name, so when a quick scan of the text
 * finds `buffers:` or `kernels:` after `nodes:`, the node trees are held
 * until the end of the document instead (correct, but more memory).
 * Cost: linear in the file, plus foreach expansion. */
#include "parser/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the top level ----------------------------------------------------- */

#define TOP_KEY_LIST(X) \
  X(DAGRUN, "dagrun")   \
  X(NAME, "name")       \
  X(RUN, "run")         \
  X(MEMORY, "memory")   \
  X(PARAMS, "params")   \
  X(BUFFERS, "buffers") \
  X(KERNELS, "kernels") \
  X(NODES, "nodes")

enum {
#define X(e, s) TOP_##e,
  TOP_KEY_LIST(X)
#undef X
      TOP_N_KEYS
};
static const char *const top_keys[] = {
#define X(e, s) s,
    TOP_KEY_LIST(X)
#undef X
};

typedef struct {
  DrLoc seen[TOP_N_KEYS]; /* line 0: not seen */
  gboolean defer_nodes;
  gboolean not_a_map; /* the document is no mapping: nothing is missing */
} Top;

/* Takes references to key and value when it must hold them. The node's
 * text ends at `to` (line 0: at the end of the entry being read), which
 * scopes the aliases that its alias notes look at. */
static void node_entry(DrParse *p, Top *top, DrYNode *key, DrYNode *value, DrLoc to) {
  const GArray *uses = dr__yreader_entry_aliases(p->reader);
  if (top->defer_nodes) {
    g_ptr_array_add(p->deferred, dr__ynode_ref(key));
    g_ptr_array_add(p->deferred, dr__ynode_ref(value));
    dr__parse_alias_uses_in(uses, DR_LOC(p, key), to, p->deferred_uses);
    g_array_append_val(p->deferred_use_ends, p->deferred_uses->len);
    return;
  }
  guint first = dr_diags_len(p->diags);
  dr__parse_node_entry(p, key, value);
  dr__parse_alias_notes(p, first, DR_LOC(p, key), to, (const DrYAliasUse *)(gconstpointer)uses->data,
                        uses->len);
}

/* The text of map entry i ends where entry i+1 starts (the last: no end). */
static DrLoc entry_end(DrParse *p, const DrYNode *map, guint i) {
  return i + 1 < map->len ? DR_LOC(p, dr_ynode_key(map, i + 1)) : DR_LOC_NONE;
}

static void top_section(DrParse *p, Top *top, int idx, DrYNode *v) {
  switch (idx) {
    case TOP_DAGRUN: {
      gint64 version;
      if (dr__parse_int(p, "top level", "dagrun", v, NULL, G_MININT64, G_MAXINT64, &version) && version != 1)
        dr_diags_error(p->diags, DR_LOC(p, v),
                       "unsupported format version %" G_GINT64_FORMAT " (this dagrun reads 'dagrun: 1')",
                       version);
      break;
    }
    case TOP_NAME: {
      g_autofree char *name = NULL;
      if (dr__parse_string(p, "top level", "name", v, NULL, &name)) p->g->name = dr_graph_intern(p->g, name);
      break;
    }
    case TOP_RUN:
      dr__parse_run(p, v);
      break;
    case TOP_MEMORY:
      dr__parse_memory(p, v);
      break;
    case TOP_PARAMS:
      dr__parse_params(p, v,
                       top->seen[TOP_BUFFERS].line != 0 || top->seen[TOP_KERNELS].line != 0 ||
                           top->seen[TOP_NODES].line != 0);
      break;
    case TOP_BUFFERS:
      dr__parse_buffers(p, v);
      break;
    case TOP_KERNELS:
      dr__parse_kernels(p, v);
      break;
    case TOP_NODES:
      if (dr__ynode_is_null(v)) {
        dr__parse_error_at(p, v, "top level", "nodes",
                           "expected a mapping of node ids to nodes, got empty (a pipeline without nodes "
                           "writes 'nodes: {}')");
        break;
      }
      if (!dr__parse_expect_map(p, "top level", "nodes", v)) break;
      for (guint i = 0; i < v->len; i++)
        node_entry(p, top, dr_ynode_key(v, i), dr_ynode_value(v, i), entry_end(p, v, i));
      break;
  }
}

/* Registers a top-level key; FALSE (reported) when unknown or repeated. */
static int top_key(DrParse *p, Top *top, const DrYNode *key) {
  int idx = dr__parse_key(p, "top level", key, top_keys, TOP_N_KEYS);
  if (idx < 0) return -1;
  if (top->seen[idx].line != 0) {
    dr_diags_error(p->diags, DR_LOC(p, key), "duplicate key '%s'", key->u.text);
    dr_diags_note(p->diags, top->seen[idx], "'%s' first appears here", key->u.text);
    return -1;
  }
  top->seen[idx] = DR_LOC(p, key);
  return idx;
}

/* Keys of streamed mappings are built alone, so check here what events.c
 * checks inside a tree: a key must be a scalar. */
static gboolean scalar_key(DrParse *p, const DrYNode *key) {
  if (key->kind == DR_Y_SCALAR) return TRUE;
  dr_diags_error(p->diags, DR_LOC(p, key), "a mapping key must be a scalar, not %s",
                 dr__ynode_kind_name(key));
  return FALSE;
}

/* Streams `nodes:` entry by entry (the mapping start is consumed). */
static void stream_nodes(DrParse *p, Top *top) {
  DrYEvent ev;
  while (dr__yreader_next(p->reader, &ev) && ev.type != DR_YEV_MAP_END) {
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) key = dr__yreader_build(p->reader, &ev);
    if (key == NULL || !dr__yreader_next(p->reader, &ev)) break;
    g_autoptr(DrYNode) value = dr__yreader_build(p->reader, &ev);
    if (value == NULL) break;
    if (!scalar_key(p, key)) continue;
    if (strcmp(key->u.text, "<<") == 0 && key->plain) {
      dr_diags_error(p->diags, DR_LOC(p, key),
                     "nodes: merge keys '<<' are not supported directly under 'nodes:'");
      continue;
    }
    node_entry(p, top, key, value, DR_LOC_NONE);
  }
}

/* Streams the top-level mapping (its start is consumed). */
static void stream_root(DrParse *p, Top *top) {
  DrYEvent ev;
  while (dr__yreader_next(p->reader, &ev) && ev.type != DR_YEV_MAP_END) {
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) key = dr__yreader_build(p->reader, &ev);
    if (key == NULL || !dr__yreader_next(p->reader, &ev)) break;
    int idx = scalar_key(p, key) ? top_key(p, top, key) : -1;
    if (idx == TOP_NODES && ev.type == DR_YEV_MAP_START && ev.anchor == NULL) {
      stream_nodes(p, top);
      continue;
    }
    if (idx < 0) {
      dr__yreader_skip(p->reader, &ev);
      continue;
    }
    g_autoptr(DrYNode) value = dr__yreader_build(p->reader, &ev);
    if (value == NULL) break;
    top_section(p, top, idx, value);
  }
}

/* Finds a top-level key at the start of a line; returns its offset or -1. */
static gssize find_top_key(const char *yaml, gsize len, const char *key) {
  gsize kl = strlen(key);
  for (gsize i = 0; i + kl <= len;) {
    if ((i == 0 || yaml[i - 1] == '\n') && memcmp(yaml + i, key, kl) == 0) return (gssize)i;
    const char *nl = memchr(yaml + i, '\n', len - i);
    if (nl == NULL) break;
    i = (gsize)(nl - yaml) + 1;
  }
  return -1;
}

static void parse_root_tree(DrParse *p, Top *top, DrYNode *root) {
  if (root->kind != DR_Y_MAP) {
    dr_diags_error(p->diags, DR_LOC(p, root), "the top level must be a mapping with 'dagrun: 1', not %s",
                   dr__ynode_kind_name(root));
    top->not_a_map = TRUE;
    return;
  }
  for (guint i = 0; i < root->len; i++) {
    int idx = top_key(p, top, dr_ynode_key(root, i));
    if (idx >= 0) top_section(p, top, idx, dr_ynode_value(root, i));
  }
}

/* Whether `nodes:` must wait for buffers:/kernels: that come after it, from
 * the line offsets of the three keys (-1: not at the start of a line). */
static gboolean must_defer(gssize nodes_at, gssize buffers_at, gssize kernels_at) {
  return nodes_at < 0 || buffers_at > nodes_at || kernels_at > nodes_at;
}

/* must_defer for a file, by one pass over its lines; rewinds it. */
static gboolean must_defer_file(FILE *fp) {
  gssize at[3] = {-1, -1, -1};
  static const char *const keys[3] = {"nodes:", "buffers:", "kernels:"};
  char buf[4096];
  gssize line = 0;
  gboolean line_start = TRUE;
  while (fgets(buf, sizeof buf, fp) != NULL) {
    if (line_start)
      for (int k = 0; k < 3; k++)
        if (at[k] < 0 && strncmp(buf, keys[k], strlen(keys[k])) == 0) at[k] = line;
    gsize n = strlen(buf);
    line_start = n > 0 && buf[n - 1] == '\n';
    if (line_start) line++;
  }
  rewind(fp);
  return must_defer(at[0], at[1], at[2]);
}

static gboolean parse(DrGraph *graph, const char *file, const char *yaml, gsize len, FILE *fp,
                      DrDiags *diags) {
  guint errors_before = dr_diags_n_errors(diags);
  DrParse pp = {.g = graph, .top = graph, .diags = diags};
  DrParse *p = &pp;
  graph->file = dr_graph_intern(graph, file);
  /* Diagnostics outlive a graph that failed to load: their file name is
   * interned for the process (one string per pipeline file). */
  p->file = g_intern_string(file);
  g_autofree char *dir = g_path_get_dirname(file);
  graph->base_dir = dr_graph_intern(graph, dir);
  g_autofree char *base = g_path_get_basename(file);
  char *dot = strrchr(base, '.');
  if (dot != NULL && dot != base) *dot = '\0';
  graph->name = dr_graph_intern(graph, base);
  if (fp == NULL && len > DR_PARSE_MAX_FILE_BYTES) {
    dr_diags_error(diags, (DrLoc){p->file, 1, 1},
                   "file too large: %" G_GSIZE_FORMAT " bytes (the limit is 1 GiB)", len);
    return FALSE;
  }
  p->values_left = DR_PARSE_MAX_EXPANDED_VALUES;
  p->afters = g_array_new(FALSE, FALSE, sizeof(DrPendingAfter));
  p->deferred = g_ptr_array_new_with_free_func((GDestroyNotify)dr__ynode_unref);
  p->deferred_uses = g_array_new(FALSE, FALSE, sizeof(DrYAliasUse));
  p->deferred_use_ends = g_array_new(FALSE, FALSE, sizeof(guint));
  dr_build_init(&p->build, graph, diags);
  p->arg_what = g_string_new(NULL);
  p->arg_key = g_string_new(NULL);
  p->rank_vars[0] = (DrVar){"rank", graph->rank};
  p->rank_vars[1] = (DrVar){"nranks", graph->run.nranks};
  p->rank_vars[2] = (DrVar){"local_rank", graph->local_rank};
  p->rank_env = (DrEnv){p->rank_vars, 3, NULL};
  p->rank_only_env = p->rank_env;
  p->param_notes = g_array_new(FALSE, FALSE, sizeof(DrParamNote));
  dr__params_env_init(p);
  p->other_rank_ids = g_hash_table_new(g_str_hash, g_str_equal);
  Top top = {0};
  if (fp != NULL) {
    top.defer_nodes = must_defer_file(fp);
    p->reader = dr__yreader_new_file(p->file, fp, diags);
  } else {
    top.defer_nodes = must_defer(find_top_key(yaml, len, "nodes:"), find_top_key(yaml, len, "buffers:"),
                                 find_top_key(yaml, len, "kernels:"));
    p->reader = dr__yreader_new(p->file, yaml, len, diags);
  }

  DrYEvent ev;
  DrLoc root_loc = {p->file, 1, 1};
  if (!dr__yreader_next(p->reader, &ev)) {
    if (!dr__yreader_failed(p->reader))
      dr_diags_error(diags, root_loc, "empty pipeline: expected a mapping that starts with 'dagrun: 1'");
    top.not_a_map = TRUE;
  } else if (ev.type == DR_YEV_MAP_START && ev.anchor == NULL) {
    root_loc = (DrLoc){p->file, ev.line, ev.col};
    stream_root(p, &top);
  } else {
    root_loc = (DrLoc){p->file, ev.line, ev.col};
    dr__yreader_entry_begin(p->reader);
    g_autoptr(DrYNode) root = dr__yreader_build(p->reader, &ev);
    if (root != NULL) parse_root_tree(p, &top, root);
  }
  if (!dr__yreader_failed(p->reader)) {
    if (dr__yreader_next(p->reader, &ev))
      dr_diags_error(diags, (DrLoc){p->file, ev.line, ev.col},
                     "unexpected content after the top-level mapping");
  }
  if (!dr__yreader_failed(p->reader) && !top.not_a_map) {
    if (top.seen[TOP_DAGRUN].line == 0)
      dr_diags_error(diags, root_loc,
                     "top level: missing key 'dagrun' (the format version: write 'dagrun: 1')");
    if (top.seen[TOP_NODES].line == 0) dr__parse_missing(p, root_loc, "top level", "nodes");
    for (guint i = 0; i + 1 < p->deferred->len; i += 2) {
      guint first = dr_diags_len(diags);
      dr__parse_node_entry(p, p->deferred->pdata[i], p->deferred->pdata[i + 1]);
      guint from = i == 0 ? 0 : g_array_index(p->deferred_use_ends, guint, i / 2 - 1);
      guint to = g_array_index(p->deferred_use_ends, guint, i / 2);
      dr__parse_alias_notes(p, first, DR_LOC_NONE, DR_LOC_NONE,
                            to > from ? &g_array_index(p->deferred_uses, DrYAliasUse, from) : NULL,
                            to - from);
    }
    dr__parse_resolve_afters(p);
    dr_build_check_whole_run_buffers(p->g, p->diags);
  }
  dr__yreader_free(p->reader);
  g_ptr_array_unref(p->deferred);
  g_array_unref(p->deferred_uses);
  g_array_unref(p->deferred_use_ends);
  g_array_unref(p->afters);
  dr_build_clear(&p->build);
  g_string_free(p->arg_what, TRUE);
  g_string_free(p->arg_key, TRUE);
  g_hash_table_unref(p->other_rank_ids);
  g_array_unref(p->param_notes);
  return dr_diags_n_errors(diags) == errors_before;
}

gboolean dr_parse_pipeline(DrGraph *graph, const char *file, const char *yaml, gsize len, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && file != NULL && yaml != NULL && diags != NULL, FALSE);
  return parse(graph, file, yaml, len, NULL, diags);
}

gboolean dr_parse_pipeline_file(DrGraph *graph, const char *file, FILE *fp, DrDiags *diags) {
  g_return_val_if_fail(graph != NULL && file != NULL && fp != NULL && diags != NULL, FALSE);
  return parse(graph, file, NULL, 0, fp, diags);
}
