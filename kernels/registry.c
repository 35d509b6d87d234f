/* registry.c: the table of built-in kernels: for each, its parameter
 * declarations (which drive hazard inference exactly as a user kernel's
 * `params:` do), its default launch shape, its argument check, and its two
 * entry points, and the shape rules its check enforces, in words. Also
 * lookup, the default launch shape and the `--kernels` listing. It is not the kernels themselves: those are
 * the .cu files (CUDA), gemm.c (cuBLAS) and host.c (reference twins). */
#include <stdlib.h>
#include <string.h>

#include "kernels/impl.h"

#define PTR(n, t, acc, d) \
  { n, DR_ELEM_##t, 1, DR_ACCESS_##acc, 0, 0.0, d }
#define SCALAR(n, t, d) \
  { n, DR_ELEM_##t, 0, DR_ACCESS_READ, 0, 0.0, d }
#define OPTIONAL(n, t, def, d) \
  { n, DR_ELEM_##t, 0, DR_ACCESS_READ, 1, def, d }

static const DrKParam p_binary_f32[] = {
    PTR("a", F32, READ, "first operand"),
    PTR("b", F32, READ, "second operand, same length as a"),
    PTR("y", F32, WRITE, "result, same length as a"),
};
static const DrKParam p_binary_bf16[] = {
    PTR("a", BF16, READ, "first operand"),
    PTR("b", BF16, READ, "second operand, same length as a"),
    PTR("y", BF16, WRITE, "result, same length as a"),
};
static const DrKParam p_binary_f16[] = {
    PTR("a", F16, READ, "first operand"),
    PTR("b", F16, READ, "second operand, same length as a"),
    PTR("y", F16, WRITE, "result, same length as a"),
};
static const DrKParam p_axpy_f32[] = {
    SCALAR("alpha", F32, "multiplier of x"),
    PTR("x", F32, READ, "input"),
    PTR("y", F32, READ_WRITE, "accumulator, same length as x"),
};
static const DrKParam p_checksum_u8[] = {
    PTR("x", U8, READ, "bytes to hash"),
    PTR("y", I64, WRITE, "one element: the checksum"),
};
static const DrKParam p_fill_f32[] = {
    PTR("y", F32, WRITE, "output"),
    SCALAR("value", F32, "value stored in every element"),
};
static const DrKParam p_unary_f32[] = {
    PTR("x", F32, READ, "input"),
    PTR("y", F32, WRITE, "output, same length as x"),
};
static const DrKParam p_gemm_f32[] = {
    PTR("a", F32, READ, "m x k, row-major"),
    PTR("b", F32, READ, "k x n, row-major"),
    PTR("c", F32, READ_WRITE, "m x n, row-major; read only when beta != 0"),
    SCALAR("m", I64, "rows of a and c"),
    SCALAR("n", I64, "columns of b and c"),
    SCALAR("k", I64, "columns of a, rows of b"),
    OPTIONAL("alpha", F32, 1.0, "multiplier of a*b"),
    OPTIONAL("beta", F32, 0.0, "multiplier of c's old value"),
};
static const DrKParam p_gemm_bf16[] = {
    PTR("a", BF16, READ, "m x k, row-major"),
    PTR("b", BF16, READ, "k x n, row-major"),
    PTR("c", BF16, READ_WRITE, "m x n, row-major; read only when beta != 0"),
    SCALAR("m", I64, "rows of a and c"),
    SCALAR("n", I64, "columns of b and c"),
    SCALAR("k", I64, "columns of a, rows of b"),
    OPTIONAL("alpha", F32, 1.0, "multiplier of a*b"),
    OPTIONAL("beta", F32, 0.0, "multiplier of c's old value"),
};
static const DrKParam p_iota_f32[] = {
    PTR("y", F32, WRITE, "output"),
    OPTIONAL("start", F32, 0.0, "value of y[0]"),
    OPTIONAL("step", F32, 1.0, "difference between neighbours"),
};
static const DrKParam p_layernorm_rows_f32[] = {
    PTR("x", F32, READ, "rows x cols, row-major"),
    PTR("gamma", F32, READ, "cols scales"),
    PTR("beta", F32, READ, "cols shifts"),
    PTR("y", F32, WRITE, "same shape as x"),
    SCALAR("cols", I64, "row length"),
    OPTIONAL("eps", F32, 1e-5, "added to the variance"),
};
static const DrKParam p_reduce_sum_f32[] = {
    PTR("x", F32, READ, "values to add"),
    PTR("y", F32, WRITE, "one element: the sum"),
};
static const DrKParam p_reduce_sum_f64[] = {
    PTR("x", F64, READ, "values to add"),
    PTR("y", F64, WRITE, "one element: the sum"),
};
static const DrKParam p_scale_f32[] = {
    PTR("x", F32, READ, "input"),
    SCALAR("alpha", F32, "multiplier"),
    PTR("y", F32, WRITE, "output, same length as x"),
};
static const DrKParam p_scale_bf16[] = {
    PTR("x", BF16, READ, "input"),
    SCALAR("alpha", F32, "multiplier (product rounded to bf16)"),
    PTR("y", BF16, WRITE, "output, same length as x"),
};
static const DrKParam p_scale_f16[] = {
    PTR("x", F16, READ, "input"),
    SCALAR("alpha", F32, "multiplier (product rounded to f16)"),
    PTR("y", F16, WRITE, "output, same length as x"),
};
static const DrKParam p_softmax_rows_f32[] = {
    PTR("x", F32, READ, "rows x cols, row-major"),
    PTR("y", F32, WRITE, "same shape as x"),
    SCALAR("cols", I64, "row length"),
};
static const DrKParam p_set_while_gt_f32[] = {
    PTR("x", F32, READ, "element 0 is compared"),
    SCALAR("tol", F32, "the threshold"),
    PTR("cond", I32, WRITE, "a condition: element 0 becomes 1 when x[0] > tol, else 0"),
};
static const DrKParam p_spin[] = {
    SCALAR("ns", I64, "nanoseconds to busy-wait (at most 60 s)"),
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Shape rules, as `dagrun --kernels` and docs/format.md state them: what
 * the kernel's check (checks.c) refuses, one rule per "; ". */
#define R_SAME_XY "y has the length of x"
#define R_SAME_ABY "b and y have the length of a"
#define R_ONE_Y "y has exactly 1 element"
#define R_ROWS "cols >= 1; the length of x is a multiple of cols; y has the length of x"
#define R_GEMM "1 <= m, n, k <= 2147483647; a has m*k elements, b k*n, c m*n"

/* X(name, summary, params, grid_over, block, check, flags, scratch, rules):
 * every built-in kernel, sorted by name (tests check it). Every built-in
 * but the cuBLAS ones stamps its own end (DR_KFLAG_STAMPS:
 * drk::stamp_block_end closes each kernel, kernels/launch.cuh). Those
 * with DR_KFLAG_GUARD do nothing when their guard word is 0 (drk::Guard,
 * kernels/launch.cuh): all but the cuBLAS ones and checksum_u8, whose
 * launcher zeroes y with a memset that no guard can stop. The element-wise
 * ones (one grid-stride body, elementwise.cu) can read their counts from
 * device memory (DR_KFLAG_DEVICE_COUNTS): output element i depends on
 * element i alone, so a launch shaped for more elements gives the same
 * bits. rules is NULL
 * when the parameter declarations say everything. */
#define BUILTIN_LIST(X)                                                                                      \
  X(add_bf16, "y = a + b (bf16, computed in f32)", p_binary_bf16, 0, 256, dr__kcheck_binary,                 \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_ABY)                                                  \
  X(add_f16, "y = a + b (f16, computed in f32)", p_binary_f16, 0, 256, dr__kcheck_binary,                    \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_ABY)                                                  \
  X(add_f32, "y = a + b", p_binary_f32, 0, 256, dr__kcheck_binary, DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS,  \
    0, R_SAME_ABY)                                                                                           \
  X(axpy_f32, "y = alpha*x + y (one fused multiply-add)", p_axpy_f32, 1, 256, dr__kcheck_axpy,               \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                                   \
  X(checksum_u8, "y[0] = order-free 64-bit hash of the bytes of x (exact on any launch shape)",              \
    p_checksum_u8, 0, 256, dr__kcheck_reduce, 0, 0, R_ONE_Y)                                                 \
  X(fill_f32, "y = value", p_fill_f32, 0, 256, NULL, DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, NULL)       \
  X(gelu_f32, "y = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) (tanh approximation)", p_unary_f32, 0, 256,   \
    dr__kcheck_unary, DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                 \
  X(gemm_bf16, "c = alpha*a*b + beta*c, row-major bf16, f32 accumulation (cuBLAS)", p_gemm_bf16, -1, 1,      \
    dr__kcheck_gemm, DR_KFLAG_BLAS, 0, R_GEMM)                                                               \
  X(gemm_f32, "c = alpha*a*b + beta*c, row-major f32, no TF32 (cuBLAS)", p_gemm_f32, -1, 1, dr__kcheck_gemm, \
    DR_KFLAG_BLAS, 0, R_GEMM)                                                                                \
  X(iota_f32, "y[i] = start + step*i", p_iota_f32, 0, 256, NULL, DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, \
    NULL)                                                                                                    \
  X(layernorm_rows_f32, "y = (x - mean)/sqrt(var + eps)*gamma + beta over each row of cols",                 \
    p_layernorm_rows_f32, 0, 256, dr__kcheck_layernorm, DR_KFLAG_GUARD, 0,                                   \
    R_ROWS "; gamma and beta have cols elements; eps >= 0")                                                  \
  X(mul_f32, "y = a * b", p_binary_f32, 0, 256, dr__kcheck_binary, DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS,  \
    0, R_SAME_ABY)                                                                                           \
  X(reduce_sum_f32, "y[0] = sum of x, in double, fixed tree order (deterministic)", p_reduce_sum_f32, 0,     \
    256, dr__kcheck_reduce, DR_KFLAG_GUARD, DR_REDUCE_SCRATCH_BYTES, R_ONE_Y)                                \
  X(reduce_sum_f64, "y[0] = sum of x, fixed tree order (deterministic)", p_reduce_sum_f64, 0, 256,           \
    dr__kcheck_reduce, DR_KFLAG_GUARD, DR_REDUCE_SCRATCH_BYTES, R_ONE_Y)                                     \
  X(relu_f32, "y = max(x, 0) (NaN gives 0)", p_unary_f32, 0, 256, dr__kcheck_unary,                          \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                                   \
  X(scale_bf16, "y = alpha * x (bf16, computed in f32)", p_scale_bf16, 0, 256, dr__kcheck_scale,             \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                                   \
  X(scale_f16, "y = alpha * x (f16, computed in f32)", p_scale_f16, 0, 256, dr__kcheck_scale,                \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                                   \
  X(scale_f32, "y = alpha * x", p_scale_f32, 0, 256, dr__kcheck_scale,                                       \
    DR_KFLAG_GUARD | DR_KFLAG_DEVICE_COUNTS, 0, R_SAME_XY)                                                   \
  X(set_while_gt_f32, "cond[0] = x[0] > tol (1 or 0): sets a loop's or conditional's condition",             \
    p_set_while_gt_f32, -1, 1, dr__kcheck_cond, DR_KFLAG_GUARD, 0, "x and cond have at least 1 element")     \
  X(softmax_rows_f32, "y = exp(x - max)/sum(exp(x - max)) over each row of cols", p_softmax_rows_f32, 0,     \
    256, dr__kcheck_softmax, DR_KFLAG_GUARD, 0, R_ROWS)                                                      \
  X(spin, "busy-waits ns nanoseconds on %globaltimer (1 thread)", p_spin, -1, 1, dr__kcheck_spin,            \
    DR_KFLAG_GUARD, 0, "0 <= ns <= 60000000000 (60 s)")

#define ENTRY(nm, summary, params, over, block, check, flags, scratch, rules) \
  {#nm,                                                                       \
   summary,                                                                   \
   params,                                                                    \
   N(params),                                                                 \
   over,                                                                      \
   block,                                                                     \
   dr__k_##nm##_launch,                                                       \
   dr__k_##nm##_host,                                                         \
   check,                                                                     \
   (flags) | (((flags)&DR_KFLAG_BLAS) ? 0u : DR_KFLAG_STAMPS),                \
   scratch},
#define RULES(nm, summary, params, over, block, check, flags, scratch, rules) rules,

const DrKernelDef dr_kernel_registry[] = {BUILTIN_LIST(ENTRY)};
static const char *const registry_rules[] = {BUILTIN_LIST(RULES)};

const int dr_kernel_registry_len = N(dr_kernel_registry);

static int compare_name(const void *key, const void *elem) {
  return strcmp((const char *)key, ((const DrKernelDef *)elem)->name);
}

/* Binary search: the table is sorted by name (tests check it). */
const DrKernelDef *dr_kernel_find(const char *name) {
  if (name == NULL) return NULL;
  return bsearch(name, dr_kernel_registry, (size_t)dr_kernel_registry_len, sizeof(DrKernelDef), compare_name);
}

const char *dr_kernel_rules(const DrKernelDef *def) {
  for (int i = 0; i < dr_kernel_registry_len; i++)
    if (def == &dr_kernel_registry[i]) return registry_rules[i];
  return NULL;
}

int dr_kernel_param_index(const DrKernelDef *def, const char *name) {
  if (def == NULL || name == NULL) return -1;
  for (int i = 0; i < def->n_params; i++)
    if (strcmp(def->params[i].name, name) == 0) return i;
  return -1;
}

void dr_kernel_default_shape(const DrKernelDef *def, const uint64_t *counts, const DrKValue *args,
                             unsigned grid[3], unsigned block[3]) {
  uint64_t over = 0;
  uint64_t blocks = 1;
  unsigned b = def->block > 0 ? def->block : 1;

  if (def->grid_over >= 0) {
    const DrKParam *p = &def->params[def->grid_over];
    if (p->is_pointer)
      over = counts[def->grid_over];
    else
      over = args[def->grid_over].i > 0 ? (uint64_t)args[def->grid_over].i : 0;
    blocks = (over + b - 1) / b;
  }
  if (blocks < 1) blocks = 1;
  if (blocks > 0x7fffffffu) blocks = 0x7fffffffu;
  grid[0] = (unsigned)blocks;
  grid[1] = grid[2] = 1;
  block[0] = b;
  block[1] = block[2] = 1;
}

static const char *elem_name(DrElemType t) {
  switch (t) {
#define DR_X(e, s, n) \
  case DR_ELEM_##e:   \
    return s;
    DR_ELEM_TYPE_LIST(DR_X)
#undef DR_X
    default:
      return "?";
  }
}

static const char *access_name(DrAccessMode m) {
  switch (m) {
#define DR_X(e, s, r, w) \
  case DR_ACCESS_##e:    \
    return s;
    DR_ACCESS_MODE_LIST(DR_X)
#undef DR_X
    default:
      return "?";
  }
}

void dr_kernels_list(FILE *out) {
  for (int i = 0; i < dr_kernel_registry_len; i++) {
    const DrKernelDef *k = &dr_kernel_registry[i];
    fprintf(out, "%s\n  %s\n", k->name, k->summary);
    if (k->flags & DR_KFLAG_BLAS)
      fprintf(out, "  launch: cuBLAS call on the node's stream\n");
    else if (k->grid_over < 0)
      fprintf(out, "  launch: 1 block of %u\n", k->block);
    else
      fprintf(out, "  launch: blocks of %u over %s\n", k->block, k->params[k->grid_over].name);
    for (int j = 0; j < k->n_params; j++) {
      const DrKParam *p = &k->params[j];
      if (p->is_pointer)
        fprintf(out, "    %s: %s* %s", p->name, elem_name(p->type), access_name(p->access));
      else if (p->optional)
        fprintf(out, "    %s: %s = %g", p->name, elem_name(p->type), p->def);
      else
        fprintf(out, "    %s: %s", p->name, elem_name(p->type));
      fprintf(out, "  # %s\n", p->doc);
    }
    if (registry_rules[i] != NULL) fprintf(out, "  rules: %s\n", registry_rules[i]);
  }
}
