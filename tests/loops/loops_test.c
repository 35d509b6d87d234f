/* loops_test.c: loops and conditionals (ir/loops.h) on the host backend,
 * through the public library.
 *
 * The property: a random loop body (kernels, memsets and device copies
 * over random slices of a few buffers, sometimes a nested loop) run as
 * `repeat: N` leaves every buffer with the same bytes as the same body
 * written out N times in a row (the unrolled form), on plans of several
 * streams, with random delays before every node (--delay-seed) and
 * --verify against the serial plan. A while loop and a conditional are
 * checked against trips computed here. The CUDA backend's loops are
 * tested on the fake (tests/fault) and on the GPU (tests/gpu/run.sh). */
#include <math.h>
#include <string.h>

#include "include/dagrun/dagrun.h"

#define N_BUF 4
#define LEN 32

typedef struct {
  GString *y;
  GRand *rng;
} Gen;

/* A random slice "bK[a:a+l]" of length l. */
static void slice(Gen *g, guint l, int buf, GString *out) {
  guint a = (guint)g_rand_int_range(g->rng, 0, LEN - (gint)l + 1);
  g_string_append_printf(out, "\"b%d[%u:%u]\"", buf, a, a + l);
}

/* One random node body text (the value after "ID: "). */
static void random_node(Gen *g, GString *out) {
  guint l = g_rand_boolean(g->rng) ? 8 : 16;
  int kind = g_rand_int_range(g->rng, 0, 5);
  int src = g_rand_int_range(g->rng, 0, N_BUF), dst = g_rand_int_range(g->rng, 0, N_BUF);
  switch (kind) {
    case 0:
      g_string_append(out, "{op: kernel, kernel: scale_f32, args: {x: ");
      slice(g, l, src, out);
      g_string_append_printf(out, ", alpha: %s, y: ", g_rand_boolean(g->rng) ? "0.5" : "1.25");
      slice(g, l, dst, out);
      g_string_append(out, "}}");
      break;
    case 1:
      g_string_append(out, "{op: kernel, kernel: add_f32, args: {a: ");
      slice(g, l, src, out);
      g_string_append(out, ", b: ");
      slice(g, l, g_rand_int_range(g->rng, 0, N_BUF), out);
      g_string_append(out, ", y: ");
      slice(g, l, dst, out);
      g_string_append(out, "}}");
      break;
    case 2:
      g_string_append(out, "{op: kernel, kernel: axpy_f32, args: {alpha: 0.25, x: ");
      slice(g, l, src, out);
      g_string_append(out, ", y: ");
      slice(g, l, dst, out);
      g_string_append(out, "}}");
      break;
    case 3:
      g_string_append(out, "{op: copy, src: ");
      slice(g, l, src, out);
      g_string_append(out, ", dst: ");
      slice(g, l, dst, out);
      g_string_append(out, "}");
      break;
    default:
      g_string_append(out, "{op: memset, dst: ");
      slice(g, l, dst, out);
      g_string_append_printf(out, ", value: %d}", g_rand_int_range(g->rng, 0, 3) * 0x3f);
      break;
  }
}

/* A random body: n nodes, each a line "INDENT ID: NODE", maybe a nested
 * loop as one of them. Kept as a list of (id, text, nested) so that the
 * loop form and the unrolled form write the same nodes. */
typedef struct Body Body;
struct Body {
  GPtrArray *ids, *texts; /* char *; text NULL: nested[i] */
  GPtrArray *nested;      /* Body * or NULL */
  guint repeat;
};

static void body_free(Body *b) {
  if (b == NULL) return;
  g_ptr_array_unref(b->ids);
  g_ptr_array_unref(b->texts);
  g_ptr_array_unref(b->nested);
  g_free(b);
}

static Body *random_body(Gen *g, guint depth) {
  Body *b = g_new0(Body, 1);
  b->ids = g_ptr_array_new_with_free_func(g_free);
  b->texts = g_ptr_array_new_with_free_func(g_free);
  b->nested = g_ptr_array_new_with_free_func((GDestroyNotify)body_free);
  b->repeat = (guint)g_rand_int_range(g->rng, 1, depth == 0 ? 5 : 3);
  guint n = (guint)g_rand_int_range(g->rng, 1, 7);
  for (guint i = 0; i < n; i++) {
    g_ptr_array_add(b->ids, g_strdup_printf("n%u", i));
    if (depth == 0 && g_rand_int_range(g->rng, 0, 5) == 0) {
      g_ptr_array_add(b->texts, NULL);
      g_ptr_array_add(b->nested, random_body(g, depth + 1));
    } else {
      GString *t = g_string_new(NULL);
      random_node(g, t);
      g_ptr_array_add(b->texts, g_string_free(t, FALSE));
      g_ptr_array_add(b->nested, NULL);
    }
  }
  return b;
}

static void indent(GString *out, guint n) {
  for (guint i = 0; i < n; i++) g_string_append(out, "  ");
}

/* The body as a loop node "ID: {op: loop, repeat: N, nodes: ...}". */
static void write_loop(const Body *b, const char *id, guint depth, GString *out) {
  indent(out, depth);
  g_string_append_printf(out, "%s:\n", id);
  indent(out, depth + 1);
  g_string_append_printf(out, "op: loop\n");
  indent(out, depth + 1);
  g_string_append_printf(out, "repeat: %u\n", b->repeat);
  indent(out, depth + 1);
  g_string_append(out, "nodes:\n");
  for (guint i = 0; i < b->ids->len; i++) {
    if (b->texts->pdata[i] == NULL) {
      write_loop(b->nested->pdata[i], b->ids->pdata[i], depth + 2, out);
      continue;
    }
    indent(out, depth + 2);
    g_string_append_printf(out, "%s: %s\n", (char *)b->ids->pdata[i], (char *)b->texts->pdata[i]);
  }
}

/* The body written out b->repeat times, ids prefixed "PREFIXtK_". */
static void write_unrolled(const Body *b, const char *prefix, GString *out) {
  for (guint t = 0; t < b->repeat; t++)
    for (guint i = 0; i < b->ids->len; i++) {
      g_autofree char *id = g_strdup_printf("%st%u_%s", prefix, t, (char *)b->ids->pdata[i]);
      if (b->texts->pdata[i] == NULL) {
        g_autofree char *p = g_strconcat(id, "_", NULL);
        write_unrolled(b->nested->pdata[i], p, out);
        continue;
      }
      g_string_append_printf(out, "  %s: %s\n", id, (char *)b->texts->pdata[i]);
    }
}

static void header(GString *out, guint seed) {
  g_string_append(out, "dagrun: 1\nbuffers:\n");
  for (int i = 0; i < N_BUF; i++)
    g_string_append_printf(out, "  b%d: {type: f32, count: %d, init: {random: %u}}\n", i, LEN, seed + i);
  g_string_append(out, "  go: {type: i32, count: 1}\nnodes:\n");
}

/* Runs `yaml` once on the host backend with verify and delays (the run
 * must pass), then once more in a session with other delays; returns every
 * buffer's bytes after that run (b0..b3 then go) concatenated. */
static GBytes *run(const char *yaml, guint64 delay_seed) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("loop.yaml", yaml, -1, &error);
  if (error) g_printerr("%s\n---\n%s", error->message, yaml);
  g_assert_no_error(error);
  DrPlanSettings ps = {0};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &ps, &error);
  g_assert_no_error(error);
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_HOST;
  s.iterations = 1;
  s.warmup = 0;
  s.verify = TRUE;
  s.delay_seed = delay_seed;
  s.delay_max_us = 20;
  DrRunReport *rep = dr_stream_plan_run(plan, &s, &error);
  g_assert_no_error(error);
  g_assert_cmpint(dr_run_report_verified(rep), ==, DR_VERIFIED_PASS);
  dr_run_report_free(rep);
  /* The bytes, from a session (verify is for one-shot runs), delayed too. */
  s.verify = FALSE;
  s.delay_seed = delay_seed + 1;
  DrRunner *r = dr_runner_new(plan, &s, &error);
  g_assert_no_error(error);
  rep = dr_runner_run(r, &error);
  g_assert_no_error(error);
  dr_run_report_free(rep);
  GByteArray *all = g_byte_array_new();
  float buf[LEN];
  for (int i = 0; i < N_BUF; i++) {
    g_autofree char *name = g_strdup_printf("b%d", i);
    g_assert_true(dr_runner_read_buffer(r, name, buf, sizeof buf, &error));
    g_assert_no_error(error);
    g_byte_array_append(all, (const guint8 *)buf, sizeof buf);
  }
  gint32 go = 0;
  g_assert_true(dr_runner_read_buffer(r, "go", &go, sizeof go, &error));
  g_byte_array_append(all, (const guint8 *)&go, sizeof go);
  dr_runner_free(r);
  return g_byte_array_free_to_bytes(all);
}

static void test_random_bodies_unrolled(void) {
  guint cases = g_test_slow() ? 400 : 120;
  for (guint c = 0; c < cases; c++) {
    g_autoptr(GRand) rng = g_rand_new_with_seed(1000 + c);
    Gen g = {NULL, rng};
    Body *b = random_body(&g, 0);
    /* A node before and after the loop, so its edges with its neighbours
     * come from the same hazard rules. */
    GString *before = g_string_new(NULL), *after = g_string_new(NULL);
    random_node(&g, before);
    random_node(&g, after);
    g_autoptr(GString) looped = g_string_new(NULL), unrolled = g_string_new(NULL);
    header(looped, c);
    header(unrolled, c);
    g_string_append_printf(looped, "  pre: %s\n", before->str);
    g_string_append_printf(unrolled, "  pre: %s\n", before->str);
    write_loop(b, "body", 1, looped);
    write_unrolled(b, "", unrolled);
    g_string_append_printf(looped, "  post: %s\n", after->str);
    g_string_append_printf(unrolled, "  post: %s\n", after->str);
    g_string_free(before, TRUE);
    g_string_free(after, TRUE);
    body_free(b);
    g_autoptr(GBytes) a = run(looped->str, 77 + c);
    g_autoptr(GBytes) u = run(unrolled->str, 91 + c);
    if (!g_bytes_equal(a, u))
      g_printerr("case %u differs:\n--- loop ---\n%s--- unrolled ---\n%s", c, looped->str, unrolled->str);
    g_assert_true(g_bytes_equal(a, u));
  }
}

/* while: do-while on element 0 of the condition; x halves each trip. */
static void test_while_stops(void) {
  const struct {
    const char *tol;
    guint trips;
  } cases[] = {{"0.01", 7}, {"2.0", 1}, {"0.5", 1}, {"0.49", 2}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autofree char *yaml = g_strdup_printf(
        "dagrun: 1\nbuffers:\n  b0: {type: f32, count: 32}\n  b1: {type: f32, count: 32}\n"
        "  b2: {type: f32, count: 32}\n  b3: {type: f32, count: 32}\n  go: {type: i32, count: 1}\n"
        "nodes:\n  one: {op: kernel, kernel: fill_f32, args: {y: b0, value: 1.0}}\n"
        "  solve:\n    op: loop\n    while: go\n    nodes:\n"
        "      halve: {op: kernel, kernel: scale_f32, args: {x: b0, alpha: 0.5, y: b0}}\n"
        "      count: {op: kernel, kernel: axpy_f32, args: {alpha: 1.0, x: \"b1[0:1]\", y: \"b2[0:1]\"}}\n"
        "      check: {op: kernel, kernel: set_while_gt_f32, args: {x: b0, tol: %s, cond: go}}\n"
        "  ones: {op: kernel, kernel: fill_f32, args: {y: b3, value: 0.0}}\n",
        cases[c].tol);
    /* b1 is zero, so "count" leaves b2 as is: count trips through b0. */
    g_autoptr(GBytes) out = run(yaml, 5 + c);
    const float *x = g_bytes_get_data(out, NULL);
    g_assert_cmpfloat(x[0], ==, ldexpf(1.0f, -(int)cases[c].trips));
    const gint32 *go =
        (const gint32 *)((const char *)g_bytes_get_data(out, NULL) + N_BUF * LEN * sizeof(float));
    g_assert_cmpint(*go, ==, 0);
  }
}

/* if/else on a condition set before it. */
static void test_if_else(void) {
  for (int taken = 0; taken < 2; taken++) {
    g_autofree char *yaml = g_strdup_printf(
        "dagrun: 1\nbuffers:\n  b0: {type: f32, count: 32}\n  b1: {type: f32, count: 32}\n"
        "  b2: {type: f32, count: 32}\n  b3: {type: f32, count: 32}\n  go: {type: i32, count: 1}\n"
        "nodes:\n  v: {op: kernel, kernel: fill_f32, args: {y: b0, value: %s}}\n"
        "  set: {op: kernel, kernel: set_while_gt_f32, args: {x: b0, tol: 1.0, cond: go}}\n"
        "  pick:\n    op: if\n    if: go\n"
        "    nodes:\n      yes: {op: kernel, kernel: fill_f32, args: {y: b1, value: 7.0}}\n"
        "    else:\n      no: {op: kernel, kernel: fill_f32, args: {y: b1, value: -7.0}}\n"
        "  use: {op: kernel, kernel: scale_f32, args: {x: b1, alpha: 2.0, y: b2}}\n",
        taken ? "3.0" : "0.5");
    g_autoptr(GBytes) out = run(yaml, 3);
    const float *x = g_bytes_get_data(out, NULL);
    g_assert_cmpfloat(x[1 * LEN], ==, taken ? 7.0f : -7.0f);
    g_assert_cmpfloat(x[2 * LEN + 5], ==, taken ? 14.0f : -14.0f);
  }
}

/* tests/golden/good_jacobi.yaml, a Jacobi solver that stops at
 * convergence, against the same sweeps on the CPU: the same trips and the
 * same solution (f32 sweeps in the same order; the squared change is
 * summed in double by both, in different orders, so the stopping trip is
 * compared exactly and the solution to 1e-6). */
static void test_jacobi_reference(void) {
  g_autoptr(GError) error = NULL;
  g_autoptr(DrPipeline) p = dr_pipeline_load_file("tests/golden/good_jacobi.yaml", &error);
  g_assert_no_error(error);
  DrPlanSettings ps = {0};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &ps, &error);
  g_assert_no_error(error);
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_HOST;
  s.iterations = 1;
  s.warmup = 0;
  DrRunner *r = dr_runner_new(plan, &s, &error);
  g_assert_no_error(error);
  DrRunReport *rep = dr_runner_run(r, &error);
  g_assert_no_error(error);
  /* The report shows the loop as one node with its trips. */
  g_autoptr(GString) text = g_string_new(NULL);
  dr_run_report_write_text(rep, text);
  dr_run_report_free(rep);
  g_autoptr(GString) plan_text = g_string_new(NULL), dot = g_string_new(NULL);
  dr_stream_plan_write_text(plan, plan_text);
  g_assert_nonnull(strstr(plan_text->str, "solve (loop while go, 10 body nodes)"));
  g_assert_nonnull(
      strstr(plan_text->str, "body of loop 'solve' (loop while go, 10 body nodes):\nplan solve: 10 nodes"));
  dr_stream_plan_write_dot(plan, dot);
  g_assert_nonnull(strstr(dot->str, "subgraph \"cluster_loop_solve_0\""));
  g_assert_nonnull(strstr(dot->str, "\"solve/check\" [label="));
  float u[16], f[16], cnt;
  g_assert_true(dr_runner_read_buffer(r, "u", u, sizeof u, &error));
  g_assert_true(dr_runner_read_buffer(r, "f", f, sizeof f, &error));
  g_assert_true(dr_runner_read_buffer(r, "cnt", &cnt, sizeof cnt, &error));
  dr_runner_free(r);
  float ru[16] = {0}, un[16] = {0};
  guint trips = 0;
  double err;
  do {
    for (int i = 1; i < 15; i++) un[i] = 0.5f * ((ru[i - 1] + ru[i + 1]) + f[i]);
    err = 0;
    for (int i = 0; i < 16; i++) {
      float d = fmaf(-1.0f, ru[i], un[i]);
      err += (double)(d * d);
    }
    for (int i = 1; i < 15; i++) ru[i] = un[i];
    trips++;
  } while ((float)err > 1e-10f && trips < 100000);
  g_test_message("jacobi: %u trips", trips);
  g_assert_cmpfloat(cnt, ==, (float)trips);
  g_autofree char *line =
      g_strdup_printf("loop solve: %u trips per iteration (min %u, max %u), ", trips, trips, trips);
  g_assert_nonnull(strstr(text->str, line));
  g_assert_cmpuint(trips, >, 10);
  for (int i = 0; i < 16; i++) g_assert_cmpfloat_with_epsilon(u[i], ru[i], 1e-6);
  /* And it solved -u'' = f: 2u[i] - u[i-1] - u[i+1] = f[i]. */
  for (int i = 1; i < 15; i++) g_assert_cmpfloat_with_epsilon(2 * u[i] - u[i - 1] - u[i + 1], f[i], 1e-3);
}

/* Graph mode refuses a while loop before any CUDA call (exit 69): no
 * conditional graph nodes yet. (Without a GPU, the device query refuses
 * it first, also exit 69; tests/fault checks the refusal itself.) */
static void test_cuda_graph_refuses_while(void) {
  g_autoptr(GError) error = NULL;
  const char *yaml =
      "dagrun: 1\nbuffers:\n  x: {type: f32, count: 8}\n  go: {type: i32, count: 1}\nnodes:\n"
      "  l:\n    op: loop\n    while: go\n    nodes:\n"
      "      s: {op: kernel, kernel: set_while_gt_f32, args: {x: x, tol: 1.0, cond: go}}\n";
  g_autoptr(DrPipeline) p = dr_pipeline_load_string("cuda.yaml", yaml, -1, &error);
  g_assert_no_error(error);
  DrPlanSettings ps = {0};
  g_autoptr(DrStreamPlan) plan = dr_pipeline_plan(p, &ps, &error);
  g_assert_no_error(error);
  DrRunSettings s;
  dr_run_settings_init(&s, p);
  s.backend = DR_BACKEND_CUDA;
  s.mode = DR_MODE_GRAPH;
  DrRunReport *rep = dr_stream_plan_run(plan, &s, &error);
  g_assert_null(rep);
  g_assert_error(error, DR_ERROR, DR_ERROR_UNAVAILABLE);
  g_assert_cmpint(dr_error_exit_code(error), ==, 69);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/loops/random-bodies-unrolled", test_random_bodies_unrolled);
  g_test_add_func("/loops/while-stops", test_while_stops);
  g_test_add_func("/loops/if-else", test_if_else);
  g_test_add_func("/loops/jacobi-reference", test_jacobi_reference);
  g_test_add_func("/loops/cuda-graph-refuses-while", test_cuda_graph_refuses_while);
  return g_test_run();
}
