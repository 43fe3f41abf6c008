/* Graph building (issue 18), held to what weft.h promises in "task
 * graphs" and "allocation", and to nothing else: the tests use the public
 * API only, so that any correct layout of nodes and edges passes them.
 *
 *   busy_* .. dot_*       EBUSY during a run, cross-graph edges, changes
 *                         between runs, task states, the DOT dump
 *   block_* roots_*       tasks that block on each other in an order that
 *                         can finish ("block anywhere")
 *
 * Every run is checked with tickets: each task takes one from a global
 * counter as it starts and one as it ends; for each edge u -> v,
 * end(u) < start(v), and every task runs exactly once per run. Sizes
 * follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED= replays).
 * build_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "build_util.h"

/* ---- EBUSY while a run is in flight ---- */

static void wait_event(void *arg)
{
    weft_event_wait(arg);
}

/* Every build call and destroy say EBUSY and change nothing: the size,
 * the dump's edges, the next run's order. Renaming is allowed. */
static void busy_calls(weft_sched *s, weft_graph *g, weft_task *const *t, size_t nt)
{
    size_t size = weft_graph_size(g);
    struct dot before = dot_of(g);
    weft_task *out = (weft_task *)g;
    WT_ASSERT_EQ(weft_graph_add_task(g, NULL, NULL, &out), WEFT_EBUSY);
    WT_ASSERT(out == NULL, "a refused add_task left *out %p", (void *)out);
    WT_ASSERT(weft_graph_add(g, NULL, NULL) == NULL);
    /* t[nt - 1] is the last in order: an edge from it back to t[0] would
     * close a cycle, one from t[0] to it is new. */
    WT_ASSERT_EQ(weft_task_precede(t[nt - 1], t[0]), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_task_succeed(t[0], t[nt - 1]), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_task_precede(t[0], t[nt - 1]), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EBUSY);
    weft_task_set_name(t[0], "renamed during the run");
    WT_ASSERT_EQ(weft_graph_size(g), size);
    struct dot after = dot_of(g);
    WT_ASSERT_EQ(after.arrows, before.arrows);
    WT_ASSERT_EQ(after.nodes, before.nodes);
    WT_ASSERT(strstr(after.text, "renamed during the run") != NULL, "a rename during the run was lost");
    free(before.text);
    free(after.text);
}

WT_TEST(build, busy_while_a_run_is_in_flight, .timeout = 60)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        weft_sched *s = open_sched(counts[k]);
        weft_graph *g = new_graph();
        enum { NT = 8 };
        struct rec r[NT];
        weft_task *t[NT];
        weft_event ev;
        weft_event_init(&ev, true, false);
        /* A chain t0 .. t6, and t7 after t3 (a task that blocks, at 1 and
         * 2 workers). */
        for (int i = 0; i < NT; i++)
            t[i] = add(g, stamp, &r[i]);
        struct edges e = { 0 };
        for (int i = 1; i < NT - 1; i++) {
            WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
            edges_push(&e, (uint32_t)i - 1, (uint32_t)i);
        }
        WT_ASSERT_EQ(weft_task_precede(t[3], t[NT - 1]), WEFT_OK);
        edges_push(&e, 3, NT - 1);
        weft_task *blocker = NULL;
        if (counts[k]) {
            blocker = add(g, wait_event, &ev);
            WT_ASSERT_EQ(weft_task_precede(t[2], blocker), WEFT_OK);
        }
        recs_reset(r, NT);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        if (blocker) {
            while (weft_task_state(blocker) != WEFT_TASK_RUNNING)
                sched_yield();
        }
        /* At 0 workers nothing has run yet: the run is in flight until
         * this bound thread waits for it. */
        busy_calls(s, g, t, NT);
        weft_event_signal(&ev);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        check_run("the run the calls were refused during", r, NT, NULL, &e, t);
        /* The refused edges are not there: t[NT-1] -> t[0] would be a
         * cycle, t[0] -> t[NT-1] would be a new line in the dump. */
        recs_reset(r, NT);
        run_wait(s, g, "after refused calls");
        check_run("after refused calls", r, NT, NULL, &e, t);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&ev);
        edges_free(&e);
        close_sched(s, counts[k]);
    }
}

/* Edges between tasks of two graphs are EINVAL, before and after runs of
 * either, and change neither graph. */
WT_TEST(build, cross_graph_edges_are_einval, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph(), *h = new_graph();
    atomic_int ng = 0, nh = 0;
    weft_task *a = add(g, count, &ng), *b = add(g, count, &ng);
    weft_task *x = add(h, count, &nh), *y = add(h, count, &nh);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(x, y), WEFT_OK);
    for (int round = 0; round < 3; round++) {
        struct dot dg = dot_of(g), dh = dot_of(h);
        WT_ASSERT_EQ(weft_task_precede(a, x), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_precede(y, a), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_succeed(b, y), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_succeed(x, b), WEFT_EINVAL);
        /* Would close a cycle across the graphs if taken. */
        WT_ASSERT_EQ(weft_task_precede(b, x), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_precede(y, a), WEFT_EINVAL);
        struct dot dg2 = dot_of(g), dh2 = dot_of(h);
        WT_ASSERT(strcmp(dg.text, dg2.text) == 0 && strcmp(dh.text, dh2.text) == 0,
                  "a cross-graph edge changed a graph");
        free(dg.text);
        free(dh.text);
        free(dg2.text);
        free(dh2.text);
        WT_ASSERT_EQ(weft_graph_size(g), 2);
        WT_ASSERT_EQ(weft_graph_size(h), 2);
        if (round == 0) {
            run_wait(s, g, "g");
        } else {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_run(s, h), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(h), WEFT_OK);
        }
    }
    WT_ASSERT_EQ(atomic_load(&ng), 6);
    WT_ASSERT_EQ(atomic_load(&nh), 4);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(h), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Changes between runs: a root gets a predecessor (new, and old), a sink
 * a successor (new, and old), successor lists grow past any small inline
 * size, an empty join task is put in the middle; each run is in order,
 * and the states say what ran. */
WT_TEST(build, changes_between_runs, .timeout = 60)
{
    unsigned counts[] = { 0, 1, 2, 8 };
    for (int k = 0; k < 4; k++) {
        char what[64];
        snprintf(what, sizeof what, "%u workers", counts[k]);
        weft_sched *s = open_sched(counts[k]);
        weft_graph *g = new_graph();
        enum { MAXT = 64 };
        struct rec r[MAXT];
        weft_task *t[MAXT];
        uint32_t nt = 0;
        struct edges e = { 0 };
#define T_NEW() (t[nt] = add(g, stamp, &r[nt]), nt++)
#define EDGE(u, v)                                                   \
        do {                                                             \
            edges_push(&e, (u), (v));                                    \
            WT_ASSERT_EQ(weft_task_precede(t[u], t[v]), WEFT_OK);        \
        } while (0)
        /* Round 1: a -> b, and x alone (a root and a sink). */
        uint32_t a = T_NEW(), b = T_NEW(), x = T_NEW();
        EDGE(a, b);
        for (uint32_t i = 0; i < nt; i++)
            WT_ASSERT_EQ(weft_task_state(t[i]), WEFT_TASK_PENDING);
        recs_reset(r, nt);
        run_wait(s, g, what);
        check_run(what, r, nt, NULL, &e, t);

        /* Round 2: c -> a (a root no more), b -> d (b a sink no more),
         * x -> b (x a root and sink no more, b gets a second predecessor),
         * a -> y1..y4 (a's successors grow from 1 to 5). */
        uint32_t c = T_NEW(), d = T_NEW();
        WT_ASSERT_EQ(weft_task_state(t[c]), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(t[a]), WEFT_TASK_DONE);   /* the latest run's */
        EDGE(c, a);
        EDGE(b, d);
        EDGE(x, b);
        for (int i = 0; i < 4; i++) {
            uint32_t yi = T_NEW();
            EDGE(a, yi);
        }
        recs_reset(r, nt);
        run_wait(s, g, what);
        check_run(what, r, nt, NULL, &e, t);

        /* Round 3: an empty task j between d and z1..z3; a new root r0
         * before c. Round 4: x2, added (and run) as a root and sink in
         * round 3, then precedes b. */
        uint32_t j = nt;
        t[nt] = add(g, NULL, NULL);
        nt++;
        atomic_store(&r[j].runs, 1);   /* an empty task records nothing: counts as run once */
        WT_ASSERT_EQ(weft_task_precede(t[d], t[j]), WEFT_OK);
        uint32_t z[3];
        for (int i = 0; i < 3; i++) {
            z[i] = T_NEW();
            WT_ASSERT_EQ(weft_task_precede(t[j], t[z[i]]), WEFT_OK);
            edges_push(&e, d, z[i]);   /* through j */
        }
        uint32_t r0 = T_NEW();
        EDGE(r0, c);
        uint32_t x2 = T_NEW();   /* a new sink first, then an edge from it to b */
        recs_reset(r, nt);
        atomic_store(&r[j].runs, 1);
        run_wait(s, g, what);
        check_run(what, r, nt, NULL, &e, t);
        EDGE(x2, b);
        recs_reset(r, nt);
        atomic_store(&r[j].runs, 1);
        run_wait(s, g, what);
        check_run(what, r, nt, NULL, &e, t);
        WT_ASSERT_EQ(weft_graph_size(g), nt);
        struct dot dt = dot_of(g);
        WT_ASSERT_EQ(dt.arrows, e.n - 3 + 1 + 3);   /* d -> z[i] are d -> j and j -> z[i] */
        free(dt.text);

        /* Round 5: the only change is a lone task (a root and a sink):
         * it runs too. */
        T_NEW();
        recs_reset(r, nt);
        atomic_store(&r[j].runs, 1);
        run_wait(s, g, what);
        check_run(what, r, nt, NULL, &e, t);
#undef T_NEW
#undef EDGE
        edges_free(&e);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, counts[k]);
    }
}

/* States: PENDING before any run and for tasks added since; DONE after a
 * run, empty tasks too; RUNNING while a task blocks; SKIPPED for a
 * cancelled task and what depends on it. */
WT_TEST(build, task_states_across_runs, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_task *a = add(g, count, &n), *e = add(g, NULL, NULL), *b = add(g, wait_event, &ev);
    weft_task *c = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(a, e), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(e, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, c), WEFT_OK);
    weft_task *all[] = { a, e, b, c };
    for (int i = 0; i < 4; i++)
        WT_ASSERT_EQ(weft_task_state(all[i]), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    while (weft_task_state(b) != WEFT_TASK_RUNNING)
        sched_yield();
    WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(e), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_PENDING);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    for (int i = 0; i < 4; i++)
        WT_ASSERT_EQ(weft_task_state(all[i]), WEFT_TASK_DONE);
    /* A task added now has never run; the others keep the latest run's. */
    weft_task *d = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_task_state(c), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_precede(c, d), WEFT_OK);
    WT_ASSERT(weft_task_cancel(e), "no run in flight");
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(e), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
    weft_task_reset(e);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    weft_event_signal(&ev);   /* still set: b does not block */
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_DONE);
    WT_ASSERT_EQ(atomic_load(&n), 2 + 1 + 3);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&ev);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* The dump of a random DAG built with duplicates: every task a line, every
 * distinct edge one line, names shown. Before a run and after. */
WT_TEST(build, dot_dump_lists_every_task_and_edge_once, .timeout = 60)
{
    uint64_t seed = wt_seed() ^ 0xd070;
    struct dag d;
    dag_alloc(&d, 500, 500);
    uint64_t rng = seed;
    dag_generate(&d, &shapes[2], &rng);
    weft_graph *g = new_graph();
    for (uint32_t i = 0; i < d.n; i++)
        d.t[i] = add(g, i % 5 ? stamp : NULL, &d.rec[i]);
    for (size_t k = 0; k < d.e.n; k++)
        WT_ASSERT_EQ(weft_task_precede(d.t[d.e.u[k]], d.t[d.e.v[k]]), WEFT_OK);
    for (uint32_t i = 0; i < d.n; i += 7) {
        char nm[32];
        snprintf(nm, sizeof nm, "node %u;", i);
        weft_task_set_name(d.t[i], nm);
    }
    weft_sched *s = make_sched(2);
    for (int run = 0; run < 2; run++) {
        dag_check_dump(&d, g, "dump");
        struct dot dt = dot_of(g);
        for (uint32_t i = 0; i < d.n; i += 7) {
            char nm[32];
            snprintf(nm, sizeof nm, "\"node %u;", i);
            WT_ASSERT(strstr(dt.text, nm) != NULL, "WEFT_SEED=%llu: name %s missing",
                      (unsigned long long)wt_seed(), nm + 1);
        }
        free(dt.text);
        run_wait(s, g, "dump");
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    dag_free(&d);
}

/* ==== blocking on each other in an order that can finish ========================= */

/* A random DAG whose tasks also wait on events of other tasks: task v
 * waits for the events of up to two tasks u earlier in the topological
 * order (not predecessors: siblings, tasks of other branches, later-added
 * roots), and each task signals its own event as it ends. The edges and
 * the waits together are acyclic, so every run can finish, at any worker
 * count, whatever weft holds for later. */
struct bnode {
    struct rec r;
    weft_event ev;
    uint32_t nw, w[2];
    bool yield;
};

static struct bnode *bnodes;

static atomic_int block_bad;

static void block_fn(void *arg)
{
    struct bnode *b = arg;
    for (uint32_t k = 0; k < b->nw; k++)
        if (weft_event_wait(&bnodes[b->w[k]].ev) != WEFT_OK)
            atomic_fetch_add(&block_bad, 1);
    atomic_store_explicit(&b->r.start, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->r.runs, 1, memory_order_relaxed);
    if (b->yield)
        weft_yield();
    atomic_store_explicit(&b->r.end, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
    weft_event_signal(&b->ev);
}

static void block_case(unsigned workers, uint64_t seed, uint64_t salt)
{
    enum { BN = 200 };
    uint64_t rng = (seed ^ salt) | 1;
    bnodes = calloc(BN, sizeof *bnodes);
    uint32_t *order = malloc(sizeof *order * BN);
    WT_ASSERT(bnodes && order);
    for (uint32_t i = 0; i < BN; i++)
        order[i] = i;
    shuffle_u32(order, BN, &rng);
    struct edges e = { 0 }, waits = { 0 };
    for (uint32_t r = 0; r < BN; r++) {
        uint32_t v = order[r];
        weft_event_init(&bnodes[v].ev, true, false);
        bnodes[v].yield = wt_rand(&rng) % 4 == 0;
        if (r + 1 < BN) {
            unsigned deg = wt_rand(&rng) % 3;
            for (unsigned k = 0; k < deg; k++) {
                uint32_t left = BN - 1 - r, span = left < 12 ? left : 12;
                edges_push(&e, v, order[r + 1 + wt_rand(&rng) % span]);
            }
        }
        if (r > 0) {
            unsigned nw = wt_rand(&rng) % 3;
            for (unsigned k = 0; k < nw; k++) {
                uint32_t u = order[wt_rand(&rng) % r];
                bnodes[v].w[bnodes[v].nw++] = u;
                edges_push(&waits, u, v);
            }
        }
    }
    weft_graph *g = new_graph();
    weft_task *t[BN];
    for (uint32_t i = 0; i < BN; i++)
        t[i] = add(g, block_fn, &bnodes[i]);
    for (size_t k = 0; k < e.n; k++)
        WT_ASSERT_EQ(weft_task_precede(t[e.u[k]], t[e.v[k]]), WEFT_OK);

    char what[128];
    snprintf(what, sizeof what, "WEFT_SEED=%llu, blocking DAG %llu, %u workers", (unsigned long long)seed,
             (unsigned long long)salt, workers);
    weft_sched *s = open_sched(workers);
    struct rec r[BN];
    for (int run = 0; run < 3; run++) {
        for (uint32_t i = 0; i < BN; i++)
            weft_event_clear(&bnodes[i].ev);
        atomic_store(&ticket, 0);
        for (uint32_t i = 0; i < BN; i++)
            atomic_store(&bnodes[i].r.runs, 0);
        run_wait(s, g, what);
        WT_ASSERT_EQ(atomic_load(&block_bad), 0);
        for (uint32_t i = 0; i < BN; i++) {
            atomic_store(&r[i].start, atomic_load(&bnodes[i].r.start));
            atomic_store(&r[i].end, atomic_load(&bnodes[i].r.end));
            atomic_store(&r[i].runs, atomic_load(&bnodes[i].r.runs));
        }
        check_run(what, r, BN, NULL, &e, t);
        check_run(what, r, BN, NULL, &waits, NULL);
    }
    close_sched(s, workers);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    for (uint32_t i = 0; i < BN; i++)
        weft_event_destroy(&bnodes[i].ev);
    free(bnodes);
    free(order);
    edges_free(&e);
    edges_free(&waits);
}

WT_TEST(build, block_on_events_in_a_valid_order, .timeout = 60)
{
    uint64_t seed = wt_seed();
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++)
        for (uint64_t i = 0; i < 4; i++)
            block_case(counts[k], seed, (i + 1) * 0x9e3779b97f4a7c15ull + k);
}

/* Two independent roots ping-pong 100 messages through two rendezvous
 * channels; their joint successor was added before either (its edges
 * point back) and checks both finished; a third root, added first, waits
 * on an event one player sets half-way. */
struct pingpong {
    weft_chan *to_q, *to_p;
    weft_event half;
    atomic_int p_done, q_done, bad, joined;
};

static void ping(void *arg)
{
    struct pingpong *pp = arg;
    for (int i = 0; i < 100; i++) {
        int x = -1;
        if (weft_chan_send(pp->to_q, &i) != WEFT_OK || weft_chan_recv(pp->to_p, &x) != WEFT_OK || x != i + 1)
            atomic_fetch_add(&pp->bad, 1);
        if (i == 50)
            weft_event_signal(&pp->half);
    }
    atomic_store(&pp->p_done, 1);
}

static void pong(void *arg)
{
    struct pingpong *pp = arg;
    for (int i = 0; i < 100; i++) {
        int x = -1;
        if (weft_chan_recv(pp->to_q, &x) != WEFT_OK || x != i)
            atomic_fetch_add(&pp->bad, 1);
        x++;
        if (weft_chan_send(pp->to_p, &x) != WEFT_OK)
            atomic_fetch_add(&pp->bad, 1);
    }
    atomic_store(&pp->q_done, 1);
}

static void waits_half(void *arg)
{
    struct pingpong *pp = arg;
    if (weft_event_wait(&pp->half) != WEFT_OK)
        atomic_fetch_add(&pp->bad, 1);
}

static void join_pp(void *arg)
{
    struct pingpong *pp = arg;
    if (atomic_load(&pp->p_done) && atomic_load(&pp->q_done))
        atomic_fetch_add(&pp->joined, 1);
}

WT_TEST(build, roots_ping_pong_through_channels, .timeout = 60)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        struct pingpong pp;
        memset(&pp, 0, sizeof pp);
        WT_ASSERT_EQ(weft_chan_create(&pp.to_q, sizeof(int), 0), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_create(&pp.to_p, sizeof(int), 0), WEFT_OK);
        weft_event_init(&pp.half, true, false);
        weft_sched *s = open_sched(counts[k]);
        weft_graph *g = new_graph();
        /* The waiter and the join first, the players after: a waiting
         * root that comes first in build order, backward edges. */
        weft_task *w = add(g, waits_half, &pp);
        weft_task *j = add(g, join_pp, &pp);
        weft_task *q = add(g, pong, &pp);
        weft_task *p = add(g, ping, &pp);
        WT_ASSERT_EQ(weft_task_succeed(j, p), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(j, q), WEFT_OK);
        for (int run = 1; run <= 5; run++) {
            atomic_store(&pp.p_done, 0);
            atomic_store(&pp.q_done, 0);
            weft_event_clear(&pp.half);
            run_wait(s, g, "ping-pong");
            WT_ASSERT_EQ(atomic_load(&pp.bad), 0);
            WT_ASSERT(atomic_load(&pp.joined) == run, "%u workers: the join ran before both players",
                      counts[k]);
            WT_ASSERT_EQ(weft_task_state(w), WEFT_TASK_DONE);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, counts[k]);
        weft_chan_destroy(pp.to_q);
        weft_chan_destroy(pp.to_p);
        weft_event_destroy(&pp.half);
    }
}
