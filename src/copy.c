/* copy.c - copy a channel between stores; see include/agentchat/copy.h. */
#include "agentchat/copy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agentchat/channel.h"
#include "agentchat/frontmatter.h"
#include "agentchat/utf8.h"

/* Add the names of a `to` or `from` value ("a, b", "[a,b]", "all") to set. */
static void add_names(json_t *set, const char *v, size_t len)
{
    char buf[1024];
    const char *p = buf;
    if (len >= sizeof buf)
        return;
    memcpy(buf, v, len);
    buf[len] = '\0';
    while (*p) {
        size_t n = strcspn(p, ",[]");
        const char *a = p, *b = p + n;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            char name[1024];
            snprintf(name, sizeof name, "%.*s", (int)(b - a), a);
            if (strcmp(name, "all") != 0 && strcmp(name, "*") != 0)
                json_object_set_new(set, name, json_true());
        }
        p += n;
        if (*p)
            p++;
    }
}

/* The agents a message names (from, to) into set. */
static void message_agents(json_t *set, const char *data, size_t len)
{
    size_t tlen, vlen;
    char *text = ac_text_from_file(data, len, &tlen);
    struct ac_fm fm;
    const char *v;
    if (!text)
        return;
    if (ac_fm_parse(text, tlen, &fm) == 0) {
        if (ac_fm_get(&fm, "from", &v, &vlen))
            add_names(set, v, vlen);
        if (ac_fm_get(&fm, "to", &v, &vlen))
            add_names(set, v, vlen);
        ac_fm_free(&fm);
    }
    free(text);
}

static int copy_records(struct ac_chan *s, struct ac_chan *d, int family, const char *prefix,
                        size_t *count, struct ac_copy_report *rep, json_t *agents,
                        struct ac_err *err)
{
    struct ac_recset set;
    size_t i;
    if (ac_chan_rec_scan(s, family, prefix, 0, &set, err) == -1)
        return -1;
    for (i = 0; i < set.n; i++) {
        const struct ac_record *r = &set.v[i];
        int rc;
        if (!r->data) {
            rep->skipped++;
            continue;
        }
        rc = ac_chan_rec_create(d, family, r->name, r->data, r->len, err);
        if (rc == -1) {
            ac_recset_free(&set);
            return -1;
        }
        (*count)++;
        if (family == AC_ACKS && agents && strchr(r->name, '/'))
            json_object_set_new(agents, strchr(r->name, '/') + 1, json_true());
    }
    ac_recset_free(&set);
    return 0;
}

int ac_store_copy_channel(struct ac_store *src, struct ac_store *dst, const char *name,
                          struct ac_copy_report *rep, struct ac_err *err)
{
    struct ac_chan *s = NULL, *d = NULL;
    struct ac_file meta = { NULL, 0, 0, 0 };
    struct ac_listing l;
    json_t *agents = json_object(), *m = NULL, *v;
    const char *agent;
    uint64_t last_seq = 0;
    size_t i;
    int rc = -1;

    memset(rep, 0, sizeof *rep);
    memset(&l, 0, sizeof l);
    if (!agents)
        return ac_err_sys(err, ENOMEM, NULL, "could not copy channel %s", name);
    if (ac_store_chan_open(src, name, &s, err) == -1 || ac_chan_meta_read(s, &meta, err) == -1 ||
        ac_chan_msg_list(s, -1, 0, &l, err) == -1)
        goto out;
    if (ac_store_chan_create(dst, name, meta.data, meta.len, err) == -1 ||
        ac_store_chan_open(dst, name, &d, err) == -1)
        goto out;
    /* the members are agents the channel names */
    m = ac_meta_parse(meta.data, meta.len);
    json_array_foreach(json_object_get(m, "members"), i, v)
        if (json_is_string(v))
            json_object_set_new(agents, json_string_value(v), json_true());

    for (i = 0; i < l.n; i++) {
        struct ac_file f;
        struct ac_err rerr = AC_ERR_INIT;
        if (ac_chan_msg_read(s, l.v[i].name, &f, &rerr) == -1 || f.full_size) {
            if (!rerr.code)
                ac_file_free(&f);
            rep->skipped++;                 /* unreadable, or over the cap */
            continue;
        }
        message_agents(agents, f.data, f.len);
        rerr = (struct ac_err)AC_ERR_INIT;
        if (ac_chan_msg_put(d, l.v[i].name, f.data, f.len, &rerr) == -1) {
            ac_file_free(&f);
            if (rerr.sys_errno == EEXIST || rerr.sys_errno == EINVAL) {
                rep->skipped++;             /* a second file of one seq */
                continue;
            }
            if (err)
                *err = rerr;
            goto out;
        }
        ac_file_free(&f);
        rep->messages++;
        /* the acks of this message (once per seq) */
        if (l.v[i].seq != last_seq) {
            char prefix[32];
            last_seq = l.v[i].seq;
            snprintf(prefix, sizeof prefix, "%" PRIu64 "/", last_seq);
            if (copy_records(s, d, AC_ACKS, prefix, &rep->acks, rep, agents, err) == -1)
                goto out;
        }
    }
    if (copy_records(s, d, AC_TASKS, NULL, &rep->records, rep, NULL, err) == -1 ||
        copy_records(s, d, AC_CLAIMS, NULL, &rep->records, rep, NULL, err) == -1 ||
        copy_records(s, d, AC_LOCKS, NULL, &rep->records, rep, NULL, err) == -1)
        goto out;
    /* the cursors of every agent the channel names */
    json_object_foreach(agents, agent, v) {
        int64_t mtime = 0, value = ac_chan_cursor_get(s, agent, &mtime);
        if (mtime == 0)
            continue;                       /* none */
        if (ac_chan_cursor_set(d, agent, value, err) == -1)
            goto out;
        rep->cursors++;
    }
    rc = 0;
out:
    json_decref(m);
    json_decref(agents);
    ac_listing_free(&l);
    ac_file_free(&meta);
    ac_chan_close(d);
    ac_chan_close(s);
    return rc;
}
