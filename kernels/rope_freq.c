/*
** kernels/rope_freq.c — rotary frequencies (see rope_freq.h).
**
** Built with -ffp-contract=off: a fused multiply-add rounds once where
** transformers rounds twice, and a frequency one ulp off turns a position
** of 10^4 by a visibly different angle. The order of operations is that of
** transformers' _compute_default_rope_parameters,
** _compute_linear_scaling_rope_parameters, _compute_llama3_parameters,
** _compute_yarn_parameters and _compute_longrope_parameters on fp32 tensors:
** a Python number over a tensor is the tensor's reciprocal times the number
** there, and Python numbers meet the tensor rounded to fp32.
*/
#include "rope_freq.h"

#include <math.h>

static int positive_list(const double *v, int64_t n) {
  if (!v) return 0;
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] > 0.0 && isfinite(v[i]))) return 0;
  return 1;
}

int64_t tsl_rope_turned(tsl_rope_freqs f, int64_t head_size) { return f.rotary ? f.rotary : head_size; }

int tsl_rope_freqs_valid(tsl_rope_freqs f, int64_t head_size) {
  const int64_t turned = tsl_rope_turned(f, head_size);
  if (!(f.theta > 0.0f) || turned <= 0 || turned % 2 || turned > head_size) return 0;
  if (f.factor == 0.0) return 1;
  if (!(f.factor >= 1.0)) return 0;
  if (f.kind == TSL_ROPE_LINEAR || f.kind == TSL_ROPE_DYNAMIC) return 1;
  if (!(f.original_positions >= 1.0)) return 0;
  const int scales = f.attention_factor > 0.0 && isfinite(f.attention_factor);
  if (f.kind == TSL_ROPE_YARN) return f.beta_slow > 0.0 && f.beta_fast > f.beta_slow && scales;
  if (f.kind == TSL_ROPE_LONGROPE)
    return scales && f.pairs == turned / 2 && positive_list(f.short_factor, f.pairs) &&
           positive_list(f.long_factor, f.pairs);
  return f.low_freq_factor > 0.0 && f.high_freq_factor > f.low_freq_factor;
}

float tsl_rope_attention(tsl_rope_freqs f) {
  const int scales = f.kind == TSL_ROPE_YARN || f.kind == TSL_ROPE_LONGROPE;
  return f.factor > 0.0 && scales ? (float)f.attention_factor : 1.0f;
}

/* The dimension (of dim) that turns `turns` times over n positions
** (transformers' find_correction_dim), in double as Python computes it. */
static double correction_dim(double turns, double dim, double theta, double n) {
  return dim * log(n / (turns * 2.0 * M_PI)) / (2.0 * log(theta));
}

/* YaRN: each frequency blended between its plain value (extrapolation) and
** its value divided by factor (interpolation) by a ramp over the pair
** index, 0 below the dimension that turns beta_fast times over N, 1 above
** the one that turns beta_slow times, each rounded outwards (truncate). */
static void yarn_inv_freqs(tsl_rope_freqs f, int64_t head_size, float *inv) {
  const double dim = (double)head_size;
  /* fmax and fmin take the bound over a NaN (theta 1 makes log θ 0) */
  const double low = fmax(floor(correction_dim(f.beta_fast, dim, f.theta, f.original_positions)), 0.0);
  double high = fmin(ceil(correction_dim(f.beta_slow, dim, f.theta, f.original_positions)), dim - 1.0);
  if (low == high) high += 0.001; /* as transformers' linear_ramp_factor keeps the ramp finite */
  const float factor = (float)f.factor, lo = (float)low, span = (float)(high - low);
  for (int64_t i = 0; i < head_size / 2; i++) {
    const float pos = powf(f.theta, (float)(2 * i) / (float)head_size);
    const float extrapolation = 1.0f / pos, interpolation = 1.0f / (factor * pos);
    float ramp = ((float)i - lo) / span;
    ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
    const float keep = 1.0f - ramp; /* the share of the plain frequency */
    inv[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
}

/* Llama 3: each plain frequency kept, divided by factor or interpolated
** between the two, by its wavelength against the original context. */
static void llama3_scale(tsl_rope_freqs f, int64_t head_size, float *inv) {
  const float low_wavelen = (float)(f.original_positions / f.low_freq_factor);
  const float high_wavelen = (float)(f.original_positions / f.high_freq_factor);
  const float band = (float)(f.high_freq_factor - f.low_freq_factor);
  const float factor = (float)f.factor, n = (float)f.original_positions, low = (float)f.low_freq_factor;
  for (int64_t i = 0; i < head_size / 2; i++) {
    const float plain = inv[i];
    const float wavelen = (1.0f / plain) * 6.2831855f; /* 2π in fp32 */
    if (wavelen > low_wavelen) {
      inv[i] = plain / factor;
    } else if (!(wavelen < high_wavelen)) {
      const float smooth = ((1.0f / wavelen) * n - low) / band;
      inv[i] = (1.0f - smooth) * plain / factor + smooth * plain;
    }
  }
}

/* LongRoPE: 1 / (ext_i · theta^(2i/hs)), ext from the set `length` picks:
** transformers' 1.0 / (ext_factors * base**inv_freq_shape), its factors
** fp32 tensors. */
static void longrope_inv_freqs(tsl_rope_freqs f, int64_t head_size, int64_t length, float *inv) {
  const double *ext = (double)length > f.original_positions ? f.long_factor : f.short_factor;
  for (int64_t i = 0; i < head_size / 2; i++)
    inv[i] = 1.0f / ((float)ext[i] * powf(f.theta, (float)(2 * i) / (float)head_size));
}

void tsl_rope_inv_freqs(tsl_rope_freqs f, int64_t turned, int64_t length, float *inv) {
  if (f.factor > 0.0 && f.kind == TSL_ROPE_YARN) {
    yarn_inv_freqs(f, turned, inv);
    return;
  }
  if (f.factor > 0.0 && f.kind == TSL_ROPE_LONGROPE) {
    longrope_inv_freqs(f, turned, length, inv);
    return;
  }
  for (int64_t i = 0; i < turned / 2; i++) inv[i] = 1.0f / powf(f.theta, (float)(2 * i) / (float)turned);
  if (!(f.factor > 0.0) || f.kind == TSL_ROPE_DYNAMIC) return;
  if (f.kind == TSL_ROPE_LLAMA3) {
    llama3_scale(f, turned, inv);
    return;
  }
  const float factor = (float)f.factor; /* linear: inv_freq /= factor, an fp32 tensor over a number */
  for (int64_t i = 0; i < turned / 2; i++) inv[i] /= factor;
}
