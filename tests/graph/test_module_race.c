/* Graph modules run from several threads at once (weft.h's
 * weft_graph_add_module and weft_graph_run), written from the header:
 * bad input (graphs that contain each other) must give WEFT_ECYCLE and
 * never hang, whoever runs which graph and when; good input run from
 * several threads must neither hang nor run a task twice at once.
 *
 *   cycle_runs_from_two_threads   A contains B, B contains A; one thread
 *       runs A while another runs B, over and over: every run is
 *       WEFT_ECYCLE, no task ran, and the two threads always get there
 *       (a check that locked A then B in one thread and B then A in the
 *       other would stop both for ever: the test's timeout).
 *   cycle_of_three_from_three_threads   A > B > C > A, each run from its
 *       own thread, as above.
 *   shared_sub_from_two_threads   P and Q both contain S (no cycle); one
 *       thread runs P, another Q, concurrently: each run ends OK, or the
 *       module task fails with WEFT_EBUSY because S was running for the
 *       other (weft.h: a sub runs once at a time); every task that ran,
 *       ran whole, and S's task never ran twice at once.
 *
 * At 0 (the threads unbound: runs from outside; the cycle cases only),
 * 1, 2 and 8 workers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

#define ROUNDS 2000
#define CYCLE_ROUNDS 100000   /* cheap (each run is refused at once); the deadlock took ~10^4 */

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

struct runner {
    weft_sched *s;
    weft_graph *g;
    int rounds;
    atomic_int *go;
    int want;                /* WEFT_ECYCLE, or 0: OK or a module's EBUSY */
    int wrong_rc, last_rc;   /* out */
};

static void *run_loop(void *arg)
{
    struct runner *r = arg;
    while (!atomic_load(r->go)) {
    }
    for (int i = 0; i < r->rounds; i++) {
        int rc = weft_graph_run(r->s, r->g);
        if (rc == WEFT_OK)
            rc = weft_graph_wait(r->g);
        bool fine = r->want ? rc == r->want : rc == WEFT_OK || rc == WEFT_EBUSY;
        if (!fine) {
            r->wrong_rc++;
            r->last_rc = rc;
        }
    }
    return NULL;
}

/* Runs g[i] from thread i, n threads at once; each expects want. */
static void race(weft_sched *s, weft_graph **g, unsigned n, int want, int rounds)
{
    atomic_int go = 0;
    struct runner r[4];
    pthread_t t[4];
    for (unsigned i = 0; i < n; i++) {
        r[i] = (struct runner){ .s = s, .g = g[i], .rounds = rounds, .go = &go, .want = want };
        WT_ASSERT_EQ(pthread_create(&t[i], NULL, run_loop, &r[i]), 0);
    }
    atomic_store(&go, 1);
    for (unsigned i = 0; i < n; i++)
        WT_ASSERT_EQ(pthread_join(t[i], NULL), 0);
    for (unsigned i = 0; i < n; i++)
        WT_ASSERT(r[i].wrong_rc == 0, "thread %u: %d runs ended %s", i, r[i].wrong_rc,
                  weft_err_name(r[i].last_rc));
}

static void cycle_case(unsigned workers, unsigned n)
{
    weft_sched *s = make_sched(workers);
    atomic_int ran = 0;
    weft_graph *g[4];
    for (unsigned i = 0; i < n; i++) {
        g[i] = new_graph();
        add(g[i], count, &ran);
    }
    for (unsigned i = 0; i < n; i++)
        WT_ASSERT(weft_graph_add_module(g[i], g[(i + 1) % n]) != NULL, "add_module");
    race(s, g, n, WEFT_ECYCLE, (int)wt_scaled(CYCLE_ROUNDS, 500));
    WT_ASSERT_EQ(atomic_load(&ran), 0);
    for (unsigned i = 0; i < n; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(module_race, cycle_runs_from_two_threads, .timeout = 300)
{
    for (unsigned k = 0; k < 4; k++)
        cycle_case((unsigned[]){ 0, 1, 2, 8 }[k], 2);
}

WT_TEST(module_race, cycle_of_three_from_three_threads, .timeout = 300)
{
    for (unsigned k = 0; k < 4; k++)
        cycle_case((unsigned[]){ 0, 1, 2, 8 }[k], 3);
}

/* S's task: counts how many run at once. */
struct once {
    atomic_int inside, most, runs;
};

static void sub_task(void *arg)
{
    struct once *o = arg;
    int now = atomic_fetch_add(&o->inside, 1) + 1;
    int most = atomic_load(&o->most);
    while (now > most && !atomic_compare_exchange_weak(&o->most, &most, now)) {
    }
    for (volatile int i = 0; i < 200; i++) {
    }
    atomic_fetch_add(&o->runs, 1);
    atomic_fetch_sub(&o->inside, 1);
}

WT_TEST(module_race, shared_sub_from_two_threads, .timeout = 300)
{
    for (unsigned k = 0; k < 3; k++) {   /* with no workers nobody would run them */
        weft_sched *s = make_sched((unsigned[]){ 1, 2, 8 }[k]);
        struct once o = { 0 };
        atomic_int ran = 0;
        weft_graph *sub = new_graph(), *p = new_graph(), *q = new_graph();
        add(sub, sub_task, &o);
        add(sub, count, &ran);
        add(p, count, &ran);
        add(q, count, &ran);
        WT_ASSERT(weft_graph_add_module(p, sub) != NULL, "add_module");
        WT_ASSERT(weft_graph_add_module(q, sub) != NULL, "add_module");
        weft_graph *g[2] = { p, q };
        race(s, g, 2, 0, (int)wt_scaled(ROUNDS, 50));
        WT_ASSERT(atomic_load(&o.most) == 1, "the shared sub's task ran %d at once", atomic_load(&o.most));
        WT_ASSERT(atomic_load(&o.runs) > 0, "the shared sub never ran");
        WT_ASSERT_EQ(weft_graph_destroy(p), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(q), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}
