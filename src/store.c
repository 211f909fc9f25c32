/* store.c - backend-independent message logic; see include/agentchat/store.h. */
#include "agentchat/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentchat/clock.h"
#include "agentchat/utf8.h"

/* How often a reader holding back an incomplete file looks again. */
#define INCOMPLETE_RECHECK_NS (20 * 1000000LL)

void ac_store_close(struct ac_store *st)
{
    if (st)
        st->ops->destroy(st);
}

int ac_chan_dirfd(struct ac_chan *ch)
{
    return ch->store->ops->chan_dirfd ? ch->store->ops->chan_dirfd(ch) : -1;
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

    if (ch->store->ops->msg_read(ch, e->name, &f, &rerr) == -1) {
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
        if (ch->store->ops->msg_list(ch, after, !(flags & AC_INBOX_NO_STAMP), &l, err) == -1)
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
    if (ch->store->ops->msg_list(ch, -1, 0, &l, err) == -1)
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
    if (ch->store->ops->msg_list(ch, (int64_t)seq - 1, 1, &l, err) == -1)
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
