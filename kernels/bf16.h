/*
** kernels/bf16.h — fp32 ↔ bf16 on the host, the rounding every host-side
** conversion uses (the CPU backend's convert kernel, and the GPU tests that
** prepare inputs both backends must see identically).
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

#endif
