/* tools/cli/cmd_check.c — `tessel check CONFIG [--world N]`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "cli/cli.h"
#include "model/model.h"
#include "plugin/host.h"
#include "runtime/build.h"
#include "train/data_source.h"

static int check(int argc, char **argv);

static const struct option check_longs[] = {
    {"world", required_argument, 0, 'w'}, {"set", required_argument, 0, 's'}, {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};
static const tsl_options check_options = {"w:s:q", check_longs};

const tsl_command tsl_cmd_check = {
    "check", "validate a config (and its strategy's options and mesh) and print it resolved",
    "usage: tessel check CONFIG [--world N] [--set KEY=VALUE]... [--quiet]\n\n"
    "Validates the whole configuration without training: every section, the strategy plugin's own options,\n"
    "its mesh against a world of N ranks (default 1), the batch split, the parameter layouts, and the data:\n"
    "the tokenizer, and every shard's vocabulary and length (shards data.text makes are left to the run), and\n"
    "the checkpoint checkpoint.resume would resume from, with the warnings that resume would give (another\n"
    "seed, batch size or data). Prints the resolved configuration — base files merged, --set applied,\n"
    "defaults filled in — on standard output.\n"
    "Errors read FILE:LINE:COL: message.\n\n"
    "  --world N         the number of ranks to validate for (default 1)\n"
    "  --set KEY=VALUE   override a config key (repeatable)\n"
    "  --quiet           print nothing on success\n\n"
    "exit status: 0 valid, 2 invalid configuration or usage, 1 other failure (e.g. a broken plugin file)\n",
    check, (const tsl_options *const[]){&check_options, NULL}};

typedef struct check_args {
  const char **sets;
  int n_sets, quiet;
  long long world;
} check_args;

/* 0, or the exit status of a usage error. */
static int parse_args(int argc, char **argv, check_args *a) {
  int c;
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &check_options)) != -1) {
    if (c == 'w') {
      if (tsl_parse_count(optarg, &a->world) != 0 || a->world < 1 || a->world > 1 << 20)
        return tsl_usage_error(&tsl_cmd_check, "--world needs a number of ranks from 1 to %d, got '%s'", 1 << 20,
                               optarg);
    } else if (c == 's') {
      a->sets[a->n_sets++] = optarg;
    } else if (c == 'q') {
      a->quiet = 1;
    } else {
      return tsl_usage_error(&tsl_cmd_check, "bad option");
    }
  }
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_check, "expected one CONFIG file");
  return 0;
}

tsl_status tsl_check_config(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets, int world,
                            int resume, tessel_model_dims *dims) {
  tsl_model *model = NULL; /* the runtime's: destroyed with it */
  tsl_world_single(&rt->world, world);
  tsl_status st = tsl_runtime_configure(rt, path, sets, n_sets, world);
  if (st >= 0) st = tsl_model_dims_for(rt, dims);
  if (st >= 0) st = tsl_model_plan(rt, dims, &model);
  if (st >= 0) st = tsl_data_check(rt);
  if (st >= 0 && resume) st = tsl_ckpt_check_resume(rt, resume == TSL_CHECK_RESUME_WARN);
  return st;
}

static int check(int argc, char **argv) {
  check_args a = {.sets = tsl_option_slots(argc), .world = 1};
  if (!a.sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  int usage = parse_args(argc, argv, &a);
  if (usage) {
    free(a.sets);
    return usage;
  }
  int quiet = a.quiet;
  long long world = a.world;
  tsl_runtime rt = {0};
  tessel_model_dims dims;
  tsl_status st = tsl_check_config(&rt, argv[optind], a.sets, a.n_sets, (int)world, TSL_CHECK_RESUME_WARN, &dims);
  int code = TSL_EXIT_OK;
  if (st >= 0 && !quiet) {
    st = tsl_config_emit(rt.config, stdout);
    /* libyaml's writes only fill stdio's buffer: whether the resolved
    ** config reached its file is known after the flush, and "ok" must not
    ** follow one that did not */
    if (st >= 0) code = tsl_stdout_written();
  }
  if (st >= 0 && !quiet && code == TSL_EXIT_OK) {
    char mesh[256] = "";
    for (int a = 0; a < rt.mesh.naxes; a++) {
      char part[64];
      snprintf(part, sizeof part, "%s%s %d", a ? " × " : "", rt.mesh.names[a] ? rt.mesh.names[a] : "axis", rt.mesh.sizes[a]);
      strncat(mesh, part, sizeof mesh - strlen(mesh) - 1);
    }
  if (st >= 0) st = tsl_runtime_check_backend(rt);
    fprintf(stderr, "ok: %s is valid for %lld rank(s): strategy %s, mesh %s, %d micro-batch(es) of %d per data rank\n",
            argv[optind], world, rt.plugin ? rt.plugin->name : "none", mesh, dims.micro_steps, dims.micro_batch);
  }
  if (st < 0) code = tsl_fail(st);
  tsl_runtime_destroy(&rt);
  free(a.sets);
  return code;
}
