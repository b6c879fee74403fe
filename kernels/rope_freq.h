/*
** kernels/rope_freq.h — the frequencies of rotary positions, one formula
** for the CPU and CUDA kernels (and the core, which describes them to
** strategies), so every backend turns by the same angles.
**
** Plain (factor 0): inv_freq_i = 1/theta^(2i/hs) for i < hs/2.
** Llama 3 (Hugging Face's rope_type "llama3"), with the wavelength
** w = 2π/inv_freq_i and the original context N:
**   w < N/high_freq_factor   kept (high frequencies: local order)
**   w > N/low_freq_factor    divided by factor (low frequencies: the
**                            context stretched factor times)
**   otherwise                interpolated: s·inv + (1 − s)·inv/factor,
**                            s = (N/w − low_freq_factor) / (high − low).
** Every step is the fp32 operation transformers' _compute_llama3_parameters
** performs, in its order (a scalar over a tensor is the tensor's reciprocal
** times the scalar there), so the frequencies agree with it bit for bit.
*/
#ifndef TSL_ROPE_FREQ_H
#define TSL_ROPE_FREQ_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TSL_ROPE_FN static inline __host__ __device__
#else
#define TSL_ROPE_FN static inline
#endif

typedef struct tsl_rope_freqs {
  float theta;                               /* base of the frequencies */
  float factor;                              /* Llama 3 scaling; 0: none */
  float low_freq_factor, high_freq_factor;
  float original_positions;                  /* N, the unscaled model's context */
} tsl_rope_freqs;

/* inv_freq_i of a head of head_size (even) elements, 0 <= i < head_size/2 */
TSL_ROPE_FN float tsl_rope_inv_freq(tsl_rope_freqs f, int64_t i, int64_t head_size) {
  const float inv = 1.0f / powf(f.theta, (float)(2 * i) / (float)head_size);
  if (!(f.factor > 0.0f)) return inv;
  const float wavelen = (1.0f / inv) * 6.2831855f; /* fp32 2π */
  const float low_wavelen = (float)((double)f.original_positions / (double)f.low_freq_factor);
  const float high_wavelen = (float)((double)f.original_positions / (double)f.high_freq_factor);
  if (wavelen > low_wavelen) return inv / f.factor;
  if (wavelen < high_wavelen) return inv;
  const float smooth = ((1.0f / wavelen) * f.original_positions - f.low_freq_factor) /
                       (float)((double)f.high_freq_factor - (double)f.low_freq_factor);
  return (1.0f - smooth) * inv / f.factor + smooth * inv;
}

#undef TSL_ROPE_FN

#endif
