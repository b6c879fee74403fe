/* tools/cli/cmd_bench_comm.c — `tessel bench comm`: the collectives of the
** ranks at hand, as a machine profile for `tessel plan`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "cli/cli.h"
#include "common/util.h"
#include "plan/commbench.h"
#include "plan/profile.h"

static tsl_status save(const char *path, const char *json) {
  char *dir = tsl_dirname(path);
  tsl_status st = dir ? tsl_mkdir_p(dir) : TESSEL_E_NOMEM;
  free(dir);
  if (st < 0) return st;
  char *line = tsl_asprintf("%s\n", json);
  st = line ? tsl_atomic_write_file(path, line, strlen(line)) : TESSEL_E_NOMEM;
  free(line);
  if (st < 0) return st;
  printf("recorded in %s\n", path);
  return TESSEL_OK;
}

static const struct option comm_longs[] = {{"device", required_argument, 0, 'd'}, {"out", required_argument, 0, 'o'},
                                           {"max-bytes", required_argument, 0, 'm'}, {0, 0, 0, 0}};
const tsl_options tsl_bench_comm_options = {"", comm_longs};

int tsl_bench_comm(int argc, char **argv) {
  tsl_commbench_opts o = {.device = TSL_DEVICE_CPU, .max_bytes = 8 << 20};
  const char *out = NULL;
  uint64_t max_bytes;
  int c;
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &tsl_bench_comm_options)) != -1) {
    if (c == 'd' && (!strcmp(optarg, "cpu") || !strcmp(optarg, "cuda"))) {
      o.device = !strcmp(optarg, "cuda") ? TSL_DEVICE_CUDA : TSL_DEVICE_CPU;
      if (o.device == TSL_DEVICE_CUDA) o.max_bytes = 128 << 20;
    } else if (c == 'o') {
      out = optarg;
    } else if (c == 'm' && tsl_parse_size(optarg, &max_bytes) == 0 && max_bytes >= 4096) {
      o.max_bytes = (double)max_bytes;
    } else {
      return tsl_option_error(&tsl_cmd_bench, comm_longs, c, c == 'd' ? "cpu or cuda" : "a size of at least 4KiB");
    }
  }
  if (optind != argc) return tsl_usage_error(&tsl_cmd_bench, "bench comm takes no arguments");
  tsl_world w;
  tsl_status st = tsl_world_init(&argc, &argv, &w);
  if (st < 0) return tsl_fail(st);
  char *json = NULL, *previous = NULL;
  char *path = out ? tsl_strdup(out) : tsl_comm_profile_path(o.device == TSL_DEVICE_CUDA ? "cuda" : "cpu");
  if (w.rank == 0 && path && tsl_path_exists(path) && tsl_read_file(path, &previous, NULL) < 0) tsl_error_clear();
  o.previous = previous;
  st = tsl_commbench_run(&w, &o, stdout, &json);
  if (st >= 0 && w.rank == 0) st = save(path, json);
  if (st < 0 && (w.rank == 0 || w.size == 1)) tsl_fail(st);
  free(json);
  free(previous);
  free(path);
  tsl_world_finalize(&w);
  return tsl_status_exit_code(st);
}
