/*
 * fuzz_lockrec.c - path-lock records and the path-lock journal (docs/format.md 3.7,
 * 3.9) as `lock`, `check`, `state` and `recover-pending` read them:
 * ac_lockrec_parse on the bytes of locks/<id>.json, and ac_pl_journal_read
 * on the same bytes stored as locks/.path-lock-transaction.json in a
 * scratch directory.
 *
 * Properties:
 *   - a record either parses or fails with PATH_LOCK_INVALID_RECORD or
 *     the code of its bad field (lock id, channel, owner, timestamp,
 *     reason), as the Python tool's checks do;
 *   - a parsed record has its lock id, owner, channel and at least one
 *     path, every normalized path canonical; it encodes, the encoding
 *     parses to the same fields, and encodes to the same bytes;
 *   - a journal is either absent-equivalent, usable, or
 *     PATH_LOCK_TRANSACTION_INVALID (PATH_LOCK_INVALID_OWNER for an unsafe
 *     actor); a usable one written back
 *     (ac_pl_journal_write) reads back with the same fields and bytes.
 */
#include "fuzz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentchat/pathlock.h"
#include "agentchat/pyjson.h"
#include "pathlock_int.h"

static int ldfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[512];
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "%s/locks", fuzz_tmpdir());
    FUZZ_CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    ldfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_CHECK(ldfd >= 0, "open %s", path);
    return 0;
}

/* "<lock_id>.json" when the input has a short string lock_id. */
static void record_name(const uint8_t *data, size_t size, char *name, size_t n)
{
    json_t *v = ac_pyjson_loads((const char *)data, size, AC_PYJSON_READ_TEXT, NULL, 0);
    const json_t *id = json_is_object(v) ? json_object_get(v, "lock_id") : NULL;
    if (json_is_string(id) && json_string_length(id) < n - 6 &&
        strlen(json_string_value(id)) == json_string_length(id))
        snprintf(name, n, "%s.json", json_string_value(id));
    else
        snprintf(name, n, "lock.json");
    json_decref(v);
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Every field of two records is equal (the aliases of the first are read
 * into the main fields, which is what the encoding writes). */
static void check_same(const struct ac_lockrec *a, const struct ac_lockrec *b, const char *enc)
{
    size_t i;
    FUZZ_CHECK(same_str(a->lock_id, b->lock_id) && same_str(a->channel, b->channel) &&
                   same_str(a->owner, b->owner) && same_str(a->expires_at, b->expires_at) &&
                   same_str(a->locked_at, b->locked_at) &&
                   same_str(a->updated_at, b->updated_at) &&
                   same_str(a->previous_owner, b->previous_owner) &&
                   same_str(a->previous_expires_at, b->previous_expires_at) &&
                   same_str(a->recovery_reason, b->recovery_reason) &&
                   a->expires_us == b->expires_us && a->npaths == b->npaths,
               "a field changed in a round trip:\n%s", enc);
    for (i = 0; i < a->npaths; i++)
        FUZZ_CHECK(same_str(a->paths[i].display, b->paths[i].display) &&
                       same_str(a->paths[i].normalized, b->paths[i].normalized) &&
                       a->paths[i].is_dir == b->paths[i].is_dir,
                   "path %zu changed in a round trip:\n%s", i, enc);
}

static void check_record(const uint8_t *data, size_t size)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_lockrec r, r2;
    char name[300];
    char *enc, *enc2;
    size_t len, len2, i;

    record_name(data, size, name, sizeof name);
    if (ac_lockrec_parse((const char *)data, size, name, "c", &r, &err) == -1) {
        /* The Python tool's record checks: PATH_LOCK_INVALID_RECORD, or
         * the code of the bad field (lock id, channel, owner, timestamp,
         * reason). */
        FUZZ_CHECK(err.code && (strcmp(err.code, "PATH_LOCK_INVALID_RECORD") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_LOCK_ID") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_CHANNEL") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_OWNER") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_TIMESTAMP") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_REASON") == 0) && err.msg[0],
                   "unexpected failure %s: %s", err.code ? err.code : "(null)", err.msg);
        return;
    }
    FUZZ_CHECK(r.lock_id && r.channel && r.owner && r.npaths > 0, "incomplete record");
    for (i = 0; i < r.npaths; i++)
        FUZZ_CHECK(ac_pathlock_path_canonical(r.paths[i].normalized),
                   "path %zu not canonical: %s", i, r.paths[i].normalized);
    (void)ac_lockrec_expired(&r, 0);
    enc = ac_lockrec_encode(&r, &len);
    FUZZ_CHECK(enc != NULL, "a valid record does not encode");
    FUZZ_CHECK(ac_lockrec_parse(enc, len, name, "c", &r2, &err) == 0,
               "the encoding does not parse: %s: %s\n%s", err.code, err.msg, enc);
    check_same(&r, &r2, enc);
    enc2 = ac_lockrec_encode(&r2, &len2);
    FUZZ_CHECK(enc2 && len2 == len && memcmp(enc, enc2, len) == 0,
               "encoding is not stable:\n%s\n--- then ---\n%s", enc, enc2 ? enc2 : "(null)");
    free(enc2);
    ac_lockrec_free(&r2);
    free(enc);
    ac_lockrec_free(&r);
}

static int same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    if (!a || !b)
        return !a && !b;
    return alen == blen && memcmp(a, b, alen) == 0;
}

static void check_journal(const uint8_t *data, size_t size)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_pl_journal j, j2;
    int fd, rc;

    fd = openat(ldfd, AC_PATHLOCK_JOURNAL, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0, "cannot write the journal");
    FUZZ_CHECK(write(fd, data, size) == (ssize_t)size, "short write");
    close(fd);
    rc = ac_pl_journal_read(ldfd, &j, &err);
    if (rc == -1) {
        FUZZ_CHECK(err.code && (strcmp(err.code, "PATH_LOCK_TRANSACTION_INVALID") == 0 ||
                                strcmp(err.code, "PATH_LOCK_INVALID_OWNER") == 0),
                   "unexpected failure %s: %s", err.code ? err.code : "(null)", err.msg);
        return;
    }
    FUZZ_CHECK(rc == 1, "an existing journal read as absent");
    FUZZ_CHECK(j.actor && j.target[0], "incomplete journal");
    FUZZ_CHECK(ac_pl_journal_write(ldfd, &j, j.phase, 0, "fuzz.journal") == 0,
               "a usable journal cannot be written back");
    FUZZ_CHECK(ac_pl_journal_read(ldfd, &j2, &err) == 1, "rewritten journal unreadable: %s",
               err.msg);
    FUZZ_CHECK(strcmp(j.txid, j2.txid) == 0 && strcmp(j.phase, j2.phase) == 0 &&
                   strcmp(j.operation, j2.operation) == 0 && strcmp(j.event, j2.event) == 0 &&
                   strcmp(j.target, j2.target) == 0 && strcmp(j.actor, j2.actor) == 0,
               "journal fields changed in a round trip");
    FUZZ_CHECK(same_bytes(j.before, j.before_len, j2.before, j2.before_len) &&
                   same_bytes(j.after, j.after_len, j2.after, j2.after_len),
               "journal bytes changed in a round trip");
    ac_pl_journal_free(&j2);
    ac_pl_journal_free(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_record(data, size);
    check_journal(data, size);
    return 0;
}
