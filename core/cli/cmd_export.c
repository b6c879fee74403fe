/* core/cli/cmd_export.c — `tessel export CKPT -o FILE`. */
#include <getopt.h>
#include <stdio.h>

#include "ckpt/export.h"
#include "cli/cli.h"

static int export_cmd(int argc, char **argv);

const tsl_command tsl_cmd_export = {
    "export", "write a checkpoint as a Hugging Face model (safetensors + config.json)",
    "usage: tessel export CKPT_DIR -o FILE.safetensors\n\n"
    "Writes the checkpoint's model as one fp32 safetensors file in Hugging Face layout and config.json in the\n"
    "same directory, so that transformers' from_pretrained(DIR) loads it: a GPT-2 as GPT2LMHeadModel\n"
    "(transformer.* names, Conv1D [in, out] weights, LM head tied to wte), a Llama as LlamaForCausalLM\n"
    "(nn.Linear [out, in] weights). `tessel import DIR -o CKPT` reads it back.\n\n"
    "  -o, --out FILE   the safetensors file to write\n",
    export_cmd};

static int export_cmd(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'}, {0, 0, 0, 0}};
  const char *out = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
    if (c == 'o') out = optarg;
    else return tsl_usage_error(&tsl_cmd_export, "bad option");
  }
  if (!out) return tsl_usage_error(&tsl_cmd_export, "missing -o FILE");
  if (optind != argc - 1) return tsl_usage_error(&tsl_cmd_export, "expected one checkpoint directory");
  tsl_status st = tsl_export_hf(argv[optind], out);
  if (st < 0) return tsl_fail(st);
  printf("wrote %s (and config.json beside it)\n", out);
  return TSL_EXIT_OK;
}
