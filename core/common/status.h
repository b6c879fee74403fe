/*
** core/common/status.h — errors as values.
**
** Every core function that can fail returns a tsl_status (0 or a negative
** TESSEL_E_* kind) and leaves a human-readable message in the calling
** thread's error slot. Callers that add context wrap the message with
** tsl_error_wrap, so the final report reads from the outside in:
**   "loading plugin 'ddp': /x/libtessel-ddp.so: undefined symbol: foo".
** The driver is single-threaded; kernels never touch the error slot. Where
** the core does run threads side by side (a data preparation's encoders),
** each fails into its own slot and the driver carries the message over.
*/
#ifndef TSL_STATUS_H
#define TSL_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include "tessel/plugin.h"

typedef tessel_status tsl_status;

#if defined(__GNUC__)
#define TSL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TSL_PRINTF(f, a)
#endif

/* A core-only status, never passed to or from a plugin: the strategy
** declined to run this configuration on this device (its setup returned
** TESSEL_E_UNSUPPORTED it had set with set_error, e.g. gemini on a 16-bit
** backend). Exit status 3, so that scripts can tell "cannot run here" from
** "failed". */
#define TSL_E_DECLINED (-100)

/* Why the current error happened, where code must act on the cause: the
** message is for people and may be reworded, the reason is not. An error
** made by tsl_error has none; tsl_error_wrap keeps the reason of the
** error it wraps. */
typedef enum tsl_reason {
  TSL_REASON_NONE = 0,
  TSL_REASON_NO_SPACE,   /* ENOSPC or EDQUOT: the disk or a quota is full */
  TSL_REASON_FILE_LIMIT, /* EMFILE: this process's limit on open files */
  TSL_REASON_FILE_TABLE, /* ENFILE: the system's table of open files is full */
  TSL_REASON_TOO_SHORT,  /* a dataset holds no window of seq_len+1 tokens */
  TSL_REASON_OTHER_RANK, /* this rank stops because another rank failed: its words are not this rank's */
} tsl_reason;

/* Set the error message and return `status` (so `return tsl_error(...)`). */
tsl_status tsl_error(tsl_status status, const char *fmt, ...) TSL_PRINTF(2, 3);
tsl_status tsl_verror(tsl_status status, const char *fmt, va_list ap);
/* tsl_error with the reason code code may act on. */
tsl_status tsl_error_for(tsl_status status, tsl_reason reason, const char *fmt, ...) TSL_PRINTF(3, 4);
/* The error of a failed system call: the message "<fmt ...>: <strerror(err)>"
** and the reason errno `err` stands for (tsl_reason_of_errno). */
tsl_status tsl_error_sys(tsl_status status, int err, const char *fmt, ...) TSL_PRINTF(3, 4);
/* The reason an errno value stands for, TSL_REASON_NONE for most. */
tsl_reason tsl_reason_of_errno(int err);
/* What to do when an open failed for a limit on open files: for EMFILE
** (this process's limit, `ulimit -n`) and ENFILE (the whole machine's file
** table, every process's files) the advice differs; NULL for other errnos. */
const char *tsl_open_files_advice(int err);
/* The current error's reason (TSL_REASON_NONE when none was given). */
tsl_reason tsl_error_reason(void);
/* Prefix the current message with "<context>: " and return `status` —
** unless the message starts with a FILE:LINE:COL position: then it already
** says where the mistake is, and that must stay first on the line (like a
** compiler's), so it is left as it is. */
tsl_status tsl_error_wrap(tsl_status status, const char *fmt, ...) TSL_PRINTF(2, 3);
/* Room for a user's text (a config value, key or path, a --set argument)
** echoed into a message: a 100 KiB value would crowd out the rest of it (the
** position, the key, the hint), so past TSL_ECHO_MAX bytes it is cut. */
#define TSL_ECHO_MAX 160
#define TSL_ECHO_CAP (TSL_ECHO_MAX + 48)
/* `text` as a message may echo it: `text` itself when at most TSL_ECHO_MAX
** bytes and free of control bytes, else, written to buf[cap] (cap >=
** TSL_ECHO_CAP), its control bytes as \n, \t or \xNN (a message stays one
** line) and, when longer, its start (whole UTF-8 characters), an ellipsis
** and its full length. NULL stays NULL. */
const char *tsl_echo(const char *text, char *buf, size_t cap);
/* tsl_echo into a buffer that lives as long as the enclosing block, for an
** argument: tsl_error(st, "got '%s'", TSL_ECHO(value)). */
#define TSL_ECHO(text) tsl_echo((text), (char[TSL_ECHO_CAP]){0}, TSL_ECHO_CAP)
/* Cut the middle of a heap message longer than `max` bytes in place, so
** that its start (a key) and its end (a hint) stay, around an ellipsis. */
void tsl_echo_cut_middle(char *msg, size_t max);

/* The current message ("" when none). */
const char *tsl_error_message(void);
/* Forget the current message and its reason. */
void tsl_error_clear(void);
/* Does a message start with a FILE:LINE:COL: position? */
int tsl_has_position(const char *msg);
/* Short name of a status kind, e.g. "config error". */
const char *tsl_status_name(tsl_status status);
/* Process exit code for a status: 0 ok, 2 usage/config, 3 declined by the
** strategy, 1 otherwise. */
int tsl_status_exit_code(tsl_status status);

/* Propagate a failure: `TSL_TRY(st, call)` jumps to `fail` when call < 0. */
#define TSL_TRY(st, call)    \
  do {                       \
    if (((st) = (call)) < 0) \
      goto fail;             \
  } while (0)

#endif
