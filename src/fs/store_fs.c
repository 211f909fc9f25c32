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
static int disk_state(int fd, const struct ac_seqlock *lk, uint64_t *max_seq,
                      uint64_t *count, struct ac_err *err)
{
    struct ac_stamp stamp;
    struct ac_listing l;
    if (lk->have_states && !lk->preempted && lk->window_ns < SPAN_NS &&
        ac_stamp_valid(fd, &lk->pre, &stamp)) {
        *max_seq = stamp.max_seq;
        *count = stamp.count;
        return 0;
    }
    if (ac_scan_list(fd, INT64_MAX, 0, &l, err) == -1)
        return -1;
    *max_seq = l.max_seq;
    *count = l.count;
    ac_listing_free(&l);
    return 0;
}

static int fs_msg_post(struct ac_chan *base, const struct ac_post_req *req,
                       struct ac_post_result *out, struct ac_err *err)
{
    int fd = fs_chan(base)->fd;
    struct ac_seqlock lk;
    struct ac_msg_fields f;
    char ts[AC_ISO_MAX], from_slug[AC_SLUG_MAX + 1], title_slug[AC_SLUG_MAX + 1];
    uint64_t disk_max, count, seq, high;
    struct ac_dirstate done;
    int64_t t0;
    long switches;
    int rc;

    out->published = 0;
    if (req->nextra > 0) {
        char why[512];
        if (ac_fm_extra_check(req->extra, req->nextra, why, sizeof why) == -1)
            return ac_err_set(err, AC_EXIT_GENERAL, "MESSAGE_INVALID_FIELD", "%s", why);
    }
    if (ac_seqlock_acquire(fd, &lk, err) == -1)
        return -1;
    if (disk_state(fd, &lk, &disk_max, &count, err) == -1)
        goto fail;
    high = ac_seq_high_read(fd);
    seq = (disk_max > high ? disk_max : high) + 1;

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

    for (;;) {
        char resv[AC_SEQ_RESERVATION_MAX], *text;
        size_t len;
        int tfd = ac_seq_reserve(fd, seq, resv);

        if (tfd == -1) {
            ac_err_sys(err, errno, NULL, "could not allocate a seq");
            goto fail;
        }
        if (tfd == AC_SEQ_TAKEN) {      /* a second lock holder has it */
            seq++;
            continue;
        }
        high = ac_seq_high_read(fd);
        if (high >= seq) {
            close(tfd);
            ac_seq_unreserve(fd, resv);
            seq = high + 1;
            continue;
        }
        f.seq = seq;
        text = ac_msg_compose(&f, &len);
        if (!text || ac_seq_high_write(fd, seq) == -1) {
            int e = text ? errno : ENOMEM;
            free(text);
            close(tfd);
            ac_seq_unreserve(fd, resv);
            if (e == ENOMEM)
                ac_err_sys(err, e, NULL, "could not compose the message");
            else
                ac_err_sys(err, e, NULL, "could not record the seq high-water mark");
            goto fail;
        }
        snprintf(out->name, sizeof out->name, "%04" PRIu64 "-%s-%s.md", seq, from_slug, title_slug);
        /* The reservation file becomes the message (one file creation). */
        rc = ac_publish_temp(fd, resv, tfd, text, len, out->name,
                             AC_ATOMIC_NOREPLACE | AC_ATOMIC_NO_DIRSYNC, "post.message");
        free(text);
        if (rc == 0)
            break;
        if (errno != EEXIST) {
            ac_err_sys(err, errno, NULL, "could not publish message %s", out->name);
            goto fail;
        }
        seq++;                  /* never overwrite an existing message */
    }
    out->seq = seq;
    out->published = 1;
    if (AC_FAULT("post.dirsync") == -1 || ac_fsync_dir(fd) == -1) {
        ac_err_sys(err, errno, NULL, "could not sync channel directory");
        goto fail;
    }
    if (AC_FAULT("post.unlock") == -1) {
        ac_err_sys(err, errno, NULL, "could not release the seq lock");
        goto fail;
    }

    /* Release, then stamp the directory if the evidence allows (scan.h). */
    t0 = ac_clock_mono_ns();
    switches = ac_clock_preemptions();
    ac_seqlock_release(&lk);
    if (ac_dir_state(fd, &done) == 0 && ac_clock_mono_ns() - t0 < SPAN_NS &&
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

static int fs_cursor_lock(struct ac_chan *base, const char *agent, struct ac_mutex **out,
                          struct ac_err *err)
{
    struct ac_flock *m = malloc(sizeof *m);
    *out = NULL;
    if (!m)
        return ac_err_sys(err, ENOMEM, NULL, "could not lock the cursor");
    if (ac_cursor_lock(fs_chan(base)->fd, agent, m, err) == -1) {
        free(m);
        return -1;
    }
    *out = &m->base;
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
    struct ac_flock *m = malloc(sizeof *m);
    if (!m)
        return ac_err_sys(err, ENOMEM, NULL, "could not lock %s", name ? name : base->name);
    m->fd = -1;
    if (!name)
        rc = ac_flock_dir(fd, deadline_ns, m);
    else if (flags & AC_MUTEX_EXISTING)
        rc = ac_flock_acquire_existing(fd, name, deadline_ns, m);
    else
        rc = ac_flock_acquire(fd, name, deadline_ns, m);
    if (rc != 0) {
        int e = errno;
        free(m);
        if (rc == -1)
            return ac_err_sys(err, e, NULL, "could not lock %s", name ? name : base->name);
        return rc;              /* AC_MUTEX_TIMEOUT, AC_MUTEX_BUSY */
    }
    *out = &m->base;
    return 0;
}

static void fs_mutex_release(struct ac_mutex *base)
{
    struct ac_flock *m = (struct ac_flock *)base;
    ac_flock_release(m);
    free(m);
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
    /* version 3 */
    fs_watch_wait_fd,
};
