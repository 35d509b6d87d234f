// port_reduce.cu: kernels written as a CUDA sample would be (#20): a
// cooperative-groups grid-stride loop, a CUB block reduction instantiated
// for two types through name expressions, libcu++ (cuda/std) type traits,
// a header from the kernel's include_dirs and a macro from its defines.
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cuda/std/type_traits>

#include "port_common.h"

namespace cg = cooperative_groups;

// y[i] = PORT_SCALE * x[i], over a grid of any size.
extern "C" __global__ void scale_cg(const float *x, float *y, long long n) {
  cg::grid_group grid = cg::this_grid();
  for (long long i = grid.thread_rank(); i < n; i += grid.size()) y[i] = port_scaled(x[i]);
}

// partial[b] = the sum of block b's BLOCK elements of x (0 past n).
template <typename T, int BLOCK>
__global__ void block_sum(const T *x, T *partial, long long n) {
  static_assert(cuda::std::is_arithmetic<T>::value, "block_sum sums numbers");
  typedef cub::BlockReduce<T, BLOCK> Reduce;
  __shared__ typename Reduce::TempStorage tmp;
  cg::thread_block block = cg::this_thread_block();
  long long i = (long long)blockIdx.x * BLOCK + block.thread_rank();
  T v = i < n ? x[i] : T(0);
  T s = Reduce(tmp).Sum(v);
  if (block.thread_rank() == 0) partial[blockIdx.x] = s;
}
