/*
** core/common/log.h — the run's log.
**
** Rank 0 prints INFO and below; every rank prints warnings and errors with a
** "[rank N]" prefix when the world has more than one rank. Messages go to
** stderr so that stdout stays free for what a command produces (a resolved
** config, samples, tables).
*/
#ifndef TSL_LOG_H
#define TSL_LOG_H

#include <stdarg.h>
#include "status.h"

void tsl_log_set_rank(int rank, int world);
void tsl_log_set_level(int level); /* TESSEL_LOG_* ; default INFO */
int tsl_log_level(void);
/* The rank messages are prefixed with, and the world size. */
int tsl_log_rank(int *world);
void tsl_log(int level, const char *fmt, ...) TSL_PRINTF(2, 3);
void tsl_vlog(int level, const char *fmt, va_list ap);

/* Print the current error as a failure of this rank: "error: MESSAGE", or
** the message alone when it already starts with a FILE:LINE:COL position
** (so config errors read like compiler errors); "[rank r] " in front when
** the world has more than one rank. */
void tsl_print_error(int rank, int world, tsl_status st);

#define tsl_info(...) tsl_log(TESSEL_LOG_INFO, __VA_ARGS__)
#define tsl_warn(...) tsl_log(TESSEL_LOG_WARN, __VA_ARGS__)
#define tsl_debug(...) tsl_log(TESSEL_LOG_DEBUG, __VA_ARGS__)

#endif
