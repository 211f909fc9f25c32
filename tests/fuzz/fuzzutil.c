/* fuzzutil.c - helpers shared by the fuzz targets; see fuzz.h. */
#define _XOPEN_SOURCE 700     /* nftw */
#include "fuzz.h"

#include <ftw.h>
#include <unistd.h>

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL, "out of memory");
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static char tmpdir[256];

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static void rm_tmpdir(void)
{
    if (tmpdir[0])
        nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    if (tmpdir[0])
        return tmpdir;
    if (!base || !*base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/ac-fuzz.XXXXXX", base);
    FUZZ_CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp %s failed", tmpdir);
    atexit(rm_tmpdir);
    return tmpdir;
}

size_t fuzz_split(const uint8_t *data, size_t size, char **parts, size_t max)
{
    size_t n = 0, start = 0, i;
    for (i = 0; i <= size && n < max; i++) {
        if (i == size || data[i] == '\0') {
            parts[n++] = fuzz_strndup(data + start, i - start);
            start = i + 1;
        }
    }
    return n;
}

void fuzz_free_parts(char **parts, size_t n)
{
    while (n-- > 0)
        free(parts[n]);
}
