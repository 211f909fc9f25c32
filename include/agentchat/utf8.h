/*
 * utf8.h - strict UTF-8 decoding, as Python's 'utf-8' codec does it.
 *
 * Strict means: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
 * above U+10FFFF. Channel files written by the Python tool are always valid
 * UTF-8; files placed by hand may not be, and must never crash a reader.
 */
#ifndef AGENTCHAT_UTF8_H
#define AGENTCHAT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode one code point at s[0..len). Returns the number of bytes used
 * (1..4) and stores the code point, or returns 0 for an invalid or
 * truncated sequence (then *cp is the byte value). */
size_t ac_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/* True when the whole buffer is valid UTF-8. */
int ac_utf8_valid(const char *s, size_t len);

/* Encode cp into out (at least 4 bytes); returns the byte count. */
size_t ac_utf8_encode(uint32_t cp, char *out);

/* Turn file bytes into the text Python's Path.read_text() would give, made
 * total: universal newlines ("\r\n" and lone "\r" become "\n") and every
 * ill-formed sequence becomes one U+FFFD per maximal subpart, as Python's
 * errors="replace" does (where read_text() would raise). Returns a
 * malloc'ed NUL-terminated string (length in *outlen) or NULL (ENOMEM). */
char *ac_text_from_file(const char *s, size_t len, size_t *outlen);

/* Where the bytes s[0..len) stop being UTF-8, as Python's strict decoder
 * reports it: returns 0 when they are valid, else 1 with the offset of the
 * first ill-formed sequence in *pos (may be NULL) and, when buf is not
 * NULL, the text of Python's UnicodeDecodeError written to buf (cut to
 * bufsize), e.g. "'utf-8' codec can't decode byte 0xff in position 12:
 * invalid start byte", "... bytes in position 3-4: invalid continuation
 * byte", "... unexpected end of data". With `more` set the buffer is only
 * a prefix of the data: a sequence cut by its end is not an error. */
int ac_utf8_py_error(const char *s, size_t len, int more, size_t *pos,
                     char *buf, size_t bufsize);

/* The same bytes as Python reads them with errors="surrogateescape" (its
 * standard input and argv: each byte of an ill-formed sequence becomes one
 * lone surrogate U+DC80..U+DCFF), then encodes them back to strict UTF-8:
 * returns 0 when they are valid, else 1 and writes that UnicodeEncodeError
 * text to buf, e.g. "'utf-8' codec can't encode character '\udcff' in
 * position 4: surrogates not allowed" or "... characters in position 4-5:
 * ...", positions counted in characters and the first run of adjacent
 * escaped bytes reported whole. */
int ac_utf8_py_escape_error(const char *s, size_t len, char *buf, size_t bufsize);

#endif
