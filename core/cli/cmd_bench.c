/* core/cli/cmd_bench.c — `tessel bench peak`: the sgemm ceiling of this
** machine; `tessel bench comm` (cmd_bench_comm.c): its collectives. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cli/cli.h"
#include "common/util.h"
#include "train/report.h"

static int bench(int argc, char **argv);

const tsl_command tsl_cmd_bench = {
    "bench", "measure this machine: tessel bench peak (GEMM peak, for MFU), tessel bench comm (collectives)",
    "usage: tessel bench peak [--threads N]\n"
    "       mpirun -n N tessel bench comm [--device cpu|cuda] [--max-bytes SIZE] [--out FILE]\n\n"
    "Measures the sustained single-precision GEMM rate of the CPU backend (the best of several square\n"
    "sizes and repeats) and records it, so that runs without device.peak_tflops report MFU against it.\n"
    "The record lives in $XDG_CACHE_HOME/tessel/peak.json (or ~/.cache/tessel/peak.json); a run whose\n"
    "ranks use another number of threads is credited the same rate per thread.\n\n"
    "  --threads N   threads to measure with (default: all cores)\n\n"
    "bench comm times every collective (all-reduce, reduce-scatter, all-gather, all-to-all, broadcast,\n"
    "reduce, paired sends) on groups of 2, 4, ... up to N consecutive ranks, at five message sizes up to\n"
    "--max-bytes (default 8MiB; 128MiB on cuda), through MPI (cpu) or NCCL (cuda), and fits an alpha-beta\n"
    "model per collective and group size: a call costs alpha plus its bus bytes over the bus bandwidth. With\n"
    "the memory bandwidth a rank streams at, it is recorded as a machine profile for `tessel plan` in\n"
    "$XDG_CACHE_HOME/tessel/comm-BACKEND.json (or ~/.cache/tessel/...), or in --out FILE.\n",
    bench};

/* Best GFLOP/s of C = A·B at n×n over `repeats` timed runs after a warm-up. */
static double gemm_rate(tsl_backend *be, int n, int repeats) {
  size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  double best = 0;
  if (a && b && c) {
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) a[i] = b[i] = (float)(i % 13) * 0.01f;
    be->gemm(be, NULL, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, TESSEL_F32);
    for (int r = 0; r < repeats; r++) {
      double t0 = tsl_now();
      be->gemm(be, NULL, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, TESSEL_F32);
      double rate = 2.0 * n * (double)n * n / (tsl_now() - t0) / 1e9;
      if (rate > best) best = rate;
    }
  }
  free(a);
  free(b);
  free(c);
  return best;
}

static tsl_status save_peak(int threads, double gflops) {
  char *path = tsl_peak_cache_path(), *dir = path ? tsl_dirname(path) : NULL;
  tsl_status st = dir ? tsl_mkdir_p(dir) : TESSEL_E_NOMEM;
  if (st >= 0) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", "cpu");
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON_AddNumberToObject(o, "gflops", gflops);
    char *text = cJSON_Print(o);
    FILE *f = fopen(path, "w");
    if (!f || !text || fputs(text, f) < 0) st = tsl_error(TESSEL_E_IO, "%s: cannot write", path);
    if (f) fclose(f);
    free(text);
    cJSON_Delete(o);
  }
  if (st >= 0) printf("recorded in %s\n", path);
  free(path);
  free(dir);
  return st;
}

static int bench(int argc, char **argv) {
  static const struct option opts[] = {{"threads", required_argument, 0, 'j'}, {0, 0, 0, 0}};
  long long threads = sysconf(_SC_NPROCESSORS_ONLN);
  int c;
  if (argc >= 2 && !strcmp(argv[1], "comm")) return tsl_bench_comm(argc - 1, argv + 1);
  if (argc < 2 || strcmp(argv[1], "peak") != 0) return tsl_usage_error(&tsl_cmd_bench, "expected `bench peak` or `bench comm`");
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
  double peak = 0;
  static const int sizes[] = {512, 1024, 2048};
  for (size_t i = 0; i < TSL_ARRAY_LEN(sizes); i++) {
    double r = gemm_rate(&be, sizes[i], sizes[i] >= 2048 ? 3 : 8);
    printf("sgemm %4d x %4d x %4d: %8.1f GFLOP/s\n", sizes[i], sizes[i], sizes[i], r);
    if (r > peak) peak = r;
  }
  printf("peak: %.1f GFLOP/s with %lld thread(s)\n", peak, threads);
  be.shutdown(&be);
  st = save_peak((int)threads, peak);
  return st < 0 ? tsl_fail(st) : TSL_EXIT_OK;
}
