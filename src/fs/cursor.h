/*
 * cursor.h - per-agent read cursors (SPEC.md 3.4).
 *
 * `.cursors/<slugify(agent)>.txt` holds the decimal seq with no newline.
 * A missing, empty, unreadable or non-numeric cursor reads as 0; the value
 * is parsed as Python's int() does (whitespace, sign, '_' between digits).
 * Writes are atomic (temp + fsync + rename + directory fsync); the Python
 * tool writes in place, which can leave an empty cursor after a crash.
 * Agents whose names share a slug share a cursor (kept for compatibility).
 */
#ifndef AGENTCHAT_CURSOR_H
#define AGENTCHAT_CURSOR_H

#include <stdint.h>

#include "agentchat/err.h"

#define AC_CURSOR_DIR ".cursors"

/* The cursor of `agent` in the channel directory dirfd (never fails). */
int64_t ac_cursor_get(int dirfd, const char *agent);

/* Set the cursor. Skips the write when the file already holds exactly this
 * value. Returns 0 or -1 with err (IO_ERROR). */
int ac_cursor_set(int dirfd, const char *agent, int64_t value, struct ac_err *err);

#endif
