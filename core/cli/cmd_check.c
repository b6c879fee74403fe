/* core/cli/cmd_check.c — `tessel check CONFIG [--world N]`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/gpt.h"
#include "plugin/host.h"
#include "runtime/build.h"

#define MAX_SETS 256

static int check(int argc, char **argv);

const tsl_command tsl_cmd_check = {
    "check", "validate a config (and its strategy's options and mesh) and print it resolved",
    "usage: tessel check CONFIG [--world N] [--set KEY=VALUE]... [--quiet]\n\n"
    "Validates the whole configuration without training: every section, the strategy plugin's own options,\n"
    "its mesh against a world of N ranks (default 1), the batch split and the parameter layouts. Prints the\n"
    "resolved configuration — base files merged, --set applied, defaults filled in — on standard output.\n"
    "Errors read FILE:LINE:COL: message.\n\n"
    "  --world N         the number of ranks to validate for (default 1)\n"
    "  --set KEY=VALUE   override a config key (repeatable)\n"
    "  --quiet           print nothing on success\n\n"
    "exit status: 0 valid, 2 invalid configuration or usage, 1 other failure (e.g. a broken plugin file)\n",
    check};

static int check(int argc, char **argv) {
  static const struct option opts[] = {
      {"world", required_argument, 0, 'w'}, {"set", required_argument, 0, 's'}, {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};
  const char *sets[MAX_SETS];
  int n_sets = 0, quiet = 0, c;
  long long world = 1;
  optind = 0;
  while ((c = getopt_long(argc, argv, "w:s:q", opts, NULL)) != -1) {
    if (c == 'w') {
      if (tsl_parse_count(optarg, &world) != 0 || world < 1 || world > 1 << 20)
        return tsl_usage_error(&tsl_cmd_check, "--world needs a positive number of ranks, got '%s'", optarg);
    } else if (c == 's' && n_sets < MAX_SETS) {
      sets[n_sets++] = optarg;
    } else if (c == 'q') {
      quiet = 1;
    } else {
      return tsl_usage_error(&tsl_cmd_check, "bad option");
    }
  }
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_check, "expected one CONFIG file");

  tsl_runtime rt = {0};
  tsl_model *model = NULL;
  tessel_model_dims dims;
  tsl_world_single(&rt.world, (int)world);
  tsl_status st = tsl_runtime_configure(&rt, argv[optind], sets, n_sets, (int)world);
  if (st >= 0) st = tsl_model_dims_for(&rt, &dims);
  if (st >= 0) st = tsl_model_plan(&rt, &dims, &model);
  if (st >= 0 && !quiet) {
    st = tsl_config_emit(rt.config, stdout);
    fflush(stdout);
    char mesh[256] = "";
    for (int a = 0; a < rt.mesh.naxes; a++) {
      char part[64];
      snprintf(part, sizeof part, "%s%s %d", a ? " × " : "", rt.mesh.names[a] ? rt.mesh.names[a] : "axis", rt.mesh.sizes[a]);
      strncat(mesh, part, sizeof mesh - strlen(mesh) - 1);
    }
    fprintf(stderr, "ok: %s is valid for %lld rank(s): strategy %s, mesh %s, %d micro-batch(es) of %d per data rank\n",
            argv[optind], world, rt.plugin ? rt.plugin->name : "none", mesh, dims.micro_steps, dims.micro_batch);
  }
  int code = st < 0 ? tsl_fail(st) : TSL_EXIT_OK;
  tsl_runtime_destroy(&rt);
  return code;
}
