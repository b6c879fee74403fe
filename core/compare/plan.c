/* core/compare/plan.c — loading the configurations and checking they agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compare/compare.h"
#include "config/config.h"
#include "runtime/settings.h"

/* What must agree for losses to be comparable, as one line of text. */
static void identity(const tsl_settings *s, char *model, size_t mcap, char *data, size_t dcap) {
  const tsl_model_settings *m = &s->model;
  snprintf(model, mcap,
           "%s with layers %d, heads %d, kv_heads %d, channels %d, ffn %d, seq_len %d, vocab_size %d, rope_theta %g, "
           "norm_eps %g, tie_embeddings %s, init_from %s",
           m->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", m->layers, m->heads, m->kv_heads, m->channels, m->ffn,
           m->seq_len, m->vocab_size, m->rope_theta, m->norm_eps, m->tie_embeddings ? "true" : "false",
           m->init_from ? m->init_from : "none");
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
** its rank count (the same config often runs at several). */
static void label_of(const char *path, int ranks, char *out, size_t cap) {
  char name[256];
  const char *base = strrchr(path, '/');
  snprintf(name, sizeof name, "%s", base ? base + 1 : path);
  char *dot = strrchr(name, '.');
  if (dot && dot != name) *dot = '\0';
  snprintf(out, cap, "%s@%d", name, ranks);
}

tsl_status tsl_compare_plan(tsl_compare *c) {
  char model0[1024] = "", data0[1024] = "", steps[64];
  const char *first = NULL;
  const char **sets = calloc((size_t)c->n_sets + 1, sizeof(char *));
  if (!sets) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  for (int i = 0; i < c->n_sets; i++) sets[i] = c->sets[i];
  snprintf(steps, sizeof steps, "train.steps=%lld", (long long)c->steps);
  sets[c->n_sets] = steps;
  tsl_status st = TESSEL_OK;
  for (int r = 0; r < c->n_runs && st >= 0; r++) {
    tsl_cmp_run *run = &c->runs[r];
    tsl_config *cfg = NULL;
    tsl_settings s;
    char model[1024], data[1024];
    label_of(run->config, run->ranks, run->label, sizeof run->label);
    /* a configuration that does not load is a failed row, not the end */
    if (tsl_config_load(run->config, sets, c->n_sets + 1, &cfg) < 0 || tsl_settings_read(cfg, &s) < 0) {
      run->failed = 1;
      snprintf(run->error, sizeof run->error, "%s", tsl_error_message());
      tsl_config_free(cfg);
      continue;
    }
    run->resolved = resolved_yaml(cfg);
    identity(&s, model, sizeof model, data, sizeof data);
    if (!first) {
      first = run->config;
      snprintf(model0, sizeof model0, "%s", model);
      snprintf(data0, sizeof data0, "%s", data);
    } else if (!c->allow_different && (strcmp(model, model0) || strcmp(data, data0))) {
      int same_model = !strcmp(model, model0);
      st = tsl_error(TESSEL_E_CONFIG,
                     "%s and %s train different %s:\n  %s: %s\n  %s: %s\n"
                     "Their losses would not be comparable; pass --allow-different-models to compare anyway.",
                     first, run->config, same_model ? "data" : "models", first, same_model ? data0 : model0,
                     run->config, same_model ? data : model);
    }
    tsl_config_free(cfg);
  }
  free(sets);
  return st;
}

void tsl_compare_free(tsl_compare *c) {
  for (int r = 0; r < c->n_runs; r++) {
    free(c->runs[r].resolved);
    free(c->runs[r].loss);
    free(c->runs[r].tps);
    free(c->runs[r].step_s);
    for (int g = 0; g < c->runs[r].n_groups; g++) {
      free(c->runs[r].groups[g].payload_steps);
      free(c->runs[r].groups[g].bus_steps);
    }
  }
}
