/* The straight-line descriptor calls and persistent registration (issue
 * 34): weft_fd_read_for, weft_fd_write_all_for, weft_fd_accept_for,
 * weft_fd_connect_for, weft_fd_forget, weft_fd_close, written from
 * weft/io.h at 0 (a bound thread), 1 and 2 workers. 10^4 TCP connections
 * with every byte checked, a reader and a writer task blocking on each
 * other through one socket, a wait ended by weft_fd_close, a number closed
 * and reused (with weft_fd_close, and behind weft's back), timeouts racing
 * readiness, bad input, plain threads, destroy with calls pending. No
 * timing assertions. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

#define MS 1000000ull
#define SEC (1000 * MS)

static void make_pipe(int fd[2])
{
    WT_ASSERT_EQ(pipe2(fd, O_NONBLOCK | O_CLOEXEC), 0);
}

static unsigned char pattern(unsigned conn, size_t i)
{
    return (unsigned char)(conn * 131u + i * 7u + (i >> 9));
}

/* ---- 10^4 connections, every byte checked ----------------------------------------- */

#define CONNS 10000
#define BATCH 100
#define BIG (256 * 1024)   /* more than the socket buffers: both sides wait */

static int lfd;
static struct sockaddr_in laddr;
static weft_sched *echo_s;
static atomic_uint conn_ok, conn_bad, served;
static unsigned batch_base;

struct conn {
    unsigned id;
    int fd;
    size_t size;
    atomic_int write_rc;
};
static struct conn conns[BATCH];

static size_t size_of(unsigned id)
{
    return id % 50 == 7 ? BIG : 1 + (id * 7919u) % 6000u;
}

static void bad(const char *what, unsigned id, long rc)
{
    if (atomic_fetch_add(&conn_bad, 1) < 5)
        fprintf(stderr, "connection %u: %s: %ld (%s)\n", id, what, rc, strerror(errno));
}

/* The server side of one connection: echoes until the client closes. */
static void serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    ptrdiff_t got;
    while ((got = weft_fd_read_for(fd, buf, sizeof buf, 30 * SEC)) > 0)
        if (weft_fd_write_all_for(fd, buf, (size_t)got, NULL, 30 * SEC) != WEFT_OK)
            break;
    WT_ASSERT_EQ(weft_fd_close(fd), WEFT_OK);
    atomic_fetch_add(&served, 1);
}

static void acceptor(void *arg)
{
    unsigned n = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < n; i++) {
        int fd = weft_fd_accept_for(lfd, 30 * SEC);
        if (fd < 0) {
            bad("accept", i, fd);
            return;
        }
        WT_ASSERT(fcntl(fd, F_GETFL) & O_NONBLOCK);
        WT_ASSERT_EQ(weft_spawn(echo_s, serve, (void *)(intptr_t)fd), WEFT_OK);
    }
}

/* Writes the connection's message while its client task reads the echo:
 * the two block on each other through the socket. */
static void conn_writer(void *arg)
{
    struct conn *c = arg;
    unsigned char *out = malloc(c->size);
    WT_ASSERT(out != NULL);
    for (size_t i = 0; i < c->size; i++)
        out[i] = pattern(c->id, i);
    size_t written = 0;
    int rc = weft_fd_write_all_for(c->fd, out, c->size, &written, 30 * SEC);
    if (rc == WEFT_OK && written != c->size)
        rc = -100;
    free(out);
    atomic_store(&c->write_rc, rc);
}

static void client(void *arg)
{
    struct conn *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    WT_ASSERT(fd >= 0);
    int rc = weft_fd_connect_for(fd, (struct sockaddr *)&laddr, sizeof laddr, 30 * SEC);
    if (rc != WEFT_OK) {
        bad("connect", c->id, rc);
        weft_fd_close(fd);
        return;
    }
    c->fd = fd;
    atomic_store(&c->write_rc, 1);
    WT_ASSERT_EQ(weft_spawn(echo_s, conn_writer, c), WEFT_OK);
    unsigned char buf[4096];
    size_t at = 0;
    while (at < c->size) {
        ptrdiff_t got = weft_fd_read_for(fd, buf, sizeof buf, 30 * SEC);
        if (got <= 0) {
            bad("read", c->id, (long)got);
            break;
        }
        for (ptrdiff_t i = 0; i < got; i++)
            if (buf[i] != pattern(c->id, at + (size_t)i)) {
                bad("a byte came back wrong", c->id, (long)(at + (size_t)i));
                got = -1;
                break;
            }
        if (got < 0)
            break;
        at += (size_t)got;
    }
    /* Every byte echoed means the writer wrote every byte: it has left
     * the socket by the time write_rc says how it ended. */
    while (at == c->size && atomic_load(&c->write_rc) == 1)
        weft_yield();
    if (at == c->size && atomic_load(&c->write_rc) == WEFT_OK)
        atomic_fetch_add(&conn_ok, 1);
    else if (at == c->size)
        bad("write", c->id, atomic_load(&c->write_rc));
    struct linger lg = { 1, 0 };   /* no TIME_WAIT: 10^4 connections must not run out of ports */
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    WT_ASSERT_EQ(weft_fd_close(fd), WEFT_OK);
}

static void setup_batch(weft_sched *s)
{
    echo_s = s;
    WT_ASSERT_EQ(weft_spawn(s, acceptor, (void *)(uintptr_t)BATCH), WEFT_OK);
    for (unsigned i = 0; i < BATCH; i++) {
        conns[i].id = batch_base + i;
        conns[i].size = size_of(batch_base + i);
        WT_ASSERT_EQ(weft_spawn(s, client, &conns[i]), WEFT_OK);
    }
}

WT_TEST(io_calls, ten_thousand_connections, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        WT_ASSERT(lfd >= 0);
        memset(&laddr, 0, sizeof laddr);
        laddr.sin_family = AF_INET;
        laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof laddr;
        WT_ASSERT_EQ(bind(lfd, (struct sockaddr *)&laddr, sizeof laddr), 0);
        WT_ASSERT_EQ(listen(lfd, 1024), 0);
        WT_ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&laddr, &len), 0);
        atomic_store(&conn_ok, 0);
        atomic_store(&conn_bad, 0);
        atomic_store(&served, 0);
        /* One scheduler per batch of BATCH at once: registrations of
         * closed descriptors' numbers are reused across the batches of
         * the same scheduler too (every 10th batch shares one). */
        weft_sched *s = make_sched(w);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        for (batch_base = 0; batch_base < CONNS && atomic_load(&conn_bad) == 0; batch_base += BATCH) {
            setup_batch(s);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        }
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&conn_bad), 0);
        WT_ASSERT_EQ(atomic_load(&conn_ok), CONNS);
        WT_ASSERT_EQ(atomic_load(&served), CONNS);
        WT_ASSERT_EQ(weft_fd_close(lfd), WEFT_OK);
    }
}

/* ---- weft_fd_close ends a wait; a number closed and reused ---------------------- */

static int cl_fd[2], cl_new[2];
static atomic_int cl_rc;
static atomic_bool cl_parked;

static void cl_reader(void *arg)
{
    char c;
    atomic_store(&cl_parked, true);
    atomic_store(&cl_rc, (int)weft_fd_read_for(cl_fd[0], &c, 1, 30 * SEC));
}

static void cl_closer(void *arg)
{
    /* Bounded retries: the reader is spawned first and parks at its first
     * EAGAIN; give it turns until it has started, then a few more. */
    for (int i = 0; i < 1000 && !atomic_load(&cl_parked); i++)
        weft_yield();
    weft_sleep(MS);
    int num = cl_fd[0];
    WT_ASSERT_EQ(weft_fd_close(num), WEFT_OK);
    /* The number reused at once, while the old wait may still be
     * returning: the new descriptor's calls must work. */
    make_pipe(cl_new);
    if (cl_new[0] != num) {   /* the lowest free number is usually num itself */
        WT_ASSERT_EQ(dup3(cl_new[0], num, O_CLOEXEC), num);
        close(cl_new[0]);
        cl_new[0] = num;
    }
}

static void cl_after(void *arg)
{
    char c = 0;
    /* Parks on the reused number (nothing there yet), woken by cl_late. */
    ptrdiff_t got = weft_fd_read_for(cl_new[0], &c, 1, 30 * SEC);
    WT_ASSERT_EQ(got, 1);
    WT_ASSERT_EQ(c, 'n');
}

static void cl_late(void *arg)
{
    weft_sleep(2 * MS);
    WT_ASSERT_EQ(weft_fd_write_all_for(cl_new[1], "n", 1, NULL, SEC), WEFT_OK);
}

static void setup_close1(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, cl_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, cl_closer, NULL), WEFT_OK);
}

static void setup_close2(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, cl_after, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, cl_late, NULL), WEFT_OK);
}

WT_TEST(io_calls, close_ends_wait_and_number_reused, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(cl_fd);
        atomic_store(&cl_parked, false);
        atomic_store(&cl_rc, 0);
        weft_sched *s = make_sched(w);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        setup_close1(s);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        /* Closed while the reader waited (or, were it late, before its
         * read: then read(2) says EBADF). */
        int rc = atomic_load(&cl_rc);
        WT_ASSERT(rc == WEFT_ECLOSED || rc == WEFT_EINVAL, "rc %d", rc);
        setup_close2(s);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        close(cl_fd[1]);
        close(cl_new[0]);
        close(cl_new[1]);
    }
}

/* Closed behind weft's back (close(2), not weft_fd_close) while
 * registered, and the number reused: the stale registration ends the
 * first wait at its timeout, which registers the new descriptor; the
 * calls after it wait and wake as usual. */
static int bb_fd[2], bb_new[2];

static void bb_body(void *arg)
{
    char c;
    WT_ASSERT_EQ(weft_fd_read_for(bb_fd[0], &c, 1, MS), WEFT_ETIMEDOUT);   /* registers it */
    int num = bb_fd[0];
    close(num);
    make_pipe(bb_new);
    if (bb_new[0] != num) {   /* the lowest free number is usually num itself */
        WT_ASSERT_EQ(dup3(bb_new[0], num, O_CLOEXEC), num);
        close(bb_new[0]);
        bb_new[0] = num;
    }
    ptrdiff_t got = weft_fd_read_for(num, &c, 1, 20 * MS);
    WT_ASSERT(got == WEFT_ETIMEDOUT, "got %ld", (long)got);
    WT_ASSERT_EQ(write(bb_new[1], "b", 1), 1);
    WT_ASSERT_EQ(weft_fd_read_for(num, &c, 1, 30 * SEC), 1);
    WT_ASSERT_EQ(c, 'b');
}

static void bb_late(void *arg)
{
    weft_sleep(2 * MS);
    WT_ASSERT_EQ(write(bb_new[1], "c", 1), 1);
}

static void bb_second(void *arg)
{
    char c;
    WT_ASSERT_EQ(weft_spawn((weft_sched *)arg, bb_late, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_read_for(bb_new[0], &c, 1, 30 * SEC), 1);   /* parks, woken by an edge */
    WT_ASSERT_EQ(c, 'c');
}

static weft_sched *bb_s;
static void setup_bb(weft_sched *s)
{
    bb_s = s;
    WT_ASSERT_EQ(weft_spawn(s, bb_body, NULL), WEFT_OK);
}
static void setup_bb2(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, bb_second, s), WEFT_OK);
}

WT_TEST(io_calls, closed_behind_back_and_reused, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(bb_fd);
        weft_sched *s = make_sched(w);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        setup_bb(s);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        setup_bb2(s);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        close(bb_fd[1]);
        WT_ASSERT_EQ(weft_fd_close(bb_new[0]), WEFT_OK);
        close(bb_new[1]);
    }
}

/* The same, but the first wait on the reused number has no timeout of
 * its own: it must still end (a parked wait looks again within a second,
 * fdreg.c), and read what was written meanwhile. The write comes from a
 * task that waits until the scheduler lists the read as parked on the
 * number (so the wait is parked, on the stale registration, when the
 * byte arrives): forced, not hoped for. */
static int bu_fd[2], bu_new[2];
static atomic_bool bu_parked;

static void bu_late(void *arg)
{
    (void)arg;
    char want[48];
    snprintf(want, sizeof want, "waits on fd %d", bu_new[0]);
    bool listed = false;
    for (unsigned i = 0; i < 40000 && !listed; i++) {   /* 10 s at most */
        char *text = wt_sched_state(weft_sched_current());
        listed = text && strstr(text, want);
        free(text);
        if (!listed)
            weft_sleep(MS / 4);
    }
    atomic_store(&bu_parked, listed);
    WT_ASSERT_EQ(write(bu_new[1], "u", 1), 1);
}

static void bu_body(void *arg)
{
    char c;
    WT_ASSERT_EQ(weft_fd_read_for(bu_fd[0], &c, 1, MS), WEFT_ETIMEDOUT);   /* registers it */
    int num = bu_fd[0];
    close(num);
    make_pipe(bu_new);
    if (bu_new[0] != num) {
        WT_ASSERT_EQ(dup3(bu_new[0], num, O_CLOEXEC), num);
        close(bu_new[0]);
        bu_new[0] = num;
    }
    WT_ASSERT_EQ(weft_spawn((weft_sched *)arg, bu_late, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_read_for(num, &c, 1, UINT64_MAX), 1);
    WT_ASSERT_EQ(c, 'u');
}

WT_TEST(io_calls, closed_behind_back_untimed_wait_ends, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(bu_fd);
        weft_sched *s = make_sched(w);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(s, bu_body, s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        WT_ASSERT(atomic_load(&bu_parked), "%u workers: the untimed read was never listed as parked", w);
        close(bu_fd[1]);
        WT_ASSERT_EQ(weft_fd_close(bu_new[0]), WEFT_OK);
        close(bu_new[1]);
    }
}

/* ---- timeouts racing readiness -------------------------------------------------- */

#define RACE_ROUNDS 300
static int rc_fd[2];
static atomic_uint rc_round, rc_ready, rc_timedout;

static void *race_writer(void *arg)
{
    for (unsigned r = 0; r < RACE_ROUNDS; r++) {
        while (atomic_load(&rc_round) != r)
            ;
        /* About as long as the reader's timeout: either may come first. */
        for (volatile unsigned spin = 0; spin < (r * 2654435761u) % 40000u; spin++)
            ;
        unsigned char b = (unsigned char)r;
        WT_ASSERT_EQ(write(rc_fd[1], &b, 1), 1);
    }
    return NULL;
}

static void race_reader(void *arg)
{
    for (unsigned r = 0; r < RACE_ROUNDS; r++) {
        unsigned char b;
        atomic_store(&rc_round, r);
        ptrdiff_t got = weft_fd_read_for(rc_fd[0], &b, 1, 20000 + (r % 7) * 10000);
        if (got == WEFT_ETIMEDOUT) {
            atomic_fetch_add(&rc_timedout, 1);
            got = weft_fd_read_for(rc_fd[0], &b, 1, 30 * SEC);   /* not consumed by the lost race */
        } else {
            atomic_fetch_add(&rc_ready, 1);
        }
        WT_ASSERT_EQ(got, 1);
        WT_ASSERT_EQ(b, (unsigned char)r);   /* exactly once, in order */
    }
}

static void setup_race(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, race_reader, NULL), WEFT_OK);
}

WT_TEST(io_calls, timeouts_race_readiness, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(rc_fd);
        atomic_store(&rc_round, 0);
        atomic_store(&rc_ready, 0);
        atomic_store(&rc_timedout, 0);
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, race_writer, NULL), 0);
        run_on(w, setup_race);
        pthread_join(th, NULL);
        WT_ASSERT_EQ(atomic_load(&rc_ready) + atomic_load(&rc_timedout), RACE_ROUNDS);
        WT_ASSERT_EQ(weft_fd_close(rc_fd[0]), WEFT_OK);
        close(rc_fd[1]);
    }
}

/* ---- bad input, plain threads, refused and timed-out calls -------------------------- */

static void edges_body(void *arg)
{
    char c;
    int p[2];
    make_pipe(p);
    WT_ASSERT_EQ(weft_fd_read_for(-1, &c, 1, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], NULL, 1, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], NULL, 0, MS), 0);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], &c, 1, 0), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], &c, 1, MS), WEFT_ETIMEDOUT);
    size_t written = 99;
    WT_ASSERT_EQ(weft_fd_write_all_for(-1, "x", 1, &written, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(written, 0);
    WT_ASSERT_EQ(weft_fd_write_all_for(p[1], NULL, 1, NULL, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_write_all_for(p[1], "xy", 2, &written, MS), WEFT_OK);
    WT_ASSERT_EQ(written, 2);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], &c, 1, MS), 1);
    WT_ASSERT_EQ(c, 'x');
    /* A registered descriptor ready for reading: weft_fd_wait_for returns at once. */
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], POLLIN, UINT64_MAX), POLLIN);
    WT_ASSERT_EQ(weft_fd_read_for(p[0], &c, 1, MS), 1);
    WT_ASSERT_EQ(weft_fd_wait_for(p[0], POLLIN, MS), WEFT_ETIMEDOUT);
    /* A full pipe: write_all times out having written part, and says how much. */
    static char big[1 << 20];
    WT_ASSERT_EQ(weft_fd_write_all_for(p[1], big, sizeof big, &written, 2 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT(written > 0 && written < sizeof big, "written %zu", written);
    /* The reader gone: EPIPE (SIGPIPE ignored by the test's main). */
    WT_ASSERT_EQ(weft_fd_close(p[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_write_all_for(p[1], "x", 1, NULL, MS), WEFT_EIO);
    WT_ASSERT_EQ(errno, EPIPE);
    WT_ASSERT_EQ(weft_fd_close(p[1]), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_close(p[1]), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_close(-1), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_forget(-1), WEFT_EINVAL);
    /* Not a socket; no listener there; accept with nothing coming. */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    WT_ASSERT(s >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    WT_ASSERT_EQ(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    WT_ASSERT_EQ(getsockname(s, (struct sockaddr *)&a, &len), 0);
    WT_ASSERT_EQ(weft_fd_accept_for(s, MS), WEFT_EINVAL);   /* bound, not listening */
    WT_ASSERT_EQ(listen(s, 8), 0);
    WT_ASSERT_EQ(weft_fd_accept_for(s, 2 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_fd_accept_for(-1, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_close(s), WEFT_OK);   /* the port is free again: nobody listens */
    int c2 = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    WT_ASSERT_EQ(weft_fd_connect_for(c2, (struct sockaddr *)&a, sizeof a, 5 * SEC), WEFT_EIO);
    WT_ASSERT_EQ(errno, ECONNREFUSED);
    WT_ASSERT_EQ(weft_fd_connect_for(c2, NULL, sizeof a, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for(-1, (struct sockaddr *)&a, sizeof a, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_close(c2), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_connect_for(p[0], (struct sockaddr *)&a, sizeof a, MS), WEFT_EINVAL);   /* closed */
}

static void setup_edges(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, edges_body, NULL), WEFT_OK);
}

static void *edges_thread(void *arg)
{
    edges_body(arg);
    return NULL;
}

WT_TEST(io_calls, bad_input_timeouts_refusals, .timeout = 120)
{
    signal(SIGPIPE, SIG_IGN);
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_edges);
    pthread_t th;   /* a plain thread: the same calls wait in ppoll */
    WT_ASSERT_EQ(pthread_create(&th, NULL, edges_thread, NULL), 0);
    pthread_join(th, NULL);
}

/* ---- two readers of one descriptor; destroy with calls pending ----------------------- */

static int two_fd[2];
static atomic_uint two_got;

static void two_reader(void *arg)
{
    char c;
    WT_ASSERT_EQ(weft_fd_read_for(two_fd[0], &c, 1, 30 * SEC), 1);   /* the second waits the one-shot way */
    atomic_fetch_add(&two_got, 1);
}

static void two_writer(void *arg)
{
    weft_sleep(2 * MS);
    WT_ASSERT_EQ(weft_fd_write_all_for(two_fd[1], "ab", 2, NULL, SEC), WEFT_OK);
}

static void setup_two(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, two_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, two_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, two_writer, NULL), WEFT_OK);
}

static int pend_fd[2], pend_full[2];   /* one nobody writes to, one nobody reads */
static atomic_int pend_rc[2];
static atomic_uint pend_started;

static void pend_reader(void *arg)
{
    char c;
    atomic_fetch_add(&pend_started, 1);
    atomic_store(&pend_rc[0], (int)weft_fd_read_for(pend_fd[0], &c, 1, UINT64_MAX));
}

static void pend_writer(void *arg)
{
    static char big[1 << 20];
    atomic_fetch_add(&pend_started, 1);
    atomic_store(&pend_rc[1], weft_fd_write_all_for(pend_full[1], big, sizeof big, NULL, UINT64_MAX));
}

WT_TEST(io_calls, two_readers_and_destroy_pending, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        make_pipe(two_fd);
        atomic_store(&two_got, 0);
        run_on(w, setup_two);
        WT_ASSERT_EQ(atomic_load(&two_got), 2);
        WT_ASSERT_EQ(weft_fd_close(two_fd[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_fd_close(two_fd[1]), WEFT_OK);
    }
    WT_FOR_WORKERS(w, 1, 2) {
        make_pipe(pend_fd);
        make_pipe(pend_full);
        atomic_store(&pend_started, 0);
        weft_sched *s = make_sched(w);
        WT_ASSERT_EQ(weft_spawn(s, pend_reader, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(s, pend_writer, NULL), WEFT_OK);
        while (atomic_load(&pend_started) < 2)
            sched_yield();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* both calls waiting, or about to */
        WT_ASSERT_EQ(atomic_load(&pend_rc[0]), WEFT_ESHUTDOWN);
        WT_ASSERT_EQ(atomic_load(&pend_rc[1]), WEFT_ESHUTDOWN);
        WT_ASSERT_EQ(weft_fd_close(pend_fd[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_fd_close(pend_fd[1]), WEFT_OK);
        WT_ASSERT_EQ(weft_fd_close(pend_full[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_fd_close(pend_full[1]), WEFT_OK);
    }
}

/* ---- the line reader: lines split across writes, a line longer than the buffer,
 * a timeout keeping a partial line, the last bytes at end of stream ---------------- */

#define LINES 2000
static int ln_fd[2];

static void line_writer(void *arg)
{
    /* Lines "<i> <i*i>\n" written in chunks of 1 to 37 bytes: a chunk ends
     * mid-line more often than not. */
    static char text[LINES * 32];
    size_t n = 0;
    for (unsigned i = 0; i < LINES; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%u %u\n", i, i * i);
    for (size_t at = 0, k = 0; at < n; k++) {
        size_t chunk = 1 + (k * 7) % 37;
        if (chunk > n - at)
            chunk = n - at;
        WT_ASSERT_EQ(weft_fd_write_all_for(ln_fd[1], text + at, chunk, NULL, 30 * SEC), WEFT_OK);
        at += chunk;
        if (k % 16 == 0)
            weft_yield();
    }
    WT_ASSERT_EQ(weft_fd_write_all_for(ln_fd[1], "0123456789abcdefXYZ", 19, NULL, SEC), WEFT_OK);   /* longer than 16, no '\n' */
    WT_ASSERT_EQ(weft_fd_close(ln_fd[1]), WEFT_OK);
}

static void line_reader(void *arg)
{
    weft_fd_reader r;
    char buf[16];
    const char *line;
    WT_ASSERT_EQ(weft_fd_reader_init(NULL, ln_fd[0], buf, sizeof buf), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, ln_fd[0], buf, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, ln_fd[0], buf, sizeof buf), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, NULL, SEC), WEFT_EINVAL);
    for (unsigned i = 0; i < LINES; i++) {
        char want[32];
        int n = snprintf(want, sizeof want, "%u %u\n", i, i * i);
        char got[64];
        size_t have = 0;
        /* Lines up to 15 bytes come whole; longer ones in pieces of 16. */
        for (;;) {
            ptrdiff_t len = weft_fd_reader_read_line_for(&r, &line, 30 * SEC);
            WT_ASSERT(len > 0 && len <= 16, "line %u: %ld", i, (long)len);
            memcpy(got + have, line, (size_t)len);
            have += (size_t)len;
            if (line[len - 1] == '\n')
                break;
            WT_ASSERT_EQ(len, 16);
        }
        WT_ASSERT_EQ(have, (size_t)n);
        WT_ASSERT(memcmp(got, want, have) == 0, "line %u", i);
    }
    ptrdiff_t len = weft_fd_reader_read_line_for(&r, &line, 30 * SEC);
    WT_ASSERT_EQ(len, 16);
    WT_ASSERT(memcmp(line, "0123456789abcdef", 16) == 0);
    len = weft_fd_reader_read_line_for(&r, &line, 30 * SEC);
    WT_ASSERT_EQ(len, 3);   /* the last bytes, no '\n', at end of stream */
    WT_ASSERT(memcmp(line, "XYZ", 3) == 0);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, 30 * SEC), 0);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, 30 * SEC), 0);
    WT_ASSERT_EQ(weft_fd_close(ln_fd[0]), WEFT_OK);
}

static void line_timeout(void *arg)
{
    int p[2];
    make_pipe(p);
    weft_fd_reader r;
    char buf[64];
    const char *line;
    WT_ASSERT_EQ(weft_fd_reader_init(&r, p[0], buf, sizeof buf), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, 0), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(write(p[1], "half", 4), 4);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, 0), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, MS), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(write(p[1], " line\nnext\n", 11), 11);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, MS), 10);   /* the kept half, then the rest */
    WT_ASSERT(memcmp(line, "half line\n", 10) == 0);
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, 0), 5);
    WT_ASSERT(memcmp(line, "next\n", 5) == 0);
    WT_ASSERT_EQ(weft_fd_close(p[0]), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_close(p[1]), WEFT_OK);
}

static void setup_lines(weft_sched *s)
{
    make_pipe(ln_fd);
    WT_ASSERT_EQ(weft_spawn(s, line_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, line_writer, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, line_timeout, NULL), WEFT_OK);
}

WT_TEST(io_calls, line_reader, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_lines);
}
