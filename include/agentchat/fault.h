/*
 * fault.h - fault injection for crash and error tests.
 *
 * Two kinds of fault points, one mechanism:
 *
 *   named points   the runtime calls AC_FAULT("post.dirsync") at every
 *                  durable step of a mutation ("lease.journal.prepared.
 *                  publish", "pathlock.record.unlink", ...);
 *   system calls   every call that changes a channel on disk goes through
 *                  a wrapper of fsutil.h that first reaches the point
 *                  "sys.<call>", one of
 *                      sys.create  open(O_CREAT): a new file, or the
 *                                  lock file of a mutex (created when
 *                                  missing, so opened so every time)
 *                      sys.write   one ac_write_all() of a buffer
 *                      sys.fsync   fsync of a file or a directory (reached
 *                                  even when AGENT_CHAT_TEST_FSYNC=0 skips
 *                                  the real call, so counts do not depend
 *                                  on that switch)
 *                      sys.rename, sys.link, sys.unlink, sys.mkdir,
 *                      sys.rmdir
 *                  so "the 3rd write" or "the 7th mutating call of any
 *                  kind" can be failed or killed. The scan stamp (a cache
 *                  in an extended attribute, scan.h) is not a fault point.
 *
 * Normally every point is a cheap no-op. The environment variable
 *
 *     AGENT_CHAT_FAULT="rule[,rule...]"     rule = point[#N[+]][:action[:ERRNO]]
 *
 * makes a point fire:
 *     point    a point name; a name ending in `*` matches every point with
 *              that prefix ("sys.*" is every mutating system call, and its
 *              hits are counted together, so "sys.*#7" is the 7th of them;
 *              a lone "*" matches every point of both kinds). Every rule
 *              that matches a point counts the hit, even when an earlier
 *              rule fires there; the first rule (in order) due fires
 *     #N       fire on the Nth time the point is reached (1-based; default
 *              1); "#N+" fires on the Nth time and every later one (a disk
 *              that stays full)
 *     action   fail    the step returns -1 with errno EIO (the default), or
 *                      with the errno named after a second colon
 *                      ("fail:ENOSPC", "fail:EACCES", or a number "fail:28")
 *              enospc  the same as fail:ENOSPC (kept for older tests)
 *              crash   the process kills itself with SIGKILL: no cleanup,
 *                      no atexit, like a power cut from the channel's point
 *                      of view (the kernel keeps what was written)
 *              stop    the process stops itself with SIGSTOP and, once a
 *                      SIGCONT resumes it, carries on with the step (a
 *                      holder paused while others steal its lock)
 * A failed sys.write first writes the first half of the buffer, as a disk
 * filling up in the middle of a write does, then fails.
 * A rule that cannot be parsed (an unknown action or errno name, no point
 * name, a bad #N, more than 16 rules, a rule over 159 bytes) stops the
 * process at its first fault point with exit status 125 and a message on
 * stderr, so a typo never makes a test pass vacuously. Empty items (a
 * trailing comma) are ignored.
 *
 *     AGENT_CHAT_FAULT_LOG=path      appends the name of every named point
 *                                    reached to `path`, one per line (tests
 *                                    enumerate the points of a command so)
 *     AGENT_CHAT_FAULT_LOG_SYS=1     also logs the sys.* points, in the
 *                                    order reached (so line k of the sys.*
 *                                    lines is what "sys.*#k" hits)
 *
 * Builds with -DAC_NO_FAULTS (`make NO_FAULTS=1`) compile every point out:
 * the variables are then ignored and the wrappers are the bare calls.
 * Release packages may build so; the test suite needs the points.
 *
 * Calling sequence:
 *     if (AC_FAULT("x.step") == -1) goto fail;     // errno is set
 *     do_the_step();
 * System calls: use the ac_sys_* wrappers of fsutil.h, never the bare call
 * (tests/functional/crash_everywhere_spec.lua fails on a bare one in src/).
 */
#ifndef AGENTCHAT_FAULT_H
#define AGENTCHAT_FAULT_H

#ifdef AC_NO_FAULTS
#define AC_FAULT(point) 0
#define AC_FAULT_SYS(call) 0
#else
/* Returns 0 when the point does not fire, or -1 with errno set.
 * errno is meaningful on failure. May not return (crash action). */
int ac_fault(const char *point);
/* The point "sys.<call>" of a system call wrapper (logged only with
 * AGENT_CHAT_FAULT_LOG_SYS=1). Same returns as ac_fault. */
int ac_fault_sys(const char *call);
/* Forget the parsed rules and hit counts: the environment is read again
 * at the next point (for the C unit tests, which change it in-process). */
void ac_fault_reset(void);
#define AC_FAULT(point) ac_fault(point)
#define AC_FAULT_SYS(call) ac_fault_sys(call)
#endif

#endif
