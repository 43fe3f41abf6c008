/* The Fibonacci workload icount and coldwarm share, as bench_core runs
 * it: per level, spawn fib(n-1), compute fib(n-2) inline, then wait (one
 * spawn per call, F(n+1)-1 spawns in all).
 *
 * The including file defines, before the #include, the scheduler the
 * calls spawn on and how a failed call ends the program:
 *     static weft_sched *g_s;
 *     static void check(int rc, const char *what);
 */
#ifndef WEFT_BENCH_FIB_H
#define WEFT_BENCH_FIB_H

#include <stdatomic.h>
#include <stdbool.h>

#include <weft.h>

typedef struct fibs {
    int n;
    long r;
    atomic_bool done;
} fibs;

static bool fib_done(void *c)
{
    return atomic_load_explicit(&((fibs *)c)->done, memory_order_acquire);   /* acquire: the child's r; pairs with release in fib */
}

static void fib(void *a)
{
    fibs *f = a;
    if (f->n < 2) {
        f->r = f->n;
    } else {
        fibs x = { f->n - 1, 0, false };
        check(weft_spawn(g_s, fib, &x), "spawn");
        fibs y = { f->n - 2, 0, false };
        fib(&y);
        check(weft_wait_until(fib_done, &x), "wait_until");
        f->r = x.r + y.r;
    }
    atomic_store_explicit(&f->done, true, memory_order_release);   /* release: r before done; pairs with acquire in fib_done */
}

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }
static long fib_spawns(int n) { return n < 2 ? 0 : 1 + fib_spawns(n - 1) + fib_spawns(n - 2); }

#endif /* WEFT_BENCH_FIB_H */
