/* tools/cli/cmd_compare.c — `tessel compare A.yaml B.yaml ...`. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "common/util.h"
#include "compare/compare.h"

static int compare(int argc, char **argv);

static const struct option compare_longs[] = {{"steps", required_argument, 0, 'S'},    {"out", required_argument, 0, 'o'},
                                              {"tolerance", required_argument, 0, 't'}, {"warmup", required_argument, 0, 'w'},
                                              {"set", required_argument, 0, 's'},       {"repeat", required_argument, 0, 'r'},
                                              {"val-tolerance", required_argument, 0, 'v'},
                                              {"allow-different-models", no_argument, 0, 'a'},
                                              {0, 0, 0, 0}};
static const tsl_options compare_options = {"n:o:", compare_longs};

const tsl_command tsl_cmd_compare = {
    "compare", "run several configs (strategies) on the same model and data; decide which is faster, and by how much",
    "usage: tessel compare A.yaml[@RANKS] B.yaml[@RANKS]... [--steps N] [--repeat K] [-n RANKS] [--out DIR]\n"
    "                      [--tolerance T] [--val-tolerance V] [--warmup W] [--set KEY=VALUE]...\n"
    "                      [--allow-different-models]\n\n"
    "Trains each configuration for N steps, K times, interleaved (A B C, C B A, A B C ...) so that a slow\n"
    "spell of the machine falls on all of them — through mpirun when it runs on more than one rank, each rank bound\n"
    "to its own CPUs when there are enough (tessel launch --help). Before anything runs, the configurations\n"
    "must train the same model on the same data with the same seed and batch, and each must pass\n"
    "`tessel check --world RANKS`. Then report.md leads with the decision (the terminal ends with it) — the fastest\n"
    "configuration, faster than the next \"by X% (spread Y%)\" only when the difference exceeds the noise\n"
    "of the trials, else \"no measurable difference\" and the one needing least memory — followed by:\n"
    "loss equivalence against the first (a strategy that declares itself lossy is judged by validation\n"
    "loss); tokens/s (each trial's tokens over the time of its measured steps, so a cost paid every few\n"
    "steps counts; of the median trial, the slower middle one of an even number, whose step time, MFU and\n"
    "split the row shows; the range over trials; per rank, with a warning when ranks oversubscribe the\n"
    "CPUs); MFU; each step split into compute, communication wait and pipeline bubble; memory per tier\n"
    "split into parameters, gradients, optimizer state, activations and scratch; traffic per\n"
    "communicator; charts of loss, loss difference, throughput and memory (gnuplot, when installed); and\n"
    "the differences between the resolved configurations.\n\n"
    "Your directories are never read or written: every trial runs with its log, metrics, checkpoints and\n"
    "TensorBoard files in DIR/<index>-<label>/trial-<k>/, text data is prepared into DIR/data, and nothing\n"
    "resumes from a checkpoint. (Token shards given as data.train are read where they are, and paths in a\n"
    "strategy's own options, such as gemini's nvme_dir, are used as written.)\n\n"
    "  --steps N                 steps per run (default 20; at least 2 unless --warmup 0)\n"
    "  --repeat K                trials per configuration (default 3; one trial cannot tell noise from a\n"
    "                            difference)\n"
    "  -n RANKS                  ranks for every config without its own @RANKS (default 1)\n"
    "  -o, --out DIR             report folder (default runs/compare)\n"
    "  --tolerance T             relative per-step loss difference still called equivalent (default 1e-5:\n"
    "                            fp32 sums in another order, carried by AdamW over tens of steps)\n"
    "  --val-tolerance V         relative validation-loss difference accepted from a lossy strategy\n"
    "                            (default 0.01)\n"
    "  --warmup W                steps left out of throughput figures (default: a tenth, at least 1)\n"
    "  --set KEY=VALUE           override a key in every config (repeatable)\n"
    "  --allow-different-models  compare configs whose model, data, seed or batch differ\n\n"
    "exit status: 0 when every trial completed, 1 when any failed (the report still lists it, with its error\n"
    "and its log, and compares the rest), 2 usage, or configs that do not load, do not pass `tessel check`\n"
    "or do not train the same model (nothing runs).\n"
    "Ctrl-C, SIGTERM or SIGHUP stop the running trial after its step and end the comparison without a\n"
    "report: exit status 128 + the signal. An earlier comparison's report and charts in DIR are removed\n"
    "before any configuration is checked, so none is left over runs it no longer describes.\n",
    compare, (const tsl_options *const[]){&compare_options, NULL}};

/* "file.yaml@4" -> file.yaml on 4 ranks; no suffix -> dflt. */
static int parse_target(char *arg, int dflt, tsl_cmp_run *run) {
  /* a config whose own name holds '@' (we@ird.yaml) is named whole */
  char *at = tsl_path_exists(arg) ? NULL : strrchr(arg, '@');
  long long ranks = dflt;
  if (at) { /* "A.yaml@" names no count: a slip, not a file called that */
    if (tsl_parse_count(at + 1, &ranks) != 0 || ranks < 1 || ranks > 4096) return -1;
    *at = '\0';
  }
  run->config = arg;
  run->ranks = (int)ranks;
  return 0;
}

/* The warm-up, defaulted to a tenth of the steps (at least 1), and 0 or
** the usage error when it leaves no step to measure: one not given names
** the default, so that `--steps 1` is not told about a --warmup it never
** gave. */
static int steps_usage(tsl_compare *c) {
  if (c->warmup >= 0) {
    if (c->warmup < c->steps) return 0;
    return tsl_usage_error(&tsl_cmd_compare, "--warmup %d must be below --steps %lld", c->warmup, (long long)c->steps);
  }
  c->warmup = (int)TSL_MAX(1, c->steps / 10);
  if (c->warmup < c->steps) return 0;
  return tsl_usage_error(&tsl_cmd_compare, "--steps %lld leaves no step to measure after the default --warmup of %d "
                         "(a tenth of the steps, at least 1): give --steps %d or more, or --warmup 0",
                         (long long)c->steps, c->warmup, c->warmup + 1);
}

static int compare(int argc, char **argv) {
  const char **sets = tsl_option_slots(argc);
  if (!sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  tsl_compare c = {.steps = 20, .repeat = 3, .tolerance = 1e-5, .val_tolerance = 0.01, .warmup = -1, .sets = sets};
  long long ranks = 1, v;
  int opt;
  snprintf(c.out, sizeof c.out, "runs/compare");
  optind = 0;
  while ((opt = tsl_getopt(argc, argv, &compare_options)) != -1) {
    int ok = 1;
    const char *want = NULL;
    switch (opt) {
      case 'S':
        ok = tsl_parse_count(optarg, &v) == 0 && v >= 1 && v <= 1 << 30;
        c.steps = v;
        want = "a whole number of steps from 1 to 1073741824";
        break;
      case 'n':
        ok = tsl_parse_count(optarg, &ranks) == 0 && ranks >= 1 && ranks <= 4096;
        want = "a number of ranks from 1 to 4096";
        break;
      case 'o': /* short enough that every path made under it fits its buffer whole */
        ok = strlen(optarg) <= TSL_CMP_MAX_OUT;
        if (ok) snprintf(c.out, sizeof c.out, "%s", optarg);
        want = "a directory path of at most " TSL_STR(TSL_CMP_MAX_OUT) " bytes";
        break;
      case 't':
        ok = tsl_parse_number(optarg, &c.tolerance) == 0 && c.tolerance >= 0;
        want = "a relative tolerance of 0 or more";
        break;
      case 'w':
        ok = tsl_option_int(optarg, 0, 1 << 30, &c.warmup);
        want = "a whole number of steps from 0 to 1073741824";
        break;
      case 'r':
        ok = tsl_option_int(optarg, 1, TSL_CMP_MAX_TRIALS, &c.repeat);
        want = "a number of trials from 1 to " TSL_STR(TSL_CMP_MAX_TRIALS);
        break;
      case 'v':
        ok = tsl_parse_number(optarg, &c.val_tolerance) == 0 && c.val_tolerance >= 0;
        want = "a relative tolerance of 0 or more";
        break;
      case 's': sets[c.n_sets++] = optarg; break;
      case 'a': c.allow_different = 1; break;
      default: ok = 0;
    }
    if (!ok) {
      free(sets);
      return tsl_option_error(&tsl_cmd_compare, compare_longs, opt, want);
    }
  }
  c.n_runs = argc - optind;
  int usage = steps_usage(&c);
  if (c.n_runs < 2 || usage) {
    free(sets);
    return c.n_runs < 2 ? tsl_usage_error(&tsl_cmd_compare, "give at least two configs to compare") : usage;
  }
  c.runs = calloc((size_t)c.n_runs, sizeof *c.runs);
  if (!c.runs) {
    free(sets);
    return TSL_EXIT_FAILURE;
  }
  for (int r = 0; r < c.n_runs; r++)
    if (parse_target(argv[optind + r], (int)ranks, &c.runs[r]) != 0) {
      free(c.runs);
      free(sets);
      return tsl_usage_error(&tsl_cmd_compare, "bad rank count in '%s' (CONFIG@RANKS)", argv[optind + r]);
    }
  tsl_status st = tsl_mkdir_p(c.out);
  if (st >= 0) st = tsl_compare_plan(&c);
  if (st >= 0 && !tsl_spawn_stopped()) tsl_compare_run_all(&c);
  int failed = 0, stopped = tsl_spawn_stopped();
  if (!stopped && st >= 0) {
    st = tsl_compare_measure(&c);
    if (st >= 0) st = tsl_compare_report(&c, stdout);
    for (int r = 0; r < c.n_runs; r++)
      for (int k = 0; k < c.repeat; k++) failed |= c.runs[r].failed || c.runs[r].trials[k].failed;
  }
  tsl_compare_free(&c);
  free(c.runs);
  free(sets);
  if (stopped) return tsl_spawn_stop_report("compare"); /* what a stopped check or trial said is not the answer */
  if (st < 0) return tsl_fail(st);
  return failed ? TSL_EXIT_FAILURE : TSL_EXIT_OK;
}
