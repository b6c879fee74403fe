/* tools/cli/main.c — `tessel COMMAND ...` */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "tessel/tessel.h"

static const tsl_command *const commands[] = {&tsl_cmd_run,    &tsl_cmd_launch, &tsl_cmd_check,  &tsl_cmd_plugins,
                                              &tsl_cmd_data,   &tsl_cmd_tokenizer, &tsl_cmd_sample, &tsl_cmd_export, &tsl_cmd_import, &tsl_cmd_bench, &tsl_cmd_plugin_check, &tsl_cmd_compare, &tsl_cmd_plan};

static void overview(FILE *out) {
  fprintf(out,
          "tessel %s — train GPT-style language models across devices from one YAML file\n\n"
          "usage: tessel COMMAND [ARGS...]\n\ncommands:\n",
          tessel_version());
  for (size_t i = 0; i < TSL_ARRAY_LEN(commands); i++) fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "  %-12s %s\n  %-12s %s\n", "version", "print the version", "help", "help for a command: tessel help CMD");
  fprintf(out, "\nexit status: 0 success, 1 runtime failure, 2 usage or configuration error, 3 the strategy\n"
               "declines this device, 75 a run that stopped early with a checkpoint (signal or time limit): run\n"
               "it again to resume\n");
}

static const tsl_command *find(const char *name) {
  for (size_t i = 0; i < TSL_ARRAY_LEN(commands); i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

static int unknown(const char *name) {
  const char *names[TSL_ARRAY_LEN(commands) + 2];
  for (size_t i = 0; i < TSL_ARRAY_LEN(commands); i++) names[i] = commands[i]->name;
  names[TSL_ARRAY_LEN(commands)] = "version";
  names[TSL_ARRAY_LEN(commands) + 1] = "help";
  const char *near = tsl_closest(name, names, (int)TSL_ARRAY_LEN(names));
  fprintf(stderr, "tessel: unknown command '%s'%s%s%s; see `tessel help`\n", name, near ? " (did you mean '" : "",
          near ? near : "", near ? "'?)" : "");
  return TSL_EXIT_USAGE;
}

const tsl_command *const *tsl_cli_commands(int *n) {
  *n = (int)TSL_ARRAY_LEN(commands);
  return commands;
}

/* Does `word` name an option of c that takes the next word as its value,
** in any of c's tables (a word is never a help request where getopt
** would read it as a value)? */
static int takes_value(const tsl_command *c, const char *word) {
  for (const tsl_options *const *o = c->options; o && *o; o++)
    if (tsl_option_takes_next(*o, word)) return 1;
  return 0;
}

int tsl_cli_wants_help(const tsl_command *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) break;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    if (takes_value(c, argv[i])) i++; /* its value, whatever it reads */
  }
  return 0;
}

static const char version_usage[] = "usage: tessel version\n\nprints tessel's version and its plugin ABI";
#define HELP_SYNOPSIS "usage: tessel help [CMD]"

/* The command line's command, its exit status. */
static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    overview(stderr);
    return TSL_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
    if (argc > 3) {
      fprintf(stderr, "tessel help: takes one command, got '%s' too\n" HELP_SYNOPSIS "\n", argv[3]);
      return TSL_EXIT_USAGE;
    }
    if (argc > 2) {
      const tsl_command *c = find(argv[2]);
      if (!strcmp(argv[2], "version")) return puts(version_usage) < 0;
      if (!strcmp(argv[2], "help")) return puts(HELP_SYNOPSIS "\n\nlists the commands, or prints CMD's help") < 0;
      if (!c) return unknown(argv[2]);
      fputs(c->usage, stdout);
      return TSL_EXIT_OK;
    }
    overview(stdout);
    return TSL_EXIT_OK;
  }
  if (!strcmp(name, "version") || !strcmp(name, "--version")) {
    if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
      return puts(version_usage) < 0;
    if (argc > 2) {
      fprintf(stderr, "tessel version: takes no arguments, got '%s'\nusage: tessel version\n", argv[2]);
      return TSL_EXIT_USAGE;
    }
    printf("tessel %s (plugin ABI %u.%u)\n", tessel_version(), TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION),
           TESSEL_ABI_MINOR(TESSEL_ABI_VERSION));
    return TSL_EXIT_OK;
  }
  const tsl_command *c = find(name);
  if (!c) return unknown(name);
  tsl_usage_verb(argc > 2 ? argv[2] : NULL);
  if (tsl_cli_wants_help(c, argc - 1, argv + 1)) {
    fputs(c->usage, stdout);
    return TSL_EXIT_OK;
  }
  return c->run(argc - 1, argv + 1);
}

int tsl_cli_main(int argc, char **argv) {
  int rc = dispatch(argc, argv);
  /* every command's results end on standard output, the last of them still
  ** in its buffer: one check here covers them all */
  return rc == TSL_EXIT_OK ? tsl_stdout_written() : rc;
}
