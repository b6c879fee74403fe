/* core/runtime/settings.c — the core's schema, read through the typed getters.
**
** Reading goes on after a mistake (the getters record it and give the
** default), so one run reports every mistake of every section;
** `tsl_cfg_keep` remembers that something failed. A section that is not a map at all is
** the one thing that ends its own reader. */
#include "settings.h"

#include <errno.h>
#include <float.h>
#include <glob.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

#define I64_MAX INT64_MAX

/* A string key whose default is derived from another path: "<base><tail>",
** built at its full length. *derived (when given) tells whether the value
** is that default, written out or not: a resolved config (`tessel check`,
** a checkpoint's config.yaml) repeats it, and read back it means the same. */
static tsl_status derived_string(tsl_cfg *map, const char *key, const char *base, const char *tail,
                                 const char **out, int *derived) {
  char *dflt = tsl_asprintf("%s%s", base, tail);
  if (derived) *derived = 1;
  if (!dflt) return TESSEL_E_NOMEM;
  tsl_status st = tsl_cfg_file(map, key, dflt, out);
  /* the tree keeps its own copy of a recorded default; after a mistake
  ** (say, a null value) *out may still be dflt, which is freed here, and
  ** later keys derive from it */
  if (*out == dflt) *out = "";
  if (derived) *derived = !strcmp(*out, dflt);
  free(dflt);
  return st;
}

/* `path` with glob(3)'s special characters escaped, for a pattern that
** must match under that directory only: data.dir "runs/exp[1]/data" once
** made "runs/exp[1]/data/train_*.bin" match runs/exp1's shards. Heap. */
static char *glob_literal(const char *path) {
  char *out = malloc(2 * strlen(path) + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = path; *p; p++) {
    if (strchr("*?[]\\", *p)) *o++ = '\\';
    *o++ = *p;
  }
  *o = '\0';
  return out;
}

/* 8/3 · C rounded up to a multiple of 64: SwiGLU's three matrices then hold
** about as many weights as a 4·C GELU MLP's two. */
static int64_t swiglu_ffn(int64_t channels) { return (8 * channels / 3 + 63) / 64 * 64; }

/* Keys that only the Llama family has; GPT-2 refuses them by name. */
static tsl_status refuse_for_gpt2(tsl_cfg *m, const char *key, const char *why) {
  if (!tsl_cfg_has(m, key)) return TESSEL_OK;
  return tsl_cfg_error(m, key, "GPT-2 has no %s (arch: llama has)", why);
}

int tsl_head_dim(const tsl_model_settings *m) { return m->head_dim ? m->head_dim : m->channels / m->heads; }

int tsl_head_dim_own(const tsl_model_settings *m) { return tsl_head_dim(m) * m->heads != m->channels; }

int tsl_rotary_dim(const tsl_model_settings *m) { return m->rotary_dim ? m->rotary_dim : tsl_head_dim(m); }

/* model.rotary_dim (a Llama's): how many elements at the start of each head
** turn, even and at most the head size (head_size, 0 when not known); left
** out, or the whole head, it is not recorded and *rotary_dim is 0. */
static tsl_status read_rotary_dim(tsl_cfg *m, int64_t head_size, int *rotary_dim) {
  int64_t rd = 0;
  *rotary_dim = 0;
  if (!tsl_cfg_has(m, "rotary_dim")) return TESSEL_OK;
  tsl_status st = tsl_cfg_int(m, "rotary_dim", 2, 2, 1 << 16, &rd);
  if (st < 0) return st;
  if (rd % 2 != 0)
    return tsl_cfg_error(m, "rotary_dim", "%lld: rotary positions turn pairs, so it must be even", (long long)rd);
  if (head_size > 0 && rd > head_size)
    return tsl_cfg_error(m, "rotary_dim", "%lld is more than the heads' %lld elements", (long long)rd,
                         (long long)head_size);
  *rotary_dim = rd == head_size ? 0 : (int)rd;
  return TESSEL_OK;
}

/* The head size: channels / heads, or a Llama's own model.head_dim (Mistral
** Nemo's 32 heads of 128 in 5120 channels), which must be even (rotary
** positions turn pairs) and, times the heads, at most
** TSL_ATTENTION_WIDTH_MAX. v and ok are read_model's heads (1) and channels
** (2). Left out, head_dim is not recorded (so the configuration `tessel
** check` prints is as before) and *head_dim is 0. */
static tsl_status read_head_dim(tsl_cfg *m, int arch, const int64_t *v, const int *ok, int *head_dim) {
  tsl_status st = TESSEL_OK;
  int64_t hd = 0;
  if (arch == TSL_ARCH_GPT2) tsl_cfg_keep(&st, refuse_for_gpt2(m, "head_dim", "head size of its own (head_dim)"));
  const int given = arch == TSL_ARCH_LLAMA && tsl_cfg_has(m, "head_dim");
  if (given) tsl_cfg_keep(&st, tsl_cfg_int(m, "head_dim", 2, 2, 1 << 16, &hd));
  if (!ok[1] || !ok[2]) return st;
  if (!given && v[2] % v[1] != 0)
    return tsl_cfg_error(m, "channels", "%lld channels do not split into %lld heads of equal size%s", (long long)v[2],
                         (long long)v[1], arch == TSL_ARCH_LLAMA ? " (a Llama may give its heads' size, head_dim)" : "");
  if (arch == TSL_ARCH_LLAMA && (given ? hd : v[2] / v[1]) % 2 != 0 && st >= 0)
    tsl_cfg_keep(&st, given ? tsl_cfg_error(m, "head_dim", "%lld: rotary positions rotate pairs, so the head size must be even",
                                    (long long)hd)
                    : tsl_cfg_error(m, "heads", "heads of %lld channels (%lld / %lld): rotary positions rotate pairs, "
                                    "so the head size must be even", (long long)(v[2] / v[1]), (long long)v[2],
                                    (long long)v[1]));
  if (given && st >= 0 && hd * v[1] > TSL_ATTENTION_WIDTH_MAX)
    tsl_cfg_keep(&st, tsl_cfg_error(m, "head_dim", "%lld heads of %lld make attention %lld wide; it may be at most %d wide, "
                            "as channels may", (long long)v[1], (long long)hd, (long long)(hd * v[1]),
                            TSL_ATTENTION_WIDTH_MAX));
  *head_dim = (int)hd;
  return st;
}

static tsl_status read_model(tsl_cfg *root, tsl_settings *s) {
  tsl_cfg *m;
  int64_t v[5], kv = 1, ffn = 1, positions = 1;
  int ok[5], arch = TSL_ARCH_GPT2;
  static const char *const keys[] = {"layers", "heads", "channels", "seq_len"};
  static const char *const archs[] = {"gpt2", "llama", NULL};
  tsl_status st = tsl_cfg_section(root, "model", 1, &m);
  if (st < 0) return st;
  s->model.section = m;
  tsl_cfg_keep(&st, tsl_cfg_enum(m, "arch", archs, TSL_ARCH_GPT2, &arch));
  for (int i = 0; i < 4; i++) {
    tsl_status one = tsl_cfg_require(m, keys[i]);
    if (one >= 0) one = tsl_cfg_int(m, keys[i], 0, 1, 1 << 20, &v[i]);
    ok[i] = one >= 0;
    tsl_cfg_keep(&st, one);
  }
  tsl_cfg_keep(&st, tsl_cfg_int(m, "vocab_size", 256, 2, 1 << 24, &v[4]));
  tsl_cfg_keep(&st, read_head_dim(m, arch, v, ok, &s->model.head_dim));
  if (arch == TSL_ARCH_GPT2) {
    /* GPT-2's fixed choices are not read (recorded), so the resolved
    ** configuration `tessel check` prints loads again */
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "kv_heads", "grouped-query attention (kv_heads)"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "rope_theta", "rotary positions (rope_theta)"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "rope_scaling", "rotary positions (rope_scaling)"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "rotary_dim", "rotary positions (rotary_dim)"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "tie_embeddings", "untied head (tie_embeddings); its head is always wte"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "qkv_bias", "choice of attention biases (qkv_bias); its linears all have biases"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "qk_norm", "norms over the query and key heads (qk_norm)"));
    tsl_cfg_keep(&st, refuse_for_gpt2(m, "sliding_window", "sliding-window attention (sliding_window)"));
    kv = ok[1] ? v[1] : 1;
    s->model.rope_theta = 10000.0;
    s->model.tie_embeddings = 1;
  } else {
    tsl_status kst = tsl_cfg_int(m, "kv_heads", ok[1] ? v[1] : 1, 1, 1 << 20, &kv);
    tsl_cfg_keep(&st, kst);
    if (ok[1] && kst >= 0 && v[1] % kv != 0)
      tsl_cfg_keep(&st, tsl_cfg_error(m, "kv_heads", "%lld query heads do not share %lld key/value heads evenly (kv_heads "
                              "must divide heads: %lld for multi-head, 1 for multi-query attention)",
                              (long long)v[1], (long long)kv, (long long)v[1]));
    tsl_cfg_keep(&st, tsl_cfg_float(m, "rope_theta", 10000.0, 1.0, 1e12, &s->model.rope_theta));
    const int64_t head_size = s->model.head_dim ? s->model.head_dim : ok[1] && ok[2] ? v[2] / v[1] : 0;
    tsl_status rst = read_rotary_dim(m, head_size, &s->model.rotary_dim);
    tsl_cfg_keep(&st, rst);
    tsl_cfg_keep(&st, tsl_rope_scaling_read(m, rst < 0 ? 0 : s->model.rotary_dim ? s->model.rotary_dim : (int)head_size,
                                &s->model));
    tsl_cfg_keep(&st, tsl_cfg_bool(m, "tie_embeddings", 0, &s->model.tie_embeddings));
    tsl_cfg_keep(&st, tsl_cfg_bool(m, "qkv_bias", 0, &s->model.qkv_bias));
    tsl_cfg_keep(&st, tsl_cfg_bool(m, "qk_norm", 0, &s->model.qk_norm));
    int64_t window = 0;
    tsl_cfg_keep(&st, tsl_cfg_int(m, "sliding_window", 0, 0, 1 << 30, &window));
    s->model.sliding_window = (int)window;
  }
  tsl_cfg_keep(&st, tsl_cfg_float(m, "norm_eps", 1e-5, 1e-12, 1.0, &s->model.norm_eps));
  int64_t c = ok[2] ? v[2] : 1;
  tsl_cfg_keep(&st, tsl_cfg_int(m, "ffn", arch == TSL_ARCH_LLAMA ? swiglu_ffn(c) : 4 * c, 1, 1 << 24, &ffn));
  tsl_cfg_keep(&st, tsl_cfg_file(m, "init_from", NULL, &s->model.init_from));
  /* with init_from, tsl_init_from_check raises the default to the weights' */
  tsl_status pst = tsl_cfg_int(m, "positions", ok[3] ? v[3] : 1, 1, 1 << 20, &positions);
  tsl_cfg_keep(&st, pst);
  if (pst >= 0 && ok[3] && positions < v[3])
    tsl_cfg_keep(&st, tsl_cfg_error(m, "positions", "%lld, shorter than seq_len %lld: the model must be made for the "
                            "context it trains on", (long long)positions, (long long)v[3]));
  if (st < 0) return st;
  /* every size is in range, but together they may make a model whose byte
  ** counts pass 64 bits (then wrap in every estimate): refused, with room
  ** for 16 bytes a parameter times a world of ranks */
  const double width = (double)(s->model.head_dim ? s->model.head_dim * v[1] : v[2]), kv_width = width / v[1] * kv;
  const double mlp = (arch == TSL_ARCH_LLAMA ? 3.0 : 2.0) * (double)ffn;
  const double block = (double)v[2] * (2 * width + 2 * kv_width + mlp) + 4.0 * v[2];
  const double params = (double)v[0] * block + 2.0 * (double)v[4] * v[2] + (double)positions * v[2];
  if (params > TSL_PARAMS_MAX)
    return tsl_cfg_error(m, "layers", "with these sizes the model has about %.3g parameters, more than tessel "
                         "counts (2^48, %.3g)", params, TSL_PARAMS_MAX);
  s->model.arch = (tsl_arch_kind)arch;
  s->model.layers = (int)v[0];
  s->model.heads = (int)v[1];
  s->model.kv_heads = (int)kv;
  s->model.channels = (int)v[2];
  s->model.ffn = (int)ffn;
  s->model.seq_len = (int)v[3];
  s->model.positions = (int)positions;
  s->model.vocab_size = (int)v[4];
  return TESSEL_OK;
}

static tsl_status read_data(tsl_cfg *root, tsl_settings *s) {
  tsl_cfg *d;
  tsl_status st = tsl_cfg_section(root, "data", 1, &d);
  if (st < 0) return st;
  const tsl_status text_st = tsl_cfg_string_list(d, "text", &s->data.text, &s->data.n_text);
  tsl_cfg_keep(&st, text_st);
  /* dir and val_fraction shape the preparation of 'text': beside 'train'
  ** they take no default (a resolved config that printed them would be
  ** refused when read again) and, given, are refused below */
  int shards = s->data.n_text == 0 && tsl_cfg_has(d, "train");
  if (!shards || tsl_cfg_has(d, "dir")) tsl_cfg_keep(&st, derived_string(d, "dir", s->log.dir, "/data", &s->data.dir, NULL));
  if (!shards || tsl_cfg_has(d, "val_fraction"))
    tsl_cfg_keep(&st, tsl_cfg_float(d, "val_fraction", 0.1, 0.0, 0.5, &s->data.val_fraction));
  tsl_cfg_keep(&st, tsl_cfg_file(d, "tokenizer", NULL, &s->data.tokenizer));
  char *dir = s->data.n_text > 0 && s->data.dir ? glob_literal(s->data.dir) : NULL;
  if (s->data.n_text > 0 && !dir) {
    tsl_cfg_keep(&st, TESSEL_E_NOMEM);
  } else if (s->data.n_text > 0) {
    s->data.prepared = 1;
    int derived;
    tsl_cfg_keep(&st, derived_string(d, "train", dir, "/train_*.bin", &s->data.train, &derived));
    if (!derived)
      tsl_cfg_keep(&st, tsl_cfg_error(d, "train", "give 'train' (a glob of token shards) or 'text' (files to prepare), not "
                              "both: the text is prepared into data.dir and trained on from there"));
    if (s->data.val_fraction > 0) {
      tsl_cfg_keep(&st, derived_string(d, "val", dir, "/val_*.bin", &s->data.val, &derived));
      if (!derived)
        tsl_cfg_keep(&st, tsl_cfg_error(d, "val", "'val' beside 'text' with val_fraction %g: the text's last part is the "
                                "validation set; set val_fraction: 0 to validate on 'val' instead",
                                s->data.val_fraction));
    } else {
      tsl_cfg_keep(&st, tsl_cfg_file(d, "val", NULL, &s->data.val));
    }
  } else if (!tsl_cfg_has(d, "train")) {
    /* a 'text' that was refused has said so where it is written */
    if (text_st >= 0)
      tsl_cfg_keep(&st, tsl_cfg_error(d, NULL, "give 'train' (a glob of token shards) or 'text' (files to prepare)"));
  } else {
    tsl_cfg_keep(&st, tsl_cfg_file(d, "train", NULL, &s->data.train));
    tsl_cfg_keep(&st, tsl_cfg_file(d, "val", NULL, &s->data.val));
    /* keys that only shape the preparation of 'text': silently unused
    ** beside 'train', a user would believe the split or the place applied */
    if (tsl_cfg_has(d, "val_fraction"))
      tsl_cfg_keep(&st, tsl_cfg_error(d, "val_fraction", "splits the files of 'text'; shards given as 'train' are not split: "
                              "give the validation shards as 'val'"));
    if (tsl_cfg_has(d, "dir"))
      tsl_cfg_keep(&st, tsl_cfg_error(d, "dir", "is where the files of 'text' are prepared; with 'train' (shards already "
                              "prepared) nothing goes there"));
  }
  free(dir);
  return st;
}

const char *const tsl_decay_names[] = {"cosine", "linear", "constant", "wsd", NULL};
const char *const tsl_decay_shape_names[] = {"linear", "1-sqrt", NULL};

/* "3h50m", "90s", "1d12h", "45m", "0s", or plain seconds ("5400") into
** seconds; -1 when malformed, not finite or negative (strtod alone would
** take "nan", "inf" and "0x1p4"). Zero is the caller's to take or refuse. */
static double parse_duration(const char *text) {
  double total = 0;
  const char *p = text;
  if (!*p) return -1;
  while (*p) {
    char *end;
    double v, unit = 1;
    if (tsl_parse_decimal(p, &v, &end) != 0) return -1;
    switch (*end) {
      case 'd': unit = 86400; end++; break;
      case 'h': unit = 3600; end++; break;
      case 'm': unit = 60; end++; break;
      case 's': end++; break;
      case '\0': if (p != text) return -1; break; /* a bare number only alone */
      default: return -1;
    }
    total += v * unit;
    p = end;
  }
  return isfinite(total) && total >= 0 ? total : -1;
}

/* train.comm_timeout: a duration, or 0 (in any unit) to wait forever. */
static tsl_status read_comm_timeout(tsl_cfg *t, tsl_settings *s) {
  const char *v;
  tsl_status st = tsl_cfg_string(t, "comm_timeout", "30m", &v);
  if (st < 0) return st;
  double seconds = parse_duration(v);
  if (seconds < 0)
    return tsl_cfg_error(t, "comm_timeout", "'%s' is not a duration: write e.g. 30m, 90s or 2h, or 0 to wait forever",
                         v);
  s->train.comm_timeout = seconds;
  return TESSEL_OK;
}

/* train.recompute: none | selective | full, or a count N of blocks, the
** first N of which are recomputed in full (Megatron-LM's "block" method).
** layers is 0 when the model's own keys were wrong: any N ≥ 1 passes then. */
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
  if (*v < '0' || *v > '9' || *end || n < 1 || (layers > 0 && n > layers))
    return tsl_cfg_error(t, "recompute",
                         "'%s' is not none, selective, full or a number of blocks from 1 to %d (the first N blocks "
                         "recompute in full)",
                         v, layers);
  s->train.recompute = TESSEL_RECOMPUTE_FULL;
  s->train.recompute_layers = (int)n;
  return TESSEL_OK;
}

static tsl_status read_train(tsl_cfg *root, tsl_settings *s) {
  tsl_cfg *t;
  int64_t steps, batch, micro, seed, tokens, top_k;
  const char *limit = NULL;
  tsl_status st = tsl_cfg_section(root, "train", 1, &t);
  if (st < 0) return st;
  tsl_status req = tsl_cfg_require(t, "steps");
  tsl_cfg_keep(&st, req >= 0 ? tsl_cfg_int(t, "steps", 0, 1, I64_MAX, &steps) : req);
  tsl_cfg_keep(&st, tsl_cfg_int(t, "stop_after", 0, 0, I64_MAX, &s->train.stop_after));
  tsl_cfg_keep(&st, tsl_cfg_string(t, "stop_after_time", NULL, &limit));
  /* 0 would mean no limit at all: refused rather than read so */
  if (limit && (s->train.stop_after_time = parse_duration(limit)) <= 0)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "stop_after_time", "'%s' is not a duration above zero: write e.g. 3h50m, 90m, 45s or 1d12h",
                            limit));
  tsl_cfg_keep(&st, read_comm_timeout(t, s));
  tsl_status b = tsl_cfg_int(t, "batch_size", 8, 1, 1 << 24, &batch);
  tsl_status mb = tsl_cfg_int(t, "micro_batch_size", 0, 0, 1 << 24, &micro);
  tsl_cfg_keep(&st, b);
  tsl_cfg_keep(&st, mb);
  tsl_cfg_keep(&st, tsl_cfg_int(t, "seed", 1337, 0, I64_MAX, &seed));
  tsl_cfg_keep(&st, tsl_cfg_int(t, "eval_every", 0, 0, I64_MAX, &s->train.eval_every));
  /* read and silently never used, a user would believe the run validates */
  if (s->train.eval_every > 0 && !s->data.val)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "eval_every", "%lld, but this run has no validation data: give data.val, or data.text "
                            "with data.val_fraction above 0", (long long)s->train.eval_every));
  tsl_cfg_keep(&st, tsl_cfg_int(t, "eval_batches", 8, 1, 1 << 20, &s->train.eval_batches));
  tsl_cfg_keep(&st, tsl_cfg_int(t, "sample_tokens", 200, 0, 1 << 20, &tokens));
  tsl_cfg_keep(&st, tsl_cfg_string(t, "sample_prompt", "\n", &s->train.sample_prompt));
  tsl_cfg_keep(&st, tsl_cfg_float(t, "sample_temperature", 1.0, 0.0, 100.0, &s->train.sample_temperature));
  tsl_cfg_keep(&st, tsl_cfg_int(t, "sample_top_k", 0, 0, 1 << 24, &top_k));
  tsl_cfg_keep(&st, tsl_cfg_float(t, "sample_top_p", 1.0, 0.0, 1.0, &s->train.sample_top_p));
  tsl_cfg_keep(&st, tsl_cfg_float(t, "sample_repetition_penalty", 1.0, 0.0, 10.0, &s->train.sample_repetition_penalty));
  if (s->train.sample_repetition_penalty <= 0)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "sample_repetition_penalty", "must be above 0: 1 leaves the logits alone, more than 1 "
                            "makes the text's tokens less likely"));
  if (s->train.sample_top_p <= 0)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "sample_top_p", "0 keeps no token: give the probability mass to sample from, above 0 "
                            "and up to 1 (1: every token)"));
  tsl_cfg_keep(&st, read_recompute(t, s->model.layers, s));
  tsl_cfg_keep(&st, tsl_cfg_bool(t, "offload_activations", 0, &s->train.offload_activations));
  if (b >= 0 && mb >= 0 && micro > batch)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "micro_batch_size", "%lld is larger than batch_size %lld", (long long)micro,
                            (long long)batch));
  else if (b >= 0 && mb >= 0 && micro > 0 && batch % micro != 0)
    tsl_cfg_keep(&st, tsl_cfg_error(t, "micro_batch_size", "batch_size %lld is not a multiple of %lld", (long long)batch,
                            (long long)micro));
  if (st < 0) return st;
  s->train.steps = steps;
  s->train.batch_size = (int)batch;
  s->train.micro_batch_size = (int)micro;
  s->train.seed = (uint64_t)seed;
  s->train.sample_tokens = (int)tokens;
  s->train.sample_top_k = (int)top_k;
  return TESSEL_OK;
}

static tsl_status read_optimizer(tsl_cfg *root, tsl_settings *s) {
  tsl_cfg *o;
  int decay;
  tsl_status st = tsl_cfg_section(root, "optimizer", 0, &o);
  if (st < 0) return st;
  tsl_status lr = tsl_cfg_float(o, "lr", 1e-3, 0.0, 10.0, &s->optim.lr);
  tsl_status min_lr = tsl_cfg_float(o, "min_lr", s->optim.lr * 0.1, 0.0, 10.0, &s->optim.min_lr);
  tsl_cfg_keep(&st, lr);
  tsl_cfg_keep(&st, min_lr);
  tsl_cfg_keep(&st, tsl_cfg_int(o, "warmup_steps", 0, 0, I64_MAX, &s->optim.warmup_steps));
  tsl_status dst = tsl_cfg_enum(o, "decay", tsl_decay_names, TSL_DECAY_COSINE, &decay);
  tsl_cfg_keep(&st, dst);
  tsl_cfg_keep(&st, tsl_cfg_int(o, "decay_steps", 0, 0, I64_MAX, &s->optim.decay_steps));
  tsl_cfg_keep(&st, tsl_cfg_enum(o, "decay_shape", tsl_decay_shape_names, 0, &s->optim.decay_sqrt));
  if (dst >= 0 && decay != TSL_DECAY_WSD && s->optim.decay_steps > 0)
    tsl_cfg_keep(&st, tsl_cfg_error(o, "decay_steps", "is the cool-down of decay: wsd, and decay is %s: set decay: wsd, or "
                            "leave decay_steps out", tsl_decay_names[decay]));
  if (dst >= 0 && decay != TSL_DECAY_WSD && s->optim.decay_sqrt)
    tsl_cfg_keep(&st, tsl_cfg_error(o, "decay_shape", "shapes the cool-down of decay: wsd, and decay is %s: set decay: wsd, "
                            "or leave decay_shape out", tsl_decay_names[decay]));
  tsl_cfg_keep(&st, tsl_cfg_float(o, "beta1", 0.9, 0.0, 0.999999, &s->optim.beta1));
  tsl_cfg_keep(&st, tsl_cfg_float(o, "beta2", 0.95, 0.0, 0.999999, &s->optim.beta2));
  tsl_status eps = tsl_cfg_float(o, "eps", 1e-8, 0.0, 1.0, &s->optim.eps);
  tsl_cfg_keep(&st, eps);
  if (eps >= 0 && s->optim.eps < FLT_MIN) /* the kernels compute in fp32, where such an eps is 0 */
    tsl_cfg_keep(&st, tsl_cfg_error(o, "eps", "%g is 0 to AdamW's fp32 arithmetic, which then divides 0 by 0 wherever a "
                            "gradient is exactly zero (the embedding row of a token the batches never hold), and "
                            "those weights become NaN: use a small positive eps such as 1e-8", s->optim.eps));
  tsl_cfg_keep(&st, tsl_cfg_float(o, "weight_decay", 0.1, 0.0, 10.0, &s->optim.weight_decay));
  tsl_cfg_keep(&st, tsl_cfg_float(o, "grad_clip", 1.0, 0.0, INFINITY, &s->optim.grad_clip));
  if (lr >= 0 && min_lr >= 0 && s->optim.min_lr > s->optim.lr)
    tsl_cfg_keep(&st, tsl_cfg_error(o, "min_lr", "%g is above lr %g", s->optim.min_lr, s->optim.lr));
  s->optim.decay = (tsl_decay)decay;
  return st;
}

static tsl_status read_device(tsl_cfg *root, tsl_settings *s) {
  static const char *const kinds[] = {"cpu", "cuda", NULL};
  tsl_cfg *d;
  int kind;
  int64_t threads;
  tsl_status st = tsl_cfg_section(root, "device", 0, &d);
  if (st < 0) return st;
  tsl_cfg_keep(&st, tsl_cfg_enum(d, "kind", kinds, TSL_DEVICE_CPU, &kind));
  tsl_cfg_keep(&st, tsl_cfg_int(d, "threads", 0, 0, TSL_MAX_THREADS, &threads));
  tsl_cfg_keep(&st, tsl_cfg_size(d, "memory_limit", 0, &s->device.memory_limit));
  tsl_cfg_keep(&st, tsl_cfg_float(d, "peak_tflops", 0.0, 0.0, 1e6, &s->device.peak_tflops));
  tsl_cfg_keep(&st, tsl_cfg_file(d, "nvme_dir", NULL, &s->device.nvme_dir));
  s->device.kind = (tsl_device_kind)kind;
  s->device.threads = (int)threads;
  return st;
}

static tsl_status read_plugin(tsl_cfg *root, tsl_settings *s) {
  tsl_cfg *p;
  if (!tsl_cfg_has(root, "plugin")) return TESSEL_OK;
  tsl_status st = tsl_cfg_section(root, "plugin", 0, &p);
  if (st < 0) return st;
  /* `plugin: null` (or --set plugin=null) runs without a strategy */
  if (tsl_cfg_is_empty(p)) return TESSEL_OK;
  tsl_cfg_keep(&st, tsl_cfg_file(p, "path", NULL, &s->plugin.path));
  tsl_cfg_keep(&st, tsl_cfg_string(p, "name", NULL, &s->plugin.name));
  if (st >= 0 && !s->plugin.name && !s->plugin.path) {
    tsl_status typo = tsl_cfg_misspelt(p, "name");
    if (typo >= 0) typo = tsl_cfg_misspelt(p, "path");
    tsl_cfg_keep(&st, typo < 0 ? typo
                             : tsl_cfg_error(p, NULL, "give the strategy's 'name' (e.g. ddp) or the 'path' of its library"));
  }
  s->plugin.section = p;
  return st;
}

static tsl_status read_checkpoint(tsl_cfg *root, tsl_settings *s) {
  static const char *const resumes[] = {"auto", "never", NULL};
  tsl_cfg *c;
  int resume;
  int64_t keep_n;
  tsl_status st = tsl_cfg_section(root, "checkpoint", 0, &c);
  if (st < 0) return st;
  tsl_cfg_keep(&st, derived_string(c, "dir", s->log.dir, "/checkpoints", &s->ckpt.dir, NULL));
  tsl_cfg_keep(&st, tsl_cfg_int(c, "every", 0, 0, I64_MAX, &s->ckpt.every));
  tsl_cfg_keep(&st, tsl_cfg_int(c, "keep", 3, 0, 1 << 20, &keep_n));
  tsl_cfg_keep(&st, tsl_cfg_enum(c, "resume", resumes, TSL_RESUME_AUTO, &resume));
  s->ckpt.keep = (int)keep_n;
  s->ckpt.resume = (tsl_resume)resume;
  return st;
}

static tsl_status read_log(tsl_cfg *root, tsl_settings *s) {
  static const char *const progress[] = {"auto", "always", "never", NULL};
  static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
  tsl_cfg *l;
  int prog, level;
  tsl_status st = tsl_cfg_section(root, "log", 0, &l);
  /* other sections' default paths live under log.dir: give them one */
  s->log.dir = s->name;
  if (st < 0) return st;
  tsl_cfg_keep(&st, derived_string(l, "dir", "runs/", s->name, &s->log.dir, NULL));
  tsl_cfg_keep(&st, derived_string(l, "metrics", s->log.dir, "/metrics.jsonl", &s->log.metrics, NULL));
  tsl_cfg_keep(&st, tsl_cfg_file(l, "tensorboard", NULL, &s->log.tensorboard));
  tsl_cfg_keep(&st, tsl_cfg_int(l, "every", 10, 1, I64_MAX, &s->log.every));
  tsl_cfg_keep(&st, tsl_cfg_enum(l, "progress", progress, TSL_PROGRESS_AUTO, &prog));
  tsl_cfg_keep(&st, tsl_cfg_enum(l, "level", levels, TESSEL_LOG_INFO, &level));
  s->log.progress = (tsl_progress)prog;
  s->log.level = level;
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
  tsl_status st = TESSEL_OK;
  tsl_cfg *root = tsl_config_root(cfg);
  memset(s, 0, sizeof *s);
  run_name(tsl_config_path(cfg), s->name, sizeof s->name);
  /* log first: other sections' default paths live under log.dir */
  tsl_cfg_keep(&st, read_log(root, s));
  tsl_cfg_keep(&st, read_model(root, s));
  tsl_cfg_keep(&st, read_data(root, s));
  tsl_cfg_keep(&st, read_train(root, s));
  tsl_cfg_keep(&st, read_optimizer(root, s));
  tsl_cfg_keep(&st, read_device(root, s));
  tsl_cfg_keep(&st, read_plugin(root, s));
  tsl_cfg_keep(&st, read_checkpoint(root, s));
  return st;
}

/* `item`: the index of the pattern in a list at `key`, or -1. */
static tsl_status no_match(tsl_cfg *node, const char *key, int item, const char *pattern, const char *who) {
  char *cwd = getcwd(NULL, 0);
  tsl_status st = tsl_cfg_item_error(node, key, item, "no files match '%s'%s%s%s%s", pattern,
                                     pattern[0] == '/' ? "" : " (from ",
                                     pattern[0] == '/' ? "" : cwd ? cwd : "the working directory",
                                     pattern[0] == '/' ? "" : ")", who ? who : "");
  free(cwd);
  return st;
}

/* An output path the run will create (want_dir: a directory, else a file):
** refused when it exists as the other kind, or when the nearest existing
** directory above it is a file. Returns the path at fault, or NULL. */
static char *output_path_fault(const char *path, int want_dir, const char **why) {
  struct stat sb;
  char *near = tsl_existing_ancestor(path);
  *why = NULL;
  if (near && stat(near, &sb) == 0) {
    if (strcmp(near, path) != 0) /* the first part that exists, above what is to be made */
      *why = S_ISDIR(sb.st_mode) ? NULL : "is not a directory, so nothing can be created under it";
    else
      *why = want_dir && !S_ISDIR(sb.st_mode) ? "exists and is not a directory"
             : !want_dir && S_ISDIR(sb.st_mode) ? "is a directory, not a file" : NULL;
  }
  if (*why) return near;
  free(near);
  return NULL;
}

/* log.dir, checkpoint.dir, log.metrics, log.tensorboard and (for data.text)
** data.dir as the run will create them; a path under one already refused is
** not refused again. */
static tsl_status check_outputs(tsl_cfg *root, const tsl_settings *s, const char *who) {
  struct {
    const char *section, *key, *path;
    int dir;
  } out[] = {{"log", "dir", s->log.dir, 1},
             {"checkpoint", "dir", s->ckpt.dir, 1},
             {"log", "metrics", s->log.metrics, 0},
             {"log", "tensorboard", s->log.tensorboard, 1},
             {"data", "dir", s->data.prepared ? s->data.dir : NULL, 1}};
  tsl_status st = TESSEL_OK;
  char *refused[sizeof out / sizeof out[0]] = {0};
  int n_refused = 0;
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    const char *why = NULL;
    int seen = 0;
    if (!out[i].path || !out[i].path[0]) continue;
    for (int k = 0; k < n_refused; k++) seen |= tsl_path_within(out[i].path, refused[k]);
    char *fault = seen ? NULL : output_path_fault(out[i].path, out[i].dir, &why);
    if (!fault) continue;
    tsl_cfg *sec = NULL;
    tsl_cfg_section(root, out[i].section, 0, &sec);
    tsl_cfg_keep(&st, sec ? tsl_cfg_error(sec, out[i].key, "%s %s%s", fault, why, who ? who : "")
                  : tsl_error(TESSEL_E_CONFIG, "%s.%s: %s %s%s", out[i].section, out[i].key, fault, why,
                              who ? who : ""));
    refused[n_refused++] = fault;
  }
  for (int k = 0; k < n_refused; k++) free(refused[k]);
  return st;
}

/* What preparing would refuse in a data.text entry that exists or whose
** pattern matches something (core/data/prepare.c). */
typedef enum {
  TEXT_OK,
  TEXT_DIRECTORY,     /* names a directory                                   */
  TEXT_NOT_FILE,      /* names a device, FIFO or socket                      */
  TEXT_ONLY_DIRS,     /* a pattern that matches only directories             */
  TEXT_MATCH_NOT_FILE /* a pattern that matches a device, FIFO or socket: at */
} text_fault;

static text_fault text_entry_fault(const char *entry, char *at, size_t cap) {
  struct stat sb;
  if (stat(entry, &sb) == 0) /* named as itself, not through a pattern */
    return S_ISDIR(sb.st_mode) ? TEXT_DIRECTORY : S_ISREG(sb.st_mode) ? TEXT_OK : TEXT_NOT_FILE;
  glob_t g;
  if (glob(entry, 0, NULL, &g) != 0) {
    globfree(&g);
    return TEXT_OK; /* matches nothing: said apart */
  }
  text_fault fault = TEXT_ONLY_DIRS;
  for (size_t i = 0; i < g.gl_pathc && fault != TEXT_MATCH_NOT_FILE; i++) {
    if (stat(g.gl_pathv[i], &sb) != 0 || S_ISDIR(sb.st_mode)) continue; /* a pattern means the files */
    if (S_ISREG(sb.st_mode)) {
      if (fault == TEXT_ONLY_DIRS) fault = TEXT_OK;
    } else {
      snprintf(at, cap, "%s", g.gl_pathv[i]);
      fault = TEXT_MATCH_NOT_FILE;
    }
  }
  globfree(&g);
  return fault;
}

tsl_status tsl_settings_check_files(tsl_config *cfg, const tsl_settings *s, const char *who) {
  tsl_status st = check_outputs(tsl_config_root(cfg), s, who);
  tsl_cfg *data = NULL;
  if (tsl_cfg_section(tsl_config_root(cfg), "data", 0, &data) < 0 || !data) return st;
  if (s->data.tokenizer && access(s->data.tokenizer, R_OK) != 0)
    tsl_cfg_keep(&st, tsl_cfg_error(data, "tokenizer", "cannot read %s: %s%s", s->data.tokenizer, strerror(errno),
                            who ? who : ""));
  if (s->data.prepared) { /* the shards are made at the start of the run: their sources must be there */
    const char **text;
    int n;
    if (tsl_cfg_string_list(data, "text", &text, &n) < 0) return st;
    char at[4096];
    const char *on = who ? who : "";
    for (int i = 0; i < n; i++) {
      if (!tsl_glob_matches(text[i])) {
        tsl_cfg_keep(&st, no_match(data, "text", i, text[i], who));
        continue;
      }
      switch (text_entry_fault(text[i], at, sizeof at)) {
        case TEXT_OK: break;
        case TEXT_DIRECTORY:
          tsl_cfg_keep(&st, tsl_cfg_item_error(data, "text", i, "%s is a directory: name its files, e.g. '%s/*.txt'%s",
                                       text[i], text[i], on));
          break;
        case TEXT_NOT_FILE:
          tsl_cfg_keep(&st, tsl_cfg_item_error(data, "text", i, "%s is not a regular file: name text files%s", text[i],
                                       on));
          break;
        case TEXT_ONLY_DIRS:
          tsl_cfg_keep(&st, tsl_cfg_item_error(data, "text", i, "'%s' matches only directories: name the files in "
                                       "them, e.g. 'DIR/*.txt'%s", text[i], on));
          break;
        case TEXT_MATCH_NOT_FILE:
          tsl_cfg_keep(&st, tsl_cfg_item_error(data, "text", i, "'%s' matches %s, which is not a regular file: name "
                                       "text files%s", text[i], at, on));
          break;
      }
    }
    return st;
  }
  if (s->data.train && !tsl_glob_matches(s->data.train)) tsl_cfg_keep(&st, no_match(data, "train", -1, s->data.train, who));
  if (s->data.val && !tsl_glob_matches(s->data.val)) tsl_cfg_keep(&st, no_match(data, "val", -1, s->data.val, who));
  return st;
}
