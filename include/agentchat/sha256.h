/*
 * sha256.h - SHA-256 (FIPS 180-4), for stable content keys such as the
 * import keys of `agent-chat import` (docs/import.md): a re-import must
 * recognise a message it already wrote, and a 256-bit digest makes an
 * accidental collision (a message silently taken for another) impossible
 * in practice. Not used for anything secret.
 *
 *     char hex[AC_SHA256_HEX + 1];
 *     ac_sha256_hex(data, len, hex);
 */
#ifndef AGENTCHAT_SHA256_H
#define AGENTCHAT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define AC_SHA256_LEN 32
#define AC_SHA256_HEX 64

void ac_sha256(const void *data, size_t len, unsigned char out[AC_SHA256_LEN]);

/* The digest as 64 lower-case hex digits and a NUL. */
void ac_sha256_hex(const void *data, size_t len, char out[AC_SHA256_HEX + 1]);

#endif
