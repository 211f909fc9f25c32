/*
 * store.h - the storage interface: every byte of state goes through it.
 *
 * A store is one root of channels. Everything above this interface (the
 * message logic in store.c, the wait loop, receipts, the task board and
 * its leases, path locks, the Lua bindings, the CLI) is written against
 * the `ac_chan_*` and `ac_store_*` wrappers declared here, never against a
 * file, a directory descriptor or `ops->...` directly, so a second backend
 * (docs/architecture.md: an etcd cluster) plugs in without touching them.
 * The model is SQLite's VFS: upper layers never see a file descriptor,
 * every call goes through a thin wrapper (sqlite3OsRead), and the fault
 * injection sits in those wrappers, so every backend gets the same crash
 * tests. The file-system backend (src/fs/, ac_store_open_fs) is the
 * default and the archive format: its folder is exactly docs/format.md section 3.
 *
 * What a backend stores, per channel:
 *   meta        the channel record (_meta.json)
 *   messages    dense seqs, allocated and published in one step (msg_post)
 *   cursors     one seq per agent slug
 *   records     four families of named JSON records (enum ac_family):
 *               tasks, claims (leases), locks (path locks), acks
 *   blobs       derived files rebuilt from the rest (state.md)
 *   mutexes     named advisory locks held for a command (the task board's,
 *               the path locks'), and the channel's own (import)
 * and it provides change notification, workspace path resolution (path
 * locks and files_hint name files of the channel's workspace) and its own
 * consistency check (fsck).
 *
 * Calling sequence:
 *
 *     struct ac_err err = AC_ERR_INIT;
 *     struct ac_store *st = ac_store_open_fs(root, &err);
 *     struct ac_chan *ch;
 *     if (!st || ac_store_chan_open(st, "dev", &ch, &err) == -1)
 *         fail(&err);
 *     ac_chan_msg_post(ch, &req, &res, &err);           // or any ac_chan_*
 *
 *     struct ac_mutex *mx;                              // a read-modify-write
 *     rc = ac_chan_mutex_acquire(ch, AC_MUTEX_TASKS, deadline, 0, &mx, &err);
 *     ... ac_chan_rec_scan(ch, AC_TASKS, NULL, 0, &set, &err) ...
 *     ... ac_chan_rec_create / a record-changing command ...
 *     ac_mutex_release(mx);
 *
 *     ac_chan_close(ch);                                // every channel first,
 *     ac_store_close(st);                               // then the store
 *
 * Error handling: every function returns 0 (or a documented non-negative
 * value) on success and -1 with *err filled on failure (err.h: a stable
 * code, a one-line message, the exit family, the errno in sys_errno when a
 * system call failed); none prints or exits. Unless a function says
 * otherwise the code of an I/O failure is IO_ERROR (exit 1) and the
 * message names what could not be done ("could not write cursor ...:
 * <strerror>"). Expected outcomes are not errors: a missing record reads
 * as -1 with sys_errno ENOENT, a record that exists already is 0 from
 * ac_chan_rec_create, a busy mutex is AC_MUTEX_BUSY.
 *
 * Fault injection (fault.h): each wrapper that can change state reaches
 * the named point "store.<op>" before it calls the backend, so a crash
 * test can fail or kill any backend there; the file-system backend adds
 * its own points (the steps of its atomic writes, "post.dirsync", ...) and
 * one "sys.<call>" point per mutating system call.
 *
 * Versioning: a backend fills `version` with the AC_STORE_VERSION it was
 * written against (SQLite's iVersion). Operations added in a later
 * version are appended at the end of the table; the wrappers never call an
 * operation the table's version does not have, and report it as
 * STORE_UNSUPPORTED instead (exit 1).
 */
#ifndef AGENTCHAT_STORE_H
#define AGENTCHAT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agentchat/err.h"
#include "agentchat/frontmatter.h"

/* 1: channels, messages, cursors, notification, the legacy marker claim.
 * 2: record families, mutexes (a reader's too: mutex_keep), blobs,
 *    workspace paths, fsck (and the channels only fsck opens: chan_hidden,
 *    chan_open_hidden), batches and pending batches, notification of acks
 *    and cursors (receipts), the cursor of a read (its lock and its
 *    advance), a notification wait that also wakes on a descriptor of
 *    the caller (watch_wait_fd: the bridge of docs/claude-teams.md waits
 *    for the channel and a host folder in one call), copying a message
 *    file between stores (msg_put), opening a channel whose metadata is
 *    missing (chan_open_bare), one wait on several watches and one
 *    watch of several channels (watch_wait_many, watch_add: `wait --for`),
 *    ending what a process holds on the server (session_end) and
 *    retention (msg_trim: `trim`).
 *    Version 2 is not released yet: its last ten operations came with
 *    it, appended (mutex_keep, chan_hidden, chan_open_hidden,
 *    watch_wait_fd, msg_put, chan_open_bare, watch_wait_many, watch_add,
 *    session_end, msg_trim); a table may leave any of them NULL. */
#define AC_STORE_VERSION 2

#define AC_MESSAGE_CAP (16u << 20)    /* largest message file we read */

/* A message file above AC_MESSAGE_CAP is read only up to this prefix (its
 * frontmatter is at the top) and shown with a truncation notice. */
#define AC_MESSAGE_PREFIX (64u << 10)

struct ac_store;
struct ac_chan;
struct ac_watch;
struct ac_fsck_report;
struct ac_store_ops;

/* ---- messages ---- */

struct ac_post_req {
    const char *from;
    const char *to;
    const char *title;
    const char *status;
    const char *body;
    size_t body_len;
    const char *reply_to;     /* decimal text or NULL (see ac_msg_fields) */
    const struct ac_fm_field *extra;  /* extra frontmatter after title (typed
                                         messages); the backend checks them
                                         with ac_fm_extra_check and fails with
                                         MESSAGE_INVALID_FIELD, exit 1, before
                                         allocating a seq */
    size_t nextra;
    const char *ts;           /* the ts line's value, or NULL for now (the
                                 importers keep an original time; the
                                 caller checks it, docs/import.md) */
};

struct ac_post_result {
    uint64_t seq;
    char name[256];           /* the message's name (file name on the folder) */
    int published;            /* the message is visible, even if the post
                                 then reports an error (a failed directory
                                 fsync): callers must not post it again */
};

struct ac_file {
    char *data;               /* raw bytes, NUL-terminated */
    size_t len;
    int64_t mtime_sec;
    uint64_t full_size;       /* when only a prefix was read: the full size */
};

/* One message of a listing. */
struct ac_entry {
    uint64_t seq;
    char *name;
};

/* The messages of a channel above a seq (msg_list). */
struct ac_listing {
    struct ac_entry *v;     /* entries with seq > after, sorted by (seq, name) */
    size_t n;
    uint64_t max_seq;       /* highest seq among all messages (0: none) */
    size_t count;           /* number of messages */
    char *last_name;        /* name of the message with max_seq (NULL: none) */
    int from_stamp;         /* answered by a cache, without a listing */
    size_t beyond;          /* message names whose seq is above 2^63 - 1
                               (listed by the backend, never in v: readers
                               skip them, a post refuses to go on) */
    char *beyond_name;      /* one of them (NULL: none) */
};

/* ---- records ---- */

/* The record families and how a record is named in each. */
enum ac_family {
    AC_TASKS = 0,           /* "<id>"            docs/format.md 3.5 */
    AC_CLAIMS,              /* "<task>.<owner>"  docs/format.md 3.6 */
    AC_LOCKS,               /* "<lock_id>"       docs/format.md 3.7 */
    AC_ACKS,                /* "<seq>/<agent>"   docs/receipts.md */
    AC_NFAMILIES
};

/* One record as read. The backend's limits per family: tasks 4 MiB,
 * claims 1 MiB, locks 16 MiB, acks 64 KiB (EFBIG beyond). */
struct ac_record {
    char *name;               /* its name in the family */
    char *data;               /* its bytes, NUL-terminated; NULL when it
                                 could not be read (sys_errno) or was not
                                 asked for (AC_SCAN_NAMES) */
    size_t len;
    int sys_errno;            /* why data is NULL: EISDIR, ELOOP (a
                                 symlink), EINVAL (not a plain record),
                                 EFBIG, EACCES, ... */
    int plain;                /* stored as a plain record (the folder: a
                                 regular file); a scan reads only those
                                 quickly, the others for their errno */
    int64_t mtime_us;         /* when it was written (µs since 1970; read
                                 records only) */
    uint64_t generation;      /* the backend's version of the record, which
                                 grows with every write (etcd: its
                                 mod_revision); 0 when the backend keeps
                                 none (the folder), and then the bytes are
                                 what a batch compares */
    uint64_t created;         /* the backend's version when the record was
                                 created, which a later write keeps (etcd:
                                 its create_revision): the fencing
                                 generation of a lease's claim or a path
                                 lock, which a renewal keeps and a new
                                 holder changes; 0 when the backend keeps
                                 none (the folder) */
};

struct ac_recset {
    struct ac_record *v;      /* sorted bytewise by name */
    size_t n;
};

enum {
    AC_SCAN_NAMES = 1,        /* names and kinds only, no bytes */
    AC_SCAN_HIDDEN = 2        /* also the names a family keeps out of its
                                 records (the folder: "*.json" names that
                                 start with '.' or '_'), as the Python tool's
                                 glob sees them (a path-lock target) */
};

/* ---- mutexes ---- */

/* A held mutex (ac_chan_mutex_acquire). A backend's own mutex type embeds
 * this first; release it with ac_mutex_release, which needs no channel (a
 * script may close its channel before its lock). */
struct ac_mutex {
    const struct ac_store_ops *ops;   /* of the backend that made it */
    uint64_t generation;      /* a fencing token: larger for every later
                                 holder of the same mutex (etcd: the
                                 revision of the lock key), 0 when the
                                 backend has none (the folder's flock dies
                                 with its holder, so none is needed) */
};

/* The named mutexes (docs/format.md 4 "Advisory locks"); the Python tool takes
 * the same ones, so both tools exclude each other. */
#define AC_MUTEX_TASKS "_tasks.lock"
#define AC_MUTEX_PATHLOCKS ".path-locks.lock"
/* The channel's own lock (`import`: one long writer per channel, which the
 * Python tool has no counterpart for). */
#define AC_MUTEX_CHANNEL NULL

enum {
    AC_MUTEX_EXISTING = 1,    /* never create the mutex (a read-only checker:
                                 -1 with ENOENT when no writer ever made it) */
    AC_MUTEX_READER = 2       /* a reading command: do not create the mutex;
                                 when no writer ever made it, 0 with a handle
                                 that holds nothing (there is no writer to
                                 exclude). A read that succeeded calls
                                 ac_mutex_keep before it releases, so a
                                 failing read leaves the channel as it was */
};

/* How long a command waits for a named mutex (the Python tool's 10 s):
 * its deadline is ac_clock_mono_ns() + AC_MUTEX_WAIT_NS. */
#define AC_MUTEX_WAIT_NS (10 * 1000000000LL)

/* Returns of ac_chan_mutex_acquire besides 0 and -1. */
#define AC_MUTEX_TIMEOUT 1    /* the deadline passed while another held it */
#define AC_MUTEX_BUSY 2       /* deadline 0 (one try) and another holds it */

/* ---- batches: record changes plus their audit message ---- */

/* What a batch is, which decides how a backend makes it all-or-nothing and
 * which codes its failures carry (the folder: which journal records it,
 * docs/format.md 3.5-3.7):
 *   AC_BATCH_TASK      a task created or changed without a lease (one task
 *                      record); not journaled: a failed audit post undoes
 *                      the record (TASK_IO_ERROR, TASK_AUDIT_ROLLBACK_FAILED,
 *                      TASK_ALREADY_EXISTS for a record created meanwhile)
 *   AC_BATCH_LEASE     a lease mutation: the task record and its claims
 *                      (TASK_IO_ERROR, LEASE_AUDIT_FAILED,
 *                      LEASE_AUDIT_ROLLBACK_FAILED,
 *                      LEASE_TRANSACTION_CLEANUP_FAILED once announced)
 *   AC_BATCH_PATHLOCK  a path-lock mutation: one lock record
 *                      (PATH_LOCK_TRANSACTION_PENDING, IO_ERROR) */
enum ac_batch_kind {
    AC_BATCH_TASK = 0,
    AC_BATCH_LEASE,
    AC_BATCH_PATHLOCK,
    AC_NBATCH_KINDS
};

/* One record change: before -> after, NULL meaning "absent". `before` is
 * what the caller read under its mutex, with the generation it was read
 * at: a backend compares it (etcd: a compare of mod_revision on every
 * record of the transaction, or of the value when the generation is 0; the
 * folder: a record created meanwhile fails the batch). */
struct ac_change {
    int family;
    const char *name;
    const char *before;
    size_t before_len;
    const char *after;
    size_t after_len;
    uint64_t before_generation;   /* ac_record.generation of `before`, or 0 */
    int grant;                /* `after` hands the record to a (new) holder
                                 (a lease claimed or recovered): its
                                 ac_record.created becomes this batch's
                                 version, even when the record existed (a
                                 holder recovering its own expired lease
                                 rewrites the same claim); a renewal is no
                                 grant. Backends without versions ignore it */
};

struct ac_batch {
    int kind;                 /* enum ac_batch_kind */
    const struct ac_change *changes;
    size_t nchanges;          /* AC_BATCH_LEASE: the task first, then claims */
    const char *actor;        /* the audit message's sender */
    const char *event;        /* its status ("lease.claimed") */
    const char *subject;      /* the id its title names (task or lock id) */
    json_t *audit;            /* its body (an object); journaled kinds add
                                 "transaction_id" to it */
    json_t *details;          /* AC_BATCH_LEASE: recorded with the batch */
    const char *operation;    /* AC_BATCH_PATHLOCK: lock|unlock|recover */
};

/* A batch a crash left unfinished (the folder: a journal), as recorded.
 * Everything it holds is malloc'ed: ac_pending_free. */
struct ac_pending {
    int kind;                 /* enum ac_batch_kind */
    char phase[16];           /* prepared | applied | published; a header
                                 read (no check) may also give "?" for one
                                 it cannot name */
    char txid[128];           /* the id its audit message carries, "" when
                                 none can be looked up */
    int anonymous;            /* recorded without a transaction id (an old
                                 writer's): whether its audit message went
                                 out cannot be looked up */
    int no_after;             /* recorded no after state of its first record
                                 (an old writer's lease journal): that
                                 change's `after` repeats its `before`, and
                                 the other changes are not bound to it */
    char subject[256];        /* the task id or lock id */
    char event[256];          /* "" when it is not text */
    json_t *event_value;      /* the event as recorded (any JSON value; a
                                 hand-edited journal may hold anything), or NULL */
    char operation[16];       /* AC_BATCH_PATHLOCK */
    char actor[256];          /* who made it, when recorded (AC_BATCH_PATHLOCK) */
    struct ac_change *changes;  /* a full read: the record changes, one per
                                 record (first-seen order; a record listed
                                 twice keeps its first before and last after) */
    size_t nchanges;
};

/* The domain's checks of a pending batch while a full read decodes it, so
 * that a reader meets the first problem in the order the journal holds it
 * (both functions may be NULL):
 *   record   each recorded state of a record, in recorded order: `after` 0
 *            for the before state, 1 for the after state (never called for
 *            an absent one);
 *   changes  the whole change list, once every record passed, before the
 *            backend's own last checks (the phase). */
struct ac_pending_check {
    int (*record)(void *ctx, const struct ac_change *c, int after, struct ac_err *err);
    int (*changes)(void *ctx, const struct ac_pending *p, struct ac_err *err);
    void *ctx;
};

/* How ac_chan_pending_settle resolves a pending batch. */
enum {
    AC_SETTLE_ROLLBACK = 1,   /* put every record back as it was before: the
                                 first change first, then the others from
                                 the last to the first */
    AC_SETTLE_VERIFY = 2      /* check every record holds its after bytes */
};

/* ---- change notification ---- */

enum {
    AC_WATCH_MESSAGES = 1,    /* a message appeared (or anything in the
                                 channel changed) */
    AC_WATCH_ACKS = 2,        /* an ack of message `seq` appeared */
    AC_WATCH_CURSORS = 4      /* a cursor moved */
};

/* The most watches one watch_wait_many takes (EINVAL beyond). */
#define AC_WATCH_MANY_MAX 32

/* ---- the operations a backend provides ---- */

struct ac_store_ops {
    int version;              /* AC_STORE_VERSION the table was written for */
    const char *name;         /* "fs", ... (for messages) */
    void (*destroy)(struct ac_store *st);

    /* version 1 */
    /* Channel names (sorted bytewise), only those that hold _meta.json. */
    int (*chan_names)(struct ac_store *st, char ***names, size_t *n, struct ac_err *err);
    int (*chan_open)(struct ac_store *st, const char *name, struct ac_chan **out,
                     struct ac_err *err);
    /* Create the channel with this _meta.json text; CHANNEL_EXISTS if it has one. */
    int (*chan_create)(struct ac_store *st, const char *name, const char *meta,
                       size_t meta_len, struct ac_err *err);
    void (*chan_close)(struct ac_chan *ch);
    int (*meta_read)(struct ac_chan *ch, struct ac_file *out, struct ac_err *err);
    /* Allocate the next seq and publish the composed message. */
    int (*msg_post)(struct ac_chan *ch, const struct ac_post_req *req,
                    struct ac_post_result *out, struct ac_err *err);
    int (*msg_list)(struct ac_chan *ch, int64_t after, int use_stamp,
                    struct ac_listing *out, struct ac_err *err);
    int (*msg_read)(struct ac_chan *ch, const char *name, struct ac_file *out,
                    struct ac_err *err);
    /* mtime_us (may be NULL): when the cursor was last written, 0 when
     * there is none. Never fails: an unreadable cursor is 0. */
    int64_t (*cursor_get)(struct ac_chan *ch, const char *agent, int64_t *mtime_us);
    int (*cursor_set)(struct ac_chan *ch, const char *agent, int64_t value,
                      struct ac_err *err);
    /* `what`: AC_WATCH_* flags; `seq` the message of AC_WATCH_ACKS. NULL
     * when the backend cannot notify (callers then poll). wait: 1 on a
     * possible change, 0 on timeout, -1 when interrupted (errno EINTR). */
    struct ac_watch *(*watch_open)(struct ac_chan *ch, int what, uint64_t seq);
    int (*watch_wait)(struct ac_watch *w, int64_t timeout_ns);
    void (*watch_close)(struct ac_watch *w);
    /* Legacy marker claim: rename marker to task-<id>.CLAIMED-<slug>.md under
     * the seq lock. CLAIM_LOST (exit 3) if missing or taken. */
    int (*marker_claim)(struct ac_chan *ch, const char *marker, const char *agent,
                        char *dest, size_t dest_size, struct ac_err *err);

    /* version 2 */
    /* The records of `family` whose names start with `prefix` (NULL: all),
     * read unless AC_SCAN_NAMES. A family that was never written is empty;
     * one the backend cannot list fails with sys_errno (ENOTDIR). */
    int (*rec_scan)(struct ac_chan *ch, int family, const char *prefix, int flags,
                    struct ac_recset *out, struct ac_err *err);
    /* One record; -1 with sys_errno ENOENT when there is none,
     * ENAMETOOLONG for a name longer than the backend holds (so there is
     * none either), EINVAL for one that is not a record name. */
    int (*rec_read)(struct ac_chan *ch, int family, const char *name,
                    struct ac_record *out, struct ac_err *err);
    /* Publish a record that must not exist yet (acks): 1 created, 0 it
     * existed (nothing changed), 2 created but its durability is unknown
     * (err holds why, for a warning), -1 nothing was created. */
    int (*rec_create)(struct ac_chan *ch, int family, const char *name, const char *data,
                      size_t len, struct ac_err *err);
    /* Where a record lives, for messages ("<root>/<ch>/locks/<id>.json"). */
    void (*rec_where)(struct ac_chan *ch, int family, const char *name, char *out,
                      size_t size);
    /* Take a named mutex (name NULL: the channel's own), trying until the
     * CLOCK_MONOTONIC `deadline_ns` (0: once; INT64_MAX: forever). */
    int (*mutex_acquire)(struct ac_chan *ch, const char *name, int64_t deadline_ns, int flags,
                         struct ac_mutex **out, struct ac_err *err);
    void (*mutex_release)(struct ac_mutex *m);
    /* Replace a derived blob ("state.md") as a whole. */
    int (*blob_write)(struct ac_chan *ch, const char *name, const char *data, size_t len,
                      struct ac_err *err);
    /* Resolve a workspace path that passed the caller's lexical rules
     * (pathnorm.h's ac_relpath_problem, or the task record's own: relative,
     * '/'-separated, no ".." segment): 0 with the normalized path in out
     * and *is_dir, or -1 with *why (a static message, pathnorm.h). */
    int (*path_resolve)(struct ac_chan *ch, const char *path, char *out, size_t outsz,
                        int *is_dir, const char **why);
    /* Remove what crashed writers of the given families left behind
     * (temp files; best effort, never fails). Call with the family's
     * mutex held. AC_NFAMILIES: the messages' leftovers (reservations). */
    void (*sweep)(struct ac_chan *ch, int family);
    /* The backend's own consistency check (fsck.h). */
    int (*fsck)(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err);
    /* Apply the changes and post the audit message all or nothing (see
     * enum ac_batch_kind for the codes). The caller holds the family's
     * mutex and has checked that nothing is pending. */
    int (*batch_commit)(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err);
    /* The pending batch of `kind`: 1 and *out, 0 none, -1 one that cannot
     * be used (LEASE_TRANSACTION_INVALID, PATH_LOCK_TRANSACTION_INVALID,
     * or the check's error). With check NULL only its header is read (what
     * every mutation checks first: is one pending?); with a check the whole
     * batch, its changes in out->changes. */
    int (*pending_read)(struct ac_chan *ch, int kind, const struct ac_pending_check *check,
                        struct ac_pending *out, struct ac_err *err);
    /* Roll the records of a fully read batch back or verify them
     * (AC_SETTLE_*): 0 done, 1 they do not hold `after` (VERIFY), -1 with
     * err (sys_errno). */
    int (*pending_settle)(struct ac_chan *ch, const struct ac_pending *p, int how,
                          struct ac_err *err);
    /* Forget it (the folder: remove the journal), once settled. */
    int (*pending_clear)(struct ac_chan *ch, int kind, struct ac_err *err);
    /* The write of a read: the cursor becomes `value`, unless someone else
     * moved it since the read scanned above *expected (then it only goes
     * up; expected NULL: it only goes up). Call it holding the agent's
     * cursor lock. */
    int (*cursor_advance)(struct ac_chan *ch, const char *agent, const int64_t *expected,
                          int64_t value, struct ac_err *err);
    /* The agent's cursor lock: readers of one agent exclude each other from
     * before the scan until the cursor is written, waiting up to
     * AC_MUTEX_WAIT_NS: CURSOR_BUSY (exit 1) then, INTERRUPTED on a signal,
     * IO_ERROR. *out is released with ac_mutex_release. */
    int (*cursor_lock)(struct ac_chan *ch, const char *agent, struct ac_mutex **out,
                       struct ac_err *err);
    /* A read under an AC_MUTEX_READER mutex succeeded: leave the mutex as
     * the Python tool's reads leave it (the folder: create the lock file
     * that was missing). Best effort, never fails; may be NULL (nothing to
     * leave). Called before the mutex's channel is closed. */
    void (*mutex_keep)(struct ac_mutex *m);
    /* The channels the store holds but cannot open (the folder: a
     * directory whose _meta.json exists but is not a regular file, which
     * every command takes for no channel while init takes it for one),
     * sorted, for fsck to report. May be NULL (there are none). */
    int (*chan_hidden)(struct ac_store *st, char ***names, size_t *n, struct ac_err *err);
    /* Open such a channel for its check alone (ac_chan_fsck, then
     * ac_chan_close); CHANNEL_NOT_FOUND for a name chan_hidden would not
     * list. May be NULL. */
    int (*chan_open_hidden)(struct ac_store *st, const char *name, struct ac_chan **out,
                            struct ac_err *err);
    /* watch_wait, also waking when the caller's descriptor `fd` becomes
     * readable (the backend polls it with its own: etcd's
     * curl_multi_poll takes extra descriptors; it never reads fd): a bit
     * set, 1 a possible change of the channel, 2 fd is readable; 0 on
     * timeout; -1 with errno EINTR when interrupted. May be NULL (the
     * caller then polls the channel: ac_chan_watch_wait_fd). */
    int (*watch_wait_fd)(struct ac_watch *w, int64_t timeout_ns, int fd);
    /* Copying a channel between stores (export, import folder: copy.h):
     * publish message file `name` ("0017-alice-hi.md", its seq is the
     * name's) with exactly these bytes, and raise the channel's seq
     * counter to its seq, so no later post reuses it. EEXIST (sys_errno)
     * when a message with that seq exists; EINVAL for a name that is not
     * a message file's. May be NULL (STORE_UNSUPPORTED). */
    int (*msg_put)(struct ac_chan *ch, const char *name, const char *data, size_t len,
                   struct ac_err *err);
    /* Open channel `name` even when its metadata is missing: `state` and
     * `compact` of a channel folder whose _meta.json went away read it as
     * the Python tool does (empty topic and members). Such a channel takes
     * no post (CHANNEL_NOT_FOUND, as before); everything else that state
     * reads works. CHANNEL_NOT_FOUND when there is no channel by that
     * name at all. May be NULL: chan_open (a store whose channels cannot
     * exist without their metadata). */
    int (*chan_open_bare)(struct ac_store *st, const char *name, struct ac_chan **out,
                          struct ac_err *err);
    /* One wait on several watches of this store (a composite wait, `wait
     * --for`: the channels and acks it depends on, one deadline): 1 a
     * possible change of any of ws[0..n) (NULL entries are skipped: the
     * caller polls those), 0 on timeout, -1 with errno EINTR when
     * interrupted. May be NULL (ac_store_watch_wait_many then fails with
     * ENOSYS and the caller waits on one watch at a time). */
    int (*watch_wait_many)(struct ac_watch *const *ws, size_t n, int64_t timeout_ns);
    /* Make the watch w (of this store, from watch_open) also wake on the
     * changes `what` (AC_WATCH_*, as watch_open) of channel ch: one watch
     * over several channels and ack folders, which costs less than one
     * watch each (the folder: one dnotify signal instead of inotify
     * instances, whose teardown costs 12-16 ms). 0, or -1 with errno:
     * EMFILE when w holds no more (open a watch of its own then), ENOENT
     * when there is nothing to watch yet. May be NULL
     * (ac_chan_watch_add then fails with ENOSYS). */
    int (*watch_add)(struct ac_watch *w, struct ac_chan *ch, int what, uint64_t seq);
    /* End what this process holds on the server before it exits without
     * closing anything (the CLI skips freeing its state: a tenth of a short
     * command): etcd revokes the session lease, which ends every lock still
     * on it. The store stays usable (a later lock grants a new lease).
     * Best effort, never fails. May be NULL (nothing is held: the folder's
     * flocks end with the process). */
    void (*session_end)(struct ac_store *st);
    /* Retention (ac_chan_msg_trim checks the arguments first): remove the
     * messages with seq <= through, then the acks of those seqs (etcd:
     * also their idempotency tokens); the seq counter stays, so no seq is
     * ever reused. Messages before acks: a trim that stopped half way
     * left messages gone and some of their acks (which nothing reads
     * without the message), and the same trim run again finishes it.
     * *acks: the ack records removed. May be NULL (STORE_UNSUPPORTED). */
    int (*msg_trim)(struct ac_chan *ch, uint64_t through, size_t *acks, struct ac_err *err);
};

struct ac_store {
    const struct ac_store_ops *ops;
    char *root;               /* as given by the user, for messages */
};

struct ac_chan {
    struct ac_store *store;
    char *name;
    int bare;                   /* opened by chan_open_bare, its metadata missing */
};

/* ---- backends ---- */

/* The file-system backend rooted at `root` (which need not exist yet). */
struct ac_store *ac_store_open_fs(const char *root, struct ac_err *err);

/* The etcd backend (src/etcd/, docs/etcd.md): `url` is
 * etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?timeout=S&request_timeout=S&lease_ttl=S]
 * and everything of the store lives under the key prefix PREFIX/. The
 * cluster is not contacted here (a cluster that is down fails the first
 * operation). ETCD_CONFIG for a bad URL or option (never echoing
 * credentials), ETCD_NOMEM. Secrets are copied, never printed, and wiped
 * when the store closes. */
struct ac_store_etcd_opts {
    const char *username;       /* etcd's own authentication (both or neither) */
    const char *password;
    const char *ca_file;        /* TLS: a CA bundle; a client certificate and key */
    const char *cert_file;
    const char *key_file;
};
struct ac_store *ac_store_open_etcd(const char *url, const struct ac_store_etcd_opts *opts,
                                    struct ac_err *err);
/* 1 when `spec` names an etcd store (etcd://...). */
int ac_store_is_etcd(const char *spec);

/* ---- the wrappers: the only way to call a backend ---- */

void ac_store_close(struct ac_store *st);
/* What the process holds on the server ends now (the op session_end);
 * the store, its channels and handles stay valid. */
void ac_store_session_end(struct ac_store *st);
int ac_store_channels(struct ac_store *st, char ***names, size_t *n, struct ac_err *err);
int ac_store_chan_open(struct ac_store *st, const char *name, struct ac_chan **out,
                       struct ac_err *err);
int ac_store_chan_create(struct ac_store *st, const char *name, const char *meta, size_t meta_len,
                         struct ac_err *err);
int ac_store_hidden_channels(struct ac_store *st, char ***names, size_t *n, struct ac_err *err);
int ac_store_chan_open_hidden(struct ac_store *st, const char *name, struct ac_chan **out,
                              struct ac_err *err);
int ac_store_chan_open_bare(struct ac_store *st, const char *name, struct ac_chan **out,
                            struct ac_err *err);
void ac_chan_close(struct ac_chan *ch);

int ac_chan_meta_read(struct ac_chan *ch, struct ac_file *out, struct ac_err *err);
int ac_chan_msg_post(struct ac_chan *ch, const struct ac_post_req *req,
                     struct ac_post_result *out, struct ac_err *err);
int ac_chan_msg_list(struct ac_chan *ch, int64_t after, int use_stamp, struct ac_listing *out,
                     struct ac_err *err);
int ac_chan_msg_read(struct ac_chan *ch, const char *name, struct ac_file *out,
                     struct ac_err *err);
int64_t ac_chan_cursor_get(struct ac_chan *ch, const char *agent, int64_t *mtime_us);
int ac_chan_cursor_set(struct ac_chan *ch, const char *agent, int64_t value, struct ac_err *err);
struct ac_watch *ac_chan_watch_open(struct ac_chan *ch, int what, uint64_t seq);
int ac_chan_watch_wait(struct ac_chan *ch, struct ac_watch *w, int64_t timeout_ns);
void ac_chan_watch_close(struct ac_chan *ch, struct ac_watch *w);
/* ac_chan_watch_wait that also wakes when `fd` is readable (see the
 * operation): a bit set (1 the channel, 2 fd), 0 on timeout, -1 with errno
 * EINTR when interrupted, or ENOSYS when the backend cannot (its table has
 * no watch_wait_fd): the caller then waits on fd alone and polls the
 * channel. */
int ac_chan_watch_wait_fd(struct ac_chan *ch, struct ac_watch *w, int64_t timeout_ns, int fd);
int ac_chan_marker_claim(struct ac_chan *ch, const char *marker, const char *agent, char *dest,
                         size_t dest_size, struct ac_err *err);
/* The store's watch_wait_many and watch_add (see the operations): -1 with
 * errno ENOSYS when the backend has none. */
int ac_chan_watch_add(struct ac_chan *ch, struct ac_watch *w, int what, uint64_t seq);
int ac_store_watch_wait_many(struct ac_store *st, struct ac_watch *const *ws, size_t n,
                             int64_t timeout_ns);

int ac_chan_rec_scan(struct ac_chan *ch, int family, const char *prefix, int flags,
                     struct ac_recset *out, struct ac_err *err);
int ac_chan_rec_read(struct ac_chan *ch, int family, const char *name, struct ac_record *out,
                     struct ac_err *err);
int ac_chan_rec_create(struct ac_chan *ch, int family, const char *name, const char *data,
                       size_t len, struct ac_err *err);
void ac_chan_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size);
int ac_chan_mutex_acquire(struct ac_chan *ch, const char *name, int64_t deadline_ns, int flags,
                          struct ac_mutex **out, struct ac_err *err);
void ac_mutex_release(struct ac_mutex *m);      /* NULL: nothing */
void ac_mutex_keep(struct ac_mutex *m);         /* see ops->mutex_keep; NULL: nothing */
/* ac_chan_mutex_acquire (with `flags`) for one command: wait AC_MUTEX_WAIT_NS and fail
 * with the caller's codes: `timeout_code` ("TASK_LOCK_TIMEOUT") and
 * `timeout_msg` when another kept it, INTERRUPTED (exit 130) on SIGINT,
 * `io_code` (NULL: IO_ERROR) with "<io_what>: <strerror>" for a system
 * error. */
int ac_chan_mutex_enter(struct ac_chan *ch, const char *name, int flags, struct ac_mutex **out,
                        const char *timeout_code, const char *timeout_msg, const char *io_code,
                        const char *io_what, struct ac_err *err);
int ac_chan_blob_write(struct ac_chan *ch, const char *name, const char *data, size_t len,
                       struct ac_err *err);
int ac_chan_path_resolve(struct ac_chan *ch, const char *path, char *out, size_t outsz,
                         int *is_dir, const char **why);
void ac_chan_sweep(struct ac_chan *ch, int family);
int ac_chan_fsck(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err);
int ac_chan_batch_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err);
int ac_chan_pending_read(struct ac_chan *ch, int kind, const struct ac_pending_check *check,
                         struct ac_pending *out, struct ac_err *err);
int ac_chan_pending_settle(struct ac_chan *ch, const struct ac_pending *p, int how,
                           struct ac_err *err);
int ac_chan_pending_clear(struct ac_chan *ch, int kind, struct ac_err *err);
/* Without cursor_advance a plain cursor_set; without cursor_lock 0 and
 * *out NULL (nothing to hold). */
int ac_chan_cursor_advance(struct ac_chan *ch, const char *agent, const int64_t *expected, int64_t value,
                           struct ac_err *err);
int ac_chan_cursor_lock(struct ac_chan *ch, const char *agent, struct ac_mutex **out,
                        struct ac_err *err);
/* What ac_chan_msg_trim removed. */
struct ac_trim_result {
    size_t messages;            /* message files (a seq the Python tool gave
                                   twice counts twice) */
    size_t acks;                /* ack records */
    uint64_t newest;            /* the newest message's seq, which stays */
};

/* Remove the messages with seq 1..through and their acks, keeping the
 * newest message: TRIM_KEEPS_NEWEST (exit 1, nothing removed) when no
 * message is above `through` (so a folder shared with the Python tool,
 * which numbers a post from the files it sees, never reuses a seq; our
 * own counter keeps the high-water mark anyway). STORE_UNSUPPORTED on a
 * backend without msg_trim. ops->msg_trim after the checks; fault point
 * store.msg_trim between them. 0 with *out, or -1 with err (the checks'
 * refusals change nothing; a failure of the removal may leave it half
 * done, oldest first: the same trim again finishes it). */
int ac_chan_msg_trim(struct ac_chan *ch, uint64_t through, struct ac_trim_result *out,
                     struct ac_err *err);
/* Its checks alone: what it would remove (out->acks stays 0: counting
 * them costs what removing them does), or its refusal. Nothing changes. */
int ac_chan_msg_trim_check(struct ac_chan *ch, uint64_t through, struct ac_trim_result *out,
                           struct ac_err *err);
/* ops->msg_put; fault point store.msg_put. */
int ac_chan_msg_put(struct ac_chan *ch, const char *name, const char *data, size_t len,
                    struct ac_err *err);

/* ---- helpers ---- */

void ac_file_free(struct ac_file *f);
void ac_names_free(char **names, size_t n);
void ac_listing_free(struct ac_listing *l);
void ac_record_free(struct ac_record *r);
void ac_recset_free(struct ac_recset *s);
void ac_pending_free(struct ac_pending *p);

/* ---- generic message logic (store.c), backend independent ---- */

struct ac_inmsg {
    uint64_t seq;
    char *name;
    char *text;               /* Python read_text() view: "\n" newlines, U+FFFD */
    size_t text_len;
    struct ac_fm fm;          /* points into text */
    int64_t mtime_sec;
    int incomplete;           /* empty or not newline-terminated */
    uint64_t truncated;       /* full size when only a prefix is shown, else 0 */
    char *decode_error;       /* not UTF-8: Python's read_text() error, else NULL;
                                 fm is then empty when Python's reader of the
                                 frontmatter meets the bad bytes too */
};

struct ac_skip {
    char *name;
    int sys_errno;
};

struct ac_inbox {
    struct ac_inmsg *v;       /* messages shown, in seq order */
    size_t n;
    uint64_t max_seq;         /* highest seq among all messages seen */
    size_t count;             /* messages in the channel */
    struct ac_skip *skipped;  /* messages that could not be read */
    size_t nskipped;
    int held;                 /* the batch stops below a file still being
                                 written (ac_inbox_fetch) */
};

enum {
    AC_INBOX_ALL = 1,         /* no relevance filter (read --all, peek) */
    AC_INBOX_NO_STAMP = 2     /* always list the messages */
};

/* A message file that is empty or lacks its final newline and changed
 * less than this many seconds ago is taken for one still being written (the
 * Python tool writes messages in place). */
#define AC_INCOMPLETE_GRACE_SEC 2

/* Messages with seq > after that are relevant to `agent` (or all of them
 * with AC_INBOX_ALL), read and parsed.
 * Incomplete files: every reader that moves a cursor (read, wait, inbox,
 * watch) gets its batch here, so the rule lives here. A fresh incomplete
 * file, relevant or not, is never returned and nothing above it is: the
 * batch ends below it (out->max_seq) and out->held is set. The call looks
 * again every 20 ms for up to AC_INCOMPLETE_GRACE_SEC, by which time a
 * writer has finished or the file is no longer fresh (then it is returned
 * as it is: a hand-made file without a final newline). INTERRUPTED on a
 * signal while it waits. */
int ac_inbox_fetch(struct ac_chan *ch, const char *agent, int64_t after, int flags,
                   struct ac_inbox *out, struct ac_err *err);

/* The message(s) whose seq is `seq`, any recipient, read and parsed:
 * normally one; none (out->n == 0) when there is no such message; two or
 * more only where a writer without our seq protocol made them. max_seq and
 * count describe the channel as the lookup saw it. */
int ac_inbox_seq(struct ac_chan *ch, uint64_t seq, struct ac_inbox *out, struct ac_err *err);

/* The last `n` messages by seq, regardless of recipient. */
int ac_inbox_last(struct ac_chan *ch, size_t n, struct ac_inbox *out, struct ac_err *err);
void ac_inbox_free(struct ac_inbox *in);

#endif
