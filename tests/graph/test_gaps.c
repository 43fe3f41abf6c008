/* The static model's gaps (issue 35, item 4), held to weft/graph.h:
 *
 *   multi_*     a multi-condition task runs every successor it picks
 *               (repeats and out-of-range picks ignored), in a loop too;
 *               picked successors block on each other; failing picks none
 *   self_*      a condition task's edge to itself loops (B.precede(B, C));
 *               a plain task's self-edge stays EINVAL
 *   queued_*    weft_graph_run_queued from several threads while the
 *               graph runs: every run happens, the wait ends after the
 *               last; a failure or cancel drops the rest; weft_graph_run
 *               keeps EBUSY; queueing, cancels and waits racing from
 *               several threads all end
 *   while_*     weft_graph_run_while asks first: false runs 0 times;
 *               weft_graph_run_until still runs once
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers.
 * Tasks never assert: they count what went wrong in `bad`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;

static void inc(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* ---- multi-condition ------------------------------------------------------------ */

struct mc {
    atomic_int hit[4];
    int picks[8];
    size_t npicks;
    size_t cap_seen;
};

static size_t mc_fn(void *arg, int *picks, size_t cap)
{
    struct mc *m = arg;
    m->cap_seen = cap;
    for (size_t i = 0; i < m->npicks && i < cap; i++)
        picks[i] = m->picks[i];
    return m->npicks;
}

static void hit0(void *a) { atomic_fetch_add(&((struct mc *)a)->hit[0], 1); }
static void hit1(void *a) { atomic_fetch_add(&((struct mc *)a)->hit[1], 1); }
static void hit2(void *a) { atomic_fetch_add(&((struct mc *)a)->hit[2], 1); }
static void hit3(void *a) { atomic_fetch_add(&((struct mc *)a)->hit[3], 1); }

WT_TEST(gaps, multi_picks_several, .timeout = 60)
{
    static const struct {
        int picks[8];
        size_t n;
        int want[4];
    } cases[] = {
        { { 0, 2 }, 2, { 1, 0, 1, 0 } },
        { { 3, 3, 1, 7, -1 }, 5, { 0, 1, 0, 1 } },   /* a repeat once, out of range ignored */
        { { 0, 1, 2, 3 }, 4, { 1, 1, 1, 1 } },
        { { 0 }, 0, { 0, 0, 0, 0 } },                /* none */
    };
    void (*const fns[4])(void *) = { hit0, hit1, hit2, hit3 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            weft_graph *g = new_graph();
            struct mc m = { 0 };
            memcpy(m.picks, cases[c].picks, sizeof m.picks);
            m.npicks = cases[c].n;
            weft_task *t = weft_graph_add_multi_cond(g, mc_fn, &m);
            WT_ASSERT(t != NULL);
            for (int i = 0; i < 4; i++)
                WT_ASSERT_EQ(weft_task_precede(t, add(g, fns[i], &m)), WEFT_OK);
            run_wait(s, g, "multi");
            WT_ASSERT_EQ(m.cap_seen, 4u);
            for (int i = 0; i < 4; i++)
                WT_ASSERT(atomic_load(&m.hit[i]) == cases[c].want[i], "case %zu successor %d ran %d times", c,
                          i, atomic_load(&m.hit[i]));
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        WT_ASSERT(weft_graph_add_multi_cond(NULL, mc_fn, NULL) == NULL);
        close_sched(s, w);
    }
}

/* A multi-condition loop: M picks {body_a, body_b} while iterations are
 * left, then {done}; body_a and body_b join in J, which goes back to M.
 * body_a waits for body_b's event: picked successors block on each other. */
struct mloop {
    int left;
    atomic_int a, b, done;
    weft_event ev;
};

static size_t mloop_fn(void *arg, int *picks, size_t cap)
{
    struct mloop *l = arg;
    if (cap != 3)
        atomic_fetch_add(&bad, 1);
    if (l->left-- > 0) {
        picks[0] = 0;
        picks[1] = 1;
        return 2;
    }
    picks[0] = 2;
    return 1;
}

static void mloop_a(void *arg)
{
    struct mloop *l = arg;
    if (weft_event_wait(&l->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&l->a, 1);
}

static void mloop_b(void *arg)
{
    struct mloop *l = arg;
    atomic_fetch_add(&l->b, 1);
    weft_event_signal(&l->ev);   /* auto-reset: one waiter per iteration */
}

static int back(void *arg)
{
    (void)arg;
    return 0;
}

WT_TEST(gaps, multi_loop_with_blocking_bodies, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct mloop l = { 0 };
        weft_event_init(&l.ev, false, false);
        weft_task *start = add(g, NULL, NULL);
        weft_task *m = weft_graph_add_multi_cond(g, mloop_fn, &l);
        weft_task *a = add(g, mloop_a, &l), *b = add(g, mloop_b, &l);
        weft_task *done = add(g, inc, &l.done);
        weft_task *j = weft_graph_add_cond(g, back, NULL);
        WT_ASSERT(m && j);
        WT_ASSERT_EQ(weft_task_precede(start, m), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, a), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, done), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(a, j), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, j), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(j, m), WEFT_OK);
        for (int r = 0; r < 3; r++) {
            l.left = 200;
            atomic_store(&l.a, 0);
            atomic_store(&l.b, 0);
            atomic_store(&l.done, 0);
            run_wait(s, g, "multi loop");
            WT_ASSERT_EQ(atomic_load(&l.a), 200);
            WT_ASSERT_EQ(atomic_load(&l.b), 200);
            WT_ASSERT_EQ(atomic_load(&l.done), 1);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        weft_event_destroy(&l.ev);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

static size_t mc_fail(void *arg, int *picks, size_t cap)
{
    (void)arg;
    picks[0] = 0;
    if (cap != 1 || weft_task_fail(5) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    return 1;
}

WT_TEST(gaps, multi_failing_picks_none, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        weft_task *m = weft_graph_add_multi_cond(g, mc_fail, NULL);
        WT_ASSERT_EQ(weft_task_precede(m, add(g, inc, &n)), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
        WT_ASSERT_EQ(weft_graph_fail_code(g), 5);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- a condition's self-edge ----------------------------------------------------------- */

struct selfl {
    int left, iters;
    atomic_int after;
};

static int self_fn(void *arg)
{
    struct selfl *l = arg;
    l->iters++;
    return l->left-- > 0 ? 0 : 1;   /* 0: itself again; 1: C */
}

WT_TEST(gaps, self_edge_loops_a_condition, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct selfl l = { 0 };
        weft_task *a = add(g, NULL, NULL);
        weft_task *b = weft_graph_add_cond(g, self_fn, &l);
        weft_task *c = add(g, inc, &l.after);
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(b, b), WEFT_OK);   /* B.precede(B, C) */
        WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
        weft_task *succ[2];
        WT_ASSERT_EQ(weft_task_successors(b, succ, 2), 2u);
        WT_ASSERT(succ[0] == b && succ[1] == c);
        for (int r = 0; r < 3; r++) {
            l.left = 1000;
            l.iters = 0;
            atomic_store(&l.after, 0);
            run_wait(s, g, "self loop");
            WT_ASSERT_EQ(l.iters, 1001);
            WT_ASSERT_EQ(atomic_load(&l.after), 1);
        }
        /* A plain task's self-edge is a cycle: refused, nothing changed. */
        WT_ASSERT_EQ(weft_task_precede(a, a), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_successors(a, NULL, 0), 1u);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- queued runs -------------------------------------------------------------------------- */

struct qr {
    weft_sched *s;
    weft_graph *g;
    atomic_int runs;
    atomic_int in_flight, overlap;
    weft_event gate;
    atomic_int gated;
    int per_thread;
};

static void qr_task(void *arg)
{
    struct qr *q = arg;
    if (atomic_fetch_add(&q->in_flight, 1) != 0)
        atomic_fetch_add(&q->overlap, 1);   /* two runs of one graph at once */
    if (atomic_exchange(&q->gated, 0))
        weft_event_wait(&q->gate);   /* the first run holds until every request is in */
    atomic_fetch_add(&q->runs, 1);
    atomic_fetch_sub(&q->in_flight, 1);
}

static void *qr_thread(void *arg)
{
    struct qr *q = arg;
    for (int i = 0; i < q->per_thread; i++)
        if (weft_graph_run_queued(q->s, q->g) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    return NULL;
}

WT_TEST(gaps, queued_runs_from_several_threads, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {   /* 0 workers: the requesting threads are not bound */
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct qr q = { .s = s, .g = g, .per_thread = 50 };
        weft_event_init(&q.gate, false, false);
        atomic_store(&q.gated, 1);
        add(g, qr_task, &q);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EBUSY);   /* run keeps EBUSY */
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(pthread_create(&th[i], NULL, qr_thread, &q), 0);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        weft_event_signal(&q.gate);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&q.runs), 1 + 4 * 50);
        WT_ASSERT_EQ(atomic_load(&q.overlap), 0);
        WT_ASSERT(weft_graph_done(g));
        /* Idle: a queued run starts at once. */
        WT_ASSERT_EQ(weft_graph_run_queued(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&q.runs), 2 + 4 * 50);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        weft_event_destroy(&q.gate);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(gaps, queued_runs_dropped_by_cancel_and_failure, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct qr q = { .s = s, .g = g };
        weft_event_init(&q.gate, false, false);
        atomic_store(&q.gated, 1);
        add(g, qr_task, &q);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(weft_graph_run_queued(s, g), WEFT_OK);
        while (atomic_load(&q.in_flight) == 0)
            sched_yield();   /* the task has started: the cancel skips nothing of this run */
        WT_ASSERT(weft_graph_cancel(g));
        weft_event_signal(&q.gate);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* the run's one task had started: nothing skipped */
        WT_ASSERT(atomic_load(&q.runs) == 1, "the queued runs were dropped: %d runs", atomic_load(&q.runs));
        /* Another scheduler while it runs: refused. */
        atomic_store(&q.gated, 1);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        weft_sched *s2 = make_sched(1);
        WT_ASSERT_EQ(weft_graph_run_queued(s2, g), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_queued(NULL, g), WEFT_EINVAL);
        weft_event_signal(&q.gate);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s2), WEFT_OK);
        weft_event_destroy(&q.gate);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- run_while ------------------------------------------------------------------------------ */

static bool countdown(void *ctx)
{
    int *left = ctx;
    return (*left)-- > 0;
}

static bool never(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
    return false;
}

WT_TEST(gaps, while_asks_first, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        atomic_int n = 0, asked = 0;
        add(g, inc, &n);
        WT_ASSERT_EQ(weft_graph_run_while(s, g, never, &asked), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT(atomic_load(&n) == 0, "pred false first: 0 runs");
        WT_ASSERT_EQ(atomic_load(&asked), 1);
        int left = 7;
        WT_ASSERT_EQ(weft_graph_run_while(s, g, countdown, &left), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 7);
        /* run_until runs first, then asks: once even when pred is true. */
        atomic_store(&n, 0);
        WT_ASSERT_EQ(weft_graph_run_until(s, g, countdown, &(int){ 5 }), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 1);
        WT_ASSERT_EQ(weft_graph_run_while(s, g, NULL, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_while(NULL, g, never, &asked), WEFT_EINVAL);
        WT_ASSERT(atomic_load(&asked) == 1, "refused before asking");
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Queueing, cancelling and waiting from several threads at once: every
 * call returns, every wait ends, runs never overlap, and once all is
 * quiet the graph is idle and can be destroyed. */
struct qc {
    weft_sched *s;
    weft_graph *g;
    atomic_int in_flight, overlap, runs, stop;
};

static void qc_task(void *arg)
{
    struct qc *q = arg;
    if (atomic_fetch_add(&q->in_flight, 1) != 0)
        atomic_fetch_add(&q->overlap, 1);
    for (volatile int i = 0; i < 200; i++)
        ;
    atomic_fetch_add(&q->runs, 1);
    atomic_fetch_sub(&q->in_flight, 1);
}

static void *qc_queuer(void *arg)
{
    struct qc *q = arg;
    for (int i = 0; i < 300; i++) {
        int rc = weft_graph_run_queued(q->s, q->g);
        if (rc != WEFT_OK)
            atomic_fetch_add(&bad, 1);
        if (i % 7 == 0) {
            rc = weft_graph_wait(q->g);
            if (rc != WEFT_OK && rc != WEFT_ECANCELED)
                atomic_fetch_add(&bad, 1);
        }
    }
    return NULL;
}

static void *qc_canceller(void *arg)
{
    struct qc *q = arg;
    while (!atomic_load(&q->stop)) {
        weft_graph_cancel(q->g);
        sched_yield();
    }
    return NULL;
}

WT_TEST(gaps, queued_runs_race_cancels_and_waits, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct qc q = { .s = s, .g = g };
        weft_task *a = add(g, qc_task, &q), *b = add(g, qc_task, &q);
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        pthread_t th[4];
        for (int i = 0; i < 3; i++)
            WT_ASSERT_EQ(pthread_create(&th[i], NULL, qc_queuer, &q), 0);
        WT_ASSERT_EQ(pthread_create(&th[3], NULL, qc_canceller, &q), 0);
        for (int i = 0; i < 3; i++)
            pthread_join(th[i], NULL);
        atomic_store(&q.stop, 1);
        pthread_join(th[3], NULL);
        int rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_OK || rc == WEFT_ECANCELED, "wait: %s", weft_err_name(rc));
        WT_ASSERT(weft_graph_done(g));
        WT_ASSERT_EQ(atomic_load(&q.overlap), 0);
        WT_ASSERT(atomic_load(&q.runs) <= 2 * 900);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}
