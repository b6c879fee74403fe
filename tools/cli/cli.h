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

/* One getopt_long table: the short options (getopt's optstring) and the
** long ones, as a command parses them with tsl_getopt. */
typedef struct tsl_options {
  const char *shorts;
  const struct option *longs;
} tsl_options;

typedef struct tsl_command {
  const char *name;
  const char *summary;
  const char *usage; /* full help text */
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  /* Every table `run` parses with (one per verb for a command with verbs),
  ** NULL-terminated, or NULL for none: the one place that says which
  ** options take the next word as their value, read both by getopt and by
  ** the help check, so that `sample --prompt -h` samples after "-h". */
  const tsl_options *const *options;
} tsl_command;

extern const tsl_command tsl_cmd_run, tsl_cmd_check, tsl_cmd_plugins, tsl_cmd_data, tsl_cmd_sample, tsl_cmd_export,
    tsl_cmd_import, tsl_cmd_bench, tsl_cmd_launch, tsl_cmd_plugin_check, tsl_cmd_compare, tsl_cmd_tokenizer,
    tsl_cmd_plan;

/* What `tessel check CONFIG --world N` validates, in this process and
** without training: the configuration with its --set overrides, the
** device backend it asks for (the CUDA backend's file, not a GPU), the
** strategy and its mesh for `world` ranks, the batch split, the parameter
** layouts, the data, and, when `resume`, the checkpoint checkpoint.resume
** would resume from (TSL_CHECK_RESUME_WARN: with the warnings of what it
** would change). `rt` is zeroed by the caller, who destroys it whatever
** this returns; *dims gets the batch split. */
enum { TSL_CHECK_RESUME = 1, TSL_CHECK_RESUME_WARN = 2 };
tsl_status tsl_check_config(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets, int world,
                            int resume, tessel_model_dims *dims);

/* How the command line resumes from a checkpoint it names, as the core's
** messages advise it (tsl_train_opts.resume_cmd). */
#define TSL_CLI_RESUME_CMD "tessel run CONFIG --resume"

/* `tessel run`'s options, which `tessel launch` takes too and passes on
** to every rank's `tessel run`. */
typedef struct tsl_run_args {
  const char *config, *resume;
  const char **sets; /* heap (tsl_option_slots), the caller frees it */
  int n_sets;
} tsl_run_args;
/* The long options of `tessel run` and `tessel launch` (--set, --resume). */
extern const struct option tsl_run_long_options[];
/* A command's own option beyond `tessel run`'s, as getopt returned it
** (value in optarg), or -1 once every option is read, to check the
** command's required ones: 0, or the exit status of a usage error. */
typedef int (*tsl_own_option)(void *ctx, int opt);
/* Parse `tessel run`'s options in any order around one CONFIG into *a
** (zeroed here), with table `opts` (tsl_run_long_options and the short
** ones), passing any other option to `own` (NULL: none is taken). 0, or
** the exit status of a usage error or of running out of memory; a->sets
** is the caller's to free either way. */
int tsl_parse_run_args(const tsl_command *cmd, const tsl_options *opts, tsl_own_option own, void *ctx, int argc,
                       char **argv, tsl_run_args *a);

/* `tessel bench comm ...` (argv[0] is "comm"), and its options. */
int tsl_bench_comm(int argc, char **argv);
extern const tsl_options tsl_bench_comm_options;

/* `tessel COMMAND ...`: the program's whole command line (argv[1] is the
** command); returns its exit status. */
int tsl_cli_main(int argc, char **argv);
/* The table commands (not `version` and `help`); *n gets their count. */
const tsl_command *const *tsl_cli_commands(int *n);
/* Do c's arguments (argv[0] is its name) ask for help: -h or --help
** before any "--", and not the value of an option before it? */
int tsl_cli_wants_help(const tsl_command *c, int argc, char **argv);

/* getopt_long over table o (optind is the caller's to reset). */
int tsl_getopt(int argc, char **argv, const tsl_options *o);
/* Does getopt, parsing with table o, take the word after `word` as the
** value of an option `word` names? As getopt reads it: a long option by
** its whole name or an unambiguous prefix, without "=VALUE"; a cluster of
** short options whose last one takes a value. */
int tsl_option_takes_next(const tsl_options *o, const char *word);
/* The table of tsl_parse_arg_out: -o/--out. */
extern const tsl_options tsl_out_options;

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
/* Parse a whole non-negative integer; -1 on junk. */
int tsl_parse_count(const char *s, long long *out);
/* An integer option in [lo, hi] into an int; 1 when valid, 0 otherwise. */
int tsl_option_int(const char *s, long long lo, long long hi, int *out);
/* A non-negative decimal number, as a config reads one ("0.7", "1e-5"):
** -1 for junk, and for what strtod also takes but a config refuses (inf,
** nan, hexadecimal) or cannot hold (1e400, 1e-400), so that an option
** never takes a value its config key would refuse. */
int tsl_parse_number(const char *s, double *out);
/* Room for every repeatable option of a command line of argc words (one
** more for a caller's own): a zeroed heap array, NULL when out of memory. */
const char **tsl_option_slots(int argc);

#endif
