/* dirwatch.c - wait for a directory change; see dirwatch.h. */
#define _GNU_SOURCE   /* F_NOTIFY, F_SETSIG, DN_* */
#include "dirwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "agentchat/clock.h"

enum { KIND_DNOTIFY, KIND_INOTIFY };

#define MAX_EXTRA 15

struct ac_dirwatch {
    int kind;
    int fd;                 /* dnotify: our own descriptor of the directory;
                               inotify: the instance */
    sigset_t old_mask;      /* dnotify: signal mask to restore */
    int extra[MAX_EXTRA];   /* dnotify: descriptors of ac_dirwatch_add's
                               directories (they share the signal) */
    int nextra;
};

/* One dnotify watch per process at a time: the signal is shared. */
static int dnotify_busy;

static int notify_signal(void)
{
    return SIGRTMIN + 4;
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, notify_signal());
    sigaddset(set, SIGIO);      /* sent instead when the RT queue overflows */
}

static void drain_signals(void)
{
    sigset_t set;
    struct timespec zero = { 0, 0 };
    signal_set(&set);
    while (sigtimedwait(&set, NULL, &zero) > 0) {
    }
}

/* Start dnotify on our own descriptor of dirfd's directory. Returns it,
 * or -1. The caller has blocked the signal. */
static int dnotify_fd(int dirfd)
{
    /* dnotify belongs to the open file: use a descriptor of our own. */
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        return -1;
    if (fcntl(fd, F_SETSIG, notify_signal()) == -1 ||
        fcntl(fd, F_NOTIFY, DN_CREATE | DN_DELETE | DN_RENAME | DN_MODIFY |
                            DN_ATTRIB | DN_MULTISHOT) == -1) {
        close(fd);
        return -1;
    }
    return fd;
}

static struct ac_dirwatch *open_dnotify(int dirfd)
{
    struct ac_dirwatch *w;
    sigset_t set;
    int fd;

    if (dnotify_busy)
        return NULL;
    w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    signal_set(&set);
    /* Block the signal first so it queues instead of killing us. */
    sigprocmask(SIG_BLOCK, &set, &w->old_mask);
    fd = dnotify_fd(dirfd);
    if (fd == -1) {
        sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
        free(w);
        return NULL;
    }
    w->kind = KIND_DNOTIFY;
    w->fd = fd;
    dnotify_busy = 1;
    return w;
}

/* Add an inotify watch of dirfd's directory to the instance ifd. */
static int inotify_watch(int ifd, int dirfd)
{
    char path[64];
    /* Watch the directory we hold open, not a path that may have been
     * replaced since. */
    snprintf(path, sizeof path, "/proc/self/fd/%d", dirfd);
    return inotify_add_watch(ifd, path, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                             IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |
                             IN_MOVE_SELF | IN_ONLYDIR) == -1 ? -1 : 0;
}

static struct ac_dirwatch *open_inotify(int dirfd)
{
    struct ac_dirwatch *w;
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), e;
    if (ifd == -1)
        return NULL;
    if (inotify_watch(ifd, dirfd) == -1 || !(w = calloc(1, sizeof *w))) {
        e = errno;
        close(ifd);
        errno = e;
        return NULL;
    }
    w->kind = KIND_INOTIFY;
    w->fd = ifd;
    return w;
}

struct ac_dirwatch *ac_dirwatch_open(int dirfd)
{
    const char *force = getenv("AGENT_CHAT_WATCH");   /* tests: dnotify|inotify|none */
    struct ac_dirwatch *w = NULL;
    if (force && strcmp(force, "none") == 0)
        return NULL;
    if (!(force && strcmp(force, "inotify") == 0))
        w = open_dnotify(dirfd);
    if (!w && !(force && strcmp(force, "dnotify") == 0))
        w = open_inotify(dirfd);
    return w;
}

static struct timespec to_timespec(int64_t ns)
{
    struct timespec ts;
    if (ns < 0)
        ns = 0;
    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

/* SIGINT and SIGTERM are held (clock.h) and waited for with the change
 * signals, so one that arrives just before the wait ends it. */
static int wait_dnotify(int64_t deadline)
{
    sigset_t set, old, waiting;
    int rc;
    signal_set(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    ac_clock_hold_interrupts(&old, &waiting);
    for (;;) {
        struct timespec ts = to_timespec(deadline - ac_clock_mono_ns());
        siginfo_t info;
        int sig;
        if (ac_clock_interrupted()) {
            errno = EINTR;
            rc = -1;
            break;
        }
        sig = sigtimedwait(&set, &info, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            ac_clock_note_interrupt(sig);
            continue;
        }
        if (sig == -1) {
            if (errno == EINTR)
                continue;       /* re-checks the interrupt flag */
            rc = errno == EAGAIN ? 0 : -1;
            break;
        }
        /* Coalesce the burst of signals one change usually makes. */
        drain_signals();
        rc = 1;
        break;
    }
    ac_clock_release_interrupts(&old);
    return rc;
}

static void drain_fd(int fd)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

static int wait_inotify(struct ac_dirwatch *w, int64_t deadline)
{
    struct pollfd pfd = { w->fd, POLLIN, 0 };
    int rc = ac_clock_poll_until(&pfd, 1, deadline);
    if (rc == 1)
        drain_fd(w->fd);
    return rc;
}

int ac_dirwatch_add(struct ac_dirwatch *w, int dirfd)
{
    int fd;
    if (!w) {
        errno = EINVAL;
        return -1;
    }
    if (w->kind == KIND_INOTIFY)
        return inotify_watch(w->fd, dirfd);
    if (w->nextra == MAX_EXTRA) {
        errno = EMFILE;
        return -1;
    }
    fd = dnotify_fd(dirfd);     /* the signal is blocked since open */
    if (fd == -1)
        return -1;
    w->extra[w->nextra++] = fd;
    return 0;
}

int ac_dirwatch_wait(struct ac_dirwatch *w, int64_t timeout_ns)
{
    int64_t deadline = ac_clock_mono_ns() + (timeout_ns > 0 ? timeout_ns : 0);
    if (!w)
        return ac_clock_sleep_ns(timeout_ns) == -1 ? -1 : 0;
    return w->kind == KIND_DNOTIFY ? wait_dnotify(deadline) : wait_inotify(w, deadline);
}

int ac_dirwatch_wait_fd(struct ac_dirwatch *w, int64_t timeout_ns, int fd)
{
    int64_t deadline = ac_clock_mono_ns() + (timeout_ns > 0 ? timeout_ns : 0);
    struct pollfd pfd[2];
    nfds_t n = 0;
    int mine = -1, sfd = -1, rc;

    if (fd < 0)
        return ac_dirwatch_wait(w, timeout_ns);
    if (w && w->kind == KIND_INOTIFY) {
        mine = w->fd;
    } else if (w) {
        /* The dnotify signals are blocked since open: a signalfd reads
         * them, so that one ppoll waits for them and for fd. */
        sigset_t set;
        signal_set(&set);
        sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (sfd == -1)
            return -1;
        mine = sfd;
    }
    if (mine != -1) {
        pfd[n].fd = mine;
        pfd[n].events = POLLIN;
        pfd[n++].revents = 0;
    }
    pfd[n].fd = fd;
    pfd[n].events = POLLIN;
    pfd[n++].revents = 0;
    rc = ac_clock_poll_until(pfd, n, deadline);
    if (rc == 1) {
        rc = 0;
        if (mine != -1 && pfd[0].revents) {
            drain_fd(mine);
            if (sfd != -1)
                drain_signals();
            rc |= 1;
        }
        if (pfd[n - 1].revents)
            rc |= 2;
    }
    if (sfd != -1)
        close(sfd);
    return rc;
}

int ac_dirwatch_wait_many(struct ac_dirwatch *const *ws, size_t n, int64_t timeout_ns)
{
    int64_t deadline = ac_clock_mono_ns() + (timeout_ns > 0 ? timeout_ns : 0);
    struct pollfd *pfd;
    size_t i, np = 0;
    int sfd = -1, rc = -1;

    pfd = calloc(n ? n : 1, sizeof *pfd);
    if (!pfd)
        return -1;
    for (i = 0; i < n; i++) {
        int fd;
        if (!ws[i])
            continue;
        if (ws[i]->kind == KIND_INOTIFY) {
            fd = ws[i]->fd;
        } else if (sfd == -1) {
            /* As in ac_dirwatch_wait_fd: the blocked dnotify signals are
             * read through a signalfd, so one ppoll waits for all. */
            sigset_t set;
            signal_set(&set);
            sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
            if (sfd == -1)
                goto out;
            fd = sfd;
        } else {
            continue;           /* the one dnotify signal is polled already */
        }
        pfd[np].fd = fd;
        pfd[np].events = POLLIN;
        pfd[np++].revents = 0;
    }
    rc = ac_clock_poll_until(pfd, (nfds_t)np, deadline);
    if (rc > 0) {
        for (i = 0; i < np; i++) {
            if (pfd[i].revents)
                drain_fd(pfd[i].fd);
        }
        if (sfd != -1)
            drain_signals();
        rc = 1;
    }
out:
    if (sfd != -1)
        close(sfd);
    free(pfd);
    return rc;
}

void ac_dirwatch_close(struct ac_dirwatch *w)
{
    if (!w)
        return;
    if (w->kind == KIND_DNOTIFY) {
        int i;
        for (i = 0; i < w->nextra; i++) {
            fcntl(w->extra[i], F_NOTIFY, 0);
            close(w->extra[i]);
        }
        fcntl(w->fd, F_NOTIFY, 0);
        close(w->fd);
        drain_signals();
        sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
        dnotify_busy = 0;
    } else {
        close(w->fd);
    }
    free(w);
}

struct ac_dirwatch *ac_dirwatch_open_inotify(int dirfd)
{
    return open_inotify(dirfd);
}

int ac_dirwatch_fd(const struct ac_dirwatch *w)
{
    return w && w->kind == KIND_INOTIFY ? w->fd : -1;
}

const char *ac_dirwatch_kind(const struct ac_dirwatch *w)
{
    if (!w)
        return "none";
    return w->kind == KIND_DNOTIFY ? "dnotify" : "inotify";
}
