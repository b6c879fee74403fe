/* tools/compare/plan.c — loading the configurations and checking they agree. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/spawn.h"
#include "common/log.h"
#include "common/util.h"
#include "compare/compare.h"
#include "config/config.h"
#include "runtime/settings.h"

/* What must agree for losses to be comparable, as one line of text (its
** numbers exact: two models differ by any digit). */
static void identity(const tsl_settings *s, char *model, size_t mcap, char *data, size_t dcap) {
  const tsl_model_settings *m = &s->model;
  char scaling[TSL_ROPE_TEXT_MAX], theta[32], eps[32];
  snprintf(model, mcap,
           "%s with layers %d, heads %d, kv_heads %d, head_dim %d, channels %d, ffn %d, seq_len %d, vocab_size %d, "
           "rope_theta %s, "
           "rope_scaling %s, rotary_dim %d, norm_eps %s, tie_embeddings %s, qkv_bias %s, qk_norm %s, "
           "sliding_window %d, init_from %s",
           m->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", m->layers, m->heads, m->kv_heads, tsl_head_dim(m), m->channels, m->ffn,
           m->seq_len, m->vocab_size, tsl_format_exact(m->rope_theta, theta, sizeof theta),
           tsl_rope_scaling_text(m, scaling, sizeof scaling), tsl_rotary_dim(m),
           tsl_format_exact(m->norm_eps, eps, sizeof eps),
           m->tie_embeddings ? "true" : "false", m->qkv_bias ? "true" : "false",
           m->qk_norm ? "true" : "false", m->sliding_window, m->init_from ? m->init_from : "none");
  int n = snprintf(data, dcap, "seed %llu, batch_size %d, data ", (unsigned long long)s->train.seed,
                   s->train.batch_size);
  if (s->data.n_text) {
    for (int i = 0; i < s->data.n_text && n < (int)dcap; i++)
      n += snprintf(data + n, dcap - (size_t)n, "%s%s", i ? "," : "text ", s->data.text[i]);
  } else {
    snprintf(data + n, dcap - (size_t)n, "train %s", s->data.train);
  }
}

/* The resolved YAML of a configuration, as a heap string. */
static char *resolved_yaml(tsl_config *cfg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  tsl_status st = tsl_config_emit(cfg, f);
  fclose(f);
  if (st < 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* The label of a run: the file name without directory and extension, and
** its rank count (the same config often runs at several); "#2", "#3" ...
** after it when an earlier run already has that label. */
static void label_of(const tsl_compare *c, int index, char *out, size_t cap) {
  const tsl_cmp_run *run = &c->runs[index];
  char name[256], base_label[64];
  const char *base = strrchr(run->config, '/');
  snprintf(name, sizeof name, "%s", base ? base + 1 : run->config);
  char *dot = strrchr(name, '.');
  if (dot && dot != name) *dot = '\0';
  snprintf(base_label, sizeof base_label, "%.48s@%d", name, run->ranks);
  snprintf(out, cap, "%s", base_label);
  for (int n = 2, taken = 1; taken; n++) {
    taken = 0;
    for (int r = 0; r < index; r++) taken |= !strcmp(c->runs[r].label, out);
    if (taken) snprintf(out, cap, "%s#%d", base_label, n);
  }
}

/* The --set arguments every run of `run` gets: the user's, the step count,
** then the redirections into `dir` (which therefore win). */
static const char **run_sets(const tsl_compare *c, const tsl_cmp_run *run, const char *dir, char (*buf)[4200],
                             char *steps, size_t steps_cap, int *n) {
  enum { REDIRECTS = 16 };
  const char **sets = calloc((size_t)c->n_sets + 1 + REDIRECTS, sizeof(char *));
  if (!sets) return NULL;
  int k = 0;
  for (int i = 0; i < c->n_sets; i++) sets[k++] = c->sets[i];
  snprintf(steps, steps_cap, "train.steps=%lld", (long long)c->steps);
  sets[k++] = steps;
  const char *argv[2 * REDIRECTS];
  int m = tsl_compare_redirects(c, run, dir, buf, argv, 2 * REDIRECTS);
  for (int i = 1; i < m; i += 2) sets[k++] = argv[i]; /* argv holds "--set", VALUE pairs */
  *n = k;
  return sets;
}

int tsl_compare_redirects(const tsl_compare *c, const tsl_cmp_run *run, const char *dir, char (*buf)[4200],
                          const char **argv, int cap) {
  int n = 0, k = 0;
  snprintf(buf[n++], sizeof buf[0], "log.dir=%s", dir);
  snprintf(buf[n++], sizeof buf[0], "log.metrics=%s/metrics.jsonl", dir);
  snprintf(buf[n++], sizeof buf[0], "checkpoint.dir=%s/checkpoints", dir);
  snprintf(buf[n++], sizeof buf[0], "checkpoint.resume=never");
  snprintf(buf[n++], sizeof buf[0], "train.sample_tokens=0");
  snprintf(buf[n++], sizeof buf[0], "train.stop_after=0"); /* a trial runs its steps: it never resumes */
  snprintf(buf[n++], sizeof buf[0], "log.progress=never");
  if (run->text_data) snprintf(buf[n++], sizeof buf[0], "data.dir=%s/data", c->out);
  if (run->tensorboard) snprintf(buf[n++], sizeof buf[0], "log.tensorboard=%s/tensorboard", dir);
  for (int i = 0; i < n && k + 2 <= cap; i++) {
    argv[k++] = "--set";
    argv[k++] = buf[i];
  }
  return k;
}

/* Load one configuration as it will run; note what it writes. */
static tsl_status load_one(tsl_compare *c, tsl_cmp_run *run, tsl_settings *s, tsl_config **cfg) {
  char buf[16][4200], steps[64];
  int n = 0;
  const char **sets = run_sets(c, run, run->dir, buf, steps, sizeof steps, &n);
  if (!sets) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  tsl_status st = tsl_config_load(run->config, sets, n, cfg);
  if (st >= 0) st = tsl_config_outcome(*cfg, tsl_settings_read(*cfg, s));
  free(sets);
  return st;
}

/* `tessel check CONFIG --world N` with the sets the runs will get, its
** output in the run's check.log; on failure the first error line. */
static int check_one(const tsl_compare *c, tsl_cmp_run *run) {
  char buf[16][4200], steps[64], world[32], log[4300];
  int n = 0;
  const char **sets = run_sets(c, run, run->dir, buf, steps, sizeof steps, &n);
  char **argv = sets ? calloc((size_t)(2 * n + 8), sizeof(char *)) : NULL;
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!argv || len <= 0) {
    free(sets);
    free(argv);
    snprintf(run->error, sizeof run->error, "cannot start `tessel check`");
    return -1;
  }
  self[len] = '\0';
  snprintf(world, sizeof world, "%d", run->ranks);
  int k = 0;
  argv[k++] = self;
  argv[k++] = "check";
  argv[k++] = run->config;
  argv[k++] = "--world";
  argv[k++] = world;
  argv[k++] = "--quiet";
  for (int i = 0; i < n; i++) {
    argv[k++] = "--set";
    argv[k++] = (char *)sets[i];
  }
  snprintf(log, sizeof log, "%s/check.log", run->dir);
  int rc = tsl_spawn_wait(argv, log);
  if (rc != 0) tsl_compare_first_error(log, run->error, sizeof run->error);
  free(sets);
  free(argv);
  return rc;
}

/* Model, data, seed and batch of each configuration against the first. */
static tsl_status same_model(tsl_compare *c) {
  /* a model's line holds its whole rotary scaling: two models are compared by it */
  char model0[1024 + TSL_ROPE_TEXT_MAX] = "", data0[1024] = "";
  const char *first = NULL;
  tsl_status st = TESSEL_OK;
  for (int r = 0; r < c->n_runs && st >= 0; r++) {
    tsl_cmp_run *run = &c->runs[r];
    tsl_config *cfg = NULL;
    tsl_settings s;
    char model[sizeof model0], data[1024];
    label_of(c, r, run->label, sizeof run->label);
    snprintf(run->dir, sizeof run->dir, "%s/%d-%s", c->out, r + 1, run->label);
    if ((st = load_one(c, run, &s, &cfg)) < 0) {
      /* a file that does not load already says its name first */
      if (strncmp(tsl_error_message(), run->config, strlen(run->config))) st = tsl_error_wrap(st, "%s", run->config);
      tsl_config_free(cfg);
      break;
    }
    run->text_data = s.data.n_text > 0;
    run->tensorboard = s.log.tensorboard != NULL;
    tsl_config_free(cfg);
    /* again with the redirections that follow from what it writes */
    if ((st = load_one(c, run, &s, &cfg)) >= 0) run->resolved = resolved_yaml(cfg);
    identity(&s, model, sizeof model, data, sizeof data);
    if (!first) {
      first = run->config;
      snprintf(model0, sizeof model0, "%s", model);
      snprintf(data0, sizeof data0, "%s", data);
    } else if (!c->allow_different && (strcmp(model, model0) || strcmp(data, data0))) {
      int same = !strcmp(model, model0);
      st = tsl_error(TESSEL_E_CONFIG,
                     "%s and %s train different %s:\n  %s: %s\n  %s: %s\n"
                     "Their losses would not be comparable; pass --allow-different-models to compare anyway.",
                     first, run->config, same ? "data" : "models", first, same ? data0 : model0, run->config,
                     same ? data : model);
    }
    tsl_config_free(cfg);
  }
  return st;
}

/* Remove what an earlier comparison left in the report folder: its report
** and charts, which a comparison that then fails its checks or is stopped
** would otherwise leave standing over runs it replaced, and the run folders
** ("N-LABEL" holding "trial-1") that this one does not write again, beside
** which the new report would otherwise sit. */
static tsl_status clear_earlier(const tsl_compare *c) {
  static const char *const made[] = {"report.md", "loss.png", "dloss.png", "throughput.png", "memory.png",
                                     "memory.dat", "gnuplot.log"};
  tsl_status st = TESSEL_OK;
  for (size_t i = 0; i < TSL_ARRAY_LEN(made) && st >= 0; i++) {
    char *path = tsl_asprintf("%s/%s", c->out, made[i]);
    if (!path) return TESSEL_E_NOMEM;
    if (remove(path) != 0 && errno != ENOENT) st = tsl_error(TESSEL_E_IO, "%s: cannot remove: %s", path, strerror(errno));
    free(path);
  }
  char *pattern = tsl_asprintf("%s/[0-9]*-*/trial-1", c->out);
  glob_t g = {0};
  if (st < 0) return st;
  if (!pattern) return TESSEL_E_NOMEM;
  if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && st >= 0; i++) {
      *strrchr(g.gl_pathv[i], '/') = '\0';
      int ours = 0;
      for (int r = 0; r < c->n_runs; r++) ours |= !strcmp(g.gl_pathv[i], c->runs[r].dir);
      if (!ours) st = tsl_remove_tree(g.gl_pathv[i]);
    }
  }
  globfree(&g);
  free(pattern);
  return st;
}

tsl_status tsl_compare_plan(tsl_compare *c) {
  tsl_status st = same_model(c);
  if (st < 0) return st;
  if ((st = clear_earlier(c)) < 0) return st;
  char failures[8192] = "";
  for (int r = 0; r < c->n_runs; r++) {
    tsl_cmp_run *run = &c->runs[r];
    if ((st = tsl_remove_tree(run->dir)) < 0 || (st = tsl_mkdir_p(run->dir)) < 0) return st;
    tsl_info("compare: checking %s for %d rank(s) ...", run->label, run->ranks);
    if (check_one(c, run) != 0) {
      size_t used = strlen(failures);
      snprintf(failures + used, sizeof failures - used, "\n  %s: %s", run->label, run->error);
    }
  }
  if (failures[0])
    return tsl_error(TESSEL_E_CONFIG, "nothing was run: `tessel check --world N` fails for%s", failures);
  return TESSEL_OK;
}
