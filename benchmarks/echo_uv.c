/* echo_uv: an echo server on libuv, one event loop on one thread, the
 * peer weft's echo server is measured against (benchmarks/bench_echo.sh).
 * It listens on 127.0.0.1 (a port the kernel picks), prints the port on
 * its first line, echoes every connection until its client closes it, and
 * exits once `conns` connections have come and gone.
 *
 *   echo_uv [conns [rounds]]   defaults 1000 1
 *
 * Its last line gives its CPU time (user + system) per round trip
 * (conns * rounds of them), as echo_server's serve role does.
 *
 * Built only where libuv is found (Debian's libuv1-dev). Each read's
 * buffer goes out as the write's and is freed when the write completes,
 * the usual libuv shape: no copy, one allocation per read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <uv.h>

static unsigned conns = 1000, rounds = 1, closed_n, accepted_n;
static uv_tcp_t server;

typedef struct {
    uv_write_t req;
    uv_buf_t buf;
} echo_write;

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_closed(uv_handle_t *h)
{
    free(h);
    if (++closed_n == conns)
        uv_close((uv_handle_t *)&server, NULL);   /* the loop ends with it */
}

static void on_written(uv_write_t *req, int status)
{
    echo_write *w = (echo_write *)req;
    if (status < 0 && !uv_is_closing((uv_handle_t *)req->handle))
        uv_close((uv_handle_t *)req->handle, on_closed);
    free(w->buf.base);
    free(w);
}

static void on_read(uv_stream_t *c, ssize_t n, const uv_buf_t *buf)
{
    if (n > 0) {
        echo_write *w = malloc(sizeof *w);
        if (w) {
            w->buf = uv_buf_init(buf->base, (unsigned)n);
            if (uv_write(&w->req, c, &w->buf, 1, on_written) == 0)
                return;
            free(w);
        }
        n = UV_ENOMEM;
    }
    free(buf->base);
    if (n < 0 && !uv_is_closing((uv_handle_t *)c))
        uv_close((uv_handle_t *)c, on_closed);   /* UV_EOF: the client is done */
}

static void on_connection(uv_stream_t *s, int status)
{
    if (status < 0)
        return;
    uv_tcp_t *c = malloc(sizeof *c);
    if (!c || uv_tcp_init(s->loop, c) != 0) {
        free(c);
        return;
    }
    if (uv_accept(s, (uv_stream_t *)c) != 0) {
        uv_close((uv_handle_t *)c, on_closed);
        return;
    }
    uv_tcp_nodelay(c, 1);
    accepted_n++;
    uv_read_start((uv_stream_t *)c, on_alloc, on_read);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        conns = (unsigned)strtoul(argv[1], NULL, 10);
    if (argc > 2)
        rounds = (unsigned)strtoul(argv[2], NULL, 10);
    if (!conns || !rounds) {
        fputs("usage: echo_uv [conns [rounds]]\n", stderr);
        return 2;
    }
    uv_loop_t *loop = uv_default_loop();
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    int rc = uv_tcp_init(loop, &server);
    if (rc == 0)
        rc = uv_tcp_bind(&server, (const struct sockaddr *)&a, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server, 4096, on_connection);
    int len = sizeof a;
    if (rc == 0)
        rc = uv_tcp_getsockname(&server, (struct sockaddr *)&a, &len);
    if (rc != 0) {
        fprintf(stderr, "echo_uv: %s\n", uv_strerror(rc));
        return 1;
    }
    printf("%u\n", (unsigned)ntohs(a.sin_port));
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("server cpu %.2f us per round trip\n",
           ((double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
            (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)) / ((double)conns * rounds));
    return accepted_n == conns ? 0 : 1;
}
