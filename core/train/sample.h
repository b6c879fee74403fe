/*
** core/train/sample.h — generating text from a model's weights.
**
** Sampling runs a private single-process copy of the model on the CPU
** backend (no strategy), so it works the same at the end of any run and
** from any checkpoint: the caller supplies each parameter's whole tensor.
** With a tokenizer the prompt is encoded with it (added tokens such as
** <|endoftext|> recognised; an empty prompt is the model's beginning-of-text
** token, as generate() starts, else the end-of-text token) and
** each token's text is written and flushed as soon as it is drawn. Without
** one the vocabulary is byte-level: tokens are bytes, and a model of more
** than 256 tokens is refused rather than printed as wrong bytes.
** Generation ends early, as transformers' generate does, when it draws an
** end-of-text token: one of the model's own (a Hugging Face config's
** eos_token_id, kept in the checkpoints of a model imported or started
** from one), else the tokenizer's; that token is not printed.
*/
#ifndef TSL_SAMPLE_H
#define TSL_SAMPLE_H

#include <stdio.h>
#include "ckpt/meta.h"
#include "model/params.h"
#include "tokenizer/tokenizer.h"

/* Fill `whole` with parameter p's entire logical tensor. */
typedef tsl_status (*tsl_tensor_fn)(void *ctx, const tsl_param *p, float *whole);

typedef struct tsl_sample_opts {
  const char *prompt;
  int tokens;         /* how many to generate */
  double temperature; /* 0: always the most likely token */
  int top_k;          /* 0: the whole vocabulary */
  double top_p;       /* in (0, 1): the most likely tokens that make up this
                      ** probability mass, after top_k (0 or 1: all of them) */
  double repetition_penalty; /* above 1: tokens of the text so far made less likely
                             ** (tsl_sample_penalize); 0 or 1: none */
  uint64_t seed;
  int threads;
  tsl_tokenizer *tokenizer; /* NULL: byte-level */
  const tsl_token_ids *ids; /* the model's end-of-text ids; NULL: none */
  int ignore_eos;           /* generate all `tokens`, past any end-of-text */
  int skip_special;         /* print no text for the added tokens marked special, as
                            ** decode(ids, skip_special_tokens=True) does */
  const char *const *stop;  /* generation ends with the token in whose text one of these
                            ** ends (printed, as transformers' stop_strings keeps it) */
  int n_stop;
} tsl_sample_opts;

/* `s` supplies the model dimensions. Writes the prompt, the generated text
** and a newline to out, nothing when it fails before the first token: with
** a tokenizer, the text tokenizers' decode(prompt ids + generated ids)
** gives; byte-level, the prompt as written and the drawn bytes. A
** tokenizer whose size is not the model's vocabulary is TESSEL_E_CONFIG. */
tsl_status tsl_sample(const tsl_settings *s, tsl_tensor_fn src, void *ctx, const tsl_sample_opts *o, FILE *out);

/* The token drawn from logits[0, V) with temperature, then top_k, then
** top_p applied as transformers' logits warpers apply them, by the uniform
** number u in [0, 1): the smallest inverse-CDF index over the tokens that
** remain. temperature 0 is the most likely token. scratch holds V floats. */
int tsl_sample_draw(const float *logits, float *scratch, int V, double temperature, int top_k, double top_p, double u);

/* transformers' repetition penalty, applied before the draw: each logit
** of a token that `seen` marks (one byte per token: it is in the prompt or
** was drawn) is divided by `penalty` when positive or zero, multiplied by
** it when negative. */
void tsl_sample_penalize(float *logits, int V, const uint8_t *seen, double penalty);

/* The index of the first byte of `prompt` that a byte-level vocabulary of
** `vocab` tokens lacks (the model never sees it), or -1. */
long tsl_prompt_byte_outside(const char *prompt, int vocab);

#endif
