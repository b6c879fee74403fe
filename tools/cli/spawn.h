/*
** tools/cli/spawn.h — starting `tessel run` as child processes, on one rank
** or through mpirun (for `tessel launch` and `tessel compare`).
*/
#ifndef TSL_SPAWN_H
#define TSL_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* argv for running `tessel run ARGS...` on `ranks` local ranks: mpirun
** when ranks > 1 or `launcher` is set, else the program itself. Under
** mpirun each rank is bound to its own equal part of the CPUs this process
** may use (its affinity mask) when there are at least as many CPUs as
** ranks; otherwise the ranks are left unbound with --oversubscribe. `how`
** (optional) gets a sentence saying which. --allow-run-as-root as root.
** Heap array (free with tsl_spawn_argv_free); NULL when the program cannot
** be found. */
char **tsl_run_argv(int ranks, int launcher, char *const *run_args, int n_args, char *how, size_t how_cap);
void tsl_spawn_argv_free(char **argv);

/* A child's exit status from waitpid's: its code, or 128 + the signal
** that killed it, as a shell reports it. */
int tsl_exit_status(int wait_status);

/* Run argv to completion with stdout and stderr appended to log_path.
** Returns the exit status (128 + signal when killed), or -1 when it could
** not start. A SIGINT, SIGTERM, SIGUSR1 or SIGHUP to this process
** meanwhile is passed on as a stop (SIGUSR1; a second as SIGINT) and
** waited for, and the child gets a stop too if this process dies, so no
** child trains on alone; after a stop nothing more is started (the return
** is 128 + that signal). */
int tsl_spawn_wait(char **argv, const char *log_path);
/* In a child just forked from `parent`: its own process group (a
** terminal's Ctrl-C then reaches only the parent, which passes it on once:
** twice would abort a run), and a stop (SIGUSR1) when the parent dies
** however it dies (SIGKILL, Ctrl-\), so that no child trains on alone. */
void tsl_spawn_detach(pid_t parent);
/* The signal that stopped this command while it ran children, or 0. */
int tsl_spawn_stopped(void);
/* Say that `command` was stopped (the results of its stopped children are
** no answer) and return its exit status, 128 + the signal. */
int tsl_spawn_stop_report(const char *command);

#endif
