/* Graph building (issue 18), held to what weft.h promises in "task
 * graphs" and "allocation", and to nothing else: the tests use the public
 * API only, so that any correct layout of nodes and edges passes them.
 *
 *   build_concurrent_*    random DAGs built by 8 threads at once, run at
 *                         0 (bound), 1, 2 and 8 workers, re-run, grown
 *                         between runs and run again
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

/* ==== random DAGs built from 8 threads at once ================================== */

#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* The generator's own promises: tasks with 0, 1, 2, 3 and 100+ distinct
 * successors, one with 100+ predecessors, backward and duplicate edges. */
static void dag_check_shape(const struct dag *d, const char *what)
{
    size_t m;
    uint64_t *k = edges_distinct(&d->e, &m);
    uint32_t *out = calloc(d->n, sizeof *out), *in = calloc(d->n, sizeof *in);
    WT_ASSERT(out && in);
    size_t backward = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t u = (uint32_t)(k[i] >> 32), v = (uint32_t)k[i];
        out[u]++;
        in[v]++;
        backward += u > v;
    }
    bool deg[4] = { false }, big_out = false, big_in = false;
    for (uint32_t i = 0; i < d->n; i++) {
        if (out[i] < 4)
            deg[out[i]] = true;
        big_out |= out[i] >= 100;
        big_in |= in[i] >= 100;
    }
    WT_ASSERT(deg[0] && deg[1] && deg[2] && deg[3] && big_out && big_in,
              "%s: the generator missed a degree: %d%d%d%d %d %d", what, deg[0], deg[1], deg[2],
              deg[3], big_out, big_in);
    WT_ASSERT(backward > 0 && m < d->e.n, "%s: no backward or no duplicate edge", what);
    free(k);
    free(out);
    free(in);
}

struct build_job {
    struct dag *d;
    weft_graph *g;
    unsigned k;
    pthread_barrier_t *bar;
    int bad_rc;             /* the first call that failed: its code */
    size_t bad_at;
};

/* Thread k adds tasks k, k + 8, ...; once all threads have added theirs
 * (the barrier), edges k, k + 8, ... of the shuffled list, half with
 * precede and half with succeed. */
static void *build_thread(void *p)
{
    struct build_job *j = p;
    struct dag *d = j->d;
    for (uint32_t i = j->k; i < d->n; i += NBUILD) {
        weft_task *t = NULL;
        int rc;
        if (i % 3 == 0) {
            t = weft_graph_add(j->g, stamp, &d->rec[i]);
            rc = t ? WEFT_OK : WEFT_ENOMEM;
        } else {
            rc = weft_graph_add_task(j->g, stamp, &d->rec[i], &t);
        }
        if (rc != WEFT_OK && !j->bad_rc) {
            j->bad_rc = rc;
            j->bad_at = i;
        }
        d->t[i] = t;
    }
    pthread_barrier_wait(j->bar);
    for (size_t k = j->k; k < d->e.n; k += NBUILD) {
        weft_task *u = d->t[d->e.u[k]], *v = d->t[d->e.v[k]];
        int rc = k % 2 ? weft_task_precede(u, v) : weft_task_succeed(v, u);
        if (rc != WEFT_OK && !j->bad_rc) {
            j->bad_rc = rc;
            j->bad_at = k;
        }
    }
    return NULL;
}

static void build_concurrently(struct dag *d, weft_graph *g, const char *what)
{
    pthread_barrier_t bar;
    WT_ASSERT_EQ(pthread_barrier_init(&bar, NULL, NBUILD), 0);
    pthread_t th[NBUILD];
    struct build_job jobs[NBUILD];
    for (unsigned k = 0; k < NBUILD; k++) {
        jobs[k] = (struct build_job){ d, g, k, &bar, 0, 0 };
        WT_ASSERT_EQ(pthread_create(&th[k], NULL, build_thread, &jobs[k]), 0);
    }
    for (unsigned k = 0; k < NBUILD; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&bar);
    for (unsigned k = 0; k < NBUILD; k++)
        WT_ASSERT(jobs[k].bad_rc == 0, "%s: thread %u: call %zu failed: %s", what, k,
                  jobs[k].bad_at, weft_err_name(jobs[k].bad_rc));
    WT_ASSERT_EQ(weft_graph_size(g), d->n);
    /* Every task once (each thread's tasks are distinct objects). */
    for (uint32_t i = 0; i < d->n; i++)
        for (uint32_t j = i + 1; j < d->n && j < i + NBUILD + 1; j++)
            WT_ASSERT(d->t[i] != d->t[j], "%s: tasks %u and %u are one object", what, i, j);
}

/* Grows a graph that has run: m new tasks, each tied to old ones both
 * ways (new before old: the old task may have been a root; old before
 * new: it may have been a sink), plus old-to-old edges that make a root
 * a non-root and a sink a non-sink. Acyclic: every edge goes up in rank. */
static void dag_extend(struct dag *d, weft_graph *g, uint32_t m, uint64_t *rng)
{
    uint32_t n = d->n;
    WT_ASSERT(n + m <= d->cap);
    size_t ne;
    uint64_t *k = edges_distinct(&d->e, &ne);
    uint8_t *has_in = calloc(n, 1), *has_out = calloc(n, 1);
    WT_ASSERT(has_in && has_out);
    for (size_t i = 0; i < ne; i++) {
        has_out[k[i] >> 32] = 1;
        has_in[(uint32_t)k[i]] = 1;
    }
    free(k);
    uint32_t roots[2] = { UINT32_MAX, UINT32_MAX }, sinks[2] = { UINT32_MAX, UINT32_MAX };
    unsigned nr = 0, ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!has_in[i] && nr < 2)
            roots[nr++] = i;
        if (!has_out[i] && ns < 2)
            sinks[ns++] = i;
    }
    free(has_in);
    free(has_out);
    WT_ASSERT(nr >= 1 && ns >= 1);

    for (uint32_t q = 0; q < m; q++) {
        uint32_t id = n + q;
        if (q == 0)
            d->rank[id] = d->rank[roots[0]] - 0.5;   /* before a root */
        else if (q == 1)
            d->rank[id] = d->rank[sinks[0]] + 0.5;   /* after a sink */
        else
            d->rank[id] = (double)(wt_rand(rng) % n) + 0.25;
        atomic_store(&d->rec[id].runs, 0);
        d->t[id] = add(g, stamp, &d->rec[id]);
        WT_ASSERT_EQ(weft_task_state(d->t[id]), WEFT_TASK_PENDING);   /* never run */
    }
    d->n = n + m;
    struct edges add_e = { 0 };
    edges_push(&add_e, n, roots[0]);
    edges_push(&add_e, sinks[0], n + 1);
    if (nr == 2)
        edges_push(&add_e, roots[0], roots[1]);
    if (ns == 2)
        edges_push(&add_e, sinks[0], sinks[1]);
    for (uint32_t q = 2; q < m; q++) {
        uint32_t a = n + q, b = wt_rand(rng) % n, c = wt_rand(rng) % n;
        edges_push(&add_e, a, b);
        edges_push(&add_e, c, a);
    }
    for (uint32_t q = 0; q < m; q++)
        edges_push(&add_e, wt_rand(rng) % (n + m), wt_rand(rng) % (n + m));
    for (size_t i = 0; i < add_e.n; i++) {
        uint32_t u = add_e.u[i], v = add_e.v[i];
        if (u == v || d->rank[u] == d->rank[v])
            continue;
        if (d->rank[u] > d->rank[v]) {
            uint32_t x = u;
            u = v;
            v = x;
        }
        edges_push(&d->e, u, v);
        WT_ASSERT_EQ(weft_task_precede(d->t[u], d->t[v]), WEFT_OK);
    }
    edges_free(&add_e);
}

static void concurrent_case(const struct shape *sh, unsigned workers, uint64_t seed, uint64_t salt)
{
    uint32_t n = (uint32_t)wt_scaled(sh->n, 300);
    uint32_t m = n / 10 + 8;
    struct dag d;
    dag_alloc(&d, n, n + m);
    uint64_t rng = (seed ^ salt) | 1;
    dag_generate(&d, sh, &rng);
    char what[160];
    snprintf(what, sizeof what, "WEFT_SEED=%llu, %s DAG %llx of %u tasks and %zu edge calls, %u workers",
             (unsigned long long)seed, sh->name, (unsigned long long)salt, n, d.e.n, workers);
    dag_check_shape(&d, what);

    weft_sched *s = open_sched(workers);
    weft_graph *g = new_graph();
    build_concurrently(&d, g, what);
    dag_check_dump(&d, g, what);
    for (int run = 1; run <= 3; run++) {
        char w2[200];
        snprintf(w2, sizeof w2, "%s, run %d", what, run);
        recs_reset(d.rec, d.n);
        run_wait(s, g, w2);
        check_run(w2, d.rec, d.n, NULL, &d.e, d.t);
    }
    dag_extend(&d, g, m, &rng);
    WT_ASSERT_EQ(weft_graph_size(g), n + m);
    dag_check_dump(&d, g, what);
    char w2[200];
    snprintf(w2, sizeof w2, "%s, grown by %u tasks", what, m);
    recs_reset(d.rec, d.n);
    run_wait(s, g, w2);
    check_run(w2, d.rec, d.n, NULL, &d.e, d.t);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, workers);
    dag_free(&d);
}

/* Four rounds of every shape (fewer in sanitizer builds). */
static void concurrent_at(unsigned workers)
{
    uint64_t seed = wt_seed();
    uint64_t rounds = wt_scaled(4, 1);
    for (uint64_t round = 0; round < rounds; round++)
        for (size_t i = 0; i < NSHAPES; i++)
            concurrent_case(&shapes[i], workers, seed,
                            (round * NSHAPES + i + 1) * 0x9e3779b97f4a7c15ull + workers);
}

WT_TEST(build, concurrent_random_dags_0_workers_bound, .timeout = 120)
{
    concurrent_at(0);
}

WT_TEST(build, concurrent_random_dags_1_worker, .timeout = 120)
{
    concurrent_at(1);
}

WT_TEST(build, concurrent_random_dags_2_workers, .timeout = 120)
{
    concurrent_at(2);
}

WT_TEST(build, concurrent_random_dags_8_workers, .timeout = 120)
{
    concurrent_at(8);
}
