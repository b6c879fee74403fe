/*
** kernels/cuda/memory.c — device memory through a caching allocator, pinned
** host memory, copies and per-stream scratch.
**
** Caching allocator. cudaMalloc and cudaFree are slow and cudaFree stalls
** the whole device, so freed blocks are kept and handed out again. Requests
** are rounded to size classes — powers of two up to 1 MiB (at least
** 512 bytes), multiples of 2 MiB above — and a free block is reused only for
** its own class. When cudaMalloc runs out, the cached blocks are given back
** to the driver and the request is tried once more. The memory ledger
** counts what the core asked for; `device_free_bytes` reports what the
** driver has free plus what the cache holds, since both can be handed out.
**
** Zero-filled, and ordered without waiting: the ledger promises zeroed
** memory, and the zeroing runs on the legacy default stream, which every
** stream of this backend synchronises with (see tsl_cuda.h). So a reused
** block is zeroed only after every earlier use of it on any stream has
** finished, and every later use waits for the zeroing, while the host goes
** on. Freeing never waits.
*/
#include <stdlib.h>
#include <string.h>

#include "tsl_cuda.h"

#define SMALL_LIMIT ((size_t)1 << 20)
#define LARGE_GRAIN ((size_t)2 << 20)
#define MIN_CLASS ((size_t)512)

static size_t size_class(uint64_t bytes) {
  if (bytes <= MIN_CLASS) return MIN_CLASS;
  if (bytes <= SMALL_LIMIT) {
    size_t c = MIN_CLASS;
    while (c < bytes) c <<= 1;
    return c;
  }
  return ((size_t)bytes + LARGE_GRAIN - 1) & ~(LARGE_GRAIN - 1);
}

/* Give every cached block back to the driver (cudaFree waits for the
** device, so nothing still uses them). */
static int release_cached(tsl_cuda_pool *pool) {
  int st = TESSEL_OK;
  size_t kept = 0;
  for (size_t i = 0; i < pool->n; i++) {
    tsl_cuda_block b = pool->blocks[i];
    if (b.in_use) {
      pool->blocks[kept++] = b;
    } else {
      int rc = TSL_CU(cudaFree(b.ptr));
      if (rc < 0 && st >= 0) st = rc;
    }
  }
  pool->n = kept;
  pool->cached = 0;
  return st;
}

/* A new block of `size` bytes from the driver, retried once after giving
** the cache back. */
static int fresh_block(tsl_cuda_pool *pool, size_t size, tsl_cuda_block **out) {
  if (pool->n == pool->cap) {
    size_t cap = pool->cap ? 2 * pool->cap : 256;
    tsl_cuda_block *p = realloc(pool->blocks, cap * sizeof *p);
    if (!p) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for the device allocator's table");
    pool->blocks = p;
    pool->cap = cap;
  }
  void *ptr = NULL;
  cudaError_t e = cudaMalloc(&ptr, size);
  if (e == cudaErrorMemoryAllocation && pool->cached > 0) {
    (void)cudaGetLastError(); /* out of memory is not sticky: clear it and retry */
    int st = release_cached(pool);
    if (st < 0) return st;
    e = cudaMalloc(&ptr, size);
  }
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "cudaMalloc of %zu bytes: out of device memory (%zu of %zu bytes free)",
                         size, free_b, total_b);
  }
  int st = tsl_cuda_check_rt(e, "cudaMalloc", __FILE__, __LINE__);
  if (st < 0) return st;
  tsl_cuda_block *b = &pool->blocks[pool->n++];
  *b = (tsl_cuda_block){.ptr = ptr, .size = size, .in_use = 0};
  *out = b;
  return TESSEL_OK;
}

/* Zero-filled device memory of at least `bytes` (never NULL on success, even
** for 0 bytes). */
int tsl_cuda_device_alloc(tsl_backend *be, uint64_t bytes, void **out) {
  tsl_cuda_pool *pool = &tsl_cuda(be)->pool;
  *out = NULL;
  if (bytes > ((uint64_t)1 << 48))
    return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "a device allocation of %llu bytes is beyond any GPU",
                         (unsigned long long)bytes);
  size_t size = size_class(bytes);
  tsl_cuda_block *b = NULL;
  for (size_t i = 0; i < pool->n && !b; i++)
    if (!pool->blocks[i].in_use && pool->blocks[i].size == size) b = &pool->blocks[i];
  if (b) {
    pool->cached -= size;
  } else {
    int st = fresh_block(pool, size, &b);
    if (st < 0) return st;
  }
  /* legacy stream: ordered after every earlier use of a reused block */
  int st = TSL_CU(cudaMemset(b->ptr, 0, bytes ? (size_t)bytes : 1));
  if (st < 0) {
    pool->cached += size;
    return st;
  }
  b->in_use = 1;
  *out = b->ptr;
  return TESSEL_OK;
}

void tsl_cuda_device_free(tsl_backend *be, void *p) {
  tsl_cuda_pool *pool = &tsl_cuda(be)->pool;
  if (!p) return;
  for (size_t i = 0; i < pool->n; i++) {
    tsl_cuda_block *b = &pool->blocks[i];
    if (b->ptr == p && b->in_use) {
      b->in_use = 0;
      pool->cached += b->size;
      return;
    }
  }
  TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "freeing %p, which the device allocator did not hand out", p);
}

/* Every block back to the driver, at shutdown. */
void tsl_cuda_pool_release(tsl_cuda_pool *pool) {
  for (size_t i = 0; i < pool->n; i++) pool->blocks[i].in_use = 0;
  release_cached(pool);
  free(pool->blocks);
  memset(pool, 0, sizeof *pool);
}

int tsl_cuda_scratch(tsl_backend *be, struct tsl_stream *st, size_t bytes, void **out) {
  if (bytes > st->scratch_bytes || !st->scratch) {
    void *p;
    /* the old block goes back first: its reuse is ordered after this
    ** stream's pending work by the allocator's zeroing */
    tsl_cuda_device_free(be, st->scratch);
    st->scratch = NULL;
    st->scratch_bytes = 0;
    int rc = tsl_cuda_device_alloc(be, bytes, &p);
    if (rc < 0) return rc;
    st->scratch = p;
    st->scratch_bytes = bytes;
  }
  *out = st->scratch;
  return TESSEL_OK;
}

/* Pinned, mapped into the device's address space (kernels may read a
** host-tier buffer: unified addressing makes the host pointer valid on the
** device), zero-filled. */
int tsl_cuda_host_alloc(tsl_backend *be, uint64_t bytes, void **out) {
  (void)be;
  *out = NULL;
  size_t size = bytes ? (size_t)bytes : 1;
  void *p = NULL;
  int st = TSL_CU(cudaHostAlloc(&p, size, cudaHostAllocPortable | cudaHostAllocMapped));
  if (st < 0) return st;
  memset(p, 0, size);
  *out = p;
  return TESSEL_OK;
}

/* Copies into or out of the block may still be queued: wait for the device
** first (host frees are rare: staging buffers, shutdown). */
void tsl_cuda_host_free(tsl_backend *be, void *p) {
  (void)be;
  if (!p) return;
  if (TSL_CU(cudaDeviceSynchronize()) < 0) return; /* the device is broken: leak rather than race */
  (void)TSL_CU(cudaFreeHost(p));
}

/* The direction comes from the pointers themselves (unified addressing),
** which also covers host-tier buffers on either side; `kind` is the
** caller's view of the same thing. A NULL stream copies synchronously. */
int tsl_cuda_copy(tsl_backend *be, void *dst, const void *src, uint64_t bytes, tsl_copy_kind kind,
                  tsl_stream *s) {
  (void)kind;
  if (bytes == 0 || dst == src) return TESSEL_OK;
  struct tsl_stream *st = tsl_cuda_stream(be, s);
  int rc = TSL_CU(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDefault, st->s));
  if (rc >= 0 && !s) rc = tsl_cuda_stream_sync(be, NULL);
  return rc;
}

int tsl_cuda_memset_zero(tsl_backend *be, void *dst, uint64_t bytes, tsl_stream *s) {
  if (bytes == 0) return TESSEL_OK;
  return TSL_CU(cudaMemsetAsync(dst, 0, (size_t)bytes, tsl_cuda_stream(be, s)->s));
}
