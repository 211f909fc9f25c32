/*
 * records.c - the record families of the file-system backend (store.h):
 * one JSON file per record, in one directory per family:
 *
 *   tasks    tasks/<id>.json               docs/format.md 3.5
 *   claims   claims/<task>.<owner>.json    docs/format.md 3.6
 *   locks    locks/<lock_id>.json          docs/format.md 3.7
 *   acks     .acks/<seq>/<agent>.json      docs/receipts.md
 *
 * A file is a record when its name ends in ".json" and does not start with
 * one of the family's skip bytes: '.' (our temps and the journals) and, for
 * tasks, claims and locks, '_' (the Python tool's). Records are read with the careful reader
 * of fsutil.h (no symlink followed, only regular files, a cap per family),
 * so a planted symlink or directory is a record that cannot be read, with
 * its errno, never something outside the channel.
 *
 * Listings are sorted bytewise by *file name* ("a-b.json" before
 * "a.json"), the order every command has always shown records in.
 */
#include "store_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/buf.h"
#include "agentchat/fault.h"
#include "fsutil.h"

#define SUFFIX ".json"
#define SUFFIX_LEN 5
#define STALE_TEMP_SEC 60     /* a live rec_create never keeps its temp this long */

const struct fs_family ac_fs_families[AC_NFAMILIES] = {
    [AC_TASKS] = { "tasks", "task record", "._", 4u << 20, "task.record" },
    [AC_CLAIMS] = { "claims", "lease record", "._", 1u << 20, "lease.claim" },
    [AC_LOCKS] = { "locks", "lock record", "._", 16u << 20, "pathlock.record" },
    [AC_ACKS] = { ".acks", "ack", ".", 64u << 10, "ack" },
};

/* One component usable as a record's file-name stem. */
static int stem_ok(int family, const char *s, size_t n)
{
    size_t i;
    if (n == 0 || n > 255 - SUFFIX_LEN || strchr(ac_fs_families[family].skip, s[0]))
        return 0;
    for (i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '\0')
            return 0;
    return 1;
}

/* An ack's "<seq>/" part: decimal without leading zeros. Its length, or 0. */
static size_t seq_part(const char *name)
{
    size_t n = strspn(name, "0123456789");
    if (n == 0 || n > 20 || name[n] != '/' || (name[0] == '0'))
        return 0;
    return n;
}

/* Open (making it when `make`) the directory `name` inside dirfd; *made
 * says whether this call created it. -1 with errno. */
static int dir_at(int dirfd, const char *name, int make, int *made)
{
    *made = 0;
    if (make) {
        if (ac_sys_mkdirat(dirfd, name, 0755) == 0)
            *made = 1;
        else if (errno != EEXIST)
            return -1;
    }
    return ac_open_dir_at(dirfd, name);
}

int ac_fs_family_dir(int chfd, int family, const char *name, int make, const char **base)
{
    const struct fs_family *fam = &ac_fs_families[family];
    char sname[24];
    size_t n;
    int acks, fd, made, e;

    if (family != AC_ACKS) {
        if (name && !stem_ok(family, name, strlen(name))) {
            /* a name longer than a file name holds cannot exist here */
            errno = strlen(name) > 255 - SUFFIX_LEN ? ENAMETOOLONG : EINVAL;
            return -1;
        }
        if (base)
            *base = name;
        /* A family directory made on the way becomes durable with the
         * directory sync of its first record's publication. */
        return dir_at(chfd, fam->dir, make, &made);
    }
    n = name ? seq_part(name) : 0;
    if (n == 0 || (name[n + 1] && !stem_ok(family, name + n + 1, strlen(name + n + 1)))) {
        errno = EINVAL;
        return -1;
    }
    if (base)
        *base = name + n + 1;
    memcpy(sname, name, n);
    sname[n] = '\0';
    acks = dir_at(chfd, fam->dir, make, &made);
    if (acks == -1)
        return -1;
    /* A new directory entry is durable once its parent is synced. */
    if (made && ac_fsync_dir(chfd) == -1)
        goto fail;
    fd = dir_at(acks, sname, make, &made);
    if (fd == -1)
        goto fail;
    if (made && ac_fsync_dir(acks) == -1) {
        e = errno;
        close(fd);
        errno = e;
        goto fail;
    }
    close(acks);
    return fd;
fail:
    e = errno;
    close(acks);
    errno = e;
    return -1;
}

/* Read the record file `file` of dirfd into *r (bytes or sys_errno). */
static void read_one(int dirfd, const char *file, size_t cap, struct ac_record *r)
{
    struct stat st;
    int fd;
    do
        fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    while (fd == -1 && errno == EINTR);
    if (fd == -1 || ac_read_fd(fd, cap, &r->data, &r->len, &st) == -1) {
        r->sys_errno = errno;
        r->data = NULL;
        r->len = 0;
    } else {
        r->mtime_us = (int64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
    }
    if (fd != -1)
        close(fd);
}

struct scan {
    int family;
    int hidden;               /* AC_SCAN_HIDDEN */
    const char *prefix;       /* of the stem, or NULL */
    size_t plen;
    struct ac_record *v;
    size_t n, cap;
    int oom;
};

static int scan_cb(void *ctx, const char *name, unsigned char type)
{
    struct scan *s = ctx;
    size_t len = strlen(name), stem = len - SUFFIX_LEN;
    struct ac_record *r;

    if (len <= SUFFIX_LEN || strcmp(name + stem, SUFFIX) != 0 ||
        (!s->hidden && strchr(ac_fs_families[s->family].skip, name[0])))
        return 0;
    if (s->prefix && (stem <= s->plen || strncmp(name, s->prefix, s->plen) != 0))
        return 0;
    if (ac_grow(&s->v, &s->cap, s->n + 1, sizeof *s->v) == -1) {
        s->oom = 1;
        return 1;
    }
    r = &s->v[s->n];
    memset(r, 0, sizeof *r);
    if (!(r->name = strdup(name))) {      /* the file name until sorted */
        s->oom = 1;
        return 1;
    }
    r->plain = type == DT_REG;
    s->n++;
    return 0;
}

static int cmp_record(const void *a, const void *b)
{
    return strcmp(((const struct ac_record *)a)->name, ((const struct ac_record *)b)->name);
}

int ac_fs_rec_scan(struct ac_chan *ch, int family, const char *prefix, int flags,
                   struct ac_recset *out, struct ac_err *err)
{
    const struct fs_family *fam = &ac_fs_families[family];
    struct scan s;
    const char *stem_prefix = prefix;
    size_t i, seqlen = 0;
    int fd;

    memset(&s, 0, sizeof s);
    out->v = NULL;
    out->n = 0;
    if (family == AC_ACKS) {
        /* "<seq>/": the acks of one message */
        seqlen = prefix ? seq_part(prefix) : 0;
        if (seqlen == 0 || prefix[seqlen + 1] != '\0')
            return ac_err_sys(err, EINVAL, NULL, "could not list %ss", fam->noun);
        stem_prefix = NULL;
    }
    fd = ac_fs_family_dir(fs_chan_fd(ch), family, family == AC_ACKS ? prefix : NULL, 0, NULL);
    if (fd == -1) {
        if (errno == ENOENT)
            return 0;           /* never written: no records */
        return ac_err_sys(err, errno, NULL, "could not list %s/", fam->dir);
    }
    s.family = family;
    s.hidden = (flags & AC_SCAN_HIDDEN) != 0;
    s.prefix = stem_prefix;
    s.plen = stem_prefix ? strlen(stem_prefix) : 0;
    if (ac_dir_walk(fd, scan_cb, &s) == -1 || s.oom) {
        int e = s.oom ? ENOMEM : errno;
        close(fd);
        out->v = s.v;
        out->n = s.n;
        ac_recset_free(out);
        return ac_err_sys(err, e, NULL, "could not list %s/", fam->dir);
    }
    if (s.n > 1)
        qsort(s.v, s.n, sizeof *s.v, cmp_record);
    for (i = 0; i < s.n; i++) {
        struct ac_record *r = &s.v[i];
        if (!(flags & AC_SCAN_NAMES))
            read_one(fd, r->name, fam->cap, r);
        r->name[strlen(r->name) - SUFFIX_LEN] = '\0';
        if (seqlen) {           /* acks are named "<seq>/<agent>" */
            char *full = malloc(seqlen + 2 + strlen(r->name));
            if (!full) {
                close(fd);
                out->v = s.v;
                out->n = s.n;
                ac_recset_free(out);
                return ac_err_sys(err, ENOMEM, NULL, "could not list %ss", fam->noun);
            }
            sprintf(full, "%.*s/%s", (int)seqlen, prefix, r->name);
            free(r->name);
            r->name = full;
        }
    }
    close(fd);
    out->v = s.v;
    out->n = s.n;
    return 0;
}

int ac_fs_rec_read(struct ac_chan *ch, int family, const char *name, struct ac_record *out,
                   struct ac_err *err)
{
    const struct fs_family *fam = &ac_fs_families[family];
    char file[300];
    const char *base;
    int fd;

    memset(out, 0, sizeof *out);
    fd = ac_fs_family_dir(fs_chan_fd(ch), family, name, 0, &base);
    if (fd != -1) {
        snprintf(file, sizeof file, "%s" SUFFIX, base);
        read_one(fd, file, fam->cap, out);
        close(fd);
    } else {
        out->sys_errno = errno;
    }
    if (!out->data) {
        int e = out->sys_errno;
        ac_record_free(out);
        out->sys_errno = e;
        return ac_err_sys(err, e, NULL, "could not read %s %s", fam->noun, name);
    }
    if (!(out->name = strdup(name))) {
        ac_record_free(out);
        return ac_err_sys(err, ENOMEM, NULL, "could not read %s %s", fam->noun, name);
    }
    out->plain = 1;
    return 0;
}

int ac_fs_rec_create(struct ac_chan *ch, int family, const char *name, const char *data,
                     size_t len, struct ac_err *err)
{
    const struct fs_family *fam = &ac_fs_families[family];
    char file[300], point[64], where[600];
    const char *base;
    int fd, rc;

    snprintf(where, sizeof where, "%s/%s" SUFFIX, fam->dir, name);
    snprintf(point, sizeof point, "%s.mkdir", fam->fault_tag);
    if (AC_FAULT(point) == -1 || (fd = ac_fs_family_dir(fs_chan_fd(ch), family, name, 1, &base)) == -1)
        return ac_err_sys(err, errno, NULL, "could not write %s %s", fam->noun, where);
    snprintf(file, sizeof file, "%s" SUFFIX, base);
    /* Temps of writers that crashed before publishing: no live writer
     * keeps one for a minute (best effort). */
    ac_sweep_temps(fd, STALE_TEMP_SEC);
    rc = ac_write_atomic(fd, file, data, len, 0644, AC_ATOMIC_NOREPLACE, fam->fault_tag);
    if (rc == -1) {
        int e = errno;
        if (e == EEXIST && ac_is_regular_at(fd, file)) {
            close(fd);
            return 0;           /* written before: the first record stays */
        }
        /* The link may have happened and only the directory fsync failed:
         * then the record is there (whole, it was linked from a synced
         * temp) and the caller reports a warning, not a failure. */
        rc = ac_is_regular_at(fd, file) ? 2 : -1;
        close(fd);
        ac_err_sys(err, e, NULL, "could not write %s %s", fam->noun, where);
        return rc;
    }
    close(fd);
    return 1;
}

void ac_fs_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s/%s/%s" SUFFIX, ch->store->root, ch->name, ac_fs_families[family].dir,
             name);
}
