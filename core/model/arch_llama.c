/* core/model/arch_llama.c — the Llama family as data (Hugging Face
** LlamaForCausalLM names: Llama 2/3, Mistral, Qwen2-style, SmolLM, TinyLlama).
**
**   embedding  h = embed_tokens[tokens]                    (no position table)
**   block      a = x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))),
**                  n = input_layernorm(x)                  (RMS norm, GQA)
**              (q_proj, k_proj and v_proj with biases under qkv_bias, as Qwen2's;
**              under qk_norm, as Qwen3's, an RMS norm over each head of q and
**              of k between the projections and rotary: q_norm, k_norm)
**              y = a + down_proj(silu(gate_proj(m)) · up_proj(m)),
**                  m = post_attention_layernorm(a)
**   head       logits = norm(x) · lm_headᵀ (untied unless tie_embeddings)
** Weights are stored [in, out]; Hugging Face's nn.Linear keeps [out, in], so
** checkpoints and exports transpose them. Every weight starts N(0, 0.02),
** as transformers initialises LlamaForCausalLM. */
#include <string.h>

#include "model/arch.h"

enum { B_IN_NORM, B_Q, B_K, B_V, B_O, B_POST_NORM, B_GATE, B_UP, B_DOWN };
enum { O_Q = 1 }; /* the q linear's place in the block's ops, k's and v's after it */
enum { A_N1 = 2, A_Q, A_K, A_V, A_ATTY, A_O, A_RES, A_N2, A_GATE, A_UP, A_H, A_DOWN };

#define NORM_P(n) {n, TESSEL_ROLE_NORM, 1, {TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_ONE}
#define LIN_IN(n, out) {n, TESSEL_ROLE_LINEAR_IN, 2, {TESSEL_DIM_HIDDEN, out}, 0, {0}, TSL_INIT_NORMAL}
#define LIN_OUT(n, in) {n, TESSEL_ROLE_LINEAR_OUT, 2, {in, TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_NORMAL}
#define ACT(n, rows, col) {n, rows, 1, {col}, -1, 0, 0}
#define STREAM(n) {n, TSL_ROWS_RESID, 1, {TESSEL_DIM_HIDDEN}, -1, 0, 1}
#define OP(k, v, w, b, i0, i1, i2, o0, o1) {k, v, w, b, {i0, i1, i2}, {o0, o1}}

static const tsl_unit_decl embed = {
    .kind = TESSEL_UNIT_EMBEDDING,
    .n_params = 1,
    .params = {{"model.embed_tokens.weight", TESSEL_ROLE_EMBEDDING, 2, {TESSEL_DIM_VOCAB, TESSEL_DIM_HIDDEN}, 0, {0},
                TSL_INIT_NORMAL}},
    .n_acts = 2,
    .acts = {STREAM("input"), STREAM("embedding")},
    .n_ops = 1,
    .ops = {OP(TESSEL_OP_EMBEDDING, 0, 0, -1, -1, -1, -1, TSL_ACT_OUT, -1)},
};

static const tsl_unit_decl block = {
    .kind = TESSEL_UNIT_BLOCK,
    .n_params = 9,
    .params =
        {
            NORM_P("model.layers.%d.input_layernorm.weight"),
            LIN_IN("model.layers.%d.self_attn.q_proj.weight", TESSEL_DIM_HEADS),
            LIN_IN("model.layers.%d.self_attn.k_proj.weight", TESSEL_DIM_KV_HEADS),
            LIN_IN("model.layers.%d.self_attn.v_proj.weight", TESSEL_DIM_KV_HEADS),
            LIN_OUT("model.layers.%d.self_attn.o_proj.weight", TESSEL_DIM_HEADS),
            NORM_P("model.layers.%d.post_attention_layernorm.weight"),
            LIN_IN("model.layers.%d.mlp.gate_proj.weight", TESSEL_DIM_FFN),
            LIN_IN("model.layers.%d.mlp.up_proj.weight", TESSEL_DIM_FFN),
            LIN_OUT("model.layers.%d.mlp.down_proj.weight", TESSEL_DIM_FFN),
        },
    .n_acts = 14,
    .acts =
        {
            STREAM("input"),
            STREAM("output"),
            ACT("input_layernorm", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            ACT("q", TSL_ROWS_INNER, TESSEL_DIM_HEADS),
            ACT("k", TSL_ROWS_INNER, TESSEL_DIM_KV_HEADS),
            ACT("v", TSL_ROWS_INNER, TESSEL_DIM_KV_HEADS),
            ACT("attention", TSL_ROWS_INNER, TESSEL_DIM_HEADS),
            ACT("o_proj", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            STREAM("residual"),
            ACT("post_attention_layernorm", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            ACT("gate", TSL_ROWS_INNER, TESSEL_DIM_FFN),
            ACT("up", TSL_ROWS_INNER, TESSEL_DIM_FFN),
            ACT("swiglu", TSL_ROWS_INNER, TESSEL_DIM_FFN),
            ACT("down_proj", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
        },
    .n_ops = 14,
    .ops =
        {
            OP(TESSEL_OP_NORM, TESSEL_NORM_RMS, B_IN_NORM, -1, TSL_ACT_IN, -1, -1, A_N1, -1),
            OP(TESSEL_OP_LINEAR, 0, B_Q, -1, A_N1, -1, -1, A_Q, -1),
            OP(TESSEL_OP_LINEAR, 0, B_K, -1, A_N1, -1, -1, A_K, -1),
            OP(TESSEL_OP_LINEAR, 0, B_V, -1, A_N1, -1, -1, A_V, -1),
            OP(TESSEL_OP_ROTARY, 0, -1, -1, A_Q, A_K, -1, A_Q, A_K),
            OP(TESSEL_OP_ATTENTION, 0, -1, -1, A_Q, A_K, A_V, A_ATTY, -1),
            OP(TESSEL_OP_LINEAR, 0, B_O, -1, A_ATTY, -1, -1, A_O, -1),
            OP(TESSEL_OP_RESIDUAL, 0, -1, -1, TSL_ACT_IN, A_O, -1, A_RES, -1),
            OP(TESSEL_OP_NORM, TESSEL_NORM_RMS, B_POST_NORM, -1, A_RES, -1, -1, A_N2, -1),
            OP(TESSEL_OP_LINEAR, 0, B_GATE, -1, A_N2, -1, -1, A_GATE, -1),
            OP(TESSEL_OP_LINEAR, 0, B_UP, -1, A_N2, -1, -1, A_UP, -1),
            OP(TESSEL_OP_ACTIVATION, TESSEL_ACT_SWIGLU, -1, -1, A_GATE, A_UP, -1, A_H, -1),
            OP(TESSEL_OP_LINEAR, 0, B_DOWN, -1, A_H, -1, -1, A_DOWN, -1),
            OP(TESSEL_OP_RESIDUAL, 0, -1, -1, A_RES, A_DOWN, -1, TSL_ACT_OUT, -1),
        },
};

static const tsl_unit_decl head_untied = {
    .kind = TESSEL_UNIT_HEAD,
    .n_params = 2,
    .params = {NORM_P("model.norm.weight"),
               {"lm_head.weight", TESSEL_ROLE_HEAD, 2, {TESSEL_DIM_VOCAB, TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_NORMAL}},
    .n_acts = 3,
    .acts = {STREAM("input"), STREAM("output"), ACT("norm", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN)},
    .n_ops = 2,
    .ops =
        {
            OP(TESSEL_OP_NORM, TESSEL_NORM_RMS, 0, -1, TSL_ACT_IN, -1, -1, 2, -1),
            OP(TESSEL_OP_HEAD, 0, 1, -1, 2, -1, -1, -1, -1),
        },
};

/* Qwen2's biases on the query, key and value projections (qkv_bias),
** zero at the start as transformers initialises them. */
static const tsl_param_decl qkv_biases[3] = {
    {"model.layers.%d.self_attn.q_proj.bias", TESSEL_ROLE_BIAS_IN, 1, {TESSEL_DIM_HEADS}, 0, {0}, TSL_INIT_ZERO},
    {"model.layers.%d.self_attn.k_proj.bias", TESSEL_ROLE_BIAS_IN, 1, {TESSEL_DIM_KV_HEADS}, 0, {0}, TSL_INIT_ZERO},
    {"model.layers.%d.self_attn.v_proj.bias", TESSEL_ROLE_BIAS_IN, 1, {TESSEL_DIM_KV_HEADS}, 0, {0}, TSL_INIT_ZERO},
};

/* Qwen3's norms over each head of q and k (qk_norm), one weight of
** HEAD_SIZE for all heads, starting at 1 as transformers' RMSNorm does. */
static const tsl_param_decl qk_norms[2] = {
    {"model.layers.%d.self_attn.q_norm.weight", TESSEL_ROLE_HEAD_NORM, 1, {TESSEL_DIM_HEAD_SIZE}, 0, {0}, TSL_INIT_ONE},
    {"model.layers.%d.self_attn.k_norm.weight", TESSEL_ROLE_HEAD_NORM, 1, {TESSEL_DIM_HEAD_SIZE}, 0, {0}, TSL_INIT_ONE},
};

/* Put q_norm and k_norm between the projections and rotary: q_proj and
** k_proj write two new buffers, which the norms read into q and k. */
static void add_qk_norms(tsl_unit_decl *b) {
  static const tsl_act_decl raw[2] = {ACT("q_proj", TSL_ROWS_INNER, TESSEL_DIM_HEADS),
                                      ACT("k_proj", TSL_ROWS_INNER, TESSEL_DIM_KV_HEADS)};
  const int rotary = O_Q + 3;
  memmove(&b->ops[rotary + 2], &b->ops[rotary], (size_t)(b->n_ops - rotary) * sizeof b->ops[0]);
  b->n_ops += 2;
  for (int i = 0; i < 2; i++) {
    int normed = b->ops[O_Q + i].out[0];
    b->acts[b->n_acts] = raw[i];
    b->ops[O_Q + i].out[0] = b->n_acts;
    b->params[b->n_params] = qk_norms[i];
    b->ops[rotary + i] = (tsl_op_decl)OP(TESSEL_OP_NORM, TESSEL_NORM_RMS_HEADS, b->n_params, -1, b->n_acts, -1, -1,
                                         normed, -1);
    b->n_acts++;
    b->n_params++;
  }
}

void tsl_arch_llama(const tsl_settings *s, tsl_arch *out) {
  *out = (tsl_arch){.name = "llama", .embed = embed, .block = block, .head = head_untied,
                    .tied = s->model.tie_embeddings, .norm_eps = (float)s->model.norm_eps,
                    .rope = {.theta = (float)s->model.rope_theta,
                             .factor = s->model.rope_scaling.factor,
                             .low_freq_factor = s->model.rope_scaling.low_freq_factor,
                             .high_freq_factor = s->model.rope_scaling.high_freq_factor,
                             .original_positions = s->model.rope_scaling.original_positions,
                             .kind = s->model.rope_scaling.kind,
                             .beta_fast = s->model.rope_scaling.beta_fast,
                             .beta_slow = s->model.rope_scaling.beta_slow,
                             .attention_factor = s->model.rope_scaling.attention_factor,
                             /* the settings outlive the model (the runtime's own) */
                             .short_factor = s->model.rope_scaling.short_factor,
                             .long_factor = s->model.rope_scaling.long_factor,
                             .pairs = s->model.rope_scaling.pairs,
                             .rotary = s->model.rotary_dim},
                    .init_std = 0.02};
  if (out->tied) {
    out->head.n_params = 1;
    out->head.ops[1].weight = TSL_TIED_TABLE;
  }
  for (int i = 0; s->model.qkv_bias && i < 3; i++) { /* after the nine weights, on the q, k and v linears */
    out->block.params[out->block.n_params] = qkv_biases[i];
    out->block.ops[O_Q + i].bias = out->block.n_params++;
  }
  if (s->model.qk_norm) add_qk_norms(&out->block);
}
