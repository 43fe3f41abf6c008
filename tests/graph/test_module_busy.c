/* Graph modules (issue 21), held to what weft.h promises for
 * weft_graph_add_module and to nothing else: the tests use the public API
 * only, and run at 0 workers (this thread bound), 1, 2 and 8 workers
 * where it applies.
 *
 *   busy_*          a sub running elsewhere fails the module with EBUSY;
 *                   two modules of one sub; waiting for an outer graph
 *                   from inside its sub
 *   block_*         tasks of a sub and of its parent block on each other
 *                   in a valid order; a nested run from inside a sub
 *   wait_for_the_sub_*  waiting for the sub from outside while it runs as
 *                   a module
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

/* ==== busy: a sub runs once at a time ======================================== */

struct busy {
    weft_sched *s;
    weft_graph *sub;
    atomic_int in, n;
    weft_event go;
    int wait_rc;
};

static void busy_blocker(void *arg)
{
    struct busy *b = arg;
    atomic_fetch_add(&b->n, 1);
    atomic_store(&b->in, 1);
    if (weft_event_wait(&b->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void *busy_thread(void *arg)
{
    struct busy *b = arg;
    if (weft_graph_run(b->s, b->sub) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    b->wait_rc = weft_graph_wait(b->sub);
    return NULL;
}

/* The sub runs on its own (started by another thread, or by this bound
 * thread with no workers) and blocks; the outer run reaches its module
 * task: FAILED with EBUSY, the dependents skipped, the outer wait EBUSY. */
WT_TEST(module, busy_sub_running_elsewhere_fails_the_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct busy b = { .s = s };
        weft_event_init(&b.go, true, false);
        atomic_int n_dep = 0, n_ind = 0;
        b.sub = new_graph();
        weft_task *bt = add(b.sub, busy_blocker, &b);
        edge(bt, add(b.sub, count, &b.n));
        weft_graph *o = new_graph();
        weft_task *m = add_mod(o, b.sub);
        edge(m, add(o, count, &n_dep));
        add(o, count, &n_ind);
        pthread_t th;
        if (w > 0) {
            WT_ASSERT_EQ(pthread_create(&th, NULL, busy_thread, &b), 0);
            while (!atomic_load(&b.in))
                sched_yield();
        } else {
            WT_ASSERT_EQ(weft_graph_run(s, b.sub), WEFT_OK);
        }
        run_wait_rc(s, o, WEFT_EBUSY, "sub busy elsewhere");   /* weft's own code */
        WT_ASSERT_EQ(weft_graph_fail_code(o), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
        WT_ASSERT(weft_graph_failed_task(o) == m);
        WT_ASSERT_EQ(atomic_load(&n_dep), 0);
        WT_ASSERT_EQ(atomic_load(&n_ind), 1);
        weft_event_signal(&b.go);
        if (w > 0) {
            pthread_join(th, NULL);
            WT_ASSERT_EQ(b.wait_rc, WEFT_OK);
        } else {
            WT_ASSERT_EQ(weft_graph_wait(b.sub), WEFT_OK);
        }
        WT_ASSERT_EQ(atomic_load(&b.n), 2);   /* the sub ran once, on its own */
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        /* Free again: the module runs it. */
        run_wait(s, o, "sub free again");
        WT_ASSERT_EQ(atomic_load(&b.n), 4);
        WT_ASSERT_EQ(atomic_load(&n_dep), 1);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(b.sub), WEFT_OK);
        weft_event_destroy(&b.go);
    }
}

/* Two modules of one sub in one graph, both roots: the sub's first task
 * waits until the other module task has been reached, so they overlap:
 * one of them fails with EBUSY, the other runs the sub once. With an
 * edge between them both run it. */
struct overlap {
    weft_task *m[2];
    atomic_int n;
};

static bool other_failed(void *ctx)
{
    struct overlap *ov = ctx;
    return weft_task_state(ov->m[0]) == WEFT_TASK_FAILED ||
           weft_task_state(ov->m[1]) == WEFT_TASK_FAILED;
}

static void overlap_task(void *arg)
{
    struct overlap *ov = arg;
    atomic_fetch_add(&ov->n, 1);
    if (weft_wait_until(other_failed, ov) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(module, busy_two_modules_of_one_sub, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct overlap ov = { 0 };
        atomic_int n = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        ov.m[0] = add_mod(o, sub);
        ov.m[1] = add_mod(o, sub);
        edge(add(sub, overlap_task, &ov), add(sub, count, &n));
        run_wait_rc(s, o, WEFT_EBUSY, "overlapping modules");
        weft_task_status s0 = weft_task_state(ov.m[0]), s1 = weft_task_state(ov.m[1]);
        WT_ASSERT((s0 == WEFT_TASK_FAILED && s1 == WEFT_TASK_DONE) ||
                  (s1 == WEFT_TASK_FAILED && s0 == WEFT_TASK_DONE), "states %d and %d", (int)s0, (int)s1);
        WT_ASSERT(weft_graph_failed_task(o) == (s0 == WEFT_TASK_FAILED ? ov.m[0] : ov.m[1]));
        WT_ASSERT_EQ(atomic_load(&ov.n), 1);
        WT_ASSERT_EQ(atomic_load(&n), 1);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
    /* Sequential (an edge): both run it, every run. */
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        weft_task *m0 = add_mod(o, sub), *m1 = add_mod(o, sub);
        edge(m0, m1);
        for (int i = 0; i < 10; i++)
            add(sub, count, &n);
        WT_ASSERT_EQ(weft_graph_run_n(s, o, 100), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(o), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 2000);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* From inside a sub (one and two levels down): waiting for an outer
 * graph is EBUSY at once; building the sub, destroying it, or setting
 * its fail-fast is EBUSY (its run is in flight); waiting for an
 * unrelated idle graph is OK. */
struct inside {
    weft_graph *outer[2], *self, *idle;
    atomic_int rc_outer[2], rc_add, rc_destroy, rc_ff, rc_idle, ran;
};

static void inside_task(void *arg)
{
    struct inside *in = arg;
    for (int i = 0; i < 2; i++)
        if (in->outer[i])
            atomic_store(&in->rc_outer[i], weft_graph_wait(in->outer[i]));
    weft_task *t = NULL;
    atomic_store(&in->rc_add, weft_graph_add_task(in->self, NULL, NULL, &t));
    atomic_store(&in->rc_destroy, weft_graph_destroy(in->self));
    atomic_store(&in->rc_ff, weft_graph_set_fail_fast(in->self, true));
    atomic_store(&in->rc_idle, weft_graph_wait(in->idle));
    atomic_fetch_add(&in->ran, 1);
}

WT_TEST(module, busy_waiting_for_the_outer_graph_from_inside, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *o = new_graph(), *a = new_graph(), *sub = new_graph(), *idle = new_graph();
        struct inside in = { .outer = { o, a }, .self = sub, .idle = idle };
        add(idle, NULL, NULL);
        add_mod(o, a);
        add_mod(a, sub);
        weft_task *it = add(sub, inside_task, &in);
        run_wait(s, o, "waits from inside");
        WT_ASSERT_EQ(atomic_load(&in.ran), 1);
        WT_ASSERT_EQ(atomic_load(&in.rc_outer[0]), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_outer[1]), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_add), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_destroy), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_ff), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_idle), WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(it), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_graph_size(sub), 1);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(a), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(idle), WEFT_OK);
    }
}

/* ==== blocking across the module edge ======================================= */

struct xb {
    weft_event to_sub, to_outer;
    weft_sched *s;
    weft_graph *third;
    atomic_int sub_got, outer_got, third_n, nested_rc;
};

static void xb_set_for_sub(void *arg)
{
    weft_event_signal(&((struct xb *)arg)->to_sub);
}

static void xb_sub_waits(void *arg)
{
    struct xb *x = arg;
    if (weft_event_wait(&x->to_sub) == WEFT_OK)
        atomic_fetch_add(&x->sub_got, 1);
}

static void xb_sub_sets(void *arg)
{
    weft_event_signal(&((struct xb *)arg)->to_outer);
}

static void xb_outer_waits(void *arg)
{
    struct xb *x = arg;
    if (weft_event_wait(&x->to_outer) == WEFT_OK)
        atomic_fetch_add(&x->outer_got, 1);
}

/* A task of the sub runs a third graph (which has a module of its own)
 * and waits for it. */
static void xb_nested(void *arg)
{
    struct xb *x = arg;
    int rc = weft_graph_run(x->s, x->third);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(x->third);
    atomic_store(&x->nested_rc, rc);
}

/* O: outer_waits (added first), M(sub), set_for_sub, independent of each
 * other. Sub: sub_waits -> sub_sets, and nested. Whatever order the
 * workers take them in, the waits finish. */
WT_TEST(module, block_on_events_across_the_module_edge, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct xb x = { .s = s };
        weft_event_init(&x.to_sub, false, false);
        weft_event_init(&x.to_outer, false, false);
        weft_graph *o = new_graph(), *sub = new_graph(), *third = new_graph(), *fourth = new_graph();
        x.third = third;
        add(o, xb_outer_waits, &x);
        weft_task *m = add_mod(o, sub);
        weft_task *setter = add(o, xb_set_for_sub, &x);
        (void)m;
        (void)setter;
        edge(add(sub, xb_sub_waits, &x), add(sub, xb_sub_sets, &x));
        add(sub, xb_nested, &x);
        edge(add(third, count, &x.third_n), add_mod(third, fourth));
        add(fourth, count, &x.third_n);
        for (int r = 1; r <= 20; r++) {
            atomic_store(&x.nested_rc, 1);
            run_wait(s, o, "blocking across");
            WT_ASSERT_EQ(atomic_load(&x.sub_got), r);
            WT_ASSERT_EQ(atomic_load(&x.outer_got), r);
            WT_ASSERT_EQ(atomic_load(&x.nested_rc), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&x.third_n), 2 * r);
        }
        close_sched(s, w);
        weft_graph *gs[] = { o, sub, third, fourth };
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_graph_destroy(gs[i]), WEFT_OK);
        weft_event_destroy(&x.to_sub);
        weft_event_destroy(&x.to_outer);
    }
}

/* Waiting for the sub from outside while it runs as a module: from an
 * outer task beside the module (any worker count) and from a plain thread
 * (workers only). The wait ends with the sub's run: all its tasks ran. */
struct sw {
    weft_graph *sub;
    atomic_int in, n, waited_rc, n_at_wait;
    weft_event go;
};

static void sw_blocker(void *arg)
{
    struct sw *x = arg;
    atomic_store(&x->in, 1);
    if (weft_event_wait(&x->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&x->n, 1);
}

static void sw_count(void *arg)
{
    atomic_fetch_add(&((struct sw *)arg)->n, 1);
}

static void sw_waiter(void *arg)
{
    struct sw *x = arg;
    if (weft_wait_until(flag_set, &x->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_store(&x->waited_rc, weft_graph_wait(x->sub));
    atomic_store(&x->n_at_wait, atomic_load(&x->n));
}

static void sw_releaser(void *arg)
{
    struct sw *x = arg;
    if (weft_wait_until(flag_set, &x->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_yield();
    weft_event_signal(&x->go);
}

static void *sw_thread(void *arg)
{
    struct sw *x = arg;
    while (!atomic_load(&x->in))
        sched_yield();
    atomic_store(&x->waited_rc, weft_graph_wait(x->sub));
    atomic_store(&x->n_at_wait, atomic_load(&x->n));
    return NULL;
}

WT_TEST(module, wait_for_the_sub_from_outside_while_it_runs_as_a_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int from_thread = 0; from_thread < 2; from_thread++) {
            if (from_thread && w == 0)
                continue;
            weft_sched *s = open_sched(w);
            struct sw x = { 0 };
            weft_event_init(&x.go, true, false);
            weft_graph *o = new_graph();
            x.sub = new_graph();
            weft_task *b = add(x.sub, sw_blocker, &x);
            for (int i = 0; i < 5; i++)
                edge(b, add(x.sub, sw_count, &x));
            atomic_int after = 0;
            edge(add_mod(o, x.sub), add(o, count, &after));
            pthread_t th;
            if (from_thread) {
                WT_ASSERT_EQ(pthread_create(&th, NULL, sw_thread, &x), 0);
            } else {
                add(o, sw_waiter, &x);
                add(o, sw_releaser, &x);
            }
            WT_ASSERT_EQ(weft_graph_run(s, o), WEFT_OK);
            if (from_thread) {
                while (!atomic_load(&x.in))
                    sched_yield();
                usleep(20000);   /* lets the thread reach its wait (not asserted) */
                weft_event_signal(&x.go);
                pthread_join(th, NULL);
            }
            WT_ASSERT_EQ(weft_graph_wait(o), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&bad), 0);
            WT_ASSERT(atomic_load(&x.waited_rc) == WEFT_OK, "%u workers, from %s: wait(sub): %s", w,
                      from_thread ? "thread" : "task", weft_err_name(atomic_load(&x.waited_rc)));
            WT_ASSERT_EQ(atomic_load(&x.n_at_wait), 6);
            WT_ASSERT_EQ(atomic_load(&after), 1);
            close_sched(s, w);
            WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(x.sub), WEFT_OK);
            weft_event_destroy(&x.go);
        }
}
