/*
 * fault.h - named fault points for crash and error tests.
 *
 * The runtime calls AC_FAULT("post.after_link") at every durable step of a
 * mutation. Normally that is a cheap no-op. When the environment variable
 * AGENT_CHAT_FAULT names the point, the step fails or the process dies there,
 * so tests can prove that a crash at any step leaves the old state, the new
 * state, or a journal that recovery resolves, and that no partial file is
 * ever visible.
 *
 *     AGENT_CHAT_FAULT="point[#N][:action][,point...]"
 *
 * action is one of
 *     fail    the step returns -1 with errno EIO (the default)
 *     enospc  the step returns -1 with errno ENOSPC
 *     crash   the process kills itself with SIGKILL (no cleanup, like a
 *             power cut from the channel's point of view)
 * `#N` fires on the Nth time the point is reached (1-based; default 1).
 * A point name ending in `*` matches every point with that prefix.
 *
 * Builds with -DAC_NO_FAULTS compile every fault point out.
 *
 * AGENT_CHAT_FAULT_LOG=path appends the name of every point reached to
 * `path`, one per line; tests use it to enumerate the points of a command.
 */
#ifndef AGENTCHAT_FAULT_H
#define AGENTCHAT_FAULT_H

#ifdef AC_NO_FAULTS
#define AC_FAULT(point) 0
#else
/* Returns 0 when the point does not fire, or -1 with errno set.
 * errno is meaningful on failure. May not return (crash action). */
int ac_fault(const char *point);
#define AC_FAULT(point) ac_fault(point)
#endif

#endif
