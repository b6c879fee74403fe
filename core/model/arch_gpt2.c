/* core/model/arch_gpt2.c — GPT-2 as data (Hugging Face GPT2LMHeadModel names).
**
**   embedding  h = wte[tokens] + wpe[positions]
**   block      a = x + c_proj(attention(c_attn(ln_1(x))))       (fused q|k|v)
**              y = a + mlp.c_proj(gelu(mlp.c_fc(ln_2(a))))
**   head       logits = ln_f(x) · wteᵀ (tied), cross-entropy
** Weights are [in, out] like HF's Conv1D, so checkpoints need no transpose. */
#include "model/arch.h"

enum { B_LN1_W, B_LN1_B, B_QKV_W, B_QKV_B, B_PROJ_W, B_PROJ_B, B_LN2_W, B_LN2_B, B_FC_W, B_FC_B, B_FCP_W, B_FCP_B };
enum { A_LN1 = 2, A_QKV, A_Q, A_K, A_V, A_ATTY, A_ATTPROJ, A_RES2, A_LN2, A_FCH, A_GELU, A_FCPROJ };

#define NORM_P(n, init) {n, TESSEL_ROLE_NORM, 1, {TESSEL_DIM_HIDDEN}, 0, {0}, init}
#define QKV {TESSEL_DIM_HEADS, TESSEL_DIM_KV_HEADS, TESSEL_DIM_KV_HEADS}
#define ACT(n, rows, col) {n, rows, 1, {col}, -1, 0, 0}
#define VIEW(n, parent, run, col) {n, TSL_ROWS_INNER, 1, {col}, parent, run, 0}
#define STREAM(n) {n, TSL_ROWS_RESID, 1, {TESSEL_DIM_HIDDEN}, -1, 0, 1}
#define OP(k, v, w, b, i0, i1, i2, o0) {k, v, w, b, {i0, i1, i2}, {o0, -1}}

static const tsl_unit_decl embed = {
    .kind = TESSEL_UNIT_EMBEDDING,
    .n_params = 2,
    .params = {{"wte.weight", TESSEL_ROLE_EMBEDDING, 2, {TESSEL_DIM_VOCAB, TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_NORMAL},
               {"wpe.weight", TESSEL_ROLE_POSITIONS, 2, {TESSEL_DIM_POSITIONS, TESSEL_DIM_HIDDEN}, 0, {0},
                TSL_INIT_NORMAL}},
    .n_acts = 2,
    .acts = {STREAM("input"), STREAM("embedding")},
    .n_ops = 1,
    .ops = {OP(TESSEL_OP_EMBEDDING, 0, 0, 1, -1, -1, -1, TSL_ACT_OUT)},
};

static const tsl_unit_decl block = {
    .kind = TESSEL_UNIT_BLOCK,
    .n_params = 12,
    .params =
        {
            NORM_P("h.%d.ln_1.weight", TSL_INIT_ONE),
            NORM_P("h.%d.ln_1.bias", TSL_INIT_ZERO),
            {"h.%d.attn.c_attn.weight", TESSEL_ROLE_LINEAR_IN, 2, {TESSEL_DIM_HIDDEN}, 3, QKV, TSL_INIT_NORMAL},
            {"h.%d.attn.c_attn.bias", TESSEL_ROLE_BIAS_IN, 1, {0}, 3, QKV, TSL_INIT_ZERO},
            {"h.%d.attn.c_proj.weight", TESSEL_ROLE_LINEAR_OUT, 2, {TESSEL_DIM_HEADS, TESSEL_DIM_HIDDEN}, 0, {0},
             TSL_INIT_NORMAL_SCALED},
            {"h.%d.attn.c_proj.bias", TESSEL_ROLE_BIAS_OUT, 1, {TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_ZERO},
            NORM_P("h.%d.ln_2.weight", TSL_INIT_ONE),
            NORM_P("h.%d.ln_2.bias", TSL_INIT_ZERO),
            {"h.%d.mlp.c_fc.weight", TESSEL_ROLE_LINEAR_IN, 2, {TESSEL_DIM_HIDDEN, TESSEL_DIM_FFN}, 0, {0},
             TSL_INIT_NORMAL},
            {"h.%d.mlp.c_fc.bias", TESSEL_ROLE_BIAS_IN, 1, {TESSEL_DIM_FFN}, 0, {0}, TSL_INIT_ZERO},
            {"h.%d.mlp.c_proj.weight", TESSEL_ROLE_LINEAR_OUT, 2, {TESSEL_DIM_FFN, TESSEL_DIM_HIDDEN}, 0, {0},
             TSL_INIT_NORMAL_SCALED},
            {"h.%d.mlp.c_proj.bias", TESSEL_ROLE_BIAS_OUT, 1, {TESSEL_DIM_HIDDEN}, 0, {0}, TSL_INIT_ZERO},
        },
    .n_acts = 14,
    .acts =
        {
            STREAM("input"),
            STREAM("output"),
            ACT("ln_1", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            {"qkv", TSL_ROWS_INNER, 3, QKV, -1, 0, 0},
            VIEW("q", A_QKV, 0, TESSEL_DIM_HEADS),
            VIEW("k", A_QKV, 1, TESSEL_DIM_KV_HEADS),
            VIEW("v", A_QKV, 2, TESSEL_DIM_KV_HEADS),
            ACT("attention", TSL_ROWS_INNER, TESSEL_DIM_HEADS),
            ACT("attention projection", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            STREAM("residual"),
            ACT("ln_2", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
            ACT("fc", TSL_ROWS_INNER, TESSEL_DIM_FFN),
            ACT("gelu", TSL_ROWS_INNER, TESSEL_DIM_FFN),
            ACT("mlp projection", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN),
        },
    .n_ops = 10,
    .ops =
        {
            OP(TESSEL_OP_NORM, TESSEL_NORM_LAYER, B_LN1_W, B_LN1_B, TSL_ACT_IN, -1, -1, A_LN1),
            OP(TESSEL_OP_LINEAR, 0, B_QKV_W, B_QKV_B, A_LN1, -1, -1, A_QKV),
            OP(TESSEL_OP_ATTENTION, 0, -1, -1, A_Q, A_K, A_V, A_ATTY),
            OP(TESSEL_OP_LINEAR, 0, B_PROJ_W, B_PROJ_B, A_ATTY, -1, -1, A_ATTPROJ),
            OP(TESSEL_OP_RESIDUAL, 0, -1, -1, TSL_ACT_IN, A_ATTPROJ, -1, A_RES2),
            OP(TESSEL_OP_NORM, TESSEL_NORM_LAYER, B_LN2_W, B_LN2_B, A_RES2, -1, -1, A_LN2),
            OP(TESSEL_OP_LINEAR, 0, B_FC_W, B_FC_B, A_LN2, -1, -1, A_FCH),
            OP(TESSEL_OP_ACTIVATION, TESSEL_ACT_GELU, -1, -1, A_FCH, -1, -1, A_GELU),
            OP(TESSEL_OP_LINEAR, 0, B_FCP_W, B_FCP_B, A_GELU, -1, -1, A_FCPROJ),
            OP(TESSEL_OP_RESIDUAL, 0, -1, -1, A_RES2, A_FCPROJ, -1, TSL_ACT_OUT),
        },
};

static const tsl_unit_decl head = {
    .kind = TESSEL_UNIT_HEAD,
    .n_params = 2,
    .params = {NORM_P("ln_f.weight", TSL_INIT_ONE), NORM_P("ln_f.bias", TSL_INIT_ZERO)},
    .n_acts = 3,
    .acts = {STREAM("input"), STREAM("output"), ACT("ln_f", TSL_ROWS_RESID, TESSEL_DIM_HIDDEN)},
    .n_ops = 2,
    .ops =
        {
            OP(TESSEL_OP_NORM, TESSEL_NORM_LAYER, 0, 1, TSL_ACT_IN, -1, -1, 2),
            OP(TESSEL_OP_HEAD, 0, TSL_TIED_TABLE, -1, 2, -1, -1, -1),
        },
};

void tsl_arch_gpt2(const tsl_settings *s, tsl_arch *out) {
  *out = (tsl_arch){.name = "gpt2", .embed = embed, .block = block, .head = head, .tied = 1,
                    .norm_eps = (float)s->model.norm_eps, .init_std = 0.02};
}
