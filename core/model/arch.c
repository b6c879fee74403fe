/* core/model/arch.c — choosing a description. */
#include "model/arch.h"

tsl_status tsl_arch_for(const tsl_settings *s, tsl_arch *out) {
  switch (s->model.arch) {
    case TSL_ARCH_GPT2: tsl_arch_gpt2(s, out); return TESSEL_OK;
    case TSL_ARCH_LLAMA: tsl_arch_llama(s, out); return TESSEL_OK;
  }
  return tsl_error(TESSEL_E_INTERNAL, "unknown model family %d", (int)s->model.arch);
}

const tsl_unit_decl *tsl_arch_unit(const tsl_arch *a, int layers, int u) {
  return u == 0 ? &a->embed : u == layers + 1 ? &a->head : &a->block;
}

const char *tsl_op_kind_name(tessel_op_kind kind) {
  static const char *const names[] = {"?", "embedding", "norm", "linear", "rotary", "attention", "activation",
                                      "residual", "head"};
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}
