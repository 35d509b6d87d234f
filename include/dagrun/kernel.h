/* kernel.h: the plain C ABI of dagrun kernels, the built-in ones
 * (kernels/registry.h) and a program's own (dr_pipeline_register_kernel):
 * a DrKernelDef declares its parameters exactly as a user kernel's
 * `params:` would (type, pointer or scalar, access), which is what drives
 * hazard inference, and carries the entry points. No GLib, no CUDA types:
 * streams and library handles pass through as void pointers.
 *
 * Calling convention (launch, host and check):
 *  - args[i] and counts[i] are indexed by declared parameter, in declaration
 *    order; counts[i] is the element count of pointer parameter i's slice
 *    (entries of scalar parameters are ignored).
 *  - f32 scalars arrive as double in DrKValue.f and are rounded to float.
 *  - `check`, when set, states the constraints between counts and scalars
 *    ("x and y have the same length"); adding a node (and `dagrun --check`
 *    for a file) calls it before anything runs, and launch/host call it
 *    again and refuse bad arguments. Its message names the argument at
 *    fault first ("c must have m*n = 9 elements"): the error is reported at
 *    that argument's location when the first word is a parameter's name.
 *  - `launch` enqueues the CUDA version on l->stream; `host` runs the CPU
 *    twin synchronously. Either may be NULL: a kernel without `host` cannot
 *    run on the host backend, one without `launch` not on CUDA. */
#ifndef DAGRUN_KERNEL_H
#define DAGRUN_KERNEL_H

#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Size of the `err` buffers of check and host, including the NUL. */
#define DR_KERR_SIZE 256

/* A declared parameter: a pointer (a buffer slice, with its access mode)
 * or a scalar (i32 i64 f32 f64). */
typedef struct {
  const char *name;
  DrElemType type;
  int is_pointer;      /* 1: a buffer argument */
  DrAccessMode access; /* pointers only */
  int optional;        /* scalars only: may be left out, then `def` is used */
  double def;
  const char *doc;
} DrKParam;

/* One argument value, by the parameter's kind: `ptr` for pointers (device
 * memory for launch, host memory for host), `i` for i32/i64 scalars, `f`
 * for f32/f64 scalars. */
typedef union {
  void *ptr;
  int64_t i;
  double f;
} DrKValue;

typedef struct {
  const DrKValue *args;   /* one per declared parameter, declaration order */
  const uint64_t *counts; /* element count of each pointer argument's slice,
                             indexed like args */
  unsigned grid[3];       /* resolved launch shape (launch only) */
  unsigned block[3];
  unsigned shared;
  void *stream;  /* cudaStream_t (launch only) */
  void *blas;    /* DrKBlas* bound to `stream` for kernels with
                    DR_KFLAG_BLAS (kernels/blas.h), else NULL (always
                    for a program's own kernels) */
  void *scratch; /* device memory of at least the kernel's scratch_bytes,
                    private to this node (launch only), or NULL: then
                    the launcher borrows it with cudaMallocAsync */
  void *stamp;   /* unsigned long long* in device memory, or NULL: with
                    DR_KFLAG_STAMPS the launch leaves it at least the
                    %globaltimer value at which its last block finished
                    (each block's thread 0 does an atomicMax after the
                    block's work), so eager timing needs no stamp launch;
                    launchers without the flag ignore it (launch only) */
  int pdl;       /* nonzero: the previous operation on `stream` is a kernel,
                    and this launch may start early with programmatic
                    dependent launch (launch only). The built-ins do: each
                    kernel's first statement is drk::wait_prior_grid
                    (griddepcontrol.wait), so nothing runs before the
                    previous grid has finished and its writes are visible;
                    only its launch latency overlaps. On devices below
                    compute capability 9.0 the built-ins launch normally
                    (no PDL there). Launchers that ignore it launch
                    normally. */
  /* int32_t* in device memory, or NULL: with DR_KFLAG_GUARD, a launch
   * that finds guard[0] == 0 when it starts does nothing (every thread
   * returns before any work; its stamp is not raised). Graph mode guards
   * the 2nd..Nth unrolled copy of a while body with the loop's condition
   * (docs/format.md, "Loops and conditionals"). Launchers without the
   * flag are never given one (launch only). */
  const void *guard;
  /* unsigned long long* in device memory, or NULL (always without
   * `guard`): a guarded launch that runs adds 1 to it, once (launch
   * only). */
  void *guard_runs;
  /* uint64_t* in device memory, indexed like counts, or NULL: with
   * DR_KFLAG_DEVICE_COUNTS, the launch reads each pointer parameter's
   * element count from counts_dev[i] when it starts (and the host twin
   * from there too when given one), while `counts` holds the largest
   * counts it may find there (the launch's shape and checks use those).
   * Graph mode sets it for run-time parameters kept in device memory
   * (docs/format.md, "params"), so that a new count is a word written
   * before the next launch instead of a node update. Launchers without
   * the flag are never given one (launch only). */
  const uint64_t *counts_dev;
} DrKLaunch;

/* DrKernelDef.flags */
#define DR_KFLAG_BLAS 1u          /* launch needs l->blas (cuBLAS); host does not */
#define DR_KFLAG_STAMPS 2u        /* launch honours l->stamp */
#define DR_KFLAG_GUARD 4u         /* launch honours l->guard and l->guard_runs */
#define DR_KFLAG_DEVICE_COUNTS 8u /* launch and host honour l->counts_dev */

typedef struct {
  const char *name;
  const char *summary;
  const DrKParam *params;
  int n_params;
  int grid_over;  /* parameter whose value (scalar) or element count
                     (pointer) sets the default grid; -1: one block */
  unsigned block; /* default threads per block */
  /* Enqueue on l->stream. Returns a cudaError_t as int (0 = success). */
  int (*launch)(const DrKLaunch *l);
  /* Run the reference twin synchronously. Returns 0, or -1 with a message
   * in `err` (at most 256 bytes) when the arguments are unusable. */
  int (*host)(const DrKLaunch *l, char *err);
  /* Constraints between argument counts and scalar values. Returns 0, or
   * -1 with a message in `err` (DR_KERR_SIZE bytes) naming the parameters.
   * NULL: no constraint beyond the declarations. */
  int (*check)(const uint64_t *counts, const DrKValue *args, char *err);
  unsigned flags; /* DR_KFLAG_*; 0 for a program's own kernels */
  /* Device scratch the launch needs in l->scratch (0: none). The backend
   * allocates it once per node, outside the timed region; a node never runs
   * concurrently with itself, so the scratch needs no further care. */
  uint64_t scratch_bytes;
} DrKernelDef;

#ifdef __cplusplus
}
#endif

#endif
