/* This file is private to weft: weft_fd_wait_for and weft_pid_wait_for: checking
 * the arguments, and choosing how to wait: a task's fiber on the
 * scheduler's poller (poller.c), any other thread in ppoll(2).
 *
 * Synchronization
 *   Nothing shared of its own. A task's wait goes through the poller's
 *   protocol (poller.c); a thread's wait is its own ppoll. The one
 *   process-wide variable, weft__no_pidfd, caches that pidfd_open is missing
 *   (relaxed: any thread may find it out again).
 *
 * Which path:
 *   - a worker, or a bound thread with no workers (their threads have
 *     weft's host installed, as for the sync primitives): the fiber is
 *     suspended on the poller, the thread runs other work: parked on the
 *     descriptor's record if the descriptor calls registered it for good
 *     (fdreg.c: a look with poll(2) first keeps the level semantics),
 *     else with a one-shot registration (poller.c);
 *   - a bound thread beside workers, any other thread, and every timeout
 *     of 0: ppoll on the thread itself.
 *
 * weft_pid_wait_for: a pidfd (pidfd_open, Linux 5.3) waited for like any fd,
 * then waitpid(WNOHANG) reaps the child. Where pidfd_open is missing or
 * refused (ENOSYS, EPERM under seccomp, EMFILE), the caller polls with
 * waitpid(WNOHANG) between sleeps of 1 ms doubling to 50 ms (weft_sleep:
 * a task's worker goes on meanwhile). No SIGCHLD handler is installed in
 * either case.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "fdreg.h"
#include "io.h"
#include "poller.h"
#include "worker.h"

/* The events a wait may ask for (poll(2)'s bits: os.h). */
#define ASKABLE (WEFT__OS_IN | WEFT__OS_PRI | WEFT__OS_OUT | WEFT__OS_RDHUP)

/* ---- a thread's wait: ppoll --------------------------------------------------- */

/* ppoll until deadline (0 = none; timeout_ns 0 = look once): the events,
 * WEFT_ETIMEDOUT, WEFT_EINVAL (POLLNVAL: fd not open) or WEFT_ECLOSED
 * (weft_fd_forget or weft_fd_close of fd meanwhile). EINTR resumes with
 * the time left. A wait that may sleep is listed with fdreg.c for its
 * descriptor, with a wake handle of its own that a forget posts (the
 * kernel ends no poll when another thread closes the descriptor); with no
 * handle to be had (no descriptors left, or none on this OS: Windows,
 * where weft_fd_close's closesocket ends the poll) it waits unlisted.
 * Callable from: any thread. */
int weft__fd_thread_wait(int fd, short events, uint64_t timeout_ns, uint64_t deadline)
{
    weft__fd_twait tw = { .fd = fd, .wake = timeout_ns ? weft__os_wake_open() : -1 };
    if (tw.wake == fd) {   /* given fd's number: fd was not open (POLLNVAL) */
        weft__os_wake_close(tw.wake);
        return WEFT_EINVAL;
    }
    if (tw.wake >= 0)
        weft__fd_twait_add(&tw);
    int rc;
    for (;;) {
        uint64_t wait_ns = WEFT__OS_FOREVER;
        if (timeout_ns == 0) {
            wait_ns = 0;
        } else if (deadline) {
            uint64_t now = weft__now_ns();
            wait_ns = deadline > now ? deadline - now : 0;
        }
        unsigned ev = (unsigned)(unsigned short)events;
        int n = tw.wake >= 0 ? weft__os_fd_poll_or_wake(fd, ev, tw.wake, wait_ns)
                             : weft__os_fd_poll(fd, ev, wait_ns);
        if (n == WEFT__OS_WOKEN) {
            rc = WEFT_ECLOSED;
            break;
        }
        if (n > 0) {
            rc = n & WEFT__OS_NVAL ? WEFT_EINVAL : n;
            break;
        }
        if (n == 0) {
            rc = WEFT_ETIMEDOUT;
            break;
        }
        if (n != -EINTR) {
            rc = n == -ENOMEM ? WEFT_ENOMEM : WEFT_EINVAL;
            break;
        }
    }
    if (tw.wake >= 0) {
        weft__fd_twait_remove(&tw);
        weft__os_wake_close(tw.wake);
    }
    return rc;
}

/* ---- weft_fd_wait_for ------------------------------------------------------------------ */

/* Does the calling thread suspend a fiber to wait (a worker, or a bound
 * thread with no workers), rather than wait itself? */
weft__worker *weft__fd_fiber_waiter(void)
{
    weft__worker *w = weft__tls_worker;
    return w && weft__tls_host ? w : NULL;
}

/* A wait on a descriptor registered for good (fdreg.c), asking for one
 * side: look (poll(2), timeout 0), park until an edge, look again. 1: not
 * registered, or another fiber waits on that side: the one-shot way. */
static int wait_registered(weft__worker *w, weft__poller *p, int fd, short events, uint64_t deadline)
{
    int side = events & WEFT__OS_OUT ? WEFT__FD_WRITE : WEFT__FD_READ;
    if ((events & WEFT__OS_OUT) && (events & (WEFT__OS_IN | WEFT__OS_PRI | WEFT__OS_RDHUP)))
        return 1;
    for (;;) {
        uint64_t seq;
        weft__fdrec *r = weft__fd_find(p, fd, side, &seq);
        if (!r)
            return 1;
        int now = weft__fd_thread_wait(fd, events, 0, 0);   /* level semantics: ready now returns now */
        if (now != WEFT_ETIMEDOUT)
            return now;
        int rc = weft__fd_park(w, p, r, side, seq, deadline, "fd", fd);
        if (rc > 0 && (rc & (events | WEFT__OS_ERR | WEFT__OS_HUP)))
            return rc & (events | WEFT__OS_ERR | WEFT__OS_HUP);   /* the edge's events, as the kernel gave them */
        if (rc >= 0)
            continue;   /* an edge came before we parked, or of events not asked for: look again */
        if (rc == WEFT_EBUSY)
            return 1;
        if (rc == WEFT_ECLOSED)
            return WEFT_EINVAL;   /* weft_fd_forget or weft_fd_close meanwhile */
        if (rc == WEFT_ETIMEDOUT || rc == WEFT_EAGAIN) {
            now = weft__fd_thread_wait(fd, events, 0, 0);
            return now > 0 ? now : rc == WEFT_EAGAIN ? WEFT_ESHUTDOWN : rc;
        }
        return rc;   /* WEFT_ENOMEM */
    }
}

int weft__fd_wait_until(int fd, short events, uint64_t timeout_ns, uint64_t deadline,
                        const char *what, const void *obj)
{
    weft__worker *w = weft__fd_fiber_waiter();
    if (!w || timeout_ns == 0)
        return weft__fd_thread_wait(fd, events, timeout_ns, deadline);
    weft__poller *p = weft__poller_get(w->s);
    if (!p)
        return WEFT_ENOMEM;   /* no memory, or no descriptors, for the epoll set */
    int reg = wait_registered(w, p, fd, events, deadline);
    if (reg != 1)
        return reg;
    int rc = weft__poller_wait(w, p, fd, (unsigned)(unsigned short)events, deadline, what, obj);
    if (rc == 0)   /* a regular file: poll(2) says what it is ready for, at once */
        return weft__fd_thread_wait(fd, events, 0, 0);
    if (rc == WEFT_EAGAIN) {
        /* The scheduler is being destroyed: look once, do not wait. */
        rc = weft__fd_thread_wait(fd, events, 0, 0);
        return rc == WEFT_ETIMEDOUT ? WEFT_ESHUTDOWN : rc;
    }
    if (rc == WEFT_ETIMEDOUT) {
        /* Look once more before saying so: a descriptor that is ready when
         * the timeout fires is reported ready. On a loaded machine the timer
         * can fire before any thread has read the epoll set, and a wait on a
         * descriptor ready all along must not time out for that. A closed
         * descriptor (POLLNVAL) stays a timeout, as documented. */
        int now = weft__fd_thread_wait(fd, events, 0, 0);
        return now > 0 ? now : rc;
    }
    return rc;
}

static int wait_fd(int fd, short events, uint64_t timeout_ns, const char *what, const void *obj)
{
    if (fd < 0 || (events & ~ASKABLE) || !(events & ASKABLE))
        return WEFT_EINVAL;
    int rc = weft__fd_wait_until(fd, events, timeout_ns, weft__deadline(timeout_ns), what, obj);
    return rc == WEFT_ECLOSED ? WEFT_EINVAL : rc;   /* weft_fd_wait_for's word for a forget (io.h) */
}

_Static_assert(WEFT_POLLRDHUP == WEFT__OS_RDHUP, "weft.h's RDHUP is the seam's");

int weft_fd_wait_for(weft_fd fd, short events, uint64_t timeout_ns)
{
    /* A Windows SOCKET is pointer-wide; the seam carries it in an int,
     * which holds every kernel handle (os/windows_net.c): a value that
     * does not fit is refused, never cut. */
    if ((weft_fd)(int)fd != fd)
        return WEFT_EINVAL;
    return wait_fd((int)fd, events, timeout_ns, "fd", (const void *)(intptr_t)fd);
}

/* ---- weft_pid_wait_for ------------------------------------------------------------------ */

atomic_bool weft__no_pidfd;   /* pidfd_open is missing or refused here (also a test seam) */

/* Reaps pid if it has ended: 1 reaped (*status set), 0 still running,
 * or WEFT_EINVAL (not a child of ours, or reaped by someone else). */
static int reap(int pid, int *status)
{
    int r = weft__os_child_reap(pid, status);
    return r < 0 ? WEFT_EINVAL : r;
}

/* No pidfd: waitpid(WNOHANG) between growing sleeps until deadline. */
static int poll_child(int pid, int *status, uint64_t timeout_ns, uint64_t deadline)
{
    uint64_t nap = 1000000;   /* 1 ms, doubling to 50 ms */
    for (;;) {
        int r = reap(pid, status);
        if (r != 0)
            return r > 0 ? WEFT_OK : r;
        if (timeout_ns == 0)
            return WEFT_ETIMEDOUT;
        uint64_t now = weft__now_ns();
        if (deadline && now >= deadline)
            return WEFT_ETIMEDOUT;
        uint64_t d = nap;
        if (deadline && deadline - now < d)
            d = deadline - now;
        weft_sleep(d);
        nap = nap * 2 > 50000000 ? 50000000 : nap * 2;
    }
}

int weft_pid_wait_for(int pid, int *status, uint64_t timeout_ns)
{
    if (pid <= 0)
        return WEFT_EINVAL;
    uint64_t deadline = weft__deadline(timeout_ns);
    int r = reap(pid, status);   /* ended already, or not our child */
    if (r != 0)
        return r > 0 ? WEFT_OK : r;
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    int pfd = -1;
    if (!atomic_load_explicit(&weft__no_pidfd, memory_order_relaxed)) {   /* relaxed: a cached answer */
        pfd = weft__os_child_handle(pid);
        if (pfd == -ENOSYS || pfd == -EPERM)
            atomic_store_explicit(&weft__no_pidfd, true, memory_order_relaxed);
        if (pfd == -ESRCH)
            return reap(pid, status) > 0 ? WEFT_OK : WEFT_EINVAL;   /* gone between the two calls */
    }
    if (pfd < 0)
        return poll_child(pid, status, timeout_ns, deadline);
    /* The pidfd is readable once the child has ended (a zombie until
     * reaped). A wait on it resumed early (EINTR on a thread) goes on
     * with the time left. */
    for (;;) {
        uint64_t left = timeout_ns;
        if (deadline) {
            uint64_t now = weft__now_ns();
            left = deadline > now ? deadline - now : 0;
            if (left == 0)
                left = 1;   /* one last look that cannot mean "poll only" to a zero */
        }
        int rc = wait_fd(pfd, WEFT__OS_IN, left, "child pid", (const void *)(intptr_t)pid);
        if (rc > 0) {
            r = reap(pid, status);
            if (r == 0)
                continue;   /* not ended after all (cannot happen: readable means ended) */
            weft__os_close(pfd);
            return r > 0 ? WEFT_OK : r;
        }
        weft__os_close(pfd);
        return rc;
    }
}
