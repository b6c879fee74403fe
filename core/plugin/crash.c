/* core/plugin/crash.c — naming the loaded object a crash happened in. */
#include "plugin/crash.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

enum { MAX_WATCHED = 16, MAX_FRAMES = 64 };

static struct {
  char what[32], path[4096];
} watched[MAX_WATCHED];
static volatile sig_atomic_t n_watched;

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_CRASH_SIGNALS ((int)(sizeof crash_signals / sizeof crash_signals[0]))
static struct sigaction previous[N_CRASH_SIGNALS];

static void put(const char *s) {
  ssize_t w = write(2, s, strlen(s));
  (void)w; /* nothing to do when stderr is gone */
}

/* A non-negative int in decimal, without stdio (which is not async-signal-safe). */
static void put_int(int v) {
  char buf[16];
  int i = sizeof buf - 1;
  buf[i] = '\0';
  do buf[--i] = (char)('0' + v % 10);
  while ((v /= 10) > 0 && i > 0);
  put(buf + i);
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV, a bad memory access";
    case SIGBUS: return "SIGBUS, a bad memory access";
    case SIGFPE: return "SIGFPE, an arithmetic fault";
    case SIGILL: return "SIGILL, an illegal instruction";
    default: return "SIGABRT, an abort";
  }
}

static int in_libc(const char *file) { return strstr(file, "/libc.so") || strstr(file, "/libc-"); }

static char self_file[4096]; /* the object this handler is in */

/* The watched object the crash happened in, or -1. The frames are this
** handler's, then the C library's (the signal trampoline; an abort, a
** failed assert or a memcpy on a bad pointer pass through it too), then
** the code that was running: that first frame outside both decides.
** Whatever ran beneath a hook (the core, MPI, OpenBLAS) is not the
** plugin's, nor is a signal another process sent. backtrace and dladdr
** are not on POSIX's async-signal-safe list, but they only read the
** loaded objects' tables here (backtrace's own library is loaded by
** tsl_crash_watch beforehand), as crash reporters do. */
static int culprit(const siginfo_t *si) {
  void *frames[MAX_FRAMES];
  if (si->si_code <= 0 && si->si_pid != getpid()) return -1;
  int n = backtrace(frames, MAX_FRAMES), f = 0;
  Dl_info info;
  while (f < n && dladdr(frames[f], &info) && info.dli_fname && strcmp(info.dli_fname, self_file) == 0) f++;
  for (; f < n; f++) {
    if (!dladdr(frames[f], &info) || !info.dli_fname) return -1;
    if (in_libc(info.dli_fname)) continue;
    for (int w = 0; w < n_watched; w++)
      if (strcmp(info.dli_fname, watched[w].path) == 0) return w;
    return -1;
  }
  return -1;
}

static void on_crash(int sig, siginfo_t *si, void *uc) {
  int w = culprit(si), world;
  if (w >= 0) {
    int rank = tsl_log_rank(&world);
    put("\n");
    if (world > 1) {
      put("[rank ");
      put_int(rank);
      put("] ");
    }
    put("error: the process crashed (");
    put(signal_name(sig));
    put(") inside the ");
    put(watched[w].what);
    put(" ");
    put(watched[w].path);
    put(": a bug in it, not in the run's configuration; the job ends. Its author can find the place with gdb on "
        "the core file, or under valgrind.\n");
  }
  for (int i = 0; i < N_CRASH_SIGNALS; i++) {
    if (crash_signals[i] != sig) continue;
    struct sigaction *p = &previous[i];
    if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
      sigaction(sig, p, NULL);
      p->sa_sigaction(sig, si, uc);
      return;
    }
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
      sigaction(sig, p, NULL);
      p->sa_handler(sig);
      return;
    }
  }
  signal(sig, SIG_DFL);
  raise(sig); /* a fault re-executes its instruction under the default action */
}

void tsl_crash_watch(const char *what, const char *path) {
  int n = n_watched;
  if (n >= MAX_WATCHED || strlen(path) >= sizeof watched[0].path) return;
  strncpy(watched[n].what, what, sizeof watched[n].what - 1);
  strcpy(watched[n].path, path);
  n_watched = n + 1;
  if (n > 0) return;
  void *frame;
  backtrace(&frame, 1); /* loads its unwinder now, not inside the handler */
  Dl_info self;
  if (dladdr((void *)on_crash, &self) && self.dli_fname && strlen(self.dli_fname) < sizeof self_file)
    strcpy(self_file, self.dli_fname);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_crash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < N_CRASH_SIGNALS; i++) sigaction(crash_signals[i], &sa, &previous[i]);
}
