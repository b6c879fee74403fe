/* core/common/status.c — the error slot of each of a rank's threads. */
#include "status.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* room for a configuration's 20 reported mistakes */
#define TSL_ERROR_CAP 32768
/* each thread's own: threads that work side by side (a data preparation's
** encoders) fail without writing over one another */
static _Thread_local char error_buf[TSL_ERROR_CAP];

static _Thread_local tsl_reason error_reason;

/* The message and reason both: every error sets its reason, so none
** outlives the message it came with. */
static tsl_status set_error(tsl_status status, tsl_reason reason, const char *fmt, va_list ap) {
  char *msg = NULL;
  va_list again;
  va_copy(again, ap);
  error_reason = reason;
  /* formatted apart from the slot, so that the slot's own text may be an
  ** argument (tsl_error_wrap) */
  if (vasprintf(&msg, fmt, again) < 0) msg = NULL;
  va_end(again);
  if (!msg) { /* out of memory: at least the start of it */
    vsnprintf(error_buf, sizeof error_buf, fmt, ap);
    return status;
  }
  /* past the slot's room a message keeps its start and its end (the hint) */
  tsl_echo_cut_middle(msg, sizeof error_buf - 1);
  memcpy(error_buf, msg, strlen(msg) + 1);
  free(msg);
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
    case ENFILE: return TSL_REASON_FILE_TABLE;
    default: return TSL_REASON_NONE;
  }
}

const char *tsl_open_files_advice(int err) {
  switch (err) {
    case EMFILE: return "this process has as many files open as its limit allows: raise the limit (`ulimit -n`)";
    case ENFILE:
      return "the machine's table of open files is full, for every process on it: close files other programs hold, "
             "or raise the system-wide limit (sysctl fs.file-max); this process's `ulimit -n` does not help";
    default: return NULL;
  }
}

tsl_reason tsl_error_reason(void) { return error_reason; }

tsl_status tsl_error_wrap(tsl_status status, const char *fmt, ...) {
  enum { PREFIX_MAX = 1024 };
  char *prefix = NULL;
  if (tsl_has_position(error_buf)) return status;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return status; /* out of memory for the context: the message stays as it is */
  /* a context echoing long user text must not crowd out the message */
  tsl_echo_cut_middle(prefix, PREFIX_MAX);
  tsl_error_for(status, error_reason, "%s: %s", prefix, error_buf); /* the wrapped error's reason stays */
  free(prefix);
  return status;
}

int tsl_has_position(const char *msg) {
  regex_t re;
  if (regcomp(&re, "^[^\n]+:[0-9]+:[0-9]+: ", REG_EXTENDED | REG_NOSUB) != 0) return 0;
  int found = regexec(&re, msg, 0, NULL, 0) == 0;
  regfree(&re);
  return found;
}

/* The start of a UTF-8 character at or before s + at (a cut never splits one). */
static size_t char_start(const char *s, size_t at) {
  while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80) at--;
  return at;
}

static int is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

/* The bytes of s before its first control byte (or its end). */
static size_t plain_run(const char *s) {
  size_t n = 0;
  while (s[n] && !is_control((unsigned char)s[n])) n++;
  return n;
}

/* Control bytes are written as \n, \t or \xNN: a block scalar's newline
** echoed as it is would break the one-line FILE:LINE:COL message. */
const char *tsl_echo(const char *text, char *buf, size_t cap) {
  size_t n = text ? strlen(text) : 0;
  if (!text || (n <= TSL_ECHO_MAX && plain_run(text) == n)) return text;
  size_t i = 0, o = 0;
  while (i < n) {
    unsigned char c = (unsigned char)text[i];
    if (is_control(c)) {
      size_t width = c == '\n' || c == '\t' ? 2 : 4;
      if (o + width > TSL_ECHO_MAX) break;
      snprintf(buf + o, cap - o, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\x%02X", c);
      o += width;
      i++;
      continue;
    }
    size_t run = plain_run(text + i), room = TSL_ECHO_MAX - o;
    if (run > room) run = char_start(text + i, room);
    if (run == 0) break;
    memcpy(buf + o, text + i, run);
    o += run;
    i += run;
  }
  if (i < n) snprintf(buf + o, cap - o, "… (%zu bytes)", n);
  else buf[o] = '\0';
  return buf;
}

void tsl_echo_cut_middle(char *msg, size_t max) {
  static const char ellipsis[] = " … ";
  size_t n = strlen(msg);
  if (n <= max) return;
  size_t keep = (max - (sizeof ellipsis - 1)) / 2;
  size_t head = char_start(msg, keep), tail = n - keep;
  /* the tail starts at a character's first byte */
  while (((unsigned char)msg[tail] & 0xC0) == 0x80) tail++;
  memcpy(msg + head, ellipsis, sizeof ellipsis - 1);
  memmove(msg + head + sizeof ellipsis - 1, msg + tail, n - tail + 1);
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
