/* tools/cli/cmd_export.c — `tessel export CKPT -o DIR/model.safetensors`. */
#include <stdio.h>

#include "export/export.h"
#include "cli/cli.h"

static int export_cmd(int argc, char **argv);

const tsl_command tsl_cmd_export = {
    "export", "write a checkpoint as a Hugging Face model (safetensors + config.json)",
    "usage: tessel export CKPT_DIR -o DIR/model.safetensors\n\n"
    "Writes the checkpoint's model as one fp32 safetensors file in Hugging Face layout and config.json in the\n"
    "same directory, so that transformers' from_pretrained(DIR) loads it: a GPT-2 as GPT2LMHeadModel\n"
    "(transformer.* names, Conv1D [in, out] weights, LM head tied to wte), a Llama as LlamaForCausalLM\n"
    "(nn.Linear [out, in] weights), or as the class its options need: Qwen2ForCausalLM (qkv_bias),\n"
    "Qwen3ForCausalLM (qk_norm), MistralForCausalLM (sliding_window), Phi3ForCausalLM (rotary_dim,\n"
    "LongRoPE). When the checkpoint holds a tokenizer, tokenizer.json and\n"
    "tokenizer_config.json go there too (AutoTokenizer.from_pretrained(DIR)); without one, an earlier\n"
    "model's tokenizer files there are removed. A generation_config.json there is always removed (its\n"
    "eos_token_id and sampling would steer generate()). `tessel import DIR -o CKPT` reads it back.\n\n"
    "CKPT_DIR may also be a checkpoint.dir or its `latest` file (the checkpoint a resume would take).\n\n"
    "  -o, --out DIR/model.safetensors   the file to write: it must be named model.safetensors (the name\n"
    "                                    from_pretrained and `tessel import` look for); DIR is made if\n"
    "                                    needed, and must not be inside a checkpoint\n",
    export_cmd, (const tsl_options *const[]){&tsl_out_options, NULL}};

static int export_cmd(int argc, char **argv) {
  const char *ckpt, *out;
  int rc = tsl_parse_arg_out(&tsl_cmd_export, argc, argv, "checkpoint directory", &ckpt, &out);
  if (rc) return rc;
  int tokenizer;
  tsl_status st = tsl_export_hf(ckpt, out, &tokenizer);
  if (st < 0) return tsl_fail(st);
  printf("wrote %s (and config.json%s beside it)\n", out, tokenizer ? ", tokenizer.json, tokenizer_config.json" : "");
  return TSL_EXIT_OK;
}
