/* plugins/common/tp_common.c — parameter roles, mesh coordinates, scratch,
** bias as GEMMs with a ones vector. */
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

tp_role tp_param_role(const char *name) {
  static const struct {
    const char *suffix;
    tp_role role;
  } table[] = {
      {"attn.c_attn.weight", TP_QKV_W}, {"attn.c_attn.bias", TP_QKV_B}, {"attn.c_proj.weight", TP_PROJ_W},
      {"attn.c_proj.bias", TP_PROJ_B},  {"mlp.c_fc.weight", TP_FC_W},   {"mlp.c_fc.bias", TP_FC_B},
      {"mlp.c_proj.weight", TP_FCP_W},  {"mlp.c_proj.bias", TP_FCP_B},  {"ln_1.weight", TP_LN_W},
      {"ln_1.bias", TP_LN_B},           {"ln_2.weight", TP_LN_W},       {"ln_2.bias", TP_LN_B},
      {"ln_f.weight", TP_LN_W},         {"ln_f.bias", TP_LN_B},         {"wte.weight", TP_WTE},
      {"wpe.weight", TP_WPE}};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    size_t k = strlen(table[i].suffix);
    if (n >= k && strcmp(name + n - k, table[i].suffix) == 0) return table[i].role;
  }
  return TP_UNKNOWN;
}

/* An optional positive integer option: 0 when absent. */
static tessel_status optional_int(tp_base *b, const char *key, int *out) {
  int64_t v = 0;
  tessel_status st = TESSEL_OK;
  if (b->api->cfg->has(b->host, b->section, key)) st = b->api->cfg->get_int(b->host, b->section, key, 1, 1, 1 << 20, &v);
  *out = (int)v;
  return st;
}

tessel_status tp_base_create(tp_base *b, const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                             const char *name) {
  b->api = api;
  b->host = host;
  b->section = section;
  b->name = name;
  tessel_status st = optional_int(b, "tp", &b->tp_opt);
  return st < 0 ? st : optional_int(b, "dp", &b->dp_opt);
}

const char *tp_shape_key(const tp_base *b) { return b->api->cfg->has(b->host, b->section, "tp") ? "tp" : NULL; }

tessel_status tp_resolve_tp(tp_base *b, int world, int *tp) {
  const tessel_cfg_api *cfg = b->api->cfg;
  if (b->dp_opt && world % b->dp_opt != 0)
    return cfg->error_at(b->host, b->section, "dp", "dp %d does not divide the world size %d", b->dp_opt, world);
  *tp = b->tp_opt ? b->tp_opt : b->dp_opt ? world / b->dp_opt : world;
  if (b->dp_opt && (long long)*tp * b->dp_opt != world)
    return cfg->error_at(b->host, b->section, "dp", "tp %d × dp %d = %lld ≠ world size %d", *tp, b->dp_opt,
                         (long long)*tp * b->dp_opt, world);
  return TESSEL_OK;
}

void tp_base_set_mesh(tp_base *b, const tessel_mesh *mesh, int world_rank) {
  b->mesh = *mesh;
  int rem = world_rank;
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    b->coord[a] = rem % mesh->sizes[a];
    rem /= mesh->sizes[a];
  }
}

uint32_t tp_real_axes(const tp_base *b, uint32_t mask) {
  uint32_t out = 0;
  for (int a = 0; a < b->mesh.naxes; a++)
    if ((mask & (1u << a)) && b->mesh.sizes[a] > 1) out |= 1u << a;
  return out;
}

tessel_status tp_mesh_need_group(tp_base *b, tessel_mesh *mesh, uint32_t mask) {
  uint32_t real = tp_real_axes(b, mask);
  if (__builtin_popcount(real) < 2) return TESSEL_OK; /* single axes always exist */
  for (int i = 0; i < mesh->n_groups; i++)
    if (mesh->groups[i] == real) return TESSEL_OK;
  if (mesh->n_groups == TESSEL_MESH_MAX_GROUPS)
    return b->api->set_error(b->host, TESSEL_E_INTERNAL, "%s: more than %d extra groups", b->name,
                             TESSEL_MESH_MAX_GROUPS);
  mesh->groups[mesh->n_groups++] = real;
  b->mesh = *mesh;
  return TESSEL_OK;
}

tessel_status tp_alloc(tp_base *b, tessel_mem_kind kind, uint64_t bytes, const char *name, void **out) {
  return b->api->mem->alloc(b->host, TESSEL_TIER_DEVICE, kind, bytes ? bytes : 8, name, out);
}

void tp_free(tp_base *b, void *p) {
  if (p) b->api->mem->free(b->host, TESSEL_TIER_DEVICE, p);
}

/* The bit pattern of 1.0 in each activation dtype. */
static void fill_ones(tessel_dtype dt, void *host, int64_t n) {
  if (dt == TESSEL_F32) {
    for (int64_t i = 0; i < n; i++) ((float *)host)[i] = 1.0f;
  } else {
    uint16_t one = dt == TESSEL_BF16 ? 0x3F80u : 0x3C00u; /* bf16, fp16 */
    for (int64_t i = 0; i < n; i++) ((uint16_t *)host)[i] = one;
  }
}

tessel_status tp_base_setup(tp_base *b, int64_t ones_len) {
  tessel_status st;
  b->dims.size = sizeof b->dims;
  if ((st = b->api->model->dims(b->host, &b->dims)) < 0) return st;
  b->act = b->dims.act_dtype;
  b->es = b->act == TESSEL_F32 ? 4 : 2;
  b->ones_len = ones_len;
  void *host = malloc((size_t)(ones_len * (int64_t)b->es));
  if (!host) return b->api->set_error(b->host, TESSEL_E_NOMEM, "%s: out of host memory", b->name);
  fill_ones(b->act, host, ones_len);
  st = tp_alloc(b, TESSEL_MEM_SCRATCH, (uint64_t)ones_len * b->es, "ones (bias GEMMs)", &b->ones);
  if (st >= 0)
    st = b->api->mem->copy(b->host, TESSEL_TIER_DEVICE, b->ones, 0, TESSEL_TIER_HOST, host, 0,
                           (uint64_t)ones_len * b->es, NULL);
  if (st >= 0) st = b->api->stream->sync(b->host, b->api->stream->compute(b->host));
  free(host);
  return st;
}

void tp_base_free(tp_base *b) {
  tp_grads_free(b);
  tp_free(b, b->ones);
  b->ones = NULL;
}

tessel_status tp_bias_add(tp_base *b, tessel_stream *s, void *out, const void *bias, int64_t rows, int64_t n) {
  if (rows > b->ones_len)
    return b->api->set_error(b->host, TESSEL_E_INTERNAL, "%s: bias over %lld rows, ones for %lld", b->name,
                             (long long)rows, (long long)b->ones_len);
  return b->api->kernels->gemm(b->host, s, 0, 0, rows, n, 1, 1.0f, b->ones, bias, 1.0f, out, b->act);
}

tessel_status tp_bias_grad(tp_base *b, tessel_stream *s, float *dbias, const void *dout, int64_t rows, int64_t n) {
  if (rows > b->ones_len)
    return b->api->set_error(b->host, TESSEL_E_INTERNAL, "%s: bias gradient over %lld rows, ones for %lld", b->name,
                             (long long)rows, (long long)b->ones_len);
  return b->api->kernels->gemm(b->host, s, 0, 0, 1, n, rows, 1.0f, b->ones, dout, 1.0f, dbias, TESSEL_F32);
}

tessel_status tp_wait_all(tp_base *b, tessel_work **works, int n) {
  tessel_status first = TESSEL_OK;
  for (int i = 0; i < n; i++) {
    if (!works[i]) continue;
    tessel_status st = b->api->comm->wait(b->host, works[i]);
    works[i] = NULL;
    if (st < 0 && first == TESSEL_OK) first = st;
  }
  return first;
}

tessel_status tp_layernorm_forward(tp_base *b, tessel_group *g, int parts, const tessel_op_ctx *c,
                                   const tessel_layernorm_args *a) {
  return b->api->kernels->layernorm_forward(b->host, c->stream, g, a->out, a->mean, a->rstd, a->inp, a->w->data,
                                            a->b->data, a->rows, a->cols, a->cols * parts);
}

tessel_status tp_layernorm_backward(tp_base *b, tessel_group *g, int parts, const tessel_op_ctx *c,
                                    const tessel_layernorm_args *a) {
  return b->api->kernels->layernorm_backward(b->host, c->stream, g, a->dinp, a->w->grad, a->b->grad, a->dout,
                                             a->inp, a->w->data, a->mean, a->rstd, a->rows, a->cols,
                                             a->cols * parts);
}
