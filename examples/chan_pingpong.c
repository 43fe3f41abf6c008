/* chan_pingpong: two tasks pass a value back and forth through two
 * rendezvous channels on a scheduler with one worker, and the cost of a
 * round trip is printed.
 *
 * Both tasks block on every receive: the receive suspends its fiber, and
 * the send that answers it makes that fiber run next on the worker (the
 * LIFO hand-off), so a round trip is two fiber switches and four channel
 * calls, with no thread ever sleeping.
 *
 *   chan_pingpong [round_trips [runs]]     defaults: 1000000 5
 *
 * One warm-up run, then `runs` timed runs; the median run gives the cost
 * per round trip by the wall clock and by the worker thread's CPU time
 * (the two differ when other programs share the cores). benchmarks/run.py
 * counts its instructions per round trip under callgrind.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft.h>

#define MAX_RUNS 101

typedef struct pingpong {
    weft_chan *ping, *pong;
    long n;
    uint64_t cpu_ns;   /* the worker thread's CPU time over the loop */
} pingpong;

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "chan_pingpong: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

static void pinger(void *arg)
{
    pingpong *pp = arg;
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);   /* one worker: the ponger runs on this thread too */
    long v = 0;
    for (long i = 0; i < pp->n; i++) {
        check(weft_chan_send(pp->ping, &v), "send");
        check(weft_chan_recv(pp->pong, &v), "receive");
    }
    pp->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (v != pp->n) {
        fprintf(stderr, "chan_pingpong: WRONG count %ld, expected %ld\n", v, pp->n);
        exit(1);
    }
}

static void ponger(void *arg)
{
    pingpong *pp = arg;
    long v;
    for (long i = 0; i < pp->n; i++) {
        check(weft_chan_recv(pp->ping, &v), "receive");
        v++;
        check(weft_chan_send(pp->pong, &v), "send");
    }
}

/* One run: the ponger first, so that it is blocked in its receive when
 * the pinger starts. Returns the wall-clock time. */
static uint64_t run_once(weft_sched *s, pingpong *pp)
{
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
    check(weft_spawn(s, ponger, pp), "spawn");
    check(weft_spawn(s, pinger, pp), "spawn");
    check(weft_sched_wait_idle(s), "wait_idle");
    return clock_ns(CLOCK_MONOTONIC) - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double median(uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static long arg_or(int argc, char **argv, int i, long dflt, long lo, long hi)
{
    if (argc <= i)
        return dflt;
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "usage: chan_pingpong [round_trips (1..%ld) [runs (1..%d)]]\n",
                (long)1e9, MAX_RUNS);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long n = arg_or(argc, argv, 1, 1000000, 1, (long)1e9);
    int runs = (int)arg_or(argc, argv, 2, 5, 1, MAX_RUNS);

    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = 1;
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "sched_create");
    pingpong pp = { .n = n };
    check(weft_chan_create(&pp.ping, sizeof(long), 0), "chan_create");
    check(weft_chan_create(&pp.pong, sizeof(long), 0), "chan_create");

    uint64_t wall[MAX_RUNS], cpu[MAX_RUNS];
    run_once(s, &pp);   /* warm-up: fibers, stacks, caches */
    for (int r = 0; r < runs; r++) {
        wall[r] = run_once(s, &pp);
        cpu[r] = pp.cpu_ns;
    }
    double w = median(wall, runs), c = median(cpu, runs);
    printf("channel ping-pong on one worker: %ld round trips x %d runs\n", n, runs);
    printf("  round trip, wall clock (median run):    %7.1f ns\n", w / (double)n);
    printf("  round trip, worker CPU time (median):   %7.1f ns\n", c / (double)n);

    weft_chan_destroy(pp.ping);
    weft_chan_destroy(pp.pong);
    check(weft_sched_destroy(s), "sched_destroy");
    return 0;
}
