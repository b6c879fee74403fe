/*
** kernels/bf16.h — fp32 ↔ bf16 and fp32 ↔ fp16 on the host, the rounding
** every host-side conversion uses (the CPU backend's convert kernel, the
** MPI engine's 16-bit reductions, and the GPU tests that prepare inputs
** both backends must see identically).
*/
#ifndef TSL_BF16_H
#define TSL_BF16_H

#include <stdint.h>
#include <string.h>

/* fp32 → bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN
** rather than rounding into infinity. */
static inline uint16_t tsl_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float tsl_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* fp32 → IEEE binary16 bits, rounding to nearest even; overflow gives
** infinity, NaN stays NaN, tiny values become subnormals or zero. */
static inline uint16_t tsl_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
  if (a < 0x38800000u) {                                   /* below 2^-14: subnormal */
    if (a < 0x33000000u) return sign;                      /* below half the smallest */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(a >> 23);                      /* 14..24 */
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    half += rest > mid || (rest == mid && (half & 1u));
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((a >> 13) - (112u << 10));
  uint32_t rest = a & 0x1fffu;
  h += rest > 0x1000u || (rest == 0x1000u && (h & 1u));
  return (uint16_t)(sign | h);
}

static inline float tsl_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
  if (exp == 0x1fu) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (!mant) {
      u = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        mant <<= 1;
        e++;
      } while (!(mant & 0x400u));
      u = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif
