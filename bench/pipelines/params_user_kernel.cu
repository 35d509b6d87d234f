// params_user_kernel.cu: one user kernel two ways for bench/params_words_ab.sh:
// masked_scale_dev reads seq from a parameter buffer (device memory: a new
// seq is one store, no node update), masked_scale_arg takes the live
// length as a scalar argument (a new seq sets the node: a one-node capture
// of its launch and the driver's copy). Both: y[i] = 0.5 * x[i] for i below
// the live length, 0 past it, launched for the whole buffer.
extern "C" __global__ void masked_scale_dev(const float *x, float *y, const long long *seq, long long n) {
  long long live = *seq * 256;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = i < live ? 0.5f * x[i] : 0.0f;
}

extern "C" __global__ void masked_scale_arg(const float *x, float *y, long long live, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = i < live ? 0.5f * x[i] : 0.0f;
}
