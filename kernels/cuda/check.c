/*
** kernels/cuda/check.c — what a failed CUDA, cuBLASLt or NCCL call says.
**
** One backend serves one rank and one GPU per process, so the identity used
** in messages (rank, device) and the last failure live here, per process,
** like the core's own error slot. Before init has finished a failure is only
** kept (the core reads it through last_error and reports it as the reason
** the device did not start); afterwards it is also logged at error level,
** because kernel failures reach the core as bare status codes; before it
** has finished, only the first failure is kept. Running out
** of device memory is the exception: the memory ledger reports it with the
** tensor, the tier and what is in use, and a caller may well try a smaller
** request, so it is kept but not logged.
*/
#include <cublasLt.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tsl_cuda.h"

static struct {
  int rank, device, running, failed;
  void (*log)(int level, const char *fmt, ...);
  void (*on_failure)(void *arg, const char *what);
  void *on_failure_arg;
  char last[1024];
} diag = {.rank = -1, .device = -1};

void tsl_cuda_diag_init(int rank, int device, void (*log)(int level, const char *fmt, ...)) {
  diag.rank = rank;
  diag.device = device;
  diag.log = log;
  diag.last[0] = '\0';
  diag.failed = 0;
}

void tsl_cuda_diag_running(int running) { diag.running = running; }

int tsl_cuda_failed(void) { return diag.failed; }

void tsl_cuda_diag_on_failure(void (*fn)(void *arg, const char *what), void *arg) {
  diag.on_failure = fn;
  diag.on_failure_arg = arg;
}

const char *tsl_cuda_last_error(tsl_backend *be) {
  (void)be;
  return diag.last;
}

/* The path from "kernels/cuda/" on: __FILE__ is absolute under CMake. */
static const char *short_path(const char *file) {
  const char *p = strstr(file, "kernels/cuda/");
  return p ? p : file;
}

static int record(int status, const char *file, int line, const char *what) {
  char where[96] = "";
  /* during start-up the first failure is the cause: the cleanup after it
  ** (a synchronize on a broken context, say) fails too and must not take
  ** its place */
  if (!diag.running && diag.last[0]) return status;
  if (diag.device >= 0) snprintf(where, sizeof where, ", rank %d, GPU %d", diag.rank, diag.device);
  snprintf(diag.last, sizeof diag.last, "%s (%s:%d%s)", what, short_path(file), line, where);
  if (diag.running && status != TESSEL_E_NOMEM) {
    diag.failed = 1;
    if (diag.log) diag.log(TESSEL_LOG_ERROR, "cuda backend: %s", diag.last);
    if (diag.on_failure) diag.on_failure(diag.on_failure_arg, diag.last);
  }
  return status;
}

int tsl_cuda_check_rt(int err, const char *call, const char *file, int line) {
  if (err == cudaSuccess) return TESSEL_OK;
  /* clear the thread's last-error slot, so that the next kernel launch's
  ** cudaGetLastError() does not report this failure again (a sticky error
  ** from a broken context stays and is reported by every later call) */
  (void)cudaGetLastError();
  char what[768];
  cudaError_t e = (cudaError_t)err;
  snprintf(what, sizeof what, "%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
  return record(e == cudaErrorMemoryAllocation ? TESSEL_E_NOMEM : TESSEL_E_DEVICE, file, line, what);
}

int tsl_cuda_check_blas(int status, const char *call, const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return TESSEL_OK;
  char what[768];
  cublasStatus_t s = (cublasStatus_t)status;
  snprintf(what, sizeof what, "%s failed: %s (%s)", call, cublasLtGetStatusString(s), cublasLtGetStatusName(s));
  return record(TESSEL_E_DEVICE, file, line, what);
}

int tsl_cuda_check_nccl(int result, const char *call, const char *file, int line) {
  if (result == ncclSuccess) return TESSEL_OK;
  char what[768];
  const char *detail = ncclGetLastError(NULL);
  snprintf(what, sizeof what, "%s failed: %s%s%s", call, ncclGetErrorString((ncclResult_t)result),
           detail && *detail ? ": " : "", detail ? detail : "");
  return record(TESSEL_E_COMM, file, line, what);
}

int tsl_cuda_fail(int status, const char *file, int line, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return record(status, file, line, what);
}
