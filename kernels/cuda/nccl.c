/*
** kernels/cuda/nccl.c — the device communication engine: NCCL
** communicators and collectives on device buffers.
**
** Bootstrap without MPI: the group's rank 0 makes the NCCL unique id and
** the core's `bcast` (MPI over the group) hands it to the others, together
** with whether rank 0 succeeded, so a failure there cannot leave the others
** waiting in ncclCommInitRank. Each rank's GPU was chosen at init (one GPU
** per rank), which is the device NCCL binds the communicator to.
*/
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "tsl_cuda.h"

struct tsl_dcomm {
  ncclComm_t comm;
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

int tsl_cuda_dcomm_create(tsl_backend *be, int rank, int size, tsl_bcast_fn bcast, void *bcast_arg,
                          tsl_dcomm **out) {
  (void)be;
  struct {
    int32_t ok;
    ncclUniqueId id;
  } boot;
  memset(&boot, 0, sizeof boot);
  *out = NULL;
  if (rank == 0) boot.ok = TSL_NCCL(ncclGetUniqueId(&boot.id)) >= 0;
  int rc = bcast(bcast_arg, &boot, (int)sizeof boot);
  if (rc < 0) return TSL_CUDA_FAIL(rc, "broadcasting the NCCL unique id over a group of %d ranks failed", size);
  if (!boot.ok)
    return rank == 0 ? TESSEL_E_COMM
                     : TSL_CUDA_FAIL(TESSEL_E_COMM, "rank 0 of this group of %d ranks could not create an NCCL id "
                                                    "(see its message)", size);
  struct tsl_dcomm *c = calloc(1, sizeof *c);
  if (!c) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for a communicator");
  rc = TSL_NCCL(ncclCommInitRank(&c->comm, size, boot.id, rank));
  if (rc < 0) {
    free(c);
    return rc;
  }
  *out = c;
  return TESSEL_OK;
}

void tsl_cuda_dcomm_destroy(tsl_backend *be, tsl_dcomm *c) {
  (void)be;
  if (!c) return;
  (void)TSL_NCCL(ncclCommDestroy(c->comm));
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
static int all_to_all(tsl_dcomm *c, const tsl_coll *op, size_t n, ncclDataType_t t, cudaStream_t st) {
  int size = 0, rc = TSL_NCCL(ncclCommCount(c->comm, &size));
  size_t bytes = n * tessel_dtype_size(op->dtype);
  if (rc < 0 || (rc = TSL_NCCL(ncclGroupStart())) < 0) return rc;
  for (int peer = 0; peer < size && rc >= 0; peer++) {
    rc = TSL_NCCL(ncclSend((const char *)op->send + (size_t)peer * bytes, n, t, peer, c->comm, st));
    if (rc >= 0) rc = TSL_NCCL(ncclRecv((char *)op->recv + (size_t)peer * bytes, n, t, peer, c->comm, st));
  }
  int end = TSL_NCCL(ncclGroupEnd());
  return rc < 0 ? rc : end;
}

/* Counts are per rank's block, as tsl_coll documents, which is how NCCL
** counts too (reduce-scatter: recvcount, all-gather: sendcount). */
int tsl_cuda_dcomm_post(tsl_backend *be, tsl_dcomm *c, const tsl_coll *op, tsl_stream *s) {
  ncclDataType_t t;
  if (!nccl_type(op->dtype, &t))
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "NCCL has no type for tessel dtype %d", (int)op->dtype);
  const ncclRedOp_t rop = nccl_op(op->op);
  const size_t n = (size_t)op->count;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  switch (op->kind) {
    case TSL_COLL_ALL_REDUCE: return TSL_NCCL(ncclAllReduce(op->send, op->recv, n, t, rop, c->comm, st));
    case TSL_COLL_REDUCE_SCATTER: return TSL_NCCL(ncclReduceScatter(op->send, op->recv, n, t, rop, c->comm, st));
    case TSL_COLL_ALL_GATHER: return TSL_NCCL(ncclAllGather(op->send, op->recv, n, t, c->comm, st));
    case TSL_COLL_BROADCAST: return TSL_NCCL(ncclBroadcast(op->send, op->recv, n, t, op->peer, c->comm, st));
    case TSL_COLL_REDUCE: return TSL_NCCL(ncclReduce(op->send, op->recv, n, t, rop, op->peer, c->comm, st));
    case TSL_COLL_SEND: return TSL_NCCL(ncclSend(op->send, n, t, op->peer, c->comm, st));
    case TSL_COLL_RECV: return TSL_NCCL(ncclRecv(op->recv, n, t, op->peer, c->comm, st));
    case TSL_COLL_ALL_TO_ALL: return all_to_all(c, op, n, t, st);
  }
  return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "unknown collective kind %d", (int)op->kind);
}

int tsl_cuda_dcomm_group(tsl_backend *be, int begin) {
  (void)be;
  return begin ? TSL_NCCL(ncclGroupStart()) : TSL_NCCL(ncclGroupEnd());
}
