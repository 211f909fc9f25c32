/*
 * clock.h - time for deadlines and for timestamps written to files.
 *
 * Deadlines and timeouts use CLOCK_MONOTONIC: compute one absolute deadline
 * on entry and pass it down (s6-svwait). Timestamps written into files are
 * wall-clock ISO-8601 with the local UTC offset, as Python's
 * datetime.now().astimezone().isoformat() writes them.
 *
 * Interruption: SIGINT and SIGTERM only set a flag (ac_clock_interrupted);
 * every blocking loop of the runtime checks it and returns EINTR-style
 * errors so that cleanup (temp files, the seq lock) always runs.
 */
#ifndef AGENTCHAT_CLOCK_H
#define AGENTCHAT_CLOCK_H

#include <signal.h>
#include <stdint.h>

#define AC_ISO_MAX 48

/* Monotonic time in nanoseconds. */
int64_t ac_clock_mono_ns(void);

/* Current wall-clock time with the local offset, e.g.
 * "2026-11-30T05:01:23+00:00" (digits = 0) or with ".123456" (digits = 6). */
void ac_clock_iso_now(char out[AC_ISO_MAX], int digits);

/* Sleep for up to `ns`, waking early (returning -1, errno EINTR) when an
 * interrupt signal arrived, also one that arrives just before the sleep
 * starts (see ac_clock_hold_interrupts). */
int ac_clock_sleep_ns(int64_t ns);

struct pollfd;

/* ppoll the `n` descriptors of pfd until one is ready (1, see revents) or
 * the CLOCK_MONOTONIC deadline (0), or -1 with errno EINTR when an
 * interrupt signal arrived, also one that arrives just before the wait;
 * -1 with ppoll's errno otherwise. */
int ac_clock_poll_until(struct pollfd *pfd, unsigned long n, int64_t deadline);

/* A check of the interrupt flag followed by a blocking call loses a signal
 * that lands in between: the call then sleeps its whole timeout. Waiters
 * close that window by holding SIGINT and SIGTERM (blocked; *old gets the
 * previous mask, *waiting that mask with the two unblocked), checking the
 * flag, and blocking in a call that installs *waiting atomically
 * (pselect/ppoll), or in sigtimedwait on a set that includes the two,
 * passing a received one to ac_clock_note_interrupt. Always paired with
 * ac_clock_release_interrupts(old). */
void ac_clock_hold_interrupts(sigset_t *old, sigset_t *waiting);
void ac_clock_release_interrupts(const sigset_t *old);

/* Record an interrupt signal taken by sigtimedwait instead of the handler. */
void ac_clock_note_interrupt(int sig);

/* Involuntary context switches of this process so far (getrusage
 * ru_nivcsw): equal before and after a few system calls proves the process
 * was not preempted in between (see scan.h). */
long ac_clock_preemptions(void);

/* Install the SIGINT/SIGTERM flag handlers and ignore SIGPIPE. */
void ac_clock_install_signals(void);

/* The signal number that asked us to stop (SIGINT or SIGTERM), or 0. */
int ac_clock_interrupted(void);

/* Forget a delivered interrupt (used after it has been reported). */
void ac_clock_clear_interrupt(void);

/* Hook called from the signal handler after the flag is set (the Lua host
 * uses it to stop a running Lua chunk, like lua.c's laction). */
void ac_clock_set_interrupt_hook(void (*hook)(int sig));

#endif
