/* cost.c: the planner's cost model, an estimated duration per node,
 * overridden by the measured durations of a previous run's JSON report
 * (--profile=FILE: the library reads it with report/profile.c and passes
 * the durations in; the planner opens no file). Not a simulator: the numbers
 * only rank merges when the stream cap binds and order the issue timeline.
 *
 * Requires: a graph. Provides: ctx->dur in µs, ctx->pool_nodes (the
 * alloc and free nodes, for memory.c) when the planner asked for them,
 * and, on a call before the issue order exists, ctx->node_prio (read in
 * the same walk over the nodes; order.c takes and frees it).
 *
 * Model (GPU-NOTES.md, H200): copies move bytes at 55 GB/s plus 2 µs;
 * kernels touch their accessed bytes at 3 TB/s plus 3 µs, except `spin`
 * (its `ns` argument) and gemm_* (2*m*n*k flops at 50 TFLOP/s plus 3 µs);
 * memset writes at 3 TB/s plus 2 µs; host nodes cost 24 µs (sleep: its
 * `us` argument more); alloc and free 2 µs; noop 0.
 * Complexity: O(V + accesses + args), O(profile size). */
#include <math.h>
#include <string.h>

#include "scheduler/plan_internal.h"

#define COPY_BYTES_PER_US 55e3 /* 55 GB/s */
#define MEM_BYTES_PER_US 3e6   /* 3 TB/s */
#define FLOPS_PER_US 50e6      /* 50 TFLOP/s */
#define COPY_FIXED_US 2.0
#define KERNEL_FIXED_US 3.0
#define HOST_FIXED_US 24.0
#define POOL_FIXED_US 2.0
#define COLL_FIXED_US 10.0 /* an NCCL launch and its handshake */

static guint64 access_bytes(const DrGraph *g, const DrNode *node, gboolean writes_only) {
  guint64 bytes = 0;
  for (guint32 i = node->access_first; i < node->access_first + node->access_count; i++) {
    const DrAccess *a = dr_graph_access(g, i);
    if (writes_only && !dr_access_writes(a->mode)) continue;
    bytes += (a->end - a->begin) * (guint64)dr_elem_size(dr_graph_buffer(g, a->buffer)->type);
  }
  return bytes;
}

/* The integer argument named `name` of a kernel or host node, or -1. */
static gint64 int_arg(const DrGraph *g, const DrNode *node, const char *name) {
  const DrParam *params = NULL;
  guint32 n_params = 0;
  if (node->op == DR_OP_KERNEL && node->kernel < g->kernels->len) {
    params = dr_graph_kernel(g, node->kernel)->params;
    n_params = dr_graph_kernel(g, node->kernel)->n_params;
  } else if (node->op == DR_OP_HOST) {
    params = dr_host_fn_params(node->host_fn, &n_params);
  }
  for (guint32 i = node->arg_first; i < node->arg_first + node->arg_count; i++) {
    const DrArg *a = dr_graph_arg(g, i);
    if (a->kind == DR_ARG_INT && a->param < n_params && strcmp(params[a->param].name, name) == 0)
      return a->v.i;
  }
  return -1;
}

/* What the cost model makes of a kernel: its name decides. */
typedef enum { KERNEL_PLAIN, KERNEL_SPIN, KERNEL_GEMM } KernelKind;

static KernelKind kernel_kind(const DrGraph *g, DrId kernel) {
  const char *name = kernel < g->kernels->len ? dr_graph_kernel(g, kernel)->name : "";
  if (strcmp(name, "spin") == 0) return KERNEL_SPIN;
  if (g_str_has_prefix(name, "gemm")) return KERNEL_GEMM;
  return KERNEL_PLAIN;
}

/* The estimate for `node`; `kind` is its kernel's kind when it is a
 * kernel (ignored otherwise). */
static double node_cost(const DrGraph *g, const DrNode *node, KernelKind kind) {
  switch (node->op) {
    case DR_OP_COPY:
      /* The source slice: a copy's read access. */
      return (double)(access_bytes(g, node, FALSE) - access_bytes(g, node, TRUE)) / COPY_BYTES_PER_US +
             COPY_FIXED_US;
    case DR_OP_MEMSET:
      return (double)access_bytes(g, node, TRUE) / MEM_BYTES_PER_US + COPY_FIXED_US;
    case DR_OP_KERNEL: {
      if (kind == KERNEL_SPIN) {
        gint64 ns = int_arg(g, node, "ns");
        return ns > 0 ? (double)ns / 1e3 : KERNEL_FIXED_US;
      }
      if (kind == KERNEL_GEMM) {
        gint64 m = int_arg(g, node, "m"), nn = int_arg(g, node, "n"), k = int_arg(g, node, "k");
        if (m > 0 && nn > 0 && k > 0)
          return 2.0 * (double)m * (double)nn * (double)k / FLOPS_PER_US + KERNEL_FIXED_US;
      }
      return (double)access_bytes(g, node, FALSE) / MEM_BYTES_PER_US + KERNEL_FIXED_US;
    }
    case DR_OP_HOST: {
      gint64 us = node->host_fn == DR_HOST_FN_SLEEP ? int_arg(g, node, "us") : -1;
      return HOST_FIXED_US + (us > 0 ? (double)us : 0.0);
    }
    case DR_OP_ALLOC:
    case DR_OP_FREE:
      return POOL_FIXED_US;
    case DR_OP_ALLREDUCE:
    case DR_OP_BROADCAST:
    case DR_OP_REDUCE:
    case DR_OP_ALLGATHER:
    case DR_OP_REDUCESCATTER:
    case DR_OP_ALLTOALL:
    case DR_OP_SEND:
    case DR_OP_RECV:
      /* A ring moves about 2 (n-1)/n of one participant's bytes over links
       * of a copy's speed: about its src plus dst. */
      return (double)access_bytes(g, node, FALSE) / MAX(node->n_parts, 1) / COPY_BYTES_PER_US + COLL_FIXED_US;
    case DR_OP_NOOP:
    case DR_N_OPS:
      break;
  }
  return 0.0;
}

double dr__node_cost_us(const DrGraph *g, DrId id) {
  const DrNode *node = dr_graph_node(g, id);
  return node_cost(g, node, node->op == DR_OP_KERNEL ? kernel_kind(g, node->kernel) : KERNEL_PLAIN);
}

void dr__plan_costs(DrPlanCtx *ctx, const double *durations) {
  ctx->dur = g_new(double, MAX(ctx->n, 1));
  /* The planner makes the durations again after the chain cover
   * (planner.c): the pool nodes are collected on the first call only. */
  gboolean collect = ctx->pool_nodes != NULL && ctx->pool_nodes->len == 0;
  /* Each kernel's kind once, not a name comparison per node. */
  const DrGraph *g = ctx->graph;
  guint8 *kind = g_new(guint8, MAX(g->kernels->len, 1));
  for (DrId k = 0; k < g->kernels->len; k++) kind[k] = (guint8)kernel_kind(g, k);
  /* The priorities too, for the issue order, in the same walk over the
   * nodes (first call only: the order pass frees them). */
  gboolean prios = ctx->order == NULL;
  if (prios) {
    g_free(ctx->node_prio);
    ctx->node_prio = g_new(guint8, MAX(ctx->n, 1));
  }
  for (DrId v = 0; v < ctx->n; v++) {
    const DrNode *node = dr_graph_node(g, v);
    if (prios) ctx->node_prio[v] = (guint8)node->priority;
    if (durations != NULL && !isnan(durations[v]))
      ctx->dur[v] = durations[v];
    else
      ctx->dur[v] = node_cost(g, node,
                              node->op == DR_OP_KERNEL && node->kernel < g->kernels->len
                                  ? (KernelKind)kind[node->kernel]
                                  : KERNEL_PLAIN);
    /* Here, while the node is in the cache: a walk of its own over a
     * million nodes would cost the memory figures more than their flow. */
    if (collect && (node->op == DR_OP_ALLOC || node->op == DR_OP_FREE)) {
      DrPlanPoolNode p = {v, node->buffer, node->op == DR_OP_ALLOC};
      g_array_append_val(ctx->pool_nodes, p);
    }
  }
  g_free(kind);
}
