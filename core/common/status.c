/* core/common/status.c — the rank's error slot. */
#include "status.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

/* room for a configuration's 20 reported mistakes */
#define TSL_ERROR_CAP 32768
static char error_buf[TSL_ERROR_CAP];

static tsl_reason error_reason;

/* The message and reason both: every error sets its reason, so none
** outlives the message it came with. */
static tsl_status set_error(tsl_status status, tsl_reason reason, const char *fmt, va_list ap) {
  vsnprintf(error_buf, sizeof error_buf, fmt, ap);
  error_reason = reason;
  return status;
}

tsl_status tsl_verror(tsl_status status, const char *fmt, va_list ap) {
  return set_error(status, TSL_REASON_NONE, fmt, ap);
}

tsl_status tsl_error(tsl_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(status, TSL_REASON_NONE, fmt, ap);
  va_end(ap);
  return status;
}

tsl_status tsl_error_for(tsl_status status, tsl_reason reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(status, reason, fmt, ap);
  va_end(ap);
  return status;
}

tsl_status tsl_error_sys(tsl_status status, int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(status, tsl_reason_of_errno(err), fmt, ap);
  va_end(ap);
  size_t n = strlen(error_buf);
  snprintf(error_buf + n, sizeof error_buf - n, ": %s", strerror(err));
  return status;
}

tsl_reason tsl_reason_of_errno(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT: return TSL_REASON_NO_SPACE;
    case EMFILE: return TSL_REASON_FILE_LIMIT;
    default: return TSL_REASON_NONE;
  }
}

tsl_reason tsl_error_reason(void) { return error_reason; }

tsl_status tsl_error_wrap(tsl_status status, const char *fmt, ...) {
  char prefix[1024], old[TSL_ERROR_CAP];
  if (tsl_has_position(error_buf)) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, error_buf, sizeof old);
  /* truncation is acceptable: the message is for people */
  size_t n = strlen(prefix);
  if (n + 2 >= sizeof error_buf) n = sizeof error_buf - 3;
  memcpy(error_buf, prefix, n);
  memcpy(error_buf + n, ": ", 2);
  size_t room = sizeof error_buf - n - 3;
  size_t m = strnlen(old, room);
  memcpy(error_buf + n + 2, old, m);
  error_buf[n + 2 + m] = '\0';
  return status;
}

int tsl_has_position(const char *msg) {
  regex_t re;
  if (regcomp(&re, "^[^\n]+:[0-9]+:[0-9]+: ", REG_EXTENDED | REG_NOSUB) != 0) return 0;
  int found = regexec(&re, msg, 0, NULL, 0) == 0;
  regfree(&re);
  return found;
}

const char *tsl_error_message(void) { return error_buf; }

void tsl_error_clear(void) {
  error_buf[0] = '\0';
  error_reason = TSL_REASON_NONE;
}

const char *tsl_status_name(tsl_status status) {
  switch (status) {
    case TESSEL_OK: return "ok";
    case TESSEL_E_CONFIG: return "config error";
    case TESSEL_E_NOMEM: return "out of memory";
    case TESSEL_E_UNSUPPORTED: return "unsupported";
    case TESSEL_E_VERSION: return "version mismatch";
    case TESSEL_E_COMM: return "communication error";
    case TESSEL_E_DEVICE: return "device error";
    case TESSEL_E_IO: return "I/O error";
    case TESSEL_E_INTERNAL: return "internal error";
    case TESSEL_E_NUMERIC: return "numeric error";
    case TSL_E_DECLINED: return "declined by the strategy";
    default: return "error";
  }
}

int tsl_status_exit_code(tsl_status status) {
  if (status >= 0) return 0;
  return status == TESSEL_E_CONFIG ? 2 : status == TSL_E_DECLINED ? 3 : 1;
}
