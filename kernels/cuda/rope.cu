/*
** kernels/cuda/rope.cu — rotary position embedding in place, Hugging
** Face's rotate-half convention (see kernels/cpu/rope.c for the formula).
**
** One thread per (row, head, turned pair i < r/2; r = hs, or freqs.rotary). The angle is formed as
** transformers forms it, in fp32: the frequencies are the CPU backend's,
** computed on the host (kernels/rope_freq.c) and passed with the launch,
** a = (float)pos·inv_freq, then cosf and sinf of that fp32 angle
** (full-precision libdevice functions, not the __cosf intrinsics, whose
** error grows with the argument), times YaRN's or LongRoPE's attention factor. The rotation is computed in fp32 and
** rounded once to bf16 per element.
*/
#include "device.cuh"
#include "rope_freq.h"

/* the frequencies of one head, a kernel argument (2 KiB of the 4 KiB a
** launch may pass) */
#define MAX_HALF 512
typedef struct freq_table {
  float inv[MAX_HALF];
} freq_table;

static __global__ void rope_kernel(bf16 *x, int64_t rows, int64_t seq, int64_t heads, int64_t head_size,
                                   int64_t half, int64_t ld, int64_t pos_offset, freq_table f, float sign,
                                   float scale) {
  const int64_t per_row = heads * half;
  TSL_GRID_LOOP(e, rows * per_row) {
    const int64_t r = e / per_row, h = (e % per_row) / half, i = e % half;
    const float a = (float)(r % seq + pos_offset) * f.inv[i];
    const float c = cosf(a) * scale, s = sign * (sinf(a) * scale);
    bf16 *lo = x + r * ld + h * head_size + i, *hi = lo + half;
    const float u = ld_bf16(lo), v = ld_bf16(hi);
    st_bf16(lo, u * c - v * s);
    st_bf16(hi, v * c + u * s);
  }
}

extern "C" int tsl_cuda_rope(tsl_backend *be, tsl_stream *s, void *x, int64_t batch, int64_t seq, int64_t heads,
                             int64_t head_size, int64_t ld, int64_t pos_offset, tsl_rope_freqs freqs,
                             int inverse) {
  if (batch < 0 || seq < 0 || heads < 0 || head_size <= 0 || head_size % 2 ||
      tsl_rope_turned(freqs, head_size) > 2 * MAX_HALF || ld < heads * head_size || pos_offset < 0 ||
      !tsl_rope_freqs_valid(freqs, head_size))
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL,
                         "rope: bad shape (batch %lld, seq %lld, heads %lld, head size %lld, row stride %lld, "
                         "position offset %lld, theta %g, scaling factor %g)",
                         (long long)batch, (long long)seq, (long long)heads, (long long)head_size, (long long)ld,
                         (long long)pos_offset, (double)freqs.theta, (double)freqs.factor);
  const int64_t turned = tsl_rope_turned(freqs, head_size), n = batch * seq * heads * (turned / 2);
  if (n == 0) return TESSEL_OK;
  freq_table f;
  tsl_rope_inv_freqs(freqs, turned, pos_offset + seq, f.inv);
  return TSL_CU((rope_kernel<<<tsl_blocks(n, TSL_THREADS), TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>(
                     (bf16 *)x, batch * seq, seq, heads, head_size, turned / 2, ld, pos_offset, f,
                     inverse ? -1.0f : 1.0f,
                     tsl_rope_attention(freqs)),
                 cudaGetLastError()));
}
