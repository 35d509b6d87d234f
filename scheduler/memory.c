/* memory.c: the planner's memory figures, the serial peak and a certified
 * worst-case peak of device memory. Not the lifetime checks (lifetimes.c)
 * nor anything a backend measures.
 *
 * Requires: a graph whose lifetimes passed (allocs and frees of each
 * stream-ordered buffer alternate in program order) and the planner's edge
 * index and topological order (DrPlanCtx). Provides plan->whole_run_bytes,
 * peak_serial_bytes, peak_bound_bytes, peak_bound and n_lifetimes
 * (ir/plan.h), every allocation counted as dr_pool_bytes.
 *
 * The bound. The elements are lifetimes (one buffer may have several), each
 * weighted by its bytes; L1 < L2 when L1's free reaches L2's alloc in the
 * DAG. That is a partial order (an alloc reaches its own free through the
 * hazard edges), and the lifetimes live at one moment of any execution the
 * DAG allows form an antichain of it: if L1 < L2, L2's alloc starts after
 * L1's free completed. So the maximum weight of an antichain bounds the
 * live stream-ordered bytes of every execution, and it is reached: run
 * every ancestor of the antichain's allocs first. By the weighted Dilworth
 * theorem it equals W - F, where W is the total weight and F the maximum
 * number of "successor links" of a chain cover with multiplicities: a
 * maximum flow from a source feeding each free its weight, through DAG
 * edges of unbounded capacity (so reachability needs no transitive
 * closure), to a sink draining each alloc its weight.
 *
 * Algorithm: one scan in program order numbers the lifetimes and sums the
 * serial peak (over the alloc and free nodes the cost pass collected, so
 * the memory figures never walk every node themselves). A greedy first
 * flow sends each free's weight straight along its edges to allocs (the
 * next lifetime of its buffer). Dinic's algorithm then finds F from there:
 * breadth-first levels from the source over
 * the residual network (any DAG edge forward, an edge with flow backward,
 * stopped at the sink's level), then augmenting paths along the levels with
 * current-arc pointers, each carrying as much as its free, its alloc and
 * its backward arcs allow; phases repeat until the sink is unreachable.
 * The certificate: with no augmenting path, the lifetimes whose free the
 * last search reached and whose alloc it did not form a maximum-weight
 * antichain (the minimum cut crosses exactly their weight; an alloc reached
 * implies its free reached, since the alloc reaches the free). Its weight
 * is checked against W - F.
 *
 * Per device (dr__plan_memory_devices, on a run of several): the same
 * figures over the buffers of each device alone, one flow per device
 * over the same edge index (lifetimes of other devices carry no weight,
 * and their DAG paths still order this device's), so each device's
 * bound is exact for what its pool may hold at once; the figures above
 * stay the whole run's.
 *
 * The flow can be kept (DrMemoryFlow) and continued after an edge is added
 * (the budget pass, budget.c): a flow stays feasible when capacity is
 * added, so only the new augmenting paths are searched.
 *
 * Cost: O(allocs + frees) for the scan, O(V + E) per Dinic phase plus the
 * length of each augmenting path; on pipelines that allocate their
 * buffers again and again (per-step scratch) the greedy flow is maximal
 * or nearly so, no phase runs, and the last search only visits what the
 * frees left with weight reach. Nothing when there are no stream-ordered
 * buffers. Memory: 8 bytes per edge (the flow: reserved, and written only
 * for the nodes whose predecessor edges get flow) and about 18 per node. */
#include "scheduler/plan_internal.h"

#include <string.h>

#define UNSEEN (-1)

typedef struct {
  const DrPlanCtx *c;
  guint32 n;
  guint32 *life_of; /* [n]: the lifetime an alloc or free node belongs to, or DR_NONE */
  DrPlanLifetime *life;
  guint32 n_life;
  guint64 *supply; /* [n_life]: what the source may still send into the free */
  guint64 *demand; /* [n_life]: what the alloc may still send to the sink */
  guint64 *fe;     /* [m]: flow on each DAG edge, where fe_ok[edge's head] */
  guint8 *fe_ok;   /* [n]: fe holds node v's predecessor edges (else they carry 0, unwritten) */
  gint32 *level;   /* [n]: breadth-first level from the source, UNSEEN */
  guint32 *cur;    /* [n]: the current arc */
  guint32 *queue;  /* [n] */
  gint32 sink_level;
} Flow;

static gboolean is_alloc_node(const Flow *f, DrId v) {
  return f->life_of[v] != DR_NONE && f->life[f->life_of[v]].alloc == v;
}

/* Makes fe hold v's predecessor edges before one of them gets flow: the
 * flow array is zeroed a node at a time, on first write, so that a
 * network whose flow sits on few edges costs nothing per edge. */
static void fe_open(Flow *f, DrId v) {
  if (f->fe_ok[v]) return;
  const DrPlanCtx *c = f->c;
  memset(f->fe + DR__PRED_BEGIN(c, v), 0, sizeof(guint64) * (DR__PRED_END(c, v) - DR__PRED_BEGIN(c, v)));
  f->fe_ok[v] = 1;
}

/* Breadth-first levels from the source; TRUE when the sink is reachable.
 * Without a sink level the search is complete: the certificate's set. */
static gboolean bfs(Flow *f) {
  const DrPlanCtx *c = f->c;
  for (guint32 v = 0; v < f->n; v++) f->level[v] = UNSEEN;
  guint32 head = 0, tail = 0;
  for (guint32 i = 0; i < f->n_life; i++) {
    DrId v = f->life[i].free;
    if (f->supply[i] > 0) {
      f->level[v] = 1;
      f->queue[tail++] = v;
    }
  }
  f->sink_level = UNSEEN;
  while (head < tail) {
    DrId u = f->queue[head++];
    gint32 lu = f->level[u];
    if (f->sink_level != UNSEEN && lu + 1 >= f->sink_level) continue;
    if (is_alloc_node(f, u) && f->demand[f->life_of[u]] > 0) {
      f->sink_level = lu + 1;
      continue;
    }
    for (guint32 i = c->succ_off[u]; i < c->succ_off[u + 1]; i++) {
      DrId v = c->edges[c->succ_edge[i]].to;
      if (f->level[v] == UNSEEN) f->level[v] = lu + 1, f->queue[tail++] = v;
    }
    for (guint32 e = DR__PRED_BEGIN(c, u); f->fe_ok[u] && e < DR__PRED_END(c, u); e++) {
      DrId v = c->edges[e].from;
      if (f->fe[e] > 0 && f->level[v] == UNSEEN) f->level[v] = lu + 1, f->queue[tail++] = v;
    }
  }
  return f->sink_level != UNSEEN;
}

typedef struct {
  guint32 edge;
  gboolean backward;
} Step;

/* Advances node u's current arc to the next one usable now (level + 1,
 * residual capacity left): arc 0 is the sink (u an alloc with demand left,
 * at the sink's level), then the successors, then the predecessors along
 * flow (backward). Returns FALSE when none is left; else *to is the arc's
 * head (DR_NONE: the sink) and *step the DAG edge and its direction. */
static gboolean next_arc(Flow *f, DrId u, DrId *to, Step *step) {
  const DrPlanCtx *c = f->c;
  guint32 k = f->cur[u], so = c->succ_off[u], out = c->succ_off[u + 1] - so;
  guint32 po = DR__PRED_BEGIN(c, u), in = DR__PRED_END(c, u) - po;
  gint32 want = f->level[u] + 1;
  if (k == 0) {
    if (want == f->sink_level && is_alloc_node(f, u) && f->demand[f->life_of[u]] > 0) {
      *to = DR_NONE;
      return TRUE;
    }
    k = 1;
  }
  if (want >= f->sink_level) k = out + in + 1; /* only the sink is one level down */
  for (; k <= out; k++) {
    guint32 e = c->succ_edge[so + k - 1];
    if (f->level[c->edges[e].to] == want) {
      f->cur[u] = k;
      *to = c->edges[e].to;
      *step = (Step){e, FALSE};
      return TRUE;
    }
  }
  if (!f->fe_ok[u]) k = out + in + 1; /* no flow into u: no backward arc */
  for (; k <= out + in; k++) {
    guint32 e = po + (k - out - 1);
    if (f->fe[e] > 0 && f->level[c->edges[e].from] == want) {
      f->cur[u] = k;
      *to = c->edges[e].from;
      *step = (Step){e, TRUE};
      return TRUE;
    }
  }
  f->cur[u] = k;
  return FALSE;
}

/* One blocking flow along the levels (augmenting paths with current-arc
 * pointers; a node with no usable arc left leaves the level graph);
 * returns what it sent. */
static guint64 blocking_flow(Flow *f, GArray *path) {
  const DrPlanCtx *c = f->c;
  guint64 sent = 0;
  memset(f->cur, 0, sizeof(guint32) * f->n);
  for (guint32 i = 0; i < f->n_life; i++) {
    DrId root = f->life[i].free;
    while (f->supply[i] > 0 && f->level[root] == 1) {
      g_array_set_size(path, 0);
      DrId u = root, to;
      Step st;
      for (;;) {
        if (!next_arc(f, u, &to, &st)) { /* a dead end: retreat */
          f->level[u] = UNSEEN;
          if (path->len == 0) break;
          Step last = g_array_index(path, Step, path->len - 1);
          g_array_set_size(path, path->len - 1);
          u = last.backward ? c->edges[last.edge].to : c->edges[last.edge].from;
          f->cur[u]++;
          continue;
        }
        if (to == DR_NONE) { /* the sink: augment */
          guint32 a = f->life_of[u];
          guint64 d = MIN(f->supply[i], f->demand[a]);
          const Step *steps = (const Step *)path->data;
          for (guint32 s = 0; s < path->len; s++)
            if (steps[s].backward) d = MIN(d, f->fe[steps[s].edge]);
          for (guint32 s = 0; s < path->len; s++) {
            if (steps[s].backward) {
              f->fe[steps[s].edge] -= d;
            } else {
              fe_open(f, c->edges[steps[s].edge].to);
              f->fe[steps[s].edge] += d;
            }
          }
          f->supply[i] -= d;
          f->demand[a] -= d;
          sent += d;
          break;
        }
        g_array_append_val(path, st);
        u = to;
      }
    }
  }
  return sent;
}

/* Numbers the lifetimes in program order and sums the serial peak, over
 * the alloc and free nodes `pool` [n_pool] (program order) or, when it is
 * NULL, over every node of g. */
static void scan_lifetimes(const DrGraph *g, const DrPlanPoolNode *pool, guint32 n_pool, DrPlan *plan,
                           GArray *lives, guint32 *life_of) {
  guint32 n = g->nodes->len, n_buffers = g->buffers->len;
  g_autofree guint32 *open = g_new(guint32, MAX(n_buffers, 1));
  g_autofree guint32 *count = g_new0(guint32, MAX(n_buffers, 1));
  g_autofree guint64 *bytes = g_new(guint64, MAX(n_buffers, 1));
  g_autoptr(GArray) all = NULL;
  guint64 whole = 0, live = 0, peak = 0;
  for (DrId b = 0; b < n_buffers; b++) {
    const DrBuffer *buf = dr_graph_buffer(g, b);
    open[b] = DR_NONE;
    bytes[b] = dr_pool_bytes(dr_buffer_bytes(buf));
    if (buf->where == DR_WHERE_DEVICE && buf->alloc_node == DR_NONE) whole += bytes[b];
  }
  memset(life_of, 0xFF, sizeof(guint32) * MAX(n, 1)); /* DR_NONE */
  if (pool == NULL) {
    all = g_array_new(FALSE, FALSE, sizeof(DrPlanPoolNode));
    for (DrId v = 0; v < n; v++) {
      const DrNode *node = dr_graph_node(g, v);
      DrPlanPoolNode p = {v, node->buffer, node->op == DR_OP_ALLOC};
      if (node->op == DR_OP_ALLOC || node->op == DR_OP_FREE) g_array_append_val(all, p);
    }
    pool = (const DrPlanPoolNode *)all->data;
    n_pool = all->len;
  }
  for (guint32 k = 0; k < n_pool; k++) {
    DrId v = pool[k].node, b = pool[k].buffer;
    if (pool[k].alloc) {
      if (open[b] != DR_NONE) continue;
      DrPlanLifetime l = {b, ++count[b], v, DR_NONE, bytes[b]};
      open[b] = lives->len;
      life_of[v] = lives->len;
      g_array_append_val(lives, l);
      live += l.bytes;
      peak = MAX(peak, live);
    } else if (open[b] != DR_NONE) {
      DrPlanLifetime *l = &g_array_index(lives, DrPlanLifetime, open[b]);
      l->free = v;
      life_of[v] = open[b];
      live -= l->bytes;
      open[b] = DR_NONE;
    }
  }
  /* The lifetimes pass guarantees a free for every alloc; a graph planned
   * without it keeps only the closed lifetimes. */
  guint32 w = 0;
  for (guint32 i = 0; i < lives->len; i++) {
    DrPlanLifetime l = g_array_index(lives, DrPlanLifetime, i);
    if (l.free == DR_NONE) {
      life_of[l.alloc] = DR_NONE;
      continue;
    }
    life_of[l.alloc] = life_of[l.free] = w;
    g_array_index(lives, DrPlanLifetime, w++) = l;
  }
  g_array_set_size(lives, w);
  plan->whole_run_bytes = whole;
  plan->peak_serial_bytes = whole + peak;
  plan->n_lifetimes = w;
}

/* A first flow, before Dinic's: each alloc draws what it can straight
 * along its own edges from frees. The hazard edges give an alloc the free
 * of its buffer's lifetime before as a predecessor, with the same bytes,
 * so on a pipeline that allocates a buffer again and again this is nearly
 * the maximum flow, and the search after it only proves it (one
 * breadth-first search from the frees whose weight is left). Any feasible
 * flow is a sound start: Dinic augments it to a maximum one. Walks the
 * allocs in program order over the edges sorted by head, so the index is
 * read in the order it lies in memory. O(in-degree of the allocs).
 * Returns what it sent. */
static guint64 greedy_flow(Flow *f) {
  const DrPlanCtx *c = f->c;
  guint64 sent = 0;
  for (guint32 a = 0; a < f->n_life; a++) {
    DrId v = f->life[a].alloc;
    for (guint32 e = DR__PRED_BEGIN(c, v); e < DR__PRED_END(c, v) && f->demand[a] > 0; e++) {
      guint32 i = f->life_of[c->edges[e].from];
      if (i == DR_NONE || f->life[i].free != c->edges[e].from) continue;
      guint64 d = MIN(f->supply[i], f->demand[a]);
      fe_open(f, v);
      f->fe[e] += d;
      f->supply[i] -= d;
      f->demand[a] -= d;
      sent += d;
    }
  }
  return sent;
}

struct DrMemoryFlow {
  Flow f;
  guint64 total, flow;
  guint32 m_cap; /* room in f.fe */
  GArray *path;  /* Step */
};

DrMemoryFlow *dr__memory_flow_new(const DrPlanCtx *ctx, GArray *lives, guint32 *life_of) {
  DrMemoryFlow *mf = g_new0(DrMemoryFlow, 1);
  Flow *f = &mf->f;
  *f = (Flow){
      .c = ctx, .n = ctx->n, .life_of = life_of, .life = (DrPlanLifetime *)lives->data, .n_life = lives->len};
  f->supply = g_new(guint64, MAX(f->n_life, 1));
  f->demand = g_new(guint64, MAX(f->n_life, 1));
  for (guint32 i = 0; i < f->n_life; i++) {
    f->supply[i] = f->demand[i] = f->life[i].bytes;
    mf->total += f->life[i].bytes;
  }
  mf->m_cap = MAX(ctx->m, 1);
  f->fe = g_new(guint64, mf->m_cap); /* zeroed per node by fe_open */
  f->fe_ok = g_new0(guint8, MAX(f->n, 1));
  f->level = g_new(gint32, MAX(f->n, 1));
  f->cur = g_new(guint32, MAX(f->n, 1));
  f->queue = g_new(guint32, MAX(f->n, 1));
  mf->path = g_array_new(FALSE, FALSE, sizeof(Step));
  mf->flow = greedy_flow(f);
  return mf;
}

void dr__memory_flow_insert_edge(DrMemoryFlow *mf, guint32 at, guint32 m) {
  Flow *f = &mf->f;
  if (m > mf->m_cap) {
    mf->m_cap = MAX(m, mf->m_cap * 2);
    f->fe = g_renew(guint64, f->fe, mf->m_cap);
  }
  memmove(f->fe + at + 1, f->fe + at, sizeof(guint64) * (m - 1 - at));
  f->fe[at] = 0;
}

guint64 dr__memory_flow_run(DrMemoryFlow *mf, GArray *antichain) {
  Flow *f = &mf->f;
  if (f->n_life == 0) return 0;
  while (bfs(f)) mf->flow += blocking_flow(f, mf->path);
  guint64 weight = 0;
  for (guint32 i = 0; i < f->n_life; i++) {
    const DrPlanLifetime *l = &f->life[i];
    if (f->level[l->free] != UNSEEN && f->level[l->alloc] == UNSEEN) {
      g_array_append_val(antichain, *l);
      weight += l->bytes;
    }
  }
  if (weight != mf->total - mf->flow)
    g_critical("memory bound: antichain of %" G_GUINT64_FORMAT
               " bytes against a flow bound of %" G_GUINT64_FORMAT,
               weight, mf->total - mf->flow);
  return MAX(weight, mf->total - mf->flow);
}

void dr__memory_flow_free(DrMemoryFlow *mf) {
  if (mf == NULL) return;
  g_free(mf->f.supply);
  g_free(mf->f.demand);
  g_free(mf->f.fe);
  g_free(mf->f.fe_ok);
  g_free(mf->f.level);
  g_free(mf->f.cur);
  g_free(mf->f.queue);
  g_array_unref(mf->path);
  g_free(mf);
}

guint64 dr__memory_bound(const DrPlanCtx *ctx, GArray *lives, guint32 *life_of, GArray *antichain) {
  if (lives->len == 0) return 0;
  DrMemoryFlow *mf = dr__memory_flow_new(ctx, lives, life_of);
  guint64 w = dr__memory_flow_run(mf, antichain);
  dr__memory_flow_free(mf);
  return w;
}

void dr__memory_lifetimes(const DrGraph *graph, GArray *lives, guint32 *life_of, guint64 *whole_run,
                          guint64 *serial_peak) {
  DrPlan tmp = {0};
  scan_lifetimes(graph, NULL, 0, &tmp, lives, life_of);
  *whole_run = tmp.whole_run_bytes;
  *serial_peak = tmp.peak_serial_bytes;
}

void dr__plan_memory(const DrPlanCtx *ctx, DrPlan *plan) {
  const DrGraph *g = ctx->graph;
  g_autoptr(GArray) lives = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  g_autofree guint32 *life_of = g_new(guint32, MAX(ctx->n, 1));
  const GArray *pool = ctx->pool_nodes;
  scan_lifetimes(g, pool ? (const DrPlanPoolNode *)pool->data : NULL, pool ? pool->len : 0, plan, lives,
                 life_of);
  g_array_set_size(plan->peak_bound, 0);
  plan->peak_bound_bytes = plan->whole_run_bytes + dr__memory_bound(ctx, lives, life_of, plan->peak_bound);
}

void dr__plan_memory_devices(const DrPlanCtx *ctx, DrPlan *plan) {
  const DrGraph *g = ctx->graph;
  guint32 nd;
  const gint32 *devs = dr_graph_devices(g, &nd);
  g_array_set_size(plan->device_memory, 0);
  if (nd <= 1) return;
  DrPlanDeviceMemory *rows = g_new0(DrPlanDeviceMemory, nd);
  for (guint32 r = 0; r < nd; r++) {
    rows[r].device = devs[r];
    rows[r].peak_bound = g_array_new(FALSE, TRUE, sizeof(DrPlanLifetime));
  }
  for (DrId b = 0; b < g->buffers->len; b++) {
    const DrBuffer *buf = dr_graph_buffer(g, b);
    gint32 r = dr_graph_device_rank(g, dr_graph_buffer_device(g, b));
    if (r < 0 || buf->alloc_node != DR_NONE) continue;
    if (plan->storage != NULL && plan->storage[b] != b) continue; /* in another's storage */
    rows[r].whole_run_bytes += dr_pool_bytes(plan->storage ? plan->storage_bytes[b] : dr_buffer_bytes(buf));
  }
  g_autoptr(GArray) lives = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  g_autofree guint32 *life_of = g_new(guint32, MAX(ctx->n, 1));
  guint64 whole, serial;
  dr__memory_lifetimes(g, lives, life_of, &whole, &serial);
  const DrPlanLifetime *life = (const DrPlanLifetime *)lives->data;
  g_autofree gint32 *rank = g_new(gint32, MAX(lives->len, 1));
  for (guint32 i = 0; i < lives->len; i++)
    rank[i] = dr_graph_device_rank(g, dr_graph_buffer_device(g, life[i].buffer));
  /* Serial peaks: file order, each device's live bytes apart. */
  g_autofree guint64 *live = g_new0(guint64, nd), *peak = g_new0(guint64, nd);
  for (DrId v = 0; v < ctx->n; v++) {
    guint32 i = life_of[v];
    if (i == DR_NONE || rank[i] < 0) continue;
    if (life[i].alloc == v) {
      live[rank[i]] += life[i].bytes;
      peak[rank[i]] = MAX(peak[rank[i]], live[rank[i]]);
    } else {
      live[rank[i]] -= life[i].bytes;
    }
  }
  /* Bounds: each device's lifetimes alone in the same flow network. */
  g_autoptr(GArray) mine = g_array_new(FALSE, FALSE, sizeof(DrPlanLifetime));
  g_autofree guint32 *mine_of = g_new(guint32, MAX(ctx->n, 1));
  memset(mine_of, 0xFF, sizeof(guint32) * MAX(ctx->n, 1));
  for (guint32 r = 0; r < nd; r++) {
    g_array_set_size(mine, 0);
    for (guint32 i = 0; i < lives->len; i++)
      if (rank[i] == (gint32)r) {
        mine_of[life[i].alloc] = mine_of[life[i].free] = mine->len;
        g_array_append_val(mine, life[i]);
      }
    guint64 w = dr__memory_bound(ctx, mine, mine_of, rows[r].peak_bound);
    for (guint32 i = 0; i < mine->len; i++) {
      const DrPlanLifetime *l = &g_array_index(mine, DrPlanLifetime, i);
      mine_of[l->alloc] = mine_of[l->free] = DR_NONE;
    }
    rows[r].n_lifetimes = mine->len;
    rows[r].peak_serial_bytes = rows[r].whole_run_bytes + peak[r];
    rows[r].peak_bound_bytes = rows[r].whole_run_bytes + w;
  }
  g_array_append_vals(plan->device_memory, rows, nd);
  g_free(rows);
}
