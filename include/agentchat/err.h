/*
 * err.h - the one error type of the C runtime.
 *
 * Every fallible runtime function takes a `struct ac_err *` as its last
 * argument and, on failure, fills it with a stable code string (for example
 * "CHANNEL_NOT_FOUND"), a one-line human message and the exit-code family of
 * docs/format.md section 2.5. Lua sees the code and message as `nil, message, code`;
 * the CLI prints `agent-chat: [CODE: ]message` and exits with `exit_code`.
 *
 * Calling sequence:
 *     struct ac_err err = AC_ERR_INIT;
 *     if (ac_something(..., &err) == -1)
 *         report(err.code, err.msg, err.exit_code);
 *
 * Error handling: functions return -1 (or NULL) and fill *err; they never
 * print and never exit. `sys_errno` keeps the errno that caused the failure
 * (0 when the failure is not a system error).
 */
#ifndef AGENTCHAT_ERR_H
#define AGENTCHAT_ERR_H

#include <stddef.h>

/* Exit-code families (docs/format.md 2.5). */
enum {
    AC_EXIT_OK = 0,
    AC_EXIT_GENERAL = 1,   /* channel errors, PATH_LOCK_*, STATE_* */
    AC_EXIT_USAGE = 2,     /* usage, TASK_*, LEASE_*, EVENT_*, wait timeout */
    AC_EXIT_CLAIM_LOST = 3,
    AC_EXIT_INTERRUPTED = 130
};

#define AC_ERR_MSG_MAX 1024

struct ac_err {
    const char *code;          /* static string; NULL when no error */
    int exit_code;
    int sys_errno;
    char msg[AC_ERR_MSG_MAX];
};

#define AC_ERR_INIT { NULL, 0, 0, { 0 } }

/* Fill *err (if err is not NULL). Always returns -1 so callers can
 * `return ac_err_set(...)`. errno is preserved. */
int ac_err_set(struct ac_err *err, int exit_code, const char *code,
               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Like ac_err_set, but appends ": <strerror(errnum)>" and records errnum in
 * sys_errno. Code is "IO_ERROR" unless given. */
int ac_err_sys(struct ac_err *err, int errnum, const char *code,
               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copy `in` into `out` (size outsz) so that it can be quoted in a one-line
 * message: control characters and bytes that are not UTF-8 become \n, \t,
 * \r or \xNN, and the result is cut with "..." when longer than `maxchars`
 * bytes. Returns out. */
char *ac_err_quote(char *out, size_t outsz, const char *in, size_t maxchars);

#endif
