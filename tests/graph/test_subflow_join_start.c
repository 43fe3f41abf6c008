/* weft_subflow_join's start in one hold of the sub-graph's lock (issue
 * 35, the recursive subflow fib row): what weft/graph.h promises of the
 * join, for every shape that start takes or leaves to weft_graph_run's
 * way; public API only.
 *
 *   cycle_*    a joined sub-graph with a cycle: the join returns ECYCLE
 *              and runs nothing; so does the run at fn's return, which
 *              fails the task with weft's code
 *   cond_*     a condition task in a joined sub-graph: only its pick
 *              runs, at every join of a loop of joins in one fn
 *   prio_*     a HIGH task among a joined sub-graph's roots (tasks with
 *              attributes): all run, the join returns OK
 *   twice_*    two joins in one fn, the second sub-graph's tasks
 *              blocking on each other (an event set by a task added
 *              after its waiter, no edge between them), then tasks that
 *              run when fn returns
 *   fail_*     weft_task_fail in a joined sub-graph: the join returns
 *              EFAILED, the task and the run fail with the code
 *   cancel_*   the outer run cancelled from outside while a joined
 *              sub-graph's task blocks: the join returns ECANCELED, the
 *              task after it is skipped, the next run is whole
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers
 * (cancel: 1, 2, 8, as test_subflow.c's). A task never asserts: it
 * counts what went wrong in `bad`, which the test checks. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* ---- cycle: the check refuses the join's run -------------------------------------- */

struct cyc {
    atomic_int ran;
    int join_rc;
};

static void cyc_fn(weft_subflow *sf, void *arg)
{
    struct cyc *c = arg;
    weft_task *a = weft_subflow_add(sf, count, &c->ran);
    weft_task *b = weft_subflow_add(sf, count, &c->ran);
    weft_task *d = weft_subflow_add(sf, count, &c->ran);
    if (!a || !b || !d || weft_task_precede(a, b) != WEFT_OK || weft_task_precede(b, d) != WEFT_OK ||
        weft_task_precede(d, b) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    c->join_rc = weft_subflow_join(sf);
}

WT_TEST(subflow_join_start, cycle_refused, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct cyc c = { 0 };
        weft_task *t = weft_graph_add_subflow(g, cyc_fn, &c);
        WT_ASSERT(t != NULL);
        for (int r = 0; r < 3; r++) {
            c.join_rc = 0;
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECYCLE);
            WT_ASSERT_EQ(c.join_rc, WEFT_ECYCLE);
            WT_ASSERT_EQ(atomic_load(&c.ran), 0);
            WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_FAILED);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- cond: a condition task in a joined sub-graph ----------------------------------- */

#define COND_JOINS 5

struct cnd {
    atomic_int left, right;
    int k;
};

static int cnd_pick(void *arg)
{
    return ((struct cnd *)arg)->k & 1;
}

static void cnd_fn(weft_subflow *sf, void *arg)
{
    struct cnd *c = arg;
    for (c->k = 0; c->k < COND_JOINS; c->k++) {
        weft_task *q = weft_subflow_add_cond(sf, cnd_pick, c);
        weft_task *l = weft_subflow_add(sf, count, &c->left);
        weft_task *r = weft_subflow_add(sf, count, &c->right);
        if (!q || !l || !r || weft_task_precede(q, l) != WEFT_OK || weft_task_precede(q, r) != WEFT_OK ||
            weft_subflow_join(sf) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
}

WT_TEST(subflow_join_start, cond_picks, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct cnd c = { 0 };
        WT_ASSERT(weft_graph_add_subflow(g, cnd_fn, &c) != NULL);
        for (int r = 1; r <= 3; r++) {
            run_wait(s, g, "cond");
            WT_ASSERT_EQ(atomic_load(&c.left), r * ((COND_JOINS + 1) / 2));
            WT_ASSERT_EQ(atomic_load(&c.right), r * (COND_JOINS / 2));
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- prio: a HIGH root in a joined sub-graph ---------------------------------------- */

struct pri {
    atomic_int ran;
};

static void pri_fn(weft_subflow *sf, void *arg)
{
    struct pri *p = arg;
    for (int i = 0; i < 6; i++) {
        weft_task *t = weft_subflow_add(sf, count, &p->ran);
        if (!t) {
            atomic_fetch_add(&bad, 1);
            return;
        }
        if (i == 3)
            weft_task_set_priority(t, WEFT_PRIORITY_HIGH);
    }
    if (weft_subflow_join(sf) != WEFT_OK || atomic_load(&p->ran) % 6 != 0)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow_join_start, high_root, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct pri p = { 0 };
        WT_ASSERT(weft_graph_add_subflow(g, pri_fn, &p) != NULL);
        for (int r = 1; r <= 3; r++) {
            run_wait(s, g, "prio");
            WT_ASSERT_EQ(atomic_load(&p.ran), 6 * r);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- twice: two joins, blocking tasks in the second -------------------------------- */

struct twc {
    weft_event ev;
    atomic_int first, waited, set, last;
};

static void twc_wait(void *arg)
{
    struct twc *t = arg;
    if (weft_event_wait(&t->ev) != WEFT_OK || atomic_load(&t->set) != 1)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&t->waited, 1);
}

static void twc_set(void *arg)
{
    struct twc *t = arg;
    atomic_store(&t->set, 1);
    weft_event_signal(&t->ev);
}

static void twc_fn(weft_subflow *sf, void *arg)
{
    struct twc *t = arg;
    /* The first join: three independent tasks. */
    for (int i = 0; i < 3; i++)
        if (!weft_subflow_add(sf, count, &t->first))
            atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_OK || atomic_load(&t->first) != 3)
        atomic_fetch_add(&bad, 1);
    /* The second: two waiters added before the task that sets their
     * event, no edge between them (a valid order: the setter needs
     * nothing). */
    if (!weft_subflow_add(sf, twc_wait, t) || !weft_subflow_add(sf, twc_wait, t) ||
        !weft_subflow_add(sf, twc_set, t))
        atomic_fetch_add(&bad, 1);
    if (weft_subflow_join(sf) != WEFT_OK || atomic_load(&t->waited) != 2)
        atomic_fetch_add(&bad, 1);
    /* Tasks after the joins: they run when fn returns. */
    if (!weft_subflow_add(sf, count, &t->last))
        atomic_fetch_add(&bad, 1);
}

WT_TEST(subflow_join_start, twice_blocking, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct twc t;
        memset(&t, 0, sizeof t);
        weft_task *sf = weft_graph_add_subflow(g, twc_fn, &t);
        atomic_int after = 0;
        weft_task *a = add(g, count, &after);
        WT_ASSERT_EQ(weft_task_precede(sf, a), WEFT_OK);
        for (int r = 1; r <= 10; r++) {
            weft_event_init(&t.ev, true, false);   /* manual reset: both waiters go */
            atomic_store(&t.first, 0);
            atomic_store(&t.waited, 0);
            atomic_store(&t.set, 0);
            run_wait(s, g, "twice");
            WT_ASSERT_EQ(atomic_load(&t.last), r);
            WT_ASSERT_EQ(atomic_load(&after), r);
            weft_event_destroy(&t.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- fail: a joined sub-graph's task fails ------------------------------------------ */

#define FAIL_CODE 4242

struct fl {
    int join_rc;
    atomic_int after;
};

static void fl_fail(void *arg)
{
    (void)arg;
    (void)weft_task_fail(FAIL_CODE);
}

static void fl_fn(weft_subflow *sf, void *arg)
{
    struct fl *f = arg;
    weft_task *x = weft_subflow_add(sf, fl_fail, NULL);
    weft_task *y = weft_subflow_add(sf, count, &f->after);
    if (!x || !y || weft_task_precede(x, y) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    f->join_rc = weft_subflow_join(sf);
}

WT_TEST(subflow_join_start, fail_crosses, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct fl f = { 0 };
        weft_task *t = weft_graph_add_subflow(g, fl_fn, &f);
        WT_ASSERT(t != NULL);
        for (int r = 0; r < 3; r++) {
            f.join_rc = 0;
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
            WT_ASSERT_EQ(f.join_rc, WEFT_EFAILED);
            WT_ASSERT_EQ(weft_graph_fail_code(g), FAIL_CODE);
            WT_ASSERT(weft_graph_failed_task(g) == t);
            WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_FAILED);
            WT_ASSERT_EQ(atomic_load(&f.after), 0);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* ---- cancel: from outside, while a joined task blocks ------------------------------ */

struct cx {
    weft_event go;
    atomic_int started, later, after;
    int join_rc;
};

static void cx_block(void *arg)
{
    struct cx *c = arg;
    atomic_store(&c->started, 1);
    if (weft_event_wait(&c->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void cx_fn(weft_subflow *sf, void *arg)
{
    struct cx *c = arg;
    weft_task *b = weft_subflow_add(sf, cx_block, c);
    weft_task *l = weft_subflow_add(sf, count, &c->later);
    if (!b || !l || weft_task_precede(b, l) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    c->join_rc = weft_subflow_join(sf);
}

WT_TEST(subflow_join_start, cancel_from_outside, .timeout = 60)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {   /* 0 workers: this thread would have to run the tasks while it polls */
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct cx c;
        memset(&c, 0, sizeof c);
        weft_event_init(&c.go, true, false);   /* manual reset: stays set for the next run */
        weft_task *t = weft_graph_add_subflow(g, cx_fn, &c);
        weft_task *after = add(g, count, &c.after);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        while (!atomic_load(&c.started))
            sched_yield();
        WT_ASSERT(weft_graph_cancel(g));
        weft_event_signal(&c.go);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
        WT_ASSERT_EQ(c.join_rc, WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&c.later), 0);
        WT_ASSERT_EQ(atomic_load(&c.after), 0);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        /* The next run is whole. */
        atomic_store(&c.started, 0);
        run_wait(s, g, "after cancel");   /* go is still set: the blocking task goes through */
        WT_ASSERT_EQ(c.join_rc, WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&c.later), 1);
        WT_ASSERT_EQ(atomic_load(&c.after), 1);
        weft_event_destroy(&c.go);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}
