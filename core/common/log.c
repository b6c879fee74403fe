/* core/common/log.c */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>

static int log_rank = 0, log_world = 1, log_level = TESSEL_LOG_INFO;

void tsl_log_set_rank(int rank, int world) {
  log_rank = rank;
  log_world = world;
}

void tsl_log_set_level(int level) { log_level = level; }

int tsl_log_level(void) { return log_level; }

int tsl_log_rank(int *world) {
  *world = log_world;
  return log_rank;
}

/* One write per line: stderr is unbuffered, and the ranks of a job share
** it, so a line written in pieces was spliced with other ranks' lines. */
static void write_line(const char *prefix, const char *tag, const char *fmt, va_list ap) {
  char *body = NULL;
  if (vasprintf(&body, fmt, ap) < 0) body = NULL;
  fprintf(stderr, "%s%s%s\n", prefix, tag, body ? body : fmt);
  fflush(stderr);
  free(body);
}

void tsl_vlog(int level, const char *fmt, va_list ap) {
  static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
  char prefix[32] = "";
  if (level > log_level) return;
  if (level >= TESSEL_LOG_INFO && log_rank != 0) return;
  if (log_world > 1 && level <= TESSEL_LOG_WARN) snprintf(prefix, sizeof prefix, "[rank %d] ", log_rank);
  write_line(prefix, tags[level < 0 ? 0 : level > 3 ? 3 : level], fmt, ap);
}

void tsl_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tsl_vlog(level, fmt, ap);
  va_end(ap);
}

void tsl_print_error(int rank, int world, tsl_status st) {
  const char *msg = tsl_error_message();
  if (!msg[0]) msg = tsl_status_name(st);
  /* a mistake at FILE:LINE:COL is the config's, whichever rank found it:
  ** the position starts the line, as editors and compilers expect */
  int positioned = tsl_has_position(msg);
  char prefix[32] = "";
  if (world > 1 && !positioned) snprintf(prefix, sizeof prefix, "[rank %d] ", rank);
  fprintf(stderr, "%s%s%s\n", prefix, positioned ? "" : "error: ", msg);
  fflush(stderr);
}
