/* kit.h: what every program of this study shares (C and C++): the clock,
 * the median, the workloads' arithmetic, their sizes and their reference
 * results. Each program runs one cell: `prog KERNEL T R [LINES]`, one
 * untimed round, then R timed rounds; it prints the median ms per round
 * last on its line (the driver takes the median of the process medians).
 * A program whose result is wrong prints WRONG and exits 1. The kernels
 * are those of weft's own suite (bench_subflow.cc, bench_flow.cc,
 * bench_algo.cc), with the same sizes. */
#ifndef KIT_H
#define KIT_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KIT_FIB
#define KIT_FIB 22                 /* fib(22); -DKIT_FIB=30 for a deeper one */
#endif
#define KIT_CHAIN 100000           /* a dependent async chain of 10^5 */
#define KIT_SIDE 256               /* a 256 x 256 wavefront */
#define KIT_TOKENS 1000000         /* 10^6 tokens through 4 stages */
#define KIT_N 10000000             /* transform, scan, sort of 10^7 */

static inline double kit_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;   /* ms */
}

static inline int kit_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ms[0..n): sorted in place; the median */
static inline double kit_median(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof *ms, kit_cmp);
    return n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
}

static inline void kit_wrong(const char *what)
{
    printf("WRONG %s\n", what);
    exit(1);
}

#define KIT_ARGS(argc, argv, K, T, R, L)                                \
    const char *K = (argc) > 1 ? (argv)[1] : "";                        \
    int T = (argc) > 2 ? atoi((argv)[2]) : 1;                           \
    int R = (argc) > 3 ? atoi((argv)[3]) : 5;                           \
    unsigned L = (argc) > 4 ? (unsigned)atoi((argv)[4]) : 1;            \
    if (R < 1 || R > 64) R = 5;                                         \
    if (T < 1) T = 1;

/* ---- fib ---- */
static inline long kit_fib_seq(int n) { return n < 2 ? n : kit_fib_seq(n - 1) + kit_fib_seq(n - 2); }
static inline long kit_fib_calls(int n) { return n < 2 ? 1 : 1 + kit_fib_calls(n - 1) + kit_fib_calls(n - 2); }

/* ---- the chain's, the wavefront's and the pipeline's arithmetic ---- */
__attribute__((noinline, unused)) static uint64_t kit_mix(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x7f4a7c15ull);
    x ^= x >> 29;
    return x;
}

/* chain task i: val[i] from val[i - 1] */
static inline void kit_chain_step(uint64_t *val, uint32_t i) { val[i] = kit_mix(i ? val[i - 1] : 1, i); }

static inline uint64_t kit_chain_ref(void)
{
    uint64_t v = 1;
    for (uint32_t i = 0; i < KIT_CHAIN; i++)
        v = kit_mix(i ? v : 1, i);
    return v;
}

/* wavefront cell (i, j): from (i - 1, j) and (i, j - 1) */
static inline void kit_wave_step(uint64_t *v, uint32_t i, uint32_t j)
{
    uint64_t up = i ? v[(i - 1) * KIT_SIDE + j] : 3, left = j ? v[i * KIT_SIDE + j - 1] : 5;
    v[i * KIT_SIDE + j] = kit_mix(up, left);
}

static inline uint64_t kit_wave_ref(void)
{
    uint64_t *v = (uint64_t *)calloc(KIT_SIDE * KIT_SIDE, sizeof *v), r;
    for (uint32_t i = 0; i < KIT_SIDE; i++)
        for (uint32_t j = 0; j < KIT_SIDE; j++)
            kit_wave_step(v, i, j);
    r = v[KIT_SIDE * KIT_SIDE - 1];
    free(v);
    return r;
}

/* pipeline stage k's work on a token's value */
__attribute__((noinline, unused)) static uint64_t kit_stage(uint64_t x, unsigned k)
{
    for (unsigned r = 0; r < 8; r++)
        x = kit_mix(x, k + r);
    return x;
}

static inline uint64_t kit_pipe_ref(void)
{
    uint64_t sum = 0;
    for (uint64_t t = 0; t < KIT_TOKENS; t++)
        sum += kit_stage(kit_stage(kit_stage(t, 1), 2), 3);
    return sum;
}

/* ---- transform, scan, sort ---- */
static inline uint64_t kit_splitmix(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* x: doubles in [0, 1); keys: uint64 (bench_algo's generator) */
static inline void kit_fill(double *x, uint64_t *keys)
{
    uint64_t st = 1;
    for (size_t i = 0; i < KIT_N; i++) {
        double d = (double)(kit_splitmix(&st) >> 11) / 9007199254740992.0;
        uint64_t k = kit_splitmix(&st);
        if (x)
            x[i] = d;
        if (keys)
            keys[i] = k;
    }
}

/* the transform's element, and its chunk as bench_algo's axpb */
static inline double kit_axpb1(double v) { return 1.5 * v + 0.25; }
__attribute__((noinline, unused)) static void kit_axpb(const double *__restrict x, double *__restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = 1.5 * x[i] + 0.25;
}

static inline void kit_check_transform(const double *x, const double *y)
{
    for (size_t i = 0; i < KIT_N; i++)
        if (y[i] != kit_axpb1(x[i]))
            kit_wrong("transform");
}

/* The fold of x[b, e) onto acc as every scan body calls it (bench_algo's
 * scan_range): with outputs, in order; without, in four partial sums. */
static inline double kit_scan_range(const double *x, double *y, size_t b, size_t e, double acc, int final)
{
    if (final) {
        for (size_t i = b; i < e; i++)
            y[i] = acc += x[i];
        return acc;
    }
    double p[4] = {0, 0, 0, 0};
    size_t i = b;
    for (; i + 4 <= e; i += 4)
        for (int k = 0; k < 4; k++)
            p[k] += x[i + k];
    for (; i < e; i++)
        p[0] += x[i];
    return acc + ((p[0] + p[1]) + (p[2] + p[3]));
}

/* y against the left fold of x, within 1e-9 (every library groups the
 * additions its own way) */
static inline void kit_check_scan(const double *x, const double *y)
{
    double acc = 0;
    for (size_t i = 0; i < KIT_N; i++) {
        acc += x[i];
        if (!(fabs(y[i] - acc) <= 1e-9 * fabs(acc) + 1e-12))
            kit_wrong("scan");
    }
}

/* the multiset's fingerprint: a sum and a sum of mixes, order-free */
static inline void kit_keys_print(const uint64_t *k, uint64_t fp[2])
{
    fp[0] = fp[1] = 0;
    for (size_t i = 0; i < KIT_N; i++) {
        fp[0] += k[i];
        fp[1] += kit_mix(k[i], 7);
    }
}

/* sorted ascending, and the same keys as before */
static inline void kit_check_sort(const uint64_t *k, const uint64_t want[2])
{
    uint64_t fp[2];
    for (size_t i = 1; i < KIT_N; i++)
        if (k[i - 1] > k[i])
            kit_wrong("sort: order");
    kit_keys_print(k, fp);
    if (fp[0] != want[0] || fp[1] != want[1])
        kit_wrong("sort: keys");
}

static inline int kit_cmp_u64(const void *a, const void *b, void *arg)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    (void)arg;
    return (x > y) - (x < y);
}

#endif
