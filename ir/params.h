/* params.h: run-time parameters of a pipeline (`params:`), as the IR
 * holds them: the declarations with their ranges and current values, and
 * every place a value of the graph depends on them (a use), kept as the
 * expression text it was written as, so that a new value is evaluated per
 * run instead of folded at load time.
 *
 * This is data only: evaluating a use needs the expression language
 * (parser/expr.h), which the IR does not depend on; lib/params.c
 * evaluates, checks ranges and patches the graph. Not here: how a backend
 * follows a change (the backends' args_changed).
 *
 * A use patches exactly one thing of one node: an access's [begin, end)
 * (a slice of a kernel argument, a copy's src or dst, a memset's dst), a
 * scalar argument, a memset's value, or a top-level `repeat:` loop's
 * count (a counted loop, DrLoop.counted). Its `text` is the YAML scalar as
 * written (before `{expr}` substitution); the loop and rank variables it
 * was expanded with are a snapshot (var_first .. + n_vars in
 * DrGraph.param_vars), so evaluating it again with other parameter
 * values gives what the parser would have built with those values. */
#ifndef DAGRUN_IR_PARAMS_H
#define DAGRUN_IR_PARAMS_H

#include <glib.h>

#include "ir/diag.h"

G_BEGIN_DECLS

/* The most parameters a pipeline declares (a use keeps them as a mask). */
#define DR_MAX_RUN_PARAMS 64

typedef enum { DR_RUN_PARAM_INT, DR_RUN_PARAM_FLOAT } DrRunParamType;

/* One declared parameter. Integers use i_*, floats f_*; has_min/has_max:
 * whether the file gave the bound (else the type's whole range). The
 * current value is what the next run uses (the default until set). */
typedef struct {
  const char *name; /* interned */
  DrLoc loc;        /* its key in `params:` */
  DrRunParamType type;
  gboolean has_min, has_max;
  gint64 i_def, i_min, i_max, i;
  double f_def, f_min, f_max, f;
  /* The values the graph's nodes hold now (the last dr__params_apply):
   * the next run patches what differs from them. */
  gint64 i_applied;
  double f_applied;
} DrRunParam;

/* X(ENUM_SUFFIX, spelling): what a use patches. */
#define DR_PARAM_USE_LIST(X) \
  X(ACCESS, "slice")         \
  X(ARG, "argument")         \
  X(MEMSET_VALUE, "value")   \
  X(LOOP_COUNT, "repeat")

typedef enum {
#define DR_X(e, s) DR_PARAM_USE_##e,
  DR_PARAM_USE_LIST(DR_X)
#undef DR_X
} DrParamUseKind;

/* One parameter-dependent value of node `node`: access index `index`
 * (DR_PARAM_USE_ACCESS, an index into DrGraph.accesses), argument index
 * `index` (DR_PARAM_USE_ARG, into DrGraph.args), the memset's value, or
 * the count of loop `index` (DR_PARAM_USE_LOOP_COUNT, into DrGraph.loops;
 * `node` is the loop's node).
 * `params`: bit k set when parameter k is read. hull_begin/hull_end
 * (ACCESS only): the extent the hazard pass orders by, the union of the
 * slice over every value in range (or the whole buffer when that cannot
 * be enumerated; lib/params.c). fixed_begin (ACCESS only): the slice
 * starts at hull_begin at every value in range (proved by enumeration;
 * FALSE when the range was not enumerated), so only its end moves: its
 * pointer is the same for every value; least_end (with fixed_begin) the
 * least end over the range, so the slice spans least_end - hull_begin to
 * hull_end - hull_begin elements. */
typedef struct {
  DrParamUseKind kind;
  guint32 node;
  guint32 index;
  const char *text; /* interned, as written */
  DrLoc loc;
  guint32 var_first, n_vars;
  guint64 params;
  guint64 hull_begin, hull_end;
  gboolean fixed_begin;
  guint64 least_end;
} DrParamUse;

G_END_DECLS

#endif
