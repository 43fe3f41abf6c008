/* This file is private to weft: the interface of io.c: weft_fd_wait_for,
 * weft_pid_wait_for.
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include "core.h"

/* io.c. Test seam: true makes weft_pid_wait_for poll as without pidfd_open. */
extern atomic_bool weft__no_pidfd;

/* The calling thread's worker if it waits by suspending a fiber (a
 * worker, or a bound thread with no workers); NULL: it waits itself. */
weft__worker *weft__fd_fiber_waiter(void);
/* A thread's wait: ppoll until deadline (0 = none; timeout_ns 0: look
 * once). The events, WEFT_ETIMEDOUT, WEFT_EINVAL (fd not open) or
 * WEFT_ECLOSED (fd forgotten or closed by weft meanwhile). */
int weft__fd_thread_wait(int fd, short events, uint64_t timeout_ns, uint64_t deadline);
/* weft_fd_wait_for past its argument checks, with its deadline: the
 * persistent registration's park if fd has one, else a one-shot one.
 * Callable from: any thread. */
int weft__fd_wait_until(int fd, short events, uint64_t timeout_ns, uint64_t deadline,
                        const char *what, const void *obj);

#endif /* WEFT_IO_H */
