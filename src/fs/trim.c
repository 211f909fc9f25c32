/* trim.c - retention on the file-system backend: the store op msg_trim
 * (store.h; ac_chan_msg_trim checked the arguments). The message files
 * with seq <= through go first, then the ack directories .acks/<seq>/ of
 * those seqs.
 *
 * The high-water mark `.seqhigh` is raised to the newest seq under the seq
 * lock before anything goes, so no post of ours reuses a trimmed seq even
 * if the newest message were removed by hand later; the Python tool
 * numbers from the files it sees, which is why the newest always stays.
 * Nothing is followed: names are unlinked in the channel directory, ack
 * directories are opened with O_NOFOLLOW (fsutil.h), and an entry of an
 * ack directory that is not a regular file stays (the directory with it:
 * fsck shows what a person left there).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "scan.h"
#include "seq.h"
#include "store_fs.h"

#define ACKS_DIR ".acks"

/* Unlink the regular files of one ack directory (counting the records,
 * "<agent>.json"), then the directory itself when it is empty. */
struct ack_dir {
    int fd;
    size_t removed;
    int failed;                 /* errno of the first unlink that failed */
};

static int unlink_ack(void *ctx, const char *name, unsigned char type)
{
    struct ack_dir *d = ctx;
    size_t len = strlen(name);
    if (type != DT_REG)
        return 0;
    if (ac_sys_unlinkat(d->fd, name, 0) == -1) {
        if (errno != ENOENT && !d->failed)
            d->failed = errno;
        return 0;
    }
    if (name[0] != '.' && len > 5 && strcmp(name + len - 5, ".json") == 0)
        d->removed++;
    return 0;
}

/* The seq an entry of .acks/ is named after; 0 for any other name. */
static uint64_t ack_seq(const char *name)
{
    size_t n = strspn(name, "0123456789");
    if (n == 0 || n > 19 || name[n] != '\0' || name[0] == '0')
        return 0;
    return strtoull(name, NULL, 10);
}

struct acks_walk {
    int acks_fd;
    uint64_t through;
    size_t removed;
    int failed;
};

static int trim_ack_dir(void *ctx, const char *name, unsigned char type)
{
    struct acks_walk *w = ctx;
    struct ack_dir d = { -1, 0, 0 };
    uint64_t seq = ack_seq(name);
    if (type != DT_DIR || seq == 0 || seq > w->through)
        return 0;
    d.fd = ac_open_dir_at(w->acks_fd, name);
    if (d.fd == -1) {
        if (errno != ENOENT && !w->failed)
            w->failed = errno;
        return 0;
    }
    if (ac_dir_walk(d.fd, unlink_ack, &d) == -1 && !d.failed)
        d.failed = errno;
    if (!d.failed && ac_fsync_dir(d.fd) == -1)
        d.failed = errno;
    close(d.fd);
    w->removed += d.removed;
    if (d.failed) {
        if (!w->failed)
            w->failed = d.failed;
        return 0;
    }
    if (ac_sys_unlinkat(w->acks_fd, name, AT_REMOVEDIR) == -1 && errno != ENOENT &&
        errno != ENOTEMPTY && errno != EEXIST && !w->failed)
        w->failed = errno;
    return 0;
}

/* The acks of seqs 1..through: -1 with errno on the first failure (what
 * could go went). */
static int trim_acks(int chfd, uint64_t through, size_t *removed)
{
    struct acks_walk w = { -1, through, 0, 0 };
    int rc;
    w.acks_fd = ac_open_dir_at(chfd, ACKS_DIR);
    if (w.acks_fd == -1)
        return errno == ENOENT ? 0 : -1;
    rc = ac_dir_walk(w.acks_fd, trim_ack_dir, &w);
    if (rc == 0 && !w.failed && ac_fsync_dir(w.acks_fd) == -1)
        w.failed = errno;
    close(w.acks_fd);
    *removed = w.removed;
    if (rc == -1)
        return -1;
    if (w.failed) {
        errno = w.failed;
        return -1;
    }
    return 0;
}

int ac_fs_msg_trim(struct ac_chan *ch, uint64_t through, size_t *acks, struct ac_err *err)
{
    int fd = fs_chan_fd(ch);
    struct ac_seqlock lk;
    struct ac_listing l;
    size_t i;
    int rc;

    *acks = 0;
    memset(&l, 0, sizeof l);
    if (ac_seqlock_acquire(fd, &lk, err) == -1)
        return -1;
    rc = ac_scan_list(fd, 0, 0, &l, err);
    if (rc == 0 && ac_seq_high_raise(fd, l.max_seq, &lk) == -1)
        rc = ac_err_sys(err, errno, NULL, "could not keep the seq high-water mark of '%s'",
                        ch->name);
    ac_seqlock_release(&lk);
    if (rc == -1) {
        ac_listing_free(&l);
        return -1;
    }
    /* The listing is sorted by seq: the oldest go first. A directory
     * named like a message (no command makes one) stays. */
    for (i = 0; i < l.n && l.v[i].seq <= through; i++) {
        if (ac_sys_unlinkat(fd, l.v[i].name, 0) == -1 && errno != ENOENT && errno != EISDIR) {
            rc = ac_err_sys(err, errno, NULL, "could not remove message %s", l.v[i].name);
            break;
        }
    }
    ac_listing_free(&l);
    if (rc == 0 && ac_fsync_dir(fd) == -1)
        rc = ac_err_sys(err, errno, NULL, "could not sync channel '%s'", ch->name);
    if (rc == 0 && trim_acks(fd, through, acks) == -1)
        rc = ac_err_sys(err, errno, NULL, "could not remove the acks of channel '%s'", ch->name);
    return rc;
}
