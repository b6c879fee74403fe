/* tools/export/export.c */
#include "export/export.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/import.h"
#include "common/atomic_file.h"
#include "common/log.h"
#include "common/util.h"
#include "tokenizer/tokenizer.h"

/* A number JSON writes with a decimal point even when whole ("4.0"):
** transformers checks that a rope_scaling's factors are floats and warns
** about an integer 4. */
static void add_float(cJSON *o, const char *key, double v) {
  char text[48];
  tsl_format_exact(v, text, sizeof text - 2);
  if (!strpbrk(text, ".e")) strcat(text, ".0");
  cJSON_AddRawToObject(o, key, text);
}

/* A YaRN scaling whose config.json transformers 4 and 5 would read as two
** models: its original context given (not the model's positions) and the
** positions not factor times it. */
static int yarn_export_fault(const tsl_model_settings *m) {
  const tsl_rope_scaling *r = &m->rope_scaling;
  return r->factor > 0 && r->kind == TSL_ROPE_YARN && r->original_positions != m->positions &&
         !tsl_rope_yarn_read_alike(m->positions, r->original_positions, r->factor);
}

/* config.json's rope_scaling: null, or m's scaling under transformers'
** names for its type and values. LongRoPE's original context goes to the
** top level too, where transformers 4 reads it (5 reads either, the top
** level first), and its attention factor is given, so that no version
** derives it from a factor of its own. */
static void add_rope_scaling(cJSON *root, const tsl_model_settings *m) {
  const tsl_rope_scaling *r = &m->rope_scaling;
  if (!(r->factor > 0)) {
    cJSON_AddNullToObject(root, "rope_scaling");
    return;
  }
  double v[TSL_ROPE_MAX];
  cJSON *s = cJSON_AddObjectToObject(root, "rope_scaling");
  cJSON_AddStringToObject(s, "rope_type", tsl_rope_scaling_values(m, v)->name);
  add_float(s, "factor", r->factor);
  if (r->kind == TSL_ROPE_LLAMA3) {
    add_float(s, "low_freq_factor", r->low_freq_factor);
    add_float(s, "high_freq_factor", r->high_freq_factor);
    cJSON_AddNumberToObject(s, "original_max_position_embeddings", r->original_positions);
  } else if (r->kind == TSL_ROPE_YARN) {
    /* absent, the original context is max_position_embeddings for every
    ** transformers; given, transformers 4 reads the factor off it
    ** (yarn_export_fault) */
    if (r->original_positions != m->positions)
      cJSON_AddNumberToObject(s, "original_max_position_embeddings", r->original_positions);
    add_float(s, "beta_fast", r->beta_fast);
    add_float(s, "beta_slow", r->beta_slow);
    add_float(s, "attention_factor", r->attention_factor);
  } else if (r->kind == TSL_ROPE_LONGROPE) {
    cJSON_AddNumberToObject(s, "original_max_position_embeddings", r->original_positions);
    cJSON_AddNumberToObject(root, "original_max_position_embeddings", r->original_positions);
    add_float(s, "attention_factor", r->attention_factor);
    for (int l = 0; l < 2; l++) {
      int pairs;
      const double *list = tsl_rope_scaling_list(m, l, &pairs);
      cJSON_AddItemToObject(s, tsl_rope_list_keys[l], cJSON_CreateDoubleArray(list, pairs));
    }
  }
}

static int longrope(const tsl_model_settings *m) {
  return m->rope_scaling.factor > 0 && m->rope_scaling.kind == TSL_ROPE_LONGROPE;
}

/* Whether m can be a Phi3ForCausalLM: NULL when it can, else why not
** (written into why): Phi3Config has no biases, q/k norms or heads of
** their own size, scales by LongRoPE alone and takes only its two lists,
** deriving the attention factor from the contexts, and its factor must
** give back m's turned elements as int(head size · factor). */
static const char *phi3_fault(const tsl_model_settings *m, char *why, size_t cap) {
  const int hd = tsl_head_dim(m), rotary = tsl_rotary_dim(m);
  const double partial = (double)rotary / hd;
  const tsl_rope_scaling *r = &m->rope_scaling;
  const double ratio = (double)m->positions / r->original_positions;
  if (m->qkv_bias || m->qk_norm || tsl_head_dim_own(m))
    snprintf(why, cap, "Phi3ForCausalLM has no q/k/v biases, q/k norms or heads of their own size");
  else if (r->factor > 0 && !longrope(m))
    snprintf(why, cap, "Phi3ForCausalLM scales its rotary frequencies by LongRoPE alone");
  else if (longrope(m) && r->attention_factor != (ratio <= 1.0 ? 1.0 : sqrt(1.0 + log(ratio) / log(r->original_positions))))
    snprintf(why, cap, "Phi3Config derives LongRoPE's attention factor from max_position_embeddings %d over "
             "original_max_position_embeddings %d and takes no other, not %.17g", m->positions, r->original_positions,
             r->attention_factor);
  else if ((int)(hd * partial) != rotary)
    snprintf(why, cap, "no partial_rotary_factor gives back %d of %d elements", rotary, hd);
  else
    return NULL;
  return why;
}

/* sliding_window: the model's, or null for none. */
static void add_window(cJSON *root, const tsl_model_settings *m) {
  if (m->sliding_window) cJSON_AddNumberToObject(root, "sliding_window", m->sliding_window);
  else cJSON_AddNullToObject(root, "sliding_window");
}

/* config.json for Phi3ForCausalLM: Phi3Config's keys, LongRoPE's lists alone in its rope_scaling, and
** no padding id (Phi3Config's default, 32000, is a row of Phi-3's
** vocabulary, not of every model's). */
static void phi3_config(cJSON *root, const tsl_model_settings *m) {
  const tsl_rope_scaling *r = &m->rope_scaling;
  cJSON_AddNullToObject(root, "pad_token_id");
  cJSON_AddNumberToObject(root, "original_max_position_embeddings",
                          r->factor > 0 ? r->original_positions : m->positions);
  add_float(root, "partial_rotary_factor", (double)tsl_rotary_dim(m) / tsl_head_dim(m));
  add_window(root, m);
  if (!(r->factor > 0)) {
    cJSON_AddNullToObject(root, "rope_scaling");
    return;
  }
  cJSON *s = cJSON_AddObjectToObject(root, "rope_scaling");
  cJSON_AddStringToObject(s, "type", "longrope");
  for (int l = 0; l < 2; l++) {
    int pairs;
    const double *list = tsl_rope_scaling_list(m, l, &pairs);
    cJSON_AddItemToObject(s, tsl_rope_list_keys[l], cJSON_CreateDoubleArray(list, pairs));
  }
}

/* config.json for transformers: GPT2LMHeadModel, LlamaForCausalLM,
** Qwen2ForCausalLM for a Llama with biases on q, k and v (qkv_bias), which
** Qwen2 has and LlamaConfig's attention_bias cannot say (it adds one to
** o_proj too), Qwen3ForCausalLM for one with norms over each head of q
** and k (qk_norm), or Phi3ForCausalLM (phi3: see tsl_export_hf). Qwen2's and Qwen3's have
** no window: sliding_window null too, since transformers up to 4.52
** windows every layer at its default 4096 whatever use_sliding_window
** says. */
static cJSON *hf_config(const tsl_model_settings *m, int phi3) {
  cJSON *root = cJSON_CreateObject(), *arch = cJSON_AddArrayToObject(root, "architectures");
  const char *type;
  cJSON_AddItemToArray(arch, cJSON_CreateString(tsl_hf_class(m, phi3, &type)));
  cJSON_AddStringToObject(root, "model_type", type);
  if (m->arch == TSL_ARCH_LLAMA) {
    cJSON_AddNumberToObject(root, "num_hidden_layers", m->layers);
    cJSON_AddNumberToObject(root, "num_attention_heads", m->heads);
    cJSON_AddNumberToObject(root, "num_key_value_heads", m->kv_heads);
    cJSON_AddNumberToObject(root, "hidden_size", m->channels);
    cJSON_AddNumberToObject(root, "head_dim", tsl_head_dim(m));
    cJSON_AddNumberToObject(root, "intermediate_size", m->ffn);
    cJSON_AddNumberToObject(root, "max_position_embeddings", m->positions);
    cJSON_AddNumberToObject(root, "rope_theta", m->rope_theta);
    if (phi3) phi3_config(root, m);
    else add_rope_scaling(root, m);
    cJSON_AddNumberToObject(root, "rms_norm_eps", m->norm_eps);
    cJSON_AddStringToObject(root, "hidden_act", "silu");
    if (m->qkv_bias || m->qk_norm) {
      cJSON_AddBoolToObject(root, "use_sliding_window", 0);
      cJSON_AddNullToObject(root, "sliding_window");
    } else if (!phi3 && m->sliding_window) {
      add_window(root, m);
    }
    if (!m->qkv_bias) cJSON_AddBoolToObject(root, "attention_bias", 0);
    if (!m->qkv_bias && !m->qk_norm) cJSON_AddBoolToObject(root, "mlp_bias", 0);
    cJSON_AddNumberToObject(root, "attention_dropout", 0);
  } else {
    cJSON_AddNumberToObject(root, "n_layer", m->layers);
    cJSON_AddNumberToObject(root, "n_head", m->heads);
    cJSON_AddNumberToObject(root, "n_embd", m->channels);
    cJSON_AddNumberToObject(root, "n_inner", m->ffn);
    cJSON_AddNumberToObject(root, "n_positions", m->positions);
    cJSON_AddNumberToObject(root, "n_ctx", m->positions);
    cJSON_AddStringToObject(root, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(root, "layer_norm_epsilon", m->norm_eps);
    cJSON_AddNumberToObject(root, "resid_pdrop", 0);
    cJSON_AddNumberToObject(root, "embd_pdrop", 0);
    cJSON_AddNumberToObject(root, "attn_pdrop", 0);
  }
  cJSON_AddNumberToObject(root, "vocab_size", m->vocab_size);
  cJSON_AddBoolToObject(root, "tie_word_embeddings", m->tie_embeddings);
  cJSON_AddStringToObject(root, "torch_dtype", "float32");
  return root;
}

/* One of config.json's token ids: its n ids (a list when more than one),
** or null when the model has none (byte-level data has none): left out,
** transformers would take its defaults (GPT-2's 50256, Llama's 1 and 2),
** tokens this model does not have or that mean bytes. */
static void add_token_ids(cJSON *root, const char *key, const int *ids, int n) {
  if (n == 1) cJSON_AddNumberToObject(root, key, ids[0]);
  else if (n > 1) cJSON_AddItemToObject(root, key, cJSON_CreateIntArray(ids, n));
  else cJSON_AddNullToObject(root, key);
}

/* config.json, with the model's beginning- and end-of-text ids: those of
** the Hugging Face model it was imported from (trainer.json keeps them,
** whether or not its tokenizer could be kept), else its tokenizer's (t,
** NULL: none). */
static tsl_status write_hf_config(const tsl_ckpt *c, int phi3, const tsl_tokenizer *t, const char *path) {
  tsl_status st;
  int bos = t ? tsl_tokenizer_bos(t) : -1, eot = t ? tsl_tokenizer_eot(t) : -1;
  cJSON *root = hf_config(&c->arch, phi3);
  add_token_ids(root, "bos_token_id", c->ids.has_bos ? &c->ids.bos_id : &bos, c->ids.has_bos || bos >= 0);
  add_token_ids(root, "eos_token_id", c->ids.n_eos ? c->ids.eos_ids : &eot, c->ids.n_eos ? c->ids.n_eos : eot >= 0);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
  st = tsl_atomic_write_file(path, text, strlen(text));
  free(text);
  return st;
}

/* tokenizer_config.json's name for token `id` (none when -1). */
static void add_token_name(cJSON *root, const char *key, const tsl_tokenizer *t, int id) {
  size_t n;
  const char *s = id >= 0 ? tsl_tokenizer_token(t, id, &n) : NULL;
  char *name = s ? tsl_asprintf("%.*s", (int)n, s) : NULL;
  if (name) cJSON_AddStringToObject(root, key, name);
  free(name);
}

/* tokenizer.json as stored in the checkpoint, and the tokenizer_config.json
** that makes transformers.AutoTokenizer load it as a fast tokenizer. */
static tsl_status write_tokenizer_files(const tsl_ckpt *c, const tsl_tokenizer *t, const char *dir) {
  tsl_status st;
  size_t len;
  const char *json = tsl_tokenizer_json(t, &len);
  char *path = tsl_asprintf("%s/tokenizer.json", dir), *text = NULL;
  if (!path) return TESSEL_E_NOMEM;
  st = tsl_atomic_write_file(path, json, len);
  free(path);
  if (st < 0) return st;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "tokenizer_class", "PreTrainedTokenizerFast");
  cJSON_AddNumberToObject(root, "model_max_length", c->arch.positions);
  cJSON_AddBoolToObject(root, "clean_up_tokenization_spaces", 0);
  add_token_name(root, "bos_token", t, tsl_tokenizer_bos(t));
  add_token_name(root, "eos_token", t, tsl_tokenizer_eot(t));
  text = cJSON_Print(root);
  cJSON_Delete(root);
  path = tsl_asprintf("%s/tokenizer_config.json", dir);
  st = text && path ? tsl_atomic_write_file(path, text, strlen(text)) : tsl_error(TESSEL_E_NOMEM, "out of host memory");
  free(text);
  free(path);
  return st;
}

/* The file must be model.safetensors: the one name transformers'
** from_pretrained(DIR) and `tessel import DIR` look for, so another gives a
** directory nothing loads. The refusal gives the -o to use (in the
** directory given, when OUT names one). */
static tsl_status check_name(const char *out_path) {
  struct stat sb;
  const char *slash = strrchr(out_path, '/');
  if (!strcmp(slash ? slash + 1 : out_path, TSL_EXPORT_FILE)) return TESSEL_OK;
  char *dir = stat(out_path, &sb) == 0 && S_ISDIR(sb.st_mode) ? tsl_strdup(out_path) : tsl_dirname(out_path);
  if (dir) dir[tsl_path_len(dir)] = '\0';
  tsl_status st = tsl_error(TESSEL_E_CONFIG,
                            "%s: the export must be named %s, the file transformers' from_pretrained(DIR) and "
                            "`tessel import DIR` load: write -o %s/%s",
                            out_path, TSL_EXPORT_FILE, dir ? dir : ".", TSL_EXPORT_FILE);
  free(dir);
  return st;
}

/* The real path of `dir`, or of its nearest existing parent when it does
** not exist yet (what tsl_mkdir_p will create the rest under); NULL when
** none can be resolved. */
static char *existing_realpath(const char *dir) {
  char *near = tsl_existing_ancestor(dir), *real = near ? realpath(near, NULL) : NULL;
  free(near);
  return real;
}

/* The export writes its file and config.json into one directory; when that
** is, or is inside, a checkpoint it would replace model.safetensors (or add
** to a directory whose every file trainer.json accounts for). Refused: the
** checkpoint it reads (`ckpt`, the step directory the argument resolved to:
** a checkpoint.dir or its `latest` stands for one), compared as real paths
** so that neither another spelling nor a symlink gets past, and any other
** checkpoint the directory (or the existing parent it would be made in) is. */
static tsl_status check_destination(const char *ckpt, const char *out_path) {
  char *dir = tsl_dirname(out_path);
  char *a = dir ? existing_realpath(dir) : NULL, *b = realpath(ckpt, NULL);
  char *json = a ? tsl_asprintf("%s/trainer.json", a) : NULL;
  const char *victim = NULL;
  if (a && b && tsl_path_within(a, b)) victim = ckpt;
  else if (json && tsl_path_exists(json)) victim = a;
  tsl_status st = TESSEL_OK;
  if (victim)
    st = tsl_error(TESSEL_E_CONFIG,
                   "%s is inside the checkpoint %s: exporting there would overwrite the checkpoint's own files. "
                   "Write the export to another directory (it holds model.safetensors and config.json).",
                   out_path, victim);
  free(dir);
  free(a);
  free(b);
  free(json);
  return st;
}

/* Remove DIR/NAME, a file the export does not write but transformers would
** read beside it; `why` ends the line that says so. */
static tsl_status remove_stale(const char *dir, const char *name, const char *why) {
  char *path = tsl_asprintf("%s/%s", dir, name);
  tsl_status st = TESSEL_OK;
  if (!path) return TESSEL_E_NOMEM;
  if (tsl_path_exists(path)) {
    if (unlink(path) == 0) tsl_info("removed %s: %s", path, why);
    else st = tsl_error(TESSEL_E_IO, "%s: cannot remove what an earlier export or model left there: %s", path,
                        strerror(errno));
  }
  free(path);
  return st;
}

/* Files of an earlier model in the directory: a byte-level model has no
** tokenizer files (an earlier one's would be loaded with it, AutoTokenizer
** and tessel import alike, and describe another vocabulary), and no model
** of tessel's has a generation_config.json (an earlier one's eos_token_id
** and sampling settings would steer generate()). */
static tsl_status remove_stale_files(const char *dir, int has_tokenizer) {
  tsl_status st = remove_stale(dir, "generation_config.json", "it belongs to an earlier model, and would steer generate()");
  if (st >= 0 && !has_tokenizer) st = remove_stale(dir, "tokenizer.json", "this model is byte-level and has no tokenizer");
  if (st >= 0 && !has_tokenizer)
    st = remove_stale(dir, "tokenizer_config.json", "this model is byte-level and has no tokenizer");
  return st;
}

/* The exported file's tensors: descs[k], named names[k], holds the rows of
** the checkpoint tensors src[k][0 .. parts[k]) stacked in order (Phi-3's
** fused q|k|v and gate|up); every other tensor is one of its own, under
** its Hugging Face name. */
typedef struct export_plan {
  tsl_st_desc *descs;
  char (*names)[128];
  int (*src)[3];
  int *parts;
  int n;
} export_plan;

static void plan_free(export_plan *p) {
  free(p->descs), free(p->names), free(p->src), free(p->parts);
  memset(p, 0, sizeof *p);
}

/* The parts of the fused tensor `fused` among the checkpoint's tensors, in
** row order, into src; 1 when every one of its `parts` is there. */
static int find_parts(const tsl_st_file *f, const char *fused, int parts, int src[3]) {
  char other[128];
  int part, n;
  for (int p = 0; p < parts; p++) src[p] = -1;
  for (int j = 0; j < tsl_st_count(f); j++)
    if (tsl_phi3_fused_part(tsl_st_desc_at(f, j)->name, other, sizeof other, &part, &n) && !strcmp(other, fused))
      src[part] = j;
  for (int p = 0; p < parts; p++)
    if (src[p] < 0) return 0;
  return 1;
}

static tsl_status plan_tensors(const tsl_ckpt *c, int phi3, export_plan *p) {
  const int n = tsl_st_count(c->model);
  p->descs = calloc((size_t)n, sizeof *p->descs);
  p->names = calloc((size_t)n, sizeof *p->names);
  p->src = calloc((size_t)n, sizeof *p->src);
  p->parts = calloc((size_t)n, sizeof *p->parts);
  if (!p->descs || !p->names || !p->src || !p->parts) return tsl_error(TESSEL_E_NOMEM, "out of host memory exporting");
  for (int i = 0; i < n; i++) {
    const tsl_st_desc *d = tsl_st_desc_at(c->model, i);
    tsl_st_desc *out = &p->descs[p->n];
    int part, parts;
    *out = *d;
    out->name = p->names[p->n];
    p->src[p->n][0] = i;
    p->parts[p->n] = 1;
    if (phi3 && tsl_phi3_fused_part(d->name, p->names[p->n], sizeof p->names[p->n], &part, &parts)) {
      if (part != 0) continue; /* stacked under its first part */
      if (!find_parts(c->model, p->names[p->n], parts, p->src[p->n]))
        return tsl_error(TESSEL_E_INTERNAL, "%s: a part of %s is missing", c->path, p->names[p->n]);
      out->shape[0] = 0;
      for (int k = 0; k < parts; k++) out->shape[0] += tsl_st_desc_at(c->model, p->src[p->n][k])->shape[0];
      p->parts[p->n] = parts;
    } else {
      /* GPT2LMHeadModel nests its tensors under "transformer."; the others'
      ** are already the full Hugging Face ones */
      snprintf(p->names[p->n], sizeof p->names[p->n], "%s%s", c->arch.arch == TSL_ARCH_GPT2 ? "transformer." : "",
               d->name);
    }
    p->n++;
  }
  return TESSEL_OK;
}

tsl_status tsl_export_hf(const char *ckpt_dir, const char *out_path, int *wrote_tokenizer) {
  tsl_status st;
  tsl_ckpt c = {0};
  tsl_st_writer *w = NULL;
  export_plan plan = {0};
  char *dir = NULL, *config = NULL, why[512];
  tsl_tokenizer *t = NULL;
  TSL_TRY(st, check_name(out_path));
  TSL_TRY(st, tsl_ckpt_open_weights(ckpt_dir, &c));
  TSL_TRY(st, check_destination(c.path, out_path));
  if (yarn_export_fault(&c.arch)) {
    st = tsl_error(TESSEL_E_CONFIG, "%s: a YaRN scaling with factor %g over an original context of %d, in a model of "
                   "%d positions, has no config.json that every transformers reads alike (transformers 4 takes "
                   "max_position_embeddings / original_max_position_embeddings as the factor): train it with "
                   "model.positions %d or %.17g", ckpt_dir, c.arch.rope_scaling.factor,
                   c.arch.rope_scaling.original_positions, c.arch.positions, c.arch.rope_scaling.original_positions,
                   c.arch.rope_scaling.original_positions * c.arch.rope_scaling.factor);
    goto fail;
  }
  /* a model that turns part of each head goes out as a Phi3ForCausalLM, the
  ** one class that can say so (partial_rotary_factor), or not at all; one
  ** under LongRoPE goes out so when Phi3Config can say it: its generate()
  ** switches to the long factors as `tessel sample` does, running the
  ** sequence again, where LlamaForCausalLM's keeps the cache's short turns */
  const char *fault = phi3_fault(&c.arch, why, sizeof why);
  const int phi3 = c.arch.rotary_dim || (longrope(&c.arch) && !fault);
  if (c.arch.rotary_dim && fault) {
    st = tsl_error(TESSEL_E_CONFIG, "%s: rotary positions turn %d of each head's %d elements (model.rotary_dim), "
                   "which of transformers' classes only Phi3ForCausalLM can say, and %s", ckpt_dir,
                   c.arch.rotary_dim, tsl_head_dim(&c.arch), why);
    goto fail;
  }
  if (c.arch.sliding_window && (c.arch.qkv_bias || c.arch.qk_norm)) {
    /* Qwen2Config's and Qwen3Config's windows leave the first
    ** max_window_layers layers out, and their eager attention applies none */
    st = tsl_error(TESSEL_E_CONFIG, "%s: a Llama with a sliding window (model.sliding_window %d) and %s has no "
                   "transformers class: Mistral's and Phi-3's have neither, and Qwen2's and Qwen3's do not window "
                   "every layer", ckpt_dir, c.arch.sliding_window,
                   c.arch.qkv_bias ? "q/k/v biases (qkv_bias)" : "q/k norms (qk_norm)");
    goto fail;
  }
  if (c.arch.qkv_bias && c.arch.qk_norm) {
    /* Qwen3's attention_bias would add one to o_proj too */
    st = tsl_error(TESSEL_E_CONFIG, "%s: a Llama with both q/k/v biases (qkv_bias) and q/k norms (qk_norm) has no "
                   "transformers class: Qwen2ForCausalLM has no q/k norms, and Qwen3ForCausalLM's attention_bias "
                   "also puts a bias on o_proj", ckpt_dir);
    goto fail;
  }
  if (!(dir = tsl_dirname(out_path))) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  TSL_TRY(st, tsl_mkdir_p(dir));
  if (c.tokenizer) TSL_TRY(st, tsl_tokenizer_load(c.tokenizer, &t));
  if (longrope(&c.arch) && !phi3)
    tsl_warn("%s: LongRoPE is exported in a %s's rope_scaling, since Phi3ForCausalLM cannot say this model (%s): "
             "its generate() keeps the keys it cached by the short factors past original_max_position_embeddings "
             "%d, where `tessel sample` runs the sequence again by the long ones", ckpt_dir,
             tsl_hf_class(&c.arch, 0, NULL), fault, c.arch.rope_scaling.original_positions);
  TSL_TRY(st, plan_tensors(&c, phi3, &plan));
  static const char *const keys[] = {"format"};
  static const char *const values[] = {"pt"};
  TSL_TRY(st, tsl_st_writer_begin(out_path, plan.descs, plan.n, keys, values, 1, &w));
  for (int k = 0; k < plan.n; k++)
    for (int part = 0; part < plan.parts[k]; part++) {
      uint64_t bytes;
      const void *data = tsl_st_data(c.model, plan.src[k][part], &bytes);
      if ((st = tsl_st_writer_put(w, k, data, bytes)) < 0) {
        tsl_st_writer_abort(w);
        goto fail;
      }
    }
  st = tsl_st_writer_finish(w);
  if (st < 0) goto fail;
  config = tsl_asprintf("%s/config.json", dir);
  st = config ? write_hf_config(&c, phi3, t, config) : TESSEL_E_NOMEM;
  if (st >= 0 && t) st = write_tokenizer_files(&c, t, dir);
  if (st >= 0) st = remove_stale_files(dir, t != NULL);
  if (wrote_tokenizer) *wrote_tokenizer = t != NULL;
fail:
  tsl_tokenizer_free(t);
  plan_free(&plan);
  free(dir);
  free(config);
  tsl_ckpt_close(&c);
  return st;
}
