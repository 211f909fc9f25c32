/*
 * fuzz_lockrec.c - path-lock records and the journals (docs/format.md 3.6, 3.7,
 * 3.9) as `lock`, `check`, `state` and `recover-pending` read them:
 * ac_lockrec_parse on the bytes of locks/<id>.json, and the journal engine
 * of the file-system backend (src/fs/journal.c) decoding the same bytes as
 * a path-lock journal and as a lease journal.
 *
 * Properties:
 *   - a record either parses or fails with PATH_LOCK_INVALID_RECORD or
 *     the code of its bad field (lock id, channel, owner, timestamp,
 *     reason), as the Python tool's checks do;
 *   - a parsed record has its lock id, owner, channel and at least one
 *     path, every normalized path canonical; it encodes, the encoding
 *     parses to the same fields, and encodes to the same bytes;
 *   - a journal is either usable or fails with its format's codes
 *     (PATH_LOCK_TRANSACTION_INVALID, PATH_LOCK_INVALID_OWNER for an unsafe
 *     actor; LEASE_TRANSACTION_INVALID, LEASE_INVALID_TASK_ID,
 *     LEASE_INVALID_OWNER); a usable one our writer could have written,
 *     encoded again as it writes it, reads back with the same fields and
 *     encodes to the same bytes.
 */
#include "fuzz.h"

#include "agentchat/pathlock.h"
#include "agentchat/pyjson.h"
#include "fs/journal.h"

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

/* A journal either reads (and then re-encodes to a journal that reads the
 * same and encodes the same again) or fails with one of the codes of its
 * format; `invalid` lists them, separated by spaces. */
static void check_journal(int kind, const char *invalid, const uint8_t *data, size_t size)
{
    struct ac_err err = AC_ERR_INIT;
    struct ac_pending p, p2;
    char *enc, *enc2, code[64];
    size_t len, len2;

    if (ac_fs_journal_recode(kind, (const char *)data, size, &p, &enc, &len, &err) == -1) {
        snprintf(code, sizeof code, " %s ", err.code ? err.code : "(null)");
        FUZZ_CHECK(err.code && strstr(invalid, code) && err.msg[0], "unexpected failure %s: %s",
                   err.code ? err.code : "(null)", err.msg);
        return;
    }
    FUZZ_CHECK(p.phase[0] && p.subject[0] && p.nchanges > 0, "incomplete journal");
    /* What our writer never writes (a legacy journal without a transaction
     * id or a task_after) is read, not written back. */
    if (p.anonymous || p.no_after || !p.txid[0]) {
        free(enc);
        ac_pending_free(&p);
        return;
    }
    FUZZ_CHECK(ac_fs_journal_recode(kind, enc, len, &p2, &enc2, &len2, &err) == 0,
               "the journal we would write is unreadable: %s\n%s", err.msg, enc);
    FUZZ_CHECK(strcmp(p.txid, p2.txid) == 0 && strcmp(p.phase, p2.phase) == 0 &&
                   strcmp(p.operation, p2.operation) == 0 && strcmp(p.event, p2.event) == 0 &&
                   strcmp(p.subject, p2.subject) == 0 && p.nchanges == p2.nchanges,
               "journal fields changed in a round trip");
    FUZZ_CHECK(len2 == len && memcmp(enc, enc2, len) == 0,
               "journal encoding is not stable:\n%s\n--- then ---\n%s", enc, enc2);
    free(enc2);
    free(enc);
    ac_pending_free(&p);
    ac_pending_free(&p2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_record(data, size);
    check_journal(AC_BATCH_PATHLOCK, " PATH_LOCK_TRANSACTION_INVALID PATH_LOCK_INVALID_OWNER ", data,
                  size);
    check_journal(AC_BATCH_LEASE, " LEASE_TRANSACTION_INVALID LEASE_INVALID_TASK_ID LEASE_INVALID_OWNER ",
                  data, size);
    return 0;
}
