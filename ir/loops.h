/* loops.h: loop and conditional nodes in the IR (issue #17): `repeat: N`,
 * `while: COND` and `if: COND` / `else:` nodes whose bodies are graphs of
 * their own.
 *
 * A loop (or conditional) is one node of its enclosing graph, of op noop
 * with DrNode.loop = 1 + its index in graph->loops. Its accesses are the
 * union of its body's (per buffer, one access over the hull of the
 * ranges the body reads and one over those it writes), so the hazard
 * rules order it against the nodes around it exactly as they would any
 * node. Its body is a separate DrGraph (DrLoop.body; an `if:` also has
 * an `else:` body, possibly empty) with a copy of the enclosing graph's
 * buffer and kernel tables, the same ids, so that a body's accesses and
 * kernel ids mean the same thing in every graph of the pipeline; body
 * node ids are scoped, "LOOP/NODE" (nested: "A/B/C", decisions.md
 * "Names"). Each body goes through the passes and the planner on its own
 * (scheduler/loops.c).
 *
 * Meaning (docs/format.md, "Loops and conditionals"): the body runs
 * serially, one trip after another, each trip complete before the next
 * starts, so every dependency between trips (the last writers of a trip
 * before the first readers of the next) holds without an edge. repeat:
 * N trips. while: do-while, a first trip, then another while element 0 of
 * the condition buffer (i32) is non-zero after a trip. if: the body when
 * element 0 of the condition is non-zero when the node starts, else the
 * else body.
 *
 * What a body may hold (decisions.md "Loop and conditional bodies") is
 * checked here, once, for both front ends: dr_loop_check_body. */
#ifndef DAGRUN_IR_LOOPS_H
#define DAGRUN_IR_LOOPS_H

#include <glib.h>

#include "ir/diag.h"
#include "ir/graph.h"

G_BEGIN_DECLS

/* X(ENUM_SUFFIX, spelling: the YAML key that makes the node) */
#define DR_LOOP_KIND_LIST(X) \
  X(REPEAT, "repeat")        \
  X(WHILE, "while")          \
  X(IF, "if")

typedef enum {
#define DR_X(e, s) DR_LOOP_##e,
  DR_LOOP_KIND_LIST(DR_X)
#undef DR_X
      DR_N_LOOP_KINDS
} DrLoopKind;

const char *dr_loop_kind_name(DrLoopKind kind);

/* The element type of a condition buffer. */
#define DR_COND_TYPE DR_ELEM_I32

struct DrLoop {
  DrLoopKind kind;
  DrId node;      /* the loop's node in the enclosing graph */
  const char *id; /* its scoped id, interned in the enclosing graph */
  DrLoc loc;
  guint64 count; /* DR_LOOP_REPEAT: the trips (counted: the current value) */
  /* DR_LOOP_REPEAT whose count is a run-time parameter's (a
   * DR_PARAM_USE_LOOP_COUNT of the top-level graph): evaluated per run,
   * never unrolled; graph mode builds a counted WHILE whose trip count
   * the device reads from a word written when the value changes
   * (backends/cuda/loops.c). A constant count is FALSE. */
  gboolean counted;
  DrId cond; /* DR_LOOP_WHILE, DR_LOOP_IF: the condition buffer */
  DrLoc cond_loc;
  DrGraph *body;      /* owned: the body (an if's `then`) */
  DrGraph *else_body; /* owned, DR_LOOP_IF only; NULL: no else */
};

#define dr_graph_n_loops(g) ((g)->loops ? (g)->loops->len : 0u)
#define dr_graph_loop(g, i) ((DrLoop *)g_ptr_array_index((g)->loops, (i)))

/* The loop of node `node` of `g`, or NULL when it is no loop. */
const DrLoop *dr_graph_node_loop(const DrGraph *g, DrId node);

/* Returns a new empty body graph for a loop of `parent`: the parent's
 * file, base directory, buffers and kernels (same ids; buffers copied
 * without their lifetime nodes, which belong to the top-level graph).
 * Free with dr_graph_free. */
DrGraph *dr_loop_body_new(const DrGraph *parent);

/* Checks what body `body` of loop `id` (of `kind`) may hold,
 * reporting each node that breaks a rule at its location with the rule
 * and "hoist it out of the loop": host nodes, alloc and free, copies
 * touching host memory, a device other than `device` (-1: the run's).
 * Nested loops were checked when they were built. Returns TRUE when
 * nothing was reported. */
gboolean dr_loop_check_body(const DrGraph *body, const char *id, DrLoopKind kind, gint32 device,
                            DrDiags *diags);
/* run.device_loop: true (ir/graph.h) makes the whole iteration of `g`
 * the body of one WHILE node: the same rules for every node of `g`, each
 * breach reported at the node, with a note at the key. TRUE when the key
 * is off or nothing was reported. */
gboolean dr_loop_check_device_loop(const DrGraph *g, DrDiags *diags);
/* Whether some node of `body` writes element 0 of buffer `cond` (a
 * while's body must, or it would never stop). */
gboolean dr_loop_body_sets(const DrGraph *body, DrId cond);

/* "loop" or "conditional": what messages call a node of `kind`. */
const char *dr_loop_noun(DrLoopKind kind);

/* Adds loop `loop` (body, else_body, kind, count, cond filled; node, id
 * unset) to `g` as node `node`, just committed by the builder as a noop
 * (the last node of `g`): appends the union of the bodies' accesses (and
 * for while/if a read of the condition) to it, marks it a loop and takes
 * ownership of the bodies. */
void dr_loop_attach(DrGraph *g, DrId node, DrLoop *loop);

/* Graph mode's unroll of a `while:` (backends/cuda/condgraph.c): the
 * copies of the body per trip of its WHILE node, each after the first
 * guarded by an IF node on the condition, so that no copy runs past the
 * stop condition. The rule (DAGRUN_WHILE_UNROLL=auto): a trip costs the
 * device about DR_WHILE_TRIP_US (the H200 probe of issue #17, GPU-NOTES),
 * so copies are added until the estimated body time per trip reaches it:
 * ceil(DR_WHILE_TRIP_US / body_us), 1 to DR_WHILE_UNROLL_MAX.
 * `body_us`: the body plan's estimated critical path. */
#define DR_WHILE_TRIP_US 3.0
#define DR_WHILE_UNROLL_MAX 8u
guint32 dr_loop_auto_unroll(double body_us);

/* How graph mode guards a while body's unrolled copies 2..U, so that no
 * copy runs past the stop condition: X(ENUM_SUFFIX, spelling in --plan).
 * NONE: one copy per trip (U = 1), nothing to guard. IF: each copy in an
 * IF node set by a condition kernel. KERNEL: each of the copy's kernels
 * is given the condition as its guard word (DrKLaunch.guard) and returns
 * at once when it is 0, so a trip of U copies costs one conditional node
 * and a copy after the stop costs only its kernels' empty launches. */
#define DR_WHILE_GUARD_LIST(X) \
  X(NONE, "none")              \
  X(IF, "IF nodes")            \
  X(KERNEL, "kernels")

typedef enum {
#define DR_X(e, s) DR_WHILE_GUARD_##e,
  DR_WHILE_GUARD_LIST(DR_X)
#undef DR_X
      DR_N_WHILE_GUARDS
} DrWhileGuard;

const char *dr_while_guard_name(DrWhileGuard guard);

/* Whether the copies of while body `body` (condition buffer `cond`) can
 * be guarded by their kernels: every node is a noop or a kernel whose
 * launch honours a guard (DrKernelDecl.guardable: no memset, copy,
 * nested loop, cuBLAS call or user kernel: nothing else can read the
 * condition), exactly one node writes element 0 of `cond`, and no kernel
 * follows it by the body's edges. A guarded copy then runs that node
 * after every other node of the copy (graph mode adds the edges), so no
 * kernel of a copy runs after or beside the write whose value it would
 * read as its guard. TRUE with *writer that node; FALSE with *why
 * (static) saying what prevents it. Either pointer may be NULL. */
gboolean dr_loop_while_guardable(const DrGraph *body, DrId cond, DrId *writer, const char **why);

/* The unroll of a kernel-guarded while body (its default in graph mode):
 * a trip of U copies pays one trip's DR_WHILE_TRIP_US, so copies are
 * added until that is at most DR_WHILE_GUARD_SHARE of the copies' own
 * estimated time: ceil(DR_WHILE_TRIP_US / (DR_WHILE_GUARD_SHARE *
 * body_us)), 1 to DR_WHILE_GUARDED_MAX (issue #17's target is within
 * 1.10x of the fully unrolled body; the cost model puts a tiny kernel at
 * ~3 us where the H200 takes ~1.1 us in a graph, so 5% of the estimate
 * is ~14% of the real body: a 3-kernel body gets 10 copies). What it costs: once per run of the loop,
 * the copies after the stop of the last trip, at most U - 1, each an
 * empty launch per kernel (about 1 us each on the H200). */
#define DR_WHILE_GUARD_SHARE 0.05
#define DR_WHILE_GUARDED_MAX 16u
guint32 dr_loop_auto_unroll_guarded(double body_us);

/* Frees a loop and its bodies (NULL-safe). */
void dr_loop_free(DrLoop *loop);

/* The number of nodes in `g` and every body under it, loops counted once
 * each as well. */
guint64 dr_graph_n_nodes_deep(const DrGraph *g);

G_END_DECLS

#endif
