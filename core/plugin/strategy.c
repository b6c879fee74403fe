/* core/plugin/strategy.c — starting the configured strategy. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "plugin/elf.h"
#include "plugin/host.h"

/* A capability the core enforces: a strategy that needs fp32 activations
** cannot run on a backend that computes in 16 bits. */
static tsl_status check_caps(tsl_runtime *rt) {
  if (!(rt->plugin->vt.caps & TESSEL_CAP_FP32_ACTIVATIONS) || rt->settings.device.kind != TSL_DEVICE_CUDA)
    return TESSEL_OK;
  tsl_cfg *device = NULL;
  tsl_cfg_section(tsl_config_root(rt->config), "device", 0, &device);
  return tsl_cfg_error(device, "kind",
                       "strategy '%s' needs fp32 activations (it declares TESSEL_CAP_FP32_ACTIVATIONS), and the cuda "
                       "backend computes in bf16: use `kind: cpu`, or another strategy",
                       rt->plugin->name);
}

/* "dp 2 × tp 3": the mesh's axes (naxes already checked). */
static void mesh_shape(const tessel_mesh *m, char *shape, size_t cap) {
  shape[0] = '\0';
  for (int a = 0; a < m->naxes; a++) {
    char part[64];
    snprintf(part, sizeof part, "%s%s %d", a ? " × " : "", m->names[a] ? m->names[a] : "axis", m->sizes[a]);
    strncat(shape, part, cap - strlen(shape) - 1);
  }
}

static tsl_status check_mesh(tsl_runtime *rt, int world_size) {
  const tessel_mesh *m = &rt->mesh;
  const char *who = rt->plugin->name;
  if (m->naxes < 1 || m->naxes > TESSEL_MESH_MAX_AXES)
    return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' declared a mesh of %d axes (1..%d allowed)", who, m->naxes,
                     TESSEL_MESH_MAX_AXES);
  char shape[256];
  long long product = 1;
  for (int a = 0; a < m->naxes; a++) {
    if (m->sizes[a] < 1)
      return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' declared axis %d with size %d", who, a, m->sizes[a]);
    /* a product past any world is a mismatch already (and must not wrap) */
    if (product <= INT_MAX) product *= m->sizes[a];
  }
  mesh_shape(m, shape, sizeof shape);
  if (product != world_size)
    return tsl_cfg_error(rt->settings.plugin.section, NULL, "the mesh %s = %s%lld does not match the world size %d",
                         shape, product > INT_MAX ? "more than " : "", product > INT_MAX ? (long long)INT_MAX : product,
                         world_size);
  if (m->n_groups < 0 || m->n_groups > TESSEL_MESH_MAX_GROUPS)
    return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' listed %d extra groups (at most %d)", who, m->n_groups,
                     TESSEL_MESH_MAX_GROUPS);
  /* axis masks name axes that exist */
  const uint32_t axes = m->naxes >= 32 ? UINT32_MAX : (1u << m->naxes) - 1;
  if (m->data_axes & ~axes)
    return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' declared data_axes 0x%x, naming axes beyond its %d", who,
                     m->data_axes, m->naxes);
  for (int g = 0; g < m->n_groups; g++)
    if (m->groups[g] & ~axes)
      return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' declared group %d as axes 0x%x, beyond its %d axes", who, g,
                       m->groups[g], m->naxes);
  return TESSEL_OK;
}

/* A configuration mistake in finding or opening the plugin, said at the
** key that named it (plugin.path, else plugin.name). The message is copied
** whole: the report cuts a long one in its middle (tsl_echo_cut_middle), so
** the list of paths tried may shrink but the hint at its end stays. */
static tsl_status at_plugin_key(const tsl_settings *s, tsl_status st) {
  if (st != TESSEL_E_CONFIG) return st;
  char *msg = tsl_strdup(tsl_error_message());
  if (!msg) return tsl_error(TESSEL_E_NOMEM, "out of host memory reporting a plugin that cannot be loaded");
  st = tsl_cfg_error(s->plugin.section, s->plugin.path ? "path" : "name", "%s", msg);
  free(msg);
  return st;
}

/* A plugin that links libtessel loads (the core already in the process
** serves its needs, or the dynamic linker finds another copy), but it
** breaks the ABI's first rule, which `tessel plugin-check` fails: what it
** calls of the core directly bypasses the host's accounting, and a copy of
** the core other than the running one has state of its own. Said once, by
** the first rank; a file that cannot be read is left to the loader. */
static void warn_core_link(const tsl_runtime *rt, const char *path) {
  tsl_elf_info info;
  if (rt->hush_plugin_warnings || rt->world.rank != 0) return;
  if (tsl_elf_read(path, &info) < 0) {
    tsl_error_clear();
    return;
  }
  const char *lib = tsl_plugin_core_library(&info);
  if (lib)
    tsl_warn("the strategy plugin %s links %s: a plugin must link nothing of tessel (it gets every service from "
             "the host table, tessel_host_api), and `tessel plugin-check` fails it. Rebuild it without linking "
             "libtessel: tessel_add_strategy_plugin (CMake) or `pkg-config --libs tessel-plugin` link only what "
             "a plugin may (docs/plugin-guide.md)",
             path, lib);
  tsl_elf_free(&info);
}

tsl_status tsl_strategy_start(tsl_runtime *rt, int world_size) {
  tsl_status st;
  const tsl_settings *s = &rt->settings;
  char *path = NULL;
  rt->host.rt = rt;
  pthread_mutex_init(&rt->host.lock, NULL);
  if (!s->plugin.name && !s->plugin.path) {
    if (world_size > 1)
      return tsl_cfg_error(tsl_config_root(rt->config), NULL,
                           "this run has %d ranks but no strategy: add a plugin section, e.g. `plugin: {name: ddp}`",
                           world_size);
    rt->mesh = (tessel_mesh){.size = sizeof rt->mesh, .naxes = 1, .names = {"dp"}, .sizes = {1}, .data_axes = 1};
    rt->mesh_ready = 1;
    return TESSEL_OK;
  }
  TSL_TRY(st, at_plugin_key(s, tsl_plugin_locate(s->plugin.name, s->plugin.path, &path)));
  TSL_TRY(st, at_plugin_key(s, tsl_plugin_open(path, &rt->plugin)));
  warn_core_link(rt, path);
  if (s->plugin.name && strcmp(s->plugin.name, rt->plugin->name) != 0) {
    st = tsl_cfg_error(s->plugin.section, "name", "names strategy '%s', but plugin.path is %s ('%s')", s->plugin.name,
                       path, rt->plugin->name);
    goto fail;
  }
  TSL_TRY(st, check_caps(rt));
  tsl_hook_enter(rt);
  st = rt->plugin->vt.create(tsl_host_api(), &rt->host, (const tessel_cfg *)s->plugin.section, &rt->inst);
  if ((st = tsl_hook_status(rt, st, "create")) < 0) goto fail;
  TSL_TRY(st, tsl_cfg_check_unknown(s->plugin.section));
  rt->mesh = (tessel_mesh){.size = sizeof rt->mesh};
  rt->mesh_ready = 0;
  tsl_hook_enter(rt);
  if ((st = tsl_hook_status(rt, rt->plugin->vt.mesh(rt->inst, world_size, &rt->mesh), "mesh")) < 0) goto fail;
  TSL_TRY(st, check_mesh(rt, world_size));
  rt->mesh_ready = 1;
  free(path);
  return TESSEL_OK;
fail:
  free(path);
  return st;
}

void tsl_strategy_stop(tsl_runtime *rt) {
  if (rt->plugin && rt->inst && rt->plugin->vt.destroy) rt->plugin->vt.destroy(rt->inst);
  rt->inst = NULL;
  tsl_plugin_free(rt->plugin);
  rt->plugin = NULL;
}

/* Collective: every rank loaded the same build (a per-rank report if not). */
static tsl_status check_builds(tsl_runtime *rt) {
  enum { CAP = 512 };
  tsl_status st = TESSEL_OK;
  const tsl_world *w = &rt->world;
  uint64_t *prints = calloc((size_t)w->size, sizeof *prints);
  char *labels = calloc((size_t)w->size, CAP);
  char mine[CAP];
  TSL_TRY(st, tsl_world_all_allocated(w, prints && labels, "comparing plugin builds"));
  const tsl_plugin *p = rt->plugin;
  snprintf(mine, sizeof mine, "%s (version %s, build %016llx)", p ? p->path : "no plugin",
           p && p->vt.version ? p->vt.version : "-", p ? (unsigned long long)p->fingerprint : 0ull);
  TSL_TRY(st, tsl_world_allgather_u64(w, p ? p->fingerprint : 0, prints));
  TSL_TRY(st, tsl_world_allgather_str(w, mine, labels, CAP));
  int differ = 0;
  for (int r = 1; r < w->size; r++) differ |= prints[r] != prints[0];
  if (!differ) goto done;
  char report[8192] = "";
  for (int r = 0; r < w->size && strlen(report) < sizeof report - CAP - 32; r++) {
    char line[CAP + 32];
    snprintf(line, sizeof line, "\n  rank %d%s: %s", r, prints[r] != prints[0] ? " (differs from rank 0)" : "",
             labels + (size_t)r * CAP);
    strncat(report, line, sizeof report - strlen(report) - 1);
  }
  st = tsl_error(TESSEL_E_VERSION,
                 "ranks loaded different builds of the strategy plugin:%s\n"
                 "Every rank must load the same file: install the same plugin on every machine or point "
                 "plugin.path / TESSEL_PLUGIN_PATH at one shared copy.",
                 report);
fail:
done:
  free(prints);
  free(labels);
  return st;
}

/* Collective: every rank's mesh hook gave the same mesh (the communicators
** are built from it on every rank at once; different meshes would leave
** the ranks in different collectives). */
static tsl_status check_meshes(tsl_runtime *rt) {
  enum { CAP = 512 };
  const tsl_world *w = &rt->world;
  const tessel_mesh *m = &rt->mesh;
  char mine[CAP], groups[CAP] = "";
  char *all = calloc((size_t)w->size, CAP);
  tsl_status st = tsl_world_all_allocated(w, all != NULL, "comparing meshes");
  if (st < 0) goto done;
  mesh_shape(m, mine, sizeof mine);
  for (int g = 0; g < m->n_groups; g++) {
    char part[32];
    snprintf(part, sizeof part, "%s0x%x", g ? ", " : "; groups ", m->groups[g]);
    strncat(groups, part, sizeof groups - strlen(groups) - 1);
  }
  size_t n = strlen(mine);
  snprintf(mine + n, sizeof mine - n, " (data axes 0x%x%s)", m->data_axes, groups);
  st = tsl_world_allgather_str(w, mine, all, CAP);
  for (int r = 1; r < w->size && st >= 0; r++)
    if (strcmp(all + (size_t)r * CAP, all) != 0)
      st = tsl_error(TESSEL_E_INTERNAL,
                     "strategy '%s' gave rank %d the mesh %s, and rank 0 the mesh %s: its mesh hook must answer the "
                     "same on every rank",
                     rt->plugin->name, r, all + (size_t)r * CAP, all);
done:
  free(all);
  return st;
}

tsl_status tsl_strategy_check_agreement(tsl_runtime *rt) {
  if (rt->world.size == 1) return TESSEL_OK;
  tsl_status st = check_builds(rt);
  return st < 0 || !rt->plugin ? st : check_meshes(rt);
}
