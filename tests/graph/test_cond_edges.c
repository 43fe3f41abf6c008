/* Condition tasks (issue 21): the graph's edges and calls around them,
 * held to weft.h's "condition tasks: branches and loops in a graph".
 *
 *   cycle_*          strong cycles are ECYCLE; weak ones are loops
 *   successors_* dot_*   edge order, duplicate edges, the DOT dump
 *   add_cond_*       bad input and EBUSY
 *   block_*          loop bodies and conditions that block
 *
 * Schedulers: 0 workers with this thread bound, 1, 2 and 8 workers (8
 * oversubscribes the 2-core machine on purpose). A task never asserts (it
 * may run on a worker thread): it records the first failed check's line,
 * and the test asserts there was none. Sizes follow WEFT_STRESS_SCALE; the
 * seed is printed (WEFT_SEED= replays). cond_util.h has the helpers these
 * files share. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "cond_util.h"

/* ==== cycles ============================================================== */

static bool is_in(weft_task *const *a, size_t n, const weft_task *t)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] == t)
            return true;
    return false;
}

WT_TEST(cond, cycle_of_strong_edges_is_ecycle_with_conditions_elsewhere, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_long n = 0;
        atomic_store(&cond_calls, 0);
        weft_graph *g = new_graph();
        /* a loop (fine) and a root condition */
        struct loop L;
        loop_build(g, &L, 5);
        weft_task *rc0 = add_cond(g, answer_counted, (void *)(intptr_t)0);
        weft_task *x = add(g, count, &n);
        edge(rc0, x);
        /* a strong cycle p -> q -> r -> p, r also fed by the loop's done */
        weft_task *p = add(g, count, &n), *q = add(g, count, &n), *r = add(g, count, &n);
        edge(p, q);
        edge(q, r);
        edge(L.t_done, r);
        WT_ASSERT_EQ(weft_task_precede(r, p), WEFT_OK);
        for (int i = 0; i < 2; i++) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
            WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_ECYCLE);
        }
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 0);
        WT_ASSERT_EQ(atomic_load(&cond_calls), 0);
        WT_ASSERT_EQ(atomic_load(&L.init), 0);
        WT_ASSERT_EQ(atomic_load(&L.body), 0);
        weft_task *cyc[16];
        size_t len = weft_graph_find_cycle(g, cyc, 16);
        WT_ASSERT_EQ(len, 3);
        WT_ASSERT(is_in(cyc, 3, p) && is_in(cyc, 3, q) && is_in(cyc, 3, r));
        WT_ASSERT(!is_in(cyc, 3, L.t_cond) && !is_in(cyc, 3, rc0));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, w);
    }
}

/* Only weak cycles: no ECYCLE, find_cycle says 0; cycles of 2 to 1000
 * tasks closed by a condition, conditions in a ring through each other. */
WT_TEST(cond, cycles_through_weak_edges_are_loops, .timeout = 60)
{
    weft_sched *s = open_sched(2);
    size_t lens[] = { 2, 3, 10, 1000 };
    for (size_t li = 0; li < 4; li++) {
        size_t len = lens[li];
        atomic_long n = 0;
        weft_graph *g = new_graph();
        /* a chain t0 -> ... -> t(len-2) -> c, c -0-> t0 ... added backwards */
        weft_task **t = calloc(len, sizeof *t);
        WT_ASSERT(t != NULL);
        t[len - 1] = add_cond(g, ten_then_out, NULL);
        for (size_t i = len - 1; i-- > 0;)
            t[i] = add(g, count, &n);
        for (size_t i = 0; i + 1 < len; i++)
            edge(t[i], t[i + 1]);
        edge(t[len - 1], t[0]);
        atomic_store(&oor_calls, 0);
        /* t0 has a weak in-edge only: no root. Add a start. */
        weft_task *st = add(g, count, &n);
        edge(st, t[0]);
        WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
        weft_task *cyc[4];
        WT_ASSERT_EQ(weft_graph_find_cycle(g, cyc, 4), 0);
        run_wait(s, g, "weak cycle");
        WT_ASSERT_EQ(atomic_load(&oor_calls), 10);
        WT_ASSERT_EQ(atomic_load(&n), 1 + 10 * (long)(len - 1));
        /* now close a strong cycle too: ECYCLE, and find_cycle names it */
        if (len >= 3) {
            edge(t[len - 2], t[0]);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
            weft_task **out = calloc(len, sizeof *out);
            WT_ASSERT(out != NULL);
            size_t got = weft_graph_find_cycle(g, out, len);
            WT_ASSERT_EQ(got, len - 1);
            WT_ASSERT(!is_in(out, got, t[len - 1]), "the condition is on no strong cycle");
            free(out);
        }
        free(t);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    /* a ring of conditions, each picking the next, started by a task */
    {
        enum { RING = 50 };
        weft_graph *g = new_graph();
        weft_task *c[RING];
        atomic_store(&oor_calls, 0);
        for (int i = 0; i < RING; i++)
            c[i] = add_cond(g, ten_then_out, NULL);
        for (int i = 0; i < RING; i++)
            edge(c[i], c[(i + 1) % RING]);
        atomic_long n = 0;
        edge(add(g, count, &n), c[0]);
        WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
        run_wait(s, g, "ring of conditions");
        WT_ASSERT_EQ(atomic_load(&oor_calls), 10);
        WT_ASSERT_EQ(atomic_load(&n), 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    close_sched(s, 2);
}

/* ==== successors, duplicates, DOT ================================================= */

struct dot {
    char *text;
    size_t arrows, dashed;
};

static struct dot dot_of(weft_graph *g)
{
    struct dot d = { 0 };
    d.text = dot_text(g);
    for (char *p = d.text; (p = strstr(p, "->")); p += 2)
        d.arrows++;
    for (char *p = d.text; (p = strstr(p, "style=dashed")); p += 12)
        d.dashed++;
    return d;
}

WT_TEST(cond, successors_in_the_order_added_and_duplicates, .timeout = 60)
{
    weft_sched *s = open_sched(1);
    weft_graph *g = new_graph();
    atomic_long hit[5] = { 0 };
    weft_task *t[5];
    for (int i = 0; i < 5; i++)
        t[i] = add(g, count, &hit[i]);
    weft_task *c = add_cond(g, answer_const, (void *)(intptr_t)0);
    /* order: t3, t1, t4, t0 (t1 through succeed), t1 again, t3 again */
    edge(c, t[3]);
    WT_ASSERT_EQ(weft_task_succeed(t[1], c), WEFT_OK);
    edge(c, t[4]);
    edge(c, t[0]);
    edge(c, t[1]);
    WT_ASSERT_EQ(weft_task_succeed(t[3], c), WEFT_OK);
    weft_task *out[8] = { 0 };
    WT_ASSERT_EQ(weft_task_successors(c, NULL, 0), 4);
    WT_ASSERT_EQ(weft_task_successors(c, out, 8), 4);
    WT_ASSERT(out[0] == t[3] && out[1] == t[1] && out[2] == t[4] && out[3] == t[0],
              "successors not in the order added");
    weft_task *two[2] = { 0 };
    WT_ASSERT_EQ(weft_task_successors(c, two, 2), 4);
    WT_ASSERT(two[0] == t[3] && two[1] == t[1]);
    /* predecessors of a weak target include the condition */
    weft_task *pred[4];
    WT_ASSERT_EQ(weft_task_predecessors(t[4], pred, 4), 1);
    WT_ASSERT(pred[0] == c);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);

    /* answers follow that order: answer i runs the i-th */
    int order[4] = { 3, 1, 4, 0 };
    for (int a = 0; a < 4; a++) {
        atomic_long h[5] = { 0 };
        g = new_graph();
        for (int i = 0; i < 5; i++)
            t[i] = add(g, count, &h[i]);
        c = add_cond(g, answer_const, (void *)(intptr_t)a);
        edge(c, t[3]);
        WT_ASSERT_EQ(weft_task_succeed(t[1], c), WEFT_OK);
        edge(c, t[4]);
        edge(c, t[0]);
        edge(c, t[1]);   /* duplicates: index unchanged */
        edge(c, t[3]);
        run_wait(s, g, "order");
        for (int i = 0; i < 5; i++)   /* t2 has no edge: a root, it runs once */
            WT_ASSERT(atomic_load(&h[i]) == (i == order[a] || i == 2), "answer %d ran task %d %ld times", a, i,
                      (long)atomic_load(&h[i]));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    close_sched(s, 1);
}

WT_TEST(cond, dot_dump_shows_weak_edges_dashed, .timeout = 60)
{
    weft_sched *s = open_sched(2);
    weft_graph *g = new_graph();
    struct loop L;
    loop_build(g, &L, 3);                   /* 2 strong, 2 weak */
    weft_task *c2 = add_cond(g, answer_const, (void *)(intptr_t)-1);
    atomic_long n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    edge(c2, a);                            /* weak */
    edge(c2, b);                            /* weak */
    edge(c2, a);                            /* duplicate */
    edge(a, b);                             /* strong */
    weft_task_set_name(L.t_cond, "the condition");
    struct dot d = dot_of(g);
    WT_ASSERT(d.arrows == 7, "%zu arrows in:\n%s", d.arrows, d.text);
    WT_ASSERT(d.dashed == 4, "%zu dashed in:\n%s", d.dashed, d.text);
    WT_ASSERT(strstr(d.text, "the condition") != NULL);
    free(d.text);
    run_wait(s, g, "dot");
    d = dot_of(g);
    WT_ASSERT(d.arrows == 7 && d.dashed == 4, "after a run: %zu arrows, %zu dashed:\n%s", d.arrows,
              d.dashed, d.text);
    free(d.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, 2);
}

static void wait_event(void *arg)
{
    CHECK(weft_event_wait(arg) == WEFT_OK);
}

WT_TEST(cond, add_cond_bad_input_and_busy, .timeout = 60)
{
    weft_graph *g = new_graph();
    WT_ASSERT(weft_graph_add_cond(NULL, answer_const, NULL) == NULL);
    WT_ASSERT(weft_graph_add_cond(g, NULL, NULL) == NULL);
    weft_task *c = add_cond(g, answer_const, NULL);
    weft_task *plain = add(g, NULL, NULL);
    WT_ASSERT_EQ(weft_task_precede(plain, plain), WEFT_EINVAL);   /* a strong self-edge: a cycle */
    WT_ASSERT_EQ(weft_task_successors(plain, NULL, 0), 0);
    WT_ASSERT_EQ(weft_graph_size(g), 2);   /* a condition's self-edge is a loop: test_gaps.c */
    weft_graph *h = new_graph();
    weft_task *o = add(h, NULL, NULL);
    WT_ASSERT_EQ(weft_task_precede(c, o), WEFT_EINVAL);
    /* EBUSY during a run: a loop that waits on an event */
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_sched *s = open_sched(1);
    weft_graph_destroy(h);
    h = new_graph();
    struct loop L;
    loop_build(h, &L, 3);
    weft_task *gate = add(h, wait_event, &ev);
    edge(gate, L.t_init);
    WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_OK);
    WT_ASSERT(weft_graph_add_cond(h, answer_const, NULL) == NULL);
    WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_EBUSY);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(h), WEFT_OK);
    loop_expect(&L, 1, "busy", 1);
    WT_ASSERT(weft_graph_add_cond(h, answer_const, NULL) != NULL);
    WT_ASSERT_EQ(weft_graph_destroy(h), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&ev);
    close_sched(s, 1);
}

/* ==== blocking ============================================================ */

/* A loop whose body waits for an event that a task of another graph (a
 * loop too) or a plain spawned task signals; ping-pong with a second
 * event, N rounds. */
struct pp {
    weft_event go, ack;     /* auto reset */
    long n;
    atomic_long body, prod, calls, pcalls, bad;
};

static void pp_body(void *arg)
{
    struct pp *P = arg;
    if (weft_event_wait(&P->go) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
    atomic_fetch_add(&P->body, 1);
    weft_event_signal(&P->ack);
}

static int pp_cond(void *arg)
{
    struct pp *P = arg;
    long c = atomic_fetch_add(&P->calls, 1) + 1;
    return c < P->n ? 0 : 1;
}

static void pp_prod(void *arg)
{
    struct pp *P = arg;
    atomic_fetch_add(&P->prod, 1);
    weft_event_signal(&P->go);
    if (weft_event_wait(&P->ack) != WEFT_OK)
        atomic_fetch_add(&P->bad, 1);
}

static int pp_pcond(void *arg)
{
    struct pp *P = arg;
    long c = atomic_fetch_add(&P->pcalls, 1) + 1;
    return c < P->n ? 0 : 1;
}

static void pp_spawned(void *arg)
{
    struct pp *P = arg;
    for (long i = 0; i < P->n; i++)
        pp_prod(P);
}

static weft_graph *pp_loop(struct pp *P, weft_fn body, weft_cond_fn cond)
{
    weft_graph *g = new_graph();
    weft_task *b = add(g, body, P), *c = add_cond(g, cond, P);
    edge(b, c);
    edge(c, b);
    edge(add(g, NULL, NULL), b);
    return g;
}

WT_TEST(cond, block_loop_body_on_another_graph_or_a_spawned_task, .timeout = 120)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        unsigned w = counts[k];
        for (int spawned = 0; spawned < 2; spawned++) {
            struct pp P;
            memset(&P, 0, sizeof P);
            P.n = (long)wt_scaled(2000, 200);
            weft_event_init(&P.go, false, false);
            weft_event_init(&P.ack, false, false);
            weft_sched *s = open_sched(w);
            weft_graph *g = pp_loop(&P, pp_body, pp_cond);
            weft_graph *pg = spawned ? NULL : pp_loop(&P, pp_prod, pp_pcond);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            if (spawned)
                WT_ASSERT_EQ(weft_spawn(s, pp_spawned, &P), WEFT_OK);
            else
                WT_ASSERT_EQ(weft_graph_run(s, pg), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            if (!spawned)
                WT_ASSERT_EQ(weft_graph_wait(pg), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&P.body), P.n);
            WT_ASSERT_EQ(atomic_load(&P.prod), P.n);
            WT_ASSERT_EQ(atomic_load(&P.calls), P.n);
            WT_ASSERT_EQ(atomic_load(&P.bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            if (pg)
                WT_ASSERT_EQ(weft_graph_destroy(pg), WEFT_OK);
            close_sched(s, w);
            weft_event_destroy(&P.go);
            weft_event_destroy(&P.ack);
        }
    }
}

/* A condition that waits on a channel: its answer is the value received
 * (0: loop again, 1: done). A spawned task sends N - 1 zeros and a one. */
struct chloop {
    weft_chan *ch;
    long n;
    atomic_long body, calls, done, bad;
};

static int ch_cond(void *arg)
{
    struct chloop *C = arg;
    int v = -1;
    if (weft_chan_recv(C->ch, &v) != WEFT_OK)
        atomic_fetch_add(&C->bad, 1);
    atomic_fetch_add(&C->calls, 1);
    return v;
}

static void ch_send(void *arg)
{
    struct chloop *C = arg;
    for (long i = 1; i <= C->n; i++) {
        int v = i < C->n ? 0 : 1;
        if (weft_chan_send(C->ch, &v) != WEFT_OK)
            atomic_fetch_add(&C->bad, 1);
    }
}

WT_TEST(cond, block_condition_waits_on_a_channel, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (size_t cap = 0; cap <= 4; cap += 4) {
            struct chloop C;
            memset(&C, 0, sizeof C);
            C.n = (long)wt_scaled(3000, 200);
            WT_ASSERT_EQ(weft_chan_create(&C.ch, sizeof(int), cap), WEFT_OK);
            weft_sched *s = open_sched(w);
            weft_graph *g = new_graph();
            weft_task *b = add(g, count, &C.body);
            weft_task *c = add_cond(g, ch_cond, &C);
            weft_task *d = add(g, count, &C.done);
            edge(b, c);
            edge(c, b);
            edge(c, d);
            edge(add(g, NULL, NULL), b);
            WT_ASSERT_EQ(weft_spawn(s, ch_send, &C), WEFT_OK);
            run_wait(s, g, "channel condition");
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&C.body), C.n);
            WT_ASSERT_EQ(atomic_load(&C.calls), C.n);
            WT_ASSERT_EQ(atomic_load(&C.done), 1);
            WT_ASSERT_EQ(atomic_load(&C.bad), 0);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            close_sched(s, w);
            weft_chan_destroy(C.ch);
        }
    }
}
