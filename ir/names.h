/* names.h: every spelling of dagrun's enums, one table per X-macro list
 * (include/dagrun/types.h for the shared enums, ir/graph.h for the IR's
 * own): the YAML parser reads with the _from_name functions, and the dump,
 * the YAML writer, the reports and the command line write with the _name
 * ones, so a spelling exists once. Names only: no parsing, no messages. */
#ifndef DAGRUN_IR_NAMES_H
#define DAGRUN_IR_NAMES_H

#include <glib.h>

#include "include/dagrun/types.h"

G_BEGIN_DECLS

/* Defines `const char *to_name(Type)` and `gboolean from_name(const char *,
 * Type *)` over an X-macro list whose entries are X(ENUM_SUFFIX, spelling):
 * one table for both directions, so spellings cannot drift apart. Use it in
 * a .c file that includes <string.h>. */
#define DR_NAME_X(e, s) s,
#define DR_DEFINE_NAME_TABLE(Type, LIST, prefix, count, to_name, from_name) \
  static const char *const prefix##_names[] = {LIST(DR_NAME_X)};            \
  const char *to_name(Type v) {                                             \
    g_return_val_if_fail((guint)v < (count), "?");                          \
    return prefix##_names[v];                                               \
  }                                                                         \
  gboolean from_name(const char *name, Type *out) {                         \
    for (guint i = 0; i < (count); i++)                                     \
      if (strcmp(name, prefix##_names[i]) == 0) {                           \
        *out = (Type)i;                                                     \
        return TRUE;                                                        \
      }                                                                     \
    return FALSE;                                                           \
  }

/* Each `_name` returns the spelling (static storage; "?" for a value out
 * of range); each `_from_name` returns TRUE and sets *out when `name`
 * spells a value. */

/* Size in bytes and YAML spelling of an element type ("f32"). */
guint dr_elem_size(DrElemType type);
const char *dr_elem_name(DrElemType type);
gboolean dr_elem_from_name(const char *name, DrElemType *out);
const char *dr_access_mode_name(DrAccessMode mode);
gboolean dr_access_mode_from_name(const char *name, DrAccessMode *out);
gboolean dr_access_reads(DrAccessMode mode);
gboolean dr_access_writes(DrAccessMode mode);

const char *dr_op_name(DrOp op);
gboolean dr_op_from_name(const char *name, DrOp *out);
const char *dr_reduce_name(DrReduceOp r);
gboolean dr_reduce_from_name(const char *name, DrReduceOp *out);
const char *dr_priority_name(DrPriority p);
gboolean dr_priority_from_name(const char *name, DrPriority *out);
const char *dr_where_name(DrWhere where);
gboolean dr_where_from_name(const char *name, DrWhere *out);
const char *dr_mode_name(DrMode mode);
gboolean dr_mode_from_name(const char *name, DrMode *out);
const char *dr_fallback_name(DrFallback fallback);
gboolean dr_fallback_from_name(const char *name, DrFallback *out);
const char *dr_backend_kind_name(DrBackendKind kind);
gboolean dr_backend_kind_from_name(const char *name, DrBackendKind *out);
const char *dr_timing_mode_name(DrTimingMode mode);
gboolean dr_timing_mode_from_name(const char *name, DrTimingMode *out);
const char *dr_verified_name(DrVerified verified);
gboolean dr_verified_from_name(const char *name, DrVerified *out);
const char *dr_dot_detail_name(DrDotDetail detail);
gboolean dr_dot_detail_from_name(const char *name, DrDotDetail *out);

/* "'a', 'b' or 'c'" over a list's spellings, for "expected ..." messages
 * (static storage, built once per list, thread-safe). */
const char *dr_mode_choices(void);
const char *dr_fallback_choices(void);
const char *dr_where_choices(void);

G_END_DECLS

#endif
