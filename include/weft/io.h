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
 * busy workers notice readiness), persistent registration and how a
 * closed and reused descriptor stays correct, the descriptor calls, the
 * line reader, timeouts, closing a descriptor that
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
 * then is reported ready), WEFT_EINVAL (fd < 0 or not open, or given to
 * weft_fd_forget or weft_fd_close during the wait; events with none of
 * those bits or with another bit), WEFT_ENOMEM (out of memory,
 * descriptors, epoll watches, or a fiber for the worker: nothing waited),
 * WEFT_ESHUTDOWN (from a task whose scheduler is being destroyed).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_fd_wait_for(weft_fd fd, short events, uint64_t timeout_ns);

/* Straight-line descriptor I/O. Each call tries its system call first
 * and suspends the task's fiber only when it would block (a plain thread
 * waits in ppoll, on Windows in WSAPoll); timeout_ns covers the whole call
 * (relative, monotonic; 0 tries once, UINT64_MAX waits for ever).
 * Descriptors must be non-blocking (O_NONBLOCK; on Windows FIONBIO): the
 * calls do not set it, and a blocking one blocks the worker in the system
 * call, its timeout unkept. A task's
 * first wait on a descriptor registers it with the scheduler for good
 * (edge-triggered): close such a descriptor with weft_fd_close, or call
 * weft_fd_forget before handing it elsewhere. weft_fd_close ends the
 * registration (a generation in its record drops events meant for the old
 * descriptor), so a number reused afterwards starts afresh; a wait on one
 * closed with close(2) and reused sees the new descriptor up to a second
 * late (a parked wait looks again every second). A failed system call gives
 * WEFT_EINVAL (EBADF, EINVAL, ENOTSOCK...), WEFT_ENOMEM (ENOMEM, ENOBUFS,
 * EMFILE, ENFILE) or WEFT_EIO (any other, e.g. ECONNRESET, EPIPE), errno
 * keeping the call's value.
 *
 * Windows: sockets only (recv, send, accept, connect, closesocket), errno
 * set from WSAGetLastError (WSAECONNRESET as ECONNRESET...); nothing is
 * registered for good: every wait is a one-shot WSAPoll wait, and
 * weft_fd_close (closesocket, then every sleeping poller woken) ends a
 * task's wait on the socket with WEFT_ECLOSED. A socket value that does
 * not fit an int (none does: kernel handles stay within 32 bits) gives
 * WEFT_EINVAL. */
struct sockaddr;

/** Reads up to n bytes of fd into buf, like read(2). Returns the bytes
 * read (> 0), 0 at end of stream (or n == 0), WEFT_ETIMEDOUT (nothing came
 * in time), WEFT_ECLOSED (weft_fd_close or weft_fd_forget during the
 * wait), WEFT_EINVAL (fd < 0, buf NULL with n > 0, fd not open),
 * WEFT_ENOMEM, WEFT_EIO, or WEFT_ESHUTDOWN (from a task whose scheduler is
 * being destroyed, nothing there to read).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API ptrdiff_t weft_fd_read_for(weft_fd fd, void *buf, size_t n, uint64_t timeout_ns);
/** Writes all n bytes of buf to fd, waiting as it must. `*written` (may be
 * NULL) gets the bytes written, also when it fails. Returns WEFT_OK,
 * WEFT_ETIMEDOUT (not all written in time), WEFT_ECLOSED, WEFT_EINVAL,
 * WEFT_ENOMEM, WEFT_EIO (EPIPE: a pipe or socket whose reader left, where
 * SIGPIPE is ignored or blocked, as with write(2)), WEFT_ESHUTDOWN.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_fd_write_all_for(weft_fd fd, const void *buf, size_t n, size_t *written,
                                    uint64_t timeout_ns);
/** Accepts a connection on listening socket fd. Returns the new
 * descriptor (>= 0, already O_NONBLOCK and close-on-exec; on Windows a
 * SOCKET, whole in the weft_fd, non-blocking and not inheritable), WEFT_ETIMEDOUT,
 * WEFT_ECLOSED, WEFT_EINVAL (fd < 0, not a listening socket), WEFT_ENOMEM
 * (out of memory or descriptors: EMFILE, ENFILE), WEFT_EIO,
 * WEFT_ESHUTDOWN.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API weft_fd weft_fd_accept_for(weft_fd fd, uint64_t timeout_ns);
/** Connects non-blocking socket fd to addr (addrlen bytes) and waits for
 * the connection. Returns WEFT_OK, WEFT_ETIMEDOUT (still connecting: close
 * fd), WEFT_ECLOSED, WEFT_EINVAL (fd < 0, addr NULL, addrlen 0 or over
 * 4096, not a socket), WEFT_ENOMEM, WEFT_EIO (refused, unreachable: errno
 * says which), WEFT_ESHUTDOWN.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_fd_connect_for(weft_fd fd, const struct sockaddr *addr, size_t addrlen,
                                  uint64_t timeout_ns);
/** A line reader over a descriptor: a buffer the caller owns, filled by
 * weft_fd_read_for. Set up with weft_fd_reader_init; the fields are
 * private. */
typedef struct weft_fd_reader {
    /* private */
    char *buf;
    size_t cap, start, end, taken;
    weft_fd fd;
    bool eof;
} weft_fd_reader;
/** Sets r up to read lines of fd into buf (cap bytes, the longest line
 * returned whole). Returns WEFT_OK, WEFT_EINVAL (r or buf NULL, cap 0,
 * fd < 0).
 * Callable from: any thread. */
WEFT_API int  weft_fd_reader_init(weft_fd_reader *r, weft_fd fd, void *buf, size_t cap);
/** The next line of r's descriptor: `*line` points at it in r's buffer
 * (valid until the next call on r) and the return value is its length,
 * its '\n' included. A line longer than the buffer comes in pieces of cap
 * bytes with no '\n'; at end of stream the last bytes come without one,
 * then 0. Returns the length (> 0), 0 (end of stream), WEFT_ETIMEDOUT (no
 * whole line in time: the bytes read stay for the next call), WEFT_EINVAL
 * (r or line NULL), or weft_fd_read_for's other codes.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API ptrdiff_t weft_fd_reader_read_line_for(weft_fd_reader *r, const char **line,
                                                uint64_t timeout_ns);
/** Ends fd's registration with every scheduler without closing it: the
 * waits on it in progress return WEFT_ECLOSED (weft_fd_wait_for's:
 * WEFT_EINVAL). Returns WEFT_OK (also when fd was not registered),
 * WEFT_EINVAL (fd < 0).
 * Callable from: any thread. */
WEFT_API int  weft_fd_forget(weft_fd fd);
/** weft_fd_forget(fd), then close(2) (Windows: closesocket). Returns WEFT_OK, WEFT_EINVAL (fd < 0
 * or not open).
 * Callable from: any thread. */
WEFT_API int  weft_fd_close(weft_fd fd);

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
