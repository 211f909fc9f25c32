/*
 * test_frontmatter.c - the message file format of docs/format.md 3.3 and the
 * relevance rule of docs/format.md 4 (frontmatter.h): the tolerant reader, the
 * recipient rules and the byte-exact writer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/frontmatter.h"
#include "tap.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- reading ---- */

struct kv {
    const char *key, *value;
};

struct parse_case {
    const char *name;
    const char *text;
    int present;
    size_t npairs;           /* duplicates included */
    struct kv get[4];        /* ac_fm_get results (last one wins) */
    const char *absent;      /* a key that must not be found */
};

static const struct parse_case parse_cases[] = {
    { "empty file", "", 0, 0, { { NULL, NULL } }, "from" },
    { "no frontmatter", "hello\nfrom: alice\n", 0, 0, { { NULL, NULL } }, "from" },
    { "only a fence", "---", 0, 0, { { NULL, NULL } }, "from" },
    { "fence and newline", "---\n", 0, 0, { { NULL, NULL } }, "from" },
    { "unclosed", "---\nfrom: alice\nto: bob\nbody\n", 0, 0, { { NULL, NULL } }, "from" },
    { "unclosed ('----' is not a fence)", "---\nfrom: alice\n----\n", 0, 0,
      { { NULL, NULL } }, "from" },
    { "first line indented", " ---\nfrom: alice\n---\n", 0, 0, { { NULL, NULL } }, "from" },
    { "minimal", "---\nfrom: alice\n---\nbody\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, "to" },
    { "empty block", "---\n---\n", 1, 0, { { NULL, NULL } }, "from" },
    { "'--- extra text' opens", "--- extra text\nfrom: alice\n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "'----' opens", "----\nfrom: alice\n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "closing fence '   ---   '", "---\nfrom: alice\n   ---   \nbody\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "closing fence with tab and NBSP", "---\nfrom: alice\n\t---\xc2\xa0\nbody\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "closing fence at end of file", "---\nfrom: alice\n---", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "lines without ':' skipped", "---\njust text\nfrom: alice\n\n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, "just text" },
    { "split at the first ':'", "---\ntitle: key: value: with colon\n---\n", 1, 1,
      { { "title", "key: value: with colon" }, { NULL, NULL } }, "key" },
    { "duplicate keys, last wins", "---\nfrom: alice\nto: x\nfrom: bob\n---\n", 1, 3,
      { { "from", "bob" }, { "to", "x" }, { NULL, NULL } }, NULL },
    { "empty values", "---\ntitle:\nstatus:   \nto: \n---\n", 1, 3,
      { { "title", "" }, { "status", "" }, { "to", "" }, { NULL, NULL } }, NULL },
    { "key and value stripped", "---\n  from  :   alice  \n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, "  from  " },
    { "Unicode whitespace stripped", "---\nfrom:\xe3\x80\x80" "alice\xc2\xa0\n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "empty key", "---\n: value\n---\n", 1, 1,
      { { "", "value" }, { NULL, NULL } }, NULL },
    { "keys are case-sensitive", "---\nFrom: alice\n---\n", 1, 1,
      { { "From", "alice" }, { NULL, NULL } }, "from" },
    { "body lines are not frontmatter", "---\nfrom: alice\n---\nfrom: mallory\n---\n", 1, 1,
      { { "from", "alice" }, { NULL, NULL } }, NULL },
    { "full message", "---\nseq: 4\nfrom: bob\nto: all\nreply_to: 1\nchannel: demo\n"
      "ts: 2026-11-30T05:01:23+00:00\nstatus: discussion\ntitle: Hello: world/Test\n---\nhi\n",
      1, 8, { { "seq", "4" }, { "ts", "2026-11-30T05:01:23+00:00" },
              { "title", "Hello: world/Test" }, { "reply_to", "1" } }, NULL },
};

static void test_parse(void)
{
    size_t i, k;
    for (i = 0; i < COUNT(parse_cases); i++) {
        const struct parse_case *c = &parse_cases[i];
        struct ac_fm fm;
        int rc = ac_fm_parse(c->text, strlen(c->text), &fm);
        TAP_OK(rc == 0 && fm.present == c->present && fm.npairs == c->npairs,
               "parse %s: present %d (want %d), %zu pairs (want %zu)", c->name,
               fm.present, c->present, fm.npairs, c->npairs);
        for (k = 0; k < COUNT(c->get) && c->get[k].key; k++) {
            const char *v = NULL;
            size_t vlen = 0;
            int found = ac_fm_get(&fm, c->get[k].key, &v, &vlen);
            TAP_OK(found && vlen == strlen(c->get[k].value) &&
                   memcmp(v, c->get[k].value, vlen) == 0,
                   "parse %s: %s = \"%s\" (got \"%.*s\")", c->name, c->get[k].key,
                   c->get[k].value, found ? (int)vlen : 6, found ? v : "(none)");
        }
        if (c->absent) {
            const char *v;
            size_t vlen;
            TAP_OK(!ac_fm_get(&fm, c->absent, &v, &vlen), "parse %s: no key \"%s\"",
                   c->name, c->absent);
        }
        ac_fm_free(&fm);
    }
}

/* ---- relevance ---- */

struct rel_case {
    const char *what;
    const char *head;        /* frontmatter lines (NULL: no frontmatter) */
    const char *agent;
    int want;
};

static const struct rel_case rel_cases[] = {
    { "to: all", "from: alice\nto: all\n", "bob", 1 },
    { "to: (empty)", "from: alice\nto:\n", "bob", 1 },
    { "to: []", "from: alice\nto: []\n", "bob", 1 },
    { "to: *", "from: alice\nto: *\n", "bob", 1 },
    { "to: ' all ' (stripped)", "from: alice\nto:  all \n", "bob", 1 },
    { "missing to", "from: alice\n", "bob", 1 },
    { "no frontmatter at all", NULL, "bob", 1 },
    { "missing from, to bob", "to: bob\n", "bob", 1 },
    { "to: bob", "from: alice\nto: bob\n", "bob", 1 },
    { "to: bob, for carol", "from: alice\nto: bob\n", "carol", 0 },
    { "to: 'alice,' for alice", "from: carol\nto: alice,\n", "alice", 1 },
    { "to: 'alice,' for bob", "from: carol\nto: alice,\n", "bob", 0 },
    { "to: [bob, dave] for bob", "from: alice\nto: [bob, dave]\n", "bob", 1 },
    { "to: [bob, dave] for dave", "from: alice\nto: [bob, dave]\n", "dave", 1 },
    { "to: [bob, dave] for carol", "from: alice\nto: [bob, dave]\n", "carol", 0 },
    { "to: 'alice bob' for bob (one name)", "from: carol\nto: alice bob\n", "bob", 0 },
    { "to: 'alice bob' for alice", "from: carol\nto: alice bob\n", "alice", 0 },
    { "to: 'alice bob' for 'alice bob'", "from: carol\nto: alice bob\n", "alice bob", 1 },
    { "to: Bob for bob (case)", "from: alice\nto: Bob\n", "bob", 0 },
    { "to: bob for Bob (case)", "from: alice\nto: bob\n", "Bob", 0 },
    { "to: ALL is a name", "from: alice\nto: ALL\n", "bob", 0 },
    { "to: [all] is a name", "from: alice\nto: [all]\n", "bob", 0 },
    { "to: 'all, bob' for bob", "from: alice\nto: all, bob\n", "bob", 1 },
    { "to: 'all, bob' for carol", "from: alice\nto: all, bob\n", "carol", 0 },
    /* a list that names nobody is a broadcast (Python: an empty to_list) */
    { "to: '[ ]' names nobody: for everyone", "from: alice\nto: [ ]\n", "bob", 1 },
    { "to: ',' names nobody: for everyone", "from: alice\nto: ,\n", "bob", 1 },
    { "to: ' , [' names nobody: for everyone", "from: alice\nto: [ , ]]\n", "carol", 1 },
    { "to: ',' is still not for its sender", "from: bob\nto: ,\n", "bob", 0 },
    { "to: 'bob,,dave'", "from: alice\nto: bob,,dave\n", "dave", 1 },
    { "to: ',bob'", "from: alice\nto: ,bob\n", "bob", 1 },
    { "to: '[[bob]]'", "from: alice\nto: [[bob]]\n", "bob", 1 },
    { "to: '[ bob ]'", "from: alice\nto: [ bob ]\n", "bob", 1 },
    { "to: Unicode-spaced entry", "from: alice\nto: [\xe3\x80\x80" "bob\xe3\x80\x80]\n", "bob", 1 },
    { "to: 'b[o]b' keeps inner brackets", "from: alice\nto: b[o]b\n", "bob", 0 },
    { "to: bo (prefix) for bob", "from: alice\nto: bo\n", "bob", 0 },
    { "to: bobby for bob", "from: alice\nto: bobby\n", "bob", 0 },
    { "own broadcast", "from: bob\nto: all\n", "bob", 0 },
    { "own message to self", "from: bob\nto: bob\n", "bob", 0 },
    { "own message, from stripped", "from:  bob \nto: all\n", "bob", 0 },
    { "from Bob is not bob", "from: Bob\nto: all\n", "bob", 1 },
    { "duplicate to, last wins (bob)", "from: alice\nto: carol\nto: bob\n", "bob", 1 },
    { "duplicate to, last wins (carol)", "from: alice\nto: carol\nto: bob\n", "carol", 0 },
    { "duplicate from, last wins", "from: bob\nfrom: alice\nto: all\n", "bob", 1 },
};

static void test_relevance(void)
{
    size_t i;
    for (i = 0; i < COUNT(rel_cases); i++) {
        const struct rel_case *c = &rel_cases[i];
        char text[512];
        struct ac_fm fm;
        if (c->head)
            snprintf(text, sizeof text, "---\n%s---\nbody\n", c->head);
        else
            snprintf(text, sizeof text, "just a note\n");
        ac_fm_parse(text, strlen(text), &fm);
        TAP_INT_EQ(ac_fm_is_relevant(&fm, c->agent, strlen(c->agent)), c->want,
                   "relevant: %s", c->what);
        ac_fm_free(&fm);
    }
}

static void test_broadcast_forms(void)
{
    static const struct { const char *to; int want; } cases[] = {
        { "", 1 }, { "all", 1 }, { "[]", 1 }, { "*", 1 },
        { "ALL", 0 }, { "All", 0 }, { "[ ]", 0 }, { "**", 0 }, { "[all]", 0 },
        { "al", 0 }, { "alll", 0 }, { "bob", 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++)
        TAP_INT_EQ(ac_fm_to_is_broadcast(cases[i].to, strlen(cases[i].to)), cases[i].want,
                   "broadcast form \"%s\"", cases[i].to);
}

/* ---- writing ---- */

#define TS "2026-11-30T05:01:23+00:00"

struct compose_case {
    const char *name;
    struct ac_msg_fields f;
    const char *want;
    size_t want_len;         /* 0: strlen(want) */
};

#define FIELDS(seq, from, to, reply, chan, ts, status, title, body) \
    { seq, from, to, reply, chan, ts, status, title, body, sizeof(body) - 1, NULL, 0 }

static const struct compose_case compose_cases[] = {
    { "format.md example",
      FIELDS(4, "bob", "all", NULL, "demo", TS, "discussion", "Hello: world/Test", "hi\n"),
      "---\nseq: 4\nfrom: bob\nto: all\nchannel: demo\nts: " TS "\nstatus: discussion\n"
      "title: Hello: world/Test\n---\nhi\n", 0 },
    { "reply_to after to",
      FIELDS(5, "alice", "bob", "1", "demo", TS, "", "re", "ok"),
      "---\nseq: 5\nfrom: alice\nto: bob\nreply_to: 1\nchannel: demo\nts: " TS "\nstatus: \n"
      "title: re\n---\nok\n", 0 },
    { "negative reply_to written as given",
      FIELDS(6, "a", "b", "-3", "c", TS, "s", "t", "x"),
      "---\nseq: 6\nfrom: a\nto: b\nreply_to: -3\nchannel: c\nts: " TS "\nstatus: s\n"
      "title: t\n---\nx\n", 0 },
    { "to \"\" written as all",
      FIELDS(1, "a", "", NULL, "c", TS, "s", "t", "x"),
      "---\nseq: 1\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\nx\n", 0 },
    { "values not trimmed (' all ', '---')",
      FIELDS(2, "a", " all ", NULL, "c", TS, "s", "---", "x"),
      "---\nseq: 2\nfrom: a\nto:  all \nchannel: c\nts: " TS "\nstatus: s\ntitle: ---\n---\nx\n", 0 },
    { "empty title and status end in a space",
      FIELDS(3, "a", "all", NULL, "c", TS, "", "", "x"),
      "---\nseq: 3\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: \ntitle: \n---\nx\n", 0 },
    { "CR/LF runs in the title",
      FIELDS(7, "a", "all", NULL, "c", TS, "s", "line one\nline two\r\nline three\r", "x"),
      "---\nseq: 7\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\n"
      "title: line one line two line three \n---\nx\n", 0 },
    { "CR/LF runs in every value",
      FIELDS(8, "bob\n\ncarol", "x\r\ny", NULL, "c\rd", "t\ns", "st\n\r\n\rat", "\nlead", "x"),
      "---\nseq: 8\nfrom: bob carol\nto: x y\nchannel: c d\nts: t s\nstatus: st at\n"
      "title:  lead\n---\nx\n", 0 },
    { "frontmatter injection is defused",
      FIELDS(9, "a", "all", NULL, "c", TS, "s", "t\n---\nfrom: mallory", "x"),
      "---\nseq: 9\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\n"
      "title: t --- from: mallory\n---\nx\n", 0 },
    { "empty body",
      FIELDS(10, "a", "all", NULL, "c", TS, "s", "t", ""),
      "---\nseq: 10\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n\n", 0 },
    { "whitespace-only body (Python rstrip)",
      FIELDS(11, "a", "all", NULL, "c", TS, "s", "t", "  \n\t\r\n\xe3\x80\x80\xc2\xa0\x0b"),
      "---\nseq: 11\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n\n", 0 },
    { "leading spaces and inner blank lines kept",
      FIELDS(12, "a", "all", NULL, "c", TS, "s", "t", "  a\n\n\nb  \n\n"),
      "---\nseq: 12\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n"
      "  a\n\n\nb\n", 0 },
    { "CRLF inside the body kept, trailing stripped",
      FIELDS(13, "a", "all", NULL, "c", TS, "s", "t", "a\r\nb\r\n"),
      "---\nseq: 13\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n"
      "a\r\nb\n", 0 },
    { "trailing invalid byte A0 is not whitespace",
      FIELDS(14, "a", "all", NULL, "c", TS, "s", "t", "x\xa0"),
      "---\nseq: 14\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n"
      "x\xa0\n", 0 },
    { "NUL inside the body kept",
      FIELDS(15, "a", "all", NULL, "c", TS, "s", "t", "a\0b"),
      "---\nseq: 15\nfrom: a\nto: all\nchannel: c\nts: " TS "\nstatus: s\ntitle: t\n---\n"
      "a\0b\n", sizeof("---\nseq: 15\nfrom: a\nto: all\nchannel: c\nts: " TS
                       "\nstatus: s\ntitle: t\n---\na\0b\n") - 1 },
    { "seq past 9999, UTF-8 values",
      FIELDS(10000, "zo\xc3\xab", "\xe6\x9d\x8e", NULL, "\xc3\xbcn\xc3\xaf", TS, "s",
             "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80"),
      "---\nseq: 10000\nfrom: zo\xc3\xab\nto: \xe6\x9d\x8e\nchannel: \xc3\xbcn\xc3\xaf\nts: " TS
      "\nstatus: s\ntitle: \xe6\x97\xa5\xe6\x9c\xac\n---\n\xf0\x9f\x98\x80\n", 0 },
};

static void show_diff(const char *got, size_t glen, const char *want, size_t wlen)
{
    size_t i = 0;
    while (i < glen && i < wlen && got[i] == want[i])
        i++;
    printf("#   first difference at byte %zu (got %zu bytes, want %zu)\n", i, glen, wlen);
}

static void test_compose(void)
{
    size_t i;
    for (i = 0; i < COUNT(compose_cases); i++) {
        const struct compose_case *c = &compose_cases[i];
        size_t wlen = c->want_len ? c->want_len : strlen(c->want), len = 0;
        char *out = ac_msg_compose(&c->f, &len);
        int ok = out && len == wlen && memcmp(out, c->want, wlen) == 0 && out[len] == '\0';
        TAP_OK(ok, "compose %s", c->name);
        if (!ok && out)
            show_diff(out, len, c->want, wlen);
        free(out);
    }
}

/* A NULL `to` is also written as "all"; only body_len bytes of the body. */
static void test_compose_edges(void)
{
    struct ac_msg_fields f = FIELDS(1, "a", NULL, NULL, "c", TS, "s", "t", "");
    char *out;
    size_t len;

    out = ac_msg_compose(&f, &len);
    TAP_OK(out && strstr(out, "\nto: all\n"), "compose: NULL to is written as all");
    free(out);

    f.to = "all";
    f.body = "keep  and drop";
    f.body_len = 6;
    out = ac_msg_compose(&f, &len);
    TAP_OK(out && len >= 6 && memcmp(out + len - 6, "\nkeep\n", 6) == 0,
           "compose: only body_len bytes, then right-stripped");
    free(out);
}

/* What the writer writes, the reader reads back. */
static void test_roundtrip(void)
{
    struct ac_msg_fields f = FIELDS(42, "bob", "[alice, dave]", "41", "demo", TS, "question",
                                    "Hello: world\nagain", "body\n---\nfrom: x\n");
    struct ac_fm fm;
    char *out;
    size_t len, vlen;
    const char *v;

    out = ac_msg_compose(&f, &len);
    if (!out) {
        TAP_OK(0, "round trip: compose");
        return;
    }
    ac_fm_parse(out, len, &fm);
    TAP_INT_EQ(fm.present, 1, "round trip: frontmatter present");
    TAP_INT_EQ(fm.npairs, 8, "round trip: eight fields");
    TAP_OK(ac_fm_get(&fm, "title", &v, &vlen) && vlen == 18 &&
           memcmp(v, "Hello: world again", 18) == 0, "round trip: title");
    TAP_OK(ac_fm_get(&fm, "from", &v, &vlen) && vlen == 3 && memcmp(v, "bob", 3) == 0,
           "round trip: from comes from the frontmatter, not the body");
    TAP_OK(ac_fm_is_relevant(&fm, "dave", 4) && ac_fm_is_relevant(&fm, "alice", 5) &&
           !ac_fm_is_relevant(&fm, "bob", 3) && !ac_fm_is_relevant(&fm, "carol", 5),
           "round trip: relevance for alice, dave, bob, carol");
    ac_fm_free(&fm);
    free(out);
}

/* ---- extra fields (typed messages) ---- */

static const struct ac_fm_field typed[] = {
    { "type", "shutdown_request" }, { "request_id", "3f2a" }, { "role", "parent" }
};

/* Extras come after title, in order; without them nothing changes. */
static void test_compose_extra(void)
{
    struct ac_msg_fields f = FIELDS(4, "bob", "all", "2", "demo", TS, "discussion", "t", "hi\n");
    const char *plain = "---\nseq: 4\nfrom: bob\nto: all\nreply_to: 2\nchannel: demo\nts: " TS
                        "\nstatus: discussion\ntitle: t\n---\nhi\n";
    const char *want = "---\nseq: 4\nfrom: bob\nto: all\nreply_to: 2\nchannel: demo\nts: " TS
                       "\nstatus: discussion\ntitle: t\ntype: shutdown_request\nrequest_id: 3f2a\n"
                       "role: parent\n---\nhi\n";
    struct ac_fm fm;
    const char *v;
    size_t len, vlen;
    char *out;

    f.extra = typed;
    f.nextra = 0;
    out = ac_msg_compose(&f, &len);
    TAP_OK(out && len == strlen(plain) && memcmp(out, plain, len) == 0,
           "compose: an empty extra list changes no byte");
    free(out);
    f.nextra = COUNT(typed);
    out = ac_msg_compose(&f, &len);
    TAP_OK(out && len == strlen(want) && memcmp(out, want, len) == 0,
           "compose: extras after title, in the order given");
    if (!out)
        return;
    ac_fm_parse(out, len, &fm);
    TAP_INT_EQ(fm.npairs, 11, "extras: the reader sees eleven fields");
    TAP_OK(ac_fm_get(&fm, "request_id", &v, &vlen) && vlen == 4 && memcmp(v, "3f2a", 4) == 0,
           "extras: request_id reads back");
    TAP_OK(ac_fm_get(&fm, "title", &v, &vlen) && vlen == 1 && v[0] == 't',
           "extras: title is still the title");
    ac_fm_free(&fm);
    free(out);
}

struct extra_case {
    const char *name;
    const char *key, *value;
    const char *why;          /* NULL: accepted; else a substring of the reason */
};

static const struct extra_case extra_cases[] = {
    { "plain pair", "type", "plan_approval_request", NULL },
    { "empty value", "note", "", NULL },
    { "digits and underscore in the key", "x_2", "v", NULL },
    { "UTF-8 value", "label", "zo\xc3\xab \xe6\x97\xa5", NULL },
    { "inner spaces", "reason", "not yet, sorry", NULL },
    { "value '---'", "x", "---", NULL },
    { "upper-case key", "Type", "v", "must match" },
    { "key with '-'", "request-id", "v", "must match" },
    { "key starting with a digit", "1x", "v", "must match" },
    { "empty key", "", "v", "must match" },
    { "key '---'", "---", "v", "must match" },
    { "key with a newline", "a\nb", "v", "must match" },
    { "key of 65 bytes", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "v",
      "must match" },
    { "standard key title", "title", "v", "standard field" },
    { "standard key from", "from", "mallory", "standard field" },
    { "standard key reply_to", "reply_to", "1", "standard field" },
    { "LF in the value", "x", "a\n---\nfrom: mallory", "line break" },
    { "CR in the value", "x", "a\rb", "line break" },
    { "tab in the value", "x", "a\tb", "control" },
    { "DEL in the value", "x", "a\x7f", "control" },
    { "C1 control in the value", "x", "a\xc2\x85", "control" },
    { "invalid UTF-8", "x", "\xff", "UTF-8" },
    { "leading space", "x", " v", "whitespace" },
    { "trailing NBSP", "x", "v\xc2\xa0", "whitespace" },
};

static void test_extra_check(void)
{
    size_t i;
    char why[512];
    for (i = 0; i < COUNT(extra_cases); i++) {
        const struct extra_case *c = &extra_cases[i];
        struct ac_fm_field one = { c->key, c->value };
        int rc;
        why[0] = '\0';
        rc = ac_fm_extra_check(&one, 1, why, sizeof why);
        if (!c->why)
            TAP_OK(rc == 0, "extra check accepts %s (%s)", c->name, why);
        else
            TAP_OK(rc == -1 && strstr(why, c->why) && !strchr(why, '\n'),
                   "extra check refuses %s: %s", c->name, why);
    }
    {
        struct ac_fm_field two[2] = { { "type", "a" }, { "type", "b" } };
        struct ac_fm_field many[AC_FM_EXTRA_MAX + 1];
        char big[AC_FM_VALUE_MAX + 2];
        TAP_OK(ac_fm_extra_check(two, 2, why, sizeof why) == -1 && strstr(why, "twice"),
               "extra check refuses a key given twice");
        for (i = 0; i < COUNT(many); i++) {
            many[i].key = "k";
            many[i].value = "v";
        }
        TAP_OK(ac_fm_extra_check(many, COUNT(many), why, sizeof why) == -1 && strstr(why, "too many"),
               "extra check refuses more than %d pairs", AC_FM_EXTRA_MAX);
        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        two[0].value = big;
        TAP_OK(ac_fm_extra_check(two, 1, why, sizeof why) == -1 && strstr(why, "longer"),
               "extra check refuses a value over %d bytes", AC_FM_VALUE_MAX);
        big[AC_FM_VALUE_MAX] = '\0';
        TAP_OK(ac_fm_extra_check(two, 1, why, sizeof why) == 0,
               "extra check accepts a value of exactly %d bytes", AC_FM_VALUE_MAX);
        TAP_OK(ac_fm_extra_check(typed, COUNT(typed), why, sizeof why) == 0,
               "extra check accepts type, request_id and role together");
    }
}

int main(void)
{
    test_parse();
    test_relevance();
    test_broadcast_forms();
    test_compose();
    test_compose_edges();
    test_roundtrip();
    test_compose_extra();
    test_extra_check();
    return tap_done();
}
