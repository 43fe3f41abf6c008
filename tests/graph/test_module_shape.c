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
 *                   with condition loops
 *   cycle_* nesting_* self_*   a graph that contains itself through
 *                   modules (1 to 3 levels, or nested past 64) is ECYCLE
 *                   with nothing run; add_module(g, g) and NULLs change
 *                   nothing
 *
 * Sizes follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED=
 * replays). Tasks never assert (an assertion off the test's thread could
 * not report): they count what went wrong, and the test checks it.
 * module_util.h has the helpers these files share. */
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
#include "module_util.h"

static const unsigned wcounts[] = { 0, 1, 2, 8 };

#define NWC (sizeof wcounts / sizeof wcounts[0])

/* ==== three levels of modules over random shapes ============================== */

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

/* ==== shapes: roots, sinks, empty subs, condition tasks ========================= */

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

static void loop_body(void *arg)
{
    atomic_fetch_add(&((struct loop *)arg)->body, 1);
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

/* ==== cycles through modules ================================================ */

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
