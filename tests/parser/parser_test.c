/* parser_test.c: unit tests of parser/ (expr, suggest, events, the node
 * conversion through dr_load_string) and lib/load. Golden files cover the
 * messages end to end; these pin down the pieces' semantics. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "lib/load.h"
#include "parser/bytes.h"
#include "parser/events.h"
#include "parser/expr.h"
#include "parser/parser.h"
#include "ir/suggest.h"

static gint64 eval(const char *text, const DrEnv *env) {
  gint64 v = 0;
  g_autofree char *msg = NULL;
  if (!dr__expr_eval(text, strlen(text), env, &v, &msg)) g_error("eval '%s': %s", text, msg);
  return v;
}

static char *eval_error(const char *text, const DrEnv *env) {
  gint64 v = 0;
  char *msg = NULL;
  g_assert_false(dr__expr_eval(text, strlen(text), env, &v, &msg));
  return msg;
}

static void test_expr_arithmetic(void) {
  DrVar vars[] = {{"c", 3}, {"n", 10}};
  DrEnv env = {vars, 2};
  g_assert_cmpint(eval("1 + 2 * 3", NULL), ==, 7);
  g_assert_cmpint(eval("(1 + 2) * 3", NULL), ==, 9);
  g_assert_cmpint(eval("7 / 2", NULL), ==, 3);
  g_assert_cmpint(eval("-7 / 2", NULL), ==, -3);
  g_assert_cmpint(eval("-7 % 3", NULL), ==, -1);
  g_assert_cmpint(eval("10 - 4 - 3", NULL), ==, 3);
  g_assert_cmpint(eval("--5", NULL), ==, 5);
  g_assert_cmpint(eval("-(2 - 5)", NULL), ==, 3);
  g_assert_cmpint(eval("c*4Mi", &env), ==, 3 * 4194304);
  g_assert_cmpint(eval("(c+1)*4Mi", &env), ==, 4 * 4194304);
  g_assert_cmpint(eval("n % c", &env), ==, 1);
  g_assert_cmpint(eval("2KiB + 1kB", NULL), ==, 3048);
}

static void test_expr_errors(void) {
  DrVar vars[] = {{"c", 0}};
  DrEnv env = {vars, 1};
  g_autofree char *m1 = eval_error("1 / c", &env);
  g_assert_nonnull(strstr(m1, "division by zero"));
  g_autofree char *m2 = eval_error("5 % 0", NULL);
  g_assert_nonnull(strstr(m2, "division by zero"));
  g_autofree char *m3 = eval_error("d + 1", &env);
  g_assert_nonnull(strstr(m3, "unknown loop variable 'd'"));
  g_autofree char *m4 = eval_error("8Gi * 8Gi * 8Gi", NULL);
  g_assert_nonnull(strstr(m4, "overflow"));
  g_autofree char *m5 = eval_error("(1 + 2", NULL);
  g_assert_nonnull(strstr(m5, "missing ')'"));
  g_autofree char *m6 = eval_error("1 + 2)", NULL);
  g_assert_nonnull(strstr(m6, "unbalanced ')'"));
  g_autofree char *m7 = eval_error("4Xi", NULL);
  g_assert_nonnull(strstr(m7, "unknown size suffix 'Xi'"));
  g_autofree char *m8 = eval_error("", NULL);
  g_assert_nonnull(strstr(m8, "unexpected end"));
  /* Deep parentheses stop at the limit instead of recursing on. */
  GString *deep = g_string_new(NULL);
  for (int i = 0; i < 1000; i++) g_string_append_c(deep, '(');
  g_string_append_c(deep, '1');
  for (int i = 0; i < 1000; i++) g_string_append_c(deep, ')');
  g_autofree char *m9 = eval_error(deep->str, NULL);
  g_assert_nonnull(strstr(m9, "nested deeper"));
  g_string_free(deep, TRUE);
}

static void test_expr_compare_select(void) {
  DrVar vars[] = {{"i", 3}, {"n", 8}, {"z", 0}};
  DrEnv env = {vars, 3};
  g_assert_cmpint(eval("i < n", &env), ==, 1);
  g_assert_cmpint(eval("i > n", &env), ==, 0);
  g_assert_cmpint(eval("i <= 3", &env), ==, 1);
  g_assert_cmpint(eval("i >= 4", &env), ==, 0);
  g_assert_cmpint(eval("i == 3", &env), ==, 1);
  g_assert_cmpint(eval("i != 3", &env), ==, 0);
  /* C precedence: arithmetic binds tighter than relations, relations than
   * equality, and ?: is lowest and right-associative. */
  g_assert_cmpint(eval("1 + 2 < 2 * 2", NULL), ==, 1);
  g_assert_cmpint(eval("1 < 2 == 1", NULL), ==, 1);
  g_assert_cmpint(eval("3 > 2 > 1", NULL), ==, 0); /* (3 > 2) > 1 */
  g_assert_cmpint(eval("i % 2 ? 10 : 20", &env), ==, 10);
  g_assert_cmpint(eval("i % 2 == 0 ? 10 : 20", &env), ==, 20);
  g_assert_cmpint(eval("z ? 1 : i ? 2 : 3", &env), ==, 2);
  g_assert_cmpint(eval("(z ? 1 : 5) * 2", &env), ==, 10);
  g_assert_cmpint(eval("1 ? 2 : 3 + 4", NULL), ==, 2);
  g_assert_cmpint(eval("i%2?n:-n", &env), ==, 8);
  g_assert_cmpint(eval("min(i, n)", &env), ==, 3);
  g_assert_cmpint(eval("max(i, n) * 2", &env), ==, 16);
  g_assert_cmpint(eval("max ( -1 , -2 )", NULL), ==, -1);
  g_assert_cmpint(eval("min(max(i, 5), n - 1)", &env), ==, 5);
  g_assert_cmpint(eval("min(i < n ? 1Ki : 2Ki, 4Ki)", &env), ==, 1024);
  /* Only the branch taken is evaluated: the C idiom for a guarded division. */
  g_assert_cmpint(eval("z == 0 ? 0 : n / z", &env), ==, 0);
  g_assert_cmpint(eval("z != 0 ? 8Gi * 8Gi * 8Gi : 4", &env), ==, 4);
  g_assert_cmpint(eval("i ? n / i : n / z", &env), ==, 2);
  /* A loop variable may still be called min: only name( is a call. */
  DrVar mv[] = {{"min", 7}};
  DrEnv menv = {mv, 1};
  g_assert_cmpint(eval("min + 1", &menv), ==, 8);
}

static void test_expr_compare_select_errors(void) {
  DrVar vars[] = {{"z", 0}};
  DrEnv env = {vars, 1};
  struct {
    const char *text, *want;
  } cases[] = {
      {"1 ? 2", "'?' without its ':'"},
      {"1 : 2", "':' without a '?' before it"},
      {"1 = 2", "unexpected '=' in expression (equality is '==')"},
      {"!z", "unexpected '!' in expression"},
      {"1 << 2", "unexpected '<<' in expression (no shift operators)"},
      {"foo(1, 2)", "unknown function 'foo' (functions: min, max)"},
      {"min(1)", "'min' takes two arguments: expected ','"},
      {"max(1, 2, 3)", "'max' takes two arguments, not more"},
      {"min(1, 2", "missing ')'"},
      {"1 < ", "unexpected end of expression"},
      /* The branch taken still fails; the other still has its names checked. */
      {"z == 0 ? 1 / z : 0", "division by zero"},
      {"z ? 1 : 8Gi * 8Gi * 8Gi", "integer overflow"},
      {"1 ? 0 : q", "unknown loop variable 'q'"},
      {"min(1 / z, 2)", "division by zero"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *m = eval_error(cases[i].text, &env);
    if (strstr(m, cases[i].want) == NULL)
      g_error("'%s': got '%s', want '%s'", cases[i].text, m, cases[i].want);
  }
  /* Chains of ?: and nested calls stop at the depth limit too. */
  GString *deep = g_string_new(NULL);
  for (int i = 0; i < 1000; i++) g_string_append(deep, "1 ? ");
  g_string_append_c(deep, '1');
  for (int i = 0; i < 1000; i++) g_string_append(deep, " : 0");
  g_autofree char *m1 = eval_error(deep->str, NULL);
  g_assert_nonnull(strstr(m1, "nested deeper than 64 levels"));
  g_string_truncate(deep, 0);
  for (int i = 0; i < 1000; i++) g_string_append(deep, "min(1, ");
  g_string_append_c(deep, '1');
  for (int i = 0; i < 1000; i++) g_string_append_c(deep, ')');
  g_autofree char *m2 = eval_error(deep->str, NULL);
  g_assert_nonnull(strstr(m2, "nested deeper than 64 levels"));
  g_string_free(deep, TRUE);
  /* Exactly at the limit is fine. */
  GString *ok = g_string_new(NULL);
  for (int i = 0; i < 64; i++) g_string_append(ok, "max(0, ");
  g_string_append_c(ok, '5');
  for (int i = 0; i < 64; i++) g_string_append_c(ok, ')');
  g_assert_cmpint(eval(ok->str, NULL), ==, 5);
  g_string_free(ok, TRUE);
}

static void test_sizes(void) {
  guint64 v;
  char *msg = NULL;
  g_assert_true(dr__size_parse("16Mi", DR_SIZE_COUNT, &v, &msg));
  g_assert_cmpuint(v, ==, 16u << 20);
  g_assert_true(dr__size_parse("1MiB", DR_SIZE_BYTES, &v, &msg));
  g_assert_cmpuint(v, ==, 1u << 20);
  g_assert_true(dr__size_parse("3GB", DR_SIZE_BYTES, &v, &msg));
  g_assert_cmpuint(v, ==, 3000000000u);
  g_assert_true(dr__size_parse("2kB", DR_SIZE_BYTES, &v, &msg));
  g_assert_cmpuint(v, ==, 2000u);
  g_assert_true(dr__size_parse("42", DR_SIZE_COUNT, &v, &msg));
  g_assert_cmpuint(v, ==, 42u);
  g_assert_false(dr__size_parse("1MiB", DR_SIZE_COUNT, &v, &msg));
  g_assert_nonnull(strstr(msg, "wrong size suffix"));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("1Mi", DR_SIZE_BYTES, &v, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("-1", DR_SIZE_COUNT, &v, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("99999999999999999999", DR_SIZE_COUNT, &v, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("16Gi Gi", DR_SIZE_COUNT, &v, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("17179869184Gi", DR_SIZE_COUNT, &v, &msg));
  g_clear_pointer(&msg, g_free);
}

static void test_slices(void) {
  DrVar vars[] = {{"c", 2}};
  DrEnv env = {vars, 1};
  DrSlice s;
  char *msg = NULL;
  g_assert_true(dr__slice_parse("x", NULL, &s, &msg));
  g_assert_cmpstr(s.name, ==, "x");
  g_assert_false(s.has_begin || s.has_end);
  g_free(s.name);
  g_assert_true(dr__slice_parse("buf_1[4:8]", NULL, &s, &msg));
  g_assert_cmpstr(s.name, ==, "buf_1");
  g_assert_true(s.has_begin && s.has_end);
  g_assert_cmpint(s.begin, ==, 4);
  g_assert_cmpint(s.end, ==, 8);
  g_free(s.name);
  g_assert_true(dr__slice_parse("y[:c*4]", &env, &s, &msg));
  g_assert_false(s.has_begin);
  g_assert_cmpint(s.end, ==, 8);
  g_free(s.name);
  g_assert_true(dr__slice_parse("y[1Ki:]", NULL, &s, &msg));
  g_assert_cmpint(s.begin, ==, 1024);
  g_assert_false(s.has_end);
  g_free(s.name);
  g_assert_false(dr__slice_parse("y[1]", NULL, &s, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__slice_parse("y[0:1]x", NULL, &s, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__slice_parse("[0:1]", NULL, &s, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__slice_parse("a b", NULL, &s, &msg));
  g_clear_pointer(&msg, g_free);
}

static void test_substitute(void) {
  DrVar vars[] = {{"i", 2}, {"j", 5}};
  DrEnv env = {vars, 2};
  char *msg = NULL;
  g_autofree char *a = dr__expr_substitute("n{i}_{j*10}", &env, &msg);
  g_assert_cmpstr(a, ==, "n2_50");
  g_autofree char *b = dr__expr_substitute("x[{i*4}:{(i+1)*4}]", &env, &msg);
  g_assert_cmpstr(b, ==, "x[8:12]");
  g_assert_null(dr__expr_substitute("a{i", &env, &msg));
  g_assert_nonnull(strstr(msg, "unmatched '{'"));
  g_clear_pointer(&msg, g_free);
  g_assert_null(dr__expr_substitute("a}", &env, &msg));
  g_clear_pointer(&msg, g_free);
  g_assert_null(dr__expr_substitute("{i/0}", &env, &msg));
  g_clear_pointer(&msg, g_free);
}

static void test_suggest(void) {
  g_assert_cmpuint(dr__edit_distance("args", "agrs", 5), ==, 1); /* a swap */
  g_assert_cmpuint(dr__edit_distance("kernel", "kernal", 5), ==, 1);
  g_assert_cmpuint(dr__edit_distance("abc", "abc", 5), ==, 0);
  g_assert_cmpuint(dr__edit_distance("", "abc", 5), ==, 3);
  g_assert_cmpuint(dr__edit_distance("abcdef", "a", 2), >, 2);
  DrSuggest s;
  dr__suggest_init(&s, "agrs");
  dr__suggest_add(&s, "op");
  dr__suggest_add(&s, "args");
  dr__suggest_add(&s, "after");
  g_assert_cmpstr(dr__suggest_best(&s), ==, "args");
  g_autofree char *hint = dr__suggest_hint(&s);
  g_assert_cmpstr(hint, ==, " (did you mean 'args'?)");
  dr__suggest_init(&s, "zzzzzz");
  dr__suggest_add(&s, "nodes");
  g_assert_null(dr__suggest_best(&s));
  /* Look-alikes: compared by their ASCII spelling, and named. */
  dr__suggest_init(&s, "\xd0\xbep"); /* Cyrillic o, Latin p */
  dr__suggest_add(&s, "after");
  dr__suggest_add(&s, "op");
  g_assert_cmpstr(dr__suggest_best(&s), ==, "op");
  g_autofree char *cyr = dr__suggest_hint(&s);
  g_assert_cmpstr(cyr, ==,
                  " (did you mean 'op'? '\xd0\xbe' is U+043E CYRILLIC SMALL LETTER O, not the ASCII 'o')");
  dr__suggest_init(&s, "x\xe2\x80\x93y"); /* an en dash */
  dr__suggest_add(&s, "x-y");
  g_assert_cmpstr(dr__suggest_best(&s), ==, "x-y");
  dr__suggest_init(&s, "\xef\xbd\x8f\xef\xbd\x90"); /* fullwidth op */
  dr__suggest_add(&s, "op");
  g_assert_cmpstr(dr__suggest_best(&s), ==, "op");
  g_autofree char *none = dr__suggest_describe_non_ascii("plain");
  g_assert_null(none);
  /* A one-letter key is no typo of a two-letter one it shares nothing with. */
  dr__suggest_init(&s, "x");
  dr__suggest_add(&s, "op");
  g_assert_null(dr__suggest_best(&s));
}

static void test_numbers(void) {
  gint64 i;
  guint64 u;
  char *msg = NULL;
  g_assert_true(dr__int_parse("0x1F", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpint(i, ==, 31);
  g_assert_true(dr__int_parse("0o17", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpint(i, ==, 15);
  g_assert_true(dr__int_parse("-0x10", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpint(i, ==, -16);
  g_assert_true(dr__int_parse("+7", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpint(i, ==, 7);
  g_assert_true(dr__int_parse("-9223372036854775808", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpint(i, ==, G_MININT64);
  g_assert_true(dr__size_parse("0x10KiB", DR_SIZE_BYTES, &u, &msg));
  g_assert_cmpuint(u, ==, 16384);
  g_assert_true(dr__size_parse("0xFFFFFFFFFFFFFFFF", DR_SIZE_COUNT, &u, &msg));
  g_assert_cmpuint(u, ==, G_MAXUINT64);
  g_assert_true(dr__size_parse("010", DR_SIZE_COUNT, &u, &msg)); /* 1.2: decimal, not octal */
  g_assert_cmpuint(u, ==, 10);
  static const struct {
    const char *text;
    const char *msg;
  } bad[] = {
      {"1.5", "'1.5' is not an integer"},
      {"2e3", "'2e3' is not an integer"},
      {"1_000",
       "'1_000' is not a number: only YAML 1.1 reads '_' as a digit separator; write the digits without it"},
      {"0b11", "'0b11' is a binary number, which only YAML 1.1 reads; write it in hexadecimal (0x...)"},
      {"0o", "'0o' has no digits after its '0o' prefix"},
      {"0o8", "'0o8' has no digits after its '0o' prefix"},
      {"18446744073709551616", "'18446744073709551616' does not fit in 64 bits"},
      {"0x10000000000000000", "'0x10000000000000000' does not fit in 64 bits"},
      {"16Gi", NULL}, /* fits */
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    gboolean ok = dr__size_parse(bad[k].text, DR_SIZE_COUNT, &u, &msg);
    if (bad[k].msg == NULL) {
      g_assert_true(ok);
      continue;
    }
    g_assert_false(ok);
    g_assert_cmpstr(msg, ==, bad[k].msg);
    g_clear_pointer(&msg, g_free);
  }
  g_assert_false(dr__size_parse("16777216TiB", DR_SIZE_BYTES, &u, &msg)); /* no such suffix */
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__size_parse("17179869184GiB", DR_SIZE_BYTES, &u, &msg));
  g_assert_cmpstr(msg, ==, "'17179869184GiB' does not fit in a 64-bit size in bytes");
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__int_parse("9223372036854775808", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpstr(msg, ==, "'9223372036854775808' does not fit in a 64-bit signed integer");
  g_clear_pointer(&msg, g_free);
  g_assert_false(dr__int_parse("many", DR_SIZE_COUNT, &i, &msg));
  g_assert_cmpstr(msg, ==, "expected an integer, got 'many'");
  g_clear_pointer(&msg, g_free);
  /* Expressions read the same integers. */
  g_assert_cmpint(eval("0x10 + 0o10", NULL), ==, 24);
  g_autofree char *m1 = eval_error("1_000 + 1", NULL);
  g_assert_nonnull(strstr(m1, "only YAML 1.1"));
  g_autofree char *m2 = eval_error("99999999999999999999", NULL);
  g_assert_nonnull(strstr(m2, "does not fit in 64 bits"));
}

/* Feeds `text` to a scanner in pieces of `step` bytes, the way events.c
 * does (an incomplete character is fed again with the next piece);
 * returns the good bytes handed on, with the BOM dropped. */
static GString *scan_in_steps(DrByteScan *s, const char *text, gsize len, gsize step) {
  GString *out = g_string_new(NULL);
  gsize have = 0, pos = 0; /* text[pos..have): fed, not yet handed on */
  for (;;) {
    gsize next = MIN(len, have + step);
    gboolean eof = next == len;
    gsize skip;
    gsize ready = dr__bytescan_feed(s, (const guint8 *)text + pos, next - pos, eof, &skip);
    g_string_append_len(out, text + pos + skip, (gssize)(ready - skip));
    pos += ready;
    have = next;
    if (s->problem != NULL || eof) break;
  }
  return out;
}

static void test_bytescan(void) {
  /* Line breaks as libyaml counts them; columns count characters. */
  const char *text = "a: 1\r\nb: \xd0\xba\xd0\xbb\rc: \xe2\x82\xac\n\td: \x01";
  for (gsize step = 1; step <= 8; step++) {
    DrByteScan s;
    dr__bytescan_init(&s);
    g_autoptr(GString) out = scan_in_steps(&s, text, strlen(text), step);
    g_assert_nonnull(s.problem);
    g_assert_cmpstr(s.problem, ==,
                    "control character U+0001; YAML allows only tab, line feed and carriage return");
    g_assert_cmpuint(s.problem_line, ==, 4);
    g_assert_cmpuint(s.problem_col, ==, 5);
    g_assert_cmpuint(out->len, ==, strlen(text) - 1);
    guint32 col;
    g_assert_true(dr__bytescan_indent_tab(&s, 4, &col));
    g_assert_cmpuint(col, ==, 1);
    g_assert_false(dr__bytescan_indent_tab(&s, 3, &col));
    dr__bytescan_clear(&s);
  }
  {
    DrByteScan s;
    dr__bytescan_init(&s);
    g_autoptr(GString) out = scan_in_steps(&s,
                                           "\xef\xbb\xbf"
                                           "a: \xc3",
                                           7, 2);
    g_assert_cmpstr(out->str, ==, "a: ");
    g_assert_cmpuint(s.problem_line, ==, 1);
    g_assert_cmpuint(s.problem_col, ==, 4); /* the BOM takes no column */
    g_assert_nonnull(strstr(s.problem, "the file ends inside the character that byte 0xC3 starts"));
    dr__bytescan_clear(&s);
  }
  static const struct {
    const char *text;
    gsize len;
    const char *msg;
    guint32 col;
  } bad[] = {
      {"\xff\xfe"
       "a\0",
       4, "the file is UTF-16 (little-endian, with a byte-order mark)", 1},
      {"\0a\0:", 4, "the file is UTF-16 (big-endian)", 1},
      {"a\0\0\0", 4, "the file is UTF-32 (little-endian)", 1},
      {"\0\0\xfe\xff", 4, "the file is UTF-32 (big-endian, with a byte-order mark)", 1},
      {"ab\0", 3, "a NUL byte (U+0000)", 3},
      {"ab\x80", 3, "invalid UTF-8 byte 0x80: a continuation byte without a first byte", 3},
      {"a\xc0\x80", 3, "invalid UTF-8 byte 0xC0: no UTF-8 character starts with it", 2},
      {"a\xe0\x80\x80", 4, "invalid UTF-8 sequence starting with byte 0xE0 (an overlong form)", 2},
      {"a\xed\xa0\x80", 4, "invalid UTF-8 sequence starting with byte 0xED (a UTF-16 surrogate)", 2},
      {"a\xf4\x90\x80\x80", 5, "invalid UTF-8 sequence starting with byte 0xF4 (past U+10FFFF)", 2},
      {"a\xc2\x9b", 3, "control character U+009B", 2},
      {"a\xef\xbf\xbe", 4, "character U+FFFE, which YAML does not allow in a file", 2},
      {"\xc3(", 2, "invalid UTF-8 byte 0xC3: it starts a 2-byte character, but 0x28 does not continue it", 1},
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    DrByteScan s;
    dr__bytescan_init(&s);
    g_autoptr(GString) out = scan_in_steps(&s, bad[k].text, bad[k].len, 64);
    g_assert_nonnull(s.problem);
    if (!g_str_has_prefix(s.problem, bad[k].msg)) g_error("case %u: got '%s'", k, s.problem);
    g_assert_cmpuint(s.problem_line, ==, 1);
    g_assert_cmpuint(s.problem_col, ==, bad[k].col);
    dr__bytescan_clear(&s);
  }
  /* Everything YAML allows passes: U+0085, U+00A0, U+FEFF inside, 4-byte. */
  {
    const char *ok = "a: \xc2\x85\xc2\xa0\xef\xbb\xbf\xf0\x9f\x98\x80\n";
    DrByteScan s;
    dr__bytescan_init(&s);
    g_autoptr(GString) out = scan_in_steps(&s, ok, strlen(ok), 3);
    g_assert_null(s.problem);
    g_assert_cmpstr(out->str, ==, ok);
    g_assert_cmpuint(s.line, ==, 3); /* U+0085 (NEL) ends a line for libyaml */
    dr__bytescan_clear(&s);
  }
}

/* A file read in 64 KiB chunks: a character across the boundary is
 * carried, and a bad byte far into the file is placed exactly. */
static void test_file_chunks(void) {
  GString *y = g_string_new("dagrun: 1\nnodes:\n  a: {op: noop, label: \"");
  while (y->len < 65535) g_string_append_c(y, 'x');
  g_string_append(y, "\xd0\xba\"}\n"); /* 0xD0 is the last byte of chunk 1 */
  g_string_append(y, "  b: {op: noop, label: \"\x1b\"}\n");
  g_autofree char *dir = g_dir_make_tmp("dagrun-parser-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "p.yaml", NULL);
  g_assert_true(g_file_set_contents(path, y->str, (gssize)y->len, NULL));
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_load_file(path, diags, &error);
  g_assert_null(g);
  g_assert_cmpuint(dr_diags_n_errors(diags), ==, 1);
  const DrDiag *d = dr_diags_get(diags, 0);
  g_assert_cmpstr(d->message, ==,
                  "control character U+001B; YAML allows only tab, line feed and carriage return");
  g_assert_cmpuint(d->loc.line, ==, 4);
  g_assert_cmpuint(d->loc.col, ==, 25);
  g_unlink(path);
  g_rmdir(dir);
  g_string_free(y, TRUE);
}

static DrYNode *tree(const char *yaml, DrDiags *diags) {
  return dr__yaml_parse_tree("t.yaml", yaml, strlen(yaml), diags);
}

static const DrYNode *lookup(const DrYNode *map, const char *key) {
  for (guint i = 0; i < map->len; i++)
    if (strcmp(dr_ynode_key(map, i)->u.text, key) == 0) return dr_ynode_value(map, i);
  return NULL;
}

static void test_merge_keys(void) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrYNode) t = tree(
      "a: &a {x: 1, y: 2}\n"
      "b: &b {y: 3, z: 4}\n"
      "c: {<<: [*a, *b], x: 9}\n"
      "d: {w: 0, <<: *b}\n",
      diags);
  g_assert_nonnull(t);
  g_assert_cmpuint(dr_diags_n_errors(diags), ==, 0);
  const DrYNode *c = lookup(t, "c");
  g_assert_cmpuint(c->len, ==, 3);
  g_assert_cmpstr(lookup(c, "x")->u.text, ==, "9"); /* explicit wins */
  g_assert_cmpstr(lookup(c, "y")->u.text, ==, "2"); /* earlier merged wins */
  g_assert_cmpstr(lookup(c, "z")->u.text, ==, "4");
  const DrYNode *d = lookup(t, "d");
  g_assert_cmpstr(dr_ynode_key(d, 0)->u.text, ==, "w"); /* merged keys at the << position */
  g_assert_cmpstr(dr_ynode_key(d, 1)->u.text, ==, "y");
  /* Aliases share the anchored subtree. */
  g_assert_true(lookup(t, "a") == dr_ynode_value(c, 1) || lookup(c, "y") == lookup(lookup(t, "a"), "y"));
}

static void test_events_errors(void) {
  {
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrYNode) t = tree("a: 1\nb: 2\na: 3\n", diags);
    g_assert_cmpuint(dr_diags_n_errors(diags), ==, 1);
    g_assert_cmpstr(dr_diags_get(diags, 0)->message, ==, "duplicate key 'a'");
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.line, ==, 3);
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.col, ==, 1);
  }
  {
    GString *deep = g_string_new("a: ");
    for (int i = 0; i < 100000; i++) g_string_append_c(deep, '[');
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrYNode) t = tree(deep->str, diags);
    g_assert_null(t);
    g_assert_nonnull(strstr(dr_diags_get(diags, 0)->message, "nested deeper than 64"));
    g_string_free(deep, TRUE);
  }
  {
    GString *bomb = g_string_new("a: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 40; i++) {
      g_string_append_printf(bomb, "a%d: &a%d [", i, i);
      for (int j = 0; j < 10; j++) g_string_append_printf(bomb, "%s*a%d", j ? ", " : "", i - 1);
      g_string_append(bomb, "]\n");
    }
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(DrYNode) t = tree(bomb->str, diags);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 500000);
    g_assert_null(t);
    g_assert_nonnull(strstr(dr_diags_get(diags, 0)->message, "alias bomb"));
    g_string_free(bomb, TRUE);
  }
  {
    /* Two merge keys are a duplicate key; the second is dropped. */
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrYNode) t = tree("a: &a {x: 1}\nb: &b {y: 2}\nc: {<<: *a, <<: *b}\n", diags);
    g_assert_cmpuint(dr_diags_n_errors(diags), ==, 1);
    g_assert_nonnull(strstr(dr_diags_get(diags, 0)->message, "duplicate key '<<'"));
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.col, ==, 13);
    g_assert_cmpuint(dr_diags_get(diags, 1)->loc.col, ==, 5);
    const DrYNode *c = lookup(t, "c");
    g_assert_cmpuint(c->len, ==, 1);
    g_assert_cmpstr(dr_ynode_key(c, 0)->u.text, ==, "x");
  }
  {
    /* "op\0" is not op. */
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrYNode) t = tree("a: {\"op\\0\": noop}\n", diags);
    g_assert_cmpuint(dr_diags_n_errors(diags), ==, 1);
    g_assert_nonnull(strstr(dr_diags_get(diags, 0)->message, "NUL character"));
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.col, ==, 5);
  }
  {
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrYNode) t = tree("a: &a [1, *a]\n", diags);
    g_assert_nonnull(strstr(dr_diags_get(diags, 0)->message, "refers to its own anchor"));
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.line, ==, 1);
    g_assert_cmpuint(dr_diags_get(diags, 0)->loc.col, ==, 11);
  }
}

static DrGraph *load(const char *yaml, DrDiags *diags);

/* An alias bomb spread over many nodes: each node stays under the per-entry
 * budget, the file as a whole must not. */
static void test_spread_alias_bomb(void) {
  GString *y = g_string_new("dagrun: 1\nnodes:\n  n0:\n    op: noop\n    label:\n");
  g_string_append(y, "      - &l0 [a, a, a, a, a, a, a, a, a, a]\n");
  for (int i = 1; i < 6; i++) {
    g_string_append_printf(y, "      - &l%d [", i);
    for (int j = 0; j < 10; j++) g_string_append_printf(y, "%s*l%d", j ? ", " : "", i - 1);
    g_string_append(y, "]\n");
  }
  /* l5 holds about 1.1e6 values: over the per-entry budget already, so
   * use l4 (~1.1e5) in many nodes. */
  for (int i = 1; i < 3000; i++) g_string_append_printf(y, "  n%d: {op: noop, after: *l4}\n", i);
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(DrGraph) g = load(y->str, diags);
  g_assert_null(g);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
  gboolean found = FALSE;
  for (guint i = 0; i < dr_diags_len(diags); i++)
    found |= strstr(dr_diags_get(diags, i)->message, "alias bomb") != NULL;
  g_assert_true(found);
  g_string_free(y, TRUE);
}

static DrGraph *load(const char *yaml, DrDiags *diags) {
  g_autoptr(GError) error = NULL;
  DrGraph *g = dr_load_string("t.yaml", yaml, strlen(yaml), diags, &error);
  if (g == NULL) g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  return g;
}

static void test_foreach_order(void) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g = load(
      "dagrun: 1\nnodes:\n"
      "  n{a}_{b}:\n    foreach: {a: 0..1, b: [7, 5, 6]}\n    op: noop\n",
      diags);
  g_assert_nonnull(g);
  const char *want[] = {"n0_7", "n0_5", "n0_6", "n1_7", "n1_5", "n1_6"};
  g_assert_cmpuint(dr_graph_n_nodes(g), ==, G_N_ELEMENTS(want));
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) g_assert_cmpstr(dr_graph_node(g, i)->id, ==, want[i]);
}

/* Foreach groups against their hand expansion, on random groups: 1 or 2
 * group variables (ranges and lists), 1 to 4 entries per group, some with
 * a foreach of their own whose range uses a group variable, memsets whose
 * slices and values are expressions of both; the group's IR dump must be
 * the dump of the same nodes written out one by one in file order. */
static void test_foreach_group_property(void) {
  GRand *r = g_rand_new_with_seed(20);
  for (int round = 0; round < 300; round++) {
    GString *grp = g_string_new("dagrun: 1\nbuffers: {d: {type: u8, count: 4096}}\nnodes:\n  g:\n");
    GString *flat = g_string_new("dagrun: 1\nbuffers: {d: {type: u8, count: 4096}}\nnodes:\n");
    gint64 a0 = g_rand_int_range(r, -2, 3), a1 = a0 + g_rand_int_range(r, 0, 4);
    gboolean two = g_rand_boolean(r);
    gint64 bl[3] = {g_rand_int_range(r, 0, 5), g_rand_int_range(r, 5, 9), g_rand_int_range(r, 9, 12)};
    guint nb = g_rand_int_range(r, 1, 4);
    g_string_append_printf(grp, "    foreach: {a: %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT, a0, a1);
    if (two) {
      g_string_append(grp, ", b: [");
      for (guint k = 0; k < nb; k++) g_string_append_printf(grp, "%s%" G_GINT64_FORMAT, k ? ", " : "", bl[k]);
      g_string_append(grp, "]");
    }
    g_string_append(grp, "}\n    nodes:\n");
    guint n_entries = g_rand_int_range(r, 1, 5);
    gboolean inner[4];
    for (guint e = 0; e < n_entries; e++) {
      inner[e] = g_rand_int_range(r, 0, 3) == 0;
      g_string_append_printf(grp, "      e%u_{a + 10}_{%s}%s:\n", e, two ? "b" : "0", inner[e] ? "_{c}" : "");
      if (inner[e]) g_string_append(grp, "        foreach: {c: \"0..a - (a > 0 ? 1 : 0) + 2\"}\n");
      g_string_append_printf(
          grp,
          "        op: memset\n        dst: \"d[{(a + 2) * 100 + %s * 5 + %u%s}:{(a + 2) "
          "* 100 + %s * 5 + %u%s + 1}]\"\n        value: \"{(a * 7 + %u) %% 256 + 0 * %s}\"\n",
          two ? "b" : "0", e, inner[e] ? " + c * 20" : "", two ? "b" : "0", e, inner[e] ? " + c * 20" : "", e,
          two ? "b" : "0");
      if (e > 0 && g_rand_boolean(r)) g_string_append(grp, "        after: [\"e0*\"]\n");
    }
    for (gint64 a = a0; a <= a1; a++)
      for (guint k = 0; k < (two ? nb : 1); k++) {
        gint64 b = two ? bl[k] : 0;
        for (guint e = 0; e < n_entries; e++) {
          gint64 cmax = inner[e] ? a - (a > 0 ? 1 : 0) + 2 : 0;
          for (gint64 c = 0; c <= cmax; c++) {
            g_string_append_printf(flat, "  e%u_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT, e, a + 10, b);
            if (inner[e]) g_string_append_printf(flat, "_%" G_GINT64_FORMAT, c);
            gint64 at = (a + 2) * 100 + b * 5 + e + (inner[e] ? c * 20 : 0);
            g_string_append_printf(flat,
                                   ": {op: memset, dst: \"d[%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT
                                   "]\", value: %" G_GINT64_FORMAT,
                                   at, at + 1, (a * 7 + (gint64)e) % 256);
            /* after: in the group text, found again by a plain search. */
            g_autofree char *key = g_strdup_printf("      e%u_", e);
            const char *at_key = strstr(grp->str, key);
            const char *next = e + 1 < n_entries ? strstr(at_key + 1, "      e") : NULL;
            const char *aft = strstr(at_key, "after:");
            if (aft && (next == NULL || aft < next)) g_string_append(flat, ", after: [\"e0*\"]");
            g_string_append(flat, "}\n");
          }
        }
      }
    g_autoptr(DrDiags) d1 = dr_diags_new(0);
    g_autoptr(DrDiags) d2 = dr_diags_new(0);
    /* (a*7+e) % 256 is negative for a < 0: C's % keeps the sign, so such
     * a value is an error in both, at the first bad expansion. */
    g_autoptr(DrGraph) g1 = load(grp->str, d1);
    g_autoptr(DrGraph) g2 = load(flat->str, d2);
    if (a0 < 0) {
      g_assert_null(g1);
      g_assert_null(g2);
    } else {
      if (g1 == NULL || g2 == NULL) g_error("round %d:\n%s\n---\n%s", round, grp->str, flat->str);
      g_autoptr(GString) t1 = g_string_new(NULL);
      g_autoptr(GString) t2 = g_string_new(NULL);
      dr_graph_dump(g1, t1);
      dr_graph_dump(g2, t2);
      g_assert_cmpstr(t1->str, ==, t2->str);
    }
    g_string_free(grp, TRUE);
    g_string_free(flat, TRUE);
  }
  g_rand_free(r);
}

static void test_kernel_args(void) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g = load(
      "dagrun: 1\n"
      "buffers: {y: {type: f32, count: 100}}\n"
      "nodes:\n"
      "  a: {op: alloc, buffer: y}\n"
      "  i: {op: kernel, kernel: iota_f32, args: {y: 'y[10:20]', step: 2}}\n"
      "  f: {op: free, buffer: y}\n",
      diags);
  g_assert_nonnull(g);
  const DrNode *n = dr_graph_node(g, 1);
  g_assert_cmpuint(n->access_count, ==, 1);
  g_assert_cmpuint(n->arg_count, ==, 3);
  const DrArg *y = dr_graph_arg(g, n->arg_first);
  g_assert_cmpint(y->kind, ==, DR_ARG_BUFFER);
  const DrAccess *acc = dr_graph_access(g, y->v.access);
  g_assert_cmpint(acc->mode, ==, DR_ACCESS_WRITE);
  g_assert_cmpuint(acc->begin, ==, 10);
  g_assert_cmpuint(acc->end, ==, 20);
  g_assert_cmpuint(acc->loc.line, ==, 5);
  const DrArg *start = dr_graph_arg(g, n->arg_first + 1); /* left out: the default */
  g_assert_cmpint(start->kind, ==, DR_ARG_FLOAT);
  g_assert_cmpfloat(start->v.f, ==, 0.0);
  const DrArg *step = dr_graph_arg(g, n->arg_first + 2);
  g_assert_cmpfloat(step->v.f, ==, 2.0);
  const DrBuffer *b = dr_graph_buffer(g, 0);
  g_assert_cmpuint(b->alloc_node, ==, 0);
  g_assert_cmpuint(b->free_node, ==, 2);
}

static void test_diags_limit(void) {
  GString *y = g_string_new("dagrun: 1\nnodes:\n");
  for (int i = 0; i < 100; i++) g_string_append_printf(y, "  n%d: {op: nop}\n", i);
  g_autoptr(DrDiags) diags = dr_diags_new(5);
  g_autoptr(DrGraph) g = load(y->str, diags);
  g_assert_null(g);
  g_assert_cmpuint(dr_diags_len(diags), ==, 5);
  /* The parser reads on past the limit, so the count is exact. */
  g_assert_cmpuint(dr_diags_n_errors(diags), ==, 100);
  g_autoptr(GError) error = NULL;
  g_assert_false(dr_diags_to_error(diags, &error));
  g_assert_true(g_str_has_suffix(error->message, "\nerror: too many errors (100), showing the first 5"));
  g_string_free(y, TRUE);
}

/* An error in anchored content gets a note at each alias that brought it
 * into the node, innermost first, whether the nodes are converted at once
 * or held until buffers: is read. */
static void test_alias_notes(void) {
  const char *body =
      "  base: &base {op: kernel, kernel: scale_f32, args: {x: x, alpha: bad, y: y}}\n"
      "  mid: &mid {<<: *base, priority: high}\n"
      "  top: {<<: *mid, label: top}\n";
  const char *bufs = "buffers: {x: {type: f32, count: 8}, y: {type: f32, count: 8}}\n";
  for (int deferred = 0; deferred < 2; deferred++) {
    g_autofree char *y = deferred ? g_strdup_printf("dagrun: 1\nnodes:\n%s%s", body, bufs)
                                  : g_strdup_printf("dagrun: 1\n%snodes:\n%s", bufs, body);
    guint base_line = deferred ? 3 : 4;
    g_autoptr(DrDiags) diags = dr_diags_new(0);
    g_autoptr(DrGraph) g = load(y, diags);
    g_assert_null(g);
    g_assert_cmpuint(dr_diags_n_errors(diags), ==, 3);
    g_assert_cmpuint(dr_diags_len(diags), ==, 6);
    static const struct {
      DrDiagKind kind;
      guint line_off, col;
      const char *text;
    } want[] = {
        {DR_DIAG_ERROR, 0, 67, "node 'base', argument 'alpha': expected a number, got 'bad'"},
        {DR_DIAG_ERROR, 0, 67, "node 'mid', argument 'alpha': expected a number, got 'bad'"},
        {DR_DIAG_NOTE, 1, 18, "in expansion of alias '*base' (merged by '<<') here"},
        {DR_DIAG_ERROR, 0, 67, "node 'top', argument 'alpha': expected a number, got 'bad'"},
        {DR_DIAG_NOTE, 1, 18, "in expansion of alias '*base' (merged by '<<') here"},
        {DR_DIAG_NOTE, 2, 13, "in expansion of alias '*mid' (merged by '<<') here"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
      const DrDiag *d = dr_diags_get(diags, i);
      g_assert_cmpint(d->kind, ==, want[i].kind);
      g_assert_cmpstr(d->message, ==, want[i].text);
      g_assert_cmpuint(d->loc.line, ==, base_line + want[i].line_off);
      g_assert_cmpuint(d->loc.col, ==, want[i].col);
    }
  }
  /* A plain alias (no merge) in a buffer, and no note for the anchor's own
   * definition. */
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(DrGraph) g =
      load("dagrun: 1\nbuffers:\n  z: &bad {type: f33, count: 8}\n  w: *bad\nnodes: {}\n", diags);
  g_assert_cmpuint(dr_diags_len(diags), ==, 3);
  g_assert_cmpint(dr_diags_get(diags, 1)->kind, ==, DR_DIAG_ERROR);
  g_assert_cmpstr(dr_diags_get(diags, 2)->message, ==, "in expansion of alias '*bad' here");
  g_assert_cmpuint(dr_diags_get(diags, 2)->loc.line, ==, 4);
  g_assert_cmpuint(dr_diags_get(diags, 2)->loc.col, ==, 6);
}

static void test_load_errors(void) {
  g_autoptr(DrDiags) diags = dr_diags_new(0);
  g_autoptr(GError) error = NULL;
  g_autoptr(DrGraph) g = dr_load_file("/nonexistent/p.yaml", diags, &error);
  g_assert_null(g);
  g_assert_error(error, DR_ERROR, DR_ERROR_IO);
  g_assert_cmpstr(error->message, ==, "/nonexistent/p.yaml: error: cannot read: No such file or directory");
  g_assert_cmpint(dr_error_exit_code(error), ==, 66);
}

static void test_builtins_registered(void) {
  g_autoptr(DrGraph) g = dr_graph_new();
  dr__graph_register_builtins(g);
  DrId k = dr_graph_find_kernel(g, "scale_f32");
  g_assert_cmpuint(k, !=, DR_NONE);
  const DrKernelDecl *d = dr_graph_kernel(g, k);
  g_assert_cmpint(d->origin, ==, DR_KERNEL_BUILTIN);
  g_assert_cmpuint(d->n_params, ==, 3);
  g_assert_cmpstr(d->params[1].name, ==, "alpha");
  g_assert_false(d->params[1].is_pointer);
  g_assert_cmpint(d->params[2].access, ==, DR_ACCESS_WRITE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/parser/expr/arithmetic", test_expr_arithmetic);
  g_test_add_func("/parser/expr/errors", test_expr_errors);
  g_test_add_func("/parser/expr/compare_select", test_expr_compare_select);
  g_test_add_func("/parser/expr/compare_select_errors", test_expr_compare_select_errors);
  g_test_add_func("/parser/expr/sizes", test_sizes);
  g_test_add_func("/parser/expr/slices", test_slices);
  g_test_add_func("/parser/expr/substitute", test_substitute);
  g_test_add_func("/parser/expr/numbers", test_numbers);
  g_test_add_func("/parser/bytes/scan", test_bytescan);
  g_test_add_func("/parser/bytes/file-chunks", test_file_chunks);
  g_test_add_func("/parser/suggest", test_suggest);
  g_test_add_func("/parser/events/merge-keys", test_merge_keys);
  g_test_add_func("/parser/events/errors", test_events_errors);
  g_test_add_func("/parser/nodes/foreach-order", test_foreach_order);
  g_test_add_func("/parser/nodes/kernel-args", test_kernel_args);
  g_test_add_func("/parser/nodes/foreach-group-property", test_foreach_group_property);
  g_test_add_func("/parser/errors/limit", test_diags_limit);
  g_test_add_func("/parser/errors/spread-alias-bomb", test_spread_alias_bomb);
  g_test_add_func("/parser/errors/alias-notes", test_alias_notes);
  g_test_add_func("/lib/load/errors", test_load_errors);
  g_test_add_func("/lib/load/builtins", test_builtins_registered);
  return g_test_run();
}
