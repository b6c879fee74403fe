/* tools/cli/util.c — helpers shared by the commands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"

int tsl_usage_error(const tsl_command *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "tessel %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const char *line = strstr(cmd->usage, "usage:");
  const char *end = line ? strchr(line, '\n') : NULL;
  if (line && end) fprintf(stderr, "\n%.*s\n", (int)(end - line), line);
  else fputc('\n', stderr);
  return TSL_EXIT_USAGE;
}

int tsl_option_error(const tsl_command *cmd, const struct option *opts, int opt, const char *want) {
  if (opt == '?' || opt == ':' || !want) return tsl_usage_error(cmd, "bad option");
  for (const struct option *o = opts; o->name; o++)
    if (o->val == opt) return tsl_usage_error(cmd, "--%s needs %s, got '%s'", o->name, want, optarg ? optarg : "");
  return tsl_usage_error(cmd, "-%c needs %s, got '%s'", opt, want, optarg ? optarg : "");
}

int tsl_stdout_written(void) {
  int flushed = fflush(stdout) == 0, err = errno;
  if (flushed && !ferror(stdout)) return TSL_EXIT_OK;
  if (!flushed && err == EPIPE) return TSL_EXIT_FAILURE;
  /* the reason is known when this flush failed; an earlier flush that
  ** failed after the last write took it with it */
  fprintf(stderr, "error: standard output: write failed%s%s\n", flushed ? "" : ": ", flushed ? "" : strerror(err));
  return TSL_EXIT_FAILURE;
}

int tsl_parse_arg_out(const tsl_command *cmd, int argc, char **argv, const char *what, const char **arg,
                      const char **out) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
  int c;
  *out = NULL;
  optind = 0;
  while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (c != 'o') return tsl_usage_error(cmd, "bad option");
    *out = optarg;
  }
  if (!*out || !**out) return tsl_usage_error(cmd, *out ? "-o needs a path" : "missing -o");
  if (optind != argc - 1) return tsl_usage_error(cmd, "expected one %s", what);
  *arg = argv[optind];
  return 0;
}

int tsl_fail(tsl_status st) {
  tsl_print_error(0, 1, st);
  return tsl_status_exit_code(st);
}

int tsl_parse_count(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < 0) return -1;
  *out = v;
  return 0;
}

int tsl_parse_number(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end) return -1;
  *out = v;
  return 0;
}

const char **tsl_option_slots(int argc) { return calloc((size_t)argc + 2, sizeof(const char *)); }

int tsl_option_int(const char *s, long long lo, long long hi, int *out) {
  long long v;
  if (tsl_parse_count(s, &v) != 0 || v < lo || v > hi) return 0;
  *out = (int)v;
  return 1;
}
