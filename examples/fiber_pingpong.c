/* fiber_pingpong: two fibers hand control back and forth, and the cost of
 * one switch is printed.
 *
 * This demo uses weft's *internal* fiber layer (src/arch, src/fiber), not
 * the public API in weft.h, because it measures the bare switch that the
 * scheduler hides behind tasks. Ordinary programs never include these
 * headers: a task that blocks gets its fiber switch from weft.h's calls
 * (see fib.c, frame_jobs.c). It builds only inside weft's own tree.
 *
 *   fiber_pingpong [round_trips [runs]]     defaults: 1000000 5
 *
 * The main thread becomes a fiber host, makes one fiber, and switches to
 * it; the fiber switches straight back. That round trip is repeated, timed
 * with clock_gettime(CLOCK_MONOTONIC), in `runs` runs after one warm-up
 * run; the median run gives the cost per round trip and per one-way
 * switch (half of it).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fiber.h"

#define MAX_RUNS 101

typedef struct pingpong {
    weft__fiber *main;     /* the host thread's own fiber */
    weft__fiber *ponger;   /* the fiber that answers */
    bool stop;             /* set by main before the last switch in */
} pingpong;

/* The ponger: every time it is switched to, it switches back, until main
 * sets stop; then it leaves for good. A fiber may not return. */
static void ponger_main(void *arg)
{
    pingpong *pp = arg;
    while (!pp->stop)
        weft__fiber_switch(pp->ponger, pp->main);
    weft__fiber_exit(pp->ponger, pp->main);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One timed run of n round trips with a fresh fiber from the pool. */
static uint64_t run_once(weft__fiber *self, weft__fiber_pool *pool, long n)
{
    pingpong pp = { .main = self, .ponger = NULL, .stop = false };
    int rc = weft__fiber_create(pool, &pp.ponger, ponger_main, &pp);
    if (rc != WEFT_OK) {
        fprintf(stderr, "fiber_pingpong: cannot create a fiber: %s\n", weft_strerror(rc));
        exit(1);
    }
    weft__fiber_switch(self, pp.ponger);   /* first entry, outside the clock */

    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        weft__fiber_switch(self, pp.ponger);
    uint64_t t1 = now_ns();

    pp.stop = true;
    weft__fiber_switch(self, pp.ponger);   /* it exits back here */
    weft__fiber_release(pool, pp.ponger);
    return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static long arg_or(int argc, char **argv, int i, long dflt, long lo, long hi)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "usage: fiber_pingpong [round_trips (1..%ld) [runs (1..%d)]]\n",
                (long)1e9, MAX_RUNS);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long n = arg_or(argc, argv, 1, 1000000, 1, (long)1e9);
    int runs = (int)arg_or(argc, argv, 2, 5, 1, MAX_RUNS);

    weft__fiber self;
    weft__fiber_pool pool;
    int rc = weft__fiber_thread_enter(&self);
    if (rc == WEFT_OK)
        rc = weft__fiber_pool_init(&pool, 0, 1);
    if (rc != WEFT_OK) {
        fprintf(stderr, "fiber_pingpong: %s\n", weft_strerror(rc));
        return 1;
    }

    uint64_t ns[MAX_RUNS];
    run_once(&self, &pool, n);   /* warm-up: maps the stack, fills caches */
    for (int r = 0; r < runs; r++)
        ns[r] = run_once(&self, &pool, n);
    qsort(ns, (size_t)runs, sizeof ns[0], cmp_u64);
    double median = runs % 2 ? (double)ns[runs / 2]
                             : ((double)ns[runs / 2 - 1] + (double)ns[runs / 2]) / 2;

    double round_trip = median / (double)n;
    printf("fiber ping-pong: %ld round trips x %d runs (median run %.3f ms)\n",
           n, runs, median / 1e6);
    printf("  round trip (switch to the fiber and back): %7.2f ns\n", round_trip);
    printf("  one-way fiber switch:                      %7.2f ns\n", round_trip / 2);
    printf("  fastest / slowest run, one-way:            %7.2f / %.2f ns\n",
           (double)ns[0] / (double)n / 2, (double)ns[runs - 1] / (double)n / 2);

    weft__fiber_pool_fini(&pool);
    weft__fiber_thread_leave();
    return 0;
}
