/*
 * test_store.c - the file system backend through store.h: channels, posts
 * and seq allocation, listings, the inbox, cursors, the scan stamp and the
 * legacy marker claim. The folder it leaves is docs/format.md section 3.
 */
#define _GNU_SOURCE   /* fsetxattr */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/channel.h"
#include "fs/cursor.h"
#include "agentchat/frontmatter.h"
#include "fs/scan.h"
#include "agentchat/store.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define CREATED "2026-11-30T05:01:22+00:00"

static char *tmp, *root;
static struct ac_store *st;

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static char *meta_for(const char *name, size_t *len)
{
    static const char *const members[] = { "alice", "bob" };
    char *m = ac_meta_compose(name, members, 2, "test", CREATED, len);
    if (!m)
        t_bail("ac_meta_compose");
    return m;
}

static void create_chan(const char *name)
{
    struct ac_err err = AC_ERR_INIT;
    size_t len;
    char *meta = meta_for(name, &len);
    if (ac_store_chan_create(st, name, meta, len, &err) == -1)
        t_bail("chan_create %s: %s", name, err.msg);
    free(meta);
}

static struct ac_chan *open_chan(const char *name)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch = NULL;
    if (ac_store_chan_open(st, name, &ch, &err) == -1)
        t_bail("chan_open %s: %s", name, err.msg);
    return ch;
}

/* Post and return the seq (0 on failure, with a diagnostic). */
static uint64_t post_full(struct ac_chan *ch, const char *from, const char *to,
                          const char *title, const char *body, struct ac_post_result *res)
{
    struct ac_post_req req;
    struct ac_post_result r;
    struct ac_err err = AC_ERR_INIT;
    memset(&req, 0, sizeof req);
    req.from = from;
    req.to = to;
    req.title = title;
    req.status = "discussion";
    req.body = body;
    req.body_len = strlen(body);
    if (!res)
        res = &r;
    if (ac_chan_msg_post(ch, &req, res, &err) == -1) {
        printf("# msg_post failed: %s: %s\n", err.code, err.msg);
        return 0;
    }
    return res->seq;
}

static uint64_t post(struct ac_chan *ch, const char *from, const char *to, const char *title)
{
    return post_full(ch, from, to, title, "body", NULL);
}

/* "1,2,5" from a listing or an inbox. */
static const char *listing_seqs(const struct ac_listing *l)
{
    static char buf[1024];
    size_t i, o = 0;
    buf[0] = '\0';
    for (i = 0; i < l->n && o + 24 < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%" PRIu64, i ? "," : "", l->v[i].seq);
    return buf;
}

static const char *inbox_seqs(const struct ac_inbox *in)
{
    static char buf[1024];
    size_t i, o = 0;
    buf[0] = '\0';
    for (i = 0; i < in->n && o + 24 < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%" PRIu64, i ? "," : "", in->v[i].seq);
    return buf;
}

static const char *listing_names(const struct ac_listing *l)
{
    static char buf[2048];
    size_t i, o = 0;
    buf[0] = '\0';
    for (i = 0; i < l->n && o + 300 < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", l->v[i].name);
    return buf;
}

static int list(struct ac_chan *ch, int64_t after, int use_stamp, struct ac_listing *l)
{
    struct ac_err err = AC_ERR_INIT;
    int rc = ac_chan_msg_list(ch, after, use_stamp, l, &err);
    if (rc == -1) {
        printf("# msg_list failed: %s\n", err.msg);
        memset(l, 0, sizeof *l);
    }
    return rc;
}

static const char *chan_path(const char *chan, const char *name)
{
    return t_path("%s/%s/%s", root, chan, name);
}

/* A hand-made message file with frontmatter. */
static void hand_msg(const char *chan, const char *name, const char *from, const char *to)
{
    t_write(chan_path(chan, name),
            t_path("---\nfrom: %s\nto: %s\ntitle: hand\n---\nhand made\n", from, to));
}

/* ---- channels ---- */

static void test_channels(void)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch = NULL;
    struct ac_file f;
    char **names = NULL, *meta, *got;
    size_t n = 99, len;
    int rc;

    TAP_STR_EQ(st->ops->name, "fs", "the backend is fs");
    rc = ac_store_channels(st, &names, &n, &err);
    TAP_OK(rc == 0 && n == 0, "a root that does not exist has no channels");
    ac_names_free(names, n);

    rc = ac_store_chan_open(st, "demo", &ch, &err);
    TAP_OK(rc == -1 && err.code && strcmp(err.code, "CHANNEL_NOT_FOUND") == 0 &&
           err.exit_code == 1, "open in a missing root: CHANNEL_NOT_FOUND, exit 1");
    TAP_STR_EQ(err.msg, t_path("channel 'demo' not found under %s (run: init demo)", root),
               "not-found message");

    meta = meta_for("demo", &len);
    rc = ac_store_chan_create(st, "demo", meta, len, &err);
    TAP_INT_EQ(rc, 0, "create demo (the root is created too)");
    got = t_read(chan_path("demo", "_meta.json"), NULL);
    TAP_STR_EQ(got, meta, "_meta.json holds exactly the given bytes");
    free(got);
    TAP_INT_EQ(t_count_temps(t_path("%s/demo", root)), 0, "no temp left by create");

    memset(&err, 0, sizeof err);
    rc = ac_store_chan_create(st, "demo", meta, len, &err);
    TAP_OK(rc == -1 && err.code && strcmp(err.code, "CHANNEL_EXISTS") == 0 && err.exit_code == 1,
           "create it again: CHANNEL_EXISTS, exit 1");
    TAP_STR_EQ(err.msg, "channel 'demo' already exists", "exists message");

    rc = ac_store_chan_open(st, "demo", &ch, &err);
    TAP_OK(rc == 0 && ch && strcmp(ch->name, "demo") == 0, "open demo");
    rc = ac_chan_meta_read(ch, &f, &err);
    TAP_OK(rc == 0 && f.len == len && memcmp(f.data, meta, len) == 0, "meta_read gives the bytes");
    ac_file_free(&f);
    ac_chan_close(ch);

    /* A directory without _meta.json is not a channel, but can be made one. */
    t_mkdir(t_path("%s/nometa", root));
    rc = ac_store_chan_open(st, "nometa", &ch, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "CHANNEL_NOT_FOUND") == 0,
           "a directory without _meta.json is not found");
    /* Hidden and symlinked directories, plain files: never channels. */
    t_mkdir(t_path("%s/.hidden", root));
    t_write(t_path("%s/.hidden/_meta.json", root), "{}");
    t_write(t_path("%s/file", root), "x");
    if (symlink("demo", t_path("%s/alias", root)) == -1)
        t_bail("symlink");
    rc = ac_store_chan_open(st, "alias", &ch, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "CHANNEL_NOT_FOUND") == 0,
           "a symlinked channel directory is not followed");
    rc = ac_store_chan_open(st, "file", &ch, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "CHANNEL_NOT_FOUND") == 0, "a plain file is not found");

    /* Ordinary odd names are channels (format.md 3.1). */
    create_chan("odd name");
    create_chan("say\"hi\"");
    create_chan("\xc3\xbcn\xc3\xaf");
    rc = ac_store_chan_open(st, "odd name", &ch, &err);
    TAP_INT_EQ(rc, 0, "'odd name' is an ordinary channel");
    if (rc == 0)
        ac_chan_close(ch);

    rc = ac_store_chan_create(st, "nometa", meta, len, &err);
    TAP_INT_EQ(rc, 0, "create over an existing directory without _meta.json");

    /* _meta.json as a dangling symlink counts as existing. */
    t_mkdir(t_path("%s/linked", root));
    if (symlink("/nonexistent", t_path("%s/linked/_meta.json", root)) == -1)
        t_bail("symlink");
    rc = ac_store_chan_create(st, "linked", meta, len, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "CHANNEL_EXISTS") == 0,
           "a _meta.json symlink is never replaced");
    free(meta);

    names = NULL;
    rc = ac_store_channels(st, &names, &n, &err);
    TAP_OK(rc == 0 && n == 5, "chan_names lists 5 channels (got %zu)", n);
    if (rc == 0 && n == 5) {
        TAP_OK(strcmp(names[0], "demo") == 0 && strcmp(names[1], "nometa") == 0 &&
               strcmp(names[2], "odd name") == 0 && strcmp(names[3], "say\"hi\"") == 0 &&
               strcmp(names[4], "\xc3\xbcn\xc3\xaf") == 0,
               "sorted bytewise, without hidden, symlinked or meta-less directories");
    }
    ac_names_free(names, n);
}

static void test_invalid_names(void)
{
    static const struct { const char *name; const char *why; } cases[] = {
        { "", "path traversal blocked" },
        { ".", "path traversal blocked" },
        { "..", "path traversal blocked" },
        { "a/b", "path traversal blocked" },
        { "a\\b", "path traversal blocked" },
        { "a:b", "path traversal blocked" },
        { "../etc", "path traversal blocked" },
        { ".x", "reserved prefix blocked" },
        { "_x", "reserved prefix blocked" },
        { "_seq.lock", "reserved prefix blocked" },
        { "a\tb", "control character blocked" },
        { "a\nb", "control character blocked" },
        { "\x7f", "control character blocked" },
        { "\x1b[31m", "control character blocked" },
        { "caf\xe9", "invalid UTF-8 blocked" },
    };
    char longname[301];
    size_t i, len;
    char *meta = meta_for("x", &len);
    int before = t_count(root, "", "");

    for (i = 0; i < COUNT(cases); i++) {
        struct ac_err err = AC_ERR_INIT, err2 = AC_ERR_INIT;
        struct ac_chan *ch = NULL;
        int rc1 = ac_store_chan_open(st, cases[i].name, &ch, &err);
        int rc2 = ac_store_chan_create(st, cases[i].name, meta, len, &err2);
        TAP_OK(rc1 == -1 && rc2 == -1 && err.code && strcmp(err.code, "CHANNEL_INVALID_NAME") == 0 &&
               err2.code && strcmp(err2.code, "CHANNEL_INVALID_NAME") == 0 && err.exit_code == 1,
               "name %zu: open and create refuse it (CHANNEL_INVALID_NAME)", i);
        TAP_OK(strncmp(err.msg, t_path("invalid channel name (%s): '", cases[i].why),
                       strlen(cases[i].why) + 25) == 0 && strchr(err.msg, '\n') == NULL,
               "name %zu: one-line message \"%s\"", i, err.msg);
    }
    {
        struct ac_err err = AC_ERR_INIT;
        TAP_OK(ac_channel_name_check("a/b", &err) == -1 &&
               strcmp(err.msg, "invalid channel name (path traversal blocked): 'a/b'") == 0,
               "format.md message for 'a/b'");
        TAP_OK(ac_channel_name_check("_x", &err) == -1 &&
               strcmp(err.msg, "invalid channel name (reserved prefix blocked): '_x'") == 0,
               "format.md message for '_x'");
        TAP_OK(ac_channel_name_check("a\nb", &err) == -1 && strstr(err.msg, "'a\\nb'"),
               "control characters are shown escaped");
    }
    memset(longname, 'n', 300);
    longname[300] = '\0';
    {
        struct ac_err err = AC_ERR_INIT;
        struct ac_chan *ch = NULL;
        TAP_OK(ac_store_chan_open(st, longname, &ch, &err) == -1 &&
               strcmp(err.code, "CHANNEL_INVALID_NAME") == 0, "a 300-byte name is refused");
        longname[255] = '\0';
        TAP_OK(ac_channel_name_check(longname, &err) == 0, "a 255-byte name is allowed");
        longname[256 - 1] = 'n';
        longname[256] = '\0';
        TAP_OK(ac_channel_name_check(longname, &err) == -1, "a 256-byte name is refused");
    }
    TAP_INT_EQ(t_count(root, "", ""), before, "no directory was created for any invalid name");
    free(meta);
}

static void test_marker_names(void)
{
    static const struct { const char *name; int ok; } cases[] = {
        { "task-7.md", 1 }, { "task-abc_1.md", 1 }, { "task-x.md", 1 },
        { "task-.md", 0 }, { "notes.md", 0 }, { "task-7.CLAIMED-bob.md", 0 },
        { "task-7.txt", 0 }, { "../task-7.md", 0 }, { "_task-7.md", 0 }, { "task-7", 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        struct ac_err err = AC_ERR_INIT;
        int rc = ac_marker_name_check(cases[i].name, &err);
        TAP_OK(cases[i].ok ? rc == 0 : rc == -1 && strcmp(err.code, "CLAIM_INVALID_NAME") == 0,
               "marker name %s is %s", cases[i].name, cases[i].ok ? "valid" : "refused");
    }
}

/* ---- posting ---- */

static void test_post(void)
{
    struct ac_chan *ch = open_chan("demo");
    struct ac_post_result res;
    struct ac_post_req req;
    struct ac_err err = AC_ERR_INIT;
    struct ac_msg_fields f;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/demo", root);
    char *text, *want, ts[64] = "", *p;
    size_t len, wlen;
    uint64_t seq;

    seq = post_full(ch, "Alice", "bob", "Hello: World/Test", "hi\n\n  \n", &res);
    TAP_INT_EQ(seq, 1, "first post is #1");
    TAP_STR_EQ(res.name, "0001-alice-hello-world-test.md", "file name %%04d-<from>-<title>.md");
    text = t_read(t_path("%s/%s", dir, res.name), &len);
    p = text ? strstr(text, "\nts: ") : NULL;
    if (p)
        sscanf(p + 5, "%63[^\n]", ts);
    TAP_OK(strlen(ts) == 25 && ts[4] == '-' && ts[10] == 'T' && (ts[19] == '+' || ts[19] == '-'),
           "ts is local time with offset, seconds precision (%s)", ts);
    memset(&f, 0, sizeof f);
    f.seq = 1;
    f.from = "Alice";
    f.to = "bob";
    f.channel = "demo";
    f.ts = ts;
    f.status = "discussion";
    f.title = "Hello: World/Test";
    f.body = "hi\n\n  \n";
    f.body_len = strlen(f.body);
    want = ac_msg_compose(&f, &wlen);
    TAP_OK(text && want && len == wlen && memcmp(text, want, len) == 0,
           "the file is exactly the composed message");
    free(text);
    free(want);

    TAP_INT_EQ(post(ch, "Bob Smith", "all", ""), 2, "second post is #2");
    TAP_OK(t_exists(t_path("%s/0002-bob-smith-msg.md", dir)), "empty title slugs to msg");

    memset(&req, 0, sizeof req);
    req.from = "carol";
    req.to = "";
    req.title = "re";
    req.status = "";
    req.body = "";
    req.reply_to = "1";
    TAP_OK(ac_chan_msg_post(ch, &req, &res, &err) == 0 && res.seq == 3, "third post is #3");
    text = t_read(t_path("%s/0003-carol-re.md", dir), NULL);
    TAP_OK(text && strstr(text, "\nto: all\nreply_to: 1\nchannel: demo\n") &&
           strlen(text) > 5 && strcmp(text + strlen(text) - 5, "---\n\n") == 0,
           "to \"\" is written as all, reply_to follows to, empty body ends ---\\n\\n");
    free(text);

    text = t_read(t_path("%s/.seqhigh", dir), NULL);
    TAP_STR_EQ(text, "3", ".seqhigh records 3");
    free(text);
    TAP_OK(t_count_temps(dir) == 0 && t_count(dir, ".seqres-", "") == 0 &&
           !t_exists(t_path("%s/_seq.lock", dir)), "no temp, reservation or lock left");

    /* Deleted seqs never come back (.seqhigh). */
    unlink(t_path("%s/0003-carol-re.md", dir));
    TAP_INT_EQ(post(ch, "alice", "all", "after delete"), 4, "after deleting #3 the next is #4");
    unlink(t_path("%s/0001-alice-hello-world-test.md", dir));
    unlink(t_path("%s/0002-bob-smith-msg.md", dir));
    unlink(t_path("%s/0004-alice-after-delete.md", dir));
    TAP_INT_EQ(post(ch, "alice", "all", "empty channel"), 5, "after deleting all, the next is #5");

    /* The disk wins when it is higher: a hand-made 12-short.md. */
    t_write(t_path("%s/12-short.md", dir), "no frontmatter\n");
    TAP_INT_EQ(post_full(ch, "alice", "all", "after hand", "x", &res), 13,
               "a hand-made 12-short.md makes the next post #13");
    TAP_STR_EQ(res.name, "0013-alice-after-hand.md", "and it is named 0013-...");

    /* A reservation left by a crash only burns that seq. */
    t_write(t_path("%s/.seqres-14", dir), "");
    TAP_INT_EQ(post(ch, "alice", "all", "burnt"), 15, "a leftover .seqres-14 burns #14");
    TAP_OK(t_exists(t_path("%s/.seqres-14", dir)), "the foreign reservation is left for fsck");
    unlink(t_path("%s/.seqres-14", dir));

    /* Publication never overwrites: a directory squatting on the name. */
    t_mkdir(t_path("%s/0016-carol-t.md", dir));
    TAP_INT_EQ(post_full(ch, "carol", "all", "t", "x", &res), 17,
               "a name that is taken moves the post to the next seq");
    TAP_STR_EQ(res.name, "0017-carol-t.md", "published as 0017-carol-t.md");
    rmdir(t_path("%s/0016-carol-t.md", dir));

    /* Slugs are cut to 40 characters. */
    post_full(ch, "A Very Long Sender Name That Goes On And On", "all",
              "Ünïcødé 日本語 title", "x", &res);
    TAP_STR_EQ(res.name, "0018-a-very-long-sender-name-that-goes-on-and-n-c-d-title.md",
               "sender slug cut at 40, title slug of format.md 3.3");
    ac_chan_close(ch);
}

/* Several processes posting at once never share a seq. */
static void test_concurrent_posts(void)
{
    enum { PROCS = 3, EACH = 15 };
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/race", root);
    struct ac_listing l;
    struct ac_chan *ch;
    pid_t pids[PROCS];
    int i, ok = 1;
    size_t k;
    char *high;

    create_chan("race");
    fflush(stdout);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            struct ac_err err = AC_ERR_INIT;
            struct ac_store *s2 = ac_store_open_fs(root, &err);
            struct ac_chan *c2 = NULL;
            int j, bad = 0;
            char from[16];
            if (!s2 || ac_store_chan_open(s2, "race", &c2, &err) == -1)
                _exit(2);
            st = s2;
            snprintf(from, sizeof from, "p%d", i);
            for (j = 0; j < EACH; j++)
                if (post(c2, from, "all", "race") == 0)
                    bad = 1;
            ac_chan_close(c2);
            ac_store_close(s2);
            _exit(bad);
        }
    }
    for (i = 0; i < PROCS; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ok = 0;
    }
    TAP_OK(ok, "%d processes posted %d messages each", PROCS, EACH);
    ch = open_chan("race");
    list(ch, -1, 0, &l);
    for (k = 0; k < l.n; k++)
        if (l.v[k].seq != k + 1)
            ok = 0;
    TAP_OK(ok && l.n == PROCS * EACH, "seqs are exactly 1..%d (got %zu files)", PROCS * EACH, l.n);
    ac_listing_free(&l);
    high = t_read(t_path("%s/.seqhigh", dir), NULL);
    TAP_STR_EQ(high, "45", ".seqhigh is 45");
    free(high);
    TAP_OK(t_count_temps(dir) == 0 && t_count(dir, ".seqres-", "") == 0 &&
           !t_exists(t_path("%s/_seq.lock", dir)), "nothing left behind by the race");
    ac_chan_close(ch);
}

/* ---- listing ---- */

static void test_numeric_order(void)
{
    struct ac_chan *ch;
    struct ac_listing l;
    struct ac_post_result res;
    static const char *const names[] = {
        "10002-a-x.md", "9998-a-x.md", "10000-a-x.md", "9999-a-x.md", "10001-a-x.md",
    };
    size_t i;

    create_chan("big");
    for (i = 0; i < COUNT(names); i++)
        hand_msg("big", names[i], "a", "all");
    ch = open_chan("big");
    list(ch, -1, 0, &l);
    TAP_STR_EQ(listing_seqs(&l), "9998,9999,10000,10001,10002", "numeric order past 9999");
    TAP_OK(l.max_seq == 10002 && l.count == 5 && l.last_name &&
           strcmp(l.last_name, "10002-a-x.md") == 0, "max_seq, count and last_name");
    ac_listing_free(&l);
    TAP_INT_EQ(post_full(ch, "bob", "all", "t", "x", &res), 10003, "the next post is #10003");
    TAP_STR_EQ(res.name, "10003-bob-t.md", "five digits after 9999");
    list(ch, 9999, 0, &l);
    TAP_STR_EQ(listing_seqs(&l), "10000,10001,10002,10003", "listing after 9999");
    TAP_INT_EQ(l.count, 6, "count still covers every message file");
    ac_listing_free(&l);
    ac_chan_close(ch);

    /* Same seq under several names: sorted by name; last_name is the
     * greatest name with the highest seq. Non-messages are ignored; like
     * Python's glob, a directory or symlink with a message name counts. */
    create_chan("dup");
    hand_msg("dup", "5-a.md", "a", "all");
    hand_msg("dup", "0005-b.md", "a", "all");
    hand_msg("dup", "05-c.md", "a", "all");
    hand_msg("dup", "0006.md", "a", "all");
    hand_msg("dup", "notes.md", "a", "all");
    hand_msg("dup", "\xc2\xb2-sup.md", "a", "all");
    hand_msg("dup", "7-x.txt", "a", "all");
    hand_msg("dup", ".8-hidden.md", "a", "all");
    t_mkdir(chan_path("dup", "9-dir.md"));
    if (symlink("5-a.md", chan_path("dup", "10-link.md")) == -1)
        t_bail("symlink");
    hand_msg("dup", "\xd9\xa3-arabic.md", "a", "all");
    ch = open_chan("dup");
    list(ch, -1, 0, &l);
    TAP_STR_EQ(listing_names(&l),
               "\xd9\xa3-arabic.md 0005-b.md 05-c.md 5-a.md 9-dir.md 10-link.md",
               "only message names, by (seq, name)");
    TAP_OK(l.max_seq == 10 && l.count == 6 && l.last_name &&
           strcmp(l.last_name, "10-link.md") == 0,
           "max_seq 10, count 6, last_name 10-link.md");
    ac_listing_free(&l);
    ac_chan_close(ch);
}

static void test_parse_name(void)
{
    static const struct { const char *name; int ok; uint64_t seq; } cases[] = {
        { "0001-alice-hello.md", 1, 1 },
        { "12-short.md", 1, 12 },
        { "10000-a-x.md", 1, 10000 },
        { "0-zero.md", 1, 0 },
        { "1-.md", 1, 1 },
        { "1-a-b-c.md", 1, 1 },
        { "\xd9\xa0\xd9\xa3-arabic.md", 1, 3 },
        { "\xef\xbc\x91\xef\xbc\x92-fullwidth.md", 1, 12 },
        { "1\xd9\xa2-mixed.md", 1, 12 },
        { "\xf0\x9d\x9f\x8f-math.md", 1, 1 },
        /* The largest 63-bit seqs are messages on both the ASCII fast path
         * and the Unicode path (fullwidth spelling below). */
        { "9223372036854775807-max.md", 1, UINT64_C(9223372036854775807) },
        { "9223372036854775800-x.md", 1, UINT64_C(9223372036854775800) },
        { "922337203685477579-x.md", 1, UINT64_C(922337203685477579) },
        { "\xef\xbc\x99" "223372036854775807-fullwidth.md", 1, UINT64_C(9223372036854775807) },
        /* Beyond 2^63 - 1: -1, a message name with a seq we cannot handle. */
        { "9223372036854775808-x.md", -1, 0 },
        { "99999999999999999999999-x.md", -1, 0 },
        { "\xef\xbc\x99" "99999999999999999999-fullwidth.md", -1, 0 },
        { "99999999999999999999a-x.md", 0, 0 },
        { "0006.md", 0, 0 },
        { "notes.md", 0, 0 },
        { "\xc2\xb2-x.md", 0, 0 },
        { "1\xc2\xb2-x.md", 0, 0 },
        { "-1-x.md", 0, 0 },
        { "-x.md", 0, 0 },
        { "1a-x.md", 0, 0 },
        { " 1-x.md", 0, 0 },
        { "+1-x.md", 0, 0 },
        { "1_0-x.md", 0, 0 },
        { "1-x.txt", 0, 0 },
        { "1-x.MD", 0, 0 },
        { "1-x.md.tmp", 0, 0 },
        { ".0001-x.md.abcdefgh.tmp", 0, 0 },
        { "1-x", 0, 0 },
        { "", 0, 0 },
        { "\xff-x.md", 0, 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        uint64_t seq = 4242;
        int rc = ac_scan_parse_name(cases[i].name, &seq);
        if (cases[i].ok == 1)
            TAP_OK(rc == 1 && seq == cases[i].seq, "parse_name case %zu is message #%llu", i,
                   (unsigned long long)cases[i].seq);
        else if (cases[i].ok == -1)
            TAP_INT_EQ(rc, -1, "parse_name case %zu has a seq beyond 2^63 - 1", i);
        else
            TAP_INT_EQ(rc, 0, "parse_name case %zu is not a message", i);
    }
}

/* ---- inbox ---- */

static void test_inbox(void)
{
    struct ac_chan *ch;
    struct ac_inbox in;
    struct ac_err err = AC_ERR_INIT;
    size_t i;
    int rc, fd;

    create_chan("inbox");
    ch = open_chan("inbox");
    post(ch, "alice", "bob", "one");               /* 1 */
    post(ch, "alice", "all", "two");               /* 2 */
    post(ch, "bob", "all", "three");               /* 3: bob's own */
    post(ch, "alice", "carol", "four");            /* 4 */
    post(ch, "alice", "[bob, dave]", "five");      /* 5 */
    post(ch, "carol", "alice bob", "six");         /* 6: one name */
    t_write(chan_path("inbox", "7-note.md"), "no frontmatter, no newline");
    post(ch, "alice", "Bob", "eight");             /* 8: case */

    rc = ac_inbox_fetch(ch, "bob", 0, 0, &in, &err);
    TAP_OK(rc == 0, "fetch for bob");
    TAP_STR_EQ(inbox_seqs(&in), "1,2,5,7", "relevant to bob");
    TAP_OK(in.max_seq == 8 && in.count == 8 && in.nskipped == 0, "max_seq 8 and count 8 for bob");
    for (i = 0; i < in.n; i++) {
        if (in.v[i].seq == 1)
            TAP_OK(in.v[i].fm.present && in.v[i].incomplete == 0 &&
                   strcmp(in.v[i].name, "0001-alice-one.md") == 0 &&
                   strstr(in.v[i].text, "\n---\nbody\n"), "message #1 read and parsed");
        if (in.v[i].seq == 7)
            TAP_OK(!in.v[i].fm.present && in.v[i].incomplete == 1,
                   "hand-made #7: no frontmatter, not newline-terminated");
    }
    ac_inbox_free(&in);

    rc = ac_inbox_fetch(ch, "bob", 2, 0, &in, &err);
    TAP_STR_EQ(inbox_seqs(&in), "5,7", "relevant to bob after #2");
    ac_inbox_free(&in);
    rc = ac_inbox_fetch(ch, "carol", 0, 0, &in, &err);
    TAP_STR_EQ(inbox_seqs(&in), "2,3,4,7", "relevant to carol (her own #6 excluded)");
    ac_inbox_free(&in);
    rc = ac_inbox_fetch(ch, "alice bob", 0, 0, &in, &err);
    TAP_STR_EQ(inbox_seqs(&in), "2,3,6,7", "relevant to 'alice bob'");
    ac_inbox_free(&in);
    rc = ac_inbox_fetch(ch, "bob", 0, AC_INBOX_ALL, &in, &err);
    TAP_STR_EQ(inbox_seqs(&in), "1,2,3,4,5,6,7,8", "AC_INBOX_ALL shows everything");
    ac_inbox_free(&in);
    rc = ac_inbox_fetch(ch, "bob", 8, 0, &in, &err);
    TAP_OK(rc == 0 && in.n == 0 && in.max_seq == 8 && in.count == 8,
           "nothing above #8, but max_seq is still 8");
    ac_inbox_free(&in);
    rc = ac_inbox_fetch(ch, "bob", 99, AC_INBOX_NO_STAMP, &in, &err);
    TAP_OK(rc == 0 && in.n == 0 && in.max_seq == 8, "a cursor above the last message");
    ac_inbox_free(&in);
    rc = ac_inbox_last(ch, 3, &in, &err);
    TAP_STR_EQ(inbox_seqs(&in), "6,7,8", "ac_inbox_last(3)");
    ac_inbox_free(&in);
    rc = ac_inbox_last(ch, 100, &in, &err);
    TAP_INT_EQ(in.n, 8, "ac_inbox_last(100) gives all 8");
    ac_inbox_free(&in);
    /* One seq, any recipient: the file(s) of that seq only. */
    rc = ac_inbox_seq(ch, 4, &in, &err);
    TAP_OK(rc == 0 && in.n == 1 && in.v[0].seq == 4 && in.max_seq == 8 && in.count == 8 &&
           strcmp(in.v[0].name, "0004-alice-four.md") == 0, "ac_inbox_seq(4): carol's #4, for anyone");
    ac_inbox_free(&in);
    rc = ac_inbox_seq(ch, 7, &in, &err);
    TAP_OK(rc == 0 && in.n == 1 && !in.v[0].fm.present, "ac_inbox_seq(7): the hand-made file");
    ac_inbox_free(&in);
    rc = ac_inbox_seq(ch, 99, &in, &err);
    TAP_OK(rc == 0 && in.n == 0 && in.max_seq == 8, "ac_inbox_seq(99): none, max_seq 8");
    ac_inbox_free(&in);
    rc = ac_inbox_seq(ch, 0, &in, &err);
    TAP_OK(rc == 0 && in.n == 0, "ac_inbox_seq(0): none");
    ac_inbox_free(&in);
    t_write(chan_path("inbox", "0002-zed-dup.md"), "---\nfrom: zed\n---\nx\n");
    rc = ac_inbox_seq(ch, 2, &in, &err);
    TAP_OK(rc == 0 && in.n == 2 && in.v[0].seq == 2 && in.v[1].seq == 2,
           "ac_inbox_seq(2): both files a foreign writer gave seq 2");
    ac_inbox_free(&in);
    unlink(chan_path("inbox", "0002-zed-dup.md"));

    /* A file above the 16 MiB cap is shown by its first 64 KiB (cut after
     * the last full line) plus a notice, not fatal and not skipped. */
    fd = open(chan_path("inbox", "9-huge.md"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd == -1 || write(fd, "---\nfrom: alice\nto: bob\ntitle: huge\n---\n", 40) != 40 ||
        ftruncate(fd, (off_t)AC_MESSAGE_CAP + 1) == -1)
        t_bail("sparse file");
    close(fd);
    rc = ac_inbox_fetch(ch, "bob", 8, 0, &in, &err);
    TAP_OK(rc == 0 && in.n == 1 && in.nskipped == 0 && in.max_seq == 9 &&
           in.v[0].truncated == (uint64_t)AC_MESSAGE_CAP + 1 && in.v[0].fm.present &&
           strstr(in.v[0].text, "[agent-chat: message truncated for display: 16777217 bytes"),
           "an oversized message is shown truncated with its frontmatter");
    ac_inbox_free(&in);
    unlink(chan_path("inbox", "9-huge.md"));

    /* CRLF and invalid bytes are read as Python's read_text() view; the
     * Python reader meets the bad byte before the end of its first 8 KiB,
     * so the file has no frontmatter for it: no sender, for everyone. */
    t_write(chan_path("inbox", "10-crlf.md"), "---\r\nfrom: zed\r\nto: carol\r\n---\r\nbad \xff byte\r\n");
    rc = ac_inbox_fetch(ch, "bob", 9, 0, &in, &err);
    TAP_OK(rc == 0 && in.n == 1 && !in.v[0].fm.present && in.v[0].fm.body_off == 0 &&
           strcmp(in.v[0].text, "---\nfrom: zed\nto: carol\n---\nbad \xef\xbf\xbd byte\n") == 0 &&
           in.v[0].decode_error &&
           strcmp(in.v[0].decode_error,
                  "'utf-8' codec can't decode byte 0xff in position 36: invalid start byte") == 0,
           "a CRLF file with an invalid byte is normalised, has no frontmatter and is relevant");
    ac_inbox_free(&in);
    ac_chan_close(ch);
}

/* ---- cursors ---- */

static void test_cursors(void)
{
    struct ac_chan *ch = open_chan("inbox");
    struct ac_err err = AC_ERR_INIT;
    char cdir[1024];
    snprintf(cdir, sizeof cdir, "%s/inbox/.cursors", root);
    char bobf[1024];
    snprintf(bobf, sizeof bobf, "%s/inbox/.cursors/bob.txt", root);
    static const struct { const char *text, *shown; int64_t want; } cases[] = {
        { "7", "7", 7 }, { "  2 \n", "  2 \\n", 2 }, { "", "", 0 }, { "garbage", "garbage", 0 },
        { "1_0", "1_0", 10 }, { "\xd9\xa3", "Arabic-Indic 3", 3 }, { "3.5", "3.5", 0 },
        { "\n", "\\n", 0 }, { "0x10", "0x10", 0 }, { "-3", "-3", -3 },
    };
    struct stat s1, s2;
    char *got;
    size_t i;

    TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", NULL), 0, "a missing cursor reads as 0");
    TAP_INT_EQ(ac_chan_cursor_set(ch, "bob", 5, &err), 0, "set bob's cursor to 5");
    got = t_read(bobf, NULL);
    TAP_STR_EQ(got, "5", ".cursors/bob.txt holds \"5\" without newline");
    free(got);
    TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", NULL), 5, "read it back");
    stat(bobf, &s1);
    ac_chan_cursor_set(ch, "bob", 5, &err);
    stat(bobf, &s2);
    TAP_OK(s1.st_ino == s2.st_ino, "setting the same value does not rewrite the file");
    ac_chan_cursor_set(ch, "bob", 6, &err);
    stat(bobf, &s2);
    TAP_OK(s1.st_ino != s2.st_ino, "a new value is published atomically (new inode)");
    TAP_INT_EQ(t_count_temps(cdir), 0, "no temp left in .cursors");

    TAP_INT_EQ(ac_chan_cursor_get(ch, "Bob", NULL), 0, "Bob and bob do not share a cursor");
    ac_chan_cursor_set(ch, "Claude_1", 9, &err);
    TAP_INT_EQ(ac_chan_cursor_get(ch, "claude-1", NULL), 0, "Claude_1 and claude-1 do not share one");
    TAP_INT_EQ(ac_chan_cursor_get(ch, "Claude_1", NULL), 9, "Claude_1 reads its own");
    TAP_OK(!t_exists(t_path("%s/claude-1.txt", cdir)), "not stored as .cursors/claude-1.txt");
    TAP_INT_EQ(t_count(cdir, "claude-1.", ".txt"), 1, "but as claude-1.<hash>.txt (cursor.h)");
    ac_chan_cursor_set(ch, "!!!", 1, &err);
    TAP_OK(!t_exists(t_path("%s/msg.txt", cdir)), "an agent that slugs to nothing does not use msg.txt");
    TAP_INT_EQ(t_count(cdir, "msg.", ".txt"), 1, "but msg.<hash>.txt");

    for (i = 0; i < COUNT(cases); i++) {
        t_write(bobf, cases[i].text);
        TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", NULL), cases[i].want, "cursor file \"%s\"",
                   cases[i].shown);
    }

    /* Symlinks are never followed. */
    t_write(t_path("%s/outside.txt", tmp), "4");
    unlink(bobf);
    if (symlink(t_path("%s/outside.txt", tmp), bobf) == -1)
        t_bail("symlink");
    TAP_INT_EQ(ac_chan_cursor_get(ch, "bob", NULL), 0, "a symlinked cursor file reads as 0");
    unlink(bobf);
    t_rm_rf(cdir);
    t_mkdir(t_path("%s/elsewhere", tmp));
    if (symlink(t_path("%s/elsewhere", tmp), cdir) == -1)
        t_bail("symlink");
    memset(&err, 0, sizeof err);
    TAP_OK(ac_chan_cursor_set(ch, "bob", 3, &err) == -1 && err.code &&
           strcmp(err.code, "IO_ERROR") == 0, "a symlinked .cursors is refused (IO_ERROR)");
    TAP_INT_EQ(t_count(t_path("%s/elsewhere", tmp), "", ""), 0,
               "nothing was written through the symlink");
    unlink(cdir);
    ac_chan_close(ch);
}

/* ---- scan stamp ---- */

static void test_stamp(void)
{
    struct ac_chan *ch;
    struct ac_listing l;
    struct ac_post_result res;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/stamp", root);
    int i, raced = 0, first_from_post;
    char name[64];

    create_chan("stamp");
    if (fsetxattr(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "user.ac-probe", "1", 1, 0) == -1 &&
        (errno == ENOTSUP || errno == EOPNOTSUPP)) {
        TAP_OK(1, "scan stamp # SKIP no user xattrs on this file system");
        return;
    }
    ch = open_chan("stamp");
    post(ch, "alice", "all", "a");
    post(ch, "alice", "all", "b");
    post_full(ch, "alice", "all", "c", "x", &res);

    /* Right after a post the stamp may already be there (fine-grained
     * timestamps); otherwise the first listing writes it once the coarse
     * clock has moved past the directory's mtime. */
    list(ch, 3, 1, &l);
    first_from_post = l.from_stamp;
    printf("# first listing after the post %s\n", first_from_post ? "came from the post's stamp"
                                                                     : "was a full listing");
    TAP_OK(l.n == 0 && l.max_seq == 3 && l.count == 3, "nothing above #3");
    ac_listing_free(&l);
    sleep_ms(30);
    list(ch, 3, 1, &l);
    if (!l.from_stamp) {          /* the previous listing was too early to stamp */
        ac_listing_free(&l);
        list(ch, 3, 1, &l);
    }
    TAP_OK(l.from_stamp && l.n == 0 && l.max_seq == 3 && l.count == 3 && l.last_name &&
           strcmp(l.last_name, res.name) == 0, "a later listing is answered by the stamp");
    ac_listing_free(&l);

    list(ch, 1, 1, &l);
    TAP_OK(!l.from_stamp && strcmp(listing_seqs(&l), "2,3") == 0,
           "a stamp is not used when messages are above `after`");
    ac_listing_free(&l);
    list(ch, 3, 0, &l);
    TAP_OK(!l.from_stamp && l.max_seq == 3, "use_stamp = 0 always lists");
    ac_listing_free(&l);

    /* A post invalidates (or rewrites) the stamp: #4 is seen at once. */
    post(ch, "bob", "all", "d");
    list(ch, 3, 1, &l);
    TAP_OK(strcmp(listing_seqs(&l), "4") == 0 && l.max_seq == 4 && l.count == 4,
           "the post right after a stamped listing is seen");
    ac_listing_free(&l);

    /* A hand-made file invalidates the stamp. */
    sleep_ms(30);
    list(ch, 4, 1, &l);
    ac_listing_free(&l);
    list(ch, 4, 1, &l);
    TAP_OK(l.from_stamp && l.max_seq == 4, "stamp valid for #4");
    ac_listing_free(&l);
    hand_msg("stamp", "5-hand.md", "carol", "all");
    list(ch, 4, 1, &l);
    TAP_OK(!l.from_stamp && strcmp(listing_seqs(&l), "5") == 0 && l.max_seq == 5 && l.count == 5,
           "after a hand-made file the stamp is invalid and the listing sees #5");
    ac_listing_free(&l);

    /* A deletion invalidates it too. */
    sleep_ms(30);
    list(ch, 5, 1, &l);
    ac_listing_free(&l);
    unlink(chan_path("stamp", "5-hand.md"));
    list(ch, 5, 1, &l);
    TAP_OK(!l.from_stamp && l.max_seq == 4 && l.count == 4, "after a deletion max_seq is 4 again");
    ac_listing_free(&l);

    /* The racy case: a file created right after a stamping listing. */
    for (i = 0; i < 40; i++) {
        uint64_t before;
        list(ch, INT64_MAX - 1, 1, &l);
        before = l.max_seq;
        ac_listing_free(&l);
        snprintf(name, sizeof name, "%d-race.md", 6 + i);
        hand_msg("stamp", name, "x", "all");
        list(ch, (int64_t)before, 1, &l);
        if (l.n != 1 || l.max_seq != (uint64_t)(6 + i))
            raced++;
        ac_listing_free(&l);
    }
    TAP_INT_EQ(raced, 0, "a file made right after a stamping listing is always seen (40 tries)");

    /* The next post counts every file, whatever the stamp says. */
    TAP_INT_EQ(post(ch, "alice", "all", "last"), 46, "the next post after #45 is #46");
    ac_chan_close(ch);
}

/* ---- fault injection on a post ----
 * The rules of AGENT_CHAT_FAULT are parsed once per process, so each
 * faulted post runs in a child that re-executes this binary with
 * `--post-child ROOT CHANNEL`; the parent inspects the channel. */

static int post_child(char **argv)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_store *s2 = ac_store_open_fs(argv[2], &err);
    struct ac_chan *c2 = NULL;
    struct ac_post_req req;
    struct ac_post_result res;
    int rc;

    if (!s2 || ac_store_chan_open(s2, argv[3], &c2, &err) == -1)
        return 2;
    memset(&req, 0, sizeof req);
    req.from = "f";
    req.to = "all";
    req.title = "fault";
    req.status = "";
    req.body = "x";
    req.body_len = 1;
    rc = ac_chan_msg_post(c2, &req, &res, &err) == 0 ? 0
         : err.sys_errno == EIO ? 5 : err.sys_errno == ENOSPC ? 28 : 1;
    ac_chan_close(c2);
    ac_store_close(s2);
    return rc;
}

static int run_post_child(const char *chan, const char *fault, const char *log)
{
    int status = -1;
    pid_t pid;
    pid = t_fork();
    if (pid == 0) {
        setenv("AGENT_CHAT_FAULT", fault, 1);
        if (log)
            setenv("AGENT_CHAT_FAULT_LOG", log, 1);
        execl("/proc/self/exe", "test_store", "--post-child", root, chan, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return status;
}

/* Number of message files and the highest seq, by a fresh listing. */
static size_t count_msgs(struct ac_chan *ch, uint64_t *max, int *dups)
{
    struct ac_listing l;
    size_t i, n;
    list(ch, -1, 0, &l);
    *dups = 0;
    for (i = 1; i < l.n; i++)
        if (l.v[i].seq == l.v[i - 1].seq)
            (*dups)++;
    *max = l.max_seq;
    n = l.count;
    ac_listing_free(&l);
    return n;
}

static void test_post_faults(void)
{
    static const struct { const char *fault; int want_exit; int published; } cases[] = {
        { "store.msg_post", 5, 0 },       /* the store wrapper's, every backend's */
        { "seq.lock", 5, 0 },
        { "post.seqhigh.write", 5, 0 },
        { "post.seqhigh.fsync", 5, 0 },
        { "post.seqhigh.publish", 5, 0 },
        { "post.message.write", 5, 0 },
        { "post.message.fsync", 5, 0 },
        { "post.message.publish", 5, 0 },
        { "post.message.publish:enospc", 28, 0 },
        /* After publication the post reports the error, the message stays. */
        { "post.dirsync", 5, 1 },
        { "post.unlock", 5, 1 },
        { "unrelated.point", 0, 1 },
    };
    char dir[1024], log[1024];
    struct ac_chan *ch;
    size_t i, n, before;
    uint64_t max, prev_max;
    int dups, status;
    char *text;

    snprintf(dir, sizeof dir, "%s/faults", root);
    snprintf(log, sizeof log, "%s/fault.log", tmp);
    create_chan("faults");
    ch = open_chan("faults");

    status = run_post_child("faults", "", log);
    text = t_read(log, NULL);
    TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a post in a child process");
    TAP_STR_EQ(text, "store.msg_post\nseq.lock\nseq.locked\npost.seqhigh.write\npost.seqhigh.fsync\npost.seqhigh.publish\n"
               "post.message.write\npost.message.fsync\npost.message.publish\npost.dirsync\n"
               "post.unlock\n", "the fault points of a post, in order");
    free(text);
    unlink(log);

    for (i = 0; i < COUNT(cases); i++) {
        before = count_msgs(ch, &prev_max, &dups);
        status = run_post_child("faults", cases[i].fault, NULL);
        n = count_msgs(ch, &max, &dups);
        TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == cases[i].want_exit,
               "fault %s: the post reports errno %d (status 0x%x)", cases[i].fault,
               cases[i].want_exit, (unsigned)status);
        TAP_OK(n == before + (size_t)cases[i].published && (!cases[i].published || max > prev_max),
               "fault %s: %s", cases[i].fault,
               cases[i].published ? "the message is published" : "no message is published");
        TAP_OK(t_count_temps(dir) == 0 && t_count(dir, ".seqres-", "") == 0 &&
               !t_exists(t_path("%s/_seq.lock", dir)),
               "fault %s: no temp, reservation or lock left", cases[i].fault);
        TAP_OK(post(ch, "alice", "all", "after") > max && count_msgs(ch, &max, &dups) == n + 1 &&
               dups == 0, "fault %s: the next post succeeds with a new seq", cases[i].fault);
    }

    /* A crash (SIGKILL) right before publication: no message, and the lock
     * it leaves becomes stale after 30 s; then posting works again and the
     * crashed seq is never reused. */
    before = count_msgs(ch, &prev_max, &dups);
    status = run_post_child("faults", "post.message.publish:crash", NULL);
    TAP_OK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "crash: the poster was killed");
    TAP_OK(count_msgs(ch, &max, &dups) == before && max == prev_max,
           "crash: no message, not even a partial one");
    TAP_OK(t_exists(t_path("%s/_seq.lock", dir)) && t_count(dir, ".seqres-", "") == 1,
           "crash: the lock and the reservation are left behind");
    {
        /* The message was written into its reservation file, which is
         * dot-named so no reader takes it for a message. */
        char *resv = t_read(t_path("%s/.seqres-%llu", dir, (unsigned long long)prev_max + 1), NULL);
        TAP_OK(t_count_temps(dir) == 0 && resv && strncmp(resv, "---\nseq: ", 9) == 0,
               "crash: the unpublished message is only in the dot-named reservation");
        free(resv);
    }
    {
        struct timespec ts[2];
        clock_gettime(CLOCK_REALTIME, &ts[0]);
        ts[0].tv_sec -= 60;
        ts[1] = ts[0];
        utimensat(AT_FDCWD, t_path("%s/_seq.lock", dir), ts, 0);
    }
    TAP_OK(post(ch, "alice", "all", "after crash") == prev_max + 2,
           "crash: once the lock is stale the next post skips the crashed seq");
    TAP_INT_EQ(count_msgs(ch, &max, &dups), before + 1, "crash: exactly one more message");
    ac_chan_close(ch);
}

/* ---- legacy marker claim ---- */

static int claim(struct ac_chan *ch, const char *marker, const char *agent, char *dest,
                 struct ac_err *err)
{
    memset(err, 0, sizeof *err);
    dest[0] = '\0';
    return ac_chan_marker_claim(ch, marker, agent, dest, 256, err);
}

static void test_claim(void)
{
    struct ac_chan *ch;
    struct ac_err err;
    char dest[256];
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/claims", root);
    int rc;

    create_chan("claims");
    ch = open_chan("claims");
    t_write(t_path("%s/task-7.md", dir), "do it\n");
    rc = claim(ch, "task-7.md", "Carol", dest, &err);
    TAP_OK(rc == 0 && strcmp(dest, "task-7.CLAIMED-carol.md") == 0, "Carol claims task-7.md");
    TAP_OK(!t_exists(t_path("%s/task-7.md", dir)) && t_exists(t_path("%s/%s", dir, dest)),
           "the marker was renamed");

    rc = claim(ch, "task-7.md", "dave", dest, &err);
    TAP_OK(rc == -1 && err.code && strcmp(err.code, "CLAIM_LOST") == 0 && err.exit_code == 3,
           "claiming a missing marker: CLAIM_LOST, exit 3");
    TAP_STR_EQ(err.msg, "task 'task-7.md' already claimed or missing (lost the race)",
               "CLAIM_LOST message");

    t_write(t_path("%s/task-7.md", dir), "again\n");
    rc = claim(ch, "task-7.md", "carol", dest, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "CLAIM_LOST") == 0 && err.exit_code == 3 &&
           t_exists(t_path("%s/task-7.md", dir)), "carol's destination exists: CLAIM_LOST");
    rc = claim(ch, "task-7.md", "dave", dest, &err);
    TAP_OK(rc == 0 && strcmp(dest, "task-7.CLAIMED-dave.md") == 0, "dave can still claim it");

    t_mkdir(t_path("%s/task-8.md", dir));
    rc = claim(ch, "task-8.md", "dave", dest, &err);
    TAP_OK(rc == -1 && err.exit_code == 3, "a directory is not a marker");
    if (symlink("task-7.CLAIMED-dave.md", t_path("%s/task-9.md", dir)) == -1)
        t_bail("symlink");
    rc = claim(ch, "task-9.md", "dave", dest, &err);
    TAP_OK(rc == -1 && err.exit_code == 3 && t_exists(t_path("%s/task-9.md", dir)),
           "a symlink is not a marker");
    TAP_OK(!t_exists(t_path("%s/_seq.lock", dir)), "the seq lock is released after every claim");
    ac_chan_close(ch);
}

/* ---- retention ---- */

static void test_trim(void)
{
    struct ac_chan *ch;
    struct ac_trim_result res;
    struct ac_err err = AC_ERR_INIT;
    struct ac_post_result pr;
    int i, rc;

    create_chan("trim");
    ch = open_chan("trim");
    rc = ac_chan_msg_trim(ch, 1, &res, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "TRIM_KEEPS_NEWEST") == 0 && err.exit_code == 1,
           "an empty channel: TRIM_KEEPS_NEWEST, exit 1");
    for (i = 0; i < 4; i++)
        post_full(ch, "alice", "bob", "m", "x\n", &pr);
    hand_msg("trim", "2-dup.md", "carol", "bob");          /* the Python tool's duplicate seq */
    t_mkdir(chan_path("trim", ".acks"));
    t_mkdir(chan_path("trim", ".acks/2"));
    t_write(chan_path("trim", ".acks/2/bob.json"), "{}\n");
    t_mkdir(chan_path("trim", ".acks/4"));
    t_write(chan_path("trim", ".acks/4/bob.json"), "{}\n");
    t_mkdir(chan_path("trim", ".acks/2x"));                  /* not a seq: stays */
    unlink(chan_path("trim", ".seqhigh"));

    err = (struct ac_err)AC_ERR_INIT;
    rc = ac_chan_msg_trim(ch, 4, &res, &err);
    TAP_OK(rc == -1 && strcmp(err.code, "TRIM_KEEPS_NEWEST") == 0, "through the newest: refused");
    TAP_STR_EQ(err.msg, "trim keeps the newest message of 'trim' (#4): trim through #3 at most",
               "TRIM_KEEPS_NEWEST message");
    TAP_OK(t_exists(chan_path("trim", "0001-alice-m.md")) && !t_exists(chan_path("trim", ".seqhigh")),
           "a refused trim changes nothing");

    err = (struct ac_err)AC_ERR_INIT;
    rc = ac_chan_msg_trim_check(ch, 3, &res, &err);
    TAP_OK(rc == 0 && res.messages == 4 && res.acks == 0 && res.newest == 4 &&
           t_exists(chan_path("trim", "0001-alice-m.md")), "the check alone counts and removes nothing");

    rc = ac_chan_msg_trim(ch, 3, &res, &err);
    TAP_OK(rc == 0 && res.messages == 4 && res.acks == 1 && res.newest == 4,
           "trim through #3: 4 message files (one seq twice) and 1 ack");
    TAP_OK(!t_exists(chan_path("trim", "0001-alice-m.md")) && !t_exists(chan_path("trim", "2-dup.md")) &&
           !t_exists(chan_path("trim", "0003-alice-m.md")) && t_exists(chan_path("trim", "0004-alice-m.md")),
           "the messages through #3 are gone, #4 stays");
    TAP_OK(!t_exists(chan_path("trim", ".acks/2")) && t_exists(chan_path("trim", ".acks/4/bob.json")) &&
           t_exists(chan_path("trim", ".acks/2x")), "the acks of #2 are gone; #4's and a stray entry stay");
    {
        char *high = t_read(chan_path("trim", ".seqhigh"), NULL);
        TAP_OK(high && atoi(high) == 4, "the high-water mark was raised to the newest seq");
        free(high);
    }
    TAP_INT_EQ(post_full(ch, "alice", "bob", "m", "x\n", &pr), 5, "the next post is #5");
    ac_chan_close(ch);
}

/* ---- change notification ---- */

static void test_watch(void)
{
    struct ac_chan *ch = open_chan("inbox");
    struct ac_watch *w = ac_chan_watch_open(ch, AC_WATCH_MESSAGES, 0);
    if (!w) {
        TAP_OK(1, "watch # SKIP inotify unavailable");
        ac_chan_close(ch);
        return;
    }
    TAP_INT_EQ(ac_chan_watch_wait(ch, w, 20 * 1000000LL), 0, "nothing happens: timeout");
    /* Any change may wake the watch (dnotify has no names); callers rescan. */
    hand_msg("inbox", "11-new.md", "alice", "bob");
    TAP_INT_EQ(ac_chan_watch_wait(ch, w, 1000 * 1000000LL), 1, "a new message file wakes the watch");
    ac_chan_watch_close(ch, w);
    ac_chan_close(ch);
}

int main(int argc, char **argv)
{
    struct ac_err err = AC_ERR_INIT;

    if (argc == 4 && strcmp(argv[1], "--post-child") == 0) {
        setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
        return post_child(argv);
    }

    setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
    unsetenv("AGENT_CHAT_FAULT");
    umask(022);
    tmp = t_mkdtemp("store");
    root = strdup(t_path("%s/root", tmp));
    st = ac_store_open_fs(root, &err);
    if (!st || !root)
        t_bail("ac_store_open_fs: %s", err.msg);

    test_channels();
    test_invalid_names();
    test_marker_names();
    test_post();
    test_concurrent_posts();
    test_numeric_order();
    test_parse_name();
    test_inbox();
    test_cursors();
    test_stamp();
    test_post_faults();
    test_claim();
    test_trim();
    test_watch();

    ac_store_close(st);
    t_rm_rf(tmp);
    TAP_OK(!t_exists(tmp), "temporary directory removed");
    free(root);
    free(tmp);
    return tap_done();
}
