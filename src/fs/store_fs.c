/*
 * store_fs.c - the file system backend of the store interface.
 *
 * The folder is the whole state (docs/format.md 3). Every path below the root is
 * reached through openat() with O_NOFOLLOW from the root descriptor, so a
 * symlink planted in the root or in a channel never leads outside.
 */
#include "store_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/buf.h"
#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "agentchat/fault.h"
#include "agentchat/fsck.h"
#include "agentchat/slug.h"
#include "cursor.h"
#include "dirwatch.h"
#include "fsutil.h"
#include "journal.h"
#include "mutex.h"
#include "scan.h"
#include "seq.h"
#include "workspace.h"

/* Scan stamp evidence (see scan.h). Our mkdir of _seq.lock observed within
 * PROOF_WINDOW_NS with distinct mtimes before and after shows fine-grained
 * timestamps where the file system is not known to have them. The spans
 * "statx .. mkdir" and "rmdir .. statx" must run without preemption and
 * within SPAN_NS, so no other poster can act inside them. */
#define PROOF_WINDOW_NS 50000
#define SPAN_NS 5000000

struct fs_store {
    struct ac_store base;
    int rootfd;               /* -1 until opened; the root may not exist */
};

static const struct ac_store_ops fs_ops;

const char *const ac_channel_temp_targets[] = { AC_META_FILE, AC_SEQ_HIGH_FILE, "state.md", NULL };

static struct fs_chan *fs_chan(struct ac_chan *ch)
{
    return (struct fs_chan *)ch;
}

/* Open the root directory if it exists. Returns the fd, or -1 with errno. */
static int root_fd(struct fs_store *st)
{
    if (st->rootfd == -1)
        st->rootfd = ac_open_dir_path(st->base.root);
    return st->rootfd;
}

static void fs_destroy(struct ac_store *base)
{
    struct fs_store *st = (struct fs_store *)base;
    if (st->rootfd != -1)
        close(st->rootfd);
    free(st->base.root);
    free(st);
}

struct ac_store *ac_store_open_fs(const char *root, struct ac_err *err)
{
    struct fs_store *st = calloc(1, sizeof *st);
    if (!st || !(st->base.root = strdup(root))) {
        free(st);
        ac_err_sys(err, ENOMEM, NULL, "could not open store");
        return NULL;
    }
    st->base.ops = &fs_ops;
    st->rootfd = -1;
    return &st->base;
}

/* ---- channels ---- */

struct names {
    int rootfd;
    int hidden;               /* list the hidden channels instead */
    char **v;
    size_t n, cap;
    int oom;
};

/* Is the channel directory fd hidden: its _meta.json there, but not a
 * regular file (a symlink, a FIFO), so that no command can open it while
 * init refuses to make it? */
static int meta_hidden(int fd)
{
    struct stat st;
    return fstatat(fd, AC_META_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode);
}

static int names_cb(void *ctx, const char *name, unsigned char type)
{
    struct names *c = ctx;
    int fd, listed;
    if (name[0] == '.' || type != DT_DIR)
        return 0;
    if (c->hidden && ac_channel_name_check(name, NULL) == -1)
        return 0;
    fd = ac_open_dir_at(c->rootfd, name);
    if (fd == -1)
        return 0;
    listed = c->hidden ? meta_hidden(fd) : ac_is_regular_at(fd, AC_META_FILE);
    close(fd);
    if (!listed)
        return 0;
    if (ac_grow(&c->v, &c->cap, c->n + 1, sizeof *c->v) == -1) {
        c->oom = 1;
        return 1;
    }
    if (!(c->v[c->n] = strdup(name))) {
        c->oom = 1;
        return 1;
    }
    c->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_channels(struct ac_store *base, int hidden, char ***out, size_t *n,
                         struct ac_err *err)
{
    struct fs_store *st = (struct fs_store *)base;
    struct names c;
    memset(&c, 0, sizeof c);
    c.hidden = hidden;
    *out = NULL;
    *n = 0;
    c.rootfd = root_fd(st);
    if (c.rootfd == -1) {
        if (errno == ENOENT)
            return 0;       /* a root that does not exist has no channels */
        return ac_err_sys(err, errno, NULL, "could not open root %s", base->root);
    }
    if (ac_dir_walk(c.rootfd, names_cb, &c) == -1 || c.oom) {
        int e = c.oom ? ENOMEM : errno;
        ac_names_free(c.v, c.n);
        return ac_err_sys(err, e, NULL, "could not list channels under %s", base->root);
    }
    if (c.n > 1)
        qsort(c.v, c.n, sizeof *c.v, cmp_str);
    *out = c.v;
    *n = c.n;
    return 0;
}

static int fs_chan_names(struct ac_store *base, char ***out, size_t *n, struct ac_err *err)
{
    return list_channels(base, 0, out, n, err);
}

static int fs_chan_hidden(struct ac_store *base, char ***out, size_t *n, struct ac_err *err)
{
    return list_channels(base, 1, out, n, err);
}

static int not_found(struct ac_store *base, const char *name, struct ac_err *err)
{
    char shown[300];
    ac_err_quote(shown, sizeof shown, name, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_NOT_FOUND",
                      "channel '%s' not found under %s (run: init %s)", shown, base->root, shown);
}

/* Which channel directories open_chan opens: those with a regular
 * _meta.json; those whose _meta.json is not one (fsck's hidden channels);
 * or those with a regular one or none at all (chan_open_bare). */
enum open_mode { OPEN_LISTED, OPEN_HIDDEN, OPEN_BARE };

static int open_chan(struct ac_store *base, const char *name, enum open_mode mode,
                     struct ac_chan **out, struct ac_err *err)
{
    struct fs_store *st = (struct fs_store *)base;
    struct fs_chan *ch;
    struct stat sb;
    int rfd, fd, bare = 0;

    if (ac_channel_name_check(name, err) == -1)
        return -1;
    rfd = root_fd(st);
    if (rfd == -1) {
        if (errno == ENOENT || errno == ENOTDIR)
            return not_found(base, name, err);
        return ac_err_sys(err, errno, NULL, "could not open root %s", base->root);
    }
    fd = ac_open_dir_at(rfd, name);
    if (fd == -1) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            return not_found(base, name, err);
        return ac_err_sys(err, errno, NULL, "could not open channel %s", name);
    }
    if (mode == OPEN_BARE && fstatat(fd, AC_META_FILE, &sb, AT_SYMLINK_NOFOLLOW) == -1 &&
        errno == ENOENT) {
        bare = 1;
    } else if (mode == OPEN_HIDDEN ? !meta_hidden(fd) : !ac_is_regular_at(fd, AC_META_FILE)) {
        close(fd);
        return not_found(base, name, err);
    }
    ch = calloc(1, sizeof *ch);
    if (!ch || !(ch->base.name = strdup(name))) {
        free(ch);
        close(fd);
        return ac_err_sys(err, ENOMEM, NULL, "could not open channel");
    }
    ch->base.store = base;
    ch->fd = fd;
    ch->base.bare = bare;
    *out = &ch->base;
    return 0;
}

static int fs_chan_open(struct ac_store *base, const char *name, struct ac_chan **out,
                        struct ac_err *err)
{
    return open_chan(base, name, OPEN_LISTED, out, err);
}

static int fs_chan_open_hidden(struct ac_store *base, const char *name, struct ac_chan **out,
                               struct ac_err *err)
{
    return open_chan(base, name, OPEN_HIDDEN, out, err);
}

static int fs_chan_open_bare(struct ac_store *base, const char *name, struct ac_chan **out,
                             struct ac_err *err)
{
    return open_chan(base, name, OPEN_BARE, out, err);
}

static void fs_chan_close(struct ac_chan *base)
{
    struct fs_chan *ch = fs_chan(base);
    if (!ch)
        return;
    close(ch->fd);
    free(ch->base.name);
    free(ch);
}

static int exists_error(const char *name, struct ac_err *err)
{
    char shown[300];
    ac_err_quote(shown, sizeof shown, name, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_EXISTS", "channel '%s' already exists", shown);
}

static int fs_chan_create(struct ac_store *base, const char *name, const char *meta,
                          size_t meta_len, struct ac_err *err)
{
    struct fs_store *st = (struct fs_store *)base;
    int rfd, fd, made_dir = 0;

    if (ac_channel_name_check(name, err) == -1)
        return -1;
    if (ac_mkdirs(base->root, 0755) == -1)
        return ac_err_sys(err, errno, NULL, "could not create root %s", base->root);
    rfd = root_fd(st);
    if (rfd == -1)
        return ac_err_sys(err, errno, NULL, "could not open root %s", base->root);
    if (AC_FAULT("init.mkdir") == -1)
        return ac_err_sys(err, errno, NULL, "could not create channel %s", name);
    if (ac_sys_mkdirat(rfd, name, 0755) == 0)
        made_dir = 1;
    else if (errno != EEXIST)
        return ac_err_sys(err, errno, NULL, "could not create channel %s", name);
    fd = ac_open_dir_at(rfd, name);
    if (fd == -1)
        return ac_err_sys(err, errno, NULL, "could not create channel %s", name);
    if (ac_is_regular_at(fd, AC_META_FILE) ||
        faccessat(fd, AC_META_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        close(fd);
        return exists_error(name, err);
    }
    if (ac_write_atomic(fd, AC_META_FILE, meta, meta_len, 0644,
                        AC_ATOMIC_NOREPLACE, "init.meta") == -1) {
        int e = errno;
        close(fd);
        if (made_dir && e != EEXIST)
            ac_sys_unlinkat(rfd, name, AT_REMOVEDIR);   /* leave nothing behind */
        if (e == EEXIST)
            return exists_error(name, err);
        return ac_err_sys(err, e, NULL, "could not create channel %s", name);
    }
    close(fd);
    if (made_dir && ac_fsync_dir(rfd) == -1)
        return ac_err_sys(err, errno, NULL, "could not create channel %s", name);
    return 0;
}

/* The first AC_MESSAGE_PREFIX bytes of an oversized message, cut after the
 * last complete line. */
static int read_prefix(int fd, const struct stat *st, struct ac_file *out)
{
    char *buf = malloc(AC_MESSAGE_PREFIX + 1);
    ssize_t n;
    if (!buf)
        return -1;
    do
        n = pread(fd, buf, AC_MESSAGE_PREFIX, 0);
    while (n == -1 && errno == EINTR);
    if (n <= 0) {
        free(buf);
        return -1;
    }
    while (n > 0 && buf[n - 1] != '\n')
        n--;
    buf[n] = '\0';
    out->data = buf;
    out->len = (size_t)n;
    out->mtime_sec = st->st_mtim.tv_sec;
    out->full_size = (uint64_t)st->st_size;
    return 0;
}

static int read_at(int dirfd, const char *name, size_t cap, struct ac_file *out,
                   struct ac_err *err)
{
    struct stat st;
    int fd;
    memset(out, 0, sizeof *out);
    do
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    if (fd == -1)
        return ac_err_sys(err, errno, NULL, "could not read %s", name);
    if (ac_read_fd(fd, cap, &out->data, &out->len, &st) == -1) {
        int e = errno;
        if (e == EFBIG && cap == AC_MESSAGE_CAP && read_prefix(fd, &st, out) == 0) {
            close(fd);
            return 0;
        }
        close(fd);
        return ac_err_sys(err, e, NULL, "could not read %s", name);
    }
    out->mtime_sec = st.st_mtim.tv_sec;
    close(fd);
    return 0;
}

static int fs_meta_read(struct ac_chan *base, struct ac_file *out, struct ac_err *err)
{
    return read_at(fs_chan(base)->fd, AC_META_FILE, AC_META_CAP, out, err);
}

/* ---- messages ---- */

static int fs_msg_list(struct ac_chan *base, int64_t after, int use_stamp,
                       struct ac_listing *out, struct ac_err *err)
{
    return ac_scan_list(fs_chan(base)->fd, after, use_stamp, out, err);
}

static int fs_msg_read(struct ac_chan *base, const char *name, struct ac_file *out,
                       struct ac_err *err)
{
    return read_at(fs_chan(base)->fd, name, AC_MESSAGE_CAP, out, err);
}

/* Highest seq and message count on disk, from the stamp when the lock
 * evidence allows, else from a listing. */
static int disk_state(int fd, const struct ac_seqlock *lk, struct ac_listing *l, struct ac_err *err)
{
    struct ac_stamp stamp;
    if (lk->have_states && !lk->preempted && lk->window_ns < SPAN_NS &&
        ac_stamp_valid(fd, &lk->pre, &stamp)) {
        memset(l, 0, sizeof *l);
        l->max_seq = stamp.max_seq;
        l->count = (size_t)stamp.count;
        return 0;
    }
    return ac_scan_list(fd, INT64_MAX, 0, l, err);
}

static int seq_exhausted(const char *chan, uint64_t top, struct ac_err *err)
{
    char shown[300];
    ac_err_quote(shown, sizeof shown, chan, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "SEQ_EXHAUSTED",
                      "channel '%s' has no seq left: seq %" PRIu64 " is taken and %" PRIu64
                      " is the highest seq", shown, top, AC_SEQ_MAX);
}

/* The high-water mark, or SEQ_HIGH_INVALID / IO_ERROR. */
static int read_high(int fd, const char *chan, uint64_t *high, struct ac_err *err)
{
    char raw[32], shown[300], val[80];
    if (ac_seq_high_get(fd, high, raw) == 0)
        return 0;
    if (errno != EINVAL && errno != ERANGE)
        return ac_err_sys(err, errno, NULL, "could not read %s", AC_SEQ_HIGH_FILE);
    ac_err_quote(shown, sizeof shown, chan, 200);
    ac_err_quote(val, sizeof val, raw, 24);
    return ac_err_set(err, AC_EXIT_GENERAL, "SEQ_HIGH_INVALID",
                      "%s of channel '%s' holds '%s', not a seq from 0 to %" PRIu64
                      " (run: agent-chat fsck %s --repair)",
                      AC_SEQ_HIGH_FILE, shown, val, AC_SEQ_MAX, shown);
}

/* After a publish whose lock turned out lost: did anyone allocate a seq
 * above ours meanwhile? Then a reader may already be past ours and the
 * message must move up (1); else it stays where it is (0). */
static int passed_by(int fd, uint64_t seq)
{
    struct ac_listing l;
    struct ac_err ignored = AC_ERR_INIT;
    uint64_t high;
    int above;
    if (ac_scan_list(fd, INT64_MAX, 0, &l, &ignored) == -1)
        return 1;
    above = l.max_seq > seq || l.beyond > 0;
    ac_listing_free(&l);
    return above || ac_seq_high_get(fd, &high, NULL) == -1 || high > seq;
}

/* How one attempt under the seq lock ended. */
enum { ATTEMPT_DONE, ATTEMPT_LOST, ATTEMPT_MOVE };

/* One attempt at posting under a fresh seq lock: allocate, publish, check
 * the lock again. ATTEMPT_LOST: the lock was lost before anything was
 * published (start over); ATTEMPT_MOVE: the message is published but
 * others went past it while this poster was stopped (post it again above
 * them). `stale`, when not empty, is an earlier copy of this message to
 * remove once this one is published. */
static int post_attempt(struct ac_chan *base, struct ac_msg_fields *f, const char *from_slug,
                        const char *title_slug, const char *stale, struct ac_post_result *out,
                        int *how, struct ac_err *err)
{
    int fd = fs_chan(base)->fd;
    struct ac_seqlock lk;
    struct ac_listing l;
    uint64_t count, seq, high;
    struct ac_dirstate done;
    int64_t t0;
    long switches;
    int rc;

    *how = ATTEMPT_DONE;
    if (ac_seqlock_acquire(fd, &lk, err) == -1)
        return -1;
    if (disk_state(fd, &lk, &l, err) == -1)
        goto fail;
    seq = l.max_seq;
    count = l.count;
    if (l.beyond) {
        char shown[300], name[300];
        ac_err_quote(shown, sizeof shown, base->name, 200);
        ac_err_quote(name, sizeof name, l.beyond_name, 200);
        ac_err_set(err, AC_EXIT_GENERAL, "SEQ_EXHAUSTED",
                   "channel '%s' has no seq left: message file '%s' has a seq above %" PRIu64
                   ", the highest one", shown, name, AC_SEQ_MAX);
        ac_listing_free(&l);
        goto fail;
    }
    ac_listing_free(&l);
    if (read_high(fd, base->name, &high, err) == -1)
        goto fail;
    if (high > seq)
        seq = high;
    if (seq >= AC_SEQ_MAX) {
        seq_exhausted(base->name, seq, err);
        goto fail;
    }
    seq++;

    for (;;) {
        char resv[AC_SEQ_RESERVATION_MAX], *text;
        size_t len;
        int tfd = ac_seq_reserve(fd, seq, resv);

        if (tfd == -1) {
            ac_err_sys(err, errno, NULL, "could not allocate a seq");
            goto fail;
        }
        if (tfd == AC_SEQ_TAKEN) {      /* a second lock holder has it */
            if (seq == AC_SEQ_MAX) {
                seq_exhausted(base->name, seq, err);
                goto fail;
            }
            seq++;
            continue;
        }
        rc = read_high(fd, base->name, &high, err);
        if (rc == -1 || high >= seq) {
            close(tfd);
            ac_seq_unreserve(fd, resv);
            if (rc == -1)
                goto fail;
            if (high >= AC_SEQ_MAX) {
                seq_exhausted(base->name, high, err);
                goto fail;
            }
            seq = high + 1;
            continue;
        }
        f->seq = seq;
        text = ac_msg_compose(f, &len);
        if (!text || len > AC_MESSAGE_CAP) {
            close(tfd);
            ac_seq_unreserve(fd, resv);
            free(text);
            if (text)           /* readers would show only its first 64 KiB */
                ac_err_set(err, AC_EXIT_GENERAL, "MESSAGE_TOO_LARGE",
                           "message would be %zu bytes, more than the %u bytes (%u MiB) a message "
                           "file may have", len, AC_MESSAGE_CAP, AC_MESSAGE_CAP >> 20);
            else
                ac_err_sys(err, ENOMEM, NULL, "could not compose the message");
            goto fail;
        }
        /* Raise .seqhigh, then link the message, each only while the lock
         * is still ours (seq.h, fencing). */
        if (ac_seq_high_raise(fd, seq, &lk) == -1) {
            int e = errno;
            free(text);
            close(tfd);
            ac_seq_unreserve(fd, resv);
            if (e == ENOLCK) {
                *how = ATTEMPT_LOST;
                ac_seqlock_release(&lk);
                return 0;
            }
            ac_err_sys(err, e, NULL, "could not record the seq high-water mark");
            goto fail;
        }
        snprintf(out->name, sizeof out->name, "%04" PRIu64 "-%s-%s.md", seq, from_slug, title_slug);
        /* The reservation file becomes the message (one file creation). */
        rc = ac_publish_temp_gated(fd, resv, tfd, text, len, out->name,
                                   AC_ATOMIC_NOREPLACE | AC_ATOMIC_NO_DIRSYNC, "post.message",
                                   ac_seqlock_gate, &lk);
        free(text);
        if (rc == 0)
            break;
        if (errno == ENOLCK) {
            *how = ATTEMPT_LOST;
            ac_seqlock_release(&lk);
            return 0;
        }
        if (errno != EEXIST) {
            ac_err_sys(err, errno, NULL, "could not publish message %s", out->name);
            goto fail;
        }
        if (seq == AC_SEQ_MAX) {
            seq_exhausted(base->name, seq, err);
            goto fail;
        }
        seq++;                  /* never overwrite an existing message */
    }
    out->seq = seq;
    out->published = 1;
    /* Stopped between the last check and the link? Then others may have
     * taken the lock and gone past this seq meanwhile. */
    if (ac_seqlock_check(&lk) == -1 && passed_by(fd, seq))
        *how = ATTEMPT_MOVE;
    if (stale && stale[0])
        ac_sys_unlinkat(fd, stale, 0);  /* the earlier copy; this one is visible */
    if (AC_FAULT("post.dirsync") == -1 || ac_fsync_dir(fd) == -1) {
        ac_err_sys(err, errno, NULL, "could not sync channel directory");
        goto fail;
    }
    if (AC_FAULT("post.unlock") == -1) {
        ac_err_sys(err, errno, NULL, "could not release the seq lock");
        goto fail;
    }

    /* Release, then stamp the directory if the evidence allows (scan.h):
     * only after a post that held its lock throughout. */
    t0 = ac_clock_mono_ns();
    switches = ac_clock_preemptions();
    if (ac_seqlock_release(&lk) == 0 && *how == ATTEMPT_DONE && !(stale && stale[0]) &&
        ac_dir_state(fd, &done) == 0 && ac_clock_mono_ns() - t0 < SPAN_NS &&
        switches != -1 && ac_clock_preemptions() == switches && lk.have_states &&
        (ac_fs_fine_timestamps(fd) ||
         (lk.window_ns < PROOF_WINDOW_NS && !lk.preempted &&
          (lk.pre.sec != lk.post.sec || lk.pre.nsec != lk.post.nsec)))) {
        struct ac_stamp stamp;
        memset(&stamp, 0, sizeof stamp);
        stamp.key = done;
        stamp.max_seq = seq;
        stamp.count = count + 1;
        snprintf(stamp.last_name, sizeof stamp.last_name, "%s", out->name);
        ac_stamp_write(fd, &stamp);
    }
    return 0;

fail:
    ac_seqlock_release(&lk);
    return -1;
}

/* A post tries this many fresh locks before it gives up (each lost one
 * means a poster stopped for over AC_SEQ_FENCE_SEC while holding it). */
#define POST_ATTEMPTS 8

static int fs_msg_post(struct ac_chan *base, const struct ac_post_req *req,
                       struct ac_post_result *out, struct ac_err *err)
{
    struct ac_msg_fields f;
    char ts[AC_ISO_MAX], from_slug[AC_SLUG_MAX + 1], title_slug[AC_SLUG_MAX + 1];
    struct ac_post_result copy;         /* the last published copy */
    int attempt, how;

    out->published = 0;
    copy.published = 0;
    copy.name[0] = '\0';
    if (base->bare)                     /* no channel to post to: its metadata is missing */
        return not_found(base->store, base->name, err);
    if (req->nextra > 0) {
        char why[512];
        if (ac_fm_extra_check(req->extra, req->nextra, why, sizeof why) == -1)
            return ac_err_set(err, AC_EXIT_GENERAL, "MESSAGE_INVALID_FIELD", "%s", why);
    }
    ac_slugify(req->from, strlen(req->from), from_slug);
    ac_slugify(req->title, strlen(req->title), title_slug);
    ac_clock_iso_now(ts, 0);
    memset(&f, 0, sizeof f);
    f.from = req->from;
    f.to = req->to;
    f.reply_to = req->reply_to;
    f.channel = base->name;
    f.ts = req->ts ? req->ts : ts;
    f.status = req->status;
    f.title = req->title;
    f.body = req->body;
    f.body_len = req->body_len;
    f.extra = req->extra;
    f.nextra = req->nextra;

    for (attempt = 0; attempt < POST_ATTEMPTS; attempt++) {
        out->published = 0;
        if (post_attempt(base, &f, from_slug, title_slug, copy.name, out, &how, err) == -1) {
            if (!out->published && copy.published)
                *out = copy;            /* the earlier copy is still there */
            return -1;
        }
        if (how == ATTEMPT_DONE)
            return 0;
        if (how == ATTEMPT_MOVE)
            copy = *out;
    }
    if (copy.published)
        *out = copy;
    return ac_err_set(err, AC_EXIT_GENERAL, "SEQ_LOCK_LOST",
                      "lost the channel seq lock %d times in a row (a poster stopped for over %d s "
                      "while holding it?)%s", POST_ATTEMPTS, AC_SEQ_FENCE_SEC,
                      copy.published ? "; the message is posted but others may have passed its seq" : "");
}

/* ---- cursors ---- */

static int64_t fs_cursor_get(struct ac_chan *base, const char *agent, int64_t *mtime_us)
{
    int fd = fs_chan(base)->fd;
    if (mtime_us) {
        char name[AC_CURSOR_NAME_MAX];
        struct stat st;
        int cdir;
        *mtime_us = 0;
        ac_cursor_file(agent, name);
        cdir = ac_open_dir_at(fd, AC_CURSOR_DIR);
        if (cdir != -1) {
            if (fstatat(cdir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                *mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
            close(cdir);
        }
    }
    return ac_cursor_get(fd, agent);
}

static int fs_cursor_set(struct ac_chan *base, const char *agent, int64_t value,
                         struct ac_err *err)
{
    return ac_cursor_set(fs_chan(base)->fd, agent, value, err);
}

static int fs_cursor_advance(struct ac_chan *base, const char *agent, const int64_t *expected,
                             int64_t value, struct ac_err *err)
{
    return ac_cursor_advance(fs_chan(base)->fd, agent, expected, value, err);
}

/* A held mutex of the channel (the named ones and the cursor locks): the
 * flock, and what keeping it needs (fs_mutex_keep). */
struct fs_mutex {
    struct ac_flock f;        /* first: the struct ac_mutex is f.base */
    int chfd;                 /* the channel's (not owned) */
    char name[32];            /* "" for a cursor lock (nothing to keep) */
};

static int fs_cursor_lock(struct ac_chan *base, const char *agent, struct ac_mutex **out,
                          struct ac_err *err)
{
    struct fs_mutex *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m)
        return ac_err_sys(err, ENOMEM, NULL, "could not lock the cursor");
    if (ac_cursor_lock(fs_chan(base)->fd, agent, &m->f, err) == -1) {
        free(m);
        return -1;
    }
    *out = &m->f.base;
    return 0;
}

/* ---- change notification (see dirwatch.h) ---- */

/* A watch of the channel directory (messages), or of .acks/<seq>/ and
 * .cursors/ (receipts), which the watch creates so that there is something
 * to watch before the first ack or cursor: one dirwatch over all of them,
 * since they share the one dnotify signal. */
struct ac_watch {
    struct ac_dirwatch *dw;
    int fds[2];               /* directories the watch opened (-1: none) */
};

static struct ac_watch *fs_watch_open(struct ac_chan *base, int what, uint64_t seq)
{
    int fd = fs_chan(base)->fd, first;
    struct ac_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->fds[0] = w->fds[1] = -1;
    if (!(what & (AC_WATCH_ACKS | AC_WATCH_CURSORS))) {
        w->dw = ac_dirwatch_open(fd);
    } else {
        if (what & AC_WATCH_ACKS) {
            char name[32];
            snprintf(name, sizeof name, "%" PRIu64 "/", seq);
            w->fds[0] = ac_fs_family_dir(fd, AC_ACKS, name, 1, NULL);
        }
        if (what & AC_WATCH_CURSORS) {
            if (ac_sys_mkdirat(fd, AC_CURSOR_DIR, 0755) == 0 || errno == EEXIST)
                w->fds[1] = ac_open_dir_at(fd, AC_CURSOR_DIR);
        }
        /* No acks directory: poll (the acks are what the waiter needs). */
        first = (what & AC_WATCH_ACKS) ? w->fds[0] : w->fds[1];
        if (first != -1) {
            w->dw = ac_dirwatch_open(first);
            /* Half a watch would miss cursor moves: poll instead. */
            if (w->dw && first == w->fds[0] && w->fds[1] != -1 &&
                ac_dirwatch_add(w->dw, w->fds[1]) == -1) {
                ac_dirwatch_close(w->dw);
                w->dw = NULL;
            }
        }
    }
    if (!w->dw) {
        if (w->fds[0] != -1)
            close(w->fds[0]);
        if (w->fds[1] != -1)
            close(w->fds[1]);
        free(w);
        return NULL;
    }
    return w;
}

static int fs_watch_wait(struct ac_watch *w, int64_t timeout_ns)
{
    return ac_dirwatch_wait(w->dw, timeout_ns);
}

static int fs_watch_wait_fd(struct ac_watch *w, int64_t timeout_ns, int fd)
{
    return ac_dirwatch_wait_fd(w->dw, timeout_ns, fd);
}

/* Add the directories of (ch, what, seq) to w's dirwatch (dnotify keeps its
 * own descriptor of each, inotify watches it by path: ours are closed). */
static int fs_watch_add(struct ac_watch *w, struct ac_chan *base, int what, uint64_t seq)
{
    int chfd = fs_chan(base)->fd, fd, rc = 0, e = 0;
    if (!(what & (AC_WATCH_ACKS | AC_WATCH_CURSORS)))
        return ac_dirwatch_add(w->dw, chfd);
    if (what & AC_WATCH_ACKS) {
        char name[32];
        snprintf(name, sizeof name, "%" PRIu64 "/", seq);
        fd = ac_fs_family_dir(chfd, AC_ACKS, name, 1, NULL);
        if (fd == -1)
            return -1;
        rc = ac_dirwatch_add(w->dw, fd);
        e = errno;
        close(fd);
    }
    if (rc == 0 && (what & AC_WATCH_CURSORS)) {
        if (ac_sys_mkdirat(chfd, AC_CURSOR_DIR, 0755) == -1 && errno != EEXIST)
            return -1;
        fd = ac_open_dir_at(chfd, AC_CURSOR_DIR);
        if (fd == -1)
            return -1;
        rc = ac_dirwatch_add(w->dw, fd);
        e = errno;
        close(fd);
    }
    errno = e;
    return rc;
}

static int fs_watch_wait_many(struct ac_watch *const *ws, size_t n, int64_t timeout_ns)
{
    struct ac_dirwatch *dws[AC_WATCH_MANY_MAX];
    size_t i;
    if (n > AC_WATCH_MANY_MAX) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; i < n; i++)
        dws[i] = ws[i] ? ws[i]->dw : NULL;
    return ac_dirwatch_wait_many(dws, n, timeout_ns);
}

static void fs_watch_close(struct ac_watch *w)
{
    ac_dirwatch_close(w->dw);
    if (w->fds[0] != -1)
        close(w->fds[0]);
    if (w->fds[1] != -1)
        close(w->fds[1]);
    free(w);
}

/* ---- legacy marker claim ---- */

static int fs_marker_claim(struct ac_chan *base, const char *marker, const char *agent,
                           char *dest, size_t dest_size, struct ac_err *err)
{
    int fd = fs_chan(base)->fd;
    struct ac_seqlock lk;
    char slug[AC_SLUG_MAX + 1], shown[300];
    size_t stem = strlen(marker) - 3;   /* drop ".md" */
    int rc;

    ac_slugify(agent, strlen(agent), slug);
    if (stem + strlen(slug) + 13 > dest_size)
        return ac_err_set(err, AC_EXIT_GENERAL, "CLAIM_INVALID_NAME", "task name too long");
    snprintf(dest, dest_size, "%.*s.CLAIMED-%s.md", (int)stem, marker, slug);
    if (ac_seqlock_acquire(fd, &lk, err) == -1)
        return -1;
    rc = ac_is_regular_at(fd, marker) ? ac_rename_noreplace(fd, marker, dest) : -1;
    if (rc == 0 && ac_fsync_dir(fd) == -1)
        rc = 0;   /* renamed; durability is best effort like every rename */
    ac_seqlock_release(&lk);
    if (rc == -1) {
        ac_err_quote(shown, sizeof shown, marker, 200);
        return ac_err_set(err, AC_EXIT_CLAIM_LOST, "CLAIM_LOST",
                          "task '%s' already claimed or missing (lost the race)", shown);
    }
    return 0;
}

/* ---- mutexes (mutex.h) ---- */

static int fs_mutex_acquire(struct ac_chan *base, const char *name, int64_t deadline_ns, int flags,
                            struct ac_mutex **out, struct ac_err *err)
{
    int fd = fs_chan(base)->fd, rc;
    struct fs_mutex *m;
    if (name && strlen(name) >= sizeof m->name)
        return ac_err_sys(err, ENAMETOOLONG, NULL, "could not lock %s", name);
    if (!(m = calloc(1, sizeof *m)))
        return ac_err_sys(err, ENOMEM, NULL, "could not lock %s", name ? name : base->name);
    m->f.fd = -1;
    m->chfd = fd;
    if (!name)
        rc = ac_flock_dir(fd, deadline_ns, &m->f);
    else if (flags & AC_MUTEX_READER)
        rc = ac_flock_acquire_reader(fd, name, deadline_ns, &m->f);
    else if (flags & AC_MUTEX_EXISTING)
        rc = ac_flock_acquire_existing(fd, name, deadline_ns, &m->f);
    else
        rc = ac_flock_acquire(fd, name, deadline_ns, &m->f);
    if (rc != 0) {
        int e = errno;
        free(m);
        if (rc == -1)
            return ac_err_sys(err, e, NULL, "could not lock %s", name ? name : base->name);
        return rc;              /* AC_MUTEX_TIMEOUT, AC_MUTEX_BUSY */
    }
    if (name)
        strcpy(m->name, name);
    *out = &m->f.base;
    return 0;
}

static void fs_mutex_release(struct ac_mutex *base)
{
    struct fs_mutex *m = (struct fs_mutex *)base;
    ac_flock_release(&m->f);
    free(m);
}

static void fs_mutex_keep(struct ac_mutex *base)
{
    struct fs_mutex *m = (struct fs_mutex *)base;
    if (m->name[0])
        ac_flock_keep(m->chfd, m->name, &m->f);
}

/* ---- derived blobs ---- */

static int fs_blob_write(struct ac_chan *base, const char *name, const char *data, size_t len,
                         struct ac_err *err)
{
    char tag[64];
    /* A plain file of the channel ("state.md"); its fault points are
     * "<stem>.write", ... ("state.write"). */
    if (!name[0] || name[0] == '.' || strchr(name, '/'))
        return ac_err_sys(err, EINVAL, NULL, "could not write %s", name);
    snprintf(tag, sizeof tag, "%.*s", (int)strcspn(name, "."), name);
    if (ac_write_atomic(fs_chan(base)->fd, name, data, len, 0644, AC_ATOMIC_REPLACE, tag) == -1)
        return ac_err_sys(err, errno, NULL, "could not write %s", name);
    return 0;
}

/* ---- workspace paths (workspace.h) ---- */

static int fs_path_resolve(struct ac_chan *base, const char *path, char *out, size_t outsz,
                           int *is_dir, const char **why)
{
    return ac_relpath_realize(fs_chan(base)->fd, path, out, outsz, is_dir, why);
}

/* ---- debris ---- */

static void fs_sweep(struct ac_chan *base, int family)
{
    int fd;
    if (family == AC_NFAMILIES) {
        struct ac_err ignored = AC_ERR_INIT;
        ac_seq_sweep(fs_chan(base)->fd, &ignored);
        return;
    }
    /* With the family's mutex held, every temp in its directory belongs
     * to a writer that died. */
    fd = ac_open_dir_at(fs_chan(base)->fd, ac_fs_families[family].dir);
    if (fd != -1) {
        ac_sweep_temps(fd, 0);
        close(fd);
    }
}

/* ---- copying a channel (store.h msg_put) ---- */

/* A message file's name: "<digits>-<rest>.md", no '/', its seq. */
static int put_name_seq(const char *name, uint64_t *seq)
{
    size_t n = strspn(name, "0123456789"), len = strlen(name);
    if (n == 0 || name[n] != '-' || len < n + 4 || strcmp(name + len - 3, ".md") != 0 ||
        strchr(name, '/') || ac_seq_parse(name, n, seq) == -1 || *seq == 0)
        return -1;
    return 0;
}

static int fs_msg_put(struct ac_chan *base, const char *name, const char *data, size_t len,
                      struct ac_err *err)
{
    int fd = fs_chan(base)->fd, rc = -1;
    struct ac_seqlock lk;
    struct ac_listing l;
    uint64_t seq;

    if (put_name_seq(name, &seq) == -1)
        return ac_err_sys(err, EINVAL, NULL, "could not copy message %s", name);
    if (ac_seqlock_acquire(fd, &lk, err) == -1)
        return -1;
    /* one file per seq: the seq must be free */
    if (ac_scan_list(fd, (int64_t)seq - 1, 0, &l, err) == -1)
        goto out;
    if (l.n > 0 && l.v[0].seq == seq) {
        ac_listing_free(&l);
        ac_err_sys(err, EEXIST, NULL, "could not copy message %s: seq %" PRIu64 " is taken", name, seq);
        goto out;
    }
    ac_listing_free(&l);
    if (ac_seq_high_raise(fd, seq, &lk) == -1 ||
        ac_write_atomic_gated(fd, name, data, len, 0644, AC_ATOMIC_NOREPLACE, "post.message",
                              ac_seqlock_gate, &lk) == -1) {
        ac_err_sys(err, errno, NULL, "could not copy message %s", name);
        goto out;
    }
    rc = 0;
out:
    ac_seqlock_release(&lk);
    return rc;
}

static const struct ac_store_ops fs_ops = {
    AC_STORE_VERSION,
    "fs",
    fs_destroy,
    /* version 1 */
    fs_chan_names,
    fs_chan_open,
    fs_chan_create,
    fs_chan_close,
    fs_meta_read,
    fs_msg_post,
    fs_msg_list,
    fs_msg_read,
    fs_cursor_get,
    fs_cursor_set,
    fs_watch_open,
    fs_watch_wait,
    fs_watch_close,
    fs_marker_claim,
    /* version 2 */
    ac_fs_rec_scan,
    ac_fs_rec_read,
    ac_fs_rec_create,
    ac_fs_rec_where,
    fs_mutex_acquire,
    fs_mutex_release,
    fs_blob_write,
    fs_path_resolve,
    fs_sweep,
    ac_fs_fsck,
    ac_fs_batch_commit,
    ac_fs_pending_read,
    ac_fs_pending_settle,
    ac_fs_pending_clear,
    fs_cursor_advance,
    fs_cursor_lock,
    fs_mutex_keep,
    fs_chan_hidden,
    fs_chan_open_hidden,
    fs_watch_wait_fd,
    fs_msg_put,
    fs_chan_open_bare,
    fs_watch_wait_many,
    fs_watch_add,
    NULL,                       /* session_end: flocks end with the process */
    ac_fs_msg_trim,
};
