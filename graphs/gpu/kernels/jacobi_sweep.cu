// jacobi_sweep.cu: a user kernel for tests/gpu/loops/jacobi_user.yaml,
// compiled at load time by NVRTC. One Jacobi sweep of the 1-D Poisson
// problem 2u[i] - u[i-1] - u[i+1] = f[i] with u[0] = u[n-1] = 0: un[i] =
// (u[i-1] + u[i+1] + f[i]) / 2 inside, 0 at the ends, and dd = un - u (the
// change, which the pipeline's built-ins turn into the stop condition).
// Grid-stride, so any launch shape covers n. Its host twin is
// dr_example_jacobi_twin (examples/hostfns.c), the same arithmetic in the
// same order.
extern "C" __global__ void jacobi_sweep_f32(const float *u, const float *f, float *un, float *dd,
                                            long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float v = i == 0 || i == n - 1 ? 0.0f : 0.5f * ((u[i - 1] + u[i + 1]) + f[i]);
    un[i] = v;
    dd[i] = v - u[i];
  }
}
