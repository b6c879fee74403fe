/*
** kernels/cuda/embedding.cu — token and position embeddings.
**
** wte may hold only vocabulary rows [vocab_begin, vocab_begin + vocab) of a
** split table: tokens outside give zeros forward and nothing backward, so
** the ranks' outputs sum to the unsplit lookup (kernels/cpu/embedding.c).
**
** The token gradient is deterministic. A token can occur in many rows, and
** adding rows into dwte with atomics would sum in a different order each
** run. Instead the rows are sorted by token with CUB's radix sort, which is
** stable, so each token's rows stay in row order; then, for each run of
** equal tokens and each block of 32 columns, one thread block adds the
** run's rows in a fixed order and adds the total into dwte: one writer per
** element, no atomics.
**
** Shapes: tokens [rows] int32; out, dout [rows, width] bf16 (rows = B·T,
** position t = row mod T); wte [vocab, width], wpe [T, width] bf16;
** dwte, dwpe fp32.
*/
#include <cub/device/device_radix_sort.cuh>

#include "device.cuh"

static __global__ void tokens_forward_kernel(bf16 *out, const int32_t *tokens, const bf16 *wte, int64_t rows,
                                             int64_t width, int64_t v0, int64_t vocab) {
  TSL_GRID_LOOP(i, rows * width) {
    const int64_t r = i / width, c = i % width, t = (int64_t)tokens[r] - v0;
    out[i] = t >= 0 && t < vocab ? wte[t * width + c] : __float2bfloat16_rn(0.0f);
  }
}

/* out[b, t, :] += wpe[t, :] */
static __global__ void positions_forward_kernel(bf16 *out, const bf16 *wpe, int64_t batch, int64_t seq,
                                                int64_t width) {
  TSL_GRID_LOOP(i, batch * seq * width) {
    const int64_t t = (i / width) % seq, c = i % width;
    st_bf16(out + i, ld_bf16(out + i) + ld_bf16(wpe + t * width + c));
  }
}

/* Sort keys: the token's row in this rank's table, or `vocab` (sorts last,
** skipped) for tokens outside it; values: the row index. */
static __global__ void token_keys_kernel(uint32_t *keys, int32_t *rows_of, const int32_t *tokens, int64_t rows,
                                         int64_t v0, int64_t vocab) {
  TSL_GRID_LOOP(r, rows) {
    const int64_t t = (int64_t)tokens[r] - v0;
    keys[r] = (uint32_t)(t >= 0 && t < vocab ? t : vocab);
    rows_of[r] = (int32_t)r;
  }
}

/* First position in [lo, hi) whose key is above `key` (keys sorted). */
static __device__ int64_t run_end(const uint32_t *keys, int64_t lo, int64_t hi, uint32_t key) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

enum { BWD_COLS = 32, BWD_LANES = 8, BWD_MAX_BLOCKS = 4096 };

/* Blocks of 32 columns × 8 lanes. A block visits sorted positions
** (grid-stride in x, its 32 columns in y); at each position that starts a
** run of equal keys, its lanes add the run's dout rows (lane l takes rows
** l, l+8, … of the run, in order), the lanes' sums are added in lane order,
** and the total goes into dwte: every element of dwte has one writer. The
** branch is the same for the whole block, so the barriers are too. */
static __global__ void tokens_backward_kernel(float *dwte, const bf16 *dout, const uint32_t *keys,
                                              const int32_t *rows_of, int64_t rows, int64_t width, int64_t vocab) {
  __shared__ float sm[BWD_LANES][BWD_COLS];
  const int64_t c = (int64_t)blockIdx.y * BWD_COLS + threadIdx.x;
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const uint32_t key = keys[i];
    if (key >= (uint64_t)vocab || (i > 0 && keys[i - 1] == key)) continue;
    const int64_t end = run_end(keys, i, rows, key);
    float acc = 0.0f;
    if (c < width)
      for (int64_t j = i + threadIdx.y; j < end; j += BWD_LANES) acc += ld_bf16(dout + (int64_t)rows_of[j] * width + c);
    sm[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < width) {
      float total = 0.0f;
      for (int l = 0; l < BWD_LANES; l++) total += sm[l][threadIdx.x];
      dwte[(int64_t)key * width + c] += total;
    }
    __syncthreads(); /* sm is reused at the next run */
  }
}

static int bad_shape(const char *what) { return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "%s: negative size", what); }

extern "C" int tsl_cuda_embed_tokens_forward(tsl_backend *be, tsl_stream *s, void *out, const int32_t *tokens,
                                             const void *wte, int64_t rows, int64_t width, int64_t vocab_begin,
                                             int64_t vocab) {
  if (rows < 0 || width < 0 || vocab < 0) return bad_shape("token embedding");
  if (rows == 0 || width == 0) return TESSEL_OK;
  return TSL_CU((tokens_forward_kernel<<<tsl_blocks(rows * width, TSL_THREADS), TSL_THREADS, 0,
                                         tsl_cuda_stream(be, s)->s>>>((bf16 *)out, tokens, (const bf16 *)wte, rows,
                                                                      width, vocab_begin, vocab),
                 cudaGetLastError()));
}

extern "C" int tsl_cuda_embed_positions_forward(tsl_backend *be, tsl_stream *s, void *out, const void *wpe,
                                                int64_t batch, int64_t seq, int64_t width) {
  if (batch < 0 || seq < 0 || width < 0) return bad_shape("position embedding");
  const int64_t n = batch * seq * width;
  if (n == 0) return TESSEL_OK;
  return TSL_CU((positions_forward_kernel<<<tsl_blocks(n, TSL_THREADS), TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>(
                     (bf16 *)out, (const bf16 *)wpe, batch, seq, width),
                 cudaGetLastError()));
}

/* Round a byte offset up to 256, the alignment cudaMalloc gives. */
static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

extern "C" int tsl_cuda_embed_tokens_backward(tsl_backend *be, tsl_stream *s, float *dwte, const void *dout,
                                              const int32_t *tokens, int64_t rows, int64_t width,
                                              int64_t vocab_begin, int64_t vocab) {
  if (rows < 0 || width < 0 || vocab < 0) return bad_shape("token embedding backward");
  if (rows == 0 || width == 0 || vocab == 0) return TESSEL_OK;
  if (rows > INT32_MAX || vocab >= INT32_MAX || width > (int64_t)65535 * BWD_COLS)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "token embedding backward: %lld rows, %lld vocabulary rows, width %lld",
                         (long long)rows, (long long)vocab, (long long)width);
  struct tsl_stream *st = tsl_cuda_stream(be, s);
  /* keys must hold the sentinel `vocab` too */
  int bits = 1;
  while (bits < 32 && ((uint64_t)1 << bits) <= (uint64_t)vocab) bits++;
  const int n = (int)rows;
  size_t sort_bytes = 0;
  int rc = TSL_CU(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (const uint32_t *)nullptr,
                                                  (uint32_t *)nullptr, (const int32_t *)nullptr, (int32_t *)nullptr,
                                                  n, 0, bits, st->s));
  if (rc < 0) return rc;
  /* scratch: keys, sorted keys, rows, sorted rows, then CUB's temporary */
  const size_t vec = align256((size_t)n * 4);
  char *base;
  if ((rc = tsl_cuda_scratch(be, st, 4 * vec + sort_bytes, (void **)&base)) < 0) return rc;
  uint32_t *keys = (uint32_t *)base, *sorted_keys = (uint32_t *)(base + vec);
  int32_t *rows_of = (int32_t *)(base + 2 * vec), *sorted_rows = (int32_t *)(base + 3 * vec);
  void *temp = base + 4 * vec;
  rc = TSL_CU((token_keys_kernel<<<tsl_blocks(rows, TSL_THREADS), TSL_THREADS, 0, st->s>>>(keys, rows_of, tokens, rows,
                                                                                          vocab_begin, vocab),
               cudaGetLastError()));
  if (rc >= 0)
    rc = TSL_CU(cub::DeviceRadixSort::SortPairs(temp, sort_bytes, keys, sorted_keys, rows_of, sorted_rows, n, 0, bits,
                                                st->s));
  if (rc >= 0) {
    const int64_t most = BWD_MAX_BLOCKS;
    dim3 grid((unsigned)(rows < most ? rows : most), (unsigned)((width + BWD_COLS - 1) / BWD_COLS));
    rc = TSL_CU((tokens_backward_kernel<<<grid, dim3(BWD_COLS, BWD_LANES), 0, st->s>>>(
                     dwte, (const bf16 *)dout, sorted_keys, sorted_rows, rows, width, vocab),
                 cudaGetLastError()));
  }
  return rc;
}

/* dwpe[t, :] += Σ_b dout[b, t, :]: column sums of dout seen as [batch, seq·width] */
extern "C" int tsl_cuda_embed_positions_backward(tsl_backend *be, tsl_stream *s, float *dwpe, const void *dout,
                                                 int64_t batch, int64_t seq, int64_t width) {
  if (batch < 0 || seq < 0 || width < 0) return bad_shape("position embedding backward");
  return tsl_cuda_column_sums(be, s, dwpe, dout, batch, seq * width);
}
