/* core/runtime/settings.c — the core's schema, read through the typed getters. */
#include "settings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define I64_MAX INT64_MAX

/* 8/3 · C rounded up to a multiple of 64: SwiGLU's three matrices then hold
** about as many weights as a 4·C GELU MLP's two. */
static int64_t swiglu_ffn(int64_t channels) { return (8 * channels / 3 + 63) / 64 * 64; }

/* Keys that only the Llama family has; GPT-2 refuses them by name. */
static tsl_status refuse_for_gpt2(tsl_cfg *m, const char *key, const char *why) {
  if (!tsl_cfg_has(m, key)) return TESSEL_OK;
  return tsl_cfg_error(m, key, "GPT-2 has no %s (arch: llama has)", why);
}

static tsl_status read_model(tsl_cfg *root, tsl_settings *s) {
  tsl_status st;
  tsl_cfg *m;
  int64_t v[5], kv, ffn;
  int arch;
  static const char *const keys[] = {"layers", "heads", "channels", "seq_len"};
  static const char *const archs[] = {"gpt2", "llama", NULL};
  TSL_TRY(st, tsl_cfg_section(root, "model", 1, &m));
  s->model.section = m;
  TSL_TRY(st, tsl_cfg_enum(m, "arch", archs, TSL_ARCH_GPT2, &arch));
  for (int i = 0; i < 4; i++) {
    TSL_TRY(st, tsl_cfg_require(m, keys[i]));
    TSL_TRY(st, tsl_cfg_int(m, keys[i], 0, 1, 1 << 20, &v[i]));
  }
  TSL_TRY(st, tsl_cfg_int(m, "vocab_size", 256, 2, 1 << 24, &v[4]));
  if (v[2] % v[1] != 0)
    return tsl_cfg_error(m, "channels", "%lld channels do not split into %lld heads of equal size",
                         (long long)v[2], (long long)v[1]);
  if (arch == TSL_ARCH_GPT2) {
    TSL_TRY(st, refuse_for_gpt2(m, "kv_heads", "grouped-query attention (kv_heads)"));
    TSL_TRY(st, refuse_for_gpt2(m, "rope_theta", "rotary positions (rope_theta)"));
    TSL_TRY(st, refuse_for_gpt2(m, "tie_embeddings", "untied head (tie_embeddings); its head is always wte"));
    TSL_TRY(st, refuse_for_gpt2(m, "norm_eps", "configurable norm epsilon; its layer norms use 1e-5"));
  }
  TSL_TRY(st, tsl_cfg_int(m, "kv_heads", v[1], 1, 1 << 20, &kv));
  if (v[1] % kv != 0)
    return tsl_cfg_error(m, "kv_heads", "%lld query heads do not share %lld key/value heads evenly (kv_heads must "
                         "divide heads: %lld for multi-head, 1 for multi-query attention)",
                         (long long)v[1], (long long)kv, (long long)v[1]);
  TSL_TRY(st, tsl_cfg_int(m, "ffn", arch == TSL_ARCH_LLAMA ? swiglu_ffn(v[2]) : 4 * v[2], 1, 1 << 24, &ffn));
  TSL_TRY(st, tsl_cfg_float(m, "rope_theta", 10000.0, 1.0, 1e12, &s->model.rope_theta));
  TSL_TRY(st, tsl_cfg_float(m, "norm_eps", 1e-5, 1e-12, 1.0, &s->model.norm_eps));
  TSL_TRY(st, tsl_cfg_bool(m, "tie_embeddings", arch == TSL_ARCH_GPT2, &s->model.tie_embeddings));
  if (arch == TSL_ARCH_LLAMA && (v[2] / v[1]) % 2 != 0)
    return tsl_cfg_error(m, "heads", "heads of %lld channels (%lld / %lld): rotary positions rotate pairs, so the "
                         "head size must be even", (long long)(v[2] / v[1]), (long long)v[2], (long long)v[1]);
  s->model.arch = (tsl_arch_kind)arch;
  s->model.layers = (int)v[0];
  s->model.heads = (int)v[1];
  s->model.kv_heads = (int)kv;
  s->model.channels = (int)v[2];
  s->model.ffn = (int)ffn;
  s->model.seq_len = (int)v[3];
  s->model.vocab_size = (int)v[4];
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_data(tsl_cfg *root, tsl_settings *s) {
  tsl_status st;
  tsl_cfg *d;
  char buf[1024];
  TSL_TRY(st, tsl_cfg_section(root, "data", 1, &d));
  TSL_TRY(st, tsl_cfg_string_list(d, "text", &s->data.text, &s->data.n_text));
  snprintf(buf, sizeof buf, "%s/data", s->log.dir);
  TSL_TRY(st, tsl_cfg_string(d, "dir", buf, &s->data.dir));
  TSL_TRY(st, tsl_cfg_float(d, "val_fraction", 0.1, 0.0, 0.5, &s->data.val_fraction));
  if (s->data.n_text > 0) {
    snprintf(buf, sizeof buf, "%s/train_*.bin", s->data.dir);
    TSL_TRY(st, tsl_cfg_string(d, "train", buf, &s->data.train));
    snprintf(buf, sizeof buf, "%s/val_*.bin", s->data.dir);
    TSL_TRY(st, tsl_cfg_string(d, "val", s->data.val_fraction > 0 ? buf : NULL, &s->data.val));
  } else {
    if (!tsl_cfg_has(d, "train"))
      return tsl_cfg_error(d, NULL, "give 'train' (a glob of token shards) or 'text' (files to prepare)");
    TSL_TRY(st, tsl_cfg_string(d, "train", NULL, &s->data.train));
    TSL_TRY(st, tsl_cfg_string(d, "val", NULL, &s->data.val));
  }
  return TESSEL_OK;
fail:
  return st;
}

/* train.recompute: none | selective | full, or a count N of blocks, the
** first N of which are recomputed in full (Megatron-LM's "block" method). */
static tsl_status read_recompute(tsl_cfg *t, int layers, tsl_settings *s) {
  static const char *const modes[] = {"none", "selective", "full", NULL};
  const char *v;
  tsl_status st = tsl_cfg_string(t, "recompute", "none", &v);
  if (st < 0) return st;
  for (int i = 0; modes[i]; i++)
    if (!strcmp(v, modes[i])) {
      s->train.recompute = i;
      return TESSEL_OK;
    }
  char *end;
  long n = strtol(v, &end, 10);
  if (*v < '0' || *v > '9' || *end || n < 1 || n > layers)
    return tsl_cfg_error(t, "recompute",
                         "'%s' is not none, selective, full or a number of blocks from 1 to %d (the first N blocks "
                         "recompute in full)",
                         v, layers);
  s->train.recompute = TESSEL_RECOMPUTE_FULL;
  s->train.recompute_layers = (int)n;
  return TESSEL_OK;
}

static tsl_status read_train(tsl_cfg *root, tsl_settings *s) {
  tsl_status st;
  tsl_cfg *t;
  int64_t steps, batch, micro, seed, tokens, top_k;
  TSL_TRY(st, tsl_cfg_section(root, "train", 1, &t));
  TSL_TRY(st, tsl_cfg_require(t, "steps"));
  TSL_TRY(st, tsl_cfg_int(t, "steps", 0, 1, I64_MAX, &steps));
  TSL_TRY(st, tsl_cfg_int(t, "stop_after", 0, 0, I64_MAX, &s->train.stop_after));
  TSL_TRY(st, tsl_cfg_int(t, "batch_size", 8, 1, 1 << 24, &batch));
  TSL_TRY(st, tsl_cfg_int(t, "micro_batch_size", 0, 0, 1 << 24, &micro));
  TSL_TRY(st, tsl_cfg_int(t, "seed", 1337, 0, I64_MAX, &seed));
  TSL_TRY(st, tsl_cfg_int(t, "eval_every", 0, 0, I64_MAX, &s->train.eval_every));
  TSL_TRY(st, tsl_cfg_int(t, "eval_batches", 8, 1, 1 << 20, &s->train.eval_batches));
  TSL_TRY(st, tsl_cfg_int(t, "sample_tokens", 200, 0, 1 << 20, &tokens));
  TSL_TRY(st, tsl_cfg_string(t, "sample_prompt", "\n", &s->train.sample_prompt));
  TSL_TRY(st, tsl_cfg_float(t, "sample_temperature", 1.0, 0.0, 100.0, &s->train.sample_temperature));
  TSL_TRY(st, tsl_cfg_int(t, "sample_top_k", 0, 0, 1 << 24, &top_k));
  TSL_TRY(st, read_recompute(t, s->model.layers, s));
  TSL_TRY(st, tsl_cfg_bool(t, "offload_activations", 0, &s->train.offload_activations));
  if (micro > batch)
    return tsl_cfg_error(t, "micro_batch_size", "%lld is larger than batch_size %lld",
                         (long long)micro, (long long)batch);
  if (micro > 0 && batch % micro != 0)
    return tsl_cfg_error(t, "micro_batch_size", "batch_size %lld is not a multiple of %lld",
                         (long long)batch, (long long)micro);
  s->train.steps = steps;
  s->train.batch_size = (int)batch;
  s->train.micro_batch_size = (int)micro;
  s->train.seed = (uint64_t)seed;
  s->train.sample_tokens = (int)tokens;
  s->train.sample_top_k = (int)top_k;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_optimizer(tsl_cfg *root, tsl_settings *s) {
  static const char *const decays[] = {"cosine", "linear", "constant", NULL};
  tsl_status st;
  tsl_cfg *o;
  int decay;
  TSL_TRY(st, tsl_cfg_section(root, "optimizer", 0, &o));
  TSL_TRY(st, tsl_cfg_float(o, "lr", 1e-3, 0.0, 10.0, &s->optim.lr));
  TSL_TRY(st, tsl_cfg_float(o, "min_lr", s->optim.lr * 0.1, 0.0, 10.0, &s->optim.min_lr));
  TSL_TRY(st, tsl_cfg_int(o, "warmup_steps", 0, 0, I64_MAX, &s->optim.warmup_steps));
  TSL_TRY(st, tsl_cfg_enum(o, "decay", decays, TSL_DECAY_COSINE, &decay));
  TSL_TRY(st, tsl_cfg_float(o, "beta1", 0.9, 0.0, 0.999999, &s->optim.beta1));
  TSL_TRY(st, tsl_cfg_float(o, "beta2", 0.95, 0.0, 0.999999, &s->optim.beta2));
  TSL_TRY(st, tsl_cfg_float(o, "eps", 1e-8, 0.0, 1.0, &s->optim.eps));
  TSL_TRY(st, tsl_cfg_float(o, "weight_decay", 0.1, 0.0, 10.0, &s->optim.weight_decay));
  TSL_TRY(st, tsl_cfg_float(o, "grad_clip", 1.0, 0.0, INFINITY, &s->optim.grad_clip));
  if (s->optim.min_lr > s->optim.lr)
    return tsl_cfg_error(o, "min_lr", "%g is above lr %g", s->optim.min_lr, s->optim.lr);
  s->optim.decay = (tsl_decay)decay;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_device(tsl_cfg *root, tsl_settings *s) {
  static const char *const kinds[] = {"cpu", "cuda", NULL};
  tsl_status st;
  tsl_cfg *d;
  int kind;
  int64_t threads;
  TSL_TRY(st, tsl_cfg_section(root, "device", 0, &d));
  TSL_TRY(st, tsl_cfg_enum(d, "kind", kinds, TSL_DEVICE_CPU, &kind));
  TSL_TRY(st, tsl_cfg_int(d, "threads", 0, 0, 4096, &threads));
  TSL_TRY(st, tsl_cfg_size(d, "memory_limit", 0, &s->device.memory_limit));
  TSL_TRY(st, tsl_cfg_float(d, "peak_tflops", 0.0, 0.0, 1e6, &s->device.peak_tflops));
  TSL_TRY(st, tsl_cfg_string(d, "nvme_dir", NULL, &s->device.nvme_dir));
  s->device.kind = (tsl_device_kind)kind;
  s->device.threads = (int)threads;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_plugin(tsl_cfg *root, tsl_settings *s) {
  tsl_status st;
  tsl_cfg *p;
  if (!tsl_cfg_has(root, "plugin")) return TESSEL_OK;
  TSL_TRY(st, tsl_cfg_section(root, "plugin", 0, &p));
  /* `plugin: null` (or --set plugin=null) runs without a strategy */
  if (tsl_cfg_is_empty(p)) return TESSEL_OK;
  TSL_TRY(st, tsl_cfg_string(p, "path", NULL, &s->plugin.path));
  TSL_TRY(st, tsl_cfg_string(p, "name", NULL, &s->plugin.name));
  if (!s->plugin.name && !s->plugin.path)
    return tsl_cfg_error(p, NULL, "give the strategy's 'name' (e.g. ddp) or the 'path' of its library");
  s->plugin.section = p;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_checkpoint(tsl_cfg *root, tsl_settings *s) {
  static const char *const resumes[] = {"auto", "never", NULL};
  tsl_status st;
  tsl_cfg *c;
  char buf[1024];
  int resume;
  int64_t keep;
  TSL_TRY(st, tsl_cfg_section(root, "checkpoint", 0, &c));
  snprintf(buf, sizeof buf, "%s/checkpoints", s->log.dir);
  TSL_TRY(st, tsl_cfg_string(c, "dir", buf, &s->ckpt.dir));
  TSL_TRY(st, tsl_cfg_int(c, "every", 0, 0, I64_MAX, &s->ckpt.every));
  TSL_TRY(st, tsl_cfg_int(c, "keep", 3, 0, 1 << 20, &keep));
  TSL_TRY(st, tsl_cfg_enum(c, "resume", resumes, TSL_RESUME_AUTO, &resume));
  s->ckpt.keep = (int)keep;
  s->ckpt.resume = (tsl_resume)resume;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status read_log(tsl_cfg *root, tsl_settings *s) {
  static const char *const progress[] = {"auto", "always", "never", NULL};
  static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
  tsl_status st;
  tsl_cfg *l;
  char buf[1024];
  int prog, level;
  TSL_TRY(st, tsl_cfg_section(root, "log", 0, &l));
  snprintf(buf, sizeof buf, "runs/%s", s->name);
  TSL_TRY(st, tsl_cfg_string(l, "dir", buf, &s->log.dir));
  snprintf(buf, sizeof buf, "%s/metrics.jsonl", s->log.dir);
  TSL_TRY(st, tsl_cfg_string(l, "metrics", buf, &s->log.metrics));
  TSL_TRY(st, tsl_cfg_int(l, "every", 10, 1, I64_MAX, &s->log.every));
  TSL_TRY(st, tsl_cfg_enum(l, "progress", progress, TSL_PROGRESS_AUTO, &prog));
  TSL_TRY(st, tsl_cfg_enum(l, "level", levels, TESSEL_LOG_INFO, &level));
  s->log.progress = (tsl_progress)prog;
  s->log.level = level;
  return TESSEL_OK;
fail:
  return st;
}

/* The run's name: the config file's name without directory and extension. */
static void run_name(const char *path, char *buf, size_t cap) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(buf, cap, "%s", base);
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = '\0';
}

tsl_status tsl_settings_read(tsl_config *cfg, tsl_settings *s) {
  tsl_status st;
  tsl_cfg *root = tsl_config_root(cfg);
  memset(s, 0, sizeof *s);
  run_name(tsl_config_path(cfg), s->name, sizeof s->name);
  /* log first: other sections' default paths live under log.dir */
  TSL_TRY(st, read_log(root, s));
  TSL_TRY(st, read_model(root, s));
  TSL_TRY(st, read_data(root, s));
  TSL_TRY(st, read_train(root, s));
  TSL_TRY(st, read_optimizer(root, s));
  TSL_TRY(st, read_device(root, s));
  TSL_TRY(st, read_plugin(root, s));
  TSL_TRY(st, read_checkpoint(root, s));
  return TESSEL_OK;
fail:
  return st;
}
