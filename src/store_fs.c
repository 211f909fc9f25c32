/*
 * store_fs.c - the file system backend of the store interface.
 *
 * The folder is the whole state (docs/format.md 3). Every path below the root is
 * reached through openat() with O_NOFOLLOW from the root descriptor, so a
 * symlink planted in the root or in a channel never leads outside.
 */
#include "agentchat/store.h"

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

#include "agentchat/channel.h"
#include "agentchat/clock.h"
#include "agentchat/cursor.h"
#include "agentchat/dirwatch.h"
#include "agentchat/fault.h"
#include "agentchat/fsutil.h"
#include "agentchat/scan.h"
#include "agentchat/seq.h"
#include "agentchat/slug.h"

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

struct fs_chan {
    struct ac_chan base;
    int fd;
};

static const struct ac_store_ops fs_ops;

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
    char **v;
    size_t n, cap;
    int oom;
};

static int names_cb(void *ctx, const char *name, unsigned char type)
{
    struct names *c = ctx;
    int fd;
    if (name[0] == '.' || type != DT_DIR)
        return 0;
    fd = ac_open_dir_at(c->rootfd, name);
    if (fd == -1)
        return 0;
    if (!ac_is_regular_at(fd, AC_META_FILE)) {
        close(fd);
        return 0;
    }
    close(fd);
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        char **nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv) {
            c->oom = 1;
            return 1;
        }
        c->v = nv;
        c->cap = ncap;
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

static int fs_chan_names(struct ac_store *base, char ***out, size_t *n, struct ac_err *err)
{
    struct fs_store *st = (struct fs_store *)base;
    struct names c;
    memset(&c, 0, sizeof c);
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

static int not_found(struct ac_store *base, const char *name, struct ac_err *err)
{
    char shown[300];
    ac_err_quote(shown, sizeof shown, name, 200);
    return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_NOT_FOUND",
                      "channel '%s' not found under %s (run: init %s)", shown, base->root, shown);
}

static int fs_chan_open(struct ac_store *base, const char *name, struct ac_chan **out,
                        struct ac_err *err)
{
    struct fs_store *st = (struct fs_store *)base;
    struct fs_chan *ch;
    int rfd, fd;

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
    if (!ac_is_regular_at(fd, AC_META_FILE)) {
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
    *out = &ch->base;
    return 0;
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

static int64_t fs_cursor_get(struct ac_chan *base, const char *agent)
{
    return ac_cursor_get(fs_chan(base)->fd, agent);
}

static int fs_cursor_set(struct ac_chan *base, const char *agent, int64_t value,
                         struct ac_err *err)
{
    return ac_cursor_set(fs_chan(base)->fd, agent, value, err);
}

/* ---- change notification (see dirwatch.h) ---- */

static struct ac_watch *fs_watch_open(struct ac_chan *base)
{
    return (struct ac_watch *)ac_dirwatch_open(fs_chan(base)->fd);
}

static int fs_watch_wait(struct ac_watch *w, int64_t timeout_ns)
{
    return ac_dirwatch_wait((struct ac_dirwatch *)w, timeout_ns);
}

static void fs_watch_close(struct ac_watch *w)
{
    ac_dirwatch_close((struct ac_dirwatch *)w);
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

static int fs_chan_dirfd(struct ac_chan *base)
{
    return fs_chan(base)->fd;
}

static const struct ac_store_ops fs_ops = {
    "fs",
    fs_destroy,
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
    fs_chan_dirfd,
};
