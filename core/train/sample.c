/* core/train/sample.c */
#include "train/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/gather.h"
#include "common/log.h"
#include "common/util.h"
#include "model/model.h"
#include "runtime/build.h"

typedef struct context {
  int32_t *tokens;
  int64_t len, cap, seen; /* seen: the tokens the model's cache holds */
  int64_t window;         /* the most positions the model looks at */
} context;

/* The logits of the token after the context: the model runs over the
** tokens it has not seen, after those in its cache, or, when the cache has
** no room for them, over the context's last `window` tokens again from
** position 0 (a window that slides once the text is longer than the
** model's positions). */
static tsl_status next_logits(tsl_model *m, context *c, const void **logits) {
  int64_t fresh = c->len - c->seen;
  const int32_t *from = c->tokens + c->seen;
  if (fresh > tsl_model_decode_room(m)) {
    tsl_model_decode_reset(m);
    fresh = TSL_MIN(c->len, c->window);
    from = c->tokens + c->len - fresh;
  }
  c->seen = c->len;
  return tsl_model_decode(m, from, fresh, logits);
}

/* The k-th largest of v[0, n) (k in 1..n), v rearranged: Hoare's
** selection, O(n) on average where sorting the first k took O(k·n) (a
** top-k of 64000 over Llama 3's 128256 tokens: 6 s a token). */
static float kth_largest(float *v, int n, int k) {
  int lo = 0, hi = n - 1, want = k - 1;
  while (lo < hi) {
    float pivot = v[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) { /* larger values to the left */
      while (v[i] > pivot) i++;
      while (v[j] < pivot) j--;
      if (i <= j) {
        float t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else return v[want]; /* between the two parts: equal to the pivot */
  }
  return v[want];
}

static int descending(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x < y) - (x > y);
}

/* The logit at which the nucleus of mass top_p ends, among the logits at
** or above `cut`: the most likely tokens are kept until the mass before the
** next one reaches top_p (transformers' TopPLogitsWarper keeps a token
** while the mass of those above it is below top_p). */
static float nucleus_cut(const float *logits, float *scratch, int V, double temperature, float cut, float best,
                         double top_p) {
  int n = 0;
  double total = 0, acc = 0;
  for (int v = 0; v < V; v++)
    if (logits[v] >= cut) scratch[n++] = logits[v];
  qsort(scratch, (size_t)n, sizeof *scratch, descending);
  for (int i = 0; i < n; i++) total += exp(((double)scratch[i] - best) / temperature);
  for (int i = 0; i < n; i++) {
    acc += exp(((double)scratch[i] - best) / temperature);
    if (acc >= top_p * total) return scratch[i];
  }
  return cut;
}

int tsl_sample_draw(const float *logits, float *scratch, int V, double temperature, int top_k, double top_p,
                    double u) {
  int best = 0;
  for (int v = 1; v < V; v++)
    if (logits[v] > logits[best]) best = v;
  if (temperature <= 0) return best;
  /* the k-th largest logit is the cut-off (all of them when top_k is 0),
  ** then the nucleus's last one */
  float cut = -INFINITY;
  if (top_k > 0 && top_k < V) {
    memcpy(scratch, logits, sizeof(float) * (size_t)V);
    cut = kth_largest(scratch, V, top_k);
  }
  if (top_p > 0 && top_p < 1) cut = nucleus_cut(logits, scratch, V, temperature, cut, logits[best], top_p);
  double total = 0;
  for (int v = 0; v < V; v++)
    if (logits[v] >= cut) total += exp(((double)logits[v] - logits[best]) / temperature);
  double target = u * total, acc = 0;
  for (int v = 0; v < V; v++) {
    if (logits[v] < cut) continue;
    acc += exp(((double)logits[v] - logits[best]) / temperature);
    if (acc >= target) return v;
  }
  return best;
}

void tsl_sample_penalize(float *logits, int V, const uint8_t *seen, double penalty) {
  for (int v = 0; v < V; v++)
    if (seen[v]) logits[v] = logits[v] < 0 ? (float)(logits[v] * penalty) : (float)(logits[v] / penalty);
}

/* The ids that end generation (at most TSL_CKPT_MAX_EOS): the model's
** end-of-text ids, else its tokenizer's end-of-text token; none without
** either, or when the caller asks to ignore them. */
static int stop_ids(const tsl_sample_opts *o, int32_t *out) {
  if (o->ignore_eos) return 0;
  if (o->ids && o->ids->n_eos > 0) {
    for (int i = 0; i < o->ids->n_eos; i++) out[i] = o->ids->eos_ids[i];
    return o->ids->n_eos;
  }
  int eot = o->tokenizer ? tsl_tokenizer_eot(o->tokenizer) : -1;
  if (eot < 0) return 0;
  out[0] = eot;
  return 1;
}

long tsl_prompt_byte_outside(const char *prompt, int vocab) {
  for (long i = 0; prompt[i]; i++)
    if ((unsigned char)prompt[i] >= vocab) return i;
  return -1;
}

/* The prompt as ids: encoded with the tokenizer, or its bytes. An empty
** prompt is the model's beginning-of-text token, where generate() starts
** without input, else the end-of-text token that starts every document
** tessel trains on (byte-level: a newline). */
static tsl_status prompt_ids(const tsl_sample_opts *o, int V, tsl_token_vec *v) {
  size_t len = strlen(o->prompt);
  if (len == 0 && o->ids && o->ids->has_bos && o->ids->bos_id < V) return tsl_token_vec_sink(v, &o->ids->bos_id, 1);
  if (!o->tokenizer) {
    if (V > 256)
      return tsl_error(TESSEL_E_CONFIG, "this model has a vocabulary of %d tokens and no tokenizer to turn them into "
                       "text (its checkpoint stores none: give tessel sample --tokenizer FILE)", V);
    const char *bytes = len ? o->prompt : "\n";
    long bad = tsl_prompt_byte_outside(bytes, V);
    if (bad >= 0)
      return tsl_error(TESSEL_E_CONFIG, "the prompt's byte %ld (0x%02X) is not in this byte-level model's "
                       "vocabulary of %d tokens: it never saw that byte", bad, (unsigned)(unsigned char)bytes[bad], V);
    tsl_status st = TESSEL_OK;
    for (size_t i = 0; bytes[i] && st >= 0; i++) {
      int32_t b = (unsigned char)bytes[i];
      st = tsl_token_vec_sink(v, &b, 1);
    }
    return st;
  }
  int n = tsl_tokenizer_vocab_size(o->tokenizer), eot = tsl_tokenizer_eot(o->tokenizer);
  if (n > V)
    return tsl_error(TESSEL_E_CONFIG, "the tokenizer %s has %d tokens, but the model's vocabulary is %d",
                     tsl_tokenizer_name(o->tokenizer), n, V);
  tsl_status st = tsl_tokenizer_encode(o->tokenizer, o->prompt, len, TSL_TOK_ADDED, tsl_token_vec_sink, v);
  if (st < 0 || v->n > 0) return st;
  if (eot < 0) return tsl_error(TESSEL_E_CONFIG, "an empty prompt needs a beginning- or end-of-text token, and %s "
                                "has neither", tsl_tokenizer_name(o->tokenizer));
  return tsl_token_vec_sink(v, &eot, 1);
}

/* Whether a stop string ends inside the last `added` bytes of the text so
** far (text[0, len): the prompt, then what was generated): the token that
** brought them in ends generation, as transformers' StopStringCriteria
** ends it, a stop string that begins in the prompt too. */
static int stop_string_ends(const tsl_sample_opts *o, const char *text, size_t len, size_t added) {
  for (int i = 0; i < o->n_stop; i++) {
    size_t n = strlen(o->stop[i]);
    if (n == 0 || n > len) continue;
    size_t first = len - added + 1 > n ? len - added + 1 - n : 0; /* starts whose end passes len - added */
    for (size_t at = first; at + n <= len; at++)
      if (memcmp(text + at, o->stop[i], n) == 0) return 1;
  }
  return 0;
}

/* The bytes token tok stands for: its text in the tokenizer, or the byte
** itself (in *byte) in a byte-level vocabulary. */
static const unsigned char *token_bytes(const tsl_sample_opts *o, int32_t tok, unsigned char *byte, size_t *n) {
  const char *s = o->tokenizer ? tsl_tokenizer_token(o->tokenizer, tok, n) : NULL;
  if (s) return (const unsigned char *)s;
  *byte = (unsigned char)(tok & 0xff);
  *n = 1;
  return byte;
}

/* Append n bytes to the text generated so far (grown as needed). */
static tsl_status remember(char **text, size_t *len, size_t *cap, const unsigned char *b, size_t n) {
  if (*len + n > *cap) {
    size_t want = TSL_MAX(*cap * 2, *len + n + 256);
    char *grown = realloc(*text, want);
    if (!grown) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the generated text");
    *text = grown;
    *cap = want;
  }
  memcpy(*text + *len, b, n);
  *len += n;
  return TESSEL_OK;
}

/* Write text (the prompt, or a generated token): its bytes exactly, except
** on a terminal, where a control byte other than newline and tab is shown
** as \xNN. A model early in training draws any byte, and ESC, BEL or CR
** written raw would move the cursor, retitle or reset the user's terminal
** (llm.c skips such tokens when it prints); a prompt file may hold them too. */
static void emit(const unsigned char *b, size_t n, int terminal, FILE *out) {
  for (size_t i = 0; i < n; i++) {
    if (terminal && ((b[i] < 0x20 && b[i] != '\n' && b[i] != '\t') || b[i] == 0x7f)) fprintf(out, "\\x%02x", b[i]);
    else fputc(b[i], out);
  }
  fflush(out); /* stream: each token shows as it is drawn */
}

/* Write a drawn token: through the tokenizer's decoder (dec) as the text
** tokenizers would decode, U+FFFD for bytes that are not UTF-8, a
** character cut across tokens held back until the next completes it (b
** NULL: the end, what is held back); or, without a tokenizer, its byte as
** it is. */
static tsl_status emit_token(tsl_tokenizer_decoder *dec, int32_t tok, const unsigned char *b, size_t n, int terminal,
                             FILE *out) {
  const char *text;
  if (dec) {
    tsl_status st = b ? tsl_tokenizer_decode_next(dec, tok, &text, &n) : tsl_tokenizer_decode_end(dec, &text, &n);
    if (st < 0) return st;
    b = (const unsigned char *)text;
  }
  emit(b, n, terminal, out);
  return TESSEL_OK;
}

/* Write the prompt: with a tokenizer, its ids through the decoder that
** then decodes the drawn tokens, so that the whole text is tokenizers'
** decode(prompt ids + drawn ids) (UTF-8 always, --skip-special applied to
** the prompt's own special tokens, a character split across the two
** joined); byte-level, its bytes as written. */
static tsl_status emit_prompt(const tsl_sample_opts *o, const tsl_token_vec *prompt, tsl_tokenizer_decoder *dec,
                              int terminal, FILE *out) {
  if (!o->tokenizer) {
    emit((const unsigned char *)o->prompt, strlen(o->prompt), terminal, out);
    return TESSEL_OK;
  }
  for (size_t i = 0; i < prompt->n; i++) {
    const char *text;
    size_t n;
    tsl_status st = tsl_tokenizer_decode_next(dec, prompt->ids[i], &text, &n);
    if (st < 0) return st;
    emit((const unsigned char *)text, n, terminal, out);
  }
  return TESSEL_OK;
}

tsl_status tsl_sample(const tsl_settings *given, tsl_tensor_fn src, void *src_ctx, const tsl_sample_opts *o,
                      FILE *out) {
  tsl_status st;
  tsl_runtime rt;
  tsl_model *m = NULL;
  float *whole = NULL, *row = NULL, *scratch = NULL;
  uint8_t *seen = NULL; /* [V]: tokens of the text so far, for the repetition penalty */
  char *text = NULL;    /* the prompt and the generated text, for the stop strings */
  size_t text_len = 0, text_cap = 0;
  int V = given->model.vocab_size, terminal = isatty(fileno(out));
  /* a vocabulary padded past its tokenizer (Qwen2's 151936 rows for 151665
  ** tokens, or a GPT-2 made 50304 wide): the rows past the tokenizer have
  ** no text and are never drawn */
  int drawable = o->tokenizer ? tsl_tokenizer_vocab_size(o->tokenizer) : V;
  tsl_token_vec prompt = {0};
  tsl_tokenizer_decoder dec = {0}; /* the text of the tokens drawn, after the prompt as written */
  int32_t stops[TSL_CKPT_MAX_EOS];
  int n_stops = stop_ids(o, stops);
  if ((st = prompt_ids(o, V, &prompt)) < 0) {
    tsl_token_vec_free(&prompt);
    return st;
  }
  if (o->tokenizer) tsl_tokenizer_decode_begin(&dec, o->tokenizer, o->skip_special ? TSL_DECODE_SKIP_SPECIAL : 0);
  /* the model sees as much of the text as it is made for (model.positions),
  ** not only the seq_len it trained at: the last `positions` tokens, a
  ** window that slides once the text is longer (GPT-2 has no position past
  ** its table; transformers would run a Llama on, beyond what it was made
  ** for). And its cache of keys and values holds the longest context this
  ** sample reaches, not all of that: an imported Llama 3 is made for 131072
  ** positions */
  tsl_settings copy = *given;
  const tsl_settings *s = &copy;
  int64_t reach = (int64_t)prompt.n + o->tokens - 1;
  copy.model.seq_len = (int)TSL_MAX(1, TSL_MIN((int64_t)given->model.positions, reach));
  context ctx = {.window = s->model.seq_len};
  TSL_TRY(st, tsl_runtime_local(&rt, s, o->threads));
  rt.inference = 1; /* the weights alone, without gradients and optimizer moments */
  tessel_model_dims dims;
  tsl_model_dims_single(&rt, &dims);
  TSL_TRY(st, tsl_model_create(&rt, &dims, NULL, &m)); /* every parameter is scattered below */
  TSL_TRY(st, tsl_model_decode_open(m));
  const tsl_params *ps = tsl_model_params(m);
  uint64_t most = 0;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, ps->p[i].local_numel);
  whole = malloc(most * sizeof(float));
  row = malloc((size_t)V * sizeof(float));
  scratch = malloc((size_t)V * sizeof(float));
  seen = calloc((size_t)V, 1);
  ctx.cap = (int64_t)prompt.n + o->tokens + 1;
  ctx.tokens = malloc(sizeof(int32_t) * (size_t)ctx.cap);
  if (!whole || !row || !scratch || !seen || !ctx.tokens) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory for sampling");
    goto fail;
  }
  for (int i = 0; i < ps->n; i++) {
    TSL_TRY(st, src(src_ctx, &ps->p[i], whole));
    TSL_TRY(st, tsl_scatter_state(m, i, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, whole));
  }
  for (size_t i = 0; i < prompt.n; i++) seen[ctx.tokens[ctx.len++] = prompt.ids[i]] = 1;
  if (o->n_stop > 0) TSL_TRY(st, remember(&text, &text_len, &text_cap, (const unsigned char *)o->prompt, strlen(o->prompt)));
  for (int k = 0; k < o->tokens; k++) {
    const void *logits;
    TSL_TRY(st, next_logits(m, &ctx, &logits));
    TSL_TRY(st, tsl_mem_copy(&rt.ledger, TESSEL_TIER_HOST, row, 0, TESSEL_TIER_DEVICE, logits, 0,
                             (uint64_t)V * sizeof(float), NULL));
    for (int v = 0; v < V; v++)
      if (!isfinite(row[v])) {
        st = tsl_error(TESSEL_E_NUMERIC, "the model's logit for token %d is %g at generated token %d: its weights "
                       "hold NaN or Inf, or values so large that the logits overflow, so there is nothing to sample "
                       "(a run that diverged, or a model imported that way)", v,
                       (double)row[v], k);
        goto fail;
      }
    if (o->repetition_penalty > 0 && o->repetition_penalty != 1) tsl_sample_penalize(row, V, seen, o->repetition_penalty);
    double u = (double)(tsl_mix64(o->seed ^ tsl_mix64((uint64_t)k)) >> 11) / 9007199254740992.0;
    int tok = tsl_sample_draw(row, scratch, drawable, o->temperature, o->top_k, o->top_p, u), stop = 0;
    if (k == 0) TSL_TRY(st, emit_prompt(o, &prompt, &dec, terminal, out));
    for (int i = 0; i < n_stops; i++) stop |= tok == stops[i];
    if (stop) {
      tsl_info("generation ends at the end-of-text token %d, after %d of %d tokens", tok, k, o->tokens);
      break;
    }
    seen[ctx.tokens[ctx.len++] = tok] = 1;
    unsigned char byte;
    size_t n;
    const unsigned char *b = token_bytes(o, tok, &byte, &n);
    TSL_TRY(st, emit_token(o->tokenizer ? &dec : NULL, tok, b, n, terminal, out));
    if (o->n_stop == 0) continue;
    TSL_TRY(st, remember(&text, &text_len, &text_cap, b, n));
    if (stop_string_ends(o, text, text_len, n)) {
      tsl_info("generation ends at a stop string, after %d of %d tokens", k + 1, o->tokens);
      break;
    }
  }
  /* the prompt only once a token is drawn: a refusal leaves out untouched */
  if (o->tokens == 0) TSL_TRY(st, emit_prompt(o, &prompt, &dec, terminal, out));
  if (o->tokenizer) TSL_TRY(st, emit_token(&dec, -1, NULL, 0, terminal, out));
  fputc('\n', out);
fail:
  tsl_tokenizer_decode_free(&dec);
  free(whole);
  free(row);
  free(scratch);
  free(seen);
  free(text);
  free(ctx.tokens);
  tsl_token_vec_free(&prompt);
  tsl_runtime_destroy(&rt); /* the model too */
  return st;
}
