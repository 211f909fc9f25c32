/*
 * test_interrupt.c - an interrupt signal that arrives just before a wait
 * starts must end the wait (clock.h, ac_clock_hold_interrupts).
 *
 * The window between "check the flag" and "block in the system call" is a
 * few instructions wide, too narrow to hit on purpose. The test widens it
 * to the whole call: SIGINT is blocked and raised first, so it is pending
 * and the handler has not run when the wait begins. A wait that checks the
 * flag and then blocks without unblocking the signal atomically sleeps its
 * whole timeout and returns "timed out" (0); a correct one returns -1 with
 * EINTR at once. The timeouts are long (30 s) so a broken wait is obvious,
 * but the checks are on the return values, never on elapsed time.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "agentchat/clock.h"
#include "fs/dirwatch.h"
#include "tap.h"
#include "tutil.h"

#define LONG_NS (30 * 1000000000LL)

/* SIGINT pending, blocked, the flag still clear; returns the old mask. */
static sigset_t pend_sigint(void)
{
    sigset_t set, old;
    ac_clock_clear_interrupt();
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, &old);
    raise(SIGINT);
    return old;
}

static void unpend(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
    ac_clock_clear_interrupt();
}

static void test_sleep(void)
{
    sigset_t old = pend_sigint();
    TAP_INT_EQ(ac_clock_interrupted(), 0, "sleep: the pending SIGINT has not run the handler yet");
    errno = 0;
    TAP_INT_EQ(ac_clock_sleep_ns(LONG_NS), -1, "sleep: a SIGINT pending at the start ends it");
    TAP_INT_EQ(errno, EINTR, "  with EINTR");
    TAP_INT_EQ(ac_clock_interrupted(), SIGINT, "  and the flag says SIGINT");
    unpend(&old);
    TAP_INT_EQ(ac_clock_sleep_ns(1000000), 0, "sleep: without a signal it sleeps to the end");
}

static void test_dirwatch(const char *mode, const char *root)
{
    int fd;
    struct ac_dirwatch *w;
    sigset_t old;

    setenv("AGENT_CHAT_WATCH", mode, 1);
    fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1)
        t_bail("open %s", root);
    w = ac_dirwatch_open(fd);
    TAP_OK(w != NULL, "%s: watch opened", mode);
    if (w) {
        TAP_STR_EQ(ac_dirwatch_kind(w), mode, "  of the kind asked for");
        old = pend_sigint();
        errno = 0;
        TAP_INT_EQ(ac_dirwatch_wait(w, LONG_NS), -1, "%s: a SIGINT pending at the start ends the wait", mode);
        TAP_INT_EQ(errno, EINTR, "  with EINTR");
        TAP_INT_EQ(ac_clock_interrupted(), SIGINT, "  and the flag says SIGINT");
        unpend(&old);
        TAP_INT_EQ(ac_dirwatch_wait(w, 1000000), 0, "%s: without a signal or a change it times out", mode);
        ac_dirwatch_close(w);
    }
    close(fd);
    unsetenv("AGENT_CHAT_WATCH");
}

int main(void)
{
    char *root = t_mkdtemp("interrupt");
    ac_clock_install_signals();
    test_sleep();
    test_dirwatch("dnotify", root);
    test_dirwatch("inotify", root);
    t_rm_rf(root);
    free(root);
    return tap_done();
}
