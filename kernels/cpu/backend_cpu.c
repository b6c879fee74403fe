/*
** kernels/cpu/backend_cpu.c — the CPU backend's table, lifecycle, memory
** and (no-op) streams.
**
** Device memory is ordinary heap memory: the core applies the configured
** `device.memory_limit` itself, so this backend reports no bound. Every
** call is synchronous, so streams and events are NULL.
*/
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "cpu.h"

typedef struct cpu_ctx {
  char description[512];
} cpu_ctx;

/* Why the last cpu_init failed (its ctx is gone by then). */
static char init_error[400];

/* Under an address-space limit (ulimit -v, RLIMIT_AS) OpenBLAS 0.3 cannot
** fail: when the mapping of a thread's work buffer (128 MiB and a page) is
** refused it tries again for ever, and the run spun in its first product
** (on another rank than 0, the others then blamed that rank's hang). So
** under such a limit every thread of the team runs one product at init,
** before the run's own memory takes the room: OpenBLAS keeps the buffers
** for the rest of the process, and the model's allocations, not a product,
** meet the limit and fail with their names. A reservation of that much
** first tells whether there is room at all, since the product would not
** return. A memory limit (a cgroup, Slurm's --mem, device.memory_limit)
** fails cleanly anyway. */
enum { BLAS_BUFFER_BYTES = (128 << 20) + (1 << 20), WARM_SIZE = 256 };

static int blas_buffers_mapped(int threads) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return TESSEL_OK;
  const size_t room = (size_t)threads * BLAS_BUFFER_BYTES;
  void *p = mmap(NULL, room, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    snprintf(init_error, sizeof init_error,
             "ulimit -v (%llu MiB of address space) leaves no room for OpenBLAS's working buffers, %d MiB for each "
             "of %d thread(s), where OpenBLAS would wait for ever: raise ulimit -v, run fewer threads "
             "(device.threads), or limit memory with a cgroup or device.memory_limit instead",
             (unsigned long long)(lim.rlim_cur >> 20), BLAS_BUFFER_BYTES >> 20, threads);
    return TESSEL_E_NOMEM;
  }
  munmap(p, room);
  int ok = 1;
  /* large enough to pass OpenBLAS's small-matrix paths, which take no buffer */
#pragma omp parallel reduction(&& : ok)
  {
    float *m = calloc(3 * WARM_SIZE * WARM_SIZE, sizeof *m);
    ok = m != NULL;
    if (m)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, WARM_SIZE, WARM_SIZE, WARM_SIZE, 1.0f, m, WARM_SIZE,
                  m + WARM_SIZE * WARM_SIZE, WARM_SIZE, 0.0f, m + 2 * WARM_SIZE * WARM_SIZE, WARM_SIZE);
    free(m);
  }
  if (!ok) snprintf(init_error, sizeof init_error, "out of host memory for a first product on every thread");
  return ok ? TESSEL_OK : TESSEL_E_NOMEM;
}

static const char *cpu_last_error(tsl_backend *be) { return init_error; }

static void cpu_shutdown(tsl_backend *be);

/* The OpenMP and OpenBLAS thread counts of the process before the first of
** the CPU backends started now set them: the last one to shut down gives
** them back, so a program that embeds tessel (tessel.h) has its own
** threads again once its runs are closed. */
static int live_backends, program_omp_threads, program_blas_threads;

/* opts->threads (> 0) sets the OpenMP team size; 0 leaves OpenMP's default
** (all cores, or OMP_NUM_THREADS). That team runs every kernel, sgemm
** included: OpenBLAS itself is set to one thread and called once per team
** member on its own block (see matmul.c for why one pool, not two).
** OpenBLAS's count is set first: an OpenMP build of OpenBLAS (Debian's
** libopenblas0-openmp) sets the calling thread's OpenMP count with its own,
** and after it the team was 1 thread whatever device.threads said. */
static int cpu_init(tsl_backend *be, const tsl_backend_opts *opts) {
  cpu_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return TESSEL_E_NOMEM;
  if (live_backends++ == 0) {
    program_omp_threads = omp_get_max_threads();
    program_blas_threads = openblas_get_num_threads();
  }
  const int threads = opts && TESSEL_HAS(opts, tsl_backend_opts, threads) && opts->threads > 0 ? opts->threads
                                                                                              : omp_get_max_threads();
  const int pool = tsl_cpu_blas_pool_started();
  openblas_set_num_threads(1);
  omp_set_num_threads(threads);
  int st = blas_buffers_mapped(threads);
  if (st < 0) {
    be->ctx = ctx;
    cpu_shutdown(be); /* gives the thread counts back */
    return st;
  }
  /* openblas_get_config() reads "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": keep
  ** the version, the second word. */
  char version[32] = "?";
  const char *config = openblas_get_config();
  if (config) sscanf(config, "%*s %31s", version);
  const char *core = openblas_get_corename();
  /* The `tessel` program gets here with neither unless the user set the
  ** variables; a program that links libtessel may: say what to set. */
  const char *better = tsl_cpu_blas_core_better();
  char hint[400] = "";
  int used = 0;
  if (better)
    used = snprintf(hint, sizeof hint, "; set OPENBLAS_CORETYPE=%s for this CPU's faster kernels", better);
  if (pool)
    used += snprintf(hint + used, sizeof hint - (size_t)used,
                     "; set OPENBLAS_NUM_THREADS=1: its own thread pool only competes with OpenMP's");
  snprintf(ctx->description, sizeof ctx->description, "cpu: %d thread%s, OpenBLAS %s (%s%s)", threads,
           threads == 1 ? "" : "s", version, core ? core : "?", hint);
  be->ctx = ctx;
  return TESSEL_OK;
}

static void cpu_shutdown(tsl_backend *be) {
  if (!be->ctx) return;
  free(be->ctx);
  be->ctx = NULL;
  if (--live_backends > 0) return;
  openblas_set_num_threads(program_blas_threads); /* first: see cpu_init */
  omp_set_num_threads(program_omp_threads);
}

static uint64_t cpu_device_free_bytes(tsl_backend *be) { return UINT64_MAX; }

static const char *cpu_describe(tsl_backend *be) {
  const cpu_ctx *ctx = be->ctx;
  return ctx ? ctx->description : "cpu";
}

/* Zero-filled, 64-byte aligned (one cache line, one AVX-512 vector), never
** NULL on success, even for 0 bytes. */
static int cpu_alloc(tsl_backend *be, uint64_t bytes, void **out) {
  *out = NULL;
  if (bytes > SIZE_MAX - 64) return TESSEL_E_NOMEM;
  size_t size = bytes ? ((size_t)bytes + 63) & ~(size_t)63 : 64;
  void *p = aligned_alloc(64, size);
  if (!p) return TESSEL_E_NOMEM;
  memset(p, 0, size);
  *out = p;
  return TESSEL_OK;
}

static void cpu_free(tsl_backend *be, void *p) { free(p); }

/* Copies and zeroings at least this long are cut between the team. A step
** zeroes every gradient (13 MB for the "small" model): on one thread the
** others waited for it, as for no other pass of the step. */
enum { TEAM_BYTES_MIN = 1 << 20 };

/* dst[0, bytes) = src[0, bytes), or zeros where src is NULL; a long one
** in one range per thread, each starting on a 4 KiB boundary. Short ones
** (the sampler's per-token cache rows among them) start no team. */
static void one_range(char *dst, const char *src, size_t n) {
  if (src) memcpy(dst, src, n);
  else memset(dst, 0, n);
}

static void team_bytes(char *dst, const char *src, uint64_t bytes) {
  if (bytes == 0) return; /* dst may then be NULL, which memcpy and memset must not see */
  if (bytes < TEAM_BYTES_MIN) {
    one_range(dst, src, bytes);
    return;
  }
#pragma omp parallel
  {
    int64_t lo, hi;
    tsl_cpu_team_part((int64_t)bytes, 4096, &lo, &hi);
    one_range(dst + lo, src ? src + lo : NULL, (size_t)(hi - lo));
  }
}

static int cpu_copy(tsl_backend *be, void *dst, const void *src, uint64_t bytes, tsl_copy_kind kind,
                    tsl_stream *s) {
  if (dst != src) team_bytes(dst, src, bytes);
  return TESSEL_OK;
}

static int cpu_memset_zero(tsl_backend *be, void *dst, uint64_t bytes, tsl_stream *s) {
  team_bytes(dst, NULL, bytes);
  return TESSEL_OK;
}

static int cpu_stream_create(tsl_backend *be, tsl_stream **out) {
  *out = NULL;
  return TESSEL_OK;
}

static void cpu_stream_destroy(tsl_backend *be, tsl_stream *s) {}

static int cpu_stream_sync(tsl_backend *be, tsl_stream *s) { return TESSEL_OK; }

static int cpu_event_record(tsl_backend *be, tsl_stream *s, tsl_event **out) {
  *out = NULL;
  return TESSEL_OK;
}

static int cpu_event_wait(tsl_backend *be, tsl_stream *waiter, tsl_event *e) { return TESSEL_OK; }

static void cpu_event_free(tsl_backend *be, tsl_event *e) {}

static const tsl_backend cpu_backend = {
    .size = sizeof(tsl_backend),
    .version = TSL_BACKEND_VERSION,
    .name = "cpu",
    .act_dtype = TESSEL_F32,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .last_error = cpu_last_error,
    .device_free_bytes = cpu_device_free_bytes,
    .describe = cpu_describe,
    .device_alloc = cpu_alloc,
    .device_free = cpu_free,
    .host_alloc = cpu_alloc,
    .host_free = cpu_free,
    .copy = cpu_copy,
    .memset_zero = cpu_memset_zero,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_sync = cpu_stream_sync,
    .event_record = cpu_event_record,
    .event_wait = cpu_event_wait,
    .event_free = cpu_event_free,
    .gemm = tsl_cpu_gemm,
    .linear_forward = tsl_cpu_linear_forward,
    .linear_backward = tsl_cpu_linear_backward,
    .layernorm_forward = tsl_cpu_layernorm_forward,
    .layernorm_backward = tsl_cpu_layernorm_backward,
    .layernorm_stats = tsl_cpu_layernorm_stats,
    .layernorm_apply = tsl_cpu_layernorm_apply,
    .layernorm_backward_stats = tsl_cpu_layernorm_backward_stats,
    .layernorm_backward_apply = tsl_cpu_layernorm_backward_apply,
    .rmsnorm_forward = tsl_cpu_rmsnorm_forward,
    .rmsnorm_backward = tsl_cpu_rmsnorm_backward,
    .rmsnorm_stats = tsl_cpu_rmsnorm_stats,
    .rmsnorm_apply = tsl_cpu_rmsnorm_apply,
    .rmsnorm_backward_stats = tsl_cpu_rmsnorm_backward_stats,
    .rmsnorm_backward_apply = tsl_cpu_rmsnorm_backward_apply,
    .attention_forward = tsl_cpu_attention_forward,
    .attention_backward = tsl_cpu_attention_backward,
    .rope = tsl_cpu_rope,
    .gelu_forward = tsl_cpu_gelu_forward,
    .gelu_backward = tsl_cpu_gelu_backward,
    .add = tsl_cpu_add,
    .axpy = tsl_cpu_axpy,
    .scale = tsl_cpu_scale,
    .convert = tsl_cpu_convert,
    .swiglu_forward = tsl_cpu_swiglu_forward,
    .swiglu_backward = tsl_cpu_swiglu_backward,
    .embed_tokens_forward = tsl_cpu_embed_tokens_forward,
    .embed_positions_forward = tsl_cpu_embed_positions_forward,
    .embed_tokens_backward = tsl_cpu_embed_tokens_backward,
    .embed_positions_backward = tsl_cpu_embed_positions_backward,
    .ce_rowmax = tsl_cpu_ce_rowmax,
    .ce_sums = tsl_cpu_ce_sums,
    .ce_finish = tsl_cpu_ce_finish,
    .adamw = tsl_cpu_adamw,
    .sumsq = tsl_cpu_sumsq,
    .linear_gelu_forward = tsl_cpu_linear_gelu_forward,
    .gelu_backward_bias = tsl_cpu_gelu_backward_bias,
    .add_layernorm_forward = tsl_cpu_add_layernorm_forward,
    .layernorm_backward_add = tsl_cpu_layernorm_backward_add,
    .ce_fused = tsl_cpu_ce_fused,
    .attention_past = 1,
    .attention_window = 1,
};

const tsl_backend *tsl_cpu_backend(void) { return &cpu_backend; }
