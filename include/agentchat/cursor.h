/*
 * cursor.h - per-agent read cursors (docs/format.md, "Cursors").
 *
 * A cursor is a file in the channel's `.cursors/` folder holding the
 * decimal seq with no newline. Its name depends on the agent's name:
 *
 *   `<name>.txt`          when the name is its own slug (lowercase ASCII
 *                         letters, digits and single inner dashes, at most
 *                         40 characters: `alice`, `claude-1`). This is the
 *                         file the Python tool reads and writes for that
 *                         name, so both tools share the cursor.
 *   `<slug>.<hex>.txt`    for every other name (`Bob`, `Claude_1`, `中文`,
 *                         the empty name): <hex> is the first 32 hex digits
 *                         of the SHA-256 of the exact name. The Python tool
 *                         gives all these names the slug's file, so `Bob`
 *                         and `bob` (or every name without ASCII letters or
 *                         digits) shared one cursor and one of them lost
 *                         messages; here distinct names never share one.
 *                         A slug has no '.', so these never collide with a
 *                         slug file.
 *
 * A missing, empty, unreadable or non-numeric cursor reads as 0; the value
 * is parsed as Python's int() does (whitespace, sign, '_' between digits).
 * Writes are atomic (temp + fsync + rename + directory fsync); the Python
 * tool writes in place, which can leave an empty cursor after a crash.
 *
 * Readers of one agent exclude each other with the cursor lock: flock on
 * the cursor file itself (no extra file, so the folder format is
 * unchanged), taken before the scan and held until the cursor is written,
 * so two processes reading as the same agent never deliver one message
 * twice and never move the cursor backward.
 *
 * Calling sequence (a read):
 *     struct ac_mutex m;
 *     if (ac_cursor_lock(chfd, agent, &m, &err) == -1) fail;
 *     before = ac_cursor_get(chfd, agent);
 *     ... scan above `before`, show the messages ...
 *     ac_cursor_advance(chfd, agent, &before, high, &err);
 *     ac_mutex_release(&m);
 * The write replaces the file, so the lock protects nothing after it: the
 * write is the last step of the critical section.
 */
#ifndef AGENTCHAT_CURSOR_H
#define AGENTCHAT_CURSOR_H

#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/mutex.h"
#include "agentchat/slug.h"

#define AC_CURSOR_DIR ".cursors"

/* Hex digits of the name hash in an exact-name cursor file. */
#define AC_CURSOR_HASH_HEX 32
/* Size of a cursor file name buffer: slug, '.', hash, ".txt", NUL. */
#define AC_CURSOR_NAME_MAX (AC_SLUG_MAX + 1 + AC_CURSOR_HASH_HEX + 5)

/* The name, inside .cursors/, of agent's cursor file (see above). */
void ac_cursor_file(const char *agent, char out[AC_CURSOR_NAME_MAX]);

/* The cursor of `agent` in the channel directory dirfd (never fails). */
int64_t ac_cursor_get(int dirfd, const char *agent);

/* Set the cursor to `value`, whatever it was (an explicit set may lower
 * it). Skips the write when the file already holds exactly this value.
 * Returns 0 or -1 with err (IO_ERROR). */
int ac_cursor_set(int dirfd, const char *agent, int64_t value, struct ac_err *err);

/* The write a read makes: move the cursor to `value` unless that lowers a
 * cursor someone else moved. With `expected` (the cursor the read scanned
 * above): when the cursor still holds *expected it becomes `value` (even
 * if lower: the Python tool's rule that rewrites a cursor pointing past
 * every message), otherwise it becomes max(cursor, value). Without it
 * (NULL) it only ever goes up. Call it holding the cursor lock. Returns 0
 * or -1 with err (IO_ERROR). */
int ac_cursor_advance(int dirfd, const char *agent, const int64_t *expected, int64_t value,
                      struct ac_err *err);

/* Take agent's cursor lock (see above) into *m; release it with
 * ac_mutex_release. A missing cursor file is first published holding "0"
 * (what a missing one reads as), so the lock never leaves an empty file.
 * Retries for up to 10 s while another process holds it. Returns 0, or -1
 * with err: CURSOR_BUSY (exit 1) after 10 s, INTERRUPTED (130) on a
 * signal, IO_ERROR when the file cannot be made or opened (a read-only or
 * full file system: the read would fail at its write anyway). */
int ac_cursor_lock(int dirfd, const char *agent, struct ac_mutex *m, struct ac_err *err);

#endif
