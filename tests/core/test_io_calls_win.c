/* The straight-line descriptor calls on Windows sockets (weft/io.h):
 * weft_fd_accept_for, weft_fd_connect_for, weft_fd_read_for,
 * weft_fd_write_all_for, the line reader, weft_fd_close, at 0 (a bound
 * thread), 1 and 2 workers, and from a plain thread. An echo through the
 * calls with every byte checked (more than the socket buffers hold, so
 * the writer, the echoer and the reader block on each other), timeouts,
 * a close ending a task's wait, a refused connection and bad input.
 * test_io_calls.c is the Linux battery. No timing assertions beyond
 * lower bounds. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

#define MS 1000000ull

static void net_start(void)
{
    static atomic_int started;
    if (!atomic_exchange(&started, 1)) {
        WSADATA d;
        WT_ASSERT_EQ(WSAStartup(MAKEWORD(2, 2), &d), 0);
    }
}

static void non_blocking(SOCKET s)
{
    u_long nb = 1;
    WT_ASSERT_EQ(ioctlsocket(s, FIONBIO, &nb), 0);
}

/* A non-blocking listener on the loopback; *a gets its address. */
static SOCKET make_listener(struct sockaddr_in *a)
{
    net_start();
    SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    WT_ASSERT(l != INVALID_SOCKET);
    *a = (struct sockaddr_in){ .sin_family = AF_INET };
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int len = sizeof *a;
    WT_ASSERT_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
    WT_ASSERT_EQ(listen(l, 4), 0);
    WT_ASSERT_EQ(getsockname(l, (struct sockaddr *)a, &len), 0);
    non_blocking(l);
    return l;
}

static SOCKET make_client(void)
{
    SOCKET c = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    WT_ASSERT(c != INVALID_SOCKET);
    non_blocking(c);
    return c;
}

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 131 + (i >> 9));
}

/* ---- an echo through the calls: writer, echoer and reader block on each other ---- */

#define ECHO_BYTES (4u << 20)   /* more than the loopback's buffers hold */

static SOCKET echo_l, echo_c;
static struct sockaddr_in echo_a;
static weft_sched *echo_s;
static atomic_int echo_rc[4];
static atomic_size_t echo_got;

static void echo_writer(void *arg)
{
    unsigned char *buf = malloc(ECHO_BYTES);
    WT_ASSERT(buf);
    for (size_t i = 0; i < ECHO_BYTES; i++)
        buf[i] = pattern(i);
    size_t put = 0;
    atomic_store(&echo_rc[1], weft_fd_write_all_for((weft_fd)echo_c, buf, ECHO_BYTES, &put,
                                                     UINT64_MAX));
    WT_ASSERT_EQ(put, (size_t)ECHO_BYTES);
    shutdown(echo_c, SD_SEND);
    free(buf);
}

static void echo_reader(void *arg)
{
    unsigned char buf[3000];   /* not a divisor of the size: pieces straddle writes */
    size_t got = 0;
    for (;;) {
        ptrdiff_t n = weft_fd_read_for((weft_fd)echo_c, buf, sizeof buf, UINT64_MAX);
        if (n <= 0) {
            atomic_store(&echo_rc[2], (int)n);
            break;
        }
        for (ptrdiff_t i = 0; i < n; i++)
            WT_ASSERT(buf[i] == pattern(got + (size_t)i), "byte %zu", got + (size_t)i);
        got += (size_t)n;
    }
    atomic_store(&echo_got, got);
}

/* Accepts one connection and sends back what it reads until the end. */
static void echo_server(void *arg)
{
    weft_fd a = weft_fd_accept_for((weft_fd)echo_l, UINT64_MAX);
    WT_ASSERT(a >= 0, "accept: %d", (int)a);
    char buf[7000];
    ptrdiff_t n;
    while ((n = weft_fd_read_for(a, buf, sizeof buf, UINT64_MAX)) > 0)
        WT_ASSERT_EQ(weft_fd_write_all_for(a, buf, (size_t)n, NULL, UINT64_MAX), WEFT_OK);
    atomic_store(&echo_rc[3], (int)n);
    WT_ASSERT_EQ(weft_fd_close(a), WEFT_OK);
}

static void echo_client(void *arg)
{
    atomic_store(&echo_rc[0], weft_fd_connect_for((weft_fd)echo_c, (struct sockaddr *)&echo_a,
                                                  sizeof echo_a, UINT64_MAX));
    WT_ASSERT_EQ(weft_spawn(echo_s, echo_reader, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(echo_s, echo_writer, NULL), WEFT_OK);
}

static void setup_echo(weft_sched *s)
{
    echo_s = s;
    WT_ASSERT_EQ(weft_spawn(s, echo_server, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, echo_client, NULL), WEFT_OK);
}

WT_TEST(io_calls_win, echo_every_byte, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        echo_l = make_listener(&echo_a);
        echo_c = make_client();
        for (int i = 0; i < 4; i++)
            atomic_store(&echo_rc[i], -999);
        atomic_store(&echo_got, 0);
        run_on(w, setup_echo);
        WT_ASSERT(atomic_load(&echo_rc[0]) == WEFT_OK, "workers %u: connect %d", w, atomic_load(&echo_rc[0]));
        WT_ASSERT(atomic_load(&echo_rc[1]) == WEFT_OK, "workers %u: write %d", w, atomic_load(&echo_rc[1]));
        WT_ASSERT(atomic_load(&echo_rc[2]) == 0, "workers %u: reader's end %d", w, atomic_load(&echo_rc[2]));
        WT_ASSERT(atomic_load(&echo_rc[3]) == 0, "workers %u: server's end %d", w, atomic_load(&echo_rc[3]));
        WT_ASSERT(atomic_load(&echo_got) == ECHO_BYTES, "workers %u: %zu bytes", w, atomic_load(&echo_got));
        WT_ASSERT_EQ(weft_fd_close((weft_fd)echo_c), WEFT_OK);
        WT_ASSERT_EQ(weft_fd_close((weft_fd)echo_l), WEFT_OK);
    }
}

/* ---- lines, timeouts, a refused connection, bad input ------------------------------ */

static void lines_and_timeouts(void *arg)
{
    struct sockaddr_in a;
    SOCKET l = make_listener(&a), c = make_client();
    char buf[16];
    /* Nothing to accept: a look, then a wait that times out. */
    WT_ASSERT_EQ(weft_fd_accept_for((weft_fd)l, 0), WEFT_ETIMEDOUT);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_fd_accept_for((weft_fd)l, 5 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 5 * MS);
    WT_ASSERT_EQ(weft_fd_connect_for((weft_fd)c, (struct sockaddr *)&a, sizeof a, UINT64_MAX),
                 WEFT_OK);
    weft_fd s = weft_fd_accept_for((weft_fd)l, UINT64_MAX);
    WT_ASSERT(s >= 0, "accept: %d", (int)s);
    /* Nothing to read: timeouts. */
    WT_ASSERT_EQ(weft_fd_read_for(s, buf, sizeof buf, 0), WEFT_ETIMEDOUT);
    t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_fd_read_for(s, buf, sizeof buf, 5 * MS), WEFT_ETIMEDOUT);
    WT_ASSERT(wt_now_ns() - t0 >= 5 * MS);
    /* Lines, a piece longer than the buffer, the last bytes without '\n'. */
    const char *text = "one\ntwo\n0123456789abcdefXYZ\nend";
    WT_ASSERT_EQ(weft_fd_write_all_for((weft_fd)c, text, strlen(text), NULL, UINT64_MAX), WEFT_OK);
    shutdown(c, SD_SEND);
    weft_fd_reader r;
    WT_ASSERT_EQ(weft_fd_reader_init(&r, s, buf, sizeof buf), WEFT_OK);
    const char *want[] = { "one\n", "two\n", "0123456789abcdef", "XYZ\n", "end" };
    for (int i = 0; i < 5; i++) {
        const char *line;
        ptrdiff_t n = weft_fd_reader_read_line_for(&r, &line, UINT64_MAX);
        WT_ASSERT(n == (ptrdiff_t)strlen(want[i]), "line %d: %td", i, n);
        WT_ASSERT(memcmp(line, want[i], (size_t)n) == 0, "line %d", i);
    }
    const char *line;
    WT_ASSERT_EQ(weft_fd_reader_read_line_for(&r, &line, UINT64_MAX), 0);
    WT_ASSERT_EQ(weft_fd_close(s), WEFT_OK);
    WT_ASSERT_EQ(weft_fd_close((weft_fd)c), WEFT_OK);
    /* Refused: the listener's port with nobody listening. */
    WT_ASSERT_EQ(weft_fd_close((weft_fd)l), WEFT_OK);
    c = make_client();
    int rc = weft_fd_connect_for((weft_fd)c, (struct sockaddr *)&a, sizeof a, 10000 * MS);
    WT_ASSERT(rc == WEFT_EIO && errno == ECONNREFUSED, "rc %d errno %d", rc, errno);
    WT_ASSERT_EQ(weft_fd_close((weft_fd)c), WEFT_OK);
    /* Bad input, nothing changed. */
    WT_ASSERT_EQ(weft_fd_read_for(-1, buf, 1, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_read_for((weft_fd)c, NULL, 1, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_write_all_for(-1, buf, 1, NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_accept_for(-1, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_connect_for((weft_fd)c, NULL, sizeof a, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_reader_init(&r, -1, buf, sizeof buf), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_forget(-1), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_close(-1), WEFT_EINVAL);
    /* Not a socket (closed above): the system call's EBADF. */
    WT_ASSERT_EQ(weft_fd_read_for((weft_fd)c, buf, 1, UINT64_MAX), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_fd_close((weft_fd)c), WEFT_EINVAL);
#if INTPTR_MAX > INT32_MAX
    WT_ASSERT_EQ(weft_fd_read_for((weft_fd)1 << 40, buf, 1, 0), WEFT_EINVAL);   /* refused, not cut */
#endif
}

static void setup_lines(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, lines_and_timeouts, NULL), WEFT_OK);
}

WT_TEST(io_calls_win, lines_timeouts_refused_bad_input, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2)
        run_on(w, setup_lines);
    lines_and_timeouts(NULL);   /* a plain thread: WSAPoll on itself */
}

/* ---- weft_fd_close ends a task's wait on the socket --------------------------------- */

static SOCKET cl_l;
static atomic_int cl_rc, cl_started;

static void close_waiter(void *arg)
{
    atomic_store(&cl_started, 1);
    char c;
    atomic_store(&cl_rc, (int)weft_fd_read_for((weft_fd)cl_l, &c, 1, UINT64_MAX));
}

static void closer(void *arg)
{
    while (!atomic_load(&cl_started))
        weft_yield();
    weft_sleep(2 * MS);   /* most likely parked by now; either way the wait ends */
    WT_ASSERT_EQ(weft_fd_close((weft_fd)cl_l), WEFT_OK);
}

static void setup_close(weft_sched *s)
{
    WT_ASSERT_EQ(weft_spawn(s, close_waiter, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, closer, NULL), WEFT_OK);
}

WT_TEST(io_calls_win, close_ends_a_wait, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        struct sockaddr_in a;
        SOCKET l = make_listener(&a);
        SOCKET c = make_client();
        WT_ASSERT_EQ(connect(c, (struct sockaddr *)&a, sizeof a) == 0 ||
                     WSAGetLastError() == WSAEWOULDBLOCK, 1);
        cl_l = accept(l, NULL, NULL);
        for (int i = 0; cl_l == INVALID_SOCKET && i < 10000; i++) {
            Sleep(1);   /* the connection is on its way (bounded retry) */
            cl_l = accept(l, NULL, NULL);
        }
        WT_ASSERT(cl_l != INVALID_SOCKET);
        non_blocking(cl_l);
        atomic_store(&cl_rc, -999);
        atomic_store(&cl_started, 0);
        run_on(w, setup_close);
        /* ECLOSED when the close came during the wait (the usual case);
         * EINVAL when it came before the read (no longer a socket). */
        int rc = atomic_load(&cl_rc);
        WT_ASSERT(rc == WEFT_ECLOSED || rc == WEFT_EINVAL, "workers %u: rc %d", w, rc);
        closesocket(c);
        closesocket(l);
    }
}
