/*
 * weft/io.h: Blocking without blocking a worker: fds, child processes, blocking calls.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_IO_H
#define WEFT_PUBLIC_IO_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* ---- blocking without blocking a worker ------------------------------
 * Waiting for a descriptor, a child process, or a call weft cannot see
 * into, while the worker goes on with other tasks. Linux only: epoll and
 * an eventfd per scheduler (made at the first wait from one of its tasks,
 * two descriptors, kept until destroy), pidfd_open for child processes.
 *
 * In a task (a worker, or a thread bound with workers = 0) the task's
 * fiber is suspended: its descriptor joins the scheduler's epoll set
 * (EPOLLONESHOT, for this wait only) and the worker runs other work. An
 * idle worker sleeps in epoll_wait instead of its futex while waits are
 * registered (one worker at a time; the others sleep on their futexes and
 * are woken for new work first), so readiness wakes exactly the fibers
 * waiting for it and an idle scheduler spends no CPU however many
 * descriptors are registered. Busy workers look at the epoll set without
 * sleeping (epoll_wait with timeout 0) every weft_config.global_interval
 * tasks they pick, so readiness is noticed while every worker is busy
 * too, unless one task runs for long without picking another. A bound
 * thread's own wait joins the epoll set likewise, and the thread runs
 * tasks meanwhile (weft_sched_bind_ex). On plain threads the thread
 * itself waits in ppoll(2). The events are poll(2)'s: include <poll.h> for POLLIN,
 * POLLOUT, POLLPRI, POLLRDHUP, POLLERR, POLLHUP.
 *
 * Timeouts are relative, in nanoseconds on CLOCK_MONOTONIC: 0 polls once
 * without waiting, UINT64_MAX waits for ever. A timeout racing readiness
 * ends the wait exactly once: with the ready events or with
 * WEFT_ETIMEDOUT, never both; a readiness that lost the race is not
 * consumed (descriptors are level-triggered: the next wait sees it at
 * once). A wait may end later than its timeout, never earlier.
 *
 * Closing a descriptor that a task waits on does not wake the wait: the
 * kernel drops a closed descriptor from the epoll set without a word, as
 * it does for any epoll user, so the wait ends at its timeout (or with
 * WEFT_ESHUTDOWN at destroy), as libuv and Tokio document for their
 * pollers. Wake waiters first (shutdown(2) a socket: they see POLLHUP or
 * POLLIN; close the other end of a pipe: POLLHUP), then close. Until
 * such a wait has returned, do not wait on a new descriptor that reuses
 * its number: epoll names registrations by number, and the old wait's
 * removal could take the new one's with it (that wait would then end
 * only at its timeout). A plain thread's ppoll reports POLLNVAL for a
 * descriptor closed before the call (WEFT_EINVAL). weft never touches fd
 * once the wait has returned.
 *
 * weft_sched_destroy with waits pending: once destroy has started, every
 * weft_wait_fd and weft_wait_pid of a task of the scheduler that is
 * waiting returns WEFT_ESHUTDOWN at once, and later ones look once
 * (timeout 0) and return WEFT_ESHUTDOWN instead of waiting, so that
 * destroy's "finish every task" cannot hang on input that never comes.
 * A child process whose wait returned WEFT_ESHUTDOWN is not reaped. Calls
 * of weft_call_blocking are not cancelled: destroy waits for them to
 * return (also those made during destroy by the tasks it finishes), then
 * joins the blocking pool's threads. */

/* Waits until fd is ready for events (POLLIN, POLLOUT, POLLPRI,
 * POLLRDHUP, any mix) or timeout_ns passes: returns the ready events
 * (> 0, as poll(2)'s revents: POLLERR and POLLHUP are reported whether
 * asked for or not), WEFT_ETIMEDOUT, or WEFT_EINVAL: fd < 0 or not open,
 * events with none of those bits or with another bit. A regular file is
 * always ready, as for poll(2). WEFT_ENOMEM: out of memory, of
 * descriptors (the scheduler's epoll set, or a duplicate of fd when two
 * tasks wait on the same fd at once), of epoll watches
 * (fs.epoll.max_user_watches), or no fiber for the worker to go on with
 * ("allocation"); nothing waited. WEFT_ESHUTDOWN: see destroy above.
 * Callable from: any thread. */
WEFT_API int  weft_wait_fd(int fd, short events, uint64_t timeout_ns);
/* Waits for child process pid to end, like waitpid(pid, status, 0), and
 * reaps it; *status (status may be NULL) gets waitpid's status. OK, or:
 * WEFT_ETIMEDOUT (the child runs on, not reaped), WEFT_EINVAL (pid <= 0,
 * or not a child of this process that is still to be reaped: never one,
 * reaped already, or reaped by someone else meanwhile, as with SIGCHLD
 * ignored), WEFT_ENOMEM and WEFT_ESHUTDOWN as for weft_wait_fd. The wait
 * is a weft_wait_fd on a pidfd (pidfd_open, Linux 5.3). Where pidfd_open
 * fails (older kernels, seccomp; out of descriptors) it polls instead:
 * waitpid(WNOHANG) between sleeps of 1 ms growing to 50 ms (weft_sleep,
 * so a task's worker goes on meanwhile), with no SIGCHLD handler. pid is
 * a pid_t (an int on Linux). Callable from: any thread. */
WEFT_API int  weft_wait_pid(int pid, int *status, uint64_t timeout_ns);
/* Runs fn(arg) on a thread of s's blocking pool and returns once it has:
 * for calls weft cannot see into (file I/O, DNS, a library that blocks).
 * In a task the fiber is suspended meanwhile and its worker runs other
 * work; any other thread sleeps until the call has returned. The pool
 * makes a thread when a call finds none idle, up to
 * weft_config.blocking_threads (default 64); past that, calls queue, in
 * order, and never fail for it. A pool thread idle for 10 s leaves, so
 * the pool shrinks back when the calls stop. OK, or: WEFT_EINVAL (s or fn NULL), WEFT_ENOMEM (no thread could
 * be made and none exists, or a task's worker has no fiber to go on
 * with: fn did not run), WEFT_ESHUTDOWN (from a thread that is not one
 * of s's while s is being destroyed; s's own tasks may still call it
 * then). fn must not wait for the task that called it, nor destroy s,
 * nor wait for another blocking call of s (with the pool full, that one
 * would wait for ever). Callable from: any thread. */
WEFT_API int  weft_call_blocking(weft_sched *s, weft_fn fn, void *arg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_IO_H */
