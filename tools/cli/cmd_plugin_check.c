/* tools/cli/cmd_plugin_check.c — `tessel plugin-check LIB.so`: is this a
** well-formed strategy plugin, and does it train what one process trains?
**
** The file checks read the ELF and load the table. The training checks
** run tiny models (GPT-2 and Llama) through `tessel run` — one process
** without a strategy as the reference, then the plugin under mpirun at each
** rank count — and compare every step's loss and the first step's gradient
** norm. A plugin that declares
** TESSEL_CAP_LOSSY is judged by its final validation loss instead. Last, a
** run stopped halfway and resumed from its checkpoint must continue bit for
** bit like the run that never stopped: the plugin's state survives. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "common/util.h"
#include "data/shard.h"
#include "plugin/elf.h"
#include "plugin/loader.h"
#include "train/signals.h"

#define MAX_STEPS 16
#define STEPS 6
/* Strategies change only the order of fp32 sums (over ranks, over split
** dimensions); six steps of a tiny model drift by ~1e-7 relative, a wrong
** algorithm by far more than 1e-5. */
#define LOSS_RTOL 1e-5
/* Before any update both runs hold the same weights: the first step's
** gradient norms differ by the order of the sums alone (at most 5e-8 over
** tessel's equivalence tests), while a small parameter's gradient left
** partial (a per-head norm's, say), which the losses of six steps may not
** show, moves it by 1e-6 or more. */
#define GRAD_RTOL 5e-7
/* A lossy strategy (compression, local steps) may end a few percent away. */
#define LOSSY_RTOL 0.05
/* --ranks: at most this many counts, each at most MAX_RANKS, whose batch
** (batch_for) is at most MAX_BATCH sequences of the tiny models. */
#define MAX_COUNTS 8
#define MAX_RANKS 1024
#define MAX_BATCH 4096

static int plugin_check(int argc, char **argv);

static const struct option plugin_check_longs[] = {{"set", required_argument, 0, 's'}, {"ranks", required_argument, 0, 'r'},
                                                   {0, 0, 0, 0}};
static const tsl_options plugin_check_options = {"s:r:", plugin_check_longs};

const tsl_command tsl_cmd_plugin_check = {
    "plugin-check", "check that a strategy plugin is well-formed and trains like one process",
    "usage: tessel plugin-check LIB.so [--ranks 1,2,4] [--set KEY=VALUE]...\n\n"
    "Checks a strategy plugin file the way tessel will use it:\n"
    "  - it exports exactly one symbol, the entry point " TESSEL_STRATEGY_ENTRY_NAME ";\n"
    "  - it does not link libtessel (plugins get every service from the host table);\n"
    "  - it loads: entry point, ABI version, table size, name equal to the file name, required hooks;\n"
    "  - for a tiny GPT-2 and a tiny Llama (grouped-query attention, rotary positions, SwiGLU; for a\n"
    "    plugin of ABI 2.3 or later also Qwen3's per-head q/k norms, of 2.4 or later a sliding window),\n"
    "    trained 6 steps at each rank\n"
    "    count through mpirun, every step's loss equals one process's within 1e-5 relative and the\n"
    "    first step's gradient norm within 5e-7 (a strategy declaring TESSEL_CAP_LOSSY: the final\n"
    "    validation loss within 5%, having fallen at least half as far as one process's);\n"
    "  - at the largest rank count, a run stopped after 3 steps and resumed from its checkpoint\n"
    "    continues bit for bit like the run that never stopped.\n"
    "Prints one line per check and exits 0 when all pass, 1 otherwise. The runs go to a scratch\n"
    "directory in $TMPDIR (default /tmp), removed when the plugin passes and kept, with each run's\n"
    "log, when it fails.\n\n"
    "  -r, --ranks LIST      up to 8 rank counts to train at (default 1,2,4); the batch is the least common\n"
    "                        multiple of 8 and the counts, so that each splits it\n"
    "  -s, --set KEY=VALUE   override the runs' config, e.g. --set plugin.sync_every=2 (repeatable; plugin.*\n"
    "                        keys apply to the plugin's runs only)\n",
    plugin_check, (const tsl_options *const[]){&plugin_check_options, NULL}};

static int report(int ok, const char *what, const char *detail) {
  if (!ok && tsl_spawn_stopped()) return ok; /* a run this command stopped is no verdict on the plugin */
  printf("  %-4s %s%s%s\n", ok ? "ok" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
  fflush(stdout);
  return ok;
}

/* Exactly the entry symbol exported, and nothing of tessel needed. */
static int check_file(const char *path) {
  tsl_elf_info info;
  char buf[2048] = "";
  if (tsl_elf_read(path, &info) < 0) return report(0, "readable shared object", tsl_error_message());
  char missing[160] = "the entry symbol is not exported";
  int entry = 0, major;
  for (int i = 0; i < info.n_exports; i++) {
    if (!strcmp(info.exports[i], TESSEL_STRATEGY_ENTRY_NAME)) entry = 1;
    else {
      if (sscanf(info.exports[i], "tessel_strategy_v%d", &major) == 1)
        snprintf(missing, sizeof missing, "the entry symbol is not exported: built for plugin ABI %d.x (it exports %s)",
                 major, info.exports[i]);
      strncat(buf, buf[0] ? ", " : "also exports ", sizeof buf - strlen(buf) - 1);
      strncat(buf, info.exports[i], sizeof buf - strlen(buf) - 1);
    }
  }
  int ok = report(entry && !buf[0], "exports only " TESSEL_STRATEGY_ENTRY_NAME, !entry ? missing : buf[0] ? buf : NULL);
  buf[0] = '\0';
  for (int i = 0; i < info.n_needed; i++) {
    strncat(buf, i ? ", " : "needs ", sizeof buf - strlen(buf) - 1);
    strncat(buf, info.needed[i], sizeof buf - strlen(buf) - 1);
  }
  ok &= report(!tsl_plugin_core_library(&info), "does not link libtessel", buf);
  tsl_elf_free(&info);
  return ok;
}

static int check_load(const char *path, int *lossy, int *abi_minor) {
  tsl_plugin *p = NULL;
  char detail[256];
  if (tsl_plugin_open(path, &p) < 0) return report(0, "loads as a strategy", tsl_error_message());
  snprintf(detail, sizeof detail, "'%s' %s, ABI %u.%u, table %u bytes (this tessel: %zu)%s", p->name,
           p->vt.version ? p->vt.version : "-", TESSEL_ABI_MAJOR(p->vt.abi_version), TESSEL_ABI_MINOR(p->vt.abi_version),
           p->table_size, sizeof(tessel_strategy), (p->vt.caps & TESSEL_CAP_LOSSY) ? ", lossy" : "");
  *lossy = (p->vt.caps & TESSEL_CAP_LOSSY) != 0;
  *abi_minor = (int)TESSEL_ABI_MINOR(p->vt.abi_version);
  report(1, "loads as a strategy", detail);
  tsl_plugin_free(p);
  return 1;
}

/* A token shard a model can learn in a few steps: each token is mostly a
** fixed function of the one before (5·t + 3 mod 64), else noise. A lossy
** strategy is then told from one that does not train (on pure noise six
** steps moved the validation loss by 1e-5, and an optimizer that did
** nothing passed as lossy). */
static tsl_status write_tokens(const char *path, uint64_t count, uint64_t seed) {
  uint16_t *tokens = malloc(count * sizeof *tokens);
  if (!tokens) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  uint16_t t = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t r = tsl_mix64(seed + i);
    t = r % 8 == 0 ? (uint16_t)((r >> 8) % 64) : (uint16_t)((5u * t + 3u) % 64);
    tokens[i] = t;
  }
  tsl_status st = tsl_shard_write(path, tokens, count);
  free(tokens);
  return st;
}

/* The two tiny models: every split the built-in strategies make at 4 ranks
** divides them (heads, key/value heads, the MLP, the vocabulary). The
** Llama has per-head q/k norms (`since_2_3`) and attends in a sliding
** window of 5 of its 8 positions (`since_2_4`) for a plugin that knows
** them. */
static const struct {
  const char *name, *model, *since_2_3, *since_2_4;
} models[] = {
    {"gpt2", "arch: gpt2, layers: 2, heads: 4, channels: 16, seq_len: 8, vocab_size: 64", "", ""},
    {"llama", "arch: llama, layers: 2, heads: 4, kv_heads: 2, channels: 16, ffn: 32, seq_len: 8, vocab_size: 64",
     ", qk_norm: true", ", sliding_window: 5"},
};

/* One training's record: every step's loss, the first step's gradient norm
** and the last validation loss. */
typedef struct trajectory {
  double loss[MAX_STEPS + 1];
  double grad_norm, val;
  int steps;
} trajectory;

static int read_trajectory(const char *path, trajectory *t) {
  char *text = NULL;
  memset(t, 0, sizeof *t);
  t->val = NAN;
  if (tsl_read_file(path, &text, NULL) < 0) return 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    cJSON *step = cJSON_GetObjectItem(o, "step"), *loss = cJSON_GetObjectItem(o, "loss");
    cJSON *val = cJSON_GetObjectItem(o, "val_loss"), *norm = cJSON_GetObjectItem(o, "grad_norm");
    if (cJSON_IsNumber(step) && cJSON_IsNumber(loss) && step->valueint >= 1 && step->valueint <= MAX_STEPS) {
      t->loss[step->valueint] = loss->valuedouble;
      if (step->valueint == 1) t->grad_norm = cJSON_IsNumber(norm) ? norm->valuedouble : NAN;
      if (step->valueint > t->steps) t->steps = step->valueint;
    }
    if (cJSON_IsNumber(val)) t->val = val->valuedouble;
    cJSON_Delete(o);
  }
  free(text);
  return t->steps > 0;
}

typedef struct check {
  const char *lib, *dir;
  const char *const *user;
  int n_user, lossy, abi_minor;
} check;

/* `tessel run` of model k on `ranks` ranks (0: one process, no strategy)
** into DIR/NAME; the extra --set options after the user's. Returns the
** exit status; the trajectory on success. */
static int run(const check *c, int k, int ranks, const char *name, const char *const *extra, int n_extra,
               trajectory *t) {
  char cfg[4096], log[4096], metrics[4096], run_dir[4096], fixed[3][4200];
  int n = 0, nf = 0;
  snprintf(run_dir, sizeof run_dir, "%s/%s", c->dir, name);
  snprintf(cfg, sizeof cfg, "%s/%s.yaml", c->dir, models[k].name);
  snprintf(fixed[nf++], sizeof fixed[0], "log.dir=%s", run_dir);
  snprintf(fixed[nf++], sizeof fixed[0], "checkpoint.dir=%s/ckpt", run_dir);
  if (ranks) snprintf(fixed[nf++], sizeof fixed[0], "plugin.path=%s", c->lib);
  char **args = calloc((size_t)(2 * (nf + c->n_user + n_extra) + 2), sizeof *args);
  if (!args) return -1;
  /* the user's options, but the reference has no plugin section */
  args[n++] = cfg;
  for (int i = 0; i < nf + c->n_user + n_extra; i++) {
    const char *set = i < nf ? fixed[i] : i < nf + c->n_user ? c->user[i - nf] : extra[i - nf - c->n_user];
    if (!ranks && i >= nf && i < nf + c->n_user && strncmp(set, "plugin.", 7) == 0) continue;
    args[n++] = "--set";
    args[n++] = (char *)set;
  }
  snprintf(log, sizeof log, "%s/%s.log", c->dir, name);
  char **argv = tsl_run_argv(ranks ? ranks : 1, 0, args, n, NULL, 0);
  int rc = argv ? tsl_spawn_wait(argv, log) : -1;
  tsl_spawn_argv_free(argv);
  free(args);
  snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", run_dir);
  if (rc == 0 && !read_trajectory(metrics, t)) rc = -1;
  return rc;
}

/* The last line of a failed run's log that says what went wrong. */
/* Does the line carry a FILE:LINE:COL: position, as config errors do? */
static int positioned(const char *line) {
  for (const char *p = strchr(line, ':'); p; p = strchr(p + 1, ':')) {
    int a = 0, b = 0, n = 0;
    if (sscanf(p, ":%d:%d:%n", &a, &b, &n) == 2 && n > 0) return 1;
  }
  return 0;
}

/* Why a run failed: its last error line (an "error" or a positioned config
** mistake), and the signal when the exit status says a rank died of one. */
static void failure_detail(const check *c, const char *name, int rc, char *out, size_t cap) {
  char path[4096], *text = NULL, *last = NULL, died[96] = "";
  snprintf(path, sizeof path, "%s/%s.log", c->dir, name);
  if (tsl_read_file(path, &text, NULL) == TESSEL_OK)
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
      if (strstr(line, "error") || positioned(line)) last = line;
  if (rc > 128 && rc < 128 + 65) snprintf(died, sizeof died, ": a rank died of signal %d (%s)", rc - 128, strsignal(rc - 128));
  snprintf(out, cap, "the run failed (exit %d%s)%s%s; its log: %s", rc, died, last ? ": " : "", last ? last : "", path);
  free(text);
}

/* Every step within LOSS_RTOL of the reference and the first step's
** gradient norm within GRAD_RTOL, or (lossy) the final validation loss
** within LOSSY_RTOL and at least half the reference's gain over its first
** step's loss (a strategy that does not train ends near where it began). A
** failure names the first step out of tolerance: where the strategy went
** wrong, not where the drift grew largest. */
static int compare_losses(const check *c, const trajectory *ref, const trajectory *got, char *detail, size_t cap) {
  if (c->lossy) {
    double d = fabs(got->val - ref->val) / fabs(ref->val);
    double gain = ref->loss[1] - ref->val, got_gain = ref->loss[1] - got->val;
    int learned = got_gain >= 0.5 * gain;
    snprintf(detail, cap,
             "lossy: final validation loss %.6f, one process %.6f (%.2g relative, tolerance %g); from the first "
             "step's loss %.6f it fell by %.4f, one process's by %.4f%s",
             got->val, ref->val, d, LOSSY_RTOL, ref->loss[1], got_gain, gain,
             learned ? "" : " (less than half: the strategy does not train, an optimizer step that does nothing?)");
    return d <= LOSSY_RTOL && learned;
  }
  double g = fabs(got->grad_norm - ref->grad_norm) / fabs(ref->grad_norm);
  if (!(g <= GRAD_RTOL)) {
    snprintf(detail, cap,
             "the first step's gradient norm %.9g, one process %.9g (%.2g relative, tolerance %g): before any "
             "update only the order of the sums may differ (a gradient left partial, or summed twice?)",
             got->grad_norm, ref->grad_norm, g, GRAD_RTOL);
    return 0;
  }
  double worst = 0;
  int first = 0;
  for (int s = 1; s <= ref->steps; s++) {
    double d = s <= got->steps ? fabs(got->loss[s] - ref->loss[s]) / fabs(ref->loss[s]) : INFINITY;
    if (!(d <= LOSS_RTOL) && !first) first = s;
    if (!(d <= worst)) worst = d;
  }
  if (!first) {
    snprintf(detail, cap, "%d steps equal one process's losses (largest difference %.2g relative, tolerance %g; "
             "first gradient norm %.2g)", ref->steps, worst, LOSS_RTOL, g);
    return 1;
  }
  double d = first <= got->steps ? fabs(got->loss[first] - ref->loss[first]) / fabs(ref->loss[first]) : INFINITY;
  snprintf(detail, cap,
           "step %d, the first out of tolerance: loss %.7f, one process %.7f (%.2g relative, tolerance %g): the "
           "strategy does not compute what one process computes (a wrong gradient, a missing reduction, an "
           "optimizer step that does nothing?)",
           first, first <= got->steps ? got->loss[first] : NAN, ref->loss[first], d, LOSS_RTOL);
  return 0;
}

/* Stop after 3 steps, resume to the end: the same bits as not stopping. */
static int check_resume(const check *c, int k, int ranks, const trajectory *whole) {
  char name[64], what[128], detail[512];
  trajectory t;
  snprintf(name, sizeof name, "%s-resume-%d", models[k].name, ranks);
  snprintf(what, sizeof what, "%s on %d rank(s) stops at step 3 and resumes", models[k].name, ranks);
  const char *stop[] = {"train.stop_after=3"};
  int rc = run(c, k, ranks, name, stop, 1, &t);
  if (rc == 0) return report(0, what, "train.stop_after=3 did not stop the run");
  if (rc == TSL_EXIT_STOPPED) rc = run(c, k, ranks, name, NULL, 0, &t);
  if (rc != 0) {
    failure_detail(c, name, rc, detail, sizeof detail);
    return report(0, what, detail);
  }
  for (int s = 4; s <= whole->steps; s++)
    if (s > t.steps || t.loss[s] != whole->loss[s]) {
      snprintf(detail, sizeof detail,
               "step %d: loss %.9g after resuming, %.9g without stopping: a checkpoint does not restore the state "
               "exactly (state hooks that drop optimizer moments or private state?)",
               s, s <= t.steps ? t.loss[s] : NAN, whole->loss[s]);
      return report(0, what, detail);
    }
  return report(1, what, "steps 4..6 equal the uninterrupted run bit for bit");
}

/* The reference, the plugin at each rank count, the resume. */
static int check_model(const check *c, int k, const int *ranks, int n_ranks) {
  char name[64], what[128], detail[1024];
  trajectory ref, got, last = {0};
  int ok = 1, last_ranks = 0;
  snprintf(name, sizeof name, "%s-reference", models[k].name);
  int rc = run(c, k, 0, name, NULL, 0, &ref);
  if (rc != 0) {
    failure_detail(c, name, rc, detail, sizeof detail);
    return report(0, "one-process reference run", detail);
  }
  for (int i = 0; i < n_ranks; i++) {
    snprintf(name, sizeof name, "%s-%d", models[k].name, ranks[i]);
    snprintf(what, sizeof what, "%s on %d rank(s)", models[k].name, ranks[i]);
    rc = run(c, k, ranks[i], name, NULL, 0, &got);
    if (rc != 0) {
      failure_detail(c, name, rc, detail, sizeof detail);
      ok &= report(0, what, detail);
      continue;
    }
    ok &= report(compare_losses(c, &ref, &got, detail, sizeof detail), what, detail);
    last = got;
    last_ranks = ranks[i];
  }
  if (last_ranks) ok &= check_resume(c, k, last_ranks, &last);
  return ok;
}

/* The configs' batch: divisible by 8 and by every rank count, so that
** each splits it over its data-parallel ranks (a strategy at 3 ranks was
** failed for the checker's own batch of 8); 0 when that needs more than
** MAX_BATCH sequences. */
static int batch_for(const int *ranks, int n_ranks) {
  long long batch = 8;
  for (int i = 0; i < n_ranks && batch <= MAX_BATCH; i++) {
    long long a = batch, b = ranks[i];
    while (b) {
      long long r = a % b;
      a = b;
      b = r;
    }
    batch = batch / a * ranks[i];
  }
  return batch <= MAX_BATCH ? (int)batch : 0;
}

static tsl_status write_configs(const char *dir, int batch, int abi_minor) {
  char path[4096];
  snprintf(path, sizeof path, "%s/train_000000.bin", dir);
  tsl_status st = write_tokens(path, 8192, 1);
  snprintf(path, sizeof path, "%s/val_000000.bin", dir);
  if (st >= 0) st = write_tokens(path, 2048, 2);
  for (size_t k = 0; k < sizeof models / sizeof models[0] && st >= 0; k++) {
    snprintf(path, sizeof path, "%s/%s.yaml", dir, models[k].name);
    FILE *f = fopen(path, "w");
    if (!f) return tsl_error(TESSEL_E_IO, "%s: cannot write", path);
    fprintf(f,
            "model: {%s%s%s}\n"
            "data: {train: \"%s/train_*.bin\", val: \"%s/val_*.bin\"}\n"
            "train: {steps: %d, batch_size: %d, eval_every: %d, eval_batches: 1, sample_tokens: 0}\n"
            "optimizer: {lr: 1.0e-2, warmup_steps: 0}\n"
            "device: {threads: 1}\n"
            "checkpoint: {every: 0, resume: auto}\n"
            "log: {level: warn, progress: never}\n",
            models[k].model, abi_minor >= 3 ? models[k].since_2_3 : "", abi_minor >= 4 ? models[k].since_2_4 : "",
            dir, dir, STEPS, batch, STEPS);
    if (fclose(f) != 0) return tsl_error(TESSEL_E_IO, "%s: cannot write", path);
  }
  return st;
}

/* "1,2,4" into out: how many distinct counts (one given twice was checked
** twice), or 0 when one is not a number from 1 to MAX_RANKS or there are
** more than `cap` (they were dropped unsaid). */
static int parse_ranks(const char *s, int *out, int cap) {
  int n = 0;
  for (const char *p = s;; p++) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > MAX_RANKS || (*end && *end != ',')) return 0;
    int again = 0; /* a count given twice is checked once */
    for (int i = 0; i < n; i++) again |= out[i] == v;
    if (!again && n == cap) return 0;
    if (!again) out[n++] = (int)v;
    if (!*end) return n;
    p = end;
  }
}

static int plugin_check(int argc, char **argv) {
  const char **sets = tsl_option_slots(argc);
  int n_sets = 0, ranks[MAX_COUNTS] = {1, 2, 4}, n_ranks = 3, c;
  if (!sets) return tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &plugin_check_options)) != -1) {
    if (c == 's') sets[n_sets++] = optarg;
    else if (c == 'r' && (n_ranks = parse_ranks(optarg, ranks, MAX_COUNTS)) > 0) continue;
    else break;
  }
  int batch = batch_for(ranks, n_ranks);
  if (c != -1 || optind != argc - 1 || !batch) {
    free(sets);
    if (c != -1)
      return tsl_option_error(&tsl_cmd_plugin_check, plugin_check_longs, c,
                              "a list of up to " TSL_STR(MAX_COUNTS) " rank counts from 1 to " TSL_STR(MAX_RANKS) " (1,2,4)");
    if (!batch)
      return tsl_usage_error(&tsl_cmd_plugin_check, "--ranks: a batch that every count divides would be more than "
                             TSL_STR(MAX_BATCH) " sequences; choose counts with a smaller least common multiple");
    return tsl_usage_error(&tsl_cmd_plugin_check, "expected one plugin file");
  }
  /* the runs' scratch directory goes where the user keeps temporary files */
  const char *tmp = getenv("TMPDIR");
  char real[4096], dir[4096];
  if (!tmp || !*tmp) tmp = "/tmp";
  if (snprintf(dir, sizeof dir, "%s/tessel-plugin-check-XXXXXX", tmp) >= (int)sizeof dir) {
    free(sets);
    return tsl_fail(tsl_error(TESSEL_E_IO, "TMPDIR %s is too long for a scratch directory in it", tmp));
  }
  if (!realpath(argv[optind], real)) snprintf(real, sizeof real, "%s", argv[optind]);
  printf("plugin-check %s\n", real);
  fflush(stdout);
  check chk = {.lib = real, .dir = dir, .user = sets, .n_user = n_sets};
  int ok = check_file(real);
  ok = ok && check_load(real, &chk.lossy, &chk.abi_minor);
  if (ok) {
    if (!mkdtemp(dir)) {
      free(sets);
      return tsl_fail(tsl_error(TESSEL_E_IO, "cannot create a scratch directory in %s: %s", tmp, strerror(errno)));
    }
    if (write_configs(dir, batch, chk.abi_minor) < 0) ok = report(0, "test data", tsl_error_message());
    for (size_t k = 0; ok && k < sizeof models / sizeof models[0]; k++) ok = check_model(&chk, (int)k, ranks, n_ranks);
    if (ok || tsl_spawn_stopped()) tsl_remove_tree(dir); /* kept only to show why the plugin failed */
  }
  free(sets);
  if (tsl_spawn_stopped()) return tsl_spawn_stop_report("plugin-check"); /* its runs were stopped, not failed */
  printf("%s\n", ok ? "result: ok" : "result: FAILED");
  return ok ? TSL_EXIT_OK : TSL_EXIT_FAILURE;
}
