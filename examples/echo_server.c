/* echo_server: an echo server and its clients on one scheduler, each
 * connection a task that blocks in weft's descriptor calls, not a thread.
 *
 * The server listens on 127.0.0.1 (a port the kernel picks), accepts
 * `conns` connections and echoes each one until its client closes it.
 * Each client connects, then sends `rounds` messages of `size` bytes, each
 * after the echo of the last one has come back in full, and checks every
 * byte it gets back (a pattern of its connection, round and offset).
 * Sockets are non-blocking, and a task reads, writes, accepts and
 * connects with weft's descriptor calls (weft_fd_read_for and the others),
 * which suspend the task's fiber only when the call would block; the
 * worker runs other connections meanwhile, and one idle worker sleeps in
 * epoll_wait. Each socket is registered with the scheduler once, at its
 * first wait, until weft_fd_close. A thousand connections need a thousand
 * fibers, not two thousand threads.
 *
 *   echo_server [conns [rounds [size [workers [threads [role]]]]]]
 *                                defaults: 1000 20 1024 (AUTO) 0 both
 *
 * threads = 1 runs the same exchange with a thread per connection on
 * each side and blocking sockets, the classic design, for comparison
 * (benchmarks/bench_echo.sh runs both). role: both sides in this process
 * (both), the server only (serve: prints its port first, exits once
 * `conns` connections have come and gone), or the clients only
 * (client:PORT, against 127.0.0.1:PORT): so that servers of different
 * designs can be measured with the same clients. Prints the messages per
 * second, the 50th and 99th percentile round trip and the process's CPU
 * time (user + system) per round trip; "WRONG" and exit 1 if a
 * byte came back wrong or a connection failed. Loopback only; it exits by
 * itself.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

static unsigned conns = 1000, rounds = 20, size = 1024;
static bool use_threads;
static int listen_fd;
static struct sockaddr_in addr;
static atomic_uint failures, accepted;
static uint64_t *rtt;                 /* conns * rounds round trips, ns */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned char pattern(unsigned conn, unsigned round, unsigned i)
{
    return (unsigned char)(conn * 131u + round * 31u + i * 7u + (i >> 8));
}

static void fail(const char *what, unsigned conn)
{
    if (atomic_fetch_add(&failures, 1) < 5)
        fprintf(stderr, "echo_server: connection %u: %s (%s)\n", conn, what, strerror(errno));
}

/* ---- I/O: weft's descriptor calls in tasks, plain calls in threads ------------ */

/* Reads up to n bytes: > 0, 0 at end of stream, < 0 on error. In a task,
 * weft_fd_read_for suspends the fiber while nothing is there; a thread of
 * the thread-per-connection mode blocks in read(2). */
static ptrdiff_t read_some(int fd, void *buf, size_t n)
{
    if (!use_threads)
        return weft_fd_read_for(fd, buf, n, UINT64_MAX);
    ssize_t got;
    while ((got = read(fd, buf, n)) < 0 && errno == EINTR)
        ;
    return got;
}

/* Writes all n bytes; false on error. */
static bool write_all(int fd, const void *buf, size_t n)
{
    if (!use_threads)
        return weft_fd_write_all_for(fd, buf, n, NULL, UINT64_MAX) == WEFT_OK;
    const char *p = buf;
    while (n) {
        ssize_t put = write(fd, p, n);
        if (put > 0) {
            p += put;
            n -= (size_t)put;
        } else if (put < 0 && errno != EINTR) {
            return false;
        }
    }
    return true;
}

static bool read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ptrdiff_t got = read_some(fd, p, n);
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

/* Closes a connection: weft_fd_close ends its registration with the
 * scheduler (a task's descriptor stays registered until then). */
static void close_conn(int fd)
{
    if (use_threads)
        close(fd);
    else
        weft_fd_close(fd);
}

/* ---- server ------------------------------------------------------------------- */

/* Echoes one connection until its client closes it. */
static void serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    ptrdiff_t got;
    while ((got = read_some(fd, buf, sizeof buf)) > 0)
        if (!write_all(fd, buf, (size_t)got))
            break;
    close_conn(fd);
}

static void acceptor(void *arg);

static void *acceptor_thread(void *arg)
{
    acceptor(arg);
    return NULL;
}

static void *serve_thread_counted(void *arg);

/* Accepts `conns` connections, a task (or a thread) for each. */
static void acceptor(void *arg)
{
    weft_sched *s = arg;
    while (atomic_load(&accepted) < conns) {
        int fd = use_threads ? accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)
                             : weft_fd_accept_for(listen_fd, UINT64_MAX);   /* non-blocking already */
        if (fd < 0) {
            if (use_threads && errno == EINTR)
                continue;
            fail("accept", atomic_load(&accepted));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        atomic_fetch_add(&accepted, 1);
        pthread_t th;
        if (use_threads ? pthread_create(&th, NULL, serve_thread_counted, (void *)(intptr_t)fd) != 0 ||
                              pthread_detach(th) != 0
                        : weft_spawn(s, serve, (void *)(intptr_t)fd) != WEFT_OK) {
            fail("cannot start its server side", atomic_load(&accepted));
            close(fd);
        }
    }
}

/* ---- clients --------------------------------------------------------------------- */

static void client(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (use_threads ? 0 : SOCK_NONBLOCK), 0);
    if (fd < 0) {
        fail("socket", id);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (use_threads ? connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0
                    : weft_fd_connect_for(fd, (struct sockaddr *)&addr, sizeof addr, UINT64_MAX) != WEFT_OK) {
        fail("connect", id);
        close_conn(fd);
        return;
    }
    unsigned char *out = malloc(size), *in = malloc(size);
    for (unsigned r = 0; out && in && r < rounds; r++) {
        for (unsigned i = 0; i < size; i++)
            out[i] = pattern(id, r, i);
        uint64_t t0 = now_ns();
        if (!write_all(fd, out, size) || !read_all(fd, in, size)) {
            fail("lost", id);
            break;
        }
        rtt[(size_t)id * rounds + r] = now_ns() - t0;
        if (memcmp(in, out, size) != 0) {
            fail("a byte came back wrong", id);
            break;
        }
    }
    free(out);
    free(in);
    close_conn(fd);
}

static void *client_thread(void *arg)
{
    client(arg);
    return NULL;
}

/* This process's CPU time so far (user + system), microseconds. */
static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The role of this process: both sides (default), the server only
 * ("serve": prints its port, exits once `conns` connections have come and
 * gone), or the clients only ("client:PORT", against a server on
 * 127.0.0.1:PORT: this one's other mode, or benchmarks/echo_uv.c). */
enum { BOTH, SERVER, CLIENT };
static int role = BOTH;
static atomic_uint served;

static void *serve_thread_counted(void *arg)
{
    serve(arg);
    atomic_fetch_add(&served, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 1) conns = (unsigned)strtoul(argv[1], NULL, 10);
    if (argc > 2) rounds = (unsigned)strtoul(argv[2], NULL, 10);
    if (argc > 3) size = (unsigned)strtoul(argv[3], NULL, 10);
    if (argc > 4 && strcmp(argv[4], "auto") != 0) {
        unsigned n = (unsigned)strtoul(argv[4], NULL, 10);
        cfg.workers = n ? n : WEFT_WORKERS_NONE;   /* 0: no workers */
    }
    if (argc > 5) use_threads = atoi(argv[5]) != 0;
    unsigned port = 0;
    if (argc > 6 && strcmp(argv[6], "serve") == 0)
        role = SERVER;
    else if (argc > 6 && strncmp(argv[6], "client:", 7) == 0 && (port = (unsigned)atoi(argv[6] + 7)) > 0)
        role = CLIENT;
    if (!conns || !rounds || !size || size > (1u << 20) || port > 65535 ||
        (argc > 6 && role == BOTH && strcmp(argv[6], "both") != 0)) {
        fputs("usage: echo_server [conns [rounds [size (1..1048576) [workers|auto [threads "
              "[both|serve|client:PORT]]]]]]\n", stderr);
        return 2;
    }
    rtt = calloc((size_t)conns * rounds, sizeof *rtt);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((uint16_t)port);
    if (role != CLIENT) {
        listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (use_threads ? 0 : SOCK_NONBLOCK), 0);
        socklen_t len = sizeof addr;
        if (!rtt || listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
            listen(listen_fd, 4096) != 0 || getsockname(listen_fd, (struct sockaddr *)&addr, &len) != 0) {
            perror("echo_server: listen on 127.0.0.1");
            return 1;
        }
        if (role == SERVER) {
            printf("%u\n", (unsigned)ntohs(addr.sin_port));
            fflush(stdout);
        }
    }

    uint64_t t0 = now_ns();
    if (use_threads) {
        pthread_t acc, *th = calloc(conns, sizeof *th);
        if (!th || (role != CLIENT && pthread_create(&acc, NULL, acceptor_thread, NULL) != 0)) {
            perror("echo_server: threads");
            return 1;
        }
        unsigned started = 0;
        for (; role != SERVER && started < conns; started++)
            if (pthread_create(&th[started], NULL, client_thread, (void *)(uintptr_t)started) != 0) {
                fail("cannot start a client thread", started);
                break;
            }
        for (unsigned i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        if (role == BOTH && started < conns)
            shutdown(listen_fd, SHUT_RDWR);   /* the acceptor waits for clients that never came */
        if (role != CLIENT)
            pthread_join(acc, NULL);
        if (role == SERVER)   /* every connection's thread has served it to its end */
            while (atomic_load(&served) < atomic_load(&accepted))
                usleep(1000);
        free(th);
    } else {
        weft_sched *s = NULL;
        int rc = weft_sched_create(&s, &cfg);
        if (rc == WEFT_OK && cfg.workers == WEFT_WORKERS_NONE)
            rc = weft_sched_bind(s);   /* no workers: this thread runs the tasks while it waits */
        if (rc == WEFT_OK && role != CLIENT)
            rc = weft_spawn(s, acceptor, s);
        for (unsigned i = 0; rc == WEFT_OK && role != SERVER && i < conns; i++)
            rc = weft_spawn(s, client, (void *)(uintptr_t)i);
        if (rc != WEFT_OK) {
            fprintf(stderr, "echo_server: %s\n", weft_strerror(rc));
            return 1;
        }
        weft_sched_wait_idle(s);
        if (cfg.workers == WEFT_WORKERS_NONE)
            weft_sched_unbind();
        weft_sched_destroy(s);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    if (role != CLIENT)
        close(listen_fd);
    unsigned bad = atomic_load(&failures);
    if (role == SERVER) {   /* the port was the first line; this the last */
        printf("server cpu %.2f us per round trip\n", cpu_us() / ((double)conns * rounds));
        free(rtt);
        return bad ? 1 : 0;
    }

    size_t n = (size_t)conns * rounds;
    qsort(rtt, n, sizeof *rtt, cmp_u64);
    printf("echo_server (%s%s): %u connections x %u round trips of %u bytes: %s, "
           "%.0f round trips/s, %.1f MB/s each way, rtt p50 %.1f us p99 %.1f us, cpu %.2f us per round trip\n",
           use_threads ? "thread per connection" : "weft tasks", role == CLIENT ? ", clients only" : "",
           conns, rounds, size,
           bad ? "WRONG" : "every byte checked", (double)n / secs, (double)n * size / secs / 1e6,
           (double)rtt[n / 2] / 1e3, (double)rtt[n * 99 / 100] / 1e3, cpu_us() / (double)n);
    free(rtt);
    return bad ? 1 : 0;
}
