/* registry.h: the built-in kernel library's plain C ABI. No GLib, no CUDA
 * types: the backends include this and pass opaque stream and library
 * handles through.
 *
 * Each DrKernelDef declares its parameters exactly as a user kernel's
 * `params:` would (type, pointer or scalar, access), which is what drives
 * hazard inference, and carries two entry points: `launch` enqueues the CUDA
 * implementation on a stream, `host` runs the reference twin on the CPU
 * (used by the host backend and to check the CUDA version). */
#ifndef DAGRUN_KERNELS_REGISTRY_H
#define DAGRUN_KERNELS_REGISTRY_H

#include <stdint.h>

#include "include/dagrun/elem_types.h"

#ifdef __cplusplus
extern "C" {
#endif

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
  const uint64_t *counts; /* element count of each pointer argument's slice */
  unsigned grid[3];       /* resolved launch shape (launch only) */
  unsigned block[3];
  unsigned shared;
  void *stream;   /* cudaStream_t (launch only) */
  void *blas;     /* DrKBlas* for kernels that need cuBLAS, else NULL */
} DrKLaunch;

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
} DrKernelDef;

/* The built-in kernels, sorted by name. */
extern const DrKernelDef dr_kernel_registry[];
extern const int dr_kernel_registry_len;

/* Returns the definition named `name`, or NULL. */
const DrKernelDef *dr_kernel_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
