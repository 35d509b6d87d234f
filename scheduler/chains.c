/* chains.c: the DAG's exact width and a minimum chain cover, the planner's
 * stream count. Not the stream cap (cap.c) nor the issue order (order.c).
 *
 * Requires: ctx->order (a topological order) and the edge index of
 * DrPlanCtx. Provides: the width, a maximum antichain (the width's
 * certificate; plan->width and plan->antichain) and ctx->chain,
 * ctx->n_chains, class_chains: a minimum cover of each priority class by chains of the FULL partial
 * order (nodes of a chain are pairwise comparable in the DAG's closure).
 *
 * Algorithm: minimum flow, no transitive closure. Each node v is split into
 * v_in -> v_out with lower bound 1 when v must be covered (0 otherwise: a
 * chain may pass through nodes of other priority classes); every DAG edge is
 * an arc u_out -> v_in, and s -> v_in, v_out -> t close the network, all
 * with unbounded capacity. A flow path is a DAG path; its covered nodes form
 * a chain, so the minimum flow value is the minimum number of chains, which
 * Dilworth's theorem makes the width of the covered set.
 *  1. Greedy start, in topological order, exact for each prefix: adding a
 *     node raises the prefix's minimum flow by at most one, and the only
 *     augmenting paths it creates end at the new node, so one search per
 *     opened path keeps the cover minimum. A covered node v extends a path
 *     that ends at one of its predecessors (the one with the fewest other
 *     successors still to come, a minimum-degree matching rule); failing
 *     that, a path that ends at an ancestor: only ends that some seen node
 *     passed over can be ancestors, and up to 128 of them are tracked in
 *     slots whose bits every node inherits from its predecessors (a bit
 *     taken from a node seen before its slot was last given is stale and
 *     masked off), so the jump costs the length of the DAG path it takes,
 *     not a search; failing that (or when a passed-over end found no
 *     slot: then a breadth-first search over ancestors) it opens a path of
 *     its own, then a backward search in the residual network merges it
 *     into a path that ends at a node it can reach (one augmentation
 *     t -> ... -> v_in -> s). A search that finds none has reached only
 *     nodes t cannot reach, and t never will (augmentations add arcs only
 *     among nodes t reaches, a new node only arcs into itself): they are
 *     marked dead and every later search stops at them, so failures cost
 *     O(V + E) in all. Past 16 (V + E) of work in jumps, ancestor
 *     searches or successful merges, the searches fall back to budgets
 *     (LOCAL_BUDGET, ANCESTOR_BUDGET) and step 2 finishes.
 *  2. Exact finish: Dinic's phases of augmenting paths from t to s in the
 *     residual network (cancel flow above the lower bound, add flow on any
 *     arc): a breadth-first level graph, then unit paths along it with
 *     current-arc pointers until it is blocked; each lowers the flow by one,
 *     and phases repeat until s is unreachable from t.
 *  3. Certificate: with no augmenting path, the nodes whose v_out is
 *     reachable from t but v_in is not form a maximum antichain (the minimum
 *     cut crosses exactly their lower-bound arcs), as large as the flow.
 *  4. Decomposition: peel the flow into s-t paths, all walked together in
 *     topological order (walkers wait in per-node lists, so memory is read
 *     in order);
 *     each covered node joins the first path through it. Every path owns
 *     its antichain node, so none is empty.
 * Complexity: the greedy start costs O(N_SLOTS/64 (V + E)) for the masks,
 * plus its jumps' path lengths, plus the successful merges' searches,
 * plus O(V + E) for all the failed ones; each Dinic phase costs O(V + E)
 * and none is needed unless a budget was hit (then few: 0 on chains,
 * fork-joins and layered DAGs, about 12 for 15 paths on 1M-node
 * hazard-derived programs); the decomposition costs O(V + E + sum of node
 * flows).
 * Measured (one core, bench/planner_bench.c): 1M-node layered DAGs in
 * about 0.11 s at width 32 and 0.3 s at width 1000; 1M-node hazard-derived
 * random programs (width ~123, 3.3M edges): the greedy start in about
 * 0.55 s and the certificate's search in 0.05 s on a shared 2-core
 * machine, where budgeted merges and the Dinic phases for the 15 paths
 * they left took 5.4 s (BENCHMARKS.md §1). Later (scratch timers, a
 * quieter machine, 2026-12-01 22:00 UTC): the whole cover in 0.13 s at
 * width 32, 0.25 s at width 1000 and 0.26 s on the program (greedy
 * start 0.19 s, certificate 0.03 s, decomposition 0.05 s).
 * Memory: about 45 bytes per node and 4 per edge, plus 25 per node while
 * the greedy start runs (8 more per node if Dinic's phases run).
 * Iterative throughout. */
#include <string.h>

#include "scheduler/plan_internal.h"

#define NO_EDGE G_MAXUINT32
#define IN(v) (2u * (v))
#define OUT(v) (2u * (v) + 1u)
/* Work allowed to the greedy start's exact steps together, in nodes
 * expanded or walked, counted separately for the jumps and ancestor
 * searches and for the successful merge searches (failed ones are paid for
 * by the nodes they kill). Past it, the greedy start falls back to budgeted
 * searches and Dinic's phases finish what they leave. */
#define EXACT_WORK(c) (16u * ((guint64)(c)->n + (c)->m) + 4096u)

/* Work allowed to one budgeted merge search, in residual nodes expanded:
 * more when more paths are open (wider DAGs need longer alternating
 * paths), and less once failed searches have cost 4 (V + E) in all, which
 * keeps the greedy start linear; Dinic's phases finish what it leaves.
 * DrPlanOptions.no_greedy_merges sets it to 0 (no greedy merges at all, so
 * the tests can hold Dinic's phases alone against the references). */
#define LOCAL_BUDGET(paths, generous) (256u + ((generous) ? 2048u : 32u) * MIN((paths), 4096u))

/* Ancestors looked at by a budgeted cheap merge before the general search. */
#define ANCESTOR_BUDGET 256u

typedef struct {
  const DrPlanCtx *c;
  const guint8 *req; /* lower bound of each node's arc: 1 = must be covered */
  guint32 *fe;       /* [m] flow on each DAG edge */
  guint32 *fs;       /* [n] flow s -> v_in: paths that start at v */
  guint32 *ft;       /* [n] flow v_out -> t: paths that end at v */
  guint32 *fv;       /* [n] flow v_in -> v_out: paths through v */
  guint32 *stamp;    /* [2n] search generation that reached each split node */
  guint32 gen;
  guint32 *via; /* [2n] the DAG edge of the search arc into each split node
                   (NO_EDGE for v_in/v_out), or Dinic's current arc */
  guint32 *queue;
} Flow;

static void flow_init(Flow *f, const DrPlanCtx *c, const guint8 *req) {
  guint32 n = MAX(c->n, 1);
  f->c = c;
  f->req = req;
  f->fe = g_new0(guint32, MAX(c->m, 1));
  f->fs = g_new0(guint32, n);
  f->ft = g_new0(guint32, n);
  f->fv = g_new0(guint32, n);
  f->stamp = g_new0(guint32, 2 * n);
  f->gen = 0;
  f->via = g_new(guint32, 2 * n);
  f->queue = g_new(guint32, 2 * n);
}

static void flow_clear(Flow *f) {
  g_free(f->fe);
  g_free(f->fs);
  g_free(f->ft);
  g_free(f->fv);
  g_free(f->stamp);
  g_free(f->via);
  g_free(f->queue);
}

/* The stamp of a split node that t does not reach in the residual network
 * of the nodes seen so far, and never will (see dr__chain_cover). Above
 * every generation, so `stamp >= gen` reads "seen or dead". */
#define DEAD_STAMP G_MAXUINT32

static void next_generation(Flow *f) {
  if (++f->gen == DEAD_STAMP) {
    for (gsize i = 0; i < 2 * (gsize)MAX(f->c->n, 1); i++)
      if (f->stamp[i] != DEAD_STAMP) f->stamp[i] = 0;
    f->gen = 1;
  }
}

/* Pushes one unit along the residual arc x -> y. */
static void apply_arc(Flow *f, guint32 x, guint32 y, guint32 edge) {
  guint32 w = x >> 1;
  if (x & 1) {
    /* x = w_out, y an in-node: cancel w's through-flow, or use an edge. */
    if (edge == NO_EDGE)
      f->fv[w]--;
    else
      f->fe[edge]++;
  } else {
    /* x = w_in, y an out-node: add through-flow, or cancel an edge. */
    if (edge == NO_EDGE)
      f->fv[w]++;
    else
      f->fe[edge]--;
  }
}

/* Visits y over `edge` during a search; FALSE if seen or dead. */
static inline gboolean visit(Flow *f, guint32 y, guint32 edge, guint32 *tail) {
  if (f->stamp[y] >= f->gen) return FALSE;
  f->stamp[y] = f->gen;
  f->via[y] = edge;
  f->queue[(*tail)++] = y;
  return TRUE;
}

/* Greedy merge of the path just opened at v: searches backward from v_in for
 * an out-node that ends a path (an arc t -> p_out), within the budget. On
 * success applies t -> p_out -> ... -> v_in -> s and returns TRUE. */
/* The node a backward search came from to reach y over `edge`: the other
 * side of the same node, or the edge's far end (an out-node y was reached
 * from the edge's head, an in-node from its tail). */
static inline guint32 came_from(const DrPlanCtx *c, guint32 y, guint32 edge) {
  if (edge == NO_EDGE) return y ^ 1u;
  return (y & 1) ? IN(c->edges[edge].to) : OUT(c->edges[edge].from);
}

/* The cheap common merge: a breadth-first search over v's ancestors alone
 * (node by node, at most `budget` of them, none before topological
 * position `lo`) for one that ends a path; that path is then extended down
 * the DAG path found to v, sharing the nodes in between. v's own arc flow
 * is already counted by the caller. Adds the nodes expanded to *spent. */
static gboolean extend_from_ancestor(Flow *f, DrId v, guint32 budget, guint32 lo, guint64 *spent) {
  const DrPlanCtx *c = f->c;
  guint32 head = 0, tail = 0;
  next_generation(f);
  f->stamp[OUT(v)] = f->gen;
  f->queue[tail++] = v;
  while (head < tail && head < budget) {
    DrId x = f->queue[head++];
    for (guint32 e = DR__PRED_BEGIN(c, x); e < DR__PRED_END(c, x); e++) {
      DrId p = c->edges[e].from;
      /* Seen, dead or too old. A dead p_out has no path end among its
       * ancestors (t would reach it along DAG arcs), and none starts
       * before `lo`. */
      if (f->stamp[OUT(p)] >= f->gen || c->pos[p] < lo) continue;
      f->stamp[OUT(p)] = f->gen;
      f->via[OUT(p)] = e;
      if (f->ft[p] == 0) {
        f->queue[tail++] = p;
        continue;
      }
      *spent += head;
      f->ft[p]--;
      for (DrId y = p;;) {
        guint32 down = f->via[OUT(y)];
        f->fe[down]++;
        y = c->edges[down].to;
        if (y == v) return TRUE;
        f->fv[y]++;
      }
    }
  }
  *spent += head;
  return FALSE;
}

/* The general merge: a breadth-first search backward from v_in through
 * the residual network (at most `budget` nodes expanded) for an out-node
 * that ends a path. Adds its work to *failed or *succeeded. When it fails
 * with the whole search space exhausted, every node it reached is
 * unreachable from t: they are marked dead for the searches to come. */
static gboolean merge_new_path(Flow *f, DrId v, guint32 budget, guint64 *failed, guint64 *succeeded) {
  const DrPlanCtx *c = f->c;
  guint32 head = 0, tail = 0, found = G_MAXUINT32;
  next_generation(f);
  f->stamp[IN(v)] = f->gen;
  f->queue[tail++] = IN(v);
  while (head < tail && head < budget && found == G_MAXUINT32) {
    guint32 x = f->queue[head++], w = x >> 1;
    if (!(x & 1)) {
      for (guint32 e = DR__PRED_BEGIN(c, w); e < DR__PRED_END(c, w); e++) {
        DrId p = c->edges[e].from;
        if (visit(f, OUT(p), e, &tail) && f->ft[p] > 0) {
          found = OUT(p);
          break;
        }
      }
      if (found == G_MAXUINT32 && f->fv[w] > f->req[w] && visit(f, OUT(w), NO_EDGE, &tail) && f->ft[w] > 0)
        found = OUT(w);
    } else {
      visit(f, IN(w), NO_EDGE, &tail);
      for (guint32 i = c->succ_off[w]; i < c->succ_off[w + 1]; i++) {
        guint32 e = c->succ_edge[i];
        if (f->fe[e] > 0) visit(f, IN(c->edges[e].to), e, &tail);
      }
    }
  }
  if (found == G_MAXUINT32) {
    *failed += head;
    if (head == tail)
      for (guint32 i = 0; i < tail; i++) f->stamp[f->queue[i]] = DEAD_STAMP;
    return FALSE;
  }
  *succeeded += head;
  f->ft[found >> 1]--;
  for (guint32 y = found; y != IN(v);) {
    guint32 x = came_from(c, y, f->via[y]);
    apply_arc(f, y, x, f->via[y]);
    y = x;
  }
  f->fs[v]--;
  return TRUE;
}

/* Breadth-first search from t in the residual network; stamps of the
 * current generation mark every node reached. With `dist` (Dinic's levels,
 * [2n]) it records levels and stops expanding at the level of s; without,
 * it stops as soon as s is seen. Returns the level of s (1 without dist),
 * or 0 when s is not reachable: then the stamps are exactly the cut's t
 * side. */
static guint32 levels_from_t(Flow *f, guint32 *dist) {
  const DrPlanCtx *c = f->c;
  guint32 head = 0, tail = 0, dist_s = 0;
  next_generation(f);
  for (DrId v = 0; v < c->n; v++)
    if (f->ft[v] > 0) {
      f->stamp[OUT(v)] = f->gen;
      if (dist) dist[OUT(v)] = 1;
      f->queue[tail++] = OUT(v);
    }
#define REACH(y)                        \
  do {                                  \
    guint32 y_ = (y);                   \
    if (f->stamp[y_] != f->gen) {       \
      f->stamp[y_] = f->gen;            \
      if (dist) dist[y_] = dist[x] + 1; \
      f->queue[tail++] = y_;            \
    }                                   \
  } while (0)
  while (head < tail) {
    guint32 x = f->queue[head++], w = x >> 1;
    if (dist_s != 0 && dist[x] + 1 >= dist_s) continue;
    if (x & 1) {
      for (guint32 i = c->succ_off[w]; i < c->succ_off[w + 1]; i++) REACH(IN(c->edges[c->succ_edge[i]].to));
      if (f->fv[w] > f->req[w]) REACH(IN(w));
      continue;
    }
    if (f->fs[w] > 0 && dist_s == 0) {
      if (dist == NULL) return 1;
      dist_s = dist[x] + 1;
    }
    REACH(OUT(w));
    for (guint32 e = DR__PRED_BEGIN(c, w); e < DR__PRED_END(c, w); e++)
      if (f->fe[e] > 0) REACH(OUT(c->edges[e].from));
  }
#undef REACH
  return dist_s;
}

#define T_NODE G_MAXUINT32
#define S_NODE (G_MAXUINT32 - 1)
#define DEAD G_MAXUINT32

/* The next admissible arc out of x in the level graph, advancing x's
 * current-arc pointer `cur` past arcs that are not. Returns the head node
 * (S_NODE for s) and its edge in *edge, or DEAD when none is left. */
static guint32 next_arc(Flow *f, const guint32 *dist, guint32 x, guint32 *cur, guint32 dist_x, guint32 dist_s,
                        guint32 *edge) {
  const DrPlanCtx *c = f->c;
  *edge = NO_EDGE;
  if (x == T_NODE) {
    for (; *cur < c->n; (*cur)++)
      if (f->ft[*cur] > 0 && f->stamp[OUT(*cur)] == f->gen && dist[OUT(*cur)] == 1) return OUT(*cur);
    return DEAD;
  }
  guint32 w = x >> 1;
  if (x & 1) {
    guint32 deg = c->succ_off[w + 1] - c->succ_off[w];
    for (; *cur < deg; (*cur)++) {
      guint32 e = c->succ_edge[c->succ_off[w] + *cur], y = IN(c->edges[e].to);
      if (f->stamp[y] == f->gen && dist[y] == dist_x + 1) {
        *edge = e;
        return y;
      }
    }
    if (*cur == deg && f->fv[w] > f->req[w] && f->stamp[IN(w)] == f->gen && dist[IN(w)] == dist_x + 1)
      return IN(w);
    *cur = deg + 1;
    return DEAD;
  }
  guint32 deg = DR__PRED_END(c, w) - DR__PRED_BEGIN(c, w);
  if (*cur == 0) {
    if (f->stamp[OUT(w)] == f->gen && dist[OUT(w)] == dist_x + 1) return OUT(w);
    *cur = 1;
  }
  for (; *cur <= deg; (*cur)++) {
    guint32 e = DR__PRED_BEGIN(c, w) + *cur - 1, y = OUT(c->edges[e].from);
    if (f->fe[e] > 0 && f->stamp[y] == f->gen && dist[y] == dist_x + 1) {
      *edge = e;
      return y;
    }
  }
  if (*cur == deg + 1 && f->fs[w] > 0 && dist_s == dist_x + 1) return S_NODE;
  *cur = deg + 2;
  return DEAD;
}

/* One Dinic phase: unit augmenting paths t -> s along the level graph with
 * current-arc pointers (in `via`) until the level graph is blocked.
 * Returns how many were applied. Iterative depth-first search. */
static guint32 blocking_flow(Flow *f, guint32 *dist, guint32 dist_s) {
  const DrPlanCtx *c = f->c;
  guint32 *cur = f->via, cur_t = 0, pushed = 0;
  memset(cur, 0, 2 * (gsize)MAX(c->n, 1) * sizeof(guint32));
  /* The search path: nodes in queue[], the edge into each in edge_in[]. */
  guint32 *path = f->queue;
  g_autofree guint32 *edge_in = g_new(guint32, dist_s + 1);
  guint32 depth = 0;
  path[0] = T_NODE;
  for (;;) {
    guint32 x = path[depth], edge;
    guint32 *xcur = x == T_NODE ? &cur_t : &cur[x];
    guint32 y = next_arc(f, dist, x, xcur, x == T_NODE ? 0 : dist[x], dist_s, &edge);
    if (y == DEAD) {
      if (depth == 0) return pushed;
      dist[x] = DEAD; /* blocked: out of the level graph */
      depth--;
      continue;
    }
    if (y != S_NODE) {
      path[++depth] = y;
      edge_in[depth] = edge;
      continue;
    }
    /* t -> path[1] -> ... -> path[depth] -> s. */
    f->ft[path[1] >> 1]--;
    for (guint32 i = 1; i < depth; i++) apply_arc(f, path[i], path[i + 1], edge_in[i + 1]);
    f->fs[x >> 1]--;
    pushed++;
    depth = 0;
  }
}

/* Path ends that a later node passed over (it did not extend them) are
 * the only ones a node can reach by a jump; up to 64 of them are tracked
 * in slots, and each node's mask (bits[]) says which tracked ends are its
 * ancestors, propagated along the DAG as nodes are seen. A slot is given
 * again once its end is extended; a mask bit taken from a predecessor
 * seen before its slot was last given is stale (the slots, most recently
 * given first, tell which those are). */
#define N_SLOTS 128u
typedef unsigned __int128 Mask;
static inline guint32 mask_ctz(Mask m) {
  guint64 lo = (guint64)m;
  return lo ? (guint32)__builtin_ctzll(lo) : 64u + (guint32)__builtin_ctzll((guint64)(m >> 64));
}

#define NO_SLOT 0xFFu

/* The greedy start's state. */
typedef struct {
  Flow *f;
  guint32 *pending; /* [n] successors of each node not yet seen */
  Mask *bits;       /* [n] tracked ends among each node's ancestors */
  guint32 *asof;    /* [n] the assignment count bits[] was last checked at */
  guint8 *slot_of;  /* [n] the slot a node was given (check owner[]) */
  DrId owner[N_SLOTS];
  Mask used;                  /* slots with an owner */
  guint32 n_given;            /* assignments so far */
  guint8 recent[N_SLOTS];     /* the slots, most recently given first */
  guint32 given[N_SLOTS];     /* the assignment count each of those was given at */
  guint32 slot_time[N_SLOTS]; /* the assignment count each slot was last given at */
  Mask first[N_SLOTS + 1];    /* first[k]: the slots recent[0 .. k) */
  guint32 flow, lo;
  gint64 forced;
  guint64 failed_work, merge_work, anc_work, anc_tries, anc_hits;
  gboolean untracked; /* an end passed over found no free slot */
  gboolean stale;     /* a search may have extended a tracked end */
} Greedy;

/* The slots given after assignment t: their bits in a mask checked at t
 * are stale. */
static Mask given_after(const Greedy *g, guint32 t) {
  /* given[] falls: count the entries above t by a branch-free binary
   * search (a data-dependent branch here mispredicted half the time, and
   * this runs for most edges of a hazard-derived DAG; counting all 128
   * entries four lanes at a time measured slower). */
  guint32 lo = 0;
  for (guint32 step = N_SLOTS / 2; step > 0; step /= 2) lo += g->given[lo + step - 1] > t ? step : 0;
  lo += g->given[lo] > t;
  return g->first[lo];
}

/* The tracked ends among p's ancestors that are still current (checked
 * now, so the next check only looks at the slots given since). */
static inline Mask known_ends(Greedy *g, DrId p) {
  Mask b = g->bits[p] & g->used;
  if (b != 0 && g->asof[p] != g->n_given) b &= ~given_after(g, g->asof[p]);
  g->bits[p] = b;
  g->asof[p] = g->n_given;
  return b;
}

/* Whether tracked end s (a current slot) is among p's ancestors: one bit
 * of known_ends(g, p), without the search over every slot given since
 * p's mask was checked (a bit is stale exactly when its slot was given
 * after that). */
static inline gboolean has_known_end(const Greedy *g, DrId p, guint32 s) {
  return (g->bits[p] >> s & 1) && g->slot_time[s] <= g->asof[p];
}

/* Gives p (an end that node order[i] passed over) a slot; FALSE when all
 * are taken by current ends. */
static gboolean give_slot(Greedy *g, DrId p) {
  guint8 s = g->slot_of[p];
  if (s != NO_SLOT && (g->used >> s & 1) && g->owner[s] == p) return TRUE;
  if (g->used == ~(Mask)0 && g->stale) {
    for (guint32 k = 0; k < N_SLOTS; k++)
      if (g->f->ft[g->owner[k]] == 0) g->used &= ~((Mask)1 << k);
    g->stale = FALSE;
  }
  if (g->used == ~(Mask)0) {
    g->untracked = TRUE;
    return FALSE;
  }
  /* The free slot given most recently: the fewest prefix masks to redo.
   * first[] grows with k, so the first prefix holding a free slot is
   * found by a binary search rather than a walk down recent[]. */
  Mask free_slots = ~g->used;
  guint32 k = 0;
  for (guint32 step = N_SLOTS / 2; step > 0; step /= 2)
    if ((g->first[k + step] & free_slots) == 0) k += step;
  s = g->recent[k];
  g->used |= (Mask)1 << s;
  g->owner[s] = p;
  g->slot_of[p] = s;
  memmove(g->recent + 1, g->recent, k);
  memmove(g->given + 1, g->given, k * sizeof(guint32));
  g->recent[0] = s;
  g->given[0] = ++g->n_given;
  g->slot_time[s] = g->n_given;
  /* recent[0 .. k] moved down one behind s: so did their prefixes. */
  for (guint32 j = k + 1; j > 0; j--) g->first[j] = g->first[j - 1] | (Mask)1 << s;
  return TRUE;
}

/* Frees p's slot, if it has one: its path end was extended. */
static inline void release_slot(Greedy *g, DrId p) {
  guint8 s = g->slot_of[p];
  if (s != NO_SLOT && g->owner[s] == p) g->used &= ~((Mask)1 << s);
}

/* Extends the path that ends at a tracked ancestor of v (`ends`: v's
 * inherited mask) down to v, along predecessors that have it in their
 * masks. FALSE when no tracked end is current. Adds the path's length to
 * *spent. */
static gboolean jump_to_known_end(Greedy *g, DrId v, Mask ends, guint64 *spent) {
  Flow *f = g->f;
  const DrPlanCtx *c = f->c;
  for (; ends; ends &= ends - 1) {
    guint32 s = (guint32)mask_ctz(ends);
    DrId q = g->owner[s];
    if (!(g->used >> s & 1)) continue;
    if (f->ft[q] == 0) {
      g->used &= ~((Mask)1 << s);
      continue;
    }
    /* The DAG path, from v back to q, as edges in queue[]. */
    guint32 len = 0;
    for (DrId y = v; y != q;) {
      guint32 next = NO_EDGE;
      for (guint32 e = DR__PRED_BEGIN(c, y); e < DR__PRED_END(c, y) && next == NO_EDGE; e++) {
        DrId p = c->edges[e].from;
        if (p == q || has_known_end(g, p, s)) next = e;
      }
      if (next == NO_EDGE) return FALSE; /* cannot happen: bits are exact */
      f->queue[len++] = next;
      y = c->edges[next].from;
    }
    *spent += len;
    if (--f->ft[q] == 0) g->used &= ~((Mask)1 << s);
    for (guint32 k = 0; k < len; k++) {
      f->fe[f->queue[k]]++;
      if (k > 0) f->fv[c->edges[f->queue[k]].to]++;
    }
    return TRUE;
  }
  return FALSE;
}

/* One node of the greedy start, v = order[i]: covers v by extending a path,
 * or opens a path at v and tries to merge it away. `ends`: the tracked
 * ends among v's ancestors. */
static void greedy_node(Greedy *g, guint32 i, Mask ends, guint32 best) {
  Flow *f = g->f;
  const DrPlanCtx *c = f->c;
  DrId v = c->order[i];
  if (!f->req[v]) return;
  f->fv[v]++;
  f->ft[v]++;
  if (best != NO_EDGE) {
    DrId p = c->edges[best].from;
    f->fe[best]++;
    if (--f->ft[p] == 0) release_slot(g, p);
    return;
  }
  if (g->forced != 0 && ends != 0 && g->anc_work < EXACT_WORK(c) &&
      jump_to_known_end(g, v, ends, &g->anc_work))
    return;
  gboolean exact = g->forced < 0 && g->anc_work < EXACT_WORK(c) && g->merge_work < EXACT_WORK(c);
  /* The ancestor search, when some end went untracked (or while it pays,
   * when budgeted): otherwise the masks have said no end is an ancestor.
   * No path ends at a sink, nor ever will, nor before the oldest end:
   * `lo` skips them all. */
  if (g->forced != 0 && (g->untracked || !exact) &&
      (exact || g->anc_tries < 256 || g->anc_hits * 8 >= g->anc_tries)) {
    g->anc_tries++;
    for (DrId u; g->lo < i && (f->ft[u = c->order[g->lo]] == 0 || c->succ_off[u] == c->succ_off[u + 1]);)
      g->lo++;
    if (extend_from_ancestor(f, v, exact ? G_MAXUINT32 : ANCESTOR_BUDGET, g->lo, &g->anc_work)) {
      g->anc_hits++;
      g->stale = TRUE;
      return;
    }
  }
  f->fs[v]++;
  g->flow++;
  guint32 budget = g->forced >= 0 ? (guint32)g->forced
                   : exact        ? G_MAXUINT32
                                  : LOCAL_BUDGET(g->flow, g->failed_work < 4 * ((guint64)c->n + c->m));
  if (budget > 0 && merge_new_path(f, v, budget, &g->failed_work, &g->merge_work)) {
    g->flow--;
    g->stale = TRUE;
  }
}

/* Step 1: a cover of the nodes in topological order; returns its flow. */
static guint32 greedy_start(Flow *f) {
  const DrPlanCtx *c = f->c;
  guint32 n = MAX(c->n, 1);
  Greedy g = {.f = f, .forced = f->c->no_greedy_merges ? 0 : -1};
  g.pending = g_new(guint32, n);
  g.bits = g_new(Mask, n);
  g.asof = g_new(guint32, n);
  g.slot_of = g_new(guint8, n);
  memset(g.slot_of, NO_SLOT, n);
  for (guint32 k = 0; k < N_SLOTS; k++) {
    g.recent[k] = (guint8)k;
    g.first[k + 1] = g.first[k] | (Mask)1 << k;
  }
  for (DrId v = 0; v < c->n; v++) g.pending[v] = c->succ_off[v + 1] - c->succ_off[v];
  for (guint32 i = 0; i < c->n; i++) {
    DrId v = c->order[i];
    guint32 best = NO_EDGE;
    Mask ends = 0;
    for (guint32 e = DR__PRED_BEGIN(c, v); e < DR__PRED_END(c, v); e++) {
      DrId p = c->edges[e].from;
      g.pending[p]--;
      ends |= known_ends(&g, p);
      /* Extend the ending path whose node has the fewest other successors
       * left to serve (a minimum-degree matching rule). */
      if (f->ft[p] > 0 && (best == NO_EDGE || g.pending[p] < g.pending[c->edges[best].from])) best = e;
    }
    greedy_node(&g, i, ends, best);
    /* The ends v passed over are now ancestors of whatever follows v. */
    for (guint32 e = DR__PRED_BEGIN(c, v); e < DR__PRED_END(c, v); e++) {
      DrId p = c->edges[e].from;
      if (f->ft[p] > 0 && give_slot(&g, p)) ends |= (Mask)1 << g.slot_of[p];
    }
    g.bits[v] = ends;
    g.asof[v] = g.n_given;
  }
  g_free(g.slot_of);
  g_free(g.bits);
  g_free(g.asof);
  g_free(g.pending);
  return g.flow;
}

guint32 dr__chain_cover(const DrPlanCtx *c, const guint8 *required, guint32 *chain, guint32 first_chain,
                        GArray *antichain) {
  Flow f;
  flow_init(&f, c, required);
  guint32 flow = greedy_start(&f);
  /* Usually the greedy start is already minimum and one search proves it;
   * Dinic's level array is only allocated when it is not. */
  guint32 *dist = NULL;
  for (guint32 dist_s; (dist_s = levels_from_t(&f, dist)) != 0;) {
    if (dist == NULL)
      dist = g_new(guint32, 2 * (gsize)MAX(c->n, 1));
    else
      flow -= blocking_flow(&f, dist, dist_s);
  }
  g_free(dist);

  if (antichain != NULL) {
    guint32 before = antichain->len;
    for (DrId v = 0; v < c->n; v++)
      if (required[v] && f.stamp[OUT(v)] == f.gen && f.stamp[IN(v)] != f.gen)
        g_array_append_val(antichain, v);
    g_assert_cmpuint(antichain->len - before, ==, flow);
  }

  /* Peel the flow into paths, all advancing together in topological order
   * (each waits in the list of the node it has reached, and lists are
   * taken in order), so memory is touched in order rather than one whole
   * path at a time. A path's chain id is given at the first covered node
   * it claims. */
  guint32 *next_succ = g_new(guint32, MAX(c->n, 1));
  memcpy(next_succ, c->succ_off, (gsize)c->n * sizeof(guint32));
  guint8 *claimed = g_new0(guint8, MAX(c->n, 1));
  guint32 *waiting = g_new(guint32, MAX(c->n, 1)); /* first walker at each node */
  memset(waiting, 0xFF, (gsize)MAX(c->n, 1) * sizeof(guint32));
  guint32 *w_chain = g_new(guint32, MAX(flow, 1)), *w_next = g_new(guint32, MAX(flow, 1));
  guint32 n_walkers = 0, n_chains = 0;
  for (guint32 i = 0; i < c->n; i++) {
    DrId v = c->order[i];
    for (; f.fs[v] > 0; f.fs[v]--) {
      w_chain[n_walkers] = G_MAXUINT32;
      w_next[n_walkers] = waiting[v];
      waiting[v] = n_walkers++;
    }
    for (guint32 w = waiting[v], next; w != G_MAXUINT32; w = next) {
      next = w_next[w];
      if (required[v] && !claimed[v]) {
        claimed[v] = 1;
        if (w_chain[w] == G_MAXUINT32) w_chain[w] = first_chain + n_chains++;
        chain[v] = w_chain[w];
      }
      if (f.ft[v] > 0) {
        f.ft[v]--;
        continue;
      }
      while (f.fe[c->succ_edge[next_succ[v]]] == 0) next_succ[v]++;
      guint32 e = c->succ_edge[next_succ[v]];
      DrId y = c->edges[e].to;
      f.fe[e]--;
      w_next[w] = waiting[y];
      waiting[y] = w;
    }
  }
  g_free(w_next);
  g_free(w_chain);
  g_free(waiting);
  g_assert_cmpuint(n_chains, ==, flow);
  g_free(claimed);
  g_free(next_succ);
  flow_clear(&f);
  return n_chains;
}

guint32 dr__plan_n_classes(const DrGraph *graph) {
  guint32 nd;
  dr_graph_devices(graph, &nd);
  return (nd + 1) * DR__CLASS_KINDS;
}

guint32 dr__plan_class(const DrGraph *graph, DrId v) {
  const DrNode *node = dr_graph_node(graph, v);
  guint32 nd;
  dr_graph_devices(graph, &nd);
  gint32 d = dr_graph_node_device(graph, v);
  gint32 rank = d < 0 ? (gint32)nd : dr_graph_device_rank(graph, d);
  guint32 kind = DR_OP_IS_COLLECTIVE(node->op) ? DR__CLASS_COMM : (guint32)node->priority;
  return (guint32)MAX(rank, 0) * DR__CLASS_KINDS + kind;
}

DrStream dr__plan_class_stream(const DrGraph *graph, guint32 c) {
  guint32 nd;
  const gint32 *devs = dr_graph_devices(graph, &nd);
  guint32 slot = c / DR__CLASS_KINDS, kind = c % DR__CLASS_KINDS;
  gboolean comm = kind == DR__CLASS_COMM;
  return (DrStream){.priority = comm ? DR_PRIORITY_HIGH : (DrPriority)kind,
                    .device = slot < nd ? devs[slot] : -1,
                    .comm = comm};
}

guint32 dr__plan_chains(DrPlanCtx *ctx, GArray *antichain) {
  const DrGraph *g = ctx->graph;
  guint32 n = ctx->n;
  guint8 *required = g_new0(guint8, MAX(n, 1));
  ctx->n_classes = dr__plan_n_classes(g);
  ctx->node_class = g_new(guint8, MAX(n, 1));
  ctx->class_chains = g_new0(guint32, ctx->n_classes);
  guint32 *class_size = g_new0(guint32, ctx->n_classes);
  guint32 n_present = 0;
  gboolean only_comm = TRUE;
  for (DrId v = 0; v < n; v++) {
    ctx->node_class[v] = (guint8)dr__plan_class(g, v);
    class_size[ctx->node_class[v]]++;
  }
  for (guint32 c = 0; c < ctx->n_classes; c++)
    if (class_size[c] > 0) {
      n_present++;
      only_comm = only_comm && c % DR__CLASS_KINDS == DR__CLASS_COMM;
    }

  ctx->chain = g_new0(guint32, MAX(n, 1));
  ctx->n_chains = 0;
  /* Higher classes first (comm, then high priority, of the last device),
   * so their streams get the low numbers. */
  for (gint64 c = (gint64)ctx->n_classes - 1; c >= 0; c--) {
    if (class_size[c] == 0) continue;
    if (c % DR__CLASS_KINDS == DR__CLASS_COMM) {
      for (DrId v = 0; v < n; v++)
        if (ctx->node_class[v] == (guint32)c) ctx->chain[v] = ctx->n_chains;
      ctx->class_chains[c] = 1;
      ctx->n_chains++;
      continue;
    }
    for (DrId v = 0; v < n; v++) required[v] = ctx->node_class[v] == (guint32)c;
    GArray *certificate = n_present == 1 ? antichain : NULL;
    ctx->class_chains[c] = dr__chain_cover(ctx, required, ctx->chain, ctx->n_chains, certificate);
    ctx->n_chains += ctx->class_chains[c];
  }
  if (n_present > 1 || (n_present == 1 && only_comm)) {
    /* The width is the whole DAG's: one more cover, every node required. */
    guint32 *scratch = g_new(guint32, MAX(n, 1));
    memset(required, 1, n);
    dr__chain_cover(ctx, required, scratch, 0, antichain);
    g_free(scratch);
  }
  g_free(class_size);
  g_free(required);
  return antichain->len;
}
