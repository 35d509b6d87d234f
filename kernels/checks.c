/* checks.c: the argument constraints of the built-in kernels that the
 * parameter declarations alone cannot say: equal lengths, row shapes,
 * matrix sizes, one-element results. Validation calls them through
 * DrKernelDef.check before anything runs; the launchers and host twins call
 * them again so that a bad call never touches memory. Positions follow the
 * parameter arrays of registry.c. */
#include <inttypes.h>
#include <stdio.h>

#include "kernels/impl.h"

static int fail_len(char *err, const char *a, uint64_t na, const char *b, uint64_t nb) {
  snprintf(err, DR_KERR_SIZE, "%s and %s must have the same length (%" PRIu64 " and %" PRIu64 " elements)", a,
           b, na, nb);
  return -1;
}

static int same_len(const uint64_t *c, int i, const char *a, int j, const char *b, char *err) {
  return c[i] == c[j] ? 0 : fail_len(err, a, c[i], b, c[j]);
}

int dr__kcheck_unary(const uint64_t *c, const DrKValue *a, char *err) {
  return same_len(c, 0, "x", 1, "y", err);
}

int dr__kcheck_scale(const uint64_t *c, const DrKValue *a, char *err) {
  return same_len(c, 0, "x", 2, "y", err);
}

int dr__kcheck_axpy(const uint64_t *c, const DrKValue *a, char *err) {
  return same_len(c, 1, "x", 2, "y", err);
}

int dr__kcheck_binary(const uint64_t *c, const DrKValue *a, char *err) {
  if (same_len(c, 0, "a", 1, "b", err) != 0) return -1;
  return same_len(c, 0, "a", 2, "y", err);
}

int dr__kcheck_reduce(const uint64_t *c, const DrKValue *a, char *err) {
  if (c[1] != 1) {
    snprintf(err, DR_KERR_SIZE, "y must have exactly 1 element (it has %" PRIu64 ")", c[1]);
    return -1;
  }
  return 0;
}

/* Shared by softmax (cols at 2) and layernorm (cols at 4): x (at 0) must be
 * whole rows of cols and y (at y_at) the same length as x. */
static int check_rows(const uint64_t *c, const DrKValue *a, int cols_at, int y_at, char *err) {
  int64_t cols = a[cols_at].i;
  if (cols <= 0) {
    snprintf(err, DR_KERR_SIZE, "cols must be positive (it is %" PRId64 ")", cols);
    return -1;
  }
  if (c[0] % (uint64_t)cols != 0) {
    snprintf(err, DR_KERR_SIZE, "x's length (%" PRIu64 ") must be a multiple of cols (%" PRId64 ")", c[0],
             cols);
    return -1;
  }
  return same_len(c, 0, "x", y_at, "y", err);
}

int dr__kcheck_softmax(const uint64_t *c, const DrKValue *a, char *err) {
  return check_rows(c, a, 2, 1, err);
}

int dr__kcheck_layernorm(const uint64_t *c, const DrKValue *a, char *err) {
  if (check_rows(c, a, 4, 3, err) != 0) return -1;
  for (int i = 1; i <= 2; i++) {
    if (c[i] != (uint64_t)a[4].i) {
      snprintf(err, DR_KERR_SIZE, "%s must have cols (%" PRId64 ") elements (it has %" PRIu64 ")",
               i == 1 ? "gamma" : "beta", a[4].i, c[i]);
      return -1;
    }
  }
  if (!(a[5].f >= 0.0)) {
    snprintf(err, DR_KERR_SIZE, "eps must not be negative (it is %g)", a[5].f);
    return -1;
  }
  return 0;
}

/* a m*k, b k*n, c m*n; cuBLAS takes int dimensions. */
int dr__kcheck_gemm(const uint64_t *c, const DrKValue *a, char *err) {
  static const char *const dim[3] = {"m", "n", "k"};
  for (int i = 0; i < 3; i++) {
    int64_t v = a[3 + i].i;
    if (v <= 0 || v > INT32_MAX) {
      snprintf(err, DR_KERR_SIZE, "%s must be in 1..2147483647 (it is %" PRId64 ")", dim[i], v);
      return -1;
    }
  }
  uint64_t m = (uint64_t)a[3].i, n = (uint64_t)a[4].i, k = (uint64_t)a[5].i;
  const struct {
    const char *name, *shape;
    uint64_t want;
  } need[3] = {{"a", "m*k", m * k}, {"b", "k*n", k * n}, {"c", "m*n", m * n}};
  for (int i = 0; i < 3; i++) {
    if (c[i] != need[i].want) {
      snprintf(err, DR_KERR_SIZE, "%s must have %s = %" PRIu64 " elements (it has %" PRIu64 ")", need[i].name,
               need[i].shape, need[i].want, c[i]);
      return -1;
    }
  }
  return 0;
}

int dr__kcheck_spin(const uint64_t *c, const DrKValue *a, char *err) {
  if (a[0].i < 0 || a[0].i > DR_SPIN_MAX_NS) {
    snprintf(err, DR_KERR_SIZE, "ns must be in 0..%" PRId64 " (it is %" PRId64 ")", DR_SPIN_MAX_NS, a[0].i);
    return -1;
  }
  return 0;
}

int dr__kcheck_cond(const uint64_t *c, const DrKValue *a, char *err) {
  if (c[0] < 1 || c[2] < 1) {
    snprintf(err, DR_KERR_SIZE, "x and cond need at least one element (element 0 is read and written)");
    return -1;
  }
  return 0;
}
