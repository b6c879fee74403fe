/* core/runtime/mpi_wait.c — see mpi_wait.h. */
#include "runtime/mpi_wait.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "runtime/mpi_where.h"

static double timeout_s = TSL_COMM_TIMEOUT_DEFAULT;

/* Set by SIGCONT, cleared by every wait that completes: set at a timeout,
** this rank was stopped since its last completed wait. */
static volatile sig_atomic_t continued;

static void on_continue(int sig) {
  (void)sig;
  continued = 1;
}

void tsl_mpi_watch_stops(void) {
  struct sigaction now, sa;
  if (sigaction(SIGCONT, NULL, &now) != 0 || now.sa_handler != SIG_DFL || (now.sa_flags & SA_SIGINFO)) return;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_continue;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCONT, &sa, NULL);
}

void tsl_mpi_set_timeout(double seconds) { timeout_s = seconds; }
double tsl_mpi_timeout(void) { return timeout_s; }

/* The other ranks are not coming: say so, with where they are as far as
** they answer (mpi_where.h), and end the job from here. `missing` is the
** rank that did not take part, when it is known (else -1). */
static void give_up(const char *what, const char *group, double waited, int missing) {
  int world = 1, rank = tsl_log_rank(&world), answered = 0;
  char where[4096] = "";
  tsl_status st;
  /* a rank that was stopped asks nobody: the others may have gone */
  if (!continued) tsl_where_report(group, missing, &answered, where, sizeof where);
  if (continued)
    st = tsl_error(TESSEL_E_COMM,
                   "%s on group '%s' has waited %.0f s (train.comm_timeout), but this rank was itself stopped "
                   "(SIGSTOP, Ctrl-Z, a debugger) and continued since its last exchange, so the other ranks may "
                   "have given up waiting for it and ended the job; look at what stopped it (if the others are "
                   "still running, one of them is stuck instead). The job ends now",
                   what, group, waited);
  else if (missing >= 0 && answered)
    st = tsl_error(TESSEL_E_COMM,
                   "%s on group '%s' has waited %.0f s (train.comm_timeout) for rank %d, which has not arrived: %s. "
                   "The two took different paths through their collectives (one left out, or one too many: e.g. a "
                   "strategy hook that communicates on some ranks only), and which of them did, the counts cannot "
                   "tell. The job ends now",
                   what, group, waited, missing, where);
  else if (missing >= 0)
    st = tsl_error(TESSEL_E_COMM,
                   "%s on group '%s' has waited %.0f s (train.comm_timeout) for rank %d, which never arrived: it is "
                   "stuck (in a loop, on a hung file system, in a debugger) or stopped. The job ends now. If a rank "
                   "may legitimately keep the others waiting this long (a slow save), raise train.comm_timeout",
                   what, group, waited, missing);
  else if (where[0])
    st = tsl_error(TESSEL_E_COMM,
                   "%s on group '%s' has waited %.0f s for the other ranks (train.comm_timeout). %sThe job ends "
                   "now; started again, it resumes from its last checkpoint. If a rank may legitimately "
                   "keep the others waiting this long (a slow save), raise train.comm_timeout",
                   what, group, waited, where);
  else
    st = tsl_error(TESSEL_E_COMM,
                   "%s on group '%s' has waited %.0f s for the other ranks (train.comm_timeout): a rank "
                   "has stopped taking part, stuck (in a loop, on a hung file system, in a debugger) or "
                   "stopped; the ranks that do not report this are the ones to look at. The job ends now; "
                   "started again, it resumes from its last checkpoint. If a rank may legitimately "
                   "keep the others waiting this long (a slow save), raise train.comm_timeout",
                   what, group, waited);
  tsl_print_error(rank, world, st);
  MPI_Abort(MPI_COMM_WORLD, tsl_status_exit_code(st));
  exit(tsl_status_exit_code(st));
}

int tsl_mpi_finish(int started, MPI_Request *req, const char *what, const char *group) {
  return started == MPI_SUCCESS ? tsl_mpi_wait(req, what, group) : started;
}

int tsl_mpi_wait(MPI_Request *req, const char *what, const char *group) {
  return tsl_mpi_wait_for(req, -1, what, group);
}

int tsl_mpi_wait_for(MPI_Request *req, int rank, const char *what, const char *group) {
  if (timeout_s <= 0) return MPI_Wait(req, MPI_STATUS_IGNORE);
  double start = tsl_now();
  tsl_where_waiting(what, group);
  /* MPI_Test drives MPI's progress as MPI_Wait does (and yields the core
  ** when MPI is told the ranks oversubscribe it); the clock is read now
  ** and then, not on every turn */
  for (unsigned turn = 1;; turn++) {
    int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && done) continued = 0;
    if (rc != MPI_SUCCESS || done) return rc;
    if (turn % 256 != 0) continue;
    tsl_where_serve(); /* a rank past its timeout may be asking where this one is */
    if (tsl_now() - start > timeout_s) give_up(what, group, tsl_now() - start, rank);
  }
}
