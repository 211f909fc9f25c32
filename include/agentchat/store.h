/*
 * store.h - the storage interface every command goes through.
 *
 * A store is one root (a folder of channels, for the file system backend).
 * Everything above this interface (the generic message logic in store.c,
 * the wait loop in wait.c, the Lua bindings, the CLI) is written against
 * `struct ac_store_ops`, so a second backend (for example a coordination
 * service with server-side watches) can plug in without touching commands.
 * The file system backend in store_fs.c is the default and the archive
 * format: its folder is exactly docs/format.md section 3.
 *
 * Ownership: ac_store_open_* returns a store the caller frees with
 * ac_store_close(); channels opened from it must be closed before it.
 * Every function returns 0 / a value on success and -1 with *err filled on
 * failure; none prints or exits.
 */
#ifndef AGENTCHAT_STORE_H
#define AGENTCHAT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "agentchat/err.h"
#include "agentchat/frontmatter.h"
#include "agentchat/scan.h"

#define AC_MESSAGE_CAP (16u << 20)    /* largest message file we read */

struct ac_store;
struct ac_chan;
struct ac_watch;

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
    char name[256];           /* file name inside the channel */
    int published;            /* the message is visible, even if the post
                                 then reports an error (a failed directory
                                 fsync): callers must not post it again */
};

struct ac_file {
    char *data;               /* raw bytes, NUL-terminated */
    size_t len;
    int64_t mtime_sec;
    uint64_t full_size;       /* when only a prefix was read: the file size */
};

/* A message file above AC_MESSAGE_CAP is read only up to this prefix (its
 * frontmatter is at the top) and shown with a truncation notice. */
#define AC_MESSAGE_PREFIX (64u << 10)

struct ac_store_ops {
    const char *name;
    void (*destroy)(struct ac_store *st);
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
    int64_t (*cursor_get)(struct ac_chan *ch, const char *agent);
    int (*cursor_set)(struct ac_chan *ch, const char *agent, int64_t value,
                      struct ac_err *err);
    /* Change notification: wait returns 1 on a possible change, 0 on
     * timeout, -1 when interrupted (errno EINTR). A backend without
     * notification returns NULL from watch_open; callers then poll. */
    struct ac_watch *(*watch_open)(struct ac_chan *ch);
    int (*watch_wait)(struct ac_watch *w, int64_t timeout_ns);
    void (*watch_close)(struct ac_watch *w);
    /* Legacy marker claim: rename marker to task-<id>.CLAIMED-<slug>.md under
     * the seq lock. CLAIM_LOST (exit 3) if missing or taken. */
    int (*marker_claim)(struct ac_chan *ch, const char *marker, const char *agent,
                        char *dest, size_t dest_size, struct ac_err *err);
    /* The channel directory descriptor, for the record stores (task board,
     * path locks) whose journals are file-system transactions; -1 for a
     * backend without one (they then report an unsupported backend). */
    int (*chan_dirfd)(struct ac_chan *ch);
};

struct ac_store {
    const struct ac_store_ops *ops;
    char *root;               /* as given by the user, for messages */
};

struct ac_chan {
    struct ac_store *store;
    char *name;
};

/* The file system backend rooted at `root` (which need not exist yet). */
struct ac_store *ac_store_open_fs(const char *root, struct ac_err *err);
void ac_store_close(struct ac_store *st);

/* ch's directory descriptor (ops->chan_dirfd), or -1 for a backend
 * without one. */
int ac_chan_dirfd(struct ac_chan *ch);

void ac_file_free(struct ac_file *f);
void ac_names_free(char **names, size_t n);

/* ---- generic message logic (store.c), backend independent ---- */

struct ac_inmsg {
    uint64_t seq;
    char *name;
    char *text;               /* Python read_text() view: "\n" newlines, U+FFFD */
    size_t text_len;
    struct ac_fm fm;          /* points into text */
    int64_t mtime_sec;
    int incomplete;           /* empty or not newline-terminated */
    uint64_t truncated;       /* file size when only a prefix is shown, else 0 */
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
    uint64_t max_seq;         /* highest seq among all message files seen */
    size_t count;             /* message files in the channel */
    struct ac_skip *skipped;  /* files that could not be read */
    size_t nskipped;
    int held;                 /* the batch stops below a file still being
                                 written (ac_inbox_fetch) */
};

enum {
    AC_INBOX_ALL = 1,         /* no relevance filter (read --all, peek) */
    AC_INBOX_NO_STAMP = 2     /* always list the directory */
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

/* The message file(s) whose seq is `seq`, any recipient, read and parsed:
 * normally one; none (out->n == 0) when there is no such message; two or
 * more only where a writer without our seq protocol made them. max_seq and
 * count describe the channel as the lookup saw it. */
int ac_inbox_seq(struct ac_chan *ch, uint64_t seq, struct ac_inbox *out, struct ac_err *err);

/* The last `n` messages by seq, regardless of recipient. */
int ac_inbox_last(struct ac_chan *ch, size_t n, struct ac_inbox *out, struct ac_err *err);
void ac_inbox_free(struct ac_inbox *in);

#endif
