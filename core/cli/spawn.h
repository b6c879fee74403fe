/*
** core/cli/spawn.h — starting `tessel run` as child processes, on one rank
** or through mpirun (for `tessel launch` and `tessel compare`).
*/
#ifndef TSL_SPAWN_H
#define TSL_SPAWN_H

/* argv for running `tessel run ARGS...` on `ranks` local ranks: mpirun
** (with --oversubscribe when ranks exceed the cores, --allow-run-as-root as
** root) when ranks > 1 or `launcher` is set, else the program itself. Heap
** array (free with tsl_spawn_argv_free); NULL when the program cannot be
** found. */
char **tsl_run_argv(int ranks, int launcher, char *const *run_args, int n_args);
void tsl_spawn_argv_free(char **argv);

/* Run argv to completion with stdout and stderr appended to log_path.
** Returns the exit status (128 + signal when killed), or -1 when it could
** not start. */
int tsl_spawn_wait(char **argv, const char *log_path);

#endif
