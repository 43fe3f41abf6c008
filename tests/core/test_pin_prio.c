/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it. This file: priorities
 * (order with one thread, in a graph, the starvation bound),
 * WEFT_BIND_NO_HELP and the main thread helping, and tasks of every level
 * and pin blocking on each other in a valid order.
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

/* ---- helpers ---------------------------------------------------------- */

static weft_sched *sched_with(unsigned workers, unsigned priority_interval)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.priority_interval = priority_interval;
    weft_sched *s = NULL;
    int rc = weft_sched_create(&s, &c);
    WT_ASSERT(rc == WEFT_OK, "create(%u workers, interval %u): %s", workers, priority_interval,
              weft_err_name(rc));
    return s;
}

static int spawn_prio(weft_sched *s, weft_fn fn, void *arg, weft_priority p)
{
    weft_spawn_opts o = { .priority = p };
    return weft_spawn_ex(s, fn, arg, &o);
}

static void busy_ns(uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (wt_now_ns() < end) {
    }
}

/* ---- priorities ------------------------------------------------------------ */

enum pkind { PK_HIGH, PK_PIN_NORMAL, PK_PIN_LOW, PK_NORMAL, PK_LOW };

static const int pk_rank[] = { 0, 1, 1, 2, 3 };   /* HIGH, pinned (LOW counts as NORMAL), NORMAL, LOW */

static const char *const pk_name[] = { "HIGH", "pinned NORMAL", "pinned LOW", "NORMAL", "LOW" };

#define PMAX 120

struct porder;

struct parg { struct porder *o; int id; };

struct porder {
    weft_sched *s;
    int n, target;            /* tasks; the thread pinned ones name */
    bool from_blocker;
    enum pkind kind[PMAX];
    struct parg arg[PMAX];
    atomic_int next, refused, started, go, timed_out;
    int seq[PMAX];
};

static void prio_task(void *p)
{
    struct parg *a = p;
    int k = atomic_fetch_add(&a->o->next, 1);
    if (k < PMAX)
        a->o->seq[k] = a->id;
}

static void queue_mix(struct porder *o)
{
    for (int i = 0; i < o->n; i++) {
        weft_spawn_opts opt = { 0 };
        switch (o->kind[i]) {
        case PK_HIGH:       opt.priority = WEFT_PRIORITY_HIGH; break;
        case PK_PIN_NORMAL: opt.pinned = true, opt.thread = o->target; break;
        case PK_PIN_LOW:    opt.pinned = true, opt.thread = o->target, opt.priority = WEFT_PRIORITY_LOW; break;
        case PK_NORMAL:     break;
        case PK_LOW:        opt.priority = WEFT_PRIORITY_LOW; break;
        }
        if (weft_spawn_ex(o->s, prio_task, &o->arg[i], &opt) != WEFT_OK)
            atomic_fetch_add(&o->refused, 1);
    }
}

/* Occupies the only worker (spinning, not a weft wait: a task blocked in
 * weft would free its worker) until the test says go. */
static void prio_blocker(void *p)
{
    struct porder *o = p;
    if (o->from_blocker)
        queue_mix(o);
    atomic_store(&o->started, 1);   /* after queueing them, if it does */
    if (!spin_until(&o->go, 1, SPIN_NS))
        atomic_store(&o->timed_out, 1);
}

static void make_mix(struct porder *o, int n, bool pins, uint64_t *rng)
{
    static const enum pkind unpinned[] = { PK_HIGH, PK_NORMAL, PK_LOW };
    o->n = n;
    for (int i = 0; i < n; i++) {
        int r = (int)(wt_rand(rng) % (pins ? 5u : 3u));
        o->kind[i] = pins ? (enum pkind)r : unpinned[r];
        o->arg[i].o = o;
        o->arg[i].id = i;
    }
}

/* Ranks never go down along the run order; pinned tasks keep pin order. */
static void check_prio_order(struct porder *o, const char *what)
{
    WT_ASSERT(atomic_load(&o->refused) == 0, "%s: %d spawn_ex refused", what, atomic_load(&o->refused));
    WT_ASSERT_EQ(atomic_load(&o->timed_out), 0);
    WT_ASSERT(atomic_load(&o->next) == o->n, "%s: %d of %d ran", what, atomic_load(&o->next), o->n);
    int last_pin = -1;
    for (int k = 1; k < o->n; k++) {
        enum pkind a = o->kind[o->seq[k - 1]], b = o->kind[o->seq[k]];
        WT_ASSERT(pk_rank[a] <= pk_rank[b], "%s: a %s task ran right before a %s one (position %d)", what,
                  pk_name[a], pk_name[b], k);
    }
    for (int k = 0; k < o->n; k++)
        if (pk_rank[o->kind[o->seq[k]]] == 1) {
            WT_ASSERT(o->seq[k] > last_pin, "%s: pinned tasks out of pin order", what);
            last_pin = o->seq[k];
        }
}

WT_TEST(pin, priority_order_with_one_thread, .timeout = 120)
{
    uint64_t rng = wt_seed();
    for (int W = 0; W <= 1; W++)
        for (int pins = 0; pins <= 1; pins++)
            for (int from_blocker = 0; from_blocker <= W; from_blocker++) {
                char what[128];
                snprintf(what, sizeof what, "%d workers, %s, queued from %s", W, pins ? "with pinned tasks" : "unpinned",
                         W == 0 ? "the bound thread" : from_blocker ? "the worker" : "outside");
                fprintf(stderr, "priority order: %s\n", what);
                /* The starvation rule must not interfere: the largest interval. */
                weft_sched *s = sched_with((unsigned)W, 1000000);
                static struct porder o;
                memset(&o, 0, sizeof o);
                o.s = s;
                o.from_blocker = from_blocker;
                make_mix(&o, PMAX, pins, &rng);
                if (W == 0) {
                    o.target = bind_as(s, 0);
                    queue_mix(&o);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                    weft_sched_unbind();
                } else {
                    o.target = 0;
                    WT_ASSERT_EQ(weft_spawn(s, prio_blocker, &o), WEFT_OK);
                    WT_ASSERT(spin_until(&o.started, 1, SPIN_NS), "the blocker never ran");
                    if (!from_blocker)
                        queue_mix(&o);
                    atomic_store(&o.go, 1);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                }
                check_prio_order(&o, what);
                WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            }
}

/* Graph tasks made ready at once (every successor of one root) run in
 * priority order: every HIGH before any NORMAL before any LOW. */
WT_TEST(pin, graph_priority_order, .timeout = 120)
{
    uint64_t rng = wt_seed() ^ 0x5bd1e995u;
    for (int W = 0; W <= 1; W++)
        for (int pins = 0; pins <= 1; pins++) {
            char what[96];
            snprintf(what, sizeof what, "graph, %d workers, %s", W, pins ? "with pinned tasks" : "unpinned");
            weft_sched *s = sched_with((unsigned)W, 1000000);
            static struct porder o;
            memset(&o, 0, sizeof o);
            o.s = s;
            make_mix(&o, PMAX, pins, &rng);
            o.target = W == 0 ? bind_as(s, 0) : 0;
            weft_graph *g = new_graph();
            weft_task *root = add(g, NULL, NULL);
            for (int i = 0; i < o.n; i++) {
                weft_task *t = add(g, prio_task, &o.arg[i]);
                WT_ASSERT_EQ(weft_task_precede(root, t), WEFT_OK);
                switch (o.kind[i]) {
                case PK_HIGH:       weft_task_set_priority(t, WEFT_PRIORITY_HIGH); break;
                case PK_PIN_LOW:    weft_task_set_priority(t, WEFT_PRIORITY_LOW); /* fall through */
                case PK_PIN_NORMAL: WT_ASSERT_EQ(weft_task_set_pin(t, o.target), WEFT_OK); break;
                case PK_NORMAL:     break;
                case PK_LOW:        weft_task_set_priority(t, WEFT_PRIORITY_LOW); break;
                }
            }
            run_wait(s, g, what);
            check_prio_order(&o, what);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            if (W == 0)
                weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        }
}

/* ---- starvation bound -------------------------------------------------------
 * One thread picks; a chain of HIGH tasks (each spawns the next before it
 * returns, so a HIGH task is always ready) competes with one LOW and one
 * NORMAL task queued at the same time. The header: "the oldest queued
 * NORMAL or LOW task waits at most 2 * priority_interval picks of any one
 * thread that picks". Each task of the test counts as one pick; the LOW
 * and NORMAL tasks record how many picks came before them. Allowed:
 * 2 * interval + 2. The slack of 2: the text does not say whether the pick
 * that serves the lower level is one of the 2 * interval, nor where the
 * thread's pick counter stands when the tasks are queued (the blocker's
 * pick and the first HIGH's may fall either side of a boundary). Without
 * the rule both would wait for the whole chain (10 * interval + 20). */
struct starve {
    weft_sched *s;
    atomic_int picks, chain, started, go, refused, timed_out;
    atomic_int low_at, normal_at;
    bool from_blocker;
};

static void st_high(void *p)
{
    struct starve *t = p;
    atomic_fetch_add(&t->picks, 1);
    if (atomic_fetch_sub(&t->chain, 1) > 1 && spawn_prio(t->s, st_high, t, WEFT_PRIORITY_HIGH) != WEFT_OK)
        atomic_fetch_add(&t->refused, 1);
}

static void st_low(void *p)
{
    struct starve *t = p;
    atomic_store(&t->low_at, atomic_fetch_add(&t->picks, 1));
}

static void st_normal(void *p)
{
    struct starve *t = p;
    atomic_store(&t->normal_at, atomic_fetch_add(&t->picks, 1));
}

static void st_queue(struct starve *t)
{
    if (spawn_prio(t->s, st_low, t, WEFT_PRIORITY_LOW) != WEFT_OK ||
        spawn_prio(t->s, st_normal, t, WEFT_PRIORITY_NORMAL) != WEFT_OK ||
        spawn_prio(t->s, st_high, t, WEFT_PRIORITY_HIGH) != WEFT_OK)
        atomic_fetch_add(&t->refused, 1);
}

static void st_blocker(void *p)
{
    struct starve *t = p;
    if (t->from_blocker)
        st_queue(t);
    atomic_store(&t->started, 1);   /* after queueing them, if it does */
    if (!spin_until(&t->go, 1, SPIN_NS))
        atomic_store(&t->timed_out, 1);
}

WT_TEST(pin, priority_interval_bounds_starvation, .timeout = 120)
{
    static const unsigned intervals[] = { 4, 16 };
    for (int W = 0; W <= 1; W++)
        for (size_t ii = 0; ii < 2; ii++)
            for (int from_blocker = 0; from_blocker <= W; from_blocker++) {
                unsigned iv = intervals[ii];
                int chain = (int)(10 * iv + 20);
                fprintf(stderr, "starvation: %d workers, interval %u, queued from %s\n", W, iv,
                        W == 0 ? "the bound thread" : from_blocker ? "the worker" : "outside");
                weft_sched *s = sched_with((unsigned)W, iv);
                static struct starve t;
                memset(&t, 0, sizeof t);
                t.s = s;
                t.from_blocker = from_blocker;
                atomic_store(&t.chain, chain);
                atomic_store(&t.low_at, -1);
                atomic_store(&t.normal_at, -1);
                if (W == 0) {
                    bind_as(s, 0);
                    st_queue(&t);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                    weft_sched_unbind();
                } else {
                    WT_ASSERT_EQ(weft_spawn(s, st_blocker, &t), WEFT_OK);
                    WT_ASSERT(spin_until(&t.started, 1, SPIN_NS), "the blocker never ran");
                    if (!from_blocker)
                        st_queue(&t);
                    atomic_store(&t.go, 1);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                }
                WT_ASSERT(atomic_load(&t.refused) == 0, "spawn_ex refused");
                WT_ASSERT_EQ(atomic_load(&t.timed_out), 0);
                WT_ASSERT_EQ(atomic_load(&t.picks), chain + 2);
                int bound = (int)(2 * iv + 2);
                WT_ASSERT(atomic_load(&t.low_at) <= bound,
                          "interval %u: the LOW task ran after %d picks, bound %d (%d workers)", iv,
                          atomic_load(&t.low_at), bound, W);
                WT_ASSERT(atomic_load(&t.normal_at) <= bound,
                          "interval %u: the NORMAL task ran after %d picks, bound %d (%d workers)", iv,
                          atomic_load(&t.normal_at), bound, W);
                WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            }
}

/* ---- WEFT_BIND_NO_HELP, and the main thread helping ---------------------- */

struct helpcount {
    int bound_id;
    uint64_t spin_ns;
    atomic_int unpinned_runs, unpinned_on_bound, pinned_runs, pinned_wrong;
};

static void hc_unpinned(void *p)
{
    struct helpcount *h = p;
    busy_ns(h->spin_ns);
    if (weft_thread_id() == h->bound_id)
        atomic_fetch_add(&h->unpinned_on_bound, 1);
    atomic_fetch_add(&h->unpinned_runs, 1);
}

static void hc_pinned(void *p)
{
    struct helpcount *h = p;
    if (weft_thread_id() != h->bound_id)
        atomic_fetch_add(&h->pinned_wrong, 1);
    atomic_fetch_add(&h->pinned_runs, 1);
}

/* 1000 tasks fanned out from one root, 1000 roots, and `pins` tasks
 * pinned to the bound thread (successors of the root). */
static weft_graph *help_graph(struct helpcount *h, int pins)
{
    weft_graph *g = new_graph();
    weft_task *root = add(g, NULL, NULL);
    for (int i = 0; i < 1000; i++) {
        WT_ASSERT_EQ(weft_task_precede(root, add(g, hc_unpinned, h)), WEFT_OK);
        add(g, hc_unpinned, h);
    }
    for (int i = 0; i < pins; i++) {
        weft_task *t = add(g, hc_pinned, h);
        WT_ASSERT_EQ(weft_task_precede(root, t), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(t, h->bound_id), WEFT_OK);
    }
    return g;
}

WT_TEST(pin, no_help_runs_only_pinned, .timeout = 120)
{
    WT_FOR_WORKERS(W, 1, 2, 8) {
        fprintf(stderr, "no_help at %u workers\n", W);
        weft_sched *s = make_sched(W);
        static struct helpcount h;
        memset(&h, 0, sizeof h);
        h.spin_ns = 5000;
        h.bound_id = bind_as(s, WEFT_BIND_NO_HELP);
        weft_graph *g = help_graph(&h, 20);
        run_wait(s, g, "NO_HELP graph");
        WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 2000);
        WT_ASSERT_EQ(atomic_load(&h.pinned_runs), 20);
        /* Spawns from it too, waited for in weft_sched_wait_idle. */
        for (int i = 0; i < 1000; i++)
            WT_ASSERT_EQ(weft_spawn(s, hc_unpinned, &h), WEFT_OK);
        for (int i = 0; i < 20; i++)
            WT_ASSERT_EQ(spawn_pinned(s, hc_pinned, &h, h.bound_id), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 3000);
        WT_ASSERT_EQ(atomic_load(&h.pinned_runs), 40);
        WT_ASSERT(atomic_load(&h.unpinned_on_bound) == 0, "a NO_HELP thread ran %d unpinned tasks (%u workers)",
                  atomic_load(&h.unpinned_on_bound), W);
        WT_ASSERT(atomic_load(&h.pinned_wrong) == 0, "%d pinned tasks ran elsewhere", atomic_load(&h.pinned_wrong));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* The default: a main thread waiting beside one worker runs some of a
 * graph of 2000 tasks of 20 us (40 ms of work: one worker alone would
 * leave it idle the whole time), and some of 2000 such spawns in
 * weft_sched_wait_idle. */
WT_TEST(pin, helping_main_thread_runs_tasks, .timeout = 120)
{
    weft_sched *s = make_sched(1);
    static struct helpcount h;
    memset(&h, 0, sizeof h);
    h.spin_ns = 20000;
    h.bound_id = bind_as(s, 0);
    weft_graph *g = help_graph(&h, 0);
    run_wait(s, g, "helping graph");
    WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 2000);
    int in_graph = atomic_load(&h.unpinned_on_bound);
    fprintf(stderr, "the main thread ran %d of 2000 graph tasks\n", in_graph);
    WT_ASSERT(in_graph > 0, "the main thread (helping, beside 1 worker) ran none of 2000 graph tasks in weft_graph_wait");
    for (int i = 0; i < 2000; i++)
        WT_ASSERT_EQ(weft_spawn(s, hc_unpinned, &h), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    int in_idle = atomic_load(&h.unpinned_on_bound) - in_graph;
    fprintf(stderr, "the main thread ran %d of 2000 spawns\n", in_idle);
    WT_ASSERT(in_idle > 0, "the main thread (helping, beside 1 worker) ran none of 2000 spawns in weft_sched_wait_idle");
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- blocking in a valid order across levels and pins ------------------- */

/* Block anywhere: a HIGH task waits for an event a LOW task sets; the LOW
 * task then waits for one that a task pinned to the bound thread sets,
 * and that one waits for a NORMAL task's event. Each level's task must
 * let the others run while it waits (at 0, 1 and 2 workers; with none,
 * the bound thread runs them all while it waits). */
struct levels {
    weft_event high_go, low_go, pin_go;
    atomic_int done;
};

static void lv_high(void *arg)
{
    struct levels *l = arg;
    if (weft_event_wait(&l->high_go) == WEFT_OK)
        atomic_fetch_add(&l->done, 1);
}

static void lv_low(void *arg)
{
    struct levels *l = arg;
    weft_event_signal(&l->high_go);
    if (weft_event_wait(&l->low_go) == WEFT_OK)
        atomic_fetch_add(&l->done, 1);
}

static void lv_pinned(void *arg)
{
    struct levels *l = arg;
    if (weft_event_wait(&l->pin_go) == WEFT_OK) {
        weft_event_signal(&l->low_go);
        atomic_fetch_add(&l->done, 1);
    }
}

static void lv_normal(void *arg)
{
    struct levels *l = arg;
    weft_event_signal(&l->pin_go);
    atomic_fetch_add(&l->done, 1);
}

WT_TEST(pin, levels_and_pins_block_on_each_other_in_a_valid_order, .timeout = 120)
{
    WT_FOR_WORKERS(W, 0, 1, 2) {
        weft_sched *s = make_sched(W);
        int me = bind_as(s, 0);
        static struct levels l;
        weft_event_init(&l.high_go, true, false);
        weft_event_init(&l.low_go, true, false);
        weft_event_init(&l.pin_go, true, false);
        atomic_store(&l.done, 0);
        /* Queued in the order that would hang if each ran to its end
         * before the next started. */
        WT_ASSERT_EQ(spawn_prio(s, lv_high, &l, WEFT_PRIORITY_HIGH), WEFT_OK);
        WT_ASSERT_EQ(spawn_pinned(s, lv_pinned, &l, me), WEFT_OK);
        WT_ASSERT_EQ(spawn_prio(s, lv_low, &l, WEFT_PRIORITY_LOW), WEFT_OK);
        WT_ASSERT_EQ(spawn_prio(s, lv_normal, &l, WEFT_PRIORITY_NORMAL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&l.done) == 4, "%u workers: %d of 4 tasks finished", W,
                  atomic_load(&l.done));
        weft_event_destroy(&l.high_go);
        weft_event_destroy(&l.low_go);
        weft_event_destroy(&l.pin_go);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
