/* Condition tasks (issue 21): random graphs of conditions and tasks,
 * held to a sequential interpreter of weft.h's rules written here.
 *
 *   random_*         random graphs of conditions and tasks, checked
 *                    against the interpreter, with one root or many
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

static const unsigned worker_counts[] = { 0, 1, 2, 8 };

#define NCOUNTS (sizeof worker_counts / sizeof worker_counts[0])

/* ==== random graphs against a sequential interpreter ============================= *
 *
 * A graph is a set of machines, each with its own root. A machine is a set
 * of regions; a region is a small random DAG of normal tasks with one
 * entry, whose every task reaches its exit: a condition (or, sometimes, a
 * plain task that ends the machine). An exit condition's weak edges go to
 * entries of regions of its own machine (its own region too: a loop), to
 * shared leaves (tasks and conditions any machine may pick, with no
 * strong edges out), and to nothing else. A machine's root is a start
 * task that strongly precedes region 0's entry, or none: then region 0's
 * entry is a root only if no weak edge reaches it.
 *
 * Why this family: the header makes the outcome of a graph depend on
 * timing when a strong edge delivers its end to a task already queued or
 * running, or when a weak pick resets a count that other strong
 * predecessors were half-way through. Here only one region of a machine
 * runs at a time (an exit runs once its whole region has ended, and picks
 * one target), so neither happens and the outcome is fixed: the k-th call
 * of a condition answers f(seed, condition, k), whatever thread makes it.
 * Shared leaves may run many at once, also one leaf on several threads. */

enum { RN_TASK, RN_COND };

struct rnode {
    int kind;
    uint32_t id;
    uint32_t nsucc;          /* out-edges, distinct, in the order added */
    uint32_t succ[8];
    uint32_t indeg;          /* strong in-edges */
    uint32_t weak_in;        /* weak in-edges */
    uint32_t budget;         /* a condition's calls that may pick */
    atomic_long runs;        /* the real run: invocations */
    atomic_long calls;       /* a condition's call counter (answers) */
    long want;               /* the interpreter's invocations */
    long icalls;             /* the interpreter's call counter */
    weft_task *t;
    struct rgraph *G;
};

struct rgraph {
    uint64_t seed;
    uint32_t n, cap;
    struct rnode *nd;
};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The answer of condition c's k-th call (k from 0). Within the budget: a
 * successor's index mostly, sometimes one out of range; past it, always
 * out of range, so every loop ends. */
static int r_answer(const struct rgraph *G, const struct rnode *c, long k)
{
    uint64_t h = mix64(G->seed ^ mix64((uint64_t)c->id * 0x100000001b3ull + (uint64_t)k));
    static const int out[] = { -1, INT_MAX, INT_MIN, -2 };
    if ((uint64_t)k >= c->budget || h % 100 < 6)
        return h % 2 ? out[(h >> 8) % 4] : (int)c->nsucc;
    if (c->nsucc == 0)
        return (int)(h >> 8) % 3;        /* 0, 1 or 2: none exists */
    return (int)((h >> 8) % c->nsucc);
}

static void r_task(void *arg)
{
    struct rnode *n = arg;
    atomic_fetch_add(&n->runs, 1);
    if (n->id % 5 == 0)
        weft_yield();
}

static int r_cond(void *arg)
{
    struct rnode *n = arg;
    atomic_fetch_add(&n->runs, 1);
    long k = atomic_fetch_add(&n->calls, 1);
    return r_answer(n->G, n, k);
}

static uint32_t r_new(struct rgraph *G, int kind, uint64_t *rng)
{
    WT_ASSERT(G->n < G->cap);
    uint32_t i = G->n++;
    struct rnode *n = &G->nd[i];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->id = i;
    n->G = G;
    n->budget = kind == RN_COND ? 1 + (uint32_t)(wt_rand(rng) % 12) : 0;
    return i;
}

static void r_edge(struct rgraph *G, uint32_t u, uint32_t v)
{
    struct rnode *a = &G->nd[u];
    for (uint32_t k = 0; k < a->nsucc; k++)
        if (a->succ[k] == v)
            return;
    WT_ASSERT(a->nsucc < 8);
    a->succ[a->nsucc++] = v;
    if (a->kind == RN_COND)
        G->nd[v].weak_in++;
    else
        G->nd[v].indeg++;
}

/* machines, regions per machine at most, shared leaves */
static void r_generate(struct rgraph *G, uint32_t machines, uint32_t max_regions, uint32_t leaves,
                       uint64_t *rng)
{
    G->cap = machines * max_regions * 8 + machines + leaves * 2 + 8;
    G->nd = calloc(G->cap, sizeof *G->nd);
    WT_ASSERT(G->nd != NULL);
    G->n = 0;
    /* shared leaves: plain tasks, conditions with no successors, and one
     * condition that picks among the plain ones */
    uint32_t *leaf = calloc(leaves + 1, sizeof *leaf);
    uint32_t nleaf = 0;
    for (uint32_t i = 0; i < leaves; i++)
        leaf[nleaf++] = r_new(G, i % 3 == 2 ? RN_COND : RN_TASK, rng);
    if (leaves >= 2) {
        uint32_t picker = r_new(G, RN_COND, rng);
        for (uint32_t i = 0; i < leaves && G->nd[picker].nsucc < 4; i++)
            if (G->nd[leaf[i]].kind == RN_TASK)
                r_edge(G, picker, leaf[i]);
        leaf[nleaf++] = picker;
    }
    uint32_t *entry = calloc(max_regions, sizeof *entry), *exitn = calloc(max_regions, sizeof *exitn);
    WT_ASSERT(entry && exitn && leaf);
    for (uint32_t m = 0; m < machines; m++) {
        uint32_t R = 1 + (uint32_t)(wt_rand(rng) % max_regions);
        for (uint32_t r = 0; r < R; r++) {
            uint32_t k = (uint32_t)(wt_rand(rng) % 6);   /* normal tasks, 0 to 5 */
            uint32_t first = G->n;
            for (uint32_t j = 0; j < k; j++) {
                uint32_t t = r_new(G, RN_TASK, rng);
                if (j > 0) {
                    uint32_t np = 1 + (uint32_t)(wt_rand(rng) % 2);
                    for (uint32_t p = 0; p < np; p++)
                        r_edge(G, first + (uint32_t)(wt_rand(rng) % j), t);
                }
            }
            bool terminal = r > 0 && wt_rand(rng) % 100 < 12;
            uint32_t x = r_new(G, terminal ? RN_TASK : RN_COND, rng);
            for (uint32_t j = 0; j < k; j++)
                if (G->nd[first + j].nsucc == 0)
                    r_edge(G, first + j, x);
            entry[r] = k ? first : x;
            exitn[r] = x;
        }
        /* exits' weak edges, added after every region exists */
        for (uint32_t r = 0; r < R; r++) {
            struct rnode *x = &G->nd[exitn[r]];
            if (x->kind != RN_COND)
                continue;
            uint32_t deg = 1 + (uint32_t)(wt_rand(rng) % 4);
            for (uint32_t d = 0; d < deg; d++) {
                if (nleaf && wt_rand(rng) % 100 < 20)
                    r_edge(G, exitn[r], leaf[wt_rand(rng) % nleaf]);
                else {
                    uint32_t e = entry[wt_rand(rng) % R];
                    if (e != exitn[r])    /* a self-edge is EINVAL */
                        r_edge(G, exitn[r], e);
                }
            }
        }
        /* A region no weak edge reaches would be a second root of the
         * machine, running beside the first: region 0's exit (always a
         * condition) picks it. */
        for (uint32_t r = 1; r < R; r++)
            if (G->nd[entry[r]].weak_in == 0 && G->nd[entry[r]].indeg == 0)
                r_edge(G, exitn[0], entry[r]);
        if (wt_rand(rng) % 100 < 85) {
            uint32_t st = r_new(G, RN_TASK, rng);
            r_edge(G, st, entry[0]);
        }
    }
    free(entry);
    free(exitn);
    free(leaf);
}

/* The sequential interpreter: a worklist. A root (no in-edge of either
 * kind) is visited once at the start. A visit sets the task's count of
 * strong predecessors afresh; a plain task's end takes one from each
 * strong successor's count and visits those that reach zero; a
 * condition's k-th call visits successor f(k) if it exists. counts: the
 * state carried from run to run (reset at each run's start, as the header
 * says). */
static void r_interpret(struct rgraph *G, uint32_t *cnt, uint32_t *stack)
{
    uint32_t sp = 0;
    for (uint32_t i = 0; i < G->n; i++) {
        cnt[i] = G->nd[i].indeg;
        if (G->nd[i].indeg == 0 && G->nd[i].weak_in == 0)
            stack[sp++] = i;
    }
    long steps = 0;
    while (sp) {
        uint32_t i = stack[--sp];
        struct rnode *n = &G->nd[i];
        WT_ASSERT(++steps < 10000000, "interpreter: the generated graph does not end");
        cnt[i] = n->indeg;
        n->want++;
        if (n->kind == RN_TASK) {
            for (uint32_t k = 0; k < n->nsucc; k++) {
                uint32_t v = n->succ[k];
                WT_ASSERT(cnt[v] > 0);
                if (--cnt[v] == 0) {
                    WT_ASSERT(sp < G->cap * 4);
                    stack[sp++] = v;
                }
            }
        } else {
            int a = r_answer(G, n, n->icalls++);
            if (a >= 0 && (uint32_t)a < n->nsucc) {
                WT_ASSERT(sp < G->cap * 4);
                stack[sp++] = n->succ[a];
            }
        }
    }
}

static weft_graph *r_build(struct rgraph *G, uint64_t *rng)
{
    weft_graph *g = new_graph();
    /* tasks in a shuffled order, so edges point both ways in build order */
    uint32_t *order = malloc(sizeof *order * G->n);
    WT_ASSERT(order != NULL);
    for (uint32_t i = 0; i < G->n; i++)
        order[i] = i;
    for (uint32_t i = G->n; i > 1; i--) {
        uint32_t j = (uint32_t)(wt_rand(rng) % i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[order[i]];
        n->t = n->kind == RN_COND ? add_cond(g, r_cond, n) : add(g, r_task, n);
    }
    /* edges: each node's in its order (a condition's order is its answer
     * index), nodes in a shuffled order, some twice, half through succeed */
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[order[i]];
        for (uint32_t k = 0; k < n->nsucc; k++) {
            weft_task *v = G->nd[n->succ[k]].t;
            if (wt_rand(rng) % 2)
                edge(n->t, v);
            else
                WT_ASSERT_EQ(weft_task_succeed(v, n->t), WEFT_OK);
            if (wt_rand(rng) % 100 < 10 && k > 0) {
                /* an earlier edge again: changes nothing */
                edge(n->t, G->nd[n->succ[wt_rand(rng) % k]].t);
            }
        }
    }
    free(order);
    return g;
}

static void r_compare(struct rgraph *G, const char *what, unsigned w, uint64_t s)
{
    for (uint32_t i = 0; i < G->n; i++) {
        struct rnode *n = &G->nd[i];
        long got = atomic_load(&n->runs);
        WT_ASSERT(got == n->want,
                  "%s, %u workers, seed %#llx: %s %u ran %ld times, the interpreter says %ld "
                  "(strong in %u, weak in %u, successors %u)",
                  what, w, (unsigned long long)s, n->kind == RN_COND ? "condition" : "task", i, got,
                  n->want, n->indeg, n->weak_in, n->nsucc);
        if (n->kind == RN_COND)
            WT_ASSERT_EQ(atomic_load(&n->calls), n->icalls);
    }
}

static void random_case(unsigned w, uint64_t seed, uint32_t machines, uint32_t max_regions,
                        uint32_t leaves)
{
    uint64_t rng = seed | 1;
    struct rgraph G = { .seed = seed };
    r_generate(&G, machines, max_regions, leaves, &rng);
    uint32_t *cnt = calloc(G.n, sizeof *cnt), *stack = calloc(G.cap * 4, sizeof *stack);
    WT_ASSERT(cnt && stack);
    weft_sched *s = open_sched(w);
    weft_graph *g = r_build(&G, &rng);
    WT_ASSERT_EQ(weft_graph_size(g), G.n);
    WT_ASSERT_EQ(weft_graph_find_cycle(g, NULL, 0), 0);
    /* one run */
    r_interpret(&G, cnt, stack);
    run_wait(s, g, "random");
    r_compare(&G, "random: one run", w, seed);
    /* three more as a series: the call counters go on from run to run */
    for (int r = 0; r < 3; r++)
        r_interpret(&G, cnt, stack);
    WT_ASSERT_EQ(weft_graph_run_n(s, g, 3), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    r_compare(&G, "random: run_n 3", w, seed);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    close_sched(s, w);
    free(cnt);
    free(stack);
    free(G.nd);
}

WT_TEST(cond, random_graphs_against_the_interpreter, .timeout = 300)
{
    uint64_t seed = wt_seed();
    unsigned reps = (unsigned)wt_scaled(40, 6);
    for (size_t k = 0; k < NCOUNTS; k++)
        for (unsigned i = 0; i < reps; i++)
            random_case(worker_counts[k], mix64(seed + i * 131 + k), 1 + i % 4, 1 + i % 5,
                        i % 3 ? 4 : 0);
}

WT_TEST(cond, random_graphs_many_roots, .timeout = 300)
{
    uint64_t seed = wt_seed();
    unsigned reps = (unsigned)wt_scaled(6, 2);
    for (size_t k = 0; k < NCOUNTS; k++)
        for (unsigned i = 0; i < reps; i++)
            random_case(worker_counts[k], mix64(seed ^ (0xabcdefull + i * 7 + k)), 100, 4, 9);
}
