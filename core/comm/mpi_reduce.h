/*
** core/comm/mpi_reduce.h — reductions on the MPI engine, in rank order.
**
** MPI's own reductions add contributions in whatever order its algorithm
** picks, which differs between an all-reduce and a reduce-scatter of the
** same data, between message sizes and between MPI builds; and MPI cannot
** add bf16 or fp16. Here every reduction is an exchange followed by a local
** combination in group-rank order — ((x0 + x1) + x2) + … — so each element
** comes out bit-identical whatever the kind of collective, and 16-bit data
** is accumulated in fp32 and rounded once:
**   all-reduce      all-to-all of blocks (rank r reduces block r), combine,
**                   all-gather of the reduced blocks (the bus bytes of a ring);
**   reduce-scatter  all-to-all, combine;
**   reduce          gather to the root, combine there.
** The exchange runs non-blocking; wait/test drive the phases and the
** communication front end advances them between units of compute.
*/
#ifndef TSL_MPI_REDUCE_H
#define TSL_MPI_REDUCE_H

#include <mpi.h>
#include <stdint.h>

#include "backend.h"
#include "common/status.h"

typedef struct tsl_mpi_reduce tsl_mpi_reduce;

/* Start one: its exchange on `comm` now, in the caller's program order. An
** all-reduce starts its second collective (the all-gather) on `gathers`
** when the exchange is done — a moment that differs between ranks, so it
** needs a communicator no other collective uses, and the caller must move a
** communicator's reductions out of their exchange in the order it posted
** them. kind: TSL_COLL_ALL_REDUCE, _REDUCE_SCATTER or _REDUCE; count as the
** front end counts it (the whole vector, or the per-rank block of a
** reduce-scatter); root for a reduce. */
tsl_status tsl_mpi_reduce_start(MPI_Comm comm, MPI_Comm gathers, tsl_coll_kind kind, const void *send, void *recv,
                                uint64_t count, tessel_dtype dt, tessel_redop op, int root, tsl_mpi_reduce **out);

/* The exchange phase. Not blocking, *done says whether it is now past the exchange;
** blocking, it waits for it (tsl_mpi_wait: `what` on `group` names it when
** it times out). On failure the reduction is freed. */
tsl_status tsl_mpi_reduce_exchange(tsl_mpi_reduce *r, int block, int *done, const char *what, const char *group);
int tsl_mpi_reduce_exchanged(const tsl_mpi_reduce *r);
/* Past its exchange: finish (blocking) or see whether it has (*done); it
** is freed once done, and on failure. */
tsl_status tsl_mpi_reduce_finish(tsl_mpi_reduce *r, int block, int *done, const char *what, const char *group);
/* Abandon (the communicator is going away). */
void tsl_mpi_reduce_cancel(tsl_mpi_reduce *r);
/* The dtypes and ops it can reduce: 0, or a status with a message. */
tsl_status tsl_mpi_reduce_supported(tessel_dtype dt, tessel_redop op);

#endif
