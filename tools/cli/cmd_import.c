/* tools/cli/cmd_import.c — `tessel import HF_DIR -o CKPT_DIR`. */
#include <stdio.h>

#include "ckpt/import.h"
#include "cli/cli.h"

static int import_cmd(int argc, char **argv);

const tsl_command tsl_cmd_import = {
    "import", "turn a Hugging Face GPT-2, Llama, Mistral, Qwen2, Qwen3 or Phi-3 model directory into a tessel checkpoint",
    "usage: tessel import HF_DIR -o CKPT_DIR\n\n"
    "Reads a Hugging Face model directory as save_pretrained writes it — config.json and model.safetensors\n"
    "(or model.safetensors.index.json and its shards) of a GPT2LMHeadModel, LlamaForCausalLM,\n"
    "MistralForCausalLM, Qwen2ForCausalLM (a Llama with q, k and v biases: model.qkv_bias),\n"
    "Qwen3ForCausalLM (a Llama with norms over each head of q and k: model.qk_norm) or Phi3ForCausalLM\n"
    "(a Llama with q, k, v and gate, up fused, unfused on import; model.rotary_dim), with\n"
    "rope_scaling llama3, yarn, linear, longrope or dynamic, in F32, BF16 or F16 — checks every tensor\n"
    "against the config, and writes CKPT_DIR, a new tessel checkpoint (fp32 weights, no optimizer\n"
    "moments, step 0).\n"
    "A run starts from it with `model.init_from: CKPT_DIR` (model.init_from also takes HF_DIR itself)\n"
    "and a model section like CKPT_DIR/config.yaml's. A Mistral's or Phi-3's sliding_window shorter\n"
    "than its max_position_embeddings is its model.sliding_window; a Qwen2 or Qwen3 whose later layers\n"
    "attend in a sliding window is taken as made for sliding_window positions, where no layer's\n"
    "window binds. Options tessel's models do not compute (other rope types, other biases in a Llama,\n"
    "another activation) are refused by name. CKPT_DIR must not exist; nothing is left there when the\n"
    "import fails.\n\n"
    "  -o, --out DIR   the checkpoint directory to create\n",
    import_cmd, (const tsl_options *const[]){&tsl_out_options, NULL}};

static int import_cmd(int argc, char **argv) {
  const char *hf, *out;
  int rc = tsl_parse_arg_out(&tsl_cmd_import, argc, argv, "Hugging Face model directory", &hf, &out);
  if (rc) return rc;
  tsl_status st = tsl_import_hf(hf, out);
  if (st < 0) return tsl_fail(st);
  printf("wrote %s\n", out);
  return TSL_EXIT_OK;
}
