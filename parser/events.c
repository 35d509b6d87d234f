/* events.c: libyaml events to small reference-counted trees (events.h).
 *
 * A tree is built with an explicit frame stack: each open collection is a
 * frame that remembers where its children start in one shared value stack;
 * closing it moves them into an exactly sized array. Aliases share the
 * anchored subtree (refs++), and each node records its expanded size, so
 * an alias costs O(1) to insert yet counts fully against the entry's
 * value budget: an alias bomb is caught at the first alias that would
 * exceed it, long before anything walks the tree. Building is linear in
 * the events; merge keys and duplicate-key checks are linear per mapping
 * (hash tables above 16 keys). */
#include "parser/events.h"

#include <string.h>
#include <yaml.h>

#include "parser/bytes.h"

#define SMALL_MAP 16
/* Bytes read from the input and checked at a time. */
#define CHUNK (64 * 1024)

struct DrYReader {
  yaml_parser_t parser;
  /* The input, checked by the byte scanner before libyaml reads it. */
  const char *mem; /* NULL: read fp */
  gsize mem_len, mem_pos;
  FILE *fp;
  gboolean src_eof;
  DrByteScan scan;
  guint8 *chunk;
  gsize chunk_len, chunk_ready, chunk_pos; /* read, checked, handed to libyaml */
  yaml_event_t event;
  gboolean have_event;
  const char *file;
  DrDiags *diags;
  GHashTable *anchors;  /* name (owned) -> DrYNode (ref) */
  GHashTable *building; /* anchors of open collections: name -> open count */
  GArray *frames;       /* Frame */
  GPtrArray *values;    /* children of the open frames */
  guint64 entry_values;
  guint64 alias_values; /* over the whole file */
  guint documents;
  gboolean failed;
  /* Where aliases were used, for "in expansion of alias" notes. */
  GHashTable *spans;     /* anchor name -> Span (owned): its value's text */
  GArray *entry_uses;    /* DrYAliasUse since entry_begin */
  GArray *anchored_uses; /* DrYAliasUse inside anchored values */
  GStringChunk *names;   /* the uses' names */
};

typedef struct {
  guint32 from_line, from_col, to_line, to_col;
} Span;

typedef struct {
  DrYKind kind;
  guint32 line, col;
  char *anchor;
  guint start; /* index in values */
} Frame;

/* ---- nodes ------------------------------------------------------------- */

/* Freed nodes are kept on a per-thread list for reuse: a pipeline builds
 * and drops a dozen of them per node, and with the list a 1M-node
 * pipeline parses 2-4% faster than with malloc/free alone (median 4.17 s
 * vs 4.28 s, -c opt). The list lives in a GPrivate whose destroy notify
 * frees it when the thread exits. */
#define SPARE_MAX 4096

typedef struct {
  DrYNode *head; /* linked through u.items */
  guint n;
} SpareNodes;

static void spare_nodes_free(gpointer data) {
  SpareNodes *spare = data;
  while (spare->head != NULL) {
    DrYNode *n = spare->head;
    spare->head = (DrYNode *)n->u.items;
    g_free(n);
  }
  g_free(spare);
}

static GPrivate spare_key = G_PRIVATE_INIT(spare_nodes_free);

static void node_release(DrYNode *n) {
  SpareNodes *spare = g_private_get(&spare_key);
  if (spare == NULL) {
    spare = g_new0(SpareNodes, 1);
    g_private_set(&spare_key, spare);
  }
  if (spare->n >= SPARE_MAX) {
    g_free(n);
    return;
  }
  n->u.items = (DrYNode **)spare->head;
  spare->head = n;
  spare->n++;
}

static DrYNode *node_new(DrYKind kind, guint32 line, guint32 col) {
  SpareNodes *spare = g_private_get(&spare_key);
  DrYNode *n = spare != NULL ? spare->head : NULL;
  if (n != NULL) {
    spare->head = (DrYNode *)n->u.items;
    spare->n--;
    memset(n, 0, sizeof *n);
  } else {
    n = g_new0(DrYNode, 1);
  }
  n->kind = kind;
  n->refs = 1;
  n->line = line;
  n->col = col;
  n->size = 1;
  return n;
}

DrYNode *dr__ynode_ref(DrYNode *node) {
  if (node != NULL) node->refs++;
  return node;
}

void dr__ynode_unref(DrYNode *node) {
  if (node == NULL || --node->refs > 0) return;
  /* Iterative: a file must not be able to drive the C stack. */
  GPtrArray *stack = NULL;
  for (;;) {
    if (node->kind == DR_Y_SCALAR) {
      free(node->u.text); /* allocated by libyaml (malloc) or by us (malloc) */
    } else {
      guint n = node->kind == DR_Y_MAP ? 2 * node->len : node->len;
      for (guint i = 0; i < n; i++) {
        DrYNode *c = node->u.items[i];
        if (--c->refs == 0) {
          if (stack == NULL) stack = g_ptr_array_new();
          g_ptr_array_add(stack, c);
        }
      }
      g_free(node->u.items);
    }
    node_release(node);
    if (stack == NULL || stack->len == 0) break;
    node = g_ptr_array_steal_index_fast(stack, stack->len - 1);
  }
  if (stack) g_ptr_array_unref(stack);
}

gboolean dr__ynode_is_null(const DrYNode *node) {
  if (node->kind != DR_Y_SCALAR || !node->plain) return FALSE;
  const char *t = node->u.text;
  return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 ||
         strcmp(t, "NULL") == 0;
}

DrLoc dr__ynode_loc(const DrYNode *node, const char *file) { return (DrLoc){file, node->line, node->col}; }

const char *dr__ynode_kind_name(const DrYNode *node) {
  switch ((DrYKind)node->kind) {
    case DR_Y_MAP:
      return "a mapping";
    case DR_Y_SEQ:
      return "a list";
    case DR_Y_SCALAR:
      break;
  }
  return dr__ynode_is_null(node) ? "empty" : "a scalar";
}

static guint64 sat_add(guint64 a, guint64 b) { return a + b < a ? G_MAXUINT64 : a + b; }

/* ---- the reader -------------------------------------------------------- */

/* Fills buf with up to n bytes of the source; 0 at its end. */
static gsize source_read(DrYReader *r, guint8 *buf, gsize n) {
  if (r->mem != NULL) {
    gsize k = MIN(n, r->mem_len - r->mem_pos);
    memcpy(buf, r->mem + r->mem_pos, k);
    r->mem_pos += k;
    return k;
  }
  return fread(buf, 1, n, r->fp);
}

/* libyaml's read handler: hands out only bytes the scanner checked, and
 * fails (libyaml: "input error") at the first bad one, which
 * report_syntax_error then reports at its place. */
static int read_handler(void *data, unsigned char *buffer, size_t size, size_t *size_read) {
  DrYReader *r = data;
  *size_read = 0;
  while (r->chunk_pos == r->chunk_ready) {
    if (r->scan.problem != NULL) return 0;
    gsize tail = r->chunk_len - r->chunk_ready; /* an incomplete character */
    if (r->chunk == NULL) r->chunk = g_malloc(CHUNK);
    memmove(r->chunk, r->chunk + r->chunk_ready, tail);
    r->chunk_len = tail;
    r->chunk_ready = r->chunk_pos = 0;
    if (r->src_eof) return 1; /* the end: the scanner reported any tail */
    gsize got = source_read(r, r->chunk + tail, CHUNK - tail);
    if (got == 0) {
      if (r->fp != NULL && ferror(r->fp)) return 0;
      r->src_eof = TRUE;
    }
    r->chunk_len = tail + got;
    gsize skip;
    r->chunk_ready = dr__bytescan_feed(&r->scan, r->chunk, r->chunk_len, r->src_eof, &skip);
    r->chunk_pos = skip;
  }
  gsize n = MIN(size, r->chunk_ready - r->chunk_pos);
  memcpy(buffer, r->chunk + r->chunk_pos, n);
  r->chunk_pos += n;
  *size_read = n;
  return 1;
}

static DrYReader *reader_new(const char *file, DrDiags *diags) {
  DrYReader *r = g_new0(DrYReader, 1);
  yaml_parser_initialize(&r->parser);
  r->file = file;
  r->diags = diags;
  r->anchors = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)dr__ynode_unref);
  r->building = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  r->frames = g_array_new(FALSE, FALSE, sizeof(Frame));
  r->values = g_ptr_array_new();
  dr__bytescan_init(&r->scan);
  r->spans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  r->entry_uses = g_array_new(FALSE, FALSE, sizeof(DrYAliasUse));
  r->anchored_uses = g_array_new(FALSE, FALSE, sizeof(DrYAliasUse));
  r->names = g_string_chunk_new(256);
  yaml_parser_set_input(&r->parser, read_handler, r);
  yaml_parser_set_encoding(&r->parser, YAML_UTF8_ENCODING);
  return r;
}

DrYReader *dr__yreader_new(const char *file, const char *yaml, gsize len, DrDiags *diags) {
  DrYReader *r = reader_new(file, diags);
  r->mem = yaml;
  r->mem_len = len;
  return r;
}

DrYReader *dr__yreader_new_file(const char *file, FILE *fp, DrDiags *diags) {
  DrYReader *r = reader_new(file, diags);
  r->fp = fp;
  return r;
}

static void drop_build_state(DrYReader *r) {
  for (guint i = 0; i < r->values->len; i++) dr__ynode_unref(r->values->pdata[i]);
  g_ptr_array_set_size(r->values, 0);
  for (guint i = 0; i < r->frames->len; i++) g_free(g_array_index(r->frames, Frame, i).anchor);
  g_array_set_size(r->frames, 0);
  g_hash_table_remove_all(r->building);
}

void dr__yreader_free(DrYReader *r) {
  if (r == NULL) return;
  drop_build_state(r);
  if (r->have_event) yaml_event_delete(&r->event);
  yaml_parser_delete(&r->parser);
  g_hash_table_unref(r->anchors);
  g_hash_table_unref(r->building);
  g_array_unref(r->frames);
  g_ptr_array_unref(r->values);
  dr__bytescan_clear(&r->scan);
  g_hash_table_unref(r->spans);
  g_array_unref(r->entry_uses);
  g_array_unref(r->anchored_uses);
  g_string_chunk_free(r->names);
  g_free(r->chunk);
  g_free(r);
}

gboolean dr__yreader_failed(const DrYReader *r) { return r->failed; }
/* The one place where libyaml's 0-based marks become 1-based positions. */
static void mark_to_pos(yaml_mark_t mark, guint32 *line, guint32 *col) {
  *line = (guint32)mark.line + 1;
  *col = (guint32)mark.column + 1;
}

void dr__yreader_entry_begin(DrYReader *r) {
  r->entry_values = 0;
  g_array_set_size(r->entry_uses, 0);
}

const GArray *dr__yreader_entry_aliases(const DrYReader *r) { return r->entry_uses; }
const GArray *dr__yreader_anchored_aliases(const DrYReader *r) { return r->anchored_uses; }

/* Remembers the text span of the value anchored as `name`, which ends
 * (exclusive) at libyaml's mark `end`. */
static void record_span(DrYReader *r, const char *name, guint32 line, guint32 col, yaml_mark_t end) {
  Span *sp = g_new(Span, 1);
  sp->from_line = line;
  sp->from_col = col;
  mark_to_pos(end, &sp->to_line, &sp->to_col);
  g_hash_table_replace(r->spans, g_strdup(name), sp);
}

static void fatal(DrYReader *r, guint32 line, guint32 col, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static void fatal(DrYReader *r, guint32 line, guint32 col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (!r->failed) dr_diags_error(r->diags, (DrLoc){r->file, line, col}, "%s", msg);
  r->failed = TRUE;
}

static void report_syntax_error(DrYReader *r) {
  yaml_parser_t *p = &r->parser;
  if (r->scan.problem != NULL) {
    fatal(r, r->scan.problem_line, r->scan.problem_col, "%s", r->scan.problem);
    return;
  }
  guint32 line, col, tab_col;
  mark_to_pos(p->problem_mark, &line, &col);
  /* libyaml's words for a tab in indentation ("found character that cannot
   * start any token", "found a tab character that violates indentation")
   * name no tab, or name it from the wrong end. */
  if (p->error == YAML_SCANNER_ERROR && dr__bytescan_indent_tab(&r->scan, line, &tab_col) && col >= tab_col) {
    fatal(r, line, tab_col, "YAML forbids tabs for indentation; indent with spaces");
    return;
  }
  const char *problem = p->problem ? p->problem : "malformed YAML";
  if (p->context != NULL) {
    guint32 cl, cc;
    mark_to_pos(p->context_mark, &cl, &cc);
    fatal(r, line, col, "YAML syntax error: %s (%s at line %u, column %u)", problem, p->context, cl, cc);
  } else {
    fatal(r, line, col, "YAML syntax error: %s", problem);
  }
}

gboolean dr__yreader_next(DrYReader *r, DrYEvent *ev) {
  memset(ev, 0, sizeof *ev);
  ev->type = DR_YEV_END;
  for (;;) {
    if (r->have_event) yaml_event_delete(&r->event);
    r->have_event = FALSE;
    if (r->failed) return FALSE;
    if (!yaml_parser_parse(&r->parser, &r->event)) {
      report_syntax_error(r);
      return FALSE;
    }
    r->have_event = TRUE;
    yaml_event_t *e = &r->event;
    mark_to_pos(e->start_mark, &ev->line, &ev->col);
    switch (e->type) {
      case YAML_NO_EVENT: /* after the stream's end */
        return FALSE;
      case YAML_STREAM_START_EVENT:
      case YAML_DOCUMENT_END_EVENT:
        continue;
      case YAML_DOCUMENT_START_EVENT:
        if (++r->documents > 1) {
          fatal(r, ev->line, ev->col, "a pipeline file holds exactly one YAML document");
          return FALSE;
        }
        continue;
      case YAML_STREAM_END_EVENT:
        return FALSE;
      case YAML_ALIAS_EVENT:
        ev->type = DR_YEV_ALIAS;
        ev->text = (char *)e->data.alias.anchor;
        return TRUE;
      case YAML_SCALAR_EVENT:
        /* "\0" in a quoted scalar: the C string would end there and
         * "op\0" read as op. */
        if (memchr(e->data.scalar.value, '\0', e->data.scalar.length) != NULL)
          dr_diags_error(
              r->diags, (DrLoc){r->file, ev->line, ev->col},
              "a string holds a NUL character (\\0 or \\x00): no key, name or value may contain one");
        ev->type = DR_YEV_SCALAR;
        ev->anchor = (char *)e->data.scalar.anchor;
        ev->text = (char *)e->data.scalar.value;
        ev->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return TRUE;
      case YAML_SEQUENCE_START_EVENT:
        ev->type = DR_YEV_SEQ_START;
        ev->anchor = (char *)e->data.sequence_start.anchor;
        return TRUE;
      case YAML_SEQUENCE_END_EVENT:
        ev->type = DR_YEV_SEQ_END;
        return TRUE;
      case YAML_MAPPING_START_EVENT:
        ev->type = DR_YEV_MAP_START;
        ev->anchor = (char *)e->data.mapping_start.anchor;
        return TRUE;
      case YAML_MAPPING_END_EVENT:
        ev->type = DR_YEV_MAP_END;
        return TRUE;
    }
  }
}

/* Takes the scalar text out of the current libyaml event (no copy). */
static char *steal_scalar(DrYReader *r) {
  char *t = (char *)r->event.data.scalar.value;
  r->event.data.scalar.value = NULL;
  return t;
}

static DrYNode *empty_scalar(guint32 line, guint32 col) {
  DrYNode *n = node_new(DR_Y_SCALAR, line, col);
  n->plain = TRUE;
  n->u.text = calloc(1, 1);
  return n;
}

static DrYNode *resolve_alias(DrYReader *r, const DrYEvent *ev) {
  DrYNode *target = g_hash_table_lookup(r->anchors, ev->text);
  if (g_hash_table_contains(r->building, ev->text)) {
    dr_diags_error(r->diags, (DrLoc){r->file, ev->line, ev->col},
                   "alias '*%s' refers to its own anchor: '&%s' is still being defined", ev->text, ev->text);
    return empty_scalar(ev->line, ev->col);
  }
  if (target == NULL) {
    dr_diags_error(r->diags, (DrLoc){r->file, ev->line, ev->col}, "unknown anchor '%s' in alias '*%s'",
                   ev->text, ev->text);
    return empty_scalar(ev->line, ev->col);
  }
  return dr__ynode_ref(target);
}

/* Key lookup helpers used when a mapping closes. */
static gboolean key_equal(const DrYNode *a, const DrYNode *b) {
  return a->kind == DR_Y_SCALAR && b->kind == DR_Y_SCALAR && strcmp(a->u.text, b->u.text) == 0;
}

static gboolean is_merge_key(const DrYNode *k) {
  return k->kind == DR_Y_SCALAR && k->plain && strcmp(k->u.text, "<<") == 0;
}

/* Finds duplicate keys among items[0..2n); reports each and removes the
 * later copies. Returns the new entry count. */
static guint drop_duplicates(DrYReader *r, DrYNode **items, guint n) {
  g_autoptr(GHashTable) seen = n > SMALL_MAP ? g_hash_table_new(g_str_hash, g_str_equal) : NULL;
  const DrYNode *first_merge = NULL;
  guint w = 0;
  for (guint i = 0; i < n; i++) {
    DrYNode *k = items[2 * i], *v = items[2 * i + 1];
    const DrYNode *first = NULL;
    if (is_merge_key(k)) {
      /* Two '<<' are two equal keys like any other (libyaml accepts them;
       * some readers merge both, others keep the last). */
      if (first_merge != NULL) {
        dr_diags_error(r->diags, dr__ynode_loc(k, r->file),
                       "duplicate key '<<' (to merge several mappings, write one '<<: [*a, *b]')");
        dr_diags_note(r->diags, dr__ynode_loc(first_merge, r->file), "'<<' first appears here");
        dr__ynode_unref(k);
        dr__ynode_unref(v);
        continue;
      }
      first_merge = k;
    } else {
      if (seen != NULL) {
        first = g_hash_table_lookup(seen, k->u.text);
        if (first == NULL) g_hash_table_insert(seen, k->u.text, k);
      } else {
        for (guint j = 0; j < w && first == NULL; j++)
          if (key_equal(items[2 * j], k)) first = items[2 * j];
      }
    }
    if (first != NULL) {
      dr_diags_error(r->diags, dr__ynode_loc(k, r->file), "duplicate key '%s'", k->u.text);
      dr_diags_note(r->diags, dr__ynode_loc(first, r->file), "'%s' first appears here", k->u.text);
      dr__ynode_unref(k);
      dr__ynode_unref(v);
      continue;
    }
    items[2 * w] = k;
    items[2 * w + 1] = v;
    w++;
  }
  return w;
}

/* Resolves `<<` entries: the keys of the merged mapping(s) are inserted at
 * the position of `<<` unless the mapping gives them itself (explicit keys
 * win) or an earlier merged mapping gave them (first wins). */
static void resolve_merges(DrYReader *r, DrYNode *map) {
  gboolean any = FALSE;
  for (guint i = 0; i < map->len && !any; i++) any = is_merge_key(dr_ynode_key(map, i));
  if (!any) return;
  g_autoptr(GHashTable) present = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < map->len; i++)
    if (!is_merge_key(dr_ynode_key(map, i))) g_hash_table_add(present, dr_ynode_key(map, i)->u.text);
  GPtrArray *out = g_ptr_array_new();
  guint64 size = 1;
  for (guint i = 0; i < map->len; i++) {
    DrYNode *k = dr_ynode_key(map, i), *v = dr_ynode_value(map, i);
    if (!is_merge_key(k)) {
      g_ptr_array_add(out, k);
      g_ptr_array_add(out, v);
      size = sat_add(size, sat_add(k->size, v->size));
      continue;
    }
    guint n_src = v->kind == DR_Y_SEQ ? v->len : 1;
    for (guint s = 0; s < n_src; s++) {
      DrYNode *src = v->kind == DR_Y_SEQ ? v->u.items[s] : v;
      if (src->kind != DR_Y_MAP) {
        dr_diags_error(r->diags, dr__ynode_loc(src, r->file),
                       "merge key '<<' takes a mapping or a list of mappings, not %s",
                       dr__ynode_kind_name(src));
        continue;
      }
      for (guint j = 0; j < src->len; j++) {
        DrYNode *mk = dr_ynode_key(src, j), *mv = dr_ynode_value(src, j);
        if (g_hash_table_contains(present, mk->u.text)) continue;
        g_hash_table_add(present, mk->u.text);
        g_ptr_array_add(out, dr__ynode_ref(mk));
        g_ptr_array_add(out, dr__ynode_ref(mv));
        size = sat_add(size, sat_add(mk->size, mv->size));
      }
    }
    dr__ynode_unref(k);
    dr__ynode_unref(v);
  }
  g_free(map->u.items);
  map->len = out->len / 2;
  map->size = size;
  map->u.items = (DrYNode **)g_ptr_array_free(out, FALSE);
}

/* Closes the top frame into a collection node. */
static DrYNode *close_frame(DrYReader *r) {
  Frame f = g_array_index(r->frames, Frame, r->frames->len - 1);
  g_array_set_size(r->frames, r->frames->len - 1);
  DrYNode *n = node_new(f.kind, f.line, f.col);
  guint count = r->values->len - f.start;
  DrYNode **items = g_new(DrYNode *, MAX(count, 1));
  if (count > 0) /* pdata is NULL for an empty array: memcpy(NULL) is UB */
    memcpy(items, r->values->pdata + f.start, count * sizeof(DrYNode *));
  g_ptr_array_set_size(r->values, f.start);
  for (guint i = 0; i < count; i++) n->size = sat_add(n->size, items[i]->size);
  n->u.items = items;
  if (f.kind == DR_Y_MAP) {
    n->len = drop_duplicates(r, items, count / 2);
    resolve_merges(r, n);
  } else {
    n->len = count;
  }
  if (f.anchor != NULL) {
    gpointer count_p = g_hash_table_lookup(r->building, f.anchor);
    if (GPOINTER_TO_UINT(count_p) <= 1)
      g_hash_table_remove(r->building, f.anchor);
    else
      g_hash_table_insert(r->building, g_strdup(f.anchor), GUINT_TO_POINTER(GPOINTER_TO_UINT(count_p) - 1));
    record_span(r, f.anchor, f.line, f.col, r->event.start_mark);
    g_hash_table_replace(r->anchors, f.anchor, dr__ynode_ref(n));
  }
  return n;
}

/* TRUE when the next value of the open frames is the value of a '<<' key
 * or an item of the list that is. */
static gboolean merging(const DrYReader *r) {
  guint n = r->frames->len;
  for (guint up = 0; up < 2 && up < n; up++) {
    const Frame *f = &g_array_index(r->frames, Frame, n - 1 - up);
    guint end = up == 0 ? r->values->len : g_array_index(r->frames, Frame, n - up).start;
    if (f->kind == DR_Y_MAP) return (end - f->start) % 2 == 1 && is_merge_key(r->values->pdata[end - 1]);
  }
  return FALSE;
}

/* Records the alias `ev` (an anchor that exists) for alias notes. */
static void record_use(DrYReader *r, const DrYEvent *ev) {
  const Span *sp = g_hash_table_lookup(r->spans, ev->text);
  if (sp == NULL) return; /* unknown or still being defined: reported already */
  DrYAliasUse u = {g_string_chunk_insert_const(r->names, ev->text),
                   ev->line,
                   ev->col,
                   sp->from_line,
                   sp->from_col,
                   sp->to_line,
                   sp->to_col,
                   merging(r)};
  g_array_append_val(r->entry_uses, u);
  if (g_hash_table_size(r->building) > 0 && r->anchored_uses->len < DR_YAML_MAX_ANCHORED_ALIASES)
    g_array_append_val(r->anchored_uses, u);
}

DrYNode *dr__yreader_build(DrYReader *r, const DrYEvent *first) {
  g_return_val_if_fail(r->frames->len == 0, NULL);
  DrYEvent ev = *first;
  for (;;) {
    DrYNode *done = NULL;
    switch (ev.type) {
      case DR_YEV_SCALAR:
        done = node_new(DR_Y_SCALAR, ev.line, ev.col);
        done->plain = ev.plain;
        done->u.text = steal_scalar(r);
        if (ev.anchor) {
          g_hash_table_replace(r->anchors, g_strdup(ev.anchor), dr__ynode_ref(done));
          record_span(r, ev.anchor, ev.line, ev.col, r->event.end_mark);
        }
        r->entry_values++;
        break;
      case DR_YEV_ALIAS:
        done = resolve_alias(r, &ev);
        record_use(r, &ev);
        r->entry_values = sat_add(r->entry_values, done->size);
        r->alias_values = sat_add(r->alias_values, done->size);
        if (r->entry_values > DR_YAML_MAX_ENTRY_VALUES) {
          dr__ynode_unref(done);
          fatal(r, ev.line, ev.col, "alias '*%s' expands this entry beyond %u values (an alias bomb?)",
                ev.text, DR_YAML_MAX_ENTRY_VALUES);
          drop_build_state(r);
          return NULL;
        }
        /* The same bomb spread over many entries. */
        if (r->alias_values > DR_YAML_MAX_ALIAS_VALUES) {
          dr__ynode_unref(done);
          fatal(r, ev.line, ev.col,
                "aliases expand the file beyond %" G_GUINT64_FORMAT " values (an alias bomb?)",
                DR_YAML_MAX_ALIAS_VALUES);
          drop_build_state(r);
          return NULL;
        }
        break;
      case DR_YEV_SEQ_START:
      case DR_YEV_MAP_START: {
        if (r->frames->len >= DR_YAML_MAX_DEPTH) {
          fatal(r, ev.line, ev.col, "YAML nested deeper than %d levels", DR_YAML_MAX_DEPTH);
          drop_build_state(r);
          return NULL;
        }
        Frame f = {ev.type == DR_YEV_MAP_START ? DR_Y_MAP : DR_Y_SEQ, ev.line, ev.col, g_strdup(ev.anchor),
                   r->values->len};
        if (f.anchor) {
          guint c = GPOINTER_TO_UINT(g_hash_table_lookup(r->building, f.anchor));
          g_hash_table_insert(r->building, g_strdup(f.anchor), GUINT_TO_POINTER(c + 1));
        }
        g_array_append_val(r->frames, f);
        r->entry_values++;
        break;
      }
      case DR_YEV_SEQ_END:
      case DR_YEV_MAP_END:
        done = close_frame(r);
        break;
      case DR_YEV_END:
        drop_build_state(r);
        return NULL;
    }
    if (done != NULL) {
      if (r->frames->len == 0) return done;
      const Frame *top = &g_array_index(r->frames, Frame, r->frames->len - 1);
      /* Keys must be scalars: a collection key has no name to look up. */
      if (top->kind == DR_Y_MAP && (r->values->len - top->start) % 2 == 0 && done->kind != DR_Y_SCALAR) {
        dr_diags_error(r->diags, dr__ynode_loc(done, r->file), "a mapping key must be a scalar, not %s",
                       dr__ynode_kind_name(done));
        dr__ynode_unref(done);
        done = empty_scalar(ev.line, ev.col);
      }
      g_ptr_array_add(r->values, done);
    }
    if (!dr__yreader_next(r, &ev)) {
      if (!r->failed) fatal(r, ev.line, ev.col, "unexpected end of YAML");
      drop_build_state(r);
      return NULL;
    }
  }
}

void dr__yreader_skip(DrYReader *r, const DrYEvent *first) {
  int depth = 0;
  DrYEvent ev = *first;
  for (;;) {
    if (ev.type == DR_YEV_SEQ_START || ev.type == DR_YEV_MAP_START) {
      /* Skipped values obey the same limit: libyaml's own stacks grow. */
      if (++depth > DR_YAML_MAX_DEPTH) {
        fatal(r, ev.line, ev.col, "YAML nested deeper than %d levels", DR_YAML_MAX_DEPTH);
        return;
      }
    }
    if (ev.type == DR_YEV_SEQ_END || ev.type == DR_YEV_MAP_END) depth--;
    if (depth <= 0 || ev.type == DR_YEV_END) return;
    if (!dr__yreader_next(r, &ev)) return;
  }
}

DrYNode *dr__yaml_parse_tree(const char *file, const char *yaml, gsize len, DrDiags *diags) {
  g_autoptr(DrYReader) r = dr__yreader_new(file, yaml, len, diags);
  DrYEvent ev;
  if (!dr__yreader_next(r, &ev)) {
    if (!r->failed) dr_diags_error(diags, (DrLoc){file, 1, 1}, "empty YAML document");
    return NULL;
  }
  g_autoptr(DrYNode) root = dr__yreader_build(r, &ev);
  if (root == NULL) return NULL;
  if (dr__yreader_next(r, &ev)) {
    fatal(r, ev.line, ev.col, "unexpected content after the document");
    return NULL;
  }
  if (r->failed) return NULL;
  return g_steal_pointer(&root);
}
