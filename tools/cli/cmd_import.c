/* tools/cli/cmd_import.c — `tessel import HF_DIR -o CKPT_DIR`. */
#include <stdio.h>

#include "ckpt/import.h"
#include "cli/cli.h"

static int import_cmd(int argc, char **argv);

const tsl_command tsl_cmd_import = {
    "import", "turn a Hugging Face GPT-2, Llama or Mistral model directory into a tessel checkpoint",
    "usage: tessel import HF_DIR -o CKPT_DIR\n\n"
    "Reads a Hugging Face model directory as save_pretrained writes it — config.json and model.safetensors\n"
    "(or model.safetensors.index.json and its shards) of a GPT2LMHeadModel, LlamaForCausalLM (Llama\n"
    "3.1/3.2's rope_scaling llama3 too) or MistralForCausalLM, in F32, BF16 or F16 — checks every tensor\n"
    "against the config, and writes CKPT_DIR, a new tessel checkpoint (fp32 weights, zero AdamW moments,\n"
    "step 0). A run starts from it with `model.init_from: CKPT_DIR` (model.init_from also takes HF_DIR\n"
    "itself) and a model section like CKPT_DIR/config.yaml's. A Mistral whose sliding_window is shorter\n"
    "than its max_position_embeddings is taken as made for sliding_window positions. Options tessel's\n"
    "models do not compute (rope types other than llama3, biases in a Llama, another activation) are\n"
    "refused by name. CKPT_DIR must not exist; nothing is left there when the import fails.\n\n"
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
