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
** So every rank counts the collectives it posts per group (by the group's
** name, "dp", "core": ranks that follow the same path post as many on each),
** and, while it waits, answers on a private duplicate of the world what it
** waits in and its counts. A rank past the timeout asks the others, gives
** them a short grace to answer, and says what it learnt: who waits where,
** who posted a different number of collectives on its group (the ranks
** that differ from most, when most agree), and who did not answer (stuck
** outside communication, or stopped).
*/
#ifndef TSL_MPI_WHERE_H
#define TSL_MPI_WHERE_H

#include <stddef.h>
#include <stdint.h>

/* After MPI_Init: the private communicator (collective over the world).
** Idempotent; tsl_where_close frees it before MPI_Finalize. */
void tsl_where_open(void);
void tsl_where_close(void);

/* One collective posted on the group named `group`. */
void tsl_where_posted(const char *group);

/* This rank now waits in `what` on `group` (both kept by pointer until the
** next call); answer the questions that came meanwhile. */
void tsl_where_waiting(const char *what, const char *group);
void tsl_where_serve(void);

/* Ask the other ranks where they are (a grace of about two seconds) and
** describe into buf (cap bytes) what is known beside this rank's wait on
** `group`: sentences to put in its timeout's message. With `missing` >= 0
** (the rank this one waited for) only that rank is asked, and buf says
** where it waits when *answered says it did. */
void tsl_where_report(const char *group, int missing, int *answered, char *buf, size_t cap);

#endif
