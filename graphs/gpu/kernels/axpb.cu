// axpb.cu: a user kernel for graphs/gpu/user_kernel.yaml, compiled at load
// time by NVRTC (no includes: NVRTC builds it on its own). y = a * x + b
// over n elements, grid-stride so any launch shape covers n.
extern "C" __global__ void axpb_f32(const float *x, float *y, long long n, float a, float b) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + b;
}
