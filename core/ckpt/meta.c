/* core/ckpt/meta.c — trainer.json: writing, its checksum, validating reads. */
#include "ckpt/meta.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/atomic_file.h"
#include "common/util.h"
#include "runtime/settings.h"

const char *const tsl_ckpt_files[TSL_CKPT_N_FILES] = {"model.safetensors", "optimizer.safetensors",
                                                      "private.safetensors", "config.yaml", "tokenizer.json"};

#define MAX_WHOLE 9007199254740992.0 /* 2^53: integers a JSON number holds exactly */

uint64_t tsl_ckpt_model_hash(const tsl_model_settings *m) {
  double dims[11] = {m->arch,     m->layers, m->heads,      m->kv_heads,   m->channels,      m->ffn,
                     m->seq_len, m->vocab_size, m->rope_theta, m->norm_eps, m->tie_embeddings};
  uint64_t h = tsl_hash_bytes(dims, sizeof dims, 0x6d6f64656cull);
  /* positions, the attention biases, a head size of its own, the q/k
  ** norms, the rotary scaling, a part of the head turned and the sliding
  ** window came later: a model made for its own context, without them,
  ** hashes as before */
  if (m->positions != m->seq_len) h = tsl_mix64(h ^ (uint64_t)m->positions);
  if (m->qkv_bias) h = tsl_mix64(h ^ 0x71b1a5ull);
  if (m->qk_norm) h = tsl_mix64(h ^ 0x716b6eull);
  if (tsl_head_dim_own(m)) h = tsl_mix64(h ^ ((uint64_t)tsl_head_dim(m) << 32 | 0x68ull));
  if (m->rotary_dim) h = tsl_mix64(h ^ ((uint64_t)m->rotary_dim << 32 | 0x72ull));
  if (m->sliding_window) h = tsl_mix64(h ^ ((uint64_t)m->sliding_window << 32 | 0x77ull));
  double scaling[TSL_ROPE_MAX];
  const tsl_rope_type *t = tsl_rope_scaling_values(m, scaling);
  if (!t) return h;
  if (t != &tsl_rope_llama3) h = tsl_mix64(h ^ tsl_hash_str(t->name, 0)); /* Llama 3's hashes as before YaRN */
  h = tsl_hash_bytes(scaling, (size_t)t->n * sizeof *scaling, h);
  for (int l = 0; t->lists && l < 2; l++) {
    int pairs;
    const double *list = tsl_rope_scaling_list(m, l, &pairs);
    h = tsl_hash_bytes(list, (size_t)pairs * sizeof *list, tsl_mix64(h ^ (uint64_t)pairs));
  }
  return h;
}

/* A version-1 description's model_hash: GPT-2's five dimensions. */
static uint64_t v1_model_hash(const tsl_model_settings *m) {
  int dims[5] = {m->layers, m->heads, m->channels, m->seq_len, m->vocab_size};
  return tsl_hash_bytes(dims, sizeof dims, 0x6d6f64656cull);
}

/* Bytes of a file whose CRC-32 one thread takes (see tsl_file_crc32). */
#define CRC_BLOCK (8u << 20)

/* The CRC-32 of bytes [off, off + len) of fd into *crc and how many there
** were (fewer at the end of the file); 0, or the errno of a failed read. */
static int block_crc32(int fd, uint64_t off, uint64_t len, uLong *crc, uint64_t *got) {
  unsigned char buf[1 << 16];
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t n = 0;
  while (n < len) {
    ssize_t r = pread(fd, buf, (size_t)TSL_MIN((uint64_t)sizeof buf, len - n), (off_t)(off + n));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) break;
    c = crc32(c, buf, (uInt)r);
    n += (uint64_t)r;
  }
  *crc = c;
  *got = n;
  return 0;
}

/* The blocks of CRC_BLOCK bytes go to the threads side by side and their
** CRCs are joined in order (crc32_combine): a resume checks every byte of
** a checkpoint, 12 bytes per parameter, at one core's 3.6 GB/s before. A
** file that changes size while it is read gives the bytes it had up to
** the first short block, as a sequential read would. */
tsl_status tsl_file_crc32(const char *path, uint32_t *crc, uint64_t *bytes) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return tsl_error(TESSEL_E_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  uint64_t size = (uint64_t)sb.st_size, blocks = size / CRC_BLOCK + 1; /* the last one finds the end */
  uLong *crcs = malloc(blocks * sizeof *crcs);
  uint64_t *got = malloc(blocks * sizeof *got);
  int *err = calloc(blocks, sizeof *err);
  if (!crcs || !got || !err) {
    free(crcs), free(got), free(err);
    close(fd);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory checking %s", path);
  }
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 2)
  for (uint64_t b = 0; b < blocks; b++) {
    uint64_t off = b * CRC_BLOCK, len = b + 1 < blocks ? CRC_BLOCK : UINT64_MAX - off;
    err[b] = block_crc32(fd, off, len, &crcs[b], &got[b]);
  }
  close(fd);
  tsl_status st = TESSEL_OK;
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t n = 0;
  for (uint64_t b = 0; b < blocks && st >= 0; b++) {
    if (err[b]) {
      st = tsl_error(TESSEL_E_IO, "%s: read failed: %s", path, strerror(err[b]));
      break;
    }
    c = crc32_combine(c, crcs[b], (z_off_t)got[b]);
    n += got[b];
    if (b + 1 < blocks && got[b] < CRC_BLOCK) break; /* it shrank: the end came early */
  }
  free(crcs), free(got), free(err);
  if (st < 0) return st;
  *crc = (uint32_t)c;
  *bytes = n;
  return TESSEL_OK;
}

int64_t tsl_ckpt_dir_step(const char *dir) {
  size_t n = tsl_path_len(dir); /* "step_00000003/" names the same directory */
  const char *base = dir + n;
  while (base > dir && base[-1] != '/') base--;
  long long s;
  int used = 0;
  if ((size_t)(dir + n - base) < 6 || sscanf(base, "step_%lld%n", &s, &used) != 1 || base + used != dir + n ||
      s < 0)
    return -1;
  return s;
}

/* ---- the checksum ---- */

/* The fields whose meaning the checksum covers, as paths "a.b". */
static const char *const covered[] = {
    "format", "version", "step", "seed", "next_data_step", "world_size", "model.arch", "model.layers",
    "model.heads", "model.kv_heads", "model.channels", "model.ffn", "model.seq_len", "model.vocab_size",
    "model.rope_theta", "model.norm_eps", "model.tie_embeddings", "model_hash", "config_hash", "plugin.name",
    "plugin.version", "tessel_version", "tokenizer.hash", "files.model.safetensors.bytes",
    "files.model.safetensors.crc32", "files.optimizer.safetensors.bytes", "files.optimizer.safetensors.crc32",
    "files.private.safetensors.bytes", "files.private.safetensors.crc32", "files.config.yaml.bytes",
    "files.config.yaml.crc32", "files.tokenizer.json.bytes", "files.tokenizer.json.crc32", "model.positions",
    "tokens", "batch_size", "data.text", "data.val_fraction", "data.train", "data.val", "bos_token_id",
    "eos_token_id", "model.rope_scaling.type", "model.rope_scaling.factor", "model.rope_scaling.low_freq_factor",
    "model.rope_scaling.high_freq_factor", "model.rope_scaling.original_positions", "model.qkv_bias",
    "model.head_dim", "model.qk_norm", "model.rope_scaling.beta_fast", "model.rope_scaling.beta_slow",
    "model.rope_scaling.attention_factor", "model.rope_scaling.short_factor", "model.rope_scaling.long_factor",
    "model.rotary_dim", "model.sliding_window"};

/* Covered fields that came after descriptions were first written (from
** model.positions on): absent, they leave the checksum as those
** descriptions have it. */
static int later_field(const char *path) {
  for (size_t i = TSL_ARRAY_LEN(covered); i-- > 0 && strcmp(covered[i], "files.tokenizer.json.crc32") != 0;)
    if (!strcmp(path, covered[i])) return 1;
  return 0;
}

/* The item at a path of up to three levels ("model.rope_scaling.factor");
** file names hold dots, so "files.NAME.key" splits at its first and last. */
static const cJSON *item_at(const cJSON *root, const char *path) {
  const char *first = strchr(path, '.'), *last = strrchr(path, '.');
  if (!first) return cJSON_GetObjectItemCaseSensitive(root, path);
  char head[32], mid[64];
  snprintf(head, sizeof head, "%.*s", (int)(first - path), path);
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, head);
  if (first == last) return cJSON_GetObjectItemCaseSensitive(o, first + 1);
  snprintf(mid, sizeof mid, "%.*s", (int)(last - first - 1), first + 1);
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, mid), last + 1);
}

/* A list's elements as text, each followed by a newline: strings as they
** are, numbers as %.17g, anything else as "(other)" (heap; NULL when out of
** memory, which the checksum then reads as "(other)" and fails). */
static char *list_text(const cJSON *list) {
  size_t len = 1;
  const cJSON *e;
  cJSON_ArrayForEach(e, list) len += (cJSON_IsString(e) ? strlen(e->valuestring) : 32) + 1;
  char *out = malloc(len), *p = out;
  if (!out) return NULL;
  cJSON_ArrayForEach(e, list) {
    if (cJSON_IsString(e)) p += sprintf(p, "%s\n", e->valuestring);
    else if (cJSON_IsNumber(e)) p += sprintf(p, "%.17g\n", e->valuedouble);
    else p += sprintf(p, "(other)\n");
  }
  *p = '\0';
  return out;
}

/* CRC-32 of "path=value\n" for every covered field, numbers as %.17g:
** independent of key order, whitespace and how the JSON printed them. */
static uint32_t meaning_crc(const cJSON *root) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (size_t i = 0; i < TSL_ARRAY_LEN(covered); i++) {
    const cJSON *v = item_at(root, covered[i]);
    if (!v && later_field(covered[i])) continue;
    char num[64];
    /* a list (data.text, eos_token_id) as its elements, one per line */
    char *list = cJSON_IsArray(v) ? list_text(v) : NULL;
    const char *text = !v                 ? "(absent)"
                       : cJSON_IsString(v) ? v->valuestring
                       : cJSON_IsNumber(v) ? num
                       : cJSON_IsTrue(v)   ? "true"
                       : cJSON_IsFalse(v)  ? "false"
                       : list              ? list
                                           : "(other)";
    if (cJSON_IsNumber(v)) snprintf(num, sizeof num, "%.17g", v->valuedouble);
    c = crc32(c, (const Bytef *)covered[i], (uInt)strlen(covered[i]));
    c = crc32(c, (const Bytef *)"=", 1);
    c = crc32(c, (const Bytef *)text, (uInt)strlen(text));
    c = crc32(c, (const Bytef *)"\n", 1);
    free(list);
  }
  return (uint32_t)c;
}

static int set_checksum(cJSON *root) {
  char hex[16];
  snprintf(hex, sizeof hex, "%08" PRIx32, meaning_crc(root));
  cJSON_DeleteItemFromObjectCaseSensitive(root, "meta_crc32");
  return cJSON_AddStringToObject(root, "meta_crc32", hex) != NULL;
}

/* Every number of the tree as the shortest decimal that reads back as exactly
** it (a raw item), once the checksum is taken. cJSON prints 15 significant
** digits whenever they read back within a relative 2.2e-16: a rope_theta one
** ulp above 10000 would be written as 10000, and the description would then
** fail its own meta_crc32 (and model_hash) when read back. */
static int exact_numbers(cJSON *item) {
  for (cJSON *c = item->child; c; c = c->next) {
    if (!cJSON_IsNumber(c)) {
      if (!exact_numbers(c)) return 0;
      continue;
    }
    char text[32];
    for (int digits = 15; digits <= 17; digits++) {
      snprintf(text, sizeof text, "%.*g", digits, c->valuedouble);
      if (strtod(text, NULL) == c->valuedouble) break;
    }
    cJSON *raw = isfinite(c->valuedouble) ? cJSON_CreateRaw(text) : cJSON_CreateNull(); /* as cJSON prints inf */
    if (!raw) return 0;
    raw->string = c->string; /* the key moves over (NULL in an array) */
    c->string = NULL;
    cJSON_ReplaceItemViaPointer(item, c, raw);
    c = raw;
  }
  return 1;
}

char *tsl_ckpt_meta_reseal(const char *json) {
  cJSON *root = cJSON_Parse(json);
  char *out = cJSON_IsObject(root) && set_checksum(root) && exact_numbers(root) ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return out;
}

/* ---- writing ---- */

static void add_hex(cJSON *o, const char *key, uint64_t v, int digits) {
  char hex[24];
  snprintf(hex, sizeof hex, "%0*" PRIx64, digits, v);
  cJSON_AddStringToObject(o, key, hex);
}

char *tsl_ckpt_data_of(const tsl_settings *s, const uint64_t digest[2]) {
  cJSON *o = cJSON_CreateObject();
  if (s->data.n_text > 0) {
    cJSON_AddItemToObject(o, "text", cJSON_CreateStringArray(s->data.text, s->data.n_text));
    cJSON_AddNumberToObject(o, "val_fraction", s->data.val_fraction);
  } else {
    cJSON_AddStringToObject(o, "train", s->data.train ? s->data.train : "");
  }
  /* beside data.text, data.val is its split-off part unless val_fraction is 0 */
  if (s->data.n_text == 0 || s->data.val_fraction == 0) {
    if (s->data.val) cJSON_AddStringToObject(o, "val", s->data.val);
    else cJSON_AddNullToObject(o, "val");
  }
  if (digest[0]) add_hex(o, "train_digest", digest[0], 16);
  if (digest[1]) add_hex(o, "val_digest", digest[1], 16);
  char *text = exact_numbers(o) ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return text;
}

static cJSON *meta_json(const tsl_ckpt_meta *m) {
  cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
  cJSON *files = cJSON_AddObjectToObject(root, "files"), *plugin = cJSON_AddObjectToObject(root, "plugin");
  const tsl_model_settings *d = &m->model;
  cJSON_AddStringToObject(root, "format", "tessel-checkpoint");
  cJSON_AddNumberToObject(root, "version", TSL_CKPT_FORMAT_VERSION);
  cJSON_AddNumberToObject(root, "step", (double)m->step);
  add_hex(root, "seed", m->seed, 16);
  /* the data position: batches are a function of (seed, step), so the next
  ** step's batch is all a resumed run needs to know */
  cJSON_AddNumberToObject(root, "next_data_step", (double)(m->step + 1));
  cJSON_AddNumberToObject(root, "world_size", m->world_size);
  if (m->tokens >= 0) cJSON_AddNumberToObject(root, "tokens", (double)m->tokens);
  if (m->batch_size > 0) cJSON_AddNumberToObject(root, "batch_size", m->batch_size);
  if (m->data) cJSON_AddItemToObject(root, "data", cJSON_Parse(m->data));
  cJSON_AddStringToObject(model, "arch", d->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2");
  cJSON_AddNumberToObject(model, "layers", d->layers);
  cJSON_AddNumberToObject(model, "heads", d->heads);
  cJSON_AddNumberToObject(model, "kv_heads", d->kv_heads);
  cJSON_AddNumberToObject(model, "channels", d->channels);
  cJSON_AddNumberToObject(model, "ffn", d->ffn);
  cJSON_AddNumberToObject(model, "seq_len", d->seq_len);
  cJSON_AddNumberToObject(model, "positions", d->positions);
  cJSON_AddNumberToObject(model, "vocab_size", d->vocab_size);
  cJSON_AddNumberToObject(model, "rope_theta", d->rope_theta);
  cJSON_AddNumberToObject(model, "norm_eps", d->norm_eps);
  cJSON_AddBoolToObject(model, "tie_embeddings", d->tie_embeddings);
  if (d->qkv_bias) cJSON_AddBoolToObject(model, "qkv_bias", 1);
  if (d->qk_norm) cJSON_AddBoolToObject(model, "qk_norm", 1);
  if (tsl_head_dim_own(d)) cJSON_AddNumberToObject(model, "head_dim", tsl_head_dim(d));
  if (d->rotary_dim) cJSON_AddNumberToObject(model, "rotary_dim", d->rotary_dim);
  if (d->sliding_window) cJSON_AddNumberToObject(model, "sliding_window", d->sliding_window);
  double v[TSL_ROPE_MAX];
  const tsl_rope_type *t = tsl_rope_scaling_values(d, v);
  if (t) { /* as model.rope_scaling of a config reads it */
    cJSON *scaling = cJSON_AddObjectToObject(model, "rope_scaling");
    cJSON_AddStringToObject(scaling, "type", t->name);
    for (int k = 0; k < t->n; k++) cJSON_AddNumberToObject(scaling, t->keys[k], v[k]);
    for (int l = 0; t->lists && l < 2; l++) {
      int pairs;
      const double *list = tsl_rope_scaling_list(d, l, &pairs);
      cJSON_AddItemToObject(scaling, tsl_rope_list_keys[l], cJSON_CreateDoubleArray(list, pairs));
    }
  }
  add_hex(root, "model_hash", m->model_hash, 16);
  add_hex(root, "config_hash", m->config_hash, 16);
  cJSON_AddStringToObject(plugin, "name", m->plugin);
  cJSON_AddStringToObject(plugin, "version", m->plugin_version);
  cJSON_AddStringToObject(root, "tessel_version", m->tessel_version);
  if (m->files[TSL_CKPT_TOKENIZER].present) {
    cJSON *tok = cJSON_AddObjectToObject(root, "tokenizer");
    cJSON_AddStringToObject(tok, "file", tsl_ckpt_files[TSL_CKPT_TOKENIZER]);
    add_hex(tok, "hash", m->tokenizer_hash, 16);
  } else {
    cJSON_AddNullToObject(root, "tokenizer");
  }
  if (m->ids.has_bos) cJSON_AddNumberToObject(root, "bos_token_id", m->ids.bos_id);
  if (m->ids.n_eos == 1) cJSON_AddNumberToObject(root, "eos_token_id", m->ids.eos_ids[0]);
  else if (m->ids.n_eos > 1)
    cJSON_AddItemToObject(root, "eos_token_id", cJSON_CreateIntArray(m->ids.eos_ids, m->ids.n_eos));
  for (int f = 0; f < TSL_CKPT_N_FILES; f++) {
    if (!m->files[f].present) continue;
    cJSON *e = cJSON_AddObjectToObject(files, tsl_ckpt_files[f]);
    cJSON_AddNumberToObject(e, "bytes", (double)m->files[f].bytes);
    add_hex(e, "crc32", m->files[f].crc32, 8);
  }
  if (!set_checksum(root) || !exact_numbers(root)) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

tsl_status tsl_ckpt_meta_write(const char *dir, tsl_ckpt_meta *m) {
  tsl_status st = TESSEL_OK;
  char *path = NULL, *text = NULL;
  for (int f = 0; f < TSL_CKPT_N_FILES && st >= 0; f++) {
    if (!m->files[f].present) continue;
    char *file = tsl_asprintf("%s/%s", dir, tsl_ckpt_files[f]);
    st = file ? tsl_file_crc32(file, &m->files[f].crc32, &m->files[f].bytes) : TESSEL_E_NOMEM;
    free(file);
  }
  if (st < 0) return st;
  cJSON *root = meta_json(m);
  text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  path = tsl_asprintf("%s/trainer.json", dir);
  if (!text || !path) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing trainer.json");
  } else {
    tsl_atomic_file af;
    st = tsl_atomic_open(path, &af);
    if (st >= 0 && (st = tsl_atomic_write(&af, text, strlen(text))) < 0) tsl_atomic_abort(&af);
    if (st >= 0) st = tsl_atomic_commit(&af);
  }
  free(text);
  free(path);
  return st;
}

/* ---- reading ---- */

typedef struct reader {
  const char *where;
  const cJSON *root;
  int version;
} reader;

/* A whole number in [lo, hi] at `path`. */
static tsl_status whole(const reader *r, const char *path, double lo, double hi, int64_t *out) {
  const cJSON *v = item_at(r->root, path);
  if (!cJSON_IsNumber(v)) return tsl_error(TESSEL_E_IO, "%s: '%s' is missing or not a number", r->where, path);
  double x = v->valuedouble;
  if (!isfinite(x) || x != floor(x)) return tsl_error(TESSEL_E_IO, "%s: '%s' is %.17g, not a whole number", r->where, path, x);
  if (x < lo || x > hi)
    return tsl_error(TESSEL_E_IO, "%s: '%s' is %.0f, outside [%.0f, %.0f]", r->where, path, x, lo, hi);
  *out = (int64_t)x;
  return TESSEL_OK;
}

/* Exactly `digits` hexadecimal digits at `path`. */
static tsl_status hex(const reader *r, const char *path, int digits, uint64_t *out) {
  const cJSON *v = item_at(r->root, path);
  const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
  int n = 0;
  while (s && s[n] && strchr("0123456789abcdefABCDEF", s[n])) n++;
  if (!s || n != digits || s[n])
    return tsl_error(TESSEL_E_IO, "%s: '%s' must be %d hexadecimal digits", r->where, path, digits);
  *out = strtoull(s, NULL, 16);
  return TESSEL_OK;
}

static tsl_status text(const reader *r, const char *path, char *out, size_t cap) {
  const cJSON *v = item_at(r->root, path);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
    return tsl_error(TESSEL_E_IO, "%s: '%s' must be a string of fewer than %zu bytes", r->where, path, cap);
  memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
  return TESSEL_OK;
}

/* A number at `path`, or `dflt` when a version-1 description lacks it. */
static tsl_status number(const reader *r, const char *path, double lo, double hi, double dflt, double *out) {
  const cJSON *v = item_at(r->root, path);
  if (!v && r->version == 1) {
    *out = dflt;
    return TESSEL_OK;
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
    return tsl_error(TESSEL_E_IO, "%s: '%s' is missing or not a number in [%g, %g]", r->where, path, lo, hi);
  *out = v->valuedouble;
  return TESSEL_OK;
}

tsl_status tsl_rope_list_json(const cJSON *a, int turned, double *list, int *n, char *why, size_t cap) {
  const cJSON *e;
  int at;
  *n = 0;
  cJSON_ArrayForEach(e, a) {
    if (!cJSON_IsNumber(e)) {
      snprintf(why, cap, "must hold numbers only");
      return TESSEL_E_IO;
    }
    if (*n < TSL_ROPE_PAIRS_MAX) list[*n] = e->valuedouble;
    ++*n;
  }
  return tsl_rope_list_fault(list, *n, turned, why, cap, &at) ? TESSEL_E_UNSUPPORTED : TESSEL_OK;
}

/* LongRoPE's list `key` of `o` into list: numbers, as many as d's heads
** turn pairs, each in the range a config allows. */
static tsl_status read_rope_list(const reader *r, const cJSON *o, const char *key, const tsl_model_settings *d,
                                 double *list, int *n) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  char why[256];
  if (!cJSON_IsArray(a)) return tsl_error(TESSEL_E_IO, "%s: 'model.rope_scaling.%s' is missing or not a list", r->where, key);
  if (tsl_rope_list_json(a, tsl_rotary_dim(d), list, n, why, sizeof why) < 0)
    return tsl_error(TESSEL_E_IO, "%s: 'model.rope_scaling.%s' %s", r->where, key, why);
  return TESSEL_OK;
}

/* model.rope_scaling: absent (plain frequencies, as in every description
** written before it was) or a Llama's Llama 3, YaRN, linear, LongRoPE or
** dynamic scaling, each of its type's values present and in the range a config
** allows; LongRoPE's lists one factor per pair of d's heads. */
static tsl_status read_rope_scaling(const reader *r, tsl_model_settings *d) {
  const cJSON *o = item_at(r->root, "model.rope_scaling"), *type = item_at(r->root, "model.rope_scaling.type");
  double v[TSL_ROPE_MAX], lists[2][TSL_ROPE_PAIRS_MAX];
  int n = 0;
  tsl_status st;
  char path[64], why[512];
  if (!o) return TESSEL_OK;
  if (d->arch != TSL_ARCH_LLAMA)
    return tsl_error(TESSEL_E_IO, "%s: 'model.rope_scaling' is recorded for a gpt2 model, which has no rotary "
                     "positions", r->where);
  const tsl_rope_type *t = cJSON_IsObject(o) && cJSON_IsString(type) ? tsl_rope_type_named(type->valuestring) : NULL;
  if (!t)
    return tsl_error(TESSEL_E_IO, "%s: 'model.rope_scaling' must be an object whose type is \"llama3\", "
                     "\"yarn\", \"linear\", \"longrope\" or \"dynamic\"", r->where);
  for (int k = 0; k < t->n; k++) {
    snprintf(path, sizeof path, "model.rope_scaling.%s", t->keys[k]);
    const cJSON *x = item_at(r->root, path);
    if (!cJSON_IsNumber(x)) return tsl_error(TESSEL_E_IO, "%s: '%s' is missing or not a number", r->where, path);
    v[k] = x->valuedouble;
  }
  for (int k = 0; k < t->n; k++)
    if (tsl_rope_scaling_fault(t, v, k, why, sizeof why))
      return tsl_error(TESSEL_E_IO, "%s: 'model.rope_scaling.%s' %s", r->where, t->keys[k], why);
  for (int l = 0; t->lists && l < 2; l++) /* both as long as the heads have pairs */
    TSL_TRY(st, read_rope_list(r, o, tsl_rope_list_keys[l], d, lists[l], &n));
  const double *const given[2] = {lists[0], lists[1]};
  tsl_rope_scaling_set(d, t, v, given, n);
  return TESSEL_OK;
fail:
  return st;
}

/* model.qkv_bias, model.qk_norm, model.head_dim, model.rotary_dim and
** model.sliding_window, a Llama's, each written only when it differs from
** the model without it (absent: no biases, no q/k norms, heads of channels
** / heads turned whole, no window, as in every description written before
** they were); head_dim, rotary_dim and sliding_window in the range a
** config allows. d's heads are read. */
static tsl_status read_llama_options(const reader *r, tsl_model_settings *d) {
  tsl_status st;
  const cJSON *qkv_bias = item_at(r->root, "model.qkv_bias");
  if (qkv_bias && !(cJSON_IsTrue(qkv_bias) && d->arch == TSL_ARCH_LLAMA))
    return tsl_error(TESSEL_E_IO, "%s: 'model.qkv_bias' must be true (a Llama's) or absent", r->where);
  d->qkv_bias = qkv_bias != NULL;
  const cJSON *qk_norm = item_at(r->root, "model.qk_norm");
  if (qk_norm && !(cJSON_IsTrue(qk_norm) && d->arch == TSL_ARCH_LLAMA))
    return tsl_error(TESSEL_E_IO, "%s: 'model.qk_norm' must be true (a Llama's) or absent", r->where);
  d->qk_norm = qk_norm != NULL;
  int64_t head_dim = 0;
  if (item_at(r->root, "model.head_dim")) {
    TSL_TRY(st, whole(r, "model.head_dim", 2, 1 << 16, &head_dim));
    if (d->arch != TSL_ARCH_LLAMA || head_dim % 2 || head_dim * d->heads > TSL_ATTENTION_WIDTH_MAX)
      return tsl_error(TESSEL_E_IO, "%s: 'model.head_dim' must be even, a Llama's, and times model.heads at most %d",
                       r->where, TSL_ATTENTION_WIDTH_MAX);
  }
  d->head_dim = (int)head_dim;
  int64_t rotary_dim = 0;
  if (item_at(r->root, "model.rotary_dim")) {
    TSL_TRY(st, whole(r, "model.rotary_dim", 2, 1 << 16, &rotary_dim));
    if (d->arch != TSL_ARCH_LLAMA || rotary_dim % 2 || rotary_dim >= tsl_head_dim(d))
      return tsl_error(TESSEL_E_IO, "%s: 'model.rotary_dim' must be even, a Llama's, and less than the heads' %d "
                       "elements", r->where, tsl_head_dim(d));
  }
  d->rotary_dim = (int)rotary_dim;
  int64_t window = 0;
  if (item_at(r->root, "model.sliding_window")) {
    TSL_TRY(st, whole(r, "model.sliding_window", 1, 1 << 30, &window));
    if (d->arch != TSL_ARCH_LLAMA)
      return tsl_error(TESSEL_E_IO, "%s: 'model.sliding_window' must be a Llama's", r->where);
  }
  d->sliding_window = (int)window;
  return TESSEL_OK;
fail:
  return st;
}

/* The model: version 1 (GPT-2 only) lacks every key past its five
** dimensions, which then take GPT-2's values. */
static tsl_status read_model(const reader *r, tsl_ckpt_meta *m) {
  tsl_status st;
  int64_t v[8];
  tsl_model_settings *d = &m->model;
  static const char *const keys[] = {"model.layers", "model.heads", "model.channels", "model.seq_len",
                                     "model.vocab_size"};
  /* the ranges of the model section of a config */
  static const double lo[] = {1, 1, 1, 1, 2}, hi[] = {1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 24};
  for (int i = 0; i < 5; i++) TSL_TRY(st, whole(r, keys[i], lo[i], hi[i], &v[i]));
  const cJSON *arch = item_at(r->root, "model.arch");
  if (r->version >= 2 && !(cJSON_IsString(arch) && (!strcmp(arch->valuestring, "gpt2") ||
                                                    !strcmp(arch->valuestring, "llama"))))
    return tsl_error(TESSEL_E_IO, "%s: 'model.arch' must be \"gpt2\" or \"llama\"", r->where);
  d->arch = r->version >= 2 && !strcmp(arch->valuestring, "llama") ? TSL_ARCH_LLAMA : TSL_ARCH_GPT2;
  d->layers = (int)v[0], d->heads = (int)v[1], d->channels = (int)v[2], d->seq_len = (int)v[3];
  d->vocab_size = (int)v[4];
  if (r->version >= 2) {
    TSL_TRY(st, whole(r, "model.kv_heads", 1, 1 << 20, &v[5]));
    TSL_TRY(st, whole(r, "model.ffn", 1, 1 << 24, &v[6]));
    const cJSON *tie = item_at(r->root, "model.tie_embeddings");
    if (!cJSON_IsBool(tie)) return tsl_error(TESSEL_E_IO, "%s: 'model.tie_embeddings' must be true or false", r->where);
    d->tie_embeddings = cJSON_IsTrue(tie);
  } else {
    v[5] = d->heads, v[6] = 4 * (int64_t)d->channels, d->tie_embeddings = 1;
  }
  d->kv_heads = (int)v[5], d->ffn = (int)v[6];
  TSL_TRY(st, number(r, "model.rope_theta", 1.0, 1e12, 10000.0, &d->rope_theta));
  TSL_TRY(st, number(r, "model.norm_eps", 1e-12, 1.0, 1e-5, &d->norm_eps));
  TSL_TRY(st, read_llama_options(r, d)); /* the head size, which LongRoPE's lists follow */
  TSL_TRY(st, read_rope_scaling(r, d));
  /* absent (written before it was): made for the context it trained on */
  int64_t positions = d->seq_len;
  if (item_at(r->root, "model.positions")) TSL_TRY(st, whole(r, "model.positions", d->seq_len, 1 << 20, &positions));
  d->positions = (int)positions;
  if (!d->head_dim && d->channels % d->heads != 0)
    return tsl_error(TESSEL_E_IO, "%s: model.channels %d does not split into model.heads %d", r->where, d->channels,
                     d->heads);
  if (d->heads % d->kv_heads != 0)
    return tsl_error(TESSEL_E_IO, "%s: model.kv_heads %d does not divide model.heads %d", r->where, d->kv_heads,
                     d->heads);
  TSL_TRY(st, hex(r, "model_hash", 16, &m->model_hash));
  if (m->model_hash != (r->version == 1 ? v1_model_hash(d) : tsl_ckpt_model_hash(d)))
    return tsl_error(TESSEL_E_IO, "%s: model_hash does not belong to the model recorded beside it", r->where);
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_step(const reader *r, int64_t dir_step, tsl_ckpt_meta *m) {
  tsl_status st;
  int64_t next, world;
  TSL_TRY(st, whole(r, "step", 0, MAX_WHOLE - 1, &m->step));
  if (dir_step >= 0 && m->step != dir_step)
    return tsl_error(TESSEL_E_IO, "%s: records step %lld, but its directory is step_%08lld", r->where,
                     (long long)m->step, (long long)dir_step);
  TSL_TRY(st, whole(r, "next_data_step", 0, MAX_WHOLE, &next));
  if (next != m->step + 1)
    return tsl_error(TESSEL_E_IO, "%s: next_data_step %lld does not follow step %lld", r->where, (long long)next,
                     (long long)m->step);
  TSL_TRY(st, whole(r, "world_size", 1, 1 << 24, &world));
  m->world_size = (int)world;
  return hex(r, "seed", 16, &m->seed);
fail:
  return st;
}

/* The fields that came later, each optional: the tokens trained, the
** global batch and the data section (their kinds checked, member by
** member), an imported model's token ids (in its vocabulary). */
static tsl_status read_later(const reader *r, tsl_ckpt_meta *m) {
  tsl_status st;
  int64_t v = 0;
  const double vocab = m->model.vocab_size - 1;
  m->tokens = -1;
  if (item_at(r->root, "tokens")) TSL_TRY(st, whole(r, "tokens", 0, MAX_WHOLE, &m->tokens));
  if (item_at(r->root, "batch_size")) TSL_TRY(st, whole(r, "batch_size", 1, 1 << 24, &v));
  m->batch_size = item_at(r->root, "batch_size") ? (int)v : 0;
  if ((m->ids.has_bos = item_at(r->root, "bos_token_id") != NULL))
    TSL_TRY(st, whole(r, "bos_token_id", 0, vocab, &v));
  m->ids.bos_id = m->ids.has_bos ? (int)v : 0;
  const cJSON *eos = item_at(r->root, "eos_token_id"), *e, *ids = cJSON_IsArray(eos) ? eos : NULL;
  if (ids && (cJSON_GetArraySize(eos) < 1 || cJSON_GetArraySize(eos) > TSL_CKPT_MAX_EOS))
    return tsl_error(TESSEL_E_IO, "%s: 'eos_token_id' must list 1 to %d ids", r->where, TSL_CKPT_MAX_EOS);
  if (eos && !ids) {
    TSL_TRY(st, whole(r, "eos_token_id", 0, vocab, &v));
    m->ids.eos_ids[m->ids.n_eos++] = (int)v;
  }
  cJSON_ArrayForEach(e, ids) {
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 || e->valuedouble > vocab)
      return tsl_error(TESSEL_E_IO, "%s: 'eos_token_id' holds something not an id in [0, %.0f]", r->where, vocab);
    m->ids.eos_ids[m->ids.n_eos++] = (int)e->valuedouble;
  }
  const cJSON *data = item_at(r->root, "data"), *text = item_at(r->root, "data.text");
  if (!data) return TESSEL_OK;
  const cJSON *fraction = item_at(r->root, "data.val_fraction"), *train = item_at(r->root, "data.train");
  const cJSON *val = item_at(r->root, "data.val"), *texts = cJSON_IsArray(text) ? text : NULL;
  int ok = cJSON_IsObject(data) && (!text || cJSON_IsArray(text)) && (!fraction || cJSON_IsNumber(fraction)) &&
           (!train || cJSON_IsString(train)) && (!val || cJSON_IsString(val) || cJSON_IsNull(val));
  cJSON_ArrayForEach(e, texts) ok = ok && cJSON_IsString(e);
  if (!ok)
    return tsl_error(TESSEL_E_IO, "%s: 'data' must be an object of text (a list of strings), val_fraction (a "
                     "number), train and val (strings)", r->where);
  return (m->data = cJSON_PrintUnformatted(data)) ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory");
fail:
  return st;
}

/* Whether file f is part of the checkpoint: the tokenizer when the
** description names one; the optimizer's moments except at step 0 of
** version 3 and later, where an entry says they are; private.safetensors
** since version 2; the others always. */
static int file_present(const reader *r, const tsl_ckpt_meta *m, tsl_ckpt_file f) {
  if (f == TSL_CKPT_TOKENIZER) return cJSON_IsObject(item_at(r->root, "tokenizer"));
  if (f == TSL_CKPT_OPTIMIZER && r->version >= 3 && m->step == 0)
    return cJSON_GetObjectItemCaseSensitive(item_at(r->root, "files"), tsl_ckpt_files[f]) != NULL;
  return f != TSL_CKPT_PRIVATE || r->version >= 2;
}

/* Every file file_present says the checkpoint has. */
static tsl_status read_files(const reader *r, tsl_ckpt_meta *m) {
  tsl_status st = TESSEL_OK;
  const cJSON *tok = item_at(r->root, "tokenizer");
  if (r->version >= 2 && !cJSON_IsNull(tok) && !cJSON_IsObject(tok))
    return tsl_error(TESSEL_E_IO, "%s: 'tokenizer' must be null or an object", r->where);
  if (cJSON_IsObject(tok)) TSL_TRY(st, hex(r, "tokenizer.hash", 16, &m->tokenizer_hash));
  for (int f = 0; f < TSL_CKPT_N_FILES && st >= 0; f++) {
    char path[96];
    int64_t bytes = 0;
    uint64_t crc = 0;
    m->files[f].present = file_present(r, m, (tsl_ckpt_file)f);
    if (!m->files[f].present) continue;
    snprintf(path, sizeof path, "files.%s.bytes", tsl_ckpt_files[f]);
    st = whole(r, path, 0, MAX_WHOLE, &bytes);
    snprintf(path, sizeof path, "files.%s.crc32", tsl_ckpt_files[f]);
    if (st >= 0) st = hex(r, path, 8, &crc);
    m->files[f].bytes = (uint64_t)bytes;
    m->files[f].crc32 = (uint32_t)crc;
  }
fail:
  return st;
}

tsl_status tsl_ckpt_meta_parse(const char *json, const char *where, int64_t dir_step, tsl_ckpt_meta *m) {
  tsl_status st = TESSEL_OK;
  memset(m, 0, sizeof *m);
  cJSON *root = cJSON_Parse(json);
  reader r = {where, root, 0};
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  int64_t version = 0;
  uint64_t sum = 0;
  if (!cJSON_IsObject(root) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tessel-checkpoint") != 0) {
    st = tsl_error(TESSEL_E_IO, "%s: not a tessel checkpoint description (bad or truncated JSON)", where);
    goto fail;
  }
  TSL_TRY(st, whole(&r, "version", 0, MAX_WHOLE, &version));
  if (version < 1 || version > TSL_CKPT_FORMAT_VERSION) {
    st = tsl_error(TESSEL_E_VERSION, "%s: checkpoint format version %lld; this tessel reads versions 1 to %d", where,
                   (long long)version, TSL_CKPT_FORMAT_VERSION);
    goto fail;
  }
  m->version = r.version = (int)version;
  if (version >= 2) {
    TSL_TRY(st, hex(&r, "meta_crc32", 8, &sum));
    if ((uint32_t)sum != meaning_crc(root)) {
      st = tsl_error(TESSEL_E_IO, "%s has been altered or damaged: its content does not match its checksum "
                     "(meta_crc32 %08" PRIx32 ", content %08" PRIx32 ")", where, (uint32_t)sum, meaning_crc(root));
      goto fail;
    }
  }
  TSL_TRY(st, read_step(&r, dir_step, m));
  TSL_TRY(st, read_model(&r, m));
  TSL_TRY(st, hex(&r, "config_hash", 16, &m->config_hash));
  TSL_TRY(st, text(&r, "plugin.name", m->plugin, sizeof m->plugin));
  TSL_TRY(st, text(&r, "plugin.version", m->plugin_version, sizeof m->plugin_version));
  TSL_TRY(st, text(&r, "tessel_version", m->tessel_version, sizeof m->tessel_version));
  TSL_TRY(st, read_files(&r, m));
  TSL_TRY(st, read_later(&r, m));
fail:
  cJSON_Delete(root);
  return st;
}

void tsl_ckpt_meta_free(tsl_ckpt_meta *m) {
  free(m->data);
  m->data = NULL;
}
