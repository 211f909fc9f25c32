/*
 * frontmatter.h - the message file format of docs/format.md 3.3.
 *
 * Reading is tolerant because it defines compatibility with every file the
 * Python tool or a human ever wrote:
 *   - the first line must start with "---", else there is no frontmatter;
 *   - lines are read until one equals "---" after Python str.strip(); with no
 *     such line there is no frontmatter either;
 *   - lines without ':' are skipped; others split at the first ':' and both
 *     sides are stripped; a later duplicate key wins (a Python dict).
 * Writing is exact: field order seq, from, to, [reply_to], channel, ts,
 * status, title; "key: value" with one space; runs of CR/LF inside a value
 * become one space (no frontmatter injection); the body is right-stripped
 * and followed by one "\n".
 *
 * Extra fields (typed messages, docs/protocols.md: type, request_id, role,
 * ...) are written after title, in the order given, so every reader of the
 * Python tool's format still finds its eight fields where it expects them
 * and simply keeps the others. A message without extras is byte-identical
 * to one written before extras existed. Extras are checked, not repaired
 * (ac_fm_extra_check): a key that is not [a-z][a-z0-9_]* or that names a
 * standard field, a value with a control character (a line break would
 * end the line and could forge a fence or a key), leading or trailing
 * whitespace (the reader strips it, so it would not survive) or invalid
 * UTF-8 is refused.
 *
 * Calling sequence (reading):
 *     struct ac_fm fm;
 *     ac_fm_parse(text, len, &fm);      // text must outlive fm
 *     const char *v; size_t vlen;
 *     if (ac_fm_get(&fm, "from", &v, &vlen)) ...
 *     ac_fm_free(&fm);
 */
#ifndef AGENTCHAT_FRONTMATTER_H
#define AGENTCHAT_FRONTMATTER_H

#include <stddef.h>
#include <stdint.h>

struct ac_fm_pair {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
};

struct ac_fm {
    int present;                 /* a closed frontmatter block was found */
    struct ac_fm_pair *pairs;    /* in file order, duplicates included */
    size_t npairs;
    size_t body_off;             /* where the body starts: after the closing
                                    fence line, or 0 when there is none */
};

/* Parse the frontmatter of text[0..len) (newlines already normalised to
 * "\n"). Returns 0, or -1 on allocation failure (then fm is empty). */
int ac_fm_parse(const char *text, size_t len, struct ac_fm *fm);
void ac_fm_free(struct ac_fm *fm);

/* Last value of `key`; returns 1 if present. */
int ac_fm_get(const struct ac_fm *fm, const char *key,
              const char **value, size_t *value_len);

/* docs/format.md 4 relevance: a message is for `agent` when its `from` differs
 * and its `to` is a broadcast (missing, "", "all", "[]", "*", or a list
 * with no name in it such as "," or "[ , ]") or lists the agent (brackets
 * stripped, split on ',', entries trimmed). Exact, case-sensitive
 * comparison. */
int ac_fm_is_relevant(const struct ac_fm *fm, const char *agent, size_t agent_len);

/* True when `to` is a broadcast form. */
int ac_fm_to_is_broadcast(const char *to, size_t len);

/* An extra frontmatter pair (NUL-terminated key and value). */
struct ac_fm_field {
    const char *key;
    const char *value;
};

#define AC_FM_EXTRA_MAX 32      /* extra pairs per message */
#define AC_FM_KEY_MAX 64        /* bytes of an extra key */
#define AC_FM_VALUE_MAX 4096    /* bytes of an extra value */

/* Check n extra pairs against the rules above (and the limits). Returns 0,
 * or -1 with a one-line reason (NUL-terminated, cut to whysz) in why. */
int ac_fm_extra_check(const struct ac_fm_field *extra, size_t n, char *why, size_t whysz);

struct ac_msg_fields {
    uint64_t seq;
    const char *from;
    const char *to;          /* "" is written as "all" */
    const char *reply_to;    /* decimal text to write, NULL for none (the
                                caller drops reply 0; Python ints have no
                                size limit, so this is text) */
    const char *channel;
    const char *ts;
    const char *status;
    const char *title;
    const char *body;
    size_t body_len;
    const struct ac_fm_field *extra;   /* written after title, in order */
    size_t nextra;                     /* (checked by the caller) */
};

/* Compose the exact file text. Returns a malloc'ed NUL-terminated buffer
 * (length in *len) or NULL on allocation failure. */
char *ac_msg_compose(const struct ac_msg_fields *f, size_t *len);

#endif
