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
 * into, while the worker goes on with other tasks. A task's wait
 * suspends its fiber; a plain thread waits itself. A pool of threads
 * runs blocking calls.
 *
 * Linux: epoll and an eventfd per scheduler, pidfd_open for child
 * processes; a plain thread waits in ppoll(2). A weft_fd is a file
 * descriptor; the events are poll(2)'s: include `<poll.h>` for POLLIN,
 * POLLOUT, POLLPRI, POLLRDHUP, POLLERR, POLLHUP.
 *
 * Windows: a weft_fd is a SOCKET (only sockets: not CRT descriptors,
 * pipes or files, which give WEFT_EINVAL); the events are WSAPoll's, from
 * `<winsock2.h>` (POLLIN is POLLRDNORM | POLLRDBAND and a readable socket
 * reports POLLRDNORM: test `rc & POLLIN`; POLLPRI is accepted and never
 * reported; WEFT_POLLRDHUP stands in for POLLRDHUP). A worker sleeps in
 * WSAPoll with a wake-up socket. A pid is a process ID (GetProcessId) and
 * status its exit code; see weft_pid_wait_for.
 *
 * See docs/reference/io.md for the poller model (who sleeps in it, how
 * busy workers notice readiness), timeouts, closing a descriptor that
 * is waited on, descriptor reuse, weft_sched_destroy with waits pending,
 * the pidfd fallback, the blocking pool, and what differs on Windows. */

/** What weft_fd_wait_for waits on: a file descriptor (int) on Linux; on
 * Windows a SOCKET, which is pointer-sized: intptr_t holds it whole, and
 * INVALID_SOCKET converts to -1. */
#if defined(_WIN32)
typedef intptr_t weft_fd;
#else
typedef int weft_fd;
#endif

/** The peer closed its end (POLLRDHUP on Linux; on Windows, where
 * Winsock has no such bit, weft's own: reported with POLLHUP). */
#define WEFT_POLLRDHUP 0x2000

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
WEFT_API int  weft_fd_wait_for(weft_fd fd, short events, uint64_t timeout_ns);
/** Waits for child process pid (a pid_t) to end and reaps it, like
 * waitpid(pid, status, 0); `*status` gets waitpid's status (status may be
 * NULL). On Windows pid is a process ID this process may open (keep the
 * HANDLE CreateProcess gave open until the wait returns, so that the ID
 * is not reused); nothing is reaped, `*status` gets the exit code, and a
 * second wait for an ended process returns WEFT_OK again. Returns WEFT_OK, WEFT_ETIMEDOUT (the child runs on, not reaped),
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
