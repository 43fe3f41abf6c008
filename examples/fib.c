/* fib: fork-join with weft_spawn and weft_wait_until.
 *
 * Each call spawns fib(n-1), computes fib(n-2) itself, then waits for the
 * child. The wait runs the child right here when nobody stole it, so the
 * recursion stays depth-first and costs a handful of fibers, not one per
 * task. Prints the result and the time against plain recursion, the median
 * of 5 runs of each, taken in turns.
 *
 *   fib [n [workers]]      defaults: 30, one per CPU
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

static bool done(void *ctx)
{
    return atomic_load_explicit(&((struct fib *)ctx)->done, memory_order_acquire);
}

static void fib(void *arg)
{
    struct fib *f = arg;
    if (f->n < 2) {
        f->result = f->n;
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

static long fib_seq(int n)
{
    return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
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

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30;
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = (unsigned)atoi(argv[2]);

    weft_sched *s;
    int rc = weft_sched_create(&s, &cfg);
    if (rc != WEFT_OK) {
        fprintf(stderr, "fib: %s\n", weft_strerror(rc));
        return 1;
    }

    enum { RUNS = 5 };
    double seq[RUNS], par[RUNS];
    long want = 0;
    bool ok = true;
    struct fib root = { 0 };
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        want = fib_seq(n);
        seq[r] = now_s() - t0;

        root = (struct fib){ n, 0, false };
        t0 = now_s();
        weft_spawn(s, fib, &root);
        weft_wait_idle(s);
        par[r] = now_s() - t0;
        ok &= root.result == want;
    }
    qsort(seq, RUNS, sizeof *seq, by_value);
    qsort(par, RUNS, sizeof *par, by_value);

    printf("fib(%d) = %ld (%s), median of %d runs\n", n, root.result,
           ok ? "correct" : "WRONG", RUNS);
    printf("  sequential C:          %8.2f ms\n", seq[RUNS / 2] * 1e3);
    printf("  weft, %u workers:       %8.2f ms  (%.2fx; one spawn per call)\n",
           weft_sched_workers(s), par[RUNS / 2] * 1e3, seq[RUNS / 2] / par[RUNS / 2]);
    weft_sched_destroy(s);
    return ok ? 0 : 1;
}
