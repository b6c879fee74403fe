/* core/ckpt/changes.c — what a resume carries on from a checkpoint: the
** tokens trained, and the settings whose change it tells the user of. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "common/log.h"
#include "common/util.h"

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

/* One warning per data key whose value differs from the checkpoint's
** record `was` (both tsl_ckpt_data_of texts). */
static void warn_data(const tsl_runtime *rt, const tsl_ckpt *c, const char *was) {
  static const char *const keys[] = {"text", "val_fraction", "train", "val"};
  char *now_text = tsl_ckpt_data_of(&rt->settings);
  cJSON *then = cJSON_Parse(was), *now = now_text ? cJSON_Parse(now_text) : NULL;
  for (size_t i = 0; then && now && i < TSL_ARRAY_LEN(keys); i++) {
    char *a = member_text(now, keys[i]), *b = member_text(then, keys[i]);
    if (a && b && strcmp(a, b) != 0)
      tsl_warn("data.%s is %s, but checkpoint %s was trained with data.%s %s: %s", keys[i], a, c->path, keys[i], b,
               strcmp(keys[i], "val") == 0 ? "validation losses from here on are measured on other data than "
                                             "before, and do not compare with the earlier ones"
                                           : "the batches from here on come from other data than the run trained "
                                             "on so far");
    free(a);
    free(b);
  }
  cJSON_Delete(then);
  cJSON_Delete(now);
  free(now_text);
}

void tsl_ckpt_warn_changes(const tsl_runtime *rt, const tsl_ckpt *c) {
  const tsl_settings *s = &rt->settings;
  if (rt->world.rank != 0) return;
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
}
