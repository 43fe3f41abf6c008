/* Subflow tasks whose sub-graph is filled from several threads at once,
 * and subflow tasks that add nothing at some visits, held to what
 * weft/graph.h promises of weft_subflow_add* ("Callable from: any thread,
 * while the subflow task's function runs") and weft_subflow_join, public
 * API only.
 *
 *   adders_*   the function spawns helper tasks that add to sf while it
 *              adds too, then waits for them (its fiber blocks); the
 *              helpers' subtasks block on an event a subtask of the
 *              function's sets (no edge between them), and the function
 *              joins the helpers' tasks to a last one with edges. Also a
 *              function that adds nothing itself: every task comes from
 *              a helper (the sub-graph's first add is another thread's)
 *   visits_*   one subflow task adding nothing, then tasks, then nothing
 *              again, visit after visit: each visit's sub-graph runs
 *              once, before the successor; the DOT dump shows 0 tasks
 *              for a visit that added none; weft_subflow_join of an sf
 *              that holds nothing returns OK at once
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers. A
 * task never asserts: it counts what went wrong in `bad`, which the test
 * checks. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static atomic_int bad;

/* ---- adders ---------------------------------------------------------------------------- */

#define HELPERS 6

struct adders {
    weft_sched *s;
    bool fn_adds;                   /* the function adds tasks of its own too */
    weft_subflow *sf;               /* the function's, for the helpers */
    weft_waitgroup wg;              /* the helpers: the function waits for them */
    weft_event ev;                  /* set by the function's setter subtask */
    weft_task *mine[HELPERS];       /* each helper's subtask */
    atomic_int ran[HELPERS];        /* each helper's subtask ran */
    atomic_int set_ran, last_ran, after_ran;
    atomic_int last_saw;            /* helpers' subtasks done when the last one ran */
};

struct helper {
    struct adders *a;
    int k;
};
static struct helper helpers[HELPERS];

static void sub_wait(void *arg)
{
    struct helper *h = arg;
    /* The setter comes from the function's adds, or (fn_adds false)
     * from helper 0's: either way no edge orders it before this one. */
    if (weft_event_wait(&h->a->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&h->a->ran[h->k], 1);
}

static void sub_set(void *arg)
{
    struct adders *a = arg;
    atomic_fetch_add(&a->set_ran, 1);
    weft_event_signal(&a->ev);
}

static void sub_last(void *arg)
{
    struct adders *a = arg;
    int done = 0;
    for (int k = 0; k < HELPERS; k++)
        done += atomic_load(&a->ran[k]);
    atomic_store(&a->last_saw, done);
    atomic_fetch_add(&a->last_ran, 1);
}

static void helper_fn(void *arg)
{
    struct helper *h = arg;
    struct adders *a = h->a;
    if (!a->fn_adds && h->k == 0 && !weft_subflow_add(a->sf, sub_set, a))
        atomic_fetch_add(&bad, 1);
    a->mine[h->k] = weft_subflow_add(a->sf, sub_wait, h);
    if (!a->mine[h->k])
        atomic_fetch_add(&bad, 1);
    weft_waitgroup_done(&a->wg);
}

static void adders_fn(weft_subflow *sf, void *arg)
{
    struct adders *a = arg;
    a->sf = sf;
    weft_waitgroup_init(&a->wg, HELPERS);
    for (int k = 0; k < HELPERS; k++) {
        helpers[k] = (struct helper){ a, k };
        if (weft_spawn(a->s, helper_fn, &helpers[k]) != WEFT_OK) {
            atomic_fetch_add(&bad, 1);
            weft_waitgroup_done(&a->wg);
        }
    }
    weft_task *last = NULL;
    if (a->fn_adds) {
        /* Adding while the helpers add. */
        if (!weft_subflow_add(sf, sub_set, a))
            atomic_fetch_add(&bad, 1);
        last = weft_subflow_add(sf, sub_last, a);
        if (!last)
            atomic_fetch_add(&bad, 1);
    }
    if (weft_waitgroup_wait(&a->wg) != WEFT_OK)   /* blocks: its worker runs the helpers */
        atomic_fetch_add(&bad, 1);
    weft_waitgroup_destroy(&a->wg);
    if (!last && !(last = weft_subflow_add(sf, sub_last, a)))
        atomic_fetch_add(&bad, 1);
    for (int k = 0; k < HELPERS; k++)
        if (a->mine[k] && last && weft_task_precede(a->mine[k], last) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
}

static void adders_after(void *arg)
{
    struct adders *a = arg;
    if (atomic_load(&a->last_ran) != 1)
        atomic_fetch_add(&bad, 1);   /* the whole sub-graph ran before the successor */
    atomic_fetch_add(&a->after_ran, 1);
}

static void adders_case(bool fn_adds)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct adders a;
        memset(&a, 0, sizeof a);
        a.s = s;
        a.fn_adds = fn_adds;
        weft_task *t = weft_graph_add_subflow(g, adders_fn, &a);
        WT_ASSERT(t != NULL);
        weft_task *after = add(g, adders_after, &a);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
        for (int r = 0; r < 3; r++) {
            weft_event_init(&a.ev, true, false);
            for (int k = 0; k < HELPERS; k++)
                atomic_store(&a.ran[k], 0);
            atomic_store(&a.set_ran, 0);
            atomic_store(&a.last_ran, 0);
            atomic_store(&a.last_saw, 0);
            atomic_store(&a.after_ran, 0);
            run_wait(s, g, fn_adds ? "adders" : "helpers only");
            for (int k = 0; k < HELPERS; k++)
                WT_ASSERT(atomic_load(&a.ran[k]) == 1, "helper %d's subtask, run %d", k, r);
            WT_ASSERT_EQ(atomic_load(&a.set_ran), 1);
            WT_ASSERT_EQ(atomic_load(&a.last_ran), 1);
            WT_ASSERT(atomic_load(&a.last_saw) == HELPERS, "the last subtask saw %d helpers' done", atomic_load(&a.last_saw));
            WT_ASSERT_EQ(atomic_load(&a.after_ran), 1);
            weft_event_destroy(&a.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

WT_TEST(subflow_adders, adders_with_the_function, .timeout = 120)
{
    adders_case(true);
}

WT_TEST(subflow_adders, adders_only_helpers, .timeout = 120)
{
    adders_case(false);
}

/* ---- visits that add nothing ------------------------------------------------------- */

struct visits {
    int visit;                      /* the function's calls so far */
    atomic_int sub_ran, after_ran;
    int sub_ran_at_after;
    int join_rc;
};

static void vs_sub(void *arg)
{
    struct visits *v = arg;
    atomic_fetch_add(&v->sub_ran, 1);
}

static void vs_fn(weft_subflow *sf, void *arg)
{
    struct visits *v = arg;
    int k = v->visit++;
    v->join_rc = weft_subflow_join(sf);   /* nothing in sf yet: OK at once */
    if (k % 2 == 1) {
        weft_task *x = weft_subflow_add(sf, vs_sub, v);
        weft_task *y = weft_subflow_add(sf, vs_sub, v);
        if (!x || !y || weft_task_precede(x, y) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
}

static void vs_after(void *arg)
{
    struct visits *v = arg;
    v->sub_ran_at_after = atomic_load(&v->sub_ran);
    atomic_fetch_add(&v->after_ran, 1);
}

WT_TEST(subflow_adders, visits_add_nothing_then_tasks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g = new_graph();
        struct visits v;
        memset(&v, 0, sizeof v);
        weft_task *t = weft_graph_add_subflow(g, vs_fn, &v);
        WT_ASSERT(t != NULL);
        weft_task_set_name(t, "vs");
        weft_task *after = add(g, vs_after, &v);
        WT_ASSERT_EQ(weft_task_precede(t, after), WEFT_OK);
        char *text = dot_text(g);   /* before any visit: no sub-graph */
        WT_ASSERT(strstr(text, "subflow: 0 tasks") != NULL, "%s", text);
        free(text);
        for (int r = 0; r < 6; r++) {
            atomic_store(&v.sub_ran, 0);
            atomic_store(&v.after_ran, 0);
            v.join_rc = -1;
            run_wait(s, g, "visits");
            int want = r % 2 == 1 ? 2 : 0;
            WT_ASSERT(atomic_load(&v.sub_ran) == want, "run %d: %d subtasks ran", r, atomic_load(&v.sub_ran));
            WT_ASSERT(v.sub_ran_at_after == want, "run %d: the sub-graph before the successor", r);
            WT_ASSERT_EQ(atomic_load(&v.after_ran), 1);
            WT_ASSERT_EQ(v.join_rc, WEFT_OK);
            WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_DONE);
            text = dot_text(g);
            WT_ASSERT(strstr(text, want ? "subflow: 2 tasks" : "subflow: 0 tasks") != NULL, "run %d: %s", r,
                      text);
            free(text);
        }
        WT_ASSERT_EQ(v.visit, 6);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}
