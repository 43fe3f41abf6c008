/* Graph modules (issue 21), held to what weft.h promises for
 * weft_graph_add_module and to nothing else: the tests use the public API
 * only, and run at 0 workers (this thread bound), 1, 2 and 8 workers
 * where it applies.
 *
 *   nested_*        three levels of modules over random sub-graph shapes,
 *                   each sub used by two parents in sequence and by one
 *                   parent twice: every task runs once per use, and every
 *                   task of a sub runs after the module task's
 *                   predecessors and before its successors; subs grown
 *                   between runs
 *   shape_*         a module as a root, a sink, alone; empty subs; subs
 *                   with condition loops; modules inside condition loops
 *   cycle_*         a graph that contains itself through modules (1 to 3
 *                   levels, or nested past 64) is ECYCLE with nothing run;
 *                   add_module(g, g) and NULLs change nothing
 *   fail_*          a failure inside a sub (depth 1 and 3) fails the
 *                   module task, reaches the outer wait (WEFT_EFAILED),
 *                   fail_code (the task's own code) and failed_task,
 *                   skips the module's dependents; fail-fast
 *   cancel_*        cancelling the outer (or the sub's) run while a sub's
 *                   task blocks; a cancelled module task starts nothing
 *   repeat_*        run_n, run_until and a 10^4-iteration condition loop
 *                   around modules: exact counts
 *   busy_*          a sub running elsewhere fails the module with EBUSY;
 *                   waiting for an outer graph from inside its sub
 *   block_*         tasks of a sub and of its parent block on each other
 *                   in a valid order; a nested run from inside a sub
 *   dot_*           the dump draws a module task as a 3D box in a
 *                   cluster that holds its sub's tasks (nesting, ids,
 *                   cycles: test_report.c)
 *
 * Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Tasks never assert (an assertion off the test's thread could
 * not report): they count what went wrong, and the test checks it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static const unsigned wcounts[] = { 0, 1, 2, 8 };
#define NWC (sizeof wcounts / sizeof wcounts[0])

/* ---- helpers ----------------------------------------------------------------------- */

static weft_task *add_mod(weft_graph *g, weft_graph *sub)
{
    weft_task *t = weft_graph_add_module(g, sub);
    WT_ASSERT(t != NULL, "weft_graph_add_module failed");
    return t;
}

static void edge(weft_task *u, weft_task *v)
{
    WT_ASSERT_EQ(weft_task_precede(u, v), WEFT_OK);
}

static void run_wait_rc(weft_sched *s, weft_graph *g, int want, const char *what)
{
    int rc = weft_graph_run(s, g);
    WT_ASSERT(rc == WEFT_OK, "%s: run: %s", what, weft_err_name(rc));
    rc = weft_graph_wait(g);
    WT_ASSERT(rc == want, "%s: wait: %s (%d), want %s (%d)", what, weft_err_name(rc), rc,
              weft_err_name(want), want);
}

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static atomic_int bad;   /* what tasks saw go wrong */

static bool flag_set(void *ctx)
{
    return atomic_load((atomic_int *)ctx) != 0;
}

struct state_is {
    weft_task *t;
    weft_task_status want;
};

static bool state_reached(void *ctx)
{
    struct state_is *w = ctx;
    return weft_task_state(w->t) == w->want;
}

/* ==== 1. three levels of modules over random shapes ============================== */

static atomic_uint_fast64_t ticket;

#define MAXOCC 8   /* executions of one graph per outer run, at most */

/* A task's tickets in each execution of its graph: the k-th time it runs
 * is in its graph's k-th execution, as a graph runs once at a time. */
struct orec {
    atomic_uint runs;
    atomic_uint_fast64_t start[MAXOCC], end[MAXOCC];
};

static void ostamp(void *arg)
{
    struct orec *r = arg;
    uint64_t s = atomic_fetch_add(&ticket, 1) + 1;
    unsigned k = atomic_fetch_add(&r->runs, 1);
    uint64_t e = atomic_fetch_add(&ticket, 1) + 1;
    if (k >= MAXOCC) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    atomic_store_explicit(&r->start[k], s, memory_order_relaxed);
    atomic_store_explicit(&r->end[k], e, memory_order_relaxed);
}

/* A graph of the hierarchy: stamp tasks and module tasks. Each module
 * task m sits between a stamp task before it and one after it (b -> m ->
 * a), which names the window its sub's execution must fall in; besides
 * those, random edges tie modules to stamps and to each other. Every
 * module of one graph follows the previous one's "after" task, as they
 * share subs further down (unordered, one would be EBUSY). */
#define MG_CAP 256
struct mg {
    const char *name;
    weft_graph *g;
    uint32_t n;
    weft_task *t[MG_CAP];
    struct orec r[MG_CAP];
    int sub[MG_CAP];        /* -1: a stamp task; else the sub's index in the hierarchy */
    uint32_t before[MG_CAP], after[MG_CAP];
    struct edges e;
    unsigned execs;         /* executions per outer run */
    /* per execution, from the stamps */
    uint64_t lo[MAXOCC], hi[MAXOCC];
    unsigned used[MAXOCC];
};

/* nsubs modules of subs[] in that order, among `plain` stamp tasks. The
 * tasks are added in a random order, so that edges point both ways in
 * the order of creation. */
static void mg_build(struct mg *all, int self, const int *subs, unsigned nsubs,
                     uint32_t plain, uint64_t *rng)
{
    struct mg *m = &all[self];
    uint32_t n = plain + 3 * nsubs;
    WT_ASSERT(n + 8 <= MG_CAP);
    m->n = n;
    for (uint32_t i = 0; i < n; i++)
        m->sub[i] = -1;
    /* Topological order = index: segments of plain tasks, then b, m, a. */
    uint32_t pos = 0, k = 0;
    uint32_t seg = plain / (nsubs + 1);
    for (k = 0; k < nsubs; k++) {
        pos += seg ? 1 + wt_rand(rng) % seg : 0;
        uint32_t b = pos, md = pos + 1, a = pos + 2;
        m->sub[md] = subs[k];
        m->before[md] = b;
        m->after[md] = a;
        edges_push(&m->e, b, md);
        edges_push(&m->e, md, a);
        if (k > 0) {
            /* the previous module's "after" task goes before this one's "before" */
            uint32_t prev_a = 0;
            for (uint32_t i = 0; i < b; i++)
                if (m->sub[i] >= 0)
                    prev_a = m->after[i];
            edges_push(&m->e, prev_a, b);
        }
        pos = a + 1;
    }
    /* Random edges forward in the order, 0 to 3 out of each task; local
     * (next 6) or anywhere after. */
    for (uint32_t i = 0; i + 1 < n; i++) {
        unsigned deg = wt_rand(rng) % 4;
        for (unsigned d = 0; d < deg; d++) {
            uint32_t left = n - 1 - i;
            uint32_t span = wt_rand(rng) % 2 && left > 6 ? 6 : left;
            uint32_t j = i + 1 + wt_rand(rng) % span;
            edges_push(&m->e, i, j);
        }
    }
    /* Create in a random order. */
    uint32_t order[MG_CAP];
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = wt_rand(rng) % i, x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    for (uint32_t q = 0; q < n; q++) {
        uint32_t i = order[q];
        m->t[i] = m->sub[i] >= 0 ? add_mod(m->g, all[m->sub[i]].g) : add(m->g, ostamp, &m->r[i]);
    }
    for (size_t q = 0; q < m->e.n; q++)
        edge(m->t[m->e.u[q]], m->t[m->e.v[q]]);
    WT_ASSERT_EQ(weft_graph_size(m->g), n);
}

/* Grows a graph between runs: a new root (before a random stamp task)
 * and a new sink (after one). */
static void mg_grow(struct mg *m, uint64_t *rng)
{
    WT_ASSERT(m->n + 2 <= MG_CAP);
    uint32_t x = m->n, y = m->n + 1, p, q;
    do
        p = wt_rand(rng) % m->n;
    while (m->sub[p] >= 0);
    do
        q = wt_rand(rng) % m->n;
    while (m->sub[q] >= 0);
    m->sub[x] = m->sub[y] = -1;
    m->t[x] = add(m->g, ostamp, &m->r[x]);
    m->t[y] = add(m->g, ostamp, &m->r[y]);
    m->n += 2;
    edges_push(&m->e, x, p);
    edges_push(&m->e, q, y);
    edge(m->t[x], m->t[p]);
    edge(m->t[q], m->t[y]);
}

static void node_iv(struct mg *all, struct mg *m, uint32_t i, unsigned e, const int *match,
                    uint64_t *s, uint64_t *t)
{
    if (m->sub[i] < 0) {
        *s = atomic_load(&m->r[i].start[e]);
        *t = atomic_load(&m->r[i].end[e]);
    } else {
        struct mg *y = &all[m->sub[i]];
        int j = match[i * MAXOCC + e];
        *s = y->lo[j];
        *t = y->hi[j];
    }
}

/* After one outer run: every stamp ran once per execution of its graph;
 * executions of one graph do not overlap; each module task's execution
 * is the one sub execution inside its window, each sub execution belongs
 * to exactly one module task's; every edge u -> v has u's end before v's
 * start, modules standing for their sub's execution. */
static void mg_check(struct mg *all, unsigned nall, const char *what)
{
    for (unsigned x = 0; x < nall; x++) {
        struct mg *m = &all[x];
        for (unsigned e = 0; e < m->execs; e++) {
            m->lo[e] = UINT64_MAX;
            m->hi[e] = 0;
            m->used[e] = 0;
        }
        for (uint32_t i = 0; i < m->n; i++) {
            if (m->sub[i] >= 0) {
                WT_ASSERT_EQ(weft_task_state(m->t[i]), WEFT_TASK_DONE);
                continue;
            }
            unsigned runs = atomic_load(&m->r[i].runs);
            WT_ASSERT(runs == m->execs, "%s: %s task %u ran %u times, want %u", what, m->name, i,
                      runs, m->execs);
            WT_ASSERT_EQ(weft_task_state(m->t[i]), WEFT_TASK_DONE);
            for (unsigned e = 0; e < m->execs; e++) {
                uint64_t s = atomic_load(&m->r[i].start[e]), t = atomic_load(&m->r[i].end[e]);
                if (s < m->lo[e])
                    m->lo[e] = s;
                if (t > m->hi[e])
                    m->hi[e] = t;
            }
        }
        for (unsigned e = 0; e + 1 < m->execs; e++)
            WT_ASSERT(m->hi[e] < m->lo[e + 1], "%s: %s's executions %u and %u overlap", what,
                      m->name, e, e + 1);
    }
    for (unsigned x = 0; x < nall; x++) {
        struct mg *m = &all[x];
        int *match = calloc((size_t)m->n * MAXOCC, sizeof *match);
        WT_ASSERT(match != NULL);
        for (uint32_t i = 0; i < m->n; i++) {
            if (m->sub[i] < 0)
                continue;
            struct mg *y = &all[m->sub[i]];
            for (unsigned e = 0; e < m->execs; e++) {
                uint64_t lo = atomic_load(&m->r[m->before[i]].end[e]);
                uint64_t hi = atomic_load(&m->r[m->after[i]].start[e]);
                int found = -1, nfound = 0;
                for (unsigned j = 0; j < y->execs; j++)
                    if (lo < y->lo[j] && y->hi[j] < hi) {
                        found = (int)j;
                        nfound++;
                    }
                WT_ASSERT(nfound == 1, "%s: %s's module task %u (of %s), execution %u: %d executions "
                          "of the sub between its predecessor and its successor, want 1",
                          what, m->name, i, y->name, e, nfound);
                y->used[found]++;
                match[i * MAXOCC + e] = found;
            }
        }
        for (size_t q = 0; q < m->e.n; q++) {
            uint32_t u = m->e.u[q], v = m->e.v[q];
            for (unsigned e = 0; e < m->execs; e++) {
                uint64_t us, ut, vs, vt;
                node_iv(all, m, u, e, match, &us, &ut);
                node_iv(all, m, v, e, match, &vs, &vt);
                WT_ASSERT(ut < vs, "%s: %s edge %u -> %u (%s -> %s), execution %u: ended at %llu, "
                          "started at %llu", what, m->name, u, v, m->sub[u] >= 0 ? "module" : "task",
                          m->sub[v] >= 0 ? "module" : "task", e, (unsigned long long)ut,
                          (unsigned long long)vs);
            }
        }
        free(match);
    }
    for (unsigned x = 1; x < nall; x++)
        for (unsigned j = 0; j < all[x].execs; j++)
            WT_ASSERT(all[x].used[j] == 1, "%s: %s's execution %u belongs to %u module tasks", what,
                      all[x].name, j, all[x].used[j]);
}

static void mg_reset(struct mg *all, unsigned nall)
{
    atomic_store(&ticket, 0);
    for (unsigned x = 0; x < nall; x++)
        for (uint32_t i = 0; i < all[x].n; i++)
            atomic_store(&all[x].r[i].runs, 0);
}

/* O (outer): A, A, B2 in sequence. A: B1 then B2. B1: C twice. B2: C.
 * Per outer run: O 1, A 2, B1 2, B2 3 (2 in A, 1 in O), C 7. C is used by
 * two parents (B1, B2), B2 too (A, O); B1 uses C twice, O uses A twice. */
enum { O_, A_, B1_, B2_, C_, NMG };

static void nested_case(unsigned workers, uint64_t seed)
{
    struct mg *all = calloc(NMG, sizeof *all);
    WT_ASSERT(all != NULL);
    static const char *names[NMG] = { "O", "A", "B1", "B2", "C" };
    static const unsigned execs[NMG] = { 1, 2, 2, 3, 7 };
    for (unsigned x = 0; x < NMG; x++) {
        all[x].name = names[x];
        all[x].g = new_graph();
        all[x].execs = execs[x];
    }
    uint64_t rng = seed;
    static const int o_subs[] = { A_, A_, B2_ }, a_subs[] = { B1_, B2_ }, b1_subs[] = { C_, C_ },
                     b2_subs[] = { C_ };
    /* Built bottom-up or top-down: a module may name a sub with no tasks yet. */
    mg_build(all, O_, o_subs, 3, 10 + wt_rand(&rng) % 40, &rng);
    mg_build(all, A_, a_subs, 2, 10 + wt_rand(&rng) % 40, &rng);
    mg_build(all, B1_, b1_subs, 2, 10 + wt_rand(&rng) % 40, &rng);
    mg_build(all, B2_, b2_subs, 1, 5 + wt_rand(&rng) % 40, &rng);
    mg_build(all, C_, NULL, 0, 1 + wt_rand(&rng) % 60, &rng);

    char what[128];
    weft_sched *s = open_sched(workers);
    for (int run = 0; run < 4; run++) {
        snprintf(what, sizeof what, "WEFT_SEED=%llu, %u workers, run %d", (unsigned long long)seed,
                 workers, run);
        mg_reset(all, NMG);
        run_wait(s, all[O_].g, what);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        mg_check(all, NMG, what);
        /* Built on between runs: C (three levels down) and B2 grow. */
        if (run == 1) {
            mg_grow(&all[C_], &rng);
            mg_grow(&all[B2_], &rng);
        }
    }
    close_sched(s, workers);
    for (unsigned x = 0; x < NMG; x++) {
        WT_ASSERT_EQ(weft_graph_destroy(all[x].g), WEFT_OK);
        free(all[x].e.u);
        free(all[x].e.v);
    }
    free(all);
}

WT_TEST(module, nested_three_deep_random_shapes, .timeout = 120)
{
    uint64_t seed = wt_seed();
    unsigned reps = (unsigned)wt_scaled(8, 2);
    for (size_t k = 0; k < NWC; k++)
        for (unsigned i = 0; i < reps; i++)
            nested_case(wcounts[k], seed + i * 0x9e3779b97f4a7c15ull + k);
}

/* ==== 2. shapes: roots, sinks, empty subs, condition tasks ========================= */

/* A module that is the whole outer graph (root and sink at once), one
 * that is a root with successors, one that is a sink with predecessors. */
WT_TEST(module, shape_root_sink_alone, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n = 0, tail = 0, head = 0;
        weft_graph *sub = new_graph();
        for (int i = 0; i < 20; i++)
            add(sub, count, &n);
        /* alone */
        weft_graph *o1 = new_graph();
        weft_task *m1 = add_mod(o1, sub);
        run_wait(s, o1, "alone");
        WT_ASSERT_EQ(atomic_load(&n), 20);
        WT_ASSERT_EQ(weft_task_state(m1), WEFT_TASK_DONE);
        /* root with successors; sink with predecessors */
        weft_graph *o2 = new_graph();
        weft_task *m2 = add_mod(o2, sub);
        for (int i = 0; i < 5; i++)
            edge(m2, add(o2, count, &tail));
        weft_graph *o3 = new_graph();
        weft_task *m3 = add_mod(o3, sub);
        for (int i = 0; i < 5; i++)
            edge(add(o3, count, &head), m3);
        for (int r = 1; r <= 3; r++) {
            run_wait(s, o2, "root");
            run_wait(s, o3, "sink");
            WT_ASSERT_EQ(atomic_load(&n), 20 + 40 * r);
            WT_ASSERT_EQ(atomic_load(&tail), 5 * r);
            WT_ASSERT_EQ(atomic_load(&head), 5 * r);
            WT_ASSERT_EQ(weft_task_state(m2), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(m3), WEFT_TASK_DONE);
        }
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o1), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(o2), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(o3), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* Empty subs: a module of an empty graph is done at once and its
 * successors run; alone it is the whole run; a module of a graph whose
 * only task is a module of an empty graph; then the empty sub grows. */
WT_TEST(module, shape_empty_subs_and_growth, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n = 0, in_e = 0;
        weft_graph *empty = new_graph(), *mid = new_graph(), *o = new_graph(), *o2 = new_graph();
        weft_task *a = add(o, count, &n);
        weft_task *m = add_mod(o, empty);
        weft_task *b = add(o, count, &n);
        edge(a, m);
        edge(m, b);
        weft_task *mm = add_mod(mid, empty);
        weft_task *m2 = add_mod(o2, mid);
        run_wait(s, o, "empty sub");
        WT_ASSERT_EQ(atomic_load(&n), 2);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        run_wait(s, o2, "module of a module of an empty graph");
        WT_ASSERT_EQ(weft_task_state(m2), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(mm), WEFT_TASK_DONE);
        /* The empty sub grows between runs: a chain of 3. */
        weft_task *e0 = add(empty, count, &in_e), *e1 = add(empty, count, &in_e),
                  *e2 = add(empty, count, &in_e);
        edge(e0, e1);
        edge(e1, e2);
        run_wait(s, o, "grown sub");
        WT_ASSERT_EQ(atomic_load(&n), 4);
        WT_ASSERT_EQ(atomic_load(&in_e), 3);
        run_wait(s, o2, "grown sub, two down");
        WT_ASSERT_EQ(atomic_load(&in_e), 6);
        /* A graph of an empty module alone, run 100 times. */
        weft_graph *o3 = new_graph(), *empty2 = new_graph();
        add_mod(o3, empty2);
        WT_ASSERT_EQ(weft_graph_run_n(s, o3, 100), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(o3), WEFT_OK);
        close_sched(s, w);
        weft_graph *gs[] = { o, o2, o3, mid, empty, empty2 };
        for (int i = 0; i < 6; i++)
            WT_ASSERT_EQ(weft_graph_destroy(gs[i]), WEFT_OK);
    }
}

/* A counting loop: body, then cond picks 0 (back to body) until the
 * count reaches limit, then 1 (the exit). */
struct loop {
    atomic_int iters;
    int limit;
    atomic_int body, exit;
};

static int loop_cond(void *arg)
{
    struct loop *l = arg;
    return atomic_fetch_add(&l->iters, 1) + 1 < l->limit ? 0 : 1;
}

static void loop_body(void *arg)
{
    atomic_fetch_add(&((struct loop *)arg)->body, 1);
}

static void loop_exit(void *arg)
{
    atomic_fetch_add(&((struct loop *)arg)->exit, 1);
}

/* A sub with a condition loop of 10 iterations (start -> body -> cond ->
 * body | exit), used as a module run several times in sequence by two parents. */
WT_TEST(module, shape_sub_with_a_condition_loop, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct loop l = { .limit = 10 };
        weft_graph *sub = new_graph();
        weft_task *body = add(sub, loop_body, &l);
        weft_task *c = weft_graph_add_cond(sub, loop_cond, &l);
        WT_ASSERT(c != NULL);
        weft_task *ex = add(sub, loop_exit, &l);
        edge(add(sub, NULL, NULL), body);   /* body's other in-edge is weak: it needs a root */
        edge(body, c);
        edge(c, body);   /* weak: index 0 */
        edge(c, ex);     /* weak: index 1 */
        weft_graph *o = new_graph(), *o2 = new_graph();
        atomic_int after = 0;
        weft_task *m1 = add_mod(o, sub), *m2 = add_mod(o, sub);
        weft_task *t = add(o, count, &after);
        edge(m1, m2);
        edge(m2, t);
        add_mod(o2, sub);
        for (int r = 1; r <= 5; r++) {
            atomic_store(&l.iters, 0);
            run_wait(s, o, "cond sub, twice in sequence");
            atomic_store(&l.iters, 0);
            run_wait(s, o2, "cond sub, other parent");
            WT_ASSERT_EQ(atomic_load(&l.exit), 3 * r);
            /* The second module's loop starts where the first left its
             * counter: it runs one body and exits. Per run of o: 10 + 1
             * bodies, of o2: 10. */
            WT_ASSERT_EQ(atomic_load(&l.body), 21 * r);
            WT_ASSERT_EQ(atomic_load(&after), r);
        }
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(o2), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* ==== 3. cycles through modules ================================================ */

/* g[0] contains g[1] ... contains g[d-1], and g[d-1] contains g[back]:
 * weft_graph_run of any of them is ECYCLE, and no task of any graph ran.
 * First run without the closing module (fine), so the check of a graph
 * that ran before must see its sub change. */
static void cycle_case(unsigned d, unsigned back)
{
    weft_sched *s = make_sched(2);
    atomic_int n = 0;
    weft_graph *g[4];
    for (unsigned i = 0; i < d; i++) {
        g[i] = new_graph();
        add(g[i], count, &n);
    }
    for (unsigned i = 0; i + 1 < d; i++)
        edge(add(g[i], count, &n), add_mod(g[i], g[i + 1]));
    run_wait(s, g[0], "before the cycle");
    WT_ASSERT_EQ(atomic_load(&n), (int)(2 * d - 1));
    atomic_store(&n, 0);
    size_t size = weft_graph_size(g[d - 1]);
    weft_task *closing = weft_graph_add_module(g[d - 1], g[back]);
    WT_ASSERT(closing != NULL, "a module that closes a cycle is refused only at run");
    WT_ASSERT_EQ(weft_graph_size(g[d - 1]), size + 1);
    for (unsigned i = 0; i < d; i++) {
        int rc = weft_graph_run(s, g[i]);
        WT_ASSERT(rc == WEFT_ECYCLE, "depth %u back to %u: run of graph %u: %s", d, back, i,
                  weft_err_name(rc));
        rc = weft_graph_run_n(s, g[i], 3);
        WT_ASSERT(rc == WEFT_ECYCLE, "run_n of graph %u: %s", i, weft_err_name(rc));
    }
    WT_ASSERT_EQ(atomic_load(&n), 0);
    WT_ASSERT_EQ(weft_task_state(closing), WEFT_TASK_PENDING);
    for (unsigned i = 0; i < d; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(module, cycle_through_modules_is_ecycle_with_nothing_run, .timeout = 60)
{
    cycle_case(2, 0);   /* A contains O, O contains A */
    cycle_case(3, 0);   /* two levels down */
    cycle_case(4, 0);   /* three levels down */
    cycle_case(4, 1);   /* a cycle below the graph that is run */
    cycle_case(3, 1);   /* the deepest graph contains its parent, below the graph run */
}

/* A sub with a plain cycle of its own: the outer run is ECYCLE. */
WT_TEST(module, cycle_inside_a_sub_is_ecycle, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    atomic_int n = 0;
    weft_graph *o = new_graph(), *a = new_graph(), *b = new_graph();
    add(o, count, &n);
    edge(add(o, count, &n), add_mod(o, a));
    add(a, count, &n);
    add_mod(a, b);
    weft_task *x = add(b, count, &n), *y = add(b, count, &n);
    edge(x, y);
    run_wait(s, o, "acyclic");
    WT_ASSERT_EQ(atomic_load(&n), 5);
    atomic_store(&n, 0);
    edge(y, x);
    WT_ASSERT_EQ(weft_graph_run(s, o), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_run(s, a), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_run(s, b), WEFT_ECYCLE);
    WT_ASSERT_EQ(atomic_load(&n), 0);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(a), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(b), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* "nested more than 64 deep" is ECYCLE. Which chain is "64 deep" can be
 * read two ways (64 module levels, or 64 graphs), so the test holds the
 * limit to both readings: 63 module levels (64 graphs) run, 65 levels
 * (66 graphs) are ECYCLE, and nothing of them runs. */
WT_TEST(module, nesting_past_64_is_ecycle, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    atomic_int n = 0;
    weft_graph *g[67];
    for (int i = 0; i < 67; i++) {
        g[i] = new_graph();
        add(g[i], count, &n);
    }
    /* g[3] contains g[4] ... contains g[66]: 63 module levels. */
    for (int i = 3; i < 66; i++)
        add_mod(g[i], g[i + 1]);
    run_wait(s, g[3], "63 levels");
    WT_ASSERT_EQ(atomic_load(&n), 64);
    atomic_store(&n, 0);
    add_mod(g[2], g[3]);   /* g[2]: 64 levels, ambiguous: not run */
    add_mod(g[1], g[2]);   /* g[1]: 65 levels */
    int rc = weft_graph_run(s, g[1]);
    WT_ASSERT(rc == WEFT_ECYCLE, "65 levels: %s", weft_err_name(rc));
    add_mod(g[0], g[1]);   /* g[0]: 66 levels */
    rc = weft_graph_run(s, g[0]);
    WT_ASSERT(rc == WEFT_ECYCLE, "66 levels: %s", weft_err_name(rc));
    WT_ASSERT_EQ(atomic_load(&n), 0);
    run_wait(s, g[3], "63 levels, again");
    WT_ASSERT_EQ(atomic_load(&n), 64);
    for (int i = 0; i < 67; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(module, self_and_null_are_refused_and_change_nothing, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    atomic_int n = 0;
    weft_graph *g = new_graph(), *sub = new_graph();
    add(g, count, &n);
    add(sub, count, &n);
    WT_ASSERT(weft_graph_add_module(g, g) == NULL);
    WT_ASSERT(weft_graph_add_module(NULL, sub) == NULL);
    WT_ASSERT(weft_graph_add_module(g, NULL) == NULL);
    WT_ASSERT(weft_graph_add_module(NULL, NULL) == NULL);
    WT_ASSERT_EQ(weft_graph_size(g), 1);
    WT_ASSERT_EQ(weft_graph_size(sub), 1);
    run_wait(s, g, "after refusals");
    WT_ASSERT_EQ(atomic_load(&n), 1);
    WT_ASSERT(weft_graph_add_module(g, g) == NULL);
    WT_ASSERT_EQ(weft_graph_size(g), 1);
    run_wait(s, g, "after refusals, again");
    WT_ASSERT_EQ(atomic_load(&n), 2);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ==== 4. failures crossing the module edge ======================================= */

#define FAIL_CODE (-4242)

static atomic_int i1_in;   /* the outer task beside the module has started */

/* Fails once i1 has started, so that i1 is running at the failure. */
static void fail_task(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    if (weft_wait_until(flag_set, &i1_in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_task_fail(FAIL_CODE) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* Waits until the outer module task reads FAILED. */
static void wait_failed(void *arg)
{
    atomic_store(&i1_in, 1);
    struct state_is w = { arg, WEFT_TASK_FAILED };
    if (weft_wait_until(state_reached, &w) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* O: r -> M -> d1 -> d2, and an independent branch i1 -> i2 where i1
 * waits until M reads FAILED. M's sub chain goes `depth` levels down to
 * S: s1 -> f (fails) -> s3, plus s_ind alone. */
static void fail_case(unsigned w, unsigned depth, bool fail_fast)
{
    weft_sched *s = open_sched(w);
    atomic_int n = 0, nf = 0, n_s = 0, n_ind = 0, n_i2 = 0, n_d = 0;
    weft_graph *o = new_graph();
    weft_graph *lv[3];
    weft_task *mod[3];
    for (unsigned i = 0; i < depth; i++)
        lv[i] = new_graph();
    weft_task *r = add(o, count, &n);
    weft_task *m = add_mod(o, lv[0]);
    weft_task *d1 = add(o, count, &n_d), *d2 = add(o, count, &n_d);
    weft_task *i1 = add(o, wait_failed, m), *i2 = add(o, count, &n_i2);
    edge(r, m);
    edge(m, d1);
    edge(d1, d2);
    edge(i1, i2);
    mod[0] = m;
    for (unsigned i = 0; i + 1 < depth; i++) {
        /* each level: a task before the module, one after, one beside */
        weft_task *pre = add(lv[i], count, &n), *mm = add_mod(lv[i], lv[i + 1]),
                  *post = add(lv[i], count, &n_d);
        add(lv[i], count, &n);
        edge(pre, mm);
        edge(mm, post);
        mod[i + 1] = mm;
    }
    weft_graph *S = lv[depth - 1];
    weft_task *s1 = add(S, count, &n_s), *f = add(S, fail_task, &nf), *s3 = add(S, count, &n_d);
    add(S, count, &n_ind);
    edge(s1, f);
    edge(f, s3);
    WT_ASSERT_EQ(weft_graph_set_fail_fast(o, fail_fast), WEFT_OK);
    char what[96];
    snprintf(what, sizeof what, "%u workers, depth %u, fail-fast %d", w, depth, (int)fail_fast);
    for (int run = 1; run <= 3; run++) {
        atomic_store(&i1_in, 0);
        run_wait_rc(s, o, WEFT_EFAILED, what);   /* a task's own code: fail_code gives it, at every level */
        WT_ASSERT_EQ(weft_graph_fail_code(o), FAIL_CODE);
        WT_ASSERT_EQ(weft_graph_fail_code(S), FAIL_CODE);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(atomic_load(&nf), run);
        WT_ASSERT_EQ(atomic_load(&n_s), run);
        WT_ASSERT_EQ(atomic_load(&n_ind), run);   /* sub's other branch, no fail-fast there */
        WT_ASSERT_EQ(atomic_load(&n_d), 0);       /* every dependent of a failure, all levels */
        WT_ASSERT(weft_graph_failed_task(o) == m, "failed_task(outer) is the module task");
        WT_ASSERT(weft_graph_failed_task(S) == f, "failed_task(sub) is the failing task");
        for (unsigned i = 0; i < depth; i++) {
            WT_ASSERT(weft_task_state(mod[i]) == WEFT_TASK_FAILED, "%s: module at depth %u: state %d", what, i,
                      (int)weft_task_state(mod[i]));
            if (i + 1 < depth)
                WT_ASSERT(weft_graph_failed_task(lv[i]) == mod[i + 1]);
        }
        WT_ASSERT_EQ(weft_task_state(f), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(s3), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d1), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(d2), WEFT_TASK_SKIPPED);
        WT_ASSERT(weft_task_state(i1) == WEFT_TASK_DONE, "%s, run %d: i1 (running when the module "
                  "failed) reads %d; i2 %d", what, run, (int)weft_task_state(i1),
                  (int)weft_task_state(i2));
        if (fail_fast) {
            WT_ASSERT_EQ(weft_task_state(i2), WEFT_TASK_SKIPPED);
            WT_ASSERT_EQ(atomic_load(&n_i2), 0);
        } else {
            WT_ASSERT_EQ(weft_task_state(i2), WEFT_TASK_DONE);
            WT_ASSERT_EQ(atomic_load(&n_i2), run);
        }
    }
    close_sched(s, w);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    for (unsigned i = 0; i < depth; i++)
        WT_ASSERT_EQ(weft_graph_destroy(lv[i]), WEFT_OK);
}

WT_TEST(module, fail_inside_a_sub_fails_the_module, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (unsigned depth = 1; depth <= 3; depth += 2)
            for (int ff = 0; ff < 2; ff++)
                fail_case(w, depth, ff);
}

/* A cancelled task inside a sub: the sub's run is cancelled, so the
 * module task is SKIPPED, its dependents too, and the outer wait says
 * ECANCELED; an independent branch runs. */
WT_TEST(module, cancelled_task_inside_a_sub_skips_the_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n_sub = 0, n_dep = 0, n_ind = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        weft_task *m = add_mod(o, sub);
        edge(m, add(o, count, &n_dep));
        add(o, count, &n_ind);
        weft_task *a = add(sub, count, &n_sub), *c = add(sub, count, &n_sub);
        add(sub, count, &n_sub);
        edge(a, c);
        WT_ASSERT(weft_task_cancel(c));
        run_wait_rc(s, o, WEFT_ECANCELED, "a cancelled task inside");
        WT_ASSERT_EQ(atomic_load(&n_sub), 2);
        WT_ASSERT_EQ(atomic_load(&n_dep), 0);
        WT_ASSERT_EQ(atomic_load(&n_ind), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT(weft_graph_failed_task(o) == NULL);
        weft_task_reset(c);
        run_wait(s, o, "after the reset");
        WT_ASSERT_EQ(atomic_load(&n_sub), 5);
        WT_ASSERT_EQ(atomic_load(&n_dep), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* ==== 5. cancelling across the module edge ===================================== */

struct cx {
    weft_graph *cancel_me;     /* the graph the canceller cancels */
    atomic_int in;             /* the sub's blocker has started */
    weft_event go;             /* lets the blocker finish */
    atomic_int cancel_rc;      /* 1 if weft_graph_cancel said true */
    atomic_int blocked_runs, after;
};

static void cx_blocker(void *arg)
{
    struct cx *c = arg;
    atomic_fetch_add(&c->blocked_runs, 1);
    atomic_store(&c->in, 1);
    if (weft_event_wait(&c->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

/* An outer task beside the module: waits for the blocker, cancels, lets
 * the blocker go. */
static void cx_canceller(void *arg)
{
    struct cx *c = arg;
    if (weft_wait_until(flag_set, &c->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_store(&c->cancel_rc, weft_graph_cancel(c->cancel_me));
    weft_event_signal(&c->go);
}

static void cx_after(void *arg)
{
    atomic_fetch_add(&((struct cx *)arg)->after, 1);
}

/* O: M -> d; canceller beside. Sub: b (blocks) -> x -> y, and z after
 * b too. Cancelling O (or the sub) while b blocks skips x, y, z, M and d.
 * cancel_sub: weft_graph_cancel(sub) instead of O. from_thread: the test
 * thread cancels instead of a task (workers only). */
static void cancel_case(unsigned w, bool cancel_sub, bool from_thread)
{
    weft_sched *s = open_sched(w);
    struct cx c = { 0 };
    weft_event_init(&c.go, true, false);
    weft_graph *o = new_graph(), *sub = new_graph();
    c.cancel_me = cancel_sub ? sub : o;
    weft_task *m = add_mod(o, sub);
    weft_task *d = add(o, cx_after, &c);
    edge(m, d);
    if (!from_thread)
        add(o, cx_canceller, &c);
    weft_task *b = add(sub, cx_blocker, &c);
    weft_task *x = add(sub, cx_after, &c), *y = add(sub, cx_after, &c), *z = add(sub, cx_after, &c);
    edge(b, x);
    edge(x, y);
    edge(b, z);
    WT_ASSERT_EQ(weft_graph_run(s, o), WEFT_OK);
    if (from_thread) {
        while (!atomic_load(&c.in))
            sched_yield();
        atomic_store(&c.cancel_rc, weft_graph_cancel(c.cancel_me));
        weft_event_signal(&c.go);
    }
    int rc = weft_graph_wait(o);
    WT_ASSERT(rc == WEFT_ECANCELED, "%u workers, cancel %s from %s: wait: %s", w,
              cancel_sub ? "sub" : "outer", from_thread ? "thread" : "task", weft_err_name(rc));
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    WT_ASSERT_EQ(atomic_load(&c.cancel_rc), 1);
    WT_ASSERT_EQ(atomic_load(&c.blocked_runs), 1);
    WT_ASSERT_EQ(atomic_load(&c.after), 0);
    WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_task_state(x), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(y), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(z), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
    WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
    /* Later runs are not affected (the canceller task cancels again, so
     * only the thread variant can check a clean run). */
    if (from_thread) {
        weft_event_signal(&c.go);
        run_wait(s, o, "after the cancel");
        WT_ASSERT_EQ(atomic_load(&c.after), 4);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
    }
    close_sched(s, w);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    weft_event_destroy(&c.go);
}

WT_TEST(module, cancel_while_a_sub_task_blocks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int cs = 0; cs < 2; cs++) {
            cancel_case(w, cs, false);
            if (w > 0)
                cancel_case(w, cs, true);
        }
}

/* A module task cancelled before the run: the sub does not start at all
 * (none of its tasks reached: PENDING), the module is SKIPPED. */
WT_TEST(module, cancelled_module_task_does_not_start_its_sub, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n_sub = 0, n_o = 0;
        weft_graph *o = new_graph(), *sub = new_graph(), *deep = new_graph();
        weft_task *pre = add(o, count, &n_o);
        weft_task *m = add_mod(o, sub);
        weft_task *post = add(o, count, &n_o);
        edge(pre, m);
        edge(m, post);
        weft_task *st = add(sub, count, &n_sub);
        weft_task *dm = add_mod(sub, deep);
        weft_task *dt = add(deep, count, &n_sub);
        WT_ASSERT(weft_task_cancel(m));
        run_wait_rc(s, o, WEFT_ECANCELED, "cancelled module");
        WT_ASSERT_EQ(atomic_load(&n_sub), 0);
        WT_ASSERT_EQ(atomic_load(&n_o), 1);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(post), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(weft_task_state(st), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(dm), WEFT_TASK_PENDING);
        WT_ASSERT_EQ(weft_task_state(dt), WEFT_TASK_PENDING);
        /* The sub is free: it runs on its own. */
        run_wait(s, sub, "the sub alone");
        WT_ASSERT_EQ(atomic_load(&n_sub), 2);
        weft_task_reset(m);
        run_wait(s, o, "after the reset");
        WT_ASSERT_EQ(atomic_load(&n_sub), 4);
        WT_ASSERT_EQ(atomic_load(&n_o), 3);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(deep), WEFT_OK);
    }
}

/* ==== 6. repeats ============================================================= */

/* O: a -> M(S) -> b, and M2(S2) beside; S: a diamond with a module of T
 * in the middle; T: 3 tasks. S2: a fan of 50 (at 8 workers, the sub's
 * run ends on whichever worker ends the last of them). */
struct rep {
    weft_graph *o, *S, *T, *S2;
    atomic_int n_o, n_s, n_t, n_s2;
};

static void rep_build(struct rep *r)
{
    r->o = new_graph();
    r->S = new_graph();
    r->T = new_graph();
    r->S2 = new_graph();
    weft_task *a = add(r->o, count, &r->n_o), *m = add_mod(r->o, r->S), *b = add(r->o, count, &r->n_o);
    edge(a, m);
    edge(m, b);
    add_mod(r->o, r->S2);
    weft_task *top = add(r->S, count, &r->n_s), *l = add(r->S, count, &r->n_s),
              *mt = add_mod(r->S, r->T), *bot = add(r->S, count, &r->n_s);
    edge(top, l);
    edge(top, mt);
    edge(l, bot);
    edge(mt, bot);
    for (int i = 0; i < 3; i++)
        add(r->T, count, &r->n_t);
    for (int i = 0; i < 50; i++)
        add(r->S2, count, &r->n_s2);
}

static void rep_free(struct rep *r)
{
    WT_ASSERT_EQ(weft_graph_destroy(r->o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->S), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->T), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(r->S2), WEFT_OK);
}

static void rep_expect(struct rep *r, int runs)
{
    WT_ASSERT_EQ(atomic_load(&r->n_o), 2 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_s), 3 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_t), 3 * runs);
    WT_ASSERT_EQ(atomic_load(&r->n_s2), 50 * runs);
}

struct until {
    atomic_int *counter;
    int target;
    atomic_int asked;
};

static bool until_pred(void *ctx)
{
    struct until *u = ctx;
    atomic_fetch_add(&u->asked, 1);
    return atomic_load(u->counter) >= u->target;
}

WT_TEST(module, repeat_run_n_and_run_until, .timeout = 120)
{
    int n = (int)wt_scaled(1000, 50);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct rep r = { 0 };
        rep_build(&r);
        WT_ASSERT_EQ(weft_graph_run_n(s, r.o, (uint64_t)n), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(r.o), WEFT_OK);
        rep_expect(&r, n);
        /* run_until: until T's tasks have run 3 * 37 times. */
        struct until u = { &r.n_t, 3 * (n + 37), 0 };
        WT_ASSERT_EQ(weft_graph_run_until(s, r.o, until_pred, &u), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(r.o), WEFT_OK);
        rep_expect(&r, n + 37);
        WT_ASSERT_EQ(atomic_load(&u.asked), 37);
        /* The subs on their own between series. */
        run_wait(s, r.S, "S alone");
        WT_ASSERT_EQ(atomic_load(&r.n_t), 3 * (n + 38));
        close_sched(s, w);
        rep_free(&r);
    }
}

/* O: init -> M(S) -> cond, cond picks M (index 0) until 10^4 visits, then
 * exit (index 1). S: a chain of 3 and a module of T (2 tasks). */
WT_TEST(module, repeat_module_in_a_condition_loop, .timeout = 120)
{
    int iters = (int)wt_scaled(10000, 500);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct loop l = { .limit = iters };
        atomic_int n_init = 0, n_s = 0, n_t = 0;
        weft_graph *o = new_graph(), *S = new_graph(), *T = new_graph();
        weft_task *init = add(o, count, &n_init);
        weft_task *m = add_mod(o, S);
        weft_task *c = weft_graph_add_cond(o, loop_cond, &l);
        WT_ASSERT(c != NULL);
        weft_task *ex = add(o, loop_exit, &l);
        edge(init, m);
        edge(m, c);
        edge(c, m);
        edge(c, ex);
        weft_task *s1 = add(S, count, &n_s), *s2 = add(S, count, &n_s), *s3 = add(S, count, &n_s);
        edge(s1, s2);
        edge(s2, s3);
        edge(s2, add_mod(S, T));
        add(T, count, &n_t);
        add(T, count, &n_t);
        for (int r = 1; r <= 2; r++) {
            atomic_store(&l.iters, 0);
            run_wait(s, o, "module in a loop");
            WT_ASSERT_EQ(atomic_load(&n_init), r);
            WT_ASSERT_EQ(atomic_load(&l.exit), r);
            WT_ASSERT_EQ(atomic_load(&n_s), 3 * iters * r);
            WT_ASSERT_EQ(atomic_load(&n_t), 2 * iters * r);
            WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
            WT_ASSERT_EQ(weft_task_state(ex), WEFT_TASK_DONE);
        }
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(S), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(T), WEFT_OK);
    }
}

/* ==== 7. busy: a sub runs once at a time ======================================== */

struct busy {
    weft_sched *s;
    weft_graph *sub;
    atomic_int in, n;
    weft_event go;
    int wait_rc;
};

static void busy_blocker(void *arg)
{
    struct busy *b = arg;
    atomic_fetch_add(&b->n, 1);
    atomic_store(&b->in, 1);
    if (weft_event_wait(&b->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

static void *busy_thread(void *arg)
{
    struct busy *b = arg;
    if (weft_graph_run(b->s, b->sub) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    b->wait_rc = weft_graph_wait(b->sub);
    return NULL;
}

/* The sub runs on its own (started by another thread, or by this bound
 * thread with no workers) and blocks; the outer run reaches its module
 * task: FAILED with EBUSY, the dependents skipped, the outer wait EBUSY. */
WT_TEST(module, busy_sub_running_elsewhere_fails_the_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct busy b = { .s = s };
        weft_event_init(&b.go, true, false);
        atomic_int n_dep = 0, n_ind = 0;
        b.sub = new_graph();
        weft_task *bt = add(b.sub, busy_blocker, &b);
        edge(bt, add(b.sub, count, &b.n));
        weft_graph *o = new_graph();
        weft_task *m = add_mod(o, b.sub);
        edge(m, add(o, count, &n_dep));
        add(o, count, &n_ind);
        pthread_t th;
        if (w > 0) {
            WT_ASSERT_EQ(pthread_create(&th, NULL, busy_thread, &b), 0);
            while (!atomic_load(&b.in))
                sched_yield();
        } else {
            WT_ASSERT_EQ(weft_graph_run(s, b.sub), WEFT_OK);
        }
        run_wait_rc(s, o, WEFT_EBUSY, "sub busy elsewhere");   /* weft's own code */
        WT_ASSERT_EQ(weft_graph_fail_code(o), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
        WT_ASSERT(weft_graph_failed_task(o) == m);
        WT_ASSERT_EQ(atomic_load(&n_dep), 0);
        WT_ASSERT_EQ(atomic_load(&n_ind), 1);
        weft_event_signal(&b.go);
        if (w > 0) {
            pthread_join(th, NULL);
            WT_ASSERT_EQ(b.wait_rc, WEFT_OK);
        } else {
            WT_ASSERT_EQ(weft_graph_wait(b.sub), WEFT_OK);
        }
        WT_ASSERT_EQ(atomic_load(&b.n), 2);   /* the sub ran once, on its own */
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        /* Free again: the module runs it. */
        run_wait(s, o, "sub free again");
        WT_ASSERT_EQ(atomic_load(&b.n), 4);
        WT_ASSERT_EQ(atomic_load(&n_dep), 1);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(b.sub), WEFT_OK);
        weft_event_destroy(&b.go);
    }
}

/* Two modules of one sub in one graph, both roots: the sub's first task
 * waits until the other module task has been reached, so they overlap:
 * one of them fails with EBUSY, the other runs the sub once. With an
 * edge between them both run it. */
struct overlap {
    weft_task *m[2];
    atomic_int n;
};

static bool other_failed(void *ctx)
{
    struct overlap *ov = ctx;
    return weft_task_state(ov->m[0]) == WEFT_TASK_FAILED ||
           weft_task_state(ov->m[1]) == WEFT_TASK_FAILED;
}

static void overlap_task(void *arg)
{
    struct overlap *ov = arg;
    atomic_fetch_add(&ov->n, 1);
    if (weft_wait_until(other_failed, ov) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
}

WT_TEST(module, busy_two_modules_of_one_sub, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct overlap ov = { 0 };
        atomic_int n = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        ov.m[0] = add_mod(o, sub);
        ov.m[1] = add_mod(o, sub);
        edge(add(sub, overlap_task, &ov), add(sub, count, &n));
        run_wait_rc(s, o, WEFT_EBUSY, "overlapping modules");
        weft_task_status s0 = weft_task_state(ov.m[0]), s1 = weft_task_state(ov.m[1]);
        WT_ASSERT((s0 == WEFT_TASK_FAILED && s1 == WEFT_TASK_DONE) ||
                  (s1 == WEFT_TASK_FAILED && s0 == WEFT_TASK_DONE), "states %d and %d", (int)s0, (int)s1);
        WT_ASSERT(weft_graph_failed_task(o) == (s0 == WEFT_TASK_FAILED ? ov.m[0] : ov.m[1]));
        WT_ASSERT_EQ(atomic_load(&ov.n), 1);
        WT_ASSERT_EQ(atomic_load(&n), 1);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
    /* Sequential (an edge): both run it, every run. */
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        atomic_int n = 0;
        weft_graph *o = new_graph(), *sub = new_graph();
        weft_task *m0 = add_mod(o, sub), *m1 = add_mod(o, sub);
        edge(m0, m1);
        for (int i = 0; i < 10; i++)
            add(sub, count, &n);
        WT_ASSERT_EQ(weft_graph_run_n(s, o, 100), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(o), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), 2000);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    }
}

/* From inside a sub (one and two levels down): waiting for an outer
 * graph is EBUSY at once; building the sub, destroying it, or setting
 * its fail-fast is EBUSY (its run is in flight); waiting for an
 * unrelated idle graph is OK. */
struct inside {
    weft_graph *outer[2], *self, *idle;
    atomic_int rc_outer[2], rc_add, rc_destroy, rc_ff, rc_idle, ran;
};

static void inside_task(void *arg)
{
    struct inside *in = arg;
    for (int i = 0; i < 2; i++)
        if (in->outer[i])
            atomic_store(&in->rc_outer[i], weft_graph_wait(in->outer[i]));
    weft_task *t = NULL;
    atomic_store(&in->rc_add, weft_graph_add_task(in->self, NULL, NULL, &t));
    atomic_store(&in->rc_destroy, weft_graph_destroy(in->self));
    atomic_store(&in->rc_ff, weft_graph_set_fail_fast(in->self, true));
    atomic_store(&in->rc_idle, weft_graph_wait(in->idle));
    atomic_fetch_add(&in->ran, 1);
}

WT_TEST(module, busy_waiting_for_the_outer_graph_from_inside, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *o = new_graph(), *a = new_graph(), *sub = new_graph(), *idle = new_graph();
        struct inside in = { .outer = { o, a }, .self = sub, .idle = idle };
        add(idle, NULL, NULL);
        add_mod(o, a);
        add_mod(a, sub);
        weft_task *it = add(sub, inside_task, &in);
        run_wait(s, o, "waits from inside");
        WT_ASSERT_EQ(atomic_load(&in.ran), 1);
        WT_ASSERT_EQ(atomic_load(&in.rc_outer[0]), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_outer[1]), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_add), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_destroy), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_ff), WEFT_EBUSY);
        WT_ASSERT_EQ(atomic_load(&in.rc_idle), WEFT_OK);
        WT_ASSERT_EQ(weft_task_state(it), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_graph_size(sub), 1);
        close_sched(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(a), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(idle), WEFT_OK);
    }
}

/* ==== 8. blocking across the module edge ======================================= */

struct xb {
    weft_event to_sub, to_outer;
    weft_sched *s;
    weft_graph *third;
    atomic_int sub_got, outer_got, third_n, nested_rc;
};

static void xb_set_for_sub(void *arg)
{
    weft_event_signal(&((struct xb *)arg)->to_sub);
}

static void xb_sub_waits(void *arg)
{
    struct xb *x = arg;
    if (weft_event_wait(&x->to_sub) == WEFT_OK)
        atomic_fetch_add(&x->sub_got, 1);
}

static void xb_sub_sets(void *arg)
{
    weft_event_signal(&((struct xb *)arg)->to_outer);
}

static void xb_outer_waits(void *arg)
{
    struct xb *x = arg;
    if (weft_event_wait(&x->to_outer) == WEFT_OK)
        atomic_fetch_add(&x->outer_got, 1);
}

/* A task of the sub runs a third graph (which has a module of its own)
 * and waits for it. */
static void xb_nested(void *arg)
{
    struct xb *x = arg;
    int rc = weft_graph_run(x->s, x->third);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(x->third);
    atomic_store(&x->nested_rc, rc);
}

/* O: outer_waits (added first), M(sub), set_for_sub, independent of each
 * other. Sub: sub_waits -> sub_sets, and nested. Whatever order the
 * workers take them in, the waits finish. */
WT_TEST(module, block_on_events_across_the_module_edge, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        struct xb x = { .s = s };
        weft_event_init(&x.to_sub, false, false);
        weft_event_init(&x.to_outer, false, false);
        weft_graph *o = new_graph(), *sub = new_graph(), *third = new_graph(), *fourth = new_graph();
        x.third = third;
        add(o, xb_outer_waits, &x);
        weft_task *m = add_mod(o, sub);
        weft_task *setter = add(o, xb_set_for_sub, &x);
        (void)m;
        (void)setter;
        edge(add(sub, xb_sub_waits, &x), add(sub, xb_sub_sets, &x));
        add(sub, xb_nested, &x);
        edge(add(third, count, &x.third_n), add_mod(third, fourth));
        add(fourth, count, &x.third_n);
        for (int r = 1; r <= 20; r++) {
            atomic_store(&x.nested_rc, 1);
            run_wait(s, o, "blocking across");
            WT_ASSERT_EQ(atomic_load(&x.sub_got), r);
            WT_ASSERT_EQ(atomic_load(&x.outer_got), r);
            WT_ASSERT_EQ(atomic_load(&x.nested_rc), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&x.third_n), 2 * r);
        }
        close_sched(s, w);
        weft_graph *gs[] = { o, sub, third, fourth };
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_graph_destroy(gs[i]), WEFT_OK);
        weft_event_destroy(&x.to_sub);
        weft_event_destroy(&x.to_outer);
    }
}

/* Waiting for the sub from outside while it runs as a module: from an
 * outer task beside the module (any worker count) and from a plain thread
 * (workers only). The wait ends with the sub's run: all its tasks ran. */
struct sw {
    weft_graph *sub;
    atomic_int in, n, waited_rc, n_at_wait;
    weft_event go;
};

static void sw_blocker(void *arg)
{
    struct sw *x = arg;
    atomic_store(&x->in, 1);
    if (weft_event_wait(&x->go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&x->n, 1);
}

static void sw_count(void *arg)
{
    atomic_fetch_add(&((struct sw *)arg)->n, 1);
}

static void sw_waiter(void *arg)
{
    struct sw *x = arg;
    if (weft_wait_until(flag_set, &x->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_store(&x->waited_rc, weft_graph_wait(x->sub));
    atomic_store(&x->n_at_wait, atomic_load(&x->n));
}

static void sw_releaser(void *arg)
{
    struct sw *x = arg;
    if (weft_wait_until(flag_set, &x->in) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_yield();
    weft_event_signal(&x->go);
}

static void *sw_thread(void *arg)
{
    struct sw *x = arg;
    while (!atomic_load(&x->in))
        sched_yield();
    atomic_store(&x->waited_rc, weft_graph_wait(x->sub));
    atomic_store(&x->n_at_wait, atomic_load(&x->n));
    return NULL;
}

WT_TEST(module, wait_for_the_sub_from_outside_while_it_runs_as_a_module, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int from_thread = 0; from_thread < 2; from_thread++) {
            if (from_thread && w == 0)
                continue;
            weft_sched *s = open_sched(w);
            struct sw x = { 0 };
            weft_event_init(&x.go, true, false);
            weft_graph *o = new_graph();
            x.sub = new_graph();
            weft_task *b = add(x.sub, sw_blocker, &x);
            for (int i = 0; i < 5; i++)
                edge(b, add(x.sub, sw_count, &x));
            atomic_int after = 0;
            edge(add_mod(o, x.sub), add(o, count, &after));
            pthread_t th;
            if (from_thread) {
                WT_ASSERT_EQ(pthread_create(&th, NULL, sw_thread, &x), 0);
            } else {
                add(o, sw_waiter, &x);
                add(o, sw_releaser, &x);
            }
            WT_ASSERT_EQ(weft_graph_run(s, o), WEFT_OK);
            if (from_thread) {
                while (!atomic_load(&x.in))
                    sched_yield();
                usleep(20000);   /* lets the thread reach its wait (not asserted) */
                weft_event_signal(&x.go);
                pthread_join(th, NULL);
            }
            WT_ASSERT_EQ(weft_graph_wait(o), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&bad), 0);
            WT_ASSERT(atomic_load(&x.waited_rc) == WEFT_OK, "%u workers, from %s: wait(sub): %s", w,
                      from_thread ? "thread" : "task", weft_err_name(atomic_load(&x.waited_rc)));
            WT_ASSERT_EQ(atomic_load(&x.n_at_wait), 6);
            WT_ASSERT_EQ(atomic_load(&after), 1);
            close_sched(s, w);
            WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(x.sub), WEFT_OK);
            weft_event_destroy(&x.go);
        }
}

/* ==== 9. the DOT dump ==================================================== */

/* The cluster holds the module task and the sub's two tasks, with a
 * dotted line from the task to each of the sub's roots. */
WT_TEST(module, dot_dump_draws_a_module_as_a_3d_box_in_a_cluster, .timeout = 60)
{
    weft_graph *o = new_graph(), *sub = new_graph();
    weft_task *a = add(o, count, NULL), *m = add_mod(o, sub), *b = add(o, NULL, NULL);
    add(sub, count, NULL);
    add(sub, count, NULL);
    edge(a, m);
    edge(m, b);
    weft_task_set_name(m, "the module");
    weft_task_set_name(a, "before");
    char *text = dot_text(o);
    WT_ASSERT(strstr(text, "    t1 -> m1_t0 [style=dotted, arrowhead=none];\n") != NULL, "%s", text);
    size_t nodes = 0, arrows = 0, dotted = 0, boxes = 0, clusters = 0;
    bool module_boxed = false;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "subgraph cluster_"))
            clusters++;
        if (strstr(line, "label=\"module: 2 tasks\""))
            clusters += 100;   /* the cluster's label, with the sub graph's size */
        if (strstr(line, "->")) {
            arrows++;
            dotted += strstr(line, "style=dotted") != NULL;
        } else if (strstr(line, "[label=")) {
            nodes++;
            if (strstr(line, "box3d")) {
                boxes++;
                module_boxed |= strstr(line, "the module") != NULL;
            }
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    WT_ASSERT(nodes == 5 && arrows == 4 && dotted == 2, "%zu nodes, %zu edges (%zu dotted):\n%s",
              nodes, arrows, dotted, text);
    WT_ASSERT(boxes == 1 && module_boxed, "the module task as the one box3d:\n%s", text);
    WT_ASSERT(clusters == 101, "the module task in a cluster labelled with its sub graph's size (2 tasks)");
    free(text);
    /* The sub's own dump: plain tasks, no box. */
    text = dot_text(sub);
    WT_ASSERT(strstr(text, "box3d") == NULL, "%s", text);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(o), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
}

/* ==== 10. the sub built on during the outer run, before its module ========== */

/* The sub is not running until its module task is reached, so a task of
 * the outer graph before the module may build on it: the module runs
 * what is there when it starts. A cycle closed that way (the sub takes a
 * module of the outer graph) cannot be ECYCLE at weft_graph_run; the
 * module task fails with it and nothing of the sub runs. */
struct grow {
    weft_graph *o, *sub;
    atomic_int *n;
    bool close_cycle;
    atomic_int rc;
};

static void grow_sub(void *arg)
{
    struct grow *gr = arg;
    weft_task *a = NULL, *b = NULL;
    int rc = weft_graph_add_task(gr->sub, count, gr->n, &a);
    if (rc == WEFT_OK)
        rc = weft_graph_add_task(gr->sub, count, gr->n, &b);
    if (rc == WEFT_OK)
        rc = weft_task_precede(a, b);
    if (rc == WEFT_OK && gr->close_cycle && !weft_graph_add_module(gr->sub, gr->o))
        rc = WEFT_ENOMEM;
    atomic_store(&gr->rc, rc);
}

WT_TEST(module, sub_built_on_during_the_outer_run, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
        for (int cyc = 0; cyc < 2; cyc++) {
            weft_sched *s = open_sched(w);
            atomic_int n = 0;
            struct grow gr = { .o = new_graph(), .sub = new_graph(), .n = &n, .close_cycle = cyc };
            add(gr.sub, count, &n);
            weft_task *g1 = add(gr.o, grow_sub, &gr);
            weft_task *m = add_mod(gr.o, gr.sub);
            edge(g1, m);
            int rc = weft_graph_run(s, gr.o);
            WT_ASSERT_EQ(rc, WEFT_OK);
            rc = weft_graph_wait(gr.o);
            WT_ASSERT_EQ(atomic_load(&gr.rc), WEFT_OK);
            if (!cyc) {
                WT_ASSERT(rc == WEFT_OK, "%u workers: %s", w, weft_err_name(rc));
                WT_ASSERT_EQ(atomic_load(&n), 3);
                WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_DONE);
            } else {
                WT_ASSERT(rc == WEFT_ECYCLE, "%u workers, cycle closed mid-run: %s", w, weft_err_name(rc));
                WT_ASSERT_EQ(atomic_load(&n), 0);
                WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
                WT_ASSERT_EQ(weft_graph_run(s, gr.o), WEFT_ECYCLE);
            }
            close_sched(s, w);
            WT_ASSERT_EQ(weft_graph_destroy(gr.o), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_destroy(gr.sub), WEFT_OK);
        }
}
