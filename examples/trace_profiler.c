/* trace_profiler: a small profiler on weft's observer hooks.
 *
 * weft_config.observer takes hooks that weft calls on the thread
 * concerned as each task begins and ends, as a thread switches fibers and
 * as it parks. This program counts, per task name, how many tasks ran and
 * for how long, and per thread how long it was busy and parked, then
 * prints both tables. It runs a small mixed workload first: a named graph,
 * a few named spawns (one of them sleeps, so its fiber is switched out
 * in the middle), an unnamed one, and a parallel_for.
 *
 *   trace_profiler [workers]      default: one per CPU
 *
 * Nesting. begin and end nest per fiber, not per thread: a task that
 * blocks lets other tasks begin and end on its thread before it goes on
 * and ends there. So each thread keeps a stack of open tasks, each tagged
 * with the fiber it began on (the one fiber_enter last named), and an end
 * closes the innermost open task of the current fiber. A task's time is
 * measured two ways: wall (begin to end) and running (wall less the time
 * its fiber was switched out). A task that runs others inline on its own
 * fiber (a parallel loop's chunks, say) counts their time in its own.
 *
 * Synchronization: none. Each hook runs on the thread it names and
 * touches only that thread's slot of `threads`, so a slot has a single
 * writer; main reads the slots after weft_sched_destroy, which joins the
 * workers (every write happens-before the join's return) and unbinds the
 * main thread, which wrote its own. Nothing is allocated in a hook.
 *
 * Names. A name is copied (a graph task's is valid during the hook only),
 * cut to 47 bytes. A NULL name (an unnamed spawn or graph task) is shown as
 * the function's symbol when dladdr finds one that starts exactly at fn
 * (exported functions: the program links with -rdynamic), else as
 * "(unnamed) 0x...".
 */
#define _GNU_SOURCE   /* dladdr */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

enum { MAX_THREADS = 256, MAX_NAMES = 64, MAX_DEPTH = 64 };

typedef struct stat_row {
    char name[48];           /* a copy (a graph task's name is valid during
                                the hook only); "": keyed by fn instead */
    weft_fn fn;
    uint64_t count, wall_ns, run_ns;
} stat_row;

typedef struct frame {
    const void *fiber;       /* the fiber it began on */
    stat_row *row;
    uint64_t begin, away, left_at;
} frame;

typedef struct thread_prof {
    bool seen;
    const void *fiber;       /* current fiber; NULL until the first enter */
    frame stack[MAX_DEPTH];
    int depth;
    stat_row rows[MAX_NAMES];
    int nrows;
    uint64_t busy_ns, parks, parked_ns, park_at, lost;
} thread_prof;

static thread_prof threads[MAX_THREADS];
static atomic_uint_fast64_t off_table;   /* hooks from threads past MAX_THREADS */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This thread's slot, or NULL (counted) for an id out of the table. */
static thread_prof *slot(int thread)
{
    if (thread < 0 || thread >= MAX_THREADS) {
        atomic_fetch_add_explicit(&off_table, 1, memory_order_relaxed);   /* a count only */
        return NULL;
    }
    threads[thread].seen = true;
    return &threads[thread];
}

/* Rows with the same name, or both unnamed with the same fn. */
static bool same_row(const stat_row *a, const stat_row *b)
{
    return a->name[0] ? strcmp(a->name, b->name) == 0 : !b->name[0] && a->fn == b->fn;
}

static stat_row *row_of(thread_prof *p, const char *name, weft_fn fn)
{
    stat_row key = { .fn = fn };
    if (name && name[0]) {      /* copied: a graph task's name lasts the call only */
        size_t len = strnlen(name, sizeof key.name - 1);
        memcpy(key.name, name, len);
        key.fn = NULL;
    }
    for (int i = 0; i < p->nrows; i++)
        if (same_row(&p->rows[i], &key))
            return &p->rows[i];
    if (p->nrows == MAX_NAMES)
        return NULL;
    p->rows[p->nrows] = key;
    return &p->rows[p->nrows++];
}

/* ---- the hooks: each runs on `thread` itself ---------------------------- */

static void on_task_begin(int thread, const char *name, weft_fn fn, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (!p)
        return;
    if (p->depth == MAX_DEPTH) {
        p->lost++;
        return;
    }
    p->stack[p->depth++] = (frame){ .fiber = p->fiber, .row = row_of(p, name, fn), .begin = now_ns() };
}

static void on_task_end(int thread, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (!p)
        return;
    int i = p->depth;
    while (i > 0 && p->stack[i - 1].fiber != p->fiber)
        i--;
    if (i == 0) {               /* its begin was not recorded */
        p->lost++;
        return;
    }
    frame f = p->stack[i - 1];
    memmove(&p->stack[i - 1], &p->stack[i], (size_t)(p->depth - i) * sizeof f);
    p->depth--;
    uint64_t wall = now_ns() - f.begin;
    if (f.row) {
        f.row->count++;
        f.row->wall_ns += wall;
        f.row->run_ns += wall - f.away;
    } else {
        p->lost++;
    }
    bool outermost = true;                /* on its fiber: else its time is in its parent's */
    for (int j = 0; j < i - 1; j++)
        outermost &= p->stack[j].fiber != f.fiber;
    if (outermost)
        p->busy_ns += wall - f.away;
}

static void on_fiber_leave(int thread, const void *fiber, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (!p)
        return;
    uint64_t t = now_ns();
    for (int i = 0; i < p->depth; i++) {
        if (!p->stack[i].fiber)       /* began before the first switch: on this fiber */
            p->stack[i].fiber = fiber;
        if (p->stack[i].fiber == fiber)
            p->stack[i].left_at = t;
    }
}

static void on_fiber_enter(int thread, const void *fiber, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (!p)
        return;
    uint64_t t = now_ns();
    for (int i = 0; i < p->depth; i++)
        if (p->stack[i].fiber == fiber && p->stack[i].left_at) {
            p->stack[i].away += t - p->stack[i].left_at;
            p->stack[i].left_at = 0;
        }
    p->fiber = fiber;
}

static void on_park(int thread, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (p) {
        p->parks++;
        p->park_at = now_ns();
    }
}

static void on_unpark(int thread, void *ctx)
{
    (void)ctx;
    thread_prof *p = slot(thread);
    if (p && p->park_at) {
        p->parked_ns += now_ns() - p->park_at;
        p->park_at = 0;
    }
}

/* ---- the report ------------------------------------------------------- */

/* r's name, or its function's as dladdr finds it (in buf). */
static const char *label(const stat_row *r, char *buf, size_t size)
{
    Dl_info info;
    if (r->name[0])
        return r->name;
    if (dladdr((void *)(uintptr_t)r->fn, &info) && info.dli_sname &&
        info.dli_saddr == (void *)(uintptr_t)r->fn)
        snprintf(buf, size, "%.40s()", info.dli_sname);
    else
        snprintf(buf, size, "(unnamed) %p", (void *)(uintptr_t)r->fn);
    return buf;
}

static int by_wall(const void *a, const void *b)
{
    const stat_row *x = a, *y = b;
    return (x->wall_ns < y->wall_ns) - (x->wall_ns > y->wall_ns);
}

static stat_row all[MAX_THREADS * MAX_NAMES];   /* the threads' rows merged */
static size_t nall;

static const stat_row *find_row(const char *name)
{
    for (size_t i = 0; i < nall; i++)
        if (strcmp(all[i].name, name) == 0)
            return &all[i];
    return NULL;
}

/* Merges the threads' rows by name (or fn) and prints them, most time
 * first, then a line per thread. Callable from: main, after destroy. */
static void report(void)
{
    size_t n = 0;
    for (int t = 0; t < MAX_THREADS; t++)
        for (int i = 0; i < threads[t].nrows; i++) {
            stat_row *r = &threads[t].rows[i], *m = NULL;
            for (size_t j = 0; j < n && !m; j++)
                if (same_row(&all[j], r))
                    m = &all[j];
            if (!m)
                m = &all[n++], *m = *r;
            else
                m->count += r->count, m->wall_ns += r->wall_ns, m->run_ns += r->run_ns;
        }
    qsort(all, n, sizeof *all, by_wall);
    nall = n;
    printf("  %-28s %8s %11s %11s %11s\n", "task", "count", "wall ms", "running ms", "mean us");
    for (size_t i = 0; i < n; i++) {
        char buf[64];
        printf("  %-28s %8llu %11.3f %11.3f %11.1f\n", label(&all[i], buf, sizeof buf), (unsigned long long)all[i].count,
               all[i].wall_ns * 1e-6, all[i].run_ns * 1e-6,
               all[i].count ? all[i].run_ns * 1e-3 / (double)all[i].count : 0.0);
    }
    printf("\n  %-28s %11s %8s %11s\n", "thread", "busy ms", "parks", "parked ms");
    uint64_t lost = 0;
    for (int t = 0; t < MAX_THREADS; t++) {
        if (!threads[t].seen)
            continue;
        char name[32];
        snprintf(name, sizeof name, "thread %d", t);
        printf("  %-28s %11.3f %8llu %11.3f\n", name, threads[t].busy_ns * 1e-6,
               (unsigned long long)threads[t].parks, threads[t].parked_ns * 1e-6);
        lost += threads[t].lost;
    }
    if (lost || atomic_load(&off_table))
        printf("  (not counted: %llu task ends, %llu hooks from threads past %d)\n",
               (unsigned long long)lost, (unsigned long long)atomic_load(&off_table), MAX_THREADS);
}

/* ---- the workload ------------------------------------------------------- */

static double data[1 << 20];

static void spin_us(unsigned us)   /* stands for real work */
{
    uint64_t end = now_ns() + us * 1000ull;
    while (now_ns() < end)
        ;
}

static void load(void *arg)      { (void)arg, spin_us(400); }
static void parse(void *arg)     { (void)arg, spin_us(300); }
static void transform(void *arg) { (void)arg, spin_us(250); }
static void save(void *arg)      { (void)arg, spin_us(200); }

static void fill(size_t b, size_t e, void *arg)
{
    (void)arg;
    for (size_t i = b; i < e; i++)
        data[i] = (double)i * 0.5;
}

static void compress(void *arg) { (void)arg, spin_us(150); }

static void upload(void *arg)    /* blocks in the middle: its fiber is switched out */
{
    (void)arg;
    spin_us(100);
    weft_sleep(2 * 1000 * 1000);
    spin_us(100);
}

/* Not static and exported (-rdynamic), so dladdr names it. */
void unnamed_job(void *arg);
void unnamed_job(void *arg)
{
    (void)arg, spin_us(80);
}

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "trace_profiler: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    static const weft_observer hooks = {
        .task_begin = on_task_begin, .task_end = on_task_end,
        .fiber_enter = on_fiber_enter, .fiber_leave = on_fiber_leave,
        .park = on_park, .unpark = on_unpark,
    };
    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 1)
        cfg.workers = atoi(argv[1]) > 0 ? (unsigned)atoi(argv[1]) : WEFT_WORKERS_NONE;
    cfg.observer = &hooks;
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "scheduler");
    check(weft_sched_bind(s), "bind");   /* the main thread helps, and is profiled too */

    /* load -> parse -> 4 x transform -> save, run 3 times. */
    weft_graph *g;
    weft_task *l, *p, *sv, *tr;
    check(weft_graph_create(&g), "graph");
    check(weft_graph_add_task(g, load, NULL, &l), "graph");
    check(weft_graph_add_task(g, parse, NULL, &p), "graph");
    check(weft_graph_add_task(g, save, NULL, &sv), "graph");
    weft_task_set_name(l, "load");
    weft_task_set_name(p, "parse");
    weft_task_set_name(sv, "save");
    check(weft_task_precede(l, p), "graph");
    for (int i = 0; i < 4; i++) {
        check(weft_graph_add_task(g, transform, NULL, &tr), "graph");
        weft_task_set_name(tr, "transform");
        check(weft_task_precede(p, tr), "graph");
        check(weft_task_precede(tr, sv), "graph");
    }

    const weft_spawn_opts zip = { .name = "compress" }, up = { .name = "upload" };
    for (int run = 0; run < 3; run++) {
        check(weft_spawn_ex(s, upload, NULL, &up), "spawn");
        for (int i = 0; i < 4; i++)
            check(weft_spawn_ex(s, compress, NULL, &zip), "spawn");
        check(weft_spawn(s, unnamed_job, NULL), "spawn");
        check(weft_graph_run(s, g), "run");
        check(weft_parallel_for(s, 0, sizeof data / sizeof data[0], 0, fill, NULL), "parallel_for");
        check(weft_graph_wait(g), "wait");
        check(weft_sched_wait_idle(s), "wait_idle");
    }
    check(weft_graph_destroy(g), "graph");
    unsigned workers = weft_sched_workers(s);
    check(weft_sched_destroy(s), "destroy");   /* joins the workers: their slots are final */

    printf("trace_profiler: 3 runs of a graph, 18 spawns and 3 parallel_for on %u workers"
           " and the main thread\n", workers);
    report();

    /* Every named task counted once per run; upload's running time
     * leaves out its three 2 ms sleeps (its fiber was switched out). */
    static const struct { const char *name; uint64_t count; } want[] = {
        { "load", 3 }, { "parse", 3 }, { "transform", 12 }, { "save", 3 },
        { "compress", 12 }, { "upload", 3 },
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const stat_row *r = find_row(want[i].name);
        if (!r || r->count != want[i].count) {
            printf("  WRONG: %s counted %llu times, want %llu\n", want[i].name,
                   r ? (unsigned long long)r->count : 0ull, (unsigned long long)want[i].count);
            ok = false;
        }
    }
    const stat_row *up_row = find_row("upload");
    if (up_row && up_row->run_ns + 5 * 1000 * 1000 > up_row->wall_ns) {
        printf("  WRONG: upload ran %.3f ms of %.3f ms: its sleeps are not left out\n",
               up_row->run_ns * 1e-6, up_row->wall_ns * 1e-6);
        ok = false;
    }
    return ok ? 0 : 1;
}
