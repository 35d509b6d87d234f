// oob.cu: a kernel that writes far outside its buffer on purpose (1 TiB
// past its start), so the device raises an illegal-address fault. Used by
// tests/gpu/run.sh to check that a real fault gives a clean error.
extern "C" __global__ void oob(float *y) { y[(1LL << 38) + threadIdx.x] = 1.0f; }
