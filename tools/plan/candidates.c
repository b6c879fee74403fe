/*
** tools/plan/candidates.c — which candidates to plan, and planning one.
**
** A candidate is planned like `tessel check --world N`: the configuration
** (with the user's --set and the candidate's plugin section), the strategy,
** its mesh, the parameters with their layouts, the geometry and the
** placements — no devices, memory or communicators. Its strategy's
** `estimate` is then asked about each rank in turn.
*/
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "model/model.h"
#include "plan/query.h"
#include "plugin/host.h"
#include "plugin/loader.h"
#include "runtime/build.h"

#define MAX_SETS 300

/* The configuration's sets, then `plugin` when given (room is left for
** given_yaml's four). */
static int make_sets(const tsl_plan *p, const char *plugin, const char **sets) {
  int n = 0;
  for (int i = 0; i < p->n_sets && n < MAX_SETS - 5; i++) sets[n++] = p->sets[i];
  if (plugin) sets[n++] = plugin;
  return n;
}

/* Refuse a candidate for the current error. Its position in the plugin
** override the planner wrote itself ("--set=plugin={name: X}:1:21: "),
** which the user never typed, is left out. */
static void refuse(tsl_plan_cand *c, tsl_status st) {
  const char *why = tsl_error_message()[0] ? tsl_error_message() : tsl_status_name(st), *end;
  int line, col, used = 0;
  if (!strncmp(why, "--set=plugin={", 14) && (end = strstr(why, "}:")) &&
      sscanf(end + 2, "%d:%d: %n", &line, &col, &used) == 2 && used)
    why = end + 2 + used;
  c->state = TSL_CAND_REFUSED;
  snprintf(c->error, sizeof c->error, "%s", why);
  tsl_error_clear();
}

static void describe_mesh(tsl_plan_cand *c) {
  c->mesh_text[0] = '\0';
  for (int a = 0; a < c->mesh.naxes; a++) {
    char part[64];
    snprintf(part, sizeof part, "%s%s %d", a ? " × " : "", c->mesh.names[a] ? c->mesh.names[a] : "axis",
             c->mesh.sizes[a]);
    strncat(c->mesh_text, part, sizeof c->mesh_text - strlen(c->mesh_text) - 1);
  }
}

/* The device capacity a rank plans for: --memory-limit, the config's
** device.memory_limit, the profile's device, or unbounded. */
static uint64_t device_capacity(const tsl_plan *p, const tsl_runtime *rt) {
  if (p->memory_limit) return p->memory_limit;
  if (rt->settings.device.memory_limit) return rt->settings.device.memory_limit;
  if (p->have_profile && p->profile.device_memory) return p->profile.device_memory;
  return UINT64_MAX;
}

tsl_status tsl_plan_estimate_ranks(tsl_plan *p, tsl_plan_cand *c, tsl_runtime *rt) {
  tsl_plan_ctx ctx = {.plan = p, .cand = c};
  tsl_status st = TESSEL_OK;
  uint64_t cap = c->device_capacity;
  rt->plan = &ctx;
  for (int r = 0; r < c->world && st >= 0; r++) {
    tessel_plan_query q;
    tessel_estimate e = {.size = sizeof e};
    ctx.rank = r;
    tsl_plan_query_init(&q, c->world, r, cap, NULL);
    tsl_hook_enter(rt);
    st = rt->plugin->vt.estimate(rt->inst, &q, &e);
    if (st != TESSEL_OK) {
      st = tsl_hook_failed(rt, st, "estimate for rank %d", r);
      break;
    }
    tsl_plan_rank *pr = &c->ranks[r];
    if (!pr->core_described) {
      st = tsl_error(TESSEL_E_INTERNAL, "strategy '%s' estimated rank %d without describing the core's storage there "
                                        "(plan_query.core_state)", rt->plugin->name, r);
      break;
    }
    memcpy(pr->memory, e.memory, sizeof pr->memory);
    pr->flops = e.flops;
    pr->bubble = e.bubble;
    st = tsl_plan_core_lines(rt, pr);
  }
  rt->plan = NULL;
  return st;
}

/* Is KEY of SECTION given in the configuration (not a default)? */
static int given(const tsl_runtime *rt, const char *section, const char *key) {
  tsl_cfg *s = NULL;
  return tsl_cfg_section(tsl_config_root(rt->config), section, 0, &s) >= 0 && tsl_cfg_has(s, key);
}

/* The candidate's configuration as given, for --write. A log.dir or
** checkpoint.dir the user named becomes the candidate's own
** (DIR/plan-STRATEGY-N): written configurations run one after another once
** shared it, and each resumed the first's checkpoint ("already done").
** Text data then stays prepared where it was. A --memory-limit the plan
** was made for becomes device.memory_limit: a strategy that places memory
** by the device's room (gemini's auto placement) would otherwise run
** unbounded, not as planned. (A path that cannot be given back as --set
** leaves the configuration as it was.) */
static char *given_yaml(const tsl_plan *p, const tsl_plan_cand *c, const tsl_runtime *rt, const char **sets, int n) {
  const tsl_settings *s = &rt->settings;
  int k = n, index = (int)(c - p->c) + 1;
  char *own[4] = {NULL, NULL, NULL, NULL}, *yaml = NULL;
  tsl_config *cfg;
  if (given(rt, "log", "dir")) {
    sets[k++] = own[0] = tsl_asprintf("log.dir=%s/plan-%s-%d", s->log.dir, c->strategy, index);
    if (s->data.n_text > 0 && !given(rt, "data", "dir")) sets[k++] = own[1] = tsl_asprintf("data.dir=%s", s->data.dir);
  }
  if (given(rt, "checkpoint", "dir"))
    sets[k++] = own[2] = tsl_asprintf("checkpoint.dir=%s/plan-%s-%d", s->ckpt.dir, c->strategy, index);
  if (p->memory_limit)
    sets[k++] = own[3] = tsl_asprintf("device.memory_limit=%llu", (unsigned long long)p->memory_limit);
  for (int i = n; i < k; i++)
    if (!sets[i]) k = n;
  if (k > n && tsl_config_load(p->config, sets, k, &cfg) >= 0) {
    yaml = tsl_config_emit_given(cfg);
    tsl_config_free(cfg);
  }
  tsl_error_clear();
  for (int i = 0; i < 4; i++) free(own[i]);
  return yaml ? yaml : tsl_config_emit_given(rt->config);
}

tsl_status tsl_plan_candidate(tsl_plan *p, tsl_plan_cand *c) {
  const char *sets[MAX_SETS];
  char *plugin = c->as_configured ? NULL : tsl_asprintf("plugin={name: %s%s%s}", c->strategy, c->options[0] ? ", " : "",
                                                         c->options);
  int n = make_sets(p, plugin, sets);
  tsl_runtime rt = {.hush_plugin_warnings = !c->as_configured};
  tsl_model *model = NULL;
  tsl_world_single(&rt.world, p->world);
  c->world = p->world;
  tsl_status st = tsl_runtime_configure(&rt, p->config, sets, n, p->world), own = TESSEL_OK;
  if (st >= 0) st = tsl_model_dims_for(&rt, &c->dims);
  if (st >= 0) st = tsl_model_plan(&rt, &c->dims, &model);
  if (st >= 0) {
    c->mesh = rt.mesh;
    describe_mesh(c);
    c->yaml = given_yaml(p, c, &rt, sets, n);
    if (!c->yaml) st = own = tsl_error(TESSEL_E_NOMEM, "out of host memory for a candidate's config");
  }
  if (st >= 0 && !rt.plugin->vt.estimate) {
    c->state = TSL_CAND_NO_ESTIMATE;
  } else if (st >= 0) {
    c->ranks = calloc((size_t)c->world, sizeof *c->ranks);
    c->device_capacity = device_capacity(p, &rt);
    st = c->ranks ? tsl_plan_estimate_ranks(p, c, &rt)
                  : (own = tsl_error(TESSEL_E_NOMEM, "out of host memory for %d ranks", c->world));
  }
  /* a strategy's own failure, TESSEL_E_NOMEM included (a device that
  ** cannot hold it), refuses the candidate; only the planner's stops it */
  if (st < 0) refuse(c, st);
  tsl_runtime_destroy(&rt);
  free(plugin);
  return own;
}

/* ---- enumeration ---- */

/* One strategy's option sets: its enumerate hook's, or its defaults. A
** strategy whose defaults cannot be configured here becomes a refused
** candidate. */
static tsl_status enumerate_one(tsl_plan *p, const char *name) {
  char *plugin = tsl_asprintf("plugin={name: %s}", name);
  const char *sets[MAX_SETS];
  int n = make_sets(p, plugin, sets), before = p->n;
  tsl_runtime rt = {.hush_plugin_warnings = 1};
  tsl_world_single(&rt.world, p->world);
  tsl_plan_ctx ctx = {.plan = p, .strategy = name};
  tsl_status st = tsl_runtime_configure(&rt, p->config, sets, n, p->world);
  if (st >= 0 && rt.plugin->vt.enumerate) {
    tessel_model_dims d;
    tsl_model_dims_single(&rt, &d);
    /* the whole batch on one data rank: a strategy cuts it as its mesh would */
    d.micro_batch = rt.settings.train.batch_size;
    tessel_plan_query q;
    tsl_plan_query_init(&q, p->world, -1, UINT64_MAX, &d);
    rt.plan = &ctx;
    tsl_hook_enter(&rt);
    st = rt.plugin->vt.enumerate(rt.inst, &q);
    if (st != TESSEL_OK) st = tsl_hook_failed(&rt, st, "enumerate");
    rt.plan = NULL;
  }
  if (st >= 0 && p->n == before && !rt.plugin->vt.enumerate) st = tsl_plan_add(p, name, "", 0);
  else if (st >= 0 && p->n == before)
    st = tsl_error(TESSEL_E_CONFIG, "offers no option set for %d rank(s) and this model", p->world);
  if (st < 0 && st != TESSEL_E_NOMEM) {
    char why[2048];
    snprintf(why, sizeof why, "%s", tsl_error_message());
    if ((st = tsl_plan_add(p, name, "", 0)) >= 0) {
      tsl_error(TESSEL_E_CONFIG, "%s", why);
      refuse(&p->c[p->n - 1], TESSEL_E_CONFIG);
    }
  }
  tsl_runtime_destroy(&rt);
  free(plugin);
  return st;
}

/* Strategy names in search order, each once (an earlier directory shadows a
** later one). */
static int installed(char **names, int cap) {
  int n_dirs = 0, n = 0;
  char **dirs = tsl_plugin_search_dirs(&n_dirs);
  for (int d = 0; d < n_dirs; d++) {
    char **files;
    int k = tsl_plugin_list_dir(dirs[d], &files);
    for (int i = 0; i < k; i++) {
      const char *base = strrchr(files[i], '/') + 1;
      char *name = strndup(base + 10, strlen(base) - 13);
      int seen = 0;
      for (int j = 0; j < n && name; j++) seen |= !strcmp(names[j], name);
      if (name && !seen && n < cap) names[n++] = name;
      else free(name);
      free(files[i]);
    }
    free(files);
  }
  tsl_plugin_dirs_free(dirs);
  return n;
}

static int listed(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return 1;
  return 0;
}

/* A --strategy name that is neither installed nor the configuration's own
** strategy is a misspelling, the user's to fix (exit 2), not a candidate
** refused with the plan's exit status 0. */
static tsl_status check_named(const tsl_plan *p, const char *name, const char *const *installed_names, int n) {
  if (listed(installed_names, n, name)) return TESSEL_OK;
  for (int i = 0; i < p->n; i++)
    if (p->c[i].as_configured && !strcmp(p->c[i].strategy, name)) return TESSEL_OK;
  char list[1024] = "";
  for (int i = 0; i < n; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, installed_names[i], sizeof list - strlen(list) - 1);
  }
  const char *near = tsl_closest(name, installed_names, n);
  return tsl_error(TESSEL_E_CONFIG, "--strategy '%s' is not an installed strategy%s%s%s; the installed ones are %s "
                   "(`tessel plugins` lists them; TESSEL_PLUGIN_PATH adds directories)", name,
                   near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "", n ? list : "none");
}

static int wanted(const tsl_plan *p, const char *name) {
  return p->n_only == 0 || listed(p->only, p->n_only, name);
}

/* The configuration's own plugin section, as it is (planned later, like
** every candidate). The configuration is checked here first, all of it but
** the strategy's section: a mistake there (an unknown key, a missing file,
** weights that do not fit the model) is the user's to fix before anything
** can be planned, and would refuse every candidate alike. */
static tsl_status add_as_configured(tsl_plan *p) {
  tsl_runtime rt = {0};
  tsl_world_single(&rt.world, 1);
  tsl_status st = tsl_runtime_configure_core(&rt, p->config, p->sets, p->n_sets);
  if (st >= 0) {
    p->cuda = rt.settings.device.kind == TSL_DEVICE_CUDA;
    if (rt.settings.plugin.name && wanted(p, rt.settings.plugin.name))
      st = tsl_plan_add(p, rt.settings.plugin.name, "", 1);
  }
  tsl_runtime_destroy(&rt);
  return st;
}

tsl_status tsl_plan_enumerate(tsl_plan *p) {
  char *names[256];
  int n = installed(names, 256);
  const char *const *known = (const char *const *)names;
  tsl_status st = add_as_configured(p);
  for (int i = 0; i < p->n_only && st >= 0; i++) st = check_named(p, p->only[i], known, n);
  /* the strategies named, in their order, or every installed one; one only
  ** the configuration's plugin.path finds is its as-configured candidate */
  const char *const *todo = p->n_only ? p->only : known;
  for (int i = 0; i < (p->n_only ? p->n_only : n) && st >= 0; i++)
    if (listed(known, n, todo[i])) st = enumerate_one(p, todo[i]);
  for (int i = 0; i < n; i++) free(names[i]);
  return st;
}
