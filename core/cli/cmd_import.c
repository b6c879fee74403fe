/* core/cli/cmd_import.c — `tessel import HF_DIR -o CKPT_DIR`. */
#include <getopt.h>
#include <stdio.h>

#include "ckpt/import.h"
#include "cli/cli.h"

static int import_cmd(int argc, char **argv);

const tsl_command tsl_cmd_import = {
    "import", "turn a Hugging Face GPT-2 or Llama model directory into a tessel checkpoint",
    "usage: tessel import HF_DIR -o CKPT_DIR\n\n"
    "Reads a Hugging Face model directory as save_pretrained writes it — config.json and model.safetensors\n"
    "(or model.safetensors.index.json and its shards) of a GPT2LMHeadModel or LlamaForCausalLM, in F32,\n"
    "BF16 or F16 — checks every tensor against the config, and writes CKPT_DIR, a new tessel checkpoint\n"
    "(fp32 weights, zero AdamW moments, step 0). A run starts from it with `model.init_from: CKPT_DIR`\n"
    "(model.init_from also takes HF_DIR itself) and a model section like CKPT_DIR/config.yaml's.\n"
    "Options tessel's models do not compute (rope_scaling, biases in a Llama, another activation) are\n"
    "refused by name. CKPT_DIR must not exist; nothing is left there when the import fails.\n\n"
    "  -o, --out DIR   the checkpoint directory to create\n",
    import_cmd};

static int import_cmd(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
  const char *out = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (c == 'o') out = optarg;
    else return tsl_usage_error(&tsl_cmd_import, "bad option");
  }
  if (!out) return tsl_usage_error(&tsl_cmd_import, "missing -o CKPT_DIR");
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_import, "expected one Hugging Face model directory");
  tsl_status st = tsl_import_hf(argv[optind], out);
  if (st < 0) return tsl_fail(st);
  printf("wrote %s\n", out);
  return TSL_EXIT_OK;
}
