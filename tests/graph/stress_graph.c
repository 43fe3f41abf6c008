/* Graph stress, tests 13 and 16 of docs/reliability.md: random DAGs with
 * start/finish tickets, the large shapes (chain, fan-out, fan-in,
 * lattice), and cancellation racing execution. A plain program (it runs
 * under TSAN too), at 1, 2 and 4 workers; sizes follow WEFT_STRESS_SCALE
 * and the seed is printed (WEFT_SEED= replays). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

#define NCOUNTS 3   /* the worker counts each WT_FOR_WORKERS below runs: 1, 2, 4 */

/* ---- tickets ------------------------------------------------------------------ */

static atomic_uint_fast64_t ticket;

struct node {
    atomic_uint_fast64_t start, finish;
    atomic_int runs;
    int spin;                    /* a little work, so runs overlap */
};

static void ticketed(void *arg)
{
    struct node *n = arg;
    atomic_store_explicit(&n->start, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n->runs, 1, memory_order_relaxed);
    for (volatile int i = 0; i < n->spin; i++)
        ;
    atomic_store_explicit(&n->finish, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
}

struct dag {
    weft_graph *g;
    weft_task **t;
    struct node *nodes;
    uint32_t n;
    uint32_t *eu, *ev;           /* edges, duplicates included */
    uint32_t ne, cap;
};

static void dag_edge(struct dag *d, uint32_t u, uint32_t v)
{
    if (d->ne == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->eu = realloc(d->eu, sizeof *d->eu * d->cap);
        d->ev = realloc(d->ev, sizeof *d->ev * d->cap);
        WT_ASSERT(d->eu && d->ev);
    }
    d->eu[d->ne] = u;
    d->ev[d->ne] = v;
    d->ne++;
    WT_ASSERT_EQ(weft_task_precede(d->t[u], d->t[v]), WEFT_OK);
}

static void dag_init(struct dag *d, uint32_t n, weft_fn fn)
{
    memset(d, 0, sizeof *d);
    WT_ASSERT_EQ(weft_graph_create(&d->g), WEFT_OK);
    d->n = n;
    d->t = calloc(n, sizeof *d->t);
    d->nodes = calloc(n, sizeof *d->nodes);
    WT_ASSERT(d->t && d->nodes);
    for (uint32_t i = 0; i < n; i++) {
        d->t[i] = weft_graph_add(d->g, fn, &d->nodes[i]);
        WT_ASSERT(d->t[i] != NULL);
    }
}

/* Forward edges over a random permutation, mean out-degree about 3;
 * some edges repeat on purpose (they must act as one). */
static void dag_random(struct dag *d, uint32_t n, uint64_t *rng, weft_fn fn)
{
    dag_init(d, n, fn);
    uint32_t *perm = malloc(sizeof *perm * n);
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)(wt_rand(rng) % i);
        uint32_t x = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = x;
    }
    for (uint32_t p = 0; p + 1 < n; p++) {
        unsigned k = (unsigned)(wt_rand(rng) % 7);   /* 0..6, mean 3 */
        for (unsigned e = 0; e < k; e++) {
            uint32_t q = p + 1 + (uint32_t)(wt_rand(rng) % (n - p - 1));
            dag_edge(d, perm[p], perm[q]);
        }
    }
    free(perm);
}

static void dag_reset_nodes(struct dag *d, int spin_max, uint64_t *rng)
{
    for (uint32_t i = 0; i < d->n; i++) {
        atomic_store(&d->nodes[i].start, 0);
        atomic_store(&d->nodes[i].finish, 0);
        atomic_store(&d->nodes[i].runs, 0);
        d->nodes[i].spin = spin_max ? (int)(wt_rand(rng) % (unsigned)spin_max) : 0;
    }
}

static void dag_free(struct dag *d)
{
    WT_ASSERT_EQ(weft_graph_destroy(d->g), WEFT_OK);
    free(d->t);
    free(d->nodes);
    free(d->eu);
    free(d->ev);
}

/* Every task ran exactly once; every edge's ends in order. Counts order
 * violations into *bad. */
static void dag_check_full(struct dag *d, const char *what, uint64_t *bad)
{
    for (uint32_t i = 0; i < d->n; i++) {
        int r = atomic_load(&d->nodes[i].runs);
        if (r != 1)
            WT_FAIL("%s: task %u ran %d times", what, i, r);
        WT_ASSERT_EQ(weft_task_state(d->t[i]), WEFT_TASK_DONE);
    }
    for (uint32_t e = 0; e < d->ne; e++) {
        uint64_t f = atomic_load(&d->nodes[d->eu[e]].finish);
        uint64_t s = atomic_load(&d->nodes[d->ev[e]].start);
        if (!(f < s)) {
            (*bad)++;
            WT_FAIL("%s: edge %u -> %u: finish %llu >= start %llu", what, d->eu[e], d->ev[e],
                    (unsigned long long)f, (unsigned long long)s);
        }
    }
}

/* ---- 13. random DAGs ---------------------------------------------------------------- */

WT_TEST(graph_stress, t13_random_dags, .timeout = 900)
{
    uint64_t rng = wt_seed();
    uint64_t graphs = wt_scaled(3000, 60);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        uint64_t tasks = 0, edges = 0, bad = 0;
        for (uint64_t i = 0; i < graphs; i++) {
            struct dag d;
            uint32_t n = 1 + (uint32_t)(wt_rand(&rng) % 500);
            dag_random(&d, n, &rng, ticketed);
            /* Run twice: the second run is a resubmission of the same graph. */
            for (int r = 0; r < 2; r++) {
                dag_reset_nodes(&d, 200, &rng);
                WT_ASSERT_EQ(weft_graph_run(s, d.g), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_wait(d.g), WEFT_OK);
                dag_check_full(&d, "random", &bad);
                tasks += n;
                edges += d.ne;
            }
            dag_free(&d);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        fprintf(stderr, "t13: %u workers: %llu random DAGs, %llu task runs, %llu edges checked: "
                "0 lost, 0 duplicated, %llu order violations\n", w,
                (unsigned long long)graphs, (unsigned long long)tasks,
                (unsigned long long)edges, (unsigned long long)bad);
    }
}

/* Chain, fan-out, fan-in and lattice of about 10^5 tasks each. */
WT_TEST(graph_stress, t13_large_shapes, .timeout = 900)
{
    uint64_t rng = wt_seed() ^ 0x5151;
    uint32_t n = (uint32_t)wt_scaled(100000, 2000);
    uint32_t side = 1;
    while ((side + 1) * (side + 1) <= n)
        side++;
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        for (int shape = 0; shape < 4; shape++) {
            struct dag d;
            const char *name;
            switch (shape) {
            case 0:
                name = "chain";
                dag_init(&d, n, ticketed);
                for (uint32_t i = 1; i < n; i++)
                    dag_edge(&d, i - 1, i);
                break;
            case 1:
                name = "fan-out";
                dag_init(&d, n, ticketed);
                for (uint32_t i = 1; i < n; i++)
                    dag_edge(&d, 0, i);
                break;
            case 2:
                name = "fan-in";
                dag_init(&d, n, ticketed);
                for (uint32_t i = 1; i < n; i++)
                    dag_edge(&d, i, 0);
                break;
            default:
                name = "lattice";
                dag_init(&d, side * side, ticketed);
                for (uint32_t i = 0; i < side; i++)
                    for (uint32_t j = 0; j < side; j++) {
                        if (i)
                            dag_edge(&d, (i - 1) * side + j, i * side + j);
                        if (j)
                            dag_edge(&d, i * side + j - 1, i * side + j);
                    }
                break;
            }
            uint64_t bad = 0;
            for (int r = 0; r < 2; r++) {
                dag_reset_nodes(&d, 0, &rng);
                WT_ASSERT_EQ(weft_graph_run(s, d.g), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_wait(d.g), WEFT_OK);
                dag_check_full(&d, name, &bad);
            }
            fprintf(stderr, "t13: %u workers: %s of %u tasks, %u edges, run twice: "
                    "0 lost, 0 duplicated, %llu order violations\n", w, name,
                    d.n, d.ne, (unsigned long long)bad);
            dag_free(&d);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- 16. cancellation racing execution ------------------------------------------------ */

struct canceller {
    struct dag *d;
    uint32_t *which;             /* tasks to cancel, in order */
    uint32_t nwhich;
    uint64_t *cancelled_at;      /* by task: a ticket drawn after a cancel
                                    returned true; 0 = none did */
    bool graph_cancel;           /* then cancel the whole run */
    atomic_int go;
};

static void *cancel_thread(void *p)
{
    struct canceller *c = p;
    while (!atomic_load(&c->go))
        ;
    for (uint32_t i = 0; i < c->nwhich; i++)
        if (weft_task_cancel(c->d->t[c->which[i]]) && !c->cancelled_at[c->which[i]])
            c->cancelled_at[c->which[i]] = atomic_fetch_add(&ticket, 1) + 1;
    if (c->graph_cancel)
        weft_graph_cancel(c->d->g);
    return NULL;
}

WT_TEST(graph_stress, t16_cancel_races, .timeout = 900)
{
    uint64_t rng = wt_seed() ^ 0x1616;
    uint64_t races = wt_scaled(10000, 200);
    uint64_t total = 0, torn = 0, with_skips = 0;
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_sched *s = make_sched(w);
        uint64_t per = races / NCOUNTS + 1;
        for (uint64_t i = 0; i < per; i++, total++) {
            struct dag d;
            uint32_t n = 2 + (uint32_t)(wt_rand(&rng) % 120);
            dag_random(&d, n, &rng, ticketed);
            dag_reset_nodes(&d, 300, &rng);
            struct canceller c = { .d = &d };
            c.nwhich = 1 + (uint32_t)(wt_rand(&rng) % 4);
            c.which = malloc(sizeof *c.which * c.nwhich);
            c.cancelled_at = calloc(n, sizeof *c.cancelled_at);
            for (uint32_t j = 0; j < c.nwhich; j++)
                c.which[j] = (uint32_t)(wt_rand(&rng) % n);
            c.graph_cancel = wt_rand(&rng) % 4 == 0;
            atomic_init(&c.go, 0);
            pthread_t th;
            WT_ASSERT_EQ(pthread_create(&th, NULL, cancel_thread, &c), 0);
            /* Start the cancels just before, at, or just after the run. */
            int when = (int)(wt_rand(&rng) % 3);
            if (when == 0)
                atomic_store(&c.go, 1);
            WT_ASSERT_EQ(weft_graph_run(s, d.g), WEFT_OK);
            if (when != 0)
                atomic_store(&c.go, 1);
            int rc = weft_graph_wait(d.g);
            pthread_join(th, NULL);

            /* Every task ran fully or not at all, as its state says; a
             * cancel that returned true means it did not run, unless the
             * run had ended by then (true is the answer between runs): it
             * finished before that cancel returned. */
            uint32_t skipped = 0;
            for (uint32_t v = 0; v < n; v++) {
                int runs = atomic_load(&d.nodes[v].runs);
                bool whole = runs == 1 && atomic_load(&d.nodes[v].finish) != 0;
                bool none = runs == 0 && atomic_load(&d.nodes[v].start) == 0 &&
                            atomic_load(&d.nodes[v].finish) == 0;
                if (!whole && !none) {
                    torn++;
                    WT_FAIL("race %llu: task %u torn (runs %d)", (unsigned long long)total, v, runs);
                }
                weft_task_status st = weft_task_state(d.t[v]);
                WT_ASSERT(st == (whole ? WEFT_TASK_DONE : WEFT_TASK_SKIPPED),
                          "race %llu: task %u state %d, ran %d", (unsigned long long)total, v, st, whole);
                if (c.cancelled_at[v])
                    WT_ASSERT(none || atomic_load(&d.nodes[v].finish) < c.cancelled_at[v],
                              "race %llu: task %u ran after a successful cancel",
                              (unsigned long long)total, v);
                skipped += none;
            }
            /* Closed under predecessors, and ordered. */
            for (uint32_t e = 0; e < d.ne; e++) {
                struct node *u = &d.nodes[d.eu[e]], *v = &d.nodes[d.ev[e]];
                if (atomic_load(&v->runs)) {
                    WT_ASSERT(atomic_load(&u->runs) == 1,
                              "race %llu: %u ran but its predecessor %u did not",
                              (unsigned long long)total, d.ev[e], d.eu[e]);
                    WT_ASSERT(atomic_load(&u->finish) < atomic_load(&v->start));
                }
            }
            /* Exactly one result, and the right one: a second wait gives
             * the same without blocking. */
            WT_ASSERT_EQ(rc, skipped ? WEFT_ECANCELED : WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(d.g), rc);
            with_skips += skipped != 0;

            /* After reset the graph runs in full. */
            for (uint32_t v = 0; v < n; v++)
                weft_task_reset(d.t[v]);
            dag_reset_nodes(&d, 0, &rng);
            WT_ASSERT_EQ(weft_graph_run(s, d.g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(d.g), WEFT_OK);
            uint64_t bad = 0;
            dag_check_full(&d, "after reset", &bad);
            free(c.which);
            free(c.cancelled_at);
            dag_free(&d);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    fprintf(stderr, "t16: %llu cancellation races at 1, 2, 4 workers (%llu with tasks skipped): "
            "%llu torn, 0 closure violations, every reset run in full\n",
            (unsigned long long)total, (unsigned long long)with_skips, (unsigned long long)torn);
}
