/*
** core/model/decode.c — generation with a cache of keys and values.
**
** A decode step runs the model over the n tokens that follow the ones
** already seen (the prompt, then one drawn token at a time): the geometry
** shrinks to those n rows while the step runs, the embedding reads the
** position rows past .. past + n − 1, rotary turns by those positions, each
** block's attention appends its n new keys and values to the block's cache
** and attends over everything cached, and the head makes the logits of the
** last row alone. So a drawn token costs one row through the model, not
** the whole context again, and the head one row of logits, not one per
** position (bench/README.md: GPT-2 124M, 24 ms a token where it took 225,
** at contexts of 65 to 192 positions).
**
** Decoding is for one sequence of an inference model (tsl_runtime.inference)
** without a strategy, on a backend whose attention takes a past
** (tsl_backend.attention_past: the CPU's, which `tessel sample` runs on):
** the cache holds every block, on one rank.
**
** A LongRoPE model decodes as transformers' Phi3ForCausalLM generates
** (prepare_inputs_for_generation): the step whose sequence first passes
** the original context drops the cache, whose keys turned by the short
** factors, and runs the whole sequence again, every position now turned by
** the long ones; so the cache keeps the tokens it holds.
*/
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/internal.h"

struct tsl_kv_cache {
  void **k, **v;          /* [units]: a block's [cap, width] keys and values; NULL elsewhere */
  int32_t *tokens;        /* [cap]: the tokens whose keys and values the cache holds */
  int64_t *width;         /* [units]: elements per cached row (kv heads × head size) */
  int64_t cap, past;      /* rows per block; positions in the cache */
  int on;                 /* a step is running: the ops read and append the cache */
};

static const tsl_op_decl *attention_op(const tsl_unit_decl *d) {
  for (int k = 0; k < d->n_ops; k++)
    if (d->ops[k].kind == TESSEL_OP_ATTENTION) return &d->ops[k];
  return NULL;
}

void tsl_decode_free(tsl_model *m) {
  tsl_kv_cache *c = m->kv;
  if (!c) return;
  for (int u = 0; u < m->dims.units; u++) {
    if (c->k && c->k[u]) tsl_mem_free(&m->rt->ledger, TESSEL_TIER_DEVICE, c->k[u]);
    if (c->v && c->v[u]) tsl_mem_free(&m->rt->ledger, TESSEL_TIER_DEVICE, c->v[u]);
  }
  free(c->k), free(c->v), free(c->width), free(c->tokens);
  free(c);
  m->kv = NULL;
}

tsl_status tsl_model_decode_open(tsl_model *m) {
  tsl_status st = TESSEL_OK;
  if (m->kv) return TESSEL_OK;
  if (!m->rt->inference || m->rt->plugin || m->dims.micro_batch != 1 || m->geo.unit_first != 0 ||
      m->geo.unit_last != m->dims.units - 1 || !m->rt->be.attention_past)
    return tsl_error(TESSEL_E_INTERNAL, "decoding is for one sequence of an inference model on one rank, on a "
                     "backend whose attention takes a key/value cache (%s: %s)", m->rt->be.name,
                     m->rt->be.attention_past ? "yes" : "no");
  int units = m->dims.units;
  tsl_kv_cache *c = m->kv = calloc(1, sizeof *c);
  if (!c || !(c->k = calloc((size_t)units, sizeof *c->k)) || !(c->v = calloc((size_t)units, sizeof *c->v)) ||
      !(c->width = calloc((size_t)units, sizeof *c->width)) ||
      !(c->tokens = calloc((size_t)m->dims.seq_len, sizeof *c->tokens))) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory for the key/value cache");
    goto fail;
  }
  c->cap = m->dims.seq_len;
  uint64_t es = tessel_dtype_size(m->dims.act_dtype);
  for (int u = 0; u < units; u++) {
    const tsl_unit_decl *d = m->units[u].decl;
    const tsl_op_decl *od = attention_op(d);
    if (!od) continue;
    c->width[u] = tsl_act_width(m, d, od->in[1]);
    if (tsl_act_width(m, d, od->in[2]) != c->width[u]) {
      st = tsl_error(TESSEL_E_INTERNAL, "unit %d: keys and values of different widths", u);
      goto fail;
    }
    uint64_t bytes = (uint64_t)c->cap * (uint64_t)c->width[u] * es;
    TSL_TRY(st, tsl_mem_alloc(&m->rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, bytes, "key cache", &c->k[u]));
    TSL_TRY(st, tsl_mem_alloc(&m->rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, bytes, "value cache", &c->v[u]));
  }
  return TESSEL_OK;
fail:
  tsl_decode_free(m);
  return st;
}

int64_t tsl_model_decode_room(const tsl_model *m) { return m->kv ? m->kv->cap - m->kv->past : 0; }

void tsl_model_decode_reset(tsl_model *m) {
  if (m->kv) m->kv->past = 0;
}

int64_t tsl_decode_past(const tsl_model *m) { return m->kv && m->kv->on ? m->kv->past : 0; }

int tsl_decoding(const tsl_model *m) { return m->kv && m->kv->on; }

/* Rows [past, past + n) of a block's cache from n rows ld elements apart. */
static tsl_status append(tsl_model *m, void *cache, int64_t width, const void *rows, int64_t ld, int64_t n) {
  tsl_backend *be = &m->rt->be;
  uint64_t es = tessel_dtype_size(m->dims.act_dtype), row = (uint64_t)width * es;
  for (int64_t t = 0; t < n; t++) {
    int rc = be->copy(be, (char *)cache + (uint64_t)(m->kv->past + t) * row, (const char *)rows + (uint64_t)(t * ld) * es,
                      row, TSL_COPY_D2D, m->rt->compute);
    if (rc < 0) return tsl_error_wrap(rc, "appending to the key/value cache");
  }
  return TESSEL_OK;
}

tsl_status tsl_decode_attention(tsl_model *m, int unit, const tessel_attention_args *a) {
  tsl_status st;
  tsl_kv_cache *c = m->kv;
  tsl_backend *be = &m->rt->be;
  int64_t w = c->width[unit];
  TSL_TRY(st, append(m, c->k[unit], w, a->k, a->ldk, a->seq));
  TSL_TRY(st, append(m, c->v[unit], w, a->v, a->ldv, a->seq));
  tsl_attn_shape sh = {a->batch, a->seq, a->heads, a->kv_heads, a->head_size, a->ldq, w, w, c->past, c->cap,
                       a->window};
  int rc = be->attention_forward(be, m->rt->compute, a->out, NULL, a->q, c->k[unit], c->v[unit], &sh);
  return rc < 0 ? tsl_error_wrap(rc, "attention over the key/value cache") : TESSEL_OK;
fail:
  return st;
}

/* Whether decoding n tokens after `past` passes LongRoPE's original context
** for the first time, with keys of the short factors in the cache. */
static int longrope_switch(const tsl_model *m, int64_t past, int64_t n) {
  const tsl_rope_freqs *f = &m->arch.rope;
  return f->factor > 0 && f->kind == TSL_ROPE_LONGROPE && past > 0 && past <= f->original_positions &&
         past + n > f->original_positions;
}

tsl_status tsl_model_decode(tsl_model *m, const int32_t *tokens, int64_t n, const void **logits) {
  tsl_status st = TESSEL_OK;
  tsl_kv_cache *c = m->kv;
  if (!c || n < 1 || c->past + n > c->cap)
    return tsl_error(TESSEL_E_INTERNAL, "decoding %lld tokens after %lld of %lld positions", (long long)n,
                     c ? (long long)c->past : 0LL, c ? (long long)c->cap : 0LL);
  memcpy(c->tokens + c->past, tokens, (size_t)n * sizeof *tokens);
  if (longrope_switch(m, c->past, n)) {
    tokens = c->tokens;
    n += c->past;
    c->past = 0;
  }
  tsl_slot *s = &m->slots[0];
  TSL_TRY(st, tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, s->tokens, 0, TESSEL_TIER_HOST, tokens, 0,
                           (uint64_t)n * sizeof(int32_t), m->rt->compute));
  /* the tokens are this step's batch: the model does not ask its source */
  s->loaded_step = ++m->step_serial;
  s->loaded_micro = 0;
  m->training = 0;
  int seq = m->dims.seq_len;
  int64_t rows = m->geo.rows, inner = m->geo.inner_rows;
  m->dims.seq_len = (int)n;
  m->geo.rows = m->geo.inner_rows = n;
  c->on = 1;
  for (int u = 0; u < m->dims.units && st >= 0; u++) st = tsl_model_forward(m, 0, 0, u);
  c->on = 0;
  m->dims.seq_len = seq;
  m->geo.rows = rows, m->geo.inner_rows = inner;
  if (st < 0) {
    c->past = 0; /* some blocks appended, others not */
    return st;
  }
  c->past += n;
  *logits = m->logits;
  return TESSEL_OK;
fail:
  return st;
}
