/* loops_api_test.c: loops and conditionals through the public library
 * (dr_pipeline_new_body, dr_pipeline_add_repeat/while/if, lib/loops.c):
 * the pipeline built by calls is the YAML's (dr_pipeline_write_yaml of it
 * loads back and writes the same text, with scoped ids), it runs on the
 * host backend with the YAML's trips, and a bad body or condition is the
 * YAML's error. */
#include <string.h>

#include "include/dagrun/dagrun.h"

#define OK(call)                 \
  do {                           \
    g_autoptr(GError) e_ = NULL; \
    gboolean ok_ = (call);       \
    g_assert_no_error(e_);       \
    g_assert_true(ok_);          \
  } while (0)
#define E (&e_)

/* x (f32 16, iota), s, one (f32), go (i32); init, first. */
static DrPipeline *base(void) {
  DrPipeline *p = dr_pipeline_new("loops");
  OK(dr_pipeline_add_buffer(p, "x", DR_ELEM_F32, 16, DR_WHERE_DEVICE, E));
  OK(dr_pipeline_buffer_init_iota(p, "x", E));
  OK(dr_pipeline_add_buffer(p, "s", DR_ELEM_F32, 16, DR_WHERE_DEVICE, E));
  OK(dr_pipeline_buffer_init_zeros(p, "s", E));
  OK(dr_pipeline_add_buffer(p, "one", DR_ELEM_F32, 1, DR_WHERE_DEVICE, E));
  OK(dr_pipeline_add_buffer(p, "go", DR_ELEM_I32, 1, DR_WHERE_DEVICE, E));
  DrNamedArg fill1[] = {DR_NAMED_WHOLE("y", "one"), DR_NAMED_FLOAT("value", 1.0)};
  OK(dr_pipeline_add_kernel_node(p, "init", "fill_f32", fill1, 2, E));
  DrNamedArg fill5[] = {DR_NAMED_SLICE("y", "x", 0, 1), DR_NAMED_FLOAT("value", 5.0)};
  OK(dr_pipeline_add_kernel_node(p, "first", "fill_f32", fill5, 2, E));
  return p;
}

/* The convergence body: x[0] halves, s[0] counts, go = x[0] > 0.01. */
static void fill_while_body(DrPipeline *body) {
  DrNamedArg half[] = {DR_NAMED_SLICE("x", "x", 0, 1), DR_NAMED_FLOAT("alpha", 0.5),
                       DR_NAMED_SLICE("y", "x", 0, 1)};
  OK(dr_pipeline_add_kernel_node(body, "half", "scale_f32", half, 3, E));
  DrNamedArg count[] = {DR_NAMED_SLICE("a", "s", 0, 1), DR_NAMED_WHOLE("b", "one"),
                        DR_NAMED_SLICE("y", "s", 0, 1)};
  OK(dr_pipeline_add_kernel_node(body, "count", "add_f32", count, 3, E));
  DrNamedArg check[] = {DR_NAMED_WHOLE("x", "x"), DR_NAMED_FLOAT("tol", 0.01), DR_NAMED_WHOLE("cond", "go")};
  OK(dr_pipeline_add_kernel_node(body, "check", "set_while_gt_f32", check, 3, E));
  OK(dr_pipeline_node_after(body, "check", "count", E));
}

static void test_build(void) {
  DrPipeline *p = base();
  DrPipeline *body = dr_pipeline_new_body(p, "solve");
  g_assert_nonnull(body);
  fill_while_body(body);
  /* A repeat nested in the while's body. */
  DrPipeline *inner = dr_pipeline_new_body(body, "twice");
  DrNamedArg acc[] = {DR_NAMED_SLICE("a", "s", 1, 2), DR_NAMED_WHOLE("b", "one"),
                      DR_NAMED_SLICE("y", "s", 1, 2)};
  OK(dr_pipeline_add_kernel_node(inner, "acc", "add_f32", acc, 3, E));
  OK(dr_pipeline_add_repeat(body, "twice", 2, inner, E));
  dr_pipeline_free(inner);
  OK(dr_pipeline_add_while(p, "solve", "go", body, E));
  dr_pipeline_free(body);
  DrPipeline *yes = dr_pipeline_new_body(p, "pick"), *no = dr_pipeline_new_body(p, "pick");
  OK(dr_pipeline_add_memset(yes, "yes", DR_SLICE("s", 4, 8), 1, E));
  OK(dr_pipeline_add_memset(no, "nay", DR_SLICE("s", 4, 8), 2, E));
  OK(dr_pipeline_add_if(p, "pick", "go", yes, no, E));
  dr_pipeline_free(yes);
  dr_pipeline_free(no);

  g_autoptr(GString) yaml = g_string_new(NULL);
  OK(dr_pipeline_write_yaml(p, yaml, E));
  g_test_message("%s", yaml->str);
  g_assert_nonnull(strstr(yaml->str, "\"solve\": {op: loop, while: \"go\", nodes: {\"half\""));
  g_assert_nonnull(strstr(yaml->str, "repeat: 2"));
  g_assert_nonnull(strstr(yaml->str, "\"pick\": {op: if, if: \"go\""));
  g_autoptr(GError) error = NULL;
  DrPipeline *back = dr_pipeline_load_string("back.yaml", yaml->str, -1, &error);
  g_assert_no_error(error);
  g_autoptr(GString) again = g_string_new(NULL);
  OK(dr_pipeline_write_yaml(back, again, E));
  g_assert_cmpstr(again->str, ==, yaml->str);

  /* Runs on the host backend: 9 trips, the same as the YAML's. */
  DrStreamPlan *plan = dr_pipeline_plan(p, NULL, &error);
  g_assert_no_error(error);
  DrRunSettings rs;
  dr_run_settings_init(&rs, p);
  rs.backend = DR_BACKEND_HOST;
  rs.iterations = 1;
  rs.warmup = 0;
  DrRunReport *r = dr_stream_plan_run(plan, &rs, &error);
  g_assert_no_error(error);
  g_autoptr(GString) json = g_string_new(NULL);
  dr_run_report_write_json(r, json);
  g_assert_nonnull(strstr(
      json->str, "\"loops\": [{\"id\": \"solve\", \"iterations\": 1, \"trips_min\": 9, \"trips_max\": 9"));
  gboolean scoped = FALSE;
  for (guint i = 0; i < dr_run_report_n_nodes(r); i++)
    scoped |= strcmp(dr_run_report_node_id(r, i), "solve") == 0;
  g_assert_true(scoped);
  dr_run_report_free(r);
  dr_stream_plan_free(plan);
  dr_pipeline_free(back);
  dr_pipeline_free(p);
}

/* The YAML's errors: a while whose body never writes its condition, a
 * host node in a body, a condition that is no i32 device buffer; nothing
 * is added, and the pipeline stays usable. */
static void test_errors(void) {
  DrPipeline *p = base();
  g_autoptr(GError) error = NULL;
  DrPipeline *body = dr_pipeline_new_body(p, "l");
  DrNamedArg half[] = {DR_NAMED_SLICE("x", "x", 0, 1), DR_NAMED_FLOAT("alpha", 0.5),
                       DR_NAMED_SLICE("y", "x", 0, 1)};
  OK(dr_pipeline_add_kernel_node(body, "half", "scale_f32", half, 3, E));
  g_assert_false(dr_pipeline_add_while(p, "l", "go", body, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_INVALID);
  g_test_message("%s", error->message);
  g_assert_nonnull(strstr(error->message, "node 'l', key 'while': no node of the body writes go[0]"));
  g_clear_error(&error);
  g_assert_false(dr_pipeline_add_while(p, "l", "x", body, &error));
  g_assert_nonnull(strstr(error->message, "a condition is a device buffer of type i32"));
  g_clear_error(&error);
  DrNamedArg msg[] = {DR_NAMED_STRING("message", "hi")};
  OK(dr_pipeline_add_host(body, "show", "print", msg, 1, E));
  g_assert_false(dr_pipeline_add_repeat(p, "l", 3, body, &error));
  g_assert_nonnull(strstr(error->message, "node 'l/show': op 'host' cannot be in the body of loop 'l'"));
  g_clear_error(&error);
  dr_pipeline_free(body);
  /* Nothing was added: the id is still free. */
  DrPipeline *ok = dr_pipeline_new_body(p, "l");
  OK(dr_pipeline_add_kernel_node(ok, "half", "scale_f32", half, 3, E));
  OK(dr_pipeline_add_repeat(p, "l", 3, ok, E));
  /* The body is frozen once used. */
  g_assert_false(dr_pipeline_add_repeat(p, "l2", 3, ok, &error));
  g_assert_error(error, DR_ERROR, DR_ERROR_USAGE);
  g_clear_error(&error);
  dr_pipeline_free(ok);
  dr_pipeline_free(p);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/api/loops/build", test_build);
  g_test_add_func("/api/loops/errors", test_errors);
  return g_test_run();
}
