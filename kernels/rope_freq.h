/*
** kernels/rope_freq.h — the frequencies of rotary positions, one formula
** (rope_freq.c) for the CPU and CUDA backends, so every backend turns by
** the same angles, and those transformers turns by.
**
** Plain (factor 0): inv_freq_i = 1/theta^(2i/hs) for i < hs/2.
** Llama 3 (Hugging Face's rope_type "llama3"), with the wavelength
** w = 2π/inv_freq_i and the original context N:
**   w < N/high_freq_factor   kept (high frequencies: local order)
**   w > N/low_freq_factor    divided by factor (low frequencies: the
**                            context stretched factor times)
**   otherwise                interpolated: s·inv + (1 − s)·inv/factor,
**                            s = (N/w − low_freq_factor) / (high − low).
** Linear (rope_type "linear", position interpolation, Chen et al. 2023):
** every frequency divided by factor, as if the positions were.
** Dynamic NTK (rope_type "dynamic"): the plain frequencies. transformers
** raises theta by factor only for sequences longer than the model's
** positions, which no backend is asked to turn.
** YaRN (rope_type "yarn", Peng et al. 2023): the dimensions that turn fewer
** than beta_slow times over the original context N are divided by factor,
** those that turn more than beta_fast times are kept, and a linear ramp
** over the dimensions between blends the two; cos and sin are scaled by
** attention_factor (by default 0.1·ln(factor) + 1), which scales the
** attention logits by its square.
** LongRoPE (rope_type "longrope", Ding et al. 2024; Phi-3.5, Phi-3 128k):
** each plain frequency divided by its own factor, one per pair, from
** short_factor while the sequence (its last position + 1) is at most N
** long and from long_factor beyond, as transformers switches them; cos and
** sin scaled by attention_factor (by default √(1 + ln factor / ln N)).
*/
#ifndef TSL_ROPE_FREQ_H
#define TSL_ROPE_FREQ_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which scaling a factor above 0 selects. */
typedef enum {
  TSL_ROPE_LLAMA3 = 0,
  TSL_ROPE_YARN = 1,
  TSL_ROPE_LINEAR = 2,
  TSL_ROPE_LONGROPE = 3,
  TSL_ROPE_DYNAMIC = 4
} tsl_rope_kind;

/* The scaling's numbers are doubles, as in Hugging Face's config.json:
** transformers divides them in double before meeting fp32 tensors. */
typedef struct tsl_rope_freqs {
  float theta;                               /* base of the frequencies */
  double factor;                             /* the scaling's; 0: none */
  double low_freq_factor, high_freq_factor;  /* Llama 3's bands */
  double original_positions;                 /* N, the unscaled model's context (not linear's or dynamic's) */
  tsl_rope_kind kind;
  double beta_fast, beta_slow;               /* YaRN's ramp, in turns over N */
  double attention_factor;                   /* YaRN's and LongRoPE's scale of cos and sin */
  const double *short_factor, *long_factor;  /* LongRoPE's, `pairs` each */
  int64_t pairs;
  int64_t rotary; /* the elements at the start of each head that turn (Phi-4 mini's 96 of 128); 0: all */
} tsl_rope_freqs;

/* How many elements of a head of head_size turn: f.rotary, or all. */
int64_t tsl_rope_turned(tsl_rope_freqs f, int64_t head_size);

/* 1 when f describes frequencies of a head of head_size elements: theta >
** 0, an even number of them turned, and, when scaled, factor >= 1; all but
** linear and dynamic with a context of at least 1, Llama 3's with 0 <
** low_freq_factor < high_freq_factor, YaRN's with 0 < beta_slow <
** beta_fast, YaRN's and LongRoPE's with a positive attention_factor,
** LongRoPE's with a positive factor per turned pair in each list. */
int tsl_rope_freqs_valid(tsl_rope_freqs f, int64_t head_size);

/* What cos and sin are multiplied by: YaRN's or LongRoPE's
** attention_factor in fp32, else 1. */
float tsl_rope_attention(tsl_rope_freqs f);

/* inv[i] = inv_freq_i of `turned` (even: tsl_rope_turned) elements of a
** head, for i < turned/2, for a sequence of `length` positions so far (the
** last one's index + 1: LongRoPE's set depends on it); f must be valid.
** Each step is the fp32 operation
** transformers performs, in its order, so Llama 3's scaling of a plain
** frequency is its own bit for bit. The plain frequencies come from the C
** library's powf, which for some head sizes and thetas lands one ulp from
** PyTorch's vectorised pow (e.g. i = 37 of head size 128 at theta 1e6). */
void tsl_rope_inv_freqs(tsl_rope_freqs f, int64_t turned, int64_t length, float *inv);

#ifdef __cplusplus
}
#endif

#endif
