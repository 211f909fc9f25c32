/*
 * frozen.c - an LD_PRELOAD shim that freezes the wall clock and the random
 * ids of one agent-chat process, for the on-disk byte-identity test
 * (tests/functional/identity_spec.lua).
 *
 * The test records the whole folder a fixed workload leaves behind and
 * compares it byte for byte with a golden recorded by an older build. Two
 * things would differ from run to run: timestamps (ISO-8601 lines and JSON
 * fields from CLOCK_REALTIME) and uuid4 ids (lock ids, transaction ids,
 * request ids, all from getrandom()). The shim replaces both, and only
 * when its variables are set, so the binary under test needs no test hook
 * and an old binary can record the golden:
 *
 *   AGENT_CHAT_FROZEN_US    the wall clock, microseconds since 1970: what
 *                           clock_gettime(CLOCK_REALTIME), gettimeofday()
 *                           and time() return (CLOCK_MONOTONIC and the
 *                           coarse clock stay real: deadlines and the scan
 *                           stamp's cache checks keep working)
 *   AGENT_CHAT_FROZEN_SEED  the seed of the bytes getrandom() returns (a
 *                           splitmix64 stream: the k-th call of a process
 *                           gets the same bytes on every run)
 *
 * Not part of the product: built as build/tests/libfrozen.so by `make
 * tests`, never linked into agent-chat.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

static int frozen_us(int64_t *us)
{
    const char *v = getenv("AGENT_CHAT_FROZEN_US");
    if (!v || !*v)
        return 0;
    *us = strtoll(v, NULL, 10);
    return 1;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    int64_t us;
    if (clk == CLOCK_REALTIME && frozen_us(&us)) {
        ts->tv_sec = (time_t)(us / 1000000);
        ts->tv_nsec = (long)(us % 1000000) * 1000;
        return 0;
    }
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return real(clk, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    static int (*real)(struct timeval *restrict, void *restrict);
    int64_t us;
    if (frozen_us(&us)) {
        tv->tv_sec = (time_t)(us / 1000000);
        tv->tv_usec = (suseconds_t)(us % 1000000);
        return 0;
    }
    if (!real)
        real = (int (*)(struct timeval *restrict, void *restrict))dlsym(RTLD_NEXT, "gettimeofday");
    return real(tv, tz);
}

time_t time(time_t *t)
{
    static time_t (*real)(time_t *);
    int64_t us;
    if (frozen_us(&us)) {
        time_t s = (time_t)(us / 1000000);
        if (t)
            *t = s;
        return s;
    }
    if (!real)
        real = (time_t (*)(time_t *))dlsym(RTLD_NEXT, "time");
    return real(t);
}

ssize_t getrandom(void *buf, size_t n, unsigned int flags)
{
    static ssize_t (*real)(void *, size_t, unsigned int);
    static uint64_t state;
    static int seeded;
    const char *seed = getenv("AGENT_CHAT_FROZEN_SEED");
    unsigned char *p = buf;
    size_t i;

    if (!seed || !*seed) {
        if (!real)
            real = (ssize_t (*)(void *, size_t, unsigned int))dlsym(RTLD_NEXT, "getrandom");
        return real(buf, n, flags);
    }
    if (!seeded) {
        state = strtoull(seed, NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
        seeded = 1;
    }
    for (i = 0; i < n; i++) {
        uint64_t z;
        if (i % 8 == 0) {
            state += 0x9e3779b97f4a7c15ULL;
            z = state;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            memcpy(p + i, &z, n - i < 8 ? n - i : 8);
        }
    }
    return (ssize_t)n;
}
