/* events.h: the YAML layer. Pulls libyaml events and builds small,
 * reference-counted trees (DrYNode) for one piece of the document at a
 * time, so that the parser never holds the whole document: the caller
 * streams the top-level mapping and the `nodes:` mapping entry by entry,
 * builds a tree for each entry, converts it to IR and drops it. Only
 * anchored subtrees stay alive (in the anchor table) for later aliases.
 *
 * This is the one place that converts libyaml's 0-based marks to 1-based
 * lines and columns. It defends against hostile input with an explicit
 * stack (no recursion), a nesting depth limit and a budget on how many
 * values one entry may expand to through aliases (alias bombs); hitting
 * either is a fatal diagnostic. Duplicate keys are reported when a mapping
 * closes, and `<<` merge keys are resolved there too. */
#ifndef DAGRUN_PARSER_EVENTS_H
#define DAGRUN_PARSER_EVENTS_H

#include <glib.h>
#include <stdio.h>

#include "ir/diag.h"

G_BEGIN_DECLS

#define DR_YAML_MAX_DEPTH 64
/* Values (scalars and collections, counting through aliases) that one
 * top-level entry or one node may expand to. */
#define DR_YAML_MAX_ENTRY_VALUES 1000000u
/* Values that aliases add over the whole file (a bomb spread over many
 * entries); a merge key per node costs about ten each. */
#define DR_YAML_MAX_ALIAS_VALUES G_GUINT64_CONSTANT(200000000)

typedef enum { DR_Y_SCALAR, DR_Y_MAP, DR_Y_SEQ } DrYKind;

typedef struct DrYNode DrYNode;
struct DrYNode {
  guint8 kind;  /* DrYKind */
  guint8 plain; /* scalars: written without quotes */
  guint32 refs;
  guint32 line, col; /* 1-based */
  guint32 len;       /* map: entries; seq: items */
  guint64 size;      /* values in this subtree, aliases expanded */
  union {
    char *text;      /* scalar, NUL-terminated */
    DrYNode **items; /* seq: len items; map: 2*len (key, value) */
  } u;
};

#define dr_ynode_key(n, i) ((n)->u.items[2 * (i)])
#define dr_ynode_value(n, i) ((n)->u.items[2 * (i) + 1])

DrYNode *dr__ynode_ref(DrYNode *node);
/* Drops a reference; frees the subtree iteratively when it reaches 0. */
void dr__ynode_unref(DrYNode *node);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrYNode, dr__ynode_unref)

/* TRUE for a plain scalar spelled "", "~", "null" (YAML's null). */
gboolean dr__ynode_is_null(const DrYNode *node);
/* The node's location in `file`. */
DrLoc dr__ynode_loc(const DrYNode *node, const char *file);
/* "a mapping", "a list", "a string": for messages. */
const char *dr__ynode_kind_name(const DrYNode *node);

typedef enum {
  DR_YEV_END, /* stream end (or the reader stopped on an error) */
  DR_YEV_SCALAR,
  DR_YEV_ALIAS,
  DR_YEV_SEQ_START,
  DR_YEV_SEQ_END,
  DR_YEV_MAP_START,
  DR_YEV_MAP_END,
} DrYEventType;

/* A simplified event; the reader owns its strings until the next call. */
typedef struct {
  DrYEventType type;
  guint32 line, col;
  char *anchor; /* NULL when none */
  char *text;   /* scalar value or alias name */
  gboolean plain;
} DrYEvent;

typedef struct DrYReader DrYReader;

/* Returns a reader over yaml[0..len) named `file` (which must outlive the
 * reader) that reports into `diags`. The text must outlive the reader. */
DrYReader *dr__yreader_new(const char *file, const char *yaml, gsize len, DrDiags *diags);
/* The same over an open file, read in chunks (the text is never held
 * whole); `fp` must stay open while the reader lives. */
DrYReader *dr__yreader_new_file(const char *file, FILE *fp, DrDiags *diags);
void dr__yreader_free(DrYReader *reader);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DrYReader, dr__yreader_free)

/* Pulls the next content event into *ev, skipping document boundaries
 * (a second document is an error). Returns FALSE (type DR_YEV_END) at the
 * end of the stream or after a fatal error. */
gboolean dr__yreader_next(DrYReader *reader, DrYEvent *ev);

/* Builds the tree of the value that starts with `first` (a scalar, alias
 * or collection start), consuming its events. Returns a new reference, or
 * NULL after a fatal error (reported). Alias errors that are not fatal
 * yield an empty scalar, reported. */
DrYNode *dr__yreader_build(DrYReader *reader, const DrYEvent *first);

/* Skips the value that starts with `first` without building it. */
void dr__yreader_skip(DrYReader *reader, const DrYEvent *first);

/* Starts a new top-level entry: resets the alias expansion budget and the
 * entry's list of alias uses. */
void dr__yreader_entry_begin(DrYReader *reader);

/* One use of an alias, kept so that an error found in the anchored value
 * can point back at the alias that brought it into a node ("in expansion
 * of alias '*x' here"): where the alias is, and the text span
 * [from, to) of the value its anchor names. */
typedef struct {
  const char *name; /* the anchor's name, owned by the reader */
  guint32 line, col;
  guint32 from_line, from_col, to_line, to_col;
  gboolean merged; /* the value of a '<<' key, or an item of its list */
} DrYAliasUse;

/* Aliases used since the last dr__yreader_entry_begin, in text order;
 * valid until the next one (copy it to keep it; names stay valid while
 * the reader lives). */
const GArray *dr__yreader_entry_aliases(const DrYReader *reader);
/* Aliases used inside anchored values anywhere so far (at most
 * DR_YAML_MAX_ANCHORED_ALIASES), to follow an expansion inside an
 * expansion. Valid while the reader lives. */
const GArray *dr__yreader_anchored_aliases(const DrYReader *reader);
#define DR_YAML_MAX_ANCHORED_ALIASES 100000u

/* TRUE once a fatal error stopped the reader. */
gboolean dr__yreader_failed(const DrYReader *reader);

/* Builds a whole document from `yaml` (tests and small inputs). NULL on
 * error. */
DrYNode *dr__yaml_parse_tree(const char *file, const char *yaml, gsize len, DrDiags *diags);

G_END_DECLS

#endif
