/* clock.c - monotonic deadlines, ISO timestamps, interrupt flag. */
#define _GNU_SOURCE   /* ppoll */
#include "agentchat/clock.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <time.h>

static volatile sig_atomic_t interrupt_signal;
static void (*interrupt_hook)(int);

int64_t ac_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ac_clock_iso_now(char out[AC_ISO_MAX], int digits)
{
    struct timespec ts;
    struct tm tm;
    long off;
    size_t n;
    char sign = '+';

    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n = strftime(out, AC_ISO_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
    if (digits > 0)
        n += (size_t)snprintf(out + n, AC_ISO_MAX - n, ".%06ld", ts.tv_nsec / 1000);
    off = tm.tm_gmtoff;
    if (off < 0) {
        sign = '-';
        off = -off;
    }
    n += (size_t)snprintf(out + n, AC_ISO_MAX - n, "%c%02ld:%02ld", sign,
                          off / 3600, (off / 60) % 60);
    if (off % 60)
        snprintf(out + n, AC_ISO_MAX - n, ":%02ld", off % 60);
}

int ac_clock_sleep_ns(int64_t ns)
{
    int64_t deadline = ac_clock_mono_ns() + (ns > 0 ? ns : 0);
    sigset_t old, waiting;
    int rc = 0;

    ac_clock_hold_interrupts(&old, &waiting);
    for (;;) {
        int64_t left = deadline - ac_clock_mono_ns();
        struct timespec ts;
        if (interrupt_signal) {
            rc = -1;
            break;
        }
        if (left <= 0)
            break;
        ts.tv_sec = (time_t)(left / 1000000000);
        ts.tv_nsec = (long)(left % 1000000000);
        /* Unblocks the two signals only while it sleeps: one already
         * pending is delivered at once and ends the sleep. */
        if (pselect(0, NULL, NULL, NULL, &ts, &waiting) == -1 && errno != EINTR)
            break;
    }
    ac_clock_release_interrupts(&old);
    if (rc == -1)
        errno = EINTR;
    return rc;
}

int ac_clock_poll_until(struct pollfd *pfd, unsigned long n, int64_t deadline)
{
    sigset_t old, waiting;
    int rc;
    ac_clock_hold_interrupts(&old, &waiting);
    for (;;) {
        int64_t left = deadline - ac_clock_mono_ns();
        struct timespec ts;
        if (interrupt_signal) {
            errno = EINTR;
            rc = -1;
            break;
        }
        if (left < 0)
            left = 0;
        ts.tv_sec = (time_t)(left / 1000000000);
        ts.tv_nsec = (long)(left % 1000000000);
        /* Unblocks the two signals only while it waits (see above). */
        rc = ppoll(pfd, (nfds_t)n, &ts, &waiting);
        if (rc == -1 && errno == EINTR)
            continue;           /* re-checks the interrupt flag */
        if (rc > 0)
            rc = 1;
        break;
    }
    ac_clock_release_interrupts(&old);
    return rc;
}

static void interrupt_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

void ac_clock_hold_interrupts(sigset_t *old, sigset_t *waiting)
{
    sigset_t set;
    interrupt_set(&set);
    sigprocmask(SIG_BLOCK, &set, old);
    *waiting = *old;
    sigdelset(waiting, SIGINT);
    sigdelset(waiting, SIGTERM);
}

void ac_clock_release_interrupts(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

static void on_signal(int sig)
{
    interrupt_signal = sig;
    if (interrupt_hook)
        interrupt_hook(sig);
}

void ac_clock_note_interrupt(int sig)
{
    on_signal(sig);
}

long ac_clock_preemptions(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == -1)
        return -1;
    return ru.ru_nivcsw;
}

void ac_clock_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: blocking calls must return EINTR so loops notice. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

int ac_clock_interrupted(void)
{
    return interrupt_signal;
}

void ac_clock_clear_interrupt(void)
{
    interrupt_signal = 0;
}

void ac_clock_set_interrupt_hook(void (*hook)(int sig))
{
    interrupt_hook = hook;
}
