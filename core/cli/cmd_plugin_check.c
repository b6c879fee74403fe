/* core/cli/cmd_plugin_check.c — `tessel plugin-check LIB.so`: is this a
** well-formed strategy plugin, and does it train? */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "data/shard.h"
#include "plugin/elf.h"
#include "plugin/loader.h"
#include "train/run.h"

static int plugin_check(int argc, char **argv);

const tsl_command tsl_cmd_plugin_check = {
    "plugin-check", "check that a strategy plugin is well-formed and trains: tessel plugin-check LIB.so",
    "usage: tessel plugin-check LIB.so [--set KEY=VALUE]...\n\n"
    "Checks a strategy plugin file the way tessel will use it:\n"
    "  - it exports exactly one symbol, the entry point " TESSEL_STRATEGY_ENTRY_NAME ";\n"
    "  - it does not link libtessel (plugins get every service from the host table);\n"
    "  - it loads: entry point, ABI version, table size, name equal to the file name, required hooks;\n"
    "  - its hooks run through a real run on one rank: a tiny model trains two steps (create, mesh,\n"
    "    layouts, geometry, setup, the step's hooks, validation, a checkpoint, which gathers every\n"
    "    parameter) and resumes for a third from that checkpoint (the plugin's state_write, if any).\n"
    "Prints one line per check and exits 0 when all pass, 1 otherwise.\n\n"
    "  --set KEY=VALUE   override the tiny run's config, e.g. --set plugin.sync_every=2 (repeatable)\n",
    plugin_check};

static int report(int ok, const char *what, const char *detail) {
  printf("  %-4s %s%s%s\n", ok ? "ok" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
  return ok;
}

/* Exactly the entry symbol exported, and nothing of tessel needed. */
static int check_file(const char *path) {
  tsl_elf_info info;
  char buf[2048] = "";
  if (tsl_elf_read(path, &info) < 0) return report(0, "readable shared object", tsl_error_message());
  int entry = 0;
  for (int i = 0; i < info.n_exports; i++) {
    if (!strcmp(info.exports[i], TESSEL_STRATEGY_ENTRY_NAME)) entry = 1;
    else {
      strncat(buf, buf[0] ? ", " : "also exports ", sizeof buf - strlen(buf) - 1);
      strncat(buf, info.exports[i], sizeof buf - strlen(buf) - 1);
    }
  }
  int ok = report(entry && !buf[0], "exports only " TESSEL_STRATEGY_ENTRY_NAME,
                  !entry ? "the entry symbol is not exported" : buf[0] ? buf : NULL);
  buf[0] = '\0';
  int links_core = 0;
  for (int i = 0; i < info.n_needed; i++) {
    links_core |= !strncmp(info.needed[i], "libtessel", 9);
    strncat(buf, i ? ", " : "needs ", sizeof buf - strlen(buf) - 1);
    strncat(buf, info.needed[i], sizeof buf - strlen(buf) - 1);
  }
  ok &= report(!links_core, "does not link libtessel", buf);
  tsl_elf_free(&info);
  return ok;
}

static int check_load(const char *path) {
  tsl_plugin *p = NULL;
  char detail[256];
  if (tsl_plugin_open(path, &p) < 0) return report(0, "loads as a strategy", tsl_error_message());
  snprintf(detail, sizeof detail, "'%s' %s, ABI %u.%u, table %u bytes (this tessel: %zu)", p->name,
           p->vt.version ? p->vt.version : "-", TESSEL_ABI_MAJOR(p->vt.abi_version), TESSEL_ABI_MINOR(p->vt.abi_version),
           p->table_size, sizeof(tessel_strategy));
  report(1, "loads as a strategy", detail);
  tsl_plugin_free(p);
  return 1;
}

/* A token shard of uniform noise over a small vocabulary. */
static tsl_status write_tokens(const char *path, uint64_t count, uint64_t seed) {
  uint16_t *tokens = malloc(count * sizeof *tokens);
  if (!tokens) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  for (uint64_t i = 0; i < count; i++) tokens[i] = (uint16_t)(tsl_mix64(seed + i) % 64);
  tsl_status st = tsl_shard_write(path, tokens, count);
  free(tokens);
  return st;
}

/* Train two steps, then resume from the checkpoint for a third. `sets`
** holds the user's n_user overrides and has room for one more. */
static int check_run(const tsl_world *w, const char *lib, const char *dir, const char **sets, int n_user) {
  char cfg[4096], shard[4096];
  snprintf(shard, sizeof shard, "%s/train_000000.bin", dir);
  tsl_status st = write_tokens(shard, 8192, 1);
  snprintf(shard, sizeof shard, "%s/val_000000.bin", dir);
  if (st >= 0) st = write_tokens(shard, 2048, 2);
  snprintf(cfg, sizeof cfg, "%s/check.yaml", dir);
  FILE *f = st >= 0 ? fopen(cfg, "w") : NULL;
  if (!f) return report(0, "one-rank run", st < 0 ? tsl_error_message() : "cannot write its config");
  fprintf(f,
          "model: {layers: 2, heads: 2, channels: 16, seq_len: 8, vocab_size: 64}\n"
          "data: {train: \"%s/train_*.bin\", val: \"%s/val_*.bin\"}\n"
          "train: {steps: 2, batch_size: 4, eval_batches: 1, sample_tokens: 0}\n"
          "device: {threads: 1}\n"
          "plugin: {path: \"%s\"}\n"
          "checkpoint: {dir: \"%s/ckpt\"}\n"
          "log: {dir: \"%s\", level: warn, progress: never}\n",
          dir, dir, lib, dir, dir);
  fclose(f);
  tsl_train_opts opts = {0};
  st = tsl_run_config(w, cfg, sets, n_user, &opts);
  if (st >= 0) {
    sets[n_user] = "train.steps=3";
    st = tsl_run_config(w, cfg, sets, n_user + 1, &opts);
  }
  char metrics[4096], *text = NULL;
  snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", dir);
  int resumed = st >= 0 && tsl_read_file(metrics, &text, NULL) == TESSEL_OK && strstr(text, "\"step\":3,");
  free(text);
  return report(st >= 0 && resumed,
                "trains 2 steps on one rank, checkpoints, resumes for a 3rd",
                st < 0 ? "the run failed (its error is above)" : resumed ? NULL : "step 3 is missing from the metrics");
}

static int plugin_check(int argc, char **argv) {
  static const struct option opts[] = {{"set", required_argument, 0, 's'}, {0, 0, 0, 0}};
  const char **sets = tsl_option_slots(argc);
  int n_sets = 0, c;
  if (!sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  optind = 0;
  while ((c = getopt_long(argc, argv, "s:", opts, NULL)) != -1 && c == 's') sets[n_sets++] = optarg;
  if (c != -1 || optind != argc - 1) {
    free(sets);
    return tsl_usage_error(&tsl_cmd_plugin_check, c != -1 ? "bad option" : "expected one plugin file");
  }
  const char *lib = argv[optind];
  char real[4096], dir[] = "/tmp/tessel-plugin-check-......";
  memset(dir + sizeof dir - 7, 'X', 6); /* mkdtemp's template ends in six of them */
  if (!realpath(lib, real)) snprintf(real, sizeof real, "%s", lib);
  printf("plugin-check %s\n", real);
  fflush(stdout);
  int ok = check_file(real);
  ok = ok && check_load(real);
  if (ok) {
    tsl_world w;
    if (!mkdtemp(dir)) {
      free(sets);
      return tsl_fail(tsl_error(TESSEL_E_IO, "cannot create a scratch directory under /tmp"));
    }
    tsl_status st = tsl_world_init(&argc, &argv, &w);
    ok = st >= 0 ? check_run(&w, real, dir, sets, n_sets) : report(0, "MPI", tsl_error_message());
    if (st >= 0) tsl_world_finalize(&w);
    tsl_remove_tree(dir);
  }
  free(sets);
  printf("%s\n", ok ? "result: ok" : "result: FAILED");
  return ok ? TSL_EXIT_OK : TSL_EXIT_FAILURE;
}
