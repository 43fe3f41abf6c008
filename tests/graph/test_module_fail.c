/* Graph modules (issue 21), held to what weft.h promises for
 * weft_graph_add_module and to nothing else: the tests use the public API
 * only, and run at 0 workers (this thread bound), 1, 2 and 8 workers
 * where it applies.
 *
 *   fail_*          a failure inside a sub (depth 1 and 3) fails the
 *                   module task, reaches the outer wait (WEFT_EFAILED),
 *                   fail_code (the task's own code) and failed_task,
 *                   skips the module's dependents; fail-fast
 *   cancel_*        cancelling the outer (or the sub's) run while a sub's
 *                   task blocks; a cancelled module task starts nothing
 *
 * Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Tasks never assert (an assertion off the test's thread could
 * not report): they count what went wrong, and the test checks it.
 * module_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "module_util.h"

struct state_is {
    weft_task *t;
    weft_task_status want;
};

static bool state_reached(void *ctx)
{
    struct state_is *w = ctx;
    return weft_task_state(w->t) == w->want;
}

/* ==== failures crossing the module edge ======================================= */

#define FAIL_CODE (-4242)

static atomic_int i1_in;   /* the outer task beside the module has started */

/* Fails once i1 has started, so that i1 is running at the failure. */
static void fail_task(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    if (weft_wait_until(flag_set, &i1_in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_task_fail(FAIL_CODE) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* Waits until the outer module task reads FAILED. */
static void wait_failed(void *arg)
{
    atomic_store(&i1_in, 1);
    struct state_is w = { arg, WEFT_TASK_FAILED };
    if (weft_wait_until(state_reached, &w) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* O: r -> M -> d1 -> d2, and an independent branch i1 -> i2 where i1
 * waits until M reads FAILED. M's sub chain goes `depth` levels down to
 * S: s1 -> f (fails) -> s3, plus s_ind alone. */
static void fail_case(unsigned w, unsigned depth, bool fail_fast)
{
    weft_sched *s = open_sched(w);
    atomic_int n = 0, nf = 0, n_s = 0, n_ind = 0, n_i2 = 0, n_d = 0;
    weft_graph *o = new_graph();
    weft_graph *lv[3];
    weft_task *mod[3];
    for (unsigned i = 0; i < depth; i++)
        lv[i] = new_graph();
    weft_task *r = add(o, count, &n);
    weft_task *m = add_mod(o, lv[0]);
    weft_task *d1 = add(o, count, &n_d), *d2 = add(o, count, &n_d);
    weft_task *i1 = add(o, wait_failed, m), *i2 = add(o, count, &n_i2);
    edge(r, m);
    edge(m, d1);
    edge(d1, d2);
    edge(i1, i2);
    mod[0] = m;
    for (unsigned i = 0; i + 1 < depth; i++) {
        /* each level: a task before the module, one after, one beside */
        weft_task *pre = add(lv[i], count, &n), *mm = add_mod(lv[i], lv[i + 1]),
                  *post = add(lv[i], count, &n_d);
        add(lv[i], count, &n);
        edge(pre, mm);
        edge(mm, post);
        mod[i + 1] = mm;
    }
    weft_graph *S = lv[depth - 1];
    weft_task *s1 = add(S, count, &n_s), *f = add(S, fail_task, &nf), *s3 = add(S, count, &n_d);
    add(S, count, &n_ind);
    edge(s1, f);
    edge(f, s3);
    WT_ASSERT_EQ(weft_graph_set_fail_fast(o, fail_fast), WEFT_OK);
    char what[96];
    snprintf(what, sizeof what, "%u workers, depth %u, fail-fast %d", w, depth, (int)fail_fast);
    for (int run = 1; run <= 3; run++) {
        atomic_store(&i1_in, 0);
        run_wait_rc(s, o, WEFT_EFAILED, what);   /* a task's own code: fail_code gives it, at every level */
        WT_ASSERT_EQ(weft_graph_fail_code(o), FAIL_CODE);
        WT_ASSERT_EQ(weft_graph_fail_code(S), FAIL_CODE);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(atomic_load(&nf), run);
        WT_ASSERT_EQ(atomic_load(&n_s), run);
        WT_ASSERT_EQ(atomic_load(&n_ind), run);   /* sub's other branch, no fail-fast there */
        WT_ASSERT_EQ(atomic_load(&n_d), 0);       /* every dependent of a failure, all levels */
        WT_ASSERT(weft_graph_failed_task(o) == m, "failed_task(outer) is the module task");
        WT_ASSERT(weft_graph_failed_task(S) == f, "failed_task(sub) is the failing task");
        for (unsigned i = 0; i < depth; i++) {
            WT_ASSERT(weft_task_state(mod[i]) == WEFT_TASK_FAILED, "%s: module at depth %u: state %d", what, i,
                      (int)weft_task_state(mod[i]));
            if (i + 1 < depth)
                WT_ASSERT(weft_graph_failed_task(lv[i]) == mod[i + 1]);
        }
        WT_ASSERT_EQ(weft_task_state(f), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(s3), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d1), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d2), WEFT_TASK_SKIPPED);
        WT_ASSERT(weft_task_state(i1) == WEFT_TASK_DONE, "%s, run %d: i1 (running when the module "
                  "failed) reads %d; i2 %d", what, run, (int)weft_task_state(i1),
                  (int)weft_task_state(i2));
        if (fail_fast) {
            WT_ASSERT_EQ(weft_task_state(i2), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(atomic_load(&n_i2), 0);
        } else {
            WT_ASSERT_EQ(weft_task_state(i2), WEFT_TASK_DONE);
            WT_ASSERT_EQ(atomic_load(&n_i2), run);
        }
    }
    close_sched(s, w);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    for (unsigned i = 0; i < depth; i++)
        WT_ASSERT_EQ(weft_graph_destroy(lv[i]), WEFT_OK);
}

WT_TEST(module, fail_inside_a_sub_fails_the_module, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (unsigned depth = 1; depth <= 3; depth += 2)
            for (int ff = 0; ff < 2; ff++)
                fail_case(w, depth, ff);
}

/* A cancelled task inside a sub: the sub's run is cancelled, so the
 * module task is SKIPPED, its dependents too, and the outer wait says
 * ECANCELED; an independent branch runs. */
WT_TEST(module, cancelled_task_inside_a_sub_skips_the_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n_sub = 0, n_dep = 0, n_ind = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        weft_task *m = add_mod(o, sub);
        edge(m, add(o, count, &n_dep));
        add(o, count, &n_ind);
        weft_task *a = add(sub, count, &n_sub), *c = add(sub, count, &n_sub);
        add(sub, count, &n_sub);
        edge(a, c);
        WT_ASSERT(weft_task_cancel(c));
        run_wait_rc(s, o, WEFT_ECANCELED, "a cancelled task inside");
        WT_ASSERT_EQ(atomic_load(&n_sub), 2);
        WT_ASSERT_EQ(atomic_load(&n_dep), 0);
        WT_ASSERT_EQ(atomic_load(&n_ind), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT(weft_graph_failed_task(o) == NULL);
        weft_task_reset(c);
        run_wait(s, o, "after the reset");
        WT_ASSERT_EQ(atomic_load(&n_sub), 5);
        WT_ASSERT_EQ(atomic_load(&n_dep), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* ==== cancelling across the module edge ===================================== */

struct cx {
    weft_graph *cancel_me;     /* the graph the canceller cancels */
    atomic_int in;             /* the sub's blocker has started */
    weft_event go;             /* lets the blocker finish */
    atomic_int cancel_rc;      /* 1 if weft_graph_cancel said true */
    atomic_int blocked_runs, after;
};

static void cx_blocker(void *arg)
{
    struct cx *c = arg;
    atomic_fetch_add(&c->blocked_runs, 1);
    atomic_store(&c->in, 1);
    if (weft_event_wait(&c->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* An outer task beside the module: waits for the blocker, cancels, lets
 * the blocker go. */
static void cx_canceller(void *arg)
{
    struct cx *c = arg;
    if (weft_wait_until(flag_set, &c->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_store(&c->cancel_rc, weft_graph_cancel(c->cancel_me));
    weft_event_signal(&c->go);
}

static void cx_after(void *arg)
{
    atomic_fetch_add(&((struct cx *)arg)->after, 1);
}

/* O: M -> d; canceller beside. Sub: b (blocks) -> x -> y, and z after
 * b too. Cancelling O (or the sub) while b blocks skips x, y, z, M and d.
 * cancel_sub: weft_graph_cancel(sub) instead of O. from_thread: the test
 * thread cancels instead of a task (workers only). */
static void cancel_case(unsigned w, bool cancel_sub, bool from_thread)
{
    weft_sched *s = open_sched(w);
    struct cx c = { 0 };
    weft_event_init(&c.go, true, false);
    weft_graph *o = new_graph(), *sub = new_graph();
    c.cancel_me = cancel_sub ? sub : o;
    weft_task *m = add_mod(o, sub);
    weft_task *d = add(o, cx_after, &c);
    edge(m, d);
    if (!from_thread)
        add(o, cx_canceller, &c);
    weft_task *b = add(sub, cx_blocker, &c);
    weft_task *x = add(sub, cx_after, &c), *y = add(sub, cx_after, &c), *z = add(sub, cx_after, &c);
    edge(b, x);
    edge(x, y);
    edge(b, z);
    WT_ASSERT_EQ(weft_graph_run(s, o), WEFT_OK);
    if (from_thread) {
        while (!atomic_load(&c.in))
            sched_yield();
        atomic_store(&c.cancel_rc, weft_graph_cancel(c.cancel_me));
        weft_event_signal(&c.go);
    }
    int rc = weft_graph_wait(o);
    WT_ASSERT(rc == WEFT_ECANCELED, "%u workers, cancel %s from %s: wait: %s", w,
              cancel_sub ? "sub" : "outer", from_thread ? "thread" : "task", weft_err_name(rc));
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    WT_ASSERT_EQ(atomic_load(&c.cancel_rc), 1);
    WT_ASSERT_EQ(atomic_load(&c.blocked_runs), 1);
    WT_ASSERT_EQ(atomic_load(&c.after), 0);
    WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(x), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(y), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(z), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
    /* Later runs are not affected (the canceller task cancels again, so
     * only the thread variant can check a clean run). */
    if (from_thread) {
        weft_event_signal(&c.go);
        run_wait(s, o, "after the cancel");
        WT_ASSERT_EQ(atomic_load(&c.after), 4);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
    }
    close_sched(s, w);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    weft_event_destroy(&c.go);
}

WT_TEST(module, cancel_while_a_sub_task_blocks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int cs = 0; cs < 2; cs++) {
            cancel_case(w, cs, false);
            if (w > 0)
                cancel_case(w, cs, true);
        }
}

/* A module task cancelled before the run: the sub does not start at all
 * (none of its tasks reached: PENDING), the module is SKIPPED. */
WT_TEST(module, cancelled_module_task_does_not_start_its_sub, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n_sub = 0, n_o = 0;
        weft_graph *o = new_graph(), *sub = new_graph(), *deep = new_graph();
        weft_task *pre = add(o, count, &n_o);
        weft_task *m = add_mod(o, sub);
        weft_task *post = add(o, count, &n_o);
        edge(pre, m);
        edge(m, post);
        weft_task *st = add(sub, count, &n_sub);
        weft_task *dm = add_mod(sub, deep);
        weft_task *dt = add(deep, count, &n_sub);
        WT_ASSERT(weft_task_cancel(m));
        run_wait_rc(s, o, WEFT_ECANCELED, "cancelled module");
        WT_ASSERT_EQ(atomic_load(&n_sub), 0);
        WT_ASSERT_EQ(atomic_load(&n_o), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(post), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(st), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(dm), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(dt), WEFT_TASK_PENDING);
        /* The sub is free: it runs on its own. */
        run_wait(s, sub, "the sub alone");
        WT_ASSERT_EQ(atomic_load(&n_sub), 2);
        weft_task_reset(m);
        run_wait(s, o, "after the reset");
        WT_ASSERT_EQ(atomic_load(&n_sub), 4);
        WT_ASSERT_EQ(atomic_load(&n_o), 3);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(deep), WEFT_OK);
    }
}
