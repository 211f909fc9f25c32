/*
 * hostfile.c - the user's own files (include/agentchat/hostfile.h): the
 * file-system code the host and the bindings need, kept here with the rest
 * of it (fsutil.h) so that nothing above src/fs/ touches a file directly.
 */
#include "agentchat/hostfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

int ac_host_read_fd(int fd, size_t cap, char **out, size_t *len)
{
    return ac_read_fd(fd, cap, out, len, NULL);
}

int ac_host_mkdirs(const char *path, mode_t mode)
{
    return ac_mkdirs(path, mode);
}

/* Open `rel`'s directories below dir without following symlinks; returns
 * the descriptor of the last directory and points *last at the final
 * component (NULL when rel names a directory: want_dir). -1 with errno. */
static int open_below(const char *dir, const char *rel, int want_dir, const char **last)
{
    int fd = ac_open_dir_path(dir);
    const char *p = rel;

    *last = NULL;
    while (fd != -1 && p && *p) {
        const char *slash = strchr(p, '/');
        char part[256];
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        int next;

        if (n == 0 || n >= sizeof part || (n == 1 && p[0] == '.') ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(fd);
            errno = EINVAL;     /* only plain names below dir */
            return -1;
        }
        if (!slash && !want_dir) {
            *last = p;
            return fd;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        next = ac_open_dir_at(fd, part);
        close(fd);
        fd = next;
        p = slash ? slash + 1 : NULL;
    }
    return fd;
}

int ac_host_dir_check(const char *dir)
{
    int fd = ac_open_dir_path(dir);
    if (fd == -1)
        return -1;
    close(fd);
    return 0;
}

struct listing {
    ac_host_entry_cb cb;
    void *ctx;
    int fd;
};

static int list_cb(void *ctx, const char *name, unsigned char type)
{
    struct listing *l = ctx;
    struct stat st;
    int64_t size = -1;
    if (type == DT_REG && fstatat(l->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        size = (int64_t)st.st_size;
    return l->cb(l->ctx, name, type == DT_REG ? "file" : type == DT_DIR ? "dir"
                              : type == DT_LNK ? "symlink" : "other", size);
}

int ac_host_dir_list(const char *dir, const char *sub, ac_host_entry_cb cb, void *ctx)
{
    struct listing l = { cb, ctx, -1 };
    const char *last;
    int fd = open_below(dir, sub, 1, &last);
    if (fd == -1)
        return -1;
    l.fd = fd;
    return ac_close_keep(fd, ac_dir_walk(fd, list_cb, &l) == -1 ? -1 : 0);
}

int ac_host_dir_read(const char *dir, const char *rel, size_t cap, char **out, size_t *len)
{
    const char *last;
    int fd = open_below(dir, rel, 0, &last);
    if (fd == -1)
        return -1;
    return ac_close_keep(fd, ac_read_file_at(fd, last, cap, out, len));
}
