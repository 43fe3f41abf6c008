/* placement: where a freshly spawned communicating pair lands. Public API
 * only.
 *
 *   placement [RUNS [ROUNDS [GAP_US [WORKERS]]]]     defaults 20 1000 0 2
 *
 * Each run spawns, from the main thread (not a worker), a ponger and then
 * a pinger that exchange ROUNDS round trips over two rendezvous channels
 * (as bench_sync's pingpong/ rows), each task noting weft_thread_id(),
 * and waits with weft_sched_wait_idle. Fibers never migrate, so the pair keeps
 * for its whole life the workers it first ran on. GAP_US: a sleep before
 * each spawn (0: the next pair comes while the workers still spin after
 * the last one; 5000: they have parked). One scheduler for all the runs.
 *
 * Prints a line per run (the two thread ids and ns per round trip) and a
 * summary line:  together K/RUNS  apart RUNS-K  median ns per round trip
 * of each kind. Exits 1 with WRONG if a pair lost a message.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft.h>

typedef struct pair {
    weft_chan *ping, *pong;
    int rounds;
    int tid_ping, tid_pong;
    long sum;
} pair;

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "placement: %s: %s\n", what, weft_strerror(rc));
        exit(2);
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pinger(void *arg)
{
    pair *p = arg;
    p->tid_ping = weft_thread_id();
    long sum = 0;
    for (int i = 0; i < p->rounds; i++) {
        int v = i;
        weft_chan_send(p->ping, &v);
        weft_chan_recv(p->pong, &v);
        sum += v;
    }
    p->sum = sum;
}

static void ponger(void *arg)
{
    pair *p = arg;
    p->tid_pong = weft_thread_id();
    for (int i = 0; i < p->rounds; i++) {
        int v;
        weft_chan_recv(p->ping, &v);
        v++;
        weft_chan_send(p->pong, &v);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median(uint64_t *v, int n)
{
    if (!n)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 1000;
    long gap_us = argc > 3 ? atol(argv[3]) : 0;
    unsigned workers = argc > 4 ? (unsigned)atoi(argv[4]) : 2;
    if (runs < 1 || rounds < 1 || gap_us < 0 || workers < 1) {
        fprintf(stderr, "usage: placement [RUNS [ROUNDS [GAP_US [WORKERS]]]]\n");
        return 2;
    }
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    weft_sched *s;
    check(weft_sched_create(&s, &c), "weft_sched_create");
    pair p;
    check(weft_chan_create(&p.ping, sizeof(int), 0), "weft_chan_create");
    check(weft_chan_create(&p.pong, sizeof(int), 0), "weft_chan_create");
    p.rounds = rounds;
    uint64_t *together_ns = calloc((size_t)runs, sizeof *together_ns);
    uint64_t *apart_ns = calloc((size_t)runs, sizeof *apart_ns);
    if (!together_ns || !apart_ns)
        return 2;
    int together = 0, apart = 0;
    long expect = (long)rounds * (rounds + 1) / 2;
    for (int r = 0; r < runs; r++) {
        if (gap_us) {
            struct timespec ts = { gap_us / 1000000, (gap_us % 1000000) * 1000 };
            nanosleep(&ts, NULL);
        }
        p.tid_ping = p.tid_pong = -1;
        p.sum = 0;
        uint64_t t0 = now_ns();
        check(weft_spawn(s, ponger, &p), "weft_spawn");
        check(weft_spawn(s, pinger, &p), "weft_spawn");
        check(weft_sched_wait_idle(s), "weft_sched_wait_idle");
        uint64_t ns = (now_ns() - t0) / (uint64_t)rounds;
        if (p.sum != expect) {
            printf("WRONG: run %d: sum %ld, expected %ld\n", r, p.sum, expect);
            return 1;
        }
        bool same = p.tid_ping == p.tid_pong;
        if (same)
            together_ns[together++] = ns;
        else
            apart_ns[apart++] = ns;
        printf("run %2d: ponger on %d, pinger on %d: %s, %llu ns per round trip\n", r, p.tid_pong,
               p.tid_ping, same ? "together" : "apart", (unsigned long long)ns);
    }
    printf("placement: %d workers, gap %ld us, %d rounds: together %d/%d, apart %d/%d; "
           "median ns per round trip: together %.0f, apart %.0f\n",
           workers, gap_us, rounds, together, runs, apart, runs, median(together_ns, together),
           median(apart_ns, apart));
    free(together_ns);
    free(apart_ns);
    weft_chan_destroy(p.ping);
    weft_chan_destroy(p.pong);
    weft_sched_destroy(s);
    return 0;
}
