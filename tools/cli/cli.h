/*
** tools/cli/cli.h — the `tessel` command line.
**
** Each command is a table entry with its summary, its usage text and its
** function; `tessel help CMD` and `tessel CMD --help` print the usage.
** Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error;
** `run` also 75 (TSL_EXIT_STOPPED, train/signals.h) when it stopped early
** with a checkpoint.
*/
#ifndef TSL_CLI_H
#define TSL_CLI_H

#include <getopt.h>

#include "common/status.h"
#include "runtime/runtime.h"

#define TSL_EXIT_OK 0
#define TSL_EXIT_FAILURE 1
#define TSL_EXIT_USAGE 2

typedef struct tsl_command {
  const char *name;
  const char *summary;
  const char *usage; /* full help text */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
} tsl_command;

extern const tsl_command tsl_cmd_run, tsl_cmd_check, tsl_cmd_plugins, tsl_cmd_data, tsl_cmd_sample, tsl_cmd_export,
    tsl_cmd_import, tsl_cmd_bench, tsl_cmd_launch, tsl_cmd_plugin_check, tsl_cmd_compare, tsl_cmd_tokenizer,
    tsl_cmd_plan;

/* What `tessel check CONFIG --world N` validates, in this process and
** without training: the configuration with its --set overrides, the
** strategy and its mesh for `world` ranks, the batch split, the parameter
** layouts, the data, and, when `resume`, the checkpoint checkpoint.resume
** would resume from. `rt` is zeroed by the caller, who destroys it
** whatever this returns; *dims gets the batch split. */
tsl_status tsl_check_config(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets, int world,
                            int resume, tessel_model_dims *dims);

/* `tessel bench comm ...` (argv[0] is "comm"). */
int tsl_bench_comm(int argc, char **argv);

/* `tessel COMMAND ...`: the program's whole command line (argv[1] is the
** command); returns its exit status. */
int tsl_cli_main(int argc, char **argv);

/* The word after the command on its command line (set by tsl_cli_main):
** for a command with verbs (`tokenizer encode`, `bench comm`) a usage
** error shows that verb's usage line. */
void tsl_usage_verb(const char *word);
/* Print "tessel CMD: message" and the usage line (the verb's, see
** tsl_usage_verb); returns TSL_EXIT_USAGE. */
int tsl_usage_error(const tsl_command *cmd, const char *fmt, ...) TSL_PRINTF(2, 3);
/* A usage error for option `opt` as getopt_long returned it: "--NAME needs
** WANT, got 'VALUE'" (the option named as opts names it), or, for an
** unknown option or a missing value, which getopt has already reported,
** "bad option". Returns TSL_EXIT_USAGE. */
int tsl_option_error(const tsl_command *cmd, const struct option *opts, int opt, const char *want);
/* `tessel CMD ARG -o OUT` (or --out OUT): *arg and *out, 0 when they parse,
** else a usage error naming `what` ARG is (returns TSL_EXIT_USAGE). */
int tsl_parse_arg_out(const tsl_command *cmd, int argc, char **argv, const char *what, const char **arg,
                      const char **out);
/* Flush standard output: TSL_EXIT_OK when everything written to it reached
** its file, else TSL_EXIT_FAILURE after printing "error: standard output:
** write failed: REASON" (a full disk, an I/O error: the results are short
** and must not read as a success). A reader that closed the pipe is not
** told about: it stopped reading on purpose (`| head`), and when SIGPIPE is
** not ignored it has already ended the program just as quietly. */
int tsl_stdout_written(void);
/* Print the current error and return the exit code for `st`. */
int tsl_fail(tsl_status st);
/* Parse a whole non-negative integer / number; -1 on junk. */
int tsl_parse_count(const char *s, long long *out);
/* An integer option in [lo, hi] into an int; 1 when valid, 0 otherwise. */
int tsl_option_int(const char *s, long long lo, long long hi, int *out);
int tsl_parse_number(const char *s, double *out);
/* Room for every repeatable option of a command line of argc words (one
** more for a caller's own): a zeroed heap array, NULL when out of memory. */
const char **tsl_option_slots(int argc);

#endif
