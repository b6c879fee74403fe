/* core/cli/cmd_bench.c — `tessel bench peak`: the sgemm ceiling of this machine. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli/cli.h"
#include "common/util.h"
#include "runtime/cpus.h"
#include "train/peak.h"

static int bench(int argc, char **argv);

const tsl_command tsl_cmd_bench = {
    "bench", "measure this machine's GEMM peak for MFU: tessel bench peak",
    "usage: tessel bench peak [--threads N]\n\n"
    "Measures the sustained single-precision GEMM rate of the CPU backend (the best of several square\n"
    "sizes and repeats) and records it for this machine, so that runs without device.peak_tflops report\n"
    "MFU against it. The first run on a machine with no record measures it itself (a shorter\n"
    "measurement); this command measures again and replaces the record. The record lives in\n"
    "$XDG_CACHE_HOME/tessel/peak-HOST.json (or ~/.cache/tessel/peak-HOST.json); a run whose ranks use\n"
    "another number of threads is credited the same rate per thread.\n\n"
    "  --threads N   threads to measure with (default: every core this process may use)\n",
    bench};

static int bench(int argc, char **argv) {
  static const struct option opts[] = {{"threads", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  tsl_cpus cpus;
  tsl_cpus_self(&cpus);
  long long threads = cpus.cores;
  int c;
  if (argc < 2 || strcmp(argv[1], "peak") != 0) return tsl_usage_error(&tsl_cmd_bench, "expected `bench peak`");
  optind = 0;
  argc--, argv++;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (c != 'j' || tsl_parse_count(optarg, &threads) != 0 || threads < 1)
      return tsl_usage_error(&tsl_cmd_bench, "bad option or value");
  tsl_backend be = *tsl_cpu_backend();
  tsl_backend_opts bo = {.size = sizeof bo, .threads = (int)threads};
  tsl_status st = be.init(&be, &bo);
  if (st < 0) return tsl_fail(st);
  printf("%s\n", be.describe(&be));
  double peak = tsl_peak_measure(&be, 2048, stdout);
  printf("peak: %.1f GFLOP/s with %lld thread(s)\n", peak, threads);
  be.shutdown(&be);
  st = tsl_peak_save((int)threads, peak);
  if (st < 0) return tsl_fail(st);
  char *path = tsl_peak_cache_path();
  printf("recorded in %s\n", path ? path : "the cache");
  free(path);
  return TSL_EXIT_OK;
}
