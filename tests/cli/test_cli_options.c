/* tests/cli/test_cli_options.c — each command's getopt tables are the one
** source of which words are option values: the help check agrees with
** getopt for every option of every command. */
#include <getopt.h>
#include <string.h>

#include "cli/cli.h"
#include "harness.h"

/* What getopt itself makes of `CMD WORD -h` with table o: 1 when it takes
** "-h" as WORD's value. */
static int getopt_takes_h(const tsl_options *o, const char *word) {
  char cmd[] = "cmd", h[] = "-h", w[64];
  snprintf(w, sizeof w, "%s", word);
  char *argv[] = {cmd, w, h, NULL};
  int c, saw = 0, err = opterr;
  opterr = 0;
  optind = 0;
  while ((c = tsl_getopt(3, argv, o)) != -1)
    if (c != '?' && c != ':' && optarg == h) saw = 1;
  opterr = err;
  return saw;
}

/* `tessel CMD WORD -h` asks for help exactly when getopt, with every table
** of CMD, leaves "-h" an option of its own. */
static void check_word(const tsl_command *c, const tsl_options *o, const char *word, int takes) {
  char name[64], w[64], h[] = "-h";
  snprintf(name, sizeof name, "%s", c->name);
  snprintf(w, sizeof w, "%s", word);
  char *argv[] = {name, w, h, NULL};
  CHECK_EQ_INT(getopt_takes_h(o, word), takes);
  if (tsl_cli_wants_help(c, 3, argv) != !takes)
    fprintf(stderr, "  tessel %s %s -h: %s\n", c->name, word, takes ? "taken as help" : "not taken as help");
  CHECK_EQ_INT(tsl_cli_wants_help(c, 3, argv), !takes);
}

/* Every long and short option of every command, `--opt -h` and `-o -h`:
** "-h" is the value of each that takes one, and help after any other. */
static void test_every_option_value_agrees_with_getopt(void) {
  int n, options = 0;
  const tsl_command *const *cmds = tsl_cli_commands(&n);
  REQUIRE(n >= 13);
  for (int i = 0; i < n; i++) {
    const tsl_command *c = cmds[i];
    for (const tsl_options *const *o = c->options; o && *o; o++) {
      for (const struct option *l = (*o)->longs; l && l->name; l++, options++) {
        char word[64];
        snprintf(word, sizeof word, "--%s", l->name);
        check_word(c, *o, word, l->has_arg == required_argument);
      }
      for (const char *s = (*o)->shorts; *s; s++) {
        if (*s == ':') continue;
        char word[3] = {'-', *s, '\0'};
        check_word(c, *o, word, s[1] == ':');
        options++;
      }
    }
  }
  /* run --set/--resume, launch -n, sample --prompt ...: the tables are there */
  CHECK(options >= 50);
}

/* Does `usage` name option `word` (--NAME or -X) as a word of its own:
** after a space or '[', before a space, ',', ']', '=' or the line's end? */
static int names_option(const char *usage, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(usage, word); p; p = strstr(p + 1, word)) {
    char before = p == usage ? ' ' : p[-1], after = p[n];
    if ((before == ' ' || before == '[') && strchr(" ,]=\n", after)) return 1;
  }
  return 0;
}

static void check_listed(const tsl_command *c, const char *word) {
  if (!names_option(c->usage, word)) fprintf(stderr, "  tessel help %s does not list %s\n", c->name, word);
  CHECK(names_option(c->usage, word));
}

/* `tessel help CMD` lists every option CMD accepts, short ones included
** (run's -s and -r, check's -w, -s and -q, compare's -o were taken but
** never listed). */
static void test_every_option_in_help(void) {
  int n;
  const tsl_command *const *cmds = tsl_cli_commands(&n);
  for (int i = 0; i < n; i++) {
    for (const tsl_options *const *o = cmds[i]->options; o && *o; o++) {
      for (const struct option *l = (*o)->longs; l && l->name; l++) {
        char word[64];
        snprintf(word, sizeof word, "--%s", l->name);
        check_listed(cmds[i], word);
      }
      for (const char *s = (*o)->shorts; *s; s++) {
        char word[3] = {'-', *s, '\0'};
        if (*s != ':') check_listed(cmds[i], word);
      }
    }
  }
}

/* The commands whose options once had to be listed twice still take them. */
static void test_known_values(void) {
  static const struct {
    const tsl_command *cmd;
    const char *word;
  } valued[] = {{&tsl_cmd_run, "--set"},        {&tsl_cmd_run, "-r"},          {&tsl_cmd_launch, "-n"},
                {&tsl_cmd_check, "-w"},         {&tsl_cmd_sample, "--prompt"}, {&tsl_cmd_export, "-o"},
                {&tsl_cmd_bench, "--max-bytes"}, {&tsl_cmd_tokenizer, "--pattern"}, {&tsl_cmd_plan, "--json"}};
  for (size_t i = 0; i < sizeof valued / sizeof *valued; i++) {
    char name[32], w[32], h[] = "-h";
    snprintf(name, sizeof name, "%s", valued[i].cmd->name);
    snprintf(w, sizeof w, "%s", valued[i].word);
    char *argv[] = {name, w, h, NULL};
    CHECK_EQ_INT(tsl_cli_wants_help(valued[i].cmd, 3, argv), 0);
  }
  char name[] = "check", quiet[] = "--quiet", h[] = "-h", dd[] = "--", cfg[] = "c.yaml";
  char *after_flag[] = {name, quiet, h, NULL}, *after_dashes[] = {name, dd, h, NULL}, *plain[] = {name, cfg, h, NULL};
  CHECK_EQ_INT(tsl_cli_wants_help(&tsl_cmd_check, 3, after_flag), 1);
  CHECK_EQ_INT(tsl_cli_wants_help(&tsl_cmd_check, 3, after_dashes), 0);
  CHECK_EQ_INT(tsl_cli_wants_help(&tsl_cmd_check, 3, plain), 1);
}

/* tsl_option_takes_next reads words as getopt does: "=VALUE" and a value
** in the same word take nothing more; prefixes; short clusters. */
static void test_takes_next(void) {
  static const struct option longs[] = {{"prompt", required_argument, 0, 'p'}, {"print", no_argument, 0, 'P'},
                                        {"tokens", required_argument, 0, 'n'}, {"tokenizer", required_argument, 0, 'n'},
                                        {"quiet", no_argument, 0, 'q'},        {"level", optional_argument, 0, 'l'},
                                        {0, 0, 0, 0}};
  const tsl_options o = {"qo:w::", longs};
  static const struct {
    const char *word;
    int takes;
  } cases[] = {
      {"--prompt", 1}, {"--prompt=x", 0}, {"--prom", 1}, {"--pri", 0}, {"--pr", 0 /* ambiguous */},
      {"--tok", 1 /* two that agree are one */}, {"--quiet", 0}, {"--level", 0}, {"--nope", 0},
      {"-o", 1}, {"-ofile", 0}, {"-qo", 1}, {"-qofile", 0}, {"-q", 0}, {"-w", 0}, {"-wq", 0},
      {"-x", 0}, {"-xo", 1}, {"-", 0}, {"word", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int got = tsl_option_takes_next(&o, cases[i].word);
    if (got != cases[i].takes) fprintf(stderr, "  %s: %d, expected %d\n", cases[i].word, got, cases[i].takes);
    CHECK_EQ_INT(got, cases[i].takes);
    CHECK_EQ_INT(getopt_takes_h(&o, cases[i].word), cases[i].takes);
  }
}

int main(void) {
  RUN(test_every_option_value_agrees_with_getopt);
  RUN(test_known_values);
  RUN(test_every_option_in_help);
  RUN(test_takes_next);
  return HARNESS_EXIT();
}
