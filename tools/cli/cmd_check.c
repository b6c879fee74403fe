/* tools/cli/cmd_check.c — `tessel check CONFIG [--world N]`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "cli/cli.h"
#include "common/log.h"
#include "model/model.h"
#include "plan/plan.h"
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
    "Validates the whole configuration without training: every section, the device backend (device.kind: cuda\n"
    "needs a build with the CUDA backend), the strategy plugin's own options, its mesh against a world of N\n"
    "ranks (default 1), the batch split, the parameter layouts, with device.memory_limit whether the strategy\n"
    "can train in that device (its estimate, as `tessel plan` asks it: gemini's least device), and the data:\n"
    "the tokenizer, and every shard's vocabulary and length (shards data.text makes are left to the run), and\n"
    "the checkpoint checkpoint.resume would resume from, with the warnings that resume would give (another\n"
    "seed, batch size or data). Prints the resolved configuration — base files merged, --set applied,\n"
    "defaults filled in — on standard output.\n"
    "Errors read FILE:LINE:COL: message.\n\n"
    "  -w, --world N         the number of ranks to validate for (default 1)\n"
    "  -s, --set KEY=VALUE   override a config key (repeatable)\n"
    "  -q, --quiet           print nothing on success\n\n"
    "exit status: 0 valid, 2 invalid configuration or usage, 1 other failure (e.g. a broken plugin file, or\n"
    "a strategy that cannot train in device.memory_limit, as the run would fail)\n",
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

/* A strategy's refusal of device.memory_limit, the one its setup would
** give, from the estimate `tessel plan` asks it for (nothing allocated,
** nothing written): a strategy that sizes its placement to the device
** (gemini) knows its least device only from the whole plan. Without a
** limit the device is what the run finds, which a check cannot know. Only
** an out-of-memory refusal is the run's: another failure of the estimate
** says nothing of the run, and is a warning. */
static tsl_status check_device_memory(tsl_runtime *rt, int world, const tessel_model_dims *dims) {
  if (!rt->plugin || !rt->plugin->vt.estimate || !rt->settings.device.memory_limit) return TESSEL_OK;
  tsl_plan_cand *c = calloc(1, sizeof *c);
  if (c) c->ranks = calloc((size_t)world, sizeof *c->ranks);
  if (!c || !c->ranks) {
    free(c);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory estimating %d rank(s)", world);
  }
  c->world = world;
  c->mesh = rt->mesh;
  c->dims = *dims;
  c->device_capacity = rt->settings.device.memory_limit;
  tsl_status st = tsl_plan_estimate_ranks(NULL, c, rt);
  if (st < 0 && st != TESSEL_E_NOMEM) {
    tsl_warn("device.memory_limit not checked against the strategy's plan: %s", tsl_error_message());
    tsl_error_clear();
    st = TESSEL_OK;
  }
  tsl_plan_cand_free(c);
  free(c);
  return st;
}

tsl_status tsl_check_config(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets, int world,
                            int resume, tessel_model_dims *dims) {
  tsl_model *model = NULL; /* the runtime's: destroyed with it */
  tsl_world_single(&rt->world, world);
  tsl_status st = tsl_runtime_configure(rt, path, sets, n_sets, world);
  if (st >= 0) st = tsl_runtime_check_backend(rt);
  if (st >= 0) st = tsl_model_dims_for(rt, dims);
  if (st >= 0) st = tsl_model_plan(rt, dims, &model);
  if (st >= 0) st = check_device_memory(rt, world, dims);
  if (st >= 0) st = tsl_data_check(rt);
  if (st >= 0 && resume) st = tsl_ckpt_check_resume(rt, resume == TSL_CHECK_RESUME_WARN, TSL_CLI_RESUME_CMD);
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
    fprintf(stderr, "ok: %s is valid for %lld rank(s): strategy %s, mesh %s, %d micro-batch(es) of %d per data rank\n",
            argv[optind], world, rt.plugin ? rt.plugin->name : "none", mesh, dims.micro_steps, dims.micro_batch);
  }
  if (st < 0) code = tsl_fail(st);
  tsl_runtime_destroy(&rt);
  free(a.sets);
  return code;
}
