/*
 * store_fs.h - internals of the file-system backend shared by its files
 * (store_fs.c: channels, messages, cursors, notification, mutexes; records.c:
 * the record families). Private to src/fs/.
 *
 * A channel is the directory <root>/<channel>; the backend keeps it open
 * for the channel's lifetime and reaches everything below it with *at()
 * calls and O_NOFOLLOW (fsutil.h), so a symlink planted in a channel never
 * leads a command out of it.
 */
#ifndef AGENTCHAT_FS_STORE_FS_H
#define AGENTCHAT_FS_STORE_FS_H

#include "agentchat/store.h"

struct fs_chan {
    struct ac_chan base;
    int fd;                   /* the channel directory */
};

/* The files of the channel directory itself that are written through
 * ac_write_atomic (messages go through seq reservations instead), so the
 * only temps there that are ours (fsck, the post sweep): _meta.json,
 * .seqhigh, state.md. NULL-terminated. */
extern const char *const ac_channel_temp_targets[];

/* The channel directory of a channel of this backend. */
static inline int fs_chan_fd(struct ac_chan *ch)
{
    return ((struct fs_chan *)ch)->fd;
}

/* Where each family lives (records.c). */
struct fs_family {
    const char *dir;          /* directory below the channel */
    const char *noun;         /* for messages: "task record" */
    const char *skip;         /* first bytes that make a name not a record */
    size_t cap;               /* largest record read */
    const char *fault_tag;    /* of rec_create's atomic write */
};
extern const struct fs_family ac_fs_families[AC_NFAMILIES];

/* The record operations of the ops table (records.c). */
int ac_fs_rec_scan(struct ac_chan *ch, int family, const char *prefix, int flags,
                   struct ac_recset *out, struct ac_err *err);
int ac_fs_rec_read(struct ac_chan *ch, int family, const char *name, struct ac_record *out,
                   struct ac_err *err);
int ac_fs_rec_create(struct ac_chan *ch, int family, const char *name, const char *data,
                     size_t len, struct ac_err *err);
void ac_fs_rec_where(struct ac_chan *ch, int family, const char *name, char *out, size_t size);

/* Retention, the op msg_trim (trim.c). */
int ac_fs_msg_trim(struct ac_chan *ch, uint64_t through, size_t *acks, struct ac_err *err);

/* The backend's fsck (fsck.c). */
int ac_fs_fsck(struct ac_chan *ch, int flags, struct ac_fsck_report *r, struct ac_err *err);

/* Open the directory of `family` for record `name` (acks: .acks/<seq>/),
 * creating it (durably: its parent is synced) when `make`. *base points
 * at the record's file-name stem inside name. Returns the descriptor or
 * -1 with errno (ENOENT: it does not exist; EINVAL: a name that is not a
 * record name of the family). */
int ac_fs_family_dir(int chfd, int family, const char *name, int make, const char **base);

#endif
