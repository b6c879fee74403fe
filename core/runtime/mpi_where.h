/*
** core/runtime/mpi_where.h — where the other ranks are, asked by a rank
** that has waited past the communication timeout.
**
** A rank waiting in a collective cannot tell a rank that is stuck (in a
** loop, on a hung file system, stopped) from one that took another path
** through its collectives: one that left a collective out (a strategy hook
** that communicates on some ranks only) waits in the next one, on another
** group or at the end of the run, while the others wait for it in the one
** it skipped. Each then blamed the other ranks, or named as "never
** arrived" a rank that was waiting for the one naming it.
**
** So every rank counts the collectives it posts per communicator (ranks
** that follow the same path post as many on each), and, while it waits,
** answers on a private duplicate of the world what it waits in and its
** counts. A communicator is known by its group's name and the world rank
** of its rank 0: several share a name ("tp" and "dp" of each pipeline
** stage, the rows of a 2-D tensor-parallel grid) and legitimately post
** different numbers of collectives, so a count is compared only between
** the ranks of one communicator. A rank past the timeout asks the others,
** gives them a short grace to answer, and says what it learnt: who waits
** where, who of its communicator posted a different number of collectives
** on it (the ranks that differ from most, when most agree), and who did
** not answer (stuck outside communication, or stopped).
*/
#ifndef TSL_MPI_WHERE_H
#define TSL_MPI_WHERE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* After MPI_Init: the private communicator (collective over the world).
** Idempotent: made once per process and used by all its runs.
** tsl_where_close frees it, and forgets the counts, before a tessel that
** started MPI finalises it. Where the program started MPI itself, its own
** MPI_Finalize releases the communicator with the rest of MPI: tessel does
** not free it at the end of a run, since a run's end (tessel_run_close) is
** not collective, MPI_Comm_free is, and the process's next run uses it. */
void tsl_where_open(void);
void tsl_where_close(void);

/* The communicator `comm` of the group named `group` (comm.c's own copy of
** the name, the pointer it passes to tsl_where_posted, tsl_mpi_wait and
** the rest) is made; its count starts at 0. tsl_where_group_gone: it is
** freed. A name passed but not made known here ("world") is a name of the
** world's own, counted on every rank. */
void tsl_where_group(const char *group, MPI_Comm comm);
void tsl_where_group_gone(const char *group);

/* One collective posted on the group named `group`. */
void tsl_where_posted(const char *group);

/* This rank now waits in `what` on `group` (both kept by pointer until the
** next call); answer the questions that came meanwhile. */
void tsl_where_waiting(const char *what, const char *group);
void tsl_where_serve(void);

/* Ask the other ranks where they are (a grace of about two seconds) and
** describe into buf (cap bytes) what is known beside this rank's wait on
** `group`: sentences to put in its timeout's message. Only the ranks of
** that communicator have their counts compared. With `missing` >= 0
** (the rank this one waited for) only that rank is asked, and buf says
** where it waits when *answered says it did. */
void tsl_where_report(const char *group, int missing, int *answered, char *buf, size_t cap);

#endif
