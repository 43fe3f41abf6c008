/* Graph control (issue 21): series of runs (run_n, run_until), held to
 * what weft.h promises in "task graphs" and nothing else: public API only.
 *
 *   series_*       run_n and run_until: exact run counts and edge order in
 *                  every run, the predicate once per run, a failure or a
 *                  cancel ends the series (a cancel hammered from another
 *                  thread), series nested in tasks and at 0 workers,
 *                  blocking tasks in a series, ESHUTDOWN
 *
 * Tasks cannot assert (they may run on a worker thread): they note the
 * first thing they find wrong in `flaw`, which the test checks after the
 * run. Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Schedulers run at 0 workers (this thread bound), 1, 2 and 8.
 * control_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "control_util.h"

/* ==== series: run_n and run_until ============================================== */

/* A random DAG with a head, run as series; returns the world's run count. */
static void series_world(struct world *w, weft_graph *g, uint32_t n, uint64_t salt)
{
    uint64_t rng = (wt_seed() ^ salt) | 1;
    world_generate(w, n, 10, &rng);
    world_build(w, g, true);
}

static void series_check_counts(struct world *w, uint64_t runs, const char *what)
{
    WT_ASSERT(atomic_load(&w->run) == runs, "%s: %llu runs, want %llu", what,
              (unsigned long long)atomic_load(&w->run), (unsigned long long)runs);
    for (uint32_t i = 0; i < w->n; i++) {
        WT_ASSERT(atomic_load(&w->nd[i].runs) == runs, "%s: task %u ran %u times, want %llu", what, i,
                  atomic_load(&w->nd[i].runs), (unsigned long long)runs);
        WT_ASSERT_EQ(atomic_load(&w->nd[i].last_run), runs);
    }
    CHECK_FLAWS(what);
}

WT_TEST(graph_control, series_run_n_counts_and_order, .timeout = 300)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        struct world w;
        series_world(&w, g, 24, 0x5e41 + workers);
        char what[120];
        snprintf(what, sizeof what, "WEFT_SEED=%llu, %u workers", (unsigned long long)wt_seed(), workers);
        /* n = 0: nothing runs, and wait returns at once. */
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 0), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        series_check_counts(&w, 0, what);
        WT_ASSERT_EQ(weft_task_state(w.head), WEFT_TASK_PENDING);
        uint64_t total = 0;
        uint64_t ns[] = { 1, 5, wt_scaled(1000, 100), 1, 0, 2 };
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            WT_ASSERT_EQ(weft_graph_run_n(s, g, ns[i]), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            total += ns[i];
            char w2[160];
            snprintf(w2, sizeof w2, "%s, run_n(%llu)", what, (unsigned long long)ns[i]);
            series_check_counts(&w, total, w2);
            WT_ASSERT(weft_graph_failed_task(g) == NULL);
            for (uint32_t j = 0; j < w.n; j++)
                WT_ASSERT_EQ(weft_task_state(w.nd[j].t), WEFT_TASK_DONE);
        }
        /* Plain runs mix with series. */
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        series_check_counts(&w, total + 1, what);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        world_free(&w);
        close_sched(s, workers);
    }
}

/* A series in flight is a run in flight: a second run, changes, destroy
 * are refused. */
WT_TEST(graph_control, series_is_busy_while_in_flight, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_store(&gate, 0);
    atomic_store(&blocker_in, 0);
    atomic_int n = 0;
    weft_task *b = add(g, blocker, NULL), *c = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_OK);
    while (!atomic_load(&blocker_in))
        sched_yield();
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_run_n(s, g, 2), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_EBUSY);
    WT_ASSERT(weft_graph_add(g, noop, NULL) == NULL);
    WT_ASSERT_EQ(weft_graph_set_fail_fast(g, true), WEFT_EBUSY);
    atomic_store(&gate, 1);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 3);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

struct until {
    struct world *w;       /* NULL: an empty graph */
    atomic_uint_fast64_t calls;
    uint64_t stop_at;      /* true on this call */
};

static bool until_pred(void *ctx)
{
    struct until *u = ctx;
    uint64_t c = atomic_fetch_add(&u->calls, 1) + 1;
    if (u->w) {
        /* Asked after each run: the run that just ended is the c-th of
         * the series, and every task ran in it. */
        uint64_t r = atomic_load(&u->w->run);
        for (uint32_t i = 0; i < u->w->n; i++)
            if (atomic_load(&u->w->nd[i].last_run) != r)
                flaw("pred call %llu: task %u has not run in run %llu", (unsigned long long)c, i,
                     (unsigned long long)r);
    }
    return c >= u->stop_at;
}

WT_TEST(graph_control, series_run_until_stops_at_the_first_true, .timeout = 300)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        struct world w;
        series_world(&w, g, 20, 0x7a11 + workers);
        uint64_t total = 0;
        uint64_t stops[] = { 1, 2, 7, wt_scaled(500, 50) };
        for (size_t i = 0; i < 4; i++) {
            struct until u = { .w = &w, .stop_at = stops[i] };
            uint64_t r0 = atomic_load(&w.run);
            WT_ASSERT_EQ(weft_graph_run_until(s, g, until_pred, &u), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            total += stops[i];
            char what[120];
            snprintf(what, sizeof what, "%u workers, run_until true at call %llu", workers,
                     (unsigned long long)stops[i]);
            WT_ASSERT(atomic_load(&u.calls) == stops[i], "%s: the predicate was asked %llu times",
                      what, (unsigned long long)atomic_load(&u.calls));
            WT_ASSERT(atomic_load(&w.run) - r0 == stops[i], "%s: %llu runs", what,
                      (unsigned long long)(atomic_load(&w.run) - r0));
            series_check_counts(&w, total, what);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        world_free(&w);
        close_sched(s, workers);
    }
}

/* An empty graph's runs end at once; the predicate is still asked after
 * each ("asked after each run"), so it sees as many runs as it lets go. */
/* An empty graph's series ends at once (weft.h): nothing runs and the
 * predicate is not asked. */
WT_TEST(graph_control, series_run_until_on_an_empty_graph_asks_nothing, .timeout = 30)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *e = new_graph();
        WT_ASSERT_EQ(weft_graph_run_n(s, e, 1000), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(e), WEFT_OK);
        struct until u = { .stop_at = 9 };
        WT_ASSERT_EQ(weft_graph_run_until(s, e, until_pred, &u), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(e), WEFT_OK);
        WT_ASSERT(atomic_load(&u.calls) == 0, "%u workers: run_until on an empty graph asked the predicate %llu times, want 0",
                  workers, (unsigned long long)atomic_load(&u.calls));
        WT_ASSERT_EQ(weft_graph_destroy(e), WEFT_OK);
        close_sched(s, workers);
    }
}

/* A failure in run k ends the series after run k; plain and fail-fast,
 * run_n and run_until; the next series is clean. */
WT_TEST(graph_control, series_failure_ends_the_series, .timeout = 300)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        for (int ff = 0; ff < 2; ff++) {
            weft_graph *g = new_graph();
            struct world w;
            series_world(&w, g, 16, 0xfa11 + workers * 2 + ff);
            WT_ASSERT_EQ(weft_graph_set_fail_fast(g, ff), WEFT_OK);
            bool *desc = malloc(w.n);
            WT_ASSERT(desc != NULL);
            uint64_t done = 0;
            for (uint32_t f = 0; f < w.n; f += 3) {
                for (int use_until = 0; use_until < 2; use_until++) {
                    uint64_t kth = 1 + (f + use_until) % 4;
                    char what[160];
                    snprintf(what, sizeof what, "WEFT_SEED=%llu, %u workers%s, task %u fails in run %llu of %s",
                             (unsigned long long)wt_seed(), workers, ff ? ", fail-fast" : "", f,
                             (unsigned long long)kth, use_until ? "run_until" : "run_n(50)");
                    atomic_store(&w.fail_at, (int)f);
                    atomic_store(&w.fail_run, done + kth);
                    uint64_t r0 = atomic_load(&w.run);
                    struct until u = { .stop_at = 50 };
                    WT_ASSERT_EQ(use_until ? weft_graph_run_until(s, g, until_pred, &u)
                                           : weft_graph_run_n(s, g, 50), WEFT_OK);
                    int rc = weft_graph_wait(g);
                    WT_ASSERT(rc == WEFT_EFAILED, "%s: wait %d (%s)", what, rc, weft_err_name(rc));
                    WT_ASSERT(weft_graph_fail_code(g) == code_of(f), "%s: code %d", what, weft_graph_fail_code(g));
                    WT_ASSERT(atomic_load(&w.run) - r0 == kth, "%s: the series ran %llu times", what,
                              (unsigned long long)(atomic_load(&w.run) - r0));
                    WT_ASSERT(weft_graph_failed_task(g) == w.nd[f].t, "%s: failed task", what);
                    WT_ASSERT_EQ(weft_task_state(w.nd[f].t), WEFT_TASK_FAILED);
                    if (use_until)   /* asked after each clean run; after the failed one, maybe */
                        WT_ASSERT(atomic_load(&u.calls) == kth - 1 || atomic_load(&u.calls) == kth,
                                  "%s: the predicate was asked %llu times", what,
                                  (unsigned long long)atomic_load(&u.calls));
                    world_descendants(&w, f, desc);
                    for (uint32_t i = 0; i < w.n; i++)
                        if (desc[i])
                            WT_ASSERT(weft_task_state(w.nd[i].t) == WEFT_TASK_SKIPPED &&
                                          atomic_load(&w.nd[i].last_run) == done + kth - 1,
                                      "%s: descendant %u ran in the failed run", what, i);
                        else if (!ff && i != f)
                            WT_ASSERT(weft_task_state(w.nd[i].t) == WEFT_TASK_DONE &&
                                          atomic_load(&w.nd[i].last_run) == done + kth,
                                      "%s: task %u did not run in the failed run", what, i);
                    CHECK_FLAWS(what);
                    /* Tasks skipped in the failed run did not run in it:
                     * bring their run marks up to date for the head. */
                    for (uint32_t i = 0; i < w.n; i++)
                        atomic_store(&w.nd[i].last_run, done + kth);
                    done += kth;
                    /* The next series is clean. */
                    atomic_store(&w.fail_at, -1);
                    WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_OK);
                    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
                    WT_ASSERT(weft_graph_failed_task(g) == NULL, "%s: a failed task after a clean series", what);
                    done += 3;
                    WT_ASSERT_EQ(atomic_load(&w.run), done);
                    CHECK_FLAWS(what);
                }
            }
            free(desc);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            world_free(&w);
        }
        close_sched(s, workers);
    }
}

/* weft_graph_cancel hammered from another thread at series of short
 * runs: once it has returned true, no run starts (a task's own start
 * count may trail its start by the task in flight on each thread); a
 * series cut short returns ECANCELED; one it missed returns OK. */
struct hammer {
    weft_graph *g;
    atomic_int round;          /* the series the main thread has started */
    atomic_int acked;          /* the last round the hammer finished */
    atomic_int over;           /* the round whose wait has returned */
    atomic_int stop;
    atomic_uint_fast64_t head_runs, starts;
    uint64_t runs_at_cancel, starts_at_cancel;   /* read once cancel said true */
    bool cancelled;
    uint64_t rng;
};

static struct hammer hm;

static void hm_head(void *arg)
{
    (void)arg;
    atomic_fetch_add(&hm.starts, 1);
    atomic_fetch_add(&hm.head_runs, 1);
}

static void hm_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&hm.starts, 1);
    for (volatile int i = 0; i < 300; i++)   /* a run long enough to land in */
        ;
}

static void *hammer_thread(void *p)
{
    (void)p;
    int seen = 0;
    while (!atomic_load(&hm.stop)) {
        int r = atomic_load(&hm.round);
        if (r == seen) {
            sched_yield();
            continue;
        }
        seen = r;
        /* Land anywhere: a random delay first, log-uniform up to 2^16
         * spins (the series at 1 worker takes a few microseconds, the
         * wake-up of a parked worker far longer). */
        unsigned spin = (unsigned)(wt_rand(&hm.rng) % (1u << (wt_rand(&hm.rng) % 17)));
        for (volatile unsigned i = 0; i < spin; i++)
            ;
        hm.cancelled = false;
        while (atomic_load(&hm.over) != r) {
            if (weft_graph_cancel(hm.g)) {
                hm.runs_at_cancel = atomic_load(&hm.head_runs);
                hm.starts_at_cancel = atomic_load(&hm.starts);
                hm.cancelled = true;
                break;
            }
        }
        atomic_store(&hm.acked, r);
    }
    return NULL;
}

WT_TEST(graph_control, series_cancel_hammered_from_another_thread, .timeout = 600)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        memset(&hm, 0, sizeof hm);
        hm.g = g;
        hm.rng = wt_seed() | 1;
        weft_task *h = add(g, hm_head, NULL);
        weft_task *a = add(g, hm_task, NULL), *b = add(g, hm_task, NULL);
        WT_ASSERT_EQ(weft_task_precede(h, a), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(h, b), WEFT_OK);
        const uint64_t N = 40;
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, hammer_thread, NULL), 0);
        int rounds = (int)wt_scaled(5000, 300), cut = 0, missed = 0, first = 0;
        unsigned slack = workers ? workers : 1;
        for (int r = 1; r <= rounds; r++) {
            atomic_store(&hm.head_runs, 0);
            atomic_store(&hm.starts, 0);
            atomic_store(&hm.round, r);   /* the hammer may start before the series */
            WT_ASSERT_EQ(weft_graph_run_n(s, g, N), WEFT_OK);
            int rc = weft_graph_wait(g);
            atomic_store(&hm.over, r);
            while (atomic_load(&hm.acked) != r)
                sched_yield();
            uint64_t runs = atomic_load(&hm.head_runs), starts = atomic_load(&hm.starts);
            if (!hm.cancelled) {
                missed++;
                WT_ASSERT(rc == WEFT_OK && runs == N && starts == 3 * N,
                          "%u workers, round %d: no cancel landed, yet wait %s after %llu runs", workers,
                          r, weft_err_name(rc), (unsigned long long)runs);
                continue;
            }
            cut += runs < N;
            first += runs <= 1;
            WT_ASSERT(runs <= hm.runs_at_cancel + 1 && starts <= hm.starts_at_cancel + slack,
                      "%u workers, round %d: after cancel said true (%llu runs, %llu tasks started), "
                      "the series went on to %llu runs, %llu tasks", workers, r,
                      (unsigned long long)hm.runs_at_cancel, (unsigned long long)hm.starts_at_cancel,
                      (unsigned long long)runs, (unsigned long long)starts);
            if (runs < N)
                WT_ASSERT(rc == WEFT_ECANCELED, "%u workers, round %d: cut after %llu of %llu runs, wait %s",
                          workers, r, (unsigned long long)runs, (unsigned long long)N, weft_err_name(rc));
            else
                WT_ASSERT(rc == WEFT_ECANCELED || rc == WEFT_OK, "%u workers, round %d: wait %s", workers,
                          r, weft_err_name(rc));
            WT_ASSERT(weft_graph_failed_task(g) == NULL);
        }
        atomic_store(&hm.stop, 1);
        pthread_join(th, NULL);
        fprintf(stderr, "cancel hammer, %u workers: %d rounds, %d cut short (%d in the first run), %d missed\n",
                workers, rounds, cut, first, missed);
        /* The cancels leave later runs alone. */
        atomic_store(&hm.head_runs, 0);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, N), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&hm.head_runs), N);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, workers);
    }
}

/* A cancel between two runs, made certain: the predicate (between runs)
 * lets another thread cancel and waits until it has; the series ends
 * there with ECANCELED, the predicate is not asked again. */
struct between {
    weft_graph *g;
    uint64_t at;                 /* the call that lets the canceller go */
    atomic_uint_fast64_t calls;
    atomic_int go, cancelled, timed_out;
    bool cancel_rc;
};

static struct between bw;

static bool between_pred(void *ctx)
{
    (void)ctx;
    uint64_t c = atomic_fetch_add(&bw.calls, 1) + 1;
    if (c == bw.at) {
        atomic_store(&bw.go, 1);
        uint64_t t0 = wt_now_ns();
        while (!atomic_load(&bw.cancelled)) {
            /* 60 s: only a cancel blocked on us takes this long, not a
             * canceller thread starved on a loaded machine. */
            if (wt_now_ns() - t0 > 60ull * 1000 * 1000 * 1000) {
                atomic_store(&bw.timed_out, 1);   /* cancel blocked on us */
                break;
            }
            sched_yield();
        }
    }
    return false;
}

static void *between_canceller(void *p)
{
    (void)p;
    while (!atomic_load(&bw.go))
        sched_yield();
    bw.cancel_rc = weft_graph_cancel(bw.g);
    atomic_store(&bw.cancelled, 1);
    return NULL;
}

WT_TEST(graph_control, series_cancel_between_two_runs, .timeout = 300)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        struct world w;
        series_world(&w, g, 12, 0xbe7 + workers);
        for (uint64_t at = 1; at <= 4; at++) {
            memset(&bw, 0, sizeof bw);
            bw.g = g;
            bw.at = at;
            uint64_t r0 = atomic_load(&w.run);
            pthread_t th;
            WT_ASSERT_EQ(pthread_create(&th, NULL, between_canceller, NULL), 0);
            WT_ASSERT_EQ(weft_graph_run_until(s, g, between_pred, NULL), WEFT_OK);
            int rc = weft_graph_wait(g);
            pthread_join(th, NULL);
            char what[100];
            snprintf(what, sizeof what, "%u workers, cancel after run %llu", workers, (unsigned long long)at);
            WT_ASSERT(!atomic_load(&bw.timed_out), "%s: weft_graph_cancel waited for the predicate", what);
            WT_ASSERT(bw.cancel_rc, "%s: cancel between two runs of a series said false", what);
            WT_ASSERT(rc == WEFT_ECANCELED, "%s: wait %s", what, weft_err_name(rc));
            WT_ASSERT(atomic_load(&w.run) - r0 == at, "%s: %llu runs", what,
                      (unsigned long long)(atomic_load(&w.run) - r0));
            WT_ASSERT(atomic_load(&bw.calls) == at, "%s: the predicate was asked %llu times", what,
                      (unsigned long long)atomic_load(&bw.calls));
            CHECK_FLAWS(what);
        }
        /* And the graph runs on. */
        uint64_t r0 = atomic_load(&w.run);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 4), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&w.run) - r0, 4);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        world_free(&w);
        close_sched(s, workers);
    }
}

/* A task cancels another task in run k of a series: that run has skipped
 * tasks, so the series ends there with ECANCELED. */
struct self_cancel {
    weft_task *victim;
    atomic_uint_fast64_t runs;
    uint64_t at;
};

static struct self_cancel sc;

static void sc_first(void *arg)
{
    (void)arg;
    uint64_t r = atomic_fetch_add(&sc.runs, 1) + 1;
    if (r == sc.at && !weft_task_cancel(sc.victim))
        flaw("could not cancel an unstarted successor");
}

WT_TEST(graph_control, series_task_cancel_ends_the_series, .timeout = 60)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        weft_task *first = add(g, sc_first, NULL);
        sc.victim = add(g, count, &n);
        WT_ASSERT_EQ(weft_task_precede(first, sc.victim), WEFT_OK);
        atomic_store(&sc.runs, 0);
        sc.at = 4;
        WT_ASSERT_EQ(weft_graph_run_n(s, g, 100), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&sc.runs), 4);
        WT_ASSERT_EQ(atomic_load(&n), 3);
        CHECK_FLAWS("task cancel in a series");
        weft_task_reset(sc.victim);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, workers);
    }
}

/* run_n from a task of another graph, and waiting for it there. */
struct nested_series {
    weft_sched *s;
    weft_graph *inner;
    weft_task *self;
    uint64_t n;
    atomic_int rc;
};

static void nested_series_fn(void *arg)
{
    struct nested_series *x = arg;
    int rc = weft_graph_run_n(x->s, x->inner, x->n);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(x->inner);
    atomic_store(&x->rc, rc);
    if (weft_task_current() != x->self)
        flaw("outer: current wrong after waiting for a series");
}

WT_TEST(graph_control, series_from_a_task_of_another_graph, .timeout = 120)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        weft_graph *outer = new_graph();
        struct world w[3];
        struct nested_series x[3];
        for (int i = 0; i < 3; i++) {
            x[i] = (struct nested_series){ .s = s, .inner = new_graph(), .n = 5 + 20 * (uint64_t)i };
            series_world(&w[i], x[i].inner, 15, 0x1e57 + i * 16 + workers);
            x[i].self = add(outer, nested_series_fn, &x[i]);
            if (i)
                WT_ASSERT_EQ(weft_task_precede(x[0].self, x[i].self), WEFT_OK);
        }
        for (uint64_t r = 1; r <= 3; r++) {
            WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_OK);
            for (int i = 0; i < 3; i++) {
                WT_ASSERT_EQ(atomic_load(&x[i].rc), WEFT_OK);
                series_check_counts(&w[i], r * x[i].n, "nested series");
            }
        }
        /* The outer graph itself as a series of runs of series. */
        WT_ASSERT_EQ(weft_graph_run_n(s, outer, 4), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_OK);
        for (int i = 0; i < 3; i++)
            series_check_counts(&w[i], 7 * x[i].n, "nested series in a series");
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        for (int i = 0; i < 3; i++) {
            WT_ASSERT_EQ(weft_graph_destroy(x[i].inner), WEFT_OK);
            world_free(&w[i]);
        }
        close_sched(s, workers);
    }
}

/* Series created, waited for and destroyed at once, many times: nothing
 * touches the graph after the wait returned (ASan would see it). */
struct destroy_job {
    weft_graph *g;
    atomic_int rc;
};

static void *wait_thread(void *p)
{
    struct destroy_job *j = p;
    atomic_store(&j->rc, weft_graph_wait(j->g));
    return NULL;
}

WT_TEST(graph_control, series_destroy_right_after_wait, .timeout = 300)
{
    WT_FOR_WORKERS(workers, 0, 1, 2, 8) {
        weft_sched *s = open_sched(workers);
        int rounds = (int)wt_scaled(400, 40);
        for (int r = 0; r < rounds; r++) {
            weft_graph *g = new_graph();
            atomic_int n = 0;
            weft_task *a = add(g, count, &n);
            for (int i = 0; i < 6; i++)
                WT_ASSERT_EQ(weft_task_precede(a, add(g, count, &n)), WEFT_OK);
            uint64_t runs = 1 + r % 7;
            struct until u = { .stop_at = runs };   /* lives until the wait */
            if (r % 3 == 2) {
                WT_ASSERT_EQ(weft_graph_run_until(s, g, until_pred, &u), WEFT_OK);
            } else {
                WT_ASSERT_EQ(weft_graph_run_n(s, g, runs), WEFT_OK);
            }
            if (workers && r % 2) {
                /* Another thread waits; this one joins it, then destroys. */
                struct destroy_job j = { .g = g };
                pthread_t th;
                WT_ASSERT_EQ(pthread_create(&th, NULL, wait_thread, &j), 0);
                pthread_join(th, NULL);
                WT_ASSERT_EQ(atomic_load(&j.rc), WEFT_OK);
            } else {
                WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&n), 7 * (int)runs);
        }
        close_sched(s, workers);
    }
}

/* ==== blocking tasks in a series ============================================== */

/* Per run: head clears the event; a waits on it; x -> b signals it; a and
 * b -> tail. a blocks until b has run in the same run. */
struct blk {
    weft_event ev;
    atomic_uint_fast64_t run, signalled_in, a_saw, tail_runs;
    weft_task *a;
};

static struct blk blk;

static void blk_head(void *arg)
{
    (void)arg;
    weft_event_clear(&blk.ev);
    atomic_fetch_add(&blk.run, 1);
}

static void blk_a(void *arg)
{
    (void)arg;
    int rc = weft_event_wait(&blk.ev);
    if (rc != WEFT_OK)
        flaw("a: event wait: %s", weft_err_name(rc));
    uint64_t r = atomic_load(&blk.run);
    if (atomic_load(&blk.signalled_in) != r)
        flaw("a woke in run %llu; b signalled in run %llu", (unsigned long long)r,
             (unsigned long long)atomic_load(&blk.signalled_in));
    if (weft_task_current() != blk.a)
        flaw("a: current wrong after the event wait");
    atomic_store(&blk.a_saw, r);
}

static void blk_x(void *arg)
{
    (void)arg;
    weft_yield();
}

static void blk_b(void *arg)
{
    (void)arg;
    atomic_store(&blk.signalled_in, atomic_load(&blk.run));
    weft_event_signal(&blk.ev);
}

static void blk_tail(void *arg)
{
    (void)arg;
    uint64_t r = atomic_load(&blk.run);
    if (atomic_load(&blk.a_saw) != r)
        flaw("tail of run %llu: a last woke in run %llu", (unsigned long long)r,
             (unsigned long long)atomic_load(&blk.a_saw));
    atomic_fetch_add(&blk.tail_runs, 1);
}

WT_TEST(graph_control, series_tasks_block_on_each_other, .timeout = 120)
{
    WT_FOR_WORKERS(workers, 0, 1, 2) {   /* 0: the test thread bound */
        weft_sched *s = open_sched(workers);
        weft_graph *g = new_graph();
        memset(&blk, 0, sizeof blk);
        weft_event_init(&blk.ev, true, false);
        weft_task *head = add(g, blk_head, NULL);
        blk.a = add(g, blk_a, NULL);
        weft_task *x = add(g, blk_x, NULL), *b = add(g, blk_b, NULL), *tail = add(g, blk_tail, NULL);
        WT_ASSERT_EQ(weft_task_precede(head, blk.a), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(head, x), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(x, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(blk.a, tail), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, tail), WEFT_OK);
        uint64_t n = wt_scaled(2000, 200);
        WT_ASSERT_EQ(weft_graph_run_n(s, g, n), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&blk.run), n);
        WT_ASSERT_EQ(atomic_load(&blk.tail_runs), n);
        CHECK_FLAWS("blocking series");
        /* And as run_until. */
        struct until u = { .stop_at = 50 };
        WT_ASSERT_EQ(weft_graph_run_until(s, g, until_pred, &u), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&blk.tail_runs), n + 50);
        CHECK_FLAWS("blocking series, run_until");
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&blk.ev);
        close_sched(s, workers);
    }
}

/* ==== ESHUTDOWN: a refused run changes nothing ==================================== */

struct shut {
    weft_sched *s;
    weft_event release;
    atomic_int in;
    atomic_int destroy_rc;
};

static struct shut sh;

static void shut_blocker(void *arg)
{
    (void)arg;
    atomic_store(&sh.in, 1);
    weft_event_wait(&sh.release);
}

static void *shut_destroyer(void *p)
{
    (void)p;
    atomic_store(&sh.destroy_rc, weft_sched_destroy(sh.s));
    return NULL;
}

static bool never(void *ctx)
{
    (void)ctx;
    return false;
}

WT_TEST(graph_control, series_eshutdown_keeps_the_latest_result, .timeout = 60)
{
    for (unsigned workers = 1; workers <= 2; workers++) {
        for (int failed = 0; failed < 2; failed++) {
            memset(&sh, 0, sizeof sh);
            sh.s = make_sched(workers);
            weft_event_init(&sh.release, true, false);
            weft_graph *g = new_graph();
            weft_task *a = add(g, scripted, (void *)(intptr_t)'a');
            weft_task *b = add(g, scripted, (void *)(intptr_t)'b');
            WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
            atomic_store(&script.mode, failed ? 1 : 0);
            int want = failed ? WEFT_EFAILED : WEFT_OK;   /* a's own -1001: fail_code */
            WT_ASSERT_EQ(weft_graph_run_n(sh.s, g, 3), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), want);
            /* Destroy starts and waits for the blocker. */
            WT_ASSERT_EQ(weft_spawn(sh.s, shut_blocker, NULL), WEFT_OK);
            while (!atomic_load(&sh.in))
                sched_yield();
            pthread_t th;
            WT_ASSERT_EQ(pthread_create(&th, NULL, shut_destroyer, NULL), 0);
            while (weft_spawn(sh.s, noop, NULL) != WEFT_ESHUTDOWN)
                sched_yield();
            atomic_store(&script.mode, 0);
            WT_ASSERT_EQ(weft_graph_run(sh.s, g), WEFT_ESHUTDOWN);
            WT_ASSERT_EQ(weft_graph_run_n(sh.s, g, 5), WEFT_ESHUTDOWN);
            WT_ASSERT_EQ(weft_graph_run_until(sh.s, g, never, NULL), WEFT_ESHUTDOWN);
            WT_ASSERT_EQ(weft_graph_wait(g), want);
            WT_ASSERT(weft_graph_failed_task(g) == (failed ? a : NULL),
                      "ESHUTDOWN changed the failed task (%d)", failed);
            WT_ASSERT(weft_graph_fail_code(g) == (failed ? -1001 : 0), "ESHUTDOWN changed the fail code (%d): %d",
                      failed, weft_graph_fail_code(g));
            WT_ASSERT_EQ(weft_task_state(a), failed ? WEFT_TASK_FAILED : WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(b), failed ? WEFT_TASK_SKIPPED : WEFT_TASK_DONE);
            weft_event_signal(&sh.release);
            pthread_join(th, NULL);
            WT_ASSERT_EQ(atomic_load(&sh.destroy_rc), WEFT_OK);
            /* The graph runs on another scheduler. */
            weft_sched *s2 = make_sched(workers);
            WT_ASSERT_EQ(weft_graph_run_n(s2, g, 2), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT(weft_graph_failed_task(g) == NULL);
            WT_ASSERT_EQ(weft_graph_fail_code(g), 0);
            WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_destroy(s2), WEFT_OK);
            weft_event_destroy(&sh.release);
            CHECK_FLAWS("eshutdown");
        }
    }
}
