/*
 * codec.h - base64 (RFC 4648, with padding) and random ids.
 *
 * Journals carry file contents as base64; transaction and lock ids are
 * uuid4 hex (32 lower-case hex digits), as Python's uuid.uuid4().hex.
 */
#ifndef AGENTCHAT_CODEC_H
#define AGENTCHAT_CODEC_H

#include <stddef.h>

/* Encode `len` bytes. Returns a malloc'ed NUL-terminated string or NULL. */
char *ac_b64_encode(const void *data, size_t len);

/* Decode strictly, as Python's base64.b64decode(text, validate=True)
 * (alphabet A-Z a-z 0-9 + /, length a multiple of 4, padding only at the
 * end; one or two extra '=' after a complete last group are ignored). Returns a malloc'ed buffer (NUL-terminated,
 * length in *outlen) or NULL (errno EINVAL for bad input, ENOMEM). */
char *ac_b64_decode(const char *text, size_t len, size_t *outlen);

/* A new uuid4 as 32 lower-case hex digits (out: at least 33 bytes).
 * Returns 0, or -1 with errno when no randomness is available. */
int ac_uuid4_hex(char out[33]);

#endif
