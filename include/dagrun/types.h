/* types.h: the enums dagrun's public API and its internals share, each as
 * one X-macro list: the internal code includes this header and builds its
 * name tables (ir/names.c) from the same lists, so a value, its YAML or
 * report spelling and its exit code cannot drift apart. Data only: plain
 * C, no GLib, no CUDA (the kernel library includes it too). The kernel ABI
 * is in kernel.h; the functions are in dagrun.h. */
#ifndef DAGRUN_TYPES_H
#define DAGRUN_TYPES_H

/* X(ENUM_SUFFIX, yaml_spelling, size_in_bytes): buffer and parameter
 * element types. */
#define DR_ELEM_TYPE_LIST(X) \
  X(U8, "u8", 1)             \
  X(I32, "i32", 4)           \
  X(I64, "i64", 8)           \
  X(F16, "f16", 2)           \
  X(BF16, "bf16", 2)         \
  X(F32, "f32", 4)           \
  X(F64, "f64", 8)

typedef enum {
#define DR_X(e, s, n) DR_ELEM_##e,
  DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
      DR_ELEM_N_TYPES
} DrElemType;

/* X(ENUM_SUFFIX, yaml_spelling, reads, writes): how a kernel parameter
 * uses its buffer; drives dependency inference. */
#define DR_ACCESS_MODE_LIST(X) \
  X(READ, "read", 1, 0)        \
  X(WRITE, "write", 0, 1)      \
  X(READ_WRITE, "readwrite", 1, 1)

typedef enum {
#define DR_X(e, s, r, w) DR_ACCESS_##e,
  DR_ACCESS_MODE_LIST(DR_X)
#undef DR_X
      DR_ACCESS_N_MODES
} DrAccessMode;

/* X(ENUM_SUFFIX, exit_code): the codes of dagrun's GError domain
 * (DR_ERROR, dagrun.h) and the command line's exit code for each.
 *   USAGE: bad call order or options; INVALID: bad pipeline (nothing ran);
 *   IO: a file could not be read or written; UNAVAILABLE: the requested
 *   backend is unavailable; RUNTIME: failure while running; VERIFY: the
 *   concurrent run differs from the serial one; INTERRUPTED: stopped. */
#define DR_ERROR_CODE_LIST(X) \
  X(USAGE, 64)                \
  X(INVALID, 65)              \
  X(IO, 66)                   \
  X(UNAVAILABLE, 69)          \
  X(RUNTIME, 70)              \
  X(VERIFY, 1)                \
  X(INTERRUPTED, 70)          \
  X(OUTPUT, 73)

typedef enum {
#define DR_X(e, code) DR_ERROR_##e,
  DR_ERROR_CODE_LIST(DR_X)
#undef DR_X
} DrErrorCode;

/* X(ENUM_SUFFIX, spelling): node operations, as `op:` spells them. The
 * collectives (ALLREDUCE .. RECV, DR_OP_FIRST_COLLECTIVE onwards) run
 * through NCCL on the CUDA backend; docs/multi-gpu.md. */
#define DR_OP_LIST(X)               \
  X(KERNEL, "kernel")               \
  X(COPY, "copy")                   \
  X(MEMSET, "memset")               \
  X(ALLOC, "alloc")                 \
  X(FREE, "free")                   \
  X(HOST, "host")                   \
  X(NOOP, "noop")                   \
  X(ALLREDUCE, "allreduce")         \
  X(BROADCAST, "broadcast")         \
  X(REDUCE, "reduce")               \
  X(ALLGATHER, "allgather")         \
  X(REDUCESCATTER, "reducescatter") \
  X(ALLTOALL, "alltoall")           \
  X(SEND, "send")                   \
  X(RECV, "recv")

typedef enum {
#define DR_X(e, s) DR_OP_##e,
  DR_OP_LIST(DR_X)
#undef DR_X
      DR_N_OPS
} DrOp;

#define DR_OP_FIRST_COLLECTIVE DR_OP_ALLREDUCE
/* Whether `op` is a collective (or point-to-point) communication node. */
#define DR_OP_IS_COLLECTIVE(op) ((op) >= DR_OP_FIRST_COLLECTIVE && (op) < DR_N_OPS)

/* X(ENUM_SUFFIX, spelling): a reducing collective's operation (`reduce:`),
 * (NCCL numbers them sum, prod, max, min, avg: backends/nccl_api.c maps). */
#define DR_REDUCE_LIST(X) \
  X(SUM, "sum")           \
  X(PROD, "prod")         \
  X(MIN, "min")           \
  X(MAX, "max")           \
  X(AVG, "avg")

typedef enum {
#define DR_X(e, s) DR_REDUCE_##e,
  DR_REDUCE_LIST(DR_X)
#undef DR_X
      DR_N_REDUCES
} DrReduceOp;

/* X(ENUM_SUFFIX, spelling). Order matters: lower enum = lower priority. */
#define DR_PRIORITY_LIST(X) \
  X(LOW, "low")             \
  X(NORMAL, "normal")       \
  X(HIGH, "high")

typedef enum {
#define DR_X(e, s) DR_PRIORITY_##e,
  DR_PRIORITY_LIST(DR_X)
#undef DR_X
      DR_N_PRIORITIES
} DrPriority;

/* X(ENUM_SUFFIX, spelling): where a buffer lives (`where:`): device
 * memory, pinned host memory, or pageable host memory (malloc'd, not
 * pinned: copies to and from it block the issuing thread; graph mode
 * refuses them). Every rule about "host buffers" holds for both host
 * kinds (dr_where_is_host). */
#define DR_WHERE_LIST(X) \
  X(DEVICE, "device")    \
  X(HOST, "host")        \
  X(PAGEABLE, "pageable")

typedef enum {
#define DR_X(e, s) DR_WHERE_##e,
  DR_WHERE_LIST(DR_X)
#undef DR_X
      DR_N_WHERES
} DrWhere;

/* X(ENUM_SUFFIX, spelling): how the CUDA backend issues an iteration
 * (`run.mode`, --mode): eagerly on streams, or as a captured CUDA graph,
 * or auto (the default since #18): graph when the pipeline iterates
 * (more than one timed iteration) and every node is capturable, streams
 * otherwise (ir/mode.h says what is capturable). A plan and a run resolve
 * auto to one of the other two and say why. AUTO is last so that STREAMS
 * and GRAPH keep the values they had. */
#define DR_MODE_LIST(X) \
  X(STREAMS, "streams") \
  X(GRAPH, "graph")     \
  X(AUTO, "auto")

typedef enum {
#define DR_X(e, s) DR_MODE_##e,
  DR_MODE_LIST(DR_X)
#undef DR_X
      DR_N_MODES
} DrMode;

/* The most host threads that issue an eager iteration on CUDA
 * (run.issue_threads, --issue-threads: 0 picks; an H200 probe saw the
 * driver scale to ~2.5x at 8 threads and no further). */
#define DR_ISSUE_THREADS_MAX 8

/* X(ENUM_SUFFIX, spelling): what a graph-mode run does when its iteration
 * cannot be captured (`run.fallback`, --fallback): fail, or run eagerly on
 * streams. */
#define DR_FALLBACK_LIST(X) \
  X(NONE, "none")           \
  X(STREAMS, "streams")

typedef enum {
#define DR_X(e, s) DR_FALLBACK_##e,
  DR_FALLBACK_LIST(DR_X)
#undef DR_X
      DR_N_FALLBACKS
} DrFallback;

/* X(ENUM_SUFFIX, spelling): the backend a run uses (--backend); auto: CUDA
 * when a device is usable, else host. */
#define DR_BACKEND_LIST(X) \
  X(AUTO, "auto")          \
  X(CUDA, "cuda")          \
  X(HOST, "host")

typedef enum {
#define DR_X(e, s) DR_BACKEND_##e,
  DR_BACKEND_LIST(DR_X)
#undef DR_X
      DR_N_BACKENDS
} DrBackendKind;

/* X(ENUM_SUFFIX, spelling): how the CUDA backend times each node
 * (--node-timing). OFF is 0 and STAMPS 1 so that code written when this
 * was a gboolean (TRUE: time every node) keeps its meaning.
 *   off:    the makespan only; node times are NAN.
 *   stamps: each node's end lands as a %globaltimer value in a device
 *           array: eagerly, a built-in kernel writes it itself (its last
 *           block, DR_KFLAG_STAMPS) and other nodes get a one-thread stamp
 *           kernel after them; in a graph every node gets a stamp node on a
 *           side stream. A node's start is when it became ready (the
 *           latest of the iteration's start, the end of the node before it
 *           on its stream and the ends of the nodes it waits on), so its
 *           time includes queueing. %globaltimer may advance in ~1 µs steps.
 *   events: two timing events around each node, exact (the reference
 *           mode) but ~3-3.6 µs of GPU time per node on an H200.
 *   auto:   (the default) stamps in graph mode; in streams mode stamps
 *           unless more than 2 nodes in 5 would need a stamp launch (not
 *           self-stamping built-ins), else events. Measured on an H200
 *           (tests/backends, 500-kernel chain): stamps cost 0.12 µs per
 *           node in a graph and nothing measurable eagerly, events 3.8 and
 *           2.1-3.0 µs; a stamp launch costs ~4 µs of host time eagerly.
 * The host backend times every node with host clocks whatever the mode. */
#define DR_TIMING_LIST(X) \
  X(OFF, "off")           \
  X(STAMPS, "stamps")     \
  X(EVENTS, "events")     \
  X(AUTO, "auto")

typedef enum {
#define DR_X(e, s) DR_TIMING_##e,
  DR_TIMING_LIST(DR_X)
#undef DR_X
      DR_N_TIMINGS
} DrTimingMode;

/* X(ENUM_SUFFIX, spelling): --verify's verdict in a run report. */
#define DR_VERIFIED_LIST(X) \
  X(NOT_RUN, "not run")     \
  X(PASS, "passed")         \
  X(FAIL, "FAILED")

typedef enum {
#define DR_X(e, s) DR_VERIFIED_##e,
  DR_VERIFIED_LIST(DR_X)
#undef DR_X
} DrVerified;

/* X(ENUM_SUFFIX, spelling): how much the DOT draws (`--dot-detail`): full
 * (every node), summary (each foreach family, the nodes expanded from one
 * YAML entry, as one node with a count; edges between two groups merged
 * with a count) or auto (full up to 200 nodes, else summary). */
#define DR_DOT_DETAIL_LIST(X) \
  X(AUTO, "auto")             \
  X(SUMMARY, "summary")       \
  X(FULL, "full")

typedef enum {
#define DR_X(e, s) DR_DOT_DETAIL_##e,
  DR_DOT_DETAIL_LIST(DR_X)
#undef DR_X
      DR_N_DOT_DETAILS
} DrDotDetail;

/* X(ENUM_SUFFIX, spelling): the order of the run report's summary by
 * kernel/op (`--sort`): by total time, instances, median, standard
 * deviation, minimum or maximum duration, or bytes (each largest first),
 * or by name (A to Z). Ties go by name, then op. */
#define DR_REPORT_SORT_LIST(X) \
  X(TOTAL, "total")            \
  X(INSTANCES, "instances")    \
  X(MEDIAN, "median")          \
  X(STDDEV, "stddev")          \
  X(MIN, "min")                \
  X(MAX, "max")                \
  X(BYTES, "bytes")            \
  X(NAME, "name")

typedef enum {
#define DR_X(e, s) DR_REPORT_SORT_##e,
  DR_REPORT_SORT_LIST(DR_X)
#undef DR_X
      DR_N_REPORT_SORTS
} DrReportSort;

#endif
