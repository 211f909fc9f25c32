/*
 * journal.h - the file-system backend's batches (store.h): one journal
 * engine for the lease and path-lock mutations, and the plain commit of a
 * task record. Private to src/fs/.
 *
 * A journaled batch is a change list, {record, before, after} with NULL
 * meaning "absent", plus the audit message that announces it. The engine
 * runs every journaled batch through the same six steps:
 *
 *   1. write the journal, phase "prepared" (the change list, base64);
 *   2. apply the changes to the record files;
 *   3. phase "applied";
 *   4. post the audit message, whose body carries the transaction_id;
 *   5. phase "published";
 *   6. remove the journal.
 *
 * A crash anywhere leaves the old state (before 2), the new state (after
 * 6), or a journal, which `recover-pending` settles: rolled back
 * (prepared; applied whose audit message is not found) or verified and
 * removed (published; applied whose message exists). What differs between
 * the two journals is data, a *format description* (journal.c):
 *
 *   - the file and its bytes: claims/.lease-transaction.json (version 2,
 *     sorted keys, ASCII: task_before/task_after/claim_changes, docs/format.md
 *     3.6) and locks/.path-lock-transaction.json (version 1, sorted keys,
 *     UTF-8: before/after of one lock record, docs/format.md 3.7), each exactly
 *     as the Python tool writes and reads it, so either tool recovers the
 *     other's crash;
 *   - the fault points of every step ("lease.journal.prepared.write", ...,
 *     "pathlock.record.unlink", "lease.audit", "lease.journal.delete");
 *   - the policies the Python tool has for each: a prepared path-lock
 *     journal is never written over an existing one (link()); a failed
 *     change is undone at once (a lease one reports LEASE_AUDIT_FAILED); a
 *     failed lease audit post is undone in process (TASK_AUDIT_FAILED)
 *     while a path-lock one is resolved as recover-pending would (the
 *     message may have been published; PATH_LOCK_AUDIT_FAILED when it is
 *     rolled back);
 *   - how a journal is read back: only its header to tell whether one is
 *     pending, or whole, in the order the Python tool checks it, with the
 *     domain's record checks called on the way (ac_pending_check);
 *   - the codes and messages of its failures.
 *
 * Every jansson call's result is checked: an allocation failure anywhere
 * is an ENOMEM failure before the step it belongs to, never a half
 * written journal.
 */
#ifndef AGENTCHAT_FS_JOURNAL_H
#define AGENTCHAT_FS_JOURNAL_H

#include "agentchat/store.h"

int ac_fs_batch_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err);
int ac_fs_pending_read(struct ac_chan *ch, int kind, const struct ac_pending_check *check,
                       struct ac_pending *out, struct ac_err *err);
int ac_fs_pending_settle(struct ac_chan *ch, const struct ac_pending *p, int how, struct ac_err *err);
int ac_fs_pending_clear(struct ac_chan *ch, int kind, struct ac_err *err);

/* Decode `data` as a journal of `kind` and encode it again, as our writer
 * would write the same transaction (for the fuzzer: every journal either
 * tool may leave is read the same way, and what we write reads back).
 * The whole journal is read, without the domain's record checks. 0 with
 * *p (ac_pending_free) and *out (malloc'ed, *outlen bytes), or -1 with
 * the error recover-pending would give. */
int ac_fs_journal_recode(int kind, const char *data, size_t len, struct ac_pending *p, char **out,
                         size_t *outlen, struct ac_err *err);

/* The journal file of `kind` relative to the channel ("claims/.lease-
 * transaction.json"), for fsck's findings. */
const char *ac_fs_journal_path(int kind);

#endif
