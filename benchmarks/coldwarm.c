/* coldwarm: the first run of a workload in a fresh process beside its warm
 * runs, and the memory weft takes for it. benchmarks/run.py runs it in a
 * new process per measurement and writes coldwarm.json.
 *
 *   coldwarm fib N THREADS WARM           fib(N), one spawn per call (bench_core's fibN_tT/weft)
 *   coldwarm spawn N THREADS WARM         a task spawns N empty tasks; the main
 *                                         thread waits with weft_sched_wait_idle
 *                                         (bench_core's spawn_tT/weft_from_worker)
 *   coldwarm chain N THREADS WARM         a graph, a linear chain of N tasks
 *                                         (bench_graph's chain_N_tT/weft)
 *   coldwarm independent N THREADS WARM   a graph of N tasks without edges
 *                                         (bench_graph's parallel_N_tT/weft)
 *
 * In order, each timed by CLOCK_MONOTONIC on the main thread:
 *   create   weft_sched_create with THREADS workers;
 *   build    (graphs) weft_graph_create, the adds and the edges;
 *   cold     the first run: the workers wake for the first time, task
 *            slabs and fibers are made, and a graph is checked (what
 *            bench_graph leaves out of its timed runs);
 *   warm     WARM more runs in the same process, as the benchmarks time
 *            them (their median is the figure to compare with theirs).
 * The tasks do what the benchmarks' do: fib adds, the empty tasks do
 * nothing, graph tasks add one to their own slot.
 *
 * Memory, three ways:
 *   heap     every allocation weft makes goes through weft_set_allocator's
 *            hook (the scheduler's config leaves its own NULL); this one
 *            counts live bytes and keeps their peak, and counts
 *            allocations made during the warm runs (weft says running
 *            allocates nothing in steady state);
 *   fibers   fiber stacks are mmap'd, not allocated through the hook: the
 *            workers' fibers_created times the stack size plus its guard
 *            page is address space reserved, not memory used;
 *   RSS      the peak resident set (VmHWM) minus the resident set before
 *            weft was created, with the peak reset (/proc/self/clear_refs)
 *            after this program's own arrays were made and touched. It is
 *            what the kernel charged: the heap above as pages, the stack
 *            pages fibers and threads touched, malloc's own overhead.
 *
 * Prints one line of JSON.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft.h>

#define MAX_WARM 1000

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "coldwarm: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

static void wrong(const char *what)
{
    fprintf(stderr, "coldwarm: WRONG: %s\n", what);
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the counting allocator ------------------------------------------------ */
/* Callable from: any thread, workers included (weft's allocator contract). */

static atomic_size_t g_live, g_peak;
static atomic_ulong g_allocs;

static void *count_alloc(size_t size, void *ctx)
{
    (void)ctx;
    void *p = NULL;
    /* weft's default: 64-byte alignment from 64 bytes up. */
    if (size >= 64) {
        if (posix_memalign(&p, 64, size) != 0)
            return NULL;
    } else if (!(p = malloc(size ? size : 1))) {
        return NULL;
    }
    /* relaxed, all three: counts only, read by main once the workers are
     * idle or joined (the runs' own waits order them). */
    size_t live = atomic_fetch_add_explicit(&g_live, size, memory_order_relaxed) + size;
    size_t peak = atomic_load_explicit(&g_peak, memory_order_relaxed);
    while (live > peak &&
           !atomic_compare_exchange_weak_explicit(&g_peak, &peak, live, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return p;
}

static void count_free(void *p, size_t size, void *ctx)
{
    (void)ctx;
    atomic_fetch_sub_explicit(&g_live, size, memory_order_relaxed);   /* relaxed: as in count_alloc */
    free(p);
}

/* ---- resident set ------------------------------------------------------------ */

/* A "Vm...:" field of /proc/self/status in KiB; -1 if it cannot be read. */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Sets the peak resident set to the current one (Linux 4.0 and later). */
static bool reset_hwm(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* ---- workloads -------------------------------------------------------------------- */

static weft_sched *g_s;

/* A one-shot completion the main thread sleeps on, as in bench_core. */
static pthread_mutex_t g_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_c = PTHREAD_COND_INITIALIZER;
static bool g_done;

static void done_signal(void)
{
    pthread_mutex_lock(&g_m);
    g_done = true;
    pthread_cond_signal(&g_c);
    pthread_mutex_unlock(&g_m);
}

static void done_wait(void)
{
    pthread_mutex_lock(&g_m);
    while (!g_done)
        pthread_cond_wait(&g_c, &g_m);
    g_done = false;
    pthread_mutex_unlock(&g_m);
}

#include "bench_fib.h"

static fibs g_fib;

static void fib_root(void *a)
{
    (void)a;
    fib(&g_fib);
    done_signal();
}

static void empty_task(void *a) { (void)a; }

static long g_fan_n;

static void fan_out(void *a)
{
    (void)a;
    for (long i = 0; i < g_fan_n; i++)
        check(weft_spawn(g_s, empty_task, NULL), "spawn");
}

static void slot_task(void *a)
{
    *(int64_t *)a += 1;
}

typedef enum kind { FIB, SPAWN, CHAIN, INDEPENDENT } kind;

static int64_t *g_slots;
static weft_graph *g_g;
static long g_n;
static kind g_kind;
static long g_want;

/* One run of the workload, timed. */
static uint64_t run_once(void)
{
    uint64_t t0 = now_ns();
    switch (g_kind) {
    case FIB:
        g_fib = (fibs){ (int)g_n, 0, false };
        check(weft_spawn(g_s, fib_root, NULL), "spawn");
        done_wait();
        break;
    case SPAWN:
        check(weft_spawn(g_s, fan_out, NULL), "spawn");
        check(weft_sched_wait_idle(g_s), "wait_idle");
        break;
    case CHAIN:
    case INDEPENDENT:
        check(weft_graph_run(g_s, g_g), "graph_run");
        check(weft_graph_wait(g_g), "graph_wait");
        break;
    }
    uint64_t t = now_ns() - t0;
    if (g_kind == FIB && g_fib.r != g_want)
        wrong("fib result");
    return t;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 5)
        goto usage;
    const char *name = argv[1];
    g_n = atol(argv[2]);
    long threads = atol(argv[3]), warm = atol(argv[4]);
    if (strcmp(name, "fib") == 0)
        g_kind = FIB;
    else if (strcmp(name, "spawn") == 0)
        g_kind = SPAWN;
    else if (strcmp(name, "chain") == 0)
        g_kind = CHAIN;
    else if (strcmp(name, "independent") == 0)
        g_kind = INDEPENDENT;
    else
        goto usage;
    if (g_n < 1 || threads < 1 || threads > 1024 || warm < 1 || warm > MAX_WARM ||
        (g_kind == FIB && g_n > 40))
        goto usage;

    weft_set_allocator(&(weft_allocator){ count_alloc, count_free, NULL });

    long tasks = g_n;
    if (g_kind == FIB) {
        g_want = fib_seq((int)g_n);
        tasks = fib_spawns((int)g_n);
    }
    g_fan_n = g_n;
    if (g_kind == CHAIN || g_kind == INDEPENDENT) {
        /* This program's own arrays, made and touched before the baseline. */
        g_slots = calloc((size_t)g_n, sizeof *g_slots);
        if (!g_slots)
            wrong("out of memory");
        memset(g_slots, 0, sizeof *g_slots * (size_t)g_n);
    }
    bool hwm_reset = reset_hwm();
    long rss_base = status_kib("VmRSS");

    uint64_t t0 = now_ns();
    weft_config c;
    weft_config_init(&c);
    c.workers = threads > 0 ? (unsigned)threads : WEFT_WORKERS_NONE;
    check(weft_sched_create(&g_s, &c), "sched_create");
    uint64_t create_ns = now_ns() - t0;

    uint64_t build_ns = 0;
    long edges = 0;
    if (g_kind == CHAIN || g_kind == INDEPENDENT) {
        t0 = now_ns();
        check(weft_graph_create(&g_g), "graph_create");
        weft_task *prev = NULL;
        for (long v = 0; v < g_n; v++) {
            weft_task *t = NULL;
            check(weft_graph_add_task(g_g, slot_task, &g_slots[v], &t), "graph_add");
            if (g_kind == CHAIN && prev) {
                check(weft_task_precede(prev, t), "precede");
                edges++;
            }
            prev = t;
        }
        build_ns = now_ns() - t0;
    }
    size_t heap_before_run = atomic_load(&g_live);

    uint64_t cold_ns = run_once();
    size_t heap_peak_cold = atomic_load(&g_peak);
    unsigned long allocs_before_warm = atomic_load(&g_allocs);

    static uint64_t warm_ns[MAX_WARM];
    for (long i = 0; i < warm; i++)
        warm_ns[i] = run_once();
    unsigned long warm_allocs = atomic_load(&g_allocs) - allocs_before_warm;
    size_t heap_peak = atomic_load(&g_peak);
    long rss_hwm = status_kib("VmHWM");

    if (g_kind == CHAIN || g_kind == INDEPENDENT) {
        for (long v = 0; v < g_n; v++)
            if (g_slots[v] != 1 + warm)
                wrong("a graph task did not run once per run");
    }

    uint64_t fibers = 0;
    for (unsigned w = 0; w < weft_sched_workers(g_s); w++) {
        weft_worker_stats st;
        check(weft_sched_stats(g_s, w, &st), "stats");
        fibers += st.fibers_created;
    }
    if (g_g)
        check(weft_graph_destroy(g_g), "graph_destroy");
    check(weft_sched_destroy(g_s), "sched_destroy");
    size_t heap_after_destroy = atomic_load(&g_live);

    uint64_t sorted[MAX_WARM];
    memcpy(sorted, warm_ns, sizeof *warm_ns * (size_t)warm);
    qsort(sorted, (size_t)warm, sizeof *sorted, cmp_u64);

    long page = sysconf(_SC_PAGESIZE);
    printf("{\"case\": \"%s\", \"size\": %ld, \"threads\": %ld, \"tasks_per_run\": %ld, "
           "\"edges\": %ld, \"create_ns\": %llu, \"build_ns\": %llu, \"cold_ns\": %llu, "
           "\"warm_median_ns\": %llu, \"warm_ns\": [",
           name, g_n, threads, tasks, edges, (unsigned long long)create_ns,
           (unsigned long long)build_ns, (unsigned long long)cold_ns,
           (unsigned long long)sorted[warm / 2]);
    for (long i = 0; i < warm; i++)
        printf("%s%llu", i ? ", " : "", (unsigned long long)warm_ns[i]);
    printf("], \"heap_before_first_run\": %zu, \"heap_peak_after_cold\": %zu, \"heap_peak\": %zu, "
           "\"heap_allocs\": %lu, \"heap_allocs_during_warm\": %lu, \"heap_live_after_destroy\": %zu, "
           "\"fibers_created\": %llu, \"fiber_reserved_bytes_each\": %zu, "
           "\"rss_base_kib\": %ld, \"rss_hwm_kib\": %ld, \"hwm_reset\": %s}\n",
           heap_before_run, heap_peak_cold, heap_peak, atomic_load(&g_allocs), warm_allocs,
           heap_after_destroy, (unsigned long long)fibers,
           (size_t)WEFT_FIBER_STACK_DEFAULT + (size_t)page, rss_base, rss_hwm,
           hwm_reset ? "true" : "false");
    return 0;

usage:
    fprintf(stderr, "usage: coldwarm fib|spawn|chain|independent N THREADS WARM\n"
                    "  fib: N <= 40; WARM 1..%d\n", MAX_WARM);
    return 2;
}
