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
 *     suspended on the poller, the thread runs other work;
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
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "poller.h"
#include "worker.h"

_Static_assert(sizeof(pid_t) == sizeof(int), "weft_pid_wait_for takes a pid_t as int");
_Static_assert(POLLIN == EPOLLIN && POLLPRI == EPOLLPRI && POLLOUT == EPOLLOUT &&
               POLLERR == EPOLLERR && POLLHUP == EPOLLHUP && POLLRDHUP == EPOLLRDHUP,
               "poll and epoll events share their bits (Linux)");

/* The events a wait may ask for. */
#define ASKABLE (POLLIN | POLLPRI | POLLOUT | POLLRDHUP)

/* ---- a thread's wait: ppoll --------------------------------------------------- */

/* ppoll until deadline (0 = none; timeout_ns 0 = look once): the events,
 * WEFT_ETIMEDOUT or WEFT_EINVAL (POLLNVAL: fd not open). EINTR resumes
 * with the time left. Callable from: any thread. */
static int thread_wait_fd(int fd, short events, uint64_t timeout_ns, uint64_t deadline)
{
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = events };
        struct timespec ts, *tp = NULL;
        if (timeout_ns == 0) {
            ts = (struct timespec){ 0, 0 };
            tp = &ts;
        } else if (deadline) {
            uint64_t now = weft__now_ns();
            uint64_t d = deadline > now ? deadline - now : 0;
            ts.tv_sec = (time_t)(d / 1000000000u);
            ts.tv_nsec = (long)(d % 1000000000u);
            tp = &ts;
        }
        int n = ppoll(&pfd, 1, tp, NULL);
        if (n > 0)
            return pfd.revents & POLLNVAL ? WEFT_EINVAL : (int)(unsigned short)pfd.revents;
        if (n == 0)
            return WEFT_ETIMEDOUT;
        if (errno != EINTR)
            return errno == ENOMEM ? WEFT_ENOMEM : WEFT_EINVAL;
        if (timeout_ns == 0)
            continue;
    }
}

/* ---- weft_fd_wait_for ------------------------------------------------------------------ */

/* Does the calling thread suspend a fiber to wait (a worker, or a bound
 * thread with no workers), rather than wait itself? */
static weft__worker *fiber_waiter(void)
{
    weft__worker *w = weft__tls_worker;
    return w && weft__tls_host ? w : NULL;
}

static int wait_fd(int fd, short events, uint64_t timeout_ns, const char *what, const void *obj)
{
    if (fd < 0 || (events & ~ASKABLE) || !(events & ASKABLE))
        return WEFT_EINVAL;
    uint64_t deadline = weft__deadline(timeout_ns);
    weft__worker *w = fiber_waiter();
    if (!w || timeout_ns == 0)
        return thread_wait_fd(fd, events, timeout_ns, deadline);
    weft__poller *p = weft__poller_get(w->s);
    if (!p)
        return WEFT_ENOMEM;   /* no memory, or no descriptors, for the epoll set */
    int rc = weft__poller_wait(w, p, fd, (unsigned)(unsigned short)events, deadline, what, obj);
    if (rc == 0)   /* a regular file: poll(2) says what it is ready for, at once */
        return thread_wait_fd(fd, events, 0, 0);
    if (rc == WEFT_EAGAIN) {
        /* The scheduler is being destroyed: look once, do not wait. */
        rc = thread_wait_fd(fd, events, 0, 0);
        return rc == WEFT_ETIMEDOUT ? WEFT_ESHUTDOWN : rc;
    }
    if (rc == WEFT_ETIMEDOUT) {
        /* Look once more before saying so: a descriptor that is ready when
         * the timeout fires is reported ready. On a loaded machine the timer
         * can fire before any thread has read the epoll set, and a wait on a
         * descriptor ready all along must not time out for that. A closed
         * descriptor (POLLNVAL) stays a timeout, as documented. */
        int now = thread_wait_fd(fd, events, 0, 0);
        return now > 0 ? now : rc;
    }
    return rc;
}

int weft_fd_wait_for(int fd, short events, uint64_t timeout_ns)
{
    return wait_fd(fd, events, timeout_ns, "fd", (const void *)(intptr_t)fd);
}

/* ---- weft_pid_wait_for ------------------------------------------------------------------ */

#ifndef SYS_pidfd_open
# define SYS_pidfd_open 434   /* the same number on every Linux architecture */
#endif

atomic_bool weft__no_pidfd;   /* pidfd_open is missing or refused here (also a test seam) */

/* waitpid(pid, WNOHANG): 1 reaped (*status set), 0 still running, or
 * WEFT_EINVAL (not a child of ours, or reaped by someone else). */
static int reap(int pid, int *status)
{
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (status)
                *status = st;
            return 1;
        }
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return WEFT_EINVAL;
    }
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
        pfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pfd < 0 && (errno == ENOSYS || errno == EPERM))
            atomic_store_explicit(&weft__no_pidfd, true, memory_order_relaxed);
        if (pfd < 0 && errno == ESRCH)
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
        int rc = wait_fd(pfd, POLLIN, left, "child pid", (const void *)(intptr_t)pid);
        if (rc > 0) {
            r = reap(pid, status);
            if (r == 0)
                continue;   /* not ended after all (cannot happen: readable means ended) */
            close(pfd);
            return r > 0 ? WEFT_OK : r;
        }
        close(pfd);
        return rc;
    }
}
