/* tools/cli/cmd_run.c — `tessel run CONFIG`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/util.h"
#include "train/run.h"
#include "train/signals.h"

static int run(int argc, char **argv);

const struct option tsl_run_long_options[] = {{"set", required_argument, 0, 's'}, {"resume", required_argument, 0, 'r'},
                                              {0, 0, 0, 0}};
static const tsl_options run_options = {"s:r:", tsl_run_long_options};

const tsl_command tsl_cmd_run = {
    "run", "train the model a config describes (under mpirun/srun for several ranks)",
    "usage: tessel run CONFIG [--set KEY=VALUE]... [--resume CKPT_DIR]\n\n"
    "Trains as CONFIG says. Without a launcher it is one process; under `mpirun -n N` or `srun` each\n"
    "process is a rank (or use `tessel launch -n N CONFIG`). Rank 0 prints the log.\n\n"
    "  -s, --set KEY=VALUE   override a config key, e.g. --set model.layers=6 (repeatable)\n"
    "  -r, --resume DIR      resume from this checkpoint directory instead of checkpoint.resume\n\n"
    "SIGTERM, SIGINT (Ctrl-C), SIGUSR1, SIGHUP (a closed terminal or ssh session) or SIGPIPE (the log's\n"
    "reader gone: `| tee` ended) stop the run after the step in progress, with a checkpoint; a second\n"
    "SIGINT, SIGTERM or SIGHUP aborts at once. train.stop_after and train.stop_after_time stop it the\n"
    "same way.\n\n"
    "exit status: 0 finished, 1 runtime failure, 2 usage or configuration error, 3 the strategy declines\n"
    "this device (its setup reports the combination as unsupported), 75 stopped early with a checkpoint:\n"
    "run the same command again to resume (e.g. requeue the job)\n",
    run, (const tsl_options *const[]){&run_options, NULL}};

int tsl_parse_run_args(const tsl_command *cmd, const tsl_options *opts, tsl_own_option own, void *ctx, int argc,
                       char **argv, tsl_run_args *a) {
  int c, rc;
  *a = (tsl_run_args){.sets = tsl_option_slots(argc)};
  if (!a->sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  optind = 0;
  while ((c = tsl_getopt(argc, argv, opts)) != -1) {
    if (c == 's') {
      a->sets[a->n_sets++] = optarg;
    } else if (c == 'r' && optarg[0]) {
      a->resume = optarg;
    } else if (c != 'r' && c != '?' && c != ':' && own) {
      if ((rc = own(ctx, c)) != 0) return rc;
    } else {
      return tsl_usage_error(cmd, c == 'r' ? "--resume needs a checkpoint directory" : "bad option");
    }
  }
  if (own && (rc = own(ctx, -1)) != 0) return rc;
  if (optind != argc - 1) return tsl_usage_error(cmd, "expected one CONFIG file");
  a->config = argv[optind];
  return 0;
}

static int run(int argc, char **argv) {
  tsl_run_args a;
  int rc = tsl_parse_run_args(&tsl_cmd_run, &run_options, NULL, NULL, argc, argv, &a);
  if (rc != 0) {
    free(a.sets);
    return rc;
  }
  tsl_train_opts topts = {.started = tsl_now(), .resume_dir = a.resume, .resume_cmd = TSL_CLI_RESUME_CMD};

  tsl_world world;
  tsl_signals_install(0);
  tsl_status st = tsl_world_init(&argc, &argv, &world);
  if (st >= 0) {
    tsl_signals_announce(world.rank == 0);
    st = tsl_run_config(&world, a.config, a.sets, a.n_sets, &topts);
    tsl_world_finalize(&world);
  } else {
    tsl_fail(st);
  }
  tsl_signals_restore();
  free(a.sets);
  return st == TSL_TRAIN_STOPPED ? TSL_EXIT_STOPPED : tsl_status_exit_code(st);
}
