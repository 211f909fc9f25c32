/* frontmatter.c - read and write message frontmatter; see frontmatter.h. */
#include "agentchat/frontmatter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentchat/err.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"

/* ac_py_strip for a key or a value, with the usual cases inline (every
 * message read parses its frontmatter): no whitespace at the ends, or one
 * space before a value ("from: alice"). */
static int plain(unsigned char c)
{
    return c > ' ' && c < 0x7F;
}

static void strip(const char *s, size_t len, size_t *a, size_t *b)
{
    if (len > 0 && plain((unsigned char)s[len - 1])) {
        if (plain((unsigned char)s[0]) || (s[0] == ' ' && len > 1 && plain((unsigned char)s[1]))) {
            *a = plain((unsigned char)s[0]) ? 0 : 1;
            *b = len;
            return;
        }
    }
    ac_py_strip(s, len, a, b);
}

static int line_is_fence(const char *s, size_t len)
{
    size_t a, b;
    unsigned char c = len ? (unsigned char)s[0] : 0;
    /* The usual line starts with its key: a printable ASCII character
     * other than '-' can start neither the fence nor whitespace. */
    if (c > ' ' && c < 0x7F && c != '-')
        return 0;
    ac_py_strip(s, len, &a, &b);
    return b - a == 3 && memcmp(s + a, "---", 3) == 0;
}

int ac_fm_parse(const char *text, size_t len, struct ac_fm *fm)
{
    const char *p, *end = text + len, *nl;
    size_t cap = 0;

    memset(fm, 0, sizeof *fm);
    if (len < 3 || memcmp(text, "---", 3) != 0)
        return 0;
    nl = memchr(text, '\n', len);
    if (!nl)
        return 0;               /* a single line: never closed */
    for (p = nl + 1; p < end; p = nl + 1) {
        const char *colon;
        size_t llen, ks, ke, vs, ve;

        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        llen = (size_t)(nl - p);
        if (line_is_fence(p, llen)) {
            fm->present = 1;
            fm->body_off = nl < end ? (size_t)(nl + 1 - text) : len;
            return 0;
        }
        colon = memchr(p, ':', llen);
        if (colon) {
            if (fm->npairs == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                struct ac_fm_pair *np = realloc(fm->pairs, ncap * sizeof *np);
                if (!np) {
                    ac_fm_free(fm);
                    return -1;
                }
                fm->pairs = np;
                cap = ncap;
            }
            strip(p, (size_t)(colon - p), &ks, &ke);
            strip(colon + 1, (size_t)(nl - colon - 1), &vs, &ve);
            fm->pairs[fm->npairs].key = p + ks;
            fm->pairs[fm->npairs].key_len = ke - ks;
            fm->pairs[fm->npairs].value = colon + 1 + vs;
            fm->pairs[fm->npairs].value_len = ve - vs;
            fm->npairs++;
        }
        if (nl == end)
            break;
    }
    /* No closing fence: Python returns {} for the whole file. */
    ac_fm_free(fm);
    return 0;
}

void ac_fm_free(struct ac_fm *fm)
{
    free(fm->pairs);
    memset(fm, 0, sizeof *fm);
}

int ac_fm_get(const struct ac_fm *fm, const char *key,
              const char **value, size_t *value_len)
{
    size_t klen = strlen(key), i = fm->npairs;
    while (i-- > 0) {
        if (fm->pairs[i].key_len == klen && memcmp(fm->pairs[i].key, key, klen) == 0) {
            *value = fm->pairs[i].value;
            *value_len = fm->pairs[i].value_len;
            return 1;
        }
    }
    return 0;
}

int ac_fm_to_is_broadcast(const char *to, size_t len)
{
    return len == 0 || (len == 3 && memcmp(to, "all", 3) == 0) ||
           (len == 2 && memcmp(to, "[]", 2) == 0) || (len == 1 && to[0] == '*');
}

int ac_fm_is_relevant(const struct ac_fm *fm, const char *agent, size_t agent_len)
{
    const char *v, *p, *end;
    size_t vlen;
    int listed = 0;

    if (ac_fm_get(fm, "from", &v, &vlen) && vlen == agent_len &&
        memcmp(v, agent, agent_len) == 0)
        return 0;
    if (!ac_fm_get(fm, "to", &v, &vlen) || ac_fm_to_is_broadcast(v, vlen))
        return 1;
    /* Python: to.strip("[]").split(","), each entry stripped, blanks
     * dropped; a list that comes out empty (",", "[ , ]") is a broadcast. */
    p = v;
    end = v + vlen;
    while (p < end && (*p == '[' || *p == ']'))
        p++;
    while (end > p && (end[-1] == '[' || end[-1] == ']'))
        end--;
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t a, b;
        if (!comma)
            comma = end;
        ac_py_strip(p, (size_t)(comma - p), &a, &b);
        if (b > a) {
            if (b - a == agent_len && memcmp(p + a, agent, agent_len) == 0)
                return 1;
            listed = 1;
        }
        p = comma + 1;
    }
    return !listed;
}

/* Append a frontmatter value with every run of CR/LF turned into one space. */
static size_t put_value(char *out, const char *v)
{
    size_t o = 0;
    while (*v) {
        if (*v == '\r' || *v == '\n') {
            while (*v == '\r' || *v == '\n')
                v++;
            out[o++] = ' ';
        } else {
            out[o++] = *v++;
        }
    }
    return o;
}

static size_t put_line(char *out, const char *key, const char *value)
{
    size_t o = strlen(key);
    memcpy(out, key, o);
    out[o++] = ':';
    out[o++] = ' ';
    o += put_value(out + o, value);
    out[o++] = '\n';
    return o;
}

/* The keys of docs/format.md 3.3: an extra of that name would shadow the real
 * field for every reader (a later duplicate wins). */
static const char *const standard_keys[] = {
    "seq", "from", "to", "reply_to", "channel", "ts", "status", "title"
};

static int key_ok(const char *k, size_t len)
{
    size_t i;
    if (len == 0 || len > AC_FM_KEY_MAX || k[0] < 'a' || k[0] > 'z')
        return 0;
    for (i = 1; i < len; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
            return 0;
    return 1;
}

/* A control character anywhere (C0, DEL, C1): CR and LF would end the
 * frontmatter line (a forged "---" fence or key); the others have no
 * business in a one-line field. The buffer is valid UTF-8 here. */
static int has_control(const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = ac_utf8_decode((const unsigned char *)v + i, len - i, &cp);
        if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
            return 1;
        i += n;
    }
    return 0;
}

int ac_fm_extra_check(const struct ac_fm_field *extra, size_t n, char *why, size_t whysz)
{
    size_t i, j, a, b;

    if (n > AC_FM_EXTRA_MAX) {
        snprintf(why, whysz, "too many extra frontmatter fields (%zu, at most %d)", n,
                 AC_FM_EXTRA_MAX);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const char *k = extra[i].key, *v = extra[i].value;
        size_t klen = strlen(k), vlen = strlen(v);

        if (!key_ok(k, klen)) {
            char shown[128];
            snprintf(why, whysz, "frontmatter key must match [a-z][a-z0-9_]* (at most %d "
                     "bytes): '%s'", AC_FM_KEY_MAX, ac_err_quote(shown, sizeof shown, k, 80));
            return -1;
        }
        for (j = 0; j < sizeof standard_keys / sizeof standard_keys[0]; j++) {
            if (strcmp(k, standard_keys[j]) == 0) {
                snprintf(why, whysz, "frontmatter key '%s' is a standard field", k);
                return -1;
            }
        }
        for (j = 0; j < i; j++) {
            if (strcmp(k, extra[j].key) == 0) {
                snprintf(why, whysz, "frontmatter key '%s' is given twice", k);
                return -1;
            }
        }
        if (vlen > AC_FM_VALUE_MAX) {
            snprintf(why, whysz, "value of '%s' is longer than %d bytes", k, AC_FM_VALUE_MAX);
            return -1;
        }
        if (!ac_utf8_valid(v, vlen)) {
            snprintf(why, whysz, "value of '%s' is not valid UTF-8", k);
            return -1;
        }
        if (has_control(v, vlen)) {
            snprintf(why, whysz, "value of '%s' contains a line break or control character", k);
            return -1;
        }
        ac_py_strip(v, vlen, &a, &b);
        if (vlen > 0 && (a != 0 || b != vlen)) {
            snprintf(why, whysz, "value of '%s' has leading or trailing whitespace", k);
            return -1;
        }
    }
    return 0;
}

char *ac_msg_compose(const struct ac_msg_fields *f, size_t *len)
{
    size_t body_len = ac_py_rstrip_len(f->body, f->body_len), i;
    const char *to = f->to && f->to[0] ? f->to : "all";
    size_t cap = 256 + strlen(f->from) + strlen(to) + strlen(f->channel) +
                 (f->reply_to ? strlen(f->reply_to) : 0) +
                 strlen(f->ts) + strlen(f->status) + strlen(f->title) + body_len;
    char *out, num[32];
    size_t o = 0;

    for (i = 0; i < f->nextra; i++)
        cap += strlen(f->extra[i].key) + strlen(f->extra[i].value) + 4;
    out = malloc(cap);
    if (!out)
        return NULL;
    memcpy(out, "---\n", 4);
    o = 4;
    snprintf(num, sizeof num, "%llu", (unsigned long long)f->seq);
    o += put_line(out + o, "seq", num);
    o += put_line(out + o, "from", f->from);
    o += put_line(out + o, "to", to);
    if (f->reply_to)
        o += put_line(out + o, "reply_to", f->reply_to);
    o += put_line(out + o, "channel", f->channel);
    o += put_line(out + o, "ts", f->ts);
    o += put_line(out + o, "status", f->status);
    o += put_line(out + o, "title", f->title);
    for (i = 0; i < f->nextra; i++)
        o += put_line(out + o, f->extra[i].key, f->extra[i].value);
    memcpy(out + o, "---\n", 4);
    o += 4;
    memcpy(out + o, f->body, body_len);
    o += body_len;
    out[o++] = '\n';
    out[o] = '\0';
    *len = o;
    return out;
}
