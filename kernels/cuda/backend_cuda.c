/*
** kernels/cuda/backend_cuda.c — the CUDA backend's table, lifecycle and
** device: libtessel-cuda.so exports only tessel_backend_v1.
**
** One GPU per rank: opts->device_index is the rank's index among the ranks
** on its machine. When a machine shows a single GPU, every rank takes it
** (a launcher that gives each rank its own GPU through CUDA_VISIBLE_DEVICES
** looks like that); two ranks on one GPU then meet NCCL's duplicate-GPU
** check when their communicators are built.
**
** init never aborts: no driver, no GPU or a failing library call leaves a
** message in last_error and returns TESSEL_E_DEVICE, and the core reports it.
*/
#include <cublasLt.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsl_cuda.h"

/* Pick the device and make its context current. */
static int select_device(const tsl_backend_opts *o, int *device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return TSL_CUDA_FAIL(TESSEL_E_DEVICE,
                         "no usable NVIDIA GPU: cudaGetDeviceCount says \"%s\" (%s). device.kind: cuda needs an "
                         "NVIDIA GPU and a driver for CUDA %d.%d or newer; on a machine without one, use "
                         "device.kind: cpu",
                         cudaGetErrorString(e), cudaGetErrorName(e), CUDART_VERSION / 1000,
                         (CUDART_VERSION % 1000) / 10);
  }
  if (count == 0)
    return TSL_CUDA_FAIL(TESSEL_E_DEVICE, "no NVIDIA GPU is visible to this process (cudaGetDeviceCount found 0; "
                                          "check CUDA_VISIBLE_DEVICES), or use device.kind: cpu");
  *device = count == 1 ? 0 : o->device_index;
  if (*device < 0 || *device >= count)
    return TSL_CUDA_FAIL(TESSEL_E_DEVICE,
                         "rank %d is local rank %d on its machine, which shows %d GPUs: tessel runs one rank per "
                         "GPU, so start at most %d ranks per machine",
                         o->rank, o->device_index, count, count);
  return TSL_CU(cudaSetDevice(*device));
}

static int describe_device(tsl_cuda_ctx *ctx) {
  struct cudaDeviceProp prop;
  int runtime = 0, driver = 0, nccl = 0;
  int st = TSL_CU(cudaGetDeviceProperties(&prop, ctx->device));
  if (st >= 0) st = TSL_CU(cudaRuntimeGetVersion(&runtime));
  if (st >= 0) st = TSL_CU(cudaDriverGetVersion(&driver));
  if (st >= 0) st = TSL_NCCL(ncclGetVersion(&nccl));
  if (st < 0) return st;
  size_t lt = cublasLtGetVersion();
  snprintf(ctx->description, sizeof ctx->description,
           "cuda: %s (GPU %d, sm_%d%d, %d SMs, %.1f GiB), CUDA runtime %d.%d, driver %d.%d, cuBLASLt %zu.%zu.%zu, "
           "NCCL %d.%d.%d",
           prop.name, ctx->device, prop.major, prop.minor, prop.multiProcessorCount,
           (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), runtime / 1000, (runtime % 1000) / 10,
           driver / 1000, (driver % 1000) / 10, lt / 10000, (lt / 100) % 100, lt % 100, nccl / 10000,
           (nccl / 100) % 100, nccl % 100);
  return TESSEL_OK;
}

static void cuda_shutdown(tsl_backend *be);

static int cuda_init(tsl_backend *be, const tsl_backend_opts *opts) {
  tsl_backend_opts o;
  memset(&o, 0, sizeof o);
  if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
  tsl_cuda_diag_init(o.rank, -1, o.log);
  int device = 0, st = select_device(&o, &device);
  if (st < 0) return st;
  tsl_cuda_diag_init(o.rank, device, o.log);
  tsl_cuda_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for the CUDA backend");
  ctx->device = device;
  ctx->comm_timeout = o.comm_timeout;
  be->ctx = ctx;
  cublasLtHandle_t lt = NULL;
  st = TSL_BLAS(cublasLtCreate(&lt));
  ctx->lt = lt;
  if (st >= 0) st = tsl_cuda_gemm_cache_create(&ctx->gemms);
  if (st >= 0) st = describe_device(ctx);
  if (st < 0) {
    cuda_shutdown(be);
    return st;
  }
  tsl_cuda_diag_running(1);
  return TESSEL_OK;
}

static void cuda_shutdown(tsl_backend *be) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  if (!ctx) return;
  tsl_cuda_diag_running(0);
  (void)TSL_CU(cudaDeviceSynchronize());
  tsl_cuda_gemm_cache_destroy(ctx->gemms);
  if (ctx->lt) (void)TSL_BLAS(cublasLtDestroy((cublasLtHandle_t)ctx->lt));
  tsl_cuda_device_free(be, ctx->legacy.workspace);
  tsl_cuda_device_free(be, ctx->legacy.scratch);
  tsl_cuda_events_release(be);
  tsl_cuda_comms_release(be);
  tsl_cuda_pool_release(&ctx->pool);
  free(ctx);
  be->ctx = NULL;
}

/* What the driver has free plus what the allocator's cache holds. */
static uint64_t cuda_device_free_bytes(tsl_backend *be) {
  size_t free_b = 0, total_b = 0;
  if (TSL_CU(cudaMemGetInfo(&free_b, &total_b)) < 0) return 0;
  return (uint64_t)free_b + tsl_cuda(be)->pool.cached;
}

static const char *cuda_describe(tsl_backend *be) {
  const tsl_cuda_ctx *ctx = tsl_cuda(be);
  return ctx ? ctx->description : "cuda (not started)";
}

static const tsl_backend cuda_backend = {
    .size = sizeof(tsl_backend),
    .version = TSL_BACKEND_VERSION,
    .name = "cuda",
    .act_dtype = TESSEL_BF16,
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .device_free_bytes = cuda_device_free_bytes,
    .describe = cuda_describe,
    .device_alloc = tsl_cuda_device_alloc,
    .device_free = tsl_cuda_device_free,
    .host_alloc = tsl_cuda_host_alloc,
    .host_free = tsl_cuda_host_free,
    .copy = tsl_cuda_copy,
    .memset_zero = tsl_cuda_memset_zero,
    .stream_create = tsl_cuda_stream_create,
    .stream_destroy = tsl_cuda_stream_destroy,
    .stream_sync = tsl_cuda_stream_sync,
    .event_record = tsl_cuda_event_record,
    .event_wait = tsl_cuda_event_wait,
    .event_free = tsl_cuda_event_free,
    .gemm = tsl_cuda_gemm,
    .linear_forward = tsl_cuda_linear_forward,
    .linear_backward = tsl_cuda_linear_backward,
    .layernorm_forward = tsl_cuda_layernorm_forward,
    .layernorm_backward = tsl_cuda_layernorm_backward,
    .layernorm_stats = tsl_cuda_layernorm_stats,
    .layernorm_apply = tsl_cuda_layernorm_apply,
    .layernorm_backward_stats = tsl_cuda_layernorm_backward_stats,
    .layernorm_backward_apply = tsl_cuda_layernorm_backward_apply,
    .rmsnorm_forward = tsl_cuda_rmsnorm_forward,
    .rmsnorm_backward = tsl_cuda_rmsnorm_backward,
    .rmsnorm_stats = tsl_cuda_rmsnorm_stats,
    .rmsnorm_apply = tsl_cuda_rmsnorm_apply,
    .rmsnorm_backward_stats = tsl_cuda_rmsnorm_backward_stats,
    .rmsnorm_backward_apply = tsl_cuda_rmsnorm_backward_apply,
    .attention_forward = tsl_cuda_attention_forward,
    .attention_backward = tsl_cuda_attention_backward,
    .rope = tsl_cuda_rope,
    .gelu_forward = tsl_cuda_gelu_forward,
    .gelu_backward = tsl_cuda_gelu_backward,
    .add = tsl_cuda_add,
    .axpy = tsl_cuda_axpy,
    .scale = tsl_cuda_scale,
    .convert = tsl_cuda_convert,
    .swiglu_forward = tsl_cuda_swiglu_forward,
    .swiglu_backward = tsl_cuda_swiglu_backward,
    .embed_tokens_forward = tsl_cuda_embed_tokens_forward,
    .embed_positions_forward = tsl_cuda_embed_positions_forward,
    .embed_tokens_backward = tsl_cuda_embed_tokens_backward,
    .embed_positions_backward = tsl_cuda_embed_positions_backward,
    .ce_rowmax = tsl_cuda_ce_rowmax,
    .ce_sums = tsl_cuda_ce_sums,
    .ce_finish = tsl_cuda_ce_finish,
    .adamw = tsl_cuda_adamw,
    .sumsq = tsl_cuda_sumsq,
    .last_error = tsl_cuda_last_error,
    .event_query = tsl_cuda_event_query,
    .is_device_memory = tsl_cuda_is_device_memory,
    .dcomm_create = tsl_cuda_dcomm_create,
    .dcomm_destroy = tsl_cuda_dcomm_destroy,
    .dcomm_post = tsl_cuda_dcomm_post,
    .dcomm_group = tsl_cuda_dcomm_group,
};

/* The entry symbol (TSL_BACKEND_ENTRY_NAME), the library's only export. */
TESSEL_EXPORT const tsl_backend *tessel_backend_v1(uint32_t version);

const tsl_backend *tessel_backend_v1(uint32_t version) {
  return version == TSL_BACKEND_VERSION ? &cuda_backend : NULL;
}
