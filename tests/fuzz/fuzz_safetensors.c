/*
** tests/fuzz/fuzz_safetensors.c — the safetensors reader and the checkpoint
** validation on top of it.
**
** Input: model.safetensors, then (after a part mark) trainer.json, then
** optimizer.safetensors. The file is opened and every tensor's first and
** last byte read; trainer.json is resealed (its checksum set to fit, so the
** checks behind the checksum are reached), parsed and validated; with both
** files open, their tensors are checked against its dimensions.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "fuzz.h"

const char fuzz_target[] = "safetensors";

/* Open a safetensors part and touch everything a reader may use. */
static tsl_st_file *open_part(const fuzz_part *part, const char *name) {
  char path[4096];
  tsl_st_file *f = NULL;
  if (fuzz_write(fuzz_scratch(), name, part->data, part->size, path) != 0) return NULL;
  if (tsl_st_open(path, &f) < 0) return NULL;
  volatile uint8_t seen = 0;
  for (int i = 0; i < tsl_st_count(f); i++) {
    const tsl_st_desc *d = tsl_st_desc_at(f, i);
    uint64_t bytes = 0;
    const uint8_t *p = tsl_st_data(f, i, &bytes);
    if (bytes) seen ^= p[0] ^ p[bytes - 1];
    if (tsl_st_find(f, d->name) < 0) abort(); /* every tensor must be found by its own name */
  }
  (void)tsl_st_meta(f, "format");
  return f;
}

static void check_checkpoint(const fuzz_part *json, tsl_st_file *model, tsl_st_file *optim) {
  char *text = malloc(json->size + 1), where[] = "fuzz/step_00000001";
  if (!text) return;
  memcpy(text, json->data, json->size);
  text[json->size] = '\0';
  char *sealed = tsl_ckpt_meta_reseal(text);
  tsl_ckpt_meta meta;
  if (tsl_ckpt_meta_parse(sealed ? sealed : text, "trainer.json", tsl_ckpt_dir_step(where), &meta) >= 0 && model &&
      optim) {
    tsl_ckpt c = {.path = where, .step = meta.step, .arch = meta.model, .model = model, .optim = optim};
    tsl_ckpt_check_tensors(&c);
  }
  tsl_ckpt_meta_free(&meta);
  free(sealed);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_part parts[FUZZ_MAX_PARTS];
  int n = fuzz_split(data, size, parts);
  tsl_st_file *model = open_part(&parts[0], "model.safetensors");
  tsl_st_file *optim = n > 2 ? open_part(&parts[2], "optimizer.safetensors") : NULL;
  if (n > 1) check_checkpoint(&parts[1], model, optim);
  if (model) tsl_st_close(model);
  if (optim) tsl_st_close(optim);
  tsl_error_clear();
  return 0;
}
