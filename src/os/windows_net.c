/* This file is private to weft: the OS seam's readiness and child
 * processes on Windows (os.h says what each call does): the
 * one-socket wait of a plain thread, the poller a worker sleeps in, and
 * process handles that the poller can wait for.
 *
 * What a descriptor is here: a SOCKET, carried in the seam's int. Every
 * SOCKET of the Winsock provider is a kernel handle, and Windows keeps
 * kernel handles within 32 bits (it lets 32- and 64-bit processes pass
 * them to each other sign-extended), so the int holds it whole;
 * weft_fd_wait_for refuses a value that does not fit rather than cut it
 * (io.c). CRT descriptors (_open, _pipe) and pipe or file HANDLEs are not
 * sockets: WSAPoll reports them POLLNVAL, and weft says WEFT_EINVAL.
 *
 * The events are WSAPoll's bits (os.h gives them on Windows): the
 * caller's POLLIN, POLLOUT and RDHUP, POLLPRI dropped before WSAPoll
 * (the Winsock provider refuses it), RDHUP asked as POLLRDNORM and
 * reported when POLLHUP comes back or a peek reads the end of the
 * stream (the peer closed).
 *
 * The poller: WSAPoll over a copy of the registered sockets plus a wake
 * socket, a UDP socket on the loopback connected to itself, which
 * weft__os_poller_wake sends a byte to. The thread in WSAPoll sleeps
 * (no thread spins); the OS has no one-shot registration, so each
 * registration has its own armed bit, cleared when it is reported and
 * never set again (the caller removes it). A registration added while a
 * thread sleeps in WSAPoll is not in its copy: the add wakes it, and
 * the next round copies it.
 *
 * A child process: weft__os_child_handle opens the process with
 * SYNCHRONIZE and returns a socket of its own (as the wake socket) that
 * a thread-pool wait (RegisterWaitForSingleObject) makes readable when
 * the process ends, so a task's process wait parks in the same poller
 * as its socket waits. weft__os_close undoes it (UnregisterWaitEx waits
 * for a callback under way, so nothing sends to a closed socket).
 *
 * The descriptor calls' system calls (fdio.c): recv, send, accept,
 * connect, SO_ERROR and closesocket on the SOCKET in the int, Winsock's
 * errors given as the errno values fdio.c sorts (WSAEWOULDBLOCK as
 * EAGAIN; a connect under way, WSAEWOULDBLOCK or WSAEINPROGRESS, as
 * EINPROGRESS).
 *
 * Synchronization
 *   net_once    WSAStartup, once per process (InitOnceExecuteOnce).
 *   poller.lock (SRW) the registrations (regs, n, cap, next_id) and
 *               sleeping: add, remove, wait's copy and its reports take
 *               it. One thread waits at a time (os.h); a look may run
 *               beside it, and each builds its own copy.
 *   poller.wake the wake socket: every wake sends a byte (as an eventfd
 *               write on Linux: no coalescing flag, which would let a
 *               wake racing the waiter's drain be lost); the waiter
 *               drains every byte there once WSAPoll found it readable.
 *               A byte sent after the drain ends the next wait at once
 *               (a spurious return, which callers allow).
 *   kids_lock (SRW) the list of child handles (kids).
 */
#include <errno.h>
#include <stdlib.h>

#include <winsock2.h>
#include <ws2tcpip.h>

#include "os.h"

_Static_assert(WEFT__OS_IN == POLLIN && WEFT__OS_PRI == POLLPRI && WEFT__OS_OUT == POLLOUT &&
               WEFT__OS_ERR == POLLERR && WEFT__OS_HUP == POLLHUP && WEFT__OS_NVAL == POLLNVAL,
               "weft's events on Windows are WSAPoll's bits");
_Static_assert(!(WEFT__OS_RDHUP & (POLLIN | POLLPRI | POLLOUT | POLLWRBAND | POLLERR | POLLHUP |
                                   POLLNVAL)),
               "RDHUP is a bit WSAPoll does not use");

/* What WSAPoll is asked for, out of the caller's events. */
static SHORT asked(unsigned events)
{
    unsigned e = events & (POLLIN | POLLOUT);
    if (events & WEFT__OS_RDHUP)
        e |= POLLRDNORM;   /* end of stream reads as readable, with POLLHUP */
    return (SHORT)e;
}

/* What is reported, out of WSAPoll's revents on s for events. RDHUP:
 * POLLHUP, or a read that would return 0 (the peer shut its side down,
 * which Winsock reports as readable only). Asked for RDHUP alone, a
 * socket with data to read reports POLLRDNORM: reporting nothing would
 * make every round find it ready again. */
static unsigned reported(SOCKET s, unsigned events, SHORT revents)
{
    unsigned r = (unsigned)(USHORT)revents &
                 ((events & (POLLIN | POLLOUT)) | POLLERR | POLLHUP | POLLNVAL);
    if (events & WEFT__OS_RDHUP) {
        char c;
        if ((revents & POLLHUP) ||
            ((revents & POLLRDNORM) && recv(s, &c, 1, MSG_PEEK) == 0))
            r |= WEFT__OS_RDHUP;
        else if ((revents & POLLRDNORM) && !(r & POLLIN))
            r |= POLLRDNORM;
    }
    return r;
}

/* WSAPoll's timeout for what is left until deadline (0: none): ms,
 * rounded up so that the wait never ends early; capped, the caller
 * loops. */
static INT ms_left(uint64_t deadline)
{
    if (!deadline)
        return -1;
    uint64_t now = weft__os_now_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999u) / 1000000u;
    return ms > 0x7ffffffe ? 0x7ffffffe : (INT)ms;
}

/* ---- Winsock ------------------------------------------------------------------ */

static INIT_ONCE net_once = INIT_ONCE_STATIC_INIT;

static BOOL CALLBACK net_start(INIT_ONCE *once, void *param, void **ctx)
{
    WSADATA d;
    return WSAStartup(MAKEWORD(2, 2), &d) == 0;
}

static bool net_up(void)
{
    return InitOnceExecuteOnce(&net_once, net_start, NULL, NULL);
}

/* A non-blocking UDP socket on the loopback, connected to itself: a byte
 * sent makes it readable. INVALID_SOCKET: out of sockets or memory. */
static SOCKET self_socket(void)
{
    if (!net_up())
        return INVALID_SOCKET;
    SOCKET s = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    if (s == INVALID_SOCKET)
        return s;
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int len = sizeof a;
    u_long nb = 1;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0 ||
        connect(s, (struct sockaddr *)&a, sizeof a) != 0 || ioctlsocket(s, FIONBIO, &nb) != 0) {
        closesocket(s);
        return INVALID_SOCKET;
    }
    return s;
}

static void self_send(SOCKET s)
{
    char b = 1;
    send(s, &b, 1, 0);   /* WSAEWOULDBLOCK: bytes are queued, readable already */
}

static void self_drain(SOCKET s)
{
    char b[16];
    while (recv(s, b, sizeof b, 0) > 0)
        ;
}

static int errno_of_wsa(int e)
{
    switch (e) {
    case WSAENOTSOCK:
        return EBADF;
    case WSAEINVAL:
    case WSAEFAULT:
        return EINVAL;
    case WSAEINTR:
        return EINTR;
    default:
        return ENOMEM;   /* WSAENOBUFS, WSAEMFILE, WSANOTINITIALISED */
    }
}

/* ---- a thread's wait ------------------------------------------------------------ */

int weft__os_fd_poll(int fd, unsigned events, uint64_t timeout_ns)
{
    if (!net_up())
        return -ENOMEM;
    uint64_t deadline = 0;
    if (timeout_ns != WEFT__OS_FOREVER)
        deadline = weft__os_now_ns() + timeout_ns + !timeout_ns;   /* 0: one look */
    for (;;) {
        WSAPOLLFD p = { .fd = (SOCKET)(intptr_t)fd, .events = asked(events) };
        int n = WSAPoll(&p, 1, timeout_ns ? ms_left(deadline) : 0);
        if (n > 0)
            return (int)reported(p.fd, events, p.revents);
        if (n < 0)
            return WSAGetLastError() == WSAENOTSOCK ? WEFT__OS_NVAL : -errno_of_wsa(WSAGetLastError());
        if (!timeout_ns || weft__os_now_ns() >= deadline)
            return 0;
    }
}

/* No wake handles here: a thread's wait is ended by weft_fd_close's
 * closesocket (WSAPoll reports the socket gone), not by a forget. */
int weft__os_wake_open(void)
{
    return -ENOSYS;
}

int weft__os_fd_poll_or_wake(int fd, unsigned events, int wake, uint64_t timeout_ns)
{
    (void)wake;
    return weft__os_fd_poll(fd, events, timeout_ns);
}

void weft__os_wake_post(int wake)
{
    (void)wake;
}

void weft__os_wake_close(int wake)
{
    (void)wake;
}

/* ---- the poller ------------------------------------------------------------------ */

typedef struct reg {
    SOCKET s;
    unsigned events;
    uint64_t data;
    int id;        /* the watch's dup: which registration of s this is */
    bool armed;    /* not yet reported */
} reg;

typedef struct win_poller {
    SRWLOCK lock;
    reg *regs;
    int n, cap, next_id;
    bool sleeping;            /* the waiter is in WSAPoll on a copy */
    SOCKET wake;
} win_poller;

#define ROUND_HERE 64   /* sockets a round polls from its own stack */

static win_poller *wp(weft__os_poller *p)
{
    return (win_poller *)p->set;
}

int weft__os_poller_open(weft__os_poller *p)
{
    win_poller *q = calloc(1, sizeof *q);
    if (!q)
        return ENOMEM;
    InitializeSRWLock(&q->lock);
    q->wake = self_socket();
    if (q->wake == INVALID_SOCKET) {
        free(q);
        return ENOMEM;
    }
    p->set = (intptr_t)q;
    p->wake = (intptr_t)q->wake;
    return 0;
}

void weft__os_poller_close(weft__os_poller *p)
{
    win_poller *q = wp(p);
    closesocket(q->wake);
    free(q->regs);
    free(q);
}

int weft__os_poller_add(weft__os_poller *p, int fd, unsigned events, uint64_t data,
                        weft__os_watch *w)
{
    win_poller *q = wp(p);
    SOCKET s = (SOCKET)(intptr_t)fd;
    w->fd = w->dup = -1;
    int type, len = sizeof type;
    if (getsockopt(s, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0)
        return errno_of_wsa(WSAGetLastError());   /* not a socket (or no Winsock) */
    AcquireSRWLockExclusive(&q->lock);
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 16;
        reg *r = realloc(q->regs, (size_t)cap * sizeof *r);
        if (!r) {
            ReleaseSRWLockExclusive(&q->lock);
            return ENOMEM;
        }
        q->regs = r;
        q->cap = cap;
    }
    int id = q->next_id++ & INT32_MAX;
    q->regs[q->n++] = (reg){ .s = s, .events = events, .data = data, .id = id, .armed = true };
    bool sleeping = q->sleeping;
    ReleaseSRWLockExclusive(&q->lock);
    if (sleeping)
        weft__os_poller_wake(p);   /* its copy lacks this one */
    w->fd = fd;
    w->dup = id;
    return 0;
}

void weft__os_poller_remove(weft__os_poller *p, weft__os_watch *w)
{
    if (w->fd < 0)
        return;
    win_poller *q = wp(p);
    AcquireSRWLockExclusive(&q->lock);
    for (int i = 0; i < q->n; i++)
        if (q->regs[i].id == w->dup) {
            q->regs[i] = q->regs[--q->n];
            break;
        }
    ReleaseSRWLockExclusive(&q->lock);
    w->fd = w->dup = -1;
}

/* One round: copies the armed registrations (and the wake socket, if
 * wake: the waiter's round, which also marks the poller sleeping),
 * WSAPolls them for ms, and reports up to max of the ready ones,
 * disarming them. *woke: the wake socket was readable. 0 reported: none
 * ready, the copy could not be made, or WSAPoll failed. */
static int round_once(win_poller *q, weft__os_event *evs, int max, INT ms, bool wake, bool *woke)
{
    AcquireSRWLockExclusive(&q->lock);
    int n = 0;
    for (int i = 0; i < q->n; i++)
        n += q->regs[i].armed;
    WSAPOLLFD fds_here[ROUND_HERE], *fds = fds_here;
    int ids_here[ROUND_HERE], *ids = ids_here;
    if (n + 1 > ROUND_HERE) {
        fds = malloc(((size_t)n + 1) * sizeof *fds);
        ids = malloc(((size_t)n + 1) * sizeof *ids);
        if (!fds || !ids) {
            ReleaseSRWLockExclusive(&q->lock);
            free(fds);
            free(ids);
            if (ms)
                Sleep(1);   /* out of memory: a bounded nap, not a spin */
            return 0;
        }
    }
    int k = 0;
    if (wake) {
        fds[k] = (WSAPOLLFD){ .fd = q->wake, .events = POLLRDNORM };
        ids[k++] = -1;
    }
    for (int i = 0; i < q->n; i++)
        if (q->regs[i].armed) {
            fds[k] = (WSAPOLLFD){ .fd = q->regs[i].s, .events = asked(q->regs[i].events) };
            ids[k++] = q->regs[i].id;
        }
    if (wake)
        q->sleeping = true;   /* under lock with the copy: an add after it wakes us */
    ReleaseSRWLockExclusive(&q->lock);

    int ready = k ? WSAPoll(fds, (ULONG)k, ms) : 0;
    if (ready < 0) {
        /* A socket closed while registered can fail the whole call
         * (WSAENOTSOCK) rather than report POLLNVAL: find it, so that it
         * is reported (and disarmed) instead of failing every round. */
        for (int j = 0; j < k; j++) {
            int type, len = sizeof type;
            fds[j].revents = 0;
            if (ids[j] >= 0 &&
                getsockopt(fds[j].fd, SOL_SOCKET, SO_TYPE, (char *)&type, &len) != 0) {
                fds[j].revents = POLLNVAL;
                ready = 1;
            }
        }
        if (ready < 0 && ms)
            Sleep(1);   /* no culprit found: a bounded nap, never a spin */
    }

    int out = 0;
    AcquireSRWLockExclusive(&q->lock);
    if (wake)
        q->sleeping = false;
    for (int j = 0; ready > 0 && j < k && out < max; j++) {
        if (!fds[j].revents)
            continue;
        if (ids[j] < 0) {
            *woke = true;
            continue;
        }
        for (int i = 0; i < q->n; i++) {
            reg *r = &q->regs[i];
            if (r->id != ids[j] || !r->armed)
                continue;
            unsigned e = reported(r->s, r->events, fds[j].revents);
            if (e) {
                r->armed = false;
                evs[out++] = (weft__os_event){ .data = r->data, .events = e };
            }
            break;
        }
    }
    ReleaseSRWLockExclusive(&q->lock);
    if (fds != fds_here) {
        free(fds);
        free(ids);
    }
    return out;
}

int weft__os_poller_wait(weft__os_poller *p, weft__os_event *evs, int max, uint64_t deadline)
{
    win_poller *q = wp(p);
    bool woke = false;
    int n = round_once(q, evs, max, ms_left(deadline), true, &woke);
    if (woke)
        self_drain(q->wake);   /* consumes every wake sent so far */
    return n;
}

int weft__os_poller_look(weft__os_poller *p, weft__os_event *evs, int max)
{
    bool woke = false;
    return round_once(wp(p), evs, max, 0, false, &woke);
}

void weft__os_poller_wake(weft__os_poller *p)
{
    self_send(wp(p)->wake);
}

/* ---- child processes ------------------------------------------------------------------ */

typedef struct kid {
    struct kid *next;
    SOCKET s;        /* readable once the process has ended */
    HANDLE process;
    HANDLE wait;     /* the thread-pool wait */
} kid;

static SRWLOCK kids_lock = SRWLOCK_INIT;
static kid *kids;

static void CALLBACK kid_ended(void *arg, BOOLEAN timed_out)
{
    self_send(((kid *)arg)->s);
}

int weft__os_child_handle(int pid)
{
    HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h)
        return -ESRCH;
    kid *k = calloc(1, sizeof *k);
    SOCKET s = k ? self_socket() : INVALID_SOCKET;
    if (s == INVALID_SOCKET || (intptr_t)(int)(intptr_t)s != (intptr_t)s) {
        if (s != INVALID_SOCKET)
            closesocket(s);
        free(k);
        CloseHandle(h);
        return -ENOMEM;
    }
    k->s = s;
    k->process = h;
    if (!RegisterWaitForSingleObject(&k->wait, h, kid_ended, k, INFINITE,
                                     WT_EXECUTEONLYONCE | WT_EXECUTEINWAITTHREAD)) {
        closesocket(s);
        free(k);
        CloseHandle(h);
        return -ENOMEM;
    }
    AcquireSRWLockExclusive(&kids_lock);
    k->next = kids;
    kids = k;
    ReleaseSRWLockExclusive(&kids_lock);
    return (int)(intptr_t)s;
}

void weft__os_close(int fd)
{
    AcquireSRWLockExclusive(&kids_lock);
    kid **pp = &kids, *k;
    while ((k = *pp) && k->s != (SOCKET)(intptr_t)fd)
        pp = &k->next;
    if (k)
        *pp = k->next;
    ReleaseSRWLockExclusive(&kids_lock);
    if (!k)
        return;   /* only the handles weft opened are closed here */
    UnregisterWaitEx(k->wait, INVALID_HANDLE_VALUE);   /* waits for a callback under way */
    closesocket(k->s);
    CloseHandle(k->process);
    free(k);
}

int weft__os_child_reap(int pid, int *status)
{
    /* Windows has no reaping: the process object lives while a handle to
     * it is open, and its exit code is there to read any number of times.
     * "Reaped" is "has ended"; the status is the exit code. */
    HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h)
        return -1;
    int r = 0;
    DWORD code;
    if (WaitForSingleObject(h, 0) == WAIT_OBJECT_0 && GetExitCodeProcess(h, &code)) {
        if (status)
            *status = (int)code;
        r = 1;
    }
    CloseHandle(h);
    if (r)
        weft__win_proc_drop(pid);   /* one weft started is kept until now (windows_proc.c) */
    return r;
}

/* ---- the descriptor calls' system calls (fdio.c) ----------------------------------- */

/* A Winsock error of a socket call, as the errno value fdio.c sorts. */
static int errno_of_io(int e)
{
    switch (e) {
    case WSAEWOULDBLOCK:  return EAGAIN;
    case WSAEINPROGRESS:
    case WSAEALREADY:     return EINPROGRESS;
    case WSAEINTR:        return EINTR;
    case WSAENOTSOCK:     return EBADF;
    case WSAEINVAL:
    case WSAEFAULT:       return EINVAL;
    case WSAEOPNOTSUPP:   return EOPNOTSUPP;
    case WSAENOBUFS:      return ENOBUFS;
    case WSAEMFILE:       return EMFILE;
    case WSAECONNRESET:   return ECONNRESET;
    case WSAECONNABORTED: return ECONNABORTED;
    case WSAECONNREFUSED: return ECONNREFUSED;
    case WSAENETUNREACH:  return ENETUNREACH;
    case WSAEHOSTUNREACH: return EHOSTUNREACH;
    case WSAETIMEDOUT:    return ETIMEDOUT;
    case WSAENOTCONN:     return ENOTCONN;
    case WSAESHUTDOWN:    return EPIPE;
    case WSANOTINITIALISED: return ENOMEM;
    default:              return EIO;
    }
}

/* At most INT_MAX bytes a call: recv and send take an int. */
static int io_len(size_t n)
{
    return n > INT32_MAX ? INT32_MAX : (int)n;
}

ptrdiff_t weft__os_fd_read(int fd, void *buf, size_t n)
{
    if (!net_up())
        return -ENOMEM;
    int got = recv((SOCKET)(intptr_t)fd, buf, io_len(n), 0);
    return got >= 0 ? got : -errno_of_io(WSAGetLastError());
}

ptrdiff_t weft__os_fd_write(int fd, const void *buf, size_t n)
{
    if (!net_up())
        return -ENOMEM;
    int put = send((SOCKET)(intptr_t)fd, buf, io_len(n), 0);
    return put >= 0 ? put : -errno_of_io(WSAGetLastError());
}

int weft__os_accept(int fd)
{
    if (!net_up())
        return -ENOMEM;
    SOCKET a = accept((SOCKET)(intptr_t)fd, NULL, NULL);
    if (a == INVALID_SOCKET)
        return -errno_of_io(WSAGetLastError());
    /* An accepted socket inherits the listener's non-blocking mode; set
     * it anyway (a listener made blocking), and keep it out of children. */
    u_long nb = 1;
    if ((intptr_t)(int)a != (intptr_t)a || ioctlsocket(a, FIONBIO, &nb) != 0) {
        closesocket(a);
        return -EMFILE;   /* cannot happen: kernel handles fit an int (see above) */
    }
    SetHandleInformation((HANDLE)a, HANDLE_FLAG_INHERIT, 0);
    return (int)a;
}

int weft__os_connect(int fd, const void *addr, size_t len)
{
    if (!net_up())
        return -ENOMEM;
    if (connect((SOCKET)(intptr_t)fd, addr, (int)len) == 0)
        return 0;
    int e = errno_of_io(WSAGetLastError());
    return -(e == EAGAIN ? EINPROGRESS : e);
}

int weft__os_sock_error(int fd)
{
    int e = 0, len = sizeof e;
    if (getsockopt((SOCKET)(intptr_t)fd, SOL_SOCKET, SO_ERROR, (char *)&e, &len) != 0)
        return -errno_of_io(WSAGetLastError());
    return e ? errno_of_io(e) : 0;
}

bool weft__os_fd_is_stream(int fd)
{
    int type = 0, len = sizeof type;
    return getsockopt((SOCKET)(intptr_t)fd, SOL_SOCKET, SO_TYPE, (char *)&type, &len) == 0 &&
           type == SOCK_STREAM;
}

int weft__os_fd_close(int fd)
{
    if (closesocket((SOCKET)(intptr_t)fd) == 0)
        return 0;
    int e = errno_of_io(WSAGetLastError());
    return -(e == EINTR ? 0 : e);
}
