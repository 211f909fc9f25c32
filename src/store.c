/*
 * store.c - the wrappers of the store interface and the backend-independent
 * message logic; see include/agentchat/store.h.
 *
 * Every call into a backend goes through a wrapper here: the one place
 * that checks the operation exists in the backend's table (its version),
 * and that reaches the "store.<op>" fault point before a change, so the
 * crash tests hit every backend at the same steps.
 */
#include "agentchat/store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentchat/clock.h"
#include "agentchat/fault.h"
#include "agentchat/utf8.h"

/* How often a reader holding back an incomplete file looks again. */
#define INCOMPLETE_RECHECK_NS (20 * 1000000LL)

/* ---- the wrappers ---- */

/* Does the backend's table have operation `op` (added in `since`)? */
#define HAS(st, since, op) ((st)->ops->version >= (since) && (st)->ops->op != NULL)
#define CHOPS(ch) ((ch)->store->ops)

static int unsupported(struct ac_store *st, const char *what, struct ac_err *err)
{
    return ac_err_set(err, AC_EXIT_GENERAL, "STORE_UNSUPPORTED", "the %s store cannot %s",
                      st->ops->name, what);
}

/* The fault point before a change: -1 with err (the errno of the fault). */
static int fault(const char *point, const char *what, struct ac_err *err)
{
    if (AC_FAULT(point) == -1)
        return ac_err_sys(err, errno, NULL, "could not %s", what);
    return 0;
}

void ac_store_close(struct ac_store *st)
{
    if (st)
        st->ops->destroy(st);
}

void ac_store_session_end(struct ac_store *st)
{
    if (HAS(st, 2, session_end))
        st->ops->session_end(st);
}

int ac_store_channels(struct ac_store *st, char ***names, size_t *n, struct ac_err *err)
{
    return st->ops->chan_names(st, names, n, err);
}

int ac_store_chan_open(struct ac_store *st, const char *name, struct ac_chan **out,
                       struct ac_err *err)
{
    return st->ops->chan_open(st, name, out, err);
}

int ac_store_hidden_channels(struct ac_store *st, char ***names, size_t *n, struct ac_err *err)
{
    *names = NULL;
    *n = 0;
    if (!HAS(st, 2, chan_hidden))
        return 0;
    return st->ops->chan_hidden(st, names, n, err);
}

int ac_store_chan_open_hidden(struct ac_store *st, const char *name, struct ac_chan **out,
                              struct ac_err *err)
{
    *out = NULL;
    if (!HAS(st, 2, chan_open_hidden))
        return ac_err_set(err, AC_EXIT_GENERAL, "CHANNEL_NOT_FOUND", "channel not found");
    return st->ops->chan_open_hidden(st, name, out, err);
}

int ac_store_chan_open_bare(struct ac_store *st, const char *name, struct ac_chan **out,
                            struct ac_err *err)
{
    if (!HAS(st, 2, chan_open_bare))
        return ac_store_chan_open(st, name, out, err);
    *out = NULL;
    return st->ops->chan_open_bare(st, name, out, err);
}

int ac_store_chan_create(struct ac_store *st, const char *name, const char *meta, size_t meta_len,
                         struct ac_err *err)
{
    if (fault("store.chan_create", "create the channel", err) == -1)
        return -1;
    return st->ops->chan_create(st, name, meta, meta_len, err);
}

void ac_chan_close(struct ac_chan *ch)
{
    if (ch)
        CHOPS(ch)->chan_close(ch);
}

int ac_chan_meta_read(struct ac_chan *ch, struct ac_file *out, struct ac_err *err)
{
    return CHOPS(ch)->meta_read(ch, out, err);
}

int ac_chan_msg_post(struct ac_chan *ch, const struct ac_post_req *req,
                     struct ac_post_result *out, struct ac_err *err)
{
    out->published = 0;
    if (fault("store.msg_post", "post the message", err) == -1)
        return -1;
    return CHOPS(ch)->msg_post(ch, req, out, err);
}

int ac_chan_msg_list(struct ac_chan *ch, int64_t after, int use_stamp, struct ac_listing *out,
                     struct ac_err *err)
{
    return CHOPS(ch)->msg_list(ch, after, use_stamp, out, err);
}

int ac_chan_msg_read(struct ac_chan *ch, const char *name, struct ac_file *out,
                     struct ac_err *err)
{
    return CHOPS(ch)->msg_read(ch, name, out, err);
}

int64_t ac_chan_cursor_get(struct ac_chan *ch, const char *agent, int64_t *mtime_us)
{
    if (mtime_us)
        *mtime_us = 0;
    return CHOPS(ch)->cursor_get(ch, agent, mtime_us);
}

int ac_chan_cursor_set(struct ac_chan *ch, const char *agent, int64_t value, struct ac_err *err)
{
    if (fault("store.cursor_set", "move the cursor", err) == -1)
        return -1;
    return CHOPS(ch)->cursor_set(ch, agent, value, err);
}

int ac_chan_cursor_advance(struct ac_chan *ch, const char *agent, const int64_t *expected, int64_t value,
                           struct ac_err *err)
{
    if (fault("store.cursor_advance", "move the cursor", err) == -1)
        return -1;
    if (!HAS(ch->store, 2, cursor_advance))     /* a plain write, then */
        return CHOPS(ch)->cursor_set(ch, agent, value, err);
    return CHOPS(ch)->cursor_advance(ch, agent, expected, value, err);
}

int ac_chan_cursor_lock(struct ac_chan *ch, const char *agent, struct ac_mutex **out,
                        struct ac_err *err)
{
    *out = NULL;
    if (!HAS(ch->store, 2, cursor_lock))
        return 0;               /* nothing to exclude with: no lock (NULL) */
    if (CHOPS(ch)->cursor_lock(ch, agent, out, err) == -1)
        return -1;
    (*out)->ops = CHOPS(ch);
    return 0;
}

struct ac_watch *ac_chan_watch_open(struct ac_chan *ch, int what, uint64_t seq)
{
    return CHOPS(ch)->watch_open ? CHOPS(ch)->watch_open(ch, what, seq) : NULL;
}

int ac_chan_watch_wait(struct ac_chan *ch, struct ac_watch *w, int64_t timeout_ns)
{
    return CHOPS(ch)->watch_wait(w, timeout_ns);
}

int ac_chan_watch_wait_fd(struct ac_chan *ch, struct ac_watch *w, int64_t timeout_ns, int fd)
{
    if (!HAS(ch->store, 2, watch_wait_fd)) {
        errno = ENOSYS;
        return -1;
    }
    return CHOPS(ch)->watch_wait_fd(w, timeout_ns, fd);
}

int ac_chan_watch_add(struct ac_chan *ch, struct ac_watch *w, int what, uint64_t seq)
{
    if (!w || !HAS(ch->store, 2, watch_add)) {
        errno = ENOSYS;
        return -1;
    }
    return CHOPS(ch)->watch_add(w, ch, what, seq);
}

int ac_store_watch_wait_many(struct ac_store *st, struct ac_watch *const *ws, size_t n,
                             int64_t timeout_ns)
{
    if (!HAS(st, 2, watch_wait_many)) {
        errno = ENOSYS;
        return -1;
    }
    return st->ops->watch_wait_many(ws, n, timeout_ns);
}

void ac_chan_watch_close(struct ac_chan *ch, struct ac_watch *w)
{
    if (w)
        CHOPS(ch)->watch_close(w);
}

int ac_chan_marker_claim(struct ac_chan *ch, const char *marker, const char *agent, char *dest,
                         size_t dest_size, struct ac_err *err)
{
    if (fault("store.marker_claim", "claim the task", err) == -1)
        return -1;
    return CHOPS(ch)->marker_claim(ch, marker, agent, dest, dest_size, err);
}

int ac_chan_rec_scan(struct ac_chan *ch, int family, const char *prefix, int flags,
                     struct ac_recset *out, struct ac_err *err)
{
    out->v = NULL;
    out->n = 0;
    if (!HAS(ch->store, 2, rec_scan))
        return unsupported(ch->store, "list records", err);
    return CHOPS(ch)->rec_scan(ch, family, prefix, flags, out, err);
}

int ac_chan_rec_read(struct ac_chan *ch, int family, const char *name, struct ac_record *out,
                     struct ac_err *err)
{
    memset(out, 0, sizeof *out);
    if (!HAS(ch->store, 2, rec_read))
        return unsupported(ch->store, "read records", err);
    return CHOPS(ch)->rec_read(ch, family, name, out, err);
}

int ac_chan_rec_create(struct ac_chan *ch, int family, const char *name, const char *data,
                       size_t len, struct ac_err *err)
{
    if (!HAS(ch->store, 2, rec_create))
        return unsupported(ch->store, "write records", err);
    if (fault("store.rec_create", "write the record", err) == -1)
        return -1;
    return CHOPS(ch)->rec_create(ch, family, name, data, len, err);
}

void ac_chan_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size)
{
    if (HAS(ch->store, 2, rec_where))
        CHOPS(ch)->rec_where(ch, family, name, out, size);
    else
        snprintf(out, size, "%s", name);
}

int ac_chan_mutex_acquire(struct ac_chan *ch, const char *name, int64_t deadline_ns, int flags,
                          struct ac_mutex **out, struct ac_err *err)
{
    int rc;
    *out = NULL;
    if (!HAS(ch->store, 2, mutex_acquire))
        return unsupported(ch->store, "lock", err);
    if (AC_FAULT("mutex.acquire") == -1)
        return ac_err_sys(err, errno, NULL, "could not lock %s", name ? name : ch->name);
    rc = CHOPS(ch)->mutex_acquire(ch, name, deadline_ns, flags, out, err);
    if (rc == 0)
        (*out)->ops = CHOPS(ch);
    return rc;
}

int ac_chan_mutex_enter(struct ac_chan *ch, const char *name, int flags, struct ac_mutex **out,
                        const char *timeout_code, const char *timeout_msg, const char *io_code,
                        const char *io_what, struct ac_err *err)
{
    struct ac_err merr = AC_ERR_INIT;
    int rc = ac_chan_mutex_acquire(ch, name, ac_clock_mono_ns() + AC_MUTEX_WAIT_NS, flags, out,
                                   &merr);
    if (rc == 0)
        return 0;
    if (rc == AC_MUTEX_TIMEOUT)
        return ac_err_code(err, timeout_code, "%s", timeout_msg);
    if (merr.sys_errno == EINTR)
        return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
    if (merr.sys_errno)
        return ac_err_sys(err, merr.sys_errno, io_code, "%s", io_what);
    if (err)
        *err = merr;
    return -1;
}

void ac_mutex_release(struct ac_mutex *m)
{
    if (m)
        m->ops->mutex_release(m);
}

int ac_chan_msg_put(struct ac_chan *ch, const char *name, const char *data, size_t len,
                    struct ac_err *err)
{
    if (!HAS(ch->store, 2, msg_put))
        return unsupported(ch->store, "copy messages", err);
    if (fault("store.msg_put", "copy the message", err) == -1)
        return -1;
    return CHOPS(ch)->msg_put(ch, name, data, len, err);
}

int ac_chan_msg_trim_check(struct ac_chan *ch, uint64_t through, struct ac_trim_result *out,
                           struct ac_err *err)
{
    struct ac_listing l;
    size_t i;
    memset(out, 0, sizeof *out);
    if (!HAS(ch->store, 2, msg_trim))
        return unsupported(ch->store, "trim messages", err);
    if (ac_chan_msg_list(ch, 0, 0, &l, err) == -1)
        return -1;
    out->newest = l.max_seq;
    for (i = 0; i < l.n && l.v[i].seq <= through; i++)
        out->messages++;
    ac_listing_free(&l);
    if (out->newest <= through) {
        if (out->newest == 0)
            return ac_err_set(err, AC_EXIT_GENERAL, "TRIM_KEEPS_NEWEST",
                              "channel '%s' has no messages to trim", ch->name);
        return ac_err_set(err, AC_EXIT_GENERAL, "TRIM_KEEPS_NEWEST",
                          "trim keeps the newest message of '%s' (#%" PRIu64 "): trim through "
                          "#%" PRIu64 " at most", ch->name, out->newest, out->newest - 1);
    }
    return 0;
}

int ac_chan_msg_trim(struct ac_chan *ch, uint64_t through, struct ac_trim_result *out,
                     struct ac_err *err)
{
    if (ac_chan_msg_trim_check(ch, through, out, err) == -1)
        return -1;
    if (fault("store.msg_trim", "trim the messages", err) == -1)
        return -1;
    return CHOPS(ch)->msg_trim(ch, through, &out->acks, err);
}

void ac_mutex_keep(struct ac_mutex *m)
{
    if (m && m->ops->version >= 2 && m->ops->mutex_keep)
        m->ops->mutex_keep(m);
}

int ac_chan_blob_write(struct ac_chan *ch, const char *name, const char *data, size_t len,
                       struct ac_err *err)
{
    if (!HAS(ch->store, 2, blob_write))
        return unsupported(ch->store, "write derived files", err);
    if (AC_FAULT("store.blob_write") == -1)
        return ac_err_sys(err, errno, NULL, "could not write %s", name);
    return CHOPS(ch)->blob_write(ch, name, data, len, err);
}

int ac_chan_path_resolve(struct ac_chan *ch, const char *path, char *out, size_t outsz,
                         int *is_dir, const char **why)
{
    if (!HAS(ch->store, 2, path_resolve)) {
        *why = "this store has no workspace";
        return -1;
    }
    return CHOPS(ch)->path_resolve(ch, path, out, outsz, is_dir, why);
}

void ac_chan_sweep(struct ac_chan *ch, int family)
{
    if (HAS(ch->store, 2, sweep))
        CHOPS(ch)->sweep(ch, family);
}

int ac_chan_fsck(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err)
{
    if (!HAS(ch->store, 2, fsck))
        return ac_err_set(err, AC_EXIT_GENERAL, "FSCK_UNSUPPORTED", "the %s store has no fsck",
                          ch->store->ops->name);
    return CHOPS(ch)->fsck(ch, flags, r, err);
}

/* A batch's failures carry its family's codes (store.h); so does the
 * wrapper's own fault point. */
static int batch_fault(int kind, struct ac_err *err)
{
    if (AC_FAULT("store.batch") == 0)
        return 0;
    if (kind == AC_BATCH_PATHLOCK)
        return ac_err_sys(err, errno, NULL, "could not change the path locks");
    return ac_err_sys(err, errno, "TASK_IO_ERROR", "could not change the task board");
}

int ac_chan_batch_commit(struct ac_chan *ch, const struct ac_batch *b, struct ac_err *err)
{
    if (!HAS(ch->store, 2, batch_commit))
        return unsupported(ch->store, "change records", err);
    if (batch_fault(b->kind, err) == -1)
        return -1;
    return CHOPS(ch)->batch_commit(ch, b, err);
}

int ac_chan_pending_read(struct ac_chan *ch, int kind, const struct ac_pending_check *check,
                         struct ac_pending *out, struct ac_err *err)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    if (!HAS(ch->store, 2, pending_read))
        return 0;               /* a store without journals has nothing pending */
    return CHOPS(ch)->pending_read(ch, kind, check, out, err);
}

int ac_chan_pending_settle(struct ac_chan *ch, const struct ac_pending *p, int how,
                           struct ac_err *err)
{
    if (!HAS(ch->store, 2, pending_settle))
        return unsupported(ch->store, "resolve a pending change", err);
    if (AC_FAULT("store.pending_settle") == -1)
        return ac_err_sys(err, errno, NULL, "could not resolve the pending change");
    return CHOPS(ch)->pending_settle(ch, p, how, err);
}

int ac_chan_pending_clear(struct ac_chan *ch, int kind, struct ac_err *err)
{
    if (!HAS(ch->store, 2, pending_clear))
        return unsupported(ch->store, "resolve a pending change", err);
    if (AC_FAULT("store.pending_clear") == -1)
        return ac_err_sys(err, errno, NULL, "could not remove the pending change");
    return CHOPS(ch)->pending_clear(ch, kind, err);
}

/* ---- helpers ---- */

void ac_record_free(struct ac_record *r)
{
    free(r->name);
    free(r->data);
    memset(r, 0, sizeof *r);
}

void ac_recset_free(struct ac_recset *s)
{
    size_t i;
    for (i = 0; i < s->n; i++)
        ac_record_free(&s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void ac_pending_free(struct ac_pending *p)
{
    size_t i;
    for (i = 0; i < p->nchanges; i++) {
        free((char *)p->changes[i].name);
        free((char *)p->changes[i].before);
        free((char *)p->changes[i].after);
    }
    free(p->changes);
    json_decref(p->event_value);
    memset(p, 0, sizeof *p);
}

void ac_file_free(struct ac_file *f)
{
    free(f->data);
    memset(f, 0, sizeof *f);
}

void ac_names_free(char **names, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void ac_listing_free(struct ac_listing *l)
{
    size_t i;
    for (i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    free(l->last_name);
    free(l->beyond_name);
    memset(l, 0, sizeof *l);
}

void ac_inbox_free(struct ac_inbox *in)
{
    size_t i;
    for (i = 0; i < in->n; i++) {
        ac_fm_free(&in->v[i].fm);
        free(in->v[i].text);
        free(in->v[i].decode_error);
        free(in->v[i].name);
    }
    for (i = 0; i < in->nskipped; i++)
        free(in->skipped[i].name);
    free(in->v);
    free(in->skipped);
    memset(in, 0, sizeof *in);
}

static int add_skip(struct ac_inbox *in, const char *name, int e)
{
    struct ac_skip *ns = realloc(in->skipped, (in->nskipped + 1) * sizeof *ns);
    if (!ns)
        return -1;
    in->skipped = ns;
    ns[in->nskipped].name = strdup(name);
    ns[in->nskipped].sys_errno = e;
    if (!ns[in->nskipped].name)
        return -1;
    in->nskipped++;
    return 0;
}

/* Empty or without its final newline, and changed less than
 * AC_INCOMPLETE_GRACE_SEC ago (a file dated in the future is not fresh). */
static int fresh_incomplete(const struct ac_inmsg *m)
{
    int64_t age = (int64_t)time(NULL) - m->mtime_sec;
    return m->incomplete && age >= 0 && age < AC_INCOMPLETE_GRACE_SEC;
}

/* Python reads the frontmatter through a text file that decodes 8 KiB at
 * a time and stops at the closing fence: bytes that are not UTF-8 make it
 * see no frontmatter at all when they lie in a chunk it decodes. So with
 * the first bad byte at `bad`, the frontmatter stands only when its
 * closing fence line ends before the chunk holding that byte. Returns 0,
 * or -1 on allocation failure. */
#define PY_TEXT_CHUNK 8192
static int drop_unreadable_fm(const char *raw, size_t bad, struct ac_inmsg *m)
{
    size_t chunk = bad / PY_TEXT_CHUNK * PY_TEXT_CHUNK, plen;
    int keep = 0;

    if (chunk > 0) {
        struct ac_fm pre;
        char *ptext = ac_text_from_file(raw, chunk, &plen);
        if (!ptext || ac_fm_parse(ptext, plen, &pre) == -1) {
            free(ptext);
            return -1;
        }
        keep = pre.present && pre.body_off > 0 && ptext[pre.body_off - 1] == '\n';
        ac_fm_free(&pre);
        free(ptext);
    }
    if (!keep)
        ac_fm_free(&m->fm);     /* present = 0, body_off = 0: all body */
    return 0;
}

/* Read and parse one listed file into in->v (if relevant). With `hold`, a
 * fresh incomplete file is not loaded: returns 1. */
static int load_one(struct ac_chan *ch, const struct ac_entry *e, const char *agent,
                    int all, int hold, struct ac_inbox *in, struct ac_err *err)
{
    struct ac_file f = { NULL, 0, 0, 0 };
    struct ac_inmsg m;
    struct ac_err rerr = AC_ERR_INIT;
    size_t bad = 0;

    if (ac_chan_msg_read(ch, e->name, &f, &rerr) == -1) {
        /* A file that vanished since the listing is simply gone. */
        if (rerr.sys_errno == ENOENT)
            return 0;
        if (add_skip(in, e->name, rerr.sys_errno) == -1)
            return ac_err_sys(err, ENOMEM, NULL, "could not read messages");
        return 0;
    }
    memset(&m, 0, sizeof m);
    m.seq = e->seq;
    m.mtime_sec = f.mtime_sec;
    m.incomplete = f.len == 0 || f.data[f.len - 1] != '\n';
    m.truncated = f.full_size;
    {
        /* A truncated read holds a prefix: a sequence cut by its end is
         * not known to be bad. */
        char why[160];
        if (ac_utf8_py_error(f.data, f.len, f.full_size != 0, &bad, why, sizeof why) &&
            !(m.decode_error = strdup(why)))
            goto nomem;
    }
    if (f.full_size) {
        /* Show the top of an oversized message and say so. */
        char note[160];
        int nl = snprintf(note, sizeof note,
                          "\n[agent-chat: message truncated for display: %llu bytes, over the %u MiB limit]\n",
                          (unsigned long long)f.full_size, AC_MESSAGE_CAP >> 20);
        char *grown = realloc(f.data, f.len + (size_t)nl + 1);
        if (!grown)
            goto nomem;
        memcpy(grown + f.len, note, (size_t)nl + 1);
        f.data = grown;
        f.len += (size_t)nl;
        m.incomplete = 0;
    }
    /* Relevant or not, as the rest of its text may say. */
    if (hold && fresh_incomplete(&m)) {
        ac_file_free(&f);
        free(m.decode_error);
        return 1;
    }
    m.text = ac_text_from_file(f.data, f.len, &m.text_len);
    if (!m.text || ac_fm_parse(m.text, m.text_len, &m.fm) == -1)
        goto nomem;
    if (m.decode_error && drop_unreadable_fm(f.data, bad, &m) == -1)
        goto nomem;
    ac_file_free(&f);
    if (!all && !ac_fm_is_relevant(&m.fm, agent, strlen(agent))) {
        ac_fm_free(&m.fm);
        free(m.text);
        free(m.decode_error);
        return 0;
    }
    m.name = strdup(e->name);
    if (!m.name)
        goto nomem;
    {
        struct ac_inmsg *nv = realloc(in->v, (in->n + 1) * sizeof *nv);
        if (!nv)
            goto nomem;
        in->v = nv;
        in->v[in->n++] = m;
    }
    return 0;
nomem:
    ac_file_free(&f);
    ac_fm_free(&m.fm);
    free(m.text);
    free(m.decode_error);
    free(m.name);
    return ac_err_sys(err, ENOMEM, NULL, "could not read messages");
}

/* Load l->v[from..]. With `hold`, stop at the first fresh incomplete file:
 * the batch ends below its seq (in->max_seq, where a read moves the
 * cursor) and in->held is set. */
static int load_range(struct ac_chan *ch, const struct ac_listing *l, size_t from,
                      const char *agent, int all, int hold, struct ac_inbox *in, struct ac_err *err)
{
    size_t i;
    in->max_seq = l->max_seq;
    in->count = l->count;
    for (i = from; i < l->n; i++) {
        int rc = load_one(ch, &l->v[i], agent, all, hold, in, err);
        if (rc == -1) {
            ac_inbox_free(in);
            return -1;
        }
        if (rc == 1) {
            uint64_t seq = l->v[i].seq;
            while (in->n > 0 && in->v[in->n - 1].seq == seq) {     /* a second file of that seq */
                in->n--;
                ac_fm_free(&in->v[in->n].fm);
                free(in->v[in->n].text);
                free(in->v[in->n].name);
                free(in->v[in->n].decode_error);
            }
            in->max_seq = seq - 1;
            in->held = 1;
            return 0;
        }
    }
    return 0;
}

int ac_inbox_fetch(struct ac_chan *ch, const char *agent, int64_t after, int flags,
                   struct ac_inbox *out, struct ac_err *err)
{
    int64_t give_up = ac_clock_mono_ns() + (int64_t)AC_INCOMPLETE_GRACE_SEC * 1000000000;

    for (;;) {
        struct ac_listing l;
        int rc;

        memset(out, 0, sizeof *out);
        if (ac_chan_msg_list(ch, after, !(flags & AC_INBOX_NO_STAMP), &l, err) == -1)
            return -1;
        rc = load_range(ch, &l, 0, agent, (flags & AC_INBOX_ALL) != 0, 1, out, err);
        ac_listing_free(&l);
        /* A writer mid-write finishes within the grace (or the file stops
         * being fresh); one that takes longer is left held back. */
        if (rc == -1 || !out->held || ac_clock_mono_ns() >= give_up)
            return rc;
        ac_inbox_free(out);
        if (ac_clock_sleep_ns(INCOMPLETE_RECHECK_NS) == -1)
            return ac_err_set(err, AC_EXIT_INTERRUPTED, "INTERRUPTED", "cancelled by user");
    }
}

int ac_inbox_last(struct ac_chan *ch, size_t n, struct ac_inbox *out, struct ac_err *err)
{
    struct ac_listing l;
    int rc;
    memset(out, 0, sizeof *out);
    if (ac_chan_msg_list(ch, -1, 0, &l, err) == -1)
        return -1;
    rc = load_range(ch, &l, l.n > n ? l.n - n : 0, NULL, 1, 0, out, err);
    ac_listing_free(&l);
    return rc;
}

int ac_inbox_seq(struct ac_chan *ch, uint64_t seq, struct ac_inbox *out, struct ac_err *err)
{
    struct ac_listing l;
    size_t i;
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (seq == 0 || seq > (uint64_t)INT64_MAX) {
        out->max_seq = 0;
        return 0;
    }
    if (ac_chan_msg_list(ch, (int64_t)seq - 1, 1, &l, err) == -1)
        return -1;
    out->max_seq = l.max_seq;
    out->count = l.count;
    /* The listing is sorted by (seq, name): the files of `seq` come first. */
    for (i = 0; i < l.n && l.v[i].seq == seq && rc == 0; i++)
        rc = load_one(ch, &l.v[i], NULL, 1, 0, out, err);
    if (rc == -1)
        ac_inbox_free(out);
    ac_listing_free(&l);
    return rc;
}
