/*
** core/runtime/mpi_wait.h — waiting for MPI with a deadline.
**
** A rank that stops taking part (stuck in a loop, on a hung file system, in
** a debugger, stopped by a signal) leaves every other rank waiting in its
** next collective, and MPI waits forever: a job that hangs until the
** scheduler's limit. Every wait of the core's MPI traffic goes through here
** instead: it finishes as MPI_Wait does, and past the communication timeout
** (train.comm_timeout; 30 minutes, torch.distributed's default, until the
** config is read) the waiting rank prints what it was waiting for and ends
** the job with MPI_Abort. Nothing else is safe then: any further collective,
** even to agree on stopping, would wait for the same missing rank.
*/
#ifndef TSL_MPI_WAIT_H
#define TSL_MPI_WAIT_H

#include <mpi.h>

#define TSL_COMM_TIMEOUT_DEFAULT 1800.0

/* Notice this process being stopped and continued (SIGSTOP, Ctrl-Z, a
** debugger): its SIGCONT is recorded, unless the program handles SIGCONT
** itself. A rank continued after the others gave up on it (MPI_Abort sends
** SIGCONT before SIGTERM) then times out too, and says that it was the one
** stopped rather than blame the others. Idempotent. */
void tsl_mpi_watch_stops(void);

/* Seconds a rank waits for the others in one call; 0: forever. */
void tsl_mpi_set_timeout(double seconds);
double tsl_mpi_timeout(void);

/* MPI_Wait(req) within the timeout; returns MPI's code. Past the timeout
** it does not return: "WHAT on group GROUP" is reported as this rank's
** failure and the job aborted with exit status 1. */
int tsl_mpi_wait(MPI_Request *req, const char *what, const char *group);

/* A non-blocking call's result `started` (its request in *req), waited for
** as tsl_mpi_wait does when it started: tsl_mpi_finish(MPI_Ibarrier(comm,
** &req), &req, "barrier", "world") is a blocking barrier within the timeout. */
int tsl_mpi_finish(int started, MPI_Request *req, const char *what, const char *group);

/* tsl_mpi_wait(req) for a request that completes when rank `rank` takes
** part: past the timeout the report names that rank as the one that never
** arrived (-1: no rank in particular, as tsl_mpi_wait). */
int tsl_mpi_wait_for(MPI_Request *req, int rank, const char *what, const char *group);

#endif
