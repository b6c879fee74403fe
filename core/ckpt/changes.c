/* core/ckpt/changes.c — what a resume carries on from a checkpoint: the
** tokens trained, and the settings whose change it tells the user of (the
** seed, the batch, the data, the optimizer and its schedule). */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "common/log.h"
#include "common/util.h"
#include "config/config.h"
#include "optim/optim.h"
#include "train/data_source.h"

uint64_t tsl_ckpt_tokens(const tsl_ckpt *c, int batch_now) {
  if (c->tokens >= 0) return (uint64_t)c->tokens;
  int batch = c->batch_size > 0 ? c->batch_size : batch_now;
  return (uint64_t)c->step * (uint64_t)batch * (uint64_t)c->arch.seq_len;
}

/* A data member as the warning names it: its JSON, or "not set" (absent
** or null). */
static char *member_text(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? cJSON_PrintUnformatted(v) : tsl_strdup("not set");
}

/* What a run learns from here on, when its data are not the checkpoint's:
** the training batches, or the validation losses' meaning. */
static const char *data_consequence(int val) {
  return val ? "validation losses from here on are measured on other data than before, and do not compare with the "
               "earlier ones"
             : "the batches from here on come from other data than the run trained on so far";
}

/* One warning per data key whose value differs from the checkpoint's
** record `was` (both tsl_ckpt_data_of texts); where none does, one per
** part whose tokens do (the same paths, files changed since), as far as
** the checkpoint recorded them. */
static void warn_data(const tsl_runtime *rt, const tsl_ckpt *c, const char *was) {
  static const char *const keys[] = {"text", "val_fraction", "train", "val"};
  static const char *const digests[] = {"train_digest", "val_digest"};
  char *now_text = tsl_ckpt_data_of(&rt->settings, rt->data_digest);
  cJSON *then = cJSON_Parse(was), *now = now_text ? cJSON_Parse(now_text) : NULL;
  int named = 0;
  for (size_t i = 0; then && now && i < TSL_ARRAY_LEN(keys); i++) {
    char *a = member_text(now, keys[i]), *b = member_text(then, keys[i]);
    if (a && b && strcmp(a, b) != 0) {
      tsl_warn("data.%s is %s, but checkpoint %s was trained with data.%s %s: %s", keys[i], a, c->path, keys[i], b,
               data_consequence(strcmp(keys[i], "val") == 0));
      named = 1;
    }
    free(a);
    free(b);
  }
  for (int i = 0; then && now && !named && i < 2; i++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(now, digests[i]);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(then, digests[i]);
    if (cJSON_IsString(a) && cJSON_IsString(b) && strcmp(a->valuestring, b->valuestring) != 0)
      tsl_warn("%sdata.%s holds other tokens than checkpoint %s was trained on (its files changed since): %s",
               rt->settings.data.n_text == 0 ? "" : i ? "the validation part of " : "the training part of ",
               tsl_data_key(&rt->settings, i), c->path, data_consequence(i));
  }
  cJSON_Delete(then);
  cJSON_Delete(now);
  free(now_text);
}

/* The optimizer's settings a resume may change. */
static const struct {
  const char *key;
  size_t at; /* a double in tsl_settings */
} optim_keys[] = {{"lr", offsetof(tsl_settings, optim.lr)},
                  {"min_lr", offsetof(tsl_settings, optim.min_lr)},
                  {"beta1", offsetof(tsl_settings, optim.beta1)},
                  {"beta2", offsetof(tsl_settings, optim.beta2)},
                  {"eps", offsetof(tsl_settings, optim.eps)},
                  {"weight_decay", offsetof(tsl_settings, optim.weight_decay)},
                  {"grad_clip", offsetof(tsl_settings, optim.grad_clip)}};

static double optim_value(const tsl_settings *s, size_t at) { return *(const double *)((const char *)s + at); }

/* The schedule's settings: the learning rate of a step depends on these too. */
static const struct {
  const char *key;
  size_t at; /* an int64_t in tsl_settings */
} schedule_keys[] = {{"train.steps", offsetof(tsl_settings, train.steps)},
                     {"optimizer.warmup_steps", offsetof(tsl_settings, optim.warmup_steps)},
                     {"optimizer.decay_steps", offsetof(tsl_settings, optim.decay_steps)}};

static long long schedule_value(const tsl_settings *s, size_t at) {
  return (long long)*(const int64_t *)((const char *)s + at);
}

/* One warning when the optimizer goes on otherwise than the checkpoint's
** run would have (its config.yaml): another β, ε, weight decay or clipping,
** or another learning rate from the next step on — a schedule changed, or
** train.steps, over which cosine and linear decay stretch (Megatron-LM
** refuses such a resume unless told to take the new schedule; tessel takes
** it and says so). A config.yaml this version cannot read is passed over. */
static void warn_optimizer(const tsl_settings *s, const tsl_ckpt *c) {
  char *path = tsl_asprintf("%s/config.yaml", c->path), changed[1024] = "";
  tsl_config *cfg = NULL;
  tsl_settings was = {0};
  if (path && tsl_config_load(path, NULL, 0, &cfg) >= 0 && tsl_settings_read(cfg, &was) >= 0) {
    size_t used = 0;
    for (size_t i = 0; i < TSL_ARRAY_LEN(optim_keys) && used < sizeof changed; i++) {
      double now = optim_value(s, optim_keys[i].at), then = optim_value(&was, optim_keys[i].at);
      if (now != then)
        used += (size_t)snprintf(changed + used, sizeof changed - used, "%soptimizer.%s %g (was %g)",
                                 used ? ", " : "", optim_keys[i].key, now, then);
    }
    if (s->optim.decay != was.optim.decay && used < sizeof changed)
      used += (size_t)snprintf(changed + used, sizeof changed - used, "%soptimizer.decay %s (was %s)",
                               used ? ", " : "", tsl_decay_names[s->optim.decay], tsl_decay_names[was.optim.decay]);
    if (s->optim.decay_sqrt != was.optim.decay_sqrt && used < sizeof changed)
      used += (size_t)snprintf(changed + used, sizeof changed - used, "%soptimizer.decay_shape %s (was %s)",
                               used ? ", " : "", tsl_decay_shape_names[s->optim.decay_sqrt],
                               tsl_decay_shape_names[was.optim.decay_sqrt]);
    for (size_t i = 0; i < TSL_ARRAY_LEN(schedule_keys) && used < sizeof changed; i++) {
      long long now = schedule_value(s, schedule_keys[i].at), then = schedule_value(&was, schedule_keys[i].at);
      if (now != then)
        used += (size_t)snprintf(changed + used, sizeof changed - used, "%s%s %lld (was %lld)", used ? ", " : "",
                                 schedule_keys[i].key, now, then);
    }
    const int64_t next = c->step + 1;
    const double lr = tsl_lr_at(s, next), lr_was = tsl_lr_at(&was, next);
    if (changed[0] || lr != lr_was)
      tsl_warn("checkpoint %s was trained with another optimizer or schedule%s%s: step %lld's learning rate is %.6g, "
               "where the run's own schedule gives %.6g. The run goes on as now configured; set the checkpoint's "
               "values (its config.yaml) to continue it as it was", c->path, changed[0] ? ": " : "", changed,
               (long long)next, lr, lr_was);
  }
  tsl_error_clear();
  tsl_config_free(cfg);
  free(path);
}

void tsl_ckpt_warn_changes(const tsl_runtime *rt, const tsl_ckpt *c) {
  const tsl_settings *s = &rt->settings;
  /* a checkpoint of step 0 (tessel import's) was never trained: no seed,
  ** batch or data of its own to go on from */
  if (rt->world.rank != 0 || c->step == 0) return;
  /* batches are a function of (seed, step): another seed is another
  ** stream from here on, which a user means to do only knowingly */
  if (c->seed != s->train.seed)
    tsl_warn("train.seed is %llu, but checkpoint %s was trained with seed %llu: the batches from here on are not "
             "the ones the run would have drawn, so it does not continue as it would have; set train.seed to %llu "
             "to continue it", (unsigned long long)s->train.seed, c->path, (unsigned long long)c->seed,
             (unsigned long long)c->seed);
  /* a step is batch_size sequences whatever the world size or the
  ** accumulation, so only batch_size changes what a step means */
  if (c->batch_size > 0 && c->batch_size != s->train.batch_size)
    tsl_warn("train.batch_size is %d, but checkpoint %s was trained with %d sequences per step: a step from here on "
             "trains on another amount of data and draws other batches than the run would have (the tokens in "
             "the metrics count on from the %llu trained so far); set train.batch_size to %d to continue it as it "
             "was", s->train.batch_size, c->path, c->batch_size,
             (unsigned long long)tsl_ckpt_tokens(c, s->train.batch_size), c->batch_size);
  if (c->data) warn_data(rt, c, c->data);
  warn_optimizer(s, c);
}
