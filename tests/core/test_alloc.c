/* Allocation failure: test 26 of docs/reliability.md. The N-th allocation
 * fails, for N = 1, 2, ... until a whole run makes fewer than N (so none
 * failed), while creating and using schedulers (with the allocator in
 * weft_config, and with the process-wide one), graphs and channels. Each
 * failing call must return WEFT_ENOMEM and change nothing: a failed create
 * leaves *out NULL, a failed build call leaves the graph as it was, and
 * the object stays usable. After each run nothing the allocator made is
 * outstanding (and LSan, in the asan preset, finds no leak). Also: a task
 * that blocks when no fiber stack can be mapped. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_util.h"
#include "graph.h"
#include "wtest.h"

/* More runs than this means the count never settles: a bug in itself. */
#define MAX_N 2000

/* Runs body(arg) with the n-th call of a failing, for n = 1, 2, ... until
 * a run fails none. After each run a must hold nothing. Returns the number
 * of runs in which a call failed. */
static long every_n(walloc *a, void (*body)(void *), void *arg, const char *what)
{
    long n = 1;
    for (;; n++) {
        WT_ASSERT(n <= MAX_N, "%s: still failing after %d runs", what, MAX_N);
        walloc_fail_at(a, n);
        body(arg);
        long failed = atomic_load(&a->failed);
        long calls = atomic_load(&a->calls);
        walloc_fail_at(a, 0);
        WT_ASSERT(atomic_load(&a->blocks) == 0 && atomic_load(&a->bytes) == 0,
                  "%s, allocation %ld failed: %ld blocks (%ld bytes) still out after the run",
                  what, n, atomic_load(&a->blocks), atomic_load(&a->bytes));
        if (!failed) {
            fprintf(stderr, "%s: failed each of allocations 1..%ld in turn; a full run makes %ld\n",
                    what, n - 1, calls);
            return n - 1;
        }
    }
}

/* ---- schedulers ---------------------------------------------------------------- */

static weft_sched *cur;
static atomic_long spawned, ran, refused;

static void child(void *arg)
{
    if ((uintptr_t)arg % 8 == 0)
        WT_ASSERT_EQ(weft_sleep(1000), WEFT_OK);   /* a fiber blocks: no allocation */
    atomic_fetch_add(&ran, 1);
}

/* Spawns 100 children from a worker: the worker's pool runs dry, so its
 * slabs come from the allocator, and a refused spawn must not run. */
static void parent(void *arg)
{
    for (uintptr_t i = 0; i < 100; i++) {
        int rc = weft_spawn(cur, child, (void *)i);
        if (rc == WEFT_OK) {
            atomic_fetch_add(&spawned, 1);
        } else {
            WT_ASSERT_EQ(rc, WEFT_ENOMEM);
            atomic_fetch_add(&refused, 1);
        }
    }
    atomic_fetch_add(&ran, 1);
}

/* Spawns n parents on s from the calling thread. */
static void spawn_parents(weft_sched *s, int n)
{
    for (int i = 0; i < n; i++) {
        int rc = weft_spawn(s, parent, NULL);
        if (rc == WEFT_OK) {
            atomic_fetch_add(&spawned, 1);
        } else {
            WT_ASSERT_EQ(rc, WEFT_ENOMEM);
            atomic_fetch_add(&refused, 1);
        }
    }
}

/* ---- the parallel helpers, on the scheduler under test ---- */

#define PN 100000
static atomic_ulong for_iters;

static void for_body(size_t b, size_t e, void *arg)
{
    atomic_fetch_add(&for_iters, e - b);
}

/* A result of a cache line: 1021 slots of it are ~64 KiB of scratch,
 * which weft_parallel_reduce allocates. */
static void sum_body(size_t b, size_t e, void *partial, void *arg)
{
    uint64_t *p = partial;
    for (size_t i = b; i < e; i++)
        p[i % 8] += i;
}

static void sum_combine(void *into, const void *from, void *arg)
{
    uint64_t *a = into;
    const uint64_t *b = from;
    for (int i = 0; i < 8; i++)
        a[i] += b[i];
}

/* A parallel_for and a parallel_reduce on s: ENOMEM runs nothing and
 * writes no result; the retry runs in full. */
static void loops(weft_sched *s)
{
    for (int tries = 0;; tries++) {
        atomic_store(&for_iters, 0);
        int rc = weft_parallel_for(s, 0, PN, 0, for_body, NULL);
        if (rc == WEFT_OK)
            break;
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT_EQ(atomic_load(&for_iters), 0);
        WT_ASSERT(tries == 0, "parallel_for failed twice in a row");
    }
    WT_ASSERT_EQ(atomic_load(&for_iters), PN);
    uint64_t identity[8] = { 0 }, result[8];
    for (int tries = 0;; tries++) {
        memset(result, 0xab, sizeof result);
        int rc = weft_parallel_reduce(s, 0, PN, 0, result, sizeof result, identity,
                                      sum_body, sum_combine, NULL);
        if (rc == WEFT_OK)
            break;
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT(result[0] == 0xababababababababull, "a failed reduce wrote its result");
        WT_ASSERT(tries == 0, "parallel_reduce failed twice in a row");
    }
    uint64_t total = 0;
    for (int i = 0; i < 8; i++)
        total += result[i];
    WT_ASSERT_EQ(total, (uint64_t)PN * (PN - 1) / 2);
}

struct sched_case {
    walloc *a;
    unsigned workers;
    bool in_config;       /* weft_config.allocator, else the process-wide one */
};

/* Create, bind, spawn (from the bound thread, from workers, from outside),
 * parallel loops (from the bound thread, from outside), wait, unbind,
 * destroy. */
static void sched_body(void *arg)
{
    const struct sched_case *k = arg;
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(k->workers);
    if (k->in_config)
        c.allocator = k->a->hooks;
    else
        weft_set_allocator(&k->a->hooks);
    atomic_store(&spawned, 0);
    atomic_store(&ran, 0);
    atomic_store(&refused, 0);

    weft_sched *s = (weft_sched *)&c;   /* not NULL: a failed create must clear it */
    int rc = weft_sched_create(&s, &c);
    if (rc != WEFT_OK) {
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT(s == NULL, "a failed create left *out %p", (void *)s);
        goto out;
    }
    cur = s;

    rc = weft_sched_bind(s);
    if (rc != WEFT_OK) {
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT(weft_sched_current() == NULL, "a failed bind left the thread bound");
        rc = weft_sched_bind(s);   /* one call fails, not the next */
    }
    WT_ASSERT_EQ(rc, WEFT_OK);
    WT_ASSERT(weft_sched_current() == s);
    spawn_parents(s, 10);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    loops(s);
    weft_sched_unbind();

    if (k->workers) {
        /* From outside: records come from the spares. */
        spawn_parents(s, 10);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        loops(s);
    }
    WT_ASSERT_EQ(atomic_load(&ran), atomic_load(&spawned));
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran), atomic_load(&spawned));
out:
    if (!k->in_config)
        weft_set_allocator(NULL);
}

static void sched_cases(bool in_config)
{
    static walloc fa = WALLOC_INIT("failing");
    walloc_hooks(&fa);
    unsigned counts[] = { 0, 1, 2 };
    for (int i = 0; i < 3; i++) {
        struct sched_case k = { &fa, counts[i], in_config };
        char what[96];
        snprintf(what, sizeof what, "scheduler, %u workers, %s allocator", counts[i],
                 in_config ? "config" : "process-wide");
        long runs = every_n(&fa, sched_body, &k, what);
        WT_ASSERT(runs >= 8, "%s: only %ld allocations", what, runs);
    }
}

WT_TEST(alloc, t26_alloc_failure_every_n_sched_config, .timeout = 300)
{
    sched_cases(true);
}

WT_TEST(alloc, t26_alloc_failure_every_n_sched_process, .timeout = 300)
{
    sched_cases(false);
}

WT_TEST(alloc, t26_config_allocator_needs_both_hooks)
{
    static walloc fa = WALLOC_INIT("unused");
    walloc_hooks(&fa);
    weft_config c;
    weft_config_init(&c);
    WT_ASSERT(c.allocator.alloc == NULL && c.allocator.free == NULL && c.allocator.ctx == NULL);
    weft_sched *s = (weft_sched *)&c;
    c.allocator.alloc = fa.hooks.alloc;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    c.allocator.alloc = NULL;
    c.allocator.free = fa.hooks.free;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT_EQ(atomic_load(&fa.calls), 0);
}

/* ---- graphs ------------------------------------------------------------------------ */

/* Past 16 node blocks, so the block array grows too. */
#define GN (17 * WEFT__BLOCK_NODES + 5)
#define MAX_EDGES (2 * GN)

static struct {
    weft_task *t[GN];
    uint32_t eu[MAX_EDGES], ev[MAX_EDGES];
    unsigned nedges;
    atomic_uint ticket;
    uint32_t start[GN], end[GN];
    atomic_uchar runs[GN];
} G;

static void node_fn(void *arg)
{
    uint32_t i = (uint32_t)(uintptr_t)arg;
    G.start[i] = atomic_fetch_add(&G.ticket, 1);
    atomic_fetch_add(&G.runs[i], 1);
    G.end[i] = atomic_fetch_add(&G.ticket, 1);
}

static void add_node(weft_graph *g, uint32_t i)
{
    for (int tries = 0; tries < 2; tries++) {
        size_t before = weft_graph_size(g);
        weft_task *t = (weft_task *)g;   /* not NULL: a failure must clear it */
        int rc = weft_graph_add_task(g, node_fn, (void *)(uintptr_t)i, &t);
        if (rc == WEFT_OK) {
            WT_ASSERT_EQ(t->index, i);
            G.t[i] = t;
            return;
        }
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT(t == NULL, "a failed add left *out %p", (void *)t);
        WT_ASSERT_EQ(weft_graph_size(g), before);
    }
    WT_FAIL("add_task failed twice in a row");
}

/* u -> v; a failed call must leave both nodes exactly as they were. */
static void add_edge(uint32_t u, uint32_t v)
{
    weft_task *tu = G.t[u], *tv = G.t[v];
    for (int tries = 0; tries < 2; tries++) {
        uint32_t nsucc = tu->nsucc, npred = tv->npred;
        uint32_t join = atomic_load(&tv->join);
        uint32_t *succ = weft__succ(tu);
        uint32_t last = nsucc ? succ[nsucc - 1] : UINT32_MAX;
        int rc = weft_task_precede(tu, tv);
        if (rc == WEFT_OK) {
            G.eu[G.nedges] = u;
            G.ev[G.nedges] = v;
            G.nedges++;
            return;
        }
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT_EQ(tu->nsucc, nsucc);
        WT_ASSERT_EQ(tv->npred, npred);
        WT_ASSERT_EQ(atomic_load(&tv->join), join);
        WT_ASSERT(weft__succ(tu) == succ, "a failed precede moved the successor list");
        WT_ASSERT(!nsucc || weft__succ(tu)[nsucc - 1] == last);
    }
    WT_FAIL("precede failed twice in a row");
}

static const char *name_of(weft_graph *g, uint32_t i)
{
    return g->names && i < g->names_cap ? g->names[i] : NULL;
}

static weft_sched *graph_sched;

/* Starts a run, retrying once after ENOMEM (which must have started
 * nothing), and waits for it. */
static void run_graph(weft_graph *g)
{
    int rc = weft_graph_run(graph_sched, g);
    if (rc == WEFT_ENOMEM) {
        WT_ASSERT_EQ(atomic_load(&G.ticket), 0);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* not running: the last result */
        rc = weft_graph_run(graph_sched, g);
    }
    WT_ASSERT_EQ(rc, WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
}

static void check_run(void)
{
    for (uint32_t i = 0; i < GN; i++)
        WT_ASSERT(atomic_load(&G.runs[i]) == 1, "task %u ran %u times", i,
                  (unsigned)atomic_load(&G.runs[i]));
    for (unsigned e = 0; e < G.nedges; e++)
        WT_ASSERT(G.end[G.eu[e]] < G.start[G.ev[e]], "edge %u -> %u: finished at %u, started at %u",
                  G.eu[e], G.ev[e], G.end[G.eu[e]], G.start[G.ev[e]]);
}

static void reset_runs(void)
{
    atomic_store(&G.ticket, 0);
    for (uint32_t i = 0; i < GN; i++)
        atomic_store(&G.runs[i], 0);
}

/* Build (nodes, a 4-ary tree of edges, a hub with ~GN/5 successors, a
 * duplicate edge, names), run twice, dump, destroy; then a small cycle. */
static void graph_body(void *arg)
{
    walloc *a = arg;
    weft_set_allocator(&a->hooks);
    weft_graph *g = (weft_graph *)a;
    int rc = weft_graph_create(&g);
    if (rc != WEFT_OK) {
        WT_ASSERT_EQ(rc, WEFT_ENOMEM);
        WT_ASSERT(g == NULL, "a failed create left *out %p", (void *)g);
        goto out;
    }
    G.nedges = 0;
    reset_runs();
    for (uint32_t i = 0; i < GN; i++)
        add_node(g, i);
    WT_ASSERT_EQ(weft_graph_size(g), GN);
    for (uint32_t i = 1; i < GN; i++)
        add_edge((i - 1) / 4, i);
    for (uint32_t i = 5; i < GN; i += 5)
        add_edge(0, i);
    add_edge(0, 5);   /* again: a duplicate */
    for (uint32_t i = 0; i < 64; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "n%u", i);
        weft_task_set_name(G.t[i], nm);
        if (!name_of(g, i))
            weft_task_set_name(G.t[i], nm);   /* the old name (none) stayed */
        WT_ASSERT(name_of(g, i) && strcmp(name_of(g, i), nm) == 0);
    }

    run_graph(g);
    check_run();
    reset_runs();
    run_graph(g);   /* checked already: allocates nothing */
    check_run();

    FILE *f = fopen("/dev/null", "w");
    WT_ASSERT(f != NULL);
    rc = weft_graph_dump_dot(g, f);
    if (rc == WEFT_ENOMEM)
        rc = weft_graph_dump_dot(g, f);
    WT_ASSERT_EQ(rc, WEFT_OK);
    fclose(f);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

    /* A cycle: ENOMEM from the check is no verdict; the next run's is. */
    rc = weft_graph_create(&g);
    if (rc == WEFT_ENOMEM)
        rc = weft_graph_create(&g);
    WT_ASSERT_EQ(rc, WEFT_OK);
    reset_runs();
    for (uint32_t i = 0; i < 3; i++)
        add_node(g, i);
    add_edge(0, 1);
    add_edge(1, 2);
    add_edge(2, 0);
    rc = weft_graph_run(graph_sched, g);
    if (rc == WEFT_ENOMEM)
        rc = weft_graph_run(graph_sched, g);
    WT_ASSERT_EQ(rc, WEFT_ECYCLE);
    WT_ASSERT_EQ(atomic_load(&G.ticket), 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
out:
    weft_set_allocator(NULL);
}

WT_TEST(alloc, t26_alloc_failure_every_n_graph, .timeout = 600)
{
    /* The scheduler has an allocator of its own: only the graph's fail. */
    static walloc sa = WALLOC_INIT("scheduler"), fa = WALLOC_INIT("failing");
    walloc_hooks(&sa);
    walloc_hooks(&fa);
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    c.allocator = sa.hooks;
    WT_ASSERT_EQ(weft_sched_create(&graph_sched, &c), WEFT_OK);
    long runs = every_n(&fa, graph_body, &fa, "graph");
    WT_ASSERT(runs >= 20, "graph: only %ld allocations", runs);
    WT_ASSERT_EQ(weft_sched_destroy(graph_sched), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&sa.blocks), 0);
}

/* ---- channels ----------------------------------------------------------------------- */

static void chan_body(void *arg)
{
    walloc *a = arg;
    weft_set_allocator(&a->hooks);
    for (size_t cap = 0; cap <= 4; cap += 4) {
        weft_chan *ch = (weft_chan *)a;
        int rc = weft_chan_create(&ch, sizeof(int), cap);
        if (rc != WEFT_OK) {
            WT_ASSERT_EQ(rc, WEFT_ENOMEM);
            WT_ASSERT(ch == NULL, "a failed create left *out %p", (void *)ch);
            continue;
        }
        for (int i = 0; i < (int)cap; i++)
            WT_ASSERT_EQ(weft_chan_try_send(ch, &i), WEFT_OK);
        int v = -1;
        WT_ASSERT_EQ(weft_chan_try_send(ch, &v), WEFT_EAGAIN);
        weft_chan_close(ch);
        for (int i = 0; i < (int)cap; i++) {
            WT_ASSERT_EQ(weft_chan_recv(ch, &v), WEFT_OK);
            WT_ASSERT_EQ(v, i);
        }
        WT_ASSERT_EQ(weft_chan_recv(ch, &v), WEFT_ECLOSED);
        weft_chan_destroy(ch);
    }
    weft_set_allocator(NULL);
}

WT_TEST(alloc, t26_alloc_failure_every_n_chan, .timeout = 60)
{
    static walloc fa = WALLOC_INIT("failing");
    walloc_hooks(&fa);
    WT_ASSERT_EQ(every_n(&fa, chan_body, &fa, "channels"), 2);
}

/* ---- fiber stacks ---------------------------------------------------------------------
 * Not an allocation through the hook: a fiber is one mmap. When a task
 * blocks and its worker has no ready or idle fiber to go on with, it maps
 * a new one; if that fails, the wait fails with WEFT_ENOMEM and changes
 * nothing (the waiter never queued, as far as anyone can see); a sleep
 * sleeps on the thread, a yield does nothing, a mutex lock still locks
 * (its thread sleeps in the kernel between tries), and nothing aborts
 * (weft.h, "allocation"). Each case runs in a child: the seam makes every
 * fiber map from then on fail, for good. */

static weft_event never;
static weft_mutex mu;
static atomic_int results[8];

static void no_fiber_task(void *arg)
{
    (void)arg;
    atomic_store(&results[0], weft_event_wait(&never) + 100);
    atomic_store(&results[1], weft_event_wait_for(&never, 1000000) + 100);
    weft_waitgroup wg;
    weft_waitgroup_init(&wg, 1);
    atomic_store(&results[2], weft_waitgroup_wait(&wg) + 100);
    weft_waitgroup_destroy(&wg);
    atomic_store(&results[3], weft_sleep(1000) + 100);   /* the thread sleeps: OK */
    weft_yield();                                        /* does nothing */
    weft_mutex_lock(&mu);                                /* held by main for a moment */
    weft_mutex_unlock(&mu);
    atomic_store(&results[4], 100);
}

static void no_fiber_child(void *arg)
{
    unsigned workers = (unsigned)(uintptr_t)arg;
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        _exit(3);
    weft_event_init(&never, true, false);
    weft_mutex_init(&mu);
    for (int i = 0; i < 8; i++)
        atomic_init(&results[i], 0);
    atomic_store_explicit(&weft__fiber_fail_maps_all, true, memory_order_relaxed);   /* every fiber stack map fails from now on */
    if (workers == 0) {
        /* The bound thread has no fiber to run the task on: waiting in
         * its own code, it runs it on its own stack (weft_sched_wait_idle and
         * destroy must not fail). The mutex is free here. */
        if (weft_spawn(s, no_fiber_task, NULL) != WEFT_OK)
            _exit(4);
        if (weft_sched_bind(s) != WEFT_OK)
            _exit(5);
    } else {
        weft_mutex_lock(&mu);
        if (weft_spawn(s, no_fiber_task, NULL) != WEFT_OK)
            _exit(4);
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        weft_mutex_unlock(&mu);
    }
    if (weft_sched_wait_idle(s) != WEFT_OK)
        _exit(7);
    for (int i = 0; i < 5; i++) {
        int want = i == 3 || i == 4 ? WEFT_OK : WEFT_ENOMEM;
        if (i == 1 && atomic_load(&results[i]) == WEFT_ETIMEDOUT + 100)
            continue;   /* a short timed wait may poll to its end without blocking */
        if (atomic_load(&results[i]) != want + 100) {
            fprintf(stderr, "result %d: %d, want %d\n", i, atomic_load(&results[i]) - 100, want);
            _exit(10 + i);
        }
    }
    if (weft_sched_destroy(s) != WEFT_OK)
        _exit(8);
    _exit(0);
}

WT_TEST(alloc, t26_no_fiber_stack_is_an_error_not_an_abort, .timeout = 120)
{
    for (uintptr_t workers = 0; workers <= 2; workers++) {
        char buf[2048];
        int st = wt_run_child(no_fiber_child, (void *)workers, buf, sizeof buf);
        WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%u workers: status %#x: %s",
                  (unsigned)workers, st, buf);
    }
}
