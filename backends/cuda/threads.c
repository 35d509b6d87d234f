/* threads.c: streams mode's issue from several host threads (threads.h says
 * why, how the streams are split and why it cannot deadlock).
 *
 * Synchronization: each node has a published
 * generation (done_gen, an atomic int): its owner stores the iteration's
 * generation after the step that records its completion event returned.
 * A waiter spins briefly on it, then sleeps on `cond`, counting itself in
 * `waiters` first; a publisher broadcasts only when someone sleeps. Both
 * sides use sequentially consistent atomics (waiter: waiters++, then read
 * done_gen; publisher: write done_gen, then read waiters), so either the
 * waiter sees the new generation or the publisher sees the waiter; the
 * broadcast is made under `lock`, which the waiter holds from its count to
 * its cond_wait, so no wake-up is lost. The iteration's start (`go`) and
 * end (`finished`) go through the same lock. This file makes no CUDA call:
 * the step and init functions do.
 *
 * The lock and conditions are pthread's rather than GMutex and GCond, as
 * in backends/host.c: GLib's are futex-based inside a static library that
 * sanitizers do not instrument, so --config=tsan would not see their
 * happens-before edges. The threads are GThreads. */
#include "backends/cuda/threads.h"

#include <pthread.h>

/* Spins on a node's generation before sleeping: the owner is usually a
 * few launches (~4 us each) away. */
#define SPIN_CHECKS 4096

struct DrCudaThreads {
  const DrPlan *plan;
  guint32 n_threads;
  guint32 **group_steps; /* [n_threads][n_group_steps[g]]: step indices in plan order */
  guint32 *n_group_steps;
  guint32 *node_group; /* [n_nodes]: the group of the node's stream */
  gint *done_gen;      /* [n_nodes], atomic */
  DrCudaThreadInitFn init;
  gpointer init_data;
  GThread **workers; /* [n_threads]; [0] unused (the caller) */

  pthread_mutex_t lock;
  pthread_cond_t cond;     /* a node was published, or abort */
  pthread_cond_t go;       /* a new iteration (or quit) for the workers */
  pthread_cond_t finished; /* a worker stopped issuing */
  gint waiters;            /* atomic: threads asleep (or about to be) on cond */
  gint abort;              /* atomic: a step failed this iteration */
  /* Under lock: */
  guint32 round;   /* iterations started */
  guint32 running; /* workers still issuing this round */
  gboolean quit;
  gint gen; /* this round's generation; read by workers after `go` */
  DrCudaStepFn fn;
  const void *walk;
  GError *error; /* the round's first failure */
};

guint32 dr__cuda_threads_count(const DrPlan *plan, guint32 asked) {
  g_return_val_if_fail(plan != NULL, 1);
  const DrGraph *g = plan->graph;
  guint32 n_streams = plan->streams->len, n_steps = plan->steps->len;
  if (g->run.n_devices > 1) return 1;
  for (DrId v = 0; v < dr_graph_n_nodes(g); v++) {
    const DrNode *n = dr_graph_node(g, v);
    if (DR_OP_IS_COLLECTIVE(n->op) || n->loop != 0) return 1;
  }
  guint32 want = asked > 0 ? asked : MIN(n_streams / 4, n_steps / 512);
  return CLAMP(MIN(want, n_streams), 1, DR_CUDA_MAX_ISSUE_THREADS);
}

guint32 dr__cuda_threads_n(const DrCudaThreads *t) { return t ? t->n_threads : 1; }

static void fail(DrCudaThreads *t, GError *e) {
  pthread_mutex_lock(&t->lock);
  if (t->error == NULL)
    t->error = e;
  else
    g_error_free(e);
  g_atomic_int_set(&t->abort, 1);
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
}

/* Blocks until node u's completion event of round `gen` is recorded;
 * FALSE when the round aborted first. */
static gboolean wait_published(DrCudaThreads *t, DrId u, gint gen) {
  for (int i = 0; i < SPIN_CHECKS; i++) {
    if (g_atomic_int_get(&t->done_gen[u]) == gen) return TRUE;
    if (g_atomic_int_get(&t->abort)) return FALSE;
  }
  pthread_mutex_lock(&t->lock);
  g_atomic_int_inc(&t->waiters);
  while (g_atomic_int_get(&t->done_gen[u]) != gen && !g_atomic_int_get(&t->abort))
    pthread_cond_wait(&t->cond, &t->lock);
  g_atomic_int_add(&t->waiters, -1);
  pthread_mutex_unlock(&t->lock);
  return g_atomic_int_get(&t->done_gen[u]) == gen;
}

static void publish(DrCudaThreads *t, DrId v, gint gen) {
  g_atomic_int_set(&t->done_gen[v], gen);
  if (g_atomic_int_get(&t->waiters) > 0) {
    pthread_mutex_lock(&t->lock);
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
  }
}

/* Group `grp`'s steps of one round. */
static void issue_group(DrCudaThreads *t, guint32 grp, DrCudaStepFn fn, const void *walk, gint gen) {
  const DrPlan *plan = t->plan;
  const DrPlanStep *steps = (const DrPlanStep *)(void *)plan->steps->data;
  for (guint32 i = 0; i < t->n_group_steps[grp]; i++) {
    if (g_atomic_int_get(&t->abort)) return;
    const DrPlanStep *step = &steps[t->group_steps[grp][i]];
    for (guint32 w = step->wait_first; w < step->wait_first + step->wait_count; w++) {
      DrId u = dr_plan_wait(plan, w);
      /* DAG edge u -> step across threads: u's record must precede the
       * cudaStreamWaitEvent the step issues. */
      if (t->node_group[u] != grp && !wait_published(t, u, gen)) return;
    }
    GError *e = NULL;
    if (!fn(walk, step, &e)) {
      fail(t, e);
      return;
    }
    if (plan->needs_event[step->node]) publish(t, step->node, gen);
  }
}

static gpointer worker_main(gpointer data) {
  DrCudaThreads *t = ((gpointer *)data)[0];
  guint32 grp = GPOINTER_TO_UINT(((gpointer *)data)[1]);
  g_free(data);
  guint32 seen = 0;
  gboolean inited = FALSE;
  for (;;) {
    pthread_mutex_lock(&t->lock);
    while (!t->quit && t->round == seen) pthread_cond_wait(&t->go, &t->lock);
    if (t->quit) {
      pthread_mutex_unlock(&t->lock);
      return NULL;
    }
    seen = t->round;
    DrCudaStepFn fn = t->fn;
    const void *walk = t->walk;
    gint gen = t->gen;
    pthread_mutex_unlock(&t->lock);
    GError *e = NULL;
    if (!inited && t->init && !t->init(t->init_data, &e)) {
      fail(t, e);
    } else {
      inited = TRUE;
      issue_group(t, grp, fn, walk, gen);
    }
    pthread_mutex_lock(&t->lock);
    if (--t->running == 0) pthread_cond_signal(&t->finished);
    pthread_mutex_unlock(&t->lock);
  }
}

DrCudaThreads *dr__cuda_threads_new(const DrPlan *plan, guint32 n_threads, DrCudaThreadInitFn init,
                                    gpointer init_data) {
  g_return_val_if_fail(plan != NULL && n_threads >= 2, NULL);
  DrCudaThreads *t = g_new0(DrCudaThreads, 1);
  t->plan = plan;
  t->n_threads = n_threads;
  t->init = init;
  t->init_data = init_data;
  guint32 n_nodes = dr_graph_n_nodes(plan->graph);
  t->node_group = g_new0(guint32, MAX(n_nodes, 1));
  t->done_gen = g_new0(gint, MAX(n_nodes, 1));
  for (DrId v = 0; v < n_nodes; v++) t->node_group[v] = plan->node_stream[v] % n_threads;
  t->n_group_steps = g_new0(guint32, n_threads);
  t->group_steps = g_new0(guint32 *, n_threads);
  const DrPlanStep *steps = (const DrPlanStep *)(void *)plan->steps->data;
  for (guint32 i = 0; i < plan->steps->len; i++) t->n_group_steps[steps[i].stream % n_threads]++;
  for (guint32 g = 0; g < n_threads; g++) t->group_steps[g] = g_new(guint32, MAX(t->n_group_steps[g], 1));
  g_autofree guint32 *fill = g_new0(guint32, n_threads);
  for (guint32 i = 0; i < plan->steps->len; i++) {
    guint32 g = steps[i].stream % n_threads;
    t->group_steps[g][fill[g]++] = i;
  }
  pthread_mutex_init(&t->lock, NULL);
  pthread_cond_init(&t->cond, NULL);
  pthread_cond_init(&t->go, NULL);
  pthread_cond_init(&t->finished, NULL);
  t->workers = g_new0(GThread *, n_threads);
  for (guint32 g = 1; g < n_threads; g++) {
    gpointer *arg = g_new(gpointer, 2);
    arg[0] = t;
    arg[1] = GUINT_TO_POINTER(g);
    t->workers[g] = g_thread_new("dagrun-issue", worker_main, arg);
  }
  return t;
}

void dr__cuda_threads_free(DrCudaThreads *t) {
  if (t == NULL) return;
  pthread_mutex_lock(&t->lock);
  t->quit = TRUE;
  pthread_cond_broadcast(&t->go);
  pthread_mutex_unlock(&t->lock);
  for (guint32 g = 1; g < t->n_threads; g++)
    if (t->workers[g]) g_thread_join(t->workers[g]);
  g_free(t->workers);
  for (guint32 g = 0; g < t->n_threads; g++) g_free(t->group_steps[g]);
  g_free(t->group_steps);
  g_free(t->n_group_steps);
  g_free(t->node_group);
  g_free(t->done_gen);
  pthread_mutex_destroy(&t->lock);
  pthread_cond_destroy(&t->cond);
  pthread_cond_destroy(&t->go);
  pthread_cond_destroy(&t->finished);
  if (t->error) g_error_free(t->error);
  g_free(t);
}

gboolean dr__cuda_threads_issue(DrCudaThreads *t, DrCudaStepFn fn, const void *walk, GError **error) {
  g_return_val_if_fail(t != NULL && fn != NULL, FALSE);
  pthread_mutex_lock(&t->lock);
  /* A new generation per round: a node's published mark of the round
   * before never matches (0 is never a round's). */
  t->gen = t->gen == G_MAXINT ? 1 : t->gen + 1;
  gint gen = t->gen;
  t->fn = fn;
  t->walk = walk;
  g_atomic_int_set(&t->abort, 0);
  t->running = t->n_threads - 1;
  t->round++;
  pthread_cond_broadcast(&t->go);
  pthread_mutex_unlock(&t->lock);

  issue_group(t, 0, fn, walk, gen);

  pthread_mutex_lock(&t->lock);
  while (t->running > 0) pthread_cond_wait(&t->finished, &t->lock);
  GError *e = g_steal_pointer(&t->error);
  pthread_mutex_unlock(&t->lock);
  if (e == NULL) return TRUE;
  g_propagate_error(error, e);
  return FALSE;
}
