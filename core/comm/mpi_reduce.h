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

/* Start one. kind: TSL_COLL_ALL_REDUCE, _REDUCE_SCATTER or _REDUCE; count as
** the front end counts it (the whole vector, or the per-rank block of a
** reduce-scatter); root for a reduce. */
tsl_status tsl_mpi_reduce_start(MPI_Comm comm, tsl_coll_kind kind, const void *send, void *recv, uint64_t count,
                                tessel_dtype dt, tessel_redop op, int root, tsl_mpi_reduce **out);
/* Advance without blocking; *done = 1 when finished (then it is freed). */
tsl_status tsl_mpi_reduce_test(tsl_mpi_reduce *r, int *done);
/* Move on to the next phase if the exchange is done, without blocking or
** freeing (the owner still waits); a failure is kept for the wait. */
void tsl_mpi_reduce_advance(tsl_mpi_reduce *r);
/* Finish and free. */
tsl_status tsl_mpi_reduce_wait(tsl_mpi_reduce *r);
/* Abandon (the communicator is going away). */
void tsl_mpi_reduce_cancel(tsl_mpi_reduce *r);
/* The dtypes and ops it can reduce: 0, or a status with a message. */
tsl_status tsl_mpi_reduce_supported(tessel_dtype dt, tessel_redop op);

#endif
