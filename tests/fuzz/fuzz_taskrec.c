/*
 * fuzz_taskrec.c - task records (docs/format.md 3.5) as the task board reads them:
 * the bytes of tasks/<id>.json through ac_pyjson_loads (CPython's json
 * scanner, transcribed) and ac_task_validate.
 *
 * Properties:
 *   - a failed decode gives a non-empty message that fits the buffer, and
 *     the extended form agrees on success or failure;
 *   - validation either passes or names a TASK_* code with a message;
 *   - a valid record encodes (ac_task_encode), the encoding decodes and
 *     validates again, encodes to the same bytes, and no field differs
 *     (neither by ac_task_changed_fields nor by json_equal).
 * files_hint symlink resolution is exercised by fuzz_pathnorm; here the
 * channel descriptor is -1 (lexical checks only).
 */
#include "fuzz.h"

#include "agentchat/pyjson.h"
#include "agentchat/taskrec.h"

/* The file name the record must have: "<id>.json" when id is a short
 * string, so that valid records get past TASK_RECORD_ID_MISMATCH. */
static void record_name(const json_t *rec, char *name, size_t size)
{
    const json_t *id = json_is_object(rec) ? json_object_get(rec, "id") : NULL;
    if (json_is_string(id) && json_string_length(id) < size - 6 &&
        strlen(json_string_value(id)) == json_string_length(id))
        snprintf(name, size, "%s.json", json_string_value(id));
    else
        snprintf(name, size, "task.json");
}

static void check_record(json_t *rec, const char *channel)
{
    struct ac_err err = AC_ERR_INIT;
    char name[128], msg[AC_PYJSON_MSG_MAX];
    json_t *again, *changed;
    char *enc, *enc2;
    size_t len, len2;

    record_name(rec, name, sizeof name);
    if (ac_task_validate(rec, name, channel, -1, &err) == -1) {
        FUZZ_CHECK(err.code && strncmp(err.code, "TASK_", 5) == 0 && err.msg[0],
                   "validation failed without a TASK_ code: %s", err.code ? err.code : "(null)");
        return;
    }
    (void)ac_task_str(rec, "owner");
    (void)ac_task_time(rec, "updated_at");
    if (ac_task_str(rec, "lease_expires_at"))
        (void)ac_task_time(rec, "lease_expires_at");
    (void)ac_task_status_valid(ac_task_str(rec, "status"));
    (void)ac_task_transition_ok(ac_task_str(rec, "status"), "done");
    enc = ac_task_encode(rec, &len);
    FUZZ_CHECK(enc != NULL, "a valid record does not encode");
    again = ac_pyjson_loads(enc, len, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    FUZZ_CHECK(again != NULL, "the encoding does not decode: %s\n%s", msg, enc);
    FUZZ_CHECK(ac_task_validate(again, name, channel, -1, &err) == 0,
               "the encoding does not validate: %s: %s\n%s", err.code, err.msg, enc);
    enc2 = ac_task_encode(again, &len2);
    FUZZ_CHECK(enc2 && len2 == len && memcmp(enc, enc2, len) == 0,
               "encoding is not stable:\n%s\n--- then ---\n%s", enc, enc2 ? enc2 : "(null)");
    changed = ac_task_changed_fields(rec, again);
    FUZZ_CHECK(changed && json_array_size(changed) == 0, "fields changed in a round trip");
    FUZZ_CHECK(json_equal(rec, again), "the record changed in a round trip:\n%s", enc);
    json_decref(changed);
    free(enc2);
    json_decref(again);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char msg[AC_PYJSON_MSG_MAX], small[8];
    struct ac_pyjson_error e;
    json_t *rec, *raw;
    const json_t *ch;

    rec = ac_pyjson_loads((const char *)data, size, AC_PYJSON_READ_TEXT, msg, sizeof msg);
    raw = ac_pyjson_loadx((const char *)data, size, 0, &e);
    if (!raw)
        FUZZ_CHECK(e.exc != AC_PYJSON_EXC_NONE && e.msg[0] && e.exc_name[0], "error without text");
    json_decref(raw);
    if (!rec) {
        FUZZ_CHECK(msg[0] != '\0' && strlen(msg) < sizeof msg, "error message empty");
        /* A short buffer truncates but still terminates. */
        (void)ac_pyjson_loads((const char *)data, size, AC_PYJSON_READ_TEXT, small, sizeof small);
        FUZZ_CHECK(strlen(small) < sizeof small, "short buffer overrun");
        return 0;
    }
    ch = json_is_object(rec) ? json_object_get(rec, "channel") : NULL;
    check_record(rec, json_is_string(ch) && json_string_length(ch) < 256 &&
                          strlen(json_string_value(ch)) == json_string_length(ch)
                      ? json_string_value(ch) : "c");
    json_decref(rec);
    return 0;
}
