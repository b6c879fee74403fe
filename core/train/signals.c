/* core/train/signals.c */
#include "train/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define N_CAUGHT 5

static volatile sig_atomic_t first_signal, announce_first, settled;
static struct sigaction previous[N_CAUGHT];
/* SIGHUP: the terminal or ssh session went away; SIGPIPE: the reader of
** the log did (`tessel run | tee log` with tee gone). Both end a run that
** is still worth its checkpoint, and both left at their default would end
** it at once without one. */
static const int caught[N_CAUGHT] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP, SIGPIPE};
static int installed;

/* Signals that may come again without anybody asking twice: SIGUSR1
** forwarded more than once, and SIGPIPE, which every later write to the
** gone reader raises (the announcement below included). */
static int repeats_harmlessly(int sig) { return sig == SIGUSR1 || sig == SIGPIPE; }

static void say(const char *msg, size_t len) {
  ssize_t written = write(2, msg, len);
  (void)written; /* nothing to do when stderr is gone */
}

/* Only async-signal-safe calls here: write, signal, raise. A SIGINT or
** SIGTERM after a first stop signal aborts at once, by that signal: the
** run may be stuck where the flag is never looked at (a collective a
** broken rank never joins), and `tessel launch` turns a second Ctrl-C into
** mpirun's SIGTERM to the ranks. A repeated SIGUSR1 or SIGPIPE changes
** nothing. */
static void on_signal(int sig) {
  if (settled && sig != SIGINT) return; /* the stop is done: mpirun's SIGTERM to the last ranks, a scheduler's repeat */
  /* after the last checkpoint a Ctrl-C has nothing left to save (the sample) */
  if (settled || (first_signal && !repeats_harmlessly(sig))) {
    static const char msg[] = "\ntessel: second stop signal, aborting without a checkpoint\n";
    if (!settled) say(msg, sizeof msg - 1);
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (first_signal) return;
  first_signal = sig;
  if (announce_first) {
    static const char msg[] = "\ntessel: stopping after this step with a checkpoint (Ctrl-C again aborts at once)\n";
    say(msg, sizeof msg - 1);
  }
}

void tsl_signals_install(int announce) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART; /* blocking I/O and MPI calls go on; the loop looks at the flag */
  sigemptyset(&sa.sa_mask);
  first_signal = settled = 0;
  announce_first = announce;
  for (int i = 0; i < N_CAUGHT; i++) sigaction(caught[i], &sa, &previous[i]);
  installed = 1;
}

void tsl_signals_announce(int announce) { announce_first = announce; }

void tsl_signals_restore(void) {
  if (!installed) return;
  for (int i = 0; i < N_CAUGHT; i++) sigaction(caught[i], &previous[i], NULL);
  installed = 0;
}

int tsl_signal_received(void) { return first_signal; }

void tsl_signals_settle(void) { settled = 1; }

const char *tsl_stop_reason_name(int reason) {
  switch (reason) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case TSL_STOP_TIME: return "train.stop_after_time";
    case TSL_STOP_STEPS: return "train.stop_after";
    case TSL_STOP_LOG: return "a failed write of the run's log";
  }
  return "a stop request";
}
