/* Which walk a nested graph's visits take: a graph that runs nested (a
 * subflow's sub-graph, a graph with subflow tasks) walks lighter when
 * none of its tasks has an attribute (src/graph/run.c, the nest walk),
 * and as before when one does. Held to what weft/graph.h promises of a
 * pin and a semaphore on a subflow's tasks, at every depth, with levels
 * that have attributes and levels that have none mixed; public API only.
 *
 *   pin_*   a subflow two deep (the middle level has no attribute) whose
 *           inner function pins its tasks to a thread other than its own:
 *           each runs there, with and without a join, run after run
 *   sem_*   a sub-graph whose tasks share a semaphore of one unit and
 *           yield while they hold it, beside tasks with none that block on
 *           an event the last unit holder sets (no edge orders them): never
 *           two holders at once, and every task runs
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers (pin:
 * 2 and 8, as it needs two threads). A task never asserts: it counts
 * what went wrong in `bad`, which the test checks. */
#include <stdatomic.h>
#include <stdint.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;

/* ---- pin: tasks pinned to another thread, under a level without attributes ---- */

#define PIN_TASKS 4

typedef struct pin_case pin_case;

typedef struct pinned {
    pin_case *c;
    int thread;
} pinned;

struct pin_case {
    bool join;
    atomic_int ran;
    pinned ps[PIN_TASKS];   /* the one inner visit's of a run: its tasks run before the run ends */
};

static void pin_leaf(void *arg)
{
    pinned *p = arg;
    if (weft_thread_id() != p->thread)
        atomic_fetch_add(&bad, 1);   /* the walk sent it nowhere near its pin */
    atomic_fetch_add(&p->c->ran, 1);
}

static void pin_inner(weft_subflow *sf, void *arg)
{
    pin_case *c = arg;
    int other = weft_thread_id() == 0 ? 1 : 0;
    for (int i = 0; i < PIN_TASKS; i++) {
        c->ps[i] = (pinned){ c, other };
        weft_task *t = weft_subflow_add(sf, pin_leaf, &c->ps[i]);
        if (!t || weft_task_set_pin(t, other) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
    if (c->join && weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void pin_middle(weft_subflow *sf, void *arg)
{
    if (!weft_subflow_add_subflow(sf, pin_inner, arg))
        atomic_fetch_add(&bad, 1);
}

WT_TEST(sfwalk, pin_under_a_level_without_attributes, .timeout = 120)
{
    WT_FOR_WORKERS(w, 2, 8) {
        for (int j = 0; j < 2; j++) {
            weft_sched *s = open_sched(w);
            weft_graph *g = new_graph();
            pin_case c = { .join = j == 1 };
            WT_ASSERT(weft_graph_add_subflow(g, pin_middle, &c) != NULL);
            for (int r = 0; r < 20; r++)
                run_wait(s, g, "pin");
            WT_ASSERT_EQ(atomic_load(&c.ran), 20 * PIN_TASKS);
            WT_ASSERT_EQ(atomic_load(&bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            close_sched(s, w);
        }
    }
}

/* ---- sem: one unit among a sub-graph's tasks, beside blocking ones ---- */

#define SEM_TASKS 6

typedef struct sem_case {
    weft_sem sem;
    weft_event ev;
    atomic_int inside, held, waited;
} sem_case;

static void sem_leaf(void *arg)
{
    sem_case *c = arg;
    if (atomic_fetch_add(&c->inside, 1) != 0)
        atomic_fetch_add(&bad, 1);   /* two holders of one unit */
    weft_yield();   /* another ready task runs here if the unit let it */
    atomic_fetch_sub(&c->inside, 1);
    if (atomic_fetch_add(&c->held, 1) + 1 == SEM_TASKS)
        weft_event_signal(&c->ev);   /* the last holder frees the waiters */
}

static void sem_waiter(void *arg)
{
    sem_case *c = arg;
    if (weft_event_wait(&c->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&c->waited, 1);
}

static void sem_fn(weft_subflow *sf, void *arg)
{
    sem_case *c = arg;
    for (int i = 0; i < SEM_TASKS; i++) {
        weft_task *t = weft_subflow_add(sf, sem_leaf, c);
        if (!t || weft_task_set_semaphore(t, &c->sem) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
        if (i % 2 && !weft_subflow_add(sf, sem_waiter, c))
            atomic_fetch_add(&bad, 1);
    }
}

static void sem_outer(weft_subflow *sf, void *arg)
{
    if (!weft_subflow_add_subflow(sf, sem_fn, arg))
        atomic_fetch_add(&bad, 1);
}

WT_TEST(sfwalk, sem_in_a_sub_graph, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        sem_case c;
        atomic_init(&c.inside, 0);
        weft_sem_init(&c.sem, 1);
        weft_event_init(&c.ev, true, false);
        WT_ASSERT(weft_graph_add_subflow(g, sem_outer, &c) != NULL);
        for (int r = 0; r < 20; r++) {
            atomic_store(&c.held, 0);
            atomic_store(&c.waited, 0);
            weft_event_clear(&c.ev);
            run_wait(s, g, "sem");
            WT_ASSERT_EQ(atomic_load(&c.held), SEM_TASKS);
            WT_ASSERT_EQ(atomic_load(&c.waited), SEM_TASKS / 2);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&c.ev);
        weft_sem_destroy(&c.sem);
        close_sched(s, w);
    }
}
