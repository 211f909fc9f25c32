/*
 * fuzz_frontmatter.c - the message file reader (docs/format.md 3.3): bytes as read
 * from disk go through ac_text_from_file (strict UTF-8 with U+FFFD, CR/LF
 * to LF) and ac_fm_parse, as src/store.c does for every message.
 *
 * Properties checked besides "no crash, no leak, no undefined behaviour":
 *   - the decoded text is valid UTF-8 without CR, at most 3 bytes per input
 *     byte;
 *   - every key and value lies inside the text, on one line, stripped, and
 *     a closed block's body starts right after a line;
 *   - composing a message from fuzzed field values (the input split at NUL
 *     bytes) and reading it back yields exactly the fields written, in
 *     order, with their values (runs of CR/LF as one space, invalid UTF-8
 *     as U+FFFD, stripped): no value can inject a frontmatter line or close
 *     the block early.
 * And the seq readers a channel has besides the frontmatter (issue 14.2,
 * 14.3): ac_seq_parse (.seqhigh) accepts exactly blanks, ASCII digits,
 * blanks, with a value at most 2^63 - 1 that prints back to those digits
 * (ERANGE for larger decimals, EINVAL for the rest); ac_scan_parse_name of
 * "<input>-x.md" never gives a seq above 2^63 - 1 as a message.
 */
#include "fuzz.h"

#include <errno.h>
#include <inttypes.h>

#include "agentchat/frontmatter.h"
#include "agentchat/pystr.h"
#include "agentchat/utf8.h"
#include "fs/scan.h"
#include "fs/seq.h"

static void check_parse(const char *text, size_t len)
{
    struct ac_fm fm;
    const char *v;
    size_t vlen, i;

    if (ac_fm_parse(text, len, &fm) != 0)
        return;                         /* out of memory */
    if (!fm.present)
        FUZZ_CHECK(fm.npairs == 0 && fm.pairs == NULL && fm.body_off == 0,
                   "pairs or a body offset without a closed block");
    else
        FUZZ_CHECK(fm.body_off >= 6 && fm.body_off <= len &&
                       (fm.body_off == len || text[fm.body_off - 1] == '\n'),
                   "body offset %zu of %zu not after a fence line", fm.body_off, len);
    for (i = 0; i < fm.npairs; i++) {
        const struct ac_fm_pair *p = &fm.pairs[i];
        size_t a, b;
        FUZZ_CHECK(p->key >= text && p->key + p->key_len <= text + len, "key outside");
        FUZZ_CHECK(p->value >= text && p->value + p->value_len <= text + len, "value outside");
        FUZZ_CHECK(!memchr(p->key, '\n', p->key_len) && !memchr(p->value, '\n', p->value_len),
                   "pair %zu spans lines", i);
        FUZZ_CHECK(!memchr(p->key, ':', p->key_len), "key %zu holds ':'", i);
        FUZZ_CHECK(p->key < p->value, "value %zu before its key", i);
        ac_py_strip(p->key, p->key_len, &a, &b);
        FUZZ_CHECK(a == 0 && b == p->key_len, "key %zu not stripped", i);
        ac_py_strip(p->value, p->value_len, &a, &b);
        FUZZ_CHECK(a == 0 && b == p->value_len, "value %zu not stripped", i);
    }
    if (ac_fm_get(&fm, "to", &v, &vlen))
        (void)ac_fm_to_is_broadcast(v, vlen);
    (void)ac_fm_is_relevant(&fm, "alice", 5);
    if (fm.npairs)
        (void)ac_fm_is_relevant(&fm, fm.pairs[0].value, fm.pairs[0].value_len);
    ac_fm_free(&fm);
}

/* What a value written by ac_msg_compose reads back as: runs of CR/LF
 * become one space, the bytes are decoded like the file's (invalid UTF-8
 * becomes U+FFFD), then Python's strip(). The value sits between ": " and
 * "\n" in the file, so decoding it alone gives the same text. */
static char *expected_value(const char *v, size_t *len)
{
    size_t n = strlen(v), o = 0, a, b, dlen;
    char *out = malloc(n + 1), *dec;
    FUZZ_CHECK(out != NULL, "out of memory");
    while (*v) {
        if (*v == '\r' || *v == '\n') {
            while (*v == '\r' || *v == '\n')
                v++;
            out[o++] = ' ';
        } else {
            out[o++] = *v++;
        }
    }
    dec = ac_text_from_file(out, o, &dlen);
    FUZZ_CHECK(dec != NULL, "out of memory");
    free(out);
    ac_py_strip(dec, dlen, &a, &b);
    memmove(dec, dec + a, b - a);
    *len = b - a;
    dec[*len] = '\0';
    return dec;
}

static void check_compose(const uint8_t *data, size_t size)
{
    static const char *const keys[] = { "seq", "from", "to", "reply_to", "channel", "ts",
                                        "status", "title" };
    char *parts[8] = { 0 };
    const char *values[8];
    size_t n = fuzz_split(data, size, parts, 8), len, tlen, i, k;
    struct ac_msg_fields f;
    struct ac_fm fm;
    char *msg, *text;

    for (i = 0; i < 8; i++)
        values[i] = i < n ? parts[i] : "";
    memset(&f, 0, sizeof f);
    f.seq = size;
    f.from = values[0];
    f.to = values[1];
    f.reply_to = n > 2 && values[2][0] ? values[2] : NULL;
    f.channel = values[3];
    f.ts = values[4];
    f.status = values[5];
    f.title = values[6];
    f.body = values[7];
    f.body_len = strlen(values[7]);
    msg = ac_msg_compose(&f, &len);
    FUZZ_CHECK(msg != NULL, "compose failed");
    text = ac_text_from_file(msg, len, &tlen);
    FUZZ_CHECK(text != NULL, "out of memory");
    FUZZ_CHECK(ac_fm_parse(text, tlen, &fm) == 0, "out of memory");
    FUZZ_CHECK(fm.present, "composed message has no closed frontmatter");
    FUZZ_CHECK(fm.npairs == (f.reply_to ? 8u : 7u), "composed message reads back as %zu pairs",
               fm.npairs);
    for (i = 0, k = 0; k < 8; k++) {
        const char *want;
        char num[32];
        size_t wlen;
        char *exp = NULL;
        if (k == 3 && !f.reply_to)
            continue;
        FUZZ_CHECK(fm.pairs[i].key_len == strlen(keys[k]) &&
                       memcmp(fm.pairs[i].key, keys[k], fm.pairs[i].key_len) == 0,
                   "pair %zu is not %s", i, keys[k]);
        if (k == 0) {
            snprintf(num, sizeof num, "%zu", size);
            want = num;
            wlen = strlen(num);
        } else {
            const char *src = k == 1 ? f.from : k == 2 ? (f.to[0] ? f.to : "all")
                            : k == 3 ? f.reply_to : k == 4 ? f.channel : k == 5 ? f.ts
                            : k == 6 ? f.status : f.title;
            exp = expected_value(src, &wlen);
            want = exp;
        }
        FUZZ_CHECK(fm.pairs[i].value_len == wlen && memcmp(fm.pairs[i].value, want, wlen) == 0,
                   "%s reads back as '%.*s', wrote '%s'", keys[k],
                   (int)fm.pairs[i].value_len, fm.pairs[i].value, want);
        free(exp);
        i++;
    }
    ac_fm_free(&fm);
    free(text);
    free(msg);
    fuzz_free_parts(parts, n);
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void check_seqs(const char *s, size_t len)
{
    size_t a = 0, b = len, i;
    uint64_t v;
    int digits = 1;
    char printed[32], name[600];

    while (a < b && blank(s[a]))
        a++;
    while (b > a && blank(s[b - 1]))
        b--;
    for (i = a; i < b; i++)
        digits = digits && s[i] >= '0' && s[i] <= '9';
    digits = digits && a < b;
    errno = 0;
    if (ac_seq_parse(s, len, &v) == 0) {
        FUZZ_CHECK(digits, "ac_seq_parse accepted a non-decimal");
        FUZZ_CHECK(v <= AC_SEQ_MAX, "ac_seq_parse gave %" PRIu64, v);
        while (a + 1 < b && s[a] == '0')
            a++;
        snprintf(printed, sizeof printed, "%" PRIu64, v);
        FUZZ_CHECK(strlen(printed) == b - a && memcmp(printed, s + a, b - a) == 0,
                   "ac_seq_parse: %" PRIu64 " is not the text's value", v);
    } else {
        FUZZ_CHECK(errno == (digits ? ERANGE : EINVAL), "ac_seq_parse failed with errno %d", errno);
    }
    if (len < sizeof name - 8 && !memchr(s, '\0', len)) {
        snprintf(name, sizeof name, "%.*s-x.md", (int)len, s);
        if (ac_scan_parse_name(name, &v) == 1)
            FUZZ_CHECK(v <= AC_SEQ_MAX, "a message name with seq %" PRIu64, v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t tlen, i;
    char *text = ac_text_from_file((const char *)data, size, &tlen);

    FUZZ_CHECK(text != NULL, "out of memory");
    FUZZ_CHECK(tlen <= 3 * size, "decoded text grew to %zu from %zu", tlen, size);
    FUZZ_CHECK(text[tlen] == '\0', "decoded text not terminated");
    FUZZ_CHECK(ac_utf8_valid(text, tlen), "decoded text is not UTF-8");
    for (i = 0; i < tlen; i++)
        FUZZ_CHECK(text[i] != '\r', "CR left at %zu", i);
    check_parse(text, tlen);
    /* The raw bytes too: callers that have normalised newlines themselves. */
    check_parse((const char *)data, size);
    free(text);
    check_compose(data, size);
    check_seqs((const char *)data, size);
    return 0;
}
