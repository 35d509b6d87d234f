/* registry.h: the built-in kernel library: the table of DrKernelDef
 * (the ABI is include/dagrun/kernel.h, the same one a program's own
 * kernels use) and the helpers over it. No GLib, no CUDA types.
 */
#ifndef DAGRUN_KERNELS_REGISTRY_H
#define DAGRUN_KERNELS_REGISTRY_H

#include <stdint.h>
#include <stdio.h>

#include "include/dagrun/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The built-in kernels, sorted by name. */
extern const DrKernelDef dr_kernel_registry[];
extern const int dr_kernel_registry_len;

/* Returns the definition named `name`, or NULL. */
const DrKernelDef *dr_kernel_find(const char *name);

/* Returns the shape rules of built-in `def` in words ("y has the length of
 * x; ..."), what its check refuses beyond the parameter declarations, or
 * NULL when it has none or `def` is not in the registry. Static storage. */
const char *dr_kernel_rules(const DrKernelDef *def);

/* Returns the index of the parameter `name` of `def`, or -1. */
int dr_kernel_param_index(const DrKernelDef *def, const char *name);

/* Fills grid and block with the default launch shape of `def` for these
 * arguments: `block` threads, and enough blocks to cover the grid_over
 * parameter's count or value (at least 1, at most 2^31-1); one block when
 * grid_over is -1. The launchers accept any shape (grid-stride loops) and
 * trim a grid larger than useful. */
void dr_kernel_default_shape(const DrKernelDef *def, const uint64_t *counts, const DrKValue *args,
                             unsigned grid[3], unsigned block[3]);

/* A built-in's launch described instead of made (dr__k_describe): the
 * kernel's function (its host stub, as cudaLaunchKernel takes it), the
 * launch shape, and its arguments, each at params[i] inside `store`. */
typedef struct {
  void *func;
  unsigned grid[3], block[3];
  unsigned shared;
  unsigned n_params;
  void *params[32];
#ifdef __cplusplus
  alignas(16) unsigned char store[512];
#else
  _Alignas(16) unsigned char store[512];
#endif
} DrKDescribed;

/* Describes into *out the one kernel launch that built-in `def`'s
 * launcher would make for `l`, making no CUDA call, so that a graph's
 * kernel node can be set to it (cudaGraphExecKernelNodeSetParams)
 * without a capture. Only launchers that make exactly one launch and
 * nothing else are described (the elementwise, row, condition and spin
 * kernels; not the reductions, the checksum or cuBLAS's gemm). Returns
 * 0, or -1: this launcher cannot be described (or refused `l`). */
int dr__k_describe(const DrKernelDef *def, const DrKLaunch *l, DrKDescribed *out);

/* Writes the registry to `out` for `dagrun --kernels`: each kernel's name,
 * summary, launch shape and parameters (`x: f32* read`, `alpha: f32`,
 * `eps: f32 = 1e-05`), one per line. */
void dr_kernels_list(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
