/* core/data/record.c — DIR/tokens.json: the vocabulary shards were made with. */
#include "data/record.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/util.h"

tsl_status tsl_data_record_write(const char *dir, const tsl_tokenizer *t) {
  char path[4096], hex[32];
  tsl_status st = TESSEL_OK;
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (t) {
    size_t len;
    const char *json = tsl_tokenizer_json(t, &len);
    TSL_TRY(st, tsl_atomic_write_file(path, json, len));
  } else if (unlink(path) != 0 && errno != ENOENT) {
    return tsl_error(TESSEL_E_IO, "%s: cannot remove the tokenizer of an earlier preparation: %s", path, strerror(errno));
  }
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "tessel-tokens");
  cJSON_AddNumberToObject(root, "version", TSL_DATA_RECORD_VERSION);
  cJSON_AddNumberToObject(root, "vocab_size", t ? tsl_tokenizer_vocab_size(t) : 256);
  if (t) {
    cJSON *tok = cJSON_AddObjectToObject(root, "tokenizer");
    cJSON_AddStringToObject(tok, "file", "tokenizer.json");
    snprintf(hex, sizeof hex, "%016" PRIx64, tsl_tokenizer_hash(t));
    cJSON_AddStringToObject(tok, "hash", hex);
    cJSON_AddNumberToObject(tok, "eot", tsl_tokenizer_eot(t));
  } else {
    cJSON_AddNullToObject(root, "tokenizer");
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing tokens.json");
  snprintf(path, sizeof path, "%s/tokens.json", dir);
  st = tsl_atomic_write_file(path, text, strlen(text));
  free(text);
fail:
  return st;
}

tsl_status tsl_data_record_read(const char *dir, tsl_data_record *r) {
  char path[4096], *text = NULL;
  tsl_status st = TESSEL_OK;
  memset(r, 0, sizeof *r);
  snprintf(path, sizeof path, "%s/tokens.json", dir);
  if (!tsl_path_exists(path)) return TESSEL_OK;
  TSL_TRY(st, tsl_read_file(path, &text, NULL));
  cJSON *root = cJSON_Parse(text), *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  cJSON *vocab = cJSON_GetObjectItemCaseSensitive(root, "vocab_size"), *tok = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
  cJSON *hash = cJSON_GetObjectItemCaseSensitive(tok, "hash"), *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (cJSON_IsNumber(version) && version->valuedouble != TSL_DATA_RECORD_VERSION) {
    st = tsl_error(TESSEL_E_VERSION, "%s: token record version %g; this tessel reads version %d (prepare the data "
                   "again with this tessel, or use the one that wrote it)", path, version->valuedouble,
                   TSL_DATA_RECORD_VERSION);
  } else if (!cJSON_IsNumber(version) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessel-tokens") != 0 || !cJSON_IsNumber(vocab) ||
      !(cJSON_IsNull(tok) || cJSON_IsString(hash))) {
    st = tsl_error(TESSEL_E_IO, "%s: not a tessel token record (damaged? run `tessel data prepare` again)", path);
  } else {
    r->found = 1;
    r->vocab_size = vocab->valueint;
    r->has_tokenizer = !cJSON_IsNull(tok);
    r->hash = r->has_tokenizer ? strtoull(hash->valuestring, NULL, 16) : 0;
    snprintf(r->tokenizer, sizeof r->tokenizer, "%s/tokenizer.json", dir);
  }
  cJSON_Delete(root);
fail:
  free(text);
  return st;
}
