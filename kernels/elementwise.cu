/* elementwise.cu: the CUDA launchers of the element-wise built-ins (fill,
 * iota, scale, axpy, add, mul, relu, gelu, and the bf16/f16 variants). One
 * grid-stride body does them all, in one kernel per built-in named after
 * it (dr_scale_f32, ...), with 16-byte loads and stores
 * when every pointer is 16-byte aligned (slices may start anywhere, so this
 * is checked per launch); bf16/f16 are converted to f32,
 * computed, and rounded once to nearest even. The math of each operation
 * is written to match its host twin in host.c operation for operation (the
 * library is compiled with --fmad=false; axpy's fmaf is explicit on both
 * sides). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/launch.cuh"

namespace {

template <class T>
struct Conv;
template <>
struct Conv<float> {
  static __device__ float in(float v) { return v; }
  static __device__ float out(float v) { return v; }
};
template <>
struct Conv<__nv_bfloat16> {
  static __device__ float in(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __nv_bfloat16 out(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Conv<__half> {
  static __device__ float in(__half v) { return __half2float(v); }
  static __device__ __half out(float v) { return __float2half_rn(v); }
};

/* out[i] = op(in0[i], in1[i], i) for i < n (or *n_dev, when given: the
 * launch was shaped for n, the largest it may find there), NIN of the
 * inputs read (the others pass 0). `vec`: all pointers 16-byte aligned;
 * threads then take 16 bytes at a time (4 f32 or 8 bf16/f16) and the tail
 * goes element by element. in1 may alias out (axpy), so nothing is __restrict__. The body
 * of every element-wise kernel (DRK_MAP_KERNEL below gives each built-in
 * its own). */
template <class T, int NIN, class Op>
__device__ __forceinline__ void map_body(const T *in0, const T *in1, T *out, uint64_t n,
                                         const uint64_t *n_dev, bool vec, Op op, unsigned long long *stamp,
                                         drk::Guard guard) {
  /* A count kept in device memory (DrKLaunch.counts_dev), read before the
   * wait for the previous grid: no kernel writes it (a store on the
   * launching stream does, finished before the graph's launch began), so
   * its load latency overlaps the previous kernel's end instead of adding
   * to every launch of a chain (after the wait it cost 0.12 µs a kernel on
   * the H200; moved here, about 0.08 µs is left on the H100, BENCHMARKS.md
   * §18). */
  if (n_dev != nullptr) n = *n_dev;
  drk::wait_prior_grid();
  if (guard.stops()) return;
  uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  uint64_t done = 0;
  if constexpr (sizeof(T) == 4) {
    if (vec) {
      uint64_t n4 = n / 4;
      for (uint64_t v = tid; v < n4; v += stride) {
        float4 a = NIN >= 1 ? ((const float4 *)in0)[v] : float4{0, 0, 0, 0};
        float4 b = NIN >= 2 ? ((const float4 *)in1)[v] : float4{0, 0, 0, 0};
        float4 r;
        r.x = op(a.x, b.x, 4 * v);
        r.y = op(a.y, b.y, 4 * v + 1);
        r.z = op(a.z, b.z, 4 * v + 2);
        r.w = op(a.w, b.w, 4 * v + 3);
        ((float4 *)out)[v] = r;
      }
      done = n4 * 4;
    }
  } else {
    if (vec) { /* 16-bit types: 8 elements per 16-byte access */
      uint64_t n8 = n / 8;
      for (uint64_t v = tid; v < n8; v += stride) {
        alignas(16) T a[8], b[8], r[8];
        if (NIN >= 1) *reinterpret_cast<uint4 *>(a) = ((const uint4 *)in0)[v];
        if (NIN >= 2) *reinterpret_cast<uint4 *>(b) = ((const uint4 *)in1)[v];
#pragma unroll
        for (int j = 0; j < 8; j++)
          r[j] = Conv<T>::out(
              op(NIN >= 1 ? Conv<T>::in(a[j]) : 0.0f, NIN >= 2 ? Conv<T>::in(b[j]) : 0.0f, 8 * v + j));
        ((uint4 *)out)[v] = *reinterpret_cast<const uint4 *>(r);
      }
      done = n8 * 8;
    }
  }
  for (uint64_t i = done + tid; i < n; i += stride) {
    float a = NIN >= 1 ? Conv<T>::in(in0[i]) : 0.0f;
    float b = NIN >= 2 ? Conv<T>::in(in1[i]) : 0.0f;
    out[i] = Conv<T>::out(op(a, b, i));
  }
  drk::stamp_block_end(stamp);
  guard.ran();
}

/* The signature of an element-wise kernel of element type T and op Op. */
template <class T, class Op>
using MapKernel = void (*)(const T *, const T *, T *, uint64_t, const uint64_t *, bool, Op,
                           unsigned long long *, drk::Guard);

/* Launches `kernel` (map_body<T, NIN, Op>) over the count of pointer
 * parameter `ci` (l->counts[ci] elements, or with l->counts_dev what the
 * device finds at counts_dev[ci] when it starts, at most counts[ci]). */
template <class T, int NIN, class Op>
int map_launch(MapKernel<T, Op> kernel, const DrKLaunch *l, const void *in0, const void *in1, void *out,
               int ci, Op op) {
  uint64_t n = l->counts[ci];
  const uint64_t *n_dev = l->counts_dev != nullptr ? l->counts_dev + ci : nullptr;
  if (n == 0) return 0;
  bool vec = drk::aligned16(out) && (NIN < 1 || drk::aligned16(in0)) && (NIN < 2 || drk::aligned16(in1));
  uint64_t per = 16 / sizeof(T); /* elements per 16-byte access */
  uint64_t threads = vec ? (n / per > 0 ? n / per : 1) : n;
  unsigned bt = drk::block_threads(l);
  unsigned g = drk::grid_blocks(l, drk::ceil_div(threads, bt));
  return drk::launch(l->pdl != 0, kernel, g, bt, l->shared, drk::stream_of(l), (const T *)in0, (const T *)in1,
                     (T *)out, n, n_dev, vec, op, drk::stamp_of(l), drk::guard_of(l));
}

struct Fill {
  float value;
  __device__ float operator()(float, float, uint64_t) const { return value; }
};
struct Iota {
  float start, step;
  __device__ float operator()(float, float, uint64_t i) const { return start + step * (float)i; }
};
struct Scale {
  float alpha;
  __device__ float operator()(float x, float, uint64_t) const { return alpha * x; }
};
struct Axpy {
  float alpha;
  __device__ float operator()(float x, float y, uint64_t) const { return fmaf(alpha, x, y); }
};
struct Add {
  __device__ float operator()(float a, float b, uint64_t) const { return a + b; }
};
struct Mul {
  __device__ float operator()(float a, float b, uint64_t) const { return a * b; }
};
struct Relu {
  __device__ float operator()(float x, float, uint64_t) const { return x > 0.0f ? x : 0.0f; }
};
/* Same constants and order as dr__k_gelu_f32_host. */
struct Gelu {
  __device__ float operator()(float v, float, uint64_t) const {
    float inner = 0.7978845608028654f * (v + 0.044715f * (v * v * v));
    return 0.5f * v * (1.0f + tanhf(inner));
  }
};

inline float argf(const DrKLaunch *l, int i) { return (float)l->args[i].f; }
inline void *argp(const DrKLaunch *l, int i) { return l->args[i].ptr; }

}  // namespace

/* One __global__ per built-in, named dr_<built-in> with C linkage, so that
 * a profiler's row (ncu, nsys) says which built-in ran, not which template
 * instance: the code is map_body's, inlined. */
#define DRK_MAP_KERNEL(name, T, NIN, Op)                                                                 \
  extern "C" __global__ void name(const T *in0, const T *in1, T *out, uint64_t n, const uint64_t *n_dev, \
                                  bool vec, Op op, unsigned long long *stamp, drk::Guard guard) {        \
    map_body<T, NIN, Op>(in0, in1, out, n, n_dev, vec, op, stamp, guard);                                \
  }

DRK_MAP_KERNEL(dr_fill_f32, float, 0, Fill)
DRK_MAP_KERNEL(dr_iota_f32, float, 0, Iota)
DRK_MAP_KERNEL(dr_scale_f32, float, 1, Scale)
DRK_MAP_KERNEL(dr_scale_bf16, __nv_bfloat16, 1, Scale)
DRK_MAP_KERNEL(dr_scale_f16, __half, 1, Scale)
DRK_MAP_KERNEL(dr_axpy_f32, float, 2, Axpy)
DRK_MAP_KERNEL(dr_add_f32, float, 2, Add)
DRK_MAP_KERNEL(dr_add_bf16, __nv_bfloat16, 2, Add)
DRK_MAP_KERNEL(dr_add_f16, __half, 2, Add)
DRK_MAP_KERNEL(dr_mul_f32, float, 2, Mul)
DRK_MAP_KERNEL(dr_relu_f32, float, 1, Relu)
DRK_MAP_KERNEL(dr_gelu_f32, float, 1, Gelu)

extern "C" int dr__k_fill_f32_launch(const DrKLaunch *l) {
  return map_launch<float, 0>(dr_fill_f32, l, nullptr, nullptr, argp(l, 0), 0, Fill{argf(l, 1)});
}

extern "C" int dr__k_iota_f32_launch(const DrKLaunch *l) {
  return map_launch<float, 0>(dr_iota_f32, l, nullptr, nullptr, argp(l, 0), 0, Iota{argf(l, 1), argf(l, 2)});
}

extern "C" int dr__k_scale_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_scale, l);
  return map_launch<float, 1>(dr_scale_f32, l, argp(l, 0), nullptr, argp(l, 2), 0, Scale{argf(l, 1)});
}

extern "C" int dr__k_scale_bf16_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_scale, l);
  return map_launch<__nv_bfloat16, 1>(dr_scale_bf16, l, argp(l, 0), nullptr, argp(l, 2), 0,
                                      Scale{argf(l, 1)});
}

extern "C" int dr__k_scale_f16_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_scale, l);
  return map_launch<__half, 1>(dr_scale_f16, l, argp(l, 0), nullptr, argp(l, 2), 0, Scale{argf(l, 1)});
}

extern "C" int dr__k_axpy_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_axpy, l);
  return map_launch<float, 2>(dr_axpy_f32, l, argp(l, 1), argp(l, 2), argp(l, 2), 1, Axpy{argf(l, 0)});
}

extern "C" int dr__k_add_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_binary, l);
  return map_launch<float, 2>(dr_add_f32, l, argp(l, 0), argp(l, 1), argp(l, 2), 0, Add{});
}

extern "C" int dr__k_add_bf16_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_binary, l);
  return map_launch<__nv_bfloat16, 2>(dr_add_bf16, l, argp(l, 0), argp(l, 1), argp(l, 2), 0, Add{});
}

extern "C" int dr__k_add_f16_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_binary, l);
  return map_launch<__half, 2>(dr_add_f16, l, argp(l, 0), argp(l, 1), argp(l, 2), 0, Add{});
}

extern "C" int dr__k_mul_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_binary, l);
  return map_launch<float, 2>(dr_mul_f32, l, argp(l, 0), argp(l, 1), argp(l, 2), 0, Mul{});
}

extern "C" int dr__k_relu_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_unary, l);
  return map_launch<float, 1>(dr_relu_f32, l, argp(l, 0), nullptr, argp(l, 1), 0, Relu{});
}

extern "C" int dr__k_gelu_f32_launch(const DrKLaunch *l) {
  DRK_CHECK(dr__kcheck_unary, l);
  return map_launch<float, 1>(dr_gelu_f32, l, argp(l, 0), nullptr, argp(l, 1), 0, Gelu{});
}
