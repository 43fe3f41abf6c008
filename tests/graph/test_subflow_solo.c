/* A subflow's sub-graph built by its own function without the lock
 * until another party takes it ("Solo builds", src/graph/subflow.c),
 * held to what weft/graph.h promises of weft_subflow_add*,
 * weft_task_precede and weft_graph_dump_dot; public API only.
 *
 *   switch_*   a function's build switching from the solo build to the
 *              locked one mid-way: tasks and edges, then a condition
 *              task (or a name, or a priority), then more tasks and edges
 *              both to and from the first ones; every task runs once, in
 *              edge order, run after run
 *   dump_*     another thread dumps the outer graph as DOT while the
 *              function, half way through its build, waits on an event:
 *              the dump shows the tasks added so far, and the function's
 *              later adds and edges all take effect
 *   race_*     helpers (spawned tasks) add to the sub-graph while the
 *              function adds a chain of its own, so that a helper's add
 *              ends the solo build at any point of the chain; every task
 *              runs, the chain in order (a stress loop, for TSAN)
 *   nest_*     a recursion of solo builds four deep whose leaves block on
 *              an event the last leaf sets (no edge orders them), with
 *              a failure at one leaf in odd runs: the run fails with its
 *              code, and the next one is whole
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers
 * (dump: 1, 2, 8, as it polls). A task never asserts: it counts what
 * went wrong in `bad`, which the test checks. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;
static atomic_int ticket;

struct slot {
    atomic_int at;     /* the ticket it ran at; 0: not yet */
    atomic_int runs;
};

static void stamp(void *arg)
{
    struct slot *s = arg;
    atomic_store(&s->at, atomic_fetch_add(&ticket, 1) + 1);
    atomic_fetch_add(&s->runs, 1);
}

static void edge(weft_task *a, weft_task *b)
{
    if (!a || !b || weft_task_precede(a, b) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* ---- switch: solo, then a condition (or a name, a priority), then locked ---------- */

enum { SW_COND, SW_NAME, SW_PRIO };

struct sw {
    int how;
    struct slot s[6];
};

static int pick1(void *arg)
{
    (void)arg;
    return 1;
}

static void sw_fn(weft_subflow *sf, void *arg)
{
    struct sw *w = arg;
    weft_task *a = weft_subflow_add(sf, stamp, &w->s[0]);
    weft_task *b = weft_subflow_add(sf, stamp, &w->s[1]);
    edge(a, b);
    weft_task *c = weft_subflow_add(sf, stamp, &w->s[2]);
    if (w->how == SW_COND) {
        /* a condition after b, picking its successor 1 (d): 0 (e) never runs */
        weft_task *q = weft_subflow_add_cond(sf, pick1, NULL);
        weft_task *e = weft_subflow_add(sf, stamp, &w->s[4]);
        weft_task *d = weft_subflow_add(sf, stamp, &w->s[3]);
        edge(b, q);
        edge(q, e);
        edge(q, d);
    } else {
        if (w->how == SW_NAME)
            weft_task_set_name(b, "b");
        else
            weft_task_set_priority(c, WEFT_PRIORITY_HIGH);
        weft_task *d = weft_subflow_add(sf, stamp, &w->s[3]);
        edge(b, d);
    }
    /* After the switch: an edge from a task added solo to one added now,
     * and one between two of the solo ones. */
    weft_task *f = weft_subflow_add(sf, stamp, &w->s[5]);
    edge(c, f);
    edge(a, c);
}

WT_TEST(subflow_solo, switch_mid_build, .timeout = 120)
{
    WT_FOR_WORKERS(wk, 0, 1, 2, 8) {
        for (int how = SW_COND; how <= SW_PRIO; how++) {
            weft_sched *s = open_sched(wk);
            weft_graph *g = new_graph();
            struct sw w;
            memset(&w, 0, sizeof w);
            w.how = how;
            WT_ASSERT(weft_graph_add_subflow(g, sw_fn, &w) != NULL);
            for (int r = 1; r <= 5; r++) {
                run_wait(s, g, "switch");
                for (int i = 0; i < 6; i++)
                    WT_ASSERT(atomic_load(&w.s[i].runs) == (i == 4 ? 0 : r), "how %d task %d", how, i);
                WT_ASSERT(atomic_load(&w.s[0].at) < atomic_load(&w.s[1].at));
                WT_ASSERT(atomic_load(&w.s[1].at) < atomic_load(&w.s[3].at));
                WT_ASSERT(atomic_load(&w.s[0].at) < atomic_load(&w.s[2].at));
                WT_ASSERT(atomic_load(&w.s[2].at) < atomic_load(&w.s[5].at));
            }
            WT_ASSERT_EQ(atomic_load(&bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            close_sched(s, wk);
        }
    }
}

/* ---- dump: another thread takes the sub-graph's lock mid-build --------------------- */

struct dmp {
    weft_event go;
    atomic_int waiting;
    struct slot s[4];
};

static void dmp_fn(weft_subflow *sf, void *arg)
{
    struct dmp *d = arg;
    weft_task *a = weft_subflow_add(sf, stamp, &d->s[0]);
    weft_task *b = weft_subflow_add(sf, stamp, &d->s[1]);
    edge(a, b);
    atomic_store(&d->waiting, 1);
    if (weft_event_wait(&d->go) != WEFT_OK)   /* the test dumps meanwhile */
        atomic_fetch_add(&bad, 1);
    weft_task *c = weft_subflow_add(sf, stamp, &d->s[2]);
    weft_task *e = weft_subflow_add(sf, stamp, &d->s[3]);
    edge(b, c);
    edge(c, e);
    edge(a, e);
}

/* How many times needle occurs in text. */
static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

WT_TEST(subflow_solo, dump_mid_build, .timeout = 120)
{
    WT_FOR_WORKERS(wk, 1, 2, 8) {   /* 0 workers: this thread would have to run the tasks while it polls */
        weft_sched *s = open_sched(wk);
        weft_graph *g = new_graph();
        struct dmp d;
        memset(&d, 0, sizeof d);
        weft_task *t = weft_graph_add_subflow(g, dmp_fn, &d);
        WT_ASSERT(t != NULL);
        weft_task_set_name(t, "outer");
        for (int r = 1; r <= 5; r++) {
            weft_event_init(&d.go, true, false);
            atomic_store(&d.waiting, 0);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            while (!atomic_load(&d.waiting))
                sched_yield();
            char *text = dot_text(g);   /* locks the sub-graph: ends its solo build */
            /* The two tasks added so far, and their edge: the sub-graph's
             * tasks are the ones drawn beside the outer one. */
            WT_ASSERT(strstr(text, "outer") != NULL, "%s", text);
            WT_ASSERT(count_of(text, "->") >= 1, "%s", text);
            free(text);
            weft_event_signal(&d.go);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            for (int i = 0; i < 4; i++)
                WT_ASSERT_EQ(atomic_load(&d.s[i].runs), r);
            WT_ASSERT(atomic_load(&d.s[0].at) < atomic_load(&d.s[1].at));
            WT_ASSERT(atomic_load(&d.s[1].at) < atomic_load(&d.s[2].at));
            WT_ASSERT(atomic_load(&d.s[2].at) < atomic_load(&d.s[3].at));
            weft_event_destroy(&d.go);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, wk);
    }
}

/* ---- race: helpers' adds against the function's chain ----------------------------- */

#define RACE_HELPERS 3
#define RACE_CHAIN 40
#define RACE_EACH 20

struct race {
    weft_sched *s;
    weft_subflow *sf;
    weft_waitgroup wg;
    struct slot chain[RACE_CHAIN];
    atomic_int helped;
};

static void race_count(void *arg)
{
    atomic_fetch_add(&((struct race *)arg)->helped, 1);
}

static void race_helper(void *arg)
{
    struct race *r = arg;
    for (int i = 0; i < RACE_EACH; i++)
        if (!weft_subflow_add(r->sf, race_count, r))
            atomic_fetch_add(&bad, 1);
    weft_waitgroup_done(&r->wg);
}

static void race_fn(weft_subflow *sf, void *arg)
{
    struct race *r = arg;
    r->sf = sf;
    weft_waitgroup_init(&r->wg, RACE_HELPERS);
    weft_task *prev = weft_subflow_add(sf, stamp, &r->chain[0]);   /* solo from here, until a helper adds */
    for (int k = 0; k < RACE_HELPERS; k++)
        if (weft_spawn(r->s, race_helper, r) != WEFT_OK) {
            atomic_fetch_add(&bad, 1);
            weft_waitgroup_done(&r->wg);
        }
    for (int i = 1; i < RACE_CHAIN; i++) {
        weft_task *t = weft_subflow_add(sf, stamp, &r->chain[i]);
        edge(prev, t);
        prev = t;
    }
    if (weft_waitgroup_wait(&r->wg) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_waitgroup_destroy(&r->wg);
}

WT_TEST(subflow_solo, race_helpers, .timeout = 300)
{
    WT_FOR_WORKERS(wk, 0, 1, 2, 8) {
        weft_sched *s = open_sched(wk);
        weft_graph *g = new_graph();
        struct race *r = calloc(1, sizeof *r);
        WT_ASSERT(r != NULL);
        r->s = s;
        WT_ASSERT(weft_graph_add_subflow(g, race_fn, r) != NULL);
        for (int n = 1; n <= 30; n++) {
            run_wait(s, g, "race");
            WT_ASSERT_EQ(atomic_load(&r->helped), n * RACE_HELPERS * RACE_EACH);
            for (int i = 0; i < RACE_CHAIN; i++)
                WT_ASSERT_EQ(atomic_load(&r->chain[i].runs), n);
            for (int i = 1; i < RACE_CHAIN; i++)
                WT_ASSERT(atomic_load(&r->chain[i - 1].at) < atomic_load(&r->chain[i].at));
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        free(r);
        close_sched(s, wk);
    }
}

/* ---- nest: solo builds four deep, blocking leaves, a failure ------------------------ */

#define NEST_DEPTH 4
#define NEST_LEAVES (1 << NEST_DEPTH)
#define NEST_CODE 77

struct nest {
    weft_event ev;
    atomic_int leaves, sums;
    int fail_at;       /* the leaf that fails, -1: none */
};

static struct nest nest;

struct nlevel {
    int depth, index;
};

static struct nlevel nlevels[2 * NEST_LEAVES];

static void nest_leaf(void *arg)
{
    const struct nlevel *l = arg;
    if (l->index == NEST_LEAVES - 1) {
        weft_event_signal(&nest.ev);   /* the last leaf lets the others go */
    } else if (weft_event_wait(&nest.ev) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
    }
    if (l->index == nest.fail_at)
        (void)weft_task_fail(NEST_CODE);
    atomic_fetch_add(&nest.leaves, 1);
}

static void nest_sum(void *arg)
{
    (void)arg;
    atomic_fetch_add(&nest.sums, 1);
}

static void nest_fn(weft_subflow *sf, void *arg)
{
    const struct nlevel *l = arg;
    if (l->depth == NEST_DEPTH) {
        if (!weft_subflow_add(sf, nest_leaf, (void *)l))
            atomic_fetch_add(&bad, 1);
        return;
    }
    /* Heap-ordered places: node k has children 2k and 2k + 1. */
    int k = (1 << l->depth) + l->index;
    struct nlevel *x = &nlevels[2 * k], *y = &nlevels[2 * k + 1];
    *x = (struct nlevel){ l->depth + 1, 2 * l->index };
    *y = (struct nlevel){ l->depth + 1, 2 * l->index + 1 };
    weft_task *a = weft_subflow_add_subflow(sf, nest_fn, x);
    weft_task *b = weft_subflow_add_subflow(sf, nest_fn, y);
    weft_task *s = weft_subflow_add(sf, nest_sum, NULL);
    edge(a, s);
    edge(b, s);
}

WT_TEST(subflow_solo, nest_blocking_failure, .timeout = 120)
{
    WT_FOR_WORKERS(wk, 0, 1, 2, 8) {
        weft_sched *s = open_sched(wk);
        weft_graph *g = new_graph();
        nlevels[1] = (struct nlevel){ 0, 0 };
        WT_ASSERT(weft_graph_add_subflow(g, nest_fn, &nlevels[1]) != NULL);
        for (int r = 0; r < 6; r++) {
            memset(&nest, 0, sizeof nest);
            weft_event_init(&nest.ev, true, false);
            nest.fail_at = r % 2 ? 5 : -1;
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            int rc = weft_graph_wait(g);
            WT_ASSERT_EQ(atomic_load(&nest.leaves), NEST_LEAVES);
            if (r % 2) {
                WT_ASSERT_EQ(rc, WEFT_EFAILED);
                WT_ASSERT_EQ(weft_graph_fail_code(g), NEST_CODE);
                WT_ASSERT(atomic_load(&nest.sums) < NEST_LEAVES - 1);   /* the sums above the failed leaf were skipped */
            } else {
                WT_ASSERT_EQ(rc, WEFT_OK);
                WT_ASSERT_EQ(atomic_load(&nest.sums), NEST_LEAVES - 1);
            }
            weft_event_destroy(&nest.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, wk);
    }
}
