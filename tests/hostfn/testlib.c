/* testlib.c: the shared library //tests/hostfn loads
 * (libdr_test_hostfn.so): host functions (include/dagrun/hostfn.h) and a
 * user kernel's host twin (kernel.h's host ABI). Plain C, no GLib, no
 * CUDA. */
#include <dagrun/hostfn.h>
#include <dagrun/kernel.h>
#include <stdio.h>
#include <string.h>

/* dst = alpha * src: (src: f32* read, dst: f32* write, alpha: f32). */
int dr_test_scale_into(const DrHostFnArgs *a) {
  if (a->abi_version != DR_HOST_FN_ABI_VERSION || a->n_args != 3 || strcmp(a->args[0].name, "src") != 0 ||
      !a->args[0].is_pointer || a->args[0].access != DR_ACCESS_READ || !a->args[1].is_pointer ||
      a->args[2].is_pointer || a->args[0].bytes != a->args[0].count * 4) {
    snprintf(a->err, DR_HOST_FN_ERR_SIZE, "unexpected arguments");
    return 1;
  }
  const float *src = a->args[0].ptr;
  float *dst = a->args[1].ptr;
  uint64_t n = a->args[0].count < a->args[1].count ? a->args[0].count : a->args[1].count;
  for (uint64_t i = 0; i < n; i++) dst[i] = (float)a->args[2].f * src[i];
  return 0;
}

/* Fails on its second call: "node N refused in iteration 1". */
int dr_test_fail_second(const DrHostFnArgs *a) {
  if (a->iteration == 0) return 0;
  snprintf(a->err, DR_HOST_FN_ERR_SIZE, "node %s refused in iteration %llu", a->node,
           (unsigned long long)a->iteration);
  return 3;
}

/* out[0] = iteration, out[1] = the i64 scalar k: (out: i64* write, k: i64). */
int dr_test_note(const DrHostFnArgs *a) {
  int64_t *out = a->args[0].ptr;
  out[0] = (int64_t)a->iteration;
  if (a->args[0].count > 1) out[1] = a->args[1].i;
  return 0;
}

/* The host twin of fill_twin(y: f32* write, v: f32): y = v. */
int dr_test_twin_fill(const DrKLaunch *l, char *err) {
  if (l->counts[0] == 0) {
    snprintf(err, DR_KERR_SIZE, "y is empty");
    return -1;
  }
  float *y = l->args[0].ptr;
  for (uint64_t i = 0; i < l->counts[0]; i++) y[i] = (float)l->args[1].f;
  return 0;
}
