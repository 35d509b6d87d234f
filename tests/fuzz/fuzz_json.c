/* fuzz_json.c: libFuzzer target for the report package's JSON reader and
 * writer (report/json.h). Any input: skipping it as one JSON value never
 * crashes, recurses or reads past the end. Its bytes up to the first NUL
 * as a string: what the writer escapes, the reader decodes back to the
 * same bytes. Built only with --config=fuzz. */
#include <glib.h>
#include <string.h>

#include "report/json.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size);

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  DrJsonReader r;
  dr__json_reader_init(&r, (const char *)data, size);
  if (dr__json_skip(&r)) g_assert_false(r.bad);
  g_assert_cmpuint(dr__json_reader_pos(&r), <=, size);

  g_autofree char *s = g_strndup((const char *)data, size);
  g_autoptr(GString) doc = g_string_new(NULL);
  DrJsonWriter w;
  dr__json_init(&w, doc, NULL);
  dr__json_begin_array(&w);
  dr__json_string(&w, s);
  dr__json_end_array(&w);
  dr__json_reader_init(&r, doc->str, doc->len);
  g_assert_true(dr__json_enter(&r, '['));
  guint i = 0;
  g_assert_true(dr__json_next(&r, ']', &i));
  g_autofree char *back = dr__json_read_string(&r);
  g_assert_nonnull(back);
  g_assert_cmpstr(back, ==, s);
  g_assert_false(dr__json_next(&r, ']', &i));
  g_assert_false(r.bad);
  g_assert_true(dr__json_at_end(&r));
  return 0;
}
