/* tools/cli/util.c — helpers shared by the commands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"

static const char *usage_verb;

void tsl_usage_verb(const char *word) { usage_verb = word; }

/* The line of cmd's synopsis (its usage text up to the first blank line)
** that shows `tessel NAME VERB`, VERB the word after the command, without
** its "usage:" or indentation; else the first line. NULL when there is
** none; *len its length. */
static const char *usage_line(const tsl_command *cmd, int *len) {
  const char *start = strstr(cmd->usage, "usage:"), *line = start ? start + 6 : NULL;
  if (!start) return NULL;
  const char *end = strstr(start, "\n\n");
  char *want = usage_verb && *usage_verb != '-' ? tsl_asprintf("tessel %s %s", cmd->name, usage_verb) : NULL;
  size_t n = want ? strlen(want) : 0;
  for (const char *p = want ? strstr(start, want) : NULL; p && (!end || p < end); p = strstr(p + n, want))
    if (p[n] == ' ' || p[n] == '\n') {
      while (p > start && p[-1] != '\n') p--; /* the start of its line: "       mpirun -n N tessel ..." */
      line = p;
      break;
    }
  free(want);
  if (!strncmp(line, "usage:", 6)) line += 6;
  line += strspn(line, " ");
  *len = (int)strcspn(line, "\n");
  return line;
}

int tsl_usage_error(const tsl_command *cmd, const char *fmt, ...) {
  va_list ap;
  int len;
  fprintf(stderr, "tessel %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const char *line = usage_line(cmd, &len);
  if (line) fprintf(stderr, "\nusage: %.*s\n", len, line);
  else fputc('\n', stderr);
  return TSL_EXIT_USAGE;
}

int tsl_option_error(const tsl_command *cmd, const struct option *opts, int opt, const char *want) {
  if (opt == '?' || opt == ':' || !want) return tsl_usage_error(cmd, "bad option");
  for (const struct option *o = opts; o->name; o++)
    if (o->val == opt) return tsl_usage_error(cmd, "--%s needs %s, got '%s'", o->name, want, optarg ? optarg : "");
  return tsl_usage_error(cmd, "-%c needs %s, got '%s'", opt, want, optarg ? optarg : "");
}

int tsl_getopt(int argc, char **argv, const tsl_options *o) { return getopt_long(argc, argv, o->shorts, o->longs, NULL); }

/* The long option `name` (without "=VALUE") names as getopt_long reads
** it: the one of that whole name, else the one it is a prefix of; NULL
** when none, or when it is a prefix of several that differ (getopt calls
** it ambiguous; several that agree in has_arg, flag and val count as one). */
static const struct option *long_named(const struct option *longs, const char *name) {
  const struct option *found = NULL;
  size_t n = strlen(name);
  int ambiguous = 0;
  for (const struct option *o = longs; n && o && o->name; o++) {
    if (strncmp(o->name, name, n) != 0) continue;
    if (o->name[n] == '\0') return o;
    if (!found) found = o;
    else if (found->has_arg != o->has_arg || found->flag != o->flag || found->val != o->val) ambiguous = 1;
  }
  return ambiguous ? NULL : found;
}

int tsl_option_takes_next(const tsl_options *o, const char *word) {
  if (word[0] != '-' || word[1] == '\0') return 0;
  if (word[1] == '-') {
    if (strchr(word + 2, '=')) return 0;
    const struct option *opt = long_named(o->longs, word + 2);
    return opt && opt->has_arg == required_argument;
  }
  /* the first option of the cluster that takes a value ends it: the rest
  ** of the word is its value, or, when nothing is left, the next word
  ** (an optional value, "x::", is never the next word) */
  for (const char *p = word + 1; *p; p++) {
    const char *s = *p == ':' ? NULL : strchr(o->shorts, *p);
    if (s && s[1] == ':') return s[2] != ':' && p[1] == '\0';
  }
  return 0;
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

static const struct option out_longs[] = {{"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
const tsl_options tsl_out_options = {"o:", out_longs};

int tsl_parse_arg_out(const tsl_command *cmd, int argc, char **argv, const char *what, const char **arg,
                      const char **out) {
  int c;
  *out = NULL;
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &tsl_out_options)) != -1) {
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
  double v;
  errno = 0;
  if (tsl_parse_decimal(s, &v, &end) != 0 || errno || *end) return -1;
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
