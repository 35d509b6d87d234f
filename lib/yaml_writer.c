/* yaml_writer.c: DrGraph -> pipeline YAML (yaml_writer.h).
 *
 * One flow mapping per buffer, kernel and node, in the graph's order, so
 * the reloaded graph has the same ids in the same program order. Every
 * string is written double-quoted with YAML escapes; floats with 17
 * significant digits so they read back bit for bit; slices always with
 * both bounds. Node arguments are written by parameter name, including the
 * defaults the parser filled in for optional scalars (they read back to
 * the same values). Explicit `after:` entries come from graph->afters, the
 * parser's already-expanded prefix matches. Linear in the graph's size. */
#include "lib/yaml_writer.h"

#include "ir/loops.h"

#include "report/json.h"

#include <math.h>
#include <string.h>

/* A double-quoted scalar: a JSON string is one (YAML 1.2 reads every JSON
 * escape), so the one JSON escaper serves. */
static void put_str(GString *out, const char *s) { dr__json_append_string(out, s); }

static void put_path(GString *out, const char *path) {
  g_autofree char *abs = g_canonicalize_filename(path, NULL);
  put_str(out, abs);
}

static void put_float(GString *out, double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  g_string_append(out, buf);
  /* Keep it a float to the reader: 2 -> 2.0. */
  if (strpbrk(buf, ".eEn") == NULL) g_string_append(out, ".0");
}

/* The parameter use (ir/params.h) of `kind` patching `index` (an access,
 * an argument or, for a memset's value, the node), or NULL: a value
 * written from a parameter is written as its expression. */
static const DrParamUse *param_use(const DrGraph *g, DrParamUseKind kind, guint32 index) {
  for (guint i = 0; i < g->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    if (u->kind == kind && (kind == DR_PARAM_USE_MEMSET_VALUE ? u->node : u->index) == index) return u;
  }
  return NULL;
}

static void put_slice(GString *out, const DrGraph *g, const DrAccess *a) {
  const DrParamUse *u =
      param_use(g, DR_PARAM_USE_ACCESS, (guint32)(a - (const DrAccess *)(const void *)g->accesses->data));
  if (u != NULL) {
    put_str(out, u->text);
    return;
  }
  g_autofree char *s = g_strdup_printf("%s[%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT "]",
                                       dr_graph_buffer(g, a->buffer)->name, a->begin, a->end);
  put_str(out, s);
}

static void put_dim3(GString *out, const char *key, const guint32 v[3]) {
  g_string_append_printf(out, ", %s: [%u, %u, %u]", key, v[0], v[1] ? v[1] : 1, v[2] ? v[2] : 1);
}

static void write_buffers(const DrGraph *g, GString *out) {
  if (dr_graph_n_buffers(g) == 0) return;
  g_string_append(out, "buffers:\n");
  for (DrId i = 0; i < dr_graph_n_buffers(g); i++) {
    const DrBuffer *b = dr_graph_buffer(g, i);
    g_string_append(out, "  ");
    put_str(out, b->name);
    g_string_append_printf(out, ": {type: %s, count: %" G_GUINT64_FORMAT ", where: %s", dr_elem_name(b->type),
                           b->count, dr_where_name(b->where));
    if (b->device_set) g_string_append_printf(out, ", device: %d", b->device);
    switch (b->init) {
      case DR_INIT_NONE:
        break;
      case DR_INIT_ZEROS:
        g_string_append(out, ", init: zeros");
        break;
      case DR_INIT_IOTA:
        g_string_append(out, ", init: iota");
        break;
      case DR_INIT_RANDOM:
        g_string_append_printf(out, ", init: {random: %" G_GUINT64_FORMAT "}", b->init_seed);
        break;
      case DR_INIT_FILE:
        g_string_append(out, ", init: {file: ");
        put_path(out, b->init_path);
        g_string_append_c(out, '}');
        break;
    }
    if (b->save_path) {
      g_string_append(out, ", save: ");
      put_path(out, b->save_path);
    }
    if (b->scratch) g_string_append(out, ", scratch: true");
    if (b->param) {
      g_string_append(out, ", param: ");
      put_str(out, g_array_index(g->params, DrRunParam, b->param - 1).name);
    }
    if (b->verify == DR_VERIFY_SKIP) g_string_append(out, ", verify: skip");
    if (b->verify == DR_VERIFY_TOLERANCE) {
      /* %.17g: the tolerances read back as the same doubles. */
      char r[G_ASCII_DTOSTR_BUF_SIZE], a[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf(out, ", verify: {rtol: %s, atol: %s}",
                             g_ascii_formatd(r, sizeof r, "%.17g", b->verify_rtol),
                             g_ascii_formatd(a, sizeof a, "%.17g", b->verify_atol));
    }
    g_string_append(out, "}\n");
  }
}

/* A `lib:` path as the file's reader will resolve it: a bare name stays
 * the loader's, a path becomes absolute. */
static void put_lib(GString *out, const char *path) {
  if (strchr(path, '/') == NULL)
    put_str(out, path);
  else
    put_path(out, path);
}

/* `params:` entries (a kernel's or a host function's), flow style. */
static void put_params(GString *out, const DrParam *params, guint32 n) {
  g_string_append_c(out, '[');
  for (guint32 j = 0; j < n; j++) {
    const DrParam *p = &params[j];
    g_string_append(out, j ? ", {name: " : "{name: ");
    put_str(out, p->name);
    g_string_append_printf(out, ", type: \"%s%s\"", dr_elem_name(p->type), p->is_pointer ? "*" : "");
    if (p->is_pointer) g_string_append_printf(out, ", access: %s", dr_access_mode_name(p->access));
    g_string_append_c(out, '}');
  }
  g_string_append_c(out, ']');
}

static void write_kernels(const DrGraph *g, GString *out) {
  gboolean any = FALSE;
  for (DrId i = 0; i < g->kernels->len; i++) {
    const DrKernelDecl *k = dr_graph_kernel(g, i);
    if (k->origin != DR_KERNEL_USER) continue;
    if (!any) g_string_append(out, "kernels:\n");
    any = TRUE;
    g_string_append(out, "  ");
    put_str(out, k->name);
    g_string_append(out, ":\n");
    const char *keys[] = {"source", "ptx", "cubin", "fatbin"};
    const char *vals[] = {k->source, k->ptx, k->cubin, k->fatbin};
    for (guint j = 0; j < 4; j++) {
      if (vals[j] == NULL) continue;
      g_string_append_printf(out, "    %s: ", keys[j]);
      put_path(out, vals[j]);
      g_string_append_c(out, '\n');
    }
    if (k->n_include_dirs > 0) {
      g_string_append(out, "    include_dirs: [");
      for (guint32 j = 0; j < k->n_include_dirs; j++) {
        if (j) g_string_append(out, ", ");
        put_path(out, k->include_dirs[j]);
      }
      g_string_append(out, "]\n");
    }
    if (k->n_defines > 0) {
      g_string_append(out, "    defines: [");
      for (guint32 j = 0; j < k->n_defines; j++) {
        if (j) g_string_append(out, ", ");
        put_str(out, k->defines[j]);
      }
      g_string_append(out, "]\n");
    }
    g_string_append(out, k->name_expr ? "    name: " : "    entry: ");
    put_str(out, k->name_expr ? k->name_expr : k->entry ? k->entry : k->name);
    g_string_append(out, "\n    params:\n");
    for (guint32 j = 0; j < k->n_params; j++) {
      const DrParam *p = &k->params[j];
      g_string_append(out, "      - {name: ");
      put_str(out, p->name);
      g_string_append_printf(out, ", type: \"%s%s\"", dr_elem_name(p->type), p->is_pointer ? "*" : "");
      if (p->is_pointer) g_string_append_printf(out, ", access: %s", dr_access_mode_name(p->access));
      g_string_append(out, "}\n");
    }
    g_string_append(out, "    grid: {");
    if (k->grid.over != DR_NONE && k->grid.over < k->n_params) {
      g_string_append(out, "over: ");
      put_str(out, k->params[k->grid.over].name);
      g_string_append(out, ", ");
    }
    g_string_append_printf(out, "block: %u}\n", k->grid.block);
    if (k->twin_lib != NULL) {
      g_string_append(out, "    host_twin: {lib: ");
      put_lib(out, k->twin_path);
      g_string_append(out, ", fn: ");
      put_str(out, k->twin_fn);
      g_string_append(out, "}\n");
    }
  }
}

static void write_args(const DrGraph *g, const DrNode *n, const DrParam *params, guint32 n_params,
                       GString *out) {
  if (n->arg_count == 0) return;
  g_string_append(out, ", args: {");
  for (guint32 i = n->arg_first; i < n->arg_first + n->arg_count; i++) {
    const DrArg *a = dr_graph_arg(g, i);
    if (i > n->arg_first) g_string_append(out, ", ");
    put_str(out, a->param < n_params ? params[a->param].name : "?");
    g_string_append(out, ": ");
    switch (a->kind) {
      case DR_ARG_BUFFER:
        put_slice(out, g, dr_graph_access(g, a->v.access));
        break;
      case DR_ARG_INT:
      case DR_ARG_FLOAT: {
        const DrParamUse *u = param_use(g, DR_PARAM_USE_ARG, i);
        if (u != NULL)
          put_str(out, u->text);
        else if (a->kind == DR_ARG_INT)
          g_string_append_printf(out, "%" G_GINT64_FORMAT, a->v.i);
        else
          put_float(out, a->v.f);
        break;
      }
      case DR_ARG_STRING:
        put_str(out, a->v.s);
        break;
    }
  }
  g_string_append_c(out, '}');
}

static void write_node_value(const DrGraph *g, DrId id, gsize scope, GString *out);

/* A loop node's own keys and its bodies, as flow mappings of nodes whose
 * ids are written without the loop's scope ("LOOP/"). */
static void write_loop(const DrGraph *g, const DrLoop *l, GString *out) {
  g_string_append_printf(out, "{op: %s", l->kind == DR_LOOP_IF ? "if" : "loop");
  const DrParamUse *count =
      l->counted ? param_use(g, DR_PARAM_USE_LOOP_COUNT, dr_graph_node(g, l->node)->loop - 1) : NULL;
  if (count != NULL) {
    g_string_append(out, ", repeat: ");
    put_str(out, count->text);
  } else if (l->kind == DR_LOOP_REPEAT)
    g_string_append_printf(out, ", repeat: %" G_GUINT64_FORMAT, l->count);
  else {
    g_string_append_printf(out, ", %s: ", dr_loop_kind_name(l->kind));
    put_str(out, dr_graph_buffer(g, l->cond)->name);
  }
  gsize scope = strlen(l->id) + 1;
  for (int part = 0; part < 2; part++) {
    const DrGraph *body = part == 0 ? l->body : l->else_body;
    if (body == NULL) continue;
    g_string_append(out, part == 0 ? ", nodes: {" : ", else: {");
    for (DrId i = 0; i < dr_graph_n_nodes(body); i++) {
      if (i > 0) g_string_append(out, ", ");
      put_str(out, dr_graph_node(body, i)->id + scope);
      g_string_append(out, ": ");
      write_node_value(body, i, scope, out);
    }
    g_string_append_c(out, '}');
  }
}

/* A collective's keys: buffers (in place) or src and dst, each a list
 * (one per device) or one slice (per_rank), then reduce, root, peer. */
static void write_collective(const DrGraph *g, const DrNode *n, GString *out) {
  guint step = n->op == DR_OP_SEND || n->op == DR_OP_RECV ? 1 : 2;
  gboolean in_place = step == 2;
  for (guint32 i = 0; in_place && i < n->n_parts; i++) {
    const DrAccess *s = dr_graph_access(g, n->access_first + 2 * i), *d = s + 1;
    in_place = s->buffer == d->buffer && s->begin == d->begin && s->end == d->end;
  }
  static const char *const keys[2][2] = {{"src", "dst"}, {"buffers", NULL}};
  for (guint k = 0; k < step; k++) {
    const char *key = in_place ? keys[1][k] : step == 1 ? (n->op == DR_OP_SEND ? "src" : "dst") : keys[0][k];
    if (key == NULL) continue;
    g_string_append_printf(out, ", %s: %s", key, n->per_rank ? "" : "[");
    for (guint32 i = 0; i < n->n_parts; i++) {
      if (i) g_string_append(out, ", ");
      put_slice(out, g, dr_graph_access(g, n->access_first + step * i + k));
    }
    if (!n->per_rank) g_string_append_c(out, ']');
  }
  if (n->op == DR_OP_ALLREDUCE || n->op == DR_OP_REDUCE || n->op == DR_OP_REDUCESCATTER)
    g_string_append_printf(out, ", reduce: %s", dr_reduce_name(n->reduce));
  if (n->root >= 0) g_string_append_printf(out, ", root: %d", n->root);
  if (n->peer >= 0) g_string_append_printf(out, ", peer: %d", n->peer);
}

static void write_node(const DrGraph *g, DrId id, GString *out) {
  g_string_append(out, "  ");
  put_str(out, dr_graph_node(g, id)->id);
  g_string_append(out, ": ");
  write_node_value(g, id, 0, out);
  g_string_append_c(out, '\n');
}

/* The node's mapping; `scope`: the length of its body's "LOOP/" prefix,
 * left out of the ids of after: entries. */
static void write_node_value(const DrGraph *g, DrId id, gsize scope, GString *out) {
  const DrNode *n = dr_graph_node(g, id);
  const DrLoop *loop = n->loop ? dr_graph_node_loop(g, id) : NULL;
  if (loop != NULL)
    write_loop(g, loop, out);
  else
    g_string_append_printf(out, "{op: %s", dr_op_name(n->op));
  /* The loop variables a parameter's expression was expanded with, as a
   * foreach of one value each (the id is already the expanded one). */
  for (guint i = 0; i < g->param_uses->len; i++) {
    const DrParamUse *u = &g_array_index(g->param_uses, DrParamUse, i);
    if (u->node != id) continue;
    gboolean any = FALSE;
    for (guint32 k = 0; k < u->n_vars; k++) {
      const DrParamVar *v = &g_array_index(g->param_vars, DrParamVar, u->var_first + k);
      if (strcmp(v->name, "rank") == 0 || strcmp(v->name, "nranks") == 0 ||
          strcmp(v->name, "local_rank") == 0)
        continue;
      g_string_append_printf(out, "%s%s: [%" G_GINT64_FORMAT "]", any ? ", " : ", foreach: {", v->name,
                             v->value);
      any = TRUE;
    }
    if (any) g_string_append_c(out, '}');
    break;
  }
  const DrAccess *first = n->access_count ? dr_graph_access(g, n->access_first) : NULL;
  switch (loop != NULL ? DR_N_OPS : n->op) {
    case DR_OP_KERNEL: {
      const DrKernelDecl *k = dr_graph_kernel(g, n->kernel);
      g_string_append(out, ", kernel: ");
      put_str(out, k->name);
      write_args(g, n, k->params, k->n_params, out);
      if (n->grid[0]) put_dim3(out, "grid", n->grid);
      if (n->block[0]) put_dim3(out, "block", n->block);
      if (n->shared) g_string_append_printf(out, ", shared: %u", n->shared);
      break;
    }
    case DR_OP_COPY: {
      const DrAccess *src, *dst;
      dr_graph_copy_ends(g, n, &src, &dst);
      g_string_append(out, ", src: ");
      put_slice(out, g, src);
      g_string_append(out, ", dst: ");
      put_slice(out, g, dst);
      break;
    }
    case DR_OP_MEMSET:
      g_string_append(out, ", dst: ");
      put_slice(out, g, first);
      if (param_use(g, DR_PARAM_USE_MEMSET_VALUE, id) != NULL) {
        g_string_append(out, ", value: ");
        put_str(out, param_use(g, DR_PARAM_USE_MEMSET_VALUE, id)->text);
      } else {
        g_string_append_printf(out, ", value: %u", n->memset_value);
      }
      break;
    case DR_OP_ALLOC:
    case DR_OP_FREE:
      g_string_append(out, ", buffer: ");
      put_str(out, dr_graph_buffer(g, n->buffer)->name);
      break;
    case DR_OP_HOST: {
      if (n->callback) { /* one from a library: check_writable refuses the others */
        const DrCallback *cb = &g_array_index(g->callbacks, DrCallback, n->callback - 1);
        g_string_append(out, ", fn: {lib: ");
        put_lib(out, cb->path);
        g_string_append(out, ", symbol: ");
        put_str(out, cb->symbol);
        g_string_append(out, ", params: ");
        put_params(out, cb->params, cb->n_params);
        g_string_append_c(out, '}');
        write_args(g, n, cb->params, cb->n_params, out);
        break;
      }
      guint32 n_params;
      const DrParam *params = dr_host_fn_params(n->host_fn, &n_params);
      g_string_append_printf(out, ", fn: %s", dr_host_fn_name(n->host_fn));
      write_args(g, n, params, n_params, out);
      break;
    }
    case DR_OP_ALLREDUCE:
    case DR_OP_BROADCAST:
    case DR_OP_REDUCE:
    case DR_OP_ALLGATHER:
    case DR_OP_REDUCESCATTER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      write_collective(g, n, out);
      break;
    case DR_OP_NOOP:
    case DR_N_OPS:
      break;
  }
  if (n->priority != DR_PRIORITY_NORMAL)
    g_string_append_printf(out, ", priority: %s", dr_priority_name(n->priority));
  if (n->device >= 0) g_string_append_printf(out, ", device: %d", n->device);
  if (n->label) {
    g_string_append(out, ", label: ");
    put_str(out, n->label);
  }
  gboolean any = FALSE;
  for (guint i = 0; i < g->afters->len; i++) {
    const DrAfter *a = &g_array_index(g->afters, DrAfter, i);
    if (a->to != id) continue;
    g_string_append(out, any ? ", " : ", after: [");
    any = TRUE;
    put_str(out, dr_graph_node(g, a->from)->id + scope);
  }
  if (any) g_string_append_c(out, ']');
  g_string_append_c(out, '}');
}

/* The format reads {expr} in string values as an expression and has no
 * escape for a literal brace, so such a string cannot be written. */
static gboolean check_braces(const char *what, const char *s, GError **error) {
  if (s == NULL || strpbrk(s, "{}") == NULL) return TRUE;
  g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
              "%s: \"%s\" holds a brace, which the pipeline format would read as an {expression}", what, s);
  return FALSE;
}

/* FALSE with DR_ERROR_USAGE when YAML cannot say part of the graph (or of
 * a loop body). */
static gboolean check_writable(const DrGraph *graph, GError **error) {
  for (guint i = 0; i < dr_graph_n_loops(graph); i++) {
    const DrLoop *l = dr_graph_loop(graph, i);
    if (!check_writable(l->body, error) || (l->else_body && !check_writable(l->else_body, error)))
      return FALSE;
  }
  for (DrId i = 0; i < dr_graph_n_buffers(graph); i++) {
    const DrBuffer *b = dr_graph_buffer(graph, i);
    g_autofree char *what = g_strdup_printf("buffer '%s'", b->name);
    if (!check_braces(what, b->init_path, error) || !check_braces(what, b->save_path, error)) return FALSE;
  }
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++) {
    const DrNode *n = dr_graph_node(graph, i);
    g_autofree char *what = g_strdup_printf("node '%s'", n->id);
    if (!check_braces(what, n->label, error)) return FALSE;
    for (guint32 a = n->arg_first; a < n->arg_first + n->arg_count; a++) {
      const DrArg *arg = dr_graph_arg(graph, a);
      if (arg->kind == DR_ARG_STRING && !check_braces(what, arg->v.s, error)) return FALSE;
    }
    if (n->op == DR_OP_HOST && n->callback &&
        g_array_index(graph->callbacks, DrCallback, n->callback - 1).lib == NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE, "node '%s' calls a C function, which YAML cannot say",
                  n->id);
      return FALSE;
    }
    if (n->op == DR_OP_KERNEL && dr_graph_kernel(graph, n->kernel)->api_def != NULL) {
      g_set_error(error, DR_ERROR, DR_ERROR_USAGE,
                  "node '%s' runs kernel '%s', registered through the C API, which YAML cannot say", n->id,
                  dr_graph_kernel(graph, n->kernel)->name);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean dr_graph_write_yaml(const DrGraph *graph, GString *out, GError **error) {
  g_return_val_if_fail(graph != NULL && out != NULL, FALSE);
  if (!check_writable(graph, error)) return FALSE;
  const DrRunConfig *r = &graph->run;
  g_string_append(out, "dagrun: 1\nname: ");
  put_str(out, graph->name);
  g_string_append_printf(out, "\nrun: {mode: %s, iterations: %u, warmup: %u, device: %d",
                         dr_mode_name(r->mode), r->iterations, r->warmup, r->device);
  if (r->max_streams_set) g_string_append_printf(out, ", max_streams: %u", r->max_streams);
  if (r->fallback_streams)
    g_string_append_printf(out, ", fallback: %s", dr_fallback_name(DR_FALLBACK_STREAMS));
  if (r->device_loop) g_string_append(out, ", device_loop: true");
  if (r->issue_threads) g_string_append_printf(out, ", issue_threads: %u", r->issue_threads);
  if (r->graph_cache) g_string_append_printf(out, ", graph_cache: %u", r->graph_cache);
  for (guint32 i = 0; i < r->n_devices; i++)
    g_string_append_printf(out, "%s%d", i ? ", " : ", devices: [", r->devices[i]);
  if (r->n_devices) g_string_append_c(out, ']');
  g_string_append(out, "}\n");
  if (r->release_threshold_set || r->n_device_thresholds || r->memory_limit_set || r->reuse) {
    const char *sep = "";
    g_string_append(out, "memory: {");
    if (r->n_device_thresholds) {
      g_string_append(out, "release_threshold: {");
      for (guint32 i = 0; i < r->n_device_thresholds; i++)
        g_string_append_printf(out, "%s%d: %" G_GUINT64_FORMAT, i ? ", " : "", r->device_thresholds[i].device,
                               r->device_thresholds[i].bytes);
      g_string_append_c(out, '}');
      sep = ", ";
    } else if (r->release_threshold_set) {
      g_string_append_printf(out, "release_threshold: %" G_GUINT64_FORMAT, r->release_threshold);
      sep = ", ";
    }
    if (r->memory_limit_set) {
      g_string_append_printf(out, "%slimit: %" G_GUINT64_FORMAT, sep, r->memory_limit);
      sep = ", ";
    }
    if (r->reuse) g_string_append_printf(out, "%sreuse: auto", sep);
    g_string_append(out, "}\n");
  }
  if (graph->params->len > 0) {
    /* The current values are the defaults of the written pipeline. */
    g_string_append(out, "params:\n");
    for (guint i = 0; i < graph->params->len; i++) {
      const DrRunParam *rp = &g_array_index(graph->params, DrRunParam, i);
      g_string_append_printf(out, "  %s: {type: %s, default: ", rp->name,
                             rp->type == DR_RUN_PARAM_INT ? "int" : "float");
      if (rp->type == DR_RUN_PARAM_INT) {
        g_string_append_printf(out, "%" G_GINT64_FORMAT, rp->i);
        if (rp->has_min) g_string_append_printf(out, ", min: %" G_GINT64_FORMAT, rp->i_min);
        if (rp->has_max) g_string_append_printf(out, ", max: %" G_GINT64_FORMAT, rp->i_max);
      } else {
        put_float(out, rp->f);
        if (rp->has_min) g_string_append(out, ", min: "), put_float(out, rp->f_min);
        if (rp->has_max) g_string_append(out, ", max: "), put_float(out, rp->f_max);
      }
      g_string_append(out, "}\n");
    }
  }
  write_buffers(graph, out);
  write_kernels(graph, out);
  /* An empty 'nodes:' is null, which the parser refuses. */
  g_string_append(out, dr_graph_n_nodes(graph) > 0 ? "nodes:\n" : "nodes: {}\n");
  for (DrId i = 0; i < dr_graph_n_nodes(graph); i++) write_node(graph, i, out);
  return TRUE;
}
