/* names.c: the name tables of names.h and of the IR's own lists
 * (graph.h: host functions, edge kinds, init kinds), each built from its
 * X-macro list. Lookups by name are linear scans of lists of at most a
 * dozen entries. */
#include "ir/names.h"

#include <string.h>

#include "ir/graph.h"

static const struct {
  const char *name;
  guint size;
} elem_info[] = {
#define DR_X(e, s, n) {s, n},
    DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
};

guint dr_elem_size(DrElemType type) {
  g_return_val_if_fail(type < DR_ELEM_N_TYPES, 1);
  return elem_info[type].size;
}

const char *dr_elem_name(DrElemType type) {
  g_return_val_if_fail(type < DR_ELEM_N_TYPES, "?");
  return elem_info[type].name;
}

gboolean dr_elem_from_name(const char *name, DrElemType *out) {
  for (guint i = 0; i < DR_ELEM_N_TYPES; i++)
    if (strcmp(name, elem_info[i].name) == 0) {
      *out = (DrElemType)i;
      return TRUE;
    }
  return FALSE;
}

static const struct {
  const char *name;
  gboolean reads, writes;
} access_info[] = {
#define DR_X(e, s, r, w) {s, r, w},
    DR_ACCESS_MODE_LIST(DR_X)
#undef DR_X
};

const char *dr_access_mode_name(DrAccessMode mode) {
  g_return_val_if_fail(mode < DR_ACCESS_N_MODES, "?");
  return access_info[mode].name;
}

gboolean dr_access_mode_from_name(const char *name, DrAccessMode *out) {
  for (guint i = 0; i < DR_ACCESS_N_MODES; i++)
    if (strcmp(name, access_info[i].name) == 0) {
      *out = (DrAccessMode)i;
      return TRUE;
    }
  return FALSE;
}

gboolean dr_access_reads(DrAccessMode mode) { return access_info[mode].reads; }
gboolean dr_access_writes(DrAccessMode mode) { return access_info[mode].writes; }

DR_DEFINE_NAME_TABLE(DrOp, DR_OP_LIST, op, DR_N_OPS, dr_op_name, dr_op_from_name)
DR_DEFINE_NAME_TABLE(DrReduceOp, DR_REDUCE_LIST, reduce, DR_N_REDUCES, dr_reduce_name, dr_reduce_from_name)
DR_DEFINE_NAME_TABLE(DrPriority, DR_PRIORITY_LIST, priority, DR_N_PRIORITIES, dr_priority_name,
                     dr_priority_from_name)
DR_DEFINE_NAME_TABLE(DrWhere, DR_WHERE_LIST, where, DR_N_WHERES, dr_where_name, dr_where_from_name)
DR_DEFINE_NAME_TABLE(DrMode, DR_MODE_LIST, mode, DR_N_MODES, dr_mode_name, dr_mode_from_name)
DR_DEFINE_NAME_TABLE(DrFallback, DR_FALLBACK_LIST, fallback, DR_N_FALLBACKS, dr_fallback_name,
                     dr_fallback_from_name)
DR_DEFINE_NAME_TABLE(DrBackendKind, DR_BACKEND_LIST, backend, DR_N_BACKENDS, dr_backend_kind_name,
                     dr_backend_kind_from_name)
DR_DEFINE_NAME_TABLE(DrTimingMode, DR_TIMING_LIST, timing, DR_N_TIMINGS, dr_timing_mode_name,
                     dr_timing_mode_from_name)
DR_DEFINE_NAME_TABLE(DrVerified, DR_VERIFIED_LIST, verified, G_N_ELEMENTS(verified_names), dr_verified_name,
                     dr_verified_from_name)
DR_DEFINE_NAME_TABLE(DrDotDetail, DR_DOT_DETAIL_LIST, dot_detail, DR_N_DOT_DETAILS, dr_dot_detail_name,
                     dr_dot_detail_from_name)
DR_DEFINE_NAME_TABLE(DrHostFn, DR_HOST_FN_LIST, host_fn, DR_N_HOST_FNS, dr_host_fn_name, dr_host_fn_from_name)
DR_DEFINE_NAME_TABLE(DrEdgeKind, DR_EDGE_KIND_LIST, edge_kind, G_N_ELEMENTS(edge_kind_names),
                     dr_edge_kind_name, dr_edge_kind_from_name)
DR_DEFINE_NAME_TABLE(DrInitKind, DR_INIT_LIST, init, G_N_ELEMENTS(init_names), dr_init_name,
                     dr_init_from_name)

/* "'a', 'b' or 'c'" over names[0..n), built once into *cache. */
static const char *choices(const char *const *names, guint n, gsize *cache) {
  if (g_once_init_enter(cache)) {
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
      g_string_append_printf(s, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " : ", ", names[i]);
    g_once_init_leave(cache, (gsize)g_string_free(s, FALSE));
  }
  return (const char *)*cache;
}

const char *dr_mode_choices(void) {
  static gsize cache = 0;
  return choices(mode_names, DR_N_MODES, &cache);
}

const char *dr_fallback_choices(void) {
  static gsize cache = 0;
  return choices(fallback_names, DR_N_FALLBACKS, &cache);
}

const char *dr_where_choices(void) {
  static gsize cache = 0;
  return choices(where_names, DR_N_WHERES, &cache);
}
