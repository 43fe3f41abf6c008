/* weft's C API, every row: `w_kit KERNEL T R [LINES]`, KERNEL one of
 * fib, fibjoin, fibgroup, chain, wave, pipe, transform, scan, sort. The
 * kernels of weft's suite (bench_subflow.c's subflow fib, bench_flow.cc's chain,
 * wavefront and pipeline, bench_algo.cc's transform, range scan and
 * sort), through the installed library's public calls.
 *
 * T: fib, chain, wave, pipe run on T workers, the main thread never bound
 * (it waits as a plain thread, as Taskflow's main does); transform, scan
 * and sort are called from the main thread, which takes a share beside
 * T - 1 workers (bench_algo's form; oneTBB's main thread is one of its T
 * too). */
#include <stdbool.h>
#include <stdatomic.h>
#include <weft.h>
#include "kit.h"

static weft_sched *s;
static unsigned lines;

/* ---- fib: a graph of one subflow task; each call adds two subflow
 * tasks and a sum after them (fib), or joins them (fibjoin) ---- */
typedef struct fibn {
    int n;
    long r;
    struct fibn *kids;
} fibn;
static fibn *pool, top;
static atomic_size_t used;
static atomic_bool bad;
static bool join;
static weft_graph *g;

static void fib_sum(void *a)
{
    fibn *f = a;
    f->r = f->kids[0].r + f->kids[1].r;
}

static void fib_sf(weft_subflow *sf, void *a)
{
    fibn *f = a;
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    if (join) {
        /* As Taskflow's join form (its r1, r2): the children's records on
         * this call's stack, which the join outlives; no shared pool. */
        fibn kids[2] = {{f->n - 1, 0, NULL}, {f->n - 2, 0, NULL}};
        weft_task *x = weft_subflow_add_subflow(sf, fib_sf, &kids[0]);
        weft_task *y = weft_subflow_add_subflow(sf, fib_sf, &kids[1]);
        if (!x || !y || weft_subflow_join(sf) != WEFT_OK)
            atomic_store(&bad, true);
        f->r = kids[0].r + kids[1].r;
        return;
    }
    size_t k = atomic_fetch_add_explicit(&used, 2, memory_order_relaxed);
    f->kids = &pool[k];
    f->kids[0] = (fibn){f->n - 1, 0, NULL};
    f->kids[1] = (fibn){f->n - 2, 0, NULL};
    weft_task *x = weft_subflow_add_subflow(sf, fib_sf, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, fib_sf, &f->kids[1]);
    weft_task *sum = weft_subflow_add(sf, fib_sum, f);
    if (!x || !y || !sum || weft_task_precede(x, sum) != WEFT_OK || weft_task_precede(y, sum) != WEFT_OK)
        atomic_store(&bad, true);
}

static void fib_run(void)
{
    atomic_store(&used, 0);
    top = (fibn){KIT_FIB, 0, NULL};
    if (weft_graph_run(s, g) != WEFT_OK || weft_graph_wait(g) != WEFT_OK)
        kit_wrong("fib: run");
}

static void fib_check(void)
{
    if (top.r != kit_fib_seq(KIT_FIB) || atomic_load(&bad))
        kit_wrong("fib");
}

/* ---- fibgroup: a task group per call, as oneTBB's task_group fib:
 * fib(n - 1) spawned, fib(n - 2) inline, join; the top call a member of
 * a group that main (a plain thread) joins ---- */
typedef struct gfib {
    int n;
    long r;
} gfib;
static gfib gtop;

static void gfib_fn(void *a)
{
    gfib *f = a;
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    gfib x = {f->n - 1, 0}, y = {f->n - 2, 0};
    weft_group gr;
    if (weft_group_init(&gr, s) != WEFT_OK || weft_group_spawn(&gr, gfib_fn, &x) != WEFT_OK)
        atomic_store(&bad, true);
    gfib_fn(&y);
    if (weft_group_join(&gr) != WEFT_OK)
        atomic_store(&bad, true);
    weft_group_destroy(&gr);
    f->r = x.r + y.r;
}

static void gfib_run(void)
{
    weft_group gr;
    gtop = (gfib){KIT_FIB, 0};
    if (weft_group_init(&gr, s) != WEFT_OK || weft_group_spawn(&gr, gfib_fn, &gtop) != WEFT_OK ||
        weft_group_join(&gr) != WEFT_OK)
        kit_wrong("fibgroup: run");
    weft_group_destroy(&gr);
}

static void gfib_check(void)
{
    if (gtop.r != kit_fib_seq(KIT_FIB) || atomic_load(&bad))
        kit_wrong("fibgroup");
}

/* ---- chain and wavefront: dependent asyncs ---- */
static uint64_t *val;
static weft_async **h;

static void *chain_task(void *p)
{
    kit_chain_step(val, (uint32_t)(uintptr_t)p);
    return NULL;
}

static void chain_run(void)
{
    for (uint32_t i = 0; i < KIT_CHAIN; i++)
        if (weft_async_spawn(s, chain_task, (void *)(uintptr_t)i, i ? &h[i - 1] : NULL, i ? 1 : 0, &h[i]) != WEFT_OK)
            kit_wrong("chain: spawn");
    weft_async_wait(h[KIT_CHAIN - 1]);
    for (uint32_t i = 0; i < KIT_CHAIN; i++)
        weft_async_release(h[i]);
}

static void chain_check(void)
{
    if (val[KIT_CHAIN - 1] != kit_chain_ref())
        kit_wrong("chain");
    memset(val, 0, KIT_CHAIN * sizeof *val);
}

static void *wave_task(void *p)
{
    uint32_t c = (uint32_t)(uintptr_t)p;
    kit_wave_step(val, c / KIT_SIDE, c % KIT_SIDE);
    return NULL;
}

static void wave_run(void)
{
    for (uint32_t i = 0; i < KIT_SIDE; i++)
        for (uint32_t j = 0; j < KIT_SIDE; j++) {
            weft_async *p[2];
            size_t k = 0;
            if (i)
                p[k++] = h[(i - 1) * KIT_SIDE + j];
            if (j)
                p[k++] = h[i * KIT_SIDE + j - 1];
            if (weft_async_spawn(s, wave_task, (void *)(uintptr_t)(i * KIT_SIDE + j), p, k, &h[i * KIT_SIDE + j]) != WEFT_OK)
                kit_wrong("wave: spawn");
        }
    weft_async_wait(h[KIT_SIDE * KIT_SIDE - 1]);
    for (uint32_t v = 0; v < KIT_SIDE * KIT_SIDE; v++)
        weft_async_release(h[v]);
}

static void wave_check(void)
{
    if (val[KIT_SIDE * KIT_SIDE - 1] != kit_wave_ref())
        kit_wrong("wave");
    memset(val, 0, KIT_SIDE * KIT_SIDE * sizeof *val);
}

/* ---- pipeline: serial, parallel, serial, parallel ---- */
static struct {
    _Alignas(64) uint64_t slot[8][8];   /* per line, a cache line each */
    uint64_t next, sum;
} pp;
static weft_pipeline *pl;

static void p_first(weft_pipe *pf, void *arg)
{
    (void)arg;
    if (pp.next == KIT_TOKENS) {
        weft_pipe_stop(pf);
        return;
    }
    pp.slot[weft_pipe_line(pf)][0] = pp.next++;
}

static void p_mid(weft_pipe *pf, void *arg)
{
    size_t l = weft_pipe_line(pf);
    (void)arg;
    pp.slot[l][0] = kit_stage(pp.slot[l][0], (unsigned)weft_pipe_stage_index(pf));
}

static void p_last(weft_pipe *pf, void *arg)
{
    (void)arg;
    __atomic_fetch_add(&pp.sum, kit_stage(pp.slot[weft_pipe_line(pf)][0], 3), __ATOMIC_RELAXED);
}

static void pipe_run(void)
{
    pp.next = pp.sum = 0;
    if (weft_pipeline_run(s, pl) != WEFT_OK)
        kit_wrong("pipe: run");
}

static void pipe_check(void)
{
    static uint64_t want;
    if (!want)
        want = kit_pipe_ref();
    if (weft_pipeline_tokens(pl) != KIT_TOKENS || pp.sum != want)
        kit_wrong("pipe");
}

/* ---- transform, scan, sort ---- */
static double *x, *y;
static uint64_t *keys, *work, fp[2];

static void w_axpb(void *out, const void *in, size_t i, size_t count, void *arg)
{
    (void)i, (void)arg;
    kit_axpb(in, out, count);
}

static void scan_body(size_t b, size_t e, void *sum, bool final, void *arg)
{
    (void)arg;
    *(double *)sum = kit_scan_range(x, y, b, e, *(double *)sum, final);
}

static void add_double(void *into, const void *from, void *arg)
{
    (void)arg;
    *(double *)into += *(const double *)from;
}

static void y_prep(void)
{
    for (size_t i = 0; i < KIT_N; i++)
        y[i] = -1;
}
static void transform_run(void)
{
    if (weft_parallel_transform(s, y, 8, x, 8, KIT_N, 0, w_axpb, NULL) != WEFT_OK)
        kit_wrong("transform: call");
}
static void transform_check(void) { kit_check_transform(x, y); }
static void scan_run(void)
{
    double sum, zero = 0;
    if (weft_parallel_scan(s, 0, KIT_N, 0, &sum, sizeof sum, &zero, scan_body, add_double, NULL) != WEFT_OK)
        kit_wrong("scan: call");
}
static void scan_check(void) { kit_check_scan(x, y); }
static void sort_prep(void) { memcpy(work, keys, KIT_N * sizeof *work); }
static void sort_run(void)
{
    if (weft_parallel_sort(s, work, KIT_N, 8, kit_cmp_u64, NULL) != WEFT_OK)
        kit_wrong("sort: call");
}
static void sort_check(void) { kit_check_sort(work, fp); }
static void none(void) {}

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, K, T, R, L);
    void (*prep)(void) = none, (*run)(void) = NULL, (*check)(void) = NULL;
    bool algo = !strcmp(K, "transform") || !strcmp(K, "scan") || !strcmp(K, "sort");
    weft_config c;
    weft_config_init(&c);
    unsigned w = algo ? (unsigned)T - 1 : (unsigned)T;
    c.workers = w ? w : WEFT_WORKERS_NONE;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        kit_wrong("create");
    lines = L;
    if (!strcmp(K, "fib") || !strcmp(K, "fibjoin")) {
        join = !strcmp(K, "fibjoin");
        pool = calloc((size_t)kit_fib_calls(KIT_FIB) + 2, sizeof *pool);
        weft_graph_create(&g);
        if (!weft_graph_add_subflow(g, fib_sf, &top))
            kit_wrong("fib: add");
        run = fib_run, check = fib_check;
    } else if (!strcmp(K, "fibgroup")) {
        run = gfib_run, check = gfib_check;
    } else if (!strcmp(K, "chain") || !strcmp(K, "wave")) {
        val = calloc(KIT_SIDE * KIT_SIDE + KIT_CHAIN, sizeof *val);
        h = calloc(KIT_SIDE * KIT_SIDE + KIT_CHAIN, sizeof *h);
        run = K[0] == 'c' ? chain_run : wave_run, check = K[0] == 'c' ? chain_check : wave_check;
    } else if (!strcmp(K, "pipe")) {
        weft_pipe_stage st[4] = {{WEFT_PIPE_SERIAL, p_first, NULL}, {WEFT_PIPE_PARALLEL, p_mid, NULL},
                                 {WEFT_PIPE_SERIAL, p_mid, NULL}, {WEFT_PIPE_PARALLEL, p_last, NULL}};
        if (L < 1 || L > 8 || weft_pipeline_create(L, st, 4, &pl) != WEFT_OK)
            kit_wrong("pipe: create");
        run = pipe_run, check = pipe_check;
    } else if (algo) {
        x = malloc(KIT_N * sizeof *x), y = malloc(KIT_N * sizeof *y);
        keys = malloc(KIT_N * sizeof *keys), work = malloc(KIT_N * sizeof *work);
        kit_fill(x, keys);
        kit_keys_print(keys, fp);
        if (K[1] == 'o')
            prep = sort_prep, run = sort_run, check = sort_check;
        else
            prep = y_prep, run = K[1] == 'r' ? transform_run : scan_run,
            check = K[1] == 'r' ? transform_check : scan_check;
    } else {
        kit_wrong("kernel: fib fibjoin fibgroup chain wave pipe transform scan sort");
    }
    double ms[64];
    for (int r = 0; r <= R; r++) {
        prep();
        double t0 = kit_now();
        run();
        double t1 = kit_now();
        check();
        if (r)
            ms[r - 1] = t1 - t0;
    }
    printf("w_kit %s T=%d L=%u %.3f\n", K, T, L, kit_median(ms, R));
    if (g)
        weft_graph_destroy(g);
    if (pl)
        weft_pipeline_destroy(pl);
    weft_sched_destroy(s);
    return 0;
}
