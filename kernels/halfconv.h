/* halfconv.h: bf16 and f16 <-> f32 conversions for the host twins, rounding
 * to nearest even exactly as CUDA's __float2bfloat16_rn and __float2half_rn
 * do, so that a twin that computes in f32 and rounds once gives the same bits
 * as the device (NaN payloads aside). Plain C, header-only. */
#ifndef DAGRUN_KERNELS_HALFCONV_H
#define DAGRUN_KERNELS_HALFCONV_H

#include <stdint.h>
#include <string.h>

static inline uint32_t dr__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float dr__bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float dr__bf16_to_f32(uint16_t h) { return dr__bits_f32((uint32_t)h << 16); }

static inline uint16_t dr__f32_to_bf16(float f) {
  uint32_t u = dr__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float dr__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return dr__bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    /* zero or subnormal: mant * 2^-24, exact in f32 */
    float v = (float)mant * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return dr__bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* After F. Giesen's float_to_half_fast3_rtne: relies on IEEE f32 addition
 * in round-to-nearest-even (SSE on x86-64, not x87). */
static inline uint16_t dr__f32_to_f16(float f) {
  uint32_t u = dr__f32_bits(f);
  uint32_t sign = u & 0x80000000u;
  uint32_t o;
  u ^= sign;
  if (u >= (127u + 16u) << 23) { /* >= 2^16, inf or NaN */
    o = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u < 113u << 23) { /* below f16's normal range */
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    float v = dr__bits_f32(u) + dr__bits_f32(magic);
    o = dr__f32_bits(v) - magic;
  } else {
    uint32_t odd = (u >> 13) & 1u;
    u += ((uint32_t)(15 - 127) << 23) + 0xfffu;
    u += odd;
    o = u >> 13;
  }
  return (uint16_t)(o | (sign >> 16));
}

#endif
