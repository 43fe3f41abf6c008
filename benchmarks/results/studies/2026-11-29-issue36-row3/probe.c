/* probe.c: row 3's kernel (N empty tasks spawned by the bound main thread
 * beside T-1 workers, then weft_sched_wait_idle), with where the tasks
 * ran: how many the worker ran in the last round, in how many batches
 * from the shared queue, and how often it parked. Prints the median ns
 * per task of R timed rounds (after one untimed).
 *   probe T N R [pin]
 *   pin   main on CPU 0, worker i on CPU 1 + i (on_worker_start): the
 *         threads never share a CPU. Run under `taskset -c 0` instead
 *         for the opposite case, every thread on one CPU.
 * Build: gcc -O2 probe.c $(pkg-config --cflags --libs weft) -lpthread */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <weft.h>

static void task(void *a) { (void)a; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t c;
    CPU_ZERO(&c);
    CPU_SET(cpu, &c);
    pthread_setaffinity_np(pthread_self(), sizeof c, &c);
}

static void on_start(unsigned i, void *ctx)
{
    (void)ctx;
    pin(1 + (int)i);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int T = atoi(argv[1]), R = atoi(argv[3]);
    long N = atol(argv[2]);
    if (T < 2 || R < 1 || R > 64)
        return 2;
    weft_config c;
    weft_config_init(&c);
    c.workers = (unsigned)T - 1;
    if (argc > 4) {
        c.on_worker_start = on_start;
        pin(0);
    }
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || weft_sched_bind(s) != WEFT_OK)
        return 1;
    weft_worker_stats a, b;
    double ns[64];
    for (int r = 0; r <= R; r++) {
        weft_sched_stats(s, 0, &a);
        double t0 = now();
        for (long i = 0; i < N; i++)
            if (weft_spawn(s, task, NULL) != WEFT_OK)
                return 1;
        weft_sched_wait_idle(s);
        double t1 = now();
        weft_sched_stats(s, 0, &b);
        if (r)
            ns[r - 1] = (t1 - t0) / N;
    }
    for (int i = 0; i < R; i++)
        for (int j = i + 1; j < R; j++)
            if (ns[j] < ns[i]) {
                double x = ns[i];
                ns[i] = ns[j];
                ns[j] = x;
            }
    printf("worker ran %lu grabs %lu parks %lu (last round)  median %.1f ns/task\n",
           (unsigned long)(b.tasks_run - a.tasks_run), (unsigned long)(b.global_grabs - a.global_grabs),
           (unsigned long)(b.parks - a.parks), ns[R / 2]);
    weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}
