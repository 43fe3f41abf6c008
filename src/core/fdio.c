/* This file is private to weft: the straight-line descriptor calls:
 * weft_fd_read_for, weft_fd_write_all_for, weft_fd_accept_for,
 * weft_fd_connect_for, weft_fd_forget / weft_fd_close, which end a
 * descriptor's persistent registration (fdreg.c), and the line reader
 * over weft_fd_read_for.
 *
 * Every call tries its system call first and waits only on EAGAIN: a
 * descriptor that is ready costs that one call. A read of a byte stream
 * that came back short, with no readiness edge since, tells the next
 * weft_fd_read_for that its read would say EAGAIN: it parks at once
 * (fdreg.c, weft__fd_note_short). A task waits on the
 * descriptor's record (registered at its first EAGAIN, then for good);
 * where it cannot have one (another fiber waits on the same side, the
 * descriptor is in the set by a one-shot weft_fd_wait_for, a number past
 * the table, out of watches) it waits the one-shot way of
 * weft_fd_wait_for; a plain thread waits in ppoll. One deadline, taken at
 * the call, covers all of a call's waits.
 *
 * Windows: the same calls over sockets (the seam's bodies are in
 * os/windows_net.c). WSAPoll has no edge-triggered registration, so
 * weft__fd_register finds none (fdreg.c) and every wait is the one-shot
 * way; a socket closed during such a wait is reported POLLNVAL by the
 * poller's next round, which weft_fd_close starts by waking every
 * poller, and the call returns WEFT_ECLOSED. A weft_fd there is a SOCKET,
 * carried in the seam's int as weft_fd_wait_for does (io.c).
 *
 * Synchronization
 *   Nothing shared of its own: the records are fdreg.c's, and a call's
 *   state (io_ctx) is on its own stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "fdreg.h"
#include "io.h"
#include "worker.h"

/* The seam's int for a user's descriptor, or -1 when it is negative or
 * does not fit (a Windows SOCKET is pointer-wide; every kernel handle
 * fits an int, os/windows_net.c): refused, never cut. */
static int seam_fd(weft_fd fd)
{
    return fd < 0 || (weft_fd)(int)fd != fd ? -1 : (int)fd;
}

/* How often a one-shot wait beside a parked fiber looks whether fd was
 * forgotten (ctx_wait). */
#define FDIO_RECHECK_NS 1000000000ull

/* One call's waits on one side of fd. */
typedef struct io_ctx {
    weft__worker *w;       /* NULL: a plain thread, waits in ppoll */
    weft__poller *p;       /* w's scheduler's, once known */
    weft__fdrec *r;        /* fd's record, once registered */
    uint64_t seq;          /* r's edge count, read before the last system call */
    uint64_t deadline;     /* 0: none */
    bool look_only;        /* timeout 0: never wait */
    int fd, side;
} io_ctx;

static void ctx_begin(io_ctx *c, int fd, int side, uint64_t timeout_ns)
{
    c->fd = fd;
    c->side = side;
    c->deadline = weft__deadline(timeout_ns);
    c->look_only = timeout_ns == 0;
    c->w = c->look_only ? NULL : weft__fd_fiber_waiter();
    c->p = c->w ? atomic_load_explicit(&c->w->s->poller, memory_order_acquire) : NULL;   /* acquire: pairs with the poller's publication */
    c->r = NULL;
}

/* Before each system call: the record's edge count now, so that
 * readiness after the call's EAGAIN is an edge the wait sees. */
static void ctx_snap(io_ctx *c)
{
    if (c->p)
        c->r = weft__fd_find(c->p, c->fd, c->side, &c->seq);
}

/* After an EAGAIN: waits for the side to become ready. 1: try again;
 * WEFT_ETIMEDOUT (try once more, then say so), WEFT_ESHUTDOWN (likewise),
 * WEFT_EINVAL, WEFT_ECLOSED, WEFT_ENOMEM: end the call. */
static int ctx_wait(io_ctx *c)
{
    short ev = c->side == WEFT__FD_READ ? WEFT__OS_IN : WEFT__OS_OUT;
    if (c->look_only)
        return WEFT_ETIMEDOUT;
    if (!c->w) {
        int rc = weft__fd_thread_wait(c->fd, ev, 1, c->deadline);
        return rc > 0 ? 1 : rc;
    }
    if (!c->p && !(c->p = weft__poller_get(c->w->s)))
        return WEFT_ENOMEM;
    int rc = WEFT_EBUSY;
    if (!c->r) {
        int err;
        c->r = weft__fd_register(c->p, c->fd, c->side, &c->seq, &err);
        if (err)
            return err;
    }
    if (c->r) {
        rc = weft__fd_park(c->w, c->p, c->r, c->side, c->seq, c->deadline, "fd", c->fd);
        if (rc >= 0)
            return 1;
        if (rc == WEFT_EAGAIN)
            return WEFT_ESHUTDOWN;
    }
    if (rc == WEFT_EBUSY) {   /* no record for us: a one-shot wait this time */
        /* Another fiber parks on the record: this one waits the one-shot
         * way, on a duplicate of fd. A forget (weft_fd_close) ends it at
         * once (WEFT_ECLOSED: poller.c walks its one-shot waits); one
         * that came between our look at the word and the wait's start
         * is seen at the next look, every RECHECK_NS: a changed word
         * means fd was forgotten, and the call ends ECLOSED. */
        uint32_t word = c->r ? weft__fd_word(c->r) : 0;
        uint64_t until = c->deadline;
        if (c->r) {
            uint64_t soon = weft__now_ns() + FDIO_RECHECK_NS;
            if (!until || soon < until)
                until = soon;
        }
        rc = weft__fd_wait_until(c->fd, ev, 1, until, "fd", (const void *)(intptr_t)c->fd);
        if (rc > 0)   /* NVAL: closed during the wait (Windows: weft_fd_close woke the poller) */
            return rc & WEFT__OS_NVAL ? WEFT_ECLOSED : 1;
        if (c->r && weft__fd_word(c->r) != word)
            return WEFT_ECLOSED;   /* forgotten while this call waited */
        if (rc == WEFT_ETIMEDOUT && until != c->deadline)
            return 1;   /* a recheck, not the call's timeout: try again */
    }
    return rc;
}

/* The code for a failed system call; errno keeps its value. */
static int io_error(int e)
{
    errno = e;
    switch (e) {
    case EBADF: case EINVAL: case EFAULT: case ENOTSOCK: case EOPNOTSUPP: case EISDIR:
        return WEFT_EINVAL;
    case ENOMEM: case ENOBUFS: case EMFILE: case ENFILE:
        return WEFT_ENOMEM;
    default:
        return WEFT_EIO;
    }
}

ptrdiff_t weft_fd_read_for(weft_fd user_fd, void *buf, size_t n, uint64_t timeout_ns)
{
    int fd = seam_fd(user_fd);
    if (fd < 0 || (!buf && n))
        return WEFT_EINVAL;
    io_ctx c;
    ctx_begin(&c, fd, WEFT__FD_READ, timeout_ns);
    bool last = false;
    for (;;) {
        ctx_snap(&c);
        ptrdiff_t got = -EAGAIN;
        if (!c.r || last || !weft__fd_drained(c.r, c.seq))   /* drained: the read would say EAGAIN (fdreg.c) */
            got = weft__os_fd_read(fd, buf, n);
        if (got > 0 && (size_t)got < n && c.r)
            weft__fd_note_short(c.r, c.seq);
        if (got >= 0)
            return got;
        if (got == -EINTR)
            continue;
        if (got != -EAGAIN)
            return io_error((int)-got);
        if (last)
            return WEFT_ETIMEDOUT;
        int rc = ctx_wait(&c);
        if (rc == 1)
            continue;
        if (rc == WEFT_ESHUTDOWN) {   /* look once, do not wait */
            got = weft__os_fd_read(fd, buf, n);
            return got >= 0 ? got : got == -EAGAIN ? WEFT_ESHUTDOWN : io_error((int)-got);
        }
        if (rc != WEFT_ETIMEDOUT || c.look_only)
            return rc;
        last = true;   /* ready when the timeout fired counts as ready */
    }
}

int weft_fd_write_all_for(weft_fd user_fd, const void *buf, size_t n, size_t *written,
                          uint64_t timeout_ns)
{
    int fd = seam_fd(user_fd);
    if (written)
        *written = 0;
    if (fd < 0 || (!buf && n))
        return WEFT_EINVAL;
    io_ctx c;
    ctx_begin(&c, fd, WEFT__FD_WRITE, timeout_ns);
    const char *p = buf;
    size_t done = 0;
    int end = 0;   /* after a timeout or shutdown: what to return at the next EAGAIN */
    while (done < n) {
        ctx_snap(&c);
        ptrdiff_t put = weft__os_fd_write(fd, p + done, n - done);
        if (put > 0) {
            done += (size_t)put;
            if (written)
                *written = done;
            continue;
        }
        if (put == -EINTR)
            continue;
        if (put != -EAGAIN)
            return io_error(put == 0 ? EIO : (int)-put);
        if (end)
            return end;
        int rc = ctx_wait(&c);
        if (rc == 1)
            continue;
        if ((rc != WEFT_ETIMEDOUT && rc != WEFT_ESHUTDOWN) || c.look_only)
            return rc;
        end = rc;   /* writable when the timeout fired counts as writable */
    }
    return WEFT_OK;
}

weft_fd weft_fd_accept_for(weft_fd user_fd, uint64_t timeout_ns)
{
    int fd = seam_fd(user_fd);
    if (fd < 0)
        return WEFT_EINVAL;
    io_ctx c;
    ctx_begin(&c, fd, WEFT__FD_READ, timeout_ns);
    int end = 0;   /* after a timeout or shutdown: what to return at the next EAGAIN */
    for (;;) {
        ctx_snap(&c);
        int a = weft__os_accept(fd);
        if (a >= 0) {
            /* A new descriptor: a record left registered under its number
             * (closed behind weft's back) is not its. */
            weft__fd_forget_all(a);
            return a;
        }
        if (a == -EINTR || a == -ECONNABORTED)
            continue;
        if (a != -EAGAIN)
            return io_error(-a);
        if (end)
            return end;
        int rc = ctx_wait(&c);
        if (rc == 1)
            continue;
        if (rc != WEFT_ETIMEDOUT && rc != WEFT_ESHUTDOWN)
            return rc;
        if (c.look_only)
            return rc;
        end = rc;   /* ready when the timeout fired (or destroy began) counts as ready */
        c.look_only = rc == WEFT_ESHUTDOWN;
    }
}

int weft_fd_connect_for(weft_fd user_fd, const struct sockaddr *addr, size_t addrlen,
                        uint64_t timeout_ns)
{
    int fd = seam_fd(user_fd);
    if (fd < 0 || !addr || addrlen == 0 || addrlen > 4096)
        return WEFT_EINVAL;
    weft__fd_forget_all(fd);   /* a socket about to connect is new: nothing registered is its */
    int rc = weft__os_connect(fd, addr, addrlen);
    if (rc == 0)
        return WEFT_OK;
    if (rc != -EINPROGRESS && rc != -EINTR)   /* EINTR: the connection goes on, as EINPROGRESS */
        return io_error(-rc);
    io_ctx c;
    ctx_begin(&c, fd, WEFT__FD_WRITE, timeout_ns);
    for (int end = 0;; ) {   /* end: after a timeout or shutdown, what to return if not ready */
        ctx_snap(&c);
        int now = weft__fd_thread_wait(fd, WEFT__OS_OUT, 0, 0);
        if (now == WEFT_EINVAL)
            return WEFT_EINVAL;
        if (now > 0) {
            int e = weft__os_sock_error(fd);
            if (e == 0)
                return WEFT_OK;
            return io_error(e < 0 ? -e : e);
        }
        if (end)
            return end;
        int w = ctx_wait(&c);
        if (w == 1)
            continue;
        if (w != WEFT_ETIMEDOUT && w != WEFT_ESHUTDOWN)
            return w;
        if (c.look_only)
            return w;
        end = w;
        c.look_only = w == WEFT_ESHUTDOWN;
    }
}

int weft_fd_forget(weft_fd user_fd)
{
    int fd = seam_fd(user_fd);
    if (fd < 0)
        return WEFT_EINVAL;
    weft__fd_forget_all(fd);
    return WEFT_OK;
}

int weft_fd_close(weft_fd user_fd)
{
    int fd = seam_fd(user_fd);
    if (fd < 0)
        return WEFT_EINVAL;
    weft__fd_forget_all(fd);
    int rc = weft__os_fd_close(fd) == -EBADF ? WEFT_EINVAL : WEFT_OK;
#if defined(_WIN32)
    /* After the close: a round under way polls a copy that still holds
     * the socket and would not notice; the next round reports it NVAL. */
    if (rc == WEFT_OK)
        weft__fd_wake_all();
#endif
    return rc;
}

/* ---- the line reader ---------------------------------------------------------- */

int weft_fd_reader_init(weft_fd_reader *r, weft_fd fd, void *buf, size_t cap)
{
    if (!r || !buf || cap == 0 || seam_fd(fd) < 0)
        return WEFT_EINVAL;
    *r = (weft_fd_reader){ .buf = buf, .cap = cap, .fd = fd };
    return WEFT_OK;
}

ptrdiff_t weft_fd_reader_read_line_for(weft_fd_reader *r, const char **line, uint64_t timeout_ns)
{
    if (!r || !line || !r->buf)
        return WEFT_EINVAL;
    r->start += r->taken;   /* the last line returned is the caller's no more */
    r->taken = 0;
    uint64_t deadline = weft__deadline(timeout_ns);
    bool tried = false;   /* the first read is made whatever the clock says (timeout 0 included) */
    for (;;) {
        size_t have = r->end - r->start;
        const char *nl = memchr(r->buf + r->start, '\n', have);
        size_t len = nl ? (size_t)(nl - (r->buf + r->start)) + 1 : have == r->cap || r->eof ? have : 0;
        if (len) {   /* a line; a piece as long as the buffer; the last bytes at end of stream */
            *line = r->buf + r->start;
            r->taken = len;
            return (ptrdiff_t)len;
        }
        if (r->eof)
            return 0;
        if (r->end == r->cap) {   /* room at the front only: move the partial line there */
            memmove(r->buf, r->buf + r->start, have);
            r->start = 0;
            r->end = have;
        }
        uint64_t left = timeout_ns;
        if (deadline) {
            uint64_t now = weft__now_ns();
            left = deadline > now ? deadline - now : 0;
            if (left == 0 && tried)
                return WEFT_ETIMEDOUT;
        }
        tried = true;
        ptrdiff_t got = weft_fd_read_for(r->fd, r->buf + r->end, r->cap - r->end, left);
        if (got < 0)
            return got;
        if (got == 0)
            r->eof = true;
        r->end += (size_t)got;
        if (timeout_ns == 0 && got > 0 && !memchr(r->buf + r->end - got, '\n', (size_t)got) &&
            r->end - r->start < r->cap)
            return WEFT_ETIMEDOUT;   /* a look only: one read, no whole line */
    }
}
