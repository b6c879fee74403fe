/*
** core/config/diag.c — collecting configuration mistakes.
**
** Every positioned mistake (syntax, duplicate key, wrong type, value out of
** range, unknown key, a strategy's option) is recorded in its tsl_config as
** well as returned, so that the components reading a config can go on past
** one mistake and a run reports all of them at once, in file order, like a
** compiler. The TSL_CFG_MAX_REPORTED earliest are kept; the others counted.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "node.h"

static int file_rank(const tsl_config *cfg, const char *file) {
  for (int i = 0; i < cfg->n_files; i++)
    if (cfg->files[i] == file) return i;
  return cfg->n_files;
}

/* Does a come before b in the files? */
static int before(const tsl_diag *a, const tsl_diag *b) {
  if (a->file_rank != b->file_rank) return a->file_rank < b->file_rank;
  if (a->mark.line != b->mark.line) return a->mark.line < b->mark.line;
  return a->mark.col < b->mark.col;
}

static void record(tsl_config *cfg, tsl_mark m, const char *text) {
  for (int i = 0; i < cfg->n_diags; i++)
    if (strcmp(cfg->diags[i].text, text) == 0) return; /* read twice, reported once */
  cfg->n_mistakes++;
  tsl_diag d = {m, file_rank(cfg, m.file), NULL};
  int at = cfg->n_diags;
  while (at > 0 && before(&d, &cfg->diags[at - 1])) at--;
  if (at == TSL_CFG_MAX_REPORTED) return; /* later than every kept one */
  if (!(d.text = strdup(text))) return;   /* still counted */
  if (cfg->n_diags == TSL_CFG_MAX_REPORTED) free(cfg->diags[--cfg->n_diags].text);
  memmove(&cfg->diags[at + 1], &cfg->diags[at], sizeof d * (size_t)(cfg->n_diags - at));
  cfg->diags[at] = d;
  cfg->n_diags++;
}

tsl_status tsl_cfg_report(tsl_config *cfg, tsl_mark m, const char *fmt, ...) {
  char *msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap);
  va_end(ap);
  if (n < 0) return tsl_error(TESSEL_E_NOMEM, "out of host memory reporting a configuration mistake");
  /* user text a message echoes whole (rather than through TSL_ECHO) is cut
  ** in the middle: the key before it and the hint after it stay */
  tsl_echo_cut_middle(msg, TSL_CFG_MESSAGE_MAX);
  tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: %s", m.file ? m.file : "?", m.line, m.col, msg);
  free(msg);
  if (cfg) record(cfg, m, tsl_error_message());
  return TESSEL_E_CONFIG;
}

tsl_status tsl_config_outcome(tsl_config *cfg, tsl_status st) {
  if (!cfg || cfg->n_diags == 0) return st;
  const char *last = tsl_error_message();
  /* a failure without a position (a plugin file that does not load, say)
  ** was not recorded: it goes last */
  char *extra = st < 0 && last[0] && !tsl_has_position(last) ? strdup(last) : NULL;
  size_t cap = 256 + (extra ? strlen(extra) : 0), len = 0;
  for (int i = 0; i < cfg->n_diags; i++) cap += strlen(cfg->diags[i].text) + 1;
  char *text = malloc(cap);
  if (!text) {
    free(extra);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory reporting configuration mistakes");
  }
  for (int i = 0; i < cfg->n_diags; i++)
    len += (size_t)snprintf(text + len, cap - len, "%s%s", i ? "\n" : "", cfg->diags[i].text);
  if (cfg->n_mistakes > cfg->n_diags)
    len += (size_t)snprintf(text + len, cap - len, "\n... and %d more mistake(s); fix these and check again",
                            cfg->n_mistakes - cfg->n_diags);
  if (extra) snprintf(text + len, cap - len, "\nerror: %s", extra);
  tsl_error(TESSEL_E_CONFIG, "%s", text);
  free(text);
  free(extra);
  return TESSEL_E_CONFIG;
}
