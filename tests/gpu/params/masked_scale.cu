// masked_scale.cu: a user kernel that reads run-time parameters from
// device memory (parameter buffers, docs/format.md "params"): y[i] =
// temp * x[i] for i < seq * 64, 0 past it, over a launch shaped for the
// whole buffer. Its node's arguments never change, so a new seq or temp
// is one store before the run and no node update (tests/gpu/run.sh,
// gpu/params/buffers).
extern "C" __global__ void masked_scale(const float *x, float *y, const long long *seq, const double *temp,
                                        long long n) {
  long long live = *seq * 64;
  float t = (float)*temp;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = i < live ? t * x[i] : 0.0f;
}
