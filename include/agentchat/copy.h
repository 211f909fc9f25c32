/*
 * copy.h - copy a channel from one store to another (docs/etcd.md
 * "Migration"): `agent-chat export --to DIR` (any store -> a folder) and
 * `agent-chat import folder DIR` (a folder -> the root's store), so the
 * folder stays the archive format and teams can move either way.
 *
 * What is copied, through the store interface only (store.h), so any two
 * backends work:
 *   the channel record     _meta.json's bytes (the channel is created: a
 *                          channel that exists in the target is refused,
 *                          CHANNEL_EXISTS, before anything is written)
 *   messages               every message file, byte for byte, under its
 *                          own name and seq (ac_chan_msg_put), so the
 *                          target's counter is at least the source's
 *                          highest message
 *   records                tasks, claims, path locks, and the acks of
 *                          every message, byte for byte
 *   cursors                of every agent the channel names (its members,
 *                          the senders and addressees of its messages, the
 *                          acking agents) that has one
 * Not copied: state.md (derived: `compact` rebuilds it), the legacy
 * task-<id>.md markers, a pending journal (resolve it first:
 * recover-pending), and what cannot be read or placed (a message over the
 * 16 MiB cap, an unreadable record, a second file of one seq): each is
 * counted in `skipped`.
 *
 * Calling sequence:
 *     struct ac_copy_report rep;
 *     if (ac_store_copy_channel(src, dst, "dev", &rep, &err) == -1) fail;
 *
 * Error handling: -1 with err (the stores' codes: CHANNEL_NOT_FOUND,
 * CHANNEL_EXISTS, IO_ERROR, ETCD_*...). A failure after the channel was
 * created leaves the part copied so far: copy again into a fresh target.
 */
#ifndef AGENTCHAT_COPY_H
#define AGENTCHAT_COPY_H

#include <stddef.h>

#include "agentchat/err.h"
#include "agentchat/store.h"

struct ac_copy_report {
    size_t messages;
    size_t records;           /* tasks, claims, locks */
    size_t acks;
    size_t cursors;
    size_t skipped;
};

int ac_store_copy_channel(struct ac_store *src, struct ac_store *dst, const char *name,
                          struct ac_copy_report *rep, struct ac_err *err);

#endif
