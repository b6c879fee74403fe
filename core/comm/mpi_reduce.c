/* core/comm/mpi_reduce.c — rank-ordered reductions on MPI (mpi_reduce.h). */
#include "comm/mpi_reduce.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "runtime/mpi_wait.h"

struct tsl_mpi_reduce {
  MPI_Comm comm, gathers;
  tsl_coll_kind kind;
  tessel_dtype dt;
  tessel_redop op;
  int rank, size, root;
  const void *send;
  void *recv;
  size_t es;
  int phase;              /* 0: exchanging, 1: gathering (all-reduce), 2: done */
  MPI_Request req;
  char *scratch;          /* the contributions this rank combines, rank after rank */
  int *counts, *displs;   /* per rank: my block's elements from it, and where */
  int *bcounts, *bdispls; /* per rank: its block of the vector */
  int mine;               /* elements of my block */
};

static MPI_Datatype wire_type(tessel_dtype dt) {
  switch (dt) {
    case TESSEL_F32: return MPI_FLOAT;
    case TESSEL_F64: return MPI_DOUBLE;
    case TESSEL_I32: return MPI_INT32_T;
    default: return MPI_UINT16_T;
  }
}

tsl_status tsl_mpi_reduce_supported(tessel_dtype dt, tessel_redop op) {
  if (dt == TESSEL_U8 || (unsigned)dt >= TESSEL_DTYPE_COUNT)
    return tsl_error(TESSEL_E_UNSUPPORTED, "the MPI engine reduces F32, F64, I32, BF16 and F16 data, not dtype %d",
                     (int)dt);
  if (op != TESSEL_SUM && op != TESSEL_MAX && op != TESSEL_MIN)
    return tsl_error(TESSEL_E_UNSUPPORTED, "unknown reduction %d", (int)op);
  return TESSEL_OK;
}

static double load(const void *p, tessel_dtype dt, size_t i) {
  switch (dt) {
    case TESSEL_F32: return ((const float *)p)[i];
    case TESSEL_F64: return ((const double *)p)[i];
    case TESSEL_I32: return ((const int32_t *)p)[i];
    case TESSEL_BF16: return tsl_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return tsl_f16_to_f32(((const uint16_t *)p)[i]);
  }
}

static double pick(tessel_redop op, double acc, double x) {
  return op == TESSEL_SUM ? acc + x : op == TESSEL_MAX ? (x > acc ? x : acc) : (x < acc ? x : acc);
}

/* dst[0..n) = Σ (or max/min) over ranks of src block k, k = 0..size-1 in
** order. fp32 data adds in fp32 (the vectorised common case), 16-bit data
** in fp32 rounded once at the end, fp64 in fp64, int32 in int32 with
** wrap-around. */
static void combine(const tsl_mpi_reduce *r, const char *src, void *dst, int n) {
  const size_t block = (size_t)r->mine * r->es;
  if (r->dt == TESSEL_F32 && r->op == TESSEL_SUM) {
    float *d = dst;
    memcpy(d, src, (size_t)n * sizeof(float));
    for (int k = 1; k < r->size; k++) {
      const float *x = (const float *)(src + (size_t)k * block);
      for (int i = 0; i < n; i++) d[i] += x[i];
    }
    return;
  }
  for (int i = 0; i < n; i++) {
    if (r->dt == TESSEL_I32) {
      uint32_t acc = (uint32_t)((const int32_t *)src)[i];
      for (int k = 1; k < r->size; k++) {
        int32_t x = ((const int32_t *)(src + (size_t)k * block))[i];
        if (r->op == TESSEL_SUM) acc += (uint32_t)x;
        else if ((r->op == TESSEL_MAX) == (x > (int32_t)acc)) acc = (uint32_t)x;
      }
      ((int32_t *)dst)[i] = (int32_t)acc;
      continue;
    }
    double acc = load(src, r->dt, (size_t)i);
    for (int k = 1; k < r->size; k++) {
      double x = load(src + (size_t)k * block, r->dt, (size_t)i);
      /* fp32-rounded after every step for fp32 and 16-bit data */
      acc = r->dt == TESSEL_F64 ? pick(r->op, acc, x) : (double)(float)pick(r->op, (float)acc, (float)x);
    }
    if (r->dt == TESSEL_F64) ((double *)dst)[i] = acc;
    else if (r->dt == TESSEL_F32) ((float *)dst)[i] = (float)acc;
    else if (r->dt == TESSEL_BF16) ((uint16_t *)dst)[i] = tsl_f32_to_bf16((float)acc);
    else ((uint16_t *)dst)[i] = tsl_f32_to_f16((float)acc);
  }
}

static void release(tsl_mpi_reduce *r) {
  free(r->scratch);
  free(r->counts);
  free(r->displs);
  free(r->bcounts);
  free(r->bdispls);
  free(r);
}

static tsl_status mpi_fail(tsl_mpi_reduce *r, int rc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  release(r);
  return tsl_error(TESSEL_E_COMM, "%s failed: %s", what, msg);
}

/* After the exchange: combine my block into place; an all-reduce then
** starts gathering everyone's. Returns MPI's code; frees nothing. */
static int exchange_done(tsl_mpi_reduce *r) {
  MPI_Datatype t = wire_type(r->dt);
  char *dst = (char *)r->recv + (r->kind == TSL_COLL_ALL_REDUCE ? (size_t)r->bdispls[r->rank] * r->es : 0);
  if (r->kind != TSL_COLL_REDUCE || r->rank == r->root) combine(r, r->scratch, dst, r->mine);
  r->phase = r->kind == TSL_COLL_ALL_REDUCE ? 1 : 2;
  if (r->phase == 2) return MPI_SUCCESS;
  return MPI_Iallgatherv(MPI_IN_PLACE, 0, t, r->recv, r->bcounts, r->bdispls, t, r->gathers, &r->req);
}

tsl_status tsl_mpi_reduce_start(MPI_Comm comm, MPI_Comm gathers, tsl_coll_kind kind, const void *send, void *recv,
                                uint64_t count, tessel_dtype dt, tessel_redop op, int root, tsl_mpi_reduce **out) {
  tsl_status st = tsl_mpi_reduce_supported(dt, op);
  if (st < 0) return st;
  tsl_mpi_reduce *r = calloc(1, sizeof *r);
  if (!r) return tsl_error(TESSEL_E_NOMEM, "out of host memory for a reduction");
  *r = (tsl_mpi_reduce){.comm = comm, .gathers = gathers, .kind = kind, .dt = dt, .op = op, .root = root, .send = send, .recv = recv,
                        .es = tessel_dtype_size(dt)};
  MPI_Comm_rank(comm, &r->rank);
  MPI_Comm_size(comm, &r->size);
  int n = r->size;
  uint64_t whole = kind == TSL_COLL_REDUCE_SCATTER ? count * (uint64_t)n : count;
  if (whole > (uint64_t)INT_MAX) {
    release(r);
    return tsl_error(TESSEL_E_UNSUPPORTED, "a reduction of %llu elements on the MPI engine (at most %d at once)",
                     (unsigned long long)whole, INT_MAX);
  }
  r->counts = calloc((size_t)n, sizeof(int));
  r->displs = calloc((size_t)n, sizeof(int));
  r->bcounts = calloc((size_t)n, sizeof(int));
  r->bdispls = calloc((size_t)n, sizeof(int));
  if (!r->counts || !r->displs || !r->bcounts || !r->bdispls) {
    release(r);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for a reduction");
  }
  /* the vector's blocks: rank k reduces block k (a reduce: the root all) */
  for (int k = 0, at = 0; k < n; k++) {
    r->bcounts[k] = kind == TSL_COLL_REDUCE ? 0 : (int)(whole / (uint64_t)n + ((uint64_t)k < whole % (uint64_t)n));
    r->bdispls[k] = at;
    at += r->bcounts[k];
  }
  r->mine = kind == TSL_COLL_REDUCE ? (int)whole : r->bcounts[r->rank];
  for (int k = 0; k < n; k++) {
    r->counts[k] = r->mine;
    r->displs[k] = k * r->mine;
  }
  size_t scratch = (size_t)r->mine * (size_t)n * r->es;
  if (kind != TSL_COLL_REDUCE || r->rank == root) {
    r->scratch = malloc(scratch ? scratch : 1);
    if (!r->scratch) {
      release(r);
      return tsl_error(TESSEL_E_NOMEM, "out of host memory for a reduction of %zu bytes", scratch);
    }
  }
  MPI_Datatype t = wire_type(dt);
  int rc;
  if (kind == TSL_COLL_REDUCE)
    rc = MPI_Igather(send, (int)whole, t, r->scratch, (int)whole, t, root, comm, &r->req);
  else
    rc = MPI_Ialltoallv(send, r->bcounts, r->bdispls, t, r->scratch, r->counts, r->displs, t, comm, &r->req);
  if (rc != MPI_SUCCESS) return mpi_fail(r, rc, "exchanging blocks to reduce");
  *out = r;
  return TESSEL_OK;
}

tsl_status tsl_mpi_reduce_exchange(tsl_mpi_reduce *r, int block, int *done, const char *what, const char *group) {
  *done = r->phase > 0;
  if (*done) return TESSEL_OK;
  int flag = 1, rc = block ? tsl_mpi_wait(&r->req, what, group)
                           : MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return mpi_fail(r, rc, "exchanging blocks to reduce");
  if (!flag) return TESSEL_OK;
  if ((rc = exchange_done(r)) != MPI_SUCCESS) return mpi_fail(r, rc, "all-gather of reduced blocks");
  *done = 1;
  return TESSEL_OK;
}

int tsl_mpi_reduce_exchanged(const tsl_mpi_reduce *r) { return r->phase > 0; }

tsl_status tsl_mpi_reduce_finish(tsl_mpi_reduce *r, int block, int *done, const char *what, const char *group) {
  int flag = 1;
  *done = 0;
  if (r->phase == 1) {
    int rc = block ? tsl_mpi_wait(&r->req, what, group)
                   : MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(r, rc, "all-gather of reduced blocks");
    if (!flag) return TESSEL_OK;
  }
  release(r);
  *done = 1;
  return TESSEL_OK;
}

void tsl_mpi_reduce_cancel(tsl_mpi_reduce *r) {
  if (r->phase < 2) MPI_Cancel(&r->req);
  release(r);
}
