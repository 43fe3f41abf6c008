/* Graph building (issue 18), held to what weft.h promises in "task
 * graphs" and "allocation", and to nothing else: the tests use the public
 * API only, so that any correct layout of nodes and edges passes them.
 *
 *   build_concurrent_*    random DAGs built by 8 threads at once, run at
 *                         0 (bound), 1, 2 and 8 workers, re-run, grown
 *                         between runs and run again
 *   alloc_fail_every_n    the N-th allocation fails during a build: the
 *                         failing call changes nothing, the others stand
 *   cycle_*               ECYCLE, with nothing run, for cycles of 2 to
 *                         10^5 tasks; self-edges are EINVAL
 *   dup_* .. dot_*        duplicate edges, wide fans, 10^6 tasks, EBUSY
 *                         during a run, cross-graph edges, changes between
 *                         runs, task states, the DOT dump
 *   block_*               tasks that block on each other in an order that
 *                         can finish ("block anywhere")
 *
 * Every run is checked with tickets: each task takes one from a global
 * counter as it starts and one as it ends; for each edge u -> v,
 * end(u) < start(v), and every task runs exactly once per run. Sizes
 * follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED= replays). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

/* ---- tickets ----------------------------------------------------------------- */

static atomic_uint_fast64_t ticket;

struct rec {
    atomic_uint_fast64_t start, end;
    atomic_uint runs;
};

/* Relaxed stores: the run's end orders them before the checker's reads;
 * the tickets themselves are read-modify-writes of one counter, so a
 * task that ends before another starts draws the smaller ticket. */
static void stamp(void *arg)
{
    struct rec *r = arg;
    atomic_store_explicit(&r->start, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->runs, 1, memory_order_relaxed);
    atomic_store_explicit(&r->end, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
}

static void recs_reset(struct rec *r, size_t n)
{
    atomic_store(&ticket, 0);
    for (size_t i = 0; i < n; i++) {
        atomic_store(&r[i].start, 0);
        atomic_store(&r[i].end, 0);
        atomic_store(&r[i].runs, 0);
    }
}

/* ---- edge lists ----------------------------------------------------------------- */


/* Every task i < n with present[i] (all of them if present is NULL) ran
 * exactly once, the others never; every edge's u ended before its v
 * started; every present task reads DONE if t is given. */
static void check_run(const char *what, struct rec *r, uint32_t n, const bool *present,
                      const struct edges *e, weft_task *const *t)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned want = !present || present[i];
        unsigned got = atomic_load(&r[i].runs);
        WT_ASSERT(got == want, "%s: task %u ran %u times, want %u", what, i, got, want);
        if (t && want)
            WT_ASSERT_EQ(weft_task_state(t[i]), WEFT_TASK_DONE);
    }
    for (size_t k = 0; k < e->n; k++) {
        uint32_t u = e->u[k], v = e->v[k];
        uint64_t end_u = atomic_load(&r[u].end), start_v = atomic_load(&r[v].start);
        WT_ASSERT(end_u < start_v, "%s: edge %u -> %u: %u ended at %llu, %u started at %llu",
                  what, u, v, u, (unsigned long long)end_u, v, (unsigned long long)start_v);
    }
}

/* ---- the DOT dump, counted ---------------------------------------------------------- */

struct dot {
    char *text;
    size_t nodes;    /* lines with a label and no arrow */
    size_t arrows;   /* lines with "->" */
};

static struct dot dot_of(weft_graph *g)
{
    struct dot d = { 0 };
    d.text = dot_text(g);
    for (char *line = d.text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "->"))
            d.arrows++;
        else if (strstr(line, "label="))
            d.nodes++;
        if (!nl)
            break;
        *nl = '\n';
        line = nl + 1;
    }
    return d;
}

/* ---- schedulers: W workers, or none and this thread bound ------------------------- */

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void shuffle_u32(uint32_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = wt_rand(rng) % i;
        uint32_t x = a[i - 1];
        a[i - 1] = a[j];
        a[j] = x;
    }
}

/* ==== 1. random DAGs built from 8 threads at once ================================== */

#define NBUILD 8

/* How a random DAG looks. Out-degrees: p0, p1, p2, p3 percent of the
 * tasks get 0 to 3 successors, the rest 4 to 8; `hubs` tasks get 100 to
 * 199 distinct successors, one task 100 to 149 predecessors. local: the
 * percentage of successors taken among the next 8 in topological order
 * (long chains), the others anywhere after. dup: the percentage of edges
 * added twice. */
struct shape {
    const char *name;
    uint32_t n;
    unsigned p0, p1, p2, p3, hubs, local, dup;
};

static const struct shape shapes[] = {
    { "sparse", 3000, 35, 45, 10, 5, 2, 60, 3 },
    { "mean3", 2000, 10, 25, 25, 25, 3, 50, 5 },
    { "dense", 600, 5, 5, 10, 10, 4, 30, 10 },
    { "small", 300, 40, 30, 15, 10, 1, 70, 20 },
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

struct dag {
    uint32_t n, cap;        /* tasks now, room for */
    double *rank;           /* a topological order: edges go up in rank */
    struct edges e;         /* in the order added, duplicates included */
    struct rec *rec;
    weft_task **t;
};

static void dag_alloc(struct dag *d, uint32_t n, uint32_t cap)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->cap = cap;
    d->rank = calloc(cap, sizeof *d->rank);
    d->rec = calloc(cap, sizeof *d->rec);
    d->t = calloc(cap, sizeof *d->t);
    WT_ASSERT(d->rank && d->rec && d->t);
}

static void dag_free(struct dag *d)
{
    free(d->rank);
    free(d->rec);
    free(d->t);
    edges_free(&d->e);
}

/* Edges over a random permutation of the tasks (the topological order),
 * so about half go from a task added later to one added earlier. Then
 * the edge list is shuffled: the threads add them in no useful order. */
static void dag_generate(struct dag *d, const struct shape *sh, uint64_t *rng)
{
    uint32_t n = d->n;
    uint32_t *order = malloc(sizeof *order * n);
    WT_ASSERT(order != NULL);
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    shuffle_u32(order, n, rng);
    for (uint32_t r = 0; r < n; r++)
        d->rank[order[r]] = r;
    for (uint32_t r = 0; r + 1 < n; r++) {
        uint32_t u = order[r], left = n - 1 - r;
        bool hub = false;
        for (unsigned h = 0; h < sh->hubs; h++)
            hub |= r == h * n / (2 * sh->hubs) + 1;
        if (hub) {
            uint32_t deg = 100 + wt_rand(rng) % 100;
            if (deg > left)
                deg = left;
            for (uint32_t j = 0; j < deg; j++) {
                uint32_t v = order[r + 1 + (uint64_t)j * left / deg];
                edges_push(&d->e, u, v);
                if (wt_rand(rng) % 100 < sh->dup)
                    edges_push(&d->e, u, v);
            }
            continue;
        }
        unsigned roll = wt_rand(rng) % 100, deg;
        if (roll < sh->p0)
            deg = 0;
        else if (roll < sh->p0 + sh->p1)
            deg = 1;
        else if (roll < sh->p0 + sh->p1 + sh->p2)
            deg = 2;
        else if (roll < sh->p0 + sh->p1 + sh->p2 + sh->p3)
            deg = 3;
        else
            deg = 4 + wt_rand(rng) % 5;
        /* Distinct successors: offsets drawn without repeats. */
        uint32_t offs[8];
        unsigned got = 0;
        for (unsigned tries = 0; got < deg && tries < 64; tries++) {
            uint32_t span = wt_rand(rng) % 100 < sh->local && left > 8 ? 8 : left;
            uint32_t off = 1 + wt_rand(rng) % span;
            bool seen = false;
            for (unsigned k = 0; k < got; k++)
                seen |= offs[k] == off;
            if (!seen)
                offs[got++] = off;
        }
        for (unsigned k = 0; k < got; k++) {
            uint32_t v = order[r + offs[k]];
            edges_push(&d->e, u, v);
            if (wt_rand(rng) % 100 < sh->dup)
                edges_push(&d->e, u, v);
        }
    }
    /* A fan-in: the last task in the order gets 100 to 149 predecessors. */
    uint32_t sink = order[n - 1];
    uint32_t fan = 100 + wt_rand(rng) % 50;
    for (uint32_t k = 0; k < fan; k++)
        edges_push(&d->e, order[(uint64_t)k * (n - 1) / fan], sink);
    free(order);

    /* Shuffle the edges. */
    for (size_t i = d->e.n; i > 1; i--) {
        size_t j = wt_rand(rng) % i;
        uint32_t u = d->e.u[i - 1], v = d->e.v[i - 1];
        d->e.u[i - 1] = d->e.u[j];
        d->e.v[i - 1] = d->e.v[j];
        d->e.u[j] = u;
        d->e.v[j] = v;
    }
}

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

/* Counts edges in the dump: one per distinct edge, one node per task. */
static void dag_check_dump(struct dag *d, weft_graph *g, const char *what)
{
    size_t m;
    free(edges_distinct(&d->e, &m));
    struct dot dt = dot_of(g);
    WT_ASSERT(dt.arrows == m && dt.nodes == d->n, "%s: the dump has %zu edges and %zu tasks, want %zu and %u",
              what, dt.arrows, dt.nodes, m, d->n);
    free(dt.text);
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

/* ==== 2. allocation failure at every N during a build ================================ */

/* A chain of CH tasks; a fan-out task with FAN successors hanging off the
 * chain's middle; a fan-in task with FAN predecessors, added before them
 * (its edges point back), ahead of the chain's last task; names on some. */
enum { CH = 3000, FAN = 600 };
#define A_FANOUT CH
#define A_FANIN (CH + 1 + FAN)
#define A_TASKS (CH + 1 + FAN + 1 + FAN)

static struct {
    walloc *a;
    weft_graph *g;
    weft_task *t[A_TASKS];
    bool present[A_TASKS];
    char label[A_TASKS][48];   /* the name the dump must show; "" = none */
    struct rec rec[A_TASKS];
    struct edges e;            /* the edges whose calls succeeded */
    long enomem, hits;         /* calls that said ENOMEM; allocations failed on purpose */
    const char *where;         /* the call that hit the failure */
} A;

static bool hit_since(long failed_before)
{
    return atomic_load(&A.a->failed) != failed_before;
}

static void a_add(uint32_t i, const char *where)
{
    size_t before = weft_graph_size(A.g);
    long f0 = atomic_load(&A.a->failed);
    weft_task *t;
    int rc;
    if (i % 2) {
        t = weft_graph_add(A.g, stamp, &A.rec[i]);
        rc = t ? WEFT_OK : WEFT_ENOMEM;
    } else {
        t = (weft_task *)&A;   /* not NULL: a failure must clear it */
        rc = weft_graph_add_task(A.g, stamp, &A.rec[i], &t);
        if (rc != WEFT_OK)
            WT_ASSERT(t == NULL, "a failed add_task left *out %p", (void *)t);
    }
    bool hit = hit_since(f0);
    if (rc != WEFT_OK) {
        WT_ASSERT(rc == WEFT_ENOMEM && hit, "add of task %u (%s): %s, failed allocation: %d",
                  i, where, weft_err_name(rc), hit);
        WT_ASSERT(weft_graph_size(A.g) == before, "a failed add of task %u (%s) changed the size", i, where);
        A.enomem++;
        A.where = where;
        return;
    }
    WT_ASSERT(!hit, "add of task %u (%s) succeeded though its allocation failed", i, where);
    WT_ASSERT_EQ(weft_graph_size(A.g), before + 1);
    A.t[i] = t;
    A.present[i] = true;
}

static void a_edge(uint32_t u, uint32_t v, const char *where)
{
    if (!A.present[u] || !A.present[v])
        return;
    size_t before = weft_graph_size(A.g);
    long f0 = atomic_load(&A.a->failed);
    int rc = (u + v) % 2 ? weft_task_precede(A.t[u], A.t[v]) : weft_task_succeed(A.t[v], A.t[u]);
    bool hit = hit_since(f0);
    WT_ASSERT_EQ(weft_graph_size(A.g), before);
    if (rc != WEFT_OK) {
        WT_ASSERT(rc == WEFT_ENOMEM && hit, "edge %u -> %u (%s): %s, failed allocation: %d",
                  u, v, where, weft_err_name(rc), hit);
        A.enomem++;
        A.where = where;
        return;
    }
    WT_ASSERT(!hit, "edge %u -> %u (%s) succeeded though its allocation failed", u, v, where);
    edges_push(&A.e, u, v);
}

/* A name ends in ';' so that no name is a prefix of another in the dump.
 * Renames ('R') are longer than first names, so that they cannot reuse
 * the old name's memory: a rename that fails keeps the old name. */
static void a_name(uint32_t i, char tag)
{
    if (!A.present[i])
        return;
    char nm[48];
    snprintf(nm, sizeof nm, "%c%u;%s", tag, i, tag == 'R' ? "................................" : "");
    long f0 = atomic_load(&A.a->failed);
    weft_task_set_name(A.t[i], nm);
    if (hit_since(f0))
        A.where = "set_name";   /* the old name stays */
    else
        snprintf(A.label[i], sizeof A.label[i], "%s", nm);
}

static void a_build(void)
{
    uint32_t prev = UINT32_MAX;
    for (uint32_t i = 0; i < CH; i++) {
        a_add(i, "chain task");
        if (!A.present[i])
            continue;
        if (prev != UINT32_MAX)
            a_edge(prev, i, "chain edge");
        prev = i;
        if (i % 100 == 0)
            a_name(i, 'c');
        if (i % 300 == 0)
            a_name(i, 'R');   /* a rename: if it fails, the 'c' name stays */
    }
    a_add(A_FANOUT, "fan-out task");
    a_name(A_FANOUT, 'o');
    a_edge(CH / 2, A_FANOUT, "into the fan-out");
    for (uint32_t k = 0; k < FAN; k++) {
        uint32_t s = A_FANOUT + 1 + k;
        a_add(s, "fan-out successor");
        a_edge(A_FANOUT, s, "fan-out edge");
    }
    a_add(A_FANIN, "fan-in task");
    a_name(A_FANIN, 'i');
    for (uint32_t k = 0; k < FAN; k++) {
        uint32_t p = A_FANIN + 1 + k;
        a_add(p, "fan-in predecessor");
        a_edge(p, A_FANIN, "fan-in edge (backward)");
    }
    a_edge(A_FANIN, CH - 1, "fan-in to the chain's end");
    a_edge(A_FANOUT, A_FANOUT + 1, "a duplicate fan-out edge");
    a_edge(A_FANIN + FAN, A_FANIN, "a duplicate fan-in edge");
    a_edge(0, 1, "a duplicate chain edge");
}

/* Checks the dump against what succeeded: the edges, the tasks, the names.
 * The dump allocates too: ENOMEM writes nothing, and the retry works. */
static void a_check_dump(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_ASSERT(f != NULL);
    long f0 = atomic_load(&A.a->failed);
    int rc = weft_graph_dump_dot(A.g, f);
    if (rc == WEFT_ENOMEM) {
        WT_ASSERT(hit_since(f0), "dump: ENOMEM with no failed allocation");
        fflush(f);
        WT_ASSERT(len == 0, "a dump that failed wrote %zu bytes", len);
        A.where = "dump";
        rc = weft_graph_dump_dot(A.g, f);
    }
    WT_ASSERT_EQ(rc, WEFT_OK);
    WT_ASSERT_EQ(fclose(f), 0);
    size_t arrows = 0, nodes = 0;
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++) {
        const char *line = p;
        while (line > text && line[-1] != '\n')
            line--;
        if (memmem(line, (size_t)(p - line), "->", 2))
            arrows++;
        else if (memmem(line, (size_t)(p - line), "label=", 6))
            nodes++;
    }
    size_t m, present = 0;
    free(edges_distinct(&A.e, &m));
    for (uint32_t i = 0; i < A_TASKS; i++)
        present += A.present[i];
    WT_ASSERT(arrows == m, "the dump has %zu edges; %zu distinct edge calls succeeded", arrows, m);
    WT_ASSERT(nodes == present, "the dump has %zu tasks; %zu adds succeeded", nodes, present);
    for (uint32_t i = 0; i < A_TASKS; i++) {
        if (!A.label[i][0])
            continue;
        WT_ASSERT(strstr(text, A.label[i]) != NULL, "task %u: name %s missing", i, A.label[i]);
        if (A.label[i][0] == 'c') {   /* no rename took: a failed one left no trace */
            char other[16];
            snprintf(other, sizeof other, "R%u;", i);
            WT_ASSERT(strstr(text, other) == NULL, "task %u: a failed rename to %s shows", i, other);
        }
    }
    free(text);
}

/* One build with the N-th allocation (from the first build call on)
 * failing: the call that hit it said so and changed nothing, every other
 * call stood, and the graph runs exactly what was built. Returns true if
 * the failure was hit (somewhere: build, first run, dump). */
static bool a_round(weft_sched *s, long n)
{
    walloc_fail_at(A.a, 0);
    memset(A.t, 0, sizeof A.t);
    memset(A.present, 0, sizeof A.present);
    memset(A.label, 0, sizeof A.label);
    A.e.n = 0;
    A.enomem = 0;
    A.where = NULL;
    A.g = new_graph();
    walloc_fail_at(A.a, n);
    a_build();
    long build_calls = atomic_load(&A.a->calls);

    /* The first run checks the graph, which may allocate: ENOMEM there
     * starts nothing, and the next run goes. */
    recs_reset(A.rec, A_TASKS);
    long f0 = atomic_load(&A.a->failed);
    int rc = weft_graph_run(s, A.g);
    if (rc == WEFT_ENOMEM) {
        WT_ASSERT(hit_since(f0), "run: ENOMEM with no failed allocation");
        WT_ASSERT_EQ(weft_graph_wait(A.g), WEFT_OK);   /* no run in flight: at once */
        WT_ASSERT(atomic_load(&ticket) == 0, "a run that failed with ENOMEM ran tasks");
        A.where = "first run";
        rc = weft_graph_run(s, A.g);
    }
    WT_ASSERT(rc == WEFT_OK, "N = %ld: run: %s", n, weft_err_name(rc));
    WT_ASSERT_EQ(weft_graph_wait(A.g), WEFT_OK);
    char what[96];
    snprintf(what, sizeof what, "allocation %ld failed (%s)", n, A.where ? A.where : "none");
    check_run(what, A.rec, A_TASKS, A.present, &A.e, NULL);

    /* Unchanged since: the next run allocates nothing. */
    long calls = atomic_load(&A.a->calls);
    recs_reset(A.rec, A_TASKS);
    run_wait(s, A.g, what);
    check_run(what, A.rec, A_TASKS, A.present, &A.e, NULL);
    WT_ASSERT(atomic_load(&A.a->calls) == calls, "%s: a run of an unchanged graph made %ld allocations",
              what, atomic_load(&A.a->calls) - calls);

    a_check_dump();
    bool hit = atomic_load(&A.a->failed) != 0;
    WT_ASSERT(hit == (A.where != NULL), "%s: the failure hit no call that could see it", what);
    WT_ASSERT(A.enomem <= 1, "%s: %ld calls said ENOMEM for one failed allocation", what, A.enomem);
    WT_ASSERT_EQ(weft_graph_destroy(A.g), WEFT_OK);
    A.g = NULL;
    walloc_fail_at(A.a, 0);
    /* Setting the allocator again, with no graph left, gives back the
     * headers a checked build keeps after destroy (weft_graph_destroy). */
    weft_set_allocator(walloc_hooks(A.a));
    WT_ASSERT(atomic_load(&A.a->blocks) == 0, "%s: %ld blocks left after destroy", what,
              atomic_load(&A.a->blocks));
    if (!hit)
        fprintf(stderr, "alloc_fail_every_n: a whole build makes %ld allocations\n", build_calls);
    return hit;
}

WT_TEST(build, alloc_fail_every_n, .timeout = 300)
{
    /* The scheduler has an allocator of its own: only the graph's fail. */
    static walloc sa = WALLOC_INIT("scheduler"), fa = WALLOC_INIT("failing");
    walloc_hooks(&sa);
    walloc_hooks(&fa);
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    c.allocator = sa.hooks;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    weft_set_allocator(&fa.hooks);
    A.a = &fa;
    long rounds = 0, run_failed = 0;
    /* Every N up to 400, then steps of about 6%. */
    for (long n = 1;; n += n < 400 ? 1 : n / 16) {
        WT_ASSERT(n < 10 * 1000 * 1000, "the build never stops allocating");
        bool hit = a_round(s, n);
        rounds++;
        if (!hit)
            break;
        run_failed += A.where && strcmp(A.where, "first run") == 0;
    }
    weft_set_allocator(NULL);
    edges_free(&A.e);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&sa.blocks), 0);
    WT_ASSERT(rounds >= 3, "only %ld rounds: the build hardly allocates", rounds);
    fprintf(stderr, "alloc_fail_every_n: %ld rounds, %ld with the first run's check failing\n",
            rounds, run_failed);
}

/* ==== 3. cycles: ECYCLE and nothing runs ========================================== */

/* A ring of len tasks entered from a root, with a tail hanging off it: the
 * root and the tail could run, but nothing may. The ring's edges are added
 * in a scrambled order, half with succeed. */
static void ring_case(weft_sched *s, uint32_t len, uint64_t *rng, const char *what)
{
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task **t = malloc(sizeof *t * len);
    uint32_t *order = malloc(sizeof *order * len);
    WT_ASSERT(t && order);
    for (uint32_t i = 0; i < len; i++) {
        t[i] = add(g, count, &n);
        order[i] = i;
    }
    shuffle_u32(order, len, rng);
    for (uint32_t k = 0; k < len; k++) {
        uint32_t i = order[k], j = (i + 1) % len;
        WT_ASSERT_EQ(k % 2 ? weft_task_precede(t[i], t[j]) : weft_task_succeed(t[j], t[i]), WEFT_OK);
    }
    weft_task *root = add(g, count, &n), *tail = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(root, t[len / 2]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(t[len - 1], tail), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_size(g), len + 2);
    for (int r = 0; r < 2; r++) {
        int rc = weft_graph_run(s, g);
        WT_ASSERT(rc == WEFT_ECYCLE, "%s, ring of %u: run said %s", what, len, weft_err_name(rc));
    }
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* nothing in flight: at once */
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&n) == 0, "%s, ring of %u: %d tasks ran", what, len, atomic_load(&n));
    WT_ASSERT_EQ(weft_task_state(root), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_task_state(t[0]), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    free(t);
    free(order);
}

static const uint32_t ring_lengths[] = { 2, 3, 10, 1000, 100000 };

WT_TEST(build, cycle_rings_2_to_100000, .timeout = 120)
{
    uint64_t rng = wt_seed() ^ 0xc7c1e;
    unsigned counts[] = { 0, 2 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = open_sched(counts[k]);
        char what[64];
        snprintf(what, sizeof what, "%u workers", counts[k]);
        for (size_t i = 0; i < sizeof ring_lengths / sizeof ring_lengths[0]; i++)
            ring_case(s, ring_lengths[i], &rng, what);
        close_sched(s, counts[k]);
    }
}

/* A 3-cycle in the middle of a random DAG of 2000 tasks, with edges into
 * and out of it: ECYCLE, and none of the 2000 runs. */
WT_TEST(build, cycle_inside_a_large_dag, .timeout = 60)
{
    uint64_t seed = wt_seed() ^ 0xd46;
    weft_sched *s = make_sched(2);
    struct dag d;
    dag_alloc(&d, 2000, 2000);
    uint64_t rng = seed;
    dag_generate(&d, &shapes[1], &rng);
    weft_graph *g = new_graph();
    for (uint32_t i = 0; i < d.n; i++)
        d.t[i] = add(g, stamp, &d.rec[i]);
    for (size_t k = 0; k < d.e.n; k++)
        WT_ASSERT_EQ(weft_task_precede(d.t[d.e.u[k]], d.t[d.e.v[k]]), WEFT_OK);
    /* Three tasks in the middle of the order, a < b < c in rank: closing
     * c -> a makes a cycle through the DAG's own edges too. */
    uint32_t by_rank[3] = { 0 };
    for (uint32_t i = 0; i < d.n; i++) {
        if (d.rank[i] == 900) by_rank[0] = i;
        if (d.rank[i] == 1000) by_rank[1] = i;
        if (d.rank[i] == 1100) by_rank[2] = i;
    }
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[0]], d.t[by_rank[1]]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[1]], d.t[by_rank[2]]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[2]], d.t[by_rank[0]]), WEFT_OK);
    recs_reset(d.rec, d.n);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&ticket) == 0, "WEFT_SEED=%llu: tasks of a cyclic graph ran",
              (unsigned long long)wt_seed());
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    dag_free(&d);
}

/* A chain that ran, closed into a ring by an edge added afterwards:
 * ECYCLE, nothing runs, and the refused run changed nothing (the tasks
 * still read as done in the latest run, wait returns its result). */
WT_TEST(build, cycle_closed_after_a_run, .timeout = 60)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        weft_sched *s = open_sched(counts[k]);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        enum { L = 1000 };
        weft_task *t[L];
        for (int i = 0; i < L; i++) {
            t[i] = add(g, count, &n);
            if (i)
                WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
        }
        run_wait(s, g, "chain");
        WT_ASSERT_EQ(atomic_load(&n), L);
        WT_ASSERT_EQ(weft_task_precede(t[L - 1], t[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_size(g), L);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&n) == L, "%u workers: %d tasks ran after the cycle was closed",
                  counts[k], atomic_load(&n) - L);
        WT_ASSERT_EQ(weft_task_state(t[0]), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(t[L - 1]), WEFT_TASK_DONE);
        /* More tasks do not make it acyclic. */
        weft_task *x = add(g, count, &n);
        WT_ASSERT_EQ(weft_task_precede(x, t[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), L);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, counts[k]);
    }
}

/* The check runs wherever weft_graph_run is called, a task's fiber
 * included (256 KiB of stack): a 10^5 ring and a 10^5 chain, the deepest
 * shapes there are, checked from a task. A recursive search would
 * overflow the fiber's stack. */
struct inner_run {
    weft_sched *s;
    weft_graph *g;
    int rc_run, rc_wait;
};

static void run_from_task(void *p)
{
    struct inner_run *in = p;
    in->rc_run = weft_graph_run(in->s, in->g);
    in->rc_wait = weft_graph_wait(in->g);   /* after ECYCLE: at once */
}

WT_TEST(build, deep_graphs_checked_from_a_task, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    enum { L = 100000 };
    weft_task **t = malloc(sizeof *t * L);
    WT_ASSERT(t != NULL);
    for (int ring = 0; ring < 2; ring++) {
        weft_graph *g = new_graph();
        atomic_int n = 0;
        for (int i = 0; i < L; i++)
            t[i] = add(g, count, &n);
        /* Added from the end, so that the order in memory is no help. */
        for (int i = L - 1; i > 0; i--)
            WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
        if (ring)
            WT_ASSERT_EQ(weft_task_precede(t[L - 1], t[0]), WEFT_OK);
        struct inner_run in = { s, g, 1, 1 };
        weft_graph *outer = new_graph();
        add(outer, run_from_task, &in);
        run_wait(s, outer, "outer");
        WT_ASSERT_EQ(in.rc_run, ring ? WEFT_ECYCLE : WEFT_OK);
        WT_ASSERT_EQ(in.rc_wait, WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), ring ? 0 : L);
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    free(t);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* A self-edge is EINVAL and changes nothing: no cycle, no edge in the
 * dump, the graph runs as before. Also on a task that already has edges,
 * and after a run. */
WT_TEST(build, self_edge_is_einval_and_changes_nothing, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    struct rec r[3];
    weft_task *t[3];
    for (int i = 0; i < 3; i++)
        t[i] = add(g, stamp, &r[i]);
    WT_ASSERT_EQ(weft_task_precede(t[0], t[0]), WEFT_EINVAL);   /* a task with no edge yet */
    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(t[1], t[2]), WEFT_OK);
    struct dot before = dot_of(g);
    for (int i = 0; i < 3; i++) {
        WT_ASSERT_EQ(weft_task_precede(t[i], t[i]), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_succeed(t[i], t[i]), WEFT_EINVAL);
    }
    struct dot after = dot_of(g);
    WT_ASSERT(strcmp(before.text, after.text) == 0, "self-edges changed the graph:\n%s\nvs\n%s",
              before.text, after.text);
    WT_ASSERT_EQ(weft_graph_size(g), 3);
    struct edges e = { 0 };
    edges_push(&e, 0, 1);
    edges_push(&e, 1, 2);
    for (int run = 0; run < 2; run++) {
        recs_reset(r, 3);
        run_wait(s, g, "after self-edges");   /* ECYCLE would fail here */
        check_run("after self-edges", r, 3, NULL, &e, t);
        WT_ASSERT_EQ(weft_task_precede(t[2], t[2]), WEFT_EINVAL);   /* and again, after a run */
    }
    free(before.text);
    free(after.text);
    edges_free(&e);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ==== 4. edge cases of the build =============================================== */

/* A task with the same successor added 1, 2, 50 and 10^5 times (precede
 * and succeed mixed, interleaved with other edges of both tasks, before
 * and after runs): one edge, the successor runs once and after it. */
WT_TEST(build, duplicate_edges_act_as_one, .timeout = 120)
{
    static const uint32_t times[] = { 1, 2, 50, 100000 };
    unsigned counts[] = { 1, 2 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = make_sched(counts[k]);
        for (size_t x = 0; x < sizeof times / sizeof times[0]; x++) {
            uint32_t reps = times[x];
            char what[96];
            snprintf(what, sizeof what, "%u workers, an edge added %u times", counts[k], reps);
            /* a -> b the duplicate; a -> c_i and d_i -> b around it: a and
             * b have other edges, so the duplicate is not the only entry. */
            enum { SIDE = 6 };
            struct rec r[2 + 2 * SIDE];
            weft_task *t[2 + 2 * SIDE];
            weft_graph *g = new_graph();
            for (int i = 0; i < 2 + 2 * SIDE; i++)
                t[i] = add(g, stamp, &r[i]);
            struct edges e = { 0 };
            for (uint32_t i = 0; i < reps; i++) {
                WT_ASSERT_EQ(i % 2 ? weft_task_precede(t[0], t[1]) : weft_task_succeed(t[1], t[0]), WEFT_OK);
                if (i < SIDE) {
                    WT_ASSERT_EQ(weft_task_precede(t[0], t[2 + i]), WEFT_OK);
                    WT_ASSERT_EQ(weft_task_precede(t[2 + SIDE + i], t[1]), WEFT_OK);
                    edges_push(&e, 0, 2 + i);
                    edges_push(&e, 2 + SIDE + i, 1);
                }
            }
            edges_push(&e, 0, 1);
            for (uint32_t i = reps; i < SIDE; i++) {
                WT_ASSERT_EQ(weft_task_precede(t[0], t[2 + i]), WEFT_OK);
                WT_ASSERT_EQ(weft_task_precede(t[2 + SIDE + i], t[1]), WEFT_OK);
                edges_push(&e, 0, 2 + i);
                edges_push(&e, 2 + SIDE + i, 1);
            }
            WT_ASSERT_EQ(weft_graph_size(g), 2 + 2 * SIDE);
            struct dot dt = dot_of(g);
            WT_ASSERT(dt.arrows == 1 + 2 * SIDE, "%s: the dump shows %zu edges, want %d", what,
                      dt.arrows, 1 + 2 * SIDE);
            free(dt.text);
            for (int run = 0; run < 3; run++) {
                recs_reset(r, 2 + 2 * SIDE);
                run_wait(s, g, what);
                check_run(what, r, 2 + 2 * SIDE, NULL, &e, t);
                /* Again after a run: still one edge. */
                for (uint32_t i = 0; i < (reps < 1000 ? reps : 1000); i++)
                    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_size(g), 2 + 2 * SIDE);
            }
            dt = dot_of(g);
            WT_ASSERT_EQ(dt.arrows, 1 + 2 * SIDE);
            free(dt.text);
            edges_free(&e);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* Duplicates in a random order among many distinct edges of one task (the
 * successor list is long), and the same edge added by 8 threads at once. */
struct dup_job {
    weft_task *a, *b;
    pthread_barrier_t *bar;
    int bad;
};

static void *dup_thread(void *p)
{
    struct dup_job *j = p;
    pthread_barrier_wait(j->bar);
    for (int i = 0; i < 2000; i++)
        if (weft_task_precede(j->a, j->b) != WEFT_OK)
            j->bad++;
    return NULL;
}

WT_TEST(build, duplicate_edges_among_many_and_from_8_threads, .timeout = 60)
{
    uint64_t rng = wt_seed() ^ 0xd0b0;
    weft_sched *s = make_sched(2);
    enum { W = 300 };
    struct rec r[W + 1];
    weft_task *t[W + 1];
    weft_graph *g = new_graph();
    for (int i = 0; i <= W; i++)
        t[i] = add(g, stamp, &r[i]);
    struct edges e = { 0 };
    for (int i = 1; i <= W; i++)
        edges_push(&e, 0, (uint32_t)i);
    for (int i = 0; i < 3 * W; i++)   /* with every successor again, some many times */
        edges_push(&e, 0, 1 + (uint32_t)(wt_rand(&rng) % W));
    for (size_t i = 0; i < e.n; i++)
        WT_ASSERT_EQ(weft_task_precede(t[e.u[i]], t[e.v[i]]), WEFT_OK);
    /* 8 threads, one edge: last -> first successor. */
    pthread_barrier_t bar;
    WT_ASSERT_EQ(pthread_barrier_init(&bar, NULL, NBUILD), 0);
    pthread_t th[NBUILD];
    struct dup_job jobs[NBUILD];
    for (int k = 0; k < NBUILD; k++) {
        jobs[k] = (struct dup_job){ t[W], t[1], &bar, 0 };
        WT_ASSERT_EQ(pthread_create(&th[k], NULL, dup_thread, &jobs[k]), 0);
    }
    for (int k = 0; k < NBUILD; k++) {
        pthread_join(th[k], NULL);
        WT_ASSERT_EQ(jobs[k].bad, 0);
    }
    pthread_barrier_destroy(&bar);
    edges_push(&e, W, 1);
    struct dot dt = dot_of(g);
    WT_ASSERT(dt.arrows == W + 1, "the dump shows %zu edges, want %d", dt.arrows, W + 1);
    WT_ASSERT_EQ(dt.nodes, W + 1);
    free(dt.text);
    for (int run = 0; run < 3; run++) {
        recs_reset(r, W + 1);
        run_wait(s, g, "duplicates among many");
        check_run("duplicates among many", r, W + 1, NULL, &e, t);
    }
    edges_free(&e);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* One task with 10^5 successors, which all precede one task: 10^5
 * predecessors. Successors added before and after their task. */
WT_TEST(build, fan_out_and_fan_in_of_100000, .timeout = 120)
{
    uint32_t w = (uint32_t)wt_scaled(100000, 30000);
    uint32_t n = w + 2;
    struct rec *r = calloc(n, sizeof *r);
    weft_task **t = calloc(n, sizeof *t);
    WT_ASSERT(r && t);
    weft_graph *g = new_graph();
    /* Half the middle tasks first, then the hub and the sink, then the rest. */
    uint32_t hub = w / 2, sink = w / 2 + 1;
    for (uint32_t i = 0; i < n; i++)
        t[i] = add(g, stamp, &r[i]);
    struct edges e = { 0 };
    for (uint32_t i = 0; i < n; i++) {
        if (i == hub || i == sink)
            continue;
        edges_push(&e, hub, i);
        edges_push(&e, i, sink);
        WT_ASSERT_EQ(weft_task_precede(t[hub], t[i]), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(t[sink], t[i]), WEFT_OK);
    }
    unsigned counts[] = { 1, 2, 8 };
    for (int k = 0; k < 3; k++) {
        weft_sched *s = make_sched(counts[k]);
        char what[64];
        snprintf(what, sizeof what, "fans of %u, %u workers", w, counts[k]);
        for (int run = 0; run < 2; run++) {
            recs_reset(r, n);
            run_wait(s, g, what);
            check_run(what, r, n, NULL, &e, NULL);
        }
        WT_ASSERT_EQ(weft_task_state(t[sink]), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    struct dot dt = dot_of(g);
    WT_ASSERT_EQ(dt.arrows, 2 * (size_t)w);
    free(dt.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    edges_free(&e);
    free(r);
    free(t);
}

/* 10^6 independent tasks: every one a root and a sink. */
static atomic_uchar *million_ran;

static void mark_ran(void *arg)
{
    atomic_fetch_add_explicit(&million_ran[(uintptr_t)arg], 1, memory_order_relaxed);
}

WT_TEST(build, a_million_independent_tasks, .timeout = 120)
{
    uint32_t n = (uint32_t)wt_scaled(1000000, 100000);
    million_ran = calloc(n, sizeof *million_ran);
    WT_ASSERT(million_ran != NULL);
    weft_graph *g = new_graph();
    for (uint32_t i = 0; i < n; i++)
        WT_ASSERT(weft_graph_add(g, mark_ran, (void *)(uintptr_t)i) != NULL, "add %u failed", i);
    WT_ASSERT_EQ(weft_graph_size(g), n);
    unsigned counts[] = { 2, 8 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = make_sched(counts[k]);
        for (unsigned run = 1; run <= 2; run++) {
            run_wait(s, g, "a million tasks");
            unsigned want = (unsigned)k * 2 + run;
            for (uint32_t i = 0; i < n; i++)
                if (atomic_load_explicit(&million_ran[i], memory_order_relaxed) != want)
                    WT_FAIL("%u workers, run %u: task %u ran %u times in all, want %u", counts[k], run,
                            i, (unsigned)atomic_load(&million_ran[i]), want);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    free(million_ran);
}

/* Edges declared again every frame (a user who rebuilds a frame's edges
 * on a graph kept across frames) cost no memory after the first frames:
 * a task with few successors finds the edge there; one with many takes
 * it unsearched and the check drops the repeat, and its list keeps its
 * capacity for the next frame's repeats. 4 and 20 edges per task. */
WT_TEST(build, redeclared_edges_keep_memory_flat, .timeout = 120)
{
    weft_sched *s = make_sched(1);   /* before the hook: its memory is not counted */
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    enum { NT = 100, FRAMES = 2000 };
    static const int fanout[] = { 4, 20 };
    for (int f = 0; f < 2; f++) {
        weft_graph *g = new_graph();
        atomic_int n = 0;
        weft_task *t[NT];
        for (int i = 0; i < NT; i++)
            t[i] = add(g, count, &n);
        long warm = 0;
        for (int frame = 0; frame < FRAMES; frame++) {
            for (int i = 0; i < NT; i++)
                for (int j = 1; j <= fanout[f] && i + j < NT; j++)
                    WT_ASSERT_EQ(weft_task_precede(t[i], t[i + j]), WEFT_OK);
            run_wait(s, g, "frame");
            long held = atomic_load(&a.bytes);
            if (frame == 10)
                warm = held;
            WT_ASSERT(frame <= 10 || held <= 2 * warm + 64 * 1024,
                      "fan-out %d, frame %d: the graph holds %ld bytes, %ld after 10 frames",
                      fanout[f], frame, held, warm);
        }
        WT_ASSERT_EQ(atomic_load(&n), NT * FRAMES);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    weft_set_allocator(NULL);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

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

/* ==== 5. blocking on each other in an order that can finish ========================= */

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
