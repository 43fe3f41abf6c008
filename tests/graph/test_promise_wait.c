/* Issue 30, finding 10: a frame loop bounds its graph wait. Written from
 * weft.h (weft_graph_wait_for, weft_graph_done), as a user reads it:
 * wait_for returns what weft_graph_wait returns, or WEFT_ETIMEDOUT with
 * the run still in flight (0 only looks); done says whether a run (a
 * whole run_n / run_until series) is in flight, without waiting; a bound
 * thread runs its pinned tasks while it waits.
 *
 * Nothing here depends on timing: a run is held in flight by a gate (a
 * weft_event its task waits on) that only the test opens, so every timed
 * wait made while the gate is shut must end ETIMEDOUT, and every wait
 * made once it is open must end OK well before its 60 s timeout (which a
 * broken build would reach: a failure, not a latency target).
 *
 * Callers: the test thread bound (0, 1, 2, 8 workers; helping and
 * WEFT_BIND_NO_HELP beside workers), a plain thread (1, 2, 8 workers),
 * plain threads and tasks waiting at once. Tasks never assert: they
 * record into atomics the test thread checks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "../core/sched_util.h"
#include "wtest.h"
#include "graph_util.h"

#define MS      ((uint64_t)1000000)
#define WAIT_NS ((uint64_t)60 * 1000 * MS)   /* never reached when it works */

/* A run held in flight: gate -> tail. */
struct held {
    weft_event gate;          /* manual reset: open stays open */
    atomic_int gated_runs;    /* times the gated task ran */
    int block_on;             /* its run number (1-based) that waits at the gate; 0: every one */
    atomic_int tail_runs;
    int main_id;
    atomic_int off_main;      /* a task pinned to main ran elsewhere */
};

static void gated(void *arg)
{
    struct held *h = arg;
    int n = atomic_fetch_add(&h->gated_runs, 1) + 1;
    if (h->block_on == 0 || n == h->block_on)
        weft_event_wait(&h->gate);
}

static void tail(void *arg)
{
    struct held *h = arg;
    atomic_fetch_add(&h->tail_runs, 1);
}

static weft_graph *held_graph(struct held *h, int block_on)
{
    weft_event_init(&h->gate, true, false);
    atomic_init(&h->gated_runs, 0);
    atomic_init(&h->tail_runs, 0);
    atomic_init(&h->off_main, 0);
    h->block_on = block_on;
    weft_graph *g = new_graph();
    weft_task *a = add(g, gated, h);
    weft_task *b = add(g, tail, h);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    return g;
}

/* Waits (timed, so a bound caller runs tasks meanwhile) until the gated
 * task has run n times: the run it blocks in is then in flight. */
static void until_gated(weft_graph *g, struct held *h, int n)
{
    for (uint64_t end = wt_now_ns() + WAIT_NS; atomic_load(&h->gated_runs) < n;) {
        WT_ASSERT(wt_now_ns() < end, "the gated task never ran %d times", n);
        int rc = weft_graph_wait_for(g, MS);
        WT_ASSERT(rc == WEFT_ETIMEDOUT, "wait_for with the gate shut: %s", weft_err_name(rc));
    }
}

/* ---- wait_for and done around one held run ------------------------------ */

static void one_held_run(weft_sched *s, const char *who, unsigned workers)
{
    struct held h;
    weft_graph *g = held_graph(&h, 0);
    WT_ASSERT(weft_graph_done(g), "%s, %u workers: never run, not done", who, workers);
    WT_ASSERT_EQ(weft_graph_wait_for(g, 0), WEFT_OK);   /* no run: the last result (none: OK) */
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT(!weft_graph_done(g), "%s, %u workers: done with the run held", who, workers);
    WT_ASSERT_EQ(weft_graph_wait_for(g, 0), WEFT_ETIMEDOUT);
    until_gated(g, &h, 1);
    int rc = weft_graph_wait_for(g, 3 * MS);
    WT_ASSERT(rc == WEFT_ETIMEDOUT, "%s, %u workers: %s", who, workers, weft_err_name(rc));
    WT_ASSERT(!weft_graph_done(g));
    WT_ASSERT_EQ(atomic_load(&h.tail_runs), 0);
    weft_event_signal(&h.gate);
    rc = weft_graph_wait_for(g, WAIT_NS);
    WT_ASSERT(rc == WEFT_OK, "%s, %u workers: wait_for after the gate opened: %s", who, workers,
              weft_err_name(rc));
    WT_ASSERT(weft_graph_done(g));
    WT_ASSERT_EQ(atomic_load(&h.tail_runs), 1);   /* done: the run's writes are seen */
    WT_ASSERT_EQ(weft_graph_wait_for(g, 0), WEFT_OK);
    /* Again, waited for plainly: the timed-out waiters left g's queue. */
    run_wait(s, g, who);
    WT_ASSERT_EQ(atomic_load(&h.tail_runs), 2);
    WT_ASSERT(weft_graph_done(g));
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&h.gate);
}

WT_TEST(promise_wait, wait_for_times_out_then_ends_bound, .timeout = 300)
{
    static const unsigned flags[] = { 0, WEFT_BIND_NO_HELP };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (unsigned f = 0; f < 2; f++) {
            if (w == 0 && flags[f])
                continue;
            weft_sched *s = make_sched(w);
            WT_ASSERT_EQ(weft_sched_bind_ex(s, flags[f]), WEFT_OK);
            one_held_run(s, flags[f] ? "bound NO_HELP" : "bound", w);
            weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        }
    }
}

WT_TEST(promise_wait, wait_for_times_out_then_ends_plain, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        one_held_run(s, "plain thread", w);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- a series counts as one run ----------------------------------------- */

static bool stop_after_3(void *ctx)
{
    struct held *h = ctx;
    return atomic_load(&h->tail_runs) >= 3;
}

WT_TEST(promise_wait, series_is_one_run, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int until = 0; until < 2; until++) {
            unsigned workers = w;
            weft_sched *s = open_sched(workers);
            struct held h;
            weft_graph *g = held_graph(&h, 2);   /* the second run waits at the gate */
            if (until)
                WT_ASSERT_EQ(weft_graph_run_until(s, g, stop_after_3, &h), WEFT_OK);
            else
                WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_OK);
            until_gated(g, &h, 2);   /* run 1 ended, run 2 in flight */
            WT_ASSERT(!weft_graph_done(g), "%u workers, %s: done between runs of a series", workers,
                      until ? "run_until" : "run_n");
            WT_ASSERT_EQ(weft_graph_wait_for(g, 0), WEFT_ETIMEDOUT);
            weft_event_signal(&h.gate);
            int rc = weft_graph_wait_for(g, WAIT_NS);
            WT_ASSERT(rc == WEFT_OK, "%u workers: %s", workers, weft_err_name(rc));
            WT_ASSERT(weft_graph_done(g));
            WT_ASSERT_EQ(atomic_load(&h.tail_runs), 3);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            weft_event_destroy(&h.gate);
            close_sched(s, workers);
        }
    }
}

/* ---- refusals ------------------------------------------------------------- */

struct self_wait {
    weft_graph *g;
    atomic_int rc_look, rc_timed, done;
};

static void waits_for_own_graph(void *arg)
{
    struct self_wait *x = arg;
    atomic_store(&x->rc_look, weft_graph_wait_for(x->g, 0));
    atomic_store(&x->rc_timed, weft_graph_wait_for(x->g, MS));
    atomic_store(&x->done, weft_graph_done(x->g) ? 1 : 2);
}

WT_TEST(promise_wait, refusals, .timeout = 120)
{
    WT_ASSERT(weft_graph_done(NULL));
    WT_ASSERT_EQ(weft_graph_wait_for(NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_wait_for(NULL, MS), WEFT_EINVAL);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        WT_ASSERT(weft_graph_done(g));
        WT_ASSERT_EQ(weft_graph_wait_for(g, MS), WEFT_OK);   /* empty, never run */
        struct self_wait x = { .g = g };
        add(g, waits_for_own_graph, &x);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        int rc = weft_graph_wait_for(g, WAIT_NS);
        WT_ASSERT(rc == WEFT_OK, "%u workers: %s", w, weft_err_name(rc));
        WT_ASSERT_EQ(atomic_load(&x.rc_look), WEFT_EBUSY);    /* its own run */
        WT_ASSERT_EQ(atomic_load(&x.rc_timed), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&x.done), 2);                /* in flight, seen from inside */
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* No workers: a thread that is not the bound one is refused, also for a
 * look, while a run is in flight (nobody would run its tasks for it). */
struct outsider {
    weft_graph *g;
    atomic_int rc_look, rc_timed, finished;
};

static void *outsider_main(void *arg)
{
    struct outsider *o = arg;
    atomic_store(&o->rc_look, weft_graph_wait_for(o->g, 0));
    atomic_store(&o->rc_timed, weft_graph_wait_for(o->g, MS));
    atomic_store(&o->finished, 1);
    return NULL;
}

WT_TEST(promise_wait, no_workers_outsider_is_refused, .timeout = 120)
{
    weft_sched *s = open_sched(0);
    struct held h;
    weft_graph *g = held_graph(&h, 0);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    until_gated(g, &h, 1);
    struct outsider o = { .g = g };
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, outsider_main, &o), 0);
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
    WT_ASSERT_EQ(atomic_load(&o.rc_look), WEFT_ENOTBOUND);
    WT_ASSERT_EQ(atomic_load(&o.rc_timed), WEFT_ENOTBOUND);
    weft_event_signal(&h.gate);
    WT_ASSERT_EQ(weft_graph_wait_for(g, WAIT_NS), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&h.gate);
    close_sched(s, 0);
}

/* ---- the pinned-job pump runs in a bound thread's wait_for --------------- */

struct pumped {
    weft_sched *s;
    int main_id;
    weft_event got;           /* set by the job pinned to main */
    atomic_int job_on_main, pinned_on_main, spawn_rc;
};

static void main_job(void *arg)
{
    struct pumped *p = arg;
    atomic_store(&p->job_on_main, weft_thread_id() == p->main_id ? 1 : 2);
    weft_event_signal(&p->got);
}

/* A graph task pinned to main (weft_task_set_pin). */
static void pinned_task(void *arg)
{
    struct pumped *p = arg;
    atomic_store(&p->pinned_on_main, weft_thread_id() == p->main_id ? 1 : 2);
}

/* A graph task that pins a job to main and waits for it: the run ends
 * only if main runs the job while it waits for the run. */
static void asks_main(void *arg)
{
    struct pumped *p = arg;
    weft_spawn_opts o = { .pinned = true, .thread = p->main_id };
    int rc = weft_spawn_ex(p->s, main_job, p, &o);
    atomic_store(&p->spawn_rc, 1000 + rc);
    if (rc == WEFT_OK)
        weft_event_wait(&p->got);
}

WT_TEST(promise_wait, bound_wait_for_runs_pinned_jobs, .timeout = 300)
{
    static const unsigned flags[] = { 0, WEFT_BIND_NO_HELP };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (unsigned f = 0; f < 2; f++) {
            unsigned workers = w;
            if (workers == 0 && flags[f])
                continue;
            weft_sched *s = make_sched(workers);
            WT_ASSERT_EQ(weft_sched_bind_ex(s, flags[f]), WEFT_OK);
            struct pumped p = { .s = s, .main_id = weft_thread_id() };
            weft_event_init(&p.got, false, false);
            weft_graph *g = new_graph();
            weft_task *a = add(g, asks_main, &p);
            weft_task *b = add(g, pinned_task, &p);
            WT_ASSERT_EQ(weft_task_set_pin(b, p.main_id), WEFT_OK);
            WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
            for (int round = 0; round < 3; round++) {
                atomic_store(&p.job_on_main, 0);
                atomic_store(&p.pinned_on_main, 0);
                WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
                int rc = weft_graph_wait_for(g, WAIT_NS);
                WT_ASSERT(rc == WEFT_OK, "%u workers, %s: %s", workers,
                          flags[f] ? "NO_HELP" : "helping", weft_err_name(rc));
                WT_ASSERT_EQ(atomic_load(&p.spawn_rc), 1000 + WEFT_OK);
                WT_ASSERT_EQ(atomic_load(&p.job_on_main), 1);
                WT_ASSERT_EQ(atomic_load(&p.pinned_on_main), 1);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            weft_event_destroy(&p.got);
            weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        }
    }
}

/* ---- many timed waiters at once: threads and tasks ------------------------ */

#define NTHREADS 4
#define NTASKS   4

struct crowd {
    weft_graph *g;
    struct held *h;
    atomic_int opened;        /* the gate is open: wait to the end */
    atomic_int bad;           /* a wait that broke the rules */
    atomic_int ended;         /* waiters that saw the run end OK */
    atomic_int timeouts;
};

static void crowd_wait(struct crowd *c)
{
    for (unsigned k = 0;; k++) {
        bool open = atomic_load(&c->opened);
        int rc = weft_graph_wait_for(c->g, open ? WAIT_NS : (k % 3) * MS / 2);
        if (rc == WEFT_OK) {
            atomic_fetch_add(&c->ended, 1);
            return;
        }
        if (rc != WEFT_ETIMEDOUT || open)
            atomic_fetch_add(&c->bad, 1);   /* shut: only ETIMEDOUT; open: only OK */
        if (rc != WEFT_ETIMEDOUT)
            return;
        atomic_fetch_add(&c->timeouts, 1);
    }
}

static void *crowd_thread(void *arg)
{
    crowd_wait(arg);
    return NULL;
}

static void crowd_task(void *arg)
{
    crowd_wait(arg);
}

WT_TEST(promise_wait, timed_waiters_crowd, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        struct held h;
        weft_graph *g = held_graph(&h, 0);
        struct crowd c = { .g = g, .h = &h };
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        pthread_t t[NTHREADS];
        for (int k = 0; k < NTHREADS; k++)
            WT_ASSERT_EQ(pthread_create(&t[k], NULL, crowd_thread, &c), 0);
        for (int k = 0; k < NTASKS; k++)
            WT_ASSERT_EQ(weft_spawn(s, crowd_task, &c), WEFT_OK);
        /* Let every waiter time out a few times with the gate shut. */
        for (uint64_t end = wt_now_ns() + WAIT_NS;
             atomic_load(&c.timeouts) < 4 * (NTHREADS + NTASKS);) {
            WT_ASSERT(wt_now_ns() < end, "timed waits never timed out (%d)", atomic_load(&c.timeouts));
            sched_yield();
        }
        atomic_store(&c.opened, 1);
        weft_event_signal(&h.gate);
        for (int k = 0; k < NTHREADS; k++)
            WT_ASSERT_EQ(pthread_join(t[k], NULL), 0);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&c.bad), 0);
        WT_ASSERT_EQ(atomic_load(&c.ended), NTHREADS + NTASKS);
        WT_ASSERT(weft_graph_done(g));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&h.gate);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
