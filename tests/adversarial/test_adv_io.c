/* Adversarial tests of weft/io.h's descriptor calls, written from the
 * header and docs/reference/io.md alone (Linux), at 0 (this thread
 * bound), 1, 2 and 8 workers, from a task, the bound thread and a plain
 * thread:
 *
 *   bad_input      each EINVAL of read, write_all, accept, connect, the
 *                  reader, forget, close, wait (fd < 0, a number not open,
 *                  NULL buffers, addrlen 0 and 4097, events 0 or unknown);
 *                  n 0 reads 0
 *   timeouts       an empty pipe read with 0 and with 1 ms: ETIMEDOUT; a
 *                  full pipe written: ETIMEDOUT with *written the bytes
 *                  that went, and those bytes read back whole
 *   close_wakes    a task blocked in read_for (UINT64_MAX) on a pipe:
 *                  weft_fd_close from a plain thread ends it with ECLOSED,
 *                  weft_fd_forget (for a second task) too
 *   close_wakes_wait_for  the same for weft_fd_wait_for's one-shot wait
 *                  (30 s timeout): ends at once with EINVAL
 *   destroy_wakes  a task blocked in read_for, accept_for and a line read
 *                  with no timeout: weft_sched_destroy ends each with
 *                  ESHUTDOWN
 *   lines          the line reader: a line written in three pieces (the
 *                  first two read with timeout 0: ETIMEDOUT, nothing lost),
 *                  a line longer than the buffer in pieces, the last bytes
 *                  without '\n' at end of stream, then 0, then 0 again
 *   sockets        an AF_UNIX listener: accept_for with 0 (ETIMEDOUT),
 *                  connect_for and accept_for, the new descriptor
 *                  non-blocking and close-on-exec, a round trip of 1 MiB
 *                  between two tasks that block on each other; a connect
 *                  to a path nobody listens on: EIO
 *   pid_wait       pid 0 and -1: EINVAL; a child not ended: ETIMEDOUT and
 *                  not reaped; then OK with its status; then EINVAL
 *   close_two_waiters  two tasks read one pipe: weft_fd_close ends both
 *                  with ECLOSED (the second, waiting the one-shot way,
 *                  at once)
 *   forget_plain_thread  a plain thread's read (wait) asleep in poll:
 *                  weft_fd_forget and weft_fd_close end it with ECLOSED
 *                  (EINVAL) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adv_util.h"

static atomic_long bad;

static void pipe_nb(int p[2])
{
    WT_ASSERT_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

WT_TEST(adv_io, bad_input)
{
    int p[2];
    pipe_nb(p);
    char buf[8];
    WT_ASSERT_EQ(weft_fd_read_for(-1, buf, 8, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], NULL, 8, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], buf, 0, 0), 0);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], NULL, 0, 0), 0);
    size_t wr = 99;
    WT_ASSERT_EQ(weft_fd_write_all_for(-1, buf, 8, &wr, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_write_all_for(p[1], buf, 0, &wr, 0), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_accept_for(-1, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_accept_for(p[0], 0), WEFT_EINVAL);   /* not a socket */
    int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    WT_ASSERT(sk >= 0);
    WT_ASSERT_EQ(weft_fd_accept_for(sk, 0), WEFT_EINVAL);     /* not listening */
    int closed = dup(p[0]);
    WT_ASSERT(closed >= 0);
    close(closed);   /* a number not open: nothing is opened below */
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    WT_ASSERT_EQ(weft_fd_connect_for(-1, (struct sockaddr *)&a, sizeof a, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for(sk, NULL, sizeof a, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for(sk, (struct sockaddr *)&a, 0, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for(sk, (struct sockaddr *)&a, 4097, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for(p[0], (struct sockaddr *)&a, sizeof a, 0), WEFT_EINVAL);
    weft_fd_reader r;
    WT_ASSERT_EQ(weft_fd_reader_init(NULL, p[0], buf, 8), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, p[0], NULL, 8), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, p[0], buf, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, -1, buf, 8), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, p[0], buf, 8), WEFT_OK);
    const char *line = NULL;
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(NULL, &line, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_forget(-1), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_forget(p[0]), WEFT_OK);   /* never registered */
    WT_ASSERT_EQ(weft_fd_close(-1), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for(closed, buf, 8, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_write_all_for(closed, buf, 8, &wr, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(wr, 0);
    WT_ASSERT_EQ(weft_fd_close(closed), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], 0, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], (short)(POLLIN | 0x4000), 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(-1, POLLIN, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_wait_for(closed, POLLIN, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(0, NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(-1, NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(1, NULL, 0), WEFT_EINVAL);   /* not our child */
    WT_ASSERT_EQ(weft_fd_close(sk), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_close(p[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_close(p[1]), WEFT_OK);
}

/* ---- timeouts ------------------------------------------------------------ */

typedef struct tjob {
    int p[2];
    atomic_long fails;
} tjob;

static void timeouts_body(void *arg)
{
    tjob *j = arg;
    char buf[64];
    if (weft_fd_read_for(j->p[0], buf, sizeof buf, 0) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&j->fails, 1);
    if (weft_fd_read_for(j->p[0], buf, sizeof buf, 1000000) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&j->fails, 1);
    size_t n = 1 << 20;
    char *big = malloc(n);
    if (!big) {
        atomic_fetch_add(&j->fails, 1);
        return;
    }
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 31 + 7);
    size_t written = SIZE_MAX;
    if (weft_fd_write_all_for(j->p[1], big, n, &written, 2000000) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&j->fails, 1);
    if (written == 0 || written >= n)
        atomic_fetch_add(&j->fails, 1);
    size_t got = 0;
    while (got < written) {
        ptrdiff_t r = weft_fd_read_for(j->p[0], buf, sizeof buf, 0);
        if (r <= 0) {
            atomic_fetch_add(&j->fails, 1);
            break;
        }
        if (memcmp(buf, big + got, (size_t)r) != 0)
            atomic_fetch_add(&j->fails, 1);
        got += (size_t)r;
    }
    if (got != written || weft_fd_read_for(j->p[0], buf, sizeof buf, 0) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&j->fails, 1);
    free(big);
}

static void *timeouts_thread(void *arg)
{
    timeouts_body(arg);
    return NULL;
}

WT_TEST(adv_io, timeouts)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            weft_sched *s = adv_sched(w);
            tjob j;
            memset(&j, 0, sizeof j);
            pipe_nb(j.p);
            if (caller == 0)
                timeouts_body(&j);
            else if (caller == 1)
                adv_run_in_task(s, timeouts_body, &j);
            else
                adv_on_thread(timeouts_thread, &j);
            WT_ASSERT(atomic_load(&j.fails) == 0, "w %u caller %d: %ld", w, caller,
                      atomic_load(&j.fails));
            WT_ASSERT_EQ(weft_fd_close(j.p[0]), WEFT_OK);
            WT_ASSERT_EQ(weft_fd_close(j.p[1]), WEFT_OK);
            adv_sched_end(s, w);
        }
    }
}

/* ---- a close, a forget, a destroy end the waits -------------------------- */

typedef struct waiter {
    int fd;
    int kind;         /* 0 read, 1 accept, 2 line, 3 weft_fd_wait_for (30 s) */
    atomic_long rc;
    weft_event done;
} waiter;

static void wait_task(void *arg)
{
    waiter *x = arg;
    char buf[16];
    long rc;
    if (x->kind == 0) {
        rc = weft_fd_read_for(x->fd, buf, sizeof buf, UINT64_MAX);
    } else if (x->kind == 1) {
        rc = weft_fd_accept_for(x->fd, UINT64_MAX);
    } else if (x->kind == 3) {
        rc = weft_fd_wait_for(x->fd, POLLIN, 30ull * 1000000000);
    } else {
        weft_fd_reader r;
        const char *line;
        weft_fd_reader_init(&r, x->fd, buf, sizeof buf);
        rc = weft_fd_reader_read_line_for(&r, &line, UINT64_MAX);
    }
    atomic_store(&x->rc, rc);
    weft_event_signal(&x->done);
}

/* Polls s's state until n fibers show as waiting on a descriptor. */
static void until_blocked(weft_sched *s, int n)
{
    for (int tries = 0; tries < 20000; tries++) {
        char *st = wt_sched_state(s);
        int found = 0;
        for (const char *p = st; p && (p = strstr(p, "waits on ")) != NULL; p++)
            found++;
        free(st);
        if (found >= n)
            return;
        usleep(1000);
    }
    WT_FAIL("the waits never showed as blocked");
}

typedef struct closer {
    int fd;
    int forget;
} closer;

static void *close_thread(void *arg)
{
    closer *c = arg;
    if ((c->forget ? weft_fd_forget(c->fd) : weft_fd_close(c->fd)) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    return NULL;
}

/* A task blocked in a call of kind (waiter.kind) on a pipe; weft_fd_close
 * (or weft_fd_forget) from a plain thread must end it with want. */
static void close_case(unsigned w, int forget, int kind, long want)
{
    weft_sched *s = adv_sched(w);
    atomic_store(&bad, 0);
    int p[2];
    pipe_nb(p);
    waiter x = { .fd = p[0], .kind = kind };
    atomic_store(&x.rc, 1);
    weft_event_init(&x.done, true, false);
    WT_ASSERT_EQ(weft_spawn(s, wait_task, &x), WEFT_OK);
    until_blocked(s, 1);
    closer c = { p[0], forget };
    adv_on_thread(close_thread, &c);
    WT_ASSERT_EQ(weft_event_wait_for(&x.done, 60ull * 1000000000), WEFT_OK);
    WT_ASSERT(atomic_load(&x.rc) == want, "w %u, kind %d, %s: ended %ld", w, kind,
              forget ? "forget" : "close", atomic_load(&x.rc));
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    if (forget)
        close(p[0]);
    close(p[1]);
    adv_sched_end(s, w);
    weft_event_destroy(&x.done);
}

WT_TEST(adv_io, close_wakes)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        for (int forget = 0; forget < 2; forget++)
            close_case(w, forget, 0, WEFT_ECLOSED);
    }
}

/* A task in weft_fd_wait_for on a descriptor no call registered (the
 * one-shot way): weft_fd_forget or weft_fd_close from a plain thread ends
 * it at once with WEFT_EINVAL (io.h), not at its 30 s timeout. */
WT_TEST(adv_io, close_wakes_wait_for, .timeout = 240)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        for (int forget = 0; forget < 2; forget++)
            close_case(w, forget, 3, WEFT_EINVAL);
    }
}

WT_TEST(adv_io, destroy_wakes)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        int p[2], q[2];
        pipe_nb(p);
        pipe_nb(q);
        int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "weft-adv-destroy-%d-%u", (int)getpid(), w);
        socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                     strlen(a.sun_path + 1));
        WT_ASSERT_EQ(bind(ls, (struct sockaddr *)&a, alen), 0);
        WT_ASSERT_EQ(listen(ls, 4), 0);
        waiter x[3] = { { .fd = p[0], .kind = 0 }, { .fd = ls, .kind = 1 },
                        { .fd = q[0], .kind = 2 } };
        for (int i = 0; i < 3; i++) {
            atomic_store(&x[i].rc, 1);
            weft_event_init(&x[i].done, true, false);
            WT_ASSERT_EQ(weft_spawn(s, wait_task, &x[i]), WEFT_OK);
        }
        until_blocked(s, 3);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        for (int i = 0; i < 3; i++) {
            WT_ASSERT(atomic_load(&x[i].rc) == WEFT_ESHUTDOWN, "kind %d: %ld", i,
                      atomic_load(&x[i].rc));
            weft_event_destroy(&x[i].done);
        }
        close(p[0]);
        close(p[1]);
        close(q[0]);
        close(q[1]);
        close(ls);
    }
}

/* ---- the line reader ----------------------------------------------------- */

typedef struct ljob {
    int p[2];
    atomic_long fails;
} ljob;

#define LFAIL(j) atomic_fetch_add(&(j)->fails, 1)

static void expect_line(ljob *j, weft_fd_reader *r, const char *want, uint64_t timeout)
{
    const char *line = NULL;
    ptrdiff_t n = weft_fd_reader_read_line_for(r, &line, timeout);
    if (n != (ptrdiff_t)strlen(want) || (n > 0 && memcmp(line, want, (size_t)n) != 0)) {
        fprintf(stderr, "want %zu bytes \"%.*s\", got %td \"%.*s\"\n", strlen(want),
                (int)strcspn(want, "\n"), want, n, n > 0 ? (int)strcspn(line, "\n") : 0,
                n > 0 ? line : "");
        LFAIL(j);
    }
}

static void put(ljob *j, const char *s)
{
    if (weft_fd_write_all_for(j->p[1], s, strlen(s), NULL, UINT64_MAX) != WEFT_OK)
        LFAIL(j);
}

static void lines_body(void *arg)
{
    ljob *j = arg;
    char buf[8];
    weft_fd_reader r;
    const char *line = NULL;
    if (weft_fd_reader_init(&r, j->p[0], buf, sizeof buf) != WEFT_OK)
        LFAIL(j);
    put(j, "ab");
    if (weft_fd_reader_read_line_for(&r, &line, 0) != WEFT_ETIMEDOUT)
        LFAIL(j);
    put(j, "c");
    if (weft_fd_reader_read_line_for(&r, &line, 1000000) != WEFT_ETIMEDOUT)
        LFAIL(j);
    put(j, "d\nxy\n0123456789abcdefghij\nend");
    expect_line(j, &r, "abcd\n", 0);
    expect_line(j, &r, "xy\n", 0);
    expect_line(j, &r, "01234567", 0);
    expect_line(j, &r, "89abcdef", 0);
    expect_line(j, &r, "ghij\n", 0);
    close(j->p[1]);
    j->p[1] = -1;
    expect_line(j, &r, "end", UINT64_MAX);
    expect_line(j, &r, "", UINT64_MAX);
    expect_line(j, &r, "", 0);
}

static void *lines_thread(void *arg)
{
    lines_body(arg);
    return NULL;
}

WT_TEST(adv_io, lines)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            weft_sched *s = adv_sched(w);
            ljob j;
            memset(&j, 0, sizeof j);
            pipe_nb(j.p);
            if (caller == 0)
                lines_body(&j);
            else if (caller == 1)
                adv_run_in_task(s, lines_body, &j);
            else
                adv_on_thread(lines_thread, &j);
            WT_ASSERT(atomic_load(&j.fails) == 0, "w %u caller %d", w, caller);
            WT_ASSERT_EQ(weft_fd_close(j.p[0]), WEFT_OK);
            adv_sched_end(s, w);
        }
    }
}

/* ---- sockets --------------------------------------------------------------- */

#define MIB (1u << 20)

typedef struct sjob {
    weft_sched *s;
    struct sockaddr_un a;
    socklen_t alen;
    int ls;
    atomic_long fails;
    weft_event server_done;
    char *data;
} sjob;

static void server(void *arg)
{
    sjob *j = arg;
    int c = (int)weft_fd_accept_for(j->ls, UINT64_MAX);
    if (c < 0) {
        atomic_fetch_add(&j->fails, 1);
        weft_event_signal(&j->server_done);
        return;
    }
    if (!(fcntl(c, F_GETFL) & O_NONBLOCK) || !(fcntl(c, F_GETFD) & FD_CLOEXEC))
        atomic_fetch_add(&j->fails, 1);
    /* echo everything back, in 4 KiB reads */
    char buf[4096];
    for (;;) {
        ptrdiff_t n = weft_fd_read_for(c, buf, sizeof buf, UINT64_MAX);
        if (n == 0)
            break;
        if (n < 0 || weft_fd_write_all_for(c, buf, (size_t)n, NULL, UINT64_MAX) != WEFT_OK) {
            atomic_fetch_add(&j->fails, 1);
            break;
        }
    }
    weft_fd_close(c);
    weft_event_signal(&j->server_done);
}

typedef struct sender {
    int fd;
    const char *data;
    atomic_long *fails;
} sender;

static void send_all(void *arg)
{
    sender *x = arg;
    if (weft_fd_write_all_for(x->fd, x->data, MIB, NULL, UINT64_MAX) != WEFT_OK)
        atomic_fetch_add(x->fails, 1);
    shutdown(x->fd, SHUT_WR);
}

static void client(void *arg)
{
    sjob *j = arg;
    if (weft_fd_accept_for(j->ls, 0) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&j->fails, 1);
    if (weft_spawn(j->s, server, j) != WEFT_OK)
        atomic_fetch_add(&j->fails, 1);
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (weft_fd_connect_for(c, (struct sockaddr *)&j->a, j->alen, UINT64_MAX) != WEFT_OK)
        atomic_fetch_add(&j->fails, 1);
    /* The send and the echo block on each other: a task sends while this
     * one reads. */
    sender x = { c, j->data, &j->fails };
    if (weft_spawn(j->s, send_all, &x) != WEFT_OK)
        atomic_fetch_add(&j->fails, 1);
    char *back = malloc(MIB);
    size_t got = 0;
    while (back && got < MIB) {
        ptrdiff_t n = weft_fd_read_for(c, back + got, MIB - got, UINT64_MAX);
        if (n <= 0) {
            atomic_fetch_add(&j->fails, 1);
            break;
        }
        got += (size_t)n;
    }
    if (!back || memcmp(back, j->data, MIB) != 0)
        atomic_fetch_add(&j->fails, 1);
    free(back);
    if (weft_event_wait(&j->server_done) != WEFT_OK)
        atomic_fetch_add(&j->fails, 1);
    weft_fd_close(c);
    /* Nobody listens there: refused. */
    struct sockaddr_un none = j->a;
    none.sun_path[1] ^= 1;
    int d = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (weft_fd_connect_for(d, (struct sockaddr *)&none, j->alen, 1000000000) != WEFT_EIO)
        atomic_fetch_add(&j->fails, 1);
    weft_fd_close(d);
}

WT_TEST(adv_io, sockets)
{
    char *data = malloc(MIB);
    WT_ASSERT(data);
    for (size_t i = 0; i < MIB; i++)
        data[i] = (char)(i * 131 + (i >> 9));
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        sjob j;
        memset(&j, 0, sizeof j);
        j.s = adv_sched(w);
        j.data = data;
        j.a.sun_family = AF_UNIX;
        snprintf(j.a.sun_path + 1, sizeof j.a.sun_path - 1, "weft-adv-sock-%d-%u",
                 (int)getpid(), w);
        j.alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                             strlen(j.a.sun_path + 1));
        j.ls = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        WT_ASSERT_EQ(bind(j.ls, (struct sockaddr *)&j.a, j.alen), 0);
        WT_ASSERT_EQ(listen(j.ls, 4), 0);
        weft_event_init(&j.server_done, true, false);
        adv_run_in_task(j.s, client, &j);
        WT_ASSERT(atomic_load(&j.fails) == 0, "w %u: %ld", w, atomic_load(&j.fails));
        WT_ASSERT_EQ(weft_fd_close(j.ls), WEFT_OK);
        adv_sched_end(j.s, w);
        weft_event_destroy(&j.server_done);
    }
    free(data);
}

/* ---- child processes ----------------------------------------------------- */

WT_TEST(adv_io, pid_wait)
{
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = adv_sched(w);
        int p[2];
        WT_ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        WT_ASSERT(pid >= 0);
        if (pid == 0) {
            char c;
            ssize_t n = read(p[0], &c, 1);
            _exit(n == 1 ? 42 : 1);
        }
        int st = 0;
        WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, 0), WEFT_ETIMEDOUT);
        WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, 2000000), WEFT_ETIMEDOUT);
        WT_ASSERT_EQ(waitpid(pid, NULL, WNOHANG), 0);   /* not reaped */
        WT_ASSERT_EQ(write(p[1], "x", 1), 1);
        WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, UINT64_MAX), WEFT_OK);
        WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 42);
        WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, 0), WEFT_EINVAL);
        close(p[0]);
        close(p[1]);
        adv_sched_end(s, w);
    }
}

/* ---- two waiters on one descriptor; a plain thread's wait ---------------- */

WT_TEST(adv_io, close_two_waiters)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        atomic_store(&bad, 0);
        int p[2];
        pipe_nb(p);
        waiter x[2] = { { .fd = p[0], .kind = 0 }, { .fd = p[0], .kind = 0 } };
        for (int i = 0; i < 2; i++) {
            atomic_store(&x[i].rc, 1);
            weft_event_init(&x[i].done, true, false);
            WT_ASSERT_EQ(weft_spawn(s, wait_task, &x[i]), WEFT_OK);
        }
        until_blocked(s, 2);
        closer c = { p[0], 0 };
        adv_on_thread(close_thread, &c);
        for (int i = 0; i < 2; i++) {
            int rc = weft_event_wait_for(&x[i].done, 20ull * 1000000000);
            WT_ASSERT(rc == WEFT_OK, "w %u: waiter %d still waits after weft_fd_close", w, i);
            WT_ASSERT(atomic_load(&x[i].rc) == WEFT_ECLOSED, "w %u waiter %d: %ld", w, i,
                      atomic_load(&x[i].rc));
        }
        close(p[1]);
        adv_sched_end(s, w);
        for (int i = 0; i < 2; i++)
            weft_event_destroy(&x[i].done);
    }
}

typedef struct plain_wait {
    int fd;
    bool wait_only;   /* weft_fd_wait_for, not weft_fd_read_for */
    atomic_int tid;
    atomic_long rc;
} plain_wait;

static void *plain_reader(void *arg)
{
    plain_wait *x = arg;
    atomic_store(&x->tid, (int)gettid());
    char b;
    const uint64_t limit = 20ull * 1000000000;
    atomic_store(&x->rc, x->wait_only ? weft_fd_wait_for(x->fd, POLLIN, limit)
                                      : weft_fd_read_for(x->fd, &b, 1, limit));
    return NULL;
}

/* Has thread tid gone to sleep in a system call other than read? */
static bool in_poll(int tid)
{
    char path[64], text[64] = { 0 };
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    long nr = ok ? strtol(text, NULL, 10) : -1;
    return nr == SYS_ppoll || nr == SYS_poll;
}

/* weft_fd_forget and weft_fd_close: "the waits on it in progress return
 * WEFT_ECLOSED" (weft_fd_wait_for's: WEFT_EINVAL); here the wait is a
 * plain thread's, asleep in poll when the other thread forgets. */
static void plain_case(bool wait_only, bool by_close)
{
    int p[2];
    pipe_nb(p);
    plain_wait x = { .fd = p[0], .wait_only = wait_only };
    atomic_store(&x.rc, 1);
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, plain_reader, &x), 0);
    int tries = 0;
    while (tries++ < 20000 && !(atomic_load(&x.tid) && in_poll(atomic_load(&x.tid))))
        usleep(1000);
    if (tries >= 20000) {
        pthread_join(t, NULL);
        WT_SKIP("the reader never showed as asleep in poll");
    }
    WT_ASSERT_EQ(by_close ? weft_fd_close(p[0]) : weft_fd_forget(p[0]), WEFT_OK);
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
    long want = wait_only ? WEFT_EINVAL : WEFT_ECLOSED;
    WT_ASSERT(atomic_load(&x.rc) == want, "a plain thread's %s ended with %ld after %s",
              wait_only ? "weft_fd_wait_for" : "weft_fd_read_for", atomic_load(&x.rc),
              by_close ? "weft_fd_close" : "weft_fd_forget");
    if (!by_close)
        close(p[0]);
    close(p[1]);
}

WT_TEST(adv_io, forget_plain_thread)
{
    plain_case(false, false);
    plain_case(false, true);
    plain_case(true, false);
    plain_case(true, true);
}
