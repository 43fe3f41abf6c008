/* Stress: tasks of every kind block on each other in random patterns
 * that have a valid order, and every round completes.
 *
 * A round makes n units of work. A random permutation ranks them; each
 * unit waits for up to three units of higher rank (their events), then
 * records a finish ticket and signals its own event. Waiting only on
 * higher ranks makes the pattern acyclic: running the units from the
 * highest rank down always works, and only that guarantees nothing.
 * Each unit is carried by one of: a plain spawn, a task of a graph (with
 * extra edges from higher to lower rank, which the valid order also
 * satisfies), a chunk of a parallel_for started from a task, a chunk of
 * a parallel_reduce run by the driving thread itself, or a task of a
 * graph run nested inside a spawned task. Some units wait on a channel
 * instead of an event. A unit must never be held back behind one that
 * waits for it: that would hang the round, and the watchdog prints the
 * stall report.
 *
 * Checks: every unit ran exactly once, after each unit it waited for.
 * At 0 workers (a bound thread drives), 1, 2 and 8 workers (a plain
 * thread drives). WEFT_STRESS_SCALE sizes it; WEFT_SEED replays it. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"

#define MAXU 160
#define MAXDEPS 3

enum carrier { SPAWN, GRAPH, LOOP, REDUCE, NESTED, NCARRIERS };

struct unit {
    int rank;
    int ndeps;
    int deps[MAXDEPS];
    bool by_chan;            /* its first dependency arrives on a channel */
    weft_event done;
    atomic_int runs;
    atomic_long ticket;      /* finish order, from 1 */
};

struct round {
    weft_sched *s;
    int n;
    struct unit u[MAXU];
    weft_chan *chan[MAXU];   /* by_chan units: the dependency sends its ticket here */
    int of[NCARRIERS][MAXU]; /* units per carrier, in order */
    int count[NCARRIERS];
    atomic_long tickets;
    weft_graph *graph, *nested;
    weft_waitgroup launched; /* the launcher tasks (loop, nested graph) */
    atomic_int bad;
};

static void unit_run(struct round *r, int i)
{
    struct unit *u = &r->u[i];
    for (int d = 0; d < u->ndeps; d++) {
        if (d == 0 && u->by_chan) {
            long t = 0;
            if (weft_chan_recv(r->chan[i], &t) != WEFT_OK || t <= 0)
                atomic_store(&r->bad, 1);
        }
        weft_event_wait(&r->u[u->deps[d]].done);
    }
    long t = atomic_fetch_add(&r->tickets, 1) + 1;
    atomic_store(&u->ticket, t);
    atomic_fetch_add(&u->runs, 1);
    /* Whoever waits on us by channel (at most one: its first dependency). */
    for (int j = 0; j < r->n; j++)
        if (r->u[j].by_chan && r->u[j].deps[0] == i)
            weft_chan_send(r->chan[j], &t);
    weft_event_signal(&u->done);
}

struct carried { struct round *r; int i; };
static struct carried carried[MAXU];

static void unit_task(void *p)
{
    struct carried *c = p;
    unit_run(c->r, c->i);
}

static void loop_body(size_t b, size_t e, void *p)
{
    struct round *r = p;
    for (size_t k = b; k < e; k++)
        unit_run(r, r->of[LOOP][k]);
}

static void reduce_body(size_t b, size_t e, void *partial, void *p)
{
    struct round *r = p;
    for (size_t k = b; k < e; k++) {
        unit_run(r, r->of[REDUCE][k]);
        *(long *)partial += 1;
    }
}

static void add_long(void *into, const void *from, void *arg)
{
    (void)arg;
    *(long *)into += *(const long *)from;
}

static void loop_launcher(void *p)
{
    struct round *r = p;
    if (weft_parallel_for(r->s, 0, (size_t)r->count[LOOP], 1, loop_body, r) != WEFT_OK)
        atomic_store(&r->bad, 2);
    weft_waitgroup_done(&r->launched);
}

static void nested_launcher(void *p)
{
    struct round *r = p;
    if (weft_graph_run(r->s, r->nested) != WEFT_OK || weft_graph_wait(r->nested) != WEFT_OK)
        atomic_store(&r->bad, 3);
    weft_waitgroup_done(&r->launched);
}

/* Builds a round of n units from rng. */
static void make_round(struct round *r, weft_sched *s, int n, uint64_t *rng)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->n = n;
    int perm[MAXU];
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(wt_rand(rng) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int by_rank[MAXU];
    for (int k = 0; k < n; k++) {
        r->u[perm[k]].rank = k;
        by_rank[k] = perm[k];
    }
    for (int i = 0; i < n; i++) {
        struct unit *u = &r->u[i];
        weft_event_init(&u->done, true, false);
        atomic_init(&u->runs, 0);
        atomic_init(&u->ticket, 0);
        int above = n - 1 - u->rank;
        u->ndeps = above ? (int)(wt_rand(rng) % (MAXDEPS + 1)) : 0;
        if (u->ndeps > above)
            u->ndeps = above;
        for (int d = 0; d < u->ndeps; d++)
            u->deps[d] = by_rank[u->rank + 1 + (int)(wt_rand(rng) % (uint64_t)above)];
        enum carrier c = (enum carrier)(wt_rand(rng) % NCARRIERS);
        r->of[c][r->count[c]++] = i;
        carried[i] = (struct carried){ r, i };
    }
    /* A channel for some units' first dependency: at most one waiter per
     * sender, so the sender's loop above finds it. */
    bool taken[MAXU] = { false };
    for (int i = 0; i < n; i++) {
        struct unit *u = &r->u[i];
        if (u->ndeps && !taken[u->deps[0]] && wt_rand(rng) % 4 == 0) {
            u->by_chan = true;
            taken[u->deps[0]] = true;
            /* Capacity 1: a rendezvous would make the sender's end wait
             * for the receiver's start, which a graph edge may order
             * after the sender (no valid order left). */
            WT_ASSERT_EQ(weft_chan_create(&r->chan[i], sizeof(long), 1), WEFT_OK);
        }
    }
    atomic_init(&r->tickets, 0);
    atomic_init(&r->bad, 0);
    /* The graph: its units, with edges from higher to lower rank. */
    WT_ASSERT_EQ(weft_graph_create(&r->graph), WEFT_OK);
    weft_task *t[MAXU];
    for (int k = 0; k < r->count[GRAPH]; k++) {
        int i = r->of[GRAPH][k];
        t[k] = weft_graph_add(r->graph, unit_task, &carried[i]);
        WT_ASSERT(t[k] != NULL);
    }
    for (int a = 0; a < r->count[GRAPH]; a++) {
        for (int b = 0; b < r->count[GRAPH]; b++) {
            int ia = r->of[GRAPH][a], ib = r->of[GRAPH][b];
            if (r->u[ia].rank > r->u[ib].rank && wt_rand(rng) % 8 == 0)
                WT_ASSERT_EQ(weft_task_precede(t[a], t[b]), WEFT_OK);
        }
    }
    WT_ASSERT_EQ(weft_graph_create(&r->nested), WEFT_OK);
    for (int k = 0; k < r->count[NESTED]; k++)
        WT_ASSERT(weft_graph_add(r->nested, unit_task, &carried[r->of[NESTED][k]]) != NULL);
}

static void run_round(struct round *r)
{
    weft_sched *s = r->s;
    weft_waitgroup_init(&r->launched, 2);
    for (int k = 0; k < r->count[SPAWN]; k++)
        WT_ASSERT_EQ(weft_spawn(s, unit_task, &carried[r->of[SPAWN][k]]), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, r->graph), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, loop_launcher, r), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, nested_launcher, r), WEFT_OK);
    /* The driving thread carries the reduce's units itself. */
    long got = -1, zero = 0;
    WT_ASSERT_EQ(weft_parallel_reduce(s, 0, (size_t)r->count[REDUCE], 1, &got, sizeof got, &zero,
                                      reduce_body, add_long, r), WEFT_OK);
    WT_ASSERT_EQ(got, r->count[REDUCE]);
    WT_ASSERT_EQ(weft_graph_wait(r->graph), WEFT_OK);
    WT_ASSERT_EQ(weft_waitgroup_wait(&r->launched), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);

    WT_ASSERT_EQ(atomic_load(&r->bad), 0);
    for (int i = 0; i < r->n; i++) {
        struct unit *u = &r->u[i];
        WT_ASSERT(atomic_load(&u->runs) == 1, "unit %d ran %d times", i, atomic_load(&u->runs));
        for (int d = 0; d < u->ndeps; d++)
            WT_ASSERT(atomic_load(&r->u[u->deps[d]].ticket) < atomic_load(&u->ticket),
                      "unit %d finished before unit %d, which it waits for", i, u->deps[d]);
    }
    weft_waitgroup_destroy(&r->launched);
    weft_graph_destroy(r->graph);
    weft_graph_destroy(r->nested);
    for (int i = 0; i < r->n; i++) {
        weft_event_destroy(&r->u[i].done);
        if (r->chan[i])
            weft_chan_destroy(r->chan[i]);
    }
}

static void stress_at(unsigned workers, uint64_t rounds)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.seed = wt_seed();
    weft_sched *s;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    uint64_t rng = wt_seed() ^ (0x9e3779b97f4a7c15ull * (workers + 1));
    static struct round r;
    uint64_t units = 0;
    for (uint64_t k = 0; k < rounds; k++) {
        int n = 2 + (int)(wt_rand(&rng) % (MAXU - 1));
        make_round(&r, s, n, &rng);
        run_round(&r);
        units += (uint64_t)n;
    }
    fprintf(stderr, "%u workers: %llu rounds, %llu units, each once and in order\n", workers,
            (unsigned long long)rounds, (unsigned long long)units);
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(stress_block, random_waits_0_workers, .timeout = 240) { stress_at(0, wt_scaled(3000, 30)); }
WT_TEST(stress_block, random_waits_1_worker, .timeout = 240) { stress_at(1, wt_scaled(3000, 30)); }
WT_TEST(stress_block, random_waits_2_workers, .timeout = 240) { stress_at(2, wt_scaled(3000, 30)); }
WT_TEST(stress_block, random_waits_8_workers, .timeout = 240) { stress_at(8, wt_scaled(3000, 30)); }
