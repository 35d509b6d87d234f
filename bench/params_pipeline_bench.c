/* params_pipeline_bench.c: what a run-time parameter change costs a step
 * when every step changes it, as a decoder's sequence length does (issue
 * #19), on a GPU, through the library (DrRunner) as a serving loop uses
 * it: set the parameter, queue the step on the program's stream
 * (dr_runner_run_on_stream), no host wait between steps.
 *
 * The same 32*K steps run two ways, with the same lengths and so the same
 * device work: `changing` (the 32 lengths in turn, K times: a change before
 * every step) and `grouped` (each length K times in a row: 32 changes).
 * Their wall-clock difference over the difference in changes is the cost
 * of one change that the device sees (exposed), against the mean step.
 * Each way also runs `synced` (the host waits for each step before the
 * next, as dagrun --params-from does between lines), where the host's
 * whole change time shows. Ways taking turns ROUNDS times, the median per
 * way:
 *   graph+cache  --mode=graph with run.graph_cache: 32 (a kept executable
 *                per gemm shape; the first pass over the lengths, untimed,
 *                fills it)
 *   graph        --mode=graph without the cache (node sets in place;
 *                gemms by a one-node capture each)
 *   eager        --mode=streams (bound again per change)
 * Node timing off. Prints a Markdown table.
 *
 *   params_pipeline_bench PIPELINE.yaml SEQS.params [K] [ROUNDS]
 *
 * SEQS.params: lines of `seq=N` (bench/pipelines/params_seqs32.params).
 * The pipeline must have an integer parameter `seq` and a `run: {` line
 * (the cached way's copy adds graph_cache there). Exit status: 0 when
 * every step ran and, before any timing, every way's pipelined steps gave
 * the bytes of the same steps synced (the carried buffer x, compared
 * byte for byte), and the same bytes as the other ways. */
#include <cuda_runtime_api.h>
#include <dagrun/dagrun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEQS 256

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, guint n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double now_us(void) { return (double)g_get_monotonic_time(); }

static void die(const char *what, GError *error) {
  fprintf(stderr, "params_pipeline_bench: %s: %s\n", what, error ? error->message : "failed");
  exit(1);
}

static void check(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess) {
    fprintf(stderr, "params_pipeline_bench: %s: %s\n", what, cudaGetErrorString(rc));
    exit(1);
  }
}

/* The lengths of SEQS.params (`seq=N` words), *n of them. */
static gint64 *read_seqs(const char *path, guint *n) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL)) die(path, NULL);
  gint64 *seqs = g_new(gint64, MAX_SEQS);
  *n = 0;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i] != NULL && *n < MAX_SEQS; i++) {
    const char *at = strstr(lines[i], "seq=");
    if (lines[i][0] != '#' && at != NULL) seqs[(*n)++] = g_ascii_strtoll(at + 4, NULL, 10);
  }
  if (*n == 0) die("no seq= lines", NULL);
  return seqs;
}

typedef struct {
  const char *name;
  DrMode mode;
  gboolean cache;
  DrRunner *runner;
  DrStreamPlan *plan;
  DrPipeline *pipeline;
} Way;

static void open_way(Way *w, const char *yaml, const char *path) {
  GError *error = NULL;
  g_autofree char *text = NULL;
  if (w->cache) {
    const char *run = strstr(yaml, "run: {");
    if (run == NULL) die("the pipeline has no `run: {` line", NULL);
    text = g_strdup_printf("%.*srun: {graph_cache: 32, %s", (int)(run - yaml), yaml, run + strlen("run: {"));
  } else {
    text = g_strdup(yaml);
  }
  w->pipeline = dr_pipeline_load_string(path, text, -1, &error);
  if (w->pipeline == NULL) die("load", error);
  w->plan = dr_pipeline_plan(w->pipeline, NULL, &error);
  if (w->plan == NULL) die("plan", error);
  DrRunSettings s;
  dr_run_settings_init(&s, w->pipeline);
  s.backend = DR_BACKEND_CUDA;
  s.mode = w->mode;
  s.node_timing = DR_TIMING_OFF;
  s.iterations = 1;
  s.warmup = 0;
  w->runner = dr_runner_new(w->plan, &s, &error);
  if (w->runner == NULL) die(w->name, error);
}

/* Runs the steps `seq` [n] on w's runner on `stream`: a change where the
 * length differs from the step before, a host wait after every step when
 * `synced`, one at the end. Returns the wall time in µs; *changes counts
 * the changes. */
static double run_steps(Way *w, cudaStream_t stream, const gint64 *seq, guint n, gboolean synced,
                        guint *changes) {
  GError *error = NULL;
  *changes = 0;
  check(cudaStreamSynchronize(stream), "sync");
  double t0 = now_us();
  for (guint i = 0; i < n; i++) {
    if (i == 0 || seq[i] != seq[i - 1]) {
      if (!dr_runner_set_param(w->runner, "seq", seq[i], &error)) die("set seq", error);
      (*changes)++;
    }
    if (!dr_runner_run_on_stream(w->runner, stream, &error)) die(w->name, error);
    if (synced) check(cudaStreamSynchronize(stream), "sync");
  }
  check(cudaStreamSynchronize(stream), "sync");
  return now_us() - t0;
}

/* Whether the steps `seq` [n], queued with no host wait, leave in buffer
 * `buf` (`bytes`) what the same steps synced leave, on w's runner, both
 * from the contents `init` (read at open); the pipelined result goes to
 * *out (g_free). A change set while the step before still runs must act
 * on the next step only. */
static gboolean same_bytes(Way *w, cudaStream_t stream, const gint64 *seq, guint n, const char *buf,
                           const void *init, gsize bytes, void **out) {
  GError *error = NULL;
  void *got[2] = {g_malloc(bytes), g_malloc(bytes)};
  for (int synced = 0; synced < 2; synced++) {
    guint c;
    if (!dr_runner_write_buffer(w->runner, buf, 0, init, bytes, &error)) die("write", error);
    (void)run_steps(w, stream, seq, n, synced, &c);
    if (!dr_runner_read_buffer(w->runner, buf, got[synced], bytes, &error)) die("read", error);
  }
  gboolean same = memcmp(got[0], got[1], bytes) == 0;
  *out = got[0];
  g_free(got[1]);
  return same;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: params_pipeline_bench PIPELINE.yaml SEQS.params [K] [ROUNDS]\n");
    return 64;
  }
  guint k = argc > 3 ? (guint)atoi(argv[3]) : 8;
  guint rounds = argc > 4 ? (guint)atoi(argv[4]) : 3;
  g_autofree char *yaml = NULL;
  if (!g_file_get_contents(argv[1], &yaml, NULL, NULL)) die(argv[1], NULL);
  guint n_seqs = 0;
  g_autofree gint64 *seqs = read_seqs(argv[2], &n_seqs);
  guint n = n_seqs * k;
  /* changing: s1 s2 .. sN, K times; grouped: s1 x K, s2 x K, ... */
  g_autofree gint64 *changing = g_new(gint64, n), *grouped = g_new(gint64, n);
  for (guint i = 0; i < n; i++) {
    changing[i] = seqs[i % n_seqs];
    grouped[i] = seqs[i / k];
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  Way ways[] = {
      {"graph+cache", DR_MODE_GRAPH, TRUE, NULL, NULL, NULL},
      {"graph", DR_MODE_GRAPH, FALSE, NULL, NULL, NULL},
      {"eager", DR_MODE_STREAMS, FALSE, NULL, NULL, NULL},
  };
  enum { CH, GR, CH_SYNC, GR_SYNC, N_RUNS };
  static const char *run_names[N_RUNS] = {"changing", "grouped", "changing, synced", "grouped, synced"};
  guint nw = G_N_ELEMENTS(ways);
  double *t = g_new0(double, nw *N_RUNS *rounds);
  guint ch[N_RUNS] = {0};
  /* The state a step carries to the next (x), as loaded. */
  const char *state = "x";
  gsize bytes = 0;
  g_autofree void *init = NULL;
  for (guint w = 0; w < nw; w++) {
    open_way(&ways[w], yaml, argv[1]);
    if (w == 0) {
      /* Its size: a read of another size is refused with "holds N bytes". */
      GError *error = NULL;
      unsigned long long held = 0;
      char probe[1];
      const char *at = NULL;
      if (dr_runner_read_buffer(ways[w].runner, state, probe, 1, &error) ||
          (at = strstr(error->message, "holds ")) == NULL || sscanf(at, "holds %llu", &held) != 1 ||
          held == 0)
        die("the size of buffer x", error);
      g_clear_error(&error);
      bytes = (gsize)held;
      init = g_malloc(bytes);
      if (!dr_runner_read_buffer(ways[w].runner, state, init, bytes, &error)) die("read x", error);
    }
    guint c;
    /* The first pass: setup's capture, every shape once (the cache fills). */
    (void)run_steps(&ways[w], stream, changing, n_seqs, TRUE, &c);
  }
  /* Correct first: every way, the changing steps queued with no host
   * wait give the bytes of the same steps synced, and every way the
   * same bytes. */
  g_autofree void *first = NULL;
  gboolean ok = TRUE;
  for (guint w = 0; w < nw; w++) {
    void *got = NULL;
    gboolean same = same_bytes(&ways[w], stream, changing, 2 * n_seqs, state, init, bytes, &got);
    gboolean as_first = first == NULL || memcmp(first, got, bytes) == 0;
    printf("check %s: %u changing steps, pipelined %s synced; %s the first way\n", ways[w].name, 2 * n_seqs,
           same ? "==" : "!=", as_first ? "==" : "!=");
    ok = ok && same && as_first;
    if (first == NULL)
      first = got;
    else
      g_free(got);
  }
  if (!ok) {
    fprintf(stderr, "params_pipeline_bench: the bytes differ (above)\n");
    return 1;
  }
  for (guint r = 0; r < rounds; r++)
    for (guint w = 0; w < nw; w++)
      for (guint j = 0; j < N_RUNS; j++) {
        gboolean synced = j == CH_SYNC || j == GR_SYNC;
        const gint64 *steps = j == CH || j == CH_SYNC ? changing : grouped;
        t[(w * N_RUNS + j) * rounds + r] = run_steps(&ways[w], stream, steps, n, synced, &ch[j]);
      }
  printf("%u lengths x %u steps each (%u steps a run), %u rounds, medians; us a step = run / %u\n\n", n_seqs,
         k, n, rounds, n);
  printf("| way | run | changes | us a step | exposed us a change | exposed change / step |\n");
  printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
  for (guint w = 0; w < nw; w++) {
    double med[N_RUNS];
    for (guint j = 0; j < N_RUNS; j++) med[j] = median(&t[(w * N_RUNS + j) * rounds], rounds);
    for (guint j = 0; j < N_RUNS; j++) {
      printf("| %s | %s | %u | %.1f |", ways[w].name, run_names[j], ch[j], med[j] / n);
      if (j == CH || j == CH_SYNC) {
        guint base = j == CH ? GR : GR_SYNC;
        double per = (med[j] - med[base]) / (double)(ch[j] - ch[base]);
        printf(" %.1f | %.1f%% |\n", per, 100.0 * per / (med[base] / n));
      } else {
        printf(" - | - |\n");
      }
    }
  }
  for (guint w = 0; w < nw; w++) {
    dr_runner_free(ways[w].runner);
    dr_stream_plan_free(ways[w].plan);
    dr_pipeline_free(ways[w].pipeline);
  }
  g_free(t);
  check(cudaStreamDestroy(stream), "stream");
  return 0;
}
