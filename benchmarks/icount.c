/* icount: fixed workloads whose instructions benchmarks/run.py counts
 * under callgrind, one figure per scheduler operation.
 *
 *   icount spawn K ROUNDS   1 worker: a task spawns K empty children and
 *                           waits for them with weft_wait_until, which
 *                           runs them inline (spawn + run of an empty task)
 *   icount steal K ROUNDS   2 workers: the other worker steals and runs K
 *                           empty tasks, one steal each (steal + run)
 *   icount fib N ROUNDS     1 worker: fib(N) with one spawn per call, as
 *                           bench_core's fib cases (spawn, fib's own work,
 *                           and the wait, per spawn)
 *
 * Run it as
 *   valgrind --tool=callgrind --collect-atstart=no icount MODE SIZE ROUNDS
 * Callgrind then counts only where CALLGRIND_TOGGLE_COLLECT switched
 * collection on, which it tracks per thread: the measured stretch on the
 * thread that does it, after an uncounted warm-up round (so task slabs
 * and fibers exist before counting starts). run.py runs two sizes and
 * divides the difference by the items it adds, so the constant cost of
 * switching collection on and off, and of each round's start and end,
 * cancels out. Without callgrind.h the toggles do nothing and the program
 * only runs.
 *
 * The steal mode, step by step, each round: the root task R runs on
 * worker A and spawns a gate task G, then blocks A's thread on a POSIX
 * semaphore (not a weft wait, so A runs nothing else). Worker B steals G;
 * G posts "ready" and blocks B's thread on "go". R spawns K children into
 * A's deque, posts "go" and blocks A's thread on "done". G switches
 * collection on for B and returns; B's loop finds nothing local and
 * steals the K children one at a time from A (A's thread is asleep, so
 * nobody else takes them, and B never runs dry). The K-th child switches
 * collection off and posts "done". At the end the workers' counters must
 * show exactly that (every child stolen by B, one steal each), or the
 * program says WRONG and exits 1.
 *
 * Prints one line of JSON with what it did and the workers' counters.
 */
#define _POSIX_C_SOURCE 200809L
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#if defined(WEFT_HAVE_CALLGRIND)
# include <valgrind/callgrind.h>
# define TOGGLE() CALLGRIND_TOGGLE_COLLECT
#else
# define TOGGLE() ((void)0)
#endif

static weft_sched *g_s;

static void die(const char *what)
{
    fprintf(stderr, "icount: WRONG: %s\n", what);
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "icount: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
}

/* One-shot completion the main thread sleeps on. */
static sem_t g_finished;

/* ---- spawn: K empty children, run inline by the parent's wait ---------- */

typedef struct fan {
    long k, rounds;
    atomic_long ran;
} fan;

/* Callable from: a task (the one worker). */
static void child(void *arg)
{
    atomic_fetch_add_explicit(&((fan *)arg)->ran, 1, memory_order_relaxed);   /* relaxed: one worker; read by all_ran on this thread */
}

static bool all_ran(void *arg)
{
    fan *f = arg;
    return atomic_load_explicit(&f->ran, memory_order_relaxed) == f->k;   /* relaxed: written on this thread (one worker) */
}

static void spawn_round(fan *f, bool counted)
{
    atomic_store_explicit(&f->ran, 0, memory_order_relaxed);   /* relaxed: one worker */
    if (counted)
        TOGGLE();
    for (long i = 0; i < f->k; i++)
        check(weft_spawn(g_s, child, f), "spawn");
    check(weft_wait_until(all_ran, f), "wait_until");
    if (counted)
        TOGGLE();
}

static void spawn_root(void *arg)
{
    fan *f = arg;
    spawn_round(f, false);   /* warm-up */
    for (long r = 0; r < f->rounds; r++)
        spawn_round(f, true);
    sem_post(&g_finished);
}

/* ---- steal: worker B takes K tasks from worker A, one at a time ---------- */

typedef struct steal_state {
    long k, rounds;
    bool counted;            /* this round is counted */
    int thief;               /* B's worker index, set by the gate */
    atomic_long ran;
    sem_t ready, go, done;
} steal_state;

/* Callable from: a task on B. */
static void stolen_child(void *arg)
{
    steal_state *st = arg;
    if (weft_thread_worker_index() != st->thief)
        die("a child ran on the worker that spawned it");
    if (atomic_fetch_add_explicit(&st->ran, 1, memory_order_relaxed) + 1 == st->k) {   /* relaxed: only B counts; sem_post orders it for A */
        if (st->counted)
            TOGGLE();   /* off, on B */
        sem_post(&st->done);
    }
}

/* Callable from: a task on B (stolen from A). */
static void gate(void *arg)
{
    steal_state *st = arg;
    st->thief = weft_thread_worker_index();
    sem_post(&st->ready);
    while (sem_wait(&st->go) != 0)
        ;
    if (st->counted)
        TOGGLE();   /* on, on B: from here B steals the K children */
}

static void steal_round(steal_state *st, bool counted)
{
    st->counted = counted;
    atomic_store_explicit(&st->ran, 0, memory_order_relaxed);   /* relaxed: published to B by the spawns below */
    check(weft_spawn(g_s, gate, st), "spawn gate");
    while (sem_wait(&st->ready) != 0)
        ;
    if (st->thief == weft_thread_worker_index())
        die("the gate ran on the root's worker");
    for (long i = 0; i < st->k; i++)
        check(weft_spawn(g_s, stolen_child, st), "spawn");
    sem_post(&st->go);
    while (sem_wait(&st->done) != 0)
        ;
}

static void steal_root(void *arg)
{
    steal_state *st = arg;
    steal_round(st, false);   /* warm-up */
    for (long r = 0; r < st->rounds; r++)
        steal_round(st, true);
    sem_post(&g_finished);
}

/* ---- fib: one spawn per call, as bench_core -------------------------------- */

#include "bench_fib.h"

typedef struct fib_root_arg {
    int n;
    long rounds;
} fib_root_arg;

static void fib_root(void *arg)
{
    fib_root_arg *a = arg;
    long want = fib_seq(a->n);
    for (long r = 0; r <= a->rounds; r++) {   /* round 0: warm-up */
        fibs f = { a->n, 0, false };
        if (r)
            TOGGLE();
        fib(&f);
        if (r)
            TOGGLE();
        if (f.r != want)
            die("fib result");
    }
    sem_post(&g_finished);
}

/* ---- main --------------------------------------------------------------------- */

static void make_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    check(weft_sched_create(&g_s, &c), "sched_create");
    /* WEFT_ICOUNT_TRACE=1: recording on (2^16 events per thread, the ring
     * wrapping), for the instructions an event costs. */
    const char *trace = getenv("WEFT_ICOUNT_TRACE");
    if (trace && strcmp(trace, "1") == 0)
        check(weft_trace_start(g_s, 1u << 16), "trace_start");
}

static void print_stats(const char *mode, long size, long rounds, long items)
{
    printf("{\"mode\": \"%s\", \"size\": %ld, \"rounds\": %ld, \"counted_items\": %ld, \"workers\": [",
           mode, size, rounds, items);
    for (unsigned w = 0; w < weft_sched_workers(g_s); w++) {
        weft_worker_stats s;
        check(weft_sched_stats(g_s, w, &s), "stats");
        printf("%s{\"tasks_run\": %llu, \"steals\": %llu, \"steal_attempts\": %llu, "
               "\"stolen_runs\": %llu, \"offloads\": %llu, \"parks\": %llu, \"fibers_created\": %llu}",
               w ? ", " : "", (unsigned long long)s.tasks_run, (unsigned long long)s.steals,
               (unsigned long long)s.steal_attempts, (unsigned long long)s.stolen_runs,
               (unsigned long long)s.offloads, (unsigned long long)s.parks,
               (unsigned long long)s.fibers_created);
    }
    printf("]}\n");
}

int main(int argc, char **argv)
{
    if (argc != 4)
        goto usage;
    const char *mode = argv[1];
    long size = atol(argv[2]), rounds = atol(argv[3]);
    if (size < 1 || rounds < 1)
        goto usage;
    sem_init(&g_finished, 0, 0);

    if (strcmp(mode, "spawn") == 0) {
        if (size > 256)
            die("spawn: K above the default deque capacity (256) measures the overflow path");
        make_sched(1);
        static fan f;
        f.k = size;
        f.rounds = rounds;
        check(weft_spawn(g_s, spawn_root, &f), "spawn root");
        while (sem_wait(&g_finished) != 0)
            ;
        print_stats(mode, size, rounds, size * rounds);
    } else if (strcmp(mode, "steal") == 0) {
        if (size > 255)
            die("steal: K above 255 (the deque holds 256, the gate included) would overflow");
        make_sched(2);
        static steal_state st;
        st.k = size;
        st.rounds = rounds;
        sem_init(&st.ready, 0, 0);
        sem_init(&st.go, 0, 0);
        sem_init(&st.done, 0, 0);
        check(weft_spawn(g_s, steal_root, &st), "spawn root");
        while (sem_wait(&g_finished) != 0)
            ;
        check(weft_sched_wait_idle(g_s), "wait_idle");
        /* Every child and every gate was stolen by B, one steal each. */
        weft_worker_stats b;
        check(weft_sched_stats(g_s, (unsigned)st.thief, &b), "stats");
        unsigned long long want = (unsigned long long)(rounds + 1) * (unsigned long long)(size + 1);
        if (b.steals != want || b.stolen_runs != want) {
            fprintf(stderr, "icount: WRONG: steal: worker %d stole %llu and ran %llu stolen tasks, "
                            "expected %llu\n", st.thief, (unsigned long long)b.steals,
                    (unsigned long long)b.stolen_runs, want);
            return 1;
        }
        print_stats(mode, size, rounds, size * rounds);
    } else if (strcmp(mode, "fib") == 0) {
        if (size > 40)
            goto usage;
        make_sched(1);
        static fib_root_arg a;
        a.n = (int)size;
        a.rounds = rounds;
        check(weft_spawn(g_s, fib_root, &a), "spawn root");
        while (sem_wait(&g_finished) != 0)
            ;
        print_stats(mode, size, rounds, fib_spawns((int)size) * rounds);
    } else {
        goto usage;
    }
    check(weft_sched_destroy(g_s), "sched_destroy");
    return 0;

usage:
    fprintf(stderr, "usage: icount spawn|steal|fib SIZE ROUNDS\n"
                    "  spawn K (1..256), steal K (1..255), fib N (2..40); ROUNDS >= 1\n");
    return 2;
}
