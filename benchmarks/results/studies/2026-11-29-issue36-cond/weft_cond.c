/* weft's side of tf_cond.cpp, the same two kernels and output:
 *   weft_cond THREADS N RUNS [self]
 * THREADS workers (0: none, this thread bound), weft_graph_run + _wait
 * per run from this thread. Built against an installed or built weft:
 *   cc -O2 -I INCLUDE weft_cond.c LIBWEFT_A -lpthread */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

static long n, left, body;
static void init(void *p) { (void)p; left = n; }
static void bodyf(void *p) { (void)p; body++; }
static int test(void *p) { (void)p; return --left > 0 ? 0 : 1; }
static int self_test(void *p) { (void)p; body++; return --left > 0 ? 0 : 1; }
static void done(void *p) { (void)p; }

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    n = argc > 2 ? atol(argv[2]) : 1000000;
    int runs = argc > 3 ? atoi(argv[3]) : 10;
    int self = argc > 4 && strcmp(argv[4], "self") == 0;
    weft_config c;
    weft_config_init(&c);
    c.workers = threads ? threads : WEFT_WORKERS_NONE;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || (!threads && weft_sched_bind(s) != WEFT_OK))
        return 1;
    weft_graph *g;
    weft_graph_create(&g);
    weft_task *i = weft_graph_add(g, init, NULL), *d = weft_graph_add(g, done, NULL);
    if (self) {
        weft_task *t = weft_graph_add_cond(g, self_test, NULL);
        weft_task_precede(i, t);
        weft_task_precede(t, t);
        weft_task_precede(t, d);
    } else {
        weft_task *b = weft_graph_add(g, bodyf, NULL), *t = weft_graph_add_cond(g, test, NULL);
        weft_task_precede(i, b);
        weft_task_precede(b, t);
        weft_task_precede(t, b);
        weft_task_precede(t, d);
    }
    weft_graph_run(s, g);
    weft_graph_wait(g);
    long before = body;
    double t0 = now_ns();
    for (int r = 0; r < runs; r++) {
        weft_graph_run(s, g);
        weft_graph_wait(g);
    }
    double t1 = now_ns();
    if (body - before != n * runs) {
        fprintf(stderr, "WRONG\n");
        return 1;
    }
    printf("weft t%u %.3f ns/iter\n", threads, (t1 - t0) / ((double)n * runs));
    weft_graph_destroy(g);
    if (!threads)
        weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}
