/* Issue 30, findings 13 and 14: what weft.h promises of a graph task's
 * own function and of its roots' priorities, written from the header.
 *
 *   fail_*      weft_task_fail and weft_task_current answer for the graph
 *               task's function only: from a parallel loop's chunk, or a
 *               spawned child, they say EINVAL and NULL wherever that work
 *               ran (inline on the task's fiber, or on another worker),
 *               and the task's own function, after such work, still
 *               fails it.
 *   roots_*     the roots of one weft_graph_run are ready at the same
 *               moment: at one worker every HIGH root runs before any
 *               NORMAL one and every NORMAL one before any LOW one, the
 *               run started from a plain thread, a task, or a bound
 *               thread of a scheduler without workers.
 *
 * Before the fixes (seen at 0 workers, the first count each test runs):
 * fail_in_chunks and fail_in_child got 0 (OK) from weft_task_fail in the
 * work that ran inline on the task's fiber, and the graph task FAILED
 * (wait gave the chunk's code); the _then_own cases counted every such
 * call (1280 and 20) not EINVAL; roots_* ran the roots NHHNHLNHLNLL. Tasks do not assert (they may run on a worker thread): they
 * count what they find wrong, and the test checks the counts. Schedulers
 * run at 0 workers (this thread bound), 1, 2 and 8. */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

/* ---- finding 13: work handed off is not the task -------------------------------- */

#define CHUNKS 64

struct handed {
    weft_sched *s;
    weft_task *self;            /* the graph task, as the test added it */
    atomic_int calls;           /* weft_task_fail calls made by handed-off work */
    atomic_int not_einval;      /* of them, answered other than EINVAL */
    atomic_int current_set;     /* weft_task_current not NULL in handed-off work */
    atomic_int own_wrong;       /* the task's own calls answered wrongly */
    atomic_bool child_done;
    int own_err;                /* the task's own weft_task_fail after the work; 0 = none */
};

static void handed_off(struct handed *h)
{
    atomic_fetch_add(&h->calls, 1);
    if (weft_task_fail(-1005) != WEFT_EINVAL)
        atomic_fetch_add(&h->not_einval, 1);
    if (weft_task_current() != NULL)
        atomic_fetch_add(&h->current_set, 1);
}

static void chunk_body(size_t b, size_t e, void *arg)
{
    for (size_t i = b; i < e; i++)
        handed_off(arg);
}

/* The task's own function around the work: it is the task before and
 * after, whatever ran nested in it. */
static void own_before(struct handed *h)
{
    if (weft_task_current() != h->self)
        atomic_fetch_add(&h->own_wrong, 1);
}

static void own_after(struct handed *h)
{
    if (weft_task_current() != h->self)
        atomic_fetch_add(&h->own_wrong, 1);
    if (h->own_err && weft_task_fail(h->own_err) != WEFT_OK)
        atomic_fetch_add(&h->own_wrong, 1);
}

static void loop_task(void *arg)
{
    struct handed *h = arg;
    own_before(h);
    if (weft_parallel_for(h->s, 0, CHUNKS, 1, chunk_body, h) != WEFT_OK)
        atomic_fetch_add(&h->own_wrong, 1);
    own_after(h);
}

static void child(void *arg)
{
    struct handed *h = arg;
    handed_off(h);
    atomic_store(&h->child_done, true);
}

static bool child_over(void *arg)
{
    return atomic_load(&((struct handed *)arg)->child_done);
}

static void spawn_task(void *arg)
{
    struct handed *h = arg;
    own_before(h);
    atomic_store(&h->child_done, false);
    if (weft_spawn(h->s, child, h) != WEFT_OK || weft_wait_until(child_over, h) != WEFT_OK)
        atomic_fetch_add(&h->own_wrong, 1);
    own_after(h);
}

/* One graph of one task fn, run `runs` times at each worker count: the
 * handed-off work's calls are all EINVAL, its weft_task_current NULL; the
 * run ends OK with the task DONE, or with own_err and the task FAILED. */
static void check_handed(weft_fn fn, int expect_calls, int own_err)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct handed h = { .s = s, .own_err = own_err };
        h.self = add(g, fn, &h);
        for (int run = 0; run < 20; run++) {
            atomic_store(&h.calls, 0);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            int rc = weft_graph_wait(g);
            WT_ASSERT(rc == (own_err ? WEFT_EFAILED : WEFT_OK), "workers %u run %d: wait %s",
                      w, run, weft_err_name(rc));
            WT_ASSERT_EQ(weft_graph_fail_code(g), own_err);
            WT_ASSERT_EQ(weft_task_state(h.self), own_err ? WEFT_TASK_FAILED : WEFT_TASK_DONE);
            WT_ASSERT_EQ(atomic_load(&h.calls), expect_calls);
        }
        WT_ASSERT(atomic_load(&h.not_einval) == 0, "workers %u: %d handed-off fails not EINVAL",
                  w, atomic_load(&h.not_einval));
        WT_ASSERT(atomic_load(&h.current_set) == 0, "workers %u: %d handed-off current not NULL",
                  w, atomic_load(&h.current_set));
        WT_ASSERT(atomic_load(&h.own_wrong) == 0, "workers %u: the task's own calls wrong %d times",
                  w, atomic_load(&h.own_wrong));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(promise_graph, fail_in_chunks, .timeout = 60)
{
    check_handed(loop_task, CHUNKS, 0);
}

WT_TEST(promise_graph, fail_in_chunks_then_own, .timeout = 60)
{
    check_handed(loop_task, CHUNKS, -1077);
}

WT_TEST(promise_graph, fail_in_child, .timeout = 60)
{
    check_handed(spawn_task, 1, 0);
}

WT_TEST(promise_graph, fail_in_child_then_own, .timeout = 60)
{
    check_handed(spawn_task, 1, -1078);
}

/* Outside any graph task: EINVAL and NULL (a plain task, this thread). */
static void plain_task(void *arg)
{
    handed_off(arg);
}

WT_TEST(promise_graph, fail_outside_graphs, .timeout = 60)
{
    weft_sched *s = open_sched(1);
    struct handed h = { .s = s };
    handed_off(&h);
    WT_ASSERT_EQ(weft_spawn(s, plain_task, &h), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&h.calls), 2);
    WT_ASSERT_EQ(atomic_load(&h.not_einval), 0);
    WT_ASSERT_EQ(atomic_load(&h.current_set), 0);
    close_sched(s, 1);
}

/* ---- finding 14: roots made ready together run by priority ------------------------ */

#define ROOTS 12

struct order {
    atomic_int next;
    int level[ROOTS];           /* the priority each position ran at */
    int seen[ROOTS];            /* the root at each position */
};

struct root_arg {
    struct order *o;
    int index;
    weft_priority prio;
};

static void root_task(void *arg)
{
    struct root_arg *r = arg;
    int at = atomic_fetch_add(&r->o->next, 1);
    if (at < ROOTS) {
        r->o->level[at] = r->prio;
        r->o->seen[at] = r->index;
    }
}

/* HIGH 0, NORMAL 1, LOW 2: the rank a position must not fall below. */
static int rank(int prio)
{
    return prio == WEFT_PRIORITY_HIGH ? 0 : prio == WEFT_PRIORITY_NORMAL ? 1 : 2;
}

static void check_order(const struct order *o, const char *how, unsigned w, int run)
{
    char text[ROOTS + 1];
    for (int i = 0; i < ROOTS; i++)
        text[i] = "HNL"[rank(o->level[i])];
    text[ROOTS] = '\0';
    WT_ASSERT_EQ(atomic_load(&o->next), ROOTS);
    if (w > 1)
        return;   /* several workers: no order promised */
    for (int i = 1; i < ROOTS; i++)
        WT_ASSERT(rank(o->level[i - 1]) <= rank(o->level[i]),
                  "%s, %u worker(s), run %d: roots ran %s", how, w, run, text);
}

struct prio_world {
    weft_sched *s;
    weft_graph *g;
    struct order o;
    struct root_arg args[ROOTS];
    unsigned w;
};

/* 12 roots, NORMAL, HIGH, LOW in turn: 4 of each. */
static void prio_open(struct prio_world *x, unsigned w)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(w);
    c.priority_interval = 1000000;   /* no starvation pick inside a run */
    x->w = w;
    x->s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&x->s, &c), WEFT_OK);
    if (w == 0)
        WT_ASSERT_EQ(weft_sched_bind(x->s), WEFT_OK);
    x->g = new_graph();
    static const weft_priority cycle[3] = { WEFT_PRIORITY_NORMAL, WEFT_PRIORITY_HIGH, WEFT_PRIORITY_LOW };
    for (int i = 0; i < ROOTS; i++) {
        x->args[i] = (struct root_arg){ &x->o, i, cycle[i % 3] };
        weft_task *t = add(x->g, root_task, &x->args[i]);
        weft_task_set_priority(t, cycle[i % 3]);
    }
}

static void prio_close(struct prio_world *x)
{
    WT_ASSERT_EQ(weft_graph_destroy(x->g), WEFT_OK);
    close_sched(x->s, x->w);
}

static void prio_reset(struct prio_world *x)
{
    atomic_store(&x->o.next, 0);
    memset(x->o.level, 0, sizeof x->o.level);
}

WT_TEST(promise_graph, roots_by_priority_from_this_thread, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        struct prio_world x;
        prio_open(&x, w);
        for (int run = 0; run < 10; run++) {
            prio_reset(&x);
            run_wait(x.s, x.g, "roots");
            check_order(&x.o, w ? "plain thread" : "bound thread", w, run);
        }
        prio_close(&x);
    }
}

struct starter {
    struct prio_world *x;
    atomic_int rc;
};

static void start_from_task(void *arg)
{
    struct starter *st = arg;
    int rc = weft_graph_run(st->x->s, st->x->g);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(st->x->g);
    atomic_store(&st->rc, rc);
}

WT_TEST(promise_graph, roots_by_priority_from_a_task, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        struct prio_world x;
        prio_open(&x, w);
        for (int run = 0; run < 10; run++) {
            prio_reset(&x);
            struct starter st = { &x, 1 };
            WT_ASSERT_EQ(weft_spawn(x.s, start_from_task, &st), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(x.s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&st.rc), WEFT_OK);
            check_order(&x.o, "task", w, run);
        }
        prio_close(&x);
    }
}

/* The same roots in a graph with a condition task (its runs end by a
 * count of records, which the roots' queueing must keep): a root
 * condition picks a task, which runs once per run. */
static atomic_int picked_runs;

static int pick_first(void *arg)
{
    (void)arg;
    return 0;
}

static void picked(void *arg)
{
    (void)arg;
    atomic_fetch_add(&picked_runs, 1);
}

WT_TEST(promise_graph, roots_by_priority_with_a_condition, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        struct prio_world x;
        prio_open(&x, w);
        weft_task *c = weft_graph_add_cond(x.g, pick_first, NULL);
        WT_ASSERT(c != NULL);
        WT_ASSERT_EQ(weft_task_precede(c, add(x.g, picked, NULL)), WEFT_OK);
        atomic_store(&picked_runs, 0);
        for (int run = 0; run < 10; run++) {
            prio_reset(&x);
            run_wait(x.s, x.g, "roots and a condition");
            check_order(&x.o, "with a condition", w, run);
        }
        WT_ASSERT_EQ(atomic_load(&picked_runs), 10);
        prio_close(&x);
    }
}
