/* json.c: the JSON writer and reader of the report package (json.h). The
 * writer keeps one level of state per open container (has an element been
 * written, one element per line or inline); the reader is a scanner over
 * text in memory that never recurses. */
#include "report/json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "report/num.h"

#define SINK_THRESHOLD (64 * 1024)

void dr__json_init(DrJsonWriter *w, GString *out, FILE *sink) {
  memset(w, 0, sizeof *w);
  w->out = out;
  w->sink = sink;
}

static void drain(DrJsonWriter *w) {
  if (w->sink == NULL || w->out->len == 0) return;
  if (!w->sink_failed && fwrite(w->out->str, 1, w->out->len, w->sink) != w->out->len) w->sink_failed = TRUE;
  g_string_truncate(w->out, 0);
}

gboolean dr__json_finish(DrJsonWriter *w) {
  drain(w);
  if (w->sink && fflush(w->sink) != 0) w->sink_failed = TRUE;
  return !w->sink_failed;
}

/* The separator before a value, a key or nothing after a key. */
static void before_item(DrJsonWriter *w) {
  if (w->after_key) {
    w->after_key = FALSE;
    return;
  }
  if (w->depth == 0) return;
  if (w->out->len > SINK_THRESHOLD) drain(w);
  DrJsonLevel *l = &w->level[w->depth - 1];
  if (l->indent) {
    g_string_append(w->out, l->any ? ",\n" : "\n");
    g_string_append(w->out, l->indent);
  } else if (l->any) {
    g_string_append(w->out, ", ");
  }
  l->any = TRUE;
}

static void begin(DrJsonWriter *w, char open, const char *indent) {
  g_return_if_fail(w->depth < DR_JSON_MAX_DEPTH);
  before_item(w);
  g_string_append_c(w->out, open);
  w->level[w->depth].any = FALSE;
  w->level[w->depth].indent = indent;
  w->depth++;
}

static void end(DrJsonWriter *w, char close) {
  g_return_if_fail(w->depth > 0 && !w->after_key);
  w->depth--;
  if (w->level[w->depth].indent && w->level[w->depth].any) g_string_append_c(w->out, '\n');
  g_string_append_c(w->out, close);
}

void dr__json_begin_object(DrJsonWriter *w) { begin(w, '{', NULL); }
void dr__json_begin_array(DrJsonWriter *w) { begin(w, '[', NULL); }
void dr__json_begin_array_lines(DrJsonWriter *w, const char *indent) { begin(w, '[', indent ? indent : ""); }
void dr__json_end_object(DrJsonWriter *w) { end(w, '}'); }
void dr__json_end_array(DrJsonWriter *w) { end(w, ']'); }

void dr__json_append_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"':
        g_string_append(out, "\\\"");
        break;
      case '\\':
        g_string_append(out, "\\\\");
        break;
      case '\n':
        g_string_append(out, "\\n");
        break;
      case '\r':
        g_string_append(out, "\\r");
        break;
      case '\t':
        g_string_append(out, "\\t");
        break;
      case '\b':
        g_string_append(out, "\\b");
        break;
      case '\f':
        g_string_append(out, "\\f");
        break;
      default:
        if (*p < 0x20)
          g_string_append_printf(out, "\\u%04x", *p);
        else
          g_string_append_c(out, (char)*p);
    }
  }
  g_string_append_c(out, '"');
}

void dr__json_key(DrJsonWriter *w, const char *key) {
  g_return_if_fail(!w->after_key);
  before_item(w);
  dr__json_append_string(w->out, key);
  g_string_append(w->out, ": ");
  w->after_key = TRUE;
}

void dr__json_string(DrJsonWriter *w, const char *s) {
  before_item(w);
  dr__json_append_string(w->out, s);
}

void dr__json_uint(DrJsonWriter *w, guint64 v) {
  before_item(w);
  g_string_append_printf(w->out, "%" G_GUINT64_FORMAT, v);
}

void dr__json_int(DrJsonWriter *w, gint64 v) {
  before_item(w);
  g_string_append_printf(w->out, "%" G_GINT64_FORMAT, v);
}

void dr__json_shortest(DrJsonWriter *w, double v) {
  before_item(w);
  if (!isfinite(v)) {
    g_string_append(w->out, "null");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(w->out, g_ascii_dtostr(buf, sizeof buf, v));
}

void dr__json_bool(DrJsonWriter *w, gboolean v) {
  before_item(w);
  g_string_append(w->out, v ? "true" : "false");
}

void dr__json_null(DrJsonWriter *w) {
  before_item(w);
  g_string_append(w->out, "null");
}

void dr__json_double(DrJsonWriter *w, double v, guint decimals) {
  before_item(w);
  if (isfinite(v))
    dr__num_fixed(w->out, v, decimals, 0);
  else
    g_string_append(w->out, "null");
}

void dr__json_member_string(DrJsonWriter *w, const char *key, const char *s) {
  dr__json_key(w, key);
  dr__json_string(w, s);
}

void dr__json_member_uint(DrJsonWriter *w, const char *key, guint64 v) {
  dr__json_key(w, key);
  dr__json_uint(w, v);
}

void dr__json_member_bool(DrJsonWriter *w, const char *key, gboolean v) {
  dr__json_key(w, key);
  dr__json_bool(w, v);
}

void dr__json_member_double(DrJsonWriter *w, const char *key, double v, guint decimals) {
  dr__json_key(w, key);
  dr__json_double(w, v, decimals);
}

/* ---- the reader ------------------------------------------------------ */

void dr__json_reader_init(DrJsonReader *r, const char *text, gsize len) {
  r->start = r->p = text;
  r->end = text + len;
  r->bad = FALSE;
}

gsize dr__json_reader_pos(const DrJsonReader *r) { return (gsize)(r->p - r->start); }

static gboolean fail(DrJsonReader *r) {
  r->bad = TRUE;
  return FALSE;
}

char dr__json_peek(DrJsonReader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
  return r->p < r->end ? *r->p : 0;
}

static gboolean eat(DrJsonReader *r, char c) {
  if (dr__json_peek(r) != c || c == 0) return FALSE;
  r->p++;
  return TRUE;
}

gboolean dr__json_at_end(DrJsonReader *r) { return dr__json_peek(r) == 0 && r->p == r->end; }

gboolean dr__json_enter(DrJsonReader *r, char open) { return eat(r, open) ? TRUE : fail(r); }

gboolean dr__json_next(DrJsonReader *r, char close, guint *index) {
  if (r->bad) return FALSE;
  if (eat(r, close)) return FALSE;
  if (*index > 0 && !eat(r, ',')) return fail(r);
  /* A trailing comma is not JSON. */
  if (*index > 0 && dr__json_peek(r) == close) return fail(r);
  (*index)++;
  return TRUE;
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = g_ascii_xdigit_value(p[i]);
    if (c < 0) return -1;
    v = v * 16 + c;
  }
  return v;
}

/* Decodes a string into `out` (NULL: only checks it). */
static gboolean scan_string(DrJsonReader *r, GString *out) {
  if (!eat(r, '"')) return fail(r);
  while (r->p < r->end && *r->p != '"') {
    unsigned char ch = (unsigned char)*r->p++;
    if (ch < 0x20) return fail(r);
    if (ch != '\\') {
      if (out) g_string_append_c(out, (char)ch);
      continue;
    }
    if (r->p >= r->end) return fail(r);
    char esc = *r->p++;
    switch (esc) {
      case '"':
      case '\\':
      case '/':
        ch = (unsigned char)esc;
        break;
      case 'n':
        ch = '\n';
        break;
      case 't':
        ch = '\t';
        break;
      case 'r':
        ch = '\r';
        break;
      case 'b':
        ch = '\b';
        break;
      case 'f':
        ch = '\f';
        break;
      case 'u': {
        if (r->end - r->p < 4) return fail(r);
        int cp = hex4(r->p);
        if (cp < 0) return fail(r);
        r->p += 4;
        if (cp >= 0xd800 && cp <= 0xdbff && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
          int lo = hex4(r->p + 2);
          if (lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            r->p += 6;
          }
        }
        if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; /* a lone surrogate */
        if (out) g_string_append_unichar(out, (gunichar)cp);
        continue;
      }
      default:
        return fail(r);
    }
    if (out) g_string_append_c(out, (char)ch);
  }
  return eat(r, '"') ? TRUE : fail(r);
}

char *dr__json_read_string(DrJsonReader *r) {
  g_autoptr(GString) out = g_string_new(NULL);
  if (r->bad || !scan_string(r, out)) return NULL;
  return g_string_free(g_steal_pointer(&out), FALSE);
}

char *dr__json_read_key(DrJsonReader *r) {
  char *key = dr__json_read_string(r);
  if (key != NULL && !eat(r, ':')) {
    g_free(key);
    fail(r);
    return NULL;
  }
  return key;
}

static gboolean literal(DrJsonReader *r, const char *word) {
  gsize n = strlen(word);
  if ((gsize)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return fail(r);
  r->p += n;
  return TRUE;
}

/* A number per RFC 8259's grammar; its value when `v` is not NULL. */
static gboolean scan_number(DrJsonReader *r, double *v) {
  dr__json_peek(r);
  const char *s = r->p;
  const char *p = s;
  if (p < r->end && *p == '-') p++;
  if (p >= r->end || !g_ascii_isdigit(*p)) return fail(r);
  if (*p == '0')
    p++;
  else
    while (p < r->end && g_ascii_isdigit(*p)) p++;
  if (p < r->end && *p == '.') {
    if (++p >= r->end || !g_ascii_isdigit(*p)) return fail(r);
    while (p < r->end && g_ascii_isdigit(*p)) p++;
  }
  if (p < r->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < r->end && (*p == '+' || *p == '-')) p++;
    if (p >= r->end || !g_ascii_isdigit(*p)) return fail(r);
    while (p < r->end && g_ascii_isdigit(*p)) p++;
  }
  if (v) {
    g_autofree char *copy = g_strndup(s, (gsize)(p - s));
    *v = g_ascii_strtod(copy, NULL);
  }
  r->p = p;
  return TRUE;
}

gboolean dr__json_read_number_or_null(DrJsonReader *r, double *v) {
  if (r->bad) return FALSE;
  if (dr__json_peek(r) == 'n') {
    *v = NAN;
    return literal(r, "null");
  }
  return scan_number(r, v);
}

gboolean dr__json_skip(DrJsonReader *r) {
  /* Per open container: its closing bracket and its element count. */
  char close[DR_JSON_MAX_READ_DEPTH];
  guint index[DR_JSON_MAX_READ_DEPTH];
  guint depth = 0;
  if (r->bad) return FALSE;
  for (;;) {
    /* One value, or the start of a container. */
    switch (dr__json_peek(r)) {
      case '{':
      case '[':
        if (depth == DR_JSON_MAX_READ_DEPTH) return fail(r);
        close[depth] = *r->p == '{' ? '}' : ']';
        index[depth++] = 0;
        r->p++;
        break;
      case '"':
        if (!scan_string(r, NULL)) return FALSE;
        break;
      case 't':
        if (!literal(r, "true")) return FALSE;
        break;
      case 'f':
        if (!literal(r, "false")) return FALSE;
        break;
      case 'n':
        if (!literal(r, "null")) return FALSE;
        break;
      default:
        if (!scan_number(r, NULL)) return FALSE;
    }
    /* Close finished containers, then position at the next value. */
    for (;;) {
      if (depth == 0) return TRUE;
      if (!dr__json_next(r, close[depth - 1], &index[depth - 1])) {
        if (r->bad) return FALSE;
        depth--;
        continue;
      }
      if (close[depth - 1] == '}') {
        if (!scan_string(r, NULL) || !eat(r, ':')) return fail(r);
      }
      break;
    }
  }
}
