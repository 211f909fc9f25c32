/*
 * receipts.h - acks and read receipts of a message (docs/receipts.md).
 *
 * A receipt says how far each addressee of a message got: delivered (the
 * message file is in the channel), read (the agent's cursor passed the
 * message's seq) or acked (the agent ran `ack`). Nothing shared is ever
 * rewritten to record it:
 *
 *   - "read" comes from the cursors the readers already keep
 *     (.cursors/<slug>.txt, docs/format.md 3.4);
 *   - an ack is one file per (message, agent), written once by its single
 *     writer, the agent itself:
 *
 *         <channel>/.acks/<seq>/<agent>.json
 *
 *     <seq> is the decimal seq without leading zeros; <agent> is the agent
 *     name exactly as given (not its slug: agents whose names share a slug
 *     share a cursor, but never an ack). The Python tool ignores the hidden
 *     directory. The record is composed by the caller (Lua); this module
 *     only publishes and reads the bytes.
 *
 * Writing an ack follows the atomic recipe of fsutil.h: temp file in
 * .acks/<seq>/, fsync, link() to the final name (never replacing one that
 * exists), fsync of the directory; a directory created on the way is made
 * durable by an fsync of its parent. A crash at any step leaves no ack or
 * the whole ack, never a partial one; a stale temp (".<agent>.json.*.tmp")
 * is ignored by readers and swept by a later ack of the same message once
 * it is a minute old. Acking twice is harmless: the first record stays.
 *
 * Agent names must be usable as one file name: not empty, not "." or "..",
 * no '/', '\\' or ':', no leading '.' or '_', no control characters, valid
 * UTF-8, at most AC_ACK_AGENT_MAX bytes (RECEIPT_INVALID_AGENT, exit 1).
 *
 * Fault points (fault.h): "ack.mkdir", then ac_write_atomic's "ack.write",
 * "ack.fsync", "ack.publish", "ack.dirsync".
 *
 * Calling sequence:
 *     int fd = ch->store->ops->chan_dirfd(ch);
 *     rc = ac_ack_write(fd, seq, "bob", json, len, &err);  // 1 new, 0 existed,
 *                                                          // 2 new + warning
 *     rc = ac_ack_read(fd, seq, "bob", &data, &len, &mtime_us, &err);
 *     rc = ac_receipts_wait(fd, seq, agents, n, AC_RECEIPT_ACKED,
 *                           timeout_s, interval_s, reached, &err);
 * Every function returns -1 with *err filled on failure and never prints.
 */
#ifndef AGENTCHAT_RECEIPTS_H
#define AGENTCHAT_RECEIPTS_H

#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"

#define AC_ACK_DIR ".acks"
#define AC_ACK_AGENT_MAX 200          /* bytes; "<agent>.json" stays a file name */
#define AC_ACK_RECORD_CAP (64u << 10) /* largest ack record read */

/* The states a waiter can ask for. An ack counts as read too: an agent
 * that acked a message has seen it, whatever its cursor says. */
enum { AC_RECEIPT_READ = 1, AC_RECEIPT_ACKED = 2 };

/* Check an agent name (rules above). Returns 0, or -1 with
 * RECEIPT_INVALID_AGENT and a one-line message quoting the name. */
int ac_ack_agent_check(const char *agent, struct ac_err *err);

/* Publish `len` bytes as the ack of `agent` for message `seq` in the
 * channel directory chfd, creating .acks/ and .acks/<seq>/ as needed.
 * Returns 1 when written, 0 when the agent had already acked (nothing is
 * changed), 2 when the ack was published but the directory fsync after it
 * failed (err holds the failure, to be shown as a warning: the ack is
 * visible and whole, its durability unknown), -1 with err
 * (RECEIPT_INVALID_AGENT, IO_ERROR; nothing was published). */
int ac_ack_write(int chfd, uint64_t seq, const char *agent, const char *data,
                 size_t len, struct ac_err *err);

/* Read the ack of `agent` for `seq`: 1 with a malloc'ed NUL-terminated
 * *data (length *len) and the file's modification time in microseconds
 * since 1970 (*mtime_us); 0 when there is none; -1 with err
 * (RECEIPT_INVALID_AGENT, IO_ERROR for an unreadable record). */
int ac_ack_read(int chfd, uint64_t seq, const char *agent, char **data, size_t *len,
                int64_t *mtime_us, struct ac_err *err);

/* The agents that acked `seq`: a malloc'ed array of malloc'ed names, sorted
 * bytewise (free with ac_names_free from store.h); *n = 0 and *names NULL
 * when there are none. Only "<valid agent>.json" regular entries count.
 * Returns 0 or -1 with err (IO_ERROR). */
int ac_ack_list(int chfd, uint64_t seq, char ***names, size_t *n, struct ac_err *err);

/* The cursor of `agent` (as cursor.h reads it) and the modification time
 * of its file in microseconds since 1970, 0 when there is no file. Never
 * fails. */
int64_t ac_receipt_cursor(int chfd, const char *agent, int64_t *mtime_us);

/* Block, without using CPU, until each of the n agents reached `state`
 * (AC_RECEIPT_READ: its cursor is at least seq or it acked;
 * AC_RECEIPT_ACKED: it acked) for message `seq`. reached[i] is set to 1
 * for each agent that did (once reached, an agent stays reached for the
 * rest of the wait, even if its cursor is later rewritten lower).
 *
 * The waiter creates .acks/<seq>/ (and .cursors/ for AC_RECEIPT_READ) and
 * watches them with one dirwatch (dirwatch.h), so an ack or a cursor move
 * wakes it at once; it rescans every interval_s anyway (the whole
 * mechanism where notification is unavailable or the directories cannot
 * be created). timeout_s: NaN or negative = 0, +inf = no deadline.
 *
 * Returns 0 when all reached it, 1 on timeout (reached[] says who did not),
 * -1 with err: RECEIPT_INVALID_AGENT (a name that can never ack; checked
 * before waiting), INTERRUPTED (exit 130) on SIGINT/SIGTERM. */
int ac_receipts_wait(int chfd, uint64_t seq, const char *const *agents, size_t n,
                     int state, double timeout_s, double interval_s,
                     unsigned char *reached, struct ac_err *err);

#endif
