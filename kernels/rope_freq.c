/*
** kernels/rope_freq.c — rotary frequencies (see rope_freq.h).
**
** Built with -ffp-contract=off: a fused multiply-add rounds once where
** transformers rounds twice, and a frequency one ulp off turns a position
** of 10^4 by a visibly different angle. The order of operations is that of
** transformers' _compute_default_rope_parameters and
** _compute_llama3_parameters on fp32 tensors: a Python number over a
** tensor is the tensor's reciprocal times the number there, and Python
** numbers meet the tensor rounded to fp32.
*/
#include "rope_freq.h"

#include <math.h>

int tsl_rope_freqs_valid(tsl_rope_freqs f) {
  if (!(f.theta > 0.0f)) return 0;
  if (f.factor == 0.0) return 1;
  return f.factor >= 1.0 && f.low_freq_factor > 0.0 && f.high_freq_factor > f.low_freq_factor &&
         f.original_positions >= 1.0;
}

void tsl_rope_inv_freqs(tsl_rope_freqs f, int64_t head_size, float *inv) {
  const float low_wavelen = (float)(f.original_positions / f.low_freq_factor);
  const float high_wavelen = (float)(f.original_positions / f.high_freq_factor);
  const float band = (float)(f.high_freq_factor - f.low_freq_factor);
  const float factor = (float)f.factor, n = (float)f.original_positions, low = (float)f.low_freq_factor;
  for (int64_t i = 0; i < head_size / 2; i++) {
    const float plain = 1.0f / powf(f.theta, (float)(2 * i) / (float)head_size);
    inv[i] = plain;
    if (!(f.factor > 0.0)) continue;
    const float wavelen = (1.0f / plain) * 6.2831855f; /* 2π in fp32 */
    if (wavelen > low_wavelen) {
      inv[i] = plain / factor;
    } else if (!(wavelen < high_wavelen)) {
      const float smooth = ((1.0f / wavelen) * n - low) / band;
      inv[i] = (1.0f - smooth) * plain / factor + smooth * plain;
    }
  }
}
