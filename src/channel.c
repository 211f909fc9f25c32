/* channel.c - channel name rules and _meta.json; see channel.h. */
#include "agentchat/channel.h"

#include <string.h>

#include "agentchat/json.h"
#include "agentchat/utf8.h"

const char *ac_name_problem(const char *name, size_t max)
{
    size_t len = strlen(name), i;
    if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strpbrk(name, "/\\:"))
        return "path traversal blocked";
    if (name[0] == '.' || name[0] == '_')
        return "reserved prefix blocked";
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f)
            return "control character blocked";
    }
    if (!ac_utf8_valid(name, len))
        return "invalid UTF-8 blocked";
    if (len > max)
        return "name too long";
    return NULL;
}

int ac_name_refuse(const char *name, const char *why, const char *code, const char *what,
                   struct ac_err *err)
{
    char shown[300];
    if (!why)
        return 0;
    ac_err_quote(shown, sizeof shown, name, 200);
    return ac_err_code(err, code, "invalid %s name (%s): '%s'", what, why, shown);
}

int ac_channel_name_check(const char *name, struct ac_err *err)
{
    return ac_name_refuse(name, ac_name_problem(name, AC_NAME_MAX), "CHANNEL_INVALID_NAME", "channel", err);
}

/* [A-Za-z0-9][A-Za-z0-9_-]* over id[0..len). */
static int marker_id_ok(const char *id, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        char c = id[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '-')))
            return 0;
    }
    return len > 0;
}

int ac_marker_name_check(const char *name, struct ac_err *err)
{
    const char *why = ac_name_problem(name, AC_NAME_MAX);
    size_t len = strlen(name);
    char shown[300];

    ac_err_quote(shown, sizeof shown, name, 200);
    if (why && strcmp(why, "path traversal blocked") != 0 &&
        strcmp(why, "reserved prefix blocked") != 0)
        why = NULL;     /* only the two core rules apply to marker names */
    if (why)
        return ac_err_set(err, AC_EXIT_GENERAL, "CLAIM_INVALID_NAME",
                          "invalid task name (%s): '%s'", why, shown);
    /* The Python tool's marker rule: task-[A-Za-z0-9][A-Za-z0-9_-]*\.md
     * (ASCII only: no space, no dot, no other extension or case). */
    if (len < 9 || strncmp(name, "task-", 5) != 0 || strcmp(name + len - 3, ".md") != 0 ||
        !marker_id_ok(name + 5, len - 8))
        return ac_err_set(err, AC_EXIT_GENERAL, "CLAIM_INVALID_NAME",
                          "invalid task name (expected task-<id>.md marker): '%s'", shown);
    return 0;
}

char *ac_meta_compose(const char *channel, const char *const *members,
                      size_t nmembers, const char *topic, const char *created,
                      size_t *len)
{
    json_t *obj = json_object(), *arr = json_array();
    char *out = NULL;
    size_t i;

    if (!obj || !arr)
        goto done;
    for (i = 0; i < nmembers; i++)
        if (json_array_append_new(arr, json_string(members[i])) == -1)
            goto done;
    if (json_object_set_new(obj, "channel", json_string(channel)) == -1 ||
        json_object_set(obj, "members", arr) == -1 ||
        json_object_set_new(obj, "topic", json_string(topic)) == -1 ||
        json_object_set_new(obj, "created", json_string(created)) == -1)
        goto done;
    out = ac_json_dump(obj, &ac_json_py_indent2, len);
done:
    json_decref(arr);
    json_decref(obj);
    return out;
}

json_t *ac_meta_parse(const char *data, size_t len)
{
    json_error_t jerr;
    return json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
}

const char *ac_meta_problem(const char *data, size_t len)
{
    json_t *v = ac_meta_parse(data, len);
    json_t *members = json_object_get(v, "members"), *topic = json_object_get(v, "topic");
    size_t i;
    int ok = json_is_object(v) && json_is_array(members) && (!topic || json_is_string(topic));
    for (i = 0; ok && i < json_array_size(members); i++)
        ok = json_is_string(json_array_get(members, i));
    json_decref(v);
    if (ok)
        return NULL;
    return v ? "is not an object with a list of string members and a string topic" : "is not valid JSON";
}
