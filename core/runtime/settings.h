/*
** core/runtime/settings.h — the core's view of a configuration.
**
** tsl_settings_read walks the config's sections with the typed getters, so
** this file is the core's schema: every key the core understands, its type,
** default and range (settings.c; model.rope_scaling's, rope_scaling.c). docs/config.md documents the same keys. The plugin
** section is left to the plugin; the loader checks it after `create`.
*/
#ifndef TSL_SETTINGS_H
#define TSL_SETTINGS_H

#include <stdint.h>
#include "config/config.h"
#include "rope_freq.h"

/* device.threads at most: more threads per rank than any machine has cores */
#define TSL_MAX_THREADS 1024

typedef enum { TSL_DEVICE_CPU = 0, TSL_DEVICE_CUDA = 1 } tsl_device_kind;
typedef enum { TSL_ARCH_GPT2 = 0, TSL_ARCH_LLAMA = 1 } tsl_arch_kind;
typedef enum { TSL_DECAY_COSINE = 0, TSL_DECAY_LINEAR = 1, TSL_DECAY_CONSTANT = 2, TSL_DECAY_WSD = 3 } tsl_decay;
/* optimizer.decay's words by tsl_decay, and decay_shape's by decay_sqrt (0
** linear, 1 1-sqrt); NULL-terminated, as the config reads them */
extern const char *const tsl_decay_names[];
extern const char *const tsl_decay_shape_names[];
typedef enum { TSL_RESUME_AUTO = 0, TSL_RESUME_NEVER = 1 } tsl_resume;
typedef enum { TSL_PROGRESS_AUTO = 0, TSL_PROGRESS_ALWAYS = 1, TSL_PROGRESS_NEVER = 2 } tsl_progress;

/* LongRoPE's factors per list at most: one per pair of a head of up to 256
** (Phi-3's are 96 and 128 wide). */
#define TSL_ROPE_PAIRS_MAX 128

/* A scaling of the rotary frequencies: Llama 3's, YaRN's, linear,
** LongRoPE's or dynamic (Hugging Face's rope_type "llama3", "yarn",
** "linear", "longrope" and "dynamic"; kernels/rope_freq.h has the
** formulas). */
typedef struct tsl_rope_scaling {
  double factor;          /* 0: none, the frequencies are theta^(-2i/head_size) */
  double low_freq_factor, high_freq_factor;    /* Llama 3's */
  int original_positions; /* the context the unscaled model was made for (not linear's or dynamic's) */
  tsl_rope_kind kind;
  double beta_fast, beta_slow; /* YaRN's */
  double attention_factor;     /* YaRN's and LongRoPE's */
  int pairs;                   /* LongRoPE's: factors in each list, the turned elements / 2 (tsl_rotary_dim) */
  double short_factor[TSL_ROPE_PAIRS_MAX], long_factor[TSL_ROPE_PAIRS_MAX];
} tsl_rope_scaling;

/* The model's family and sizes (also what a checkpoint records). */
typedef struct tsl_model_settings {
  tsl_arch_kind arch;
  int layers, heads, kv_heads, channels, ffn, seq_len;
  int head_dim;          /* a Llama's own size of its query/key/value heads; 0: channels / heads (tsl_head_dim) */
  int rotary_dim;        /* a Llama's elements turned at the start of each head (Phi-4 mini's 96 of 128); 0: all */
  int positions;         /* the longest context the model is made for (GPT-2: rows of wpe), >= seq_len */
  int vocab_size;        /* the tokenizer's vocabulary */
  double rope_theta, norm_eps;
  tsl_rope_scaling rope_scaling;
  int tie_embeddings;
  int qkv_bias;          /* Llama: biases on the query, key and value projections (Qwen2's) */
  int qk_norm;           /* Llama: RMS norms over each head of q and k before rotary (Qwen3's) */
  int sliding_window;    /* Llama: keys a query attends to, its own included (Mistral's, Phi-3's); 0: all */
  const char *init_from; /* weights to start from: a checkpoint or Hugging Face directory (NULL: none) */
  tsl_cfg *section;      /* for errors about the model's shape (NULL from a checkpoint) */
} tsl_model_settings;

typedef struct tsl_settings {
  tsl_model_settings model;
  struct {
    const char *train, *val;  /* shard globs */
    const char **text;        /* text files to prepare into `dir` */
    int n_text;
    const char *dir;
    double val_fraction;
    const char *tokenizer;    /* tokenizer.json for `text` and to check shards against (NULL: none) */
    int prepared; /* train/val are made from `text` at the start of a run */
  } data;
  struct {
    int64_t steps;
    int64_t stop_after;    /* leave after this many steps of one invocation (0: never) */
    double stop_after_time; /* leave, with a checkpoint, before this many seconds have passed (0: never) */
    double comm_timeout;   /* seconds a rank waits for the others in one call before ending the job (0: forever) */
    int batch_size;        /* sequences per optimizer step, all ranks together */
    int micro_batch_size;  /* sequences per micro-batch on one data rank (0: derived) */
    uint64_t seed;
    int64_t eval_every, eval_batches;
    int sample_tokens;
    const char *sample_prompt;
    double sample_temperature;
    int sample_top_k;
    double sample_top_p;   /* nucleus: the most likely tokens up to this mass (1: all) */
    double sample_repetition_penalty; /* above 1: the text's tokens made less likely (1: none) */
    int recompute;         /* TESSEL_RECOMPUTE_* for every unit, or FULL for the first recompute_layers blocks */
    int recompute_layers;  /* 0: `recompute` applies to every unit */
    int offload_activations; /* kept activations wait on the host tier */
  } train;
  struct {
    double lr, min_lr, beta1, beta2, eps, weight_decay, grad_clip;
    int64_t warmup_steps;
    tsl_decay decay;
    int64_t decay_steps; /* wsd: the cool-down's steps; 0: a fifth of those after warm-up */
    int decay_sqrt;      /* wsd: the cool-down falls as 1 − √p instead of linearly */
  } optim;
  struct {
    tsl_device_kind kind;
    int threads;
    uint64_t memory_limit; /* 0: the device's own capacity */
    double peak_tflops;    /* 0: use the measured value from `tessel bench peak` */
    const char *nvme_dir;  /* files of the NVMe tier (NULL: no NVMe tier) */
  } device;
  struct {
    const char *name; /* NULL: no plugin */
    const char *path;
    tsl_cfg *section;
  } plugin;
  struct {
    const char *dir;
    int64_t every;
    int keep;
    tsl_resume resume;
  } ckpt;
  struct {
    const char *dir;
    const char *metrics;
    const char *tensorboard; /* directory for TensorBoard event files (NULL: none) */
    int64_t every;
    tsl_progress progress;
    int level;
  } log;
  char name[256]; /* run name: the config's file name without extension */
} tsl_settings;

/* Read and validate every core section. Paths in the config are used as
** written (relative to the working directory); derived defaults (the
** checkpoint directory under log.dir, ...) are built at full length.
** Strings in `s` live as long as `cfg`. Every mistake of every section is
** recorded in `cfg` (see tsl_config_outcome), not only the first. */
tsl_status tsl_settings_read(tsl_config *cfg, tsl_settings *s);

/* The files the settings name, as far as they can be checked before a run:
** data.train and data.val (when given) and every data.text entry must match
** at least one file; log.dir, checkpoint.dir, log.metrics, log.tensorboard
** and (with data.text) data.dir must not exist as the wrong kind (a file where a
** directory goes, or under a file). Mistakes are recorded positioned, like the others;
** `who` (NULL: none) follows each, e.g. the rank and host that looked. */
tsl_status tsl_settings_check_files(tsl_config *cfg, const tsl_settings *s, const char *who);

/* The size of m's query, key and value heads, and whether it is not
** channels / heads (a Llama's head_dim: the model then records it). */
int tsl_head_dim(const tsl_model_settings *m);
/* The widest attention (heads · head size) a model may have, as channels
** may be at most as wide: a config, a checkpoint and a Hugging Face
** config.json giving head_dim are each held to it. */
#define TSL_ATTENTION_WIDTH_MAX (1 << 20)
/* The most parameters a model may have: 2^48, so that 16 bytes each over a
** world of ranks still count in 64 bits. */
#define TSL_PARAMS_MAX 281474976710656.0
int tsl_head_dim_own(const tsl_model_settings *m);
/* How many elements of each of m's heads rotary positions turn. */
int tsl_rotary_dim(const tsl_model_settings *m);

/* ---- the rotary scaling (model.rope_scaling), one schema per type for
** the config, trainer.json and everything that compares or prints a model:
** its type's name, then its values in the type's order. ---- */
#define TSL_ROPE_MAX 5
typedef struct tsl_rope_type {
  const char *name;                /* model.rope_scaling.type */
  tsl_rope_kind kind;
  int n;
  const char *keys[TSL_ROPE_MAX];
  double defaults[TSL_ROPE_MAX];   /* NAN: derived from the others (tsl_rope_scaling_resolve) */
  int against[TSL_ROPE_MAX];       /* the value each must be above (high_freq_factor low_freq_factor's,
                                   ** beta_fast beta_slow's), or -1 */
  int lists;                       /* 1: LongRoPE's short_factor and long_factor follow the values */
} tsl_rope_type;
/* llama3: factor, low_freq_factor, high_freq_factor, original_positions
** (Llama 3.1's 8, 1, 4, 8192). yarn: factor, original_positions,
** beta_fast, beta_slow, attention_factor (4, 32768, 32, 1, and 0.1·ln
** factor + 1: Qwen's long-context setting, the paper's ramp and scale).
** linear: factor (2). longrope: factor, original_positions,
** attention_factor (Phi-3.5 mini's 32, 4096 and √(1 + ln factor / ln
** original_positions)), then the two lists, which have no default.
** dynamic: factor (2), which changes nothing within the model's
** positions (rope_freq.h) and is kept for the model's export. */
extern const tsl_rope_type tsl_rope_llama3, tsl_rope_yarn, tsl_rope_linear, tsl_rope_longrope, tsl_rope_dynamic;
/* The names of a type's lists, as a config, trainer.json and config.json
** give them. */
extern const char *const tsl_rope_list_keys[2];
/* The type named `name`, or NULL. */
const tsl_rope_type *tsl_rope_type_named(const char *name);
/* m's scaling: its type (NULL when it has none) and its values into v. */
const tsl_rope_type *tsl_rope_scaling_values(const tsl_model_settings *m, double v[TSL_ROPE_MAX]);
/* m's scaling set to type t with values v (resolved) and, for a type with
** lists, `pairs` factors in each of lists[0] (short) and lists[1] (long);
** lists is ignored (may be NULL) for the others. */
void tsl_rope_scaling_set(tsl_model_settings *m, const tsl_rope_type *t, const double v[TSL_ROPE_MAX],
                          const double *const lists[2], int pairs);
/* m's list k (0: short_factor, 1: long_factor) and its length. */
const double *tsl_rope_scaling_list(const tsl_model_settings *m, int k, int *pairs);
/* The derived values left NAN filled in: YaRN's and LongRoPE's
** attention_factor from the factor (and LongRoPE's original context), as
** transformers derives it. */
void tsl_rope_scaling_resolve(const tsl_rope_type *t, double v[TSL_ROPE_MAX]);
/* NULL when a list of n factors suits heads that turn `turned` elements
** (n = turned / 2 <= TSL_ROPE_PAIRS_MAX, each above 0 and at most 1e6),
** else why not, written into why (which factor when one is out of range
** goes into *at, else -1). */
const char *tsl_rope_list_fault(const double *list, int n, int turned, char *why, size_t cap, int *at);
/* Whether YaRN with `factor` over an original context stated in
** config.json reads alike in transformers 4, which takes positions /
** original as the factor, and in transformers 5 and vLLM, which take
** `factor`. */
int tsl_rope_yarn_read_alike(int positions, double original, double factor);
/* NULL when value k of v is in its range, else why not ("must be at least
** 1, got 0.5"), written into why. */
const char *tsl_rope_scaling_fault(const tsl_rope_type *t, const double v[TSL_ROPE_MAX], int k, char *why,
                                   size_t cap);
/* Whether a and b turn their rotary positions by the same frequencies
** (both unscaled, or scaled alike by the same values). */
int tsl_rope_scaling_same(const tsl_model_settings *a, const tsl_model_settings *b);
/* model.rope_scaling of the model section m (arch: llama) into ms: absent,
** null or empty for plain frequencies, else the scaling of its type, for
** heads that turn `turned` elements (0: not known, as the section's sizes
** are wrong). Every mistake is recorded in the config, positioned. */
tsl_status tsl_rope_scaling_read(tsl_cfg *m, int turned, tsl_model_settings *ms);
/* m's scaling as text: "none", or a YAML flow map that model.rope_scaling
** reads back as exactly it ("{type: llama3, factor: 8, ...}"), given a
** buffer of TSL_ROPE_TEXT_MAX. Returns buf. */
#define TSL_ROPE_TEXT_MAX (2 * TSL_ROPE_PAIRS_MAX * 26 + 512)
const char *tsl_rope_scaling_text(const tsl_model_settings *m, char *buf, size_t cap);

#endif
