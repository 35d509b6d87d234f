/* hostfns.c: a shared library of host code for dagrun pipelines, built by
 * Bazel as //examples:libdagrun_example_hostfns.so (cc_binary, linkshared)
 * and named by graphs/host_callbacks.yaml and graphs/gpu/user_kernel_twin.yaml:
 *
 *  - dr_example_scale_into, a host function (include/dagrun/hostfn.h):
 *    dst = alpha * src over host buffers, called by an `op: host` node with
 *    `fn: {lib, symbol, params}`; its declared accesses (src read, dst
 *    write) are what order it after the copy that fills src and before the
 *    copy that reads dst.
 *  - dr_example_axpb_twin, the host twin of graphs/gpu/kernels/axpb.cu's
 *    axpb_f32 (kernel.h's DrKernelDef.host ABI): y = a*x + b, so that
 *    pipeline runs and verifies on the host backend without a GPU.
 *  - dr_example_jacobi_twin, the host twin of
 *    graphs/gpu/kernels/jacobi_sweep.cu's jacobi_sweep_f32 (one Jacobi
 *    sweep, tests/gpu/loops/jacobi_user.yaml: a user kernel in a loop
 *    body), the same float arithmetic in the same order.
 *
 * None calls CUDA (a host function runs on CUDA's callback thread on
 * the CUDA backend, where that is forbidden), nor GLib: plain C. */
#include <dagrun/hostfn.h>
#include <dagrun/kernel.h>
#include <stdio.h>

/* host function: params src (f32*, read), dst (f32*, write), alpha (f32). */
int dr_example_scale_into(const DrHostFnArgs *a) {
  if (a->abi_version < 1 || a->n_args != 3 || a->args[0].type != DR_ELEM_F32 ||
      a->args[1].type != DR_ELEM_F32) {
    snprintf(a->err, DR_HOST_FN_ERR_SIZE, "expected (src: f32*, dst: f32*, alpha: f32)");
    return 1;
  }
  const float *src = a->args[0].ptr;
  float *dst = a->args[1].ptr;
  float alpha = (float)a->args[2].f;
  uint64_t n = a->args[0].count < a->args[1].count ? a->args[0].count : a->args[1].count;
  for (uint64_t i = 0; i < n; i++) dst[i] = alpha * src[i];
  return 0;
}

/* host twin of axpb_f32(x: f32* read, y: f32* write, n: i64, a: f32, b: f32). */
int dr_example_axpb_twin(const DrKLaunch *l, char *err) {
  int64_t n = l->args[2].i;
  if (n < 0 || (uint64_t)n > l->counts[0] || (uint64_t)n > l->counts[1]) {
    snprintf(err, DR_KERR_SIZE, "n is %lld, more than x's or y's elements", (long long)n);
    return -1;
  }
  const float *x = l->args[0].ptr;
  float *y = l->args[1].ptr;
  float a = (float)l->args[3].f, b = (float)l->args[4].f;
  for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + b;
  return 0;
}

/* host twin of jacobi_sweep_f32(u: f32* read, f: f32* read, un: f32* write,
 * dd: f32* write, n: i64). */
int dr_example_jacobi_twin(const DrKLaunch *l, char *err) {
  int64_t n = l->args[4].i;
  for (int k = 0; k < 4; k++)
    if (n < 0 || (uint64_t)n > l->counts[k]) {
      snprintf(err, DR_KERR_SIZE, "n is %lld, more than a buffer's elements", (long long)n);
      return -1;
    }
  const float *u = l->args[0].ptr, *f = l->args[1].ptr;
  float *un = l->args[2].ptr, *dd = l->args[3].ptr;
  for (int64_t i = 0; i < n; i++) {
    float v = i == 0 || i == n - 1 ? 0.0f : 0.5f * ((u[i - 1] + u[i + 1]) + f[i]);
    un[i] = v;
    dd[i] = v - u[i];
  }
  return 0;
}
