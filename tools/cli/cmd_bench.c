/* tools/cli/cmd_bench.c — `tessel bench peak`: the sgemm ceiling of this
** machine; `tessel bench comm` (cmd_bench_comm.c): its collectives. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"
#include "runtime/cpus.h"
#include "train/peak.h"

static int bench(int argc, char **argv);

static const struct option peak_longs[] = {{"threads", required_argument, 0, 'j'}, {0, 0, 0, 0}};
static const tsl_options peak_options = {"", peak_longs};

const tsl_command tsl_cmd_bench = {
    "bench", "measure this machine: tessel bench peak (GEMM peak, for MFU), tessel bench comm (collectives)",
    "usage: tessel bench peak [--threads N]\n"
    "       mpirun -n N tessel bench comm [--device cpu|cuda] [--max-bytes SIZE] [--out FILE]\n\n"
    "Measures the sustained single-precision GEMM rate of the CPU backend (the best of several square\n"
    "sizes and repeats) and records it for this machine, so that runs without device.peak_tflops report\n"
    "MFU against it. The first run on a machine with no record measures it itself (a shorter\n"
    "measurement); this command measures again and replaces the record. The record lives in\n"
    "$XDG_CACHE_HOME/tessel/peak-HOST.json (or ~/.cache/tessel/peak-HOST.json); a run whose ranks use\n"
    "another number of threads is credited the same rate per thread.\n\n"
    "  --threads N   threads to measure with (default and at most: every core this process may use)\n\n"
    "bench comm times every collective (all-reduce, reduce-scatter, all-gather, all-to-all, broadcast,\n"
    "reduce, paired sends) on groups of 2, 4, ... up to N consecutive ranks, at five message sizes up to\n"
    "--max-bytes (default 8MiB; 128MiB on cuda), through MPI (cpu) or NCCL (cuda), and fits an alpha-beta\n"
    "model per collective and group size: a call costs alpha plus its bus bytes over the bus bandwidth. With\n"
    "the memory bandwidth a rank streams at, it is recorded as a machine profile for `tessel plan` in\n"
    "$XDG_CACHE_HOME/tessel/comm-BACKEND.json (or ~/.cache/tessel/...), or in --out FILE; a profile keeps\n"
    "one measurement per world size N.\n",
    bench, (const tsl_options *const[]){&peak_options, &tsl_bench_comm_options, NULL}};

static int bench(int argc, char **argv) {
  tsl_cpus cpus;
  tsl_cpus_self(&cpus);
  long long threads = cpus.cores;
  int c;
  if (argc >= 2 && !strcmp(argv[1], "comm")) return tsl_bench_comm(argc - 1, argv + 1);
  if (argc < 2 || strcmp(argv[1], "peak") != 0) return tsl_usage_error(&tsl_cmd_bench, "expected `bench peak` or `bench comm`");
  optind = 0;
  argc--, argv++;
  while ((c = tsl_getopt(argc, argv, &peak_options)) != -1)
    if (c != 'j' || tsl_parse_count(optarg, &threads) != 0 || threads < 1)
      return tsl_option_error(&tsl_cmd_bench, peak_longs, c, "a number of threads of 1 or more");
  if (optind != argc) return tsl_usage_error(&tsl_cmd_bench, "bench peak takes no arguments, got '%s'", argv[optind]);
  /* threads beyond the cores only time-share them: the rate, recorded per
  ** thread, would understate every core and inflate every later MFU */
  if (threads > cpus.cores) {
    tsl_log(TESSEL_LOG_WARN, "--threads %lld is more than the %d CPU(s) this process may use: measuring with %d",
            threads, cpus.cores, cpus.cores);
    threads = cpus.cores;
  }
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
