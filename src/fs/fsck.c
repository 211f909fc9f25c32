/*
 * fsck.c - the file-system backend's own check (store.h, ac_chan_fsck):
 * check and safely repair one channel's folder; see include/agentchat/fsck.h.
 * Records are validated with the codecs every layer shares (taskrec.h,
 * claimrec.h, lockrec.h); the journals are read by the journal engine
 * (journal.h), exactly as recover-pending reads them.
 */
#include "agentchat/buf.h"
#include "agentchat/fsck.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/channel.h"
#include "agentchat/claimrec.h"
#include "agentchat/clock.h"
#include "agentchat/frontmatter.h"
#include "agentchat/lockrec.h"
#include "agentchat/pyjson.h"
#include "agentchat/store.h"
#include "agentchat/taskrec.h"
#include "agentchat/utf8.h"
#include "cursor.h"
#include "fsutil.h"
#include "journal.h"
#include "scan.h"
#include "seq.h"
#include "store_fs.h"

#define AC_TASKS_DIR "tasks"
#define AC_CLAIMS_DIR "claims"
#define AC_PATHLOCK_DIR "locks"
#define AC_TASK_RECORD_CAP (4u << 20)

#define SEQ_LOCK_STALE_SEC 30   /* the posters' own staleness rule (seq.c) */
#define CURSOR_CAP 4096
#define CLAIM_CAP (1u << 20)
#define QUOTE_MAX 200
#define NONE ((size_t)-1)

/* Every code and its class: the class of a finding follows from its code,
 * so callers can sort "recovery needed" from "corrupt" by code alone. */
static const struct {
    const char *code;
    int klass;
} codes[] = {
    { "FSCK_BAD_ENTRY", AC_FSCK_CORRUPT },
    { "FSCK_BAD_META", AC_FSCK_CORRUPT },
    { "FSCK_BAD_MESSAGE", AC_FSCK_CORRUPT },
    { "FSCK_SEQ_MISMATCH", AC_FSCK_CORRUPT },
    { "FSCK_DUPLICATE_SEQ", AC_FSCK_CORRUPT },
    { "FSCK_BAD_CURSOR", AC_FSCK_CORRUPT },
    { "FSCK_BAD_TASK", AC_FSCK_CORRUPT },
    { "FSCK_BAD_CLAIM", AC_FSCK_CORRUPT },
    { "FSCK_CLAIM_MISMATCH", AC_FSCK_CORRUPT },
    { "FSCK_BAD_LOCK", AC_FSCK_CORRUPT },
    { "FSCK_LOCK_CONFLICT", AC_FSCK_CORRUPT },
    { "FSCK_BAD_JOURNAL", AC_FSCK_CORRUPT },
    { "FSCK_BAD_ACK", AC_FSCK_CORRUPT },
    { "FSCK_PENDING_JOURNAL", AC_FSCK_PENDING },
    { "FSCK_SEQHIGH_BEHIND", AC_FSCK_REPAIRABLE },
    { "FSCK_STRAY_TEMP", AC_FSCK_REPAIRABLE },
    { "FSCK_STALE_RESERVATION", AC_FSCK_REPAIRABLE },
    { "FSCK_STALE_SEQ_LOCK", AC_FSCK_REPAIRABLE },
    { "FSCK_PLANTED_LOCK", AC_FSCK_REPAIRABLE },
    { "FSCK_BUSY", AC_FSCK_BUSY },
};
#define NCODES (sizeof codes / sizeof codes[0])

const char *ac_fsck_class_name(int klass)
{
    static const char *const names[] = { "corrupt", "pending", "repairable", "busy" };
    return klass >= 0 && klass < 4 ? names[klass] : "corrupt";
}

/* One run over one channel. */
struct fsck {
    struct ac_chan *ch;
    int chfd;
    const char *channel;
    char qchannel[QUOTE_MAX + 16]; /* the name as commands quote it */
    int repair;
    int64_t now;                /* wall clock, seconds */
    struct ac_fsck_report *r;
    int oom;
    uint64_t max_seq;           /* highest seq of a message file */
    uint64_t high;              /* highest seq ever allocated, as far as known */
};

static int klass_of(const char *code)
{
    size_t i;
    for (i = 0; i < NCODES; i++)
        if (strcmp(codes[i].code, code) == 0)
            return codes[i].klass;
    return AC_FSCK_CORRUPT;
}

/* Append a finding "<path>: <fmt...>". Returns it (NULL when out of memory;
 * valid until the next add). */
static struct ac_finding *add(struct fsck *f, const char *code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static struct ac_finding *add(struct fsck *f, const char *code, const char *path, const char *fmt, ...)
{
    struct ac_fsck_report *r = f->r;
    struct ac_finding *fd;
    char shown[QUOTE_MAX + 16], text[AC_ERR_MSG_MAX];
    va_list ap;
    int n;

    if (ac_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v) == -1) {
        f->oom = 1;
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ac_err_quote(shown, sizeof shown, path, QUOTE_MAX);
    fd = &r->v[r->n];
    memset(fd, 0, sizeof *fd);
    fd->code = code;
    fd->klass = klass_of(code);
    fd->path = strdup(path);
    n = snprintf(NULL, 0, "%s: %s", shown[0] ? shown : ".", text);
    fd->message = malloc((size_t)n + 1);
    if (!fd->path || !fd->message) {
        free(fd->path);
        free(fd->message);
        f->oom = 1;
        return NULL;
    }
    snprintf(fd->message, (size_t)n + 1, "%s: %s", shown[0] ? shown : ".", text);
    r->n++;
    return fd;
}

/* Index of a finding just added (NONE for NULL). */
static size_t index_of(struct fsck *f, const struct ac_finding *fd)
{
    return fd ? (size_t)(fd - f->r->v) : NONE;
}

static void mark_repaired(struct fsck *f, struct ac_finding *fd, const char *what)
{
    if (fd && !(fd->repaired = strdup(what)))
        f->oom = 1;
}

/* "; run: agent-chat fsck CH --repair" for a repairable finding, or
 * nothing when this run repairs. */
static void repair_hint(const struct fsck *f, char *out, size_t size)
{
    if (f->repair)
        out[0] = '\0';
    else
        snprintf(out, size, "; run: agent-chat fsck %s --repair", f->qchannel);
}

/* "dir/name" for messages (dir may be NULL), cut to fit `size`. */
static void join(char *out, size_t size, const char *dir, const char *name)
{
    size_t used = 0, n;
    if (dir) {
        n = strlen(dir);
        n = n < size - 2 ? n : size - 2;
        memcpy(out, dir, n);
        out[n] = '/';
        used = n + 1;
    }
    n = strlen(name);
    n = n < size - 1 - used ? n : size - 1 - used;
    memcpy(out + used, name, n);
    out[used + n] = '\0';
}

static const char *kind_of(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISLNK(mode) ? "a symbolic link"
         : S_ISREG(mode) ? "a regular file" : "a special file";
}

/* Why a careful read (ac_read_file_at) failed, in words. */
static const char *read_problem(int e, char *buf, size_t size)
{
    switch (e) {
    case ELOOP:
        return "is a symbolic link (never followed)";
    case EISDIR:
        return "is a directory";
    case EINVAL:
        return "is not a regular file";
    case EFBIG:
        return "is too large to read";
    default:
        snprintf(buf, size, "cannot be read: %s", strerror(e));
        return buf;
    }
}

/* ---- names of our own files ---- */

/* A seq reservation ".seqres-<decimal>" (seq.c). */
static int is_reservation(const char *name)
{
    const char *p = name + 8;
    if (strncmp(name, ".seqres-", 8) != 0 || !*p)
        return 0;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    return 1;
}

/* Strict unsigned decimal (no sign, no '_', at most 19 digits). */
static int parse_seq(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (len == 0 || len > 19)
        return 0;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 1;
}

static void strip(const char **s, size_t *len)
{
    while (*len && isspace((unsigned char)(*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len && isspace((unsigned char)(*s)[*len - 1]))
        (*len)--;
}

/* ---- name lists ---- */

struct ent {
    char *name;
    uint64_t seq;
};

struct ents {
    struct ent *v;
    size_t n, cap;
    int oom;
};

static int ents_push(struct ents *e, const char *name, uint64_t seq)
{
    if (ac_grow(&e->v, &e->cap, e->n + 1, sizeof *e->v) == -1 || !(e->v[e->n].name = strdup(name))) {
        e->oom = 1;
        return 1;
    }
    e->v[e->n].seq = seq;
    e->n++;
    return 0;
}

static void ents_free(struct ents *e)
{
    size_t i;
    for (i = 0; i < e->n; i++)
        free(e->v[i].name);
    free(e->v);
    memset(e, 0, sizeof *e);
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int all_cb(void *ctx, const char *name, unsigned char type)
{
    (void)type;
    return ents_push(ctx, name, 0);
}

/* Every entry name of dirfd, sorted. 0, or -1 with errno. */
static int list_sorted(int dirfd, struct ents *out)
{
    memset(out, 0, sizeof *out);
    if (ac_dir_walk(dirfd, all_cb, out) == -1 || out->oom) {
        int e = out->oom ? ENOMEM : errno;
        ents_free(out);
        errno = e;
        return -1;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_ent);
    return 0;
}

/* ---- debris: temps and reservations ---- */

/* Is dirfd/name a regular file last changed at least `age` seconds ago? */
static int is_old_file(struct fsck *f, int dirfd, const char *name, int64_t age)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
           f->now - (int64_t)st.st_mtim.tv_sec >= age;
}

/* Report the old temps (and, in the channel directory, reservations) of
 * dirfd, shown under `dir`. With --repair they are removed at once when
 * `later` is NULL (the caller excludes their writers or relies on their
 * age), else listed in *later for removal under the seq lock. */
static void check_debris(struct fsck *f, int dirfd, const char *dir, const struct ents *names,
                         struct ents *later)
{
    size_t i;
    char path[PATH_MAX], hint[QUOTE_MAX + 64];
    repair_hint(f, hint, sizeof hint);
    for (i = 0; i < names->n; i++) {
        const char *name = names->v[i].name;
        int resv = dir == NULL && is_reservation(name);
        struct ac_finding *fd;
        if ((!resv && !ac_is_temp_name(name, dir == NULL ? ac_channel_temp_targets : NULL)) ||
            !is_old_file(f, dirfd, name, AC_FSCK_DEBRIS_AGE))
            continue;
        join(path, sizeof path, dir, name);
        if (resv)
            fd = add(f, "FSCK_STALE_RESERVATION", path,
                     "seq reservation left by a poster that died (it only burns that seq)%s", hint);
        else
            fd = add(f, "FSCK_STRAY_TEMP", path, "temp file left by an interrupted write%s", hint);
        if (!f->repair || !fd)
            continue;
        if (later) {
            ents_push(later, name, (uint64_t)index_of(f, fd));
        } else if (is_old_file(f, dirfd, name, AC_FSCK_DEBRIS_AGE) && ac_sys_unlinkat(dirfd, name, 0) == 0) {
            mark_repaired(f, fd, "removed");
        }
    }
}

/* ---- the channel directory's fixed entries ---- */

static const struct {
    const char *name;
    int dir;            /* must be a directory (else a regular file) */
} layout[] = {
    { AC_META_FILE, 0 }, { AC_SEQ_HIGH_FILE, 0 }, { AC_SEQ_LOCK_DIR, 1 },
    { AC_MUTEX_TASKS, 0 }, { AC_MUTEX_PATHLOCKS, 0 }, { "state.md", 0 },
    { AC_CURSOR_DIR, 1 }, { AC_TASKS_DIR, 1 }, { AC_CLAIMS_DIR, 1 }, { AC_PATHLOCK_DIR, 1 },
    { ".acks", 1 },
};

/* The lock entries no writer of ours can have made in another shape: a
 * `_seq.lock` that is not a directory (posters mkdir it), a `_tasks.lock`
 * or `.path-locks.lock` that is neither a regular file nor a directory (a
 * symlink, a FIFO: the mutex opens it with O_NOFOLLOW and refuses). Every
 * post, task or lock command fails while one is there, and nobody can hold
 * it, so --repair removes it, after checking its type again. */
static int planted_lock(const char *name, mode_t mode)
{
    if (strcmp(name, AC_SEQ_LOCK_DIR) == 0)
        return !S_ISDIR(mode);
    if (strcmp(name, AC_MUTEX_TASKS) == 0 || strcmp(name, AC_MUTEX_PATHLOCKS) == 0)
        return !S_ISDIR(mode) && !S_ISREG(mode);
    return 0;
}

static void check_planted_lock(struct fsck *f, const char *name, mode_t mode)
{
    struct stat st;
    char hint[QUOTE_MAX + 64];
    struct ac_finding *fd;

    repair_hint(f, hint, sizeof hint);
    fd = add(f, "FSCK_PLANTED_LOCK", name, "is %s, which no %s made: every %s fails while it is there%s",
             kind_of(mode), strcmp(name, AC_SEQ_LOCK_DIR) == 0 ? "poster" : "command",
             strcmp(name, AC_SEQ_LOCK_DIR) == 0 ? "post" : strcmp(name, AC_MUTEX_TASKS) == 0
                 ? "task command" : "path-lock command", hint);
    if (f->repair && fd && fstatat(f->chfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        planted_lock(name, st.st_mode) && ac_sys_unlinkat(f->chfd, name, 0) == 0 &&
        ac_fsync_dir(f->chfd) == 0)
        mark_repaired(f, fd, "removed");
}

static void check_layout(struct fsck *f)
{
    size_t i;
    for (i = 0; i < sizeof layout / sizeof layout[0]; i++) {
        struct stat st;
        if (fstatat(f->chfd, layout[i].name, &st, AT_SYMLINK_NOFOLLOW) == -1)
            continue;
        if (planted_lock(layout[i].name, st.st_mode)) {
            check_planted_lock(f, layout[i].name, st.st_mode);
            continue;
        }
        if (layout[i].dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
            add(f, "FSCK_BAD_ENTRY", layout[i].name, "is %s, expected %s%s", kind_of(st.st_mode),
                layout[i].dir ? "a directory" : "a regular file",
                strcmp(layout[i].name, AC_META_FILE) == 0
                    ? " (no command can open the channel: they say it does not exist)" : "");
    }
}

static void check_meta(struct fsck *f)
{
    char *data, why[128];
    size_t len;
    const char *problem;
    if (ac_read_file_at(f->chfd, AC_META_FILE, AC_META_CAP, &data, &len) == -1) {
        if (errno != ELOOP && errno != EISDIR && errno != EINVAL)    /* layout says those */
            add(f, "FSCK_BAD_META", AC_META_FILE, "%s", read_problem(errno, why, sizeof why));
        return;
    }
    problem = ac_meta_problem(data, len);
    free(data);
    if (problem)
        add(f, "FSCK_BAD_META", AC_META_FILE, "%s", problem);
}

/* ---- messages and the high-water mark ---- */

static void check_message(struct fsck *f, const struct ent *e)
{
    char *data, *text, why[128];
    size_t len, tlen;
    struct ac_fm fm;
    const char *v;
    size_t vlen;
    uint64_t seq;

    if (ac_read_file_at(f->chfd, e->name, AC_MESSAGE_CAP, &data, &len) == -1) {
        if (errno == EFBIG)
            add(f, "FSCK_BAD_MESSAGE", e->name,
                "is larger than %u MiB (readers show only its first %u KiB)",
                AC_MESSAGE_CAP >> 20, AC_MESSAGE_PREFIX >> 10);
        else
            add(f, "FSCK_BAD_MESSAGE", e->name, "%s, not a message file",
                read_problem(errno, why, sizeof why));
        return;
    }
    text = ac_text_from_file(data, len, &tlen);
    if (!text || ac_fm_parse(text, tlen, &fm) == -1) {
        free(data);
        free(text);
        f->oom = 1;
        return;
    }
    /* A body may hold NUL bytes (the Python tool writes them as given);
     * frontmatter lines may not. */
    if (memchr(text, '\0', fm.present ? fm.body_off : tlen))
        add(f, "FSCK_BAD_MESSAGE", e->name, "contains NUL bytes in its frontmatter");
    else if (!ac_utf8_valid(data, len))
        add(f, "FSCK_BAD_MESSAGE", e->name, "is not valid UTF-8");
    free(data);
    if (!fm.present) {
        add(f, "FSCK_BAD_MESSAGE", e->name, "has no closed frontmatter (a '---' block first)");
    } else if (!ac_fm_get(&fm, "seq", &v, &vlen)) {
        add(f, "FSCK_BAD_MESSAGE", e->name, "frontmatter has no seq field");
    } else if (!parse_seq(v, vlen, &seq) || seq != e->seq) {
        char shown[64];
        char raw[64];
        snprintf(raw, sizeof raw, "%.*s", (int)(vlen < 40 ? vlen : 40), v);
        ac_err_quote(shown, sizeof shown, raw, 40);
        add(f, "FSCK_SEQ_MISMATCH", e->name, "frontmatter says seq: %s, the file name says %" PRIu64,
            shown, e->seq);
    }
    ac_fm_free(&fm);
    free(text);
}

static void check_duplicates(struct fsck *f, const struct ents *msgs)
{
    size_t i = 0, j, k;
    while (i < msgs->n) {
        char list[600];
        size_t used = 0;
        for (j = i + 1; j < msgs->n && msgs->v[j].seq == msgs->v[i].seq; j++)
            ;
        if (j - i > 1) {
            list[0] = '\0';
            for (k = i + 1; k < j && used < sizeof list - 100; k++) {
                char shown[QUOTE_MAX + 16];
                ac_err_quote(shown, sizeof shown, msgs->v[k].name, 80);
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k > i + 1 ? ", " : "",
                                         shown);
            }
            add(f, "FSCK_DUPLICATE_SEQ", msgs->v[i].name, "seq %" PRIu64 " is also used by %s",
                msgs->v[i].seq, list);
        }
        i = j;
    }
}

/* Read .seqhigh: 1 with *v, 0 when missing, -1 when unreadable or not a
 * decimal (why says so); -2 when it is a directory (layout reports it). */
static int read_seqhigh(struct fsck *f, uint64_t *v, char *why, size_t size)
{
    struct stat st;
    if (fstatat(f->chfd, AC_SEQ_HIGH_FILE, &st, AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT)
        return 0;
    if (ac_seq_high_get(f->chfd, v, NULL) == 0)
        return 1;
    if (errno == EISDIR || (errno == EINVAL && !S_ISREG(st.st_mode)) || errno == ELOOP)
        return -2;
    if (errno == ERANGE)
        snprintf(why, size, "is above %" PRIu64 ", the highest seq", AC_SEQ_MAX);
    else if (errno == EINVAL)
        snprintf(why, size, "is not a decimal seq");
    else
        read_problem(errno, why, size);
    return -1;
}

static size_t check_seqhigh(struct fsck *f)
{
    uint64_t v = 0;
    char why[160];
    int rc = read_seqhigh(f, &v, why, sizeof why);
    char hint[QUOTE_MAX + 64];

    repair_hint(f, hint, sizeof hint);
    f->high = f->max_seq;
    if (rc == -2)
        return NONE;
    if (rc == 1 && v >= f->max_seq) {
        f->high = v;
        return NONE;
    }
    if (rc == 0 && f->max_seq == 0)
        return NONE;
    if (rc == 0)
        return index_of(f, add(f, "FSCK_SEQHIGH_BEHIND", AC_SEQ_HIGH_FILE,
                   "missing, but messages go up to seq %" PRIu64 " (a deleted seq could be reused)%s",
                   f->max_seq, hint));
    if (rc == -1)
        return index_of(f, add(f, "FSCK_SEQHIGH_BEHIND", AC_SEQ_HIGH_FILE,
                   "%s; messages go up to seq %" PRIu64 "%s", why, f->max_seq, hint));
    return index_of(f, add(f, "FSCK_SEQHIGH_BEHIND", AC_SEQ_HIGH_FILE,
               "says %" PRIu64 ", below the highest message seq %" PRIu64 "%s", v, f->max_seq, hint));
}

static size_t check_seq_lock(struct fsck *f)
{
    struct stat st;
    char hint[QUOTE_MAX + 64];
    if (fstatat(f->chfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == -1 || !S_ISDIR(st.st_mode) ||
        f->now - (int64_t)st.st_mtim.tv_sec <= SEQ_LOCK_STALE_SEC)
        return NONE;
    repair_hint(f, hint, sizeof hint);
    return index_of(f, add(f, "FSCK_STALE_SEQ_LOCK", AC_SEQ_LOCK_DIR,
               "left by a poster that died %" PRId64 " s ago (the next post removes it)%s",
               f->now - (int64_t)st.st_mtim.tv_sec, hint));
}

/* The repairs of the channel directory itself, under the seq lock (posters
 * create reservations and .seqhigh temps, and raise .seqhigh, only while
 * they hold it): the stale lock goes first (as any poster removes it),
 * then the debris, then .seqhigh is raised from a fresh listing. */
static void repair_channel_dir(struct fsck *f, size_t stale_at, const struct ents *later,
                               size_t seqhigh_at)
{
    struct ac_seqlock lk;
    struct ac_err ignored = AC_ERR_INIT;
    size_t i;

    if (stale_at != NONE) {
        struct stat st;
        if (fstatat(f->chfd, AC_SEQ_LOCK_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            f->now - (int64_t)st.st_mtim.tv_sec > SEQ_LOCK_STALE_SEC &&
            ac_sys_unlinkat(f->chfd, AC_SEQ_LOCK_DIR, AT_REMOVEDIR) == 0)
            mark_repaired(f, &f->r->v[stale_at], "removed");
    }
    if (later->n == 0 && seqhigh_at == NONE)
        return;
    if (ac_seqlock_acquire(f->chfd, &lk, &ignored) == -1)
        return;                 /* left as reported */
    for (i = 0; i < later->n; i++) {
        const char *name = later->v[i].name;
        if (is_old_file(f, f->chfd, name, AC_FSCK_DEBRIS_AGE) && ac_sys_unlinkat(f->chfd, name, 0) == 0)
            mark_repaired(f, &f->r->v[later->v[i].seq], "removed");
    }
    if (seqhigh_at != NONE) {
        struct ac_listing l;
        char what[96];
        uint64_t was;
        int valid = ac_seq_high_get(f->chfd, &was, NULL) == 0;
        if (ac_scan_list(f->chfd, INT64_MAX, 0, &l, &ignored) == 0) {
            if (valid && l.max_seq <= was) {
                mark_repaired(f, &f->r->v[seqhigh_at], "already raised by a post");
            } else if (ac_seq_high_raise(f->chfd, l.max_seq, &lk) == 0 && ac_fsync_dir(f->chfd) == 0) {
                snprintf(what, sizeof what, "raised to %" PRIu64, l.max_seq);
                mark_repaired(f, &f->r->v[seqhigh_at], what);
            }
            ac_listing_free(&l);
        }
    }
    ac_seqlock_release(&lk);
}

static void check_channel_dir(struct fsck *f)
{
    struct ents names, msgs, later;
    size_t i, stale, behind;

    memset(&msgs, 0, sizeof msgs);
    memset(&later, 0, sizeof later);
    if (list_sorted(f->chfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", "", "the channel directory cannot be listed: %s", strerror(errno));
        return;
    }
    for (i = 0; i < names.n; i++) {
        uint64_t seq;
        int kind = ac_scan_parse_name(names.v[i].name, &seq);
        if (kind == 1)
            ents_push(&msgs, names.v[i].name, seq);
        else if (kind == -1)
            add(f, "FSCK_BAD_MESSAGE", names.v[i].name,
                "has a seq above %" PRIu64 ", the highest seq: readers skip it and posts refuse to "
                "go on until it is renamed or removed", AC_SEQ_MAX);
    }
    if (msgs.oom) {
        f->oom = 1;
        goto out;
    }
    if (msgs.n > 1)
        qsort(msgs.v, msgs.n, sizeof *msgs.v, cmp_ent);
    for (i = 0; i < msgs.n; i++) {
        check_message(f, &msgs.v[i]);
        if (msgs.v[i].seq > f->max_seq)
            f->max_seq = msgs.v[i].seq;
    }
    check_duplicates(f, &msgs);
    behind = check_seqhigh(f);
    stale = check_seq_lock(f);
    check_debris(f, f->chfd, NULL, &names, &later);
    if (f->repair)
        repair_channel_dir(f, stale, &later, behind);
out:
    ents_free(&names);
    ents_free(&msgs);
    ents_free(&later);
}

/* ---- cursors ---- */

static void check_cursor(struct fsck *f, int cfd, const char *name)
{
    char path[PATH_MAX], why[128], shown[64];
    char *data;
    size_t len;
    const char *s;
    uint64_t v;

    join(path, sizeof path, AC_CURSOR_DIR, name);
    if (ac_read_file_at(cfd, name, CURSOR_CAP, &data, &len) == -1) {
        add(f, "FSCK_BAD_CURSOR", path, "%s", read_problem(errno, why, sizeof why));
        return;
    }
    s = data;
    strip(&s, &len);
    if (len == 0) {
        add(f, "FSCK_BAD_CURSOR", path, "is empty (reads as 0: every message shows again)");
    } else if (!parse_seq(s, len, &v)) {
        char raw[48];
        snprintf(raw, sizeof raw, "%.*s", (int)(len < 40 ? len : 40), s);
        ac_err_quote(shown, sizeof shown, raw, 40);
        add(f, "FSCK_BAD_CURSOR", path, "is not a decimal seq ('%s'; reads as 0)", shown);
    } else if (v > f->high) {
        add(f, "FSCK_BAD_CURSOR", path,
            "is %" PRIu64 ", beyond the highest seq ever allocated (%" PRIu64 "): wait skips new "
            "messages until a read rewrites it", v, f->high);
    }
    free(data);
}

static void check_cursors(struct fsck *f)
{
    struct ents names;
    size_t i;
    int cfd = ac_open_dir_at(f->chfd, AC_CURSOR_DIR);
    if (cfd == -1)
        return;                 /* none yet, or check_layout said why */
    if (list_sorted(cfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", AC_CURSOR_DIR, "cannot be listed: %s", strerror(errno));
        close(cfd);
        return;
    }
    for (i = 0; i < names.n; i++) {
        const char *name = names.v[i].name;
        size_t len = strlen(name);
        if (name[0] != '.' && len > 4 && strcmp(name + len - 4, ".txt") == 0)
            check_cursor(f, cfd, name);
    }
    check_debris(f, cfd, AC_CURSOR_DIR, &names, NULL);
    ents_free(&names);
    close(cfd);
}

/* ---- mutation locks ---- */

/* Take the flock of an existing lock file, so no mutation is seen half
 * done. Returns 1 held, 0 no lock file (nothing to exclude), -1 not taken
 * (a finding says why). */
static int lock_existing(struct fsck *f, const char *name, struct ac_mutex **m, const char *what)
{
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_chan_mutex_acquire(f->ch, name, ac_clock_mono_ns() + AC_MUTEX_WAIT_NS,
                                   AC_MUTEX_EXISTING, m, &err);
    int e = err.sys_errno;
    if (rc == 0)
        return 1;
    if (rc == -1 && e == ENOENT)
        return 0;
    if (rc == AC_MUTEX_TIMEOUT)
        add(f, "FSCK_BUSY", name, "held for more than 10 s: %s not checked; run fsck again", what);
    else if (e != ELOOP && e != EINVAL && e != EISDIR)   /* layout says why */
        add(f, "FSCK_BAD_ENTRY", name, "cannot be locked: %s (%s not checked)",
            e ? strerror(e) : err.msg, what);
    return -1;
}

/* ---- tasks and claims ---- */

static int task_name(const char *name)
{
    size_t len = strlen(name);
    return name[0] != '.' && name[0] != '_' && len >= 6 && strcmp(name + len - 5, ".json") == 0;
}

/* Load and validate every record into b (the valid ones); known gets the
 * stem of every record file, valid or not. Returns the number of bad ones. */
static size_t load_tasks(struct fsck *f, json_t *tasks, json_t *ids, json_t *known)
{
    struct ents names;
    size_t i, bad = 0;
    char path[PATH_MAX];
    int tfd = ac_open_dir_at(f->chfd, AC_TASKS_DIR);
    if (tfd == -1)
        return 0;
    if (list_sorted(tfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", AC_TASKS_DIR, "cannot be listed: %s", strerror(errno));
        close(tfd);
        return 1;
    }
    for (i = 0; i < names.n; i++) {
        const char *name = names.v[i].name;
        struct ac_err err = AC_ERR_INIT;
        json_t *rec = NULL;
        char stem[NAME_MAX + 1];
        if (!task_name(name))
            continue;
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(name) - 5), name);
        json_object_set_new(known, stem, json_true());
        join(path, sizeof path, AC_TASKS_DIR, name);
        {
            char *data = NULL;
            size_t len = 0;
            int e = ac_read_file_at(tfd, name, AC_TASK_RECORD_CAP, &data, &len) == -1 ? errno : 0;
            int bad_rec = ac_task_parse(name, data, len, e, &rec, &err) == -1;
            free(data);
            if (bad_rec)
                rec = NULL;
        }
        if (!rec || ac_task_validate(rec, name, f->channel, f->ch, &err) == -1) {
            add(f, "FSCK_BAD_TASK", path, "%s: %s", err.code, err.msg);
            bad++;
        } else {
            if (json_object_set(tasks, stem, rec) == -1 ||
                json_array_append_new(ids, json_string(stem)) == -1)
                f->oom = 1;
        }
        json_decref(rec);
    }
    check_debris(f, tfd, AC_TASKS_DIR, &names, NULL);
    ents_free(&names);
    close(tfd);
    return bad;
}

/* The claim file of each task agrees with it (the lease layer's own check,
 * claimrec.h). */
static void check_leases(struct fsck *f, json_t *tasks, json_t *ids, const char *pending_task)
{
    size_t i;
    char path[PATH_MAX];
    for (i = 0; i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        const json_t *task = json_object_get(tasks, id);
        struct ac_err err = AC_ERR_INIT;
        struct ac_recset set;
        json_t *claim = NULL;
        char *name = NULL, prefix[NAME_MAX + 2];
        const char *status;
        int rc;
        if (pending_task && strcmp(id, pending_task) == 0)
            continue;           /* the journal explains it; recovery settles it */
        snprintf(prefix, sizeof prefix, "%s.", id);
        rc = ac_fs_rec_scan(f->ch, AC_CLAIMS, prefix, 0, &set, &err);
        if (rc == 0) {
            rc = ac_claim_find(&set, NULL, id, f->channel, &claim, &name, &err);
            ac_recset_free(&set);
        }
        if (rc == 0 && ac_claim_consistent(task, claim, &err) == -1)
            rc = -1;
        if (rc == -1) {
            const char *code = err.code ? err.code : "IO_ERROR";
            json_decref(claim);
            free(name);
            add(f, strcmp(code, "LEASE_INCONSISTENT") == 0 ? "FSCK_CLAIM_MISMATCH"
                   : strcmp(code, "LEASE_INVALID_RECORD") == 0 ? "FSCK_BAD_CLAIM" : "FSCK_BAD_ENTRY",
                AC_CLAIMS_DIR, "%s: %s", code, err.msg);
            continue;
        }
        status = ac_task_str(task, "status");
        if (claim && status && strcmp(status, "in_progress") != 0) {
            char file[NAME_MAX + 8];
            snprintf(file, sizeof file, "%s.json", name);
            join(path, sizeof path, AC_CLAIMS_DIR, file);
            add(f, "FSCK_CLAIM_MISMATCH", path, "task %s holds a lease but its status is %s, not in_progress",
                id, status);
        }
        json_decref(claim);
        free(name);
    }
}

/* Claim files that no task's lease check reads: their task is missing, or
 * their name does not say their task. */
static void check_orphan_claims(struct fsck *f, json_t *known, const char *pending_task)
{
    struct ents names;
    size_t i;
    char path[PATH_MAX];
    int cfd = ac_open_dir_at(f->chfd, AC_CLAIMS_DIR);
    if (cfd == -1)
        return;
    if (list_sorted(cfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", AC_CLAIMS_DIR, "cannot be listed: %s", strerror(errno));
        close(cfd);
        return;
    }
    for (i = 0; i < names.n; i++) {
        const char *name = names.v[i].name, *key;
        char *data, msg[AC_PYJSON_MSG_MAX], why[128];
        size_t len;
        json_t *v, *dummy;
        int attributed = 0;
        if (!task_name(name))
            continue;
        join(path, sizeof path, AC_CLAIMS_DIR, name);
        if (ac_read_file_at(cfd, name, CLAIM_CAP, &data, &len) == -1) {
            snprintf(msg, sizeof msg, "%s", read_problem(errno, why, sizeof why));
            v = NULL;
        } else {
            v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
            free(data);
        }
        if (json_is_string(json_object_get(v, "task_id"))) {
            const char *tid = json_string_value(json_object_get(v, "task_id"));
            size_t tl = strlen(tid);
            attributed = json_object_get(known, tid) && strncmp(name, tid, tl) == 0 && name[tl] == '.';
            if (pending_task && strcmp(tid, pending_task) == 0)
                attributed = 1;
            if (!attributed)
                add(f, "FSCK_CLAIM_MISMATCH", path, "lease record of task %s, which has no task record "
                    "under this file name", tid);
        } else {
            /* unreadable: reported by the lease check of a task it may belong to */
            json_object_foreach(known, key, dummy) {
                size_t kl = strlen(key);
                if (strncmp(name, key, kl) == 0 && name[kl] == '.')
                    attributed = 1;
            }
            if (pending_task && strncmp(name, pending_task, strlen(pending_task)) == 0)
                attributed = 1;
            if (!attributed)
                add(f, "FSCK_BAD_CLAIM", path, "%s", v ? "is not a lease record" : msg);
        }
        json_decref(v);
    }
    check_debris(f, cfd, AC_CLAIMS_DIR, &names, NULL);
    ents_free(&names);
    close(cfd);
}

static void check_board(struct fsck *f)
{
    struct ac_mutex *m = NULL;
    struct ac_pending p;
    struct ac_err err = AC_ERR_INIT;
    json_t *known = json_object(), *tasks = json_object(), *ids = json_array();
    const char *pending_task = NULL;
    const char *journal = ac_fs_journal_path(AC_BATCH_LEASE);
    size_t bad;
    int rc;

    if (!known || !tasks || !ids) {
        f->oom = 1;
        goto out;
    }
    if (lock_existing(f, AC_MUTEX_TASKS, &m, "tasks and claims") == -1)
        goto out;
    bad = load_tasks(f, tasks, ids, known);
    if (bad == 0 && ac_task_graph_check(tasks, ids, &err) == -1)
        add(f, "FSCK_BAD_TASK", AC_TASKS_DIR, "%s: %s", err.code, err.msg);
    err = (struct ac_err)AC_ERR_INIT;
    rc = ac_fs_pending_read(f->ch, AC_BATCH_LEASE, NULL, &p, &err);
    if (rc == 1) {
        add(f, "FSCK_PENDING_JOURNAL", journal,
            "interrupted lease mutation (%s of task %s, phase %s); run: agent-chat task recover-pending "
            "%s --as NAME", p.event, p.subject, p.phase, f->qchannel);
        pending_task = p.subject;
    } else if (rc == -1) {
        add(f, "FSCK_BAD_JOURNAL", journal,
            "%s: %s (recover-pending cannot use it: restore the records by hand, then remove it)",
            err.code, err.msg);
    }
    check_leases(f, tasks, ids, pending_task);
    check_orphan_claims(f, known, pending_task);
    ac_pending_free(&p);
out:
    json_decref(known);
    json_decref(tasks);
    json_decref(ids);
    ac_mutex_release(m);
}

/* ---- path locks ---- */

static void check_locks(struct fsck *f)
{
    struct ac_mutex *m = NULL;
    struct ents names;
    struct ac_lockrec *recs = NULL;
    struct ac_pending p;
    struct ac_err err = AC_ERR_INIT;
    size_t i, k, a, b, n = 0;
    char path[PATH_MAX], why[128];
    int ldfd, rc;

    if (lock_existing(f, AC_MUTEX_PATHLOCKS, &m, "path locks") == -1)
        return;
    ldfd = ac_open_dir_at(f->chfd, AC_PATHLOCK_DIR);
    if (ldfd == -1)
        goto out;
    if (list_sorted(ldfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", AC_PATHLOCK_DIR, "cannot be listed: %s", strerror(errno));
        close(ldfd);
        goto out;
    }
    recs = calloc(names.n + 1, sizeof *recs);
    if (!recs)
        f->oom = 1;
    for (i = 0; recs && i < names.n; i++) {
        const char *name = names.v[i].name;
        size_t len = strlen(name);
        char *data;
        if (name[0] == '.' || len < 6 || strcmp(name + len - 5, ".json") != 0)
            continue;
        join(path, sizeof path, AC_PATHLOCK_DIR, name);
        if (ac_read_file_at(ldfd, name, AC_PATHLOCK_FILE_CAP, &data, &len) == -1) {
            add(f, "FSCK_BAD_LOCK", path, "%s", read_problem(errno, why, sizeof why));
            continue;
        }
        err = (struct ac_err)AC_ERR_INIT;
        if (ac_lockrec_parse(data, len, name, f->channel, &recs[n], &err) == 0)
            n++;
        else
            add(f, "FSCK_BAD_LOCK", path, "%s: %s", err.code, err.msg);
        free(data);
    }
    /* Two live records covering one path: two holders (pathlock.c refuses
     * an overlapping lock, expired ones included). */
    for (a = 0; a < n; a++)
        for (b = a + 1; b < n; b++)
            for (i = 0; i < recs[a].npaths; i++)
                for (k = 0; k < recs[b].npaths; k++)
                    if (ac_pathlock_overlaps(recs[a].paths[i].normalized, recs[b].paths[k].normalized)) {
                        snprintf(path, sizeof path, "%s/%s.json", AC_PATHLOCK_DIR, recs[a].lock_id);
                        add(f, "FSCK_LOCK_CONFLICT", path, "%s overlaps %s of lock %s (owners %s and %s)",
                            recs[a].paths[i].normalized, recs[b].paths[k].normalized, recs[b].lock_id,
                            recs[a].owner, recs[b].owner);
                        i = recs[a].npaths;     /* one finding per pair */
                        break;
                    }
    err = (struct ac_err)AC_ERR_INIT;
    rc = ac_fs_pending_read(f->ch, AC_BATCH_PATHLOCK, NULL, &p, &err);
    if (rc == 1) {
        add(f, "FSCK_PENDING_JOURNAL", ac_fs_journal_path(AC_BATCH_PATHLOCK),
            "interrupted path-lock %s of %s (phase %s); run: agent-chat recover-pending %s --as NAME",
            p.operation, p.subject, p.phase, f->qchannel);
    } else if (rc == -1) {
        add(f, "FSCK_BAD_JOURNAL", ac_fs_journal_path(AC_BATCH_PATHLOCK),
            "%s: %s (recover-pending cannot use it: restore the lock record by hand, then remove it)",
            err.code, err.msg);
    }
    ac_pending_free(&p);
    check_debris(f, ldfd, AC_PATHLOCK_DIR, &names, NULL);
    for (i = 0; i < n; i++)
        ac_lockrec_free(&recs[i]);
    free(recs);
    ents_free(&names);
    close(ldfd);
out:
    ac_mutex_release(m);
}

/* ---- optional families (directories other features add) ---- */

/* Ack records `.acks/<seq>/<agent>.json` (receipts): each seq directory is
 * decimal and not beyond the highest seq ever allocated, each record is a
 * JSON object; the atomic writer's old temps are debris as anywhere. The
 * record's own fields belong to the receipts feature, which may check them
 * here too. */
static void check_ack_seq(struct fsck *f, int adfd, const char *seqname)
{
    struct ents names;
    char dir[PATH_MAX], path[PATH_MAX], why[128];
    size_t i;
    int sfd = ac_open_dir_at(adfd, seqname);

    join(dir, sizeof dir, ".acks", seqname);
    if (sfd == -1 || list_sorted(sfd, &names) == -1) {
        add(f, "FSCK_BAD_ACK", dir, "is not a directory of ack records");
        if (sfd != -1)
            close(sfd);
        return;
    }
    for (i = 0; i < names.n; i++) {
        const char *name = names.v[i].name;
        size_t len = strlen(name);
        char *data, msg[AC_PYJSON_MSG_MAX];
        json_t *v;
        if (name[0] == '.' || len < 6 || strcmp(name + len - 5, ".json") != 0)
            continue;
        join(path, sizeof path, dir, name);
        if (ac_read_file_at(sfd, name, CLAIM_CAP, &data, &len) == -1) {
            add(f, "FSCK_BAD_ACK", path, "%s", read_problem(errno, why, sizeof why));
            continue;
        }
        v = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
        free(data);
        if (!json_is_object(v))
            add(f, "FSCK_BAD_ACK", path, "%s", v ? "is not a JSON object" : msg);
        json_decref(v);
    }
    check_debris(f, sfd, dir, &names, NULL);
    ents_free(&names);
    close(sfd);
}

static void check_acks(struct fsck *f, int adfd)
{
    struct ents names;
    size_t i;
    if (list_sorted(adfd, &names) == -1) {
        add(f, "FSCK_BAD_ENTRY", ".acks", "cannot be listed: %s", strerror(errno));
        return;
    }
    for (i = 0; i < names.n; i++) {
        const char *name = names.v[i].name;
        uint64_t seq;
        char path[PATH_MAX];
        if (name[0] == '.')
            continue;
        join(path, sizeof path, ".acks", name);
        if (!parse_seq(name, strlen(name), &seq))
            add(f, "FSCK_BAD_ACK", path, "is not named after a message seq");
        else if (seq > f->high)
            add(f, "FSCK_BAD_ACK", path, "acknowledges seq %" PRIu64 ", beyond the highest seq ever "
                "allocated (%" PRIu64 ")", seq, f->high);
        else
            check_ack_seq(f, adfd, name);
    }
    check_debris(f, adfd, ".acks", &names, NULL);
    ents_free(&names);
}

/* Directories that features beyond docs/format.md add to a channel, each checked
 * when present (check_layout already requires a directory). */
static const struct {
    const char *dir;
    void (*check)(struct fsck *f, int dirfd);
} families[] = {
    { ".acks", check_acks },
};

static void check_families(struct fsck *f)
{
    size_t i;
    for (i = 0; i < sizeof families / sizeof families[0]; i++) {
        int fd = ac_open_dir_at(f->chfd, families[i].dir);
        if (fd != -1) {
            families[i].check(f, fd);
            close(fd);
        }
    }
}

/* ---- entry point ---- */

int ac_fs_fsck(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err)
{
    struct fsck f;
    memset(&f, 0, sizeof f);
    f.ch = ch;
    f.chfd = fs_chan_fd(ch);
    f.channel = ch->name;
    ac_err_quote(f.qchannel, sizeof f.qchannel, f.channel, QUOTE_MAX);
    f.repair = (flags & AC_FSCK_REPAIR) != 0;
    f.now = (int64_t)time(NULL);
    f.r = r;

    check_layout(&f);
    check_meta(&f);
    check_channel_dir(&f);
    check_cursors(&f);
    check_board(&f);
    check_locks(&f);
    check_families(&f);
    if (f.oom)
        return ac_err_sys(err, ENOMEM, NULL, "could not check channel %s", f.qchannel);
    return 0;
}

void ac_fsck_report_free(struct ac_fsck_report *r)
{
    size_t i;
    for (i = 0; i < r->n; i++) {
        free(r->v[i].path);
        free(r->v[i].message);
        free(r->v[i].repaired);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

const char *ac_fsck_code(size_t i, int *klass)
{
    if (i >= NCODES)
        return NULL;
    *klass = codes[i].klass;
    return codes[i].code;
}
