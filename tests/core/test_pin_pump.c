/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it. This file: the pumps:
 * weft_pinned_run (counts, order, budget, who may call it) and
 * weft_pinned_wait_for, and unbind running what is pinned first.
 *
 * Runs at 0 (the test thread bound, no workers), 1, 2 and 8 workers,
 * WEFT_BIND_NO_HELP at 1, 2 and 8 (with no workers, who would run
 * unpinned tasks beside a NO_HELP thread is not documented). Sizes follow
 * WEFT_STRESS_SCALE. The volume tests (10^5 pins from every kind of
 * thread, a 1000-frame loop, pins racing unbind, bind churn) are in
 * tests/stress/stress_pin.c.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into atomics that the test thread checks.
 * pin_util.h has the helpers the test_pin_*.c files share. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "sched_util.h"
#include "wtest.h"
#include "../graph/graph_util.h"
#include "pin_util.h"

/* ---- weft_pinned_run ---------------------------------------------------- */

struct orderlog {
    atomic_int n;
    int seq[512];
    atomic_int on[512];
    int bound_id;
    atomic_int wrong;
};

struct otask {
    struct orderlog *log;
    int id;
    uint64_t sleep_ns;   /* a thread sleep (not weft's): to overrun a budget */
};

static void ordered(void *arg)
{
    struct otask *t = arg;
    if (t->sleep_ns)
        nap_ns(t->sleep_ns);
    int k = atomic_fetch_add(&t->log->n, 1);
    if (k < 512)
        t->log->seq[k] = t->id;
    if (weft_thread_id() != t->log->bound_id)
        atomic_fetch_add(&t->log->wrong, 1);
}

struct opin {
    weft_sched *s;
    struct otask *tasks;
    int lo, hi, thread;
    atomic_int refused;
};

static void *opin_thread(void *arg)
{
    struct opin *p = arg;
    for (int i = p->lo; i < p->hi; i++) {
        weft_spawn_opts o = { .pinned = true, .thread = p->thread,
                              .priority = i % 2 ? WEFT_PRIORITY_LOW : WEFT_PRIORITY_NORMAL,
                              .name = "ordered" };
        if (weft_spawn_ex(p->s, ordered, &p->tasks[i], &o) != WEFT_OK)
            atomic_fetch_add(&p->refused, 1);
    }
    return NULL;
}

WT_TEST(pin, run_pinned_counts_in_pin_order, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "run_pinned_counts_in_pin_order at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct orderlog log;
        static struct otask tasks[200];
        memset(&log, 0, sizeof log);
        log.bound_id = bind_as(s, cfgs[k].flags);
        for (int i = 0; i < 200; i++)
            tasks[i] = (struct otask){ &log, i, 0 };
        /* 100 from this thread, then 100 from a plain thread: NORMAL and
         * LOW alternate (LOW counts as NORMAL for pinned tasks). */
        struct opin mine = { .s = s, .tasks = tasks, .lo = 0, .hi = 100, .thread = log.bound_id };
        opin_thread(&mine);
        struct opin other = { .s = s, .tasks = tasks, .lo = 100, .hi = 200, .thread = log.bound_id };
        join_thread(start_thread(opin_thread, &other));
        WT_ASSERT(atomic_load(&mine.refused) + atomic_load(&other.refused) == 0,
                  "%d pins to the bound thread refused", atomic_load(&mine.refused) + atomic_load(&other.refused));
        WT_ASSERT(atomic_load(&log.n) == 0, "%d pinned tasks ran before the thread pumped",
                  atomic_load(&log.n));
        int ran = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(ran == 200, "weft_pinned_run returned %d (%s), want 200", ran, ran < 0 ? weft_err_name(ran) : "");
        WT_ASSERT_EQ(atomic_load(&log.n), 200);
        WT_ASSERT_EQ(atomic_load(&log.wrong), 0);
        for (int i = 0; i < 200; i++)
            WT_ASSERT(log.seq[i] == i, "pinned task %d ran %d-th: not in pin order", log.seq[i], i);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 0);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* The clock is checked between tasks: a first task that sleeps 3 ms
 * overruns a 1 ms budget, so exactly one runs and the rest stay queued
 * for the next call. */
WT_TEST(pin, run_pinned_budget, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        weft_sched *s = make_sched(W);
        static struct orderlog log;
        static struct otask tasks[5];
        memset(&log, 0, sizeof log);
        log.bound_id = bind_as(s, cfgs[k].flags);
        for (int i = 0; i < 5; i++) {
            tasks[i] = (struct otask){ &log, i, i == 0 ? 3 * MS : 0 };
            WT_ASSERT_EQ(spawn_pinned(s, ordered, &tasks[i], log.bound_id), WEFT_OK);
        }
        int ran = weft_pinned_run(1 * MS);
        WT_ASSERT(ran == 1, "budget 1 ms, first task 3 ms: ran %d, want 1 (%u workers, %s)", ran, W,
                  flag_name(cfgs[k].flags));
        WT_ASSERT_EQ(atomic_load(&log.n), 1);
        WT_ASSERT_EQ(log.seq[0], 0);
        /* Queued: wait_pinned says so at once and runs nothing. */
        WT_ASSERT_EQ(weft_pinned_wait_for(UINT64_MAX), 0);
        WT_ASSERT_EQ(atomic_load(&log.n), 1);
        ran = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(ran == 4, "the second call ran %d, want the other 4", ran);
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(log.seq[i], i);
        WT_ASSERT_EQ(atomic_load(&log.wrong), 0);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

struct where_rc { atomic_int rc_run, rc_wait, id, done; };

static void call_pumps(void *arg)
{
    struct where_rc *w = arg;
    atomic_store(&w->id, weft_thread_id());
    atomic_store(&w->rc_run, weft_pinned_run(UINT64_MAX));
    atomic_store(&w->rc_wait, weft_pinned_wait_for(0));
    atomic_store(&w->done, 1);
}

WT_TEST(pin, pumps_refuse_workers_and_plain_threads, .timeout = 60)
{
    WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), WEFT_ENOTBOUND);   /* no scheduler at all */
    WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ENOTBOUND);
    WT_FOR_WORKERS(nw, 1, 2, 8) {
        weft_sched *s = make_sched(nw);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), WEFT_ENOTBOUND);   /* a plain thread */
        WT_ASSERT_EQ(weft_pinned_wait_for(MS), WEFT_ENOTBOUND);
        static struct where_rc w;
        memset(&w, 0, sizeof w);
        WT_ASSERT_EQ(weft_spawn(s, call_pumps, &w), WEFT_OK);        /* a worker */
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&w.rc_run), WEFT_ENOTBOUND);
        WT_ASSERT_EQ(atomic_load(&w.rc_wait), WEFT_ENOTBOUND);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* From a task running on the bound thread weft_pinned_run returns 0 and
 * runs nothing, even with a task pinned to that thread queued. */
struct nested_pump {
    weft_sched *s;
    int bound_id;
    atomic_int rc, p_runs, p_runs_seen, pin_rc, id;
};

static void np_pinned(void *arg)
{
    atomic_fetch_add(&((struct nested_pump *)arg)->p_runs, 1);
}

static void np_task(void *arg)
{
    struct nested_pump *n = arg;
    atomic_store(&n->id, weft_thread_id());
    atomic_store(&n->pin_rc, spawn_pinned(n->s, np_pinned, n, n->bound_id));
    atomic_store(&n->rc, weft_pinned_run(UINT64_MAX));
    atomic_store(&n->p_runs_seen, atomic_load(&n->p_runs));
}

WT_TEST(pin, run_pinned_from_a_task_on_the_bound_thread, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    static struct nested_pump n;
    memset(&n, 0, sizeof n);
    n.s = s;
    n.bound_id = bind_as(s, 0);
    atomic_store(&n.rc, 99);
    WT_ASSERT_EQ(weft_spawn(s, np_task, &n), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n.id), n.bound_id);
    WT_ASSERT(atomic_load(&n.pin_rc) == WEFT_OK, "pin: %s", weft_err_name(atomic_load(&n.pin_rc)));
    WT_ASSERT(atomic_load(&n.rc) == 0, "weft_pinned_run from a task on the bound thread: %d, want 0",
              atomic_load(&n.rc));
    WT_ASSERT(atomic_load(&n.p_runs_seen) == 0, "it ran the pinned task nested under the task");
    WT_ASSERT_EQ(atomic_load(&n.p_runs), 1);   /* wait_idle ran it */
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- weft_pinned_wait_for --------------------------------------------------- */

struct late_pin {
    weft_sched *s;
    int thread;
    atomic_int pin_rc, runs, started;
};

static void lp_pinned(void *arg)
{
    atomic_fetch_add(&((struct late_pin *)arg)->runs, 1);
}

static void lp_pin(struct late_pin *l)
{
    atomic_store(&l->pin_rc, spawn_pinned(l->s, lp_pinned, l, l->thread));
}

static void *lp_thread(void *arg)
{
    nap_ns(2 * MS);
    lp_pin(arg);
    return NULL;
}

static void lp_task(void *arg)
{
    weft_sleep(2 * MS);
    lp_pin(arg);
}

WT_TEST(pin, wait_pinned, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "wait_pinned at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct late_pin l;
        memset(&l, 0, sizeof l);
        l.s = s;
        l.thread = bind_as(s, cfgs[k].flags);

        /* Nothing pinned: ETIMEDOUT, not before its time. */
        WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ETIMEDOUT);
        uint64_t t0 = wt_now_ns();
        int rc = weft_pinned_wait_for(5 * MS);
        uint64_t dt = wt_now_ns() - t0;
        WT_ASSERT(rc == WEFT_ETIMEDOUT, "wait_pinned(5 ms) with nothing pinned: %s", weft_err_name(rc));
        WT_ASSERT(dt >= 5 * MS, "wait_pinned(5 ms) returned after %llu ns", (unsigned long long)dt);

        /* One queued: 0 at once, and not run. */
        lp_pin(&l);
        WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin to self: %s", weft_err_name(atomic_load(&l.pin_rc)));
        WT_ASSERT_EQ(weft_pinned_wait_for(UINT64_MAX), 0);
        WT_ASSERT_EQ(weft_pinned_wait_for(0), 0);
        WT_ASSERT_EQ(atomic_load(&l.runs), 0);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 1);
        WT_ASSERT_EQ(atomic_load(&l.runs), 1);

        /* Pinned from a plain thread 2 ms into the wait: it wakes (a
         * 10 s timeout that expires fails the test). The two waits here
         * stay at 10 s, not 60 s like the test's other hang catchers:
         * where the pin is made and run on this thread itself (a task it
         * helps with, W > 0 below), the wait ends only at its timeout
         * today and then returns 0 (seen under tsan at 2 workers,
         * helping: 60 s waits ran the test past its timeout). A lost
         * wake-up of weft's, found by the timing audit (issue 30 item
         * 12) and left for a fix of its own. */
        pthread_t th = start_thread(lp_thread, &l);
        t0 = wt_now_ns();
        rc = weft_pinned_wait_for(10000 * MS);
        dt = wt_now_ns() - t0;
        join_thread(th);
        WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin from a plain thread: %s",
                  weft_err_name(atomic_load(&l.pin_rc)));
        WT_ASSERT(rc == 0, "wait_pinned did not wake for a pin from a plain thread: %s after %llu ms",
                  weft_err_name(rc), (unsigned long long)(dt / MS));
        /* A pin that arrives during the wait may run in it (the thread
         * runs its pins in any wait); if not, the pump runs it. */
        int pumped = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
        WT_ASSERT_EQ(atomic_load(&l.runs), 2);

        /* Pinned from a task 2 ms into the wait (W = 0: the task is this
         * thread's own fiber, run meanwhile; that wait_pinned runs other
         * queued tasks there is not documented, so only W > 0). */
        if (W > 0) {
            WT_ASSERT_EQ(weft_spawn(s, lp_task, &l), WEFT_OK);
            rc = weft_pinned_wait_for(10000 * MS);
            WT_ASSERT(rc == 0, "wait_pinned did not wake for a pin from a worker: %s", weft_err_name(rc));
            WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin from a worker: %s",
                      weft_err_name(atomic_load(&l.pin_rc)));
            pumped = weft_pinned_run(UINT64_MAX);
            WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
            WT_ASSERT_EQ(atomic_load(&l.runs), 3);
        }
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* "Its ready fibers run meanwhile": with no workers, a task of the bound
 * thread blocks on an event; a plain thread signals it; the task, resumed
 * inside weft_pinned_wait_for, pins to the thread, which wakes the wait. */
struct fiber_in_wait {
    weft_sched *s;
    int thread;
    weft_event ev;
    atomic_int blocked, pin_rc, runs;
};

static void fw_pinned(void *arg)
{
    atomic_fetch_add(&((struct fiber_in_wait *)arg)->runs, 1);
}

static void fw_task(void *arg)
{
    struct fiber_in_wait *f = arg;
    atomic_store(&f->blocked, 1);
    weft_event_wait(&f->ev);
    atomic_store(&f->pin_rc, spawn_pinned(f->s, fw_pinned, f, f->thread));
}

static void *fw_signal(void *arg)
{
    nap_ns(2 * MS);
    weft_event_signal(&((struct fiber_in_wait *)arg)->ev);
    return NULL;
}

WT_TEST(pin, wait_pinned_runs_ready_fibers, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    static struct fiber_in_wait f;
    memset(&f, 0, sizeof f);
    f.s = s;
    f.thread = bind_as(s, 0);
    weft_event_init(&f.ev, true, false);
    atomic_store(&f.pin_rc, 1);
    WT_ASSERT_EQ(weft_spawn(s, fw_task, &f), WEFT_OK);
    for (int i = 0; i < 100 && !atomic_load(&f.blocked); i++)
        weft_yield();   /* W = 0: runs the task until it blocks */
    WT_ASSERT(atomic_load(&f.blocked), "weft_yield on the bound thread (no workers) did not run the task");
    pthread_t th = start_thread(fw_signal, &f);
    /* Left at 10 s, not made a 60 s hang catcher like the others: today
     * this wait ends only at its timeout (the test takes 10.5 s; with 60 s
     * it hangs to the test's timeout): the resumed fiber pins to this
     * thread and the pin runs in the wait, which is not woken for it
     * until the timeout, and then returns 0. The lost wake-up noted in
     * wait_pinned above. */
    int rc = weft_pinned_wait_for(10000 * MS);
    join_thread(th);
    WT_ASSERT(rc == 0, "wait_pinned: %s (the blocked fiber did not resume in it, or its pin did not wake it)",
              weft_err_name(rc));
    WT_ASSERT(atomic_load(&f.pin_rc) == WEFT_OK, "pin: %s", weft_err_name(atomic_load(&f.pin_rc)));
    int pumped = weft_pinned_run(UINT64_MAX);   /* 0 if it ran during the wait */
    WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
    WT_ASSERT_EQ(atomic_load(&f.runs), 1);
    weft_event_destroy(&f.ev);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- unbind runs what is pinned; stale and bad ids ---------------------- */

struct unbind_case {
    weft_sched *s;
    struct orderlog log;
    struct otask tasks[21];
    atomic_int chained_rc, chained_runs, chained_on;
};

static void ub_chained(void *arg)
{
    struct unbind_case *u = arg;
    atomic_store(&u->chained_on, weft_thread_id());
    atomic_fetch_add(&u->chained_runs, 1);
}

/* Pinned; pins another task to its own thread, which may be unbinding. */
static void ub_chainer(void *arg)
{
    struct unbind_case *u = arg;
    atomic_store(&u->chained_rc, spawn_pinned(u->s, ub_chained, u, weft_thread_id()));
}

WT_TEST(pin, unbind_runs_pinned_first, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "unbind_runs_pinned_first at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct unbind_case u;
        memset(&u, 0, sizeof u);
        u.s = s;
        atomic_store(&u.chained_rc, 1);
        int id = bind_as(s, cfgs[k].flags);
        u.log.bound_id = id;
        for (int i = 0; i < 20; i++)
            u.tasks[i] = (struct otask){ &u.log, i, 0 };
        struct opin mine = { .s = s, .tasks = u.tasks, .lo = 0, .hi = 10, .thread = id };
        opin_thread(&mine);
        struct opin other = { .s = s, .tasks = u.tasks, .lo = 10, .hi = 20, .thread = id };
        join_thread(start_thread(opin_thread, &other));
        WT_ASSERT(atomic_load(&mine.refused) + atomic_load(&other.refused) == 0, "pins refused");
        WT_ASSERT_EQ(spawn_pinned(s, ub_chainer, &u, id), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_thread_id(), -1);
        WT_ASSERT(atomic_load(&u.log.n) == 20, "unbind left %d of 20 pinned tasks unrun",
                  20 - atomic_load(&u.log.n));
        for (int i = 0; i < 20; i++)
            WT_ASSERT_EQ(u.log.seq[i], i);
        WT_ASSERT_EQ(atomic_load(&u.log.wrong), 0);
        /* A pin made while it unbinds: run by it, or refused. */
        int crc = atomic_load(&u.chained_rc);
        if (crc == WEFT_OK) {
            WT_ASSERT_EQ(atomic_load(&u.chained_runs), 1);
            WT_ASSERT_EQ(atomic_load(&u.chained_on), id);
        } else {
            WT_ASSERT(crc == WEFT_EINVAL, "a pin racing unbind: %s", weft_err_name(crc));
            WT_ASSERT_EQ(atomic_load(&u.chained_runs), 0);
        }
        /* The id is no current thread now. */
        atomic_store(&ran_anything, 0);
        WT_ASSERT_EQ(spawn_pinned(s, count_run, NULL, id), WEFT_EINVAL);
        if (W > 0)
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* W = 0: would run anything queued */
        WT_ASSERT_EQ(atomic_load(&ran_anything), 0);
    }
}
