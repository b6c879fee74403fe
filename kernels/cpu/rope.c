/*
** kernels/cpu/rope.c — rotary position embedding, Hugging Face's
** rotate-half convention, in place.
**
** For the first r elements of each head (r = hs, or freqs.rotary: Phi-4
** mini's 96 of 128; the others are left as they are) and i < r/2, the pair
** (x_i, x_{i+r/2}) of each head at position pos turns by the angle
** a = pos·inv_freq_i:
**   x_i ← x_i·cos a − x_{i+hs/2}·sin a,  x_{i+hs/2} ← x_{i+hs/2}·cos a + x_i·sin a.
** The angles are computed as transformers' LlamaRotaryEmbedding does, so
** that long positions agree with it to the last bit of the angle:
** inv_freq_i in fp32 (kernels/rope_freq.c: 1/theta^((float)2i/hs), or
** a scaling of it), a = fp32 product (float)pos·inv_freq_i, then
** cos and sin of that fp32 angle, each times YaRN's or LongRoPE's
** attention factor when it has one (transformers scales its cos and sin tables). The inverse
** (sin negated) is the backward: the Jacobian is the (scaled) rotation,
** whose transpose turns the other way by the same scale.
**
** A table of cos/sin per (position, i) is filled first, once per call, so
** the pass over the B·T·heads rows only multiplies and adds.
*/
#include <stdlib.h>

#include "cpu.h"

/* x [B, T, heads, hs] with rows (time steps) ld floats apart */
int tsl_cpu_rope(tsl_backend *be, tsl_stream *s, void *x, int64_t batch, int64_t seq,
                 int64_t heads, int64_t head_size, int64_t ld, int64_t pos_offset, tsl_rope_freqs freqs,
                 int inverse) {
  if (batch < 0 || seq < 0 || heads < 0 || head_size <= 0 || head_size % 2 ||
      ld < heads * head_size || pos_offset < 0 || !tsl_rope_freqs_valid(freqs, head_size))
    return TESSEL_E_INTERNAL;
  if (batch == 0 || seq == 0 || heads == 0) return TESSEL_OK;
  const int64_t turned = tsl_rope_turned(freqs, head_size), half = turned / 2;
  float *cs = malloc((size_t)(seq * half) * 2 * sizeof(float) + (size_t)half * sizeof(float));
  if (!cs) return TESSEL_E_NOMEM;
  float *sn = cs + seq * half, *inv_freq = sn + seq * half;
  tsl_rope_inv_freqs(freqs, turned, pos_offset + seq, inv_freq);
  const float sign = inverse ? -1.0f : 1.0f, scale = tsl_rope_attention(freqs);
#pragma omp parallel for schedule(static) if (seq * half >= TSL_CPU_PARALLEL_MIN / 16)
  for (int64_t t = 0; t < seq; t++)
    for (int64_t i = 0; i < half; i++) {
      const float a = (float)(t + pos_offset) * inv_freq[i];
      cs[t * half + i] = cosf(a) * scale;
      sn[t * half + i] = sign * (sinf(a) * scale);
    }
  float *base = x;
  const int64_t rows = batch * seq;
#pragma omp parallel for schedule(static) if (rows * heads * turned >= TSL_CPU_PARALLEL_MIN)
  for (int64_t r = 0; r < rows; r++) {
    const float *c = cs + (r % seq) * half, *sv = sn + (r % seq) * half;
    for (int64_t h = 0; h < heads; h++) {
      float *lo = base + r * ld + h * head_size, *hi = lo + half;
#pragma omp simd
      for (int64_t i = 0; i < half; i++) {
        const float a = lo[i], b = hi[i];
        lo[i] = a * c[i] - b * sv[i];
        hi[i] = b * c[i] + a * sv[i];
      }
    }
  }
  free(cs);
  return TESSEL_OK;
}
