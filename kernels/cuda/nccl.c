/*
** kernels/cuda/nccl.c — the device communication engine: NCCL
** communicators and collectives on device buffers.
**
** Bootstrap without MPI: the group's rank 0 makes the NCCL unique id and
** the core's boot->bcast (MPI over the group) hands it to the others,
** together with whether rank 0 succeeded. Each rank's GPU was chosen at
** init (one GPU per rank), which is the device NCCL binds the communicator
** to.
**
** Never a hang. Communicators are created non-blocking (ncclConfig_t
** blocking = 0): ncclCommInitRankConfig returns at once, every rank says
** over MPI (boot->agree) whether its start succeeded, and only then do the
** ranks wait for NCCL to connect, polling with a time limit; a second
** agreement makes the outcome the same on every rank. So a rank whose
** creation fails is never waited for inside NCCL by its peers. Later, a
** call that returns ncclInProgress (a collective that connects lazily, the
** end of a group) is polled to completion the same way, and every wait of
** the host for the device polls the communicators' asynchronous errors
** (nccl_watch.h): the first failure aborts all of the rank's
** communicators and becomes TESSEL_E_COMM with NCCL's reason.
**
** The time limit is TESSEL_NCCL_TIMEOUT seconds (default 300), long enough
** for a large job's first connections.
*/
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nccl_watch.h"
#include "tsl_cuda.h"

#define DEFAULT_TIMEOUT_S 300.0

struct tsl_dcomm {
  ncclComm_t comm;
  int rank, size;
};

int tsl_cuda_is_device_memory(tsl_backend *be, const void *p) {
  (void)be;
  struct cudaPointerAttributes a;
  if (!p) return 0;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError(); /* not a pointer CUDA knows: host memory */
    return 0;
  }
  return a.type == cudaMemoryTypeDevice;
}

static double timeout_s(void) {
  const char *e = getenv("TESSEL_NCCL_TIMEOUT");
  double v = e ? strtod(e, NULL) : 0.0;
  return v > 0 ? v : DEFAULT_TIMEOUT_S;
}

/* ---- the watch's engine: NCCL itself */

static tsl_nccl_state nccl_state(void *ctx, void *comm, char *why, size_t cap) {
  (void)ctx;
  ncclResult_t r = ncclSuccess, q = ncclCommGetAsyncError((ncclComm_t)comm, &r);
  if (q != ncclSuccess) r = q;
  if (r == ncclSuccess) return TSL_NCCL_READY;
  if (r == ncclInProgress) return TSL_NCCL_PENDING;
  const char *detail = ncclGetLastError((ncclComm_t)comm);
  snprintf(why, cap, "%s%s%s", ncclGetErrorString(r), detail && *detail ? ": " : "", detail ? detail : "");
  return TSL_NCCL_FAILED;
}

static void nccl_abort(void *ctx, void *comm) {
  (void)ctx;
  (void)ncclCommAbort((ncclComm_t)comm);
}

static double monotonic_now(void *ctx) {
  (void)ctx;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 20 µs: a wait's latency stays small next to a kernel's */
static void short_pause(void *ctx) {
  (void)ctx;
  struct timespec t = {0, 20000};
  nanosleep(&t, NULL);
}

/* A failed rank's last act on NCCL: abort its communicators, so that
** peers waiting for it in a collective fail instead of hanging. */
static void abort_after_failure(void *arg, const char *what) {
  tsl_nccl_watch *w = arg;
  char why[sizeof w->failure];
  if (w->aborted || !w->n) return;
  snprintf(why, sizeof why, "this rank failed (%s), so its NCCL communicators are aborted", what);
  tsl_nccl_watch_abort_all(w, why);
}

static int watch_of(tsl_backend *be, tsl_nccl_watch **out) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  if (!ctx->watch) {
    static const tsl_nccl_ops ops = {nccl_state, nccl_abort, monotonic_now, short_pause, NULL};
    ctx->watch = malloc(sizeof *ctx->watch);
    if (!ctx->watch) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for the NCCL watch");
    tsl_nccl_watch_init(ctx->watch, &ops);
    tsl_cuda_diag_on_failure(abort_after_failure, ctx->watch);
  }
  *out = ctx->watch;
  return TESSEL_OK;
}

void tsl_cuda_comms_release(tsl_backend *be) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  if (!ctx->watch) return;
  tsl_cuda_diag_on_failure(NULL, NULL);
  tsl_nccl_watch_free(ctx->watch);
  free(ctx->watch);
  ctx->watch = NULL;
}

/* The watch's verdict as this backend's failure (kept and logged). */
static int watch_failed(tsl_nccl_watch *w, int st) {
  return TSL_CUDA_FAIL(st, "%s", w->failure[0] ? w->failure : "NCCL failed");
}

int tsl_cuda_comms_check(tsl_backend *be) {
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  if (!w || !w->n) return TESSEL_OK;
  int st = tsl_nccl_watch_check(w);
  return st < 0 ? watch_failed(w, st) : TESSEL_OK;
}

static int stream_done(void *arg) {
  cudaError_t e = cudaStreamQuery(*(cudaStream_t *)arg);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError(); /* "not ready" is an answer, not a failure */
    return 0;
  }
  return e == cudaSuccess ? 1 : tsl_cuda_check_rt(e, "cudaStreamQuery", __FILE__, __LINE__);
}

int tsl_cuda_comms_wait(tsl_backend *be, cudaStream_t s) {
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  if (!w || !w->n) return TSL_CU(cudaStreamSynchronize(s));
  /* the GPU's queued work includes collectives that wait for the peers: a
  ** peer that never posts its side keeps them spinning, so this wait has the
  ** time limit the MPI engine's waits have */
  int st = tsl_nccl_watch_wait(w, stream_done, &s, tsl_cuda(be)->comm_timeout,
                               "waiting for the GPU's queued work and collectives (train.comm_timeout)");
  return st < 0 && w->aborted ? watch_failed(w, st) : st;
}

/* A call on comm returned r: ncclInProgress is polled until it settles. */
static int finish(tsl_backend *be, struct tsl_dcomm *c, ncclResult_t r, const char *call) {
  if (r != ncclInProgress) return tsl_cuda_check_nccl(r, call, __FILE__, __LINE__);
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  int st = tsl_nccl_watch_settle(w, c->comm, c->rank, c->size, timeout_s(), call);
  return st < 0 ? watch_failed(w, st) : TESSEL_OK;
}

int tsl_cuda_dcomm_create(tsl_backend *be, int rank, int size, const tsl_dcomm_boot *boot, tsl_dcomm **out) {
  struct {
    int32_t ok;
    ncclUniqueId id;
  } id;
  tsl_nccl_watch *w = NULL;
  memset(&id, 0, sizeof id);
  *out = NULL;
  int rc = watch_of(be, &w);
  if (rc < 0) return rc;
  if (rank == 0) id.ok = TSL_NCCL(ncclGetUniqueId(&id.id)) >= 0;
  rc = boot->bcast(boot->arg, &id, (int)sizeof id);
  if (rc < 0) return TSL_CUDA_FAIL(rc, "broadcasting the NCCL unique id over a group of %d ranks failed", size);
  if (!id.ok)
    return rank == 0 ? TESSEL_E_COMM
                     : TSL_CUDA_FAIL(TESSEL_E_COMM, "rank 0 of this group of %d ranks could not create an NCCL id "
                                                    "(see its message)", size);
  struct tsl_dcomm *c = calloc(1, sizeof *c);
  if (!c) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for a communicator");
  c->rank = rank;
  c->size = size;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&c->comm, size, id.id, rank, &config);
  int st = r == ncclInProgress ? TESSEL_OK : TSL_NCCL(r);
  /* every rank has started, or failed to: nobody waits for a rank that is not coming */
  int all = boot->agree(boot->arg, st);
  if (all >= 0) {
    st = tsl_nccl_watch_settle(w, c->comm, rank, size, timeout_s(), "creating an NCCL communicator");
    if (st < 0) {
      watch_failed(w, st);
      c->comm = NULL; /* the settling aborted it */
    } else if ((st = tsl_nccl_watch_add(w, c->comm, rank, size)) < 0) {
      TSL_CUDA_FAIL(st, "out of host memory watching an NCCL communicator");
    }
    all = boot->agree(boot->arg, st);
  }
  if (all < 0) {
    if (c->comm) {
      (void)tsl_nccl_watch_remove(w, c->comm);
      nccl_abort(NULL, c->comm);
    }
    free(c);
    return st < 0 ? st
                  : TSL_CUDA_FAIL(TESSEL_E_COMM, "another rank of this group of %d ranks could not create its NCCL "
                                                 "communicator (see its message); this rank's is aborted", size);
  }
  *out = c;
  return TESSEL_OK;
}

/* A healthy communicator is finalised (its outstanding work flushed) and
** destroyed, within the time limit; after any failure on this rank it is
** aborted instead, which never waits for a peer. */
void tsl_cuda_dcomm_destroy(tsl_backend *be, tsl_dcomm *c) {
  if (!c) return;
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  char why[256];
  if (!tsl_nccl_watch_remove(w, c->comm)) {
    if (tsl_cuda_failed() || nccl_state(NULL, c->comm, why, sizeof why) != TSL_NCCL_READY) {
      nccl_abort(NULL, c->comm);
    } else {
      ncclResult_t r = ncclCommFinalize(c->comm);
      int st = r == ncclInProgress ? tsl_nccl_watch_settle(w, c->comm, c->rank, c->size, timeout_s(),
                                                           "finalising an NCCL communicator")
                                   : TSL_NCCL(r);
      /* after finalising, destroying frees local resources only; a
      ** non-blocking communicator may still answer "in progress" */
      if (st >= 0) {
        r = ncclCommDestroy(c->comm);
        if (r != ncclInProgress) (void)TSL_NCCL(r);
      } else if (r == ncclInProgress) watch_failed(w, st); /* settle aborted it */
      else nccl_abort(NULL, c->comm);
    }
  }
  free(c);
}

static int nccl_type(tessel_dtype dt, ncclDataType_t *out) {
  switch (dt) {
    case TESSEL_F32: *out = ncclFloat32; return 1;
    case TESSEL_BF16: *out = ncclBfloat16; return 1;
    case TESSEL_F16: *out = ncclFloat16; return 1;
    case TESSEL_I32: *out = ncclInt32; return 1;
    case TESSEL_F64: *out = ncclFloat64; return 1;
    case TESSEL_U8: *out = ncclUint8; return 1;
  }
  return 0;
}

static ncclRedOp_t nccl_op(tessel_redop op) {
  return op == TESSEL_MAX ? ncclMax : op == TESSEL_MIN ? ncclMin : ncclSum;
}

/* NCCL has no all-to-all: one send and one receive per peer, launched
** together in a group. */
static int all_to_all(tsl_backend *be, tsl_dcomm *c, const tsl_coll *op, size_t n, ncclDataType_t t,
                      cudaStream_t st) {
  int size = c->size, rc = finish(be, c, ncclGroupStart(), "ncclGroupStart");
  size_t bytes = n * tessel_dtype_size(op->dtype);
  for (int peer = 0; peer < size && rc >= 0; peer++) {
    rc = finish(be, c, ncclSend((const char *)op->send + (size_t)peer * bytes, n, t, peer, c->comm, st), "ncclSend");
    if (rc >= 0) rc = finish(be, c, ncclRecv((char *)op->recv + (size_t)peer * bytes, n, t, peer, c->comm, st), "ncclRecv");
  }
  int end = finish(be, c, ncclGroupEnd(), "ncclGroupEnd");
  return rc < 0 ? rc : end;
}

/* Counts are per rank's block, as tsl_coll documents, which is how NCCL
** counts too (reduce-scatter: recvcount, all-gather: sendcount). */
/* Once the watch has aborted the rank's communicators (any failure of the
** backend does), their handles are freed: no call may reach NCCL with them. */
static int aborted(tsl_backend *be) {
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  return w && w->aborted ? watch_failed(w, TESSEL_E_COMM) : TESSEL_OK;
}

int tsl_cuda_dcomm_post(tsl_backend *be, tsl_dcomm *c, const tsl_coll *op, tsl_stream *s) {
  ncclDataType_t t;
  int gone = aborted(be);
  if (gone < 0) return gone;
  if (!nccl_type(op->dtype, &t))
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "NCCL has no type for tessel dtype %d", (int)op->dtype);
  const ncclRedOp_t rop = nccl_op(op->op);
  const size_t n = (size_t)op->count;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  switch (op->kind) {
    case TSL_COLL_ALL_REDUCE:
      return finish(be, c, ncclAllReduce(op->send, op->recv, n, t, rop, c->comm, st), "ncclAllReduce");
    case TSL_COLL_REDUCE_SCATTER:
      return finish(be, c, ncclReduceScatter(op->send, op->recv, n, t, rop, c->comm, st), "ncclReduceScatter");
    case TSL_COLL_ALL_GATHER:
      return finish(be, c, ncclAllGather(op->send, op->recv, n, t, c->comm, st), "ncclAllGather");
    case TSL_COLL_BROADCAST:
      return finish(be, c, ncclBroadcast(op->send, op->recv, n, t, op->peer, c->comm, st), "ncclBroadcast");
    case TSL_COLL_REDUCE:
      return finish(be, c, ncclReduce(op->send, op->recv, n, t, rop, op->peer, c->comm, st), "ncclReduce");
    case TSL_COLL_SEND: return finish(be, c, ncclSend(op->send, n, t, op->peer, c->comm, st), "ncclSend");
    case TSL_COLL_RECV: return finish(be, c, ncclRecv(op->recv, n, t, op->peer, c->comm, st), "ncclRecv");
    case TSL_COLL_ALL_TO_ALL: return all_to_all(be, c, op, n, t, st);
  }
  return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "unknown collective kind %d", (int)op->kind);
}

/* With non-blocking communicators the end of a group may return
** ncclInProgress: then every communicator is polled until it settles. */
int tsl_cuda_dcomm_group(tsl_backend *be, int begin) {
  int gone = aborted(be);
  if (gone < 0) return gone;
  if (begin) return TSL_NCCL(ncclGroupStart());
  ncclResult_t r = ncclGroupEnd();
  if (r != ncclInProgress) return TSL_NCCL(r);
  tsl_nccl_watch *w = tsl_cuda(be)->watch;
  for (int i = 0; i < w->n; i++) {
    tsl_nccl_watched c = w->live[i];
    int st = tsl_nccl_watch_settle(w, c.comm, c.rank, c.size, timeout_s(), "ncclGroupEnd");
    if (st < 0) return watch_failed(w, st);
  }
  return TESSEL_OK;
}
