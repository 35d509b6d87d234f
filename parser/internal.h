/* internal.h: what the parser's files share: the parse context, the
 * typed values of values.c, the sections of sections.c and the node entry
 * of nodes.c. The files depend in one direction: values <- sections,
 * nodes <- parser.c (the driver). Not for use outside parser/.
 *
 * Diagnostics name the thing and the key: every helper takes `what`
 * ("node 'scale0'", "buffer 'x'", "run") and the key's name, and writes
 * "WHAT, key 'KEY': PROBLEM" at the value's location. */
#ifndef DAGRUN_PARSER_INTERNAL_H
#define DAGRUN_PARSER_INTERNAL_H

#include <glib.h>

#include "ir/build.h"
#include "ir/graph.h"
#include "parser/events.h"
#include "parser/expr.h"
#include "parser/parser.h"

G_BEGIN_DECLS

/* An `after:` entry waiting for every node id to be known. */
typedef struct {
  DrId to;
  const char *name; /* interned; a trailing '*' is a prefix match */
  DrLoc loc;
} DrPendingAfter;

typedef struct {
  DrGraph *g;
  DrGraph *top; /* the pipeline's graph (g is a body's inside a loop): its params */
  DrDiags *diags;
  const char *file; /* interned */
  DrYReader *reader;
  guint64 n_nodes;           /* nodes after foreach expansion */
  guint64 values_left;       /* budget of values walked while expanding foreach */
  GArray *afters;            /* DrPendingAfter */
  GPtrArray *deferred;       /* key, value pairs of nodes seen before buffers:/kernels: */
  GArray *deferred_uses;     /* DrYAliasUse: the aliases of the deferred nodes, in order */
  GArray *deferred_use_ends; /* guint per deferred node: the end of its uses there */
  gboolean seen_buffers, seen_kernels, streaming_nodes;
  DrBuild build;               /* the IR builder; build.what is "node 'x'" of the node being converted */
  GString *arg_what, *arg_key; /* scratch: "node 'x', argument 'y'", "argument 'y'" */
  guint node_typos;            /* unknown keys of that node: they explain missing ones */
  char *scope;                 /* inside a loop body: "LOOP/" (nested "A/B/"); NULL at the top */
  /* `rank`, `nranks`, `local_rank` (from the graph), the outermost scope
   * of every expression; and the ids of the nodes `rank:` gave to other
   * ranks (interned), which `after:` may name without effect. */
  DrVar rank_vars[3];
  DrEnv rank_env;
  GHashTable *other_rank_ids;
  /* While a foreach group's nodes are converted: its variables (their
   * outer scope the enclosing group's, or rank_env), the base scope of
   * every entry inside, loop bodies included; NULL elsewhere. */
  const DrEnv *group_env;
  /* `params:` (params.c): the parameters as expression variables at
   * their current values (param_env, the outer scope of rank_env) and at
   * their max (param_max_env, for buffer sizes); the hook's bits; the
   * parameter reads noted since the node began (DrParamNote); what the
   * value being read is (DR_PARAM_CTX_*). rank_only_env: the rank
   * variables alone (foreach ranges, which parameters cannot set). */
  DrVar param_vars[DR_MAX_RUN_PARAMS], param_max_vars[DR_MAX_RUN_PARAMS];
  DrEnv param_env, param_max_env, rank_only_env;
  guint64 param_hits;
  GArray *param_notes;
  int param_ctx;
  guint param_errors_at; /* errors reported before the node began */
} DrParse;

/* What a value read under a parameter is, when its location alone does
 * not say (params.c). */
enum { DR_PARAM_CTX_NONE, DR_PARAM_CTX_MEMSET_VALUE };

/* A value that read parameters (mask `params`), waiting for its node. */
typedef struct {
  DrLoc loc;
  const char *text; /* interned: the scalar as written */
  guint64 params;
  int ctx;
  guint32 var_first, n_vars; /* the loop and rank variables, in DrGraph.param_vars */
} DrParamNote;

#define DR_LOC(p, n) dr__ynode_loc((n), (p)->file)

/* ---- values.c ---- */

/* Reports "WHAT, key 'KEY': MSG" (or "WHAT: MSG" when key is NULL) at v. */
void dr__parse_error_at(DrParse *p, const DrYNode *v, const char *what, const char *key, const char *msg);

/* Looks up `key` (a scalar node) in `names` (n entries). Returns its index,
 * or -1 after reporting "WHAT: unknown key 'K' (did you mean ...)". */
int dr__parse_key(DrParse *p, const char *what, const DrYNode *key, const char *const *names, guint n);

/* Each returns FALSE after reporting at the value when it has the wrong
 * type or is out of range. Text values go through `{expr}` substitution
 * with `env` (NULL: none). */
gboolean dr__parse_string(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                          char **out);
gboolean dr__parse_int(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                       gint64 min, gint64 max, gint64 *out);
gboolean dr__parse_size(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                        DrSizeClass cls, guint64 *out);
gboolean dr__parse_float(DrParse *p, const char *what, const char *key, const DrYNode *v, const DrEnv *env,
                         double *out);
/* Reports "WHAT: missing key 'KEY'" at `loc`. */
void dr__parse_missing(DrParse *p, DrLoc loc, const char *what, const char *key);
/* Reports "WHAT, key 'KEY': expected EXPECTED, got ..." at the value. */
void dr__parse_wrong_type(DrParse *p, const char *what, const char *key, const DrYNode *v,
                          const char *expected);

/* A mapping's entries checked against `names`: fills slots[i] with the
 * value of names[i] or NULL. Unknown keys are reported and counted: a
 * caller skips "missing key" errors when a typo already explains them. */
guint dr__parse_map_slots(DrParse *p, const char *what, const DrYNode *map, const char *const *names, guint n,
                          const DrYNode **slots);
/* TRUE when v is a mapping; else "expected a mapping" and FALSE. */
gboolean dr__parse_expect_map(DrParse *p, const char *what, const char *key, const DrYNode *v);

/* ---- aliases.c ---- */

/* Adds "in expansion of alias '*x' here" notes to the errors recorded
 * since diagnostic index `first` that lie in the value of one of the
 * n_uses aliases in `uses` written in [from, to) (to.line 0: no end), the
 * text of the item just converted. */
void dr__parse_alias_notes(DrParse *p, guint first, DrLoc from, DrLoc to, const DrYAliasUse *uses,
                           guint n_uses);
/* Appends to `out` the uses in `uses` written in [from, to): for an item
 * converted later (nodes held until buffers: is read). */
void dr__parse_alias_uses_in(const GArray *uses, DrLoc from, DrLoc to, GArray *out);

/* ---- sections.c: `run:`, `memory:`, `buffers:`, `kernels:` ---- */

void dr__parse_run(DrParse *p, const DrYNode *v);
void dr__parse_memory(DrParse *p, const DrYNode *v);
/* Each entry to a buffer (kernel) through the builder; sets seen_buffers
 * (seen_kernels). */
void dr__parse_buffers(DrParse *p, const DrYNode *v);
void dr__parse_kernels(DrParse *p, const DrYNode *v);
/* One entry of a `params:` list ({name, type, access}; access defaults to
 * readwrite, pointers only) into *out (name interned); FALSE after
 * reporting. Kernels' and host functions' alike. */
gboolean dr__parse_param(DrParse *p, const char *what, const DrYNode *v, DrParam *out);
/* A `lib:` path resolved (interned): with a '/', relative to the pipeline
 * file's directory (absolute as it is); without, the bare name, which the
 * dynamic loader looks up as dlopen does. */
const char *dr__parse_lib_path(DrParse *p, const char *lib);

/* ---- nodes.c ---- */

/* Converts one entry of `nodes:` (foreach expanded) into IR nodes. */
void dr__parse_node_entry(DrParse *p, DrYNode *key, DrYNode *value);
/* Resolves the pending `after:` entries into DrAfter records. */
void dr__parse_resolve_afters(DrParse *p);
/* `after:` of node `to` (a node id or a list of them, relative to the
 * current scope), resolved now or at the end of the scope. */
void dr__parse_after(DrParse *p, DrId to, const DrYNode *v, const DrEnv *env);

/* ---- params.c ---- */

/* `params:` into graph->params (too_late: buffers:, kernels: or nodes:
 * came first, an error), then dr__params_env_init. */
void dr__parse_params(DrParse *p, const DrYNode *v, gboolean too_late);
/* Sets param_env and param_max_env from graph->params and makes
 * param_env the outer scope of rank_env. */
void dr__params_env_init(DrParse *p);
/* After evaluating value `v` under `env`: when it read parameters (the
 * hook's bits, which it clears), notes it for the node being built, or
 * (under param_max_env, a size) checks that each has a max. FALSE after
 * reporting a float parameter read anywhere but as a whole "{NAME}". */
gboolean dr__params_note(DrParse *p, const DrYNode *v, const DrEnv *env, const char *what, const char *key);
/* Turns the notes into DrParamUse records of committed node `nid`
 * (DR_NONE: the node failed), reporting each that matches no access,
 * scalar argument or memset value. */
void dr__params_attach(DrParse *p, guint32 nid, const char *what);
/* Drops the notes; with `what`, each is an error first (a parameter read
 * where none may be, e.g. a node id). */
void dr__params_clear_notes(DrParse *p, const char *what);
/* Reports each note as a loop's key that read a parameter, and drops
 * them (a loop's keys are read before its body). */
void dr__params_loop_notes(DrParse *p);
/* The mask of the float parameters. */
guint64 dr__params_float_mask(const DrParse *p);

/* ---- loops.c ---- */

/* Whether node mapping `map` is a loop or conditional (`op: loop` or
 * `op: if`). */
gboolean dr__parse_is_loop(const DrYNode *map);
/* Converts the loop or conditional node `id` (scoped, name-checked) at
 * `key`: its bodies, parsed like `nodes:` in the scope "ID/", checked
 * (ir/loops.h), then the node itself. */
void dr__parse_loop(DrParse *p, const DrYNode *key, const DrYNode *map, const DrEnv *env, const char *id);

G_END_DECLS

#endif
