/* tools/cli/cmd_run.c — `tessel run CONFIG`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "common/util.h"
#include "train/run.h"
#include "train/signals.h"

static int run(int argc, char **argv);

const tsl_command tsl_cmd_run = {
    "run", "train the model a config describes (under mpirun/srun for several ranks)",
    "usage: tessel run CONFIG [--set KEY=VALUE]... [--resume CKPT_DIR]\n\n"
    "Trains as CONFIG says. Without a launcher it is one process; under `mpirun -n N` or `srun` each\n"
    "process is a rank (or use `tessel launch -n N CONFIG`). Rank 0 prints the log.\n\n"
    "  --set KEY=VALUE   override a config key, e.g. --set model.layers=6 (repeatable)\n"
    "  --resume DIR      resume from this checkpoint directory instead of checkpoint.resume\n\n"
    "SIGTERM, SIGINT (Ctrl-C), SIGUSR1, SIGHUP (a closed terminal or ssh session) or SIGPIPE (the log's\n"
    "reader gone: `| tee` ended) stop the run after the step in progress, with a checkpoint; a second\n"
    "SIGINT, SIGTERM or SIGHUP aborts at once. train.stop_after and train.stop_after_time stop it the\n"
    "same way.\n\n"
    "exit status: 0 finished, 1 runtime failure, 2 usage or configuration error, 3 the strategy declines\n"
    "this device (its setup reports the combination as unsupported), 75 stopped early with a checkpoint:\n"
    "run the same command again to resume (e.g. requeue the job)\n",
    run};

static int run(int argc, char **argv) {
  static const struct option opts[] = {{"set", required_argument, 0, 's'}, {"resume", required_argument, 0, 'r'}, {0, 0, 0, 0}};
  const char **sets = tsl_option_slots(argc);
  int n_sets = 0, c;
  if (!sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  tsl_train_opts topts = {.started = tsl_now()};
  optind = 0;
  while ((c = getopt_long(argc, argv, "s:r:", opts, NULL)) != -1) {
    if (c == 's') {
      sets[n_sets++] = optarg;
    } else if (c == 'r' && optarg[0]) {
      topts.resume_dir = optarg;
    } else {
      free(sets);
      return tsl_usage_error(&tsl_cmd_run, c == 'r' ? "--resume needs a checkpoint directory" : "bad option");
    }
  }
  if (optind != argc - 1) {
    free(sets);
    return tsl_usage_error(&tsl_cmd_run, "expected one CONFIG file");
  }

  tsl_world world;
  tsl_signals_install(0);
  tsl_status st = tsl_world_init(&argc, &argv, &world);
  if (st >= 0) {
    tsl_signals_announce(world.rank == 0);
    st = tsl_run_config(&world, argv[optind], sets, n_sets, &topts);
    tsl_world_finalize(&world);
  } else {
    tsl_fail(st);
  }
  tsl_signals_restore();
  free(sets);
  return st == TSL_TRAIN_STOPPED ? TSL_EXIT_STOPPED : tsl_status_exit_code(st);
}
