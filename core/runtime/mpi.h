/*
** core/runtime/mpi.h — processes. tessel always runs under MPI: without a
** launcher it is a singleton world of one rank; under mpirun or srun each
** process is a rank. Failure policy: an error that every rank reaches at
** the same point (a bad config) is printed once; an error on some ranks is
** printed by each failing rank with its rank number; an error in the middle
** of a step aborts the whole job (MPI_Abort), so no rank is left waiting.
*/
#ifndef TSL_MPI_H
#define TSL_MPI_H

#include <stdint.h>
#include "common/status.h"
#include "runtime/cpus.h"

typedef struct tsl_world {
  int rank, size;
  int local_rank, local_size; /* among ranks on this machine: picks the GPU */
  int active;                 /* MPI is in use (started by us or by the program) */
  int owns_mpi;               /* we started it, so we finalise it */
  char host[64];              /* this machine's name, for messages */
  tsl_cpus cpus;              /* the cores this rank may use, and how many local ranks share them */
  int quiet_errors;           /* a program using the C API prints tessel_last_error itself */
} tsl_world;

/* Start MPI (or join it), learn this rank's place, its machine's name and
** its cores (collective over the ranks of each machine). */
tsl_status tsl_world_init(int *argc, char ***argv, tsl_world *w);
/* Collective: end MPI if tsl_world_init started it. The ranks first wait
** for each other within the communication timeout (train.comm_timeout);
** past it a waiting rank names the ranks that never came and ends the job
** (MPI_Abort) rather than wait in MPI_Finalize for good. */
void tsl_world_finalize(tsl_world *w);
/* A world of one rank without MPI, for commands that never communicate. */
void tsl_world_single(tsl_world *w, int size);

/* Collective: every rank passes its status; returns the first failing
** status of any rank (or 0). Ranks that failed print their error as the
** policy above says (unless quiet_errors); ranks that did not fail print
** nothing, and their error message names the first rank that failed. */
tsl_status tsl_world_agree(const tsl_world *w, tsl_status mine);

/* Collective, printing nothing: the first failing status of any rank (or
** 0). A rank that did not fail itself gets an error message naming the
** rank that did. */
tsl_status tsl_world_first_failure(const tsl_world *w, tsl_status mine);

/* Collective, printing nothing: whether every rank allocated what a
** collective step needs (`ok`), learnt by all of them before any goes on
** to that collective, so that one rank short of memory stops every rank at
** once instead of leaving the others in the collective until the timeout.
** This rank's failure is "out of host memory WHAT"; another's is named as
** tsl_world_first_failure names it. */
tsl_status tsl_world_all_allocated(const tsl_world *w, int ok, const char *what);

/* Print this rank's error and terminate every rank with `code`. */
void tsl_world_abort(const tsl_world *w, tsl_status st) __attribute__((noreturn));

/* Gather `bytes` from every rank into all[size * bytes] (collective, within
** the communication timeout); `what` names it in an error. */
tsl_status tsl_world_allgather(const tsl_world *w, const void *mine, void *all, int bytes, const char *what);
/* Gather one uint64 from every rank into out[size] (collective). */
tsl_status tsl_world_allgather_u64(const tsl_world *w, uint64_t mine, uint64_t *out);
/* Gather a string of at most cap bytes from every rank into out[size*cap]. */
tsl_status tsl_world_allgather_str(const tsl_world *w, const char *mine, char *out, int cap);
tsl_status tsl_world_barrier(const tsl_world *w);
/* Broadcast bytes from rank 0. */
tsl_status tsl_world_bcast(const tsl_world *w, void *buf, int bytes);

/* Print the current error as this rank's failure (with "[rank r]" when the
** world has more than one rank). */
void tsl_world_print_error(const tsl_world *w, tsl_status st);

#endif
