/* scan.c - listing message files and the scan stamp; see scan.h. */
#define _GNU_SOURCE   /* statx, CLOCK_REALTIME_COARSE */
#include "scan.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "fsutil.h"
#include "agentchat/buf.h"
#include "agentchat/pystr.h"

#define STAMP_XATTR "user.agent-chat.scan"

int ac_scan_parse_name(const char *name, uint64_t *seq)
{
    const char *dash = strchr(name, '-');
    size_t len = strlen(name);
    if (!dash || len < 3 || strcmp(name + len - 3, ".md") != 0)
        return 0;
    /* Fast path: ASCII digits. */
    if (dash > name && (unsigned char)name[0] < 0x80) {
        const char *p;
        uint64_t v = 0;
        for (p = name; p < dash; p++) {
            if (*p < '0' || *p > '9')
                goto unicode;
            if (v > (UINT64_C(0x7FFFFFFFFFFFFFFF) - (uint64_t)(*p - '0')) / 10)
                goto unicode;   /* decides between "beyond" and "not a seq" */
            v = v * 10 + (uint64_t)(*p - '0');
        }
        *seq = v;
        return 1;
    }
unicode:
    if (ac_py_decimal_value(name, (size_t)(dash - name), seq) == 0)
        return 1;
    return errno == ERANGE ? -1 : 0;
}

struct collect {
    struct ac_listing *out;
    int64_t after;
    size_t cap;
    int oom;
};

static int collect_cb(void *ctx, const char *name, unsigned char type)
{
    struct collect *c = ctx;
    struct ac_listing *l = c->out;
    uint64_t seq;

    /* Every name counts, whatever its type: Python's glob("*.md") sees
     * symlinks and directories too, and a seq on disk must never be
     * handed out again. Readers skip what is not a regular file. */
    (void)type;
    switch (ac_scan_parse_name(name, &seq)) {
    case 0:
        return 0;
    case -1:
        l->beyond++;
        if (!l->beyond_name && !(l->beyond_name = strdup(name))) {
            c->oom = 1;
            return 1;
        }
        return 0;
    }
    l->count++;
    if (!l->last_name || seq > l->max_seq ||
        (seq == l->max_seq && strcmp(name, l->last_name) > 0)) {
        char *copy = strdup(name);
        if (!copy) {
            c->oom = 1;
            return 1;
        }
        free(l->last_name);
        l->last_name = copy;
        l->max_seq = seq;
    }
    if ((int64_t)seq <= c->after)
        return 0;
    if (ac_grow(&l->v, &c->cap, l->n + 1, sizeof *l->v) == -1) {
        c->oom = 1;
        return 1;
    }
    l->v[l->n].seq = seq;
    l->v[l->n].name = strdup(name);
    if (!l->v[l->n].name) {
        c->oom = 1;
        return 1;
    }
    l->n++;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct ac_entry *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* True when the sorted entries above `after` skip a seq below the highest. */
static int has_gap(const struct ac_listing *l, int64_t after)
{
    uint64_t expect;
    size_t i;
    if (l->n == 0)
        return 0;
    expect = after < 0 ? l->v[0].seq : (uint64_t)after + 1;
    for (i = 0; i < l->n; i++) {
        if (l->v[i].seq > expect)
            return 1;
        expect = l->v[i].seq + 1;
    }
    return 0;
}

static int has_entry(const struct ac_listing *l, const char *name)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return 1;
    return 0;
}

/* readdir() may miss entries added while it runs (POSIX leaves it
 * unspecified; ext4 walks hash order), so a listing can show N+1 and not N
 * even though N was published first. Every seq up to the first listing's
 * highest was published before that listing ended, hence before a second
 * one starts, which therefore sees it: add those to the first listing. */
static int fill_gaps(int dirfd, int64_t after, struct ac_listing *out)
{
    struct ac_listing again;
    struct collect c;
    size_t i;
    int rc = 0;

    memset(&again, 0, sizeof again);
    memset(&c, 0, sizeof c);
    c.out = &again;
    c.after = after;
    if (ac_dir_walk(dirfd, collect_cb, &c) == -1 || c.oom) {
        ac_listing_free(&again);
        return -1;
    }
    for (i = 0; i < again.n && rc == 0; i++) {
        struct ac_entry *e = &again.v[i];
        struct ac_entry *nv;
        if (e->seq > out->max_seq || has_entry(out, e->name))
            continue;
        nv = realloc(out->v, (out->n + 1) * sizeof *nv);
        if (!nv) {
            rc = -1;
            break;
        }
        out->v = nv;
        out->v[out->n++] = *e;
        out->count++;
        e->name = NULL;           /* moved */
    }
    ac_listing_free(&again);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_entry);
    return rc;
}

int ac_stamp_valid(int dirfd, const struct ac_dirstate *key, struct ac_stamp *out)
{
    char buf[400];
    ssize_t n = fgetxattr(dirfd, STAMP_XATTR, buf, sizeof buf - 1);
    struct ac_dirstate k;
    uint64_t max, count;
    int used = 0;

    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (sscanf(buf, "2 %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %n",
               &k.sec, &k.nsec, &k.size, &max, &count, &used) != 5 || used == 0)
        return 0;
    if (!ac_dirstate_eq(&k, key))
        return 0;
    if (out) {
        size_t rest = strlen(buf + used);
        out->key = k;
        out->max_seq = max;
        out->count = count;
        if (rest && buf[used + rest - 1] == '\n')
            rest--;
        if (rest >= sizeof out->last_name)
            return 0;
        memcpy(out->last_name, buf + used, rest);
        out->last_name[rest] = '\0';
        if (count > 0 && rest == 0)
            return 0;
    }
    return 1;
}

void ac_stamp_write(int dirfd, const struct ac_stamp *st)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf, "2 %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n",
                     st->key.sec, st->key.nsec, st->key.size, st->max_seq, st->count,
                     st->last_name);
    if (n > 0 && (size_t)n < sizeof buf)
        fsetxattr(dirfd, STAMP_XATTR, buf, (size_t)n, 0);
}

void ac_stamp_clear(int dirfd)
{
    fremovexattr(dirfd, STAMP_XATTR);
}

static int64_t coarse_now_ns(int64_t *sec, int64_t *nsec)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    *sec = ts.tv_sec;
    *nsec = ts.tv_nsec;
    return 0;
}

static int ts_before(int64_t s1, int64_t n1, int64_t s2, int64_t n2)
{
    return s1 < s2 || (s1 == s2 && n1 < n2);
}

int ac_scan_list(int dirfd, int64_t after, int use_stamp,
                 struct ac_listing *out, struct ac_err *err)
{
    struct collect c;
    struct ac_stamp st;
    struct ac_dirstate d1, d2;
    int64_t cs, cns;
    int have_state, stable;

    memset(out, 0, sizeof *out);
    coarse_now_ns(&cs, &cns);
    have_state = ac_dir_state(dirfd, &d1) == 0;
    if (use_stamp && have_state && ac_stamp_valid(dirfd, &d1, &st) &&
        (int64_t)st.max_seq <= after) {
        out->max_seq = st.max_seq;
        out->count = (size_t)st.count;
        out->from_stamp = 1;
        if (st.count > 0) {
            out->last_name = strdup(st.last_name);
            if (!out->last_name)
                return ac_err_sys(err, ENOMEM, NULL, "could not list messages");
        }
        return 0;
    }

    memset(&c, 0, sizeof c);
    c.out = out;
    c.after = after;
    if (ac_dir_walk(dirfd, collect_cb, &c) == -1 || c.oom) {
        int e = c.oom ? ENOMEM : errno;
        ac_listing_free(out);
        return ac_err_sys(err, e, NULL, "could not list messages");
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_entry);
    stable = have_state && ac_dir_state(dirfd, &d2) == 0 && ac_dirstate_eq(&d1, &d2);

    /* A gap is real (a deleted or burned seq) when nothing changed while we
     * listed; otherwise it may be a readdir miss: list again. */
    if (has_gap(out, after) &&
        !(stable && (ac_fs_fine_timestamps(dirfd) || ts_before(d1.sec, d1.nsec, cs, cns)))) {
        if (fill_gaps(dirfd, after, out) == -1) {
            int e = errno ? errno : ENOMEM;
            ac_listing_free(out);
            return ac_err_sys(err, e, NULL, "could not list messages");
        }
        stable = 0;
    }

    /* Refresh the stamp when provably safe (see scan.h); a name beyond the
     * highest seq must be seen by every post, so it is never stamped. */
    if (stable && !out->beyond && ts_before(d1.sec, d1.nsec, cs, cns) &&
        !ac_stamp_valid(dirfd, &d1, NULL)) {
        memset(&st, 0, sizeof st);
        st.key = d1;
        st.max_seq = out->max_seq;
        st.count = out->count;
        if (out->last_name && strlen(out->last_name) < sizeof st.last_name)
            strcpy(st.last_name, out->last_name);
        if (out->count == 0 || st.last_name[0])
            ac_stamp_write(dirfd, &st);
    }
    return 0;
}

