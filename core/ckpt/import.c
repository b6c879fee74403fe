/* core/ckpt/import.c — weights from a Hugging Face directory or a tessel
** checkpoint, and `tessel import`. */
#include "ckpt/import.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bf16.h"
#include "ckpt/checkpoint.h"
#include "ckpt/import_hf.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/util.h"
#include "tokenizer/tokenizer.h"

struct tsl_weights {
  char *dir;
  int hf;                /* a Hugging Face directory, not a checkpoint */
  int fused;             /* its files fuse q, k, v and gate, up (Phi-3's) */
  tsl_model_settings model;
  tsl_ckpt ckpt;         /* a checkpoint's files */
  tsl_st_file **files;   /* where tensors are: HF's files, or &ckpt.model */
  int n_files;
  tsl_params params;     /* the model's parameters at the weights' own sizes */
};

const tsl_model_settings *tsl_weights_model(const tsl_weights *w) { return &w->model; }
int tsl_weights_is_hf(const tsl_weights *w) { return w->hf; }
void tsl_weights_token_ids(const tsl_weights *w, int warn, tsl_token_ids *ids) {
  *ids = w->hf ? (tsl_token_ids){0} : w->ckpt.ids;
  if (w->hf) tsl_hf_token_ids(w->dir, w->model.vocab_size, warn, ids);
}

int tsl_phi3_fused_part(const char *name, char *fused, size_t cap, int *part, int *parts) {
  int layer, end = 0;
  char which[8];
  if (sscanf(name, "model.layers.%d.self_attn.%1[qkv]_proj.weight%n", &layer, which, &end) == 2 && !name[end]) {
    *part = which[0] == 'q' ? 0 : which[0] == 'k' ? 1 : 2;
    *parts = 3;
    snprintf(fused, cap, "model.layers.%d.self_attn.qkv_proj.weight", layer);
    return 1;
  }
  if (sscanf(name, "model.layers.%d.mlp.%4[gateup]_proj.weight%n", &layer, which, &end) == 2 && !name[end] &&
      (strcmp(which, "gate") == 0 || strcmp(which, "up") == 0)) {
    *part = which[0] == 'g' ? 0 : 1;
    *parts = 2;
    snprintf(fused, cap, "model.layers.%d.mlp.gate_up_proj.weight", layer);
    return 1;
  }
  return 0;
}

/* Where a tessel tensor's rows are in files that fuse them (Phi-3's,
** tsl_phi3_fused_part). 1 with the fused tensor's name (cap bytes), the
** first row and the fused tensor's rows; 0 for a tensor stored as itself. */
static int fused_rows(const tsl_weights *w, const char *name, char *fused, size_t cap, int64_t *row0,
                      int64_t *rows) {
  int part, parts;
  if (!w->fused || !tsl_phi3_fused_part(name, fused, cap, &part, &parts)) return 0;
  const int64_t q = (int64_t)w->model.heads * tsl_head_dim(&w->model);
  const int64_t kv = (int64_t)w->model.kv_heads * tsl_head_dim(&w->model), ffn = w->model.ffn;
  const int64_t attn_rows[] = {0, q, q + kv}, mlp_rows[] = {0, ffn};
  *row0 = parts == 3 ? attn_rows[part] : mlp_rows[part];
  *rows = parts == 3 ? q + 2 * kv : 2 * ffn;
  return 1;
}

/* Whether a file's tensor is a fused one some tessel tensor's rows are in. */
static int is_fused_source(const tsl_weights *w, const char *name) {
  int layer, end = 0;
  if (!w->fused) return 0;
  if ((sscanf(name, "model.layers.%d.self_attn.qkv_proj.weight%n", &layer, &end) != 1 || name[end]) &&
      (sscanf(name, "model.layers.%d.mlp.gate_up_proj.weight%n", &layer, &end) != 1 || name[end]))
    return 0;
  return layer >= 0 && layer < w->model.layers;
}

/* A tensor by tessel name: GPT2LMHeadModel nests its tensors under
** "transformer." (some GPT-2 files do not), Llama's names are HF's own,
** cut from fused tensors where the files fuse them (fused_rows). *row0
** and *rows: where the tensor's rows start in what is found, and how many
** that holds; looked[TSL_LOOKED] the name looked for (the fused tensor's,
** or name). */
#define TSL_LOOKED 160
static const tsl_st_desc *find_rows(const tsl_weights *w, const char *name, tsl_st_file **file, int *index,
                                    int64_t *row0, int64_t *rows, char *looked) {
  char nested[TSL_LOOKED + 16];
  *row0 = 0, *rows = -1;
  if (!fused_rows(w, name, looked, TSL_LOOKED, row0, rows)) snprintf(looked, TSL_LOOKED, "%s", name);
  name = looked;
  snprintf(nested, sizeof nested, "transformer.%s", name);
  const char *tries[2] = {name, NULL};
  if (w->hf && w->model.arch == TSL_ARCH_GPT2) tries[0] = nested, tries[1] = name;
  for (int t = 0; t < 2 && tries[t]; t++)
    for (int f = 0; f < w->n_files; f++) {
      int i = tsl_st_find(w->files[f], tries[t]);
      if (i < 0) continue;
      *file = w->files[f];
      *index = i;
      const tsl_st_desc *d = tsl_st_desc_at(w->files[f], i);
      if (*rows < 0) *rows = d->ndim > 0 ? d->shape[0] : 1;
      return d;
    }
  return NULL;
}

static const tsl_st_desc *find(const tsl_weights *w, const char *name, tsl_st_file **file, int *index) {
  int64_t row0, rows;
  char looked[TSL_LOOKED];
  return find_rows(w, name, file, index, &row0, &rows, looked);
}

/* Whether a GPT-2 file holds `name` under both spellings, nested and bare:
** tessel would take one and transformers the other, so neither is taken. */
static int in_both_spellings(const tsl_weights *w, const char *name) {
  char nested[160];
  int found[2] = {0, 0};
  if (!w->hf || w->model.arch != TSL_ARCH_GPT2) return 0;
  snprintf(nested, sizeof nested, "transformer.%s", name);
  for (int f = 0; f < w->n_files; f++) {
    found[0] |= tsl_st_find(w->files[f], nested) >= 0;
    found[1] |= tsl_st_find(w->files[f], name) >= 0;
  }
  return found[0] && found[1];
}

/* Tensors a Hugging Face file may hold that are not parameters: GPT-2's
** attention-mask buffers, old Llama files' rotary frequencies, and the head
** of a model whose head is the embedding (transformers ties it on load). */
static int known_extra(const tsl_weights *w, const char *name) {
  static const char *const buffers[] = {".attn.bias", ".attn.masked_bias", ".rotary_emb.inv_freq"};
  size_t n = strlen(name);
  for (size_t i = 0; i < TSL_ARRAY_LEN(buffers); i++) {
    size_t k = strlen(buffers[i]);
    if (n > k && strcmp(name + n - k, buffers[i]) == 0) return 1;
  }
  return w->model.tie_embeddings && strcmp(name, "lm_head.weight") == 0;
}

/* A tied model's file may still hold an lm_head.weight: transformers 4.x
** then loads it into the one shared table, tessel takes the embedding, so
** the same files would be two models. Only a copy of the embedding is
** taken (bit for bit, in the same dtype). */
static tsl_status check_tied_head(const tsl_weights *w) {
  tsl_st_file *hf = NULL, *ef = NULL;
  int hi = -1, ei = -1;
  const tsl_st_desc *head = w->hf && w->model.tie_embeddings ? find(w, "lm_head.weight", &hf, &hi) : NULL;
  const char *embedding = NULL;
  for (int i = 0; i < w->params.n && !embedding; i++)
    if (w->params.p[i].info.role == TESSEL_ROLE_EMBEDDING) embedding = w->params.p[i].name;
  const tsl_st_desc *emb = head && embedding ? find(w, embedding, &ef, &ei) : NULL;
  if (!head || !emb) return TESSEL_OK;
  uint64_t hb = 0, eb = 0;
  const void *h = tsl_st_data(hf, hi, &hb), *e = tsl_st_data(ef, ei, &eb);
  if (head->dtype == emb->dtype && hb == eb && memcmp(h, e, hb) == 0) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: config.json ties the head to the embedding (tie_word_embeddings), but "
                   "the weights hold an lm_head.weight that differs from %s, so which of the two the model uses is "
                   "ambiguous (transformers 4.x loads lm_head.weight into both). Set tie_word_embeddings to false in "
                   "config.json to keep both, or remove lm_head.weight to use the embedding", w->dir, emb->name);
}

const char *tsl_hf_class(const tsl_model_settings *m, int phi3, const char **type) {
  static const struct {
    const char *cls, *type;
  } classes[] = {{"GPT2LMHeadModel", "gpt2"},   {"Phi3ForCausalLM", "phi3"},   {"Qwen3ForCausalLM", "qwen3"},
                 {"Qwen2ForCausalLM", "qwen2"}, {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}};
  const int k = m->arch != TSL_ARCH_LLAMA ? 0
                : phi3                    ? 1
                : m->qk_norm              ? 2
                : m->qkv_bias             ? 3
                : m->sliding_window       ? 5
                                          : 4;
  if (type) *type = classes[k].type;
  return classes[k].cls;
}

/* Every parameter present with its file shape and a float dtype; in a
** Hugging Face directory, no tensor the model has no place for. */
static tsl_status check_tensors(const tsl_weights *w) {
  char looked[TSL_LOOKED], fused[TSL_LOOKED];
  for (int i = 0; i < w->params.n; i++) {
    const tsl_param *p = &w->params.p[i];
    tsl_st_file *f;
    int k;
    int64_t shape[2], row0, rows;
    const tsl_st_desc *d = find_rows(w, p->name, &f, &k, &row0, &rows, looked);
    tsl_ckpt_file_shape(p, shape);
    if (!d)
      return tsl_error(TESSEL_E_IO, "%s: no tensor '%s', which a %s model of this config has", w->dir, looked,
                       tsl_hf_class(&w->model, w->fused, NULL));
    if (in_both_spellings(w, p->name))
      return tsl_error(TESSEL_E_IO, "%s: tensor '%s' is there twice, as 'transformer.%s' too, and the two may differ: "
                       "keep one", w->dir, p->name, p->name);
    const int64_t want = strcmp(looked, p->name) != 0 ? rows : shape[0]; /* a fused tensor holds more rows */
    int fits = d->ndim == p->info.ndim && d->shape[0] == want && (d->ndim == 1 || d->shape[1] == shape[1]);
    if (!fits || (d->dtype != TESSEL_F32 && d->dtype != TESSEL_BF16 && d->dtype != TESSEL_F16)) {
      const int64_t config[2] = {want, shape[1]};
      char have[TSL_ST_MAX_DIMS * 24], make[64];
      return tsl_error(TESSEL_E_IO, "%s: tensor '%s' is %s of %d dimension(s) %s; the config makes it %s %s (F32, "
                       "BF16 or F16)", w->dir, d->name, tsl_dtype_name(d->dtype), d->ndim,
                       tsl_st_shape_text(d->shape, d->ndim, have, sizeof have), p->info.ndim == 1 ? "a vector" : "a matrix",
                       tsl_st_shape_text(config, p->info.ndim, make, sizeof make));
    }
  }
  for (int f = 0; w->hf && f < w->n_files; f++)
    for (int i = 0; i < tsl_st_count(w->files[f]); i++) {
      const char *name = tsl_st_desc_at(w->files[f], i)->name;
      const char *bare = strncmp(name, "transformer.", 12) == 0 ? name + 12 : name;
      int64_t row0, rows;
      /* in fused files a q_proj of its own would never be read */
      int place = tsl_params_find(&w->params, bare) >= 0 && !fused_rows(w, bare, fused, sizeof fused, &row0, &rows);
      if (!place && !known_extra(w, name) && !is_fused_source(w, name))
        return tsl_error(TESSEL_E_UNSUPPORTED, "%s: tensor '%s' has no place in tessel's %s model (is it another "
                         "architecture, or does it have biases tessel's does not?)", w->dir, name,
                         w->model.arch == TSL_ARCH_LLAMA ? "Llama" : "GPT-2");
    }
  return check_tied_head(w);
}

/* The files hold about as many tensors as the config's model has: a
** config.json claiming a million layers beside a small model is refused
** before its parameter list is built. A shortfall of less than a block is
** left to check_tensors, which names the missing tensor. */
static tsl_status enough_tensors(const tsl_weights *w) {
  int64_t want, per_block, have = 0;
  tsl_status st = tsl_ckpt_tensor_count(&w->model, &want, &per_block);
  if (st < 0) return st;
  if (w->fused) want -= 3 * (int64_t)w->model.layers, per_block -= 3; /* q, k, v in one; gate, up in one */
  for (int f = 0; f < w->n_files; f++) have += tsl_st_count(w->files[f]);
  if (have + per_block >= want) return TESSEL_OK;
  return tsl_error(TESSEL_E_IO, "%s: config.json describes a model of %lld tensors (%d layers), but its weights hold "
                   "only %lld: the config and the weights are of different models", w->dir, (long long)want,
                   w->model.layers, (long long)have);
}

/* Whether path is a checkpoint.dir that holds checkpoints, or its
** `latest` file: either stands for the checkpoint a resume would pick
** there (tsl_ckpt_resolve), for model.init_from as for sample and export. */
static int names_checkpoints(const char *path) {
  char *picked = tsl_ckpt_resolve(path);
  int yes = picked && strcmp(picked, path) != 0;
  free(picked);
  return yes;
}

tsl_weights_kind tsl_weights_kind_of(const char *dir) {
  char *trainer = tsl_asprintf("%s/trainer.json", dir), *config = tsl_asprintf("%s/config.json", dir);
  const int has_trainer = trainer && tsl_path_exists(trainer), has_config = config && tsl_path_exists(config);
  free(trainer);
  free(config);
  if (has_trainer || (!has_config && names_checkpoints(dir))) return TSL_WEIGHTS_CKPT;
  return has_config ? TSL_WEIGHTS_HF : TSL_WEIGHTS_NONE;
}

tsl_status tsl_weights_open(const char *dir, int say, tsl_weights **out) {
  tsl_status st;
  tsl_weights *w = calloc(1, sizeof *w);
  const tsl_weights_kind kind = tsl_weights_kind_of(dir);
  *out = NULL;
  if (!w || !(w->dir = tsl_strdup(dir))) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
    goto fail;
  }
  if (kind == TSL_WEIGHTS_CKPT) {
    TSL_TRY(st, tsl_ckpt_open_weights(dir, &w->ckpt));
    w->model = w->ckpt.arch;
    w->files = &w->ckpt.model;
    w->n_files = 1;
  } else if (kind == TSL_WEIGHTS_HF) {
    w->hf = 1;
    TSL_TRY(st, tsl_hf_config(dir, say, &w->model, &w->fused));
    TSL_TRY(st, tsl_hf_open_files(dir, &w->files, &w->n_files));
    TSL_TRY(st, enough_tensors(w));
  } else {
    st = tsl_error(TESSEL_E_IO, "%s is neither a tessel checkpoint (trainer.json) nor a Hugging Face model directory "
                   "(config.json)%s", dir, tsl_path_exists(dir) ? "" : ": it does not exist");
    goto fail;
  }
  TSL_TRY(st, tsl_ckpt_params_of(&w->model, &w->params));
  TSL_TRY(st, check_tensors(w));
  *out = w;
  w = NULL;
fail:
  tsl_weights_close(w);
  return st;
}

void tsl_weights_close(tsl_weights *w) {
  if (!w) return;
  if (w->hf) {
    for (int f = 0; f < w->n_files; f++) tsl_st_close(w->files[f]);
    free(w->files);
  }
  tsl_ckpt_close(&w->ckpt);
  tsl_params_free(&w->params);
  free(w->dir);
  free(w);
}

/* n elements of a stored tensor as fp32 (its data may be unaligned). */
static void to_f32(tessel_dtype dtype, const unsigned char *data, uint64_t n, float *out) {
  for (uint64_t i = 0; i < n; i++) {
    uint16_t h;
    if (dtype == TESSEL_F32) {
      memcpy(&out[i], data + 4 * i, 4);
      continue;
    }
    memcpy(&h, data + 2 * i, 2);
    out[i] = dtype == TESSEL_BF16 ? tsl_bf16_to_f32(h) : tsl_f16_to_f32(h);
  }
}

/* Weights holding NaN or infinity load as they are (transformers loads
** them too), but every loss computed from them is non-finite: name the
** tensor and the first such element, so that the run's NaN has a cause. */
static void warn_non_finite(const tsl_weights *w, const char *name, const float *x, const int64_t shape[2]) {
  uint64_t n = (uint64_t)shape[0] * (uint64_t)shape[1], bad = 0, first = 0;
  for (uint64_t i = 0; i < n; i++)
    if (!isfinite(x[i]) && bad++ == 0) first = i;
  if (bad)
    tsl_warn("%s: tensor '%s' holds %llu non-finite value(s), the first at [%llu, %llu]: a run that starts from "
             "these weights gets a non-finite loss", w->dir, name, (unsigned long long)bad,
             (unsigned long long)(first / (uint64_t)shape[1]), (unsigned long long)(first % (uint64_t)shape[1]));
}

tsl_status tsl_weights_file_tensor(const tsl_weights *w, const tsl_param *p, float *file) {
  tsl_st_file *f;
  int i;
  int64_t shape[2], row0, rows;
  uint64_t bytes;
  char looked[TSL_LOOKED];
  const tsl_st_desc *d = find_rows(w, p->name, &f, &i, &row0, &rows, looked);
  int j = tsl_params_find(&w->params, p->name);
  tsl_ckpt_file_shape(p, shape);
  if (!d || j < 0)
    return tsl_error(TESSEL_E_IO, "%s: no tensor '%s'", w->dir, p->name);
  /* the table of positions may be cut to a shorter seq_len; any other
  ** tensor must be the one the open checked */
  int64_t mine[2];
  tsl_ckpt_file_shape(&w->params.p[j], mine);
  int rows_ok = p->info.role == TESSEL_ROLE_POSITIONS ? shape[0] <= mine[0] : shape[0] == mine[0];
  if (!rows_ok || shape[1] != mine[1] || p->info.ndim != w->params.p[j].info.ndim)
    return tsl_error(TESSEL_E_INTERNAL, "%s: '%s' is asked for as [%lld, %lld] but holds [%lld, %lld]", w->dir, p->name,
                     (long long)shape[0], (long long)shape[1], (long long)mine[0], (long long)mine[1]);
  const unsigned char *data = tsl_st_data(f, i, &bytes);
  const uint64_t element = d->dtype == TESSEL_F32 ? 4 : 2; /* F32, or BF16 and F16 (check_tensors) */
  to_f32(d->dtype, data + (uint64_t)row0 * (uint64_t)shape[1] * element, (uint64_t)shape[0] * (uint64_t)shape[1], file);
  warn_non_finite(w, d->name, file, shape);
  return TESSEL_OK;
}

/* ---- tessel import ---- */

/* config.yaml of an imported checkpoint: the model section a run that
** starts from it must match. */
static tsl_status write_model_yaml(const char *path, const tsl_model_settings *m) {
  char text[1024 + TSL_ROPE_TEXT_MAX];
  int n = snprintf(text, sizeof text,
                   "# A Hugging Face model written as a tessel checkpoint by `tessel import`. A run starts from it\n"
                   "# with model.init_from: <this directory> and this model section.\n"
                   "model:\n  arch: %s\n  layers: %d\n  heads: %d\n%s%d\n  channels: %d\n  ffn: %d\n  seq_len: %d\n"
                   "  vocab_size: %d\n",
                   m->arch == TSL_ARCH_LLAMA ? "llama" : "gpt2", m->layers, m->heads,
                   m->arch == TSL_ARCH_LLAMA ? "  kv_heads: " : "  # kv_heads: ", m->kv_heads, m->channels, m->ffn,
                   m->seq_len, m->vocab_size);
  char theta[32], eps[32], scaling[TSL_ROPE_TEXT_MAX];
  if (m->arch == TSL_ARCH_LLAMA)
    n += snprintf(text + n, sizeof text - (size_t)n, "  rope_theta: %s\n  norm_eps: %s\n  tie_embeddings: %s\n",
                  tsl_format_exact(m->rope_theta, theta, sizeof theta), tsl_format_exact(m->norm_eps, eps, sizeof eps),
                  m->tie_embeddings ? "true" : "false");
  else if (m->norm_eps != 1e-5)
    n += snprintf(text + n, sizeof text - (size_t)n, "  norm_eps: %s\n", tsl_format_exact(m->norm_eps, eps, sizeof eps));
  if (m->rope_scaling.factor > 0)
    n += snprintf(text + n, sizeof text - (size_t)n, "  rope_scaling: %s\n",
                  tsl_rope_scaling_text(m, scaling, sizeof scaling));
  if (m->qkv_bias) n += snprintf(text + n, sizeof text - (size_t)n, "  qkv_bias: true\n");
  if (m->qk_norm) n += snprintf(text + n, sizeof text - (size_t)n, "  qk_norm: true\n");
  if (tsl_head_dim_own(m)) n += snprintf(text + n, sizeof text - (size_t)n, "  head_dim: %d\n", tsl_head_dim(m));
  if (m->rotary_dim) n += snprintf(text + n, sizeof text - (size_t)n, "  rotary_dim: %d\n", m->rotary_dim);
  if (m->sliding_window)
    n += snprintf(text + n, sizeof text - (size_t)n, "  sliding_window: %d\n", m->sliding_window);
  return tsl_atomic_write_file(path, text, (size_t)n);
}

/* the metadata of a checkpoint's safetensors files */
static const char *const meta_keys[] = {"format"}, *const meta_values[] = {"tessel"};

/* Stream the imported checkpoint's weights into model.safetensors. */
static tsl_status write_weights(const tsl_weights *w, const char *path) {
  const tsl_params *ps = &w->params;
  int n = ps->n;
  tsl_status st = TESSEL_OK;
  tsl_st_desc *descs = calloc((size_t)n + 1, sizeof *descs);
  float *buf = NULL;
  tsl_st_writer *wr = NULL;
  uint64_t most = 1;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)ps->p[i].info.shape[0] * (uint64_t)ps->p[i].info.shape[1]);
  if (!descs || !(buf = calloc(most, sizeof *buf))) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
    goto done;
  }
  for (int k = 0; k < n; k++) {
    const tsl_param *p = &ps->p[k];
    descs[k] = (tsl_st_desc){.name = p->name, .dtype = TESSEL_F32, .ndim = p->info.ndim};
    tsl_ckpt_file_shape(p, descs[k].shape);
  }
  if ((st = tsl_st_writer_begin(path, descs, n, meta_keys, meta_values, 1, &wr)) < 0) goto done;
  for (int k = 0; k < n && st >= 0; k++) {
    st = tsl_weights_file_tensor(w, &ps->p[k], buf);
    if (st >= 0) st = tsl_st_writer_put(wr, k, buf, (uint64_t)descs[k].shape[0] * (uint64_t)descs[k].shape[1] * 4);
  }
  if (st >= 0)
    st = tsl_st_writer_finish(wr);
  else
    tsl_st_writer_abort(wr);
done:
  free(descs);
  free(buf);
  return st;
}

/* The directory's tokenizer.json, when there is one that tessel reads and
** that fits the model's vocabulary (else NULL, and a warning says why: the
** weights are imported all the same). */
static tsl_tokenizer *hf_tokenizer(const tsl_weights *w) {
  char *path = tsl_asprintf("%s/tokenizer.json", w->dir);
  tsl_tokenizer *t = NULL;
  if (path && tsl_path_exists(path)) {
    if (tsl_tokenizer_load(path, &t) < 0)
      tsl_warn("the checkpoint gets no tokenizer: %s", tsl_error_message());
    else if (tsl_tokenizer_vocab_size(t) > w->model.vocab_size) {
      tsl_warn("the checkpoint gets no tokenizer: %s has %d tokens, more than the model's vocabulary of %d", path,
               tsl_tokenizer_vocab_size(t), w->model.vocab_size);
      tsl_tokenizer_free(t);
      t = NULL;
    }
  }
  free(path);
  return t;
}

/* Every file of the checkpoint into the (new, empty) directory tmp: no
** optimizer moments (at step 0 they are zeros, and a run that resumes
** from it starts them so: the checkpoint is a third of the size). */
static tsl_status write_checkpoint(const tsl_weights *w, const tsl_tokenizer *t, const char *tmp) {
  tsl_status st;
  char path[4096];
  tsl_st_writer *empty = NULL;
  snprintf(path, sizeof path, "%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_MODEL]);
  TSL_TRY(st, write_weights(w, path));
  /* no strategy wrote it: no private state */
  snprintf(path, sizeof path, "%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_PRIVATE]);
  TSL_TRY(st, tsl_st_writer_begin(path, NULL, 0, meta_keys, meta_values, 1, &empty));
  TSL_TRY(st, tsl_st_writer_finish(empty));
  snprintf(path, sizeof path, "%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_CONFIG]);
  TSL_TRY(st, write_model_yaml(path, &w->model));
  tsl_ckpt_meta meta = {.step = 0, .world_size = 1, .model = w->model, .model_hash = tsl_ckpt_model_hash(&w->model)};
  for (int f = 0; f < TSL_CKPT_N_FILES; f++)
    meta.files[f].present = f == TSL_CKPT_TOKENIZER ? t != NULL : f != TSL_CKPT_OPTIMIZER;
  if (t) {
    size_t len;
    const char *json = tsl_tokenizer_json(t, &len);
    snprintf(path, sizeof path, "%s/%s", tmp, tsl_ckpt_files[TSL_CKPT_TOKENIZER]);
    TSL_TRY(st, tsl_atomic_write_file(path, json, len));
    meta.tokenizer_hash = tsl_tokenizer_hash(t);
  }
  /* kept whether or not the tokenizer is: `tessel export` writes them back */
  tsl_weights_token_ids(w, 1, &meta.ids);
  snprintf(meta.plugin, sizeof meta.plugin, "none");
  snprintf(meta.tessel_version, sizeof meta.tessel_version, "%s", TESSEL_VERSION_STRING);
  TSL_TRY(st, tsl_ckpt_meta_write(tmp, &meta));
  TSL_TRY(st, tsl_fsync_path(tmp));
fail:
  return st;
}

tsl_status tsl_import_hf(const char *hf_dir, const char *out_given) {
  tsl_status st;
  tsl_weights *w = NULL;
  tsl_tokenizer *t = NULL;
  /* "out/" is out: its temporary "out/.tmp-PID" made out/ itself, and the rename onto it failed */
  char *out_dir = tsl_asprintf("%.*s", (int)tsl_path_len(out_given), out_given);
  char *tmp = out_dir ? tsl_asprintf("%s.tmp-%d", out_dir, (int)getpid()) : NULL;
  char *parent = out_dir ? tsl_dirname(out_dir) : NULL;
  char **made = NULL; /* the parents this import makes for its output */
  if (!tmp || !parent) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory");
    goto done;
  }
  if (tsl_path_exists(out_dir)) {
    st = tsl_error(TESSEL_E_IO, "%s already exists; tessel import writes a new checkpoint directory and never "
                   "replaces one", out_dir);
    goto done;
  }
  if ((st = tsl_weights_open(hf_dir, 1, &w)) < 0) goto done;
  if (!tsl_weights_is_hf(w)) {
    st = tsl_error(TESSEL_E_IO, "%s is already a tessel checkpoint (it has trainer.json)", hf_dir);
    goto done;
  }
  t = hf_tokenizer(w);
  made = tsl_dirs_to_make(parent);
  st = tsl_remove_tree(tmp);
  if (st >= 0) st = tsl_mkdir_p(tmp);
  if (st >= 0) st = write_checkpoint(w, t, tmp);
  if (st >= 0 && rename(tmp, out_dir) != 0)
    st = tsl_error(TESSEL_E_IO, "%s: cannot rename into place: %s", out_dir, strerror(errno));
  if (st >= 0) st = tsl_fsync_path(parent);
  if (st < 0) {
    tsl_remove_tree(tmp);
    tsl_dirs_unmake(made);
  }
done:
  tsl_tokenizer_free(t);
  tsl_weights_close(w);
  free(out_dir);
  free(tmp);
  free(parent);
  tsl_dirs_free(made);
  return st;
}
