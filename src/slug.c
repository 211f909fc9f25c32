/* slug.c - slugify; see include/agentchat/slug.h. */
#include "agentchat/slug.h"

#include <string.h>

#include "agentchat/utf8.h"

void ac_slugify(const char *s, size_t len, char out[AC_SLUG_MAX + 1])
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    int pending_dash = 0;

    /* Build the lowercased, dash-collapsed text, stopping once 40 characters
     * are certain (later characters cannot change the first 40). */
    while (i < len && o < AC_SLUG_MAX) {
        uint32_t cp;
        size_t n;
        char keep = 0, extra_dash = 0;

        if ((n = ac_utf8_next(p + i, len - i, &cp)) == 0)
            n = 1;              /* a stray byte is one character (its value in cp) */
        i += n;
        if (cp >= 'A' && cp <= 'Z')
            keep = (char)(cp - 'A' + 'a');
        else if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9'))
            keep = (char)cp;
        else if (cp == 0x212A)          /* KELVIN SIGN lowercases to 'k' */
            keep = 'k';
        else if (cp == 0x130) {         /* 'İ'.lower() == 'i' + U+0307 */
            keep = 'i';
            extra_dash = 1;
        }
        if (!keep) {
            pending_dash = 1;
            continue;
        }
        if (pending_dash && o > 0 && o < AC_SLUG_MAX)
            out[o++] = '-';
        pending_dash = extra_dash;
        if (o < AC_SLUG_MAX)
            out[o++] = keep;
    }
    /* Leading dashes were never written; drop trailing ones. */
    while (o > 0 && out[o - 1] == '-')
        o--;
    if (o == 0) {
        memcpy(out, "msg", 4);
        return;
    }
    out[o] = '\0';
}
