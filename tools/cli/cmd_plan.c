/* tools/cli/cmd_plan.c — `tessel plan CONFIG --world N`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "common/util.h"
#include "plan/plan.h"
#include "plan/validate.h"

#define MAX_SETS 256
#define MAX_ONLY 32
#define MAX_TOP 60

static int plan(int argc, char **argv);

static const struct option plan_longs[] = {{"world", required_argument, 0, 'w'},    {"profile", required_argument, 0, 'p'},
                                           {"memory-limit", required_argument, 0, 'm'}, {"top", required_argument, 0, 'k'},
                                           {"write", required_argument, 0, 'W'},    {"validate", no_argument, 0, 'v'},
                                           {"steps", required_argument, 0, 'S'},    {"strategy", required_argument, 0, 'x'},
                                           {"set", required_argument, 0, 's'},      {"json", required_argument, 0, 'j'},
                                           {"repeat", required_argument, 0, 'r'},   {0, 0, 0, 0}};
static const tsl_options plan_options = {"", plan_longs};

const tsl_command tsl_cmd_plan = {
    "plan", "predict memory and step time of every strategy and its options for N ranks; rank them",
    "usage: tessel plan CONFIG --world N [--profile FILE] [--memory-limit SIZE] [--top K] [--write DIR]\n"
    "                   [--validate] [--steps S] [--repeat R] [--json FILE] [--strategy NAME]...\n"
    "                   [--set KEY=VALUE]...\n\n"
    "Plans the configuration's model and batch under every installed strategy and each set of options the\n"
    "strategy offers for N ranks (tp/pp/dp factorisations, ZeRO stages, placements, 2.5D depths ...), without\n"
    "running anything: each candidate is checked like `tessel check --world N`, then the strategy predicts,\n"
    "rank by rank, its memory per tier split into parameters, gradients, optimizer state, activations and\n"
    "scratch, its bytes per step per communicator and collective, and its FLOPs. A machine profile turns\n"
    "those into a step time split into compute, communication (what overlap leaves exposed) and pipeline\n"
    "bubble. Candidates that fit in memory are ranked by predicted step time. The cost model, its\n"
    "assumptions and where it is wrong: docs/plan.md.\n\n"
    "  --world N           ranks to plan for\n"
    "  --profile FILE      a machine profile (JSON, docs/plan.md); default: this machine as measured by\n"
    "                      `tessel bench peak` and `tessel bench comm` (without them: memory and traffic only)\n"
    "  --memory-limit SIZE device memory per rank (default: device.memory_limit, else the profile's device);\n"
    "                      --write's configurations carry it as device.memory_limit\n"
    "  --top K             rows of the table (default 10, at most 60)\n"
    "  --write DIR         write the K best fitting candidates' configurations as DIR/NN-STRATEGY.yaml\n"
    "  --validate          run the K best fitting candidates through `tessel compare` and print predicted\n"
    "                      against measured step time and its split, memory and traffic, and whether the\n"
    "                      first-ranked is the measured fastest (or tied with it within the noise)\n"
    "  --steps S           steps per validation trial (default 20)\n"
    "  --repeat R          validation trials per candidate, interleaved (default 3)\n"
    "  --json FILE         every candidate, ranked, with its figures (memory per tier and kind at its\n"
    "                      largest rank, rank 0's traffic lines, FLOPs, time) as JSON\n"
    "  --strategy NAME     plan only this strategy (repeatable): an installed one or the config's own\n"
    "  --set KEY=VALUE     override a config key (repeatable)\n\n"
    "exit status: 0 planned (even when nothing fits), 2 usage or configuration error (a --strategy that is not\n"
    "installed too), 1 other failure,\n"
    "128 + the signal when Ctrl-C, SIGTERM or SIGHUP stopped --validate (its running trial stops after its step)\n",
    plan, (const tsl_options *const[]){&plan_options, NULL}};

typedef struct plan_args {
  const char *sets[MAX_SETS], *only[MAX_ONLY], *profile, *write_dir, *json;
  int n_sets, n_only, top, validate, steps, repeat;
  long long world;
  uint64_t memory_limit;
} plan_args;

static int parse_args(int argc, char **argv, plan_args *a) {
  int c;
  *a = (plan_args){.top = 10, .steps = 20, .repeat = 3};
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &plan_options)) != -1) {
    int ok = 1;
    const char *want = NULL;
    switch (c) {
      case 'w':
        ok = tsl_parse_count(optarg, &a->world) == 0 && a->world >= 1 && a->world <= 1 << 16;
        want = "a number of ranks from 1 to 65536";
        break;
      case 'p': a->profile = optarg; break;
      case 'm':
        ok = tsl_parse_size(optarg, &a->memory_limit) == 0 && a->memory_limit > 0;
        want = "a size above 0 (bytes, or with a unit: 80GiB)";
        break;
      case 'k':
        ok = tsl_option_int(optarg, 1, MAX_TOP, &a->top);
        want = "a number of rows from 1 to " TSL_STR(MAX_TOP);
        break;
      case 'W': a->write_dir = optarg; break;
      case 'j': a->json = optarg; break;
      case 'v': a->validate = 1; break;
      case 'S':
        ok = tsl_option_int(optarg, 2, 1 << 20, &a->steps);
        want = "a number of steps from 2 to 1048576";
        break;
      case 'r':
        ok = tsl_option_int(optarg, 1, 32, &a->repeat);
        want = "a number of trials from 1 to 32";
        break;
      case 'x':
        ok = a->n_only < MAX_ONLY;
        if (ok) a->only[a->n_only++] = optarg;
        want = "at most " TSL_STR(MAX_ONLY) " strategies";
        break;
      case 's':
        ok = a->n_sets < MAX_SETS;
        if (ok) a->sets[a->n_sets++] = optarg;
        want = "at most " TSL_STR(MAX_SETS) " overrides";
        break;
      default: ok = 0;
    }
    if (!ok) return tsl_option_error(&tsl_cmd_plan, plan_longs, c, want);
  }
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_plan, "expected one CONFIG file");
  if (!a->world) return tsl_usage_error(&tsl_cmd_plan, "--world N is required: the ranks to plan for");
  return TSL_EXIT_OK;
}

/* The profile: the file given, or this machine's measurements (a missing
** one only leaves the times out). */
static tsl_status load_profile(const plan_args *a, const char *backend, tsl_plan *p) {
  tsl_status st;
  if (a->profile) {
    if ((st = tsl_profile_load(a->profile, &p->profile)) < 0) return st;
    p->have_profile = 1;
    return TESSEL_OK;
  }
  if (tsl_profile_local(backend, &p->profile) >= 0) {
    p->have_profile = 1;
  } else {
    snprintf(p->no_profile, sizeof p->no_profile, "%s", tsl_error_message());
    tsl_error_clear();
  }
  return TESSEL_OK;
}

static int plan(int argc, char **argv) {
  plan_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc != TSL_EXIT_OK) return rc;
  const char *config = argv[optind];
  if (!tsl_path_exists(config)) return tsl_usage_error(&tsl_cmd_plan, "%s does not exist", config);
  if (a.profile && !tsl_path_exists(a.profile))
    return tsl_usage_error(&tsl_cmd_plan, "--profile %s does not exist (`tessel bench peak` and `tessel bench comm` "
                           "measure this machine's; docs/plan.md describes the file)", a.profile);
  tsl_plan p = {.config = config, .sets = a.sets, .n_sets = a.n_sets, .world = (int)a.world, .only = a.only,
                .n_only = a.n_only, .memory_limit = a.memory_limit};
  double t0 = tsl_now();
  tsl_status st = tsl_plan_enumerate(&p);
  if (st >= 0) st = load_profile(&a, p.cuda ? "cuda" : "cpu", &p);
  if (st >= 0) st = tsl_plan_estimate_all(&p);
  if (st >= 0) {
    tsl_plan_rank_all(&p);
    tsl_plan_report(&p, a.top, stdout);
    printf("\nplanned %d candidate(s) in %.2f s\n", p.n, tsl_now() - t0);
    /* the table shows before the slower --json and --validate; one that
    ** did not reach its file ends the plan */
    rc = tsl_stdout_written();
    if (rc == TSL_EXIT_OK && a.json) st = tsl_plan_json(&p, a.json);
  }
  char **written = NULL;
  int n_written = 0;
  if (st >= 0 && rc == TSL_EXIT_OK && (a.write_dir || a.validate))
    st = tsl_plan_write(&p, a.top, a.write_dir ? a.write_dir : "runs/plan/configs", &written, &n_written);
  if (st >= 0 && rc == TSL_EXIT_OK && a.validate)
    st = tsl_plan_validate(&p, written, n_written, a.steps, a.repeat, stdout);
  for (int i = 0; i < n_written; i++) free(written[i]);
  free(written);
  tsl_plan_free(&p);
  return tsl_spawn_stopped() ? tsl_spawn_stop_report("plan --validate") : st < 0 ? tsl_fail(st) : rc;
}
