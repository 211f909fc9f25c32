/* clock.c - monotonic deadlines, ISO timestamps, interrupt flag. */
#include "agentchat/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
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
    struct timespec req;
    if (interrupt_signal) {
        errno = EINTR;
        return -1;
    }
    if (ns <= 0)
        return 0;
    req.tv_sec = (time_t)(ns / 1000000000);
    req.tv_nsec = (long)(ns % 1000000000);
    while (nanosleep(&req, &req) == -1) {
        if (errno != EINTR || interrupt_signal) {
            errno = EINTR;
            return -1;
        }
    }
    return 0;
}

static void on_signal(int sig)
{
    interrupt_signal = sig;
    if (interrupt_hook)
        interrupt_hook(sig);
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
