/*
 * test_pathlock.c - path locks through pathlock.h (docs/format.md 2.2, 3.7, 3.9):
 * overlap, the argument rules, record parsing with the Python tool's
 * messages, the exact record bytes, the journal's shapes, and every
 * operation on a real channel (conflicts, expiry, recovery, the decisions
 * of recover-pending). Crashes at each durable step are exercised by
 * tests/functional/locks_spec.lua, which needs one process per crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/channel.h"
#include "agentchat/codec.h"
#include "agentchat/pathlock.h"
#include "agentchat/store.h"
#include "tap.h"
#include "tutil.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *tmp, *root;
static struct ac_store *st;

/* ------------------------------------------------------------ rules */

static const struct { const char *a, *b; int overlap; } overlaps[] = {
    { "a/b", "a/b", 1 },
    { "a/b", "a/bc", 0 },
    { "a/bc", "a/b", 0 },
    { "a/b", "a/b/c", 1 },
    { "a/b/c", "a/b", 1 },
    { "a", "a/b/c/d", 1 },
    { "src/lib", "src/libx", 0 },
    { "src/lib", "src/li", 0 },
    { "src", "src/lib/x.c", 1 },
    { ".", "anything", 1 },
    { "anything/deep", ".", 1 },
    { ".", ".", 1 },
    { "a", "b", 0 },
    { "ab", "a", 0 },
    { "a.c", "a", 0 },
    { "a-b", "a/b", 0 },
    { "\303\274/x", "\303\274", 1 },
};

static void test_overlap(void)
{
    size_t i;
    for (i = 0; i < COUNT(overlaps); i++)
        TAP_INT_EQ(ac_pathlock_overlaps(overlaps[i].a, overlaps[i].b), overlaps[i].overlap,
                   "overlap(%s, %s) = %d", overlaps[i].a, overlaps[i].b, overlaps[i].overlap);
}

static void test_owner(void)
{
    static const struct { const char *s; int ok; } cases[] = {
        { "alice", 1 }, { "a", 1 }, { "Claude_1", 1 }, { "claude-1", 1 }, { "a.b", 1 },
        { "9lives", 1 }, { "", 0 }, { "bad owner", 0 }, { " alice", 0 }, { "alice ", 0 },
        { "a/b", 0 }, { "_sys", 0 }, { ".dot", 0 }, { "-x", 0 }, { "zo\303\253", 0 },
        { "a\tb", 0 }, { "a:b", 0 }, { "a@b", 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        struct ac_err err = AC_ERR_INIT;
        int rc = ac_pathlock_check_owner(cases[i].s, "owner", &err);
        if (cases[i].ok)
            TAP_INT_EQ(rc, 0, "owner '%s' is safe", cases[i].s);
        else
            TAP_OK(rc == -1 && strcmp(err.code, "PATH_LOCK_INVALID_OWNER") == 0 &&
                   strcmp(err.msg, "owner must be a safe identity") == 0 && err.exit_code == 1,
                   "owner '%s' is refused", cases[i].s);
    }
    {
        struct ac_err err = AC_ERR_INIT;
        ac_pathlock_check_owner("bad actor", "actor", &err);
        TAP_STR_EQ(err.msg, "actor must be a safe identity", "recover-pending says actor");
    }
}

static void test_duration(void)
{
    static const struct { double s; long long us; const char *msg; } cases[] = {
        { 300.0, 300000000LL, NULL },
        { 0.25, 250000LL, NULL },
        { 1e-9, 0LL, NULL },                /* positive: timedelta rounds to 0 */
        { 0.0000005, 0LL, NULL },           /* half to even */
        { 0.0000015, 2LL, NULL },
        { 0.0, 0, "lock duration must be positive" },
        { -0.0, 0, "lock duration must be positive" },
        { -1.0, 0, "lock duration must be positive" },
        { 1e20, 0, "lock duration is outside the supported timestamp range" },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        struct ac_err err = AC_ERR_INIT;
        int64_t us = -1;
        int rc = ac_pathlock_check_duration(cases[i].s, &us, &err);
        if (!cases[i].msg)
            TAP_OK(rc == 0 && us == cases[i].us, "duration %g s = %lld us", cases[i].s, cases[i].us);
        else
            TAP_OK(rc == -1 && strcmp(err.code, "PATH_LOCK_INVALID_DURATION") == 0 &&
                   strcmp(err.msg, cases[i].msg) == 0, "duration %g refused: %s", cases[i].s,
                   cases[i].msg);
    }
    {
        struct ac_err e1 = AC_ERR_INIT, e2 = AC_ERR_INIT, e3 = AC_ERR_INIT;
        int64_t us;
        TAP_OK(ac_pathlock_check_duration(INFINITY, &us, &e1) == -1 &&
               strcmp(e1.msg, "lock duration must be positive") == 0, "duration inf refused");
        TAP_OK(ac_pathlock_check_duration(-INFINITY, &us, &e2) == -1, "duration -inf refused");
        TAP_OK(ac_pathlock_check_duration(NAN, &us, &e3) == -1 &&
               strcmp(e3.code, "PATH_LOCK_INVALID_DURATION") == 0, "duration nan refused");
    }
}

static void test_reason(void)
{
    static const struct { const char *s; const char *msg; } cases[] = {
        { "alice crashed", NULL },
        { "x", NULL },
        { "\303\274nicode reason", NULL },
        { "", "recovery reason must not be empty" },
        { "   ", "recovery reason must not be empty" },
        { "\t", "recovery reason must not be empty" },
        { "two\nlines", "recovery reason contains a forbidden control character" },
        { "tab\there", "recovery reason contains a forbidden control character" },
        { "del\177", "recovery reason contains a forbidden control character" },
        { "bad\377", "recovery reason contains a forbidden control character" },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++) {
        struct ac_err err = AC_ERR_INIT;
        int rc = ac_pathlock_check_reason(cases[i].s, &err);
        if (!cases[i].msg)
            TAP_INT_EQ(rc, 0, "reason %zu accepted", i);
        else
            TAP_OK(rc == -1 && strcmp(err.code, "PATH_LOCK_INVALID_REASON") == 0 &&
                   strcmp(err.msg, cases[i].msg) == 0, "reason %zu refused: %s", i, cases[i].msg);
    }
}

static void test_canonical(void)
{
    static const struct { const char *p; int ok; } cases[] = {
        { "z", 1 }, { "a/b", 1 }, { ".", 1 }, { "~/x", 1 }, { ".hidden/x", 1 },
        { "./z", 0 }, { "a//b", 0 }, { "a/", 0 }, { "/a", 0 }, { "a/./b", 0 }, { "a/../b", 0 },
        { "", 0 }, { "a\\b", 0 }, { "a:b", 0 }, { "./.", 0 },
    };
    size_t i;
    for (i = 0; i < COUNT(cases); i++)
        TAP_INT_EQ(ac_pathlock_path_canonical(cases[i].p), cases[i].ok,
                   "normalized_path '%s' canonical = %d", cases[i].p, cases[i].ok);
}

/* ------------------------------------------------------------ records */

#define REC_HEAD "{\n  \"channel\": \"cr\",\n  \"expires_at\": \"2099-01-01T00:05:00.000000+00:00\",\n" \
                 "  \"lock_id\": \"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\",\n" \
                 "  \"locked_at\": \"2030-01-01T00:00:00.000000+00:00\",\n  \"owner\": \"x\",\n"
#define REC_PATHS "  \"paths\": [\n    {\n      \"display_path\": \"z\",\n      \"kind\": \"file\",\n" \
                  "      \"normalized_path\": \"z\"\n    }\n  ],\n"
#define REC_TAIL "  \"previous_expires_at\": null,\n  \"previous_owner\": null,\n" \
                 "  \"recovery_reason\": null,\n  \"updated_at\": \"2030-01-01T00:00:00.000000+00:00\"\n}\n"
#define GOOD REC_HEAD REC_PATHS REC_TAIL
#define FNAME "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff.json"

#define TS "\"2030-01-01T00:00:00.000000+00:00\""
#define ONE_PATH "[{\"display_path\": \"z\", \"kind\": \"file\", \"normalized_path\": \"z\"}]"
/* A one-line record of lock f0.. with `expires`, `owner` and `paths`. */
#define FLAT(expires, owner, paths) "{\"channel\": \"cr\", \"expires_at\": " expires ", \"lock_id\": " \
    "\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\", \"locked_at\": " TS ", \"owner\": " owner ", \"paths\": " \
    paths ", \"updated_at\": " TS "}"

/* The Python tool's PathLockRecord checks, in its order (the first
 * problem is the error); code NULL is PATH_LOCK_INVALID_RECORD. */
static const struct { const char *name, *data, *code, *msg; } bad_records[] = {
    { "not json", "not json\n", NULL, "could not read lock record " FNAME
      ": Expecting value: line 1 column 1 (char 0)" },
    { "empty", "", NULL, "could not read lock record " FNAME ": Expecting value: line 1 column 1 (char 0)" },
    { "not utf-8", "{\"a\": \"\377\"}", NULL, "could not read lock record " FNAME
      ": 'utf-8' codec can't decode byte 0xff in position 7: invalid start byte" },
    { "a list", "[]", NULL, "lock record must be an object" },
    { "missing fields", "{\"lock_id\": \"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\", \"channel\": \"cr\"}", NULL,
      "lock record is missing required fields" },
    { "unknown field", "{\"channel\": \"cr\", \"expires_at\": 1, \"lock_id\": 1, \"locked_at\": 1, "
      "\"owner\": 1, \"paths\": 1, \"updated_at\": 1, \"note\": 1}", NULL, "lock record contains unknown fields" },
    { "aliases disagree", "{\"channel\": \"cr\", \"expires_at\": 1, \"lease_expires_at\": 2, \"lock_id\": 1, "
      "\"locked_at\": 1, \"owner\": 1, \"paths\": 1, \"updated_at\": 1}", NULL,
      "expires_at and lease_expires_at aliases disagree" },
    { "paths not a list", FLAT(TS, "\"x\"", "{}"), NULL, "lock paths must be an array" },
    { "path entry not an object", FLAT(TS, "\"x\"", "[\"z\"]"), NULL, "lock path must be an object" },
    { "path entry without kind", FLAT(TS, "\"x\"", "[{\"display_path\": \"z\", \"normalized_path\": \"z\"}]"),
      NULL, "lock path is missing required fields" },
    { "dot path", FLAT(TS, "\"x\"", "[{\"display_path\": \"./z\", \"kind\": \"file\", "
      "\"normalized_path\": \"./z\"}]"), NULL, "normalized_path is not workspace-relative" },
    { "absolute path", FLAT(TS, "\"x\"", "[{\"display_path\": \"/z\", \"kind\": \"file\", "
      "\"normalized_path\": \"/z\"}]"), NULL, "normalized_path is not workspace-relative" },
    { "empty display path", FLAT(TS, "\"x\"", "[{\"display_path\": \"\", \"kind\": \"file\", "
      "\"normalized_path\": \"z\"}]"), NULL, "display_path must be safe non-empty text" },
    { "bad kind", FLAT(TS, "\"x\"", "[{\"display_path\": \"z\", \"kind\": \"socket\", "
      "\"normalized_path\": \"z\"}]"), NULL, "path kind must be file or directory" },
    { "owner not a string", FLAT(TS, "5", ONE_PATH), "PATH_LOCK_INVALID_OWNER", "owner must be a safe identity" },
    { "no paths", FLAT(TS, "\"x\"", "[]"), NULL, "lock must contain at least one path" },
    { "naive expiry", FLAT("\"2099-01-01T00:05:00\"", "\"x\"", ONE_PATH), "PATH_LOCK_INVALID_TIMESTAMP",
      "expires_at must be an ISO-8601 string" },
    { "NaN expiry", FLAT("NaN", "\"x\"", ONE_PATH), "PATH_LOCK_INVALID_TIMESTAMP",
      "expires_at must be an ISO-8601 string" },
    { "partial recovery", REC_HEAD REC_PATHS
      "  \"previous_expires_at\": null,\n  \"previous_owner\": \"y\",\n"
      "  \"recovery_reason\": null,\n  \"updated_at\": " TS "\n}\n", NULL,
      "previous owner, expiry, and recovery reason must be recorded together" },
    { "id mismatch", "{\n  \"channel\": \"cr\",\n  \"expires_at\": \"2099-01-01T00:05:00+00:00\",\n"
      "  \"lock_id\": \"ffffffffffffffffffffffffffffffff\",\n  \"locked_at\": " TS ",\n  \"owner\": \"x\",\n"
      REC_PATHS REC_TAIL, NULL, "lock id does not match filename '" FNAME "'" },
};

static void test_parse(void)
{
    size_t i;
    struct ac_lockrec r;
    struct ac_err err = AC_ERR_INIT;
    char *bytes;
    size_t len;

    for (i = 0; i < COUNT(bad_records); i++) {
        struct ac_err e = AC_ERR_INIT;
        int rc = ac_lockrec_parse(bad_records[i].data, strlen(bad_records[i].data), FNAME, "cr",
                                  &r, &e);
        const char *code = bad_records[i].code ? bad_records[i].code : "PATH_LOCK_INVALID_RECORD";
        TAP_OK(rc == -1 && e.code && strcmp(e.code, code) == 0 &&
               strcmp(e.msg, bad_records[i].msg) == 0 && r.json == NULL,
               "record %s: %s", bad_records[i].name, bad_records[i].msg);
        if (rc == 0 || strcmp(e.msg, bad_records[i].msg) != 0)
            printf("#   got: %s\n", rc == 0 ? "(accepted)" : e.msg);
        if (rc == 0)
            ac_lockrec_free(&r);
    }
    {
        struct ac_err e = AC_ERR_INIT;
        TAP_OK(ac_lockrec_parse(GOOD, strlen(GOOD), FNAME, "elsewhere", &r, &e) == -1 &&
               strcmp(e.msg, "lock channel 'cr' does not match 'elsewhere'") == 0,
               "record of another channel: %s", e.msg);
    }

    /* A good record round-trips byte for byte. */
    TAP_OK(ac_lockrec_parse(GOOD, strlen(GOOD), FNAME, "cr", &r, &err) == 0, "good record parses");
    TAP_STR_EQ(r.owner, "x", "owner");
    TAP_STR_EQ(r.expires_at, "2099-01-01T00:05:00.000000+00:00", "expires_at");
    TAP_OK(r.npaths == 1 && strcmp(r.paths[0].normalized, "z") == 0 && !r.paths[0].is_dir,
           "paths");
    TAP_OK(r.previous_owner == NULL && r.recovery_reason == NULL, "nulls are NULL");
    bytes = ac_lockrec_encode(&r, &len);
    TAP_OK(bytes && len == strlen(GOOD) && memcmp(bytes, GOOD, len) == 0,
           "encode gives the Python tool's bytes (sorted keys, indent 2, newline)");
    free(bytes);
    TAP_OK(ac_lockrec_expired(&r, INT64_C(4070909099999999)) == 0 &&
           ac_lockrec_expired(&r, INT64_C(4070909100000000)) == 1,
           "expired exactly at expires_at");
    ac_lockrec_free(&r);

    /* Only the alias: valid; written back under the main name. */
    {
        static const char alias[] = "{\"channel\": \"cr\", \"lease_expires_at\": "
            "\"2099-01-01T00:05:00.000000+00:00\", \"lock_id\": \"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\", "
            "\"locked_at\": \"2030-01-01T00:00:00.000000+00:00\", \"owner\": \"x\", \"paths\": "
            "[{\"display_path\": \"z\", \"kind\": \"file\", \"normalized_path\": \"z\"}], "
            "\"previous_expires_at\": null, \"previous_owner\": null, \"recovery_reason\": null, "
            "\"updated_at\": \"2030-01-01T00:00:00.000000+00:00\"}";
        struct ac_err e = AC_ERR_INIT;
        TAP_OK(ac_lockrec_parse(alias, strlen(alias), FNAME, "cr", &r, &e) == 0 &&
               strcmp(r.expires_at, "2099-01-01T00:05:00.000000+00:00") == 0,
               "a record with only lease_expires_at is valid");
        bytes = ac_lockrec_encode(&r, &len);
        TAP_OK(bytes && len == strlen(GOOD) && memcmp(bytes, GOOD, len) == 0,
               "and is written back with expires_at");
        free(bytes);
        ac_lockrec_free(&r);
    }
    /* Non-ASCII stays UTF-8. */
    {
        static const char uni[] = "{\"channel\": \"cr\", \"expires_at\": \"2099-01-01T00:05:00+00:00\", "
            "\"lock_id\": \"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\", \"locked_at\": " TS ", \"owner\": \"x\", "
            "\"paths\": [{\"display_path\": \"\\u00fc/\\u0444\", \"kind\": \"directory\", "
            "\"normalized_path\": \"\\u00fc/\\u0444\"}], \"previous_expires_at\": \"2098-01-01T00:00:00+00:00\", "
            "\"previous_owner\": \"y\", \"recovery_reason\": \"r\", \"updated_at\": " TS "}";
        struct ac_err e = AC_ERR_INIT;
        TAP_OK(ac_lockrec_parse(uni, strlen(uni), FNAME, "cr", &r, &e) == 0 && r.paths[0].is_dir &&
               strcmp(r.previous_owner, "y") == 0, "a recovered record with non-ASCII paths");
        bytes = ac_lockrec_encode(&r, &len);
        TAP_OK(bytes && strstr(bytes, "\"normalized_path\": \"\303\274/\321\204\"") != NULL,
               "non-ASCII is written as UTF-8");
        free(bytes);
        ac_lockrec_free(&r);
    }
}

/* ------------------------------------------------------------ channels */

static struct ac_chan *make_chan(const char *name)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_chan *ch = NULL;
    size_t len;
    char *meta = ac_meta_compose(name, NULL, 0, "", "2026-11-30T05:01:22+00:00", &len);
    if (!meta || st->ops->chan_create(st, name, meta, len, &err) == -1)
        t_bail("chan_create %s: %s", name, err.msg);
    free(meta);
    if (st->ops->chan_open(st, name, &ch, &err) == -1)
        t_bail("chan_open %s: %s", name, err.msg);
    return ch;
}

static const char *chan_path(const char *name, const char *rel)
{
    return t_path("%s/%s/%s", root, name, rel);
}

/* Number of message files (audit messages) in a channel. */
static int messages(const char *name)
{
    return t_count(t_path("%s/%s", root, name), "0", ".md");
}

static int lock1(struct ac_chan *ch, const char *path, const char *owner, double lease,
                 struct ac_lockrec *rec, struct ac_err *err)
{
    const char *paths[1];
    paths[0] = path;
    return ac_pathlock_lock(ch, paths, 1, owner, lease, rec, err);
}

/* Write a record file by hand (expired or not). */
static void craft_record(const char *chan, const char *id, const char *owner, const char *path,
                         const char *expires)
{
    if (mkdir(chan_path(chan, "locks"), 0755) == -1 && errno != EEXIST)
        t_bail("mkdir locks");
    t_write(t_path("%s/%s/locks/%s.json", root, chan, id),
            t_path("{\n  \"channel\": \"%s\",\n  \"expires_at\": \"%s\",\n  \"lock_id\": \"%s\",\n"
                   "  \"locked_at\": \"2030-01-01T00:00:00.000000+00:00\",\n  \"owner\": \"%s\",\n"
                   "  \"paths\": [\n    {\n      \"display_path\": \"%s\",\n      \"kind\": \"file\",\n"
                   "      \"normalized_path\": \"%s\"\n    }\n  ],\n  \"previous_expires_at\": null,\n"
                   "  \"previous_owner\": null,\n  \"recovery_reason\": null,\n"
                   "  \"updated_at\": \"2030-01-01T00:00:00.000000+00:00\"\n}\n",
                   chan, expires, id, owner, path, path));
}

static void test_lock_ops(void)
{
    struct ac_chan *ch = make_chan("ops");
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec rec, rec2;
    struct ac_locklist hits;
    const char *two[2];
    char *text, id[64];

    /* Nothing is written for a refused request, not even the mutex file. */
    TAP_OK(lock1(ch, "../x", "alice", 300, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_PATH") == 0 &&
           !t_exists(chan_path("ops", ".path-locks.lock")) && !t_exists(chan_path("ops", "locks")),
           "refused path: nothing written");
    two[0] = "a/b";
    two[1] = "./a//b";
    TAP_OK(ac_pathlock_lock(ch, two, 2, "carol", 300, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_CONFLICT") == 0 &&
           strcmp(err.msg, "requested paths overlap within one lock request") == 0 &&
           !t_exists(chan_path("ops", ".path-locks.lock")), "overlap within a request: nothing written");

    t_mkdir(chan_path("ops", "src"));
    t_mkdir(chan_path("ops", "src/lib"));
    TAP_OK(lock1(ch, "src/lib", "alice", 300, &rec, &err) == 0, "lock src/lib (%s)", err.msg);
    TAP_OK(strlen(rec.lock_id) == 32 && rec.paths[0].is_dir &&
           strcmp(rec.paths[0].normalized, "src/lib") == 0, "a directory lock: kind directory");
    snprintf(id, sizeof id, "%s", rec.lock_id);
    text = t_read(t_path("%s/ops/locks/%s.json", root, id), NULL);
    TAP_OK(text && strstr(text, "\"kind\": \"directory\"") && text[strlen(text) - 1] == '\n',
           "the record is on disk");
    free(text);
    TAP_INT_EQ(messages("ops"), 1, "one audit message");
    TAP_OK(!t_exists(chan_path("ops", "locks/.path-lock-transaction.json")), "no journal left");
    TAP_INT_EQ(t_count_temps(chan_path("ops", "locks")), 0, "no temp file left");
    ac_lockrec_free(&rec);

    TAP_OK(lock1(ch, "src/lib/x.c", "bob", 300, &rec2, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_CONFLICT") == 0 &&
           strcmp(err.msg, "lock request overlaps an active lock") == 0, "conflict below");
    TAP_OK(lock1(ch, "src/lib", "alice", 300, &rec2, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_CONFLICT") == 0, "no re-entrancy for the owner");
    TAP_OK(lock1(ch, ".", "bob", 300, &rec2, &err) == -1, "'.' conflicts with everything");
    TAP_OK(lock1(ch, "src/libx", "bob", 300, &rec2, &err) == 0, "src/libx is free");

    two[0] = "src/other.c";
    two[1] = "src/lib/deep";
    TAP_OK(ac_pathlock_check(ch, two, 2, NULL, &hits, &err) == 0 && hits.n == 1 &&
           strcmp(hits.v[0].lock_id, id) == 0, "check finds the directory lock once");
    ac_locklist_free(&hits);
    TAP_OK(ac_pathlock_check(ch, two, 1, "bad owner", &hits, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_OWNER") == 0, "check validates the owner");
    two[0] = ".";
    TAP_OK(ac_pathlock_check(ch, two, 1, "alice", &hits, &err) == 0 && hits.n == 2 &&
           strcmp(hits.v[0].lock_id, hits.v[1].lock_id) < 0, "check '.': all, sorted by id");
    ac_locklist_free(&hits);

    /* unlock: by path (normalized), by id; owner and not-found errors. */
    TAP_OK(ac_pathlock_unlock(ch, "src/lib", "bob", NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_OWNER_MISMATCH") == 0 &&
           strcmp(err.msg, t_path("lock %s belongs to alice", id)) == 0, "unlock by another owner");
    TAP_OK(ac_pathlock_unlock(ch, "src", "alice", NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_NOT_FOUND") == 0 &&
           strcmp(err.msg, "lock record does not exist: src") == 0, "unlock of a parent: not found");
    TAP_OK(ac_pathlock_unlock(ch, "/abs", "alice", NULL, &err) == -1 &&
           strcmp(err.msg, "lock record does not exist: /abs") == 0, "an invalid target: not found");
    TAP_OK(ac_pathlock_unlock(ch, "a\nb", "alice", NULL, &err) == -1 &&
           strcmp(err.msg, "lock record does not exist: a\\nb") == 0,
           "a control character in a target stays on one line");
    TAP_OK(ac_pathlock_unlock(ch, "./src//lib/", "alice", &rec, &err) == 0 &&
           strcmp(rec.lock_id, id) == 0, "unlock by a path that normalizes to the lock's");
    ac_lockrec_free(&rec);
    TAP_OK(!t_exists(t_path("%s/ops/locks/%s.json", root, id)), "the record is gone");
    TAP_OK(ac_pathlock_unlock(ch, rec2.lock_id, "bob", NULL, &err) == 0, "unlock by id");
    TAP_INT_EQ(messages("ops"), 4, "four audit messages");
    ac_lockrec_free(&rec2);
    st->ops->chan_close(ch);
}

static void test_expiry(void)
{
    struct ac_chan *ch = make_chan("ex");
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec rec;
    char *before;

    craft_record("ex", "5a5b5c5d5e5f50515253545556575859", "carol", "old",
                 "2020-01-01T00:05:00.000000+00:00");
    craft_record("ex", "0a0b0c0d0e0f00010203040506070809", "dave", "live",
                 "2099-01-01T00:05:00.000000+00:00");
    TAP_OK(lock1(ch, "old/file", "erin", 300, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_RECOVERY_REQUIRED") == 0 &&
           strcmp(err.msg, "lock request overlaps an expired lock; recover it explicitly") == 0,
           "an expired lock still conflicts");
    TAP_OK(ac_pathlock_recover(ch, "live", "erin", "why", 60, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_NOT_STALE") == 0 &&
           strcmp(err.msg, "lock 0a0b0c0d0e0f00010203040506070809 is still active") == 0,
           "recover of an active lock");
    TAP_OK(ac_pathlock_recover(ch, "old", "erin", "", 60, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_REASON") == 0, "recover without a reason");
    TAP_OK(ac_pathlock_recover(ch, "old", "erin", "carol left", 0, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_DURATION") == 0, "recover with a zero lease");
    before = t_read(chan_path("ex", "locks/5a5b5c5d5e5f50515253545556575859.json"), NULL);
    TAP_OK(ac_pathlock_recover(ch, "5a5b5c5d5e5f50515253545556575859", "erin", "carol left", 60,
                               &rec, &err) == 0, "recover by id (%s)", err.msg);
    TAP_OK(strcmp(rec.owner, "erin") == 0 && strcmp(rec.previous_owner, "carol") == 0 &&
           strcmp(rec.previous_expires_at, "2020-01-01T00:05:00.000000+00:00") == 0 &&
           strcmp(rec.recovery_reason, "carol left") == 0 &&
           strcmp(rec.locked_at, "2030-01-01T00:00:00.000000+00:00") != 0 &&
           strcmp(rec.locked_at, rec.updated_at) == 0,
           "the new record keeps the id, is locked now, records the previous holder");
    ac_lockrec_free(&rec);
    {
        char *after = t_read(chan_path("ex", "locks/5a5b5c5d5e5f50515253545556575859.json"), NULL);
        TAP_OK(after && before && strcmp(after, before) != 0 &&
               strstr(after, "\"previous_owner\": \"carol\"") && strstr(after, "\"owner\": \"erin\""),
               "the record was rewritten in place");
        free(after);
    }
    free(before);
    TAP_OK(lock1(ch, "old/file", "erin", 300, &rec, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_CONFLICT") == 0, "the recovered lock conflicts as active");
    st->ops->chan_close(ch);
}

static void test_crafted(void)
{
    struct ac_chan *ch = make_chan("cr");
    struct ac_err err = AC_ERR_INIT;
    struct ac_locklist l;
    const char *p[1];

    craft_record("cr", "7a7b7c7d7e7f70717273747576777879", "alice", "dup/x",
                 "2099-01-01T00:05:00.000000+00:00");
    craft_record("cr", "8a8b8c8d8e8f80818283848586878889", "alice", "dup/x",
                 "2099-01-01T00:05:00.000000+00:00");
    t_write(chan_path("cr", "locks/notes.txt"), "ignored");
    t_write(chan_path("cr", "locks/.hidden.json"), "ignored too");
    t_write(chan_path("cr", "locks/_under.json"), "ignored too");
    TAP_OK(ac_pathlock_list(ch, 0, &l, NULL, NULL, &err) == 0 && l.n == 2,
           "other files and hidden files in locks/ are not records");
    ac_locklist_free(&l);
    /* A path target makes the Python tool read every "*.json" of locks/. */
    TAP_OK(ac_pathlock_unlock(ch, "dup/x", "alice", NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_RECORD") == 0 &&
           strcmp(err.msg, "could not read lock record .hidden.json: "
                           "Expecting value: line 1 column 1 (char 0)") == 0,
           "a path target reads hidden .json files too: %s", err.msg);
    unlink(chan_path("cr", "locks/.hidden.json"));
    unlink(chan_path("cr", "locks/_under.json"));
    TAP_OK(ac_pathlock_unlock(ch, "dup/x", "alice", NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_CONFLICT") == 0 &&
           strcmp(err.msg, "path target matches multiple lock records: dup/x") == 0,
           "a path matching two records");
    t_write(chan_path("cr", "locks/f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff.json"), "not json\n");
    p[0] = "anything";
    TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_RECORD") == 0 &&
           strcmp(err.msg, "could not read lock record f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff.json: "
                           "Expecting value: line 1 column 1 (char 0)") == 0,
           "one bad record fails check");
    TAP_OK(lock1(ch, "free", "bob", 300, NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_INVALID_RECORD") == 0, "and lock");
    unlink(chan_path("cr", "locks/f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff.json"));
    t_mkdir(chan_path("cr", "locks/d.json"));
    TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &err) == -1 &&
           strstr(err.msg, "could not read lock record d.json: [Errno 21] Is a directory: '") ==
               err.msg, "a directory named like a record: %s", err.msg);
    rmdir(chan_path("cr", "locks/d.json"));
    st->ops->chan_close(ch);
}

/* ------------------------------------------------------------ journals */

static void write_journal(const char *chan, const char *phase, const char *op, const char *target,
                          const char *before, const char *after, const char *txid)
{
    char *b = before ? ac_b64_encode(before, strlen(before)) : NULL;
    char *a = after ? ac_b64_encode(after, strlen(after)) : NULL;
    t_write(chan_path(chan, "locks/.path-lock-transaction.json"),
            t_path("{\n  \"actor\": \"x\",\n  \"after\": %s%s%s,\n  \"before\": %s%s%s,\n"
                   "  \"event\": \"path.locked\",\n  \"operation\": \"%s\",\n  \"phase\": \"%s\",\n"
                   "  \"target\": \"%s\",\n  \"transaction_id\": \"%s\",\n  \"version\": 1\n}\n",
                   a ? "\"" : "", a ? a : "null", a ? "\"" : "", b ? "\"" : "", b ? b : "null",
                   b ? "\"" : "", op, phase, target, txid));
    free(a);
    free(b);
}

/* A journal in the Python tool's shape with one member replaced. */
#define JRN(actor, before, phase, target, txid, version) "{\"actor\": " actor ", \"after\": null, " \
    "\"before\": " before ", \"event\": 7, \"operation\": \"unlock\", \"phase\": " phase ", " \
    "\"target\": " target ", \"transaction_id\": " txid ", \"version\": " version "}"
#define JA "\"x\""
#define JT "\"e0e1e2e3e4e5e6e7e8e9eaebecedeeef.json\""
#define JX "\"t\""

static const struct { const char *name, *text, *msg; } bad_journals[] = {
    { "version \"1\"", JRN(JA, "null", "\"prepared\"", JT, JX, "\"1\""),
      "transaction marker has an unsupported shape" },
    { "version false", JRN(JA, "null", "\"prepared\"", JT, JX, "false"),
      "transaction marker has an unsupported shape" },
    { "an unsafe transaction id", JRN(JA, "null", "\"prepared\"", JT, "\"a b\"", "1"),
      "transaction marker has an unsupported shape" },
    { "a transaction id that is a number", JRN(JA, "null", "\"prepared\"", JT, "5", "1"),
      "transaction marker has an unsupported shape" },
    { "an actor that is not a string", JRN("null", "null", "\"prepared\"", JT, JX, "1"),
      "transaction marker has an unsupported shape" },
    { "a target under another directory", JRN(JA, "null", "\"prepared\"",
      "\"tasks/e0e1e2e3e4e5e6e7e8e9eaebecedeeef.json\"", JX, "1"),
      "transaction target is not a lock record filename" },
    { "a target that is not .json", JRN(JA, "null", "\"prepared\"", "\"e0.txt\"", JX, "1"),
      "transaction target is not a lock record filename" },
    { "bad base64 in previous_bytes", "{\"actor\": \"x\", \"after\": null, \"before\": null, "
      "\"event\": 7, \"operation\": \"unlock\", \"phase\": \"prepared\", \"previous_bytes\": \"Q\", "
      "\"target\": " JT ", \"transaction_id\": \"t\", \"version\": 2}", "transaction bytes are not valid base64" },
    { "version 3", "{\"version\": 3}", "transaction marker has an unsupported shape" },
    { "not json", "not json\n",
      "could not read transaction marker: Expecting value: line 1 column 1 (char 0)" },
    { "a list", "[1]", "transaction marker has an unsupported shape" },
    { "unknown phase", "{\"actor\": \"x\", \"after\": null, \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"done\", \"target\": \"a.json\", "
      "\"transaction_id\": \"t\", \"version\": 1}", "transaction marker has an unsupported shape" },
    { "no transaction id", "{\"actor\": \"x\", \"after\": null, \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": \"a.json\", "
      "\"version\": 1}", "transaction marker has an unsupported shape" },
    { "before is a number", "{\"actor\": \"x\", \"after\": null, \"before\": 5, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": \"a.json\", "
      "\"transaction_id\": \"t\", \"version\": 1}", "transaction bytes must be base64 text" },
    { "escaping target", "{\"actor\": \"x\", \"after\": null, \"before\": null, \"event\": "
      "\"path.lock.unlocked\", \"operation\": \"unlock\", \"phase\": \"prepared\", \"target\": "
      "\"../escape.json\", \"transaction_id\": \"t\", \"version\": 1}",
      "transaction target is not a lock record filename" },
    { "target in a subdirectory", "{\"actor\": \"x\", \"after\": null, \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": "
      "\"locks/sub/a.json\", \"transaction_id\": \"t\", \"version\": 1}",
      "transaction target is not a lock record filename" },
    { "target not .json", "{\"actor\": \"x\", \"after\": null, \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": "
      "\"_meta\", \"transaction_id\": \"t\", \"version\": 1}",
      "transaction target is not a lock record filename" },
    { "bad base64", "{\"actor\": \"x\", \"after\": \"!!not base64!!\", \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": "
      "\"e0e1e2e3e4e5e6e7e8e9eaebecedeeef.json\", \"transaction_id\": \"t\", \"version\": 1}",
      "transaction bytes are not valid base64" },
    { "base64 without padding", "{\"actor\": \"x\", \"after\": \"YWI\", \"before\": null, \"event\": "
      "\"path.locked\", \"operation\": \"lock\", \"phase\": \"prepared\", \"target\": "
      "\"e0e1e2e3e4e5e6e7e8e9eaebecedeeef.json\", \"transaction_id\": \"t\", \"version\": 1}",
      "transaction bytes are not valid base64" },
};

static void test_journals(void)
{
    struct ac_chan *ch = make_chan("lj");
    struct ac_err err = AC_ERR_INIT;
    struct ac_pending_info info;
    struct ac_locklist l;
    const char *p[1] = { "a" };
    size_t i;
    int pending = 0;
    char pid[256];
    static const char ID[] = "c0c1c2c3c4c5c6c7c8c9cacbcccdcecf";
    char *rec_bytes;

    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == 0 &&
           info.outcome == AC_PENDING_NONE, "recover-pending with nothing pending succeeds");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_ROLLBACK, &info, &err) == 0,
           "even with a resolution");
    TAP_OK(ac_pathlock_recover_pending(ch, "bad actor", AC_RESOLVE_AUTO, &info, &err) == -1 &&
           strcmp(err.msg, "actor must be a safe identity") == 0, "recover-pending checks the actor");

    t_mkdir(chan_path("lj", "locks"));
    for (i = 0; i < COUNT(bad_journals); i++) {
        struct ac_err e1 = AC_ERR_INIT, e2 = AC_ERR_INIT;
        t_write(chan_path("lj", "locks/.path-lock-transaction.json"), bad_journals[i].text);
        TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &e1) == -1 &&
               strcmp(e1.code, "PATH_LOCK_TRANSACTION_INVALID") == 0 &&
               strcmp(e1.msg, bad_journals[i].msg) == 0, "journal %s: check says %s",
               bad_journals[i].name, bad_journals[i].msg);
        if (strcmp(e1.msg, bad_journals[i].msg) != 0)
            printf("#   got %s\n", e1.msg);
        TAP_OK(ac_pathlock_recover_pending(ch, "x", AC_RESOLVE_AUTO, &info, &e2) == -1 &&
               strcmp(e2.msg, bad_journals[i].msg) == 0, "journal %s: recover-pending too",
               bad_journals[i].name);
    }

    /* Accepted shapes: version 2, 1.0 or true, a "locks\\" target, any
     * event; an unsafe actor is an owner error. */
    {
        static const char *const good[] = {
            JRN(JA, "null", "\"prepared\"", JT, JX, "2"),
            JRN(JA, "null", "\"prepared\"", JT, JX, "1.0"),
            JRN(JA, "null", "\"prepared\"", JT, JX, "true"),
            JRN(JA, "null", "\"prepared\"", "\"locks\\\\e0e1e2e3e4e5e6e7e8e9eaebecedeeef.json\"", JX, "1"),
        };
        struct ac_err e = AC_ERR_INIT;
        for (i = 0; i < COUNT(good); i++) {
            t_write(chan_path("lj", "locks/.path-lock-transaction.json"), good[i]);
            TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &e) == -1 &&
                   strcmp(e.code, "PATH_LOCK_TRANSACTION_PENDING") == 0, "journal shape %zu is pending", i);
            TAP_OK(ac_pathlock_recover_pending(ch, "x", AC_RESOLVE_AUTO, &info, &e) == 0 &&
                   info.outcome == AC_PENDING_ROLLED_BACK, "and rolled back (%s)", e.msg);
        }
        t_write(chan_path("lj", "locks/.path-lock-transaction.json"),
                JRN("\"a b\"", "null", "\"prepared\"", JT, JX, "1"));
        TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &e) == -1 &&
               strcmp(e.code, "PATH_LOCK_INVALID_OWNER") == 0 &&
               strcmp(e.msg, "actor must be a safe identity") == 0, "an unsafe actor: %s", e.msg);
        unlink(chan_path("lj", "locks/.path-lock-transaction.json"));
    }

    /* prepared lock: pending for everyone; resolution refused; rolled back. */
    craft_record("lj", ID, "alice", "src/a.c", "2099-01-01T00:05:00.000000+00:00");
    rec_bytes = t_read(t_path("%s/lj/locks/%s.json", root, ID), NULL);
    write_journal("lj", "prepared", "lock", t_path("%s.json", ID), NULL, rec_bytes,
                  "1a1b1c1d1e1f10111213141516171819");
    TAP_OK(ac_pathlock_check(ch, p, 1, NULL, &l, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_TRANSACTION_PENDING") == 0 &&
           strcmp(err.msg, "a previous path-lock mutation needs explicit recovery") == 0,
           "a pending journal blocks check");
    TAP_OK(lock1(ch, "other", "bob", 300, NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_TRANSACTION_PENDING") == 0, "and lock");
    TAP_OK(ac_pathlock_unlock(ch, ID, "alice", NULL, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_TRANSACTION_PENDING") == 0, "and unlock");
    TAP_OK(ac_pathlock_list(ch, AC_LIST_IGNORE_JOURNAL, &l, &pending, pid, &err) == 0 &&
           pending == 1 && strcmp(pid, ID) == 0 && l.n == 1,
           "list can ignore it and names the lock concerned");
    ac_locklist_free(&l);
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_PUBLISHED, &info, &err) == -1 &&
           strcmp(err.msg, "publication resolution applies only to applied or published "
                           "transactions") == 0, "no publication resolution for prepared");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == 0 &&
           info.outcome == AC_PENDING_ROLLED_BACK && strcmp(info.operation, "lock") == 0 &&
           strcmp(info.lock_id, ID) == 0, "prepared is rolled back");
    TAP_OK(!t_exists(t_path("%s/lj/locks/%s.json", root, ID)) &&
           !t_exists(chan_path("lj", "locks/.path-lock-transaction.json")),
           "before = null: the record is deleted, the journal removed");
    TAP_INT_EQ(messages("lj"), 0, "recover-pending posts no audit message");

    /* applied without its audit message: rolled back. */
    t_write(t_path("%s/lj/locks/%s.json", root, ID), rec_bytes);
    write_journal("lj", "applied", "lock", t_path("locks/%s.json", ID), NULL, rec_bytes,
                  "2a2b2c2d2e2f20212223242526272829");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == 0 &&
           info.outcome == AC_PENDING_ROLLED_BACK &&
           !t_exists(t_path("%s/lj/locks/%s.json", root, ID)),
           "applied without an audit message is rolled back");

    /* applied with its audit message: completed. */
    t_write(t_path("%s/lj/locks/%s.json", root, ID), rec_bytes);
    t_write(chan_path("lj", "0001-x-path-locked.md"),
            "---\nseq: 1\nfrom: x\n---\n{\n  \"transaction_id\": \"3a3b3c3d3e3f30313233343536373839\"\n}\n");
    write_journal("lj", "applied", "lock", t_path("%s.json", ID), NULL, rec_bytes,
                  "3a3b3c3d3e3f30313233343536373839");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == 0 &&
           info.outcome == AC_PENDING_COMPLETED && t_exists(t_path("%s/lj/locks/%s.json", root, ID)),
           "applied with its audit message is completed");

    /* published but not matching: refused, then rolled back on request. */
    write_journal("lj", "published", "recover", t_path("%s.json", ID), rec_bytes,
                  "{\"something\": \"else\"}\n", "4a4b4c4d4e4f40414243444546474849");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == -1 &&
           strcmp(err.code, "PATH_LOCK_TRANSACTION_INVALID") == 0 &&
           strcmp(err.msg, "published transaction does not match lock state") == 0 &&
           t_exists(chan_path("lj", "locks/.path-lock-transaction.json")),
           "published but different: refused, the journal stays");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_PUBLISHED, &info, &err) == -1,
           "resolve published: still refused");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_ROLLBACK, &info, &err) == 0 &&
           info.outcome == AC_PENDING_ROLLED_BACK, "resolve rollback restores before");
    {
        char *now = t_read(t_path("%s/lj/locks/%s.json", root, ID), NULL);
        TAP_OK(now && strcmp(now, rec_bytes) == 0, "before's bytes are back");
        free(now);
    }
    /* published and matching: completed. */
    write_journal("lj", "published", "unlock", t_path("%s.json", ID), rec_bytes, NULL,
                  "5a5b5c5d5e5f50515253545556575859");
    unlink(t_path("%s/lj/locks/%s.json", root, ID));
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_AUTO, &info, &err) == 0 &&
           info.outcome == AC_PENDING_COMPLETED, "published unlock, record gone: completed");
    /* applied unlock, resolve published with the record still there: refused. */
    t_write(t_path("%s/lj/locks/%s.json", root, ID), rec_bytes);
    write_journal("lj", "applied", "unlock", t_path("%s.json", ID), rec_bytes, NULL,
                  "6a6b6c6d6e6f60616263646566676869");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_PUBLISHED, &info, &err) == -1 &&
           strcmp(err.msg, "published transaction does not match lock state") == 0,
           "resolve published of an unlock whose record is still there");
    TAP_OK(ac_pathlock_recover_pending(ch, "bob", AC_RESOLVE_ROLLBACK, &info, &err) == 0 &&
           t_exists(t_path("%s/lj/locks/%s.json", root, ID)), "rollback keeps the record");
    free(rec_bytes);
    st->ops->chan_close(ch);
}

int main(void)
{
    struct ac_err err = AC_ERR_INIT;

    setenv("AGENT_CHAT_TEST_FSYNC", "0", 1);
    unsetenv("AGENT_CHAT_FAULT");
    setenv("TZ", "UTC", 1);
    umask(022);
    test_overlap();
    test_owner();
    test_duration();
    test_reason();
    test_canonical();
    test_parse();

    tmp = t_mkdtemp("pathlock");
    root = strdup(t_path("%s/root", tmp));
    t_mkdir(root);
    st = ac_store_open_fs(root, &err);
    if (!st || !root)
        t_bail("ac_store_open_fs: %s", err.msg);
    test_lock_ops();
    test_expiry();
    test_crafted();
    test_journals();
    ac_store_close(st);
    t_rm_rf(tmp);
    free(tmp);
    free(root);
    return tap_done();
}
