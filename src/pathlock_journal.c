/*
 * pathlock_journal.c - the path-lock journal, locks/.path-lock-transaction.json
 * (docs/format.md 3.7), and its recovery; see pathlock.h for the lifecycle.
 *
 * The journal records one mutation of one lock record: the record file's
 * bytes before and after (base64, null meaning "no file"), the phase
 * reached, and the transaction id that the audit message carries. It is
 * written with the same atomic recipe as every file (temp, fsync, link or
 * rename, directory fsync), so a reader sees a whole journal or none.
 *
 * Compatibility: journals written by the Python tool are read as it reads
 * them (version 1 or 2, "target" as "<id>.json" or "locks/<id>.json",
 * strict base64, the same checks in the same order), and ours are
 * byte-for-byte what it writes (indent 2, sorted keys), so either tool can
 * recover the other's crash.
 */
#include "pathlock_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentchat/audit.h"
#include "agentchat/codec.h"
#include "agentchat/fault.h"
#include "agentchat/fsutil.h"
#include "agentchat/json.h"
#include "agentchat/pyjson.h"

/* json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) */
static const struct ac_json_style journal_style = { 2, 0, 1, ",", ": " };

static const char *const PHASES[] = { "prepared", "applied", "published", NULL };
static const char *const OPERATIONS[] = { "lock", "unlock", "recover", NULL };
/* Every member a journal must have (the Python tool's _read_transaction). */
static const char *const REQUIRED[] = { "version", "transaction_id", "phase", "operation", "event",
                                        "target", "before", "after", "actor", NULL };

int ac_pl_err(struct ac_err *err, const char *code, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        err->code = code;
        err->exit_code = PL_EXIT;
        err->sys_errno = 0;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    errno = saved;
    return -1;
}

void ac_pl_journal_free(struct ac_pl_journal *j)
{
    free(j->actor);
    free(j->before);
    free(j->after);
    j->actor = j->before = j->after = NULL;
}

static int one_of(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return 1;
    return 0;
}

/* A string member copied into buf (size n); 0, or -1 when missing, not a
 * string, holding a NUL, or too long. */
static int get_str(const json_t *obj, const char *key, char *buf, size_t n)
{
    const json_t *v = json_object_get(obj, key);
    size_t len;
    if (!json_is_string(v))
        return -1;
    len = json_string_length(v);
    if (len >= n || strlen(json_string_value(v)) != len)
        return -1;
    memcpy(buf, json_string_value(v), len + 1);
    return 0;
}

/* A safe identity ([A-Za-z0-9][A-Za-z0-9._-]*): lock ids, transaction ids
 * and actors, as the Python tool's _ID_RE. */
static int safe_id(const char *s, size_t len)
{
    size_t i;
    if (len == 0 || memchr(s, '\0', len))
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
            return 0;
    }
    return 1;
}

/* "<id>.json" with a safe id (at most a file name long): the only targets
 * a journal may name, so recovery never writes outside locks/. */
static int lock_file_name(const char *s)
{
    size_t len = strlen(s);
    return len >= 6 && len <= 255 && strcmp(s + len - 5, ".json") == 0 && safe_id(s, len - 5);
}

/* Python's `version in {1, 2}` (1.0, 2.0 and true count). */
static int known_version(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) == 1 || json_integer_value(v) == 2;
    if (json_is_real(v))
        return json_real_value(v) == 1.0 || json_real_value(v) == 2.0;
    return json_is_true(v);
}

/* Decode the base64 member `key` (absent or null: *out NULL). Returns 0,
 * or -1 with the Python tool's message. */
static int get_bytes(const json_t *obj, const char *key, char **out, size_t *len,
                     struct ac_err *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    *len = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID", "transaction bytes must be base64 text");
    *out = ac_b64_decode(json_string_value(v), json_string_length(v), len);
    if (!*out)
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID", "transaction bytes are not valid base64");
    return 0;
}

int ac_pl_journal_read(int ldfd, struct ac_pl_journal *j, struct ac_err *err)
{
    char *data = NULL, msg[AC_PYJSON_MSG_MAX], target[300], *extra = NULL;
    size_t len, i, xlen;
    json_t *root = NULL, *v;
    int rc = -1, shape;

    memset(j, 0, sizeof *j);
    if (ldfd == -1)
        return 0;
    if (ac_read_file_at(ldfd, AC_PATHLOCK_JOURNAL, AC_PATHLOCK_FILE_CAP, &data, &len) == -1) {
        if (errno == ENOENT)
            return 0;
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                         "could not read transaction marker: [Errno %d] %s", errno, strerror(errno));
    }
    root = ac_pyjson_loads(data, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    free(data);
    if (!root)
        return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                         "could not read transaction marker: %s", msg);

    /* The shape, in the Python tool's terms: an object with every member,
     * a known version, phase and operation, a safe transaction id, and a
     * target and an actor that are strings. The event is not looked at. */
    shape = json_is_object(root) && !ac_pyjson_is_nonfinite(root) &&
            known_version(json_object_get(root, "version")) &&
            get_str(root, "phase", j->phase, sizeof j->phase) == 0 && one_of(j->phase, PHASES);
    for (i = 0; shape && REQUIRED[i]; i++)
        shape = json_object_get(root, REQUIRED[i]) != NULL;
    v = json_object_get(root, "transaction_id");
    shape = shape && json_is_string(v) && safe_id(json_string_value(v), json_string_length(v)) &&
            get_str(root, "transaction_id", j->txid, sizeof j->txid) == 0 &&
            get_str(root, "operation", j->operation, sizeof j->operation) == 0 &&
            one_of(j->operation, OPERATIONS) && json_is_string(json_object_get(root, "target")) &&
            json_is_string(json_object_get(root, "actor"));
    if (!shape) {
        ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID", "transaction marker has an unsupported shape");
        goto out;
    }
    if (get_str(root, "event", j->event, sizeof j->event) == -1)
        j->event[0] = '\0';
    /* "<id>.json" or "locks/<id>.json" ('\' also separates). */
    if (get_str(root, "target", target, sizeof target) == -1)
        target[0] = '\0';
    for (i = 0; target[i]; i++)
        if (target[i] == '\\')
            target[i] = '/';
    {
        const char *name = strncmp(target, "locks/", 6) == 0 ? target + 6 : target;
        if (strchr(name, '/') || !lock_file_name(name)) {
            ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                      "transaction target is not a lock record filename");
            goto out;
        }
        memmove(j->target, name, strlen(name) + 1);
    }
    v = json_object_get(root, "actor");
    if (!safe_id(json_string_value(v), json_string_length(v))) {
        ac_pl_err(err, "PATH_LOCK_INVALID_OWNER", "actor must be a safe identity");
        goto out;
    }
    if (get_bytes(root, "before", &j->before, &j->before_len, err) == -1 ||
        get_bytes(root, "after", &j->after, &j->after_len, err) == -1)
        goto out;
    /* Optional members the Python tool also decodes (and then ignores). */
    if (get_bytes(root, "previous_bytes", &extra, &xlen, err) == -1)
        goto out;
    free(extra);
    if (get_bytes(root, "next_bytes", &extra, &xlen, err) == -1)
        goto out;
    free(extra);
    j->actor = strdup(json_string_value(json_object_get(root, "actor")));
    if (!j->actor) {
        ac_err_sys(err, ENOMEM, NULL, "could not read transaction marker");
        goto out;
    }
    rc = 1;
out:
    json_decref(root);
    if (rc != 1)
        ac_pl_journal_free(j);
    return rc;
}

/* Add a base64 member (or null). */
static int set_bytes(json_t *obj, const char *key, const char *data, size_t len)
{
    char *b64;
    if (!data)
        return json_object_set_new(obj, key, json_null());
    b64 = ac_b64_encode(data, len);
    if (!b64)
        return -1;
    if (json_object_set_new(obj, key, json_string(b64)) == -1) {
        free(b64);
        return -1;
    }
    free(b64);
    return 0;
}

int ac_pl_journal_write(int ldfd, const struct ac_pl_journal *j, const char *phase,
                        int create, const char *fault_tag)
{
    json_t *o = json_object();
    char *text = NULL;
    size_t len;
    int rc = -1, saved;

    if (!o ||
        json_object_set_new(o, "version", json_integer(1)) == -1 ||
        json_object_set_new(o, "transaction_id", json_string(j->txid)) == -1 ||
        json_object_set_new(o, "phase", json_string(phase)) == -1 ||
        json_object_set_new(o, "operation", json_string(j->operation)) == -1 ||
        json_object_set_new(o, "event", json_string(j->event)) == -1 ||
        json_object_set_new(o, "target", json_string(j->target)) == -1 ||
        json_object_set_new(o, "actor", json_string(j->actor)) == -1 ||
        set_bytes(o, "before", j->before, j->before_len) == -1 ||
        set_bytes(o, "after", j->after, j->after_len) == -1) {
        errno = ENOMEM;
        goto out;
    }
    text = ac_json_dump(o, &journal_style, &len);
    if (!text) {
        errno = ENOMEM;
        goto out;
    }
    text[len++] = '\n';     /* ac_json_dump leaves room for the NUL */
    rc = ac_write_atomic(ldfd, AC_PATHLOCK_JOURNAL, text, len, 0644,
                         create ? AC_ATOMIC_NOREPLACE
                                : AC_ATOMIC_REPLACE |
                                      (strcmp(phase, "published") == 0 ? AC_ATOMIC_NO_DIRSYNC : 0),
                         fault_tag);
out:
    saved = errno;
    free(text);
    json_decref(o);
    errno = saved;
    return rc;
}

int ac_pl_journal_remove(int ldfd)
{
    if (AC_FAULT("pathlock.journal.remove") == -1)
        return -1;
    if (ac_sys_unlinkat(ldfd, AC_PATHLOCK_JOURNAL, 0) == -1 && errno != ENOENT)
        return -1;
    /* Best effort: if the removal is lost in a power cut, the journal
     * comes back and recover-pending resolves it again (every resolution
     * is idempotent: `after` still matches, or `before` is restored). */
    if (AC_FAULT("pathlock.journal.dirsync") == 0)
        ac_fsync_dir(ldfd);
    return 0;
}

int ac_pl_restore_before(int ldfd, const struct ac_pl_journal *j)
{
    if (j->before)
        return ac_write_atomic(ldfd, j->target, j->before, j->before_len, 0644,
                               AC_ATOMIC_REPLACE, "pathlock.restore");
    if (AC_FAULT("pathlock.restore.unlink") == -1)
        return -1;
    if (ac_sys_unlinkat(ldfd, j->target, 0) == -1 && errno != ENOENT)
        return -1;
    if (AC_FAULT("pathlock.restore.dirsync") == -1)
        return -1;
    return ac_fsync_dir(ldfd);
}

int ac_pl_matches_after(int ldfd, const struct ac_pl_journal *j)
{
    char *data;
    size_t len;
    int same;
    if (ac_read_file_at(ldfd, j->target, AC_PATHLOCK_FILE_CAP, &data, &len) == -1) {
        if (errno == ENOENT)
            return j->after == NULL;
        if (errno == EFBIG)
            return 0;
        return -1;
    }
    same = j->after && len == j->after_len && memcmp(data, j->after, len) == 0;
    free(data);
    return same;
}

int ac_pl_journal_resolve(struct ac_chan *ch, int ldfd, const struct ac_pl_journal *j,
                          enum ac_pathlock_resolve resolve,
                          enum ac_pathlock_outcome *outcome, struct ac_err *err)
{
    int complete;

    if (strcmp(j->phase, "prepared") == 0) {
        if (resolve != AC_RESOLVE_AUTO)
            return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                             "publication resolution applies only to applied or published "
                             "transactions");
        complete = 0;
    } else if (resolve == AC_RESOLVE_ROLLBACK) {
        complete = 0;
    } else if (resolve == AC_RESOLVE_PUBLISHED || strcmp(j->phase, "published") == 0) {
        complete = 1;
    } else {
        /* applied: was the audit message posted before the crash? */
        int found = 0;
        if (j->txid[0] && strlen(j->txid) <= 64) {
            found = ac_audit_find_transaction(ch, j->txid, err);
            if (found == -1)
                return -1;
        }
        complete = found;
    }

    if (complete) {
        int m = ac_pl_matches_after(ldfd, j);
        if (m == -1)
            return ac_err_sys(err, errno, NULL, "could not read lock record %s", j->target);
        if (m == 0)
            return ac_pl_err(err, "PATH_LOCK_TRANSACTION_INVALID",
                             "published transaction does not match lock state");
    } else if (ac_pl_restore_before(ldfd, j) == -1) {
        return ac_err_sys(err, errno, NULL, "could not restore lock record %s", j->target);
    }
    if (ac_pl_journal_remove(ldfd) == -1)
        return ac_err_sys(err, errno, NULL, "could not remove the path-lock journal");
    if (outcome)
        *outcome = complete ? AC_PENDING_COMPLETED : AC_PENDING_ROLLED_BACK;
    return 0;
}
