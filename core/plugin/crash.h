/*
** core/plugin/crash.h — a crash inside loaded code named as such.
**
** A strategy plugin (or a device backend) runs in tessel's process: a bad
** pointer in one of its hooks ends the process by a signal, and all a user
** saw was the signal and Open MPI's backtrace of addresses. Every object
** tsl_dso_open loads is recorded here; on SIGSEGV, SIGBUS, SIGFPE, SIGILL
** or SIGABRT a handler looks at the code the thread was in (past the C
** library: an abort, a memcpy) and, when that is one of them, says which
** (with the rank), then hands the signal to the
** handler that was there before (Open MPI's backtrace, a sanitizer's
** report) or to the default action (a core file), so the process still
** ends by that signal.
*/
#ifndef TSL_CRASH_H
#define TSL_CRASH_H

/* Record `path`, about to be opened with dlopen under that exact name, as
** "the WHAT PATH" (what: "strategy plugin", "CUDA backend"); installs the
** handler the first time. Up to 16 objects; later ones are not named. */
void tsl_crash_watch(const char *what, const char *path);

#endif
