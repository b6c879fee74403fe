/*
** tessel/tessel.h — embedding tessel in another program.
**
** tessel_main runs one tessel command line exactly as the `tessel` program
** does (argv[1] is the command: run, check, plugins, ...) and returns its
** exit status: 0 success, 1 runtime failure, 2 usage or configuration
** error. A program that drives training itself links libtessel and calls
** it; `tessel run` under mpirun works the same way from inside it.
*/
#ifndef TESSEL_H
#define TESSEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, e.g. "0.1.0". */
const char *tessel_version(void);

/* Run a tessel command line; argv[0] is the program name. */
int tessel_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
