/* fib: fork-join with weft_spawn and weft_wait_until, and why it needs a
 * grain.
 *
 * Each call of fib(n) with n at or above the cutoff spawns fib(n-1),
 * computes fib(n-2) itself, then waits for the child. The wait runs the
 * child right here when nobody stole it, so the recursion stays depth-first
 * and costs a handful of fibers, not one per task. Below the cutoff it is
 * plain recursion.
 *
 * The cutoff is the whole difference between a speedup and a slowdown: a
 * plain call of fib(2) costs about a nanosecond and a spawn several times
 * that, so with a spawn per call (cutoff 2) fib(35) is 15 M tasks of a few
 * ns each and runs 5 to 100 times slower than plain recursion, slower
 * still when another program holds the CPU of a worker that the others
 * wait on. With the default cutoff, fib(35) is about 2,600 tasks of 4 to
 * 7 us each, coarse enough that a spawn's cost disappears and fine enough
 * to keep every worker busy. The program times both against plain
 * recursion: the median of 11 runs of each, taken in turns after one run
 * to warm up, and how far the middle half of the runs spreads around the
 * median (the demo calls a spread above 50% too wide to compare).
 *
 *   fib [n [workers [cutoff]]]      defaults: 35, one per CPU, 20
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <weft.h>

struct fib {
    int n;
    long result;
    atomic_bool done;
};

static int cutoff = 20;   /* set by main between runs; the spawn that starts a run publishes it */

static long fib_seq(int n)
{
    return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

static bool done(void *ctx)
{
    return atomic_load_explicit(&((struct fib *)ctx)->done, memory_order_acquire);
}

static void fib(void *arg)
{
    struct fib *f = arg;
    if (f->n < cutoff || f->n < 2) {
        f->result = fib_seq(f->n);                    /* too small to be worth a spawn */
    } else {
        struct fib a = { f->n - 1, 0, false };
        struct fib b = { f->n - 2, 0, false };
        weft_spawn(weft_sched_current(), fib, &a);   /* may be stolen */
        fib(&b);                                      /* runs here */
        weft_wait_until(done, &a);                    /* a inline, or other work */
        f->result = a.result + b.result;
    }
    atomic_store_explicit(&f->done, true, memory_order_release);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { RUNS = 11 };

/* Sorts t; returns how far the middle half of the runs lies from the
 * median: (third quartile - first quartile) / median, in percent. */
static double spread(double *t)
{
    qsort(t, RUNS, sizeof *t, by_value);
    return 100 * (t[3 * RUNS / 4] - t[RUNS / 4]) / t[RUNS / 2];
}

/* The tasks of fib(n) with a spawn per call: one per call with n >= 2,
 * which is fib(n+1) - 1 of them. */
static double tasks(int n)
{
    double a = 0, b = 1;   /* fib(k), fib(k+1) */
    for (int k = 0; k <= n; k++) {
        double c = a + b;
        a = b;
        b = c;
    }
    return a - 1;
}

/* One run of fib(n) on s with the given cutoff: the seconds it took. */
static double run(weft_sched *s, int n, int cut, long want, bool *ok)
{
    struct fib root = { n, 0, false };
    cutoff = cut;
    double t0 = now_s();
    weft_spawn(s, fib, &root);
    weft_sched_wait_idle(s);
    double t = now_s() - t0;
    *ok &= root.result == want;
    return t;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 35;
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = atoi(argv[2]) > 0 ? (unsigned)atoi(argv[2]) : WEFT_WORKERS_NONE;
    int cut = argc > 3 ? atoi(argv[3]) : 20;
    cut = cut < 2 ? 2 : cut;

    weft_sched *s;
    int rc = weft_sched_create(&s, &cfg);
    if (rc != WEFT_OK) {
        fprintf(stderr, "fib: %s\n", weft_strerror(rc));
        return 1;
    }

    double seq[RUNS], grain[RUNS], each[RUNS];
    long want = 0;
    bool ok = true;
    for (int r = -1; r < RUNS; r++) {   /* in turns: all three see the same load */
        double t0 = now_s();
        want = fib_seq(n);
        double t = now_s() - t0, tg = run(s, n, cut, want, &ok), te = run(s, n, 2, want, &ok);
        if (r >= 0) {   /* run -1 warms up: the first spawns create fibers */
            seq[r] = t;
            grain[r] = tg;
            each[r] = te;
        }
    }
    double sp = spread(seq), sg = spread(grain), se = spread(each);
    double worst = sp > sg ? sp : sg;
    worst = worst > se ? worst : se;
    double ts = seq[RUNS / 2], tg = grain[RUNS / 2], te = each[RUNS / 2];
    unsigned workers = weft_sched_workers(s);
    char what[64];

    printf("fib(%d) = %ld (%s), median of %d runs, runs spread %.0f%%\n", n, want,
           ok ? "correct" : "WRONG", RUNS, worst);
    printf("  %-30s %8.2f ms\n", "sequential C:", ts * 1e3);
    snprintf(what, sizeof what, "weft, %u workers, cutoff %d:", workers, cut);
    printf("  %-30s %8.2f ms  (%.2fx)\n", what, tg * 1e3, ts / tg);
    snprintf(what, sizeof what, "weft, %u workers, cutoff 2:", workers);
    printf("  %-30s %8.2f ms  (%.2fx: a spawn per call, %.2g M tasks of a few ns, %.0f ns each)\n",
           what, te * 1e3, ts / te, tasks(n) * 1e-6, tasks(n) > 0 ? te * 1e9 / tasks(n) : 0.0);
    weft_sched_destroy(s);
    return ok ? 0 : 1;
}
