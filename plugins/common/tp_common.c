/* plugins/common/tp_common.c — options, mesh coordinates, scratch, bias as
** GEMMs with a ones vector, norms over a split hidden dimension. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

tessel_status tp_base_create(tp_base *b, const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                             uint32_t (*replicated)(tessel_param_role)) {
  b->x = (tessel_sdk){api, host, section};
  b->replicated = replicated;
  tessel_status st = tessel_opt_count(&b->x, "tp", 1 << 20, &b->tp_opt);
  TESSEL_KEEP(st, tessel_opt_count(&b->x, "dp", 1 << 20, &b->dp_opt)); /* both read: both reported */
  return st;
}

const char *tp_shape_key(const tp_base *b) { return b->tp_opt ? "tp" : b->dp_opt ? "dp" : NULL; }

const char *tp_group_words(const tp_base *b, int world, int tp, char *buf, size_t cap) {
  if (!b->tp_opt && b->dp_opt)
    snprintf(buf, cap, "tp %d (world size %d / dp %d)", tp, world, b->dp_opt);
  else
    snprintf(buf, cap, "tp %d", tp);
  return buf;
}

const char *tp_nearest(int v, int world, int (*fits)(const void *ctx, int world, int v), const void *ctx, char *buf,
                       size_t cap) {
  int below = v - 1, above = v + 1;
  while (below >= 1 && !fits(ctx, world, below)) below--;
  while (above <= world && !fits(ctx, world, above)) above++;
  if (below >= 1 && above <= world)
    snprintf(buf, cap, "%d or %d", below, above);
  else
    snprintf(buf, cap, "%d", below >= 1 ? below : above);
  return buf;
}

tessel_status tp_resolve_tp(tp_base *b, int world, int fit, int fit_q, int smallest, int *tp) {
  const tessel_cfg_api *cfg = b->x.api->cfg;
  if (!b->tp_opt && !b->dp_opt && world > 1 && fit_q == 1)
    b->x.api->log(b->x.host, TESSEL_LOG_WARN,
                  "no tensor-parallel group of more than one rank divides the world size %d: every rank holds the "
                  "whole model and this runs as plain data parallelism; run on a multiple of %d ranks, or set tp, "
                  "for tensor parallelism",
                  world, smallest);
  if (b->dp_opt && world % b->dp_opt != 0)
    return cfg->error_at(b->x.host, b->x.section, "dp", "dp %d does not divide the world size %d", b->dp_opt, world);
  *tp = b->tp_opt ? b->tp_opt : b->dp_opt ? world / b->dp_opt : fit;
  if (b->dp_opt && (long long)*tp * b->dp_opt != world)
    return cfg->error_at(b->x.host, b->x.section, "dp", "tp %d × dp %d = %lld ≠ world size %d", *tp, b->dp_opt,
                         (long long)*tp * b->dp_opt, world);
  return TESSEL_OK;
}

tessel_status tp_base_set_mesh(tp_base *b, tessel_mesh *mesh) {
  int rank;
  TESSEL_TRY(b->x.api->world(b->x.host, &rank, NULL));
  tessel_mesh_coords(mesh, rank, b->coord);
  static const tessel_param_role roles[] = {TESSEL_ROLE_EMBEDDING, TESSEL_ROLE_POSITIONS, TESSEL_ROLE_NORM,
                                            TESSEL_ROLE_LINEAR_IN, TESSEL_ROLE_BIAS_IN,    TESSEL_ROLE_LINEAR_OUT,
                                            TESSEL_ROLE_BIAS_OUT,  TESSEL_ROLE_HEAD,       TESSEL_ROLE_HEAD_NORM};
  for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++)
    TESSEL_TRY(tessel_mesh_add_group(&b->x, mesh, b->replicated(roles[r])));
  b->mesh = *mesh;
  return TESSEL_OK;
}

uint64_t tp_alloc_bytes(uint64_t bytes) { return bytes ? bytes : 8; }

tessel_status tp_alloc(tp_base *b, tessel_mem_kind kind, uint64_t bytes, const char *name, void **out) {
  return b->x.api->mem->alloc(b->x.host, TESSEL_TIER_DEVICE, kind, tp_alloc_bytes(bytes), name, out);
}

void tp_free(tp_base *b, void *p) {
  if (p) b->x.api->mem->free(b->x.host, TESSEL_TIER_DEVICE, p);
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
  tessel_stream *s;
  b->dims.size = sizeof b->dims;
  TESSEL_TRY(b->x.api->model->dims(b->x.host, &b->dims));
  b->act = b->dims.act_dtype;
  b->es = tessel_dtype_size(b->act);
  b->ones_len = ones_len;
  void *host = malloc((size_t)(ones_len * (int64_t)b->es));
  if (!host) return b->x.api->set_error(b->x.host, TESSEL_E_NOMEM, "out of host memory");
  fill_ones(b->act, host, ones_len);
  TESSEL_CHECK(st, tp_alloc(b, TESSEL_MEM_SCRATCH, (uint64_t)ones_len * b->es, "ones (bias GEMMs)", &b->ones));
  TESSEL_CHECK(st, b->x.api->mem->copy(b->x.host, TESSEL_TIER_DEVICE, b->ones, 0, TESSEL_TIER_HOST, host, 0,
                                       (uint64_t)ones_len * b->es, NULL));
  TESSEL_CHECK(st, b->x.api->stream->compute(b->x.host, &s));
  TESSEL_CHECK(st, b->x.api->stream->sync(b->x.host, s));
  st = tp_grads_plan(b);
fail:
  free(host);
  return st;
}

void tp_base_free(tp_base *b) {
  tessel_buckets_free(&b->grads);
  tp_free(b, b->ones);
  b->ones = NULL;
}

tessel_status tp_bias_add(tp_base *b, tessel_stream *s, void *out, const void *bias, int64_t rows, int64_t n) {
  if (rows > b->ones_len)
    return b->x.api->set_error(b->x.host, TESSEL_E_INTERNAL, "bias over %lld rows, ones for %lld", (long long)rows,
                               (long long)b->ones_len);
  return b->x.api->kernels->gemm(b->x.host, s, 0, 0, rows, n, 1, 1.0f, b->ones, bias, 1.0f, out, b->act);
}

tessel_status tp_bias_grad(tp_base *b, tessel_stream *s, float *dbias, const void *dout, int64_t rows, int64_t n) {
  if (rows > b->ones_len)
    return b->x.api->set_error(b->x.host, TESSEL_E_INTERNAL, "bias gradient over %lld rows, ones for %lld",
                               (long long)rows, (long long)b->ones_len);
  return b->x.api->kernels->gemm(b->x.host, s, 0, 0, 1, n, rows, 1.0f, b->ones, dout, 1.0f, dbias, TESSEL_F32);
}

tessel_status tp_wait_all(tp_base *b, tessel_work **works, int n) {
  tessel_status first = TESSEL_OK;
  for (int i = 0; i < n; i++) {
    if (!works[i]) continue;
    tessel_status st = b->x.api->comm->wait(b->x.host, works[i]);
    works[i] = NULL;
    if (st < 0 && first == TESSEL_OK) first = st;
  }
  return first;
}

tessel_status tp_norm_forward(void *inst, const tessel_op_ctx *c, const tessel_norm_args *a) {
  tp_base *b = inst;
  return b->x.api->kernels->norm_forward(b->x.host, c->stream, b->norm_group, a, a->cols * b->norm_parts);
}

tessel_status tp_norm_backward(void *inst, const tessel_op_ctx *c, const tessel_norm_args *a) {
  tp_base *b = inst;
  return b->x.api->kernels->norm_backward(b->x.host, c->stream, b->norm_group, a, a->cols * b->norm_parts);
}
