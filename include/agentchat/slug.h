/*
 * slug.h - the file-name slug of docs/format.md 3.3.
 *
 *     slugify(s) = re.sub("[^a-z0-9]+", "-", s.lower()).strip("-")[:40]
 *                  .rstrip("-") or "msg"
 *
 * Used for message file names (sender and title) and cursor file names.
 */
#ifndef AGENTCHAT_SLUG_H
#define AGENTCHAT_SLUG_H

#include <stddef.h>

#define AC_SLUG_MAX 40

/* Write the slug of s[0..len) into out (at least AC_SLUG_MAX + 1 bytes). */
void ac_slugify(const char *s, size_t len, char out[AC_SLUG_MAX + 1]);

#endif
