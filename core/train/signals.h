/*
** core/train/signals.h — stopping a run so that it can go on later.
**
** SIGTERM (a scheduler's notice), SIGINT (Ctrl-C), SIGUSR1 (Slurm's
** `--signal`, or mpirun, which forwards it to every rank), SIGHUP (the
** terminal or ssh session closed) and SIGPIPE (the reader of the log went
** away) ask the run to stop: every rank finishes the step it is in, a
** checkpoint is written, and the process exits with TSL_EXIT_STOPPED, so a
** job script can requeue it. A SIGINT, SIGTERM or SIGHUP after the first
** stop signal aborts at once. `train.stop_after_time` stops the same
** way before a time limit.
**
** A signal may reach one rank only (kill to one process, a node's own
** preemption). Ranks therefore never stop on their own: after every step
** each contributes its reason (or 0) to a reduction over the core's
** communicator (train/step_stats.h), and all stop when any has one.
*/
#ifndef TSL_SIGNALS_H
#define TSL_SIGNALS_H

/* The exit status of a run that stopped early and can resume: EX_TEMPFAIL
** of sysexits.h, "temporary failure; the user is invited to retry". */
#define TSL_EXIT_STOPPED 75

/* A stop reason that is not a signal number. */
#define TSL_STOP_TIME 1000  /* train.stop_after_time */
#define TSL_STOP_STEPS 1001 /* train.stop_after */
#define TSL_STOP_LOG 1002   /* the run's log (metrics) could not be written: stop with a checkpoint, then fail */

/* Catch the stop signals above for the rest of the run. `announce`:
** print a line on stderr when the first one arrives (rank 0). `tessel run`
** installs them first thing, before MPI starts, so that a signal while the
** run starts up stops it after its first step (the first step's agreement
** is where every rank learns of a signal that reached one of them) instead
** of killing it; it says which rank announces once ranks are known. */
void tsl_signals_install(int announce);
void tsl_signals_announce(int announce);
/* Give the stop signals back their previous handlers. */
void tsl_signals_restore(void);
/* The first signal received since tsl_signals_install, or 0. */
int tsl_signal_received(void);
/* The run's last checkpoint is written: from now on SIGTERM and SIGUSR1
** change nothing (a stopped job's last ranks get mpirun's SIGTERM when the
** first exits, and schedulers repeat theirs; neither may turn a clean stop
** with its checkpoint into an abort), and SIGINT ends the process at once
** (the end-of-run sample, say: nothing is left to save). */
void tsl_signals_settle(void);
/* "SIGTERM", "train.stop_after_time", ... for a stop reason. */
const char *tsl_stop_reason_name(int reason);

#endif
