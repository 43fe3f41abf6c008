#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <valgrind/callgrind.h>
#include "weft.h"
typedef struct Fib { int n; long r; struct Fib *kids; } Fib;
static Fib pool[1 << 20]; static atomic_size_t used;
static void fsum(void *a) { Fib *f = a; f->r = f->kids[0].r + f->kids[1].r; }
static atomic_long calls;
static void fsf(weft_subflow *sf, void *a) { atomic_fetch_add(&calls, 1);
    Fib *f = a;
    if (f->n < 2) { f->r = f->n; return; }
    size_t k = atomic_fetch_add(&used, 2);
    f->kids = &pool[k];
    f->kids[0] = (Fib){ f->n - 1, 0, NULL }; f->kids[1] = (Fib){ f->n - 2, 0, NULL };
    weft_task *x = weft_subflow_add_subflow(sf, fsf, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, fsf, &f->kids[1]);
    weft_task *s = weft_subflow_add(sf, fsum, f);
    weft_task_precede(x, s); weft_task_precede(y, s);
}
static atomic_long nalloc;
static void *ca(size_t size, void *ctx) { (void)ctx; atomic_fetch_add(&nalloc, 1); void *p; return posix_memalign(&p, 64, size) ? NULL : p; }
static void cf(void *p, size_t size, void *ctx) { (void)size; (void)ctx; free(p); }
int main(void) {
    static weft_allocator al = { ca, cf, NULL }; weft_set_allocator(&al);
    int n = atoi(getenv("N"));
    weft_config c; weft_config_init(&c); c.workers = WEFT_WORKERS_NONE;
    weft_sched *s; weft_sched_create(&s, &c); weft_sched_bind(s);
    weft_graph *g; weft_graph_create(&g);
    Fib top = { n, 0, NULL };
    weft_graph_add_subflow(g, fsf, &top);
    weft_graph_run(s, g); weft_graph_wait(g);
    printf("first: fib %ld calls %ld allocs %ld\n", top.r, (long)calls, (long)nalloc); nalloc = 0; calls = 0; used = 0; top = (Fib){ n, 0, NULL };
    CALLGRIND_TOGGLE_COLLECT;
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    printf("fib %ld used %zu calls %ld allocs %ld\n", top.r, (size_t)used, (long)calls, (long)nalloc);
    weft_graph_destroy(g); weft_sched_unbind(); weft_sched_destroy(s);
}
