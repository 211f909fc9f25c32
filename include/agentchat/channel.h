/*
 * channel.h - channel names and the _meta.json record (docs/format.md 2, 3.1, 3.2).
 *
 * Name rules, in the order the Python tool applies them, then ours:
 *   1. "", ".", ".." or any of '/', '\\', ':'  -> path traversal blocked
 *   2. a leading '.' or '_'                    -> reserved prefix blocked
 *   3. (ours) control characters, invalid UTF-8 or more than 255 bytes:
 *      the Python tool would create such a directory or crash; we refuse.
 * Messages quote the name; control characters are shown escaped so every
 * error stays one line.
 */
#ifndef AGENTCHAT_CHANNEL_H
#define AGENTCHAT_CHANNEL_H

#include <jansson.h>
#include <stddef.h>

#include "agentchat/err.h"

#define AC_NAME_MAX 255
#define AC_META_FILE "_meta.json"
#define AC_META_CAP (1u << 20)

/* Why `name` cannot be one plain file name (the rules above, at most
 * `max` bytes), or NULL when it can: the channel names' and the ack agent
 * names' (receipts.h) one check. */
const char *ac_name_problem(const char *name, size_t max);

/* 0 when `why` is NULL, else -1 with `code` and "invalid <what> name
 * (<why>): '<name, quoted>'" (the channel and agent name checks). */
int ac_name_refuse(const char *name, const char *why, const char *code, const char *what,
                   struct ac_err *err);

/* Check a channel name. Returns 0, or -1 with CHANNEL_INVALID_NAME and the
 * compatible message ("invalid channel name (path traversal blocked): 'a/b'"). */
int ac_channel_name_check(const char *name, struct ac_err *err);

/* Check a legacy marker name "task-<id>.md" (docs/format.md 2.1). Returns 0 or -1
 * with CLAIM_INVALID_NAME. */
int ac_marker_name_check(const char *name, struct ac_err *err);

/* Compose _meta.json exactly as the Python tool writes it: indent 2,
 * ensure_ascii, keys channel, members, topic, created, no trailing newline.
 * Returns a malloc'ed string or NULL (ENOMEM). */
char *ac_meta_compose(const char *channel, const char *const *members,
                      size_t nmembers, const char *topic, const char *created,
                      size_t *len);

/* Parse _meta.json bytes. Returns a new jansson value (any JSON type; the
 * caller decides what a non-object means) or NULL when it is not JSON. */
json_t *ac_meta_parse(const char *data, size_t len);

/* What fsck reports about _meta.json bytes (every backend's fsck): NULL
 * when they are an object with a list of string members and a string
 * topic (or none), else the problem as a phrase. */
const char *ac_meta_problem(const char *data, size_t len);

#endif
