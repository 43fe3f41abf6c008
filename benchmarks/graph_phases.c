/* graph_phases: what a graph costs its user, phase by phase, and the
 * memory it holds per task.
 *
 *   graph_phases SHAPE N THREADS REPS
 *       SHAPE: chain (N tasks, each after the one before), tree (a binary
 *       tree of N tasks, numbered breadth first: i after (i - 1) / 2),
 *       wave (a sqrt(N) x sqrt(N) grid: (i,j) after (i-1,j) and (i,j-1)),
 *       independent (N tasks, no edges), backchain (a chain built
 *       backwards: task i runs after task i + 1, the edge added with
 *       task i + 1, so every edge goes against build order and the first
 *       run's check orders the whole graph). Tasks are added in that
 *       order, each task's edges right after it, as a user's loop would.
 *       Every repetition times, on the main thread, with CLOCK_MONOTONIC:
 *         build    weft_graph_create, the adds and the edges;
 *         first    the first run and its wait (the check included);
 *         warm     a second run and its wait;
 *         destroy  weft_graph_destroy.
 *       Prints one line of JSON: the medians over REPS, in ns per task,
 *       and first / warm, the cold-run ratio. Each run is checked (every
 *       task ran once, in edge order where the shape says so): "WRONG"
 *       and exit 1 otherwise.
 *
 *   graph_phases memory N
 *       Builds a chain of N tasks and reports the peak resident set (VmHWM)
 *       per task two ways: the whole process's, and the growth from just
 *       before the graph was created (the graph's own memory: nodes, the
 *       block table, the roots). A fresh process per measurement: run it
 *       on its own.
 *
 * Public API only.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define MAX_REPS 101

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "graph_phases: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

/* Each task records the ticket at which it ran; the check compares edges. */
static uint32_t *ran_at;
static atomic_uint ticket;

static void task(void *arg)
{
    uint32_t i = (uint32_t)(uintptr_t)arg;
    ran_at[i] = atomic_fetch_add_explicit(&ticket, 1, memory_order_relaxed) + 1;
}

enum shape { CHAIN, TREE, WAVE, INDEPENDENT, BACKCHAIN };

static uint32_t side_of(uint32_t n)
{
    return (uint32_t)sqrt((double)n);
}

/* The predecessors of task i, into p (at most two); returns how many. */
static unsigned preds(enum shape sh, uint32_t n, uint32_t i, uint32_t *p)
{
    (void)n;
    switch (sh) {
    case CHAIN:
        p[0] = i - 1;
        return i > 0;
    case TREE:
        p[0] = (i - 1) / 2;
        return i > 0;
    case WAVE: {
        uint32_t side = side_of(n), r = i / side, c = i % side, k = 0;
        if (r)
            p[k++] = i - side;
        if (c)
            p[k++] = i - 1;
        return k;
    }
    case BACKCHAIN:
        p[0] = i + 1;
        return i + 1 < n;
    default:
        return 0;
    }
}

static weft_graph *build(enum shape sh, uint32_t n, weft_task **t)
{
    weft_graph *g;
    check(weft_graph_create(&g), "create");
    for (uint32_t i = 0; i < n; i++) {
        t[i] = weft_graph_add(g, task, (void *)(uintptr_t)i);
        if (!t[i])
            check(WEFT_ENOMEM, "add");
        if (sh == BACKCHAIN) {
            if (i > 0)
                check(weft_task_precede(t[i], t[i - 1]), "precede");
            continue;
        }
        uint32_t p[2];
        unsigned k = preds(sh, n, i, p);
        for (unsigned j = 0; j < k; j++)
            check(weft_task_precede(t[p[j]], t[i]), "precede");
    }
    return g;
}

static void run_checked(weft_sched *s, weft_graph *g, uint32_t n)
{
    memset(ran_at, 0, sizeof *ran_at * n);
    atomic_store(&ticket, 0);
    check(weft_graph_run(s, g), "run");
    check(weft_graph_wait(g), "wait");
}

static void verify(enum shape sh, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t p[2];
        unsigned k = preds(sh, n, i, p);
        bool bad = ran_at[i] == 0;
        for (unsigned j = 0; j < k; j++)
            bad |= ran_at[p[j]] >= ran_at[i];
        if (bad) {
            printf("WRONG: task %u ran out of order or not at all\n", i);
            exit(1);
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* VmHWM and VmRSS of this process, in KiB. */
static void vm(long *hwm, long *rss)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    *hwm = *rss = -1;
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "VmHWM: %ld", hwm);
        sscanf(line, "VmRSS: %ld", rss);
    }
    if (f)
        fclose(f);
}

static int memory(uint32_t n)
{
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = 1;
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "sched_create");
    ran_at = calloc(n, sizeof *ran_at);
    if (!ran_at)
        return 1;
    /* A small graph first, so the scheduler's own first-run memory
     * (fibers, task slabs) is in the baseline, then reset the peak. */
    weft_task *small[64];
    weft_graph *g = build(CHAIN, 64, small);
    run_checked(s, g, 64);
    check(weft_graph_destroy(g), "destroy");
    memset(ran_at, 0, sizeof *ran_at * n);   /* touched: not charged to the graph */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr) {
        fputs("5", cr);   /* resets VmHWM to VmRSS */
        fclose(cr);
    }
    long hwm0, rss0;
    vm(&hwm0, &rss0);

    check(weft_graph_create(&g), "create");
    weft_task *prev = NULL;
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft_graph_add(g, task, (void *)(uintptr_t)i);
        if (!t || (prev && weft_task_precede(prev, t) != WEFT_OK))
            check(WEFT_ENOMEM, "build");
        prev = t;
    }
    check(weft_graph_run(s, g), "run");
    check(weft_graph_wait(g), "wait");
    verify(CHAIN, n);
    long hwm, rss;
    vm(&hwm, &rss);
    check(weft_graph_destroy(g), "destroy");
    weft_sched_destroy(s);
    printf("{\"mode\":\"memory\",\"tasks\":%u,\"process_peak_bytes_per_task\":%.2f,"
           "\"graph_peak_bytes_per_task\":%.2f,\"baseline_rss_kib\":%ld}\n",
           n, hwm * 1024.0 / n, (hwm - rss0) * 1024.0 / n, rss0);
    free(ran_at);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "memory") == 0)
        return memory((uint32_t)strtoul(argv[2], NULL, 10));
    if (argc < 5) {
        fprintf(stderr, "usage: graph_phases chain|tree|wave|independent|backchain N THREADS REPS\n"
                        "       graph_phases memory N\n");
        return 2;
    }
    const char *names[] = { "chain", "tree", "wave", "independent", "backchain" };
    enum shape sh = CHAIN;
    while (sh <= BACKCHAIN && strcmp(argv[1], names[sh]) != 0)
        sh++;
    if (sh > BACKCHAIN) {
        fprintf(stderr, "graph_phases: unknown shape %s\n", argv[1]);
        return 2;
    }
    uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
    if (sh == WAVE)
        n = side_of(n) * side_of(n);
    unsigned threads = (unsigned)atoi(argv[3]);
    int reps = atoi(argv[4]);
    if (n == 0 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "graph_phases: N >= 1, 1 <= REPS <= %d\n", MAX_REPS);
        return 2;
    }
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = threads ? threads : WEFT_WORKERS_NONE;
    weft_sched *s;
    check(weft_sched_create(&s, &cfg), "sched_create");
    ran_at = calloc(n, sizeof *ran_at);
    weft_task **t = malloc(sizeof *t * n);
    if (!ran_at || !t)
        return 1;
    double b[MAX_REPS], f[MAX_REPS], w[MAX_REPS], d[MAX_REPS], ratio[MAX_REPS];
    for (int r = -1; r < reps; r++) {   /* r = -1: untimed, warms the workers */
        uint64_t t0 = now_ns();
        weft_graph *g = build(sh, n, t);
        uint64_t t1 = now_ns();
        run_checked(s, g, n);
        uint64_t t2 = now_ns();
        verify(sh, n);
        uint64_t t3 = now_ns();
        run_checked(s, g, n);
        uint64_t t4 = now_ns();
        verify(sh, n);
        uint64_t t5 = now_ns();
        check(weft_graph_destroy(g), "destroy");
        uint64_t t6 = now_ns();
        if (r < 0)
            continue;
        b[r] = (double)(t1 - t0) / n;
        f[r] = (double)(t2 - t1) / n;
        w[r] = (double)(t4 - t3) / n;
        d[r] = (double)(t6 - t5) / n;
        ratio[r] = f[r] / w[r];
    }
    double mb = median(b, reps), mf = median(f, reps), mw = median(w, reps), md = median(d, reps);
    printf("{\"shape\":\"%s\",\"tasks\":%u,\"threads\":%u,\"reps\":%d,\"build_ns\":%.2f,"
           "\"first_run_ns\":%.2f,\"warm_run_ns\":%.2f,\"destroy_ns\":%.2f,"
           "\"build_run_destroy_ns\":%.2f,\"first_over_warm\":%.2f}\n",
           names[sh], n, threads, reps, mb, mf, mw, md, mb + mf + md, median(ratio, reps));
    weft_sched_destroy(s);
    free(t);
    free(ran_at);
    return 0;
}
