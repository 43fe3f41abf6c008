/* Recursive subflow fib(N), the shape of bench_subflow's: each call a
 * subflow task adding two subflow tasks (n-1, n-2) and a sum after them.
 * W workers (0: this thread bound, running every task). Prints the best
 * of 100 runs, in ns per call, and the peak resident size: how much of a
 * call's time is the memory its sub-graphs touch (fib(12) fits in cache,
 * fib(22) does not). N=22 W=0 ./fib_wall */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include "weft.h"

typedef struct Fib { int n; long r; struct Fib *kids; } Fib;
static Fib pool[1 << 20];
static atomic_size_t used;
static atomic_long calls;

static void fsum(void *a) { Fib *f = a; f->r = f->kids[0].r + f->kids[1].r; }

static void fsf(weft_subflow *sf, void *a)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    Fib *f = a;
    if (f->n < 2) { f->r = f->n; return; }
    size_t k = atomic_fetch_add_explicit(&used, 2, memory_order_relaxed);
    f->kids = &pool[k];
    f->kids[0] = (Fib){ f->n - 1, 0, NULL };
    f->kids[1] = (Fib){ f->n - 2, 0, NULL };
    weft_task *x = weft_subflow_add_subflow(sf, fsf, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, fsf, &f->kids[1]);
    weft_task *s = weft_subflow_add(sf, fsum, f);
    weft_task_precede(x, s);
    weft_task_precede(y, s);
}

static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(void)
{
    int n = atoi(getenv("N") ? getenv("N") : "22");
    int w = atoi(getenv("W") ? getenv("W") : "0");
    weft_config c;
    weft_config_init(&c);
    c.workers = w ? (unsigned)w : WEFT_WORKERS_NONE;
    weft_sched *s;
    weft_sched_create(&s, &c);
    if (!w)
        weft_sched_bind(s);
    weft_graph *g;
    weft_graph_create(&g);
    Fib top = { n, 0, NULL };
    weft_graph_add_subflow(g, fsf, &top);
    double best = 1e30;
    for (int r = 0; r < 100; r++) {
        atomic_store(&used, 0);
        atomic_store(&calls, 0);
        top = (Fib){ n, 0, NULL };
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        weft_graph_run(s, g);
        weft_graph_wait(g);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double t = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
        if (t < best)
            best = t;
        if (top.r != fib(n)) {
            printf("WRONG\n");
            return 1;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("fib(%d) W=%d: %.1f ns a call (best of 100), %ld calls, max RSS %ld MB\n", n, w,
           best / atomic_load(&calls), atomic_load(&calls), ru.ru_maxrss / 1024);
    weft_graph_destroy(g);
    if (!w)
        weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}
