/* impl.h: internal declarations shared by the kernel library's files: the
 * list of built-in kernels (one X-macro, so the registry, the launchers and
 * the host twins cannot drift apart), the argument checks, and small helpers
 * the C twins and the CUDA launchers both use. Not installed; the rest of
 * dagrun sees only registry.h and blas.h. */
#ifndef DAGRUN_KERNELS_IMPL_H
#define DAGRUN_KERNELS_IMPL_H

#include <stdint.h>

#include "kernels/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name): every built-in kernel, sorted by name. Each has a launcher
 * dr__k_NAME_launch (a .cu file, or gemm.c) and a host twin dr__k_NAME_host
 * (host.c). */
#define DR_KERNEL_LIST(X) \
  X(add_bf16)             \
  X(add_f16)              \
  X(add_f32)              \
  X(axpy_f32)             \
  X(checksum_u8)          \
  X(fill_f32)             \
  X(gelu_f32)             \
  X(gemm_bf16)            \
  X(gemm_f32)             \
  X(iota_f32)             \
  X(layernorm_rows_f32)   \
  X(mul_f32)              \
  X(reduce_sum_f32)       \
  X(reduce_sum_f64)       \
  X(relu_f32)             \
  X(scale_bf16)           \
  X(scale_f16)            \
  X(scale_f32)            \
  X(set_while_gt_f32)     \
  X(softmax_rows_f32)     \
  X(spin)

#define DR_X(n)                               \
  int dr__k_##n##_launch(const DrKLaunch *l); \
  int dr__k_##n##_host(const DrKLaunch *l, char *err);
DR_KERNEL_LIST(DR_X)
#undef DR_X

/* Argument checks (checks.c), one per parameter shape; see
 * DrKernelDef.check. The parameter positions are those of registry.c. */
int dr__kcheck_unary(const uint64_t *c, const DrKValue *a, char *err);  /* x0 y1 */
int dr__kcheck_scale(const uint64_t *c, const DrKValue *a, char *err);  /* x0 alpha1 y2 */
int dr__kcheck_axpy(const uint64_t *c, const DrKValue *a, char *err);   /* alpha0 x1 y2 */
int dr__kcheck_binary(const uint64_t *c, const DrKValue *a, char *err); /* a0 b1 y2 */
int dr__kcheck_reduce(const uint64_t *c, const DrKValue *a, char *err); /* x0 y1 */
int dr__kcheck_softmax(const uint64_t *c, const DrKValue *a, char *err);
int dr__kcheck_layernorm(const uint64_t *c, const DrKValue *a, char *err);
int dr__kcheck_gemm(const uint64_t *c, const DrKValue *a, char *err);
int dr__kcheck_spin(const uint64_t *c, const DrKValue *a, char *err);
int dr__kcheck_cond(const uint64_t *c, const DrKValue *a, char *err); /* x0 tol1 cond2 */

/* The count the launch of an element-wise built-in (DR_KFLAG_DEVICE_COUNTS)
 * works on for pointer parameter i: counts_dev[i] when the launch keeps its
 * counts in device memory (its host twin then reads them there too, as the
 * fake runtime's graph replays do), else counts[i]. */
#define DR_K_COUNT(l, i) ((l)->counts_dev != NULL ? (l)->counts_dev[i] : (l)->counts[i])

/* Largest spin the `spin` kernel accepts, in nanoseconds (60 s). */
#define DR_SPIN_MAX_NS INT64_C(60000000000)

/* Blocks of the first pass of the deterministic reductions; their partial
 * sums (double) live in the node's scratch. */
#define DR_REDUCE_MAX_BLOCKS 1024u
#define DR_REDUCE_SCRATCH_BYTES (DR_REDUCE_MAX_BLOCKS * sizeof(double))

/* The 64-bit mixer of checksum_u8 (SplitMix64's finalizer), applied to
 * (byte offset << 8 | byte); the checksum is the wrapping sum of the mixes,
 * so it is independent of summation order and exact on any launch shape. */
#define DR_CHECKSUM_MIX(v, out)                            \
  do {                                                     \
    uint64_t z_ = (v) + UINT64_C(0x9E3779B97F4A7C15);      \
    z_ = (z_ ^ (z_ >> 30)) * UINT64_C(0xBF58476D1CE4E5B9); \
    z_ = (z_ ^ (z_ >> 27)) * UINT64_C(0x94D049BB133111EB); \
    (out) = z_ ^ (z_ >> 31);                               \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
