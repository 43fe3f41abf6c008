/*
 * weft/io.h: Blocking without blocking a worker: fds, child processes, blocking calls.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_IO_H
#define WEFT_PUBLIC_IO_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * Waiting for a descriptor, a child process, or a call weft cannot see
 * into, while the worker goes on with other tasks. Linux only: epoll and
 * an eventfd per scheduler, pidfd_open for child processes, a pool of
 * threads for blocking calls. A task's wait suspends its fiber; a plain
 * thread waits in ppoll(2). The events are poll(2)'s: include `<poll.h>`
 * for POLLIN, POLLOUT, POLLPRI, POLLRDHUP, POLLERR, POLLHUP.
 *
 * See docs/reference/io.md for the epoll model (who sleeps in epoll_wait,
 * how busy workers notice readiness), timeouts, closing a descriptor that
 * is waited on, descriptor reuse, weft_sched_destroy with waits pending,
 * the pidfd fallback, and the blocking pool. */

/** Waits until fd is ready for events (POLLIN, POLLOUT, POLLPRI,
 * POLLRDHUP, any mix) or timeout_ns passes (relative, monotonic; 0 polls
 * once, UINT64_MAX waits for ever). Returns the ready events (> 0, as
 * poll(2)'s revents: POLLERR and POLLHUP whether asked for or not),
 * WEFT_ETIMEDOUT (not ready when the timeout fired: a descriptor ready
 * then is reported ready), WEFT_EINVAL (fd < 0 or not open; events with none of
 * those bits or with another bit), WEFT_ENOMEM (out of memory,
 * descriptors, epoll watches, or a fiber for the worker: nothing waited),
 * WEFT_ESHUTDOWN (from a task whose scheduler is being destroyed).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_fd_wait_for(int fd, short events, uint64_t timeout_ns);
/** Waits for child process pid (a pid_t) to end and reaps it, like
 * waitpid(pid, status, 0); `*status` gets waitpid's status (status may be
 * NULL). Returns WEFT_OK, WEFT_ETIMEDOUT (the child runs on, not reaped),
 * WEFT_EINVAL (pid <= 0, or not a child of this process still to be
 * reaped), WEFT_ENOMEM or WEFT_ESHUTDOWN as for weft_fd_wait_for (not reaped).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_pid_wait_for(int pid, int *status, uint64_t timeout_ns);
/** Runs fn(arg) on a thread of s's blocking pool and returns once it has
 * (for file I/O, DNS, a library that blocks). Returns WEFT_OK, WEFT_EINVAL
 * (s or fn NULL), WEFT_ENOMEM (no pool thread could be made and none
 * exists, or a task's worker had no fiber to go on with: fn did not run),
 * WEFT_ESHUTDOWN (s is being destroyed and the caller is not one of s's
 * threads). fn must not wait for its caller, destroy s, or wait for
 * another blocking call of s.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_call_blocking(weft_sched *s, weft_fn fn, void *arg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_IO_H */
