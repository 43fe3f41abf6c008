/* parallel_sum: weft_parallel_reduce at its smallest, a sum of n doubles,
 * timed against the plain loop in the same run (the median of 11 runs of
 * each, taken in turns after one to warm up, and how far the middle half
 * of the runs spreads around the median).
 * The default n is 2*10^7 (160 MB), not 10^8: 800 MB is too much to ask of
 * a CI machine, and the time per element is the same. weft's chunks depend
 * on n and the grain only, so its sum is bit-identical in every run at any
 * worker count, and differs from the loop's by rounding only.
 *
 *   parallel_sum [n [workers]]      defaults: 20000000, one per CPU
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define RUNS 11

static void sum_chunk(size_t b, size_t e, void *partial, void *arg)   /* per chunk */
{
    const double *x = arg;
    double sum = *(double *)partial;
    for (size_t i = b; i < e; i++)
        sum += x[i];
    *(double *)partial = sum;
}

static void add(void *into, const void *from, void *arg)   /* partial + partial */
{
    (void)arg;
    *(double *)into += *(const double *)from;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t; returns (third quartile - first quartile) / median, in percent. */
static double spread(double *t)
{
    qsort(t, RUNS, sizeof *t, by_value);
    return 100 * (t[3 * RUNS / 4] - t[RUNS / 4]) / t[RUNS / 2];
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000;
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = atoi(argv[2]) > 0 ? (unsigned)atoi(argv[2]) : WEFT_WORKERS_NONE;
    weft_sched *s;
    int rc = weft_sched_create(&s, &cfg);
    double *x = n < SIZE_MAX / sizeof *x ? malloc(n ? n * sizeof *x : 1) : NULL;
    if (rc != WEFT_OK || !x)
        return fprintf(stderr, "parallel_sum: %s\n", x ? weft_strerror(rc) : "out of memory"), 1;
    for (size_t i = 0; i < n; i++)
        x[i] = (double)(i * 2654435761u % 1000003) / 1000003.0;   /* scattered over [0, 1) */

    const double zero = 0;
    double seq = 0, par = 0, first = 0, tseq[RUNS], tpar[RUNS];
    int same = 1;
    for (int r = -1; r < RUNS; r++) {   /* interleaved: both see the same load; run -1 warms up */
        double t0 = now_ms();
        seq = 0;
        for (size_t i = 0; i < n; i++)
            seq += x[i];
        double ts = now_ms() - t0;
        t0 = now_ms();
        rc = weft_parallel_reduce(s, 0, n, 0, &par, sizeof par, &zero, sum_chunk, add, x);
        double tp = now_ms() - t0;
        if (rc != WEFT_OK)
            return fprintf(stderr, "parallel_sum: %s\n", weft_strerror(rc)), 1;
        first = r >= 0 ? first : par;
        same &= memcmp(&par, &first, sizeof par) == 0;
        if (r >= 0) {
            tseq[r] = ts;
            tpar[r] = tp;
        }
    }
    double rel = (par > seq ? par - seq : seq - par) / (seq > 0 ? seq : 1);
    int ok = same && rel <= 1e-12;
    double sseq = spread(tseq), spar = spread(tpar);
    printf("sum of %zu doubles, median of %d runs, runs spread %.0f%%\n", n, RUNS,
           sseq > spar ? sseq : spar);
    printf("  sequential loop:    %8.2f ms   sum %.17g\n", tseq[RUNS / 2], seq);
    printf("  weft, %u workers:    %8.2f ms   sum %.17g   (%.2fx)\n", weft_sched_workers(s),
           tpar[RUNS / 2], par, tseq[RUNS / 2] / tpar[RUNS / 2]);
    printf("  relative difference %.1e (at most 1e-12), weft's sum %s in every run: %s\n",
           rel, same ? "the same" : "NOT the same", ok ? "ok" : "WRONG");
    weft_sched_destroy(s);
    free(x);
    return ok ? 0 : 1;
}
