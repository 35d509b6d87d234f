// port_common.h: shared by kernels/port_reduce.cu (graphs/gpu/port_cg_cub.yaml).
// Editing this header must make dagrun compile the kernels again: the
// NVRTC cache keys on every header the source includes (tests/gpu/run.sh,
// gpu/port20/cache).
#pragma once
#include <cuda/std/type_traits>

#ifndef PORT_SCALE
#error "PORT_SCALE comes from the kernel's defines: in the pipeline"
#endif

template <typename T>
__device__ inline T port_scaled(T v) {
  static_assert(cuda::std::is_floating_point<T>::value, "port_scaled wants a floating-point type");
  return v * static_cast<T>(PORT_SCALE);
}
