/* tools/cli/cmd_import.c — `tessel import HF_DIR -o CKPT_DIR`. */
#include <stdio.h>

#include "ckpt/import.h"
#include "cli/cli.h"

static int import_cmd(int argc, char **argv);

const tsl_command tsl_cmd_import = {
    "import", "turn a Hugging Face GPT-2, Llama, Mistral, Qwen2 or Qwen3 model directory into a tessel checkpoint",
    "usage: tessel import HF_DIR -o CKPT_DIR\n\n"
    "Reads a Hugging Face model directory as save_pretrained writes it — config.json and model.safetensors\n"
    "(or model.safetensors.index.json and its shards) of a GPT2LMHeadModel, LlamaForCausalLM (Llama\n"
    "3.1/3.2's rope_scaling llama3 too), MistralForCausalLM, Qwen2ForCausalLM (a Llama with q, k and\n"
    "v biases: model.qkv_bias) or Qwen3ForCausalLM (a Llama with norms over each head of q and k:\n"
    "model.qk_norm), in F32, BF16 or F16 — checks every tensor against the config, and writes\n"
    "CKPT_DIR, a new tessel checkpoint (fp32 weights, no optimizer moments, step 0). A run starts from it\n"
    "with `model.init_from: CKPT_DIR` (model.init_from also takes HF_DIR itself) and a model section like\n"
    "CKPT_DIR/config.yaml's. A Mistral (or windowed Qwen2 or Qwen3) whose sliding_window is shorter than its\n"
    "max_position_embeddings is taken as made for sliding_window positions. Options tessel's models do\n"
    "not compute (rope types other than llama3, other biases in a Llama, another activation) are refused\n"
    "by name. CKPT_DIR must not exist; nothing is left there when the import fails.\n\n"
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
